//! Hermite forces on the GPU (drives `shaders/hermite_force.wgsl`): the
//! active particles i against all j-particles of a [`JStore`], with
//! acceleration and potential, jerk (4th order), snap (6th order) and the
//! nearest neighbour, in f32 or double-single. A small active block is
//! split over several j-ranges whose partial sums are reduced on the GPU
//! (Sapporo's scheme), so even one active particle keeps the GPU busy; a
//! block of a few sinks gives each sink several invocations
//! ([`sink_lanes`]), so a one-sink block's splits are not run by one live
//! invocation of a workgroup each.
//! [`HermiteGpu`] owns the store, the kernels and the buffers; the
//! integrator (`hermite::integrator`) and the GRAPE-6 API (`g6`) drive
//! it.

use super::neighbours::NeighbourSearch;
use super::predict::JStore;
use crate::error::{Error, Result};
use crate::gpu::buffers::{storage_buffer, Readback, Wait};
use crate::gpu::context::dispatch_size;
use crate::gpu::ds::{compose_with_ds, split};
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::{ForceResult, HermiteParams, IParticle, JParticle, WORKGROUP_SIZE};
use crate::gpu::timing::PhaseTimer;
use crate::gpu::GpuContext;

/// Sinks per workgroup of the force kernel, and sources per staged tile.
/// 128 as Kirin's measured optimum (Bédorf 2007, §3); the tile of a DS
/// 6th-order kernel then needs 8.5 KiB of workgroup memory.
pub const HT: u32 = 128;

/// Invocations per workgroup of the reduce and of `force_lanes` (`RW` in
/// the shader): up to this many invocations share one sink's partial sums,
/// or one sink's split.
pub const REDUCE_WORKGROUP: u32 = 64;

const HERMITE_FORCE_WGSL: &str = include_str!("../../shaders/hermite_force.wgsl");
const HERMITE_FORCE_DP_WGSL: &str = include_str!("../../shaders/hermite_force_dp.wgsl");

/// Which derivatives of the force a kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Acceleration and potential (GRAPE-5 / leapfrog style).
    Two,
    /// And jerk: 4th-order Hermite.
    Four,
    /// And snap: 6th-order Hermite.
    Six,
}

impl Order {
    fn constant(self) -> u32 {
        match self {
            Order::Two => 2,
            Order::Four => 4,
            Order::Six => 6,
        }
    }

    /// Flops per interaction by the usual conventions: 20 for acceleration
    /// and potential, 60 with the jerk (Bédorf 2007, eq. 4.1); for the snap
    /// we count the 34 extra operations of the formula in
    /// `shaders/hermite_force.wgsl` (da 3, two dot products 10, beta 3,
    /// S 15, sum 3).
    pub fn flops(self) -> f64 {
        match self {
            Order::Two => 20.0,
            Order::Four => 60.0,
            Order::Six => 94.0,
        }
    }
}

/// Arithmetic of a force evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Positions rounded to f32, f32 sums.
    F32,
    /// Double-single positions and sums of acceleration, potential, jerk
    /// and snap, every interaction added exactly; 1/sqrt refined by a
    /// Newton step. The most accurate precision a browser runs. Where the
    /// adapter has f64 in shaders the same f32 interactions go to f64 sums
    /// (closer still, and faster: `HermiteGpu::set_ds_f64_sums`).
    Ds,
    /// Sapporo2's double-single arithmetic: double-single positions, runs
    /// of 32 interactions summed in f32 (Sapporo2's threads sum ~30-60 on
    /// an H100 before going to double), the runs' sums double-single, the
    /// bare f32 1/sqrt. Faster than `Ds` at Sapporo2's accuracy
    /// (BENCHMARKS.md).
    DsFast,
    /// Native f64 arithmetic in the kernels (predictor and forces), on
    /// positions and velocities carried as double-single pairs; needs an
    /// adapter with f64 in shaders (wgpu `SHADER_F64`: Vulkan on most
    /// desktop GPUs and lavapipe; never WebGPU in a browser).
    Dp,
}

