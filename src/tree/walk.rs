//! The group-based tree walk (drives `shaders/walk.wgsl`): persistent
//! workgroups of WALK_LANES invocations, one or two particles of a group
//! per invocation, each workgroup taking groups from a counter; breadth-first
//! traversal with the frontier and the cell and particle interaction lists
//! in workgroup memory (evaluated as they fill), and a per-workgroup stack
//! of set-aside subtrees in global memory.
//!
//! Two paths, chosen per device and N ([`WalkPath::for_tree`]): the portable
//! one (`shaders/walk_portable.wgsl`, any WebGPU device) and the subgroup
//! fast path (`shaders/walk_subgroups.wgsl`) where the device has WebGPU's
//! `subgroups` feature and its subgroups are never larger than a walk
//! workgroup. Both give the same forces to f32 rounding (the lists are
//! filled in a different order); `tests/tree.rs` compares them.

use super::{TreeBuffers, NCRIT};
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::timing::{timed_pass, PhaseTimer};
use crate::gpu::{GpuContext, SubgroupUse};

const WALK_WGSL: &str = include_str!("../../shaders/walk.wgsl");
const WALK_PORTABLE_WGSL: &str = include_str!("../../shaders/walk_portable.wgsl");
const WALK_SUBGROUPS_WGSL: &str = include_str!("../../shaders/walk_subgroups.wgsl");

/// Below this N the portable path runs even where subgroups are offered:
/// its workgroups of 64 invocations (one particle each) put twice as many
/// warps on the GPU for the same few groups, which fills it better. H100,
/// walk ms at θ = 0.75 / 0.5, subgroup / portable (the subgroup walk
/// loading ahead): 2^18 1.23 / 1.22 and 2.94 / 3.00, 393,216 1.75 / 1.80
/// and 4.26 / 4.53, 2^20 4.49 / 4.99 (BENCHMARKS.md).
pub const SUBGROUP_WALK_MIN_PARTICLES: u32 = 3 << 17;

/// How the walk's invocations share list slots and list entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkPath {
    /// Workgroup atomics and staging in workgroup memory: every device.
    Portable,
    /// Subgroup prefix sums and shuffles (WebGPU `subgroups`).
    Subgroups,
}

/// The walk's workgroup shape on one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkShape {
    /// Invocations per workgroup: NCRIT (one particle of the group each)
    /// or NCRIT / 2 (two each, Bonsai's NI = 2).
    pub lanes: u32,
    /// Entries of each of the frontier's two levels (workgroup memory). A
    /// node whose children do not fit is walked later from the workgroup's
    /// stack, so the capacity trades occupancy against restarts.
    pub frontier: u32,
}

impl WalkShape {
    /// Entries of the cell and particle-range lists (workgroup memory).
    pub const LIST_CAPACITY: u32 = 2 * NCRIT;
}

impl WalkPath {
    /// The path of a walk over `n` particles: the subgroup path where the
    /// device offers it (`ctx.subgroups` permitting) and, unless forced,
    /// `n` is at least SUBGROUP_WALK_MIN_PARTICLES; else the portable one.
    pub fn for_tree(ctx: &GpuContext, n: u32) -> Self {
        let lanes = Self::Subgroups.shape().lanes;
        let usable = matches!(ctx.subgroup_sizes, Some((_, max)) if max <= lanes);
        let wanted = match ctx.subgroups {
            SubgroupUse::Always => true,
            SubgroupUse::Auto => n >= SUBGROUP_WALK_MIN_PARTICLES,
            SubgroupUse::Never => false,
        };
        if usable && wanted {
            Self::Subgroups
        } else {
            Self::Portable
        }
    }

