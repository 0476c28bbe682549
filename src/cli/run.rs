//! `webgrav run`: integrate a model, a snapshot or a checkpoint to
//! `--t-end` with any solver. On the way: the run log (JSON lines on
//! stdout and in `--log FILE`, every `--log-every`), a snapshot series
//! (`--snap-every` into `--snap-dir`, with an `index.json`), checkpoints
//! (`--checkpoint FILE`, every `--checkpoint-every`; Ctrl-C writes a final
//! one); at the end a summary on stderr and the end state in `--out`.

use super::{check_snapshot_output, check_time, emit, say, InitialArgs, SolverArgs};
use crate::error::{Error, Result};
use crate::gpu::timing::now_ms;
use crate::gpu::GpuContext;
use crate::hermite::State64;
use crate::run::schedule::{check_end, whole_steps};
use crate::run::{write_state, Readout, Run};
use crate::snapshot::{self, Format, Snapshot};
use clap::Args;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    initial: InitialArgs,
    #[command(flatten)]
    solver: SolverArgs,
    /// Global time step (N-body units) of the leapfrog solvers.
    #[arg(long, default_value_t = 1.0 / 128.0, allow_negative_numbers = true)]
    dt: f64,
    /// End time (N-body units): a whole number of steps (leapfrog) or of
    /// largest block steps (Hermite) after the start.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    t_end: f64,
    /// Log at these intervals of simulated time (0: only at the end;
    /// leapfrog: a whole number of steps): a JSON line on stdout and in
    /// --log.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    log_every: f64,
    /// Also write the run log to this file (JSON lines).
    #[arg(long)]
    log: Option<String>,
    /// Write a snapshot every this much simulated time (0: none) into
    /// --snap-dir, listed in its index.json.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    snap_every: f64,
    /// Directory of the snapshot series (created if missing).
    #[arg(long, default_value = "snapshots")]
    snap_dir: String,
    /// Format of the series: tipsy, bonsai or csv.
    #[arg(long, default_value = "bonsai")]
    snap_format: String,
    /// Name the series as Bonsai does (snap_TTTTT.TTTT-0, as its %010.4f), so Bonsai's tools
    /// read it; else snap_NNNNN.EXT.
    #[arg(long)]
    bonsai_names: bool,
    /// Checkpoint file (rewritten atomically at every --checkpoint-every and
    /// when the run is interrupted).
    #[arg(long)]
    checkpoint: Option<String>,
    /// Write the checkpoint every this much simulated time (0: only when
    /// interrupted).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    checkpoint_every: f64,
    /// Continue the run of this checkpoint (its solver and settings; the
    /// initial-condition and solver options are ignored).
    #[arg(long)]
    resume: Option<String>,
    /// Output snapshot (.tipsy, .bonsai or .csv).
    #[arg(long)]
    out: Option<String>,
}

/// Set by the first Ctrl-C while a run is under way: the run stops at the
/// next batch of steps and writes its checkpoint (a second Ctrl-C exits at
/// once).
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// A run is under way (Ctrl-C then asks it to stop instead of exiting).
pub static RUNNING: AtomicBool = AtomicBool::new(false);

/// Most events (log lines, snapshots, checkpoints) of one kind a run may
/// have: an interval so short that it would make more (or could not
/// advance time at all) is a mistake.
const MAX_EVENTS: f64 = 1e6;

/// Checks that the run ends where asked and that every interval advances
/// time in whole steps.
fn check_schedule(a: &RunArgs, start: f64, step: f64, hermite: bool) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidParameter(m));
    let span = a.t_end - start;
    let what = if hermite { "--dt-max" } else { "--dt" };
    check_end(start, a.t_end, step, "--t-end", what)?;
    for (flag, every) in [
        ("--log-every", a.log_every),
        ("--snap-every", a.snap_every),
        ("--checkpoint-every", a.checkpoint_every),
    ] {
        if every > 0.0 {
            if span / every > MAX_EVENTS || start + every == start {
                return bad(format!(
                    "{flag} {every} would make more than {MAX_EVENTS:e} outputs before t = {}",
                    a.t_end
                ));
            }
            if !hermite && whole_steps(every, step).is_none() {
                return bad(format!(
                    "{flag} {every} is not a whole number of --dt {step}"
                ));
            }
        }
    }
    Ok(())
}

/// The next time after `t` on the grid `start + k × every` (∞ without one).
fn next_on_grid(t: f64, start: f64, every: f64) -> f64 {
    if every <= 0.0 {
        return f64::INFINITY;
    }
    let k = ((t - start) / every + 1e-9).floor() + 1.0;
    start + k * every
}

