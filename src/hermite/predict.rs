//! The j-particle store of the Hermite integrators and the GRAPE-6 API
//! (drives `shaders/predict.wgsl`): host-corrected j-particles are queued
//! with `set`, scattered into the store on the GPU at the next evaluation,
//! and every j-particle is predicted to the evaluation time there.

use crate::gpu::buffers::storage_buffer;
use crate::gpu::context::dispatch_size;
use crate::gpu::ds::{compose_with_ds, split3};
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::{IParticle, JParticle, PredJ, WORKGROUP_SIZE};
use crate::gpu::timing::PhaseTimer;

const PREDICT_WGSL: &str = include_str!("../../shaders/predict.wgsl");
const PREDICT_DP_WGSL: &str = include_str!("../../shaders/predict_dp.wgsl");

/// The composed WGSL of the scatter and predict kernels.
pub fn wgsl() -> String {
    compose_with_ds(&[], PREDICT_WGSL)
}

/// The same with the f64 predictor `predict_dp` of `--precision dp`
/// (only adapters with f64 in shaders can build it).
pub fn wgsl_dp() -> String {
    compose_with_ds(&[], &format!("{PREDICT_WGSL}\n{PREDICT_DP_WGSL}"))
}

/// The binding contract of `shaders/predict.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::StorageRead),
    ("jp", Binding::StorageReadWrite),
    ("updates", Binding::StorageRead),
    ("addresses", Binding::StorageRead),
    ("pred", Binding::StorageReadWrite),
];

/// `n` j-particles on the GPU, and their predicted copies.
pub struct JStore {
    pub n: u32,
    /// The j-particles as of their last correction.
    pub jp: wgpu::Buffer,
    /// The j-particles predicted by the last `encode` (what forces read).
    pub pred: wgpu::Buffer,
    updates: wgpu::Buffer,
    addresses: wgpu::Buffer,
    scatter: Kernel,
    predict: Kernel,
    /// The f64 predictor, built at the first `dp` evaluation.
    predict_dp: Option<Kernel>,
    bind: wgpu::BindGroup,
    /// Updates written since the last `encode`.
    pending: u32,
}

impl JStore {
    /// A store of `n` zero-mass j-particles bound to `params`
    /// (`HermiteParams`).
    pub fn new(device: &wgpu::Device, params: &wgpu::Buffer, n: u32) -> Self {
        let module = ShaderSource::new("predict", wgsl());
        let scatter = Kernel::from_module(device, "j scatter", &module, "scatter", BINDINGS);
        let predict = Kernel::from_module(device, "j predict", &module, "predict", BINDINGS);
        let zeros = vec![JParticle::default(); n as usize];
        let jp = storage_buffer(device, "j particles", &zeros);
        let updates = storage_buffer(device, "j updates", &zeros);
        let addresses = storage_buffer(device, "j update addresses", &vec![0u32; n as usize]);
        let pred = storage_buffer(device, "j predicted", &vec![PredJ::default(); n as usize]);
        let bind = scatter.bind(device, &[params, &jp, &updates, &addresses, &pred]);
        Self {
            n,
            jp,
            pred,
            updates,
            addresses,
            scatter,
            predict,
            predict_dp: None,
            bind,
            pending: 0,
        }
    }

    /// Queues j-particles `records[k]` for addresses `addresses[k]`; they
    /// reach the store at the next `encode`. Later calls before it append
    /// (an address written twice keeps the last record).
    pub fn set(&mut self, queue: &wgpu::Queue, addresses: &[u32], records: &[JParticle]) {
        assert_eq!(addresses.len(), records.len());
        assert!(
            self.pending as usize + records.len() <= self.n as usize,
            "more j updates than particles before one evaluation"
        );
        assert!(
            addresses.iter().all(|&a| a < self.n),
            "j address out of range"
        );
        let at = self.pending as u64;
        queue.write_buffer(&self.addresses, at * 4, bytemuck::cast_slice(addresses));
        queue.write_buffer(
            &self.updates,
            at * std::mem::size_of::<JParticle>() as u64,
            bytemuck::cast_slice(records),
        );
        self.pending += records.len() as u32;
    }

    /// Updates to scatter at the next `encode` (what `HermiteParams::n_update`
    /// must say).
    pub fn pending(&self) -> u32 {
        self.pending
    }

    /// Records the scatter of pending updates (if any) and the prediction
    /// of every j-particle to the time in the params (in f64 with `dp`).
    pub fn encode(
        &mut self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
        dp: bool,
    ) {
        if dp && self.predict_dp.is_none() {
            let module = ShaderSource::new("predict dp", wgsl_dp());
            // The same contract: the bind group serves both predictors.
            self.predict_dp = Some(Kernel::from_module(
                device,
                "j predict dp",
                &module,
                "predict_dp",
                BINDINGS,
            ));
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("j scatter + predict"),
            timestamp_writes: timer.and_then(|t| t.writes("predict")),
        });
        if self.pending > 0 {
            // With several updates of one address, the scatter's order is
            // unspecified: `set` callers update each address once.
            self.scatter.dispatch(
                &mut pass,
                &self.bind,
                dispatch_size(device, self.pending, WORKGROUP_SIZE),
            );
        }
        // Invocations past the params' nj return at once.
        let predict = match (&self.predict_dp, dp) {
            (Some(k), true) => k,
            _ => &self.predict,
        };
        predict.dispatch(
            &mut pass,
            &self.bind,
            dispatch_size(device, self.n, WORKGROUP_SIZE),
        );
        self.pending = 0;
    }
}

/// An i-particle (sink) from f64 predicted values.
pub fn i_particle(id: u32, pos: [f64; 3], vel: [f64; 3], acc: [f64; 3], h2: f64) -> IParticle {
    let (pos_hi, pos_lo) = split3(pos);
    let (vel, vel_lo) = split3(vel);
    IParticle {
        pos_hi,
        id,
        pos_lo,
        h2: h2 as f32,
        vel,
        vel_lo,
        acc: acc.map(|x| x as f32),
        ..Default::default()
    }
}
