//! Layouts of the tree code's GPU buffers; each struct mirrors the struct of
//! the same name in `shaders/tree_layout.wgsl` (checked by tests/gpu_layout.rs).

use bytemuck::{Pod, Zeroable};

pub const TREE_LAYOUT_WGSL: &str = include_str!("../../shaders/tree_layout.wgsl");

/// Deepest level of the octree: 63-bit keys hold 21 levels of octants.
pub const MAX_DEPTH: u32 = 21;
/// Levels 0..=MAX_DEPTH, plus one slot for the end of the deepest level.
pub const LEVEL_SLOTS: usize = MAX_DEPTH as usize + 2;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Bounds {
    pub lo: [f32; 4],
    pub hi: [f32; 4],
}

/// The cube a parallel run's domains were drawn in (side 0: none).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SystemCube {
    pub lo: [f32; 3],
    pub side: f32,
}

/// The boxes of a tree build: the particles' own and the system's
/// (`shaders/tree_layout.wgsl` says what each is for).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TreeBounds {
    pub own: Bounds,
    pub system: Bounds,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TreeParams {
    pub n: u32,
    pub cell_capacity: u32,
    /// Plummer softening squared.
    pub eps2: f32,
    /// 1/θ of the opening criterion.
    pub inv_theta: f32,
    /// Capacity of the group arrays: cells + N/NCRIT + 1, so the groups of
    /// even a build whose cells overflowed always fit.
    pub group_capacity: u32,
    /// Most persistent walk workgroups (each has a stack in `walk_stack`).
    pub walk_workgroups: u32,
    /// Tolerance α of the acceleration MAC; 0 selects Bonsai's opening
    /// angle MAC (see `TreeConfig::alpha`).
    pub alpha: f32,
    /// Most groups one walk workgroup takes per dispatch (0: no limit; see
    /// `CPU_WALK_SHARE`).
    pub walk_share_cap: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LevelParams {
    pub level: u32,
    /// The deepest level this build records (`TreeSolver::fit_levels`):
    /// its cells stay leaves.
    pub deepest: u32,
    /// Most workgroups per dimension of a dispatch (the device's limit):
    /// the indirect sizes the build writes stop there, and the kernels
    /// stride over the rest.
    pub max_workgroups: u32,
    pub _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TreeCell {
    pub start: u32,
    pub count: u32,
    pub first_child: u32,
    /// 0 for a leaf.
    pub child_count: u32,
}

/// What the walk reads of a cell (the cell's tight box, which only the
/// properties of its parent need, is a `Bounds` in an array of its own:
/// 48 bytes rather than 80 per cell keep the array within one storage
/// binding at 2^27 particles, and the walk loads less).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct CellProps {
    /// Centre of mass (xyz) and mass (w).
    pub com_mass: [f32; 4],
    /// Second moments about the centre of mass xx, yy, zz; w: the squared
    /// opening radius, (l/θ + δ)² (opening angle MAC) or b² (acceleration
    /// MAC: b bounds the particles' distance from the centre of mass).
    pub quad_diag: [f32; 4],
    /// Second moments xy, xz, yz; w: M b³ (acceleration MAC), else 0.
    pub quad_off: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct DispatchArgs {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TreeCounters {
    pub cell_count: u32,
    pub group_count: u32,
    pub overflow: u32,
    pub depth: u32,
    /// Groups formed by the build, before oversized ones are split.
    pub groups_built: u32,
    /// The next group a walk workgroup takes (the walk's workgroups are
    /// persistent: each takes groups until none is left).
    pub next_group: u32,
    /// Level l's cells are `level_start[l]..level_start[l + 1]`.
    pub level_start: [u32; LEVEL_SLOTS],
    /// Nonzero while no particle needs forces (a block-step sub-step on
    /// which no step ends, `run::block`): the properties, group boxes and
    /// walk that follow do nothing.
    pub idle: u32,
    /// Cell property passes that ran (builds and refits), counted at the
    /// root: what the tree work of a run was.
    pub property_passes: u32,
}

/// What the overlay draws (`tree::overlay`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct OverlayParams {
    /// Cells of levels 0..=max_level are drawn.
    pub max_level: u32,
    /// 1: a traced list's entries instead of every cell.
    pub from_list: u32,
    /// Opacity of level 0's lines.
    pub alpha: f32,
    pub _pad: u32,
}

/// Which particle `tree::trace` traces.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TraceParams {
    /// Upload index of the particle.
    pub particle: u32,
    pub n: u32,
    /// Entries the list holds.
    pub capacity: u32,
    /// Tolerance α of the acceleration MAC (0: opening angle).
    pub alpha: f32,
}

/// What a trace found: the particle's slot and group, the group's box and
/// size, and the list's counts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TraceResult {
    pub slot: u32,
    /// 1: the slot was found; 2: its group too.
    pub found: u32,
    pub group: u32,
    /// The list ran out of room (never for a list of cell_capacity).
    pub truncated: u32,
    /// Cells taken as multipoles.
    pub accepted: u32,
    /// Leaves whose particles were summed directly.
    pub leaves: u32,
    /// Particles summed directly (the walk's particle-particle count).
    pub direct: u32,
    pub group_count: u32,
    pub group_lo: [f32; 4],
    pub group_hi: [f32; 4],
}

