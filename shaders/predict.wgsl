// j-particle store of the Hermite integrators (driven by src/direct/predict.rs).
// Two passes, both one invocation per particle:
//  scatter: copies the j-particles corrected on the host (a compact array of
//           records and their addresses) into the store (Sapporo2's copy
//           kernel), so only what changed crosses the bus;
//  predict: Taylor series of every j-particle from its t0 to the evaluation
//           time t (Sapporo2's predict kernel):
//     x_p = x + dt v + dt^2/2 a + dt^3/6 j + dt^4/24 s + dt^5/120 c
//     v_p = v + dt a + dt^2/2 j + dt^3/6 s + dt^4/24 c
//     a_p = a + dt j + dt^2/2 s + dt^3/6 c
//  with dt = t - t0 from double-single times (block times are dyadic, so dt
//  is exact) and the position kept double-single: the f32 displacement is
//  added to hi + lo with a two-sum, so x_p carries the displacement's f32
//  relative error, not the position's.

@group(0) @binding(0) var<storage, read> params: HermiteParams;
@group(0) @binding(1) var<storage, read_write> jp: array<JParticle>;
@group(0) @binding(2) var<storage, read> updates: array<JParticle>;
@group(0) @binding(3) var<storage, read> addresses: array<u32>;
@group(0) @binding(4) var<storage, read_write> pred: array<PredJ>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn scatter(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k >= params.n_update) {
        return;
    }
    jp[addresses[k]] = updates[k];
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn predict(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k >= params.nj) {
        return;
    }
    let one = params.one;
    let p = jp[k];
    let dt = ds_diff(params.t_hi, params.t_lo, p.t0_hi, p.t0_lo, one);
    let disp = dt * (p.vel + (dt * 0.5) * (p.acc + (dt * (1.0 / 3.0)) * (p.jerk
        + (dt * 0.25) * (p.snap + (dt * 0.2) * p.crackle))));
    let vel = p.vel + dt * (p.acc + (dt * 0.5) * (p.jerk + (dt * (1.0 / 3.0)) * (p.snap
        + (dt * 0.25) * p.crackle)));
    let acc = p.acc + dt * (p.jerk + (dt * 0.5) * (p.snap + (dt * (1.0 / 3.0)) * p.crackle));
    let t = ds3_add_f(Ds3(p.pos_hi, vec3<f32>(0.0)), disp, one);
    let x = ds3_norm(t.hi, t.lo + p.pos_lo, one);
    pred[k] = PredJ(x.hi, p.mass, x.lo, p.id, vel, p.mass_lo, acc, 0u, vec3<f32>(0.0), 0u);
}
