//! Cuts this rank's local essential trees for the other ranks' domains
//! (drives `shaders/let_tree.wgsl`): every domain's tree in one
//! submission, then two read-backs (the counts, then the cells and
//! particles they name). Outputs that do not fit grow and are cut again.

use super::staging::StagingReader;
use super::summary::{summaries_buffer, COARSE_BOXES, DOMAIN_BOXES, FINE_BOXES};
use crate::error::{Error, Result};
use crate::gpu::buffers::{empty_storage_buffer, read_buffer_ranges, records};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, Slot, DYNAMIC_SLOT};
use crate::gpu::layout::{PosMass, WORKGROUP_SIZE};
use crate::gpu::GpuContext;
use crate::tree::layout::{DomainSummary, LetCell, LetCounters, LetPass, TreeCounters, MAX_DEPTH};
use crate::tree::TreeBuffers;
use std::borrow::Cow;

const LET_TREE_WGSL: &str = include_str!("../../shaders/let_tree.wgsl");

pub fn wgsl() -> String {
    crate::tree::compose_with(
        &[
            ("DOMAIN_BOXES", DOMAIN_BOXES),
            ("COARSE_BOXES", COARSE_BOXES),
            ("FINE_BOXES", FINE_BOXES),
        ],
        LET_TREE_WGSL,
    )
}

/// The binding contract of `shaders/let_tree.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("pass_", Binding::UniformDynamic),
    ("params", Binding::Uniform),
    ("cells", Binding::StorageRead),
    ("props", Binding::StorageRead),
    ("pos_mass", Binding::StorageRead),
    ("slot_of", Binding::StorageReadWrite),
    ("out", Binding::StorageReadWrite),
    ("let_cells", Binding::StorageReadWrite),
    ("let_particles", Binding::StorageReadWrite),
    ("targets", Binding::StorageRead),
];

/// Relative margin by which a domain's box grows and its tolerances
/// tighten before trees are cut for it: the receiver's walk computes the
/// MAC for each group in f32 from other operands, and a cell the domain
/// took must never be one a group opens (its particles are not sent).
pub const MAC_MARGIN: f32 = 1.0e-5;

/// `TreeCell::first_child` of a cell taken as a multipole: it has neither
/// children nor particles in its tree.
pub const TAKEN: u32 = u32::MAX;

/// One local essential tree as it arrives: cells (root first, indices
/// relative to it) and the particles of its opened leaves, borrowed from
/// the message where its bytes are aligned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EssentialTree<'a> {
    pub cells: Cow<'a, [LetCell]>,
    pub particles: Cow<'a, [PosMass]>,
}

/// Bytes of a message's header: its cell and particle counts.
const HEADER: usize = 8;

impl<'a> EssentialTree<'a> {
    /// The head of a tree's message: its cell and particle counts (u32,
    /// little endian). The records' bytes follow, cells then particles.
    pub fn header(cells: u32, particles: u32) -> [u8; HEADER] {
        let mut head = [0; HEADER];
        head[..4].copy_from_slice(&cells.to_le_bytes());
        head[4..].copy_from_slice(&particles.to_le_bytes());
        head
    }

    /// The cell and particle counts a message announces.
    pub fn counts(bytes: &[u8]) -> (u64, u64) {
        let word = |k: usize| {
            bytes
                .get(4 * k..4 * k + 4)
                .map_or(0, |w| u32::from_le_bytes(w.try_into().unwrap()) as u64)
        };
        (word(0), word(1))
    }

    /// The tree of a `message`; an empty message is an empty tree.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self> {
        if bytes.is_empty() {
            return Ok(Self::default());
        }
        let bad = |why: &str| Error::InvalidParameter(format!("a received tree is damaged: {why}"));
        if bytes.len() < HEADER {
            return Err(bad("shorter than its header"));
        }
        let (cells, particles) = Self::counts(bytes);
        let cell_bytes = cells as usize * std::mem::size_of::<LetCell>();
        let particle_bytes = particles as usize * std::mem::size_of::<PosMass>();
        if bytes.len() != HEADER + cell_bytes + particle_bytes {
            return Err(bad("its length does not match its counts"));
        }
        let tree = Self {
            cells: records::<LetCell>(&bytes[HEADER..HEADER + cell_bytes]),
            particles: records::<PosMass>(&bytes[HEADER + cell_bytes..]),
        };
        tree.check()?;
        Ok(tree)
    }

    /// Every index stays inside the tree, and children follow their
    /// parent (what the walk relies on to end).
    pub fn check(&self) -> Result<()> {
        use rayon::prelude::*;
        let (nc, np) = (self.cells.len() as u64, self.particles.len() as u64);
        let damaged = |k: usize| {
            let c = self.cells[k].cell;
            let (first, end) = if c.child_count > 0 {
                (
                    c.first_child as u64,
                    c.first_child as u64 + c.child_count as u64,
                )
            } else {
                (k as u64 + 1, k as u64 + 1)
            };
            let children_inside = first > k as u64 && end <= nc;
            let particles_inside = c.child_count > 0
                || c.first_child == TAKEN
                || c.start as u64 + c.count as u64 <= np;
            !(children_inside && particles_inside)
        };
        // Millions of cells a step: checked on every core.
        match (0..self.cells.len())
            .into_par_iter()
            .find_first(|&k| damaged(k))
        {
            Some(k) => Err(Error::InvalidParameter(format!(
                "a received tree is damaged: cell {k} names children or particles \
                 outside the tree"
            ))),
            None => Ok(()),
        }
    }
}

