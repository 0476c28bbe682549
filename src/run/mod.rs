//! One run type over every integrator: [`Run`] holds a leapfrog (direct or
//! tree forces, all on the GPU) or a block-step Hermite integrator behind
//! one API, which the CLI, the web app, the Python package and the
//! benchmarks use and nothing else. A run is created from particles and a [`RunConfig`] (which only
//! `RunParams::validate` builds); steps are queued without waiting for the
//! GPU; `readout` gives one consistent state in input order with its
//! diagnostics, GPU phase times and solver statistics.
//!
//! Adding a leapfrog-style solver: a `SolverKind`, its arm in
//! `LeapfrogEngine::new`, and the parameters it reads in `params`.

pub mod block;
pub mod checkpoint;
pub mod hermite;
pub mod leapfrog;
pub mod params;
pub mod schedule;

pub use params::{Param, RunConfig, RunParams, RUN_PARAMS};

use crate::error::{Error, Result};
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::gpu::timing::{BatchClock, PhaseTimer, Phases};
use crate::gpu::GpuContext;
use crate::hermite::{HermiteStats, State64};
use crate::snapshot::Snapshot;
use crate::state::diagnostics::GpuDiagnostics;
use crate::state::energy::{state_diagnostics, PotentialKernel, PotentialRule, PotentialSum};
use crate::state::few_body::{Sample, MAX_TRACKED_BODIES};
use crate::state::generate::Sampled;
use crate::state::input_order::NotFinite;
use crate::state::parallel::{map_indices, map_into};
use crate::state::{Diagnostics, DiagnosticsSum, GpuParticles, Particles, StateArray};
use crate::tree::layout::{InteractionCount, TreeCounters};
use hermite::HermiteEngine;
use leapfrog::{ForceSolver, LeapfrogEngine};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Which gravity solver and integrator a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolverKind {
    /// Bonsai-style octree with quadrupole moments, O(N log N); leapfrog.
    Tree,
    /// Blocked direct summation, O(N²), f32; leapfrog.
    Direct,
    /// 4th-order Hermite, individual block time steps, direct forces with
    /// jerk.
    Hermite4,
    /// 6th-order Hermite, as Hermite4 with snap.
    Hermite6,
}

impl SolverKind {
    /// In menu order.
    pub const ALL: &'static [SolverKind] = &[
        SolverKind::Tree,
        SolverKind::Direct,
        SolverKind::Hermite4,
        SolverKind::Hermite6,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Direct => "direct",
            SolverKind::Tree => "tree",
            SolverKind::Hermite4 => "hermite4",
            SolverKind::Hermite6 => "hermite6",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// Block-step Hermite (state on the host, steps with read-backs)
    /// rather than a leapfrog on the GPU.
    pub fn is_hermite(self) -> bool {
        matches!(self, SolverKind::Hermite4 | SolverKind::Hermite6)
    }

    /// Whether a run of this solver starts from particles left on the GPU
    /// (`Run::from_gpu_state`), so that a model sampled there need not
    /// come to the host: a leapfrog's does, Hermite builds its f64 state
    /// on the host.
    pub fn starts_on_gpu(self) -> bool {
        !self.is_hermite()
    }
}

/// What the GPU has finished of a run's queued work, updated from the
/// queue's completion callbacks (so it can be read while the run is busy,
/// e.g. for frame pacing and steps per second).
#[derive(Debug, Default)]
pub struct Progress {
    queued: AtomicU64,
    done: AtomicU64,
    time_bits: AtomicU64,
}

impl Progress {
    /// Steps queued.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::SeqCst)
    }

    /// Steps (Hermite: block steps) the GPU has finished.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }

    /// Simulated time of the last finished step.
    pub fn time(&self) -> f64 {
        f64::from_bits(self.time_bits.load(Ordering::SeqCst))
    }

    fn set_done(&self, steps: u64, time: f64) {
        self.done.store(steps, Ordering::SeqCst);
        self.time_bits.store(time.to_bits(), Ordering::SeqCst);
    }
}

/// Statistics of a Hermite run.
#[derive(Clone, Debug, PartialEq)]
pub struct HermiteReadout {
    pub stats: HermiteStats,
    /// Particles per time-step level now (`levels[k]`: dt = dt_max / 2^k).
    pub levels: Vec<u64>,
    pub dt_max: f64,
}

/// One consistent state of a run and what was measured with it.
#[derive(Clone, Debug)]
pub struct Readout {
    /// Positions, velocities, ids and potentials in input order (shared
    /// with the run, which keeps it as its last good state).
    pub snapshot: Arc<Snapshot>,
    /// Accelerations and potentials in input order.
    pub acc_pot: Vec<AccPot>,
    pub diagnostics: Diagnostics,
    /// How the potential energy of `diagnostics` was summed.
    pub potential_sum: PotentialSum,
    /// The energy reference of |ΔE/E₀| (the first read-out since the run
    /// or its last reconfiguration).
    pub e0: Diagnostics,
    /// This read-out set `e0`.
    pub e0_reset: bool,
    /// The largest |ΔE/E₀| of the read-outs since `e0` was set.
    pub de_max: f64,
    /// Leapfrog steps (Hermite: block steps) so far.
    pub steps: u64,
    /// GPU time per phase of one step since the last read-out, when the
    /// adapter has timestamp queries and a step was timed.
    pub phases: Option<Phases>,
    /// Mean particle-particle and particle-cell interactions per particle
    /// of the last tree walk.
    pub interactions: Option<(f64, f64)>,
    pub hermite: Option<HermiteReadout>,
    /// Tree runs with block steps: particles per level in the last largest
    /// step (`block_levels[k]`: step dt / 2^k).
    pub block_levels: Option<Vec<u64>>,
    /// The state in f64, input order, where the integrator holds it so
    /// (Hermite): mass, position, velocity.
    pub state_f64: Option<State64>,
}

impl Readout {
    /// |E − E₀| / |E₀|.
    pub fn energy_error(&self) -> f64 {
        self.diagnostics.energy_error(&self.e0)
    }

    /// What this read-out measured, without its state.
    pub fn measured(&self) -> Measured {
        Measured {
            time: self.snapshot.time,
            steps: self.steps,
            n: self.snapshot.particles.len(),
            diagnostics: self.diagnostics,
            potential_sum: self.potential_sum,
            e0: self.e0,
            e0_reset: self.e0_reset,
            de_max: self.de_max,
            phases: self.phases.clone(),
            interactions: self.interactions,
            hermite: self.hermite.clone(),
            block_levels: self.block_levels.clone(),
        }
    }
}

/// What a read-out measures, without the state: what a log line and a
/// report show (`Readout::measured`; `Run::measure` where the state stays
/// on the GPU). The fields are `Readout`'s.
#[derive(Clone, Debug)]
pub struct Measured {
    pub time: f64,
    pub steps: u64,
    /// Particles.
    pub n: usize,
    pub diagnostics: Diagnostics,
    pub potential_sum: PotentialSum,
    pub e0: Diagnostics,
    pub e0_reset: bool,
    pub de_max: f64,
    pub phases: Option<Phases>,
    pub interactions: Option<(f64, f64)>,
    pub hermite: Option<HermiteReadout>,
    pub block_levels: Option<Vec<u64>>,
}

