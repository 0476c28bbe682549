//! Cell properties bottom-up, one GPU-sized dispatch per level (drives
//! `shaders/properties.wgsl`): mass, centre of mass, second moments, tight
//! box and opening radius. Accuracy without f64 comes from local origins and
//! the parallel-axis theorem (see the shader header); tests/tree.rs checks
//! the moments against f64 sums.

use super::layout::MAX_DEPTH;
use super::TreeBuffers;
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::timing::{timed_pass, PhaseTimer};

const PROPERTIES_WGSL: &str = include_str!("../../shaders/properties.wgsl");

pub fn wgsl() -> String {
    super::compose(PROPERTIES_WGSL)
}

pub struct CellProperties {
    kernel: Kernel,
    bind: wgpu::BindGroup,
    dispatch: [wgpu::Buffer; 2],
    /// Workgroups of every level under `DispatchSizing::Strided`.
    strided: Option<u32>,
}

/// The binding contract of `shaders/properties.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("level_params", Binding::UniformDynamic),
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("cells", Binding::StorageRead),
    ("counters", Binding::StorageReadWrite),
    ("props", Binding::StorageReadWrite),
    ("cell_boxes", Binding::StorageReadWrite),
];

impl CellProperties {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let kernel = Kernel::new(
            device,
            "cell properties",
            &wgsl(),
            "cell_properties",
            BINDINGS,
        );
        let bind = kernel.bind(
            device,
            &[
                &b.levels,
                &b.params,
                &b.state.pos_mass,
                &b.cells,
                &b.counters,
                &b.props,
                &b.cell_boxes,
            ],
        );
        Self {
            kernel,
            bind,
            dispatch: b.dispatch.clone(),
            strided: b.strided.map(|s| s.cells),
        }
    }

    /// Records the properties of levels `deepest` up to the root (the
    /// deepest level the tree's build recorded).
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        deepest: u32,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "properties", timer);
        for level in (0..=deepest.min(MAX_DEPTH)).rev() {
            self.kernel.dispatch_gpu_sized(
                &mut pass,
                &self.bind,
                Some(level),
                (
                    &self.dispatch[(level % 2) as usize],
                    super::level_args_offset(level),
                ),
                self.strided,
            );
        }
    }
}
