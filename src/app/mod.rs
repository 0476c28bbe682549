//! What the front ends need besides the run itself, free of any platform
//! code so native tests cover it: settings as URL parameters (`settings`),
//! read-outs computed from a state (`readout`), and the particle-count
//! limit of each solver on a device.

pub mod readout;
pub mod settings;

use crate::error::{Error, Result};
use crate::gpu::layout::PosMass;
use crate::gpu::GpuContext;
use crate::run::SolverKind;
use crate::tree::layout::CellProps;

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
        // The cell moments: 80 bytes per cell, allowing half a cell per
        // particle (the tree allocates 0.3, CELLS_PER_PARTICLE).
        SolverKind::Tree => (
            (std::mem::size_of::<CellProps>() as u64).div_ceil(2),
            "tree cell-moment",
        ),
    }
}

/// The largest N `solver` can run on this device.
pub fn max_particles(ctx: &GpuContext, solver: SolverKind) -> u64 {
    let max = ctx
        .max_elements(largest_array_bytes_per_particle(solver).0)
        .min(u32::MAX as u64 / 2);
    match solver {
        SolverKind::Tree => max.min(crate::tree::MAX_TREE_PARTICLES),
        SolverKind::Hermite4 | SolverKind::Hermite6 => max.min(HERMITE_MAX_PARTICLES),
        _ => max,
    }
}

/// Refuses an N the device cannot hold with `solver`, before anything is
/// allocated, with a message that states the limit.
pub fn check_particle_count(ctx: &GpuContext, n: u64, solver: SolverKind) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidParameter("N must be at least 1".into()));
    }
    let max = max_particles(ctx, solver);
    if solver.is_hermite() && n > max && max == HERMITE_MAX_PARTICLES {
        return Err(Error::InvalidParameter(format!(
            "N = {n} is above the web app's limit of {HERMITE_MAX_PARTICLES} particles for \
             the {} integrator: Hermite integration costs O(N²) per unit time; use the tree \
             or direct solver, or the CLI, for more",
            solver.name()
        )));
    }
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
