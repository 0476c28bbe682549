//! The Bonsai-style sparse octree tree code on the GPU (Bédorf, Gaburov &
//! Portegies Zwart 2012). Every phase of a force evaluation is a WebGPU
//! compute shader, recorded into one command encoder with no read-back:
//!
//! 1. `bbox`: bounding box by parallel reduction,
//! 2. `keys`: 63-bit Morton keys,
//! 3. `sort`: radix sort of (key, index) pairs,
//! 4. `reorder`: particle arrays gathered into key order,
//! 5. `build`: level-by-level sparse octree (indirect dispatch per level),
//! 6. `properties`: monopole + quadrupole moments and opening radii,
//! 7. `groups`: bounding boxes (and MAC tolerances) of the walk's groups,
//! 8. `walk`: group-based breadth-first tree walk with Bonsai's MAC or the
//!    acceleration MAC (`TreeConfig::alpha`), whose groups take their
//!    tolerances from each particle's last |a| (the leapfrog's kick_drift
//!    keeps it; `encode_fresh` primes a first evaluation).
//!
//! Between rebuilds (`--rebuild K`), a refit reruns only 6–8 on the
//! last tree at the particles' new positions.
//!
//! `cpu` holds the f64 twins used by the tests.

pub mod bbox;
pub mod build;
pub mod cpu;
pub mod groups;
pub mod keys;
pub mod layout;
pub mod overlay;
pub mod properties;
pub mod reorder;
pub mod sort;
pub mod trace;
pub mod walk;

use crate::error::{Error, Result};
use crate::gpu::buffers::{read_pieces, read_vec, uniform_buffer};
use crate::gpu::layout::{PosMass, WORKGROUP_SIZE};
use crate::gpu::shader;
use crate::gpu::timing::PhaseTimer;
use crate::gpu::{DispatchSizing, GpuContext};
use crate::state::particles::{GpuParticles, STATE_BYTES_PER_PARTICLE};
use layout::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// Maximum particles per leaf (the paper's N_leaf).
pub const NLEAF: u32 = 16;
/// Maximum particles per walk group (Bonsai's NCRIT).
pub const NCRIT: u32 = 64;
/// Walk groups are cut from the first cells with at most GROUP_CELL
/// particles (siblings packed together up to GROUP_CELL), in pieces of
/// NCRIT consecutive particles in key order, as Bonsai cuts its groups
/// from key-order runs: nearly every group fills the walk's lanes, and
/// the larger group boxes make the forces more accurate at the same θ.
/// Measured on the H100 (N = 2^20, walk ms at θ 0.73 / 0.49, median force
/// error at θ 0.73): 64 (cells themselves) 5.32 / 13.63, 5.46e-4; 128
/// 5.35 / 13.09, 5.15e-4; 192 5.37 / 12.66, 5.01e-4; 256 5.38 / 12.67,
/// 4.92e-4.
pub const GROUP_CELL: u32 = 256;
/// A group whose box is wider than 1/GROUP_SPLIT_DIVISOR of the system is
/// split into one-particle groups (see shaders/groups.wgsl). Measured on
/// the H100 (N = 2^20, θ = 0.75): 8 → 9.9 ms, 16 → 10.2 ms, 32 → 11.2 ms per
/// force evaluation; without splitting, N = 2^16 took 4.8 ms instead of 1.5.
pub const GROUP_SPLIT_DIVISOR: u32 = 8;

/// Invocations per group in the group-box kernel (`shaders/groups.wgsl`):
/// each reads every GROUP_BOX_LANES-th particle of the group, so a group's
/// loads are in flight together instead of one after the other.
pub const GROUP_BOX_LANES: u32 = 8;
/// Nodes a walk workgroup can set aside when its frontier is full, each
/// walked later as a subtree of its own (a stack per workgroup in global
/// memory; only when it is full too are a node's particles summed directly).
/// In workgroup memory, 384 entries took N = 2^20, θ = 0.3 from 108 to 67 ms
/// on the H100 compared with 128.
pub const DEFERRED_CAPACITY: u32 = 2048;
/// On CPU adapters (lavapipe, SwiftShader) a walk workgroup takes at most
/// this many groups per dispatch, and the walk is dispatched as often as
/// the group capacity may need: llvmpipe ends every loop of an invocation
/// after 65,535 iterations in all, and a workgroup that walked many groups
/// in one dispatch lost the forces of those past the limit (seen with 8
/// groups per workgroup in tests). GPUs take their whole share at once.
pub const CPU_WALK_SHARE: u32 = 2;
/// Walk workgroups: persistent, each takes groups from an atomic counter,
/// at most its share (more than an H100 holds at once; their stacks take
/// WALK_WORKGROUPS × DEFERRED_CAPACITY × 4 bytes = 32 MiB).
pub const WALK_WORKGROUPS: u32 = 4096;
/// Workgroups of the first bounding-box reduction, at most.
pub const BBOX_GROUPS: u32 = 256;
/// Particles per workgroup of the first bounding-box reduction, at least
/// (N = 2^20 still gets all BBOX_GROUPS).
pub const BBOX_PARTICLES_PER_GROUP: u32 = 4096;

