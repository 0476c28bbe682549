// Hermite forces of the active particles i against all j-particles (driven
// by src/direct/hermite_force.rs), Sapporo2's gravity kernel in WGSL:
//  gather: i-particles from the predicted j-particles of the active list;
//  force:  one invocation per sink, HT sinks per workgroup; workgroup
//          (x, y) takes sinks [x HT, (x+1) HT) against the y-th split of
//          the j-range, staging HT sources at a time in workgroup memory.
//          A small active block is split over many j-ranges so the GPU
//          stays busy; each split writes a partial sum;
//  force_lanes: the same for blocks of a few sinks, params.sink_lanes
//          invocations per sink (RW per workgroup): each lane sums a
//          contiguous run of the workgroup's split, and the lanes' sums are
//          merged in workgroup memory (one partial per split, as `force`).
//          A one-sink block then runs its split with RW invocations, not
//          one live invocation among HT;
//  reduce: sums the partials of every sink (double-single) and keeps the
//          nearest neighbour of all splits, several invocations per sink
//          where there are many splits.
// Per interaction (G = 1, dr = x_j - x_i, dv = v_j - v_i, da = a_j - a_i,
// r2 = |dr|^2 + eps^2, j != i by id):
//   A = m r2^-3/2 dr,  phi -= m r2^-1/2,
//   alpha = dr.dv / r2,  J = m r2^-3/2 dv - 3 alpha A           (ORDER >= 4)
//   beta = (|dv|^2 + dr.da) / r2 + alpha^2,
//   S = m r2^-3/2 da - 6 alpha J - 3 beta A                     (ORDER == 6)
// and the nearest neighbour by unsoftened |dr|^2 (ties: the smaller id
// within a split, the earlier split between splits).
// DS == 1: positions double-single (dr from ds3_diff), acc, pot, jerk and
// snap accumulated double-single, per-interaction arithmetic f32. Runs of
// DSG interactions are summed in f32 and each run's sum enters the
// double-single sums once; REFINE == 1 refines 1/sqrt(r2) by a Newton step.
//   `ds`:      DSG = 1, REFINE = 1: every interaction exact in the sums
//              (on adapters with f64, force_ds64 in hermite_force_dp.wgsl
//              adds the same interactions to f64 sums instead);
//   `ds-fast`: DSG = 32, REFINE = 0: Sapporo2's DS arithmetic (its threads
//              sum ~30-60 interactions in f32 before double; bare rsqrt).
// DS == 0: everything f32 (positions rounded to f32).

@group(0) @binding(0) var<storage, read> params: HermiteParams;
@group(0) @binding(1) var<storage, read> pred: array<PredJ>;
@group(0) @binding(2) var<storage, read> active_list: array<u32>;
@group(0) @binding(3) var<storage, read_write> ip: array<IParticle>;
@group(0) @binding(4) var<storage, read_write> partial: array<ForceResult>;
@group(0) @binding(5) var<storage, read_write> results: array<ForceResult>;

const NO_ID: u32 = 0xffffffffu;
// f32::MAX (hex: a decimal literal may round above it, which Tint rejects).
const FAR: f32 = 0x1.fffffep+127f;

// One staged source, read as a whole record: a browser's compiler checks
// the bounds of every array access it cannot prove in range (WebGPU's
// robustness; pages cannot turn it off), so one array of records costs
// one check per source where an array per field cost five. The loops over
// a tile count to the constant HT, which Tint's integer range analysis
// proves in bounds, so where Chrome runs that analysis no check remains.
struct Source {
    // High words of the position, and the mass (0 for padding).
    pos: vec4<f32>,
    lo: vec3<f32>,
    id: u32,
    vel: vec3<f32>,
    acc: vec3<f32>,
}

var<workgroup> tile: array<Source, HT>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k >= params.ni) {
        return;
    }
    let p = pred[active_list[k]];
    ip[k] = IParticle(p.pos_hi, p.id, p.pos_lo, 0.0, p.vel, 0u, p.acc, 0u, p.vel_lo, 0u);
}

// Source p into entry k of the tile; a padding entry (`real` false) keeps
// p's position and id but no mass, so it adds exactly zero to every sum
// and, at p's own distance, never wins the nearest neighbour from p.
fn stage(k: u32, p: PredJ, real: bool) {
    tile[k] = Source(vec4<f32>(p.pos_hi, select(0.0, p.mass, real)), p.pos_lo, p.id, p.vel, p.acc);
}

