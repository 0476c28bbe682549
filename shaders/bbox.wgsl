// Bounding box of all particles by parallel reduction, in two dispatches:
// `partial_bounds` (BBOX_GROUPS workgroups, grid-stride loop, one box per
// workgroup) and `final_bounds` (one workgroup reducing those boxes).
// Driven by src/tree/bbox.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> partial: array<Bounds>;
@group(0) @binding(3) var<storage, read_write> bounds: Bounds;

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

@compute @workgroup_size(WORKGROUP_SIZE)
fn partial_bounds(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var lo = vec3<f32>(BIG);
    var hi = vec3<f32>(-BIG);
    for (var i = wid.x * WORKGROUP_SIZE + lid; i < params.n; i += BBOX_GROUPS * WORKGROUP_SIZE) {
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
    for (var k = lid; k < BBOX_GROUPS; k += WORKGROUP_SIZE) {
        lo = min(lo, partial[k].lo.xyz);
        hi = max(hi, partial[k].hi.xyz);
    }
    lo_s[lid] = lo;
    hi_s[lid] = hi;
    reduce(lid);
    if (lid == 0u) {
        bounds = Bounds(vec4<f32>(lo_s[0], 0.0), vec4<f32>(hi_s[0], 0.0));
    }
}
