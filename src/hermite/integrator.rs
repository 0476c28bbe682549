//! Block-time-step Hermite integrators of 4th and 6th order (Makino &
//! Aarseth 1992; Nitadori & Makino 2008), in the split of Sapporo and
//! NBODY6: the GPU predicts every j-particle and computes the forces on the
//! active block (`hermite_force`); the host keeps the master state in f64
//! and does the corrector and the new time steps for the active particles,
//! which is cheapest there (a few hundred flops per active particle, and
//! the corrected records go back as one compact upload).
//!
//! Formulas (dt = t1 − t0, a0, j0, s0 at t0; a1, j1, s1 at t1):
//! - 4th order: x_p, v_p the 3rd-order predictor; a2 = [−6(a0 − a1) −
//!   dt(4 j0 + 2 j1)]/dt², a3 = [12(a0 − a1) + 6 dt(j0 + j1)]/dt³;
//!   x1 = x_p + a2 dt⁴/24 + a3 dt⁵/120, v1 = v_p + a2 dt³/6 + a3 dt⁴/24.
//! - 6th order, time-symmetric (h = dt/2): v1 = v0 + h(a1 + a0) −
//!   (2/5)h²(j1 − j0) + (1/15)h³(s1 + s0); x1 = x0 + h(v1 + v0) −
//!   (2/5)h²(a1 − a0) + (1/15)h³(j1 + j0). Crackle c, pop p and the fifth
//!   derivative q at t0 from the quintic Hermite interpolant: with
//!   A = a1 − a0 − j0 dt − s0 dt²/2, B = (j1 − j0 − s0 dt) dt,
//!   C = (s1 − s0) dt²: c dt³ = 60A − 24B + 3C, p dt⁴ = −360A + 168B − 24C,
//!   q dt⁵ = 720A − 360B + 60C; then carried to t1 by Taylor.
//! - Time steps (η = `--eta`, inside the square root: halving η shrinks
//!   the steps by √2). 4th order: Aarseth's criterion dt4 =
//!   sqrt(η (|a||s| + |j|²) / (|j||c| + |s|²)) at t1 with s, c = a2, a3 of
//!   the interpolant (η = 0.02 is NBODY6's ETAI). 6th order, `Criterion`:
//!   `aarseth`, the same form with the computed snap and the interpolated
//!   crackle; `sapporo2` (the default), the mean of that dt4 and Nitadori
//!   and Makino's generalisation dt6 = √η ((√(|a||s|) + |j|) /
//!   (√(|c||q|) + |p|))^(1/3) with pop p and the fifth derivative q of the
//!   interpolant, i.e. Sapporo2's η4 = η, η6 = √η (its Fig. 6: η4 = 0.01,
//!   η6 = 0.1). dt6 alone needs fifth differences of the forces over a
//!   step, whose f32/DS rounding grows as dt⁻⁵ and drives the steps to
//!   zero (we saw it; Sapporo2 reports it too). Crackle itself is a force
//!   difference over dt³, so with DS forces either criterion could still
//!   run away in a close encounter; the 6th-order step never goes below
//!   1/16 of the first-step estimate from a, j and s (no differences).
//! - Block steps: powers of two up to `dt_max`, a particle's t0 always a
//!   multiple of its step; a step halves while above the criterion and
//!   doubles (once per step) where the criterion allows and t1 is a
//!   multiple of the doubled step.
//! - First steps: dt = sqrt(η)/4 · min(|a|/|j|, sqrt(|a|/|s|)) (the snap
//!   term for 6th order), made a power of two. A step that would fall
//!   below `DT_MIN` is an error, not a hang.
//! - Predictor of the j-particles on the GPU: the full Taylor series with
//!   the last a, j, s (for 4th order a2 at t1) and c (a3), so the
//!   j-particles are predicted one order better than the 4th-order scheme
//!   needs, as NBODY6 does.

