//! Direct summation of gravity on the GPU (drives `shaders/direct.wgsl`) and
//! its CPU f64 reference (`reference`).

pub mod reference;

use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, Slot, DYNAMIC_SLOT};
use crate::gpu::layout::DirectParams;
use crate::gpu::shader::compose;
use crate::gpu::timing::{timed_pass, PhaseTimer};
use crate::state::GpuParticles;
use std::cell::Cell;
use wgpu::util::DeviceExt;

const DIRECT_WGSL: &str = include_str!("../../shaders/direct.wgsl");

/// Shape of the direct kernel: invocations per workgroup (= sources per
/// staged tile), sinks per invocation, sources per loop trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectConfig {
    pub threads: u32,
    pub i_per_thread: u32,
    /// 1, 2, 4 or 8.
    pub unroll: u32,
    /// Compute the potential too (else the acceleration only, one
    /// instruction of 14 fewer per interaction; `acc_pot`'s potentials
    /// keep their last values).
    pub potential: bool,
}

/// Most sinks per invocation: 8 natively, 4 in browsers, whose shader
/// compiler (Tint) makes the 8-sink kernel slower than the 4-sink one (on
/// an H100 at N = 2^20: 797 against 648 ms under Dawn; natively 606
/// against 651; BENCHMARKS.md, "browser engine").
const MAX_SINKS_PER_INVOCATION: u32 = if cfg!(target_arch = "wasm32") { 4 } else { 8 };

impl Default for DirectConfig {
    /// 256 invocations of `MAX_SINKS_PER_INVOCATION` sinks, 4 sources per
    /// loop trip: the fastest shape measured on an H100 at N = 2^20
    /// (BENCHMARKS.md); it needs only WebGPU's default limits (256
    /// invocations, 4 KiB of workgroup memory).
    fn default() -> Self {
        Self {
            threads: 256,
            i_per_thread: MAX_SINKS_PER_INVOCATION,
            unroll: 4,
            potential: true,
        }
    }
}

impl DirectConfig {
    /// The default shape with fewer sinks per invocation where N is too
    /// small to give every multiprocessor work: the most sinks per
    /// invocation that still leave 256 workgroups or more (measured on an H100: at N = 65536
    /// one sink per invocation is fastest, at 262144 four, at 2^20 eight).
    pub fn for_n(n: u32) -> Self {
        let d = Self::default();
        let mut ipt = d.i_per_thread;
        while ipt > 1 && n / (d.threads * ipt) < 256 {
            ipt /= 2;
        }
        Self {
            i_per_thread: ipt,
            ..d
        }
    }

    /// Sinks per workgroup.
    pub fn sinks_per_group(&self) -> u32 {
        self.threads * self.i_per_thread
    }

    /// Checks the shape: threads a power of two in 32..=256, 1 to 16 sinks
    /// per thread, and 1, 2, 4 or 8 sources per loop trip (all direct.wgsl
    /// has).
    pub fn check(&self) -> std::result::Result<(), String> {
        if !(self.threads.is_power_of_two() && (32..=256).contains(&self.threads)) {
            return Err(format!(
                "threads must be a power of two in 32..=256, got {}",
                self.threads
            ));
        }
        if !(1..=16).contains(&self.i_per_thread) {
            return Err(format!(
                "1 to 16 sinks per thread, got {}",
                self.i_per_thread
            ));
        }
        if !matches!(self.unroll, 1 | 2 | 4 | 8) {
            return Err(format!("unroll must be 1, 2, 4 or 8, got {}", self.unroll));
        }
        Ok(())
    }

    fn validate(&self) {
        if let Err(e) = self.check() {
            panic!("invalid direct kernel shape: {e}");
        }
    }
}

/// The composed WGSL of the direct kernel (default shape, softened).
pub fn wgsl() -> String {
    wgsl_for(DirectConfig::default(), true)
}

/// The composed WGSL of one shape; `softened`: eps > 0.
pub fn wgsl_for(config: DirectConfig, softened: bool) -> String {
    compose(
        &[
            ("THREADS", config.threads),
            ("IPT", config.i_per_thread),
            ("SOFTENED", softened as u32),
            ("UNROLL", config.unroll),
            ("POT", config.potential as u32),
        ],
        DIRECT_WGSL,
    )
}

/// The binding contract of `shaders/direct.wgsl`. The parameters take one
/// `DYNAMIC_SLOT` per submission chunk (their `first_group` differs).
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::UniformDynamic),
    ("pos_mass", Binding::StorageRead),
    ("acc_pot", Binding::StorageReadWrite),
];

/// The parameter slots of `chunks` chunks: softening and each chunk's
/// first sink block.
fn param_bytes(n: u32, eps: f32, chunks: u32, groups_per_chunk: u32) -> Vec<u8> {
    let mut bytes = vec![0u8; (chunks as u64 * DYNAMIC_SLOT) as usize];
    for k in 0..chunks {
        let p = DirectParams {
            n,
            eps2: eps * eps,
            first_group: k * groups_per_chunk,
            ..Default::default()
        };
        let at = (k as u64 * DYNAMIC_SLOT) as usize;
        bytes[at..at + std::mem::size_of::<DirectParams>()].copy_from_slice(bytemuck::bytes_of(&p));
    }
    bytes
}

