//! The benchmarks, one code for two hosts: `webgrav bench` natively and the
//! page's benchmark panel in a browser run these functions and print the
//! same JSON lines (same keys, the host and adapter described in each), so
//! a line from a laptop's browser and one from a GPU server's CLI compare
//! key by key (`compare`).
//!
//! - `tree`: whole leapfrog steps of a `run::Run`, phase by phase (GPU
//!   timestamps where the adapter has them), the wall time of a step
//!   waited for alone and of 64 steps run as a run runs them.
//! - `direct`: the f32 direct-summation kernel alone.
//! - `hermite4|6` (and `direct` with active blocks or double-single): M
//!   active sinks against N sources with prediction, j-splitting and
//!   reduction.
//!
//! `suite(size)` is the set the page offers; `webgrav bench suite -n SIZE`
//! runs exactly that set natively.

use super::analysis::galaxy_of_read;
use super::readout::{read_for_plots, PlotRead};
use crate::direct::{DirectConfig, DirectSolver};
use crate::error::{Error, Result};
use crate::gpu::kernel_cache;
use crate::gpu::timing::{now_ms, timed_run, BatchClock, PhaseTimer};
use crate::gpu::{DispatchSizing, GpuContext};
use crate::hermite::{Body, HermiteGpu, Order, Precision, Sinks};
use crate::run::{mean_interactions, Run, RunConfig, RunParams, SolverKind};
use crate::state::stats::median;
use crate::state::{GpuParticles, Model, Particles};
use serde_json::{json, Map, Value};
use std::hint::black_box;

/// What a benchmark times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchKind {
    /// The f32 direct-summation kernel alone.
    Direct,
    /// A whole leapfrog step with the tree solver, phase by phase.
    Tree,
    /// Hermite forces with jerk (GPU prediction + force + reduction).
    Hermite4,
    /// Hermite forces with jerk and snap.
    Hermite6,
    /// The page's frame: a tree step plus the particles drawn into an
    /// offscreen target of a desktop page's size.
    Frame,
}

impl BenchKind {
    pub fn name(self) -> &'static str {
        match self {
            BenchKind::Direct => "direct",
            BenchKind::Tree => "tree",
            BenchKind::Hermite4 => "hermite4",
            BenchKind::Hermite6 => "hermite6",
            BenchKind::Frame => "frame",
        }
    }

    /// The solver whose particle limit applies.
    pub fn solver(self) -> SolverKind {
        match self {
            BenchKind::Tree | BenchKind::Frame => SolverKind::Tree,
            BenchKind::Hermite4 | BenchKind::Hermite6 => SolverKind::Hermite4,
            BenchKind::Direct => SolverKind::Direct,
        }
    }
}

/// The direct kernel's shape, where a benchmark tunes it (`None`: the
/// shape the solver picks for N).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelShape {
    pub threads: Option<u32>,
    pub i_per_thread: Option<u32>,
    pub unroll: Option<u32>,
    /// The direct kernel without the potential.
    pub acc_only: bool,
    /// Workgroups the Hermite kernel's j-splitting aims for
    /// (`HermiteGpu::set_target_workgroups`).
    pub split_target: Option<u32>,
}

/// One benchmark configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchSpec {
    pub kind: BenchKind,
    /// Particles of `model` from `seed`.
    pub n: usize,
    /// The model benchmarked (a Plummer sphere unless asked), generated as
    /// the page and the CLI generate it: on the GPU.
    pub model: Model,
    /// Timed repetitions (the median is reported).
    pub repeat: u32,
    pub eps: f32,
    pub seed: u64,
    /// Opening angle, time step and rebuild interval (`tree`).
    pub theta: f32,
    /// Tolerance of the acceleration MAC (`tree`; 0: the opening angle's).
    pub alpha: f32,
    pub dt: f64,
    pub rebuild: u32,
    /// Arithmetic of `direct` and `hermite4|6`.
    pub precision: Precision,
    /// Active sinks per evaluation (`hermite4|6`, `direct` on the Hermite
    /// kernel); empty: all N.
    pub active: Vec<usize>,
    pub shape: KernelShape,
}

impl BenchSpec {
    /// `kind` at N with the CLI's defaults.
    pub fn new(kind: BenchKind, n: usize) -> Self {
        Self {
            kind,
            n,
            model: Model::Plummer,
            repeat: 5,
            eps: 0.01,
            seed: 1,
            theta: 0.75,
            alpha: 0.0,
            dt: 1.0 / 64.0,
            rebuild: 1,
            precision: Precision::F32,
            active: Vec::new(),
            shape: KernelShape::default(),
        }
    }

    /// `direct` runs the Hermite kernel (without jerk) for double-single
    /// or active blocks, whose j-splitting keeps small blocks fast.
    fn on_hermite_kernel(&self) -> bool {
        matches!(self.kind, BenchKind::Hermite4 | BenchKind::Hermite6)
            || (self.kind == BenchKind::Direct
                && (self.precision != Precision::F32 || !self.active.is_empty()))
    }

    /// The run configuration of the benchmark's solver: the same table as
    /// every run checks ε, Δt and θ against, so that a benchmark refuses
    /// what a run would refuse (`--eps nan` included).
    pub fn config(&self) -> Result<RunConfig> {
        RunParams {
            solver: self.kind.solver(),
            eps: self.eps,
            dt: self.dt,
            theta: self.theta,
            alpha: self.alpha,
            rebuild: self.rebuild,
            ..RunParams::default()
        }
        .validate()
    }
}

