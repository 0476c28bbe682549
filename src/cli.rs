//! The native CLI: `run`, `forces`, `bench`, `convert`, `info`, `render`.

use crate::direct::hermite_force::{Order, Precision};
use crate::direct::reference::{self, ErrorStats};
use crate::direct::{DirectConfig, DirectSolver};
use crate::error::{Error, Result};
use crate::gpu::timing::PhaseTimer;
use crate::gpu::GpuContext;
use crate::render::{render_rgba, shell_tags, Camera, ColorMode, ColorRanges};
use crate::sim::{
    Diagnostics, GpuParticles, Model, Particles, SimConfig, Simulation, Solver, SolverKind,
};
use crate::snapshot::{self, Snapshot};
use crate::tree::layout::InteractionCount;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "webgrav",
    version,
    about = "Gravitational N-body simulation on WebGPU (native CLI)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Integrate a model or a snapshot with leapfrog and write the end state.
    Run(RunArgs),
    /// Write accelerations and potentials of the initial state as CSV.
    Forces(ForcesArgs),
    /// Benchmark a solver; prints one JSON line per run.
    Bench(BenchArgs),
    /// Convert a snapshot between formats (chosen by extension).
    Convert { input: String, output: String },
    /// Print the GPU adapter webgrav would use.
    Info,
    /// Render a snapshot to a PNG offscreen, with the web app's renderer
    /// and camera (the same numbers as its URL parameters).
    Render(RenderArgs),
}

/// Where the initial particles come from.
#[derive(Args)]
struct InitialArgs {
    /// Initial-condition model.
    #[arg(long, value_enum, default_value_t = Model::Plummer)]
    model: Model,
    /// Number of particles of the model.
    #[arg(short = 'n', long = "n", default_value_t = 4096)]
    n: usize,
    /// Random seed of the model.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Start from this snapshot (.tipsy, .bonsai, .csv) instead of a model.
    #[arg(long = "in")]
    input: Option<String>,
}

impl InitialArgs {
    fn load(&self) -> Result<Snapshot> {
        match &self.input {
            Some(path) => snapshot::read_file(path),
            None => Ok(Snapshot {
                particles: self.model.generate(self.n, self.seed)?,
                ..Default::default()
            }),
        }
    }
}

#[derive(Args)]
struct SolverArgs {
    #[arg(long, value_enum, default_value_t = SolverKind::Direct)]
    solver: SolverKind,
    /// Plummer softening length (N-body units).
    #[arg(long, default_value_t = 0.01)]
    eps: f32,
    /// Opening angle θ of the tree solver's MAC.
    #[arg(long, default_value_t = 0.75)]
    theta: f32,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    initial: InitialArgs,
    #[command(flatten)]
    solver: SolverArgs,
    /// Global time step (N-body units).
    #[arg(long, default_value_t = 1.0 / 128.0)]
    dt: f32,
    /// End time (N-body units).
    #[arg(long, default_value_t = 1.0)]
    t_end: f64,
    /// Output snapshot (.tipsy, .bonsai or .csv).
    #[arg(long)]
    out: Option<String>,
    #[command(flatten)]
    hermite: HermiteArgs,
}

/// Options of `--solver hermite4|hermite6` (ignored by the others).
#[derive(Args)]
struct HermiteArgs {
    /// Accuracy parameter of Aarseth's time-step criterion
    /// dt = sqrt(eta (|a||a''| + |a'|^2) / (|a'||a'''| + |a''|^2)).
    #[arg(long, default_value_t = 0.02)]
    eta: f64,
    /// Force arithmetic: f32, or double-single positions and sums.
    #[arg(long, value_enum, default_value_t = Precision::Ds)]
    precision: Precision,
    /// Largest block time step (a power of two).
    #[arg(long, default_value_t = 0.125)]
    dt_max: f64,
    /// Print energy error, block steps and force evaluations at these
    /// intervals of simulated time (0: only at the end).
    #[arg(long, default_value_t = 0.125)]
    log_every: f64,
}

