//! Particle ids and kinds through every format, series and front end: kept
//! exactly where the format (or its side file) can hold them, refused by
//! name where it cannot, never changed.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{tmp, webgrav};
use webgrav::snapshot::{self, tipsy, Format, Snapshot};
use webgrav::state::{Model, KINDS};

/// `n` particles of every kind in turn (gas, halo, disk, bulge, stars,
/// boundary), with ids that are neither the index nor small.
fn every_kind(n: usize) -> Snapshot {
    let mut particles = Model::Plummer.generate(n, 5).unwrap();
    for (k, id) in particles.id.iter_mut().enumerate() {
        *id = (1u64 << 40) + 7 * (n - k) as u64;
    }
    Snapshot {
        time: 0.25,
        types: Some((0..n).map(|k| (k % KINDS.len()) as u8).collect()),
        particles,
        ..Default::default()
    }
}

/// (id, position, kind) of every particle, sorted by id.
fn by_id(s: &Snapshot) -> Vec<(u64, [f32; 3], u8)> {
    let types = s.types.as_ref().expect("kinds");
    let mut v: Vec<_> = (0..s.particles.len())
        .map(|k| (s.particles.id[k], s.particles.pos_mass[k].pos, types[k]))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

// Every kind (gas, halo, disk, bulge, stars, boundary) and every id comes
// back from every format: Gadget-2 and CSV hold them; standard Tipsy writes
// gas, dark and star records and keeps disk, bulge and boundary (which it
// has no record for) in `NAME.webgrav_kind`, pynbody's auxiliary-array
// name; `.bonsai` keeps Bonsai's id ranges (halo from 3e18, bulge from
// 2e18, disk below) in the file and gas, stars and boundary in its side
// file. The write says which kinds the format itself lacks.
#[test]
fn every_kind_and_id_survives_every_format() {
    let snap = every_kind(600);
    let want = by_id(&snap);
    for ext in ["gadget", "csv", "tipsy", "bonsai", "hdf5"] {
        let path = tmp(&format!("all.{ext}"));
        let written = snapshot::write_file(&path, &snap).unwrap();
        let back = snapshot::read_file(&path).unwrap();
        assert_eq!(by_id(&back), want, "{ext}");
        let side = format!("{path}.webgrav_kind");
        let lacking: Vec<u8> = written.unrecorded.iter().map(|u| u.0).collect();
        match ext {
            "tipsy" => assert_eq!(lacking, [2, 3, 5]),
            "bonsai" => assert_eq!(lacking, [0, 4, 5]),
            _ => assert!(lacking.is_empty()),
        }
        assert_eq!(std::path::Path::new(&side).exists(), !lacking.is_empty());
        if !lacking.is_empty() {
            let notes = written.notes(&path).join("\n");
            assert!(
                notes.contains(&side) && notes.contains("boundary"),
                "{notes}"
            );
        }
    }
    // Standard Tipsy holds gas in gas records (what pynbody reads as gas).
    let raw = std::fs::read(tmp("all.tipsy")).unwrap();
    let nsph = i32::from_be_bytes(raw[16..20].try_into().unwrap());
    assert_eq!(nsph, 100);
    // Bonsai's ranges are in the file: its first record is a dark one with
    // a dark-matter id, a bulge particle's id lies in 2e18..3e18.
    let raw = std::fs::read(tmp("all.bonsai")).unwrap();
    let first = u64::from_le_bytes(raw[32 + 28..32 + 36].try_into().unwrap());
    assert!(first >= tipsy::BONSAI_DARK_ID, "{first}");
    let plain = Format::TipsyBonsai.decode(&raw, "all.bonsai").unwrap();
    let bulge = plain.types.unwrap().iter().filter(|&&t| t == 3).count();
    assert_eq!(bulge, 100);
}

// Bonsai tells kinds apart by id alone: an id beyond its kind's range would
// read back as another particle (3e18 + 7 as halo particle 7, a duplicate;
// u64::MAX wrapped). Such ids are refused, naming the particle, and
// nothing is written; the largest id of each range still round-trips.
#[test]
fn bonsai_refuses_ids_its_ranges_cannot_hold() {
    let path = tmp("ids.bonsai");
    let one = |id: u64, kind: Option<u8>| {
        let mut s = every_kind(6);
        s.particles.id[3] = id;
        s.types = kind.map(|t| vec![t; 6]);
        s
    };
    for (id, kind) in [
        (3_000_000_000_000_000_007, None),
        (2_000_000_000_000_000_000, Some(2)),
        (1_000_000_000_000_000_000, Some(3)),
        (u64::MAX, Some(1)),
        (u64::MAX, Some(5)),
    ] {
        let _ = std::fs::remove_file(&path);
        let e = snapshot::write_file(&path, &one(id, kind))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("particle 3") && e.contains(&id.to_string()),
            "{e}"
        );
        assert!(!std::path::Path::new(&path).exists(), "{e}");
    }
    // The CLI refuses such an output before the run starts.
    let input = tmp("big-ids.csv");
    snapshot::write_file(&input, &one(3_000_000_000_000_000_007, None)).unwrap();
    let (ok, _, stderr) = webgrav(&["run", "--in", &input, "--t-end", "1", "--out", &path]);
    assert!(!ok && stderr.contains("particle 3"), "{stderr}");
    assert!(!stderr.contains("from t = 0"), "the run started: {stderr}");
    // And so does a run resumed from a checkpoint of such particles.
    let ckpt = tmp("big-ids.ckpt");
    let line = format!(
        "run --in {input} --solver direct --dt 0.0078125 --t-end 0.265625 --checkpoint {ckpt} \
         --checkpoint-every 0.0078125"
    );
    let (ok, _, stderr) = webgrav(&line.split_whitespace().collect::<Vec<_>>());
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = webgrav(&[
        "run", "--resume", &ckpt, "--t-end", "0.28125", "--out", &path,
    ]);
    assert!(!ok && stderr.contains("particle 3"), "{stderr}");
    assert!(!stderr.contains("resumed"), "the run started: {stderr}");
    for (id, kind) in [
        (1_999_999_999_999_999_999, None),
        (999_999_999_999_999_999, Some(3)),
        (u64::MAX - tipsy::BONSAI_DARK_ID, Some(1)),
        (u64::MAX - tipsy::BONSAI_DARK_ID, Some(0)),
    ] {
        let s = one(id, kind);
        snapshot::write_file(&path, &s).unwrap();
        let back = snapshot::read_file(&path).unwrap();
        assert_eq!(back.particles.id, s.particles.id, "{id} {kind:?}");
        assert_eq!(back.types, s.types, "{id} {kind:?}");
    }
}

