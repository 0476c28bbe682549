//! The page's snapshot-series player opens files of any format in time
//! order (`app::series`, CPU only; the page itself in tests/e2e).
#![cfg(not(target_arch = "wasm32"))]

use webgrav::app::series::Series;
use webgrav::snapshot::{Format, Snapshot};
use webgrav::state::Model;

fn snapshot(time: f64, n: usize) -> Snapshot {
    Snapshot {
        time,
        particles: Model::Plummer.generate(n, 1).unwrap(),
        softening: 0.01,
        potential: None,
        types: None,
    }
}

#[test]
fn frames_of_any_format_play_in_time_order() {
    let files = vec![
        (
            "late.csv".to_string(),
            Format::Csv.encode(&snapshot(0.5, 10)).unwrap(),
        ),
        // Bonsai names its files without an extension.
        (
            "snap_0000.2500-0".to_string(),
            Format::TipsyBonsai.encode(&snapshot(0.25, 20)).unwrap(),
        ),
        (
            "first.tipsy".to_string(),
            Format::Tipsy.encode(&snapshot(0.0, 30)).unwrap(),
        ),
    ];
    let series = Series::open(files).unwrap();
    let order: Vec<(&str, f64, usize)> = series
        .frames()
        .iter()
        .map(|f| (f.name.as_str(), f.time, f.n))
        .collect();
    assert_eq!(
        order,
        [
            ("first.tipsy", 0.0, 30),
            ("snap_0000.2500-0", 0.25, 20),
            ("late.csv", 0.5, 10)
        ]
    );
    let s = series.snapshot(1).unwrap();
    assert_eq!(s.particles.len(), 20);
    assert!(series.snapshot(3).is_err());
}

#[test]
fn a_series_index_gives_the_times() {
    // The index's times (full precision, whatever the format keeps) win
    // over the files' own, and order the frames.
    let index = r#"{"format":"csv","snapshots":[
        {"file":"snap_00000.csv","time":0.3},{"file":"snap_00001.csv","time":0.1}]}"#;
    let files = vec![
        (
            "snap_00000.csv".to_string(),
            Format::Csv.encode(&snapshot(0.0, 5)).unwrap(),
        ),
        (
            "snap_00001.csv".to_string(),
            Format::Csv.encode(&snapshot(0.0, 6)).unwrap(),
        ),
        ("index.json".to_string(), index.as_bytes().to_vec()),
    ];
    let series = Series::open(files).unwrap();
    let times: Vec<(usize, f64)> = series.frames().iter().map(|f| (f.n, f.time)).collect();
    assert_eq!(times, [(6, 0.1), (5, 0.3)]);
    assert_eq!(series.snapshot(0).unwrap().time, 0.1);
}

#[test]
fn a_bad_file_is_refused_by_name() {
    let files = vec![
        (
            "good.csv".to_string(),
            Format::Csv.encode(&snapshot(0.0, 5)).unwrap(),
        ),
        ("broken.tipsy".to_string(), vec![0u8; 40]),
    ];
    let e = Series::open(files).unwrap_err().to_string();
    assert!(e.contains("broken.tipsy"), "{e}");
    let e = Series::open(vec![("notes.txt".to_string(), b"hello".to_vec())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("notes.txt"), "{e}");
    let e = Series::open(vec![("index.json".to_string(), b"{}".to_vec())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("snapshots"), "{e}");
    assert!(Series::open(vec![]).is_err());
}

#[test]
fn the_parts_of_a_run_on_several_ranks_play_as_one_frame() {
    // Two ranks' parts of t = 0.25 and three of t = 0.5 (ids apart), as
    // `webgrav run --bonsai-names` writes them under mpirun; a lone `-3`
    // past a gap stays a frame of its own.
    let part = |time: f64, rank: u64, n: usize| {
        let mut s = snapshot(time, n);
        s.particles.id = (0..n as u64).map(|k| 1000 * rank + k).collect();
        (
            format!("snap_{time:010.4}-{rank}"),
            Format::TipsyBonsai.encode(&s).unwrap(),
        )
    };
    let files = vec![
        part(0.5, 2, 7),
        part(0.25, 1, 4),
        part(0.5, 0, 5),
        part(0.25, 0, 3),
        part(0.5, 1, 6),
        part(0.75, 3, 2),
    ];
    let series = Series::open(files.clone()).unwrap();
    let frames: Vec<(&str, usize)> = series
        .frames()
        .iter()
        .map(|f| (f.name.as_str(), f.n))
        .collect();
    assert_eq!(
        frames,
        [
            ("snap_00000.2500-0", 7),
            ("snap_00000.5000-0", 18),
            ("snap_00000.7500-3", 2)
        ]
    );
    let ids = series.snapshot(1).unwrap().particles.id;
    assert_eq!(ids[..6], [0, 1, 2, 3, 4, 1000]);
    assert_eq!(ids[11..], [2000, 2001, 2002, 2003, 2004, 2005, 2006]);
    // Parts of one snapshot at different times are refused.
    let mut mixed = files;
    mixed.push((
        "snap_00000.5000-3".into(),
        Format::TipsyBonsai.encode(&snapshot(0.125, 1)).unwrap(),
    ));
    let e = Series::open(mixed).unwrap_err().to_string();
    assert!(e.contains("snap_00000.5000-3"), "{e}");
}