use super::hermite_force::{Force64, HermiteGpu, Order, Precision, Sinks};
use crate::error::{Error, Result};
use crate::gpu::ds::{split, split3};
use crate::gpu::layout::{JParticle, PosMass, Velocity};
use crate::gpu::GpuContext;
use crate::state::energy::{state_diagnostics, PotentialKernel, PotentialSum};
use crate::state::few_body::Sample;
use crate::state::{Diagnostics, Particles};

/// The order of a Hermite scheme: 4th (acceleration and jerk) or 6th
/// (and snap). The force kernels also have a 2nd order (no jerk), which
/// is not an integrator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HermiteOrder {
    Four,
    Six,
}

impl HermiteOrder {
    /// The force kernel this scheme needs.
    pub fn force_order(self) -> Order {
        match self {
            HermiteOrder::Four => Order::Four,
            HermiteOrder::Six => Order::Six,
        }
    }
}

/// The time-step criterion of the 6th-order scheme (the 4th-order one
/// always uses Aarseth's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Criterion {
    /// Sapporo2's (Bédorf et al. 2015, §4, after Spera & Capuzzo-Dolcetta):
    /// the mean of Aarseth's 4th-order form with η4 = η and Nitadori &
    /// Makino's 6th-order generalisation with η6 = √η (η = 0.01 gives
    /// Sapporo2's η4 = 0.01, η6 = 0.1; both halves scale as √η).
    #[default]
    Sapporo2,
    /// Aarseth's form with the computed snap and the interpolated crackle.
    Aarseth,
}

impl Criterion {
    pub const ALL: &'static [Criterion] = &[Criterion::Sapporo2, Criterion::Aarseth];

    pub fn name(self) -> &'static str {
        match self {
            Criterion::Sapporo2 => "sapporo2",
            Criterion::Aarseth => "aarseth",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }
}

/// Settings of a Hermite run (N-body units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HermiteConfig {
    pub order: HermiteOrder,
    pub precision: Precision,
    /// Accuracy parameter of the time-step criterion (see the module docs).
    pub eta: f64,
    /// The 6th-order scheme's time-step criterion.
    pub criterion: Criterion,
    /// Plummer softening length.
    pub eps: f64,
    /// Largest time step, a power of two.
    pub dt_max: f64,
    /// All particles in lockstep with this step (a power of two) instead
    /// of individual block steps: the reference the block steps are tested
    /// against.
    pub shared_dt: Option<f64>,
}

impl HermiteConfig {
    pub fn new(order: HermiteOrder, precision: Precision, eta: f64, eps: f64) -> Self {
        Self {
            order,
            precision,
            eta,
            criterion: Criterion::default(),
            eps,
            dt_max: 0.125,
            shared_dt: None,
        }
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidParameter(m));
        if !(self.eta.is_finite() && self.eta > 0.0) {
            return bad(format!("eta must be > 0, got {}", self.eta));
        }
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return bad(format!("softening must be >= 0, got {}", self.eps));
        }
        for (name, dt) in [("dt_max", Some(self.dt_max)), ("shared_dt", self.shared_dt)] {
            if let Some(dt) = dt {
                if !(dt > 0.0 && dt.is_finite() && dt.log2().fract() == 0.0) {
                    return bad(format!("{name} must be a power of two, got {dt}"));
                }
            }
        }
        Ok(())
    }
}

/// Smallest step a particle may take (a guard against a criterion that
/// collapses, e.g. two unsoftened particles meeting).
pub const DT_MIN: f64 = 1.0 / (1u64 << 40) as f64;

/// The f64 state of one particle at its last correction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Body {
    pub mass: f64,
    /// Time of the last correction, and the current step.
    pub t0: f64,
    pub dt: f64,
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub acc: [f64; 3],
    pub jerk: [f64; 3],
    /// Second and third derivatives of the acceleration at t0.
    pub snap: [f64; 3],
    pub crackle: [f64; 3],
    /// Potential at the last correction.
    pub pot: f64,
}

