// Group-based tree walk (Bonsai 2012, §4.3.4). Workgroups of NCRIT
// invocations are persistent: each takes groups from a shared counter (at
// most its share, min(groups, walk_workgroups) of them are dispatched) and
// walks them one after the other; invocation k owns particle k of the
// group. The walk is breadth-first: the current level of the frontier is
// tested against the MAC in chunks of NCRIT cells, one per
// invocation, using the distance from the group's box to the cell's centre
// of mass (eq. 4.1):
//   accepted        -> its index joins the cell list (monopole+quadrupole),
//   opened leaf     -> its particle range joins the particle list (direct),
//   opened node     -> its children join the next frontier level.
// Both lists live in workgroup memory and are evaluated by every invocation
// for its own particle whenever they might not hold another chunk, and once
// more at the end. For evaluation the list entries are first staged in
// workgroup memory by all invocations together (cell moments NCRIT at a
// time; particles of the listed ranges PARTICLE_BATCH at a time), so the
// global loads are issued in parallel rather than one dependent load per
// entry per invocation.
// The frontier (current and next level) lives in workgroup memory too;
// when it is full, an opened node is set aside on the workgroup's stack in
// global memory (DEFERRED_CAPACITY entries) and walked afterwards as a
// subtree of its own (only if that stack is full too does its particle
// range go to the particle list: exact, only slower).
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
// One range in `list_lens`.
const RANGE_ONE: u32 = 0x10000u;

var<workgroup> cell_list: array<u32, LIST_CAPACITY>;
var<workgroup> range_list: array<vec2<u32>, LIST_CAPACITY>;
// Lengths of both lists in one word (cells in the low 16 bits, ranges in
// the high 16), so one uniform load per chunk reads both.
var<workgroup> list_lens: atomic<u32>;
var<workgroup> next_len: atomic<u32>;
var<workgroup> frontier: array<u32, 2 * FRONTIER_CAPACITY>;
var<workgroup> group_count: u32;
var<workgroup> current_group: u32;
var<workgroup> deferred_len: atomic<u32>;
// Staged moments of up to NCRIT listed cells: com_mass, quad_diag, quad_off.
var<workgroup> staged_cells: array<array<vec4<f32>, 3>, NCRIT>;
// Staged particles (position, mass) of the listed ranges, PARTICLE_BATCH
// at a time (each invocation stages several, so one pair of barriers
// serves more interactions).
const PARTICLE_BATCH: u32 = 2u * NCRIT;
// Range lists up to this long are scanned by one invocation (the final
// evaluation of a walk), longer ones (flushes) by all.
const SERIAL_SCAN: u32 = 16u;
var<workgroup> staged_particles: array<vec4<f32>, PARTICLE_BATCH>;
// Exclusive prefix sums of the listed ranges' particle counts.
var<workgroup> range_offsets: array<u32, LIST_CAPACITY_PLUS_ONE>;

// Squared distance from point p to the box [lo, hi] (0 inside).
fn box_distance2(p: vec3<f32>, lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    let d = max(lo - p, max(vec3<f32>(0.0), p - hi));
    return dot(d, d);
}

struct Accum {
    acc: vec3<f32>,
    pot: f32,
}

const ZERO = Accum(vec3<f32>(0.0), 0.0);

fn sum4(a: Accum, b: Accum, c: Accum, d: Accum) -> Accum {
    return Accum((a.acc + b.acc) + (c.acc + d.acc), (a.pot + b.pot) + (c.pot + d.pot));
}

// Monopole + quadrupole of a cell at position `x` (softened as the
// direct sum): with r = x - com, S the second moments, q = r·S·r,
//   φ = -M/r - 3q/(2r⁵) + tr(S)/(2r³),
//   a = -M r/r³ + 3 S r/r⁵ - 15 q r/(2r⁷) + 3 tr(S) r/(2r⁵).
fn multipole_force(x: vec3<f32>, com_mass: vec4<f32>, s: vec3<f32>, o: vec3<f32>, a: Accum) -> Accum {
    let r = x - com_mass.xyz;
    let r2 = dot(r, r) + params.eps2;
    let rinv = inverseSqrt(r2);
    let rinv2 = rinv * rinv;
    let rinv3 = rinv * rinv2;
    let rinv5 = rinv3 * rinv2;
    let sr = vec3<f32>(
        s.x * r.x + o.x * r.y + o.y * r.z,
        o.x * r.x + s.y * r.y + o.z * r.z,
        o.y * r.x + o.z * r.y + s.z * r.z,
    );
    let q = dot(r, sr);
    let tr = s.x + s.y + s.z;
    let m = com_mass.w;
    var out = a;
    out.pot += -m * rinv - 1.5 * q * rinv5 + 0.5 * tr * rinv3;
    out.acc += (-m * rinv3 - 7.5 * q * rinv5 * rinv2 + 1.5 * tr * rinv5) * r + (3.0 * rinv5) * sr;
    return out;
}

