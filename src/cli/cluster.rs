//! `webgrav run` under `mpirun -np P` (feature `mpi`): the tree code on P
//! GPUs, one per rank (`cluster`). Every rank parses the same arguments
//! and checks them alike, so a refused run ends on every rank with the
//! same message (said once, by rank 0); an error after the ranks started
//! talking ends the whole run (MPI_Abort), since its partners would wait
//! for it forever.
//!
//! What a parallel run offers today: a model (sampled in parallel, each
//! rank its own chunks of it, the particles one GPU samples) or an input
//! file, the tree with θ or α,
//! shared or block leapfrog steps, any `--rebuild`, the run log (its energies summed as
//! `--potential-sum` says, as on one GPU), the end state in one `--out`
//! file (each rank writing its own records there; HDF5 gathered in rank
//! 0), a series of per-rank parts named as Bonsai names them
//! (`--snap-every` with `--bonsai-names`), and checkpoints in the format
//! of one GPU's (each rank writing its own records, each reading back only
//! its share of them), which resume on any number
//! of ranks or on one GPU. The rest is refused by name.

use super::run::{
    check_outputs, deepest_occupied, norm, resolve, run_resolved, say_unused_levels, value, Log,
    Request, RunArgs,
};
use super::{emit, say};
use crate::cluster::comm::{allgather_records, Comm, CommRanks, CommSums};
use crate::cluster::decomposition::RankParticles;
use crate::cluster::mpi::{local_rank, MpiComm};
use crate::cluster::run::{
    deal_equal_shares, from_file_shares, kinds_of_shares, ClusterParams, ClusterRun, FirstShare,
    Rebalance,
};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::run::block::Timesteps;
use crate::run::checkpoint::{self, Checkpoint, EngineState, Preamble};
use crate::run::leapfrog::block_config;
use crate::run::params::RunParams;
use crate::run::schedule::whole_steps;
use crate::run::SolverKind;
use crate::snapshot::{self, parted, FileShare, Format, Snapshot};
use crate::state::diagnostics::Diagnostics;
use crate::state::kinds_by_id::KindsById;
use crate::state::particles::StateReadback;
use crate::state::share::{RankShare, Share};
use crate::state::Particles;
use crate::tree::TreeConfig;
use std::process::ExitCode;

/// `webgrav run` started by `mpirun`: on every rank with several, as one
/// process (`run::run`) with one.
pub async fn run_under_mpirun(a: RunArgs) -> Result<ExitCode> {
    let comm = MpiComm::init()?;
    if comm.size() == 1 {
        drop(comm);
        let (a, resumed) = resolve(a, None)?;
        return run_resolved(a, resumed).await;
    }
    // Each rank reads only its share of a checkpoint's particles.
    let share = RankShare {
        rank: comm.rank(),
        ranks: comm.size(),
    };
    // (Each rank read its own share, and on a cluster perhaps its own
    // host's copy of the file: one may fail where the others do not.)
    let (a, resumed) = match agreed(&comm, resolve(a, Some(share))) {
        Ok(resolved) => resolved,
        Err(refused) => return Ok(refused),
    };
    // Copies that differ but read well (another time, another run) would
    // set the ranks on different runs.
    if let Some(c) = &resumed {
        let mine = [c.run_id, c.time.to_bits(), c.steps, c.ids.len() as u64];
        if allgather_records(&comm, &mine)
            .iter()
            .any(|o| o[..] != mine[..])
        {
            let e = Error::InvalidParameter(format!(
                "the ranks found different checkpoints at {} (another run, time or N on \
                 some host)",
                a.resume.as_deref().unwrap_or("--resume")
            ));
            return Ok(refused_by_every_rank(&comm, Some(&e)));
        }
    }
    run(a, comm, resumed).await
}

/// Keeps the memory the process frees for its next allocations, as Open
/// MPI's own advice for fast transfers has it (`MALLOC_MMAP_MAX_=0`,
/// `MALLOC_TRIM_THRESHOLD_=-1`): every step allocates and frees tens of
/// megabytes (the trees on their way, the messages), which glibc would
/// otherwise map afresh and fault in page by page, at about 1 GB/s on the
/// H200 host; kept, the steps of a 2^25-particle run on two GPUs took half
/// the time (BENCHMARKS.md, issue 46).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters (under its
    // lock).
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
    }
}

/// Runs `a` (or continues `resumed`, read by every rank) on the ranks of
/// `comm` (every rank calls it).
async fn run(a: RunArgs, comm: MpiComm, resumed: Option<Checkpoint>) -> Result<ExitCode> {
    keep_freed_memory();
    let plan = match agreed(&comm, check(&a, resumed.as_ref())) {
        Ok(plan) => plan,
        Err(refused) => return Ok(refused),
    };
    match run_checked(&a, &comm, plan, resumed).await {
        Ok(code) => Ok(code),
        Err(e) => {
            say!("webgrav: rank {} of {}: {e}", comm.rank(), comm.size());
            comm.abort(1)
        }
    }
}

