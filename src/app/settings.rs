//! Every setting of the web app as a URL parameter, e.g.
//! `?model=plummer&n=65536&solver=tree&theta=0.5&autoplay=1`: parsed here
//! (with a warning for each bad or unknown parameter, never a failure) and
//! written back as a canonical query, so a run can be shared or embedded.
//! The parameters are `run::RUN_PARAMS` followed by the view's
//! `VIEW_PARAMS`: one table gives every key, range, default and the solvers
//! it applies to, for the URL, the page's controls (the JavaScript reads it
//! through `catalog`) and the CLI's checks. Besides the settings, the
//! URL may name files for the page to open (`Sources`: snapshots, series
//! indexes, a picture to show without WebGPU), same-origin only, and the
//! origins that may drive an embedded page (`super::embedding`).

use crate::gpu::GpuContext;
use crate::hermite::{Criterion, Precision};
use crate::render::{Camera, ColorMode, MapKind, Theme};
use crate::run::block::Timesteps;
use crate::run::params::{alpha_given, number, param as run_param, positive, Kind, Param};
use crate::run::{RunParams, SolverKind, RUN_PARAMS};
use crate::state::{Model, ModelParams, Tagged};

/// The page's start on a software adapter, unless the URL chose the solver
/// or N (see `Settings::apply_software_defaults`).
pub const SOFTWARE_DEFAULTS: &[(&str, &str)] = &[("solver", "direct"), ("n", "2048")];

/// Teaching presets: `?preset=NAME` sets these parameters first; explicit
/// parameters override them. The galaxies' units are in
/// `state::galaxy::catalog` (N-body units, or Bonsai's kpc, 100 km/s and
/// 9.78 Myr for the Milky Way and the merger), and their time steps
/// resolve the bulges' crossing times.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "plummer-relaxation",
        title: "Plummer sphere: a system in equilibrium relaxes slowly",
        caption: "A star cluster in equilibrium: its shells (colours) mix only slowly, by two-body encounters.",
        query: "model=plummer&n=16384&solver=tree&theta=0.5&eps=0.01&dt=0.0078125&color=component",
    },
    Preset {
        name: "cold-collapse",
        title: "Cold collapse: a sphere at rest falls in and bounces into equilibrium",
        caption: "Released from rest, the sphere falls in, bounces and settles into a virialised halo within a few crossing times.",
        query: "model=cold-collapse&n=16384&solver=tree&theta=0.5&eps=0.03&dt=0.00390625&color=speed&spf=2",
    },
    Preset {
        name: "disk-galaxy",
        title: "Disk galaxy: an exponential disk rotating in its dark halo",
        caption: "A cool exponential disk (Toomre Q = 1.2) in a bulge and dark halo (hidden: key h) grows spiral arms within a few rotations.",
        query: "model=disk-galaxy&n=32768&solver=tree&theta=0.6&eps=0.03&dt=0.015625&color=component&spf=2&halo=0&yaw=0&pitch=0.6",
    },
    Preset {
        name: "milky-way",
        title: "Milky Way: disk, bulge and dark halo (Bonsai units, 9.78 Myr per time unit)",
        caption: "The Gordon Bell paper's Milky Way model (halo hidden: key h): its disk forms a bar within a few hundred million years.",
        query: "model=milky-way&n=65536&solver=tree&theta=0.6&eps=0.1&dt=0.03125&color=component&spf=2&halo=0&yaw=0&pitch=0",
    },
    Preset {
        name: "galaxy-merger",
        title: "Galaxy merger: two galaxies with black holes, mass ratio 1:3, pericentre 10 kpc",
        caption: "Two spheroidal galaxies, 1:3 in mass, fall together on a parabolic orbit; their black holes sink and merge (the Bonsai paper's test).",
        query: "model=galaxy-merger&n=48002&solver=tree&theta=0.75&eps=0.1&dt=0.015625&color=component&spf=4",
    },
    Preset {
        name: "minor-mergers",
        title: "Minor mergers: eight small galaxies fall into a giant elliptical",
        caption: "Small satellites sink into a giant elliptical by dynamical friction and build up its outskirts (thesis ch. 5).",
        query: "model=minor-mergers&n=32768&solver=tree&theta=0.6&eps=0.02&dt=0.015625&color=component&spf=2",
    },
];

