//! `webgrav run`: integrate a model, a snapshot or a checkpoint to
//! `--t-end` with any solver. On the way: the run log (JSON lines on
//! stdout and in `--log FILE`, every `--log-every`), a snapshot series
//! (`--snap-every` into `--snap-dir`, with an `index.json`), checkpoints
//! (`--checkpoint FILE`, every `--checkpoint-every`; a signal writes a
//! final one, `interrupt`); at the end a summary on stderr and the end
//! state in `--out`. Every input and output is checked before the GPU is
//! opened, and the log and the series are touched only once the run
//! starts. A resumed run (`--resume`) continues the log, the series
//! (`series`) and the output grid of the run that wrote its checkpoint.

use super::interrupt::{self, Phase};
use super::series::{is_series_name, Series};
use super::{
    check_distinct_outputs, check_snapshot_output, check_time, emit, location, say, InitialArgs,
    SolverArgs, StepArgs,
};
use crate::app::host;
use crate::app::series::Naming;
use crate::error::{Error, Result};
use crate::gpu::timing::now_ms;
use crate::gpu::GpuContext;
use crate::run::block::Timesteps;
use crate::run::checkpoint::Checkpoint;
use crate::run::params::RunParams;
use crate::run::schedule::{at, check_end, next_on_grid, on_grid, shown, whole_steps};
use crate::run::SolverKind;
use crate::run::{write_state, Measured, Readout, Run};
use crate::snapshot::{self, Format, Snapshot};
use crate::state::energy::{PotentialRule, PotentialSum};
use crate::state::share::RankShare;
use clap::{Args, ValueEnum};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub(super) initial: InitialArgs,
    #[command(flatten)]
    pub(super) solver: SolverArgs,
    #[command(flatten)]
    pub(super) step: StepArgs,
    /// End time (N-body units): a whole number of steps (leapfrog) or of
    /// largest block steps (Hermite) after the start.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub(super) t_end: f64,
    /// Log at these intervals of simulated time (0: only at the end;
    /// leapfrog: a whole number of steps): a JSON line on stdout and in
    /// --log. Logs, snapshots and checkpoints fall on the grid of the
    /// run's start time, also after a resume.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub(super) log_every: f64,
    /// The potential behind the reported energies: auto (the precise N²
    /// sum where it costs no more than a few steps: tree runs up to 4096
    /// particles, direct ones up to 2^17, Hermite always; else the
    /// solver's own), solver (the solver's own always) or exact (the
    /// precise sum always, N² work a report: to compare runs whose
    /// solvers differ, such as a tree on one GPU and on several).
    #[arg(long, value_enum, default_value_t = PotentialArg::Auto)]
    pub(super) potential_sum: PotentialArg,
    /// Also write the run log to this file (JSON lines): replaced when a
    /// new run starts, continued by a resumed one (its lines after the
    /// checkpoint's time dropped).
    #[arg(long)]
    pub(super) log: Option<String>,
    /// Write a snapshot every this much simulated time (0: none) into
    /// --snap-dir, listed in its index.json.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub(super) snap_every: f64,
    /// Directory of the snapshot series (created if missing). A new run
    /// refuses one that holds a series; a resumed run continues its own.
    #[arg(long, default_value = "snapshots")]
    pub(super) snap_dir: String,
    /// Format of the series: tipsy, bonsai, csv, gadget, hdf5 (GADGET-4's
    /// layout) or swift-hdf5.
    #[arg(long, default_value = "bonsai")]
    pub(super) snap_format: String,
    /// Name the series as Bonsai does (snap_TTTTT.TTTT-0, as its %010.4f), so Bonsai's tools
    /// read it; else snap_NNNNN.EXT.
    #[arg(long)]
    pub(super) bonsai_names: bool,
    /// Checkpoint file (rewritten atomically at every --checkpoint-every and
    /// when the run is interrupted); it may be the --resume file.
    #[arg(long)]
    pub(super) checkpoint: Option<String>,
    /// Write the checkpoint every this much simulated time (0: only when
    /// interrupted).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub(super) checkpoint_every: f64,
    /// Continue the run of this checkpoint, with its particles, solver and
    /// settings (initial-condition and solver options are refused).
    #[arg(long)]
    pub(super) resume: Option<String>,
    /// Output snapshot (.tipsy, .bonsai or .csv).
    #[arg(long)]
    pub(super) out: Option<String>,
    /// A run on several ranks (under mpirun) redraws its domains every
    /// this many steps (0: only at the start); by default when the time
    /// the steps lose to the domains' drift exceeds a redraw's cost. A
    /// resumed run takes it anew.
    #[arg(long)]
    pub(super) redraw_every: Option<u64>,
    /// The arguments given on the command line (ids), which `--resume`
    /// checks; filled by `cli::main`.
    #[arg(skip)]
    pub given: Vec<String>,
}

