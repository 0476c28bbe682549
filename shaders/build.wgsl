// Level-by-level sparse octree build on key-sorted particles (Bonsai 2012,
// §4.3.1). Every cell is a contiguous range of particles sharing a key
// prefix. Level l's cells are split into their non-empty children, found
// as the boundaries of the octant digit at level l+1 (binary searches in the
// sorted keys); children are appended contiguously after one atomicAdd on
// the cell counter (stream compaction), so a node needs only its first child
// and child count. Cells with <= NLEAF particles, or at the deepest level
// recorded (MAX_DEPTH unless the host fitted fewer levels), are leaves.
// Groups for the walk (<= NCRIT particles) are cut from the first cells
// with <= GROUP_CELL particles on each path from the root (consecutive
// siblings packed together up to GROUP_CELL), in pieces of NCRIT
// consecutive particles.
// Dispatches: init_tree (bound to dispatch buffer 0) and reset_level_args
// (bound to buffer 1), which reset both buffers' level sizes; per level l,
// split_cells (a fixed number of workgroups striding over the level, or
// indirect, from level_args[l] of dispatch buffer l % 2), which also sizes
// level l+1: the end of its range and its workgroup count
// grow by atomicMax as children are allocated, written into the other
// dispatch buffer (a dispatch may not write the buffer it is dispatched
// from); finally finish_groups.
// Driven by src/tree/build.rs.

@group(0) @binding(0) var<uniform> level_params: LevelParams;
@group(0) @binding(1) var<uniform> params: TreeParams;
@group(0) @binding(2) var<storage, read> keys: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> cells: array<TreeCell>;
@group(0) @binding(4) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(5) var<storage, read_write> groups: array<Group>;
// The dispatch buffer of level + 1 (the other one of the pair).
@group(0) @binding(6) var<storage, read_write> next_dispatch: TreeDispatch;

fn push_group(start: u32, count: u32) {
    let g = atomicAdd(&counters.group_count, 1u);
    if (g < params.group_capacity) {
        groups[g] = Group(start, count);
    }
}

// Groups of at most NCRIT consecutive particles covering [start, start +
// count): a run of siblings, or a cell that stays a leaf with more than
// GROUP_CELL particles (only at the deepest level recorded or after an
// overflow).
fn push_pieces(start: u32, count: u32) {
    for (var s = 0u; s < count; s += NCRIT) {
        push_group(start + s, min(NCRIT, count - s));
    }
}

// The bound dispatch buffer's level sizes as a build starts: one workgroup
// for the root (read from buffer 0), none for the levels below, which grow
// by atomicMax as their parents allocate cells.
fn reset_next_level_args() {
    for (var l = 0u; l < LEVEL_SLOTS; l++) {
        atomicStore(&next_dispatch.level_args[l].x, select(0u, 1u, l == 0u));
        next_dispatch.level_args[l].y = 1u;
        next_dispatch.level_args[l].z = 1u;
    }
}

@compute @workgroup_size(1)
fn reset_level_args() {
    reset_next_level_args();
}

@compute @workgroup_size(1)
fn init_tree() {
    reset_next_level_args();
    cells[0] = TreeCell(0u, params.n, 0u, 0u);
    atomicStore(&counters.cell_count, 1u);
    atomicStore(&counters.group_count, 0u);
    atomicStore(&counters.overflow, 0u);
    atomicStore(&counters.depth, 0u);
    counters.groups_built = 0u;
    // Level l is level_start[l] .. level_start[l + 1]; the root is [0, 1),
    // deeper ends grow as cells are allocated.
    for (var l = 0u; l < LEVEL_SLOTS; l++) {
        atomicStore(&counters.level_start[l], 0u);
    }
    atomicStore(&counters.level_start[1], 1u);
    if (params.n <= GROUP_CELL) {
        push_pieces(0u, params.n);
    }
}

