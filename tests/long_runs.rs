//! Long runs lose nothing (`webgrav run` end to end, tiny N on the
//! headless GPU): resumes continue their own series, log and output grid;
//! SIGTERM and SIGINT stop a run with a checkpoint and a complete index;
//! outputs are checked against each other before anything is touched;
//! checkpoints keep the particles' kinds and are checked when read.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{log_lines, spawn_webgrav_in, text, webgrav_in};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use webgrav::run::checkpoint::{Checkpoint, EngineState};

/// `webgrav` with the words of `line` (none empty or with spaces) in `dir`.
fn webgrav(dir: &Path, line: &str) -> Output {
    webgrav_in(dir, &words(line))
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The output of a command that must succeed.
fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
}

/// The message of a command that must fail with status 1.
fn refused(o: Output) -> String {
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    text(&o.stderr)
}

fn dir(name: &str) -> PathBuf {
    common::fresh_dir(&format!("long-{name}"))
}

/// The same small leapfrog run everywhere (direct forces: bit-identical
/// through every resume), with `more`.
fn run(more: &str) -> String {
    format!("run --solver direct -n 64 --seed 3 --eps 0.05 --dt 0.0078125 {more}")
}

/// (file, time, step) of each entry of a series' index.
fn index(series: &Path) -> Vec<(String, f64, u64)> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(series.join("index.json")).unwrap()).unwrap();
    doc["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["file"].as_str().unwrap().to_string(),
                e["time"].as_f64().unwrap(),
                e["step"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The files of a directory, sorted.
fn names(d: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

/// What a log's lines say of the state (the largest energy error seen
/// depends on where the runs looked).
fn states(text: &str) -> Vec<[serde_json::Value; 5]> {
    log_lines(text)
        .into_iter()
        .map(|l| ["t", "steps", "energy", "kinetic", "angular_momentum"].map(|k| l[k].clone()))
        .collect()
}

// Item 1 (and the log of item 4): a run resumed from its checkpoint into
// its own series continues the numbering and keeps every earlier entry;
// an entry later than the checkpoint (the first run went on past it) is
// written again. Series and log end as an uninterrupted run's, file for
// file. The guide's own `--resume run.ckpt … --checkpoint run.ckpt`
// (guide/src/cli-runs.md) works.
// Another run refuses that directory instead of overwriting it.
#[test]
fn a_resumed_run_continues_its_own_series_and_log() {
    let d = dir("own-series");
    let series = "--snap-every 0.25 --snap-format csv --log-every 0.125";
    let whole = format!("{series} --t-end 1 --snap-dir whole --log whole.log");
    ok(webgrav(&d, &run(&whole)));
    // Checkpointed at 0.5, then on to 0.75 before it stopped.
    let first = format!(
        "{series} --t-end 0.75 --snap-dir parts --log parts.log --checkpoint c.ckpt \
         --checkpoint-every 0.5"
    );
    ok(webgrav(&d, &run(&first)));
    assert_eq!(index(&d.join("parts")).len(), 4);
    let resumed = format!(
        "run {series} --resume c.ckpt --t-end 1 --snap-dir parts --log parts.log \
         --checkpoint c.ckpt"
    );
    ok(webgrav(&d, &resumed));
    let (whole_index, parts_index) = (index(&d.join("whole")), index(&d.join("parts")));
    assert_eq!(parts_index, whole_index);
    assert_eq!(parts_index.len(), 5);
    for (file, _, _) in &whole_index {
        let read = |s: &str| std::fs::read(d.join(s).join(file)).unwrap();
        assert_eq!(read("parts"), read("whole"), "{file}");
    }
    assert_eq!(names(&d.join("parts")), names(&d.join("whole")));
    let read_log = |s: &str| log_lines(&std::fs::read_to_string(d.join(s)).unwrap());
    assert_eq!(read_log("parts.log"), read_log("whole.log"));
    assert_eq!(read_log("whole.log").len(), 8);
    // A new run into that series: refused, nothing touched.
    let before = std::fs::read(d.join("parts/index.json")).unwrap();
    let m = refused(webgrav(&d, &run(&format!("{series} --snap-dir parts"))));
    assert!(m.contains("holds the series of another run"), "{m}");
    assert!(m.contains("--resume"), "{m}");
    assert_eq!(std::fs::read(d.join("parts/index.json")).unwrap(), before);
    // An index that names files elsewhere: nothing there is removed.
    let text = String::from_utf8(before).unwrap();
    let elsewhere = text.replace("snap_00004.csv", "../whole.log");
    std::fs::write(d.join("parts/index.json"), elsewhere).unwrap();
    let m = refused(webgrav(&d, &resumed));
    assert!(
        m.contains("'../whole.log', not a file of this series"),
        "{m}"
    );
    assert!(d.join("whole.log").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

// Issue 48 item 2: a resume numbers its snapshots after the highest one
// the series keeps, whatever was pruned before it: early files deleted
// with their entries, or deleted while the index still lists them (then
// left out of it, and said), or an entry's time edited. No kept file is
// overwritten, no name is listed twice, times rise. A resume with the
// other naming (--bonsai-names) is refused.
#[test]
fn a_resume_after_pruning_its_series_overwrites_nothing() {
    let d = dir("pruned");
    let series = "--snap-every 0.125 --snap-format csv";
    let first =
        format!("{series} --t-end 0.75 --snap-dir s --checkpoint c.ckpt --checkpoint-every 0.5");
    let resume = format!("run {series} --resume c.ckpt --t-end 1 --snap-dir s");
    for prune in ["entries", "files", "time"] {
        let s = d.join("s");
        let _ = std::fs::remove_dir_all(&s);
        ok(webgrav(&d, &run(&first)));
        let json = std::fs::read_to_string(s.join("index.json")).unwrap();
        let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let entries = doc["snapshots"].as_array_mut().unwrap();
        assert_eq!(entries.len(), 7);
        match prune {
            // Early snapshots deleted, and their entries.
            "entries" => {
                entries.drain(..2);
                for f in ["snap_00000.csv", "snap_00001.csv"] {
                    std::fs::remove_file(s.join(f)).unwrap();
                }
            }
            // Early snapshots deleted, the index left as it was.
            "files" => {
                for f in ["snap_00000.csv", "snap_00001.csv"] {
                    std::fs::remove_file(s.join(f)).unwrap();
                }
            }
            // One entry's time edited past the checkpoint: it is dropped.
            _ => entries[1]["time"] = serde_json::json!(9.0),
        }
        std::fs::write(s.join("index.json"), doc.to_string()).unwrap();
        let kept: Vec<(String, Vec<u8>)> = ["snap_00002.csv", "snap_00003.csv", "snap_00004.csv"]
            .iter()
            .map(|f| (f.to_string(), std::fs::read(s.join(f)).unwrap()))
            .collect();
        let said = text(&webgrav(&d, &resume).stderr);
        let after = index(&s);
        let files: Vec<&str> = after.iter().map(|e| e.0.as_str()).collect();
        let mut unique = files.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), files.len(), "{prune}: {files:?}");
        assert!(
            after.windows(2).all(|w| w[0].1 < w[1].1),
            "{prune}: {after:?}"
        );
        assert_eq!(after.last().unwrap().1, 1.0, "{prune}: {said}");
        for (f, bytes) in &kept {
            assert_eq!(
                &std::fs::read(s.join(f)).unwrap(),
                bytes,
                "{prune}: {f} overwritten"
            );
        }
        for (f, _, _) in &after {
            assert!(s.join(f).exists(), "{prune}: {f} listed but missing");
        }
        if prune == "files" {
            assert!(said.contains("snap_00000.csv is listed but gone"), "{said}");
            assert!(!files.contains(&"snap_00000.csv"), "{files:?}");
        }
    }
    // The other naming in the same series: refused, nothing touched.
    let before = std::fs::read(d.join("s/index.json")).unwrap();
    let m = refused(webgrav(&d, &format!("{resume} --bonsai-names")));
    assert!(m.contains("resume without --bonsai-names"), "{m}");
    assert_eq!(std::fs::read(d.join("s/index.json")).unwrap(), before);
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 6: a checkpoint taken off the output grid (t = 0.375; snapshots and
// logs every 0.25) resumes on the original grid: the same times and the
// same states as the run that did not stop.
#[test]
fn a_resumed_run_keeps_the_grid_of_its_start() {
    let d = dir("grid");
    let every = "--snap-every 0.25 --snap-format csv --log-every 0.25";
    let whole = ok(webgrav(
        &d,
        &run(&format!("{every} --t-end 1 --snap-dir whole")),
    ));
    let first = "--t-end 0.375 --checkpoint c.ckpt --checkpoint-every 0.375";
    ok(webgrav(&d, &run(first)));
    let resumed = format!("run {every} --resume c.ckpt --t-end 1 --snap-dir resumed");
    let resumed = ok(webgrav(&d, &resumed));
    let times: Vec<f64> = log_lines(&resumed)
        .iter()
        .map(|l| l["t"].as_f64().unwrap())
        .collect();
    assert_eq!(times, [0.5, 0.75, 1.0]);
    assert_eq!(states(&resumed), states(&whole)[1..]);
    // A new series starts with the resumed state, then the grid's times.
    let later = index(&d.join("resumed"));
    let got: Vec<f64> = later.iter().map(|e| e.1).collect();
    assert_eq!(got, [0.375, 0.5, 0.75, 1.0]);
    let whole_index = index(&d.join("whole"));
    for (file, t, _) in &later[1..] {
        let (twin, _, _) = whole_index.iter().find(|e| e.1 == *t).unwrap();
        let read = |s: &str, f: &str| std::fs::read(d.join(s).join(f)).unwrap();
        assert_eq!(read("resumed", file), read("whole", twin), "t = {t}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Starts `webgrav` with the words of `line` in `d` and sends it `signal`
/// once `ready` holds (or after 60 s); its output.
fn signalled(d: &Path, line: &str, signal: &str, ready: impl Fn() -> bool) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(words(line))
        .current_dir(d)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    child.wait_with_output().unwrap()
}

// Item 2 (and 3's fallback name): SIGTERM, as a batch system sends it,
// stops a run that writes a snapshot every step like Ctrl-C: exit 130, a
// checkpoint said by name, never over an existing file; the series keeps
// an index that lists exactly the files there and no temporary. The
// resumed run continues the series without a gap.
#[test]
fn sigterm_stops_a_run_with_a_checkpoint_and_a_complete_index() {
    let d = dir("sigterm");
    std::fs::write(d.join("webgrav-interrupted.ckpt"), b"someone's").unwrap();
    let series = "--snap-every 0.0078125 --snap-dir s --snap-format bonsai";
    let index_file = d.join("s/index.json");
    let o = signalled(&d, &run(&format!("{series} --t-end 1000")), "-TERM", || {
        std::thread::sleep(Duration::from_millis(300));
        index_file.exists()
    });
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    let ckpt = "webgrav-interrupted-1.ckpt";
    assert!(
        stderr.contains(&format!("wrote the checkpoint {ckpt}")),
        "{stderr}"
    );
    let kept = std::fs::read(d.join("webgrav-interrupted.ckpt")).unwrap();
    assert_eq!(kept, b"someone's");
    let listed = index(&d.join("s"));
    let mut files: Vec<String> = listed.iter().map(|e| e.0.clone()).collect();
    files.push("index.json".into());
    files.sort();
    assert_eq!(names(&d.join("s")), files);
    assert!(listed.len() > 1);
    // Resumed into the same series: on to two steps past the checkpoint.
    let c = Checkpoint::decode(&std::fs::read(d.join(ckpt)).unwrap(), ckpt).unwrap();
    let t_end = c.time + 2.0 / 128.0;
    ok(webgrav(
        &d,
        &format!("run {series} --resume {ckpt} --t-end {t_end}"),
    ));
    let after = index(&d.join("s"));
    assert_eq!(&after[..listed.len()], &listed[..]);
    for (k, (file, t, step)) in after.iter().enumerate() {
        assert_eq!(*file, format!("snap_{k:05}.bonsai"));
        assert_eq!((*t, *step), (k as f64 / 128.0, k as u64));
    }
    assert_eq!(after.last().unwrap().1, t_end);
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 3: a signal while the finished run writes its end state lets the
// write finish (the run is kept, exit 0); and a checkpoint that cannot be
// written when a run is interrupted is an error that says so.
#[test]
fn interrupts_never_lose_a_finished_run_or_fail_silently() {
    let d = dir("finish");
    // 0 steps of a large N: the end state's write is most of the run. The
    // log line of the end comes just before it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(words("run --solver tree -n 65536 --t-end 0 --out end.csv"))
        .current_dir(&d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead as _;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("\"t\":0"), "{line}");
    // Into the write (which takes some 100 ms in a debug build).
    std::thread::sleep(Duration::from_millis(30));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let end = webgrav::snapshot::read_file(d.join("end.csv").to_str().unwrap()).unwrap();
    assert_eq!(end.particles.len(), 65536);
    assert_eq!(names(&d), ["end.csv"]);

    // The checkpoint's directory vanishes while the run goes on.
    std::fs::create_dir(d.join("gone")).unwrap();
    let line = run("--t-end 1000 --checkpoint gone/c.ckpt --log run.log --log-every 0.0078125");
    let (gone, log) = (d.join("gone"), d.join("run.log"));
    // Once the run logs, it runs: its checkpoint's directory goes.
    let o = signalled(&d, &line, "-TERM", || {
        std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) && std::fs::remove_dir(&gone).is_ok()
    });
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("could not be written to gone/c.ckpt"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

// A full disk: an output that fails mid-run stops the run with its state
// kept in a checkpoint (the log here is /dev/full, every write of which
// fails with ENOSPC), and the run goes on from it once the space is back.
#[test]
fn a_failed_output_keeps_the_run_in_a_checkpoint() {
    let d = dir("full");
    let line = run(
        "--t-end 0.25 --log-every 0.0625 --log /dev/full --snap-every 0.0625 --snap-dir s \
         --out end.csv",
    );
    let stderr = refused(webgrav(&d, &line));
    assert!(
        stderr.contains("No space left") && stderr.contains("--resume end.csv.ckpt"),
        "{stderr}"
    );
    // What was written before is listed, the state is kept, and it resumes
    // (the checkpoint asks for the log that failed: refused by name, then
    // replaced on the command line).
    assert_eq!(index(&d.join("s")).len(), 1, "{stderr}");
    let m = refused(webgrav(&d, "run --resume end.csv.ckpt"));
    assert!(m.contains("--log '/dev/full' is a device"), "{m}");
    ok(webgrav(&d, "run --resume end.csv.ckpt --log end.log"));
    let end = webgrav::snapshot::read_file(d.join("end.csv").to_str().unwrap()).unwrap();
    assert_eq!(end.time, 0.25);
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 4: the log is not touched before the inputs are read and the run
// starts; outputs that are one file, or a file of the series, and an empty
// --snap-dir are refused before any work.
#[test]
fn outputs_are_checked_before_the_log_is_touched() {
    let d = dir("outputs");
    std::fs::write(d.join("yesterday.log"), "{\"t\":1}\n").unwrap();
    std::fs::create_dir(d.join("s")).unwrap();
    let m = refused(webgrav(&d, &run("--in typo.csv --log yesterday.log")));
    assert!(m.contains("typo.csv"), "{m}");
    let log = std::fs::read_to_string(d.join("yesterday.log")).unwrap();
    assert_eq!(log, "{\"t\":1}\n");
    let series = "--snap-every 0.25 --snap-dir s";
    for (args, says) in [
        ("--checkpoint x.csv --out x.csv", "same file"),
        ("--log x --out x.csv --checkpoint ./x", "same file"),
        (&format!("--log s/index.json {series}"), "snapshot series"),
        (
            &format!("--out s/snap_00001.csv {series}"),
            "snapshot series",
        ),
    ] {
        let m = refused(webgrav(&d, &run(args)));
        assert!(m.contains(says), "{args}: {m}");
        assert!(!m.contains("adapter"), "{args} opened the GPU: {m}");
    }
    let line = run("--snap-every 0.25");
    let mut empty = words(&line);
    empty.extend(["--snap-dir", ""]);
    let m = refused(webgrav_in(&d, &empty));
    assert!(m.contains("--snap-dir is empty"), "{m}");
    assert_eq!(names(&d), ["s", "yesterday.log"]);
    assert!(names(&d.join("s")).is_empty());
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 5: each option does what it says or is refused.
#[test]
fn options_do_what_they_say_or_are_refused() {
    let d = dir("options");
    // --checkpoint without --checkpoint-every: written only when
    // interrupted; --log-every 0: one line, at the end.
    let out = ok(webgrav(
        &d,
        &run("--t-end 0.5 --checkpoint c.ckpt --snap-every 0.125"),
    ));
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(!d.join("c.ckpt").exists());
    let m = refused(webgrav(&d, &run("--checkpoint-every 0.25")));
    assert!(m.contains("--checkpoint-every needs --checkpoint"), "{m}");
    let m = refused(webgrav(&d, &run("--units 1 1e10 1")));
    assert!(m.contains("--units converts an input file"), "{m}");
    let ckpt = "--t-end 0.125 --checkpoint c.ckpt --checkpoint-every 0.125";
    ok(webgrav(&d, &run(ckpt)));
    for given in [
        "--eps 0.1",
        "--dt 0.015625",
        "-n 32",
        "--solver tree",
        "--model hernquist",
        "--in c.ckpt",
        "--seed 1",
    ] {
        let m = refused(webgrav(
            &d,
            &format!("run --resume c.ckpt --t-end 0.25 {given}"),
        ));
        assert!(m.contains("settings, which are kept"), "{m}");
        assert!(m.contains(words(given)[0]), "{given}: {m}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Runs `line` to `t_end` with a checkpoint there (`c.ckpt` in `d`): the
/// checkpoint.
fn checkpointed(d: &Path, line: &str, t_end: &str) -> Checkpoint {
    let every = format!("--t-end {t_end} --checkpoint c.ckpt --checkpoint-every {t_end}");
    ok(webgrav(d, &format!("{line} {every}")));
    Checkpoint::decode(&std::fs::read(d.join("c.ckpt")).unwrap(), "c.ckpt").unwrap()
}

/// The checkpoint the previous release (format version 4) wrote of
/// `run -n 8 --solver direct --eps 0.05 --dt 0.0078125 --t-end 0.0625`.
fn version_4_checkpoint() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/checkpoint-v4-direct-8.ckpt")
}

/// That run's initial state (its release's Plummer model of seed 1, which
/// the per-particle streams have since changed), as `run --out` wrote it.
fn version_4_start() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/checkpoint-v4-direct-8.start.csv")
}

// Item 7's checkpoint part: a resumed run keeps the particles' kinds, so
// its outputs can still be analysed by component; a version 4 checkpoint
// (written by the previous release, without kinds) still resumes.
#[test]
fn checkpoints_keep_the_kinds_and_old_ones_still_resume() {
    let d = dir("kinds");
    let galaxy = "run --model disk-galaxy -n 512 --solver direct --dt 0.0078125";
    let c = checkpointed(&d, galaxy, "0.0078125");
    let kinds = c.types.expect("kinds in the checkpoint");
    assert!(kinds.contains(&1) && kinds.contains(&2), "halo and disk");
    ok(webgrav(
        &d,
        "run --resume c.ckpt --t-end 0.015625 --out end.bonsai",
    ));
    let out = ok(webgrav(&d, "analyze end.bonsai --component disk"));
    let disk: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let n_disk = kinds.iter().filter(|&&k| k == 2).count() as u64;
    assert_eq!(disk["n"].as_u64(), Some(n_disk));

    std::fs::copy(version_4_checkpoint(), d.join("v4.ckpt")).unwrap();
    let resumed = ok(webgrav(&d, "run --resume v4.ckpt --t-end 0.125"));
    std::fs::copy(version_4_start(), d.join("v4-start.csv")).unwrap();
    let whole = "run --in v4-start.csv --solver direct --eps 0.05 --dt 0.0078125 --t-end 0.125";
    assert_eq!(states(&resumed), states(&ok(webgrav(&d, whole))));
    // Its run gets an identity, and so a series that it can continue.
    let series = "--snap-every 0.0625 --snap-dir s --snap-format csv";
    let ckpt = "--checkpoint c4.ckpt --checkpoint-every 0.0625";
    ok(webgrav(
        &d,
        &format!("run --resume v4.ckpt --t-end 0.125 {series} {ckpt}"),
    ));
    ok(webgrav(
        &d,
        &format!("run --resume c4.ckpt --t-end 0.1875 {series}"),
    ));
    let times: Vec<f64> = index(&d.join("s")).iter().map(|e| e.1).collect();
    assert_eq!(times, [0.0625, 0.125, 0.1875]);
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8's checkpoint reading and schedules: a checkpoint whose checksum
// holds but whose contents the integrator cannot take is refused, not a
// panic; a device or a long file is refused after its header; an end time
// of more steps than any run takes is refused at once.
#[test]
fn checkpoints_are_checked_and_schedules_bounded() {
    let d = dir("checked");
    let hermite = "run --solver hermite4 -n 16 --eps 0.05 --dt-max 0.125";
    let c = checkpointed(&d, hermite, "0.125");
    let mut zero_dt = c.clone();
    let EngineState::Hermite(h) = &mut zero_dt.engine else {
        panic!("a Hermite checkpoint");
    };
    h.bodies[3].dt = 0.0;
    let mut late = c.clone();
    late.steps += 1;
    let v4 = std::fs::read(version_4_checkpoint()).unwrap();
    let mut leap = Checkpoint::decode(&v4, "v4").unwrap();
    leap.time += 1.0;
    for (name, bad, says) in [
        ("dt0.ckpt", &zero_dt, "body 3"),
        ("steps.ckpt", &late, "block steps"),
        ("time.ckpt", &leap, "steps of dt"),
    ] {
        // A valid checksum over contents that disagree.
        let bytes = bad.encode();
        assert!(Checkpoint::decode(&bytes, name).is_err(), "{name}");
        std::fs::write(d.join(name), &bytes).unwrap();
        let m = refused(webgrav(&d, &format!("run --resume {name} --t-end 2")));
        assert!(m.contains(says), "{name}: {m}");
    }
    // A checkpoint's header, then a gigabyte (sparse): refused unread.
    let mut long = std::fs::read(d.join("c.ckpt")).unwrap();
    long.truncate(200);
    std::fs::write(d.join("long.ckpt"), &long).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("long.ckpt"))
        .unwrap();
    f.set_len(1 << 30).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.ckpt")).unwrap();
    for (name, says) in [
        ("long.ckpt", "longer than a checkpoint of its 16"),
        ("zero.ckpt", "not a webgrav checkpoint"),
    ] {
        let start = Instant::now();
        let m = refused(webgrav(&d, &format!("run --resume {name}")));
        assert!(m.contains(says), "{name}: {m}");
        let took = start.elapsed();
        assert!(took < Duration::from_secs(20), "{name}: {took:?}");
    }
    // For ever: refused, not run (killed after a minute if it runs).
    let mut child = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(words(&run("--t-end 1e300")))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let m = refused(child.wait_with_output().unwrap());
    assert!(m.contains("1.280e302 steps of --dt 0.0078125"), "{m}");
    std::fs::remove_dir_all(&d).unwrap();
}

// Issue 48 item 7: a second signal ends the process at once, and says
// which checkpoint is the latest and what the series index lists, which is
// every snapshot complete on disk. (The two signals are sent back to back;
// a run that wrote its checkpoint between them is tried again.)
#[test]
fn a_second_signal_says_what_it_leaves() {
    let d = dir("double");
    // Steps long enough (N = 16384, direct) that the second signal, 50 ms
    // after the first, comes while the run is still on its way to its
    // checkpoint (two signals at once would be delivered as one).
    let line = "run --solver direct -n 16384 --seed 3 --dt 0.0078125 --t-end 1000 \
                --snap-every 0.0078125 --snap-format csv --checkpoint c.ckpt \
                --checkpoint-every 0.0078125";
    for attempt in 0..5 {
        let _ = std::fs::remove_dir_all(d.join("snapshots"));
        let _ = std::fs::remove_file(d.join("c.ckpt"));
        let child = spawn_webgrav_in(&d, &words(line));
        // The first checkpoint follows the first step; on a software
        // adapter shared with other tests that has taken over a minute.
        let begun = Instant::now();
        while !d.join("c.ckpt").exists() && begun.elapsed() < Duration::from_secs(600) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            d.join("c.ckpt").exists(),
            "no checkpoint within {:?}",
            begun.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
        let pid = child.id().to_string();
        Command::new("sh")
            .args([
                "-c",
                &format!("kill -TERM {pid}; sleep 0.05; kill -TERM {pid}"),
            ])
            .status()
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
        let said = text(&o.stderr);
        if !said.contains("interrupted at once") {
            assert!(attempt < 4, "the run always finished first: {said}");
            continue;
        }
        let c = Checkpoint::decode(&std::fs::read(d.join("c.ckpt")).unwrap(), "c").unwrap();
        assert!(
            said.contains(&format!(
                "the latest checkpoint is c.ckpt at t = {} (continue with --resume c.ckpt)",
                c.time
            )),
            "{said}"
        );
        let listed = index(&d.join("snapshots"));
        assert!(
            said.contains(&format!(
                "snapshots/index.json lists {} snapshots",
                listed.len()
            )),
            "{said}"
        );
        // Every complete snapshot is listed: none on disk is missing from
        // the index.
        let on_disk = names(&d.join("snapshots"))
            .into_iter()
            .filter(|n| n.starts_with("snap_"))
            .count();
        assert_eq!(on_disk, listed.len(), "{said}");
        break;
    }
    std::fs::remove_dir_all(&d).unwrap();
}

// Issue 48 item 6: a checkpoint keeps what its run was asked (end time,
// outputs, schedules), so the printed advice, a bare `--resume`, finishes
// the run: the same --out bytes, log and series as the run that went on.
// An option given with --resume replaces the stored one and says so.
// (The energies' potential is asked for too: the log's energy reference,
// kept in the checkpoint, was summed that way.)
#[test]
fn a_bare_resume_finishes_the_run_as_it_was_asked() {
    let d = dir("bare-resume");
    let asked = |name: &str| {
        format!(
            "--t-end 4 --out {name}.csv --log {name}.log --log-every 0.0625 \
             --snap-every 0.5 --snap-format csv --snap-dir {name} --potential-sum solver"
        )
    };
    ok(webgrav(&d, &run(&asked("whole"))));
    let log = d.join("parts.log");
    let o = signalled(
        &d,
        &run(&format!("{} --checkpoint c.ckpt", asked("parts"))),
        "-TERM",
        || std::fs::read_to_string(&log).is_ok_and(|l| l.lines().count() >= 2),
    );
    let said = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{said}");
    assert!(said.contains("continue with --resume c.ckpt"), "{said}");
    // Elsewhere, with another end time: said, and the stored outputs
    // (relative names) written there.
    std::fs::create_dir(d.join("other")).unwrap();
    std::fs::copy(d.join("c.ckpt"), d.join("other/c.ckpt")).unwrap();
    let c = Checkpoint::decode(&std::fs::read(d.join("c.ckpt")).unwrap(), "c").unwrap();
    let t_other = c.time + 0.0078125;
    let o = webgrav(
        &d.join("other"),
        &format!("run --resume c.ckpt --t-end {t_other}"),
    );
    let said = text(&o.stderr);
    assert!(o.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "--t-end {t_other} given: the checkpoint's run asked for 4.0"
        )),
        "{said}"
    );
    assert!(d.join("other/parts.csv").exists(), "{said}");
    // A request that is not webgrav's (checksum intact) is refused.
    let mut bad = c.clone();
    bad.request = "{".into();
    std::fs::write(d.join("other/bad.ckpt"), bad.encode()).unwrap();
    let m = refused(webgrav(&d.join("other"), "run --resume bad.ckpt"));
    assert!(
        m.contains("bad.ckpt: its run's request is not webgrav's"),
        "{m}"
    );
    // Here, exactly as printed.
    ok(webgrav(&d, "run --resume c.ckpt"));
    assert!(
        std::fs::read(d.join("parts.csv")).unwrap() == std::fs::read(d.join("whole.csv")).unwrap(),
        "the resumed run's --out differs"
    );
    let read_log = |s: &str| log_lines(&std::fs::read_to_string(d.join(s)).unwrap());
    assert_eq!(read_log("parts.log"), read_log("whole.log"));
    assert_eq!(read_log("parts.log")[0]["potential_sum"], "solver-f32");
    assert_eq!(index(&d.join("parts")), index(&d.join("whole")));
    std::fs::remove_dir_all(&d).unwrap();
}
