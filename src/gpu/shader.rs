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