/// A teaching preset: a run with a title and a one-line explanation (the
/// page shows both; an embedded page shows them as its caption). Its
/// query may turn the camera (a disk face-on or inclined); the view is
/// fitted to what is drawn unless it also gives distance or target.
pub struct Preset {
    pub name: &'static str,
    pub title: &'static str,
    pub caption: &'static str,
    pub query: &'static str,
}

/// The preset `name`.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The settings of a run and its view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub model: Model,
    /// Particles of the model.
    pub n: u32,
    /// Random seed of the model.
    pub seed: u32,
    /// Parameters of the galaxy models.
    pub model_params: ModelParams,
    /// Solver and every numerical parameter of the run.
    pub run: RunParams,
    /// Leapfrog steps per animation frame (for Hermite: the frame advances
    /// the time by `steps_per_frame × dt` in block steps).
    pub steps_per_frame: u32,
    /// Start running at once.
    pub autoplay: bool,
    /// Canvas with a minimal overlay (for iframes).
    pub embed: bool,
    pub camera: Camera,
    /// Draw the dark haloes of galaxy models (colouring by component
    /// shows the disk and bulge clearer without them).
    pub show_halo: bool,
    /// Draw the bodies' trails (few-body runs).
    pub trails: bool,
    /// Chart K, W and E beside the energy error.
    pub energy_chart: bool,
    /// Levels of the tree's cells drawn over the picture (0: none).
    pub cell_levels: u32,
    /// The URL framed the view (distance or target): keep it (no fit on
    /// import or restart).
    pub camera_given: bool,
}

impl Default for Settings {
    /// The defaults of `RUN_PARAMS` (the run's, read by `RunParams`, and
    /// the model's) and of `VIEW_PARAMS`.
    fn default() -> Self {
        let row = |key: &str| run_param(key).expect("a run parameter").default;
        let whole = |key: &str| row(key).parse::<u32>().expect("a whole default");
        Self {
            model: Model::from_name(row("model")).expect("the default model"),
            n: whole("n"),
            seed: whole("seed"),
            model_params: ModelParams::default(),
            run: RunParams::default(),
            steps_per_frame: 1,
            autoplay: true,
            embed: false,
            camera: Camera::default(),
            show_halo: true,
            trails: false,
            energy_chart: false,
            cell_levels: 0,
            camera_given: false,
        }
    }
}

/// Parameters that describe the camera.
pub const CAMERA_KEYS: &[&str] = &["yaw", "pitch", "dist", "tx", "ty", "tz", "fov"];

/// Parameters that frame the view (any of them makes `camera_given`); the
/// others turn it, and a fit keeps them.
pub const FRAMING_KEYS: &[&str] = &["dist", "tx", "ty", "tz"];

const fn view(key: &'static str, label: &'static str, kind: Kind, default: &'static str) -> Param {
    Param {
        key,
        label,
        kind,
        default,
        solvers: &[],
        models: &[],
    }
}

/// The page's own parameters (frame pacing, page mode, view), after
/// `RUN_PARAMS` in the canonical query.
pub const VIEW_PARAMS: &[Param] = &[
    view(
        "spf",
        "steps per animation frame",
        Kind::Whole { min: 1, max: 64 },
        "1",
    ),
    view("autoplay", "start running", Kind::Flag, "1"),
    view("embed", "canvas with a minimal overlay", Kind::Flag, "0"),
    view(
        "color",
        "colour by",
        Kind::Choice(|| ColorMode::ALL.iter().map(|c| c.name()).collect()),
        "speed",
    ),
    view(
        "map",
        "show",
        Kind::Choice(|| MapKind::ALL.iter().map(|m| m.name()).collect()),
        "light",
    ),
    view(
        "theme",
        "dark (light on black) or light (ink on white: projectors, print)",
        Kind::Choice(|| Theme::ALL.iter().map(|t| t.name()).collect()),
        "dark",
    ),
    view("ps", "sprite size (px)", number(0.5, 32.0), "3"),
    view(
        "bright",
        "brightness (exposure bias)",
        number(0.0, 100.0),
        "1",
    ),
    view("atten", "size by distance", Kind::Flag, "1"),
    view("halo", "show dark haloes", Kind::Flag, "1"),
    view(
        "trails",
        "draw the bodies' trails (runs of up to 64 bodies)",
        Kind::Flag,
        "0",
    ),
    view(
        "energy",
        "chart the kinetic, potential and total energy",
        Kind::Flag,
        "0",
    ),
    view(
        "cells",
        "draw the tree's cells of the first K levels (tree runs with shared steps; 0: none)",
        Kind::Whole { min: 0, max: 22 },
        "0",
    ),
    view("yaw", "camera yaw (rad)", number(-1e3, 1e3), "0"),
    view("pitch", "camera pitch (rad)", number(-1.55, 1.55), "0.3"),
    view("dist", "camera distance", positive(1e6), "6"),
    view("tx", "camera target x", number(-1e6, 1e6), "0"),
    view("ty", "camera target y", number(-1e6, 1e6), "0"),
    view("tz", "camera target z", number(-1e6, 1e6), "0"),
    view(
        "fov",
        "vertical field of view (rad)",
        number(0.05, 3.0),
        "0.8",
    ),
];

