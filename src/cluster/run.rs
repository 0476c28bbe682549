//! A leapfrog run of the tree code on every rank of a parallel run: the
//! kick-drift-kick of `run::leapfrog` on each rank's particles with the
//! forces of `solver::DistributedTree`, the domains redrawn from the work
//! of the last walk (`Rebalance`).

use super::comm::{allgather_records, Comm};
use super::decomposition::{decompose_timed, DecomposeParts, RankParticles};
use super::global_ids::GlobalIds;
use super::migration::{self, Moment};
use super::solver::{DistributedTree, EvaluationReport};
use crate::error::{Error, Result};
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::gpu::GpuContext;
use crate::run::block::{level_counts, BlockConfig, BlockSteps, ParticlePass};
use crate::run::leapfrog::Leapfrog;
use crate::snapshot::{FileShare, Snapshot};
use crate::state::diagnostics::{Diagnostics, DiagnosticsSum, GpuDiagnostics};
use crate::state::energy::{
    precise_potentials_of, PotentialKernel, PotentialRule, PotentialSum, HOST_MAX,
};
use crate::state::generate::Sampled;
use crate::state::kinds_by_id::KindsById;
use crate::state::particles::StateReadback;
use crate::state::share::RankShare;
use crate::state::{GpuParticles, Particles};
use crate::tree::TreeConfig;
use rayon::prelude::*;

/// Settings of a parallel tree run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClusterParams {
    pub tree: TreeConfig,
    /// The step (with block steps, the largest: `block.dt_max`).
    pub dt: f64,
    pub rebalance: Rebalance,
    /// The tree is built every `rebuild` force evaluations and refitted in
    /// between (`--rebuild`; with block steps counted in sub-steps from
    /// the start of each largest step, as on one GPU). A redraw builds.
    pub rebuild: u32,
    /// Block time steps (`run::block`), or one shared step.
    pub block: Option<BlockConfig>,
}

/// When a parallel run redraws its domains. Between redraws particles
/// cross the domains' edges, so the edges blur and the trees the ranks
/// exchange grow (0.5 → 1.1 M particles in 24 steps at 2^20 per H200,
/// BENCHMARKS.md); a redraw makes them small again, at the price of
/// moving every particle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rebalance {
    /// Every k steps (0: only at the start).
    Every(u64),
    /// When the time the steps since the last redraw lost to the drift
    /// (each step's wall time over the fastest of them, the slowest rank's
    /// sum) exceeds what that redraw cost (the slowest rank's): the
    /// ski-rental rule, whose overhead is at most twice the best
    /// schedule's whatever the drift.
    WhenItPays,
}

/// What a rank holds of a run, and the run's progress.
pub struct ClusterRun {
    state: GpuParticles,
    solver: DistributedTree,
    leapfrog: Leapfrog,
    /// The block steps' kernels on this state (`params.block`).
    block: Option<BlockSteps>,
    /// Global id of each particle of this rank, by upload index, on its
    /// GPU.
    ids: GlobalIds,
    params: ClusterParams,
    /// Time is counted from `base_time`, `dt` a step since `base_steps` (as
    /// `run::Run` counts it, so a checkpoint resumes on the same times).
    base_time: f64,
    base_steps: u64,
    steps: u64,
    /// Seconds of the last decomposition (read-back, exchange, upload and
    /// the solver's set-up), and its parts.
    pub rebalance_s: f64,
    pub redraw_parts: RedrawParts,
    /// Decompositions since the start (the first one included).
    pub redraws: u64,
    /// Those of them called because a rank's imports crowded their room
    /// (`CROWDED_IMPORTS`).
    pub redraws_for_imports: u64,
    /// `Rebalance::WhenItPays`'s account since the last redraw.
    drift: DriftAccount,
    /// Steps since the last redraw.
    steps_since_redraw: u64,
    /// The precise potentials' kernel of the energy reports (built at its
    /// first use).
    energy_kernel: Option<PotentialKernel>,
    /// The diagnostics' sums on the GPU, made at their first use.
    gpu_diagnostics: Option<GpuDiagnostics>,
    /// The particles' kinds by id (a galaxy's halo, disk, …), which the
    /// snapshots it writes carry; `None` for a model of one kind.
    pub kinds: Option<KindsById>,
    /// The most particles any rank's GPU holds (`rank_capacity`): no
    /// redraw gives a rank more.
    capacity: u64,
}

/// The share of what a GPU holds that a rank leaves for the particles
/// of the other ranks' trees, which its imported walk holds beside its
/// own in one binding: a Milky Way of 2^27 − 2^22 particles a rank on
/// two GPUs imported 4.3·10^6 (3.3 %) eight steps after a redraw.
const IMPORT_ROOM: u64 = 16;

/// The share of its particles a rank's tree keeps room for beyond them
/// (up to what its GPU holds): a redraw changes a rank's count (by 6 % at
/// 6.7·10^7 a rank on two ranks), and a tree whose arrays hold the new
/// count keeps them (`DistributedTree::redrawn`).
const TREE_ROOM: u64 = 8;

/// The particles a rank's tree holds for `n` of its own: `TREE_ROOM` more,
/// within `capacity`.
fn room_for(n: u32, capacity: u64) -> u32 {
    let n = n as u64;
    (n + n / TREE_ROOM)
        .min(capacity.max(n))
        .min(u32::MAX as u64) as u32
}

/// The share of the room left for a rank's imports (`IMPORT_ROOM`, and
/// the imported walk's binding) that calls for a redraw when a rank's
/// last imports filled more of it: they grow as the domains' edges blur
/// between redraws, and a run whose imports outgrow the room ends. A
/// Milky Way of 1.26·10^8 particles a rank on two H200s had filled 79 %
/// of it sixteen steps after a redraw (2026-11-30).
const CROWDED_IMPORTS: f64 = 0.75;

