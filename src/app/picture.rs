//! A picture of a run's state, drawn offscreen with the page's renderer
//! and camera numbers: the view fitted to what is drawn (the page's fit to
//! 90 % of the mass), any camera number given instead, colour ranges from
//! the state. What `webgrav render` writes and Python's `Simulation.show()`
//! displays.

use super::readout::view_sphere;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::render::{render_rgba, Camera, ColorMode, ColorRanges, ComponentTags};
use crate::run::Run;

/// What to draw and from where; `None` camera numbers are fitted.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub width: u32,
    pub height: u32,
    /// Rotation about the vertical axis, radians (URL: yaw).
    pub yaw: Option<f32>,
    /// Elevation, radians (URL: pitch).
    pub pitch: Option<f32>,
    /// Distance from the target (URL: dist).
    pub distance: Option<f32>,
    /// Target point (URL: tx, ty, tz).
    pub target: Option<[f32; 3]>,
    /// Vertical field of view, radians (URL: fov).
    pub fov: Option<f32>,
    /// Sprite diameter in pixels at the target's depth (URL: ps).
    pub point_size: Option<f32>,
    /// Brightness multiplier (URL: bright).
    pub brightness: Option<f32>,
    /// Sprites shrink with distance (URL: atten).
    pub attenuation: bool,
    pub color: ColorMode,
    /// Particle kinds (Gadget-2's numbering) left out.
    pub hidden: Vec<u8>,
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
            hidden: Vec::new(),
        }
    }
}

/// An RGBA8 image, rows top to bottom, and the camera it was drawn with.
#[derive(Clone, Debug)]
pub struct Picture {
    pub rgba: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub camera: Camera,
}

/// Draws the state of `run` (reading it back) whose particles have the
/// kinds `types` (input order; `None`: coloured by mass shells).
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
    let pos_mass = &state.snapshot.particles.pos_mass;
    let ranges = ColorRanges::of(&state.snapshot.particles.vel, Some(&state.acc_pot));
    // Fitted to what is drawn: a disk, not the halo around it.
    let (center, radius) = match types {
        Some(types) if !view.hidden.is_empty() => {
            let shown: Vec<_> = (pos_mass.iter().zip(types))
                .filter(|(_, t)| !view.hidden.contains(t))
                .map(|(pm, _)| *pm)
                .collect();
            if shown.is_empty() {
                return Err(Error::InvalidParameter(
                    "no particles are left to draw once the hidden kinds are left out".into(),
                ));
            }
            view_sphere(&shown)
        }
        _ => view_sphere(pos_mass),
    };
    let mut camera = Camera::default();
    if let Some(fov) = view.fov {
        camera.fov_y = fov;
    }
    camera.fit(center, radius, view.width, view.height);
    camera.yaw = view.yaw.unwrap_or(camera.yaw);
    camera.pitch = view.pitch.unwrap_or(camera.pitch);
    camera.distance = view.distance.unwrap_or(camera.distance);
    camera.target = view.target.unwrap_or(camera.target);
    camera.point_size = view.point_size.unwrap_or(camera.point_size);
    camera.brightness = view.brightness.unwrap_or(camera.brightness);
    camera.size_attenuation = view.attenuation;
    camera.color_mode = view.color;
    // Colour by the kinds the particles carry (else by mass shells).
    let components = ComponentTags::of_kinds(types, pos_mass);
    camera.hidden_tags = view.hidden.iter().fold(0, |m, &t| m | 1 << t);
    let rgba = render_rgba(
        ctx,
        run.display(),
        &components.tags,
        &camera,
        ranges.for_mode(camera.color_mode),
        view.width,
        view.height,
    )
    .await?;
    Ok(Picture {
        rgba,
        width: view.width,
        height: view.height,
        camera,
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
