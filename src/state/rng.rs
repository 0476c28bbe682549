//! The deterministic random stream of the initial-condition generators:
//! PCG (rand_pcg), so a seed gives the same model on every platform.

use rand_core::{RngCore, SeedableRng};

pub struct Rng(rand_pcg::Pcg64Mcg);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(rand_pcg::Pcg64Mcg::seed_from_u64(seed))
    }

    /// Uniform in [0, 1), 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1): never exactly zero (safe for powers and logs).
    pub fn uniform_open(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal deviate (Box–Muller; one of the pair is used, so
    /// the stream stays a plain function of the number of calls).
    pub fn gaussian(&mut self) -> f64 {
        let r = (-2.0 * self.uniform_open().ln()).sqrt();
        r * (2.0 * std::f64::consts::PI * self.uniform()).cos()
    }

    /// Isotropic unit vector.
    pub fn unit_vector(&mut self) -> [f64; 3] {
        let z = 2.0 * self.uniform() - 1.0;
        let phi = 2.0 * std::f64::consts::PI * self.uniform();
        let s = (1.0 - z * z).sqrt();
        [s * phi.cos(), s * phi.sin(), z]
    }
}
