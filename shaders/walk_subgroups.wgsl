// The tree walk's subgroup half (WebGPU's optional `subgroups` feature),
// appended to walk.wgsl: list and frontier slots come from prefix sums
// within subgroups (combined across them in workgroup memory when a
// workgroup holds several), the lists' lengths are kept in registers, and
// listed cells and particles reach every invocation by shuffles within its
// subgroup, with no staging in workgroup memory and no barriers.
// src/tree/walk.rs uses it only where subgroups are never larger than a
// workgroup (WALK_LANES), so every subgroup is full.

// Subgroup totals of one reservation, one entry per subgroup.
var<workgroup> subgroup_sums: array<u32, WALK_LANES>;
// The lists' lengths as gather_lengths shares them.
var<workgroup> gathered: vec3<u32>;
// Ranges of nodes that had no room elsewhere (rare), counted since the
// last gather_lengths, which takes them into the range list's length and
// resets the count between barriers (no reservation can race the reset).
var<workgroup> spilled_total: atomic<u32>;

@compute @workgroup_size(WALK_LANES)
fn walk(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(num_subgroups) sg_count: u32,
) {
    walk_groups(wid.x, nwg.x, Lane(lid, sg_lane, sg_id, sg_size, sg_count), sg_count);
}

// Cells (8 bits), ranges (8 bits) and children (16 bits) of one chunk in
// one word, so one scan reserves all three: a chunk adds at most
// WALK_LANES, WALK_LANES and 8 WALK_LANES.
fn pack(want: vec3<u32>) -> u32 {
    return want.x | (want.y << 8u) | (want.z << 16u);
}

fn unpack(w: u32) -> vec3<u32> {
    return vec3<u32>(w & 0xffu, (w >> 8u) & 0xffu, w >> 16u);
}

// Slots for what this invocation adds (cells, ranges, children): positions
// in the cell list, the range list and the next frontier level. Called by
// the whole workgroup; `lens` advances by the workgroup's total.
fn reserve(want: vec3<u32>, lane: Lane, subgroups: u32, lens: ptr<function, Lengths>) -> vec3<u32> {
    let packed = pack(want);
    var before = subgroupExclusiveAdd(packed);
    var total = subgroupAdd(packed);
    if (subgroups > 1u) {
        // Every invocation has read the last reservation's sums.
        workgroupBarrier();
        if (lane.sg_lane == 0u) {
            subgroup_sums[lane.sg_id] = total;
        }
        workgroupBarrier();
        total = 0u;
        for (var s = 0u; s < subgroups; s++) {
            let t = subgroup_sums[s];
            before += select(0u, t, s < lane.sg_id);
            total += t;
        }
    }
    let base = vec3<u32>((*lens).cells, (*lens).ranges, (*lens).next);
    let t = unpack(total);
    *lens = Lengths(base.x + t.x, base.y + t.y, base.z + t.z);
    return base + unpack(before);
}

// A slot in the range list for a node that had no room elsewhere (rare):
// after this chunk's reservations, in the order the spills come.
fn reserve_spilled_range(ranges: u32) -> u32 {
    return ranges + atomicAdd(&spilled_total, 1u);
}

// After every invocation's reservations: the entries visible to all, and
// the spilled ranges counted in. The lengths come back through workgroup
// memory: sums over subgroups are uniform only within one to WGSL's
// uniformity analysis (which browsers enforce), and the walk's loops and
// barriers need them workgroup-uniform.
fn gather_lengths(lid: u32, lens: ptr<function, Lengths>) {
    workgroupBarrier();
    if (lid == 0u) {
        let spilled = atomicExchange(&spilled_total, 0u);
        gathered = vec3<u32>((*lens).cells, (*lens).ranges + spilled, (*lens).next);
    }
    let g = workgroupUniformLoad(&gathered);
    *lens = Lengths(g.x, g.y, g.z);
}

// After a level's last chunk: the next level's length (kept up to date).
fn gather_next_length(lens: ptr<function, Lengths>) {}

// Empty lists and frontier level for a new group (whole workgroup), and
// a new count of spilled ranges.
fn start_group(lid: u32, lens: ptr<function, Lengths>) {
    workgroupBarrier();
    if (lid == 0u) {
        atomicStore(&spilled_total, 0u);
    }
    workgroupBarrier();
    *lens = Lengths(0u, 0u, 0u);
}

