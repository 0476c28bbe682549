//! The CLI refuses, before any work and in words that name the option and
//! what it takes, what would otherwise hang, eat memory, destroy an
//! output or draw a degenerate picture with exit 0 (issue 48, items 3 and
//! 5 and the small findings of item 8).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{text, webgrav_in};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use webgrav::snapshot::{write_file, Snapshot};
use webgrav::state::Model;

/// The message of a command that must fail; it must not have opened the
/// GPU (`run` names the adapter once it has), as every check here comes
/// before any work.
fn refused(o: Output) -> String {
    let stderr = text(&o.stderr);
    assert!(!o.status.success(), "succeeded: {stderr}");
    assert!(
        !stderr.contains("adapter"),
        "opened the GPU first: {stderr}"
    );
    stderr
}

/// The message of a command that must fail (after the GPU is opened, as
/// checks of the run's schedule are).
fn failed(o: Output) -> String {
    assert!(!o.status.success(), "succeeded: {}", text(&o.stderr));
    text(&o.stderr)
}

fn dir(name: &str) -> PathBuf {
    common::fresh_dir(&format!("guards-{name}"))
}

/// A Plummer sphere of `n` (seed 1) written to `path`, its positions
/// scaled by `scale`.
fn plummer_file(path: &Path, n: usize, scale: f32) {
    let mut particles = Model::Plummer.generate(n, 1).unwrap();
    for p in &mut particles.pos_mass {
        p.pos = p.pos.map(|x| x * scale);
    }
    let snap = Snapshot {
        particles,
        ..Default::default()
    };
    write_file(path.to_str().unwrap(), &snap).unwrap();
}

/// Longest a refusal may take: it comes before the GPU is opened, so
/// well under a second on an idle machine; 30 s leaves room for a loaded
/// one, and a run that reads or waits without end never gets there.
const PATIENCE: Duration = Duration::from_secs(30);

/// Resident memory at which a process is taken to read without end: a
/// refusal needs a few MiB, and a run of N = 64 on lavapipe some hundreds.
const MAX_RESIDENT: u64 = 1 << 30;

fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// `webgrav_in`, killed (and the test failed) when it runs past
/// `PATIENCE` or holds more than `MAX_RESIDENT`.
fn bounded(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run webgrav");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        let resident = resident_bytes(child.id());
        let why = if resident > MAX_RESIDENT {
            format!("held {} MiB", resident >> 20)
        } else if start.elapsed() > PATIENCE {
            format!("ran for {PATIENCE:?}")
        } else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let _ = child.kill();
        let o = child.wait_with_output().unwrap();
        panic!("webgrav {args:?} {why} and was killed: {}", text(&o.stderr));
    }
}