/// The most particles of its own a rank holds, on every rank's GPU: the
/// tree's (each array within one storage binding,
/// `tree::max_particles_within`) less 1/`IMPORT_ROOM` for the imports.
fn rank_capacity(ctx: &GpuContext, comm: &dyn Comm) -> u64 {
    let tree = crate::tree::max_particles_within(ctx.max_elements(1));
    let mine = tree - tree / IMPORT_ROOM;
    allgather_records(comm, &[mine])
        .iter()
        .map(|c| c[0])
        .min()
        .unwrap_or(mine)
}

/// The time steps lost to the domains' drift since the last redraw: each
/// step's wall time over the fastest step since then (the one nearest the
/// redraw, when the trees exchanged were smallest).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DriftAccount {
    fastest_s: f64,
    lost_s: f64,
}

impl Default for DriftAccount {
    fn default() -> Self {
        Self {
            fastest_s: f64::INFINITY,
            lost_s: 0.0,
        }
    }
}

impl DriftAccount {
    /// Counts a step of `step_s` seconds; the seconds lost so far.
    pub fn note(&mut self, step_s: f64) -> f64 {
        self.fastest_s = self.fastest_s.min(step_s);
        self.lost_s += step_s - self.fastest_s;
        self.lost_s
    }
}

/// Seconds of a decomposition's parts on one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RedrawParts {
    /// The particles, their forces and their work read back (0 since
    /// redraws stay on the GPU; the start's decomposition has them on the
    /// host already).
    pub read_s: f64,
    /// Keys, splitters and the exchange (`decompose`, or on the GPU
    /// `migration::redraw`, which includes the new state's assembly).
    pub decompose_s: f64,
    /// Their parts.
    pub decompose: DecomposeParts,
    /// The new particles uploaded (the start's decomposition only).
    pub upload_s: f64,
    /// The solver and the integrator set up for them.
    pub setup_s: f64,
    /// Whether the host drew the domains (a start whose shares some GPU
    /// could not take as they were: `first_domains`).
    pub on_host: bool,
}

impl RedrawParts {
    pub fn total(&self) -> f64 {
        self.read_s + self.decompose_s + self.upload_s + self.setup_s
    }
}

/// Every rank's state summed: conserved quantities and counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterDiagnostics {
    pub diagnostics: Diagnostics,
    /// How the potential energy was summed.
    pub potential_sum: PotentialSum,
    pub particles: u64,
    /// Fewest and most particles of a rank.
    pub fewest: u64,
    pub most: u64,
    /// Particles per block-step level after the last largest step
    /// (`levels[k]`: step dt / 2^k; block steps only).
    pub levels: Option<Vec<u64>>,
}

impl ClusterRun {
    /// Starts a run from this rank's `mine` (any share of the particles; a
    /// rank may start with none) at `time` after `steps` steps: the ranks
    /// decompose, upload and evaluate the first forces together.
    pub async fn new(
        ctx: &GpuContext,
        comm: &dyn Comm,
        mine: impl Into<FirstShare>,
        (time, steps): (f64, u64),
        params: ClusterParams,
    ) -> Result<Self> {
        params.tree.validate()?;
        if !(params.dt.is_finite() && params.dt > 0.0) {
            return Err(Error::InvalidParameter(format!(
                "the time step must be positive, got {}",
                params.dt
            )));
        }
        let mut parts = RedrawParts::default();
        let capacity = rank_capacity(ctx, comm);
        let (solver, state, ids) =
            first_domains(ctx, comm, mine.into(), (params.tree, capacity), &mut parts).await?;
        let clock = std::time::Instant::now();
        let cube = parts.decompose.frame.system_cube();
        solver.tree.set_system_cube(&ctx.queue, cube);
        let (leapfrog, block) = integrators(ctx, &state, &solver, &params);
        migration::build_kernels(&ctx.device);
        parts.setup_s += clock.elapsed().as_secs_f64();
        let mut run = Self {
            state,
            solver,
            leapfrog,
            block,
            ids,
            params,
            base_time: time,
            base_steps: steps,
            steps,
            // What a redraw will cost, until one is measured: the start's
            // (every particle moving), without the set-up's pipelines
            // (built once: `gpu::kernel_cache`).
            rebalance_s: parts.decompose_s + parts.upload_s,
            redraw_parts: parts,
            redraws: 1,
            redraws_for_imports: 0,
            drift: DriftAccount::default(),
            steps_since_redraw: 0,
            energy_kernel: None,
            gpu_diagnostics: None,
            kinds: None,
            capacity,
        };
        run.solver.evaluate_fresh(ctx, comm).await?;
        Ok(run)
    }

    pub fn time(&self) -> f64 {
        self.base_time + (self.steps - self.base_steps) as f64 * self.params.dt
    }

    /// Where time is counted from: (time, steps).
    pub fn base(&self) -> (f64, u64) {
        (self.base_time, self.base_steps)
    }

    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Particles on this rank.
    pub fn local_count(&self) -> u32 {
        self.state.n
    }

    /// The last force evaluation's report (this rank's).
    pub fn report(&self) -> EvaluationReport {
        self.solver.last
    }

    /// One kick-drift-kick step of every rank (called by all together),
    /// with block steps one largest step.
    pub async fn step(&mut self, ctx: &GpuContext, comm: &dyn Comm) -> Result<()> {
        let clock = std::time::Instant::now();
        if self.block.is_some() {
            self.block_step(ctx, comm).await?;
        } else {
            let d = &ctx.device;
            // The first step builds, and every `rebuild`-th after it, as
            // on one GPU.
            if self.steps.is_multiple_of(self.params.rebuild.max(1) as u64) {
                self.solver.tree.rebuild_next();
            }
            let mut encoder = d.create_command_encoder(&Default::default());
            self.leapfrog.encode_kick_drift(d, &mut encoder, None);
            ctx.queue.submit(Some(encoder.finish()));
            self.solver.evaluate(ctx, comm).await?;
            let mut encoder = d.create_command_encoder(&Default::default());
            self.leapfrog.encode_kick(d, &mut encoder, None);
            ctx.queue.submit(Some(encoder.finish()));
        }
        // The step's walks done before its time is taken: left queued, they
        // would count in the next step's, and the first step after a
        // redraw (which waits for the GPU) would look the fastest by their
        // time, so the drift's account would call for redraws after two
        // steps where the GPU's work is the larger part. The next step's
        // build would wait for them anyway.
        self.solver.finish_timed(ctx).await?;
        self.steps += 1;
        if self.redraw_due(comm, clock.elapsed().as_secs_f64()) {
            self.rebalance(ctx, comm).await?;
        }
        Ok(())
    }

