//! What the GRAPE-6, GRAPE-5 and 6th-order interfaces share: one force
//! engine (`HermiteGpu` with its pending j-particles and last results),
//! the lock-and-report wrapper every exported call goes through, and the
//! readers of C pointers. Private to `g6`: no exported function calls
//! another exported one (a client that defines the C-named wrappers itself
//! must not be called back through the dynamic linker).

use crate::gpu::buffers::Wait;
use crate::gpu::layout::{ForceResult, IParticle, JParticle};
use crate::gpu::GpuContext;
use crate::hermite::neighbours::NB_MAX;
use crate::hermite::{Evaluation, HermiteGpu, Order, Precision, Sinks};
use std::os::raw::{c_double, c_int};
use std::sync::Mutex;

/// i-particles per evaluation (`g6_npipes`, GRAPE-5's pipelines).
pub const NPIPES: c_int = 2048;
/// i-particles per evaluation of the 6th-order interface, whose
/// `calc_force_on_predictors` takes any number (Sapporo2's 16,384): a
/// block of thousands is one round trip to the GPU, not several.
pub const SIXTH_NI: c_int = 16384;
const DEFAULT_JMEMSIZE: u32 = 1 << 18;
/// `Engine::pending_slot` of an address with no pending record.
const NOT_PENDING: u32 = u32::MAX;

/// Prints `webgrav <what>: <msg>` on stderr and returns −1.
pub fn fail(what: &str, msg: impl std::fmt::Display) -> c_int {
    eprintln!("webgrav {what}: {msg}");
    -1
}

/// Locks `state` and runs `f` on it; an error or a panic becomes a message
/// and −1 (a panic must not unwind into the C caller, which would abort
/// the host program).
pub fn guarded<S>(
    state: &Mutex<S>,
    what: &str,
    f: impl FnOnce(&mut S) -> Result<c_int, String>,
) -> c_int {
    let mut s = match state.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut s))) {
        Ok(r) => r.unwrap_or_else(|e| fail(what, e)),
        Err(_) => fail(what, "internal error (panic); see the message above"),
    }
}

/// Row `k` of an `[n][3]` array.
///
/// # Safety
/// `p` non-null with at least `k + 1` rows.
pub unsafe fn row(p: *const [c_double; 3], k: usize) -> [f64; 3] {
    // SAFETY: the caller's contract.
    unsafe { *p.add(k) }
}

/// Three doubles at `p`.
///
/// # Safety
/// `p` non-null, pointing to 3 doubles.
pub unsafe fn vec3(p: *const c_double) -> [f64; 3] {
    // SAFETY: the caller's contract.
    unsafe { [*p, *p.add(1), *p.add(2)] }
}

/// A scalar argument passed by pointer (Fortran style); null is an error.
///
/// # Safety
/// `p` null or pointing to a `T`.
pub unsafe fn arg<T: Copy>(p: *const T, name: &str) -> Result<T, String> {
    if p.is_null() {
        Err(format!("null pointer for {name}"))
    } else {
        // SAFETY: non-null, the caller's contract.
        Ok(unsafe { *p })
    }
}

/// The precision of new engines: `WEBGRAV_G6_PRECISION` = `ds` (default),
/// `f32` or `dp` (native f64; refused where the adapter has none).
fn precision_from_env() -> Result<Precision, String> {
    match std::env::var("WEBGRAV_G6_PRECISION") {
        Err(_) => Ok(Precision::Ds),
        Ok(v) => Precision::from_name(&v).ok_or_else(|| {
            let names: Vec<_> = Precision::ALL.iter().map(|p| p.name()).collect();
            format!(
                "WEBGRAV_G6_PRECISION = {v:?}, must be one of {}",
                names.join(", ")
            )
        }),
    }
}

/// How reading forces waits for the GPU: `WEBGRAV_G6_WAIT` = `spin` (the
/// host polls, as CUDA's default synchronisation spins; the default on
/// GPUs, where it took 7-10 % off the force calls of Sapporo2's Fig. 6
/// replays, BENCHMARKS.md) or `block` (the driver's wait, which frees the
/// core; the default on a CPU adapter such as lavapipe, whose compute
/// threads a spinning host would compete with: twice as slow there).
fn wait_from_env(ctx: &GpuContext) -> Result<Wait, String> {
    match std::env::var("WEBGRAV_G6_WAIT").as_deref() {
        Err(_) if ctx.adapter_info.device_type == wgpu::DeviceType::Cpu => Ok(Wait::Block),
        Err(_) | Ok("spin") => Ok(Wait::Spin),
        Ok("block") => Ok(Wait::Block),
        Ok(v) => Err(format!("WEBGRAV_G6_WAIT = {v:?}, must be spin or block")),
    }
}

