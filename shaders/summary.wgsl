// The summary of a rank's domain in a parallel run: boxes of its walk
// groups in two levels, with the loosest MAC tolerances of their groups.
// The coarse boxes are those of the groups that start in cells of the
// tree's top, opened from the root (compact pieces of the domain that
// together hold every particle); each is cut the same way into fine
// boxes. A coarse box holds its fine ones with their loosest tolerances,
// so a cell a coarse box takes is taken by each of its fine boxes, and
// the cut of a local essential tree (shaders/let_tree.wgsl) looks at the
// fine boxes only where a coarse one opens a cell. (The groups themselves
// are in no order: the build appends them as they are found, and
// one-particle groups split off wide ones follow.)
//
// Which cell opens next: the fullest; in the fine picks, the one of
// highest score, its particles plus the other domains' particles its
// tight box is estimated to hold (from their summaries of the last
// evaluation, each fine box's particles spread evenly over it). The cut sends whatever of its own domain lies
// inside a box at full resolution, so a box that spans a hole another
// domain fills (an outer domain around a galaxy's centre) costs that
// domain's particles there; by count alone such a box, sparse in this
// domain, was never opened.
//   pick_coarse, pick_fine: the cells (one workgroup per list);
//   accumulate: one invocation per group adds its box to its fine cell's,
//               with atomics on order-preserving integer images of floats;
//   finish:     a workgroup per coarse box writes its fine boxes and
//               itself.
// The summary is COARSE_BOXES coarse boxes, then FINE_BOXES fine boxes
// for each coarse one in order (empty boxes have `groups` 0).
// Driven by src/cluster/summary.rs.

@group(0) @binding(0) var<uniform> params: SummaryParams;
@group(0) @binding(1) var<storage, read> counter_words: array<u32>;
@group(0) @binding(2) var<storage, read> cells: array<TreeCell>;
@group(0) @binding(3) var<storage, read> cell_boxes: array<Bounds>;
@group(0) @binding(4) var<storage, read> group_boxes: array<GroupBox>;
@group(0) @binding(5) var<storage, read_write> frontier: SummaryFrontier;
@group(0) @binding(6) var<storage, read_write> accum: array<BoxAccum>;
@group(0) @binding(7) var<storage, read_write> summary: array<DomainSummary>;
// params.other_domains summaries of DOMAIN_BOXES each.
@group(0) @binding(8) var<storage, read> others: array<DomainSummary>;

struct SummaryFrontier {
    coarse_count: u32,
    // First particle (ascending) and cell of each coarse box.
    coarse_starts: array<u32, COARSE_BOXES>,
    coarse_cells: array<u32, COARSE_BOXES>,
    fine_counts: array<u32, COARSE_BOXES>,
    // FINE_BOXES first particles (ascending) per coarse box.
    fine_starts: array<u32, FINE_TOTAL>,
}

struct BoxAccum {
    lo: array<atomic<u32>, 3>,
    hi: array<atomic<u32>, 3>,
    open_scale: atomic<u32>,
    accel_tol: atomic<u32>,
    particles: atomic<u32>,
}

