//! `webgrav run` under Open MPI's `mpirun` (feature `mpi`): 2 and 3 ranks
//! on the headless GPU (every rank shares lavapipe) against one GPU, the
//! per-rank parts of a series read back as one snapshot, and options a
//! parallel run does not offer refused alike on every rank.
#![cfg(all(feature = "mpi", not(target_arch = "wasm32")))]

mod common;

use std::process::{Command, Output};
use webgrav::snapshot::{self, Snapshot};

/// `webgrav args…` on `np` ranks in `dir`.
fn mpirun(np: usize, dir: &std::path::Path, args: &[String]) -> Output {
    Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &np.to_string(),
        ])
        .arg(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("mpirun (Debian's openmpi-bin) runs")
}

/// A short run: 8 steps of 3000 particles.
fn run_args(extra: &[&str]) -> Vec<String> {
    "run --model plummer -n 3000 --seed 4 --theta 0.6 --alpha 0 --dt 0.0078125 --t-end 0.0625"
        .split_whitespace()
        .chain(extra.iter().copied())
        .map(String::from)
        .collect()
}

/// `webgrav {command} --out one.EXT` on one GPU, then `--out p2.EXT` on
/// two ranks, in `dir`: their outputs, each checked to have succeeded,
/// and the two ranks' stderr.
fn on_one_gpu_and_two_ranks(dir: &std::path::Path, command: &str, ext: &str) -> [Output; 2] {
    let args = |out: &str| -> Vec<String> {
        format!("{command} --out {out}.{ext}")
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let one_args = args("one");
    let one = common::webgrav_in(
        dir,
        &one_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(one.status.success(), "{}", common::text(&one.stderr));
    let two = mpirun(2, dir, &args("p2"));
    assert!(two.status.success(), "{}", common::text(&two.stderr));
    [one, two]
}

fn largest_position_difference(a: &Snapshot, b: &Snapshot) -> f64 {
    assert_eq!(a.particles.id, b.particles.id);
    a.particles
        .pos_mass
        .iter()
        .zip(&b.particles.pos_mass)
        .map(|(p, q)| {
            let d2: f32 = (0..3).map(|k| (p.pos[k] - q.pos[k]).powi(2)).sum();
            d2.sqrt() as f64
        })
        .fold(0.0, f64::max)
}

#[test]
fn ranks_under_mpirun_follow_one_gpu() {
    let dir = common::fresh_dir("cluster_mpi_follow");
    let args = run_args(&["--out", "one.csv", "--log-every", "0.03125"]);
    let one = common::webgrav_in(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(one.status.success(), "{}", common::text(&one.stderr));
    let one_gpu_lines = common::log_lines(&common::text(&one.stdout));
    let (one_gpu_line, one_gpu_end) = (one_gpu_lines[0].clone(), one_gpu_lines[1].clone());
    let one = snapshot::read_file(dir.join("one.csv").to_str().unwrap()).unwrap();
    for np in [2, 3] {
        let out = format!("p{np}.csv");
        // Three ranks redraw their domains every 4 steps; two when it pays.
        let mut args = run_args(&["--out", &out, "--log-every", "0.03125"]);
        if np == 3 {
            args.extend(["--redraw-every".into(), "4".into()]);
        }
        let run = mpirun(np, &dir, &args);
        let stderr = common::text(&run.stderr);
        assert!(run.status.success(), "{np} ranks: {stderr}");
        assert!(
            stderr.contains(&format!("3000 particles on {np} ranks")),
            "{stderr}"
        );
        let lines = common::log_lines(&common::text(&run.stdout));
        assert_eq!(lines.len(), 2, "a log line every 4 steps");
        if np == 3 {
            // The start's decomposition, then one every 4 steps.
            assert_eq!(lines[0]["redraws"], 2, "{}", lines[0]);
            assert_eq!(lines[1]["redraws"], 3, "{}", lines[1]);
        }
        for line in &lines {
            assert_eq!(line["ranks"], np);
            assert_eq!(line["n"], 3000);
            assert!(line["rank_n_min"].as_u64().unwrap() > 0);
            // Measured: 1e-5 and below (the leapfrog's and the MAC's error).
            assert!(line["rel_energy_error"].as_f64().unwrap() < 1e-4, "{line}");
            // Every field of a one-GPU tree run's line, under its name
            // (its GPU phases and interaction counts are its own).
            let fields = one_gpu_line.as_object().expect("a JSON object");
            for key in fields.keys() {
                let own = ["phase_ms", "pp_per_particle", "pc_per_particle"];
                assert!(
                    own.contains(&key.as_str()) || line.get(key).is_some(),
                    "{key}: {line}"
                );
            }
            // 3000 particles: summed precisely on the host, as on one GPU.
            assert_eq!(line["potential_sum"], "host-f64");
            assert_eq!(line["potential_sum"], one_gpu_line["potential_sum"]);
            assert!(line["rel_energy_error_max"].as_f64() >= line["rel_energy_error"].as_f64());
        }
        // Issue 46's consistency across P, the potential summed alike:
        // |dE/E| near one GPU's (measured on lavapipe: 1.43–1.44e-5 on 2
        // ranks, 1.40e-5 on 3, 1.49e-5 on one GPU). Two ranks' redraws
        // follow the clock, so the bound leaves room for the trees a busy
        // machine's redraws make; `tests/cluster.rs` holds the issue's
        // 10 % with redraws on a fixed schedule.
        let de = |l: &serde_json::Value| l["rel_energy_error"].as_f64().unwrap();
        let (mine, one_gpu) = (de(&lines[1]), de(&one_gpu_end));
        eprintln!("{np} ranks: |dE/E| {mine:e} after 8 steps (one GPU: {one_gpu:e})");
        assert!(
            (mine - one_gpu).abs() <= 0.2 * one_gpu,
            "{np} ranks: |dE/E| {mine:e}, one GPU {one_gpu:e}"
        );
        let mine = snapshot::read_file(dir.join(&out).to_str().unwrap()).unwrap();
        assert_eq!(mine.time, one.time);
        let worst = largest_position_difference(&mine, &one);
        // The trees differ (each rank's covers its domain): their MAC
        // errors part the runs by ~1e-5 in 8 steps; a lost or doubled
        // interaction would by far more.
        assert!(worst < 2e-4, "{np} ranks: positions differ by {worst:e}");
    }
}

#[test]
fn block_steps_under_mpirun_follow_one_gpu() {
    let dir = common::fresh_dir("cluster_mpi_block");
    let [one, run] = on_one_gpu_and_two_ranks(
        &dir,
        "run --model plummer -n 3000 --seed 4 --theta 0.6 --alpha 0 --dt 0.0625 --t-end 0.25 \
         --timesteps block --levels 4 --eta 0.02 --rebuild 2 --log-every 0.25",
        "csv",
    );
    let one_line = common::log_lines(&common::text(&one.stdout)).pop().unwrap();
    let stderr = common::text(&run.stderr);
    assert!(
        stderr.contains("block steps: particles per level"),
        "{stderr}"
    );
    // No particle took the deepest level, and the ranks say so as one GPU
    // does.
    let unused = "--levels 3 would record 8 sub-steps a step, not 16";
    assert!(stderr.contains(unused), "{stderr}");
    assert!(common::text(&one.stderr).contains(unused));
    let line = common::log_lines(&common::text(&run.stdout)).pop().unwrap();
    let levels = |l: &serde_json::Value| -> Vec<u64> {
        serde_json::from_value(l["particles_per_level"].clone()).expect("levels")
    };
    let (mine, one_gpu) = (levels(&line), levels(&one_line));
    eprintln!("particles per level: 2 ranks {mine:?}, one GPU {one_gpu:?}");
    // The particles spread over the levels, as on one GPU (give or take
    // those the trees' errors put across a level's edge).
    assert_eq!(mine.iter().sum::<u64>(), 3000);
    assert!(
        one_gpu.iter().filter(|&&n| n > 30).count() >= 3,
        "{one_gpu:?}"
    );
    for (a, b) in mine.iter().zip(&one_gpu) {
        assert!(a.abs_diff(*b) <= 30, "{mine:?} {one_gpu:?}");
    }
    let de = |l: &serde_json::Value| l["rel_energy_error"].as_f64().unwrap();
    eprintln!(
        "|dE/E| 2 ranks {:e}, one GPU {:e}",
        de(&line),
        de(&one_line)
    );
    assert!((de(&line) - de(&one_line)).abs() <= 0.1 * de(&one_line));
    let read = |name: &str| snapshot::read_file(dir.join(name).to_str().unwrap()).unwrap();
    let (p2, one) = (read("p2.csv"), read("one.csv"));
    assert_eq!(p2.time, 0.25);
    // Most particles where one GPU put them (see tests/cluster.rs's block
    // steps for the few a level's edge moves).
    let apart = largest_position_difference(&p2, &one);
    assert!(apart < 1e-2, "{apart:e}");
}

#[test]
fn per_rank_parts_read_back_as_one_snapshot() {
    let dir = common::fresh_dir("cluster_mpi_parts");
    let series = "--snap-every 0.0625 --bonsai-names --snap-dir parts --out end.csv";
    let run = mpirun(2, &dir, &run_args(&series.split(' ').collect::<Vec<_>>()));
    assert!(run.status.success(), "{}", common::text(&run.stderr));
    let parts = dir.join("parts");
    for rank in 0..2 {
        assert!(
            parts.join(format!("snap_00000.0625-{rank}")).is_file(),
            "part {rank}"
        );
    }
    let first = parts.join("snap_00000.0625-0");
    let whole = snapshot::read_file(first.to_str().unwrap()).unwrap();
    let end = snapshot::read_file(dir.join("end.csv").to_str().unwrap()).unwrap();
    let mut order: Vec<usize> = (0..whole.particles.len()).collect();
    order.sort_by_key(|&k| whole.particles.id[k]);
    assert_eq!(whole.particles.len(), 3000);
    for (k, &i) in order.iter().enumerate() {
        assert_eq!(whole.particles.id[i], end.particles.id[k]);
        assert_eq!(whole.particles.pos_mass[i], end.particles.pos_mass[k]);
    }
    // One part alone is read as itself.
    let one_part = parts.join("snap_00000.0625-1");
    let part = snapshot::read_file(one_part.to_str().unwrap()).unwrap();
    assert!(part.particles.len() < 3000);

    // The parts as a run's input: three ranks deal out the two parts (one
    // rank reads none), and the run starts at their time, as one GPU's.
    let from = |input: &str, out: &str| {
        format!("run --in {input} --theta 0.6 --alpha 0 --dt 0.0078125 --t-end 0.125 --out {out}")
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let parts_0 = "parts/snap_00000.0625-0";
    let run = mpirun(3, &dir, &from(parts_0, "p3.csv"));
    let stderr = common::text(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 parts, each read by one of 3 ranks"),
        "{stderr}"
    );
    let args = from(parts_0, "one.csv");
    let one = common::webgrav_in(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(one.status.success(), "{}", common::text(&one.stderr));
    let read = |name: &str| snapshot::read_file(dir.join(name).to_str().unwrap()).unwrap();
    // (One GPU writes its input's order, the ranks id order.)
    let by_id = |s: Snapshot| {
        let mut order: Vec<usize> = (0..s.particles.len()).collect();
        order.sort_by_key(|&k| s.particles.id[k]);
        s.subset(&order)
    };
    let (three, one) = (read("p3.csv"), by_id(read("one.csv")));
    // 8 steps from t = 1/16 (not 16 from the file's time).
    assert_eq!((three.time, one.time), (0.125, 0.125));
    let worst = largest_position_difference(&three, &one);
    assert!(worst < 2e-4, "positions differ by {worst:e}");

    // One CSV file (the end state, in id order): each rank reads its rows
    // (no rank reads the whole); the run is one GPU's from the same file.
    let each_reads_its_own = |run: &Output, ranks: usize| {
        let stderr = common::text(&run.stderr);
        assert!(run.status.success(), "{stderr}");
        let says = format!("3000 particles, each of {ranks} ranks reading its own");
        assert_eq!(stderr.matches(&says).count(), 1, "{stderr}");
    };
    each_reads_its_own(&mpirun(2, &dir, &from("end.csv", "p2.csv")), 2);
    let args = from("end.csv", "one_end.csv");
    let one = common::webgrav_in(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(one.status.success(), "{}", common::text(&one.stderr));
    let (two, one) = (read("p2.csv"), read("one_end.csv"));
    assert_eq!((two.time, one.time), (0.125, 0.125));
    let worst = largest_position_difference(&two, &one);
    assert!(worst < 2e-4, "positions differ by {worst:e}");
    // The same rows without their ids (numbered by row, the same ids here:
    // the file holds 0..N in order) or times, on three ranks.
    let text = std::fs::read_to_string(dir.join("end.csv")).unwrap();
    let no_ids: String = (text.lines())
        .map(|l| l.split(',').skip(1).take(7).collect::<Vec<_>>().join(",") + "\n")
        .collect();
    let t0 = read("end.csv").time;
    std::fs::write(
        dir.join("end-no-ids.csv"),
        format!("# time = {t0}\n{no_ids}"),
    )
    .unwrap();
    each_reads_its_own(&mpirun(3, &dir, &from("end-no-ids.csv", "p3n.csv")), 3);
    let three = read("p3n.csv");
    assert_eq!(three.time, 0.125);
    let worst = largest_position_difference(&three, &one);
    assert!(worst < 2e-4, "positions differ by {worst:e}");

    // The same file as Bonsai's Tipsy: each rank reads its own records
    // (no rank reads the whole), and the run is the same.
    let end = read("end.csv");
    snapshot::write_file(dir.join("end.bonsai").to_str().unwrap(), &end).unwrap();
    let run = mpirun(2, &dir, &from("end.bonsai", "p2b.csv"));
    let stderr = common::text(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches("3000 particles, each of 2 ranks reading its own")
            .count(),
        1,
        "{stderr}"
    );
    let shared = read("p2b.csv");
    assert_eq!(shared.time, 0.125);
    let worst = largest_position_difference(&shared, &one);
    assert!(worst < 2e-4, "positions differ by {worst:e}");
}

#[test]
fn what_ranks_cannot_do_is_refused_on_every_rank() {
    let dir = common::fresh_dir("cluster_mpi_refused");
    for (extra, says) in [
        ("--solver direct", "the direct solver is not offered"),
        ("--snap-every 0.0625", "add --bonsai-names"),
    ] {
        let run = mpirun(2, &dir, &run_args(&extra.split(' ').collect::<Vec<_>>()));
        let stderr = common::text(&run.stderr);
        assert!(!run.status.success(), "{extra:?} ran");
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
        // Said once (by rank 0), not by every rank.
        assert_eq!(stderr.matches(says).count(), 1, "{stderr}");
    }
    // A Tipsy file whose last particle's velocity is NaN: the rank that
    // reads it finds it, and rank 0 says so once, naming the particle.
    let mut damaged = webgrav::snapshot::Format::TipsyBonsai
        .encode(&Snapshot {
            time: 0.0,
            particles: webgrav::state::Model::Plummer.generate(3000, 4).unwrap(),
            softening: 0.0,
            potential: None,
            types: None,
        })
        .unwrap();
    let vx = 32 + 2999 * 36 + 16;
    damaged[vx..vx + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(dir.join("damaged.bonsai"), damaged).unwrap();
    let args = "run --in damaged.bonsai --t-end 0.0625 --dt 0.0625 --out d.csv";
    let run = mpirun(
        2,
        &dir,
        &args.split(' ').map(String::from).collect::<Vec<_>>(),
    );
    let stderr = common::text(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    let says = "particle 2999: non-finite velocity";
    assert_eq!(stderr.matches(says).count(), 1, "{stderr}");
    assert!(!dir.join("d.csv").exists());
    // Any other command would run whole on every rank: refused, said
    // once, nothing written.
    let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let run = mpirun(2, &dir, &words("convert missing.bonsai c.csv"));
    let stderr = common::text(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    let says = "`webgrav convert` runs in one process: start it without mpirun";
    assert_eq!(stderr.matches(says).count(), 1, "{stderr}");
    assert!(!dir.join("c.csv").exists());
    // `forces` runs only the tree on ranks.
    let forces = "forces --model plummer -n 256 --solver direct --out f.csv";
    let run = mpirun(2, &dir, &words(forces));
    let stderr = common::text(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    let says = "--solver direct runs on one GPU: start `webgrav forces` without mpirun";
    assert_eq!(stderr.matches(says).count(), 1, "{stderr}");
    assert!(!dir.join("f.csv").exists());
    // A checkpoint or an input file that is not there: rank 0 says so.
    for args in [
        ["run", "--resume", "missing.ckpt"],
        ["run", "--in", "missing.csv"],
    ] {
        let run = mpirun(2, &dir, &args.map(String::from));
        let stderr = common::text(&run.stderr);
        assert!(!run.status.success());
        assert_eq!(stderr.matches(args[2]).count(), 1, "{stderr}");
    }
}

#[test]
fn a_checkpoint_of_two_ranks_resumes_on_three_and_on_one_gpu() {
    let dir = common::fresh_dir("cluster_mpi_resume");
    let to = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    let first = "run --model plummer -n 3000 --seed 4 --theta 0.6 --alpha 0 --dt 0.0078125 \
                 --t-end 0.03125 --checkpoint c.ckpt --checkpoint-every 0.03125";
    let run = mpirun(2, &dir, &to(first));
    assert!(run.status.success(), "{}", common::text(&run.stderr));
    let resume = "run --resume c.ckpt --t-end 0.0625 --checkpoint-every 0 --out";
    let run = mpirun(3, &dir, &to(&format!("{resume} p3.csv")));
    let stderr = common::text(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("3000 particles on 3 ranks"), "{stderr}");
    let one = common::webgrav_in(
        &dir,
        &to(&format!("{resume} one.csv"))
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(one.status.success(), "{}", common::text(&one.stderr));
    let read = |name: &str| snapshot::read_file(dir.join(name).to_str().unwrap()).unwrap();
    let (three, one) = (read("p3.csv"), read("one.csv"));
    assert_eq!(three.time, 0.0625);
    assert_eq!(one.time, 0.0625);
    // As `ranks_under_mpirun_follow_one_gpu`: the trees' MAC errors alone.
    let worst = largest_position_difference(&three, &one);
    assert!(worst < 2e-4, "positions differ by {worst:e}");
}

#[test]
fn ranks_sample_one_gpus_galaxy_and_write_its_kinds() {
    // 70,000 particles: rank 0 samples the first 65,536 (one chunk of the
    // sums), rank 1 the rest, which cuts the merger's second galaxy.
    let dir = common::fresh_dir("cluster_mpi_galaxy");
    let [_, run] = on_one_gpu_and_two_ranks(
        &dir,
        "run --model galaxy-merger -n 70000 --seed 2 --t-end 0",
        "bonsai",
    );
    let stderr = common::text(&run.stderr);
    // Said once, by rank 0.
    let generated = "generated galaxy-merger with N = 70000 on 2 ranks";
    assert_eq!(stderr.matches(generated).count(), 1, "{stderr}");
    let read = |name: &str| snapshot::read_file(dir.join(name).to_str().unwrap()).unwrap();
    // Each rank wrote its part of one file: the one GPU's, to the byte
    // (Bonsai's records hold no potential), its kinds' side file too.
    let bytes = |name: &str| std::fs::read(dir.join(name)).unwrap();
    assert!(
        bytes("one.bonsai") == bytes("p2.bonsai"),
        "the files differ"
    );
    let side = |name: &str| bytes(&format!("{name}.webgrav_kind"));
    assert!(
        side("one.bonsai") == side("p2.bonsai"),
        "the kinds' side files differ"
    );
    let (one, two) = (read("one.bonsai"), read("p2.bonsai"));
    assert_eq!(one.particles.id, two.particles.id);
    assert_eq!(one.particles.pos_mass, two.particles.pos_mass);
    assert_eq!(one.particles.vel, two.particles.vel);
    // Haloes (1) and black holes (5) among the stars, where one GPU has them.
    let kinds = two.types.expect("the ranks' file has the kinds");
    assert_eq!(Some(&kinds), one.types.as_ref());
    for kind in [1, 5] {
        assert!(kinds.contains(&kind), "kind {kind}");
    }
}

/// `webgrav forces` on two ranks: the same force table as one GPU's
/// within the MAC's error (every particle, by id), and errors against the
/// f64 direct sum on a sample of the same size as one GPU's.
#[test]
fn forces_on_two_ranks_are_one_gpus_within_the_macs_error() {
    let dir = common::fresh_dir("cluster_mpi_forces");
    let args = |out: &str| -> Vec<String> {
        format!(
            "forces --model plummer -n 3000 --seed 4 --theta 0.6 --alpha 0 --eps 0.01 \
             --compare direct --sample 600 --out {out}"
        )
        .split_whitespace()
        .map(String::from)
        .collect()
    };
    let one = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args("one.csv"))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(one.status.success(), "{}", common::text(&one.stderr));
    let two = mpirun(2, &dir, &args("two.csv"));
    assert!(two.status.success(), "{}", common::text(&two.stderr));
    let line = |out: &Output| -> serde_json::Value {
        let text = common::text(&out.stdout);
        let json = text
            .lines()
            .find(|l| l.starts_with('{'))
            .expect("an error line");
        serde_json::from_str(json).unwrap()
    };
    let (l1, l2) = (line(&one), line(&two));
    assert_eq!(l2["ranks"], 2);
    assert_eq!(l1["compared"], l2["compared"]);
    let median = |l: &serde_json::Value| l["acc_error"]["median"].as_f64().unwrap();
    let (m1, m2) = (median(&l1), median(&l2));
    assert!(m1 > 0.0 && m1 < 1e-2, "one GPU: {l1}");
    // Each rank's tree differs from the whole one near the domains' edge:
    // the same error in size, not in bits.
    assert!(
        m2 < 1.5 * m1 && m2 > m1 / 1.5,
        "one GPU {m1}, two ranks {m2}"
    );
    let table = |name: &str| -> Vec<Vec<f64>> {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        text.lines()
            .skip(1)
            .map(|l| l.split(',').map(|f| f.parse().unwrap()).collect())
            .collect()
    };
    let (t1, t2) = (table("one.csv"), table("two.csv"));
    assert_eq!((t1.len(), t2.len()), (3000, 3000));
    let mut worst: f64 = 0.0;
    for (a, b) in t1.iter().zip(&t2) {
        // id, x, y, z, m the same; ax, ay, az within the MAC's error.
        assert_eq!(a[..5], b[..5]);
        let norm = (a[5] * a[5] + a[6] * a[6] + a[7] * a[7]).sqrt();
        let diff = ((a[5] - b[5]).powi(2) + (a[6] - b[6]).powi(2) + (a[7] - b[7]).powi(2)).sqrt();
        worst = worst.max(diff / norm);
    }
    assert!(
        worst > 0.0 && worst < 0.05,
        "largest relative difference {worst}"
    );
}
