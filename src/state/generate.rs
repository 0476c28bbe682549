//! Models sampled on the GPU (drives `shaders/generate.wgsl`): the same
//! per-particle random streams as the CPU's generators (`state::rng`, the
//! PCG and SplitMix64 arithmetic emulated on 32-bit words), the same
//! sampling, in f32. A galaxy's particles come back to the host in
//! pieces, where its components are placed and moved to their centre of
//! mass in f64; or, from a resident sampler (`Gpu::resident`, the page's
//! start), each component is sampled in place in the model's arrays, only
//! its sums come back, and `Gpu::place` applies the placement the host
//! worked out from them (`galaxy::realization::Placement`). The Plummer
//! sphere (and the cold collapse) stays on the
//! GPU (`Sampled`): only its chunks' sums come back (double-single,
//! `SUM_CHUNK` particles each), the host adds them in order into the
//! frame, and the GPU moves the particles to it. A run starts from them
//! there (`Run::from_sampled`), and the ranks of a run on several GPUs,
//! each sampling its own chunks, give one GPU's particles to the bit. The
//! CPU generators stay: they are the reference, and what Python uses.
//!
//! A GPU model is the CPU's to f32 rounding: positions and velocities
//! agree to ~1e-6 relative but for the rare particle whose speed's
//! rejection test falls on the other side in f32 (`tests/models.rs`
//! checks both, and the distribution itself). On one adapter a seed
//! gives the same bits every time.

use crate::error::{Error, Result};
use crate::gpu::buffers::{
    empty_storage_buffer, read_pieces, read_pieces_with, read_vec, records, storage_buffer_written,
    uniform_buffer,
};
use crate::gpu::context::dispatch_size;
use crate::gpu::ds::compose_with_ds;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::{AccPot, GenerateParams, PosMass, Velocity, WORKGROUP_SIZE};
use crate::gpu::GpuContext;
use crate::state::galaxy::disk::DiskKinematics;
use crate::state::galaxy::eddington::{DfNode, SPEED_TRIES};
use crate::state::galaxy::realization::{PhasePoint, Placement, Slots};
use crate::state::galaxy::{DiskEquilibrium, DiskSampler, Equilibrium, SpheroidSampler};
use crate::state::parallel::{fill_piece, map_indices, map_into, vec_for_pieces, SUM_CHUNK};
use crate::state::particles::{in_upload_order, GpuParticles, Particles};
use crate::state::plummer::{centre_of_chunks, MASS_CUT, SCALE_RADIUS};
use crate::state::rng::stream_key;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

const GENERATE_WGSL: &str = include_str!("../../shaders/generate.wgsl");

/// The composed WGSL of the generator.
pub fn wgsl() -> String {
    let consts = [
        ("SPEED_TRIES", SPEED_TRIES),
        ("SUM_CHUNK", SUM_CHUNK as u32),
    ];
    compose_with_ds(&consts, GENERATE_WGSL)
}

/// The binding contract of `shaders/generate.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageReadWrite),
    ("vel", Binding::StorageReadWrite),
    ("tables", Binding::StorageRead),
    ("sums", Binding::StorageReadWrite),
    ("tags", Binding::StorageReadWrite),
];

/// Particles per piece natively (64 MiB per array; two staging sets take
/// turns, so the GPU samples the next piece while the host copies one).
/// In the browser a piece is the whole model where the device's binding
/// limit allows: each read-back is a round trip through the event loop.
pub const PIECE: u64 = if cfg!(target_arch = "wasm32") {
    1 << 32
} else {
    1 << 22
};

/// Floats of one chunk's sums from `chunk_sums`: the hi parts of
/// (Σx, Σvx), (Σvy, Σvz, 0, 0), then their lo parts.
const CHUNK_LANES: usize = 16;

/// Bytes of one `PosMass` or `Velocity`.
const RECORD: u64 = std::mem::size_of::<PosMass>() as u64;

/// `n` particles of the Plummer sphere of `seed` (`state::plummer`),
/// sampled on the GPU and moved to their centre-of-mass frame; at rest
/// (every velocity zero, the cold collapse) with `at_rest`.
pub async fn plummer(ctx: &GpuContext, n: usize, seed: u64, at_rest: bool) -> Result<Particles> {
    plummer_on_gpu(ctx, n, seed, at_rest).await?.read(ctx).await
}