pub struct LetCutter {
    kernel: Kernel,
    passes: wgpu::Buffer,
    pass_slots: u32,
    slot_of: wgpu::Buffer,
    counters: wgpu::Buffer,
    domains_capacity: u32,
    cells_out: wgpu::Buffer,
    particles_out: wgpu::Buffer,
    cell_capacity: u32,
    particle_capacity: u32,
    /// The domains' boxes, DOMAIN_BOXES each.
    targets: wgpu::Buffer,
    bind: wgpu::BindGroup,
    /// The trees' read-back, kept from one cut to the next.
    readback: StagingReader,
    /// Seconds the last cut spent waiting for its trees' copy to the host
    /// (after their counts were read).
    pub last_read_s: f64,
}

impl LetCutter {
    /// A cutter for the tree in `b`, with room at first for two trees'
    /// worth of its cells and particles.
    pub fn new(ctx: &GpuContext, b: &TreeBuffers) -> Self {
        let device = &ctx.device;
        let kernel = Kernel::new(device, "local essential tree cut", &wgsl(), "cut", BINDINGS);
        let pass_slots = 8 * (MAX_DEPTH + 1);
        let passes = Self::pass_buffer(device, pass_slots);
        let slot_of = empty_storage_buffer(device, "LET slots", b.cell_capacity as u64 * 4);
        let domains_capacity = 8;
        let counters = Self::counter_buffer(device, domains_capacity);
        // As many as the tree has, within one binding each (a tree of
        // 2^27 particles has more cells than one binding of `LetCell`s
        // holds; the trees cut for the other ranks are a fraction of it,
        // and a cut that needs more grows the outputs or says why not).
        let most = |bytes: usize| ctx.max_elements(bytes as u64).min(u32::MAX as u64) as u32;
        let cell_capacity = (b.cell_capacity.max(64)).min(most(std::mem::size_of::<LetCell>()));
        let particle_capacity = (b.state.n.max(64)).min(most(std::mem::size_of::<PosMass>()));
        let cells_out = Self::cells_buffer(device, cell_capacity);
        let particles_out = Self::particles_buffer(device, particle_capacity);
        let targets = summaries_buffer(device, "LET target boxes", domains_capacity);
        let bind = kernel.bind(
            device,
            &[
                &passes,
                &b.params,
                &b.cells,
                &b.props,
                &b.state.pos_mass,
                &slot_of,
                &counters,
                &cells_out,
                &particles_out,
                &targets,
            ],
        );
        Self {
            targets,
            kernel,
            passes,
            pass_slots,
            slot_of,
            counters,
            domains_capacity,
            cells_out,
            particles_out,
            cell_capacity,
            particle_capacity,
            bind,
            readback: StagingReader::new("LET read-back"),
            last_read_s: 0.0,
        }
    }

    /// The cutter of the tree in `b` after a redraw, keeping `previous`'s
    /// read-back staging (`staging`: a fresh one costs more than its copy).
    pub fn succeeding(ctx: &GpuContext, b: &TreeBuffers, previous: &mut Self) -> Self {
        Self {
            readback: previous.readback.take(),
            ..Self::new(ctx, b)
        }
    }

    fn pass_buffer(device: &wgpu::Device, slots: u32) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("LET passes"),
            size: slots as u64 * DYNAMIC_SLOT,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    fn counter_buffer(device: &wgpu::Device, domains: u32) -> wgpu::Buffer {
        let bytes = std::mem::size_of::<LetCounters>() as u64 + (domains as u64 + 1) * 8;
        empty_storage_buffer(device, "LET counters", bytes)
    }

    fn cells_buffer(device: &wgpu::Device, cells: u32) -> wgpu::Buffer {
        let bytes = cells as u64 * std::mem::size_of::<LetCell>() as u64;
        empty_storage_buffer(device, "LET cells", bytes)
    }

