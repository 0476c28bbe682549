//! `Comm` over MPI (feature `mpi`): thin bindings to the system's Open MPI
//! (Debian's `libopenmpi-dev`; 4.x, whose handles are the addresses of
//! its predefined objects, as its `mpi.h` defines them). Every call comes
//! from the thread that initialised MPI (MPI_THREAD_FUNNELED).

use super::comm::Comm;
use crate::error::{Error, Result};
use std::ffi::{c_int, c_void};

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
    fn MPI_Alltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: Handle,
        comm: Handle,
    ) -> c_int;
    fn MPI_Abort(comm: Handle, errorcode: c_int) -> c_int;
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

/// MPI_COMM_WORLD. Finalises MPI when dropped.
pub struct MpiComm {
    rank: usize,
    size: usize,
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
        Ok(Self {
            rank: rank as usize,
            size: size as usize,
        })
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

    /// In rounds of at most `i32::MAX / size` bytes per pair, since MPI
    /// counts and displacements are C ints (a decomposition moves
    /// gigabytes at 10^8 particles per rank).
    fn alltoall(&self, to: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let p = self.size;
        assert_eq!(to.len(), p, "alltoall needs one message per rank");
        let sent: Vec<u64> = to.iter().map(|m| m.len() as u64).collect();
        let got = self.alltoall_words(&sent);
        let chunk = (i32::MAX as u64 / p as u64).min(1 << 28);
        let most = sent.iter().chain(&got).copied().max().unwrap_or(0);
        // Every rank must run the same number of rounds.
        let most = self
            .alltoall_words(&vec![most; p])
            .into_iter()
            .max()
            .unwrap_or(0);
        let rounds = most.div_ceil(chunk);
        let mut received: Vec<Vec<u8>> = got
            .iter()
            .map(|&n| Vec::with_capacity(n as usize))
            .collect();
        for round in 0..rounds {
            let part = |len: u64| {
                let start = (round * chunk).min(len);
                (start, (len - start).min(chunk))
            };
            // Never an empty vector's dangling pointer: Open MPI's
            // MPI_IN_PLACE is the address 1, which an empty Vec<u8> has.
            let mut send_buf = Vec::with_capacity(1 + p * chunk.min(most) as usize);
            let (mut scounts, mut sdispls) = (vec![0 as c_int; p], vec![0 as c_int; p]);
            for (r, m) in to.iter().enumerate() {
                let (start, len) = part(m.len() as u64);
                sdispls[r] = send_buf.len() as c_int;
                scounts[r] = len as c_int;
                send_buf.extend_from_slice(&m[start as usize..(start + len) as usize]);
            }
            let (mut rcounts, mut rdispls) = (vec![0 as c_int; p], vec![0 as c_int; p]);
            let mut total = 0u64;
            for r in 0..p {
                let (_, len) = part(got[r]);
                rdispls[r] = total as c_int;
                rcounts[r] = len as c_int;
                total += len;
            }
            let mut recv_buf = vec![0u8; total as usize + 1];
            // SAFETY: counts and displacements lie within both buffers.
            let code = unsafe {
                MPI_Alltoallv(
                    send_buf.as_ptr() as *const c_void,
                    scounts.as_ptr(),
                    sdispls.as_ptr(),
                    byte(),
                    recv_buf.as_mut_ptr() as *mut c_void,
                    rcounts.as_ptr(),
                    rdispls.as_ptr(),
                    byte(),
                    world(),
                )
            };
            self.check(code, "MPI_Alltoallv");
            for r in 0..p {
                let at = rdispls[r] as usize;
                received[r].extend_from_slice(&recv_buf[at..at + rcounts[r] as usize]);
            }
        }
        received
    }
}

impl MpiComm {
    /// `sent[r]` to rank r; what every rank sent here (one MPI_Alltoall
    /// of 8 bytes a rank).
    fn alltoall_words(&self, sent: &[u64]) -> Vec<u64> {
        let p = self.size;
        assert_eq!(sent.len(), p, "a word for every rank");
        let mut got = vec![0u64; p];
        // SAFETY: both buffers hold p u64s, 8 bytes to and from each rank.
        let code = unsafe {
            MPI_Alltoall(
                sent.as_ptr() as *const c_void,
                8,
                byte(),
                got.as_mut_ptr() as *mut c_void,
                8,
                byte(),
                world(),
            )
        };
        self.check(code, "MPI_Alltoall");
        got
    }
}
