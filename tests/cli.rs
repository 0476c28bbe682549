//! The native CLI end to end, with tiny N on the headless GPU.
#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

fn webgrav(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .output()
        .expect("run webgrav");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("webgrav-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_str().unwrap().to_string()
}

#[test]
fn run_writes_a_snapshot_and_reports_a_small_energy_error() {
    let out = tmp("end.tipsy");
    let (ok, stdout, stderr) = webgrav(&[
        "run",
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

#[test]
fn forces_csv_matches_the_f64_reference() {
    let out = tmp("forces.csv");
    let (ok, _, stderr) = webgrav(&[
        "forces", "-n", "300", "--seed", "4", "--eps", "0.02", "--out", &out,
    ]);
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("id,x,y,z,m,ax,ay,az,pot"));
    let p = webgrav::state::Model::Plummer.generate(300, 4).unwrap();
    let reference = webgrav::direct::reference::forces(&p.pos_mass, 0.02);
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 300);
    for (row, r) in rows.iter().zip(&reference) {
        let amag = r.acc.iter().map(|x| x * x).sum::<f64>().sqrt();
        for k in 0..3 {
            assert!((row[5 + k] - r.acc[k]).abs() < 1e-5 * amag, "row {row:?}");
        }
        assert!((row[8] - r.pot).abs() < 1e-5 * r.pot.abs(), "row {row:?}");
    }
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
    assert!(stderr.contains("N must be at least 1"), "{stderr}");
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
