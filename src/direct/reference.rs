//! CPU f64 reference of the softened direct sum: what every GPU force
//! kernel is tested against. O(N^2), threads over sinks.

use crate::gpu::layout::{AccPot, PosMass};

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
    map_sinks(sinks, |i| force_on(particles, i, eps2))
}

/// `f(i)` for every index of `sinks`, in order, spread over the CPU's
/// threads (one thread in the browser, where threads cannot be spawned).
fn map_sinks<T: Clone + Default + Send>(sinks: &[usize], f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(64);
    let mut out = vec![T::default(); sinks.len()];
    let chunk = sinks.len().div_ceil(threads).max(1);
    if threads == 1 {
        for (o, &i) in out.iter_mut().zip(sinks) {
            *o = f(i);
        }
        return out;
    }
    let f = &f;
    std::thread::scope(|scope| {
        for (part, idx) in out.chunks_mut(chunk).zip(sinks.chunks(chunk)) {
            scope.spawn(move || {
                for (o, &i) in part.iter_mut().zip(idx) {
                    *o = f(i);
                }
            });
        }
    });
    out
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

/// Percentiles of an error distribution (as in Bonsai's figure 4.8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorStats {
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl ErrorStats {
    /// NaN errors sort last, so they show up in `max`.
    pub fn of(errors: &[f64]) -> Self {
        let mut e = errors.to_vec();
        e.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Greater));
        let at = |q: f64| {
            e.get(((e.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        Self {
            median: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: e.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// A particle of the Hermite reference, in f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Body64 {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    /// Acceleration (only the 6th-order snap uses it).
    pub acc: [f64; 3],
    pub mass: f64,
}

/// Hermite force on one particle, in f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HermiteF64 {
    pub acc: [f64; 3],
    pub pot: f64,
    pub jerk: [f64; 3],
    pub snap: [f64; 3],
    /// Index of the nearest other particle (smallest index on ties).
    pub nn: usize,
    /// Its unsoftened distance squared.
    pub nn_d2: f64,
}

/// Softened acceleration, potential, jerk, snap and nearest neighbour of
/// each particle in `sinks` (indices into `bodies`) due to all other
/// bodies: the formulas of `shaders/hermite_force.wgsl`, in f64.
pub fn hermite_forces(bodies: &[Body64], sinks: &[usize], eps: f64) -> Vec<HermiteF64> {
    let eps2 = eps * eps;
    map_sinks(sinks, |i| hermite_on(bodies, i, eps2))
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Hermite force on body `i` from all others.
pub fn hermite_on(bodies: &[Body64], i: usize, eps2: f64) -> HermiteF64 {
    let me = bodies[i];
    let mut f = HermiteF64 {
        nn: usize::MAX,
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
            f.nn = j;
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
