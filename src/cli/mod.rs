//! The native command-line front end (feature `cli`): argument parsing
//! with clap lives here and only here; each command is a module that calls
//! the core (`run::Run` for everything that integrates).

mod analyze;
mod bench;
#[cfg(feature = "mpi")]
mod cluster;
mod convert;
mod forces;
mod interrupt;
mod render;
mod run;
mod series;
mod table;

use crate::app::check_device_particle_count;
use crate::app::host::check_host_memory;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::hermite::{Criterion, Precision};
use crate::render::ColorMode;
use crate::run::block::Timesteps;
use crate::run::params::{alpha_given, Param};
use crate::run::{RunConfig, RunParams, SolverKind};
use crate::snapshot::{self, Snapshot};
use crate::state::generate::{self, Sampled};
use crate::state::{Model, ModelParams, KINDS};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use table::{Rows, Table, Values};

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
    /// Integrate a model or a snapshot and write the end state.
    Run(run::RunArgs),
    /// Write accelerations and potentials of the initial state as CSV.
    Forces(forces::ForcesArgs),
    /// Benchmark a solver; prints one JSON line per run.
    Bench(bench::BenchArgs),
    /// Convert a snapshot between formats (the input's by its content, the
    /// output's by its extension or --to).
    Convert {
        input: String,
        output: String,
        /// The output's format where its extension does not say it all:
        /// tipsy, bonsai, csv, gadget, hdf5 (GADGET-4's layout) or
        /// swift-hdf5.
        #[arg(long)]
        to: Option<String>,
    },
    /// Print the GPU adapter webgrav would use.
    Info,
    /// Render a snapshot to a PNG offscreen, with the web app's renderer
    /// and camera (the same numbers as its URL parameters).
    Render(render::RenderArgs),
    /// Galactic-dynamics read-outs of a snapshot or a series: density
    /// centre, Lagrangian radii, profiles, bar strength and pattern speed,
    /// black-hole separation (JSON lines; profiles as CSV).
    Analyze(analyze::AnalyzeArgs),
}

/// A line on stderr; never panics (a closed stderr must not turn a
/// finished run into a crash).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
pub(crate) use say;

/// A line of output on stdout; a closed stdout is an error, not a panic.
fn emit(line: impl std::fmt::Display) -> Result<()> {
    use std::io::Write as _;
    writeln!(std::io::stdout(), "{line}").map_err(|source| Error::Io {
        path: "standard output".into(),
        source,
    })
}

pub fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let (Command::Run(a), Some(("run", m))) = (&mut cli.command, matches.subcommand()) {
        a.given = given_on_command_line(m);
    }
    quiet_window_system_probe();
    // SIGINT, SIGTERM, SIGHUP: a run stops at its next batch of steps and
    // writes a checkpoint (`interrupt`).
    interrupt::install();
    match pollster::block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(e) => {
            say!("webgrav: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The ids of the arguments given on the command line (not defaults).
fn given_on_command_line(m: &clap::ArgMatches) -> Vec<String> {
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.to_string())
        .collect()
}

/// The Vulkan loader probes window systems when the GPU instance is
/// created, and Mesa prints "XDG_RUNTIME_DIR is invalid or not set" where
/// there is none (cron jobs, containers). The CLI never opens a window:
/// give the probe a private directory rather than let a healthy run print
/// errors.
fn quiet_window_system_probe() {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let set =
        std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_dir());
    if set {
        return;
    }
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    let dir = std::env::temp_dir().join(format!("webgrav-runtime-{uid}"));
    let made = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    if made.is_ok() || dir.is_dir() {
        // Single-threaded here, before any other thread reads the
        // environment.
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
}

/// The ranks `mpirun` started (1 without it) and this process's.
fn mpirun_ranks() -> (u32, u32) {
    let var = |name| std::env::var(name).ok().and_then(|v| v.parse().ok());
    (
        var("OMPI_COMM_WORLD_SIZE").unwrap_or(1),
        var("OMPI_COMM_WORLD_RANK").unwrap_or(0),
    )
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Run(_) => "run",
            Command::Forces(_) => "forces",
            Command::Bench(_) => "bench",
            Command::Convert { .. } => "convert",
            Command::Info => "info",
            Command::Render(_) => "render",
            Command::Analyze(_) => "analyze",
        }
    }
}

