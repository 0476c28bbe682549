//! Double-single numbers: an f64 carried to the GPU as the unevaluated sum
//! `hi + lo` of two f32 (about 48 significant bits). The WGSL side, with
//! its guard against reassociation, is `shaders/ds.wgsl`, which this module
//! composes in front of the kernels that use it.

/// The WGSL double-single helpers.
pub const DS_WGSL: &str = include_str!("../../shaders/ds.wgsl");

/// `x` as `(hi, lo)`: `hi` is `x` rounded to f32, `lo` the rest rounded to
/// f32, so `hi as f64 + lo as f64` equals `x` to about 2^-48 relative.
pub fn split(x: f64) -> (f32, f32) {
    let hi = x as f32;
    (hi, (x - hi as f64) as f32)
}

/// Component-wise `split` of a vector.
pub fn split3(x: [f64; 3]) -> ([f32; 3], [f32; 3]) {
    let s = x.map(split);
    (s.map(|p| p.0), s.map(|p| p.1))
}

/// The f64 value of a double-single pair.
pub fn join(hi: f32, lo: f32) -> f64 {
    hi as f64 + lo as f64
}

/// Component-wise `join`.
pub fn join3(hi: [f32; 3], lo: [f32; 3]) -> [f64; 3] {
    [join(hi[0], lo[0]), join(hi[1], lo[1]), join(hi[2], lo[2])]
}

/// Composes `body` after the DS helpers (and the Rust constants and shared
/// layouts, see `gpu::shader::compose`).
pub fn compose_with_ds(consts: &[(&str, u32)], body: &str) -> String {
    crate::gpu::shader::compose(consts, &format!("{DS_WGSL}\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_join_round_trip() {
        for x in [1.0 / 3.0, -12345.678901234567, 1e-30, 0.0, 7.0] {
            let (hi, lo) = split(x);
            // 2^-48 relative: hi carries 24 bits, lo the next 24.
            assert!((join(hi, lo) - x).abs() <= x.abs() * 2f64.powi(-47), "{x}");
        }
    }
}
