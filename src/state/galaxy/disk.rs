//! Disk galaxies: an exponential disk with sech² layers in spherical
//! components (halo, bulge, black hole), with velocities by Hernquist's
//! (1993, ApJS 86, 389) moment method.
//!
//! Disk: Σ(R) = M/(2π R_d²) e^(−R/R_d), ρ(R, z) = Σ(R)/(2 z₀) sech²(z/z₀).
//! Velocities are Gaussian about the Jeans moments in the epicyclic
//! approximation:
//! - σ_R² ∝ Σ (so the scale height is constant), normalised so that
//!   Toomre's Q = σ_R κ / (3.36 Σ) takes the requested value at R_Q;
//! - σ_φ² = σ_R² κ²/(4Ω²) (epicyclic ratio);
//! - σ_z² = π Σ z₀ (the isothermal sheet of scale height z₀);
//! - v̄_φ² = v_c² + σ_R² (1 − κ²/(4Ω²) − 2R/R_d) (asymmetric drift for
//!   σ_R² ∝ Σ ∝ e^(−R/R_d); zero where this is negative, as Hernquist did).
//!
//! The circular speed and κ are those of the combined potential in the
//! midplane: the spherical components' M(<r)/r plus the razor-thin
//! exponential disk's exact v_c (Freeman 1970), so the disk's thickness
//! (z₀ ≪ R_d) is neglected there. The halo and bulge take their speeds
//! from Eddington's f(E) in the spherically averaged potential, where the
//! disk counts with its mass inside cylindrical radius r. GalactICS
//! (Kuijken & Dubinski 1995; Widrow & Dubinski 2005), which the papers
//! used, builds distribution functions of (E, L_z, E_z) for all components
//! in the self-consistent axisymmetric potential and so starts closer to
//! equilibrium (no transient in the first rotation); the moment method
//! is simpler, fast enough for a browser, and its disks settle within a
//! rotation to the same Q and structure.

use super::bessel::{i0e, i1e, k0e, k1e};
use super::realization::{PhasePoint, Realization, Slots};
use super::sampler::{Cpu, Place, Realize, Shared};
use super::spherical::{
    equal_mass_counts, masses, sample_components, validate, Component, Equilibrium, ExtraMass,
    SpheroidSampler,
};
use crate::error::{Error, Result};
use crate::state::rng::Rng;
use std::future::Future;

/// Toomre's constant for a stellar disk: Q = σ_R κ / (3.36 G Σ).
pub const TOOMRE_STELLAR: f64 = 3.36;

/// An exponential disk (lengths and masses in the model's units, G = 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Disk {
    pub mass: f64,
    /// Radial scale length R_d.
    pub scale_length: f64,
    /// sech² scale height z₀.
    pub scale_height: f64,
    /// Toomre Q at `q_radius`.
    pub toomre_q: f64,
    /// Where Q is set (2.5 R_d is customary: near the peak of the rotation
    /// curve and where the disk is most unstable).
    pub q_radius: f64,
    /// The disk is cut at this radius (10 R_d holds all but 5e-4 of it).
    pub max_radius: f64,
}

impl Disk {
    /// A disk of `mass`, scale length R_d and height z₀, with Q at 2.5 R_d
    /// and cut at 10 R_d.
    pub fn new(mass: f64, scale_length: f64, scale_height: f64, toomre_q: f64) -> Self {
        Self {
            mass,
            scale_length,
            scale_height,
            toomre_q,
            q_radius: 2.5 * scale_length,
            max_radius: 10.0 * scale_length,
        }
    }

    /// Σ(R).
    pub fn surface_density(&self, r: f64) -> f64 {
        let rd = self.scale_length;
        self.mass / (2.0 * std::f64::consts::PI * rd * rd) * (-r / rd).exp()
    }

    /// Mass within cylindrical radius R.
    pub fn enclosed(&self, r: f64) -> f64 {
        let x = r / self.scale_length;
        self.mass * (1.0 - (1.0 + x) * (-x).exp())
    }

    /// v_c² of the razor-thin exponential disk in its plane (Freeman 1970):
    /// 4πΣ₀R_d y² \[I₀K₀ − I₁K₁\](y), y = R/(2R_d).
    pub fn circular_speed2(&self, r: f64) -> f64 {
        let y = r / (2.0 * self.scale_length);
        if y <= 0.0 {
            return 0.0;
        }
        2.0 * self.mass / self.scale_length * y * y * (i0e(y) * k0e(y) - i1e(y) * k1e(y))
    }
}

