//! Snapshot formats: exact round trips and clear errors on malformed files.
#![cfg(not(target_arch = "wasm32"))]

use webgrav::cluster::comm::{CommRanks, ThreadComm};
use webgrav::snapshot::{parted, read_share, tipsy, FileShare, Format, Snapshot, Written};
use webgrav::state::share::RankShare;
use webgrav::state::{Model, Particles};
use webgrav::Error;

fn sample() -> Snapshot {
    let mut particles = Model::Plummer.generate(300, 11).unwrap();
    // Ids that are not the index order, and beyond 32 bits.
    for (k, id) in particles.id.iter_mut().enumerate() {
        *id = (1u64 << 40) + 3 * k as u64;
    }
    Snapshot {
        time: 0.125,
        potential: Some((0..300).map(|k| -1.0 - k as f32 * 1e-3).collect()),
        softening: 0.01,
        particles,
        types: None,
    }
}

#[test]
fn tipsy_standard_round_trip_is_exact() {
    let s = sample();
    let bytes = Format::Tipsy.encode(&s).unwrap();
    assert_eq!(bytes.len(), 32 + 36 * 300);
    // Big-endian: ndim = 3 at bytes 12..16.
    assert_eq!(&bytes[12..16], &[0, 0, 0, 3]);
    let back = Format::Tipsy.decode(&bytes, "mem").unwrap();
    assert_eq!(back.time, s.time);
    assert_eq!(back.particles.pos_mass, s.particles.pos_mass);
    assert_eq!(back.particles.vel, s.particles.vel);
    assert_eq!(back.softening, s.softening);
    assert_eq!(back.potential, s.potential);
    // Standard Tipsy stores no ids: they come back in file order.
    assert_eq!(back.particles.id, (0..300).collect::<Vec<u64>>());
}

#[test]
fn tipsy_bonsai_round_trip_keeps_64_bit_ids() {
    let s = sample();
    let bytes = Format::TipsyBonsai.encode(&s).unwrap();
    assert_eq!(&bytes[12..16], &3i32.to_le_bytes());
    assert_eq!(&bytes[28..32], &2i32.to_le_bytes(), "version 2 marker");
    let back = Format::TipsyBonsai.decode(&bytes, "mem").unwrap();
    assert_eq!(back.time, s.time);
    assert_eq!(back.particles, s.particles);
}

#[test]
fn csv_round_trip_is_exact() {
    let s = sample();
    let bytes = Format::Csv.encode(&s).unwrap();
    let back = Format::Csv.decode(&bytes, "mem").unwrap();
    assert_eq!(back.time, s.time);
    assert_eq!(back.particles, s.particles);
}

#[test]
fn tipsy_without_pad_word_and_with_gas_and_stars_is_read() {
    // A hand-made little-endian file: 28-byte header, 1 gas, 1 dark, 1 star.
    let mut b = Vec::new();
    b.extend(2.5f64.to_le_bytes());
    for w in [3i32, 3, 1, 1, 1] {
        b.extend(w.to_le_bytes());
    }
    let rec = |b: &mut Vec<u8>, mass: f32, x: f32, extra: usize| {
        b.extend(mass.to_le_bytes());
        for v in [x, 0.0, 0.0, 0.0, 1.0, 0.0] {
            b.extend(v.to_le_bytes());
        }
        for _ in 0..extra {
            b.extend(0f32.to_le_bytes());
        }
    };
    rec(&mut b, 0.1, 1.0, 5);
    rec(&mut b, 0.2, 2.0, 2);
    rec(&mut b, 0.3, 3.0, 4);
    let s = tipsy::decode(&b, "mem").unwrap();
    assert_eq!(s.time, 2.5);
    let xs: Vec<f32> = s.particles.pos_mass.iter().map(|p| p.pos[0]).collect();
    assert_eq!(xs, [1.0, 2.0, 3.0]);
    assert_eq!(s.particles.pos_mass[2].mass, 0.3);
}

fn problem(result: webgrav::Result<Snapshot>) -> String {
    match result {
        Err(Error::BadSnapshot { problem, .. }) => problem,
        Err(e) => panic!("expected BadSnapshot, got {e}"),
        Ok(_) => panic!("malformed file was accepted"),
    }
}

fn be_header(nbodies: i32, ndim: i32, nsph: i32, ndark: i32, nstar: i32) -> Vec<u8> {
    let mut b = 0.0f64.to_be_bytes().to_vec();
    for w in [nbodies, ndim, nsph, ndark, nstar, 0] {
        b.extend(w.to_be_bytes());
    }
    b
}