/// `--potential-sum`'s choices (`state::energy::PotentialRule`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(super) enum PotentialArg {
    #[default]
    Auto,
    Solver,
    Exact,
}

impl PotentialArg {
    pub(super) fn rule(self) -> PotentialRule {
        match self {
            PotentialArg::Auto => PotentialRule::Auto,
            PotentialArg::Solver => PotentialRule::Solver,
            PotentialArg::Exact => PotentialRule::Exact,
        }
    }
}

/// Most events (log lines, snapshots, checkpoints) of one kind a run may
/// have: an interval so short that it would make more (or could not
/// advance time at all) is a mistake.
const MAX_EVENTS: f64 = 1e6;

/// Checks that the run ends where asked and that every interval advances
/// time in whole steps.
fn check_schedule(a: &RunArgs, start: f64, p: &RunParams) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidParameter(m));
    let hermite = p.solver.is_hermite();
    let step = if hermite { p.dt_max } else { p.dt };
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
                    "{flag} {} would make more than {MAX_EVENTS:e} outputs before t = {}",
                    shown(every),
                    shown(a.t_end)
                ));
            }
            if !hermite && whole_steps(every, step).is_none() {
                return bad(format!(
                    "{flag} {} is not a whole number of --dt {}",
                    shown(every),
                    shown(step)
                ));
            }
        }
    }
    // A tree with shared steps builds every K steps and refits between;
    // a resume builds at its first step, so checkpoints fall on builds.
    let shared_tree = p.solver == SolverKind::Tree && p.timesteps == Timesteps::Shared;
    if shared_tree && p.rebuild > 1 && a.checkpoint_every > 0.0 {
        let steps = whole_steps(a.checkpoint_every, step).unwrap_or(0);
        if !steps.is_multiple_of(p.rebuild as u64) {
            return bad(format!(
                "--checkpoint-every {} is {steps} steps, not a whole number of tree builds \
                 (--rebuild {} × --dt {step} = {}): a checkpoint between two builds would \
                 make the resumed run build where this one refits; use a multiple of {}",
                a.checkpoint_every,
                p.rebuild,
                p.rebuild as f64 * step,
                p.rebuild as f64 * step
            ));
        }
    }
    Naming::bonsai_if(a.bonsai_names).check(start, a.snap_every, a.t_end)
}

