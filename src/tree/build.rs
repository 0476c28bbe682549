//! Level-by-level sparse octree build (drives `shaders/build.wgsl`).
//!
//! N_leaf = 16 as in the paper: with a quadrupole MAC, leaves of ~16
//! particles balance the direct particle-particle work of opened leaves
//! against the number of cells (Bonsai's measured optimum). The depth is at
//! most MAX_DEPTH = 21, the resolution of the 63-bit keys; a cell there with
//! more than N_leaf particles (coincident particles) stays a leaf. Every
//! level is one indirect dispatch sized on the GPU by the previous level, so
//! the build is queued without any read-back.

use super::layout::{LevelParams, MAX_DEPTH};
use super::TreeBuffers;
use crate::gpu::kernel::{Binding, Kernel};
use crate::gpu::timing::PhaseTimer;

const BUILD_WGSL: &str = include_str!("../../shaders/build.wgsl");

pub fn wgsl() -> String {
    super::compose(BUILD_WGSL)
}

pub struct TreeBuild {
    init: Kernel,
    split: Kernel,
    finish_level: Kernel,
    finish_groups: Kernel,
    split_bind: wgpu::BindGroup,
    bookkeeping_bind: wgpu::BindGroup,
    dispatch: wgpu::Buffer,
}

impl TreeBuild {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = super::module(device, "build", &wgsl());
        // split_cells is dispatched from `dispatch`, so it must not bind it:
        // its layout stops before binding 6.
        let split_bindings = [
            Binding::UniformDynamic,
            Binding::Uniform,
            Binding::StorageRead,
            Binding::StorageReadWrite,
            Binding::StorageReadWrite,
            Binding::StorageReadWrite,
        ];
        let mut bookkeeping_bindings = split_bindings.to_vec();
        bookkeeping_bindings.push(Binding::StorageReadWrite);
        let k = |label, entry| {
            Kernel::from_module(device, label, &module, entry, &bookkeeping_bindings)
        };
        let init = k("build init", "init_tree");
        let finish_level = k("build finish level", "finish_level");
        let finish_groups = k("build finish groups", "finish_groups");
        let split = Kernel::from_module(
            device,
            "build split",
            &module,
            "split_cells",
            &split_bindings,
        );
        let split_bind = split.bind(
            device,
            &[
                &b.levels,
                &b.params,
                &b.keys,
                &b.cells,
                &b.counters,
                &b.groups,
            ],
        );
        let bookkeeping_bind = init.bind(
            device,
            &[
                &b.levels,
                &b.params,
                &b.keys,
                &b.cells,
                &b.counters,
                &b.groups,
                &b.dispatch,
            ],
        );
        Self {
            init,
            split,
            finish_level,
            finish_groups,
            split_bind,
            bookkeeping_bind,
            dispatch: b.dispatch.clone(),
        }
    }

    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("build"),
            timestamp_writes: timer.and_then(|t| t.writes("build")),
        });
        let one = |pass: &mut wgpu::ComputePass<'_>, kernel: &Kernel, level: u32| {
            pass.set_pipeline(&kernel.pipeline);
            pass.set_bind_group(0, &self.bookkeeping_bind, &[level_offset(level)]);
            pass.dispatch_workgroups(1, 1, 1);
        };
        one(&mut pass, &self.init, 0);
        for level in 0..=MAX_DEPTH {
            self.split.dispatch_indirect(
                &mut pass,
                &self.split_bind,
                Some(level),
                &self.dispatch,
                super::level_args_offset(level),
            );
            if level < MAX_DEPTH {
                one(&mut pass, &self.finish_level, level);
            }
        }
        one(&mut pass, &self.finish_groups, 0);
    }
}

fn level_offset(level: u32) -> u32 {
    level * crate::gpu::kernel::DYNAMIC_SLOT as u32
}

/// The contents of the per-level uniform buffer: slot `l` holds level `l`.
pub fn level_slots() -> Vec<u8> {
    let slot = crate::gpu::kernel::DYNAMIC_SLOT as usize;
    let mut bytes = vec![0u8; slot * (MAX_DEPTH as usize + 1)];
    for level in 0..=MAX_DEPTH {
        let p = LevelParams {
            level,
            ..Default::default()
        };
        bytes[level as usize * slot..][..16].copy_from_slice(bytemuck::bytes_of(&p));
    }
    bytes
}