impl Measured {
    /// |E − E₀| / |E₀|.
    pub fn energy_error(&self) -> f64 {
        self.diagnostics.energy_error(&self.e0)
    }
}

/// Writes a snapshot in the format its extension names (see
/// `write_state_as`).
#[cfg(not(target_arch = "wasm32"))]
pub fn write_state(
    path: &str,
    snap: &Snapshot,
    f64s: Option<&State64>,
) -> Result<crate::snapshot::Written> {
    write_state_as(path, crate::snapshot::Format::from_path(path)?, snap, f64s)
}

/// Writes a snapshot in `format`: in full f64 precision where the
/// integrator holds it so and the format can carry it (CSV), else in the
/// format's precision; ids and kinds kept (`snapshot::write_file_as`).
#[cfg(not(target_arch = "wasm32"))]
pub fn write_state_as(
    path: &str,
    format: crate::snapshot::Format,
    snap: &Snapshot,
    f64s: Option<&State64>,
) -> Result<crate::snapshot::Written> {
    use crate::snapshot::{self, Format};
    match (format, f64s) {
        (Format::Csv, Some(state)) => {
            let rows = snap.particles.len() as u64;
            snapshot::write_atomic_with(path, 100 * rows, |w| {
                snapshot::csv::write_f64_to(snap, state, w)
            })?;
            Ok(snapshot::Written::default())
        }
        _ => snapshot::write_file_as(path, format, snap),
    }
}

/// The tree's own statistics (benchmarks).
#[derive(Clone, Debug)]
pub struct TreeStats {
    pub counters: TreeCounters,
    pub interactions: Vec<InteractionCount>,
    pub gpu_bytes: u64,
    /// The walk the solver runs.
    pub walk: crate::tree::walk::WalkPath,
    /// Block steps: sub-steps on which the tree worked, and idle ones.
    pub block: Option<crate::gpu::layout::BlockCounters>,
}

enum Engine {
    Leapfrog(Box<LeapfrogEngine>),
    Hermite(Box<HermiteEngine>),
}

/// Passes timed per step: a tree step has about 20.
const TIMER_PASSES: u32 = 48;

/// Passes timed per step of a run with `p`: a block step (one largest
/// step) has up to 12 per sub-step, all of them timed up to 2^7 sub-steps
/// (WebGPU's query sets hold at most 4096 queries, two per pass).
fn timer_passes(p: &RunParams) -> u32 {
    if p.solver == SolverKind::Tree && p.timesteps == block::Timesteps::Block {
        (TIMER_PASSES + (12u32 << p.levels.min(block::MAX_LEVELS))).min(2048)
    } else {
        TIMER_PASSES
    }
}

/// Largest |coordinate| and |velocity component| a run accepts. The GPU
/// holds them in f32, squares them (distances, softening, the tree's
/// moments and box) and sums such squares over many particles: 1e15 keeps
/// every such sum far below f32's 3.4e38, where it would become infinite
/// and then NaN. N-body units put a system within a few units of the
/// origin; values near this bound mean a file in other units (cgs, say).
pub const MAX_MAGNITUDE: f32 = 1e15;

/// Refuses a state the GPU cannot integrate in f32 (see `MAX_MAGNITUDE`),
/// naming the first particle that is out of range.
pub fn check_range(particles: &Particles) -> Result<()> {
    let p = particles;
    // Checked on every core a chunk at a time; the first particle out of
    // range in index order is the one named, as in turn.
    const CHUNK: usize = 1 << 16;
    let big = |a: [f32; 3]| a.iter().any(|c| c.abs() > MAX_MAGNITUDE);
    let first_out = crate::state::parallel::map_indices(p.len().div_ceil(CHUNK), |c| {
        (c * CHUNK..((c + 1) * CHUNK).min(p.len()))
            .find(|&k| big(p.pos_mass[k].pos) || big(p.vel[k].vel))
    });
    let Some(k) = first_out.into_iter().flatten().next() else {
        return Ok(());
    };
    let (x, v) = (p.pos_mass[k].pos, p.vel[k].vel);
    let (what, a) = if big(x) {
        ("position", x)
    } else {
        ("velocity", v)
    };
    Err(Error::InvalidParameter(format!(
        "particle {} has {what} {a:?}, beyond the {MAX_MAGNITUDE:e} the GPU's f32 \
         arithmetic can square and sum; webgrav works in N-body units (G = 1, \
         systems of size ~1): is the file in other units?",
        p.id.get(k).copied().unwrap_or(k as u64)
    )))
}

/// The first particle of a read-out whose state is not finite.
fn first_non_finite(snap: &Snapshot, acc_pot: &[AccPot]) -> Option<Error> {
    let p = &snap.particles;
    (0..p.len()).find_map(|k| {
        let what = non_finite(&p.pos_mass[k], &p.vel[k], &acc_pot[k])?;
        Some(Error::NonFinite {
            particle: p.id[k],
            what,
            time: snap.time,
        })
    })
}

/// What of one particle's state is not finite, first of its position,
/// velocity and force.
fn non_finite(p: &PosMass, v: &Velocity, a: &AccPot) -> Option<&'static str> {
    let fin = |a: &[f32]| a.iter().all(|x| x.is_finite());
    if !fin(&p.pos) {
        Some("position")
    } else if !fin(&v.vel) {
        Some("velocity")
    } else if !fin(&a.acc) || !a.pot.is_finite() {
        Some("force")
    } else {
        None
    }
}

/// Steps between fits of a tree run's recorded levels (each fit waits for
/// the queued work once): a tree run fits them after its first step and
/// after every multiple of FIT_STEPS steps, counted from the start of the
/// run its checkpoint continues. The levels recorded decide the order of
/// particles within leaves, so they are a function of the step count (and
/// kept in checkpoints): a run's bits do not depend on how its steps were
/// batched, read out or checkpointed.
const FIT_STEPS: u64 = 1024;

/// Whether a tree run fits its levels once `steps` steps are done.
fn is_fit_point(steps: u64) -> bool {
    steps == 1 || (steps > 0 && steps.is_multiple_of(FIT_STEPS))
}

/// The first step count after `steps` at which a tree run fits its levels.
fn next_fit_point(steps: u64) -> u64 {
    if steps == 0 {
        1
    } else {
        (steps / FIT_STEPS + 1) * FIT_STEPS
    }
}

/// A simulation: particles, a solver and an integrator, on one GPU.
pub struct Run {
    engine: Engine,
    config: RunConfig,
    /// Identities of the particles in upload (input) order.
    ids: Vec<u64>,
    /// Time of the state after the queued steps.
    time: f64,
    steps: u64,
    /// Leapfrog time is counted from here, as `base_time` + steps ×
    /// dt in f64 with dt as given (not the f32 the GPU steps with): times
    /// stay the decimals asked for, without accumulated rounding.
    base_time: f64,
    steps_since_base: u64,
    progress: Arc<Progress>,
    timer: PhaseTimer,
    /// The timer holds a step's timestamps not yet read.
    timer_recorded: bool,
    /// Clocks the GPU time of each batch `queue` submits, while set
    /// (`clock_batches`; benchmarks).
    batch_clock: Option<BatchClock>,
    /// The step count at which the tree's levels were last fitted
    /// (`fit_tree_levels`), if they were.
    fitted_at: Option<u64>,
    /// What the run was asked to do beyond its physics, kept in its
    /// checkpoints (`set_request`).
    request: String,
    e0: Option<Diagnostics>,
    de_max: f64,
    energy: EnergyReport,
    /// The diagnostics' sums on the GPU (`energy_reference`), made at
    /// their first use.
    gpu_diagnostics: Option<GpuDiagnostics>,
    /// The state of the last read-out that was finite everywhere.
    last_good: Option<Arc<Snapshot>>,
    /// The start time of the run a checkpoint continues (its own start
    /// time for a new run): the origin of its output grid.
    origin: f64,
    /// This run's identity, kept through checkpoints (`run_id`).
    run_id: u64,
    /// Particle kinds in input order, which read-outs and checkpoints
    /// carry (`set_types`).
    types: Option<Vec<u8>>,
    /// A front end asked for the bodies' state after every block step
    /// (`sample_few_bodies`): every Hermite engine of the run keeps it.
    sample_bodies: bool,
}

