//! The tree code on P ranks (threads of this process, through
//! `ThreadComm`, each with its own GPU context) against one rank and the
//! f64 direct sum: the decomposition keeps every particle, and the forces
//! of P ranks are as accurate as one rank's (the local essential trees
//! hold everything the MAC needs).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use pollster::block_on;
use webgrav::cluster::comm::{Comm, CommRanks, CommSums, ThreadComm};
use webgrav::cluster::decomposition::{decompose, decompose_timed, DecomposeParts, RankParticles};
use webgrav::cluster::let_tree::EssentialTree;
use webgrav::cluster::run::{
    first_domains, upload, ClusterDiagnostics, ClusterParams, ClusterRun, FirstShare, Rebalance,
    RedrawParts,
};
use webgrav::cluster::solver::{DistributedTree, EvaluationReport};
use webgrav::direct::reference::{acc_errors, forces, forces_on, pot_errors};
use webgrav::gpu::layout::{AccPot, PosMass, Velocity};
use webgrav::run::block::{BlockConfig, Timesteps};
use webgrav::run::checkpoint::{self, Checkpoint, EngineState, Preamble};
use webgrav::run::{Run, RunParams, SolverKind};
use webgrav::snapshot::Snapshot;
use webgrav::state::energy::{potentials_f64, PotentialRule, PotentialSum};
use webgrav::state::galaxy::catalog;
use webgrav::state::galaxy::sampler::{now, Cpu, Realize, RealizeOnCpu, Shared};
use webgrav::state::parallel::SUM_CHUNK;
use webgrav::state::particles::StateReadback;
use webgrav::state::rng::mix;
use webgrav::state::share::{RankShare, Share};
use webgrav::state::stats::ErrorStats;
use webgrav::state::{Model, ModelParams, Particles};
use webgrav::tree::TreeConfig;

const EPS: f32 = 0.01;

/// Rank `comm.rank()`'s share of the forces on `particles`: it starts with
/// an equal slice of the input, the ranks decompose, and evaluate once.
/// (global id, force) of each particle it ends with, and its report.
fn rank_forces(
    comm: &dyn Comm,
    particles: &Particles,
    config: TreeConfig,
) -> (Vec<(u64, AccPot)>, EvaluationReport) {
    let ctx = common::gpu();
    let mine = RankParticles::equal_share(particles, comm.rank(), comm.size());
    let mut parts = DecomposeParts::default();
    let mine = decompose_timed(comm, mine, u64::MAX, &mut parts).unwrap();
    let (state, ids) = upload(&ctx, mine).unwrap();
    let mut solver = DistributedTree::new(&ctx, &state, config).unwrap();
    // As a run does: wide groups are wide for the whole system.
    let cube = parts.frame.system_cube();
    solver.tree.set_system_cube(&ctx.queue, cube);
    block_on(solver.evaluate_fresh(&ctx, comm)).unwrap();
    block_on(solver.finish(&ctx)).unwrap();
    let s = block_on(state.read(&ctx)).unwrap();
    let out = s
        .index
        .iter()
        .zip(&s.acc_pot)
        .map(|(&i, a)| (ids[i as usize], *a))
        .collect();
    (out, solver.last)
}

