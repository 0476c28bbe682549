//! The deterministic random streams of the initial-condition generators:
//! PCG (rand_pcg), so a seed gives the same model on every platform.
//!
//! A model samples each particle from its own stream, keyed by the seed,
//! the particle's component (`stream`) and its index there
//! (`Rng::for_particle`): particles are independent of each other and of
//! the order in which they are drawn, so the cores may share the work in
//! any way and the model is the same whatever their number.

use rand_core::{RngCore, SeedableRng};

pub struct Rng(rand_pcg::Pcg64Mcg);

/// 2^64 over the golden ratio: consecutive keys land far apart.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijection of u64
/// that scatters neighbouring inputs over the whole range.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of the streams of component `stream` of the model of `seed`,
/// from which `Rng::for_particle` derives each particle's stream (the GPU
/// generator, `state::generate`, is given the key and does the rest).
pub fn stream_key(seed: u64, stream: u64) -> u64 {
    mix(mix(seed ^ GOLDEN).wrapping_add(stream.wrapping_add(1).wrapping_mul(GOLDEN)))
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(rand_pcg::Pcg64Mcg::seed_from_u64(seed))
    }

    /// The stream of particle `index` of component `stream` of the model
    /// of `seed`: a PCG started from a 128-bit state hashed from the three
    /// (distinct keys give unrelated streams; the period, 2^126, leaves
    /// no room for two of them to overlap over the few dozen numbers a
    /// particle draws).
    pub fn for_particle(seed: u64, stream: u64, index: u64) -> Self {
        let key = stream_key(seed, stream);
        let lo = mix(key.wrapping_add(index.wrapping_add(1).wrapping_mul(GOLDEN)));
        let hi = mix(lo ^ key.rotate_left(32));
        Self(rand_pcg::Pcg64Mcg::new(((hi as u128) << 64) | lo as u128))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn particle_streams_differ_by_seed_component_and_index() {
        let first = |seed, stream, index| Rng::for_particle(seed, stream, index).uniform();
        let base = first(7, 0, 0);
        assert_eq!(base, first(7, 0, 0));
        for other in [
            first(8, 0, 0),
            first(7, 1, 0),
            first(7, 0, 1),
            first(6, 1, 0),
        ] {
            assert_ne!(base, other);
        }
        // Neighbouring indices give uncorrelated first draws: their mean
        // is 1/2 within its standard error (1/√12n).
        let n = 100_000;
        let mean = (0..n).map(|i| first(1, 2, i)).sum::<f64>() / n as f64;
        assert!(
            (mean - 0.5).abs() < 4.0 / (12.0 * n as f64).sqrt(),
            "{mean}"
        );
    }
}