/// Runs the command; the exit status where it did not fail.
async fn dispatch(cli: Cli) -> Result<ExitCode> {
    // Only `run` (and with the `mpi` feature `forces`) works on several
    // ranks together; any other command would run whole on every rank,
    // writing the same files at once. Rank 0 says so; the others end
    // quietly.
    let (ranks, rank) = mpirun_ranks();
    let command = match (ranks > 1, cli.command) {
        (false, command) | (true, command @ Command::Run(_)) => command,
        #[cfg(feature = "mpi")]
        (true, Command::Forces(a)) => return forces::forces_on_ranks(a).await,
        (true, _) if rank != 0 => return Ok(ExitCode::FAILURE),
        (true, other) => {
            return Err(Error::InvalidParameter(format!(
                "`webgrav {}` runs in one process: start it without mpirun (only `webgrav \
                 run` and `webgrav forces` run on several ranks)",
                other.name()
            )))
        }
    };
    let done = match command {
        Command::Run(a) => {
            // Under mpirun: the tree code on one GPU per rank.
            #[cfg(feature = "mpi")]
            if crate::cluster::mpi::launched_by_mpirun() {
                return cluster::run_under_mpirun(a).await;
            }
            // Without the feature, every rank would run the whole run and
            // write the same files at once.
            #[cfg(not(feature = "mpi"))]
            if ranks > 1 {
                return Err(Error::InvalidParameter(
                    "this webgrav was built without the `mpi` feature, so under mpirun each \
                     rank would run the whole run alone: build it with `cargo build --release \
                     --features mpi`, or run it without mpirun"
                        .into(),
                ));
            }
            return run::run(a).await;
        }
        Command::Forces(a) => forces::forces(a).await,
        Command::Bench(a) => bench::bench(a).await,
        Command::Convert { input, output, to } => convert::convert(&input, &output, to.as_deref()),
        Command::Render(a) => render::render(a).await,
        Command::Info => convert::info().await,
        Command::Analyze(a) => analyze::analyze(a),
    };
    done.map(|()| ExitCode::SUCCESS)
}

/// A clap parser of one of `names`, mapped to the core type by `from`
/// (the core types carry no clap derives).
fn choice<T: Clone + Send + Sync + 'static>(
    names: Vec<&'static str>,
    from: fn(&str) -> Option<T>,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(names).map(move |s| from(&s).expect("clap checked the name"))
}

fn precision_parser() -> impl TypedValueParser<Value = Precision> {
    choice(
        Precision::ALL.iter().map(|p| p.name()).collect(),
        Precision::from_name,
    )
}

fn color_parser() -> impl TypedValueParser<Value = ColorMode> {
    choice(
        ColorMode::ALL.iter().map(|c| c.name()).collect(),
        ColorMode::from_name,
    )
}

/// Where the initial particles come from: a model (`run::RUN_PARAMS`'
/// model rows) or a file.
#[derive(Args)]
struct InitialArgs {
    #[command(flatten)]
    pub(crate) model: Table<ModelRows>,
    /// Start from this snapshot instead of a model (.tipsy, .bonsai, .csv,
    /// .gadget, or a Tipsy, Gadget-2 or CSV file of any name; a Gadget-2
    /// snapshot of several files by any of them).
    #[arg(long = "in")]
    pub(crate) input: Option<String>,
    /// The input is in physical units: its length unit in kpc, mass unit
    /// in M☉ and velocity unit in km/s (Gadget-2's defaults: 1 1e10 1);
    /// it is converted to webgrav's G = 1 units as Bonsai chooses them
    /// (1 kpc, 2.325e9 M☉, 100 km/s; time unit 9.78 Myr).
    #[arg(long, num_args = 3, value_names = ["KPC", "MSUN", "KMS"], allow_negative_numbers = true)]
    units: Option<Vec<f64>>,
}

/// The rows that shape the model: model, N, seed and the galaxy models'
/// parameters.
#[derive(Clone, Debug)]
struct ModelRows {
    model: Model,
    n: usize,
    seed: u64,
    params: ModelParams,
}

impl Rows for ModelRows {
    fn takes(p: &Param) -> bool {
        p.shapes_model()
    }

