//! The trees this rank imports from the others, assembled into one tree
//! and walked by the local groups (`tree::walk` with
//! `WalkedTree::Imported`), whose forces add to the local walk's.
//!
//! The assembled tree has a root that every group opens (its opening
//! radius is infinite), whose children are the imported trees' roots in
//! rank order; its particles follow a copy of the local ones in one
//! array, since the walk reads its groups' own particles from there too.

use super::let_tree::{EssentialTree, TAKEN};
use super::staging::StagingWriter;
use crate::error::{Error, Result};
use crate::gpu::buffers::empty_storage_buffer;
use crate::gpu::layout::PosMass;
use crate::gpu::timing::PhaseTimer;
use crate::gpu::GpuContext;
use crate::state::parallel::map_into;
use crate::tree::layout::{CellProps, LetCell, TreeCell, TreeCounters};
use crate::tree::walk::{TreeWalk, WalkSources, WalkedTree, IMPORTED_SPILL};
use crate::tree::TreeBuffers;

/// The imported trees' cells as one tree: cells and moments, root first.
/// (Their particles follow the local ones, tree after tree, as they came.)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssembledCells {
    pub cells: Vec<TreeCell>,
    pub props: Vec<CellProps>,
}

/// Cells and particles of the non-empty `trees` under one root (see the
/// module's comment); `None` when there is nothing to walk.
pub fn assembled_size(trees: &[EssentialTree]) -> Option<(usize, usize)> {
    let kept = trees.iter().filter(|t| !t.cells.is_empty());
    let (cells, particles) = kept.fold((0, 0), |(c, p), t| {
        (c + t.cells.len(), p + t.particles.len())
    });
    (cells > 0).then_some((1 + cells, particles))
}

/// Puts the non-empty `trees` under one root, writing its cells and their
/// moments into slices of `assembled_size`'s cells; their particles are
/// to follow the `n_local` local ones, tree after tree.
pub fn assemble_into(
    trees: &[EssentialTree],
    n_local: u32,
    cells: &mut [TreeCell],
    props: &mut [CellProps],
) {
    let trees: Vec<&EssentialTree> = trees.iter().filter(|t| !t.cells.is_empty()).collect();
    let roots = trees.len();
    // Tree k's root goes to slot 1 + k, the rest of its cells after every
    // root, in their order, from `after_roots[k]`; its particles start at
    // `particles_from[k]`.
    let (mut after_roots, mut particles_from) = (Vec::new(), Vec::new());
    let (mut base, mut first_particle) = (1 + roots as u32, n_local);
    for t in &trees {
        after_roots.push(base);
        particles_from.push(first_particle);
        base += t.cells.len() as u32 - 1;
        first_particle += t.particles.len() as u32;
    }
    let moved = |k: usize, c: &LetCell| {
        let mut cell = c.cell;
        if cell.child_count > 0 {
            // Children are never a root.
            cell.first_child += after_roots[k] - 1;
        } else if cell.first_child == TAKEN {
            // A multipole: a leaf with no particles to the walk.
            cell.first_child = 0;
            cell.start = 0;
        } else {
            cell.start += particles_from[k];
        }
        cell
    };
    let (head_cells, mut rest_cells) = cells.split_at_mut(1 + roots);
    let (head_props, mut rest_props) = props.split_at_mut(1 + roots);
    for (k, t) in trees.iter().enumerate() {
        head_cells[1 + k] = moved(k, &t.cells[0]);
        head_props[1 + k] = t.cells[0].props;
        let below = &t.cells[1..];
        let (c_out, c_tail) = std::mem::take(&mut rest_cells).split_at_mut(below.len());
        let (p_out, p_tail) = std::mem::take(&mut rest_props).split_at_mut(below.len());
        (rest_cells, rest_props) = (c_tail, p_tail);
        // Millions of cells a step: moved on every core.
        map_into(c_out, below, |f| moved(k, f));
        map_into(p_out, below, |f| f.props);
    }
    let count = trees
        .iter()
        .fold(0u32, |n, t| n.saturating_add(t.cells[0].cell.count));
    let mass: f32 = trees.iter().map(|t| t.cells[0].props.com_mass[3]).sum();
    head_cells[0] = TreeCell {
        start: 0,
        count: count.max(1),
        first_child: 1,
        child_count: roots as u32,
    };
    // Opened by every group: an infinite opening radius.
    head_props[0] = CellProps {
        com_mass: [0.0, 0.0, 0.0, mass],
        quad_diag: [0.0, 0.0, 0.0, f32::MAX],
        quad_off: [0.0; 4],
    };
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
    /// Particles `pos_mass` holds: the local ones (`local_count`) and
    /// room for the imported.
    particle_capacity: u64,
    local_count: u64,
    pub last: ImportCounts,
    /// The assembled tree on the host and its way to the GPU, both kept
    /// from one step to the next.
    assembled: AssembledCells,
    upload: StagingWriter,
    /// Seconds the last import spent assembling the trees on the host.
    pub last_assemble_s: f64,
    /// The share of what one binding holds beside the local particles
    /// that the last import's particles (or cells, if more) filled: at 1
    /// the next larger import is refused.
    pub room_used: f64,
}

impl ImportedTrees {
    pub fn new(ctx: &GpuContext, b: &TreeBuffers) -> Self {
        Self::with_room(ctx, b, (1024, 1024))
    }

