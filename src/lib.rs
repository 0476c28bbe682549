//! webgrav: gravitational N-body simulation whose physics runs as WebGPU
//! compute shaders, natively (wgpu) and in the browser (WebAssembly), from
//! the same WGSL in `shaders/`.
//!
//! - [`gpu`]: context, shared buffer layouts, kernels, read-back, timing.
//! - [`direct`]: blocked direct summation and its f64 CPU reference.
//! - [`sim`]: particle state, models, leapfrog, diagnostics, simulation.
//! - [`snapshot`]: Tipsy and CSV files.
//! - [`render`]: the point renderer (browser canvas and offscreen PNG).
//! - [`app`]: settings (URL parameters), read-outs and limits of the
//!   interactive front ends, free of platform code.
//! - `cli` (native) and `web` (wasm): the two front ends.

pub mod app;
pub mod direct;
pub mod error;
pub mod gpu;
pub mod render;
pub mod sim;
pub mod snapshot;
pub mod tree;

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use error::{Error, Result};
