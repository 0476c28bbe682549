//! `webgrav run` under `mpirun -np P` (feature `mpi`): the tree code on P
//! GPUs, one per rank (`cluster`). Every rank parses the same arguments
//! and checks them alike, so a refused run ends on every rank with the
//! same message (said once, by rank 0); an error after the ranks started
//! talking ends the whole run (MPI_Abort), since its partners would wait
//! for it forever.
//!
//! What a parallel run offers today: a model (a Plummer sphere sampled in
//! parallel, each rank its own chunks; other models generated on every
//! rank, which keeps its share) or an input file, the tree with θ or α,
//! shared leapfrog steps, the run log, the end state gathered into one
//! `--out` file, and a series of per-rank parts named as Bonsai names
//! them (`--snap-every` with `--bonsai-names`). The rest is refused by
//! name.

use super::run::{Log, RunArgs};
use super::{check_snapshot_output, check_time, emit, say};
use crate::cluster::comm::{allgather_records, Comm};
use crate::cluster::decomposition::RankParticles;
use crate::cluster::mpi::{local_rank, MpiComm};
use crate::cluster::run::{ClusterParams, ClusterRun};
use crate::error::{Error, Result};
use crate::gpu::layout::AccPot;
use crate::gpu::GpuContext;
use crate::run::block::Timesteps;
use crate::run::schedule::whole_steps;
use crate::run::SolverKind;
use crate::snapshot::{self, Format};
use crate::state::plummer::{centre_of_chunks, plummer_chunks, PLUMMER_CHUNK};
use crate::state::Model;
use crate::tree::TreeConfig;
use std::process::ExitCode;

/// Steps between decompositions of a parallel run: a decomposition reads
/// back, moves and uploads every particle and sets the solver up anew
/// (12 s at 2^24 per H200, 2026-11-28), so it is amortised over many
/// steps; the domains drift slowly in between (the trees exchanged stay
/// right for any domains, only larger).
pub const REBALANCE_EVERY: u64 = 64;

/// Runs `a` on the ranks of `comm` (every rank calls it).
pub async fn run(a: RunArgs, comm: MpiComm) -> Result<ExitCode> {
    let root = comm.rank() == 0;
    let checked = check(&a);
    let plan = match checked {
        Ok(plan) => plan,
        Err(e) => {
            // Every rank found the same: rank 0 says it, and the others
            // wait for that (mpirun ends the job at the first rank that
            // fails, which could cut rank 0 short).
            if root {
                say!("webgrav: error: {e}");
            }
            comm.barrier();
            return Ok(ExitCode::FAILURE);
        }
    };
    match run_checked(&a, &comm, plan).await {
        Ok(code) => Ok(code),
        Err(e) => {
            say!("webgrav: rank {} of {}: {e}", comm.rank(), comm.size());
            comm.abort(1)
        }
    }
}

/// What a checked request asks of the ranks.
struct Plan {
    params: ClusterParams,
    steps: u64,
    log_steps: u64,
    snap_steps: u64,
}

/// Refuses what a parallel run cannot do yet, and checks the rest as a
/// one-GPU run does (the same on every rank: nothing here talks).
fn check(a: &RunArgs) -> Result<Plan> {
    let unsupported = |what: &str| {
        Err(Error::InvalidParameter(format!(
            "{what} is not offered by runs on several ranks yet; run it on one GPU"
        )))
    };
    if a.resume.is_some() {
        return unsupported("--resume");
    }
    if a.checkpoint.is_some() {
        return unsupported("--checkpoint");
    }
    let config = a.solver.config(a.step.dt)?;
    let p = config.params();
    if p.solver != SolverKind::Tree {
        return unsupported(&format!("the {} solver", p.solver.name()));
    }
    if p.timesteps != Timesteps::Shared {
        return unsupported("--timesteps block");
    }
    if p.rebuild != 1 {
        return unsupported("--rebuild above 1");
    }
    if a.snap_every > 0.0 && !a.bonsai_names {
        return Err(Error::InvalidParameter(
            "a series of a run on several ranks is written as per-rank parts named as \
             Bonsai names them: add --bonsai-names"
                .into(),
        ));
    }
    Format::named(&a.snap_format)?;
    for (name, t) in [
        ("--t-end", a.t_end),
        ("--log-every", a.log_every),
        ("--snap-every", a.snap_every),
    ] {
        check_time(name, t)?;
    }
    let inputs = a.initial.inputs();
    check_snapshot_output(&a.out, &inputs)?;
    if let Some(log) = &a.log {
        snapshot::check_output(log, &inputs)?;
    }
    let dt = p.dt;
    let every = |name: &str, t: f64| -> Result<u64> {
        if t == 0.0 {
            return Ok(0);
        }
        whole_steps(t, dt).ok_or_else(|| {
            Error::InvalidParameter(format!("{name} {t} is not a whole number of steps of {dt}"))
        })
    };
    Ok(Plan {
        params: ClusterParams {
            tree: TreeConfig {
                theta: p.theta,
                eps: p.eps,
                alpha: p.alpha,
            },
            dt,
            rebalance_every: REBALANCE_EVERY,
        },
        steps: every("--t-end", a.t_end)?,
        log_steps: every("--log-every", a.log_every)?,
        snap_steps: every("--snap-every", a.snap_every)?,
    })
}

