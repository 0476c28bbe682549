//! Reorders the particle state into key order after the sort (drives
//! `shaders/reorder.wgsl`): a gather into scratch arrays, then a copy back
//! (a second dispatch), so every later phase and the integrator see one
//! consistent order.

use super::TreeBuffers;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::timing::{timed_pass, PhaseTimer};

const REORDER_WGSL: &str = include_str!("../../shaders/reorder.wgsl");

pub fn wgsl() -> String {
    super::compose(REORDER_WGSL)
}

pub struct Reorder {
    gather: Kernel,
    settle: Kernel,
    bind: wgpu::BindGroup,
    n: u32,
}

/// The binding contract of `shaders/reorder.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("order", Binding::StorageRead),
    ("pos_mass", Binding::StorageReadWrite),
    ("vel", Binding::StorageReadWrite),
    ("id", Binding::StorageReadWrite),
    ("pos_mass_tmp", Binding::StorageReadWrite),
    ("vel_tmp", Binding::StorageReadWrite),
    ("id_tmp", Binding::StorageReadWrite),
];

impl Reorder {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = ShaderSource::new("reorder", wgsl());
        let gather = Kernel::from_module(device, "reorder gather", &module, "gather", BINDINGS);
        let settle = Kernel::from_module(device, "reorder settle", &module, "settle", BINDINGS);
        let s = &b.state;
        // One bind group serves both kernels: their layouts are identical.
        let bind = gather.bind(
            device,
            &[
                &b.params,
                &b.values,
                &s.pos_mass,
                &s.vel,
                &s.id,
                &b.pos_mass_tmp,
                // Velocities are gathered into acc_pot, which is free here:
                // the walk overwrites it after the reorder.
                &s.acc_pot,
                &b.id_tmp,
            ],
        );
        Self {
            gather,
            settle,
            bind,
            n: s.n,
        }
    }

    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "reorder", timer);
        let groups = dispatch_size(device, self.n, WORKGROUP_SIZE);
        self.gather.dispatch(&mut pass, &self.bind, groups);
        self.settle.dispatch(&mut pass, &self.bind, groups);
    }
}
