//! Block (hierarchical) time steps for the tree code (drives
//! `shaders/block.wgsl`): kick-drift-kick with per-particle steps
//! dt_max / 2^k, k = 0..=L, as in GADGET-2 and GOTHIC (Miki & Umemura
//! 2017). A run's step is one largest step dt_max (the run's dt), made of
//! 2^L sub-steps of the smallest; at each, every particle is drifted, the
//! tree is built or refitted on the drifted positions (the tree's
//! `--rebuild` schedule, counted in sub-steps from the start of each
//! largest step), and only the groups that
//! hold a particle whose step ends walk the tree (`select_groups` compacts
//! the walk's group list on the GPU, each group trimmed to the run of its
//! particles from its first active one to its last, with the tolerance of
//! the acceleration MAC those particles give; `BlockCounters` sums the
//! particles walked and the active ones among them). A sub-step on which no particle's
//! step ends (the GPU knows from the deepest level it keeps) is idle: the
//! drift still moves every particle, but the tree's properties, group
//! boxes and walk, the selection and the kicks return at once (the tree's
//! `TreeCounters::idle`), so it costs a drift and empty launches; only a
//! build that the `--rebuild` schedule puts there still runs, so every
//! result is the one the work would have given. A particle's step follows from its
//! acceleration, dt = sqrt(2 η ε / |a|) (GADGET's criterion, η its
//! `ErrTolIntAccuracy`), bounded by dt_max and dt_max / 2^L; it changes
//! at the end of the particle's step, to a larger one only where that
//! step's grid is reached.
//!
//! All of it is recorded with no read-back. A largest step ends with every
//! particle synchronised (positions, velocities and forces at one time,
//! as after a shared step), so read-outs and checkpoints see the state a
//! shared-step run would; the levels travel in the velocities' fourth
//! lane (see `block.wgsl`), so the tree's reorder and checkpoints keep
//! them.

use crate::error::Result;
use crate::gpu::buffers::read_vec;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot, DYNAMIC_SLOT};
use crate::gpu::layout::{BlockCounters, BlockParams, Velocity, WORKGROUP_SIZE};
use crate::gpu::timing::{timed_pass, PhaseTimer};
use crate::gpu::GpuContext;
use crate::tree::layout::GroupBox;
use crate::tree::TreeSolver;

const BLOCK_WGSL: &str = include_str!("../../shaders/block.wgsl");

/// Bits of `Velocity::last_acc` that hold a particle's level.
pub const LEVEL_BITS: u32 = 5;

/// Where `BlockCounters::deepest` lies in the block counters.
const DEEPEST_AT: u64 = std::mem::offset_of!(BlockCounters, deepest) as u64;

/// Deepest hierarchy (`--levels`): 2^12 sub-steps per largest step, each
/// with a uniform slot of its own.
pub const MAX_LEVELS: u32 = 12;

/// The composed WGSL of the block-step kernels.
pub fn wgsl() -> String {
    crate::tree::compose_with(&[("LEVEL_BITS", LEVEL_BITS)], BLOCK_WGSL)
}

/// The binding contract of `shaders/block.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::UniformDynamic),
    ("pos_mass", Binding::StorageReadWrite),
    ("vel", Binding::StorageReadWrite),
    ("acc_pot", Binding::StorageRead),
    ("counters", Binding::StorageReadWrite),
    ("group_boxes", Binding::StorageReadWrite),
    ("active_boxes", Binding::StorageReadWrite),
    ("block", Binding::StorageReadWrite),
    ("dispatch", Binding::StorageReadWrite),
];

/// The level a velocity record holds (`block.wgsl`'s `level_of`).
pub fn level_of(v: &Velocity) -> u32 {
    v.last_acc.to_bits() & ((1 << LEVEL_BITS) - 1)
}

/// Particles per level (`levels[k]`: step dt_max / 2^k) of velocity
/// records of a block-step run.
pub fn level_counts(vel: &[Velocity], levels: u32) -> Vec<u64> {
    let mut counts = vec![0; levels as usize + 1];
    for v in vel {
        counts[(level_of(v) as usize).min(levels as usize)] += 1;
    }
    counts
}

