//! What a view needs of a state that stays on the GPU (drives
//! `shaders/view_sample.wgsl`). A model sampled on the GPU
//! (`state::generate::Sampled`) starts its run there; the page then needs
//! of it, and of the run's later states, only what frames and colours the
//! view and what its plots show: a sample of its particles
//! (`VIEW_SAMPLE`, drawn by `camera::sample_indices`: of a model in its
//! upload order, the very particles the host's view takes of the whole
//! state, so the same quantiles; of a run's state, in the tree's order, a
//! sample as good; with each particle's id, so that a galaxy's plots
//! know its component, and the few particles a sample must not miss, its
//! black holes, found by id), and each particle's mass shell, tagged on
//! the GPU with each shell's mass and count. At 2^24 particles that is
//! 13 MB of sample (14 MB with the ids) and 2 MB of sums read back
//! instead of 512 MB.

use super::camera::{sample_indices, VIEW_SAMPLE};
use super::components::{MassShells, TagTotals};
use crate::error::{Error, Result};
use crate::gpu::buffers::uniform_buffer;
use crate::gpu::buffers::{empty_storage_buffer, read_buffers, records, storage_buffer_written};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::{AccPot, PosMass, Velocity, ViewSampleParams, WORKGROUP_SIZE};
use crate::gpu::shader;
use crate::gpu::GpuContext;
use crate::state::particles::GpuParticles;
use crate::state::Particles;

const VIEW_SAMPLE_WGSL: &str = include_str!("../../shaders/view_sample.wgsl");

/// The composed WGSL of the view's kernels.
pub fn wgsl() -> String {
    shader::compose(&[], VIEW_SAMPLE_WGSL)
}

/// The binding contract of `shaders/view_sample.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("acc_pot", Binding::StorageRead),
    ("picks", Binding::StorageRead),
    ("sample", Binding::StorageReadWrite),
    ("tags", Binding::StorageReadWrite),
    ("totals", Binding::StorageReadWrite),
    ("ids", Binding::StorageRead),
];

/// Particles of a state drawn for its view: `sample_indices(n,
/// VIEW_SAMPLE)` of them, in that order (every particle up to
/// `VIEW_SAMPLE`), with their forces where they were gathered with them
/// (else `acc_pot` is empty).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewSample {
    pub pos_mass: Vec<PosMass>,
    pub vel: Vec<Velocity>,
    pub acc_pot: Vec<AccPot>,
    /// Each sampled particle's id where gathered with them
    /// (`ViewSample::of_state`), else empty.
    pub id: Vec<u32>,
}

/// The arrays a sample is gathered from.
struct Sources<'a> {
    pos_mass: &'a wgpu::Buffer,
    vel: &'a wgpu::Buffer,
    acc_pot: Option<&'a wgpu::Buffer>,
    id: Option<&'a wgpu::Buffer>,
}

impl ViewSample {
    /// The sample of particles on the host.
    pub fn of(p: &Particles) -> Self {
        let picks: Vec<usize> = sample_indices(p.len(), VIEW_SAMPLE).collect();
        Self {
            pos_mass: picks.iter().map(|&k| p.pos_mass[k]).collect(),
            vel: picks.iter().map(|&k| p.vel[k]).collect(),
            ..Default::default()
        }
    }

    /// The sample of the `n` particles in `pos_mass` and `vel` on the
    /// GPU, with their forces from `acc_pot` where given (a state in any
    /// order: a model in its upload order, a run's in the tree's).
    pub async fn gather(
        ctx: &GpuContext,
        pos_mass: &wgpu::Buffer,
        vel: &wgpu::Buffer,
        acc_pot: Option<&wgpu::Buffer>,
        n: usize,
    ) -> Result<Self> {
        let sources = Sources {
            pos_mass,
            vel,
            acc_pot,
            id: None,
        };
        Ok(Self::gather_from(ctx, sources, n, &[]).await?.0)
    }

