//! `Comm` over MPI (feature `mpi`): thin bindings to the system's Open MPI
//! (Debian's `libopenmpi-dev`; 4.x, whose handles are the addresses of
//! its predefined objects, as its `mpi.h` defines them). Every call comes
//! from the thread that initialised MPI (MPI_THREAD_FUNNELED).

use super::comm::{exchange_by_alltoall, Comm};
use super::shared_memory::{Sent, SharedExchange};
use crate::error::{Error, Result};
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

type Handle = *mut c_void;

#[link(name = "mpi")]
extern "C" {
    static mut ompi_mpi_comm_world: u8;
    static mut ompi_mpi_byte: u8;
    fn MPI_Init_thread(
        argc: *mut c_int,
        argv: *mut *mut *mut std::ffi::c_char,
        required: c_int,
        provided: *mut c_int,
    ) -> c_int;
    fn MPI_Finalize() -> c_int;
    fn MPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int;
    fn MPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int;
    fn MPI_Alltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle,
    ) -> c_int;
    fn MPI_Abort(comm: Handle, errorcode: c_int) -> c_int;
    fn MPI_Isend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int;
    fn MPI_Irecv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int;
    fn MPI_Waitall(count: c_int, requests: *mut Handle, statuses: *mut c_void) -> c_int;
}

const MPI_THREAD_FUNNELED: c_int = 1;

fn world() -> Handle {
    // Only the address of Open MPI's predefined communicator (what
    // MPI_COMM_WORLD expands to); it is never read here.
    std::ptr::addr_of_mut!(ompi_mpi_comm_world) as Handle
}

fn byte() -> Handle {
    // As `world`, for MPI_BYTE.
    std::ptr::addr_of_mut!(ompi_mpi_byte) as Handle
}

/// The ranks of `mpirun`, from the environment Open MPI gives them.
pub fn launched_by_mpirun() -> bool {
    std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some()
}

