//! Spherical density profiles of galaxy components, as shapes (the
//! normalisation to a component's mass is numerical, in `eddington`), and
//! the smooth outer truncation they share. Lengths in the model's unit.

/// The radial shape of a spherical component.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// Hernquist (1990, ApJ 356, 359): ρ ∝ 1 / ((r/a)(1 + r/a)³).
    Hernquist { a: f64 },
    /// Plummer (1911): ρ ∝ (1 + r²/a²)^(-5/2).
    Plummer { a: f64 },
    /// Navarro, Frenk & White (1997, ApJ 490, 493): ρ ∝ 1 / ((r/rs)(1 + r/rs)²).
    Nfw { rs: f64 },
    /// Sérsic (1968) surface density of index `n` and projected half-mass
    /// radius `re`, realised in 3D by the Prugniel & Simien (1997, A&A
    /// 321, 111) deprojection ρ ∝ (r/re)^(-p) exp(−b (r/re)^(1/n)), with
    /// b from Prugniel & Simien and p = 1 − 0.6097/n + 0.05563/n² (Lima
    /// Neto, Gerbal & Márquez 1999): its projection follows the Sérsic law
    /// to a few per cent over 0.1–10 re for 0.6 < n < 10.
    Sersic { re: f64, n: f64 },
}

/// A component's shape with a smooth outer truncation: beyond `r_t` the
/// density falls as (r/r_t)^ε exp(−(r − r_t)/r_d) with ε chosen so that the
/// density and its logarithmic slope are continuous at r_t (Kazantzidis,
/// Magorrian & Moore 2004, ApJ 601, 37). A sharp edge would give Eddington's
/// formula a negative distribution function near the edge's energy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    pub shape: Shape,
    /// Truncation radius.
    pub r_t: f64,
    /// Decay length of the truncation.
    pub r_d: f64,
}

impl Shape {
    /// The untruncated shape (arbitrary normalisation).
    pub fn density(&self, r: f64) -> f64 {
        match *self {
            Shape::Hernquist { a } => {
                let x = r / a;
                1.0 / (x * (1.0 + x).powi(3))
            }
            Shape::Plummer { a } => (1.0 + (r / a).powi(2)).powf(-2.5),
            Shape::Nfw { rs } => {
                let x = r / rs;
                1.0 / (x * (1.0 + x).powi(2))
            }
            Shape::Sersic { re, n } => {
                let (b, p) = sersic_b_p(n);
                let x = r / re;
                x.powf(-p) * (-b * x.powf(1.0 / n)).exp()
            }
        }
    }

    /// d ln ρ / d ln r, the logarithmic slope (analytic).
    pub fn log_slope(&self, r: f64) -> f64 {
        match *self {
            Shape::Hernquist { a } => -1.0 - 3.0 * r / (r + a),
            Shape::Plummer { a } => -5.0 * r * r / (a * a + r * r),
            Shape::Nfw { rs } => -1.0 - 2.0 * r / (r + rs),
            Shape::Sersic { re, n } => {
                let (b, p) = sersic_b_p(n);
                -p - b / n * (r / re).powf(1.0 / n)
            }
        }
    }

    /// The scale length (a, rs or re).
    pub fn scale(&self) -> f64 {
        match *self {
            Shape::Hernquist { a } | Shape::Plummer { a } => a,
            Shape::Nfw { rs } => rs,
            Shape::Sersic { re, .. } => re,
        }
    }
}

/// Prugniel & Simien's b(n) = 2n − 1/3 + 0.009876/n (the projected
/// half-mass radius is re) and Lima Neto et al.'s p(n).
fn sersic_b_p(n: f64) -> (f64, f64) {
    (
        2.0 * n - 1.0 / 3.0 + 0.009876 / n,
        1.0 - 0.6097 / n + 0.05563 / (n * n),
    )
}

impl Profile {
    /// `shape` truncated at `r_t` with decay length `r_t / 10` (as
    /// Kazantzidis et al. chose for haloes).
    pub fn truncated(shape: Shape, r_t: f64) -> Self {
        Self {
            shape,
            r_t,
            r_d: 0.1 * r_t,
        }
    }

    /// Density shape (arbitrary normalisation, continuous at r_t).
    pub fn density(&self, r: f64) -> f64 {
        if r <= self.r_t {
            self.shape.density(r)
        } else {
            let eps = self.shape.log_slope(self.r_t) + self.r_t / self.r_d;
            self.shape.density(self.r_t)
                * (r / self.r_t).powf(eps)
                * (-(r - self.r_t) / self.r_d).exp()
        }
    }

    /// dρ/dr of the truncated shape (analytic slopes).
    pub fn density_derivative(&self, r: f64) -> f64 {
        let slope = if r <= self.r_t {
            self.shape.log_slope(r)
        } else {
            self.shape.log_slope(self.r_t) + self.r_t / self.r_d - r / self.r_d
        };
        self.density(r) * slope / r
    }

    /// Where the density is negligible: 40 decay lengths past r_t
    /// (e^-40 ≈ 4e-18 of the density at r_t).
    pub fn outer_radius(&self) -> f64 {
        self.r_t + 40.0 * self.r_d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPES: [Shape; 4] = [
        Shape::Hernquist { a: 1.3 },
        Shape::Nfw { rs: 2.0 },
        Shape::Plummer { a: 0.5 },
        Shape::Sersic { re: 1.0, n: 3.0 },
    ];

    #[test]
    fn truncation_is_continuous_in_value_and_slope() {
        for shape in SHAPES {
            let p = Profile::truncated(shape, 10.0);
            let (below, above) = (p.density(10.0 - 1e-9), p.density(10.0 + 1e-9));
            assert!((below / above - 1.0).abs() < 1e-7, "{shape:?}");
            let (d0, d1) = (
                p.density_derivative(10.0 - 1e-9),
                p.density_derivative(10.0 + 1e-9),
            );
            assert!((d0 / d1 - 1.0).abs() < 1e-7, "{shape:?}");
        }
    }

    #[test]
    fn analytic_slopes_match_finite_differences() {
        for shape in SHAPES {
            for r in [0.01, 0.3, 1.0, 4.0] {
                let h = 1e-6;
                let fd = ((shape.density(r * (1.0 + h))).ln()
                    - (shape.density(r * (1.0 - h))).ln())
                    / (2.0 * h);
                assert!((fd - shape.log_slope(r)).abs() < 1e-6, "{shape:?} at {r}");
            }
        }
    }
}
