// What the page's view needs of a state that stays on the GPU (a model
// sampled there, a run's), so that the state itself never comes to the
// host: `gather` copies a sample of its particles out for the host's view
// (the framed radius, the colour ranges, the mass shells' edges, the
// Lagrangian radii), and `shells`
// tags every particle with the quarter of the mass it starts in and sums
// each quarter's mass and count per workgroup. Driven by
// src/render/view_sample.rs.

@group(0) @binding(0) var<uniform> params: ViewSampleParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> vel: array<Velocity>;
// Read where params.forces is 1.
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;
// The particles the sample takes (`camera::sample_indices`).
@group(0) @binding(4) var<storage, read> picks: array<u32>;
// Sampled particle k: its position and mass, its velocity record, then
// its acceleration and potential (zeros without forces).
@group(0) @binding(5) var<storage, read_write> sample: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> tags: array<u32>;
// Workgroup g of `shells`: the mass of each shell, then their counts.
@group(0) @binding(7) var<storage, read_write> totals: array<vec4<f32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = flat_index(wid, nwg, lid);
    if k >= params.picked { return; }
    let i = picks[k];
    let p = pos_mass[i];
    let u = vel[i];
    var f = vec4<f32>(0.0);
    if params.forces == 1u {
        let a = acc_pot[i];
        f = vec4<f32>(a.acc, a.pot);
    }
    sample[3u * k] = vec4<f32>(p.pos, p.mass);
    sample[3u * k + 1u] = vec4<f32>(u.vel, u.last_acc);
    sample[3u * k + 2u] = f;
}

var<workgroup> shell_mass: array<vec4<f32>, WORKGROUP_SIZE>;
var<workgroup> shell_count: array<vec4<f32>, WORKGROUP_SIZE>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn shells(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    var mass = vec4<f32>(0.0);
    var count = vec4<f32>(0.0);
    if i < params.n {
        let p = pos_mass[i];
        let d = p.pos - params.centre.xyz;
        let r2 = dot(d, d);
        let e = params.edges.xyz;
        let tag = u32(r2 > e.x) + u32(r2 > e.y) + u32(r2 > e.z);
        tags[i] = tag;
        count = select(vec4<f32>(0.0), vec4<f32>(1.0), vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(tag));
        mass = count * p.mass;
    }
    // Every invocation reaches the barriers (the guard above holds none).
    // Counts stay exact in f32: a workgroup holds at most WORKGROUP_SIZE.
    shell_mass[lid] = mass;
    shell_count[lid] = count;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half / 2u) {
        if lid < half {
            shell_mass[lid] += shell_mass[lid + half];
            shell_count[lid] += shell_count[lid + half];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let g = wid.y * nwg.x + wid.x;
        totals[2u * g] = shell_mass[0];
        totals[2u * g + 1u] = shell_count[0];
    }
}