impl Body {
    /// The body as the GPU's j-particle record with identity `id`:
    /// position, time and mass double-single, derivatives rounded to f32
    /// (with the double-single remainders the f64 kernels of `dp` read).
    pub fn record(&self, id: u32) -> JParticle {
        let (pos_hi, pos_lo) = split3(self.pos);
        let (t0_hi, t0_lo) = split(self.t0);
        let (vel, vel_lo) = split3(self.vel);
        let (acc, acc_lo) = split3(self.acc);
        let (jerk, jerk_lo) = split3(self.jerk);
        let (snap, snap_lo) = split3(self.snap);
        let (mass, mass_lo) = split(self.mass);
        let f = |v: [f64; 3]| v.map(|x| x as f32);
        JParticle {
            pos_hi,
            mass,
            mass_lo,
            pos_lo,
            id,
            vel,
            vel_lo_x: vel_lo[0],
            vel_lo_y: vel_lo[1],
            vel_lo_z: vel_lo[2],
            t0_hi,
            acc,
            acc_lo,
            t0_lo,
            jerk,
            jerk_lo,
            snap,
            snap_lo,
            crackle: f(self.crackle),
            ..Default::default()
        }
    }

    /// Position and velocity predicted to `t` (full Taylor series).
    pub fn predict(&self, t: f64) -> ([f64; 3], [f64; 3]) {
        let dt = t - self.t0;
        let mut x = [0.0; 3];
        let mut v = [0.0; 3];
        for k in 0..3 {
            let (a, j, s, c) = (self.acc[k], self.jerk[k], self.snap[k], self.crackle[k]);
            x[k] = self.pos[k]
                + dt * (self.vel[k]
                    + dt / 2.0 * (a + dt / 3.0 * (j + dt / 4.0 * (s + dt / 5.0 * c))));
            v[k] = self.vel[k] + dt * (a + dt / 2.0 * (j + dt / 3.0 * (s + dt / 4.0 * c)));
        }
        (x, v)
    }

    /// Acceleration predicted to `t` (the same series, one order less).
    pub fn predict_acc(&self, t: f64) -> [f64; 3] {
        let dt = t - self.t0;
        std::array::from_fn(|k| {
            let (j, s, c) = (self.jerk[k], self.snap[k], self.crackle[k]);
            self.acc[k] + dt * (j + dt / 2.0 * (s + dt / 3.0 * c))
        })
    }
}

fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Mass, position and velocity of every body, in f64.
pub type State64 = Vec<(f64, [f64; 3], [f64; 3])>;

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HermiteStats {
    /// Block steps (force evaluations of one active block).
    pub block_steps: u64,
    /// Force evaluations of single particles (sum of block sizes), the
    /// initialisation included.
    pub force_evaluations: u64,
    /// Particle steps taken at each level k (dt = dt_max / 2^k).
    pub steps_per_level: Vec<u64>,
}

