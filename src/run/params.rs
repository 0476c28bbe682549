//! Every parameter of a run, described once: key (the URL parameter and
//! the CLI's `--key`), type and range, default, and the solvers it applies
//! to. URL parsing and the page's controls (`app::settings`, which adds the
//! view's parameters), the CLI's checks and [`RunParams::validate`] all
//! read this table, so a range or a default is changed here and nowhere
//! else.

use super::block::{Timesteps, MAX_LEVELS};
use super::SolverKind;
use crate::error::{Error, Result};
use crate::hermite::{Criterion, Precision};
use crate::state::{Model, ModelParams};

/// The type and range of a parameter's values.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// One of a list of names.
    Choice(fn() -> Vec<&'static str>),
    /// A real number in a range.
    Number(Range),
    /// A whole number in `min..=max`.
    Whole { min: u64, max: u64 },
    /// On or off (`1`/`0`).
    Flag,
}

/// Real numbers in `min..=max` (`min` itself excluded when `min_open`),
/// powers of two only when `power_of_two`.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub min_open: bool,
    pub power_of_two: bool,
}

impl Range {
    pub fn contains(&self, x: f64) -> bool {
        x.is_finite()
            && (x > self.min || (!self.min_open && x == self.min))
            && x <= self.max
            && (!self.power_of_two || x.log2().fract() == 0.0)
    }

    /// E.g. "a number > 0 and <= 1".
    pub fn describe(&self) -> String {
        let (min, max) = (self.min, self.max);
        let range = if self.min_open {
            format!("a number > {min} and <= {max}")
        } else {
            format!("a number in [{min}, {max}]")
        };
        if self.power_of_two {
            format!("{range}, a power of two")
        } else {
            range
        }
    }
}

/// One parameter.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub key: &'static str,
    /// What it is, for labels and help.
    pub label: &'static str,
    pub kind: Kind,
    /// The default in its URL form.
    pub default: &'static str,
    /// The solvers it matters to; empty: every solver.
    pub solvers: &'static [SolverKind],
    /// The models it matters to; empty: every model.
    pub models: &'static [Model],
}

/// A number in `[min, max]`.
pub const fn number(min: f64, max: f64) -> Kind {
    Kind::Number(Range {
        min,
        max,
        min_open: false,
        power_of_two: false,
    })
}

/// A number in `(0, max]`.
pub const fn positive(max: f64) -> Kind {
    Kind::Number(Range {
        min: 0.0,
        max,
        min_open: true,
        power_of_two: false,
    })
}

/// `tree::MAX_THETA` (checked below) as the decimal it is written as (the f32 widened
/// would print as 1.149999976...).
const THETA_MAX: f64 = 1.15;

const HERMITE: &[SolverKind] = &[SolverKind::Hermite4, SolverKind::Hermite6];

/// The tolerances α of the acceleration MAC whose force errors match or
/// beat Bonsai's at its opening angles θ, as (θ, α): the median and the
/// 99th percentile of the relative acceleration error, measured against
/// Bonsai's own forces on the same Plummer spheres of 2^15 to 2^24
/// particles with ε from 0 to 0.05 (BENCHMARKS.md "One set of defaults").
/// One α holds over that whole range for each θ; larger ones fail at the
/// small N (0.12 and 0.0025 at 2^15–2^17).
pub const ALPHA_FOR_BONSAI_THETA: [(f32, f32); 2] = [(0.75, 0.1), (0.5, 0.002)];

