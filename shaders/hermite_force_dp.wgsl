// The f64 force kernels (driven by src/hermite/hermite_force.rs), composed
// after hermite_force.wgsl (its bindings, gather and interaction) and built
// only on devices with native f64 (wgpu SHADER_F64):
//  force_ds64: `ds` with f64 sums (below);
//  force_dp, reduce_dp: --precision dp.
// force_dp and reduce_dp follow the scheme and formulas of `force` and
// `reduce`, in f64 throughout: positions and velocities of sinks and
// sources from their double-single pairs, every per-interaction quantity,
// 1/sqrt (an f32 estimate refined by two f64 Newton steps) and the sums
// in f64; the sources' predicted accelerations (only the snap uses them)
// in f32, masses from their double-single pairs. Results leave as
// double-single pairs (acc, pot, jerk, snap: about 48 significant bits);
// the partial sums of a split j-range are added in f64.

var<workgroup> dtile_pos: array<vec3<f64>, HT>;
var<workgroup> dtile_vel: array<vec3<f64>, HT>;
var<workgroup> dtile_acc: array<vec3<f32>, HT>;
var<workgroup> dtile_mass: array<f64, HT>;
var<workgroup> dtile_id: array<u32, HT>;

fn dp_of(hi: vec3<f32>, lo: vec3<f32>) -> vec3<f64> {
    return vec3<f64>(hi) + vec3<f64>(lo);
}

// The f64 sums as one ForceResult (hi + lo pairs).
fn dp_result(acc: vec3<f64>, pot: f64, jerk: vec3<f64>, snap: vec3<f64>, nn_d2: f32,
             nn_id: u32) -> ForceResult {
    let acc_hi = vec3<f32>(acc);
    let pot_hi = f32(pot);
    let jerk_hi = vec3<f32>(jerk);
    let snap_hi = vec3<f32>(snap);
    return ForceResult(acc_hi, pot_hi, vec3<f32>(acc - vec3<f64>(acc_hi)), f32(pot - f64(pot_hi)),
        jerk_hi, nn_d2, vec3<f32>(jerk - vec3<f64>(jerk_hi)), nn_id, snap_hi, 0u,
        vec3<f32>(snap - vec3<f64>(snap_hi)), 0u);
}

