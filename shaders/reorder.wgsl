// Puts the particle arrays into key order in two dispatches over one bind
// group: `gather` writes tmp[k] = state[order[k]] (order is the value array
// of the sorted (key, index) pairs), then `settle` copies the gathered
// arrays back over the state. Velocities are gathered into the state's
// acc_pot buffer, free at this point (the walk rewrites it), which saves a
// scratch array; `settle` zeroes it after the copy, so that a particle the
// walk ever missed would show no force rather than a velocity. A compute
// copy rather than buffer copies: no switches between copy and compute
// work, each of which drains the GPU. Driven by src/tree/reorder.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read_write> pos_mass: array<PosMass>;
@group(0) @binding(3) var<storage, read_write> vel: array<Velocity>;
@group(0) @binding(4) var<storage, read_write> id: array<u32>;
@group(0) @binding(5) var<storage, read_write> pos_mass_tmp: array<PosMass>;
@group(0) @binding(6) var<storage, read_write> vel_tmp: array<Velocity>;
@group(0) @binding(7) var<storage, read_write> id_tmp: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k >= params.n) {
        return;
    }
    let src = order[k];
    pos_mass_tmp[k] = pos_mass[src];
    vel_tmp[k] = vel[src];
    id_tmp[k] = id[src];
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn settle(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k < params.n) {
        pos_mass[k] = pos_mass_tmp[k];
        vel[k] = vel_tmp[k];
        id[k] = id_tmp[k];
        vel_tmp[k] = Velocity();
    }
}
