//! The run interface over every integrator: read-outs in input order with
//! consistent diagnostics, reconfiguration in place and across integrators,
//! and the Hermite run behind it equal to its integrator driven directly.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use pollster::block_on;
use webgrav::gpu::GpuContext;
use webgrav::hermite::{HermiteSimulation, Precision};
use webgrav::run::hermite::hermite_config;
use webgrav::run::{Readout, Run, RunConfig, RunParams, SolverKind};
use webgrav::state::{Model, Particles};

fn params(solver: SolverKind) -> RunParams {
    RunParams {
        solver,
        eps: 0.05,
        dt: 1.0 / 128.0,
        theta: 0.5,
        alpha: 0.0,
        ..RunParams::default()
    }
}

fn start() -> Particles {
    let mut p = Model::Plummer.generate(256, 12).unwrap();
    // Ids that are not positions, so a read-out in the wrong order shows.
    p.id = (0..256).map(|k| 5000 - 3 * k).collect();
    p
}

// A Hermite run through `Run` takes exactly the block steps of the
// integrator driven by hand, and reads out its state: positions identical
// to the bit, in input order, with its ids.
#[test]
fn hermite_run_is_its_integrator() {
    let ctx = common::gpu();
    let p = start();
    let rp = RunParams {
        precision: Precision::F32,
        ..params(SolverKind::Hermite4)
    };
    let mut run = block_on(Run::new(&ctx, &p, 0.0, rp.validate().unwrap())).unwrap();
    block_on(run.run_to(&ctx, 0.125, |_, _| true)).unwrap();
    let r = block_on(run.readout(&ctx)).unwrap();
    let mut sim = block_on(HermiteSimulation::new(&ctx, &p, hermite_config(&rp), 0.0)).unwrap();
    block_on(sim.run_until(0.125)).unwrap();
    let (q, _) = sim.particles();
    assert_eq!(r.snapshot.particles, q);
    assert_eq!(r.snapshot.particles.id, p.id);
    assert_eq!(r.steps, sim.stats.block_steps);
    assert_eq!(r.snapshot.time, 0.125);
    let h = r.hermite.expect("Hermite statistics");
    assert_eq!(h.levels.iter().sum::<u64>(), 256);
    // E from the read-out is the integrator's DS energy.
    let e = block_on(sim.energy()).unwrap().2;
    assert_eq!(r.diagnostics.total, e);
}

// ε, Δt and θ change in place (the state stays on the GPU, the energy
// reference restarts); a new solver or integrator starts from the state
// read back, at the same time and in the same order. Whatever the path,
// the particles' identities and masses stay with them, and the energy
// error after the switch is that of the new solver (small), not a jump.
#[test]
fn reconfigure_in_place_and_across_integrators() {
    let ctx = common::gpu();
    let p = start();
    let mut run = block_on(Run::new(
        &ctx,
        &p,
        0.0,
        params(SolverKind::Tree).validate().unwrap(),
    ))
    .unwrap();
    run.queue(&ctx, 8);
    let before = block_on(run.readout(&ctx)).unwrap();
    assert!(before.e0_reset);
    let tuned = RunParams {
        theta: 0.4,
        eps: 0.04,
        dt: 1.0 / 256.0,
        ..params(SolverKind::Tree)
    };
    block_on(run.reconfigure(&ctx, tuned.validate().unwrap())).unwrap();
    let after = block_on(run.readout(&ctx)).unwrap();
    assert!(after.e0_reset, "the energy reference restarts");
    assert_eq!(after.snapshot.time, before.snapshot.time);
    // Same state; the new softening deepens the potential.
    assert_eq!(after.snapshot.particles, before.snapshot.particles);
    assert!(after.diagnostics.potential < before.diagnostics.potential);
    run.queue(&ctx, 8);
    assert_eq!(run.time(), 8.0 / 128.0 + 8.0 / 256.0);
    for solver in [SolverKind::Hermite6, SolverKind::Direct] {
        let t = run.time();
        block_on(run.reconfigure(&ctx, params(solver).validate().unwrap())).unwrap();
        let r0 = block_on(run.readout(&ctx)).unwrap();
        assert_eq!(r0.snapshot.time, t, "{solver:?}");
        assert_eq!(r0.snapshot.particles.id, p.id, "{solver:?}");
        let masses = |q: &Particles| q.pos_mass.iter().map(|x| x.mass).collect::<Vec<_>>();
        assert_eq!(masses(&r0.snapshot.particles), masses(&p));
        block_on(run.run_to(&ctx, t + 1.0 / 16.0, |_, _| true)).unwrap();
        let r1 = block_on(run.readout(&ctx)).unwrap();
        assert!(r1.snapshot.time > t);
        // 1/16 time unit at ε = 0.05: Hermite ~1e-9, leapfrog ~1e-6; a
        // state carried over wrongly (velocities lost, order scrambled)
        // gives order-one jumps.
        assert!(
            r1.energy_error() < 1e-4,
            "{solver:?}: {}",
            r1.energy_error()
        );
    }
}

