//! The potentials behind the energies a run reports, summed the precise
//! way whatever the solver's own precision: pairwise in f64 on the host for
//! small N, in double-single on the GPU (drives `shaders/energy.wgsl`,
//! ~1e-14 relative per particle) above. The solvers' own potentials are f32
//! (direct, tree, approximated besides) or double-single with f32
//! per-interaction arithmetic (Hermite), good to 1e-7..1e-9 in E: too
//! coarse to report a Hermite run's energy error of ~1e-10.

use crate::error::Result;
use crate::gpu::buffers::{read_vec, storage_buffer};
use crate::gpu::context::dispatch_size;
use crate::gpu::ds::{compose_with_ds, split};
use crate::gpu::kernel::{Binding, Kernel, Slot, DYNAMIC_SLOT};
use crate::gpu::layout::EnergyParams;
use crate::gpu::GpuContext;
use crate::state::stats::map_indices;
use crate::state::Diagnostics;
use std::ops::Range;

const ENERGY_WGSL: &str = include_str!("../../shaders/energy.wgsl");

/// Sinks per workgroup (= sources per staged tile).
const ET: u32 = 128;

/// Largest N whose potentials are summed on the host (N² f64 pair terms in
/// threads: a few ms at 4096); above, on the GPU.
pub const HOST_MAX: usize = 4096;

/// Dynamic uniform slots of the potential kernel's parameters (one per
/// dispatch), rewritten for each batch of dispatches.
const PARAMS_SLOTS: u32 = 256;

/// Interactions of the double-single kernel that cost as much as one of
/// the f32 force kernels (to size its submissions).
const DS_COST: f64 = 8.0;

/// How the potential energy of a report was summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PotentialSum {
    /// Pairwise in f64 on the host.
    #[default]
    HostF64,
    /// Pairwise in double-single on the GPU (`shaders/energy.wgsl`).
    GpuDoubleSingle,
    /// The solver's own f32 potential (leapfrog runs above
    /// `run::EXACT_ENERGY_MAX` particles, where an N² sum per report would
    /// cost more than the run).
    Solver,
}

/// Which potential a run's energy reports sum (`webgrav run
/// --potential-sum`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PotentialRule {
    /// The precise sum where it costs no more than a few of the run's
    /// steps (`run::EXACT_ENERGY_MAX`), else the solver's own.
    #[default]
    Auto,
    /// Always the solver's own potentials (reports nobody reads).
    Solver,
    /// Always the precise sum, whatever N: an N² sum per report, for
    /// comparing runs whose solvers' own potentials differ (a tree on one
    /// GPU and on several, two opening angles).
    Exact,
}

impl PotentialRule {
    /// Most particles whose potential is summed the precise way, for a
    /// run whose `auto` bound is `auto_max` (a tree's `HOST_MAX`, the
    /// direct solver's `run::EXACT_ENERGY_MAX`).
    pub fn precise_up_to(self, auto_max: usize) -> usize {
        match self {
            PotentialRule::Solver => 0,
            PotentialRule::Exact => usize::MAX,
            PotentialRule::Auto => auto_max,
        }
    }
}

impl PotentialSum {
    /// The name in logs.
    pub fn name(self) -> &'static str {
        match self {
            PotentialSum::HostF64 => "host-f64",
            PotentialSum::GpuDoubleSingle => "gpu-double-single",
            PotentialSum::Solver => "solver-f32",
        }
    }
}

/// The composed WGSL of the potential kernel.
pub fn wgsl() -> String {
    compose_with_ds(&[("ET", ET)], ENERGY_WGSL)
}

/// The binding contract of `shaders/energy.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::UniformDynamic),
    ("src_hi", Binding::StorageRead),
    ("src_lo", Binding::StorageRead),
    ("pot", Binding::StorageReadWrite),
];

/// Softened potential φ_i = −Σ_{j≠i} m_j / √(r² + ε²) of every particle,
/// in f64 on the host (coincident pairs without softening are skipped).
pub fn potentials_f64(mass: &[f64], pos: &[[f64; 3]], eps: f64) -> Vec<f64> {
    potentials_f64_of(mass, pos, eps, 0..pos.len())
}

/// `potentials_f64` of the particles `sinks` only (all still sources).
pub fn potentials_f64_of(
    mass: &[f64],
    pos: &[[f64; 3]],
    eps: f64,
    sinks: Range<usize>,
) -> Vec<f64> {
    let eps2 = eps * eps;
    let sinks: Vec<usize> = sinks.collect();
    map_indices(&sinks, |i| {
        let mut phi = 0.0;
        for (j, (m, x)) in mass.iter().zip(pos).enumerate() {
            let d = [x[0] - pos[i][0], x[1] - pos[i][1], x[2] - pos[i][2]];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
            if j != i && r2 > 0.0 {
                phi -= m / r2.sqrt();
            }
        }
        phi
    })
}

/// The double-single potential kernel (built at its first use).
pub struct PotentialKernel {
    kernel: Kernel,
}

impl PotentialKernel {
    pub fn new(device: &wgpu::Device) -> Self {
        Self {
            kernel: Kernel::new(device, "exact potentials", &wgsl(), "potentials", BINDINGS),
        }
    }

    /// The potentials of `potentials_f64`, summed on the GPU in
    /// double-single, in submissions of at most the context's budget.
    pub async fn potentials(
        &self,
        ctx: &GpuContext,
        mass: &[f64],
        pos: &[[f64; 3]],
        eps: f64,
    ) -> Result<Vec<f64>> {
        self.potentials_of(ctx, mass, pos, eps, 0..pos.len()).await
    }