/// The parameters of a run, in the order of the canonical query.
pub const RUN_PARAMS: &[Param] = &[
    Param {
        key: "model",
        label: "initial-condition model",
        kind: Kind::Choice(|| Model::ALL.iter().map(|m| m.name()).collect()),
        default: "plummer",
        solvers: &[],
        models: &[],
    },
    Param {
        key: "n",
        label: "number of particles",
        // The device's limit is checked when the run is created.
        kind: Kind::Whole {
            min: 1,
            max: u32::MAX as u64 / 2,
        },
        default: "16384",
        solvers: &[],
        models: &[],
    },
    Param {
        key: "seed",
        label: "random seed of the model",
        kind: Kind::Whole {
            min: 0,
            max: u32::MAX as u64,
        },
        default: "1",
        solvers: &[],
        models: &[],
    },
    // The galaxy models' parameters (`state::ModelParams`; the defaults
    // are its defaults, checked by a test).
    Param {
        key: "q",
        label: "Toomre Q of the disk at 2.5 scale lengths",
        kind: number(0.5, 5.0),
        default: "1.2",
        solvers: &[],
        models: &[Model::DiskGalaxy, Model::MilkyWay, Model::GalaxyCrash],
    },
    Param {
        key: "ratio",
        label: "mass ratio of the merging galaxies (primary / secondary)",
        kind: number(1.0, 100.0),
        default: "3",
        solvers: &[],
        models: &[Model::GalaxyMerger, Model::GalaxyCrash],
    },
    Param {
        key: "rperi",
        label: "pericentre of the merger's orbit (kpc)",
        kind: positive(100.0),
        default: "10",
        solvers: &[],
        models: &[Model::GalaxyMerger, Model::GalaxyCrash],
    },
    Param {
        key: "incl1",
        label: "inclination of the primary's disk to the orbit's plane (degrees: 0 prograde, 90 polar, 180 retrograde)",
        kind: number(0.0, 180.0),
        default: "0",
        solvers: &[],
        models: &[Model::GalaxyCrash],
    },
    Param {
        key: "incl2",
        label: "inclination of the secondary's disk to the orbit's plane (degrees: 0 prograde, 90 polar, 180 retrograde)",
        kind: number(0.0, 180.0),
        default: "60",
        solvers: &[],
        models: &[Model::GalaxyCrash],
    },
    Param {
        key: "mhalo",
        label: "dark-halo mass of each galaxy in units of its stellar (disk + bulge) mass (0: no halo; the Milky Way's is 11)",
        kind: number(0.0, 30.0),
        default: "11",
        solvers: &[],
        models: &[Model::GalaxyCrash],
    },
    Param {
        key: "satellites",
        label: "number of satellite galaxies",
        kind: Kind::Whole { min: 0, max: 64 },
        default: "8",
        solvers: &[],
        models: &[Model::MinorMergers],
    },
    Param {
        key: "solver",
        label: "gravity solver and integrator",
        kind: Kind::Choice(|| SolverKind::ALL.iter().map(|s| s.name()).collect()),
        default: "tree",
        solvers: &[],
        models: &[],
    },
    Param {
        key: "theta",
        label: "opening angle θ of the tree's MAC (given without α it selects that MAC, α = 0; with α > 0 it only starts the run)",
        kind: positive(THETA_MAX),
        default: "0.75",
        solvers: &[SolverKind::Tree],
        models: &[],
    },
    Param {
        key: "alpha",
        label: "tolerance α of the tree's acceleration MAC (0: Bonsai's opening angle θ; above 0 a cell is taken when its quadrupole error estimate is at most α times the group's smallest last |a|, and θ only starts the run)",
        kind: number(0.0, 1.0),
        // The α for Bonsai's θ = 0.75 (`ALPHA_FOR_BONSAI_THETA`): Bonsai's
        // errors at 0.57 of its time on an H100, where the run's energy
        // error is the time step's (guide/src/solvers-and-models.md "The
        // defaults", BENCHMARKS.md "One set of defaults").
        default: "0.1",
        solvers: &[SolverKind::Tree],
        models: &[],
    },
    Param {
        key: "rebuild",
        label: "tree rebuilt every K steps, with block time steps every K sub-steps counted from the start of each step (in between only its moments, boxes and groups are refitted to the moved particles: Bonsai's --rebuild)",
        kind: Kind::Whole { min: 1, max: 64 },
        default: "1",
        solvers: &[SolverKind::Tree],
        models: &[],
    },
    Param {
        key: "timesteps",
        label: "time steps of the tree's leapfrog (shared: dt for every particle; block: each particle's own dt/2^k from sqrt(2 η ε / |a|), and only the groups whose steps end walk the tree, as in GADGET-2 and GOTHIC)",
        kind: Kind::Choice(|| Timesteps::ALL.iter().map(|t| t.name()).collect()),
        default: "shared",
        solvers: &[SolverKind::Tree],
        models: &[],
    },
    Param {
        key: "levels",
        label: "levels of block time steps: the smallest step is dt/2^levels",
        kind: Kind::Whole {
            min: 1,
            max: MAX_LEVELS as u64,
        },
        default: "4",
        solvers: &[SolverKind::Tree],
        models: &[],
    },
    Param {
        key: "eta",
        label: "time-step accuracy η (Hermite: of Aarseth's criterion; tree with block steps: GADGET's ErrTolIntAccuracy, dt = sqrt(2 η ε / |a|))",
        kind: positive(1.0),
        default: "0.02",
        solvers: &[SolverKind::Tree, SolverKind::Hermite4, SolverKind::Hermite6],
        models: &[],
    },
    Param {
        key: "criterion",
        label: "6th-order time-step criterion (sapporo2: mean of Aarseth's with η and the generalised one with √η; aarseth: Aarseth's with η)",
        kind: Kind::Choice(|| Criterion::ALL.iter().map(|c| c.name()).collect()),
        default: "sapporo2",
        solvers: &[SolverKind::Hermite6],
        models: &[],
    },
    Param {
        key: "precision",
        label: "Hermite force arithmetic (ds: double-single; ds-fast: Sapporo2's double-single, f32 sums of 32-interaction runs; f32; or dp: native f64 where the adapter has it, never in browsers)",
        kind: Kind::Choice(|| Precision::ALL.iter().map(|p| p.name()).collect()),
        default: "ds",
        solvers: HERMITE,
        models: &[],
    },
    Param {
        key: "eps",
        label: "Plummer softening length",
        kind: number(0.0, 10.0),
        default: "0.01",
        solvers: &[],
        models: &[],
    },
    Param {
        key: "dt",
        label: "time step (Hermite: time advanced per step of a frame)",
        kind: positive(1.0),
        default: "0.0078125",
        solvers: &[],
        models: &[],
    },
    Param {
        key: "dt_max",
        label: "largest Hermite block step",
        kind: Kind::Number(Range {
            min: 0.0,
            max: 1.0,
            min_open: true,
            power_of_two: true,
        }),
        default: "0.125",
        solvers: HERMITE,
        models: &[],
    },
];

