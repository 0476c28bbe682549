//! What a browser's WebGPU adapter offers and says that wgpu 30's WebGPU
//! backend does not pass on, taken from wgpu's own device request:
//! - The `subgroups` feature. The backend has no entry for it in its
//!   feature table, so it never asks a browser for it, although Chrome
//!   (Dawn) offers it on most GPUs; without it the tree walk takes its
//!   portable path, 3–10 % slower from N = 2^20 on an H100 (BENCHMARKS.md,
//!   "browser engine"). wgpu hands WGSL to the browser as it is, so a
//!   device that has the feature compiles the subgroup walk.
//! - Whether the adapter is a software one (SwiftShader, a fallback
//!   adapter). The backend reports every adapter as `DeviceType::Other`
//!   with empty names, so the context could not size its dispatches for
//!   a CPU as it does natively on lavapipe (`DispatchSizing::for_device_type`):
//!   on SwiftShader a tree step of N = 4096 launched 1024 workgroups per
//!   strided pass and 4096 for the walk, most of them idle.
//!
//! This wraps `GPUAdapter.prototype.requestDevice` once (a wasm-bindgen
//! snippet, no eval): a device requested from an adapter with `subgroups`
//! gets the feature, and the wrapper records what it saw of the adapter.
//! Not a fork of wgpu: the request is wgpu's own, with one feature name
//! added. Remove once wgpu maps the feature and the adapter's info.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
let lastAsked = false;
let lastSoftware = false;
// GPUAdapterInfo (and the older GPUAdapter.isFallbackAdapter): Chrome's
// SwiftShader says "swiftshader", Mesa's software drivers "llvmpipe".
export function is_software(adapter) {
  if (!adapter) return false;
  const i = adapter.info || {};
  return !!(i.isFallbackAdapter || adapter.isFallbackAdapter ||
    /swiftshader|llvmpipe|lavapipe|software/i.test([i.vendor, i.architecture, i.device, i.description].join(" ")));
}
export function wrap_request_device() {
  const Adapter = globalThis.GPUAdapter;
  if (!Adapter || !Adapter.prototype || Adapter.prototype.webgravWrapsRequestDevice) {
    return;
  }
  const request = Adapter.prototype.requestDevice;
  Adapter.prototype.requestDevice = function (descriptor) {
    lastSoftware = is_software(this);
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
  Adapter.prototype.webgravWrapsRequestDevice = true;
}
export function last_device_asked_for_subgroups() {
  return lastAsked;
}
export function last_adapter_is_software() {
  return lastSoftware;
}
"#)]
extern "C" {
    /// Wraps `requestDevice` (once per page).
    pub fn wrap_request_device();
    /// Whether the last device request added `subgroups`.
    pub fn last_device_asked_for_subgroups() -> bool;
    /// Whether the adapter of the last device request is a software one.
    pub fn last_adapter_is_software() -> bool;
    /// Whether a `GPUAdapter` is a software one (the page asks before it
    /// chooses its starting model).
    pub fn is_software(adapter: &JsValue) -> bool;
}
