//! A few-body run as the page shows it: the bodies' trails (their
//! positions at every frame's time) and what `app::orbits` measures of
//! their orbits, in the run's units, for the orbit lessons.

use super::js::{array, set};
use crate::app::orbits::{norm, sub, OrbitTracker, Sample};
use crate::render::map::Units;
use crate::render::Camera;
use std::collections::VecDeque;

/// Samples a trail keeps per body. When full, every other one is dropped
/// and later samples are kept as sparsely: the whole run stays drawn, at
/// a resolution that halves as it grows.
const TRAIL_SAMPLES: usize = 4096;

/// A few-body run's trails and orbit measures.
pub struct FewBody {
    tracker: OrbitTracker,
    /// The bodies' names (their components).
    names: Vec<String>,
    units: Units,
    /// Positions of every body per sample kept (oldest first).
    trail: VecDeque<Vec<[f32; 3]>>,
    /// One sample in `stride` is kept; samples since the last kept.
    stride: usize,
    since: usize,
    /// The latest positions (kept or not).
    current: Vec<[f32; 3]>,
}

impl FewBody {
    pub fn new(first: Sample, masses: Vec<f64>, names: Vec<String>, units: Units) -> Self {
        let current = positions(&first);
        let trail = VecDeque::from([current.clone()]);
        Self {
            tracker: OrbitTracker::new(masses, first),
            names,
            units,
            trail,
            stride: 1,
            since: 0,
            current,
        }
    }

    /// Takes the state after a frame's block steps.
    pub fn push(&mut self, sample: Sample) {
        if sample.t.partial_cmp(&self.tracker.last().t) != Some(std::cmp::Ordering::Greater) {
            return;
        }
        self.current = positions(&sample);
        self.since += 1;
        if self.since >= self.stride {
            self.since = 0;
            if self.trail.len() == TRAIL_SAMPLES {
                let mut k = 0;
                self.trail.retain(|_| {
                    k += 1;
                    k % 2 == 1
                });
                self.stride *= 2;
            }
            self.trail.push_back(self.current.clone());
        }
        self.tracker.push(sample);
    }

    /// The bodies' latest positions.
    pub fn latest(&self) -> &[[f32; 3]] {
        &self.current
    }

    /// `{time, time_unit, length_unit, central, bodies: [{name, r, v,
    /// energy, period, semi_major_axis, eccentricity, kepler_ratio,
    /// orbits}], return_time, return_distance}`: r and v relative to the
    /// central body (or the centre of mass without one), the body's
    /// specific orbital energy v²/2 − G M/r about the central body; orbit
    /// measures (null until a full orbit) with periods in `time_unit`.
    pub fn to_js(&self) -> wasm_bindgen::JsValue {
        let s = self.tracker.last();
        let masses = self.tracker.masses();
        let central = self.tracker.central();
        let total: f64 = masses.iter().sum();
        let (origin, origin_v) = match central {
            Some(c) => (s.pos[c], s.vel[c]),
            None => centre_of_mass(s, masses, total),
        };
        let u = self.units;
        let time = |t: f64| u.time_in_unit(t);
        let out = js_sys::Object::new();
        set(&out, "time", time(s.t));
        set(&out, "time_unit", u.time_unit());
        set(&out, "length_unit", u.length_unit());
        set(&out, "central", central.map_or(-1.0, |c| c as f64));
        let bodies = (0..masses.len()).map(|k| {
            let b = js_sys::Object::new();
            let r = norm(sub(s.pos[k], origin));
            let v = norm(sub(s.vel[k], origin_v));
            set(&b, "name", self.names.get(k).cloned().unwrap_or_default());
            set(&b, "mass", masses[k]);
            set(&b, "r", r);
            set(&b, "v", v);
            let m = central.map_or(total, |c| masses[c]);
            set(&b, "energy", 0.5 * v * v - m / r);
            let orbit = self.tracker.orbit(k);
            let opt = |x: Option<f64>| x.map_or(wasm_bindgen::JsValue::NULL, Into::into);
            set(&b, "period", opt(orbit.map(|o| time(o.period))));
            set(&b, "semi_major_axis", opt(orbit.map(|o| o.semi_major_axis)));
            set(&b, "eccentricity", opt(orbit.map(|o| o.eccentricity)));
            let ratio = orbit.map(|o| time(o.period).powi(2) / o.semi_major_axis.powi(3));
            set(&b, "kepler_ratio", opt(ratio));
            set(&b, "orbits", orbit.map_or(0, |o| o.orbits));
            wasm_bindgen::JsValue::from(b)
        });
        set(&out, "bodies", array(bodies));
        let ret = self.tracker.closest_return();
        let opt = |x: Option<f64>| x.map_or(wasm_bindgen::JsValue::NULL, Into::into);
        set(&out, "return_time", opt(ret.map(|r| time(r.time))));
        set(&out, "return_distance", opt(ret.map(|r| r.distance)));
        out.into()
    }

    /// The trails projected onto a `width` × `height` canvas: per body, its
    /// samples kept and its latest position as x, y pixel pairs (NaN where
    /// behind the camera), oldest first, in one array of `bodies ×
    /// samples() × 2`.
    pub fn projected(&self, camera: &Camera, width: u32, height: u32) -> js_sys::Float32Array {
        let n = self.tracker.masses().len();
        let mut xy = Vec::with_capacity(n * self.trail.len() * 2);
        let project = camera.projector(width, height);
        for k in 0..n {
            for p in self.trail.iter().chain([&self.current]) {
                let [x, y] = project(p[k]).unwrap_or([f32::NAN; 2]);
                xy.push(x);
                xy.push(y);
            }
        }
        js_sys::Float32Array::from(xy.as_slice())
    }

    /// Points per body in `projected`.
    pub fn samples(&self) -> usize {
        self.trail.len() + 1
    }
}

fn positions(s: &Sample) -> Vec<[f32; 3]> {
    s.pos.iter().map(|x| x.map(|c| c as f32)).collect()
}

fn centre_of_mass(s: &Sample, masses: &[f64], total: f64) -> ([f64; 3], [f64; 3]) {
    let (mut x, mut v) = ([0.0; 3], [0.0; 3]);
    for (k, m) in masses.iter().enumerate() {
        for d in 0..3 {
            x[d] += m * s.pos[k][d] / total;
            v[d] += m * s.vel[k][d] / total;
        }
    }
    (x, v)
}