/// The α of a run whose user named the opening angle θ (`theta_given`)
/// or α: naming θ alone asks for the opening-angle MAC (α = 0), since with
/// the default α > 0 θ would only start the run. Every front end applies
/// it to what its user gave: the CLI's options, the URL's keys, Python's
/// keywords.
pub fn alpha_given(theta_given: bool, alpha_given: bool, alpha: f32) -> f32 {
    if theta_given && !alpha_given {
        0.0
    } else {
        alpha
    }
}

/// The run parameter `key`.
pub fn param(key: &str) -> Option<&'static Param> {
    RUN_PARAMS.iter().find(|p| p.key == key)
}

impl Param {
    /// Whether the parameter matters to `solver`.
    pub fn applies_to(&self, solver: SolverKind) -> bool {
        self.solvers.is_empty() || self.solvers.contains(&solver)
    }

    /// Whether the parameter matters to `model`.
    pub fn applies_to_model(&self, model: Model) -> bool {
        self.models.is_empty() || self.models.contains(&model)
    }

    /// Whether a new value makes a new model (rather than a new run
    /// configuration): the model, N, seed and the models' parameters.
    pub fn shapes_model(&self) -> bool {
        matches!(self.key, "model" | "n" | "seed") || !self.models.is_empty()
    }

    /// The names a `Choice` offers (empty for other kinds).
    pub fn choices(&self) -> Vec<&'static str> {
        match self.kind {
            Kind::Choice(names) => names(),
            _ => Vec::new(),
        }
    }

    /// What a valid value looks like, e.g. "a number > 0 and <= 1".
    pub fn expected(&self) -> String {
        match self.kind {
            Kind::Choice(names) => format!("one of {}", names().join(", ")),
            Kind::Number(r) => r.describe(),
            Kind::Whole { min, max } => format!("a whole number in [{min}, {max}]"),
            Kind::Flag => "1 or 0".into(),
        }
    }

    /// Checks a number against the range; the error says what is
    /// expected.
    pub fn check(&self, x: f64) -> std::result::Result<f64, String> {
        let ok = match self.kind {
            Kind::Number(r) => r.contains(x),
            // Accept 65536, 65536.0 and 6.5536e4 alike.
            Kind::Whole { min, max } => x.fract() == 0.0 && x >= min as f64 && x <= max as f64,
            Kind::Flag => x == 0.0 || x == 1.0,
            Kind::Choice(_) => false,
        };
        if ok {
            Ok(x)
        } else {
            Err(format!("expected {}", self.expected()))
        }
    }

    /// Parses the URL form of a number (`Number`, `Whole`) and checks it.
    pub fn parse_number(&self, text: &str) -> std::result::Result<f64, String> {
        match text.trim().parse::<f64>() {
            Ok(x) => self.check(x),
            Err(_) => Err(format!("expected {}", self.expected())),
        }
    }

    /// Parses the URL form of a flag.
    pub fn parse_flag(&self, text: &str) -> std::result::Result<bool, String> {
        match text.trim() {
            "1" | "true" | "yes" | "on" | "" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("expected {}", self.expected())),
        }
    }

    /// The value checked as an `InvalidParameter` error naming the key.
    pub fn validate(&self, x: f64) -> Result<()> {
        self.check(x)
            .map(|_| ())
            .map_err(|e| Error::InvalidParameter(format!("{} = {x}: {e}", self.key)))
    }
}

