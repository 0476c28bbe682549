//! Conserved quantities of a particle state, summed in f64 on the CPU from
//! what the GPU computed (velocities, positions and potentials), or summed
//! on the GPU where the state need not come to the host (`GpuDiagnostics`,
//! drives `shaders/diagnostics.wgsl`).

use crate::error::Result;
use crate::gpu::buffers::{empty_storage_buffer, read_vec, uniform_buffer};
use crate::gpu::context::dispatch_size;
use crate::gpu::ds::compose_with_ds;
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::layout::{AccPot, DiagnosticsParams, PosMass, Velocity};
use crate::gpu::GpuContext;
use crate::state::parallel::{map_chunks, SUM_CHUNK};
use crate::state::particles::GpuParticles;

/// Energies (N-body units) and momenta of one state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Diagnostics {
    pub kinetic: f64,
    /// ½ Σ m_i φ_i with the softened potential of the solver in use.
    pub potential: f64,
    pub total: f64,
    pub momentum: [f64; 3],
    pub angular_momentum: [f64; 3],
    pub center_of_mass: [f64; 3],
    /// −2K/W: 1 in virial equilibrium.
    pub virial_ratio: f64,
}

impl Diagnostics {
    /// Of a state read back from the GPU (f32 records, summed in f64).
    pub fn of(pos_mass: &[PosMass], vel: &[Velocity], acc_pot: &[AccPot]) -> Self {
        Self::of_order(pos_mass, vel, acc_pot, 0..pos_mass.len())
    }

    /// `of` summed over the particles in `order` (the sum's rounding
    /// follows the order).
    pub fn of_order(
        pos_mass: &[PosMass],
        vel: &[Velocity],
        acc_pot: &[AccPot],
        order: impl IntoIterator<Item = usize>,
    ) -> Self {
        let mut s = DiagnosticsSum::default();
        for k in order {
            s.add_record(&pos_mass[k], &vel[k], &acc_pot[k]);
        }
        s.finish()
    }

    /// Of any state given particle by particle as (mass, position,
    /// velocity, potential), in f64.
    pub fn sum(particles: impl IntoIterator<Item = (f64, [f64; 3], [f64; 3], f64)>) -> Self {
        let mut s = DiagnosticsSum::default();
        for (m, x, u, pot) in particles {
            s.add(m, x, u, pot);
        }
        s.finish()
    }
}

/// `Diagnostics::sum` a particle at a time, for a state that comes in
/// pieces (a read-back's, summed in its order as it arrives).
#[derive(Default)]
pub struct DiagnosticsSum {
    d: Diagnostics,
    mass: f64,
}

impl DiagnosticsSum {
    pub fn add(&mut self, m: f64, x: [f64; 3], u: [f64; 3], pot: f64) {
        let d = &mut self.d;
        self.mass += m;
        d.kinetic += 0.5 * m * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        d.potential += 0.5 * m * pot;
        for k in 0..3 {
            d.momentum[k] += m * u[k];
            d.center_of_mass[k] += m * x[k];
        }
        d.angular_momentum[0] += m * (x[1] * u[2] - x[2] * u[1]);
        d.angular_momentum[1] += m * (x[2] * u[0] - x[0] * u[2]);
        d.angular_momentum[2] += m * (x[0] * u[1] - x[1] * u[0]);
    }

    /// Adds the sums of `other` (particles summed apart) to these.
    pub fn merge(&mut self, other: &DiagnosticsSum) {
        let (d, o) = (&mut self.d, &other.d);
        self.mass += other.mass;
        d.kinetic += o.kinetic;
        d.potential += o.potential;
        for k in 0..3 {
            d.momentum[k] += o.momentum[k];
            d.center_of_mass[k] += o.center_of_mass[k];
            d.angular_momentum[k] += o.angular_momentum[k];
        }
    }

    /// The sums as numbers (mass, K, W, p, Σ m x, L): what ranks of a
    /// parallel run send each other to `merge`.
    pub fn to_lanes(&self) -> [f64; 15] {
        let d = &self.d;
        let mut out = [0.0; 15];
        out[0] = self.mass;
        out[1] = d.kinetic;
        out[2] = d.potential;
        out[3..6].copy_from_slice(&d.momentum);
        out[6..9].copy_from_slice(&d.center_of_mass);
        out[9..12].copy_from_slice(&d.angular_momentum);
        out
    }

    /// The sums `to_lanes` gave.
    pub fn from_lanes(v: &[f64; 15]) -> Self {
        let mut s = Self {
            mass: v[0],
            ..Default::default()
        };
        s.d.kinetic = v[1];
        s.d.potential = v[2];
        s.d.momentum.copy_from_slice(&v[3..6]);
        s.d.center_of_mass.copy_from_slice(&v[6..9]);
        s.d.angular_momentum.copy_from_slice(&v[9..12]);
        s
    }