const TREE_COMMON_WGSL: &str = include_str!("../../shaders/tree_common.wgsl");

/// The WGSL of a tree kernel: shared layouts, the tree's layouts and key
/// functions, then `body`, with the tree constants defined from Rust.
pub(crate) fn compose(body: &str) -> String {
    compose_with(&[], body)
}

/// `compose` with the kernel's own constants `extra` as well.
pub(crate) fn compose_with(extra: &[(&str, u32)], body: &str) -> String {
    let common = [
        ("MAX_DEPTH", MAX_DEPTH),
        ("LEVEL_SLOTS", LEVEL_SLOTS as u32),
        ("NLEAF", NLEAF),
        ("NCRIT", NCRIT),
        ("GROUP_CELL", GROUP_CELL),
        ("DEFERRED_CAPACITY", DEFERRED_CAPACITY),
        ("GROUP_SPLIT_DIVISOR", GROUP_SPLIT_DIVISOR),
        ("GROUP_BOX_LANES", GROUP_BOX_LANES),
        ("BBOX_GROUPS", BBOX_GROUPS),
        ("BBOX_PARTICLES_PER_GROUP", BBOX_PARTICLES_PER_GROUP),
        ("KEY_CELLS", keys::KEY_CELLS),
    ];
    let consts: Vec<(&str, u32)> = common.iter().chain(extra).copied().collect();
    shader::compose(
        &consts,
        &format!("{TREE_LAYOUT_WGSL}\n{TREE_COMMON_WGSL}\n{body}"),
    )
}

/// Byte offset of level `l`'s indirect dispatch arguments in `dispatch`.
pub(crate) fn level_args_offset(level: u32) -> u64 {
    (std::mem::offset_of!(TreeDispatch, level_args)
        + level as usize * std::mem::size_of::<DispatchArgs>()) as u64
}

pub(crate) fn group_args_offset() -> u64 {
    std::mem::offset_of!(TreeDispatch, group_args) as u64
}

pub(crate) fn walk_args_offset() -> u64 {
    std::mem::offset_of!(TreeDispatch, walk_args) as u64
}

/// Settings of the tree solver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeConfig {
    /// Opening angle θ of the MAC (d > l/θ + δ accepts a cell). With the
    /// acceleration MAC, the opening angle on b (d > b/θ) of an evaluation
    /// that has no earlier forces to go by (`TreeSolver::encode_fresh`).
    pub theta: f32,
    /// Plummer softening length.
    pub eps: f32,
    /// Tolerance α of the acceleration MAC (0: Bonsai's opening angle).
    /// A group takes a cell of mass M and radius b (about its centre of
    /// mass) at distance d > b as a multipole when M b³ / (d³ (d − b)²),
    /// the size of the acceleration error its quadrupole expansion leaves
    /// (Salmon & Warren's bound up to a constant, which α absorbs), is
    /// at most α |a_old|, |a_old| the smallest of the group's last
    /// accelerations: a relative error criterion (Springel 2005, GADGET-2;
    /// Miki & Umemura 2017, GOTHIC).
    pub alpha: f32,
}

/// Largest opening angle: a particle lies within δ + (√3/2)·l of its cell's
/// centre of mass, so for θ < 2/√3 the MAC always opens the cells holding
/// the particle itself; beyond, a particle could feel its own mass.
pub const MAX_THETA: f32 = 1.15;

/// Largest tolerance of the acceleration MAC: one cell's estimated
/// acceleration error as large as the group's smallest |a|. Beyond that
/// the criterion stops meaning anything (BENCHMARKS.md: Bonsai's θ = 0.75
/// errors at α = 0.1, and d > b alone decides from about α = 0.3 on).
pub const MAX_ALPHA: f32 = 1.0;

impl TreeConfig {
    pub fn validate(&self) -> Result<()> {
        if !(self.theta.is_finite() && self.theta > 0.0 && self.theta <= MAX_THETA) {
            return Err(Error::InvalidParameter(format!(
                "theta must be in (0, {MAX_THETA}], got {}: larger opening angles can \
                 accept the cell that holds the particle itself",
                self.theta
            )));
        }
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return Err(Error::InvalidParameter(format!(
                "softening must be >= 0, got {}",
                self.eps
            )));
        }
        if !(self.alpha.is_finite() && (0.0..=MAX_ALPHA).contains(&self.alpha)) {
            return Err(Error::InvalidParameter(format!(
                "alpha (acceleration MAC tolerance) must be in [0, {MAX_ALPHA}] (0: the \
                 opening angle MAC), got {}",
                self.alpha
            )));
        }
        Ok(())
    }
}

/// Cells per particle allocated: the build of a Plummer sphere with
/// N_leaf = 16 uses about 0.23 (bench tree prints it); a build that needs more
/// keeps the cells it cannot split as leaves (exact, only slower).
const CELLS_PER_PARTICLE: f64 = 0.3;

/// The cells `TreeSolver::new` allocates for `n` particles.
fn default_cells(n: u32) -> u32 {
    ((n as f64 * CELLS_PER_PARTICLE) as u32).max(64)
}

