//! Every setting of the web app as a URL parameter, e.g.
//! `?model=plummer&n=65536&solver=tree&theta=0.5&autoplay=1`: parsed here
//! (with a warning for each bad or unknown parameter, never a failure) and
//! written back as a canonical query, so a run can be shared or embedded.
//! The page's controls use the same key/value pairs.

use super::solver_from_name;
use crate::direct::hermite_force::Precision;
use crate::render::{Camera, ColorMode};
use crate::sim::{Model, SimConfig, SolverKind};

/// Teaching presets: `?preset=NAME` sets these parameters first; explicit
/// parameters override them. (Disk galaxy and merger come with their models.)
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "plummer-relaxation",
        title: "Plummer sphere: a system in equilibrium relaxes slowly",
        query: "model=plummer&n=16384&solver=tree&theta=0.5&eps=0.01&dt=0.0078125&color=component",
    },
    Preset {
        name: "cold-collapse",
        title: "Cold collapse: a sphere at rest falls in and bounces into equilibrium",
        query: "model=cold-collapse&n=16384&solver=tree&theta=0.5&eps=0.03&dt=0.00390625&color=speed&spf=2",
    },
];

pub struct Preset {
    pub name: &'static str,
    pub title: &'static str,
    pub query: &'static str,
}

/// The settings of a run and its view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub model: Model,
    /// Particles of the model.
    pub n: u32,
    /// Random seed of the model.
    pub seed: u32,
    /// Solver, softening, time step and θ.
    pub config: SimConfig,
    /// Settings of the Hermite integrators (used when the solver is
    /// `hermite4` or `hermite6`).
    pub hermite: HermiteSettings,
    /// Leapfrog steps per animation frame (for Hermite: the frame advances
    /// the time by `steps_per_frame × dt` in block steps).
    pub steps_per_frame: u32,
    /// Start running at once.
    pub autoplay: bool,
    /// Canvas with a minimal overlay (for iframes).
    pub embed: bool,
    pub camera: Camera,
    /// The URL gave the camera explicitly: keep it (no fit on import).
    pub camera_given: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            model: Model::Plummer,
            n: 16384,
            seed: 1,
            config: SimConfig {
                solver: SolverKind::Tree,
                eps: 0.01,
                dt: 1.0 / 128.0,
                theta: 0.5,
            },
            hermite: HermiteSettings::default(),
            steps_per_frame: 1,
            autoplay: true,
            embed: false,
            camera: Camera::default(),
            camera_given: false,
        }
    }
}

/// Accuracy and arithmetic of the Hermite integrators.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HermiteSettings {
    /// Time-step accuracy parameter η (`direct::hermite::HermiteConfig`).
    pub eta: f64,
    pub precision: Precision,
}

impl Default for HermiteSettings {
    fn default() -> Self {
        Self {
            eta: 0.02,
            precision: Precision::Ds,
        }
    }
}

/// Parameters that describe the camera (any of them makes `camera_given`).
const CAMERA_KEYS: &[&str] = &["yaw", "pitch", "dist", "tx", "ty", "tz", "fov"];

/// Every key, in the order of the canonical query.
pub const KEYS: &[&str] = &[
    "model",
    "n",
    "seed",
    "solver",
    "theta",
    "eta",
    "precision",
    "eps",
    "dt",
    "spf",
    "autoplay",
    "embed",
    "color",
    "ps",
    "bright",
    "atten",
    "yaw",
    "pitch",
    "dist",
    "tx",
    "ty",
    "tz",
    "fov",
];

