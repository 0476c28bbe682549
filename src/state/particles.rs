//! Particle state: on the CPU (`Particles`, the form snapshots and initial
//! conditions use) and on the GPU (`GpuParticles`, the buffers every kernel
//! binds). Layouts come from `gpu::layout`.

use crate::error::{Error, Result};
use crate::gpu::buffers::{
    empty_storage_buffer, read_buffer_ranges, read_pieces, storage_buffer_in_pieces,
};
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::gpu::shader::compose;
use crate::gpu::GpuContext;
use crate::state::parallel::copy;

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
        if !self.check_values(0)? {
            return Err("total mass is zero".into());
        }
        Ok(())
    }

    /// Positions, velocities and masses checked, the particles named by
    /// their index plus `first` (a share of a larger set: `validate`
    /// without its whole-set checks). Whether any mass is positive.
    pub fn check_values(&self, first: usize) -> std::result::Result<bool, String> {
        let n = self.pos_mass.len();
        // Checked on every core a chunk at a time; the first bad particle
        // in index order is the one named, as in turn.
        const CHUNK: usize = 1 << 16;
        let problems = super::parallel::map_indices(n.div_ceil(CHUNK), |c| {
            let mut positive = false;
            for k in c * CHUNK..((c + 1) * CHUNK).min(n) {
                let (p, v) = (&self.pos_mass[k], &self.vel[k]);
                let i = first + k;
                if !p.pos.iter().all(|x| x.is_finite()) {
                    return Err(format!("particle {i}: non-finite position {:?}", p.pos));
                }
                if !v.vel.iter().all(|x| x.is_finite()) {
                    return Err(format!("particle {i}: non-finite velocity {:?}", v.vel));
                }
                if !(p.mass.is_finite() && p.mass >= 0.0) {
                    return Err(format!("particle {i}: invalid mass {}", p.mass));
                }
                positive |= p.mass > 0.0;
            }
            Ok(positive)
        });
        // Masses are finite and non-negative here: the total is positive
        // when any mass is.
        let mut positive = false;
        for p in problems {
            positive |= p?;
        }
        Ok(positive)
    }
}

const PARTICLES_WGSL: &str = include_str!("../../shaders/particles.wgsl");

/// The composed WGSL of `in_upload_order`'s kernel.
pub fn wgsl() -> String {
    compose(&[], PARTICLES_WGSL)
}

/// The binding contract of `shaders/particles.wgsl`.
pub const BINDINGS: &[Slot] = &[("upload_index", Binding::StorageReadWrite)];

/// The upload indices 0..n of a state in upload order (a new state, or a
/// redraw's), written on the GPU: sent from the host, they were half a
/// gigabyte at 10^8 particles.
pub fn in_upload_order(ctx: &GpuContext, n: u32) -> wgpu::Buffer {
    let d = &ctx.device;
    let buffer = empty_storage_buffer(d, "id", 4 * n.max(1) as u64);
    let kernel = Kernel::new(d, "upload order", &wgsl(), "in_upload_order", BINDINGS);
    kernel.submit(ctx, &kernel.bind(d, &[&buffer]), n.max(1));
    buffer
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

/// The arrays of a `GpuParticles` state, in the order a `StateReadback`
/// (and a checkpoint) lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateArray {
    PosMass,
    Vel,
    AccPot,
    Index,
}

impl StateArray {
    pub const ALL: [StateArray; 4] = [Self::PosMass, Self::Vel, Self::AccPot, Self::Index];
}