    /// One largest block step of every rank: `BlockSteps::encode_step`'s
    /// sub-steps, where each busy one evaluates the forces of every rank's
    /// active groups together (the trees cut for those groups alone). The
    /// ranks agree on which sub-steps are busy from the deepest level of
    /// all, gathered after each busy sub-step's kicks; an idle one drifts
    /// (and builds, where `--rebuild` puts a build) with no exchange.
    async fn block_step(&mut self, ctx: &GpuContext, comm: &dyn Comm) -> Result<()> {
        let (d, q) = (&ctx.device, &ctx.queue);
        let block = self.block.as_ref().expect("a block-step run");
        let mut encoder = d.create_command_encoder(&Default::default());
        block.encode_open(d, &mut encoder, &self.solver.tree, None);
        q.submit(Some(encoder.finish()));
        let last = block.substeps();
        let mut deepest = deepest_of_all(ctx, comm, block).await?;
        for s in 1..=last {
            let mut encoder = d.create_command_encoder(&Default::default());
            block.encode_particles(d, &mut encoder, ParticlePass::Drift, s, None);
            if !block.is_busy(s, deepest) {
                self.solver
                    .tree
                    .encode_scheduled_groups(d, &mut encoder, None);
                q.submit(Some(encoder.finish()));
                continue;
            }
            q.submit(Some(encoder.finish()));
            self.solver
                .evaluate_selected(ctx, comm, |e| block.encode_select(d, e, s, None))
                .await?;
            let mut encoder = d.create_command_encoder(&Default::default());
            block.encode_particles(d, &mut encoder, ParticlePass::Kick, s, None);
            q.submit(Some(encoder.finish()));
            if s < last {
                deepest = deepest_of_all(ctx, comm, block).await?;
            }
        }
        Ok(())
    }

    /// Whether the domains are redrawn after a step of `step_s` seconds on
    /// this rank: the same answer on every rank (from what they all see).
    fn redraw_due(&mut self, comm: &dyn Comm, step_s: f64) -> bool {
        self.steps_since_redraw += 1;
        let lost = self.drift.note(step_s);
        // Right after a redraw the imports are as small as the domains
        // make them: another would not help.
        let crowded =
            self.steps_since_redraw > 1 && self.solver.import_room_used() > CROWDED_IMPORTS;
        let all = allgather_records(comm, &[lost, self.rebalance_s, crowded as u8 as f64]);
        let most = |k: usize| all.iter().map(|v| v[k]).fold(0.0, f64::max);
        let due = match self.params.rebalance {
            Rebalance::Every(k) => k > 0 && self.steps.is_multiple_of(k),
            Rebalance::WhenItPays => most(0) > most(1),
        };
        if !due && most(2) > 0.0 {
            self.redraws_for_imports += 1;
            return true;
        }
        due
    }

    /// Redraws the domains from the work of the last walk and moves the
    /// particles (their forces travel with them: the next step kicks with
    /// them).
    pub async fn rebalance(&mut self, ctx: &GpuContext, comm: &dyn Comm) -> Result<()> {
        let mut parts = RedrawParts::default();
        let (state, ids) = self.redrawn(ctx, comm, &mut parts).await?;
        let clock = std::time::Instant::now();
        // The solver keeps its report (a log line after a redraw showed a
        // new solver's empty one) and, where they hold the new state, its
        // arrays.
        self.solver
            .redrawn(ctx, &state, room_for(state.n, self.capacity))?;
        let cube = parts.decompose.frame.system_cube();
        self.solver.tree.set_system_cube(&ctx.queue, cube);
        (self.leapfrog, self.block) = integrators(ctx, &state, &self.solver, &self.params);
        parts.setup_s = clock.elapsed().as_secs_f64();
        self.state = state;
        self.ids = ids;
        self.rebalance_s = parts.total();
        self.redraw_parts = parts;
        self.redraws += 1;
        self.drift = DriftAccount::default();
        self.steps_since_redraw = 0;
        Ok(())
    }

    /// This rank's particles and their global ids after the domains are
    /// redrawn on the GPU (`migration::redraw`: only the particles that
    /// change rank cross the host), leaving the run as it is: what
    /// `rebalance` moves to. Every rank calls it together.
    pub async fn redrawn(
        &self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        parts: &mut RedrawParts,
    ) -> Result<(GpuParticles, GlobalIds)> {
        self.redrawn_within(ctx, comm, self.capacity, parts).await
    }

    /// `redrawn` with no rank given more than `capacity` particles (at
    /// most what its GPU holds: `redrawn` gives that).
    pub async fn redrawn_within(
        &self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        capacity: u64,
        parts: &mut RedrawParts,
    ) -> Result<(GpuParticles, GlobalIds)> {
        self.solver.finish(ctx).await?;
        let clock = std::time::Instant::now();
        let redrawn = migration::redraw(
            ctx,
            comm,
            (&self.solver.tree, &self.ids),
            Moment::Running,
            capacity.min(self.capacity),
            &mut parts.decompose,
        )
        .await?;
        parts.decompose_s = clock.elapsed().as_secs_f64();
        Ok(redrawn)
    }