/// 4th- or 6th-order corrector and new time-step criterion of one body:
/// the pure f64 core of the integrator (tested on its own).
pub fn correct(
    b: &mut Body,
    f: &Force64,
    t1: f64,
    order: HermiteOrder,
    eta: f64,
    criterion: Criterion,
) -> f64 {
    let dt = t1 - b.t0;
    let (a0, j0, s0) = (b.acc, b.jerk, b.snap);
    let (a1, j1) = (f.acc, f.jerk);
    let mut step_criterion;
    match order {
        HermiteOrder::Six => {
            let s1 = f.snap;
            let h = 0.5 * dt;
            let mut v1 = [0.0; 3];
            let mut c1 = [0.0; 3];
            let mut p1 = [0.0; 3];
            let mut q1 = [0.0; 3];
            for k in 0..3 {
                v1[k] = b.vel[k] + h * (a1[k] + a0[k]) - 0.4 * h * h * (j1[k] - j0[k])
                    + h * h * h / 15.0 * (s1[k] + s0[k]);
                b.pos[k] += h * (v1[k] + b.vel[k]) - 0.4 * h * h * (a1[k] - a0[k])
                    + h * h * h / 15.0 * (j1[k] + j0[k]);
                let ca = a1[k] - a0[k] - j0[k] * dt - s0[k] * dt * dt / 2.0;
                let cb = (j1[k] - j0[k] - s0[k] * dt) * dt;
                let cc = (s1[k] - s0[k]) * dt * dt;
                let c0 = (60.0 * ca - 24.0 * cb + 3.0 * cc) / dt.powi(3);
                let p0 = (-360.0 * ca + 168.0 * cb - 24.0 * cc) / dt.powi(4);
                let q0 = (720.0 * ca - 360.0 * cb + 60.0 * cc) / dt.powi(5);
                c1[k] = c0 + p0 * dt + q0 * dt * dt / 2.0;
                p1[k] = p0 + q0 * dt;
                q1[k] = q0;
            }
            b.vel = v1;
            b.snap = s1;
            b.crackle = c1;
            // Aarseth's form with the computed snap and the interpolated
            // crackle; for Sapporo2's criterion averaged with the
            // generalised one of pop and q (fifth differences of the
            // forces over the step: alone, their rounding drives dt to
            // zero with f32/DS forces, as Sapporo2 reports; the 4th-order
            // half keeps the mean from collapsing).
            let num = norm(a1) * norm(s1) + norm(j1).powi(2);
            let den = norm(j1) * norm(c1) + norm(s1).powi(2);
            let aarseth = (eta * num / den).sqrt();
            step_criterion = match criterion {
                Criterion::Aarseth => aarseth,
                Criterion::Sapporo2 => {
                    let a1_gen = (norm(a1) * norm(s1)).sqrt() + norm(j1);
                    let a4_gen = (norm(c1) * norm(q1)).sqrt() + norm(p1);
                    let general = eta.sqrt() * (a1_gen / a4_gen).cbrt();
                    0.5 * (aarseth + general)
                }
            };
            // Crackle, pop and q are differences of forces over the step,
            // so the forces' rounding reaches them amplified by 1/dt³ to
            // 1/dt⁵; with f32 or DS forces a close encounter can make
            // that noise the criterion, which then shrinks the step
            // without end (seen at η = 0.01, N = 4096, ε = 0.01: a
            // particle whose acceleration nearly cancels). The step never
            // goes below 1/16 of the first-step estimate from a, j and s
            // themselves (no differences, so no amplified noise), which
            // smooth dynamics never reach (its criterion stays near 4x
            // that estimate).
            let scale = (norm(a1) / norm(j1)).min((norm(a1) / norm(s1)).sqrt());
            step_criterion = step_criterion.max(0.25 * eta.sqrt() * scale / 16.0);
        }
        HermiteOrder::Four => {
            let mut a2 = [0.0; 3];
            let mut a3 = [0.0; 3];
            for k in 0..3 {
                a2[k] = (-6.0 * (a0[k] - a1[k]) - dt * (4.0 * j0[k] + 2.0 * j1[k])) / (dt * dt);
                a3[k] = (12.0 * (a0[k] - a1[k]) + 6.0 * dt * (j0[k] + j1[k])) / dt.powi(3);
                let xp = b.pos[k] + dt * (b.vel[k] + dt / 2.0 * (a0[k] + dt / 3.0 * j0[k]));
                let vp = b.vel[k] + dt * (a0[k] + dt / 2.0 * j0[k]);
                b.pos[k] = xp + dt.powi(4) / 24.0 * a2[k] + dt.powi(5) / 120.0 * a3[k];
                b.vel[k] = vp + dt.powi(3) / 6.0 * a2[k] + dt.powi(4) / 24.0 * a3[k];
                // a2 carried to t1 (a3 is constant on the interpolant).
                a2[k] += a3[k] * dt;
            }
            b.snap = a2;
            b.crackle = a3;
            let num = norm(a1) * norm(a2) + norm(j1).powi(2);
            let den = norm(j1) * norm(a3) + norm(a2).powi(2);
            step_criterion = (eta * num / den).sqrt();
        }
    }
    b.acc = a1;
    b.jerk = j1;
    b.pot = f.pot;
    b.t0 = t1;
    if step_criterion.is_finite() {
        step_criterion
    } else {
        // 0/0 (e.g. an isolated particle): nothing limits the step.
        f64::INFINITY
    }
}