/// `--resume` continues the checkpoint's run as it was: its particles,
/// solver and settings. An initial-condition or solver option (or
/// `--dt`) given with it would be ignored, so it is refused instead.
fn refuse_overrides_of_resume(a: &RunArgs) -> Result<()> {
    let held: Vec<String> = [
        InitialArgs::augment_args(clap::Command::new("initial")),
        SolverArgs::augment_args(clap::Command::new("solver")),
        StepArgs::augment_args(clap::Command::new("step")),
    ]
    .iter()
    .flat_map(|c| c.get_arguments().map(|arg| arg.get_id().to_string()))
    .collect();
    let all = RunArgs::augment_args(clap::Command::new("run"));
    let refused: Vec<String> = all
        .get_arguments()
        .filter(|arg| {
            let id = arg.get_id().as_str();
            held.iter().any(|h| h == id) && a.given.iter().any(|g| g == id)
        })
        .map(|arg| match (arg.get_short(), arg.get_long()) {
            (Some(short), _) => format!("-{short}"),
            (None, Some(long)) => format!("--{long}"),
            (None, None) => arg.get_id().to_string(),
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(Error::InvalidParameter(format!(
        "--resume continues the checkpoint's run with its own particles, solver and \
         settings, which are kept: leave out {} (to change them, start a new run from a \
         snapshot of the state with --in)",
        refused.join(", ")
    )))
}

/// No two outputs of the run are one file (a side file of --out's
/// included), and none is a file of the snapshot series.
fn check_outputs_apart(a: &RunArgs) -> Result<()> {
    let mut outputs: Vec<(&str, String)> = Vec::new();
    if let Some(out) = &a.out {
        outputs.push(("--out", out.clone()));
        let format = Format::from_path(out)?;
        if format == Format::Tipsy {
            outputs.push(("--out's id file", snapshot::iord::side_path(out)));
        }
        // Every Tipsy flavour's write replaces or removes its kinds file.
        if format.tipsy_flavor().is_some() {
            outputs.push(("--out's kinds file", snapshot::iord::kinds_path(out)));
        }
    }
    for (flag, path) in [("--checkpoint", &a.checkpoint), ("--log", &a.log)] {
        if let Some(p) = path {
            outputs.push((flag, p.clone()));
        }
    }
    let named: Vec<(&str, &str)> = outputs.iter().map(|(f, p)| (*f, p.as_str())).collect();
    check_distinct_outputs(&named)?;
    let series_dir = (a.snap_every > 0.0).then(|| location(&a.snap_dir));
    for (flag, path) in &outputs {
        let here = location(path);
        let name = here.file_name().unwrap_or_default().to_string_lossy();
        if series_dir.as_deref() == here.parent() && is_series_name(&name) {
            return Err(Error::InvalidParameter(format!(
                "{flag} '{path}' is a file of the snapshot series in --snap-dir '{}'; choose \
                 another name or directory",
                a.snap_dir
            )));
        }
    }
    Ok(())
}

/// `base`, or `STEM-1.ckpt`, `STEM-2.ckpt`, … : the first that does not
/// exist (an interrupted run's fallback checkpoint overwrites nothing).
fn free_name(base: &str) -> String {
    let stem = base.strip_suffix(".ckpt").unwrap_or(base);
    std::iter::once(base.to_string())
        .chain((1..).map(|k| format!("{stem}-{k}.ckpt")))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .expect("some name is free")
}

/// Refuses a --log that a resume cannot read back (it keeps the log's
/// lines up to the checkpoint's time): anything but a regular file. A
/// device would be read without end (/dev/zero, /dev/full) and a FIFO
/// would wait for a writer that never comes.
fn check_resumable_log(path: &str, meta: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    Err(Error::InvalidParameter(format!(
        "--log '{path}' is {what}, not a regular file: a resumed run reads its log back to \
         continue it, so name the run's own log file (or leave out --log)"
    )))
}

/// The run log's file (JSON lines, as on stdout).
pub(super) struct Log {
    path: String,
    file: std::fs::File,
}

impl Log {
    /// Opens the log as the run starts: a new run replaces the file; a run
    /// resumed at `resumed_at` keeps its lines up to that time (a later
    /// line was logged after the checkpoint and is logged again) and
    /// appends.
    pub(super) fn open(path: &str, resumed_at: Option<f64>) -> Result<Self> {
        use std::io::{Read as _, Seek as _};
        let io = |source| Error::Io {
            path: path.to_string(),
            source,
        };
        let Some(t) = resumed_at else {
            let file = std::fs::File::create(path).map_err(io)?;
            return Ok(Self {
                path: path.to_string(),
                file,
            });
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        // The file opened, not only the name checked before the run.
        check_resumable_log(path, &file.metadata().map_err(io)?)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let mut keep = 0;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let time = serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v["t"].as_f64());
            match time {
                Some(time) if time > t && !at(time, t) => break,
                Some(_) => keep += line.len(),
                // A last line cut short (the run was killed as it wrote).
                None if !line.ends_with(b"\n") => break,
                None => {
                    return Err(Error::InvalidParameter(format!(
                        "--log '{path}' is not a webgrav run log (a line without a time: \
                         {}); choose another file",
                        String::from_utf8_lossy(line).trim_end()
                    )))
                }
            }
        }
        file.set_len(keep as u64).map_err(io)?;
        file.seek(std::io::SeekFrom::End(0)).map_err(io)?;
        Ok(Self {
            path: path.to_string(),
            file,
        })
    }

    pub(super) fn write(&mut self, line: &serde_json::Value) -> Result<()> {
        use std::io::Write as _;
        // One write a line: a killed run leaves whole lines (or the one
        // it was writing cut short, which a resume drops).
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })
    }
}

pub async fn run(a: RunArgs) -> Result<ExitCode> {
    let (a, resumed) = resolve(a, None)?;
    run_resolved(a, resumed).await
}

/// A resumed run is asked what its checkpoint's run was asked, but for
/// the options given now: its outputs are then checked as any run's. The
/// arguments so completed, and the checkpoint read.
pub(super) fn resolve(
    mut a: RunArgs,
    share: Option<RankShare>,
) -> Result<(RunArgs, Option<Checkpoint>)> {
    let resumed = match a.resume.clone() {
        Some(path) => {
            refuse_overrides_of_resume(&a)?;
            let c = Checkpoint::read_path_share(&path, share)?;
            take_request(&mut a, &c.request, &path)?;
            Some(c)
        }
        None => None,
    };
    Ok((a, resumed))
}

/// `run` of arguments `resolve` completed.
pub(super) async fn run_resolved(a: RunArgs, resumed: Option<Checkpoint>) -> Result<ExitCode> {
    // A run refused after its --snap-dir was made (its checks need the
    // directory's contents) leaves no empty directory behind.
    let snap_dir = (a.snap_every > 0.0 && !std::path::Path::new(&a.snap_dir).exists())
        .then(|| a.snap_dir.clone());
    let result = run_checked(a, resumed).await;
    if let (Err(_), Some(dir)) = (&result, snap_dir) {
        // Only an empty directory is removed.
        let _ = std::fs::remove_dir(dir);
    }
    result
}

