//! A redraw of the domains that keeps the particles on the GPU (drives
//! `shaders/migration.wgsl`): keys, cuts and destinations on the GPU
//! (`domain_keys`), a stable radix sort by destination (this rank's own
//! first), then only the particles that change rank cross the host; the
//! sorted arrays, with room for the arrivals after the stayers, become
//! the new state, and its upload indices are written on the GPU. The
//! result is `decomposition::decompose`'s
//! followed by `run::upload`, bit for bit (`tests/cluster.rs`): the
//! stayers in their order, then the arrivals by source rank.

use super::comm::Comm;
use super::decomposition::{
    balanced_cuts, exchange, global_bounds, packed, CurveFrame, DecomposeParts, Migrant,
};
use super::domain_keys::{local_box, DomainKeys};
use crate::error::Result;
use crate::gpu::buffers::{empty_storage_buffer, read_buffer_ranges, records};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{shader_module, Binding, Kernel, Slot};
use crate::gpu::layout::{AccPot, PosMass, Velocity, WORKGROUP_SIZE};
use crate::gpu::GpuContext;
use crate::state::particles::in_upload_order;
use crate::state::GpuParticles;
use crate::tree::sort::RadixSort;
use crate::tree::TreeSolver;
use rayon::prelude::*;

const MIGRATION_WGSL: &str = include_str!("../../shaders/migration.wgsl");

pub fn wgsl() -> String {
    crate::tree::compose_with(&[], MIGRATION_WGSL)
}

/// The binding contract of `shaders/migration.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("acc_pot", Binding::StorageRead),
    ("id", Binding::StorageRead),
    ("order", Binding::StorageReadWrite),
    ("moved_pos_mass", Binding::StorageReadWrite),
    ("moved_vel", Binding::StorageReadWrite),
    ("moved_acc_pot", Binding::StorageReadWrite),
];

fn pack_kernel(device: &wgpu::Device) -> Kernel {
    let module = shader_module(device, "migration", &wgsl());
    Kernel::from_module(device, "migration pack", &module, "pack", BINDINGS)
}

/// Builds a redraw's pipelines (`domain_keys`' and `pack`; the radix
/// sort's are the tree's) ahead of a run's first redraw, whose measured
/// cost decides when the next one pays.
pub fn build_kernels(device: &wgpu::Device) {
    super::domain_keys::build_kernels(device);
    pack_kernel(device);
}

/// Bytes of one record of each state array.
const RECORD: u64 = 16;

