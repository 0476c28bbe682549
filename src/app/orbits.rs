//! What the orbit lessons measure on a few-body run, from its states
//! sampled at the frames' times: each body's period (between two crossings
//! of a fixed line through the central body), semi-major axis and
//! eccentricity (from the last full orbit's perihelion and aphelion), and
//! the closest return of the whole configuration to its start (the
//! figure-eight's period). Between two samples every coordinate is the
//! quintic Hermite interpolant of position, velocity and acceleration at
//! both ends (error O(h⁶)), so the measures do not depend on how many
//! steps a frame takes, only on the trajectory.

pub use crate::state::few_body::{Sample, MAX_TRACKED_BODIES};

/// One body's orbit about the central body, once measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Orbit {
    /// Time between the last two crossings of the reference line.
    pub period: f64,
    /// (perihelion + aphelion) / 2 of that orbit.
    pub semi_major_axis: f64,
    /// (aphelion − perihelion) / (aphelion + perihelion).
    pub eccentricity: f64,
    /// Full orbits completed.
    pub orbits: u32,
}

/// The closest return of the configuration to its start (after `t = 1`):
/// its time and the largest distance of a body from its start then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Return {
    pub time: f64,
    pub distance: f64,
}

/// One body's bookkeeping between crossings.
#[derive(Clone, Debug, Default)]
struct Tracked {
    /// The orbit's plane: the reference direction u (the body's start) and
    /// w = ĥ × u, both unit vectors.
    u: [f64; 3],
    w: [f64; 3],
    last_crossing: Option<f64>,
    r_min: f64,
    r_max: f64,
    measured: Option<Orbit>,
    /// A frame skipped more than a quarter orbit: the crossings cannot be
    /// trusted, so nothing is measured.
    undersampled: bool,
}

/// Follows a few-body run sample by sample.
#[derive(Clone, Debug)]
pub struct OrbitTracker {
    masses: Vec<f64>,
    central: Option<usize>,
    start: Sample,
    last: Sample,
    bodies: Vec<Tracked>,
    closest: Option<Return>,
}

impl OrbitTracker {
    /// A tracker from the run's first state. The central body is the one
    /// with over half the mass; without one, no body has an orbit (the
    /// return to the start is still measured).
    pub fn new(masses: Vec<f64>, first: Sample) -> Self {
        let total: f64 = masses.iter().sum();
        let central = masses.iter().position(|&m| m > 0.5 * total && total > 0.0);
        let mut bodies = vec![Tracked::default(); masses.len()];
        if let Some(c) = central {
            for (k, b) in bodies.iter_mut().enumerate().filter(|(k, _)| *k != c) {
                let r = sub(first.pos[k], first.pos[c]);
                let v = sub(first.vel[k], first.vel[c]);
                let h = cross(r, v);
                let (rl, hl) = (norm(r), norm(h));
                if rl > 0.0 && hl > 0.0 {
                    b.u = scale(r, 1.0 / rl);
                    b.w = cross(scale(h, 1.0 / hl), b.u);
                    b.last_crossing = Some(first.t);
                    b.r_min = rl;
                    b.r_max = rl;
                } else {
                    b.undersampled = true;
                }
            }
        }
        Self {
            masses,
            central,
            last: first.clone(),
            start: first,
            bodies,
            closest: None,
        }
    }

    pub fn central(&self) -> Option<usize> {
        self.central
    }

    pub fn masses(&self) -> &[f64] {
        &self.masses
    }

    /// The latest sample.
    pub fn last(&self) -> &Sample {
        &self.last
    }

    /// Takes the next state (a later time than the last; others are
    /// ignored).
    pub fn push(&mut self, next: Sample) {
        if next.t.partial_cmp(&self.last.t) != Some(std::cmp::Ordering::Greater)
            || next.pos.len() != self.masses.len()
        {
            return;
        }
        let last = std::mem::replace(&mut self.last, next);
        let seg = Segment::new(&last, &self.last);
        if let Some(c) = self.central {
            for k in (0..self.masses.len()).filter(|&k| k != c) {
                track_body(&mut self.bodies[k], &seg, k, c);
            }
        }
        self.closest = closest_return(&self.start, &seg, self.closest);
    }

    /// The orbit of body `k` about the central body, once one is complete.
    pub fn orbit(&self, k: usize) -> Option<Orbit> {
        let b = self.bodies.get(k)?;
        if b.undersampled {
            return None;
        }
        b.measured
    }

    /// The closest return to the start so far (after t = 1).
    pub fn closest_return(&self) -> Option<Return> {
        self.closest
    }
}