    /// This rank's particles as they are on the GPU (after the last
    /// evaluation's walks), with their global ids and (`with_work`) the
    /// interactions of the last walk as their work.
    pub async fn local_particles(
        &self,
        ctx: &GpuContext,
        with_work: bool,
    ) -> Result<RankParticles> {
        self.solver.finish(ctx).await?;
        let s = self.state.read(ctx).await?;
        let ids = self.ids.read(ctx).await?;
        // (Mapped on every core: 2^24 particles a rank.)
        let work = if with_work {
            // Cell interactions cost about twice a particle's (a
            // quadrupole's terms).
            self.solver
                .tree
                .interaction_counts(ctx)
                .await?
                .par_iter()
                .map(|c| c.pp as f32 + 2.0 * c.pc as f32)
                .collect()
        } else {
            vec![1.0; s.pos_mass.len()]
        };
        Ok(RankParticles {
            id: s.index.par_iter().map(|&i| ids[i as usize]).collect(),
            pos_mass: s.pos_mass,
            vel: s.vel,
            acc_pot: s.acc_pot,
            work,
        })
    }

    /// Energies and momenta of the whole system (every rank together), the
    /// potential summed as `rule` says, as a one-GPU run's: the precise
    /// way (every rank gathers every particle's mass and position and sums
    /// its own particles' potentials against all of them: in f64 on the
    /// host up to `energy::HOST_MAX` in all, in double-single on its GPU
    /// above, so P ranks share the N² work) or from the solver's own
    /// potentials (each rank's local tree and imported ones), each rank's
    /// sums then taken on its GPU (`GpuDiagnostics`) unless block steps'
    /// levels are counted.
    pub async fn diagnostics(
        &mut self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        rule: PotentialRule,
    ) -> Result<ClusterDiagnostics> {
        self.solver.finish(ctx).await?;
        let counts = allgather_records(comm, &[self.state.n as u64]);
        let counts: Vec<u64> = counts.iter().map(|c| c[0]).collect();
        let particles: u64 = counts.iter().sum();
        // A tree's bound, as on one GPU.
        let precise = particles <= rule.precise_up_to(HOST_MAX) as u64;
        let (sum, potential_sum, levels) = match (precise, &self.block) {
            // The solver's potential and no levels to count: summed on the
            // GPU, the state left there (a rank's read-back of 2^27
            // particles is 7 GB).
            (false, None) => {
                let sum = self
                    .gpu_diagnostics
                    .get_or_insert_with(|| GpuDiagnostics::new(&ctx.device))
                    .sum(ctx, &self.state)
                    .await?;
                (sum, PotentialSum::Solver, None)
            }
            _ => {
                self.diagnostics_on_host(ctx, comm, &counts, precise)
                    .await?
            }
        };
        let all = allgather_records(comm, &sum.to_lanes());
        let mut total = DiagnosticsSum::default();
        for lanes in &all {
            total.merge(&DiagnosticsSum::from_lanes(
                &lanes[..].try_into().expect("15 lanes"),
            ));
        }
        Ok(ClusterDiagnostics {
            diagnostics: total.finish(),
            potential_sum,
            particles,
            fewest: counts.iter().copied().min().unwrap_or(0),
            most: counts.iter().copied().max().unwrap_or(0),
            levels,
        })
    }

    /// `diagnostics`' sums of this rank's particles from its state read
    /// back: where the potential is summed the precise way (`precise`),
    /// or block steps' levels are counted from the velocities. Every rank
    /// calls it (the levels and the particles are gathered).
    async fn diagnostics_on_host(
        &mut self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        counts: &[u64],
        precise: bool,
    ) -> Result<(DiagnosticsSum, PotentialSum, Option<Vec<u64>>)> {
        let s = self.state.read(ctx).await?;
        let levels = self.block.as_ref().map(|b| {
            let all = allgather_records(comm, &level_counts(&s.vel, b.levels()));
            (0..=b.levels() as usize)
                .map(|k| all.iter().map(|mine| mine[k]).sum())
                .collect()
        });
        let mut sum = DiagnosticsSum::default();
        let potential_sum = if precise {
            let mine: Vec<[f64; 4]> = s
                .pos_mass
                .iter()
                .map(|p| [p.pos[0], p.pos[1], p.pos[2], p.mass].map(f64::from))
                .collect();
            let all = allgather_records(comm, &mine).concat();
            drop(mine);
            let mass: Vec<f64> = all.iter().map(|a| a[3]).collect();
            let pos: Vec<[f64; 3]> = all.iter().map(|a| [a[0], a[1], a[2]]).collect();
            drop(all);
            // This rank's particles, in rank order among all.
            let first: u64 = counts[..comm.rank()].iter().sum();
            let sinks = first as usize..(first as usize + s.pos_mass.len());
            let (pot, how) = precise_potentials_of(
                ctx,
                &mut self.energy_kernel,
                &mass,
                &pos,
                self.params.tree.eps as f64,
                sinks.clone(),
            )
            .await?;
            for ((k, p), v) in sinks.zip(pot).zip(&s.vel) {
                sum.add(mass[k], pos[k], v.vel.map(f64::from), p);
            }
            how
        } else {
            // On every core, as one GPU sums its read-out.
            sum.add_records(&s.pos_mass, &s.vel, &s.acc_pot);
            PotentialSum::Solver
        };
        Ok((sum, potential_sum, levels))
    }

    /// Every rank's particles on rank `root`, in id order (every rank
    /// calls it; the others get `None`), forces included.
    pub async fn gather_particles(
        &self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        root: usize,
    ) -> Result<Option<RankParticles>> {
        let mine = self.local_particles(ctx, false).await?;
        let mut to = vec![Vec::new(); comm.size()];
        to[root] = to_bytes(&mine);
        drop(mine);
        let got = comm.alltoall(to);
        if comm.rank() != root {
            return Ok(None);
        }
        joined_by_id(got).map(Some)
    }

    /// The whole state on rank `root` as a snapshot, in id order, with
    /// potentials (every rank calls it; the others get `None`).
    pub async fn gather(
        &self,
        ctx: &GpuContext,
        comm: &dyn Comm,
        root: usize,
    ) -> Result<Option<Snapshot>> {
        let Some(all) = self.gather_particles(ctx, comm, root).await? else {
            return Ok(None);
        };
        Ok(Some(Snapshot {
            time: self.time(),
            potential: Some(all.acc_pot.iter().map(|a| a.pot).collect()),
            types: self.kinds_of(&all.id),
            particles: Particles {
                pos_mass: all.pos_mass,
                vel: all.vel,
                id: all.id,
            },
            softening: self.params.tree.eps,
        }))
    }

