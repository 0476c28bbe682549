//! `webgrav render`: a snapshot drawn offscreen with the web app's
//! renderer and camera numbers, written as PNG (a picture of the light or
//! a surface-density map, with one JSON line of what was measured on it);
//! or a series of snapshots as numbered frames and, through `ffmpeg`, a
//! video.

use super::{check_typed_output, emit, parse_kind, say};
use crate::app::check_particle_count;
use crate::app::picture::{self, Picture, View};
use crate::app::series::{read_index, INDEX_NAME};
use crate::app::settings;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::render::map::Units;
use crate::render::{Camera, ColorMode, MapKind};
use crate::run::{check_range, RunConfig, RunParams, SolverKind};
use crate::snapshot::{self, Snapshot};
use clap::builder::TypedValueParser;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct RenderArgs {
    /// Snapshot to draw (.tipsy, .bonsai, .csv, Gadget-2).
    #[arg(required_unless_present = "series", conflicts_with = "series")]
    input: Option<String>,
    /// Output: an image (.png); with --series a video (.mp4, .webm, .mkv,
    /// .mov, .gif: made by ffmpeg from the frames) or a directory for the
    /// frames alone.
    #[arg(short = 'o', long = "out")]
    out: String,
    /// Image width in pixels.
    #[arg(long, default_value_t = 800)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 600)]
    height: u32,
    // The camera's numbers are the page's URL parameters and take the
    // page's ranges (`page_number`). A value may start with '-' ("-inf"
    // among them), so that it reaches the range check rather than reading
    // as an option.
    /// Rotation about the vertical axis, radians (URL: yaw). Without yaw
    /// and pitch a visible disk is seen face-on.
    #[arg(long, allow_hyphen_values = true, value_parser = page_number("yaw"))]
    yaw: Option<f32>,
    /// Elevation, radians (URL: pitch).
    #[arg(long, allow_hyphen_values = true, value_parser = page_number("pitch"))]
    pitch: Option<f32>,
    /// Distance from the target; without it the view is fitted to 90 % of
    /// the mass drawn, as the web app does (URL: dist).
    #[arg(long, allow_hyphen_values = true, value_parser = page_number("dist"))]
    distance: Option<f32>,
    /// Target point x, y, z (URL: tx, ty, tz).
    #[arg(
        long,
        num_args = 3,
        allow_hyphen_values = true,
        value_parser = page_number("tx"),
        value_names = ["X", "Y", "Z"]
    )]
    target: Option<Vec<f32>>,
    /// Vertical field of view, radians (URL: fov).
    #[arg(long, allow_hyphen_values = true, value_parser = page_number("fov"))]
    fov: Option<f32>,
    /// Sprite diameter in pixels at the target's depth (URL: ps); of a
    /// map, the smoothing kernel's diameter.
    #[arg(long, allow_hyphen_values = true, value_parser = page_number("ps"))]
    point_size: Option<f32>,
    /// Exposure bias: the measured white point is divided by it (URL:
    /// bright).
    #[arg(long, allow_hyphen_values = true, value_parser = page_number("bright"))]
    brightness: Option<f32>,
    /// Colouring of pictures (URL: color).
    #[arg(long, value_parser = super::color_parser(), default_value = "speed")]
    color: ColorMode,
    /// What to draw: `light` (a picture) or `density` (the projected
    /// surface density Σ of what is drawn, log scale, with a colour bar)
    /// (URL: map).
    #[arg(long, value_parser = map_parser(), default_value = "light")]
    map: MapKind,
    /// Same sprite size at every depth (URL: atten=0).
    #[arg(long)]
    no_attenuation: bool,
    /// Leave out the particles of this kind: halo, disk, bulge, stars,
    /// gas, boundary (Gadget-2's numbers 0-5 also do); repeat it to hide
    /// several (URL: halo=0 hides the haloes). The snapshot must carry
    /// particle kinds, as webgrav's galaxy models write them.
    #[arg(long = "hide", value_name = "K")]
    hide: Vec<String>,
    /// Units of the labels: nbody, or bonsai (1 kpc, 2.325e9 M☉, 9.78 Myr:
    /// webgrav's Milky Way and merger).
    #[arg(long, value_parser = units_parser(), default_value = "nbody")]
    units: Units,
    /// Labels (colour bar, scale bar, time): auto (on maps only), on, off.
    #[arg(long, value_parser = ["auto", "on", "off"], default_value = "auto")]
    legend: String,
    /// The map's colour range as log10 Σ in the labels' units (else the
    /// frame's own; a series keeps its first frame's).
    #[arg(long, num_args = 2, allow_hyphen_values = true, value_names = ["LO", "HI"])]
    range: Option<Vec<f64>>,
    /// Radius (length units) within which a map's bar mode A2 is measured;
    /// default: the radius holding half the map's mass.
    #[arg(long)]
    a2_radius: Option<f64>,
    /// Aim at the density centre of what is drawn (each frame of a
    /// series) rather than at its centre of mass.
    #[arg(long)]
    follow: bool,
    /// Draw the tree's cells of the first K levels over the picture, as
    /// the GPU builds them (one tree evaluation with --eps and --theta),
    /// coloured by level, like the page's `cells=K`.
    #[arg(long, default_value_t = 0, value_name = "K", value_parser = clap::value_parser!(u32).range(0..=22))]
    cells: u32,
    /// Softening of the potentials that colour `--color potential` (one
    /// tree evaluation; no other colouring computes forces).
    #[arg(long, default_value_t = 0.01)]
    eps: f32,
    /// Opening angle of that tree evaluation.
    #[arg(long, default_value_t = 0.75)]
    theta: f32,
    /// Draw every snapshot of this directory (its index.json, as `webgrav
    /// run --snap-every` writes it, or else its snapshot files by name),
    /// one numbered frame each, the camera and exposure (a map's colour
    /// bar) of the first frame kept.
    #[arg(long, value_name = "DIR")]
    series: Option<String>,
    /// Frames per second of the video.
    #[arg(long, default_value_t = 24.0)]
    fps: f64,
    /// Where a video's frames go (default: beside it, `NAME-frames/`).
    #[arg(long, value_name = "DIR")]
    frames: Option<String>,
}

