//! A redraw of the domains that keeps the particles on the GPU (drives
//! `shaders/migration.wgsl`): keys, cuts and destinations on the GPU
//! (`domain_keys`), a stable radix sort by destination (this rank's own
//! first), then only the particles that change rank cross the host, as
//! slices of the arrays read back (`Comm::exchange_rare`: through shared
//! memory, nothing is packed); the sorted arrays, with room for the
//! arrivals after the stayers, become the new state, its upload indices
//! are written on the GPU and its global ids gathered there
//! (`global_ids`). The result is `decomposition::decompose`'s followed by
//! `run::upload`, bit for bit (`tests/cluster.rs`): the stayers in their
//! order, then the arrivals by source rank.

use super::comm::Comm;
use super::decomposition::{balanced_cuts, counted, global_bounds, CurveFrame, DecomposeParts};
use super::domain_keys::{local_box, DomainKeys};
use super::global_ids::GlobalIds;
use crate::error::Result;
use crate::gpu::buffers::{empty_storage_buffer, read_buffer_ranges};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::GpuContext;
use crate::state::particles::in_upload_order;
use crate::state::GpuParticles;
use crate::tree::sort::RadixSort;
use crate::tree::TreeSolver;

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
    let module = ShaderSource::new("migration", wgsl());
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

/// Bytes of one global id.
const ID: u64 = 8;

/// When a redraw is made, which decides what its cuts share out and what
/// travels with the particles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// During a run: the cuts share out the interactions of the tree's
    /// last walk, and the forces travel (the next step kicks with them).
    Running,
    /// A run's first domains: the cuts share out the particles (no walk
    /// has counted yet; as `decompose` with a work of 1 each), and the
    /// forces stay behind (the run's first evaluation makes every one of
    /// them anew; the arrivals' slots keep what was there).
    Start,
}

/// Moves every particle of `tree`'s state (global ids `ids[state.id]`,
/// on the GPU) to the rank whose run of the curve holds it, as
/// `decompose` does on the host, the runs cut as `moment` says. Every rank calls it together;
/// each gets its new state (upload indices 0..n) and ids, at most
/// `capacity` particles.
pub async fn redraw(
    ctx: &GpuContext,
    comm: &dyn Comm,
    (tree, ids): (&TreeSolver, &GlobalIds),
    moment: Moment,
    capacity: u64,
    parts: &mut DecomposeParts,
) -> Result<(GpuParticles, GlobalIds)> {
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
    parts.frame = frame;
    let mut candidates = keys.candidates(ctx, frame).await?;
    if moment == Moment::Start {
        candidates = counted(&candidates, keys.stride, n);
    }
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
    // Where each rank's particles start among the leavers.
    let stayers = shares.mine[me] as usize;
    let mut first = vec![0; p];
    let mut at = 0;
    for r in (1..p).map(|k| (me + k) % p) {
        first[r] = at;
        at += shares.mine[r] as usize;
    }
    // The state's arrays that travel with the particles: at the start the
    // forces do not (the run's first evaluation makes them).
    let travel = match moment {
        Moment::Running => &[&moved_pos_mass, &moved_vel, &moved_acc_pot][..],
        Moment::Start => &[&moved_pos_mass, &moved_vel][..],
    };
    // The ids in the same order (the pack left each particle's old upload
    // index in `order`).
    let moved_ids = ids.gathered(ctx, &keys.order, n as u32, room as u32);
    let mut ranges = Vec::new();
    if stayers < n {
        let leavers = (n - stayers) as u64;
        for &buffer in travel {
            ranges.push((buffer, stayers as u64 * RECORD, leavers * RECORD));
        }
        ranges.push((&moved_ids, stayers as u64 * ID, leavers * ID));
    }
    let read = read_buffer_ranges(d, q, &ranges).await?;
    // Each rank's message: its leavers' arrays one after the other, then
    // their ids (slices of what was read back: nothing is packed).
    let outgoing: Vec<Vec<&[u8]>> = (0..p)
        .map(|r| {
            let count = shares.mine[r] as usize;
            if r == me || count == 0 {
                return Vec::new();
            }
            let leavers = first[r]..first[r] + count;
            let bytes = |per: u64| per as usize * leavers.start..per as usize * leavers.end;
            let mut pieces: Vec<&[u8]> = read[..travel.len()]
                .iter()
                .map(|array| &array[bytes(RECORD)])
                .collect();
            pieces.push(&read[travel.len()][bytes(ID)]);
            pieces
        })
        .collect();
    parts.pack_s = lap();
    // The arrivals written after the stayers, by source rank, straight
    // from where they arrived.
    let mut arrived = stayers;
    let per_particle = (RECORD * travel.len() as u64 + ID) as usize;
    comm.exchange_rare(&outgoing, &mut |messages| {
        for message in messages.iter().filter(|m| !m.is_empty()) {
            let count = message.len() / per_particle;
            let (arrays, id_bytes) = message.split_at(RECORD as usize * travel.len() * count);
            for (&buffer, array) in travel.iter().zip(arrays.chunks(RECORD as usize * count)) {
                q.write_buffer(buffer, arrived as u64 * RECORD, array);
            }
            q.write_buffer(&moved_ids, arrived as u64 * ID, id_bytes);
            arrived += count;
        }
    });
    parts.alltoall_s = lap();
    debug_assert_eq!(arrived, new_n);
    drop(outgoing);
    let next = GpuParticles {
        n: new_n as u32,
        pos_mass: moved_pos_mass,
        vel: moved_vel,
        acc_pot: moved_acc_pot,
        id: in_upload_order(ctx, new_n as u32),
    };
    let next_ids = GlobalIds {
        buffer: moved_ids,
        n: new_n as u32,
    };
    parts.gather_s = lap();
    Ok((next, next_ids))
}