/// What a run was asked to do beyond its physics: its end, outputs and
/// schedules. Its checkpoints keep it (`Run::set_request`, as JSON), so a
/// bare `--resume` finishes the run as it was asked.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Request {
    t_end: f64,
    log_every: f64,
    /// (Checkpoints before 2026-11-29 lack it: their runs summed the
    /// potential as `auto` does.)
    #[serde(default)]
    potential_sum: PotentialArg,
    log: Option<String>,
    snap_every: f64,
    snap_dir: String,
    snap_format: String,
    bonsai_names: bool,
    checkpoint: Option<String>,
    checkpoint_every: f64,
    out: Option<String>,
}

impl Request {
    pub(super) fn of(a: &RunArgs) -> Self {
        Self {
            t_end: a.t_end,
            log_every: a.log_every,
            potential_sum: a.potential_sum,
            log: a.log.clone(),
            snap_every: a.snap_every,
            snap_dir: a.snap_dir.clone(),
            snap_format: a.snap_format.clone(),
            bonsai_names: a.bonsai_names,
            checkpoint: a.checkpoint.clone(),
            checkpoint_every: a.checkpoint_every,
            out: a.out.clone(),
        }
    }
}

/// A resumed run takes the request of its checkpoint (`stored`, empty
/// before version 9) for every option not given now; an option given now
/// replaces the stored one, and says so.
fn take_request(a: &mut RunArgs, stored: &str, path: &str) -> Result<()> {
    if stored.is_empty() {
        say!(
            "{path} keeps no end time or outputs (written by an older webgrav): the run goes to \
             --t-end {} with the outputs given now",
            shown(a.t_end)
        );
        return Ok(());
    }
    let r: Request = serde_json::from_str(stored).map_err(|e| {
        Error::InvalidParameter(format!("{path}: its run's request is not webgrav's ({e})"))
    })?;
    // Each field's clap id is its name.
    let mut taken = Vec::new();
    macro_rules! take {
        ($field:ident, $flag:literal) => {
            if !a.given.iter().any(|g| g == stringify!($field)) {
                if value(&a.$field) != value(&r.$field) {
                    taken.push(format!("{} {}", $flag, value(&r.$field)));
                }
                a.$field = r.$field;
            } else if value(&a.$field) != value(&r.$field) {
                say!(
                    "{} {} given: the checkpoint's run asked for {}",
                    $flag,
                    value(&a.$field),
                    value(&r.$field)
                );
            }
        };
    }
    take!(t_end, "--t-end");
    take!(log_every, "--log-every");
    // The checkpoint's energy reference was summed this way.
    take!(potential_sum, "--potential-sum");
    take!(log, "--log");
    take!(snap_every, "--snap-every");
    take!(snap_dir, "--snap-dir");
    take!(snap_format, "--snap-format");
    take!(bonsai_names, "--bonsai-names");
    take!(checkpoint, "--checkpoint");
    take!(checkpoint_every, "--checkpoint-every");
    take!(out, "--out");
    if !taken.is_empty() {
        say!(
            "{path}: its run asked for {} (given now, an option replaces it)",
            taken.join(" ")
        );
    }
    Ok(())
}

/// An option's value as messages show it (JSON: `null` for none).
pub(super) fn value<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Checks what a run is asked beyond its physics, before anything is
/// opened: its times and intervals, and that its outputs can be written
/// and overwrite neither its inputs nor each other (also a run on several
/// ranks, `cli::cluster`).
pub(super) fn check_outputs(a: &RunArgs) -> Result<()> {
    for (name, t) in [
        ("--t-end", a.t_end),
        ("--log-every", a.log_every),
        ("--snap-every", a.snap_every),
        ("--checkpoint-every", a.checkpoint_every),
    ] {
        check_time(name, t)?;
    }
    if a.checkpoint_every > 0.0 && a.checkpoint.is_none() {
        return Err(Error::InvalidParameter(
            "--checkpoint-every needs --checkpoint FILE to write the checkpoints to".into(),
        ));
    }
    if a.snap_dir.is_empty() {
        return Err(Error::InvalidParameter(
            "--snap-dir is empty; name a directory".into(),
        ));
    }
    let inputs: Vec<&str> = a
        .initial
        .inputs()
        .into_iter()
        .chain(a.resume.as_deref())
        .collect();
    check_snapshot_output(&a.out, &inputs)?;
    if let Some(log) = &a.log {
        if let (Some(_), Ok(meta)) = (&a.resume, std::fs::metadata(log)) {
            check_resumable_log(log, &meta)?;
        }
        snapshot::check_output(log, &inputs)?;
    }
    if let Some(path) = &a.checkpoint {
        // It may be the checkpoint resumed from: that is read whole
        // before the first atomic rewrite.
        snapshot::check_output(path, &a.initial.inputs())?;
    }
    check_outputs_apart(a)
}

