// Walk groups of one particle (appended to shaders/groups.wgsl and
// shaders/spanning.wgsl, which bind params, pos_mass, vel, counters and
// group_boxes): a group that would open too much of a tree for all its
// particles is replaced by them one by one.

// How the walk tests cells for a group whose particles' smallest |a_old|
// is `a_min`: (open_scale, accel_tol) of GroupBox. The acceleration MAC
// accepts a cell at distance d > b from the group when M b^3 / (d^3
// (d - b)^2), the size of the acceleration error its quadrupole
// expansion leaves (Salmon & Warren's bound up to a constant, which alpha
// absorbs), is at most alpha |a_old|; a group with a particle that has no
// force yet (a first evaluation) gets the geometric test alone, as an
// opening angle on b: d > b/θ, and never nearer than b (θ may exceed 1,
// which l/θ + δ allows but b/θ does not: a cell around the group itself
// could pass).
fn group_tolerance(a_min: f32) -> vec2<f32> {
    if (params.alpha == 0.0) {
        return vec2<f32>(1.0, 0.0);
    }
    if (a_min > 0.0) {
        return vec2<f32>(1.0, params.alpha * a_min);
    }
    return vec2<f32>(max(params.inv_theta * params.inv_theta, 1.0), 3.0e38);
}

fn point_group(j: u32) -> GroupBox {
    let p = vec4<f32>(pos_mass[j].pos, 0.0);
    let tol = group_tolerance(vel[j].last_acc);
    return GroupBox(p, p, j, 1u, tol.x, tol.y);
}

// Replaces group g (particles start .. start + count) by one-particle
// groups, the first in its slot and the rest appended; whether there was
// room. The new slots are reserved with compare-and-swap so that a
// reservation that does not fit never raises the count, even for a
// moment (an add-then-subtract could let another group reserve past a
// hole).
fn split_into_points(g: u32, start: u32, count: u32) -> bool {
    let extra = count - 1u;
    var first = atomicLoad(&counters.group_count);
    loop {
        if (first + extra > params.group_capacity) {
            break;
        }
        let r = atomicCompareExchangeWeak(&counters.group_count, first, first + extra);
        if (r.exchanged) {
            for (var k = 1u; k < count; k++) {
                group_boxes[first + k - 1u] = point_group(start + k);
            }
            group_boxes[g] = point_group(start);
            return true;
        }
        first = r.old_value;
    }
    return false;
}
