//! HDF5 snapshots in GADGET-4's and SWIFT's layouts: what a run carries
//! (64-bit ids, kinds as particle types, masses, positions, velocities,
//! time, potentials) survives a round trip exactly; the layout and the
//! format are told by content, not by name; malformed files are refused
//! with the dataset named; `webgrav convert` goes to and from the other
//! formats.
#![cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]

mod common;

use common::{tmp, webgrav};
use hdf5_metno::File;
use webgrav::snapshot::{self, hdf5::Layout, Format, Snapshot};
use webgrav::state::{Model, KINDS};

/// Opens a file without the library's lock, as webgrav does (the CLI
/// processes these tests start would inherit a lock held meanwhile).
fn h5(path: &str, mode: hdf5_metno::OpenMode) -> File {
    File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open_as(path, mode)
        .unwrap()
}

const LAYOUTS: [Layout; 2] = [Layout::Gadget4, Layout::Swift];

/// `n` particles of every kind in turn, ids near 2^64 − 1 (beyond i64),
/// potentials, a time that is not a round number.
fn every_kind(n: usize) -> Snapshot {
    let mut particles = Model::Plummer.generate(n, 3).unwrap();
    for (k, id) in particles.id.iter_mut().enumerate() {
        *id = u64::MAX - 3 * k as u64;
    }
    for (k, p) in particles.pos_mass.iter_mut().enumerate() {
        p.mass *= 1.0 + (k % 7) as f32 / 3.0;
    }
    Snapshot {
        time: 1.0 / 3.0,
        types: Some((0..n).map(|k| (k % KINDS.len()) as u8).collect()),
        potential: Some((0..n).map(|k| -1.0 - k as f32 / 7.0).collect()),
        particles,
        ..Default::default()
    }
}

/// Every value of every particle, as bits, sorted by id.
type Row = (u64, u8, [u32; 7], u32);
fn by_id(s: &Snapshot) -> Vec<Row> {
    let p = &s.particles;
    let mut v: Vec<Row> = (0..p.len())
        .map(|k| {
            let (x, u) = (p.pos_mass[k], p.vel[k].vel);
            (
                p.id[k],
                s.types.as_ref().expect("kinds")[k],
                [x.pos[0], x.pos[1], x.pos[2], x.mass, u[0], u[1], u[2]].map(f32::to_bits),
                s.potential.as_ref().expect("potentials")[k].to_bits(),
            )
        })
        .collect();
    v.sort_by_key(|r| r.0);
    v
}

fn err(path: &str) -> String {
    snapshot::read_file(path).unwrap_err().to_string()
}

#[test]
fn both_layouts_keep_every_value() {
    let snap = every_kind(600);
    for layout in LAYOUTS {
        let path = tmp(&format!("every-{}.hdf5", layout.name()));
        snapshot::write_file_as(&path, Format::Hdf5(layout), &snap).unwrap();
        let back = snapshot::read_file(&path).unwrap();
        assert_eq!(back.time, snap.time, "{layout:?}");
        assert_eq!(by_id(&back), by_id(&snap), "{layout:?}");
        // The layout is the one asked for, as the codes' readers see it.
        let f = h5(&path, hdf5_metno::OpenMode::Read);
        assert_eq!(f.group("Units").is_ok(), layout == Layout::Swift);
        assert_eq!(f.group("Cosmology").is_ok(), layout == Layout::Swift);
        let phi = match layout {
            Layout::Gadget4 => "PartType3/Potential",
            Layout::Swift => "PartType3/Potentials",
        };
        assert_eq!(f.dataset(phi).unwrap().shape(), [100]);
        let ids: Vec<u64> = f
            .dataset("PartType0/ParticleIDs")
            .unwrap()
            .read_raw()
            .unwrap();
        assert_eq!(ids[0], u64::MAX);
        let counts: Vec<u64> = f
            .group("Header")
            .unwrap()
            .attr("NumPart_ThisFile")
            .unwrap()
            .read_raw()
            .unwrap();
        assert_eq!(counts, [100; 6]);
        // In memory too (series frames, the fuzzer).
        let bytes = Format::Hdf5(layout).encode(&snap).unwrap();
        let again = Format::Hdf5(Layout::Gadget4).decode(&bytes, "mem").unwrap();
        assert_eq!(by_id(&again), by_id(&snap));
    }
}

