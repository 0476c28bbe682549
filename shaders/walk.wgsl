// Group-based tree walk (Bonsai 2012, §4.3.4). Workgroups of WALK_LANES
// invocations are persistent: each takes groups from a shared counter (at
// most its share, min(groups, walk_workgroups) of them are dispatched) and
// walks them one after the other. A group holds up to NCRIT particles;
// with WALK_LANES = NCRIT invocation k owns particle k, with WALK_LANES =
// NCRIT / 2 particles k and k + WALK_LANES (Bonsai's NI = 2: every list
// entry brought in serves two particles per invocation).
// The walk is breadth-first: the current level of the frontier is tested
// against the MAC in chunks of WALK_LANES cells, one per invocation, using
// the distance d from the group's box to the cell's centre of mass: Bonsai's
// opening angle (eq. 4.1, d > l/θ + δ) or the acceleration MAC (`accepts`):
//   accepted        -> its index joins the cell list (monopole+quadrupole),
//   opened leaf     -> its particle range joins the particle list (direct),
//   opened node     -> its children join the next frontier level.
// Where each goes is reserved by `reserve` and the lengths made common by
// `gather_lengths` and `gather_next_length` (and reset by `start_group`,
// `start_level`, `empty_lists`): these functions, and how
// listed entries are brought to every invocation (`cell_list_force`,
// `range_list_force`), come from one of two files appended to this one
// (src/tree/walk.rs chooses):
//   walk_portable.wgsl   plain WebGPU: workgroup atomics, entries staged in
//                        workgroup memory between barriers;
//   walk_subgroups.wgsl  the `subgroups` feature: prefix sums and shuffles
//                        within subgroups, no staging barriers.
// Both lists live in workgroup memory and are evaluated whenever they might
// not hold another chunk, and once more at the end.
// The frontier (current and next level) lives in workgroup memory too;
// when it is full, an opened node is set aside on the workgroup's stack in
// global memory (DEFERRED_CAPACITY entries) and walked afterwards as a
// subtree of its own (only if that stack is full too does its particle
// range go to the particle list: exact, only slower).
// With IMPORTED = 1 the tree walked is another rank's, imported in a
// parallel run (src/cluster/imports.rs): its particles follow the local
// ones in `pos_mass`, the forces and interaction counts add to those of
// the local walk, and no particle meets itself. Its inner nodes' ranges
// do not hold their particles (a local essential tree keeps only what the
// MAC needs), so a node that would be spilled adds nothing and marks
// `overflow` instead, which the host turns into an error.
// Driven by src/tree/walk.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> cells: array<TreeCell>;
@group(0) @binding(3) var<storage, read> props: array<CellProps>;
@group(0) @binding(4) var<storage, read> group_boxes: array<GroupBox>;
@group(0) @binding(5) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(6) var<storage, read_write> acc_pot: array<AccPot>;
@group(0) @binding(7) var<storage, read_write> interactions: array<InteractionCount>;
// Each workgroup's stack of set-aside nodes: DEFERRED_CAPACITY entries from
// workgroup_id.x * DEFERRED_CAPACITY (global memory, so it can be deep).
@group(0) @binding(8) var<storage, read_write> deferred: array<u32>;

const SKIP: u32 = 0xffffffffu;
// Range lists up to this long are scanned by one invocation (the final
// evaluation of a walk), longer ones (flushes) by all.
const SERIAL_SCAN: u32 = 16u;
// Entries of the range list each invocation scans in a parallel scan.
const SCAN_PER_LANE: u32 = LIST_CAPACITY / WALK_LANES;
// A chunk adds at most WALK_LANES cells and WALK_LANES ranges (one per
// invocation: an opened leaf, or a node that had no room anywhere), so a
// list is evaluated when it might not hold that.
const FLUSH_CELLS: u32 = LIST_CAPACITY - WALK_LANES;
const FLUSH_RANGES: u32 = LIST_CAPACITY - WALK_LANES;
// Invocations hold two particles of a group each (else one).
const TWO_PER_LANE: bool = WALK_LANES < NCRIT;

