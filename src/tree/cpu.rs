//! CPU f64 twins of the tree build and of the cell moments, used by the
//! tests to check the GPU tree (same splitting rule, same key layout).

use super::keys::key_octant;
use super::layout::{TreeCell, MAX_DEPTH};
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
