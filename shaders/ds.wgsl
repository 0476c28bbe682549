// Double-single (DS) arithmetic: a value is the unevaluated sum hi + lo of
// two f32 (Dekker 1971; the DS kernels of Sapporo), about 48 significant
// bits. Composed in front of predict.wgsl, hermite_force.wgsl and
// neighbours.wgsl by src/direct/ds.rs, which holds the CPU twin.
//
// WGSL lets the compiler reassociate float operations, and a compiler that
// rewrites (a + b) - a as b silently turns every error term below into 0
// (lavapipe does exactly that). So every intermediate that feeds another
// subtraction or addition passes through a multiplication by `one`, a value
// equal to 1.0 read from a storage buffer, which the compiler cannot see
// through: multiplying by 1.0 is exact, fusing it into an FMA changes
// nothing, and no algebraic rewrite can cancel across the opaque products. tests/hermite_kernels.rs
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
    let s = (a.hi + b) * one;
    let bb = (s - a.hi) * one;
    let av = (s - bb) * one;
    return Ds3(s, a.lo + ((a.hi - av) * one + (b - bb) * one));
}

fn ds4_add_f(a: Ds4, b: vec4<f32>, one: f32) -> Ds4 {
    let s = (a.hi + b) * one;
    let bb = (s - a.hi) * one;
    let av = (s - bb) * one;
    return Ds4(s, a.lo + ((a.hi - av) * one + (b - bb) * one));
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
    return (a_hi - b_hi) * one + (a_lo - b_lo);
}

fn ds_diff(a_hi: f32, a_lo: f32, b_hi: f32, b_lo: f32, one: f32) -> f32 {
    return (a_hi - b_hi) * one + (a_lo - b_lo);
}