#[test]
fn malformed_tipsy_files_give_clear_errors() {
    let good = Format::Tipsy.encode(&sample()).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "truncated"),
        ("short header", good[..20].to_vec(), "truncated"),
        (
            "truncated records",
            good[..good.len() - 10].to_vec(),
            "truncated",
        ),
        (
            "trailing bytes",
            [good.clone(), vec![0; 7]].concat(),
            "unexpected bytes",
        ),
        ("not tipsy", vec![0x42; 100], "not a Tipsy file"),
        (
            "counts disagree",
            be_header(10, 3, 0, 5, 0),
            "header counts disagree",
        ),
        (
            "negative count",
            be_header(-4, 3, 0, -4, 0),
            "negative particle count",
        ),
        (
            "absurd N",
            be_header(2_000_000_000, 3, 0, 2_000_000_000, 0),
            "truncated: header announces 2000000000",
        ),
        ("no particles", be_header(0, 3, 0, 0, 0), "no particles"),
    ];
    for (what, bytes, expected) in cases {
        let p = problem(tipsy::decode(&bytes, "f.tipsy"));
        assert!(
            p.contains(expected),
            "{what}: '{p}' should mention '{expected}'"
        );
    }
    // NaN in a position of particle 5 (record starts after the 32-byte header).
    let mut nan = good.clone();
    let at = 32 + 5 * 36 + 4;
    nan[at..at + 4].copy_from_slice(&f32::NAN.to_be_bytes());
    let p = problem(tipsy::decode(&nan, "f.tipsy"));
    assert!(
        p.contains("particle 5") && p.contains("non-finite position"),
        "{p}"
    );
    // Negative mass.
    let mut neg = good.clone();
    neg[32..36].copy_from_slice(&(-1.0f32).to_be_bytes());
    assert!(problem(tipsy::decode(&neg, "f.tipsy")).contains("invalid mass"));
}

#[test]
fn malformed_csv_files_give_clear_errors() {
    let cases: Vec<(&str, &str, &str)> = vec![
        ("no header", "1,2,3,4,5,6,7,8\n", "expected the header"),
        ("empty", "", "no header line"),
        (
            "short row",
            "id,x,y,z,vx,vy,vz,m\n0,1,2,3\n",
            "line 2: 4 fields",
        ),
        (
            "bad number",
            "id,x,y,z,vx,vy,vz,m\n0,1,2,x3,0,0,0,1\n",
            "line 2: bad number 'x3'",
        ),
        (
            "bad id",
            "id,x,y,z,vx,vy,vz,m\n-1,1,2,3,0,0,0,1\n",
            "bad id",
        ),
        (
            "nan",
            "id,x,y,z,vx,vy,vz,m\n0,NaN,2,3,0,0,0,1\n",
            "non-finite position",
        ),
        ("no particles", "id,x,y,z,vx,vy,vz,m\n", "no particles"),
        ("binary", "\u{0}\u{ff}", "expected the header"),
    ];
    for (what, text, expected) in cases {
        let p = problem(Format::Csv.decode(text.as_bytes(), "f.csv"));
        assert!(
            p.contains(expected),
            "{what}: '{p}' should mention '{expected}'"
        );
    }
    assert!(problem(Format::Csv.decode(&[0xff, 0xfe, 0x00], "f.csv")).contains("not UTF-8"));
}

