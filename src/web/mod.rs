//! The browser front end (wasm-bindgen): the canvas, frame pacing, device
//! loss and spawning, the series player's frames (conversions to and from
//! JavaScript are in `js.rs`); the simulation is a `run::Run`
//! and the settings are `app::settings`. The page's JavaScript
//! (`www/app.js`) calls `frame` from requestAnimationFrame and the
//! asynchronous read-backs (`readout`, `export`) now and then; nothing here
//! blocks on the GPU.
//!
//! A run whose work needs read-backs (a Hermite advance, a read-out, a
//! reconfiguration) is taken out of its slot by a spawned future and put
//! back when done; frames meanwhile draw its display buffers. Errors reach
//! JavaScript as `Error` objects with a `kind` (`Error::kind`, or
//! `superseded` when the run was replaced meanwhile).

mod bench;
mod bodies;
mod js;
mod tree_view;

use crate::app::analysis::galaxy_of_read;
use crate::app::readout::{radii_and_view, read_for_plots, PlotRead};
use crate::app::series::{format_of, Series};
use crate::app::settings::{Settings, FRAMING_KEYS};
use crate::app::start::{make_model, start_particles, Made, PendingRun, StartView, Started};
use crate::app::{check_particle_count, max_particles};
use crate::gpu::buffers::read_buffers;
use crate::gpu::layout::{Exposure, PosMass};
use crate::gpu::timing::now_ms;
use crate::gpu::GpuContext;
use crate::render::camera::visible_sphere;
use crate::render::legend::round_length;
use crate::render::map::Units;
use crate::render::{
    Camera, ColorMode, ColorRanges, ComponentTags, Drawn, Renderer, Scene, TagTotals, Theme, Tone,
    DENSITY_STOPS,
};
use crate::run::{Measured, Progress, Readout, Run, SolverKind};
use crate::snapshot::{Format, Snapshot};
use crate::state::{GpuParticles, Particles};
use crate::tree::overlay::{CellOverlay, Cells};
use crate::tree::trace::Trace;
use futures_channel::oneshot;
use js::{
    array, galaxy_object, js_err, norm3, set, set_structure, settings_from_object, superseded,
    typed_error, values_object,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// Where the current run's initial conditions came from.
enum Source {
    Model,
    /// An imported file (its name, and its state for `reset`).
    File(String, Box<Snapshot>),
}

/// The current run, out of its slot while a future works with it.
#[derive(Default)]
struct RunSlot {
    run: Option<Box<Run>>,
    epoch: u64,
    /// Why the run stopped, if it did.
    failed: Option<String>,
    /// Futures waiting for the run to come back.
    waiters: Vec<oneshot::Sender<()>>,
}

/// A frame of an opened series on show (the run is paused meanwhile).
struct FrameView {
    index: usize,
    scene: Scene,
    components: ComponentTags,
    ranges: ColorRanges,
    /// The frame's positions and masses (for fit-to-view).
    positions: Vec<PosMass>,
}

struct AppState {
    ctx: GpuContext,
    surface: wgpu::Surface<'static>,
    surface_config: wgpu::SurfaceConfiguration,
    renderer: Renderer,
    settings: Settings,
    slot: RunSlot,
    /// What the renderer draws of the run, and its particle count.
    scene: Scene,
    n: u32,
    /// Component tags in input order (the display's id buffer indexes
    /// them) and their names; mass per tag.
    components: ComponentTags,
    totals: TagTotals,
    progress: Arc<Progress>,
    source: Source,
    ranges: ColorRanges,
    /// Positions and masses of the last state seen, for fit-to-view.
    positions: Vec<PosMass>,
    /// Where `positions` are a sample of a run's state (a light
    /// read-out's), each one's index in the tags' order.
    position_ids: Option<Vec<u32>>,
    /// The ids of the run's marked particles (black holes), which a light
    /// read-out finds apart from its sample; `None`: the run is read whole
    /// (`ComponentTags::marked_ids`).
    marked: Option<Vec<u32>>,
    /// The units of the run (for the map's legend).
    units: Units,
    /// What the last frame drawn used, and its pixel size (length units).
    last_drawn: Option<(Drawn, f64)>,
    /// Scenes put on show so far (the run's, a series frame's): part of
    /// the view a frame is drawn for.
    scenes_shown: u64,
    /// The view of the last frame drawn, and when (ms).
    drawn_view: Option<(View, f64)>,
    /// The last state read back: what can still be exported after the
    /// device is lost.
    last_snapshot: Option<std::sync::Arc<Snapshot>>,
    /// A reconfiguration is under way: do not step meanwhile.
    busy: bool,
    /// The snapshot series opened in the player, and the frame shown.
    series: Option<Series>,
    frame_view: Option<FrameView>,
    lost: Arc<Mutex<Option<String>>>,
    errors: Arc<Mutex<Vec<String>>>,
    /// Trails and orbit measures of a few-body Hermite run.
    few_body: Option<bodies::FewBody>,
    /// The tree's cells over the picture (made at its first use).
    cell_overlay: Option<CellOverlay>,
    /// The picked particle (upload index) and the trace of its
    /// interaction list on the current run's tree.
    picked: Option<(u32, Trace)>,
}

type State = Rc<RefCell<AppState>>;

impl AppState {
    fn lost_message(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l.clone())
    }

    /// Installs a new run and its scene; futures
    /// holding the old one see the new epoch and drop it.
    fn install(&mut self, started: Started) {
        self.scene = started.scene;
        self.install_view(started.view);
        self.install_run(started.run, started.particles.as_ref());
    }

    /// What the view keeps of the scene in place: its tags, colour ranges
    /// and positions to frame.
    fn install_view(&mut self, view: StartView) {
        self.scenes_shown += 1;
        self.n = self.scene.n();
        self.marked = view.components.marked_ids(self.n as usize);
        self.components = view.components;
        self.totals = view.totals;
        self.ranges = view.ranges;
        self.positions = view.positions;
        self.position_ids = None;
        self.picked = None;
    }

    /// The run of the scene and view in place (`install_view`);
    /// `particles`: its initial state, where it was made on the host.
    fn install_run(&mut self, mut run: Run, particles: Option<&Particles>) {
        run.sample_few_bodies();
        self.progress = run.progress();
        // A few-body run starts from particles made on the host.
        let first = run.few_body_sample().zip(particles);
        self.few_body = first.map(|(first, particles)| {
            let c = &self.components;
            let name = |k: usize| match c.by_shells {
                true => String::new(),
                false => c.names.get(c.tags[k] as usize).cloned().unwrap_or_default(),
            };
            let masses = particles.pos_mass.iter().map(|p| p.mass as f64).collect();
            let names = (0..particles.len()).map(name).collect();
            bodies::FewBody::new(first, masses, names, self.units)
        });
        let slot = &mut self.slot;
        slot.epoch += 1;
        slot.run = Some(Box::new(run));
        slot.failed = None;
        for w in slot.waiters.drain(..) {
            let _ = w.send(());
        }
    }

    /// The component tags hidden now (the halo switch).
    fn hidden(&self, components: &ComponentTags) -> u32 {
        if self.settings.show_halo {
            0
        } else {
            components.halo_mask()
        }
    }

    /// Frames what is drawn of the state on show: 90 % of its visible light
    /// (a picture) or mass (a map), `ComponentTags::fit_weights`; every
    /// body of a few-body run (a planet's light is nothing beside its
    /// star's).
    fn fit_visible(&mut self) {
        if let (None, Some(f)) = (&self.frame_view, &self.few_body) {
            let p = f.latest();
            let (w, h) = (self.surface_config.width, self.surface_config.height);
            let c: [f32; 3] =
                std::array::from_fn(|d| p.iter().map(|x| x[d]).sum::<f32>() / p.len() as f32);
            let dist = |x: &[f32; 3]| (0..3).map(|d| (x[d] - c[d]).powi(2)).sum::<f32>().sqrt();
            let r = p.iter().map(dist).fold(0.0, f32::max);
            if r > 0.0 {
                self.settings.camera.fit(c, 1.1 * r, w, h);
                return;
            }
        }
        let (positions, ids, components) = match &self.frame_view {
            Some(f) => (&f.positions, None, &f.components),
            None => (
                &self.positions,
                self.position_ids.as_deref(),
                &self.components,
            ),
        };
        let hidden = self.hidden(components);
        let map = self.settings.camera.map;
        let weights = components.fit_weights(positions, ids, hidden, map);
        let sphere = visible_sphere(positions, |k| weights[k])
            .or_else(|| visible_sphere(positions, |_| 1.0));
        if let Some((c, r)) = sphere {
            let (w, h) = (self.surface_config.width, self.surface_config.height);
            self.settings.camera.fit(c, r, w, h);
        }
    }
}

