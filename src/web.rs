//! The browser front end (wasm-bindgen): the only module that touches the
//! DOM and JavaScript values. It owns a canvas surface, the simulation and
//! the point renderer. The page's JavaScript (`www/app.js`) calls `frame`
//! from requestAnimationFrame and the asynchronous read-backs (`readout`,
//! `export`) now and then; nothing here ever blocks on the GPU.
//!
//! Every value crosses as URL-style key/value strings (see
//! `app::settings`), numbers, or plain objects built here.

use crate::app::readout::{center_of_mass, lagrangian_radii, view_sphere, LAGRANGIAN_FRACTIONS};
use crate::app::settings::{Settings, KEYS, PRESETS};
use crate::app::{check_particle_count, max_particles, SOLVERS};
use crate::direct::hermite::{HermiteConfig, HermiteSimulation, HermiteStats};
use crate::direct::hermite_force::Order;
use crate::gpu::layout::AccPot;
use crate::gpu::timing::PhaseTimer;
use crate::gpu::GpuContext;
use crate::render::{shell_tags, ColorMode, ColorRanges, PointBinding, PointRenderer};
use crate::sim::{Diagnostics, GpuParticles, Model, Particles, Simulation, Solver, SolverKind};
use crate::snapshot::{Format, Snapshot};
use futures_channel::oneshot;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

fn js_err(e: impl std::fmt::Display) -> JsValue {
    JsValue::from_str(&e.to_string())
}

fn set(obj: &js_sys::Object, key: &str, value: impl Into<JsValue>) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(obj, &key.into(), &value.into());
}

fn string_array<'a>(items: impl IntoIterator<Item = &'a str>) -> js_sys::Array {
    items.into_iter().map(JsValue::from_str).collect()
}

/// Settings as a plain object of URL-style strings.
fn values_object(s: &Settings) -> js_sys::Object {
    let obj = js_sys::Object::new();
    for (k, v) in s.pairs() {
        set(&obj, k, v);
    }
    obj
}

/// `base` with every known key of the plain object `values` applied; the
/// first bad value is the error.
fn settings_from_object(base: &Settings, values: &JsValue) -> Result<Settings, JsValue> {
    let mut s = *base;
    for key in KEYS {
        let v = js_sys::Reflect::get(values, &JsValue::from_str(key))?;
        if v.is_undefined() || v.is_null() {
            continue;
        }
        let text = v.as_string().unwrap_or_else(|| {
            v.as_f64()
                .map(|x| x.to_string())
                .or_else(|| v.as_bool().map(|b| if b { "1" } else { "0" }.to_string()))
                .unwrap_or_default()
        });
        if s.get(key).as_deref() != Some(text.as_str()) {
            s.set(key, &text).map_err(js_err)?;
        }
    }
    Ok(s)
}

/// Parses a URL query: `{values, warnings}`, `values` holding every
/// setting (defaults where the query is silent) as strings.
#[wasm_bindgen(js_name = parseSettings)]
pub fn parse_settings(query: &str) -> JsValue {
    let (s, warnings) = Settings::from_query(query);
    let out = js_sys::Object::new();
    set(&out, "values", values_object(&s));
    set(
        &out,
        "warnings",
        string_array(warnings.iter().map(|w| w.as_str())),
    );
    set(&out, "embed", s.embed);
    set(&out, "autoplay", s.autoplay);
    out.into()
}

/// What the controls offer: `{models, solvers, colors, presets: [{name,
/// title}]}`.
#[wasm_bindgen]
pub fn catalog() -> JsValue {
    let out = js_sys::Object::new();
    set(
        &out,
        "models",
        string_array(Model::ALL.iter().map(|m| m.name())),
    );
    set(
        &out,
        "solvers",
        string_array(SOLVERS.iter().map(|s| s.name())),
    );
    set(
        &out,
        "colors",
        string_array(ColorMode::ALL.iter().map(|c| c.name())),
    );
    let presets: js_sys::Array = PRESETS
        .iter()
        .map(|p| {
            let o = js_sys::Object::new();
            set(&o, "name", p.name);
            set(&o, "title", p.title);
            JsValue::from(o)
        })
        .collect();
    set(&out, "presets", presets);
    out.into()
}

/// Steps finished by the GPU, reported by `on_submitted_work_done`; the
/// epoch tells a callback of an earlier run to stay quiet.
#[derive(Default)]
struct Progress {
    epoch: AtomicU64,
    queued: AtomicU64,
    done: AtomicU64,
    time_bits: AtomicU64,
}

impl Progress {
    fn restart(&self, epoch: u64, time: f64) {
        self.epoch.store(epoch, Ordering::SeqCst);
        self.queued.store(0, Ordering::SeqCst);
        self.done.store(0, Ordering::SeqCst);
        self.time_bits.store(time.to_bits(), Ordering::SeqCst);
    }
}

/// Where the current run's initial conditions came from.
enum Source {
    Model,
    /// An imported file (its name, and its state for `reset`).
    File(String, Box<Snapshot>),
}