    /// This rank's part as a snapshot (its particles in its order).
    pub async fn part(&self, ctx: &GpuContext) -> Result<Snapshot> {
        let mine = self.local_particles(ctx, false).await?;
        Ok(self.snapshot_of(mine))
    }

    /// This rank's part of the whole state in id order (every rank calls
    /// it): the ranks' parts in rank order are the one-GPU run's snapshot,
    /// which `snapshot::parted` writes into one file. An error here (a
    /// failed read-back) is this rank's alone: the run must end every
    /// rank (`MPI_Abort`), as any error once the ranks run does.
    pub async fn id_ordered_part(&self, ctx: &GpuContext, comm: &dyn Comm) -> Result<Snapshot> {
        Ok(self.snapshot_of(self.id_ordered_particles(ctx, comm).await?))
    }

    /// This rank's part of every rank's particles in id order, forces
    /// included (as `id_ordered_part`: what a checkpoint written in parts
    /// holds).
    pub async fn id_ordered_particles(
        &self,
        ctx: &GpuContext,
        comm: &dyn Comm,
    ) -> Result<RankParticles> {
        let mine = self.local_particles(ctx, false).await?;
        sort_by_id(comm, mine)
    }

    /// `mine` as a snapshot at the run's time, with potentials and kinds.
    fn snapshot_of(&self, mine: RankParticles) -> Snapshot {
        Snapshot {
            time: self.time(),
            potential: Some(mine.acc_pot.iter().map(|a| a.pot).collect()),
            types: self.kinds_of(&mine.id),
            particles: Particles {
                pos_mass: mine.pos_mass,
                vel: mine.vel,
                id: mine.id,
            },
            softening: self.params.tree.eps,
        }
    }

    /// The kinds of the particles `ids` (`kinds`).
    pub fn kinds_of(&self, ids: &[u64]) -> Option<Vec<u8>> {
        self.kinds.as_ref().map(|k| k.of(ids))
    }
}

/// The shared steps' leapfrog and (`params.block`) the block steps'
/// kernels of a state and its solver, whose tree they set to build every
/// `params.rebuild` evaluations.
fn integrators(
    ctx: &GpuContext,
    state: &GpuParticles,
    solver: &DistributedTree,
    params: &ClusterParams,
) -> (Leapfrog, Option<BlockSteps>) {
    solver.tree.set_rebuild_every(params.rebuild);
    let leapfrog = Leapfrog::new(&ctx.device, state, params.dt as f32);
    let block = params
        .block
        .map(|config| BlockSteps::new(&ctx.device, &ctx.queue, &solver.tree, config));
    (leapfrog, block)
}

/// The deepest block-step level of every rank's particles after the last
/// kicks (every rank calls it), which each rank's next drifts then see.
async fn deepest_of_all(ctx: &GpuContext, comm: &dyn Comm, block: &BlockSteps) -> Result<u32> {
    let mine = block.deepest(ctx).await?;
    let deepest = allgather_records(comm, &[mine])
        .iter()
        .map(|d| d[0])
        .max()
        .unwrap_or(mine);
    block.set_deepest(&ctx.queue, deepest);
    Ok(deepest)
}

/// A rank's particles before its first domains: on the host (a file's,
/// a checkpoint's, a galaxy's share), or sampled on its GPU and left
/// there (`Model::sample_share_on_gpu`: the particles of the host's share
/// of the same model, to the bit).
pub enum FirstShare {
    Host(RankParticles),
    Sampled(Sampled),
}

impl From<RankParticles> for FirstShare {
    fn from(p: RankParticles) -> Self {
        FirstShare::Host(p)
    }
}

impl FirstShare {
    fn len(&self) -> usize {
        match self {
            FirstShare::Host(p) => p.len(),
            FirstShare::Sampled(s) => s.count,
        }
    }

    /// The particles on the host (a sampled share read back).
    async fn on_host(self, ctx: &GpuContext) -> Result<RankParticles> {
        match self {
            FirstShare::Host(p) => Ok(p),
            FirstShare::Sampled(s) => {
                let p = s.read(ctx).await?;
                Ok(RankParticles::of_range(&p, 0..p.len()))
            }
        }
    }

    /// The particles and their ids on the GPU, with room for `room` ids:
    /// uploaded, or where they were sampled (their ids written there).
    fn on_gpu(self, ctx: &GpuContext, room: u32) -> Result<(GpuParticles, GlobalIds)> {
        match self {
            FirstShare::Host(p) => upload_with_ids(ctx, p, room),
            FirstShare::Sampled(s) => {
                let (first, n) = (s.first as u64, s.count as u32);
                Ok((s.into_state(ctx), GlobalIds::sequence(ctx, first, n, room)))
            }
        }
    }
}