/// The galaxy models' parameters, each checked against its row of
/// `RUN_PARAMS` (`validate_model_params`).
pub fn model_params(
    q: f64,
    ratio: f64,
    rperi: f64,
    satellites: f64,
    incl1: f64,
    incl2: f64,
    mhalo: f64,
) -> Result<ModelParams> {
    // A whole number is checked as given (2.5 satellites are refused, not
    // truncated).
    param("satellites")
        .expect("a model parameter")
        .validate(satellites)?;
    let p = ModelParams {
        toomre_q: q,
        mass_ratio: ratio,
        pericenter: rperi,
        satellites: satellites as u32,
        inclination1: incl1,
        inclination2: incl2,
        halo_mass: mhalo,
    };
    validate_model_params(&p)?;
    Ok(p)
}

/// Each of the galaxy models' parameters against its row of `RUN_PARAMS`;
/// the error names the key and the range, e.g. "incl1 = 200: expected a
/// number in [0, 180]".
pub fn validate_model_params(p: &ModelParams) -> Result<()> {
    for (key, x) in [
        ("q", p.toomre_q),
        ("ratio", p.mass_ratio),
        ("rperi", p.pericenter),
        ("satellites", p.satellites as f64),
        ("incl1", p.inclination1),
        ("incl2", p.inclination2),
        ("mhalo", p.halo_mass),
    ] {
        param(key).expect("a model parameter").validate(x)?;
    }
    Ok(())
}

/// Every numerical setting of a run, for any solver (each solver reads
/// those that apply to it). Build a [`RunConfig`] with `validate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunParams {
    pub solver: SolverKind,
    /// Plummer softening length.
    pub eps: f32,
    /// Leapfrog time step; for the Hermite integrators, the time one
    /// queued step advances (they choose their own block steps).
    pub dt: f64,
    /// Opening angle of the tree's MAC.
    pub theta: f32,
    /// Tolerance of the tree's acceleration MAC (0: the opening angle's).
    pub alpha: f32,
    /// The tree is built anew every `rebuild` force evaluations and refitted
    /// in between (1: every step).
    pub rebuild: u32,
    /// The tree's leapfrog: one shared step or block steps.
    pub timesteps: Timesteps,
    /// Depth of the block steps' hierarchy (smallest step dt / 2^levels).
    pub levels: u32,
    /// Time-step accuracy (Hermite; the tree's block steps).
    pub eta: f64,
    /// The 6th-order Hermite time-step criterion.
    pub criterion: Criterion,
    /// Hermite force arithmetic.
    pub precision: Precision,
    /// Largest Hermite block step (a power of two).
    pub dt_max: f64,
}

impl RunParams {
    /// What of these parameters a run on several ranks (`webgrav run`
    /// under `mpirun`) does not offer yet, in the CLI's words: it runs the
    /// tree (shared or block steps, any `--rebuild`).
    pub fn not_on_several_ranks(&self) -> Option<String> {
        if self.solver != SolverKind::Tree {
            Some(format!("the {} solver", self.solver.name()))
        } else {
            None
        }
    }
}

impl Default for RunParams {
    /// The defaults of `RUN_PARAMS`.
    fn default() -> Self {
        let number = |key: &str| {
            param(key)
                .and_then(|p| p.default.parse::<f64>().ok())
                .expect("numeric default")
        };
        Self {
            solver: SolverKind::from_name(param("solver").expect("solver").default)
                .expect("default solver"),
            eps: number("eps") as f32,
            dt: number("dt"),
            theta: number("theta") as f32,
            alpha: number("alpha") as f32,
            rebuild: number("rebuild") as u32,
            timesteps: Timesteps::from_name(param("timesteps").expect("timesteps").default)
                .expect("default time steps"),
            levels: number("levels") as u32,
            eta: number("eta"),
            criterion: Criterion::from_name(param("criterion").expect("criterion").default)
                .expect("default criterion"),
            precision: Precision::from_name(param("precision").expect("precision").default)
                .expect("default precision"),
            dt_max: number("dt_max"),
        }
    }
}

