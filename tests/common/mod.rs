//! Helpers shared by the native integration tests.
#![allow(dead_code)]

use webgrav::gpu::GpuContext;

/// The headless GPU context (lavapipe on CI). Tests fail, not skip, when
/// there is none: the suite is meant to exercise the GPU path.
pub fn gpu() -> GpuContext {
    pollster::block_on(GpuContext::headless())
        .expect("a GPU adapter (install mesa-vulkan-drivers for lavapipe)")
}

pub mod cases;
pub mod shaders;