impl Precision {
    pub const ALL: &'static [Precision] = &[
        Precision::Ds,
        Precision::DsFast,
        Precision::F32,
        Precision::Dp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Ds => "ds",
            Precision::DsFast => "ds-fast",
            Precision::Dp => "dp",
        }
    }

    /// Whether the adapter of `ctx` can run this precision: `dp` needs
    /// native f64 in shaders, which browsers never offer.
    pub fn check_adapter(self, ctx: &GpuContext) -> Result<()> {
        if self == Precision::Dp && !ctx.has_f64 {
            return Err(Error::AdapterInsufficient {
                adapter: ctx.adapter_info.name.clone(),
                reason: "--precision dp needs native f64 in shaders (wgpu SHADER_F64), which this \
                         adapter lacks (WebGPU in browsers never has it); use ds, the most \
                         accurate precision it can run"
                    .into(),
            });
        }
        Ok(())
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|p| p.name() == name)
    }

    /// Interactions summed in f32 before their sum enters the force sums
    /// (`shaders/hermite_force.wgsl`). `Ds` adds every interaction to its
    /// double-single sums (runs of 16 were 1.4x faster on an H100 but lost
    /// 3x more energy in the 6th-order accuracy test, BENCHMARKS.md); f32
    /// sums a staged tile at a time, as plain f32 addition is no less
    /// exact that way.
    pub const fn run_length(self) -> u32 {
        match self {
            Precision::Ds | Precision::Dp => 1,
            Precision::DsFast => 32,
            Precision::F32 => HT,
        }
    }
}

// The force loop takes a tile's HT sources in runs of `run_length`.
const _: () = {
    let mut k = 0;
    while k < Precision::ALL.len() {
        assert!(HT.is_multiple_of(Precision::ALL[k].run_length()));
        k += 1;
    }
};

/// The composed WGSL of one kernel variant; with `f64` also the f64 entry
/// points (`force_ds64`, `force_dp`, `reduce_dp`), which only adapters with
/// f64 in shaders can build (`Dp` needs them).
pub fn wgsl(order: Order, precision: Precision, f64: bool) -> String {
    let body = if f64 || precision == Precision::Dp {
        format!("{HERMITE_FORCE_WGSL}\n{HERMITE_FORCE_DP_WGSL}")
    } else {
        HERMITE_FORCE_WGSL.to_string()
    };
    compose_with_ds(
        &[
            ("HT", HT),
            ("RW", REDUCE_WORKGROUP),
            ("DSG", precision.run_length()),
            (
                "REFINE",
                matches!(precision, Precision::Ds | Precision::Dp) as u32,
            ),
            ("ORDER", order.constant()),
            ("DS", (precision != Precision::F32) as u32),
        ],
        &body,
    )
}

/// The force and reduction entry points of a precision (`f64_sums`: `Ds`
/// sums in f64).
fn entry_points(precision: Precision, f64_sums: bool) -> (&'static str, &'static str) {
    match precision {
        Precision::Dp => ("force_dp", "reduce_dp"),
        Precision::Ds if f64_sums => ("force_ds64", "reduce"),
        _ => ("force", "reduce"),
    }
}

/// The binding contract of `shaders/hermite_force.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::StorageRead),
    ("pred", Binding::StorageRead),
    ("active_list", Binding::StorageRead),
    ("ip", Binding::StorageReadWrite),
    ("partial", Binding::StorageReadWrite),
    ("results", Binding::StorageReadWrite),
];

/// Invocations per sink of the force kernel for a block of `ni` sinks:
/// 1 (`force`, HT sinks per workgroup) from `REDUCE_WORKGROUP / 2` sinks
/// on, else `REDUCE_WORKGROUP / ni` rounded down to a power of two
/// (`force_lanes`: the block's sinks fill one workgroup of
/// `REDUCE_WORKGROUP`, 64 lanes for one sink). A block of one sink split
/// over 512 j-ranges ran each range in one live invocation of 128; the
/// fixed cost per block step of a large run (Sapporo2's Fig. 6, most of
/// whose blocks hold one or two sinks) was that serial sum.
pub fn sink_lanes(ni: u32) -> u32 {
    if ni == 0 || ni > REDUCE_WORKGROUP / 2 {
        1
    } else {
        REDUCE_WORKGROUP / ni.next_power_of_two()
    }
}

/// How the j-range is split for `ni` sinks against `nj` sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitPlan {
    /// Workgroups along the sinks.
    pub groups_i: u32,
    /// Splits of the j-range (workgroups along y).
    pub nsplit: u32,
    /// Sources per split, a multiple of the workgroup's tile (`HT` sources
    /// for `force`, `REDUCE_WORKGROUP` for `force_lanes`).
    pub chunk: u32,
    /// Invocations per sink (`sink_lanes`; 1: the kernel `force`).
    pub lanes: u32,
}

