//! The trees this rank imports from the others, assembled into one tree
//! and walked by the local groups (`tree::walk` with
//! `WalkedTree::Imported`), whose forces add to the local walk's.
//!
//! The assembled tree has a root that every group opens (its opening
//! radius is infinite), whose children are the imported trees' roots in
//! rank order; its particles follow a copy of the local ones in one
//! array, since the walk reads its groups' own particles from there too.

use super::let_tree::{EssentialTree, TAKEN};
use crate::error::{Error, Result};
use crate::gpu::buffers::empty_storage_buffer;
use crate::gpu::layout::PosMass;
use crate::gpu::GpuContext;
use crate::tree::layout::{CellProps, TreeCell, TreeCounters};
use crate::tree::walk::{TreeWalk, WalkSources, WalkedTree, IMPORTED_SPILL};
use crate::tree::TreeBuffers;

/// The imported trees as one: cells and moments (root first) and the
/// particles that follow the `n_local` local ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssembledTree {
    pub cells: Vec<TreeCell>,
    pub props: Vec<CellProps>,
    pub particles: Vec<PosMass>,
}

/// Puts the non-empty `trees` under one root (see the module's comment).
/// `None` when there is nothing to walk.
pub fn assemble(trees: &[EssentialTree], n_local: u32) -> Option<AssembledTree> {
    let trees: Vec<&EssentialTree> = trees.iter().filter(|t| !t.cells.is_empty()).collect();
    if trees.is_empty() {
        return None;
    }
    let roots = trees.len() as u32;
    let total_cells = 1 + trees.iter().map(|t| t.cells.len()).sum::<usize>();
    let mut cells = vec![TreeCell::default(); total_cells];
    let mut props = vec![CellProps::default(); total_cells];
    let mut particles = Vec::with_capacity(trees.iter().map(|t| t.particles.len()).sum());
    let (mut count, mut mass) = (0u32, 0.0f32);
    let mut base = 1 + roots;
    for (k, t) in trees.iter().enumerate() {
        let first_particle = n_local + particles.len() as u32;
        // Root to slot 1 + k, the rest after all roots, in order.
        let slot = |i: u32| if i == 0 { 1 + k as u32 } else { base + i - 1 };
        for (i, c) in t.cells.iter().enumerate() {
            let mut cell = c.cell;
            if cell.child_count > 0 {
                cell.first_child = slot(cell.first_child);
            } else if cell.first_child == TAKEN {
                cell.first_child = 0;
                cell.start = 0;
            } else {
                cell.start += first_particle;
            }
            let at = slot(i as u32) as usize;
            cells[at] = cell;
            props[at] = c.props;
        }
        count = count.saturating_add(t.cells[0].cell.count);
        mass += t.cells[0].props.com_mass[3];
        particles.extend_from_slice(&t.particles);
        base += t.cells.len() as u32 - 1;
    }
    cells[0] = TreeCell {
        start: 0,
        count: count.max(1),
        first_child: 1,
        child_count: roots,
    };
    props[0] = CellProps {
        com_mass: [0.0, 0.0, 0.0, mass],
        quad_diag: [0.0, 0.0, 0.0, f32::MAX],
        quad_off: [0.0; 4],
    };
    Some(AssembledTree {
        cells,
        props,
        particles,
    })
}

/// What the last import held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportCounts {
    pub trees: u32,
    pub cells: u64,
    pub particles: u64,
}

pub struct ImportedTrees {
    walk: TreeWalk,
    pos_mass: wgpu::Buffer,
    cells: wgpu::Buffer,
    props: wgpu::Buffer,
    counters: wgpu::Buffer,
    cell_capacity: u64,
    particle_capacity: u64,
    pub last: ImportCounts,
}

impl ImportedTrees {
    pub fn new(ctx: &GpuContext, b: &TreeBuffers) -> Self {
        let d = &ctx.device;
        let cell_capacity = 1024;
        let particle_capacity = b.state.n as u64 + 1024;
        let pos_mass = Self::particles_buffer(d, particle_capacity);
        let (cells, props) = Self::cell_buffers(d, cell_capacity);
        let counters = empty_storage_buffer(
            d,
            "imported tree counters",
            std::mem::size_of::<TreeCounters>() as u64,
        );
        let walk = TreeWalk::of_tree(
            ctx,
            b,
            WalkedTree::Imported,
            &WalkSources {
                pos_mass: &pos_mass,
                cells: &cells,
                props: &props,
                counters: &counters,
            },
        );
        Self {
            walk,
            pos_mass,
            cells,
            props,
            counters,
            cell_capacity,
            particle_capacity,
            last: ImportCounts::default(),
        }
    }

