// The summary of a rank's domain in a parallel run: DOMAIN_BOXES boxes,
// each of a run of consecutive walk groups (the groups the build made are
// in key order, so a run is a compact piece of the domain along the
// curve), with the loosest MAC tolerances of its groups. The one-particle
// groups split off wide groups (shaders/groups.wgsl) follow the built
// ones in no order: each joins the run whose particles hold its own. One workgroup per box reduces its
// run of the group boxes the groups phase wrote. The other ranks cut
// their local essential trees for this domain from the boxes
// (shaders/let_tree.wgsl): the finer the boxes, the less they send.
// Driven by src/cluster/summary.rs.

@group(0) @binding(0) var<storage, read> counter_words: array<u32>;
@group(0) @binding(1) var<storage, read> group_boxes: array<GroupBox>;
@group(0) @binding(2) var<storage, read_write> summary: array<DomainSummary, DOMAIN_BOXES>;

var<workgroup> lo_part: array<vec3<f32>, WORKGROUP_SIZE>;
var<workgroup> hi_part: array<vec3<f32>, WORKGROUP_SIZE>;
// (largest open_scale, smallest accel_tol) of each invocation's groups.
var<workgroup> tol_part: array<vec2<f32>, WORKGROUP_SIZE>;

const FAR: f32 = 3.0e38;

@compute @workgroup_size(WORKGROUP_SIZE)
fn summarize(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let groups = counter_words[COUNTER_GROUP_COUNT];
    let k = wid.x;
    // Run k of DOMAIN_BOXES nearly equal runs of the built groups (the
    // first built % K one longer).
    let built_groups = min(counter_words[COUNTER_GROUPS_BUILT], groups);
    let base = built_groups / DOMAIN_BOXES;
    let extra = built_groups % DOMAIN_BOXES;
    let first = base * k + min(k, extra);
    let end = first + base + select(0u, 1u, k < extra);
    var lo = vec3<f32>(FAR);
    var hi = vec3<f32>(-FAR);
    var tol = vec2<f32>(0.0, FAR);
    for (var g = first + lid; g < end; g += WORKGROUP_SIZE) {
        let b = group_boxes[g];
        lo = min(lo, b.lo.xyz);
        hi = max(hi, b.hi.xyz);
        tol = vec2<f32>(max(tol.x, b.open_scale), min(tol.y, b.accel_tol));
    }
    // The run's particles: from its first group's to the next run's.
    let built = built_groups;
    var p_lo = 0xffffffffu;
    var p_hi = 0u;
    if (first < min(end, built)) {
        p_lo = select(group_boxes[first].start, 0u, k == 0u);
        p_hi = select(0xffffffffu, group_boxes[end].start, end < built);
    }
    for (var g = built + lid; g < groups; g += WORKGROUP_SIZE) {
        let b = group_boxes[g];
        if (p_lo <= b.start && b.start < p_hi) {
            lo = min(lo, b.lo.xyz);
            hi = max(hi, b.hi.xyz);
            tol = vec2<f32>(max(tol.x, b.open_scale), min(tol.y, b.accel_tol));
        }
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
        // `groups` only says whether the box holds any.
        let any = select(0u, 1u, lo_part[0].x <= hi_part[0].x);
        summary[k] = DomainSummary(vec4<f32>(lo_part[0], 0.0), vec4<f32>(hi_part[0], 0.0), t.x, t.y, any, 0u);
    }
}