/// A Hermite run: the integrator's f64 master state lives on the host
/// (its force engine on the GPU) and steps in blocks, each with a
/// read-back; the page advances it in spawned futures that hold the
/// integrator meanwhile (`sim` is then `None`). What the renderer binds is
/// `display`, written from the host state whenever the integrator comes
/// back.
struct HermiteRun {
    /// Positions, velocities and potentials in the renderer's layout (the
    /// id buffer is the identity: the order never changes).
    display: GpuParticles,
    config: HermiteConfig,
    sim: Option<Box<HermiteSimulation>>,
    /// The initial state, until the first frame starts the integrator's
    /// creation (which is asynchronous: it computes the first forces).
    init: Option<Particles>,
    /// The integrator counts time from 0 (block steps need a start that is
    /// a multiple of every step); the run's time is this plus its time.
    time_offset: f64,
    /// The integrator's time the advances aim at.
    target: f64,
    /// Time, counters and step-level histogram of the last state seen.
    time: f64,
    stats: HermiteStats,
    levels: Vec<u64>,
    /// Why the integration stopped, if it did.
    error: Option<String>,
    /// Futures waiting for the integrator to come back.
    waiters: Vec<oneshot::Sender<()>>,
}

enum Engine {
    /// Tree or direct forces, leapfrog on the GPU.
    Leapfrog(Box<Simulation>),
    Hermite(Box<HermiteRun>),
}

/// The Hermite settings of `s`, if its solver is a Hermite integrator.
fn hermite_config(s: &Settings) -> Option<HermiteConfig> {
    let order = match s.config.solver {
        SolverKind::Hermite4 => Order::Four,
        SolverKind::Hermite6 => Order::Six,
        _ => return None,
    };
    Some(HermiteConfig::new(
        order,
        s.hermite.precision,
        s.hermite.eta,
        s.config.eps as f64,
    ))
}

/// The integrator for `settings`, starting from `particles` at `time`
/// (a Hermite integrator is only prepared: the first frame creates it).
fn make_engine(
    ctx: &GpuContext,
    settings: &Settings,
    particles: &Particles,
    time: f64,
) -> crate::Result<Engine> {
    match hermite_config(settings) {
        Some(config) => {
            settings.config.validate()?;
            config.validate()?;
            let display = GpuParticles::upload(ctx, particles)?;
            Ok(Engine::Hermite(Box::new(HermiteRun {
                display,
                config,
                sim: None,
                init: Some(particles.clone()),
                time_offset: time,
                target: 0.0,
                time,
                stats: HermiteStats::default(),
                levels: Vec::new(),
                error: None,
                waiters: Vec::new(),
            })))
        }
        None => Ok(Engine::Leapfrog(Box::new(Simulation::new(
            ctx,
            particles,
            settings.config,
            time,
        )?))),
    }
}

fn engine_display(engine: &Engine) -> &GpuParticles {
    match engine {
        Engine::Leapfrog(sim) => &sim.state,
        Engine::Hermite(h) => &h.display,
    }
}

/// One simulation and what is bound to its buffers.
struct Run {
    engine: Engine,
    points: PointBinding,
    /// Particle ids and component tags in upload order (the GPU's `id`
    /// buffer indexes them).
    ids: Vec<u64>,
    tags: Vec<u32>,
    /// Per-phase timer; `None` while its results are being read.
    timer: Option<PhaseTimer>,
    /// The timer holds a step's timestamps not yet read.
    timer_recorded: bool,
    epoch: u64,
}

impl Run {
    fn n(&self) -> u32 {
        engine_display(&self.engine).n
    }
}

struct AppState {
    ctx: GpuContext,
    surface: wgpu::Surface<'static>,
    surface_config: wgpu::SurfaceConfiguration,
    renderer: PointRenderer,
    settings: Settings,
    run: Run,
    source: Source,
    next_epoch: u64,
    /// Energy of the first read-back of this run (reset when the solver,
    /// softening or time step changes, since E depends on them).
    e0: Option<Diagnostics>,
    ranges: ColorRanges,
    /// Centre and radius of the last state seen, for fit-to-view.
    sphere: ([f32; 3], f32),
    /// The last state read back: what can still be exported after the
    /// device is lost.
    last_snapshot: Option<Snapshot>,
    /// A reconfiguration is reading the state: do not step meanwhile.
    busy: bool,
    progress: Arc<Progress>,
    lost: Arc<Mutex<Option<String>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

/// Phases timed per readout: a tree step has about 20 passes.
const TIMER_PASSES: u32 = 48;

impl AppState {
    /// Binds a new simulation of `particles`; nothing changes on error.
    fn new_run(&mut self, particles: &Particles, time: f64, tags: Vec<u32>) -> crate::Result<()> {
        check_particle_count(
            &self.ctx,
            particles.len() as u64,
            self.settings.config.solver,
        )?;
        let engine = make_engine(&self.ctx, &self.settings, particles, time)?;
        let points = self
            .renderer
            .bind(&self.ctx.device, engine_display(&engine), &tags);
        let epoch = self.next_epoch;
        self.next_epoch += 1;
        self.progress.restart(epoch, time);
        self.run = Run {
            engine,
            points,
            ids: particles.id.clone(),
            tags,
            timer: Some(PhaseTimer::new(&self.ctx, TIMER_PASSES)),
            timer_recorded: false,
            epoch,
        };
        self.e0 = None;
        self.ranges = ColorRanges::of(&particles.vel, None);
        self.sphere = view_sphere(&particles.pos_mass);
        Ok(())
    }

