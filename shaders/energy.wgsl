// The softened potential of every particle from a state given in
// double-single (driven by src/state/energy.rs), for the energies a run
// reports: phi_i = -sum_{j != i} m_j / sqrt(|x_j - x_i|^2 + eps^2), with
// every step in double-single arithmetic, so each term is good to ~1e-14
// relative and the sum (all terms of one sign) too. Composed after ds.wgsl,
// whose reassociation guard `one` every error term below goes through.
//
// One invocation per sink, ET sinks per workgroup, ET sources staged at a
// time in workgroup memory (hi: x, y, z, m; lo: their remainders). The
// sinks are a run of the sources (every particle, or one rank's among all
// ranks'); pot holds theirs only. Each dispatch sums one run of sources
// into pot (a dispatch over all of them would run for seconds at large N).

@group(0) @binding(0) var<uniform> params: EnergyParams;
@group(0) @binding(1) var<storage, read> src_hi: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> src_lo: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> pot: array<vec2<f32>>;

var<workgroup> tile_hi: array<vec4<f32>, ET>;
var<workgroup> tile_lo: array<vec4<f32>, ET>;

// a + b exactly as (sum, error) (Knuth).
fn two_sum(a: f32, b: f32, one: f32) -> vec2<f32> {
    let s = (a + b) * one;
    let bb = (s - a) * one;
    let av = (s - bb) * one;
    return vec2<f32>(s, (a - av) * one + (b - bb) * one);
}

// a + b as (sum, error) where |a| >= |b| (Dekker).
fn fast_two_sum(a: f32, b: f32, one: f32) -> vec2<f32> {
    let s = (a + b) * one;
    return vec2<f32>(s, b - (s - a) * one);
}

// Sum of two double-single values, normalised.
fn dd_add(a: vec2<f32>, b: vec2<f32>, one: f32) -> vec2<f32> {
    let s = two_sum(a.x, b.x, one);
    return fast_two_sum(s.x, s.y + (a.y + b.y), one);
}

// a as hi + lo of 12 significant bits each (Veltkamp), so products of
// halves are exact in f32.
fn halves(a: f32, one: f32) -> vec2<f32> {
    let c = (4097.0 * a) * one;
    let hi = (c - (c - a) * one) * one;
    return vec2<f32>(hi, a - hi);
}

// a * b exactly as (product, error) (Dekker). Not by fma(a, b, -p): WGSL's
// fma may round twice (lavapipe's does).
fn two_prod(a: f32, b: f32, one: f32) -> vec2<f32> {
    let p = (a * b) * one;
    let x = halves(a, one);
    let y = halves(b, one);
    let e = ((((x.x * y.x - p) * one + x.x * y.y) * one + x.y * y.x) * one + x.y * y.y) * one;
    return vec2<f32>(p, e);
}

// Product of two double-single values, normalised.
fn dd_mul(a: vec2<f32>, b: vec2<f32>, one: f32) -> vec2<f32> {
    let p = two_prod(a.x, b.x, one);
    return fast_two_sum(p.x, p.y + (a.x * b.y + a.y * b.x), one);
}

// m_j / sqrt(r2) of source k for the sink at (xh, xl), 0 for the sink
// itself (`self_k`) and for coincident points.
fn term(k: u32, self_k: bool, xh: vec3<f32>, xl: vec3<f32>, eps2: vec2<f32>, one: f32) -> vec2<f32> {
    let sh = tile_hi[k];
    let sl = tile_lo[k];
    let dx = dd_add(vec2<f32>(sh.x, sl.x), vec2<f32>(-xh.x, -xl.x), one);
    let dy = dd_add(vec2<f32>(sh.y, sl.y), vec2<f32>(-xh.y, -xl.y), one);
    let dz = dd_add(vec2<f32>(sh.z, sl.z), vec2<f32>(-xh.z, -xl.z), one);
    let r2 = dd_add(
        dd_add(dd_mul(dx, dx, one), dd_mul(dy, dy, one), one),
        dd_add(dd_mul(dz, dz, one), eps2, one),
        one,
    );
    if (self_k || r2.x <= 0.0) {
        return vec2<f32>(0.0);
    }
    // 1/sqrt(r2): inverseSqrt (a few ulp), one f32 Newton step (to f32
    // rounding), then one in double-single: with y = rinv (1 + d),
    // res = 1 - r2 y^2 ~ -2d, and y (1 + res/2 + 3 res^2/8) is off by
    // O(d^3) ~ 1e-21; res comes from the exact product r2 y^2.
    var y = inverseSqrt(r2.x);
    y = fma(0.5 * y, fma(-(r2.x * y), y, 1.0), y);
    let t = dd_mul(r2, dd_mul(vec2<f32>(y, 0.0), vec2<f32>(y, 0.0), one), one);
    // 1 - t.x is exact (t.x within a few ulp of 1).
    let res = (1.0 - t.x) * one - t.y;
    let rinv = fast_two_sum(y, y * (0.5 * res + 0.375 * res * res), one);
    return dd_mul(vec2<f32>(sh.w, sl.w), rinv, one);
}

@compute @workgroup_size(ET)
fn potentials(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let one = params.one;
    let n = params.n;
    let eps2 = vec2<f32>(params.eps2_hi, params.eps2_lo);
    // Every sink in one dispatch, as a 2-D grid where they need more
    // workgroups than one dimension holds (gpu::context::dispatch_size);
    // the grid's few extra workgroups hold no sink.
    let s = (wid.y * nwg.x + wid.x) * ET + lid;
    let i = params.sink_first + s;
    // Sinks past the last still stage sources (every invocation must reach
    // the barriers) but never store.
    let me = params.sink_first + min(s, params.sinks - 1u);
    let xh = src_hi[me].xyz;
    let xl = src_lo[me].xyz;
    // This dispatch's run of sources, its sum added to the runs' before.
    let end = min(params.src_first + params.src_count, n);
    var sum = vec2<f32>(0.0);
    for (var base = params.src_first; base < end; base += ET) {
        let j = min(base + lid, end - 1u);
        workgroupBarrier();
        tile_hi[lid] = src_hi[j];
        tile_lo[lid] = src_lo[j];
        workgroupBarrier();
        let count = min(ET, end - base);
        for (var k = 0u; k < count; k++) {
            sum = dd_add(sum, term(k, base + k == i, xh, xl, eps2, one), one);
        }
    }
    if (s < params.sinks) {
        pot[s] = dd_add(pot[s], -sum, one);
    }
}
