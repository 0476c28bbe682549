//! A model, or a file's particles, started as the page starts them: the
//! run, the scene the renderer draws of it, and what the view keeps on
//! the host to frame and colour it (`StartView`). The page and the frame
//! benchmark (`bench frame`, which the browser-engine lab times) both
//! start here, so the benchmark times the page's own path.
//!
//! For a leapfrog solver a model never comes to the host: the run starts
//! from the GPU's arrays (`Run::from_sampled`) and the view keeps a
//! sample of them (`render::view_sample`). The Plummer sphere and the
//! cold collapse are sampled whole there; a galaxy is sampled component
//! by component in place and placed there (`Model::galaxy_on_gpu`). A
//! model of one component has its mass shells tagged there; a galaxy of
//! several has its components' tags read back (4 bytes a particle: the
//! page's whole read-outs weigh every particle by its component). At 2^24 particles that spares the page a 512 MB
//! read-back, its passes over it on the page's one core (a galaxy's f64
//! assembly among them) and the upload back. A Hermite run, a few-body
//! model and a file are made on the host and uploaded.

use crate::error::Result;
use crate::gpu::layout::PosMass;
use crate::gpu::timing::now_ms;
use crate::gpu::GpuContext;
use crate::render::view_sample::{tag_shells, ViewSample};
use crate::render::{ColorRanges, ComponentTags, MassShells, Scene, TagTotals};
use crate::run::{Run, RunConfig};
use crate::state::generate::{self, Sampled};
use crate::state::model::GalaxyOnGpu;
use crate::state::{Model, ModelParams, Particles};

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

/// Starts `n` particles of `model` (seed `seed`, parameters `params`) at
/// t = 0 with `config`: on the GPU alone where the solver is a leapfrog
/// one and the model a sphere or a galaxy (the module's comment), else as
/// `start_particles` of the model made on the host.
pub async fn start_model(
    ctx: &GpuContext,
    model: Model,
    n: usize,
    seed: u64,
    params: &ModelParams,
    config: RunConfig,
) -> Result<Started> {
    let begin = now_ms();
    if !config.params().solver.is_hermite() {
        if let Some(at_rest) = model.sampled_whole_on_gpu() {
            let sampled = generate::plummer_on_gpu(ctx, n, seed, at_rest).await?;
            return start_sphere(ctx, sampled, config, now_ms() - begin).await;
        }
        if let Some(galaxy) = model.galaxy_on_gpu(ctx, n, seed, params).await? {
            let generate_ms = now_ms() - begin;
            // As `ComponentTags::of_model`: a model of one component is
            // coloured by mass shells.
            return match galaxy.components.len() {
                0 | 1 => start_sphere(ctx, galaxy.sampled, config, generate_ms).await,
                _ => start_galaxy(ctx, galaxy, config, generate_ms).await,
            };
        }
    }
    let m = model.generate_on(ctx, n, seed, params).await?;
    let generate_ms = now_ms() - begin;
    let tagging = now_ms();
    let components = ComponentTags::of_model(&m);
    let tagging_ms = now_ms() - tagging;
    let mut started = start_particles(ctx, m.particles, 0.0, components, config).await?;
    started.times.generate_ms = generate_ms;
    started.times.view_ms += tagging_ms;
    Ok(started)
}

/// A model of one component sampled on the GPU in its centre-of-mass
/// frame (`sampled`, made in `generate_ms`: a Plummer sphere, a cold
/// collapse, a Hernquist or NFW sphere), started there: its mass shells
/// tagged there, the view from a sample.
async fn start_sphere(
    ctx: &GpuContext,
    sampled: Sampled,
    config: RunConfig,
    generate_ms: f64,
) -> Result<Started> {
    let n = sampled.count;
    // The view first: the run takes the arrays, and reorders them.
    let view_begin = now_ms();
    let sample = ViewSample::gather(ctx, &sampled.pos_mass, &sampled.vel, None, n).await?;
    // The model is in its centre-of-mass frame.
    let shells = MassShells::about([0.0; 3], &sample.pos_mass);
    let (tags, totals) = tag_shells(ctx, &sampled.pos_mass, n, &shells).await?;
    let view_ms = now_ms() - view_begin;
    let components = ComponentTags::shells_on_gpu();
    let tagged = (tags, components, totals);
    start_sampled(
        ctx,
        (sampled, sample),
        tagged,
        config,
        [generate_ms, view_ms],
    )
    .await
}

/// A galaxy sampled and placed on the GPU (made in `generate_ms`),
/// started there: its tags are its components (read back: the page's
/// whole read-outs weigh every particle by its component), the view from
/// a sample.
async fn start_galaxy(
    ctx: &GpuContext,
    galaxy: GalaxyOnGpu,
    config: RunConfig,
    generate_ms: f64,
) -> Result<Started> {
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
    start_sampled(
        ctx,
        (galaxy.sampled, sample),
        tagged,
        config,
        [generate_ms, view_ms],
    )
    .await
}

/// The run and scene of particles left on the GPU (`sampled`, of which
/// `sample` is the view's sample), tagged on the GPU by `tags` as
/// `components` name them; `[generate_ms, view_ms]` so far.
async fn start_sampled(
    ctx: &GpuContext,
    (sampled, sample): (Sampled, ViewSample),
    (tags, components, totals): (wgpu::Buffer, ComponentTags, TagTotals),
    config: RunConfig,
    [generate_ms, mut view_ms]: [f64; 2],
) -> Result<Started> {
    let setup_begin = now_ms();
    let run = Run::from_sampled(ctx, sampled, 0.0, config).await?;
    let setup_ms = now_ms() - setup_begin;
    let scene_begin = now_ms();
    let scene = Scene::with_tags(run.display(), tags, &components, totals.clone());
    let view = StartView {
        components,
        totals,
        ranges: ColorRanges::of(&sample.vel, None),
        positions: sample.pos_mass,
    };
    view_ms += now_ms() - scene_begin;
    Ok(Started {
        run,
        scene,
        view,
        particles: None,
        times: StartTimes {
            generate_ms,
            setup_ms,
            view_ms,
        },
    })
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