    fn from_values(v: &Values) -> Self {
        ModelRows {
            model: Model::from_name(v.choice("model")).expect("a listed model"),
            n: v.number("n") as usize,
            seed: v.number("seed") as u64,
            params: ModelParams {
                toomre_q: v.number("q"),
                mass_ratio: v.number("ratio"),
                pericenter: v.number("rperi"),
                satellites: v.number("satellites") as u32,
                inclination1: v.number("incl1"),
                inclination2: v.number("incl2"),
                halo_mass: v.number("mhalo"),
            },
        }
    }
}

impl InitialArgs {
    /// The initial state: the snapshot file, or the model, whose N is
    /// checked against the device (for `solver`) and the host's memory
    /// before anything is generated.
    async fn load(&self, ctx: &GpuContext, solver: SolverKind) -> Result<Snapshot> {
        self.load_checked(Some(ctx), solver).await
    }

    /// `load` for a run on several ranks from an input file, which every
    /// rank reads whole (each keeps its share), so N is checked against
    /// the host alone.
    #[cfg(feature = "mpi")]
    async fn load_whole(&self) -> Result<Snapshot> {
        self.load_checked(None, SolverKind::Tree).await
    }

    /// Converts what was read of the input file from `--units` to
    /// webgrav's, if given.
    fn to_nbody(&self, snap: &mut Snapshot) -> Result<()> {
        if let Some(u) = &self.units {
            if !u.iter().all(|x| x.is_finite() && *x > 0.0) {
                return Err(Error::InvalidParameter(format!(
                    "--units must be three positive numbers, got {u:?}"
                )));
            }
            snapshot::gadget::to_nbody(snap, u[0], u[1], u[2]);
        }
        Ok(())
    }

    /// Refuses `--units` without an input file.
    fn check_units(&self) -> Result<()> {
        if self.units.is_some() && self.input.is_none() {
            return Err(Error::InvalidParameter(
                "--units converts an input file (--in); a model is generated in N-body units"
                    .into(),
            ));
        }
        Ok(())
    }

    async fn load_checked(&self, ctx: Option<&GpuContext>, solver: SolverKind) -> Result<Snapshot> {
        self.check_units()?;
        match &self.input {
            Some(path) => {
                let mut snap = snapshot::read_file(path)?;
                self.to_nbody(&mut snap)?;
                note_types(&snap, path);
                note_units(path, self.units.is_some());
                // The file's N, checked once it is known (the state read
                // is part of what a run holds).
                check_host_memory(snap.particles.len() as u64, solver)?;
                Ok(snap)
            }
            None => {
                let m = &self.model;
                let n = m.n as u64;
                if let Some(ctx) = ctx {
                    check_device_particle_count(ctx, n, solver)?;
                }
                check_host_memory(n, solver)?;
                // Component kinds go into the files (halo as dark matter,
                // the rest as stars; Bonsai's id ranges; a CSV type column).
                let clock = std::time::Instant::now();
                // With a device, the models it can sample are sampled there
                // (a run's GPU; nothing else is queued on it yet).
                let tagged = match ctx {
                    Some(ctx) => m.model.generate_on(ctx, m.n, m.seed, &m.params).await?,
                    None => m.model.generate_with(m.n, m.seed, &m.params)?,
                };
                say!(
                    "generated {} with N = {} in {:.2} s",
                    m.model.name(),
                    m.n,
                    clock.elapsed().as_secs_f64()
                );
                Ok(Snapshot {
                    types: tagged.types(),
                    particles: tagged.particles,
                    ..Default::default()
                })
            }
        }
    }

    /// The model sampled on the GPU and left there, where a run can
    /// start from it without its round trip through the host: the Plummer
    /// sphere and the cold collapse, for a leapfrog solver; `None` for
    /// anything else (`load` then makes it).
    async fn sample_on_gpu(&self, ctx: &GpuContext, solver: SolverKind) -> Result<Option<Sampled>> {
        let m = &self.model;
        let Some(at_rest) = m.model.sampled_whole_on_gpu() else {
            return Ok(None);
        };
        if self.input.is_some() || !solver.starts_on_gpu() {
            return Ok(None);
        }
        self.check_units()?;
        let n = m.n as u64;
        check_device_particle_count(ctx, n, solver)?;
        check_host_memory(n, solver)?;
        let clock = std::time::Instant::now();
        let sampled = ctx
            .allocating(n, generate::plummer_on_gpu(ctx, m.n, m.seed, at_rest))
            .await?;
        say!(
            "generated {} with N = {} on the GPU in {:.2} s",
            m.model.name(),
            m.n,
            clock.elapsed().as_secs_f64()
        );
        Ok(Some(sampled))
    }

