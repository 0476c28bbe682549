//! Galaxy models: spherical components in equilibrium by Eddington's
//! inversion in the total potential (Hernquist, NFW, Plummer, Sérsic,
//! black holes), disk galaxies by Hernquist's (1993) moment method, the
//! Milky Way of the Gordon Bell paper, two-galaxy mergers and minor
//! mergers. Generators build a `Realization` (f64, a component tag per
//! particle); `catalog` holds the named models and their parameters.

pub mod bessel;
pub mod catalog;
pub mod disk;
pub mod eddington;
pub mod merger;
pub mod profile;
pub mod realization;
pub mod sampler;
pub mod spherical;
pub mod units;

pub use disk::{Disk, DiskEquilibrium, DiskGalaxy, DiskSampler, Sampler};
pub use merger::{Galaxy, Merger, MinorMergers, Orbit, Spin};
pub use profile::{Profile, Shape};
pub use realization::Realization;
pub use sampler::{Cpu, Realize, RealizeOnCpu};
pub use spherical::{Component, Equilibrium, SphericalGalaxy, SpheroidSampler};
