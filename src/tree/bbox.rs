//! Bounding box of all particles by a two-dispatch parallel reduction
//! (drives `shaders/bbox.wgsl`).

use super::{TreeBuffers, BBOX_GROUPS};
use crate::gpu::kernel::{Binding, Kernel};
use crate::gpu::timing::{timed_pass, PhaseTimer};

const BBOX_WGSL: &str = include_str!("../../shaders/bbox.wgsl");

pub fn wgsl() -> String {
    super::compose(BBOX_WGSL)
}

pub struct BoundingBox {
    partial: Kernel,
    last: Kernel,
    bind: wgpu::BindGroup,
}

impl BoundingBox {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = super::module(device, "bbox", &wgsl());
        let bindings = [
            Binding::Uniform,
            Binding::StorageRead,
            Binding::StorageReadWrite,
            Binding::StorageReadWrite,
        ];
        let partial =
            Kernel::from_module(device, "bbox partial", &module, "partial_bounds", &bindings);
        let last = Kernel::from_module(device, "bbox final", &module, "final_bounds", &bindings);
        let bind = partial.bind(
            device,
            &[&b.params, &b.state.pos_mass, &b.bbox_partial, &b.bounds],
        );
        Self {
            partial,
            last,
            bind,
        }
    }

    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = timed_pass(encoder, "box", timer);
        self.partial
            .dispatch(&mut pass, &self.bind, (BBOX_GROUPS, 1));
        self.last.dispatch(&mut pass, &self.bind, (1, 1));
    }
}
