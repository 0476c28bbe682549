//! The GPU context: adapter selection, capability checks and the device.
//! Works natively (Vulkan/Metal/DX12; lavapipe on machines without a GPU)
//! and in the browser (WebGPU); nothing here depends on the platform.

use super::kernel_cache::DeviceKernels;
use crate::error::{Error, Result};

/// Largest workgroup the kernels use; an adapter must allow at least this.
const REQUIRED_WORKGROUP_INVOCATIONS: u32 = 256;
/// Workgroup memory the kernels need at most (bytes).
const REQUIRED_WORKGROUP_STORAGE: u32 = 16 * 1024;

/// The limits and features a device is asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LimitsRequest {
    /// WebGPU's defaults, raised to what the adapter offers where large N
    /// needs it, with every optional feature webgrav can use.
    #[default]
    Adapter,
    /// WebGPU's default limits exactly (128 MiB per storage binding, 16 KiB
    /// of workgroup storage, 8 storage buffers per stage, 256 invocations
    /// per workgroup) and no optional feature: the budget of a phone or an
    /// integrated GPU, which may offer no more. Natively
    /// `WEBGRAV_LIMITS=minimum` asks for it, so any command can be checked
    /// within that budget on a larger GPU.
    WebGpuMinimum,
}

impl LimitsRequest {
    /// The environment variable that chooses the request natively.
    pub const ENV: &'static str = "WEBGRAV_LIMITS";

    /// From `WEBGRAV_LIMITS` (`adapter`, the default, or `minimum`).
    pub fn from_env() -> Result<Self> {
        match std::env::var(Self::ENV).ok().as_deref() {
            None | Some("" | "adapter") => Ok(Self::Adapter),
            Some("minimum") => Ok(Self::WebGpuMinimum),
            Some(other) => Err(Error::InvalidParameter(format!(
                "{}={other}: expected `adapter` (the default) or `minimum` (WebGPU's default \
                 limits, no optional features)",
                Self::ENV
            ))),
        }
    }
}

/// Whether kernels with a subgroup fast path take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubgroupUse {
    /// Where the device allows and the kernel's own rule says it pays
    /// (the tree walk: from `tree::walk::SUBGROUP_WALK_MIN_PARTICLES`).
    Auto,
    /// Wherever the device allows (tests of the fast paths).
    Always,
    /// Never: the portable kernels (`bench --portable`, tests).
    Never,
}

/// How kernels whose amount of work only the GPU knows (the tree's levels,
/// groups and walk) are dispatched. The kernels stride over their work,
/// so both give the same results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchSizing {
    /// Indirect dispatches of the size the GPU wrote (`bench --indirect`
    /// and the tests compare it with the default).
    Indirect,
    /// A fixed number of workgroups (at most `max_workgroups`, fewer where
    /// the work can never need as many) striding over the work, with no
    /// indirect dispatch: the default. In browsers Dawn checks every
    /// indirect dispatch with a validation pass, a buffer and a bind group
    /// of its own (on an H100 about 0.1 ms of host time each, and 30 of
    /// them per tree step made the page's steps 8-10 times slower than
    /// native); natively strided steps are no slower either (1-9 % faster
    /// on an H100: BENCHMARKS.md, "browser engine").
    Strided { max_workgroups: u32 },
}

/// Most workgroups of a strided dispatch: a few per multiprocessor of the
/// largest GPUs, so that a large tree level takes a few strides and a
/// level of one cell costs an empty launch of this many (microseconds).
pub const MAX_STRIDED_WORKGROUPS: u32 = 1024;

/// The same on a CPU adapter (lavapipe), which runs a workgroup at a time
/// per core and pays each one's start (~16 µs on lavapipe): 1024 idle
/// workgroups per launch, and the walk's 4096 persistent ones, made a
/// tree step of N = 512 take 125 ms, 99 of them in the walk (31 with
/// indirect dispatches, 20 now; the native tests on lavapipe ran their
/// block steps in 49 s instead of 187).
pub const CPU_STRIDED_WORKGROUPS: u32 = 16;

impl Default for DispatchSizing {
    fn default() -> Self {
        DispatchSizing::Strided {
            max_workgroups: MAX_STRIDED_WORKGROUPS,
        }
    }
}

impl DispatchSizing {
    /// The default for an adapter of this type: strided, with fewer
    /// workgroups on a CPU.
    pub fn for_device_type(device_type: wgpu::DeviceType) -> Self {
        match device_type {
            wgpu::DeviceType::Cpu => DispatchSizing::Strided {
                max_workgroups: CPU_STRIDED_WORKGROUPS,
            },
            _ => DispatchSizing::default(),
        }
    }
}