/// A new run's identity: the clock and the process, hashed (not secret;
/// only different from other runs').
pub fn new_run_id() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let id = now_bits() ^ COUNT.fetch_add(1, Ordering::SeqCst).rotate_left(48);
    #[cfg(not(target_arch = "wasm32"))]
    let id = id ^ (std::process::id() as u64).rotate_left(32);
    // A finaliser (splitmix64's): nearby inputs give unrelated ids; 0
    // means "unknown" in checkpoints.
    crate::state::rng::mix(id).max(1)
}

#[cfg(not(target_arch = "wasm32"))]
fn now_bits() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(target_arch = "wasm32")]
fn now_bits() -> u64 {
    crate::gpu::timing::now_ms().to_bits()
}

impl Run {
    /// Starts a run of `particles` at time `time` (uploads them and
    /// computes the first forces).
    pub async fn new(
        ctx: &GpuContext,
        particles: &Particles,
        time: f64,
        config: RunConfig,
    ) -> Result<Self> {
        Self::from_particles(ctx, particles.clone(), time, config).await
    }

    /// `new` of particles the run keeps (as its last good state) rather
    /// than copies: a large run's host memory holds them once.
    pub async fn from_particles(
        ctx: &GpuContext,
        particles: Particles,
        time: f64,
        config: RunConfig,
    ) -> Result<Self> {
        if !time.is_finite() {
            return Err(Error::InvalidParameter(format!(
                "the start time must be finite, got {time}"
            )));
        }
        particles.validate().map_err(Error::InvalidParameter)?;
        check_range(&particles)?;
        let engine = ctx
            .allocating(
                particles.len() as u64,
                Self::engine(ctx, &particles, time, config),
            )
            .await?;
        let ids = particles.id.clone();
        let last_good = Snapshot {
            time,
            particles,
            softening: config.params().eps,
            ..Default::default()
        };
        Ok(Self::started(
            ctx,
            engine,
            config,
            ids,
            time,
            Some(Arc::new(last_good)),
        ))
    }

    /// `from_particles` of a model sampled on the GPU and left there
    /// (`state::generate::Sampled`, finite and within `MAX_MAGNITUDE` by
    /// its construction): no round trip through the host. A leapfrog
    /// solver's run (Hermite builds its state on the host); it has no
    /// last good state until its first read-out.
    pub async fn from_sampled(
        ctx: &GpuContext,
        sampled: Sampled,
        time: f64,
        config: RunConfig,
    ) -> Result<Self> {
        let first = sampled.first;
        Self::from_gpu_state(ctx, sampled.into_state(ctx), first, time, config).await
    }

    /// `from_sampled` of a sample already made a run's state
    /// (`Sampled::into_state`; its particles are those of the model from
    /// index `first` on): the page draws that state before its run's
    /// kernels are built (`app::start::Made`).
    pub async fn from_gpu_state(
        ctx: &GpuContext,
        state: GpuParticles,
        first: usize,
        time: f64,
        config: RunConfig,
    ) -> Result<Self> {
        let p = *config.params();
        if !p.solver.starts_on_gpu() || !time.is_finite() {
            return Err(Error::InvalidParameter(format!(
                "a run from a model on the GPU takes a leapfrog solver and a finite start \
                 time, got {} at t = {time}",
                p.solver.name()
            )));
        }
        let ids = map_indices(state.n as usize, |k| (first + k) as u64);
        let engine = ctx
            .allocating(ids.len() as u64, async {
                LeapfrogEngine::starting_from(ctx, state, p).map(|l| Engine::Leapfrog(Box::new(l)))
            })
            .await?;
        Ok(Self::started(ctx, engine, config, ids, time, None))
    }

    /// A run of `engine` at `time`, no step taken.
    fn started(
        ctx: &GpuContext,
        engine: Engine,
        config: RunConfig,
        ids: Vec<u64>,
        time: f64,
        last_good: Option<Arc<Snapshot>>,
    ) -> Self {
        let progress = Arc::new(Progress::default());
        progress.set_done(0, time);
        Self {
            engine,
            config,
            ids,
            time,
            steps: 0,
            base_time: time,
            steps_since_base: 0,
            progress,
            timer: PhaseTimer::new(ctx, timer_passes(config.params())),
            timer_recorded: false,
            sample_bodies: false,
            batch_clock: None,
            fitted_at: None,
            request: String::new(),
            e0: None,
            de_max: 0.0,
            energy: EnergyReport::default(),
            gpu_diagnostics: None,
            last_good,
            origin: time,
            run_id: new_run_id(),
            types: None,
        }
    }

    /// Gives the particles kinds (in input order, Gadget-2's numbering),
    /// which read-outs then carry and checkpoints keep.
    pub fn set_types(&mut self, types: Option<Vec<u8>>) -> Result<()> {
        if let Some(t) = &types {
            if t.len() != self.ids.len() {
                return Err(Error::InvalidParameter(format!(
                    "{} particle kinds for {} particles",
                    t.len(),
                    self.ids.len()
                )));
            }
        }
        self.types = types;
        Ok(())
    }

    /// The particles' kinds, if the run has them.
    pub fn types(&self) -> Option<&[u8]> {
        self.types.as_deref()
    }

    /// Where the run's output grid starts: its start time, or that of the
    /// run its checkpoint continues.
    pub fn origin(&self) -> f64 {
        self.origin
    }

    /// This run's identity: that of the run its checkpoint continues (a
    /// new one where a version 4 checkpoint did not know it).
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    /// The state of the last finite read-out (at first, the initial
    /// state): what is left to save when a run stops on a non-finite value.
    pub fn last_good(&self) -> Option<&Snapshot> {
        self.last_good.as_deref()
    }

