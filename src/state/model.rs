//! The initial-condition models behind the one `--model` choice.

use super::particles::Particles;
use super::plummer::plummer;
use crate::error::{Error, Result};
use crate::gpu::layout::Velocity;

/// An initial-condition model; later models (disk galaxies, mergers) are
/// added here and become available to the CLI and the web app at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Plummer sphere (Aarseth, Hénon & Wielen 1974), N-body units.
    Plummer,
    /// Cold collapse: the Plummer sphere's positions with every velocity
    /// zero (virial ratio 0, E = W = -1/2); it collapses and relaxes
    /// violently within a few time units.
    ColdCollapse,
}

impl Model {
    pub const ALL: &'static [Model] = &[Model::Plummer, Model::ColdCollapse];

    pub fn name(self) -> &'static str {
        match self {
            Model::Plummer => "plummer",
            Model::ColdCollapse => "cold-collapse",
        }
    }

    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|m| m.name() == name)
            .ok_or_else(|| Error::InvalidParameter(format!("unknown model '{name}'")))
    }

    /// `n` particles of this model, deterministic for `seed`.
    pub fn generate(self, n: usize, seed: u64) -> Result<Particles> {
        if n == 0 {
            return Err(Error::InvalidParameter("N must be at least 1".into()));
        }
        Ok(match self {
            Model::Plummer => plummer(n, seed),
            Model::ColdCollapse => cold_collapse(n, seed),
        })
    }
}

/// The Plummer sphere of `seed` at rest: same positions, zero velocities
/// (the centre-of-mass frame is kept, since every velocity is zero).
fn cold_collapse(n: usize, seed: u64) -> Particles {
    let mut p = plummer(n, seed);
    p.vel.fill(Velocity::new([0.0; 3]));
    p
}