    /// The input files (that no output may overwrite).
    fn inputs(&self) -> Vec<&str> {
        self.input.iter().map(|s| s.as_str()).collect()
    }
}

/// The solver and its parameters: the rows of `run::RUN_PARAMS` that
/// configure a run, but the time step (`StepArgs`, which only commands
/// that take steps have).
type SolverArgs = Table<SolverRows>;

#[derive(Clone, Debug)]
struct SolverRows {
    solver: SolverKind,
    eps: f32,
    theta: f32,
    alpha: f32,
    /// `--alpha` was given (`--theta` alone, or `forces --thetas`, selects
    /// the opening-angle MAC: `run::params::alpha_given`).
    alpha_given: bool,
    rebuild: u32,
    timesteps: Timesteps,
    levels: u32,
    eta: f64,
    criterion: Criterion,
    precision: Precision,
    dt_max: f64,
}

impl Rows for SolverRows {
    fn takes(p: &Param) -> bool {
        !p.shapes_model() && p.key != "dt"
    }

    fn from_values(v: &Values) -> Self {
        SolverRows {
            solver: SolverKind::from_name(v.choice("solver")).expect("a listed solver"),
            eps: v.number("eps") as f32,
            theta: v.number("theta") as f32,
            alpha: alpha_given(v.given("theta"), v.given("alpha"), v.number("alpha") as f32),
            alpha_given: v.given("alpha"),
            rebuild: v.number("rebuild") as u32,
            timesteps: Timesteps::from_name(v.choice("timesteps")).expect("listed time steps"),
            levels: v.number("levels") as u32,
            eta: v.number("eta"),
            criterion: Criterion::from_name(v.choice("criterion")).expect("a listed criterion"),
            precision: Precision::from_name(v.choice("precision")).expect("a listed precision"),
            dt_max: v.number("dt_max"),
        }
    }
}

impl SolverRows {
    /// The validated run configuration with leapfrog step `dt`.
    fn config(&self, dt: f64) -> Result<RunConfig> {
        RunParams {
            solver: self.solver,
            eps: self.eps,
            dt,
            theta: self.theta,
            alpha: self.alpha,
            rebuild: self.rebuild,
            timesteps: self.timesteps,
            levels: self.levels,
            eta: self.eta,
            criterion: self.criterion,
            precision: self.precision,
            dt_max: self.dt_max,
        }
        .validate()
    }
}

/// The time step row (`dt`) of commands that take steps.
type StepArgs = Table<StepRow>;

#[derive(Clone, Debug)]
struct StepRow {
    dt: f64,
}

impl Rows for StepRow {
    fn takes(p: &Param) -> bool {
        p.key == "dt"
    }

    fn from_values(v: &Values) -> Self {
        StepRow { dt: v.number("dt") }
    }
}

/// Says how the particle types of an input are treated.
fn note_types(snap: &Snapshot, path: &str) {
    if let Some(types) = &snap.types {
        let gas = types.iter().filter(|&&t| t == 0).count();
        if gas > 0 {
            say!(
                "{path}: {gas} gas particles are integrated as collisionless (webgrav has no \
                 hydrodynamics)"
            );
        }
    }
}

/// Says which units an HDF5 file states where they are not webgrav's
/// (its values are taken as they are, as a Gadget-2 file's are), and the
/// `--units` that converts them.
fn note_units(path: &str, converted: bool) {
    #[cfg(feature = "hdf5")]
    if let Ok(Some([kpc, msun, kms])) = snapshot::hdf5::units(path) {
        if !converted {
            say!(
                "{path}: its units are {kpc:.6e} kpc, {msun:.6e} M☉ and {kms:.6e} km/s; its \
                 values are taken as they are (--units {kpc:e},{msun:e},{kms:e} converts them \
                 to webgrav's)"
            );
        }
    }
    #[cfg(not(feature = "hdf5"))]
    let _ = (path, converted);
}

