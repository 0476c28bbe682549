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

/// Velocity of one particle, and in the fourth lane the magnitude of the
/// last acceleration the tree computed for it (0 before any), which the
/// tree's acceleration MAC reads as |a_old| (it travels with the particle
/// when the tree reorders the state).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Velocity {
    pub vel: [f32; 3],
    pub last_acc: f32,
}

impl Velocity {
    pub fn new(vel: [f32; 3]) -> Self {
        Self { vel, last_acc: 0.0 }
    }
}

/// Acceleration and potential (softened, self-interaction excluded).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct AccPot {
    pub acc: [f32; 3],
    pub pot: f32,
}

/// Uniform of the input-order kernels (`shaders/input_order.wgsl`): the
/// particles, and the piece of input positions `gather` copies.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct InputOrderParams {
    pub n: u32,
    pub first: u32,
    pub count: u32,
    pub _pad0: u32,
}

/// Uniform of the diagnostics' sums on the GPU
/// (`state::diagnostics::GpuDiagnostics`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DiagnosticsParams {
    pub n: u32,
    /// 1.0, opaque to the shader compiler (see `shaders/ds.wgsl`).
    pub one: f32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// Uniform of the view's kernels on a state held on the GPU
/// (`render::view_sample`): the particles, how many a sample gathers
/// (with their forces where `forces` is 1), and the mass shells' centre
/// and squared edges (`w` unused).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ViewSampleParams {
    pub n: u32,
    pub picked: u32,
    pub forces: u32,
    /// 1: the sample takes each particle's id (`ViewSample::id`).
    pub with_ids: u32,
    /// Particles `find` looks for by id.
    pub wanted: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
    pub centre: [f32; 4],
    pub edges: [f32; 4],
}

/// Uniform of the direct-summation kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DirectParams {
    pub n: u32,
    /// Plummer softening squared (N-body length units squared).
    pub eps2: f32,
    /// First workgroup (sink block) of this dispatch: an evaluation split
    /// into several submissions dispatches its blocks in ranges.
    pub first_group: u32,
    pub _pad1: u32,
}

/// Uniform of the exact potential-energy kernel (`shaders/energy.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct EnergyParams {
    pub n: u32,
    /// The sources of this dispatch: `src_count` from `src_first` on.
    pub src_first: u32,
    pub src_count: u32,
    /// The sinks: `sinks` sources from `sink_first` on.
    pub sink_first: u32,
    pub sinks: u32,
    /// ε² as a double-single pair.
    pub eps2_hi: f32,
    pub eps2_lo: f32,
    /// 1.0, opaque to the shader compiler (see `shaders/ds.wgsl`).
    pub one: f32,
}

/// Uniform of the model generator (`shaders/generate.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GenerateParams {
    /// The model's stream key (`state::rng::stream_key`), low and high
    /// words: the GPU derives each particle's stream from it as
    /// `Rng::for_particle` does.
    pub key_lo: u32,
    pub key_hi: u32,
    /// The first particle of this piece, and how many.
    pub first: u32,
    pub count: u32,
    /// Mass of every particle.
    pub mass: f32,
    /// 1: every velocity zero (the cold collapse; the streams are drawn
    /// as for the Plummer sphere).
    pub at_rest: u32,
    /// `state::plummer`'s mass cut and scale radius.
    pub mass_cut: f32,
    pub scale_radius: f32,
    /// Nodes of each column of the galaxy component's table.
    pub nodes: u32,
    /// A spheroid's radius below its first node goes as the enclosed mass
    /// to this power (1/(3 + the inner density slope)).
    pub inner_exponent: f32,
    /// Mass of the whole model (Ψ = M/r beyond the grid).
    pub total_mass: f32,
    /// The speeds' rejection bound beyond the table's deepest energy.
    pub bound_beyond: f32,
    /// A disk's scale length, scale height and edge.
    pub scale_length: f32,
    pub scale_height: f32,
    pub max_radius: f32,
    /// Spacing in R of the disk's moment table (node i at (i + ½) of it).
    pub spacing: f32,
    /// Index in the arrays of the dispatch's particle 0: a galaxy's
    /// component sampled in place in the whole model's arrays
    /// (`generate::Gpu::resident`); 0 elsewhere.
    pub dst: u32,
    /// The tag `place` writes for its particles.
    pub tag: u32,
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

/// Counters of the block-step kernels (`run/block.rs`, `shaders/block.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockCounters {
    /// Groups with an active particle in this sub-step's walk list.
    pub active_groups: u32,
    /// The deepest level any particle is on (its step the smallest): the
    /// next sub-step on which a step ends is the next multiple of
    /// 2^(L - deepest).
    pub deepest: u32,
    /// Sub-steps on which some particle's step ended (the tree worked).
    pub busy_substeps: u32,
    /// Sub-steps on which none did (no tree work but the scheduled builds).
    pub idle_substeps: u32,
    /// Particles the walk took on the sub-steps before a largest step's
    /// last (every particle of the active groups; the last sub-step walks
    /// all) and the active particles among them: how well the active
    /// groups fit the active particles. Wrapping sums: read differences.
    pub walked_particles: u32,
    pub active_particles: u32,
}