/// Particles per piece of a state's read-back (52 MiB: the host's share
/// of each piece's wait then stays small; in the browser more than any
/// N, one piece).
pub(crate) const READ_PIECE: u64 = if cfg!(target_arch = "wasm32") {
    1 << 32
} else {
    1 << 20
};

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
        Self::upload_with(ctx, particles, |_| None)
    }

    /// `upload` with the forces and potentials `acc_pot(N)` gives (a
    /// picture's: its potentials, or one element where it has none), made
    /// only once N has been checked; `None`: N zeroed records, made on the
    /// GPU (new buffers are zeroed), not uploaded.
    pub fn upload_with(
        ctx: &GpuContext,
        particles: &Particles,
        acc_pot: impl FnOnce(usize) -> Option<Vec<AccPot>>,
    ) -> Result<Self> {
        particles.validate().map_err(Error::InvalidParameter)?;
        Self::upload_validated_with(ctx, particles, acc_pot)
    }

    /// `upload` of particles that have passed `Particles::validate`: a
    /// run's start validates them once (a pass over 2^24 particles takes
    /// 0.14 s of the browser's one core).
    pub fn upload_validated(ctx: &GpuContext, particles: &Particles) -> Result<Self> {
        Self::upload_validated_with(ctx, particles, |_| None)
    }

    fn upload_validated_with(
        ctx: &GpuContext,
        particles: &Particles,
        acc_pot: impl FnOnce(usize) -> Option<Vec<AccPot>>,
    ) -> Result<Self> {
        let n = particles.len() as u64;
        ctx.check_particle_count(n, std::mem::size_of::<PosMass>() as u64)?;
        if n > u32::MAX as u64 / 2 {
            return Err(Error::TooManyParticles {
                n,
                max: u32::MAX as u64 / 2,
                reason: "particle indices are 32-bit on the GPU".into(),
            });
        }
        let (d, q) = (&ctx.device, &ctx.queue);
        Ok(Self {
            n: n as u32,
            pos_mass: storage_buffer_in_pieces(d, q, "pos_mass", &particles.pos_mass)?,
            vel: storage_buffer_in_pieces(d, q, "vel", &particles.vel)?,
            acc_pot: match acc_pot(n as usize) {
                Some(a) => storage_buffer_in_pieces(d, q, "acc_pot", &a)?,
                None => {
                    empty_storage_buffer(d, "acc_pot", n * std::mem::size_of::<AccPot>() as u64)
                }
            },
            id: in_upload_order(ctx, n as u32),
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
        let (d, q) = (&ctx.device, &ctx.queue);
        Ok(Self {
            n: n as u32,
            pos_mass: storage_buffer_in_pieces(d, q, "pos_mass", &state.pos_mass)?,
            vel: storage_buffer_in_pieces(d, q, "vel", &state.vel)?,
            acc_pot: storage_buffer_in_pieces(d, q, "acc_pot", &state.acc_pot)?,
            id: storage_buffer_in_pieces(d, q, "id", &state.index)?,
        })
    }

    /// Positions, velocities, forces and upload indices of one consistent
    /// state, in GPU order, read back a piece at a time through staging
    /// buffers (`gpu::buffers::read_pieces`). In the browser, whose event
    /// loop may queue steps while a map is pending, the state is one piece.
    pub async fn read(&self, ctx: &GpuContext) -> Result<StateReadback> {
        let n = self.n as usize;
        // Zeroed arrays the pieces are copied into on every core (one
        // core's copies and page faults were most of a redraw's read at
        // 2^24 particles a rank).
        let mut s = StateReadback {
            pos_mass: bytemuck::zeroed_vec(n),
            vel: bytemuck::zeroed_vec(n),
            acc_pot: bytemuck::zeroed_vec(n),
            index: bytemuck::zeroed_vec(n),
        };
        let sources = StateArray::ALL.map(|a| self.array(a));
        read_pieces(
            &ctx.device,
            &ctx.queue,
            &sources,
            n as u64,
            READ_PIECE,
            |first, b| {
                let at = first as usize;
                let place = |dst: &mut [u8], src: &[u8]| copy(&mut dst[..src.len()], src);
                place(bytemuck::cast_slice_mut(&mut s.pos_mass[at..]), b[0]);
                place(bytemuck::cast_slice_mut(&mut s.vel[at..]), b[1]);
                place(bytemuck::cast_slice_mut(&mut s.acc_pot[at..]), b[2]);
                place(bytemuck::cast_slice_mut(&mut s.index[at..]), b[3]);
                true
            },
        )
        .await?;
        Ok(s)
    }

    /// One of the state's arrays read back a piece at a time (as
    /// `read`), `f(bytes)` for each piece in order, until `f`
    /// returns false: a checkpoint's arrays go to its file this way.
    pub async fn for_each_array_piece(
        &self,
        ctx: &GpuContext,
        array: StateArray,
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        read_pieces(
            &ctx.device,
            &ctx.queue,
            &[self.array(array)],
            self.n as u64,
            READ_PIECE,
            |_, b| f(b[0]),
        )
        .await
    }

    /// The buffer of one state array and its record size in bytes.
    fn array(&self, array: StateArray) -> (&wgpu::Buffer, u64) {
        let (buffer, size) = match array {
            StateArray::PosMass => (&self.pos_mass, std::mem::size_of::<PosMass>()),
            StateArray::Vel => (&self.vel, std::mem::size_of::<Velocity>()),
            StateArray::AccPot => (&self.acc_pot, std::mem::size_of::<AccPot>()),
            StateArray::Index => (&self.id, std::mem::size_of::<u32>()),
        };
        (buffer, size as u64)
    }

    /// Every particle's force, in GPU order (a buffer may hold records
    /// past `n`: a redraw's keeps its room).
    pub async fn read_acc_pot(&self, ctx: &GpuContext) -> Result<Vec<AccPot>> {
        let bytes = self.n as u64 * std::mem::size_of::<AccPot>() as u64;
        let read =
            read_buffer_ranges(&ctx.device, &ctx.queue, &[(&self.acc_pot, 0, bytes)]).await?;
        Ok(bytemuck::pod_collect_to_vec(&read[0]))
    }
}
