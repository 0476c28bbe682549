// A redraw's global ids in the order of its moved arrays (the new
// state's upload order): moved[j] = ids[upload_index[j]], where
// upload_index holds, after migration.wgsl's pack, the old upload index
// of the particle now at j. The ids stay on the GPU, so a redraw reads
// back only the leavers' (8 bytes each) instead of every particle's
// upload index, and the host gathers none.
// `sequence` writes the ids of a share sampled on the GPU. Driven by
// src/cluster/global_ids.rs.

@group(0) @binding(0) var<uniform> count: vec4<u32>;
@group(0) @binding(1) var<storage, read> upload_index: array<u32>;
@group(0) @binding(2) var<storage, read> ids: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> moved: array<vec2<u32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let j = flat_index(wid, nwg, lid);
    if (j < count.x) {
        moved[j] = ids[upload_index[j]];
    }
}

// The ids first, first + 1, ... of a share sampled on the GPU in the
// model's order (count.y, count.z: first's low and high words), into
// `moved` (the other bindings unused).
@compute @workgroup_size(WORKGROUP_SIZE)
fn sequence(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let j = flat_index(wid, nwg, lid);
    if (j < count.x) {
        let lo = count.y + j;
        // The low word wrapped where it came out below j.
        moved[j] = vec2<u32>(lo, count.z + select(0u, 1u, lo < j));
    }
}