    fn lost_message(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l.clone())
    }
}

/// Builds the simulation of a model (refusing an N the device cannot hold
/// before generating or allocating anything).
fn model_particles(ctx: &GpuContext, s: &Settings) -> crate::Result<(Particles, Vec<u32>)> {
    check_particle_count(ctx, s.n as u64, s.config.solver)?;
    let p = s.model.generate(s.n as usize, s.seed as u64)?;
    let tags = shell_tags(&p.pos_mass);
    Ok((p, tags))
}

/// One consistent read-back of a run's state as a snapshot, in GPU order,
/// with the upload indices.
async fn read_state(
    ctx: &GpuContext,
    state: &GpuParticles,
    ids: &[u64],
    time: f64,
    eps: f32,
) -> crate::Result<(Snapshot, Vec<u32>, Vec<crate::gpu::layout::AccPot>)> {
    let s = state.read(ctx).await?;
    let snap = Snapshot {
        time,
        particles: Particles {
            id: s.index.iter().map(|&k| ids[k as usize]).collect(),
            pos_mass: s.pos_mass,
            vel: s.vel,
        },
        softening: eps,
        potential: Some(s.acc_pot.iter().map(|a| a.pot).collect()),
    };
    Ok((snap, s.index, s.acc_pot))
}

/// A running simulation drawn on a canvas.
#[wasm_bindgen]
pub struct WebApp {
    state: Rc<RefCell<AppState>>,
}

#[wasm_bindgen]
impl WebApp {
    /// Opens WebGPU on `canvas` and starts the run `values` describes (a
    /// plain object of URL-style settings, as `parseSettings` returns).
    /// Rejects with a readable message when WebGPU is missing, or N is too
    /// large for the device (before anything is allocated).
    pub async fn create(
        canvas: web_sys::HtmlCanvasElement,
        values: JsValue,
    ) -> Result<WebApp, JsValue> {
        let settings = settings_from_object(&Settings::default(), &values)?;
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let (width, height) = (canvas.width().max(1), canvas.height().max(1));
        let surface = instance
            .create_surface(wgpu::SurfaceTarget::Canvas(canvas))
            .map_err(|e| js_err(format!("cannot use the canvas for WebGPU: {e}")))?;
        let ctx = GpuContext::new(&instance, Some(&surface))
            .await
            .map_err(js_err)?;
        let (particles, tags) = model_particles(&ctx, &settings).map_err(js_err)?;
        let engine = make_engine(&ctx, &settings, &particles, 0.0).map_err(js_err)?;
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
        let renderer = PointRenderer::new(&ctx.device, format);
        let points = renderer.bind(&ctx.device, engine_display(&engine), &tags);

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
        let progress = Arc::new(Progress::default());
        progress.restart(0, 0.0);
        let timer = Some(PhaseTimer::new(&ctx, TIMER_PASSES));
        let mut camera_settings = settings;
        if !settings.camera_given {
            let (c, r) = view_sphere(&particles.pos_mass);
            camera_settings.camera.fit(c, r, width, height);
        }
        Ok(WebApp {
            state: Rc::new(RefCell::new(AppState {
                renderer,
                run: Run {
                    engine,
                    points,
                    ids: particles.id.clone(),
                    tags,
                    timer,
                    timer_recorded: false,
                    epoch: 0,
                },
                ctx,
                surface,
                surface_config,
                settings: camera_settings,
                source: Source::Model,
                next_epoch: 1,
                e0: None,
                ranges: ColorRanges::of(&particles.vel, None),
                sphere: view_sphere(&particles.pos_mass),
                last_snapshot: None,
                busy: false,
                progress,
                lost,
                errors,
            })),
        })
    }

