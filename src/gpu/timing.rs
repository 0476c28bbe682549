//! Per-phase GPU timings from timestamp queries: each timed compute pass gets
//! a begin and an end timestamp; results come back in milliseconds per phase.

use super::buffers::read_vec;
use super::context::GpuContext;
use crate::error::Result;

/// GPU milliseconds per phase, in the order phases first appeared.
pub type Phases = Vec<(&'static str, f64)>;

/// Wall-clock milliseconds since an arbitrary origin (the browser has no
/// `std::time::Instant`). In wasm, `performance.now()` of the global
/// scope (a page's window, a worker, Node), whose steps are microseconds
/// (`Date.now()`'s are whole milliseconds, too coarse for a pipeline's
/// compile); `Date.now()` where there is none.
pub fn now_ms() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::JsCast;
        thread_local! {
            static PERFORMANCE: Option<web_sys::Performance> =
                js_sys::Reflect::get(&js_sys::global(), &"performance".into())
                    .ok()
                    .filter(|p| p.is_object())
                    .map(|p| p.unchecked_into());
        }
        PERFORMANCE.with(|p| p.as_ref().map_or_else(js_sys::Date::now, |p| p.now()))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
        ORIGIN
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_secs_f64()
            * 1e3
    }
}

/// Records one run with `record`, submits it, waits for the GPU and returns
/// the wall time (ms) and the per-phase GPU times.
pub async fn timed_run(
    ctx: &GpuContext,
    timer: &mut PhaseTimer,
    record: impl FnOnce(&mut wgpu::CommandEncoder, &mut PhaseTimer) -> Result<()>,
) -> Result<(f64, Phases)> {
    timer.reset();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    record(&mut encoder, timer)?;
    timer.resolve(&mut encoder);
    let start = now_ms();
    ctx.queue.submit(Some(encoder.finish()));
    ctx.finish().await?;
    let wall_ms = now_ms() - start;
    Ok((wall_ms, timer.read(ctx).await?))
}

/// Timestamp queries for `pairs` begin/end pairs and the buffer they are
/// resolved into; `None` where the adapter has no timestamps.
fn timestamp_pairs(
    ctx: &GpuContext,
    label: &str,
    pairs: u32,
) -> Option<(wgpu::QuerySet, wgpu::Buffer)> {
    if !ctx.has_timestamps {
        return None;
    }
    let query_set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some(label),
        ty: wgpu::QueryType::Timestamp,
        count: 2 * pairs,
    });
    let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(&format!("{label} resolved")),
        size: 16 * pairs as u64,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    Some((query_set, resolve))
}

/// Milliseconds from timestamp `from` to `to` (0 if a driver's clock ran
/// backwards).
fn ticks_ms(from: u64, to: u64, ns_per_tick: f64) -> f64 {
    to.saturating_sub(from) as f64 * ns_per_tick * 1e-6
}

/// Timestamp query slots for up to `capacity` passes of one submission.
pub struct PhaseTimer {
    query_set: Option<wgpu::QuerySet>,
    resolve: Option<wgpu::Buffer>,
    capacity: u32,
    labels: Vec<&'static str>,
    /// From the first timed pass's beginning to the last one's end, as of
    /// the last `read`: the phases plus what lies between them (untimed
    /// copies, the GPU's idle time between passes).
    span_ms: std::cell::Cell<Option<f64>>,
}

impl PhaseTimer {
    /// A timer for up to `capacity` passes; inert when the adapter has no
    /// timestamp queries (then `writes` returns `None`).
    pub fn new(ctx: &GpuContext, capacity: u32) -> Self {
        let (query_set, resolve) = match timestamp_pairs(ctx, "phase timestamps", capacity) {
            Some((qs, buf)) => (Some(qs), Some(buf)),
            None => (None, None),
        };
        Self {
            query_set,
            resolve,
            capacity,
            labels: Vec::new(),
            span_ms: std::cell::Cell::new(None),
        }
    }

    pub fn enabled(&self) -> bool {
        self.query_set.is_some()
    }

    /// Forgets the phases recorded so far (before encoding the next run).
    pub fn reset(&mut self) {
        self.labels.clear();
    }

    /// Timestamp writes for the next pass, labelled `phase`. `None` when
    /// timestamps are unavailable or all slots are used.
    pub fn writes(&mut self, phase: &'static str) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let qs = self.query_set.as_ref()?;
        let k = self.labels.len() as u32;
        if k >= self.capacity {
            return None;
        }
        self.labels.push(phase);
        Some(wgpu::ComputePassTimestampWrites {
            query_set: qs,
            beginning_of_pass_write_index: Some(2 * k),
            end_of_pass_write_index: Some(2 * k + 1),
        })
    }