/// Within rounding of `b`.
fn at(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// The snapshot series: numbered files and their index.
struct Series {
    dir: String,
    format: Format,
    bonsai_names: bool,
    /// (file, time, steps, N) of every snapshot written.
    entries: Vec<(String, f64, u64, usize)>,
    /// The input's particle types, kept in every file.
    types: Option<Vec<u8>>,
}

impl Series {
    fn new(a: &RunArgs) -> Result<Option<Self>> {
        if a.snap_every <= 0.0 {
            return Ok(None);
        }
        let format = Format::from_path(&format!("x.{}", a.snap_format))?;
        std::fs::create_dir_all(&a.snap_dir).map_err(|source| Error::Io {
            path: a.snap_dir.clone(),
            source,
        })?;
        let index = format!("{}/index.json", a.snap_dir);
        snapshot::check_output(&index, &[])?;
        Ok(Some(Self {
            dir: a.snap_dir.clone(),
            format,
            bonsai_names: a.bonsai_names,
            entries: Vec::new(),
            types: None,
        }))
    }

    /// Writes one snapshot and rewrites the index (atomically), so the
    /// index always lists exactly the files that are complete.
    fn write(&mut self, snap: &Snapshot, steps: u64, f64s: Option<&State64>) -> Result<()> {
        let typed;
        let snap = match (&self.types, &snap.types) {
            (Some(t), None) => {
                typed = Snapshot {
                    types: Some(t.clone()),
                    ..snap.clone()
                };
                &typed
            }
            _ => snap,
        };
        let ext = self.format.extension();
        let name = if self.bonsai_names {
            format!("snap_{:010.4}-0", snap.time)
        } else {
            format!("snap_{:05}.{ext}", self.entries.len())
        };
        let path = format!("{}/{name}", self.dir);
        if self.bonsai_names {
            // No extension to choose the format by: write it directly.
            snapshot::write_atomic(&path, &self.format.encode(snap))?;
        } else {
            write_state(&path, snap, f64s)?;
        }
        self.entries
            .push((name, snap.time, steps, snap.particles.len()));
        let index: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|(file, t, s, n)| serde_json::json!({"file": file, "time": t, "step": s, "n": n}))
            .collect();
        let doc = serde_json::json!({"format": self.format.extension(), "snapshots": index});
        snapshot::write_atomic(
            &format!("{}/index.json", self.dir),
            doc.to_string().as_bytes(),
        )
    }
}

