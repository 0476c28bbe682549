//! The page's benchmark panel: the library's benchmarks (`app::bench`, the
//! code `webgrav bench` runs) on a GPU context of their own, each JSON
//! line handed to JavaScript as it comes, and the comparison of the page's
//! lines with a native file.

use super::js::{array, js_err, set};
use crate::app::bench::{self, Host};
use crate::gpu::{GpuContext, SubgroupUse};
use wasm_bindgen::prelude::*;

/// Runs `bench::suite(size, repeat)` and calls `on_line(text)` with each
/// JSON line; `user_agent` describes the browser in the lines. Rejects
/// with the error's message (e.g. no WebGPU, N over the device's limit).
#[wasm_bindgen(js_name = runBenchmark)]
pub async fn run_benchmark(
    size: u32,
    repeat: u32,
    user_agent: String,
    on_line: js_sys::Function,
) -> Result<(), JsValue> {
    let ctx = GpuContext::headless().await.map_err(js_err)?;
    run_specs(
        &ctx,
        &bench::suite(size as usize, repeat),
        user_agent,
        &on_line,
    )
    .await
}

/// Runs `specs` on `ctx` and calls `on_line(text)` with each JSON line;
/// `user_agent` describes the browser in the lines.
async fn run_specs(
    ctx: &GpuContext,
    specs: &[bench::BenchSpec],
    user_agent: String,
    on_line: &js_sys::Function,
) -> Result<(), JsValue> {
    let host = Host {
        kind: "browser",
        detail: user_agent,
    };
    for spec in specs {
        bench::run(ctx, spec, &host, &mut |line| {
            // A throwing callback stops nothing: the page shows the lines.
            let _ = on_line.call1(&JsValue::NULL, &line.to_string().into());
            Ok(())
        })
        .await
        .map_err(js_err)?;
    }
    Ok(())
}

/// The page's lines against a native file's: an array of `{config,
/// figure, browser, native, ratio}` (ratio = browser / native time).
/// Rejects with a message naming the bad line, or when the two have no
/// configuration in common.
#[wasm_bindgen(js_name = compareBenchmarks)]
pub fn compare_benchmarks(browser: &str, native: &str) -> Result<JsValue, JsValue> {
    let b = bench::parse_lines(browser, "this page's results").map_err(js_err)?;
    let n = bench::parse_lines(native, "the native file").map_err(js_err)?;
    let ratios = bench::compare(&b, &n).map_err(js_err)?;
    Ok(array(ratios.into_iter().map(|r| {
        let o = js_sys::Object::new();
        set(&o, "config", r.config);
        set(&o, "figure", r.figure);
        set(&o, "browser", r.browser);
        set(&o, "native", r.native);
        set(&o, "ratio", r.ratio);
        JsValue::from(o)
    }))
    .into())
}

/// Runs one configuration given as JSON in the CLI's option names
/// (`app::bench::BenchSpec::from_json`: `{"bench": "tree", "n": 1048576,
/// "alpha": 0.1}`, and `"walk": "portable"` or `"subgroups"` for the CLI's
/// `--portable` and `--subgroups`) and calls `on_line(text)` with each JSON
/// line: what the browser-engine lab (`tests/browser-engine/`) runs beside
/// the same `webgrav bench` command line. Rejects with the error's message.
#[wasm_bindgen(js_name = runBench)]
pub async fn run_bench(
    spec: String,
    user_agent: String,
    on_line: js_sys::Function,
) -> Result<(), JsValue> {
    let bad = |what: String| {
        js_err(crate::Error::InvalidParameter(format!(
            "benchmark spec: {what}"
        )))
    };
    let mut value: serde_json::Value =
        serde_json::from_str(&spec).map_err(|e| bad(e.to_string()))?;
    let walk = match value.as_object_mut().and_then(|o| o.remove("walk")) {
        None => SubgroupUse::Auto,
        Some(w) if w == "portable" => SubgroupUse::Never,
        Some(w) if w == "subgroups" => SubgroupUse::Always,
        Some(w) => {
            return Err(bad(format!(
                "walk must be \"portable\" or \"subgroups\", got {w}"
            )))
        }
    };
    let spec = bench::BenchSpec::from_json(&value).map_err(js_err)?;
    let mut ctx = GpuContext::headless().await.map_err(js_err)?;
    ctx.subgroups = walk;
    run_specs(&ctx, &[spec], user_agent, &on_line).await
}
