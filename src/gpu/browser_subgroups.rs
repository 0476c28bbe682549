//! WebGPU's `subgroups` feature in browsers. wgpu 30's WebGPU backend has
//! no entry for it in its feature table, so it never asks a browser for it,
//! although Chrome (Dawn) offers it on most GPUs; without it the tree walk
//! takes its portable path, 3–10 % slower from N = 2^20 on an H100
//! (BENCHMARKS.md, "browser engine"). wgpu hands WGSL to the browser as it
//! is, so a device that has the feature compiles the subgroup walk. This
//! wraps `GPUAdapter.prototype.requestDevice` once (a wasm-bindgen snippet,
//! no eval) so that a device requested from an adapter with the feature
//! gets it, and says whether the last request asked for it. Not a fork of
//! wgpu: the request is wgpu's own, with one feature name added. Remove
//! once wgpu maps the feature.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
let lastAsked = false;
export function ask_for_subgroups() {
  const Adapter = globalThis.GPUAdapter;
  if (!Adapter || !Adapter.prototype || Adapter.prototype.webgravAsksForSubgroups) {
    return;
  }
  const request = Adapter.prototype.requestDevice;
  Adapter.prototype.requestDevice = function (descriptor) {
    lastAsked = !!(this.features && this.features.has("subgroups"));
    if (!lastAsked) {
      return request.call(this, descriptor);
    }
    const features = Array.from((descriptor && descriptor.requiredFeatures) || []);
    if (!features.includes("subgroups")) {
      features.push("subgroups");
    }
    return request.call(this, Object.assign({}, descriptor, { requiredFeatures: features }));
  };
  Adapter.prototype.webgravAsksForSubgroups = true;
}
export function last_device_asked_for_subgroups() {
  return lastAsked;
}
"#)]
extern "C" {
    /// Wraps `requestDevice` (once per page).
    pub fn ask_for_subgroups();
    /// Whether the last device request added `subgroups`.
    pub fn last_device_asked_for_subgroups() -> bool;
}
