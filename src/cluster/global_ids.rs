//! The global ids of a rank's particles, kept on its GPU (drives
//! `shaders/global_ids.wgsl`): one u64 per upload index (a state's `id`
//! array indexes them). A redraw gathers them into its new order on the
//! GPU and reads back only the leavers' to send (`migration::redraw`):
//! kept on the host they cost every redraw a read-back of every
//! particle's upload index and a gather of every id (0.3–0.45 s at
//! 1.26·10^8 particles a rank, 2026-12-01), and the host a gigabyte.

use crate::error::Result;
use crate::gpu::buffers::{empty_storage_buffer, read_pieces, uniform_buffer};
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::GpuContext;

const GLOBAL_IDS_WGSL: &str = include_str!("../../shaders/global_ids.wgsl");

pub fn wgsl() -> String {
    crate::gpu::shader::compose(&[], GLOBAL_IDS_WGSL)
}

/// The binding contract of `shaders/global_ids.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("count", Binding::Uniform),
    ("upload_index", Binding::StorageRead),
    ("ids", Binding::StorageRead),
    ("moved", Binding::StorageReadWrite),
];

/// Bytes of one id.
const ID: u64 = 8;

/// Ids read back at a time (a gigabyte of them at 1.26·10^8 particles).
const READ_PIECE: u64 = 1 << 22;

/// The global ids of `n` particles, by upload index, with room for more
/// (a redraw's arrivals).
pub struct GlobalIds {
    pub buffer: wgpu::Buffer,
    pub n: u32,
}

impl GlobalIds {
    /// `ids` uploaded, with room for `room` (at least `ids.len()`).
    pub fn upload(ctx: &GpuContext, ids: &[u64], room: u32) -> Self {
        let n = ids.len() as u32;
        let buffer = Self::with_room(ctx, room.max(n));
        if !ids.is_empty() {
            ctx.queue
                .write_buffer(&buffer, 0, bytemuck::cast_slice(ids));
        }
        Self { buffer, n }
    }

    /// The ids `first, first + 1, ...` of `n` particles (a share sampled
    /// on the GPU, in the model's order), written on the GPU, with room
    /// for `room`.
    pub fn sequence(ctx: &GpuContext, first: u64, n: u32, room: u32) -> Self {
        let d = &ctx.device;
        let buffer = Self::with_room(ctx, room.max(n));
        if n > 0 {
            let words = [n, first as u32, (first >> 32) as u32, 0u32];
            let count = uniform_buffer(d, "global ids count", &words);
            let unused = empty_storage_buffer(d, "unused", 16);
            let kernel = Kernel::new(d, "global ids sequence", &wgsl(), "sequence", BINDINGS);
            kernel.submit(
                ctx,
                &kernel.bind(d, &[&count, &unused, &unused, &buffer]),
                n,
            );
        }
        Self { buffer, n }
    }

    /// An empty buffer of `room` ids (no binding is empty: at least one).
    fn with_room(ctx: &GpuContext, room: u32) -> wgpu::Buffer {
        empty_storage_buffer(&ctx.device, "global ids", ID * room.max(1) as u64)
    }

    /// The ids `self[upload_index[j]]` for j < n, in a buffer with room
    /// for `room` (`upload_index` as `migration.wgsl`'s pack leaves it).
    pub fn gathered(
        &self,
        ctx: &GpuContext,
        upload_index: &wgpu::Buffer,
        n: u32,
        room: u32,
    ) -> wgpu::Buffer {
        let d = &ctx.device;
        let moved = Self::with_room(ctx, room.max(n));
        if n == 0 {
            return moved;
        }
        let count = uniform_buffer(d, "global ids count", &[n, 0u32, 0, 0]);
        let kernel = Kernel::new(d, "global ids gather", &wgsl(), "gather", BINDINGS);
        let bind = kernel.bind(d, &[&count, upload_index, &self.buffer, &moved]);
        kernel.submit(ctx, &bind, n);
        moved
    }

    /// Every id, by upload index.
    pub async fn read(&self, ctx: &GpuContext) -> Result<Vec<u64>> {
        let n = self.n as usize;
        let mut ids: Vec<u64> = bytemuck::zeroed_vec(n);
        read_pieces(
            &ctx.device,
            &ctx.queue,
            &[(&self.buffer, ID)],
            n as u64,
            READ_PIECE,
            |first, b| {
                let at = first as usize;
                let piece: &mut [u8] = bytemuck::cast_slice_mut(&mut ids[at..]);
                crate::state::parallel::copy(&mut piece[..b[0].len()], b[0]);
                true
            },
        )
        .await?;
        Ok(ids)
    }
}
