//! The simulation: particle state, initial-condition models, integrators,
//! diagnostics.

pub mod diagnostics;
pub mod leapfrog;
pub mod model;
pub mod particles;
pub mod plummer;
pub mod rng;
pub mod simulation;

pub use diagnostics::Diagnostics;
pub use model::Model;
pub use particles::{GpuParticles, Particles};
pub use simulation::{SimConfig, Simulation, Solver, SolverKind};
