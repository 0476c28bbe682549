// Bounding boxes of the walk's particle groups, one invocation per group
// (indirect dispatch sized by the build). Driven by src/tree/groups.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> groups: array<Group>;
@group(0) @binding(3) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(4) var<storage, read_write> group_boxes: array<GroupBox>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn group_boxes_of(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x;
    if (g >= atomicLoad(&counters.group_count)) {
        return;
    }
    let grp = groups[g];
    var lo = vec3<f32>(3.0e38);
    var hi = vec3<f32>(-3.0e38);
    for (var j = grp.start; j < grp.start + grp.count; j++) {
        let p = pos_mass[j].pos;
        lo = min(lo, p);
        hi = max(hi, p);
    }
    group_boxes[g] = GroupBox(vec4<f32>(lo, 0.0), vec4<f32>(hi, 0.0), grp.start, grp.count, 0u, 0u);
}
