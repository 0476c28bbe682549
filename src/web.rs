//! The browser front end (wasm-bindgen): the only module that touches the
//! DOM. It owns a canvas surface, a simulation and the point renderer; the
//! page's JavaScript calls `frame` from requestAnimationFrame and
//! `diagnostics` (asynchronous, never blocking) now and then.

use crate::gpu::GpuContext;
use crate::render::{Camera, PointRenderer};
use crate::sim::{Diagnostics, Model, SimConfig, Simulation, SolverKind};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

fn js_err(e: impl std::fmt::Display) -> JsValue {
    JsValue::from_str(&e.to_string())
}

struct AppState {
    ctx: GpuContext,
    surface: wgpu::Surface<'static>,
    surface_config: wgpu::SurfaceConfiguration,
    sim: Simulation,
    renderer: PointRenderer,
    camera: Camera,
    initial: Option<Diagnostics>,
}

/// A running simulation drawn on a canvas.
#[wasm_bindgen]
pub struct WebApp {
    state: Rc<RefCell<AppState>>,
}

#[wasm_bindgen]
impl WebApp {
    /// Opens WebGPU on `canvas` and starts a `model` with `n` particles.
    /// Rejects with a readable message when WebGPU is missing or N is too
    /// large for the device.
    pub async fn create(
        canvas: web_sys::HtmlCanvasElement,
        model: &str,
        n: u32,
        seed: u32,
        eps: f32,
        dt: f32,
    ) -> Result<WebApp, JsValue> {
        let model = Model::from_name(model).map_err(js_err)?;
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let (width, height) = (canvas.width().max(1), canvas.height().max(1));
        let surface = instance
            .create_surface(wgpu::SurfaceTarget::Canvas(canvas))
            .map_err(|e| js_err(format!("cannot use the canvas for WebGPU: {e}")))?;
        let ctx = GpuContext::new(&instance, Some(&surface))
            .await
            .map_err(js_err)?;
        // Refuse an N the device cannot hold before generating anything.
        ctx.check_particle_count(n as u64, 16).map_err(js_err)?;
        let particles = model.generate(n as usize, seed as u64).map_err(js_err)?;
        let config = SimConfig {
            solver: SolverKind::Direct,
            eps,
            dt,
            theta: 0.5,
        };
        let sim = Simulation::new(&ctx, &particles, config, 0.0).map_err(js_err)?;
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
        let renderer = PointRenderer::new(&ctx.device, format, &sim.state);
        Ok(WebApp {
            state: Rc::new(RefCell::new(AppState {
                ctx,
                surface,
                surface_config,
                sim,
                renderer,
                camera: Camera::default(),
                initial: None,
            })),
        })
    }

    /// The adapter in use, for the page to show.
    pub fn adapter(&self) -> String {
        self.state.borrow().ctx.adapter_summary()
    }

    /// Queues `steps` integration steps and draws the particles; returns
    /// immediately (the GPU works while the page goes on).
    pub fn frame(&self, steps: u32, yaw: f32) -> Result<(), JsValue> {
        let mut s = self.state.borrow_mut();
        if steps > 0 {
            let AppState { ctx, sim, .. } = &mut *s;
            sim.step(ctx, steps);
        }
        s.camera.yaw = yaw;
        let frame = match s.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t)
            | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
            _ => return Ok(()), // skip this frame; the next one tries again
        };
        let view = frame.texture.create_view(&Default::default());
        let uniform = s
            .camera
            .uniform(s.surface_config.width, s.surface_config.height);
        let mut encoder = s.ctx.device.create_command_encoder(&Default::default());
        s.renderer.draw(&s.ctx.queue, &mut encoder, &view, &uniform);
        s.ctx.queue.submit(Some(encoder.finish()));
        s.ctx.queue.present(frame);
        Ok(())
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

    /// Resolves to `{time, steps, n, kinetic, potential, energy,
    /// energy_error}` read back from the GPU without blocking.
    pub fn diagnostics(&self) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            // Clone the (shared) handles so no borrow is held across the
            // await: frames keep running while the read-back completes.
            let (ctx, particles, time, steps, n) = {
                let s = state.borrow();
                (
                    s.ctx.clone(),
                    s.sim.state.clone(),
                    s.sim.time,
                    s.sim.steps,
                    s.sim.n(),
                )
            };
            let d = particles.diagnostics(&ctx).await;
            let d = d.map_err(js_err)?;
            let e0 = *state.borrow_mut().initial.get_or_insert(d);
            let obj = js_sys::Object::new();
            for (k, v) in [
                ("time", time),
                ("steps", steps as f64),
                ("n", n as f64),
                ("kinetic", d.kinetic),
                ("potential", d.potential),
                ("energy", d.total),
                ("energy_error", d.energy_error(&e0)),
            ] {
                js_sys::Reflect::set(&obj, &k.into(), &v.into())?;
            }
            Ok(obj.into())
        })
    }
}
