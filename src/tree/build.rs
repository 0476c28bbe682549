//! Level-by-level sparse octree build (drives `shaders/build.wgsl`).
//!
//! N_leaf = 16 as in the paper: with a quadrupole MAC, leaves of ~16
//! particles balance the direct particle-particle work of opened leaves
//! against the number of cells (Bonsai's measured optimum). The depth is at
//! most MAX_DEPTH = 21, the resolution of the 63-bit keys; a cell there with
//! more than N_leaf particles (coincident particles) stays a leaf. Every
//! level is one dispatch whose work the previous level sized on the GPU (a
//! fixed number of workgroups striding over the level, or an indirect
//! dispatch: `DispatchSizing`), so the build is queued without any
//! read-back.

use super::layout::{LevelParams, MAX_DEPTH};
use super::TreeBuffers;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::timing::{timed_pass, PhaseTimer};

const BUILD_WGSL: &str = include_str!("../../shaders/build.wgsl");

pub fn wgsl() -> String {
    super::compose(BUILD_WGSL)
}

pub struct TreeBuild {
    init: Kernel,
    reset_level_args: Kernel,
    split: Kernel,
    finish_groups: Kernel,
    /// `writing[p]` binds dispatch buffer `p` as the next level's.
    writing: [wgpu::BindGroup; 2],
    dispatch: [wgpu::Buffer; 2],
    /// Workgroups of every level's split under `DispatchSizing::Strided`.
    strided: Option<u32>,
}

/// The binding contract of `shaders/build.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("level_params", Binding::UniformDynamic),
    ("params", Binding::Uniform),
    ("keys", Binding::StorageRead),
    ("cells", Binding::StorageReadWrite),
    ("counters", Binding::StorageReadWrite),
    ("groups", Binding::StorageReadWrite),
    ("next_dispatch", Binding::StorageReadWrite),
];

impl TreeBuild {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = ShaderSource::new("build", wgsl());
        let k = |label, entry| Kernel::from_module(device, label, &module, entry, BINDINGS);
        let init = k("build init", "init_tree");
        let reset_level_args = k("build reset level sizes", "reset_level_args");
        let split = k("build split", "split_cells");
        let finish_groups = k("build finish groups", "finish_groups");
        let writing = [0, 1].map(|p| {
            split.bind(
                device,
                &[
                    &b.levels,
                    &b.params,
                    &b.keys,
                    &b.cells,
                    &b.counters,
                    &b.groups,
                    &b.dispatch[p],
                ],
            )
        });
        Self {
            init,
            reset_level_args,
            split,
            finish_groups,
            writing,
            dispatch: b.dispatch.clone(),
            strided: b.strided.map(|s| s.cells),
        }
    }

    /// Records the build of levels 0..=`deepest` (the slots of the level
    /// buffer must say the same `deepest`: `level_slots`).
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        deepest: u32,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "build", timer);
        let one = |pass: &mut wgpu::ComputePass<'_>, kernel: &Kernel, bind: &wgpu::BindGroup| {
            pass.set_pipeline(&kernel.pipeline);
            pass.set_bind_group(0, bind, &[0]);
            pass.dispatch_workgroups(1, 1, 1);
        };
        // Fresh dispatch sizes in both buffers (kernels, not buffer copies:
        // no switch between copy and compute work).
        one(&mut pass, &self.init, &self.writing[0]);
        one(&mut pass, &self.reset_level_args, &self.writing[1]);
        for level in 0..=deepest.min(MAX_DEPTH) {
            // Level l is dispatched from buffer l % 2 and sizes level l + 1
            // in the other buffer.
            let from = (level % 2) as usize;
            self.split.dispatch_gpu_sized(
                &mut pass,
                &self.writing[1 - from],
                Some(level),
                (&self.dispatch[from], super::level_args_offset(level)),
                self.strided,
            );
        }
        // Group and walk sizes live in buffer 0.
        one(&mut pass, &self.finish_groups, &self.writing[0]);
    }
}

/// The contents of the per-level uniform buffer: slot `l` holds level `l`,
/// the deepest level recorded and the device's workgroups per dimension.
pub fn level_slots(deepest: u32, max_workgroups: u32) -> Vec<u8> {
    let slot = crate::gpu::kernel::DYNAMIC_SLOT as usize;
    let mut bytes = vec![0u8; slot * (MAX_DEPTH as usize + 1)];
    for level in 0..=MAX_DEPTH {
        let p = LevelParams {
            level,
            deepest,
            max_workgroups,
            ..Default::default()
        };
        bytes[level as usize * slot..][..16].copy_from_slice(bytemuck::bytes_of(&p));
    }
    bytes
}
