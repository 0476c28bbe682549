//! Particle groups for the walk (drives `shaders/groups.wgsl`). The build
//! forms the groups: the first cells on each path from the root with at most
//! NCRIT = 64 particles (Bonsai's group size), i.e. contiguous runs in key
//! order; this phase gives each its bounding box.

use super::TreeBuffers;
use crate::gpu::kernel::{Binding, Kernel};
use crate::gpu::timing::PhaseTimer;

const GROUPS_WGSL: &str = include_str!("../../shaders/groups.wgsl");

pub fn wgsl() -> String {
    super::compose(GROUPS_WGSL)
}

pub struct GroupBoxes {
    kernel: Kernel,
    bind: wgpu::BindGroup,
    dispatch: wgpu::Buffer,
}

impl GroupBoxes {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let kernel = Kernel::new(
            device,
            "group boxes",
            &wgsl(),
            "group_boxes_of",
            &[
                Binding::Uniform,
                Binding::StorageRead,
                Binding::StorageRead,
                Binding::StorageReadWrite,
                Binding::StorageReadWrite,
            ],
        );
        let bind = kernel.bind(
            device,
            &[
                &b.params,
                &b.state.pos_mass,
                &b.groups,
                &b.counters,
                &b.group_boxes,
            ],
        );
        Self {
            kernel,
            bind,
            dispatch: b.dispatch.clone(),
        }
    }

    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("groups"),
            timestamp_writes: timer.and_then(|t| t.writes("groups")),
        });
        self.kernel.dispatch_indirect(
            &mut pass,
            &self.bind,
            None,
            &self.dispatch,
            super::group_args_offset(),
        );
    }
}