impl RunParams {
    /// Checks every parameter that applies to the solver against
    /// `RUN_PARAMS`.
    pub fn validate(self) -> Result<RunConfig> {
        for (key, x) in [
            ("eps", self.eps as f64),
            ("dt", self.dt),
            ("theta", self.theta as f64),
            ("alpha", self.alpha as f64),
            ("rebuild", self.rebuild as f64),
            ("levels", self.levels as f64),
            ("eta", self.eta),
            ("dt_max", self.dt_max),
        ] {
            let p = param(key).expect("run parameter");
            if p.applies_to(self.solver) {
                p.validate(x)?;
            }
        }
        if self.timesteps == Timesteps::Block {
            if self.solver != SolverKind::Tree {
                return Err(Error::InvalidParameter(format!(
                    "timesteps = block is the tree solver's leapfrog, not {}'s{}",
                    self.solver.name(),
                    if self.solver.is_hermite() {
                        " (the Hermite integrators always take block steps)"
                    } else {
                        ""
                    }
                )));
            }
            if self.eps <= 0.0 {
                return Err(Error::InvalidParameter(
                    "timesteps = block needs a softening eps > 0: the step is \
                     sqrt(2 eta eps / |a|)"
                        .into(),
                ));
            }
        }
        Ok(RunConfig(self))
    }
}

/// Run parameters that passed `RunParams::validate`: the only way to
/// build one, so a run never starts from invalid settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunConfig(RunParams);

impl RunConfig {
    pub fn params(&self) -> &RunParams {
        &self.0
    }

    pub fn solver(&self) -> SolverKind {
        self.0.solver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::MAX_THETA;

    #[test]
    fn theta_limit_is_the_trees() {
        assert_eq!(THETA_MAX as f32, MAX_THETA);
    }

    #[test]
    fn alpha_limit_is_the_trees() {
        let Kind::Number(r) = param("alpha").unwrap().kind else {
            panic!("alpha is a number");
        };
        assert_eq!(r.max as f32, crate::tree::MAX_ALPHA);
    }

    // The default tree setting is the documented pair for Bonsai's
    // θ = 0.75: θ starts the run, α takes over.
    #[test]
    fn the_default_tree_setting_is_a_documented_pair() {
        let d = RunParams::default();
        assert_eq!((d.theta, d.alpha), ALPHA_FOR_BONSAI_THETA[0]);
        assert_eq!(d.solver, SolverKind::Tree);
    }

    #[test]
    fn model_parameter_defaults_are_the_models() {
        let d = crate::state::ModelParams::default();
        let default = |key: &str| param(key).unwrap().default.parse::<f64>().unwrap();
        assert_eq!(default("q"), d.toomre_q);
        assert_eq!(default("ratio"), d.mass_ratio);
        assert_eq!(default("rperi"), d.pericenter);
        assert_eq!(default("satellites"), d.satellites as f64);
        assert_eq!(default("incl1"), d.inclination1);
        assert_eq!(default("incl2"), d.inclination2);
        assert_eq!(default("mhalo"), d.halo_mass);
        validate_model_params(&d).unwrap();
    }

    #[test]
    fn bad_model_parameters_are_refused_by_key_and_range() {
        let ok = |incl1: f64, incl2: f64, mhalo: f64| {
            model_params(1.2, 3.0, 10.0, 8.0, incl1, incl2, mhalo).map_err(|e| e.to_string())
        };
        ok(0.0, 180.0, 0.0).unwrap();
        ok(180.0, 0.0, 30.0).unwrap();
        for ((incl1, incl2, mhalo), words) in [
            (
                (200.0, 60.0, 11.0),
                "incl1 = 200: expected a number in [0, 180]",
            ),
            (
                (0.0, -5.0, 11.0),
                "incl2 = -5: expected a number in [0, 180]",
            ),
            (
                (0.0, 60.0, 31.0),
                "mhalo = 31: expected a number in [0, 30]",
            ),
            (
                (0.0, 60.0, -1.0),
                "mhalo = -1: expected a number in [0, 30]",
            ),
            ((f64::NAN, 60.0, 11.0), "incl1 = NaN: expected"),
        ] {
            let e = ok(incl1, incl2, mhalo).unwrap_err();
            assert!(e.contains(words), "{e}");
        }
        let e = model_params(1.2, 0.5, 10.0, 8.0, 0.0, 60.0, 11.0).unwrap_err();
        assert!(e.to_string().contains("ratio = 0.5"), "{e}");
        let e = model_params(1.2, 3.0, 10.0, 2.5, 0.0, 60.0, 11.0).unwrap_err();
        assert!(e.to_string().contains("satellites = 2.5"), "{e}");
    }
}