/// Ends a run that every rank refuses alike, before the ranks work
/// together: each found the same error, or some ranks found one (`e`
/// where it is known). Rank 0 says the first rank's, once, and the others
/// wait for that (mpirun ends the job at the first rank that fails, which
/// could cut rank 0 short).
fn refused_by_every_rank(comm: &dyn Comm, e: Option<&Error>) -> ExitCode {
    let said = e.map_or(String::new(), |e| e.to_string());
    let all = comm.allgather(said.as_bytes());
    if let (0, Some(first)) = (comm.rank(), all.iter().find(|m| !m.is_empty())) {
        say!("webgrav: error: {}", String::from_utf8_lossy(first));
    }
    comm.barrier();
    ExitCode::FAILURE
}

/// `outcome`, of a step every rank took on its own, where every rank's
/// succeeded; otherwise the exit code of a run refused on every rank
/// (`refused_by_every_rank`), so that no rank goes on into collectives
/// that the others have left.
pub(super) fn agreed<T>(comm: &dyn Comm, outcome: Result<T>) -> std::result::Result<T, ExitCode> {
    let failed = allgather_records(comm, &[outcome.is_err() as u64])
        .iter()
        .any(|f| f[0] == 1);
    match outcome {
        Ok(done) if !failed => Ok(done),
        Ok(_) => Err(refused_by_every_rank(comm, None)),
        Err(e) => Err(refused_by_every_rank(comm, Some(&e))),
    }
}

/// Where a run's first particles come from.
enum Input {
    /// The model `--model` names.
    Model,
    /// One input file, read by rank 0 (`None` on the others).
    Whole(Option<Snapshot>),
    /// One snapshot (Tipsy, or Gadget-2 of one file or several), each
    /// rank's share read by that rank.
    Shared(FileShare),
    /// An input file in per-process parts: their paths, in order.
    Parts(Vec<String>),
}

/// What a checked request asks of the ranks.
struct Plan {
    run_params: RunParams,
    params: ClusterParams,
    /// Time and steps at the start (a resumed run's).
    start: (f64, u64),
    /// Steps to take, and between logs, snapshots and checkpoints.
    steps: u64,
    log_steps: u64,
    snap_steps: u64,
    checkpoint_steps: u64,
}

/// Refuses what a parallel run cannot do yet, and checks the rest as a
/// one-GPU run does (the same on every rank: nothing here talks).
fn check(a: &RunArgs, resumed: Option<&Checkpoint>) -> Result<Plan> {
    let unsupported = |what: &str| {
        Err(Error::InvalidParameter(format!(
            "{what} is not offered by runs on several ranks yet; run it on one GPU"
        )))
    };
    let config;
    let p = match resumed {
        Some(c) => {
            if !matches!(c.engine, EngineState::Leapfrog(_)) {
                return unsupported("a Hermite checkpoint");
            }
            &c.params
        }
        None => {
            config = a.solver.config(a.step.dt)?;
            config.params()
        }
    };
    if let Some(what) = p.not_on_several_ranks() {
        return unsupported(&what);
    }
    if a.snap_every > 0.0 && !a.bonsai_names {
        return Err(Error::InvalidParameter(
            "a series of a run on several ranks is written as per-rank parts named as \
             Bonsai names them: add --bonsai-names"
                .into(),
        ));
    }
    Format::named(&a.snap_format)?;
    check_outputs(a)?;
    // An input file's time is known once it is read (`run_checked`).
    let start = resumed.map_or((0.0, 0), |c| (c.time, c.steps));
    let dt = p.dt;
    let every = |name: &str, t: f64| steps_of(name, t, dt);
    Ok(Plan {
        run_params: *p,
        start,
        params: ClusterParams {
            tree: TreeConfig {
                theta: p.theta,
                eps: p.eps,
                alpha: p.alpha,
            },
            dt,
            rebalance: a
                .redraw_every
                .map_or(Rebalance::WhenItPays, Rebalance::Every),
            rebuild: p.rebuild,
            block: (p.timesteps == Timesteps::Block).then(|| block_config(p)),
        },
        steps: steps_to_end(a, start.0, dt)?,
        log_steps: every("--log-every", a.log_every)?,
        snap_steps: every("--snap-every", a.snap_every)?,
        checkpoint_steps: every("--checkpoint-every", a.checkpoint_every)?,
    })
}