/// Bytes of the tree's arrays that grow with N (what `TreeBuffers`
/// allocates; the sort's scratch pair is as large as `keys` and `values`).
/// Each must fit one storage binding: on an H100 under wgpu's Vulkan
/// backend that is 2^31 − 1 bytes, which is why the cells' boxes are kept
/// apart from their moments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeArrays {
    pub group_capacity: u32,
    pub keys: u64,
    pub values: u64,
    pub pos_mass_tmp: u64,
    pub id_tmp: u64,
    pub cells: u64,
    pub props: u64,
    pub cell_boxes: u64,
    pub groups: u64,
    pub group_boxes: u64,
    pub interactions: u64,
    pub walk_stack: u64,
}

impl TreeArrays {
    /// The arrays of `n` particles, `cell_capacity` cells and
    /// `walk_workgroups` walk stacks.
    pub fn new(n: u32, cell_capacity: u32, walk_workgroups: u32) -> Self {
        let group_capacity = cell_capacity + n / NCRIT + 1;
        let of = |count: u32, record: usize| count as u64 * record as u64;
        Self {
            group_capacity,
            keys: of(n, 8),
            values: of(n, 4),
            pos_mass_tmp: of(n, std::mem::size_of::<PosMass>()),
            id_tmp: of(n, 4),
            cells: of(cell_capacity, std::mem::size_of::<TreeCell>()),
            props: of(cell_capacity, std::mem::size_of::<CellProps>()),
            cell_boxes: of(cell_capacity, std::mem::size_of::<Bounds>()),
            groups: of(group_capacity, std::mem::size_of::<Group>()),
            group_boxes: of(group_capacity, std::mem::size_of::<GroupBox>()),
            interactions: of(n, std::mem::size_of::<InteractionCount>()),
            walk_stack: walk_workgroups.min(group_capacity) as u64 * DEFERRED_CAPACITY as u64 * 4,
        }
    }

    /// The arrays `TreeSolver::new` allocates for `n` particles.
    pub fn for_particles(n: u32) -> Self {
        Self::new(n, default_cells(n), WALK_WORKGROUPS)
    }

    /// The largest array: its name and bytes.
    pub fn largest(&self) -> (&'static str, u64) {
        [
            ("keys", self.keys),
            ("sort values", self.values),
            ("pos_mass reorder", self.pos_mass_tmp),
            ("id reorder", self.id_tmp),
            ("cells", self.cells),
            ("cell props", self.props),
            ("cell boxes", self.cell_boxes),
            ("groups", self.groups),
            ("group boxes", self.group_boxes),
            ("interaction counts", self.interactions),
            ("walk stacks", self.walk_stack),
        ]
        .into_iter()
        .max_by_key(|&(_, bytes)| bytes)
        .expect("the list is not empty")
    }
}

