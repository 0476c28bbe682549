//! The GPU context every simulation of the process shares (opening a
//! device takes a while, and a GPU is one), and `adapter_info()`.

use crate::errors::IntoPy;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;
use webgrav::app::device_max_particles;
use webgrav::gpu::GpuContext;
use webgrav::run::SolverKind;

static CONTEXT: Mutex<Option<GpuContext>> = Mutex::new(None);

/// The shared context, opened on first use (a failure is reported and
/// tried again next time). Call without the GIL: it may take seconds.
pub fn shared() -> webgrav::Result<GpuContext> {
    let mut slot = CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = slot.as_ref() {
        return Ok(ctx.clone());
    }
    let ctx = pollster::block_on(GpuContext::headless())?;
    *slot = Some(ctx.clone());
    Ok(ctx)
}

/// The GPU adapter webgrav uses: name, backend, device type, driver,
/// whether it has timestamp queries and f64 in shaders (Hermite
/// `precision="dp"`), and the largest N of each solver.
#[pyfunction]
pub fn adapter_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let ctx = py.detach(shared).py_err()?;
    let i = &ctx.adapter_info;
    let d = PyDict::new(py);
    d.set_item("summary", ctx.adapter_summary())?;
    d.set_item("name", &i.name)?;
    d.set_item("backend", format!("{:?}", i.backend))?;
    d.set_item("device_type", format!("{:?}", i.device_type))?;
    d.set_item("driver", &i.driver_info)?;
    d.set_item("timestamps", ctx.has_timestamps)?;
    d.set_item("f64", ctx.has_f64)?;
    let max = PyDict::new(py);
    for &solver in SolverKind::ALL {
        max.set_item(solver.name(), device_max_particles(&ctx, solver))?;
    }
    d.set_item("max_particles", max)?;
    Ok(d)
}
