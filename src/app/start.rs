//! A model, or a file's particles, started as the page starts them: the
//! run, the scene the renderer draws of it, and what the view keeps on
//! the host to frame and colour it (`StartView`). The page and the frame
//! benchmark (`bench frame`, which the browser-engine lab times) both
//! start here, so the benchmark times the page's own path.
//!
//! A model the GPU samples whole (the Plummer sphere and the cold
//! collapse) for a leapfrog solver never comes to the host: the run
//! starts from the GPU's arrays (`Run::from_sampled`), the particles'
//! mass shells are tagged there, and the view keeps a sample of them
//! (`render::view_sample`). At 2^24 particles that spares the page a
//! 512 MB read-back, its passes over it on the page's one core and the
//! upload back (it reads 13 MB of sample and 2 MB of the shells' sums).
//! Any other model, and a file, is made on the host and uploaded.

use crate::error::Result;
use crate::gpu::layout::PosMass;
use crate::gpu::timing::now_ms;
use crate::gpu::GpuContext;
use crate::render::view_sample::{tag_shells, ViewSample};
use crate::render::{ColorRanges, ComponentTags, MassShells, Scene, TagTotals};
use crate::run::{Run, RunConfig};
use crate::state::{generate, Model, ModelParams, Particles};

/// What the view keeps on the host of a run's particles.
pub struct StartView {
    pub components: ComponentTags,
    /// Mass and count of each tag.
    pub totals: TagTotals,
    pub ranges: ColorRanges,
    /// Positions and masses to fit the view to: every particle's, in
    /// upload order as `components.tags`; or, where the particles stayed
    /// on the GPU, a view sample's (their tags are mass shells, which
    /// weigh alike in a fit: `ComponentTags::fit_weights`).
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
/// t = 0 with `config`: on the GPU alone where it samples the model whole
/// and the solver is a leapfrog one (the module's comment), else as
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
    let at_rest = match model.sampled_whole_on_gpu() {
        Some(at_rest) if !config.params().solver.is_hermite() => at_rest,
        _ => {
            let m = model.generate_on(ctx, n, seed, params).await?;
            let generate_ms = now_ms() - begin;
            let tagging = now_ms();
            let components = ComponentTags::of_model(&m);
            let tagging_ms = now_ms() - tagging;
            let mut started = start_particles(ctx, m.particles, 0.0, components, config).await?;
            started.times.generate_ms = generate_ms;
            started.times.view_ms += tagging_ms;
            return Ok(started);
        }
    };
    let sampled = generate::plummer_on_gpu(ctx, n, seed, at_rest).await?;
    let generate_ms = now_ms() - begin;
    // The view first: the run takes the arrays, and reorders them.
    let view_begin = now_ms();
    let sample = ViewSample::gather(ctx, &sampled.pos_mass, &sampled.vel, None, n).await?;
    // The model is in its centre-of-mass frame.
    let shells = MassShells::about([0.0; 3], &sample.pos_mass);
    let (tags, totals) = tag_shells(ctx, &sampled.pos_mass, n, &shells).await?;
    let mut view_ms = now_ms() - view_begin;
    let setup_begin = now_ms();
    let run = Run::from_sampled(ctx, sampled, 0.0, config).await?;
    let setup_ms = now_ms() - setup_begin;
    let scene_begin = now_ms();
    let components = ComponentTags::shells_on_gpu();
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
