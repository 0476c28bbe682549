// The tree walk's portable half (plain WebGPU), appended to walk.wgsl:
// list and frontier slots come from workgroup atomics, and listed cells and
// particles are staged in workgroup memory, WALK_LANES cells or
// PARTICLE_BATCH particles at a time, between barriers.

// Lengths of both lists in one word (cells in the low 16 bits, ranges in
// the high 16), so one uniform load reads both; the next frontier level's
// apart, read once per level (two words: fewer invocations contend for
// each atomic).
var<workgroup> list_lens: atomic<u32>;
var<workgroup> next_len: atomic<u32>;
const RANGE_ONE: u32 = 0x10000u;

// Particles staged per batch of the particle list: two per invocation.
const PARTICLE_BATCH: u32 = 2u * WALK_LANES;
// Staged moments of up to WALK_LANES listed cells.
var<workgroup> staged_cells: array<Moments, WALK_LANES>;
var<workgroup> staged_particles: array<vec4<f32>, PARTICLE_BATCH>;

@compute @workgroup_size(WALK_LANES)
fn walk(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    walk_groups(wid.x, nwg.x, Lane(lid, 0u, 0u, 1u, 1u), 1u);
}

// Slots for what this invocation adds (cells, ranges, children): positions
// in the cell list, the range list and the next frontier level.
fn reserve(want: vec3<u32>, lane: Lane, subgroups: u32, lens: ptr<function, Lengths>) -> vec3<u32> {
    var lr = 0u;
    if (want.x + want.y != 0u) {
        lr = atomicAdd(&list_lens, want.x + want.y * RANGE_ONE);
    }
    var nx = 0u;
    if (want.z != 0u) {
        nx = atomicAdd(&next_len, want.z);
    }
    return vec3<u32>(lr & 0xffffu, lr >> 16u, nx);
}

// A slot in the range list for a node that had no room elsewhere (rare;
// `ranges` is unused: the atomic holds the length).
fn reserve_spilled_range(ranges: u32) -> u32 {
    return atomicAdd(&list_lens, RANGE_ONE) >> 16u;
}

// After every invocation's reservations: the lists' lengths, the same
// for all.
fn gather_lengths(lid: u32, lens: ptr<function, Lengths>) {
    let lr = workgroupUniformLoad(&list_lens);
    (*lens).cells = lr & 0xffffu;
    (*lens).ranges = lr >> 16u;
}

// After a level's last chunk: the next level's length too.
fn gather_next_length(lens: ptr<function, Lengths>) {
    (*lens).next = workgroupUniformLoad(&next_len);
}

// Empty lists and frontier level for a new group (whole workgroup).
fn start_group(lid: u32, lens: ptr<function, Lengths>) {
    workgroupBarrier();
    if (lid == 0u) {
        atomicStore(&list_lens, 0u);
        atomicStore(&next_len, 0u);
    }
    workgroupBarrier();
    *lens = Lengths(0u, 0u, 0u);
}

// An empty next frontier level (whole workgroup).
fn start_level(lid: u32, lens: ptr<function, Lengths>) {
    // Every invocation has read the last level's length and entries.
    workgroupBarrier();
    if (lid == 0u) {
        atomicStore(&next_len, 0u);
    }
    workgroupBarrier();
    (*lens).next = 0u;
}

// Empties the evaluated lists (whole workgroup, uniform flags).
fn empty_lists(cells: bool, ranges: bool, lid: u32, lens: ptr<function, Lengths>) {
    // Every invocation is done with the entries.
    workgroupBarrier();
    if (lid == 0u) {
        atomicAnd(&list_lens, select(0xffffu, 0u, cells) | select(0xffff0000u, 0u, ranges));
    }
    workgroupBarrier();
    (*lens).cells = select((*lens).cells, 0u, cells);
    (*lens).ranges = select((*lens).ranges, 0u, ranges);
}

// Adds the forces of the `len` listed cells. Whole workgroup, uniform `len`.
fn cell_list_force(xs: Pair, len: u32, lane: Lane, acc: ptr<function, PairAccum>) {
    for (var base = 0u; base < len; base += WALK_LANES) {
        if (base + lane.id < len) {
            staged_cells[lane.id] = moments_of(cell_list[base + lane.id]);
        }
        workgroupBarrier();
        let batch = min(WALK_LANES, len - base);
        var e = 0u;
        for (; e + 4u <= batch; e += 4u) {
            add_cells(xs, staged_cells[e], staged_cells[e + 1u], staged_cells[e + 2u], staged_cells[e + 3u], acc);
        }
        for (; e < batch; e++) {
            add_cell(xs, staged_cells[e], acc);
        }
        workgroupBarrier();
    }
}

// Adds the forces of all particles of the `len` listed ranges and returns
// their number. Whole workgroup, uniform `len`.
fn range_list_force(xs: Pair, len: u32, lane: Lane, acc: ptr<function, PairAccum>) -> u32 {
    let total = scan_range_offsets(len, lane.id);
    for (var base = 0u; base < total; base += PARTICLE_BATCH) {
        for (var s = lane.id; s < PARTICLE_BATCH; s += WALK_LANES) {
            if (base + s < total) {
                staged_particles[s] = listed_particle(base + s, len);
            }
        }
        workgroupBarrier();
        let batch = min(PARTICLE_BATCH, total - base);
        var e = 0u;
        for (; e + 4u <= batch; e += 4u) {
            add_particles(xs, staged_particles[e], staged_particles[e + 1u], staged_particles[e + 2u], staged_particles[e + 3u], acc);
        }
        for (; e < batch; e++) {
            add_particle(xs, staged_particles[e], acc);
        }
        workgroupBarrier();
    }
    return total;
}
