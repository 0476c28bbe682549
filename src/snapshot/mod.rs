//! Snapshots: Tipsy binary (read/write, standard big-endian and Bonsai's
//! little-endian flavour, with ids in a `.iord` side file for standard
//! Tipsy) and CSV. Readers take bytes and return clear errors, never panic;
//! file writes (`file`, native) are atomic (temporary file + rename), so a
//! failed or interrupted write leaves no half-written file behind.

pub mod csv;
#[cfg(not(target_arch = "wasm32"))]
mod file;
pub mod iord;
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
    /// Whether the format stores particle ids itself (standard Tipsy keeps
    /// them in a `.iord` side file instead).
    pub fn stores_ids(self) -> bool {
        matches!(self, Format::TipsyBonsai | Format::Csv)
    }

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

#[cfg(not(target_arch = "wasm32"))]
pub use file::{
    check_output, read_file, remove_pending_temporaries, write_atomic, write_file, Written,
};
