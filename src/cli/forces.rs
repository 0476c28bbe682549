//! `webgrav forces`: the accelerations and potentials a solver computes
//! for the initial state (CSV in input order), and their error against a
//! direct-sum reference (Bonsai's figure 4.8 statistics): the f64 sum on
//! the CPU for a sample of particles, or the GPU double-single sum for
//! every particle (spot-checked against the f64 sum). Several opening
//! angles, and accelerations another code wrote (e.g. Bonsai's dump), are
//! compared with the same reference in one call.

use super::{check_typed_output, emit, say, InitialArgs, SolverArgs};
use crate::app::accuracy::{reference_forces, CompareWith, Reference};
use crate::error::{Error, Result};
use crate::gpu::layout::AccPot;
use crate::gpu::GpuContext;
use crate::run::params::alpha_given;
use crate::run::params::RunConfig;
use crate::run::{Run, SolverKind};
use crate::snapshot;
use crate::state::energy::PotentialRule;
use crate::state::stats::ErrorStats;
use crate::state::Particles;
use clap::{Args, ValueEnum};
use std::collections::HashMap;

#[derive(Args)]
pub struct ForcesArgs {
    #[command(flatten)]
    initial: InitialArgs,
    #[command(flatten)]
    solver: SolverArgs,
    /// Output CSV: id,x,y,z,m,ax,ay,az,pot (rows in input order; with
    /// several --thetas, the forces of the last).
    #[arg(long)]
    out: Option<String>,
    /// Compare with a direct sum and print the relative acceleration error
    /// distribution (median, 90th, 99th percentile, max) as a JSON line:
    /// `direct`, the f64 sum on the CPU for --sample particles; `ds`, the
    /// GPU double-single sum for every particle, spot-checked against the
    /// f64 sum on --sample particles (`reference_check` in the line).
    #[arg(long, value_enum)]
    compare: Option<CompareArg>,
    /// Particles sampled for the f64 sum (it costs N per particle); 0 takes
    /// all of them.
    #[arg(long, default_value_t = 4096)]
    sample: usize,
    /// Tree solver: evaluate at each of these opening angles (one JSON line
    /// each, same reference) instead of --theta; with the opening-angle MAC
    /// unless --alpha or --alphas is given.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    thetas: Vec<f32>,
    /// Tree solver: evaluate with the acceleration MAC at each of these
    /// tolerances (one JSON line each, for every θ) instead of --alpha.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    alphas: Vec<f32>,
    /// Accelerations another code computed for the same particles, compared
    /// with the same reference (one more JSON line each, "solver": "file";
    /// may be repeated): CSV
    /// with a header and rows `id,ax,ay,az[,pot]` (e.g. Bonsai's
    /// `BONSAI_DUMP_ACC` output), matched to the input by id.
    #[arg(long)]
    against: Vec<String>,
}

/// `--compare`: the clap face of `app::accuracy::CompareWith`.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum CompareArg {
    /// The f64 direct sum on the CPU, for --sample particles.
    Direct,
    /// The double-single direct sum on the GPU, for every particle.
    Ds,
}

impl From<CompareArg> for CompareWith {
    fn from(c: CompareArg) -> Self {
        match c {
            CompareArg::Direct => CompareWith::Direct,
            CompareArg::Ds => CompareWith::Ds,
        }
    }
}

pub async fn forces(a: ForcesArgs) -> Result<()> {
    let configs = checked_configs(&a)?;
    let ctx = GpuContext::headless().await?;
    say!("adapter: {}", ctx.adapter_summary());
    let start = a.initial.load(&ctx, configs[0].solver()).await?;
    let p = &start.particles;
    let foreign = read_against(&a, p)?;
    let reference = match a.compare {
        Some(kind) => Some(reference_of(&ctx, &a, p, kind).await?),
        None => None,
    };
    for (k, config) in configs.iter().enumerate() {
        // Creating the run evaluates the forces of the initial state (the
        // Hermite integrators: their own, with jerk, in their precision).
        let mut run = Run::new(&ctx, p, start.time, *config).await?;
        // Forces only: no energy sum (an N² one would cost more than the
        // tree's forces).
        run.set_potential_rule(PotentialRule::Solver);
        let r = run.readout(&ctx).await?;
        let last = k + 1 == configs.len();
        let line = report(
            &a,
            p,
            config,
            (&r.acc_pot, r.interactions),
            (reference.as_ref(), last),
        )?;
        if !line.is_null() {
            emit(line)?;
        }
    }
    compare_against(&a, p, &foreign, reference.as_ref())
}