// A kinds side file must describe its snapshot: one left by an earlier
// write that disagrees with the file's own records is refused (not
// applied), and a write without kinds removes it.
#[test]
fn a_stale_kinds_side_file_is_refused_or_removed() {
    let path = tmp("stale.tipsy");
    let snap = every_kind(60);
    snapshot::write_file(&path, &snap).unwrap();
    // Another tool rewrites the file: all stars now.
    let stars = Snapshot {
        types: Some(vec![4; 60]),
        ..snap.clone()
    };
    snapshot::write_atomic(&path, &Format::Tipsy.encode(&stars).unwrap()).unwrap();
    let e = snapshot::read_file(&path).unwrap_err().to_string();
    assert!(
        e.contains("stale.tipsy.webgrav_kind") && e.contains("another snapshot"),
        "{e}"
    );
    let plain = Snapshot {
        types: None,
        ..snap
    };
    snapshot::write_file(&path, &plain).unwrap();
    assert!(!std::path::Path::new(&format!("{path}.webgrav_kind")).exists());
    assert_eq!(snapshot::read_file(&path).unwrap().types, None);
}

// A Hermite state written in f64 to CSV keeps the particles' kinds (a
// `type` column), as every other CSV does.
#[test]
fn hermite_csv_keeps_kinds() {
    let snap = every_kind(12);
    let state: Vec<(f64, [f64; 3], [f64; 3])> = (0..12)
        .map(|k| (0.5, [k as f64 / 3.0, 0.1, 0.2], [0.0, 1.0 / 7.0, 0.0]))
        .collect();
    let path = tmp("hermite.csv");
    webgrav::run::write_state(&path, &snap, Some(&state)).unwrap();
    let back = snapshot::read_file(&path).unwrap();
    assert_eq!(back.types, snap.types);
    assert_eq!(back.particles.id, snap.particles.id);
    // The f64 digits, not f32's.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("{}", 1.0f64 / 3.0)), "{text}");
}

/// A CSV input of `n` particles of every kind with large ids.
fn typed_input(name: &str, n: usize) -> (String, Snapshot) {
    let path = tmp(name);
    let mut snap = every_kind(n);
    snap.time = 0.0;
    snapshot::write_file(&path, &snap).unwrap();
    (path, snap)
}

// A Hermite run keeps the kinds of its input in its CSV output (before,
// its f64 CSV had no `type` column).
#[test]
fn hermite_runs_write_kinds_to_csv() {
    let (input, snap) = typed_input("hermite-in.csv", 48);
    let out = tmp("hermite-out.csv");
    let (ok, _, stderr) = webgrav(&[
        "run", "--in", &input, "--solver", "hermite4", "--eps", "0.1", "--t-end", "0.125", "--out",
        &out,
    ]);
    assert!(ok, "{stderr}");
    let back = snapshot::read_file(&out).unwrap();
    assert_eq!(back.types, snap.types);
    assert_eq!(back.particles.id, snap.particles.id);
}