    /// `add_record` of every record, in fixed chunks on every core whose
    /// sums are added in order (the same bits on any number of cores).
    pub fn add_records(&mut self, pos_mass: &[PosMass], vel: &[Velocity], acc_pot: &[AccPot]) {
        for part in map_chunks(pos_mass.len(), |ks| {
            let mut part = DiagnosticsSum::default();
            for k in ks {
                part.add_record(&pos_mass[k], &vel[k], &acc_pot[k]);
            }
            part
        }) {
            self.merge(&part);
        }
    }

    /// `add` of a read-back record.
    pub fn add_record(&mut self, p: &PosMass, v: &Velocity, a: &AccPot) {
        self.add(
            p.mass as f64,
            p.pos.map(f64::from),
            v.vel.map(f64::from),
            a.pot as f64,
        );
    }

    pub fn finish(self) -> Diagnostics {
        let mut d = self.d;
        if self.mass > 0.0 {
            d.center_of_mass = d.center_of_mass.map(|c| c / self.mass);
        }
        d.total = d.kinetic + d.potential;
        d.virial_ratio = if d.potential != 0.0 {
            -2.0 * d.kinetic / d.potential
        } else {
            0.0
        };
        d
    }
}

impl Diagnostics {
    /// |E − E₀| / |E₀| relative to an earlier state.
    pub fn energy_error(&self, initial: &Diagnostics) -> f64 {
        ((self.total - initial.total) / initial.total).abs()
    }
}

const DIAGNOSTICS_WGSL: &str = include_str!("../../shaders/diagnostics.wgsl");

/// The composed WGSL of the diagnostics' sums.
pub fn wgsl() -> String {
    compose_with_ds(&[("SUM_CHUNK", SUM_CHUNK as u32)], DIAGNOSTICS_WGSL)
}

/// The binding contract of `shaders/diagnostics.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("acc_pot", Binding::StorageRead),
    ("sums", Binding::StorageReadWrite),
];

/// Lanes of a chunk's sums: `DiagnosticsSum::to_lanes`'s first twelve.
const LANES: usize = 12;

/// The sums of `DiagnosticsSum` over a state on the GPU: each particle's
/// terms in f32, summed in double-single per chunk of `SUM_CHUNK`
/// particles in the state's order, the chunks' sums added in f64 in order
/// on the host. Only those sums come back (a few hundred kilobytes at
/// 10^8 particles, where the state is gigabytes). They agree with the
/// host's f64 sums of the same state to f32's rounding of each particle's
/// terms, which averages out over the particles: of order 3e-8/√N of the
/// energy (4.7e-10 at 6,000 particles, `tests/energy_report.rs`; 1.4e-11
/// at 2^27 − 1, BENCHMARKS.md), far below any energy error a run reports.
pub struct GpuDiagnostics {
    kernel: Kernel,
}

impl GpuDiagnostics {
    pub fn new(device: &wgpu::Device) -> Self {
        Self {
            kernel: Kernel::new(device, "diagnostics", &wgsl(), "chunk_sums", BINDINGS),
        }
    }

    /// The sums over the particles of `state` with their forces and
    /// potentials.
    pub async fn sum(&self, ctx: &GpuContext, state: &GpuParticles) -> Result<DiagnosticsSum> {
        let device = &ctx.device;
        let chunks = (state.n as usize).div_ceil(SUM_CHUNK);
        let params = DiagnosticsParams {
            n: state.n,
            one: 1.0,
            ..Default::default()
        };
        let params = uniform_buffer(device, "diagnostics params", &params);
        let lanes = (2 * LANES * chunks.max(1) * 4) as u64;
        let sums = empty_storage_buffer(device, "diagnostics sums", lanes);
        let bind = self.kernel.bind(
            device,
            &[&params, &state.pos_mass, &state.vel, &state.acc_pot, &sums],
        );
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            let groups = dispatch_size(device, chunks as u32, 1);
            self.kernel.dispatch(&mut pass, &bind, groups);
        }
        ctx.queue.submit(Some(encoder.finish()));
        let ds: Vec<f32> = read_vec(device, &ctx.queue, &sums).await?;
        let mut total = DiagnosticsSum::default();
        for chunk in ds.chunks_exact(2 * LANES).take(chunks) {
            let mut lanes = [0.0; 15];
            for (a, lane) in lanes.iter_mut().take(LANES).enumerate() {
                *lane = chunk[a] as f64 + chunk[a + LANES] as f64;
            }
            total.merge(&DiagnosticsSum::from_lanes(&lanes));
        }
        Ok(total)
    }
}
