//! The f64 reference of the Hermite force kernels: acceleration,
//! potential, jerk, snap and nearest neighbour by the formulas of
//! `shaders/hermite_force.wgsl`, what the kernel tests compare against.
//! Bodies are the integrator's [`Body`] (mass, position, velocity and, for
//! the snap, acceleration); results are [`Force64`] with the neighbour's
//! index in `nn_id` (smallest index on ties).

use super::hermite_force::Force64;
use super::integrator::Body;
use crate::state::stats::map_indices;

/// Softened acceleration, potential, jerk, snap and nearest neighbour of
/// each particle in `sinks` (indices into `bodies`) due to all other
/// bodies: the formulas of `shaders/hermite_force.wgsl`, in f64.
pub fn hermite_forces(bodies: &[Body], sinks: &[usize], eps: f64) -> Vec<Force64> {
    let eps2 = eps * eps;
    map_indices(sinks, |i| hermite_on(bodies, i, eps2))
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Hermite force on body `i` from all others.
pub fn hermite_on(bodies: &[Body], i: usize, eps2: f64) -> Force64 {
    let me = bodies[i];
    let mut f = Force64 {
        nn_id: u32::MAX,
        nn_d2: f64::INFINITY,
        ..Default::default()
    };
    for (j, b) in bodies.iter().enumerate() {
        if j == i {
            continue;
        }
        let dr = sub(b.pos, me.pos);
        let dv = sub(b.vel, me.vel);
        let da = sub(b.acc, me.acc);
        let d2 = dot(dr, dr);
        if d2 < f.nn_d2 {
            f.nn_d2 = d2;
            f.nn_id = j as u32;
        }
        let r2 = d2 + eps2;
        if r2 == 0.0 {
            continue;
        }
        let rinv2 = 1.0 / r2;
        let rinv = rinv2.sqrt();
        let mr3 = b.mass * rinv * rinv2;
        let alpha = dot(dr, dv) * rinv2;
        let beta = (dot(dv, dv) + dot(dr, da)) * rinv2 + alpha * alpha;
        f.pot -= b.mass * rinv;
        for k in 0..3 {
            let a = mr3 * dr[k];
            let jk = mr3 * dv[k] - 3.0 * alpha * a;
            f.acc[k] += a;
            f.jerk[k] += jk;
            f.snap[k] += mr3 * da[k] - 6.0 * alpha * jk - 3.0 * beta * a;
        }
    }
    f
}

/// |x − y| / |y| for 3-vectors (∞ when y = 0 ≠ x).
pub fn rel_error3(x: [f64; 3], y: [f64; 3]) -> f64 {
    (dot(sub(x, y), sub(x, y)) / dot(y, y)).sqrt()
}