    /// Measured on the H100 (walk ms at N = 2^20, θ = 0.73 / 0.49; see
    /// BENCHMARKS.md). Portable, 64 lanes, frontier 1024: 8.22 / 17.68;
    /// 512: 6.92 / 16.25; 384: 6.95 / 19.02; 256: 6.40 / 17.97 (32 lanes
    /// with two particles each lose there: 8.04 / 18.62 at 512). Subgroups,
    /// 32 lanes with two particles each, frontier 512: 7.04 / 16.13; 384:
    /// 6.26 / 15.90; 320: 6.06 / 15.38; 256: 5.91 / 15.13; 192: 6.13 /
    /// 14.75; 128: 6.60 / 15.15; 64 lanes, 256: 6.37 / 17.23.
    pub fn shape(self) -> WalkShape {
        match self {
            Self::Portable => WalkShape {
                lanes: NCRIT,
                frontier: 512,
            },
            Self::Subgroups => WalkShape {
                lanes: NCRIT / 2,
                frontier: 256,
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            Self::Subgroups => "subgroups",
        }
    }
}

/// Which tree a walk walks: the rank's own (forces written) or the trees
/// imported from other ranks (`cluster::imports`: forces added).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkedTree {
    Local,
    Imported,
}

/// What an imported tree's walk leaves in its counters' `overflow` when a
/// node had to be spilled (its range does not hold its particles there).
pub const IMPORTED_SPILL: u32 = 2;

/// The composed WGSL of the walk on `path`.
pub fn wgsl(path: WalkPath) -> String {
    wgsl_of(path, WalkedTree::Local)
}

/// The composed WGSL of the walk of `tree` on `path`.
pub fn wgsl_of(path: WalkPath, tree: WalkedTree) -> String {
    let shape = path.shape();
    let consts = [
        ("WALK_LANES", shape.lanes),
        ("FRONTIER_CAPACITY", shape.frontier),
        ("LIST_CAPACITY", WalkShape::LIST_CAPACITY),
        ("LIST_CAPACITY_PLUS_ONE", WalkShape::LIST_CAPACITY + 1),
        ("IMPORTED", (tree == WalkedTree::Imported) as u32),
        ("IMPORTED_SPILL", IMPORTED_SPILL),
    ];
    let half = match path {
        WalkPath::Portable => WALK_PORTABLE_WGSL,
        // Without `enable subgroups;`: naga 30 takes subgroup operations
        // from the device's features and refuses the directive, which a
        // browser needs (`TreeWalk::new` adds it there).
        WalkPath::Subgroups => WALK_SUBGROUPS_WGSL,
    };
    super::compose_with(&consts, &format!("{WALK_WGSL}\n{half}"))
}

/// `wgsl(path)` as `ctx`'s shader compiler takes it: a browser's (Tint)
/// needs the `enable subgroups;` and `diagnostic` directives that naga
/// refuses.
fn wgsl_for(ctx: &GpuContext, path: WalkPath, tree: WalkedTree) -> String {
    let source = wgsl_of(path, tree);
    if path == WalkPath::Subgroups && ctx.adapter_info.backend == wgpu::Backend::BrowserWebGpu {
        // The shuffles' loops run to the subgroup size, which is uniform
        // but reaches them in `Lane` beside per-invocation fields, where
        // the analysis cannot tell it apart.
        format!("enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n{source}")
    } else {
        source
    }
}

pub struct TreeWalk {
    kernel: Kernel,
    bind: wgpu::BindGroup,
    dispatch: wgpu::Buffer,
    /// Dispatches per walk: 1, or on CPU adapters as many as the groups
    /// may need at `walk_share_cap` groups per workgroup each (those with
    /// nothing left end at once).
    dispatches: u32,
    /// The persistent workgroups under `DispatchSizing::Strided` (the walk
    /// takes its groups from a shared counter, so workgroups beyond the
    /// groups end at once).
    strided: Option<u32>,
    pub path: WalkPath,
    /// The timed phase's name: "walk", or "imported walk".
    phase: &'static str,
}

/// The binding contract of `shaders/walk.wgsl` (both paths).
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("cells", Binding::StorageRead),
    ("props", Binding::StorageRead),
    ("group_boxes", Binding::StorageRead),
    ("counters", Binding::StorageReadWrite),
    ("acc_pot", Binding::StorageReadWrite),
    ("interactions", Binding::StorageReadWrite),
    ("deferred", Binding::StorageReadWrite),
];