/// Takes the run out of its slot, waiting while a future holds it.
async fn take(state: &State) -> Result<(Box<Run>, u64), JsValue> {
    loop {
        let wait = {
            let mut s = state.borrow_mut();
            if let Some(m) = s.lost_message() {
                return Err(typed_error(
                    "device-lost",
                    format!("the GPU device was lost ({m})"),
                ));
            }
            let slot = &mut s.slot;
            if let Some(e) = &slot.failed {
                return Err(typed_error("run-stopped", e));
            }
            if let Some(run) = slot.run.take() {
                return Ok((run, slot.epoch));
            }
            let (tx, rx) = oneshot::channel();
            slot.waiters.push(tx);
            rx
        };
        // Cancelled when the run is replaced: the loop then takes the new one.
        let _ = wait.await;
    }
}

/// Puts run `epoch` back (or records why it failed); a run replaced
/// meanwhile is dropped. Returns whether the slot still belongs to it.
fn put(state: &State, epoch: u64, run: crate::Result<Box<Run>>) -> bool {
    let mut guard = state.borrow_mut();
    let s = &mut *guard;
    if s.slot.epoch != epoch {
        return false;
    }
    match run {
        Ok(run) => s.slot.run = Some(run),
        Err(e) => {
            let message = format!("the integration stopped: {e}");
            if let Ok(mut v) = s.errors.lock() {
                v.push(message.clone());
            }
            s.slot.failed = Some(message);
        }
    }
    for w in s.slot.waiters.drain(..) {
        let _ = w.send(());
    }
    true
}

/// The bodies' states after each block step of a Hermite advance, into
/// the trails and orbit measures (a few-body run of the current epoch
/// only).
fn record_bodies(state: &State, epoch: u64, run: &mut Run) {
    let samples = run.take_few_body_samples();
    let mut s = state.borrow_mut();
    if s.slot.epoch != epoch {
        return;
    }
    if let Some(f) = s.few_body.as_mut() {
        for sample in samples {
            f.push(sample);
        }
    }
}

/// A read-out of the current run (taken and put back).
async fn read(state: &State) -> Result<(Readout, u64), JsValue> {
    let (mut run, epoch) = take(state).await?;
    let ctx = state.borrow().ctx.clone();
    let r = run.readout(&ctx).await;
    put(state, epoch, Ok(run));
    let r = r.map_err(js_err)?;
    Ok((r, epoch))
}

/// `read_for_plots` of the current run (taken and put back), and whether
/// the run measures on the GPU (`Run::measures_on_gpu`).
async fn read_for_page(state: &State, light: bool) -> Result<(PlotRead, bool, u64), JsValue> {
    let (mut run, epoch) = take(state).await?;
    let (ctx, marked) = {
        let s = state.borrow();
        (s.ctx.clone(), s.marked.clone().unwrap_or_default())
    };
    let r = read_for_plots(&ctx, &mut run, light, &marked).await;
    let measures = run.measures_on_gpu();
    put(state, epoch, Ok(run));
    Ok((r.map_err(js_err)?, measures, epoch))
}