// What one staged source does to sink `me`.
struct Interaction {
    acc_pot: vec4<f32>,
    jerk: vec3<f32>,
    snap: vec3<f32>,
    // Unsoftened squared distance and the source's id (nearest neighbour).
    d2: f32,
    id: u32,
    other: bool,
}

fn interaction(src: Source, me: IParticle, eps2: f32, one: f32) -> Interaction {
    let s = src.pos;
    var dr: vec3<f32>;
    if (DS == 1u) {
        dr = ds3_diff(s.xyz, src.lo, me.pos_hi, me.pos_lo, one);
    } else {
        dr = s.xyz - me.pos_hi;
    }
    let jid = src.id;
    let other = jid != me.id;
    let d2 = dot(dr, dr);
    let r2 = d2 + eps2;
    var rinv = select(0.0, inverseSqrt(r2), other && r2 > 0.0);
    if (REFINE == 1u) {
        // inverseSqrt may be off by a few ulp, and not at random (WGSL
        // allows 2 ulp; lavapipe's is biased), which no double-single sum
        // can undo: one Newton step with the residual from an FMA brings
        // it to f32 rounding.
        let e = fma(-(r2 * rinv), rinv, 1.0);
        rinv = fma(0.5 * rinv, e, rinv);
    }
    let mr = s.w * rinv;
    let rinv2 = rinv * rinv;
    let mr3 = mr * rinv2;
    let a = mr3 * dr;
    var out = Interaction(vec4<f32>(a, -mr), vec3<f32>(0.0), vec3<f32>(0.0), d2, jid, other);
    if (ORDER >= 4u) {
        let dv = src.vel - me.vel;
        let alpha = dot(dr, dv) * rinv2;
        let jj = mr3 * dv - (3.0 * alpha) * a;
        out.jerk = jj;
        if (ORDER == 6u) {
            let da = src.acc - me.acc;
            let beta = (dot(dv, dv) + dot(dr, da)) * rinv2 + alpha * alpha;
            out.snap = mr3 * da - (6.0 * alpha) * jj - (3.0 * beta) * a;
        }
    }
    return out;
}

// The running sums of one invocation.
struct Sums {
    ap: Ds4,
    jk: Ds3,
    sn: Ds3,
    nn_d2: f32,
    nn_id: u32,
}

fn no_sums() -> Sums {
    return Sums(Ds4(vec4<f32>(0.0), vec4<f32>(0.0)), Ds3(vec3<f32>(0.0), vec3<f32>(0.0)),
        Ds3(vec3<f32>(0.0), vec3<f32>(0.0)), FAR, NO_ID);
}

// One interaction added to the sums: exactly (two-sum) with DS, in f32
// without.
fn add_interaction(s: ptr<function, Sums>, c: Interaction, one: f32) {
    if (DS == 1u) {
        (*s).ap = ds4_add_f((*s).ap, c.acc_pot, one);
        if (ORDER >= 4u) {
            (*s).jk = ds3_add_f((*s).jk, c.jerk, one);
        }
        if (ORDER == 6u) {
            (*s).sn = ds3_add_f((*s).sn, c.snap, one);
        }
    } else {
        (*s).ap.hi += c.acc_pot;
        (*s).jk.hi += c.jerk;
        (*s).sn.hi += c.snap;
    }
    if (c.other && c.d2 < (*s).nn_d2) {
        (*s).nn_d2 = c.d2;
        (*s).nn_id = c.id;
    }
}

fn sums_result(s: Sums) -> ForceResult {
    return ForceResult(s.ap.hi.xyz, s.ap.hi.w, s.ap.lo.xyz, s.ap.lo.w,
        s.jk.hi, s.nn_d2, s.jk.lo, s.nn_id, s.sn.hi, 0u, s.sn.lo, 0u);
}

// The sources [x, y) of split wid.y of `force` (and `force_ds64`): a
// function of the workgroup alone, so that WGSL's uniformity analysis
// sees the loops over it (with their barriers) as uniform.
fn split_range(wid: vec3<u32>) -> vec2<u32> {
    let j_begin = wid.y * params.chunk;
    return vec2<u32>(j_begin, min(j_begin + params.chunk, params.nj));
}

// How many tiles of HT sources cover the split's sources `js` (none for
// an empty split); the loops over tiles count them by 1 (`div_ceil`).
fn tiles_of(js: vec2<u32>) -> u32 {
    return select(0u, div_ceil(js.y - js.x, HT), js.y > js.x);
}

