//! The native CLI end to end, with tiny N on the headless GPU.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{tmp, webgrav};
use webgrav::gpu::layout::PosMass;

#[test]
fn run_writes_a_snapshot_and_reports_a_small_energy_error() {
    let out = tmp("end.tipsy");
    let (ok, stdout, stderr) = webgrav(&[
        "run",
        "--solver",
        "direct",
        "--model",
        "plummer",
        "-n",
        "512",
        "--seed",
        "2",
        "--eps",
        "0.05",
        "--dt",
        "0.0078125",
        "--t-end",
        "0.125",
        "--out",
        &out,
    ]);
    assert!(ok, "{stderr}");
    // The run log: one JSON line at the end (--log-every 0).
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let log: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON");
    let err = log["rel_energy_error"].as_f64().unwrap();
    // 16 leapfrog steps of 1/128 at eps 0.05: O(1e-6); 1e-4 would mean a bug.
    assert!(err < 1e-4, "{log}");
    assert_eq!(log["steps"], 16);
    assert_eq!(log["t"], 0.125);
    assert!(stderr.contains("relative energy error"), "{stderr}");
    let snap = webgrav::snapshot::read_file(&out).unwrap();
    assert_eq!(snap.particles.len(), 512);
    assert_eq!(snap.time, 0.125);
}

// A run that writes no state (no --out, no snapshot at that time) starts
// from a model left on the GPU and measures its log lines there: the same
// lines as the run that reads every state back (--out), the energies to
// f32's rounding of each particle's terms (~5e-10 here). Its start, and a
// run that ends where it starts, say so in the same words.
#[test]
fn runs_that_write_no_state_measure_on_the_gpu_what_a_read_out_measures() {
    let out = tmp("light.bonsai");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--model",
            "plummer",
            "-n",
            "6000",
            "--seed",
            "3",
            "--dt",
            "0.015625",
            "--t-end",
            "0.125",
            "--log-every",
            "0.0625",
        ];
        args.extend(extra);
        let (ok, stdout, stderr) = webgrav(&args);
        assert!(ok, "{stderr}");
        assert!(
            stderr.contains("generated plummer with N = 6000 on the GPU"),
            "{stderr}"
        );
        let lines: Vec<serde_json::Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
        assert_eq!(lines.len(), 2, "{stdout}");
        lines
    };
    let (light, read) = (run(&[]), run(&["--out", &out]));
    for (a, b) in light.iter().zip(&read) {
        for key in [
            "t",
            "steps",
            "pp_per_particle",
            "pc_per_particle",
            "potential_sum",
        ] {
            assert_eq!(a[key], b[key], "{key}: {a} against {b}");
        }
        let f = |v: &serde_json::Value, key: &str| v[key].as_f64().unwrap();
        for key in ["energy", "kinetic", "potential"] {
            let (x, y) = (f(a, key), f(b, key));
            assert!((x - y).abs() < 1e-8 * y.abs(), "{key}: {x} against {y}");
        }
        let (x, y) = (f(a, "rel_energy_error"), f(b, "rel_energy_error"));
        assert!(y > 0.0 && (x - y).abs() < 1e-8, "|dE/E0| {x} against {y}");
    }
    assert_eq!(
        webgrav::snapshot::read_file(&out).unwrap().particles.len(),
        6000
    );
    let (ok, stdout, stderr) = webgrav(&[
        "run", "--model", "plummer", "-n", "6000", "--seed", "3", "--t-end", "0",
    ]);
    assert!(ok, "{stderr}");
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).expect("JSON");
    assert_eq!(line["rel_energy_error"], 0.0);
    let e = line["energy"].as_f64().unwrap();
    assert!(
        (e - read[0]["energy"].as_f64().unwrap()).abs() < 1e-3,
        "{line}"
    );
    assert!(stderr.contains("relative energy error"), "{stderr}");
}