    /// `{adapter, timestamps, maxTree, maxDirect}`: the adapter and what it
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
        for solver in SOLVERS {
            set(
                &out,
                &format!("max_{}", solver.name()),
                max_particles(&s.ctx, *solver) as f64,
            );
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

    /// The imported file's name, if the run started from one.
    #[wasm_bindgen(js_name = sourceFile)]
    pub fn source_file(&self) -> Option<String> {
        match &self.state.borrow().source {
            Source::File(name, _) => Some(name.clone()),
            Source::Model => None,
        }
    }

    /// Queues up to `steps` integration steps and draws the particles;
    /// returns the steps queued. Returns immediately: the GPU works while
    /// the page goes on. No steps are queued while the GPU is more than two
    /// frames behind, so the queue cannot grow without bound.
    pub fn frame(&self, steps: u32) -> Result<u32, JsValue> {
        let mut guard = self.state.borrow_mut();
        let s = &mut *guard;
        if let Some(message) = s.lost_message() {
            return Err(js_err(format!("the GPU device was lost ({message})")));
        }
        if let Engine::Hermite(h) = &mut s.run.engine {
            let mut issued = 0;
            if h.error.is_none() && !s.busy {
                let epoch = s.run.epoch;
                if let Some(particles) = h.init.take() {
                    wasm_bindgen_futures::spawn_local(hermite_create(
                        self.state.clone(),
                        epoch,
                        s.ctx.clone(),
                        particles,
                        h.config,
                    ));
                } else if steps > 0 {
                    if let Some(sim) = h.sim.take() {
                        // Aim `steps × dt` past the last target (or the
                        // state, if it is ahead): block steps end where
                        // the next one would pass the target.
                        let dt = s.settings.config.dt as f64;
                        h.target = h.target.max(sim.time) + steps as f64 * dt;
                        wasm_bindgen_futures::spawn_local(hermite_advance(
                            self.state.clone(),
                            epoch,
                            sim,
                            h.target,
                        ));
                        issued = steps;
                    }
                }
            }
            draw(s);
            return Ok(issued);
        }
        let queued = s.progress.queued.load(Ordering::SeqCst);
        let behind = queued.saturating_sub(s.progress.done.load(Ordering::SeqCst));
        let issue = if s.busy || behind > 2 * steps.max(1) as u64 {
            0
        } else {
            steps
        };
        if issue > 0 {
            let device = &s.ctx.device;
            let run = &mut s.run;
            let Engine::Leapfrog(sim) = &mut run.engine else {
                unreachable!("Hermite runs return above")
            };
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("leapfrog steps"),
            });
            for k in 0..issue {
                match run.timer.as_mut() {
                    Some(timer) if k == 0 && !run.timer_recorded => {
                        timer.reset();
                        sim.encode_step(device, &mut encoder, Some(timer));
                        timer.resolve(&mut encoder);
                        run.timer_recorded = timer.enabled();
                    }
                    _ => sim.encode_step(device, &mut encoder, None),
                }
            }
            s.ctx.queue.submit(Some(encoder.finish()));
            sim.steps += issue as u64;
            sim.time += issue as f64 * sim.config().dt as f64;
            s.progress.queued.fetch_add(issue as u64, Ordering::SeqCst);
            let (progress, epoch, time) = (s.progress.clone(), run.epoch, sim.time);
            s.ctx.queue.on_submitted_work_done(move || {
                if progress.epoch.load(Ordering::SeqCst) == epoch {
                    progress.done.fetch_add(issue as u64, Ordering::SeqCst);
                    progress.time_bits.store(time.to_bits(), Ordering::SeqCst);
                }
            });
        }
        draw(s);
        Ok(issue)
    }

    /// Draws the current state without stepping (before `canvas.toBlob`,
    /// which must run in the same task).
    pub fn render(&self) {
        let mut s = self.state.borrow_mut();
        if s.lost_message().is_none() {
            draw(&mut s);
        }
    }

    /// `{steps, time, queued}`: steps and simulated time the GPU has
    /// finished in this run, and steps queued.
    pub fn progress(&self) -> JsValue {
        let s = self.state.borrow();
        let p = &s.progress;
        let out = js_sys::Object::new();
        set(&out, "steps", p.done.load(Ordering::SeqCst) as f64);
        set(
            &out,
            "time",
            f64::from_bits(p.time_bits.load(Ordering::SeqCst)),
        );
        set(&out, "queued", p.queued.load(Ordering::SeqCst) as f64);
        set(&out, "n", s.run.n());
        out.into()
    }

    /// Resizes the drawing surface to the canvas' new pixel size.
    pub fn resize(&self, width: u32, height: u32) {
        let mut s = self.state.borrow_mut();
        s.surface_config.width = width.max(1);
        s.surface_config.height = height.max(1);
        let AppState {
            ctx,
            surface,
            surface_config,
            ..
        } = &*s;
        surface.configure(&ctx.device, surface_config);
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

    /// Frames the mass of the last state seen (90 % of it) in the view.
    pub fn fit(&self) {
        let mut s = self.state.borrow_mut();
        let ((c, r), w, h) = (s.sphere, s.surface_config.width, s.surface_config.height);
        s.settings.camera.fit(c, r, w, h);
    }

    /// Applies changed settings (a plain object of URL-style strings; keys
    /// left out keep their values). Resolves to what it did: "restart" (new
    /// model, N or seed), "reconfigure" (solver, θ, softening or time step:
    /// the run goes on from its current state with the new settings) or
    /// "view". Rejects with the reason, leaving the run untouched, on a bad
    /// value or an N the device cannot hold.
    pub fn apply(&self, values: JsValue) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (new, old) = {
                let s = state.borrow();
                (settings_from_object(&s.settings, &values)?, s.settings)
            };
            let restart = new.model != old.model || new.n != old.n || new.seed != old.seed;
            if restart {
                let mut s = state.borrow_mut();
                let (particles, tags) = model_particles(&s.ctx, &new).map_err(js_err)?;
                let previous = s.settings;
                s.settings = new;
                if let Err(e) = s.new_run(&particles, 0.0, tags) {
                    s.settings = previous;
                    return Err(js_err(e));
                }
                s.source = Source::Model;
                return Ok("restart".into());
            }
            // η and precision matter to the Hermite integrators only.
            let hermite_changed = hermite_config(&new).is_some() && new.hermite != old.hermite;
            if new.config != old.config || hermite_changed {
                {
                    let mut s = state.borrow_mut();
                    let n = s.run.n() as u64;
                    check_particle_count(&s.ctx, n, new.config.solver).map_err(js_err)?;
                    new.config.validate().map_err(js_err)?;
                    if let Some(c) = hermite_config(&new) {
                        c.validate().map_err(js_err)?;
                    }
                    s.busy = true;
                }
                let read = current_state(&state, new.config.eps).await;
                let mut s = state.borrow_mut();
                s.busy = false;
                let (snap, index, _, epoch) = read.map_err(|e| {
                    if e.as_string().as_deref() == Some("stale") {
                        js_err("the run was replaced meanwhile; settings not applied")
                    } else {
                        e
                    }
                })?;
                let time = snap.time;
                if s.run.epoch != epoch {
                    return Err(js_err(
                        "the run was replaced meanwhile; settings not applied",
                    ));
                }
                // Tags follow the particles into the new upload order.
                let tags: Vec<u32> = index.iter().map(|&k| s.run.tags[k as usize]).collect();
                let previous = s.settings;
                s.settings = new;
                if let Err(e) = s.new_run(&snap.particles, time, tags) {
                    s.settings = previous;
                    return Err(js_err(e));
                }
                return Ok("reconfigure".into());
            }
            state.borrow_mut().settings = new;
            Ok("view".into())
        })
    }

    /// Starts the run again from its initial conditions (the model, or the
    /// imported file).
    pub fn reset(&self) -> Result<(), JsValue> {
        let mut s = self.state.borrow_mut();
        let (particles, time, tags) = match &s.source {
            Source::File(_, snap) => (
                snap.particles.clone(),
                snap.time,
                shell_tags(&snap.particles.pos_mass),
            ),
            Source::Model => {
                let (p, t) = model_particles(&s.ctx, &s.settings).map_err(js_err)?;
                (p, 0.0, t)
            }
        };
        s.new_run(&particles, time, tags).map_err(js_err)
    }

    /// Starts a run from a Tipsy or CSV file's bytes (format by the name's
    /// extension, else guessed from the content). Returns `{n, time}`; a
    /// malformed file is refused with a message naming the problem and the
    /// running simulation is left untouched.
    #[wasm_bindgen(js_name = loadSnapshot)]
    pub fn load_snapshot(&self, name: &str, bytes: &[u8]) -> Result<JsValue, JsValue> {
        let format = Format::from_path(name).unwrap_or_else(|_| guess_format(bytes));
        let snap = format.decode(bytes, name).map_err(js_err)?;
        let mut s = self.state.borrow_mut();
        let tags = shell_tags(&snap.particles.pos_mass);
        s.new_run(&snap.particles, snap.time, tags)
            .map_err(js_err)?;
        s.settings.n = snap.particles.len() as u32;
        if !s.settings.camera_given {
            let ((c, r), w, h) = (s.sphere, s.surface_config.width, s.surface_config.height);
            s.settings.camera.fit(c, r, w, h);
        }
        let out = js_sys::Object::new();
        set(&out, "n", snap.particles.len() as f64);
        set(&out, "time", snap.time);
        s.source = Source::File(name.to_string(), Box::new(snap));
        Ok(out.into())
    }

    /// Resolves to the read-outs of the current state, read back without
    /// blocking: `{time, steps, n, kinetic, potential, energy,
    /// energy_error, e0_reset, virial, lagrangian: [r10, r50, r90],
    /// phases: [[name, ms], ...] | null, timing, pp, pc}` (`pp`, `pc`:
    /// mean interactions per particle of the tree walk, else absent).
    pub fn readout(&self) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let hermite = match &state.borrow().run.engine {
                Engine::Hermite(_) => Some(state.borrow().run.epoch),
                Engine::Leapfrog(_) => None,
            };
            if let Some(epoch) = hermite {
                return hermite_readout(&state, epoch).await;
            }
            // Clone the (shared) handles so no borrow is held across an
            // await: frames keep running while the read-backs complete.
            let (ctx, gpu_state, ids, time, steps, eps, epoch, timer, interactions) = {
                let mut s = state.borrow_mut();
                if let Some(m) = s.lost_message() {
                    return Err(js_err(format!("the GPU device was lost ({m})")));
                }
                let ctx = s.ctx.clone();
                let run = &mut s.run;
                let timer = if run.timer_recorded {
                    run.timer.take()
                } else {
                    None
                };
                let Engine::Leapfrog(sim) = &run.engine else {
                    return Err(js_err("stale"));
                };
                let interactions = match sim.solver() {
                    Solver::Tree(t) => Some(t.buffers.interactions.clone()),
                    _ => None,
                };
                (
                    ctx,
                    sim.state.clone(),
                    run.ids.clone(),
                    sim.time,
                    sim.steps,
                    sim.config().eps,
                    run.epoch,
                    timer,
                    interactions,
                )
            };
            let read = read_state(&ctx, &gpu_state, &ids, time, eps).await;
            let phases = match &timer {
                Some(t) => Some(t.read(&ctx).await),
                None => None,
            };
            let counts = match &interactions {
                Some(b) => Some(
                    crate::gpu::buffers::read_vec::<crate::tree::layout::InteractionCount>(
                        &ctx.device,
                        &ctx.queue,
                        b,
                    )
                    .await,
                ),
                None => None,
            };
            let mut s = state.borrow_mut();
            if s.run.epoch == epoch {
                if let Some(t) = timer {
                    s.run.timer = Some(t);
                    s.run.timer_recorded = false;
                }
            }
            let (snap, _, acc_pot) = read.map_err(js_err)?;
            if s.run.epoch != epoch {
                return Err(js_err("stale"));
            }
            let d = {
                let p = &snap.particles;
                Diagnostics::of(&p.pos_mass, &p.vel, &acc_pot)
            };
            let n = snap.particles.len();
            let obj = readout_object(&mut s, snap, &acc_pot, d, time, steps);
            set(
                &obj,
                "timing",
                if s.ctx.has_timestamps {
                    "gpu"
                } else {
                    "unavailable"
                },
            );
            match phases {
                Some(Ok(list)) if !list.is_empty() => {
                    let arr: js_sys::Array = list
                        .iter()
                        .map(|(name, ms)| {
                            JsValue::from(js_sys::Array::of2(&(*name).into(), &(*ms).into()))
                        })
                        .collect();
                    set(&obj, "phases", arr);
                }
                _ => set(&obj, "phases", JsValue::NULL),
            }
            if let Some(Ok(c)) = counts {
                let c = &c[..n.min(c.len())];
                let m = c.len().max(1) as f64;
                set(&obj, "pp", c.iter().map(|x| x.pp as f64).sum::<f64>() / m);
                set(&obj, "pc", c.iter().map(|x| x.pc as f64).sum::<f64>() / m);
            }
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
                other => return Err(js_err(format!("unknown export format '{other}'"))),
            };
            let fresh = {
                let s = state.borrow();
                if s.lost_message().is_some() {
                    None
                } else {
                    Some(s.settings.config.eps)
                }
            };
            let snap = match fresh {
                Some(eps) => current_state(&state, eps).await?.0,
                None => state.borrow().last_snapshot.clone().ok_or_else(|| {
                    js_err("the GPU device was lost before any state was read back")
                })?,
            };
            let out = js_sys::Object::new();
            set(&out, "time", snap.time);
            set(&out, "n", snap.particles.len() as f64);
            set(
                &out,
                "bytes",
                js_sys::Uint8Array::from(fmt.encode(&snap).as_slice()),
            );
            Ok(out.into())
        })
    }

    /// Why the GPU device was lost, if it was.
    #[wasm_bindgen(js_name = lostReason)]
    pub fn lost_reason(&self) -> Option<String> {
        self.state.borrow().lost_message()
    }

    /// Whether a state has been read back (exportable after a loss).
    #[wasm_bindgen(js_name = hasReadback)]
    pub fn has_readback(&self) -> bool {
        self.state.borrow().last_snapshot.is_some()
    }

    /// GPU errors reported since the last call (validation, out of memory).
    #[wasm_bindgen(js_name = takeErrors)]
    pub fn take_errors(&self) -> js_sys::Array {
        let s = self.state.borrow();
        let v = s.errors.lock().map(|mut v| std::mem::take(&mut *v));
        string_array(v.unwrap_or_default().iter().map(|e| e.as_str()))
    }

    /// Destroys the device, as a driver reset would (for tests of the
    /// device-loss path).
    #[wasm_bindgen(js_name = loseDeviceForTesting)]
    pub fn lose_device_for_testing(&self) {
        self.state.borrow().ctx.device.destroy();
    }
}