/// The request checked (outputs, options that go together) and the
/// solver settings to evaluate, one per θ and α asked for.
fn checked_configs(a: &ForcesArgs) -> Result<Vec<RunConfig>> {
    if a.out.is_none() && a.compare.is_none() {
        return Err(Error::InvalidParameter(
            "nothing to do: give --out FILE and/or --compare direct|ds".into(),
        ));
    }
    if !a.against.is_empty() && a.compare.is_none() {
        return Err(Error::InvalidParameter(
            "--against needs a reference: give --compare direct|ds".into(),
        ));
    }
    if (!a.thetas.is_empty() || !a.alphas.is_empty()) && a.solver.solver != SolverKind::Tree {
        return Err(Error::InvalidParameter(
            "--thetas and --alphas apply to --solver tree".into(),
        ));
    }
    if let Some(path) = &a.out {
        check_typed_output(path, "csv", "the force table", &a.initial.inputs())?;
    }
    // The time step is not used: no step is taken. Every θ is validated
    // before any work.
    let thetas = if a.thetas.is_empty() {
        vec![a.solver.theta]
    } else {
        a.thetas.clone()
    };
    let alphas = if a.alphas.is_empty() {
        // --thetas names opening angles: the opening-angle MAC, unless
        // --alpha says otherwise.
        let thetas_given = !a.thetas.is_empty();
        vec![alpha_given(
            thetas_given,
            a.solver.alpha_given,
            a.solver.alpha,
        )]
    } else {
        a.alphas.clone()
    };
    thetas
        .iter()
        .flat_map(|&theta| alphas.iter().map(move |&alpha| (theta, alpha)))
        .map(|(theta, alpha)| {
            let mut s = a.solver.clone();
            s.theta = theta;
            s.alpha = alpha;
            s.config(1.0)
        })
        .collect()
}

/// The direct-sum reference `kind` for the particles `p`.
async fn reference_of(
    ctx: &GpuContext,
    a: &ForcesArgs,
    p: &Particles,
    kind: CompareArg,
) -> Result<Reference> {
    let (eps, seed) = (a.solver.eps as f64, a.initial.model.seed);
    reference_forces(ctx, p, kind.into(), eps, a.sample, seed).await
}

/// What one evaluation of `config` gives, `acc_pot` in input order (and
/// the interactions a particle, where a tree counted them): the force
/// table where it is the `last` and `--out` asks for it, and the error
/// line against the reference, if any.
fn report(
    a: &ForcesArgs,
    p: &Particles,
    config: &RunConfig,
    (acc_pot, interactions): (&[AccPot], Option<(f64, f64)>),
    (reference, last): (Option<&Reference>, bool),
) -> Result<serde_json::Value> {
    let n = p.len();
    if last {
        if let Some(path) = &a.out {
            snapshot::write_atomic(
                path,
                &snapshot::csv::encode_forces(&p.id, &p.pos_mass, acc_pot),
            )?;
            say!("wrote forces of {n} particles to {path}");
        }
    }
    let Some(reference) = reference else {
        return Ok(serde_json::Value::Null);
    };
    let rp = config.params();
    let mut line = compare_line(reference, acc_pot);
    line["solver"] = rp.solver.name().into();
    line["n"] = n.into();
    line["theta"] = rp.theta.into();
    line["alpha"] = rp.alpha.into();
    line["eps"] = rp.eps.into();
    if let Some((pp, pc)) = interactions {
        line["pp_per_particle"] = pp.into();
        line["pc_per_particle"] = pc.into();
    }
    Ok(line)
}