/// Draws the particles of a disk (`sampler`'s module says where).
pub trait DiskSampler {
    /// The disk of `eq`, particle i from stream `Rng::for_particle(seed,
    /// stream, i)` of `stream` = (seed, stream) (`DiskEquilibrium::draw`).
    fn disk(
        &self,
        eq: &DiskEquilibrium,
        stream: (u64, u64),
        out: Slots<'_>,
    ) -> impl Future<Output = Result<()>>;
}

impl<S: DiskSampler> DiskSampler for Shared<'_, S> {
    async fn disk(&self, eq: &DiskEquilibrium, stream: (u64, u64), out: Slots<'_>) -> Result<()> {
        self.sampler.disk(eq, stream, out).await
    }
}

impl DiskSampler for Cpu {
    async fn disk(&self, eq: &DiskEquilibrium, stream: (u64, u64), out: Slots<'_>) -> Result<()> {
        Cpu::fill(stream, out, |rng| eq.draw(rng));
        Ok(())
    }
}

/// Draws every kind of component a galaxy has.
pub trait Sampler: SpheroidSampler + DiskSampler {}

impl<T: SpheroidSampler + DiskSampler> Sampler for T {}

/// A disk in spherical components, e.g. an NFW halo, a bulge and a black
/// hole; tags: the spheroid's components in order, then "disk".
#[derive(Clone, Debug, PartialEq)]
pub struct DiskGalaxy {
    pub disk: Disk,
    pub spheroid: Vec<Component>,
}

/// The Jeans moments of the disk at one radius.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskKinematics {
    /// Circular speed of the combined potential.
    pub circular_speed: f64,
    /// Epicyclic frequency κ.
    pub kappa: f64,
    pub sigma_r: f64,
    pub sigma_phi: f64,
    pub sigma_z: f64,
    /// Mean rotation speed.
    pub mean_vphi: f64,
}

/// A disk galaxy's tabulated potential and the disk's moments.
pub struct DiskEquilibrium {
    pub disk: Disk,
    pub spheroid: Equilibrium,
    /// σ_R at R = 0 (σ_R² ∝ Σ).
    sigma_r0: f64,
}

impl DiskEquilibrium {
    pub fn new(galaxy: &DiskGalaxy) -> Self {
        let disk = galaxy.disk;
        let enclosed = |r: f64| disk.enclosed(r);
        let spheroid = Equilibrium::new(
            &galaxy.spheroid,
            Some(ExtraMass {
                enclosed: &enclosed,
                scales: (disk.scale_height, disk.max_radius),
            }),
        );
        let mut eq = Self {
            disk,
            spheroid,
            sigma_r0: 0.0,
        };
        let rq = disk.q_radius;
        let sigma_q = disk.toomre_q * TOOMRE_STELLAR * disk.surface_density(rq) / eq.kappa(rq);
        eq.sigma_r0 = sigma_q * (rq / (2.0 * disk.scale_length)).exp();
        eq
    }

    /// v_c² in the midplane.
    pub fn circular_speed2(&self, r: f64) -> f64 {
        self.spheroid.spheroid_mass_at(r) / r + self.disk.circular_speed2(r)
    }

    /// κ² = (dv_c²/dR)/R + 2v_c²/R², with the derivative by central
    /// differences.
    pub fn kappa(&self, r: f64) -> f64 {
        let h = 1e-4 * r;
        let dv2 = (self.circular_speed2(r + h) - self.circular_speed2(r - h)) / (2.0 * h);
        (dv2 / r + 2.0 * self.circular_speed2(r) / (r * r))
            .max(0.0)
            .sqrt()
    }

    pub fn kinematics(&self, r: f64) -> DiskKinematics {
        let d = &self.disk;
        let vc2 = self.circular_speed2(r);
        let kappa = self.kappa(r);
        let omega2 = vc2 / (r * r);
        let ratio = kappa * kappa / (4.0 * omega2);
        let sigma_r = self.sigma_r0 * (-r / (2.0 * d.scale_length)).exp();
        let drift = sigma_r * sigma_r * (1.0 - ratio - 2.0 * r / d.scale_length);
        DiskKinematics {
            circular_speed: vc2.sqrt(),
            kappa,
            sigma_r,
            sigma_phi: sigma_r * ratio.sqrt(),
            sigma_z: (std::f64::consts::PI * d.surface_density(r) * d.scale_height).sqrt(),
            mean_vphi: (vc2 + drift).max(0.0).sqrt(),
        }
    }

