//! Lessons: a run (or a few variants of it) with a student sheet and
//! teacher notes, stored as data, one JSON file each in `www/lessons/`
//! (compiled in, so the page and the CLI need no fetch). `?lesson=NAME`
//! opens one (`&part=K` its part K, `&variant=J` that part's variant
//! J). `app::lesson_check` holds every file to the page.

use serde::{Deserialize, Serialize};

/// The lesson files, by name.
const SOURCES: &[(&str, &str)] = &[
    ("kepler", include_str!("../../www/lessons/kepler.json")),
    (
        "time-step",
        include_str!("../../www/lessons/time-step.json"),
    ),
    (
        "cold-collapse",
        include_str!("../../www/lessons/cold-collapse.json"),
    ),
    ("toomre-q", include_str!("../../www/lessons/toomre-q.json")),
    (
        "minor-mergers",
        include_str!("../../www/lessons/minor-mergers.json"),
    ),
    (
        "tree-code",
        include_str!("../../www/lessons/tree-code.json"),
    ),
    (
        "galaxy-crash",
        include_str!("../../www/lessons/galaxy-crash.json"),
    ),
];

/// What the page measures into a sheet: key and meaning. `BODY_MEASURES`
/// take a body (1-based around the central body, `app::orbits`).
pub const MEASURES: &[(&str, &str)] = &[
    ("time", "the run's time in the lesson's units"),
    ("energy_error", "|ΔE/E₀| since the start"),
    ("kinetic", "kinetic energy K"),
    ("potential", "potential energy W"),
    ("energy", "total energy E = K + W"),
    ("virial", "virial ratio Q = −2K/W"),
    ("r10", "radius holding 10 % of the mass"),
    ("r50", "radius holding 50 % of the mass"),
    ("r90", "radius holding 90 % of the mass"),
    ("pp", "tree: particle–particle interactions per particle"),
    ("pc", "tree: particle–cell interactions per particle"),
    ("steps_per_second", "steps per second"),
    ("bar_a2", "the disk's bar strength A₂"),
    ("period", "a body's period about the central body"),
    ("semi_major_axis", "a body's semi-major axis"),
    ("eccentricity", "a body's eccentricity"),
    ("kepler_ratio", "a body's T²/a³"),
    ("return_time", "time of the closest return to the start"),
    ("return_distance", "largest distance from the start then"),
    (
        "force_median",
        "tree: median force error (the accuracy panel)",
    ),
    (
        "force_p99",
        "tree: 99th-percentile force error (the accuracy panel)",
    ),
    (
        "picked_multipoles",
        "tree: cells the picked particle took whole",
    ),
    (
        "picked_direct",
        "tree: particles the picked particle summed directly",
    ),
    ("picked_error", "tree: the picked particle's force error"),
];

/// The measures of the tree view (tree runs with shared steps).
pub const TREE_MEASURES: &[&str] = &[
    "force_median",
    "force_p99",
    "picked_multipoles",
    "picked_direct",
    "picked_error",
];

/// The measures of one body's orbit.
pub const BODY_MEASURES: &[&str] = &["period", "semi_major_axis", "eccentricity", "kepler_ratio"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    pub name: String,
    pub title: String,
    pub summary: String,
    pub minutes: u32,
    pub units: String,
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub title: String,
    /// The run's settings, as a URL query.
    pub query: String,
    /// Model time after which every measure of the part is ready.
    pub run_until: f64,
    /// Variants the student compares: each a query applied over `query`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Variant>,
    #[serde(rename = "do")]
    pub steps: Vec<String>,
    pub watch: Vec<String>,
    pub questions: Vec<Question>,
    pub teacher: Teacher,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub label: String,
    pub set: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub text: String,
    pub measures: Vec<Measure>,
}

/// Where a measure is taken: its key, the body (orbit measures) and the
/// variant (parts with `runs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measure {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<usize>,
    pub label: String,
    #[serde(default)]
    pub unit: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Teacher {
    pub expect: Vec<Expect>,
    pub notes: Vec<String>,
    pub misconceptions: Vec<String>,
}

/// What a measure should come out as, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    pub why: String,
}

impl Expect {
    /// Whether `x` is in the expected range.
    pub fn holds(&self, x: f64) -> bool {
        x.is_finite() && self.min.is_none_or(|m| x >= m) && self.max.is_none_or(|m| x <= m)
    }
}

/// The names of every lesson, in the page's order.
pub fn names() -> impl Iterator<Item = &'static str> {
    SOURCES.iter().map(|(n, _)| *n)
}

/// The lesson `name`, parsed from its file.
pub fn lesson(name: &str) -> Option<Result<Lesson, String>> {
    let (_, text) = SOURCES.iter().find(|(n, _)| *n == name)?;
    Some(serde_json::from_str(text).map_err(|e| format!("lessons/{name}.json: {e}")))
}

/// Every lesson; a file that does not parse is an error naming it.
pub fn all() -> Result<Vec<Lesson>, String> {
    names()
        .map(|n| lesson(n).expect("a listed lesson"))
        .collect()
}

impl Lesson {
    /// The query of part `part`, variant `run` (none: the part's own).
    pub fn query(&self, part: usize, run: Option<usize>) -> Result<String, String> {
        let p = self.parts.get(part).ok_or_else(|| {
            format!(
                "lesson {} has parts 0 to {}, not {part}",
                self.name,
                self.parts.len() - 1
            )
        })?;
        Ok(match run {
            None => p.query.clone(),
            Some(j) => {
                let v = p.runs.get(j).ok_or_else(|| {
                    format!(
                        "part {part} of lesson {} has {} variants, not run {j}",
                        self.name,
                        p.runs.len()
                    )
                })?;
                format!("{}&{}", p.query, v.set)
            }
        })
    }
}