var<workgroup> cell_list: array<u32, LIST_CAPACITY>;
var<workgroup> range_list: array<vec2<u32>, LIST_CAPACITY>;
var<workgroup> frontier: array<u32, 2 * FRONTIER_CAPACITY>;
var<workgroup> group_count: u32;
var<workgroup> current_group: u32;
var<workgroup> deferred_len: atomic<u32>;
// Exclusive prefix sums of the listed ranges' particle counts.
var<workgroup> range_offsets: array<u32, LIST_CAPACITY_PLUS_ONE>;

// Lengths of the cell list, the range list and the next frontier level.
struct Lengths {
    cells: u32,
    ranges: u32,
    next: u32,
}

// Who this invocation is, in its workgroup and in its subgroup (the
// subgroup fields are 0, 0, 1, 1 on the portable path).
struct Lane {
    id: u32,
    sg_lane: u32,
    sg_id: u32,
    sg_size: u32,
    sg_count: u32,
}

// Squared distance from point p to the box [lo, hi] (0 inside).
struct Accum {
    acc: vec3<f32>,
    pot: f32,
}

const ZERO = Accum(vec3<f32>(0.0), 0.0);

// The invocation's two particles (the second unused with one per
// invocation), and two independent accumulators for each (a long dependent
// chain per evaluation: several chains hide latency).
struct Pair {
    x0: vec3<f32>,
    x1: vec3<f32>,
    // Only the first particle is real in every invocation (one particle
    // per invocation, or a group of at most WALK_LANES): its forces take
    // all four chains and the second particle's are not computed.
    single: bool,
}

struct PairAccum {
    a0: Accum,
    b0: Accum,
    a1: Accum,
    b1: Accum,
}

fn add(a: Accum, b: Accum) -> Accum {
    return Accum(a.acc + b.acc, a.pot + b.pot);
}

// A cell's moments as the walk uses them, scaled once per cell when it is
// loaded so that each of the many evaluations does less: com and mass,
// 3S (S the second moments about the com: xx, yy, zz in `diag`, xy, xz,
// yz in `off`) and tr(S)/2 in diag.w.
struct Moments {
    com_mass: vec4<f32>,
    diag: vec4<f32>,
    off: vec3<f32>,
}

fn moments_of(c: u32) -> Moments {
    let p = props[c];
    let s = p.quad_diag.xyz;
    return Moments(p.com_mass, vec4<f32>(3.0 * s, 0.5 * (s.x + s.y + s.z)), 3.0 * p.quad_off.xyz);
}

// Monopole + quadrupole of a cell at position `x` (softened as the
// direct sum): with r = x - com, S the second moments, q = r·S·r,
//   φ = -M/r - 3q/(2r⁵) + tr(S)/(2r³),
//   a = -M r/r³ + 3 S r/r⁵ - 15 q r/(2r⁷) + 3 tr(S) r/(2r⁵),
// here from 3S and h = tr(S)/2 (`Moments`): with sr = 3S r, t = 1/r² and
// u = (r·sr) t, nested so that nearly every operation is one fused
// multiply-add,
//   φ = -(M + t (u/2 - h)) / r,
//   a = -(M + t (5u/2 - 3h)) r / r³ + sr t / r³.
fn multipole_force(x: vec3<f32>, c: Moments, a: Accum) -> Accum {
    let r = x - c.com_mass.xyz;
    let r2 = fma(r.x, r.x, fma(r.y, r.y, fma(r.z, r.z, params.eps2)));
    let rinv = inverseSqrt(r2);
    let t = rinv * rinv;
    let s = c.diag.xyz;
    let o = c.off;
    let sr = vec3<f32>(
        fma(s.x, r.x, fma(o.x, r.y, o.y * r.z)),
        fma(o.x, r.x, fma(s.y, r.y, o.z * r.z)),
        fma(o.y, r.x, fma(o.z, r.y, s.z * r.z)),
    );
    let u = dot(r, sr) * t;
    let h = c.diag.w;
    let m = c.com_mass.w;
    let pot_term = fma(t, fma(0.5, u, -h), m);
    let acc_term = fma(t, fma(2.5, u, -3.0 * h), m);
    let rinv3 = rinv * t;
    var out = a;
    out.pot = fma(-rinv, pot_term, out.pot);
    out.acc = fma(vec3<f32>(rinv3 * t), sr, fma(vec3<f32>(-rinv3 * acc_term), r, out.acc));
    return out;
}

