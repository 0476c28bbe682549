// One particle's interaction list, traced on the tree the last walk used
// (src/tree/trace.rs): which cells its group took as multipoles and which
// leaves it summed particle by particle. The walk itself keeps no lists
// (it sums them as it goes), so this walks the group's tree again with
// the walk's own test (`accepts`, `box_distance2` and the MAC's data, as
// in walk.wgsl), depth-first in one invocation: the same sets, in another
// order. Three passes: the particle's slot in key order (from its upload
// index), its group, the walk.

@group(0) @binding(0) var<uniform> params: TraceParams;
@group(0) @binding(1) var<storage, read> id: array<u32>;
@group(0) @binding(2) var<storage, read> group_boxes: array<GroupBox>;
@group(0) @binding(3) var<storage, read> cells: array<TreeCell>;
@group(0) @binding(4) var<storage, read> props: array<CellProps>;
@group(0) @binding(5) var<storage, read> counter_words: array<u32>;
// list[0]: entries; then cell | kind << TRACE_KIND_SHIFT.
@group(0) @binding(6) var<storage, read_write> list: array<u32>;
@group(0) @binding(7) var<storage, read_write> result: TraceResult;

// Pass 1: the particle's slot in the tree's order.
@compute @workgroup_size(WORKGROUP_SIZE)
fn find_slot(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let s = flat_index(wid, nwg, lid);
    if (s < params.n && id[s] == params.particle) {
        result.slot = s;
        result.found = 1u;
    }
}

// Pass 2: the group that holds the slot.
@compute @workgroup_size(WORKGROUP_SIZE)
fn find_group(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let g = flat_index(wid, nwg, lid);
    if (result.found == 0u || g >= counter_words[COUNTER_GROUP_COUNT]) {
        return;
    }
    let grp = group_boxes[g];
    if (grp.start <= result.slot && result.slot < grp.start + grp.count) {
        result.group = g;
        result.found = 2u;
    }
}

// walk.wgsl's MAC on a cell c.
fn accepts(c: u32, d2: f32, open_scale: f32, accel_tol: f32) -> bool {
    return mac_accepts(props[c].quad_diag.w, props[c].quad_off.w, d2, open_scale, accel_tol, params.alpha);
}

fn push(entry: u32) {
    let k = list[0];
    if (k < params.capacity) {
        list[1u + k] = entry;
        list[0] = k + 1u;
    } else {
        result.truncated = 1u;
    }
}

// Pass 3 (one invocation): the group's walk, depth first.
@compute @workgroup_size(1)
fn walk_group() {
    list[0] = 0u;
    result.accepted = 0u;
    result.leaves = 0u;
    result.direct = 0u;
    if (result.found != 2u || counter_words[COUNTER_CELL_COUNT] == 0u) {
        return;
    }
    let grp = group_boxes[result.group];
    result.group_lo = grp.lo;
    result.group_hi = grp.hi;
    result.group_count = grp.count;
    var stack: array<u32, TRACE_STACK>;
    var top = 1u;
    stack[0] = 0u;
    while (top > 0u) {
        top -= 1u;
        let c = stack[top];
        let cell = cells[c];
        if (cell.count == 0u) {
            continue;
        }
        let d2 = box_distance2(props[c].com_mass.xyz, grp.lo.xyz, grp.hi.xyz);
        if (accepts(c, d2, grp.open_scale, grp.accel_tol)) {
            push(c | (TRACE_ACCEPTED << TRACE_KIND_SHIFT));
            result.accepted += 1u;
        } else if (cell.child_count == 0u) {
            push(c | (TRACE_LEAF << TRACE_KIND_SHIFT));
            result.leaves += 1u;
            result.direct += cell.count;
        } else if (top + cell.child_count <= TRACE_STACK) {
            // Children in reverse, so the first is walked first.
            for (var ch = cell.child_count; ch > 0u; ch--) {
                stack[top] = cell.first_child + ch - 1u;
                top += 1u;
            }
        } else {
            // Deeper than any octree of MAX_DEPTH levels: never reached.
            result.truncated = 1u;
        }
    }
}