// A snapshot without kinds is all halo (type 1), as Gadget-2's files are.
#[test]
fn untyped_particles_are_halo() {
    let mut snap = every_kind(50);
    snap.types = None;
    snap.potential = None;
    let path = tmp("untyped.hdf5");
    snapshot::write_file(&path, &snap).unwrap();
    let back = snapshot::read_file(&path).unwrap();
    assert_eq!(back.types, Some(vec![1; 50]));
    assert_eq!(back.potential, None);
    assert_eq!(back.particles, snap.particles);
}

// The content decides: an HDF5 file named `.dat` or `.tipsy` reads as
// HDF5, a Tipsy file named `.hdf5` as Tipsy, and the layout comes from
// the groups, not from the name.
#[test]
fn content_decides_not_the_name() {
    let snap = every_kind(60);
    for (layout, name) in [(Layout::Swift, "swift.dat"), (Layout::Gadget4, "g4.tipsy")] {
        let path = tmp(name);
        snapshot::write_file_as(&path, Format::Hdf5(layout), &snap).unwrap();
        assert_eq!(by_id(&snapshot::read_file(&path).unwrap()), by_id(&snap));
    }
    let path = tmp("really-gadget2.hdf5");
    snapshot::write_file_as(&path, Format::Gadget, &snap).unwrap();
    assert_eq!(snapshot::read_file(&path).unwrap().particles.len(), 60);
    let path = tmp("text.hdf5");
    std::fs::write(&path, "not a snapshot at all, just some words\n").unwrap();
    assert!(err(&path).contains("HDF5's signature"), "{}", err(&path));
}

/// A GADGET-4 file of `n` halo particles written by `fill` after a header
/// that lists them (as a test's malformed files are made).
fn made(name: &str, n: usize, fill: impl FnOnce(&hdf5_metno::Group)) -> String {
    let path = tmp(name);
    let f = h5(&path, hdf5_metno::OpenMode::Create);
    let h = f.create_group("Header").unwrap();
    h.new_attr_builder()
        .with_data(&[0u32, n as u32, 0, 0, 0, 0][..])
        .create("NumPart_ThisFile")
        .unwrap();
    h.new_attr_builder()
        .with_data(&[0.0f64, 0.5, 0.0, 0.0, 0.0, 0.0][..])
        .create("MassTable")
        .unwrap();
    h.new_attr::<f64>()
        .create("Time")
        .unwrap()
        .write_scalar(&2.5)
        .unwrap();
    let g = f.create_group("PartType1").unwrap();
    fill(&g);
    path
}

fn rows(g: &hdf5_metno::Group, d: &str, n: usize, width: usize, v: f32) {
    let data = vec![v; n * width];
    let shape = if width == 1 { vec![n] } else { vec![n, width] };
    g.new_dataset_builder()
        .with_data(&ndarray::ArrayD::from_shape_vec(shape, data).unwrap())
        .create(d)
        .unwrap();
}

fn ids(g: &hdf5_metno::Group, n: usize) {
    let data: Vec<u32> = (0..n as u32).collect();
    g.new_dataset_builder()
        .with_data(&data[..])
        .create("ParticleIDs")
        .unwrap();
}

// GADGET-4's files with 32-bit ids and masses in the header's MassTable.
#[test]
fn header_masses_and_narrow_ids() {
    let path = made("masstable.hdf5", 4, |g| {
        rows(g, "Coordinates", 4, 3, 1.5);
        rows(g, "Velocities", 4, 3, -0.25);
        ids(g, 4);
    });
    let s = snapshot::read_file(&path).unwrap();
    assert_eq!(s.time, 2.5);
    assert_eq!(s.particles.id, [0, 1, 2, 3]);
    assert!(s
        .particles
        .pos_mass
        .iter()
        .all(|p| p.mass == 0.5 && p.pos == [1.5; 3]));
    assert_eq!(s.types, Some(vec![1; 4]));
}