    /// The imports of the tree in `b` after a redraw, with room for as
    /// many cells and particles as `previous` imported, and its host
    /// buffers (kept: a fresh host-visible buffer of tens of megabytes
    /// costs more than its copy, `staging`).
    pub fn succeeding(ctx: &GpuContext, b: &TreeBuffers, previous: &mut Self) -> Self {
        let imported = previous
            .particle_capacity
            .saturating_sub(previous.local_count);
        let mut next = Self::with_room(ctx, b, (previous.cell_capacity, imported));
        next.assembled = std::mem::take(&mut previous.assembled);
        next.upload = previous.upload.take();
        next
    }

    /// The imports of the tree in `b` after a redraw that kept its arrays
    /// (`TreeSolver::rebind`): the room and host buffers stay, the walk
    /// reads the new particles.
    pub fn rebind(&mut self, ctx: &GpuContext, b: &TreeBuffers) {
        self.local_count = b.state.n as u64;
        self.walk = TreeWalk::of_tree(
            ctx,
            b,
            WalkedTree::Imported,
            &WalkSources {
                pos_mass: &self.pos_mass,
                cells: &self.cells,
                props: &self.props,
                counters: &self.counters,
            },
        );
    }

    /// Room for `cells` imported cells and `imported` particles beside
    /// the local ones.
    fn with_room(ctx: &GpuContext, b: &TreeBuffers, (cells, imported): (u64, u64)) -> Self {
        let d = &ctx.device;
        let (cell_limit, particle_limit) = limits(ctx);
        let cell_capacity = cells.min(cell_limit);
        let particle_capacity = (b.state.n as u64 + imported).min(particle_limit);
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
            local_count: b.state.n as u64,
            last: ImportCounts::default(),
            assembled: AssembledCells::default(),
            upload: StagingWriter::new("imported trees upload"),
            last_assemble_s: 0.0,
            room_used: 0.0,
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
        timer: Option<&mut PhaseTimer>,
    ) -> Result<()> {
        let n = b.state.n as u64;
        let Some((cells, imported)) = assembled_size(trees) else {
            self.last = ImportCounts::default();
            self.last_assemble_s = 0.0;
            self.room_used = 0.0;
            return Ok(());
        };
        let d = &ctx.device;
        let (cells, imported) = (cells as u64, imported as u64);
        let particles = n + imported;
        let (cell_limit, particle_limit) = limits(ctx);
        self.room_used = room_used(
            (cells, cell_limit),
            (imported, particle_limit.saturating_sub(n)),
        );
        if cells > cell_limit || particles > particle_limit {
            return Err(Error::TooManyParticles {
                n: particles,
                max: particle_limit,
                reason: format!(
                    "the trees imported from the other ranks ({cells} cells of at most \
                     {cell_limit}, {imported} particles beside this rank's {n}) exceed one \
                     storage buffer"
                ),
            });
        }
        let mut grown = false;
        if cells > self.cell_capacity {
            self.cell_capacity = (cells * 5 / 4).min(cell_limit);
            (self.cells, self.props) = Self::cell_buffers(d, self.cell_capacity);
            grown = true;
        }
        if particles > self.particle_capacity {
            self.particle_capacity = (particles * 5 / 4).min(particle_limit);
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
        let clock = std::time::Instant::now();
        let host = &mut self.assembled;
        host.cells.resize(cells as usize, TreeCell::default());
        host.props.resize(cells as usize, CellProps::default());
        assemble_into(trees, b.state.n, &mut host.cells, &mut host.props);
        let root = host.cells[0];
        self.upload.write(
            d,
            &ctx.queue,
            &[
                (&self.cells, 0, vec![bytemuck::cast_slice(&host.cells)]),
                (&self.props, 0, vec![bytemuck::cast_slice(&host.props)]),
                (
                    &self.pos_mass,
                    n * std::mem::size_of::<PosMass>() as u64,
                    trees
                        .iter()
                        .filter(|t| !t.cells.is_empty())
                        .map(|t| bytemuck::cast_slice(&t.particles))
                        .collect(),
                ),
            ],
        )?;
        self.last_assemble_s = clock.elapsed().as_secs_f64();
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
        self.walk.encode(encoder, timer);
        self.last = ImportCounts {
            // The root's children: the trees that were not empty.
            trees: root.child_count,
            cells,
            particles: imported,
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

/// The larger share of `(used, room)` for cells and for particles (1 where
/// there is no room).
fn room_used((cells, cell_room): (u64, u64), (particles, particle_room): (u64, u64)) -> f64 {
    let share = |used: u64, room: u64| match room {
        0 => 1.0,
        _ => used as f64 / room as f64,
    };
    share(cells, cell_room).max(share(particles, particle_room))
}

/// The most imported cells and particles (the local ones included) that
/// one binding of their records holds.
fn limits(ctx: &GpuContext) -> (u64, u64) {
    (
        ctx.max_elements(std::mem::size_of::<CellProps>() as u64),
        ctx.max_elements(std::mem::size_of::<PosMass>() as u64),
    )
}

#[cfg(test)]
mod tests {
    use super::room_used;

    #[test]
    fn the_fuller_of_cells_and_particles_is_the_room_used() {
        assert_eq!(room_used((10, 100), (30, 40)), 0.75);
        assert_eq!(room_used((90, 100), (0, 40)), 0.9);
        // No room left beside the local particles: full.
        assert_eq!(room_used((1, 100), (0, 0)), 1.0);
    }
}
