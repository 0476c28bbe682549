//! Multi-component spherical galaxies in equilibrium: each component's
//! particles follow its own density, with isotropic velocities from its
//! Eddington distribution function in the potential of all components
//! (plus any non-spherical mass, such as a disk, in the spherical
//! approximation). Point masses (black holes) sit at the centre at rest.

use super::eddington::{log_grid, DistributionFunction, Potential, Tabulated, GRID_NODES};
use super::profile::{Profile, Shape};
use super::realization::{split_count, PhasePoint, Realization, Slots};
use super::sampler::{Cpu, Place, Realize, Shared};
use crate::error::{Error, Result};
use crate::state::rng::Rng;
use crate::state::share::Share;
use std::future::Future;

/// What a component is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A spherical density profile sampled with its distribution function.
    Profile(Profile),
    /// One particle at the centre (a black hole).
    PointMass,
}

/// One component: its name (the tag's name), total mass and kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Component {
    pub name: &'static str,
    pub mass: f64,
    pub kind: Kind,
}

impl Component {
    pub fn profile(name: &'static str, mass: f64, profile: Profile) -> Self {
        Self {
            name,
            mass,
            kind: Kind::Profile(profile),
        }
    }

    /// `shape` with the smooth truncation at `r_t` (`Profile::truncated`).
    pub fn truncated(name: &'static str, mass: f64, shape: Shape, r_t: f64) -> Self {
        Self::profile(name, mass, Profile::truncated(shape, r_t))
    }

    pub fn black_hole(mass: f64) -> Self {
        Self {
            name: "black hole",
            mass,
            kind: Kind::PointMass,
        }
    }
}

/// A spherical galaxy of any components (G = 1; the units are the
/// caller's).
#[derive(Clone, Debug, PartialEq)]
pub struct SphericalGalaxy {
    pub components: Vec<Component>,
}

/// Mass outside the spherical components, as an enclosed mass M(<r) with
/// its smallest and largest length scales (for the grid).
pub struct ExtraMass<'a> {
    pub enclosed: &'a dyn Fn(f64) -> f64,
    pub scales: (f64, f64),
}

/// The tabulated potential of a model and the distribution function of
/// each of its spherical components.
pub struct Equilibrium {
    pub potential: Potential,
    /// Per component: its table and f(E) (none for point masses).
    tables: Vec<Option<(Tabulated, DistributionFunction)>>,
    /// Mass of the spherical components alone (no extra mass) at the grid's
    /// nodes.
    spheroid_enclosed: Vec<f64>,
}

/// The grid starts this far inside the smallest scale length, where the
/// mass inside is negligible for any sample size a browser or test uses.
const INNER_FACTOR: f64 = 1e-4;

impl Equilibrium {
    pub fn new(components: &[Component], extra: Option<ExtraMass>) -> Self {
        let profiles = components.iter().filter_map(|c| match c.kind {
            Kind::Profile(p) => Some(p),
            Kind::PointMass => None,
        });
        let (mut lo, mut hi) = extra.as_ref().map_or((f64::MAX, 0.0), |e| e.scales);
        for p in profiles {
            lo = lo.min(p.shape.scale());
            hi = hi.max(p.outer_radius());
        }
        let r = log_grid(INNER_FACTOR * lo, hi, GRID_NODES);
        let tables: Vec<Option<Tabulated>> = components
            .iter()
            .map(|c| match c.kind {
                Kind::Profile(p) => Some(Tabulated::new(p, c.mass, &r)),
                Kind::PointMass => None,
            })
            .collect();
        let spheroid_enclosed: Vec<f64> = (0..r.len())
            .map(|i| {
                components
                    .iter()
                    .zip(&tables)
                    .map(|(c, t)| t.as_ref().map_or(c.mass, |t| t.enclosed[i]))
                    .sum()
            })
            .collect();
        let total = spheroid_enclosed
            .iter()
            .zip(&r)
            .map(|(m, x)| m + extra.as_ref().map_or(0.0, |e| (e.enclosed)(*x)))
            .collect();
        let potential = Potential::new(r, total);
        let tables = tables
            .into_iter()
            .map(|t| {
                t.map(|t| {
                    let df = DistributionFunction::eddington(&t, &potential);
                    (t, df)
                })
            })
            .collect();
        Self {
            potential,
            tables,
            spheroid_enclosed,
        }
    }