// Sink i (wid.x HT + lid), or for invocations past ni the last sink:
// those still stage sources (every invocation must reach the barriers)
// but never store.
fn sink_of(i: u32) -> IParticle {
    return ip[min(i, params.ni - 1u)];
}

// Stages sources [base, base + HT) for the workgroup; entries at j_end
// and past it are padding (source j_end - 1 without mass), so the loops
// over a tile always run HT entries.
fn stage_tile(base: u32, j_end: u32, lid: u32) {
    let p = pred[min(base + lid, j_end - 1u)];
    workgroupBarrier();
    stage(lid, p, base + lid < j_end);
    workgroupBarrier();
}

@compute @workgroup_size(HT)
fn force(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let one = params.one;
    let ni = params.ni;
    let eps2 = params.eps2;
    let i = wid.x * HT + lid;
    let me = sink_of(i);
    let js = split_range(wid);
    let j_end = js.y;
    var ap = Ds4(vec4<f32>(0.0), vec4<f32>(0.0));
    var jk = Ds3(vec3<f32>(0.0), vec3<f32>(0.0));
    var sn = Ds3(vec3<f32>(0.0), vec3<f32>(0.0));
    var nn_d2 = FAR;
    var nn_id = NO_ID;
    let tiles = tiles_of(js);
    for (var t = 0u; t < tiles; t++) {
        stage_tile(js.x + t * HT, j_end, lid);
        if (DSG == 1u) {
            // Every interaction straight into the sums (a loop of its
            // own: the nested form below cost `ds` a third on an H100).
            for (var k = 0u; k < HT; k++) {
                let c = interaction(tile[k], me, eps2, one);
                ap = ds4_add_f(ap, c.acc_pot, one);
                if (ORDER >= 4u) {
                    jk = ds3_add_f(jk, c.jerk, one);
                }
                if (ORDER == 6u) {
                    sn = ds3_add_f(sn, c.snap, one);
                }
                if (c.other && c.d2 < nn_d2) {
                    nn_d2 = c.d2;
                    nn_id = c.id;
                }
            }
        } else {
            // Runs of DSG entries (DSG divides HT), each summed in f32.
            for (var run = 0u; run < HT / DSG; run++) {
                var ga = vec4<f32>(0.0);
                var gj = vec3<f32>(0.0);
                var gs = vec3<f32>(0.0);
                for (var q = 0u; q < DSG; q++) {
                    let c = interaction(tile[run * DSG + q], me, eps2, one);
                    ga += c.acc_pot;
                    gj += c.jerk;
                    gs += c.snap;
                    if (c.other && c.d2 < nn_d2) {
                        nn_d2 = c.d2;
                        nn_id = c.id;
                    }
                }
                if (DS == 1u) {
                    ap = ds4_add_f(ap, ga, one);
                    if (ORDER >= 4u) {
                        jk = ds3_add_f(jk, gj, one);
                    }
                    if (ORDER == 6u) {
                        sn = ds3_add_f(sn, gs, one);
                    }
                } else {
                    ap.hi += ga;
                    jk.hi += gj;
                    sn.hi += gs;
                }
            }
        }
    }
    if (i < ni) {
        partial[wid.y * params.ni_stride + i] = sums_result(Sums(ap, jk, sn, nn_d2, nn_id));
    }
}

// One partial sum added after another that covers earlier splits (the
// nearest neighbour of the earlier one wins ties).
fn merge_partials(a: ForceResult, b: ForceResult, one: f32) -> ForceResult {
    let ap = ds4_add(Ds4(vec4<f32>(a.acc_hi, a.pot_hi), vec4<f32>(a.acc_lo, a.pot_lo)),
        Ds4(vec4<f32>(b.acc_hi, b.pot_hi), vec4<f32>(b.acc_lo, b.pot_lo)), one);
    let jk = ds3_add(Ds3(a.jerk_hi, a.jerk_lo), Ds3(b.jerk_hi, b.jerk_lo), one);
    let sn = ds3_add(Ds3(a.snap, a.snap_lo), Ds3(b.snap, b.snap_lo), one);
    var nn_d2 = a.nn_d2;
    var nn_id = a.nn_id;
    if (b.nn_d2 < nn_d2) {
        nn_d2 = b.nn_d2;
        nn_id = b.nn_id;
    }
    return ForceResult(ap.hi.xyz, ap.hi.w, ap.lo.xyz, ap.lo.w,
        jk.hi, nn_d2, jk.lo, nn_id, sn.hi, 0u, sn.lo, 0u);
}

