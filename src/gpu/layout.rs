//! Layouts of everything that crosses the CPU/GPU line. Each struct mirrors
//! the struct of the same name in `shaders/layout.wgsl` (tests/gpu_layout.rs
//! compares the two member by member).

use bytemuck::{Pod, Zeroable};

/// The WGSL source of the shared layouts, prepended to every shader.
pub const LAYOUT_WGSL: &str = include_str!("../../shaders/layout.wgsl");

/// Threads per workgroup of the element-wise kernels (integration, ...).
pub const WORKGROUP_SIZE: u32 = 256;

/// Position (N-body length units) and mass of one particle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PosMass {
    pub pos: [f32; 3],
    pub mass: f32,
}

/// Velocity of one particle; the fourth lane is padding (16-byte stride).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Velocity {
    pub vel: [f32; 3],
    pub _pad: f32,
}

impl Velocity {
    pub fn new(vel: [f32; 3]) -> Self {
        Self { vel, _pad: 0.0 }
    }
}

/// Acceleration and potential (softened, self-interaction excluded).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct AccPot {
    pub acc: [f32; 3],
    pub pot: f32,
}

/// Uniform of the direct-summation kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DirectParams {
    pub n: u32,
    /// Plummer softening squared (N-body length units squared).
    pub eps2: f32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// Uniform of the leapfrog kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LeapfrogParams {
    pub n: u32,
    /// Velocity kick, dt/2 (N-body time units).
    pub half_dt: f32,
    /// Position drift, dt.
    pub dt: f32,
    pub _pad0: u32,
}

/// Uniform of the point renderer (`render::Camera::uniform` fills it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct CameraUniform {
    /// Column-major view-projection matrix.
    pub view_proj: [[f32; 4]; 4],
    /// Base colour (rgb) of `ColorMode::Uniform`, and per-point alpha (a),
    /// the brightness of one sprite under additive blending.
    pub color: [f32; 4],
    /// Viewport width and height (pixels); sprite diameter (pixels) at the
    /// reference depth; reference depth (clip-space w at which a sprite is
    /// that wide; 0 turns size attenuation off).
    pub viewport: [f32; 4],
    /// `render::ColorMode` as u32: 0 uniform, 1 speed, 2 potential,
    /// 3 component.
    pub color_mode: u32,
    /// The colour-mapped quantity (speed or potential, N-body units) that
    /// maps to the low end of the colour map ...
    pub value_lo: f32,
    /// ... and to the high end (lo > hi is allowed and reverses the map).
    pub value_hi: f32,
    pub _pad0: u32,
}

// --- radix sort ---

/// Uniform of one digit pass of the radix sort (`tree::sort`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SortParams {
    /// Pairs to sort.
    pub n: u32,
    /// Blocks of `tree::sort::BLOCK_KEYS` consecutive pairs: ceil(n / BLOCK_KEYS).
    pub num_blocks: u32,
    /// Bit offset of this pass's digit in the 64-bit key (0, 8, ..., 56).
    pub shift: u32,
    /// Significant bits of the digit: all RADIX_BITS, except in the top pass
    /// when `key_bits` is not a multiple of RADIX_BITS.
    pub digit_mask: u32,
}