/// Adapter, device and queue, plus what the adapter told us about itself.
/// Cloning shares the device.
#[derive(Clone)]
pub struct GpuContext {
    /// What the device was asked for (its limits: `device.limits()`).
    pub limits_request: LimitsRequest,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter_info: wgpu::AdapterInfo,
    /// Timestamp queries are available (per-phase GPU timings).
    pub has_timestamps: bool,
    /// The device has native f64 in shaders (wgpu `SHADER_F64`; never in
    /// browsers): what `--precision dp` needs.
    pub has_f64: bool,
    /// Smallest and largest subgroup size, where the device has WebGPU's
    /// `subgroups` feature (natively where the driver offers it; in a
    /// browser where it offers it, asked for around wgpu:
    /// `browser_adapter`).
    pub subgroup_sizes: Option<(u32, u32)>,
    /// When kernels with a subgroup fast path take it (where
    /// `subgroup_sizes` allows): tests and benchmarks force either path.
    pub subgroups: SubgroupUse,
    /// How GPU-sized work is dispatched (strided unless a benchmark or a
    /// test asks for indirect dispatches).
    pub dispatch_sizing: DispatchSizing,
    /// Pairwise interactions one submission may hold (see
    /// `submission_budget`); lower it to test the splitting.
    pub interactions_per_submission: f64,
    /// The device's built pipelines (`kernel_cache`), forgotten with the
    /// last clone of this context.
    _kernels: Shared<DeviceKernels>,
}

/// Shared between a context's clones (wgpu's objects are `Send` natively
/// only).
#[cfg(not(target_arch = "wasm32"))]
type Shared<T> = std::sync::Arc<T>;
#[cfg(target_arch = "wasm32")]
type Shared<T> = std::rc::Rc<T>;

/// Pairwise interactions one submission may hold so that it runs for well
/// under a second, the time after which browsers and drivers reset a
/// device that seems hung: a mid-range GPU does ~2e11 interactions/s (an
/// H100 1.8e12), a CPU adapter (lavapipe, SwiftShader) ~6e7.
pub fn submission_budget(device_type: wgpu::DeviceType) -> f64 {
    match device_type {
        wgpu::DeviceType::Cpu => 5e7,
        _ => 1e11,
    }
}

impl GpuContext {
    /// Runs `allocate`, which creates the buffers of `n` particles, with
    /// the device's errors captured: running out of memory (which binding
    /// limits cannot predict: WebGPU does not tell how much memory a card
    /// has) becomes `Error::DeviceOutOfMemory`, and anything else the
    /// device refused `Error::DeviceRefused`, instead of wgpu's uncaptured-error
    /// handler, which panics natively.
    pub async fn allocating<T>(
        &self,
        n: u64,
        allocate: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let out_of_memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let refused = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let made = allocate.await;
        let refused = refused.pop().await;
        if let Some(e) = out_of_memory.pop().await {
            return Err(Error::DeviceOutOfMemory {
                n,
                reason: format!("{e}; a smaller N fits"),
            });
        }
        if let Some(e) = refused {
            return Err(Error::DeviceRefused(e.to_string()));
        }
        made
    }

    /// Opens the highest-performance adapter and checks that it can run
    /// webgrav. With `surface`, the adapter must be able to present to it.
    pub async fn new(
        instance: &wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
    ) -> Result<Self> {
        Self::with_workgroup_limit(instance, surface, None).await
    }

    /// As `new`, with the device's limits and features chosen by `limits`.
    pub async fn with_limits(
        instance: &wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
        limits: LimitsRequest,
    ) -> Result<Self> {
        Self::open(instance, surface, None, limits).await
    }

    /// As `new`; with `max_workgroups`, the device allows at most that many
    /// workgroups per dimension of a dispatch (below the adapter's own
    /// limit: tests take the paths of N beyond 65,535 workgroups, 2-D
    /// grids and striding, with a few thousand particles).
    pub async fn with_workgroup_limit(
        instance: &wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
        max_workgroups: Option<u32>,
    ) -> Result<Self> {
        Self::open(instance, surface, max_workgroups, LimitsRequest::Adapter).await
    }