/// A parser of the camera option that is the page's URL parameter `key`:
/// the row's range (`app::settings::VIEW_PARAMS`), so the CLI refuses what
/// the page refuses (NaN, infinities, a field of view of 0), in its words.
fn page_number(key: &'static str) -> impl TypedValueParser<Value = f32> {
    let row = settings::param(key).expect("a row of the page's parameters");
    move |text: &str| {
        row.parse_number(text)
            .map(|x| x as f32)
            .map_err(|e| format!("{e}, as the page's {key} takes"))
    }
}

fn map_parser() -> impl clap::builder::TypedValueParser<Value = MapKind> {
    super::choice(
        MapKind::ALL.iter().map(|m| m.name()).collect(),
        MapKind::from_name,
    )
}

fn units_parser() -> impl clap::builder::TypedValueParser<Value = Units> {
    super::choice(
        Units::ALL.iter().map(|u| u.name()).collect(),
        Units::from_name,
    )
}

/// Video containers ffmpeg writes from the frames.
const VIDEO_EXTENSIONS: &[&str] = &["mp4", "webm", "mkv", "mov", "gif"];

impl RenderArgs {
    /// The map's colour range (log10 Σ), checked.
    fn sigma_range(&self) -> Result<Option<[f64; 2]>> {
        let Some(r) = &self.range else {
            return Ok(None);
        };
        let (lo, hi) = (r[0], r[1]);
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::InvalidParameter(format!(
                "--range {lo} {hi}: the ends are log10 Σ in the labels' units and must be \
                 finite numbers (e.g. --range -2 3): an infinite end would stretch the colour \
                 map over every Σ and leave the map one colour"
            )));
        }
        if lo >= hi {
            return Err(Error::InvalidParameter(format!(
                "--range {lo} {hi}: LO must be below HI (log10 Σ at the colour map's faint \
                 and bright ends)"
            )));
        }
        Ok(Some([lo, hi]))
    }

    fn view(&self) -> Result<View> {
        let hidden = self
            .hide
            .iter()
            .map(|k| match parse_kind("--hide", k)? {
                (_, Some(t)) => Ok(t),
                (_, None) => Err(Error::InvalidParameter(
                    "--hide all would draw nothing".into(),
                )),
            })
            .collect::<Result<_>>()?;
        Ok(View {
            width: self.width,
            height: self.height,
            yaw: self.yaw,
            pitch: self.pitch,
            distance: self.distance,
            target: self.target.as_ref().map(|t| [t[0], t[1], t[2]]),
            fov: self.fov,
            point_size: self.point_size,
            brightness: self.brightness,
            attenuation: !self.no_attenuation,
            color: self.color,
            map: self.map,
            hidden,
            units: self.units,
            legend: match self.legend.as_str() {
                "on" => Some(true),
                "off" => Some(false),
                _ => None,
            },
            sigma_range: self.sigma_range()?,
            exposure: None,
            follow: self.follow,
            cells: self.cells,
        })
    }

    /// The tree evaluation that gives `--color potential` its potentials.
    fn potentials(&self) -> Result<RunConfig> {
        RunParams {
            solver: SolverKind::Tree,
            eps: self.eps,
            theta: self.theta,
            // The opening angle decides, as --theta says.
            alpha: 0.0,
            ..RunParams::default()
        }
        .validate()
    }
}