/// Steps of `dt` in `t` (0: none), refused unless whole (`name` says
/// what `t` is).
fn steps_of(name: &str, t: f64, dt: f64) -> Result<u64> {
    if t == 0.0 {
        return Ok(0);
    }
    whole_steps(t, dt).ok_or_else(|| {
        Error::InvalidParameter(format!("{name} {t} is not a whole number of steps of {dt}"))
    })
}

/// Steps of `dt` from `start` (a checkpoint's or an input file's time) to
/// `--t-end`.
fn steps_to_end(a: &RunArgs, start: f64, dt: f64) -> Result<u64> {
    if a.t_end < start {
        return Err(Error::InvalidParameter(format!(
            "--t-end {} is before the run's start at t = {start}",
            a.t_end
        )));
    }
    steps_of("--t-end", a.t_end - start, dt).map_err(|_| {
        Error::InvalidParameter(format!(
            "--t-end {} is not a whole number of steps of {dt} after the run's start at t = {start}",
            a.t_end
        ))
    })
}

async fn run_checked(
    a: &RunArgs,
    comm: &MpiComm,
    plan: Plan,
    resumed: Option<Checkpoint>,
) -> Result<ExitCode> {
    let root = comm.rank() == 0;
    let ctx = GpuContext::headless_on_gpu(local_rank()).await?;
    // Each rank names its adapter: which GPU each took is worth seeing.
    let names = comm.allgather(ctx.adapter_summary().as_bytes());
    if root {
        for (r, name) in names.iter().enumerate() {
            say!("rank {r}: {}", String::from_utf8_lossy(name));
        }
    }
    let clock = std::time::Instant::now();
    let (mine, kinds, start_at, e0, run_id) = match resumed {
        Some(c) => {
            let (e0, run_id) = (c.e0, c.run_id);
            let kinds = c.types.as_ref().map(|t| KindsById::new(&c.ids, t));
            let mine = checkpoint_share(c)?.into();
            (mine, kinds, plan.start, e0, run_id)
        }
        None => {
            let input = match a.initial.input.as_deref() {
                None => Input::Model,
                Some(path) => match snapshot::process_parts(path) {
                    Some(parts) => Input::Parts(parts),
                    None => match read_shares(a, comm, path) {
                        Err(refused) => return Ok(refused),
                        Ok(Some(share)) => Input::Shared(share),
                        Ok(None) => {
                            // Rank 0 reads any other file (and deals it
                            // out, `initial_share`), and says once why it
                            // could not.
                            let read = match root {
                                true => Some(a.initial.load_whole().await),
                                false => None,
                            };
                            match agreed(comm, read.transpose()) {
                                Ok(whole) => Input::Whole(whole),
                                Err(refused) => return Ok(refused),
                            }
                        }
                    },
                },
            };
            let (mine, kinds, time) = initial_share(a, &ctx, comm, input).await?;
            (mine, kinds, (time, 0), None, crate::run::new_run_id())
        }
    };
    let generated_s = clock.elapsed().as_secs_f64();
    // An input file starts the run at its own time (every rank read the
    // same one, so every rank finds the same here).
    let mut plan = plan;
    if start_at != plan.start {
        match steps_to_end(a, start_at.0, plan.params.dt) {
            Ok(steps) => (plan.steps, plan.start) = (steps, start_at),
            Err(e) => return Ok(refused_by_every_rank(comm, Some(&e))),
        }
    }
    let mut log = match (&a.log, root) {
        (Some(path), true) => Some(Log::open(path, a.resume.is_some().then_some(start_at.0))?),
        _ => None,
    };
    let mut run = ClusterRun::new(&ctx, comm, mine, start_at, plan.params).await?;
    run.kinds = kinds;
    let rule = a.potential_sum.rule();
    let mut start = run.diagnostics(&ctx, comm, rule).await?;
    // Energies are measured from the run's very start, through resumes.
    if let Some(e0) = e0 {
        start.diagnostics = e0;
    }
    let mut de_max = 0.0f64;
    if root {
        say!(
            "{} particles on {} ranks ({}–{} each), start ready in {:.2} s (initial state {:.2} s)",
            start.particles,
            comm.size(),
            start.fewest,
            start.most,
            clock.elapsed().as_secs_f64(),
            generated_s
        );
    }
    let run_clock = std::time::Instant::now();
    // The steps' own wall time since the last log line (not the writes
    // and diagnostics between them).
    let mut stepping_s = 0.0;
    let mut since_log = 0u64;
    let mut last_levels = None;
    let mut deepest_seen = None;
    for step in 1..=plan.steps {
        let stepping = std::time::Instant::now();
        run.step(&ctx, comm).await?;
        stepping_s += stepping.elapsed().as_secs_f64();
        since_log += 1;
        if plan.snap_steps > 0 && step % plan.snap_steps == 0 {
            write_part(a, &ctx, comm, &run).await?;
        }
        if plan.checkpoint_steps > 0 && step % plan.checkpoint_steps == 0 {
            let path = a.checkpoint.as_deref().expect("checked: --checkpoint");
            let ids = Ids {
                run_id,
                e0: start.diagnostics,
                de_max,
            };
            write_checkpoint(a, path, &ctx, comm, &run, &plan, ids).await?;
        }
        let log_now = (plan.log_steps > 0 && step % plan.log_steps == 0) || step == plan.steps;
        if log_now {
            let d = run.diagnostics(&ctx, comm, rule).await?;
            de_max = de_max.max(d.diagnostics.energy_error(&start.diagnostics));
            let times = LogTimes {
                step_s: stepping_s / since_log as f64,
                wall_s: run_clock.elapsed().as_secs_f64(),
            };
            let line = log_line(comm, &run, &d, &start, de_max, times)?;
            deepest_seen = deepest_seen.max(d.levels.as_deref().and_then(deepest_occupied));
            last_levels = d.levels;
            if let (true, Some(line)) = (root, line) {
                emit(&line)?;
                if let Some(l) = log.as_mut() {
                    l.write(&line)?;
                }
            }
            since_log = 0;
            stepping_s = 0.0;
        }
    }
    if let Some(path) = &a.out {
        write_out(path, &ctx, comm, &run).await?;
    }
    if root {
        say!(
            "{} steps on {} ranks in {:.2} s",
            plan.steps,
            comm.size(),
            run_clock.elapsed().as_secs_f64()
        );
        if let Some(levels) = last_levels {
            say!("block steps: particles per level (dt/2^k) {levels:?}");
        }
        say_unused_levels(deepest_seen, plan.run_params.levels);
    }
    say_peak_memory(comm, run.local_count());
    Ok(ExitCode::SUCCESS)
}

