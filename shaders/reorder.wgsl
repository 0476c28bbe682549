// Gathers the particle arrays into key order: out[k] = in[order[k]], where
// order is the value array of the sorted (key, index) pairs. The caller
// copies the gathered arrays back over the state. vel_out is the state's
// acc_pot buffer, free at this point (the walk rewrites it), which saves a
// scratch array. Driven by src/tree/reorder.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(3) var<storage, read> vel: array<Velocity>;
@group(0) @binding(4) var<storage, read> id: array<u32>;
@group(0) @binding(5) var<storage, read_write> pos_mass_out: array<PosMass>;
@group(0) @binding(6) var<storage, read_write> vel_out: array<Velocity>;
@group(0) @binding(7) var<storage, read_write> id_out: array<u32>;

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
    pos_mass_out[k] = pos_mass[src];
    vel_out[k] = vel[src];
    id_out[k] = id[src];
}
