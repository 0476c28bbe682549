// Kick-drift-kick leapfrog on the GPU, one invocation per particle.
// A step is: kick_drift (v += a dt/2; x += v dt), forces, kick (v += a dt/2).
// kick_drift also keeps |a| in the velocity's fourth lane: the tree's
// acceleration MAC reads it as |a_old| in the evaluation that follows
// (free here, the kick reads a and writes the velocity anyway; every
// evaluation of a run follows a kick_drift, so the closing kick leaves the
// lane alone).
// Driven by src/run/leapfrog.rs.

@group(0) @binding(0) var<uniform> params: LeapfrogParams;
@group(0) @binding(1) var<storage, read_write> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> vel: array<Velocity>;
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn kick_drift(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wid, nwg, lid);
    if (i >= params.n) {
        return;
    }
    let a = acc_pot[i].acc;
    let v = vel[i].vel + params.half_dt * a;
    vel[i] = Velocity(v, length(a));
    pos_mass[i].pos += params.dt * v;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn kick(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wid, nwg, lid);
    if (i >= params.n) {
        return;
    }
    vel[i].vel += params.half_dt * acc_pot[i].acc;
}
