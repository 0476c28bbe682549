//! A read-back of the particle state in input order, put there on the GPU
//! (drives `shaders/input_order.wgsl`). The tree code keeps the particles
//! in key order and a read-out wants them in the order they were uploaded:
//! scattering a read-back on the host is random writes over gigabytes (at
//! 2^25 particles most of a read-out's second, on sixteen cores), the GPU
//! does it in a millisecond. `check` inverts the upload indices, refusing a
//! state whose indices are not a permutation and naming the first particle
//! (in input order) whose state is not finite; `Checked::read` then hands
//! out consecutive pieces of input positions as they come back.

use crate::error::{Error, Result};
use crate::gpu::buffers::{
    empty_storage_buffer, read_buffer_ranges, read_pieces_with, records, uniform_buffer,
};
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::{AccPot, InputOrderParams, PosMass, Velocity, WORKGROUP_SIZE};
use crate::gpu::shader::compose;
use crate::gpu::{context::dispatch_size, GpuContext};
use crate::state::particles::READ_PIECE;
use crate::state::GpuParticles;

const INPUT_ORDER_WGSL: &str = include_str!("../../shaders/input_order.wgsl");

/// The composed WGSL of the input-order kernels.
pub fn wgsl() -> String {
    compose(&[], INPUT_ORDER_WGSL)
}

/// The binding contract of `shaders/input_order.wgsl` (eight storage
/// buffers: WebGPU's least limit).
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("acc_pot", Binding::StorageRead),
    ("upload_index", Binding::StorageRead),
    ("at", Binding::StorageReadWrite),
    ("out_pos_mass", Binding::StorageReadWrite),
    ("out_vel", Binding::StorageReadWrite),
    ("out_acc_pot", Binding::StorageReadWrite),
];

/// Bytes of a `PosMass`, `Velocity` or `AccPot` record.
const RECORD: u64 = std::mem::size_of::<PosMass>() as u64;

/// A piece of consecutive particles in input order, borrowed from the
/// staging memory it was read into.
#[derive(Clone, Copy, Debug)]
pub struct InputPiece<'a> {
    pub pos_mass: &'a [PosMass],
    pub vel: &'a [Velocity],
    pub acc_pot: &'a [AccPot],
}

/// The first particle, in input order, whose state is not finite: its
/// upload index and records.
#[derive(Clone, Copy, Debug)]
pub struct NotFinite {
    pub index: u32,
    pub pos_mass: PosMass,
    pub vel: Velocity,
    pub acc_pot: AccPot,
}

/// The kernels (compiled once per run).
pub struct InputOrder {
    check: Kernel,
    gather: Kernel,
}

