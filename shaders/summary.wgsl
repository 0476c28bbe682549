// The summary of a rank's domain in a parallel run: the box of its walk
// groups and their loosest MAC tolerances, reduced by one workgroup over
// the group boxes the groups phase wrote. The other ranks cut their local
// essential trees for this domain from it (shaders/let_tree.wgsl).
// Driven by src/cluster/summary.rs.

@group(0) @binding(0) var<storage, read> counter_words: array<u32>;
@group(0) @binding(1) var<storage, read> group_boxes: array<GroupBox>;
@group(0) @binding(2) var<storage, read_write> summary: DomainSummary;

var<workgroup> lo_part: array<vec3<f32>, WORKGROUP_SIZE>;
var<workgroup> hi_part: array<vec3<f32>, WORKGROUP_SIZE>;
// (largest open_scale, smallest accel_tol) of each invocation's groups.
var<workgroup> tol_part: array<vec2<f32>, WORKGROUP_SIZE>;

const FAR: f32 = 3.0e38;

@compute @workgroup_size(WORKGROUP_SIZE)
fn summarize(@builtin(local_invocation_index) lid: u32) {
    let groups = counter_words[COUNTER_GROUP_COUNT];
    var lo = vec3<f32>(FAR);
    var hi = vec3<f32>(-FAR);
    var tol = vec2<f32>(0.0, FAR);
    for (var g = lid; g < groups; g += WORKGROUP_SIZE) {
        let b = group_boxes[g];
        lo = min(lo, b.lo.xyz);
        hi = max(hi, b.hi.xyz);
        tol = vec2<f32>(max(tol.x, b.open_scale), min(tol.y, b.accel_tol));
    }
    lo_part[lid] = lo;
    hi_part[lid] = hi;
    tol_part[lid] = tol;
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half /= 2u) {
        workgroupBarrier();
        if (lid < half) {
            lo_part[lid] = min(lo_part[lid], lo_part[lid + half]);
            hi_part[lid] = max(hi_part[lid], hi_part[lid + half]);
            let o = tol_part[lid + half];
            tol_part[lid] = vec2<f32>(max(tol_part[lid].x, o.x), min(tol_part[lid].y, o.y));
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let t = tol_part[0];
        summary = DomainSummary(vec4<f32>(lo_part[0], 0.0), vec4<f32>(hi_part[0], 0.0), t.x, t.y, groups, 0u);
    }
}
