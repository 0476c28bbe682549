//! Holds a lesson (`app::lessons`) to the page: every part's settings
//! (and each variant's) parse without a warning, every measure is one the
//! page provides where the run can provide it, and every expectation
//! names a measure of its part. `tests/lessons.rs` runs it on every file.

use super::lessons::{Lesson, Measure, BODY_MEASURES, MEASURES, TREE_MEASURES};
use super::orbits::MAX_TRACKED_BODIES;
use super::settings::{parse_query, Settings};
use crate::run::block::Timesteps;
use crate::run::SolverKind;
use crate::state::Model;

impl Lesson {
    /// Checks the lesson against the schema and the page: each part's
    /// settings (and each variant's) parse without a warning, every
    /// measure is one the page provides where the run can provide it, and
    /// every expectation names a measure of the part.
    pub fn validate(&self, file_name: &str) -> Result<(), String> {
        let bad = |what: String| Err(format!("lesson {file_name}: {what}"));
        let text = |t: &str| !t.trim().is_empty() && t.len() <= 400;
        if self.name != file_name {
            return bad(format!("its name is '{}'", self.name));
        }
        if !(text(&self.title) && text(&self.summary) && text(&self.units)) {
            return bad("title, summary and units must be short texts".into());
        }
        if !(10..=120).contains(&self.minutes) {
            return bad(format!("minutes = {} (10 to 120)", self.minutes));
        }
        if !(1..=3).contains(&self.parts.len()) {
            return bad(format!("{} parts (1 to 3)", self.parts.len()));
        }
        for (i, p) in self.parts.iter().enumerate() {
            let at = |what: String| bad(format!("part {i} ({}): {what}", p.title));
            let counts = [
                ("do", p.steps.len(), 2..=5),
                ("watch", p.watch.len(), 1..=4),
                ("questions", p.questions.len(), 2..=4),
                ("teacher notes", p.teacher.notes.len(), 1..=5),
                ("misconceptions", p.teacher.misconceptions.len(), 1..=4),
            ];
            for (what, n, range) in counts {
                if !range.contains(&n) {
                    return at(format!("{n} {what} ({range:?})"));
                }
            }
            let texts = p.steps.iter().chain(&p.watch).chain(&p.teacher.notes);
            let texts = texts.chain(&p.teacher.misconceptions);
            let texts = texts.chain(p.questions.iter().map(|q| &q.text));
            if !(text(&p.title) && texts.clone().all(|t| text(t))) {
                return at("every text must be 1 to 400 characters".into());
            }
            if !(p.run_until.is_finite() && p.run_until > 0.0) {
                return at(format!("run_until = {}", p.run_until));
            }
            let mut models = Vec::new();
            for run in std::iter::once(None).chain((0..p.runs.len()).map(Some)) {
                let query = self.query(i, run)?;
                let (s, warnings) = Settings::from_query(&query);
                if let Some(w) = warnings.first() {
                    return at(format!("'{query}': {w}"));
                }
                if parse_query(&query)
                    .iter()
                    .any(|(k, _)| k == "preset" || k == "lesson")
                {
                    return at("a lesson's query names no preset or lesson".into());
                }
                let tree = s.run.solver == SolverKind::Tree && s.run.timesteps == Timesteps::Shared;
                models.push((s.model, s.run.solver.is_hermite(), s.n, tree));
            }
            let measures: Vec<&Measure> = p.questions.iter().flat_map(|q| &q.measures).collect();
            for m in &measures {
                let Some(&(model, hermite, n, tree)) = models.get(m.run.map_or(0, |j| j + 1))
                else {
                    return at(format!("measure {} names run {:?}", m.key, m.run));
                };
                if !MEASURES.iter().any(|(k, _)| *k == m.key) {
                    return at(format!("unknown measure '{}'", m.key));
                }
                let orbit = BODY_MEASURES.contains(&m.key.as_str());
                let few_body = hermite && n as usize <= MAX_TRACKED_BODIES;
                if orbit && !(few_body && m.body.is_some_and(|b| b >= 1 && b < n as usize)) {
                    return at(format!(
                        "measure {} needs a body 1..N−1 of a Hermite run of at most {} bodies",
                        m.key, MAX_TRACKED_BODIES
                    ));
                }
                if !orbit && m.body.is_some() {
                    return at(format!("measure {} takes no body", m.key));
                }
                if m.key.starts_with("return_") && !few_body {
                    return at(format!("measure {} needs a few-body Hermite run", m.key));
                }
                if TREE_MEASURES.contains(&m.key.as_str()) && !tree {
                    return at(format!(
                        "measure {} needs the tree with shared steps",
                        m.key
                    ));
                }
                if m.key == "bar_a2" && !matches!(model, Model::DiskGalaxy | Model::MilkyWay) {
                    return at("bar_a2 needs a disk model".into());
                }
                if !text(&m.label) {
                    return at(format!("measure {} has no label", m.key));
                }
            }
            for e in &p.teacher.expect {
                let named = measures
                    .iter()
                    .any(|m| m.key == e.key && m.body == e.body && m.run == e.run);
                if !named {
                    return at(format!(
                        "expectation of {} (body {:?}, run {:?}) names no measure of the part",
                        e.key, e.body, e.run
                    ));
                }
                let finite = |x: Option<f64>| x.is_none_or(f64::is_finite);
                let ordered = match (e.min, e.max) {
                    (Some(a), Some(b)) => a <= b,
                    (None, None) => false,
                    _ => true,
                };
                if !(ordered && finite(e.min) && finite(e.max) && text(&e.why)) {
                    return at(format!(
                        "expectation of {} needs min ≤ max and a why",
                        e.key
                    ));
                }
            }
        }
        Ok(())
    }
}