    /// The sample of `state` (a run's, in the tree's order) with the
    /// particles' forces and ids; and the particles whose ids are
    /// `wanted` (a galaxy's black holes, which a sample may miss),
    /// wherever the state holds them, in `wanted`'s order (an id the
    /// state does not hold left out).
    pub async fn of_state(
        ctx: &GpuContext,
        state: &GpuParticles,
        wanted: &[u32],
    ) -> Result<(Self, Self)> {
        let sources = Sources {
            pos_mass: &state.pos_mass,
            vel: &state.vel,
            acc_pot: Some(&state.acc_pot),
            id: Some(&state.id),
        };
        Self::gather_from(ctx, sources, state.n as usize, wanted).await
    }

    /// `sample_indices(n, VIEW_SAMPLE)` of the `n` particles of `from`,
    /// and those of ids `wanted` (`from` with ids).
    async fn gather_from(
        ctx: &GpuContext,
        from: Sources<'_>,
        n: usize,
        wanted: &[u32],
    ) -> Result<(Self, Self)> {
        let device = &ctx.device;
        let mut picks: Vec<u32> = sample_indices(n, VIEW_SAMPLE).map(|k| k as u32).collect();
        let picked = picks.len();
        picks.extend_from_slice(wanted);
        let slots = picks.len();
        let params = ViewSampleParams {
            n: n as u32,
            picked: picked as u32,
            forces: from.acc_pot.is_some() as u32,
            with_ids: from.id.is_some() as u32,
            wanted: wanted.len() as u32,
            ..Default::default()
        };
        let sample = empty_storage_buffer(device, "view sample", (slots.max(1) * 48) as u64);
        let picks = storage_buffer_written(device, &ctx.queue, "view sample picks", &picks);
        // A slot `find` does not fill keeps an id no particle has.
        let ids = match from.id {
            Some(_) => {
                let none = vec![u32::MAX; slots.max(1)];
                storage_buffer_written(device, &ctx.queue, "view sample ids", &none)
            }
            None => unused(device),
        };
        // WebGPU binds a buffer writable at most once per dispatch.
        let (no_forces, no_totals, no_ids) = (unused(device), unused(device), unused(device));
        let k = Kernels::new(device);
        let forces = from.acc_pot.unwrap_or(&no_forces);
        let state_ids = from.id.unwrap_or(&no_ids);
        let buffers = [
            from.pos_mass,
            from.vel,
            forces,
            &picks,
            &sample,
            &ids,
            &no_totals,
            state_ids,
        ];
        k.run(ctx, &k.gather, &params, &buffers, picked);
        if !wanted.is_empty() && from.id.is_some() {
            k.run(ctx, &k.find, &params, &buffers, n);
        }
        let read: &[&wgpu::Buffer] = match from.id {
            Some(_) => &[&sample, &ids],
            None => &[&sample],
        };
        let bytes = read_buffers(device, &ctx.queue, read).await?;
        let words = records::<[f32; 4]>(&bytes[0]);
        let got_ids = bytes
            .get(1)
            .map_or(Vec::new(), |b| records::<u32>(b).into_owned());
        if words.len() < 3 * slots || (from.id.is_some() && got_ids.len() < slots) {
            return Err(Error::Readback(format!(
                "{} of {slots} sampled particles came back",
                words.len() / 3
            )));
        }
        // Each sampled particle's three records, as the shader wrote them
        // (every record is four f32s).
        let take = |range: std::ops::Range<usize>, keep: &dyn Fn(usize) -> bool| {
            let kept: Vec<usize> = range.filter(|&k| keep(k)).collect();
            let record = |k: usize, r: usize| words[3 * k + r];
            Self {
                pos_mass: kept.iter().map(|&k| bytemuck::cast(record(k, 0))).collect(),
                vel: kept.iter().map(|&k| bytemuck::cast(record(k, 1))).collect(),
                acc_pot: match from.acc_pot {
                    Some(_) => kept.iter().map(|&k| bytemuck::cast(record(k, 2))).collect(),
                    None => Vec::new(),
                },
                id: match from.id {
                    Some(_) => kept.iter().map(|&k| got_ids[k]).collect(),
                    None => Vec::new(),
                },
            }
        };
        let sample = take(0..picked, &|_| true);
        let found = take(picked..slots, &|k| {
            got_ids.get(k) == Some(&wanted[k - picked])
        });
        Ok((sample, found))
    }
}

