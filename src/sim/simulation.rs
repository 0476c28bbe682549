//! A simulation: particle state on the GPU, a gravity solver and the
//! leapfrog integrator. Steps are only queued (no read-back inside a step),
//! so the same code drives the CLI and the browser's animation loop.

use super::diagnostics::Diagnostics;
use super::leapfrog::Leapfrog;
use super::particles::{GpuParticles, Particles};
use crate::direct::DirectSolver;
use crate::error::{Error, Result};
use crate::gpu::timing::PhaseTimer;
use crate::gpu::GpuContext;
use crate::snapshot::Snapshot;
use crate::tree::{TreeConfig, TreeSolver};

/// Which gravity solver computes the forces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum SolverKind {
    /// Blocked direct summation, O(N²), f32.
    Direct,
    /// Bonsai-style octree with quadrupole moments, O(N log N).
    Tree,
    /// 4th-order Hermite, individual block time steps, direct forces with
    /// jerk (`direct::hermite::HermiteSimulation`, not this leapfrog).
    Hermite4,
    /// 6th-order Hermite, as Hermite4 with snap.
    Hermite6,
}

impl SolverKind {
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Direct => "direct",
            SolverKind::Tree => "tree",
            SolverKind::Hermite4 => "hermite4",
            SolverKind::Hermite6 => "hermite6",
        }
    }
}

/// User-facing settings of a run (N-body units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimConfig {
    pub solver: SolverKind,
    /// Plummer softening length.
    pub eps: f32,
    /// Global time step.
    pub dt: f32,
    /// Opening angle of the tree solver (ignored by the direct solver).
    pub theta: f32,
}

impl SimConfig {
    pub fn validate(&self) -> Result<()> {
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return Err(Error::InvalidParameter(format!(
                "softening must be >= 0, got {}",
                self.eps
            )));
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(Error::InvalidParameter(format!(
                "time step must be > 0, got {}",
                self.dt
            )));
        }
        if self.solver == SolverKind::Tree {
            TreeConfig {
                theta: self.theta,
                eps: self.eps,
            }
            .validate()?;
        }
        Ok(())
    }
}

/// A gravity solver bound to the simulation's particle state.
pub enum Solver {
    Direct(DirectSolver),
    Tree(Box<TreeSolver>),
}

impl Solver {
    fn new(ctx: &GpuContext, state: &GpuParticles, config: &SimConfig) -> Result<Self> {
        Ok(match config.solver {
            SolverKind::Direct => Solver::Direct(DirectSolver::new(&ctx.device, state, config.eps)),
            SolverKind::Hermite4 | SolverKind::Hermite6 => {
                return Err(Error::InvalidParameter(format!(
                    "{} integrates with its own block time steps: use \
                     direct::hermite::HermiteSimulation",
                    config.solver.name()
                )))
            }
            SolverKind::Tree => Solver::Tree(Box::new(TreeSolver::new(
                ctx,
                state,
                TreeConfig {
                    theta: config.theta,
                    eps: config.eps,
                },
            )?)),
        })
    }

    /// Records one force evaluation of the current positions.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        match self {
            Solver::Direct(s) => s.encode(device, encoder, timer),
            Solver::Tree(s) => s.encode(device, encoder, timer),
        }
    }
}

pub struct Simulation {
    pub state: GpuParticles,
    /// Identities of the particles in upload order (the GPU's `id` buffer
    /// indexes this).
    ids: Vec<u64>,
    solver: Solver,
    leapfrog: Leapfrog,
    config: SimConfig,
    /// Simulated time (N-body units).
    pub time: f64,
    pub steps: u64,
}

impl Simulation {
    /// Uploads `particles` at time `time` and queues the first force
    /// evaluation, so the state is ready to step.
    pub fn new(
        ctx: &GpuContext,
        particles: &Particles,
        config: SimConfig,
        time: f64,
    ) -> Result<Self> {
        config.validate()?;
        let state = GpuParticles::upload(ctx, particles)?;
        let solver = Solver::new(ctx, &state, &config)?;
        let leapfrog = Leapfrog::new(&ctx.device, &state, config.dt);
        let sim = Self {
            state,
            ids: particles.id.clone(),
            solver,
            leapfrog,
            config,
            time,
            steps: 0,
        };
        sim.compute_forces(ctx);
        Ok(sim)
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    pub fn solver(&self) -> &Solver {
        &self.solver
    }

    pub fn n(&self) -> u32 {
        self.state.n
    }

    /// Queues a force evaluation of the current positions.
    pub fn compute_forces(&self, ctx: &GpuContext) {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("forces"),
            });
        self.solver.encode(&ctx.device, &mut encoder, None);
        ctx.queue.submit(Some(encoder.finish()));
    }

    /// Records one kick-drift-kick step.
    pub fn encode_step(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        mut timer: Option<&mut PhaseTimer>,
    ) {
        self.leapfrog
            .encode_kick_drift(device, encoder, timer.as_deref_mut());
        self.solver.encode(device, encoder, timer.as_deref_mut());
        self.leapfrog.encode_kick(device, encoder, timer);
    }

    /// Queues `count` steps in one submission (nothing waits for the GPU).
    pub fn step(&mut self, ctx: &GpuContext, count: u32) {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("leapfrog steps"),
            });
        for _ in 0..count {
            self.encode_step(&ctx.device, &mut encoder, None);
        }
        ctx.queue.submit(Some(encoder.finish()));
        self.steps += count as u64;
        self.time += count as f64 * self.config.dt as f64;
    }

    /// Energies and momenta of the current state (reads the GPU back).
    pub async fn diagnostics(&self, ctx: &GpuContext) -> Result<Diagnostics> {
        self.state.diagnostics(ctx).await
    }

    /// The current state as a snapshot (positions, velocities, ids and
    /// potentials of one consistent read-back).
    pub async fn snapshot(&self, ctx: &GpuContext) -> Result<Snapshot> {
        let s = self.state.read(ctx).await?;
        Ok(Snapshot {
            time: self.time,
            particles: Particles {
                id: s.index.iter().map(|&k| self.ids[k as usize]).collect(),
                pos_mass: s.pos_mass,
                vel: s.vel,
            },
            softening: self.config.eps,
            potential: Some(s.acc_pot.iter().map(|a| a.pot).collect()),
        })
    }
}