    async fn engine(
        ctx: &GpuContext,
        particles: &Particles,
        time: f64,
        config: RunConfig,
    ) -> Result<Engine> {
        let p = *config.params();
        Ok(if p.solver.is_hermite() {
            Engine::Hermite(Box::new(HermiteEngine::new(ctx, particles, time, p).await?))
        } else {
            Engine::Leapfrog(Box::new(LeapfrogEngine::new(ctx, particles, p)?))
        })
    }

    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// The particles' ids, in input order.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    pub fn n(&self) -> u32 {
        self.display().n
    }

    /// Simulated time after the queued steps.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Leapfrog steps queued (Hermite: block steps taken).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// What the GPU has finished (shared; readable while the run is busy).
    pub fn progress(&self) -> Arc<Progress> {
        self.progress.clone()
    }

    /// The buffers the renderer draws (positions, velocities, potentials,
    /// upload indices); the same buffers for the whole run.
    pub fn display(&self) -> &GpuParticles {
        match &self.engine {
            Engine::Leapfrog(l) => &l.state,
            Engine::Hermite(h) => &h.display,
        }
    }

    /// Queues `steps` steps without waiting for the GPU. A leapfrog submits
    /// them now (the first one timed per phase if no timed step is
    /// waiting to be read); a Hermite run moves its target by `steps × dt`,
    /// which `advance` reaches.
    pub fn queue(&mut self, ctx: &GpuContext, steps: u32) {
        if steps == 0 {
            return;
        }
        match &mut self.engine {
            Engine::Leapfrog(l) => {
                let timed = !self.timer_recorded && self.timer.enabled();
                if timed {
                    self.timer.reset();
                    self.timer_recorded = true;
                }
                l.submit_steps(
                    ctx,
                    steps,
                    timed.then_some(&mut self.timer),
                    self.batch_clock.as_mut(),
                );
                self.steps += steps as u64;
                self.steps_since_base += steps as u64;
                self.time = self.base_time + self.steps_since_base as f64 * self.config.params().dt;
                self.progress
                    .queued
                    .fetch_add(steps as u64, Ordering::SeqCst);
                let (progress, time) = (self.progress.clone(), self.time);
                // Completions arrive in submission order.
                ctx.queue.on_submitted_work_done(move || {
                    progress.done.fetch_add(steps as u64, Ordering::SeqCst);
                    progress.time_bits.store(time.to_bits(), Ordering::SeqCst);
                });
            }
            Engine::Hermite(h) => h.queue(steps),
        }
    }

    /// Queues up to `steps` steps as the page's frames do, without ever
    /// waiting for the GPU; returns how many it queued. A tree run stops
    /// at its next fit point (`FIT_STEPS`) and queues nothing there until
    /// `advance` has fitted its levels, so the page's run takes the
    /// CLI's steps bit for bit (`run_to` fits at the same step counts).
    pub fn queue_frame(&mut self, ctx: &GpuContext, steps: u32) -> u32 {
        let k = match self.tree_solver() {
            Some(_) if self.fit_due() => 0,
            Some(_) => (steps as u64).min(next_fit_point(self.steps) - self.steps) as u32,
            None => steps,
        };
        self.queue(ctx, k);
        k
    }

    /// Whether queued work waits for `advance`: a Hermite run's block
    /// steps (they need read-backs), or a tree run's fit of its levels.
    pub fn needs_advance(&self) -> bool {
        matches!(&self.engine, Engine::Hermite(h) if h.behind()) || self.fit_due()
    }

    /// Does the queued work that needs read-backs: Hermite block steps up
    /// to the target, then the display copy; a tree run's fit of its
    /// levels where one is due (`queue_frame`).
    pub async fn advance(&mut self, ctx: &GpuContext) -> Result<()> {
        if let Engine::Hermite(h) = &mut self.engine {
            h.advance(ctx).await?;
            self.hermite_progress();
        }
        if self.fit_due() {
            self.fit_tree_levels(ctx).await?;
        }
        Ok(())
    }

    /// The tree of a tree run with shared steps, as its last walk left it
    /// (what `tree::overlay` draws and `tree::trace` traces); `None` for
    /// other runs (block steps walk only their active groups).
    pub fn tree(&self) -> Option<&crate::tree::TreeSolver> {
        match &self.engine {
            Engine::Leapfrog(l) if self.config.params().timesteps == block::Timesteps::Shared => {
                match &l.solver {
                    ForceSolver::Tree(t) => Some(t),
                    ForceSolver::Direct(_) => None,
                }
            }
            _ => None,
        }
    }

    /// The bodies' f64 state at the run's time, for a Hermite run of at
    /// most `MAX_TRACKED_BODIES` bodies (its state lives on the host, so
    /// this costs no read-back); `None` for any other run.
    pub fn few_body_sample(&self) -> Option<Sample> {
        match &self.engine {
            Engine::Hermite(h) if h.sim.n() <= MAX_TRACKED_BODIES => Some(h.sim.sample(h.offset)),
            _ => None,
        }
    }

    /// Keeps the bodies' state after every block step from now on, for a
    /// Hermite run of at most `MAX_TRACKED_BODIES` bodies, through
    /// reconfigurations too (`false` while the run is another, which keeps
    /// nothing); `take_few_body_samples` hands them over.
    pub fn sample_few_bodies(&mut self) -> bool {
        self.sample_bodies = true;
        self.apply_sampling()
    }

    /// Passes the sampling request on to the engine (a reconfiguration
    /// may have made a new one); whether it samples.
    fn apply_sampling(&mut self) -> bool {
        match &mut self.engine {
            Engine::Hermite(h) if h.sim.n() <= MAX_TRACKED_BODIES => {
                h.sampling = self.sample_bodies;
                h.sampling
            }
            _ => false,
        }
    }

    /// The bodies' states after each block step since the last call
    /// (`sample_few_bodies`; empty otherwise): the orbit measures'
    /// samples, independent of how many steps a frame takes.
    pub fn take_few_body_samples(&mut self) -> Vec<Sample> {
        match &mut self.engine {
            Engine::Hermite(h) => h.take_samples(),
            Engine::Leapfrog(_) => Vec::new(),
        }
    }

    fn hermite_progress(&mut self) {
        if let Engine::Hermite(h) = &self.engine {
            self.time = h.time();
            self.steps = h.sim.stats.block_steps;
            self.progress.queued.store(self.steps, Ordering::SeqCst);
            self.progress.set_done(self.steps, self.time);
        }
    }

    /// Integrates to `t_end` and waits for the GPU: leapfrog steps of dt
    /// (as many as fit, rounded), or Hermite block steps until every
    /// particle's next step would pass `t_end`. `on_steps` hears of every
    /// batch (steps so far, of how many; Hermite: block steps, 0) and
    /// stops the run early by returning false. Whether `t_end` was reached.
    pub async fn run_to(
        &mut self,
        ctx: &GpuContext,
        t_end: f64,
        mut on_steps: impl FnMut(u64, u64) -> bool,
    ) -> Result<bool> {
        if !t_end.is_finite() {
            return Err(Error::InvalidParameter(format!(
                "the end time must be finite, got {t_end}"
            )));
        }
        match &mut self.engine {
            Engine::Leapfrog(_) => {
                let dt = self.config.params().dt;
                let steps = ((t_end - self.time).max(0.0) / dt).round() as u64;
                // Batches that are waited for keep the queue short and
                // the progress report true. Two are kept queued: the GPU
                // runs the next while the host hears of one and records
                // the one after, so recording costs no GPU time. Only the
                // first finds the GPU idle (at 240k particles with block
                // steps, 16 steps take 11-74 ms to record), so batches
                // grow from one step, doubling to BATCH. A tree run's
                // batches end at its fit points (`FIT_STEPS`), where its
                // levels are fitted before the next step is queued.
                const BATCH: u64 = 16;
                let mut queued = 0;
                let mut batches = 0u32;
                let mut in_flight = std::collections::VecDeque::new();
                loop {
                    while queued < steps && in_flight.len() < 2 {
                        if self.fit_due() {
                            if !in_flight.is_empty() {
                                break;
                            }
                            self.fit_tree_levels(ctx).await?;
                        }
                        let to_fit = match self.tree_solver() {
                            Some(_) => next_fit_point(self.steps) - self.steps,
                            None => u64::MAX,
                        };
                        let k = BATCH
                            .min(steps - queued)
                            .min(1 << batches.min(4))
                            .min(to_fit);
                        batches += 1;
                        self.queue(ctx, k as u32);
                        queued += k;
                        in_flight.push_back((queued, ctx.mark()));
                    }
                    let Some((done, mark)) = in_flight.pop_front() else {
                        break;
                    };
                    ctx.wait_for(mark).await?;
                    if !on_steps(done, steps) && done < steps {
                        // The batch queued ahead still runs: the run's
                        // time and steps count it. The run stops where a
                        // resume can take over exactly (`restart_point`).
                        let k = self.steps_to_restart_point().min(steps - queued);
                        self.queue(ctx, k as u32);
                        ctx.finish().await?;
                        return Ok(queued + k == steps);
                    }
                }
                Ok(true)
            }
            Engine::Hermite(h) => {
                let mut block = 0;
                let reached = h
                    .advance_to(ctx, t_end, || {
                        block += 1;
                        on_steps(block, 0)
                    })
                    .await?;
                self.hermite_progress();
                Ok(reached)
            }
        }
    }

    /// Everything the run needs to continue exactly (see `checkpoint`):
    /// waits for the queued steps and reads the state back.
    pub async fn checkpoint(&mut self, ctx: &GpuContext) -> Result<Vec<u8>> {
        Ok(self.checkpoint_state(ctx).await?.encode())
    }

    /// `checkpoint` before it is encoded (`write_checkpoint` streams it
    /// into a file instead).
    pub async fn checkpoint_state(&mut self, ctx: &GpuContext) -> Result<checkpoint::Checkpoint> {
        self.before_checkpoint(ctx).await?;
        let engine = match &self.engine {
            Engine::Leapfrog(l) => checkpoint::EngineState::Leapfrog(l.read(ctx).await?),
            Engine::Hermite(h) => checkpoint::EngineState::Hermite(checkpoint::HermiteState {
                offset: h.offset,
                target: h.target,
                time: h.sim.time,
                stats: h.sim.stats.clone(),
                bodies: h.sim.bodies.clone(),
            }),
        };
        let p = self.preamble();
        Ok(checkpoint::Checkpoint {
            params: *p.params,
            time: p.time,
            steps: p.steps,
            base_time: p.base_time,
            base_steps: p.base_steps,
            origin: p.origin,
            run_id: p.run_id,
            ids: self.ids.clone(),
            types: self.types.clone(),
            e0: p.e0,
            de_max: p.de_max,
            tree_deepest: p.tree_deepest,
            request: p.request.to_string(),
            engine,
        })
    }

    /// Writes the bytes of `checkpoint` into `w` (`snapshot::AtomicFile`,
    /// say) as they come: a leapfrog run's particle arrays go from the GPU
    /// to `w` a piece at a time, so the host holds a piece of the state,
    /// not the state (52 bytes per particle) and a copy of the ids. A
    /// write that fails is `Error::Io` naming `name`.
    pub async fn write_checkpoint(
        &mut self,
        ctx: &GpuContext,
        w: &mut dyn std::io::Write,
        name: &str,
    ) -> Result<()> {
        let failed = |source| Error::Io {
            path: name.to_string(),
            source,
        };
        if !matches!(self.engine, Engine::Leapfrog(_)) {
            let c = self.checkpoint_state(ctx).await?;
            return c.write_to(w).map_err(failed);
        }
        self.before_checkpoint(ctx).await?;
        let Engine::Leapfrog(l) = &self.engine else {
            unreachable!()
        };
        let mut out = checkpoint::StateWriter::start(w, &self.preamble());
        for array in StateArray::ALL {
            out.array(l.state.n as usize);
            l.state
                .for_each_array_piece(ctx, array, |bytes| {
                    out.bytes(bytes);
                    !out.failed()
                })
                .await?;
        }
        out.finish().map_err(failed)
    }

    /// A run about to be checkpointed. A tree run's levels are fitted if
    /// its step count is a fit point (the checkpoint keeps them as the run
    /// goes on with them). A resumed run has no tree to refit, so it builds
    /// its tree at its first step: where this run's next step would refit
    /// (a checkpoint off the `--rebuild` grid of shared steps), it builds
    /// too, so that both continue bit-identically. On the grid (every
    /// `--rebuild 1` run, every block-step run, and shared steps after a
    /// multiple of K steps) the next step builds anyway, and the run is
    /// bit-identical to one that wrote no checkpoint.
    async fn before_checkpoint(&mut self, ctx: &GpuContext) -> Result<()> {
        if self.fit_due() {
            self.fit_tree_levels(ctx).await?;
        }
        if let Some(t) = self.tree_solver() {
            t.rebuild_next();
        }
        Ok(())
    }

    /// The tree solver of a tree run (shared or block steps).
    fn tree_solver(&self) -> Option<&crate::tree::TreeSolver> {
        match &self.engine {
            Engine::Leapfrog(l) => match &l.solver {
                ForceSolver::Tree(t) => Some(t),
                ForceSolver::Direct(_) => None,
            },
            Engine::Hermite(_) => None,
        }
    }

    /// Steps from here to where a checkpoint changes nothing: a tree run
    /// with shared steps and `--rebuild K` builds its tree at every
    /// multiple of K steps, as a resumed run (which has no tree to refit)
    /// does at its first step; between two builds, a checkpoint would make
    /// its resume build where this run refits. 0 for every other run.
    pub fn steps_to_restart_point(&self) -> u64 {
        let p = self.config.params();
        match (self.tree_solver(), p.timesteps) {
            (Some(_), block::Timesteps::Shared) => {
                let k = p.rebuild.max(1) as u64;
                (k - self.steps % k) % k
            }
            _ => 0,
        }
    }

    /// Whether this is a tree run at a fit point whose levels have not
    /// been fitted there yet.
    fn fit_due(&self) -> bool {
        self.tree_solver().is_some()
            && is_fit_point(self.steps)
            && self.fitted_at != Some(self.steps)
    }

    /// The size of the run's checkpoint, near enough for a progress bar.
    pub fn checkpoint_len(&self) -> u64 {
        checkpoint::approximate_len(self.ids.len(), matches!(self.engine, Engine::Hermite(_)))
    }

    /// What a checkpoint holds before the integrator's state.
    fn preamble(&self) -> checkpoint::Preamble<'_> {
        checkpoint::Preamble {
            params: self.config.params(),
            time: self.time,
            steps: self.steps,
            base_time: self.base_time,
            base_steps: self.steps_since_base,
            origin: self.origin,
            run_id: self.run_id,
            ids: &self.ids,
            types: self.types.as_deref(),
            e0: self.e0,
            de_max: self.de_max,
            tree_deepest: self
                .tree_solver()
                .map_or(crate::tree::layout::MAX_DEPTH, |t| t.deepest_level()),
            request: &self.request,
        }
    }

    /// Which potential the energy reports sum from now on: the precise
    /// sum where it is cheap (the default), the solver's own
    /// (`PotentialSum::Solver`, for read-outs whose energies nobody reads:
    /// `webgrav forces`), or the precise one always.
    pub fn set_potential_rule(&mut self, rule: PotentialRule) {
        if self.energy.rule != rule {
            self.energy.rule = rule;
            self.energy.last = None;
        }
    }

    /// Keeps `request` (what the run was asked to do beyond its physics,
    /// in the front end's words; at most `checkpoint::MAX_REQUEST` bytes)
    /// in the run's checkpoints.
    pub fn set_request(&mut self, request: String) -> Result<()> {
        if request.len() > checkpoint::MAX_REQUEST {
            return Err(Error::InvalidParameter(format!(
                "the run's request is {} bytes, more than a checkpoint keeps ({})",
                request.len(),
                checkpoint::MAX_REQUEST
            )));
        }
        self.request = request;
        Ok(())
    }

    /// The request of the checkpoint the run continues (`set_request`);
    /// empty if none.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// The run a checkpoint holds, continuing where it stopped;
    /// `name` appears in error messages.
    pub async fn resume(ctx: &GpuContext, bytes: &[u8], name: &str) -> Result<Self> {
        Self::from_checkpoint(ctx, checkpoint::Checkpoint::decode(bytes, name)?, name).await
    }

    /// The run a decoded checkpoint holds (`resume`); `name` appears in
    /// error messages.
    pub async fn from_checkpoint(
        ctx: &GpuContext,
        c: checkpoint::Checkpoint,
        name: &str,
    ) -> Result<Self> {
        let config = c.params.validate()?;
        let (saved, params, ids) = (c.engine, c.params, &c.ids);
        let tree_deepest = c.tree_deepest;
        let restore = async move {
            Ok(match saved {
                checkpoint::EngineState::Leapfrog(state) => {
                    if params.solver.is_hermite() {
                        return Err(Error::InvalidParameter(format!(
                            "{name}: a leapfrog state for a Hermite solver"
                        )));
                    }
                    let engine = LeapfrogEngine::restore(ctx, &state, params)?;
                    if let ForceSolver::Tree(t) = &engine.solver {
                        t.set_deepest_level(&ctx.queue, tree_deepest);
                    }
                    Engine::Leapfrog(Box::new(engine))
                }
                checkpoint::EngineState::Hermite(h) => {
                    if !params.solver.is_hermite() {
                        return Err(Error::InvalidParameter(format!(
                            "{name}: a Hermite state for a leapfrog solver"
                        )));
                    }
                    let sim = crate::hermite::HermiteSimulation::restore(
                        ctx,
                        h.bodies,
                        ids.clone(),
                        hermite::hermite_config(&params),
                        h.time,
                        h.stats,
                    )?;
                    Engine::Hermite(Box::new(HermiteEngine::restore(
                        ctx, sim, h.offset, h.target, params,
                    )?))
                }
            })
        };
        let engine = ctx.allocating(c.ids.len() as u64, restore).await?;
        let mut run = Self::started(ctx, engine, config, c.ids, c.time, None);
        run.progress.queued.store(c.steps, Ordering::SeqCst);
        run.progress.set_done(c.steps, c.time);
        run.steps = c.steps;
        run.base_time = c.base_time;
        run.steps_since_base = c.base_steps;
        // The checkpoint was written after any fit its step count is due
        // (`before_checkpoint`).
        run.fitted_at = Some(c.steps);
        run.request = c.request;
        run.e0 = c.e0;
        run.de_max = c.de_max;
        run.origin = c.origin;
        // A version 4 checkpoint did not know it: from here on, one.
        if c.run_id != 0 {
            run.run_id = c.run_id;
        }
        run.types = c.types;
        Ok(run)
    }

    /// One leapfrog step recorded with per-phase timestamps, submitted and
    /// waited for: (wall ms, GPU ms per phase). For benchmarks.
    pub async fn timed_step(&mut self, ctx: &GpuContext) -> Result<(f64, Phases)> {
        let Engine::Leapfrog(l) = &self.engine else {
            return Err(Error::InvalidParameter(
                "timed steps are leapfrog steps; time Hermite forces with bench hermite4|6".into(),
            ));
        };
        // The run's own timer: a read-out then has no stale step to show.
        self.timer_recorded = false;
        let r = crate::gpu::timing::timed_run(ctx, &mut self.timer, |encoder, timer| {
            l.encode_step(&ctx.device, encoder, Some(timer));
            Ok(())
        })
        .await?;
        self.steps += 1;
        self.steps_since_base += 1;
        self.time = self.base_time + self.steps_since_base as f64 * self.config.params().dt;
        self.progress.set_done(self.steps, self.time);
        Ok(r)
    }

    /// Clocks the GPU time of the next `batches` batches of leapfrog steps
    /// that `queue` (or `run_to`) submits, as the GPU runs them one after
    /// the other (`batch_gpu_ms` reads them). Without timestamps nothing
    /// is clocked.
    pub fn clock_batches(&mut self, ctx: &GpuContext, batches: u32) {
        self.batch_clock = BatchClock::new(ctx, batches);
    }

    /// GPU milliseconds of each batch clocked since `clock_batches`, which
    /// ends; `None` without timestamps. Waits for the queued work.
    pub async fn batch_gpu_ms(&mut self, ctx: &GpuContext) -> Result<Option<Vec<f64>>> {
        match self.batch_clock.take() {
            Some(clock) => Ok(Some(clock.read(ctx).await?)),
            None => Ok(None),
        }
    }

    /// GPU milliseconds from the last timed step's first pass to its last
    /// (`timed_step`; None without timestamps): its phases and the gaps
    /// between them.
    pub fn last_step_span_ms(&self) -> Option<f64> {
        self.timer.span_ms()
    }

    /// Tree runs: records only the levels the last build needed, and
    /// `tree::LEVEL_MARGIN` more, from now on (`TreeSolver::fit_levels`;
    /// forces stay exact if the tree later needs more). Waits for the
    /// queued work (one read-back). `run_to` does it after the run's first
    /// step and every FIT_STEPS steps after.
    pub async fn fit_tree_levels(&mut self, ctx: &GpuContext) -> Result<()> {
        self.fitted_at = Some(self.steps);
        if let Engine::Leapfrog(l) = &self.engine {
            if let ForceSolver::Tree(t) = &l.solver {
                let depth = t.counters(ctx).await?.depth;
                t.fit_levels(&ctx.queue, depth);
            }
        }
        Ok(())
    }

    /// The tree's counters, interaction counts and memory (tree runs).
    pub async fn tree_stats(&self, ctx: &GpuContext) -> Result<Option<TreeStats>> {
        match &self.engine {
            Engine::Leapfrog(l) => match &l.solver {
                ForceSolver::Tree(t) => Ok(Some(TreeStats {
                    counters: t.counters(ctx).await?,
                    interactions: t.interaction_counts(ctx).await?,
                    gpu_bytes: t.gpu_bytes(),
                    walk: t.walk_path(),
                    block: l.block_counters(ctx).await?,
                })),
                ForceSolver::Direct(_) => Ok(None),
            },
            Engine::Hermite(_) => Ok(None),
        }
    }

    /// One consistent state, in input order, with diagnostics, phase
    /// times, tree interactions and Hermite statistics (see [`Readout`]).
    /// Waits for the queued steps. A state that is not finite everywhere is
    /// an error naming the particle and the time (`last_good` keeps the
    /// last finite one).
    pub async fn readout(&mut self, ctx: &GpuContext) -> Result<Readout> {
        let eps = self.config.params().eps as f64;
        let mut block_levels: Option<Vec<u64>> = None;
        let (snapshot, acc_pot, energy_of, interactions, hermite, state_f64) = match &mut self
            .engine
        {
            Engine::Leapfrog(l) => {
                let n = self.ids.len();
                // First the state checked on the GPU (its upload indices
                // a permutation, every value finite): a finite state may
                // then take the arrays of the last good one (where no
                // read-out still shares them), and the host never holds
                // two whole states.
                let checked = match l.input_order(&ctx.device).check(ctx, &l.state).await? {
                    Ok(checked) => checked,
                    Err(bad) => return Err(self.not_finite(&bad)),
                };
                let last = self.last_good.take().and_then(|s| Arc::try_unwrap(s).ok());
                let mut p = match last {
                    Some(s) if s.particles.len() == n => s.particles,
                    _ => Particles {
                        pos_mass: bytemuck::zeroed_vec(n),
                        vel: bytemuck::zeroed_vec(n),
                        id: self.ids.clone(),
                    },
                };
                let mut acc_pot: Vec<AccPot> = bytemuck::zeroed_vec(n);
                let mut pot: Vec<f32> = bytemuck::zeroed_vec(n);
                // The pieces come in input order (the GPU gathered them):
                // copied into place on every core, the diagnostics summed
                // over them in fixed chunks and the chunks' sums added in
                // order (the same bits on any number of cores).
                let precise_max = self.energy.precise_max(&l.solver);
                let mut sum = (n > precise_max).then(DiagnosticsSum::default);
                checked
                    .read(ctx, |first, piece| {
                        let range = first..first + piece.pos_mass.len();
                        map_into(&mut p.pos_mass[range.clone()], piece.pos_mass, |x| *x);
                        map_into(&mut acc_pot[range.clone()], piece.acc_pot, |a| *a);
                        map_into(&mut pot[range.clone()], piece.acc_pot, |a| a.pot);
                        // The velocity alone: the tree's remembered |a| is
                        // its own, not the particle's.
                        map_into(&mut p.vel[range], piece.vel, |v| Velocity::new(v.vel));
                        if let Some(counts) = l.block_levels(piece.vel) {
                            let total = block_levels.get_or_insert_with(|| vec![0; counts.len()]);
                            for (t, c) in total.iter_mut().zip(counts) {
                                *t += c;
                            }
                        }
                        if let Some(s) = sum.as_mut() {
                            s.add_records(piece.pos_mass, piece.vel, piece.acc_pot);
                        }
                    })
                    .await?;
                let energy_of = match sum {
                    Some(s) => EnergyOf::Solver(s.finish()),
                    None => EnergyOf::State(
                        p.pos_mass
                            .iter()
                            .zip(&p.vel)
                            .map(|(x, v)| {
                                (x.mass as f64, x.pos.map(f64::from), v.vel.map(f64::from))
                            })
                            .collect(),
                    ),
                };
                let interactions = match &l.solver {
                    ForceSolver::Tree(t) => Some(t.mean_interactions(ctx).await?),
                    ForceSolver::Direct(_) => None,
                };
                let snap = Snapshot {
                    time: self.time,
                    particles: p,
                    softening: self.config.params().eps,
                    potential: Some(pot),
                    types: self.types.clone(),
                };
                (snap, acc_pot, energy_of, interactions, None, None)
            }
            Engine::Hermite(h) => {
                let (particles, pot) = h.sim.particles();
                let acc_pot = hermite::acc_pot_of(&h.sim);
                let snap = Snapshot {
                    time: h.time(),
                    particles,
                    softening: self.config.params().eps,
                    potential: Some(pot),
                    types: self.types.clone(),
                };
                let status = HermiteReadout {
                    stats: h.sim.stats.clone(),
                    levels: h.sim.levels(),
                    dt_max: h.sim.config().dt_max,
                };
                // (The leapfrog state was checked as it was read back.)
                if let Some(e) = first_non_finite(&snap, &acc_pot) {
                    return Err(e);
                }
                let state = h.sim.state_f64();
                let energy_of = if self.energy.rule != PotentialRule::Solver {
                    EnergyOf::State(state.clone())
                } else {
                    // The integrator's own double-single potentials.
                    let pot = snap.potential.as_deref().unwrap_or_default();
                    EnergyOf::Solver(Diagnostics::sum(
                        state
                            .iter()
                            .zip(pot)
                            .map(|(&(m, x, v), &p)| (m, x, v, p as f64)),
                    ))
                };
                (snap, acc_pot, energy_of, None, Some(status), Some(state))
            }
        };
        let key = (self.steps, snapshot.time.to_bits());
        let (diagnostics, potential_sum) = self.energy.of(ctx, key, energy_of, eps).await?;
        let snapshot = Arc::new(snapshot);
        self.last_good = Some(Arc::clone(&snapshot));
        let phases = self.recorded_phases(ctx).await?;
        let (e0, e0_reset) = self.account(diagnostics);
        Ok(Readout {
            snapshot,
            acc_pot,
            diagnostics,
            potential_sum,
            e0,
            e0_reset,
            de_max: self.de_max,
            steps: self.steps,
            phases,
            interactions,
            hermite,
            block_levels,
            state_f64,
        })
    }

    /// Sets the energy reference of |ΔE/E₀|, as the first read-out does,
    /// from sums on the GPU (`GpuDiagnostics`) where `measure` can: the
    /// state stays on the GPU (at 2^27 particles a read-out carries 7 GB
    /// to the host). `Ok(None)` where the energy needs the state on the
    /// host (`readout` then sets the reference). A reference already set
    /// (a resumed run's) is kept. The state is checked as a read-out
    /// checks it.
    pub async fn energy_reference(&mut self, ctx: &GpuContext) -> Result<Option<Diagnostics>> {
        let Some((diagnostics, _)) = self.energy_on_gpu(ctx).await? else {
            return Ok(None);
        };
        Ok(Some(self.account(diagnostics).0))
    }

    /// What a read-out would measure, but the state, which stays on the
    /// GPU: the diagnostics summed there (`GpuDiagnostics`), where the
    /// energy is the solver's own (a leapfrog run above the precise sum's
    /// bound, or `PotentialRule::Solver`) and no block steps' levels are
    /// counted (they come from the velocities); `Ok(None)` elsewhere, where
    /// only `readout` measures. Reads back the interaction counts (tree)
    /// and the phases' times, as a read-out does, and takes its place in
    /// the energy account; the last good state stays the last read-out's.
    pub async fn measure(&mut self, ctx: &GpuContext) -> Result<Option<Measured>> {
        let Some((diagnostics, potential_sum)) = self.energy_on_gpu(ctx).await? else {
            return Ok(None);
        };
        let interactions = match &self.engine {
            Engine::Leapfrog(l) => match &l.solver {
                ForceSolver::Tree(t) => Some(t.mean_interactions(ctx).await?),
                ForceSolver::Direct(_) => None,
            },
            Engine::Hermite(_) => None,
        };
        let phases = self.recorded_phases(ctx).await?;
        let (e0, e0_reset) = self.account(diagnostics);
        Ok(Some(Measured {
            time: self.time,
            steps: self.steps,
            n: self.ids.len(),
            diagnostics,
            potential_sum,
            e0,
            e0_reset,
            de_max: self.de_max,
            phases,
            interactions,
            hermite: None,
            block_levels: None,
        }))
    }

    /// Whether `measure` measures this run on the GPU: a leapfrog run
    /// above the precise potential sum's bound, whose steps count no
    /// block levels.
    pub fn measures_on_gpu(&self) -> bool {
        match &self.engine {
            Engine::Leapfrog(l) => {
                self.ids.len() > self.energy.precise_max(&l.solver) && !l.has_block_steps()
            }
            Engine::Hermite(_) => false,
        }
    }

    /// The state checked and its diagnostics summed on the GPU, where the
    /// energy is the solver's and no block levels are counted (`measure`).
    async fn energy_on_gpu(
        &mut self,
        ctx: &GpuContext,
    ) -> Result<Option<(Diagnostics, PotentialSum)>> {
        let eps = self.config.params().eps as f64;
        if !self.measures_on_gpu() {
            return Ok(None);
        }
        let Engine::Leapfrog(l) = &mut self.engine else {
            return Ok(None);
        };
        if let Err(bad) = l.input_order(&ctx.device).check(ctx, &l.state).await? {
            return Err(self.not_finite(&bad));
        }
        let sums = self
            .gpu_diagnostics
            .get_or_insert_with(|| GpuDiagnostics::new(&ctx.device))
            .sum(ctx, &l.state)
            .await?;
        let key = (self.steps, self.time.to_bits());
        let energy_of = EnergyOf::Solver(sums.finish());
        Ok(Some(self.energy.of(ctx, key, energy_of, eps).await?))
    }

    /// The phases' GPU times of the step timed since the last read-out.
    async fn recorded_phases(&mut self, ctx: &GpuContext) -> Result<Option<Phases>> {
        if !self.timer_recorded {
            return Ok(None);
        }
        self.timer_recorded = false;
        Ok(Some(self.timer.read(ctx).await?).filter(|p| !p.is_empty()))
    }

    /// Takes `diagnostics` into the energy account: the reference (set by
    /// the first since the start or a reconfiguration, which this says)
    /// and the largest |ΔE/E₀| since.
    fn account(&mut self, diagnostics: Diagnostics) -> (Diagnostics, bool) {
        let e0_reset = self.e0.is_none();
        let e0 = *self.e0.get_or_insert(diagnostics);
        if e0_reset {
            self.de_max = 0.0;
        }
        self.de_max = self.de_max.max(diagnostics.energy_error(&e0));
        (e0, e0_reset)
    }

    /// The error of a state the GPU found not finite.
    fn not_finite(&self, bad: &NotFinite) -> Error {
        Error::NonFinite {
            particle: self.ids[bad.index as usize],
            what: non_finite(&bad.pos_mass, &bad.vel, &bad.acc_pot).unwrap_or("state"),
            time: self.time,
        }
    }

    /// Switches to `config`, carrying on from the current state: in place
    /// where only ε, Δt, θ (leapfrog) or η and the precision (Hermite)
    /// change, else a new integrator from the state read back. The energy
    /// reference restarts (E depends on the softening and the solver). On
    /// error the run is unchanged.
    pub async fn reconfigure(&mut self, ctx: &GpuContext, config: RunConfig) -> Result<()> {
        let p = *config.params();
        let in_place = match &mut self.engine {
            Engine::Leapfrog(l) => l.retune(ctx, p),
            Engine::Hermite(h) => h.retune(p),
        };
        if !in_place {
            let r = self.readout(ctx).await?;
            let engine = Self::engine(ctx, &r.snapshot.particles, r.snapshot.time, config).await?;
            self.engine = engine;
            self.apply_sampling();
            self.time = r.snapshot.time;
            self.progress.set_done(self.steps, self.time);
        }
        if timer_passes(&p) != timer_passes(self.config.params()) {
            self.timer = PhaseTimer::new(ctx, timer_passes(&p));
            self.timer_recorded = false;
        }
        self.config = config;
        self.e0 = None;
        self.energy.last = None;
        // A new dt counts from here.
        self.base_time = self.time;
        self.steps_since_base = 0;
        Ok(())
    }
}

