// Bounding boxes of the walk's particle groups, GROUP_BOX_LANES invocations
// per group built by the tree (indirect dispatch sized by the build, or a
// fixed number of workgroups striding over the groups), then
// the walk's dispatch size. A group whose box is large compared with the whole system
// (sparse outskirts, where a few particles span a big cell) would open most
// of the tree for all its particles; it is split into one-particle groups,
// appended to the list, each of which walks with a point box.
// Between rebuilds (a refit: the same tree, moved particles) the split
// groups of the last step are dropped first (restart_groups), and the
// boxes are taken again from the particles' current positions.
// With the acceleration MAC each group also gets its tolerance from the
// smallest |a_old| of its particles (`group_tolerance`), kept in the
// velocities' fourth lane by the leapfrog's kick_drift (leapfrog.wgsl), or by
// `remember_forces` for evaluations outside a run's steps.
// Driven by src/tree/groups.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> groups: array<Group>;
@group(0) @binding(3) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(4) var<storage, read_write> group_boxes: array<GroupBox>;
@group(0) @binding(5) var<storage, read> bounds: TreeBounds;
@group(0) @binding(6) var<storage, read_write> vel: array<Velocity>;
@group(0) @binding(7) var<storage, read> acc_pot: array<AccPot>;
// Bound only for walk_dispatch (group_boxes_of is dispatched from it).
@group(0) @binding(8) var<storage, read_write> dispatch: TreeDispatch;

// Each lane's part of its group's box and smallest |a_old|, combined
// within the group.
var<workgroup> lane_lo: array<vec3<f32>, WORKGROUP_SIZE>;
var<workgroup> lane_hi: array<vec3<f32>, WORKGROUP_SIZE>;
var<workgroup> lane_acc: array<f32, WORKGROUP_SIZE>;

// The groups the build made, read once by one invocation and shared, so the
// loop over tiles is uniform (barriers inside).
var<workgroup> built_groups: u32;

// Tiles of GROUP_BOXES_PER_WORKGROUP groups, workgroup w taking tiles w,
// w + W, ... of the W dispatched: a fixed W for any number of groups (the
// default; see split_cells), or W sized exactly by the build, one tile
// each (indirect).
@compute @workgroup_size(WORKGROUP_SIZE)
fn group_boxes_of(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if (lid == 0u) {
        // No group needs a box while no particle needs forces.
        built_groups = select(counters.groups_built, 0u, counters.idle != 0u);
    }
    let built = workgroupUniformLoad(&built_groups);
    for (var tile = wid.y * nwg.x + wid.x; tile * GROUP_BOXES_PER_WORKGROUP < built; tile += nwg.x * nwg.y) {
        box_of_tile_group(tile * GROUP_BOXES_PER_WORKGROUP + lid / GROUP_BOX_LANES, lid, built);
    }
}

// This invocation's lane of group `g` of a tile (g >= built: none, but the
// invocation takes part in the tile's barriers).
fn box_of_tile_group(g: u32, lid: u32, built: u32) {
    let lane = lid % GROUP_BOX_LANES;
    let is_group = g < built;
    var grp = Group(0u, 0u);
    var lo = vec3<f32>(3.0e38);
    var hi = vec3<f32>(-3.0e38);
    var a_min = 3.0e38;
    let accel = params.alpha > 0.0;
    if (is_group) {
        grp = groups[g];
        for (var j = grp.start + lane; j < grp.start + grp.count; j += GROUP_BOX_LANES) {
            let p = pos_mass[j].pos;
            lo = min(lo, p);
            hi = max(hi, p);
            if (accel) {
                a_min = min(a_min, vel[j].last_acc);
            }
        }
    }
    lane_lo[lid] = lo;
    lane_hi[lid] = hi;
    lane_acc[lid] = a_min;
    for (var s = GROUP_BOX_LANES / 2u; s > 0u; s /= 2u) {
        workgroupBarrier();
        if (lane < s) {
            lane_lo[lid] = min(lane_lo[lid], lane_lo[lid + s]);
            lane_hi[lid] = max(lane_hi[lid], lane_hi[lid + s]);
            lane_acc[lid] = min(lane_acc[lid], lane_acc[lid + s]);
        }
    }
    workgroupBarrier();
    if (is_group && lane == 0u) {
        write_group_box(g, grp, lane_lo[lid], lane_hi[lid], lane_acc[lid]);
    }
}

// Group g's box (or, for a group too large for the system, one point group
// per particle).
fn write_group_box(g: u32, grp: Group, lo: vec3<f32>, hi: vec3<f32>, a_min: f32) {
    let side = hi - lo;
    // Wide for the whole system, not for a parallel run's domain: a rank
    // splits the groups one GPU would (more groups split into points walk
    // nearer the MAC's bound, and made ranks' forces less accurate).
    let too_big = max(side.x, max(side.y, side.z)) > cube_side(bounds.system) / f32(GROUP_SPLIT_DIVISOR);
    if (too_big && grp.count > 1u && split_into_points(g, grp.start, grp.count)) {
        return;
    }
    let tol = group_tolerance(a_min);
    group_boxes[g] = GroupBox(vec4<f32>(lo, 0.0), vec4<f32>(hi, 0.0), grp.start, grp.count, tol.x, tol.y);
}

// After an evaluation outside a run's steps (acceleration MAC only): every
// particle's |a| kept as its |a_old| for the next evaluation's group
// tolerances, as kick_drift keeps it within a run.
@compute @workgroup_size(WORKGROUP_SIZE)
fn remember_forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wid, nwg, lid);
    if (i >= params.n) {
        return;
    }
    vel[i].last_acc = length(acc_pot[i].acc);
}

@compute @workgroup_size(1)
fn walk_dispatch() {
    let count = min(atomicLoad(&counters.group_count), params.group_capacity);
    atomicStore(&counters.group_count, count);
    atomicStore(&counters.next_group, 0u);
    // Persistent walk workgroups, each taking groups from next_group.
    dispatch.walk_args = DispatchArgs(max(min(count, params.walk_workgroups), 1u), 1u, 1u);
}

// A refit's start: only the groups the build made, none split off yet.
@compute @workgroup_size(1)
fn restart_groups() {
    atomicStore(&counters.group_count, counters.groups_built);
}