@compute @workgroup_size(HT)
fn force_dp(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let ni = params.ni;
    let eps2 = f64(params.eps2) + f64(params.eps2_lo);
    let i = wid.x * HT + lid;
    let j_begin = wid.y * params.chunk;
    let j_end = min(j_begin + params.chunk, params.nj);
    let me = ip[min(i, ni - 1u)];
    let xi = dp_of(me.pos_hi, me.pos_lo);
    let vi = dp_of(me.vel, me.vel_lo);
    let ai = vec3<f64>(me.acc);
    var acc = vec3<f64>(0.0lf);
    var pot = 0.0lf;
    var jk = vec3<f64>(0.0lf);
    var sn = vec3<f64>(0.0lf);
    var nn_d2 = FAR;
    var nn_id = NO_ID;
    for (var base = j_begin; base < j_end; base += HT) {
        let j = min(base + lid, j_end - 1u);
        let p = pred[j];
        workgroupBarrier();
        dtile_pos[lid] = dp_of(p.pos_hi, p.pos_lo);
        dtile_vel[lid] = dp_of(p.vel, p.vel_lo);
        dtile_acc[lid] = p.acc;
        dtile_mass[lid] = f64(p.mass) + f64(p.mass_lo);
        dtile_id[lid] = p.id;
        workgroupBarrier();
        let count = min(HT, j_end - base);
        for (var k = 0u; k < count; k++) {
            let dr = dtile_pos[k] - xi;
            let jid = dtile_id[k];
            let other = jid != me.id;
            let d2 = dot(dr, dr);
            let r2 = d2 + eps2;
            // 1/sqrt(r2): the f32 estimate (2^-22) and two Newton steps in
            // f64 (2^-44, then f64 rounding), far cheaper than f64 sqrt and
            // division, which the GPU does in software sequences.
            var rinv = f64(inverseSqrt(f32(r2)));
            rinv = rinv * (1.5lf - (0.5lf * r2) * rinv * rinv);
            rinv = rinv * (1.5lf - (0.5lf * r2) * rinv * rinv);
            rinv = select(0.0lf, rinv, other && r2 > 0.0lf);
            let mr = dtile_mass[k] * rinv;
            let rinv2 = rinv * rinv;
            let mr3 = mr * rinv2;
            let a = mr3 * dr;
            acc += a;
            pot -= mr;
            if (ORDER >= 4u) {
                let dv = dtile_vel[k] - vi;
                let alpha = dot(dr, dv) * rinv2;
                let jj = mr3 * dv - (3.0lf * alpha) * a;
                jk += jj;
                if (ORDER == 6u) {
                    let da = vec3<f64>(dtile_acc[k].xyz) - ai;
                    let beta = (dot(dv, dv) + dot(dr, da)) * rinv2 + alpha * alpha;
                    sn += mr3 * da - (6.0lf * alpha) * jj - (3.0lf * beta) * a;
                }
            }
            let d2f = f32(d2);
            if (other && d2f < nn_d2) {
                nn_d2 = d2f;
                nn_id = jid;
            }
        }
    }
    if (i < ni) {
        partial[wid.y * params.ni_stride + i] = dp_result(acc, pot, jk, sn, nn_d2, nn_id);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn reduce_dp(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wid, nwg, lid);
    if (i >= params.ni) {
        return;
    }
    var acc = vec3<f64>(0.0lf);
    var pot = 0.0lf;
    var jk = vec3<f64>(0.0lf);
    var sn = vec3<f64>(0.0lf);
    var nn_d2 = FAR;
    var nn_id = NO_ID;
    for (var s = 0u; s < params.nsplit; s++) {
        let q = partial[s * params.ni_stride + i];
        acc += dp_of(q.acc_hi, q.acc_lo);
        pot += f64(q.pot_hi) + f64(q.pot_lo);
        jk += dp_of(q.jerk_hi, q.jerk_lo);
        sn += dp_of(q.snap, q.snap_lo);
        if (q.nn_d2 < nn_d2) {
            nn_d2 = q.nn_d2;
            nn_id = q.nn_id;
        }
    }
    results[i] = dp_result(acc, pot, jk, sn, nn_d2, nn_id);
}

// `ds` on adapters with f64: the interactions of `force` (double-single
// positions, f32 arithmetic, 1/sqrt refined), each added to f64 sums. An
// f32 term converts to f64 exactly and each f64 addition rounds at 2^-53
// of the sum, closer than the double-single two-sum (whose error term is
// itself summed in f32, ~2^-48); and it takes two instructions per
// component where the two-sum takes about eight: at N = 2^18 on an H100,
// 25 % less time at 4th order and 15 % less at 6th (BENCHMARKS.md). Tried
// and slower at 4th order there: two sinks per invocation, an unrolled
// loop, and some components summed by two-sum instead (to balance the
// FP64 pipe, which the conversions load, against the FP32 one).
@compute @workgroup_size(HT)
fn force_ds64(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let one = params.one;
    let eps2 = params.eps2;
    let i = wid.x * HT + lid;
    let me = sink_of(i);
    let js = split_range(wid);
    var ap = vec4<f64>(0.0lf);
    var jk = vec3<f64>(0.0lf);
    var sn = vec3<f64>(0.0lf);
    var nn_d2 = FAR;
    var nn_id = NO_ID;
    let tiles = tiles_of(js);
    for (var t = 0u; t < tiles; t++) {
        stage_tile(js.x + t * HT, js.y, lid);
        for (var k = 0u; k < HT; k++) {
            let c = interaction(tile[k], me, eps2, one);
            ap += vec4<f64>(c.acc_pot);
            if (ORDER >= 4u) {
                jk += vec3<f64>(c.jerk);
            }
            if (ORDER == 6u) {
                sn += vec3<f64>(c.snap);
            }
            if (c.other && c.d2 < nn_d2) {
                nn_d2 = c.d2;
                nn_id = c.id;
            }
        }
    }
    if (i < params.ni) {
        partial[wid.y * params.ni_stride + i] = dp_result(ap.xyz, ap.w, jk, sn, nn_d2, nn_id);
    }
}
