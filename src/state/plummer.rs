//! Plummer sphere initial conditions, sampled as Aarseth, Hénon & Wielen
//! (1974, A&A 37, 183), in N-body units (G = M = 1, E = -1/4).

use super::particles::Particles;
use super::rng::Rng;
use crate::gpu::layout::{PosMass, Velocity};

/// Fraction of the (infinite) Plummer mass that is sampled: AHW's cut,
/// which avoids the few particles at hundreds of scale radii.
const MASS_CUT: f64 = 0.999;

/// Length scale of a Plummer sphere with E = -1/4: the model with scale
/// radius a has E = -3π/64 · GM²/a, so a = 3π/16.
pub const SCALE_RADIUS: f64 = 3.0 * std::f64::consts::PI / 16.0;

/// `n` equal-mass particles of a Plummer sphere, deterministic for `seed`,
/// moved to the centre-of-mass frame.
pub fn plummer(n: usize, seed: u64) -> Particles {
    let mut rng = Rng::new(seed);
    let mass = 1.0 / n as f64;
    let mut pos = Vec::with_capacity(n);
    let mut vel = Vec::with_capacity(n);
    for _ in 0..n {
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
        pos.push(scale(rng.unit_vector(), r * SCALE_RADIUS));
        vel.push(scale(rng.unit_vector(), v / SCALE_RADIUS.sqrt()));
    }
    let com = mean(&pos);
    let vcom = mean(&vel);
    Particles {
        pos_mass: pos
            .iter()
            .map(|p| PosMass {
                pos: sub(*p, com),
                mass: mass as f32,
            })
            .collect(),
        vel: vel.iter().map(|v| Velocity::new(sub(*v, vcom))).collect(),
        id: (0..n as u64).collect(),
    }
}

fn scale(v: [f64; 3], s: f64) -> [f64; 3] {
    v.map(|x| x * s)
}

fn mean(v: &[[f64; 3]]) -> [f64; 3] {
    let mut s = [0.0; 3];
    for p in v {
        for a in 0..3 {
            s[a] += p[a];
        }
    }
    s.map(|x| x / v.len() as f64)
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f32; 3] {
    [
        (a[0] - b[0]) as f32,
        (a[1] - b[1]) as f32,
        (a[2] - b[2]) as f32,
    ]
}