/// The next block step after a step `old` that ended at `t1`, given the
/// criterion's `wanted` step: halve while too large, double once where
/// allowed and commensurate, never above `dt_max` or below `DT_MIN`.
pub fn next_step(old: f64, wanted: f64, t1: f64, dt_max: f64) -> f64 {
    let mut dt = old.min(dt_max);
    while dt > wanted && dt > DT_MIN {
        dt *= 0.5;
    }
    if dt == old && 2.0 * dt <= wanted && 2.0 * dt <= dt_max && (t1 / (2.0 * dt)).fract() == 0.0 {
        dt *= 2.0;
    }
    dt
}

/// The largest power of two <= `dt` (and <= `dt_max`) of which `t` is a
/// multiple.
fn first_step(dt: f64, t: f64, dt_max: f64) -> f64 {
    let mut s = dt_max;
    while (s > dt || (t / s).fract() != 0.0) && s > DT_MIN {
        s *= 0.5;
    }
    s
}

/// A Hermite N-body integration: f64 bodies on the host, forces on the GPU.
pub struct HermiteSimulation {
    gpu: HermiteGpu,
    pub bodies: Vec<Body>,
    ids: Vec<u64>,
    config: HermiteConfig,
    /// Time of the last block step (N-body units).
    pub time: f64,
    pub stats: HermiteStats,
    /// The kernel of `diagnostics` at large N, built at its first use.
    energy_kernel: Option<PotentialKernel>,
}

impl HermiteSimulation {
    /// Uploads `particles` at time `t_start` (a multiple of `dt_max`, as
    /// block steps need) and computes the initial forces (two evaluations
    /// for 6th order: the snap needs the accelerations of the sources).
    pub async fn new(
        ctx: &GpuContext,
        particles: &Particles,
        config: HermiteConfig,
        t_start: f64,
    ) -> Result<Self> {
        config.validate()?;
        config.precision.check_adapter(ctx)?;
        particles.validate().map_err(Error::InvalidParameter)?;
        if !(t_start.is_finite() && (t_start / config.dt_max).fract() == 0.0) {
            return Err(Error::InvalidParameter(format!(
                "the start time {t_start} must be a multiple of dt_max {}",
                config.dt_max
            )));
        }
        let n = particles.len() as u32;
        let gpu = HermiteGpu::new(ctx, n, n, config.eps)?;
        let bodies = particles
            .pos_mass
            .iter()
            .zip(&particles.vel)
            .map(|(p, v)| Body {
                mass: p.mass as f64,
                t0: t_start,
                pos: p.pos.map(f64::from),
                vel: v.vel.map(f64::from),
                ..Default::default()
            })
            .collect();
        let mut sim = Self {
            gpu,
            bodies,
            ids: particles.id.clone(),
            config,
            time: t_start,
            stats: HermiteStats::default(),
            energy_kernel: None,
        };
        let all: Vec<u32> = (0..n).collect();
        let passes: &[Order] = match config.order {
            HermiteOrder::Six => &[Order::Four, Order::Six],
            HermiteOrder::Four => &[Order::Four],
        };
        for &order in passes {
            sim.upload(&all);
            let f = sim
                .gpu
                .evaluate(t_start, Sinks::Active(&all), order, config.precision)
                .await?;
            sim.stats.force_evaluations += n as u64;
            for (b, r) in sim.bodies.iter_mut().zip(&f) {
                let f = Force64::from(r);
                b.acc = f.acc;
                b.jerk = f.jerk;
                b.snap = if order == Order::Six {
                    f.snap
                } else {
                    [0.0; 3]
                };
                b.pot = f.pot;
            }
        }
        // Aarseth's starting step, η_s a/|ȧ|. A body at a point of zero
        // force (the figure-eight's middle star, a body at a Lagrange
        // point) has no such time scale: it starts with the smallest step
        // of the others, which share its neighbourhood's.
        let wanted: Vec<f64> = sim
            .bodies
            .iter()
            .map(|b| {
                let (a, j, s) = (norm(b.acc), norm(b.jerk), norm(b.snap));
                let mut dt = a / j;
                if config.order == HermiteOrder::Six && s > 0.0 {
                    dt = dt.min((a / s).sqrt());
                }
                0.25 * config.eta.sqrt() * dt
            })
            .collect();
        let usable = |dt: f64| dt.is_finite() && dt > 0.0;
        let fallback = wanted
            .iter()
            .copied()
            .filter(|&dt| usable(dt))
            .fold(config.dt_max, f64::min);
        for (b, &dt) in sim.bodies.iter_mut().zip(&wanted) {
            let dt = config
                .shared_dt
                .unwrap_or(if usable(dt) { dt } else { fallback });
            b.dt = first_step(dt, t_start, config.dt_max);
        }
        sim.upload(&all);
        Ok(sim)
    }