/// Most chunks an evaluation is split into (16 MiB of parameter slots); at
/// N where one sink block alone exceeds the budget, blocks are shared.
const MAX_CHUNKS: u32 = 1 << 16;

/// The blocked f32 direct-summation kernel bound to one particle state.
/// It holds a softened and an unsoftened variant and picks by the current
/// softening. An evaluation is split into chunks of sink blocks that each
/// stay within a submission budget (`GpuContext::interactions_per_submission`),
/// so a caller can submit them separately and no submission runs long
/// enough for a browser or driver to reset the device.
pub struct DirectSolver {
    /// [unsoftened, softened]
    kernels: [Kernel; 2],
    params: wgpu::Buffer,
    binds: [wgpu::BindGroup; 2],
    n: u32,
    eps: Cell<f32>,
    config: DirectConfig,
    /// Sink blocks (workgroups) per chunk, and chunks per evaluation.
    groups_per_chunk: u32,
    chunks: u32,
}

impl DirectSolver {
    /// The solver of the default shape for N, in one chunk.
    pub fn new(device: &wgpu::Device, state: &GpuParticles, eps: f32) -> Self {
        Self::with_config(
            device,
            state,
            eps,
            DirectConfig::for_n(state.n),
            f64::INFINITY,
        )
    }

    /// A solver of a given kernel shape (benchmarks tune with this) whose
    /// chunks hold at most `budget` interactions (one chunk if a sink
    /// block alone holds more).
    pub fn with_config(
        device: &wgpu::Device,
        state: &GpuParticles,
        eps: f32,
        config: DirectConfig,
        budget: f64,
    ) -> Self {
        config.validate();
        // SAFETY: every index is in bounds by construction: the tile by the
        // invocation index (< THREADS) and k + u < THREADS (k = trip *
        // UNROLL, THREADS a multiple of UNROLL, both powers of two); sinks
        // clamped below n or stored only below n; sources read only below
        // n. The loops count tiles (ceil(n / THREADS), n < 2^31) and trips
        // (THREADS / UNROLL) by 1. Without
        // wgpu's clamps and loop counters the inner loop is leaner.
        let kernel = |softened: bool| unsafe {
            Kernel::new_with_checks(
                device,
                if softened {
                    "direct forces (softened)"
                } else {
                    "direct forces"
                },
                &wgsl_for(config, softened),
                "forces",
                BINDINGS,
                wgpu::ShaderRuntimeChecks::unchecked(),
            )
        };
        let kernels = [kernel(false), kernel(true)];
        let groups = state.n.div_ceil(config.sinks_per_group());
        let per_group = config.sinks_per_group() as f64 * state.n as f64;
        let fit = (budget / per_group).floor().clamp(1.0, groups as f64) as u32;
        let groups_per_chunk = fit.max(groups.div_ceil(MAX_CHUNKS));
        let chunks = groups.div_ceil(groups_per_chunk);
        let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("direct params"),
            contents: &param_bytes(state.n, eps, chunks, groups_per_chunk),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        });
        let binds =
            [0, 1].map(|k| kernels[k].bind(device, &[&params, &state.pos_mass, &state.acc_pot]));
        Self {
            kernels,
            params,
            binds,
            n: state.n,
            eps: Cell::new(eps),
            config,
            groups_per_chunk,
            chunks,
        }
    }
    /// Changes the softening of later evaluations.
    pub fn set_eps(&self, queue: &wgpu::Queue, eps: f32) {
        let bytes = param_bytes(self.n, eps, self.chunks, self.groups_per_chunk);
        queue.write_buffer(&self.params, 0, &bytes);
        self.eps.set(eps);
    }

    /// Chunks of one evaluation (each within the submission budget).
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// Records chunk `k` of an evaluation (its sink blocks' accelerations
    /// and potentials into `acc_pot`).
    pub fn encode_chunk(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        k: u32,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "forces", timer);
        self.dispatch_chunk(device, &mut pass, k);
    }

    fn dispatch_chunk(&self, device: &wgpu::Device, pass: &mut wgpu::ComputePass<'_>, k: u32) {
        // The softened kernel needs eps² > 0 in f32 (a subnormal eps² would
        // give the self pair 0·inf); below that, the unsoftened one is exact.
        let eps = self.eps.get();
        let v = (eps * eps >= f32::MIN_POSITIVE) as usize;
        let total = self.n.div_ceil(self.config.sinks_per_group());
        let groups = self.groups_per_chunk.min(total - k * self.groups_per_chunk);
        self.kernels[v].dispatch_in_slot(pass, &self.binds[v], k, dispatch_size(device, groups, 1));
    }

    /// Records acceleration and potential of every particle into `acc_pot`
    /// (every chunk, in one pass).
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "forces", timer);
        for k in 0..self.chunks {
            self.dispatch_chunk(device, &mut pass, k);
        }
    }

    /// Pairwise interactions per evaluation (N^2, the self pair included as
    /// the kernel computes it).
    pub fn interactions(&self) -> f64 {
        (self.n as f64) * (self.n as f64)
    }
}
