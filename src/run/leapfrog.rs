//! Kick-drift-kick leapfrog with a global time step (drives
//! `shaders/leapfrog.wgsl`), with the direct or the tree solver for the
//! forces. The kick kernels know nothing of the solver: a step records
//! `kick_drift`, then the solver, then `kick`. Steps are only queued (no
//! read-back inside a step), so the same code drives the CLI and the
//! browser's animation loop.

use super::block::{BlockConfig, BlockSteps, Timesteps};
use super::params::RunParams;
use super::SolverKind;
use crate::direct::{DirectConfig, DirectSolver};
use crate::error::Result;
use crate::gpu::buffers::uniform_buffer;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::{BlockCounters, LeapfrogParams, WORKGROUP_SIZE};
use crate::gpu::shader::compose;
use crate::gpu::timing::{timed_pass, BatchClock, PhaseTimer};
use crate::gpu::GpuContext;
use crate::state::input_order::InputOrder;
use crate::state::particles::StateReadback;
use crate::state::{GpuParticles, Particles};
use crate::tree::{TreeConfig, TreeSolver};

const LEAPFROG_WGSL: &str = include_str!("../../shaders/leapfrog.wgsl");

/// The composed WGSL of the leapfrog kernels.
pub fn wgsl() -> String {
    compose(&[], LEAPFROG_WGSL)
}

/// The binding contract of `shaders/leapfrog.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageReadWrite),
    ("vel", Binding::StorageReadWrite),
    ("acc_pot", Binding::StorageRead),
];

/// The kick kernels bound to one particle state.
pub struct Leapfrog {
    kick_drift: Kernel,
    kick: Kernel,
    params: wgpu::Buffer,
    bind: wgpu::BindGroup,
    n: u32,
}

impl Leapfrog {
    pub fn new(device: &wgpu::Device, state: &GpuParticles, dt: f32) -> Self {
        let module = ShaderSource::new("leapfrog", wgsl());
        let kick_drift = Kernel::from_module(
            device,
            "leapfrog kick_drift",
            &module,
            "kick_drift",
            BINDINGS,
        );
        let kick = Kernel::from_module(device, "leapfrog kick", &module, "kick", BINDINGS);
        let params = uniform_buffer(device, "leapfrog params", &Self::params_for(state.n, dt));
        let bind = kick.bind(
            device,
            &[&params, &state.pos_mass, &state.vel, &state.acc_pot],
        );
        Self {
            kick_drift,
            kick,
            params,
            bind,
            n: state.n,
        }
    }

    fn params_for(n: u32, dt: f32) -> LeapfrogParams {
        LeapfrogParams {
            n,
            half_dt: 0.5 * dt,
            dt,
            ..Default::default()
        }
    }

    pub fn set_dt(&self, queue: &wgpu::Queue, dt: f32) {
        queue.write_buffer(
            &self.params,
            0,
            bytemuck::bytes_of(&Self::params_for(self.n, dt)),
        );
    }

    /// v += a dt/2, then x += v dt.
    pub fn encode_kick_drift(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        self.encode(&self.kick_drift, device, encoder, timer);
    }

    /// v += a dt/2.
    pub fn encode_kick(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        self.encode(&self.kick, device, encoder, timer);
    }

    fn encode(
        &self,
        kernel: &Kernel,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "integrate", timer);
        kernel.dispatch(
            &mut pass,
            &self.bind,
            dispatch_size(device, self.n, WORKGROUP_SIZE),
        );
    }
}

/// A gravity solver bound to a particle state.
pub enum ForceSolver {
    Direct(Box<DirectSolver>),
    Tree(Box<TreeSolver>),
}

impl ForceSolver {
    /// Records one force evaluation of the current positions into
    /// `acc_pot` (the tree also reorders the state by key).
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        match self {
            ForceSolver::Direct(s) => s.encode(device, encoder, timer),
            ForceSolver::Tree(s) => s.encode(device, encoder, timer),
        }
    }

    /// Records a step's force evaluation: as `encode`, but the tree is
    /// rebuilt only every `rebuild` steps and refitted in between.
    pub fn encode_step(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        match self {
            ForceSolver::Tree(s) => s.encode_scheduled(device, encoder, timer),
            solver => solver.encode(device, encoder, timer),
        }
    }
}

