//! A picture of a state, drawn offscreen with the page's renderer and
//! camera numbers: the view fitted to what is drawn (90 % of the visible
//! mass, a disk face-on), any camera number given instead, colour ranges
//! from the state, labels (colour bar, scale bar, time) drawn on the CPU.
//! What `webgrav render` writes and Python's `Simulation.show()` displays.
//!
//! Nothing here is O(N²): a file's particles are uploaded as they are and
//! drawn; potentials (for `ColorMode::Potential` only) come from one tree
//! evaluation. Every step on the CPU is linear in N (sums and selections).

use super::analysis::{disk_axes, select};
use crate::error::{Error, Result};
use crate::gpu::layout::{Exposure, PosMass};
use crate::gpu::GpuContext;
use crate::render::camera::visible_sphere;
use crate::render::legend::{self, ColorBar, Legend};
use crate::render::map::{SurfaceDensity, Units};
use crate::render::{
    render_offscreen_with, upload, Camera, ColorMode, ColorRanges, ComponentTags, MapKind, Scene,
    TagTotals, Tone, OFFSCREEN_FORMAT,
};
use crate::run::{Run, RunConfig};
use crate::snapshot::Snapshot;
use crate::state::{GpuParticles, Particles};
use crate::tree::overlay::{CellOverlay, Cells};
use crate::tree::TreeSolver;

/// What to draw and from where; `None` camera numbers are fitted.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub width: u32,
    pub height: u32,
    /// Rotation about the vertical axis, radians (URL: yaw).
    pub yaw: Option<f32>,
    /// Elevation, radians (URL: pitch). Without yaw and pitch a visible
    /// disk is seen face-on.
    pub pitch: Option<f32>,
    /// Distance from the target (URL: dist).
    pub distance: Option<f32>,
    /// Target point (URL: tx, ty, tz).
    pub target: Option<[f32; 3]>,
    /// Vertical field of view, radians (URL: fov).
    pub fov: Option<f32>,
    /// Sprite diameter in pixels at the target's depth (URL: ps).
    pub point_size: Option<f32>,
    /// Exposure bias (URL: bright).
    pub brightness: Option<f32>,
    /// Sprites shrink with distance (URL: atten).
    pub attenuation: bool,
    pub color: ColorMode,
    /// A picture of the light or a surface-density map (URL: map).
    pub map: MapKind,
    /// Particle kinds (Gadget-2's numbering) left out.
    pub hidden: Vec<u8>,
    /// The units of the labels.
    pub units: Units,
    /// Draw the labels: colour bar (maps), scale bar and time; `None`:
    /// for maps only.
    pub legend: Option<bool>,
    /// The map's colour range, log10 Σ in the labels' units (else the
    /// frame's own).
    pub sigma_range: Option<[f64; 2]>,
    /// A picture's exposure, faint end and white point in accumulation
    /// units (`Picture::exposure`), else the frame's own: a movie keeps its
    /// first frame's, so brightness changes on screen are changes of the
    /// light.
    pub exposure: Option<[f32; 2]>,
    /// Aim at the density centre of what is drawn rather than its centre
    /// of mass (a movie following a galaxy).
    pub follow: bool,
    /// Levels of the tree's cells drawn over the picture (0: none; a
    /// snapshot's tree is built by one evaluation, `tree::overlay`).
    pub cells: u32,
}

impl Default for View {
    fn default() -> Self {
        Self {
            width: 800,
            height: 600,
            yaw: None,
            pitch: None,
            distance: None,
            target: None,
            fov: None,
            point_size: None,
            brightness: None,
            attenuation: true,
            color: ColorMode::Speed,
            map: MapKind::Light,
            hidden: Vec::new(),
            units: Units::NBody,
            legend: None,
            sigma_range: None,
            exposure: None,
            follow: false,
            cells: 0,
        }
    }
}

/// An RGBA8 image, rows top to bottom, the camera it was drawn with and
/// what its exposure measured; maps also give their numbers.
#[derive(Clone, Debug)]
pub struct Picture {
    pub rgba: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub camera: Camera,
    pub exposure: Exposure,
    /// The surface density of every pixel (maps).
    pub map: Option<SurfaceDensity>,
    /// Σ at the two ends of the colour map, in the labels' units (maps).
    pub sigma_range: Option<[f64; 2]>,
    /// Particles drawn (not hidden).
    pub drawn: usize,
}

