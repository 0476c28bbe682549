//! JavaScript conversions of the browser front end: errors with a `kind`,
//! plain objects of settings, presets and read-outs, and the functions the
//! page calls before it has an app (`parseSettings`, `parseChanges`,
//! `catalog`, `seriesIndexFiles`, `hdf5Snapshot`, `version`).

use crate::app::analysis::{galaxy_readout, GalaxyReadout};
use crate::app::embedding::Drivers;
use crate::app::series::index_times;
use crate::app::settings::{self, Settings, Sources, PRESETS};
use crate::render::{ColorMode, ComponentTags};
use crate::run::params::Kind;
use crate::run::SolverKind;
use crate::state::{Model, Particles};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
// Resolves once the frame drawn before the call is on screen: an
// animation frame, then a task posted from it (after its paint; a message
// is neither clamped nor deferred as a timeout may be). At once in a
// hidden page, which paints nothing, and after 200 ms at most where no
// animation frames come.
export function after_paint() {
  return new Promise((resolve) => {
    const hidden = typeof document !== "undefined" && document.visibilityState === "hidden";
    if (hidden || typeof requestAnimationFrame !== "function") return resolve();
    const timer = setTimeout(resolve, 200);
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        clearTimeout(timer);
        resolve();
      };
      channel.port2.postMessage(null);
    });
  });
}
"#)]
extern "C" {
    fn after_paint() -> js_sys::Promise;
}

/// Waits until what was drawn so far has been painted: work that holds
/// the page's thread after it (compiling a solver's kernels) no longer
/// keeps it off the screen.
pub(super) async fn painted() {
    // The promise never rejects.
    let _ = wasm_bindgen_futures::JsFuture::from(after_paint()).await;
}

/// A JavaScript `Error` with a `kind` property.
pub(super) fn typed_error(kind: &str, message: impl std::fmt::Display) -> JsValue {
    let e = js_sys::Error::new(&message.to_string());
    set(&e, "kind", kind);
    e.into()
}

pub(super) fn js_err(e: crate::Error) -> JsValue {
    typed_error(e.kind(), e)
}

pub(super) fn superseded() -> JsValue {
    typed_error(
        "superseded",
        "the run was replaced meanwhile; nothing was applied",
    )
}

pub(super) fn set(obj: &js_sys::Object, key: &str, value: impl Into<JsValue>) {
    // Setting a property on a fresh object cannot fail.
    let _ = js_sys::Reflect::set(obj, &key.into(), &value.into());
}

pub(super) fn array<T: Into<JsValue>>(items: impl IntoIterator<Item = T>) -> js_sys::Array {
    items.into_iter().map(Into::into).collect()
}

/// Settings as a plain object of URL-style strings.
pub(super) fn values_object(s: &Settings) -> js_sys::Object {
    let obj = js_sys::Object::new();
    for (k, v) in s.pairs() {
        set(&obj, k, v);
    }
    obj
}

/// `base` with every known key of the plain object `values` applied; the
/// first bad value is the error.
pub(super) fn settings_from_object(base: &Settings, values: &JsValue) -> Result<Settings, JsValue> {
    let mut s = *base;
    for key in settings::keys() {
        let v = js_sys::Reflect::get(values, &JsValue::from_str(key))?;
        if v.is_undefined() || v.is_null() {
            continue;
        }
        let text = v.as_string().unwrap_or_else(|| {
            v.as_f64()
                .map(|x| x.to_string())
                .or_else(|| v.as_bool().map(|b| if b { "1" } else { "0" }.to_string()))
                .unwrap_or_default()
        });
        if s.get(key).as_deref() != Some(text.as_str()) {
            s.set(key, &text)
                .map_err(|e| typed_error("invalid-parameter", e))?;
        }
    }
    Ok(s)
}

