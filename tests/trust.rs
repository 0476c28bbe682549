//! Bad input and faults (issue 17's red-team findings, one test each): no
//! work lost to an unwritable output, particle identities kept, inputs
//! never overwritten, no silent NaN, plain CSV, absurd N refused before
//! anything is generated, no hangs or silent short runs, no leftovers.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::text;
use std::path::PathBuf;
use std::process::{Command, Output};
use webgrav::snapshot::{self, Snapshot};
use webgrav::state::Model;

fn webgrav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .output()
        .expect("run webgrav")
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    common::fresh_dir(&format!("trust-{name}"))
}

fn s(p: &std::path::Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Fails, with `needle` in its message, before the GPU is even opened
/// (the CLI prints the adapter once it has one).
fn fails_before_work(args: &[&str], needle: &str) {
    let o = webgrav(args);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{args:?} succeeded");
    assert!(err.contains(needle), "{args:?}: '{err}' lacks '{needle}'");
    assert!(!err.contains("adapter:"), "{args:?} started work: {err}");
}

// 1. Every output path is checked before any work starts.
#[test]
fn outputs_are_checked_before_any_work() {
    let d = dir("outputs");
    let file = d.join("plain");
    std::fs::write(&file, b"x").unwrap();
    let missing = s(&d.join("nodir/end.tipsy"));
    let under_file = s(&file.join("end.tipsy"));
    fails_before_work(&["run", "-n", "1024", "--out", &missing], "does not exist");
    fails_before_work(
        &["run", "-n", "1024", "--out", &under_file],
        "does not exist",
    );
    // /proc refuses new files even to root.
    fails_before_work(
        &["run", "-n", "64", "--out", "/proc/end.tipsy"],
        "cannot write",
    );
    fails_before_work(
        &["run", "-n", "64", "--out", &s(&d)],
        "cannot tell the snapshot format",
    );
    let missing_csv = s(&d.join("nodir/f.csv"));
    fails_before_work(
        &["forces", "-n", "64", "--out", &missing_csv],
        "does not exist",
    );
    let png = s(&d.join("nodir/f.png"));
    let input = s(&d.join("in.csv"));
    let snap = Snapshot {
        particles: Model::Plummer.generate(16, 1).unwrap(),
        ..Default::default()
    };
    snapshot::write_file(&input, &snap).unwrap();
    fails_before_work(&["render", &input, "-o", &png], "does not exist");
}

// 2. Every format is written in input order, with the input's ids: a tree
// run's record k is input particle k; ids of a .bonsai input reach a
// standard Tipsy output through its .iord side file.
#[test]
fn particle_identity_survives_every_solver_and_format() {
    let d = dir("identity");
    let out = s(&d.join("tr.tipsy"));
    let o = webgrav(&[
        "run", "-n", "64", "--seed", "4", "--solver", "tree", "--t-end", "0", "--out", &out,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let back = snapshot::read_file(&out).unwrap();
    // The model as the CLI samples it, on this GPU.
    let (ctx, params) = (common::gpu(), Default::default());
    let start = pollster::block_on(Model::Plummer.generate_on(&ctx, 64, 4, &params));
    let start = start.unwrap().particles;
    assert_eq!(back.particles.pos_mass, start.pos_mass);
    assert_eq!(back.particles.vel, start.vel);
    // No side file where the ids are 0..N-1.
    assert!(!d.join("tr.tipsy.iord").exists());
    // Ids that are not 0..N-1 travel through standard Tipsy.
    let mut with_ids = Snapshot {
        particles: Model::Plummer.generate(50, 2).unwrap(),
        ..Default::default()
    };
    with_ids.particles.id = (0..50).map(|k| 7_000_000_000 + 13 * k).collect();
    let input = s(&d.join("in.bonsai"));
    snapshot::write_file(&input, &with_ids).unwrap();
    let tipsy = s(&d.join("out.tipsy"));
    let o = webgrav(&["convert", &input, &tipsy]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains(".iord"), "{}", text(&o.stderr));
    let side = std::fs::read_to_string(d.join("out.tipsy.iord")).unwrap();
    assert!(side.starts_with("50\n7000000000\n7000000013\n"), "{side}");
    assert_eq!(
        snapshot::read_file(&tipsy).unwrap().particles,
        with_ids.particles
    );
    // A later write with plain ids brings the side file up to date.
    let plain = Snapshot {
        particles: Model::Plummer.generate(50, 3).unwrap(),
        ..Default::default()
    };
    snapshot::write_file(&tipsy, &plain).unwrap();
    assert_eq!(
        snapshot::read_file(&tipsy).unwrap().particles,
        plain.particles
    );
}

// 3. Outputs match their extension, and no output overwrites an input.
#[test]
fn inputs_are_never_overwritten_and_extensions_hold() {
    let d = dir("inputs");
    let input = s(&d.join("snap.tipsy"));
    let snap = Snapshot {
        particles: Model::Plummer.generate(32, 1).unwrap(),
        ..Default::default()
    };
    snapshot::write_file(&input, &snap).unwrap();
    let before = std::fs::read(&input).unwrap();
    fails_before_work(
        &["forces", "--in", &input, "--out", &input],
        "the force table is written as CSV",
    );
    let csv = s(&d.join("snap.csv"));
    snapshot::write_file(&csv, &snap).unwrap();
    fails_before_work(
        &["forces", "--in", &csv, "--out", &csv],
        "is the input file",
    );
    fails_before_work(
        &["run", "--in", &input, "--t-end", "0", "--out", &input],
        "is the input file",
    );
    let o = webgrav(&["convert", &input, &input]);
    assert!(!o.status.success() && text(&o.stderr).contains("is the input file"));
    // Through another name of the same file, too.
    let link = d.join("alias.tipsy");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    let o = webgrav(&["convert", &input, &s(&link)]);
    assert!(!o.status.success() && text(&o.stderr).contains("is the input file"));
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

// 4. A state beyond what f32 arithmetic can square (a file in cgs units)
// is refused with the reason before running, by every solver; a state
// that becomes non-finite stops the run with the particle and the time,
// and the last finite state is what gets written.
#[test]
fn no_silent_nan() {
    let d = dir("nan");
    let mut far = Snapshot {
        particles: Model::Plummer.generate(64, 1).unwrap(),
        ..Default::default()
    };
    far.particles.pos_mass[5].pos[0] = 1e20;
    let input = s(&d.join("cgs.tipsy"));
    snapshot::write_file(&input, &far).unwrap();
    for solver in ["tree", "direct", "hermite4"] {
        let o = webgrav(&[
            "run", "--in", &input, "--solver", solver, "--t-end", "0.125",
        ]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{solver} ran");
        assert!(
            err.contains("particle 5") && err.contains("units"),
            "{solver}: {err}"
        );
    }
    let out = s(&d.join("f.csv"));
    let o = webgrav(&["forces", "--in", &input, "--solver", "tree", "--out", &out]);
    assert!(!o.status.success() && !std::path::Path::new(&out).exists());
    // A particle of absurd mass makes the forces overflow to infinity:
    // each integrator stops with the particle and the time.
    let mut heavy = Snapshot {
        particles: Model::Plummer.generate(64, 1).unwrap(),
        ..Default::default()
    };
    heavy.particles.pos_mass[9].mass = 3e38;
    let input = s(&d.join("heavy.bonsai"));
    snapshot::write_file(&input, &heavy).unwrap();
    for solver in ["direct", "tree", "hermite4"] {
        let out = s(&d.join(format!("{solver}.bonsai")));
        let o = webgrav(&[
            "run", "--in", &input, "--solver", solver, "--t-end", "0.25", "--out", &out,
        ]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{solver} exited 0: {err}");
        assert!(err.contains("non-finite"), "{solver}: {err}");
        assert!(err.contains("last finite state"), "{solver}: {err}");
        let kept = snapshot::read_file(&out).unwrap();
        assert!(kept
            .particles
            .pos_mass
            .iter()
            .all(|p| p.pos.iter().all(|x| x.is_finite())));
    }
}

// 5. CSV is plain CSV: the header first, the time a column; what other
// tools write is read (BOM, CRLF, quoted numbers, columns in any order).
#[test]
fn csv_is_plain_and_reads_what_other_tools_write() {
    let d = dir("csv");
    let path = s(&d.join("s.csv"));
    let snap = Snapshot {
        particles: Model::Plummer.generate(20, 1).unwrap(),
        time: 2.5,
        ..Default::default()
    };
    snapshot::write_file(&path, &snap).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.starts_with("id,x,y,z,vx,vy,vz,m,t\n"), "{written}");
    assert_eq!(snapshot::read_file(&path).unwrap(), snap);
    // Python's csv.DictReader with no options (CI has python3).
    let py = Command::new("python3")
        .args([
            "-c",
            "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); \
             print(len(r), sum(float(x['m']) for x in r), r[0]['t'])",
            &path,
        ])
        .output();
    if let Ok(py) = py {
        assert!(py.status.success(), "{}", text(&py.stderr));
        let out = text(&py.stdout);
        let f: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(f[0], "20");
        assert!((f[1].parse::<f64>().unwrap() - 1.0).abs() < 1e-6, "{out}");
        assert_eq!(f[2], "2.5");
    }
    let other = "\u{feff}\"m\",\"x\",\"y\",\"z\",\"vx\",\"vy\",\"vz\"\r\n\
                 \"0.5\",\"1\",\"0\",\"0\",\"0\",\"0.5\",\"0\"\r\n\
                 0.5,-1,0,0,0,-0.5,0\r\n";
    let p = snapshot::Format::Csv
        .decode(other.as_bytes(), "o.csv")
        .unwrap();
    assert_eq!(p.particles.id, vec![0, 1]);
    assert_eq!(p.particles.pos_mass[1].pos, [-1.0, 0.0, 0.0]);
    let old = "# time=2.5\nid,x,y,z,vx,vy,vz,m\n3,1,0,0,0,0,0,1\n";
    assert_eq!(
        snapshot::Format::Csv
            .decode(old.as_bytes(), "o.csv")
            .unwrap()
            .time,
        2.5
    );
}

// 6. An N beyond the device or the host is refused before anything is
// generated (a 10^12-particle request used to abort the process).
#[test]
fn absurd_n_is_refused_at_once() {
    // Beyond the table's range (32-bit indices), refused as the option is
    // read.
    for n in ["100000000000", "1000000000000"] {
        let o = webgrav(&["run", "-n", n, "--t-end", "0"]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{n}: {err}");
        let words = format!("n = {n}: expected a whole number in [1, 2147483647]");
        assert!(err.contains(&words), "{n}: {err}");
    }
    // Within it but beyond the device: refused before generating.
    for n in ["2000000000", "2147483647"] {
        let start = std::time::Instant::now();
        let o = webgrav(&["run", "-n", n, "--t-end", "0"]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{n}: {err}");
        assert!(err.contains("exceeds this device's limit"), "{n}: {err}");
        // Opening the GPU takes a second or two on lavapipe; generating
        // 10^11 particles would take hours.
        assert!(
            start.elapsed().as_secs() < 60,
            "{n} took {:?}",
            start.elapsed()
        );
    }
    let o = webgrav(&["run", "-n", "0"]);
    assert!(text(&o.stderr).contains("n = 0: expected a whole number in [1, "));
}

// 7. No hangs and no silent short runs.
#[test]
fn schedules_that_cannot_be_kept_are_refused() {
    let o = webgrav(&[
        "run",
        "--solver",
        "hermite4",
        "-n",
        "32",
        "--t-end",
        "0.25",
        "--log-every",
        "1e-300",
    ]);
    assert!(!o.status.success() && text(&o.stderr).contains("--log-every"));
    let o = webgrav(&["run", "-n", "32", "--t-end", "0.3", "--dt", "0.2"]);
    let err = text(&o.stderr);
    assert!(
        !o.status.success() && err.contains("not a whole number of --dt"),
        "{err}"
    );
    let o = webgrav(&["run", "-n", "32", "--solver", "hermite4", "--t-end", "0.3"]);
    let err = text(&o.stderr);
    assert!(!o.status.success() && err.contains("--dt-max"), "{err}");
    let d = dir("schedule");
    let input = s(&d.join("late.csv"));
    let snap = Snapshot {
        particles: Model::Plummer.generate(32, 1).unwrap(),
        time: 1.0,
        ..Default::default()
    };
    snapshot::write_file(&input, &snap).unwrap();
    let o = webgrav(&["run", "--in", &input, "--t-end", "0.5"]);
    let err = text(&o.stderr);
    assert!(
        !o.status.success() && err.contains("before the start time"),
        "{err}"
    );
}

// 8. Overwriting keeps the mode, writes through a symbolic link, and an
// interrupted run leaves no temporary file; a closed stderr is no panic.
#[test]
fn writes_keep_mode_and_links_and_leave_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("leftovers");
    let target = d.join("real.csv");
    let snap = Snapshot {
        particles: Model::Plummer.generate(8, 1).unwrap(),
        ..Default::default()
    };
    snapshot::write_file(&s(&target), &snap).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = d.join("link.csv");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let newer = Snapshot {
        time: 1.0,
        ..snap.clone()
    };
    snapshot::write_file(&s(&link), &newer).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(snapshot::read_file(&s(&target)).unwrap().time, 1.0);
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    // SIGINT while running: exit 130 with a checkpoint beside the output,
    // nothing else left in the directory (no temporary, no end state).
    let mut child = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(["run", "-n", "2048", "--t-end", "100", "--out"])
        .arg(d.join("end.tipsy"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let mut names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["end.tipsy.ckpt", "link.csv", "real.csv"]);
    // The checkpoint continues the run.
    let ckpt = d.join("end.tipsy.ckpt");
    let bytes = std::fs::read(&ckpt).unwrap();
    let c = webgrav::run::checkpoint::Checkpoint::decode(&bytes, "end.tipsy.ckpt").unwrap();
    assert!(c.time > 0.0 && c.steps > 0, "{} {}", c.time, c.steps);
    let t_end = (c.time + 2.0 / 128.0).to_string();
    let o = webgrav(&["run", "--resume", &s(&ckpt), "--t-end", &t_end]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // A closed stderr: the error cannot be printed, but nothing panics
    // (a panic exits with 101).
    let o = Command::new("sh")
        .args([
            "-c",
            &format!(
                "{} run --in /nonexistent/in.tipsy 2>&-",
                env!("CARGO_BIN_EXE_webgrav")
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
}

// 9. The small ones.
#[test]
fn small_findings() {
    let d = dir("small");
    // A device as a snapshot: refused at once, not read without bound.
    for name in ["zero.tipsy", "zero.csv"] {
        let link = d.join(name);
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let start = std::time::Instant::now();
        assert!(snapshot::read_file(&s(&link)).is_err());
        assert!(
            start.elapsed().as_secs() < 5,
            "{name}: {:?}",
            start.elapsed()
        );
    }
    // Negative numbers reach the real check instead of clap's parser.
    let o = webgrav(&["run", "-n", "8", "--eps", "-1"]);
    assert!(text(&o.stderr).contains("eps = -1"), "{}", text(&o.stderr));
    // Benchmarks check their parameters too.
    let o = webgrav(&["bench", "direct", "-n", "64", "--eps", "nan"]);
    assert!(!o.status.success() && text(&o.stderr).contains("eps"));
    let o = webgrav(&["bench", "direct", "-n", "64", "--repeat", "0"]);
    assert!(!o.status.success());
    // No window-system noise without XDG_RUNTIME_DIR (cron, containers).
    let o = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .arg("info")
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        !text(&o.stderr).contains("XDG_RUNTIME_DIR"),
        "{}",
        text(&o.stderr)
    );
    // It states the host's limit beside the device's: bytes per particle
    // and the largest N the available memory allows.
    let per = webgrav::app::host::HOST_BYTES_PER_PARTICLE;
    let line = format!("host memory per particle, tree, direct: {per} bytes");
    let max = webgrav::app::host::host_max_particles(webgrav::run::SolverKind::Tree).unwrap();
    let stated = text(&o.stdout);
    assert!(stated.contains(&line), "{stated}");
    // Within a few percent: the available memory moves between the reads.
    let said: f64 = stated
        .lines()
        .find(|l| l.starts_with(&line))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap();
    assert!((said / max as f64 - 1.0).abs() < 0.05, "{said} vs {max}");
}

// Reruns are bit-identical, for every integrator (the red team found them
// so; this keeps them so).
#[test]
fn reruns_are_bit_identical() {
    use webgrav::run::{Run, RunParams, SolverKind};
    let ctx = common::gpu();
    let p = Model::Plummer.generate(512, 8).unwrap();
    for solver in [SolverKind::Direct, SolverKind::Tree, SolverKind::Hermite6] {
        let config = RunParams {
            solver,
            eps: 0.05,
            ..RunParams::default()
        }
        .validate()
        .unwrap();
        let once = || {
            pollster::block_on(async {
                let mut run = Run::new(&ctx, &p, 0.0, config).await.unwrap();
                run.run_to(&ctx, 0.125, |_, _| true).await.unwrap();
                run.readout(&ctx).await.unwrap().snapshot
            })
        };
        assert_eq!(once(), once(), "{solver:?}");
    }
}