impl BenchSpec {
    /// A configuration from a JSON object with the CLI's option names:
    /// `{"bench": "tree", "n": 262144, "theta": 0.75, "alpha": 0.1}`
    /// (also `model`, `repeat`, `eps`, `seed`, `dt`, `rebuild`, `precision`,
    /// `active`, and the direct kernel's `threads`, `ipt`, `unroll`); what
    /// is absent takes `new`'s default. How the browser
    /// engine lab (`tests/browser-engine/`) asks the web build for exactly
    /// the configurations it asks the CLI for.
    pub fn from_json(v: &Value) -> Result<Self> {
        let bad = |what: String| Error::InvalidParameter(format!("benchmark spec: {what}"));
        let obj = v
            .as_object()
            .ok_or_else(|| bad(format!("expected an object, got {v}")))?;
        const KEYS: &[&str] = &[
            "bench",
            "n",
            "model",
            "repeat",
            "eps",
            "seed",
            "theta",
            "alpha",
            "dt",
            "rebuild",
            "precision",
            "active",
            "threads",
            "ipt",
            "unroll",
            "split_target",
        ];
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(bad(format!(
                "unknown key {k:?} (known: {})",
                KEYS.join(", ")
            )));
        }
        let kind = match obj.get("bench").and_then(Value::as_str) {
            Some("direct") => BenchKind::Direct,
            Some("tree") => BenchKind::Tree,
            Some("hermite4") => BenchKind::Hermite4,
            Some("hermite6") => BenchKind::Hermite6,
            Some("frame") => BenchKind::Frame,
            other => {
                return Err(bad(format!(
                    "\"bench\" must be direct, tree, hermite4, hermite6 or frame, got {other:?}"
                )))
            }
        };
        let uint = |key: &str| -> Result<Option<u64>> {
            obj.get(key)
                .map(|x| {
                    x.as_u64()
                        .ok_or_else(|| bad(format!("{key} must be a whole number, got {x}")))
                })
                .transpose()
        };
        let float = |key: &str| -> Result<Option<f64>> {
            obj.get(key)
                .map(|x| {
                    x.as_f64()
                        .ok_or_else(|| bad(format!("{key} must be a number, got {x}")))
                })
                .transpose()
        };
        let n = uint("n")?.ok_or_else(|| bad("\"n\" is missing".into()))? as usize;
        let mut spec = Self::new(kind, n);
        if let Some(m) = obj.get("model") {
            let name = m
                .as_str()
                .ok_or_else(|| bad(format!("model must be a name, got {m}")))?;
            spec.model = Model::from_name(name)?;
        }
        if let Some(r) = uint("repeat")? {
            spec.repeat = u32::try_from(r).map_err(|_| bad(format!("repeat {r} is too large")))?;
        }
        if let Some(s) = uint("seed")? {
            spec.seed = s;
        }
        if let Some(k) = uint("rebuild")? {
            spec.rebuild =
                u32::try_from(k).map_err(|_| bad(format!("rebuild {k} is too large")))?;
        }
        spec.eps = float("eps")?.map_or(spec.eps, |x| x as f32);
        spec.theta = float("theta")?.map_or(spec.theta, |x| x as f32);
        spec.alpha = float("alpha")?.map_or(spec.alpha, |x| x as f32);
        spec.dt = float("dt")?.unwrap_or(spec.dt);
        if let Some(p) = obj.get("precision") {
            spec.precision = p
                .as_str()
                .and_then(Precision::from_name)
                .ok_or_else(|| bad(format!("unknown precision {p}")))?;
        }
        let shape = |key: &str| -> Result<Option<u32>> {
            uint(key)?
                .map(|v| u32::try_from(v).map_err(|_| bad(format!("{key} {v} is too large"))))
                .transpose()
        };
        spec.shape = KernelShape {
            threads: shape("threads")?,
            i_per_thread: shape("ipt")?,
            unroll: shape("unroll")?,
            split_target: shape("split_target")?,
            acc_only: false,
        };
        if let Some(a) = obj.get("active") {
            spec.active = a
                .as_array()
                .and_then(|a| a.iter().map(|x| x.as_u64().map(|x| x as usize)).collect())
                .ok_or_else(|| bad(format!("active must be an array of counts, got {a}")))?;
        }
        Ok(spec)
    }
}

/// The page's benchmark set at one size: the direct kernel and both
/// Hermite orders (double-single, the browser's best) at N = `size`, the
/// tree at 4 × `size`.
pub fn suite(size: usize, repeat: u32) -> Vec<BenchSpec> {
    let with = |kind, n, precision| BenchSpec {
        repeat,
        precision,
        ..BenchSpec::new(kind, n)
    };
    vec![
        with(BenchKind::Direct, size, Precision::F32),
        with(BenchKind::Tree, 4 * size, Precision::F32),
        with(BenchKind::Hermite4, size, Precision::Ds),
        with(BenchKind::Hermite6, size, Precision::Ds),
    ]
}

/// Where a benchmark ran: `kind` "native" or "browser", `detail` the
/// operating system or the browser's user agent.
#[derive(Clone, Debug)]
pub struct Host {
    pub kind: &'static str,
    pub detail: String,
}

