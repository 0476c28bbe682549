// Block (hierarchical) time steps for the tree code: kick-drift-kick with
// per-particle steps dt_max / 2^k, k = 0..=L (GADGET-2, GOTHIC). One
// largest step is 2^L sub-steps of dt_max / 2^L; at sub-step s a particle
// of level k is active when s is a multiple of 2^(L-k). Per largest step:
//   open                    (s = 0: every particle) level from |a|, half kick
//   for s = 1 ..= 2^L:
//     drift                 every particle, x += v dt_min (v half-kicked);
//                           whether any step ends at s (from the deepest
//                           level) sets the tree's idle flag
//     tree build or refit, group boxes (src/tree; idle: the build alone)
//     select_groups, settle_groups   (s < 2^L) only groups with an active
//                           particle stay in the walk's list, trimmed to
//                           their first..last active particle
//     walk                  (src/tree) forces of the active groups
//     kick                  active particles: closing half kick; below 2^L
//                           a new level and the opening half kick; the
//                           deepest level anew
// A sub-step on which no particle's step ends (with every particle at
// level k < L, all but every 2^(L-k)-th) costs the drift and empty
// launches: its positions still move, so the next busy sub-step's refit
// sees them all, and every result is the one the work would have given.
// A particle's level travels in the 5 lowest mantissa bits of
// Velocity::last_acc (|a| of its last force, which the acceleration MAC
// reads as |a_old|; a relative change below 2^-18): the tree's reorder
// moves it with the particle, and checkpoints keep it, at no cost.
// Driven by src/run/block.rs.

@group(0) @binding(0) var<uniform> params: BlockParams;
@group(0) @binding(1) var<storage, read_write> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> vel: array<Velocity>;
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;
@group(0) @binding(4) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(5) var<storage, read_write> group_boxes: array<GroupBox>;
@group(0) @binding(6) var<storage, read_write> active_boxes: array<GroupBox>;
@group(0) @binding(7) var<storage, read_write> block: BlockCounters;
@group(0) @binding(8) var<storage, read_write> dispatch: TreeDispatch;

// The level's bits in last_acc (LEVEL_BITS from src/run/block.rs).
const LEVEL_MASK: u32 = (1u << LEVEL_BITS) - 1u;

fn level_of(v: Velocity) -> u32 {
    return bitcast<u32>(v.last_acc) & LEVEL_MASK;
}

// |a| with level k in its lowest bits (0 stays 0: no force, level 0).
fn with_level(a: f32, k: u32) -> f32 {
    if (a == 0.0) {
        return 0.0;
    }
    return bitcast<f32>((bitcast<u32>(a) & ~LEVEL_MASK) | k);
}

// Step dt_max / 2^k (exact in f32).
fn step_of(k: u32) -> f32 {
    return params.dt_max * exp2(-f32(k));
}

// Whether level k's step ends (and the next begins) at this sub-step.
fn is_active(k: u32) -> bool {
    let period = 1u << (params.levels - min(k, params.levels));
    return params.substep % period == 0u;
}

// The level the criterion dt = sqrt(2 eta eps / |a|) asks for: the largest
// step dt_max / 2^k not above it, within 0..=L.
fn wanted_level(a: f32) -> u32 {
    if (a <= 0.0) {
        return 0u;
    }
    let dt = sqrt(params.two_eta_eps / a);
    var k = 0u;
    while (k < params.levels && step_of(k) > dt) {
        k++;
    }
    return k;
}

// The deepest level of the particles of this workgroup, then of all
// (one global atomic per workgroup).
var<workgroup> workgroup_deepest: atomic<u32>;
// Whether this sub-step is idle, read once for the workgroup.
var<workgroup> workgroup_idle: u32;

fn keep_deepest(lid: u32, k: u32, is_particle: bool) {
    if (is_particle) {
        atomicMax(&workgroup_deepest, k);
    }
    workgroupBarrier();
    if (lid == 0u) {
        atomicMax(&block.deepest, atomicLoad(&workgroup_deepest));
    }
}

