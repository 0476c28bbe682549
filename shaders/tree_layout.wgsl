// Buffer layouts of the tree code, shared by its shaders (bbox, keys,
// reorder, build, properties, groups, walk). Mirrors src/tree/layout.rs;
// tests/gpu_layout.rs compares the two. Constants (MAX_DEPTH, NLEAF, NCRIT,
// ...) are prepended from Rust by src/tree/mod.rs.

// Axis-aligned box of all particles.
struct Bounds {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

// The cube a parallel run's domains were drawn in (side 0: none, a run
// on one GPU).
struct SystemCube {
    lo: vec3<f32>,
    side: f32,
}

// The boxes of a tree build (shaders/bbox.wgsl writes them).
struct TreeBounds {
    // The particles' own box: the keys quantise in its cube.
    own: Bounds,
    // The whole system's, against which a walk group counts as wide (only
    // its cube_side is read): the particles' own, or in a parallel run the
    // domains' cube if larger, so that a rank splits the groups one GPU
    // would split.
    system: Bounds,
}

// Parameters of one tree force evaluation.
struct TreeParams {
    n: u32,
    // Capacity of the cell array.
    cell_capacity: u32,
    // Plummer softening squared.
    eps2: f32,
    // 1/θ of the opening criterion.
    inv_theta: f32,
    // Capacity of the group arrays (cells + N/NCRIT + 1: never exceeded).
    group_capacity: u32,
    // Most persistent walk workgroups (each has a stack of set-aside nodes).
    walk_workgroups: u32,
    // Tolerance alpha of the acceleration MAC; 0: Bonsai's opening angle.
    alpha: f32,
    // Most groups one walk workgroup takes per dispatch (0: no limit).
    walk_share_cap: u32,
}

// Per-level parameter, bound with a dynamic offset (one 256-byte slot per
// level) so each level's dispatch knows its depth.
struct LevelParams {
    level: u32,
    // The deepest level this build records: its cells stay leaves.
    deepest: u32,
    // Most workgroups per dimension of a dispatch (the device's limit): the
    // indirect sizes the build writes stop there, the kernels stride on.
    max_workgroups: u32,
    _pad: u32,
}

// One octree cell: a contiguous range of key-sorted particles, and for an
// internal node the contiguous range of its children in the cell array.
struct TreeCell {
    start: u32,
    count: u32,
    // Index of the first child; meaningless for a leaf.
    first_child: u32,
    // Number of children, 0 for a leaf.
    child_count: u32,
}

// Multipole and opening data of one cell (its tight box is a Bounds in
// cell_boxes, which only the properties read).
struct CellProps {
    // Centre of mass and total mass.
    com_mass: vec4<f32>,
    // Second moments about the centre of mass: xx, yy, zz, and the squared
    // opening radius in w: (l/θ + δ)² (opening angle MAC) or b² (the
    // acceleration MAC: b bounds the particles' distance from the com).
    quad_diag: vec4<f32>,
    // Second moments xy, xz, yz, and M b^3 in w for the acceleration MAC
    // (0 with the opening angle's).
    quad_off: vec4<f32>,
}

// Counters written by the build and read by later phases.
struct TreeCounters {
    cell_count: atomic<u32>,
    group_count: atomic<u32>,
    // Set when a cell could not be split for lack of space (it then stays
    // a leaf with all its particles: forces stay exact, only slower).
    overflow: atomic<u32>,
    // Deepest level that holds cells.
    depth: atomic<u32>,
    // Groups formed by the build (group_count may grow when the groups
    // phase splits oversized groups).
    groups_built: u32,
    // The next group a walk workgroup takes (the walk's workgroups are
    // persistent: each takes groups until none is left).
    next_group: atomic<u32>,
    // Level l's cells are level_start[l] .. level_start[l + 1] (an end
    // below its start means an empty level).
    level_start: array<atomic<u32>, LEVEL_SLOTS>,
    // Nonzero while no particle needs forces (a block-step sub-step on
    // which no step ends, block.wgsl): properties, group boxes and walk
    // that follow do nothing.
    idle: u32,
    // Cell property passes that ran (builds and refits), counted at the
    // root.
    property_passes: u32,
}

// Workgroup counts of the indirect dispatches, written by the build. A
// buffer apart from TreeCounters because a dispatch may not read its
// arguments from a buffer it also binds for writing; there are two of them
// (levels alternate between them) for the same reason.
struct TreeDispatch {
    // level_args[l]: one invocation per cell of level l (valid in the
    // buffer of l's parity).
    level_args: array<LevelArgs, LEVEL_SLOTS>,
    // GROUP_BOX_LANES invocations per group (group_box_args).
    group_args: DispatchArgs,
    // The persistent walk workgroups: min(groups, walk_workgroups).
    walk_args: DispatchArgs,
}

struct DispatchArgs {
    x: u32,
    y: u32,
    z: u32,
}

// DispatchArgs whose x grows by atomicMax during the build.
struct LevelArgs {
    x: atomic<u32>,
    y: u32,
    z: u32,
}

// A group: up to NCRIT consecutive particles walked together.
struct Group {
    start: u32,
    count: u32,
}

// A group with its bounding box, as the walk reads it.
struct GroupBox {
    lo: vec4<f32>,
    hi: vec4<f32>,
    start: u32,
    count: u32,
    // Factor on the cells' squared opening radii for this group.
    open_scale: f32,
    // alpha |a_old|: the acceleration error the group's particles accept
    // from one cell (3e38: none, the radii decide alone).
    accel_tol: f32,
}

// Per-particle interaction counts of the walk.
struct InteractionCount {
    // Particle-particle interactions.
    pp: u32,
    // Particle-cell interactions.
    pc: u32,
}

// What the overlay draws (src/tree/overlay.rs).
struct OverlayParams {
    // Cells of levels 0..=max_level are drawn.
    max_level: u32,
    // 1: a traced list's entries instead of every cell.
    from_list: u32,
    // Opacity of level 0's lines.
    alpha: f32,
    _pad: u32,
}

// Which particle the trace follows (src/tree/trace.rs).
struct TraceParams {
    // Upload index of the particle.
    particle: u32,
    n: u32,
    // Entries the list holds.
    capacity: u32,
    // Tolerance alpha of the acceleration MAC (0: opening angle).
    alpha: f32,
}

// What a trace found.
struct TraceResult {
    slot: u32,
    // 1: the slot was found; 2: its group too.
    found: u32,
    group: u32,
    // The list ran out of room.
    truncated: u32,
    // Cells taken as multipoles, leaves summed directly, their particles.
    accepted: u32,
    leaves: u32,
    direct: u32,
    group_count: u32,
    group_lo: vec4<f32>,
    group_hi: vec4<f32>,
}

// --- parallel runs: local essential trees (src/cluster) ---

// One of the boxes a rank's domain shows the others: the box of a run of
// its walk groups and their loosest tolerances (largest open_scale,
// smallest accel_tol), so a cell every box of the domain takes as a
// multipole is taken by each of its groups; and the particles of those
// groups.
struct DomainSummary {
    lo: vec4<f32>,
    hi: vec4<f32>,
    open_scale: f32,
    accel_tol: f32,
    groups: u32,
    particles: u32,
}

// How a rank picks its summary (src/cluster/summary.rs): the boxes it may
// use, and how many other domains' summaries of the last evaluation it
// holds (their particles weigh the cells that would span them).
struct SummaryParams {
    other_domains: u32,
    coarse_boxes: u32,
    fine_boxes: u32,
    _pad: u32,
}

// What a redraw of the domains on the GPU needs of the host
// (src/cluster/domain_keys.rs, migration.rs): the curve's frame (cell
// (p - lo) * scale on each axis), this rank's count, the particles per
// candidate cut, and the number of cuts (ranks - 1).
struct RedrawParams {
    lo: vec4<f32>,
    scale: f32,
    n: u32,
    stride: u32,
    cuts: u32,
    rank: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// A candidate cut of the curve in a redraw: the Hilbert key of the first
// of `stride` consecutive particles (x = high 32 bits), carrying the work
// of all.
struct CutCandidate {
    key: vec2<u32>,
    work: f32,
    _pad: u32,
}

// One pass of the cut of local essential trees: the local cells
// begin..end (one level) tested against one domain (its boxes, with a
// safety margin, are `targets[domain * DOMAIN_BOXES ..]`), with the
// capacities of the output.
struct LetPass {
    begin: u32,
    end: u32,
    // Which of the evaluation's trees this pass cuts.
    domain: u32,
    // 1 on the root's level: the pass starts the domain's tree.
    root: u32,
    cell_capacity: u32,
    particle_capacity: u32,
    _pad0: u32,
    _pad1: u32,
}

// A cell of a local essential tree with its moments, indices relative to
// its own tree (root 0): an opened node lists its children, an opened
// leaf its particles, a cell the domain takes as a multipole neither.
struct LetCell {
    cell: TreeCell,
    props: CellProps,
}

// The output's counters: cells and particles taken, whether any did not
// fit, and where each domain's tree begins (cells, particles).
struct LetCounters {
    cells: atomic<u32>,
    particles: atomic<u32>,
    overflow: atomic<u32>,
    _pad: u32,
    begins: array<vec2<u32>>,
}