impl SplitPlan {
    /// Splits the sources so that about `target` workgroups run, never
    /// into pieces smaller than one tile, with `lanes` invocations per
    /// sink (a power of two up to `REDUCE_WORKGROUP`).
    pub fn new(ni: u32, nj: u32, target: u32, lanes: u32) -> Self {
        // Sinks per workgroup, and sources per staged tile.
        let (rows, tile) = if lanes <= 1 {
            (HT, HT)
        } else {
            (REDUCE_WORKGROUP / lanes, REDUCE_WORKGROUP)
        };
        let groups_i = ni.div_ceil(rows).max(1);
        let tiles = nj.div_ceil(tile).max(1);
        let want = target.div_ceil(groups_i).clamp(1, tiles);
        let chunk = tiles.div_ceil(want) * tile;
        Self {
            groups_i,
            nsplit: nj.div_ceil(chunk).max(1),
            chunk,
            lanes: lanes.max(1),
        }
    }

    /// Records between the partial sums of two splits: the sinks the
    /// workgroups along x cover.
    pub fn ni_stride(&self) -> u32 {
        if self.lanes == 1 {
            self.groups_i * HT
        } else {
            self.groups_i * (REDUCE_WORKGROUP / self.lanes)
        }
    }
}

/// Invocations of the reduce per sink for `nsplit` partial sums: about 4
/// partials each, a power of two up to `REDUCE_WORKGROUP` (1, the sums in
/// split order, below 8 splits). One invocation walking 512 partials of a
/// small block would take longer than the block's forces.
pub fn reduce_lanes(nsplit: u32) -> u32 {
    let per_lane = (nsplit / 4).max(1);
    (1u32 << per_lane.ilog2()).min(REDUCE_WORKGROUP)
}

/// Who the sinks of an evaluation are.
pub enum Sinks<'a> {
    /// These j-particles (addresses), predicted with the others.
    Active(&'a [u32]),
    /// Explicit i-particles (the GRAPE-6 API predicts them on the host).
    Particles(&'a [IParticle]),
}

impl Sinks<'_> {
    fn len(&self) -> usize {
        match self {
            Sinks::Active(a) => a.len(),
            Sinks::Particles(p) => p.len(),
        }
    }
}

/// The force kernels of one (order, precision), and their bind group
/// (the buffers never change while the variant lives).
struct Variant {
    /// Order, precision, and whether `Ds` sums in f64.
    key: (Order, Precision, bool),
    gather: Kernel,
    force: Kernel,
    /// `force_lanes` (none for `Dp`, whose f64 kernel has one invocation
    /// per sink).
    force_lanes: Option<Kernel>,
    reduce: Kernel,
    bind: wgpu::BindGroup,
}

/// An encoded evaluation whose results are still to be read: which
/// read-back holds them, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evaluation {
    slot: usize,
    ni: u32,
}

/// The j-particle store, the sink buffers and the force kernels.
pub struct HermiteGpu {
    ctx: GpuContext,
    params: wgpu::Buffer,
    pub store: JStore,
    active: wgpu::Buffer,
    ip: wgpu::Buffer,
    partial: wgpu::Buffer,
    results: wgpu::Buffer,
    /// `results` copied at the end of each evaluation, for the host; two,
    /// used in turn, so that an evaluation can run while the host reads
    /// the one before (`Evaluation`).
    results_readback: [Readback; 2],
    /// The read-back of the last encoded evaluation.
    last_slot: usize,
    variants: Vec<Variant>,
    neighbours: Option<NeighbourSearch>,
    /// Softening squared (f64: `dp` reads it to ~2^-48, the others as f32).
    eps2: f64,
    ni_cap: u32,
    target_workgroups: u32,
    /// Most invocations per sink of the force kernel (`sink_lanes`).
    max_sink_lanes: u32,
    /// How reading results waits for the GPU.
    wait: Wait,
    /// `Ds` adds its interactions to f64 sums (`force_ds64`) instead of
    /// double-single two-sums (`force`): on adapters with f64, by default.
    ds_f64_sums: bool,
    /// Sinks of the last encoded evaluation.
    last_ni: u32,
    /// Sources of the evaluations: j-particles 0..nj_used.
    nj_used: u32,
}