/// A submitted evaluation (`Engine::launch`), to `collect`.
pub struct Launched {
    evaluation: Evaluation,
    index: wgpu::SubmissionIndex,
}

/// A force engine of one cluster (GRAPE-6), of the GRAPE-5 interface or
/// of the 6th-order interface.
pub struct Engine {
    pub gpu: HermiteGpu,
    pub precision: Precision,
    /// Time the j-particles are predicted to at the next evaluation.
    pub ti: f64,
    /// j-particles set since the last evaluation, one record per address
    /// (a later set of the same address overwrites it in place).
    pending_addr: Vec<u32>,
    pending_rec: Vec<JParticle>,
    /// Per address, its index in the pending lists (`NOT_PENDING`): no
    /// deduplication pass at each evaluation, which at 2^17 particles
    /// updated per block step cost milliseconds.
    pending_slot: Vec<u32>,
    /// Results of the last evaluation, once read.
    results: Option<Vec<ForceResult>>,
    /// An evaluation was started and its results are the ones on the GPU
    /// (a failed start clears it, so no call returns an older block's
    /// forces).
    evaluated: bool,
    neighbours: Vec<(u32, Vec<u32>)>,
}

impl Engine {
    /// A GPU context, `WEBGRAV_G6_JMEMSIZE` (default 262144) j-particles
    /// and up to `ni_cap` i-particles per evaluation.
    pub fn open(ni_cap: c_int) -> Result<Self, String> {
        let jmem = match std::env::var("WEBGRAV_G6_JMEMSIZE") {
            Err(_) => DEFAULT_JMEMSIZE,
            Ok(v) => v
                .parse()
                .ok()
                .filter(|&n: &u32| n > 0)
                .ok_or_else(|| format!("WEBGRAV_G6_JMEMSIZE = {v:?}, must be a count > 0"))?,
        };
        let precision = precision_from_env()?;
        // Workgroups the j-splitting aims for (tuning; see
        // `HermiteGpu::set_target_workgroups`).
        let split_target =
            match std::env::var("WEBGRAV_G6_SPLIT_TARGET") {
                Err(_) => None,
                Ok(v) => Some(v.parse().ok().filter(|&n: &u32| n > 0).ok_or_else(|| {
                    format!("WEBGRAV_G6_SPLIT_TARGET = {v:?}, must be a count > 0")
                })?),
            };
        let ctx = pollster::block_on(GpuContext::headless()).map_err(|e| e.to_string())?;
        precision.check_adapter(&ctx).map_err(|e| e.to_string())?;
        let wait = wait_from_env(&ctx)?;
        // The context is dropped on a panic, so no broken state is observed
        // (e.g. the device could not allocate the j-memory).
        let mut gpu = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            HermiteGpu::new(&ctx, jmem, ni_cap as u32, 0.0)
        }))
        .map_err(|_| "internal error (panic); see the message above".to_string())?
        .map_err(|e| e.to_string())?;
        if let Some(t) = split_target {
            gpu.set_target_workgroups(t);
        }
        gpu.set_wait(wait);
        let pending_slot = vec![NOT_PENDING; gpu.nj() as usize];
        Ok(Self {
            gpu,
            precision,
            ti: 0.0,
            pending_addr: Vec::new(),
            pending_rec: Vec::new(),
            pending_slot,
            results: None,
            evaluated: false,
            neighbours: Vec::new(),
        })
    }

    /// Most i-particles of one evaluation.
    pub fn ni_cap(&self) -> c_int {
        self.gpu.ni_cap() as c_int
    }

    /// j-particles this engine holds.
    pub fn jmem(&self) -> u32 {
        self.gpu.nj()
    }

    /// Queues j-particle `rec` for `address`; it reaches the GPU with the
    /// next evaluation.
    pub fn set_j(&mut self, address: c_int, rec: JParticle) -> Result<(), String> {
        let nj = self.jmem() as c_int;
        if !(0..nj).contains(&address) {
            return Err(format!("address {address} outside the j-memory 0..{nj}"));
        }
        let slot = &mut self.pending_slot[address as usize];
        if *slot == NOT_PENDING {
            *slot = self.pending_addr.len() as u32;
            self.pending_addr.push(address as u32);
            self.pending_rec.push(rec);
        } else {
            self.pending_rec[*slot as usize] = rec;
        }
        Ok(())
    }

    /// Sends the pending j-particles to the GPU's update area.
    fn flush_pending(&mut self) {
        if !self.pending_addr.is_empty() {
            self.gpu.set_j(&self.pending_addr, &self.pending_rec);
            for &a in &self.pending_addr {
                self.pending_slot[a as usize] = NOT_PENDING;
            }
            self.pending_addr.clear();
            self.pending_rec.clear();
        }
    }

    /// Starts the forces on `sinks` against j-particles `0..nj` with
    /// softening `eps2`, j-particles predicted to `self.ti`; `finish`
    /// reads them.
    pub fn start(
        &mut self,
        nj: c_int,
        sinks: &[IParticle],
        eps2: f64,
        order: Order,
    ) -> Result<(), String> {
        self.launch(nj, sinks, eps2, order).map(|_| ())
    }

    /// As `start`, and returns what `collect` reads the results with: one
    /// more evaluation may be launched before, and runs on the GPU while
    /// the host reads and converts these results.
    pub fn launch(
        &mut self,
        nj: c_int,
        sinks: &[IParticle],
        eps2: f64,
        order: Order,
    ) -> Result<Launched, String> {
        self.evaluated = false;
        self.results = None;
        self.neighbours.clear();
        let ni = sinks.len() as c_int;
        let ni_cap = self.ni_cap();
        if !(1..=ni_cap).contains(&ni) {
            return Err(format!("ni = {ni}, must be 1..{ni_cap}"));
        }
        let cap = self.jmem() as c_int;
        if !(1..=cap).contains(&nj) {
            return Err(format!("nj = {nj}, must be 1..{cap}"));
        }
        if !(eps2.is_finite() && eps2 >= 0.0) {
            return Err(format!("eps2 = {eps2}, must be finite and >= 0"));
        }
        self.flush_pending();
        self.gpu.set_eps2(eps2);
        self.gpu.set_nj(nj as u32);
        let ctx = self.gpu.context().clone();
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("g6 evaluation"),
            });
        self.gpu
            .encode(
                &mut encoder,
                self.ti,
                Sinks::Particles(sinks),
                order,
                self.precision,
                None,
            )
            .map_err(|e| e.to_string())?;
        let index = ctx.queue.submit(Some(encoder.finish()));
        self.evaluated = true;
        Ok(Launched {
            evaluation: self.gpu.last_evaluation(),
            index,
        })
    }

    /// The results of a launched evaluation, once its submission has run.
    pub fn collect(&self, l: Launched) -> Result<Vec<ForceResult>, String> {
        pollster::block_on(self.gpu.read_evaluation(l.evaluation, Some(l.index)))
            .map_err(|e| e.to_string())
    }

    /// Waits for the started evaluation of `ni` sinks and returns its
    /// results.
    pub fn finish(&mut self, ni: c_int) -> Result<&[ForceResult], String> {
        if !self.evaluated {
            return Err("no successfully started force evaluation to finish".into());
        }
        if self.results.is_none() {
            let r = pollster::block_on(self.gpu.read_results()).map_err(|e| e.to_string())?;
            self.results = Some(r);
        }
        let res = self.results.as_deref().expect("just read");
        if ni as usize != res.len() {
            return Err(format!(
                "ni = {ni}, but the evaluation started with {}",
                res.len()
            ));
        }
        Ok(res)
    }

    /// Finds the neighbour lists of the last evaluation's sinks; true if a
    /// list has more than the `NB_MAX` entries kept.
    pub fn read_neighbours(&mut self) -> Result<bool, String> {
        if !self.evaluated {
            return Err("no force evaluation to find neighbours of".into());
        }
        self.neighbours =
            pollster::block_on(self.gpu.neighbour_lists()).map_err(|e| e.to_string())?;
        Ok(self.neighbours.iter().any(|(n, _)| *n > NB_MAX))
    }

    /// Sink `pipe`'s neighbour count and its first `NB_MAX` ids (after
    /// `read_neighbours`).
    pub fn neighbours(&self, pipe: c_int) -> Result<(u32, &[u32]), String> {
        usize::try_from(pipe)
            .ok()
            .and_then(|k| self.neighbours.get(k))
            .map(|(n, l)| (*n, l.as_slice()))
            .ok_or_else(|| {
                format!("no neighbour list for pipe {pipe} (call g6_read_neighbour_list)")
            })
    }
}