/// `plummer`, left on the GPU: a run starts from these arrays without
/// their round trip through the host (at 2^27 particles the read-back,
/// the host's passes and the upload took 1.5 s).
pub async fn plummer_on_gpu(
    ctx: &GpuContext,
    n: usize,
    seed: u64,
    at_rest: bool,
) -> Result<Sampled> {
    let part = plummer_part(ctx, n, seed, at_rest, 0..n.div_ceil(SUM_CHUNK)).await?;
    let frame = centre_of_chunks(n, &part.sums);
    Ok(part.centred(ctx, frame))
}

/// The particles of chunks `chunks` (of `SUM_CHUNK` particles) of
/// `plummer(n, seed, at_rest)`, before the move to the centre-of-mass
/// frame, with each chunk's sums: a rank of a run on several GPUs samples
/// its own chunks on its GPU, and every rank adds all chunks' sums in
/// order (`plummer::centre_of_chunks`), so the ranks' particles are one
/// GPU's to the bit.
pub async fn plummer_part(
    ctx: &GpuContext,
    n: usize,
    seed: u64,
    at_rest: bool,
    chunks: Range<usize>,
) -> Result<SampledPart> {
    ctx.check_particle_count(n as u64, RECORD)?;
    let first = (chunks.start * SUM_CHUNK).min(n);
    let count = (chunks.end * SUM_CHUNK).min(n) - first;
    let device = &ctx.device;
    let kernels = FrameKernels::new(device);
    let key = stream_key(seed, 0);
    let params = GenerateParams {
        key_lo: key as u32,
        key_hi: (key >> 32) as u32,
        first: first as u32,
        count: count as u32,
        mass: (1.0 / n as f64) as f32,
        at_rest: at_rest as u32,
        mass_cut: MASS_CUT as f32,
        scale_radius: SCALE_RADIUS as f32,
        ..Default::default()
    };
    // Never empty: a share may hold no chunk.
    let bytes = count.max(1) as u64 * RECORD;
    let sample = Sampled {
        pos_mass: empty_storage_buffer(device, "sampled positions", bytes),
        vel: empty_storage_buffer(device, "sampled velocities", bytes),
        first,
        count,
    };
    let chunk_count = count.div_ceil(SUM_CHUNK);
    let sums = empty_storage_buffer(
        device,
        "chunk sums",
        (CHUNK_LANES * chunk_count.max(1) * 4) as u64,
    );
    let params = uniform_buffer(device, "generate params", &params);
    let tables = storage_buffer_written(device, &ctx.queue, "one", &[1.0f32]);
    let no_tags = empty_storage_buffer(device, "no tags", 16);
    let bind = |k: &Kernel| {
        k.bind(
            device,
            &[
                &params,
                &sample.pos_mass,
                &sample.vel,
                &tables,
                &sums,
                &no_tags,
            ],
        )
    };
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        let groups = dispatch_size(device, count as u32, WORKGROUP_SIZE);
        kernels
            .plummer
            .dispatch(&mut pass, &bind(&kernels.plummer), groups);
        let groups = dispatch_size(device, chunk_count as u32, 1);
        kernels
            .chunk_sums
            .dispatch(&mut pass, &bind(&kernels.chunk_sums), groups);
    }
    ctx.queue.submit(Some(encoder.finish()));
    let ds: Vec<f32> = read_vec(device, &ctx.queue, &sums).await?;
    // hi + lo of each lane, exact in f64.
    let sums = (0..chunk_count)
        .map(|c| {
            let s = &ds[CHUNK_LANES * c..CHUNK_LANES * (c + 1)];
            std::array::from_fn(|a| s[a] as f64 + s[a + CHUNK_LANES / 2] as f64)
        })
        .collect();
    Ok(SampledPart {
        sample,
        sums,
        kernels,
    })
}

/// Particles sampled on the GPU: positions and velocities of particles
/// `first..first + count` of a model, in buffers a run can take as its
/// state (`Run::from_sampled`).
pub struct Sampled {
    pub pos_mass: wgpu::Buffer,
    pub vel: wgpu::Buffer,
    pub first: usize,
    pub count: usize,
}

impl Sampled {
    /// A run's state of these particles, with forces zeroed and the
    /// upload indices in order (`GpuParticles`).
    pub fn into_state(self, ctx: &GpuContext) -> GpuParticles {
        let n = self.count as u32;
        let acc_pot = n.max(1) as u64 * std::mem::size_of::<AccPot>() as u64;
        GpuParticles {
            n,
            pos_mass: self.pos_mass,
            vel: self.vel,
            acc_pot: empty_storage_buffer(&ctx.device, "acc_pot", acc_pot),
            id: in_upload_order(ctx, n),
        }
    }