impl HermiteGpu {
    /// `nj` j-particles (zero mass until set), up to `ni_cap` sinks per
    /// evaluation, softening `eps`.
    pub fn new(ctx: &GpuContext, nj: u32, ni_cap: u32, eps: f64) -> Result<Self> {
        if nj == 0 || ni_cap == 0 {
            return Err(Error::InvalidParameter(
                "a Hermite force needs at least one j- and one i-particle".into(),
            ));
        }
        ctx.check_particle_count(nj as u64, std::mem::size_of::<JParticle>() as u64)?;
        // The force kernel's sinks are the x dimension of its dispatch.
        let max_sinks = ctx.device.limits().max_compute_workgroups_per_dimension as u64 * HT as u64;
        if ni_cap as u64 > max_sinks {
            return Err(Error::TooManyParticles {
                n: ni_cap as u64,
                max: max_sinks,
                reason: "active particles per Hermite force evaluation (one dispatch dimension)"
                    .into(),
            });
        }
        let d = &ctx.device;
        let params = storage_buffer(d, "hermite params", &[HermiteParams::default()]);
        let store = JStore::new(d, &params, nj);
        // A CPU adapter (lavapipe, SwiftShader) has a few cores; a GPU
        // wants its multiprocessors busy, but every split adds a partial
        // sum per sink to write and reduce and a workgroup to start: on an
        // H100 (132 SMs) blocks of 500-2000 sinks against 16k-128k sources
        // (Sapporo2's Fig. 6 runs) were fastest at 512 workgroups, 5-20 %
        // faster than at 1024 and up to 2x faster than at 8192
        // (BENCHMARKS.md, "j-split").
        let target_workgroups = if ctx.adapter_info.device_type == wgpu::DeviceType::Cpu {
            8
        } else {
            512
        };
        let mut gpu = Self {
            ctx: ctx.clone(),
            params,
            store,
            active: storage_buffer(d, "hermite active", &vec![0u32; ni_cap as usize]),
            ip: storage_buffer(
                d,
                "hermite i particles",
                &vec![IParticle::default(); ni_cap as usize],
            ),
            partial: storage_buffer(d, "hermite partial sums", &[ForceResult::default()]),
            results: storage_buffer(
                d,
                "hermite results",
                &vec![ForceResult::default(); ni_cap as usize],
            ),
            results_readback: [0, 1].map(|_| {
                Readback::new(
                    d,
                    "hermite results read-back",
                    ni_cap as u64 * std::mem::size_of::<ForceResult>() as u64,
                )
            }),
            last_slot: 0,
            variants: Vec::new(),
            neighbours: None,
            eps2: eps * eps,
            ni_cap,
            target_workgroups,
            max_sink_lanes: REDUCE_WORKGROUP,
            wait: Wait::Block,
            ds_f64_sums: ctx.has_f64,
            last_ni: 0,
            nj_used: nj,
        };
        gpu.set_target_workgroups(target_workgroups);
        Ok(gpu)
    }

    pub fn nj(&self) -> u32 {
        self.store.n
    }

    pub fn ni_cap(&self) -> u32 {
        self.ni_cap
    }

    /// Evaluations (and predictions) use j-particles `0..nj` only (at most
    /// the store's size).
    pub fn set_nj(&mut self, nj: u32) {
        self.nj_used = nj.clamp(1, self.store.n);
    }

    pub fn eps2(&self) -> f64 {
        self.eps2
    }

    pub fn set_eps2(&mut self, eps2: f64) {
        self.eps2 = eps2;
    }

    /// Workgroups the j-splitting aims for.
    pub fn target_workgroups(&self) -> u32 {
        self.target_workgroups
    }

    /// Sets the workgroups the j-splitting aims for (tests force many splits with a
    /// large value). Reallocates the partial sums.
    pub fn set_target_workgroups(&mut self, target: u32) {
        self.target_workgroups = target.max(1);
        // The bind groups hold the old partial-sum buffer.
        self.variants.clear();
        // nsplit <= ceil(target / groups_i), so nsplit * groups_i <=
        // target + groups_i, with HT sinks a workgroup for `force`; with
        // L > 1 lanes (`force_lanes`, only for ni <= REDUCE_WORKGROUP / L)
        // one workgroup holds all sinks: target + 1 workgroups of at most
        // HT sinks.
        let records = (self.target_workgroups + self.ni_cap.div_ceil(HT)) as u64 * HT as u64;
        self.partial = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hermite partial sums"),
            size: records * std::mem::size_of::<ForceResult>() as u64,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
    }

