//! The tree code made visible in the page, beside the cell overlay that
//! `draw` records: a picked particle's interaction list (`tree::trace`)
//! with its counts and its force error against the f64 direct sum, and
//! the accuracy panel (the tree's error percentiles on the sample
//! `webgrav forces --compare direct` takes).

use super::js::{array, js_err, set, typed_error};
use super::{read, WebApp};
use crate::app::accuracy::direct_reference;
use crate::direct::reference::{acc_errors, forces_on};
use crate::tree::trace::Trace;
use wasm_bindgen::prelude::*;

/// Particles the accuracy panel compares (the CLI's `--sample` default).
pub const ACCURACY_SAMPLE: usize = 4096;

#[wasm_bindgen]
impl WebApp {
    /// Picks the particle drawn nearest the canvas pixel (x, y), within
    /// `radius` pixels, of a tree run with shared steps, and traces its
    /// interaction list on the tree of the current state (read out
    /// first, so the forces compared are this tree's). Resolves to
    /// `{particle, group_size, accepted, leaves, direct, force_error,
    /// acc, acc_direct}` (counts of the list; the relative error of its
    /// tree force against the f64 direct sum), or null where no particle
    /// is that near. The list is drawn over every later frame until
    /// `unpick`.
    pub fn pick(&self, x: f32, y: f32, radius: f32) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (r, epoch) = read(&state).await?;
            let (ctx, camera, size, eps) = {
                let s = state.borrow();
                let size = (s.surface_config.width, s.surface_config.height);
                (
                    s.ctx.clone(),
                    s.settings.camera,
                    size,
                    s.settings.run.eps as f64,
                )
            };
            let pos = &r.snapshot.particles.pos_mass;
            let mut best: Option<(usize, f32)> = None;
            let project = camera.projector(size.0, size.1);
            for (k, p) in pos.iter().enumerate() {
                if let Some([px, py]) = project(p.pos) {
                    let d = (px - x).hypot(py - y);
                    if d <= radius && best.is_none_or(|(_, b)| d < b) {
                        best = Some((k, d));
                    }
                }
            }
            let Some((k, _)) = best else {
                return Ok(JsValue::NULL);
            };
            let reader = {
                let mut s = state.borrow_mut();
                if s.slot.epoch != epoch {
                    return Err(typed_error("superseded", "the run was replaced"));
                }
                let s = &mut *s;
                let Some((tree, alpha)) = s
                    .slot
                    .run
                    .as_deref()
                    .and_then(|run| Some((run.tree()?, run.config().params().alpha)))
                else {
                    return Err(typed_error(
                        "invalid-parameter",
                        "picking shows the tree's interaction list: it needs the tree solver \
                         with shared time steps",
                    ));
                };
                let trace = Trace::new(&ctx.device, tree);
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                trace.encode(&ctx.device, &ctx.queue, &mut encoder, k as u32, alpha);
                ctx.queue.submit(Some(encoder.finish()));
                let reader = trace.reader();
                s.picked = Some((k as u32, trace));
                reader
            };
            let Some(t) = reader.read(&ctx).await.map_err(js_err)? else {
                return Ok(JsValue::NULL);
            };
            let reference = forces_on(pos, &[k], eps);
            let tree_acc = r.acc_pot[k];
            let error = acc_errors(&[tree_acc], &reference)[0];
            let out = js_sys::Object::new();
            set(&out, "particle", k as f64);
            set(&out, "group_size", t.group_count);
            set(&out, "accepted", t.accepted.len() as f64);
            set(&out, "leaves", t.leaves.len() as f64);
            set(&out, "direct", t.direct);
            set(&out, "force_error", error);
            set(&out, "acc", array(tree_acc.acc.iter().map(|&a| a as f64)));
            set(&out, "acc_direct", array(reference[0].acc.iter().copied()));
            Ok(out.into())
        })
    }

    /// Drops the picked particle's list from the view.
    pub fn unpick(&self) {
        self.state.borrow_mut().picked = None;
    }

    /// The accuracy of the run's forces now: resolves to `{median, p90,
    /// p99, max, compared, pp, pc, step_ms}`, the relative acceleration
    /// errors against the f64 direct sum on the sample `webgrav forces
    /// --compare direct --sample 4096` takes (seeded by the model's seed),
    /// with the interactions per particle and the GPU time of a step
    /// where the run has them.
    pub fn accuracy(&self) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (r, _) = read(&state).await?;
            let (eps, seed) = {
                let s = state.borrow();
                (s.settings.run.eps as f64, s.settings.seed as u64)
            };
            let reference = direct_reference(&r.snapshot.particles, eps, ACCURACY_SAMPLE, seed);
            let c = reference.compare(&r.acc_pot);
            let out = js_sys::Object::new();
            set(&out, "median", c.acc.median);
            set(&out, "p90", c.acc.p90);
            set(&out, "p99", c.acc.p99);
            set(&out, "max", c.acc.max);
            set(&out, "compared", c.compared as f64);
            if let Some((pp, pc)) = r.interactions {
                set(&out, "pp", pp);
                set(&out, "pc", pc);
            }
            if let Some(p) = &r.phases {
                set(&out, "step_ms", p.iter().map(|(_, ms)| ms).sum::<f64>());
            }
            Ok(out.into())
        })
    }
}
