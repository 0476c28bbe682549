//! The part of a model that one process of several keeps: the ranks of a
//! run on several GPUs each sample only their own particles of a model,
//! and agree on its centre of mass by exchanging partial sums, so that
//! together they hold the particles one process samples, to the bit.
//!
//! The bits stay the same because every centre of mass is summed by
//! chunks of `SUM_CHUNK` consecutive indices of the whole model, each
//! chunk in index order, and the chunks' sums are added in chunk order
//! (`frame_of`): a share that starts and ends on chunk boundaries
//! (`Share::of_rank`) sums whole chunks, as one process does.

use super::galaxy::realization::PhasePoint;
use super::parallel::SUM_CHUNK;
use crate::error::{Error, Result};
use std::ops::Range;

/// Rank `rank`'s equal share of `ranks` (the ranks of a parallel run):
/// of `n` things in order, those from n·rank/ranks up to n·(rank + 1)/ranks
/// (a checkpoint's records each rank reads, the particles or the files an
/// input's reader deals out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankShare {
    pub rank: usize,
    pub ranks: usize,
}

impl RankShare {
    /// This share's indices among `n`.
    pub fn of(self, n: usize) -> Range<usize> {
        n * self.rank / self.ranks..n * (self.rank + 1) / self.ranks
    }
}

/// The sums of one chunk of a model's particles: `[chunk index, Σ m,
/// Σ m x (3), Σ m v (3)]` (the index as f64, so that the record is plain
/// numbers for an exchange: exact below 2^53).
pub type ChunkSums = [f64; 8];

/// How each process sees every process's chunk sums (a parallel run's
/// ranks: an all-gather).
pub trait GatherSums {
    /// Every process's `mine`, in any order, the same on every process.
    fn gather(&self, mine: &[ChunkSums]) -> Vec<ChunkSums>;
}

/// The particles (indices of the whole model) one process keeps, and how
/// it sees the other processes' sums.
#[derive(Clone)]
pub struct Share<'a> {
    pub keep: Range<usize>,
    pub gather: &'a dyn GatherSums,
}

impl<'a> Share<'a> {
    /// Rank `rank`'s share of `ranks` of a model of `n` particles: its
    /// equal part of the whole chunks (the last chunk may be short).
    pub fn of_rank(n: usize, rank: usize, ranks: usize, gather: &'a dyn GatherSums) -> Self {
        let chunks = n.div_ceil(SUM_CHUNK);
        let edge = |r: usize| (chunks * r / ranks * SUM_CHUNK).min(n);
        Self {
            keep: edge(rank)..edge(rank + 1),
            gather,
        }
    }

    /// Refuses a share that does not start and end on chunk boundaries
    /// (its sums would split chunks that one process sums whole).
    pub fn check(&self, n: usize) -> Result<()> {
        let aligned = |i: usize| i.is_multiple_of(SUM_CHUNK) || i == n;
        let k = &self.keep;
        if k.start > k.end || k.end > n || !aligned(k.start) || !aligned(k.end) {
            return Err(Error::InvalidParameter(format!(
                "a share {k:?} of {n} particles must start and end on chunks of {SUM_CHUNK}"
            )));
        }
        Ok(())
    }
}

/// Each chunk's sums of the particles `first..first + count` of the whole
/// model: `moment(k)` gives `[m, m x, m v]` of the k-th of them. The
/// chunks are the whole model's (`SUM_CHUNK` indices from 0), so a part
/// that starts inside one sums only its own piece of it.
pub fn chunk_sums(
    first: usize,
    count: usize,
    moment: impl Fn(usize) -> [f64; 7] + Sync + Send,
) -> Vec<ChunkSums> {
    if count == 0 {
        return Vec::new();
    }
    let end = first + count;
    let first_chunk = first / SUM_CHUNK;
    let chunks = (end - 1) / SUM_CHUNK + 1 - first_chunk;
    super::parallel::map_indices(chunks, |j| {
        let c = first_chunk + j;
        let mut s = [0.0; 8];
        s[0] = c as f64;
        for i in (c * SUM_CHUNK).max(first)..((c + 1) * SUM_CHUNK).min(end) {
            let x = moment(i - first);
            for a in 0..7 {
                s[1 + a] += x[a];
            }
        }
        s
    })
}

/// Σ m, Σ m x and Σ m v from every chunk's sums, added in chunk order
/// (any order in; a chunk given twice is a bug in the shares).
pub fn add_in_order(mut sums: Vec<ChunkSums>) -> [f64; 7] {
    sums.sort_by(|a, b| a[0].total_cmp(&b[0]));
    debug_assert!(
        sums.windows(2).all(|w| w[0][0] < w[1][0]),
        "each chunk summed once"
    );
    sums.iter()
        .fold([0.0; 7], |s, c| std::array::from_fn(|a| s[a] + c[1 + a]))
}

/// The centre of mass and its velocity of every chunk's sums.
pub fn frame_of(sums: Vec<ChunkSums>) -> PhasePoint {
    let s = add_in_order(sums);
    let mean = |a: usize| s[a] / s[0];
    ([mean(1), mean(2), mean(3)], [mean(4), mean(5), mean(6)])
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Alone;
    impl GatherSums for Alone {
        fn gather(&self, mine: &[ChunkSums]) -> Vec<ChunkSums> {
            mine.to_vec()
        }
    }

    #[test]
    fn rank_shares_cover_the_model_on_chunk_boundaries() {
        let n = 5 * SUM_CHUNK + 17;
        let mut next = 0;
        for r in 0..3 {
            let s = Share::of_rank(n, r, 3, &Alone);
            assert_eq!(s.keep.start, next);
            s.check(n).unwrap();
            next = s.keep.end;
        }
        assert_eq!(next, n);
        let off = Share {
            keep: 1..SUM_CHUNK,
            gather: &Alone,
        };
        assert!(off.check(n).is_err());
    }

    #[test]
    fn parts_summed_apart_add_to_the_whole_bits() {
        let n = 3 * SUM_CHUNK + 999;
        let moment = |i: usize| {
            let x = (i as f64 * 0.618).sin();
            [1.0 / 3.0, x, x * x, -x, 0.1 * x, 1e-3, x.cos()]
        };
        let whole = add_in_order(chunk_sums(0, n, moment));
        // Two parts split at a chunk boundary, gathered in reverse.
        let cut = 2 * SUM_CHUNK;
        let mut parts = chunk_sums(cut, n - cut, |k| moment(cut + k));
        parts.extend(chunk_sums(0, cut, moment));
        assert_eq!(add_in_order(parts), whole);
    }
}
