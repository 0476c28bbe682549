// Bounding box of all particles by parallel reduction, in two dispatches:
// `partial_bounds` (bbox_groups() workgroups, grid-stride loop, one box per
// workgroup) and `final_bounds` (one workgroup reducing those boxes).
// Small N uses few workgroups: each costs a chain of barriers, which on
// software WebGPU (SwiftShader) is ~1 ms per workgroup.
// `final_bounds` writes the particles' box and the system's (TreeBounds).
// Driven by src/tree/bbox.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> partial: array<Bounds>;
@group(0) @binding(3) var<storage, read_write> bounds: TreeBounds;
@group(0) @binding(4) var<uniform> system_cube: SystemCube;

var<workgroup> lo_s: array<vec3<f32>, WORKGROUP_SIZE>;
var<workgroup> hi_s: array<vec3<f32>, WORKGROUP_SIZE>;

// Tree reduction of the workgroup's boxes into slot 0.
fn reduce(lid: u32) {
    for (var stride = WORKGROUP_SIZE / 2u; stride > 0u; stride /= 2u) {
        workgroupBarrier();
        if (lid < stride) {
            lo_s[lid] = min(lo_s[lid], lo_s[lid + stride]);
            hi_s[lid] = max(hi_s[lid], hi_s[lid + stride]);
        }
    }
    workgroupBarrier();
}

const BIG: f32 = 3.0e38;

// Workgroups of partial_bounds: at least BBOX_PARTICLES_PER_GROUP particles
// each, at most BBOX_GROUPS (the same formula as tree::bbox::groups_for).
fn bbox_groups() -> u32 {
    return clamp(div_ceil(params.n, BBOX_PARTICLES_PER_GROUP), 1u, BBOX_GROUPS);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn partial_bounds(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var lo = vec3<f32>(BIG);
    var hi = vec3<f32>(-BIG);
    for (var i = wid.x * WORKGROUP_SIZE + lid; i < params.n; i += bbox_groups() * WORKGROUP_SIZE) {
        let p = pos_mass[i].pos;
        lo = min(lo, p);
        hi = max(hi, p);
    }
    lo_s[lid] = lo;
    hi_s[lid] = hi;
    reduce(lid);
    if (lid == 0u) {
        partial[wid.x] = Bounds(vec4<f32>(lo_s[0], 0.0), vec4<f32>(hi_s[0], 0.0));
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn final_bounds(@builtin(local_invocation_index) lid: u32) {
    var lo = vec3<f32>(BIG);
    var hi = vec3<f32>(-BIG);
    for (var k = lid; k < bbox_groups(); k += WORKGROUP_SIZE) {
        lo = min(lo, partial[k].lo.xyz);
        hi = max(hi, partial[k].hi.xyz);
    }
    lo_s[lid] = lo;
    hi_s[lid] = hi;
    reduce(lid);
    if (lid == 0u) {
        let own = Bounds(vec4<f32>(lo_s[0], 0.0), vec4<f32>(hi_s[0], 0.0));
        bounds = TreeBounds(own, system_of(own));
    }
}

// The system's box (TreeBounds.system): a box whose cube_side is the
// larger of the domains' cube (side 0 where none is set) and the
// particles' own.
fn system_of(own: Bounds) -> Bounds {
    if (system_cube.side <= cube_side(own)) {
        return own;
    }
    // cube_side() enlarges by 1.0001: undone, so the cube's side is the
    // domains'.
    let lo = vec4<f32>(system_cube.lo, 0.0);
    return Bounds(lo, lo + vec4<f32>(vec3<f32>(system_cube.side / 1.0001), 0.0));
}
