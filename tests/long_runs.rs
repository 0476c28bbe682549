//! Long runs lose nothing (`webgrav run` end to end, tiny N on the
//! headless GPU): resumes continue their own series, log and output grid;
//! SIGTERM and SIGINT stop a run with a checkpoint and a complete index;
//! outputs are checked against each other before anything is touched;
//! checkpoints keep the particles' kinds and are checked when read.
#![cfg(not(target_arch = "wasm32"))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use webgrav::run::checkpoint::{Checkpoint, EngineState};

fn webgrav_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run webgrav")
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

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("webgrav-long-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The same small leapfrog run everywhere (direct forces: bit-identical
/// through every resume).
const RUN: &[&str] = &[
    "run",
    "--solver",
    "direct",
    "-n",
    "64",
    "--seed",
    "3",
    "--eps",
    "0.05",
    "--dt",
    "0.0078125",
];

fn run_args<'a>(more: &[&'a str]) -> Vec<&'a str> {
    RUN.iter().copied().chain(more.iter().copied()).collect()
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

/// A run log's lines without what differs between runs (wall time,
/// phase timings).
fn log_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("wall_s");
            o.remove("phase_ms");
            v
        })
        .collect()
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
// file. README's own `--resume run.ckpt … --checkpoint run.ckpt` works.
// Another run refuses that directory instead of overwriting it.
#[test]
fn a_resumed_run_continues_its_own_series_and_log() {
    let d = dir("own-series");
    let series = [
        "--snap-every",
        "0.25",
        "--snap-format",
        "csv",
        "--log-every",
        "0.125",
    ];
    let whole = [
        &series[..],
        &["--t-end", "1", "--snap-dir", "whole", "--log", "whole.log"],
    ]
    .concat();
    ok(webgrav_in(&d, &run_args(&whole)));
    // Checkpointed at 0.5, then on to 0.75 before it stopped.
    let first = [
        &series[..],
        &[
            "--t-end",
            "0.75",
            "--snap-dir",
            "parts",
            "--log",
            "parts.log",
        ],
        &["--checkpoint", "c.ckpt", "--checkpoint-every", "0.5"],
    ]
    .concat();
    ok(webgrav_in(&d, &run_args(&first)));
    assert_eq!(index(&d.join("parts")).len(), 4);
    let resumed = [
        &["run"][..],
        &series,
        &["--resume", "c.ckpt", "--t-end", "1", "--snap-dir", "parts"],
        &["--log", "parts.log", "--checkpoint", "c.ckpt"],
    ]
    .concat();
    ok(webgrav_in(&d, &resumed));
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
    let m = refused(webgrav_in(
        &d,
        &run_args(&[&series[..], &["--snap-dir", "parts"]].concat()),
    ));
    assert!(
        m.contains("holds the series of another run") && m.contains("--resume"),
        "{m}"
    );
    assert_eq!(std::fs::read(d.join("parts/index.json")).unwrap(), before);
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 6: a checkpoint taken off the output grid (t = 0.375; snapshots and
// logs every 0.25) resumes on the original grid: the same times and the
// same states as the run that did not stop.
#[test]
fn a_resumed_run_keeps_the_grid_of_its_start() {
    let d = dir("grid");
    let every = [
        "--snap-every",
        "0.25",
        "--snap-format",
        "csv",
        "--log-every",
        "0.25",
    ];
    let whole = ok(webgrav_in(
        &d,
        &run_args(&[&every[..], &["--t-end", "1", "--snap-dir", "whole"]].concat()),
    ));
    let first = [
        "--t-end",
        "0.375",
        "--checkpoint",
        "c.ckpt",
        "--checkpoint-every",
        "0.375",
    ];
    ok(webgrav_in(&d, &run_args(&first)));
    let resumed = ok(webgrav_in(
        &d,
        &[
            &["run"][..],
            &every,
            &[
                "--resume",
                "c.ckpt",
                "--t-end",
                "1",
                "--snap-dir",
                "resumed",
            ],
        ]
        .concat(),
    ));
    let times = |log: &str| -> Vec<f64> {
        log_lines(log)
            .iter()
            .map(|l| l["t"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(times(&resumed), [0.5, 0.75, 1.0]);
    assert_eq!(states(&resumed), states(&whole)[1..]);
    // A new series starts with the resumed state, then the grid's times.
    let later = index(&d.join("resumed"));
    let got: Vec<f64> = later.iter().map(|e| e.1).collect();
    assert_eq!(got, [0.375, 0.5, 0.75, 1.0]);
    let whole_index = index(&d.join("whole"));
    for (file, t, _) in &later[1..] {
        let (twin, _, _) = whole_index.iter().find(|e| e.1 == *t).unwrap();
        let a = std::fs::read(d.join("resumed").join(file)).unwrap();
        assert_eq!(
            a,
            std::fs::read(d.join("whole").join(twin)).unwrap(),
            "t = {t}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Starts a run in `d` and sends it `signal` once `ready` holds (or after
/// 60 s); its output.
fn signalled(d: &Path, args: &[&str], signal: &str, ready: impl Fn() -> bool) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
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
    let series = [
        "--snap-every",
        "0.0078125",
        "--snap-dir",
        "s",
        "--snap-format",
        "bonsai",
    ];
    let args = run_args(&[&series[..], &["--t-end", "1000"]].concat());
    let index_file = d.join("s/index.json");
    let o = signalled(&d, &args, "-TERM", || {
        std::thread::sleep(Duration::from_millis(300));
        index_file.exists()
    });
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("wrote the checkpoint webgrav-interrupted-1.ckpt"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(d.join("webgrav-interrupted.ckpt")).unwrap(),
        b"someone's"
    );
    let listed = index(&d.join("s"));
    let mut files: Vec<String> = listed.iter().map(|e| e.0.clone()).collect();
    files.push("index.json".into());
    files.sort();
    assert_eq!(names(&d.join("s")), files);
    assert!(listed.len() > 1);
    // Resumed into the same series: on to two steps past the checkpoint.
    let c = Checkpoint::decode(
        &std::fs::read(d.join("webgrav-interrupted-1.ckpt")).unwrap(),
        "c",
    )
    .unwrap();
    let t_end = (c.time + 2.0 / 128.0).to_string();
    let resume = [
        &["run"][..],
        &series,
        &["--resume", "webgrav-interrupted-1.ckpt", "--t-end", &t_end],
    ];
    ok(webgrav_in(&d, &resume.concat()));
    let after = index(&d.join("s"));
    assert_eq!(&after[..listed.len()], &listed[..]);
    for (k, (file, t, step)) in after.iter().enumerate() {
        assert_eq!(*file, format!("snap_{k:05}.bonsai"));
        assert_eq!((*t, *step), (k as f64 / 128.0, k as u64));
    }
    assert_eq!(after.last().unwrap().1, c.time + 2.0 / 128.0);
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
        .args(["run", "--solver", "tree", "-n", "200000", "--t-end", "0"])
        .args(["--out", "end.csv"])
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
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let end = webgrav::snapshot::read_file(d.join("end.csv").to_str().unwrap()).unwrap();
    assert_eq!(end.particles.len(), 200000);
    assert_eq!(names(&d), ["end.csv"]);

    // The checkpoint's directory vanishes while the run goes on.
    std::fs::create_dir(d.join("gone")).unwrap();
    let args = run_args(&["--t-end", "1000", "--checkpoint", "gone/c.ckpt"]);
    let args = [&args[..], &["--log", "run.log", "--log-every", "0.0078125"]].concat();
    let (gone, log) = (d.join("gone"), d.join("run.log"));
    // Once the run logs, it runs: its checkpoint's directory goes.
    let o = signalled(&d, &args, "-TERM", || {
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

// Item 4: the log is not touched before the inputs are read and the run
// starts; outputs that are one file, or a file of the series, and an empty
// --snap-dir are refused before any work.
#[test]
fn outputs_are_checked_before_the_log_is_touched() {
    let d = dir("outputs");
    std::fs::write(d.join("yesterday.log"), "{\"t\":1}\n").unwrap();
    std::fs::create_dir(d.join("s")).unwrap();
    let m = refused(webgrav_in(
        &d,
        &run_args(&["--in", "typo.csv", "--log", "yesterday.log"]),
    ));
    assert!(m.contains("typo.csv"), "{m}");
    assert_eq!(
        std::fs::read_to_string(d.join("yesterday.log")).unwrap(),
        "{\"t\":1}\n"
    );
    for (args, says) in [
        (
            &["--checkpoint", "x.csv", "--out", "x.csv"][..],
            "same file",
        ),
        (
            &["--log", "x", "--out", "x.csv", "--checkpoint", "./x"],
            "same file",
        ),
        (
            &[
                "--log",
                "s/index.json",
                "--snap-every",
                "0.25",
                "--snap-dir",
                "s",
            ],
            "snapshot series",
        ),
        (
            &[
                "--out",
                "s/snap_00001.csv",
                "--snap-every",
                "0.25",
                "--snap-dir",
                "s",
            ],
            "snapshot series",
        ),
        (
            &["--snap-every", "0.25", "--snap-dir", ""],
            "--snap-dir is empty",
        ),
    ] {
        let m = refused(webgrav_in(&d, &run_args(args)));
        assert!(m.contains(says), "{args:?}: {m}");
        assert!(!m.contains("adapter"), "{args:?} opened the GPU: {m}");
    }
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
    let out = ok(webgrav_in(
        &d,
        &run_args(&[
            "--t-end",
            "0.5",
            "--checkpoint",
            "c.ckpt",
            "--snap-every",
            "0.125",
        ]),
    ));
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(!d.join("c.ckpt").exists());
    let m = refused(webgrav_in(&d, &run_args(&["--checkpoint-every", "0.25"])));
    assert!(m.contains("--checkpoint-every needs --checkpoint"), "{m}");
    let m = refused(webgrav_in(&d, &run_args(&["--units", "1", "1e10", "1"])));
    assert!(m.contains("--units converts an input file"), "{m}");
    ok(webgrav_in(
        &d,
        &run_args(&[
            "--t-end",
            "0.125",
            "--checkpoint",
            "c.ckpt",
            "--checkpoint-every",
            "0.125",
        ]),
    ));
    for given in [
        &["--eps", "0.1"][..],
        &["--dt", "0.015625"],
        &["-n", "32"],
        &["--solver", "tree"],
        &["--model", "hernquist"],
        &["--in", "c.ckpt"],
        &["--seed", "1"],
    ] {
        let mut args = vec!["run", "--resume", "c.ckpt", "--t-end", "0.25"];
        args.extend(given);
        let m = refused(webgrav_in(&d, &args));
        assert!(
            m.contains("settings, which are kept") && m.contains(given[0]),
            "{m}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 7's checkpoint part: a resumed run keeps the particles' kinds, so
// its outputs can still be analysed by component; a version 4 checkpoint
// (written by the previous release, without kinds) still resumes.
#[test]
fn checkpoints_keep_the_kinds_and_old_ones_still_resume() {
    let d = dir("kinds");
    let galaxy = [
        "run",
        "--model",
        "disk-galaxy",
        "-n",
        "512",
        "--solver",
        "direct",
        "--dt",
        "0.0078125",
    ];
    let ckpt = ["--checkpoint", "c.ckpt", "--checkpoint-every", "0.0078125"];
    ok(webgrav_in(
        &d,
        &[&galaxy[..], &ckpt, &["--t-end", "0.0078125"]].concat(),
    ));
    let c = Checkpoint::decode(&std::fs::read(d.join("c.ckpt")).unwrap(), "c").unwrap();
    let kinds = c.types.expect("kinds in the checkpoint");
    assert!(kinds.contains(&1) && kinds.contains(&2), "halo and disk");
    ok(webgrav_in(
        &d,
        &[
            "run",
            "--resume",
            "c.ckpt",
            "--t-end",
            "0.015625",
            "--out",
            "end.bonsai",
        ],
    ));
    let out = ok(webgrav_in(
        &d,
        &["analyze", "end.bonsai", "--component", "disk"],
    ));
    let disk: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(
        disk["n"].as_u64(),
        Some(kinds.iter().filter(|&&k| k == 2).count() as u64)
    );

    let v4 =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/checkpoint-v4-direct-8.ckpt");
    let resumed = ok(webgrav_in(
        &d,
        &["run", "--resume", v4.to_str().unwrap(), "--t-end", "0.125"],
    ));
    let whole = ok(webgrav_in(
        &d,
        &[
            "run",
            "-n",
            "8",
            "--solver",
            "direct",
            "--eps",
            "0.05",
            "--dt",
            "0.0078125",
            "--t-end",
            "0.125",
        ],
    ));
    assert_eq!(states(&resumed), states(&whole));
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8's checkpoint reading and schedules: a checkpoint whose checksum
// holds but whose contents the integrator cannot take is refused, not a
// panic; a device or a long file is refused after its header; an end time
// of more steps than any run takes is refused at once.
#[test]
fn checkpoints_are_checked_and_schedules_bounded() {
    let d = dir("checked");
    let hermite = [
        "run", "--solver", "hermite4", "-n", "16", "--eps", "0.05", "--dt-max", "0.125",
    ];
    let ckpt = [
        "--checkpoint",
        "h.ckpt",
        "--checkpoint-every",
        "0.125",
        "--t-end",
        "0.125",
    ];
    ok(webgrav_in(&d, &[&hermite[..], &ckpt].concat()));
    let c = Checkpoint::decode(&std::fs::read(d.join("h.ckpt")).unwrap(), "h").unwrap();
    let mut zero_dt = c.clone();
    let EngineState::Hermite { bodies, .. } = &mut zero_dt.engine else {
        panic!("a Hermite checkpoint");
    };
    bodies[3].dt = 0.0;
    let mut late = c.clone();
    late.steps += 1;
    let mut leap = Checkpoint::decode(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/checkpoint-v4-direct-8.ckpt"),
        )
        .unwrap(),
        "v4",
    )
    .unwrap();
    leap.time += 1.0;
    for (name, bad, says) in [
        ("dt0.ckpt", &zero_dt, "body 3"),
        ("steps.ckpt", &late, "block steps"),
        ("time.ckpt", &leap, "steps of dt"),
    ] {
        let bytes = bad.encode();
        assert!(Checkpoint::decode(&bytes, name).is_err(), "{name}");
        std::fs::write(d.join(name), &bytes).unwrap();
        let m = refused(webgrav_in(&d, &["run", "--resume", name, "--t-end", "2"]));
        assert!(m.contains(says), "{name}: {m}");
    }
    // A checkpoint's header, then a gigabyte (sparse): refused unread.
    let mut long = std::fs::read(d.join("h.ckpt")).unwrap();
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
        let m = refused(webgrav_in(&d, &["run", "--resume", name]));
        assert!(m.contains(says), "{name}: {m}");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{name}: {:?}",
            start.elapsed()
        );
    }
    // For ever: refused, not run (killed after a minute if it runs).
    let mut child = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(run_args(&["--t-end", "1e300"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let o = child.wait_with_output().unwrap();
    let m = refused(o);
    assert!(m.contains("1.280e302 steps of --dt 0.0078125"), "{m}");
    std::fs::remove_dir_all(&d).unwrap();
}
