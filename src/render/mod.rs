//! Pictures of particles straight from the simulation's GPU buffers, on the
//! browser's canvas and offscreen (`webgrav render`), with the same passes
//! and the same camera numbers. A frame is three steps, recorded top to
//! bottom by `Renderer::draw`:
//!
//! 1. `splat`: particles are counted per cell of the view (their spacing
//!    sets the sprites' size), then each adds its light (a picture) or its
//!    mass (a surface-density map) to the pixels it covers, as exact
//!    fixed-point integers (`shaders/render.wgsl` says how a pixel's four
//!    words hold them): light with no clipping, order-independent sums.
//! 2. `exposure`: a log histogram of the lit pixels and the values at two
//!    of its quantiles, on the GPU: the frame exposes itself, a Plummer
//!    sphere of 2^10 particles and a galaxy of 2^23 alike.
//! 3. `tonemap`: the asinh stretch of the light (or log Σ through a colour
//!    map) into the target's 8-bit format, black holes ringed.
//!
//! `map` reads a map's pixels back as surface densities; `legend` draws
//! the colour bar, scale bar and labels of a native picture on the CPU.

pub mod camera;
pub mod components;
pub mod exposure;
pub mod font;
pub mod legend;
pub mod map;
pub mod splat;
pub mod tonemap;
pub mod view_sample;

use crate::error::{Error, Result};
use crate::gpu::buffers::{
    empty_storage_buffer, read_buffers, storage_buffer_written, uniform_buffer,
};
use crate::gpu::context::dispatch_size;
use crate::gpu::layout::{
    AccPot, CameraUniform, Exposure, TagStyle, ToneUniform, Velocity, WORKGROUP_SIZE,
};
use crate::gpu::shader;
use crate::gpu::GpuContext;
use crate::state::{GpuParticles, Particles};
pub use camera::{Camera, ColorMode, MapKind, Theme};
pub use components::{shell_tags, ComponentTags, MassShells, TagTotals};

const RENDER_WGSL: &str = include_str!("../../shaders/render.wgsl");

/// Format of offscreen images (the canvas uses the browser's format; both
/// are 8-bit unorm, not sRGB, so the stored values are the same).
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// Bits of each light channel's carry counter in a pixel's fourth word:
/// with `LIGHT_UNITS` per particle on average a pixel holds the light of
/// 2^(32 + 10 - 12) = 2^30 particles.
pub const CARRY_BITS: u32 = 10;
/// Fixed-point units of light a particle of the mean light adds.
pub const LIGHT_UNITS: f64 = 4096.0;
/// Fixed-point units of mass a particle of the mean mass adds: a map's
/// total is exact to 2^-17 of each particle's mass.
pub const MASS_UNITS: f64 = 65536.0;
/// Bins of the exposure's log histogram, `BINS_PER_OCTAVE` per factor of
/// two from 1 unit: 2^0 to 2^64 units, every value a pixel can hold.
pub const HIST_BINS: u32 = 256;
pub const BINS_PER_OCTAVE: u32 = 4;
/// Pixels each invocation of the histogram pass takes: few workgroups
/// (a 800 × 600 frame takes 30), whose barriers a software adapter pays
/// about a millisecond for each.
pub const PIXELS_PER_INVOCATION: u32 = 64;
/// Side (pixels) of the cells in which particles are counted for the
/// adaptive smoothing: a lone particle's sprite is about this wide.
pub const CELL_PX: u32 = 8;
/// Marked particles (black holes) ringed per frame.
pub const MAX_MARKERS: u32 = 8;
/// Component tags with a style of their own (later tags share the last).
pub const MAX_TAGS: u32 = 32;
/// Radius (pixels) and colour of a black hole's ring.
pub const MARKER_RADIUS: f32 = 7.0;
pub const MARKER_COLOR: [f32; 3] = [1.0, 0.35, 0.85];
/// Stops of the surface-density colour map, low to high Σ, evenly spaced:
/// black through indigo, crimson and orange to pale yellow (monotonic in
/// lightness, so it reads in grey too).
pub const DENSITY_STOPS: [[f32; 3]; 7] = [
    [0.0, 0.0, 0.0],
    [0.10, 0.04, 0.26],
    [0.36, 0.07, 0.45],
    [0.68, 0.16, 0.36],
    [0.93, 0.38, 0.18],
    [0.99, 0.70, 0.25],
    [1.0, 0.97, 0.78],
];