// The children's boundaries in the cell's range [start, end): bound[o] is
// the first index whose octant at `level` is >= o (bound[0] = start,
// bound[8] = end). The seven binary searches advance together, one probe
// of each per step: the probes are independent loads, so a step waits for
// one memory latency rather than seven in a row. The top levels (few
// cells, long ranges) are bound by that latency.
fn octant_bounds(start: u32, end: u32, level: u32) -> array<u32, 9> {
    // Octants 1-4 in `a`, 5-7 in `b` (b.w is unused). Vectors, not arrays,
    // so that every search stays in registers.
    let octant_a = vec4<u32>(1u, 2u, 3u, 4u);
    let octant_b = vec4<u32>(5u, 6u, 7u, 8u);
    var lo_a = vec4<u32>(start);
    var hi_a = vec4<u32>(end);
    var lo_b = vec4<u32>(start);
    var hi_b = vec4<u32>(end);
    let last = vec4<u32>(end - 1u);
    let steps = 32u - countLeadingZeros(end - start);
    for (var step = 0u; step < steps; step++) {
        let mid_a = (lo_a + hi_a) / 2u;
        let mid_b = (lo_b + hi_b) / 2u;
        let at_a = min(mid_a, last);
        let at_b = min(mid_b, last);
        let key_a = vec4<u32>(key_octant(keys[at_a.x], level), key_octant(keys[at_a.y], level), key_octant(keys[at_a.z], level), key_octant(keys[at_a.w], level));
        let key_b = vec4<u32>(key_octant(keys[at_b.x], level), key_octant(keys[at_b.y], level), key_octant(keys[at_b.z], level), 8u);
        let open_a = lo_a < hi_a;
        let open_b = lo_b < hi_b;
        let below_a = key_a < octant_a;
        let below_b = key_b < octant_b;
        lo_a = select(lo_a, mid_a + 1u, open_a & below_a);
        hi_a = select(hi_a, mid_a, open_a & !below_a);
        lo_b = select(lo_b, mid_b + 1u, open_b & below_b);
        hi_b = select(hi_b, mid_b, open_b & !below_b);
    }
    return array<u32, 9>(start, lo_a.x, lo_a.y, lo_a.z, lo_a.w, lo_b.x, lo_b.y, lo_b.z, end);
}

// Children allocated by this workgroup's cells, and where they start: one
// global atomicAdd (and one sizing of the next level) per workgroup rather
// than per cell, since every cell of a level would otherwise contend for
// the same few counters.
var<workgroup> workgroup_children: atomic<u32>;
var<workgroup> workgroup_first: u32;

// This workgroup's level range [start, end), read once by one invocation
// and shared, so the loop over it is uniform (barriers inside).
var<workgroup> level_range: vec2<u32>;

// A level's cells in tiles of WORKGROUP_SIZE, workgroup w taking tiles w,
// w + W, ... of the W dispatched: a fixed W that strides over any level
// (the default: no indirect dispatch, which browsers validate at a high
// cost; BENCHMARKS.md, "browser engine"), or W sized by the level's
// indirect arguments (`bench --indirect`): one tile each, up to the
// device's workgroups per dimension, past which they stride as well.
@compute @workgroup_size(WORKGROUP_SIZE)
fn split_cells(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let level = level_params.level;
    if (lid == 0u) {
        level_range = vec2<u32>(
            atomicLoad(&counters.level_start[level]),
            atomicLoad(&counters.level_start[level + 1u]),
        );
    }
    let range = workgroupUniformLoad(&level_range);
    for (var tile = range.x + wid.x * WORKGROUP_SIZE; tile < range.y; tile += nwg.x * WORKGROUP_SIZE) {
        split_tile_cell(tile + lid, range.y, lid, level);
    }
}