    fn particles_buffer(device: &wgpu::Device, particles: u32) -> wgpu::Buffer {
        let bytes = particles as u64 * std::mem::size_of::<PosMass>() as u64;
        empty_storage_buffer(device, "LET particles", bytes)
    }

    /// Cuts the tree in `b` from now on: its state changed, its arrays
    /// stayed (`TreeSolver::rebind`).
    pub fn rebind(&mut self, device: &wgpu::Device, b: &TreeBuffers) {
        self.bind = self.kernel.bind(
            device,
            &[
                &self.passes,
                &b.params,
                &b.cells,
                &b.props,
                &b.state.pos_mass,
                &self.slot_of,
                &self.counters,
                &self.cells_out,
                &self.particles_out,
                &self.targets,
            ],
        );
    }

    /// The local essential trees of the tree in `b` (built, with
    /// `counters` read back after its build) for the domains whose boxes
    /// are `targets` (DOMAIN_BOXES each), handed to `send` in their order
    /// as messages in pieces (`EssentialTree::header`, the cells, the
    /// particles), borrowed where the GPU's copy of them is mapped.
    /// `meanwhile` is called once the trees' copy to the host is queued:
    /// what it queues runs on the GPU while the host reads them.
    pub async fn cut<R>(
        &mut self,
        ctx: &GpuContext,
        b: &TreeBuffers,
        counters: &TreeCounters,
        targets: &[DomainSummary],
        meanwhile: impl FnOnce(),
        send: impl FnOnce(Vec<Vec<&[u8]>>) -> R,
    ) -> Result<R> {
        assert_eq!(
            targets.len() % DOMAIN_BOXES as usize,
            0,
            "whole domains of boxes"
        );
        let domains = targets.len() / DOMAIN_BOXES as usize;
        if domains == 0 {
            meanwhile();
            return Ok(send(Vec::new()));
        }
        let levels = levels_of(counters);
        let d = &ctx.device;
        let needed_slots = domains as u32 * levels.len() as u32;
        let mut grown = false;
        if needed_slots > self.pass_slots {
            self.pass_slots = needed_slots.next_power_of_two();
            self.passes = Self::pass_buffer(d, self.pass_slots);
            grown = true;
        }
        if domains as u32 > self.domains_capacity {
            self.domains_capacity = (domains as u32).next_power_of_two();
            self.counters = Self::counter_buffer(d, self.domains_capacity);
            self.targets = summaries_buffer(d, "LET target boxes", self.domains_capacity);
            grown = true;
        }
        if grown {
            self.rebind(d, b);
        }
        let boxes: Vec<DomainSummary> = targets.iter().map(with_margin).collect();
        ctx.queue
            .write_buffer(&self.targets, 0, bytemuck::cast_slice(&boxes));
        loop {
            let passes = self.passes_for(&levels, domains);
            ctx.queue
                .write_buffer(&self.passes, 0, &slots_bytes(&passes));
            let mut encoder = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("LET cut"),
            });
            encoder.clear_buffer(&self.counters, 0, None);
            for domain in 0..domains {
                encoder.clear_buffer(&self.slot_of, 0, None);
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("LET cut"),
                    timestamp_writes: None,
                });
                for (k, &(begin, end)) in levels.iter().enumerate() {
                    let slot = (domain * levels.len() + k) as u32;
                    let groups = dispatch_size(d, end - begin, WORKGROUP_SIZE);
                    self.kernel
                        .dispatch_in_slot(&mut pass, &self.bind, slot, groups);
                }
            }
            ctx.queue.submit(Some(encoder.finish()));
            let head_bytes = std::mem::size_of::<LetCounters>() as u64;
            let begins_bytes = domains as u64 * 8;
            let got = read_buffer_ranges(
                d,
                &ctx.queue,
                &[(&self.counters, 0, head_bytes + begins_bytes)],
            )
            .await?;
            let head: LetCounters = bytemuck::pod_read_unaligned(&got[0][..head_bytes as usize]);
            let mut begins: Vec<[u32; 2]> =
                records::<[u32; 2]>(&got[0][head_bytes as usize..]).into_owned();
            if head.overflow != 0
                || head.cells > self.cell_capacity
                || head.particles > self.particle_capacity
            {
                // Grow to what was asked for, with room to spare, and cut again.
                let cells = (head.cells as u64 * 5 / 4 + 64).min(u32::MAX as u64 / 2) as u32;
                let particles =
                    (head.particles as u64 * 5 / 4 + 64).min(u32::MAX as u64 / 2) as u32;
                if cells <= self.cell_capacity && particles <= self.particle_capacity {
                    return Err(Error::InvalidParameter(
                        "local essential trees overflowed outputs they should fit".into(),
                    ));
                }
                let cells = self.cell_capacity.max(cells);
                let particles = self.particle_capacity.max(particles);
                let bytes = cells as u64 * std::mem::size_of::<LetCell>() as u64;
                if bytes > ctx.max_elements(1) {
                    return Err(Error::TooManyParticles {
                        n: b.state.n as u64,
                        max: b.state.n as u64,
                        reason: format!(
                            "the local essential trees for the other ranks need {bytes} \
                             bytes of cells, over one storage buffer's limit"
                        ),
                    });
                }
                self.cell_capacity = cells;
                self.particle_capacity = particles;
                self.cells_out = Self::cells_buffer(d, cells);
                self.particles_out = Self::particles_buffer(d, particles);
                self.rebind(d, b);
                continue;
            }
            let read = std::time::Instant::now();
            begins.push([head.cells, head.particles]);
            let (cs, ps) = (
                std::mem::size_of::<LetCell>(),
                std::mem::size_of::<PosMass>(),
            );
            let ranges = [
                (&self.cells_out, 0, head.cells as u64 * cs as u64),
                (&self.particles_out, 0, head.particles as u64 * ps as u64),
            ];
            let headers: Vec<[u8; HEADER]> = (0..domains)
                .map(|k| {
                    let cells = begins[k + 1][0] - begins[k][0];
                    let particles = begins[k + 1][1] - begins[k][1];
                    EssentialTree::header(cells, particles)
                })
                .collect();
            let last_read_s = &mut self.last_read_s;
            return self
                .readback
                .read(d, &ctx.queue, &ranges, meanwhile, |data| {
                    *last_read_s = read.elapsed().as_secs_f64();
                    let messages = (0..domains)
                        .map(|k| {
                            let (c0, c1) = (begins[k][0] as usize, begins[k + 1][0] as usize);
                            let (p0, p1) = (begins[k][1] as usize, begins[k + 1][1] as usize);
                            vec![
                                &headers[k][..],
                                &data[0][c0 * cs..c1 * cs],
                                &data[1][p0 * ps..p1 * ps],
                            ]
                        })
                        .collect();
                    send(messages)
                })
                .await;
        }
    }

    /// Every pass of one cut: for each domain, its levels in order.
    fn passes_for(&self, levels: &[(u32, u32)], domains: usize) -> Vec<LetPass> {
        let mut out = Vec::with_capacity(levels.len() * domains);
        for domain in 0..domains {
            for (k, &(begin, end)) in levels.iter().enumerate() {
                out.push(LetPass {
                    begin,
                    end,
                    domain: domain as u32,
                    root: (k == 0) as u32,
                    cell_capacity: self.cell_capacity,
                    particle_capacity: self.particle_capacity,
                    _pad0: 0,
                    _pad1: 0,
                });
            }
        }
        out
    }
}