// The lanes' sums of force_lanes and of the reduce, merged pairwise in
// workgroup memory.
var<workgroup> lane_sum: array<ForceResult, RW>;

// Merges the sums of `lanes` neighbouring invocations (a power of two;
// this one is `lane` of its run, at lid), earlier lane first, in log2
// lanes pairwise steps; lane 0 returns the run's sum. Every invocation of
// the workgroup must call it with the same `lanes`.
fn merge_lanes(sum: ForceResult, lid: u32, lane: u32, lanes: u32, one: f32) -> ForceResult {
    var acc = sum;
    lane_sum[lid] = acc;
    for (var step = 1u; step < lanes; step *= 2u) {
        workgroupBarrier();
        if (lane % (2u * step) == 0u) {
            acc = merge_partials(acc, lane_sum[lid + step], one);
            lane_sum[lid] = acc;
        }
    }
    return acc;
}

// params.sink_lanes = L invocations per sink, RW / L sinks per workgroup:
// workgroup (x, y) takes sinks [x RW/L, (x+1) RW/L) against the y-th split
// of the j-range (params.chunk sources, a multiple of RW), and lane l of a
// sink the l-th of L contiguous runs of it. Each round stages RW / L
// sources of every lane's run, row k of lane l at k L + l (the lanes of a
// row read neighbouring entries).
@compute @workgroup_size(RW)
fn force_lanes(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let lanes = params.sink_lanes;
    let rows = RW / lanes;
    let lane = lid % lanes;
    let i = wid.x * rows + lid / lanes;
    let me = ip[min(i, params.ni - 1u)];
    let nj = params.nj;
    let one = params.one;
    let eps2 = params.eps2;
    let run = params.chunk / lanes;
    let run_begin = wid.y * params.chunk + lane * run;
    let run_end = min(run_begin + run, nj);
    var sums = no_sums();
    for (var base = 0u; base < run; base += rows) {
        // This invocation stages row lid / L of its own lane's run.
        let p = pred[min(run_begin + base + lid / lanes, nj - 1u)];
        workgroupBarrier();
        stage(lid, p, true);
        workgroupBarrier();
        let first = run_begin + base;
        let count = select(0u, min(rows, run_end - first), first < run_end);
        for (var k = 0u; k < count; k++) {
            add_interaction(&sums, interaction(tile[k * lanes + lane], me, eps2, one), one);
        }
    }
    let acc = merge_lanes(sums_result(sums), lid, lane, lanes, one);
    if (lane == 0u && i < params.ni) {
        partial[wid.y * params.ni_stride + i] = acc;
    }
}

// params.reduce_lanes (a power of two <= RW) invocations per sink: lane l
// sums the l-th contiguous run of splits in split order, then neighbouring
// runs are merged pairwise, earlier run first (log2 lanes steps). A small
// block split over hundreds of j-ranges is reduced in a few dependent
// steps instead of one invocation walking all its partials.
@compute @workgroup_size(RW)
fn reduce(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let lanes = params.reduce_lanes;
    let g = (wid.y * nwg.x + wid.x) * RW + lid;
    let i_raw = g / lanes;
    // Invocations past the sinks take part in the merges (every
    // invocation must reach the barriers) but never store.
    let i = min(i_raw, params.ni - 1u);
    let lane = g % lanes;
    let one = params.one;
    let per = div_ceil(params.nsplit, lanes);
    let s0 = min(lane * per, params.nsplit);
    let s1 = min(s0 + per, params.nsplit);
    var acc = sums_result(no_sums());
    if (s0 < s1) {
        acc = partial[s0 * params.ni_stride + i];
    }
    for (var s = s0 + 1u; s < s1; s++) {
        acc = merge_partials(acc, partial[s * params.ni_stride + i], one);
    }
    acc = merge_lanes(acc, lid, lane, lanes, one);
    if (lane == 0u && i_raw < params.ni) {
        let ap = ds4_norm(vec4<f32>(acc.acc_hi, acc.pot_hi), vec4<f32>(acc.acc_lo, acc.pot_lo), one);
        let jk = ds3_norm(acc.jerk_hi, acc.jerk_lo, one);
        let sn = ds3_norm(acc.snap, acc.snap_lo, one);
        results[i] = ForceResult(ap.hi.xyz, ap.hi.w, ap.lo.xyz, ap.lo.w,
            jk.hi, acc.nn_d2, jk.lo, acc.nn_id, sn.hi, 0u, sn.lo, 0u);
    }
}
