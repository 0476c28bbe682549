//! Galaxy encounters: two galaxies on a Kepler orbit, and a primary with
//! satellites on random bound orbits (minor mergers). Each galaxy is
//! sampled in equilibrium on its own; the orbit treats the galaxies as
//! point masses of their total masses (the usual approximation: overlap
//! of the haloes at the start makes the true orbit decay a little
//! faster). Everything ends in the centre-of-mass frame.

use super::disk::{DiskGalaxy, Sampler};
use super::realization::{rotation, split_count, Realization};
use super::sampler::{Place, Realize};
use super::spherical::SphericalGalaxy;
use crate::error::{Error, Result};
use crate::state::rng::Rng;

/// Any galaxy model.
#[derive(Clone, Debug, PartialEq)]
pub enum Galaxy {
    Spherical(SphericalGalaxy),
    Disk(DiskGalaxy),
}

impl Galaxy {
    pub fn total_mass(&self) -> f64 {
        match self {
            Galaxy::Spherical(g) => g.total_mass(),
            Galaxy::Disk(g) => g.total_mass(),
        }
    }
}

impl<S: Sampler> Realize<S> for Galaxy {
    async fn realize_at(&self, at: Place, seed: u64, sampler: &S) -> Result<Realization> {
        match self {
            Galaxy::Spherical(g) => g.realize_at(at, seed, sampler).await,
            Galaxy::Disk(g) => g.realize_at(at, seed, sampler).await,
        }
    }
}

/// A two-body orbit in the xy plane, angular momentum along +z.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Orbit {
    /// Pericentre distance.
    pub pericenter: f64,
    /// 1: parabolic; below 1 bound, above 1 hyperbolic.
    pub eccentricity: f64,
    /// Separation at the start, before pericentre.
    pub separation: f64,
}

impl Orbit {
    /// Position and velocity of the second body relative to the first,
    /// for total mass `mass` (G = 1), on the way in to pericentre:
    /// r = p/(1 + e cos ν), v_r = √(M/p) e sin ν, v_t = √(M/p)(1 + e cos ν)
    /// with p = r_p (1 + e).
    pub fn relative_state(&self, mass: f64) -> Result<([f64; 3], [f64; 3])> {
        let (rp, e, d) = (self.pericenter, self.eccentricity, self.separation);
        let p = rp * (1.0 + e);
        let cos_nu = if e > 0.0 { (p / d - 1.0) / e } else { 1.0 };
        if !(rp > 0.0 && e >= 0.0 && d > 0.0 && (-1.0..=1.0).contains(&cos_nu)) {
            return Err(Error::InvalidParameter(format!(
                "no orbit with pericentre {rp} and eccentricity {e} passes separation {d}"
            )));
        }
        if e == 0.0 && (d - rp).abs() > 1e-9 * rp {
            return Err(Error::InvalidParameter(format!(
                "a circular orbit of radius {rp} has no separation {d}"
            )));
        }
        let nu = -cos_nu.acos();
        let (s, c) = nu.sin_cos();
        let h = (mass / p).sqrt();
        let (vr, vt) = (h * e * s, h * (1.0 + e * c));
        Ok(([d * c, d * s, 0.0], [vr * c - vt * s, vr * s + vt * c, 0.0]))
    }

    /// Time from the start to pericentre for total mass `mass` (G = 1),
    /// by Kepler's equation: Barker's for the parabola,
    /// t = ½ √(p³/M) (D + D³/3) with D = tan(ν/2); E − e sin E on an
    /// ellipse, e sinh F − F on a hyperbola (0 on a circle).
    pub fn time_to_pericenter(&self, mass: f64) -> Result<f64> {
        // Checks the orbit as `relative_state` does.
        self.relative_state(mass)?;
        let (rp, e, d) = (self.pericenter, self.eccentricity, self.separation);
        Ok(if e == 0.0 {
            0.0
        } else if e == 1.0 {
            let p = 2.0 * rp;
            let tan_half = (2.0 * d / p - 1.0).max(0.0).sqrt();
            0.5 * (p * p * p / mass).sqrt() * (tan_half + tan_half.powi(3) / 3.0)
        } else if e < 1.0 {
            let a = rp / (1.0 - e);
            let big_e = ((1.0 - d / a) / e).clamp(-1.0, 1.0).acos();
            (a * a * a / mass).sqrt() * (big_e - e * big_e.sin())
        } else {
            let a = rp / (e - 1.0);
            let big_f = ((1.0 + d / a) / e).max(1.0).acosh();
            (a * a * a / mass).sqrt() * (e * big_f.sinh() - big_f)
        })
    }
}

