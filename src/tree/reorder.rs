//! Reorders the particle state into key order after the sort (drives
//! `shaders/reorder.wgsl`): a gather into scratch arrays, then copies back,
//! so every later phase and the integrator see one consistent order.

use super::TreeBuffers;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::timing::{timed_pass, PhaseTimer};

const REORDER_WGSL: &str = include_str!("../../shaders/reorder.wgsl");

pub fn wgsl() -> String {
    super::compose(REORDER_WGSL)
}

pub struct Reorder {
    kernel: Kernel,
    bind: wgpu::BindGroup,
    n: u32,
    copies: [(wgpu::Buffer, wgpu::Buffer); 3],
    acc_pot: wgpu::Buffer,
}

/// The binding contract of `shaders/reorder.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("order", Binding::StorageRead),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("id", Binding::StorageRead),
    ("pos_mass_out", Binding::StorageReadWrite),
    ("vel_out", Binding::StorageReadWrite),
    ("id_out", Binding::StorageReadWrite),
];

impl Reorder {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let kernel = Kernel::new(device, "reorder", &wgsl(), "gather", BINDINGS);
        let s = &b.state;
        let bind = kernel.bind(
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
            kernel,
            bind,
            n: s.n,
            acc_pot: s.acc_pot.clone(),
            copies: [
                (b.pos_mass_tmp.clone(), s.pos_mass.clone()),
                (s.acc_pot.clone(), s.vel.clone()),
                (b.id_tmp.clone(), s.id.clone()),
            ],
        }
    }

    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        {
            let mut pass = timed_pass(encoder, "reorder", timer);
            self.kernel.dispatch(
                &mut pass,
                &self.bind,
                dispatch_size(device, self.n, WORKGROUP_SIZE),
            );
        }
        for (from, to) in &self.copies {
            encoder.copy_buffer_to_buffer(from, 0, to, 0, to.size());
        }
        // acc_pot held the gathered velocities: zero it, so a particle the
        // walk ever missed would show no force rather than a velocity.
        encoder.clear_buffer(&self.acc_pot, 0, None);
    }
}