async fn run_checked(a: RunArgs, resumed: Option<Checkpoint>) -> Result<ExitCode> {
    if a.redraw_every.is_some() {
        return Err(Error::InvalidParameter(
            "--redraw-every is for runs on several ranks (under mpirun); one GPU has no domains"
                .into(),
        ));
    }
    check_outputs(&a)?;
    if let Some(c) = &resumed {
        // Ids the --out format cannot hold are refused now, not after the run.
        snapshot::check_writable(a.out.as_deref(), &c.ids, c.types.as_deref())?;
    }
    let mut series = match a.snap_every > 0.0 {
        true => Some(Series::open(
            &a.snap_dir,
            Format::named(&a.snap_format)?,
            Naming::bonsai_if(a.bonsai_names),
            resumed.as_ref().map(|c| (c.run_id, c.time)),
        )?),
        false => None,
    };
    let ctx = GpuContext::headless().await?;
    say!("adapter: {}", ctx.adapter_summary());
    let clock = now_ms();
    let mut state_ready = clock;
    let mut run = match (resumed, &a.resume) {
        (Some(c), Some(path)) => {
            let run = Run::from_checkpoint(&ctx, c, path).await?;
            interrupt::checkpoint_written(path, run.time());
            say!(
                "resumed {path} at t = {} after {} steps",
                run.time(),
                run.steps()
            );
            run
        }
        _ => {
            let config = a.solver.config(a.step.dt)?;
            if let Some(sampled) = a.initial.sample_on_gpu(&ctx, config.solver()).await? {
                state_ready = now_ms();
                let run = Run::from_sampled(&ctx, sampled, 0.0, config).await?;
                snapshot::check_writable(a.out.as_deref(), run.ids(), None)?;
                run
            } else {
                let start = a.initial.load(&ctx, config.solver()).await?;
                state_ready = now_ms();
                // Ids a format cannot hold are refused now, not after the run.
                snapshot::check_writable(
                    a.out.as_deref(),
                    &start.particles.id,
                    start.types.as_deref(),
                )?;
                let mut run =
                    Run::from_particles(&ctx, start.particles, start.time, config).await?;
                run.set_types(start.types)?;
                run
            }
        }
    };
    let start = StartClock {
        began: clock,
        state_ready,
        solver_ready: now_ms(),
    };
    run.set_potential_rule(a.potential_sum.rule());
    run.set_request(value(&Request::of(&a)))?;
    if let Some(s) = series.as_mut() {
        s.set_run_id(run.run_id());
    }
    check_schedule(&a, run.time(), run.config().params())?;
    interrupt::enter(Phase::Running);
    let resumed_at = a.resume.is_some().then(|| run.time());
    let result = match a
        .log
        .as_deref()
        .map(|l| Log::open(l, resumed_at))
        .transpose()
    {
        Ok(mut log) => integrate(&a, &ctx, &mut run, start, &mut series, &mut log).await,
        Err(e) => Err(e),
    };
    if let Some(s) = series.as_mut() {
        s.flush_or_say();
    }
    let (state, full, outcome) = match result {
        Ok(Integrated::Ended(Some(last))) => {
            let Readout {
                snapshot,
                state_f64,
                ..
            } = *last;
            (Some(snapshot), state_f64, Ok(()))
        }
        Ok(Integrated::Ended(None)) => (None, None, Ok(())),
        Ok(Integrated::Interrupted) => return keep_interrupted(&a, &ctx, &mut run).await,
        Err(e @ Error::NonFinite { .. }) => (run.last_good().cloned().map(Arc::new), None, Err(e)),
        Err(e @ Error::Io { .. }) => return keep_after_failed_output(&a, &ctx, &mut run, e).await,
        Err(e) => (None, None, Err(e)),
    };
    interrupt::enter(Phase::Finishing);
    if let (Some(path), Some(snap)) = (&a.out, &state) {
        // The run's kinds where the state has none (a start state that
        // was never read out); else the state as it is, not a copy.
        let typed;
        let snap: &Snapshot = match (&snap.types, run.types()) {
            (None, Some(t)) => {
                typed = Snapshot {
                    types: Some(t.to_vec()),
                    ..Snapshot::clone(snap)
                };
                &typed
            }
            _ => snap,
        };
        let clock = std::time::Instant::now();
        let written = write_state(path, snap, full.as_ref())?;
        if outcome.is_err() {
            say!(
                "wrote the last finite state (t = {}) to {path}, not the end state",
                snap.time
            );
        } else {
            say!("wrote {path} in {:.2} s", clock.elapsed().as_secs_f64());
        }
        for note in written.notes(path) {
            say!("{note}");
        }
    }
    if let (Some(path), None, Err(Error::NonFinite { .. })) = (&a.out, &state, &outcome) {
        // A model made on the GPU is on the host only once read out.
        say!("{path} not written: no finite state of the run was read back");
    }
    if interrupt::requested() && outcome.is_ok() {
        say!("webgrav: the run had finished when interrupted; its results are written");
    }
    interrupt::enter(Phase::Idle);
    outcome.map(|()| ExitCode::SUCCESS)
}