fn pair_force(x: vec3<f32>, p: vec4<f32>, a: Accum) -> Accum {
    let d = p.xyz - x;
    let r2 = fma(d.x, d.x, fma(d.y, d.y, fma(d.z, d.z, params.eps2)));
    let rinv = select(0.0, inverseSqrt(r2), r2 > 0.0);
    let mrinv = p.w * rinv;
    return Accum(a.acc + (mrinv * rinv * rinv) * d, a.pot - mrinv);
}

// Four cells on the invocation's particles: with two particles each, two
// chains per particle (c0, c2 and c1, c3); with one, add_cells_single.
fn add_cells(xs: Pair, c0: Moments, c1: Moments, c2: Moments, c3: Moments, acc: ptr<function, PairAccum>) {
    if (!TWO_PER_LANE) {
        add_cells_single(xs, c0, c1, c2, c3, acc);
        return;
    }
    (*acc).a0 = multipole_force(xs.x0, c0, (*acc).a0);
    (*acc).b0 = multipole_force(xs.x0, c1, (*acc).b0);
    (*acc).a1 = multipole_force(xs.x1, c0, (*acc).a1);
    (*acc).b1 = multipole_force(xs.x1, c1, (*acc).b1);
    (*acc).a0 = multipole_force(xs.x0, c2, (*acc).a0);
    (*acc).b0 = multipole_force(xs.x0, c3, (*acc).b0);
    (*acc).a1 = multipole_force(xs.x1, c2, (*acc).a1);
    (*acc).b1 = multipole_force(xs.x1, c3, (*acc).b1);
}

// Four cells on the first particle alone, four chains.
fn add_cells_single(xs: Pair, c0: Moments, c1: Moments, c2: Moments, c3: Moments, acc: ptr<function, PairAccum>) {
    (*acc).a0 = multipole_force(xs.x0, c0, (*acc).a0);
    (*acc).b0 = multipole_force(xs.x0, c1, (*acc).b0);
    (*acc).a1 = multipole_force(xs.x0, c2, (*acc).a1);
    (*acc).b1 = multipole_force(xs.x0, c3, (*acc).b1);
}

// ... and one.
fn add_cell(xs: Pair, c: Moments, acc: ptr<function, PairAccum>) {
    (*acc).a0 = multipole_force(xs.x0, c, (*acc).a0);
    if (!xs.single) {
        (*acc).a1 = multipole_force(xs.x1, c, (*acc).a1);
    }
}

// The same for particles.
fn add_particles(xs: Pair, p0: vec4<f32>, p1: vec4<f32>, p2: vec4<f32>, p3: vec4<f32>, acc: ptr<function, PairAccum>) {
    if (!TWO_PER_LANE) {
        add_particles_single(xs, p0, p1, p2, p3, acc);
        return;
    }
    (*acc).a0 = pair_force(xs.x0, p0, (*acc).a0);
    (*acc).b0 = pair_force(xs.x0, p1, (*acc).b0);
    (*acc).a1 = pair_force(xs.x1, p0, (*acc).a1);
    (*acc).b1 = pair_force(xs.x1, p1, (*acc).b1);
    (*acc).a0 = pair_force(xs.x0, p2, (*acc).a0);
    (*acc).b0 = pair_force(xs.x0, p3, (*acc).b0);
    (*acc).a1 = pair_force(xs.x1, p2, (*acc).a1);
    (*acc).b1 = pair_force(xs.x1, p3, (*acc).b1);
}

fn add_particles_single(xs: Pair, p0: vec4<f32>, p1: vec4<f32>, p2: vec4<f32>, p3: vec4<f32>, acc: ptr<function, PairAccum>) {
    (*acc).a0 = pair_force(xs.x0, p0, (*acc).a0);
    (*acc).b0 = pair_force(xs.x0, p1, (*acc).b0);
    (*acc).a1 = pair_force(xs.x0, p2, (*acc).a1);
    (*acc).b1 = pair_force(xs.x0, p3, (*acc).b1);
}