/// A leapfrog run on the GPU: particle state, solver and kick kernels.
pub struct LeapfrogEngine {
    pub state: GpuParticles,
    pub solver: ForceSolver,
    leapfrog: Leapfrog,
    /// The tree's block steps, in place of the shared step's kicks.
    block: Option<BlockSteps>,
    /// Puts read-outs into input order on the GPU: made at the first
    /// read-out (a run that never reads out, a benchmark's, compiles none).
    input_order: std::sync::OnceLock<InputOrder>,
    params: RunParams,
}

/// The block-step settings of run parameters.
pub fn block_config(p: &RunParams) -> BlockConfig {
    BlockConfig {
        dt_max: p.dt as f32,
        eta: p.eta as f32,
        eps: p.eps,
        levels: p.levels,
    }
}

impl LeapfrogEngine {
    /// Uploads `particles` and queues the first force evaluation, so the
    /// state is ready to step. `params` must be valid (`RunConfig`) and its
    /// solver direct or tree; `particles` valid (`Particles::validate`, as
    /// `Run::from_particles` checks them).
    pub fn new(ctx: &GpuContext, particles: &Particles, params: RunParams) -> Result<Self> {
        Self::starting_from(ctx, GpuParticles::upload_validated(ctx, particles)?, params)
    }

    /// `new` of a state already on the GPU, without forces (a model
    /// sampled there).
    pub fn starting_from(ctx: &GpuContext, state: GpuParticles, params: RunParams) -> Result<Self> {
        let engine = Self::with_state(ctx, state, params)?;
        engine.queue_forces(ctx);
        Ok(engine)
    }

    /// A run of a state read back earlier (GPU order, forces included), as
    /// a checkpoint holds it: no force evaluation is queued, the next step
    /// kicks with the stored forces. With the acceleration MAC, that
    /// kick_drift also takes |a_old| from them, as in the run that was
    /// saved.
    pub fn restore(ctx: &GpuContext, state: &StateReadback, params: RunParams) -> Result<Self> {
        Self::with_state(ctx, GpuParticles::restore(ctx, state)?, params)
    }

    fn with_state(ctx: &GpuContext, state: GpuParticles, params: RunParams) -> Result<Self> {
        let solver = match params.solver {
            SolverKind::Tree => {
                let tree = TreeSolver::new(
                    ctx,
                    &state,
                    TreeConfig {
                        theta: params.theta,
                        eps: params.eps,
                        alpha: params.alpha,
                    },
                )?;
                tree.set_rebuild_every(params.rebuild);
                ForceSolver::Tree(Box::new(tree))
            }
            _ => ForceSolver::Direct(Box::new(DirectSolver::with_config(
                &ctx.device,
                &state,
                params.eps,
                DirectConfig::for_n(state.n),
                ctx.interactions_per_submission,
            ))),
        };
        // The GPU steps with dt in f32; the run counts time with the dt as
        // given (`Run::time`), so times stay the decimals asked for.
        let leapfrog = Leapfrog::new(&ctx.device, &state, params.dt as f32);
        let block = match (&solver, params.timesteps) {
            (ForceSolver::Tree(tree), Timesteps::Block) => Some(BlockSteps::new(
                &ctx.device,
                &ctx.queue,
                tree,
                block_config(&params),
            )),
            _ => None,
        };
        Ok(Self {
            input_order: std::sync::OnceLock::new(),
            state,
            solver,
            leapfrog,
            block,
            params,
        })
    }

    /// The kernels that put read-outs into input order.
    pub fn input_order(&self, device: &wgpu::Device) -> &InputOrder {
        self.input_order.get_or_init(|| InputOrder::new(device))
    }

