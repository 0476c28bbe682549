//! The crate's one error type: every failure a user can cause or meet.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// No GPU adapter at all (no driver, or a browser without WebGPU).
    #[error("no GPU adapter found: {0}")]
    NoAdapter(String),
    /// An adapter was found but it cannot run webgrav's kernels.
    #[error("GPU adapter '{adapter}' is insufficient: {reason}")]
    AdapterInsufficient { adapter: String, reason: String },
    #[error("could not open the GPU device: {0}")]
    DeviceRequest(String),
    /// The requested N does not fit the device's buffer limits.
    #[error("N = {n} particles exceeds this device's limit of {max} ({reason})")]
    TooManyParticles { n: u64, max: u64, reason: String },
    /// The device could not allocate what the run needs: its memory ran
    /// out (the binding limits, checked before, allowed the N).
    #[error("the GPU ran out of memory for N = {n} particles ({reason})")]
    DeviceOutOfMemory { n: u64, reason: String },
    /// The device refused a command (a wgpu validation error) that the
    /// checks before it did not foresee.
    #[error("the GPU refused the work: {0}")]
    DeviceRefused(String),
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    #[error("GPU read-back failed: {0}")]
    Readback(String),
    #[error("snapshot {path}: {problem}")]
    BadSnapshot { path: String, problem: String },
    /// A particle's state became NaN or infinite during a run.
    #[error("particle {particle} has a non-finite {what} at t = {time}; the run stopped")]
    NonFinite {
        particle: u64,
        what: &'static str,
        time: f64,
    },
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// A stable name of the kind of error, for front ends that branch on
    /// it (the page's JavaScript gets it as `error.kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::NoAdapter(_) => "no-adapter",
            Error::AdapterInsufficient { .. } => "adapter-insufficient",
            Error::DeviceRequest(_) => "device-request",
            Error::TooManyParticles { .. } => "too-many-particles",
            Error::DeviceOutOfMemory { .. } => "device-out-of-memory",
            Error::DeviceRefused(_) => "device-refused",
            Error::InvalidParameter(_) => "invalid-parameter",
            Error::Readback(_) => "readback",
            Error::BadSnapshot { .. } => "bad-snapshot",
            Error::NonFinite { .. } => "non-finite",
            Error::Io { .. } => "io",
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