fn add_particle(xs: Pair, p: vec4<f32>, acc: ptr<function, PairAccum>) {
    (*acc).a0 = pair_force(xs.x0, p, (*acc).a0);
    if (!xs.single) {
        (*acc).a1 = pair_force(xs.x1, p, (*acc).a1);
    }
}

// The summed forces on the invocation's first and second particle.
fn first_force(xs: Pair, acc: PairAccum) -> Accum {
    if (!xs.single) {
        return add(acc.a0, acc.b0);
    }
    return add(add(acc.a0, acc.b0), add(acc.a1, acc.b1));
}

fn second_force(acc: PairAccum) -> Accum {
    return add(acc.a1, acc.b1);
}

// Exclusive prefix sums of the first `len` listed ranges' particle counts
// into range_offsets; returns the total. Whole workgroup, uniform `len`.
fn scan_range_offsets(len: u32, lid: u32) -> u32 {
    if (len <= SERIAL_SCAN) {
        if (lid == 0u) {
            var sum = 0u;
            for (var e = 0u; e < len; e++) {
                range_offsets[e] = sum;
                sum += range_list[e].y;
            }
            range_offsets[len] = sum;
        }
    } else {
        // A long list (a flush): Hillis–Steele scan of the counts, entries
        // lid + j WALK_LANES per invocation.
        for (var j = 0u; j < SCAN_PER_LANE; j++) {
            let e = lid + j * WALK_LANES;
            range_offsets[e + 1u] = select(0u, range_list[e].y, e < len);
        }
        if (lid == 0u) {
            range_offsets[0] = 0u;
        }
        for (var off = 1u; off < LIST_CAPACITY; off *= 2u) {
            workgroupBarrier();
            var v: array<u32, SCAN_PER_LANE>;
            for (var j = 0u; j < SCAN_PER_LANE; j++) {
                let e = lid + j * WALK_LANES;
                v[j] = select(0u, range_offsets[e + 1u - min(off, e + 1u)], e >= off);
            }
            workgroupBarrier();
            for (var j = 0u; j < SCAN_PER_LANE; j++) {
                range_offsets[lid + j * WALK_LANES + 1u] += v[j];
            }
        }
    }
    return workgroupUniformLoad(&range_offsets[len]);
}

// Position and mass of particle number `idx` of the `len` listed ranges
// (after scan_range_offsets): the range is the last offset <= idx.
fn listed_particle(idx: u32, len: u32) -> vec4<f32> {
    var lo = 0u;
    var hi = len;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (range_offsets[mid] <= idx) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let p = pos_mass[range_list[lo].x + idx - range_offsets[lo]];
    return vec4<f32>(p.pos, p.mass);
}

// A frontier entry as the MAC needs it: the cell (SKIP past the level's
// end, or where a node's children had no room), its range and children,
// its centre of mass, opening radius² and (acceleration MAC) M b³.
struct Probe {
    c: u32,
    cell: TreeCell,
    com: vec3<f32>,
    open_r2: f32,
    mb3: f32,
}

fn frontier_probe(cur: u32, k: u32, cur_len: u32) -> Probe {
    var c = SKIP;
    if (k < cur_len) {
        c = frontier[cur + k];
    }
    if (c == SKIP) {
        return Probe(SKIP, TreeCell(0u, 0u, 0u, 0u), vec3<f32>(0.0), 0.0, 0.0);
    }
    // One index into props (a browser checks each index's bounds), the
    // fields read through it as they are needed.
    let pr = &props[c];
    var mb3 = 0.0;
    if (params.alpha > 0.0) {
        mb3 = (*pr).quad_off.w;
    }
    return Probe(c, cells[c], (*pr).com_mass.xyz, (*pr).quad_diag.w, mb3);
}

