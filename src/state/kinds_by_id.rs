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
}
