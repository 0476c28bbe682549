//! Walk groups that span another domain in a parallel run (drives
//! `shaders/spanning.wgsl`): a group whose box holds many of the other
//! domains' particles, by their summaries of the last evaluation, is split
//! into one-particle groups. An outer domain's sparse group across a
//! galaxy's centre, which another rank holds, otherwise opens every
//! particle there one by one: on two H200s at 6.7·10^7 particles a rank,
//! one group made 6.5 million interactions a particle, and the imported
//! walk took 650 ms where it takes 80 (BENCHMARKS.md, "Summaries that see
//! the other domains").

use super::summary::{DomainSummaries, COARSE_BOXES, DOMAIN_BOXES, DOMAIN_BOXES_WGSL, FINE_BOXES};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::tree::groups::POINT_GROUPS_WGSL;
use crate::tree::TreeBuffers;

const SPANNING_WGSL: &str = include_str!("../../shaders/spanning.wgsl");

/// Groups narrower than 1/SPAN_SIDE_DIVISOR of the system's cube are not
/// looked at: only a wide group can span much, and a look costs a pass over
/// the other domains' coarse boxes.
pub const SPAN_SIDE_DIVISOR: u32 = 256;
/// A group is split when its box holds more than this many of the other
/// domains' particles for each of its own: far more than a group at a
/// domain's edge shares with the boxes across it (a fine box holds about
/// 64 groups' worth, and meets a group's box by a corner).
pub const SPANNED_PER_PARTICLE: u32 = 16;

pub fn wgsl() -> String {
    crate::tree::compose_with(
        &[
            ("SPAN_SIDE_DIVISOR", SPAN_SIDE_DIVISOR),
            ("SPANNED_PER_PARTICLE", SPANNED_PER_PARTICLE),
            ("COARSE_BOXES", COARSE_BOXES),
            ("FINE_BOXES", FINE_BOXES),
            ("DOMAIN_BOXES", DOMAIN_BOXES),
        ],
        &format!("{SPANNING_WGSL}\n{DOMAIN_BOXES_WGSL}\n{POINT_GROUPS_WGSL}"),
    )
}

/// The binding contract of `shaders/spanning.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("summary_params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("counters", Binding::StorageReadWrite),
    ("group_boxes", Binding::StorageReadWrite),
    ("bounds", Binding::StorageRead),
    ("others", Binding::StorageRead),
];

pub struct SpanningGroups {
    kernel: Kernel,
}

impl SpanningGroups {
    pub fn new(device: &wgpu::Device) -> Self {
        Self {
            kernel: Kernel::new(
                device,
                "split spanning groups",
                &wgsl(),
                "split_spanning",
                BINDINGS,
            ),
        }
    }

    /// Records the split of the groups of the last build or refit in `b`
    /// that span another domain, by the other domains' summaries that
    /// `summaries` holds (after this evaluation's summary: bound anew
    /// each time, as a redraw or more domains may have replaced those
    /// buffers).
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        b: &TreeBuffers,
        summaries: &DomainSummaries,
    ) {
        let (others, summary_params) = summaries.others();
        let bind = self.kernel.bind(
            device,
            &[
                &b.params,
                summary_params,
                &b.state.pos_mass,
                &b.state.vel,
                &b.counters,
                &b.group_boxes,
                &b.bounds,
                others,
            ],
        );
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("split spanning groups"),
            timestamp_writes: None,
        });
        self.kernel.dispatch(
            &mut pass,
            &bind,
            dispatch_size(device, b.group_capacity, WORKGROUP_SIZE),
        );
    }
}