/// The closest of `so_far` and the local minima on `seg` of D(t) =
/// Σ |x_k(t) − x_k(0)|² after t = 1: where dD/dt = 2 Σ (x_k − x_k(0))·v_k
/// turns from negative to positive.
fn closest_return(start: &Sample, seg: &Segment, so_far: Option<Return>) -> Option<Return> {
    let n = start.pos.len();
    let slope = |t: f64| -> f64 {
        (0..n)
            .map(|k| dot(sub(seg.pos(k, t), start.pos[k]), seg.vel(k, t)))
            .sum()
    };
    let (t0, t1) = (seg.t0.max(start.t + 1.0), seg.t1);
    if t1 <= t0 || !(slope(t0) < 0.0 && slope(t1) >= 0.0) {
        return so_far;
    }
    let t = bisect(t0, t1, slope);
    let distance = (0..n)
        .map(|k| norm(sub(seg.pos(k, t), start.pos[k])))
        .fold(0.0, f64::max);
    match so_far {
        Some(c) if c.distance <= distance => Some(c),
        _ => Some(Return { time: t, distance }),
    }
}

/// Crossings of the reference ray (y' = r·w from − to +, x' = r·u > 0)
/// and extremes of r (r·v = 0) of body k relative to body c on `seg`.
fn track_body(b: &mut Tracked, seg: &Segment, k: usize, c: usize) {
    if b.undersampled || b.last_crossing.is_none() {
        return;
    }
    let rel = |t: f64| sub(seg.pos(k, t), seg.pos(c, t));
    let relv = |t: f64| sub(seg.vel(k, t), seg.vel(c, t));
    let (u, w) = (b.u, b.w);
    let phase = |t: f64| {
        let r = rel(t);
        dot(r, w).atan2(dot(r, u))
    };
    let step = wrap(phase(seg.t1) - phase(seg.t0));
    if step.abs() > std::f64::consts::FRAC_PI_2 {
        b.undersampled = true;
        return;
    }
    // Extremes of r: where r·v changes sign.
    let radial = |t: f64| dot(rel(t), relv(t));
    let mut consider = |t: f64| {
        let r = norm(rel(t));
        b.r_min = b.r_min.min(r);
        b.r_max = b.r_max.max(r);
    };
    consider(seg.t1);
    if (radial(seg.t0) < 0.0) != (radial(seg.t1) < 0.0) {
        consider(bisect(seg.t0, seg.t1, |t| {
            if radial(seg.t0) < 0.0 {
                radial(t)
            } else {
                -radial(t)
            }
        }));
    }
    let y = |t: f64| dot(rel(t), w);
    let (y0, y1) = (y(seg.t0), y(seg.t1));
    if y0 < 0.0 && y1 >= 0.0 && dot(rel(seg.t1), u) > 0.0 {
        let t = bisect(seg.t0, seg.t1, y);
        let last = b.last_crossing.replace(t).expect("checked above");
        let (lo, hi) = (b.r_min, b.r_max);
        let orbits = b.measured.map_or(0, |o| o.orbits) + 1;
        b.measured = Some(Orbit {
            period: t - last,
            semi_major_axis: 0.5 * (lo + hi),
            eccentricity: (hi - lo) / (hi + lo),
            orbits,
        });
        let r = norm(rel(t));
        b.r_min = r;
        b.r_max = r;
    }
}

/// Two consecutive samples and the quintic Hermite interpolant between.
struct Segment<'a> {
    t0: f64,
    t1: f64,
    a: &'a Sample,
    b: &'a Sample,
}

impl<'a> Segment<'a> {
    fn new(a: &'a Sample, b: &'a Sample) -> Self {
        Self {
            t0: a.t,
            t1: b.t,
            a,
            b,
        }
    }

    fn pos(&self, k: usize, t: f64) -> [f64; 3] {
        self.eval(k, t).0
    }

    fn vel(&self, k: usize, t: f64) -> [f64; 3] {
        self.eval(k, t).1
    }

    /// Position and velocity of body k at t in [t0, t1].
    fn eval(&self, k: usize, t: f64) -> ([f64; 3], [f64; 3]) {
        let h = self.t1 - self.t0;
        let s = ((t - self.t0) / h).clamp(0.0, 1.0);
        let (a, b) = (self.a, self.b);
        let mut x = [0.0; 3];
        let mut v = [0.0; 3];
        for d in 0..3 {
            let (p, dp) = quintic(
                [a.pos[k][d], h * a.vel[k][d], h * h * a.acc[k][d]],
                [b.pos[k][d], h * b.vel[k][d], h * h * b.acc[k][d]],
                s,
            );
            x[d] = p;
            v[d] = dp / h;
        }
        (x, v)
    }
}