/// The colour of the density map at `t` in [0, 1] (`density_color` in
/// `shaders/render.wgsl`, for colour bars drawn outside the GPU).
pub fn density_color(t: f64) -> [f32; 3] {
    let x = t.clamp(0.0, 1.0) * (DENSITY_STOPS.len() - 1) as f64;
    let k = (x.floor() as usize).min(DENSITY_STOPS.len() - 2);
    let f = (x - k as f64) as f32;
    let (a, b) = (DENSITY_STOPS[k], DENSITY_STOPS[k + 1]);
    [0, 1, 2].map(|c| a[c] + (b[c] - a[c]) * f)
}

/// A renderer shader: the constants above, the shared layouts,
/// `shaders/render.wgsl`, then `body`.
pub(crate) fn compose(body: &str) -> String {
    let f = |x: f32| format!("{x:?}");
    let vec3 = |c: [f32; 3]| format!("vec3<f32>({}, {}, {})", f(c[0]), f(c[1]), f(c[2]));
    let stops: Vec<String> = DENSITY_STOPS.iter().map(|&c| vec3(c)).collect();
    let floats = format!(
        "const MARKER_RADIUS: f32 = {};\nconst MARKER_COLOR: vec3<f32> = {};\n\
         const DENSITY_STOPS = array<vec3<f32>, {}>({});\n",
        f(MARKER_RADIUS),
        vec3(MARKER_COLOR),
        DENSITY_STOPS.len(),
        stops.join(", ")
    );
    shader::compose(
        &[
            ("CARRY_BITS", CARRY_BITS),
            ("CARRY_MASK", (1 << CARRY_BITS) - 1),
            ("HIST_BINS", HIST_BINS),
            ("BINS_PER_OCTAVE", BINS_PER_OCTAVE),
            ("PIXELS_PER_INVOCATION", PIXELS_PER_INVOCATION),
            ("MAX_MARKERS", MAX_MARKERS),
            ("MAX_TAGS", MAX_TAGS),
            ("CELL_PX", CELL_PX),
            ("DENSITY_STOP_COUNT", DENSITY_STOPS.len() as u32),
        ],
        &format!("{floats}{RENDER_WGSL}\n{body}"),
    )
}

/// How the measured brightness distribution becomes the picture: the
/// quantiles of the lit pixels that set the faint end and the top, or a
/// given range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tone {
    pub lo_quantile: f32,
    pub hi_quantile: f32,
    /// A range in accumulation units (low, high) instead of the measured
    /// one.
    pub fixed: Option<[f32; 2]>,
}

impl Tone {
    /// Pictures: the asinh softening where the faintest 30 % of the light
    /// lies (fainter pixels, a few faint particles, stay near linear and
    /// dim; at 10 % a disk's surface flattens into one grey) and white at the 99.7th percentile of the lit pixels, so
    /// cores glow and the top 0.3 % saturate (a Plummer sphere's centre, a
    /// galaxy's bulge). Maps: log Σ from the 1st to the 99.9th percentile
    /// of the pixels that hold mass.
    pub fn for_map(map: MapKind) -> Self {
        match map {
            MapKind::Light => Self {
                lo_quantile: 0.3,
                hi_quantile: 0.997,
                fixed: None,
            },
            MapKind::Density => Self {
                lo_quantile: 0.01,
                hi_quantile: 0.999,
                fixed: None,
            },
        }
    }
}

/// A particle state bound for drawing: the simulation's buffers (shared,
/// not copied), the component tags and their styles, and what the unit
/// scale needs (mass and light per tag).
pub struct Scene {
    state: GpuParticles,
    tags: wgpu::Buffer,
    styles: [TagStyle; MAX_TAGS as usize],
    marked: u32,
    totals: TagTotals,
}