impl Host {
    /// This native process.
    pub fn native() -> Self {
        Self {
            kind: "native",
            detail: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// Runs `spec` on `ctx` and hands each JSON line to `emit` (one per
/// configuration; `hermite4|6` one per active-block size).
pub async fn run(
    ctx: &GpuContext,
    spec: &BenchSpec,
    host: &Host,
    emit: &mut dyn FnMut(Value) -> Result<()>,
) -> Result<()> {
    if spec.repeat == 0 {
        return Err(Error::InvalidParameter("repeat must be at least 1".into()));
    }
    spec.config()?;
    super::check_device_particle_count(ctx, spec.n as u64, spec.kind.solver())?;
    #[cfg(not(target_arch = "wasm32"))]
    super::host::check_host_memory(spec.n as u64, spec.kind.solver())?;
    let lines = if spec.kind == BenchKind::Frame {
        // The page makes its model itself (`super::start`).
        vec![bench_frame(ctx, spec).await?]
    } else {
        // As the page and the CLI generate it: on the GPU.
        let model = spec
            .model
            .generate_on(ctx, spec.n, spec.seed, &Default::default())
            .await?;
        let particles = &model.particles;
        if spec.on_hermite_kernel() {
            bench_hermite(ctx, particles, spec).await?
        } else if spec.kind == BenchKind::Tree {
            vec![bench_tree(ctx, particles, spec).await?]
        } else {
            vec![bench_direct(ctx, particles, spec).await?]
        }
    };
    for mut line in lines {
        line["model"] = spec.model.name().into();
        describe(&mut line, ctx, host);
        emit(line)?;
    }
    Ok(())
}

/// The keys every line ends with: what ran it.
fn describe(line: &mut Value, ctx: &GpuContext, host: &Host) {
    let info = &ctx.adapter_info;
    line["adapter"] = info.name.clone().into();
    line["backend"] = format!("{:?}", info.backend).into();
    // In a browser wgpu says `Other` for every adapter; a software one
    // is told apart around it (`gpu::browser_adapter`).
    line["device_type"] = format!("{:?}", info.device_type).into();
    line["driver"] = format!("{} {}", info.driver, info.driver_info)
        .trim()
        .into();
    line["host"] = host.kind.into();
    line["host_detail"] = host.detail.clone().into();
    line["webgrav"] = env!("CARGO_PKG_VERSION").into();
}

/// Runs `work` until the GPU has been busy for a while, so that timed runs
/// see boost clocks rather than an idle GPU ramping up.
async fn warm_up(ctx: &GpuContext, mut work: impl FnMut()) -> Result<()> {
    let start = now_ms();
    while now_ms() - start < 500.0 {
        work();
        ctx.finish().await?;
    }
    Ok(())
}

/// The keys every kernel line has.
fn kernel_line(
    bench: &str,
    spec: &BenchSpec,
    precision: Precision,
    timer: &PhaseTimer,
    ms: f64,
    interactions_per_s: f64,
) -> Value {
    json!({
        "bench": bench,
        "precision": precision.name(),
        "n": spec.n,
        "eps": spec.eps,
        "timing": if timer.enabled() { "gpu-timestamp" } else { "wall" },
        "repeat": spec.repeat,
        "ms": ms,
        "interactions_per_s": interactions_per_s,
    })
}

/// The f32 direct-summation kernel of one shape on all N particles.
async fn bench_direct(ctx: &GpuContext, particles: &Particles, spec: &BenchSpec) -> Result<Value> {
    let n = particles.len();
    let state = GpuParticles::upload(ctx, particles)?;
    let d = DirectConfig::for_n(n as u32);
    let shape = DirectConfig {
        threads: spec.shape.threads.unwrap_or(d.threads),
        i_per_thread: spec.shape.i_per_thread.unwrap_or(d.i_per_thread),
        unroll: spec.shape.unroll.unwrap_or(d.unroll),
        potential: !spec.shape.acc_only,
    };
    shape.check().map_err(Error::InvalidParameter)?;
    // The kernel alone: one dispatch, however long (this times it).
    let solver = DirectSolver::with_config(&ctx.device, &state, spec.eps, shape, f64::INFINITY);
    let mut timer = PhaseTimer::new(ctx, 1);
    let mut times = Vec::new();
    warm_up(ctx, || {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        solver.encode(&ctx.device, &mut encoder, None);
        ctx.queue.submit(Some(encoder.finish()));
    })
    .await?;
    // One more untimed evaluation, then `repeat` timed ones.
    for rep in 0..=spec.repeat {
        let (wall_ms, gpu) = timed_run(ctx, &mut timer, |encoder, timer| {
            solver.encode(&ctx.device, encoder, Some(timer));
            Ok(())
        })
        .await?;
        if rep > 0 {
            times.push(gpu.first().map_or(wall_ms, |(_, ms)| *ms));
        }
    }
    let ms = median(&mut times);
    let ips = solver.interactions() / (ms * 1e-3);
    let mut line = kernel_line("direct", spec, Precision::F32, &timer, ms, ips);
    line["gflops_at_20_flop"] = (ips * 20.0 * 1e-9).into();
    line["threads"] = shape.threads.into();
    line["i_per_thread"] = shape.i_per_thread.into();
    line["unroll"] = shape.unroll.into();
    line["potential"] = shape.potential.into();
    Ok(line)
}

/// The wall time a tree benchmark's steady steps aim for (64 steps at most,
/// 4 at least).
const STEADY_BUDGET_MS: f64 = 5000.0;

/// Whole leapfrog steps of a tree run: per-phase GPU times (median over
/// `repeat` steps after one warm-up step, each submitted and waited for
/// alone: `step_wall_ms`), the wall and GPU time per step of 64 steps (or
/// as many as take about 5 s, at least 4: `steady_steps`) run as a run
/// runs them (`steady_step_wall_ms`, `steady_step_gpu_ms`; their
/// difference is the host's, `steady_host_ms`), interactions and GPU
/// memory.
async fn bench_tree(ctx: &GpuContext, particles: &Particles, spec: &BenchSpec) -> Result<Value> {
    {
        // The GPU warms up on a run of its own: the timed run then starts
        // from the model itself and takes the same steps on every host,
        // however many steps the warm-up fitted in (the page compares its
        // interaction counts with the native CLI's).
        let mut warm = Run::new(ctx, particles, 0.0, spec.config()?).await?;
        warm_up(ctx, || warm.queue(ctx, 1)).await?;
    }
    let mut run = Run::new(ctx, particles, 0.0, spec.config()?).await?;
    let mut phases: Vec<(&'static str, Vec<f64>)> = Vec::new();
    let mut walls = Vec::new();
    let mut spans = Vec::new();
    let mut timed = false;
    for rep in 0..=spec.repeat {
        let (wall, times) = run.timed_step(ctx).await?;
        spans.extend(run.last_step_span_ms().filter(|_| rep > 0));
        timed = !times.is_empty();
        if rep == 0 {
            // Record only the levels this model's tree needs, as runs do.
            run.fit_tree_levels(ctx).await?;
            continue;
        }
        walls.push(wall);
        for (label, ms) in times {
            match phases.iter_mut().find(|(l, _)| *l == label) {
                Some((_, v)) => v.push(ms),
                None => phases.push((label, vec![ms])),
            }
        }
    }
    // The interactions of the last timed step (read before the steady
    // steps, whose number depends on the host's speed: hosts compare them).
    let tree = run
        .tree_stats(ctx)
        .await?
        .expect("a tree run has tree statistics");
    // Steps as a run takes them (batches in one submission, waited for at
    // the batch's end, no timestamps): the wall time per step that
    // production runs see, and what the host adds to the GPU's time.
    // 64 steps, or as many as fit in about 5 s (at least 4): on a software
    // adapter a step of the page's set takes seconds, and 64 of them made
    // the page's benchmark take 6-7 minutes.
    let wall = median(&mut walls);
    let steady_steps = (STEADY_BUDGET_MS / wall.max(1e-3)).clamp(4.0, 64.0) as u32;
    let dt = run.config().params().dt;
    let t_end = run.time() + steady_steps as f64 * dt;
    run.clock_batches(ctx, steady_steps);
    let start = now_ms();
    run.run_to(ctx, t_end, |_, _| true).await?;
    let steady_ms = (now_ms() - start) / steady_steps as f64;
    // The GPU's busy time in those steps (each batch from the end of the
    // work before it to its own end): what is left of the wall time is
    // the host's. The timed steps above are no stand-in for it: the GPU
    // may run a long batch at other clocks than single steps with pauses
    // between them.
    let steady_gpu_ms = run
        .batch_gpu_ms(ctx)
        .await?
        .map(|batches| batches.iter().sum::<f64>() / steady_steps as f64);
    let (pp, pc) = mean_interactions(&tree.interactions);
    let max_pp = tree.interactions.iter().map(|c| c.pp).max().unwrap_or(0);
    let max_pc = tree.interactions.iter().map(|c| c.pc).max().unwrap_or(0);
    let mut phase_ms = Map::new();
    let mut total = 0.0;
    let mut force = 0.0;
    for (label, mut v) in phases {
        // Rebuilding every step, each phase's median; with refits between
        // rebuilds, a phase's mean over all timed steps (the build's
        // phases run only in some of them).
        let m = if spec.rebuild > 1 {
            v.iter().sum::<f64>() / spec.repeat as f64
        } else {
            median(&mut v)
        };
        total += m;
        if label != "integrate" {
            force += m;
        }
        phase_ms.insert(label.to_string(), m.into());
    }
    // Without timestamps the step's wall time stands in for the GPU time.
    let span = (!spans.is_empty()).then(|| median(&mut spans));
    if !timed {
        total = wall;
        force = wall;
    }
    let n = particles.len() as f64;
    let c = &tree.counters;
    Ok(json!({
        "bench": "tree",
        "n": particles.len(),
        "theta": spec.theta,
        "alpha": spec.alpha,
        "eps": spec.eps,
        "rebuild": spec.rebuild,
        "walk": tree.walk.name(),
        "dispatch": match ctx.dispatch_sizing {
            DispatchSizing::Indirect => "indirect",
            DispatchSizing::Strided { .. } => "strided",
        },
        "timing": if timed { "gpu-timestamp" } else { "wall" },
        "repeat": spec.repeat,
        "phase_ms": phase_ms,
        "force_ms": force,
        "step_gpu_ms": total,
        "step_wall_ms": wall,
        "steady_steps": steady_steps,
        "steady_step_wall_ms": steady_ms,
        "steady_step_gpu_ms": steady_gpu_ms,
        // Wall minus the GPU's busy time in the same steps (without
        // timestamps, minus the timed steps' GPU time).
        "steady_host_ms": steady_ms - steady_gpu_ms.unwrap_or(total),
        // The GPU's own time between the phases (untimed copies, idle
        // between passes): part of steady_host_ms that is not the host's.
        "step_span_ms": span,
        "step_gaps_ms": span.map(|s| s - total),
        "particles_per_s": n / (force * 1e-3),
        "interactions_per_s": n * (pp + pc) / (force * 1e-3),
        // The walk's own rate (issue 18's measure, and Bonsai's): the
        // interactions over the walk phase alone.
        "walk_interactions_per_s": phase_ms
            .get("walk")
            .and_then(Value::as_f64)
            .map(|walk| n * (pp + pc) / (walk * 1e-3)),
        "pp_per_particle": pp,
        "pc_per_particle": pc,
        "max_pp": max_pp,
        "max_pc": max_pc,
        "cells": c.cell_count,
        "groups": c.group_count,
        "depth": c.depth,
        "cell_overflow": c.overflow != 0,
        "gpu_bytes": tree.gpu_bytes,
        "bytes_per_particle": tree.gpu_bytes as f64 / n,
    }))
}

/// The page's canvas size the frame benchmark draws at (a desktop window).
pub const FRAME_SIZE: (u32, u32) = (1920, 1080);

/// A model as the page shows it: its run, its scene and the view fitted
/// to it, drawn offscreen at `FRAME_SIZE`.
struct PageFrame {
    run: Run,
    scene: crate::render::Scene,
    renderer: crate::render::Renderer,
    target: wgpu::TextureView,
    camera: crate::render::Camera,
    range: [f32; 2],
    tone: crate::render::Tone,
    /// The start's parts (`super::start::StartTimes`), the view's with
    /// the renderer and the camera's fit.
    times: super::start::StartTimes,
    /// The ids the page's light read-outs find apart; `None`: the page
    /// reads this run whole (`ComponentTags::marked_ids`).
    marked: Option<Vec<u32>>,
    /// The particles' components, which a galaxy's read-out figures need.
    components: crate::render::ComponentTags,
}

impl PageFrame {
    /// Starts model `spec.model` of seed `seed` as the page starts a new
    /// model (`super::start::make_model`, then `Made::start`). With `first_picture_since`,
    /// as the page starts its first: a model left on the GPU is drawn
    /// (and waited for) before its run is started, and the time from
    /// that instant to the picture's end is returned, with
    /// `kernel_cache::build_ms()` then.
    async fn new(
        ctx: &GpuContext,
        spec: &BenchSpec,
        seed: u64,
        first_picture_since: Option<f64>,
    ) -> Result<(Self, Option<(f64, f64)>)> {
        use super::start::{make_model, Made};
        use crate::render::{offscreen_target, Renderer, Tone, OFFSCREEN_FORMAT};
        let config = spec.config()?;
        let made = make_model(ctx, spec.model, spec.n, seed, &Default::default(), config).await?;
        let begin = now_ms();
        let mut renderer = Renderer::new(&ctx.device, OFFSCREEN_FORMAT);
        let texture = offscreen_target(&ctx.device, FRAME_SIZE, wgpu::TextureUsages::empty());
        let target = texture.create_view(&Default::default());
        let renderer_ms = now_ms() - begin;
        let (mut picture_ms, mut fitted) = (None, None);
        if let (Some(since), Made::Viewed(picture, _)) = (first_picture_since, &made) {
            let (camera, range) = fitted_view(&picture.view);
            let tone = Tone::for_map(camera.map);
            let view = (&camera, range, &tone);
            draw_offscreen(ctx, &mut renderer, &target, &picture.scene, view, None)?;
            ctx.finish().await?;
            picture_ms = Some((now_ms() - since, kernel_cache::build_ms()));
            // The run's view is the picture's.
            fitted = Some((camera, range));
        }
        let started = made.start(ctx).await?;
        let begin = now_ms();
        let (camera, range) = fitted.unwrap_or_else(|| fitted_view(&started.view));
        let mut times = started.times;
        times.view_ms += renderer_ms + now_ms() - begin;
        let marked = started.view.components.marked_ids(spec.n);
        let frame = Self {
            marked,
            components: started.view.components,
            run: started.run,
            scene: started.scene,
            renderer,
            target,
            tone: Tone::for_map(camera.map),
            camera,
            range,
            times,
        };
        Ok((frame, picture_ms))
    }

    /// One draw (splat, exposure, tone map) in a submission of its own, as
    /// the page's; bracketed by the clock's timestamps where given.
    fn draw(&mut self, ctx: &GpuContext, clock: Option<&mut BatchClock>) -> Result<()> {
        let view = (&self.camera, self.range, &self.tone);
        draw_offscreen(
            ctx,
            &mut self.renderer,
            &self.target,
            &self.scene,
            view,
            clock,
        )
    }

    /// A step and a draw, waited for: the first frame's end.
    async fn first_frame(&mut self, ctx: &GpuContext) -> Result<()> {
        self.run.queue(ctx, 1);
        self.draw(ctx, None)?;
        ctx.finish().await
    }
}

/// The page's view of a new model: its camera fitted to the model's mass,
/// and the colour map's range.
fn fitted_view(view: &super::start::StartView) -> (crate::render::Camera, [f32; 2]) {
    let mut camera = crate::render::Camera::default();
    let (center, radius) = super::readout::view_sphere(&view.positions);
    camera.fit(center, radius, FRAME_SIZE.0, FRAME_SIZE.1);
    let range = view.ranges.for_mode(camera.color_mode);
    (camera, range)
}

/// One draw of `scene` through `(camera, range, tone)` at `FRAME_SIZE`
/// (splat, exposure, tone map) in a submission of its own, as the page's;
/// bracketed by the clock's timestamps where given.
fn draw_offscreen(
    ctx: &GpuContext,
    renderer: &mut crate::render::Renderer,
    target: &wgpu::TextureView,
    scene: &crate::render::Scene,
    (camera, range, tone): (&crate::render::Camera, [f32; 2], &crate::render::Tone),
    mut clock: Option<&mut BatchClock>,
) -> Result<()> {
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    let slot = clock.as_deref_mut().and_then(|c| c.begin(&mut encoder));
    renderer.draw(
        &ctx.device,
        &ctx.queue,
        &mut encoder,
        target,
        FRAME_SIZE,
        scene,
        camera,
        range,
        tone,
    )?;
    if let (Some(c), Some(k)) = (clock, slot) {
        c.end(&mut encoder, k);
    }
    ctx.queue.submit(Some(encoder.finish()));
    Ok(())
}

/// The page's frames on a tree run: the draw pass alone (GPU time,
/// median of `repeat`), 64 frames of one step plus a draw each, with at
/// most two frames queued as a browser's frame pacing allows
/// (`frame_wall_ms`: the frame rate the GPU and host sustain), the first
/// frame: generation, run set-up, one step and one draw, waited for
/// (`first_frame_ms`, what a visitor waits for once the page has its GPU),
/// and the same for the next model on the same device (`next_model_ms`:
/// what a visitor waits for after changing the model or N).
async fn bench_frame(ctx: &GpuContext, spec: &BenchSpec) -> Result<Value> {
    let start = now_ms();
    let compiled = kernel_cache::build_ms();
    let (mut page, picture) = PageFrame::new(ctx, spec, spec.seed, Some(start)).await?;
    page.first_frame(ctx).await?;
    let first_frame_ms = now_ms() - start;
    let compile_ms = kernel_cache::build_ms() - compiled;
    page.run.fit_tree_levels(ctx).await?;
    let mut failed = Ok(());
    warm_up(ctx, || {
        page.run.queue(ctx, 1);
        if failed.is_ok() {
            failed = page.draw(ctx, None);
        }
    })
    .await?;
    failed?;
    // The draw passes alone.
    let mut clock = BatchClock::new(ctx, spec.repeat);
    for _ in 0..spec.repeat {
        page.draw(ctx, clock.as_mut())?;
        ctx.finish().await?;
    }
    let mut draw_ms = match &clock {
        Some(c) => c.read(ctx).await?,
        None => Vec::new(),
    };
    // Frames as the page makes them.
    const FRAMES: u32 = 64;
    let begin = now_ms();
    let mut in_flight = std::collections::VecDeque::new();
    for _ in 0..FRAMES {
        if in_flight.len() >= 2 {
            ctx.wait_for(in_flight.pop_front().expect("two queued"))
                .await?;
        }
        page.run.queue(ctx, 1);
        page.draw(ctx, None)?;
        in_flight.push_back(ctx.mark());
    }
    ctx.finish().await?;
    let frame_wall_ms = (now_ms() - begin) / FRAMES as f64;
    // The page's read-outs for its plots, with their figures (a galaxy's
    // too): whole, then light where the run measures on the GPU
    // (`readout::read_for_plots`).
    let begin = now_ms();
    let (light, marked) = (
        page.marked.is_some(),
        page.marked.clone().unwrap_or_default(),
    );
    let whole = read_for_plots(ctx, &mut page.run, false, &marked).await?;
    black_box((whole.figures(), galaxy_of_read(&whole, &page.components)));
    let readout_ms = now_ms() - begin;
    drop(whole);
    let begin = now_ms();
    let light = read_for_plots(ctx, &mut page.run, light, &marked).await?;
    black_box((light.figures(), galaxy_of_read(&light, &page.components)));
    let light_readout_ms = matches!(light, PlotRead::Sampled(..)).then(|| now_ms() - begin);
    let times = page.times;
    drop((page, light));
    // The next model (another seed) on the same device, as the page
    // starts it when its settings change.
    let begin = now_ms();
    PageFrame::new(ctx, spec, spec.seed + 1, None)
        .await?
        .0
        .first_frame(ctx)
        .await?;
    let next_model_ms = now_ms() - begin;
    Ok(json!({
        "bench": "frame",
        "n": spec.n,
        "theta": spec.theta,
        "alpha": spec.alpha,
        "eps": spec.eps,
        "width": FRAME_SIZE.0,
        "height": FRAME_SIZE.1,
        "timing": if clock.is_some() { "gpu-timestamp" } else { "wall" },
        "repeat": spec.repeat,
        "draw_gpu_ms": (!draw_ms.is_empty()).then(|| median(&mut draw_ms)),
        "frame_wall_ms": frame_wall_ms,
        "frames_per_s": 1e3 / frame_wall_ms,
        "first_frame_ms": first_frame_ms,
        // The page's first picture: a model on the GPU drawn before its
        // run's kernels are built (none for a model made on the host;
        // its draw is in none of the parts below), and the compiles
        // until then.
        "first_picture_ms": picture.map(|p| p.0),
        "picture_compile_ms": picture.map(|p| p.1 - compiled),
        // The first frame's parts: the model, the run (upload, kernels,
        // first forces), the view (shells, colour ranges, camera fit,
        // renderer), and the rest (one step and one draw, waited for).
        "generate_ms": times.generate_ms,
        "setup_ms": times.setup_ms,
        "view_ms": times.view_ms,
        // Of the first frame, the modules and pipelines built (WGSL to
        // the driver's code; none for the next model, whose device has
        // them): the part a faster start of ours cannot remove.
        "compile_ms": compile_ms,
        "next_model_ms": next_model_ms,
        // One read-out of the page's plots: whole, and light (none where
        // the run cannot be measured on the GPU).
        "readout_ms": readout_ms,
        "light_readout_ms": light_readout_ms,
    }))
}

/// M active sinks against N sources with GPU prediction, j-splitting and
/// reduction; the median GPU time of the force passes (gather, force,
/// reduce) and of the prediction of all N. One line per active size.
async fn bench_hermite(ctx: &GpuContext, p: &Particles, spec: &BenchSpec) -> Result<Vec<Value>> {
    let (order, name) = match spec.kind {
        BenchKind::Hermite4 => (Order::Four, "hermite4"),
        BenchKind::Hermite6 => (Order::Six, "hermite6"),
        _ => (Order::Two, "direct"),
    };
    let precision = spec.precision;
    precision.check_adapter(ctx)?;
    let n = p.len();
    let actives = if spec.active.is_empty() {
        vec![n]
    } else {
        spec.active.clone()
    };
    let ni_cap = actives.iter().copied().max().unwrap_or(n).min(n).max(1);
    let mut gpu = HermiteGpu::new(ctx, n as u32, ni_cap as u32, spec.eps as f64)?;
    if let Some(t) = spec.shape.split_target {
        gpu.set_target_workgroups(t);
    }
    let recs: Vec<_> = (0..n)
        .map(|k| {
            Body {
                mass: p.pos_mass[k].mass as f64,
                pos: p.pos_mass[k].pos.map(f64::from),
                vel: p.vel[k].vel.map(f64::from),
                ..Default::default()
            }
            .record(k as u32)
        })
        .collect();
    gpu.set_j(&(0..n as u32).collect::<Vec<_>>(), &recs);
    let mut lines = Vec::new();
    for &m in &actives {
        let m = m.clamp(1, n);
        // Spread the active block over the model, as block steps do.
        let active: Vec<u32> = (0..m).map(|k| (k * n / m) as u32).collect();
        let mut timer = PhaseTimer::new(ctx, 2);
        let (mut force_ms, mut predict_ms) = (Vec::new(), Vec::new());
        for rep in 0..=spec.repeat {
            // Advance the prediction time so nothing is cached.
            let t = rep as f64 / 1024.0;
            let (wall_ms, phases) = timed_run(ctx, &mut timer, |encoder, timer| {
                gpu.encode(
                    encoder,
                    t,
                    Sinks::Active(&active),
                    order,
                    precision,
                    Some(timer),
                )
                .map(|_| ())
            })
            .await?;
            if rep > 0 {
                let get = |name: &str| phases.iter().find(|(l, _)| *l == name).map(|p| p.1);
                force_ms.push(get("force").unwrap_or(wall_ms));
                predict_ms.push(get("predict").unwrap_or(0.0));
            }
        }
        let ms = median(&mut force_ms);
        let ips = (m as f64) * (n as f64) / (ms * 1e-3);
        let flop = order.flops();
        let mut line = kernel_line(name, spec, precision, &timer, ms, ips);
        line["active"] = m.into();
        line["split_target"] = gpu.target_workgroups().into();
        if precision == Precision::Ds {
            line["ds_sums"] = gpu.ds_sums().into();
        }
        line["predict_ms"] = median(&mut predict_ms).into();
        line["flop_per_interaction"] = flop.into();
        line["gflops"] = (ips * flop * 1e-9).into();
        lines.push(line);
    }
    Ok(lines)
}

/// One figure of a browser line against the native line of the same
/// configuration: `ratio` = browser / native (a time: > 1 means the
/// browser is slower).
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    /// The configuration, e.g. "tree n=16384 θ=0.75".
    pub config: String,
    /// The figure, e.g. "ms", "step_gpu_ms" or "phase walk".
    pub figure: String,
    pub browser: f64,
    pub native: f64,
    pub ratio: f64,
}

/// What identifies a configuration across hosts.
fn identity(line: &Value) -> Option<String> {
    let bench = line.get("bench")?.as_str()?;
    let mut id = format!("{bench} n={}", line.get("n")?);
    // A model other than the Plummer sphere (absent in files written
    // before models could be chosen).
    if let Some(m) = line
        .get("model")
        .and_then(Value::as_str)
        .filter(|&m| m != "plummer")
    {
        id += &format!(" {m}");
    }
    if let Some(t) = line.get("theta").and_then(Value::as_f64) {
        id += &format!(" θ={}", (t * 1e4).round() / 1e4);
    }
    // The acceleration MAC's tolerance; 0 (or absent, in files written
    // before it) is the opening angle MAC and adds nothing.
    if let Some(a) = line
        .get("alpha")
        .and_then(Value::as_f64)
        .filter(|&a| a > 0.0)
    {
        id += &format!(" α={}", (a * 1e6).round() / 1e6);
    }
    if let Some(p) = line.get("precision").and_then(Value::as_str) {
        id += &format!(" {p}");
    }
    if let Some(a) = line.get("active") {
        id += &format!(" active={a}");
    }
    Some(id)
}

/// Parses JSON lines (blank lines and lines that are not benchmark
/// objects are skipped; a line that is not JSON is an error naming it).
pub fn parse_lines(text: &str, what: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for (k, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(l).map_err(|e| {
            Error::InvalidParameter(format!("{what}, line {}: not JSON ({e})", k + 1))
        })?;
        if identity(&v).is_some() {
            out.push(v);
        }
    }
    if out.is_empty() {
        return Err(Error::InvalidParameter(format!(
            "{what}: no benchmark lines (expected the JSON lines of `webgrav bench`)"
        )));
    }
    Ok(out)
}

/// The time figures of a line: `ms` (kernels) or the tree's step, force
/// and steady-state times and each phase.
fn time_figures(line: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for key in [
        "ms",
        "step_gpu_ms",
        "steady_step_wall_ms",
        "predict_ms",
        "draw_gpu_ms",
        "frame_wall_ms",
        "first_frame_ms",
        "first_picture_ms",
        "picture_compile_ms",
        "generate_ms",
        "setup_ms",
        "view_ms",
        "compile_ms",
        "readout_ms",
        "light_readout_ms",
    ] {
        if let Some(v) = line.get(key).and_then(Value::as_f64) {
            out.push((key.to_string(), v));
        }
    }
    if let Some(Value::Object(phases)) = line.get("phase_ms") {
        for (k, v) in phases {
            if let Some(v) = v.as_f64() {
                out.push((format!("phase {k}"), v));
            }
        }
    }
    out
}

/// Browser lines against native lines: a ratio for every time figure both
/// have, for every configuration both ran (in the browser lines' order).
/// Configurations only one side ran are left out; none in common is an
/// error.
pub fn compare(browser: &[Value], native: &[Value]) -> Result<Vec<Ratio>> {
    let mut out = Vec::new();
    for b in browser {
        let Some(id) = identity(b) else { continue };
        let Some(nat) = native.iter().find(|l| identity(l).as_deref() == Some(&id)) else {
            continue;
        };
        let nf = time_figures(nat);
        for (figure, bv) in time_figures(b) {
            if let Some((_, nv)) = nf.iter().find(|(f, _)| *f == figure) {
                if *nv > 0.0 && bv > 0.0 {
                    out.push(Ratio {
                        config: id.clone(),
                        figure,
                        browser: bv,
                        native: *nv,
                        ratio: bv / nv,
                    });
                }
            }
        }
    }
    if out.is_empty() {
        return Err(Error::InvalidParameter(
            "no configuration in common: run `webgrav bench suite -n SIZE` with the page's size"
                .into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NATIVE: &str = r#"{"bench":"direct","n":1024,"precision":"f32","ms":2.0}
{"bench":"tree","n":4096,"theta":0.75,"ms_unused":1,"step_gpu_ms":4.0,"steady_step_wall_ms":5.0,"phase_ms":{"walk":2.0,"sort":0.5}}
{"bench":"hermite4","n":1024,"precision":"ds","active":1024,"ms":8.0,"predict_ms":0.1}
"#;

    #[test]
    fn ratios_pair_configurations_and_figures() {
        let browser = parse_lines(
            r#"{"bench":"tree","n":4096,"theta":0.75,"step_gpu_ms":40.0,"steady_step_wall_ms":60.0,"phase_ms":{"walk":30.0,"sort":5.0,"box":1.0}}
{"bench":"direct","n":1024,"precision":"f32","ms":3.0}
{"bench":"hermite4","n":2048,"precision":"ds","active":2048,"ms":8.0}"#,
            "browser",
        )
        .unwrap();
        let native = parse_lines(NATIVE, "native").unwrap();
        let r = compare(&browser, &native).unwrap();
        let got: Vec<_> = r
            .iter()
            .map(|r| (r.config.as_str(), r.figure.as_str(), r.ratio))
            .collect();
        // The browser's order (phases by name); a phase or a size only
        // one side has is left out.
        assert_eq!(
            got,
            [
                ("tree n=4096 θ=0.75", "step_gpu_ms", 10.0),
                ("tree n=4096 θ=0.75", "steady_step_wall_ms", 12.0),
                ("tree n=4096 θ=0.75", "phase sort", 10.0),
                ("tree n=4096 θ=0.75", "phase walk", 15.0),
                ("direct n=1024 f32", "ms", 1.5),
            ]
        );
    }

    #[test]
    fn bad_files_are_named() {
        let e = parse_lines(
            "{\"bench\":\"direct\",\"n\":1}\nnot json",
            "the native file",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("the native file, line 2: not JSON"), "{e}");
        let e = parse_lines("{\"time\":1}\n", "x").unwrap_err().to_string();
        assert!(e.contains("no benchmark lines"), "{e}");
        let other = parse_lines(r#"{"bench":"direct","n":65536,"ms":1}"#, "b").unwrap();
        let native = parse_lines(NATIVE, "n").unwrap();
        let e = compare(&other, &native).unwrap_err().to_string();
        assert!(e.contains("no configuration in common"), "{e}");
    }

    #[test]
    fn specs_read_from_json_as_the_cli_reads_flags() {
        let spec = BenchSpec::from_json(&json!({
            "bench": "tree", "n": 4096, "theta": 0.5, "alpha": 0.1, "repeat": 3
        }))
        .unwrap();
        assert_eq!(
            spec,
            BenchSpec {
                theta: 0.5,
                alpha: 0.1,
                repeat: 3,
                ..BenchSpec::new(BenchKind::Tree, 4096)
            }
        );
        let h = BenchSpec::from_json(&json!({
            "bench": "hermite6", "n": 1024, "precision": "ds-fast", "active": [16, 1024]
        }))
        .unwrap();
        assert_eq!(
            (h.kind, h.precision),
            (BenchKind::Hermite6, Precision::DsFast)
        );
        assert_eq!(h.active, [16, 1024]);
        let m = BenchSpec::from_json(&json!({"bench": "frame", "n": 8, "model": "milky-way"}));
        assert_eq!(m.unwrap().model, Model::MilkyWay);
        for (bad, says) in [
            (
                json!({"bench": "frame", "n": 4, "model": "spiral"}),
                "unknown model 'spiral'",
            ),
            (json!({"bench": "tree"}), "\"n\" is missing"),
            (json!({"bench": "fmm", "n": 4}), "must be direct, tree"),
            (
                json!({"bench": "tree", "n": 4, "tehta": 1}),
                "unknown key \"tehta\"",
            ),
            (
                json!({"bench": "tree", "n": -4}),
                "n must be a whole number",
            ),
            (
                json!({"bench": "direct", "n": 4, "precision": "f16"}),
                "unknown precision",
            ),
            (json!([1]), "expected an object"),
        ] {
            let e = BenchSpec::from_json(&bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_suite_is_the_pages_set() {
        let s = suite(4096, 3);
        let got: Vec<_> = s
            .iter()
            .map(|b| (b.kind, b.n, b.precision, b.repeat))
            .collect();
        assert_eq!(
            got,
            [
                (BenchKind::Direct, 4096, Precision::F32, 3),
                (BenchKind::Tree, 16384, Precision::F32, 3),
                (BenchKind::Hermite4, 4096, Precision::Ds, 3),
                (BenchKind::Hermite6, 4096, Precision::Ds, 3),
            ]
        );
        assert!(s.iter().all(|b| b.config().is_ok()));
    }
}