#[test]
fn failed_write_leaves_nothing_behind_and_keeps_the_old_file() {
    let dir = std::env::temp_dir().join(format!("webgrav-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.tipsy");
    let path = path.to_str().unwrap();
    let s = sample();
    webgrav::snapshot::write_file(path, &s).unwrap();
    let before = std::fs::read(path).unwrap();
    // Writing into a directory that does not exist fails cleanly...
    let missing = dir.join("no/such/dir/x.tipsy");
    assert!(webgrav::snapshot::write_file(missing.to_str().unwrap(), &s).is_err());
    // ...and a rename onto a directory fails without touching it or
    // leaving the temporary file.
    let as_dir = dir.join("taken.tipsy");
    std::fs::create_dir_all(&as_dir).unwrap();
    assert!(webgrav::snapshot::write_file(as_dir.to_str().unwrap(), &s).is_err());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    assert_eq!(std::fs::read(path).unwrap(), before);
    // Standard Tipsy has no id field: the ids come back from the .iord
    // side file written beside it.
    assert_eq!(
        webgrav::snapshot::read_file(path).unwrap().particles,
        s.particles
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fixture(name: &str) -> String {
    format!("{}/tests/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The particles of an expected-values CSV written by the fixture's
/// generator (not by webgrav's writer).
fn expected(name: &str) -> webgrav::state::Particles {
    webgrav::snapshot::read_file(&fixture(name))
        .unwrap()
        .particles
}

// A Gadget-2 file written by an independent writer (pynbody 2.8: format 2,
// labelled blocks, no ID block, gas + dark matter + stars) reads with the
// particles pynbody itself reads from it, in type order, types kept.
#[test]
fn gadget_format2_from_pynbody_reads_as_pynbody_reads_it() {
    let snap = webgrav::snapshot::read_file(&fixture("corpus/pynbody-format2.gadget")).unwrap();
    let want = expected("fixtures/pynbody-format2.expected.csv");
    assert_eq!(snap.particles.pos_mass, want.pos_mass);
    assert_eq!(snap.particles.vel, want.vel);
    let types = snap.types.unwrap();
    assert_eq!(types.iter().filter(|&&t| t == 0).count(), 4);
    assert_eq!(types.iter().filter(|&&t| t == 1).count(), 24);
    // pynbody writes its star family as Gadget type 2 by default.
    assert_eq!(types.iter().filter(|&&t| t == 2).count(), 8);
}

// Format 1, big-endian, 64-bit ids, a MASS block for the stars only
// (written by Python's struct, as Gadget-2 would): ids, values and types.
#[test]
fn gadget_format1_big_endian_with_mass_block() {
    let snap = webgrav::snapshot::read_file(&fixture("corpus/big-endian-format1.gadget")).unwrap();
    let want = expected("fixtures/big-endian-format1.expected.csv");
    assert_eq!(snap.particles, want);
    assert_eq!(snap.time, 1.5);
    let mut types = vec![1u8; 10];
    types.extend([2; 4]);
    types.extend([4; 6]);
    assert_eq!(snap.types, Some(types));
}

// A snapshot in two files reads whole from its first file or its stem.
#[test]
fn gadget_snapshot_of_two_files() {
    for name in [
        "fixtures/two-files.0",
        "fixtures/two-files",
        "fixtures/two-files.1",
    ] {
        let snap = webgrav::snapshot::read_file(&fixture(name)).unwrap();
        assert_eq!(snap.particles.id, (0..10).collect::<Vec<u64>>(), "{name}");
        assert_eq!(snap.time, 0.25);
    }
}

// Gadget-2 out (format 1) and back: the same particles, ids and types.
#[test]
fn gadget_round_trip() {
    let mut s = sample();
    s.potential = None;
    s.softening = 0.0;
    s.types = Some((0..300).map(|k| [1u8, 2, 4][k % 3]).collect());
    let back = Format::Gadget
        .decode(&Format::Gadget.encode(&s).unwrap(), "x.gadget")
        .unwrap();
    // Gadget groups particles by type: compare by id.
    let mut a: Vec<_> = (0..300)
        .map(|k| {
            (
                s.particles.id[k],
                s.particles.pos_mass[k],
                s.types.as_ref().unwrap()[k],
            )
        })
        .collect();
    let mut b: Vec<_> = (0..300)
        .map(|k| {
            (
                back.particles.id[k],
                back.particles.pos_mass[k],
                back.types.as_ref().unwrap()[k],
            )
        })
        .collect();
    a.sort_by_key(|x| x.0);
    b.sort_by_key(|x| x.0);
    assert_eq!(a, b);
    assert_eq!(back.time, s.time);
}

// Files without an extension are read by their content; an unknown one is
// refused with what was tried; a lying or damaged Gadget file with the
// reason.
#[test]
fn formats_are_recognised_by_content() {
    let dir = std::env::temp_dir().join(format!("webgrav-detect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (src, dst) in [
        ("corpus/standard.tipsy", "snapshot_000"),
        ("corpus/big-endian-format1.gadget", "snap_0000.0625-0"),
        ("corpus/plain.csv", "table"),
    ] {
        let to = dir.join(dst);
        std::fs::copy(fixture(src), &to).unwrap();
        let a = webgrav::snapshot::read_file(to.to_str().unwrap()).unwrap();
        let b = webgrav::snapshot::read_file(&fixture(src)).unwrap();
        assert_eq!(a.particles, b.particles, "{dst}");
    }
    let junk = dir.join("junk");
    std::fs::write(&junk, b"this is not a snapshot of any kind at all, sorry").unwrap();
    let e = webgrav::snapshot::read_file(junk.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("tried Tipsy") && e.contains("Gadget-2"), "{e}");
    let e = webgrav::snapshot::read_file(&fixture("corpus/bad-markers.gadget"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("record markers disagree"), "{e}");
    let e = webgrav::snapshot::read_file(&fixture("corpus/bad-counts.gadget"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("holds") && e.contains("need"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// Gadget-2's default units (1 kpc, 1e10 M☉, 1 km/s) into Bonsai's G = 1
// units (1 kpc, 2.325e9 M☉, 100 km/s, time unit 9.78 Myr).
#[test]
fn physical_units_convert_to_g_equals_one() {
    let mut s = Snapshot {
        time: 1.0,
        particles: webgrav::state::Particles {
            pos_mass: vec![webgrav::gpu::layout::PosMass {
                pos: [8.0, 0.0, 0.0],
                mass: 1.0,
            }],
            vel: vec![webgrav::gpu::layout::Velocity::new([220.0, 0.0, 0.0])],
            id: vec![0],
        },
        ..Default::default()
    };
    webgrav::snapshot::gadget::to_nbody(&mut s, 1.0, 1e10, 1.0);
    let p = &s.particles;
    assert_eq!(p.pos_mass[0].pos[0], 8.0);
    assert!((p.pos_mass[0].mass as f64 - 1e10 / 2.325e9).abs() < 1e-6);
    assert!((p.vel[0].vel[0] - 2.2).abs() < 1e-6);
    // 1 kpc / (1 km/s) in time units of kpc / (100 km/s).
    assert!((s.time - 100.0).abs() < 1e-9);
}

/// `snap` split into parts of the given sizes, in order.
fn parts_of(snap: &Snapshot, sizes: &[usize]) -> Vec<Snapshot> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&n| {
            let keep: Vec<usize> = (start..start + n).collect();
            start += n;
            snap.subset(&keep)
        })
        .collect()
}

/// Every file in `dir` by name, with its bytes.
fn files_in(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// `dir` holds the files of `expected`, with the same bytes.
fn same_files(dir: &std::path::Path, expected: &std::path::Path, what: &str) {
    let (got, want) = (files_in(dir), files_in(expected));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&got), names(&want), "{what}");
    for ((name, a), (_, b)) in got.iter().zip(&want) {
        let first = a.iter().zip(b).position(|(x, y)| x != y);
        assert!(
            a == b,
            "{what}: {name} differs ({} bytes, expected {}; first at {first:?})",
            a.len(),
            b.len()
        );
    }
}

/// `parts` written into `path` by as many ranks (threads) at once; each
/// rank's outcome.
fn write_in_parts(path: &str, format: Format, parts: &[Snapshot]) -> Vec<webgrav::Result<Written>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadComm::ranks(parts.len())
            .into_iter()
            .zip(parts)
            .map(|(comm, part)| {
                s.spawn(move || parted::write_parted(path, format, part, &CommRanks(&comm)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn a_file_written_in_parts_is_the_whole_files_to_the_byte() {
    let root = std::env::temp_dir().join(format!("webgrav-parted-{}", std::process::id()));
    let n = 2000;
    let untyped = Snapshot {
        types: None,
        particles: Model::Plummer.generate(n, 5).unwrap(),
        potential: Some((0..n).map(|k| -1.0 - k as f32 * 1e-4).collect()),
        ..sample()
    };
    // Kinds standard Tipsy and Bonsai record as others (side files), ids
    // beyond 0..N-1 (.iord), masses that differ within a kind (Gadget's
    // MASS block).
    let mut typed = untyped.clone();
    typed.types = Some((0..n).map(|k| [1, 2, 3, 4, 0, 5][k % 6]).collect());
    typed.potential = Some((0..n).map(|k| -(k as f32) * 1e-3).collect());
    // (Black holes, kind 5, all weigh the same: their mass in Gadget's
    // header, the others' in its MASS block.)
    for (k, p) in typed.particles.pos_mass.iter_mut().enumerate() {
        p.mass *= 1.0 + (k % 7) as f32 * 0.1 * (k % 6 != 5) as u8 as f32;
    }
    typed.particles.id = (0..n as u64).map(|k| (1 << 40) + 7 * k).collect();
    let formats = [
        ("x.tipsy", Format::Tipsy),
        ("x.bonsai", Format::TipsyBonsai),
        ("x.gadget", Format::Gadget),
        ("x.csv", Format::Csv),
    ];
    // Uneven parts, one rank with none.
    let sizes = [[n, 0, 0], [700, 0, n - 700], [1, 1500, n - 1501]];
    for (case, snap) in [("untyped", &untyped), ("typed", &typed)] {
        for (name, format) in formats {
            for (s, sizes) in sizes.iter().enumerate() {
                let (whole, parted) = (
                    root.join(format!("{case}-{name}-{s}/whole")),
                    root.join(format!("{case}-{name}-{s}/parts")),
                );
                for dir in [&whole, &parted] {
                    std::fs::create_dir_all(dir).unwrap();
                    // Side files of an earlier write (but for the first
                    // parts), to be rewritten or removed as a whole
                    // file's write does.
                    if s > 0 {
                        std::fs::write(dir.join(format!("{name}.iord")), "1\n7\n").unwrap();
                        std::fs::write(dir.join(format!("{name}.webgrav_kind")), "1\n2\n").unwrap();
                    }
                }
                let path = |dir: &std::path::Path| dir.join(name).to_str().unwrap().to_string();
                let expected =
                    webgrav::snapshot::write_file_as(&path(&whole), format, snap).unwrap();
                for written in write_in_parts(&path(&parted), format, &parts_of(snap, sizes)) {
                    let written = written.unwrap();
                    assert_eq!(
                        written.unrecorded, expected.unrecorded,
                        "{case} {name} {sizes:?}"
                    );
                    assert_eq!(written.side_file.is_some(), expected.side_file.is_some());
                    assert_eq!(written.kinds_file.is_some(), expected.kinds_file.is_some());
                }
                same_files(
                    &parted,
                    &whole,
                    &format!("{case} {name} in parts {sizes:?}"),
                );
            }
        }
    }
    // Ids Bonsai's ranges cannot hold, on one rank only: every rank fails,
    // the file before stays as it was, and no temporary is left.
    let dir = root.join("refused");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.bonsai").to_str().unwrap().to_string();
    std::fs::write(&path, b"before").unwrap();
    let mut bad = typed.clone();
    bad.particles.id[n - 1] = u64::MAX;
    let outcomes = write_in_parts(
        &path,
        Format::TipsyBonsai,
        &parts_of(&bad, &[n / 2, n - n / 2]),
    );
    let message = outcomes[1].as_ref().unwrap_err().to_string();
    assert!(message.contains("Bonsai"), "{message}");
    assert!(
        outcomes[0].is_err(),
        "every rank fails with the one that failed"
    );
    assert_eq!(
        files_in(&dir),
        vec![("x.bonsai".to_string(), b"before".to_vec())]
    );
    std::fs::remove_dir_all(&root).unwrap();
}

/// Each process's share of one Tipsy file (`read_share`, as the
/// ranks of a parallel run read their input) is its slice of the file as
/// one process reads it whole: positions, velocities, ids, and kinds where
/// any share shows the file has them (a file of dark records alone has
/// them when any particle carries Bonsai's id ranges, which only the last
/// share holds here). A damaged record is named by its index in the file,
/// by the share that holds it; a file a share cannot be read of (side
/// files, another format) is left to one process.
#[test]
fn shares_of_a_tipsy_file_are_slices_of_the_whole() {
    let dir = std::env::temp_dir().join(format!("webgrav-shares-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let n = 1000;
    let untyped = Snapshot {
        particles: Model::Plummer.generate(n, 7).unwrap(),
        potential: None,
        ..sample()
    };
    let typed = |kinds: &[u8]| Snapshot {
        types: Some((0..n).map(|k| kinds[k % kinds.len()]).collect()),
        ..untyped.clone()
    };
    // An untyped Bonsai file whose last particle's id carries the dark
    // matter range (its id, bytes 28..36 of its record).
    let mut ranged_at_the_end = Format::TipsyBonsai.encode(&untyped).unwrap();
    let last = ranged_at_the_end.len() - 8;
    let id = tipsy::BONSAI_DARK_ID + untyped.particles.id[n - 1];
    ranged_at_the_end[last..].copy_from_slice(&id.to_le_bytes());
    let files = [
        ("untyped.tipsy", Format::Tipsy.encode(&untyped).unwrap()),
        (
            "gas-dark-stars.tipsy",
            Format::Tipsy.encode(&typed(&[0, 1, 4])).unwrap(),
        ),
        (
            "untyped.bonsai",
            Format::TipsyBonsai.encode(&untyped).unwrap(),
        ),
        (
            "galaxy.bonsai",
            Format::TipsyBonsai.encode(&typed(&[1, 2, 3])).unwrap(),
        ),
        ("ranged-at-the-end.bonsai", ranged_at_the_end),
    ];
    for (name, bytes) in &files {
        std::fs::write(path(name), bytes).unwrap();
        let whole = webgrav::snapshot::read_file(&path(name)).unwrap();
        for ranks in [1, 2, 3, 7] {
            let shares = shares_of_whole(&path(name), &whole, ranks);
            if *name == "ranged-at-the-end.bonsai" {
                // Typed by its last particle alone.
                let typed = shares.iter().any(|s| s.typed);
                assert!(typed && (ranks == 1 || !shares[0].typed), "{name}, {ranks}");
            }
        }
    }

    // Particle 777's velocity made NaN: the share that holds it names it.
    let mut damaged = files[2].1.clone();
    let vx = 32 + 777 * 36 + 16;
    damaged[vx..vx + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(path("damaged.bonsai"), &damaged).unwrap();
    only_the_last_of_three_shares_fails(
        &path("damaged.bonsai"),
        "particle 777: non-finite velocity",
    );
    // The memory check sees the share's count before any record is read.
    let refused = read_share(
        &path("untyped.bonsai"),
        RankShare { rank: 1, ranks: 4 },
        |count| {
            assert_eq!(count, 250);
            Err(Error::InvalidParameter("no room".into()))
        },
    );
    assert!(matches!(refused, Err(Error::InvalidParameter(m)) if m == "no room"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each process's share of a CSV snapshot is its slice of the file as one
/// process reads it whole: the rows whose lines start in its part of the
/// bytes, placed among the others by their counts (`FileShare::place`),
/// ids by row where the file has no id column. That holds for what
/// pandas and spreadsheets write (a byte order mark, CRLF line ends,
/// columns in any order, quoted fields, blank lines and comments between
/// rows, a `# time` comment before the header). A bad row or value is
/// named by its line or particle in the file, as the whole read names it,
/// by the share that holds it; a file of fewer rows than shares, or with
/// a `# time` comment among its rows, is left to one process.
#[test]
fn shares_of_a_csv_file_are_slices_of_the_whole() {
    let dir = std::env::temp_dir().join(format!("webgrav-csv-shares-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let n = 1000;
    let galaxy = Snapshot {
        particles: Model::Plummer.generate(n, 5).unwrap(),
        potential: None,
        types: Some((0..n).map(|k| [1, 2, 3][k % 3]).collect()),
        ..sample()
    };
    // Without ids or times: columns reordered and one quoted, a BOM, CRLF,
    // the time in a comment, blank lines and comments among the rows.
    let p = &galaxy.particles;
    let mut foreign = String::from("\u{feff}# time = 2.5\r\n\"m\",vz,vy,vx,z,y,x\r\n");
    for k in 0..n {
        let (x, v, m) = (p.pos_mass[k].pos, p.vel[k].vel, p.pos_mass[k].mass);
        let row = format!("{m},{},{},{},{},{},{}", v[2], v[1], v[0], x[2], x[1], x[0]);
        match k % 97 {
            0 => foreign += &format!("{row}\r\n\r\n# a comment, 1,2,3\r\n"),
            _ => foreign += &format!("{row}\r\n"),
        }
    }
    let files = [
        ("webgrav.csv", Format::Csv.encode(&galaxy).unwrap()),
        ("foreign.csv", foreign.into_bytes()),
    ];
    for (name, bytes) in &files {
        std::fs::write(path(name), bytes).unwrap();
        let whole = webgrav::snapshot::read_file(&path(name)).unwrap();
        assert_eq!(whole.particles.len(), n);
        for ranks in [1, 2, 3, 7] {
            let shares = shares_of_whole(&path(name), &whole, ranks);
            assert!(shares
                .iter()
                .all(|s| s.snap.particles.len() > n / ranks / 2));
        }
    }
    assert_eq!(
        webgrav::snapshot::read_file(&path("foreign.csv"))
            .unwrap()
            .time,
        2.5
    );

    let text = String::from_utf8(files[0].1.clone()).unwrap();
    let with_row = |k: usize, row: &str| -> String {
        let mut lines: Vec<&str> = text.lines().collect();
        lines[k + 1] = row;
        lines.join("\n") + "\n"
    };
    let row_777 = text.lines().nth(778).unwrap().to_string();
    let fields: Vec<&str> = row_777.split(',').collect();
    // A bad number in row 777 (line 779), a NaN velocity, a time of its
    // own, a short row: named as the whole read names them.
    let with_field = |i: usize, value: &str| {
        let mut f = fields.clone();
        f[i] = value;
        f.join(",")
    };
    let damaged = [
        with_field(1, "abc"),
        with_field(4, "NaN"),
        with_field(8, "3.5"),
        fields[..8].join(","),
    ];
    for (k, row) in damaged.iter().enumerate() {
        let file = path(&format!("damaged-{k}.csv"));
        std::fs::write(&file, with_row(777, row)).unwrap();
        let Err(Error::BadSnapshot { problem, .. }) = webgrav::snapshot::read_file(&file) else {
            panic!("the whole read took damaged row {k}");
        };
        assert!(
            problem.contains("779") || problem.contains("particle 777"),
            "{problem}"
        );
        only_the_last_of_three_shares_fails(&file, &problem);
    }
    // The memory check sees the share's lines before any row is parsed.
    let mut seen = 0;
    let share = RankShare { rank: 1, ranks: 4 };
    let refused = read_share(&path("webgrav.csv"), share, |lines| {
        seen = lines;
        Err(Error::InvalidParameter("no room".into()))
    });
    assert!(matches!(refused, Err(Error::InvalidParameter(m)) if m == "no room"));
    let read = read_share(&path("webgrav.csv"), share, |_| Ok(()));
    assert_eq!(seen, read.unwrap().unwrap().snap.particles.len());
    // Fewer rows than shares, or a time among the rows: one process reads.
    let two_rows: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(path("two-rows.csv"), two_rows).unwrap();
    let last = |file: &str, ranks| {
        read_share(
            &path(file),
            RankShare {
                rank: ranks - 1,
                ranks,
            },
            |_| Ok(()),
        )
    };
    assert!(last("two-rows.csv", 7).unwrap().is_none());
    std::fs::write(path("timed.csv"), with_row(900, "# time = 0.125")).unwrap();
    assert!(last("timed.csv", 3).unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A standard Tipsy file with both side files (ids beyond 0..N-1 in
/// `.iord`; disk and bulge, which the format cannot record, in
/// `.webgrav_kind`) is read in shares that are slices of the whole, each
/// reading the side files only as far as its share's end. A bad value is
/// named by its index, by the share that holds it; a side file of too
/// few values by the shares it leaves short, of one too many by the last
/// share; kinds that contradict the file's records are refused.
#[test]
fn shares_of_a_tipsy_file_take_their_lines_of_its_side_files() {
    let dir = std::env::temp_dir().join(format!("webgrav-side-shares-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let n = 1000;
    let mut particles = Model::Plummer.generate(n, 3).unwrap();
    particles.id = (0..n as u64).map(|k| 10 * k + 7).collect();
    let galaxy = Snapshot {
        particles,
        potential: None,
        types: Some((0..n).map(|k| [1, 2, 3][k % 3]).collect()),
        ..sample()
    };
    let file = path("galaxy.tipsy");
    let written = webgrav::snapshot::write_file(&file, &galaxy).unwrap();
    assert!(written.side_file.is_some(), "ids went to .iord");
    let whole = webgrav::snapshot::read_file(&file).unwrap();
    // (In file order: Tipsy keeps dark matter before stars.)
    let mut ids = whole.particles.id.clone();
    ids.sort_unstable();
    assert_eq!(ids, galaxy.particles.id);
    assert!(whole.types.as_ref().unwrap().contains(&3), "bulge kept");
    for ranks in [1, 2, 3, 7] {
        shares_of_whole(&file, &whole, ranks);
    }

    let ids = std::fs::read_to_string(format!("{file}.iord")).unwrap();
    let kinds = std::fs::read_to_string(format!("{file}.webgrav_kind")).unwrap();
    let with_line = |text: &str, line: usize, value: &str| -> String {
        let mut lines: Vec<&str> = text.lines().collect();
        lines[line] = value;
        lines.join("\n") + "\n"
    };
    // Value 777 (line 778) damaged: the last of three shares names it.
    std::fs::write(format!("{file}.iord"), with_line(&ids, 778, "x7")).unwrap();
    only_the_last_of_three_shares_fails(&file, "value 777: 'x7'");
    // Kind 900 made halo (dark matter), which the file records as a star: the
    // side file belongs to another snapshot.
    std::fs::write(format!("{file}.iord"), &ids).unwrap();
    let kind_900 = kinds.lines().nth(901).unwrap().to_string();
    assert_ne!(kind_900, "1");
    std::fs::write(format!("{file}.webgrav_kind"), with_line(&kinds, 901, "1")).unwrap();
    only_the_last_of_three_shares_fails(&file, "particle 900 is halo here but stars");
    // One value too few: the shares it leaves short refuse; one too many:
    // the last share, which reads to the end.
    std::fs::write(format!("{file}.webgrav_kind"), &kinds).unwrap();
    let short: Vec<&str> = ids.lines().take(n).collect();
    std::fs::write(format!("{file}.iord"), short.join("\n") + "\n").unwrap();
    only_the_last_of_three_shares_fails(&file, "999 values, expected 1000");
    std::fs::write(format!("{file}.iord"), ids.clone() + "5\n").unwrap();
    only_the_last_of_three_shares_fails(&file, "1001 values, expected 1000");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Gadget-2 snapshot of one file, in either format and byte order, is
/// read in shares (`read_share`) that are slices of the whole file as
/// one process reads it: positions, masses (the header's, or the MASS
/// block's for the types it leaves there), velocities, ids (or indices
/// where format 2 has no ID block) and types. A damaged value is named
/// by its index in the file; a snapshot of several files is left to one
/// process.
#[test]
fn shares_of_a_gadget_file_are_slices_of_the_whole() {
    let dir = std::env::temp_dir().join(format!("webgrav-gadget-shares-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = 1000;
    // Halo, disk, bulge, stars and black holes; masses that differ within
    // the halo (a MASS block), the same within the others.
    let mut snap = Snapshot {
        particles: Model::Plummer.generate(n, 8).unwrap(),
        potential: None,
        types: Some((0..n).map(|k| [1, 2, 3, 4, 5][k % 5]).collect()),
        ..sample()
    };
    for (k, p) in snap.particles.pos_mass.iter_mut().enumerate() {
        p.mass = if k % 5 == 0 {
            1e-3 * (1.0 + k as f32 * 1e-3)
        } else {
            1e-3
        };
    }
    let written = dir.join("galaxy.gadget");
    std::fs::write(&written, Format::Gadget.encode(&snap).unwrap()).unwrap();
    let files = [
        written.to_str().unwrap().to_string(),
        fixture("corpus/pynbody-format2.gadget"),
        fixture("corpus/big-endian-format1.gadget"),
    ];
    for path in &files {
        let whole = webgrav::snapshot::read_file(path).unwrap();
        for ranks in [1, 2, 3, 7] {
            let shares = shares_of_whole(path, &whole, ranks);
            assert!(shares.iter().all(|s| s.typed), "{path}");
        }
    }
    // Particle 777's y made NaN (POS after the header's 264 bytes and its
    // own 4-byte marker): the share that holds it names it.
    let mut damaged = std::fs::read(&written).unwrap();
    let y = 264 + 4 + 12 * 777 + 4;
    damaged[y..y + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    let damaged_path = dir.join("damaged.gadget");
    std::fs::write(&damaged_path, &damaged).unwrap();
    only_the_last_of_three_shares_fails(
        damaged_path.to_str().unwrap(),
        "particle 777: non-finite position",
    );
    // A block whose trailing marker disagrees is refused, as whole.
    let mut cut = std::fs::read(&written).unwrap();
    let end_of_pos = 264 + 4 + 12 * n;
    cut[end_of_pos..end_of_pos + 4].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(dir.join("markers.gadget"), &cut).unwrap();
    let markers = dir.join("markers.gadget");
    let read = read_share(
        markers.to_str().unwrap(),
        RankShare { rank: 0, ranks: 2 },
        |_| Ok(()),
    );
    assert!(
        matches!(&read, Err(Error::BadSnapshot { problem, .. }) if problem.contains("markers disagree")),
        "{:?}",
        read.map(|_| ())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Gadget-2 snapshot of several files is read in shares too, from any
/// of its files or its stem, each share its slice of the whole across the
/// files' edges: the two-file fixture; a galaxy written as three files
/// (each with its own MASS block); and a format-2 snapshot without IDs
/// in two files, whose particles are numbered across them, so no two
/// share an id. A particle damaged in the second file is named by that
/// file and its index there.
#[test]
fn shares_of_a_gadget_snapshot_of_several_files_are_slices_of_the_whole() {
    let dir = std::env::temp_dir().join(format!("webgrav-gadget-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = 900;
    let mut snap = Snapshot {
        particles: Model::Plummer.generate(n, 5).unwrap(),
        potential: None,
        types: Some((0..n).map(|k| [1, 2, 4][k % 3]).collect()),
        ..sample()
    };
    for (k, p) in snap.particles.pos_mass.iter_mut().enumerate() {
        p.mass *= 1.0 + (k % 3 == 0) as u8 as f32 * k as f32 * 1e-3;
    }
    // Thirds of the galaxy, each encoded alone, then told in its header
    // that it is one of three files of the whole (format 1: the header's
    // payload after its 4-byte marker).
    let thirds: Vec<Vec<u8>> = (0..3)
        .map(|k| {
            Format::Gadget
                .encode(&snap.subset(&(k * n / 3..(k + 1) * n / 3).collect::<Vec<_>>()))
                .unwrap()
        })
        .collect();
    let galaxy = dir.join("galaxy");
    let npart = |b: &[u8], at: usize| -> Vec<u32> {
        (0..6)
            .map(|t| u32::from_le_bytes(b[at + 4 * t..at + 4 * t + 4].try_into().unwrap()))
            .collect()
    };
    let as_one_of = |mut file: Vec<u8>, totals: &[u32], files: u32, at: usize| {
        for (t, total) in totals.iter().enumerate() {
            file[at + 96 + 4 * t..at + 100 + 4 * t].copy_from_slice(&total.to_le_bytes());
        }
        file[at + 124..at + 128].copy_from_slice(&files.to_le_bytes());
        file
    };
    let totals: Vec<u32> = (0..6)
        .map(|t| thirds.iter().map(|b| npart(b, 4)[t]).sum())
        .collect();
    for (k, third) in thirds.iter().enumerate() {
        let file = as_one_of(third.clone(), &totals, 3, 4);
        std::fs::write(format!("{}.{k}", galaxy.display()), file).unwrap();
    }
    // pynbody's format 2 (no ID block) twice over, as two files (the
    // header's payload after the label record and its marker).
    let pynbody = std::fs::read(fixture("corpus/pynbody-format2.gadget")).unwrap();
    let twice: Vec<u32> = npart(&pynbody, 20).iter().map(|c| 2 * c).collect();
    let unnumbered = dir.join("unnumbered");
    for k in 0..2 {
        let file = as_one_of(pynbody.clone(), &twice, 2, 20);
        std::fs::write(format!("{}.{k}", unnumbered.display()), file).unwrap();
    }
    let path = |stem: &std::path::Path, k: &str| format!("{}{k}", stem.display());
    let unnumbered_whole = webgrav::snapshot::read_file(&path(&unnumbered, ".0")).unwrap();
    let mut ids = unnumbered_whole.particles.id.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        ids.len(),
        unnumbered_whole.particles.len(),
        "ids repeat across the files"
    );
    for (stem, files) in [
        (std::path::PathBuf::from(fixture("fixtures/two-files")), 2),
        (galaxy.clone(), 3),
        (unnumbered.clone(), 2),
    ] {
        let whole = webgrav::snapshot::read_file(&path(&stem, ".0")).unwrap();
        if stem == galaxy {
            assert_eq!(whole.particles.len(), n);
        }
        let names = (0..files).map(|k| format!(".{k}")).chain([String::new()]);
        for name in names {
            for ranks in [1, 2, 3, 7] {
                shares_of_whole(&path(&stem, &name), &whole, ranks);
            }
        }
    }
    // Particle 5 of the second file made NaN (its y, as above): named by
    // that file and its index there (not its index in the snapshot, 305,
    // or in its share), by the one share of two that holds it.
    let second = format!("{}.1", galaxy.display());
    let mut damaged = std::fs::read(&second).unwrap();
    let y = 264 + 4 + 12 * 5 + 4;
    damaged[y..y + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&second, damaged).unwrap();
    let failed: Vec<String> = (0..2)
        .filter_map(|rank| {
            match read_share(&path(&galaxy, ".0"), RankShare { rank, ranks: 2 }, |_| {
                Ok(())
            }) {
                Ok(share) => {
                    assert!(share.is_some());
                    None
                }
                Err(Error::BadSnapshot { path, problem }) => Some(format!("{path}: {problem}")),
                Err(e) => panic!("{e}"),
            }
        })
        .collect();
    let says = format!("{second}: particle 5: non-finite position");
    assert!(
        failed.len() == 1 && failed[0].starts_with(&says),
        "{failed:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `ranks` shares of the snapshot file `path` (`read_share`), each
/// checked to be its slice of `whole` (the file as one process reads
/// it): the file's N and time, positions, masses and velocities to the
/// bit, ids, and the kinds where the file has them (and only then does
/// any share say it is typed).
fn shares_of_whole(path: &str, whole: &Snapshot, ranks: usize) -> Vec<FileShare> {
    let mut shares: Vec<FileShare> = (0..ranks)
        .map(|rank| {
            read_share(path, RankShare { rank, ranks }, |_| Ok(()))
                .unwrap()
                .expect("the file is read in shares")
        })
        .collect();
    // A CSV file's shares counted their rows: placed as a run places them.
    let counts: Vec<usize> = shares.iter().map(|s| s.n).collect();
    for (r, s) in shares.iter_mut().enumerate() {
        s.place(counts[..r].iter().sum(), counts.iter().sum());
    }
    let what = format!("{path} in {ranks} shares");
    let n = whole.particles.len();
    assert!(
        shares.iter().all(|s| s.n == n && s.snap.time == whole.time),
        "{what}"
    );
    let bits = |p: &Particles| -> (Vec<u8>, Vec<u8>, Vec<u64>) {
        (
            bytemuck::cast_slice(&p.pos_mass).to_vec(),
            bytemuck::cast_slice(&p.vel).to_vec(),
            p.id.clone(),
        )
    };
    let mut joined = (Vec::new(), Vec::new(), Vec::new());
    for s in &shares {
        let (pos_mass, vel, id) = bits(&s.snap.particles);
        joined.0.extend(pos_mass);
        joined.1.extend(vel);
        joined.2.extend(id);
    }
    assert!(joined == bits(&whole.particles), "{what}");
    let typed = shares.iter().any(|s| s.typed);
    assert_eq!(typed, whole.types.is_some(), "{what}");
    if let Some(kinds) = &whole.types {
        let shared: Vec<u8> = shares
            .iter()
            .flat_map(|s| s.snap.types.clone().unwrap_or_default())
            .collect();
        assert_eq!(&shared, kinds, "{what}");
    }
    shares
}

/// Of three shares of the damaged file `path`, the last one's read is
/// refused, its problem saying `says`; the others read.
fn only_the_last_of_three_shares_fails(path: &str, says: &str) {
    for rank in 0..3 {
        match (
            rank,
            read_share(path, RankShare { rank, ranks: 3 }, |_| Ok(())),
        ) {
            (2, Err(Error::BadSnapshot { problem, .. })) => {
                assert!(problem.contains(says), "{problem}")
            }
            (2, other) => panic!("the damaged share was read: {:?}", other.map(|_| ())),
            (_, read) => assert!(read.unwrap().is_some()),
        }
    }
}