// A Hermite run keeps its own clock from 0, so it starts at any time: a
// snapshot at t = 0.3 (not a multiple of the block steps) runs to 0.5.
#[test]
fn hermite_run_starts_at_any_time() {
    let ctx = common::gpu();
    let p = start();
    let config = params(SolverKind::Hermite4).validate().unwrap();
    let mut run = block_on(Run::new(&ctx, &p, 0.3, config)).unwrap();
    block_on(run.run_to(&ctx, 0.5, |_, _| true)).unwrap();
    let r = block_on(run.readout(&ctx)).unwrap();
    assert!(
        r.snapshot.time > 0.3 && r.snapshot.time <= 0.5,
        "{}",
        r.snapshot.time
    );
    assert!(r.energy_error() < 1e-5, "{}", r.energy_error());
}

// With the submission budget forced low, a direct leapfrog submits every
// force chunk on its own (as a page on a slow GPU must, so no submission
// runs long enough for the device to be reset): the run is bit-identical.
#[test]
fn split_submissions_change_nothing() {
    let ctx = common::gpu();
    // N = 1024: four blocks of 256 sinks, each 262 144 interactions, so a
    // budget of 1000 makes four submissions per evaluation.
    let p = Model::Plummer.generate(1024, 12).unwrap();
    let config = params(SolverKind::Direct).validate().unwrap();
    let run_with = |budget: f64| {
        let mut ctx = ctx.clone();
        ctx.interactions_per_submission = budget;
        let mut run = block_on(Run::new(&ctx, &p, 0.0, config)).unwrap();
        run.queue(&ctx, 5);
        block_on(run.readout(&ctx)).unwrap().snapshot
    };
    assert_eq!(run_with(f64::INFINITY), run_with(1e3));
}

// A run from a model left on the GPU (`Run::from_sampled`, the CLI's
// start of a Plummer sphere) is the run from the same model read back and
// uploaded: the same state, forces and diagnostics to the bit, at the start
// and after steps with the acceleration MAC; and a Hermite solver is
// refused, not run on a state it cannot take.
#[test]
fn a_run_from_a_model_on_the_gpu_is_the_run_from_its_read_back() {
    use webgrav::state::generate;
    let ctx = common::gpu();
    let n = 3000;
    let config = RunParams {
        alpha: 0.01,
        ..params(SolverKind::Tree)
    }
    .validate()
    .unwrap();
    let read_back = block_on(generate::plummer(&ctx, n, 4, false)).unwrap();
    let mut host = block_on(Run::from_particles(&ctx, read_back, 0.0, config)).unwrap();
    let sampled = block_on(generate::plummer_on_gpu(&ctx, n, 4, false)).unwrap();
    let mut gpu = block_on(Run::from_sampled(&ctx, sampled, 0.0, config)).unwrap();
    assert!(gpu.last_good().is_none());
    assert_eq!(gpu.ids(), host.ids());
    for steps in [0, 6] {
        host.queue(&ctx, steps);
        gpu.queue(&ctx, steps);
        let (a, b) = (
            block_on(host.readout(&ctx)).unwrap(),
            block_on(gpu.readout(&ctx)).unwrap(),
        );
        assert_eq!(a.snapshot, b.snapshot, "after {steps} steps");
        assert_eq!(a.acc_pot, b.acc_pot, "after {steps} steps");
        assert_eq!(a.diagnostics, b.diagnostics, "after {steps} steps");
        assert!(a.snapshot.particles.pos_mass.iter().all(|x| x.mass > 0.0));
    }
    let hermite = params(SolverKind::Hermite4).validate().unwrap();
    let sampled = block_on(generate::plummer_on_gpu(&ctx, n, 4, false)).unwrap();
    assert!(matches!(
        block_on(Run::from_sampled(&ctx, sampled, 0.0, hermite)),
        Err(webgrav::Error::InvalidParameter(_))
    ));
}

