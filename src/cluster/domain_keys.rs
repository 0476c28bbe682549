//! The curve's part of a redraw on the GPU (drives
//! `shaders/domain_keys.wgsl`): this rank's box (the tree's own kernel),
//! the candidate cuts with their Hilbert keys in the global cube and
//! their work, and each particle's destination rank. The host then reads back a few kilobytes
//! instead of the whole state; `decomposition` is its twin on the host,
//! and both give the same keys, cuts and destinations bit for bit.

use super::decomposition::{Box3, CurveFrame};
use crate::error::Result;
use crate::gpu::buffers::{empty_storage_buffer, read_buffer_ranges, records};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::GpuContext;
use crate::tree::layout::{Bounds, CutCandidate, RedrawParams, TreeBounds};
use crate::tree::TreeSolver;

const DOMAIN_KEYS_WGSL: &str = include_str!("../../shaders/domain_keys.wgsl");

pub fn wgsl() -> String {
    crate::tree::compose_with(&[], DOMAIN_KEYS_WGSL)
}

/// The binding contract of `shaders/domain_keys.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("interactions", Binding::StorageRead),
    ("cuts", Binding::StorageRead),
    ("sort_keys", Binding::StorageReadWrite),
    ("order", Binding::StorageReadWrite),
    ("candidates", Binding::StorageReadWrite),
    ("counts", Binding::StorageReadWrite),
];

/// The shader's kernels (their pipelines built once per device:
/// `gpu::kernel_cache`).
struct Kernels {
    cut_candidates: Kernel,
    destinations: Kernel,
}

impl Kernels {
    fn new(device: &wgpu::Device) -> Self {
        let module = ShaderSource::new("domain keys", wgsl());
        let k = |label, entry| Kernel::from_module(device, label, &module, entry, BINDINGS);
        Self {
            cut_candidates: k("domain keys cut candidates", "cut_candidates"),
            destinations: k("domain keys destinations", "destinations"),
        }
    }
}

/// Builds the kernels' pipelines ahead of a run's first redraw, whose
/// measured cost decides when the next one pays.
pub fn build_kernels(device: &wgpu::Device) {
    Kernels::new(device);
}

/// The kernels and buffers of one redraw of one rank's particles.
pub struct DomainKeys {
    kernels: Kernels,
    bind: wgpu::BindGroup,
    pub params: wgpu::Buffer,
    cuts: wgpu::Buffer,
    /// After `local_counts`, the radix sort's keys: each particle's
    /// destination rank counted on from this rank (its own first).
    pub sort_keys: wgpu::Buffer,
    /// After `local_counts`, the sort's values: each particle's index.
    pub order: wgpu::Buffer,
    candidates: wgpu::Buffer,
    counts: wgpu::Buffer,
    n: u32,
    ranks: usize,
    rank: usize,
    /// Particles per candidate (`decomposition::candidate_stride`).
    pub stride: usize,
}

impl DomainKeys {
    /// For the particles of `tree` (whose last walk counted their
    /// interactions) on `rank` of `ranks` ranks.
    pub fn new(device: &wgpu::Device, tree: &TreeSolver, (rank, ranks): (usize, usize)) -> Self {
        let (state, interactions) = (&tree.buffers.state, &tree.buffers.interactions);
        let kernels = Kernels::new(device);
        let n = state.n;
        // No binding may be empty: every array holds at least one record.
        let storage = |label, bytes: u64| empty_storage_buffer(device, label, bytes.max(16));
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("domain keys params"),
            size: std::mem::size_of::<RedrawParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // Room for the cuts between ranks or a probe's keys (`capped`).
        let most_cuts = (ranks - 1).max(super::decomposition::PROBE_KEYS) as u64;
        let cuts = storage("domain cuts", 8 * most_cuts);
        let sort_keys = storage("domain sort keys", 8 * n as u64);
        let order = storage("domain order", 4 * n as u64);
        let stride = super::decomposition::candidate_stride(n as usize, ranks);
        let candidates = storage(
            "domain cut candidates",
            (n as usize).div_ceil(stride) as u64 * std::mem::size_of::<CutCandidate>() as u64,
        );
        let counts = storage("domain counts", 4 * (most_cuts + 1));
        let bind = kernels.cut_candidates.bind(
            device,
            &[
                &params,
                &state.pos_mass,
                interactions,
                &cuts,
                &sort_keys,
                &order,
                &candidates,
                &counts,
            ],
        );
        Self {
            kernels,
            bind,
            params,
            cuts,
            sort_keys,
            order,
            candidates,
            counts,
            n,
            ranks,
            rank,
            stride,
        }
    }