/// Creates the Hermite integrator of run `epoch` (the first forces need
/// read-backs) and hands it to the run.
async fn hermite_create(
    state: Rc<RefCell<AppState>>,
    epoch: u64,
    ctx: GpuContext,
    particles: Particles,
    config: HermiteConfig,
) {
    let sim = HermiteSimulation::new(&ctx, &particles, config, 0.0).await;
    hermite_put(&state, epoch, sim.map(Box::new));
}

/// Block steps of run `epoch` up to the integrator's time `target`; then
/// the integrator goes back to the run.
async fn hermite_advance(
    state: Rc<RefCell<AppState>>,
    epoch: u64,
    mut sim: Box<HermiteSimulation>,
    target: f64,
) {
    let r = sim.run_until(target).await;
    hermite_put(&state, epoch, r.map(|()| sim));
}

/// Hands the integrator (or why it failed) back to run `epoch`: its state
/// goes to the display buffers (a host-to-GPU upload) and the counters, and
/// the futures waiting for it wake. A run replaced meanwhile drops it.
fn hermite_put(
    state: &Rc<RefCell<AppState>>,
    epoch: u64,
    sim: crate::Result<Box<HermiteSimulation>>,
) {
    let mut guard = state.borrow_mut();
    let s = &mut *guard;
    if s.run.epoch != epoch {
        return;
    }
    let Engine::Hermite(h) = &mut s.run.engine else {
        return;
    };
    match sim {
        Ok(sim) => {
            let (p, pot) = sim.particles();
            let q = &s.ctx.queue;
            q.write_buffer(&h.display.pos_mass, 0, bytemuck::cast_slice(&p.pos_mass));
            q.write_buffer(&h.display.vel, 0, bytemuck::cast_slice(&p.vel));
            let acc_pot: Vec<AccPot> = pot
                .iter()
                .map(|&pot| AccPot {
                    pot,
                    ..Default::default()
                })
                .collect();
            q.write_buffer(&h.display.acc_pot, 0, bytemuck::cast_slice(&acc_pot));
            h.time = h.time_offset + sim.time;
            h.stats = sim.stats.clone();
            h.levels = sim.levels();
            let p = &s.progress;
            p.queued.store(h.stats.block_steps, Ordering::SeqCst);
            p.done.store(h.stats.block_steps, Ordering::SeqCst);
            p.time_bits.store(h.time.to_bits(), Ordering::SeqCst);
            h.sim = Some(sim);
        }
        Err(e) => {
            let message = format!("the Hermite integration stopped: {e}");
            if let Ok(mut v) = s.errors.lock() {
                v.push(message.clone());
            }
            h.error = Some(message);
        }
    }
    for w in h.waiters.drain(..) {
        let _ = w.send(());
    }
}