// The smallest level whose grid holds this sub-step: a particle may move
// to a larger step only where that step's grid is reached.
fn grid_level() -> u32 {
    let s = params.substep;
    if (s == 0u || s >= (1u << params.levels)) {
        return 0u;
    }
    return params.levels - countTrailingZeros(s);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn open(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if (lid == 0u) {
        atomicStore(&workgroup_deepest, 0u);
    }
    workgroupBarrier();
    let i = flat_index(wid, nwg, lid);
    var level = 0u;
    if (i < params.n) {
        let a = acc_pot[i].acc;
        let a_len = length(a);
        let k = wanted_level(a_len);
        let v = vel[i].vel + (0.5 * step_of(k)) * a;
        vel[i] = Velocity(v, with_level(a_len, k));
        level = level_of(vel[i]);
    }
    keep_deepest(lid, level, i < params.n);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn drift(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wid, nwg, lid);
    if (i == 0u) {
        // This sub-step's selection starts from an empty list.
        atomicStore(&block.active_groups, 0u);
        // Steps end here only on the grid of the deepest level (every
        // level's grid holds the deeper levels' grids, and the last
        // sub-step is on all): the kicks since the last busy sub-step
        // changed no level.
        let deepest = min(atomicLoad(&block.deepest), params.levels);
        let idle = params.substep % (1u << (params.levels - deepest)) != 0u;
        counters.idle = u32(idle);
        if (idle) {
            block.idle_substeps += 1u;
        } else {
            block.busy_substeps += 1u;
            // This sub-step's kicks find the deepest level anew.
            atomicStore(&block.deepest, 0u);
        }
    }
    if (i >= params.n) {
        return;
    }
    pos_mass[i].pos += step_of(params.levels) * vel[i].vel;
}

// Every group with an active particle is appended to active_boxes (in any
// order: each group's forces depend on its own box alone), trimmed to the
// run of its particles from the first active one to the last: groups are
// cut in key order, so on a fine sub-step a group often holds one or two
// active particles among 64, and a box around those alone opens far fewer
// cells than the whole group's (the walk's forces for the inactive ones
// inside the run are computed and never used). The trimmed group's
// tolerance is the one its own particles would give, alpha times their
// smallest |a_old| (the whole group's scaled by the two minima: the same
// number as the groups phase's for a group of just those particles, up to
// rounding); a group still on the radii alone (accel_tol = 3e38) keeps them.
@compute @workgroup_size(WORKGROUP_SIZE)
fn select_groups(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_index(wid, nwg, lid);
    if (counters.idle != 0u || g >= atomicLoad(&counters.group_count)) {
        return;
    }
    let b = group_boxes[g];
    let end = b.start + b.count;
    var first = end;
    var last = b.start;
    var a_all = 3.0e38;
    var n_active = 0u;
    for (var j = b.start; j < end; j++) {
        let v = vel[j];
        a_all = min(a_all, v.last_acc);
        if (is_active(level_of(v))) {
            first = min(first, j);
            last = j;
            n_active++;
        }
    }
    if (first == end) {
        return;
    }
    atomicAdd(&block.walked_particles, last + 1u - first);
    atomicAdd(&block.active_particles, n_active);
    var lo = vec3<f32>(3.0e38);
    var hi = vec3<f32>(-3.0e38);
    var a_run = 3.0e38;
    for (var j = first; j <= last; j++) {
        let p = pos_mass[j].pos;
        lo = min(lo, p);
        hi = max(hi, p);
        a_run = min(a_run, vel[j].last_acc);
    }
    var tol = b.accel_tol;
    if (tol < 3.0e38 && a_all > 0.0) {
        tol *= a_run / a_all;
    }
    active_boxes[atomicAdd(&block.active_groups, 1u)] =
        GroupBox(vec4<f32>(lo, 0.0), vec4<f32>(hi, 0.0), first, last + 1u - first, b.open_scale, tol);
}

// The active groups become the walk's list (the next refit rebuilds the
// full list from the build's groups, so nothing is lost).
@compute @workgroup_size(WORKGROUP_SIZE)
fn settle_groups(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_index(wid, nwg, lid);
    let count = atomicLoad(&block.active_groups);
    if (g < count) {
        group_boxes[g] = active_boxes[g];
    }
    if (g == 0u) {
        atomicStore(&counters.group_count, count);
        atomicStore(&counters.next_group, 0u);
        dispatch.walk_args = DispatchArgs(max(min(count, params.walk_workgroups), 1u), 1u, 1u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn kick(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if (lid == 0u) {
        workgroup_idle = counters.idle;
        atomicStore(&workgroup_deepest, 0u);
    }
    if (workgroupUniformLoad(&workgroup_idle) != 0u) {
        // No step ends here: no level changes either.
        return;
    }
    let i = flat_index(wid, nwg, lid);
    var level = 0u;
    if (i < params.n) {
        level = kick_particle(i);
    }
    keep_deepest(lid, level, i < params.n);
}

// Particle i's kick where its step ends; its level after.
fn kick_particle(i: u32) -> u32 {
    let old = vel[i];
    let k = level_of(old);
    if (!is_active(k)) {
        return k;
    }
    let a = acc_pot[i].acc;
    let a_len = length(a);
    var v = old.vel + (0.5 * step_of(k)) * a;
    var next = k;
    if (params.substep < (1u << params.levels)) {
        next = max(wanted_level(a_len), grid_level());
        v += (0.5 * step_of(next)) * a;
    }
    let kicked = Velocity(v, with_level(a_len, next));
    vel[i] = kicked;
    return level_of(kicked);
}
