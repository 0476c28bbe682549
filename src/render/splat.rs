//! The splat passes (drive `shaders/splat.wgsl`): particles counted per
//! cell of the view (for adaptive smoothing), then each adds its light or
//! its mass to the pixels its sprite covers.

use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};

const SPLAT_WGSL: &str = include_str!("../../shaders/splat.wgsl");

/// The composed WGSL of the splat pass.
pub fn wgsl() -> String {
    super::compose(SPLAT_WGSL)
}

/// The binding contract of `shaders/splat.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("camera", Binding::Uniform),
    ("styles", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("acc_pot", Binding::StorageRead),
    ("id", Binding::StorageRead),
    ("tags", Binding::StorageRead),
    ("accum", Binding::StorageReadWrite),
    ("markers", Binding::StorageReadWrite),
    ("cells", Binding::StorageReadWrite),
];

pub(crate) struct Splat {
    pub count: Kernel,
    pub splat: Kernel,
}

impl Splat {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = ShaderSource::new("render splat", wgsl());
        Self {
            count: Kernel::from_module(device, "render count", &module, "count", BINDINGS),
            splat: Kernel::from_module(device, "render splat", &module, "splat", BINDINGS),
        }
    }
}