/// This process's rank among those of its host (which GPU it takes).
pub fn local_rank() -> usize {
    std::env::var("OMPI_COMM_WORLD_LOCAL_RANK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Set (to anything) to send the trees through MPI even where the ranks
/// share a host.
pub const NO_SHARED_MEMORY: &str = "WEBGRAV_NO_SHARED_MEMORY";

/// MPI_COMM_WORLD. Finalises MPI when dropped.
pub struct MpiComm {
    rank: usize,
    size: usize,
    /// The ranks' segments in shared memory, where they all run on one
    /// host: `exchange` goes through them.
    shared: Mutex<Option<SharedExchange>>,
}

impl MpiComm {
    /// Initialises MPI. Once per process.
    pub fn init() -> Result<Self> {
        let (mut provided, mut rank, mut size) = (0, 0, 0);
        // SAFETY: MPI_Init_thread accepts null argc/argv; the out-pointers
        // are valid for the call.
        let ok = unsafe {
            MPI_Init_thread(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                MPI_THREAD_FUNNELED,
                &mut provided,
            ) == 0
                && MPI_Comm_rank(world(), &mut rank) == 0
                && MPI_Comm_size(world(), &mut size) == 0
        };
        if !ok || provided < MPI_THREAD_FUNNELED {
            return Err(Error::InvalidParameter(
                "MPI did not start (MPI_Init_thread with MPI_THREAD_FUNNELED)".into(),
            ));
        }
        let comm = Self {
            rank: rank as usize,
            size: size as usize,
            shared: Mutex::new(None),
        };
        if comm.size > 1 && std::env::var_os(NO_SHARED_MEMORY).is_none() {
            match SharedExchange::open(&comm) {
                Ok(shared) => *comm.shared_exchange() = Some(shared),
                Err(why) => comm.say_through_mpi(&why),
            }
        }
        Ok(comm)
    }

    fn shared_exchange(&self) -> std::sync::MutexGuard<'_, Option<SharedExchange>> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Says once why the trees travel through MPI.
    fn say_through_mpi(&self, why: &str) {
        if self.rank == 0 {
            eprintln!("webgrav: the trees travel through MPI: {why}");
        }
    }

    /// Ends every rank of the run (after an error on this one, whose
    /// partners would otherwise wait for it forever).
    pub fn abort(&self, code: i32) -> ! {
        // SAFETY: a plain call on the world communicator.
        unsafe {
            MPI_Abort(world(), code);
        }
        std::process::exit(code)
    }

    fn check(&self, code: c_int, what: &str) {
        // Open MPI's default handler aborts on errors; a code that still
        // comes back is fatal all the same.
        if code != 0 {
            eprintln!(
                "webgrav: {what} failed on rank {} (MPI error {code})",
                self.rank
            );
            self.abort(1);
        }
    }
}

impl Drop for MpiComm {
    fn drop(&mut self) {
        // SAFETY: MPI was initialised by `init`, and is finalised once.
        unsafe {
            MPI_Finalize();
        }
    }
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    /// Where any rank sends SHARED_FROM bytes or more, through the shared
    /// segments (if the ranks have them). Otherwise each message goes
    /// straight from its vector to its receiver's (MPI point to point, no
    /// staging copy), in pieces of at most MESSAGE_PIECE bytes, since MPI
    /// counts are C ints (a decomposition moves gigabytes at 10^8
    /// particles per rank).
    fn alltoall(&self, mut to: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let p = self.size;
        assert_eq!(to.len(), p, "alltoall needs one message per rank");
        let sent: Vec<u64> = to.iter().map(|m| m.len() as u64).collect();
        let (got, most_sent) = self.alltoall_words(&sent);
        // Large ones (a decomposition's migrants, a file's sort by id)
        // through the shared segments where the ranks have them: every
        // rank decides alike, from the largest any rank sends. (Size first:
        // the segments' own small alltoalls come here while they are
        // locked.)
        if most_sent >= SHARED_FROM {
            let mut shared = self.shared_exchange();
            let pieces: Vec<Vec<&[u8]>> = to.iter().map(|m| vec![m.as_slice()]).collect();
            if let Some(sent) = self.shared_send(&mut shared, &pieces) {
                // The messages are in the segment: freed before the
                // receiver's copies are made, so the largest exchanges
                // are not held three times.
                drop(pieces);
                drop(to);
                let mut received = Vec::new();
                let segments = shared.as_mut().expect("sent through them");
                segments.receive(self, sent, &mut |incoming| {
                    received = incoming.iter().map(|m| copied(m)).collect()
                });
                segments.release();
                return received;
            }
        }
        let mut received: Vec<Vec<u8>> = got
            .iter()
            .map(|&n| Vec::with_capacity(n as usize))
            .collect();
        received[self.rank] = std::mem::take(&mut to[self.rank]);
        let mut requests: Vec<Handle> = Vec::new();
        for (r, buf) in received.iter_mut().enumerate() {
            if r != self.rank {
                let base = buf.as_mut_ptr();
                self.post_pieces(
                    got[r] as usize,
                    "MPI_Irecv",
                    &mut requests,
                    |at, n, tag, request| {
                        // SAFETY: the piece lies within the vector's capacity,
                        // which outlives the request (waited for below).
                        unsafe {
                            MPI_Irecv(
                                base.add(at) as *mut c_void,
                                n,
                                byte(),
                                r as c_int,
                                tag,
                                world(),
                                request,
                            )
                        }
                    },
                );
            }
        }
        for (r, m) in to.iter().enumerate() {
            if r != self.rank {
                self.post_pieces(
                    m.len(),
                    "MPI_Isend",
                    &mut requests,
                    |at, n, tag, request| {
                        // SAFETY: the piece lies within the message, which
                        // outlives the request.
                        unsafe {
                            MPI_Isend(
                                m.as_ptr().add(at) as *const c_void,
                                n,
                                byte(),
                                r as c_int,
                                tag,
                                world(),
                                request,
                            )
                        }
                    },
                );
            }
        }
        // SAFETY: every request is a live one posted above; statuses are
        // not asked for (MPI_STATUSES_IGNORE is null in Open MPI).
        let code = unsafe {
            MPI_Waitall(
                requests.len() as c_int,
                requests.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.check(code, "MPI_Waitall");
        for (r, buf) in received.iter_mut().enumerate() {
            if r != self.rank {
                // SAFETY: the receives above filled all got[r] bytes.
                unsafe { buf.set_len(got[r] as usize) };
            }
        }
        received
    }

    fn exchange(&self, to: &[Vec<&[u8]>], take: &mut dyn FnMut(&[&[u8]])) {
        self.exchange_shared(to, take, false)
    }

    fn exchange_rare(&self, to: &[Vec<&[u8]>], take: &mut dyn FnMut(&[&[u8]])) {
        self.exchange_shared(to, take, true)
    }
}

impl MpiComm {
    /// Through the ranks' shared segments where they have them (every
    /// rank decides alike: from what they all published), unmapped after
    /// it where it was a `rare` one.
    fn exchange_shared(&self, to: &[Vec<&[u8]>], take: &mut dyn FnMut(&[&[u8]]), rare: bool) {
        let mut shared = self.shared_exchange();
        if let Some(sent) = self.shared_send(&mut shared, to) {
            let segments = shared.as_mut().expect("sent through them");
            segments.receive(self, sent, take);
            if rare {
                segments.release();
            }
            return;
        }
        drop(shared);
        exchange_by_alltoall(self, to, take)
    }

    /// `to` into the shared segments (`SharedExchange::send`); `None`
    /// where the ranks have none, or no longer: a rank that could not
    /// grow its segment turns them off on every rank.
    fn shared_send(&self, shared: &mut Option<SharedExchange>, to: &[Vec<&[u8]>]) -> Option<Sent> {
        match shared.as_mut()?.send(self, to) {
            Ok(Some(sent)) => Some(sent),
            Ok(None) => {
                *shared = None;
                self.say_through_mpi("a rank's shared segment could not grow");
                None
            }
            Err(e) => {
                eprintln!("webgrav: {e}");
                self.abort(1)
            }
        }
    }
}

/// An alltoall in which some rank sends at least this many bytes goes
/// through the shared segments (small ones, the collectives' words, go
/// point to point: the segments' own bookkeeping is such an alltoall).
const SHARED_FROM: u64 = 1 << 20;

/// A received message's own copy, made on every core.
fn copied(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; bytes.len()];
    crate::state::parallel::copy(&mut out, bytes);
    out
}

/// Bytes of one point-to-point message at most (MPI counts are C ints).
const MESSAGE_PIECE: usize = 1 << 30;

impl MpiComm {
    /// Posts one nonblocking request (`post(offset, bytes, tag, request)`,
    /// `what` in errors) per piece of at most MESSAGE_PIECE bytes of a
    /// `len`-byte message, tagged by the piece's number.
    fn post_pieces(
        &self,
        len: usize,
        what: &str,
        requests: &mut Vec<Handle>,
        mut post: impl FnMut(usize, c_int, c_int, *mut Handle) -> c_int,
    ) {
        for k in 0..len.div_ceil(MESSAGE_PIECE) {
            let at = k * MESSAGE_PIECE;
            let mut request = std::ptr::null_mut();
            let code = post(
                at,
                (len - at).min(MESSAGE_PIECE) as c_int,
                k as c_int,
                &mut request,
            );
            self.check(code, what);
            requests.push(request);
        }
    }

    /// `sent[r]` to rank r; what every rank sent here, and the most bytes
    /// any rank sends the others (one MPI_Alltoall of 16 bytes a rank).
    fn alltoall_words(&self, sent: &[u64]) -> (Vec<u64>, u64) {
        let p = self.size;
        assert_eq!(sent.len(), p, "a word for every rank");
        let leaving: u64 = sent.iter().sum::<u64>() - sent[self.rank];
        let words: Vec<[u64; 2]> = sent.iter().map(|&s| [s, leaving]).collect();
        let mut got = vec![[0u64; 2]; p];
        // SAFETY: both buffers hold p pairs of u64s, 16 bytes to and from
        // each rank.
        let code = unsafe {
            MPI_Alltoall(
                words.as_ptr() as *const c_void,
                16,
                byte(),
                got.as_mut_ptr() as *mut c_void,
                16,
                byte(),
                world(),
            )
        };
        self.check(code, "MPI_Alltoall");
        let most = got.iter().map(|w| w[1]).max().unwrap_or(0);
        (got.iter().map(|w| w[0]).collect(), most)
    }
}