    /// Mass of the spherical components within r (for circular speeds of
    /// a disk, which adds its own exact contribution).
    pub fn spheroid_mass_at(&self, r: f64) -> f64 {
        let grid = &self.potential.r;
        let last = grid.len() - 1;
        if r >= grid[last] {
            return self.spheroid_enclosed[last];
        }
        if r <= grid[0] {
            return self.spheroid_enclosed[0];
        }
        let k = grid.partition_point(|x| *x <= r);
        let t = (r / grid[k - 1]).ln() / (grid[k] / grid[k - 1]).ln();
        self.spheroid_enclosed[k - 1]
            + t * (self.spheroid_enclosed[k] - self.spheroid_enclosed[k - 1])
    }

    /// The table and distribution function of component `k`.
    pub fn component(&self, k: usize) -> Option<&(Tabulated, DistributionFunction)> {
        self.tables[k].as_ref()
    }

    /// Appends `count` particles of component `k` (mass `mass` each,
    /// tagged `tag`), drawn by `sampler`: a point mass at the origin at
    /// rest, or positions from the component's density and speeds from its
    /// f(E), both isotropic, particle i from its own stream of `seed` (the
    /// component's index is the stream's key).
    pub async fn sample(
        &self,
        k: usize,
        count: usize,
        (mass, tag): (f64, u32),
        seed: u64,
        (out, sampler): (&mut Realization, &impl SpheroidSampler),
    ) -> Result<()> {
        let slots = out.add_slots(count, (mass, tag));
        if self.tables[k].is_none() || count == 0 {
            return Ok(());
        }
        sampler.spheroid(self, k, seed, slots).await
    }

    /// One particle of spheroid component `k` (which has a profile) from
    /// its stream: the radius inside which a uniform fraction of its mass
    /// lies, a speed from f(E) there, two isotropic directions.
    pub fn draw(&self, k: usize, rng: &mut Rng) -> PhasePoint {
        let (table, df) = self.tables[k].as_ref().expect("a component with a profile");
        let r = table.radius_of_fraction(rng.uniform_open());
        let v = df.sample_speed(self.potential.psi_at(r), rng);
        let pos = rng.unit_vector().map(|x| x * r);
        let vel = rng.unit_vector().map(|x| x * v);
        (pos, vel)
    }
}

/// Draws the particles of a spheroid component (`sampler`'s module says
/// where).
pub trait SpheroidSampler {
    /// Spheroid component `k` of `eq`, particle i from stream
    /// `Rng::for_particle(seed, k, i)`: radii from its density, speeds
    /// from its f(E), both isotropic (`Equilibrium::draw`).
    fn spheroid(
        &self,
        eq: &Equilibrium,
        k: usize,
        seed: u64,
        out: Slots<'_>,
    ) -> impl Future<Output = Result<()>>;

    /// The share of the model this process samples; `None`: all of it.
    fn share(&self) -> Option<&Share<'_>> {
        None
    }

    /// Whether what it samples stays in its GPU's arrays (a resident
    /// `Realization`).
    fn resident(&self) -> bool {
        false
    }
}

impl<S: SpheroidSampler> SpheroidSampler for Shared<'_, S> {
    async fn spheroid(&self, eq: &Equilibrium, k: usize, seed: u64, out: Slots<'_>) -> Result<()> {
        self.sampler.spheroid(eq, k, seed, out).await
    }

    fn share(&self) -> Option<&Share<'_>> {
        Some(&self.share)
    }
}

impl SpheroidSampler for Cpu {
    async fn spheroid(&self, eq: &Equilibrium, k: usize, seed: u64, out: Slots<'_>) -> Result<()> {
        Cpu::fill((seed, k as u64), out, |rng| eq.draw(k, rng));
        Ok(())
    }
}

