// The summary of a rank's domain in a parallel run: up to DOMAIN_BOXES
// boxes, each the box of the walk groups that start in one cell of the
// tree's top (cells opened from the root, fullest first: compact pieces
// of the domain that together hold every particle), with the loosest MAC
// tolerances of those groups. The other ranks cut their local
// essential trees for this domain against every box
// (shaders/let_tree.wgsl): the finer the boxes, the less they send. (The
// groups themselves are in no order: the build appends them as it finds
// them, and one-particle groups split off wide ones follow.)
//   frontier:   one invocation picks the cells and sorts their first
//               particles;
//   accumulate: one invocation per group adds its box to its cell's, with
//               atomics on order-preserving integer images of the floats;
//   finish:     one invocation per box writes it out.
// Driven by src/cluster/summary.rs.

@group(0) @binding(0) var<storage, read> counter_words: array<u32>;
@group(0) @binding(1) var<storage, read> cells: array<TreeCell>;
@group(0) @binding(2) var<storage, read> group_boxes: array<GroupBox>;
@group(0) @binding(3) var<storage, read_write> frontier: SummaryFrontier;
@group(0) @binding(4) var<storage, read_write> accum: array<BoxAccum, DOMAIN_BOXES>;
@group(0) @binding(5) var<storage, read_write> summary: array<DomainSummary, DOMAIN_BOXES>;

struct SummaryFrontier {
    count: u32,
    // First particle of each chosen cell, ascending.
    starts: array<u32, DOMAIN_BOXES>,
}

struct BoxAccum {
    lo: array<atomic<u32>, 3>,
    hi: array<atomic<u32>, 3>,
    open_scale: atomic<u32>,
    accel_tol: atomic<u32>,
}

// Integer images of floats in the same order (for atomic min and max).
fn ordered(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn unordered(u: u32) -> f32 {
    return bitcast<f32>(select(~u, u & 0x7fffffffu, (u & 0x80000000u) != 0u));
}

// At most this many cells are opened while the frontier is picked.
const FRONTIER_SPLITS: u32 = 3u * DOMAIN_BOXES;

var<workgroup> list: array<u32, DOMAIN_BOXES>;
var<workgroup> listed: u32;
// (particles, entry) of the entries that may be opened, reduced to the
// fullest.
var<workgroup> fullest: array<vec2<u32>, DOMAIN_BOXES>;

// From the root, open the fullest cell whose children still fit, until
// none does: pieces of about equal particle counts, small where the
// domain is dense (where the trees it receives are deepest). Invocation k
// looks after entry k.
@compute @workgroup_size(DOMAIN_BOXES)
fn pick_frontier(@builtin(local_invocation_index) k: u32) {
    if (k == 0u) {
        list[0] = 0u;
        listed = 1u;
    }
    for (var it = 0u; it < FRONTIER_SPLITS; it++) {
        let n = workgroupUniformLoad(&listed);
        var mine = vec2<u32>(0u, k);
        if (k < n) {
            let c = cells[list[k]];
            if (c.child_count > 0u && n - 1u + c.child_count <= DOMAIN_BOXES) {
                mine.x = c.count;
            }
        }
        fullest[k] = mine;
        for (var half = DOMAIN_BOXES / 2u; half > 0u; half /= 2u) {
            workgroupBarrier();
            if (k < half && fullest[k + half].x > fullest[k].x) {
                fullest[k] = fullest[k + half];
            }
        }
        let best = workgroupUniformLoad(&fullest[0]);
        if (best.x == 0u) {
            break;
        }
        if (k == 0u) {
            let opened = cells[list[best.y]];
            var m = n - 1u;
            list[best.y] = list[m];
            for (var ch = 0u; ch < opened.child_count; ch++) {
                if (cells[opened.first_child + ch].count > 0u) {
                    list[m] = opened.first_child + ch;
                    m++;
                }
            }
            listed = m;
        }
    }
    let n = workgroupUniformLoad(&listed);
    // Their first particles, ascending: each entry's place is the number
    // of entries before it.
    if (k < n) {
        let start = cells[list[k]].start;
        var place = 0u;
        for (var j = 0u; j < n; j++) {
            let other = cells[list[j]].start;
            if (other < start || (other == start && j < k)) {
                place++;
            }
        }
        frontier.starts[place] = start;
    }
    if (k == 0u) {
        frontier.count = n;
    }
    for (var a = 0u; a < 3u; a++) {
        atomicStore(&accum[k].lo[a], 0xffffffffu);
        atomicStore(&accum[k].hi[a], 0u);
    }
    atomicStore(&accum[k].open_scale, 0u);
    atomicStore(&accum[k].accel_tol, 0xffffffffu);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn accumulate(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_index(wid, nwg, lid);
    if (g >= counter_words[COUNTER_GROUP_COUNT]) {
        return;
    }
    let b = group_boxes[g];
    // The last chosen cell starting at or before the group.
    var lo = 0u;
    var hi = frontier.count;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (frontier.starts[mid] <= b.start) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    for (var a = 0u; a < 3u; a++) {
        atomicMin(&accum[lo].lo[a], ordered(b.lo[a]));
        atomicMax(&accum[lo].hi[a], ordered(b.hi[a]));
    }
    atomicMax(&accum[lo].open_scale, ordered(b.open_scale));
    atomicMin(&accum[lo].accel_tol, ordered(b.accel_tol));
}

@compute @workgroup_size(DOMAIN_BOXES)
fn finish(@builtin(local_invocation_index) k: u32) {
    let lo = vec3<f32>(unordered(atomicLoad(&accum[k].lo[0])), unordered(atomicLoad(&accum[k].lo[1])), unordered(atomicLoad(&accum[k].lo[2])));
    let hi = vec3<f32>(unordered(atomicLoad(&accum[k].hi[0])), unordered(atomicLoad(&accum[k].hi[1])), unordered(atomicLoad(&accum[k].hi[2])));
    // `groups` says only whether the box holds any group.
    let any = select(0u, 1u, atomicLoad(&accum[k].lo[0]) <= atomicLoad(&accum[k].hi[0]));
    summary[k] = DomainSummary(
        vec4<f32>(lo, 0.0),
        vec4<f32>(hi, 0.0),
        unordered(atomicLoad(&accum[k].open_scale)),
        unordered(atomicLoad(&accum[k].accel_tol)),
        any,
        0u,
    );
}