/// Each rank's peak host memory (said by rank 0), as a one-GPU run says
/// its own: what the ranks of one host hold side by side.
fn say_peak_memory(comm: &dyn Comm, particles: u32) {
    let mine = crate::app::host::peak_resident_bytes().unwrap_or(0);
    let all = allgather_records(comm, &[mine, particles as u64]);
    if comm.rank() != 0 || all.iter().any(|r| r[0] == 0) {
        return;
    }
    let each: Vec<String> = all
        .iter()
        .map(|r| {
            let mib = r[0] as f64 / (1 << 20) as f64;
            format!(
                "{mib:.0} MiB ({:.0} B a particle)",
                r[0] as f64 / r[1].max(1) as f64
            )
        })
        .collect();
    say!("peak host memory of each rank: {}", each.join(", "));
}

/// The run's state into one file at `path`, in id order as one GPU
/// writes it: every rank writes its own part of it (`snapshot::parted`),
/// but for HDF5, whose library writes a file from one process (gathered
/// on rank 0).
async fn write_out(path: &str, ctx: &GpuContext, comm: &dyn Comm, run: &ClusterRun) -> Result<()> {
    let format = Format::from_path(path)?;
    let clock = std::time::Instant::now();
    let mut sorted_s = None;
    let written = if parted::writes_in_parts(format) {
        let part = run.id_ordered_part(ctx, comm).await?;
        sorted_s = Some(clock.elapsed().as_secs_f64());
        Some(parted::write_parted(path, format, &part, &CommRanks(comm))?)
    } else {
        match run.gather(ctx, comm, 0).await? {
            Some(snap) => Some(snapshot::write_file(path, &snap)?),
            None => None,
        }
    };
    if let (0, Some(written)) = (comm.rank(), written) {
        for note in written.notes(path) {
            say!("{note}");
        }
        let sorted = sorted_s.map_or(String::new(), |s| {
            format!(" (its particles sorted by id across the ranks in {s:.2} s)")
        });
        say!(
            "wrote {path} in {:.2} s{sorted}",
            clock.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// What a checkpoint keeps of a run beyond its state.
struct Ids {
    run_id: u64,
    e0: Diagnostics,
    de_max: f64,
}

/// The run's checkpoint in the format of a one-GPU run's (any number of
/// ranks, or one GPU, resumes it): the ranks sort their particles by id
/// together, and each writes its own records at their place in the file
/// (`checkpoint::write_parted`), atomically, as `--out` is written.
async fn write_checkpoint(
    a: &RunArgs,
    path: &str,
    ctx: &GpuContext,
    comm: &dyn Comm,
    run: &ClusterRun,
    plan: &Plan,
    ids: Ids,
) -> Result<()> {
    let clock = std::time::Instant::now();
    let mine = run.id_ordered_particles(ctx, comm).await?;
    let sorted_s = clock.elapsed().as_secs_f64();
    // `Run`'s count: time = base_time + base_steps × dt, base_steps the
    // steps since base_time.
    let (base_time, steps_at_base) = run.base();
    let types = run.kinds_of(&mine.id);
    let request = value(&Request::of(a));
    let preamble = Preamble {
        params: &plan.run_params,
        time: run.time(),
        steps: run.steps(),
        base_time,
        base_steps: run.steps() - steps_at_base,
        origin: plan.start.0,
        run_id: ids.run_id,
        ids: &mine.id,
        types: types.as_deref(),
        e0: Some(ids.e0),
        de_max: ids.de_max,
        tree_deepest: crate::tree::layout::MAX_DEPTH,
        request: &request,
    };
    let state = StateReadback {
        pos_mass: mine.pos_mass,
        vel: mine.vel,
        acc_pot: mine.acc_pot,
        index: Vec::new(),
    };
    checkpoint::write_parted(path, &preamble, &state, &CommRanks(comm))?;
    // A signal ends every rank at once (`interrupt`); its last words name
    // this checkpoint, the one to resume.
    super::interrupt::checkpoint_written(path, run.time());
    if comm.rank() == 0 {
        say!(
            "wrote the checkpoint {path} at t = {} in {:.2} s (its particles sorted by id \
             across the ranks in {sorted_s:.2} s)",
            run.time(),
            clock.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// This rank's share of a checkpoint's particles (read as its share:
/// `Checkpoint::read_path_share`), with their forces (the next step kicks
/// with them).
fn checkpoint_share(c: Checkpoint) -> Result<RankParticles> {
    let EngineState::Leapfrog(state) = c.engine else {
        return Err(Error::InvalidParameter(
            "a Hermite checkpoint runs on one GPU".into(),
        ));
    };
    Ok(RankParticles {
        id: state.index.iter().map(|&i| c.ids[i as usize]).collect(),
        work: vec![1.0; state.pos_mass.len()],
        pos_mass: state.pos_mass,
        vel: state.vel,
        acc_pot: state.acc_pot,
    })
}

/// This rank's share of the initial particles, their kinds by id (of a
/// model of several kinds, or a file that has them) and the start time.
async fn initial_share(
    a: &RunArgs,
    ctx: &GpuContext,
    comm: &dyn Comm,
    input: Input,
) -> Result<(FirstShare, Option<KindsById>, f64)> {
    let on_host = |(mine, kinds, time): (RankParticles, _, _)| (mine.into(), kinds, time);
    match input {
        Input::Model => model_share(a, ctx, comm).await,
        Input::Whole(whole) => whole_share(comm, whole).map(on_host),
        Input::Shared(share) => {
            let time = share.snap.time;
            let (mine, kinds) = from_file_shares(comm, share);
            Ok((mine.into(), kinds, time))
        }
        Input::Parts(parts) => parts_share(a, comm, &parts).map(on_host),
    }
}

/// This rank's share of the model, sampled on the ranks' GPUs, each rank
/// its own chunks of it (`Model::generate_share_on`: the same particles as
/// on one GPU); a Plummer sphere's is left there
/// (`Model::sample_share_on_gpu`).
async fn model_share(
    a: &RunArgs,
    ctx: &GpuContext,
    comm: &dyn Comm,
) -> Result<(FirstShare, Option<KindsById>, f64)> {
    let (p, r) = (comm.size(), comm.rank());
    let m = &a.initial.model;
    a.initial.check_units()?;
    let gather = CommSums(comm);
    let share = Share::of_rank(m.n, r, p, &gather);
    // The ranks of one host hold their shares side by side.
    crate::app::host::check_host_memory(share.keep.len() as u64, SolverKind::Tree)?;
    let clock = std::time::Instant::now();
    // Said once (rank 0's time: the ranks sample at once).
    let generated = || {
        if r == 0 {
            say!(
                "generated {} with N = {} on {p} ranks in {:.2} s",
                m.model.name(),
                m.n,
                clock.elapsed().as_secs_f64()
            );
        }
    };
    let on_gpu = (m.model).sample_share_on_gpu(ctx, m.n, m.seed, share.clone());
    if let Some(sampled) = on_gpu.await? {
        generated();
        return Ok((FirstShare::Sampled(sampled), None, 0.0));
    }
    let tagged = (m.model)
        .generate_share_on(ctx, m.n, m.seed, &m.params, share)
        .await?;
    generated();
    let particles = &tagged.particles;
    // Every rank holds the same components, so all or none have kinds.
    let kinds = tagged.types().map(|t| {
        let mine = KindsById::new(&particles.id, &t);
        KindsById::joined(allgather_records(comm, mine.runs()))
    });
    let mine = RankParticles::of_range(particles, 0..particles.len());
    Ok((mine.into(), kinds, 0.0))
}

/// Each rank's share of the input file where it is a Tipsy file (with
/// its side files), a Gadget-2, an HDF5 or a CSV snapshot
/// (`snapshot::read_share`; no rank holds the whole file; a CSV share
/// placed by every share's count of its rows), converted from `--units`;
/// `Ok(None)` where rank 0 is to read it whole (also where any rank could
/// not read a share: the file not on its host). A share that cannot be read (a damaged record, memory the
/// host lacks), or ranks that found different files, end the run on
/// every rank, its error said once (`Err`).
fn read_shares(
    a: &RunArgs,
    comm: &dyn Comm,
    path: &str,
) -> std::result::Result<Option<FileShare>, ExitCode> {
    let (r, p) = (comm.rank(), comm.size());
    let fits = |n: usize| crate::app::host::check_host_memory(n as u64, SolverKind::Tree);
    let read = a.initial.check_units().and_then(|()| {
        let mut share = snapshot::read_share(path, RankShare { rank: r, ranks: p }, fits)?;
        if let Some(s) = &mut share {
            a.initial.to_nbody(&mut s.snap)?;
        }
        Ok(share)
    });
    // [0 (not in shares here), 1 (shares) or 2 (failed), any mass, gas
    // particles, the file's particles (a CSV share's own), its time's
    // bits, whether the share counted its rows].
    let outcome = match &read {
        Ok(None) => [0; 6],
        Ok(Some(s)) => {
            let p = &s.snap.particles;
            let gas = s
                .snap
                .types
                .as_ref()
                .map_or(0, |t| t.iter().filter(|&&k| k == 0).count());
            [
                1,
                p.pos_mass.iter().any(|q| q.mass > 0.0) as u64,
                gas as u64,
                s.n as u64,
                s.snap.time.to_bits(),
                s.counted.is_some() as u64,
            ]
        }
        Err(_) => [2, 0, 0, 0, 0, 0],
    };
    let all = allgather_records(comm, &outcome);
    if all.iter().any(|o| o[0] == 2) {
        return Err(refused_by_every_rank(comm, read.as_ref().err()));
    }
    // Where any rank could not read a share (the file is not there on its
    // host, a CSV file of fewer rows than ranks), rank 0 reads it whole.
    if all.iter().any(|o| o[0] == 0) {
        return Ok(None);
    }
    let refused = |problem: String| {
        let e = Error::BadSnapshot {
            path: path.to_string(),
            problem,
        };
        Err(refused_by_every_rank(comm, Some(&e)))
    };
    let counted = all[0][5] == 1;
    if counted {
        // CSV shares: each counted its own rows, which must all be at one
        // time, as the whole read requires of a file's rows.
        let time = |o: &[u64]| f64::from_bits(o[4]);
        if let Some(other) = all.iter().find(|o| time(o) != time(&all[0]) || o[5] != 1) {
            return refused(format!(
                "rows at time {} follow rows at time {} (a snapshot's rows share one time)",
                f64::from_bits(other[4]),
                f64::from_bits(all[0][4])
            ));
        }
    } else if let Some(other) = all.iter().find(|o| o[3..] != all[0][3..]) {
        return refused(format!(
            "the ranks found different files there: {} particles at t = {} on rank 0, {} at \
             t = {} on another",
            all[0][3],
            f64::from_bits(all[0][4]),
            other[3],
            f64::from_bits(other[4])
        ));
    }
    if all.iter().all(|o| o[1] == 0) {
        return refused("total mass is zero".into());
    }
    let mut share = read.ok().flatten().expect("every rank read its share");
    if counted {
        let before = all[..r].iter().map(|o| o[3]).sum::<u64>();
        share.place(
            before as usize,
            all.iter().map(|o| o[3]).sum::<u64>() as usize,
        );
    }
    if r == 0 {
        say!(
            "{path}: {} particles, each of {p} ranks reading its own",
            share.n
        );
        let gas: u64 = all.iter().map(|o| o[2]).sum();
        if gas > 0 {
            say!(
                "{path}: {gas} gas particles are integrated as collisionless (webgrav has no \
                 hydrodynamics)"
            );
        }
    }
    Ok(Some(share))
}

/// This rank's equal share of one input file, which rank 0 read (`whole`;
/// ranks of one host each reading it whole would hold it side by side)
/// and deals out, with its time and kinds.
fn whole_share(
    comm: &dyn Comm,
    whole: Option<Snapshot>,
) -> Result<(RankParticles, Option<KindsById>, f64)> {
    let time = allgather_records(comm, &[whole.as_ref().map_or(0.0, |s| s.time)])[0][0];
    let runs =
        (whole.as_ref()).and_then(|s| s.types.as_ref().map(|t| KindsById::new(&s.particles.id, t)));
    let typed = allgather_records(comm, &[runs.is_some() as u64])[0][0] == 1;
    let kinds = typed.then(|| {
        let mine = runs.as_ref().map_or(&[][..], |k| k.runs());
        KindsById::joined(allgather_records(comm, mine))
    });
    let mine = deal_equal_shares(comm, 0, whole.as_ref().map(|s| &s.particles))?;
    Ok((mine, kinds, time))
}

/// This rank's share of a snapshot in per-process parts (`snap_…-0`, `-1`,
/// …: a parallel run's series): the parts dealt out in order, rank r of P
/// reading parts m·r/P up to m·(r + 1)/P of m, and none of the others (a
/// rank may get none), so no rank reads the whole. The parts' kinds and
/// time are the whole's, as one process reads them (`read_file`): kinds
/// if any part has them (untyped parts' particles are stars), and one
/// time for all.
fn parts_share(
    a: &RunArgs,
    comm: &dyn Comm,
    parts: &[String],
) -> Result<(RankParticles, Option<KindsById>, f64)> {
    let (p, r, m) = (comm.size(), comm.rank(), parts.len());
    let dealt = &parts[RankShare { rank: r, ranks: p }.of(m)];
    let snap = match dealt.split_first() {
        Some((first, rest)) => {
            let rest = rest
                .iter()
                .map(|q| (snapshot::read_one_file(q), q.as_str()));
            let mut snap = snapshot::read_one_file(first)?.join_parts(first, rest)?;
            a.initial.to_nbody(&mut snap)?;
            Some(snap)
        }
        None => None,
    };
    let n = snap.as_ref().map_or(0, |s| s.particles.len());
    crate::app::host::check_host_memory(n as u64, SolverKind::Tree)?;
    // (time, typed) of every rank that read a part.
    let mine = snap.as_ref().map_or([f64::NAN, 0.0], |s| {
        [s.time, s.types.is_some() as u64 as f64]
    });
    let read: Vec<[f64; 2]> = (allgather_records(comm, &mine).iter())
        .filter(|t| !t[0].is_nan())
        .map(|t| [t[0], t[1]])
        .collect();
    let time = read[0][0];
    if let Some(other) = read.iter().find(|t| t[0] != time) {
        return Err(Error::InvalidParameter(format!(
            "{} is at t = {time}, another of its parts at t = {}: not parts of one snapshot",
            parts[0], other[0]
        )));
    }
    let typed = read.iter().any(|t| t[1] == 1.0);
    if r == 0 {
        say!("{}: {m} parts, each read by one of {p} ranks", parts[0]);
    }
    let (particles, types) = match snap {
        Some(s) => (s.particles, s.types),
        None => (Particles::default(), None),
    };
    // A part's ids may interleave with another's (a parallel run's parts,
    // after its redraws).
    let kinds = typed.then(|| {
        let types = types.unwrap_or_else(|| vec![4; particles.len()]);
        kinds_of_shares(comm, &particles.id, &types)
    });
    Ok((
        RankParticles::of_range(&particles, 0..particles.len()),
        kinds,
        time,
    ))
}

/// This rank's part of the series, as Bonsai names a process's snapshot:
/// `snap_TTTTT.TTTT-R` in --snap-dir.
async fn write_part(
    a: &RunArgs,
    ctx: &GpuContext,
    comm: &dyn Comm,
    run: &ClusterRun,
) -> Result<()> {
    let part = run.part(ctx).await?;
    std::fs::create_dir_all(&a.snap_dir).map_err(|source| Error::Io {
        path: a.snap_dir.clone(),
        source,
    })?;
    let path = format!("{}/{}", a.snap_dir, part_name(run.time(), comm.rank()));
    snapshot::write_file_as(&path, Format::named(&a.snap_format)?, &part)?;
    Ok(())
}

/// Bonsai's name of process `rank`'s snapshot at `time`.
pub fn part_name(time: f64, rank: usize) -> String {
    format!("snap_{time:010.4}-{rank}")
}

/// A log line's clocks: the mean wall time of the steps since the last
/// line (the steps alone), and the run's wall time so far.
struct LogTimes {
    step_s: f64,
    wall_s: f64,
}

/// The log line (rank 0 gets it; every rank takes part): the run's
/// conserved quantities, and the slowest rank's phases of the last step.
fn log_line(
    comm: &dyn Comm,
    run: &ClusterRun,
    d: &crate::cluster::run::ClusterDiagnostics,
    start: &crate::cluster::run::ClusterDiagnostics,
    de_max: f64,
    times: LogTimes,
) -> Result<Option<serde_json::Value>> {
    let r = run.report();
    let mine = [
        r.build_s,
        r.cut_s,
        r.exchange_s,
        r.import_s,
        r.exported_cells as f64,
        r.exported_particles as f64,
        r.imported.cells as f64,
        r.imported.particles as f64,
        run.rebalance_s,
        run.redraw_parts.read_s,
        run.redraw_parts.decompose_s,
        run.redraw_parts.upload_s,
        run.redraw_parts.setup_s,
        r.cut_read_s,
        r.import_assemble_s,
        r.exchange_wait_s,
        run.redraw_parts.decompose.keys_s,
        run.redraw_parts.decompose.cuts_s,
        run.redraw_parts.decompose.pack_s,
        run.redraw_parts.decompose.alltoall_s,
        run.redraw_parts.decompose.gather_s,
        r.gpu_build_ms,
        r.gpu_walk_ms,
        r.gpu_imported_walk_ms,
    ];
    let all = allgather_records(comm, &mine);
    if comm.rank() != 0 {
        return Ok(None);
    }
    let most = |k: usize| all.iter().map(|v| v[k]).fold(0.0, f64::max);
    let sum = |k: usize| all.iter().map(|v| v[k]).sum::<f64>();
    let (e, e0) = (&d.diagnostics, &start.diagnostics);
    let dl = std::array::from_fn(|k| e.angular_momentum[k] - e0.angular_momentum[k]);
    let mut line = serde_json::json!({
        // A one-GPU run's fields (`cli::run`'s log line), so that one
        // script reads the logs of both...
        "t": run.time(),
        "steps": run.steps(),
        "energy": e.total,
        "kinetic": e.kinetic,
        "potential": e.potential,
        "rel_energy_error": e.energy_error(e0),
        "rel_energy_error_max": de_max,
        "virial_ratio": e.virial_ratio,
        "potential_sum": d.potential_sum.name(),
        "momentum": norm(e.momentum),
        "angular_momentum": norm(e.angular_momentum),
        "angular_momentum_change": norm(dl),
        "wall_s": times.wall_s,
        // ... and the ranks'.
        "ranks": comm.size(),
        "n": d.particles,
        "rank_n_min": d.fewest,
        "rank_n_max": d.most,
        "wall_s_per_step": times.step_s,
        "phases_max_s": {
            "build": most(0),
            "cut": most(1),
            "exchange": most(2),
            "import": most(3),
            "rebalance": most(8),
            // The last redraw's parts.
            "rebalance_read": most(9),
            "rebalance_decompose": most(10),
            "rebalance_upload": most(11),
            "rebalance_setup": most(12),
            // Parts of "rebalance_decompose".
            "rebalance_keys": most(16),
            "rebalance_cuts": most(17),
            "rebalance_pack": most(18),
            "rebalance_alltoall": most(19),
            "rebalance_gather": most(20),
            // Parts of "cut" and "import".
            "cut_read": most(13),
            "import_assemble": most(14),
            "exchange_wait": most(15),
        },
        // The GPU's time (timestamps) of the last step's build (bounds to
        // groups) and walks; block steps: the last busy sub-step's.
        "gpu_phases_max_ms": {
            "build": most(21),
            "walk": most(22),
            "imported_walk": most(23),
        },
        // Decompositions so far (the same on every rank).
        "redraws": run.redraws,
        // Of them, those called because a rank's imports crowded their room.
        "redraws_for_imports": run.redraws_for_imports,
        "exported_cells": sum(4),
        "exported_particles": sum(5),
        "imported_cells": sum(6),
        "imported_particles": sum(7),
    });
    if let Some(levels) = &d.levels {
        line["particles_per_level"] = levels.clone().into();
    }
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::comm::ThreadComm;

    /// One rank's failure stops every rank, and where all succeed each
    /// keeps its own outcome.
    #[test]
    fn a_step_one_rank_failed_is_refused_on_every_rank() {
        for failing in [None, Some(0), Some(2)] {
            let outcomes: Vec<std::result::Result<usize, ExitCode>> = std::thread::scope(|s| {
                let handles: Vec<_> = ThreadComm::ranks(3)
                    .into_iter()
                    .map(|comm| {
                        s.spawn(move || {
                            let r = comm.rank();
                            let outcome = match Some(r) == failing {
                                true => Err(Error::InvalidParameter(format!("rank {r}'s file"))),
                                false => Ok(r),
                            };
                            agreed(&comm, outcome)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            match failing {
                None => assert!(outcomes.iter().enumerate().all(|(r, o)| o == &Ok(r))),
                Some(_) => assert!(outcomes.iter().all(|o| o.is_err()), "{failing:?}"),
            }
        }
    }
}
