// The curve's part of a redraw of a parallel run's domains on the GPU
// (the host's twin is src/cluster/decomposition.rs; both give the same
// keys, candidates and destinations bit for bit; each rank's box comes
// from the tree's own kernel, bbox.wgsl):
//   cut_candidates: one invocation per `stride` particles: the key of the
//                   first (its 63-bit Peano-Hilbert key in the global
//                   cube's frame: Skilling's transform, then its bits
//                   interleaved) and the sum of their work (the
//                   interactions of the last walk, a particle-cell one
//                   counting twice);
//   destinations:   the rank whose run of the curve holds each particle's
//                   key (the cuts at or below it), counted on from this
//                   rank, as the radix sort's key (this rank's own
//                   particles sort first), the particle's index as its
//                   value, and this rank's count for each rank.
// Driven by src/cluster/domain_keys.rs.

@group(0) @binding(0) var<uniform> params: RedrawParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> interactions: array<InteractionCount>;
@group(0) @binding(3) var<storage, read> cuts: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> sort_keys: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> order: array<u32>;
@group(0) @binding(6) var<storage, read_write> candidates: array<CutCandidate>;
@group(0) @binding(7) var<storage, read_write> counts: array<atomic<u32>>;

// The cell of p on each axis, 2^MAX_DEPTH across the cube (as
// CurveFrame::cell_of: the product rounded once, then truncated).
fn cell_of(p: vec3<f32>) -> vec3<u32> {
    let last = f32((1u << MAX_DEPTH) - 1u);
    let f = clamp((p - params.lo.xyz) * params.scale, vec3<f32>(0.0), vec3<f32>(last));
    return min(vec3<u32>(f), vec3<u32>((1u << MAX_DEPTH) - 1u));
}

// Skilling's transform of the cell into the Hilbert curve's transposed
// form, Gray-encoded, then the bits interleaved most significant first
// (x, y, z per level): (high 32 bits, low 32 bits) of the 63-bit key.
fn hilbert_key(c: vec3<u32>) -> vec2<u32> {
    var x = array<u32, 3>(c.x, c.y, c.z);
    for (var level = MAX_DEPTH - 1u; level > 0u; level--) {
        let q = 1u << level;
        let pm = q - 1u;
        for (var i = 0u; i < 3u; i++) {
            if ((x[i] & q) != 0u) {
                x[0] ^= pm;
            } else {
                let t = (x[0] ^ x[i]) & pm;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
    }
    x[1] ^= x[0];
    x[2] ^= x[1];
    var t = 0u;
    for (var level = MAX_DEPTH - 1u; level > 0u; level--) {
        if ((x[2] & (1u << level)) != 0u) {
            t ^= (1u << level) - 1u;
        }
    }
    var key = vec2<u32>(0u);
    for (var level = 0u; level < MAX_DEPTH; level++) {
        for (var axis = 0u; axis < 3u; axis++) {
            let bit = ((x[axis] ^ t) >> level) & 1u;
            let at = 3u * level + 2u - axis;
            if (at < 32u) {
                key.y |= bit << at;
            } else {
                key.x |= bit << (at - 32u);
            }
        }
    }
    return key;
}

// The key of particle i in the global cube's frame.
fn curve_key(i: u32) -> vec2<u32> {
    return hilbert_key(cell_of(pos_mass[i].pos));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn cut_candidates(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let c = flat_index(wid, nwg, lid);
    let first = c * params.stride;
    if (c >= div_ceil(params.n, params.stride)) {
        return;
    }
    // Summed in order, one f32 at a time, as the host's `Iterator::sum`.
    let last = min(first + params.stride, params.n);
    var work = 0.0;
    for (var i = first; i < last; i++) {
        let k = interactions[i];
        work += f32(k.pp) + 2.0 * f32(k.pc);
    }
    candidates[c] = CutCandidate(curve_key(first), work, 0u);
}

// Whether 64-bit key a (high, low) is at or below b.
fn at_or_below(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y <= b.y);
}

// The rank whose run of the curve holds `key`: the number of cuts at or
// below it (they ascend).
fn destination(key: vec2<u32>) -> u32 {
    var lo = 0u;
    var hi = params.cuts;
    while (lo < hi) {
        let mid = (lo + hi) / 2u;
        if (at_or_below(cuts[mid], key)) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn destinations(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wid, nwg, lid);
    if (i < params.n) {
        let rank = destination(curve_key(i));
        // Sorted by destination counted on from this rank: its own
        // particles first, where they stay (migration.wgsl).
        let ranks = params.cuts + 1u;
        sort_keys[i] = vec2<u32>(0u, (rank + ranks - params.rank) % ranks);
        order[i] = i;
        atomicAdd(&counts[rank], 1u);
    }
}