// Item 3: a resumed run reads its log back, so a --log that is a device
// (read without end) or a FIFO (waited on for ever) is refused at once.
#[test]
fn a_resume_refuses_a_log_that_is_not_a_regular_file() {
    let d = dir("log");
    let run = "run --solver direct -n 64 --seed 3 --eps 0.05 --dt 0.0078125";
    let first = format!("{run} --t-end 0.125 --checkpoint c.ckpt --checkpoint-every 0.125");
    let o = webgrav_in(&d, &first.split_whitespace().collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let made = Command::new("mkfifo").arg(d.join("pipe")).status().unwrap();
    assert!(made.success());
    for (log, what) in [("/dev/zero", "a device"), ("pipe", "a FIFO")] {
        let args = ["run", "--resume", "c.ckpt", "--t-end", "0.25", "--log", log];
        let m = refused(bounded(&d, &args));
        assert!(
            m.contains(&format!("--log '{log}' is {what}, not a regular file")),
            "{log}: {m}"
        );
    }
    // A log that is a regular file resumes as before.
    let o = bounded(
        &d,
        &[
            "run", "--resume", "c.ckpt", "--t-end", "0.25", "--log", "l.log",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 5: a Tipsy or Bonsai --out brings its kinds side file
// (OUT.webgrav_kind), which the write replaces or removes: a --log or
// --checkpoint of that name is refused as one of the id file is.
#[test]
fn outputs_may_not_be_the_side_file_of_out() {
    let d = dir("kinds");
    let run = ["run", "--solver", "direct", "-n", "64", "--t-end", "0"];
    for (out, flag, other) in [
        ("x.tipsy", "--log", "x.tipsy.webgrav_kind"),
        ("x.tipsy", "--checkpoint", "./x.tipsy.webgrav_kind"),
        ("y.bonsai", "--log", "y.bonsai.webgrav_kind"),
        ("y.bonsai", "--checkpoint", "y.bonsai.webgrav_kind"),
    ] {
        let mut args = run.to_vec();
        args.extend(["--out", out, flag, other]);
        let m = refused(webgrav_in(&d, &args));
        assert!(
            m.contains("--out's kinds file") && m.contains("are the same file"),
            "{args:?}: {m}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert!(left.is_empty(), "a refused run wrote {left:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8: an infinite interval or end time is not ">= 0"'s fault.
#[test]
fn times_must_be_finite_and_say_so() {
    let d = dir("times");
    for flag in [
        "--t-end",
        "--log-every",
        "--snap-every",
        "--checkpoint-every",
    ] {
        let m = refused(webgrav_in(&d, &["run", "-n", "64", flag, "inf"]));
        assert!(
            m.contains(&format!("{flag} must be a finite time >= 0, got inf")),
            "{flag}: {m}"
        );
    }
    let m = refused(webgrav_in(&d, &["run", "-n", "64", "--log-every", "-1"]));
    assert!(m.contains("--log-every must be >= 0, got -1"), "{m}");
    std::fs::remove_dir_all(&d).unwrap();
}

// A one-GPU run has no domains to redraw: `--redraw-every` (for runs under
// mpirun) is refused by name, not ignored; `--potential-sum` takes only
// its three choices.
#[test]
fn options_of_other_runs_are_refused() {
    let d = dir("other-runs");
    let m = refused(webgrav_in(&d, &["run", "-n", "64", "--redraw-every", "4"]));
    assert!(
        m.contains("--redraw-every is for runs on several ranks"),
        "{m}"
    );
    let m = refused(webgrav_in(
        &d,
        &["run", "-n", "64", "--potential-sum", "best"],
    ));
    assert!(m.contains("auto") && m.contains("exact"), "{m}");
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8: `analyze` checks its outputs against each other, by any name.
#[test]
fn analyze_outputs_are_not_one_file() {
    let d = dir("analyze");
    plummer_file(&d.join("s.csv"), 512, 1.0);
    for disk in ["p.csv", "./p.csv"] {
        let args = [
            "analyze",
            "s.csv",
            "--profile-csv",
            "p.csv",
            "--disk-csv",
            disk,
        ];
        let m = refused(webgrav_in(&d, &args));
        assert!(
            m.contains("--profile-csv 'p.csv' and --disk-csv") && m.contains("same file"),
            "{m}"
        );
        assert!(!d.join("p.csv").exists());
    }
    let args = [
        "analyze",
        "s.csv",
        "--profile-csv",
        "p.csv",
        "--disk-csv",
        "q.csv",
    ];
    let o = webgrav_in(&d, &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(d.join("p.csv").exists() && d.join("q.csv").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8: `render` refuses a degenerate camera, colour range, bar radius
// or snapshot, naming the option and what it takes (the camera's numbers
// the page's ranges), instead of writing a black picture with exit 0.
#[test]
fn render_refuses_degenerate_options() {
    let d = dir("render");
    plummer_file(&d.join("s.csv"), 256, 1.0);
    // At 10^30 every square of a coordinate is infinite in f32.
    plummer_file(&d.join("far.csv"), 256, 1e30);
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--fov", "0"],
            &["--fov", "expected a number in [0.05, 3]"],
        ),
        (
            &["--distance", "nan"],
            &["--distance", "expected a number > 0 and <= 1000000"],
        ),
        (
            &["--yaw", "nan"],
            &["--yaw", "expected a number in [-1000, 1000]"],
        ),
        (
            &["--target", "0", "nan", "0"],
            &["--target", "expected a number in [-1000000, 1000000]"],
        ),
        (
            &["--pitch", "inf"],
            &["--pitch", "expected a number in [-1.55, 1.55]"],
        ),
        (
            &["--pitch", "-inf"],
            &["--pitch", "expected a number in [-1.55, 1.55]"],
        ),
        (
            &["--point-size", "1e30"],
            &["--point-size", "expected a number in [0.5, 32]"],
        ),
        (
            &["--a2-radius", "nan"],
            &["--a2-radius must be a length > 0 (and finite), got NaN"],
        ),
        (
            &["--a2-radius", "0"],
            &["--a2-radius must be a length > 0 (and finite), got 0"],
        ),
        (
            &["--map", "density", "--range", "-inf", "inf"],
            &["--range -inf inf", "must be finite numbers"],
        ),
        (
            &["--map", "density", "--range", "2", "1"],
            &["--range 2 1", "LO must be below HI"],
        ),
    ];
    for (options, says) in cases {
        let mut args = vec!["render", "s.csv", "-o", "p.png"];
        args.extend_from_slice(options);
        let m = refused(webgrav_in(&d, &args));
        for s in *says {
            assert!(m.contains(s), "{options:?}: {m}");
        }
        assert!(!d.join("p.png").exists(), "{options:?} drew a picture");
    }
    let m = refused(webgrav_in(&d, &["render", "far.csv", "-o", "p.png"]));
    assert!(
        m.contains("far.csv: particle") && m.contains("beyond the 1e15"),
        "{m}"
    );
    assert!(!d.join("p.png").exists());
    // Camera numbers in range, negative ones included, still draw.
    let o = webgrav_in(
        &d,
        &[
            "render", "s.csv", "-o", "p.png", "--width", "64", "--height", "48", "--yaw", "-0.5",
            "--pitch", "-0.2", "--target", "-1", "0", "0", "--map", "density", "--range", "-1",
            "2",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8: messages that say what is wrong: a tiny --dt in exponent
// notation (not 300 zeros), --units' negative numbers reach its check
// (clap took them for flags), --snap-format only as documented.
#[test]
fn messages_name_the_value_as_given() {
    let d = dir("messages");
    let refused_run = |line: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        failed(webgrav_in(&d, &words))
    };
    let m = refused_run("run -n 64 --dt 1e-300");
    assert!(m.contains("--dt 1e-300") && m.len() < 400, "{m}");
    plummer_file(&d.join("s.csv"), 64, 1.0);
    let m = refused_run("run --in s.csv --units -1 1 1");
    assert!(m.contains("--units must be three positive numbers"), "{m}");
    for alias in ["bin", "std", "TIPSY"] {
        let m = refused_run(&format!(
            "run -n 64 --snap-every 0.0078125 --snap-format {alias}"
        ));
        let says = format!(
            "unknown snapshot format '{alias}': use tipsy, bonsai, csv, gadget, hdf5, \
             gadget4-hdf5, swift-hdf5"
        );
        assert!(m.contains(&says), "{m}");
    }
    // /dev/stdout into a pipe (as here) is a pipe, not "nowhere".
    let m = refused_run("run -n 64 --log /dev/stdout");
    assert!(
        m.contains("'/dev/stdout' leads to a pipe, not a file"),
        "{m}"
    );
    // A refused run leaves no --snap-dir behind, though its checks of
    // the schedule come after the directory's.
    let m = refused_run("run -n 64 --snap-every 0.01 --snap-dir new");
    assert!(
        m.contains("--snap-every 0.01 is not a whole number of --dt"),
        "{m}"
    );
    assert!(!d.join("new").exists());
    assert!(!d.join("snapshots").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8: a side file that is no plain file is refused by name (its kinds
// or ids were silently lost); --bh ids the snapshot lacks are refused;
// a series index listing files outside its directory is refused.
#[test]
fn inputs_that_would_lose_data_silently_are_refused() {
    let d = dir("inputs");
    plummer_file(&d.join("s.tipsy"), 64, 1.0);
    std::fs::create_dir(d.join("s.tipsy.webgrav_kind")).unwrap();
    let m = refused(webgrav_in(&d, &["analyze", "s.tipsy"]));
    assert!(
        m.contains("s.tipsy.webgrav_kind' (the side file of s.tipsy) is a directory"),
        "{m}"
    );
    plummer_file(&d.join("s.csv"), 64, 1.0);
    let m = refused(webgrav_in(&d, &["analyze", "s.csv", "--bh", "3", "999999"]));
    assert!(
        m.contains("--bh: s.csv has no particle with id 999999"),
        "{m}"
    );
    std::fs::create_dir(d.join("series")).unwrap();
    std::fs::write(
        d.join("series/index.json"),
        r#"{"format":"csv","run":"1","snapshots":[{"file":"../s.csv","time":0}]}"#,
    )
    .unwrap();
    let commands: [&[&str]; 2] = [
        &["analyze", "--series", "series"],
        &["render", "--series", "series", "-o", "movie.mp4"],
    ];
    for command in commands {
        let m = refused(webgrav_in(&d, command));
        assert!(
            m.contains("lists '../s.csv', not a file of the series' directory"),
            "{m}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8: Hermite outputs fall at block times; one off its requested time
// is said (it was silent), with what lands exactly.
#[test]
fn hermite_outputs_off_their_times_are_said() {
    let d = dir("hermite-times");
    for (every, off) in [("0.1", true), ("0.125", false)] {
        let args = [
            "run",
            "--solver",
            "hermite4",
            "-n",
            "64",
            "--t-end",
            "0.375",
            "--log-every",
            every,
        ];
        let o = webgrav_in(&d, &args);
        let m = text(&o.stderr);
        assert!(o.status.success(), "{m}");
        let said = m.contains("Hermite block steps reach t = 0.09765625 for the output at t = 0.1")
            && m.contains("multiples of --dt-max 0.125 land exactly");
        assert_eq!(said, off, "--log-every {every}: {m}");
        assert_eq!(m.contains("Hermite block steps reach"), off, "{m}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

// Item 8: a system of zero energy (a particle at rest beside a massless
// one) reports the change of E, not a relative error of NaN.
#[test]
fn zero_energy_is_reported_without_nan() {
    let d = dir("zero-energy");
    std::fs::write(
        d.join("rest.csv"),
        "id,x,y,z,vx,vy,vz,m\n1,0,0,0,0,0,0,1\n2,5,0,0,0,0,0,0\n",
    )
    .unwrap();
    let args = [
        "run",
        "--in",
        "rest.csv",
        "--solver",
        "direct",
        "--t-end",
        "0.0078125",
    ];
    let o = webgrav_in(&d, &args);
    let m = text(&o.stderr);
    assert!(o.status.success(), "{m}");
    assert!(
        m.contains("E0 = 0: no relative energy error; the absolute change is |dE| = 0.000e0"),
        "{m}"
    );
    assert!(!m.contains("NaN"), "{m}");
    std::fs::remove_dir_all(&d).unwrap();
}
