// Cell properties bottom-up, one level per dispatch from the deepest level
// to the root (Bonsai 2012, §4.3.2): mass, centre of mass, second moments
// about the centre of mass (quadrupole), tight box, and what the MAC needs:
// with Bonsai's opening angle the squared opening radius (l/θ + δ)² (eq.
// 4.1), l the largest side of the box and δ the distance between the box
// centre and the centre of mass; with the acceleration MAC (params.alpha >
// 0) b² and M b³, b the distance from the centre of mass to the box's
// farthest corner (see walk.wgsl).
// Precision without f64: every sum is taken relative to a nearby origin
// (the first particle or the first child's centre of mass) so that the f32
// terms are small differences, and a node's moments are its children's
// moments shifted by the parallel-axis theorem (exact algebra, no
// cancellation between large numbers). Driven by src/tree/properties.rs.

@group(0) @binding(0) var<uniform> level_params: LevelParams;
@group(0) @binding(1) var<uniform> params: TreeParams;
@group(0) @binding(2) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(3) var<storage, read> cells: array<TreeCell>;
@group(0) @binding(4) var<storage, read_write> counters: TreeCounters;
@group(0) @binding(5) var<storage, read_write> props: array<CellProps>;
// Each cell's tight box, read by its parent's properties.
@group(0) @binding(6) var<storage, read_write> cell_boxes: array<Bounds>;

// Cells of the level strided over the dispatched invocations: a fixed
// number of workgroups for any level, or one cell each where the level's
// indirect arguments sized the dispatch (see split_cells).
@compute @workgroup_size(WORKGROUP_SIZE)
fn cell_properties(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if (counters.idle != 0u) {
        return;
    }
    let level = level_params.level;
    let end = atomicLoad(&counters.level_start[level + 1u]);
    for (var c = atomicLoad(&counters.level_start[level]) + gid.x; c < end; c += nwg.x * WORKGROUP_SIZE) {
        properties_of(c);
        if (c == 0u) {
            // The root, last of a pass.
            counters.property_passes += 1u;
        }
    }
}

fn properties_of(c: u32) {
    let cell = cells[c];
    var mass = 0.0;
    var com = vec3<f32>(0.0);
    var diag = vec3<f32>(0.0); // xx, yy, zz
    var off = vec3<f32>(0.0);  // xy, xz, yz
    var lo = vec3<f32>(3.0e38);
    var hi = vec3<f32>(-3.0e38);
    if (cell.count == 0u) {
        props[c] = CellProps(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
        cell_boxes[c] = Bounds(vec4<f32>(0.0), vec4<f32>(0.0));
        return;
    }
    if (cell.child_count == 0u) {
        let origin = pos_mass[cell.start].pos;
        var first = vec3<f32>(0.0);
        for (var j = cell.start; j < cell.start + cell.count; j++) {
            let p = pos_mass[j];
            mass += p.mass;
            first += p.mass * (p.pos - origin);
            lo = min(lo, p.pos);
            hi = max(hi, p.pos);
        }
        let rel_com = select(vec3<f32>(0.0), first / mass, mass > 0.0);
        com = origin + rel_com;
        for (var j = cell.start; j < cell.start + cell.count; j++) {
            let p = pos_mass[j];
            // Difference of two small relative vectors: no large cancellation.
            let d = (p.pos - origin) - rel_com;
            diag += p.mass * d * d;
            off += p.mass * vec3<f32>(d.x * d.y, d.x * d.z, d.y * d.z);
        }
    } else {
        let origin = props[cell.first_child].com_mass.xyz;
        var first = vec3<f32>(0.0);
        for (var k = cell.first_child; k < cell.first_child + cell.child_count; k++) {
            let q = props[k];
            mass += q.com_mass.w;
            first += q.com_mass.w * (q.com_mass.xyz - origin);
            lo = min(lo, cell_boxes[k].lo.xyz);
            hi = max(hi, cell_boxes[k].hi.xyz);
        }
        let rel_com = select(vec3<f32>(0.0), first / mass, mass > 0.0);
        com = origin + rel_com;
        for (var k = cell.first_child; k < cell.first_child + cell.child_count; k++) {
            let q = props[k];
            let d = (q.com_mass.xyz - origin) - rel_com;
            let m = q.com_mass.w;
            diag += q.quad_diag.xyz + m * d * d;
            off += q.quad_off.xyz + m * vec3<f32>(d.x * d.y, d.x * d.z, d.y * d.z);
        }
    }
    if (mass <= 0.0) {
        com = 0.5 * (lo + hi);
    }
    var open_r2: f32;
    var mb3 = 0.0;
    if (params.alpha > 0.0) {
        // Acceleration MAC: the box corner farthest from the com bounds
        // every particle's distance b; the walk weighs M b^3 (the size of
        // the octupole the expansion leaves out) against the group's
        // tolerance, and never accepts a cell nearer than b.
        let b = length(max(com - lo, hi - com));
        open_r2 = b * b;
        mb3 = mass * b * b * b;
    } else {
        let side = hi - lo;
        let l = max(side.x, max(side.y, side.z));
        let delta = length(com - 0.5 * (lo + hi));
        let r_open = l * params.inv_theta + delta;
        open_r2 = r_open * r_open;
    }
    props[c] = CellProps(
        vec4<f32>(com, mass),
        vec4<f32>(diag, open_r2),
        vec4<f32>(off, mb3),
    );
    cell_boxes[c] = Bounds(vec4<f32>(lo, 0.0), vec4<f32>(hi, 0.0));
}
