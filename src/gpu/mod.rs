//! Everything that talks to wgpu directly: context, buffer layouts, shader
//! composition, kernels, buffers and read-back, timestamp timing.

#[cfg(target_arch = "wasm32")]
pub mod browser_adapter;
pub mod buffers;
pub mod context;
pub mod ds;
pub mod kernel;
pub mod kernel_cache;
pub mod layout;
pub mod shader;
pub mod timing;

pub use context::{DispatchSizing, GpuContext, LimitsRequest, SubgroupUse};
