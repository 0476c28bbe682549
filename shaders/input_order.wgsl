// A read-back put into input order on the GPU. The tree code keeps the
// particles in key order; a read-out wants them in the order they were
// uploaded, and scattering gigabytes on the host is random writes (tens of
// seconds at 10^8 particles on one core, a second on sixteen). Here:
// - check, one invocation per particle in GPU order k: at[upload_index[k]] = k + 1
//   (at starts zeroed), counts upload indices out of range or claimed
//   twice (at[n + 1]), and keeps the smallest upload index whose state is
//   not finite (at[n], set to 0xffffffff before);
// - gather, one invocation per input position of a piece: copies the
//   records of the particle there to out_*[i - first], which go back to
//   the host as they are, in order.
// Driven by src/state/input_order.rs.

@group(0) @binding(0) var<uniform> params: InputOrderParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> vel: array<Velocity>;
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;
@group(0) @binding(4) var<storage, read> upload_index: array<u32>;
@group(0) @binding(5) var<storage, read_write> at: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> out_pos_mass: array<PosMass>;
@group(0) @binding(7) var<storage, read_write> out_vel: array<Velocity>;
@group(0) @binding(8) var<storage, read_write> out_acc_pot: array<AccPot>;

// WGSL has no isNan/isInf (and may assume neither occurs): the exponent's
// bits tell.
fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn finite3(v: vec3<f32>) -> bool {
    return finite(v.x) && finite(v.y) && finite(v.z);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn check(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    let n = params.n;
    if (k >= n) {
        return;
    }
    let i = upload_index[k];
    if (i >= n) {
        atomicAdd(&at[n + 1u], 1u);
        return;
    }
    if (atomicExchange(&at[i], k + 1u) != 0u) {
        atomicAdd(&at[n + 1u], 1u);
    }
    let a = acc_pot[k];
    if (!(finite3(pos_mass[k].pos) && finite3(vel[k].vel) && finite3(a.acc) && finite(a.pot))) {
        atomicMin(&at[n], i);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let j = flat_index(wid, nwg, lid);
    if (j >= params.count) {
        return;
    }
    // `check` found every input position claimed once.
    let k = atomicLoad(&at[params.first + j]) - 1u;
    out_pos_mass[j] = pos_mass[k];
    out_vel[j] = vel[k];
    out_acc_pot[j] = acc_pot[k];
}