impl Settings {
    /// Parses a URL query (with or without the leading `?`); returns the
    /// settings and one warning per parameter that was ignored.
    pub fn from_query(query: &str) -> (Settings, Vec<String>) {
        let pairs = parse_query(query);
        let mut s = Settings::default();
        let mut warnings = Vec::new();
        if let Some((_, name)) = pairs.iter().find(|(k, _)| k == "preset") {
            match PRESETS.iter().find(|p| p.name == name) {
                Some(p) => {
                    for (k, v) in parse_query(p.query) {
                        if let Err(e) = s.set(&k, &v) {
                            warnings.push(format!("preset {}: {e}", p.name));
                        }
                    }
                }
                None => warnings.push(format!(
                    "unknown preset '{name}' (known: {})",
                    PRESETS
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        for (k, v) in pairs.iter().filter(|(k, _)| k != "preset") {
            if let Err(e) = s.set(k, v) {
                warnings.push(e);
            }
        }
        (s, warnings)
    }

    /// Sets one parameter from its URL form; on error nothing changes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let bad = |what: &str| format!("{key}={value}: {what}; ignored");
        let float = |lo: f32, hi: f32| -> Result<f32, String> {
            match value.trim().parse::<f32>() {
                Ok(x) if x.is_finite() && x >= lo && x <= hi => Ok(x),
                _ => Err(bad(&format!("expected a number in [{lo}, {hi}]"))),
            }
        };
        let positive = |hi: f32| -> Result<f32, String> {
            match value.trim().parse::<f32>() {
                Ok(x) if x.is_finite() && x > 0.0 && x <= hi => Ok(x),
                _ => Err(bad(&format!("expected a number > 0 and <= {hi}"))),
            }
        };
        let int = |lo: u64, hi: u64| -> Result<u64, String> {
            // Accept 65536, 65536.0 and 6.5536e4 alike.
            match value.trim().parse::<f64>() {
                Ok(x) if x.fract() == 0.0 && x >= lo as f64 && x <= hi as f64 => Ok(x as u64),
                _ => Err(bad(&format!("expected a whole number in [{lo}, {hi}]"))),
            }
        };
        let flag = || match value.trim() {
            "1" | "true" | "yes" | "on" | "" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(bad("expected 1 or 0")),
        };
        let c = &mut self.camera;
        match key {
            "model" => {
                self.model = Model::from_name(value.trim()).map_err(|_| {
                    bad(&format!(
                        "unknown model (known: {})",
                        Model::ALL
                            .iter()
                            .map(|m| m.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?
            }
            // The device's limit is checked when the run is created.
            "n" => self.n = int(1, u32::MAX as u64 / 2)? as u32,
            "seed" => self.seed = int(0, u32::MAX as u64)? as u32,
            "solver" => {
                self.config.solver = solver_from_name(value.trim()).ok_or_else(|| {
                    bad(&format!(
                        "unknown solver (known: {})",
                        super::SOLVERS
                            .iter()
                            .map(|s| s.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?
            }
            "theta" => self.config.theta = positive(2.0)?,
            "eta" => {
                self.hermite.eta = match value.trim().parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 && x <= 1.0 => x,
                    _ => return Err(bad("expected a number > 0 and <= 1")),
                }
            }
            "precision" => {
                self.hermite.precision = match value.trim() {
                    "ds" => Precision::Ds,
                    "f32" => Precision::F32,
                    _ => return Err(bad("unknown precision (known: ds, f32)")),
                }
            }
            "eps" => self.config.eps = float(0.0, 10.0)?,
            "dt" => self.config.dt = positive(1.0)?,
            "spf" => self.steps_per_frame = int(1, 64)? as u32,
            "autoplay" => self.autoplay = flag()?,
            "embed" => self.embed = flag()?,
            "color" => {
                c.color_mode = ColorMode::from_name(value.trim()).ok_or_else(|| {
                    bad("unknown colour mode (known: uniform, speed, potential, component)")
                })?
            }
            "ps" => c.point_size = float(0.5, 32.0)?,
            "bright" => c.brightness = float(0.0, 100.0)?,
            "atten" => c.size_attenuation = flag()?,
            "yaw" => c.yaw = float(-1e3, 1e3)?,
            "pitch" => c.pitch = float(-1.55, 1.55)?,
            "dist" => c.distance = positive(1e6)?,
            "tx" => c.target[0] = float(-1e6, 1e6)?,
            "ty" => c.target[1] = float(-1e6, 1e6)?,
            "tz" => c.target[2] = float(-1e6, 1e6)?,
            "fov" => c.fov_y = float(0.05, 3.0)?,
            _ => return Err(format!("unknown parameter '{key}'; ignored")),
        }
        if CAMERA_KEYS.contains(&key) {
            self.camera_given = true;
        }
        Ok(())
    }

    /// The URL form of one parameter.
    pub fn get(&self, key: &str) -> Option<String> {
        let c = &self.camera;
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        Some(match key {
            "model" => self.model.name().to_string(),
            "n" => self.n.to_string(),
            "seed" => self.seed.to_string(),
            "solver" => self.config.solver.name().to_string(),
            "theta" => self.config.theta.to_string(),
            "eta" => self.hermite.eta.to_string(),
            "precision" => self.hermite.precision.name().to_string(),
            "eps" => self.config.eps.to_string(),
            "dt" => self.config.dt.to_string(),
            "spf" => self.steps_per_frame.to_string(),
            "autoplay" => flag(self.autoplay),
            "embed" => flag(self.embed),
            "color" => c.color_mode.name().to_string(),
            "ps" => c.point_size.to_string(),
            "bright" => c.brightness.to_string(),
            "atten" => flag(c.size_attenuation),
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

    /// All parameters as (key, value) pairs, in `KEYS` order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        KEYS.iter()
            .map(|k| (*k, self.get(k).expect("every key has a value")))
            .collect()
    }

    /// The canonical query (without `?`): the run's settings always, view
    /// settings where they differ from the defaults, the camera only when
    /// `with_camera`. Parsing it gives these settings back.
    pub fn to_query(&self, with_camera: bool) -> String {
        let default = Settings::default();
        let mut always = vec!["model", "n", "seed", "solver", "theta", "eps", "dt"];
        if super::is_hermite(self.config.solver) {
            always.extend(["eta", "precision"]);
        }
        self.pairs()
            .into_iter()
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