// Whether the group (box [lo, hi], tolerances of GroupBox) takes the probed
// cell at squared distance d2 as a multipole (tree_common.wgsl). For the
// same median error the acceleration MAC opens far fewer cells than the
// opening angle (see BENCHMARKS.md): it spends interactions where the
// force is weak, not everywhere alike.
fn accepts(probe: Probe, d2: f32, open_scale: f32, accel_tol: f32) -> bool {
    return mac_accepts(probe.open_r2, probe.mb3, d2, open_scale, accel_tol, params.alpha);
}

// Writes particle i's force (mass m) and interaction counts: in the local
// tree, where the particle met itself in its own leaf, with -m/eps taken
// out; from an imported tree, added to the local walk's.
fn store_force(i: u32, m: f32, a: Accum, pp: u32, pc: u32) {
    if (IMPORTED != 0u) {
        let before = acc_pot[i];
        let counted = interactions[i];
        acc_pot[i] = AccPot(before.acc + a.acc, before.pot + a.pot);
        interactions[i] = InteractionCount(counted.pp + pp, counted.pc + pc);
        return;
    }
    let self_pot = select(0.0, m * inverseSqrt(params.eps2), params.eps2 > 0.0);
    acc_pot[i] = AccPot(a.acc, a.pot + self_pot);
    interactions[i] = InteractionCount(pp, pc);
}