/// Spin orientation of a galaxy: its z axis tilted by `inclination`
/// about x, then turned by `azimuth` about z (radians).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spin {
    pub inclination: f64,
    pub azimuth: f64,
}

/// Two galaxies on a Kepler orbit.
#[derive(Clone, Debug, PartialEq)]
pub struct Merger {
    pub primary: Galaxy,
    pub secondary: Galaxy,
    pub orbit: Orbit,
    pub primary_spin: Spin,
    pub secondary_spin: Spin,
    /// Fraction of the particles that the primary gets (the Bonsai paper:
    /// one half, each galaxy 10⁵ dark and 2×10⁴ star particles, so the
    /// secondary's particles are lighter by the mass ratio).
    pub primary_share: f64,
}

impl<S: Sampler> Realize<S> for Merger {
    /// `n` particles: tags of the primary ("primary halo", ...), then
    /// the secondary's ("secondary halo", ...).
    async fn realize_at(&self, at: Place, seed: u64, sampler: &S) -> Result<Realization> {
        let Place { origin, n } = at;
        let (m1, m2) = (self.primary.total_mass(), self.secondary.total_mass());
        let (rel_x, rel_v) = self.orbit.relative_state(m1 + m2)?;
        let counts = split_count(n, &[self.primary_share, 1.0 - self.primary_share]);
        let mut out =
            Realization::starting_at(origin, sampler.share()).resident_if(sampler.resident());
        let parts = [
            (
                &self.primary,
                self.primary_spin,
                -m2 / (m1 + m2),
                "primary ",
            ),
            (
                &self.secondary,
                self.secondary_spin,
                m1 / (m1 + m2),
                "secondary ",
            ),
        ];
        for (k, ((galaxy, spin, f, prefix), count)) in parts.into_iter().zip(counts).enumerate() {
            let at = Place {
                origin: origin + out.span.count,
                n: count,
            };
            let mut g = galaxy
                .realize_at(at, seed.wrapping_add(k as u64), sampler)
                .await?;
            g.rotate(&rotation(spin.inclination, spin.azimuth));
            g.shift(rel_x.map(|x| f * x), rel_v.map(|v| f * v));
            out.append(g, prefix);
        }
        out.center_among(sampler.share().map(|s| s.gather));
        Ok(out)
    }
}

/// A primary galaxy with `count` satellites, each a copy of `satellite`
/// at `mass_ratio` of the primary's mass, on random bound orbits: start
/// positions isotropic at radii uniform in `radii`, velocities isotropic
/// with speeds a uniform fraction in `speed_fraction` of the circular
/// speed √(M/r) of the primary's total mass, so they plunge on orbits
/// of many pericentres and arrive at different times.
#[derive(Clone, Debug)]
pub struct MinorMergers {
    pub primary: Galaxy,
    /// A satellite's model at the primary's mass (scaled by `mass_ratio`:
    /// masses by it, lengths by its cube root).
    pub satellite: fn(f64) -> SphericalGalaxy,
    pub count: usize,
    pub mass_ratio: f64,
    pub radii: (f64, f64),
    pub speed_fraction: (f64, f64),
}

