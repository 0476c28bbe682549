//! A model, or a file's particles, started as the page starts them: the
//! run, the scene the renderer draws of it, and what the view keeps on
//! the host to frame and colour it (`StartView`). The page and the frame
//! benchmark (`bench frame`, which the browser-engine lab times) both
//! start here, so the benchmark times the page's own path.
//!
//! For a leapfrog solver a model never comes to the host: the run starts
//! from the GPU's arrays (`Run::from_gpu_state`) and the view keeps a
//! sample of them (`render::view_sample`). The Plummer sphere and the
//! cold collapse are sampled whole there; a galaxy is sampled component
//! by component in place and placed there (`Model::galaxy_on_gpu`). A
//! model of one component has its mass shells tagged there; a galaxy of
//! several has its components' tags read back (4 bytes a particle: the
//! page's whole read-outs weigh every particle by its component). At 2^24 particles that spares the page a 512 MB
//! read-back, its passes over it on the page's one core (a galaxy's f64
//! assembly among them) and the upload back. A Hermite run, a few-body
//! model and a file are made on the host and uploaded.
//!
//! A start is in two parts (`make_model`, then `Made::start`): the model
//! made and viewed, then its run. A model left on the GPU can be drawn
//! between the two (`Made::Viewed`'s picture): the page shows its first
//! model that way, before its solver's kernels are built: on a new
//! device, half of a browser's wait for the first frame (BENCHMARKS.md).

use crate::error::Result;
use crate::gpu::layout::PosMass;
use crate::gpu::timing::now_ms;
use crate::gpu::GpuContext;
use crate::render::view_sample::{tag_shells, ViewSample};
use crate::render::{ColorRanges, ComponentTags, MassShells, Scene, TagTotals};
use crate::run::{Run, RunConfig};
use crate::state::generate::{self, Sampled};
use crate::state::model::GalaxyOnGpu;
use crate::state::{GpuParticles, Model, ModelParams, Particles};

/// What the view keeps on the host of a run's particles.
pub struct StartView {
    pub components: ComponentTags,
    /// Mass and count of each tag.
    pub totals: TagTotals,
    pub ranges: ColorRanges,
    /// Positions and masses to fit the view to: every particle's, in
    /// upload order as `components.tags`; or, where the particles stayed
    /// on the GPU, a view sample's (`ComponentTags::fit_weights` weighs
    /// them by the sampled particles' tags).
    pub positions: Vec<PosMass>,
}

/// Milliseconds of a start's parts.
#[derive(Clone, Copy, Debug, Default)]
pub struct StartTimes {
    /// The model made (on the host: read back).
    pub generate_ms: f64,
    /// The run's set-up: upload, kernels, first forces.
    pub setup_ms: f64,
    /// The view: its sample, the tags and their totals, colour ranges,
    /// the scene.
    pub view_ms: f64,
}

/// A run started for the page.
pub struct Started {
    pub run: Run,
    pub scene: Scene,
    pub view: StartView,
    /// The particles, where they were made on the host (a few-body run's
    /// bodies are weighed and named from them).
    pub particles: Option<Particles>,
    pub times: StartTimes,
}

/// A model made and viewed, its run not started (`Made::start`).
pub enum Made {
    /// Left on the GPU for a leapfrog run: its picture can be drawn now.
    Viewed(Box<Picture>, Box<PendingRun>),
    /// Made on the host (a Hermite run's, a few-body model's): drawn once
    /// its run has uploaded it (`start_particles`).
    OnHost(Box<OnHost>),
}

/// What the page draws of a model on the GPU before its run exists: the
/// scene binds the state the run will step (the same buffers), so the
/// picture is the run's at t = 0.
pub struct Picture {
    pub scene: Scene,
    pub view: StartView,
    /// The start's parts so far (no set-up yet).
    pub times: StartTimes,
}

/// The run of a model left on the GPU, to be started (`start`).
pub struct PendingRun {
    state: GpuParticles,
    /// The model's index of the state's first particle.
    first: usize,
    config: RunConfig,
}

impl PendingRun {
    /// The run of the state at t = 0 (its solver's kernels built, the
    /// first forces queued), and how long that took (ms).
    pub async fn start(self, ctx: &GpuContext) -> Result<(Run, f64)> {
        let begin = now_ms();
        let run = Run::from_gpu_state(ctx, self.state, self.first, 0.0, self.config).await?;
        Ok((run, now_ms() - begin))
    }
}

/// A model made on the host, its tags, and its start's parts so far.
pub struct OnHost {
    particles: Particles,
    components: ComponentTags,
    generate_ms: f64,
    tagging_ms: f64,
    config: RunConfig,
}

impl Made {
    /// The run of the model made, at t = 0.
    pub async fn start(self, ctx: &GpuContext) -> Result<Started> {
        match self {
            Made::Viewed(picture, pending) => {
                let (run, setup_ms) = pending.start(ctx).await?;
                let Picture {
                    scene,
                    view,
                    mut times,
                } = *picture;
                times.setup_ms = setup_ms;
                Ok(Started {
                    run,
                    scene,
                    view,
                    particles: None,
                    times,
                })
            }
            Made::OnHost(h) => {
                let mut started =
                    start_particles(ctx, h.particles, 0.0, h.components, h.config).await?;
                started.times.generate_ms = h.generate_ms;
                started.times.view_ms += h.tagging_ms;
                Ok(started)
            }
        }
    }
}