/// Draws a snapshot (or a series) offscreen with the web app's renderer.
pub async fn render(a: RenderArgs) -> Result<()> {
    if let Some(r) = a.a2_radius {
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::InvalidParameter(format!(
                "--a2-radius must be a length > 0 (and finite), got {r}"
            )));
        }
    }
    let view = a.view()?;
    let potentials = a.potentials()?;
    match (&a.input, &a.series) {
        (Some(input), _) => one(&a, input, &view, potentials).await,
        (None, Some(dir)) => series(&a, dir, view, potentials).await,
        (None, None) => unreachable!("clap requires an input or --series"),
    }
}

/// A snapshot to draw, refused where `run` would refuse it
/// (`run::check_range`): coordinates and velocities beyond what f32 can
/// square and sum would give the camera's fit and the scale bar infinities.
fn read_drawable(path: &str) -> Result<Snapshot> {
    let snap = snapshot::read_file(path)?;
    check_range(&snap.particles).map_err(|e| match e {
        Error::InvalidParameter(m) => Error::InvalidParameter(format!("{path}: {m}")),
        e => e,
    })?;
    Ok(snap)
}

fn check_kinds(view: &View, snap: &Snapshot, path: &str) -> Result<()> {
    if !view.hidden.is_empty() && snap.types.is_none() {
        return Err(Error::InvalidParameter(format!(
            "{path} has no particle kinds, so --hide has nothing to hide"
        )));
    }
    Ok(())
}

async fn draw(
    ctx: &GpuContext,
    snap: &Snapshot,
    view: &View,
    potentials: RunConfig,
) -> Result<Picture> {
    let solver = if view.color == ColorMode::Potential {
        SolverKind::Tree
    } else {
        // Drawing alone holds what the direct solver's buffers hold.
        SolverKind::Direct
    };
    check_particle_count(ctx, snap.particles.len() as u64, solver)?;
    picture::draw_snapshot(ctx, snap, view, potentials).await
}