/// Most particles of a direct leapfrog run whose reported energy is summed
/// the precise way (`state::energy`): there a double-single N² sum costs a
/// few of the run's own N² steps (`energy::DS_COST`); above, the solver's
/// own f32 potential is reported (`PotentialSum::Solver`). The page reads
/// out every half second on any GPU, so its bound is lower. A tree run
/// sums the precise way only on the host (`energy::HOST_MAX`): a
/// double-single N² sum would cost hundreds of its steps (N = 2^17: some
/// 350), and minutes on a software adapter at 65,536. Hermite runs, whose
/// state is f64 and whose errors are ~1e-10, always report the precise
/// sum (their steps are N² too).
pub const EXACT_ENERGY_MAX: usize = if cfg!(target_arch = "wasm32") {
    1 << 14
} else {
    1 << 17
};

/// What a read-out's energies come from.
enum EnergyOf {
    /// The state itself (mass, position, velocity in f64): the potential
    /// is summed the precise way.
    State(State64),
    /// The solver's own diagnostics.
    Solver(Diagnostics),
}

/// The energies of a run's reports: the potential kernel, built at its
/// first use, and the last report's diagnostics (read-outs of an unchanged
/// state, as the Python package makes for each accessor, reuse them).
#[derive(Default)]
struct EnergyReport {
    kernel: Option<PotentialKernel>,
    /// Which potential is summed (`Run::set_potential_rule`).
    rule: PotentialRule,
    /// (steps, time bits) of the state, its diagnostics and their sum.
    last: Option<((u64, u64), Diagnostics, PotentialSum)>,
}