    pub fn config(&self) -> &HermiteConfig {
        &self.config
    }

    /// An integration continued from its f64 state (bodies with their own
    /// times and steps, counters, time), as a checkpoint holds it: every
    /// j-record is uploaded from the bodies, so the next block step sees
    /// exactly what the interrupted run would have.
    pub fn restore(
        ctx: &GpuContext,
        bodies: Vec<Body>,
        ids: Vec<u64>,
        config: HermiteConfig,
        time: f64,
        stats: HermiteStats,
    ) -> Result<Self> {
        config.validate()?;
        let n = bodies.len() as u32;
        if n == 0 || ids.len() != bodies.len() {
            return Err(Error::InvalidParameter(
                "a restored Hermite state needs one id per body".into(),
            ));
        }
        // Block steps are dt_max / 2^k: a step of 0, below 0 or above
        // dt_max has no level (`levels` would index past any histogram).
        if let Some(k) = bodies
            .iter()
            .position(|b| !(b.dt > 0.0 && b.dt <= config.dt_max))
        {
            return Err(Error::InvalidParameter(format!(
                "a restored Hermite state: body {k}'s time step {} is not in (0, dt_max = {}]",
                bodies[k].dt, config.dt_max
            )));
        }
        let gpu = HermiteGpu::new(ctx, n, n, config.eps)?;
        let mut sim = Self {
            gpu,
            bodies,
            ids,
            config,
            time,
            stats,
            energy_kernel: None,
        };
        let all: Vec<u32> = (0..n).collect();
        sim.upload(&all);
        Ok(sim)
    }

    /// Identities of the bodies, in input order.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Changes the time-step accuracy and the force arithmetic of the
    /// next block steps (neither changes the state).
    pub fn set_accuracy(&mut self, eta: f64, criterion: Criterion, precision: Precision) {
        self.config.eta = eta;
        self.config.criterion = criterion;
        self.config.precision = precision;
    }

    pub fn n(&self) -> usize {
        self.bodies.len()
    }

    /// Queues the j-records of `which` for the next evaluation.
    fn upload(&mut self, which: &[u32]) {
        let recs: Vec<_> = which
            .iter()
            .map(|&k| self.bodies[k as usize].record(k))
            .collect();
        self.gpu.set_j(which, &recs);
    }

    /// Time of the next block step.
    pub fn next_time(&self) -> f64 {
        self.bodies
            .iter()
            .map(|b| b.t0 + b.dt)
            .fold(f64::INFINITY, f64::min)
    }