/// The JSON line of one image: its camera and exposure, and a map's
/// numbers (mass drawn, Σ range, bar mode).
fn summary(
    a: &RenderArgs,
    file: &str,
    out: &str,
    snap: &Snapshot,
    p: &Picture,
) -> serde_json::Value {
    let c = &p.camera;
    let lit = p.exposure.lit as f64 / (p.width as f64 * p.height as f64);
    let mut line = serde_json::json!({
        "file": file,
        "out": out,
        "time": snap.time,
        "n": snap.particles.len(),
        "drawn": p.drawn,
        "map": c.map.name(),
        "yaw": c.yaw,
        "pitch": c.pitch,
        "distance": c.distance,
        "target": c.target,
        "lit_fraction": lit,
    });
    if let Some(map) = &p.map {
        let r = a.a2_radius.unwrap_or_else(|| map.half_mass_radius());
        let (a2, phase) = map.bar_mode(r);
        let [lo, hi] = p.sigma_range.unwrap_or([0.0; 2]);
        line["pixel"] = map.pixel.into();
        line["mass"] = map.total_mass().into();
        line["sigma_lo"] = lo.into();
        line["sigma_hi"] = hi.into();
        line["sigma_units"] = a.units.sigma_label().into();
        line["bar_radius"] = r.into();
        line["a2"] = a2.into();
        line["bar_phase"] = phase.into();
    }
    line
}

async fn one(a: &RenderArgs, input: &str, view: &View, potentials: RunConfig) -> Result<()> {
    check_typed_output(&a.out, "png", "the image", &[input])?;
    let snap = read_drawable(input)?;
    check_kinds(view, &snap, input)?;
    let ctx = GpuContext::headless().await?;
    let picture = draw(&ctx, &snap, view, potentials).await?;
    snapshot::write_atomic(&a.out, &picture.png()?)?;
    emit(summary(a, input, &a.out, &snap, &picture))?;
    let c = picture.camera;
    say!(
        "wrote {} ({}x{}, {} of {} particles drawn, yaw {} pitch {} distance {} target {:?})",
        a.out,
        a.width,
        a.height,
        picture.drawn,
        snap.particles.len(),
        c.yaw,
        c.pitch,
        c.distance,
        c.target
    );
    Ok(())
}

/// The snapshot files of a series directory in time order: its index, or
/// else every file webgrav reads, by name.
fn series_files(dir: &str) -> Result<Vec<(String, Option<f64>)>> {
    let io = |path: &Path, source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    if Path::new(dir).join(INDEX_NAME).exists() {
        return Ok(read_index(dir)?
            .into_iter()
            .map(|(f, t)| (f, Some(t)))
            .collect());
    }
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| io(Path::new(dir), e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file() && snapshot::Format::from_path(&p.display().to_string()).is_ok())
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::InvalidParameter(format!(
            "{dir} holds no {INDEX_NAME} and no snapshot files (.tipsy, .bonsai, .csv, .gadget)"
        )));
    }
    Ok(files.into_iter().map(|f| (f, None)).collect())
}

/// Where the frames go, and the video to make of them (if any).
fn outputs(a: &RenderArgs) -> Result<(PathBuf, Option<String>)> {
    let ext = Path::new(&a.out)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some(e) if VIDEO_EXTENSIONS.contains(&e) => {
            snapshot::check_output(&a.out, &[])?;
            let frames = match &a.frames {
                Some(f) => PathBuf::from(f),
                None => {
                    let stem = Path::new(&a.out).with_extension("");
                    PathBuf::from(format!("{}-frames", stem.display()))
                }
            };
            Ok((frames, Some(a.out.clone())))
        }
        Some(e) => Err(Error::InvalidParameter(format!(
            "'{}': with --series the output is a video ({}) or a directory for the frames, not .{e}",
            a.out,
            VIDEO_EXTENSIONS.join(", ")
        ))),
        None => {
            if a.frames.is_some() {
                return Err(Error::InvalidParameter(
                    "--frames names where a video's frames go; without a video -o is that directory"
                        .into(),
                ));
            }
            Ok((PathBuf::from(&a.out), None))
        }
    }
}