/// The accelerations `--against` names, in the order of `p`.
fn read_against(a: &ForcesArgs, p: &Particles) -> Result<Vec<Vec<AccPot>>> {
    a.against
        .iter()
        .map(|path| read_acc_csv(path, &p.id))
        .collect()
}

/// The error lines of the accelerations `--against` named (`foreign`).
fn compare_against(
    a: &ForcesArgs,
    p: &Particles,
    foreign: &[Vec<AccPot>],
    reference: Option<&Reference>,
) -> Result<()> {
    if let Some(reference) = reference {
        for (acc, path) in foreign.iter().zip(&a.against) {
            let mut line = compare_line(reference, acc);
            line["solver"] = "file".into();
            line["source"] = path.as_str().into();
            line["n"] = p.len().into();
            line["eps"] = a.solver.eps.into();
            emit(line)?;
        }
    }
    Ok(())
}

/// The error statistics of `computed` (all particles, input order) against
/// the reference, as a JSON object.
fn compare_line(reference: &Reference, computed: &[AccPot]) -> serde_json::Value {
    let c = reference.compare(computed);
    let stats = |e: ErrorStats| serde_json::json!({"median": e.median, "p90": e.p90, "p99": e.p99, "max": e.max});
    let mut line = serde_json::json!({
        "compare": reference.kind,
        "compared": c.compared,
        "reference_s": reference.seconds,
        "acc_error": stats(c.acc),
        "pot_error": stats(c.pot),
    });
    if let Some((sampled, acc, pot)) = reference.check {
        line["reference_check"] = serde_json::json!({
            "against": "direct-f64", "sampled": sampled, "acc_max": acc, "pot_max": pot,
        });
    }
    line
}

/// Each particle's place in `ids`, by its id.
fn index_by_id(ids: &[u64]) -> HashMap<u64, usize> {
    ids.iter().enumerate().map(|(k, &id)| (id, k)).collect()
}

/// Reads `id,ax,ay,az[,pot]` rows (after one header line) into input order
/// by id; every input particle must appear once.
fn read_acc_csv(path: &str, ids: &[u64]) -> Result<Vec<AccPot>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })?;
    let bad = |line: usize, why: &str| {
        Error::InvalidParameter(format!(
            "{path}, line {line}: {why} (want id,ax,ay,az[,pot])"
        ))
    };
    let index = index_by_id(ids);
    let mut out = vec![AccPot::default(); ids.len()];
    let mut seen = vec![false; ids.len()];
    for (no, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < 4 {
            return Err(bad(no + 1, "too few columns"));
        }
        let id: u64 = f[0].parse().map_err(|_| bad(no + 1, "bad id"))?;
        let num = |s: &str| s.parse::<f32>().map_err(|_| bad(no + 1, "bad number"));
        let &k = index
            .get(&id)
            .ok_or_else(|| bad(no + 1, &format!("id {id} is not in the input")))?;
        if std::mem::replace(&mut seen[k], true) {
            return Err(bad(no + 1, &format!("id {id} appears twice")));
        }
        out[k] = AccPot {
            acc: [num(f[1])?, num(f[2])?, num(f[3])?],
            pot: if f.len() > 4 { num(f[4])? } else { 0.0 },
        };
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        return Err(Error::InvalidParameter(format!(
            "{path}: no row for id {}",
            ids[k]
        )));
    }
    Ok(out)
}