    /// Queues a force evaluation of the current positions.
    pub fn queue_forces(&self, ctx: &GpuContext) {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("forces"),
            });
        match &self.solver {
            ForceSolver::Direct(d) if d.chunks() > 1 => {
                for k in 0..d.chunks() {
                    d.encode_chunk(&ctx.device, &mut encoder, k, None);
                    ctx.queue.submit(Some(encoder.finish()));
                    encoder = ctx.device.create_command_encoder(&Default::default());
                }
            }
            ForceSolver::Tree(t) => {
                t.encode_fresh(&ctx.device, &mut encoder, None);
                // The first step builds anew, and with it every K-th
                // (`--rebuild K`): after a multiple of K steps the next
                // step builds, as a run resumed there does, so a
                // checkpoint there changes nothing (`Run::before_checkpoint`).
                t.rebuild_next();
            }
            solver => solver.encode(&ctx.device, &mut encoder, None),
        }
        ctx.queue.submit(Some(encoder.finish()));
    }

    /// Submits `count` steps, the first timed by `timer` if given, the
    /// whole batch by `clock` if given. Steps share one submission, unless
    /// a force evaluation is split into chunks to keep each submission
    /// short (see `DirectSolver`): then every chunk is a submission of its
    /// own, the kicks riding along with the first and last.
    pub fn submit_steps(
        &self,
        ctx: &GpuContext,
        count: u32,
        mut timer: Option<&mut PhaseTimer>,
        clock: Option<&mut BatchClock>,
    ) {
        let device = &ctx.device;
        let new_encoder = || {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("leapfrog steps"),
            })
        };
        let mut encoder = new_encoder();
        let clocked = clock.and_then(|c| Some((c.begin(&mut encoder)?, c)));
        for step in 0..count {
            let mut t = if step == 0 {
                timer.as_deref_mut()
            } else {
                None
            };
            match &self.solver {
                ForceSolver::Direct(d) if d.chunks() > 1 => {
                    self.leapfrog
                        .encode_kick_drift(device, &mut encoder, t.as_deref_mut());
                    for k in 0..d.chunks() {
                        d.encode_chunk(device, &mut encoder, k, t.as_deref_mut());
                        if k + 1 < d.chunks() {
                            ctx.queue.submit(Some(encoder.finish()));
                            encoder = new_encoder();
                        }
                    }
                    self.leapfrog
                        .encode_kick(device, &mut encoder, t.as_deref_mut());
                }
                _ => self.encode_step(device, &mut encoder, t),
            }
            if let (0, Some(t)) = (step, timer.as_deref_mut()) {
                t.resolve(&mut encoder);
            }
        }
        if let Some((k, c)) = clocked {
            c.end(&mut encoder, k);
        }
        ctx.queue.submit(Some(encoder.finish()));
    }

    /// Records one kick-drift-kick step (with block steps, one largest
    /// step: `BlockSteps::encode_step`).
    pub fn encode_step(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        mut timer: Option<&mut PhaseTimer>,
    ) {
        if let (Some(block), ForceSolver::Tree(tree)) = (&self.block, &self.solver) {
            block.encode_step(device, encoder, tree, timer);
            return;
        }
        self.leapfrog
            .encode_kick_drift(device, encoder, timer.as_deref_mut());
        self.solver
            .encode_step(device, encoder, timer.as_deref_mut());
        self.leapfrog.encode_kick(device, encoder, timer);
    }

    /// Switches ε, Δt and θ in place when the solver stays the same, and
    /// recomputes the forces with them; `false` when `params` needs another
    /// solver (a new engine).
    pub fn retune(&mut self, ctx: &GpuContext, params: RunParams) -> bool {
        let hierarchy = |p: &RunParams| (p.solver, p.timesteps, p.levels);
        if hierarchy(&params) != hierarchy(&self.params) {
            return false;
        }
        if let Some(block) = &self.block {
            block.set_config(&ctx.queue, block_config(&params));
        }
        match &self.solver {
            ForceSolver::Direct(d) => d.set_eps(&ctx.queue, params.eps),
            ForceSolver::Tree(t) => {
                t.set_config(
                    &ctx.queue,
                    TreeConfig {
                        theta: params.theta,
                        eps: params.eps,
                        alpha: params.alpha,
                    },
                );
                t.set_rebuild_every(params.rebuild);
            }
        }
        self.leapfrog.set_dt(&ctx.queue, params.dt as f32);
        self.params = params;
        self.queue_forces(ctx);
        true
    }

    /// Whether the run takes block steps (whose levels a read-out counts
    /// from the velocities).
    pub fn has_block_steps(&self) -> bool {
        self.block.is_some()
    }

    /// Particles per block-step level (`levels[k]`: step dt / 2^k) in the
    /// last largest step, from velocities read back (block steps only).
    pub fn block_levels(&self, vel: &[crate::gpu::layout::Velocity]) -> Option<Vec<u64>> {
        self.block
            .as_ref()
            .map(|b| super::block::level_counts(vel, b.levels()))
    }

    /// The block steps' busy and idle sub-steps so far (block steps only;
    /// a read-back).
    pub async fn block_counters(&self, ctx: &GpuContext) -> Result<Option<BlockCounters>> {
        match &self.block {
            Some(b) => Ok(Some(b.counters(ctx).await?)),
            None => Ok(None),
        }
    }

    /// Positions, velocities, forces and upload indices, in GPU order.
    pub async fn read(&self, ctx: &GpuContext) -> Result<StateReadback> {
        self.state.read(ctx).await
    }
}
