//! Snapshots: Tipsy binary (read/write, standard big-endian and Bonsai's
//! little-endian flavour) and CSV. Readers take bytes and return clear
//! errors, never panic; file writes are atomic (temporary file + rename), so
//! a failed write leaves no half-written file behind.

pub mod csv;
pub mod tipsy;

use crate::error::{Error, Result};
use crate::state::Particles;

/// A particle state at one time, as stored in a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Simulated time (N-body units).
    pub time: f64,
    pub particles: Particles,
    /// Softening written into Tipsy's per-particle eps field.
    pub softening: f32,
    /// Per-particle potentials, written into Tipsy's phi field when present.
    pub potential: Option<Vec<f32>>,
}

/// File formats webgrav reads and writes, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Standard Tipsy (XDR, big-endian), as pynbody and tipsy tools read.
    Tipsy,
    /// Bonsai's native little-endian Tipsy with 64-bit ids (version 2).
    TipsyBonsai,
    Csv,
}

impl Format {
    /// The format implied by a file name: `.tipsy`/`.std`/`.bin` → Tipsy,
    /// `.bonsai` → Bonsai's Tipsy flavour, `.csv` → CSV.
    pub fn from_path(path: &str) -> Result<Self> {
        let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("tipsy" | "std" | "bin") => Ok(Format::Tipsy),
            Some("bonsai") => Ok(Format::TipsyBonsai),
            Some("csv") => Ok(Format::Csv),
            _ => Err(Error::InvalidParameter(format!(
                "cannot tell the snapshot format of '{path}': use .tipsy, .bonsai or .csv"
            ))),
        }
    }

    /// The snapshot encoded in this format.
    pub fn encode(self, snap: &Snapshot) -> Vec<u8> {
        match self {
            Format::Tipsy => tipsy::encode(snap, tipsy::Flavor::Standard),
            Format::TipsyBonsai => tipsy::encode(snap, tipsy::Flavor::Bonsai),
            Format::Csv => csv::encode(snap),
        }
    }

    /// Parses `bytes`; `name` appears in error messages.
    pub fn decode(self, bytes: &[u8], name: &str) -> Result<Snapshot> {
        match self {
            Format::Tipsy | Format::TipsyBonsai => tipsy::decode(bytes, name),
            Format::Csv => csv::decode(bytes, name),
        }
    }
}

pub(crate) fn bad(name: &str, problem: impl Into<String>) -> Error {
    Error::BadSnapshot {
        path: name.to_string(),
        problem: problem.into(),
    }
}

/// Checks a decoded snapshot with the same rules as every solver input.
pub(crate) fn checked(snap: Snapshot, name: &str) -> Result<Snapshot> {
    snap.particles.validate().map_err(|p| bad(name, p))?;
    Ok(snap)
}

/// Reads a snapshot file, the format chosen by its extension.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_file(path: &str) -> Result<Snapshot> {
    let format = Format::from_path(path)?;
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_string(),
        source,
    })?;
    format.decode(&bytes, path)
}

/// Writes a snapshot file atomically, the format chosen by its extension.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_file(path: &str, snap: &Snapshot) -> Result<()> {
    let format = Format::from_path(path)?;
    write_atomic(path, &format.encode(snap))
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, then renames
/// it over `path`: readers see the old file or the whole new one.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_atomic(path: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let io = |source| Error::Io {
        path: path.to_string(),
        source,
    };
    let target = std::path::Path::new(path);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let file_name = target
        .file_name()
        .ok_or_else(|| Error::InvalidParameter(format!("'{path}' is not a file name")))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}