    /// Copies the recorded timestamps into the resolve buffer.
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        if let (Some(qs), Some(buf)) = (&self.query_set, &self.resolve) {
            let used = 2 * self.labels.len() as u32;
            if used > 0 {
                encoder.resolve_query_set(qs, 0..used, buf, 0);
            }
        }
    }

    /// Milliseconds from the first timed pass's beginning to the last one's
    /// end, as of the last `read` (None before one, or without timestamps).
    pub fn span_ms(&self) -> Option<f64> {
        self.span_ms.get()
    }

    /// Milliseconds per phase, summed over passes with the same label, in the
    /// order phases first appeared. Empty when timestamps are unavailable.
    pub async fn read(&self, ctx: &GpuContext) -> Result<Phases> {
        let Some(buf) = &self.resolve else {
            return Ok(Vec::new());
        };
        if self.labels.is_empty() {
            return Ok(Vec::new());
        }
        let ticks: Vec<u64> = read_vec(&ctx.device, &ctx.queue, buf).await?;
        let ns_per_tick = ctx.queue.get_timestamp_period() as f64;
        let used = 2 * self.labels.len();
        let span = ticks_ms(ticks[0], ticks[used - 1], ns_per_tick);
        self.span_ms.set(Some(span));
        let mut out: Vec<(&'static str, f64)> = Vec::new();
        for (k, label) in self.labels.iter().enumerate() {
            let ms = ticks_ms(ticks[2 * k], ticks[2 * k + 1], ns_per_tick);
            match out.iter_mut().find(|(l, _)| l == label) {
                Some((_, t)) => *t += ms,
                None => out.push((label, ms)),
            }
        }
        Ok(out)
    }
}

/// GPU time of whole submissions, e.g. a run's batches of steps, as the
/// GPU ran them back to back: an empty pass opens each batch with a
/// timestamp and another closes it. Vulkan (and WebGPU's implementations
/// of it) write a pass's timestamp once the work before it is done, so a
/// batch queued behind another is counted from the other's end, and time
/// the GPU spent waiting for the host is left out. This is what tells the
/// host's share of a run's wall time from the GPU's (`bench tree`).
pub struct BatchClock {
    query_set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    capacity: u32,
    /// Batches begun (and, once their encoder is recorded, ended).
    batches: u32,
}

impl BatchClock {
    /// A clock for up to `capacity` batches; `None` without timestamps.
    pub fn new(ctx: &GpuContext, capacity: u32) -> Option<Self> {
        if capacity == 0 {
            return None;
        }
        let (query_set, resolve) = timestamp_pairs(ctx, "batch timestamps", capacity)?;
        Some(Self {
            query_set,
            resolve,
            capacity,
            batches: 0,
        })
    }

    /// Opens a batch in `encoder` (before its first pass): the batch's
    /// number, to `end` it with; `None` when every slot is used (the
    /// batch then goes unclocked).
    pub fn begin(&mut self, encoder: &mut wgpu::CommandEncoder) -> Option<u32> {
        if self.batches >= self.capacity {
            return None;
        }
        let k = self.batches;
        self.batches += 1;
        self.mark(encoder, Some(2 * k), None);
        Some(k)
    }

    /// Closes batch `k` in `encoder` (after its last pass).
    pub fn end(&self, encoder: &mut wgpu::CommandEncoder, k: u32) {
        self.mark(encoder, None, Some(2 * k + 1));
    }

    fn mark(&self, encoder: &mut wgpu::CommandEncoder, begin: Option<u32>, end: Option<u32>) {
        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("batch clock"),
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &self.query_set,
                beginning_of_pass_write_index: begin,
                end_of_pass_write_index: end,
            }),
        });
    }

    /// GPU milliseconds of each clocked batch, in order. Call once every
    /// clocked batch has been submitted.
    pub async fn read(&self, ctx: &GpuContext) -> Result<Vec<f64>> {
        if self.batches == 0 {
            return Ok(Vec::new());
        }
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.resolve_query_set(&self.query_set, 0..2 * self.batches, &self.resolve, 0);
        ctx.queue.submit(Some(encoder.finish()));
        let ticks: Vec<u64> = read_vec(&ctx.device, &ctx.queue, &self.resolve).await?;
        let ns_per_tick = ctx.queue.get_timestamp_period() as f64;
        Ok((0..self.batches as usize)
            .map(|k| ticks_ms(ticks[2 * k], ticks[2 * k + 1], ns_per_tick))
            .collect())
    }
}

/// Begins a compute pass for `phase`, timed when `timer` is given (the
/// phase label doubles as the pass label seen in GPU debuggers).
pub fn timed_pass<'e>(
    encoder: &'e mut wgpu::CommandEncoder,
    phase: &'static str,
    timer: Option<&mut PhaseTimer>,
) -> wgpu::ComputePass<'e> {
    encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(phase),
        timestamp_writes: timer.and_then(|t| t.writes(phase)),
    })
}
