//! The host memory a run takes (native): the bound per particle that
//! `webgrav info` states and runs are refused by, and the measurement of
//! a process's peak (Linux: `/proc/self/status`), which `webgrav run`
//! reports and `tests/host_memory.rs` holds to the bound.

use crate::error::{Error, Result};
use crate::run::SolverKind;

/// Host memory a leapfrog run (tree or direct) takes per particle at
/// most, beyond its input file: the ids and kinds (9), the last good state
/// that each read-out reuses (45, `Run::readout`), a read-out's forces,
/// potentials and upload index (24); the model before it, generated in
/// f64 and converted piece by piece (`Realization::into_particles`, 60).
/// Checkpoints stream from the GPU to the file (`Run::write_checkpoint`)
/// and add a few MiB whatever the N. Measured 88.2 bytes per particle at
/// 2^25 and 82.8 at 2^27 − 1, a checkpoint and `--out` written, on the H100
/// host, the NVIDIA driver's own memory included (BENCHMARKS.md). Held
/// step by step by `tests/host_memory.rs`.
pub const HOST_BYTES_PER_PARTICLE: u64 = 100;

/// The same for the Hermite integrators, whose f64 bodies (176 bytes
/// each) live on the host and are copied into every read-out.
pub const HERMITE_HOST_BYTES_PER_PARTICLE: u64 = 512;

/// Host bytes per particle a run of `solver` takes at most.
pub fn host_bytes_per_particle(solver: SolverKind) -> u64 {
    if solver.is_hermite() {
        HERMITE_HOST_BYTES_PER_PARTICLE
    } else {
        HOST_BYTES_PER_PARTICLE
    }
}

/// A `kB` figure of a `/proc` file's line `key:`, in bytes.
fn proc_kb(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// The memory the host has available for a new run (Linux:
/// `MemAvailable`; `None` elsewhere).
pub fn available_bytes() -> Option<u64> {
    proc_kb("/proc/meminfo", "MemAvailable:")
}

/// The process's peak resident memory so far (Linux: `VmHWM`; `None`
/// elsewhere).
pub fn peak_resident_bytes() -> Option<u64> {
    proc_kb("/proc/self/status", "VmHWM:")
}

/// The largest N a run of `solver` fits in the host's available memory.
pub fn host_max_particles(solver: SolverKind) -> Option<u64> {
    available_bytes().map(|b| b / host_bytes_per_particle(solver))
}

/// Refuses an N whose run of `solver` would not fit in the memory the
/// host has available, before anything is generated (nothing is checked
/// where the host does not tell).
pub fn check_host_memory(n: u64, solver: SolverKind) -> Result<()> {
    let per = host_bytes_per_particle(solver);
    match available_bytes() {
        Some(bytes) if n.saturating_mul(per) > bytes => Err(Error::TooManyParticles {
            n,
            max: bytes / per,
            reason: format!(
                "a {} run takes up to {per} bytes of host memory per particle and {} MiB are \
                 available",
                solver.name(),
                bytes >> 20
            ),
        }),
        _ => Ok(()),
    }
}