/// Starts a run of `particles` with the current settings and installs it;
/// on error the running one is untouched.
async fn start_run(
    state: &State,
    particles: Particles,
    time: f64,
    components: ComponentTags,
) -> Result<(), JsValue> {
    let (ctx, settings) = {
        let s = state.borrow();
        (s.ctx.clone(), s.settings)
    };
    check_particle_count(&ctx, particles.len() as u64, settings.run.solver).map_err(js_err)?;
    let config = settings.run.validate().map_err(js_err)?;
    let started = start_particles(&ctx, particles, time, components, config)
        .await
        .map_err(js_err)?;
    state.borrow_mut().install(started);
    Ok(())
}

/// A run of the model of settings `s` (`app::start`), refusing an N the
/// device cannot hold before anything is made.
async fn start_model_of(ctx: &GpuContext, s: &Settings) -> Result<Started, JsValue> {
    make_model_of(ctx, s)
        .await?
        .start(ctx)
        .await
        .map_err(js_err)
}

/// `start_model_of`'s model, its run not started (`app::start::Made`).
async fn make_model_of(ctx: &GpuContext, s: &Settings) -> Result<Made, JsValue> {
    check_particle_count(ctx, s.n as u64, s.run.solver).map_err(js_err)?;
    let config = s.run.validate().map_err(js_err)?;
    make_model(
        ctx,
        s.model,
        s.n as usize,
        s.seed as u64,
        &s.model_params,
        config,
    )
    .await
    .map_err(js_err)
}

/// Whether a change of settings needs the run reconfigured: a new solver,
/// or a new value of a parameter that applies to it.
fn run_changed(old: &Settings, new: &Settings) -> bool {
    old.run.solver != new.run.solver
        || crate::run::RUN_PARAMS
            .iter()
            .filter(|p| !p.shapes_model())
            .filter(|p| p.applies_to(new.run.solver))
            .any(|p| old.get(p.key) != new.get(p.key))
}

/// The page's first run: started with its model (made on the host), or
/// to be started once its model is on screen.
enum FirstRun {
    Started(Box<Run>, Option<Particles>),
    Pending(Box<PendingRun>),
}

/// A running simulation drawn on a canvas.
#[wasm_bindgen]
pub struct WebApp {
    state: State,
}

