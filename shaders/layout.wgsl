// Buffer layouts shared by every webgrav shader.
// Mirrors src/gpu/layout.rs field for field; tests/gpu_layout.rs fails if the
// two drift apart. Constants such as WORKGROUP_SIZE are prepended by
// src/gpu/shader.rs from the Rust definitions, so they exist once.

// Position and mass of one particle (N-body units).
struct PosMass {
    pos: vec3<f32>,
    mass: f32,
}

// Velocity of one particle; w is padding so the array stride is 16 bytes.
struct Velocity {
    vel: vec3<f32>,
    _pad: f32,
}

// Acceleration and (softened, self-excluded) potential of one particle.
struct AccPot {
    acc: vec3<f32>,
    pot: f32,
}

// Parameters of one force evaluation with the direct kernel.
struct DirectParams {
    // Number of particles that are sources (j) and sinks (i).
    n: u32,
    // Plummer softening squared.
    eps2: f32,
    _pad0: u32,
    _pad1: u32,
}

// Parameters of the leapfrog kernels.
struct LeapfrogParams {
    n: u32,
    // Velocity kick: dt / 2.
    half_dt: f32,
    // Position drift: dt.
    dt: f32,
    _pad0: u32,
}

// Camera and colouring of the point renderer (src/render/camera.rs).
struct CameraUniform {
    view_proj: mat4x4<f32>,
    // Base colour (rgb) of the uniform colour mode; per-point alpha (a) for
    // additive blending.
    color: vec4<f32>,
    // Viewport width and height (pixels), sprite diameter (pixels) at the
    // reference depth, reference depth (clip w; 0: no size attenuation).
    viewport: vec4<f32>,
    // 0 uniform, 1 speed, 2 potential, 3 component.
    color_mode: u32,
    // Value of the colour-mapped quantity at the low and the high end of the
    // colour map (lo > hi reverses it).
    value_lo: f32,
    value_hi: f32,
    _pad0: u32,
}

// Flat invocation index of a 1-D launch that may be split over the y
// dimension because of the 65535-workgroups-per-dimension limit.
fn flat_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WORKGROUP_SIZE + lid;
}

// --- radix sort ---

// Parameters of one digit pass of the radix sort (src/tree/sort.rs).
struct SortParams {
    // Pairs to sort.
    n: u32,
    // Blocks of BLOCK_KEYS consecutive pairs: ceil(n / BLOCK_KEYS).
    num_blocks: u32,
    // Bit offset of this pass's digit in the 64-bit key (0, 8, ..., 56).
    shift: u32,
    // Significant bits of the digit (the top pass may use fewer than all).
    digit_mask: u32,
}
