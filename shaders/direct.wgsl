// Blocked direct summation (Kirin/Sapporo-style tiles), f32, tuned for
// throughput. Each invocation accumulates IPT sinks (i), so one source
// read from workgroup memory feeds IPT interactions; the workgroup (THREADS
// invocations, THREADS * IPT sinks) walks over all sources j in tiles of
// THREADS particles: each invocation stages one source, then every
// invocation runs the whole tile. The sinks are separate variables x0..x15,
// a0..a15 behind constant IPT tests, not arrays: a private array indexed in
// a loop may land in (slow) local memory, which on an H100 cost a factor 3.
// Plummer softening:
//   a_i = sum_j m_j d / (d^2 + eps^2)^(3/2),
//   pot_i = -sum_{j != i} m_j / sqrt(d^2 + eps^2).
// Per interaction: 3 sub, 3 fma (r2), rsqrt, 3 mul, 1 add (pot), 3 fma
// (acc): 14 instructions, the least the formula allows. SOFTENED == 1
// (eps > 0) drops the r2 == 0 test: the self pair then adds m_i/eps to the
// potential sum, subtracted at the end, and 0 to the acceleration.
// Driven by src/direct/mod.rs.

@group(0) @binding(0) var<uniform> params: DirectParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> acc_pot: array<AccPot>;

var<workgroup> tile: array<vec4<f32>, THREADS>;

// One interaction of source s (position, mass) with the sink at xi; acc.w
// sums m_j / r (the potential, negated).
fn interact(s: vec4<f32>, xi: vec3<f32>, acc: ptr<function, vec4<f32>>, eps2: f32) {
    let d = s.xyz - xi;
    let r2 = fma(d.x, d.x, fma(d.y, d.y, fma(d.z, d.z, eps2)));
    var rinv = inverseSqrt(r2);
    if (SOFTENED == 0u) {
        // r2 == 0: the self pair (or coincident particles).
        rinv = select(0.0, rinv, r2 > 0.0);
    }
    let mr = s.w * rinv;
    let mr3 = mr * rinv * rinv;
    *acc = vec4<f32>(fma(vec3<f32>(mr3), d, (*acc).xyz), (*acc).w + mr);
}

// The sink's position (clamped into range: out-of-range sinks compute but
// never store).
fn sink(i: u32, n: u32) -> vec3<f32> {
    return pos_mass[min(i, n - 1u)].pos;
}

fn store(i: u32, n: u32, acc: vec4<f32>, eps2: f32) {
    if (i < n) {
        var self_pot = 0.0;
        if (SOFTENED == 1u) {
            self_pot = pos_mass[i].mass * inverseSqrt(eps2);
        }
        acc_pot[i] = AccPot(acc.xyz, self_pot - acc.w);
    }
}

@compute @workgroup_size(THREADS)
fn forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = params.n;
    let first = (wid.y * nwg.x + wid.x) * (THREADS * IPT) + lid;
    let eps2 = params.eps2;
    let x0 = sink(first, n);
    let x1 = select(vec3<f32>(0.0), sink(first + 1u * THREADS, n), IPT > 1u);
    let x2 = select(vec3<f32>(0.0), sink(first + 2u * THREADS, n), IPT > 2u);
    let x3 = select(vec3<f32>(0.0), sink(first + 3u * THREADS, n), IPT > 3u);
    let x4 = select(vec3<f32>(0.0), sink(first + 4u * THREADS, n), IPT > 4u);
    let x5 = select(vec3<f32>(0.0), sink(first + 5u * THREADS, n), IPT > 5u);
    let x6 = select(vec3<f32>(0.0), sink(first + 6u * THREADS, n), IPT > 6u);
    let x7 = select(vec3<f32>(0.0), sink(first + 7u * THREADS, n), IPT > 7u);
    let x8 = select(vec3<f32>(0.0), sink(first + 8u * THREADS, n), IPT > 8u);
    let x9 = select(vec3<f32>(0.0), sink(first + 9u * THREADS, n), IPT > 9u);
    let x10 = select(vec3<f32>(0.0), sink(first + 10u * THREADS, n), IPT > 10u);
    let x11 = select(vec3<f32>(0.0), sink(first + 11u * THREADS, n), IPT > 11u);
    let x12 = select(vec3<f32>(0.0), sink(first + 12u * THREADS, n), IPT > 12u);
    let x13 = select(vec3<f32>(0.0), sink(first + 13u * THREADS, n), IPT > 13u);
    let x14 = select(vec3<f32>(0.0), sink(first + 14u * THREADS, n), IPT > 14u);
    let x15 = select(vec3<f32>(0.0), sink(first + 15u * THREADS, n), IPT > 15u);
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var a4 = vec4<f32>(0.0);
    var a5 = vec4<f32>(0.0);
    var a6 = vec4<f32>(0.0);
    var a7 = vec4<f32>(0.0);
    var a8 = vec4<f32>(0.0);
    var a9 = vec4<f32>(0.0);
    var a10 = vec4<f32>(0.0);
    var a11 = vec4<f32>(0.0);
    var a12 = vec4<f32>(0.0);
    var a13 = vec4<f32>(0.0);
    var a14 = vec4<f32>(0.0);
    var a15 = vec4<f32>(0.0);
    for (var base = 0u; base < n; base += THREADS) {
        let j = base + lid;
        // Padding past n: zero mass, contributes nothing.
        var src = vec4<f32>(0.0);
        if (j < n) {
            let p = pos_mass[j];
            src = vec4<f32>(p.pos, p.mass);
        }
        workgroupBarrier();
        tile[lid] = src;
        workgroupBarrier();
        for (var k = 0u; k < THREADS; k++) {
            let s = tile[k];
            interact(s, x0, &a0, eps2);
            if (IPT > 1u) {
                interact(s, x1, &a1, eps2);
            }
            if (IPT > 2u) {
                interact(s, x2, &a2, eps2);
            }
            if (IPT > 3u) {
                interact(s, x3, &a3, eps2);
            }
            if (IPT > 4u) {
                interact(s, x4, &a4, eps2);
            }
            if (IPT > 5u) {
                interact(s, x5, &a5, eps2);
            }
            if (IPT > 6u) {
                interact(s, x6, &a6, eps2);
            }
            if (IPT > 7u) {
                interact(s, x7, &a7, eps2);
            }
            if (IPT > 8u) {
                interact(s, x8, &a8, eps2);
            }
            if (IPT > 9u) {
                interact(s, x9, &a9, eps2);
            }
            if (IPT > 10u) {
                interact(s, x10, &a10, eps2);
            }
            if (IPT > 11u) {
                interact(s, x11, &a11, eps2);
            }
            if (IPT > 12u) {
                interact(s, x12, &a12, eps2);
            }
            if (IPT > 13u) {
                interact(s, x13, &a13, eps2);
            }
            if (IPT > 14u) {
                interact(s, x14, &a14, eps2);
            }
            if (IPT > 15u) {
                interact(s, x15, &a15, eps2);
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
