//! Inputs of the Hermite kernel tests, shared by the native
//! (tests/hermite_kernels.rs) and browser (tests/web.rs) tests so both run
//! the kernels on the same particles.

use webgrav::direct::hermite_force::HermiteGpu;
use webgrav::direct::predict::JState;
use webgrav::direct::reference::{hermite_forces, Body64};
use webgrav::sim::Model;

/// A Plummer model moved to an off-centre position in f64 (as a cluster
/// in a galaxy, or a Hermite state after many steps): positions then need
/// more than f32, which is what double-single is for. Accelerations are
/// the f64 ones (softening `eps`), so the snap sees consistent a_j - a_i.
pub fn bodies(n: usize, eps: f64) -> Vec<Body64> {
    let p = Model::Plummer.generate(n, 7).unwrap();
    let offset = [1.0 / 3.0, -2.0 / 7.0, 0.1];
    let mut b: Vec<Body64> = p
        .pos_mass
        .iter()
        .zip(&p.vel)
        .map(|(pm, v)| Body64 {
            pos: [0, 1, 2].map(|k| pm.pos[k] as f64 + offset[k]),
            vel: v.vel.map(f64::from),
            acc: [0.0; 3],
            mass: pm.mass as f64,
        })
        .collect();
    let f = hermite_forces(&b, &(0..n).collect::<Vec<_>>(), eps);
    for (b, f) in b.iter_mut().zip(&f) {
        b.acc = f.acc;
    }
    b
}

/// Stores `b` as the j-particles 0..n of `gpu`, at time 0.
pub fn upload(gpu: &mut HermiteGpu, b: &[Body64]) {
    let addr: Vec<u32> = (0..b.len() as u32).collect();
    let recs: Vec<_> = b
        .iter()
        .enumerate()
        .map(|(k, b)| {
            JState {
                id: k as u32,
                mass: b.mass,
                t0: 0.0,
                pos: b.pos,
                vel: b.vel,
                acc: b.acc,
                jerk: [0.0; 3],
                snap: [0.0; 3],
                crackle: [0.0; 3],
            }
            .record()
        })
        .collect();
    gpu.set_j(&addr, &recs);
}