// `subgroups`: the workgroup's subgroup count (lane.sg_count), apart from
// `lane` so that WGSL's uniformity analysis sees it is uniform.
fn walk_groups(wid: u32, nwg: u32, lane: Lane, subgroups: u32) {
    let lid = lane.id;
    let stack = wid * DEFERRED_CAPACITY;
    if (lid == 0u) {
        group_count = atomicLoad(&counters.group_count);
    }
    // Persistent workgroups: each takes groups from the shared counter, at
    // most its share ceil(groups / workgroups), so that together they take
    // every group (and no invocation runs unboundedly long: some drivers,
    // e.g. lavapipe, cap the loop iterations of one invocation).
    // The loops over groups and over a level's chunks count trips by 1
    // (`div_ceil`): natively this walk is 3-4 % faster for it (H200, 2^20
    // and 2^22). The same form for the list evaluations' loops and a
    // counted binary search in `listed_particle` were 4-15 % slower there
    // (BENCHMARKS.md), so those keep their shape.
    let fair_share = div_ceil(workgroupUniformLoad(&group_count), nwg);
    // CPU adapters: the rest in later dispatches (src/tree/walk.rs).
    let cap = params.walk_share_cap;
    let share = select(fair_share, min(fair_share, cap), cap > 0u);
    for (var taken = 0u; taken < share; taken++) {
    // Every invocation is done with the last group's workgroup state.
    workgroupBarrier();
    if (lid == 0u) {
        current_group = atomicAdd(&counters.next_group, 1u);
        deferred[stack] = 0u; // the root
        atomicStore(&deferred_len, 1u);
    }
    let g = workgroupUniformLoad(&current_group);
    if (g >= workgroupUniformLoad(&group_count)) {
        break;
    }
    let grp = group_boxes[g];
    let glo = grp.lo.xyz;
    let ghi = grp.hi.xyz;
    let i0 = grp.start + min(lid, grp.count - 1u);
    let i1 = grp.start + min(lid + WALK_LANES, grp.count - 1u);
    let p0 = pos_mass[i0];
    let p1 = pos_mass[i1];
    let xs = Pair(p0.pos, p1.pos, !TWO_PER_LANE || grp.count <= WALK_LANES);
    var acc = PairAccum(ZERO, ZERO, ZERO, ZERO);
    var pp = 0u;
    var pc = 0u;
    var lens = Lengths(0u, 0u, 0u);
    start_group(lid, &lens);
    // Subtrees still to walk: the root, then nodes that did not fit the
    // frontier. Each is walked breadth-first from an empty frontier.
    loop {
    // Set-aside nodes written by any invocation are visible to the first.
    storageBarrier();
    let pending = workgroupUniformLoad(&deferred_len);
    if (pending == 0u) {
        break;
    }
    if (lid == 0u) {
        frontier[0] = deferred[stack + pending - 1u];
        atomicSub(&deferred_len, 1u);
    }
    var cur = 0u;
    var cur_len = 1u;
    loop {
        if (cur_len == 0u) {
            break;
        }
        let next = FRONTIER_CAPACITY - cur;
        start_level(lid, &lens);
        // The level's entries stay put while it is walked (children go to
        // the other half), so each chunk's cells are loaded one chunk ahead.
        var ahead = frontier_probe(cur, lid, cur_len);
        let chunks = div_ceil(cur_len, WALK_LANES);
        for (var k = 0u; k < chunks; k++) {
            let chunk = k * WALK_LANES;
            let probe = ahead;
            ahead = frontier_probe(cur, chunk + WALK_LANES + lid, cur_len);
            let c = probe.c;
            let cell = probe.cell;
            // What this invocation's cell adds: (cells, ranges, children).
            var want = vec3<u32>(0u);
            if (c != SKIP) {
                let d2 = box_distance2(probe.com, glo, ghi);
                if (cell.count == 0u) {
                    // empty (only after an overflow): nothing to add
                } else if (accepts(probe, d2, grp.open_scale, grp.accel_tol)) {
                    want.x = 1u;
                } else if (cell.child_count == 0u) {
                    want.y = 1u;
                } else {
                    want.z = cell.child_count;
                }
            }
            let at = reserve(want, lane, subgroups, &lens);
            // A node without room in the frontier or on the stack: its
            // particles are summed directly (exact, only slower).
            var spill = false;
            if (want.x != 0u) {
                cell_list[at.x] = c;
            } else if (want.y != 0u) {
                range_list[at.y] = vec2<u32>(cell.start, cell.count);
            } else if (want.z != 0u) {
                if (at.z + want.z <= FRONTIER_CAPACITY) {
                    for (var ch = 0u; ch < want.z; ch++) {
                        frontier[next + at.z + ch] = cell.first_child + ch;
                    }
                } else {
                    for (var ch = at.z; ch < FRONTIER_CAPACITY; ch++) {
                        frontier[next + ch] = SKIP;
                    }
                    // No room: walk this node later as a subtree of its own.
                    let q = atomicAdd(&deferred_len, 1u);
                    if (q < DEFERRED_CAPACITY) {
                        deferred[stack + q] = c;
                    } else {
                        atomicSub(&deferred_len, 1u);
                        spill = true;
                    }
                }
            }
            if (spill) {
                // (The lengths go by value: a pointer passed in non-uniform
                // control flow would make them non-uniform to WGSL's
                // uniformity analysis.)
                var spilled = cell.count;
                if (IMPORTED != 0u) {
                    spilled = 0u;
                    atomicMax(&counters.overflow, IMPORTED_SPILL);
                }
                range_list[reserve_spilled_range(lens.ranges)] = vec2<u32>(cell.start, spilled);
            }
            // Every invocation's entries are in place; evaluate a list when
            // it might not hold another chunk.
            gather_lengths(lid, &lens);
            let flush_cells = lens.cells > FLUSH_CELLS;
            let flush_ranges = lens.ranges > FLUSH_RANGES;
            if (flush_cells) {
                cell_list_force(xs, lens.cells, lane, &acc);
                pc += lens.cells;
            }
            if (flush_ranges) {
                pp += range_list_force(xs, lens.ranges, lane, &acc);
            }
            if (flush_cells || flush_ranges) {
                empty_lists(flush_cells, flush_ranges, lid, &lens);
            }
        }
        gather_next_length(&lens);
        cur_len = min(lens.next, FRONTIER_CAPACITY);
        cur = next;
    }
    }
    cell_list_force(xs, lens.cells, lane, &acc);
    pc += lens.cells;
    pp += range_list_force(xs, lens.ranges, lane, &acc);
    if (lid < grp.count) {
        store_force(i0, p0.mass, first_force(xs, acc), pp, pc);
    }
    if (TWO_PER_LANE && lid + WALK_LANES < grp.count) {
        store_force(i1, p1.mass, second_force(acc), pp, pc);
    }
    }
}
