//! What the front ends need besides the run itself, free of any platform
//! code so native tests cover it: settings as URL parameters (`settings`),
//! the origins that may drive an embedded page (`embedding`), the page's
//! run as a command for a workstation or a cluster (`command`),
//! the galactic-dynamics analysis of a state (`analysis`),
//! read-outs computed from a state (`readout`), a picture of a run's
//! state (`picture`), a model or a file started as the page starts it
//! (`start`), the accuracy of forces against a direct sum
//! (`accuracy`, native), the benchmarks both hosts run (`bench`), the
//! host memory a run takes (`host`, native), and the particle-count limit
//! of each solver on a device.

pub mod accuracy;
pub mod analysis;
pub mod bench;
pub mod command;
pub mod embedding;
#[cfg(not(target_arch = "wasm32"))]
pub mod host;
pub mod lesson_check;
pub mod lessons;
pub mod orbits;
pub mod picture;
pub mod readout;
pub mod series;
pub mod settings;
pub mod start;

use crate::error::{Error, Result};
use crate::gpu::layout::PosMass;
use crate::gpu::GpuContext;
use crate::run::SolverKind;

/// The largest N of the Hermite integrators in the web app: they cost
/// O(N²) per unit time (every block step reads back from the GPU and
/// corrects on the host), so larger runs belong to the CLI.
pub const HERMITE_MAX_PARTICLES: u64 = 16384;

/// Bytes per particle of the largest single GPU array a solver allocates
/// (WebGPU limits each storage binding, not the total).
fn largest_array_bytes_per_particle(solver: SolverKind) -> (u64, &'static str) {
    match solver {
        SolverKind::Direct => (std::mem::size_of::<PosMass>() as u64, "particle"),
        SolverKind::Hermite4 | SolverKind::Hermite6 => (
            std::mem::size_of::<crate::gpu::layout::JParticle>() as u64,
            "Hermite j-particle",
        ),
        // The state's records: no tree array takes more per particle
        // (`tree::TreeArrays`; the group boxes come nearest, 15.2 bytes).
        SolverKind::Tree => (std::mem::size_of::<PosMass>() as u64, "particle"),
    }
}

/// The largest N `solver` can run on this device (whose limits are the
/// adapter's own, requested in full by `GpuContext`).
pub fn device_max_particles(ctx: &GpuContext, solver: SolverKind) -> u64 {
    max_particles_within(&ctx.device.limits(), solver)
}

/// The largest N `solver` can run within `limits`: every array must fit
/// one storage binding and one buffer (the tree's own arrays too:
/// `tree::max_particles_within`); indices are 31-bit.
pub fn max_particles_within(limits: &wgpu::Limits, solver: SolverKind) -> u64 {
    let bytes = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    match solver {
        SolverKind::Tree => crate::tree::max_particles_within(bytes),
        _ => (bytes / largest_array_bytes_per_particle(solver).0).min(u32::MAX as u64 / 2),
    }
}

/// The largest N `solver` runs with in the web app: the device's limit,
/// and `HERMITE_MAX_PARTICLES` for the Hermite integrators.
pub fn max_particles(ctx: &GpuContext, solver: SolverKind) -> u64 {
    let max = device_max_particles(ctx, solver);
    if solver.is_hermite() {
        max.min(HERMITE_MAX_PARTICLES)
    } else {
        max
    }
}

/// Refuses, in the web app, an N the device cannot hold with `solver` (or
/// above the page's Hermite limit), before anything is generated or
/// allocated, with a message that states the limit.
pub fn check_particle_count(ctx: &GpuContext, n: u64, solver: SolverKind) -> Result<()> {
    if solver.is_hermite() && n > HERMITE_MAX_PARTICLES && n <= device_max_particles(ctx, solver) {
        return Err(Error::InvalidParameter(format!(
            "N = {n} is above the web app's limit of {HERMITE_MAX_PARTICLES} particles for \
             the {} integrator: Hermite integration costs O(N²) per unit time; use the tree \
             or direct solver, or the CLI, for more",
            solver.name()
        )));
    }
    check_device_particle_count(ctx, n, solver)
}

/// Refuses an N the device cannot hold with `solver`, before anything is
/// generated or allocated, with a message that states the limit.
pub fn check_device_particle_count(ctx: &GpuContext, n: u64, solver: SolverKind) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidParameter("N must be at least 1".into()));
    }
    let max = device_max_particles(ctx, solver);
    if n > max {
        let (bytes, what) = largest_array_bytes_per_particle(solver);
        return Err(Error::TooManyParticles {
            n,
            max,
            reason: format!(
                "the {} solver's {what} array takes {bytes} bytes per particle and this \
                 device binds at most {} bytes per storage buffer",
                solver.name(),
                ctx.device.limits().max_storage_buffer_binding_size
            ),
        });
    }
    Ok(())
}
