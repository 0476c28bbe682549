//! Plummer sphere initial conditions, sampled as Aarseth, Hénon & Wielen
//! (1974, A&A 37, 183), in N-body units (G = M = 1, E = -1/4).

use super::galaxy::realization::PhasePoint;
use super::parallel::{add_chunk_sums, map_indices, sums_per_chunk, SUM_CHUNK};
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
    let sampled = map_indices(n, |k| plummer_particle(seed, k));
    let sums = sums_per_chunk(n, |k| {
        let (x, v) = sampled[k];
        [x[0], x[1], x[2], v[0], v[1], v[2]]
    });
    let (com, vcom) = centre_of_chunks(n, &sums);
    let mass = (1.0 / n as f64) as f32;
    Particles {
        pos_mass: map_indices(n, |k| PosMass {
            pos: sub(sampled[k].0, com),
            mass,
        }),
        vel: map_indices(n, |k| Velocity::new(sub(sampled[k].1, vcom))),
        id: (0..n as u64).collect(),
    }
}

/// Particles per chunk of the centre-of-mass sums (`state::parallel`'s
/// sum chunk): a model sampled in parts, each summing its own chunks
/// (`state::generate::plummer_part` on the ranks of a parallel run), has
/// the centre of mass of the whole.
pub const PLUMMER_CHUNK: usize = SUM_CHUNK;

/// The centre of mass and its velocity of `n` particles from every
/// chunk's sums in order (as `sum_by_chunks` adds them).
pub fn centre_of_chunks(n: usize, sums: &[[f64; 6]]) -> PhasePoint {
    let mean = add_chunk_sums(sums).map(|x| x / n as f64);
    ([mean[0], mean[1], mean[2]], [mean[3], mean[4], mean[5]])
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