impl<S: Sampler> Realize<S> for MinorMergers {
    /// `n` particles of equal mass across all galaxies; tags of the
    /// primary, then "satellite k halo", ... for each satellite.
    async fn realize_at(&self, at: Place, seed: u64, sampler: &S) -> Result<Realization> {
        let Place { origin, n } = at;
        let m_primary = self.primary.total_mass();
        let m_sat = self.mass_ratio * m_primary;
        let mut weights = vec![m_primary];
        weights.extend(std::iter::repeat_n(m_sat, self.count));
        let counts = split_count(n, &weights);
        let primary = Place {
            origin,
            n: counts[0],
        };
        let mut out = self.primary.realize_at(primary, seed, sampler).await?;
        let mut rng = Rng::new(seed ^ 0x5a7e_1117e5);
        // The satellites are one galaxy: its tables are made once.
        let sat = (self.satellite)(m_sat);
        let sat_eq = sat.equilibrium()?;
        for (k, &count) in counts[1..].iter().enumerate() {
            let at = Place {
                origin: origin + out.span.count,
                n: count,
            };
            let mut g = sat
                .realize_from(&sat_eq, at, seed.wrapping_add(1 + k as u64), sampler)
                .await?;
            let r = self.radii.0 + (self.radii.1 - self.radii.0) * rng.uniform();
            let f = self.speed_fraction.0
                + (self.speed_fraction.1 - self.speed_fraction.0) * rng.uniform();
            let v = f * (m_primary / r).sqrt();
            let x = rng.unit_vector().map(|c| c * r);
            let u = rng.unit_vector().map(|c| c * v);
            g.shift(x, u);
            out.append(g, &format!("satellite {} ", k + 1));
        }
        out.center_among(sampler.share().map(|s| s.gather));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orbit_has_the_requested_pericentre_and_energy() {
        for (e, d) in [(1.0, 50.0), (0.6, 20.0), (1.5, 40.0)] {
            let orbit = Orbit {
                pericenter: 10.0,
                eccentricity: e,
                separation: d,
            };
            let (x, v) = orbit.relative_state(3.0).unwrap();
            let r = (x[0] * x[0] + x[1] * x[1]).sqrt();
            let h = x[0] * v[1] - x[1] * v[0];
            let v2 = v[0] * v[0] + v[1] * v[1];
            let energy = 0.5 * v2 - 3.0 / r;
            // Pericentre from h and E: r_p = p/(1 + e), p = h²/M,
            // e² = 1 + 2Eh²/M².
            let ecc = (1.0 + 2.0 * energy * h * h / 9.0).max(0.0).sqrt();
            let rp = h * h / 3.0 / (1.0 + ecc);
            assert!((r - d).abs() < 1e-12);
            assert!((ecc - e).abs() < 1e-9, "e = {ecc}");
            assert!((rp - 10.0).abs() < 1e-9, "r_p = {rp}");
            // On the way in.
            assert!(x[0] * v[0] + x[1] * v[1] < 0.0);
        }
        let bad = Orbit {
            pericenter: 10.0,
            eccentricity: 0.5,
            separation: 5.0,
        };
        assert!(bad.relative_state(1.0).is_err());
        assert!(bad.time_to_pericenter(1.0).is_err());
    }

    #[test]
    fn time_to_pericenter_is_keplers() {
        // The relative orbit integrated (RK4, 2e5 steps) until the radial
        // velocity turns positive: the pericentre passage.
        for (e, d) in [(1.0, 50.0), (0.6, 20.0), (1.5, 40.0), (1.0, 10.5)] {
            let (m, rp) = (3.0, 10.0);
            let orbit = Orbit {
                pericenter: rp,
                eccentricity: e,
                separation: d,
            };
            let expected = orbit.time_to_pericenter(m).unwrap();
            let (x, v) = orbit.relative_state(m).unwrap();
            let mut y = [x[0], x[1], v[0], v[1]];
            let f = |y: [f64; 4]| {
                let r3 = (y[0] * y[0] + y[1] * y[1]).powf(1.5);
                [y[2], y[3], -m * y[0] / r3, -m * y[1] / r3]
            };
            let steps = 200_000;
            let h = 1.5 * expected / steps as f64;
            let mut t = 0.0;
            loop {
                let k1 = f(y);
                let k2 = f(std::array::from_fn(|i| y[i] + 0.5 * h * k1[i]));
                let k3 = f(std::array::from_fn(|i| y[i] + 0.5 * h * k2[i]));
                let k4 = f(std::array::from_fn(|i| y[i] + h * k3[i]));
                let next: [f64; 4] = std::array::from_fn(|i| {
                    y[i] + h / 6.0 * (k1[i] + 2.0 * (k2[i] + k3[i]) + k4[i])
                });
                let radial = |y: [f64; 4]| y[0] * y[2] + y[1] * y[3];
                if radial(next) >= 0.0 {
                    // Linear in the radial velocity within the step.
                    t += h * radial(y) / (radial(y) - radial(next));
                    break;
                }
                (y, t) = (next, t + h);
            }
            println!("e = {e}, d = {d}: {t:.6} integrated, {expected:.6} Kepler");
            assert!((t / expected - 1.0).abs() < 1e-4, "e = {e}, d = {d}");
        }
        let circle = Orbit {
            pericenter: 5.0,
            eccentricity: 0.0,
            separation: 5.0,
        };
        assert_eq!(circle.time_to_pericenter(1.0).unwrap(), 0.0);
    }
}
