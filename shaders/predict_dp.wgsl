// The f64 predictor of --precision dp (driven by src/hermite/predict.rs),
// composed after predict.wgsl (its bindings) and built only on devices
// with native f64 (wgpu SHADER_F64). As `predict`, in f64 throughout:
// position and velocity from their double-single pairs, the Taylor series
// in f64 (acceleration, jerk and snap from their double-single pairs,
// crackle f32), the predicted position and velocity stored as
// double-single pairs again (about 48 significant bits), the acceleration
// in f32 (only the snap reads it).

fn dp3(hi: vec3<f32>, lo: vec3<f32>) -> vec3<f64> {
    return vec3<f64>(hi) + vec3<f64>(lo);
}

// x as hi + lo f32 pairs.
fn dp_split3(x: vec3<f64>) -> Ds3 {
    let hi = vec3<f32>(x);
    return Ds3(hi, vec3<f32>(x - vec3<f64>(hi)));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn predict_dp(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k >= params.nj) {
        return;
    }
    let p = jp[k];
    let dt = (f64(params.t_hi) + f64(params.t_lo)) - (f64(p.t0_hi) + f64(p.t0_lo));
    let v0 = dp3(p.vel, vec3<f32>(p.vel_lo_x, p.vel_lo_y, p.vel_lo_z));
    let a = dp3(p.acc, p.acc_lo);
    let j = dp3(p.jerk, p.jerk_lo);
    let s = dp3(p.snap, p.snap_lo);
    let c = vec3<f64>(p.crackle);
    let x = dp3(p.pos_hi, p.pos_lo) + dt * (v0 + (dt * 0.5lf) * (a + (dt / 3.0lf) * (j
        + (dt * 0.25lf) * (s + (dt * 0.2lf) * c))));
    let v = v0 + dt * (a + (dt * 0.5lf) * (j + (dt / 3.0lf) * (s + (dt * 0.25lf) * c)));
    let ap = a + dt * (j + (dt * 0.5lf) * (s + (dt / 3.0lf) * c));
    let xs = dp_split3(x);
    let vs = dp_split3(v);
    pred[k] = PredJ(xs.hi, p.mass, xs.lo, p.id, vs.hi, p.mass_lo, vec3<f32>(ap), 0u, vs.lo, 0u);
}
