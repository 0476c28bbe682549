//! The embedded page's allow-list of origins (`origin=`, who may drive it
//! over postMessage) and the settings the host-page API's `set` applies
//! (`Settings::changes`): parsed as a URL would be, with the same warnings.
#![cfg(not(target_arch = "wasm32"))]

use webgrav::app::embedding::{canonical_origin, Drivers};
use webgrav::app::settings::{Settings, PRESETS};

#[test]
fn origins_are_written_as_browsers_write_event_origin() {
    let ok = [
        ("https://course.example.org", "https://course.example.org"),
        ("HTTPS://Course.Example.ORG", "https://course.example.org"),
        (
            "https://course.example.org:443",
            "https://course.example.org",
        ),
        ("http://localhost:8080", "http://localhost:8080"),
        ("http://127.0.0.1:80", "http://127.0.0.1"),
        ("http://[::1]:9000", "http://[::1]:9000"),
        ("http://[::1]", "http://[::1]"),
    ];
    for (entry, canonical) in ok {
        assert_eq!(canonical_origin(entry).as_deref(), Ok(canonical), "{entry}");
    }
    for bad in [
        "course.example.org",
        "https://course.example.org/",
        "https://course.example.org/lesson",
        "https://x.org?a=1",
        "https://",
        "https://x.org:0",
        "https://x.org:99999",
        "https://x.org:8a",
        "https://a b.org",
        "1http://x.org",
        "null",
    ] {
        assert!(canonical_origin(bad).is_err(), "{bad} accepted");
    }
}

#[test]
fn the_allow_list_warns_for_what_it_cannot_use() {
    assert_eq!(Drivers::from_query("n=64"), (None, Vec::new()));
    let (d, w) = Drivers::from_query("origin=https://a.org,http://localhost:8000,https://a.org");
    assert_eq!(
        d,
        Some(Drivers::Origins(vec![
            "https://a.org".into(),
            "http://localhost:8000".into()
        ]))
    );
    assert!(w.is_empty(), "{w:?}");
    // `*` wins over a list: any origin may drive the page.
    assert_eq!(Drivers::from_query("origin=*").0, Some(Drivers::Any));
    assert_eq!(
        Drivers::from_query("origin=https://a.org,*").0,
        Some(Drivers::Any)
    );
    // A bad entry is a warning naming it; the good ones stay.
    let (d, w) = Drivers::from_query("origin=https%3A%2F%2Fa.org%2F,https://b.org");
    assert_eq!(d, Some(Drivers::Origins(vec!["https://b.org".into()])));
    assert_eq!(w.len(), 1);
    assert!(w[0].starts_with("origin=https://a.org/: a path"), "{w:?}");
    // Nothing usable: only the page's own origin may drive it.
    let (d, w) = Drivers::from_query("origin=course.example.org");
    assert_eq!(d, None);
    assert!(w[0].contains("scheme://host[:port]"), "{w:?}");
    assert_eq!(Drivers::from_query("origin=").0, None);
    // The frame's address bar gives the list back.
    let list = Drivers::Origins(vec!["https://a.org".into(), "http://b.org:81".into()]);
    assert_eq!(Drivers::from_query(&list.to_query()).0, Some(list));
}

#[test]
fn origin_is_a_known_parameter_but_not_a_setting() {
    let (s, w) = Settings::from_query("n=512&origin=https://a.org&embed=1");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(s.n, 512);
    // The link a student shares never names who may drive the page.
    assert!(!s.to_query(true).contains("origin"), "{}", s.to_query(true));
    // Nor that it was embedded: the embedded page's address adds embed=1
    // back once, and "open in webgrav" opens the full page.
    assert!(s.embed);
    assert!(!s.to_query(true).contains("embed"), "{}", s.to_query(true));
}

#[test]
fn set_applies_what_a_url_would_and_nothing_else() {
    let (changes, w) = Settings::changes("dt=0.01&n=4096");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        changes,
        vec![("n", "4096".to_string()), ("dt", "0.01".to_string())]
    );
    // A bad value is the URL's warning, and no change (not the default).
    let (changes, w) = Settings::changes("dt=fast&n=256");
    assert_eq!(changes, vec![("n", "256".to_string())]);
    assert_eq!(w, Settings::from_query("dt=fast").1);
    assert!(w[0].starts_with("dt=fast: "), "{w:?}");
    let (changes, w) = Settings::changes("warp=9");
    assert!(changes.is_empty());
    assert_eq!(w, vec!["unknown parameter 'warp'; ignored".to_string()]);
    // θ alone asks for the opening-angle MAC, as in the URL.
    let (changes, _) = Settings::changes("theta=0.5");
    assert_eq!(
        changes,
        vec![("theta", "0.5".to_string()), ("alpha", "0".to_string())]
    );
    // A preset sets its keys.
    let p = &PRESETS[0];
    let (changes, w) = Settings::changes(&format!("preset={}", p.name));
    assert!(w.is_empty(), "{w:?}");
    let (from_url, _) = Settings::from_query(p.query);
    for (k, v) in &changes {
        assert_eq!(from_url.get(k).as_ref(), Some(v), "{k}");
    }
    assert!(changes.iter().any(|(k, _)| *k == "model"));
}