#[test]
fn malformed_files_name_the_dataset() {
    let cases: Vec<(&str, String)> = vec![
        (
            "PartType1/Velocities is missing",
            made("no-vel.hdf5", 3, |g| {
                rows(g, "Coordinates", 3, 3, 1.0);
                ids(g, 3);
            }),
        ),
        (
            "PartType1/Coordinates is missing",
            made("no-pos.hdf5", 3, |g| ids(g, 3)),
        ),
        (
            "PartType1/Coordinates has shape [3, 2]",
            made("shape.hdf5", 3, |g| {
                rows(g, "Coordinates", 3, 2, 1.0);
                rows(g, "Velocities", 3, 3, 1.0);
                ids(g, 3);
            }),
        ),
        (
            "PartType1/Velocities has shape [2, 3], expected [3, 3]",
            made("lengths.hdf5", 3, |g| {
                rows(g, "Coordinates", 3, 3, 1.0);
                rows(g, "Velocities", 2, 3, 1.0);
                ids(g, 3);
            }),
        ),
        (
            "PartType1/Coordinates holds 3 particles, Header/NumPart_ThisFile[1] says 4",
            made("count.hdf5", 4, |g| {
                rows(g, "Coordinates", 3, 3, 1.0);
                rows(g, "Velocities", 3, 3, 1.0);
                ids(g, 3);
            }),
        ),
        (
            "PartType1/Coordinates: the value of particle 0 is not finite",
            made("nan.hdf5", 3, |g| {
                rows(g, "Coordinates", 3, 3, f32::NAN);
                rows(g, "Velocities", 3, 3, 1.0);
                ids(g, 3);
            }),
        ),
        (
            "PartType1/ParticleIDs[1] is -7: ids must not be negative",
            made("negative-id.hdf5", 3, |g| {
                rows(g, "Coordinates", 3, 3, 1.0);
                rows(g, "Velocities", 3, 3, 1.0);
                g.new_dataset_builder()
                    .with_data(&[4i64, -7, 9][..])
                    .create("ParticleIDs")
                    .unwrap();
            }),
        ),
        (
            "PartType1/Masses: particle 0 has a negative mass",
            made("negative.hdf5", 3, |g| {
                rows(g, "Coordinates", 3, 3, 1.0);
                rows(g, "Velocities", 3, 3, 1.0);
                rows(g, "Masses", 3, 1, -1.0);
                ids(g, 3);
            }),
        ),
    ];
    let neutrinos = made("type6.hdf5", 2, |g| {
        rows(g, "Coordinates", 2, 3, 1.0);
        rows(g, "Velocities", 2, 3, 1.0);
        ids(g, 2);
    });
    {
        let f = h5(&neutrinos, hdf5_metno::OpenMode::ReadWrite);
        let h = f.group("Header").unwrap();
        h.delete_attr("NumPart_ThisFile").unwrap();
        h.new_attr_builder()
            .with_data(&[0u32, 2, 0, 0, 0, 0, 5][..])
            .create("NumPart_ThisFile")
            .unwrap();
    }
    let cases: Vec<(&str, String)> = cases
        .into_iter()
        .chain([("lists 5 particles of type 6", neutrinos)])
        .collect();
    for (want, path) in &cases {
        let e = err(path);
        assert!(e.contains(want), "{path}: {e}");
    }
    // Truncated: the library's own refusal, never a panic.
    let good = tmp("whole.hdf5");
    snapshot::write_file(&good, &every_kind(300)).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    for keep in [bytes.len() / 2, 600, 100, 9] {
        let cut = tmp(&format!("cut-{keep}.hdf5"));
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        assert!(err(&cut).contains(&cut), "{}", err(&cut));
    }
}

