//! Exchanges between ranks of one host through shared memory: each rank
//! writes what it sends into a file of its own in `/dev/shm`, which the
//! others map read-only and read in place. A message is copied once, by
//! its sender (on every core), where MPI's shared-memory transport copies
//! it twice, on one core, through small FIFOs (Open MPI's single-copy
//! mechanisms are off on the GPU hosts; BENCHMARKS.md). The receiver
//! borrows the bytes where they lie until it is done with them.
//!
//! A rank's segment only grows: a larger one is a new file (the next
//! generation), which the others map at the next exchange and whose name
//! is unlinked once they have, so nothing is left in `/dev/shm` by a run,
//! even one that is killed after that.

use super::comm::{allgather_records, Comm};
use super::staging::aligned_layout;
use crate::error::{Error, Result};
use std::ffi::CString;

/// Where the segments live (tmpfs: memory, not disk).
const DIRECTORY: &str = "/dev/shm";

/// Offsets of the messages within a segment are multiples of this (a
/// cache line; the records a receiver reads in place need 4).
const ALIGN: u64 = 64;

/// Where each message of `sizes` starts in a segment, and its end.
fn layout(sizes: &[u64]) -> (Vec<u64>, u64) {
    aligned_layout(sizes, ALIGN)
}

/// One mapping of a segment file.
struct Mapping {
    ptr: *mut u8,
    len: usize,
    generation: u64,
}

// SAFETY: the mapping is plain memory; who writes it and when is ordered
// by the exchange's barriers.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps the file at `path` (`len` bytes), writable when `write`.
    fn open(path: &str, len: usize, write: bool, generation: u64) -> std::io::Result<Self> {
        let c_path = CString::new(path).expect("no NUL in a segment's name");
        let flags = if write {
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL
        } else {
            libc::O_RDONLY
        };
        // SAFETY: plain system calls on a path we own; the descriptor is
        // closed before returning (the mapping keeps the file).
        unsafe {
            let fd = libc::open(c_path.as_ptr(), flags | libc::O_CLOEXEC, 0o600);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let result = Self::map_fd(fd, len, write);
            libc::close(fd);
            if result.is_err() && write {
                libc::unlink(c_path.as_ptr());
            }
            result.map(|ptr| Self {
                ptr,
                len,
                generation,
            })
        }
    }

    /// # Safety
    /// `fd` is an open descriptor of a regular file.
    unsafe fn map_fd(fd: libc::c_int, len: usize, write: bool) -> std::io::Result<*mut u8> {
        if write {
            // Reserved now, so a full tmpfs fails here, cleanly, and not
            // with SIGBUS at the first write into a page it cannot give.
            let code = libc::posix_fallocate(fd, 0, len as libc::off_t);
            if code != 0 {
                return Err(std::io::Error::from_raw_os_error(code));
            }
        }
        let prot = if write {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // Not populated here (MAP_POPULATE): one core faulting in
        // gigabytes is slower than the copies' cores faulting their pages.
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            len.max(1),
            prot,
            libc::MAP_SHARED,
            fd,
            0,
        );
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(ptr as *mut u8)
    }

    /// The whole mapping to write: only this rank's own segment, which
    /// nobody reads while it fills it (the exchange's barriers).
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the mapping's `len` bytes, writable (`open` with
        // `write`), borrowed through `self`, which they outlive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    fn bytes(&self, offset: u64, len: u64) -> &[u8] {
        assert!(
            offset + len <= self.len as u64,
            "a message inside its segment"
        );
        // SAFETY: within the mapping, which lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(offset as usize), len as usize) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len.max(1));
        }
    }
}

/// The most room a grown segment keeps beyond what it was grown for.
const HEADROOM: u64 = 64 << 20;

/// A segment larger than this is made anew, smaller, when an exchange
/// needs under a quarter of it.
const SHRINK_ABOVE: u64 = 256 << 20;