    /// One block step: the particles due next are predicted, their forces
    /// evaluated on the GPU, corrected on the host and given new steps.
    /// Returns the number of active particles.
    pub async fn step(&mut self) -> Result<usize> {
        let t1 = self.next_time();
        let active: Vec<u32> = (0..self.bodies.len() as u32)
            .filter(|&k| {
                let b = &self.bodies[k as usize];
                b.t0 + b.dt == t1
            })
            .collect();
        let f = self
            .gpu
            .evaluate(
                t1,
                Sinks::Active(&active),
                self.config.order.force_order(),
                self.config.precision,
            )
            .await?;
        let c = self.config;
        // A non-finite force stops the run before any body is corrected,
        // so the state stays the last good one.
        for (&k, r) in active.iter().zip(&f) {
            let f = Force64::from(r);
            if !(f.acc.iter().chain(&f.jerk).all(|x| x.is_finite()) && f.pot.is_finite()) {
                return Err(Error::NonFinite {
                    particle: self.ids[k as usize],
                    what: "force",
                    time: t1,
                });
            }
        }
        for (&k, r) in active.iter().zip(&f) {
            let b = &mut self.bodies[k as usize];
            let level = (c.dt_max / b.dt).log2().round() as usize;
            if self.stats.steps_per_level.len() <= level {
                self.stats.steps_per_level.resize(level + 1, 0);
            }
            self.stats.steps_per_level[level] += 1;
            let wanted = correct(b, &Force64::from(r), t1, c.order, c.eta, c.criterion);
            b.dt = match c.shared_dt {
                Some(h) => h,
                None => next_step(b.dt, wanted, t1, c.dt_max),
            };
            // The criterion itself asking for less than DT_MIN (or giving
            // NaN) means it collapsed; a step of exactly DT_MIN is legal.
            if c.shared_dt.is_none() && (wanted.is_nan() || wanted < DT_MIN) {
                return Err(Error::InvalidParameter(format!(
                    "particle {k}: time step below 2^-40 at t = {t1} \
                     (close encounter without softening?)"
                )));
            }
        }
        self.upload(&active);
        self.time = t1;
        self.stats.block_steps += 1;
        self.stats.force_evaluations += active.len() as u64;
        Ok(active.len())
    }

    /// Block steps until every particle's next step would pass `t_end`.
    /// With `t_end` a multiple of `dt_max`, all particles end exactly at
    /// `t_end`.
    pub async fn run_until(&mut self, t_end: f64) -> Result<()> {
        while self.next_time() <= t_end {
            self.step().await?;
        }
        Ok(())
    }

    /// Number of particles at each level k (dt = dt_max / 2^k) now.
    pub fn levels(&self) -> Vec<u64> {
        let mut h = Vec::new();
        for b in &self.bodies {
            let k = (self.config.dt_max / b.dt).log2().round() as usize;
            if h.len() <= k {
                h.resize(k + 1, 0);
            }
            h[k] += 1;
        }
        h
    }

    /// Energies and momenta of the state at `self.time` (`state_f64`),
    /// the potential summed the precise way (`state::energy`: to ~1e-14
    /// whatever the run's force precision), with how it was summed.
    pub async fn diagnostics(&mut self) -> Result<(Diagnostics, PotentialSum)> {
        let state = self.state_f64();
        state_diagnostics(
            self.gpu.context(),
            &mut self.energy_kernel,
            &state,
            self.config.eps,
        )
        .await
    }

    /// Kinetic, potential and total energy at `self.time` (see
    /// `diagnostics`).
    pub async fn energy(&mut self) -> Result<(f64, f64, f64)> {
        let (d, _) = self.diagnostics().await?;
        Ok((d.kinetic, d.potential, d.total))
    }