/// The word offsets in `TreeCounters` of what shaders that cannot bind its
/// atomics read (`counter_words`), as WGSL constants.
pub fn counter_word_consts() -> [(&'static str, u32); 6] {
    let word = |offset: usize| (offset / 4) as u32;
    [
        (
            "COUNTER_CELL_COUNT",
            word(std::mem::offset_of!(TreeCounters, cell_count)),
        ),
        (
            "COUNTER_GROUP_COUNT",
            word(std::mem::offset_of!(TreeCounters, group_count)),
        ),
        (
            "COUNTER_OVERFLOW",
            word(std::mem::offset_of!(TreeCounters, overflow)),
        ),
        (
            "COUNTER_DEPTH",
            word(std::mem::offset_of!(TreeCounters, depth)),
        ),
        (
            "COUNTER_GROUPS_BUILT",
            word(std::mem::offset_of!(TreeCounters, groups_built)),
        ),
        (
            "COUNTER_LEVEL_START",
            word(std::mem::offset_of!(TreeCounters, level_start)),
        ),
    ]
}

/// Workgroup counts of the tree's indirect dispatches.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TreeDispatch {
    pub level_args: [DispatchArgs; LEVEL_SLOTS],
    pub group_args: DispatchArgs,
    /// The persistent walk workgroups: min(groups, walk_workgroups).
    pub walk_args: DispatchArgs,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Group {
    pub start: u32,
    pub count: u32,
}

/// A group with its bounding box, as the walk reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GroupBox {
    pub lo: [f32; 4],
    pub hi: [f32; 4],
    pub start: u32,
    pub count: u32,
    /// Factor on the cells' squared opening radii for this group.
    pub open_scale: f32,
    /// α |a_old|: the acceleration error the group's particles accept
    /// from one cell (f32::MAX: none, the radii decide alone).
    pub accel_tol: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct InteractionCount {
    pub pp: u32,
    pub pc: u32,
}

/// One of the boxes a rank's domain shows the others in a parallel run
/// (`cluster::summary`): the box of a run of its walk groups and their
/// loosest tolerances.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DomainSummary {
    pub lo: [f32; 4],
    pub hi: [f32; 4],
    /// The largest `GroupBox::open_scale` of the domain's groups.
    pub open_scale: f32,
    /// The smallest `GroupBox::accel_tol`.
    pub accel_tol: f32,
    /// 1 when the box holds any of the domain's groups, 0 for an empty
    /// box (which the cut skips).
    pub groups: u32,
    /// The particles of the box's groups.
    pub particles: u32,
}

/// How a rank picks its domain's summary (`cluster::summary`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct SummaryParams {
    /// Summaries of other domains (from the last evaluation) the picks
    /// weigh cells by: the others' particles a cell's box would span.
    pub other_domains: u32,
    /// The coarse boxes, and the fine boxes within each, the picks may
    /// use (at most `COARSE_BOXES` and `FINE_BOXES`).
    pub coarse_boxes: u32,
    pub fine_boxes: u32,
    pub _pad: u32,
}

/// What the redraw of a parallel run's domains on the GPU
/// (`cluster::domain_keys`, `cluster::migration`) needs of the host: the
/// curve's frame, this rank's count, and where its own run of the curve
/// lies among the particles sorted by destination.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RedrawParams {
    /// The global cube's low corner (xyz).
    pub lo: [f32; 4],
    /// Curve cells per unit length (`decomposition::CurveFrame`).
    pub scale: f32,
    /// Particles on this rank.
    pub n: u32,
    /// Particles per candidate of the cuts.
    pub stride: u32,
    /// Cuts of the curve: ranks − 1.
    pub cuts: u32,
    /// This rank: the redraw's sort takes destinations counted on from
    /// it, so that its own particles come first (`cluster::migration`).
    pub rank: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// A candidate cut of the curve in a redraw of the domains
/// (`cluster::decomposition`): the Hilbert key of the first of `stride`
/// consecutive particles (x = high 32 bits), carrying the work of all.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct CutCandidate {
    pub key: [u32; 2],
    pub work: f32,
    pub _pad: u32,
}

impl CutCandidate {
    pub fn new(key: u64, work: f32) -> Self {
        Self {
            key: [(key >> 32) as u32, key as u32],
            work,
            _pad: 0,
        }
    }

    pub fn key(&self) -> u64 {
        ((self.key[0] as u64) << 32) | self.key[1] as u64
    }
}

/// One pass of the cut of local essential trees: one level's cells tested
/// against one domain's boxes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct LetPass {
    pub begin: u32,
    pub end: u32,
    pub domain: u32,
    pub root: u32,
    pub cell_capacity: u32,
    pub particle_capacity: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// A cell of a local essential tree with its moments (indices relative to
/// its own tree, root 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LetCell {
    pub cell: TreeCell,
    pub props: CellProps,
}

/// The fixed head of the LET output's counters (`begins` follows: a
/// `[u32; 2]` of cells and particles for each domain, and one for the end).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct LetCounters {
    pub cells: u32,
    pub particles: u32,
    pub overflow: u32,
    pub _pad: u32,
}