@compute @workgroup_size(NCRIT)
fn walk(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let stack = wid.x * DEFERRED_CAPACITY;
    if (lid == 0u) {
        group_count = atomicLoad(&counters.group_count);
    }
    // Persistent workgroups: each takes groups from the shared counter, at
    // most its share ceil(groups / workgroups), so that together they take
    // every group (and no invocation runs unboundedly long: some drivers,
    // e.g. lavapipe, cap the loop iterations of one invocation).
    let share = (workgroupUniformLoad(&group_count) + nwg.x - 1u) / nwg.x;
    for (var taken = 0u; taken < share; taken++) {
    // Every invocation is done with the last group's workgroup state.
    workgroupBarrier();
    if (lid == 0u) {
        current_group = atomicAdd(&counters.next_group, 1u);
        atomicStore(&list_lens, 0u);
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
    let mine = lid < grp.count;
    let i = grp.start + min(lid, grp.count - 1u);
    let me = pos_mass[i];
    var a = Accum(vec3<f32>(0.0), 0.0);
    var pp = 0u;
    var pc = 0u;
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
        // Every invocation has read the last next_len before it is reset.
        workgroupBarrier();
        if (lid == 0u) {
            atomicStore(&next_len, 0u);
        }
        workgroupBarrier();
        for (var chunk = 0u; chunk < cur_len; chunk += NCRIT) {
            let k = chunk + lid;
            if (k < cur_len) {
                let c = frontier[cur + k];
                if (c != SKIP) {
                    let cell = cells[c];
                    let open_r2 = props[c].quad_diag.w;
                    let d2 = box_distance2(props[c].com_mass.xyz, glo, ghi);
                    if (cell.count == 0u) {
                        // empty (only after an overflow): nothing to add
                    } else if (d2 > open_r2) {
                        cell_list[atomicAdd(&list_lens, 1u) & 0xffffu] = c;
                    } else if (cell.child_count == 0u) {
                        range_list[atomicAdd(&list_lens, RANGE_ONE) >> 16u] = vec2<u32>(cell.start, cell.count);
                    } else {
                        let s = atomicAdd(&next_len, cell.child_count);
                        if (s + cell.child_count <= FRONTIER_CAPACITY) {
                            for (var ch = 0u; ch < cell.child_count; ch++) {
                                frontier[next + s + ch] = cell.first_child + ch;
                            }
                        } else {
                            for (var ch = s; ch < FRONTIER_CAPACITY; ch++) {
                                frontier[next + ch] = SKIP;
                            }
                            // No room: walk this node later as a subtree of
                            // its own; with no room for that either, sum its
                            // particles directly (exact, only slower).
                            let q = atomicAdd(&deferred_len, 1u);
                            if (q < DEFERRED_CAPACITY) {
                                deferred[stack + q] = c;
                            } else {
                                atomicSub(&deferred_len, 1u);
                                range_list[atomicAdd(&list_lens, RANGE_ONE) >> 16u] = vec2<u32>(cell.start, cell.count);
                            }
                        }
                    }
                }
            }
            // Evaluate a list when it might not hold another chunk.
            let lens = workgroupUniformLoad(&list_lens);
            let n_cells = lens & 0xffffu;
            let n_ranges = lens >> 16u;
            let flush_cells = n_cells > LIST_CAPACITY - NCRIT;
            let flush_ranges = n_ranges > LIST_CAPACITY - NCRIT;
            if (flush_cells) {
                cell_list_force(me.pos, n_cells, lid, &a);
                pc += n_cells;
            }
            if (flush_ranges) {
                pp += range_list_force(me.pos, n_ranges, lid, &a);
            }
            if (flush_cells || flush_ranges) {
                workgroupBarrier();
                if (lid == 0u) {
                    atomicSub(&list_lens, select(0u, n_cells, flush_cells) + select(0u, lens & 0xffff0000u, flush_ranges));
                }
                workgroupBarrier();
            }
        }
        cur_len = min(workgroupUniformLoad(&next_len), FRONTIER_CAPACITY);
        cur = next;
    }
    }
    let lens = workgroupUniformLoad(&list_lens);
    cell_list_force(me.pos, lens & 0xffffu, lid, &a);
    pc += lens & 0xffffu;
    pp += range_list_force(me.pos, lens >> 16u, lid, &a);
    if (mine) {
        // The particle met itself in its own leaf: remove -m/eps.
        let self_pot = select(0.0, me.mass * inverseSqrt(params.eps2), params.eps2 > 0.0);
        acc_pot[i] = AccPot(a.acc, a.pot + self_pot);
        interactions[i] = InteractionCount(pp, pc);
    }
    }
}

