//! CPU twins of the tree build and of the cell moments (f64), and of a
//! group's interaction list (the walk's MAC in f32), used by the tests to
//! check the GPU tree (same splitting rule, same key layout).

use super::keys::key_octant;
use super::layout::{CellProps, TreeCell, MAX_DEPTH};
use super::{GROUP_CELL, NCRIT, NLEAF};
use crate::gpu::layout::PosMass;

/// The octree of sorted `keys`, level by level: the same cells (as particle
/// ranges) as the GPU build, though the order within a level may differ.
pub fn build(keys: &[u64]) -> Vec<TreeCell> {
    let mut cells = vec![TreeCell {
        start: 0,
        count: keys.len() as u32,
        first_child: 0,
        child_count: 0,
    }];
    let mut level_begin = 0;
    for level in 0..MAX_DEPTH {
        let level_end = cells.len();
        for c in level_begin..level_end {
            let cell = cells[c];
            if cell.count <= NLEAF {
                continue;
            }
            let first = cells.len() as u32;
            let mut start = cell.start;
            let end = cell.start + cell.count;
            while start < end {
                let octant = key_octant(keys[start as usize], level + 1);
                let mut stop = start;
                while stop < end && key_octant(keys[stop as usize], level + 1) == octant {
                    stop += 1;
                }
                cells.push(TreeCell {
                    start,
                    count: stop - start,
                    first_child: 0,
                    child_count: 0,
                });
                start = stop;
            }
            cells[c].first_child = first;
            cells[c].child_count = cells.len() as u32 - first;
        }
        level_begin = level_end;
    }
    cells
}

/// The walk groups of a tree, as (start, count), sorted: the first cells
/// with at most GROUP_CELL particles on each path from the root,
/// consecutive siblings packed greedily into runs of at most GROUP_CELL
/// particles, every run (and every leaf with more than GROUP_CELL
/// particles) cut into pieces of NCRIT in key order.
pub fn groups(cells: &[TreeCell]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    if cells[0].count <= GROUP_CELL {
        push_pieces(&mut out, (cells[0].start, cells[0].count));
    }
    for cell in cells.iter().filter(|c| c.count > GROUP_CELL) {
        if cell.child_count == 0 {
            push_pieces(&mut out, (cell.start, cell.count));
            continue;
        }
        let mut run: Option<(u32, u32)> = None;
        for child in
            &cells[cell.first_child as usize..(cell.first_child + cell.child_count) as usize]
        {
            let fits = run.is_some_and(|(_, c)| c + child.count <= GROUP_CELL);
            if child.count > GROUP_CELL || !fits {
                if let Some(r) = run.take() {
                    push_pieces(&mut out, r);
                }
            }
            if child.count <= GROUP_CELL {
                run = Some(match run {
                    Some((s, c)) => (s, c + child.count),
                    None => (child.start, child.count),
                });
            }
        }
        if let Some(r) = run {
            push_pieces(&mut out, r);
        }
    }
    out.sort_unstable();
    out
}

/// Groups of at most NCRIT consecutive particles covering `start..start + count`.
fn push_pieces(out: &mut Vec<(u32, u32)>, (start, count): (u32, u32)) {
    let mut s = 0;
    while s < count {
        out.push((start + s, NCRIT.min(count - s)));
        s += NCRIT;
    }
}

/// Mass, centre of mass and second moments about it, in f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    pub mass: f64,
    pub com: [f64; 3],
    /// xx, yy, zz, xy, xz, yz.
    pub second: [f64; 6],
}

/// The moments of particles `start..start+count`, summed directly in f64.
pub fn moments(particles: &[PosMass], start: u32, count: u32) -> Moments {
    let range = &particles[start as usize..(start + count) as usize];
    let mut m = Moments::default();
    for p in range {
        m.mass += p.mass as f64;
        for a in 0..3 {
            m.com[a] += p.mass as f64 * p.pos[a] as f64;
        }
    }
    if m.mass > 0.0 {
        m.com = m.com.map(|x| x / m.mass);
    }
    for p in range {
        let d: Vec<f64> = (0..3).map(|a| p.pos[a] as f64 - m.com[a]).collect();
        let w = p.mass as f64;
        m.second[0] += w * d[0] * d[0];
        m.second[1] += w * d[1] * d[1];
        m.second[2] += w * d[2] * d[2];
        m.second[3] += w * d[0] * d[1];
        m.second[4] += w * d[0] * d[2];
        m.second[5] += w * d[1] * d[2];
    }
    m
}

/// What a group's walk does with each cell of a built tree: the twin of
/// the walk's MAC (`accepts` in `walk.wgsl`, traced by `tree::trace`),
/// in the GPU's own f32 arithmetic on the GPU's cells and moments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InteractionList {
    /// Cells taken as multipoles.
    pub accepted: Vec<u32>,
    /// Leaves whose particles are summed directly.
    pub leaves: Vec<u32>,
    /// Cells whose MAC test lies within `margin` (relative) of its
    /// threshold: f32 rounding (or a fused multiply-add) may decide them
    /// either way.
    pub marginal: Vec<u32>,
}

/// The walk's interaction list for a group with box `lo`..`hi` and the
/// group's `open_scale` and `accel_tol`, on `cells` with their `props`;
/// `alpha` > 0 selects the acceleration MAC.
pub fn interaction_list(
    cells: &[TreeCell],
    props: &[CellProps],
    (lo, hi): ([f32; 3], [f32; 3]),
    (open_scale, accel_tol): (f32, f32),
    alpha: f32,
) -> InteractionList {
    let mut out = InteractionList::default();
    if cells.is_empty() {
        return out;
    }
    let margin = 1e-5;
    let mut stack = vec![0u32];
    while let Some(c) = stack.pop() {
        let cell = cells[c as usize];
        if cell.count == 0 {
            continue;
        }
        let p = &props[c as usize];
        let d: [f32; 3] =
            std::array::from_fn(|a| (lo[a] - p.com_mass[a]).max((p.com_mass[a] - hi[a]).max(0.0)));
        let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let open_r2 = p.quad_diag[3];
        let radius_test = d2 - open_r2 * open_scale;
        let mut near_threshold = radius_test.abs() < margin * d2.max(open_r2 * open_scale);
        let accepted = radius_test > 0.0
            && (alpha == 0.0 || {
                let dist = d2.sqrt();
                let near = dist - open_r2.sqrt();
                let bound = accel_tol * (d2 * dist) * (near * near);
                near_threshold |= (p.quad_off[3] - bound).abs() < margin * bound.abs();
                p.quad_off[3] <= bound
            });
        if near_threshold {
            out.marginal.push(c);
        }
        if accepted {
            out.accepted.push(c);
        } else if cell.child_count == 0 {
            out.leaves.push(c);
        } else {
            stack.extend((0..cell.child_count).rev().map(|k| cell.first_child + k));
        }
    }
    out
}