/// A run stopped by a signal: its checkpoint, and the exit status that
/// says so; an error, said on stderr, if it cannot be written.
async fn keep_interrupted(a: &RunArgs, ctx: &GpuContext, run: &mut Run) -> Result<ExitCode> {
    let t = run.time();
    match keep_checkpoint(a, ctx, run).await {
        Ok(path) => {
            say!(
                "interrupted at t = {t}: wrote the checkpoint {path} (continue with --resume {path})"
            );
            Ok(ExitCode::from(interrupt::EXIT_STATUS))
        }
        Err((path, e)) => {
            say!(
                "webgrav: interrupted at t = {t}, but the checkpoint could not be written to \
                 {path}: the steps since the last checkpoint are lost"
            );
            Err(e)
        }
    }
}

/// A run whose output failed (a full disk, a removed directory): the
/// state itself is sound, so it is kept in a checkpoint where one can be
/// written, and the output's error is returned.
async fn keep_after_failed_output(
    a: &RunArgs,
    ctx: &GpuContext,
    run: &mut Run,
    failed: Error,
) -> Result<ExitCode> {
    let t = run.time();
    match keep_checkpoint(a, ctx, run).await {
        Ok(path) => say!(
            "an output failed at t = {t} (below): the run's state is in the checkpoint {path} \
             (free the space or fix the output, then continue with --resume {path})"
        ),
        Err((path, e)) => say!(
            "an output failed at t = {t} (below), and the checkpoint could not be written to \
             {path} either ({e}): the steps since the last checkpoint are lost"
        ),
    }
    Err(failed)
}

/// Writes the run's checkpoint where a stopped run keeps it: --checkpoint,
/// else a free `OUT.ckpt` or `webgrav-interrupted.ckpt` (an existing file
/// is never overwritten). The path, or the path and why it failed.
async fn keep_checkpoint(
    a: &RunArgs,
    ctx: &GpuContext,
    run: &mut Run,
) -> std::result::Result<String, (String, Error)> {
    let path = match &a.checkpoint {
        Some(path) => path.clone(),
        None => {
            let wanted = a
                .out
                .as_ref()
                .map_or("webgrav-interrupted.ckpt".into(), |o| format!("{o}.ckpt"));
            let free = free_name(&wanted);
            if free != wanted {
                say!("{wanted} exists and is kept: the checkpoint goes to {free}");
            }
            free
        }
    };
    match write_checkpoint(&path, ctx, run).await {
        Ok(()) => Ok(path),
        Err(e) => Err((path, e)),
    }
}

/// Writes the run's checkpoint file atomically, streamed from the GPU as
/// it is encoded.
async fn write_checkpoint(path: &str, ctx: &GpuContext, run: &mut Run) -> Result<()> {
    let mut file = snapshot::AtomicFile::create(path, run.checkpoint_len())?;
    run.write_checkpoint(ctx, &mut file, path).await?;
    file.commit()?;
    interrupt::checkpoint_written(path, run.time());
    Ok(())
}

/// When a run's start reached each of its stages (`now_ms`): the initial
/// state made or read, the solver set up (its first forces queued).
#[derive(Clone, Copy)]
struct StartClock {
    began: f64,
    state_ready: f64,
    solver_ready: f64,
}

/// How `integrate` (to --t-end with the log, the series and the
/// checkpoints, on the grid of the run's origin) ended.
enum Integrated {
    /// At `--t-end`, with its read-out where the state came to the host
    /// (`--out`; a run that writes nothing measures its end on the GPU
    /// where it can).
    Ended(Option<Box<Readout>>),
    /// Stopped by a signal before `--t-end`.
    Interrupted,
}