    /// The particles on the host (ids: their indices in the model).
    pub async fn read(&self, ctx: &GpuContext) -> Result<Particles> {
        let count = self.count;
        let mut p = Particles {
            pos_mass: vec_for_pieces(count),
            vel: vec_for_pieces(count),
            id: (self.first as u64..(self.first + count) as u64).collect(),
        };
        let sources = [(&self.pos_mass, RECORD), (&self.vel, RECORD)];
        let piece = PIECE.min(ctx.max_elements(RECORD));
        read_pieces(
            &ctx.device,
            &ctx.queue,
            &sources,
            count as u64,
            piece,
            |at, bytes| {
                fill_piece(&mut p.pos_mass, at as usize, &records::<PosMass>(bytes[0]));
                fill_piece(&mut p.vel, at as usize, &records::<Velocity>(bytes[1]));
                true
            },
        )
        .await?;
        if p.pos_mass.len() != count || p.vel.len() != count {
            return Err(Error::Readback(format!(
                "{} of {count} sampled particles came back",
                p.pos_mass.len().min(p.vel.len())
            )));
        }
        Ok(p)
    }
}

/// Particles sampled on the GPU before the move to the centre-of-mass
/// frame, and the sums of each of their chunks (`plummer_part`).
pub struct SampledPart {
    sample: Sampled,
    /// Σ x and Σ v (6 lanes) of each chunk, in order.
    pub sums: Vec<[f64; 6]>,
    kernels: FrameKernels,
}

impl SampledPart {
    /// The particles in the frame `frame` (centre of mass, its velocity;
    /// `plummer::centre_of_chunks` of every chunk's sums), moved on the
    /// GPU: each coordinate's exact difference from the frame's f32 part,
    /// less its remainder, rounded once (`shaders/generate.wgsl`'s
    /// `centre`), the same bits on every rank.
    pub fn centred(self, ctx: &GpuContext, (com, vcom): PhasePoint) -> Sampled {
        let device = &ctx.device;
        let s = &self.sample;
        let ((c_hi, c_lo), (v_hi, v_lo)) = (split_hi_lo(com), split_hi_lo(vcom));
        let mut frame = vec![1.0f32];
        for part in [c_hi, c_lo, v_hi, v_lo] {
            frame.extend(part);
        }
        let params = GenerateParams {
            count: s.count as u32,
            ..Default::default()
        };
        let params = uniform_buffer(device, "generate params", &params);
        let tables = storage_buffer_written(device, &ctx.queue, "frame", &frame);
        let unused = empty_storage_buffer(device, "no sums", 16);
        let no_tags = empty_storage_buffer(device, "no tags", 16);
        let k = &self.kernels.centre;
        let bind = k.bind(
            device,
            &[&params, &s.pos_mass, &s.vel, &tables, &unused, &no_tags],
        );
        k.submit(ctx, &bind, s.count as u32);
        self.sample
    }
}

/// `x` as f32 hi and lo parts (hi + lo is `x` to double-single's
/// precision): what `centre` and `place` add in two-sums.
fn split_hi_lo(x: [f64; 3]) -> ([f32; 3], [f32; 3]) {
    let hi = x.map(|a| a as f32);
    (hi, std::array::from_fn(|k| (x[k] - hi[k] as f64) as f32))
}

/// The Plummer sphere's kernels: its sampler, its chunks' sums and the
/// move to their frame.
struct FrameKernels {
    plummer: Kernel,
    chunk_sums: Kernel,
    centre: Kernel,
}

impl FrameKernels {
    fn new(device: &wgpu::Device) -> Self {
        let module = ShaderSource::new("generate", wgsl());
        let kernel = |entry| Kernel::from_module(device, entry, &module, entry, BINDINGS);
        Self {
            plummer: kernel("plummer"),
            chunk_sums: kernel("chunk_sums"),
            centre: kernel("centre"),
        }
    }
}

/// One run of a generator's entry point over `count` particles in pieces.
struct Pieces<'a> {
    kernel: &'a Kernel,
    tables: &'a wgpu::Buffer,
    /// The parameters; `first` is the run's first particle, `count` is
    /// set per piece.
    params: GenerateParams,
    /// Particles per piece at most.
    piece: u64,
}