/// Moves every particle of `tree`'s state (global ids `ids[state.id]`,
/// work from its last walk's interaction counts) to the rank whose run of
/// the curve holds it, as `decompose` does on the host. Every rank calls
/// it together; each gets its new state (upload indices 0..n) and ids,
/// at most `capacity` particles.
pub async fn redraw(
    ctx: &GpuContext,
    comm: &dyn Comm,
    tree: &TreeSolver,
    ids: &[u64],
    capacity: u64,
    parts: &mut DecomposeParts,
) -> Result<(GpuParticles, Vec<u64>)> {
    let state = &tree.buffers.state;
    let (d, q) = (&ctx.device, &ctx.queue);
    let (p, me, n) = (comm.size(), comm.rank(), state.n as usize);
    let mut clock = std::time::Instant::now();
    let mut lap = || {
        let s = clock.elapsed().as_secs_f64();
        clock = std::time::Instant::now();
        s
    };
    let keys = DomainKeys::new(d, tree, (me, p));
    let frame = CurveFrame::around(&global_bounds(comm, local_box(ctx, tree).await?));
    let candidates = keys.candidates(ctx, frame).await?;
    parts.keys_s = lap();
    let shares = balanced_cuts(comm, &candidates, (keys.stride, n), capacity, |cuts| {
        keys.local_counts(ctx, cuts)
    })
    .await?;
    parts.cuts_s = lap();

    // Grouped by destination counted on from this rank, each group in the
    // order of the last build: the stayers first, where they stay (the
    // moved arrays, with room for the arrivals after them, become the new
    // state), then the leavers for ranks me + 1, me + 2, … round to me − 1.
    let new_n = shares.all[me] as usize;
    ctx.check_particle_count(new_n as u64, RECORD)?;
    let digits = usize::BITS - (p - 1).leading_zeros();
    let sort = RadixSort::new(d, &keys.sort_keys, &keys.order, n as u32, digits.max(1));
    let room = n.max(new_n) as u64;
    let moved = |label| empty_storage_buffer(d, label, (room * RECORD).max(RECORD));
    let (moved_pos_mass, moved_vel, moved_acc_pot) =
        (moved("pos_mass"), moved("vel"), moved("acc_pot"));
    let pack = pack_kernel(d);
    let bind = pack.bind(
        d,
        &[
            &keys.params,
            &state.pos_mass,
            &state.vel,
            &state.acc_pot,
            &state.id,
            &keys.order,
            &moved_pos_mass,
            &moved_vel,
            &moved_acc_pot,
        ],
    );
    let mut encoder = d.create_command_encoder(&Default::default());
    sort.encode(d, &mut encoder, None);
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pack.dispatch(&mut pass, &bind, dispatch_size(d, n as u32, WORKGROUP_SIZE));
    }
    q.submit(Some(encoder.finish()));
    // Where each rank's particles start in the moved arrays.
    let stayers = shares.mine[me] as usize;
    let mut first = vec![0; p];
    let mut at = stayers;
    for r in (1..p).map(|k| (me + k) % p) {
        first[r] = at;
        at += shares.mine[r] as usize;
    }
    let mut ranges = Vec::new();
    if stayers < n {
        for buffer in [&moved_pos_mass, &moved_vel, &moved_acc_pot] {
            let leavers = (n - stayers) as u64 * RECORD;
            ranges.push((buffer, stayers as u64 * RECORD, leavers));
        }
    }
    if n > 0 {
        ranges.push((&keys.order, 0, 4 * n as u64));
    }
    let read = read_buffer_ranges(d, q, &ranges).await?;
    let leaving = |k: usize| -> &[u8] { read.get(k).filter(|_| stayers < n).map_or(&[], |v| v) };
    let pos_mass = records::<PosMass>(leaving(0));
    let vel = records::<Velocity>(leaving(1));
    let acc_pot = records::<AccPot>(leaving(2));
    let upload_index = records::<u32>(read.last().map_or(&[][..], |v| &v[..]));
    // Leaver j of the moved arrays is read back at j − stayers.
    let migrant = |j: usize| Migrant {
        pos_mass: pos_mass[j - stayers],
        vel: vel[j - stayers],
        acc_pot: acc_pot[j - stayers],
        id: ids[upload_index[j] as usize],
        // (Not used by the receiver: the next walk counts afresh.)
        work: 0.0,
        _pad: 0,
    };
    let outgoing: Vec<Vec<u8>> = (0..p)
        .map(|r| match r == me {
            true => Vec::new(),
            false => packed(shares.mine[r] as usize, |k| migrant(first[r] + k)),
        })
        .collect();
    parts.pack_s = lap();
    let arrived = exchange(comm, outgoing);
    parts.alltoall_s = lap();
    debug_assert_eq!(new_n, stayers + arrived.len());
    if !arrived.is_empty() {
        let at = stayers as u64 * RECORD;
        let pos_mass: Vec<PosMass> = arrived.par_iter().map(|m| m.pos_mass).collect();
        let vel: Vec<Velocity> = arrived.par_iter().map(|m| m.vel).collect();
        let acc_pot: Vec<AccPot> = arrived.par_iter().map(|m| m.acc_pot).collect();
        q.write_buffer(&moved_pos_mass, at, bytemuck::cast_slice(&pos_mass));
        q.write_buffer(&moved_vel, at, bytemuck::cast_slice(&vel));
        q.write_buffer(&moved_acc_pot, at, bytemuck::cast_slice(&acc_pot));
    }
    let next = GpuParticles {
        n: new_n as u32,
        pos_mass: moved_pos_mass,
        vel: moved_vel,
        acc_pot: moved_acc_pot,
        id: in_upload_order(ctx, new_n as u32),
    };
    let mut next_ids: Vec<u64> = upload_index[..stayers]
        .par_iter()
        .map(|&i| ids[i as usize])
        .collect();
    next_ids.par_extend(arrived.par_iter().map(|m| m.id));
    parts.gather_s = lap();
    Ok((next, next_ids))
}
