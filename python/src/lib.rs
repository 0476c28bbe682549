//! `webgrav._webgrav`: the Python package's native module, a thin shell
//! over `webgrav::run::Run` like the CLI and the page. Arrays cross as
//! numpy float64 (checked and converted to webgrav's f32 records here);
//! errors become `WebgravError` with webgrav's own message; GPU work runs
//! with the GIL released. The friendly API (progress bar, pynbody and
//! AMUSE interop, `show()`) is the pure-Python package around it
//! (`python/webgrav/`).

mod arrays;
mod context;
mod engine;
mod errors;
mod settings;

use pyo3::prelude::*;

#[pymodule]
fn _webgrav(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("WebgravError", m.py().get_type::<errors::WebgravError>())?;
    m.add_class::<engine::Engine>()?;
    m.add_function(wrap_pyfunction!(context::adapter_info, m)?)?;
    m.add_function(wrap_pyfunction!(settings::run_params, m)?)?;
    m.add_function(wrap_pyfunction!(settings::models, m)?)?;
    m.add("KINDS", webgrav::state::KINDS.to_vec())?;
    Ok(())
}
