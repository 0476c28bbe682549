// Walk groups that span another domain in a parallel run: a group whose
// box holds many of the other domains' particles (by their summaries of
// the last evaluation, shaders/domain_boxes.wgsl) is split into
// one-particle groups (shaders/groups_points.wgsl), as groups.wgsl splits
// groups too wide for the system. A sparse group of an outer domain whose
// box spans the galaxy's centre, which another domain holds, opened every
// particle there one by one, in one workgroup, after the rest of the walk
// had finished (BENCHMARKS.md, "Summaries that see the other domains").
// Runs after the domain summary, whose boxes hold the group's box, so the
// trees cut for them hold what its particles open.
// Driven by src/cluster/spanning.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<uniform> summary_params: SummaryParams;
@group(0) @binding(2) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(3) var<storage, read> vel: array<Velocity>;
@group(0) @binding(4) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(5) var<storage, read_write> group_boxes: array<GroupBox>;
@group(0) @binding(6) var<storage, read> bounds: TreeBounds;
@group(0) @binding(7) var<storage, read> others: array<DomainSummary>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn split_spanning(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_index(wid, nwg, lid);
    // The groups the build made (those split off wide ones hold one
    // particle each).
    if (g >= counters.groups_built || summary_params.other_domains == 0u) {
        return;
    }
    let b = group_boxes[g];
    let side = b.hi.xyz - b.lo.xyz;
    // Only a wide group can span much; the rest need no look.
    if (b.count < 2u || max(side.x, max(side.y, side.z)) * f32(SPAN_SIDE_DIVISOR) < cube_side(bounds.system)) {
        return;
    }
    let inside = others_inside(Bounds(b.lo, b.hi), 0u, 1u, summary_params.other_domains);
    if (inside > f32(SPANNED_PER_PARTICLE * b.count)) {
        split_into_points(g, b.start, b.count);
    }
}
