//! How accurate a solver's forces are: a direct-sum reference (the f64
//! sum on the CPU for a sample of particles, or the GPU double-single sum
//! for every particle, spot-checked against the f64 sum) and the error
//! percentiles of forces against it (Bonsai's figure 4.8 statistics).
//! What `webgrav forces --compare` prints and Python's
//! `Simulation.forces(compare=...)` returns.

use crate::direct::reference::{self, ForceF64};
#[cfg(not(target_arch = "wasm32"))]
use crate::error::{Error, Result};
use crate::gpu::layout::AccPot;
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::GpuContext;
#[cfg(not(target_arch = "wasm32"))]
use crate::hermite::ds_direct_forces;
use crate::state::stats::{sample_indices, ErrorStats};
use crate::state::Particles;

/// The direct sum forces are compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareWith {
    /// The f64 direct sum on the CPU, for a sample of particles.
    Direct,
    /// The double-single direct sum on the GPU, for every particle.
    Ds,
}

impl CompareWith {
    pub const ALL: &'static [CompareWith] = &[CompareWith::Direct, CompareWith::Ds];

    pub fn name(self) -> &'static str {
        match self {
            CompareWith::Direct => "direct",
            CompareWith::Ds => "ds",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }
}

/// The reference forces of the particles `sinks` (input indices).
#[derive(Clone, Debug)]
pub struct Reference {
    /// "direct-f64" or "direct-ds-gpu".
    pub kind: &'static str,
    pub sinks: Vec<usize>,
    pub forces: Vec<ForceF64>,
    /// DS only: the largest relative acceleration and potential difference
    /// to the f64 sum, and on how many particles.
    pub check: Option<(usize, f64, f64)>,
    pub seconds: f64,
}

/// The error distribution of forces against a reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Relative acceleration errors |a − a_ref| / |a_ref|.
    pub acc: ErrorStats,
    /// Relative potential errors.
    pub pot: ErrorStats,
    /// Particles compared.
    pub compared: usize,
}

/// Largest relative difference of the double-single reference to the f64
/// sum on the sampled particles before the reference is refused.
pub const DS_CHECK_LIMIT: f64 = 1e-5;

/// The f64 direct-sum forces of `sample` particles of `p` (0: all),
/// chosen by `seed`, with softening `eps`: the reference of
/// `CompareWith::Direct`, and of the page's accuracy panel.
pub fn direct_reference(p: &Particles, eps: f64, sample: usize, seed: u64) -> Reference {
    let sinks = sample_indices(p.len(), sample, seed);
    Reference {
        kind: "direct-f64",
        forces: reference::forces_on(&p.pos_mass, &sinks, eps),
        sinks,
        check: None,
        seconds: 0.0,
    }
}

/// The reference forces of `p` with softening `eps`; `sample` particles
/// (0: all), chosen by `seed`, get the f64 sum.
#[cfg(not(target_arch = "wasm32"))]
pub async fn reference_forces(
    ctx: &GpuContext,
    p: &Particles,
    kind: CompareWith,
    eps: f64,
    sample: usize,
    seed: u64,
) -> Result<Reference> {
    let n = p.len();
    let sample = sample_indices(n, sample, seed);
    let t0 = std::time::Instant::now();
    Ok(match kind {
        CompareWith::Direct => Reference {
            seconds: t0.elapsed().as_secs_f64(),
            ..direct_reference(p, eps, sample.len(), seed)
        },
        CompareWith::Ds => {
            let forces: Vec<ForceF64> = ds_direct_forces(ctx, &p.pos_mass, eps)
                .await?
                .iter()
                .map(|f| ForceF64 {
                    acc: f.acc,
                    pot: f.pot,
                })
                .collect();
            let seconds = t0.elapsed().as_secs_f64();
            let f64_sum = reference::forces_on(&p.pos_mass, &sample, eps);
            let rel = |x: &[f64], y: &[f64]| {
                let d: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
                let r: f64 = y.iter().map(|b| b * b).sum();
                if r > 0.0 {
                    (d / r).sqrt()
                } else {
                    d.sqrt()
                }
            };
            let (mut acc_max, mut pot_max) = (0.0f64, 0.0f64);
            for (&i, f) in sample.iter().zip(&f64_sum) {
                acc_max = acc_max.max(rel(&forces[i].acc, &f.acc));
                pot_max = pot_max.max(rel(&[forces[i].pot], &[f.pot]));
            }
            // Double-single agrees with f64 to ~1e-7; a device that gets it
            // wrong (software Vulkan at N >= 2^18 on the CI machines) must
            // not become the yardstick of an accuracy table.
            if !(acc_max <= DS_CHECK_LIMIT && pot_max <= DS_CHECK_LIMIT) {
                return Err(Error::AdapterInsufficient {
                    adapter: ctx.adapter_info.name.clone(),
                    reason: format!(
                        "its double-single reference differs from the f64 sum by {acc_max:.2e} \
                         (acceleration) and {pot_max:.2e} (potential) on {} sampled particles, \
                         more than {DS_CHECK_LIMIT:e}, at N = {n}; use --compare direct",
                        sample.len()
                    ),
                });
            }
            Reference {
                kind: "direct-ds-gpu",
                sinks: (0..n).collect(),
                forces,
                check: Some((sample.len(), acc_max, pot_max)),
                seconds,
            }
        }
    })
}

impl Reference {
    /// The error statistics of `computed` (all particles, input order).
    pub fn compare(&self, computed: &[AccPot]) -> Comparison {
        let picked: Vec<AccPot> = self.sinks.iter().map(|&i| computed[i]).collect();
        Comparison {
            acc: ErrorStats::of(&reference::acc_errors(&picked, &self.forces)),
            pot: ErrorStats::of(&reference::pot_errors(&picked, &self.forces)),
            compared: self.sinks.len(),
        }
    }
}