    /// `potentials` of the particles `sinks` only (all still sources: a
    /// rank's own particles among every rank's).
    pub async fn potentials_of(
        &self,
        ctx: &GpuContext,
        mass: &[f64],
        pos: &[[f64; 3]],
        eps: f64,
        sinks: Range<usize>,
    ) -> Result<Vec<f64>> {
        let n = pos.len();
        assert!(sinks.end <= n, "sinks {sinks:?} beyond {n} particles");
        ctx.check_particle_count(n as u64, 32)?;
        if sinks.is_empty() {
            return Ok(Vec::new());
        }
        let (device, queue) = (&ctx.device, &ctx.queue);
        let (mut hi, mut lo) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (x, &m) in pos.iter().zip(mass) {
            let [(xh, xl), (yh, yl), (zh, zl), (mh, ml)] = [x[0], x[1], x[2], m].map(split);
            hi.push([xh, yh, zh, mh]);
            lo.push([xl, yl, zl, ml]);
        }
        let src_hi = storage_buffer(device, "energy sources hi", &hi);
        let src_lo = storage_buffer(device, "energy sources lo", &lo);
        let pot = storage_buffer(device, "energy potentials", &vec![[0f32; 2]; sinks.len()]);
        // Every sink in each dispatch (a GPU full of them), against a run of
        // `span` sources, the runs' sums added up in the sinks' potentials:
        // a dispatch holds at most the submission budget. (Split by sinks
        // instead, a dispatch at 2^20 held 93 workgroups and an H200 took
        // 27 s.) The span depends on N only, so a run of sinks gets the
        // bits the whole would.
        // (Never more tiles than the sources fill: a few particles on a
        // fast GPU would ask for more than a u32 holds.)
        let budget = ctx.interactions_per_submission / DS_COST;
        let tiles = (n as u32).div_ceil(ET);
        let span = ((budget / n as f64 / ET as f64).floor() as u32).clamp(1, tiles) * ET;
        let runs = (n as u32).div_ceil(span);
        let (eps2_hi, eps2_lo) = split(eps * eps);
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("energy params"),
            size: PARAMS_SLOTS as u64 * DYNAMIC_SLOT,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind = self.kernel.bind(device, &[&params, &src_hi, &src_lo, &pot]);
        let groups = dispatch_size(device, sinks.len() as u32, ET);
        for first_run in (0..runs).step_by(PARAMS_SLOTS as usize) {
            let batch = PARAMS_SLOTS.min(runs - first_run);
            let mut bytes = vec![0u8; (batch as u64 * DYNAMIC_SLOT) as usize];
            for k in 0..batch {
                let p = EnergyParams {
                    n: n as u32,
                    src_first: (first_run + k) * span,
                    src_count: span,
                    sink_first: sinks.start as u32,
                    sinks: sinks.len() as u32,
                    eps2_hi,
                    eps2_lo,
                    one: 1.0,
                };
                let at = (k as u64 * DYNAMIC_SLOT) as usize;
                bytes[at..at + std::mem::size_of::<EnergyParams>()]
                    .copy_from_slice(bytemuck::bytes_of(&p));
            }
            // (Written before the next submission, after the last one's
            // dispatches read the slots.)
            queue.write_buffer(&params, 0, &bytes);
            for k in 0..batch {
                let mut encoder = device.create_command_encoder(&Default::default());
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    self.kernel.dispatch_in_slot(&mut pass, &bind, k, groups);
                }
                queue.submit(Some(encoder.finish()));
            }
        }
        let out: Vec<[f32; 2]> = read_vec(device, queue, &pot).await?;
        Ok(out.iter().map(|p| p[0] as f64 + p[1] as f64).collect())
    }
}

/// Energies and momenta of a state given as (mass, position, velocity) in
/// f64, its potential summed by `precise_potentials`.
pub async fn state_diagnostics(
    ctx: &GpuContext,
    kernel: &mut Option<PotentialKernel>,
    state: &[(f64, [f64; 3], [f64; 3])],
    eps: f64,
) -> Result<(Diagnostics, PotentialSum)> {
    let mass: Vec<f64> = state.iter().map(|s| s.0).collect();
    let pos: Vec<[f64; 3]> = state.iter().map(|s| s.1).collect();
    let (pot, sum) = precise_potentials(ctx, kernel, &mass, &pos, eps).await?;
    let d = Diagnostics::sum(state.iter().zip(&pot).map(|(&(m, x, v), &p)| (m, x, v, p)));
    Ok((d, sum))
}

/// Potentials the precise way for N (see the module docs), with how they
/// were summed; the GPU kernel is built at its first use and kept.
pub async fn precise_potentials(
    ctx: &GpuContext,
    kernel: &mut Option<PotentialKernel>,
    mass: &[f64],
    pos: &[[f64; 3]],
    eps: f64,
) -> Result<(Vec<f64>, PotentialSum)> {
    precise_potentials_of(ctx, kernel, mass, pos, eps, 0..pos.len()).await
}

/// `precise_potentials` of the particles `sinks` only (all still sources),
/// the way chosen by the number of sources.
pub async fn precise_potentials_of(
    ctx: &GpuContext,
    kernel: &mut Option<PotentialKernel>,
    mass: &[f64],
    pos: &[[f64; 3]],
    eps: f64,
    sinks: Range<usize>,
) -> Result<(Vec<f64>, PotentialSum)> {
    if pos.len() <= HOST_MAX {
        let pot = potentials_f64_of(mass, pos, eps, sinks);
        return Ok((pot, PotentialSum::HostF64));
    }
    let k = kernel.get_or_insert_with(|| PotentialKernel::new(&ctx.device));
    Ok((
        k.potentials_of(ctx, mass, pos, eps, sinks).await?,
        PotentialSum::GpuDoubleSingle,
    ))
}