// The batch clock times each batch it has room for, as GPU time within the
// wall time of the batches, and changes nothing the run computes.
#[test]
fn clocked_batches_are_timed_and_change_nothing() {
    let ctx = common::gpu();
    let p = start();
    let config = params(SolverKind::Tree).validate().unwrap();
    let run_with = |clock: bool| {
        block_on(async {
            let mut run = Run::new(&ctx, &p, 0.0, config).await.unwrap();
            run.readout(&ctx).await.unwrap();
            if clock {
                run.clock_batches(&ctx, 2);
            }
            let start = std::time::Instant::now();
            for _ in 0..3 {
                run.queue(&ctx, 2);
            }
            let batches = run.batch_gpu_ms(&ctx).await.unwrap();
            let wall_ms = start.elapsed().as_secs_f64() * 1e3;
            (run.readout(&ctx).await.unwrap().snapshot, batches, wall_ms)
        })
    };
    let (plain, unclocked, _) = run_with(false);
    assert!(unclocked.is_none());
    let (clocked, batches, wall_ms) = run_with(true);
    assert_eq!(plain, clocked);
    if ctx.has_timestamps {
        let batches = batches.expect("timestamps clock batches");
        assert_eq!(batches.len(), 2, "room for two of three batches");
        assert!(batches.iter().all(|&ms| ms > 0.0), "{batches:?}");
        assert!(
            batches.iter().sum::<f64>() <= wall_ms,
            "{batches:?} in {wall_ms} ms"
        );
    } else {
        assert!(batches.is_none());
    }
}

// A run stopped at a checkpoint and resumed from it ends bit-identical to
// the run that went on: leapfrog with direct and tree forces, Hermite 4
// and 6 (f64 bodies with their own times and steps), energy reference and
// dE_max included.
#[test]
fn resume_is_bit_identical() {
    let ctx = common::gpu();
    let p = start();
    for solver in SolverKind::ALL.iter().copied() {
        let config = params(solver).validate().unwrap();
        let through = block_on(async {
            let mut run = Run::new(&ctx, &p, 0.0, config).await.unwrap();
            run.readout(&ctx).await.unwrap();
            run.run_to(&ctx, 0.25, |_, _| true).await.unwrap();
            run.readout(&ctx).await.unwrap()
        });
        let resumed = block_on(async {
            let mut run = Run::new(&ctx, &p, 0.0, config).await.unwrap();
            run.readout(&ctx).await.unwrap();
            run.run_to(&ctx, 0.125, |_, _| true).await.unwrap();
            let bytes = run.checkpoint(&ctx).await.unwrap();
            drop(run);
            let mut run = Run::resume(&ctx, &bytes, "test").await.unwrap();
            run.run_to(&ctx, 0.25, |_, _| true).await.unwrap();
            run.readout(&ctx).await.unwrap()
        });
        assert_eq!(through.snapshot, resumed.snapshot, "{solver:?}");
        assert_eq!(through.acc_pot, resumed.acc_pot, "{solver:?}");
        assert_eq!(through.steps, resumed.steps, "{solver:?}");
        assert_eq!(through.e0, resumed.e0, "{solver:?}");
    }
}

// A damaged checkpoint is refused with the reason, never half-restored.
#[test]
fn damaged_checkpoints_are_refused() {
    let ctx = common::gpu();
    let config = params(SolverKind::Hermite4).validate().unwrap();
    let bytes = block_on(async {
        let mut run = Run::new(&ctx, &start(), 0.0, config).await.unwrap();
        run.checkpoint(&ctx).await.unwrap()
    });
    let refuse = |b: &[u8], why: &str| {
        let e = block_on(Run::resume(&ctx, b, "c"))
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains(why), "{e}");
    };
    let mut flipped = bytes.clone();
    flipped[100] ^= 1;
    refuse(&flipped, "checksum");
    refuse(&bytes[..bytes.len() - 9], "checksum");
    refuse(b"not a checkpoint at all", "not a webgrav checkpoint");
}

