//! Particle groups for the walk (drives `shaders/groups.wgsl`). The build
//! forms the groups: contiguous runs in key order of at most NCRIT = 64
//! particles (Bonsai's group size) cut from the first cells with at most
//! GROUP_CELL particles on each path from the root, siblings packed
//! together.
//! This phase gives each its bounding box, splits groups that span too much
//! of the system into one-particle groups (`shaders/groups_points.wgsl`,
//! which a parallel run's `cluster::spanning` uses too), and sizes the
//! walk's dispatch.
//! A refit (`encode_refit`) does the same for the groups of the last build
//! at the particles' current positions.
//! With the acceleration MAC, each group's tolerance comes from its
//! particles' last forces: the leapfrog's kick_drift keeps them, and
//! `encode_remember` does for evaluations outside a run's steps.

use super::TreeBuffers;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::timing::{timed_pass, PhaseTimer};

const GROUPS_WGSL: &str = include_str!("../../shaders/groups.wgsl");
/// One-particle groups, which `cluster::spanning` makes too.
pub const POINT_GROUPS_WGSL: &str = include_str!("../../shaders/groups_points.wgsl");

pub fn wgsl() -> String {
    super::compose(&format!("{GROUPS_WGSL}\n{POINT_GROUPS_WGSL}"))
}

pub struct GroupBoxes {
    boxes: Kernel,
    walk_dispatch: Kernel,
    restart: Kernel,
    remember: Kernel,
    boxes_bind: wgpu::BindGroup,
    walk_dispatch_bind: wgpu::BindGroup,
    dispatch: wgpu::Buffer,
    /// Workgroups of the boxes under `DispatchSizing::Strided`.
    strided: Option<u32>,
    n: u32,
}

/// The binding contract of `shaders/groups.wgsl`. With `dispatch`,
/// `walk_dispatch` binds 8 storage buffers: WebGPU's default per-stage
/// limit, so nothing more fits here.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("groups", Binding::StorageRead),
    ("counters", Binding::StorageReadWrite),
    ("group_boxes", Binding::StorageReadWrite),
    ("bounds", Binding::StorageRead),
    ("vel", Binding::StorageReadWrite),
    ("acc_pot", Binding::StorageRead),
    ("dispatch", Binding::StorageReadWrite),
];

/// `group_boxes_of` is dispatched from `dispatch`, so it must not bind it:
/// its layout stops before the last binding.
const BOX_BINDINGS: &[Slot] = BINDINGS.split_at(8).0;

impl GroupBoxes {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = ShaderSource::new("groups", wgsl());
        let boxes = Kernel::from_module(
            device,
            "group boxes",
            &module,
            "group_boxes_of",
            BOX_BINDINGS,
        );
        let walk_dispatch = Kernel::from_module(
            device,
            "walk dispatch size",
            &module,
            "walk_dispatch",
            BINDINGS,
        );
        let restart = Kernel::from_module(
            device,
            "restart groups",
            &module,
            "restart_groups",
            BOX_BINDINGS,
        );
        let remember = Kernel::from_module(
            device,
            "remember forces",
            &module,
            "remember_forces",
            BOX_BINDINGS,
        );
        let shared = [
            &b.params,
            &b.state.pos_mass,
            &b.groups,
            &b.counters,
            &b.group_boxes,
            &b.bounds,
            &b.state.vel,
            &b.state.acc_pot,
        ];
        let boxes_bind = boxes.bind(device, &shared);
        let mut with_dispatch = shared.to_vec();
        with_dispatch.push(&b.dispatch[0]);
        let walk_dispatch_bind = walk_dispatch.bind(device, &with_dispatch);
        Self {
            boxes,
            walk_dispatch,
            restart,
            remember,
            boxes_bind,
            walk_dispatch_bind,
            dispatch: b.dispatch[0].clone(),
            strided: b.strided.map(|s| s.groups),
            n: b.state.n,
        }
    }

    /// Records every particle's |a| from `acc_pot` as its |a_old|
    /// (`Velocity::last_acc`), which the next evaluation's group
    /// tolerances read (acceleration MAC).
    pub fn encode_remember(&self, device: &wgpu::Device, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = timed_pass(encoder, "remember", None);
        let groups = dispatch_size(device, self.n, WORKGROUP_SIZE);
        self.remember.dispatch(&mut pass, &self.boxes_bind, groups);
    }

    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = timed_pass(encoder, "groups", timer);
        self.encode_boxes(&mut pass);
    }

    /// The boxes of the last build's groups at the current positions (the
    /// groups split off in the last step are dropped and split anew).
    pub fn encode_refit(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = timed_pass(encoder, "groups", timer);
        self.restart.dispatch(&mut pass, &self.boxes_bind, (1, 1));
        self.encode_boxes(&mut pass);
    }

    /// The walk's dispatch for the groups there are now (`walk_dispatch`,
    /// which `encode` runs after the boxes), again.
    pub fn encode_walk_dispatch(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = timed_pass(encoder, "walk dispatch", None);
        self.walk_dispatch
            .dispatch(&mut pass, &self.walk_dispatch_bind, (1, 1));
    }

    fn encode_boxes(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.boxes.dispatch_gpu_sized(
            pass,
            &self.boxes_bind,
            None,
            (&self.dispatch, super::group_args_offset()),
            self.strided,
        );
        self.walk_dispatch
            .dispatch(pass, &self.walk_dispatch_bind, (1, 1));
    }
}
