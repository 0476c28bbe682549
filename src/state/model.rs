//! The initial-condition models behind the one `--model` choice.

use super::few_body;
use super::galaxy::sampler::{now, Cpu, Shared};
use super::galaxy::{catalog, Realization};
use super::galaxy::{Realize, Sampler};
use super::generate::{self, Sampled};
use super::parallel::SUM_CHUNK;
use super::particles::Particles;
use super::plummer::plummer;
use super::share::{frame_of, ChunkSums, Share};
use crate::error::{Error, Result};
use crate::gpu::layout::{PosMass, Velocity};
use crate::gpu::GpuContext;

/// An initial-condition model; a model added here is available to the CLI
/// and the web app at once. Parameters of the galaxy models:
/// `state::galaxy::catalog`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Plummer sphere (Aarseth, Hénon & Wielen 1974), N-body units.
    Plummer,
    /// Cold collapse: the Plummer sphere's positions with every velocity
    /// zero (virial ratio 0, E = W = -1/2); it collapses and relaxes
    /// violently within a few time units.
    ColdCollapse,
    /// Hernquist (1990) sphere, M = a = 1, velocities from its f(E).
    Hernquist,
    /// Truncated NFW halo, M = r_s = 1, c = 10.
    Nfw,
    /// Sérsic n = 4 elliptical with a central black hole, M = R_e = 1.
    Sersic,
    /// Exponential disk in an NFW halo and a Hernquist bulge (N-body
    /// units, disk mass and scale length 1).
    DiskGalaxy,
    /// The Gordon Bell paper's Milky Way in Bonsai units.
    MilkyWay,
    /// The Bonsai paper's merger of two galaxies with black holes (1:3,
    /// pericentre 10 kpc by default), in Bonsai units.
    GalaxyMerger,
    /// Galaxy Crash (after Chris Mihos's applet): two Milky-Way-like
    /// disks with live haloes on a parabolic orbit, with their mass ratio,
    /// pericentre, disks' inclinations and halo mass set, in Bonsai units.
    GalaxyCrash,
    /// A primary (NFW halo + Sérsic n = 3 bulge) with 1:10 satellites
    /// (thesis ch. 5), N-body units.
    MinorMergers,
    /// A star with the Sun's first N − 1 planets (AU, solar masses, G = 1:
    /// a year is 2π), for Kepler's laws.
    Planets,
    /// The three-body figure-eight choreography, G = m = 1.
    FigureEight,
}

/// The galaxy models' settable parameters (each model reads those that
/// apply to it; the rest of their parameters are the documented defaults
/// of `state::galaxy::catalog`). The settings table
/// (`run::params::RUN_PARAMS`) gives their keys, ranges and defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelParams {
    /// Toomre Q of the disk at 2.5 scale lengths (disk-galaxy, milky-way,
    /// galaxy-crash).
    pub toomre_q: f64,
    /// Mass of the primary over the secondary's (galaxy-merger,
    /// galaxy-crash).
    pub mass_ratio: f64,
    /// Pericentre of the merger's orbit, kpc (galaxy-merger, galaxy-crash).
    pub pericenter: f64,
    /// Number of satellites (minor-mergers).
    pub satellites: u32,
    /// Inclination of the primary's disk spin to the orbit's angular
    /// momentum, degrees: 0 prograde in the orbit's plane, 180 retrograde
    /// (galaxy-crash).
    pub inclination1: f64,
    /// The secondary's, likewise (galaxy-crash).
    pub inclination2: f64,
    /// Each galaxy's dark-halo mass over its stellar (disk + bulge) mass;
    /// 0: no halo (galaxy-crash).
    pub halo_mass: f64,
}

impl Default for ModelParams {
    fn default() -> Self {
        Self {
            toomre_q: 1.2,
            mass_ratio: 3.0,
            pericenter: 10.0,
            satellites: 8,
            inclination1: 0.0,
            inclination2: 60.0,
            halo_mass: catalog::CRASH_HALO,
        }
    }
}

/// A model's particles with the component of each: `tags[k]` indexes
/// `components` (e.g. "halo", "disk", "bulge", "black hole").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tagged {
    pub particles: Particles,
    pub tags: Vec<u32>,
    pub components: Vec<String>,
}

/// Names of the particle kinds files carry (`Snapshot::types`), by
/// Gadget-2's numbering; webgrav's galaxies put their black holes in 5.
pub const KINDS: [&str; 6] = ["gas", "halo", "disk", "bulge", "stars", "boundary"];

