//! Plummer sphere initial conditions, sampled as Aarseth, Hénon & Wielen
//! (1974, A&A 37, 183), in N-body units (G = M = 1, E = -1/4).

use super::galaxy::realization::PhasePoint;
use super::parallel::{map_indices, SUM_CHUNK};
use super::particles::Particles;
use super::rng::Rng;
use crate::gpu::layout::{PosMass, Velocity};

/// Fraction of the (infinite) Plummer mass that is sampled: AHW's cut,
/// which avoids the few particles at hundreds of scale radii.
pub const MASS_CUT: f64 = 0.999;

/// Length scale of a Plummer sphere with E = -1/4: the model with scale
/// radius a has E = -3π/64 · GM²/a, so a = 3π/16.
pub const SCALE_RADIUS: f64 = 3.0 * std::f64::consts::PI / 16.0;

/// `n` equal-mass particles of a Plummer sphere, deterministic for `seed`
/// (particle i from its own stream, on every core), moved to the
/// centre-of-mass frame.
pub fn plummer(n: usize, seed: u64) -> Particles {
    let part = plummer_chunks(n, seed, 0..n.div_ceil(SUM_CHUNK));
    let frame = centre_of_chunks(n, &part.sums);
    part.centred(n, frame)
}

/// Particles per chunk of `plummer_chunks`: `state::parallel`'s sum chunk,
/// so the centre of mass of chunks summed on different processes has the
/// bits of `plummer`'s.
pub const PLUMMER_CHUNK: usize = SUM_CHUNK;

/// Particles `chunks` (in PLUMMER_CHUNK-sized chunks of 0..n) of
/// `plummer(n, seed)`, before they move to the centre-of-mass frame, and
/// each chunk's sums of positions and velocities: each rank of a parallel
/// run samples its own chunks, and the ranks' sums together give the
/// frame (`centre_of_chunks`).
pub struct PlummerPart {
    first: usize,
    sampled: Vec<PhasePoint>,
    /// Σ x and Σ v (6 lanes) of each chunk, in order.
    pub sums: Vec<[f64; 6]>,
}

pub fn plummer_chunks(n: usize, seed: u64, chunks: std::ops::Range<usize>) -> PlummerPart {
    let first = (chunks.start * SUM_CHUNK).min(n);
    let end = (chunks.end * SUM_CHUNK).min(n);
    let sampled = map_indices(end - first, |k| plummer_particle(seed, first + k));
    let sums = map_indices(chunks.len(), |c| {
        let mut s = [0.0; 6];
        let start = c * SUM_CHUNK;
        for p in &sampled[start.min(sampled.len())..(start + SUM_CHUNK).min(sampled.len())] {
            for a in 0..3 {
                s[a] += p.0[a];
                s[3 + a] += p.1[a];
            }
        }
        s
    });
    PlummerPart {
        first,
        sampled,
        sums,
    }
}

/// The centre of mass and its velocity of `n` particles from every
/// chunk's sums in order (as `sum_by_chunks` adds them).
pub fn centre_of_chunks(n: usize, sums: &[[f64; 6]]) -> PhasePoint {
    let total = sums
        .iter()
        .fold([0.0; 6], |s, p| std::array::from_fn(|a| s[a] + p[a]));
    let mean = total.map(|x| x / n as f64);
    ([mean[0], mean[1], mean[2]], [mean[3], mean[4], mean[5]])
}

impl PlummerPart {
    /// The particles in the frame `frame` (centre of mass, its velocity)
    /// with their global ids.
    pub fn centred(&self, n: usize, frame: PhasePoint) -> Particles {
        let mass = 1.0 / n as f64;
        let (com, vcom) = frame;
        let m = self.sampled.len();
        Particles {
            pos_mass: map_indices(m, |k| PosMass {
                pos: sub(self.sampled[k].0, com),
                mass: mass as f32,
            }),
            vel: map_indices(m, |k| Velocity::new(sub(self.sampled[k].1, vcom))),
            id: (self.first as u64..(self.first + m) as u64).collect(),
        }
    }
}

/// Particle `i` of the Plummer sphere of `seed`, before centring.
fn plummer_particle(seed: u64, i: usize) -> PhasePoint {
    let rng = &mut Rng::for_particle(seed, 0, i as u64);
    // Radius from the inverted cumulative mass m(r) = r³/(1+r²)^(3/2).
    let m = rng.uniform_open() * MASS_CUT;
    let r = 1.0 / (m.powf(-2.0 / 3.0) - 1.0).sqrt();
    // Speed from q = v/v_esc by von Neumann rejection on
    // g(q) = q²(1-q²)^(7/2), whose maximum is below 0.1.
    let q = loop {
        let q = rng.uniform();
        let g = q * q * (1.0 - q * q).powf(3.5);
        if 0.1 * rng.uniform() < g {
            break q;
        }
    };
    let v = q * std::f64::consts::SQRT_2 * (1.0 + r * r).powf(-0.25);
    (
        scale(rng.unit_vector(), r * SCALE_RADIUS),
        scale(rng.unit_vector(), v / SCALE_RADIUS.sqrt()),
    )
}

fn scale(v: [f64; 3], s: f64) -> [f64; 3] {
    v.map(|x| x * s)
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f32; 3] {
    [
        (a[0] - b[0]) as f32,
        (a[1] - b[1]) as f32,
        (a[2] - b[2]) as f32,
    ]
}