/// Tags each of the `n` particles in `pos_mass` on the GPU with its shell
/// of `shells` (`MassShells::tag`, in f32: a particle within f32's
/// rounding of an edge may take the shell beside it), into a new buffer
/// of one `u32` a particle, the state's tag buffer for drawing
/// (`Scene::with_tags`); the mass and count of each shell summed with
/// them.
pub async fn tag_shells(
    ctx: &GpuContext,
    pos_mass: &wgpu::Buffer,
    n: usize,
    shells: &MassShells,
) -> Result<(wgpu::Buffer, TagTotals)> {
    let device = &ctx.device;
    let wide = |v: [f64; 3]| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0];
    let params = ViewSampleParams {
        n: n as u32,
        centre: wide(shells.centre),
        edges: wide(shells.edges),
        ..Default::default()
    };
    let groups = dispatch_size(device, n as u32, WORKGROUP_SIZE);
    let workgroups = (groups.0 * groups.1) as usize;
    // WebGPU wants non-empty buffers.
    let tags = empty_storage_buffer(device, "component tags", n.max(1) as u64 * 4);
    let totals = empty_storage_buffer(device, "shell totals", (workgroups.max(1) * 32) as u64);
    // A buffer may not be both read-only and writable in one dispatch.
    let (unread, unwritten) = (unused(device), unused(device));
    let k = Kernels::new(device);
    let buffers = [
        pos_mass, &unread, &unread, &unread, &unwritten, &tags, &totals, &unread,
    ];
    k.run(ctx, &k.shells, &params, &buffers, n);
    let bytes = read_buffers(device, &ctx.queue, &[&totals]).await?;
    let sums = records::<[f32; 4]>(&bytes[0]);
    let mut out = vec![(0.0f64, 0u64); 4];
    for pair in sums.chunks_exact(2).take(workgroups) {
        for (t, total) in out.iter_mut().enumerate() {
            total.0 += pair[0][t] as f64;
            total.1 += pair[1][t] as u64;
        }
    }
    // As `TagTotals::of`: up to the last tag any particle has.
    while out.len() > 1 && out.last() == Some(&(0.0, 0)) {
        out.pop();
    }
    let counted: u64 = out.iter().map(|t| t.1).sum();
    if counted != n as u64 {
        return Err(Error::Readback(format!(
            "the mass shells counted {counted} of {n} particles"
        )));
    }
    Ok((tags, TagTotals(out)))
}

/// A buffer for a binding the entry point does not use.
fn unused(device: &wgpu::Device) -> wgpu::Buffer {
    empty_storage_buffer(device, "unused", 16)
}

/// The view's kernels, from one module.
struct Kernels {
    gather: Kernel,
    find: Kernel,
    shells: Kernel,
}

impl Kernels {
    fn new(device: &wgpu::Device) -> Self {
        let module = ShaderSource::new("view sample", wgsl());
        let kernel = |entry| Kernel::from_module(device, entry, &module, entry, BINDINGS);
        Self {
            gather: kernel("gather"),
            find: kernel("find"),
            shells: kernel("shells"),
        }
    }

    /// One dispatch of `kernel` over `count` items, submitted.
    fn run(
        &self,
        ctx: &GpuContext,
        kernel: &Kernel,
        params: &ViewSampleParams,
        buffers: &[&wgpu::Buffer; 8],
        count: usize,
    ) {
        let device = &ctx.device;
        let params = uniform_buffer(device, "view sample params", params);
        let mut all = vec![&params];
        all.extend_from_slice(buffers);
        kernel.submit(ctx, &kernel.bind(device, &all), count as u32);
    }
}
