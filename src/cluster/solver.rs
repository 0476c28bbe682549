//! The tree code on several ranks (Bédorf et al. 2014, §2): each rank
//! builds the tree of its own domain, cuts from it the local essential
//! tree of every other domain, walks its own tree while the trees travel,
//! then walks the trees it received, adding their forces.

use super::comm::{allgather_records, Comm};
use super::imports::{ImportCounts, ImportedTrees};
use super::let_tree::{EssentialTree, LetCutter};
use super::spanning::SpanningGroups;
use super::summary::{DomainSummaries, DOMAIN_BOXES};
use crate::error::Result;
use crate::gpu::buffers::{read_buffer_ranges, records};
use crate::gpu::timing::PhaseTimer;
use crate::gpu::GpuContext;
use crate::state::GpuParticles;
use crate::tree::layout::{DomainSummary, TreeCounters};
use crate::tree::{TreeConfig, TreeSolver};
use std::cell::RefCell;
use std::time::Instant;

/// What the last evaluation moved, and where its time went on the host.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EvaluationReport {
    /// Cells and particles of the trees sent to the other ranks.
    pub exported_cells: u64,
    pub exported_particles: u64,
    pub imported: ImportCounts,
    /// Build, group boxes and summary, until their counts were read.
    pub build_s: f64,
    /// Summaries gathered and local essential trees cut and read back.
    pub cut_s: f64,
    /// The part of `cut_s` that waited for the trees' copy to the host.
    pub cut_read_s: f64,
    /// The exchange of the trees, which runs while the GPU walks the
    /// local tree.
    pub exchange_s: f64,
    /// The part of `exchange_s` spent waiting for the other ranks to be
    /// ready to exchange.
    pub exchange_wait_s: f64,
    /// Received trees checked, assembled and uploaded, their walk queued.
    pub import_s: f64,
    /// The part of `import_s` that assembled the trees on the host.
    pub import_assemble_s: f64,
    /// Milliseconds of GPU time (timestamps; 0 without them) of the
    /// build (bounds to groups), the local walk and the imported trees'
    /// walk, as of the last `finish_timed`.
    pub gpu_build_ms: f64,
    pub gpu_walk_ms: f64,
    pub gpu_imported_walk_ms: f64,
}

/// Timed passes of one evaluation: the build's, the two walks.
const TIMED_PASSES: u32 = 64;

pub struct DistributedTree {
    pub tree: TreeSolver,
    summaries: DomainSummaries,
    /// The split of groups that span another domain, after the summary.
    spanning: SpanningGroups,
    cutter: LetCutter,
    imports: ImportedTrees,
    config: TreeConfig,
    /// The GPU's time of the last evaluation's build and walks.
    timer: PhaseTimer,
    pub last: EvaluationReport,
}

/// The trees every other rank sent (`incoming`, in rank order) checked,
/// uploaded beside `tree`'s particles and their walk queued.
fn import(
    ctx: &GpuContext,
    tree: &TreeSolver,
    imports: &mut ImportedTrees,
    timer: &mut PhaseTimer,
    me: usize,
    incoming: &[&[u8]],
) -> Result<()> {
    let received = incoming
        .iter()
        .enumerate()
        .filter(|&(r, _)| r != me)
        .map(|(_, bytes)| EssentialTree::from_bytes(bytes))
        .collect::<Result<Vec<_>>>()?;
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("cluster imported walk"),
        });
    imports.encode(ctx, &tree.buffers, &received, &mut encoder, Some(timer))?;
    ctx.queue.submit(Some(encoder.finish()));
    Ok(())
}

impl DistributedTree {
    pub fn new(ctx: &GpuContext, state: &GpuParticles, config: TreeConfig) -> Result<Self> {
        Self::with_room(ctx, state, config, state.n)
    }

    /// A solver whose tree's arrays hold `room` particles (at least the
    /// state's): a redraw that leaves this rank as many keeps them
    /// (`redrawn`).
    pub fn with_room(
        ctx: &GpuContext,
        state: &GpuParticles,
        config: TreeConfig,
        room: u32,
    ) -> Result<Self> {
        let tree = TreeSolver::with_room(ctx, state, config, room)?;
        let b = &tree.buffers;
        Ok(Self {
            timer: PhaseTimer::new(ctx, TIMED_PASSES),
            summaries: DomainSummaries::new(&ctx.device, b),
            spanning: SpanningGroups::new(&ctx.device),
            cutter: LetCutter::new(ctx, b),
            imports: ImportedTrees::new(ctx, b),
            config,
            tree,
            last: EvaluationReport::default(),
        })
    }

