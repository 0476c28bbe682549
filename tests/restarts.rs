//! Restarts are exact (`webgrav run` end to end, the tree on the headless
//! GPU): a tree run that writes checkpoints, one resumed from them (again
//! and again), and one stopped by SIGTERM and resumed end with the very
//! bytes of the run that did none of it, with shared and with block time
//! steps, at two N. The checkpoints fall on the `--rebuild` grid (every
//! step of `--rebuild 1`, every largest step of block steps, a multiple of
//! K steps of `--rebuild K`), the first of them at a step where the tree
//! fits its levels. A stopped run's log loses no line.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::text;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use webgrav::run::checkpoint::Checkpoint;

fn webgrav(dir: &Path, line: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(line.split_whitespace())
        .current_dir(dir)
        .output()
        .expect("run webgrav")
}

fn ok(dir: &Path, line: &str) {
    let o = webgrav(dir, line);
    assert!(o.status.success(), "{line}: {}", text(&o.stderr));
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// `run {start} --t-end {t_end}` once plainly, once with a checkpoint
/// every `every`, and as three runs, each resumed from the last one's
/// checkpoint (at `t1`, then `t2`, the second writing one every `every`
/// on its way): the same `--out` bytes from all three.
fn restarts_change_nothing(name: &str, start: &str, t1: f64, t2: f64, every: f64, t_end: f64) {
    let d = common::fresh_dir(&format!("restarts-{name}"));
    ok(&d, &format!("run {start} --t-end {t_end} --out plain.csv"));
    ok(
        &d,
        &format!(
            "run {start} --t-end {t_end} --checkpoint c.ckpt --checkpoint-every {every} \
             --out checkpointed.csv"
        ),
    );
    ok(
        &d,
        &format!("run {start} --t-end {t1} --checkpoint a.ckpt --checkpoint-every {t1}"),
    );
    ok(
        &d,
        &format!("run --resume a.ckpt --t-end {t2} --checkpoint b.ckpt --checkpoint-every {every}"),
    );
    let b = Checkpoint::decode(&read(&d, "b.ckpt"), "b.ckpt").unwrap();
    assert_eq!(b.time, t2, "{name}");
    ok(
        &d,
        &format!("run --resume b.ckpt --t-end {t_end} --out resumed.csv"),
    );
    let plain = read(&d, "plain.csv");
    assert!(
        read(&d, "checkpointed.csv") == plain,
        "{name}: checkpoints changed the run"
    );
    assert!(
        read(&d, "resumed.csv") == plain,
        "{name}: the resumed run differs"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

// The shared-step run (the tree rebuilt every step), at two N:
// the first checkpoint after one step, where the tree fits its levels.
#[test]
fn tree_restarts_are_exact() {
    for n in [512, 2048] {
        restarts_change_nothing(
            &format!("shared-{n}"),
            &format!("-n {n} --seed 3 --rebuild 1 --dt 0.015625"),
            0.015625,
            0.3125,
            0.0625,
            0.5,
        );
    }
    // Rebuilt every 4 steps, refitted between: checkpoints after a
    // multiple of 4 steps.
    restarts_change_nothing(
        "shared-rebuild-4",
        "-n 512 --seed 3 --rebuild 4 --dt 0.015625",
        0.0625,
        0.3125,
        0.0625,
        0.5,
    );
}

// The block-step run (8 sub-steps per step, the tree rebuilt
// every 3 of them), at two N.
#[test]
fn block_step_restarts_are_exact() {
    for n in [512, 2048] {
        restarts_change_nothing(
            &format!("block-{n}"),
            &format!(
                "-n {n} --seed 3 --timesteps block --levels 3 --eta 0.01 --rebuild 3 \
                 --dt 0.0625"
            ),
            0.0625,
            0.25,
            0.0625,
            0.5,
        );
    }
}

/// The lines of a run log without their wall-clock times and GPU phase
/// times (which no two runs share).
fn log_lines(dir: &Path, file: &str) -> Vec<serde_json::Value> {
    common::log_lines(&std::fs::read_to_string(dir.join(file)).unwrap())
}

// A run stopped by SIGTERM wherever it is, then resumed to a few steps
// past its checkpoint, ends as a run that went there at once, and its
// log, logging every step, is that run's: a stop lands on a log time
// (every step here), whose line the stopped run writes. Block steps, and
// shared steps rebuilding the tree every 4 (a stop between two builds
// runs on to the next).
#[test]
fn a_stopped_and_resumed_tree_run_is_the_run_that_went_on() {
    let runs = [
        (
            "-n 512 --seed 3 --timesteps block --levels 3 --eta 0.01 --rebuild 3 --dt 0.0625",
            0.0625,
            1,
        ),
        ("-n 512 --seed 3 --rebuild 4 --dt 0.015625", 0.015625, 4),
    ];
    for (start, dt, rebuild) in runs {
        stopped_and_resumed(start, dt, rebuild);
    }
}

fn stopped_and_resumed(start: &str, dt: f64, rebuild: u64) {
    let d = common::fresh_dir("restarts-sigterm");
    let logged = format!("--log-every {dt} --log run.log");
    let log = d.join("run.log");
    let line = format!("run {start} {logged} --t-end 1000 --checkpoint s.ckpt");
    let child = common::spawn_webgrav_in(&d, &line.split_whitespace().collect::<Vec<_>>());
    // Stopped once it has taken a few steps.
    let begun = Instant::now();
    while std::fs::read_to_string(&log).map_or(0, |l| l.lines().count()) < 6
        && begun.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let c = Checkpoint::decode(&read(&d, "s.ckpt"), "s.ckpt").unwrap();
    assert_eq!(c.steps % rebuild, 0, "{start}: stopped between two builds");
    let t_end = c.time + 3.0 * dt;
    ok(
        &d,
        &format!("run --resume s.ckpt {logged} --t-end {t_end} --out resumed.csv"),
    );
    ok(
        &d,
        &format!("run {start} --log-every {dt} --log plain.log --t-end {t_end} --out plain.csv"),
    );
    assert!(
        read(&d, "resumed.csv") == read(&d, "plain.csv"),
        "{start}: stopped at t = {}: the resumed run differs",
        c.time
    );
    let (resumed, plain) = (log_lines(&d, "run.log"), log_lines(&d, "plain.log"));
    let times = |lines: &[serde_json::Value]| -> Vec<f64> {
        lines.iter().map(|l| l["t"].as_f64().unwrap()).collect()
    };
    assert_eq!(
        times(&resumed),
        times(&plain),
        "{start}: stopped at t = {}",
        c.time
    );
    assert_eq!(resumed, plain, "{start}: stopped at t = {}", c.time);
    std::fs::remove_dir_all(&d).unwrap();
}

// Checkpoints between two builds of the tree (--rebuild K, shared steps)
// would make the resumed run build where the run refits: refused by name.
#[test]
fn checkpoints_between_tree_builds_are_refused() {
    let d = common::fresh_dir("restarts-off-grid");
    let o = webgrav(
        &d,
        "run -n 64 --rebuild 4 --dt 0.015625 --t-end 0.5 --checkpoint c.ckpt \
         --checkpoint-every 0.09375",
    );
    let err = text(&o.stderr);
    assert!(
        !o.status.success() && err.contains("not a whole number of tree builds"),
        "{err}"
    );
    assert!(err.contains("use a multiple of 0.0625"), "{err}");
    assert!(!d.join("c.ckpt").exists());
    std::fs::remove_dir_all(&d).unwrap();
}