    /// Caps the invocations per sink of the force kernel (1: every block
    /// with one invocation per sink, the kernel `force`; tests compare the
    /// two kernels).
    pub fn set_max_sink_lanes(&mut self, max: u32) {
        self.max_sink_lanes = max.clamp(1, REDUCE_WORKGROUP);
    }

    /// How reading results waits for the GPU (natively; `Wait::Block` by
    /// default).
    pub fn set_wait(&mut self, wait: Wait) {
        self.wait = wait;
    }

    /// Whether `Ds` sums its interactions in f64 (on by default where the
    /// adapter has f64 in shaders; never on without). Off, every adapter
    /// runs the double-single two-sums a browser runs (tests compare the
    /// two).
    pub fn set_ds_f64_sums(&mut self, on: bool) {
        self.ds_f64_sums = on && self.ctx.has_f64;
    }

    /// How `Ds` adds its interactions: "f64" or "double-single" (bench
    /// lines say which ran).
    pub fn ds_sums(&self) -> &'static str {
        if self.ds_f64_sums {
            "f64"
        } else {
            "double-single"
        }
    }

    /// Queues j-particles for their addresses (see `JStore::set`).
    pub fn set_j(&mut self, addresses: &[u32], records: &[JParticle]) {
        self.store.set(&self.ctx.queue, addresses, records);
    }

    fn variant(&mut self, order: Order, precision: Precision) -> &Variant {
        let f64_sums = precision == Precision::Ds && self.ds_f64_sums;
        let key = (order, precision, f64_sums);
        if let Some(k) = self.variants.iter().position(|v| v.key == key) {
            return &self.variants[k];
        }
        let d = &self.ctx.device;
        let label = format!("hermite force {order:?} {}", precision.name());
        // SAFETY: every index of the module is in bounds by construction:
        // workgroup tiles by the invocation index (< HT) and k < HT (or
        // run * DSG + q < HT, DSG dividing HT); sources clamped below
        // j_end <= nj <= the store's size; sinks clamped below ni <=
        // ni_cap, the size of ip, active and results; active addresses
        // checked below nj in `encode`; partial sums at
        // split * ni_stride + i < nsplit * ni_stride, which
        // `set_target_workgroups` allocates; `force_lanes` stages and reads
        // tile entries below RW <= HT (k < RW / lanes); the lane sums of
        // the reduce and of force_lanes at lid + step, where lane + step <
        // lanes, a power of two dividing RW (`reduce_lanes`,
        // `sink_lanes`), stay in the sink's run of lanes below RW. Every
        // loop counts up to a bound below 2^31. Without the clamps and loop counters wgpu
        // would add, the force loop is a tenth shorter.
        let module = unsafe {
            ShaderSource::with_checks(
                &label,
                wgsl(order, precision, f64_sums),
                wgpu::ShaderRuntimeChecks::unchecked(),
            )
        };
        let (force_entry, reduce_entry) = entry_points(precision, f64_sums);
        let force = Kernel::from_module(d, &label, &module, force_entry, BINDINGS);
        let bind = force.bind(
            d,
            &[
                &self.params,
                &self.store.pred,
                &self.active,
                &self.ip,
                &self.partial,
                &self.results,
            ],
        );
        let force_lanes = (precision != Precision::Dp).then(|| {
            Kernel::from_module(d, "hermite force lanes", &module, "force_lanes", BINDINGS)
        });
        let v = Variant {
            key,
            gather: Kernel::from_module(d, "hermite gather", &module, "gather", BINDINGS),
            force,
            force_lanes,
            reduce: Kernel::from_module(d, "hermite reduce", &module, reduce_entry, BINDINGS),
            bind,
        };
        self.variants.push(v);
        self.variants.last().expect("just pushed")
    }

    /// Records one evaluation at time `t`: scatter of queued j-particles,
    /// prediction of all j-particles to `t`, the sinks, the (split) force
    /// and the reduction into the results. One evaluation per submission:
    /// the parameters are written now. Returns the number of sinks.
    pub fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        t: f64,
        sinks: Sinks<'_>,
        order: Order,
        precision: Precision,
        mut timer: Option<&mut PhaseTimer>,
    ) -> Result<u32> {
        precision.check_adapter(&self.ctx)?;
        let ni = sinks.len() as u32;
        if ni == 0 || ni > self.ni_cap {
            return Err(Error::InvalidParameter(format!(
                "{ni} sinks, this force evaluation takes 1 to {}",
                self.ni_cap
            )));
        }
        let nj = self.nj_used;
        let lanes = if precision == Precision::Dp {
            1
        } else {
            sink_lanes(ni).min(self.max_sink_lanes)
        };
        let plan = SplitPlan::new(ni, nj, self.target_workgroups, lanes);
        let (t_hi, t_lo) = split(t);
        let (eps2_hi, eps2_lo) = split(self.eps2);
        let params = HermiteParams {
            ni,
            nj,
            chunk: plan.chunk,
            nsplit: plan.nsplit,
            ni_stride: plan.ni_stride(),
            n_update: self.store.pending(),
            eps2: eps2_hi,
            eps2_lo,
            one: 1.0,
            t_hi,
            t_lo,
            reduce_lanes: reduce_lanes(plan.nsplit),
            sink_lanes: plan.lanes,
        };
        let queue = &self.ctx.queue;
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        match &sinks {
            Sinks::Active(a) => {
                if let Some(&bad) = a.iter().find(|&&k| k >= nj) {
                    return Err(Error::InvalidParameter(format!(
                        "active particle {bad} out of range (N = {nj})"
                    )));
                }
                queue.write_buffer(&self.active, 0, bytemuck::cast_slice(a));
            }
            Sinks::Particles(p) => queue.write_buffer(&self.ip, 0, bytemuck::cast_slice(p)),
        }
        let device = self.ctx.device.clone();
        let dp = precision == Precision::Dp;
        self.store
            .encode(&device, encoder, timer.as_deref_mut(), dp);
        let gather_active = matches!(sinks, Sinks::Active(_));
        let v = self.variant(order, precision);
        let bind = &v.bind;
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("hermite force"),
            timestamp_writes: timer.and_then(|t| t.writes("force")),
        });
        if gather_active {
            v.gather
                .dispatch(&mut pass, bind, dispatch_size(&device, ni, WORKGROUP_SIZE));
        }
        let force = match (&v.force_lanes, plan.lanes) {
            (Some(k), 2..) => k,
            _ => &v.force,
        };
        force.dispatch(&mut pass, bind, (plan.groups_i, plan.nsplit));
        // `reduce_dp` sums in f64, one invocation per sink.
        let reduce_size = if dp {
            dispatch_size(&device, ni, WORKGROUP_SIZE)
        } else {
            dispatch_size(&device, ni * params.reduce_lanes, REDUCE_WORKGROUP)
        };
        v.reduce.dispatch(&mut pass, bind, reduce_size);
        drop(pass);
        // The results travel back in the same submission, into the
        // read-back the evaluation before did not use.
        self.last_slot = 1 - self.last_slot;
        self.results_readback[self.last_slot].record_copy(
            encoder,
            &self.results,
            ni as u64 * std::mem::size_of::<ForceResult>() as u64,
        );
        self.last_ni = ni;
        Ok(ni)
    }

    /// The last encoded evaluation, to read later with `read_evaluation`
    /// (at most one more may be encoded before it is read).
    pub fn last_evaluation(&self) -> Evaluation {
        Evaluation {
            slot: self.last_slot,
            ni: self.last_ni,
        }
    }

    /// Reads the results of the last evaluation (after its submission).
    pub async fn read_results(&self) -> Result<Vec<ForceResult>> {
        self.read_evaluation(self.last_evaluation(), None).await
    }

    /// Reads the results of `e` once its submission `after` has run
    /// (`None`: all submitted work), while later submissions may still run.
    pub async fn read_evaluation(
        &self,
        e: Evaluation,
        after: Option<wgpu::SubmissionIndex>,
    ) -> Result<Vec<ForceResult>> {
        self.results_readback[e.slot]
            .read(&self.ctx.device, e.ni as u64, after, self.wait)
            .await
    }

    /// One evaluation, submitted and read back.
    pub async fn evaluate(
        &mut self,
        t: f64,
        sinks: Sinks<'_>,
        order: Order,
        precision: Precision,
    ) -> Result<Vec<ForceResult>> {
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("hermite evaluation"),
            });
        self.encode(&mut encoder, t, sinks, order, precision, None)?;
        self.ctx.queue.submit(Some(encoder.finish()));
        self.read_results().await
    }

    /// Neighbour lists of the sinks of the last evaluation (their `h2`):
    /// for each sink, the total count (which may exceed `NB_MAX`) and the
    /// first `NB_MAX` ids, sorted.
    pub async fn neighbour_lists(&mut self) -> Result<Vec<(u32, Vec<u32>)>> {
        let ni = self.last_ni;
        if ni == 0 {
            return Ok(Vec::new());
        }
        let search = self
            .neighbours
            .get_or_insert_with(|| NeighbourSearch::new(&self.ctx.device, self.ni_cap));
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("neighbour lists"),
            });
        search.encode(
            &self.ctx.device,
            &mut encoder,
            [&self.params, &self.store.pred, &self.ip],
            ni,
        );
        self.ctx.queue.submit(Some(encoder.finish()));
        search.read(&self.ctx, ni).await
    }

    /// The GPU context this force runs on.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }
}