/// `webgrav forces` under `mpirun` with several ranks: the tree on one GPU
/// per rank, as `webgrav run` runs it, so that its forces can be compared
/// with one GPU's and the direct sum. Every rank loads the initial state
/// whole (a model is generated alike on each: this serves the sizes one
/// host holds), takes its equal share, and the ranks decompose and
/// evaluate the first forces together (`ClusterRun::new`); rank 0 gathers
/// every particle's force, writes the force table and the error lines
/// (with `ranks`), as one GPU does.
#[cfg(feature = "mpi")]
pub async fn forces_on_ranks(a: ForcesArgs) -> Result<std::process::ExitCode> {
    use crate::cluster::comm::Comm;
    let comm = crate::cluster::mpi::MpiComm::init()?;
    let checked = checked_configs(&a).and_then(|configs| match a.solver.solver {
        SolverKind::Tree => Ok(configs),
        other => Err(Error::InvalidParameter(format!(
            "--solver {} runs on one GPU: start `webgrav forces` without mpirun",
            other.name()
        ))),
    });
    let configs = match super::cluster::agreed(&comm, checked) {
        Ok(configs) => configs,
        Err(refused) => return Ok(refused),
    };
    match forces_checked(&a, &comm, &configs).await {
        Ok(()) => Ok(std::process::ExitCode::SUCCESS),
        Err(e) => {
            say!("webgrav: rank {} of {}: {e}", comm.rank(), comm.size());
            comm.abort(1)
        }
    }
}

#[cfg(feature = "mpi")]
async fn forces_checked(
    a: &ForcesArgs,
    comm: &crate::cluster::mpi::MpiComm,
    configs: &[RunConfig],
) -> Result<()> {
    use crate::cluster::comm::Comm;
    use crate::cluster::decomposition::RankParticles;
    use crate::cluster::run::{ClusterParams, ClusterRun, Rebalance};
    let (rank, ranks) = (comm.rank(), comm.size());
    let root = rank == 0;
    let ctx = GpuContext::headless_on_gpu(crate::cluster::mpi::local_rank()).await?;
    if root {
        say!("adapter: {} ({ranks} ranks)", ctx.adapter_summary());
    }
    let start = a.initial.load(&ctx, SolverKind::Tree).await?;
    let p = &start.particles;
    let (foreign, reference) = match root {
        true => {
            let foreign = read_against(a, p)?;
            let reference = match a.compare {
                Some(kind) => Some(reference_of(&ctx, a, p, kind).await?),
                None => None,
            };
            (foreign, reference)
        }
        false => (Vec::new(), None),
    };
    let index = match root {
        true => index_by_id(&p.id),
        false => HashMap::new(),
    };
    for (k, config) in configs.iter().enumerate() {
        let rp = config.params();
        let params = ClusterParams {
            tree: crate::tree::TreeConfig {
                theta: rp.theta,
                eps: rp.eps,
                alpha: rp.alpha,
            },
            dt: 1.0,
            rebalance: Rebalance::Every(0),
            rebuild: 1,
            block: None,
        };
        let mine = RankParticles::equal_share(p, rank, ranks);
        let run = ClusterRun::new(&ctx, comm, mine, (start.time, 0), params).await?;
        let mine = run.local_particles(&ctx, false).await?;
        // Every rank's ids, then their forces, to rank 0.
        let mut to = vec![Vec::new(); ranks];
        to[0] = [
            bytemuck::cast_slice::<u64, u8>(&mine.id),
            bytemuck::cast_slice(&mine.acc_pot),
        ]
        .concat();
        let got = comm.alltoall(to);
        if !root {
            continue;
        }
        let mut acc = vec![AccPot::default(); p.len()];
        for message in &got {
            let count = message.len() / (8 + std::mem::size_of::<AccPot>());
            let (ids, forces) = message.split_at(8 * count);
            for (id, force) in ids.chunks_exact(8).zip(forces.chunks_exact(16)) {
                let id = u64::from_ne_bytes(id.try_into().expect("8 bytes"));
                acc[index[&id]] = bytemuck::pod_read_unaligned(force);
            }
        }
        let last = k + 1 == configs.len();
        let mut line = report(a, p, config, (&acc, None), (reference.as_ref(), last))?;
        if !line.is_null() {
            line["ranks"] = ranks.into();
            emit(line)?;
        }
    }
    if root {
        compare_against(a, p, &foreign, reference.as_ref())?;
    }
    Ok(())
}