impl Tagged {
    /// The particles `range` of the model, with their tags.
    pub fn cut(self, range: std::ops::Range<usize>) -> Self {
        let p = &self.particles;
        Self {
            particles: Particles {
                pos_mass: p.pos_mass[range.clone()].to_vec(),
                vel: p.vel[range.clone()].to_vec(),
                id: p.id[range.clone()].to_vec(),
            },
            tags: self.tags[range].to_vec(),
            components: self.components,
        }
    }

    /// The kind of each particle in Gadget-2's numbering, which snapshot
    /// files carry (`Snapshot::types`): 1 halo, 2 disk, 3 bulge, 4 stars
    /// (any other stellar component, satellites' included), 5 black hole.
    /// `None` for one-component models (their files stay as before).
    pub fn types(&self) -> Option<Vec<u8>> {
        if self.components.len() < 2 {
            return None;
        }
        Some(kinds_of_components(&self.tags, &self.components))
    }
}

/// The kind (Gadget-2's numbering) of each particle whose component is
/// `components[tags[k]]`: 1 halo, 2 disk, 3 bulge, 5 black hole, 4 any
/// other stellar component (a file's own kind names map to themselves).
pub fn kinds_of_components(tags: &[u32], components: &[String]) -> Vec<u8> {
    let kind_of = |name: &str| -> u8 {
        if let Some(k) = KINDS.iter().position(|&k| k == name) {
            k as u8
        } else if name.ends_with("halo") {
            1
        } else if name.ends_with("disk") {
            2
        } else if name.ends_with("bulge") {
            3
        } else if name.ends_with("black hole") {
            5
        } else {
            4
        }
    };
    let kinds: Vec<u8> = components.iter().map(|c| kind_of(c)).collect();
    tags.iter().map(|&t| kinds[t as usize]).collect()
}

impl From<Realization> for Tagged {
    fn from(r: Realization) -> Self {
        let (particles, tags, components) = r.into_particles();
        Self {
            particles,
            tags,
            components,
        }
    }
}

