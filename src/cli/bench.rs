//! `webgrav bench`: one JSON line per configuration, from the library's
//! benchmarks (`app::bench`, which the page's benchmark panel runs too).
//! `suite -n SIZE` is the page's set at the page's size, so its lines
//! compare with the page's (drop the file on the page).

use super::{emit, precision_parser};
use crate::app::bench::{self, BenchKind, BenchSpec, Host, KernelShape};
use crate::error::Result;
use crate::gpu::{DispatchSizing, GpuContext, SubgroupUse};
use crate::hermite::Precision;
use crate::state::Model;
use clap::{Args, ValueEnum};

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum BenchArg {
    /// The f32 direct-summation kernel alone.
    Direct,
    /// A whole leapfrog step with the tree solver, phase by phase.
    Tree,
    /// Hermite forces with jerk (GPU prediction + force + reduction).
    Hermite4,
    /// Hermite forces with jerk and snap.
    Hermite6,
    /// The page's frame: a tree step and the particles drawn offscreen at
    /// 1920x1080 (draw pass, frames per second, first frame).
    Frame,
    /// The benchmark page's set at size -n: direct, hermite4 and hermite6
    /// (ds) at N, the tree at 4N; the same lines the page prints.
    Suite,
}

#[derive(Args)]
pub struct BenchArgs {
    kind: BenchArg,
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
    /// The model benchmarked, generated on the GPU as `run` generates it
    /// (its default parameters).
    #[arg(long, default_value = "plummer", value_parser = parse_model)]
    model: Model,
    /// Opening angle(s) of `bench tree` (repeat the flag for several).
    #[arg(long, default_values_t = [0.75f32], allow_negative_numbers = true)]
    theta: Vec<f32>,
    /// Tolerance(s) of the acceleration MAC for `bench tree` (repeat the
    /// flag for several; 0: the opening angle MAC).
    #[arg(long, default_values_t = [0.0f32], allow_negative_numbers = true)]
    alpha: Vec<f32>,
    /// Time step of `bench tree`.
    #[arg(long, default_value_t = 1.0 / 64.0, allow_negative_numbers = true)]
    dt: f64,
    /// `bench tree`: build the tree every K steps, refit in between (phase
    /// times are then means over the timed steps; use a multiple of K for
    /// --repeat).
    #[arg(long, default_value_t = 1, value_name = "K")]
    rebuild: u32,
    /// Run the portable kernels even where the device offers a fast path
    /// (the tree walk's subgroup path), to compare the two.
    #[arg(long, conflicts_with = "subgroups")]
    portable: bool,
    /// Take the tree walk's subgroup path wherever the device offers it,
    /// also below the N from which it is taken by default.
    #[arg(long)]
    subgroups: bool,
    /// Dispatch the tree's GPU-sized work (levels, group boxes, walk) with
    /// indirect dispatches sized on the GPU instead of a fixed number of
    /// workgroups striding over it, to compare the two.
    #[arg(long)]
    indirect: bool,
    /// Leave f64 out of the shaders, as every browser must (WebGPU has no
    /// f64): `ds` then adds its interactions by double-single two-sums, as
    /// a page does, instead of to f64 sums.
    #[arg(long)]
    no_f64: bool,
    #[command(flatten)]
    direct: DirectBenchArgs,
}

/// Options of the direct-summation and Hermite benchmarks.
#[derive(Args)]
struct DirectBenchArgs {
    /// Arithmetic: f32, ds (double-single), ds-fast or dp (native f64
    /// where the adapter has it); ds, ds-fast and dp run the Hermite
    /// kernels.
    #[arg(long, value_parser = precision_parser(), default_value = "f32")]
    precision: Precision,
    /// Active particles (sinks) per evaluation; default all N. `direct`
    /// with --active (or a precision other than f32) runs the Hermite
    /// kernel without jerk, whose j-splitting keeps small blocks fast.
    #[arg(long)]
    active: Vec<usize>,
    /// Direct kernel shape: invocations per workgroup (tuning).
    #[arg(long)]
    threads: Option<u32>,
    /// Direct kernel shape: sinks per invocation (tuning).
    #[arg(long)]
    ipt: Option<u32>,
    /// Direct kernel shape: sources per loop trip, 1, 2, 4 or 8 (tuning).
    #[arg(long)]
    unroll: Option<u32>,
    /// Direct kernel: the acceleration only, no potential.
    #[arg(long)]
    acc_only: bool,
    /// Hermite kernels: workgroups the j-splitting aims for, one
    /// configuration per value (repeat the flag; tuning).
    #[arg(long)]
    split_target: Vec<u32>,
}

/// The configurations the arguments ask for, in order.
fn specs(a: &BenchArgs) -> Vec<BenchSpec> {
    let kind = match a.kind {
        BenchArg::Direct => BenchKind::Direct,
        BenchArg::Tree => BenchKind::Tree,
        BenchArg::Hermite4 => BenchKind::Hermite4,
        BenchArg::Hermite6 => BenchKind::Hermite6,
        BenchArg::Frame => BenchKind::Frame,
        BenchArg::Suite => {
            return a
                .n
                .iter()
                .flat_map(|&n| bench::suite(n, a.repeat))
                .collect()
        }
    };
    let (thetas, alphas) = if matches!(kind, BenchKind::Tree | BenchKind::Frame) {
        (a.theta.clone(), a.alpha.clone())
    } else {
        (vec![a.theta[0]], vec![a.alpha[0]])
    };
    let split_targets: Vec<Option<u32>> = if a.direct.split_target.is_empty() {
        vec![None]
    } else {
        a.direct.split_target.iter().map(|&t| Some(t)).collect()
    };
    let mut out = Vec::new();
    for &n in &a.n {
        for &split_target in &split_targets {
            for (&theta, &alpha) in thetas
                .iter()
                .flat_map(|t| alphas.iter().map(move |al| (t, al)))
            {
                out.push(BenchSpec {
                    repeat: a.repeat,
                    eps: a.eps,
                    seed: a.seed,
                    model: a.model,
                    theta,
                    alpha,
                    dt: a.dt,
                    rebuild: a.rebuild,
                    precision: a.direct.precision,
                    active: a.direct.active.clone(),
                    shape: KernelShape {
                        threads: a.direct.threads,
                        i_per_thread: a.direct.ipt,
                        unroll: a.direct.unroll,
                        acc_only: a.direct.acc_only,
                        split_target,
                    },
                    ..BenchSpec::new(kind, n)
                });
            }
        }
    }
    out
}

pub async fn bench(a: BenchArgs) -> Result<()> {
    let specs = specs(&a);
    // Bad settings (ε, Δt, θ) are refused before the GPU is opened.
    for s in &specs {
        s.config()?;
    }
    let mut ctx = GpuContext::headless().await?;
    if a.portable {
        ctx.subgroups = SubgroupUse::Never;
    } else if a.subgroups {
        ctx.subgroups = SubgroupUse::Always;
    }
    if a.indirect {
        ctx.dispatch_sizing = DispatchSizing::Indirect;
    }
    if a.no_f64 {
        ctx.has_f64 = false;
    }
    let host = Host::native();
    for s in &specs {
        bench::run(&ctx, s, &host, &mut |line| emit(line)).await?;
    }
    Ok(())
}

fn parse_model(name: &str) -> std::result::Result<Model, String> {
    Model::from_name(name).map_err(|e| e.to_string())
}