async fn integrate(
    a: &RunArgs,
    ctx: &GpuContext,
    run: &mut Run,
    started: StartClock,
    series: &mut Option<Series>,
    log: &mut Option<Log>,
) -> Result<Integrated> {
    let start = run.time();
    let origin = run.origin();
    let wants_start = match series.as_mut() {
        Some(s) => {
            s.start()?;
            s.wants_start(start, on_grid(start, origin, a.snap_every))
        }
        None => false,
    };
    // The first read-out is the energy reference of the log (a resumed
    // run keeps the one of its checkpoint). Where nothing is written of
    // the start state, it is measured on the GPU when it can be (the
    // state stays there: 7 GB not carried at 2^27 particles), and where
    // the run goes on from it, only the reference is.
    let light = !wants_start && a.out.is_none();
    let (mut first, mut referenced) = (None, false);
    if light && at(start, a.t_end) {
        first = run.measure(ctx).await?.map(|m| (m, None));
    } else if light {
        referenced = run.energy_reference(ctx).await?.is_some();
    }
    if first.is_none() && !referenced {
        let r = run.readout(ctx).await?;
        first = Some((r.measured(), Some(r)));
    }
    let ready = now_ms();
    let clock = started.began;
    say!(
        "ready in {:.2} s: initial state {:.2} s, solver set up {:.2} s, first forces \
         and energy {:.2} s",
        (ready - clock) * 1e-3,
        (started.state_ready - clock) * 1e-3,
        (started.solver_ready - started.state_ready) * 1e-3,
        (ready - started.solver_ready) * 1e-3
    );
    // The deepest block-step level taken at the read-outs after steps
    // (logs, snapshots, checkpoints; not the first read-out's: levels are
    // set by the steps). Only block steps have levels.
    let mut deepest_seen = None;
    // Whether outputs off the requested times have been said.
    let mut said_off_grid = false;
    if let (true, Some(s), Some((_, Some(first)))) = (wants_start, series.as_mut(), &first) {
        s.write(&first.snapshot, first.steps, first.state_f64.as_ref())?;
    }
    // Kept only while no step has been queued since: a run that ends where
    // it starts (`--t-end` its start time) reports it rather than reading
    // the same state twice. Any other read-out drops it first (a kept one
    // would keep its state from being reused: `Run::readout`).
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
    // The steps' own wall time since the last log line (not the read-outs,
    // writes and diagnostics between them), and the steps it covers.
    let (mut stepping_s, mut steps_at_log) = (0.0, run.steps());
    loop {
        let next_log = next_on_grid(t, origin, a.log_every);
        let next_snap = next_on_grid(t, origin, a.snap_every);
        let next_ckpt = next_on_grid(t, origin, a.checkpoint_every);
        let target = next_log.min(next_snap).min(next_ckpt).min(a.t_end);
        let stepping = now_ms();
        let reached = run
            .run_to(ctx, target, |done, of| {
                bar.set_length(of);
                bar.set_position(done);
                !interrupt::requested()
            })
            .await?;
        stepping_s += (now_ms() - stepping) * 1e-3;
        // A signal that stops the run as its steps reach the target (the
        // batch ahead of the stop was the last) still has the target's
        // outputs written, as a run that went on writes them: its log line
        // is no resumed run's (a resume logs after its checkpoint), and
        // its read-out counts in the checkpoint's dE_max.
        if !reached && !at(run.time(), target) {
            bar.finish_and_clear();
            return Ok(Integrated::Interrupted);
        }
        t = target;
        let end = at(t, a.t_end);
        let unchanged = first
            .take()
            .filter(|(m, _)| m.steps == run.steps() && m.time == run.time());
        // The state comes to the host where it is written (a snapshot, or
        // --out, whose last good state each read-out keeps); elsewhere what
        // the line and the report show is measured on the GPU if it can be.
        let wants_state = a.out.is_some() || (at(t, next_snap) && series.is_some());
        let (m, r) = match unchanged {
            Some(f) => f,
            None => {
                let measured = match wants_state {
                    true => None,
                    false => run.measure(ctx).await?,
                };
                match measured {
                    Some(m) => (m, None),
                    None => {
                        let r = run.readout(ctx).await?;
                        (r.measured(), Some(r))
                    }
                }
            }
        };
        deepest_seen = deepest_seen.max(m.block_levels.as_deref().and_then(deepest_occupied));
        if !said_off_grid && !at(m.time, t) {
            // Hermite block steps end where the particles' steps allow;
            // every multiple of dt_max is such a time.
            said_off_grid = true;
            say!(
                "Hermite block steps reach t = {} for the output at t = {}: logs and snapshots \
                 are at the last block time before each (intervals that are multiples of \
                 --dt-max {} land exactly)",
                m.time,
                t,
                p.dt_max
            );
        }
        if at(t, next_log) || end {
            let steps = run.steps() - steps_at_log;
            let per_step = (steps > 0).then(|| stepping_s / steps as f64);
            (stepping_s, steps_at_log) = (0.0, run.steps());
            let line = log_line(&m, (now_ms() - clock) * 1e-3, per_step);
            emit(&line)?;
            if let Some(f) = log.as_mut() {
                f.write(&line)?;
            }
        }
        if let (true, Some(s), Some(r)) = (at(t, next_snap), series.as_mut(), &r) {
            s.write(&r.snapshot, r.steps, r.state_f64.as_ref())?;
        }
        if let (true, Some(path)) = (at(t, next_ckpt), &a.checkpoint) {
            // The index lists every snapshot up to the checkpoint, which a
            // resumed run continues from.
            if let Some(s) = series.as_mut() {
                s.flush()?;
            }
            write_checkpoint(path, ctx, run).await?;
        }
        if end {
            bar.finish_and_clear();
            report(&m, (now_ms() - clock) * 1e-3);
            say_unused_levels(deepest_seen, p.levels);
            return Ok(Integrated::Ended(r.map(Box::new)));
        }
        // A signal as the end is reached lets the run finish; one between
        // two builds of a tree (`--rebuild K`) runs on to the next, where
        // its checkpoint changes nothing (`Run::steps_to_restart_point`).
        if interrupt::requested() && run.steps_to_restart_point() == 0 {
            bar.finish_and_clear();
            return Ok(Integrated::Interrupted);
        }
    }
}