/// The forces of `p` ranks in input order, and each rank's report.
fn forces_on_ranks(
    p: usize,
    particles: &Particles,
    config: TreeConfig,
) -> (Vec<AccPot>, Vec<EvaluationReport>) {
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = ThreadComm::ranks(p)
            .into_iter()
            .map(|comm| s.spawn(move || rank_forces(&comm, particles, config)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut acc = vec![None; particles.len()];
    let mut reports = Vec::new();
    for (rank, (forces, report)) in results.into_iter().enumerate() {
        assert!(!forces.is_empty(), "rank {rank} of {p} holds no particle");
        for (id, a) in forces {
            let slot = &mut acc[id as usize];
            assert!(slot.is_none(), "particle {id} is on two ranks");
            *slot = Some(a);
        }
        reports.push(report);
    }
    let acc = acc
        .into_iter()
        .enumerate()
        .map(|(i, a)| a.unwrap_or_else(|| panic!("particle {i} was lost")))
        .collect();
    (acc, reports)
}

fn errors(p: usize, particles: &Particles, config: TreeConfig) -> (ErrorStats, ErrorStats) {
    let (acc, reports) = forces_on_ranks(p, particles, config);
    if p > 1 {
        for (rank, r) in reports.iter().enumerate() {
            eprintln!("rank {rank} of {p}: {r:?}");
            assert!(r.imported.trees > 0, "rank {rank}: {r:?}");
        }
    }
    let reference = forces(&particles.pos_mass, EPS as f64);
    (
        ErrorStats::of(&acc_errors(&acc, &reference)),
        ErrorStats::of(&pot_errors(&acc, &reference)),
    )
}

/// Forces of 2 and 3 ranks against one, within issue 46's 5 % on the
/// median. Each rank's tree covers its own domain, so the cells differ
/// and so does the tail of the errors. On lavapipe (N = 6000, θ = 0.75;
/// α = 0.01) the ranks' medians are 0.88–0.96 of one rank's, p99
/// 0.89–1.10 and the largest 0.93–1.34; the potentials' median 0.78–0.87
/// and largest 1.28–1.58. (While a rank split the groups wide for its own
/// domain, not the system, the median of 3 ranks was 1.24 of one rank's.)
/// At θ = 0.3 the errors shrink as θ³ alike
/// (`ranks_converge_with_the_opening_angle`). A missing or doubled leaf
/// would cost ~1e-2 at any θ.
fn check_ranks_agree(config: TreeConfig, n: usize) {
    let particles = Model::Plummer.generate(n, 21).unwrap();
    let (acc1, pot1) = errors(1, &particles, config);
    for p in [2, 3] {
        let (acc, pot) = errors(p, &particles, config);
        eprintln!("P = {p}: acc {acc:?} pot {pot:?} (one rank: {acc1:?} {pot1:?})");
        assert!(
            acc.median <= 1.05 * acc1.median,
            "P = {p}: {acc:?} vs {acc1:?}"
        );
        assert!(acc.p99 <= 1.25 * acc1.p99, "P = {p}: {acc:?} vs {acc1:?}");
        assert!(acc.max <= 1.6 * acc1.max, "P = {p}: {acc:?} vs {acc1:?}");
        assert!(
            pot.median <= 1.05 * pot1.median,
            "P = {p}: {pot:?} vs {pot1:?}"
        );
        assert!(pot.max <= 2.0 * pot1.max, "P = {p}: {pot:?} vs {pot1:?}");
    }
}

#[test]
fn ranks_converge_with_the_opening_angle() {
    // Measured on lavapipe: one rank max 2.7e-4, three 5.1e-4.
    let particles = Model::Plummer.generate(6000, 21).unwrap();
    let config = TreeConfig {
        theta: 0.3,
        eps: EPS,
        alpha: 0.0,
    };
    let (acc, pot) = errors(3, &particles, config);
    assert!(acc.max < 1.5e-3 && pot.max < 2e-4, "{acc:?} {pot:?}");
}

#[test]
fn ranks_agree_with_one_rank_at_the_opening_angle() {
    check_ranks_agree(
        TreeConfig {
            theta: 0.75,
            eps: EPS,
            alpha: 0.0,
        },
        6000,
    );
}

#[test]
fn ranks_agree_with_one_rank_under_the_acceleration_mac() {
    check_ranks_agree(
        TreeConfig {
            theta: 0.75,
            eps: EPS,
            alpha: 0.01,
        },
        6000,
    );
}

#[test]
fn damaged_trees_are_refused() {
    assert_eq!(
        EssentialTree::from_bytes(&[]).unwrap(),
        EssentialTree::default()
    );
    for bytes in [vec![1u8, 0, 0], vec![1, 0, 0, 0, 0, 0, 0, 0]] {
        assert!(EssentialTree::from_bytes(&bytes).is_err());
    }
}

/// θ = 0.6, dt = 1/128.
fn short_run_params(rebalance: Rebalance) -> ClusterParams {
    ClusterParams {
        tree: TreeConfig {
            theta: 0.6,
            eps: EPS,
            alpha: 0.0,
        },
        dt: 1.0 / 128.0,
        rebalance,
        rebuild: 1,
        block: None,
    }
}

/// `steps` steps on `p` ranks: the diagnostics before and after (the
/// potential summed by `rule`), and the end state gathered on rank 0.
fn run_on_ranks(
    p: usize,
    particles: &Particles,
    params: ClusterParams,
    (steps, rule): (u64, PotentialRule),
) -> (ClusterDiagnostics, ClusterDiagnostics, Snapshot) {
    let mut results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = ThreadComm::ranks(p)
            .into_iter()
            .map(|comm| {
                s.spawn(move || {
                    let ctx = common::gpu();
                    let mine = RankParticles::equal_share(particles, comm.rank(), comm.size());
                    let mut run =
                        block_on(ClusterRun::new(&ctx, &comm, mine, (0.0, 0), params)).unwrap();
                    let start = block_on(run.diagnostics(&ctx, &comm, rule)).unwrap();
                    for _ in 0..steps {
                        block_on(run.step(&ctx, &comm)).unwrap();
                    }
                    let end = block_on(run.diagnostics(&ctx, &comm, rule)).unwrap();
                    let snap = block_on(run.gather(&ctx, &comm, 0)).unwrap();
                    (start, end, snap)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (start, end, snap) = results.swap_remove(0);
    (start, end, snap.expect("rank 0 gathers"))
}

#[test]
fn a_short_run_on_ranks_conserves_energy_and_follows_one_rank() {
    let particles = Model::Plummer.generate(4096, 5).unwrap();
    let params = short_run_params(Rebalance::Every(4));
    // 4096 particles: the potential summed precisely (on the host), as
    // on one GPU.
    let steps = (16, PotentialRule::Auto);
    let (start1, end1, one) = run_on_ranks(1, &particles, params, steps);
    let (start3, end3, three) = run_on_ranks(3, &particles, params, steps);
    for (d, n) in [(&start3, 3), (&end3, 3), (&start1, 1)] {
        assert_eq!(d.particles, 4096, "{n} ranks: {d:?}");
        assert!(d.fewest > 0, "{n} ranks: {d:?}");
        assert_eq!(d.potential_sum, PotentialSum::HostF64, "{n} ranks");
    }
    let de1 = end1.diagnostics.energy_error(&start1.diagnostics);
    let de3 = end3.diagnostics.energy_error(&start3.diagnostics);
    eprintln!("|dE/E| one rank {de1:e}, three {de3:e}");
    // Measured on lavapipe: 9.2e-6 on one rank, 9.8e-6 on three (the
    // leapfrog's and the MAC's own error); a lost or doubled interaction
    // costs far more. Issue 46's consistency across P: within 10 %, the
    // potential summed precisely (the trees' own potentials, which differ
    // between one rank and three, gave 6.0e-6 and 9.0e-6).
    assert!(de1 < 3e-5 && de3 < 3e-5, "{de1:e} {de3:e}");
    assert!((de3 - de1).abs() <= 0.1 * de1, "{de1:e} {de3:e}");
    assert_eq!(three.particles.id, one.particles.id);
    assert_eq!(three.time, one.time);
    // The runs part only by the trees' rounding and MAC errors (measured:
    // 2.7e-5 at most, for positions of order 1).
    let worst = largest_position_difference(&three, &one);
    eprintln!("largest position difference {worst:e}");
    assert!(worst < 1e-4, "{worst:e}");
}

/// The distances between the positions of two snapshots of the same
/// particles in the same order, smallest first.
fn position_differences(a: &Snapshot, b: &Snapshot) -> Vec<f64> {
    assert_eq!(a.particles.id, b.particles.id);
    let mut d: Vec<f64> = (a.particles.pos_mass.iter().zip(&b.particles.pos_mass))
        .map(|(a, b)| {
            let d2: f32 = (0..3).map(|k| (a.pos[k] - b.pos[k]).powi(2)).sum();
            d2.sqrt() as f64
        })
        .collect();
    d.sort_by(f64::total_cmp);
    d
}

/// The largest distance between the positions of two snapshots of the
/// same particles in the same order.
fn largest_position_difference(a: &Snapshot, b: &Snapshot) -> f64 {
    position_differences(a, b).pop().unwrap_or(0.0)
}

/// Where a run ended: its state in id order, its |ΔE/E| (the potential
/// summed precisely) and its particles per block-step level (block steps
/// only).
struct End {
    snapshot: Snapshot,
    energy_error: f64,
    levels: Option<Vec<u64>>,
}

/// `steps` steps of `params` on one GPU (`run::Run`, no ranks).
fn run_on_one_gpu(particles: &Particles, params: RunParams, steps: u64) -> End {
    let ctx = common::gpu();
    block_on(async {
        let mut run = Run::new(&ctx, particles, 0.0, params.validate().unwrap())
            .await
            .unwrap();
        let first = run.readout(&ctx).await.unwrap();
        run.run_to(&ctx, steps as f64 * params.dt, |_, _| true)
            .await
            .unwrap();
        let end = run.readout(&ctx).await.unwrap();
        assert_eq!(end.steps, steps);
        End {
            snapshot: Snapshot::clone(&end.snapshot),
            energy_error: end.diagnostics.energy_error(&first.diagnostics),
            levels: end.block_levels,
        }
    })
}

/// The one-GPU run's parameters of a parallel run's.
fn one_gpu_params(c: &ClusterParams) -> RunParams {
    RunParams {
        solver: SolverKind::Tree,
        eps: c.tree.eps,
        dt: c.dt,
        theta: c.tree.theta,
        alpha: c.tree.alpha,
        rebuild: c.rebuild,
        timesteps: if c.block.is_some() {
            Timesteps::Block
        } else {
            Timesteps::Shared
        },
        levels: c.block.map_or(RunParams::default().levels, |b| b.levels),
        eta: c.block.map_or(RunParams::default().eta, |b| b.eta as f64),
        ..RunParams::default()
    }
}

/// `steps` steps of `params` on three ranks and on one GPU.
fn on_three_ranks_and_one_gpu(
    particles: &Particles,
    params: ClusterParams,
    steps: u64,
) -> [End; 2] {
    let (start, end, three) = run_on_ranks(3, particles, params, (steps, PotentialRule::Auto));
    [
        End {
            snapshot: three,
            energy_error: end.diagnostics.energy_error(&start.diagnostics),
            levels: end.levels,
        },
        run_on_one_gpu(particles, one_gpu_params(&params), steps),
    ]
}

/// Block time steps on three ranks follow one GPU's block steps: the same
/// particles on the same levels, at the same places within the MAC's
/// error, with the same energy error; the shared largest step ends
/// elsewhere. Each rank's busy sub-steps exchange trees for its active
/// groups alone, and the ranks agree which sub-steps are busy (a rank
/// whose particles are all on large steps still serves the others).
#[test]
fn block_steps_on_ranks_follow_one_gpus_block_steps() {
    let particles = Model::Plummer.generate(4096, 7).unwrap();
    let block = BlockConfig {
        dt_max: 1.0 / 16.0,
        eta: 0.02,
        eps: EPS,
        levels: 4,
    };
    let params = ClusterParams {
        dt: 1.0 / 16.0,
        block: Some(block),
        // A redraw between largest steps, and refits between builds.
        rebuild: 2,
        ..short_run_params(Rebalance::Every(3))
    };
    let steps = 8;
    let [three, one] = on_three_ranks_and_one_gpu(&particles, params, steps);
    let (de3, de1) = (three.energy_error, one.energy_error);
    let levels3 = three.levels.expect("block steps");
    let levels1 = one.levels.expect("block steps");
    let shared = ClusterParams {
        block: None,
        ..params
    };
    let shared_one = run_on_one_gpu(&particles, one_gpu_params(&shared), steps).snapshot;
    eprintln!("levels: three ranks {levels3:?}, one GPU {levels1:?}");
    eprintln!("|dE/E| three ranks {de3:e}, one GPU {de1:e}");
    // The particles spread over the levels (else this were a shared step).
    assert!(
        levels1.iter().filter(|&&n| n > 100).count() >= 3,
        "{levels1:?}"
    );
    for (a, b) in levels3.iter().zip(&levels1) {
        assert!(a.abs_diff(*b) <= 4096 / 100, "{levels3:?} {levels1:?}");
    }
    assert!((de3 - de1).abs() <= 0.1 * de1, "{de1:e} {de3:e}");
    let apart = position_differences(&three.snapshot, &one.snapshot);
    let from_shared = position_differences(&shared_one, &one.snapshot);
    let share_over = |d: &[f64], bound: f64| d.iter().filter(|&&x| x > bound).count();
    eprintln!(
        "positions apart: three ranks from one GPU, most {:e}, {} over 1e-4; shared steps, \
         most {:e}, {} over 1e-4",
        apart[apart.len() - 1],
        share_over(&apart, 1e-4),
        from_shared[from_shared.len() - 1],
        share_over(&from_shared, 1e-4),
    );
    // Measured on lavapipe: 46 particles over 1e-4, the most 1.2e-3; the
    // shared step 2925, the most 3.1e-2. The trees' MAC errors differ
    // between three ranks and one (a relative 1e-3 in |a|), and where a
    // particle's |a| lies at a level's edge they put it on the next level
    // for a step: it then moves by its other step's a dt² (~1e-3). The
    // rest agree as shared steps do (1e-4, the test above).
    assert!(share_over(&apart, 1e-4) <= 4096 / 50, "{apart:?}");
    assert!(share_over(&from_shared, 1e-4) >= 4096 / 2);
    assert!(apart[apart.len() - 1] * 10.0 < from_shared[from_shared.len() - 1]);
    assert_eq!(three.snapshot.time, steps as f64 / 16.0);
}

/// Shared steps with the tree refitted between builds (`--rebuild 4`) on
/// three ranks follow one GPU's.
#[test]
fn refits_between_builds_on_ranks_follow_one_gpu() {
    let particles = Model::Plummer.generate(4096, 5).unwrap();
    let params = ClusterParams {
        rebuild: 4,
        ..short_run_params(Rebalance::Every(6))
    };
    let steps = 16;
    let [three, one] = on_three_ranks_and_one_gpu(&particles, params, steps);
    let (de3, de1) = (three.energy_error, one.energy_error);
    let apart = largest_position_difference(&three.snapshot, &one.snapshot);
    eprintln!("|dE/E| three ranks {de3:e}, one GPU {de1:e}; positions apart {apart:e}");
    // Measured on lavapipe: one GPU 8.96e-6, three ranks 8.00e-6 (9.69e-6
    // while the ranks split the groups wide for their own domains into
    // points: their trees are not one GPU's, and 16 steps of N = 4096
    // carry their MAC errors apart by about a tenth either way).
    assert!((de3 - de1).abs() <= 0.15 * de1, "{de1:e} {de3:e}");
    assert!(apart < 1e-4, "{apart:e}");
}

/// A leapfrog checkpoint of 3000 particles in id order (ids ascending but
/// not 0..n, forces and kinds of their own), as a run on ranks writes it.
fn checkpoint_in_id_order(typed: bool) -> Checkpoint {
    let p = Model::Plummer.generate(3000, 9).unwrap();
    let n = p.len();
    Checkpoint {
        params: RunParams {
            solver: SolverKind::Tree,
            ..RunParams::default()
        },
        time: 0.25,
        steps: 32,
        base_time: 0.0,
        base_steps: 32,
        origin: 0.0,
        run_id: 77,
        ids: (0..n as u64).map(|k| 7 * k + 3).collect(),
        types: typed.then(|| (0..n).map(|k| (k % 7 % 6) as u8).collect()),
        e0: Some(Default::default()),
        de_max: 1e-6,
        tree_deepest: webgrav::tree::layout::MAX_DEPTH,
        request: "{\"t_end\":1.0}".into(),
        engine: EngineState::Leapfrog(StateReadback {
            acc_pot: (p.pos_mass.iter())
                .map(|m| AccPot {
                    acc: m.pos.map(|x| -x),
                    pot: -m.mass,
                })
                .collect(),
            pos_mass: p.pos_mass,
            vel: p.vel,
            index: (0..n as u32).collect(),
        }),
    }
}

/// A checkpoint written by ranks in parts (each its particles in id order;
/// one rank with none) is the whole checkpoint's bytes, and each of P
/// ranks reads back only its share of the particles' state (the ids and
/// kinds whole), checking the whole file's checksum: a damaged byte
/// anywhere is refused by every rank.
#[test]
fn a_checkpoint_written_in_parts_is_the_whole_and_read_in_shares() {
    let dir = common::fresh_dir("cluster_checkpoint_parts");
    for typed in [true, false] {
        let whole = checkpoint_in_id_order(typed);
        let path = dir.join("c.ckpt");
        let path = path.to_str().unwrap();
        let EngineState::Leapfrog(state) = &whole.engine else {
            unreachable!()
        };
        let parts = [0..1000, 1000..1000, 1000..3000];
        let outcomes = on_ranks(3, |comm| {
            let r = parts[comm.rank()].clone();
            let types = whole.types.as_ref().map(|t| &t[r.clone()]);
            let preamble = Preamble {
                params: &whole.params,
                time: whole.time,
                steps: whole.steps,
                base_time: whole.base_time,
                base_steps: whole.base_steps,
                origin: whole.origin,
                run_id: whole.run_id,
                ids: &whole.ids[r.clone()],
                types,
                e0: whole.e0,
                de_max: whole.de_max,
                tree_deepest: whole.tree_deepest,
                request: &whole.request,
            };
            let part = StateReadback {
                pos_mass: state.pos_mass[r.clone()].to_vec(),
                vel: state.vel[r.clone()].to_vec(),
                acc_pot: state.acc_pot[r].to_vec(),
                index: Vec::new(),
            };
            checkpoint::write_parted(path, &preamble, &part, &CommRanks(comm))
        });
        for o in outcomes {
            o.unwrap();
        }
        let bytes = std::fs::read(path).unwrap();
        assert!(bytes == whole.encode(), "typed {typed}: the bytes differ");
        for ranks in [1, 2, 3] {
            for rank in 0..ranks {
                let share = RankShare { rank, ranks };
                let got = Checkpoint::read_path_share(path, Some(share)).unwrap();
                let keep = share.of(3000);
                let expected = Checkpoint {
                    engine: EngineState::Leapfrog(StateReadback {
                        pos_mass: state.pos_mass[keep.clone()].to_vec(),
                        vel: state.vel[keep.clone()].to_vec(),
                        acc_pot: state.acc_pot[keep.clone()].to_vec(),
                        index: state.index[keep].to_vec(),
                    }),
                    ..whole.clone()
                };
                assert!(got == expected, "rank {rank} of {ranks}");
            }
        }
        for at in [bytes.len() / 5, bytes.len() / 2, bytes.len() - 12] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            std::fs::write(path, &damaged).unwrap();
            for rank in 0..2 {
                let share = Some(RankShare { rank, ranks: 2 });
                let e = Checkpoint::read_path_share(path, share).unwrap_err();
                assert!(e.to_string().contains("checksum"), "byte {at}: {e}");
            }
        }
    }
}

/// A redraw on the GPU (`ClusterRun::redrawn`, what `rebalance` does)
/// moves the particles as the host's `decompose` then `upload` do, bit for
/// bit: the same particles on each rank, in the same order, with the same
/// forces and ids. The start shares them by count (no walk yet), the
/// redraw by the walk's work, so particles change rank.
#[test]
fn redraws_on_the_gpu_move_the_particles_as_the_host_does() {
    let particles = Model::Plummer.generate(6000, 8).unwrap();
    for p in [2, 3] {
        let moved: usize = std::thread::scope(|s| {
            let particles = &particles;
            let handles: Vec<_> = ThreadComm::ranks(p)
                .into_iter()
                .map(|comm| {
                    s.spawn(move || {
                        let ctx = common::gpu();
                        let mine = RankParticles::equal_share(particles, comm.rank(), p);
                        let params = short_run_params(Rebalance::Every(0));
                        let mut run =
                            block_on(ClusterRun::new(&ctx, &comm, mine, (0.0, 0), params)).unwrap();
                        for _ in 0..2 {
                            block_on(run.step(&ctx, &comm)).unwrap();
                        }
                        let before = block_on(run.local_particles(&ctx, true)).unwrap();
                        let host = decompose(&comm, before.clone()).unwrap();
                        let mut parts = Default::default();
                        let (state, ids) = block_on(run.redrawn(&ctx, &comm, &mut parts)).unwrap();
                        let gpu = block_on(state.read(&ctx)).unwrap();
                        let ids = block_on(ids.read(&ctx)).unwrap();
                        let rank = comm.rank();
                        assert_eq!(ids, host.id, "P = {p}, rank {rank}");
                        let by_work = ids.len();
                        assert!(gpu.index.iter().enumerate().all(|(k, &i)| i == k as u32));
                        assert!(gpu.pos_mass == host.pos_mass, "P = {p}, rank {rank}");
                        assert!(gpu.vel == host.vel, "P = {p}, rank {rank}");
                        assert!(gpu.acc_pot == host.acc_pot, "P = {p}, rank {rank}");
                        // Those that left this rank.
                        let kept: std::collections::HashSet<u64> = ids.into_iter().collect();
                        let moved = before.id.iter().filter(|i| !kept.contains(i)).count();
                        // Cuts moved to the particle for a capacity of N/P
                        // (`capped`'s search of the keys) land where the
                        // host's do.
                        let cap = (particles.pos_mass.len() / p) as u64;
                        let parts = &mut Default::default();
                        let host = decompose_timed(&comm, before, cap, parts).unwrap();
                        let mut parts = Default::default();
                        let (state, ids) =
                            block_on(run.redrawn_within(&ctx, &comm, cap, &mut parts)).unwrap();
                        let gpu = block_on(state.read(&ctx)).unwrap();
                        let ids = block_on(ids.read(&ctx)).unwrap();
                        assert_eq!(ids.len() as u64, cap, "P = {p}, rank {rank}");
                        assert_eq!(ids, host.id, "capped, P = {p}, rank {rank}");
                        assert!(gpu.pos_mass == host.pos_mass, "capped, P = {p}");
                        (moved, by_work)
                    })
                })
                .collect();
            let (moved, by_work): (Vec<usize>, Vec<usize>) =
                handles.into_iter().map(|h| h.join().unwrap()).unzip();
            // The cuts by work alone are not N/P each: the capped ones moved.
            let equal = particles.pos_mass.len() / p;
            assert!(by_work.iter().any(|&c| c != equal), "P = {p}: {by_work:?}");
            moved.iter().sum()
        });
        eprintln!("P = {p}: {moved} particles changed rank");
        assert!(moved > 0, "P = {p}: the redraw moved nothing");
    }
}

/// A run's first domains are drawn on the GPU (`first_domains`): each
/// rank's share uploaded as it is and redrawn by count, giving the
/// particles, in their order, that the host's `decompose` (a work of 1
/// each) and `upload` give: from shares of unequal sizes, and with cuts
/// moved to the particle for a capacity of N/P; and a start where one
/// rank holds everything, which the host decomposes.
#[test]
fn a_runs_first_domains_are_drawn_on_the_gpu_as_the_host_draws_them() {
    let mut particles = Model::Plummer.generate(5000, 3).unwrap();
    // Shuffled (a file's order need not follow space): most particles
    // change rank.
    let n = particles.len();
    let order: Vec<usize> = {
        let mut o: Vec<usize> = (0..n).collect();
        o.sort_by_key(|&k| mix(k as u64 ^ 0x5eed));
        o
    };
    particles = Particles {
        pos_mass: order.iter().map(|&k| particles.pos_mass[k]).collect(),
        vel: order.iter().map(|&k| particles.vel[k]).collect(),
        id: order.iter().map(|&k| particles.id[k]).collect(),
    };
    for (p, capped) in [(1, false), (2, false), (3, false), (3, true), (2, true)] {
        for one_holds_all in [false, true] {
            std::thread::scope(|s| {
                let particles = &particles;
                for comm in ThreadComm::ranks(p) {
                    s.spawn(move || {
                        let ctx = common::gpu();
                        let r = comm.rank();
                        // Rank r holds (r + 1) parts of P(P + 1)/2, or
                        // with capped cuts 1/P (a share over the capacity
                        // would send the start to the host).
                        let weight = |r: usize| match capped {
                            true => r * n / p,
                            false => (r * (r + 1) / 2) * n / (p * (p + 1) / 2),
                        };
                        let range = match one_holds_all {
                            true if r == 0 => 0..n,
                            true => 0..0,
                            false => weight(r)..weight(r + 1),
                        };
                        let mut mine = RankParticles::of_range(particles, range);
                        // (Work the start must not read.)
                        mine.work
                            .iter_mut()
                            .enumerate()
                            .for_each(|(k, w)| *w = k as f32);
                        let capacity = match capped {
                            true => n.div_ceil(p) as u64,
                            false => n as u64,
                        };
                        let config = short_run_params(Rebalance::Every(0)).tree;
                        let mut unit = mine.clone();
                        unit.work.fill(1.0);
                        let host = decompose_timed(&comm, unit, capacity, &mut Default::default());
                        let host = host.unwrap();
                        let mut parts = Default::default();
                        let (_solver, state, ids) = block_on(first_domains(
                            &ctx,
                            &comm,
                            mine.into(),
                            (config, capacity),
                            &mut parts,
                        ))
                        .unwrap();
                        let gpu = block_on(state.read(&ctx)).unwrap();
                        let ids = block_on(ids.read(&ctx)).unwrap();
                        let case =
                            format!("P = {p}, capped {capped}, all on 0 {one_holds_all}, rank {r}");
                        assert!(ids.len() as u64 <= capacity, "{case}");
                        assert_eq!(ids, host.id, "{case}");
                        assert!(gpu.index.iter().enumerate().all(|(k, &i)| i == k as u32));
                        assert!(gpu.pos_mass == host.pos_mass, "{case}");
                        assert!(gpu.vel == host.vel, "{case}");
                        // (The forces stay behind: the first evaluation
                        // makes them.)
                        assert_eq!(parts.on_host, one_holds_all && p > 1, "{case}");
                    });
                }
            });
        }
    }
}

#[test]
fn ranks_start_from_shares_left_on_their_gpus_as_from_the_host() {
    // A Plummer sphere's shares sampled on the ranks' GPUs and left there
    // (`FirstShare::Sampled`) give the first domains of the same shares
    // read back: the same particles, order and ids (the ids of the second
    // share start past 0). With three ranks one holds no chunk, and the
    // start goes through the host.
    let n = SUM_CHUNK + 3000;
    let config = short_run_params(Rebalance::Every(0)).tree;
    let params = ModelParams::default();
    for p in [2, 3] {
        on_ranks(p, |comm| {
            let ctx = common::gpu();
            let gather = CommSums(comm);
            let share = || Share::of_rank(n, comm.rank(), p, &gather);
            let sampled = Model::Plummer.sample_share_on_gpu(&ctx, n, 3, share());
            let sampled = block_on(sampled).unwrap().expect("a Plummer sphere stays");
            let host = block_on(Model::Plummer.generate_share_on(&ctx, n, 3, &params, share()));
            let host = host.unwrap().particles;
            let host = RankParticles::of_range(&host, 0..host.len());
            let (mut left, mut read) = (RedrawParts::default(), RedrawParts::default());
            let start = |mine: FirstShare, parts: &mut RedrawParts| {
                let (_solver, state, ids) =
                    block_on(first_domains(&ctx, comm, mine, (config, n as u64), parts)).unwrap();
                (
                    block_on(state.read(&ctx)).unwrap(),
                    block_on(ids.read(&ctx)).unwrap(),
                )
            };
            let (a, a_ids) = start(FirstShare::Sampled(sampled), &mut left);
            let (b, b_ids) = start(host.into(), &mut read);
            let case = format!("P = {p}, rank {}", comm.rank());
            assert_eq!(a_ids, b_ids, "{case}");
            assert!(a.pos_mass == b.pos_mass && a.vel == b.vel, "{case}");
            assert_eq!(left.on_host, p == 3, "{case}");
            assert_eq!(read.on_host, p == 3, "{case}");
        });
    }
}

/// This rank's forces on `state` (ids `ids`) after `solver` evaluated
/// them, by global id.
fn forces_by_id(
    ctx: &webgrav::gpu::GpuContext,
    solver: &DistributedTree,
    state: &webgrav::state::GpuParticles,
    ids: &[u64],
) -> Vec<(u64, AccPot)> {
    block_on(solver.finish(ctx)).unwrap();
    let s = block_on(state.read(ctx)).unwrap();
    let mut out: Vec<(u64, AccPot)> = s
        .index
        .iter()
        .zip(&s.acc_pot)
        .map(|(&i, a)| (ids[i as usize], *a))
        .collect();
    out.sort_by_key(|&(id, _)| id);
    out
}

/// A solver moved to a redrawn state (`DistributedTree::redrawn`) gives
/// the forces a solver made for that state gives: where its arrays hold
/// the new state they are kept, with everything bound to them, and what
/// reads the particles reads the new ones; where they cannot, it is made
/// anew with room.
#[test]
fn a_solver_moved_to_a_redrawn_state_gives_a_new_solvers_forces() {
    let config = TreeConfig {
        theta: 0.6,
        eps: EPS,
        alpha: 0.1,
    };
    let first = Model::Plummer.generate(6000, 3).unwrap();
    // Fewer particles than the room, then more.
    let fewer = Model::Plummer.generate(5000, 4).unwrap();
    let more = Model::Plummer.generate(12000, 5).unwrap();
    on_ranks(2, |comm| {
        let ctx = common::gpu();
        let state_of = |particles: &Particles| {
            let mine = RankParticles::equal_share(particles, comm.rank(), comm.size());
            upload(&ctx, decompose(comm, mine).unwrap()).unwrap()
        };
        let (state, _) = state_of(&first);
        let room = state.n + state.n / 2;
        let mut solver = DistributedTree::with_room(&ctx, &state, config, room).unwrap();
        block_on(solver.evaluate_fresh(&ctx, comm)).unwrap();
        for (particles, kept) in [(&fewer, true), (&more, false)] {
            let (moved_state, ids) = state_of(particles);
            assert_eq!(solver.tree.holds(moved_state.n), kept);
            solver
                .redrawn(&ctx, &moved_state, moved_state.n + moved_state.n / 2)
                .unwrap();
            assert!(solver.tree.holds(moved_state.n));
            // The same history as the new solver's below: the split of
            // groups that span the other domain depends on what the last
            // evaluation learnt of it.
            solver.forget_other_domains(&ctx);
            block_on(solver.evaluate_fresh(&ctx, comm)).unwrap();
            let moved = forces_by_id(&ctx, &solver, &moved_state, &ids);
            let (state, same_ids) = state_of(particles);
            assert_eq!(ids, same_ids);
            let mut new = DistributedTree::new(&ctx, &state, config).unwrap();
            block_on(new.evaluate_fresh(&ctx, comm)).unwrap();
            let made = forces_by_id(&ctx, &new, &state, &ids);
            // The same trees (the kept arrays only hold more), cut and
            // walked alike: the same sums, to their rounding (measured on
            // lavapipe: a unit in the last place here and there). A walk
            // of the old particles, or a tree cut from them, is off by
            // O(1).
            assert_eq!(moved.len(), made.len());
            let mut worst = 0.0f64;
            for ((id, a), (same, b)) in moved.iter().zip(&made) {
                assert_eq!(id, same);
                let norm = |v: [f32; 3]| v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
                let diff = norm(std::array::from_fn(|k| a.acc[k] - b.acc[k])) / norm(b.acc);
                let pot = ((a.pot - b.pot) / b.pot).abs() as f64;
                worst = worst.max(diff).max(pot);
            }
            eprintln!(
                "rank {}, kept {kept}: largest difference {worst:e}",
                comm.rank()
            );
            assert!(worst < 1e-5, "rank {}, kept {kept}: {worst:e}", comm.rank());
            assert!(solver.last.imported.trees > 0, "{:?}", solver.last);
        }
    });
}

// A parallel run's precise energy is one GPU's: each rank sums its own
// particles' potentials against every rank's (in double-single on its GPU
// above the host's bound), so the ranks' W is the f64 sum's to rounding;
// `auto` there reports the trees' own potentials, as one GPU does, and
// the ranks sum them on their GPUs.
#[test]
fn ranks_sum_the_precise_potential_together() {
    let particles = Model::Plummer.generate(4500, 6).unwrap();
    let params = short_run_params(Rebalance::Every(0));
    let mass: Vec<f64> = particles.pos_mass.iter().map(|p| p.mass as f64).collect();
    let pos: Vec<[f64; 3]> = particles
        .pos_mass
        .iter()
        .map(|p| p.pos.map(f64::from))
        .collect();
    let phi = potentials_f64(&mass, &pos, EPS as f64);
    let w: f64 = 0.5 * phi.iter().zip(&mass).map(|(f, m)| f * m).sum::<f64>();
    let rel = |d: &ClusterDiagnostics| ((d.diagnostics.potential - w) / w).abs();
    for p in [1, 3] {
        let (exact, _, _) = run_on_ranks(p, &particles, params, (0, PotentialRule::Exact));
        assert_eq!(exact.potential_sum, PotentialSum::GpuDoubleSingle);
        assert!(rel(&exact) < 1e-13, "{p} ranks: W off by {:e}", rel(&exact));
        let (auto, _, _) = run_on_ranks(p, &particles, params, (0, PotentialRule::Auto));
        assert_eq!(auto.potential_sum, PotentialSum::Solver);
        // The trees' f32 potentials: off by their MAC's error, not more.
        eprintln!("{p} ranks: the trees' W off by {:e}", rel(&auto));
        assert!(rel(&auto) < 1e-3, "{p} ranks: W off by {:e}", rel(&auto));
        // Without a precise sum each rank sums on its GPU, its state left
        // there: the host's sums of the same state to f32's rounding of
        // each particle's terms (not the same bits: not read back).
        let (a, e) = (&auto.diagnostics, &exact.diagnostics);
        // (Its bits tell the path: a read-back would give the host's.)
        assert!(a.kinetic != e.kinetic, "{p} ranks: K read back");
        assert!(
            ((a.kinetic - e.kinetic) / e.kinetic).abs() < 1e-8,
            "{p} ranks: {a:?} {e:?}"
        );
        for k in 0..3 {
            assert!(
                (a.momentum[k] - e.momentum[k]).abs() < 1e-9,
                "{p} ranks: {a:?} {e:?}"
            );
            let dl = a.angular_momentum[k] - e.angular_momentum[k];
            assert!(dl.abs() < 1e-9, "{p} ranks: {a:?} {e:?}");
            let dx = a.center_of_mass[k] - e.center_of_mass[k];
            assert!(dx.abs() < 1e-9, "{p} ranks: {a:?} {e:?}");
        }
    }
}

/// `f(comm)` on each of `p` ranks (threads, `ThreadComm`), in rank order.
fn on_ranks<T: Send>(p: usize, f: impl Fn(&ThreadComm) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadComm::ranks(p)
            .into_iter()
            .map(|comm| {
                let f = &f;
                s.spawn(move || f(&comm))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Each rank's share of a model, sampled by `p` ranks together with
/// `sample(share)`, in rank order.
fn sampled_by_ranks<T: Send>(p: usize, n: usize, sample: impl Fn(Share) -> T + Sync) -> Vec<T> {
    on_ranks(p, |comm| {
        let gather = CommSums(comm);
        sample(Share::of_rank(n, comm.rank(), comm.size(), &gather))
    })
}

/// `galaxy` sampled on the CPU by `p` ranks in shares is its whole
/// realization, bit for bit: positions and velocities in f64, masses,
/// tags, and ids (the whole model's indices).
fn shares_are_the_whole<G>(galaxy: &G, n: usize, p: usize)
where
    G: RealizeOnCpu + for<'a> Realize<Shared<'a, Cpu>> + Sync,
{
    let whole = galaxy.realize(n, 6).unwrap();
    let parts = sampled_by_ranks(p, n, |share| {
        let shared = Shared {
            sampler: &Cpu,
            share,
        };
        now(galaxy.realize_with(n, 6, &shared)).unwrap()
    });
    let mut next = 0;
    for part in parts {
        let held = part.span.held();
        assert_eq!(held.start, next, "the shares follow each other");
        next = held.end;
        assert_eq!(part.pos[..], whole.pos[held.clone()]);
        assert_eq!(part.vel[..], whole.vel[held.clone()]);
        assert_eq!(part.mass[..], whole.mass[held.clone()]);
        assert_eq!(part.tag[..], whole.tag[held.clone()]);
        assert_eq!(part.components, whole.components);
        let ids: Vec<u64> = (held.start as u64..held.end as u64).collect();
        assert_eq!(part.particles().id, ids);
    }
    assert_eq!(next, n);
}

#[test]
fn galaxies_sampled_in_shares_are_the_whole_model_to_the_bit() {
    // Three chunks and a bit: shares of 2 and 3 ranks cut the merger's
    // second galaxy and the minor mergers' satellites, whose centres of
    // mass then come from the ranks' sums together.
    let n = 3 * SUM_CHUNK + 4321;
    for p in [2, 3] {
        shares_are_the_whole(&catalog::bonsai_merger(3.0, 10.0), n, p);
        shares_are_the_whole(&catalog::minor_mergers(4), n, p);
        shares_are_the_whole(&catalog::disk_galaxy(1.2), n, p);
    }
}

#[test]
fn ranks_sample_their_shares_of_a_model_on_their_gpus() {
    // Each rank's GPU samples its own particles: together one GPU's
    // model, to the bit (the same kernel on the same streams).
    let n = SUM_CHUNK + 3000;
    let params = ModelParams::default();
    for model in [Model::MilkyWay, Model::Plummer] {
        let whole = block_on(model.generate_on(&common::gpu(), n, 3, &params)).unwrap();
        let parts = sampled_by_ranks(2, n, |share| {
            let ctx = common::gpu();
            block_on(model.generate_share_on(&ctx, n, 3, &params, share)).unwrap()
        });
        assert_eq!(parts[0].particles.len(), SUM_CHUNK, "{model:?}");
        let mut joined = parts[0].clone();
        let (j, second) = (&mut joined.particles, &parts[1].particles);
        j.pos_mass.extend(&second.pos_mass);
        j.vel.extend(&second.vel);
        j.id.extend(&second.id);
        joined.tags.extend(&parts[1].tags);
        assert_eq!(joined, whole, "{model:?}");
    }
}

#[test]
fn no_rank_gets_more_particles_than_its_gpu_holds() {
    // Work piled on the inner tenth would give the outer domain most of
    // the particles; with a capacity of exactly N/P each rank gets its
    // N/P, to the particle, and with less the run is refused.
    let n = 3000;
    let particles = Model::Plummer.generate(n, 8).unwrap();
    let split = |p: usize, capacity: u64| {
        on_ranks(p, |comm| {
            let mut mine = RankParticles::equal_share(&particles, comm.rank(), p);
            for (w, pm) in mine.work.iter_mut().zip(&mine.pos_mass) {
                let r2: f32 = pm.pos.iter().map(|x| x * x).sum();
                *w = if r2 < 0.1 { 50.0 } else { 1.0 };
            }
            let parts = &mut DecomposeParts::default();
            decompose_timed(comm, mine, capacity, parts).map(|m| m.id.len())
        })
    };
    let by_work: Vec<usize> = split(2, u64::MAX).into_iter().map(Result::unwrap).collect();
    assert!(by_work.iter().any(|&c| c > 1600), "{by_work:?}");
    for p in [2, 3] {
        let counts: Vec<usize> = (split(p, (n / p) as u64).into_iter())
            .map(Result::unwrap)
            .collect();
        assert_eq!(counts, vec![n / p; p]);
    }
    for refused in split(2, 1400) {
        let e = refused.unwrap_err().to_string();
        assert!(e.contains("do not fit 2 GPUs"), "{e}");
    }
}

/// Points uniform in the shell r0 < |x| < r1 about `centre`, from a
/// fixed stream (SplitMix64: the models' `mix` of a golden-ratio count).
fn shell(n: usize, (r0, r1): (f32, f32), centre: [f32; 3], seed: u64) -> Vec<[f32; 3]> {
    let mut state = seed;
    let mut uniform = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        (mix(state) >> 11) as f32 / (1u64 << 53) as f32
    };
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let x: [f32; 3] = std::array::from_fn(|_| r1 * (2.0 * uniform() - 1.0));
        let r = x.iter().map(|v| v * v).sum::<f32>().sqrt();
        if r > r0 && r < r1 {
            out.push(std::array::from_fn(|k| centre[k] + x[k]));
        }
    }
    out
}

/// A rank's share of `points` (each of mass 1/65,536, at rest), with ids
/// from `first_id`.
fn ranks_particles(points: Vec<[f32; 3]>, first_id: u64) -> RankParticles {
    let n = points.len();
    RankParticles {
        pos_mass: points
            .into_iter()
            .map(|pos| PosMass {
                pos,
                mass: 1.0 / 65536.0,
            })
            .collect(),
        vel: vec![Velocity::new([0.0; 3]); n],
        acc_pot: vec![AccPot::default(); n],
        id: (first_id..first_id + n as u64).collect(),
        work: vec![1.0; n],
    }
}

/// A domain around a hole that another domain fills (as a galaxy's outer
/// parts around the centre another GPU holds): the outer rank has a
/// sparse shell about the inner rank's dense ball, and a dense clump
/// elsewhere that takes most of its summary's boxes by count. Picked by
/// count alone (the first evaluation, which knows no other summary), the
/// shell's few boxes span the ball, and the inner rank sends the outer
/// one all it holds there; once the picks weigh cells by the particles of
/// the other domain they would span (the evaluations after), the outer
/// rank imports less, near what the whole summary brings, and its forces
/// keep the MAC's errors. How much less depends on where the points
/// fall, so three realizations are asserted on together.
#[test]
fn summaries_that_know_the_other_domains_do_not_span_them() {
    let config = TreeConfig {
        theta: 0.6,
        eps: EPS,
        alpha: 0.0,
    };
    let mut imports = Vec::new();
    for (realization, seed) in [1, 11, 21].into_iter().enumerate() {
        // 20,000 in the shell 0.6 < r < 1.2, 60,000 in a clump of radius
        // 0.2 three units off; the inner rank's 20,000 in r < 0.2.
        let mut outer = shell(20_000, (0.6, 1.2), [0.0; 3], seed);
        outer.extend(shell(60_000, (0.0, 0.2), [3.0, 0.0, 0.0], seed + 1));
        let outer = ranks_particles(outer, 0);
        let inner = ranks_particles(shell(20_000, (0.0, 0.2), [0.0; 3], seed + 2), 1 << 20);
        // Imports of two evaluations with the summary limited to 32 × 32
        // boxes (about 80 particles a box, so that boxes are scarce as
        // they are at 6.7·10^7 particles a rank), and of one with the
        // whole summary; the limited ones' forces.
        let reports = on_ranks(2, |comm| {
            let ctx = common::gpu();
            let mine = if comm.rank() == 0 { &outer } else { &inner };
            let (state, ids) = upload(&ctx, mine.clone()).unwrap();
            let mut limited = DistributedTree::new(&ctx, &state, config).unwrap();
            limited.limit_summary(&ctx, 32, 32);
            let mut evaluations = Vec::new();
            for _ in 0..2 {
                block_on(limited.evaluate(&ctx, comm)).unwrap();
                let forces = forces_by_id(&ctx, &limited, &state, &ids);
                evaluations.push((limited.last.imported.particles, forces));
            }
            let (state, _) = upload(&ctx, mine.clone()).unwrap();
            let mut whole = DistributedTree::new(&ctx, &state, config).unwrap();
            block_on(whole.evaluate(&ctx, comm)).unwrap();
            block_on(whole.finish(&ctx)).unwrap();
            (evaluations, whole.last.imported.particles)
        });
        let (evaluations, whole) = &reports[0];
        let (by_count, knowing) = (evaluations[0].0, evaluations[1].0);
        eprintln!(
            "realization {realization}: the outer rank imported {by_count} particles by \
             count, {knowing} knowing the inner rank's summary, {whole} with the whole summary"
        );
        imports.push((by_count, knowing, *whole));
        // Both cut trees hold what the shell's groups open: against a
        // direct sum over every particle, a sample of the shell's
        // particles has the MAC's errors both times (the second walks the
        // groups across the ball one particle at a time,
        // `cluster::spanning`). A tree that lacked cells a group opens
        // would be off by O(1).
        let mut all = outer.pos_mass.clone();
        all.extend(&inner.pos_mass);
        let sample: Vec<usize> = (0..20_000).step_by(10).collect();
        let exact = forces_on(&all, &sample, EPS as f64);
        let errors = |forces: &[(u64, AccPot)]| {
            let acc: Vec<AccPot> = sample.iter().map(|&i| forces[i].1).collect();
            ErrorStats::of(&acc_errors(&acc, &exact))
        };
        let (first, second) = (errors(&evaluations[0].1), errors(&evaluations[1].1));
        eprintln!("the shell's errors: {first:?}, then {second:?}");
        assert!(second.p99 <= 1.5 * first.p99, "{first:?} → {second:?}");
        assert!(second.max <= 1.5 * first.max, "{first:?} → {second:?}");
    }
    // Measured on lavapipe: 15,676 → 8,979 (8,964 with the whole summary),
    // 9,789 → 2,975 (2,975), 8,111 → 2,619 (2,578). Each realization
    // imports less once its rank knows the other, and near the whole
    // summary's; together, far less than by count.
    for &(by_count, knowing, whole) in &imports {
        assert!(knowing < by_count, "{imports:?}");
        assert!(knowing * 10 <= whole * 13, "{imports:?}");
    }
    let sum = |k: usize| -> u64 { imports.iter().map(|i| [i.0, i.1, i.2][k]).sum() };
    assert!(sum(0) * 2 >= sum(1) * 3, "{imports:?}");
    assert!(sum(1) * 10 <= sum(2) * 11, "{imports:?}");
}

/// A walk group across another domain: a sparse shell's groups about
/// another rank's dense ball span it, and such a group opens the ball
/// particle by particle (on two H200s, one group of the outer rank of a
/// Milky Way made 6.5 million interactions a particle). Once the ranks
/// know each other's summaries, such groups walk as one-particle groups
/// (`cluster::spanning`): far fewer interactions, and forces within what
/// the MAC allows a particle that walks alone.
#[test]
fn groups_across_another_domain_walk_one_particle_at_a_time() {
    let config = TreeConfig {
        theta: 0.6,
        eps: EPS,
        alpha: 0.0,
    };
    // A clump ten units off widens the outer rank's system, so that its
    // shell's groups are not too wide for it (groups.wgsl splits those).
    let mut outer = shell(500, (0.3, 1.0), [0.0; 3], 4);
    outer.extend(shell(5_000, (0.0, 0.2), [10.0, 0.0, 0.0], 6));
    let outer = ranks_particles(outer, 0);
    let inner = ranks_particles(shell(20_000, (0.0, 0.25), [0.0; 3], 5), 1 << 20);
    // The first evaluation knows no other summary; the second does.
    let evaluations = on_ranks(2, |comm| {
        let ctx = common::gpu();
        let mine = if comm.rank() == 0 { &outer } else { &inner };
        let (state, ids) = upload(&ctx, mine.clone()).unwrap();
        let mut solver = DistributedTree::new(&ctx, &state, config).unwrap();
        (0..2)
            .map(|_| {
                block_on(solver.evaluate(&ctx, comm)).unwrap();
                let forces = forces_by_id(&ctx, &solver, &state, &ids);
                let counts = block_on(solver.tree.interaction_counts(&ctx)).unwrap();
                let most = counts.iter().map(|c| c.pp + c.pc).max().unwrap();
                (most, forces)
            })
            .collect::<Vec<_>>()
    });
    let mut all = outer.pos_mass.clone();
    all.extend(&inner.pos_mass);
    let errors = |forces: &[(u64, AccPot)]| {
        let acc: Vec<AccPot> = forces.iter().map(|&(_, a)| a).collect();
        let ids: Vec<usize> = forces
            .iter()
            .map(|&(id, _)| {
                let id = id as usize;
                if id < outer.len() {
                    id
                } else {
                    outer.len() + id - (1 << 20)
                }
            })
            .collect();
        ErrorStats::of(&acc_errors(&acc, &forces_on(&all, &ids, EPS as f64)))
    };
    let (whole, split) = (&evaluations[0][0], &evaluations[0][1]);
    let (before, after) = (errors(&whole.1), errors(&split.1));
    eprintln!(
        "the shell's busiest particle: {} interactions, then {}; errors {before:?} then {after:?}",
        whole.0, split.0
    );
    // Measured on lavapipe: 20,481 interactions, then 2,300; p99 1.9e-3
    // then 2.1e-3 (a point's box opens less than its group's did), the
    // largest 5.2e-3 both times.
    assert!(split.0 * 4 < whole.0, "{} → {}", whole.0, split.0);
    assert!(after.p99 <= 1.5 * before.p99, "{before:?} → {after:?}");
    assert!(after.max <= 1.5 * before.max, "{before:?} → {after:?}");
}