/// Uniform of the block-step kernels (`run/block.rs`, `shaders/block.wgsl`),
/// one `DYNAMIC_SLOT` per sub-step of a largest step.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BlockParams {
    pub n: u32,
    /// Depth L of the hierarchy: level k steps by dt_max / 2^k, k ≤ L.
    pub levels: u32,
    /// This sub-step's time within the largest step, in smallest steps
    /// (0 ..= 2^L).
    pub substep: u32,
    /// The tree's most persistent walk workgroups (the walk's dispatch).
    pub walk_workgroups: u32,
    /// The largest step (the run's dt).
    pub dt_max: f32,
    /// 2 η ε: a particle wants the step sqrt(2 η ε / |a|).
    pub two_eta_eps: f32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// Uniform of the splat pass (`render::Camera::uniform` fills it, the
/// renderer sets `unit_scale` and `n`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct CameraUniform {
    /// Column-major view-projection matrix (perspective for pictures,
    /// orthographic for surface-density maps).
    pub view_proj: [[f32; 4]; 4],
    /// Viewport width and height (pixels); sprite diameter (pixels) at the
    /// reference depth; reference depth (clip-space w at which a sprite is
    /// that wide; 0 turns size attenuation off).
    pub viewport: [f32; 4],
    /// Colour (rgb) of `ColorMode::Uniform`.
    pub color: [f32; 3],
    /// Fixed-point units one unit of weight adds to the accumulation
    /// (weight: mass times the component's light for pictures, mass for
    /// maps).
    pub unit_scale: f32,
    /// `render::ColorMode` as u32: 0 uniform, 1 speed, 2 potential,
    /// 3 component.
    pub color_mode: u32,
    /// The colour-mapped quantity (speed or potential, N-body units) that
    /// maps to the low end of the colour map ...
    pub value_lo: f32,
    /// ... and to the high end (lo > hi is allowed and reverses the map).
    pub value_hi: f32,
    /// Bit t set: particles of component tag t (< 32) are not drawn (the
    /// page's switch that hides a galaxy's dark halo).
    pub hidden_tags: u32,
    /// Bit t set: particles of tag t (black holes) are marked with a ring
    /// instead of adding light.
    pub marked_tags: u32,
    /// What is accumulated: 0 light (a picture), 1 mass (a map).
    pub quantity: u32,
    /// Particles in the buffers.
    pub n: u32,
    /// Largest sprite radius (pixels).
    pub max_radius: f32,
    /// Adaptive smoothing: a sprite's radius is at least this many times
    /// the mean spacing of the particles drawn about it (0: off).
    pub smoothing: f32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// How particles of one component tag look: colour and light per unit
/// mass (the renderer's palette, `render::components`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TagStyle {
    pub color: [f32; 3],
    /// Light per unit mass (dark matter faint, stars 1).
    pub light: f32,
}

/// Uniform of the exposure and tone-mapping passes (`render::exposure`,
/// `render::tonemap`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ToneUniform {
    /// Target size in pixels.
    pub width: u32,
    pub height: u32,
    /// 0 light (asinh stretch of colours), 1 mass (log colour map).
    pub quantity: u32,
    /// Brightness bias: the white point is divided by it (the page's
    /// slider; 1 leaves the measured exposure).
    pub bias: f32,
    /// Quantiles of the lit pixels' values that set the faint end and the
    /// white point (pictures) or the ends of the map's range (maps).
    pub lo_quantile: f32,
    pub hi_quantile: f32,
    /// A range given in accumulation units instead of the measured one
    /// (used where `fixed_hi > 0`): maps of a series share one colour bar.
    pub fixed_lo: f32,
    pub fixed_hi: f32,
    /// 0 light on black, 1 ink on white (`render::Theme`).
    pub paper: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// What the exposure pass measured of a frame (accumulation units).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Exposure {
    /// Faint end: the asinh stretch's softening (pictures), the low end
    /// of the colour map (maps).
    pub lo: f32,
    /// White point (pictures), high end of the colour map (maps).
    pub hi: f32,
    /// Pixels with anything in them.
    pub lit: u32,
    /// Upper edge of the highest occupied histogram bin (about the
    /// largest pixel value).
    pub top: f32,
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

// --- direct/hermite ---