/// Takes the Hermite integrator of run `epoch`, waiting while an advance
/// holds it; with the integrator's time offset. Put it back with
/// `hermite_put`.
async fn hermite_take(
    state: &Rc<RefCell<AppState>>,
    epoch: u64,
) -> Result<(Box<HermiteSimulation>, f64), JsValue> {
    loop {
        let wait = {
            let mut s = state.borrow_mut();
            if s.run.epoch != epoch {
                return Err(js_err("stale"));
            }
            let Engine::Hermite(h) = &mut s.run.engine else {
                return Err(js_err("stale"));
            };
            if let Some(e) = &h.error {
                return Err(js_err(e));
            }
            if let Some(sim) = h.sim.take() {
                return Ok((sim, h.time_offset));
            }
            let (tx, rx) = oneshot::channel();
            h.waiters.push(tx);
            rx
        };
        // Cancelled when the run is dropped: the loop then sees the epoch.
        let _ = wait.await;
    }
}

/// The Hermite state as a snapshot (input order) and its potentials.
fn hermite_snapshot(sim: &HermiteSimulation, offset: f64, eps: f32) -> (Snapshot, Vec<AccPot>) {
    let (particles, pot) = sim.particles();
    let acc_pot = pot
        .iter()
        .map(|&pot| AccPot {
            pot,
            ..Default::default()
        })
        .collect();
    let snap = Snapshot {
        time: offset + sim.time,
        particles,
        softening: eps,
        potential: Some(pot),
    };
    (snap, acc_pot)
}