// The checkpoint the CLI writes (streamed from the GPU a piece at a time
// into its file) holds the very bytes of `Run::checkpoint`, for the
// leapfrog and Hermite; a checkpoint file read as it is parsed is the
// checkpoint `decode` makes of its bytes, damage anywhere in it is told as
// a checksum mismatch, and a format-6 file (FNV-1a) still reads.
#[test]
fn streamed_checkpoints_are_the_checkpoint_bytes() {
    use webgrav::run::checkpoint::Checkpoint;
    let ctx = common::gpu();
    let dir = common::fresh_dir("streamed-checkpoints");
    let path = dir.join("c.ckpt").to_str().unwrap().to_string();
    for solver in [SolverKind::Tree, SolverKind::Direct, SolverKind::Hermite4] {
        let config = params(solver).validate().unwrap();
        let bytes = block_on(async {
            let mut run = Run::new(&ctx, &start(), 0.0, config).await.unwrap();
            run.run_to(&ctx, 0.125, |_, _| true).await.unwrap();
            let bytes = run.checkpoint(&ctx).await.unwrap();
            let mut file = webgrav::snapshot::AtomicFile::create(&path, 0).unwrap();
            run.write_checkpoint(&ctx, &mut file, &path).await.unwrap();
            file.commit().unwrap();
            bytes
        });
        assert!(std::fs::read(&path).unwrap() == bytes, "{solver:?}");
        let decoded = Checkpoint::decode(&bytes, "c").unwrap();
        assert_eq!(Checkpoint::read_path(&path).unwrap(), decoded, "{solver:?}");

        let refused = |b: &[u8]| {
            std::fs::write(&path, b).unwrap();
            Checkpoint::read_path(&path)
                .expect_err("refused")
                .to_string()
        };
        for at in [20, bytes.len() / 2, bytes.len() - 20] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            let e = refused(&damaged);
            assert!(e.contains("checksum"), "{solver:?}, byte {at}: {e}");
        }
        let e = refused(&bytes[..bytes.len() - 9]);
        assert!(e.contains("checksum"), "{solver:?}: {e}");
        let e = refused(b"WGCHKPT\nnot really");
        assert!(e.contains("checkpoint"), "{solver:?}: {e}");

        // Format 6: the same layout without format 9's request (its
        // length, found where a checkpoint with another request first
        // differs; this run's is empty) and format 8's tree levels (4
        // bytes at 72, after the time-step levels; read as every level),
        // summed with FNV-1a 64.
        let with_request = Checkpoint {
            request: "{}".into(),
            ..decoded.clone()
        }
        .encode();
        let request_at = bytes
            .iter()
            .zip(&with_request)
            .position(|(a, b)| a != b)
            .unwrap();
        assert!(decoded.request.is_empty());
        let mut old = bytes.clone();
        old.drain(request_at..request_at + 4);
        old.drain(72..76);
        old[8..12].copy_from_slice(&6u32.to_le_bytes());
        let at = old.len() - 8;
        let fnv = old[..at].iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        });
        old[at..].copy_from_slice(&fnv.to_le_bytes());
        let decoded = Checkpoint {
            tree_deepest: webgrav::tree::layout::MAX_DEPTH,
            ..decoded
        };
        std::fs::write(&path, &old).unwrap();
        assert_eq!(Checkpoint::read_path(&path).unwrap(), decoded, "{solver:?}");
        assert_eq!(
            Checkpoint::decode(&old, "c").unwrap(),
            decoded,
            "{solver:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// A Hermite state goes to CSV in full f64 precision: the text reads back
// to the very f64 the integrator holds (not its f32 rounding); the CLI
// writes that form for Hermite runs.
#[test]
fn hermite_csv_keeps_every_f64_bit() {
    let ctx = common::gpu();
    let p = start();
    let config = params(SolverKind::Hermite4).validate().unwrap();
    let r = block_on(async {
        let mut run = Run::new(&ctx, &p, 0.0, config).await.unwrap();
        run.run_to(&ctx, 0.125, |_, _| true).await.unwrap();
        run.readout(&ctx).await.unwrap()
    });
    let state = r.state_f64.expect("Hermite holds f64");
    let text = String::from_utf8(webgrav::snapshot::csv::encode_f64(&r.snapshot, &state)).unwrap();
    let mut rounded = 0;
    for (line, (m, x, v)) in text.lines().skip(1).zip(&state) {
        let f: Vec<f64> = line
            .split(',')
            .skip(1)
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(&f[..3], x, "{line}");
        assert_eq!(&f[3..6], v, "{line}");
        assert_eq!(f[6], *m);
        rounded += (x[0] as f32 as f64 != x[0]) as usize;
    }
    // The positions really carry more than f32 holds.
    assert!(rounded > 200, "{rounded}");
    // And webgrav's own reader takes the file (at f32).
    let back = webgrav::snapshot::Format::Csv
        .decode(text.as_bytes(), "h.csv")
        .unwrap();
    assert_eq!(back.particles.pos_mass, r.snapshot.particles.pos_mass);
}

// A run of `config` from `p` that writes a checkpoint at `t_checkpoint` and
// goes on to `t_end`, and a run resumed from that checkpoint to `t_end`:
// the read-outs of both at `t_end`, and the parameters the resumed run
// took from the checkpoint.
async fn went_on_and_resumed(
    ctx: &GpuContext,
    p: &Particles,
    config: RunConfig,
    t_checkpoint: f64,
    t_end: f64,
) -> (Readout, Readout, RunParams) {
    let mut run = Run::new(ctx, p, 0.0, config).await.unwrap();
    run.run_to(ctx, t_checkpoint, |_, _| true).await.unwrap();
    let bytes = run.checkpoint(ctx).await.unwrap();
    run.run_to(ctx, t_end, |_, _| true).await.unwrap();
    let went_on = run.readout(ctx).await.unwrap();
    let mut run = Run::resume(ctx, &bytes, "test").await.unwrap();
    let resumed_params = *run.config().params();
    run.run_to(ctx, t_end, |_, _| true).await.unwrap();
    (went_on, run.readout(ctx).await.unwrap(), resumed_params)
}

// With the tree rebuilt every K steps, writing a checkpoint makes the next
// step rebuild (a resumed run has no tree to refit): the run that wrote the
// checkpoint and the run resumed from it then continue bit-identically.
#[test]
fn resume_with_refits_is_bit_identical() {
    let ctx = common::gpu();
    let p = start();
    let config = RunParams {
        rebuild: 4,
        ..params(SolverKind::Tree)
    }
    .validate()
    .unwrap();
    // 17 steps of 1/128 to the checkpoint: not a multiple of 4, so the
    // checkpoint moves the rebuild (steps 18, 22, ... would refit).
    let (went_on, resumed, resumed_params) =
        block_on(went_on_and_resumed(&ctx, &p, config, 17.0 / 128.0, 0.25));
    assert_eq!(resumed_params.rebuild, 4);
    assert_eq!(went_on.snapshot, resumed.snapshot);
    assert_eq!(went_on.acc_pot, resumed.acc_pot);
    assert_eq!(went_on.steps, resumed.steps);
}

// A tree run with the acceleration MAC: each step's groups take their
// tolerance from the last step's forces (kept in the velocities' fourth
// lane, carried through the reorder), with the tree built every step and
// rebuilt every 4 (refits in between). A checkpoint keeps α and the
// forces, so the resumed run takes the same tolerances and goes on
// bit-identically; and energy is conserved as with the opening angle (its
// errors are as small at this α).
#[test]
fn resume_with_the_acceleration_mac_is_bit_identical() {
    let ctx = common::gpu();
    let p = start();
    for rebuild in [1, 4] {
        let config = RunParams {
            alpha: 0.003,
            rebuild,
            ..params(SolverKind::Tree)
        }
        .validate()
        .unwrap();
        let (went_on, resumed, resumed_params) =
            block_on(went_on_and_resumed(&ctx, &p, config, 0.125, 0.25));
        assert_eq!(resumed_params.alpha, 0.003);
        let energy = resumed.energy_error();
        assert_eq!(went_on.snapshot, resumed.snapshot, "rebuild {rebuild}");
        assert_eq!(went_on.acc_pot, resumed.acc_pot, "rebuild {rebuild}");
        assert_eq!(went_on.steps, resumed.steps);
        assert!(energy < 1e-4, "rebuild {rebuild}: energy error {energy}");
    }
}
