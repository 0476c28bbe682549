//! Particles between numpy and webgrav: float64 arrays in (checked for
//! agreeing lengths; webgrav checks the values), float64 arrays out,
//! upcast from the GPU's f32 records (or the Hermite integrators' own f64
//! state) into new arrays.

use crate::errors::invalid;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use webgrav::gpu::layout::{PosMass, Velocity};
use webgrav::state::Particles;

/// Particles from (N, 3) positions and velocities, N masses and, where
/// given, N ids (else 0..N).
pub fn particles(
    pos: PyReadonlyArray2<'_, f64>,
    vel: PyReadonlyArray2<'_, f64>,
    mass: PyReadonlyArray1<'_, f64>,
    ids: Option<PyReadonlyArray1<'_, u64>>,
) -> PyResult<Particles> {
    let n = mass.len()?;
    let (pos, vel, mass) = (pos.as_array(), vel.as_array(), mass.as_array());
    for (name, shape) in [("pos", pos.shape()), ("vel", vel.shape())] {
        if shape != [n, 3] {
            return Err(invalid(format!(
                "{name} has shape {shape:?}; with {n} masses it must be [{n}, 3]"
            )));
        }
    }
    let id = match ids {
        Some(ids) => {
            if ids.len()? != n {
                return Err(invalid(format!("{} ids for {n} particles", ids.len()?)));
            }
            ids.as_array().to_vec()
        }
        None => (0..n as u64).collect(),
    };
    Ok(Particles {
        pos_mass: (0..n)
            .map(|k| PosMass {
                pos: [0, 1, 2].map(|c| pos[[k, c]] as f32),
                mass: mass[k] as f32,
            })
            .collect(),
        vel: (0..n)
            .map(|k| Velocity::new([0, 1, 2].map(|c| vel[[k, c]] as f32)))
            .collect(),
        id,
    })
}

/// An (N, 3) float64 array of `rows`.
pub fn vectors<'py>(
    py: Python<'py>,
    rows: impl ExactSizeIterator<Item = [f64; 3]>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let n = rows.len();
    let flat: Vec<f64> = rows.flatten().collect();
    PyArray1::from_vec(py, flat).reshape([n, 3])
}

/// An N float64 array of `values`.
pub fn scalars<'py>(
    py: Python<'py>,
    values: impl Iterator<Item = f64>,
) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_iter(py, values)
}
