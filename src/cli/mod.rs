//! The native command-line front end (feature `cli`): argument parsing
//! with clap lives here and only here; each command is a module that calls
//! the core (`run::Run` for everything that integrates).

mod analyze;
mod bench;
mod convert;
mod forces;
mod interrupt;
mod render;
mod run;
mod series;

use crate::app::{check_device_particle_count, check_host_memory};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::hermite::{Criterion, Precision};
use crate::render::ColorMode;
use crate::run::{RunConfig, RunParams, SolverKind};
use crate::snapshot::{self, Snapshot};
use crate::state::{Model, ModelParams, KINDS};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

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
    /// Convert a snapshot between formats (chosen by extension).
    Convert { input: String, output: String },
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

/// Runs the command; the exit status where it did not fail.
async fn dispatch(cli: Cli) -> Result<ExitCode> {
    let done = match cli.command {
        Command::Run(a) => return run::run(a).await,
        Command::Forces(a) => forces::forces(a).await,
        Command::Bench(a) => bench::bench(a).await,
        Command::Convert { input, output } => convert::convert(&input, &output),
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

fn model_parser() -> impl TypedValueParser<Value = Model> {
    choice(Model::ALL.iter().map(|m| m.name()).collect(), |s| {
        Model::from_name(s).ok()
    })
}

fn solver_parser() -> impl TypedValueParser<Value = SolverKind> {
    choice(
        SolverKind::ALL.iter().map(|s| s.name()).collect(),
        SolverKind::from_name,
    )
}

fn precision_parser() -> impl TypedValueParser<Value = Precision> {
    choice(
        Precision::ALL.iter().map(|p| p.name()).collect(),
        Precision::from_name,
    )
}

fn criterion_parser() -> impl TypedValueParser<Value = Criterion> {
    choice(
        Criterion::ALL.iter().map(|c| c.name()).collect(),
        Criterion::from_name,
    )
}

fn color_parser() -> impl TypedValueParser<Value = ColorMode> {
    choice(
        ColorMode::ALL.iter().map(|c| c.name()).collect(),
        ColorMode::from_name,
    )
}

/// Where the initial particles come from.
#[derive(Args)]
struct InitialArgs {
    /// Initial-condition model.
    #[arg(long, value_parser = model_parser(), default_value = "plummer")]
    model: Model,
    /// Number of particles of the model.
    #[arg(short = 'n', long = "n", default_value_t = 4096)]
    n: usize,
    /// Random seed of the model.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Galaxy models: Toomre Q of the disk at 2.5 scale lengths
    /// (disk-galaxy, milky-way).
    #[arg(long, default_value_t = ModelParams::default().toomre_q)]
    q: f64,
    /// Galaxy merger: mass of the primary over the secondary's.
    #[arg(long, default_value_t = ModelParams::default().mass_ratio)]
    ratio: f64,
    /// Galaxy merger: pericentre of the orbit (kpc).
    #[arg(long, default_value_t = ModelParams::default().pericenter)]
    rperi: f64,
    /// Minor mergers: number of satellites.
    #[arg(long, default_value_t = ModelParams::default().satellites)]
    satellites: u32,
    /// Start from this snapshot instead of a model (.tipsy, .bonsai, .csv,
    /// .gadget, or a Tipsy, Gadget-2 or CSV file of any name; a Gadget-2
    /// snapshot of several files by any of them).
    #[arg(long = "in")]
    input: Option<String>,
    /// The input is in physical units: its length unit in kpc, mass unit
    /// in M☉ and velocity unit in km/s (Gadget-2's defaults: 1 1e10 1);
    /// it is converted to webgrav's G = 1 units as Bonsai chooses them
    /// (1 kpc, 2.325e9 M☉, 100 km/s; time unit 9.78 Myr).
    #[arg(long, num_args = 3, value_names = ["KPC", "MSUN", "KMS"])]
    units: Option<Vec<f64>>,
}

impl InitialArgs {
    /// The initial state: the snapshot file, or the model, whose N is
    /// checked against the device (for `solver`) and the host's memory
    /// before anything is generated.
    fn load(&self, ctx: &GpuContext, solver: SolverKind) -> Result<Snapshot> {
        if self.units.is_some() && self.input.is_none() {
            return Err(Error::InvalidParameter(
                "--units converts an input file (--in); a model is generated in N-body units"
                    .into(),
            ));
        }
        match &self.input {
            Some(path) => {
                let mut snap = snapshot::read_file(path)?;
                if let Some(u) = &self.units {
                    if !u.iter().all(|x| x.is_finite() && *x > 0.0) {
                        return Err(Error::InvalidParameter(format!(
                            "--units must be three positive numbers, got {u:?}"
                        )));
                    }
                    snapshot::gadget::to_nbody(&mut snap, u[0], u[1], u[2]);
                }
                note_types(&snap, path);
                Ok(snap)
            }
            None => {
                let n = self.n as u64;
                let params = self.model_params()?;
                check_device_particle_count(ctx, n, solver)?;
                check_host_memory(n)?;
                // Component kinds go into the files (halo as dark matter,
                // the rest as stars; Bonsai's id ranges; a CSV type column).
                let tagged = self.model.generate_with(self.n, self.seed, &params)?;
                Ok(Snapshot {
                    types: tagged.types(),
                    particles: tagged.particles,
                    ..Default::default()
                })
            }
        }
    }

    /// The input files (that no output may overwrite).
    fn inputs(&self) -> Vec<&str> {
        self.input.iter().map(|s| s.as_str()).collect()
    }
}

impl InitialArgs {
    /// The galaxy models' parameters, checked against `run::RUN_PARAMS`.
    fn model_params(&self) -> Result<ModelParams> {
        crate::run::params::model_params(self.q, self.ratio, self.rperi, self.satellites as f64)
    }
}

/// The solver and its parameters (ranges: `run::RUN_PARAMS`).
#[derive(Args, Clone)]
struct SolverArgs {
    #[arg(long, value_parser = solver_parser(), default_value = "direct")]
    solver: SolverKind,
    /// Plummer softening length (N-body units).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    eps: f32,
    /// Opening angle θ of the tree solver's MAC.
    #[arg(long, default_value_t = 0.75, allow_negative_numbers = true)]
    theta: f32,
    /// Tree: tolerance α of the acceleration MAC, which takes a cell when
    /// its quadrupole error estimate is at most α times the smallest last
    /// |a| of the group (θ then only starts the run); 0 (default) keeps
    /// Bonsai's opening angle θ.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    alpha: f32,
    /// Tree: build the tree every K steps and only refit it (moments, tight
    /// boxes, groups at the new positions) in between, like Bonsai's
    /// --rebuild. 1 builds every step.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "K",
        allow_negative_numbers = true
    )]
    rebuild: i64,
    /// Hermite: time-step accuracy η. 4th order and `--criterion aarseth`:
    /// Aarseth's dt = sqrt(η (|a||a''| + |a'|^2) / (|a'||a'''| + |a''|^2));
    /// 6th order with `--criterion sapporo2` (default): the mean of that
    /// and Nitadori & Makino's dt6 = sqrt(η) ((sqrt(|a||a''|) + |a'|) /
    /// (sqrt(|a'''||a^(5)|) + |a^(4)|))^(1/3). Both scale as sqrt(η).
    #[arg(long, default_value_t = 0.02, allow_negative_numbers = true)]
    eta: f64,
    /// 6th-order Hermite time-step criterion: sapporo2 or aarseth.
    #[arg(long, value_parser = criterion_parser(), default_value = "sapporo2")]
    criterion: Criterion,
    /// Hermite force arithmetic: ds (double-single positions and sums, every
    /// interaction exact in the sums), ds-fast (Sapporo2's DS: f32 sums of
    /// 32-interaction runs), f32, or dp (native f64 where the adapter has it).
    #[arg(long, value_parser = precision_parser(), default_value = "ds")]
    precision: Precision,
    /// Hermite: largest block time step (a power of two).
    #[arg(long, default_value_t = 0.125, allow_negative_numbers = true)]
    dt_max: f64,
}

impl SolverArgs {
    /// The validated run configuration with leapfrog step `dt`.
    fn config(&self, dt: f64) -> Result<RunConfig> {
        RunParams {
            solver: self.solver,
            eps: self.eps,
            dt,
            theta: self.theta,
            alpha: self.alpha,
            rebuild: rebuild_steps(self.rebuild, self.solver)?,
            eta: self.eta,
            criterion: self.criterion,
            precision: self.precision,
            dt_max: self.dt_max,
        }
        .validate()
    }
}

/// `--rebuild K` as the table's whole number: where it applies, negative
/// and huge values get the table's message rather than clap's.
fn rebuild_steps(k: i64, solver: SolverKind) -> Result<u32> {
    let p = crate::run::params::param("rebuild").expect("a run parameter");
    if p.applies_to(solver) {
        p.validate(k as f64)?;
    }
    Ok(u32::try_from(k).unwrap_or(1).max(1))
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

fn check_time(name: &str, t: f64) -> Result<()> {
    if t.is_finite() && t >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter(format!(
            "{name} must be >= 0, got {t}"
        )))
    }
}