    async fn open(
        instance: &wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
        max_workgroups: Option<u32>,
        request: LimitsRequest,
    ) -> Result<Self> {
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: surface,
                apply_limit_buckets: false,
            })
            .await
            .map_err(|e| {
                Error::NoAdapter(format!(
                    "{e} (natively: install a Vulkan driver, e.g. Mesa's lavapipe; \
                     in a browser: use one with WebGPU enabled)"
                ))
            })?;
        Self::open_adapter(adapter, max_workgroups, request).await
    }

    /// Headless, on the `k`-th of the host's GPUs (counted round, so
    /// every rank of a parallel run on one host gets one by its local
    /// rank): discrete GPUs where there are any, else whatever adapters
    /// there are (lavapipe: every rank shares it).
    #[cfg(not(target_arch = "wasm32"))]
    pub async fn headless_on_gpu(k: usize) -> Result<Self> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let discrete: Vec<&wgpu::Adapter> = adapters
            .iter()
            .filter(|a| a.get_info().device_type == wgpu::DeviceType::DiscreteGpu)
            .collect();
        let Some(&adapter) = discrete.get(k % discrete.len().max(1)) else {
            return Self::headless().await;
        };
        Self::open_adapter(adapter.clone(), None, LimitsRequest::from_env()?).await
    }

    async fn open_adapter(
        adapter: wgpu::Adapter,
        max_workgroups: Option<u32>,
        request: LimitsRequest,
    ) -> Result<Self> {
        let adapter_info = adapter.get_info();
        let limits = adapter.limits();
        let insufficient = |reason: String| Error::AdapterInsufficient {
            adapter: adapter_info.name.clone(),
            reason,
        };
        if limits.max_compute_invocations_per_workgroup < REQUIRED_WORKGROUP_INVOCATIONS
            || limits.max_compute_workgroup_size_x < REQUIRED_WORKGROUP_INVOCATIONS
        {
            return Err(insufficient(format!(
                "needs {REQUIRED_WORKGROUP_INVOCATIONS} invocations per workgroup, has {}",
                limits.max_compute_invocations_per_workgroup
            )));
        }
        if limits.max_compute_workgroup_storage_size < REQUIRED_WORKGROUP_STORAGE {
            return Err(insufficient(format!(
                "needs {REQUIRED_WORKGROUP_STORAGE} bytes of workgroup memory, has {}",
                limits.max_compute_workgroup_storage_size
            )));
        }
        if limits.max_storage_buffers_per_shader_stage < 8 {
            return Err(insufficient(format!(
                "needs 8 storage buffers per shader stage, has {}",
                limits.max_storage_buffers_per_shader_stage
            )));
        }
        let minimum = request == LimitsRequest::WebGpuMinimum;
        let offered = if minimum {
            wgpu::Features::empty()
        } else {
            adapter.features()
        };
        let has_timestamps = offered.contains(wgpu::Features::TIMESTAMP_QUERY);
        let mut required_features = wgpu::Features::empty();
        if has_timestamps {
            required_features |= wgpu::Features::TIMESTAMP_QUERY;
        }
        let has_f64 = offered.contains(wgpu::Features::SHADER_F64);
        if has_f64 {
            required_features |= wgpu::Features::SHADER_F64;
        }
        let sizes = (
            adapter_info.subgroup_min_size,
            adapter_info.subgroup_max_size,
        );
        let has_subgroups = offered.contains(wgpu::Features::SUBGROUP);
        if has_subgroups {
            required_features |= wgpu::Features::SUBGROUP;
        }
        // In a browser wgpu never asks for `subgroups`, nor tells a
        // software adapter from a GPU: both from around wgpu's request
        // (`browser_adapter`).
        #[cfg(target_arch = "wasm32")]
        super::browser_adapter::wrap_request_device();
        // WebGPU defaults, raised to what the adapter offers where large N
        // needs it (buffer sizes) and the kernels can use it.
        let defaults = wgpu::Limits::default();
        let raised = if minimum { &defaults } else { &limits };
        let required_limits = wgpu::Limits {
            max_storage_buffer_binding_size: raised.max_storage_buffer_binding_size,
            max_buffer_size: raised.max_buffer_size,
            max_storage_buffers_per_shader_stage: raised.max_storage_buffers_per_shader_stage,
            max_compute_workgroup_storage_size: raised.max_compute_workgroup_storage_size,
            max_compute_workgroups_per_dimension: max_workgroups
                .map_or(raised.max_compute_workgroups_per_dimension, |m| {
                    m.clamp(1, raised.max_compute_workgroups_per_dimension)
                }),
            ..defaults
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webgrav device"),
                required_features,
                required_limits,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::DeviceRequest(e.to_string()))?;
        #[cfg(target_arch = "wasm32")]
        let has_subgroups = has_subgroups
            || (super::browser_adapter::last_device_asked_for_subgroups() && sizes.0 > 0);
        #[cfg(target_arch = "wasm32")]
        let adapter_info = if super::browser_adapter::last_adapter_is_software() {
            wgpu::AdapterInfo {
                device_type: wgpu::DeviceType::Cpu,
                ..adapter_info
            }
        } else {
            adapter_info
        };
        let subgroup_sizes = has_subgroups.then_some(sizes);
        let kernels = Shared::new(DeviceKernels::register(&device));
        Ok(Self {
            limits_request: request,
            interactions_per_submission: submission_budget(adapter_info.device_type),
            dispatch_sizing: DispatchSizing::for_device_type(adapter_info.device_type),
            device,
            queue,
            adapter_info,
            has_timestamps,
            has_f64,
            subgroup_sizes,
            subgroups: SubgroupUse::Auto,
            _kernels: kernels,
        })
    }

    /// Headless context (no surface): the CLI, benchmarks and tests.
    pub async fn headless() -> Result<Self> {
        Self::headless_with_workgroup_limit(None).await
    }

    /// Headless, allowing at most `max_workgroups` workgroups per dimension
    /// of a dispatch (`with_workgroup_limit`), with the limits
    /// `WEBGRAV_LIMITS` asks for (`LimitsRequest::from_env`).
    pub async fn headless_with_workgroup_limit(max_workgroups: Option<u32>) -> Result<Self> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        Self::open(&instance, None, max_workgroups, LimitsRequest::from_env()?).await
    }

    /// One line naming the adapter, for logs and benchmark output.
    /// Waits until the GPU has finished all work submitted so far.
    pub async fn finish(&self) -> Result<()> {
        let (tx, rx) = futures_channel::oneshot::channel();
        self.queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        // Natively this blocks until done; in the browser it returns at
        // once and the event loop completes the work.
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Readback(e.to_string()))?;
        rx.await
            .map_err(|_| Error::Readback("the GPU device was lost".into()))
    }

    /// Marks the work submitted so far; `wait_for` then returns once that
    /// work is done, without waiting for work submitted after the mark
    /// (so the host can queue more while the GPU finishes it).
    pub fn mark(&self) -> WorkMark {
        let index = self.queue.submit([]);
        let (tx, done) = futures_channel::oneshot::channel();
        self.queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        WorkMark { index, done }
    }

    /// Waits for the work before `mark` (natively by polling for its
    /// submission; in the browser the event loop completes it).
    pub async fn wait_for(&self, mark: WorkMark) -> Result<()> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(mark.index),
                timeout: None,
            })
            .map_err(|e| Error::Readback(e.to_string()))?;
        mark.done
            .await
            .map_err(|_| Error::Readback("the GPU device was lost".into()))
    }

    pub fn adapter_summary(&self) -> String {
        let i = &self.adapter_info;
        format!(
            "{} ({:?}, {:?}, driver {})",
            i.name, i.backend, i.device_type, i.driver_info
        )
    }

    /// Largest element count of a storage array with `stride`-byte elements.
    pub fn max_elements(&self, stride: u64) -> u64 {
        let l = self.device.limits();
        l.max_storage_buffer_binding_size.min(l.max_buffer_size) / stride
    }

    /// Refuses `n` particles before anything is allocated when one of the
    /// per-particle arrays (`stride` bytes each) would not fit.
    pub fn check_particle_count(&self, n: u64, stride: u64) -> Result<()> {
        if n == 0 {
            return Err(Error::InvalidParameter("N must be at least 1".into()));
        }
        let max = self.max_elements(stride);
        if n > max {
            return Err(Error::TooManyParticles {
                n,
                max,
                reason: format!(
                    "a {stride}-byte-per-particle array exceeds the {} byte storage-buffer limit",
                    self.device.limits().max_storage_buffer_binding_size
                ),
            });
        }
        Ok(())
    }
}

/// The work submitted up to a point (`GpuContext::mark`).
pub struct WorkMark {
    index: wgpu::SubmissionIndex,
    done: futures_channel::oneshot::Receiver<()>,
}

/// Workgroup counts for a 1-D launch of `threads` invocations, split over y
/// when x would exceed the per-dimension limit (see `flat_index` in WGSL).
pub fn dispatch_size(device: &wgpu::Device, threads: u32, workgroup_size: u32) -> (u32, u32) {
    let groups = threads.div_ceil(workgroup_size).max(1);
    let max_x = device.limits().max_compute_workgroups_per_dimension;
    if groups <= max_x {
        (groups, 1)
    } else {
        let y = groups.div_ceil(max_x);
        (groups.div_ceil(y), y)
    }
}
