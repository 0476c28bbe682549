// Blocked direct summation (Kirin/Sapporo-style tiles), f32, tuned for
// throughput. Each invocation accumulates IPT sinks (i), so one source
// read from workgroup memory feeds IPT interactions; the workgroup (THREADS
// invocations, THREADS * IPT sinks) walks over all sources j in tiles of
// THREADS particles: each invocation stages one source, then every
// invocation runs the whole tile, UNROLL sources per loop trip. The sinks
// are separate private variables x0..x15, a0..a15 behind constant IPT
// tests, not arrays: a private array indexed in a loop may land in (slow)
// local memory, which on an H100 cost a factor 3.
// Plummer softening:
//   a_i = sum_j m_j d / (d^2 + eps^2)^(3/2),
//   pot_i = -sum_{j != i} m_j / sqrt(d^2 + eps^2).
// Per interaction: 3 sub, 3 fma (r2), rsqrt, 3 mul, 1 add (pot), 3 fma
// (acc): 14 instructions, the least the formula allows (13 without the
// potential, POT == 0). SOFTENED == 1
// (eps > 0) drops the r2 == 0 test: the self pair then adds m_i/eps to the
// potential sum, subtracted at the end, and 0 to the acceleration.
// Driven by src/direct/mod.rs.

@group(0) @binding(0) var<uniform> params: DirectParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> acc_pot: array<AccPot>;

var<workgroup> tile: array<vec4<f32>, THREADS>;

// The invocation's sinks (positions) and sums (xyz: acceleration; w: sum
// of m_j / r, the potential negated).
var<private> x0: vec3<f32>;
var<private> x1: vec3<f32>;
var<private> x2: vec3<f32>;
var<private> x3: vec3<f32>;
var<private> x4: vec3<f32>;
var<private> x5: vec3<f32>;
var<private> x6: vec3<f32>;
var<private> x7: vec3<f32>;
var<private> x8: vec3<f32>;
var<private> x9: vec3<f32>;
var<private> x10: vec3<f32>;
var<private> x11: vec3<f32>;
var<private> x12: vec3<f32>;
var<private> x13: vec3<f32>;
var<private> x14: vec3<f32>;
var<private> x15: vec3<f32>;
var<private> a0: vec4<f32>;
var<private> a1: vec4<f32>;
var<private> a2: vec4<f32>;
var<private> a3: vec4<f32>;
var<private> a4: vec4<f32>;
var<private> a5: vec4<f32>;
var<private> a6: vec4<f32>;
var<private> a7: vec4<f32>;
var<private> a8: vec4<f32>;
var<private> a9: vec4<f32>;
var<private> a10: vec4<f32>;
var<private> a11: vec4<f32>;
var<private> a12: vec4<f32>;
var<private> a13: vec4<f32>;
var<private> a14: vec4<f32>;
var<private> a15: vec4<f32>;

// One interaction of source s (position, mass) with the sink at xi.
fn interact(s: vec4<f32>, xi: vec3<f32>, acc: vec4<f32>, eps2: f32) -> vec4<f32> {
    let d = s.xyz - xi;
    let r2 = fma(d.x, d.x, fma(d.y, d.y, fma(d.z, d.z, eps2)));
    var rinv = inverseSqrt(r2);
    if (SOFTENED == 0u) {
        // r2 == 0: the self pair (or coincident particles).
        rinv = select(0.0, rinv, r2 > 0.0);
    }
    let mr = s.w * rinv;
    let mr3 = mr * rinv * rinv;
    if (POT == 0u) {
        // Acceleration only (a caller that needs no potential): 13
        // instructions.
        return vec4<f32>(fma(vec3<f32>(mr3), d, acc.xyz), 0.0);
    }
    return vec4<f32>(fma(vec3<f32>(mr3), d, acc.xyz), acc.w + mr);
}

// Source s against all IPT sinks of the invocation.
fn source(s: vec4<f32>, eps2: f32) {
    a0 = interact(s, x0, a0, eps2);
    if (IPT > 1u) {
        a1 = interact(s, x1, a1, eps2);
    }
    if (IPT > 2u) {
        a2 = interact(s, x2, a2, eps2);
    }
    if (IPT > 3u) {
        a3 = interact(s, x3, a3, eps2);
    }
    if (IPT > 4u) {
        a4 = interact(s, x4, a4, eps2);
    }
    if (IPT > 5u) {
        a5 = interact(s, x5, a5, eps2);
    }
    if (IPT > 6u) {
        a6 = interact(s, x6, a6, eps2);
    }
    if (IPT > 7u) {
        a7 = interact(s, x7, a7, eps2);
    }
    if (IPT > 8u) {
        a8 = interact(s, x8, a8, eps2);
    }
    if (IPT > 9u) {
        a9 = interact(s, x9, a9, eps2);
    }
    if (IPT > 10u) {
        a10 = interact(s, x10, a10, eps2);
    }
    if (IPT > 11u) {
        a11 = interact(s, x11, a11, eps2);
    }
    if (IPT > 12u) {
        a12 = interact(s, x12, a12, eps2);
    }
    if (IPT > 13u) {
        a13 = interact(s, x13, a13, eps2);
    }
    if (IPT > 14u) {
        a14 = interact(s, x14, a14, eps2);
    }
    if (IPT > 15u) {
        a15 = interact(s, x15, a15, eps2);
    }
}

