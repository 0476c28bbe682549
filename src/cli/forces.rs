//! `webgrav forces`: the accelerations and potentials a solver computes
//! for the initial state (CSV in input order), and their error against the
//! f64 direct sum (Bonsai's figure 4.8 statistics).

use super::{check_typed_output, emit, say, InitialArgs, SolverArgs};
use crate::direct::reference;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::run::Run;
use crate::snapshot;
use crate::state::stats::{sample_indices, ErrorStats};
use clap::{Args, ValueEnum};

#[derive(Args)]
pub struct ForcesArgs {
    #[command(flatten)]
    initial: InitialArgs,
    #[command(flatten)]
    solver: SolverArgs,
    /// Output CSV: id,x,y,z,m,ax,ay,az,pot (rows in input order).
    #[arg(long)]
    out: Option<String>,
    /// Compare with the f64 direct sum: print the relative acceleration
    /// error distribution (median, 90th, 99th percentile, max).
    #[arg(long, value_enum)]
    compare: Option<CompareWith>,
    /// Particles sampled for --compare (the f64 sum costs N per particle);
    /// 0 compares all of them.
    #[arg(long, default_value_t = 4096)]
    sample: usize,
}

#[derive(Clone, Copy, ValueEnum)]
enum CompareWith {
    /// The f64 direct sum on the CPU.
    Direct,
}

pub async fn forces(a: ForcesArgs) -> Result<()> {
    if a.out.is_none() && a.compare.is_none() {
        return Err(Error::InvalidParameter(
            "nothing to do: give --out FILE and/or --compare direct".into(),
        ));
    }
    if let Some(path) = &a.out {
        check_typed_output(path, "csv", "the force table", &a.initial.inputs())?;
    }
    // The time step is not used: no step is taken.
    let config = a.solver.config(1.0)?;
    let ctx = GpuContext::headless().await?;
    say!("adapter: {}", ctx.adapter_summary());
    let start = a.initial.load(&ctx, config.solver())?;
    // Creating the run evaluates the forces of the initial state (the
    // Hermite integrators: their own, with jerk, in their precision).
    let mut run = Run::new(&ctx, &start.particles, start.time, config).await?;
    let r = run.readout(&ctx).await?;
    let n = r.acc_pot.len();
    if let Some(path) = &a.out {
        let p = &start.particles;
        snapshot::write_atomic(
            path,
            &snapshot::csv::encode_forces(&p.id, &p.pos_mass, &r.acc_pot),
        )?;
        say!("wrote forces of {n} particles to {path}");
    }
    if a.compare.is_some() {
        let sample = sample_indices(n, a.sample, a.initial.seed);
        let reference =
            reference::forces_on(&start.particles.pos_mass, &sample, a.solver.eps as f64);
        let gpu: Vec<_> = sample.iter().map(|&i| r.acc_pot[i]).collect();
        let acc_err = ErrorStats::of(&reference::acc_errors(&gpu, &reference));
        let pot_err = ErrorStats::of(&reference::pot_errors(&gpu, &reference));
        let p = config.params();
        let mut line = serde_json::json!({
            "compare": "direct-f64",
            "solver": p.solver.name(),
            "n": n,
            "theta": p.theta,
            "eps": p.eps,
            "sampled": sample.len(),
            "acc_error": {"median": acc_err.median, "p90": acc_err.p90, "p99": acc_err.p99, "max": acc_err.max},
            "pot_error": {"median": pot_err.median, "p90": pot_err.p90, "p99": pot_err.p99, "max": pot_err.max},
        });
        if let Some((pp, pc)) = r.interactions {
            line["pp_per_particle"] = pp.into();
            line["pc_per_particle"] = pc.into();
        }
        emit(line)?;
    }
    Ok(())
}
