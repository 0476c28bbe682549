//! One particle's interaction list (drives `shaders/trace.wgsl`): the
//! cells its group took as multipoles and the leaves it summed directly
//! in the last walk, traced again on the same tree with the walk's MAC.
//! The page shows them over the picture (`tree::overlay`) with their
//! counts; `tree::cpu::interaction_list` is the twin the tests compare
//! with, and the counts equal the walk's own (`interactions`).

use super::layout::{counter_word_consts, Bounds, TraceParams, TraceResult, LEVEL_SLOTS};
use super::TreeSolver;
use crate::error::Result;
use crate::gpu::buffers::{read_buffers, uniform_buffer};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::GpuContext;

const TRACE_WGSL: &str = include_str!("../../shaders/trace.wgsl");

/// A list entry's kind (its bits from `TRACE_KIND_SHIFT` up): a cell
/// taken as a multipole, or a leaf whose particles were summed directly.
pub const TRACE_ACCEPTED: u32 = 1;
pub const TRACE_LEAF: u32 = 2;
pub const TRACE_KIND_SHIFT: u32 = 28;
pub const TRACE_CELL_MASK: u32 = (1 << TRACE_KIND_SHIFT) - 1;
/// The depth-first walk's stack: 7 siblings set aside per level of an
/// octree of MAX_DEPTH levels, and the root.
const TRACE_STACK: u32 = 7 * (LEVEL_SLOTS as u32) + 8;

/// The constants the trace and the overlay share.
pub(crate) fn trace_consts() -> Vec<(&'static str, u32)> {
    let mut c = vec![
        ("TRACE_ACCEPTED", TRACE_ACCEPTED),
        ("TRACE_LEAF", TRACE_LEAF),
        ("TRACE_KIND_SHIFT", TRACE_KIND_SHIFT),
        ("TRACE_CELL_MASK", TRACE_CELL_MASK),
        ("TRACE_STACK", TRACE_STACK),
    ];
    c.extend(counter_word_consts());
    c
}

pub fn wgsl() -> String {
    super::compose_with(&trace_consts(), TRACE_WGSL)
}

/// The binding contract of `shaders/trace.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("id", Binding::StorageRead),
    ("group_boxes", Binding::StorageRead),
    ("cells", Binding::StorageRead),
    ("props", Binding::StorageRead),
    ("counter_words", Binding::StorageRead),
    ("list", Binding::StorageReadWrite),
    ("result", Binding::StorageReadWrite),
];

/// A traced interaction list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traced {
    /// The particle's slot in the tree's (key) order, and its group.
    pub slot: u32,
    pub group: u32,
    /// The group's box and size.
    pub group_box: Bounds,
    pub group_count: u32,
    /// Cells taken as multipoles, in the trace's order.
    pub accepted: Vec<u32>,
    /// Leaves summed directly, and their particles.
    pub leaves: Vec<u32>,
    pub direct: u32,
}

/// The trace's kernels and buffers for one tree.
pub struct Trace {
    find_slot: Kernel,
    find_group: Kernel,
    walk_group: Kernel,
    /// One bind group per kernel (each has its own layout).
    binds: [wgpu::BindGroup; 3],
    params: wgpu::Buffer,
    /// The count, then the entries (what `overlay` draws).
    pub list: wgpu::Buffer,
    result: wgpu::Buffer,
    capacity: u32,
    n: u32,
    group_capacity: u32,
}

impl Trace {
    pub fn new(device: &wgpu::Device, tree: &TreeSolver) -> Self {
        let module = ShaderSource::new("trace", wgsl());
        let kernel = |entry: &str| Kernel::from_module(device, "trace", &module, entry, BINDINGS);
        let b = &tree.buffers;
        // Every cell at most once.
        let capacity = b.cell_capacity;
        let storage = |label: &str, bytes: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let list = storage("trace list", 4 * (capacity as u64 + 1));
        let result = storage("trace result", std::mem::size_of::<TraceResult>() as u64);
        let params = uniform_buffer(device, "trace params", &TraceParams::default());
        let (find_slot, find_group, walk_group) = (
            kernel("find_slot"),
            kernel("find_group"),
            kernel("walk_group"),
        );
        let buffers = [
            &params,
            &b.state.id,
            &b.group_boxes,
            &b.cells,
            &b.props,
            &b.counters,
            &list,
            &result,
        ];
        let binds = [&find_slot, &find_group, &walk_group].map(|k| k.bind(device, &buffers));
        Self {
            find_slot,
            find_group,
            walk_group,
            binds,
            params,
            list,
            result,
            capacity,
            n: b.state.n,
            group_capacity: b.group_capacity,
        }
    }

    /// Records the trace of the particle of upload index `particle` on
    /// the tree as the last walk left it, with the MAC tolerance `alpha`
    /// that walk used (0: the opening angle).
    pub fn encode(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        particle: u32,
        alpha: f32,
    ) {
        let p = TraceParams {
            particle,
            n: self.n,
            capacity: self.capacity,
            alpha,
        };
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&p));
        encoder.clear_buffer(&self.result, 0, None);
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("trace"),
            timestamp_writes: None,
        });
        let slots = dispatch_size(device, self.n, WORKGROUP_SIZE);
        self.find_slot.dispatch(&mut pass, &self.binds[0], slots);
        let groups = dispatch_size(device, self.group_capacity, WORKGROUP_SIZE);
        self.find_group.dispatch(&mut pass, &self.binds[1], groups);
        self.walk_group.dispatch(&mut pass, &self.binds[2], (1, 1));
    }

    /// Reads the traced list back; `None` where the particle was not
    /// found (an upload index past N) or the tree has no cells yet.
    pub async fn read(&self, ctx: &GpuContext) -> Result<Option<Traced>> {
        self.reader().read(ctx).await
    }

    /// What reads the list back, apart from the trace (for a read-back
    /// that must not hold the trace across an await).
    pub fn reader(&self) -> TraceReader {
        TraceReader {
            result: self.result.clone(),
            list: self.list.clone(),
        }
    }

    /// Entries the list holds at most (the overlay's instance count).
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
}

/// The buffers a trace's results are read from.
pub struct TraceReader {
    result: wgpu::Buffer,
    list: wgpu::Buffer,
}

impl TraceReader {
    pub async fn read(&self, ctx: &GpuContext) -> Result<Option<Traced>> {
        let bytes = read_buffers(&ctx.device, &ctx.queue, &[&self.result, &self.list]).await?;
        let r: TraceResult = bytemuck::pod_read_unaligned(&bytes[0]);
        if r.found != 2 {
            return Ok(None);
        }
        let words: &[u32] = bytemuck::cast_slice(&bytes[1]);
        let count = (words[0] as usize).min(words.len() - 1);
        let (mut accepted, mut leaves) = (Vec::new(), Vec::new());
        for &e in &words[1..=count] {
            match e >> TRACE_KIND_SHIFT {
                TRACE_ACCEPTED => accepted.push(e & TRACE_CELL_MASK),
                _ => leaves.push(e & TRACE_CELL_MASK),
            }
        }
        Ok(Some(Traced {
            slot: r.slot,
            group: r.group,
            group_box: Bounds {
                lo: r.group_lo,
                hi: r.group_hi,
            },
            group_count: r.group_count,
            accepted,
            leaves,
            direct: r.direct,
        }))
    }
}
