//! The summary of this rank's domain (drives `shaders/summary.wgsl`):
//! boxes of its walk groups in two levels, with their loosest tolerances,
//! which the other ranks cut their local essential trees against.
//!
//! The fine picks open cells by their particles and by the particles of
//! the other domains (their summaries of the last evaluation) that their
//! boxes would span: by count alone, a sparse cell whose particles lie on
//! either side of a hole another domain fills (an outer domain around a
//! galaxy's centre) stayed one box across it, and the cut then sent all
//! that domain held there (BENCHMARKS.md, "Summaries that see the other
//! domains").

use crate::gpu::buffers::{empty_storage_buffer, uniform_buffer};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::GpuContext;
use crate::tree::layout::{counter_word_consts, DomainSummary, SummaryParams};
use crate::tree::TreeBuffers;

const SUMMARY_WGSL: &str = include_str!("../../shaders/summary.wgsl");
/// The other domains' boxes as a density, which `spanning` reads too.
pub const DOMAIN_BOXES_WGSL: &str = include_str!("../../shaders/domain_boxes.wgsl");

/// Coarse boxes a domain shows the others (one workgroup picks them: at
/// most WORKGROUP_SIZE).
pub const COARSE_BOXES: u32 = 256;
/// Fine boxes within each coarse one. A cell another rank keeps as a
/// multipole must pass the MAC against every box, so finer boxes send
/// fewer cells: 256 boxes in all sent half the particles of 2^20 on each of
/// two H200s, because a box of 4,096 particles reaches far into the other
/// domain wherever a domain's edge runs across it.
pub const FINE_BOXES: u32 = 64;
/// Records of one domain's summary: the coarse boxes, then the fine boxes
/// of each in turn.
pub const DOMAIN_BOXES: u32 = COARSE_BOXES * (1 + FINE_BOXES);

pub fn wgsl() -> String {
    let mut consts = counter_word_consts().to_vec();
    consts.extend([
        ("COARSE_BOXES", COARSE_BOXES),
        ("FINE_BOXES", FINE_BOXES),
        ("FINE_TOTAL", COARSE_BOXES * FINE_BOXES),
        ("DOMAIN_BOXES", DOMAIN_BOXES),
    ]);
    crate::tree::compose_with(&consts, &format!("{SUMMARY_WGSL}\n{DOMAIN_BOXES_WGSL}"))
}

/// The binding contract of `shaders/summary.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("counter_words", Binding::StorageRead),
    ("cells", Binding::StorageRead),
    ("cell_boxes", Binding::StorageRead),
    ("group_boxes", Binding::StorageRead),
    ("frontier", Binding::StorageReadWrite),
    ("accum", Binding::StorageReadWrite),
    ("summary", Binding::StorageReadWrite),
    ("others", Binding::StorageRead),
];

pub struct DomainSummaries {
    pick_coarse: Kernel,
    pick_fine: Kernel,
    accumulate: Kernel,
    finish: Kernel,
    bind: wgpu::BindGroup,
    params: SummaryParams,
    params_buffer: wgpu::Buffer,
    frontier: wgpu::Buffer,
    accum: wgpu::Buffer,
    /// The other domains' summaries of the last evaluation.
    others: wgpu::Buffer,
    /// Domains `others` holds.
    others_capacity: u32,
    /// Groups the tree's arrays hold (the accumulation's invocations).
    group_capacity: u32,
    /// The DOMAIN_BOXES `DomainSummary` records the kernels write.
    pub summary: wgpu::Buffer,
}

/// The kernels' bindings: the tree's arrays in `b`, and the summaries'
/// own (params, frontier, accumulators, summary, the others' summaries).
fn bind_summary(
    kernel: &Kernel,
    device: &wgpu::Device,
    b: &TreeBuffers,
    [params, frontier, accum, summary, others]: [&wgpu::Buffer; 5],
) -> wgpu::BindGroup {
    kernel.bind(
        device,
        &[
            params,
            &b.counters,
            &b.cells,
            &b.cell_boxes,
            &b.group_boxes,
            frontier,
            accum,
            summary,
            others,
        ],
    )
}

/// A buffer of `domains` summaries (DOMAIN_BOXES records each).
pub(super) fn summaries_buffer(device: &wgpu::Device, label: &str, domains: u32) -> wgpu::Buffer {
    let bytes = domains as u64 * DOMAIN_BOXES as u64 * std::mem::size_of::<DomainSummary>() as u64;
    empty_storage_buffer(device, label, bytes)
}