/// The largest N the tree runs with when no storage array may exceed
/// `binding_bytes` (the smaller of the device's binding and buffer limits):
/// its own arrays (`TreeArrays`) and the particle state's 16-byte records
/// fit, and particle indices stay 31-bit. On an H100 (2^31 − 1 bytes) the
/// state's records decide: 2^27 − 1 particles.
pub fn max_particles_within(binding_bytes: u64) -> u64 {
    let fits = |n: u64| {
        n * STATE_RECORD_BYTES <= binding_bytes
            && TreeArrays::for_particles(n as u32).largest().1 <= binding_bytes
    };
    // `fits` holds up to the answer and not beyond (every array grows
    // with N): bisect between 1 and the 31-bit ceiling.
    let (mut lo, mut hi) = (1u64, u32::MAX as u64 / 2);
    if fits(hi) {
        return hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Bytes of the particle state's largest record (`PosMass`, `Velocity`,
/// `AccPot`: one array each).
const STATE_RECORD_BYTES: u64 = std::mem::size_of::<PosMass>() as u64;

/// The parameters of `n` particles with capacities [cells, groups, walk
/// workgroups, walk share cap].
fn tree_params(n: u32, capacities: [u32; 4], config: TreeConfig) -> TreeParams {
    let [cell_capacity, group_capacity, walk_workgroups, walk_share_cap] = capacities;
    TreeParams {
        n,
        cell_capacity,
        eps2: config.eps * config.eps,
        inv_theta: 1.0 / config.theta,
        group_capacity,
        walk_workgroups,
        alpha: config.alpha,
        walk_share_cap,
    }
}

/// Workgroups of the tree's GPU-sized dispatches under
/// `DispatchSizing::Strided`: every level of the build and the properties
/// (`cells`), the group boxes (`groups`), the walk (`walk`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedWorkgroups {
    pub cells: u32,
    pub groups: u32,
    pub walk: u32,
}

impl StridedWorkgroups {
    /// No more than the capacities could need, at most `max` each (the
    /// walk's persistent workgroups at most 16 `max`: all 4096 on GPUs, 256
    /// on a CPU adapter, which runs more dispatches of them where there
    /// are many groups: `walk_share_cap`; on lavapipe 256 took 20-25 % less
    /// time per walk than 64 at N = 512 to 16384).
    fn for_capacities(
        max: u32,
        cell_capacity: u32,
        group_capacity: u32,
        walk_workgroups: u32,
    ) -> Self {
        let cap = |w: u32| w.clamp(1, max.max(1));
        Self {
            cells: cap(cell_capacity.div_ceil(WORKGROUP_SIZE)),
            groups: cap(group_capacity.div_ceil(WORKGROUP_SIZE / GROUP_BOX_LANES)),
            walk: walk_workgroups.min(16 * max.max(1)),
        }
    }
}

/// Every buffer of the tree code (labels name them in GPU debuggers).
pub struct TreeBuffers {
    pub state: GpuParticles,
    pub params: wgpu::Buffer,
    /// Per-level `LevelParams`, one DYNAMIC_SLOT each.
    pub levels: wgpu::Buffer,
    pub bbox_partial: wgpu::Buffer,
    /// The build's `TreeBounds`.
    pub bounds: wgpu::Buffer,
    /// The `SystemCube` of a parallel run's domains (side 0 until set).
    pub system_cube: wgpu::Buffer,
    pub keys: wgpu::Buffer,
    pub values: wgpu::Buffer,
    pub pos_mass_tmp: wgpu::Buffer,
    pub id_tmp: wgpu::Buffer,
    pub cells: wgpu::Buffer,
    pub props: wgpu::Buffer,
    /// Each cell's tight box (`Bounds`), which only the properties read.
    pub cell_boxes: wgpu::Buffer,
    pub counters: wgpu::Buffer,
    /// Indirect dispatch sizes; tree levels alternate between the two.
    pub dispatch: [wgpu::Buffer; 2],
    pub groups: wgpu::Buffer,
    pub group_boxes: wgpu::Buffer,
    pub interactions: wgpu::Buffer,
    /// The walk workgroups' stacks of set-aside nodes.
    pub walk_stack: wgpu::Buffer,
    pub cell_capacity: u32,
    /// Persistent walk workgroups (at most; fewer when there are fewer
    /// groups), each with a stack of DEFERRED_CAPACITY nodes.
    pub walk_workgroups: u32,
    /// Groups the arrays hold: `cell_capacity + N/NCRIT + 1`. Every group
    /// is a cell or an NCRIT-sized piece of a leaf, so the build never
    /// runs out of group slots, even when it ran out of cells.
    pub group_capacity: u32,
    /// Most groups a walk workgroup takes per dispatch: `CPU_WALK_SHARE`
    /// on CPU adapters, 0 (no limit) elsewhere.
    pub walk_share_cap: u32,
    /// Most workgroups per dimension of one dispatch (the device's limit).
    pub max_workgroups: u32,
    /// Particles the arrays hold: the state's, or more where the solver
    /// was made with room (`TreeSolver::with_room`, `rebind`).
    pub held: u32,
    /// Workgroups of the GPU-sized dispatches where they are strided rather
    /// than indirect (`GpuContext::dispatch_sizing`).
    pub strided: Option<StridedWorkgroups>,
}

impl TreeBuffers {
    fn new(
        ctx: &GpuContext,
        state: &GpuParticles,
        config: TreeConfig,
        cell_capacity: u32,
        walk_workgroups: u32,
        held: u32,
    ) -> Result<Self> {
        let d = &ctx.device;
        let n = state.n;
        debug_assert!(held >= n, "arrays for {held} of {n} particles");
        let max_workgroups = d.limits().max_compute_workgroups_per_dimension;
        let walk_workgroups = walk_workgroups.clamp(1, WALK_WORKGROUPS.min(max_workgroups));
        let arrays = TreeArrays::new(held, cell_capacity, walk_workgroups);
        let limit = ctx.max_elements(1);
        let (largest, bytes) = arrays.largest();
        if bytes > limit {
            return Err(Error::TooManyParticles {
                n: held as u64,
                max: max_particles_within(limit),
                reason: format!(
                    "the tree's {largest} array needs {bytes} bytes, over the {limit}-byte \
                     limit of one storage buffer"
                ),
            });
        }
        let storage = |label: &str, bytes: u64, extra: wgpu::BufferUsages| {
            d.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(16),
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST
                    | extra,
                mapped_at_creation: false,
            })
        };
        let none = wgpu::BufferUsages::empty();
        let size = |s: usize| s as u64;
        let group_capacity = arrays.group_capacity;
        let walk_share_cap = match ctx.adapter_info.device_type {
            wgpu::DeviceType::Cpu => CPU_WALK_SHARE,
            _ => 0,
        };
        let params = tree_params(
            n,
            [
                cell_capacity,
                group_capacity,
                walk_workgroups,
                walk_share_cap,
            ],
            config,
        );
        let dispatch_bytes = size(std::mem::size_of::<TreeDispatch>());
        let levels = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tree level slots"),
            size: build::level_slots(MAX_DEPTH, max_workgroups).len() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ctx.queue
            .write_buffer(&levels, 0, &build::level_slots(MAX_DEPTH, max_workgroups));
        let dispatch = |label: &str| storage(label, dispatch_bytes, wgpu::BufferUsages::INDIRECT);
        Ok(Self {
            state: state.clone(),
            params: uniform_buffer(d, "tree params", &params),
            levels,
            bbox_partial: storage(
                "bbox partial",
                BBOX_GROUPS as u64 * size(std::mem::size_of::<Bounds>()),
                none,
            ),
            bounds: storage("bounds", size(std::mem::size_of::<TreeBounds>()), none),
            system_cube: uniform_buffer(d, "system cube", &SystemCube::default()),
            keys: storage("keys", arrays.keys, none),
            values: storage("sort values", arrays.values, none),
            pos_mass_tmp: storage("pos_mass reorder", arrays.pos_mass_tmp, none),
            id_tmp: storage("id reorder", arrays.id_tmp, none),
            cells: storage("cells", arrays.cells, none),
            props: storage("cell props", arrays.props, none),
            cell_boxes: storage("cell boxes", arrays.cell_boxes, none),
            counters: storage(
                "tree counters",
                size(std::mem::size_of::<TreeCounters>()),
                none,
            ),
            dispatch: [
                dispatch("tree dispatch args 0"),
                dispatch("tree dispatch args 1"),
            ],
            groups: storage("groups", arrays.groups, none),
            group_boxes: storage("group boxes", arrays.group_boxes, none),
            interactions: storage("interaction counts", arrays.interactions, none),
            walk_stack: storage("walk stacks", arrays.walk_stack, none),
            cell_capacity,
            walk_workgroups,
            group_capacity,
            walk_share_cap,
            max_workgroups,
            held,
            strided: match ctx.dispatch_sizing {
                DispatchSizing::Indirect => None,
                DispatchSizing::Strided { max_workgroups: m } => {
                    Some(StridedWorkgroups::for_capacities(
                        m.min(max_workgroups),
                        cell_capacity,
                        group_capacity,
                        walk_workgroups,
                    ))
                }
            },
        })
    }

    /// GPU memory of the tree code plus the particle state, in bytes.
    pub fn bytes(&self, sort_scratch: u64) -> u64 {
        let tree: u64 = [
            &self.bbox_partial,
            &self.bounds,
            &self.system_cube,
            &self.keys,
            &self.values,
            &self.pos_mass_tmp,
            &self.id_tmp,
            &self.cells,
            &self.props,
            &self.cell_boxes,
            &self.counters,
            &self.dispatch[0],
            &self.dispatch[1],
            &self.groups,
            &self.group_boxes,
            &self.interactions,
            &self.walk_stack,
        ]
        .iter()
        .map(|b| b.size())
        .sum();
        tree + sort_scratch + self.state.n as u64 * STATE_BYTES_PER_PARTICLE
    }
}

