//! Direct summation of gravity on the GPU (drives `shaders/direct.wgsl`) and
//! its CPU f64 reference (`reference`); the Sapporo-style Hermite side:
//! double-single helpers (`ds`), the j-particle store and predictor
//! (`predict`), the Hermite force kernels (`hermite_force`), neighbour
//! lists (`neighbours`), the block-step Hermite integrators (`hermite`) and
//! the GRAPE-6 C API (`g6`, native only).

pub mod ds;
pub mod hermite;
pub mod hermite_force;
pub mod neighbours;
pub mod predict;
pub mod reference;

use crate::gpu::buffers::uniform_buffer;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel};
use crate::gpu::layout::DirectParams;
use crate::gpu::shader::compose;
use crate::gpu::timing::PhaseTimer;
use crate::sim::particles::GpuParticles;

/// Sources per workgroup tile, and threads (sinks) per workgroup.
pub const TILE: u32 = 256;

const DIRECT_WGSL: &str = include_str!("../../shaders/direct.wgsl");

/// The composed WGSL of the direct kernel.
pub fn wgsl() -> String {
    compose(&[("TILE", TILE)], DIRECT_WGSL)
}

/// The blocked f32 direct-summation kernel bound to one particle state.
pub struct DirectSolver {
    kernel: Kernel,
    params: wgpu::Buffer,
    bind: wgpu::BindGroup,
    n: u32,
}

impl DirectSolver {
    pub fn new(device: &wgpu::Device, state: &GpuParticles, eps: f32) -> Self {
        let kernel = Kernel::new(
            device,
            "direct forces",
            &wgsl(),
            "forces",
            &[
                Binding::Uniform,
                Binding::StorageRead,
                Binding::StorageReadWrite,
            ],
        );
        let params = uniform_buffer(
            device,
            "direct params",
            &DirectParams {
                n: state.n,
                eps2: eps * eps,
                ..Default::default()
            },
        );
        let bind = kernel.bind(device, &[&params, &state.pos_mass, &state.acc_pot]);
        Self {
            kernel,
            params,
            bind,
            n: state.n,
        }
    }

    /// Changes the softening of later evaluations.
    pub fn set_eps(&self, queue: &wgpu::Queue, eps: f32) {
        let p = DirectParams {
            n: self.n,
            eps2: eps * eps,
            ..Default::default()
        };
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&p));
    }

    /// Records acceleration and potential of every particle into `acc_pot`.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("direct forces"),
            timestamp_writes: timer.and_then(|t| t.writes("forces")),
        });
        self.kernel
            .dispatch(&mut pass, &self.bind, dispatch_size(device, self.n, TILE));
    }

    /// Pairwise interactions per evaluation (N^2, the self pair included as
    /// the kernel computes it).
    pub fn interactions(&self) -> f64 {
        (self.n as f64) * (self.n as f64)
    }
}