/// The mask of hidden component tags, and whether any particle is left.
fn hidden_mask(view: &View, components: &ComponentTags, n: usize) -> Result<u32> {
    let mask = view.hidden.iter().fold(0u32, |m, &t| m | 1 << t);
    let left = (0..n).any(|k| {
        let t = components.tags.get(k).copied().unwrap_or(0);
        t >= 32 || mask >> t & 1 == 0
    });
    if n > 0 && !left {
        return Err(Error::InvalidParameter(
            "no particles are left to draw once the hidden kinds are left out".into(),
        ));
    }
    Ok(mask)
}

/// The camera of `view` for particles `p` whose tags are `components`
/// (hidden: `mask`): the view fitted to 90 % of the visible mass about its
/// centre of mass (density centre with `follow`), a visible disk face-on
/// unless yaw or pitch is given, then every number the view gives.
pub fn camera_for(view: &View, p: &Particles, components: &ComponentTags, mask: u32) -> Camera {
    let shown = |k: usize| {
        let t = components.tags.get(k).copied().unwrap_or(0);
        t >= 32 || mask >> t & 1 == 0
    };
    let mut camera = Camera {
        map: view.map,
        color_mode: view.color,
        hidden_tags: mask,
        size_attenuation: view.attenuation,
        ..Camera::default()
    };
    if let Some(fov) = view.fov {
        camera.fov_y = fov;
    }
    let weights = components.fit_weights(&p.pos_mass, None, mask, view.map);
    let (mut center, radius) = visible_sphere(&p.pos_mass, |k| weights[k])
        .or_else(|| visible_sphere(&p.pos_mass, |k| shown(k) as u8 as f64))
        .unwrap_or(([0.0; 3], 1.0));
    if view.follow {
        let visible: Vec<PosMass> = (0..p.len())
            .filter(|&k| shown(k))
            .map(|k| p.pos_mass[k])
            .collect();
        center = super::analysis::density_center(&visible).map(|x| x as f32);
    }
    camera.fit(center, radius, view.width, view.height);
    if view.yaw.is_none() && view.pitch.is_none() {
        let disk = select(p, |k| shown(k) && components.is(k, "disk"));
        if disk.len() >= 16 {
            let c = center.map(|x| x as f64);
            let v = mean_velocity(&disk);
            let axes = disk_axes(&disk, c, v);
            camera.look_from(axes[2]);
        }
    }
    camera.yaw = view.yaw.unwrap_or(camera.yaw);
    camera.pitch = view.pitch.unwrap_or(camera.pitch);
    camera.distance = view.distance.unwrap_or(camera.distance);
    camera.target = view.target.unwrap_or(camera.target);
    camera.point_size = view.point_size.unwrap_or(camera.point_size);
    camera.brightness = view.brightness.unwrap_or(camera.brightness);
    camera
}

fn mean_velocity(p: &Particles) -> [f64; 3] {
    let (mut v, mut m) = ([0.0f64; 3], 0.0);
    for (pm, vel) in p.pos_mass.iter().zip(&p.vel) {
        m += pm.mass as f64;
        for (vk, u) in v.iter_mut().zip(vel.vel) {
            *vk += pm.mass as f64 * u as f64;
        }
    }
    if m > 0.0 {
        v = v.map(|x| x / m);
    }
    v
}

/// Draws a snapshot (what `webgrav render` does): its particles uploaded
/// as they are; for `ColorMode::Potential` the potentials of one tree
/// evaluation with `potentials` (a tree configuration), whose cells
/// `view.cells` draws.
pub async fn draw_snapshot(
    ctx: &GpuContext,
    snap: &Snapshot,
    view: &View,
    potentials: RunConfig,
) -> Result<Picture> {
    let p = &snap.particles;
    if !view.hidden.is_empty() && snap.types.is_none() {
        return Err(Error::InvalidParameter(
            "the particles carry no kinds, so there is nothing to hide".into(),
        ));
    }
    let components = ComponentTags::of_kinds(snap.types.as_deref(), &p.pos_mass);
    let mask = hidden_mask(view, &components, p.len())?;
    let camera = camera_for(view, p, &components, mask);
    let mut ranges = ColorRanges::of(&p.vel, None);
    if view.color == ColorMode::Potential || view.cells > 0 {
        let mut run = Run::new(ctx, p, snap.time, potentials).await?;
        let state = run.readout(ctx).await?;
        if view.color == ColorMode::Potential {
            let pot: Vec<f32> = state.acc_pot.iter().map(|a| a.pot).collect();
            ranges = ranges.with_potentials(&pot);
        }
        let scene = scene(ctx, run.display(), &components, p);
        return finish(ctx, &scene, camera, ranges, view, snap.time, run.tree()).await;
    }
    let state = upload(ctx, p, None)?;
    let scene = scene(ctx, &state, &components, p);
    finish(ctx, &scene, camera, ranges, view, snap.time, None).await
}