impl Pieces<'_> {
    /// Samples the particles and hands each piece's records to
    /// `land(index of its first in the run, positions, velocities)`.
    async fn sample(
        &self,
        ctx: &GpuContext,
        count: u64,
        mut land: impl FnMut(usize, &[PosMass], &[Velocity]),
    ) -> Result<()> {
        let device = &ctx.device;
        let piece = self.piece.min(ctx.max_elements(RECORD)).min(count).max(1);
        let params = uniform_buffer(device, "generate params", &self.params);
        let pos_mass = empty_storage_buffer(device, "generated positions", piece * RECORD);
        let vel = empty_storage_buffer(device, "generated velocities", piece * RECORD);
        let no_sums = empty_storage_buffer(device, "no sums", 16);
        let no_tags = empty_storage_buffer(device, "no tags", 16);
        let bind = self.kernel.bind(
            device,
            &[&params, &pos_mass, &vel, self.tables, &no_sums, &no_tags],
        );
        let sample = |encoder: &mut wgpu::CommandEncoder, at: u64, count: u64| {
            // Applied before the submission that holds this piece.
            let p = GenerateParams {
                first: (self.params.first as u64 + at) as u32,
                count: count as u32,
                ..self.params
            };
            ctx.queue.write_buffer(&params, 0, bytemuck::bytes_of(&p));
            let mut pass = encoder.begin_compute_pass(&Default::default());
            let groups = dispatch_size(device, count as u32, WORKGROUP_SIZE);
            self.kernel.dispatch(&mut pass, &bind, groups);
        };
        read_pieces_with(
            device,
            &ctx.queue,
            &[(&pos_mass, RECORD), (&vel, RECORD)],
            count,
            piece,
            Some(&sample),
            |at, bytes| {
                let (pm, v): (Cow<[PosMass]>, Cow<[Velocity]>) =
                    (records(bytes[0]), records(bytes[1]));
                land(at as usize, &pm, &v);
                true
            },
        )
        .await
    }
}

/// Nodes of a disk's moment table: its spacing (the edge over 4096, 0.0024
/// scale lengths) puts linear interpolation within ~1e-6 of the moments.
const DISK_NODES: usize = 4096;

/// Draws galaxy components on a GPU (`galaxy::Sampler`): the CPU's
/// streams, the CPU's tables in f32, the CPU's draws evaluated in f32
/// (`shaders/generate.wgsl`). A disk's moments, which the CPU evaluates
/// at each radius (Bessel functions, κ by differences), come from a table
/// of `DISK_NODES` radii.
pub struct Gpu<'a> {
    ctx: &'a GpuContext,
    /// The spheroid, disk, sums and placement kernels, built at their
    /// first use.
    kernels: OnceCell<[Kernel; 4]>,
    /// The whole model's arrays where it samples in place (`resident`).
    arrays: Option<ResidentArrays>,
}

/// Indices into `Gpu::kernels`.
const SPHEROID: usize = 0;
const DISK: usize = 1;
const SUMS: usize = 2;
const PLACE: usize = 3;

/// A galaxy's arrays on the GPU while a resident sampler fills them.
struct ResidentArrays {
    pos_mass: wgpu::Buffer,
    vel: wgpu::Buffer,
    tags: wgpu::Buffer,
    n: usize,
}

/// A galaxy model sampled and placed on the GPU (`Gpu::resident`): its
/// particles as a run starts from them, and each particle's tag.
pub struct SampledGalaxy {
    pub sampled: Sampled,
    /// One u32 a particle: its component's index.
    pub tags: wgpu::Buffer,
}

impl<'a> Gpu<'a> {
    pub fn new(ctx: &'a GpuContext) -> Self {
        Self {
            ctx,
            kernels: OnceCell::new(),
            arrays: None,
        }
    }

    /// A sampler that leaves a model of `n` particles on the GPU: each
    /// component is sampled in place in the model's arrays, and a
    /// realization it draws is resident (`Realization::resident`), its
    /// placement applied by `place`. Nothing comes back but each
    /// component's sums.
    pub fn resident(ctx: &'a GpuContext, n: usize) -> Result<Self> {
        ctx.check_particle_count(n as u64, RECORD)?;
        let device = &ctx.device;
        let bytes = n.max(1) as u64 * RECORD;
        let arrays = ResidentArrays {
            pos_mass: empty_storage_buffer(device, "galaxy positions", bytes),
            vel: empty_storage_buffer(device, "galaxy velocities", bytes),
            tags: empty_storage_buffer(device, "galaxy tags", n.max(1) as u64 * 4),
            n,
        };
        Ok(Self {
            arrays: Some(arrays),
            ..Self::new(ctx)
        })
    }