/// Checks a snapshot output before any work: its extension names a
/// format, and it can be written without touching an input.
/// A particle kind a user named with `flag` (`--component`, `--hide`):
/// its name and its type in Gadget-2's numbering (`None`: all).
fn parse_kind(flag: &str, k: &str) -> Result<(String, Option<u8>)> {
    if k == "all" {
        return Ok((k.into(), None));
    }
    let t = KINDS
        .iter()
        .position(|&t| t == k)
        .or_else(|| k.parse::<usize>().ok().filter(|&t| t < KINDS.len()))
        .ok_or_else(|| {
            Error::InvalidParameter(format!(
                "{flag} {k}: expected all, {} or 0-5",
                KINDS.join(", ")
            ))
        })?;
    Ok((KINDS[t].into(), Some(t as u8)))
}

fn check_snapshot_output(path: &Option<String>, inputs: &[&str]) -> Result<()> {
    if let Some(p) = path {
        snapshot::Format::from_path(p)?;
        snapshot::check_output(p, inputs)?;
    }
    Ok(())
}

/// Checks an output that must have extension `ext` (e.g. "csv", "png").
fn check_typed_output(path: &str, ext: &str, what: &str, inputs: &[&str]) -> Result<()> {
    let ok = path
        .rsplit_once('.')
        .is_some_and(|(_, e)| e.eq_ignore_ascii_case(ext));
    if !ok {
        return Err(Error::InvalidParameter(format!(
            "'{path}': {what} is written as {}, name it .{ext}",
            ext.to_ascii_uppercase()
        )));
    }
    snapshot::check_output(path, inputs)
}

/// A time or an interval of simulated time: finite and not negative.
fn check_time(name: &str, t: f64) -> Result<()> {
    if !t.is_finite() {
        // "inf" is >= 0, so saying only that would not say what is wrong.
        return Err(Error::InvalidParameter(format!(
            "{name} must be a finite time >= 0, got {t}"
        )));
    }
    if t < 0.0 {
        return Err(Error::InvalidParameter(format!(
            "{name} must be >= 0, got {t}"
        )));
    }
    Ok(())
}

/// Where a path's file lies, whether or not it exists yet (to compare
/// outputs with each other).
fn location(path: &str) -> PathBuf {
    let p = Path::new(path);
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    dir.canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .join(p.file_name().unwrap_or_default())
}

/// No two of a command's `outputs` (option, path) are one file, by
/// whatever name: the later write would replace the earlier one.
fn check_distinct_outputs(outputs: &[(&str, &str)]) -> Result<()> {
    for (k, (flag, path)) in outputs.iter().enumerate() {
        let here = location(path);
        for (other, other_path) in &outputs[k + 1..] {
            if location(other_path) == here {
                return Err(Error::InvalidParameter(format!(
                    "{flag} '{path}' and {other} '{other_path}' are the same file; give each \
                     output its own"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::command::run_command;
    use crate::app::settings::Settings;

    /// The page's command, parsed by this CLI, runs the page's settings.
    #[test]
    fn the_pages_command_runs_its_settings() {
        for query in [
            "model=milky-way&n=65536&seed=9&q=1.5&theta=0.6&alpha=0&dt=0.00390625&eps=0.02",
            "model=galaxy-crash&n=20000&incl2=120&ratio=2&solver=tree&timesteps=block&levels=4",
            "model=plummer&n=4096&solver=hermite6&eta=0.02&criterion=aarseth",
        ] {
            let (settings, bad) = Settings::from_query(query);
            assert!(bad.is_empty(), "{bad:?}");
            let command = run_command(&settings, None, 0.5, 1).unwrap();
            let words = command.split(' ').map(String::from);
            let Command::Run(a) = Cli::try_parse_from(words).unwrap().command else {
                panic!("{command} is not a run");
            };
            let m = &a.initial.model;
            let given = (settings.model, settings.n as usize, settings.seed as u64);
            assert_eq!((m.model, m.n, m.seed), given, "{command}");
            assert_eq!(m.params, settings.model_params, "{command}");
            let config = a.solver.config(a.step.dt).unwrap();
            assert_eq!(*config.params(), settings.run, "{command}");
            assert!(a.t_end >= 0.5 && a.snap_every > 0.0, "{command}");
            assert_eq!(a.snap_dir, crate::app::command::SERIES_DIR);
        }
    }
}