// A write replaces the file whole (written beside it, then renamed): the
// file keeps its permissions and no temporary is left.
#[test]
fn writes_replace_the_file_whole() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::fresh_dir("hdf5-atomic");
    let path = dir.join("keep.hdf5").to_str().unwrap().to_string();
    snapshot::write_file(&path, &every_kind(30)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    snapshot::write_file_as(&path, Format::Hdf5(Layout::Swift), &every_kind(40)).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);
    assert_eq!(snapshot::read_file(&path).unwrap().particles.len(), 40);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn convert_goes_between_hdf5_and_every_format() {
    let snap = every_kind(120);
    let src = tmp("conv-src.hdf5");
    snapshot::write_file(&src, &snap).unwrap();
    let mut from = src.clone();
    for (to, flag) in [
        ("conv.gadget", None),
        ("conv-swift.hdf5", Some("swift-hdf5")),
        ("conv.csv", None),
        ("conv.h5", Some("gadget4-hdf5")),
        ("conv.bonsai-free", Some("gadget")),
        ("conv-back.hdf5", None),
    ] {
        let out = tmp(to);
        let mut args = vec!["convert", from.as_str(), out.as_str()];
        if let Some(f) = flag {
            args.extend(["--to", f]);
        }
        let (ok, _, e) = webgrav(&args);
        assert!(ok, "{to}: {e}");
        let back = snapshot::read_file(&out).unwrap();
        let want: Vec<_> = by_id(&snap).into_iter().map(|r| (r.0, r.1, r.2)).collect();
        let mut got = back.clone();
        got.potential = Some(vec![0.0; got.particles.len()]);
        let got: Vec<_> = by_id(&got).into_iter().map(|r| (r.0, r.1, r.2)).collect();
        assert_eq!(got, want, "{to}");
        assert_eq!(back.time, snap.time, "{to}");
        from = out;
    }
    let swift = h5(&tmp("conv-swift.hdf5"), hdf5_metno::OpenMode::Read);
    assert!(swift.group("Units").is_ok());
    // Refusals name what is wrong.
    let (ok, _, e) = webgrav(&["convert", &src, &tmp("x.out"), "--to", "netcdf"]);
    assert!(!ok && e.contains("unknown snapshot format 'netcdf'"), "{e}");
    let (ok, _, e) = webgrav(&["convert", &src, &tmp("x.out")]);
    assert!(!ok && e.contains(".hdf5"), "{e}");
    let (ok, _, e) = webgrav(&["convert", &tmp("cut-9.hdf5"), &tmp("y.csv")]);
    assert!(!ok && e.contains("cut-9.hdf5"), "{e}");
}

// A file in physical units: read as it is, and the run says which units
// they are and the --units that converts them.
#[test]
fn stated_units_are_reported() {
    let path = made("units.hdf5", 2, |g| {
        rows(g, "Coordinates", 2, 3, 1.0);
        rows(g, "Velocities", 2, 3, 1.0);
        ids(g, 2);
    });
    {
        let f = h5(&path, hdf5_metno::OpenMode::ReadWrite);
        let p = f.create_group("Parameters").unwrap();
        for (a, v) in [
            ("UnitLength_in_cm", 3.085678e24),
            ("UnitMass_in_g", 1.989e43),
            ("UnitVelocity_in_cm_per_s", 1e5),
        ] {
            p.new_attr::<f64>()
                .create(a)
                .unwrap()
                .write_scalar(&v)
                .unwrap();
        }
    }
    let u = snapshot::hdf5::units(&path).unwrap().unwrap();
    assert!(
        (u[0] - 1000.0).abs() < 1e-9 && (u[1] - 1e10).abs() < 1e-3 && (u[2] - 1.0).abs() < 1e-12,
        "{u:?}"
    );
    // webgrav's own files state webgrav's units: nothing to convert.
    let own = tmp("own-units.hdf5");
    snapshot::write_file(&own, &every_kind(12)).unwrap();
    assert_eq!(snapshot::hdf5::units(&own).unwrap(), None);
}