impl Scene {
    /// Binds `state` (whose k-th uploaded particle has tag
    /// `components.tags[k]`); `totals` are the state's masses per tag
    /// (`TagTotals::of`, from the particles uploaded).
    pub fn new(
        ctx: &GpuContext,
        state: &GpuParticles,
        components: &ComponentTags,
        totals: TagTotals,
    ) -> Self {
        // One tag a particle, and WebGPU wants a non-empty buffer; copied
        // only where the tags are not that already (64 MB at 2^24).
        let len = (state.n as usize).max(1);
        let padded: Vec<u32>;
        let tags = match components.tags.len() == len {
            true => &components.tags,
            false => {
                padded = (0..len)
                    .map(|k| components.tags.get(k).copied().unwrap_or(0))
                    .collect();
                &padded
            }
        };
        let tags = storage_buffer_written(&ctx.device, &ctx.queue, "component tags", tags);
        Self::with_tags(state, tags, components, totals)
    }

    /// `new` with the tags already on the GPU: one `u32` a particle of
    /// `state`, in upload order (`view_sample::tag_shells`); `components`
    /// names them.
    pub fn with_tags(
        state: &GpuParticles,
        tags: wgpu::Buffer,
        components: &ComponentTags,
        totals: TagTotals,
    ) -> Self {
        let (styles, marked) = components.styles();
        Self {
            state: state.clone(),
            tags,
            styles,
            marked,
            totals,
        }
    }

    /// This scene's tags and styles bound to `state`, the same particles
    /// in other buffers (a run reconfigured): nothing is uploaded again.
    pub fn rebound(&self, state: &GpuParticles) -> Self {
        Self {
            state: state.clone(),
            tags: self.tags.clone(),
            styles: self.styles,
            marked: self.marked,
            totals: self.totals.clone(),
        }
    }

    pub fn n(&self) -> u32 {
        self.state.n
    }

    /// Particles not hidden by `hidden`.
    pub fn shown_count(&self, hidden: u32) -> u64 {
        (self.totals.0.iter().enumerate())
            .filter(|(t, _)| *t >= 32 || (hidden >> t) & 1 == 0)
            .map(|(_, &(_, n))| n)
            .sum()
    }

    /// Fixed-point units per unit of weight, so that a visible particle
    /// adds `LIGHT_UNITS` (pictures) or `MASS_UNITS` (maps) on average.
    pub fn unit_scale(&self, map: MapKind, hidden: u32) -> f64 {
        let shown = |t: usize| t >= 32 || (hidden >> t) & 1 == 0;
        let lit = |t: usize| map == MapKind::Density || t >= 32 || (self.marked >> t) & 1 == 0;
        let (mut weight, mut count) = (0.0, 0u64);
        for (t, &(mass, n)) in self.totals.0.iter().enumerate() {
            if shown(t) && lit(t) {
                let light = match map {
                    MapKind::Light => self.styles[t.min(MAX_TAGS as usize - 1)].light as f64,
                    MapKind::Density => 1.0,
                };
                weight += mass * light;
                count += n;
            }
        }
        let units = match map {
            MapKind::Light => LIGHT_UNITS,
            MapKind::Density => MASS_UNITS,
        };
        if weight > 0.0 {
            units * count as f64 / weight
        } else {
            0.0
        }
    }
}

/// Uploads particles for drawing only: potentials are left out (zeros,
/// one element) unless `potentials` is given (in upload order).
pub fn upload(
    ctx: &GpuContext,
    particles: &Particles,
    potentials: Option<&[f32]>,
) -> Result<GpuParticles> {
    GpuParticles::upload_with(ctx, particles, |_| {
        Some(match potentials {
            Some(pot) => pot
                .iter()
                .map(|&pot| AccPot { acc: [0.0; 3], pot })
                .collect(),
            None => vec![AccPot::default()],
        })
    })
}

/// The buffers of one frame size: the accumulation, the cell counts, the
/// histogram, the exposure and the markers.
struct Target {
    width: u32,
    height: u32,
    accum: wgpu::Buffer,
    cells: wgpu::Buffer,
    hist: wgpu::Buffer,
    exposure: wgpu::Buffer,
    markers: wgpu::Buffer,
}