/// Parses a URL query: `{values, warnings, embed, autoplay, camera_given,
/// preset, sources, origin}`, `values` holding every setting (defaults where
/// the query is silent) as strings, `sources` the files to open
/// (`{snapshots, series, fallback, query}`, see `settings::Sources`),
/// `origin` who may drive the page (`{any, list, query}`, null without
/// `origin=`; see `embedding::Drivers`).
#[wasm_bindgen(js_name = parseSettings)]
pub fn parse_settings(query: &str) -> JsValue {
    let (s, mut warnings) = Settings::from_query(query);
    let (sources, refused) = Sources::from_query(query);
    warnings.extend(refused);
    let out = js_sys::Object::new();
    set(&out, "values", values_object(&s));
    set(
        &out,
        "given",
        array(Settings::given_keys(query).iter().map(String::as_str)),
    );
    let files = js_sys::Object::new();
    set(
        &files,
        "snapshots",
        array(sources.snapshots.iter().map(String::as_str)),
    );
    set(
        &files,
        "series",
        array(sources.series.iter().map(String::as_str)),
    );
    set(
        &files,
        "fallback",
        sources
            .fallback
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from),
    );
    set(&files, "query", sources.to_query());
    set(&out, "sources", files);
    let (drivers, refused) = Drivers::from_query(query);
    warnings.extend(refused);
    let origin = drivers.map_or(JsValue::NULL, |d| {
        let o = js_sys::Object::new();
        set(&o, "any", d == Drivers::Any);
        let list = match &d {
            Drivers::Any => Vec::new(),
            Drivers::Origins(list) => list.clone(),
        };
        set(&o, "list", array(list));
        set(&o, "query", d.to_query());
        o.into()
    });
    set(&out, "origin", origin);
    set(&out, "warnings", array(warnings));
    set(&out, "embed", s.embed);
    set(&out, "autoplay", s.autoplay);
    set(&out, "camera_given", s.camera_given);
    let named = settings::parse_query(query)
        .into_iter()
        .find(|(k, _)| k == "preset")
        .and_then(|(_, name)| settings::preset(&name));
    set(
        &out,
        "preset",
        named.map_or(JsValue::NULL, |p| preset_object(p).into()),
    );
    out.into()
}

/// The settings a query changes on a running page (`Settings::changes`):
/// `{values, warnings}`, `values` only the keys it set, as strings.
#[wasm_bindgen(js_name = parseChanges)]
pub fn parse_changes(query: &str) -> JsValue {
    let (changes, warnings) = Settings::changes(query);
    let values = js_sys::Object::new();
    for (k, v) in changes {
        set(&values, k, v);
    }
    let out = js_sys::Object::new();
    set(&out, "values", values);
    set(&out, "warnings", array(warnings));
    out.into()
}

/// The version of webgrav (the host-page API's `ready` event names it).
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The files a series index (`index.json`, its text) lists, in its
/// order; `path` names it in errors.
#[wasm_bindgen(js_name = seriesIndexFiles)]
pub fn series_index_files(text: &str, path: &str) -> Result<js_sys::Array, JsValue> {
    let times = index_times(text, path).map_err(js_err)?;
    Ok(array(times.into_iter().map(|(file, _)| file)))
}

/// An HDF5 snapshot's particles as the page read them with h5wasm
/// (`www/hdf5.js`: `counts` rows of each type 0…5, in type order; three
/// values a row for positions and velocities), checked as the native
/// reader checks them (`snapshot::hdf5::Arrays`), returned as a Gadget-2
/// file's bytes, which hold every value exactly (64-bit ids, kinds, f32
/// values, the time) and which the page then opens as it opens any
/// snapshot.
#[wasm_bindgen(js_name = hdf5Snapshot)]
pub fn hdf5_snapshot(
    name: &str,
    time: f64,
    counts: Vec<u32>,
    ids: Vec<u64>,
    pos: Vec<f32>,
    vel: Vec<f32>,
    mass: Vec<f32>,
) -> Result<Vec<u8>, JsValue> {
    use crate::snapshot::{gadget, hdf5};
    if counts.len() != hdf5::TYPES {
        return Err(typed_error("bad-input", "one count per particle type 0…5"));
    }
    let arrays = hdf5::Arrays {
        time,
        counts: std::array::from_fn(|t| counts[t] as usize),
        ids,
        pos,
        vel,
        mass,
        potential: None,
    };
    let snap = arrays.into_snapshot(name).map_err(js_err)?;
    Ok(gadget::encode(&snap))
}

/// `{name, title, caption}` of a preset.
fn preset_object(p: &settings::Preset) -> js_sys::Object {
    let o = js_sys::Object::new();
    set(&o, "name", p.name);
    set(&o, "title", p.title);
    set(&o, "caption", p.caption);
    o
}