    /// The state predicted to `self.time` as particles (f32), in input
    /// order, with their potentials from the last corrections.
    pub fn particles(&self) -> (Particles, Vec<f32>) {
        let mut p = Particles {
            id: self.ids.clone(),
            ..Default::default()
        };
        let mut pot = Vec::with_capacity(self.bodies.len());
        for b in &self.bodies {
            let (x, v) = b.predict(self.time);
            p.pos_mass.push(PosMass {
                pos: x.map(|c| c as f32),
                mass: b.mass as f32,
            });
            p.vel.push(Velocity::new(v.map(|c| c as f32)));
            pot.push(b.pot as f32);
        }
        (p, pot)
    }

    /// Mass, position and velocity predicted to `self.time` of every body,
    /// in f64 (what a full-precision file holds).
    pub fn state_f64(&self) -> State64 {
        self.bodies
            .iter()
            .map(|b| {
                let (x, v) = b.predict(self.time);
                (b.mass, x, v)
            })
            .collect()
    }

    /// Every body's position, velocity and acceleration predicted to
    /// `self.time` plus `offset` (the run's clock), in f64, in input order.
    pub fn sample(&self, offset: f64) -> Sample {
        let mut s = Sample {
            t: offset + self.time,
            pos: Vec::with_capacity(self.bodies.len()),
            vel: Vec::with_capacity(self.bodies.len()),
            acc: Vec::with_capacity(self.bodies.len()),
        };
        for b in &self.bodies {
            let (x, v) = b.predict(self.time);
            s.pos.push(x);
            s.vel.push(v);
            s.acc.push(b.predict_acc(self.time));
        }
        s
    }

    /// Positions predicted to `self.time`, in f64.
    pub fn positions(&self) -> Vec<[f64; 3]> {
        self.bodies.iter().map(|b| b.predict(self.time).0).collect()
    }

    /// The GPU force engine (for benchmarks).
    pub fn gpu(&mut self) -> &mut HermiteGpu {
        &mut self.gpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 6th-order interpolation recovers crackle, pop and the fifth
    /// derivative of a quintic acceleration exactly (to rounding).
    #[test]
    fn sixth_order_interpolation_is_exact_for_quintics() {
        // a(t) = sum_k coef_k t^k / k!, k = 0..5, for one component.
        let coef = [0.3, -1.1, 2.0, 5.0, -7.0, 11.0];
        let at = |t: f64, d: usize| -> f64 {
            (d..6)
                .map(|k| coef[k] * t.powi((k - d) as i32) / (1..=(k - d)).product::<usize>() as f64)
                .sum()
        };
        let dt = 0.125;
        let mut b = Body {
            mass: 1.0,
            dt,
            acc: [at(0.0, 0), 0.0, 0.0],
            jerk: [at(0.0, 1), 0.0, 0.0],
            snap: [at(0.0, 2), 0.0, 0.0],
            ..Default::default()
        };
        let f = Force64 {
            acc: [at(dt, 0), 0.0, 0.0],
            jerk: [at(dt, 1), 0.0, 0.0],
            snap: [at(dt, 2), 0.0, 0.0],
            ..Default::default()
        };
        correct(&mut b, &f, dt, HermiteOrder::Six, 0.01, Criterion::Aarseth);
        // Crackle at t1 from the interpolant vs the exact one.
        assert!((b.crackle[0] - at(dt, 3)).abs() < 1e-9 * at(dt, 3).abs());
    }

    #[test]
    fn block_steps_stay_powers_of_two_and_commensurate() {
        let mut dt = 0.125;
        let mut t = 0.0;
        for wanted in [0.2, 0.01, 0.05, 0.3, 0.3, 0.3, 0.001, 1.0, 1.0, 1.0] {
            t += dt;
            dt = next_step(dt, wanted, t, 0.125);
            assert_eq!(dt.log2().fract(), 0.0);
            assert_eq!((t / dt).fract(), 0.0, "t {t} dt {dt}");
            assert!(dt <= wanted.max(DT_MIN) || dt == DT_MIN);
        }
    }
}
