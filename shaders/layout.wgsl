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
    // |a| of the tree's last force on this particle (0: none yet).
    last_acc: f32,
}

// Acceleration and (softened, self-excluded) potential of one particle.
struct AccPot {
    acc: vec3<f32>,
    pot: f32,
}

// Parameters of the model generator (src/state/generate.rs).
struct GenerateParams {
    // The model's stream key, low and high words.
    key_lo: u32,
    key_hi: u32,
    // First particle of this piece, and how many.
    first: u32,
    count: u32,
    mass: f32,
    // 1: velocities zero (cold collapse).
    at_rest: u32,
    mass_cut: f32,
    scale_radius: f32,
    // Nodes of each column of a galaxy component's table.
    nodes: u32,
    // A spheroid's radius below its first node: enclosed mass to this power.
    inner_exponent: f32,
    // Mass of the whole model (Psi = M/r beyond the grid).
    total_mass: f32,
    // The speeds' rejection bound beyond the table's deepest energy.
    bound_beyond: f32,
    // A disk's scale length, scale height and edge.
    scale_length: f32,
    scale_height: f32,
    max_radius: f32,
    // Spacing in R of the disk's moment table (node i at (i + 1/2) of it).
    spacing: f32,
    // Index of the dispatch's particle 0 in the arrays (a galaxy's
    // component sampled in place), and the tag `place` writes.
    dst: u32,
    tag: u32,
    _pad0: u32,
    _pad1: u32,
}

// Parameters of the exact potential-energy kernel (src/state/energy.rs).
struct EnergyParams {
    n: u32,
    // The sources of this dispatch: src_count from src_first on.
    src_first: u32,
    src_count: u32,
    // The sinks: `sinks` sources from `sink_first` on.
    sink_first: u32,
    sinks: u32,
    // Softening squared as a double-single pair.
    eps2_hi: f32,
    eps2_lo: f32,
    // 1.0 from memory: the reassociation guard of ds.wgsl.
    one: f32,
}

// Parameters of one force evaluation with the direct kernel.
struct DirectParams {
    // Number of particles that are sources (j) and sinks (i).
    n: u32,
    // Plummer softening squared.
    eps2: f32,
    // First workgroup (sink block) of this dispatch.
    first_group: u32,
    _pad1: u32,
}

// Uniform of the input-order kernels (src/state/input_order.rs): the
// particles, and the piece of input positions `gather` copies.
struct InputOrderParams {
    n: u32,
    first: u32,
    count: u32,
    _pad0: u32,
}

// Uniform of the diagnostics' sums on the GPU (src/state/diagnostics.rs).
struct DiagnosticsParams {
    n: u32,
    // 1.0, opaque to the shader compiler (ds.wgsl's guard).
    one: f32,
    _pad0: u32,
    _pad1: u32,
}