/// Particles per component, given as (mass, is a point mass), for `n`
/// in all, and the mass of each particle of the extended components: one
/// particle per point mass, the rest in proportion to mass and all of one
/// mass (their total over their number, so a component's realised mass is
/// within one particle of its own).
pub fn equal_mass_counts(components: &[(f64, bool)], n: usize) -> Result<(Vec<usize>, f64)> {
    let points = components.iter().filter(|c| c.1).count();
    if n < components.len() {
        return Err(Error::InvalidParameter(format!(
            "N = {n} is fewer than the model's {} components",
            components.len()
        )));
    }
    let weights: Vec<f64> = components
        .iter()
        .map(|&(m, point)| if point { 0.0 } else { m })
        .collect();
    let mut counts = split_count(n - points, &weights);
    for (count, c) in counts.iter_mut().zip(components) {
        if c.1 {
            *count = 1;
        }
    }
    let mass = weights.iter().sum::<f64>() / (n - points).max(1) as f64;
    Ok((counts, mass))
}

/// (mass, is a point mass) of each component, for `equal_mass_counts`.
pub fn masses(components: &[Component]) -> Vec<(f64, bool)> {
    components
        .iter()
        .map(|c| (c.mass, c.kind == Kind::PointMass))
        .collect()
}

/// Samples every component of `components` (of `eq`) with `counts`
/// particles, extended ones of mass `mass` each, into `out`, from the
/// streams of `seed`, with `sampler`.
pub async fn sample_components(
    eq: &Equilibrium,
    components: &[Component],
    (counts, mass): (Vec<usize>, f64),
    seed: u64,
    (out, sampler): (&mut Realization, &impl SpheroidSampler),
) -> Result<()> {
    for (k, (c, count)) in components.iter().zip(counts).enumerate() {
        let tag = out.add_component(c.name);
        let m = if c.kind == Kind::PointMass {
            c.mass
        } else {
            mass
        };
        eq.sample(k, count, (m, tag), seed, (out, sampler)).await?;
    }
    Ok(())
}

/// Checks what the tables assume: positive finite masses and lengths.
pub fn validate(components: &[Component]) -> Result<()> {
    let bad = |what: String| Err(Error::InvalidParameter(what));
    for c in components {
        if !(c.mass.is_finite() && c.mass > 0.0) {
            return bad(format!("{}: mass must be positive, got {}", c.name, c.mass));
        }
        if let Kind::Profile(p) = c.kind {
            let lengths = [p.shape.scale(), p.r_t, p.r_d];
            if !lengths.iter().all(|x| x.is_finite() && *x > 0.0) {
                return bad(format!("{}: lengths must be positive, got {p:?}", c.name));
            }
            if let Shape::Sersic { n, .. } = p.shape {
                // The Prugniel–Simien fit holds for 0.6 < n < 10.
                if !(0.6..=10.0).contains(&n) {
                    return bad(format!("{}: Sérsic index {n} outside [0.6, 10]", c.name));
                }
            }
        }
    }
    Ok(())
}

impl SphericalGalaxy {
    /// The galaxy's tables (its potential and every component's f(E)),
    /// once its components are checked: what `realize_from` samples, and
    /// what several copies of one galaxy share (`MinorMergers`).
    pub fn equilibrium(&self) -> Result<Equilibrium> {
        validate(&self.components)?;
        if self.components.iter().all(|c| c.kind == Kind::PointMass) {
            return Err(Error::InvalidParameter(
                "a spherical galaxy needs an extended component".into(),
            ));
        }
        Ok(Equilibrium::new(&self.components, None))
    }

    /// `realize_at` from this galaxy's `equilibrium`.
    pub async fn realize_from(
        &self,
        eq: &Equilibrium,
        Place { origin, n }: Place,
        seed: u64,
        sampler: &impl SpheroidSampler,
    ) -> Result<Realization> {
        let split = equal_mass_counts(&masses(&self.components), n)?;
        let mut out =
            Realization::starting_at(origin, sampler.share()).resident_if(sampler.resident());
        sample_components(eq, &self.components, split, seed, (&mut out, sampler)).await?;
        out.center_among(sampler.share().map(|s| s.gather));
        Ok(out)
    }

    pub fn total_mass(&self) -> f64 {
        self.components.iter().map(|c| c.mass).sum()
    }
}

impl<S: SpheroidSampler> Realize<S> for SphericalGalaxy {
    /// `n` particles (one mass in the extended components), in
    /// the centre-of-mass frame, deterministic for `seed`.
    async fn realize_at(&self, at: Place, seed: u64, sampler: &S) -> Result<Realization> {
        let eq = self.equilibrium()?;
        self.realize_from(&eq, at, seed, sampler).await
    }
}