/// Says so when block steps never took their deepest levels (`deepest`,
/// the deepest occupied at the read-outs, of `levels`): their sub-steps
/// are recorded all the same.
pub(super) fn say_unused_levels(deepest: Option<usize>, levels: u32) {
    if let Some(deepest) = deepest.filter(|&d| d < levels as usize) {
        say!(
            "block steps: the deepest level taken at the read-outs was {deepest} \
             (dt/2^{deepest}), and --levels {levels} records sub-steps for deeper ones, idle \
             but still launched: --levels {deepest} would record {} sub-steps a step, not {}",
            1u64 << deepest,
            1u64 << levels
        );
    }
}

/// The deepest level holding a particle (block steps' particles per level).
pub(super) fn deepest_occupied(levels: &[u64]) -> Option<usize> {
    levels.iter().rposition(|&n| n > 0)
}

/// |v|.
pub(super) fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// One JSON line of the run log.
fn log_line(r: &Measured, wall_s: f64, wall_s_per_step: Option<f64>) -> serde_json::Value {
    let d = &r.diagnostics;
    let dl = std::array::from_fn(|k| d.angular_momentum[k] - r.e0.angular_momentum[k]);
    let mut line = serde_json::json!({
        "t": r.time,
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
    if let Some(per_step) = wall_s_per_step {
        // As a run on several ranks logs it: the steps alone.
        line["wall_s_per_step"] = per_step.into();
    }
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
    if let Some(levels) = &r.block_levels {
        line["particles_per_level"] = levels.clone().into();
    }
    if let Some((pp, pc)) = r.interactions {
        line["pp_per_particle"] = pp.into();
        line["pc_per_particle"] = pc.into();
    }
    line
}

fn report(r: &Measured, wall_s: f64) {
    let (e0, e1) = (&r.e0, &r.diagnostics);
    say!(
        "t = {:.6} after {} steps ({wall_s:.2} s wall)",
        r.time,
        r.steps
    );
    if let Some(peak) = host::peak_resident_bytes() {
        say!(
            "peak host memory {:.1} MiB ({:.1} bytes per particle)",
            peak as f64 / (1 << 20) as f64,
            peak as f64 / r.n as f64
        );
    }
    say!(
        "E0 = {:.9}  E = {:.9}  (K = {:.6}, W = {:.6}, Q = {:.4})",
        e0.total,
        e1.total,
        e1.kinetic,
        e1.potential,
        e1.virial_ratio
    );
    if r.potential_sum == PotentialSum::Solver {
        say!(
            "potential energy from the solver's own f32 potentials (the tree's are \
             approximate); --potential-sum exact sums it precisely, at N^2 work a report"
        );
    }
    if e0.total == 0.0 {
        // |dE/E0| has no meaning for a system of zero energy.
        say!(
            "E0 = 0: no relative energy error; the absolute change is |dE| = {:.3e}",
            (e1.total - e0.total).abs()
        );
    } else {
        say!(
            "relative energy error |dE/E0| = {:.3e} (largest seen {:.3e})",
            r.energy_error(),
            r.de_max
        );
    }
    if let Some(h) = &r.hermite {
        say!(
            "block steps {}, force evaluations {}, particle steps per level (dt = dt_max/2^k) {:?}",
            h.stats.block_steps,
            h.stats.force_evaluations,
            h.stats.steps_per_level
        );
    }
    if let Some(levels) = &r.block_levels {
        say!("block steps: particles per level (dt/2^k) {levels:?}");
    }
}