impl Model {
    pub const ALL: &'static [Model] = &[
        Model::Plummer,
        Model::ColdCollapse,
        Model::Hernquist,
        Model::Nfw,
        Model::Sersic,
        Model::DiskGalaxy,
        Model::MilkyWay,
        Model::GalaxyMerger,
        Model::GalaxyCrash,
        Model::MinorMergers,
        Model::Planets,
        Model::FigureEight,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Model::Plummer => "plummer",
            Model::ColdCollapse => "cold-collapse",
            Model::Hernquist => "hernquist",
            Model::Nfw => "nfw",
            Model::Sersic => "sersic",
            Model::DiskGalaxy => "disk-galaxy",
            Model::MilkyWay => "milky-way",
            Model::GalaxyMerger => "galaxy-merger",
            Model::GalaxyCrash => "galaxy-crash",
            Model::MinorMergers => "minor-mergers",
            Model::Planets => "planets",
            Model::FigureEight => "figure-eight",
        }
    }

    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|m| m.name() == name)
            .ok_or_else(|| Error::InvalidParameter(format!("unknown model '{name}'")))
    }

    /// Whether the GPU samples this model whole, so that it can stay
    /// there (`generate::plummer_on_gpu`): `Some(at_rest)` for the
    /// Plummer sphere and the cold collapse (at rest); `None` for the
    /// others, which the host places or makes.
    pub fn sampled_whole_on_gpu(self) -> Option<bool> {
        match self {
            Model::Plummer => Some(false),
            Model::ColdCollapse => Some(true),
            _ => None,
        }
    }

    /// `n` particles of this model, deterministic for `seed`.
    pub fn generate(self, n: usize, seed: u64) -> Result<Particles> {
        Ok(self.generate_tagged(n, seed)?.particles)
    }

    /// `n` particles of this model with the default parameters and their
    /// components, deterministic for `seed`.
    pub fn generate_tagged(self, n: usize, seed: u64) -> Result<Tagged> {
        self.generate_with(n, seed, &ModelParams::default())
    }

    /// `generate_with`, sampled on `ctx`'s GPU: the Plummer sphere and
    /// the cold collapse by `state::generate::plummer`, the galaxies'
    /// components by `generate::Gpu` (the few-body models have a handful
    /// of bodies and stay on the CPU). The CPU's model to f32 rounding, in
    /// a fraction of the time (the page has one core, the CLI's largest
    /// models 10^8 particles).
    pub async fn generate_on(
        self,
        ctx: &GpuContext,
        n: usize,
        seed: u64,
        params: &ModelParams,
    ) -> Result<Tagged> {
        // Refused before anything is sampled (N = 0 among them).
        ctx.check_particle_count(n as u64, std::mem::size_of::<PosMass>() as u64)?;
        match self.sampled_whole_on_gpu() {
            Some(at_rest) => Ok(one_component(
                generate::plummer(ctx, n, seed, at_rest).await?,
            )),
            None => {
                self.generate_by(n, seed, params, &generate::Gpu::new(ctx))
                    .await
            }
        }
    }

    /// `share`'s part of `generate_on`'s model: a rank of a run on
    /// several GPUs samples only its own particles of it, and they are
    /// the particles one GPU's model has there, to the bit (ids: their
    /// indices in the whole model; `state::share`). The few-body models
    /// are made whole and cut.
    pub async fn generate_share_on(
        self,
        ctx: &GpuContext,
        n: usize,
        seed: u64,
        params: &ModelParams,
        share: Share<'_>,
    ) -> Result<Tagged> {
        if let Some(sampled) = self
            .sample_share_on_gpu(ctx, n, seed, share.clone())
            .await?
        {
            return Ok(one_component(sampled.read(ctx).await?));
        }
        if n == 0 {
            return Err(Error::InvalidParameter("N must be at least 1".into()));
        }
        share.check(n)?;
        let held = share.keep.len().max(1) as u64;
        ctx.check_particle_count(held, std::mem::size_of::<PosMass>() as u64)?;
        match self {
            Model::Planets | Model::FigureEight => {
                let whole = self.generate_with(n, seed, params)?;
                Ok(whole.cut(share.keep))
            }
            _ => {
                let sampler = generate::Gpu::new(ctx);
                let shared = Shared {
                    sampler: &sampler,
                    share,
                };
                self.generate_by(n, seed, params, &shared).await
            }
        }
    }

    /// `share`'s part of the model sampled on the GPU and left there, where
    /// the GPU samples it whole (`sampled_whole_on_gpu`): the particles
    /// `generate_share_on` reads back, so a rank of a run on several GPUs
    /// starts from them where they are (`cluster::FirstShare`); `None`
    /// for the other models.
    pub async fn sample_share_on_gpu(
        self,
        ctx: &GpuContext,
        n: usize,
        seed: u64,
        share: Share<'_>,
    ) -> Result<Option<Sampled>> {
        let Some(at_rest) = self.sampled_whole_on_gpu() else {
            return Ok(None);
        };
        if n == 0 {
            return Err(Error::InvalidParameter("N must be at least 1".into()));
        }
        share.check(n)?;
        let held = share.keep.len().max(1) as u64;
        ctx.check_particle_count(held, std::mem::size_of::<PosMass>() as u64)?;
        let chunks = share.keep.start / SUM_CHUNK..share.keep.end.div_ceil(SUM_CHUNK);
        let first = chunks.start;
        let part = generate::plummer_part(ctx, n, seed, at_rest, chunks).await?;
        // The Plummer sphere's sums are unweighted: its chunk's count is
        // its Σ m, and the frame divides by n, as the whole model's
        // (`plummer::centre_of_chunks`).
        let sums: Vec<ChunkSums> = (part.sums.iter().enumerate())
            .map(|(j, s)| {
                let c = first + j;
                let count = (n - c * SUM_CHUNK).min(SUM_CHUNK);
                [c as f64, count as f64, s[0], s[1], s[2], s[3], s[4], s[5]]
            })
            .collect();
        let frame = frame_of(share.gather.gather(&sums));
        Ok(Some(part.centred(ctx, frame)))
    }

    /// `n` particles of this model with parameters `params` and their
    /// components, deterministic for `seed`.
    pub fn generate_with(self, n: usize, seed: u64, params: &ModelParams) -> Result<Tagged> {
        now(self.generate_by(n, seed, params, &Cpu))
    }

    /// `generate_with`, the galaxies' particles drawn by `sampler`.
    async fn generate_by(
        self,
        n: usize,
        seed: u64,
        params: &ModelParams,
        sampler: &impl Sampler,
    ) -> Result<Tagged> {
        if n == 0 {
            return Err(Error::InvalidParameter("N must be at least 1".into()));
        }
        let one = one_component;
        Ok(match self {
            Model::Plummer => one(plummer(n, seed)),
            Model::ColdCollapse => one(cold_collapse(n, seed)),
            Model::Planets => {
                // Each body its own component, named.
                let (particles, components) = few_body::planets(n, seed)?;
                Tagged {
                    tags: (0..particles.len() as u32).collect(),
                    particles,
                    components,
                }
            }
            Model::FigureEight => one(few_body::figure_eight(n)?),
            _ => self
                .galaxy_by(n, seed, params, sampler)
                .await?
                .expect("every other model is a galaxy")
                .into(),
        })
    }

    /// The galaxy of this model drawn by `sampler`; `None` for the
    /// models that are not galaxies (the Plummer sphere, the cold
    /// collapse, the few-body ones).
    async fn galaxy_by(
        self,
        n: usize,
        seed: u64,
        params: &ModelParams,
        sampler: &impl Sampler,
    ) -> Result<Option<Realization>> {
        let p = params;
        let s = sampler;
        Ok(Some(match self {
            Model::Hernquist => catalog::hernquist().realize_with(n, seed, s).await?,
            Model::Nfw => catalog::nfw().realize_with(n, seed, s).await?,
            Model::Sersic => catalog::sersic().realize_with(n, seed, s).await?,
            Model::DiskGalaxy => {
                (catalog::disk_galaxy(p.toomre_q))
                    .realize_with(n, seed, s)
                    .await?
            }
            Model::MilkyWay => {
                (catalog::milky_way(p.toomre_q))
                    .realize_with(n, seed, s)
                    .await?
            }
            Model::GalaxyMerger => {
                (catalog::bonsai_merger(p.mass_ratio, p.pericenter))
                    .realize_with(n, seed, s)
                    .await?
            }
            Model::GalaxyCrash => {
                catalog::galaxy_crash(
                    p.mass_ratio,
                    p.pericenter,
                    (p.inclination1, p.inclination2),
                    p.halo_mass,
                    p.toomre_q,
                )?
                .realize_with(n, seed, s)
                .await?
            }
            Model::MinorMergers => {
                (catalog::minor_mergers(p.satellites as usize))
                    .realize_with(n, seed, s)
                    .await?
            }
            Model::Plummer | Model::ColdCollapse | Model::Planets | Model::FigureEight => {
                return Ok(None);
            }
        }))
    }

    /// This model, where it is a galaxy, sampled and placed on `ctx`'s
    /// GPU and left there (`generate::Gpu::resident`): its components are
    /// sampled in place in the model's arrays, and only each component's
    /// sums come back, from which the host places the galaxies and finds
    /// the centre of mass as `generate_on` does with every particle. The
    /// same model to f32 rounding. `None` for the other models.
    pub async fn galaxy_on_gpu(
        self,
        ctx: &GpuContext,
        n: usize,
        seed: u64,
        params: &ModelParams,
    ) -> Result<Option<GalaxyOnGpu>> {
        if !self.is_galaxy() {
            return Ok(None);
        }
        if n == 0 {
            return Err(Error::InvalidParameter("N must be at least 1".into()));
        }
        let sampler = generate::Gpu::resident(ctx, n)?;
        let galaxy = self
            .galaxy_by(n, seed, params, &sampler)
            .await?
            .expect("a galaxy");
        let placements = galaxy.resident.as_deref().unwrap_or_default();
        let mut totals = vec![(0.0, 0u64); galaxy.components.len()];
        for p in placements {
            totals[p.tag as usize].0 += p.mass * p.count as f64;
            totals[p.tag as usize].1 += p.count as u64;
        }
        let placed = sampler.place(placements)?;
        Ok(Some(GalaxyOnGpu {
            sampled: placed.sampled,
            tags: placed.tags,
            components: galaxy.components,
            totals,
        }))
    }

    /// Whether this model is a galaxy (`galaxy_by` draws it).
    pub fn is_galaxy(self) -> bool {
        !matches!(
            self,
            Model::Plummer | Model::ColdCollapse | Model::Planets | Model::FigureEight
        )
    }
}

