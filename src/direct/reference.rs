//! CPU f64 reference of the softened direct sum: what every GPU force
//! kernel is tested against. O(N^2), threads over sinks.

use crate::gpu::layout::{AccPot, PosMass};
use crate::state::stats::map_indices;
pub use crate::state::stats::ErrorStats;

/// Acceleration and potential of one particle, in f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ForceF64 {
    pub acc: [f64; 3],
    pub pot: f64,
}

/// Softened acceleration and potential of every particle due to all the
/// others (the self pair is excluded).
pub fn forces(particles: &[PosMass], eps: f64) -> Vec<ForceF64> {
    let all: Vec<usize> = (0..particles.len()).collect();
    forces_on(particles, &all, eps)
}

/// As `forces`, for the particles `sinks` only (in that order), in threads.
pub fn forces_on(particles: &[PosMass], sinks: &[usize], eps: f64) -> Vec<ForceF64> {
    let eps2 = eps * eps;
    map_indices(sinks, |i| force_on(particles, i, eps2))
}

/// Force on particle `i` from all others.
pub fn force_on(particles: &[PosMass], i: usize, eps2: f64) -> ForceF64 {
    let pi = particles[i].pos.map(f64::from);
    let mut f = ForceF64::default();
    for (j, pj) in particles.iter().enumerate() {
        if j == i {
            continue;
        }
        let d = [
            pj.pos[0] as f64 - pi[0],
            pj.pos[1] as f64 - pi[1],
            pj.pos[2] as f64 - pi[2],
        ];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
        if r2 == 0.0 {
            continue;
        }
        let rinv = 1.0 / r2.sqrt();
        let mrinv = pj.mass as f64 * rinv;
        let mrinv3 = mrinv * rinv * rinv;
        for (acc, d) in f.acc.iter_mut().zip(d) {
            *acc += mrinv3 * d;
        }
        f.pot -= mrinv;
    }
    f
}

/// Per-particle relative acceleration errors |a − a_ref| / |a_ref|.
pub fn acc_errors(gpu: &[AccPot], reference: &[ForceF64]) -> Vec<f64> {
    gpu.iter()
        .zip(reference)
        .map(|(g, r)| {
            let d2: f64 = (0..3).map(|k| (g.acc[k] as f64 - r.acc[k]).powi(2)).sum();
            let r2: f64 = r.acc.iter().map(|x| x * x).sum();
            (d2 / r2).sqrt()
        })
        .collect()
}

/// Per-particle relative potential errors |φ − φ_ref| / |φ_ref|.
pub fn pot_errors(gpu: &[AccPot], reference: &[ForceF64]) -> Vec<f64> {
    gpu.iter()
        .zip(reference)
        .map(|(g, r)| ((g.pot as f64 - r.pot) / r.pot).abs())
        .collect()
}
