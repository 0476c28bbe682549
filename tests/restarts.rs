//! Restarts are exact (`webgrav run` end to end, the tree on the headless
//! GPU): a tree run that writes checkpoints, and one resumed from them (again
//! and again) end with the very
//! bytes of the run that did none of it, with shared and with block time
//! steps, at two N. The checkpoints fall on the `--rebuild` grid (every
//! step of `--rebuild 1`, every largest step of block steps, a multiple of
//! K steps of `--rebuild K`), the first of them at a step where the tree
//! fits its levels.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::text;
use std::path::Path;
use std::process::{Command, Output};
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