/// Makes `n` particles of `model` (seed `seed`, parameters `params`) for
/// a run with `config` (started at t = 0 by `Made::start`): on the GPU
/// alone, and viewed there, where the solver is a leapfrog one and the
/// model a sphere or a galaxy (the module's comment), else on the host.
pub async fn make_model(
    ctx: &GpuContext,
    model: Model,
    n: usize,
    seed: u64,
    params: &ModelParams,
    config: RunConfig,
) -> Result<Made> {
    let begin = now_ms();
    if config.params().solver.starts_on_gpu() {
        if let Some(at_rest) = model.sampled_whole_on_gpu() {
            let sampled = generate::plummer_on_gpu(ctx, n, seed, at_rest).await?;
            return view_sphere(ctx, sampled, config, now_ms() - begin).await;
        }
        if let Some(galaxy) = model.galaxy_on_gpu(ctx, n, seed, params).await? {
            let generate_ms = now_ms() - begin;
            // As `ComponentTags::of_model`: a model of one component is
            // coloured by mass shells.
            return match galaxy.components.len() {
                0 | 1 => view_sphere(ctx, galaxy.sampled, config, generate_ms).await,
                _ => view_galaxy(ctx, galaxy, config, generate_ms).await,
            };
        }
    }
    let m = model.generate_on(ctx, n, seed, params).await?;
    let generate_ms = now_ms() - begin;
    let tagging = now_ms();
    let components = ComponentTags::of_model(&m);
    Ok(Made::OnHost(Box::new(OnHost {
        particles: m.particles,
        components,
        generate_ms,
        tagging_ms: now_ms() - tagging,
        config,
    })))
}

/// A model of one component sampled on the GPU in its centre-of-mass
/// frame (`sampled`, made in `generate_ms`: a Plummer sphere, a cold
/// collapse, a Hernquist or NFW sphere), viewed there: its mass shells
/// tagged there, the view from a sample.
async fn view_sphere(
    ctx: &GpuContext,
    sampled: Sampled,
    config: RunConfig,
    generate_ms: f64,
) -> Result<Made> {
    let n = sampled.count;
    let view_begin = now_ms();
    let sample = ViewSample::gather(ctx, &sampled.pos_mass, &sampled.vel, None, n).await?;
    // The model is in its centre-of-mass frame.
    let shells = MassShells::about([0.0; 3], &sample.pos_mass);
    let (tags, totals) = tag_shells(ctx, &sampled.pos_mass, n, &shells).await?;
    let view_ms = now_ms() - view_begin;
    let components = ComponentTags::shells_on_gpu();
    let tagged = (tags, components, totals);
    Ok(viewed(
        ctx,
        (sampled, sample),
        tagged,
        config,
        [generate_ms, view_ms],
    ))
}

/// A galaxy sampled and placed on the GPU (made in `generate_ms`),
/// viewed there: its tags are its components (read back: the page's
/// whole read-outs weigh every particle by its component), the view from
/// a sample.
async fn view_galaxy(
    ctx: &GpuContext,
    galaxy: GalaxyOnGpu,
    config: RunConfig,
    generate_ms: f64,
) -> Result<Made> {
    let n = galaxy.sampled.count;
    let view_begin = now_ms();
    let s = &galaxy.sampled;
    let sample = ViewSample::gather(ctx, &s.pos_mass, &s.vel, None, n).await?;
    let components = ComponentTags {
        tags: galaxy.read_tags(ctx).await?,
        names: galaxy.components,
        by_shells: false,
    };
    let view_ms = now_ms() - view_begin;
    let tagged = (galaxy.tags, components, TagTotals(galaxy.totals));
    Ok(viewed(
        ctx,
        (galaxy.sampled, sample),
        tagged,
        config,
        [generate_ms, view_ms],
    ))
}

/// The picture and pending run of particles left on the GPU (`sampled`,
/// of which `sample` is the view's sample), tagged on the GPU by `tags`
/// as `components` name them; `[generate_ms, view_ms]` so far.
fn viewed(
    ctx: &GpuContext,
    (sampled, sample): (Sampled, ViewSample),
    (tags, components, totals): (wgpu::Buffer, ComponentTags, TagTotals),
    config: RunConfig,
    [generate_ms, mut view_ms]: [f64; 2],
) -> Made {
    let begin = now_ms();
    let first = sampled.first;
    let state = sampled.into_state(ctx);
    let scene = Scene::with_tags(&state, tags, &components, totals.clone());
    let view = StartView {
        components,
        totals,
        ranges: ColorRanges::of(&sample.vel, None),
        positions: sample.pos_mass,
    };
    view_ms += now_ms() - begin;
    let picture = Picture {
        scene,
        view,
        times: StartTimes {
            generate_ms,
            setup_ms: 0.0,
            view_ms,
        },
    };
    let pending = PendingRun {
        state,
        first,
        config,
    };
    Made::Viewed(Box::new(picture), Box::new(pending))
}

/// Starts `particles` (tagged by `components`) at `time` with `config`:
/// uploaded, and the view's figures taken of every particle.
pub async fn start_particles(
    ctx: &GpuContext,
    particles: Particles,
    time: f64,
    components: ComponentTags,
    config: RunConfig,
) -> Result<Started> {
    let begin = now_ms();
    let run = Run::new(ctx, &particles, time, config).await?;
    let setup_ms = now_ms() - begin;
    let view_begin = now_ms();
    let totals = TagTotals::of(&particles.pos_mass, &components.tags);
    let scene = Scene::new(ctx, run.display(), &components, totals.clone());
    let view = StartView {
        ranges: ColorRanges::of(&particles.vel, None),
        positions: particles.pos_mass.clone(),
        components,
        totals,
    };
    let view_ms = now_ms() - view_begin;
    Ok(Started {
        run,
        scene,
        view,
        particles: Some(particles),
        times: StartTimes {
            generate_ms: 0.0,
            setup_ms,
            view_ms,
        },
    })
}