/// Draws the state of `run` (reading it back) whose particles have the
/// kinds `types` (input order; `None`: coloured by mass shells): Python's
/// `show()`.
pub async fn draw(
    ctx: &GpuContext,
    run: &mut Run,
    types: Option<&[u8]>,
    view: &View,
) -> Result<Picture> {
    if !view.hidden.is_empty() && types.is_none() {
        return Err(Error::InvalidParameter(
            "the particles carry no kinds, so there is nothing to hide".into(),
        ));
    }
    let state = run.readout(ctx).await?;
    let p = &state.snapshot.particles;
    let components = ComponentTags::of_kinds(types, &p.pos_mass);
    let mask = hidden_mask(view, &components, p.len())?;
    let camera = camera_for(view, p, &components, mask);
    let ranges = ColorRanges::of(&p.vel, Some(&state.acc_pot));
    let scene = scene(ctx, run.display(), &components, p);
    finish(
        ctx,
        &scene,
        camera,
        ranges,
        view,
        state.snapshot.time,
        run.tree(),
    )
    .await
}

fn scene(
    ctx: &GpuContext,
    state: &GpuParticles,
    components: &ComponentTags,
    p: &Particles,
) -> Scene {
    let totals = TagTotals::of(&p.pos_mass, &components.tags);
    Scene::new(ctx, state, components, totals)
}

/// Renders (with `tree`'s cells where `view.cells` asks), reads back and
/// labels.
async fn finish(
    ctx: &GpuContext,
    scene: &Scene,
    camera: Camera,
    ranges: ColorRanges,
    view: &View,
    time: f64,
    tree: Option<&TreeSolver>,
) -> Result<Picture> {
    let (w, h) = (view.width, view.height);
    let pixel = camera.pixel_size(h);
    let unit_scale = scene.unit_scale(camera.map, camera.hidden_tags);
    // Σ in the labels' units per accumulation unit.
    let per_unit = view.units.sigma_factor() / (unit_scale * pixel * pixel);
    let mut tone = Tone::for_map(camera.map);
    if let Some([lo, hi]) = view.sigma_range {
        if !(lo.is_finite() && hi.is_finite() && hi > lo) {
            return Err(Error::InvalidParameter(format!(
                "the map's range must be two increasing numbers (log10 Σ), got {lo} {hi}"
            )));
        }
        tone.fixed = Some([
            (10f64.powf(lo) / per_unit) as f32,
            (10f64.powf(hi) / per_unit) as f32,
        ]);
    }
    let is_map = camera.map == MapKind::Density;
    if let (Some(e), false) = (view.exposure, is_map) {
        tone.fixed = Some(e);
    }
    let overlay =
        |encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView, cam: &wgpu::Buffer| {
            if let (Some(tree), true) = (tree, view.cells > 0) {
                let cells = Cells::Levels(view.cells - 1);
                CellOverlay::new(&ctx.device, OFFSCREEN_FORMAT)
                    .draw(ctx, encoder, target, cam, tree, cells);
            }
        };
    let shot = render_offscreen_with(
        ctx,
        scene,
        &camera,
        ranges.for_mode(camera.color_mode),
        &tone,
        (w, h),
        is_map,
        overlay,
    )
    .await?;
    let map = shot
        .accum
        .as_ref()
        .map(|words| SurfaceDensity::from_accum(words, w, h, shot.drawn.unit_scale, pixel));
    let sigma_range = is_map.then_some([
        shot.exposure.lo as f64 * per_unit,
        shot.exposure.hi as f64 * per_unit,
    ]);
    let mut rgba = shot.rgba;
    if view.legend.unwrap_or(is_map) {
        let labels = Legend {
            color_bar: sigma_range.map(|[lo, hi]| ColorBar {
                lo,
                hi,
                label: view.units.sigma_label().into(),
            }),
            scale: Some((pixel, view.units)),
            caption: Some(view.units.time_label(time)),
        };
        legend::draw(&mut rgba, w, h, &labels);
    }
    let drawn = scene.shown_count(camera.hidden_tags) as usize;
    Ok(Picture {
        rgba,
        width: w,
        height: h,
        camera,
        exposure: shot.exposure,
        map,
        sigma_range,
        drawn,
    })
}

#[cfg(feature = "png")]
impl Picture {
    /// The image as PNG bytes.
    pub fn png(&self) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        let mut encoder = png::Encoder::new(&mut bytes, self.width, self.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let to_err = |e: png::EncodingError| Error::InvalidParameter(format!("PNG: {e}"));
        let mut writer = encoder.write_header().map_err(to_err)?;
        writer.write_image_data(&self.rgba).map_err(to_err)?;
        writer.finish().map_err(to_err)?;
        Ok(bytes)
    }
}