impl Target {
    fn new(device: &wgpu::Device, width: u32, height: u32) -> Result<Self> {
        let bytes = 16 * width as u64 * height as u64;
        let max = device.limits().max_storage_buffer_binding_size;
        if bytes > max {
            return Err(Error::InvalidParameter(format!(
                "a {width}x{height} picture needs {bytes} bytes of accumulation, more than \
                 this device binds ({max})"
            )));
        }
        let buffer = |label: &str, size: u64| empty_storage_buffer(device, label, size);
        Ok(Self {
            width,
            height,
            accum: buffer("render accumulation", bytes),
            cells: buffer(
                "render cells",
                4 * width.div_ceil(CELL_PX) as u64 * height.div_ceil(CELL_PX) as u64,
            ),
            hist: buffer("render histogram", 4 * HIST_BINS as u64),
            exposure: buffer("render exposure", std::mem::size_of::<Exposure>() as u64),
            markers: buffer("render markers", 16 * (MAX_MARKERS as u64 + 1)),
        })
    }
}

/// What a draw used: the unit scale (accumulation units per unit of
/// weight) and the camera uniform.
#[derive(Clone, Copy, Debug)]
pub struct Drawn {
    pub unit_scale: f64,
    pub camera: CameraUniform,
}

/// The passes of a frame for one target format, and the buffers of the
/// last frame size drawn.
pub struct Renderer {
    splat: splat::Splat,
    exposure: exposure::ExposurePasses,
    tonemap: tonemap::ToneMap,
    camera: wgpu::Buffer,
    styles: wgpu::Buffer,
    tone: wgpu::Buffer,
    target: Option<Target>,
}

impl Renderer {
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        Self {
            splat: splat::Splat::new(device),
            exposure: exposure::ExposurePasses::new(device),
            tonemap: tonemap::ToneMap::new(device, format),
            camera: uniform_buffer(device, "render camera", &CameraUniform::default()),
            styles: uniform_buffer(
                device,
                "render styles",
                &[TagStyle::default(); MAX_TAGS as usize],
            ),
            tone: uniform_buffer(device, "render tone", &ToneUniform::default()),
            target: None,
        }
    }

    /// Records a frame of `scene` seen through `camera` into `view` (a
    /// `width` × `height` target of the renderer's format): `range` is the
    /// colour map's (`ColorRanges::for_mode`), `tone` how it is exposed.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        view: &wgpu::TextureView,
        (width, height): (u32, u32),
        scene: &Scene,
        camera: &Camera,
        range: [f32; 2],
        tone: &Tone,
    ) -> Result<Drawn> {
        let stale = self
            .target
            .as_ref()
            .is_none_or(|t| (t.width, t.height) != (width, height));
        if stale {
            self.target = Some(Target::new(device, width, height)?);
        }
        let target = self.target.as_ref().expect("made above");
        let unit_scale = scene.unit_scale(camera.map, camera.hidden_tags);
        let mut uniform = camera.uniform(width, height, range);
        uniform.unit_scale = unit_scale as f32;
        uniform.marked_tags = scene.marked;
        uniform.n = scene.n();
        let tone_uniform = ToneUniform {
            width,
            height,
            quantity: camera.map.index(),
            bias: camera.brightness,
            lo_quantile: tone.lo_quantile,
            hi_quantile: tone.hi_quantile,
            fixed_lo: tone.fixed.map_or(0.0, |r| r[0]),
            fixed_hi: tone.fixed.map_or(0.0, |r| r[1]),
            paper: camera.theme.index(),
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        queue.write_buffer(&self.camera, 0, bytemuck::bytes_of(&uniform));
        queue.write_buffer(&self.styles, 0, bytemuck::cast_slice(&scene.styles));
        queue.write_buffer(&self.tone, 0, bytemuck::bytes_of(&tone_uniform));
        encoder.clear_buffer(&target.accum, 0, None);
        encoder.clear_buffer(&target.cells, 0, None);
        encoder.clear_buffer(&target.hist, 0, None);
        encoder.clear_buffer(&target.markers, 0, None);
        let s = &scene.state;
        let splat_buffers = [
            &self.camera,
            &self.styles,
            &s.pos_mass,
            &s.vel,
            &s.acc_pot,
            &s.id,
            &scene.tags,
            &target.accum,
            &target.markers,
            &target.cells,
        ];
        let count_bind = self.splat.count.bind(device, &splat_buffers);
        let splat_bind = self.splat.splat.bind(device, &splat_buffers);
        let exposure_buffers = [&self.tone, &target.accum, &target.hist, &target.exposure];
        let hist_bind = self.exposure.histogram.bind(device, &exposure_buffers);
        let expose_bind = self.exposure.expose.bind(device, &exposure_buffers);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("render splat and exposure"),
                timestamp_writes: None,
            });
            if scene.n() > 0 {
                let groups = dispatch_size(device, scene.n(), WORKGROUP_SIZE);
                self.splat.count.dispatch(&mut pass, &count_bind, groups);
                self.splat.splat.dispatch(&mut pass, &splat_bind, groups);
            }
            let pixels = dispatch_size(device, width * height, HIST_BINS * PIXELS_PER_INVOCATION);
            self.exposure
                .histogram
                .dispatch(&mut pass, &hist_bind, pixels);
            self.exposure
                .expose
                .dispatch(&mut pass, &expose_bind, (1, 1));
        }
        self.tonemap.draw(
            device,
            encoder,
            view,
            [&self.tone, &target.accum, &target.exposure, &target.markers],
        );
        Ok(Drawn {
            unit_scale,
            camera: uniform,
        })
    }

    /// The camera uniform of the last frame drawn (what an overlay of
    /// the same frame projects with).
    pub fn camera_buffer(&self) -> &wgpu::Buffer {
        &self.camera
    }

    /// The last frame's exposure and accumulation buffers (for read-backs).
    pub fn buffers(&self) -> Option<(&wgpu::Buffer, &wgpu::Buffer)> {
        self.target.as_ref().map(|t| (&t.exposure, &t.accum))
    }
}

