//! Everything that talks to wgpu directly: context, buffer layouts, shader
//! composition, kernels, buffers and read-back, timestamp timing.

pub mod buffers;
pub mod context;
pub mod kernel;
pub mod layout;
pub mod shader;
pub mod timing;

pub use context::{DispatchSizing, GpuContext, SubgroupUse};