/// One consistent state of the current run, without blocking: the
/// snapshot, the upload index of each of its particles, their potentials,
/// and the run's epoch.
async fn current_state(
    state: &Rc<RefCell<AppState>>,
    eps: f32,
) -> Result<(Snapshot, Vec<u32>, Vec<AccPot>, u64), JsValue> {
    let (epoch, leapfrog) = {
        let s = state.borrow();
        let leapfrog = match &s.run.engine {
            Engine::Leapfrog(sim) => Some((
                s.ctx.clone(),
                sim.state.clone(),
                s.run.ids.clone(),
                sim.time,
            )),
            Engine::Hermite(_) => None,
        };
        (s.run.epoch, leapfrog)
    };
    match leapfrog {
        Some((ctx, gpu_state, ids, time)) => {
            let (snap, index, acc_pot) = read_state(&ctx, &gpu_state, &ids, time, eps)
                .await
                .map_err(js_err)?;
            Ok((snap, index, acc_pot, epoch))
        }
        None => {
            let (sim, offset) = hermite_take(state, epoch).await?;
            let (snap, acc_pot) = hermite_snapshot(&sim, offset, eps);
            hermite_put(state, epoch, Ok(sim));
            let index = (0..snap.particles.len() as u32).collect();
            Ok((snap, index, acc_pot, epoch))
        }
    }
}