#[test]
fn forces_csv_matches_the_f64_reference() {
    let out = tmp("forces.csv");
    let (ok, _, stderr) = webgrav(&[
        "forces", "--solver", "direct", "-n", "300", "--seed", "4", "--eps", "0.02", "--out", &out,
    ]);
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("id,x,y,z,m,ax,ay,az,pot"));
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 300);
    // The model the CLI generated (on the GPU) is the CPU's to f32
    // rounding; the reference sums the positions the file gives (f32
    // printed exactly).
    let p = webgrav::state::Model::Plummer.generate(300, 4).unwrap();
    let pos_mass: Vec<PosMass> = rows
        .iter()
        .map(|r| PosMass {
            pos: [r[1] as f32, r[2] as f32, r[3] as f32],
            mass: r[4] as f32,
        })
        .collect();
    for (a, b) in pos_mass.iter().zip(&p.pos_mass) {
        let d = (0..3)
            .map(|k| (a.pos[k] - b.pos[k]).abs())
            .fold(0.0, f32::max);
        assert!(d < 1e-3 * (b.pos.iter().map(|x| x * x).sum::<f32>().sqrt() + 1e-3));
    }
    let reference = webgrav::direct::reference::forces(&pos_mass, 0.02);
    for (row, r) in rows.iter().zip(&reference) {
        let amag = r.acc.iter().map(|x| x * x).sum::<f64>().sqrt();
        for k in 0..3 {
            assert!((row[5 + k] - r.acc[k]).abs() < 1e-5 * amag, "row {row:?}");
        }
        assert!((row[8] - r.pot).abs() < 1e-5 * r.pot.abs(), "row {row:?}");
    }
}

#[test]
fn forces_compare_ds_measures_every_particle_against_one_reference() {
    // A file of "another code's" accelerations: the f64 sum, with particle
    // 7's acceleration 1% too large. Compared with the GPU double-single
    // reference, its median error is f32 rounding and its max that 1%.
    let n = 1200;
    let p = webgrav::state::Model::Plummer.generate(n, 9).unwrap();
    let exact = webgrav::direct::reference::forces(&p.pos_mass, 0.0);
    let mut csv = String::from("id,ax,ay,az,pot\n");
    for (k, f) in exact.iter().enumerate() {
        let s = if k == 7 { 1.01 } else { 1.0 };
        let a = f.acc.map(|x| x * s);
        csv += &format!("{},{:e},{:e},{:e},{:e}\n", p.id[k], a[0], a[1], a[2], f.pot);
    }
    let file = tmp("other_acc.csv");
    std::fs::write(&file, csv).unwrap();
    let (ok, stdout, stderr) = webgrav(&[
        "forces",
        "-n",
        "1200",
        "--seed",
        "9",
        "--eps",
        "0",
        "--solver",
        "tree",
        "--compare",
        "ds",
        "--thetas",
        "0.3,0.8",
        "--sample",
        "64",
        "--against",
        &file,
    ]);
    assert!(ok, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let acc = |v: &serde_json::Value, q: &str| v["acc_error"][q].as_f64().unwrap();
    for v in &lines {
        assert_eq!(v["compare"], "direct-ds-gpu");
        assert_eq!(v["compared"], 1200);
        // The DS sum is the f64 sum to f32 rounding of the pair forces.
        let check = v["reference_check"]["acc_max"].as_f64().unwrap();
        assert!(check < 1e-5, "{v}");
    }
    let (small, large, file_line) = (&lines[0], &lines[1], &lines[2]);
    assert_eq!(small["theta"].as_f64().unwrap() as f32, 0.3);
    // A smaller opening angle: more interactions, smaller errors (Bonsai
    // 2012 fig. 4.8: median ~1e-5 at 0.3 and ~5e-4 at 0.8 at eps 0).
    assert!(small["pp_per_particle"].as_f64() > large["pp_per_particle"].as_f64());
    assert!(
        acc(small, "median") < acc(large, "median") / 4.0,
        "{stdout}"
    );
    assert!(
        acc(small, "median") < 1e-4 && acc(large, "median") < 3e-3,
        "{stdout}"
    );
    assert!(acc(small, "median") > 1e-7, "a tree is not exact: {stdout}");
    assert_eq!(file_line["solver"], "file");
    assert!(acc(file_line, "median") < 1e-6, "{file_line}");
    let max = acc(file_line, "max");
    assert!((max - 0.01).abs() < 1e-4, "{file_line}");
}

#[test]
fn bench_prints_a_json_line() {
    let (ok, stdout, stderr) = webgrav(&["bench", "direct", "-n", "1024", "--repeat", "2"]);
    assert!(ok, "{stderr}");
    let line = stdout.lines().next().expect("one line");
    let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
    assert_eq!(v["n"], 1024);
    assert!(v["interactions_per_s"].as_f64().unwrap() > 0.0);
    assert!(["gpu-timestamp", "wall"].contains(&v["timing"].as_str().unwrap()));
}

// `bench hermite4 --no-f64` runs `ds` as a page must (WebGPU has no f64):
// double-single two-sums, where the adapter's f64 sums are the default.
#[test]
fn bench_no_f64_runs_ds_as_a_page_does() {
    let ds_sums = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "hermite4",
            "-n",
            "256",
            "--repeat",
            "1",
            "--precision",
            "ds",
        ];
        args.extend(extra);
        let (ok, stdout, stderr) = webgrav(&args);
        assert!(ok, "{stderr}");
        let v: serde_json::Value =
            serde_json::from_str(stdout.lines().next().expect("one line")).expect("JSON");
        v["ds_sums"].as_str().expect("ds_sums").to_string()
    };
    assert_eq!(ds_sums(&["--no-f64"]), "double-single");
    let info = webgrav(&["info"]).1;
    if info.contains("shader f64 (--precision dp): true") {
        assert_eq!(ds_sums(&[]), "f64");
    }
}