/// A run's first domains, and this rank's solver set up for them: each
/// rank's `mine` is uploaded as it is (or left where it was sampled), a
/// solver set up on it, and the
/// domains drawn on the GPU as every later redraw is drawn
/// (`migration::redraw`), by particle count (no walk has counted work
/// yet; `mine.work` is not read; the forces stay behind, as the first
/// evaluation makes them). The particles and their order are
/// `decompose`'s and `upload`'s on the host with a work of 1 each
/// (`tests/cluster.rs`), without the host's keys, gathers and copies (6 s
/// of a start at 1.26·10^8 particles a rank, 2026-12-01). Where some rank
/// holds none, or more than a GPU holds (a file read whole by one rank),
/// the host decomposes instead. Every rank calls it together; `parts`
/// gets the times.
pub async fn first_domains(
    ctx: &GpuContext,
    comm: &dyn Comm,
    mine: FirstShare,
    (config, capacity): (TreeConfig, u64),
    parts: &mut RedrawParts,
) -> Result<(DistributedTree, GpuParticles, GlobalIds)> {
    let held = allgather_records(comm, &[mine.len() as u64]);
    let on_gpu = held.iter().all(|c| (1..=capacity).contains(&c[0]));
    if !on_gpu {
        parts.on_host = true;
        let mut mine = mine.on_host(ctx).await?;
        mine.work.fill(1.0);
        let clock = std::time::Instant::now();
        let mine = decompose_timed(comm, mine, capacity, &mut parts.decompose)?;
        parts.decompose_s = clock.elapsed().as_secs_f64();
        let clock = std::time::Instant::now();
        let room = room_for(mine.len() as u32, capacity);
        let (state, ids) = upload_with_ids(ctx, mine, room)?;
        parts.upload_s = clock.elapsed().as_secs_f64();
        let clock = std::time::Instant::now();
        let solver = DistributedTree::with_room(ctx, &state, config, room)?;
        parts.setup_s = clock.elapsed().as_secs_f64();
        return Ok((solver, state, ids));
    }
    let clock = std::time::Instant::now();
    let n = mine.len() as u32;
    let (dealt, dealt_ids) = mine.on_gpu(ctx, n)?;
    parts.upload_s = clock.elapsed().as_secs_f64();
    let clock = std::time::Instant::now();
    let mut solver = DistributedTree::with_room(ctx, &dealt, config, room_for(dealt.n, capacity))?;
    parts.setup_s = clock.elapsed().as_secs_f64();
    let clock = std::time::Instant::now();
    let (state, ids) = migration::redraw(
        ctx,
        comm,
        (&solver.tree, &dealt_ids),
        Moment::Start,
        capacity,
        &mut parts.decompose,
    )
    .await?;
    drop((dealt, dealt_ids));
    parts.decompose_s = clock.elapsed().as_secs_f64();
    let clock = std::time::Instant::now();
    solver.redrawn(ctx, &state, room_for(state.n, capacity))?;
    parts.setup_s += clock.elapsed().as_secs_f64();
    Ok((solver, state, ids))
}

/// `upload` with the ids on the GPU, with room for `room` of them (at
/// least the particles').
fn upload_with_ids(
    ctx: &GpuContext,
    mine: RankParticles,
    room: u32,
) -> Result<(GpuParticles, GlobalIds)> {
    let (state, ids) = upload(ctx, mine)?;
    Ok((state, GlobalIds::upload(ctx, &ids, room)))
}

/// Uploads a rank's particles (forces included, for the next kick).
/// Its particles on the GPU in their order, and their global ids.
pub fn upload(ctx: &GpuContext, mine: RankParticles) -> Result<(GpuParticles, Vec<u64>)> {
    let local = StateReadback {
        index: (0..mine.len() as u32).collect(),
        pos_mass: mine.pos_mass,
        vel: mine.vel,
        acc_pot: mine.acc_pot,
    };
    Ok((GpuParticles::restore(ctx, &local)?, mine.id))
}

/// The ranks' particles sorted by id across the ranks (every rank calls
/// it): a sample sort, then one all-to-all. Every rank offers regular
/// samples of its sorted ids, each standing for the particles between it
/// and the next, and the splitters are the weighted quantiles of them all:
/// no rank gets more than its share and one sample's particles, however
/// unevenly the ranks held them. Ids are unique, so the order is total.
fn sort_by_id(comm: &dyn Comm, mine: RankParticles) -> Result<RankParticles> {
    const SAMPLES_PER_RANK: usize = 64;
    let (n, p) = (mine.len(), comm.size());
    let mut order: Vec<usize> = (0..n).collect();
    order.par_sort_unstable_by_key(|&k| mine.id[k]);
    let sorted = mine.select(&order);
    drop(order);
    drop(mine);
    // (id, particles it stands for) pairs.
    let k = n.min(SAMPLES_PER_RANK * p);
    let samples: Vec<[u64; 2]> = (0..k)
        .map(|j| {
            let (at, next) = (j * n / k, (j + 1) * n / k);
            [sorted.id[at], (next - at) as u64]
        })
        .collect();
    let mut all = allgather_records(comm, &samples).concat();
    all.sort_unstable();
    let total: u64 = all.iter().map(|s| s[1]).sum();
    // Rank d gets the ids from splitter d − 1 up to splitter d: splitter
    // d is the first sample past d/p of all the particles.
    let mut splitters = Vec::with_capacity(p);
    let mut below = 0u64;
    for s in &all {
        while splitters.len() + 1 < p && below >= (splitters.len() as u64 + 1) * total / p as u64 {
            splitters.push(s[0]);
        }
        below += s[1];
    }
    splitters.resize(p - 1, u64::MAX);
    let cuts: Vec<usize> = std::iter::once(0)
        .chain(
            splitters
                .iter()
                .map(|&s| sorted.id.partition_point(|&id| id < s)),
        )
        .chain(std::iter::once(n))
        .collect();
    let to = (0..p)
        .map(|d| range_bytes(&sorted, cuts[d]..cuts[d + 1]))
        .collect();
    drop(sorted);
    joined_by_id(comm.alltoall(to))
}

/// The particles of `parts` (each as `to_bytes` wrote it) in id order.
fn joined_by_id(parts: Vec<Vec<u8>>) -> Result<RankParticles> {
    let mut all = RankParticles::default();
    for bytes in parts {
        let part = from_bytes(&bytes)?;
        all.pos_mass.extend(part.pos_mass);
        all.vel.extend(part.vel);
        all.acc_pot.extend(part.acc_pot);
        all.id.extend(part.id);
        all.work.extend(part.work);
    }
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.par_sort_unstable_by_key(|&k| all.id[k]);
    Ok(all.select(&order))
}

/// A rank's particles on the wire (state and ids; no work).
fn to_bytes(p: &RankParticles) -> Vec<u8> {
    range_bytes(p, 0..p.len())
}

/// Particles `r` of `p` as `to_bytes` puts them on the wire.
fn range_bytes(p: &RankParticles, r: std::ops::Range<usize>) -> Vec<u8> {
    let acc_pot = &p.acc_pot[r.clone()];
    wire_bytes(
        &p.pos_mass[r.clone()],
        &p.vel[r.clone()],
        Some(acc_pot),
        &p.id[r],
    )
}