// Parameters of the view's kernels on a state held on the GPU
// (src/render/view_sample.rs).
struct ViewSampleParams {
    n: u32,
    // Particles the sample gathers, and whether with their forces (1).
    picked: u32,
    forces: u32,
    // Whether the sample takes the particles' ids (1); the ids `find`
    // looks for.
    with_ids: u32,
    wanted: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    // The mass shells' centre, and their edges as squared radii (w unused).
    centre: vec4<f32>,
    edges: vec4<f32>,
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

// Parameters of the block-step kernels, one slot per sub-step
// (src/run/block.rs).
struct BlockParams {
    n: u32,
    // Depth L of the hierarchy: level k steps by dt_max / 2^k, k <= L.
    levels: u32,
    // This sub-step's time within the largest step, in smallest steps.
    substep: u32,
    walk_workgroups: u32,
    // The largest step.
    dt_max: f32,
    // 2 eta eps: a particle wants the step sqrt(2 eta eps / |a|).
    two_eta_eps: f32,
    _pad0: u32,
    _pad1: u32,
}

// Counters of the block-step kernels (src/run/block.rs).
struct BlockCounters {
    // Groups with an active particle in this sub-step's walk list.
    active_groups: atomic<u32>,
    // The deepest level any particle is on: the next sub-step on which a
    // step ends is the next multiple of 2^(L - deepest).
    deepest: atomic<u32>,
    // Sub-steps on which some particle's step ended (the tree worked) and
    // on which none did.
    busy_substeps: u32,
    idle_substeps: u32,
    // Particles the walk took on the sub-steps before a largest step's
    // last (those of the active groups) and the active ones among them
    // (wrapping sums: read differences).
    walked_particles: atomic<u32>,
    active_particles: atomic<u32>,
}

// Camera and colouring of the splat pass (src/render/camera.rs).
struct CameraUniform {
    view_proj: mat4x4<f32>,
    // Viewport width and height (pixels), sprite diameter (pixels) at the
    // reference depth, reference depth (clip w; 0: no size attenuation).
    viewport: vec4<f32>,
    // Colour of the uniform colour mode.
    color: vec3<f32>,
    // Fixed-point units one unit of weight adds to the accumulation.
    unit_scale: f32,
    // 0 uniform, 1 speed, 2 potential, 3 component.
    color_mode: u32,
    // Value of the colour-mapped quantity at the low and the high end of the
    // colour map (lo > hi reverses it).
    value_lo: f32,
    value_hi: f32,
    // Bit t set: particles of component tag t (< 32) are not drawn.
    hidden_tags: u32,
    // Bit t set: particles of tag t are marked with a ring, not lit.
    marked_tags: u32,
    // 0 light (a picture), 1 mass (a surface-density map).
    quantity: u32,
    n: u32,
    // Largest sprite radius (pixels).
    max_radius: f32,
    // A sprite's radius is at least this many times the mean spacing of the
    // particles drawn about it (0: off).
    smoothing: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Colour and light per unit mass of one component tag.
struct TagStyle {
    color: vec3<f32>,
    light: f32,
}

// Exposure and tone mapping (src/render/exposure.rs, tonemap.rs).
struct ToneUniform {
    width: u32,
    height: u32,
    // 0 light, 1 mass.
    quantity: u32,
    // The white point is divided by it (the page's brightness slider).
    bias: f32,
    // Quantiles of the lit pixels that set the faint end and the top.
    lo_quantile: f32,
    hi_quantile: f32,
    // A given range (units) instead of the measured one, where fixed_hi > 0.
    fixed_lo: f32,
    fixed_hi: f32,
    // 0 light on black, 1 ink on white.
    paper: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// What the exposure pass measured of a frame (accumulation units).
struct Exposure {
    lo: f32,
    hi: f32,
    lit: u32,
    top: f32,
}

// Flat invocation index of a 1-D launch that may be split over the y
// dimension because of the 65535-workgroups-per-dimension limit.
fn flat_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WORKGROUP_SIZE + lid;
}

// ceil(a / b) for b > 0 (a + b - 1 below 2^32): tiles or trips of b that
// cover a. Loops over such a count step by 1 to a bound set before them,
// which Tint (a browser's compiler) knows to end: a loop stepping by b
// gets a trip counter of its own, checked on every trip.
fn div_ceil(a: u32, b: u32) -> u32 {
    return (a + b - 1u) / b;
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

// --- direct/hermite ---

// A j-particle (source) as of its last correction at t0 (src/gpu/layout.rs
// JParticle): position and t0 double-single (hi + lo), the rest f32.
struct JParticle {
    pos_hi: vec3<f32>,
    mass: f32,
    pos_lo: vec3<f32>,
    // Compared with IParticle.id (self pair), returned as nearest neighbour.
    id: u32,
    vel: vec3<f32>,
    t0_hi: f32,
    acc: vec3<f32>,
    t0_lo: f32,
    jerk: vec3<f32>,
    // The velocity's double-single remainder, x, y, z (read by the f64
    // predictor of --precision dp).
    vel_lo_x: f32,
    snap: vec3<f32>,
    vel_lo_y: f32,
    crackle: vec3<f32>,
    vel_lo_z: f32,
    // Double-single remainders of acc, jerk and snap (--precision dp).
    acc_lo: vec3<f32>,
    // The mass's double-single remainder (--precision dp).
    mass_lo: f32,
    jerk_lo: vec3<f32>,
    _pad1: f32,
    snap_lo: vec3<f32>,
    _pad2: f32,
}

// A j-particle predicted to the evaluation time.
struct PredJ {
    pos_hi: vec3<f32>,
    mass: f32,
    pos_lo: vec3<f32>,
    id: u32,
    vel: vec3<f32>,
    // The mass's double-single remainder (--precision dp).
    mass_lo: f32,
    acc: vec3<f32>,
    _pad1: u32,
    // The velocity's double-single remainder (--precision dp; else zero).
    vel_lo: vec3<f32>,
    _pad2: u32,
}

// An i-particle (sink), predicted to the evaluation time.
struct IParticle {
    pos_hi: vec3<f32>,
    // Sources with this id are skipped.
    id: u32,
    pos_lo: vec3<f32>,
    // Neighbour radius squared.
    h2: f32,
    vel: vec3<f32>,
    _pad0: u32,
    acc: vec3<f32>,
    _pad1: u32,
    // The velocity's double-single remainder (read by --precision dp).
    vel_lo: vec3<f32>,
    _pad2: u32,
}

// Force on one sink (or one split's partial sum): acc, pot, jerk, snap
// double-single, nearest neighbour (d2 unsoftened, id).
struct ForceResult {
    acc_hi: vec3<f32>,
    pot_hi: f32,
    acc_lo: vec3<f32>,
    pot_lo: f32,
    jerk_hi: vec3<f32>,
    nn_d2: f32,
    jerk_lo: vec3<f32>,
    nn_id: u32,
    snap: vec3<f32>,
    _pad0: u32,
    snap_lo: vec3<f32>,
    _pad1: u32,
}

// Uniform of predict.wgsl, hermite_force.wgsl and neighbours.wgsl.
struct HermiteParams {
    ni: u32,
    nj: u32,
    // Sources per split of the j-range (multiple of the tile).
    chunk: u32,
    nsplit: u32,
    // Records between the partial sums of two splits.
    ni_stride: u32,
    // Updated j-particles to scatter before predicting.
    n_update: u32,
    eps2: f32,
    // 1.0 at run time: guards double-single error terms (see ds.wgsl).
    one: f32,
    // Evaluation time, double-single.
    t_hi: f32,
    t_lo: f32,
    // eps2 + eps2_lo: the softening to ~2^-48 (--precision dp).
    eps2_lo: f32,
    // Invocations per sink of the reduce (a power of two).
    reduce_lanes: u32,
    // Invocations per sink of the force (1: force; 2..RW: force_lanes).
    sink_lanes: u32,
}