#[wasm_bindgen]
impl WebApp {
    /// Opens WebGPU on `canvas` and starts the run `values` describes (a
    /// plain object of URL-style settings, as `parseSettings` returns).
    /// Rejects with a readable message when WebGPU is missing, or N is too
    /// large for the device (before anything is allocated). A model made
    /// on the GPU is on the canvas before its run is built (the solver's
    /// kernels compiling); `on_picture`, where given, is called then.
    pub async fn create(
        canvas: web_sys::HtmlCanvasElement,
        values: JsValue,
        on_picture: Option<js_sys::Function>,
    ) -> Result<WebApp, JsValue> {
        let settings = settings_from_object(&Settings::default(), &values)?;
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let (width, height) = (canvas.width().max(1), canvas.height().max(1));
        let surface = instance
            .create_surface(wgpu::SurfaceTarget::Canvas(canvas))
            .map_err(|e| {
                typed_error(
                    "no-adapter",
                    format!("cannot use the canvas for WebGPU: {e}"),
                )
            })?;
        let ctx = GpuContext::new(&instance, Some(&surface))
            .await
            .map_err(js_err)?;
        let made = make_model_of(&ctx, &settings).await?;
        // Every WebGPU implementation must accept bgra8unorm for a canvas.
        let format = wgpu::TextureFormat::Bgra8Unorm;
        let surface_config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width,
            height,
            present_mode: wgpu::PresentMode::Fifo,
            desired_maximum_frame_latency: 2,
            alpha_mode: wgpu::CompositeAlphaMode::Opaque,
            view_formats: vec![],
            color_space: Default::default(),
        };
        surface.configure(&ctx.device, &surface_config);
        let renderer = Renderer::new(&ctx.device, format);
        // A model left on the GPU is shown before its run is started; one
        // made on the host, with it.
        let (scene, view, run) = match made {
            Made::Viewed(picture, pending) => {
                (picture.scene, picture.view, FirstRun::Pending(pending))
            }
            host => {
                let started = host.start(&ctx).await.map_err(js_err)?;
                let run = FirstRun::Started(Box::new(started.run), started.particles);
                (started.scene, started.view, run)
            }
        };
        let lost = Arc::new(Mutex::new(None));
        let lost_cb = lost.clone();
        ctx.device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut l) = lost_cb.lock() {
                *l = Some(format!("{reason:?}: {message}"));
            }
        });
        let errors = Arc::new(Mutex::new(Vec::new()));
        let errors_cb = errors.clone();
        ctx.device
            .on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                if let Ok(mut v) = errors_cb.lock() {
                    if v.len() < 16 {
                        v.push(e.to_string());
                    }
                }
            }));
        let units = Units::of_model(settings.model);
        let mut app = AppState {
            renderer,
            n: scene.n(),
            scene,
            components: ComponentTags::default(),
            totals: TagTotals::default(),
            progress: Arc::default(),
            ctx: ctx.clone(),
            surface,
            surface_config,
            settings,
            slot: RunSlot::default(),
            source: Source::Model,
            ranges: ColorRanges::default(),
            positions: Vec::new(),
            position_ids: None,
            marked: None,
            units,
            last_drawn: None,
            scenes_shown: 0,
            drawn_view: None,
            last_snapshot: None,
            busy: false,
            series: None,
            frame_view: None,
            lost,
            errors,
            few_body: None,
            cell_overlay: None,
            picked: None,
        };
        app.install_view(view);
        match run {
            FirstRun::Started(run, particles) => {
                app.install_run(*run, particles.as_ref());
                // A few-body run is framed by its bodies (`install_run`).
                if !app.settings.camera_given {
                    app.fit_visible();
                }
            }
            FirstRun::Pending(pending) => {
                // The model on screen at once: on a new device about half
                // of a first frame's wait is the solver's kernels
                // compiling (BENCHMARKS.md), which hold the page's thread.
                // Colours by potential wait for the run's first forces.
                if !app.settings.camera_given {
                    app.fit_visible();
                }
                if app.settings.camera.color_mode != ColorMode::Potential {
                    draw(&mut app, true);
                }
                // Only a frame drawn is waited for and announced.
                if app.drawn_view.is_some() {
                    js::painted().await;
                    if let Some(f) = &on_picture {
                        // The page's own hook: what it throws is its concern.
                        let _ = f.call0(&JsValue::NULL);
                    }
                }
                let (run, _) = pending.start(&ctx).await.map_err(js_err)?;
                // The picture had no forces and no tree (the cell
                // overlay): the run's first frame is drawn anew.
                app.drawn_view = None;
                app.install_run(run, None);
            }
        }
        Ok(WebApp {
            state: Rc::new(RefCell::new(app)),
        })
    }

    /// `{adapter, timestamps, max_<solver>...}`: the adapter and what it
    /// allows.
    pub fn info(&self) -> JsValue {
        let s = self.state.borrow();
        let out = js_sys::Object::new();
        // Browsers may keep the adapter's name private.
        let i = &s.ctx.adapter_info;
        let adapter = if i.name.is_empty() {
            format!("WebGPU adapter ({:?})", i.device_type)
        } else {
            format!("{} ({:?})", i.name, i.device_type)
        };
        set(&out, "adapter", adapter);
        set(&out, "timestamps", s.ctx.has_timestamps);
        for &solver in SolverKind::ALL {
            let max = max_particles(&s.ctx, solver) as f64;
            set(&out, &format!("max_{}", solver.name()), max);
        }
        out.into()
    }

    /// Every current setting (camera included) as URL-style strings.
    pub fn values(&self) -> JsValue {
        values_object(&self.state.borrow().settings).into()
    }

    /// The canonical query of the current settings and view, for a
    /// shareable link.
    #[wasm_bindgen(js_name = shareQuery)]
    pub fn share_query(&self) -> String {
        self.state.borrow().settings.to_query(true)
    }

    /// The command that runs the current settings (from the imported file,
    /// if the run started from one) until `t_end` with `webgrav run`, on
    /// one GPU or under `mpirun` on `ranks`, writing a series the page
    /// opens again (`app::command`); an error says why there is none.
    #[wasm_bindgen(js_name = runCommand)]
    pub fn run_command(&self, t_end: f64, ranks: u32) -> Result<String, JsValue> {
        let input = self.source_file();
        let settings = &self.state.borrow().settings;
        crate::app::command::run_command(settings, input.as_deref(), t_end, ranks)
            .map_err(|e| JsValue::from_str(&e))
    }

    /// The imported file's name, if the run started from one.
    #[wasm_bindgen(js_name = sourceFile)]
    pub fn source_file(&self) -> Option<String> {
        match &self.state.borrow().source {
            Source::File(name, _) => Some(name.clone()),
            Source::Model => None,
        }
    }

    /// Queues up to `steps` steps and draws; returns the steps queued.
    /// Returns at once: the GPU works while the page goes on. No leapfrog
    /// steps are queued while the GPU is more than two frames behind, so
    /// the queue cannot grow without bound; a Hermite run advances in a
    /// spawned future and takes no steps until it is back.
    pub fn frame(&self, steps: u32) -> Result<u32, JsValue> {
        let mut guard = self.state.borrow_mut();
        let s = &mut *guard;
        if let Some(message) = s.lost_message() {
            return Err(typed_error(
                "device-lost",
                format!("the GPU device was lost ({message})"),
            ));
        }
        let mut issued = 0;
        let stepping = !s.busy && s.frame_view.is_none();
        if let (true, Some(run)) = (stepping, s.slot.run.as_mut()) {
            let behind = s.progress.queued().saturating_sub(s.progress.done());
            if behind <= 2 * steps.max(1) as u64 {
                issued = run.queue_frame(&s.ctx, steps);
            }
            if run.needs_advance() {
                let run = s.slot.run.take().expect("checked above");
                let (state, ctx, epoch) = (self.state.clone(), s.ctx.clone(), s.slot.epoch);
                wasm_bindgen_futures::spawn_local(async move {
                    let mut run = run;
                    let mut r = run.advance(&ctx).await.map(|()| run);
                    if let Ok(run) = &mut r {
                        record_bodies(&state, epoch, run);
                    }
                    put(&state, epoch, r);
                });
            }
        }
        draw(s, false);
        Ok(issued)
    }

    /// Draws the current state without stepping (before `canvas.toBlob`,
    /// which must run in the same task).
    pub fn render(&self) {
        let mut s = self.state.borrow_mut();
        if s.lost_message().is_none() {
            draw(&mut s, true);
        }
    }

    /// `{steps, time, queued, n}`: steps (Hermite: block steps) and
    /// simulated time the GPU has finished in this run, steps queued.
    pub fn progress(&self) -> JsValue {
        let s = self.state.borrow();
        let p = &s.progress;
        let out = js_sys::Object::new();
        set(&out, "steps", p.done() as f64);
        set(&out, "time", p.time());
        set(&out, "queued", p.queued() as f64);
        set(&out, "n", s.n);
        out.into()
    }

    /// The few-body run's bodies and orbit measures (`FewBody::to_js`),
    /// null for any other run.
    pub fn bodies(&self) -> JsValue {
        let s = self.state.borrow();
        s.few_body.as_ref().map_or(JsValue::NULL, |f| f.to_js())
    }

    /// The few-body run's trails projected onto the canvas as the
    /// particles are drawn: bodies × samples × (x, y) pixels, oldest
    /// sample first (`trailSamples` per body); empty for other runs.
    pub fn trails(&self) -> js_sys::Float32Array {
        let s = self.state.borrow();
        let (w, h) = (s.surface_config.width, s.surface_config.height);
        match &s.few_body {
            Some(f) if s.frame_view.is_none() => f.projected(&s.settings.camera, w, h),
            _ => js_sys::Float32Array::new_with_length(0),
        }
    }

    /// `{time, time_unit, length_unit}`: the run's time unit in the unit
    /// its labels use (years per time unit for the planets, Myr for the
    /// Milky Way, 1 in N-body units) and the names of both units.
    pub fn units(&self) -> JsValue {
        let u = self.state.borrow().units;
        let out = js_sys::Object::new();
        set(&out, "time", u.time_in_unit(1.0));
        set(&out, "time_unit", u.time_unit());
        set(&out, "length_unit", u.length_unit());
        out.into()
    }

    /// Samples per body in `trails`.
    #[wasm_bindgen(js_name = trailSamples)]
    pub fn trail_samples(&self) -> u32 {
        let s = self.state.borrow();
        s.few_body.as_ref().map_or(0, |f| f.samples() as u32)
    }

    /// Resizes the drawing surface to the canvas' new pixel size.
    pub fn resize(&self, width: u32, height: u32) {
        let mut s = self.state.borrow_mut();
        s.surface_config.width = width.max(1);
        s.surface_config.height = height.max(1);
        s.surface.configure(&s.ctx.device, &s.surface_config);
    }

    /// Turns the view (radians).
    pub fn orbit(&self, dyaw: f32, dpitch: f32) {
        self.state.borrow_mut().settings.camera.orbit(dyaw, dpitch);
    }

    /// Moves the view by pixels of the canvas.
    pub fn pan(&self, dx: f32, dy: f32) {
        let mut s = self.state.borrow_mut();
        let h = s.surface_config.height;
        s.settings.camera.pan(dx, dy, h);
    }

    /// Zooms in (factor < 1) or out.
    pub fn zoom(&self, factor: f32) {
        self.state.borrow_mut().settings.camera.zoom(factor);
    }

    /// Frames what is drawn of the last state seen (90 % of its visible
    /// mass) in the view.
    pub fn fit(&self) {
        self.state.borrow_mut().fit_visible();
    }

    /// Resolves to what the page's legend shows over the last frame drawn
    /// (read back from the exposure the frame measured): `{map, lo, hi}`
    /// (Σ at the ends of a map's colour bar, in `label`'s units), `label`,
    /// `scale_px` and `scale_label` (a scale bar of a round length about a
    /// fifth of the view), `stops` (the density map's colours). Null
    /// before any frame.
    pub fn legend(&self) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (ctx, buffer, drawn, units, width, map, theme) = {
                let s = state.borrow();
                let Some((drawn, pixel)) = s.last_drawn else {
                    return Ok(JsValue::NULL);
                };
                let Some((exposure, _)) = s.renderer.buffers() else {
                    return Ok(JsValue::NULL);
                };
                (
                    s.ctx.clone(),
                    exposure.clone(),
                    (drawn, pixel),
                    s.units,
                    s.surface_config.width,
                    s.settings.camera.map,
                    s.settings.camera.theme,
                )
            };
            let bytes = read_buffers(&ctx.device, &ctx.queue, &[&buffer])
                .await
                .map_err(js_err)?;
            let e: Exposure = bytemuck::pod_read_unaligned(&bytes[0]);
            let (Drawn { unit_scale, .. }, pixel) = drawn;
            let per_unit = units.sigma_factor() / (unit_scale * pixel * pixel);
            let length = round_length(0.2 * width as f64 * pixel);
            let out = js_sys::Object::new();
            set(&out, "map", map.name());
            set(&out, "lo", e.lo as f64 * per_unit);
            set(&out, "hi", e.hi as f64 * per_unit);
            set(&out, "label", units.sigma_label());
            set(&out, "scale_px", length / pixel);
            set(&out, "scale_label", units.length_label(length));
            // Low Σ to high: on paper the map runs the other way (dense dark).
            let mut stops: Vec<_> = DENSITY_STOPS
                .iter()
                .map(|c| JsValue::from(array(c.iter().map(|&x| x as f64))))
                .collect();
            if theme == Theme::Light {
                stops.reverse();
            }
            set(&out, "stops", array(stops));
            Ok(out.into())
        })
    }

    /// Applies changed settings (a plain object of URL-style strings; keys
    /// left out keep their values). Resolves to what it did: "restart" (new
    /// model, N or seed), "reconfigure" (solver or a parameter of it: the
    /// run goes on from its current state) or "view". Rejects with the
    /// reason, leaving the run untouched, on a bad value or an N the device
    /// cannot hold.
    pub fn apply(&self, values: JsValue) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (new, old, ctx) = {
                let s = state.borrow();
                (
                    settings_from_object(&s.settings, &values)?,
                    s.settings,
                    s.ctx.clone(),
                )
            };
            if new.model != old.model
                || new.n != old.n
                || new.seed != old.seed
                || new.model_params != old.model_params
            {
                let started = start_model_of(&ctx, &new).await?;
                let mut s = state.borrow_mut();
                s.settings = new;
                s.install(started);
                s.source = Source::Model;
                s.units = Units::of_model(new.model);
                // A new model (a preset) is framed unless the values frame it.
                if !frames_view(&values) {
                    s.fit_visible();
                }
                return Ok("restart".into());
            }
            if !run_changed(&old, &new) {
                let mut s = state.borrow_mut();
                s.settings = new;
                // Hiding or showing a component frames what is drawn now.
                if new.show_halo != old.show_halo && !frames_view(&values) {
                    s.fit_visible();
                }
                return Ok("view".into());
            }
            let n = state.borrow().n as u64;
            check_particle_count(&ctx, n, new.run.solver).map_err(js_err)?;
            let config = new.run.validate().map_err(js_err)?;
            state.borrow_mut().busy = true;
            let taken = take(&state).await;
            state.borrow_mut().busy = false;
            let (mut run, epoch) = taken?;
            let r = run.reconfigure(&ctx, config).await;
            let mut s = state.borrow_mut();
            if s.slot.epoch != epoch {
                return Err(superseded());
            }
            s.scene = s.scene.rebound(run.display());
            s.scenes_shown += 1;
            s.picked = None;
            drop(s);
            put(&state, epoch, Ok(run));
            r.map_err(js_err)?;
            state.borrow_mut().settings = new;
            Ok("reconfigure".into())
        })
    }

    /// Starts the run again from its initial conditions (the model, or the
    /// imported file).
    pub fn reset(&self) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (file, ctx, settings) = {
                let s = state.borrow();
                let file = match &s.source {
                    Source::File(_, snap) => Some((
                        snap.particles.clone(),
                        snap.time,
                        ComponentTags::of_kinds(snap.types.as_deref(), &snap.particles.pos_mass),
                    )),
                    Source::Model => None,
                };
                (file, s.ctx.clone(), s.settings)
            };
            match file {
                Some((particles, time, tags)) => start_run(&state, particles, time, tags).await?,
                None => {
                    let started = start_model_of(&ctx, &settings).await?;
                    state.borrow_mut().install(started);
                }
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Starts a run from a Tipsy or CSV file's bytes (format by the name's
    /// extension, else guessed from the content). Resolves to `{n, time}`;
    /// a malformed file is refused with a message naming the problem and
    /// the running simulation is left untouched.
    #[wasm_bindgen(js_name = loadSnapshot)]
    pub fn load_snapshot(&self, name: String, bytes: Vec<u8>) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let format = format_of(&name, &bytes).map_err(js_err)?;
            let snap = format.decode(&bytes, &name).map_err(js_err)?;
            let tags = ComponentTags::of_kinds(snap.types.as_deref(), &snap.particles.pos_mass);
            start_run(&state, snap.particles.clone(), snap.time, tags).await?;
            let mut s = state.borrow_mut();
            s.settings.n = snap.particles.len() as u32;
            s.units = Units::NBody;
            if !s.settings.camera_given {
                s.fit_visible();
            }
            let out = js_sys::Object::new();
            set(&out, "n", snap.particles.len() as f64);
            set(&out, "time", snap.time);
            s.source = Source::File(name, Box::new(snap));
            Ok(out.into())
        })
    }

    /// Opens snapshot files (any format webgrav reads; a series index
    /// `index.json` among them gives the times) as a series for the
    /// player, in time order; every file is checked first and a bad one
    /// refused by name, with the series open before left as it was.
    /// Returns `{frames: [{name, time, n}]}`; nothing is shown yet.
    #[wasm_bindgen(js_name = openSeries)]
    pub fn open_series(
        &self,
        names: Vec<String>,
        files: js_sys::Array,
    ) -> Result<JsValue, JsValue> {
        if names.len() != files.length() as usize {
            return Err(typed_error("bad-input", "one name per file"));
        }
        let files: Vec<(String, Vec<u8>)> = names
            .into_iter()
            .zip(files.iter())
            .map(|(name, bytes)| (name, js_sys::Uint8Array::new(&bytes).to_vec()))
            .collect();
        let series = Series::open(files).map_err(js_err)?;
        let frames = series.frames().iter().map(|f| {
            let o = js_sys::Object::new();
            set(&o, "name", f.name.as_str());
            set(&o, "time", f.time);
            set(&o, "n", f.n as f64);
            JsValue::from(o)
        });
        let out = js_sys::Object::new();
        set(&out, "frames", array(frames));
        let mut s = self.state.borrow_mut();
        s.series = Some(series);
        s.frame_view = None;
        s.scenes_shown += 1;
        Ok(out.into())
    }

    /// Shows frame `k` of the opened series in place of the run (which
    /// pauses) and returns its read-outs: `{name, time, n, lagrangian,
    /// galaxy}` (as `readout`'s, computed from the file's particles).
    /// The first frame shown sets the view's extent for fit-to-view.
    #[wasm_bindgen(js_name = showFrame)]
    pub fn show_frame(&self, k: usize) -> Result<JsValue, JsValue> {
        let mut guard = self.state.borrow_mut();
        let s = &mut *guard;
        let series = s
            .series
            .as_ref()
            .ok_or_else(|| typed_error("bad-input", "no series is open"))?;
        let snap = series.snapshot(k).map_err(js_err)?;
        let name = series.frames()[k].name.clone();
        let p = &snap.particles;
        let state = GpuParticles::upload(&s.ctx, p).map_err(js_err)?;
        let components = ComponentTags::of_kinds(snap.types.as_deref(), &p.pos_mass);
        let totals = TagTotals::of(&p.pos_mass, &components.tags);
        let scene = Scene::new(&s.ctx, &state, &components, totals);
        let (radii, _) = radii_and_view(&p.pos_mass);
        let out = js_sys::Object::new();
        set(&out, "name", name);
        set(&out, "time", snap.time);
        set(&out, "n", p.len() as f64);
        set_structure(&out, p, radii, &components);
        s.frame_view = Some(FrameView {
            index: k,
            scene,
            components,
            ranges: ColorRanges::of(&p.vel, None),
            positions: p.pos_mass.clone(),
        });
        s.scenes_shown += 1;
        Ok(out.into())
    }

    /// The frame of the series on show, if any.
    #[wasm_bindgen(js_name = shownFrame)]
    pub fn shown_frame(&self) -> Option<usize> {
        self.state.borrow().frame_view.as_ref().map(|f| f.index)
    }

    /// Closes the series: the view shows the run again.
    #[wasm_bindgen(js_name = closeSeries)]
    pub fn close_series(&self) {
        let mut s = self.state.borrow_mut();
        s.series = None;
        s.frame_view = None;
        s.scenes_shown += 1;
    }

    /// Resolves to the read-outs of the current state, read back without
    /// blocking: `{time, steps, n, kinetic, potential, energy,
    /// energy_error, e0_reset, potential_sum, virial, lagrangian: [r10, r50, r90],
    /// phases: [[name, ms], ...] | null, timing, pp, pc}` (`pp`, `pc`:
    /// mean interactions per particle of the tree walk, else absent), and
    /// for Hermite runs `{hermite, block_steps, force_evaluations, dt_max,
    /// levels}`. With `light` (and `can_sample`, which every read-out
    /// says), the run is measured on the GPU and the radii (and a
    /// galaxy's figures) are a view sample's (`sampled: true`): no state
    /// comes back, so a page at
    /// 2^24 particles reads 13 MB instead of 800 MB, but an export
    /// after a device loss has only the last whole read-out's state.
    pub fn readout(&self, light: Option<bool>) -> js_sys::Promise {
        let state = self.state.clone();
        // A galaxy's light read-outs need every particle's component.
        let light = light.unwrap_or(false) && state.borrow().marked.is_some();
        wasm_bindgen_futures::future_to_promise(async move {
            let (r, measures, epoch) = read_for_page(&state, light).await?;
            let mut s = state.borrow_mut();
            if s.slot.epoch != epoch {
                return Err(superseded());
            }
            let obj = readout_object(&mut s, r);
            // Whether the next read-out can be light.
            set(&obj, "can_sample", measures && s.marked.is_some());
            Ok(obj.into())
        })
    }

    /// Resolves to the current state encoded as `format` ("tipsy",
    /// "bonsai" or "csv"). After a device loss, the last state read back is
    /// exported (its time is in the file); without one it rejects.
    pub fn export(&self, format: &str) -> js_sys::Promise {
        let state = self.state.clone();
        let format = format.to_string();
        wasm_bindgen_futures::future_to_promise(async move {
            let fmt = match format.as_str() {
                "tipsy" => Format::Tipsy,
                "bonsai" => Format::TipsyBonsai,
                "csv" => Format::Csv,
                other => {
                    return Err(typed_error(
                        "invalid-parameter",
                        format!("unknown export format '{other}'"),
                    ))
                }
            };
            let lost = state.borrow().lost_message().is_some();
            let snap = if lost {
                state.borrow().last_snapshot.clone().ok_or_else(|| {
                    typed_error(
                        "device-lost",
                        "the GPU device was lost before any state was read back",
                    )
                })?
            } else {
                read(&state).await?.0.snapshot
            };
            // The kinds of the run's particles (a galaxy's components, a
            // file's kinds), which the read-out does not carry.
            let mut snap = Snapshot::clone(&snap);
            if snap.types.is_none() {
                let kinds = state.borrow().components.kinds();
                snap.types = kinds.filter(|k| k.len() == snap.particles.len());
            }
            let out = js_sys::Object::new();
            set(&out, "time", snap.time);
            set(&out, "n", snap.particles.len() as f64);
            // A download is one file: the kinds a Tipsy flavour has no
            // place for cannot go to a side file, so the page says so.
            if let Some(flavor) = fmt.tipsy_flavor() {
                let lost = crate::snapshot::tipsy::unrecorded(&snap, flavor);
                if !lost.is_empty() {
                    let note = format!(
                        "this {} file has no kind for {}; a CSV export keeps every kind",
                        fmt.extension(),
                        crate::snapshot::tipsy::describe_unrecorded(&lost)
                    );
                    set(&out, "note", note.as_str());
                }
            }
            let bytes = js_sys::Uint8Array::from(fmt.encode(&snap).map_err(js_err)?.as_slice());
            set(&out, "bytes", bytes);
            Ok(out.into())
        })
    }

    /// Why the GPU device was lost, if it was.
    #[wasm_bindgen(js_name = lostReason)]
    pub fn lost_reason(&self) -> Option<String> {
        self.state.borrow().lost_message()
    }

    /// How many of the run's particles are disk stars (components named
    /// `*disk`): the page says when a disk is too sparse to read.
    #[wasm_bindgen(js_name = diskParticles)]
    pub fn disk_particles(&self) -> f64 {
        self.state.borrow().components.count_ending("disk") as f64
    }

    /// Whether a state has been read back (exportable after a loss).
    #[wasm_bindgen(js_name = hasReadback)]
    pub fn has_readback(&self) -> bool {
        self.state.borrow().last_snapshot.is_some()
    }

    /// GPU errors reported since the last call (validation, out of memory,
    /// a stopped integration).
    #[wasm_bindgen(js_name = takeErrors)]
    pub fn take_errors(&self) -> js_sys::Array {
        let s = self.state.borrow();
        let v = s.errors.lock().map(|mut v| std::mem::take(&mut *v));
        array(v.unwrap_or_default())
    }

    /// Destroys the device, as a driver reset would (for tests of the
    /// device-loss path).
    #[wasm_bindgen(js_name = loseDeviceForTesting)]
    pub fn lose_device_for_testing(&self) {
        self.state.borrow().ctx.device.destroy();
    }
}

