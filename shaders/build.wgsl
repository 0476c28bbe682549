// Level-by-level sparse octree build on key-sorted particles (Bonsai 2012,
// §4.3.1). Every cell is a contiguous range of particles sharing a key
// prefix. Level l's cells are split into their non-empty children, found
// as the boundaries of the octant digit at level l+1 (binary searches in the
// sorted keys); children are appended contiguously after one atomicAdd on
// the cell counter (stream compaction), so a node needs only its first child
// and child count. Cells with <= NLEAF particles, or at MAX_DEPTH, are
// leaves. Groups for the walk (<= NCRIT particles) are formed from the first
// cells with <= NCRIT particles on each path from the root, consecutive
// siblings packed together up to NCRIT.
// Dispatches: init_tree; then per level l: split_cells (indirect,
// dispatch.level_args[l]) and finish_level (one thread: writes level l+1's range and
// dispatch size); finally finish_groups. Driven by src/tree/build.rs.

@group(0) @binding(0) var<uniform> level_params: LevelParams;
@group(0) @binding(1) var<uniform> params: TreeParams;
@group(0) @binding(2) var<storage, read> keys: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> cells: array<TreeCell>;
@group(0) @binding(4) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(5) var<storage, read_write> groups: array<Group>;
// Bound only for init_tree, finish_level and finish_groups (split_cells is
// dispatched from it).
@group(0) @binding(6) var<storage, read_write> dispatch: TreeDispatch;

fn push_group(start: u32, count: u32) {
    let g = atomicAdd(&counters.group_count, 1u);
    if (g < params.cell_capacity) {
        groups[g] = Group(start, count);
    }
}

// A cell that stays a leaf with more than NCRIT particles (only at
// MAX_DEPTH or after an overflow) is walked as several groups.
fn push_groups_of_leaf(cell: TreeCell) {
    for (var s = 0u; s < cell.count; s += NCRIT) {
        push_group(cell.start + s, min(NCRIT, cell.count - s));
    }
}

@compute @workgroup_size(1)
fn init_tree() {
    cells[0] = TreeCell(0u, params.n, 0u, 0u);
    atomicStore(&counters.cell_count, 1u);
    atomicStore(&counters.group_count, 0u);
    atomicStore(&counters.overflow, 0u);
    atomicStore(&counters.depth, 0u);
    counters.groups_built = 0u;
    for (var l = 0u; l < LEVEL_SLOTS; l++) {
        counters.level_start[l] = 1u;
        dispatch.level_args[l] = DispatchArgs(0u, 1u, 1u);
    }
    counters.level_start[0] = 0u;
    dispatch.level_args[0] = DispatchArgs(1u, 1u, 1u);
    dispatch.group_args = DispatchArgs(0u, 1u, 1u);
    if (params.n <= NCRIT) {
        push_group(0u, params.n);
    }
}

// First index in [lo, hi) whose octant at `level` is >= `octant`.
fn lower_bound(lo: u32, hi: u32, octant: u32, level: u32) -> u32 {
    var a = lo;
    var b = hi;
    while (a < b) {
        let mid = (a + b) / 2u;
        if (key_octant(keys[mid], level) < octant) {
            a = mid + 1u;
        } else {
            b = mid;
        }
    }
    return a;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn split_cells(@builtin(global_invocation_id) gid: vec3<u32>) {
    let level = level_params.level;
    let c = counters.level_start[level] + gid.x;
    if (c >= counters.level_start[level + 1u]) {
        return;
    }
    let cell = cells[c];
    if (cell.count <= NLEAF || level >= MAX_DEPTH) {
        if (cell.count > NCRIT) {
            push_groups_of_leaf(cell);
        }
        return;
    }
    var bound: array<u32, 9>;
    bound[0] = cell.start;
    bound[8] = cell.start + cell.count;
    var children = 0u;
    for (var o = 1u; o < 8u; o++) {
        bound[o] = lower_bound(bound[o - 1u], bound[8], o, level + 1u);
    }
    for (var o = 0u; o < 8u; o++) {
        children += select(0u, 1u, bound[o + 1u] > bound[o]);
    }
    let first = atomicAdd(&counters.cell_count, children);
    if (first + children > params.cell_capacity) {
        // No room: the cell stays a leaf holding all its particles, which the
        // walk then sums directly (exact, only slower). Slots below the
        // capacity that this allocation reserved become empty cells.
        atomicStore(&counters.overflow, 1u);
        for (var k = first; k < params.cell_capacity; k++) {
            cells[k] = TreeCell(0u, 0u, 0u, 0u);
        }
        if (cell.count > NCRIT) {
            push_groups_of_leaf(cell);
        }
        return;
    }
    var k = first;
    // Groups: consecutive children with <= NCRIT particles are packed
    // greedily into runs of <= NCRIT (siblings are neighbours in space, so
    // the run's box stays compact), which keeps walk workgroups full.
    var run_start = cell.start;
    var run_count = 0u;
    for (var o = 0u; o < 8u; o++) {
        let count = bound[o + 1u] - bound[o];
        if (count > 0u) {
            cells[k] = TreeCell(bound[o], count, 0u, 0u);
            k++;
            if (cell.count > NCRIT) {
                if (count > NCRIT || run_count + count > NCRIT) {
                    if (run_count > 0u) {
                        push_group(run_start, run_count);
                    }
                    run_count = 0u;
                }
                if (count <= NCRIT) {
                    if (run_count == 0u) {
                        run_start = bound[o];
                    }
                    run_count += count;
                }
            }
        }
    }
    if (run_count > 0u) {
        push_group(run_start, run_count);
    }
    cells[c].first_child = first;
    cells[c].child_count = children;
}

@compute @workgroup_size(1)
fn finish_level() {
    let level = level_params.level;
    let end = min(atomicLoad(&counters.cell_count), params.cell_capacity);
    let begin = counters.level_start[level + 1u];
    counters.level_start[level + 2u] = end;
    let count = end - begin;
    dispatch.level_args[level + 1u] = DispatchArgs((count + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE, 1u, 1u);
    if (count > 0u) {
        atomicStore(&counters.depth, level + 1u);
    }
}

@compute @workgroup_size(1)
fn finish_groups() {
    let groups_made = min(atomicLoad(&counters.group_count), params.cell_capacity);
    atomicStore(&counters.group_count, groups_made);
    counters.groups_built = groups_made;
    dispatch.group_args = DispatchArgs((groups_made + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE, 1u, 1u);
}