impl EnergyReport {
    /// The most particles whose energy `solver`'s run sums the precise
    /// way (from the state on the host); beyond, the solver's potentials.
    fn precise_max(&self, solver: &ForceSolver) -> usize {
        self.rule.precise_up_to(match solver {
            ForceSolver::Tree(_) => crate::state::energy::HOST_MAX,
            ForceSolver::Direct(_) => EXACT_ENERGY_MAX,
        })
    }

    async fn of(
        &mut self,
        ctx: &GpuContext,
        key: (u64, u64),
        energy_of: EnergyOf,
        eps: f64,
    ) -> Result<(Diagnostics, PotentialSum)> {
        if let Some((k, d, sum)) = self.last {
            if k == key {
                return Ok((d, sum));
            }
        }
        let (d, sum) = match energy_of {
            EnergyOf::Solver(d) => (d, PotentialSum::Solver),
            EnergyOf::State(state) => state_diagnostics(ctx, &mut self.kernel, &state, eps).await?,
        };
        self.last = Some((key, d, sum));
        Ok((d, sum))
    }
}

/// Mean particle-particle and particle-cell interactions per particle.
pub fn mean_interactions(counts: &[InteractionCount]) -> (f64, f64) {
    let n = counts.len().max(1) as f64;
    (
        counts.iter().map(|c| c.pp as f64).sum::<f64>() / n,
        counts.iter().map(|c| c.pc as f64).sum::<f64>() / n,
    )
}