// An empty next frontier level (the lengths live in registers: the
// entries were made visible by the last gather_lengths).
fn start_level(lid: u32, lens: ptr<function, Lengths>) {
    (*lens).next = 0u;
}

// Empties the evaluated lists (whole workgroup, uniform flags).
fn empty_lists(cells: bool, ranges: bool, lid: u32, lens: ptr<function, Lengths>) {
    (*lens).cells = select((*lens).cells, 0u, cells);
    (*lens).ranges = select((*lens).ranges, 0u, ranges);
}

// Adds the forces of the `len` listed cells: each subgroup loads
// sg_size of them, one per invocation, and passes them round. The next
// batch is loaded before this one is evaluated, so that its loads are in
// flight during the evaluations rather than waited for after them.
fn cell_list_force(xs: Pair, len: u32, lane: Lane, acc: ptr<function, PairAccum>) {
    var next = listed_moments(lane.sg_lane, len);
    for (var base = 0u; base < len; base += lane.sg_size) {
        let mine = next;
        next = listed_moments(base + lane.sg_size + lane.sg_lane, len);
        let batch = min(lane.sg_size, len - base);
        var e = 0u;
        if (xs.single) {
            for (; e + 4u <= batch; e += 4u) {
                add_cells_single(xs, shuffled_moments(mine, e), shuffled_moments(mine, e + 1u), shuffled_moments(mine, e + 2u), shuffled_moments(mine, e + 3u), acc);
            }
        } else {
            for (; e + 4u <= batch; e += 4u) {
                add_cells(xs, shuffled_moments(mine, e), shuffled_moments(mine, e + 1u), shuffled_moments(mine, e + 2u), shuffled_moments(mine, e + 3u), acc);
            }
        }
        for (; e < batch; e++) {
            add_cell(xs, shuffled_moments(mine, e), acc);
        }
    }
}

// The moments of listed cell `k` (zero past the list's end).
fn listed_moments(k: u32, len: u32) -> Moments {
    if (k < len) {
        return moments_of(cell_list[k]);
    }
    return Moments(vec4<f32>(0.0), vec4<f32>(0.0), vec3<f32>(0.0));
}

// Listed particle `idx` of `total` (zero past the end).
fn listed_particle_or_zero(idx: u32, total: u32, len: u32) -> vec4<f32> {
    if (idx < total) {
        return listed_particle(idx, len);
    }
    return vec4<f32>(0.0);
}

fn shuffled_moments(m: Moments, source: u32) -> Moments {
    return Moments(subgroupShuffle(m.com_mass, source), subgroupShuffle(m.diag, source), subgroupShuffle(m.off, source));
}

// Adds the forces of all particles of the `len` listed ranges and returns
// their number. Whole workgroup, uniform `len`.
fn range_list_force(xs: Pair, len: u32, lane: Lane, acc: ptr<function, PairAccum>) -> u32 {
    let total = scan_range_offsets(len, lane.id);
    // As for cells, the next batch is loaded ahead.
    var next = listed_particle_or_zero(lane.sg_lane, total, len);
    for (var base = 0u; base < total; base += lane.sg_size) {
        let mine = next;
        next = listed_particle_or_zero(base + lane.sg_size + lane.sg_lane, total, len);
        let batch = min(lane.sg_size, total - base);
        var e = 0u;
        if (xs.single) {
            for (; e + 4u <= batch; e += 4u) {
                add_particles_single(xs, subgroupShuffle(mine, e), subgroupShuffle(mine, e + 1u), subgroupShuffle(mine, e + 2u), subgroupShuffle(mine, e + 3u), acc);
            }
        } else {
            for (; e + 4u <= batch; e += 4u) {
                add_particles(xs, subgroupShuffle(mine, e), subgroupShuffle(mine, e + 1u), subgroupShuffle(mine, e + 2u), subgroupShuffle(mine, e + 3u), acc);
            }
        }
        for (; e < batch; e++) {
            add_particle(xs, subgroupShuffle(mine, e), acc);
        }
    }
    return total;
}