// Integer images of floats in the same order (for atomic min and max).
fn ordered(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn unordered(u: u32) -> f32 {
    return bitcast<f32>(select(~u, u & 0x7fffffffu, (u & 0x80000000u) != 0u));
}

// At most this many cells are opened while a list is picked.
const LIST_SPLITS: u32 = 3u * COARSE_BOXES;

var<workgroup> list: array<u32, COARSE_BOXES>;
var<workgroup> listed: u32;
// Each entry's score; the entries from `scored_from` on are new.
var<workgroup> score: array<f32, COARSE_BOXES>;
var<workgroup> scored_from: u32;
var<workgroup> partial: array<f32, COARSE_BOXES>;
// (score's bits, entry) of the entries that may be opened, reduced to
// the highest.
var<workgroup> fullest: array<vec2<u32>, COARSE_BOXES>;
var<workgroup> root_cell: u32;

// Invocations that estimate one new entry together (an opened cell adds
// at most 8).
const SCORE_LANES: u32 = COARSE_BOXES / 8u;

// Scores the entries from scored_from to listed (at most 8): by their
// particles alone unless `weigh`.
fn score_new_entries(k: u32, weigh: bool) {
    let first = workgroupUniformLoad(&scored_from);
    let to = workgroupUniformLoad(&listed);
    if (first >= to) {
        return;
    }
    let e = first + k / SCORE_LANES;
    let lane = k % SCORE_LANES;
    partial[k] = 0.0;
    if (weigh && e < to) {
        partial[k] = others_inside(cell_boxes[list[e]], lane, SCORE_LANES, params.other_domains);
    }
    for (var half = SCORE_LANES / 2u; half > 0u; half /= 2u) {
        workgroupBarrier();
        if (lane < half) {
            partial[k] += partial[k + half];
        }
    }
    workgroupBarrier();
    if (e < to && lane == 0u) {
        score[e] = f32(cells[list[e]].count) + partial[k];
    }
    workgroupBarrier();
}

// From the cell `root_cell`, opens the listed cell of highest score whose
// children still fit in `capacity` entries, until none does: pieces of
// about equal particle counts, small where the domain is dense or meets
// another. Invocation k looks after entry k; returns the number of
// entries.
fn pick(capacity: u32, k: u32, weigh: bool) -> u32 {
    if (k == 0u) {
        list[0] = root_cell;
        listed = 1u;
        scored_from = 0u;
    }
    score_new_entries(k, weigh);
    for (var it = 0u; it < LIST_SPLITS; it++) {
        let n = workgroupUniformLoad(&listed);
        var mine = vec2<u32>(0u, k);
        if (k < n) {
            let c = cells[list[k]];
            if (c.child_count > 0u && n - 1u + c.child_count <= capacity) {
                // Scores are at least 1: their bits order as they do.
                mine.x = bitcast<u32>(score[k]);
            }
        }
        fullest[k] = mine;
        for (var half = COARSE_BOXES / 2u; half > 0u; half /= 2u) {
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
            score[best.y] = score[m];
            for (var ch = 0u; ch < opened.child_count; ch++) {
                if (cells[opened.first_child + ch].count > 0u) {
                    list[m] = opened.first_child + ch;
                    m++;
                }
            }
            listed = m;
            scored_from = n - 1u;
            if (m == n) {
                // One child: the same particles, so the same box and score
                // (chains of them are common, and each is a pass here).
                score[n - 1u] = bitcast<f32>(best.x);
                scored_from = m;
            }
        }
        score_new_entries(k, weigh);
    }
    return workgroupUniformLoad(&listed);
}

// Entry k's place among the n entries in the order of their first
// particles.
fn place_of(k: u32, n: u32) -> u32 {
    let start = cells[list[k]].start;
    var place = 0u;
    for (var j = 0u; j < n; j++) {
        let other = cells[list[j]].start;
        if (other < start || (other == start && j < k)) {
            place++;
        }
    }
    return place;
}

@compute @workgroup_size(COARSE_BOXES)
fn pick_coarse(@builtin(local_invocation_index) k: u32) {
    if (k == 0u) {
        root_cell = 0u;
    }
    // By count: scored, this one workgroup's openings, one after another,
    // took 8–9 ms an evaluation on an H200, the fine picks 1–4 ms.
    let n = pick(params.coarse_boxes, k, false);
    if (k < n) {
        let place = place_of(k, n);
        frontier.coarse_starts[place] = cells[list[k]].start;
        frontier.coarse_cells[place] = list[k];
    }
    if (k == 0u) {
        frontier.coarse_count = n;
    }
}

@compute @workgroup_size(COARSE_BOXES)
fn pick_fine(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) k: u32,
) {
    let coarse = wid.x;
    if (k == 0u) {
        // Past the coarse list: an empty list.
        root_cell = select(0xffffffffu, frontier.coarse_cells[coarse], coarse < frontier.coarse_count);
    }
    if (workgroupUniformLoad(&root_cell) == 0xffffffffu) {
        if (k == 0u) {
            frontier.fine_counts[coarse] = 0u;
        }
        return;
    }
    let n = pick(params.fine_boxes, k, true);
    if (k < n) {
        frontier.fine_starts[coarse * FINE_BOXES + place_of(k, n)] = cells[list[k]].start;
    }
    if (k == 0u) {
        frontier.fine_counts[coarse] = n;
    }
    if (k < FINE_BOXES) {
        let a = coarse * FINE_BOXES + k;
        for (var x = 0u; x < 3u; x++) {
            atomicStore(&accum[a].lo[x], 0xffffffffu);
            atomicStore(&accum[a].hi[x], 0u);
        }
        atomicStore(&accum[a].open_scale, 0u);
        atomicStore(&accum[a].accel_tol, 0xffffffffu);
        atomicStore(&accum[a].particles, 0u);
    }
}