/// What the controls offer: `{models, solvers, colors, presets: [{name,
/// title, caption}], params: [{key, label, kind, min, max, choices, default,
/// solvers, models}]}`; `params` is the settings table (`solvers` or
/// `models` empty: every solver or model), so the page shows a control
/// only where it applies.
#[wasm_bindgen]
pub fn catalog() -> JsValue {
    let out = js_sys::Object::new();
    set(&out, "models", array(Model::ALL.iter().map(|m| m.name())));
    set(
        &out,
        "solvers",
        array(SolverKind::ALL.iter().map(|s| s.name())),
    );
    set(
        &out,
        "colors",
        array(ColorMode::ALL.iter().map(|c| c.name())),
    );
    let presets = PRESETS.iter().map(preset_object);
    set(&out, "presets", array(presets));
    let params = settings::params().map(|p| {
        let o = js_sys::Object::new();
        set(&o, "key", p.key);
        set(&o, "label", p.label);
        set(&o, "default", p.default);
        set(&o, "solvers", array(p.solvers.iter().map(|s| s.name())));
        set(&o, "models", array(p.models.iter().map(|m| m.name())));
        let kind = match p.kind {
            Kind::Choice(_) => "choice",
            Kind::Number(r) => {
                set(&o, "min", r.min);
                set(&o, "max", r.max);
                "number"
            }
            Kind::Whole { min, max } => {
                set(&o, "min", min as f64);
                set(&o, "max", max as f64);
                "whole"
            }
            Kind::Flag => "flag",
        };
        set(&o, "kind", kind);
        set(&o, "choices", array(p.choices()));
        o
    });
    set(&out, "params", array(params));
    out.into()
}

/// Every lesson (`app::lessons`) as the JSON of its file, in an array in
/// the page's order.
#[wasm_bindgen(js_name = lessonsJson)]
pub fn lessons_json() -> Result<String, JsValue> {
    let all = crate::app::lessons::all().map_err(|e| JsValue::from_str(&e))?;
    serde_json::to_string(&all).map_err(|e| JsValue::from_str(&e.to_string()))
}

/// Sets what a state's particles show of its structure, for the run's
/// read-outs and the series' frames alike: `lagrangian` (the radii at
/// `LAGRANGIAN_FRACTIONS`) and, for galaxies, `galaxy`.
pub(super) fn set_structure(
    obj: &js_sys::Object,
    p: &Particles,
    radii: Vec<f64>,
    components: &ComponentTags,
) {
    set(obj, "lagrangian", array(radii));
    if !components.by_shells {
        let g = galaxy_readout(
            p,
            |k| components.is(k, "disk"),
            |k| components.is(k, "halo"),
        );
        set(obj, "galaxy", galaxy_object(&g));
    }
}

/// `{rotation_curve: [[r, v_c], ...], without_halo: [[r, v_c], ...],
/// bar_a2, bh_separation}` of a galaxy
/// (null where it has no disk or no two black holes).
pub(super) fn galaxy_object(g: &GalaxyReadout) -> js_sys::Object {
    let galaxy = js_sys::Object::new();
    let pairs = |c: &[[f64; 2]]| {
        array(
            c.iter()
                .map(|&[r, v]| js_sys::Array::of2(&r.into(), &v.into()))
                .collect::<Vec<_>>(),
        )
    };
    set(&galaxy, "rotation_curve", pairs(&g.rotation_curve));
    set(&galaxy, "without_halo", pairs(&g.without_halo));
    set(
        &galaxy,
        "bar_a2",
        g.bar_a2.map_or(JsValue::NULL, JsValue::from),
    );
    set(
        &galaxy,
        "bh_separation",
        g.bh_separation.map_or(JsValue::NULL, JsValue::from),
    );
    galaxy
}

pub(super) fn norm3(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Whether a `GPUAdapter` is a software one (SwiftShader, a fallback
/// adapter): the page then starts from `softwareStart`'s defaults. The
/// same test the GPU context makes of the adapter it runs on.
#[wasm_bindgen(js_name = isSoftwareAdapter)]
pub fn is_software_adapter(adapter: JsValue) -> bool {
    crate::gpu::browser_adapter::is_software(&adapter)
}

/// The settings `values` (as `parseSettings` gives them) for a software
/// adapter: the page's software defaults (`settings::SOFTWARE_DEFAULTS`)
/// where the URL (`given`, its keys) chose neither the solver nor N.
/// Returns `{ values, changed }`, `changed` as "key = value" strings.
#[wasm_bindgen(js_name = softwareStart)]
pub fn software_start(values: JsValue, given: js_sys::Array) -> Result<JsValue, JsValue> {
    let mut s = settings_from_object(&Settings::default(), &values)?;
    let given: Vec<String> = given.iter().filter_map(|k| k.as_string()).collect();
    let changed = s.apply_software_defaults(&given);
    let out = js_sys::Object::new();
    set(&out, "values", values_object(&s));
    set(&out, "changed", array(changed.iter().map(String::as_str)));
    Ok(out.into())
}
