//! The group-based tree walk (drives `shaders/walk.wgsl`): persistent
//! workgroups of NCRIT invocations, each taking groups from a counter;
//! breadth-first traversal with the frontier and the cell and particle
//! interaction lists in workgroup memory (evaluated as they fill), and a
//! per-workgroup stack of set-aside subtrees in global memory.

use super::TreeBuffers;
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::timing::{timed_pass, PhaseTimer};

const WALK_WGSL: &str = include_str!("../../shaders/walk.wgsl");

pub fn wgsl() -> String {
    super::compose(WALK_WGSL)
}

pub struct TreeWalk {
    kernel: Kernel,
    bind: wgpu::BindGroup,
    dispatch: wgpu::Buffer,
}

/// The binding contract of `shaders/walk.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("cells", Binding::StorageRead),
    ("props", Binding::StorageRead),
    ("group_boxes", Binding::StorageRead),
    ("counters", Binding::StorageReadWrite),
    ("acc_pot", Binding::StorageReadWrite),
    ("interactions", Binding::StorageReadWrite),
    ("deferred", Binding::StorageReadWrite),
];

impl TreeWalk {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let kernel = Kernel::new(device, "tree walk", &wgsl(), "walk", BINDINGS);
        let bind = kernel.bind(
            device,
            &[
                &b.params,
                &b.state.pos_mass,
                &b.cells,
                &b.props,
                &b.group_boxes,
                &b.counters,
                &b.state.acc_pot,
                &b.interactions,
                &b.walk_stack,
            ],
        );
        Self {
            kernel,
            bind,
            dispatch: b.dispatch[0].clone(),
        }
    }

    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = timed_pass(encoder, "walk", timer);
        self.kernel.dispatch_indirect(
            &mut pass,
            &self.bind,
            None,
            &self.dispatch,
            super::walk_args_offset(),
        );
    }
}