/// The quintic with value, first and second derivative `p0` at s = 0 and
/// `p1` at s = 1 (derivatives in s), and its derivative, at s.
fn quintic(p0: [f64; 3], p1: [f64; 3], s: f64) -> (f64, f64) {
    let [y0, d0, a0] = p0;
    let [y1, d1, a1] = p1;
    // Coefficients of y0 + d0 s + a0/2 s² + c3 s³ + c4 s⁴ + c5 s⁵.
    let e0 = y1 - y0 - d0 - 0.5 * a0;
    let e1 = d1 - d0 - a0;
    let e2 = a1 - a0;
    let c3 = 10.0 * e0 - 4.0 * e1 + 0.5 * e2;
    let c4 = -15.0 * e0 + 7.0 * e1 - e2;
    let c5 = 6.0 * e0 - 3.0 * e1 + 0.5 * e2;
    let y = y0 + s * (d0 + s * (0.5 * a0 + s * (c3 + s * (c4 + s * c5))));
    let dy = d0 + s * (a0 + s * (3.0 * c3 + s * (4.0 * c4 + s * 5.0 * c5)));
    (y, dy)
}

/// The root of `f` in [a, b], where f(a) < 0 ≤ f(b), to the last bits.
fn bisect(mut a: f64, mut b: f64, f: impl Fn(f64) -> f64) -> f64 {
    for _ in 0..80 {
        let m = 0.5 * (a + b);
        if m <= a || m >= b {
            break;
        }
        if f(m) < 0.0 {
            a = m;
        } else {
            b = m;
        }
    }
    0.5 * (a + b)
}

fn wrap(x: f64) -> f64 {
    use std::f64::consts::{PI, TAU};
    (x + PI).rem_euclid(TAU) - PI
}

pub fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub fn norm(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}

fn scale(a: [f64; 3], s: f64) -> [f64; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Kepler ellipse (μ = 1, a, e) sampled every `h`: the measures are
    /// the ellipse's own, to the interpolant's accuracy.
    #[test]
    fn an_ellipse_sampled_coarsely_gives_its_period_and_axes() {
        let (a, e): (f64, f64) = (1.3, 0.3);
        let period = std::f64::consts::TAU * a.powf(1.5);
        let state = |t: f64| {
            // Mean anomaly → eccentric anomaly by Newton's method.
            let m = std::f64::consts::TAU * t / period;
            let mut ea = m;
            for _ in 0..50 {
                ea -= (ea - e * ea.sin() - m) / (1.0 - e * ea.cos());
            }
            let (s, c) = ea.sin_cos();
            let b = a * (1.0 - e * e).sqrt();
            let x = [a * (c - e), b * s, 0.0];
            let edot = std::f64::consts::TAU / period / (1.0 - e * c);
            let v = [-a * s * edot, b * c * edot, 0.0];
            let r = norm(x);
            let acc = scale(x, -1.0 / (r * r * r));
            Sample {
                t,
                pos: vec![[0.0; 3], x],
                vel: vec![[0.0; 3], v],
                acc: vec![[0.0; 3], acc],
            }
        };
        let mut tracker = OrbitTracker::new(vec![1.0, 1e-9], state(0.0));
        let h = period / 37.0;
        let mut t = 0.0;
        while t < 2.5 * period {
            t += h;
            tracker.push(state(t));
        }
        let o = tracker.orbit(1).expect("two orbits measured");
        assert_eq!(o.orbits, 2);
        assert!((o.period / period - 1.0).abs() < 1e-6, "{o:?} vs {period}");
        assert!((o.semi_major_axis / a - 1.0).abs() < 1e-6, "{o:?}");
        assert!((o.eccentricity - e).abs() < 1e-6, "{o:?}");
        assert_eq!(tracker.orbit(0), None, "the central body has no orbit");
    }

    #[test]
    fn too_few_samples_per_orbit_measure_nothing() {
        let circle = |t: f64| {
            let (s, c) = t.sin_cos();
            Sample {
                t,
                pos: vec![[0.0; 3], [c, s, 0.0]],
                vel: vec![[0.0; 3], [-s, c, 0.0]],
                acc: vec![[0.0; 3], [-c, -s, 0.0]],
            }
        };
        let mut tracker = OrbitTracker::new(vec![1.0, 0.0], circle(0.0));
        for k in 1..20 {
            tracker.push(circle(2.0 * k as f64));
        }
        assert_eq!(tracker.orbit(1), None);
    }

    #[test]
    fn quintic_reproduces_a_quintic() {
        let f =
            |s: f64| 1.0 + 2.0 * s - s * s + 0.5 * s.powi(3) - 3.0 * s.powi(4) + 0.7 * s.powi(5);
        let d = |s: f64| 2.0 - 2.0 * s + 1.5 * s * s - 12.0 * s.powi(3) + 3.5 * s.powi(4);
        let dd = |s: f64| -2.0 + 3.0 * s - 36.0 * s * s + 14.0 * s.powi(3);
        for s in [0.0, 0.3, 0.77, 1.0] {
            let (y, dy) = quintic([f(0.0), d(0.0), dd(0.0)], [f(1.0), d(1.0), dd(1.0)], s);
            assert!((y - f(s)).abs() < 1e-12 && (dy - d(s)).abs() < 1e-12);
        }
    }
}
