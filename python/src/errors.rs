//! webgrav's errors as Python exceptions: `WebgravError` (a `ValueError`)
//! carrying webgrav's message and its stable kind (`error.kind`, e.g.
//! "invalid-parameter", "too-many-particles").

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::create_exception!(
    _webgrav,
    WebgravError,
    PyValueError,
    "An error webgrav reports: bad input, a device that cannot run it, a snapshot it cannot read. `kind` names the kind of error."
);

/// The Python exception of a webgrav error.
pub fn to_py(e: webgrav::Error) -> PyErr {
    let err = WebgravError::new_err(e.to_string());
    Python::attach(|py| {
        // The instance exists once normalized; a failure to set the
        // attribute leaves the message, which is what matters.
        let _ = err.value(py).setattr("kind", e.kind());
    });
    err
}

/// An invalid-parameter error with `message`.
pub fn invalid(message: impl Into<String>) -> PyErr {
    to_py(webgrav::Error::InvalidParameter(message.into()))
}

/// `Result` of webgrav into `PyResult`.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for webgrav::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