pub async fn run(a: RunArgs) -> Result<()> {
    let inputs: Vec<&str> = a
        .initial
        .inputs()
        .into_iter()
        .chain(a.resume.as_deref())
        .collect();
    check_snapshot_output(&a.out, &inputs)?;
    for path in [&a.log, &a.checkpoint].into_iter().flatten() {
        snapshot::check_output(path, &inputs)?;
    }
    for (name, t) in [
        ("--t-end", a.t_end),
        ("--log-every", a.log_every),
        ("--snap-every", a.snap_every),
        ("--checkpoint-every", a.checkpoint_every),
    ] {
        check_time(name, t)?;
    }
    let mut series = Series::new(&a)?;
    let mut log = match &a.log {
        Some(path) => Some(std::fs::File::create(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?),
        None => None,
    };
    let ctx = GpuContext::headless().await?;
    say!("adapter: {}", ctx.adapter_summary());
    let clock = now_ms();
    let mut types = None;
    let mut run = match &a.resume {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let run = Run::resume(&ctx, &bytes, path).await?;
            say!(
                "resumed {path} at t = {} after {} steps",
                run.time(),
                run.steps()
            );
            run
        }
        None => {
            let config = a.solver.config(a.dt)?;
            let start = a.initial.load(&ctx, config.solver())?;
            types = start.types.clone();
            Run::new(&ctx, &start.particles, start.time, config).await?
        }
    };
    let p = *run.config().params();
    let step = if p.solver.is_hermite() {
        p.dt_max
    } else {
        p.dt
    };
    check_schedule(&a, run.time(), step, p.solver.is_hermite())?;
    if let Some(s) = series.as_mut() {
        s.types = types.clone();
    }
    RUNNING.store(true, Ordering::SeqCst);
    let result = integrate(&a, &ctx, &mut run, clock, &mut series, &mut log).await;
    RUNNING.store(false, Ordering::SeqCst);
    let mut full = None;
    let (state, outcome) = match result {
        Ok(Some(last)) => {
            full = last.state_f64;
            (Some(last.snapshot), Ok(()))
        }
        Ok(None) => {
            // Interrupted: the checkpoint is the state to keep.
            let path = a
                .checkpoint
                .clone()
                .or_else(|| a.out.as_ref().map(|o| format!("{o}.ckpt")))
                .unwrap_or_else(|| "webgrav-interrupted.ckpt".into());
            snapshot::write_atomic(&path, &run.checkpoint(&ctx).await?)?;
            say!(
                "interrupted at t = {}: wrote the checkpoint {path} (continue with --resume {path})",
                run.time()
            );
            (None, Ok(()))
        }
        Err(e @ Error::NonFinite { .. }) => (run.last_good().cloned(), Err(e)),
        Err(e) => (None, Err(e)),
    };
    let state = state.map(|s| Snapshot {
        types: s.types.or(types),
        ..s
    });
    if let (Some(path), Some(snap)) = (&a.out, &state) {
        let written = write_state(path, snap, full.as_ref())?;
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

/// Integrates to --t-end with the log, the series and the checkpoints;
/// the last read-out, or `None` when interrupted.
async fn integrate(
    a: &RunArgs,
    ctx: &GpuContext,
    run: &mut Run,
    clock: f64,
    series: &mut Option<Series>,
    log: &mut Option<std::fs::File>,
) -> Result<Option<Readout>> {
    let start = run.time();
    // The first read-out is the energy reference of the log (a resumed
    // run keeps the one of its checkpoint).
    let first = run.readout(ctx).await?;
    if let Some(s) = series.as_mut() {
        s.write(&first.snapshot, first.steps, first.state_f64.as_ref())?;
    }
    let p = *run.config().params();
    say!(
        "N = {}, solver {}, eps {}, {} from t = {start} to t = {}",
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
    let mut t = start;
    loop {
        let next_log = next_on_grid(t, start, a.log_every);
        let next_snap = next_on_grid(t, start, a.snap_every);
        let next_ckpt = next_on_grid(t, start, a.checkpoint_every);
        let target = next_log.min(next_snap).min(next_ckpt).min(a.t_end);
        let reached = run
            .run_to(ctx, target, |done, of| {
                bar.set_length(of);
                bar.set_position(done);
                !INTERRUPTED.load(Ordering::SeqCst)
            })
            .await?;
        if !reached || INTERRUPTED.load(Ordering::SeqCst) {
            bar.finish_and_clear();
            return Ok(None);
        }
        t = target;
        let end = at(t, a.t_end);
        let r = run.readout(ctx).await?;
        if at(t, next_log) || end {
            let line = log_line(&r, (now_ms() - clock) * 1e-3);
            emit(&line)?;
            if let Some(f) = log.as_mut() {
                use std::io::Write as _;
                writeln!(f, "{line}").map_err(|source| Error::Io {
                    path: a.log.clone().unwrap_or_default(),
                    source,
                })?;
            }
        }
        if let (true, Some(s)) = (at(t, next_snap), series.as_mut()) {
            s.write(&r.snapshot, r.steps, r.state_f64.as_ref())?;
        }
        if let (true, Some(path)) = (at(t, next_ckpt), &a.checkpoint) {
            snapshot::write_atomic(path, &run.checkpoint(ctx).await?)?;
        }
        if end {
            bar.finish_and_clear();
            report(&r, (now_ms() - clock) * 1e-3);
            return Ok(Some(r));
        }
    }
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
        "rel_energy_error_max": r.de_max,
        "virial_ratio": d.virial_ratio,
        "potential_sum": r.potential_sum.name(),
        "momentum": norm(d.momentum),
        "angular_momentum": norm(d.angular_momentum),
        "angular_momentum_change": norm(dl),
        "wall_s": wall_s,
    });
    if let Some(phases) = &r.phases {
        let ms: serde_json::Map<String, serde_json::Value> = phases
            .iter()
            .map(|(name, ms)| (name.to_string(), (*ms).into()))
            .collect();
        line["phase_ms"] = ms.into();
    }
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
    say!(
        "relative energy error |dE/E0| = {:.3e} (largest seen {:.3e})",
        r.energy_error(),
        r.de_max
    );
    if let Some(h) = &r.hermite {
        say!(
            "block steps {}, force evaluations {}, particle steps per level (dt = dt_max/2^k) {:?}",
            h.stats.block_steps,
            h.stats.force_evaluations,
            h.stats.steps_per_level
        );
    }
}