// A run's snapshot series in SWIFT's layout: every file SWIFT's, the
// index names the layout, and each file reads back with its time.
#[test]
fn a_series_in_swifts_layout() {
    let dir = common::fresh_dir("hdf5-series");
    let snaps = dir.join("snaps");
    let snaps = snaps.to_str().unwrap();
    let (ok, _, e) = webgrav(&[
        "run",
        "--model",
        "plummer",
        "-n",
        "64",
        "--solver",
        "direct",
        "--dt",
        "0.0625",
        "--t-end",
        "0.125",
        "--snap-every",
        "0.0625",
        "--snap-dir",
        snaps,
        "--snap-format",
        "swift-hdf5",
    ]);
    assert!(ok, "{e}");
    let index = std::fs::read_to_string(format!("{snaps}/index.json")).unwrap();
    assert!(index.contains("\"format\":\"swift-hdf5\""), "{index}");
    for (k, t) in [(0, 0.0), (1, 0.0625), (2, 0.125)] {
        let path = format!("{snaps}/snap_{k:05}.hdf5");
        assert!(h5(&path, hdf5_metno::OpenMode::Read).group("Units").is_ok());
        let s = snapshot::read_file(&path).unwrap();
        assert_eq!((s.particles.len(), s.time), (64, t), "{path}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A parallel run's ranks read an HDF5 snapshot in shares: each share is
/// its slice of the whole read (the types' groups in order, cut across
/// their edges), every value to the bit, kinds and potentials with them,
/// in both layouts; a non-finite value is found by the one share that
/// holds its row, named by its group and row.
#[test]
fn shares_of_an_hdf5_snapshot_are_slices_of_the_whole() {
    use webgrav::snapshot::read_share;
    use webgrav::state::share::RankShare;
    let snap = every_kind(500);
    for layout in LAYOUTS {
        let path = tmp(&format!("shares-{}.hdf5", layout.name()));
        snapshot::write_file_as(&path, Format::Hdf5(layout), &snap).unwrap();
        let whole = snapshot::read_file(&path).unwrap();
        for ranks in [1, 2, 3, 7] {
            let mut joined = Snapshot {
                time: whole.time,
                types: Some(Vec::new()),
                potential: Some(Vec::new()),
                ..Default::default()
            };
            for rank in 0..ranks {
                let share = read_share(&path, RankShare { rank, ranks }, |_| Ok(()))
                    .unwrap()
                    .expect("an HDF5 file is read in shares");
                assert_eq!((share.n, share.snap.time), (500, whole.time));
                assert!(share.typed);
                let (s, j) = (share.snap, &mut joined);
                j.particles.pos_mass.extend(s.particles.pos_mass);
                j.particles.vel.extend(s.particles.vel);
                j.particles.id.extend(s.particles.id);
                j.types.as_mut().unwrap().extend(s.types.unwrap());
                j.potential.as_mut().unwrap().extend(s.potential.unwrap());
            }
            assert_eq!(
                joined.particles.id, whole.particles.id,
                "{layout:?}, {ranks}"
            );
            assert_eq!(by_id(&joined), by_id(&whole), "{layout:?}, {ranks}");
        }
    }
    // Row 3 of PartType2 (after the groups of types 0 and 1: particle
    // 3 of its group, not of the file or a share) with a NaN velocity.
    let path = tmp("share-nan.hdf5");
    snapshot::write_file_as(&path, Format::Hdf5(Layout::Gadget4), &snap).unwrap();
    {
        let f = h5(&path, hdf5_metno::OpenMode::ReadWrite);
        let ds = f.dataset("PartType2/Velocities").unwrap();
        let mut v = ds.read_2d::<f32>().unwrap();
        v[[3, 1]] = f32::NAN;
        ds.write(&v).unwrap();
    }
    let failed: Vec<String> = (0..3)
        .filter_map(|rank| {
            read_share(&path, RankShare { rank, ranks: 3 }, |_| Ok(()))
                .err()
                .map(|e| e.to_string())
        })
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let says = "PartType2/Velocities: the value of particle 3 is not finite";
    assert!(failed[0].contains(says), "{failed:?}");
}