/// The read-outs common to every solver (see `WebApp::readout`), from a
/// state and its diagnostics; remembers the state for an export after a
/// device loss.
fn readout_object(
    s: &mut AppState,
    snap: Snapshot,
    acc_pot: &[AccPot],
    d: Diagnostics,
    time: f64,
    steps: u64,
) -> js_sys::Object {
    let p = &snap.particles;
    let e0_reset = s.e0.is_none();
    let e0 = *s.e0.get_or_insert(d);
    s.ranges = ColorRanges::of(&p.vel, Some(acc_pot));
    s.sphere = view_sphere(&p.pos_mass);
    let com = center_of_mass(&p.pos_mass);
    let radii = lagrangian_radii(&p.pos_mass, com, &LAGRANGIAN_FRACTIONS);
    let obj = js_sys::Object::new();
    for (k, v) in [
        ("time", time),
        ("steps", steps as f64),
        ("n", p.len() as f64),
        ("kinetic", d.kinetic),
        ("potential", d.potential),
        ("energy", d.total),
        ("energy_error", d.energy_error(&e0)),
        ("virial", d.virial_ratio),
    ] {
        set(&obj, k, v);
    }
    set(&obj, "e0_reset", e0_reset);
    set(
        &obj,
        "lagrangian",
        radii
            .iter()
            .map(|&r| JsValue::from(r))
            .collect::<js_sys::Array>(),
    );
    s.last_snapshot = Some(snap);
    obj
}

/// `WebApp::readout` of a Hermite run: the energy from one double-single
/// evaluation of the potential with the state predicted in f64, block
/// steps, force evaluations and the histogram of time-step levels
/// (`levels[k]`: particles with dt = `dt_max` / 2^k, `dt_max`).
async fn hermite_readout(state: &Rc<RefCell<AppState>>, epoch: u64) -> Result<JsValue, JsValue> {
    let eps = state.borrow().settings.config.eps;
    let (mut sim, offset) = hermite_take(state, epoch).await?;
    let energy = sim.energy().await;
    let (snap, acc_pot) = hermite_snapshot(&sim, offset, eps);
    let (stats, levels, dt_max) = (sim.stats.clone(), sim.levels(), sim.config().dt_max);
    let time = snap.time;
    hermite_put(state, epoch, Ok(sim));
    let (kinetic, potential, total) = energy.map_err(js_err)?;
    let d = Diagnostics {
        kinetic,
        potential,
        total,
        virial_ratio: if potential != 0.0 {
            -2.0 * kinetic / potential
        } else {
            0.0
        },
        ..Default::default()
    };
    let mut guard = state.borrow_mut();
    if guard.run.epoch != epoch {
        return Err(js_err("stale"));
    }
    let obj = readout_object(&mut guard, snap, &acc_pot, d, time, stats.block_steps);
    set(&obj, "timing", "n/a");
    set(&obj, "phases", JsValue::NULL);
    set(&obj, "hermite", true);
    set(&obj, "block_steps", stats.block_steps as f64);
    set(&obj, "force_evaluations", stats.force_evaluations as f64);
    set(&obj, "dt_max", dt_max);
    set(
        &obj,
        "levels",
        levels
            .iter()
            .map(|&c| JsValue::from(c as f64))
            .collect::<js_sys::Array>(),
    );
    Ok(obj.into())
}

/// Draws the current state on the canvas.
fn draw(s: &mut AppState) {
    let frame = match s.surface.get_current_texture() {
        wgpu::CurrentSurfaceTexture::Success(t) | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
        _ => return, // skip this frame; the next one tries again
    };
    let view = frame.texture.create_view(&Default::default());
    let camera = &s.settings.camera;
    let uniform = camera.uniform(
        s.surface_config.width,
        s.surface_config.height,
        s.run.n(),
        s.ranges.for_mode(camera.color_mode),
    );
    let mut encoder = s
        .ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("draw"),
        });
    s.renderer
        .draw(&s.ctx.queue, &mut encoder, &view, &s.run.points, &uniform);
    s.ctx.queue.submit(Some(encoder.finish()));
    s.ctx.queue.present(frame);
}

/// CSV when the bytes look like text with a CSV header, else Tipsy.
fn guess_format(bytes: &[u8]) -> Format {
    let head = &bytes[..bytes.len().min(256)];
    match std::str::from_utf8(head) {
        Ok(t) if t.contains("id,x,y,z") => Format::Csv,
        _ => Format::Tipsy,
    }
}