// `bench tree`: per-phase times, the wall time of a step waited for alone
// and of steps run as a run runs them, and interactions.
#[test]
fn bench_tree_reports_phases_and_both_wall_times() {
    let (ok, stdout, stderr) = webgrav(&["bench", "tree", "-n", "2048", "--repeat", "1"]);
    assert!(ok, "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(stdout.lines().next().expect("one line")).expect("JSON");
    assert!(v["phase_ms"]["walk"].as_f64().unwrap() > 0.0, "{v}");
    for key in ["step_wall_ms", "steady_step_wall_ms", "pp_per_particle"] {
        let x = v[key].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{key}: {v}");
    }
    assert!(v["steady_host_ms"].as_f64().unwrap().is_finite(), "{v}");
    // 64 steady steps, or as many timed steps as fit in 5 s (at least 4).
    let steps = v["steady_steps"].as_u64().unwrap();
    let step = v["step_wall_ms"].as_f64().unwrap();
    assert_eq!(steps, (5000.0 / step).clamp(4.0, 64.0) as u64, "{v}");
    if v["timing"] == "gpu-timestamp" {
        // The GPU's busy time in the steady steps: some, and no more than
        // their wall time.
        let gpu = v["steady_step_gpu_ms"].as_f64().unwrap();
        let wall = v["steady_step_wall_ms"].as_f64().unwrap();
        assert!(gpu > 0.0 && gpu <= wall, "{v}");
        assert!(v["steady_host_ms"].as_f64().unwrap() >= 0.0, "{v}");
    }
}

// `bench suite`: the page's set (the browser prints the same keys; the
// e2e test compares them), each line saying where it ran.
#[test]
fn bench_suite_prints_the_pages_set() {
    let (ok, stdout, stderr) = webgrav(&["bench", "suite", "-n", "256", "--repeat", "1"]);
    assert!(ok, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let kinds: Vec<_> = lines.iter().map(|v| v["bench"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["direct", "tree", "hermite4", "hermite6"]);
    let ns: Vec<_> = lines.iter().map(|v| v["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, [256, 1024, 256, 256]);
    for v in &lines {
        assert_eq!(v["host"], "native", "{v}");
        for key in [
            "adapter",
            "backend",
            "device_type",
            "host_detail",
            "webgrav",
            "timing",
        ] {
            assert!(v[key].is_string(), "{key}: {v}");
        }
        let ips = v["interactions_per_s"].as_f64().unwrap();
        assert!(ips.is_finite() && ips > 0.0, "{v}");
    }
    assert_eq!(lines[2]["precision"], "ds");
    assert!(lines[1]["phase_ms"]["walk"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_inputs_fail_with_clear_messages() {
    let bad = tmp("bad.tipsy");
    std::fs::write(&bad, [1u8, 2, 3]).unwrap();
    let (ok, _, stderr) = webgrav(&["run", "--in", &bad, "--t-end", "0.01"]);
    assert!(!ok);
    assert!(stderr.contains("truncated"), "{stderr}");
    let (ok, _, stderr) = webgrav(&["run", "-n", "64", "--out", "x.dat"]);
    assert!(!ok);
    assert!(
        stderr.contains("cannot tell the snapshot format"),
        "{stderr}"
    );
    let (ok, _, stderr) = webgrav(&["run", "-n", "64", "--dt=-1"]);
    assert!(!ok);
    assert!(
        stderr.contains("dt = -1: expected a number > 0"),
        "{stderr}"
    );
    // The settings table's ranges hold for the CLI too.
    let (ok, _, stderr) = webgrav(&["run", "-n", "64", "--solver", "tree", "--theta", "1.5"]);
    assert!(!ok);
    assert!(stderr.contains("theta = 1.5"), "{stderr}");
    let (ok, _, stderr) = webgrav(&["run", "-n", "0"]);
    assert!(!ok);
    assert!(
        stderr.contains("n = 0: expected a whole number in [1, "),
        "{stderr}"
    );
}

#[test]
fn convert_round_trips_through_csv() {
    let a = tmp("a.bonsai");
    let b = tmp("b.csv");
    let c = tmp("c.bonsai");
    let snap = webgrav::snapshot::Snapshot {
        particles: webgrav::state::Model::Plummer.generate(100, 9).unwrap(),
        time: 1.5,
        ..Default::default()
    };
    webgrav::snapshot::write_file(&a, &snap).unwrap();
    assert!(webgrav(&["convert", &a, &b]).0);
    assert!(webgrav(&["convert", &b, &c]).0);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
}

#[test]
fn tree_runs_write_particles_in_input_order() {
    // A tree run writes its particles in input order (the tree sorts them
    // on the GPU): the masses and ids of a snapshot with ids read
    // back in the order they went in.
    let input = tmp("in.bonsai");
    let mut start = webgrav::snapshot::Snapshot {
        particles: webgrav::state::Model::Plummer.generate(64, 3).unwrap(),
        ..Default::default()
    };
    start.particles.id = (0..64).map(|k| 1000 + 7 * k).collect();
    for (k, p) in start.particles.pos_mass.iter_mut().enumerate() {
        p.mass = (1 + k) as f32 / 2080.0;
    }
    webgrav::snapshot::write_file(&input, &start).unwrap();
    let end = tmp("tree.bonsai");
    let (ok, _, stderr) = webgrav(&[
        "run", "--in", &input, "--solver", "tree", "--t-end", "0.0625", "--out", &end,
    ]);
    assert!(ok, "{stderr}");
    let snap = webgrav::snapshot::read_file(&end).unwrap();
    assert_eq!(snap.particles.id, start.particles.id);
    let masses = |s: &webgrav::snapshot::Snapshot| {
        s.particles
            .pos_mass
            .iter()
            .map(|p| p.mass)
            .collect::<Vec<_>>()
    };
    assert_eq!(masses(&snap), masses(&start));
}

// A production run: the log (stdout and file, same lines), the snapshot
// series with its index, a checkpoint that resumes.
#[test]
fn run_writes_a_series_a_log_and_checkpoints() {
    let dir = std::env::temp_dir().join(format!("webgrav-series-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (ok, stdout, stderr) = webgrav(&[
        "run",
        "--solver",
        "direct",
        "-n",
        "256",
        "--eps",
        "0.05",
        "--dt",
        "0.0078125",
        "--t-end",
        "0.25",
        "--log-every",
        "0.0625",
        "--log",
        &p("log.jsonl"),
        "--snap-every",
        "0.125",
        "--snap-dir",
        &p("series"),
        "--snap-format",
        "csv",
        "--checkpoint",
        &p("run.ckpt"),
        "--checkpoint-every",
        "0.125",
        "--out",
        &p("end.csv"),
    ]);
    assert!(ok, "{stderr}");
    let log = std::fs::read_to_string(p("log.jsonl")).unwrap();
    assert_eq!(log, stdout);
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for (k, l) in lines.iter().enumerate() {
        assert_eq!(l["t"], 0.0625 * (k + 1) as f64);
        assert_eq!(l["steps"], 8 * (k + 1));
        for key in [
            "energy",
            "kinetic",
            "potential",
            "rel_energy_error_max",
            "virial_ratio",
            "momentum",
            "angular_momentum",
            "wall_s",
        ] {
            assert!(l[key].is_number(), "{key} missing in {l}");
        }
        // dE_max never falls and bounds the current error.
        assert!(l["rel_energy_error_max"].as_f64() >= l["rel_energy_error"].as_f64());
    }
    let end = webgrav::snapshot::read_file(&p("end.csv")).unwrap();
    assert_eq!(end.time, 0.25);
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("series/index.json")).unwrap()).unwrap();
    let snaps = index["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), 3);
    for (k, s) in snaps.iter().enumerate() {
        let file = dir.join("series").join(s["file"].as_str().unwrap());
        let snap = webgrav::snapshot::read_file(file.to_str().unwrap()).unwrap();
        assert_eq!(snap.time, s["time"].as_f64().unwrap());
        assert_eq!(snap.time, 0.125 * k as f64);
        assert_eq!((snap.particles.len(), s["n"].as_u64()), (256, Some(256)));
    }
    // The last snapshot of the series is the end state.
    let last = dir.join("series").join(snaps[2]["file"].as_str().unwrap());
    assert_eq!(
        webgrav::snapshot::read_file(last.to_str().unwrap())
            .unwrap()
            .particles,
        end.particles
    );
    // The checkpoint of t = 0.25 continues to 0.375.
    let (ok, stdout, stderr) = webgrav(&["run", "--resume", &p("run.ckpt"), "--t-end", "0.375"]);
    assert!(ok, "{stderr}");
    let l: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (l["t"].as_f64(), l["steps"].as_u64()),
        (Some(0.375), Some(48))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// Times are the decimals asked for: steps of 0.1 reach 0.5 and 1 exactly,
// not the f32 step's 1.0000000149011612.
#[test]
fn times_are_exact_decimals() {
    let (ok, stdout, stderr) = webgrav(&[
        "run",
        "--solver",
        "direct",
        "-n",
        "64",
        "--eps",
        "0.05",
        "--dt",
        "0.1",
        "--t-end",
        "1",
        "--log-every",
        "0.5",
    ]);
    assert!(ok, "{stderr}");
    let t: Vec<f64> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["t"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(t, [0.5, 1.0]);
}

// `analyze` on a series written by `run --snap-every`, and on one of its
// snapshots with its profiles as CSV.
#[test]
fn analyze_a_series_written_by_run() {
    let series = tmp("analyze-series");
    let _ = std::fs::remove_dir_all(&series);
    let mut args: Vec<&str> =
        "run -n 256 --eps 0.05 --dt 0.0078125 --t-end 0.5 --snap-every 0.125 --snap-format csv"
            .split(' ')
            .collect();
    args.extend(["--snap-dir", &series]);
    let (ok, _, stderr) = webgrav(&args);
    assert!(ok, "{stderr}");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{series}/index.json")).unwrap())
            .unwrap();
    let snapshots = index["snapshots"].as_array().unwrap();
    let (ok, stdout, stderr) = webgrav(&["analyze", "--series", &series, "--bh", "0", "1"]);
    assert!(ok, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), snapshots.len());
    for (k, (l, s)) in lines.iter().zip(snapshots).enumerate() {
        assert_eq!(l["time"], s["time"]);
        assert_eq!(l["n"], 256);
        // A Plummer sphere of N-body units: half-mass radius ≈ 0.77; 256
        // particles and a short run leave it within 25 %.
        let r_half = l["half_mass_radius"].as_f64().unwrap();
        assert!((r_half / 0.77 - 1.0).abs() < 0.25, "{l}");
        let radii = l["lagrangian_radii"].as_object().unwrap();
        assert_eq!(radii.len(), 5);
        assert_eq!(radii["0.5"].as_f64(), Some(r_half));
        // A round cluster: A2 ~ 1/√(N/2) within the half-mass radius.
        assert!(l["a2"].as_f64().unwrap() < 0.3, "{l}");
        assert!(l["bh_separation"].as_f64().unwrap() > 0.0, "{l}");
        assert_eq!(l["pattern_speed"].is_number(), k > 0, "{l}");
    }
    // One snapshot with its profiles as CSV.
    let first = format!("{series}/{}", snapshots[0]["file"].as_str().unwrap());
    let (ok, stdout, stderr) = webgrav(&[
        "analyze",
        &first,
        "--profile-csv",
        &tmp("sphere.csv"),
        "--disk-csv",
        &tmp("disk.csv"),
        "--bins",
        "8",
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 1);
    // Equal masses: no black holes to report.
    assert!(!stdout.contains("bh_separation"), "{stdout}");
    for (file, header) in [
        ("sphere.csv", "component,r_in"),
        ("disk.csv", "component,r_in"),
    ] {
        let table = std::fs::read_to_string(tmp(file)).unwrap();
        assert!(table.starts_with(header), "{table}");
        assert_eq!(table.lines().count(), 9, "{table}");
    }
    // A component the file does not tag is refused with a message.
    let (ok, _, stderr) = webgrav(&["analyze", &first, "--component", "disk"]);
    assert!(!ok);
    assert!(stderr.contains("no particle types"), "{stderr}");
    // Components by type name or Gadget-2 number, each on its own line.
    let mut snap = webgrav::snapshot::read_file(&first).unwrap();
    snap.types = Some((0..256).map(|i| 1 + (i % 2) as u8).collect());
    let typed = tmp("typed.gadget");
    webgrav::snapshot::write_file(&typed, &snap).unwrap();
    let (ok, stdout, stderr) =
        webgrav(&["analyze", &typed, "--component", "halo", "--component", "2"]);
    assert!(ok, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for (l, name) in lines.iter().zip(["halo", "disk"]) {
        assert_eq!(
            (l["component"].as_str(), l["n"].as_u64()),
            (Some(name), Some(128))
        );
    }
}

// A generated galaxy's components reach its files, so the analysis can
// split them: halo, disk and bulge of a disk galaxy written as .bonsai.
#[test]
fn generated_components_reach_files_and_the_analysis() {
    let out = tmp("galaxy.bonsai");
    let (ok, _, stderr) = webgrav(&[
        "run",
        "--model",
        "disk-galaxy",
        "-n",
        "3000",
        "--t-end",
        "0",
        "--out",
        &out,
    ]);
    assert!(ok, "{stderr}");
    let tagged = webgrav::state::Model::DiskGalaxy
        .generate_tagged(3000, 1)
        .unwrap();
    let types = tagged.types().unwrap();
    let (ok, stdout, stderr) = webgrav(&[
        "analyze",
        &out,
        "--component",
        "halo",
        "--component",
        "disk",
        "--component",
        "bulge",
    ]);
    assert!(ok, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for (line, kind) in lines.iter().zip([1u8, 2, 3]) {
        let n = types.iter().filter(|&&t| t == kind).count() as u64;
        assert_eq!(line["n"].as_u64(), Some(n), "{line}");
    }
}

// Levels no particle takes cost idle sub-steps (BENCHMARKS.md "The merger
// in 33 s"): a block-step run says so, naming the depth its particles
// took, and says nothing when the depth asked for is used.
#[test]
fn block_steps_name_levels_no_particle_took() {
    let run = |levels: &str| {
        let (ok, stdout, stderr) = webgrav(&[
            "run",
            "--model",
            "plummer",
            "-n",
            "512",
            "--solver",
            "tree",
            "--eps",
            "0.01",
            "--dt",
            "0.0625",
            "--timesteps",
            "block",
            "--eta",
            "0.02",
            "--levels",
            levels,
            "--t-end",
            "0.0625",
        ]);
        assert!(ok, "{stderr}");
        let log: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        let per_level: Vec<u64> =
            serde_json::from_value(log["particles_per_level"].clone()).unwrap();
        (per_level, stderr)
    };
    let (per_level, stderr) = run("6");
    let deepest = per_level.iter().rposition(|&n| n > 0).unwrap();
    assert!(deepest < 6, "{per_level:?}: the test needs an unused level");
    let hint = format!(
        "the deepest level taken at the read-outs was {deepest} (dt/2^{deepest}), and --levels 6"
    );
    assert!(stderr.contains(&hint), "{stderr}");
    let (per_level, stderr) = run(&deepest.to_string());
    assert_eq!(
        per_level.iter().rposition(|&n| n > 0),
        Some(deepest),
        "{per_level:?}"
    );
    assert!(!stderr.contains("the deepest level taken"), "{stderr}");
}

// The galaxy-crash model's options come from its rows of the table: the
// CLI generates the model the library does with those parameters, and
// refuses a value out of a row's range in the row's words.
#[test]
fn galaxy_crash_takes_its_model_options() {
    // CSV keeps the model's order (Tipsy groups dark matter first).
    let out = tmp("crash.csv");
    let (ok, _, stderr) = webgrav(&[
        "run",
        "--model",
        "galaxy-crash",
        "-n",
        "2000",
        "--seed",
        "3",
        "--ratio",
        "2",
        "--rperi",
        "15",
        "--incl1",
        "30",
        "--incl2",
        "150",
        "--mhalo",
        "5",
        "--q",
        "1.5",
        "--t-end",
        "0",
        "--out",
        &out,
    ]);
    assert!(ok, "{stderr}");
    let params = webgrav::state::ModelParams {
        toomre_q: 1.5,
        mass_ratio: 2.0,
        pericenter: 15.0,
        inclination1: 30.0,
        inclination2: 150.0,
        halo_mass: 5.0,
        ..Default::default()
    };
    // The CLI samples the model on its GPU: the same adapter gives the
    // same bits.
    let model = pollster::block_on(webgrav::state::Model::GalaxyCrash.generate_on(
        &common::gpu(),
        2000,
        3,
        &params,
    ))
    .unwrap();
    let snap = webgrav::snapshot::read_file(&out).unwrap();
    let (a, b) = (&snap.particles, &model.particles);
    assert_eq!(a.len(), b.len());
    let first = (0..a.len()).find(|&k| a.pos_mass[k] != b.pos_mass[k] || a.vel[k] != b.vel[k]);
    if let Some(k) = first {
        panic!(
            "particle {k}: {:?} {:?}, model {:?} {:?}",
            a.pos_mass[k], a.vel[k], b.pos_mass[k], b.vel[k]
        );
    }
    assert_eq!(snap.types, model.types());
    for (option, value, words) in [
        (
            "--incl1",
            "200",
            "incl1 = 200: expected a number in [0, 180]",
        ),
        (
            "--incl2",
            "-10",
            "incl2 = -10: expected a number in [0, 180]",
        ),
        ("--mhalo", "31", "mhalo = 31: expected a number in [0, 30]"),
    ] {
        let (ok, _, stderr) = webgrav(&[
            "run",
            "--model",
            "galaxy-crash",
            "-n",
            "100",
            option,
            value,
            "--t-end",
            "0",
        ]);
        assert!(!ok && stderr.contains(words), "{option} {value}: {stderr}");
    }
}