/// The block-step kernels bound to a tree solver's state.
pub struct BlockSteps {
    open: Kernel,
    drift: Kernel,
    select: Kernel,
    settle: Kernel,
    kick: Kernel,
    params: wgpu::Buffer,
    counters: wgpu::Buffer,
    bind: wgpu::BindGroup,
    n: u32,
    group_capacity: u32,
    walk_workgroups: u32,
    levels: u32,
}

/// The time-step settings of a block-step run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockConfig {
    /// The largest step (the run's dt).
    pub dt_max: f32,
    /// GADGET's `ErrTolIntAccuracy` η.
    pub eta: f32,
    /// The softening ε of the criterion.
    pub eps: f32,
    /// Depth L: the smallest step is dt_max / 2^L.
    pub levels: u32,
}

impl BlockSteps {
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        tree: &TreeSolver,
        config: BlockConfig,
    ) -> Self {
        let module = ShaderSource::new("block steps", wgsl());
        let kernel = |entry: &str| {
            Kernel::from_module(device, &format!("block {entry}"), &module, entry, BINDINGS)
        };
        let b = &tree.buffers;
        let levels = config.levels.min(MAX_LEVELS);
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("block params"),
            size: ((1u64 << levels) + 1) * DYNAMIC_SLOT,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let storage = |label: &str, bytes: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(16),
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let active_boxes = storage(
            "active group boxes",
            b.group_capacity as u64 * std::mem::size_of::<GroupBox>() as u64,
        );
        let counters = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("block counters"),
            size: std::mem::size_of::<BlockCounters>() as u64,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let open = kernel("open");
        let bind = open.bind(
            device,
            &[
                &params,
                &b.state.pos_mass,
                &b.state.vel,
                &b.state.acc_pot,
                &b.counters,
                &b.group_boxes,
                &active_boxes,
                &counters,
                &b.dispatch[0],
            ],
        );
        let steps = Self {
            drift: kernel("drift"),
            select: kernel("select_groups"),
            settle: kernel("settle_groups"),
            kick: kernel("kick"),
            open,
            params,
            counters,
            bind,
            n: b.state.n,
            group_capacity: b.group_capacity,
            walk_workgroups: b.walk_workgroups,
            levels,
        };
        steps.set_config(queue, config);
        steps
    }

    /// The block-step counters (busy and idle sub-steps so far) — a
    /// read-back.
    pub async fn counters(&self, ctx: &GpuContext) -> Result<BlockCounters> {
        Ok(read_vec::<BlockCounters>(&ctx.device, &ctx.queue, &self.counters).await?[0])
    }

    /// The depth L of the hierarchy.
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// New dt_max, η and ε (the depth stays: `levels`).
    pub fn set_config(&self, queue: &wgpu::Queue, config: BlockConfig) {
        let slots = (1usize << self.levels) + 1;
        let mut bytes = vec![0u8; slots * DYNAMIC_SLOT as usize];
        for s in 0..slots {
            let p = BlockParams {
                n: self.n,
                levels: self.levels,
                substep: s as u32,
                walk_workgroups: self.walk_workgroups,
                dt_max: config.dt_max,
                two_eta_eps: 2.0 * config.eta * config.eps,
                ..Default::default()
            };
            let at = s * DYNAMIC_SLOT as usize;
            bytes[at..at + std::mem::size_of::<BlockParams>()]
                .copy_from_slice(bytemuck::bytes_of(&p));
        }
        queue.write_buffer(&self.params, 0, &bytes);
    }

    /// Records one largest step: the opening kicks, then 2^L sub-steps of
    /// drift, forces of the active groups (`tree`'s scheduled build or
    /// refit) and kicks.
    pub fn encode_step(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        tree: &TreeSolver,
        mut timer: Option<&mut PhaseTimer>,
    ) {
        self.encode_open(device, encoder, tree, timer.as_deref_mut());
        for s in 1..=self.substeps() {
            self.encode_particles(
                device,
                encoder,
                ParticlePass::Drift,
                s,
                timer.as_deref_mut(),
            );
            tree.encode_scheduled_groups(device, encoder, timer.as_deref_mut());
            self.encode_select(device, encoder, s, timer.as_deref_mut());
            tree.encode_walk(encoder, timer.as_deref_mut());
            self.encode_particles(device, encoder, ParticlePass::Kick, s, timer.as_deref_mut());
        }
    }

    /// Sub-steps of the smallest step in a largest one: 2^L.
    pub fn substeps(&self) -> u32 {
        1 << self.levels
    }

    /// Records a largest step's opening kicks (sub-step 0), which find the
    /// deepest level anew, and schedules `tree`'s build at its first
    /// sub-step.
    pub fn encode_open(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        tree: &TreeSolver,
        timer: Option<&mut PhaseTimer>,
    ) {
        let particles = dispatch_size(device, self.n, WORKGROUP_SIZE);
        encoder.clear_buffer(&self.counters, DEEPEST_AT, Some(4));
        // Each largest step starts with a build, as a run resumed at its
        // start must (it has no tree to refit): checkpoints, which fall
        // between largest steps, then change nothing.
        tree.rebuild_next();
        self.pass(encoder, "integrate", &self.open, 0, particles, timer);
    }

    /// Records sub-step `s`'s pass over every particle: its drift, which
    /// also decides whether any step ends at `s` (the tree's idle flag),
    /// or (after the walk) the kicks of the particles whose step ends
    /// there, which find the deepest level anew.
    pub fn encode_particles(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        pass: ParticlePass,
        s: u32,
        timer: Option<&mut PhaseTimer>,
    ) {
        let particles = dispatch_size(device, self.n, WORKGROUP_SIZE);
        let kernel = match pass {
            ParticlePass::Drift => &self.drift,
            ParticlePass::Kick => &self.kick,
        };
        self.pass(encoder, "integrate", kernel, s, particles, timer);
    }

    /// Records sub-step `s`'s choice of the groups that walk (after the
    /// tree's groups): those with an active particle, below the largest
    /// step's end, where every particle is active.
    pub fn encode_select(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        s: u32,
        timer: Option<&mut PhaseTimer>,
    ) {
        if s >= self.substeps() {
            return;
        }
        let groups = dispatch_size(device, self.group_capacity, WORKGROUP_SIZE);
        let mut pass = timed_pass(encoder, "select", timer);
        self.select
            .dispatch_in_slot(&mut pass, &self.bind, s, groups);
        self.settle
            .dispatch_in_slot(&mut pass, &self.bind, s, groups);
    }

    /// The deepest level of this state's particles after the last kicks
    /// (a read-back).
    pub async fn deepest(&self, ctx: &GpuContext) -> Result<u32> {
        Ok(self.counters(ctx).await?.deepest)
    }

    /// Sets the deepest level the next drifts see (a parallel run's, the
    /// deepest of every rank: its ranks must agree on which sub-steps are
    /// idle, since a busy one exchanges trees).
    pub fn set_deepest(&self, queue: &wgpu::Queue, deepest: u32) {
        queue.write_buffer(&self.counters, DEEPEST_AT, bytemuck::bytes_of(&deepest));
    }

    /// Whether any particle's step ends at sub-step `s` when the deepest
    /// level is `deepest` (`block.wgsl`'s drift decides alike).
    pub fn is_busy(&self, s: u32, deepest: u32) -> bool {
        s.is_multiple_of(1 << (self.levels - deepest.min(self.levels)))
    }

    fn pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        phase: &'static str,
        kernel: &Kernel,
        slot: u32,
        groups: (u32, u32),
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, phase, timer);
        kernel.dispatch_in_slot(&mut pass, &self.bind, slot, groups);
    }
}

/// A sub-step's passes over every particle (`BlockSteps::encode_particles`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParticlePass {
    Drift,
    Kick,
}

/// How a tree run's leapfrog steps its particles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timesteps {
    /// One step dt for every particle.
    Shared,
    /// Each particle its own power-of-two fraction of dt (`BlockSteps`).
    Block,
}

impl Timesteps {
    pub const ALL: &'static [Timesteps] = &[Timesteps::Shared, Timesteps::Block];

    pub fn name(self) -> &'static str {
        match self {
            Timesteps::Shared => "shared",
            Timesteps::Block => "block",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }
}