/// A force result in f64: hi + lo of the double-single parts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Force64 {
    pub acc: [f64; 3],
    pub pot: f64,
    pub jerk: [f64; 3],
    pub snap: [f64; 3],
    /// Id of the nearest other particle (`u32::MAX` if none).
    pub nn_id: u32,
    /// Its unsoftened distance squared.
    pub nn_d2: f64,
}

impl From<&ForceResult> for Force64 {
    fn from(r: &ForceResult) -> Self {
        use crate::gpu::ds::{join, join3};
        Self {
            acc: join3(r.acc_hi, r.acc_lo),
            pot: join(r.pot_hi, r.pot_lo),
            jerk: join3(r.jerk_hi, r.jerk_lo),
            snap: join3(r.snap, r.snap_lo),
            nn_id: r.nn_id,
            nn_d2: r.nn_d2 as f64,
        }
    }
}

/// Most sinks per submission of [`ds_direct_forces`] (the buffers stay
/// small), and most pairwise interactions per submission (about a third of
/// a second on an H100: a GPU watchdog may stop a long submission).
const DS_DIRECT_CHUNK: usize = 32768;
const DS_DIRECT_INTERACTIONS: u64 = 100_000_000_000;

/// Acceleration and potential of every particle from all the others, summed
/// on the GPU in double-single (positions exact: each f32 position is its
/// own double-single value; pair forces in f32, sums in double-single).
/// The reference the tree code's force errors are measured against: one
/// N² evaluation at GPU speed, a few 1e-8 from the f64 sum (the spot check
/// of `webgrav forces --compare ds` reports it).
pub async fn ds_direct_forces(
    ctx: &GpuContext,
    pos_mass: &[crate::gpu::layout::PosMass],
    eps: f64,
) -> Result<Vec<Force64>> {
    let n = pos_mass.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let per_submission = (DS_DIRECT_INTERACTIONS / n as u64).max(HT as u64);
    let ni_cap = n.min(DS_DIRECT_CHUNK).min(per_submission as usize);
    let mut gpu = HermiteGpu::new(ctx, n as u32, ni_cap as u32, eps)?;
    let recs: Vec<_> = pos_mass
        .iter()
        .enumerate()
        .map(|(k, p)| {
            // At rest at t = 0: the prediction to t = 0 is the position.
            let (pos_hi, pos_lo) = crate::gpu::ds::split3(p.pos.map(f64::from));
            JParticle {
                pos_hi,
                mass: p.mass,
                pos_lo,
                id: k as u32,
                ..Default::default()
            }
        })
        .collect();
    let addresses: Vec<u32> = (0..n as u32).collect();
    gpu.set_j(&addresses, &recs);
    let mut out = Vec::with_capacity(n);
    for sinks in addresses.chunks(ni_cap) {
        let r = gpu
            .evaluate(0.0, Sinks::Active(sinks), Order::Two, Precision::Ds)
            .await?;
        out.extend(r.iter().map(Force64::from));
    }
    Ok(out)
}
