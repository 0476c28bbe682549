//! The data layer: particle state on the CPU and the GPU, the
//! initial-condition models, conserved quantities, and the statistics the
//! analyses share. It knows nothing of solvers or integrators.

pub mod diagnostics;
pub mod energy;
pub mod few_body;
pub mod galaxy;
pub mod generate;
pub mod input_order;
pub mod kinds_by_id;
pub mod model;
pub mod parallel;
pub mod particles;
pub mod plummer;
pub mod rng;
pub mod share;
pub mod stats;

pub use diagnostics::{Diagnostics, DiagnosticsSum};
pub use model::{kinds_of_components, Model, ModelParams, Tagged, KINDS};
pub use particles::{GpuParticles, Particles, StateArray};