// The last of `n` ascending starts from `first` at or before `start`.
fn last_at_or_before(first: u32, n: u32, start: u32, coarse: bool) -> u32 {
    var lo = 0u;
    var hi = n;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        var s: u32;
        if (coarse) {
            s = frontier.coarse_starts[mid];
        } else {
            s = frontier.fine_starts[first + mid];
        }
        if (s <= start) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
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
    let c = last_at_or_before(0u, frontier.coarse_count, b.start, true);
    let f = last_at_or_before(c * FINE_BOXES, frontier.fine_counts[c], b.start, false);
    let a = c * FINE_BOXES + f;
    for (var x = 0u; x < 3u; x++) {
        atomicMin(&accum[a].lo[x], ordered(b.lo[x]));
        atomicMax(&accum[a].hi[x], ordered(b.hi[x]));
    }
    atomicMax(&accum[a].open_scale, ordered(b.open_scale));
    atomicMin(&accum[a].accel_tol, ordered(b.accel_tol));
    atomicAdd(&accum[a].particles, b.count);
}

var<workgroup> coarse_lo: array<vec3<f32>, FINE_BOXES>;
var<workgroup> coarse_hi: array<vec3<f32>, FINE_BOXES>;
var<workgroup> coarse_tol: array<vec2<f32>, FINE_BOXES>;
var<workgroup> coarse_particles: array<u32, FINE_BOXES>;

const FAR: f32 = 3.0e38;

@compute @workgroup_size(FINE_BOXES)
fn finish(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) j: u32,
) {
    let coarse = wid.x;
    let a = coarse * FINE_BOXES + j;
    var lo = vec3<f32>(FAR);
    var hi = vec3<f32>(-FAR);
    var tol = vec2<f32>(0.0, FAR);
    var any = 0u;
    var particles = 0u;
    if (coarse < frontier.coarse_count && j < frontier.fine_counts[coarse]
        && atomicLoad(&accum[a].lo[0]) <= atomicLoad(&accum[a].hi[0])) {
        any = 1u;
        lo = vec3<f32>(unordered(atomicLoad(&accum[a].lo[0])), unordered(atomicLoad(&accum[a].lo[1])), unordered(atomicLoad(&accum[a].lo[2])));
        hi = vec3<f32>(unordered(atomicLoad(&accum[a].hi[0])), unordered(atomicLoad(&accum[a].hi[1])), unordered(atomicLoad(&accum[a].hi[2])));
        tol = vec2<f32>(unordered(atomicLoad(&accum[a].open_scale)), unordered(atomicLoad(&accum[a].accel_tol)));
        particles = atomicLoad(&accum[a].particles);
    }
    // `groups` says only whether the box holds any group.
    summary[COARSE_BOXES + a] = DomainSummary(vec4<f32>(lo, 0.0), vec4<f32>(hi, 0.0), tol.x, tol.y, any, particles);
    coarse_lo[j] = lo;
    coarse_hi[j] = hi;
    coarse_tol[j] = tol;
    coarse_particles[j] = particles;
    for (var half = FINE_BOXES / 2u; half > 0u; half /= 2u) {
        workgroupBarrier();
        if (j < half) {
            coarse_lo[j] = min(coarse_lo[j], coarse_lo[j + half]);
            coarse_hi[j] = max(coarse_hi[j], coarse_hi[j + half]);
            let o = coarse_tol[j + half];
            coarse_tol[j] = vec2<f32>(max(coarse_tol[j].x, o.x), min(coarse_tol[j].y, o.y));
            coarse_particles[j] += coarse_particles[j + half];
        }
    }
    workgroupBarrier();
    if (j == 0u) {
        let filled = select(0u, 1u, coarse_lo[0].x <= coarse_hi[0].x);
        summary[coarse] = DomainSummary(vec4<f32>(coarse_lo[0], 0.0), vec4<f32>(coarse_hi[0], 0.0), coarse_tol[0].x, coarse_tol[0].y, filled, coarse_particles[0]);
    }
}