    fn particles_buffer(d: &wgpu::Device, particles: u64) -> wgpu::Buffer {
        empty_storage_buffer(
            d,
            "imported particles",
            particles * std::mem::size_of::<PosMass>() as u64,
        )
    }

    fn cell_buffers(d: &wgpu::Device, cells: u64) -> (wgpu::Buffer, wgpu::Buffer) {
        (
            empty_storage_buffer(
                d,
                "imported cells",
                cells * std::mem::size_of::<TreeCell>() as u64,
            ),
            empty_storage_buffer(
                d,
                "imported cell props",
                cells * std::mem::size_of::<CellProps>() as u64,
            ),
        )
    }

    /// Uploads `trees` (assembled) and records their walk by the groups of
    /// the last build in `b`, after its local walk. Nothing is recorded
    /// when every tree is empty.
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        b: &TreeBuffers,
        trees: &[EssentialTree],
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        let n = b.state.n as u64;
        let Some(tree) = assemble(trees, b.state.n) else {
            self.last = ImportCounts::default();
            return Ok(());
        };
        let d = &ctx.device;
        let cells = tree.cells.len() as u64;
        let particles = n + tree.particles.len() as u64;
        let limit = ctx
            .max_elements(std::mem::size_of::<CellProps>() as u64)
            .min(ctx.max_elements(std::mem::size_of::<PosMass>() as u64));
        if cells > limit || particles > limit {
            return Err(Error::TooManyParticles {
                n,
                max: n,
                reason: format!(
                    "the trees imported from the other ranks ({cells} cells, {} particles) \
                     exceed one storage buffer",
                    tree.particles.len()
                ),
            });
        }
        let mut grown = false;
        if cells > self.cell_capacity {
            self.cell_capacity = (cells * 5 / 4).min(limit);
            (self.cells, self.props) = Self::cell_buffers(d, self.cell_capacity);
            grown = true;
        }
        if particles > self.particle_capacity {
            self.particle_capacity = (particles * 5 / 4).min(limit);
            self.pos_mass = Self::particles_buffer(d, self.particle_capacity);
            grown = true;
        }
        if grown {
            self.walk.rebind(
                d,
                b,
                &WalkSources {
                    pos_mass: &self.pos_mass,
                    cells: &self.cells,
                    props: &self.props,
                    counters: &self.counters,
                },
            );
        }
        let q = &ctx.queue;
        q.write_buffer(&self.cells, 0, bytemuck::cast_slice(&tree.cells));
        q.write_buffer(&self.props, 0, bytemuck::cast_slice(&tree.props));
        if !tree.particles.is_empty() {
            q.write_buffer(
                &self.pos_mass,
                n * std::mem::size_of::<PosMass>() as u64,
                bytemuck::cast_slice(&tree.particles),
            );
        }
        // The local particles (the groups' own) head the array, and the
        // groups are handed out afresh; `overflow` reports spills.
        encoder.copy_buffer_to_buffer(
            &b.state.pos_mass,
            0,
            &self.pos_mass,
            0,
            n * std::mem::size_of::<PosMass>() as u64,
        );
        encoder.copy_buffer_to_buffer(&b.counters, 0, &self.counters, 0, self.counters.size());
        let word = |offset: usize| (offset as u64, 4u64);
        for (offset, size) in [
            word(std::mem::offset_of!(TreeCounters, next_group)),
            word(std::mem::offset_of!(TreeCounters, overflow)),
        ] {
            encoder.clear_buffer(&self.counters, offset, Some(size));
        }
        self.walk.encode(encoder, None);
        self.last = ImportCounts {
            // The root's children: the trees that were not empty.
            trees: tree.cells[0].child_count,
            cells,
            particles: tree.particles.len() as u64,
        };
        Ok(())
    }

    /// Where the last imported walk says whether it spilled a node: a
    /// range (buffer, offset, bytes) to read back with other counters.
    pub fn spill_word(&self) -> (&wgpu::Buffer, u64, u64) {
        let offset = std::mem::offset_of!(TreeCounters, overflow) as u64;
        (&self.counters, offset, 4)
    }

    /// An error if `word` (read from `spill_word` after the last imported
    /// walk) says a node was spilled, which an imported tree cannot sum:
    /// that walk's forces are incomplete.
    pub fn check_spill(&self, word: u32) -> Result<()> {
        if self.last.trees > 0 && word == IMPORTED_SPILL {
            return Err(Error::InvalidParameter(
                "the walk of the imported trees ran out of room for its frontier and stack; \
                 its forces are incomplete (raise tree::DEFERRED_CAPACITY)"
                    .into(),
            ));
        }
        Ok(())
    }
}
