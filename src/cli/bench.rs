//! `webgrav bench`: one JSON line per configuration. `tree` times whole
//! leapfrog steps of a `run::Run` phase by phase; `direct` and
//! `hermite4|6` time the force kernels alone (kernel shapes and active
//! block sizes are what they tune).

use super::{emit, precision_parser};
use crate::app::{check_device_particle_count, check_host_memory};
use crate::direct::{DirectConfig, DirectSolver};
use crate::error::{Error, Result};
use crate::gpu::timing::{now_ms, timed_run, PhaseTimer};
use crate::gpu::GpuContext;
use crate::hermite::{Body, HermiteGpu, Order, Precision, Sinks};
use crate::run::{mean_interactions, Run, RunConfig, RunParams, SolverKind};
use crate::state::stats::median;
use crate::state::{GpuParticles, Model, Particles};
use clap::{Args, ValueEnum};

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
pub struct BenchArgs {
    kind: BenchKind,
    /// Number of particles (repeat the flag for several sizes).
    #[arg(short = 'n', long = "n", default_values_t = [65536usize])]
    n: Vec<usize>,
    /// Timed repetitions per size (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    eps: f32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Opening angle(s) of `bench tree` (repeat the flag for several).
    #[arg(long, default_values_t = [0.75f32], allow_negative_numbers = true)]
    theta: Vec<f32>,
    /// Time step of `bench tree`.
    #[arg(long, default_value_t = 1.0 / 64.0, allow_negative_numbers = true)]
    dt: f64,
    #[command(flatten)]
    direct: DirectBenchArgs,
}