/// `name` on the PATH, if it is there.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Arguments as a POSIX shell reads them back: each that holds anything
/// but plain characters in single quotes (`pad=ceil(iw/2)…` has
/// parentheses, paths may have spaces), so the printed command pastes.
fn shell_words(args: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=%+,@".contains(c);
    args.iter()
        .map(|a| match !a.is_empty() && a.chars().all(plain) {
            true => a.clone(),
            false => format!("'{}'", a.replace('\'', r"'\''")),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The ffmpeg arguments that encode the numbered frames `pattern` at
/// `fps` into `out` (codec by extension; even sizes for yuv420p).
pub fn ffmpeg_args(pattern: &str, fps: f64, out: &str) -> Vec<String> {
    let mut args: Vec<String> = ["-y", "-loglevel", "error", "-framerate"]
        .map(String::from)
        .to_vec();
    args.extend([fps.to_string(), "-i".into(), pattern.into()]);
    let ext = Path::new(out)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let even = "pad=ceil(iw/2)*2:ceil(ih/2)*2";
    let codec: &[&str] = match ext.as_str() {
        "webm" => &[
            "-c:v",
            "libvpx-vp9",
            "-b:v",
            "0",
            "-crf",
            "30",
            "-pix_fmt",
            "yuv420p",
        ],
        "gif" => &[],
        _ => &["-c:v", "libx264", "-crf", "18", "-pix_fmt", "yuv420p"],
    };
    if ext != "gif" {
        args.extend(["-vf".into(), even.into()]);
    }
    args.extend(codec.iter().map(|s| s.to_string()));
    args.push(out.into());
    args
}

async fn series(a: &RenderArgs, dir: &str, mut view: View, potentials: RunConfig) -> Result<()> {
    if !(a.fps.is_finite() && a.fps > 0.0) {
        return Err(Error::InvalidParameter(format!(
            "--fps must be positive, got {}",
            a.fps
        )));
    }
    let (frames_dir, video) = outputs(a)?;
    let files = series_files(dir)?;
    std::fs::create_dir_all(&frames_dir).map_err(|source| Error::Io {
        path: frames_dir.display().to_string(),
        source,
    })?;
    let ctx = GpuContext::headless().await?;
    let mut first: Option<Camera> = None;
    for (k, (path, time)) in files.iter().enumerate() {
        let mut snap = read_drawable(path)?;
        if let Some(t) = time {
            // index.json keeps the time in full precision.
            snap.time = *t;
        }
        check_kinds(&view, &snap, path)?;
        let picture = draw(&ctx, &snap, &view, potentials).await?;
        let out = frames_dir.join(format!("frame_{k:05}.png"));
        let out = out.display().to_string();
        snapshot::write_atomic(&out, &picture.png()?)?;
        emit(summary(a, path, &out, &snap, &picture))?;
        if first.is_none() {
            // Later frames keep the first frame's camera and exposure (a
            // map its colour bar), so the picture changes only where the
            // particles do.
            let c = picture.camera;
            first = Some(c);
            view.yaw = Some(c.yaw);
            view.pitch = Some(c.pitch);
            view.distance = Some(c.distance);
            if !view.follow {
                view.target = Some(c.target);
            }
            if let (Some([lo, hi]), None) = (picture.sigma_range, view.sigma_range) {
                view.sigma_range = Some([lo.log10(), hi.log10()]);
            }
            view.exposure = Some([picture.exposure.lo, picture.exposure.hi]);
        }
    }
    say!(
        "wrote {} frames of {dir} to {}",
        files.len(),
        frames_dir.display()
    );
    let Some(video) = video else {
        return Ok(());
    };
    let pattern = frames_dir.join("frame_%05d.png").display().to_string();
    let args = ffmpeg_args(&pattern, a.fps, &video);
    let Some(ffmpeg) = on_path("ffmpeg") else {
        return Err(Error::InvalidParameter(format!(
            "ffmpeg is not on PATH, so no video was made; the {} frames are in {}. Install ffmpeg \
             (e.g. apt-get install ffmpeg) and run: ffmpeg {}",
            files.len(),
            frames_dir.display(),
            shell_words(&args)
        )));
    };
    let status = std::process::Command::new(&ffmpeg)
        .args(&args)
        .status()
        .map_err(|source| Error::Io {
            path: ffmpeg.display().to_string(),
            source,
        })?;
    if !status.success() {
        return Err(Error::InvalidParameter(format!(
            "ffmpeg failed ({status}) making {video} from {}",
            frames_dir.display()
        )));
    }
    say!("wrote {video} ({} frames at {} fps)", files.len(), a.fps);
    Ok(())
}
