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