    /// Moves the solver to a redrawn `state`. Where its tree's arrays hold
    /// the state, they stay, with everything bound to them; what reads the
    /// particles is bound anew (a filled GPU's arrays allocated anew, and
    /// the old ones freed, took 1.8–2.6 s of each redraw on two H200s).
    /// Otherwise the tree is made anew, with room for `room` particles.
    /// Either way the trees' staging on the host and the imports' room are
    /// kept (the first step after a redraw would otherwise allocate and
    /// fault them in afresh), and so is the last report.
    pub fn redrawn(&mut self, ctx: &GpuContext, state: &GpuParticles, room: u32) -> Result<()> {
        if self.tree.holds(state.n) {
            self.tree.rebind(ctx, state, self.config)?;
            let b = &self.tree.buffers;
            self.cutter.rebind(&ctx.device, b);
            self.imports.rebind(ctx, b);
            self.summaries.rebind(&ctx.device, b);
            return Ok(());
        }
        self.tree = TreeSolver::with_room(ctx, state, self.config, room)?;
        let b = &self.tree.buffers;
        self.summaries.rebind(&ctx.device, b);
        self.cutter = LetCutter::succeeding(ctx, b, &mut self.cutter);
        self.imports = ImportedTrees::succeeding(ctx, b, &mut self.imports);
        Ok(())
    }

    /// Shows the other ranks at most `coarse` boxes of at most `fine`
    /// boxes each (`DomainSummaries::limit`).
    pub fn limit_summary(&mut self, ctx: &GpuContext, coarse: u32, fine: u32) {
        self.summaries.limit(&ctx.queue, coarse, fine);
    }

    /// The next evaluation knows no other domain's summary, as a new
    /// solver's first does: its summary picks boxes by count, and it
    /// splits no group that spans another domain (`cluster::spanning`).
    /// A solver kept across a redraw otherwise goes on from the old
    /// domains' summaries, which comparisons with a new solver must not.
    pub fn forget_other_domains(&mut self, ctx: &GpuContext) {
        self.summaries.remember_others(ctx, &self.tree.buffers, &[]);
    }

    /// The first evaluation of a state (see `TreeSolver::encode_fresh`):
    /// with the acceleration MAC, one with the opening angle on b gives
    /// the |a_old| of a second, whose forces are kept. Every rank calls it
    /// together.
    pub async fn evaluate_fresh(&mut self, ctx: &GpuContext, comm: &dyn Comm) -> Result<()> {
        if self.config.alpha > 0.0 {
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            encoder.clear_buffer(&self.tree.buffers.state.acc_pot, 0, None);
            self.tree.encode_remember(&ctx.device, &mut encoder);
            ctx.queue.submit(Some(encoder.finish()));
            self.evaluate(ctx, comm).await?;
            self.remember(ctx);
        }
        self.evaluate(ctx, comm).await?;
        self.remember(ctx);
        Ok(())
    }