#[derive(Args)]
struct ForcesArgs {
    #[command(flatten)]
    initial: InitialArgs,
    #[command(flatten)]
    solver: SolverArgs,
    /// Output CSV: id,x,y,z,m,ax,ay,az,pot (rows in input order).
    #[arg(long)]
    out: Option<String>,
    /// Compare with the f64 direct sum: print the relative acceleration
    /// error distribution (median, 90th, 99th percentile, max).
    #[arg(long, value_enum)]
    compare: Option<CompareWith>,
    /// Particles sampled for --compare (the f64 sum costs N per particle);
    /// 0 compares all of them.
    #[arg(long, default_value_t = 4096)]
    sample: usize,
}

#[derive(Clone, Copy, ValueEnum)]
enum CompareWith {
    /// The f64 direct sum on the CPU.
    Direct,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum BenchKind {
    /// The f32 direct-summation kernel alone.
    Direct,
    /// A whole leapfrog step with the tree solver, phase by phase.
    Tree,
    /// Hermite forces with jerk (GPU prediction + force + reduction).
    Hermite4,
    /// Hermite forces with jerk and snap.
    Hermite6,
}

#[derive(Args)]
struct BenchArgs {
    kind: BenchKind,
    /// Number of particles (repeat the flag for several sizes).
    #[arg(short = 'n', long = "n", default_values_t = [65536usize])]
    n: Vec<usize>,
    /// Timed repetitions per size (the median is reported).
    #[arg(long, default_value_t = 5)]
    repeat: u32,
    #[arg(long, default_value_t = 0.01)]
    eps: f32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Opening angle(s) of `bench tree` (repeat the flag for several).
    #[arg(long, default_values_t = [0.75f32])]
    theta: Vec<f32>,
    /// Time step of `bench tree`.
    #[arg(long, default_value_t = 1.0 / 64.0)]
    dt: f32,
    #[command(flatten)]
    direct: DirectBenchArgs,
}

/// Options of the direct-summation and Hermite benchmarks.
#[derive(Args)]
struct DirectBenchArgs {
    /// Arithmetic: f32, or double-single (Hermite kernels).
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    precision: Precision,
    /// Active particles (sinks) per evaluation; default all N. `direct`
    /// with --active (or --precision ds) runs the Hermite kernel without
    /// jerk, whose j-splitting keeps small blocks fast.
    #[arg(long)]
    active: Vec<usize>,
    /// Direct kernel shape: invocations per workgroup (tuning).
    #[arg(long)]
    threads: Option<u32>,
    /// Direct kernel shape: sinks per invocation (tuning).
    #[arg(long)]
    ipt: Option<u32>,
    /// Direct kernel shape: sources per loop trip, 1, 2 or 4 (tuning).
    #[arg(long)]
    unroll: Option<u32>,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match pollster::block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("webgrav: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run(a) => run(a).await,
        Command::Forces(a) => forces(a).await,
        Command::Bench(a) if matches!(a.kind, BenchKind::Hermite4 | BenchKind::Hermite6) => {
            bench_hermite(a).await
        }
        Command::Bench(a) if a.direct.precision == Precision::Ds || !a.direct.active.is_empty() => {
            bench_hermite(a).await
        }
        Command::Bench(a) => bench(a).await,
        Command::Convert { input, output } => {
            let snap = snapshot::read_file(&input)?;
            snapshot::write_file(&output, &snap)?;
            eprintln!("wrote {} particles to {output}", snap.particles.len());
            Ok(())
        }
        Command::Render(a) => render(a).await,
        Command::Info => {
            let ctx = GpuContext::headless().await?;
            println!("{}", ctx.adapter_summary());
            println!("timestamp queries: {}", ctx.has_timestamps);
            println!("max particles (16-byte records): {}", ctx.max_elements(16));
            Ok(())
        }
    }
}

fn check_output_path(path: &Option<String>) -> Result<()> {
    // Fail on a bad extension before spending GPU time, not after.
    if let Some(p) = path {
        snapshot::Format::from_path(p)?;
    }
    Ok(())
}

async fn run(a: RunArgs) -> Result<()> {
    check_output_path(&a.out)?;
    match a.solver.solver {
        SolverKind::Hermite4 => return run_hermite(a, Order::Four).await,
        SolverKind::Hermite6 => return run_hermite(a, Order::Six).await,
        _ => {}
    }
    if !(a.t_end.is_finite() && a.t_end >= 0.0) {
        return Err(Error::InvalidParameter(format!(
            "--t-end must be >= 0, got {}",
            a.t_end
        )));
    }
    let start = a.initial.load()?;
    let ctx = GpuContext::headless().await?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let config = SimConfig {
        solver: a.solver.solver,
        eps: a.solver.eps,
        dt: a.dt,
        theta: a.solver.theta,
    };
    let mut sim = Simulation::new(&ctx, &start.particles, config, start.time)?;
    let e0 = sim.diagnostics(&ctx).await?;
    let steps = ((a.t_end - start.time).max(0.0) / a.dt as f64).round() as u64;
    eprintln!(
        "N = {}, solver {}, eps {}, dt {}, {steps} steps to t = {}",
        sim.n(),
        config.solver.name(),
        config.eps,
        config.dt,
        a.t_end
    );
    let bar = indicatif::ProgressBar::new(steps);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {per_sec}, eta {eta}")
            .expect("static template"),
    );
    let clock = Instant::now();
    // Submit in batches and wait for each, so the queue stays short and the
    // progress bar tells the truth.
    const BATCH: u64 = 16;
    let mut done = 0;
    while done < steps {
        let k = BATCH.min(steps - done);
        sim.step(&ctx, k as u32);
        wait_idle(&ctx)?;
        done += k;
        bar.set_position(done);
    }
    bar.finish_and_clear();
    let wall = clock.elapsed().as_secs_f64();
    let e1 = sim.diagnostics(&ctx).await?;
    report_energy(&e0, &e1, sim.time, steps, wall);
    if let Some(path) = &a.out {
        snapshot::write_file(path, &sim.snapshot(&ctx).await?)?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

fn report_energy(e0: &Diagnostics, e1: &Diagnostics, t: f64, steps: u64, wall: f64) {
    let p = e1.momentum;
    let l0 = e0.angular_momentum;
    let l1 = e1.angular_momentum;
    let dl = ((l1[0] - l0[0]).powi(2) + (l1[1] - l0[1]).powi(2) + (l1[2] - l0[2]).powi(2)).sqrt();
    println!("t = {t:.6} after {steps} steps ({wall:.2} s wall)");
    println!(
        "E0 = {:.9}  E = {:.9}  (K = {:.6}, W = {:.6}, Q = {:.4})",
        e0.total, e1.total, e1.kinetic, e1.potential, e1.virial_ratio
    );
    println!(
        "relative energy error |dE/E0| = {:.3e}",
        e1.energy_error(e0)
    );
    println!(
        "momentum |P| = {:.3e}, angular momentum change |dL| = {:.3e}",
        (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt(),
        dl
    );
}

async fn forces(a: ForcesArgs) -> Result<()> {
    if a.out.is_none() && a.compare.is_none() {
        return Err(Error::InvalidParameter(
            "nothing to do: give --out FILE and/or --compare direct".into(),
        ));
    }
    let start = a.initial.load()?;
    let ctx = GpuContext::headless().await?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let config = SimConfig {
        // Forces of one state: the Hermite solvers use the same direct sum.
        solver: match a.solver.solver {
            SolverKind::Hermite4 | SolverKind::Hermite6 => SolverKind::Direct,
            solver => solver,
        },
        eps: a.solver.eps,
        dt: 1.0,
        theta: a.solver.theta,
    };
    // Creating the simulation evaluates the forces of the initial state.
    let sim = Simulation::new(&ctx, &start.particles, config, start.time)?;
    let state = sim.state.read(&ctx).await?;
    // Back to input order (the tree solver sorts particles by key).
    let n = state.index.len();
    let mut acc = vec![Default::default(); n];
    for (k, &i) in state.index.iter().enumerate() {
        acc[i as usize] = state.acc_pot[k];
    }
    if let Some(path) = &a.out {
        let p = &start.particles;
        snapshot::write_atomic(
            path,
            &snapshot::csv::encode_forces(&p.id, &p.pos_mass, &acc),
        )?;
        eprintln!("wrote forces of {n} particles to {path}");
    }
    if a.compare.is_some() {
        let sample = sample_indices(n, a.sample, a.initial.seed);
        let reference =
            reference::forces_on(&start.particles.pos_mass, &sample, a.solver.eps as f64);
        let gpu: Vec<_> = sample.iter().map(|&i| acc[i]).collect();
        let acc_err = ErrorStats::of(&reference::acc_errors(&gpu, &reference));
        let pot_err = ErrorStats::of(&reference::pot_errors(&gpu, &reference));
        let mut line = serde_json::json!({
            "compare": "direct-f64",
            "solver": config.solver.name(),
            "n": n,
            "theta": config.theta,
            "eps": config.eps,
            "sampled": sample.len(),
            "acc_error": {"median": acc_err.median, "p90": acc_err.p90, "p99": acc_err.p99, "max": acc_err.max},
            "pot_error": {"median": pot_err.median, "p90": pot_err.p90, "p99": pot_err.p99, "max": pot_err.max},
        });
        if let Solver::Tree(tree) = sim.solver() {
            let (pp, pc) = mean_interactions(&tree.interaction_counts(&ctx).await?);
            line["pp_per_particle"] = pp.into();
            line["pc_per_particle"] = pc.into();
        }
        println!("{line}");
    }
    Ok(())
}

/// `count` distinct particle indices out of `n` (all when count is 0 or
/// at least n), deterministic for `seed`.
fn sample_indices(n: usize, count: usize, seed: u64) -> Vec<usize> {
    if count == 0 || count >= n {
        return (0..n).collect();
    }
    // Partial Fisher-Yates shuffle.
    let mut rng = crate::sim::rng::Rng::new(seed ^ 0x5eed);
    let mut idx: Vec<usize> = (0..n).collect();
    for k in 0..count {
        let j = k + (rng.uniform() * (n - k) as f64) as usize;
        idx.swap(k, j.min(n - 1));
    }
    idx.truncate(count);
    idx.sort_unstable();
    idx
}

fn mean_interactions(counts: &[InteractionCount]) -> (f64, f64) {
    let n = counts.len().max(1) as f64;
    (
        counts.iter().map(|c| c.pp as f64).sum::<f64>() / n,
        counts.iter().map(|c| c.pc as f64).sum::<f64>() / n,
    )
}

async fn bench(a: BenchArgs) -> Result<()> {
    let ctx = GpuContext::headless().await?;
    for &n in &a.n {
        let particles: Particles = Model::Plummer.generate(n, a.seed)?;
        if let BenchKind::Tree = a.kind {
            for &theta in &a.theta {
                bench_tree(&ctx, &particles, &a, theta).await?;
            }
            continue;
        }
        let state = GpuParticles::upload(&ctx, &particles)?;
        match a.kind {
            BenchKind::Tree => unreachable!("handled above"),
            BenchKind::Hermite4 | BenchKind::Hermite6 => unreachable!("bench_hermite"),
            BenchKind::Direct => {
                let d = DirectConfig::for_n(n as u32);
                let shape = DirectConfig {
                    threads: a.direct.threads.unwrap_or(d.threads),
                    i_per_thread: a.direct.ipt.unwrap_or(d.i_per_thread),
                    unroll: a.direct.unroll.unwrap_or(d.unroll),
                };
                shape.check().map_err(Error::InvalidParameter)?;
                let solver = DirectSolver::with_config(&ctx.device, &state, a.eps, shape);
                let mut timer = PhaseTimer::new(&ctx, 1);
                let mut times = Vec::new();
                warm_up(&ctx, || {
                    let mut encoder = ctx.device.create_command_encoder(&Default::default());
                    solver.encode(&ctx.device, &mut encoder, None);
                    ctx.queue.submit(Some(encoder.finish()));
                })?;
                // One more untimed evaluation, then `repeat` timed ones.
                for rep in 0..=a.repeat {
                    let (wall_ms, gpu) = timed_run(&ctx, &mut timer, |encoder, timer| {
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
                let line = serde_json::json!({
                    "bench": "direct",
                    "precision": "f32",
                    "n": n,
                    "adapter": ctx.adapter_info.name,
                    "backend": format!("{:?}", ctx.adapter_info.backend),
                    "timing": if timer.enabled() { "gpu-timestamp" } else { "wall" },
                    "repeat": a.repeat,
                    "ms": ms,
                    "interactions_per_s": ips,
                    "gflops_at_20_flop": ips * 20.0 * 1e-9,
                    "threads": shape.threads,
                    "i_per_thread": shape.i_per_thread,
                    "unroll": shape.unroll,
                });
                println!("{line}");
            }
        }
    }
    Ok(())
}

/// Times whole leapfrog steps with the tree solver: per-phase GPU times
/// (median over `repeat` steps after one warm-up step), interactions and
/// GPU memory; one JSON line.
async fn bench_tree(
    ctx: &GpuContext,
    particles: &Particles,
    a: &BenchArgs,
    theta: f32,
) -> Result<()> {
    let config = SimConfig {
        solver: SolverKind::Tree,
        eps: a.eps,
        dt: a.dt,
        theta,
    };
    let mut sim = Simulation::new(ctx, particles, config, 0.0)?;
    let mut timer = PhaseTimer::new(ctx, 16);
    let mut phases: Vec<(&'static str, Vec<f64>)> = Vec::new();
    let mut walls = Vec::new();
    warm_up(ctx, || sim.step(ctx, 1))?;
    for rep in 0..=a.repeat {
        let (wall, times) = timed_run(ctx, &mut timer, |encoder, timer| {
            sim.encode_step(&ctx.device, encoder, Some(timer));
            Ok(())
        })
        .await?;
        sim.steps += 1;
        if rep == 0 {
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
    let Solver::Tree(tree) = sim.solver() else {
        unreachable!("configured as tree")
    };
    let counts = tree.interaction_counts(ctx).await?;
    let (pp, pc) = mean_interactions(&counts);
    let max_pp = counts.iter().map(|c| c.pp).max().unwrap_or(0);
    let max_pc = counts.iter().map(|c| c.pc).max().unwrap_or(0);
    let counters = tree.counters(ctx).await?;
    let mut phase_ms = serde_json::Map::new();
    let mut total = 0.0;
    let mut force = 0.0;
    for (label, mut v) in phases {
        let m = median(&mut v);
        total += m;
        if label != "integrate" {
            force += m;
        }
        phase_ms.insert(label.to_string(), m.into());
    }
    let n = particles.len() as f64;
    let bytes = tree.gpu_bytes();
    let line = serde_json::json!({
        "bench": "tree",
        "n": particles.len(),
        "theta": theta,
        "eps": a.eps,
        "adapter": ctx.adapter_info.name,
        "timing": if timer.enabled() { "gpu-timestamp" } else { "wall" },
        "repeat": a.repeat,
        "phase_ms": phase_ms,
        "force_ms": force,
        "step_gpu_ms": total,
        "step_wall_ms": median(&mut walls),
        "particles_per_s": n / (force * 1e-3),
        "pp_per_particle": pp,
        "pc_per_particle": pc,
        "max_pp": max_pp,
        "max_pc": max_pc,
        "cells": counters.cell_count,
        "groups": counters.group_count,
        "depth": counters.depth,
        "cell_overflow": counters.overflow != 0,
        "gpu_bytes": bytes,
        "bytes_per_particle": bytes as f64 / n,
    });
    println!("{line}");
    Ok(())
}

/// Records one run with `record`, submits it, waits for the GPU and returns
/// the wall time (ms) and the per-phase GPU times.
async fn timed_run(
    ctx: &GpuContext,
    timer: &mut PhaseTimer,
    record: impl FnOnce(&mut wgpu::CommandEncoder, &mut PhaseTimer) -> Result<()>,
) -> Result<(f64, Vec<(&'static str, f64)>)> {
    timer.reset();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    record(&mut encoder, timer)?;
    timer.resolve(&mut encoder);
    let clock = Instant::now();
    ctx.queue.submit(Some(encoder.finish()));
    wait_idle(ctx)?;
    let wall_ms = clock.elapsed().as_secs_f64() * 1e3;
    Ok((wall_ms, timer.read(ctx).await?))
}

/// Blocks until the GPU has finished all submitted work (native only).
fn wait_idle(ctx: &GpuContext) -> Result<()> {
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(|e| Error::Readback(e.to_string()))
}

/// Runs `work` until the GPU has been busy for a while, so that timed runs
/// see boost clocks rather than an idle GPU ramping up.
fn warm_up(ctx: &GpuContext, mut work: impl FnMut()) -> Result<()> {
    let clock = Instant::now();
    while clock.elapsed().as_secs_f64() < 0.5 {
        work();
        wait_idle(ctx)?;
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

#[derive(Args)]
struct RenderArgs {
    /// Snapshot to draw (.tipsy, .bonsai, .csv).
    input: String,
    /// Output image (.png).
    #[arg(short = 'o', long = "out")]
    out: String,
    /// Image width in pixels.
    #[arg(long, default_value_t = 800)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 600)]
    height: u32,
    /// Rotation about the vertical axis, radians (URL: yaw).
    #[arg(long, allow_negative_numbers = true)]
    yaw: Option<f32>,
    /// Elevation, radians (URL: pitch).
    #[arg(long, allow_negative_numbers = true)]
    pitch: Option<f32>,
    /// Distance from the target; without it the view is fitted to 90 % of
    /// the mass, as the web app does on import (URL: dist).
    #[arg(long)]
    distance: Option<f32>,
    /// Target point x, y, z (URL: tx, ty, tz).
    #[arg(long, num_args = 3, allow_negative_numbers = true, value_names = ["X", "Y", "Z"])]
    target: Option<Vec<f32>>,
    /// Vertical field of view, radians (URL: fov).
    #[arg(long)]
    fov: Option<f32>,
    /// Sprite diameter in pixels at the target's depth (URL: ps).
    #[arg(long)]
    point_size: Option<f32>,
    /// Brightness multiplier (URL: bright).
    #[arg(long)]
    brightness: Option<f32>,
    /// Colouring (URL: color).
    #[arg(long, value_enum, default_value_t = ColorMode::Speed)]
    color: ColorMode,
    /// Same sprite size at every depth (URL: atten=0).
    #[arg(long)]
    no_attenuation: bool,
    /// The solver whose potentials colour `--color potential` (and whose
    /// particle order the sprites are drawn in, as in the web app).
    #[command(flatten)]
    solver: SolverArgs,
}

/// Draws a snapshot offscreen with the web app's renderer and writes a PNG.
async fn render(a: RenderArgs) -> Result<()> {
    if !a.out.to_ascii_lowercase().ends_with(".png") {
        return Err(Error::InvalidParameter(format!(
            "'{}': the image is written as PNG, name it .png",
            a.out
        )));
    }
    let snap = snapshot::read_file(&a.input)?;
    let ctx = GpuContext::headless().await?;
    let p = &snap.particles;
    let config = SimConfig {
        solver: a.solver.solver,
        eps: a.solver.eps,
        dt: 1.0,
        theta: a.solver.theta,
    };
    crate::app::check_particle_count(&ctx, p.len() as u64, config.solver)?;
    // Creating the simulation computes the potentials, as in the browser.
    let sim = Simulation::new(&ctx, p, config, snap.time)?;
    let state = sim.state.read(&ctx).await?;
    let ranges = ColorRanges::of(&state.vel, Some(&state.acc_pot));
    let mut camera = Camera::default();
    let (center, radius) = crate::app::readout::view_sphere(&p.pos_mass);
    if let Some(fov) = a.fov {
        camera.fov_y = fov;
    }
    camera.fit(center, radius, a.width, a.height);
    camera.yaw = a.yaw.unwrap_or(camera.yaw);
    camera.pitch = a.pitch.unwrap_or(camera.pitch);
    camera.distance = a.distance.unwrap_or(camera.distance);
    if let Some(t) = &a.target {
        camera.target = [t[0], t[1], t[2]];
    }
    camera.point_size = a.point_size.unwrap_or(camera.point_size);
    camera.brightness = a.brightness.unwrap_or(camera.brightness);
    camera.size_attenuation = !a.no_attenuation;
    camera.color_mode = a.color;
    let tags = shell_tags(&p.pos_mass);
    let rgba = render_rgba(
        &ctx,
        &sim.state,
        &tags,
        &camera,
        ranges.for_mode(camera.color_mode),
        a.width,
        a.height,
    )
    .await?;
    let mut png_bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png_bytes, a.width, a.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let to_err = |e: png::EncodingError| Error::InvalidParameter(format!("PNG: {e}"));
        let mut writer = encoder.write_header().map_err(to_err)?;
        writer.write_image_data(&rgba).map_err(to_err)?;
    }
    snapshot::write_atomic(&a.out, &png_bytes)?;
    eprintln!(
        "wrote {} ({}x{}, {} particles, yaw {} pitch {} distance {} target {:?})",
        a.out,
        a.width,
        a.height,
        p.len(),
        camera.yaw,
        camera.pitch,
        camera.distance,
        camera.target
    );
    Ok(())
}

/// `bench hermite4|hermite6` (and `direct` with --active or --precision
/// ds): M active sinks against N sources with GPU prediction, j-splitting
/// and reduction; the median GPU time of the force passes (gather, force,
/// reduce) and of the prediction of all N.
async fn bench_hermite(a: BenchArgs) -> Result<()> {
    use crate::direct::hermite_force::{HermiteGpu, Order, Sinks};
    use crate::direct::predict::JState;
    let ctx = GpuContext::headless().await?;
    let order = match a.kind {
        BenchKind::Direct => Order::Two,
        BenchKind::Hermite4 => Order::Four,
        BenchKind::Hermite6 => Order::Six,
        BenchKind::Tree => unreachable!("bench_tree"),
    };
    let precision = a.direct.precision;
    for &n in &a.n {
        let p: Particles = Model::Plummer.generate(n, a.seed)?;
        let actives = if a.direct.active.is_empty() {
            vec![n]
        } else {
            a.direct.active.clone()
        };
        let ni_cap = actives.iter().copied().max().unwrap_or(n).min(n).max(1);
        let mut gpu = HermiteGpu::new(&ctx, n as u32, ni_cap as u32, a.eps as f64)?;
        let recs: Vec<_> = (0..n)
            .map(|k| {
                JState {
                    id: k as u32,
                    mass: p.pos_mass[k].mass as f64,
                    t0: 0.0,
                    pos: p.pos_mass[k].pos.map(f64::from),
                    vel: p.vel[k].vel.map(f64::from),
                    acc: [0.0; 3],
                    jerk: [0.0; 3],
                    snap: [0.0; 3],
                    crackle: [0.0; 3],
                }
                .record()
            })
            .collect();
        gpu.set_j(&(0..n as u32).collect::<Vec<_>>(), &recs);
        for &m in &actives {
            let m = m.clamp(1, n);
            // Spread the active block over the model, as block steps do.
            let active: Vec<u32> = (0..m).map(|k| (k * n / m) as u32).collect();
            let mut timer = PhaseTimer::new(&ctx, 2);
            let (mut force_ms, mut predict_ms) = (Vec::new(), Vec::new());
            for rep in 0..=a.repeat {
                // Advance the prediction time so nothing is cached.
                let t = rep as f64 / 1024.0;
                let (wall_ms, phases) = timed_run(&ctx, &mut timer, |encoder, timer| {
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
            let line = serde_json::json!({
                "bench": match a.kind {
                    BenchKind::Direct => "direct",
                    BenchKind::Hermite4 => "hermite4",
                    BenchKind::Hermite6 => "hermite6",
                    BenchKind::Tree => unreachable!("bench_tree"),
                },
                "precision": precision.name(),
                "n": n,
                "active": m,
                "adapter": ctx.adapter_info.name,
                "backend": format!("{:?}", ctx.adapter_info.backend),
                "timing": if timer.enabled() { "gpu-timestamp" } else { "wall" },
                "repeat": a.repeat,
                "ms": ms,
                "predict_ms": median(&mut predict_ms),
                "interactions_per_s": ips,
                "flop_per_interaction": flop,
                "gflops": ips * flop * 1e-9,
            });
            println!("{line}");
        }
    }
    Ok(())
}

/// `run --solver hermite4|hermite6`: block-step Hermite from the initial
/// state to --t-end, printing the energy error as it goes.
async fn run_hermite(a: RunArgs, order: Order) -> Result<()> {
    use crate::direct::hermite::{HermiteConfig, HermiteSimulation};
    if !(a.t_end.is_finite() && a.t_end >= 0.0) {
        return Err(Error::InvalidParameter(format!(
            "--t-end must be >= 0, got {}",
            a.t_end
        )));
    }
    let h = &a.hermite;
    let config = HermiteConfig {
        dt_max: h.dt_max,
        ..HermiteConfig::new(order, h.precision, h.eta, a.solver.eps as f64)
    };
    config.validate()?;
    let start = a.initial.load()?;
    if (start.time / h.dt_max).fract() != 0.0 {
        return Err(Error::InvalidParameter(format!(
            "the start time {} must be a multiple of --dt-max {}",
            start.time, h.dt_max
        )));
    }
    let ctx = GpuContext::headless().await?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let clock = Instant::now();
    let mut sim = HermiteSimulation::new(&ctx, &start.particles, config, start.time).await?;
    let (_, _, e0) = sim.energy().await?;
    eprintln!(
        "N = {}, {}, eta {}, precision {}, eps {}, dt_max {}, to t = {}",
        sim.n(),
        a.solver.solver.name(),
        h.eta,
        h.precision.name(),
        a.solver.eps,
        h.dt_max,
        a.t_end
    );
    let report = |sim: &HermiteSimulation, e: f64| {
        let line = serde_json::json!({
            "t": sim.time,
            "energy": e,
            "rel_energy_error": ((e - e0) / e0).abs(),
            "block_steps": sim.stats.block_steps,
            "force_evaluations": sim.stats.force_evaluations,
            "particles_per_level": sim.levels(),
            "wall_s": clock.elapsed().as_secs_f64(),
        });
        println!("{line}");
    };
    let mut target = start.time;
    loop {
        target = if h.log_every > 0.0 {
            (target + h.log_every).min(a.t_end)
        } else {
            a.t_end
        };
        sim.run_until(target).await?;
        let (_, _, e) = sim.energy().await?;
        report(&sim, e);
        if target >= a.t_end {
            break;
        }
    }
    eprintln!(
        "block steps {}, force evaluations {}, particle steps per level (dt = dt_max/2^k) {:?}",
        sim.stats.block_steps, sim.stats.force_evaluations, sim.stats.steps_per_level
    );
    if let Some(path) = &a.out {
        let (particles, pot) = sim.particles();
        let snap = Snapshot {
            time: sim.time,
            particles,
            softening: a.solver.eps,
            potential: Some(pot),
        };
        snapshot::write_file(path, &snap)?;
        eprintln!("wrote {path}");
    }
    Ok(())
}