/// The read-out as a plain object (see `WebApp::readout`); remembers its
/// colour ranges and extent for the view, and a whole read-out's state
/// for an export after a device loss (a sampled one has no state).
fn readout_object(s: &mut AppState, r: PlotRead) -> js_sys::Object {
    let (radii, ranges) = r.figures();
    s.ranges = ranges;
    // The fit weighs positions by their tags: a sample of a run's state
    // (in the tree's order) by its particles' ids.
    s.positions = r.pos_mass().to_vec();
    s.position_ids = match &r {
        PlotRead::Sampled(_, sample, _) if sample.id.len() == sample.pos_mass.len() => {
            Some(sample.id.clone())
        }
        _ => None,
    };
    let obj = measured_object(s, &r.measured());
    set(&obj, "lagrangian", array(radii));
    if let Some(g) = galaxy_of_read(&r, &s.components) {
        set(&obj, "galaxy", galaxy_object(&g));
    }
    match r {
        PlotRead::Whole(r) => {
            set(&obj, "sampled", false);
            s.last_snapshot = Some(r.snapshot);
        }
        PlotRead::Sampled(..) => set(&obj, "sampled", true),
    }
    obj
}

/// What every read-out object holds of `m` (`WebApp::readout`).
fn measured_object(s: &AppState, m: &Measured) -> js_sys::Object {
    let d = &m.diagnostics;
    let obj = js_sys::Object::new();
    for (k, v) in [
        ("time", m.time),
        ("steps", m.steps as f64),
        ("n", m.n as f64),
        ("kinetic", d.kinetic),
        ("potential", d.potential),
        ("energy", d.total),
        ("energy_error", m.energy_error()),
        ("energy_error_max", m.de_max),
        ("virial", d.virial_ratio),
        ("momentum", norm3(d.momentum)),
        ("angular_momentum", norm3(d.angular_momentum)),
    ] {
        set(&obj, k, v);
    }
    set(&obj, "e0_reset", m.e0_reset);
    // How the potential energy was summed (the run log's potential_sum).
    set(&obj, "potential_sum", m.potential_sum.name());
    let timing = match (&m.hermite, s.ctx.has_timestamps) {
        (Some(_), _) => "n/a",
        (None, true) => "gpu",
        (None, false) => "unavailable",
    };
    set(&obj, "timing", timing);
    match &m.phases {
        Some(list) => {
            let phases = list
                .iter()
                .map(|(name, ms)| js_sys::Array::of2(&(*name).into(), &(*ms).into()));
            set(&obj, "phases", array(phases));
        }
        None => set(&obj, "phases", JsValue::NULL),
    }
    if let Some((pp, pc)) = m.interactions {
        set(&obj, "pp", pp);
        set(&obj, "pc", pc);
    }
    if let Some(h) = &m.hermite {
        set(&obj, "hermite", true);
        set(&obj, "block_steps", h.stats.block_steps as f64);
        set(&obj, "force_evaluations", h.stats.force_evaluations as f64);
        set(&obj, "dt_max", h.dt_max);
        set(&obj, "levels", array(h.levels.iter().map(|&c| c as f64)));
    }
    if let Some(levels) = &m.block_levels {
        set(
            &obj,
            "block_levels",
            array(levels.iter().map(|&c| c as f64)),
        );
    }
    obj
}