// The sink's position (clamped into range: out-of-range sinks compute but
// never store).
fn sink(i: u32, n: u32) -> vec3<f32> {
    return pos_mass[min(i, n - 1u)].pos;
}

fn store(i: u32, n: u32, acc: vec4<f32>, eps2: f32) {
    if (i < n) {
        var self_pot = 0.0;
        if (SOFTENED == 1u && POT == 1u) {
            self_pot = pos_mass[i].mass * inverseSqrt(eps2);
        }
        // Without the potential, the last one stays in place.
        let pot = select(acc_pot[i].pot, self_pot - acc.w, POT == 1u);
        acc_pot[i] = AccPot(acc.xyz, pot);
    }
}

@compute @workgroup_size(THREADS)
fn forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = params.n;
    let first = (params.first_group + wid.y * nwg.x + wid.x) * (THREADS * IPT) + lid;
    let eps2 = params.eps2;
    x0 = sink(first, n);
    if (IPT > 1u) {
        x1 = sink(first + 1u * THREADS, n);
    }
    if (IPT > 2u) {
        x2 = sink(first + 2u * THREADS, n);
    }
    if (IPT > 3u) {
        x3 = sink(first + 3u * THREADS, n);
    }
    if (IPT > 4u) {
        x4 = sink(first + 4u * THREADS, n);
    }
    if (IPT > 5u) {
        x5 = sink(first + 5u * THREADS, n);
    }
    if (IPT > 6u) {
        x6 = sink(first + 6u * THREADS, n);
    }
    if (IPT > 7u) {
        x7 = sink(first + 7u * THREADS, n);
    }
    if (IPT > 8u) {
        x8 = sink(first + 8u * THREADS, n);
    }
    if (IPT > 9u) {
        x9 = sink(first + 9u * THREADS, n);
    }
    if (IPT > 10u) {
        x10 = sink(first + 10u * THREADS, n);
    }
    if (IPT > 11u) {
        x11 = sink(first + 11u * THREADS, n);
    }
    if (IPT > 12u) {
        x12 = sink(first + 12u * THREADS, n);
    }
    if (IPT > 13u) {
        x13 = sink(first + 13u * THREADS, n);
    }
    if (IPT > 14u) {
        x14 = sink(first + 14u * THREADS, n);
    }
    if (IPT > 15u) {
        x15 = sink(first + 15u * THREADS, n);
    }
    // Both loops count by 1 to a bound set before them (tiles, then loop
    // trips of UNROLL sources, `div_ceil`), and Tint proves the tile's
    // indices in bounds.
    let tiles = div_ceil(n, THREADS);
    for (var t = 0u; t < tiles; t++) {
        let j = t * THREADS + lid;
        // Padding past n: zero mass, contributes nothing.
        var src = vec4<f32>(0.0);
        if (j < n) {
            let p = pos_mass[j];
            src = vec4<f32>(p.pos, p.mass);
        }
        workgroupBarrier();
        tile[lid] = src;
        workgroupBarrier();
        for (var trip = 0u; trip < THREADS / UNROLL; trip++) {
            let k = trip * UNROLL;
            source(tile[k], eps2);
            if (UNROLL > 1u) {
                source(tile[k + 1u], eps2);
            }
            if (UNROLL > 2u) {
                source(tile[k + 2u], eps2);
            }
            if (UNROLL > 3u) {
                source(tile[k + 3u], eps2);
            }
            if (UNROLL > 4u) {
                source(tile[k + 4u], eps2);
                source(tile[k + 5u], eps2);
                source(tile[k + 6u], eps2);
                source(tile[k + 7u], eps2);
            }
        }
    }
    store(first, n, a0, eps2);
    if (IPT > 1u) {
        store(first + 1u * THREADS, n, a1, eps2);
    }
    if (IPT > 2u) {
        store(first + 2u * THREADS, n, a2, eps2);
    }
    if (IPT > 3u) {
        store(first + 3u * THREADS, n, a3, eps2);
    }
    if (IPT > 4u) {
        store(first + 4u * THREADS, n, a4, eps2);
    }
    if (IPT > 5u) {
        store(first + 5u * THREADS, n, a5, eps2);
    }
    if (IPT > 6u) {
        store(first + 6u * THREADS, n, a6, eps2);
    }
    if (IPT > 7u) {
        store(first + 7u * THREADS, n, a7, eps2);
    }
    if (IPT > 8u) {
        store(first + 8u * THREADS, n, a8, eps2);
    }
    if (IPT > 9u) {
        store(first + 9u * THREADS, n, a9, eps2);
    }
    if (IPT > 10u) {
        store(first + 10u * THREADS, n, a10, eps2);
    }
    if (IPT > 11u) {
        store(first + 11u * THREADS, n, a11, eps2);
    }
    if (IPT > 12u) {
        store(first + 12u * THREADS, n, a12, eps2);
    }
    if (IPT > 13u) {
        store(first + 13u * THREADS, n, a13, eps2);
    }
    if (IPT > 14u) {
        store(first + 14u * THREADS, n, a14, eps2);
    }
    if (IPT > 15u) {
        store(first + 15u * THREADS, n, a15, eps2);
    }
}
