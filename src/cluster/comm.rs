//! How the ranks of a parallel run talk: a few collective operations on
//! bytes, each called by every rank in the same order. `MpiComm` (feature
//! `mpi`) runs them over MPI between processes; `ThreadComm` between
//! threads of one process (tests, and one host's GPUs without MPI).

use crate::snapshot::parted::Ranks;
use crate::state::share::{ChunkSums, GatherSums};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub trait Comm: Send + Sync {
    /// This rank, 0..size.
    fn rank(&self) -> usize;
    /// Ranks in the run.
    fn size(&self) -> usize;
    /// `to[r]` goes to rank r (`to` has `size` entries); returns what every
    /// rank sent to this one, in rank order.
    fn alltoall(&self, to: Vec<Vec<u8>>) -> Vec<Vec<u8>>;
    /// Every rank's `mine`, in rank order.
    fn allgather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.alltoall(vec![mine.to_vec(); self.size()])
    }
    /// Waits until every rank has come here.
    fn barrier(&self) {
        self.allgather(&[]);
    }
    /// Sends rank r the pieces of `to[r]` laid end to end (`to` has `size`
    /// entries) and calls `take` once with what every rank sent to this
    /// one, in rank order, borrowed: where the ranks share a host they can
    /// be read where their sender wrote them (`shared_memory`).
    fn exchange(&self, to: &[Vec<&[u8]>], take: &mut dyn FnMut(&[&[u8]])) {
        exchange_by_alltoall(self, to, take)
    }
    /// `exchange` for a rare, large one (a redraw's migrants: gigabytes at
    /// a run's start): shared segments it passed through are unmapped
    /// after it rather than kept, resident, for the next (the steps'
    /// trees are far smaller).
    fn exchange_rare(&self, to: &[Vec<&[u8]>], take: &mut dyn FnMut(&[&[u8]])) {
        self.exchange(to, take)
    }
}

/// `Comm::exchange` through `alltoall`, each message copied whole first.
pub fn exchange_by_alltoall<C: Comm + ?Sized>(
    comm: &C,
    to: &[Vec<&[u8]>],
    take: &mut dyn FnMut(&[&[u8]]),
) {
    let got = comm.alltoall(to.iter().map(|pieces| pieces.concat()).collect());
    let slices: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
    take(&slices)
}

/// Every rank's records `mine` (`T` plain data), in rank order.
pub fn allgather_records<T: bytemuck::Pod>(comm: &dyn Comm, mine: &[T]) -> Vec<Vec<T>> {
    comm.allgather(bytemuck::cast_slice(mine))
        .iter()
        .map(|b| bytemuck::pod_collect_to_vec(b))
        .collect()
}

/// The sum over ranks of each of `values`.
pub fn sum_f64(comm: &dyn Comm, values: &[f64]) -> Vec<f64> {
    let all = allgather_records(comm, values);
    (0..values.len())
        .map(|k| all.iter().map(|v| v[k]).sum())
        .collect()
}

/// The largest `value` of any rank.
pub fn max_f64(comm: &dyn Comm, value: f64) -> f64 {
    allgather_records(comm, &[value])
        .iter()
        .map(|v| v[0])
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The ranks' chunk sums of a model they sample together
/// (`state::share`): an all-gather.
pub struct CommSums<'a>(pub &'a dyn Comm);

impl GatherSums for CommSums<'_> {
    fn gather(&self, mine: &[ChunkSums]) -> Vec<ChunkSums> {
        allgather_records(self.0, mine).concat()
    }
}

/// The ranks writing one file together (`snapshot::parted`).
pub struct CommRanks<'a>(pub &'a dyn Comm);

impl Ranks for CommRanks<'_> {
    fn rank(&self) -> usize {
        self.0.rank()
    }
    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>> {
        allgather_records(self.0, mine)
    }
}

/// One rank, talking to nobody: a run on one GPU through the same code.
pub struct SingleComm;

impl Comm for SingleComm {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn alltoall(&self, to: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        to
    }
}

/// Ranks as threads of one process: `ThreadComm::ranks(p)` gives one
/// handle per rank, each to be moved to its own thread. A rank whose
/// thread panics holding its handle abandons the others: their waits
/// panic too, where they would otherwise wait forever for it.
pub struct ThreadComm {
    rank: usize,
    shared: Arc<Shared>,
}

struct Shared {
    size: usize,
    /// What each rank posted for the others in the current operation.
    posted: Mutex<Vec<Vec<Vec<u8>>>>,
    gate: Mutex<Gate>,
    opened: Condvar,
}

/// A barrier that a panicking rank can break (std's `Barrier` cannot).
struct Gate {
    arrived: usize,
    /// How many times every rank has come through.
    generation: u64,
    abandoned: bool,
}

impl Shared {
    fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until every rank has come here; panics if a rank has
    /// abandoned the others.
    fn wait(&self) {
        let mut gate = self.gate();
        let generation = gate.generation;
        gate.arrived += 1;
        if gate.arrived == self.size {
            gate.arrived = 0;
            gate.generation += 1;
            self.opened.notify_all();
            return;
        }
        while gate.generation == generation && !gate.abandoned {
            gate = self.opened.wait(gate).unwrap_or_else(|e| e.into_inner());
        }
        assert!(
            gate.generation != generation,
            "another rank panicked while this one waited for it"
        );
    }
}

impl ThreadComm {
    pub fn ranks(size: usize) -> Vec<ThreadComm> {
        let shared = Arc::new(Shared {
            size,
            posted: Mutex::new(vec![Vec::new(); size]),
            gate: Mutex::new(Gate {
                arrived: 0,
                generation: 0,
                abandoned: false,
            }),
            opened: Condvar::new(),
        });
        (0..size)
            .map(|rank| ThreadComm {
                rank,
                shared: shared.clone(),
            })
            .collect()
    }
}

impl Drop for ThreadComm {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.gate().abandoned = true;
            self.shared.opened.notify_all();
        }
    }
}

impl Comm for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.size
    }
    fn alltoall(&self, to: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        assert_eq!(
            to.len(),
            self.shared.size,
            "alltoall needs one message per rank"
        );
        let lock = || self.shared.posted.lock().unwrap_or_else(|e| e.into_inner());
        lock()[self.rank] = to;
        // Everyone has posted; take ours; everyone has taken before the
        // next operation posts again.
        self.shared.wait();
        let got = {
            let mut posted = lock();
            (0..self.shared.size)
                .map(|r| std::mem::take(&mut posted[r][self.rank]))
                .collect()
        };
        self.shared.wait();
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank that panics releases the others with a panic of their own,
    /// so a failing test of ranks on threads fails rather than hangs.
    #[test]
    fn a_panicking_rank_does_not_leave_the_others_waiting() {
        let outcomes: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadComm::ranks(3)
                .into_iter()
                .map(|comm| {
                    s.spawn(move || {
                        comm.barrier();
                        assert_ne!(comm.rank(), 1, "rank 1 fails");
                        comm.barrier();
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().is_ok()).collect()
        });
        assert_eq!(outcomes, [false, false, false]);
    }
}
