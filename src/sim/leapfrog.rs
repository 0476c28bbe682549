//! Kick-drift-kick leapfrog with a global time step (drives
//! `shaders/leapfrog.wgsl`). It knows nothing of the gravity solver: the
//! simulation records `kick_drift`, then the solver, then `kick`.

use super::particles::GpuParticles;
use crate::gpu::buffers::uniform_buffer;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel};
use crate::gpu::layout::{LeapfrogParams, WORKGROUP_SIZE};
use crate::gpu::shader::compose;
use crate::gpu::timing::{timed_pass, PhaseTimer};

const LEAPFROG_WGSL: &str = include_str!("../../shaders/leapfrog.wgsl");

/// The composed WGSL of the leapfrog kernels.
pub fn wgsl() -> String {
    compose(&[], LEAPFROG_WGSL)
}

pub struct Leapfrog {
    kick_drift: Kernel,
    kick: Kernel,
    params: wgpu::Buffer,
    bind: wgpu::BindGroup,
    n: u32,
}

impl Leapfrog {
    pub fn new(device: &wgpu::Device, state: &GpuParticles, dt: f32) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("leapfrog"),
            source: wgpu::ShaderSource::Wgsl(wgsl().into()),
        });
        let bindings = [
            Binding::Uniform,
            Binding::StorageReadWrite,
            Binding::StorageReadWrite,
            Binding::StorageRead,
        ];
        let kick_drift = Kernel::from_module(
            device,
            "leapfrog kick_drift",
            &module,
            "kick_drift",
            &bindings,
        );
        let kick = Kernel::from_module(device, "leapfrog kick", &module, "kick", &bindings);
        let params = uniform_buffer(device, "leapfrog params", &Self::params_for(state.n, dt));
        let bind = kick.bind(
            device,
            &[&params, &state.pos_mass, &state.vel, &state.acc_pot],
        );
        Self {
            kick_drift,
            kick,
            params,
            bind,
            n: state.n,
        }
    }

    fn params_for(n: u32, dt: f32) -> LeapfrogParams {
        LeapfrogParams {
            n,
            half_dt: 0.5 * dt,
            dt,
            ..Default::default()
        }
    }

    pub fn set_dt(&self, queue: &wgpu::Queue, dt: f32) {
        queue.write_buffer(
            &self.params,
            0,
            bytemuck::bytes_of(&Self::params_for(self.n, dt)),
        );
    }

    /// v += a dt/2, then x += v dt.
    pub fn encode_kick_drift(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        self.encode(&self.kick_drift, device, encoder, timer);
    }

    /// v += a dt/2.
    pub fn encode_kick(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        self.encode(&self.kick, device, encoder, timer);
    }

    fn encode(
        &self,
        kernel: &Kernel,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "integrate", timer);
        kernel.dispatch(
            &mut pass,
            &self.bind,
            dispatch_size(device, self.n, WORKGROUP_SIZE),
        );
    }
}
