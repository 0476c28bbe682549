//! `webgrav run`: integrate a model or a snapshot to `--t-end` with any
//! solver; JSON lines of the run log on stdout (every `--log-every`, and at
//! the end), a human summary on stderr, the end state to `--out`.

use super::{check_output_path, check_time, InitialArgs, SolverArgs};
use crate::error::Result;
use crate::gpu::timing::now_ms;
use crate::gpu::GpuContext;
use crate::run::{Readout, Run};
use crate::snapshot;
use clap::Args;

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    initial: InitialArgs,
    #[command(flatten)]
    solver: SolverArgs,
    /// Global time step (N-body units) of the leapfrog solvers.
    #[arg(long, default_value_t = 1.0 / 128.0)]
    dt: f32,
    /// End time (N-body units).
    #[arg(long, default_value_t = 1.0)]
    t_end: f64,
    /// Print a JSON line of the run log at these intervals of simulated
    /// time (0: only at the end).
    #[arg(long, default_value_t = 0.0)]
    log_every: f64,
    /// Output snapshot (.tipsy, .bonsai or .csv).
    #[arg(long)]
    out: Option<String>,
}

pub async fn run(a: RunArgs) -> Result<()> {
    check_output_path(&a.out)?;
    check_time("--t-end", a.t_end)?;
    check_time("--log-every", a.log_every)?;
    let config = a.solver.config(a.dt)?;
    let start = a.initial.load()?;
    let ctx = GpuContext::headless().await?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let clock = now_ms();
    let mut run = Run::new(&ctx, &start.particles, start.time, config).await?;
    // The first read-out is the energy reference of the log.
    run.readout(&ctx).await?;
    let p = config.params();
    eprintln!(
        "N = {}, solver {}, eps {}, {} to t = {}",
        run.n(),
        p.solver.name(),
        p.eps,
        if p.solver.is_hermite() {
            format!(
                "eta {}, precision {}, dt_max {}",
                p.eta,
                p.precision.name(),
                p.dt_max
            )
        } else {
            format!("dt {}", p.dt)
        },
        a.t_end
    );
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {per_sec}, eta {eta}")
            .expect("static template"),
    );
    let mut target = start.time;
    let last = loop {
        target = if a.log_every > 0.0 {
            (target + a.log_every).min(a.t_end)
        } else {
            a.t_end
        };
        run.run_to(&ctx, target, |done, of| {
            bar.set_length(of);
            bar.set_position(done);
        })
        .await?;
        let r = run.readout(&ctx).await?;
        println!("{}", log_line(&r, (now_ms() - clock) * 1e-3));
        if target >= a.t_end {
            break r;
        }
    };
    bar.finish_and_clear();
    report(&last, (now_ms() - clock) * 1e-3);
    if let Some(path) = &a.out {
        snapshot::write_file(path, &last.snapshot)?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// One JSON line of the run log.
fn log_line(r: &Readout, wall_s: f64) -> serde_json::Value {
    let d = &r.diagnostics;
    let dl = std::array::from_fn(|k| d.angular_momentum[k] - r.e0.angular_momentum[k]);
    let mut line = serde_json::json!({
        "t": r.snapshot.time,
        "steps": r.steps,
        "energy": d.total,
        "kinetic": d.kinetic,
        "potential": d.potential,
        "rel_energy_error": r.energy_error(),
        "virial_ratio": d.virial_ratio,
        "momentum": norm(d.momentum),
        "angular_momentum_change": norm(dl),
        "wall_s": wall_s,
    });
    if let Some(h) = &r.hermite {
        line["block_steps"] = h.stats.block_steps.into();
        line["force_evaluations"] = h.stats.force_evaluations.into();
        line["particles_per_level"] = h.levels.clone().into();
    }
    if let Some((pp, pc)) = r.interactions {
        line["pp_per_particle"] = pp.into();
        line["pc_per_particle"] = pc.into();
    }
    line
}

fn report(r: &Readout, wall_s: f64) {
    let (e0, e1) = (&r.e0, &r.diagnostics);
    eprintln!(
        "t = {:.6} after {} steps ({wall_s:.2} s wall)",
        r.snapshot.time, r.steps
    );
    eprintln!(
        "E0 = {:.9}  E = {:.9}  (K = {:.6}, W = {:.6}, Q = {:.4})",
        e0.total, e1.total, e1.kinetic, e1.potential, e1.virial_ratio
    );
    eprintln!("relative energy error |dE/E0| = {:.3e}", r.energy_error());
    if let Some(h) = &r.hermite {
        eprintln!(
            "block steps {}, force evaluations {}, particle steps per level (dt = dt_max/2^k) {:?}",
            h.stats.block_steps, h.stats.force_evaluations, h.stats.steps_per_level
        );
    }
}