/// Every parameter of the page, in the order of the canonical query.
pub fn params() -> impl Iterator<Item = &'static Param> {
    RUN_PARAMS.iter().chain(VIEW_PARAMS)
}

/// The parameter `key` of the page.
pub fn param(key: &str) -> Option<&'static Param> {
    run_param(key).or_else(|| VIEW_PARAMS.iter().find(|p| p.key == key))
}

/// Every key, in the order of the canonical query.
pub fn keys() -> Vec<&'static str> {
    params().map(|p| p.key).collect()
}

impl Settings {
    /// Parses a URL query (with or without the leading `?`); returns the
    /// settings and one warning per parameter that was ignored.
    pub fn from_query(query: &str) -> (Settings, Vec<String>) {
        let (s, _, warnings) = Self::parse(query);
        (s, warnings)
    }

    /// The settings a URL query sets on a running page, each key once in
    /// its canonical form (a preset's included, and α where θ came without
    /// it, as `from_query` applies them), and one warning per parameter
    /// ignored: what the host-page API's `set` applies.
    pub fn changes(query: &str) -> (Vec<(&'static str, String)>, Vec<String>) {
        let (s, mut set, warnings) = Self::parse(query);
        if set.iter().any(|k| k == "theta") {
            set.push("alpha".to_string());
        }
        let changes = params()
            .filter(|p| set.iter().any(|k| k == p.key))
            .map(|p| (p.key, s.get(p.key).expect("every key has a value")))
            .collect();
        (changes, warnings)
    }

    /// `from_query`, and the keys it set.
    fn parse(query: &str) -> (Settings, Vec<String>, Vec<String>) {
        let pairs = parse_query(query);
        let mut s = Settings::default();
        let mut warnings = Vec::new();
        // The keys set (a preset's included), for α below.
        let mut set = Vec::new();
        let (base, source) = start_pairs(&pairs, &mut warnings);
        for (k, v) in base {
            match s.set(&k, &v) {
                Ok(()) => set.push(k),
                Err(e) => warnings.push(format!("{source}: {e}")),
            }
        }
        let setting = |k: &String| {
            let k = k.as_str();
            !START_KEYS.contains(&k) && !SOURCE_KEYS.contains(&k) && !EMBEDDING_KEYS.contains(&k)
        };
        for (k, v) in pairs.iter().filter(|(k, _)| setting(k)) {
            match s.set(k, v) {
                Ok(()) => set.push(k.clone()),
                Err(e) => warnings.push(e),
            }
        }
        // θ set without α: the opening-angle MAC.
        let named = |key: &str| set.iter().any(|k| k == key);
        s.run.alpha = alpha_given(named("theta"), named("alpha"), s.run.alpha);
        (s, set, warnings)
    }

    /// The keys a URL query sets, its preset's included.
    pub fn given_keys(query: &str) -> Vec<String> {
        let pairs = parse_query(query);
        let mut keys: Vec<String> = start_pairs(&pairs, &mut Vec::new())
            .0
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        // A refused value chose nothing (its warning says the default is
        // kept): a bad `n` on a software adapter still starts from the
        // software N, not from the default a GPU runs.
        let mut probe = Settings::default();
        keys.extend(
            pairs
                .into_iter()
                .filter(|(k, v)| param(k).is_none() || probe.set(k, v).is_ok())
                .map(|(k, _)| k),
        );
        keys
    }

    /// On a software adapter (WebGPU on the CPU: SwiftShader, lavapipe,
    /// llvmpipe) the page starts from `SOFTWARE_DEFAULTS` where the URL
    /// chose nothing else: N unless the URL gave one, the solver unless it
    /// gave a solver or an N (a large N asks for the tree). Returns what
    /// it changed ("key = value"). Each workgroup barrier costs a software
    /// adapter about a millisecond, so the tree's barrier-heavy walk takes
    /// ~0.5 s per step at N = 4096 in headless Chromium, where the direct
    /// sum at N = 2048 takes ~40 ms.
    pub fn apply_software_defaults(&mut self, given: &[String]) -> Vec<String> {
        let given = |key: &str| given.iter().any(|g| g == key);
        let mut changed = Vec::new();
        for &(k, v) in SOFTWARE_DEFAULTS {
            let chosen = given(k) || (k == "solver" && given("n"));
            if !chosen && self.get(k).as_deref() != Some(v) && self.set(k, v).is_ok() {
                changed.push(format!("{k} = {v}"));
            }
        }
        changed
    }

    /// The particles of the settings' model, with their components (the
    /// page's start and reset; natively, what the page would run).
    pub fn generate(&self) -> crate::error::Result<Tagged> {
        self.model
            .generate_with(self.n as usize, self.seed as u64, &self.model_params)
    }

    /// `generate`, with the models that have a GPU sampler sampled on
    /// `ctx` (`Model::generate_on`): the particles the page's start runs
    /// from where it cannot leave them on the GPU
    /// (`app::start::make_model`: a Hermite run).
    pub async fn generate_on(&self, ctx: &GpuContext) -> crate::error::Result<Tagged> {
        self.model
            .generate_on(ctx, self.n as usize, self.seed as u64, &self.model_params)
            .await
    }

    /// Sets one parameter from its URL form; on error nothing changes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let p = param(key).ok_or_else(|| format!("unknown parameter '{key}'; ignored"))?;
        let bad = |what: String| format!("{key}={value}: {what}; ignored");
        let choice = || -> Result<&'static str, String> {
            let v = value.trim();
            p.choices()
                .into_iter()
                .find(|c| *c == v)
                .ok_or_else(|| bad(format!("unknown {key} (known: {})", p.choices().join(", "))))
        };
        let number = || p.parse_number(value).map_err(bad);
        let float = || number().map(|x| x as f32);
        let flag = || p.parse_flag(value).map_err(bad);
        let c = &mut self.camera;
        let r = &mut self.run;
        match key {
            "model" => self.model = Model::from_name(choice()?).expect("a listed model"),
            "n" => self.n = number()? as u32,
            "seed" => self.seed = number()? as u32,
            "q" => self.model_params.toomre_q = number()?,
            "ratio" => self.model_params.mass_ratio = number()?,
            "rperi" => self.model_params.pericenter = number()?,
            "satellites" => self.model_params.satellites = number()? as u32,
            "incl1" => self.model_params.inclination1 = number()?,
            "incl2" => self.model_params.inclination2 = number()?,
            "mhalo" => self.model_params.halo_mass = number()?,
            "solver" => r.solver = SolverKind::from_name(choice()?).expect("a listed solver"),
            "theta" => r.theta = float()?,
            "alpha" => r.alpha = float()?,
            "rebuild" => r.rebuild = number()? as u32,
            "timesteps" => r.timesteps = Timesteps::from_name(choice()?).expect("listed steps"),
            "levels" => r.levels = number()? as u32,
            "eta" => r.eta = number()?,
            "criterion" => {
                r.criterion = Criterion::from_name(choice()?).expect("a listed criterion")
            }
            "precision" => {
                r.precision = Precision::from_name(choice()?).expect("a listed precision")
            }
            "eps" => r.eps = float()?,
            "dt" => r.dt = number()?,
            "dt_max" => r.dt_max = number()?,
            "spf" => self.steps_per_frame = number()? as u32,
            "autoplay" => self.autoplay = flag()?,
            "embed" => self.embed = flag()?,
            "color" => c.color_mode = ColorMode::from_name(choice()?).expect("a listed mode"),
            "map" => c.map = MapKind::from_name(choice()?).expect("a listed map"),
            "theme" => c.theme = Theme::from_name(choice()?).expect("a listed theme"),
            "ps" => c.point_size = float()?,
            "bright" => c.brightness = float()?,
            "atten" => c.size_attenuation = flag()?,
            "halo" => self.show_halo = flag()?,
            "trails" => self.trails = flag()?,
            "energy" => self.energy_chart = flag()?,
            "cells" => self.cell_levels = number()? as u32,
            "yaw" => c.yaw = float()?,
            "pitch" => c.pitch = float()?,
            "dist" => c.distance = float()?,
            "tx" => c.target[0] = float()?,
            "ty" => c.target[1] = float()?,
            "tz" => c.target[2] = float()?,
            "fov" => c.fov_y = float()?,
            _ => unreachable!("every parameter of the table is handled"),
        }
        if FRAMING_KEYS.contains(&key) {
            self.camera_given = true;
        }
        Ok(())
    }

    /// The URL form of one parameter.
    pub fn get(&self, key: &str) -> Option<String> {
        let c = &self.camera;
        let r = &self.run;
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        Some(match key {
            "model" => self.model.name().to_string(),
            "n" => self.n.to_string(),
            "seed" => self.seed.to_string(),
            "q" => self.model_params.toomre_q.to_string(),
            "ratio" => self.model_params.mass_ratio.to_string(),
            "rperi" => self.model_params.pericenter.to_string(),
            "satellites" => self.model_params.satellites.to_string(),
            "incl1" => self.model_params.inclination1.to_string(),
            "incl2" => self.model_params.inclination2.to_string(),
            "mhalo" => self.model_params.halo_mass.to_string(),
            "solver" => r.solver.name().to_string(),
            "theta" => r.theta.to_string(),
            "alpha" => r.alpha.to_string(),
            "rebuild" => r.rebuild.to_string(),
            "timesteps" => r.timesteps.name().to_string(),
            "levels" => r.levels.to_string(),
            "eta" => r.eta.to_string(),
            "criterion" => r.criterion.name().to_string(),
            "precision" => r.precision.name().to_string(),
            "eps" => r.eps.to_string(),
            "dt" => r.dt.to_string(),
            "dt_max" => r.dt_max.to_string(),
            "spf" => self.steps_per_frame.to_string(),
            "autoplay" => flag(self.autoplay),
            "embed" => flag(self.embed),
            "color" => c.color_mode.name().to_string(),
            "map" => c.map.name().to_string(),
            "theme" => c.theme.name().to_string(),
            "ps" => c.point_size.to_string(),
            "bright" => c.brightness.to_string(),
            "atten" => flag(c.size_attenuation),
            "halo" => flag(self.show_halo),
            "trails" => flag(self.trails),
            "energy" => flag(self.energy_chart),
            "cells" => self.cell_levels.to_string(),
            "yaw" => round4(c.yaw),
            "pitch" => round4(c.pitch),
            "dist" => round4(c.distance),
            "tx" => round4(c.target[0]),
            "ty" => round4(c.target[1]),
            "tz" => round4(c.target[2]),
            "fov" => c.fov_y.to_string(),
            _ => return None,
        })
    }

    /// All parameters as (key, value) pairs, in the table's order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        params()
            .map(|p| (p.key, self.get(p.key).expect("every key has a value")))
            .collect()
    }

    /// The canonical query (without `?`): the run's settings that apply to
    /// its solver and model always, other settings where they differ from the
    /// defaults, the camera only when `with_camera`. Parsing it gives these
    /// settings back.
    pub fn to_query(&self, with_camera: bool) -> String {
        let default = Settings::default();
        let always: Vec<&str> = RUN_PARAMS
            .iter()
            .filter(|p| p.applies_to(self.run.solver) && p.applies_to_model(self.model))
            .map(|p| p.key)
            .collect();
        self.pairs()
            .into_iter()
            // `embed` says where the page is shown, not what it runs: the
            // embedded page's address adds it back (www/app.js), and a
            // shared or "open in webgrav" link opens the full page.
            .filter(|(k, _)| *k != "embed")
            .filter(|(k, v)| {
                always.contains(k)
                    || (CAMERA_KEYS.contains(k) && with_camera)
                    || (!CAMERA_KEYS.contains(k) && default.get(k).as_ref() != Some(v))
            })
            .map(|(k, v)| format!("{k}={}", encode(&v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// The URL's parameters that name what the settings start from: a
/// preset, or a lesson's part and variant (`app::lessons`).
pub const START_KEYS: &[&str] = &["preset", "lesson", "part", "variant"];

/// The settings a URL's `preset=` or `lesson=` (`part=`, `variant=`)
/// starts from, as query pairs (none without either), and the name of
/// that start for warnings; what cannot be found is a warning.
fn start_pairs(
    pairs: &[(String, String)],
    warnings: &mut Vec<String>,
) -> (Vec<(String, String)>, String) {
    let value = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if let Some(name) = value("lesson") {
        let mut index = |key: &str| -> Option<usize> {
            let v = value(key)?;
            match v.trim().parse::<usize>() {
                Ok(k) => Some(k),
                Err(_) => {
                    warnings.push(format!("{key}={v}: not a whole number; ignored"));
                    None
                }
            }
        };
        let (part, variant) = (index("part").unwrap_or(0), index("variant"));
        let query = match super::lessons::lesson(name) {
            Some(Ok(l)) => l.query(part, variant),
            Some(Err(e)) => Err(e),
            None => Err(format!(
                "unknown lesson '{name}' (known: {})",
                super::lessons::names().collect::<Vec<_>>().join(", ")
            )),
        };
        return match query {
            Ok(q) => (parse_query(&q), format!("lesson {name}")),
            Err(e) => {
                warnings.push(e);
                (Vec::new(), String::new())
            }
        };
    }
    if let Some(name) = value("preset") {
        return match preset(name) {
            Some(p) => (parse_query(p.query), format!("preset {}", p.name)),
            None => {
                warnings.push(format!(
                    "unknown preset '{name}' (known: {})",
                    PRESETS
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                (Vec::new(), String::new())
            }
        };
    }
    (Vec::new(), String::new())
}

/// The URL's parameters of the embedding (not settings, not files):
/// who may drive the page (`super::embedding`).
pub const EMBEDDING_KEYS: &[&str] = &["origin"];

/// The URL's parameters that name files rather than settings.
pub const SOURCE_KEYS: &[&str] = &["snapshot", "series", "fallback"];

/// Files the URL asks the page to open, each a same-origin relative URL
/// (`relative_url`): `snapshot=URL` (repeatable) and `series=URL` (a run's
/// `index.json`, whose files are fetched beside it) open together in the
/// series player; `fallback=URL` is a picture the page shows where the
/// browser has no WebGPU (Python's `webgrav.view` passes the native
/// renderer's PNG).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sources {
    pub snapshots: Vec<String>,
    pub series: Vec<String>,
    pub fallback: Option<String>,
}

impl Sources {
    /// The sources a URL query names, and one warning per value refused
    /// (ignored, like a bad setting).
    pub fn from_query(query: &str) -> (Sources, Vec<String>) {
        let mut s = Sources::default();
        let mut warnings = Vec::new();
        for (k, v) in parse_query(query) {
            if !SOURCE_KEYS.contains(&k.as_str()) {
                continue;
            }
            let url = match relative_url(&v) {
                Ok(url) => url.to_string(),
                Err(why) => {
                    warnings.push(format!("{k}={v}: {why}; ignored"));
                    continue;
                }
            };
            match k.as_str() {
                "snapshot" => s.snapshots.push(url),
                "series" => s.series.push(url),
                _ => s.fallback = Some(url),
            }
        }
        (s, warnings)
    }

    /// The sources as a query (without `?`; empty without any), for the
    /// address bar of a page that opened them.
    pub fn to_query(&self) -> String {
        let snapshots = self.snapshots.iter().map(|u| ("snapshot", u));
        let series = self.series.iter().map(|u| ("series", u));
        let fallback = self.fallback.iter().map(|u| ("fallback", u));
        snapshots
            .chain(series)
            .chain(fallback)
            .map(|(k, u)| format!("{k}={}", encode(u)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// `value` if it is a relative URL that stays on the page's origin: a
/// path (`data/snap.tipsy`, `/runs/index.json`, `../x.bonsai`) of
/// letters, digits and `-._~/%+,@!$()*`, not starting with `//`. No scheme
/// (`:`), host, backslash (browsers read it as `/`), whitespace (browsers
/// drop tabs and newlines), query or fragment can be written with those.
pub fn relative_url(value: &str) -> Result<&str, String> {
    const MAX_LEN: usize = 2048;
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~/%+,@!$()*".contains(c);
    if value.is_empty() {
        Err("an empty URL".into())
    } else if value.len() > MAX_LEN {
        Err(format!("a URL longer than {MAX_LEN} bytes"))
    } else if value.starts_with("//") || !value.chars().all(allowed) {
        Err("not a same-origin relative URL (a path like data/snap.tipsy)".into())
    } else {
        Ok(value)
    }
}

/// Camera angles and lengths to 4 decimals: enough for any view, and
/// shorter URLs.
fn round4(x: f32) -> String {
    let r = (x as f64 * 1e4).round() / 1e4;
    // + 0.0 turns -0 into 0.
    format!("{}", r as f32 + 0.0)
}

/// `key=value` pairs of a query, percent-decoded.
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (c as char).to_string()
            }
            _ => format!("%{c:02X}"),
        })
        .collect()
}
