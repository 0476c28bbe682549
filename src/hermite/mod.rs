//! The Sapporo-style Hermite side: double-single helpers (`ds`), the
//! j-particle store and predictor (`predict`), the Hermite force kernels
//! (`hermite_force`), neighbour lists (`neighbours`), the block-step
//! integrators of 4th and 6th order (`integrator`) and the f64 reference of
//! the kernels (`reference`). Front ends reach the integrators through
//! `run::Run`; the GRAPE-6 API (`g6`) drives the force engine directly.

pub mod hermite_force;
pub mod integrator;
pub mod neighbours;
pub mod predict;
pub mod reference;

pub use hermite_force::{
    ds_direct_forces, reduce_lanes, sink_lanes, Evaluation, Force64, HermiteGpu, Order, Precision,
    Sinks, SplitPlan,
};
pub use integrator::{
    Body, Criterion, HermiteConfig, HermiteOrder, HermiteSimulation, HermiteStats, State64,
};
