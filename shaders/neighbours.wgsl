// Neighbour lists of the GRAPE-6 API (driven by src/direct/neighbours.rs):
// the ids of all j-particles within the radius sqrt(h2) of each i-particle
// (unsoftened distance, double-single positions, the i-particle's own id
// excluded). One workgroup per sink; its invocations stride over the
// sources and append hits through an atomic counter, so the order within a
// list is unspecified (the host sorts). The counter keeps counting past
// NB_MAX so the host can tell an overflow.

@group(0) @binding(0) var<storage, read> params: HermiteParams;
@group(0) @binding(1) var<storage, read> pred: array<PredJ>;
@group(0) @binding(2) var<storage, read> ip: array<IParticle>;
@group(0) @binding(3) var<storage, read_write> nb_count: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> nb_list: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn neighbours(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = wid.y * nwg.x + wid.x;
    if (i >= params.ni) {
        return;
    }
    let me = ip[i];
    for (var j = lid; j < params.nj; j += WORKGROUP_SIZE) {
        let p = pred[j];
        let dr = ds3_diff(p.pos_hi, p.pos_lo, me.pos_hi, me.pos_lo, params.one);
        if (p.id != me.id && dot(dr, dr) < me.h2) {
            let slot = atomicAdd(&nb_count[i], 1u);
            if (slot < NB_MAX) {
                nb_list[i * NB_MAX + slot] = p.id;
            }
        }
    }
}