/// Whether the plain object `values` frames the view (distance or target).
fn frames_view(values: &JsValue) -> bool {
    FRAMING_KEYS.iter().any(|k| {
        js_sys::Reflect::get(values, &JsValue::from_str(k))
            .is_ok_and(|v| !v.is_undefined() && !v.is_null())
    })
}

/// Everything a frame is drawn from. A frame whose view is the one last
/// drawn is skipped (the canvas keeps showing it), so a paused page stops
/// redrawing: on SwiftShader each frame took ~350 ms of a core, on a GPU
/// it costs power. `REDRAW_MS` bounds how long a frame is skipped, in case
/// something the view does not hold changed the picture.
#[derive(Clone, Copy, PartialEq)]
struct View {
    scenes_shown: u64,
    /// The run's steps queued and finished (its buffers are the scene's).
    queued: u64,
    done: u64,
    camera: Camera,
    ranges: ColorRanges,
    size: (u32, u32),
    /// Levels of cells drawn and the picked particle.
    overlay: (u32, Option<u32>),
}

const REDRAW_MS: f64 = 1000.0;

/// Draws the run's tree over the frame: the cells of its first
/// `cell_levels` levels, and the picked particle's interaction list
/// (traced again on the tree of this frame). Nothing while the run is out
/// of its slot or has no tree.
fn draw_tree(s: &mut AppState, encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView) {
    let levels = s.settings.cell_levels;
    if levels == 0 && s.picked.is_none() {
        return;
    }
    let Some(run) = s.slot.run.as_deref() else {
        return;
    };
    let Some(tree) = run.tree() else {
        return;
    };
    let (device, queue) = (&s.ctx.device, &s.ctx.queue);
    let format = s.surface_config.format;
    let overlay = s
        .cell_overlay
        .get_or_insert_with(|| CellOverlay::new(device, format));
    let camera = s.renderer.camera_buffer();
    if levels > 0 {
        overlay.draw(
            &s.ctx,
            encoder,
            target,
            camera,
            tree,
            Cells::Levels(levels - 1),
        );
    }
    if let Some((particle, trace)) = &s.picked {
        let alpha = run.config().params().alpha;
        trace.encode(device, queue, encoder, *particle, alpha);
        overlay.draw(&s.ctx, encoder, target, camera, tree, Cells::Traced(trace));
    }
}