/// The cell ranges of the built levels, root first (levels with no cells
/// end the list).
fn levels_of(counters: &TreeCounters) -> Vec<(u32, u32)> {
    let mut levels = Vec::new();
    let deepest = counters.depth.min(MAX_DEPTH) as usize;
    for l in 0..=deepest {
        let (begin, end) = (
            counters.level_start[l],
            counters.level_start[l + 1].min(counters.cell_count),
        );
        if end <= begin {
            break;
        }
        levels.push((begin, end));
    }
    levels
}

/// `t` grown by MAC_MARGIN: a larger box, a larger opening scale and a
/// smaller acceleration tolerance all open more cells. (An empty box,
/// `groups` 0, is skipped by the cut.)
pub fn with_margin(t: &DomainSummary) -> DomainSummary {
    if t.groups == 0 {
        return *t;
    }
    let scale = t.lo[..3]
        .iter()
        .chain(&t.hi[..3])
        .fold(0.0f32, |m, x| m.max(x.abs()));
    let pad = MAC_MARGIN * scale + f32::MIN_POSITIVE;
    let mut out = *t;
    for k in 0..3 {
        out.lo[k] -= pad;
        out.hi[k] += pad;
    }
    out.open_scale *= 1.0 + MAC_MARGIN;
    out.accel_tol *= 1.0 - MAC_MARGIN;
    out
}

/// The passes in their `DYNAMIC_SLOT`-byte slots.
fn slots_bytes(passes: &[LetPass]) -> Vec<u8> {
    let slot = DYNAMIC_SLOT as usize;
    let mut bytes = vec![0u8; passes.len().max(1) * slot];
    for (k, p) in passes.iter().enumerate() {
        bytes[k * slot..k * slot + std::mem::size_of::<LetPass>()]
            .copy_from_slice(bytemuck::bytes_of(p));
    }
    bytes
}