/// The tree solver bound to one particle state: records a whole force
/// evaluation (all eight phases) into an encoder.
pub struct TreeSolver {
    pub buffers: TreeBuffers,
    sort: sort::RadixSort,
    /// The passes bound to `buffers` (rebound by `rebind`).
    phases: Phases,
    /// Force evaluations per tree build (`encode_scheduled`).
    rebuild_every: AtomicU32,
    /// Evaluations on the current tree; `u32::MAX` before the first build.
    on_this_tree: AtomicU32,
    /// The deepest level the next build records (`fit_levels`).
    deepest: AtomicU32,
    /// The deepest level of the current tree's build (what a refit
    /// recomputes).
    built_deepest: AtomicU32,
    /// `TreeConfig::alpha` as bits: evaluations with the acceleration MAC
    /// remember their forces for the next.
    alpha_bits: AtomicU32,
}

/// The passes bound to a solver's buffers (bind groups and dispatch sizes
/// only: their pipelines are cached, and every buffer is `TreeBuffers`').
struct Phases {
    bbox: bbox::BoundingBox,
    keys: keys::KeyGen,
    reorder: reorder::Reorder,
    build: build::TreeBuild,
    properties: properties::CellProperties,
    groups: groups::GroupBoxes,
    walk: walk::TreeWalk,
}

impl Phases {
    fn new(ctx: &GpuContext, b: &TreeBuffers) -> Self {
        let d = &ctx.device;
        Self {
            bbox: bbox::BoundingBox::new(d, b),
            keys: keys::KeyGen::new(d, b),
            reorder: reorder::Reorder::new(d, b),
            build: build::TreeBuild::new(d, b),
            properties: properties::CellProperties::new(d, b),
            groups: groups::GroupBoxes::new(d, b),
            walk: walk::TreeWalk::new(ctx, b),
        }
    }
}

/// Levels recorded beyond the depth of the last build when the levels are
/// fitted (`TreeSolver::fit_levels`): a tree deepens by at most a level
/// or so between fits in the runs measured.
pub const LEVEL_MARGIN: u32 = 2;

/// Significant bits of the Morton keys.
pub const KEY_BITS: u32 = 3 * MAX_DEPTH;

impl TreeSolver {
    pub fn new(ctx: &GpuContext, state: &GpuParticles, config: TreeConfig) -> Result<Self> {
        Self::with_cells(ctx, state, config, default_cells(state.n))
    }