/// Options of the direct-summation and Hermite benchmarks.
#[derive(Args)]
struct DirectBenchArgs {
    /// Arithmetic: f32, ds (double-single) or dp (native f64 where the
    /// adapter has it); ds and dp run the Hermite kernels.
    #[arg(long, value_parser = precision_parser(), default_value = "f32")]
    precision: Precision,
    /// Active particles (sinks) per evaluation; default all N. `direct`
    /// with --active (or --precision ds or dp) runs the Hermite kernel without
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

pub async fn bench(a: BenchArgs) -> Result<()> {
    // The same table as every run checks ε, Δt and θ.
    for &theta in &a.theta {
        tree_config(&a, theta)?;
    }
    let ctx = GpuContext::headless().await?;
    let hermite = matches!(a.kind, BenchKind::Hermite4 | BenchKind::Hermite6)
        || (a.kind == BenchKind::Direct
            && (a.direct.precision != Precision::F32 || !a.direct.active.is_empty()));
    for &n in &a.n {
        let solver = match a.kind {
            BenchKind::Tree => SolverKind::Tree,
            BenchKind::Hermite4 | BenchKind::Hermite6 => SolverKind::Hermite4,
            BenchKind::Direct => SolverKind::Direct,
        };
        check_device_particle_count(&ctx, n as u64, solver)?;
        check_host_memory(n as u64)?;
        let particles: Particles = Model::Plummer.generate(n, a.seed)?;
        if hermite {
            bench_hermite(&ctx, &particles, &a).await?;
        } else if a.kind == BenchKind::Tree {
            for &theta in &a.theta {
                bench_tree(&ctx, &particles, &a, theta).await?;
            }
        } else {
            bench_direct(&ctx, &particles, &a).await?;
        }
    }
    Ok(())
}

/// The run configuration of `bench tree` at opening angle `theta`.
fn tree_config(a: &BenchArgs, theta: f32) -> Result<RunConfig> {
    RunParams {
        solver: SolverKind::Tree,
        eps: a.eps,
        dt: a.dt,
        theta,
        ..RunParams::default()
    }
    .validate()
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

/// The keys every kernel benchmark line has.
#[allow(clippy::too_many_arguments)]
fn kernel_line(
    ctx: &GpuContext,
    bench: &str,
    precision: Precision,
    n: usize,
    timer: &PhaseTimer,
    repeat: u32,
    ms: f64,
    interactions_per_s: f64,
) -> serde_json::Value {
    serde_json::json!({
        "bench": bench,
        "precision": precision.name(),
        "n": n,
        "adapter": ctx.adapter_info.name,
        "backend": format!("{:?}", ctx.adapter_info.backend),
        "timing": if timer.enabled() { "gpu-timestamp" } else { "wall" },
        "repeat": repeat,
        "ms": ms,
        "interactions_per_s": interactions_per_s,
    })
}

/// The f32 direct-summation kernel of one shape on all N particles.
async fn bench_direct(ctx: &GpuContext, particles: &Particles, a: &BenchArgs) -> Result<()> {
    let n = particles.len();
    let state = GpuParticles::upload(ctx, particles)?;
    let d = DirectConfig::for_n(n as u32);
    let shape = DirectConfig {
        threads: a.direct.threads.unwrap_or(d.threads),
        i_per_thread: a.direct.ipt.unwrap_or(d.i_per_thread),
        unroll: a.direct.unroll.unwrap_or(d.unroll),
    };
    shape.check().map_err(Error::InvalidParameter)?;
    // The kernel alone: one dispatch, however long (this times it).
    let solver = DirectSolver::with_config(&ctx.device, &state, a.eps, shape, f64::INFINITY);
    let mut timer = PhaseTimer::new(ctx, 1);
    let mut times = Vec::new();
    warm_up(ctx, || {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        solver.encode(&ctx.device, &mut encoder, None);
        ctx.queue.submit(Some(encoder.finish()));
    })
    .await?;
    // One more untimed evaluation, then `repeat` timed ones.
    for rep in 0..=a.repeat {
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
    let mut line = kernel_line(ctx, "direct", Precision::F32, n, &timer, a.repeat, ms, ips);
    line["gflops_at_20_flop"] = (ips * 20.0 * 1e-9).into();
    line["threads"] = shape.threads.into();
    line["i_per_thread"] = shape.i_per_thread.into();
    line["unroll"] = shape.unroll.into();
    emit(line)?;
    Ok(())
}

/// Times whole leapfrog steps of a tree run: per-phase GPU times (median
/// over `repeat` steps after one warm-up step, each submitted and waited
/// for alone: `step_wall_ms`), the wall time per step of 32 steps run as
/// a run runs them (`steady_step_wall_ms`), interactions and GPU memory;
/// one JSON line.
async fn bench_tree(
    ctx: &GpuContext,
    particles: &Particles,
    a: &BenchArgs,
    theta: f32,
) -> Result<()> {
    let config = tree_config(a, theta)?;
    let mut run = Run::new(ctx, particles, 0.0, config).await?;
    let mut phases: Vec<(&'static str, Vec<f64>)> = Vec::new();
    let mut walls = Vec::new();
    let mut timed = false;
    warm_up(ctx, || run.queue(ctx, 1)).await?;
    for rep in 0..=a.repeat {
        let (wall, times) = run.timed_step(ctx).await?;
        timed = !times.is_empty();
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
    // Steps as a run takes them (batches of 16 in one submission, waited
    // for at the batch's end, no timestamps): the wall time per step that
    // production runs see, and what the host adds to the GPU's time.
    const STEADY_STEPS: u32 = 32;
    let dt = run.config().params().dt;
    let t_end = run.time() + STEADY_STEPS as f64 * dt;
    let start = std::time::Instant::now();
    run.run_to(ctx, t_end, |_, _| true).await?;
    let steady_ms = start.elapsed().as_secs_f64() * 1e3 / STEADY_STEPS as f64;
    let tree = run
        .tree_stats(ctx)
        .await?
        .expect("a tree run has tree statistics");
    let (pp, pc) = mean_interactions(&tree.interactions);
    let max_pp = tree.interactions.iter().map(|c| c.pp).max().unwrap_or(0);
    let max_pc = tree.interactions.iter().map(|c| c.pc).max().unwrap_or(0);
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
    let c = &tree.counters;
    let line = serde_json::json!({
        "bench": "tree",
        "n": particles.len(),
        "theta": theta,
        "eps": a.eps,
        "adapter": ctx.adapter_info.name,
        "timing": if timed { "gpu-timestamp" } else { "wall" },
        "repeat": a.repeat,
        "phase_ms": phase_ms,
        "force_ms": force,
        "step_gpu_ms": total,
        "step_wall_ms": median(&mut walls),
        "steady_step_wall_ms": steady_ms,
        "steady_host_ms": steady_ms - total,
        "particles_per_s": n / (force * 1e-3),
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
    });
    emit(line)?;
    Ok(())
}

/// `bench hermite4|hermite6` (and `direct` with --active or --precision
/// ds): M active sinks against N sources with GPU prediction, j-splitting
/// and reduction; the median GPU time of the force passes (gather, force,
/// reduce) and of the prediction of all N.
async fn bench_hermite(ctx: &GpuContext, p: &Particles, a: &BenchArgs) -> Result<()> {
    let (order, name) = match a.kind {
        BenchKind::Hermite4 => (Order::Four, "hermite4"),
        BenchKind::Hermite6 => (Order::Six, "hermite6"),
        _ => (Order::Two, "direct"),
    };
    let precision = a.direct.precision;
    let n = p.len();
    let actives = if a.direct.active.is_empty() {
        vec![n]
    } else {
        a.direct.active.clone()
    };
    let ni_cap = actives.iter().copied().max().unwrap_or(n).min(n).max(1);
    let mut gpu = HermiteGpu::new(ctx, n as u32, ni_cap as u32, a.eps as f64)?;
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
    for &m in &actives {
        let m = m.clamp(1, n);
        // Spread the active block over the model, as block steps do.
        let active: Vec<u32> = (0..m).map(|k| (k * n / m) as u32).collect();
        let mut timer = PhaseTimer::new(ctx, 2);
        let (mut force_ms, mut predict_ms) = (Vec::new(), Vec::new());
        for rep in 0..=a.repeat {
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
        let mut line = kernel_line(ctx, name, precision, n, &timer, a.repeat, ms, ips);
        line["active"] = m.into();
        line["predict_ms"] = median(&mut predict_ms).into();
        line["flop_per_interaction"] = flop.into();
        line["gflops"] = (ips * flop * 1e-9).into();
        emit(line)?;
    }
    Ok(())
}
