// The upload indices of a state whose particles are in the order they
// were uploaded (a new state, or a redraw's): upload_index[k] = k,
// written here rather than sent from the host (half a gigabyte at 10^8
// particles). The buffer may hold a few more records than the state (no
// binding is empty); they are never read.
// Driven by src/state/particles.rs.

@group(0) @binding(0) var<storage, read_write> upload_index: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn in_upload_order(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k < arrayLength(&upload_index)) {
        upload_index[k] = k;
    }
}
