//! The summary of this rank's domain (drives `shaders/summary.wgsl`): up
//! to DOMAIN_BOXES boxes of its walk groups, one per cell of the tree's
//! top, with their loosest tolerances, which the other ranks cut their
//! local essential trees against.

use crate::gpu::buffers::empty_storage_buffer;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{shader_module, Binding, Kernel, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::tree::layout::{counter_word_consts, DomainSummary};
use crate::tree::TreeBuffers;

const SUMMARY_WGSL: &str = include_str!("../../shaders/summary.wgsl");

/// Boxes a domain shows the others (one workgroup picks them: at most
/// WORKGROUP_SIZE). A cell another rank keeps as a multipole must pass the
/// MAC against every box, so finer boxes send fewer cells, at the cost of
/// as many distance tests per cell the cut visits.
pub const DOMAIN_BOXES: u32 = 256;

pub fn wgsl() -> String {
    let mut consts = counter_word_consts().to_vec();
    consts.push(("DOMAIN_BOXES", DOMAIN_BOXES));
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
    pick_frontier: Kernel,
    accumulate: Kernel,
    finish: Kernel,
    bind: wgpu::BindGroup,
    /// Groups the tree's arrays hold (the accumulation's invocations).
    group_capacity: u32,
    /// The DOMAIN_BOXES `DomainSummary` records the kernel writes.
    pub summary: wgpu::Buffer,
}

impl DomainSummaries {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = shader_module(device, "domain summary", &wgsl());
        let k = |label, entry| Kernel::from_module(device, label, &module, entry, BINDINGS);
        let pick_frontier = k("domain summary frontier", "pick_frontier");
        let accumulate = k("domain summary accumulate", "accumulate");
        let finish = k("domain summary finish", "finish");
        let storage = |label, bytes: u64| empty_storage_buffer(device, label, bytes);
        let boxes = DOMAIN_BOXES as u64;
        let frontier = storage("domain summary frontier", 4 * (1 + boxes));
        // Eight words a box (BoxAccum).
        let accum = storage("domain summary accumulators", 32 * boxes);
        let summary = storage(
            "domain summary",
            boxes * std::mem::size_of::<DomainSummary>() as u64,
        );
        let bind = pick_frontier.bind(
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
            pick_frontier,
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
        self.pick_frontier.dispatch(&mut pass, &self.bind, (1, 1));
        self.accumulate.dispatch(
            &mut pass,
            &self.bind,
            dispatch_size(device, self.group_capacity, WORKGROUP_SIZE),
        );
        self.finish.dispatch(&mut pass, &self.bind, (1, 1));
    }
}
