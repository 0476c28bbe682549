// What the page's view needs of a state that stays on the GPU (a model
// sampled there, a run's), so that the state itself never comes to the
// host: `gather` copies a sample of its particles out for the host's view
// (the framed radius, the colour ranges, the mass shells' edges, the
// Lagrangian radii, a galaxy's figures), `find` the particles of given ids
// wherever the state holds them (a galaxy's black holes), and `shells`
// tags every particle with the quarter of the mass it starts in and sums
// each quarter's mass and count per workgroup. Driven by
// src/render/view_sample.rs.

@group(0) @binding(0) var<uniform> params: ViewSampleParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> vel: array<Velocity>;
// Read where params.forces is 1.
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;
// The particles the sample takes (`camera::sample_indices`), then the ids
// `find` looks for.
@group(0) @binding(4) var<storage, read> picks: array<u32>;
// Sampled particle k: its position and mass, its velocity record, then
// its acceleration and potential (zeros without forces).
@group(0) @binding(5) var<storage, read_write> sample: array<vec4<f32>>;
// `shells`: each particle's shell; `gather` and `find` with ids: each
// sampled particle's id.
@group(0) @binding(6) var<storage, read_write> tags: array<u32>;
// Workgroup g of `shells`: the mass of each shell, then their counts.
@group(0) @binding(7) var<storage, read_write> totals: array<vec4<f32>>;
// Each particle's id (its index in the upload), read where params.with_ids
// is 1.
@group(0) @binding(8) var<storage, read> ids: array<u32>;

// Particle i into sample slot k.
fn copy_out(k: u32, i: u32) {
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
    if params.with_ids == 1u {
        tags[k] = ids[i];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = flat_index(wid, nwg, lid);
    if k >= params.picked { return; }
    copy_out(k, picks[k]);
}

// The particles whose ids are picks[picked + j] (j < wanted), wherever the
// state has put them, into slots picked + j: a pass over every particle,
// each compared with the few ids wanted (a galaxy's black holes).
@compute @workgroup_size(WORKGROUP_SIZE)
fn find(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if i >= params.n { return; }
    let id = ids[i];
    for (var j = 0u; j < params.wanted; j++) {
        let k = params.picked + j;
        if picks[k] == id {
            copy_out(k, i);
        }
    }
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