/// A `width` × `height` target of `OFFSCREEN_FORMAT` to draw into, with
/// `usage` besides being drawn into.
pub fn offscreen_target(
    device: &wgpu::Device,
    (width, height): (u32, u32),
    usage: wgpu::TextureUsages,
) -> wgpu::Texture {
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some("offscreen frame"),
        size: wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: OFFSCREEN_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | usage,
        view_formats: &[],
    })
}

/// A frame drawn offscreen and read back.
#[derive(Clone, Debug)]
pub struct Offscreen {
    /// RGBA8, rows top to bottom.
    pub rgba: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub exposure: Exposure,
    /// The accumulation's words (four per pixel, rows top to bottom),
    /// where asked for.
    pub accum: Option<Vec<u32>>,
    pub drawn: Drawn,
}

/// Draws `scene` offscreen into a `width` × `height` image (what the CLI
/// writes as PNG), reading back the accumulation too if `with_accum`.
#[allow(clippy::too_many_arguments)]
pub async fn render_offscreen(
    ctx: &GpuContext,
    scene: &Scene,
    camera: &Camera,
    range: [f32; 2],
    tone: &Tone,
    width: u32,
    height: u32,
    with_accum: bool,
) -> Result<Offscreen> {
    let none = |_: &mut wgpu::CommandEncoder, _: &wgpu::TextureView, _: &wgpu::Buffer| {};
    render_offscreen_with(
        ctx,
        scene,
        camera,
        range,
        tone,
        (width, height),
        with_accum,
        none,
    )
    .await
}

/// `render_offscreen` with `overlay` recorded over the picture before it
/// is read back (the encoder, the target, the frame's camera uniform):
/// what a layer above draws over it (the tree's cells).
#[allow(clippy::too_many_arguments)]
pub async fn render_offscreen_with(
    ctx: &GpuContext,
    scene: &Scene,
    camera: &Camera,
    range: [f32; 2],
    tone: &Tone,
    (width, height): (u32, u32),
    with_accum: bool,
    overlay: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::TextureView, &wgpu::Buffer),
) -> Result<Offscreen> {
    let max = ctx.device.limits().max_texture_dimension_2d;
    if width == 0 || height == 0 || width > max || height > max {
        return Err(Error::InvalidParameter(format!(
            "image size {width}x{height} must be between 1 and {max} pixels per side"
        )));
    }
    let device = &ctx.device;
    let mut renderer = Renderer::new(device, OFFSCREEN_FORMAT);
    let texture = offscreen_target(device, (width, height), wgpu::TextureUsages::COPY_SRC);
    // Rows of a texture-to-buffer copy are padded to 256 bytes.
    let row = 4 * width;
    let padded_row =
        row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let pixels = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("offscreen pixels"),
        size: padded_row as u64 * height as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("offscreen render"),
    });
    let view = texture.create_view(&Default::default());
    let drawn = renderer.draw(
        device,
        &ctx.queue,
        &mut encoder,
        &view,
        (width, height),
        scene,
        camera,
        range,
        tone,
    )?;
    overlay(&mut encoder, &view, renderer.camera_buffer());
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &pixels,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded_row),
                rows_per_image: Some(height),
            },
        },
        wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
    );
    ctx.queue.submit(Some(encoder.finish()));
    let (exposure_buf, accum_buf) = renderer.buffers().expect("drawn above");
    let mut sources = vec![&pixels, exposure_buf];
    if with_accum {
        sources.push(accum_buf);
    }
    let mut bytes = read_buffers(device, &ctx.queue, &sources).await?;
    let accum = with_accum.then(|| bytemuck::pod_collect_to_vec(&bytes.pop().expect("read")));
    let exposure: Exposure = bytemuck::pod_read_unaligned(&bytes.pop().expect("read"));
    let rgba = bytes[0]
        .chunks(padded_row as usize)
        .flat_map(|r| &r[..row as usize])
        .copied()
        .collect();
    Ok(Offscreen {
        rgba,
        width,
        height,
        exposure,
        accum,
        drawn,
    })
}