    /// Appends `count` disk particles of mass `mass` each, rotating about
    /// +z, particle i from stream (`seed`, `stream`, i), drawn by
    /// `sampler`.
    pub async fn sample_disk(
        &self,
        count: usize,
        (mass, tag): (f64, u32),
        stream: (u64, u64),
        (out, sampler): (&mut Realization, &impl DiskSampler),
    ) -> Result<()> {
        let slots = out.add_slots(count, (mass, tag));
        if count == 0 {
            return Ok(());
        }
        sampler.disk(self, stream, slots).await
    }

    /// One disk particle from its stream: R from the exponential (cut at
    /// the disk's edge), z from sech², velocities Gaussian about the
    /// moments at R.
    pub fn draw(&self, rng: &mut Rng) -> PhasePoint {
        let d = &self.disk;
        // R e^(−R/R_d) is the sum of two exponential deviates.
        let r = loop {
            let r = -d.scale_length * (rng.uniform_open() * rng.uniform_open()).ln();
            if r <= d.max_radius {
                break r;
            }
        };
        let z = d.scale_height * (2.0 * rng.uniform_open() - 1.0).atanh();
        let phi = 2.0 * std::f64::consts::PI * rng.uniform();
        let k = self.kinematics(r);
        let v_r = k.sigma_r * rng.gaussian();
        let v_phi = k.mean_vphi + k.sigma_phi * rng.gaussian();
        let v_z = k.sigma_z * rng.gaussian();
        let (s, c) = phi.sin_cos();
        (
            [r * c, r * s, z],
            [v_r * c - v_phi * s, v_r * s + v_phi * c, v_z],
        )
    }
}

impl DiskGalaxy {
    pub fn total_mass(&self) -> f64 {
        self.disk.mass + self.spheroid.iter().map(|c| c.mass).sum::<f64>()
    }
}

impl<S: Sampler> Realize<S> for DiskGalaxy {
    /// `n` particles with equal masses in the disk and the extended
    /// spheroid components, in the centre-of-mass frame, deterministic for
    /// `seed`.
    async fn realize_at(&self, at: Place, seed: u64, sampler: &S) -> Result<Realization> {
        let Place { origin, n } = at;
        validate(&self.spheroid)?;
        let d = &self.disk;
        let lengths = [d.scale_length, d.scale_height, d.q_radius, d.max_radius];
        if !(d.mass > 0.0 && d.toomre_q > 0.0 && lengths.iter().all(|x| *x > 0.0)) {
            return Err(Error::InvalidParameter(format!(
                "the disk's mass, lengths and Q must be positive: {d:?}"
            )));
        }
        // The disk as one more extended component for the split.
        let mut parts = masses(&self.spheroid);
        parts.push((self.disk.mass, false));
        let (mut counts, mass) = equal_mass_counts(&parts, n)?;
        let n_disk = counts.pop().expect("the disk");
        let eq = DiskEquilibrium::new(self);
        let mut out =
            Realization::starting_at(origin, sampler.share()).resident_if(sampler.resident());
        let split = (counts, mass);
        sample_components(
            &eq.spheroid,
            &self.spheroid,
            split,
            seed,
            (&mut out, sampler),
        )
        .await?;
        // The disk's stream follows the spheroid components'.
        let tag = out.add_component("disk");
        let stream = (seed, self.spheroid.len() as u64);
        eq.sample_disk(n_disk, (mass, tag), stream, (&mut out, sampler))
            .await?;
        out.center_among(sampler.share().map(|s| s.gather));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freeman_rotation_curve_peaks_at_2_2_scale_lengths() {
        // The exponential disk's v_c peaks at R ≈ 2.15 R_d with
        // v_c ≈ 0.622 √(GM/R_d) (Binney & Tremaine 2008, Fig. 2.17).
        let d = Disk::new(1.0, 1.0, 0.1, 1.0);
        let (mut best_r, mut best) = (0.0, 0.0);
        for i in 1..2000 {
            let r = i as f64 * 0.005;
            let v = d.circular_speed2(r).sqrt();
            if v > best {
                (best_r, best) = (r, v);
            }
        }
        assert!((best_r - 2.15).abs() < 0.03, "{best_r}");
        assert!((best - 0.622).abs() < 3e-3, "{best}");
    }
}
