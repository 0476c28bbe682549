// Functions shared by the tree shaders that work with keys and cubes.

// GROUP_BOX_LANES (src/tree/layout.rs): invocations per group in the
// group-box kernel (shaders/groups.wgsl).
const GROUP_BOXES_PER_WORKGROUP: u32 = WORKGROUP_SIZE / GROUP_BOX_LANES;

// The group-box dispatch for `groups` groups: a workgroup per tile of
// GROUP_BOXES_PER_WORKGROUP groups, at most `max_workgroups` (the device's
// limit per dimension; the workgroups stride over further tiles).
fn group_box_args(groups: u32, max_workgroups: u32) -> DispatchArgs {
    let workgroups = div_ceil(groups, GROUP_BOXES_PER_WORKGROUP);
    return DispatchArgs(min(workgroups, max_workgroups), 1u, 1u);
}

// Side of the cube that holds the bounding box (slightly enlarged so the
// largest coordinate maps below 2^21).
fn cube_side(b: Bounds) -> f32 {
    let ext = b.hi.xyz - b.lo.xyz;
    return max(max(ext.x, ext.y), max(ext.z, 1.0e-30)) * 1.0001;
}

// 21-bit integer coordinates of `p` in the cube of `b`.
fn quantise(p: vec3<f32>, b: Bounds) -> vec3<u32> {
    let scale = f32(KEY_CELLS) / cube_side(b);
    let f = clamp((p - b.lo.xyz) * scale, vec3<f32>(0.0), vec3<f32>(f32(KEY_CELLS - 1u)));
    return min(vec3<u32>(f), vec3<u32>(KEY_CELLS - 1u));
}

// Interleaves three 21-bit coordinates into a 63-bit key (x highest).
fn morton(q: vec3<u32>) -> vec2<u32> {
    var hi = 0u;
    var lo = 0u;
    for (var b = 0u; b < 21u; b++) {
        let src = 20u - b; // from the most significant coordinate bit
        let triple = (((q.x >> src) & 1u) << 2u) | (((q.y >> src) & 1u) << 1u) | ((q.z >> src) & 1u);
        // Key bit position of this triple's lowest bit: 3*src.
        let pos = 3u * src;
        if (pos >= 32u) {
            hi |= triple << (pos - 32u);
        } else {
            lo |= triple << pos;
            if (pos > 29u) {
                hi |= triple >> (32u - pos);
            }
        }
    }
    return vec2<u32>(hi, lo);
}

// Octant (0..7) of a key at tree level `level` (1..=MAX_DEPTH).
fn key_octant(k: vec2<u32>, level: u32) -> u32 {
    let pos = 3u * (MAX_DEPTH - level); // position of the triple's lowest bit
    if (pos >= 32u) {
        return (k.x >> (pos - 32u)) & 7u;
    }
    var o = (k.y >> pos) & 7u;
    if (pos > 29u) {
        o |= (k.x << (32u - pos)) & 7u;
    }
    return o;
}

// Squared distance from p to the box [lo, hi] (0 inside).
fn box_distance2(p: vec3<f32>, lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    let d = max(lo - p, max(vec3<f32>(0.0), p - hi));
    return dot(d, d);
}

// Whether a box (a walk group's, or a whole domain's when a local
// essential tree is cut: shaders/let_tree.wgsl) takes a cell of squared
// opening radius open_r2 and (acceleration MAC) M b^3 `mb3`, its centre
// of mass at squared distance d2 from the box, as a multipole; the box's
// tolerances are (open_scale, accel_tol) of GroupBox. Opening angle MAC:
// d beyond the opening radius, d > l/θ + δ. Acceleration MAC (Springel
// 2005; Miki & Umemura 2017, GOTHIC), with b the cell's radius about its
// centre of mass: d > b (so the expansion converges everywhere in the
// box) and M b³ / (d³ (d − b)²), the size of the acceleration error the
// quadrupole expansion leaves (Salmon & Warren's bound up to a constant
// that α absorbs), at most accel_tol = α |a_old|. Smaller d2 and
// accel_tol and larger open_scale only ever open more, so a cell a domain
// takes is taken by every group inside it.
fn mac_accepts(open_r2: f32, mb3: f32, d2: f32, open_scale: f32, accel_tol: f32, alpha: f32) -> bool {
    if (d2 <= open_r2 * open_scale) {
        return false;
    }
    if (alpha == 0.0) {
        return true;
    }
    let d = sqrt(d2);
    let near = d - sqrt(open_r2);
    return mb3 <= accel_tol * (d2 * d) * (near * near);
}
