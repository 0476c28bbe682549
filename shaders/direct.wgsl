// Blocked direct summation (Kirin/Sapporo-style tiles), f32.
// One invocation per sink particle i. The workgroup walks over all sources j
// in tiles of TILE particles: each invocation loads one source into
// workgroup memory, then every invocation accumulates the whole tile from
// there, so each source is read from global memory once per workgroup.
// Plummer softening: a_i = sum_j m_j d / (d^2 + eps^2)^(3/2),
// pot_i = -sum_{j != i} m_j / sqrt(d^2 + eps^2). Driven by src/direct/mod.rs.

@group(0) @binding(0) var<uniform> params: DirectParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> acc_pot: array<AccPot>;

var<workgroup> tile: array<vec4<f32>, TILE>;

@compute @workgroup_size(TILE)
fn forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = params.n;
    let i = (wid.y * nwg.x + wid.x) * TILE + lid;
    // Out-of-range sinks still take part in loading tiles (barriers must be
    // reached by the whole workgroup) but never store.
    let pi = pos_mass[min(i, n - 1u)];
    let eps2 = params.eps2;
    var acc = vec3<f32>(0.0);
    var pot = 0.0;
    for (var base = 0u; base < n; base += TILE) {
        let j = base + lid;
        var src = vec4<f32>(0.0);
        if (j < n) {
            let pj = pos_mass[j];
            src = vec4<f32>(pj.pos, pj.mass);
        }
        workgroupBarrier();
        tile[lid] = src;
        workgroupBarrier();
        for (var k = 0u; k < TILE; k++) {
            let s = tile[k];
            let d = s.xyz - pi.pos;
            let r2 = dot(d, d) + eps2;
            // r2 == 0 only for the self pair (or coincident particles) with
            // eps = 0: that pair contributes nothing.
            let rinv = select(0.0, inverseSqrt(r2), r2 > 0.0);
            let mrinv = s.w * rinv;
            acc += (mrinv * rinv * rinv) * d;
            pot -= mrinv;
        }
    }
    if (i < n) {
        // With softening, the self pair added -m_i/eps to the potential.
        let self_pot = select(0.0, pi.mass * inverseSqrt(eps2), eps2 > 0.0);
        acc_pot[i] = AccPot(acc, pot + self_pot);
    }
}