/// One j-particle (source) of the Hermite integrators and the GRAPE-6 API,
/// as of its last correction at time `t0`: position and `t0` in
/// double-single (hi + lo, see `gpu::ds`), the rest in f32, with the
/// double-single remainders of velocity (in the three slots after jerk,
/// snap and crackle), acceleration, jerk and snap that only the f64
/// predictor of `--precision dp` reads. The
/// predictor (`shaders/predict.wgsl`) extrapolates it with the Taylor
/// series to the current time. N-body units.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct JParticle {
    pub pos_hi: [f32; 3],
    pub mass: f32,
    pub pos_lo: [f32; 3],
    /// Identity compared with `IParticle::id` (self-interaction) and
    /// returned as nearest neighbour.
    pub id: u32,
    pub vel: [f32; 3],
    /// Time of the last correction, double-single.
    pub t0_hi: f32,
    pub acc: [f32; 3],
    pub t0_lo: f32,
    pub jerk: [f32; 3],
    pub vel_lo_x: f32,
    /// Second derivative of the acceleration (zero where unknown).
    pub snap: [f32; 3],
    pub vel_lo_y: f32,
    /// Third derivative of the acceleration (zero where unknown).
    pub crackle: [f32; 3],
    pub vel_lo_z: f32,
    /// Double-single remainders of acceleration, jerk and snap (read by
    /// the f64 predictor of `--precision dp` only).
    pub acc_lo: [f32; 3],
    /// The mass's double-single remainder (`--precision dp` only).
    pub mass_lo: f32,
    pub jerk_lo: [f32; 3],
    pub _pad1: f32,
    pub snap_lo: [f32; 3],
    pub _pad2: f32,
}

/// A j-particle predicted to the current time: what the force kernel reads.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PredJ {
    pub pos_hi: [f32; 3],
    pub mass: f32,
    pub pos_lo: [f32; 3],
    pub id: u32,
    pub vel: [f32; 3],
    /// The mass's double-single remainder (`--precision dp` only).
    pub mass_lo: f32,
    /// Predicted acceleration (used by the 6th-order snap).
    pub acc: [f32; 3],
    pub _pad1: u32,
    /// The velocity's double-single remainder (`--precision dp`; zero
    /// otherwise).
    pub vel_lo: [f32; 3],
    pub _pad2: u32,
}

/// One i-particle (sink) of a Hermite force evaluation, predicted to the
/// evaluation time (gathered from the predicted j-particles, or uploaded
/// by the GRAPE-6 API).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct IParticle {
    pub pos_hi: [f32; 3],
    /// j-particles with this id are skipped (self-interaction).
    pub id: u32,
    pub pos_lo: [f32; 3],
    /// Neighbour radius squared (neighbour lists only).
    pub h2: f32,
    pub vel: [f32; 3],
    pub _pad0: u32,
    pub acc: [f32; 3],
    pub _pad1: u32,
    /// The velocity's double-single remainder (read by `--precision dp`).
    pub vel_lo: [f32; 3],
    pub _pad2: u32,
}

/// Force on one i-particle (also one split's partial sum): acceleration,
/// potential, jerk and snap as double-single (value = hi + lo),
/// nearest neighbour (unsoftened distance squared and id; id u32::MAX and
/// d2 = f32::MAX when there is no other particle).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ForceResult {
    pub acc_hi: [f32; 3],
    pub pot_hi: f32,
    pub acc_lo: [f32; 3],
    pub pot_lo: f32,
    pub jerk_hi: [f32; 3],
    pub nn_d2: f32,
    pub jerk_lo: [f32; 3],
    pub nn_id: u32,
    pub snap: [f32; 3],
    pub _pad0: u32,
    /// The snap's double-single remainder.
    pub snap_lo: [f32; 3],
    pub _pad1: u32,
}

/// Uniform shared by the predictor, the Hermite force kernels and the
/// neighbour search (`hermite::predict`, `hermite::hermite_force`,
/// `hermite::neighbours`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct HermiteParams {
    /// Sinks (i-particles) of this evaluation.
    pub ni: u32,
    /// Sources (j-particles).
    pub nj: u32,
    /// Sources per split of the j-range (a multiple of the tile).
    pub chunk: u32,
    /// Number of splits of the j-range (partial sums to reduce).
    pub nsplit: u32,
    /// Distance between the partial sums of two splits, in records.
    pub ni_stride: u32,
    /// Updated j-particles to scatter before predicting.
    pub n_update: u32,
    /// Plummer softening squared.
    pub eps2: f32,
    /// 1.0, which the shader compiler cannot see: guards the error terms of
    /// double-single arithmetic against reassociation.
    pub one: f32,
    /// Prediction (evaluation) time, double-single.
    pub t_hi: f32,
    pub t_lo: f32,
    /// The softening's remainder: eps2 + eps2_lo is ε² to ~2^-48
    /// (`--precision dp` reads it).
    pub eps2_lo: f32,
    /// Invocations per sink of the reduce (a power of two, at most
    /// `hermite_force::REDUCE_WORKGROUP`).
    pub reduce_lanes: u32,
    /// Invocations per sink of the force kernel (1: `force`, one per sink;
    /// a power of two from 2 to `REDUCE_WORKGROUP`: `force_lanes`, for
    /// blocks of a few sinks, see `hermite_force::sink_lanes`).
    pub sink_lanes: u32,
}