    /// A solver whose cell arrays hold `cells` cells (tests force the
    /// build to run out of them; it then keeps cells it cannot split as
    /// leaves, and every particle still gets its force).
    pub fn with_cells(
        ctx: &GpuContext,
        state: &GpuParticles,
        config: TreeConfig,
        cells: u32,
    ) -> Result<Self> {
        Self::with_limits(ctx, state, config, cells, WALK_WORKGROUPS)
    }

    /// A solver with `cells` cells and at most `walk_workgroups` (1 to
    /// WALK_WORKGROUPS) persistent walk workgroups (tests make each take
    /// several groups at small N).
    pub fn with_limits(
        ctx: &GpuContext,
        state: &GpuParticles,
        config: TreeConfig,
        cells: u32,
        walk_workgroups: u32,
    ) -> Result<Self> {
        Self::built(ctx, state, config, (cells, walk_workgroups), state.n)
    }

    /// A solver whose arrays hold `held` particles (at least the state's),
    /// so that `rebind` can move it to another state of as many.
    pub fn with_room(
        ctx: &GpuContext,
        state: &GpuParticles,
        config: TreeConfig,
        held: u32,
    ) -> Result<Self> {
        let held = held.max(state.n);
        Self::built(
            ctx,
            state,
            config,
            (default_cells(held), WALK_WORKGROUPS),
            held,
        )
    }

    fn built(
        ctx: &GpuContext,
        state: &GpuParticles,
        config: TreeConfig,
        (cells, walk_workgroups): (u32, u32),
        held: u32,
    ) -> Result<Self> {
        config.validate()?;
        let d = &ctx.device;
        let buffers = TreeBuffers::new(ctx, state, config, cells.max(64), walk_workgroups, held)?;
        let sort = sort::RadixSort::with_room(
            d,
            (&buffers.keys, &buffers.values),
            (state.n, buffers.held),
            KEY_BITS,
        );
        Ok(Self {
            phases: Phases::new(ctx, &buffers),
            sort,
            buffers,
            rebuild_every: AtomicU32::new(1),
            on_this_tree: AtomicU32::new(u32::MAX),
            deepest: AtomicU32::new(MAX_DEPTH),
            built_deepest: AtomicU32::new(MAX_DEPTH),
            alpha_bits: AtomicU32::new(config.alpha.to_bits()),
        })
    }

    /// Whether the solver's arrays hold `n` particles (`rebind`).
    pub fn holds(&self, n: u32) -> bool {
        n <= self.buffers.held
    }

    /// Moves the solver to `state` (a parallel run's redrawn particles, at
    /// most `buffers.held`) with `config`, keeping its arrays, its sort's
    /// and the levels its builds record: a filled GPU's arrays allocated
    /// anew, and the old ones freed, took seconds of each redraw, and a
    /// new solver's first build records every level. The next evaluation
    /// builds.
    pub fn rebind(
        &mut self,
        ctx: &GpuContext,
        state: &GpuParticles,
        config: TreeConfig,
    ) -> Result<()> {
        config.validate()?;
        if !self.holds(state.n) {
            return Err(Error::InvalidParameter(format!(
                "a tree solver with room for {} particles cannot take {}",
                self.buffers.held, state.n
            )));
        }
        self.buffers.state = state.clone();
        self.set_config(&ctx.queue, config);
        self.sort.resize(&ctx.device, state.n);
        self.phases = Phases::new(ctx, &self.buffers);
        self.rebuild_next();
        Ok(())
    }

    /// Whether the acceleration MAC is in use (`TreeConfig::alpha` > 0).
    fn accel_mac(&self) -> bool {
        f32::from_bits(self.alpha_bits.load(Ordering::Relaxed)) > 0.0
    }

    /// Records a force evaluation that relies on no earlier one (a run's
    /// first, or after its settings or state changed): with the
    /// acceleration MAC, one evaluation with the opening angle on b (no
    /// |a_old| known), whose forces then serve as |a_old| for a second,
    /// whose forces are kept in turn. Otherwise as `encode`.
    pub fn encode_fresh(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        if self.accel_mac() {
            // No force is remembered: every group starts from the radii.
            encoder.clear_buffer(&self.buffers.state.acc_pot, 0, None);
            self.encode_remember(device, encoder);
            self.encode(device, encoder, None);
            self.encode_remember(device, encoder);
            // The positions have not moved: the same tree (the sort keeps
            // the order within a deepest cell), so only the groups, which
            // take the |a| just remembered, and the walk are redone.
            self.phases.groups.encode_refit(encoder, None);
            self.phases.walk.encode(encoder, timer);
        } else {
            self.encode(device, encoder, timer);
        }
        self.encode_remember(device, encoder);
    }

    /// Records the forces in `acc_pot` as the particles' |a_old| for the
    /// next evaluation (acceleration MAC only). Within a run the leapfrog's
    /// kick_drift keeps |a| as it applies it, at no cost; evaluations
    /// outside a run's steps call this (`encode_fresh` does).
    pub fn encode_remember(&self, device: &wgpu::Device, encoder: &mut wgpu::CommandEncoder) {
        if self.accel_mac() {
            self.phases.groups.encode_remember(device, encoder);
        }
    }

