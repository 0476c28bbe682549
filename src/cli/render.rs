//! `webgrav render`: a snapshot drawn offscreen with the web app's
//! renderer and camera numbers, written as PNG.

use super::{check_typed_output, color_parser, parse_kind, say, SolverArgs};
use crate::app::check_particle_count;
use crate::app::readout::view_sphere;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::render::{render_rgba, Camera, ColorMode, ColorRanges, ComponentTags};
use crate::run::Run;
use crate::snapshot;
use clap::Args;

#[derive(Args)]
pub struct RenderArgs {
    /// Snapshot to draw (.tipsy, .bonsai, .csv).
    input: String,
    /// Output image (.png).
    #[arg(short = 'o', long = "out")]
    out: String,
    /// Image width in pixels.
    #[arg(long, default_value_t = 800)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 600)]
    height: u32,
    /// Rotation about the vertical axis, radians (URL: yaw).
    #[arg(long, allow_negative_numbers = true)]
    yaw: Option<f32>,
    /// Elevation, radians (URL: pitch).
    #[arg(long, allow_negative_numbers = true)]
    pitch: Option<f32>,
    /// Distance from the target; without it the view is fitted to 90 % of
    /// the mass, as the web app does on import (URL: dist).
    #[arg(long)]
    distance: Option<f32>,
    /// Target point x, y, z (URL: tx, ty, tz).
    #[arg(long, num_args = 3, allow_negative_numbers = true, value_names = ["X", "Y", "Z"])]
    target: Option<Vec<f32>>,
    /// Vertical field of view, radians (URL: fov).
    #[arg(long)]
    fov: Option<f32>,
    /// Sprite diameter in pixels at the target's depth (URL: ps).
    #[arg(long)]
    point_size: Option<f32>,
    /// Brightness multiplier (URL: bright).
    #[arg(long)]
    brightness: Option<f32>,
    /// Colouring (URL: color).
    #[arg(long, value_parser = color_parser(), default_value = "speed")]
    color: ColorMode,
    /// Same sprite size at every depth (URL: atten=0).
    #[arg(long)]
    no_attenuation: bool,
    /// Leave out the particles of this kind: halo, disk, bulge, stars,
    /// gas, boundary (Gadget-2's numbers 0-5 also do); repeat it to hide
    /// several (URL: halo=0 hides the haloes). The snapshot must carry
    /// particle kinds, as webgrav's galaxy models write them.
    #[arg(long = "hide", value_name = "K")]
    hide: Vec<String>,
    /// The solver whose potentials colour `--color potential` (and whose
    /// particle order the sprites are drawn in, as in the web app).
    #[command(flatten)]
    solver: SolverArgs,
}

/// Draws a snapshot offscreen with the web app's renderer and writes a PNG.
pub async fn render(a: RenderArgs) -> Result<()> {
    check_typed_output(&a.out, "png", "the image", &[&a.input])?;
    let hidden: Vec<u8> = a
        .hide
        .iter()
        .map(|k| match parse_kind("--hide", k)? {
            (_, Some(t)) => Ok(t),
            (_, None) => Err(Error::InvalidParameter(
                "--hide all would draw nothing".into(),
            )),
        })
        .collect::<Result<_>>()?;
    let snap = snapshot::read_file(&a.input)?;
    if !hidden.is_empty() && snap.types.is_none() {
        return Err(Error::InvalidParameter(format!(
            "{} has no particle kinds, so --hide has nothing to hide",
            a.input
        )));
    }
    let ctx = GpuContext::headless().await?;
    let p = &snap.particles;
    let config = a.solver.config(1.0)?;
    check_particle_count(&ctx, p.len() as u64, config.solver())?;
    // Creating the run computes the potentials, as in the browser.
    let mut run = Run::new(&ctx, p, snap.time, config).await?;
    let state = run.readout(&ctx).await?;
    let ranges = ColorRanges::of(&state.snapshot.particles.vel, Some(&state.acc_pot));
    let mut camera = Camera::default();
    // Fitted to what is drawn: a disk, not the halo around it.
    let (center, radius) = match &snap.types {
        Some(types) if !hidden.is_empty() => {
            let shown: Vec<_> = (p.pos_mass.iter().zip(types))
                .filter(|(_, t)| !hidden.contains(t))
                .map(|(pm, _)| *pm)
                .collect();
            if shown.is_empty() {
                return Err(Error::InvalidParameter(format!(
                    "{} has no particles left to draw after --hide",
                    a.input
                )));
            }
            view_sphere(&shown)
        }
        _ => view_sphere(&p.pos_mass),
    };
    if let Some(fov) = a.fov {
        camera.fov_y = fov;
    }
    camera.fit(center, radius, a.width, a.height);
    camera.yaw = a.yaw.unwrap_or(camera.yaw);
    camera.pitch = a.pitch.unwrap_or(camera.pitch);
    camera.distance = a.distance.unwrap_or(camera.distance);
    if let Some(t) = &a.target {
        camera.target = [t[0], t[1], t[2]];
    }
    camera.point_size = a.point_size.unwrap_or(camera.point_size);
    camera.brightness = a.brightness.unwrap_or(camera.brightness);
    camera.size_attenuation = !a.no_attenuation;
    camera.color_mode = a.color;
    // Colour by the kinds the file carries (else by mass shells).
    let components = ComponentTags::of_kinds(snap.types.as_deref(), &p.pos_mass);
    camera.hidden_tags = hidden.iter().fold(0, |m, &t| m | 1 << t);
    let rgba = render_rgba(
        &ctx,
        run.display(),
        &components.tags,
        &camera,
        ranges.for_mode(camera.color_mode),
        a.width,
        a.height,
    )
    .await?;
    let mut png_bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png_bytes, a.width, a.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let to_err = |e: png::EncodingError| Error::InvalidParameter(format!("PNG: {e}"));
        let mut writer = encoder.write_header().map_err(to_err)?;
        writer.write_image_data(&rgba).map_err(to_err)?;
    }
    snapshot::write_atomic(&a.out, &png_bytes)?;
    say!(
        "wrote {} ({}x{}, {} particles, yaw {} pitch {} distance {} target {:?})",
        a.out,
        a.width,
        a.height,
        p.len(),
        camera.yaw,
        camera.pitch,
        camera.distance,
        camera.target
    );
    Ok(())
}
