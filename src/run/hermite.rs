//! A Hermite run behind the run interface: the block-step integrator
//! (`hermite::HermiteSimulation`, f64 state on the host, forces on the
//! GPU) and a copy of its state in the renderer's layout. The integrator
//! keeps its own clock from 0 (block steps need a start that is a multiple
//! of every step); the run's time is `offset` plus that clock.

use super::params::RunParams;
use super::SolverKind;
use crate::error::Result;
use crate::gpu::layout::AccPot;
use crate::gpu::GpuContext;
use crate::hermite::{HermiteConfig, HermiteOrder, HermiteSimulation};
use crate::state::few_body::Sample;
use crate::state::{GpuParticles, Particles};

/// The integrator settings of Hermite run parameters.
pub fn hermite_config(p: &RunParams) -> HermiteConfig {
    let order = match p.solver {
        SolverKind::Hermite6 => HermiteOrder::Six,
        _ => HermiteOrder::Four,
    };
    HermiteConfig {
        dt_max: p.dt_max,
        criterion: p.criterion,
        ..HermiteConfig::new(order, p.precision, p.eta, p.eps as f64)
    }
}

pub struct HermiteEngine {
    pub sim: HermiteSimulation,
    /// Positions, velocities and potentials for the renderer (the id
    /// buffer is the identity: the order never changes).
    pub display: GpuParticles,
    /// Run time of the integrator's t = 0.
    pub offset: f64,
    /// The integrator time `advance` aims at.
    pub target: f64,
    params: RunParams,
    /// The bodies' states after each block step since they were last
    /// taken (`take_samples`), while `sampling` (few-body runs whose
    /// front end asked): what the orbit measures follow, at the block
    /// steps' own times, however many a frame takes.
    samples: Vec<Sample>,
    pub sampling: bool,
}

impl HermiteEngine {
    /// The integrator of `particles` at run time `time` (computes the
    /// first forces, hence async); `particles` valid
    /// (`Particles::validate`, as `Run::from_particles` checks them).
    pub async fn new(
        ctx: &GpuContext,
        particles: &Particles,
        time: f64,
        params: RunParams,
    ) -> Result<Self> {
        let display = GpuParticles::upload_validated(ctx, particles)?;
        let sim = HermiteSimulation::new(ctx, particles, hermite_config(&params), 0.0).await?;
        Ok(Self {
            sim,
            display,
            offset: time,
            target: 0.0,
            params,
            samples: Vec::new(),
            sampling: false,
        })
    }

    /// The integrator of a checkpoint's state.
    pub fn restore(
        ctx: &GpuContext,
        sim: HermiteSimulation,
        offset: f64,
        target: f64,
        params: RunParams,
    ) -> Result<Self> {
        let (particles, _) = sim.particles();
        let engine = Self {
            display: GpuParticles::upload(ctx, &particles)?,
            sim,
            offset,
            target,
            params,
            samples: Vec::new(),
            sampling: false,
        };
        engine.update_display(ctx);
        Ok(engine)
    }

    pub fn params(&self) -> &RunParams {
        &self.params
    }

    pub fn time(&self) -> f64 {
        self.offset + self.sim.time
    }

    /// Moves the target `steps × dt` past the last target (or the state,
    /// if it is ahead): `advance` then takes block steps up to it.
    pub fn queue(&mut self, steps: u32) {
        self.target = self.target.max(self.sim.time) + steps as f64 * self.params.dt;
    }

    /// Whether `advance` has block steps to take.
    pub fn behind(&self) -> bool {
        self.sim.next_time() <= self.target
    }

    /// Block steps up to the target, then the display copy.
    pub async fn advance(&mut self, ctx: &GpuContext) -> Result<()> {
        self.advance_while(ctx, || true).await.map(|_| ())
    }

    /// Block steps up to the target while `go` says so, then the display
    /// copy; whether the target was reached.
    pub async fn advance_while(
        &mut self,
        ctx: &GpuContext,
        mut go: impl FnMut() -> bool,
    ) -> Result<bool> {
        let mut reached = true;
        while self.sim.next_time() <= self.target {
            if !go() {
                reached = false;
                break;
            }
            self.sim.step().await?;
            if self.sampling {
                self.samples.push(self.sim.sample(self.offset));
            }
        }
        self.update_display(ctx);
        Ok(reached)
    }

    /// Block steps until run time `t_end` while `go` says so.
    pub async fn advance_to(
        &mut self,
        ctx: &GpuContext,
        t_end: f64,
        go: impl FnMut() -> bool,
    ) -> Result<bool> {
        self.target = self.target.max(t_end - self.offset);
        self.advance_while(ctx, go).await
    }

    /// The states after each block step since the last call (few-body
    /// runs; empty otherwise).
    pub fn take_samples(&mut self) -> Vec<Sample> {
        std::mem::take(&mut self.samples)
    }

    /// Changes η and the precision in place (the next block steps use
    /// them); `false` when the order, ε or dt_max change (a new
    /// integrator: the forces and steps depend on them).
    pub fn retune(&mut self, params: RunParams) -> bool {
        if params.solver != self.params.solver {
            return false;
        }
        let (old, new) = (hermite_config(&self.params), hermite_config(&params));
        if (old.order, old.eps, old.dt_max) != (new.order, new.eps, new.dt_max) {
            return false;
        }
        self.sim.set_accuracy(new.eta, new.criterion, new.precision);
        self.params = params;
        true
    }

    /// Writes the predicted state into the display buffers.
    fn update_display(&self, ctx: &GpuContext) {
        let (p, _) = self.sim.particles();
        let q = &ctx.queue;
        q.write_buffer(&self.display.pos_mass, 0, bytemuck::cast_slice(&p.pos_mass));
        q.write_buffer(&self.display.vel, 0, bytemuck::cast_slice(&p.vel));
        q.write_buffer(
            &self.display.acc_pot,
            0,
            bytemuck::cast_slice(&acc_pot_of(&self.sim)),
        );
    }
}

/// Accelerations and potentials of the last corrections, as the GPU
/// solvers' records.
pub fn acc_pot_of(sim: &HermiteSimulation) -> Vec<AccPot> {
    sim.bodies
        .iter()
        .map(|b| AccPot {
            acc: b.acc.map(|a| a as f32),
            pot: b.pot as f32,
        })
        .collect()
}