/// Particles on the wire: their count, then each array (`acc_pot`
/// `None`: no forces yet, zeros).
fn wire_bytes(
    pos_mass: &[PosMass],
    vel: &[Velocity],
    acc_pot: Option<&[AccPot]>,
    id: &[u64],
) -> Vec<u8> {
    let n = pos_mass.len();
    let mut out = Vec::with_capacity(n * 56 + 8);
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.extend_from_slice(bytemuck::cast_slice(pos_mass));
    out.extend_from_slice(bytemuck::cast_slice(vel));
    match acc_pot {
        Some(a) => out.extend_from_slice(bytemuck::cast_slice(a)),
        None => out.resize(out.len() + n * std::mem::size_of::<AccPot>(), 0),
    }
    out.extend_from_slice(bytemuck::cast_slice(id));
    out
}

/// Equal shares of `whole`, which rank `root` holds (`None` on the
/// others), dealt out to every rank (every rank calls it): rank r gets
/// particles n·r/P up to n·(r + 1)/P, as `RankParticles::equal_share`
/// cuts them, with no forces yet.
pub fn deal_equal_shares(
    comm: &dyn Comm,
    root: usize,
    whole: Option<&Particles>,
) -> Result<RankParticles> {
    let p = comm.size();
    let to = match whole {
        Some(w) => (0..p)
            .map(|r| {
                let range = RankShare { rank: r, ranks: p }.of(w.len());
                let (pm, v) = (&w.pos_mass[range.clone()], &w.vel[range.clone()]);
                wire_bytes(pm, v, None, &w.id[range])
            })
            .collect(),
        None => vec![Vec::new(); p],
    };
    from_bytes(&comm.alltoall(to)[root])
}

/// This rank's particles of one file that every rank read its own
/// records of (`snapshot::read_share`: particles n·r/P up to
/// n·(r + 1)/P, as `deal_equal_shares` deals them), with the file's kinds
/// by id where any share shows the file has them. Every rank calls it.
pub fn from_file_shares(comm: &dyn Comm, share: FileShare) -> (RankParticles, Option<KindsById>) {
    let particles = share.snap.particles;
    let typed = allgather_records(comm, &[share.typed as u64])
        .iter()
        .any(|t| t[0] == 1);
    let kinds = typed.then(|| {
        let types = share.snap.types.expect("a share's kinds, each particle's");
        kinds_of_shares(comm, &particles.id, &types)
    });
    // The share's arrays moved, not copied (a rank holds them once).
    let n = particles.len();
    let mine = RankParticles {
        pos_mass: particles.pos_mass,
        vel: particles.vel,
        acc_pot: vec![AccPot::default(); n],
        id: particles.id,
        work: vec![1.0; n],
    };
    (mine, kinds)
}

/// The kinds by id of every rank's `ids` (their `kinds`). Each rank's
/// spans of one kind join where they do not reach over another's of
/// another kind (a file in id order, or in any order with its kinds in
/// ranges of ids: a model's components, a Gadget file's types); where ids
/// of different kinds interleave, or the spans would be about as many as
/// the particles, every rank's ids and kinds are gathered instead.
pub fn kinds_of_shares(comm: &dyn Comm, ids: &[u64], kinds: &[u8]) -> KindsById {
    let spans = KindsById::spans(ids, kinds);
    let sizes = allgather_records(comm, &[[spans.len() as u64, ids.len() as u64]]);
    let (spans_in_all, n): (u64, u64) = (
        sizes.iter().map(|s| s[0][0]).sum(),
        sizes.iter().map(|s| s[0][1]).sum(),
    );
    if spans_in_all <= n / 4 {
        if let Some(joined) = KindsById::from_spans(allgather_records(comm, &spans)) {
            return joined;
        }
    }
    let pairs: Vec<[u64; 2]> = ids
        .iter()
        .zip(kinds)
        .map(|(&id, &kind)| [id, kind as u64])
        .collect();
    let all: Vec<[u64; 2]> = allgather_records(comm, &pairs).concat();
    let (ids, kinds): (Vec<u64>, Vec<u8>) = all.iter().map(|p| (p[0], p[1] as u8)).unzip();
    KindsById::new(&ids, &kinds)
}

fn from_bytes(bytes: &[u8]) -> Result<RankParticles> {
    let bad = || Error::InvalidParameter("a rank's particles arrived damaged".into());
    let n = u64::from_le_bytes(bytes.get(..8).ok_or_else(bad)?.try_into().unwrap()) as usize;
    if bytes.len() != 8 + n * 56 {
        return Err(bad());
    }
    let mut at = 8;
    let mut take = |size: usize| {
        let s = &bytes[at..at + n * size];
        at += n * size;
        s
    };
    Ok(RankParticles {
        pos_mass: bytemuck::pod_collect_to_vec(take(16)),
        vel: bytemuck::pod_collect_to_vec(take(16)),
        acc_pot: bytemuck::pod_collect_to_vec::<u8, AccPot>(take(16)),
        id: bytemuck::pod_collect_to_vec(take(8)),
        work: vec![1.0; n],
    })
}

#[cfg(test)]
mod tests {
    use super::{deal_equal_shares, sort_by_id, DriftAccount, RankParticles};
    use crate::cluster::comm::{Comm, ThreadComm};

