//! Bounding box of all particles by a two-dispatch parallel reduction
//! (drives `shaders/bbox.wgsl`).

use super::{TreeBuffers, BBOX_GROUPS, BBOX_PARTICLES_PER_GROUP};
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::timing::{timed_pass, PhaseTimer};

const BBOX_WGSL: &str = include_str!("../../shaders/bbox.wgsl");

pub fn wgsl() -> String {
    super::compose(BBOX_WGSL)
}

/// Workgroups of the first reduction for `n` particles (`bbox_groups()` in
/// the shader): at least BBOX_PARTICLES_PER_GROUP each, at most BBOX_GROUPS.
pub fn groups_for(n: u32) -> u32 {
    n.div_ceil(BBOX_PARTICLES_PER_GROUP).clamp(1, BBOX_GROUPS)
}

pub struct BoundingBox {
    groups: u32,
    partial: Kernel,
    last: Kernel,
    bind: wgpu::BindGroup,
}

/// The binding contract of `shaders/bbox.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("partial", Binding::StorageReadWrite),
    ("bounds", Binding::StorageReadWrite),
    ("system_cube", Binding::Uniform),
];

impl BoundingBox {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = ShaderSource::new("bbox", wgsl());
        let partial =
            Kernel::from_module(device, "bbox partial", &module, "partial_bounds", BINDINGS);
        let last = Kernel::from_module(device, "bbox final", &module, "final_bounds", BINDINGS);
        let bind = partial.bind(
            device,
            &[
                &b.params,
                &b.state.pos_mass,
                &b.bbox_partial,
                &b.bounds,
                &b.system_cube,
            ],
        );
        Self {
            groups: groups_for(b.state.n),
            partial,
            last,
            bind,
        }
    }

    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = timed_pass(encoder, "box", timer);
        self.partial
            .dispatch(&mut pass, &self.bind, (self.groups, 1));
        self.last.dispatch(&mut pass, &self.bind, (1, 1));
    }
}