impl InputOrder {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = ShaderSource::new("input order", wgsl());
        let kernel = |entry| Kernel::from_module(device, "input order", &module, entry, BINDINGS);
        Self {
            check: kernel("check"),
            gather: kernel("gather"),
        }
    }

    /// Inverts the upload indices of `state` and checks it: `Ok(Err(_))`
    /// names the first particle whose state is not finite, an error says
    /// the upload indices are not a permutation (a corrupted state).
    pub async fn check<'a>(
        &'a self,
        ctx: &GpuContext,
        state: &'a GpuParticles,
    ) -> Result<std::result::Result<Checked<'a>, NotFinite>> {
        let (device, n) = (&ctx.device, state.n as u64);
        let storage = |label, size| empty_storage_buffer(device, label, size);
        // Pieces as a read-back in GPU order has them (one in the browser).
        let piece = READ_PIECE.min(n);
        let params = uniform_buffer(
            device,
            "input order params",
            &InputOrderParams {
                n: n as u32,
                ..Default::default()
            },
        );
        // New buffers are zeroed: every slot of `at` unclaimed.
        let at = storage("input order at", (n + 2) * 4);
        let out = [
            storage("input order pos_mass", piece * RECORD),
            storage("input order vel", piece * RECORD),
            storage("input order acc_pot", piece * RECORD),
        ];
        let buffers = [
            &params,
            &state.pos_mass,
            &state.vel,
            &state.acc_pot,
            &state.id,
            &at,
            &out[0],
            &out[1],
            &out[2],
        ];
        let (check, gather) = (
            self.check.bind(device, &buffers),
            self.gather.bind(device, &buffers),
        );
        ctx.queue
            .write_buffer(&at, n * 4, bytemuck::cast_slice(&[u32::MAX, 0]));
        self.check.submit(ctx, &check, n as u32);
        let flags = read_buffer_ranges(device, &ctx.queue, &[(&at, n * 4, 8)]).await?;
        let [first_bad, repeated]: [u32; 2] = bytemuck::pod_read_unaligned(&flags[0]);
        if repeated != 0 {
            return Err(Error::Readback(format!(
                "the particles' upload indices are not a permutation ({repeated} out of range \
                 or repeated)"
            )));
        }
        if first_bad != u32::MAX {
            let slot =
                read_buffer_ranges(device, &ctx.queue, &[(&at, first_bad as u64 * 4, 4)]).await?;
            let k = bytemuck::pod_read_unaligned::<u32>(&slot[0]) as u64 - 1;
            let r = read_buffer_ranges(
                device,
                &ctx.queue,
                &[
                    (&state.pos_mass, k * RECORD, RECORD),
                    (&state.vel, k * RECORD, RECORD),
                    (&state.acc_pot, k * RECORD, RECORD),
                ],
            )
            .await?;
            return Ok(Err(NotFinite {
                index: first_bad,
                pos_mass: bytemuck::pod_read_unaligned(&r[0]),
                vel: bytemuck::pod_read_unaligned(&r[1]),
                acc_pot: bytemuck::pod_read_unaligned(&r[2]),
            }));
        }
        Ok(Ok(Checked {
            kernels: self,
            n,
            piece,
            params,
            out,
            gather,
            _at: at,
        }))
    }
}

/// A state checked by `InputOrder::check`, ready to be read in input order.
pub struct Checked<'a> {
    kernels: &'a InputOrder,
    n: u64,
    piece: u64,
    params: wgpu::Buffer,
    out: [wgpu::Buffer; 3],
    gather: wgpu::BindGroup,
    // Bound in `gather`; kept alive with it.
    _at: wgpu::Buffer,
}

impl Checked<'_> {
    /// `f(first, piece)` for consecutive pieces of input positions, in
    /// order (one state: no work may be queued meanwhile).
    pub async fn read(
        self,
        ctx: &GpuContext,
        mut f: impl FnMut(usize, InputPiece<'_>),
    ) -> Result<()> {
        let sources = self.out.each_ref().map(|b| (b, RECORD));
        let gather = |encoder: &mut wgpu::CommandEncoder, first: u64, count: u64| {
            // Applied before the submission that holds this piece's gather.
            ctx.queue.write_buffer(
                &self.params,
                0,
                bytemuck::bytes_of(&InputOrderParams {
                    n: self.n as u32,
                    first: first as u32,
                    count: count as u32,
                    _pad0: 0,
                }),
            );
            let mut pass = encoder.begin_compute_pass(&Default::default());
            self.kernels.gather.dispatch(
                &mut pass,
                &self.gather,
                dispatch_size(&ctx.device, count as u32, WORKGROUP_SIZE),
            );
        };
        read_pieces_with(
            &ctx.device,
            &ctx.queue,
            &sources,
            self.n,
            self.piece,
            Some(&gather),
            |first, b| {
                let (pos_mass, vel, acc_pot) = (records(b[0]), records(b[1]), records(b[2]));
                f(
                    first as usize,
                    InputPiece {
                        pos_mass: &pos_mass,
                        vel: &vel,
                        acc_pot: &acc_pot,
                    },
                );
                true
            },
        )
        .await
    }
}
