//! The kind of each particle (Gadget-2's numbering, `model::KINDS`) by its
//! id, kept as runs of ids: a run on several GPUs moves particles between
//! ranks and reorders them, but their ids go with them, so the files it
//! writes can still say which particles are halo, disk, bulge or black
//! hole. A model's kinds come in a few runs (its components are
//! consecutive ids); a file's take at most one run per particle.

/// Runs of ids of one kind: id `i` has the kind of the last run that
/// starts at or below it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindsById {
    /// `[first id, kind]` of each run, by first id.
    runs: Vec<[u64; 2]>,
}

impl KindsById {
    /// The kinds `kinds[k]` of the particles `ids[k]`.
    pub fn new(ids: &[u64], kinds: &[u8]) -> Self {
        assert_eq!(ids.len(), kinds.len(), "a kind per id");
        let mut pairs: Vec<[u64; 2]> = ids
            .iter()
            .zip(kinds)
            .map(|(&id, &kind)| [id, kind as u64])
            .collect();
        super::parallel::sort_unstable_by(&mut pairs, |a, b| a[0].cmp(&b[0]));
        Self::from_runs(pairs)
    }

    /// The runs of several parts, each of them made of its own ids, the
    /// parts' ids apart (the ranks' shares of a model, in rank order).
    pub fn joined(parts: impl IntoIterator<Item = Vec<[u64; 2]>>) -> Self {
        let mut runs: Vec<[u64; 2]> = parts.into_iter().flatten().collect();
        runs.sort_by_key(|r| r[0]);
        Self::from_runs(runs)
    }

    /// Its runs, `[first id, kind]` each (what `joined` takes).
    pub fn runs(&self) -> &[[u64; 2]] {
        &self.runs
    }

    /// The runs of the ids `ids` (of kinds `kinds`: a part of a set, such
    /// as a rank's share of a file) as `[first id, last id, kind]`, by id:
    /// what `from_spans` joins.
    pub fn spans(ids: &[u64], kinds: &[u8]) -> Vec<[u64; 3]> {
        assert_eq!(ids.len(), kinds.len(), "a kind per id");
        let mut pairs: Vec<[u64; 2]> = (ids.iter().zip(kinds))
            .map(|(&id, &kind)| [id, kind as u64])
            .collect();
        super::parallel::sort_unstable_by(&mut pairs, |a, b| a[0].cmp(&b[0]));
        let mut spans: Vec<[u64; 3]> = Vec::new();
        for [id, kind] in pairs {
            match spans.last_mut() {
                Some(last) if last[2] == kind => last[1] = id,
                _ => spans.push([id, id, kind]),
            }
        }
        spans
    }

    /// The kinds of every part's ids from each part's `spans`, where the
    /// parts' ids may interleave (a file in no id order, read in shares):
    /// the spans of one kind join across parts. `None` where a span of
    /// one part reaches over another part's span of another kind: ids of
    /// different kinds interleave, and only the ids themselves tell them
    /// apart.
    pub fn from_spans(parts: impl IntoIterator<Item = Vec<[u64; 3]>>) -> Option<Self> {
        let mut spans: Vec<[u64; 3]> = parts.into_iter().flatten().collect();
        spans.sort_unstable_by_key(|s| s[0]);
        // The stretch of one kind the spans so far end in: [last id, kind].
        let mut stretch: Option<[u64; 2]> = None;
        let mut starts = Vec::new();
        for [first, last, kind] in spans {
            match &mut stretch {
                Some([end, k]) if first <= *end => {
                    if *k != kind {
                        return None;
                    }
                    *end = (*end).max(last);
                }
                _ => {
                    stretch = Some([last, kind]);
                    starts.push([first, kind]);
                }
            }
        }
        Some(Self::from_runs(starts))
    }

    /// Sorted `[id, kind]` pairs merged into runs.
    fn from_runs(sorted: Vec<[u64; 2]>) -> Self {
        let mut runs: Vec<[u64; 2]> = Vec::new();
        for r in sorted {
            if runs.last().is_none_or(|last| last[1] != r[1]) {
                runs.push(r);
            }
        }
        Self { runs }
    }

    /// The kind of particle `id` (0 for an id below every run).
    pub fn kind(&self, id: u64) -> u8 {
        let after = self.runs.partition_point(|r| r[0] <= id);
        after.checked_sub(1).map_or(0, |k| self.runs[k][1] as u8)
    }

    /// The kinds of `ids`, in their order.
    pub fn of(&self, ids: &[u64]) -> Vec<u8> {
        super::parallel::map_indices(ids.len(), |k| self.kind(ids[k]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_their_ids_in_any_order() {
        // Ids shuffled, with gaps, kinds in runs and alone.
        let ids = [7u64, 0, 3, 12, 1, 9, 4, 20];
        let kinds = [2u8, 1, 1, 5, 1, 2, 2, 3];
        let table = KindsById::new(&ids, &kinds);
        assert_eq!(table.of(&ids), kinds);
        assert_eq!(table.runs().len(), 4, "{:?}", table.runs());
        // Parts of consecutive ids, joined in any order.
        let a = KindsById::new(&[0, 1, 2], &[1, 1, 2]);
        let b = KindsById::new(&[3, 4, 5], &[2, 2, 4]);
        let both = KindsById::joined([b.runs().to_vec(), a.runs().to_vec()]);
        assert_eq!(both.of(&[5, 4, 3, 2, 1, 0]), [4, 2, 2, 2, 1, 1]);
        assert_eq!(both.runs().len(), 3);
    }

    #[test]
    fn spans_of_parts_join_unless_kinds_interleave() {
        // Three parts dealt ids in turn (a file in no id order), the kinds
        // in ranges of ids (a model's components, a Gadget file's types).
        let kind = |id: u64| [1u8, 2, 2, 4][(id / 25) as usize];
        let parts: Vec<Vec<u64>> = (0..3)
            .map(|p| (0..100).filter(|id| (id * 37) % 3 == p).collect())
            .collect();
        let spans = |ids: &[u64]| {
            let kinds: Vec<u8> = ids.iter().map(|&id| kind(id)).collect();
            KindsById::spans(ids, &kinds)
        };
        let all: Vec<u64> = (0..100).collect();
        let whole = KindsById::new(&all, &all.iter().map(|&id| kind(id)).collect::<Vec<_>>());
        let joined = KindsById::from_spans(parts.iter().map(|p| spans(p))).unwrap();
        assert_eq!(joined, whole);
        assert_eq!(joined.runs().len(), 3);
        assert_eq!(spans(&parts[1]).len(), 3, "one span a kind");
        // Kinds that alternate by id, each part of one: neither part's
        // span can stand for the other's ids.
        let odd_even: Vec<Vec<[u64; 3]>> = (0..2u64)
            .map(|p| {
                let ids: Vec<u64> = (0..10).filter(|id| id % 2 == p).collect();
                KindsById::spans(&ids, &vec![1 + p as u8; ids.len()])
            })
            .collect();
        assert_eq!(KindsById::from_spans(odd_even), None);
    }
}
