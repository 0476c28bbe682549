//! webgrav: gravitational N-body simulation whose physics runs as WebGPU
//! compute shaders, natively (wgpu) and in the browser (WebAssembly), from
//! the same WGSL in `shaders/`.
//!
//! Layers, each importing only those before it (ARCHITECTURE.md):
//! - [`error`], then [`gpu`]: context, shared buffer layouts, kernels,
//!   read-back, timing.
//! - [`state`]: particles on the CPU and GPU, models, diagnostics,
//!   statistics.
//! - [`snapshot`] (Tipsy, CSV), [`direct`] and [`tree`] (gravity solvers),
//!   [`hermite`] (block-step Hermite and its force engine), [`render`].
//! - [`run`]: one run type over every integrator, and the run parameters.
//! - [`app`]: settings table, read-outs and limits shared by front ends.
//! - Front ends: `cli` (feature `cli`), `web` (wasm32) and `g6` (the
//!   GRAPE-6 C API, native).

pub mod app;
#[cfg(not(target_arch = "wasm32"))]
pub mod cluster;
pub mod direct;
pub mod error;
pub mod gpu;
pub mod hermite;
pub mod render;
pub mod run;
pub mod snapshot;
pub mod state;
pub mod tree;

#[cfg(feature = "cli-core")]
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod g6;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use error::{Error, Result};
