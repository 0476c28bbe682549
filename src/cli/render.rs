//! `webgrav render`: a snapshot drawn offscreen with the web app's
//! renderer and camera numbers, written as PNG.

use super::{check_typed_output, color_parser, parse_kind, say, SolverArgs};
use crate::app::check_particle_count;
use crate::app::picture::{self, View};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::render::ColorMode;
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
    let view = View {
        width: a.width,
        height: a.height,
        yaw: a.yaw,
        pitch: a.pitch,
        distance: a.distance,
        target: a.target.as_ref().map(|t| [t[0], t[1], t[2]]),
        fov: a.fov,
        point_size: a.point_size,
        brightness: a.brightness,
        attenuation: !a.no_attenuation,
        color: a.color,
        hidden,
    };
    let picture = picture::draw(&ctx, &mut run, snap.types.as_deref(), &view).await?;
    snapshot::write_atomic(&a.out, &picture.png()?)?;
    let camera = picture.camera;
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