    fn kernel(&self, which: usize) -> &Kernel {
        &self.kernels.get_or_init(|| {
            let device = &self.ctx.device;
            let module = ShaderSource::new("generate", wgsl());
            ["spheroid", "disk", "chunk_sums", "place"]
                .map(|entry| Kernel::from_module(device, entry, &module, entry, BINDINGS))
        })[which]
    }

    /// Samples `count` particles by `kernel` (parameters `params`, tables
    /// `tables`) into the resident arrays from `params.dst` on, and
    /// returns their Σ x and Σ v (summed in double-single on the GPU by
    /// chunks, the chunks added here).
    async fn fill_resident(
        &self,
        arrays: &ResidentArrays,
        (kernel, tables): (&Kernel, &wgpu::Buffer),
        params: GenerateParams,
    ) -> Result<[f64; 6]> {
        let ctx = self.ctx;
        let device = &ctx.device;
        let count = params.count;
        let chunks = (count as usize).div_ceil(SUM_CHUNK);
        let sums =
            empty_storage_buffer(device, "component sums", (CHUNK_LANES * chunks) as u64 * 4);
        let one = storage_buffer_written(device, &ctx.queue, "one", &[1.0f32]);
        let params = uniform_buffer(device, "generate params", &params);
        let a = arrays;
        let bind = |k: &Kernel, tables: &wgpu::Buffer| {
            k.bind(
                device,
                &[&params, &a.pos_mass, &a.vel, tables, &sums, &a.tags],
            )
        };
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            let groups = dispatch_size(device, count, WORKGROUP_SIZE);
            kernel.dispatch(&mut pass, &bind(kernel, tables), groups);
            let summing = self.kernel(SUMS);
            let groups = dispatch_size(device, chunks as u32, 1);
            summing.dispatch(&mut pass, &bind(summing, &one), groups);
        }
        ctx.queue.submit(Some(encoder.finish()));
        let ds: Vec<f32> = read_vec(device, &ctx.queue, &sums).await?;
        // hi + lo of each lane, exact in f64, the chunks in order.
        let mut total = [0.0; 6];
        for s in ds.chunks_exact(CHUNK_LANES) {
            for (a, t) in total.iter_mut().enumerate() {
                *t += s[a] as f64 + s[a + CHUNK_LANES / 2] as f64;
            }
        }
        Ok(total)
    }

    /// The model this resident sampler drew, its runs placed as
    /// `placements` say (a resident `Realization`'s), each particle with
    /// its run's mass and tag.
    pub fn place(self, placements: &[Placement]) -> Result<SampledGalaxy> {
        let ctx = self.ctx;
        let device = &ctx.device;
        let kernel = self.kernel(PLACE);
        let Some(a) = &self.arrays else {
            return Err(Error::InvalidParameter(
                "placed by a sampler that is not resident".into(),
            ));
        };
        let placed: usize = placements.iter().map(|p| p.count).sum();
        if placed != a.n {
            return Err(Error::InvalidParameter(format!(
                "{placed} of the galaxy's {} particles placed",
                a.n
            )));
        }
        let no_sums = empty_storage_buffer(device, "no sums", 16);
        for p in placements.iter().filter(|p| p.count > 0) {
            let mut table = vec![1.0f32];
            table.extend(p.rotation.iter().flatten().map(|&r| r as f32));
            let ((x_hi, x_lo), (v_hi, v_lo)) = (split_hi_lo(p.dx), split_hi_lo(p.dv));
            for part in [x_hi, x_lo, v_hi, v_lo] {
                table.extend(part);
            }
            let params = GenerateParams {
                dst: p.start as u32,
                count: p.count as u32,
                mass: p.mass as f32,
                tag: p.tag,
                ..Default::default()
            };
            let params = uniform_buffer(device, "place params", &params);
            let table = storage_buffer_written(device, &ctx.queue, "placement", &table);
            let bind = kernel.bind(
                device,
                &[&params, &a.pos_mass, &a.vel, &table, &no_sums, &a.tags],
            );
            kernel.submit(ctx, &bind, p.count as u32);
        }
        let a = self.arrays.expect("checked above");
        Ok(SampledGalaxy {
            sampled: Sampled {
                pos_mass: a.pos_mass,
                vel: a.vel,
                first: 0,
                count: a.n,
            },
            tags: a.tags,
        })
    }

    /// Runs `kernel` over the slots from streams (`seed`, `stream`) with
    /// the columns `tables` and the parameters `params` (key, `first` and
    /// `count` set here), the f32 results widened into the slots.
    async fn fill(
        &self,
        (kernel, tables): (&Kernel, &[f32]),
        params: GenerateParams,
        (seed, stream): (u64, u64),
        out: Slots<'_>,
    ) -> Result<()> {
        let ctx = self.ctx;
        let tables = storage_buffer_written(&ctx.device, &ctx.queue, "galaxy tables", tables);
        let key = stream_key(seed, stream);
        if let (Some(arrays), Some(run)) = (&self.arrays, out.resident) {
            let params = GenerateParams {
                key_lo: key as u32,
                key_hi: (key >> 32) as u32,
                first: out.first as u32,
                count: run.count as u32,
                dst: run.start as u32,
                ..params
            };
            run.sums = self
                .fill_resident(arrays, (kernel, &tables), params)
                .await?;
            return Ok(());
        }
        let run = Pieces {
            kernel,
            tables: &tables,
            params: GenerateParams {
                key_lo: key as u32,
                key_hi: (key >> 32) as u32,
                first: out.first as u32,
                ..params
            },
            piece: PIECE,
        };
        let widen = |x: [f32; 3]| x.map(f64::from);
        run.sample(ctx, out.pos.len() as u64, |at, pm, v| {
            map_into(&mut out.pos[at..at + pm.len()], pm, |x| widen(x.pos));
            map_into(&mut out.vel[at..at + v.len()], v, |x| widen(x.vel));
        })
        .await
    }
}

