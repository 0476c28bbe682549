//! The native CLI: `run`, `forces`, `bench`, `convert`, `info`.

use crate::direct::hermite_force::{Order, Precision};
use crate::direct::{DirectConfig, DirectSolver};
use crate::error::{Error, Result};
use crate::gpu::timing::PhaseTimer;
use crate::gpu::GpuContext;
use crate::sim::{Diagnostics, GpuParticles, Model, Particles, SimConfig, Simulation, SolverKind};
use crate::snapshot::{self, Snapshot};
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
    /// Output CSV: id,x,y,z,m,ax,ay,az,pot.
    #[arg(long)]
    out: String,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum BenchKind {
    Direct,
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
        Command::Bench(a) if a.kind != BenchKind::Direct => bench_hermite(a).await,
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
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Readback(e.to_string()))?;
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
    let start = a.initial.load()?;
    let ctx = GpuContext::headless().await?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let state = GpuParticles::upload(&ctx, &start.particles)?;
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    match a.solver.solver {
        // Forces of one state: the same direct sum for every direct solver.
        SolverKind::Direct | SolverKind::Hermite4 | SolverKind::Hermite6 => DirectSolver::new(
            &ctx.device,
            &state,
            a.solver.eps,
        )
        .encode(&ctx.device, &mut encoder, None),
    }
    ctx.queue.submit(Some(encoder.finish()));
    let acc = state.read_acc_pot(&ctx).await?;
    let bytes = snapshot::csv::encode_forces(&start.particles.id, &start.particles.pos_mass, &acc);
    snapshot::write_atomic(&a.out, &bytes)?;
    eprintln!("wrote forces of {} particles to {}", acc.len(), a.out);
    Ok(())
}

async fn bench(a: BenchArgs) -> Result<()> {
    let ctx = GpuContext::headless().await?;
    for &n in &a.n {
        let particles: Particles = Model::Plummer.generate(n, a.seed)?;
        let state = GpuParticles::upload(&ctx, &particles)?;
        match a.kind {
            BenchKind::Hermite4 | BenchKind::Hermite6 => unreachable!("bench_hermite"),
            BenchKind::Direct => {
                let d = DirectConfig::for_n(n as u32);
                let shape = DirectConfig {
                    threads: a.direct.threads.unwrap_or(d.threads),
                    i_per_thread: a.direct.ipt.unwrap_or(d.i_per_thread),
                    unroll: a.direct.unroll.unwrap_or(d.unroll),
                };
                let solver = DirectSolver::with_config(&ctx.device, &state, a.eps, shape);
                let mut timer = PhaseTimer::new(&ctx, 1);
                let mut times = Vec::new();
                // One untimed warm-up, then `repeat` timed evaluations.
                for rep in 0..=a.repeat {
                    timer.reset();
                    let mut encoder = ctx.device.create_command_encoder(&Default::default());
                    solver.encode(&ctx.device, &mut encoder, Some(&mut timer));
                    timer.resolve(&mut encoder);
                    let clock = Instant::now();
                    ctx.queue.submit(Some(encoder.finish()));
                    ctx.device
                        .poll(wgpu::PollType::wait_indefinitely())
                        .map_err(|e| Error::Readback(e.to_string()))?;
                    let wall_ms = clock.elapsed().as_secs_f64() * 1e3;
                    let gpu = timer.read(&ctx).await?;
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

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
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
                timer.reset();
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                // Advance the prediction time so nothing is cached.
                let t = rep as f64 / 1024.0;
                gpu.encode(
                    &mut encoder,
                    t,
                    Sinks::Active(&active),
                    order,
                    precision,
                    Some(&mut timer),
                )?;
                timer.resolve(&mut encoder);
                let clock = Instant::now();
                ctx.queue.submit(Some(encoder.finish()));
                ctx.device
                    .poll(wgpu::PollType::wait_indefinitely())
                    .map_err(|e| Error::Readback(e.to_string()))?;
                let wall_ms = clock.elapsed().as_secs_f64() * 1e3;
                let phases = timer.read(&ctx).await?;
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