async fn run_checked(a: &RunArgs, comm: &MpiComm, plan: Plan) -> Result<ExitCode> {
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
    let (mine, time) = initial_share(a, comm)?;
    let generated_s = clock.elapsed().as_secs_f64();
    let mut log = match (&a.log, root) {
        (Some(path), true) => Some(Log::open(path, None)?),
        _ => None,
    };
    let mut run = ClusterRun::new(&ctx, comm, mine, time, plan.params).await?;
    let start = run.diagnostics(&ctx, comm).await?;
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
    let mut steps_clock = std::time::Instant::now();
    let mut since_log = 0u64;
    for step in 1..=plan.steps {
        run.step(&ctx, comm).await?;
        since_log += 1;
        if plan.snap_steps > 0 && step % plan.snap_steps == 0 {
            write_part(a, &ctx, comm, &run).await?;
        }
        let log_now = (plan.log_steps > 0 && step % plan.log_steps == 0) || step == plan.steps;
        if log_now {
            let d = run.diagnostics(&ctx, comm).await?;
            let wall = steps_clock.elapsed().as_secs_f64();
            let line = log_line(comm, &run, &d, &start, wall / since_log as f64)?;
            if let (true, Some(line)) = (root, line) {
                emit(&line)?;
                if let Some(l) = log.as_mut() {
                    l.write(&line)?;
                }
            }
            since_log = 0;
            steps_clock = std::time::Instant::now();
        }
    }
    if let Some(path) = &a.out {
        if let Some(snap) = run.gather(&ctx, comm, 0).await? {
            snapshot::write_file(path, &snap)?;
            say!("wrote {path}");
        }
    }
    if root {
        say!(
            "{} steps on {} ranks in {:.2} s",
            plan.steps,
            comm.size(),
            run_clock.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// This rank's share of the initial particles and the start time: a
/// Plummer sphere (or cold collapse) sampled chunk by chunk on the ranks,
/// the same particles as on one GPU; other models generated whole on
/// every rank; an input file read by every rank. Each keeps its slice.
fn initial_share(a: &RunArgs, comm: &dyn Comm) -> Result<(RankParticles, f64)> {
    let (p, r) = (comm.size(), comm.rank());
    let m = &a.initial.model;
    if a.initial.input.is_none() && matches!(m.model, Model::Plummer | Model::ColdCollapse) {
        let chunks = m.n.div_ceil(PLUMMER_CHUNK);
        let mine = chunks * r / p..chunks * (r + 1) / p;
        let part = plummer_chunks(m.n, m.seed, mine);
        let sums: Vec<[f64; 6]> = allgather_records(comm, &part.sums).concat();
        let mut particles = part.centred(m.n, centre_of_chunks(m.n, &sums));
        if m.model == Model::ColdCollapse {
            for v in &mut particles.vel {
                v.vel = [0.0; 3];
            }
        }
        return Ok((share_of(particles, 0..usize::MAX), 0.0));
    }
    let snap = a.initial.load_whole()?;
    let n = snap.particles.len();
    let time = snap.time;
    Ok((share_of(snap.particles, n * r / p..n * (r + 1) / p), time))
}

fn share_of(p: crate::state::Particles, range: std::ops::Range<usize>) -> RankParticles {
    let range = range.start.min(p.len())..range.end.min(p.len());
    let len = range.len();
    RankParticles {
        pos_mass: p.pos_mass[range.clone()].to_vec(),
        vel: p.vel[range.clone()].to_vec(),
        acc_pot: vec![AccPot::default(); len],
        id: p.id[range].to_vec(),
        work: vec![1.0; len],
    }
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

/// The log line (rank 0 gets it; every rank takes part): the run's
/// conserved quantities, and the slowest rank's phases of the last step.
fn log_line(
    comm: &dyn Comm,
    run: &ClusterRun,
    d: &crate::cluster::run::ClusterDiagnostics,
    start: &crate::cluster::run::ClusterDiagnostics,
    step_s: f64,
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
    ];
    let all = allgather_records(comm, &mine);
    if comm.rank() != 0 {
        return Ok(None);
    }
    let most = |k: usize| all.iter().map(|v| v[k]).fold(0.0, f64::max);
    let sum = |k: usize| all.iter().map(|v| v[k]).sum::<f64>();
    let e = &d.diagnostics;
    Ok(Some(serde_json::json!({
        "t": run.time(),
        "step": run.steps(),
        "ranks": comm.size(),
        "n": d.particles,
        "rank_n_min": d.fewest,
        "rank_n_max": d.most,
        "E": e.total,
        "K": e.kinetic,
        "W": e.potential,
        "dE_rel": e.energy_error(&start.diagnostics),
        "p": e.momentum,
        "L": e.angular_momentum,
        "virial": e.virial_ratio,
        "wall_s_per_step": step_s,
        "phases_max_s": {
            "build": most(0),
            "cut": most(1),
            "exchange": most(2),
            "import": most(3),
            "rebalance": most(8),
        },
        "exported_cells": sum(4),
        "exported_particles": sum(5),
        "imported_cells": sum(6),
        "imported_particles": sum(7),
    })))
}