    fn write_params(&self, ctx: &GpuContext, frame: CurveFrame) {
        let params = RedrawParams {
            lo: [frame.lo[0], frame.lo[1], frame.lo[2], 0.0],
            scale: frame.scale,
            n: self.n,
            stride: self.stride as u32,
            cuts: self.ranks as u32 - 1,
            rank: self.rank as u32,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        ctx.queue
            .write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
    }

    /// The candidate cuts of this rank's particles, one per `stride`, with
    /// their keys in `frame`.
    pub async fn candidates(
        &self,
        ctx: &GpuContext,
        frame: CurveFrame,
    ) -> Result<Vec<CutCandidate>> {
        self.write_params(ctx, frame);
        let count = (self.n as usize).div_ceil(self.stride) as u32;
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            self.kernels.cut_candidates.dispatch(
                &mut pass,
                &self.bind,
                dispatch_size(&ctx.device, count, WORKGROUP_SIZE),
            );
        }
        ctx.queue.submit(Some(encoder.finish()));
        if count == 0 {
            return Ok(Vec::new());
        }
        let size = std::mem::size_of::<CutCandidate>() as u64;
        let bytes = read_buffer_ranges(
            &ctx.device,
            &ctx.queue,
            &[(&self.candidates, 0, count as u64 * size)],
        )
        .await?;
        Ok(records::<CutCandidate>(&bytes[0]).into_owned())
    }

    /// How many of this rank's particles go to each rank under `cuts`
    /// (ascending; or to each bin between a probe's keys: at most
    /// `PROBE_KEYS` of them), after `candidates`, whose frame it keys in:
    /// leaves each particle's destination in `sort_keys` and its index in
    /// `order`.
    pub async fn local_counts(&self, ctx: &GpuContext, cuts: Vec<u64>) -> Result<Vec<u64>> {
        let bins = cuts.len() as u64 + 1;
        assert!(
            4 * bins <= self.counts.size(),
            "{} cuts: more than a probe's",
            cuts.len()
        );
        let words: Vec<[u32; 2]> = cuts.iter().map(|&c| [(c >> 32) as u32, c as u32]).collect();
        if !words.is_empty() {
            ctx.queue
                .write_buffer(&self.cuts, 0, bytemuck::cast_slice(&words));
        }
        let at = std::mem::offset_of!(RedrawParams, cuts) as u64;
        ctx.queue
            .write_buffer(&self.params, at, bytemuck::bytes_of(&(cuts.len() as u32)));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.clear_buffer(&self.counts, 0, None);
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            let groups = dispatch_size(&ctx.device, self.n, WORKGROUP_SIZE);
            self.kernels
                .destinations
                .dispatch(&mut pass, &self.bind, groups);
        }
        ctx.queue.submit(Some(encoder.finish()));
        let bytes =
            read_buffer_ranges(&ctx.device, &ctx.queue, &[(&self.counts, 0, 4 * bins)]).await?;
        Ok(records::<u32>(&bytes[0])
            .iter()
            .map(|&c| c as u64)
            .collect())
    }
}

/// The box of this rank's particles, by the tree's kernel.
pub async fn local_box(ctx: &GpuContext, tree: &TreeSolver) -> Result<Box3> {
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    tree.encode_bounds(&mut encoder);
    ctx.queue.submit(Some(encoder.finish()));
    let own = (
        &tree.buffers.bounds,
        std::mem::offset_of!(TreeBounds, own) as u64,
        std::mem::size_of::<Bounds>() as u64,
    );
    let bytes = read_buffer_ranges(&ctx.device, &ctx.queue, &[own]).await?;
    let b = records::<Bounds>(&bytes[0])[0];
    Ok(([b.lo[0], b.lo[1], b.lo[2]], [b.hi[0], b.hi[1], b.hi[2]]))
}
