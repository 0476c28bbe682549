//! Shader modules and compute pipelines built once per device. Building a
//! pipeline compiles its shader (WGSL to the driver's code), which is most
//! of what setting up a solver costs: ~20 pipelines, 0.3–1.4 s, for the
//! tree on an H100 or in Chrome's engine (BENCHMARKS.md). A page that
//! starts another model, a parallel run that redraws its domains and a
//! test that builds a second solver reuse what the first built.
//!
//! The cache is per thread (wgpu's objects are not `Send` in the browser)
//! and holds the device in its keys. It serves only devices registered on
//! the thread by their `GpuContext` (`DeviceKernels`, which every clone of
//! a context shares, and which forgets its device's entries when the last
//! clone goes, so a dropped device is freed), and only while no other
//! live device there compares equal: wgpu-core tells devices apart by an
//! id that is unique within one `wgpu::Instance` only, and contexts may be
//! opened on instances of their own (`GpuContext::with_limits`). Any other
//! device builds its kernels afresh, as before the cache.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use super::timing::now_ms;

#[derive(PartialEq, Eq, Hash)]
struct ModuleKey {
    device: wgpu::Device,
    /// The whole composed source and the entry points the module keeps.
    source: String,
    entries: Vec<String>,
    /// `Debug` of the runtime checks (None: WebGPU's own).
    checks: Option<String>,
}

#[derive(PartialEq, Eq, Hash)]
struct PipelineKey {
    device: wgpu::Device,
    module: wgpu::ShaderModule,
    entry: String,
    /// Where the kernel's static binding contract lives (one address, one
    /// contract, so one bind-group layout).
    bindings: usize,
}

#[derive(Default)]
struct Cache {
    /// Contexts opened on this thread per device id (more than one: ids
    /// of two instances collide, and the cache stands aside).
    registered: HashMap<wgpu::Device, u32>,
    modules: HashMap<ModuleKey, wgpu::ShaderModule>,
    pipelines: HashMap<PipelineKey, (wgpu::ComputePipeline, wgpu::BindGroupLayout)>,
}

impl Cache {
    fn serves(&self, device: &wgpu::Device) -> bool {
        self.registered.get(device) == Some(&1)
    }

    fn forget(&mut self, device: &wgpu::Device) {
        self.modules.retain(|k, _| &k.device != device);
        self.pipelines.retain(|k, _| &k.device != device);
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    /// Wall milliseconds this thread has spent building modules and
    /// pipelines (`built`).
    static BUILD_MS: Cell<f64> = const { Cell::new(0.0) };
}

/// `build`'s result, its wall time added to this thread's `build_ms`:
/// for every module and pipeline built (the compiles a first frame waits
/// for, measured apart by `bench frame`).
pub fn built<T>(build: impl FnOnce() -> T) -> T {
    let begin = now_ms();
    let made = build();
    BUILD_MS.with(|ms| ms.set(ms.get() + now_ms() - begin));
    made
}

/// Wall milliseconds this thread has spent building modules and
/// pipelines so far.
pub fn build_ms() -> f64 {
    BUILD_MS.with(Cell::get)
}

/// The module of `entries` of `source` with `checks` on `device`, built
/// by `build` the first time it is asked for on this thread.
pub fn module(
    device: &wgpu::Device,
    (source, entries): (&str, &[&str]),
    checks: Option<String>,
    build: impl FnOnce() -> wgpu::ShaderModule,
) -> wgpu::ShaderModule {
    if !CACHE.with_borrow(|c| c.serves(device)) {
        return built(build);
    }
    let key = ModuleKey {
        device: device.clone(),
        source: source.to_string(),
        entries: entries.iter().map(|e| e.to_string()).collect(),
        checks,
    };
    if let Some(m) = CACHE.with_borrow(|c| c.modules.get(&key).cloned()) {
        return m;
    }
    // Built outside the borrow: a build never re-enters the cache, but
    // wgpu may call back (error scopes) while it compiles.
    let m = built(build);
    CACHE.with_borrow_mut(|c| c.modules.insert(key, m.clone()));
    m
}

/// The pipeline of `entry` of `module` with group 0 of the binding
/// contract `bindings` (a `'static` list, told by its address), built by
/// `build` the first time it is asked for on this thread.
pub fn pipeline<T>(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    (entry, bindings): (&str, &'static [T]),
    build: impl FnOnce() -> (wgpu::ComputePipeline, wgpu::BindGroupLayout),
) -> (wgpu::ComputePipeline, wgpu::BindGroupLayout) {
    if !CACHE.with_borrow(|c| c.serves(device)) {
        return built(build);
    }
    let key = PipelineKey {
        device: device.clone(),
        module: module.clone(),
        entry: entry.to_string(),
        bindings: bindings.as_ptr() as usize,
    };
    if let Some(p) = CACHE.with_borrow(|c| c.pipelines.get(&key).cloned()) {
        return p;
    }
    let p = built(build);
    CACHE.with_borrow_mut(|c| c.pipelines.insert(key, p.clone()));
    p
}

/// How many modules and pipelines this thread holds for `device`.
pub fn held(device: &wgpu::Device) -> (usize, usize) {
    CACHE.with_borrow(|c| {
        (
            c.modules.keys().filter(|k| &k.device == device).count(),
            c.pipelines.keys().filter(|k| &k.device == device).count(),
        )
    })
}

/// A device's share of the cache, made when its `GpuContext` is opened
/// (on the thread whose kernels it will cache): dropped with the last
/// clone of that context, it forgets the device's modules and pipelines.
pub struct DeviceKernels(wgpu::Device);

impl DeviceKernels {
    pub fn register(device: &wgpu::Device) -> Self {
        CACHE.with_borrow_mut(|c| {
            let count = c.registered.entry(device.clone()).or_insert(0);
            *count += 1;
            if *count > 1 {
                // Another instance's device has this id: neither is
                // served from here on, and what was cached may be either's.
                c.forget(device);
            }
        });
        Self(device.clone())
    }
}

impl Drop for DeviceKernels {
    fn drop(&mut self) {
        // (At a thread's exit the cache may be gone already; dropped on
        // another thread, the device is not registered there.)
        let _ = CACHE.try_with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                if let Some(count) = c.registered.get_mut(&self.0) {
                    *count -= 1;
                    if *count == 0 {
                        c.registered.remove(&self.0);
                    }
                    c.forget(&self.0);
                }
            }
        });
    }
}
