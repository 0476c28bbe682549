//! Run parameters from Python keywords: every key of `webgrav::run::RUN_PARAMS`
//! that configures a run (solver, eps, dt, theta, alpha, rebuild, timesteps,
//! levels, eta, criterion, precision, dt_max), checked by `RunParams::validate`, so Python gets
//! the CLI's and the page's ranges and messages; and the table itself
//! (`run_params()`) for the Python signatures' defaults and help.

use crate::errors::{invalid, IntoPy};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use webgrav::hermite::{Criterion, Precision};
use webgrav::run::block::Timesteps;
use webgrav::run::params::{alpha_given, param};
use webgrav::run::{RunConfig, RunParams, SolverKind, RUN_PARAMS};
use webgrav::state::Model;

/// The keys of `RUN_PARAMS` a run's configuration takes (the rest shape
/// the model).
pub const RUN_KEYS: &[&str] = &[
    "solver",
    "eps",
    "dt",
    "theta",
    "alpha",
    "rebuild",
    "timesteps",
    "levels",
    "eta",
    "criterion",
    "precision",
    "dt_max",
];

/// A choice parameter's value by name; the error lists the names.
fn choice<T>(key: &str, value: &Bound<'_, PyAny>, from: fn(&str) -> Option<T>) -> PyResult<T> {
    let expected = param(key).expect("a run parameter").expected();
    let name: String = value
        .extract()
        .map_err(|_| invalid(format!("{key}: expected {expected}")))?;
    from(&name).ok_or_else(|| invalid(format!("{key} = '{name}': expected {expected}")))
}

fn number(key: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    value.extract::<f64>().map_err(|_| {
        let expected = param(key).expect("a run parameter").expected();
        invalid(format!("{key}: expected {expected}"))
    })
}

/// A whole-number parameter, checked as given, so 2.5 is refused rather
/// than truncated.
fn whole(key: &str, value: &Bound<'_, PyAny>) -> PyResult<u32> {
    let k = number(key, value)?;
    param(key).expect("a run parameter").validate(k).py_err()?;
    Ok(k as u32)
}

/// The validated configuration of `params` (keys of `RUN_KEYS`; missing
/// ones take the table's defaults, `None` values too), starting from
/// `base`; `theta` without `alpha` selects the opening-angle MAC, as on
/// the command line and in the URL.
pub fn config(base: RunParams, params: Option<&Bound<'_, PyDict>>) -> PyResult<RunConfig> {
    let mut p = base;
    let mut given = Vec::new();
    for (key, value) in params.into_iter().flatten() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        given.push(key.clone());
        match key.as_str() {
            "solver" => p.solver = choice("solver", &value, SolverKind::from_name)?,
            "criterion" => p.criterion = choice("criterion", &value, Criterion::from_name)?,
            "precision" => p.precision = choice("precision", &value, Precision::from_name)?,
            "eps" => p.eps = number("eps", &value)? as f32,
            "dt" => p.dt = number("dt", &value)?,
            "theta" => p.theta = number("theta", &value)? as f32,
            "alpha" => p.alpha = number("alpha", &value)? as f32,
            "rebuild" => p.rebuild = whole("rebuild", &value)?,
            "timesteps" => p.timesteps = choice("timesteps", &value, Timesteps::from_name)?,
            "levels" => p.levels = whole("levels", &value)?,
            "eta" => p.eta = number("eta", &value)?,
            "dt_max" => p.dt_max = number("dt_max", &value)?,
            other => {
                return Err(invalid(format!(
                    "unknown run parameter '{other}': expected one of {}",
                    RUN_KEYS.join(", ")
                )))
            }
        }
    }
    // θ named without α: the opening-angle MAC.
    let named = |key: &str| given.iter().any(|g| g == key);
    p.alpha = alpha_given(named("theta"), named("alpha"), p.alpha);
    p.validate().py_err()
}

/// The run parameter table: one dict per parameter with `key`, `label`,
/// `default` (its text form), `expected` (what a valid value looks like),
/// `solvers` and `models` it applies to (empty: all).
#[pyfunction]
pub fn run_params(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows = PyList::empty(py);
    for p in RUN_PARAMS {
        let d = PyDict::new(py);
        d.set_item("key", p.key)?;
        d.set_item("label", p.label)?;
        d.set_item("default", p.default)?;
        d.set_item("expected", p.expected())?;
        d.set_item(
            "solvers",
            p.solvers.iter().map(|s| s.name()).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "models",
            p.models.iter().map(|m| m.name()).collect::<Vec<_>>(),
        )?;
        rows.append(d)?;
    }
    Ok(rows)
}

/// The names of the initial-condition models.
#[pyfunction]
pub fn models() -> Vec<&'static str> {
    Model::ALL.iter().map(|m| m.name()).collect()
}
