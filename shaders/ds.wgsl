// Double-single (DS) arithmetic: a value is the unevaluated sum hi + lo of
// two f32 (Dekker 1971; the DS kernels of Sapporo), about 48 significant
// bits. Composed in front of predict.wgsl, hermite_force.wgsl,
// neighbours.wgsl, energy.wgsl, generate.wgsl and diagnostics.wgsl by
// src/gpu/ds.rs (`compose_with_ds`, after `WORKGROUP_SIZE`, which
// ds4_workgroup_total needs), which holds the CPU twin.
//
// WGSL lets the compiler reassociate float operations, and a compiler that
// rewrites (a + b) - a as b silently turns every error term below into 0
// (lavapipe does exactly that). So intermediates that feed such a
// subtraction pass through a multiplication by `one`, a value equal to 1.0
// read from a storage buffer, which the compiler cannot see through:
// multiplying by 1.0 is exact, and no algebraic rewrite can cancel across
// the opaque products. In the hot two-sum of the force sums only the sum s
// and the difference s - a are guarded (all its error terms need;
// `ds_adds_every_interaction_exactly` fails on lavapipe without them, and
// passes with them); a guard whose product feeds an addition is written
// fma(x, one, y), which rounds once whether the FMA is fused or not, at the
// cost of the addition alone. Guarding fma(x, one, y) instead of a product
// does not work as a guard by itself: lavapipe splits the FMA and then
// cancels the addition. tests/hermite_kernels.rs
// and tests/web.rs check that DS is really more accurate than f32, natively
// and in the browser.

struct Ds3 {
    hi: vec3<f32>,
    lo: vec3<f32>,
}

struct Ds4 {
    hi: vec4<f32>,
    lo: vec4<f32>,
}

// a + b as hi + lo exactly (Knuth's two-sum); the error goes into lo.
fn ds3_add_f(a: Ds3, b: vec3<f32>, one: f32) -> Ds3 {
    let s = fma(a.hi, vec3<f32>(one), b);
    let bb = (s - a.hi) * one;
    let av = s - bb;
    return Ds3(s, a.lo + fma(a.hi - av, vec3<f32>(one), b - bb));
}

fn ds4_add_f(a: Ds4, b: vec4<f32>, one: f32) -> Ds4 {
    let s = fma(a.hi, vec4<f32>(one), b);
    let bb = (s - a.hi) * one;
    let av = s - bb;
    return Ds4(s, a.lo + fma(a.hi - av, vec4<f32>(one), b - bb));
}

// Renormalises hi + lo so that |lo| <= ulp(hi) / 2 (fast two-sum).
fn ds3_norm(hi: vec3<f32>, lo: vec3<f32>, one: f32) -> Ds3 {
    let s = (hi + lo) * one;
    return Ds3(s, lo - (s - hi) * one);
}

fn ds4_norm(hi: vec4<f32>, lo: vec4<f32>, one: f32) -> Ds4 {
    let s = (hi + lo) * one;
    return Ds4(s, lo - (s - hi) * one);
}

// a + b of two DS values, normalised.
fn ds3_add(a: Ds3, b: Ds3, one: f32) -> Ds3 {
    let t = ds3_add_f(Ds3(a.hi, vec3<f32>(0.0)), b.hi, one);
    return ds3_norm(t.hi, t.lo + (a.lo + b.lo), one);
}

fn ds4_add(a: Ds4, b: Ds4, one: f32) -> Ds4 {
    let t = ds4_add_f(Ds4(a.hi, vec4<f32>(0.0)), b.hi, one);
    return ds4_norm(t.hi, t.lo + (a.lo + b.lo), one);
}

// (a_hi + a_lo) - (b_hi + b_lo) rounded to f32: for differences of nearby
// DS positions the hi difference is exact (Sterbenz), so the result keeps
// the full relative precision of f32 however close the two points are.
fn ds3_diff(a_hi: vec3<f32>, a_lo: vec3<f32>, b_hi: vec3<f32>, b_lo: vec3<f32>, one: f32) -> vec3<f32> {
    return fma(a_hi - b_hi, vec3<f32>(one), a_lo - b_lo);
}

fn ds_diff(a_hi: f32, a_lo: f32, b_hi: f32, b_lo: f32, one: f32) -> f32 {
    return fma(a_hi - b_hi, one, a_lo - b_lo);
}

// --- sums over a workgroup ---

var<workgroup> ds4_partial: array<Ds4, WORKGROUP_SIZE>;

// The workgroup's sum of every invocation's `own`, halved in a fixed
// order (the same bits every time). Every invocation must call it.
fn ds4_workgroup_total(lid: u32, own: Ds4, one: f32) -> Ds4 {
    ds4_partial[lid] = own;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half / 2u) {
        if lid < half {
            ds4_partial[lid] = ds4_add(ds4_partial[lid], ds4_partial[lid + half], one);
        }
        workgroupBarrier();
    }
    let total = ds4_partial[0];
    // Every invocation has read it before the array is used again.
    workgroupBarrier();
    return total;
}
