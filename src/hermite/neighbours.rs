//! Neighbour lists for the GRAPE-6 API (drives `shaders/neighbours.wgsl`):
//! the ids of all j-particles within each sink's radius `sqrt(h2)`.

use crate::error::Result;
use crate::gpu::buffers::{read_range, storage_buffer};
use crate::gpu::context::dispatch_size;
use crate::gpu::ds::compose_with_ds;
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::GpuContext;

/// Most neighbours stored per sink (more are counted, not stored).
pub const NB_MAX: u32 = 256;

const NEIGHBOURS_WGSL: &str = include_str!("../../shaders/neighbours.wgsl");

/// The composed WGSL of the neighbour search.
pub fn wgsl() -> String {
    compose_with_ds(&[("NB_MAX", NB_MAX)], NEIGHBOURS_WGSL)
}

/// The binding contract of `shaders/neighbours.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::StorageRead),
    ("pred", Binding::StorageRead),
    ("ip", Binding::StorageRead),
    ("nb_count", Binding::StorageReadWrite),
    ("nb_list", Binding::StorageReadWrite),
];

/// The neighbour kernel and its output buffers for up to `ni_cap` sinks.
pub struct NeighbourSearch {
    kernel: Kernel,
    count: wgpu::Buffer,
    list: wgpu::Buffer,
}

impl NeighbourSearch {
    pub fn new(device: &wgpu::Device, ni_cap: u32) -> Self {
        let kernel = Kernel::new(device, "neighbours", &wgsl(), "neighbours", BINDINGS);
        Self {
            kernel,
            count: storage_buffer(device, "neighbour counts", &vec![0u32; ni_cap as usize]),
            list: storage_buffer(
                device,
                "neighbour lists",
                &vec![0u32; (ni_cap * NB_MAX) as usize],
            ),
        }
    }

    /// Records the search for `ni` sinks; `inputs` are the Hermite params,
    /// the predicted j-particles and the i-particles of the evaluation.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        inputs: [&wgpu::Buffer; 3],
        ni: u32,
    ) {
        encoder.clear_buffer(&self.count, 0, None);
        let bind = self.kernel.bind(
            device,
            &[inputs[0], inputs[1], inputs[2], &self.count, &self.list],
        );
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("neighbours"),
            timestamp_writes: None,
        });
        // One workgroup per sink.
        let groups = dispatch_size(device, ni, 1);
        self.kernel.dispatch(&mut pass, &bind, groups);
    }

    /// Counts and sorted lists of the first `ni` sinks.
    pub async fn read(&self, ctx: &GpuContext, ni: u32) -> Result<Vec<(u32, Vec<u32>)>> {
        let counts: Vec<u32> =
            read_range(&ctx.device, &ctx.queue, &self.count, 0, ni as u64).await?;
        let lists: Vec<u32> =
            read_range(&ctx.device, &ctx.queue, &self.list, 0, (ni * NB_MAX) as u64).await?;
        Ok(counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let start = i * NB_MAX as usize;
                let mut l = lists[start..start + c.min(NB_MAX) as usize].to_vec();
                l.sort_unstable();
                (c, l)
            })
            .collect())
    }
}