/// The buffers a walk takes its tree from: the particles (sources and,
/// first, the local sinks), cells, cell properties and the counters that
/// hand out the groups.
pub struct WalkSources<'a> {
    pub pos_mass: &'a wgpu::Buffer,
    pub cells: &'a wgpu::Buffer,
    pub props: &'a wgpu::Buffer,
    pub counters: &'a wgpu::Buffer,
}

impl TreeWalk {
    pub fn new(ctx: &GpuContext, b: &TreeBuffers) -> Self {
        let local = WalkSources {
            pos_mass: &b.state.pos_mass,
            cells: &b.cells,
            props: &b.props,
            counters: &b.counters,
        };
        Self::of_tree(ctx, b, WalkedTree::Local, &local)
    }

    /// The walk of `b`'s groups through the tree in `sources`, which is
    /// `b`'s own or (`WalkedTree::Imported`) trees imported from other
    /// ranks, whose forces add to the local ones.
    pub fn of_tree(
        ctx: &GpuContext,
        b: &TreeBuffers,
        tree: WalkedTree,
        sources: &WalkSources,
    ) -> Self {
        let device = &ctx.device;
        let path = WalkPath::for_tree(ctx, b.state.n);
        // SAFETY: every index into the walk's workgroup arrays is bounded
        // by construction: list slots stay below LIST_CAPACITY (a list is
        // evaluated once it might not hold another chunk of WALK_LANES
        // entries), frontier slots below FRONTIER_CAPACITY (children that
        // do not fit are set aside on the stack, whose index is checked
        // against DEFERRED_CAPACITY), subgroup ids below WALK_LANES. Every
        // loop ends: the stack only takes children of a popped node, and
        // children always have larger indices than their parent.
        let kernel = unsafe {
            Kernel::new_with_checks(
                device,
                "tree walk",
                &wgsl_for(ctx, path, tree),
                "walk",
                BINDINGS,
                wgpu::ShaderRuntimeChecks::unchecked(),
            )
        };
        let bind = Self::bind_with(&kernel, device, b, sources);
        // The workgroups one dispatch runs: the strided count, or (indirect)
        // at most walk_workgroups.
        let per_dispatch = b
            .strided
            .map_or(b.walk_workgroups, |s| s.walk)
            .min(b.group_capacity)
            .max(1);
        let dispatches = match b.walk_share_cap {
            0 => 1,
            cap => b.group_capacity.div_ceil(per_dispatch * cap).max(1),
        };
        Self {
            kernel,
            bind,
            dispatch: b.dispatch[0].clone(),
            dispatches,
            strided: b.strided.map(|s| s.walk),
            path,
            phase: match tree {
                WalkedTree::Local => "walk",
                WalkedTree::Imported => "imported walk",
            },
        }
    }

    fn bind_with(
        kernel: &Kernel,
        device: &wgpu::Device,
        b: &TreeBuffers,
        sources: &WalkSources,
    ) -> wgpu::BindGroup {
        kernel.bind(
            device,
            &[
                &b.params,
                sources.pos_mass,
                sources.cells,
                sources.props,
                &b.group_boxes,
                sources.counters,
                &b.state.acc_pot,
                &b.interactions,
                &b.walk_stack,
            ],
        )
    }

    /// Walks the tree in `sources` from now on (an imported tree's buffers
    /// grow with what the other ranks send).
    pub fn rebind(&mut self, device: &wgpu::Device, b: &TreeBuffers, sources: &WalkSources) {
        self.bind = Self::bind_with(&self.kernel, device, b, sources);
    }

    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        let mut pass = timed_pass(encoder, self.phase, timer);
        // Later dispatches go on from the shared group counter.
        for _ in 0..self.dispatches {
            self.kernel.dispatch_gpu_sized(
                &mut pass,
                &self.bind,
                None,
                (&self.dispatch, super::walk_args_offset()),
                self.strided,
            );
        }
    }
}
