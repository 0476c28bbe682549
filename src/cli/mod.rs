//! The native command-line front end (feature `cli`): argument parsing
//! with clap lives here and only here; each command is a module that calls
//! the core (`run::Run` for everything that integrates).

mod bench;
mod convert;
mod forces;
mod render;
mod run;

use crate::error::{Error, Result};
use crate::hermite::Precision;
use crate::render::ColorMode;
use crate::run::{RunConfig, RunParams, SolverKind};
use crate::snapshot::{self, Snapshot};
use crate::state::{Model, ModelParams};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
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
        Command::Run(a) => run::run(a).await,
        Command::Forces(a) => forces::forces(a).await,
        Command::Bench(a) => bench::bench(a).await,
        Command::Convert { input, output } => convert::convert(&input, &output),
        Command::Render(a) => render::render(a).await,
        Command::Info => convert::info().await,
    }
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
    /// Start from this snapshot (.tipsy, .bonsai, .csv) instead of a model.
    #[arg(long = "in")]
    input: Option<String>,
}

impl InitialArgs {
    fn load(&self) -> Result<Snapshot> {
        match &self.input {
            Some(path) => snapshot::read_file(path),
            None => Ok(Snapshot {
                particles: self
                    .model
                    .generate_with(self.n, self.seed, &self.model_params()?)?
                    .particles,
                ..Default::default()
            }),
        }
    }
}

impl InitialArgs {
    /// The galaxy models' parameters, checked against `run::RUN_PARAMS`.
    fn model_params(&self) -> Result<ModelParams> {
        for (key, x) in [
            ("q", self.q),
            ("ratio", self.ratio),
            ("rperi", self.rperi),
            ("satellites", self.satellites as f64),
        ] {
            crate::run::params::param(key)
                .expect("a model parameter")
                .validate(x)?;
        }
        Ok(ModelParams {
            toomre_q: self.q,
            mass_ratio: self.ratio,
            pericenter: self.rperi,
            satellites: self.satellites,
        })
    }
}

/// The solver and its parameters (ranges: `run::RUN_PARAMS`).
#[derive(Args)]
struct SolverArgs {
    #[arg(long, value_parser = solver_parser(), default_value = "direct")]
    solver: SolverKind,
    /// Plummer softening length (N-body units).
    #[arg(long, default_value_t = 0.01)]
    eps: f32,
    /// Opening angle θ of the tree solver's MAC.
    #[arg(long, default_value_t = 0.75)]
    theta: f32,
    /// Hermite: accuracy parameter of Aarseth's time-step criterion
    /// dt = sqrt(eta (|a||a''| + |a'|^2) / (|a'||a'''| + |a''|^2)).
    #[arg(long, default_value_t = 0.02)]
    eta: f64,
    /// Hermite force arithmetic: f32, or double-single positions and sums.
    #[arg(long, value_parser = precision_parser(), default_value = "ds")]
    precision: Precision,
    /// Hermite: largest block time step (a power of two).
    #[arg(long, default_value_t = 0.125)]
    dt_max: f64,
}

impl SolverArgs {
    /// The validated run configuration with leapfrog step `dt`.
    fn config(&self, dt: f32) -> Result<RunConfig> {
        RunParams {
            solver: self.solver,
            eps: self.eps,
            dt,
            theta: self.theta,
            eta: self.eta,
            precision: self.precision,
            dt_max: self.dt_max,
        }
        .validate()
    }
}

/// Fails on a bad snapshot extension before spending GPU time, not after.
fn check_output_path(path: &Option<String>) -> Result<()> {
    if let Some(p) = path {
        snapshot::Format::from_path(p)?;
    }
    Ok(())
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