    /// Measures later builds' wide groups against `cube` (a parallel run's
    /// domains: `TreeBounds`), as one GPU measures them against its whole
    /// system.
    pub fn set_system_cube(&self, queue: &wgpu::Queue, cube: SystemCube) {
        queue.write_buffer(&self.buffers.system_cube, 0, bytemuck::bytes_of(&cube));
    }

    /// Records the box of the particles as they are now into
    /// `buffers.bounds` (the build's first phase, alone; a parallel run's
    /// redraw reads it).
    pub fn encode_bounds(&self, encoder: &mut wgpu::CommandEncoder) {
        self.phases.bbox.encode(encoder, None);
    }

    /// Records one force evaluation: after it, the state is in key order and
    /// `acc_pot` holds every particle's acceleration and potential. With
    /// the acceleration MAC, the groups take |a_old| from
    /// `Velocity::last_acc`: a run's kick_drift keeps it, other callers
    /// `encode_remember` between evaluations.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        mut timer: Option<&mut PhaseTimer>,
    ) {
        self.encode_build(device, encoder, timer.as_deref_mut());
        self.phases.walk.encode(encoder, timer);
    }

    /// `encode` up to the walk: a build and its group boxes.
    fn encode_build(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        mut timer: Option<&mut PhaseTimer>,
    ) {
        self.phases.bbox.encode(encoder, timer.as_deref_mut());
        self.phases
            .keys
            .encode(device, encoder, timer.as_deref_mut());
        let deepest = self.deepest.load(Ordering::Relaxed);
        self.built_deepest.store(deepest, Ordering::Relaxed);
        // Cells down to level `deepest` are told apart by the key's top
        // 3 deepest bits: within a deepest cell (a leaf, summed directly)
        // the particles' order does not matter, so lower digits go unsorted
        // (at 2^20, 2 of 8 passes).
        let unused_key_bits = KEY_BITS.saturating_sub(3 * deepest);
        self.sort
            .encode_high_bits(encoder, unused_key_bits, timer.as_deref_mut());
        self.phases
            .reorder
            .encode(device, encoder, timer.as_deref_mut());
        self.phases
            .build
            .encode(encoder, deepest, timer.as_deref_mut());
        self.phases
            .properties
            .encode(encoder, deepest, timer.as_deref_mut());
        self.phases.groups.encode(encoder, timer);
        self.on_this_tree.store(1, Ordering::Relaxed);
    }

    /// Builds the tree every `k` force evaluations from now on (1: every
    /// evaluation) and refits it in between (`encode_scheduled`).
    pub fn set_rebuild_every(&self, k: u32) {
        self.rebuild_every.store(k.max(1), Ordering::Relaxed);
    }

    /// The next `encode_scheduled` builds the tree anew.
    pub fn rebuild_next(&self) {
        self.on_this_tree.store(u32::MAX, Ordering::Relaxed);
    }

    /// Records the next force evaluation of a run: a full build when the
    /// tree has served `rebuild_every` evaluations (or there is none yet),
    /// a refit otherwise.
    pub fn encode_scheduled(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        mut timer: Option<&mut PhaseTimer>,
    ) {
        self.encode_scheduled_groups(device, encoder, timer.as_deref_mut());
        self.phases.walk.encode(encoder, timer);
    }

    /// `encode_scheduled` up to the walk (build or refit, group boxes),
    /// which `encode_walk` records: block steps (`run::block`) choose the
    /// groups that walk in between.
    pub fn encode_scheduled_groups(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        let used = self.on_this_tree.load(Ordering::Relaxed);
        if used >= self.rebuild_every.load(Ordering::Relaxed) {
            self.encode_build(device, encoder, timer);
        } else {
            self.encode_refit_groups(encoder, timer);
            self.on_this_tree.store(used + 1, Ordering::Relaxed);
        }
    }

    /// Sizes the walk anew for the groups there are now: after groups were
    /// added past the groups phase (`cluster::spanning` splits some into
    /// one-particle groups), the walk must cover them too.
    pub fn encode_walk_dispatch(&self, encoder: &mut wgpu::CommandEncoder) {
        self.phases.groups.encode_walk_dispatch(encoder);
    }

    /// The walk of the groups in the list (after `encode_scheduled_groups`).
    pub fn encode_walk(&self, encoder: &mut wgpu::CommandEncoder, timer: Option<&mut PhaseTimer>) {
        self.phases.walk.encode(encoder, timer);
    }

    /// Records a force evaluation on the tree of the last `encode` (a
    /// refit, Bonsai's steps between rebuilds): the particles keep their
    /// order and cells, and only the moments, tight boxes and opening radii
    /// (`properties`), the group boxes and the walk are recomputed at the
    /// current positions. The MAC stays safe, since it works from tight
    /// boxes; what a stale tree costs is more interactions as cells spread.
    /// Only valid after an `encode` of this solver, hence private:
    /// `encode_scheduled` is the way in. Records the phases up to the walk.
    fn encode_refit_groups(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        mut timer: Option<&mut PhaseTimer>,
    ) {
        let deepest = self.built_deepest.load(Ordering::Relaxed);
        self.phases
            .properties
            .encode(encoder, deepest, timer.as_deref_mut());
        self.phases.groups.encode_refit(encoder, timer);
    }

    /// Builds from now on record levels 0..=`deepest` only (at most
    /// MAX_DEPTH, the default): cells at `deepest` stay leaves. Each level
    /// left out saves two empty dispatches (about 7 µs each on an H100).
    /// Forces stay exact whatever `deepest` is; a build that wanted to go
    /// deeper says so in its counters' `depth` (`fit_levels`).
    pub fn set_deepest_level(&self, queue: &wgpu::Queue, deepest: u32) {
        let deepest = deepest.clamp(1, MAX_DEPTH);
        if self.deepest.swap(deepest, Ordering::Relaxed) != deepest {
            queue.write_buffer(
                &self.buffers.levels,
                0,
                &build::level_slots(deepest, self.buffers.max_workgroups),
            );
        }
    }

    /// The deepest level the next build records (`set_deepest_level`).
    pub fn deepest_level(&self) -> u32 {
        self.deepest.load(Ordering::Relaxed)
    }

    /// Fits the recorded levels to the last build's `depth` (from
    /// `counters`): LEVEL_MARGIN levels beyond it, or every level when
    /// that build wanted more than it was given.
    pub fn fit_levels(&self, queue: &wgpu::Queue, depth: u32) {
        let recorded = self.built_deepest.load(Ordering::Relaxed);
        let deepest = if depth == 0 || depth > recorded {
            MAX_DEPTH
        } else {
            depth + LEVEL_MARGIN
        };
        self.set_deepest_level(queue, deepest);
    }

    /// Changes θ, the softening and the MAC of later evaluations (start
    /// them with `encode_fresh`).
    pub fn set_config(&self, queue: &wgpu::Queue, config: TreeConfig) {
        self.alpha_bits
            .store(config.alpha.to_bits(), Ordering::Relaxed);
        let b = &self.buffers;
        let p = tree_params(
            b.state.n,
            [
                b.cell_capacity,
                b.group_capacity,
                b.walk_workgroups,
                b.walk_share_cap,
            ],
            config,
        );
        queue.write_buffer(&b.params, 0, bytemuck::bytes_of(&p));
    }

    /// GPU memory of the tree code and the particle state, in bytes.
    pub fn gpu_bytes(&self) -> u64 {
        self.buffers.bytes(self.sort.scratch_bytes())
    }

    /// The build's counters (cells, groups, depth, overflow) — a read-back.
    pub async fn counters(&self, ctx: &GpuContext) -> Result<TreeCounters> {
        Ok(read_vec::<TreeCounters>(&ctx.device, &ctx.queue, &self.buffers.counters).await?[0])
    }

    /// Which walk this solver runs (portable or subgroup fast path).
    pub fn walk_path(&self) -> walk::WalkPath {
        self.phases.walk.path
    }

    /// The mean particle-particle and particle-cell interactions per
    /// particle of the last walk, summed as the counts are read back a
    /// piece at a time (a gigabyte of counts at 10^8 particles is neither
    /// copied nor held).
    pub async fn mean_interactions(&self, ctx: &GpuContext) -> Result<(f64, f64)> {
        let n = self.buffers.state.n as u64;
        let size = std::mem::size_of::<InteractionCount>() as u64;
        let (mut pp, mut pc) = (0u64, 0u64);
        read_pieces(
            &ctx.device,
            &ctx.queue,
            &[(&self.buffers.interactions, size)],
            n,
            1 << 20,
            |_, b| {
                // Summed on every core (a whole step's counts at 2^27
                // took one core 0.4 s).
                let counts: &[InteractionCount] = bytemuck::cast_slice(b[0]);
                for (a, c) in crate::state::parallel::map_chunks(counts.len(), |r| {
                    counts[r]
                        .iter()
                        .fold((0u64, 0u64), |(a, c), k| (a + k.pp as u64, c + k.pc as u64))
                }) {
                    pp += a;
                    pc += c;
                }
                true
            },
        )
        .await?;
        let n = n.max(1) as f64;
        Ok((pp as f64 / n, pc as f64 / n))
    }

    /// Per-particle interaction counts of the last walk — a read-back.
    pub async fn interaction_counts(&self, ctx: &GpuContext) -> Result<Vec<InteractionCount>> {
        let n = self.buffers.state.n as u64;
        let size = std::mem::size_of::<InteractionCount>() as u64;
        // Copied into place on every core: a redraw reads 2^24 a rank.
        // Pieces as a state's read-back has them (one in the browser).
        let mut counts: Vec<InteractionCount> = bytemuck::zeroed_vec(n as usize);
        read_pieces(
            &ctx.device,
            &ctx.queue,
            &[(&self.buffers.interactions, size)],
            n,
            crate::state::particles::READ_PIECE,
            |first, b| {
                let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut counts[first as usize..]);
                crate::state::parallel::copy(&mut dst[..b[0].len()], b[0]);
                true
            },
        )
        .await?;
        Ok(counts)
    }
}