// With --bonsai-names, a schedule whose snapshots are closer than the
// names' 4 decimals is refused before the run (it named 5 snapshots with 3
// files); a tipsy series so named keeps ids (.iord) and kinds
// (.webgrav_kind) beside each file, and its index lists every file.
#[test]
fn bonsai_names_are_unique_and_keep_ids_and_kinds() {
    let (input, snap) = typed_input("series-in.csv", 60);
    let dir = tmp("bonsai-names");
    // A series of direct-sum steps of `step`, one snapshot a step.
    let series = |step: &str, t_end: &str, format: &str| {
        webgrav(&[
            "run",
            "--in",
            &input,
            "--solver",
            "direct",
            "--dt",
            step,
            "--t-end",
            t_end,
            "--snap-every",
            step,
            "--snap-dir",
            &dir,
            "--snap-format",
            format,
            "--bonsai-names",
        ])
    };
    let (ok, _, stderr) = series("0.00006103515625", "0.000244140625", "bonsai");
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("--bonsai-names") && stderr.contains("1e-4"),
        "{stderr}"
    );
    assert!(!std::path::Path::new(&format!("{dir}/index.json")).exists());
    let (ok, _, stderr) = series("0.0078125", "0.015625", "tipsy");
    assert!(ok, "{stderr}");
    let files = webgrav::app::series::read_index(&dir).unwrap();
    assert_eq!(files.len(), 3);
    for (file, _) in &files {
        assert!(
            std::path::Path::new(&format!("{file}.iord")).is_file(),
            "{file}"
        );
        let back = snapshot::read_file(file).unwrap();
        assert_eq!(
            by_id(&back).iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
            by_id(&snap).iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(),
            "{file}"
        );
    }
}

// A profile's bins are bounded: `--bins 100000000` (a 9.5 GB CSV) is
// refused with the limit before the snapshot is read.
#[test]
fn analyze_bounds_the_profile_bins() {
    let (input, _) = typed_input("bins.csv", 24);
    let csv = tmp("profile.csv");
    let (ok, _, stderr) = webgrav(&[
        "analyze",
        &input,
        "--profile-csv",
        &csv,
        "--bins",
        "100000000",
    ]);
    assert!(!ok && stderr.contains("10000"), "{stderr}");
    assert!(!std::path::Path::new(&csv).exists());
    let (ok, _, stderr) = webgrav(&["analyze", &input, "--profile-csv", &csv, "--bins", "10000"]);
    assert!(ok, "{stderr}");
}

// The page exports its run with the kinds of its particles (a galaxy's
// components, a file's kinds), which a read-out does not carry: the
// component tags it draws with give them back, as the model's files have
// them; mass shells are no kinds.
#[test]
fn the_pages_components_are_the_files_kinds() {
    use webgrav::render::components::ComponentTags;
    for model in [Model::DiskGalaxy, Model::GalaxyMerger] {
        let t = model.generate_tagged(2000, 3).unwrap();
        assert_eq!(ComponentTags::of_model(&t).kinds(), t.types(), "{model:?}");
    }
    let snap = every_kind(30);
    let tags = ComponentTags::of_kinds(snap.types.as_deref(), &snap.particles.pos_mass);
    assert_eq!(tags.kinds(), snap.types);
    let plummer = Model::Plummer.generate_tagged(100, 1).unwrap();
    assert_eq!(ComponentTags::of_model(&plummer).kinds(), None);
}

// The page's player takes a Tipsy file's side files dropped with it: the
// frame has its ids and kinds (before, the side files made the series
// unreadable), and a side file of another snapshot is refused.
#[test]
fn a_series_takes_tipsy_side_files() {
    use webgrav::app::series::Series;
    let snap = every_kind(60);
    let path = tmp("frame.tipsy");
    snapshot::write_file(&path, &snap).unwrap();
    let file = |suffix: &str| {
        let name = format!("frame.tipsy{suffix}");
        (name, std::fs::read(format!("{path}{suffix}")).unwrap())
    };
    let files = vec![file(""), file(".iord"), file(".webgrav_kind")];
    let series = Series::open(files.clone()).unwrap();
    assert_eq!(series.frames().len(), 1);
    assert_eq!(by_id(&series.snapshot(0).unwrap()), by_id(&snap));
    let mut other = files;
    other[2].1 = snapshot::iord::encode(&[4u8; 60]);
    assert!(Series::open(other).is_err());
}
