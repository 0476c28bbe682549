//! Composition of WGSL modules: Rust constants first, then the shared
//! layouts, then the kernel's own file, so every constant is defined once in
//! Rust and every layout once in `shaders/layout.wgsl`.

use super::layout::{LAYOUT_WGSL, WORKGROUP_SIZE};

/// Full WGSL source of a kernel: `consts` become `const NAME: u32 = V;`.
pub fn compose(consts: &[(&str, u32)], body: &str) -> String {
    let mut src = format!("const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n");
    for (name, value) in consts {
        src.push_str(&format!("const {name}: u32 = {value}u;\n"));
    }
    src.push_str(LAYOUT_WGSL);
    src.push('\n');
    src.push_str(body);
    src
}

/// Every composed shader of the crate, by name: what tests validate.
pub fn all() -> Vec<(&'static str, String)> {
    use crate::direct::hermite_force::{self, Order, Precision};
    vec![
        ("direct", crate::direct::wgsl()),
        (
            "direct unsoftened",
            crate::direct::wgsl_for(Default::default(), false),
        ),
        ("leapfrog", crate::sim::leapfrog::wgsl()),
        ("render", crate::render::wgsl()),
        ("bbox", crate::tree::bbox::wgsl()),
        ("keys", crate::tree::keys::wgsl()),
        ("sort", crate::tree::sort::wgsl()),
        ("reorder", crate::tree::reorder::wgsl()),
        ("build", crate::tree::build::wgsl()),
        ("properties", crate::tree::properties::wgsl()),
        ("groups", crate::tree::groups::wgsl()),
        ("walk", crate::tree::walk::wgsl()),
        ("predict", crate::direct::predict::wgsl()),
        ("neighbours", crate::direct::neighbours::wgsl()),
        (
            "hermite_force o2 f32",
            hermite_force::wgsl(Order::Two, Precision::F32),
        ),
        (
            "hermite_force o4 f32",
            hermite_force::wgsl(Order::Four, Precision::F32),
        ),
        (
            "hermite_force o6 f32",
            hermite_force::wgsl(Order::Six, Precision::F32),
        ),
        (
            "hermite_force o2 ds",
            hermite_force::wgsl(Order::Two, Precision::Ds),
        ),
        (
            "hermite_force o4 ds",
            hermite_force::wgsl(Order::Four, Precision::Ds),
        ),
        (
            "hermite_force o6 ds",
            hermite_force::wgsl(Order::Six, Precision::Ds),
        ),
    ]
}