    #[test]
    fn ranks_sort_their_particles_by_id_together() {
        // Ids over 3 ranks unevenly (rank 1 holds none, rank 0 the 4000
        // smallest, in no order); the sorted parts in rank order are every
        // id once, in order, each particle's record with it, and no rank
        // holds more than its share and a sample's particles.
        let mut ids: Vec<u64> = (0..5000u64)
            .map(|k| (k * 7919) % 5003 + (k % 3) * (1 << 50))
            .collect();
        ids.sort_unstable();
        ids[..4000].reverse();
        ids[4000..].rotate_left(300);
        let shares = [0..4000, 4000..4000, 4000..5000];
        let parts: Vec<RankParticles> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadComm::ranks(3)
                .into_iter()
                .map(|comm| {
                    let mine = &ids[shares[comm.rank()].clone()];
                    s.spawn(move || {
                        let mut p = RankParticles {
                            id: mine.to_vec(),
                            work: vec![1.0; mine.len()],
                            ..Default::default()
                        };
                        p.pos_mass = mine
                            .iter()
                            .map(|&id| crate::gpu::layout::PosMass {
                                pos: [id as f32, 0.0, 0.0],
                                mass: (id % 11) as f32,
                            })
                            .collect();
                        p.vel = vec![Default::default(); mine.len()];
                        p.acc_pot = vec![Default::default(); mine.len()];
                        sort_by_id(&comm, p).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: Vec<u64> = parts.iter().flat_map(|p| p.id.clone()).collect();
        let mut expected = ids.clone();
        expected.sort_unstable();
        assert_eq!(all, expected);
        for p in &parts {
            // 4000 / 192 particles a sample on rank 0.
            assert!(
                p.len().abs_diff(5000 / 3) <= 22,
                "a rank got {} of 5000",
                p.len()
            );
            for (id, pm) in p.id.iter().zip(&p.pos_mass) {
                assert_eq!((pm.pos[0], pm.mass), (*id as f32, (id % 11) as f32));
            }
        }
    }

    #[test]
    fn rank_0_deals_out_equal_shares() {
        let whole = crate::state::Model::Plummer.generate(1001, 2).unwrap();
        let shares: Vec<RankParticles> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadComm::ranks(3)
                .into_iter()
                .map(|comm| {
                    let whole = (comm.rank() == 0).then_some(&whole);
                    s.spawn(move || deal_equal_shares(&comm, 0, whole).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (r, share) in shares.iter().enumerate() {
            let expected = RankParticles::equal_share(&whole, r, 3);
            assert_eq!(share.id, expected.id, "rank {r}");
            assert_eq!(share.pos_mass, expected.pos_mass, "rank {r}");
            assert_eq!(share.vel, expected.vel, "rank {r}");
            assert_eq!(share.acc_pot, expected.acc_pot, "rank {r}");
        }
    }

    /// Ranks that read their own records of one file have what rank 0
    /// would deal them, and the file's kinds by id, whether the ranks'
    /// ids lie in ranges apart (the file in id order) or interleave.
    #[test]
    fn shares_read_by_every_rank_are_the_dealt_ones_with_the_files_kinds() {
        use crate::snapshot::{self, Format, Snapshot};
        use crate::state::kinds_by_id::KindsById;
        use crate::state::share::RankShare;
        let n = 1001;
        let path =
            std::env::temp_dir().join(format!("webgrav-run-shares-{}.bonsai", std::process::id()));
        let path = path.to_str().unwrap();
        // The file in id order; in no id order (its kinds in ranges of
        // ids, as a model's components and a Gadget file's types are); in
        // no order with kinds that interleave by id.
        for (interleaved, kinds_by_id_range) in [(false, true), (true, true), (true, false)] {
            let mut particles = crate::state::Model::Plummer.generate(n, 3).unwrap();
            if interleaved {
                particles.id = (0..n as u64).map(|k| (k * 617) % n as u64).collect();
            }
            // Halo, disk and bulge: three kinds of record and id range, the
            // file holding its dark records, then its star ones.
            let third = |k: usize| [1, 2, 3][3 * k / n];
            let types = match kinds_by_id_range {
                true => particles.id.iter().map(|&id| third(id as usize)).collect(),
                false => (0..n).map(third).collect(),
            };
            let snap = Snapshot {
                time: 0.5,
                particles,
                softening: 0.0,
                potential: None,
                types: Some(types),
            };
            std::fs::write(path, Format::TipsyBonsai.encode(&snap).unwrap()).unwrap();
            let whole = snapshot::read_file(path).unwrap();
            let kinds = KindsById::new(&whole.particles.id, whole.types.as_ref().unwrap());
            let got: Vec<(RankParticles, Option<KindsById>)> = std::thread::scope(|s| {
                let handles: Vec<_> = ThreadComm::ranks(3)
                    .into_iter()
                    .map(|comm| {
                        s.spawn(move || {
                            let share = RankShare {
                                rank: comm.rank(),
                                ranks: 3,
                            };
                            let read = snapshot::read_share(path, share, |_| Ok(()));
                            super::from_file_shares(&comm, read.unwrap().unwrap())
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for (r, (share, shared_kinds)) in got.iter().enumerate() {
                let expected = RankParticles::equal_share(&whole.particles, r, 3);
                assert_eq!(share.id, expected.id, "rank {r}");
                assert_eq!(share.pos_mass, expected.pos_mass, "rank {r}");
                assert_eq!(share.vel, expected.vel, "rank {r}");
                assert_eq!(share.work, expected.work, "rank {r}");
                assert_eq!(
                    shared_kinds.as_ref(),
                    Some(&kinds),
                    "rank {r}, interleaved {interleaved}, kinds by id range {kinds_by_id_range}"
                );
            }
        }
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn drift_pays_for_a_redraw_after_the_steps_lost_what_it_cost() {
        // Steps slowing by 1 ms each from 20 ms (the trees growing): after
        // k steps 0 + 1 + … + (k − 1) ms are lost, past a 100 ms redraw at
        // the 15th (105 ms).
        let mut drift = DriftAccount::default();
        let due = (1..=40)
            .find(|&k| drift.note(0.020 + 0.001 * (k - 1) as f64) > 0.100)
            .unwrap();
        assert_eq!(due, 15);
        // Steady steps lose nothing, whatever their order: no redraw.
        let mut steady = DriftAccount::default();
        for k in 0..1000 {
            steady.note(0.020 + if k % 2 == 0 { 0.0 } else { 1e-9 });
        }
        assert!(steady.lost_s < 1e-5, "{}", steady.lost_s);
        // A first slow step (say, a cold start) counts against the faster
        // ones only from when they come.
        let mut cold = DriftAccount::default();
        cold.note(0.5);
        assert_eq!(cold.note(0.02), 0.0);
    }
}
