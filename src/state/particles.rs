//! Particle state: on the CPU (`Particles`, the form snapshots and initial
//! conditions use) and on the GPU (`GpuParticles`, the buffers every kernel
//! binds). Layouts come from `gpu::layout`.

use crate::error::{Error, Result};
use crate::gpu::buffers::{read_buffers, read_vec, storage_buffer};
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::gpu::GpuContext;

/// N particles on the CPU, in N-body units; `id[k]` is the particle's
/// permanent identity (kept through snapshots and reorderings).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Particles {
    pub pos_mass: Vec<PosMass>,
    pub vel: Vec<Velocity>,
    pub id: Vec<u64>,
}

impl Particles {
    pub fn len(&self) -> usize {
        self.pos_mass.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos_mass.is_empty()
    }

    pub fn total_mass(&self) -> f64 {
        self.pos_mass.iter().map(|p| p.mass as f64).sum()
    }

    /// Checks what every solver assumes: equal array lengths, at least one
    /// particle, finite values, non-negative masses and positive total mass.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let n = self.pos_mass.len();
        if n == 0 {
            return Err("no particles".into());
        }
        if self.vel.len() != n || self.id.len() != n {
            return Err(format!(
                "inconsistent arrays: {n} positions, {} velocities, {} ids",
                self.vel.len(),
                self.id.len()
            ));
        }
        for (k, (p, v)) in self.pos_mass.iter().zip(&self.vel).enumerate() {
            if !p.pos.iter().all(|x| x.is_finite()) {
                return Err(format!("particle {k}: non-finite position {:?}", p.pos));
            }
            if !v.vel.iter().all(|x| x.is_finite()) {
                return Err(format!("particle {k}: non-finite velocity {:?}", v.vel));
            }
            if !(p.mass.is_finite() && p.mass >= 0.0) {
                return Err(format!("particle {k}: invalid mass {}", p.mass));
            }
        }
        if self.total_mass() <= 0.0 {
            return Err("total mass is zero".into());
        }
        Ok(())
    }
}

/// One consistent read-back of the GPU state, in GPU order; `index[k]` is
/// the position of particle k in the uploaded `Particles`.
#[derive(Clone, Debug, PartialEq)]
pub struct StateReadback {
    pub pos_mass: Vec<PosMass>,
    pub vel: Vec<Velocity>,
    pub acc_pot: Vec<AccPot>,
    pub index: Vec<u32>,
}

/// Bytes of GPU memory per particle of the state arrays.
pub const STATE_BYTES_PER_PARTICLE: u64 = (std::mem::size_of::<PosMass>()
    + std::mem::size_of::<Velocity>()
    + std::mem::size_of::<AccPot>()
    + 4) as u64;

/// The particle state on the GPU: three arrays of 16-byte records, and the
/// index of each particle in the uploaded `Particles` (the tree code
/// reorders particles every step; `id` travels with them). Cloning shares
/// the buffers.
#[derive(Clone)]
pub struct GpuParticles {
    pub n: u32,
    pub pos_mass: wgpu::Buffer,
    pub vel: wgpu::Buffer,
    pub acc_pot: wgpu::Buffer,
    pub id: wgpu::Buffer,
}

impl GpuParticles {
    /// Uploads `particles`, refusing an N the device cannot hold before any
    /// allocation.
    pub fn upload(ctx: &GpuContext, particles: &Particles) -> Result<Self> {
        Self::upload_with(ctx, particles, |n| vec![AccPot::default(); n])
    }

    /// `upload` with the forces and potentials `acc_pot(N)` gives (a
    /// picture's: its potentials, or one element where it has none), made
    /// only once N has been checked.
    pub fn upload_with(
        ctx: &GpuContext,
        particles: &Particles,
        acc_pot: impl FnOnce(usize) -> Vec<AccPot>,
    ) -> Result<Self> {
        particles.validate().map_err(Error::InvalidParameter)?;
        let n = particles.len() as u64;
        ctx.check_particle_count(n, std::mem::size_of::<PosMass>() as u64)?;
        if n > u32::MAX as u64 / 2 {
            return Err(Error::TooManyParticles {
                n,
                max: u32::MAX as u64 / 2,
                reason: "particle indices are 32-bit on the GPU".into(),
            });
        }
        let d = &ctx.device;
        Ok(Self {
            n: n as u32,
            pos_mass: storage_buffer(d, "pos_mass", &particles.pos_mass),
            vel: storage_buffer(d, "vel", &particles.vel),
            acc_pot: storage_buffer(d, "acc_pot", &acc_pot(n as usize)),
            id: storage_buffer(d, "id", &(0..n as u32).collect::<Vec<u32>>()),
        })
    }

    /// A state as a read-back left it (GPU order, with the forces and the
    /// upload indices): what a checkpoint restores.
    pub fn restore(ctx: &GpuContext, state: &StateReadback) -> Result<Self> {
        let n = state.pos_mass.len();
        if [state.vel.len(), state.acc_pot.len(), state.index.len()] != [n; 3] || n == 0 {
            return Err(Error::InvalidParameter(
                "a restored state needs equal, non-empty arrays".into(),
            ));
        }
        ctx.check_particle_count(n as u64, std::mem::size_of::<PosMass>() as u64)?;
        let d = &ctx.device;
        Ok(Self {
            n: n as u32,
            pos_mass: storage_buffer(d, "pos_mass", &state.pos_mass),
            vel: storage_buffer(d, "vel", &state.vel),
            acc_pot: storage_buffer(d, "acc_pot", &state.acc_pot),
            id: storage_buffer(d, "id", &state.index),
        })
    }

    /// Positions, velocities, forces and upload indices of one consistent
    /// state, in GPU order.
    pub async fn read(&self, ctx: &GpuContext) -> Result<StateReadback> {
        let b = read_buffers(
            &ctx.device,
            &ctx.queue,
            &[&self.pos_mass, &self.vel, &self.acc_pot, &self.id],
        )
        .await?;
        Ok(StateReadback {
            pos_mass: bytemuck::pod_collect_to_vec(&b[0]),
            vel: bytemuck::pod_collect_to_vec(&b[1]),
            acc_pot: bytemuck::pod_collect_to_vec(&b[2]),
            index: bytemuck::pod_collect_to_vec(&b[3]),
        })
    }

    pub async fn read_acc_pot(&self, ctx: &GpuContext) -> Result<Vec<AccPot>> {
        read_vec(&ctx.device, &ctx.queue, &self.acc_pot).await
    }
}
