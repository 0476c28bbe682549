//! A redraw of the domains that keeps the particles on the GPU (drives
//! `shaders/migration.wgsl`): keys, cuts and destinations on the GPU
//! (`domain_keys`), a stable radix sort by destination, then only the
//! particles that change rank cross the host; the stayers are copied into
//! the new state on the GPU. The result is `decomposition::decompose`'s
//! followed by `run::upload`, bit for bit (`tests/cluster.rs`): the
//! stayers in their order, then the arrivals by source rank.

use super::comm::Comm;
use super::decomposition::{
    balanced_cuts, exchange, global_bounds, packed, CurveFrame, DecomposeParts, Migrant,
};
use super::domain_keys::{local_box, DomainKeys};
use crate::error::Result;
use crate::gpu::buffers::{empty_storage_buffer, read_buffer_ranges, records, storage_buffer};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{shader_module, Binding, Kernel, Slot};
use crate::gpu::layout::{AccPot, PosMass, Velocity, WORKGROUP_SIZE};
use crate::gpu::GpuContext;
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
    let keys = DomainKeys::new(d, tree, p);
    let frame = CurveFrame::around(&global_bounds(comm, local_box(ctx, tree).await?));
    let candidates = keys.candidates(ctx, frame).await?;
    parts.keys_s = lap();
    let shares = balanced_cuts(comm, &candidates, (keys.stride, n), capacity, |cuts| {
        keys.local_counts(ctx, cuts)
    })
    .await?;
    parts.cuts_s = lap();

    // Grouped by destination, each group in the order of the last build.
    let digits = usize::BITS - (p - 1).leading_zeros();
    let sort = RadixSort::new(d, &keys.sort_keys, &keys.order, n as u32, digits.max(1));
    let moved = |label| empty_storage_buffer(d, label, (n as u64 * RECORD).max(RECORD));
    let (moved_pos_mass, moved_vel, moved_acc_pot) = (
        moved("moved pos_mass"),
        moved("moved vel"),
        moved("moved acc_pot"),
    );
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
    // Rank r's particles are [first[r], first[r + 1]) of the moved arrays.
    let first: Vec<usize> = std::iter::once(0)
        .chain(shares.mine.iter().scan(0, |at, &c| {
            *at += c as usize;
            Some(*at)
        }))
        .collect();
    let (stay_begin, stay_end) = (first[me], first[me + 1]);
    // The leavers: those before this rank's run and those after it.
    let leaving = [(0, stay_begin), (stay_end, n)];
    let mut ranges = Vec::new();
    for buffer in [&moved_pos_mass, &moved_vel, &moved_acc_pot] {
        for &(a, b) in leaving.iter().filter(|(a, b)| a < b) {
            ranges.push((buffer, a as u64 * RECORD, (b - a) as u64 * RECORD));
        }
    }
    if n > 0 {
        ranges.push((&keys.order, 0, 4 * n as u64));
    }
    let read = read_buffer_ranges(d, q, &ranges).await?;
    // Each array's leavers in order, as if read in one piece.
    let pieces = leaving.iter().filter(|(a, b)| a < b).count();
    let joined = |k: usize| -> Vec<u8> { read[k * pieces..(k + 1) * pieces].concat() };
    let (pos_mass, vel, acc_pot) = (joined(0), joined(1), joined(2));
    let pos_mass = records::<PosMass>(&pos_mass);
    let vel = records::<Velocity>(&vel);
    let acc_pot = records::<AccPot>(&acc_pot);
    let upload_index = records::<u32>(read.last().map_or(&[][..], |v| &v[..]));
    // Leaver j of the moved arrays is read back at j, or j − stayers
    // past this rank's run.
    let at = |j: usize| {
        if j < stay_begin {
            j
        } else {
            j - (stay_end - stay_begin)
        }
    };
    let migrant = |j: usize| Migrant {
        pos_mass: pos_mass[at(j)],
        vel: vel[at(j)],
        acc_pot: acc_pot[at(j)],
        id: ids[upload_index[j] as usize],
        // (Not used by the receiver: the next walk counts afresh.)
        work: 0.0,
        _pad: 0,
    };
    let outgoing: Vec<Vec<u8>> = (0..p)
        .map(|r| match r == me {
            true => Vec::new(),
            false => packed(first[r + 1] - first[r], |k| migrant(first[r] + k)),
        })
        .collect();
    parts.pack_s = lap();
    let arrived = exchange(comm, outgoing);
    parts.alltoall_s = lap();
    let stayers = stay_end - stay_begin;
    let new_n = stayers + arrived.len();
    debug_assert_eq!(new_n as u64, shares.all[me]);
    ctx.check_particle_count(new_n as u64, RECORD)?;
    let array = |label| empty_storage_buffer(d, label, new_n as u64 * RECORD);
    let upload_order: Vec<u32> = (0..new_n as u32).collect();
    let next = GpuParticles {
        n: new_n as u32,
        pos_mass: array("pos_mass"),
        vel: array("vel"),
        acc_pot: array("acc_pot"),
        id: storage_buffer(d, "id", &upload_order),
    };
    let mut encoder = d.create_command_encoder(&Default::default());
    for (from, to) in [
        (&moved_pos_mass, &next.pos_mass),
        (&moved_vel, &next.vel),
        (&moved_acc_pot, &next.acc_pot),
    ] {
        if stayers > 0 {
            encoder.copy_buffer_to_buffer(
                from,
                stay_begin as u64 * RECORD,
                to,
                0,
                stayers as u64 * RECORD,
            );
        }
    }
    if !arrived.is_empty() {
        let at = stayers as u64 * RECORD;
        let pos_mass: Vec<PosMass> = arrived.par_iter().map(|m| m.pos_mass).collect();
        let vel: Vec<Velocity> = arrived.par_iter().map(|m| m.vel).collect();
        let acc_pot: Vec<AccPot> = arrived.par_iter().map(|m| m.acc_pot).collect();
        q.write_buffer(&next.pos_mass, at, bytemuck::cast_slice(&pos_mass));
        q.write_buffer(&next.vel, at, bytemuck::cast_slice(&vel));
        q.write_buffer(&next.acc_pot, at, bytemuck::cast_slice(&acc_pot));
    }
    q.submit(Some(encoder.finish()));
    let mut next_ids: Vec<u64> = upload_index[stay_begin..stay_end]
        .par_iter()
        .map(|&i| ids[i as usize])
        .collect();
    next_ids.par_extend(arrived.par_iter().map(|m| m.id));
    parts.gather_s = lap();
    Ok((next, next_ids))
}
