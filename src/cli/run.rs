//! `webgrav run`: integrate a model or a snapshot to `--t-end` with any
//! solver; JSON lines of the run log on stdout (every `--log-every`, and at
//! the end), a human summary on stderr, the end state to `--out`.

use super::{check_snapshot_output, check_time, emit, say, InitialArgs, SolverArgs};
use crate::error::{Error, Result};
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
    #[arg(long, default_value_t = 1.0 / 128.0, allow_negative_numbers = true)]
    dt: f32,
    /// End time (N-body units): a whole number of steps (leapfrog) or of
    /// largest block steps (Hermite) after the start.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    t_end: f64,
    /// Print a JSON line of the run log at these intervals of simulated
    /// time (0: only at the end; leapfrog: a whole number of steps).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    log_every: f64,
    /// Output snapshot (.tipsy, .bonsai or .csv).
    #[arg(long)]
    out: Option<String>,
}

/// Whole multiples of `step` in `span`, if `span` is one (to 1e-9).
fn whole_steps(span: f64, step: f64) -> Option<u64> {
    let k = (span / step).round();
    ((span - k * step).abs() <= 1e-9 * span.abs().max(step)).then_some(k as u64)
}

/// Most log lines a run may print: a log interval so short that it would
/// print more (or could not advance time at all) is a mistake.
const MAX_LOG_LINES: f64 = 1e6;

/// Checks that the run ends where asked and that the log can advance.
fn check_schedule(a: &RunArgs, start: f64, hermite: bool) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidParameter(m));
    let span = a.t_end - start;
    if span < 0.0 {
        return bad(format!(
            "--t-end {} is before the start time {start} of the initial state",
            a.t_end
        ));
    }
    let (step, what) = if hermite {
        (a.solver.dt_max, "--dt-max")
    } else {
        (a.dt as f64, "--dt")
    };
    if whole_steps(span, step).is_none() {
        let k = (span / step).floor();
        return bad(format!(
            "--t-end {} is not a whole number of {what} {step} after the start {start}: \
             the run would stop short of it (e.g. --t-end {} or {})",
            a.t_end,
            start + k * step,
            start + (k + 1.0) * step
        ));
    }
    if a.log_every > 0.0 {
        if span / a.log_every > MAX_LOG_LINES || start + a.log_every == start {
            return bad(format!(
                "--log-every {} would print more than {MAX_LOG_LINES:e} lines before t = {}",
                a.log_every, a.t_end
            ));
        }
        if !hermite && whole_steps(a.log_every, step).is_none() {
            return bad(format!(
                "--log-every {} is not a whole number of --dt {step}",
                a.log_every
            ));
        }
    }
    Ok(())
}

pub async fn run(a: RunArgs) -> Result<()> {
    let inputs = a.initial.inputs();
    check_snapshot_output(&a.out, &inputs)?;
    check_time("--t-end", a.t_end)?;
    check_time("--log-every", a.log_every)?;
    let config = a.solver.config(a.dt)?;
    let ctx = GpuContext::headless().await?;
    say!("adapter: {}", ctx.adapter_summary());
    let start = a.initial.load(&ctx, config.solver())?;
    check_schedule(&a, start.time, config.solver().is_hermite())?;
    let clock = now_ms();
    let mut run = Run::new(&ctx, &start.particles, start.time, config).await?;
    let result = integrate(&a, &ctx, &mut run, start.time, clock).await;
    let (state, outcome) = match result {
        Ok(last) => (Some(last.snapshot), Ok(())),
        Err(e @ Error::NonFinite { .. }) => (run.last_good().cloned(), Err(e)),
        Err(e) => (None, Err(e)),
    };
    if let (Some(path), Some(snap)) = (&a.out, &state) {
        let written = snapshot::write_file(path, snap)?;
        if outcome.is_err() {
            say!(
                "wrote the last finite state (t = {}) to {path}, not the end state",
                snap.time
            );
        } else {
            say!("wrote {path}");
        }
        if let Some(side) = written.side_file {
            say!("wrote the particle ids to {side} (standard Tipsy has no id field)");
        }
    }
    outcome
}

/// Integrates to --t-end with the log; the last read-out.
async fn integrate(
    a: &RunArgs,
    ctx: &GpuContext,
    run: &mut Run,
    start: f64,
    clock: f64,
) -> Result<Readout> {
    let config = *run.config();
    // The first read-out is the energy reference of the log.
    run.readout(ctx).await?;
    let p = config.params();
    say!(
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
    let mut target = start;
    let last = loop {
        target = if a.log_every > 0.0 {
            (target + a.log_every).min(a.t_end)
        } else {
            a.t_end
        };
        run.run_to(ctx, target, |done, of| {
            bar.set_length(of);
            bar.set_position(done);
        })
        .await?;
        let r = run.readout(ctx).await?;
        emit(log_line(&r, (now_ms() - clock) * 1e-3))?;
        if target >= a.t_end {
            break r;
        }
    };
    bar.finish_and_clear();
    report(&last, (now_ms() - clock) * 1e-3);
    Ok(last)
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
    say!(
        "t = {:.6} after {} steps ({wall_s:.2} s wall)",
        r.snapshot.time,
        r.steps
    );
    say!(
        "E0 = {:.9}  E = {:.9}  (K = {:.6}, W = {:.6}, Q = {:.4})",
        e0.total,
        e1.total,
        e1.kinetic,
        e1.potential,
        e1.virial_ratio
    );
    say!("relative energy error |dE/E0| = {:.3e}", r.energy_error());
    if let Some(h) = &r.hermite {
        say!(
            "block steps {}, force evaluations {}, particle steps per level (dt = dt_max/2^k) {:?}",
            h.stats.block_steps,
            h.stats.force_evaluations,
            h.stats.steps_per_level
        );
    }
}
