//! The summary of this rank's domain (drives `shaders/summary.wgsl`):
//! DOMAIN_BOXES boxes of runs of its walk groups with their loosest
//! tolerances, which the other ranks cut their local essential trees
//! against.

use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::tree::layout::{counter_word_consts, DomainSummary};
use crate::tree::TreeBuffers;

const SUMMARY_WGSL: &str = include_str!("../../shaders/summary.wgsl");

/// Boxes a domain shows the others. Each cell a tree sends must pass the
/// MAC against every box, so finer boxes send fewer cells; 64 runs of
/// groups cost the cut 64 distance tests per cell it visits.
pub const DOMAIN_BOXES: u32 = 64;

pub fn wgsl() -> String {
    let mut consts = counter_word_consts().to_vec();
    consts.push(("DOMAIN_BOXES", DOMAIN_BOXES));
    crate::tree::compose_with(&consts, SUMMARY_WGSL)
}

/// The binding contract of `shaders/summary.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("counter_words", Binding::StorageRead),
    ("group_boxes", Binding::StorageRead),
    ("summary", Binding::StorageReadWrite),
];

pub struct DomainSummaries {
    kernel: Kernel,
    bind: wgpu::BindGroup,
    /// The DOMAIN_BOXES `DomainSummary` records the kernel writes.
    pub summary: wgpu::Buffer,
}

impl DomainSummaries {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let kernel = Kernel::new(device, "domain summary", &wgsl(), "summarize", BINDINGS);
        let summary = crate::gpu::buffers::empty_storage_buffer(
            device,
            "domain summary",
            DOMAIN_BOXES as u64 * std::mem::size_of::<DomainSummary>() as u64,
        );
        let bind = kernel.bind(device, &[&b.counters, &b.group_boxes, &summary]);
        Self {
            kernel,
            bind,
            summary,
        }
    }

    /// Records the summary of the groups the last build or refit formed.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("domain summary"),
            timestamp_writes: None,
        });
        self.kernel
            .dispatch(&mut pass, &self.bind, (DOMAIN_BOXES, 1));
    }
}
