// Conserved quantities of a state on the GPU, so a run need not read its
// state back to know its energy. The sums are DiagnosticsSum::to_lanes's
// first twelve: mass, K, W, p, Σ m x, L. Each particle's terms are f32,
// and their sums are double-single, per chunk of SUM_CHUNK particles in
// the order the state holds them. One workgroup sums a chunk: each
// invocation takes every WORKGROUP_SIZE-th particle, then the workgroup
// halves in a fixed order, so a state gives the same bits every time.
// Driven by src/state/diagnostics.rs (GpuDiagnostics).

@group(0) @binding(0) var<uniform> params: DiagnosticsParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> vel: array<Velocity>;
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;
// Chunk c: sums[6 c ..] hold the hi parts of the lanes (3 × 4), then
// their lo parts.
@group(0) @binding(4) var<storage, read_write> sums: array<vec4<f32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn chunk_sums(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c = wid.y * nwg.x + wid.x;
    if c >= div_ceil(params.n, SUM_CHUNK) { return; }
    let one = params.one;
    var s0 = Ds4(vec4<f32>(0.0), vec4<f32>(0.0));
    var s1 = s0;
    var s2 = s0;
    for (var k = 0u; k < SUM_CHUNK / WORKGROUP_SIZE; k++) {
        let i = c * SUM_CHUNK + k * WORKGROUP_SIZE + lid;
        if i < params.n {
            let p = pos_mass[i];
            let m = p.mass;
            let x = p.pos;
            let u = vel[i].vel;
            let l = cross(x, u);
            s0 = ds4_add_f(s0, m * vec4<f32>(1.0, 0.5 * dot(u, u), 0.5 * acc_pot[i].pot, u.x), one);
            s1 = ds4_add_f(s1, m * vec4<f32>(u.y, u.z, x.x, x.y), one);
            s2 = ds4_add_f(s2, m * vec4<f32>(x.z, l.x, l.y, l.z), one);
        }
    }
    let t0 = ds4_workgroup_total(lid, s0, one);
    let t1 = ds4_workgroup_total(lid, s1, one);
    let t2 = ds4_workgroup_total(lid, s2, one);
    if lid == 0u {
        sums[6u * c] = t0.hi;
        sums[6u * c + 1u] = t1.hi;
        sums[6u * c + 2u] = t2.hi;
        sums[6u * c + 3u] = t0.lo;
        sums[6u * c + 4u] = t1.lo;
        sums[6u * c + 5u] = t2.lo;
    }
}