/// Low and high ends of the colour map of each quantity, from the 1st and
/// 99th percentiles of the state (robust to a few escapers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColorRanges {
    pub speed: [f32; 2],
    /// Shallow (blue) to deep (red): the high end is the lower potential.
    pub potential: [f32; 2],
}

impl Default for ColorRanges {
    /// Ranges of a Plummer sphere in N-body units, used until a state has
    /// been seen.
    fn default() -> Self {
        Self {
            speed: [0.0, 1.0],
            potential: [-0.3, -1.6],
        }
    }
}

impl ColorRanges {
    /// Ranges of a state; potentials are optional (not computed yet).
    /// Percentiles of a sample (`camera::VIEW_SAMPLE`): a fixed time at
    /// any N.
    pub fn of(vel: &[Velocity], acc_pot: Option<&[AccPot]>) -> Self {
        let mut r = Self::default();
        let speeds = sampled(vel, |v| {
            (v.vel[0] * v.vel[0] + v.vel[1] * v.vel[1] + v.vel[2] * v.vel[2]).sqrt()
        });
        if let Some([lo, hi]) = percentiles(speeds) {
            r.speed = [lo, if hi > lo { hi } else { lo + 1.0 }];
        }
        match acc_pot {
            Some(pot) => r.with_potentials_of(sampled(pot, |a| a.pot)),
            None => r,
        }
    }

    /// Ranges with the potentials of `pot` (in any order).
    pub fn with_potentials(self, pot: &[f32]) -> Self {
        self.with_potentials_of(sampled(pot, |&x| x))
    }

    fn with_potentials_of(mut self, pot: Vec<f32>) -> Self {
        if let Some([lo, hi]) = percentiles(pot) {
            if hi > lo {
                self.potential = [hi, lo];
            }
        }
        self
    }

    /// The range of what `mode` maps.
    pub fn for_mode(&self, mode: ColorMode) -> [f32; 2] {
        match mode {
            ColorMode::Potential => self.potential,
            _ => self.speed,
        }
    }
}

/// `value` of about `VIEW_SAMPLE` of `items` (`camera::sample_indices`):
/// what colour ranges are taken from.
fn sampled<T>(items: &[T], value: impl Fn(&T) -> f32) -> Vec<f32> {
    (camera::sample_indices(items.len(), camera::VIEW_SAMPLE))
        .map(|k| value(&items[k]))
        .collect()
}

/// 1st and 99th percentiles of the finite values, if any (two selections:
/// linear in their count).
fn percentiles(mut v: Vec<f32>) -> Option<[f32; 2]> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    let last = v.len() - 1;
    let rank = |q: f64| (last as f64 * q).round() as usize;
    let (lo, hi) = (rank(0.01), rank(0.99));
    let hi_value = *v.select_nth_unstable_by(hi, f32::total_cmp).1;
    // Everything below `hi` is now in v[..hi].
    let lo_value = *v[..=hi].select_nth_unstable_by(lo, f32::total_cmp).1;
    Some([lo_value, hi_value])
}