// Adds the forces of the `len` listed cells, staged NCRIT at a time. Must be
// called by the whole workgroup (uniform `len`).
fn cell_list_force(x: vec3<f32>, len: u32, lid: u32, out: ptr<function, Accum>) {
    for (var base = 0u; base < len; base += NCRIT) {
        if (base + lid < len) {
            let p = props[cell_list[base + lid]];
            staged_cells[lid] = array<vec4<f32>, 3>(p.com_mass, p.quad_diag, p.quad_off);
        }
        workgroupBarrier();
        let batch = min(NCRIT, len - base);
        // Four independent accumulators: each evaluation is a long dependent
        // chain, and interleaving four of them hides its latency.
        var a0 = *out;
        var a1 = ZERO;
        var a2 = ZERO;
        var a3 = ZERO;
        var e = 0u;
        for (; e + 4u <= batch; e += 4u) {
            let c0 = staged_cells[e];
            let c1 = staged_cells[e + 1u];
            let c2 = staged_cells[e + 2u];
            let c3 = staged_cells[e + 3u];
            a0 = multipole_force(x, c0[0], c0[1].xyz, c0[2].xyz, a0);
            a1 = multipole_force(x, c1[0], c1[1].xyz, c1[2].xyz, a1);
            a2 = multipole_force(x, c2[0], c2[1].xyz, c2[2].xyz, a2);
            a3 = multipole_force(x, c3[0], c3[1].xyz, c3[2].xyz, a3);
        }
        for (; e < batch; e++) {
            let c = staged_cells[e];
            a0 = multipole_force(x, c[0], c[1].xyz, c[2].xyz, a0);
        }
        *out = sum4(a0, a1, a2, a3);
        workgroupBarrier();
    }
}

// Adds the forces of all particles of the `len` listed ranges, staged
// PARTICLE_BATCH at a time, and returns their number. Whole workgroup,
// uniform `len`.
fn range_list_force(x: vec3<f32>, len: u32, lid: u32, out: ptr<function, Accum>) -> u32 {
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
        // lid and lid + NCRIT per invocation (LIST_CAPACITY = 2 NCRIT).
        let e0 = lid;
        let e1 = lid + NCRIT;
        range_offsets[e0 + 1u] = select(0u, range_list[e0].y, e0 < len);
        range_offsets[e1 + 1u] = select(0u, range_list[e1].y, e1 < len);
        if (lid == 0u) {
            range_offsets[0] = 0u;
        }
        for (var off = 1u; off < LIST_CAPACITY; off *= 2u) {
            workgroupBarrier();
            let v0 = select(0u, range_offsets[e0 + 1u - min(off, e0 + 1u)], e0 >= off);
            let v1 = select(0u, range_offsets[e1 + 1u - min(off, e1 + 1u)], e1 >= off);
            workgroupBarrier();
            range_offsets[e0 + 1u] += v0;
            range_offsets[e1 + 1u] += v1;
        }
    }
    let total = workgroupUniformLoad(&range_offsets[len]);
    for (var base = 0u; base < total; base += PARTICLE_BATCH) {
        for (var s = lid; s < PARTICLE_BATCH; s += NCRIT) {
            let idx = base + s;
            if (idx < total) {
                // The range holding particle number idx: last offset <= idx.
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
                staged_particles[s] = vec4<f32>(p.pos, p.mass);
            }
        }
        workgroupBarrier();
        let batch = min(PARTICLE_BATCH, total - base);
        var a0 = *out;
        var a1 = ZERO;
        var a2 = ZERO;
        var a3 = ZERO;
        var e = 0u;
        for (; e + 4u <= batch; e += 4u) {
            a0 = pair_force(x, staged_particles[e], a0);
            a1 = pair_force(x, staged_particles[e + 1u], a1);
            a2 = pair_force(x, staged_particles[e + 2u], a2);
            a3 = pair_force(x, staged_particles[e + 3u], a3);
        }
        for (; e < batch; e++) {
            a0 = pair_force(x, staged_particles[e], a0);
        }
        *out = sum4(a0, a1, a2, a3);
        workgroupBarrier();
    }
    return total;
}

fn pair_force(x: vec3<f32>, p: vec4<f32>, a: Accum) -> Accum {
    let d = p.xyz - x;
    let r2 = dot(d, d) + params.eps2;
    let rinv = select(0.0, inverseSqrt(r2), r2 > 0.0);
    let mrinv = p.w * rinv;
    return Accum(a.acc + (mrinv * rinv * rinv) * d, a.pot - mrinv);
}