impl DomainSummaries {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let module = ShaderSource::new("domain summary", wgsl());
        let k = |label, entry| Kernel::from_module(device, label, &module, entry, BINDINGS);
        let pick_coarse = k("domain summary coarse boxes", "pick_coarse");
        let pick_fine = k("domain summary fine boxes", "pick_fine");
        let accumulate = k("domain summary accumulate", "accumulate");
        let finish = k("domain summary finish", "finish");
        let storage = |label, bytes: u64| empty_storage_buffer(device, label, bytes);
        let (coarse, fine) = (COARSE_BOXES as u64, (COARSE_BOXES * FINE_BOXES) as u64);
        // SummaryFrontier: a count, three words per coarse box, one per fine.
        let frontier = storage("domain summary frontier", 4 * (1 + 3 * coarse + fine));
        // Nine words a fine box (BoxAccum).
        let accum = storage("domain summary accumulators", 36 * fine);
        let params = SummaryParams {
            other_domains: 0,
            coarse_boxes: COARSE_BOXES,
            fine_boxes: FINE_BOXES,
            _pad: 0,
        };
        let params_buffer = uniform_buffer(device, "domain summary params", &params);
        let others_capacity = 1;
        let others = summaries_buffer(device, "other domains' summaries", others_capacity);
        let summary = summaries_buffer(device, "domain summary", 1);
        let bind = bind_summary(
            &pick_coarse,
            device,
            b,
            [&params_buffer, &frontier, &accum, &summary, &others],
        );
        Self {
            pick_coarse,
            pick_fine,
            accumulate,
            finish,
            bind,
            params,
            params_buffer,
            frontier,
            accum,
            others,
            others_capacity,
            group_capacity: b.group_capacity,
            summary,
        }
    }

    /// Summarises the tree in `b` from now on (after a redraw); the other
    /// domains' summaries stay.
    pub fn rebind(&mut self, device: &wgpu::Device, b: &TreeBuffers) {
        self.bind = bind_summary(
            &self.pick_coarse,
            device,
            b,
            [
                &self.params_buffer,
                &self.frontier,
                &self.accum,
                &self.summary,
                &self.others,
            ],
        );
        self.group_capacity = b.group_capacity;
    }

    /// The other domains' summaries of the last evaluation, and the
    /// uniform that says how many there are (`spanning` reads both).
    pub fn others(&self) -> (&wgpu::Buffer, &wgpu::Buffer) {
        (&self.others, &self.params_buffer)
    }

    /// The other domains' summaries (DOMAIN_BOXES each) the next picks
    /// weigh cells by, for the tree in `b`.
    pub fn remember_others(&mut self, ctx: &GpuContext, b: &TreeBuffers, others: &[DomainSummary]) {
        assert_eq!(others.len() % DOMAIN_BOXES as usize, 0, "whole domains");
        let domains = (others.len() / DOMAIN_BOXES as usize) as u32;
        if domains > self.others_capacity {
            self.others_capacity = domains.next_power_of_two();
            self.others = summaries_buffer(
                &ctx.device,
                "other domains' summaries",
                self.others_capacity,
            );
            self.rebind(&ctx.device, b);
        }
        if !others.is_empty() {
            ctx.queue
                .write_buffer(&self.others, 0, bytemuck::cast_slice(others));
        }
        self.params.other_domains = domains;
        self.write_params(&ctx.queue);
    }

    /// Shows the other ranks at most `coarse` boxes of at most `fine`
    /// each (the default: COARSE_BOXES of FINE_BOXES): a smaller summary
    /// for tests and for studies of its size.
    pub fn limit(&mut self, queue: &wgpu::Queue, coarse: u32, fine: u32) {
        self.params.coarse_boxes = coarse.clamp(1, COARSE_BOXES);
        self.params.fine_boxes = fine.clamp(1, FINE_BOXES);
        self.write_params(queue);
    }

    fn write_params(&self, queue: &wgpu::Queue) {
        queue.write_buffer(&self.params_buffer, 0, bytemuck::bytes_of(&self.params));
    }

    /// Records the summary of the groups the last build or refit formed.
    pub fn encode(&self, device: &wgpu::Device, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("domain summary"),
            timestamp_writes: None,
        });
        self.pick_coarse.dispatch(&mut pass, &self.bind, (1, 1));
        self.pick_fine
            .dispatch(&mut pass, &self.bind, (COARSE_BOXES, 1));
        self.accumulate.dispatch(
            &mut pass,
            &self.bind,
            dispatch_size(device, self.group_capacity, WORKGROUP_SIZE),
        );
        self.finish
            .dispatch(&mut pass, &self.bind, (COARSE_BOXES, 1));
    }
}