/// A galaxy model on the GPU (`Model::galaxy_on_gpu`).
pub struct GalaxyOnGpu {
    pub sampled: Sampled,
    /// One u32 a particle: the index of its component in `components`.
    pub tags: wgpu::Buffer,
    pub components: Vec<String>,
    /// Mass and particle count of each component.
    pub totals: Vec<(f64, u64)>,
}

impl GalaxyOnGpu {
    /// Each particle's component, read back (4 bytes a particle).
    pub async fn read_tags(&self, ctx: &GpuContext) -> Result<Vec<u32>> {
        let mut tags: Vec<u32> =
            crate::gpu::buffers::read_vec(&ctx.device, &ctx.queue, &self.tags).await?;
        tags.truncate(self.sampled.count);
        Ok(tags)
    }
}

/// A model of one component, its stars.
fn one_component(particles: Particles) -> Tagged {
    Tagged {
        tags: vec![0; particles.len()],
        particles,
        components: vec!["stars".into()],
    }
}

/// The Plummer sphere of `seed` at rest: same positions, zero velocities
/// (the centre-of-mass frame is kept, since every velocity is zero).
fn cold_collapse(n: usize, seed: u64) -> Particles {
    let mut p = plummer(n, seed);
    p.vel.fill(Velocity::new([0.0; 3]));
    p
}