// One cell of a tile (c >= end: none, but the invocation still takes part
// in the tile's barriers).
fn split_tile_cell(c: u32, end: u32, lid: u32, level: u32) {
    var cell = TreeCell(0u, 0u, 0u, 0u);
    var splits = false;
    if (c < end) {
        cell = cells[c];
        if (cell.count <= NLEAF || level >= level_params.deepest) {
            if (cell.count > GROUP_CELL) {
                push_pieces(cell.start, cell.count);
            }
            if (cell.count > NLEAF && level < MAX_DEPTH) {
                // The host recorded too few levels (it guessed from the last
                // build): the cell stays a leaf (exact, only slower), and the
                // depth it wanted tells the host to record more.
                atomicMax(&counters.depth, level + 1u);
            }
        } else {
            splits = true;
        }
    }
    var bound = array<u32, 9>();
    var children = 0u;
    if (splits) {
        bound = octant_bounds(cell.start, cell.start + cell.count, level + 1u);
        for (var o = 0u; o < 8u; o++) {
            children += select(0u, 1u, bound[o + 1u] > bound[o]);
        }
    }
    if (lid == 0u) {
        atomicStore(&workgroup_children, 0u);
    }
    workgroupBarrier();
    var offset = 0u;
    if (children > 0u) {
        offset = atomicAdd(&workgroup_children, children);
    }
    workgroupBarrier();
    if (lid == 0u) {
        let total = atomicLoad(&workgroup_children);
        if (total > 0u) {
            workgroup_first = atomicAdd(&counters.cell_count, total);
            // Size level + 1 (its start, the end of this level, is final
            // by now).
            let next_end = min(workgroup_first + total, params.cell_capacity);
            atomicMax(&counters.level_start[level + 2u], next_end);
            let next_cells = next_end - end;
            // At most the device's workgroups per dimension: past them
            // (0.3 N cells at N > 2^24 on a 65,535 limit) the level's
            // workgroups stride over the rest.
            let tiles = div_ceil(next_cells, WORKGROUP_SIZE);
            atomicMax(&next_dispatch.level_args[level + 1u].x, min(tiles, level_params.max_workgroups));
            atomicMax(&counters.depth, level + 1u);
        }
    }
    // Also the barrier that lets the next tile reset workgroup_children.
    let first = workgroupUniformLoad(&workgroup_first) + offset;
    if (splits) {
        write_children(c, cell, bound, children, first);
    }
}

// Writes the children of cell `c` (found in `bound`) from slot `first` on,
// and the groups cut from them.
fn write_children(c: u32, cell: TreeCell, bound: array<u32, 9>, children: u32, first: u32) {
    if (first + children > params.cell_capacity) {
        // No room: the cell stays a leaf holding all its particles, which the
        // walk then sums directly (exact, only slower). Slots below the
        // capacity that this allocation reserved become empty cells.
        atomicStore(&counters.overflow, 1u);
        for (var k = first; k < params.cell_capacity; k++) {
            cells[k] = TreeCell(0u, 0u, 0u, 0u);
        }
        if (cell.count > GROUP_CELL) {
            push_pieces(cell.start, cell.count);
        }
        return;
    }
    var k = first;
    // Groups: consecutive children with <= GROUP_CELL particles are packed
    // greedily into runs of <= GROUP_CELL (siblings are neighbours in
    // space), each cut into pieces of NCRIT, which keeps walk lanes full.
    var run_start = cell.start;
    var run_count = 0u;
    for (var o = 0u; o < 8u; o++) {
        let count = bound[o + 1u] - bound[o];
        if (count > 0u) {
            cells[k] = TreeCell(bound[o], count, 0u, 0u);
            k++;
            if (cell.count > GROUP_CELL) {
                if (count > GROUP_CELL || run_count + count > GROUP_CELL) {
                    if (run_count > 0u) {
                        push_pieces(run_start, run_count);
                    }
                    run_count = 0u;
                }
                if (count <= GROUP_CELL) {
                    if (run_count == 0u) {
                        run_start = bound[o];
                    }
                    run_count += count;
                }
            }
        }
    }
    if (run_count > 0u) {
        push_pieces(run_start, run_count);
    }
    cells[c].first_child = first;
    cells[c].child_count = children;
}

@compute @workgroup_size(1)
fn finish_groups() {
    let groups_made = min(atomicLoad(&counters.group_count), params.group_capacity);
    atomicStore(&counters.group_count, groups_made);
    counters.groups_built = groups_made;
    next_dispatch.group_args = group_box_args(groups_made, level_params.max_workgroups);
}