/// Draws the current state on the canvas; unless `always`, only where the
/// view changed since the last frame drawn (or `REDRAW_MS` passed).
fn draw(s: &mut AppState, always: bool) {
    // A series frame on show replaces the run's state in the view.
    let (scene, components, ranges) = match &s.frame_view {
        Some(f) => (&f.scene, &f.components, f.ranges),
        None => (&s.scene, &s.components, s.ranges),
    };
    let mut camera = s.settings.camera;
    camera.hidden_tags = s.hidden(components);
    let size = (s.surface_config.width, s.surface_config.height);
    let view = View {
        scenes_shown: s.scenes_shown,
        queued: s.progress.queued(),
        done: s.progress.done(),
        camera,
        ranges,
        size,
        overlay: (s.settings.cell_levels, s.picked.as_ref().map(|p| p.0)),
    };
    let now = now_ms();
    if let (false, Some((drawn, at))) = (always, s.drawn_view) {
        if drawn == view && now - at < REDRAW_MS {
            return;
        }
    }
    let frame = match s.surface.get_current_texture() {
        wgpu::CurrentSurfaceTexture::Success(t) | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
        _ => return, // skip this frame; the next one tries again
    };
    let target = frame.texture.create_view(&Default::default());
    let mut encoder = s
        .ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("draw"),
        });
    let drawn = s.renderer.draw(
        &s.ctx.device,
        &s.ctx.queue,
        &mut encoder,
        &target,
        size,
        scene,
        &camera,
        ranges.for_mode(camera.color_mode),
        &Tone::for_map(camera.map),
    );
    if s.frame_view.is_none() {
        draw_tree(s, &mut encoder, &target);
    }
    match drawn {
        Ok(d) => s.last_drawn = Some((d, camera.pixel_size(size.1))),
        Err(e) => {
            // A canvas too large for the device's buffers: said once.
            if let Ok(mut v) = s.errors.lock() {
                if v.is_empty() {
                    v.push(e.to_string());
                }
            }
            return;
        }
    }
    s.ctx.queue.submit(Some(encoder.finish()));
    s.ctx.queue.present(frame);
    s.drawn_view = Some((view, now));
}