/// The segments of the ranks of one host.
pub struct SharedExchange {
    /// Names this run's files apart from any other's.
    token: u64,
    /// This rank's segment, written by it alone.
    own: Option<Mapping>,
    /// A generation's file that the others have yet to map (unlinked
    /// after the next barrier).
    unlink_after_barrier: Option<String>,
    /// The other ranks' segments, read-only (`None` for this rank, and
    /// for a rank that has sent nothing yet).
    peers: Vec<Option<Mapping>>,
    /// `SHRINK_ABOVE` (smaller in the tests).
    shrink_above: u64,
    /// Segments this rank has made (each a new file name).
    generations: u64,
}

/// Words each rank publishes at an exchange: whether its segment holds
/// what it sends, the segment's generation and length, then the bytes it
/// sends each rank.
const HEAD_WORDS: usize = 3;

impl SharedExchange {
    /// The shared segments of `comm`'s ranks, every rank calling; an
    /// error (the same on every rank) when they do not all run on this
    /// host or cannot use `/dev/shm`.
    pub fn open(comm: &dyn Comm) -> std::result::Result<Self, String> {
        let host = hostname();
        let hosts = comm.allgather(host.as_bytes());
        if hosts.iter().any(|h| h != host.as_bytes()) {
            return Err("the ranks run on more than one host".into());
        }
        // Rank 0's process id and clock name this run's files.
        let mine = u64::from(std::process::id()) << 32
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos() as u64);
        let token = allgather_records(comm, &[mine])[0][0];
        // Every rank must be able to make a segment.
        let probe = format!("{DIRECTORY}/webgrav-{token:016x}-{}-probe", comm.rank());
        let ok = Mapping::open(&probe, 4096, true, 0).map(drop);
        let _ = std::fs::remove_file(&probe);
        let oks = allgather_records(comm, &[ok.is_ok() as u64]);
        if let Err(e) = ok {
            return Err(format!("{DIRECTORY} is not usable: {e}"));
        }
        if let Some(r) = oks.iter().position(|o| o[0] == 0) {
            return Err(format!("{DIRECTORY} is not usable on rank {r}"));
        }
        Ok(Self {
            token,
            own: None,
            unlink_after_barrier: None,
            peers: (0..comm.size()).map(|_| None).collect(),
            shrink_above: SHRINK_ABOVE,
            generations: 0,
        })
    }

    fn path(&self, rank: usize, generation: u64) -> String {
        format!(
            "{DIRECTORY}/webgrav-{:016x}-{rank}-{generation}",
            self.token
        )
    }

    /// Sends rank r the pieces of `to[r]` laid end to end and calls `take`
    /// with what every rank sent here, in rank order, read in place; every
    /// rank calls it together. `Ok(false)` when a rank could not grow its
    /// segment (the same answer on every rank, with nothing sent): the
    /// caller sends through MPI instead.
    pub fn exchange(
        &mut self,
        comm: &dyn Comm,
        to: &[Vec<&[u8]>],
        take: &mut dyn FnMut(&[&[u8]]),
    ) -> Result<bool> {
        match self.send(comm, to)? {
            Some(sent) => {
                self.receive(comm, sent, take);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// `exchange`'s first half: once it returns, what `to` held is in this
    /// rank's segment (the caller may free it) and every rank's is in
    /// theirs. `None` when a rank could not grow its segment.
    pub fn send(&mut self, comm: &dyn Comm, to: &[Vec<&[u8]>]) -> Result<Option<Sent>> {
        let (me, p) = (comm.rank(), comm.size());
        assert_eq!(to.len(), p, "a message for every rank");
        let sizes: Vec<u64> = to
            .iter()
            .map(|m| m.iter().map(|s| s.len() as u64).sum())
            .collect();
        let (offsets, end) = layout(&sizes);
        let held = self.own.as_ref().map_or(0, |m| m.len as u64);
        // A segment grown for a rare large exchange (a decomposition's
        // migrants, a file's sort) is given back at the next small one.
        let oversized = held > self.shrink_above && end < held / 4;
        let mut fits = true;
        if end > held || oversized {
            self.generations += 1;
            let generation = self.generations;
            // Room to grow a little (the trees vary from step to step), but
            // not a quarter of gigabytes; and twice the segment it replaces
            // when it grows, since the trees grow step by step between
            // redraws and each new segment is faulted in afresh.
            let grown = if end > held { 2 * held } else { 0 };
            let len = (end + (end / 4).min(HEADROOM))
                .max(grown)
                .max(1)
                .next_multiple_of(1 << 21);
            let path = self.path(me, generation);
            // The old generation goes first: both at once would hold the
            // largest exchanges twice.
            self.own = None;
            match Mapping::open(&path, len as usize, true, generation) {
                Ok(m) => {
                    self.own = Some(m);
                    self.unlink_after_barrier = Some(path);
                }
                Err(e) => {
                    eprintln!(
                        "webgrav: rank {me} could not grow its shared segment to {len} \
                         bytes in {DIRECTORY} ({e})"
                    );
                    fits = false;
                }
            }
        }
        let own = self.own.as_ref();
        let mut words = vec![
            fits as u64,
            own.map_or(0, |m| m.generation),
            own.map_or(0, |m| m.len as u64),
        ];
        words.extend(&sizes);
        let all = allgather_records(comm, &words);
        if all.iter().any(|w| w[0] == 0) {
            if let Some(path) = self.unlink_after_barrier.take() {
                let _ = std::fs::remove_file(path);
            }
            return Ok(None);
        }
        // Map the others' new generations (before the barrier below, after
        // which their owners unlink them).
        for (r, w) in all.iter().enumerate() {
            let (generation, len) = (w[1], w[2] as usize);
            let mapped = self.peers[r].as_ref().map_or(0, |m| m.generation);
            if r != me && generation != 0 && generation != mapped {
                let path = self.path(r, generation);
                self.peers[r] = None;
                let m = Mapping::open(&path, len, false, generation).map_err(|e| {
                    Error::InvalidParameter(format!(
                        "rank {me} could not map rank {r}'s shared segment {path}: {e}"
                    ))
                })?;
                self.peers[r] = Some(m);
            }
        }
        if end > 0 {
            let own = self.own.as_mut().expect("grown above");
            fill(own, to, &offsets);
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        comm.barrier();
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if let Some(path) = self.unlink_after_barrier.take() {
            let _ = std::fs::remove_file(path);
        }
        Ok(Some(Sent { all }))
    }

    /// `exchange`'s second half: `take` reads what every rank sent here.
    pub fn receive(&mut self, comm: &dyn Comm, sent: Sent, take: &mut dyn FnMut(&[&[u8]])) {
        let me = comm.rank();
        let received: Vec<&[u8]> = sent
            .all
            .iter()
            .enumerate()
            .map(|(r, words)| {
                let sizes = &words[HEAD_WORDS..];
                let at = layout(sizes).0[me];
                let segment = if r == me {
                    self.own.as_ref()
                } else {
                    self.peers[r].as_ref()
                };
                segment.map_or(&[][..], |m| m.bytes(at, sizes[me]))
            })
            .collect();
        take(&received);
        // Nobody writes its segment again before everyone has read it.
        comm.barrier();
    }

    /// Unmaps every segment (this rank's and its view of the others'):
    /// after a rare large exchange, whose segments would otherwise be
    /// held, twice over in each rank's resident memory, until the next.
    /// Every rank calls it together, after `receive`.
    pub fn release(&mut self) {
        self.own = None;
        self.peers.iter_mut().for_each(|m| *m = None);
    }
}

/// What `send` published: every rank's head words and sizes.
pub struct Sent {
    all: Vec<Vec<u64>>,
}

/// Copies `to`'s pieces to their messages' `offsets` in `own`, each on
/// every core.
fn fill(own: &mut Mapping, to: &[Vec<&[u8]>], offsets: &[u64]) {
    let segment = own.bytes_mut();
    for (pieces, &at) in to.iter().zip(offsets) {
        let mut at = at as usize;
        for piece in pieces {
            crate::state::parallel::copy(&mut segment[at..at + piece.len()], piece);
            at += piece.len();
        }
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer's length is passed; the name is NUL-terminated
    // within it (or truncated, which is the same for every rank).
    unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len() - 1) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::comm::ThreadComm;

    /// The bytes rank `from` sends rank `to` in round `k`: sizes that grow
    /// (new generations) and shrink, some empty, in two pieces.
    fn message(from: usize, to: usize, k: usize) -> Vec<u8> {
        // Round 3 grows the segments past the tests' `shrink_above`, round
        // 4 is small again (they shrink).
        let small = [0, 5, 4096, 70_000, 3, 1 << 20][(from + 2 * to + k) % 6];
        let len = match k {
            3 if from != to => small + (3 << 20),
            4 => small % 100_000,
            _ => small * (k + 1),
        };
        (0..len)
            .map(|i| (i * 31 + from * 7 + to * 13 + k) as u8)
            .collect()
    }

    #[test]
    fn ranks_receive_what_was_sent_as_segments_grow() {
        let ranks = ThreadComm::ranks(3);
        std::thread::scope(|s| {
            for comm in ranks {
                s.spawn(move || {
                    let opened = SharedExchange::open(&comm);
                    if !std::path::Path::new(DIRECTORY).is_dir() {
                        // A host without it: the ranks go through MPI.
                        let why = opened.err().expect("refused without /dev/shm");
                        assert!(why.contains(DIRECTORY), "{why}");
                        return;
                    }
                    let mut shared = opened.expect("segments in /dev/shm");
                    shared.shrink_above = 4 << 20;
                    let me = comm.rank();
                    for k in 0..6 {
                        let sent: Vec<Vec<u8>> = (0..3).map(|r| message(me, r, k)).collect();
                        let to: Vec<Vec<&[u8]>> = sent
                            .iter()
                            .map(|m| {
                                let (a, b) = m.split_at(m.len() / 3);
                                vec![a, b]
                            })
                            .collect();
                        let mut got = Vec::new();
                        let went = shared
                            .exchange(&comm, &to, &mut |incoming| {
                                got = incoming.iter().map(|m| m.to_vec()).collect()
                            })
                            .unwrap();
                        assert!(went);
                        for (r, m) in got.iter().enumerate() {
                            assert!(*m == message(r, me, k), "round {k}, from {r} to {me}");
                        }
                        let held = shared.own.as_ref().map_or(0, |m| m.len as u64);
                        match k {
                            // Every rank lets go of its segments; the next
                            // round makes and maps them anew.
                            1 => shared.release(),
                            3 => assert!(held > 4 << 20, "grown: {held} bytes"),
                            4 => assert!(held < 4 << 20, "given back: {held} bytes"),
                            _ => {}
                        }
                    }
                    let token = shared.token;
                    drop(shared);
                    comm.barrier();
                    // Every generation's name is gone.
                    let left = std::fs::read_dir(DIRECTORY)
                        .unwrap()
                        .filter_map(|e| e.ok())
                        .filter(|e| {
                            e.file_name()
                                .to_string_lossy()
                                .contains(&format!("{token:016x}"))
                        })
                        .count();
                    assert_eq!(left, 0, "segments left in {DIRECTORY}");
                });
            }
        });
    }

    #[test]
    fn messages_start_aligned_and_never_overlap() {
        let (offsets, end) = layout(&[3, 0, 64, 65]);
        assert_eq!(offsets, vec![0, 64, 64, 128]);
        assert_eq!(end, 256);
    }
}
