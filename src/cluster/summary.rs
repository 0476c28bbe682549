//! The summary of this rank's domain (drives `shaders/summary.wgsl`):
//! boxes of its walk groups in two levels, with their loosest tolerances,
//! which the other ranks cut their local essential trees against.
//!
//! Known weakness: a box is the union of its cell's groups, and the cells
//! are opened by particle count, so a sparse cell whose particles lie on
//! either side of a hole that another domain fills (an outer domain around
//! a galaxy's centre) can stay one box across the hole; the other domain
//! then sends all it holds there (BENCHMARKS.md, "Redraws that keep the
//! solver's arrays": about twice the imports for the first steps after a
//! decomposition at 2^27 on two ranks).

use crate::gpu::buffers::empty_storage_buffer;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{shader_module, Binding, Kernel, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::tree::layout::{counter_word_consts, DomainSummary};
use crate::tree::TreeBuffers;

const SUMMARY_WGSL: &str = include_str!("../../shaders/summary.wgsl");

/// Coarse boxes a domain shows the others (one workgroup picks them: at
/// most WORKGROUP_SIZE).
pub const COARSE_BOXES: u32 = 256;
/// Fine boxes within each coarse one. A cell another rank keeps as a
/// multipole must pass the MAC against every box, so finer boxes send
/// fewer cells: 256 boxes in all sent half the particles of 2^20 on each of
/// two H200s, because a box of 4,096 particles reaches far into the other
/// domain wherever a domain's edge runs across it.
pub const FINE_BOXES: u32 = 64;
/// Records of one domain's summary: the coarse boxes, then the fine boxes
/// of each in turn.
pub const DOMAIN_BOXES: u32 = COARSE_BOXES * (1 + FINE_BOXES);

pub fn wgsl() -> String {
    let mut consts = counter_word_consts().to_vec();
    consts.extend([
        ("COARSE_BOXES", COARSE_BOXES),
        ("FINE_BOXES", FINE_BOXES),
        ("FINE_TOTAL", COARSE_BOXES * FINE_BOXES),
    ]);
    crate::tree::compose_with(&consts, SUMMARY_WGSL)
}

/// The binding contract of `shaders/summary.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("counter_words", Binding::StorageRead),
    ("cells", Binding::StorageRead),
    ("group_boxes", Binding::StorageRead),
    ("frontier", Binding::StorageReadWrite),
    ("accum", Binding::StorageReadWrite),
    ("summary", Binding::StorageReadWrite),
];

pub struct DomainSummaries {
    pick_coarse: Kernel,
    pick_fine: Kernel,
    accumulate: Kernel,
    finish: Kernel,
    bind: wgpu::BindGroup,
    /// Groups the tree's arrays hold (the accumulation's invocations).
    group_capacity: u32,
    /// The DOMAIN_BOXES `DomainSummary` records the kernels write.
    pub summary: wgpu::Buffer,
}

impl DomainSummaries {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = shader_module(device, "domain summary", &wgsl());
        let k = |label, entry| Kernel::from_module(device, label, &module, entry, BINDINGS);
        let pick_coarse = k("domain summary coarse boxes", "pick_coarse");
        let pick_fine = k("domain summary fine boxes", "pick_fine");
        let accumulate = k("domain summary accumulate", "accumulate");
        let finish = k("domain summary finish", "finish");
        let storage = |label, bytes: u64| empty_storage_buffer(device, label, bytes);
        let (coarse, fine) = (COARSE_BOXES as u64, (COARSE_BOXES * FINE_BOXES) as u64);
        // SummaryFrontier: a count, three words per coarse box, one per fine.
        let frontier = storage("domain summary frontier", 4 * (1 + 3 * coarse + fine));
        // Eight words a fine box (BoxAccum).
        let accum = storage("domain summary accumulators", 32 * fine);
        let summary = storage(
            "domain summary",
            DOMAIN_BOXES as u64 * std::mem::size_of::<DomainSummary>() as u64,
        );
        let bind = pick_coarse.bind(
            device,
            &[
                &b.counters,
                &b.cells,
                &b.group_boxes,
                &frontier,
                &accum,
                &summary,
            ],
        );
        Self {
            pick_coarse,
            pick_fine,
            accumulate,
            finish,
            bind,
            group_capacity: b.group_capacity,
            summary,
        }
    }

    /// Records the summary of the groups the last build or refit formed.
    pub fn encode(&self, device: &wgpu::Device, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("domain summary"),
            timestamp_writes: None,
        });
        self.pick_coarse.dispatch(&mut pass, &self.bind, (1, 1));
        self.pick_fine
            .dispatch(&mut pass, &self.bind, (COARSE_BOXES, 1));
        self.accumulate.dispatch(
            &mut pass,
            &self.bind,
            dispatch_size(device, self.group_capacity, WORKGROUP_SIZE),
        );
        self.finish
            .dispatch(&mut pass, &self.bind, (COARSE_BOXES, 1));
    }
}