/// Appends one f32 column per field of `rows`, in the order of `fields`.
fn push_columns<T>(tables: &mut Vec<f32>, rows: &[T], fields: &[fn(&T) -> f64]) {
    for field in fields {
        tables.extend(rows.iter().map(|r| field(r) as f32));
    }
}

impl SpheroidSampler for Gpu<'_> {
    async fn spheroid(&self, eq: &Equilibrium, k: usize, seed: u64, out: Slots<'_>) -> Result<()> {
        let (table, df) = eq.component(k).expect("a component with a profile");
        let pot = &eq.potential;
        // Columns in the order of generate.wgsl's RADIUS .. PEAK_Q.
        let nodes: Vec<DfNode> = df.nodes().collect();
        let mut tables = Vec::with_capacity(7 * nodes.len());
        for column in [&pot.r, &table.enclosed, &pot.psi] {
            tables.extend(column.iter().map(|&x| x as f32));
        }
        let fields: [fn(&DfNode) -> f64; 4] = [|d| d.energy, |d| d.f, |d| d.bound, |d| d.peak_q];
        push_columns(&mut tables, &nodes, &fields);
        let params = GenerateParams {
            nodes: pot.r.len() as u32,
            inner_exponent: (1.0 / (3.0 + table.inner_slope())) as f32,
            total_mass: *pot.enclosed.last().expect("a grid") as f32,
            bound_beyond: df.bound_beyond() as f32,
            ..Default::default()
        };
        self.fill(
            (self.kernel(SPHEROID), &tables),
            params,
            (seed, k as u64),
            out,
        )
        .await
    }

    fn resident(&self) -> bool {
        self.arrays.is_some()
    }
}

impl DiskSampler for Gpu<'_> {
    async fn disk(&self, eq: &DiskEquilibrium, stream: (u64, u64), out: Slots<'_>) -> Result<()> {
        let d = &eq.disk;
        let spacing = d.max_radius / DISK_NODES as f64;
        let moments = map_indices(DISK_NODES, |i| eq.kinematics((i as f64 + 0.5) * spacing));
        // Columns in the order of generate.wgsl's MEAN_VPHI .. SIGMA_Z.
        let mut tables = Vec::with_capacity(4 * DISK_NODES);
        let fields: [fn(&DiskKinematics) -> f64; 4] = [
            |m| m.mean_vphi,
            |m| m.sigma_r,
            |m| m.sigma_phi,
            |m| m.sigma_z,
        ];
        push_columns(&mut tables, &moments, &fields);
        let params = GenerateParams {
            nodes: DISK_NODES as u32,
            scale_length: d.scale_length as f32,
            scale_height: d.scale_height as f32,
            max_radius: d.max_radius as f32,
            spacing: spacing as f32,
            ..Default::default()
        };
        self.fill((self.kernel(DISK), &tables), params, stream, out)
            .await
    }
}