    fn remember(&self, ctx: &GpuContext) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        self.tree.encode_remember(&ctx.device, &mut encoder);
        ctx.queue.submit(Some(encoder.finish()));
    }

    /// One force evaluation of the whole system into this rank's
    /// `acc_pot` (its state ends in key order). Every rank calls it
    /// together; the walks are left queued on the GPU.
    pub async fn evaluate(&mut self, ctx: &GpuContext, comm: &dyn Comm) -> Result<()> {
        self.evaluate_groups(ctx, comm, |_| {}, true).await
    }

    /// `evaluate` for the groups `select` records leaving in the walk's
    /// list (after the tree's build or refit; block steps' active groups):
    /// the domain's summary shows the other ranks only those, so they cut
    /// trees for them alone.
    pub async fn evaluate_selected(
        &mut self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        select: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        self.evaluate_groups(ctx, comm, select, false).await
    }

    /// `evaluate_selected`; groups that span another domain are split
    /// (`cluster::spanning`) where `split_spanning` (not in block steps,
    /// whose chosen groups are a list of their own).
    async fn evaluate_groups(
        &mut self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        select: impl FnOnce(&mut wgpu::CommandEncoder),
        split_spanning: bool,
    ) -> Result<()> {
        let (d, q) = (&ctx.device, &ctx.queue);
        let started = Instant::now();
        let mut encoder = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("cluster build"),
        });
        self.timer.reset();
        self.tree
            .encode_scheduled_groups(d, &mut encoder, Some(&mut self.timer));
        select(&mut encoder);
        self.summaries.encode(d, &mut encoder);
        if split_spanning {
            self.spanning
                .encode(d, &mut encoder, &self.tree.buffers, &self.summaries);
            // The walks (local and imported) cover the groups split off.
            self.tree.encode_walk_dispatch(&mut encoder);
        }
        q.submit(Some(encoder.finish()));
        let counter_bytes = std::mem::size_of::<TreeCounters>() as u64;
        let summary_bytes = DOMAIN_BOXES as u64 * std::mem::size_of::<DomainSummary>() as u64;
        let got = read_buffer_ranges(
            d,
            q,
            &[
                (&self.tree.buffers.counters, 0, counter_bytes),
                (&self.summaries.summary, 0, summary_bytes),
                self.imports.spill_word(),
            ],
        )
        .await?;
        let counters: TreeCounters = bytemuck::pod_read_unaligned(&got[0]);
        let summary = records::<DomainSummary>(&got[1]).into_owned();
        self.imports.check_spill(records::<u32>(&got[2])[0])?;
        self.tree.fit_levels(q, counters.depth);
        let built = Instant::now();

        let (me, p) = (comm.rank(), comm.size());
        let all = allgather_records(comm, &summary);
        let targets: Vec<usize> = (0..p)
            .filter(|&r| r != me && all[r].iter().any(|b| b.groups > 0))
            .collect();
        let summaries: Vec<DomainSummary> = targets
            .iter()
            .flat_map(|&r| all[r].iter().copied())
            .collect();
        // The next evaluation's summary weighs its cells by these.
        self.summaries
            .remember_others(ctx, &self.tree.buffers, &summaries);
        let Self {
            tree,
            cutter,
            imports,
            timer,
            ..
        } = self;
        let timer = RefCell::new(timer);
        // The local walk runs while the trees are read back and travel.
        let walk_locally = || {
            let mut encoder = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("cluster local walk"),
            });
            tree.encode_walk(&mut encoder, Some(&mut timer.borrow_mut()));
            q.submit(Some(encoder.finish()));
        };
        // The trees go out from where the GPU's copy of them is mapped, and
        // the received ones are assembled from where they arrived.
        let send = |messages: Vec<Vec<&[u8]>>| {
            let cut = Instant::now();
            let (mut exported_cells, mut exported_particles) = (0, 0);
            let mut outgoing = vec![Vec::new(); p];
            for (message, &r) in messages.into_iter().zip(&targets) {
                let (cells, particles) = EssentialTree::counts(message[0]);
                exported_cells += cells;
                exported_particles += particles;
                outgoing[r] = message;
            }
            // Timed apart: the wait for the slowest rank to reach the
            // exchange, then the transfer itself.
            comm.barrier();
            let all_ready = Instant::now();
            let mut imported = Ok(());
            let mut exchanged = all_ready;
            comm.exchange(&outgoing, &mut |incoming| {
                exchanged = Instant::now();
                imported = import(ctx, tree, imports, &mut timer.borrow_mut(), me, incoming);
            });
            imported.map(|()| {
                (
                    exported_cells,
                    exported_particles,
                    cut,
                    all_ready,
                    exchanged,
                )
            })
        };
        let (exported_cells, exported_particles, cut, all_ready, exchanged) = cutter
            .cut(
                ctx,
                &tree.buffers,
                &counters,
                &summaries,
                walk_locally,
                send,
            )
            .await??;
        let imported = Instant::now();
        let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
        self.last = EvaluationReport {
            exported_cells,
            exported_particles,
            imported: self.imports.last,
            build_s: secs(started, built),
            cut_s: secs(built, cut),
            cut_read_s: self.cutter.last_read_s,
            exchange_s: secs(cut, exchanged),
            exchange_wait_s: secs(cut, all_ready),
            import_s: secs(exchanged, imported),
            import_assemble_s: self.imports.last_assemble_s,
            ..self.last
        };
        Ok(())
    }

    /// The share of the room beside this rank's particles that the last
    /// imports filled (0 to 1; see `ImportedTrees::room_used`).
    pub fn import_room_used(&self) -> f64 {
        self.imports.room_used
    }

    /// Waits for the last evaluation's walks and checks that the imported
    /// one was complete (later evaluations check their predecessor as
    /// they go).
    pub async fn finish(&self, ctx: &GpuContext) -> Result<()> {
        let got = read_buffer_ranges(&ctx.device, &ctx.queue, &[self.imports.spill_word()]).await?;
        self.imports.check_spill(records::<u32>(&got[0])[0])
    }

    /// `finish`, taking the evaluation's GPU times into `last`.
    pub async fn finish_timed(&mut self, ctx: &GpuContext) -> Result<()> {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        self.timer.resolve(&mut encoder);
        ctx.queue.submit(Some(encoder.finish()));
        self.finish(ctx).await?;
        let phases = self.timer.read(ctx).await?;
        let ms = |walk: Option<&str>| {
            phases
                .iter()
                .filter(|(label, _)| match walk {
                    Some(w) => *label == w,
                    None => !label.ends_with("walk"),
                })
                .map(|(_, ms)| ms)
                .sum::<f64>()
        };
        self.last.gpu_build_ms = ms(None);
        self.last.gpu_walk_ms = ms(Some("walk"));
        self.last.gpu_imported_walk_ms = ms(Some("imported walk"));
        Ok(())
    }
}
