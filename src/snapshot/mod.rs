//! Snapshots: Tipsy binary (read/write, standard big-endian and Bonsai's
//! little-endian flavour, with ids in a `.iord` side file for standard
//! Tipsy), CSV, Gadget-2 and HDF5 in GADGET-4's and SWIFT's layouts. Readers take bytes and return clear errors, never panic;
//! file writes (`file`, native) are atomic (temporary file + rename), so a
//! failed or interrupted write leaves no half-written file behind.

pub mod csv;
#[cfg(not(target_arch = "wasm32"))]
mod file;
pub mod gadget;
pub mod hdf5;
pub mod iord;
#[cfg(not(target_arch = "wasm32"))]
pub mod parted;
#[cfg(not(target_arch = "wasm32"))]
mod progress;
pub mod tipsy;
#[cfg(not(target_arch = "wasm32"))]
mod write_behind;

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
    /// Per-particle type where the file has them (Gadget-2's: 0 gas, 1
    /// halo, 2 disk, 3 bulge, 4 stars, 5 boundary).
    pub types: Option<Vec<u8>>,
}

/// One process's share of a snapshot file, as each rank of a parallel
/// run reads its input (`read_share`): the particles n·r/P up to
/// n·(r + 1)/P of the file's n (a CSV file's: the rows in its part of the
/// bytes), each with its kind, at the file's time (no softening or
/// potentials: a run's input does not need them).
pub struct FileShare {
    pub snap: Snapshot,
    /// The file's particles (a CSV share's own until `place`).
    pub n: usize,
    /// Whether this share alone shows that the file tells kinds apart (a
    /// Tipsy file of one kind of record is typed where any particle
    /// carries Bonsai's id ranges, which another share may hold).
    pub typed: bool,
    /// A CSV share, whose rows only their read finds: where it lies in
    /// the file is known once every share's count is (`place`).
    pub counted: Option<Counted>,
}

/// A share of a CSV file before it is placed among the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    /// Whether its ids are its rows' numbers (the file has no id column).
    pub ids_by_row: bool,
}

impl FileShare {
    /// Places a counted share (a CSV file's) in the file: `before`
    /// particles in the shares before it, `n` in all. Ids that number
    /// the rows follow the earlier shares'. A placed share is left as it is.
    pub fn place(&mut self, before: usize, n: usize) {
        if let Some(counted) = self.counted.take() {
            if counted.ids_by_row {
                for id in &mut self.snap.particles.id {
                    *id += before as u64;
                }
            }
            self.n = n;
        }
    }
}

impl Snapshot {
    /// The particles at `keep` (indices into this snapshot), in that
    /// order, with their potentials and kinds.
    pub fn subset(&self, keep: &[usize]) -> Snapshot {
        let p = &self.particles;
        Snapshot {
            time: self.time,
            softening: self.softening,
            particles: Particles {
                pos_mass: keep.iter().map(|&k| p.pos_mass[k]).collect(),
                vel: keep.iter().map(|&k| p.vel[k]).collect(),
                id: keep.iter().map(|&k| p.id[k]).collect(),
            },
            potential: (self.potential.as_ref()).map(|v| keep.iter().map(|&k| v[k]).collect()),
            types: (self.types.as_deref())
                .filter(|t| t.len() == p.len())
                .map(|t| keep.iter().map(|&k| t[k]).collect()),
        }
    }

    /// This snapshot (named `name`) with the other processes' `parts` of
    /// it, each read or decoded and named (a run on several ranks writes
    /// one per rank, named as Bonsai names them, `snap_TTTTT.TTTT-R`):
    /// their particles after ours, at the time they must share, the
    /// whole checked as one snapshot.
    pub fn join_parts<'a>(
        mut self,
        name: &str,
        parts: impl IntoIterator<Item = (Result<Snapshot>, &'a str)>,
    ) -> Result<Snapshot> {
        for (part, part_name) in parts {
            self.join_part(part?, part_name)?;
        }
        self.particles
            .validate()
            .map_err(|e| Error::InvalidParameter(format!("{name} and its parts: {e}")))?;
        Ok(self)
    }

    /// Appends `part` (named `name`): its particles after ours, at the
    /// time they must share.
    fn join_part(&mut self, part: Snapshot, name: &str) -> Result<()> {
        if part.time != self.time {
            return Err(Error::InvalidParameter(format!(
                "{name} is at t = {}, but the first part is at t = {}: not parts of one snapshot",
                part.time, self.time
            )));
        }
        let (n_all, n_part) = (self.particles.len(), part.particles.len());
        let all = &mut self.particles;
        all.pos_mass.extend(part.particles.pos_mass);
        all.vel.extend(part.particles.vel);
        all.id.extend(part.particles.id);
        self.potential = match (self.potential.take(), part.potential) {
            (Some(mut a), Some(b)) => {
                a.extend(b);
                Some(a)
            }
            _ => None,
        };
        self.types = match (self.types.take(), part.types) {
            (None, None) => None,
            (a, b) => {
                // One part typed, another not: untyped ones are stars.
                let mut t = a.unwrap_or_else(|| vec![4; n_all]);
                t.extend(b.unwrap_or_else(|| vec![4; n_part]));
                Some(t)
            }
        };
        Ok(())
    }
}

/// File formats webgrav reads and writes, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Standard Tipsy (XDR, big-endian), as pynbody and tipsy tools read.
    Tipsy,
    /// Bonsai's native little-endian Tipsy with 64-bit ids (version 2).
    TipsyBonsai,
    Csv,
    /// Gadget-2, format 1 written (formats 1 and 2 read).
    Gadget,
    /// HDF5 in GADGET-4's or SWIFT's layout (either read, told apart by
    /// content; the layout given is the one written).
    Hdf5(hdf5::Layout),
}

impl Format {
    /// Whether the format stores particle ids itself (standard Tipsy keeps
    /// them in a `.iord` side file instead).
    pub fn stores_ids(self) -> bool {
        matches!(
            self,
            Format::TipsyBonsai | Format::Csv | Format::Gadget | Format::Hdf5(_)
        )
    }

    /// The format implied by a file name: `.tipsy`/`.std`/`.bin` → Tipsy,
    /// `.bonsai` → Bonsai's Tipsy flavour, `.csv` → CSV, `.gadget`/`.g2` →
    /// Gadget-2, `.hdf5`/`.h5` → HDF5 in GADGET-4's layout.
    pub fn from_path(path: &str) -> Result<Self> {
        let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("tipsy" | "std" | "bin") => Ok(Format::Tipsy),
            Some("bonsai") => Ok(Format::TipsyBonsai),
            Some("csv") => Ok(Format::Csv),
            Some("gadget" | "g2") => Ok(Format::Gadget),
            Some("hdf5" | "h5") => Ok(Format::Hdf5(hdf5::Layout::Gadget4)),
            _ => Err(Error::InvalidParameter(format!(
                "cannot tell the snapshot format of '{path}': use .tipsy, .bonsai, .csv, \
                 .gadget or .hdf5"
            ))),
        }
    }

    /// The format a user names (`--snap-format`, `convert --to`): exactly
    /// one of `NAMES` (an extension, or an HDF5 layout), so no alias or
    /// other case slips through undocumented.
    pub fn named(name: &str) -> Result<Self> {
        match name {
            "gadget4-hdf5" | "hdf5" => Ok(Format::Hdf5(hdf5::Layout::Gadget4)),
            "swift-hdf5" => Ok(Format::Hdf5(hdf5::Layout::Swift)),
            "tipsy" => Ok(Format::Tipsy),
            "bonsai" => Ok(Format::TipsyBonsai),
            "csv" => Ok(Format::Csv),
            "gadget" => Ok(Format::Gadget),
            _ => Err(Error::InvalidParameter(format!(
                "unknown snapshot format '{name}': use {}",
                Self::NAMES.join(", ")
            ))),
        }
    }

    /// The names `named` takes (hdf5 is GADGET-4's layout).
    pub const NAMES: [&'static str; 7] = [
        "tipsy",
        "bonsai",
        "csv",
        "gadget",
        "hdf5",
        "gadget4-hdf5",
        "swift-hdf5",
    ];

    /// The name `named` takes for this format.
    pub fn name(self) -> &'static str {
        match self {
            Format::Hdf5(layout) => layout.name(),
            f => f.extension(),
        }
    }

    /// The file extension webgrav gives this format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Tipsy => "tipsy",
            Format::TipsyBonsai => "bonsai",
            Format::Csv => "csv",
            Format::Gadget => "gadget",
            Format::Hdf5(_) => "hdf5",
        }
    }

    /// The snapshot encoded in this format, or an error where the format
    /// cannot hold its ids (Bonsai's id ranges) rather than other ids.
    pub fn encode(self, snap: &Snapshot) -> Result<Vec<u8>> {
        match self {
            Format::Tipsy => tipsy::encode(snap, tipsy::Flavor::Standard),
            Format::TipsyBonsai => tipsy::encode(snap, tipsy::Flavor::Bonsai),
            Format::Csv => Ok(csv::encode(snap)),
            Format::Gadget => Ok(gadget::encode(snap)),
            #[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
            Format::Hdf5(layout) => hdf5::encode(snap, layout),
            #[cfg(not(all(feature = "hdf5", not(target_arch = "wasm32"))))]
            Format::Hdf5(_) => Err(no_hdf5("HDF5")),
        }
    }

    /// The snapshot's bytes in this format into `out`, a piece at a time
    /// (a file of any size without a copy of it in memory), once `check`
    /// has accepted its ids.
    pub fn write_to(
        self,
        snap: &Snapshot,
        out: &mut (impl std::io::Write + ?Sized),
    ) -> std::io::Result<()> {
        match self {
            Format::Tipsy => tipsy::write_to(snap, tipsy::Flavor::Standard, out),
            Format::TipsyBonsai => tipsy::write_to(snap, tipsy::Flavor::Bonsai, out),
            Format::Csv => csv::write_to(snap, out),
            Format::Gadget => gadget::write_to(snap, out),
            // The HDF5 library writes files by name: through a scratch file.
            Format::Hdf5(_) => {
                let bytes = self.encode(snap).map_err(std::io::Error::other)?;
                out.write_all(&bytes)
            }
        }
    }

    /// Refuses, before any work, particles (their ids and kinds) this
    /// format cannot hold as they are (ids beyond Bonsai's ranges); what
    /// `encode` would refuse.
    pub fn check(self, ids: &[u64], types: Option<&[u8]>) -> Result<()> {
        match self {
            Format::TipsyBonsai => tipsy::check_bonsai_ids(ids, types),
            _ => Ok(()),
        }
    }

    /// The Tipsy flavour this format writes (`None`: not Tipsy).
    pub fn tipsy_flavor(self) -> Option<tipsy::Flavor> {
        match self {
            Format::Tipsy => Some(tipsy::Flavor::Standard),
            Format::TipsyBonsai => Some(tipsy::Flavor::Bonsai),
            _ => None,
        }
    }

    /// Parses `bytes`; `name` appears in error messages.
    pub fn decode(self, bytes: &[u8], name: &str) -> Result<Snapshot> {
        match self {
            Format::Tipsy | Format::TipsyBonsai => tipsy::decode(bytes, name),
            Format::Csv => csv::decode(bytes, name),
            Format::Gadget => gadget::decode(bytes, name),
            #[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
            Format::Hdf5(_) => hdf5::decode(bytes, name),
            #[cfg(not(all(feature = "hdf5", not(target_arch = "wasm32"))))]
            Format::Hdf5(_) => Err(no_hdf5(name)),
        }
    }

    /// The format of the file `name` whose first bytes are `head`: HDF5
    /// by its signature whatever its name, else by its extension, else by
    /// its content (`detect`).
    pub fn identify(name: &str, head: &[u8]) -> Result<Self> {
        if hdf5::is_hdf5(head) {
            return Ok(Format::Hdf5(hdf5::Layout::Gadget4));
        }
        if let Ok(Format::Hdf5(_)) = Format::from_path(name) {
            return Format::detect(head).ok_or_else(|| {
                bad(
                    name,
                    "named as HDF5, but it does not start with HDF5's signature",
                )
            });
        }
        Format::from_path(name).or_else(|_| {
            Format::detect(head).ok_or_else(|| {
                bad(
                    name,
                    "not a snapshot webgrav knows by its name (.tipsy, .bonsai, .csv, \
                     .gadget, .hdf5) or its content (tried Tipsy's header, Gadget-2's first \
                     record, a CSV header, HDF5's signature)",
                )
            })
        })
    }

    /// The format of a file by its first bytes (at least 32, where the
    /// file has them): files of Bonsai and Gadget often carry no
    /// extension. Bonsai's Tipsy flavour reads as Tipsy, SWIFT's HDF5 as
    /// HDF5 (the readers tell them apart).
    pub fn detect(head: &[u8]) -> Option<Self> {
        if hdf5::is_hdf5(head) {
            Some(Format::Hdf5(hdf5::Layout::Gadget4))
        } else if tipsy::announced_len(head).is_some() {
            Some(Format::Tipsy)
        } else if gadget::is_gadget(head) {
            Some(Format::Gadget)
        } else if csv::looks_like(head) {
            Some(Format::Csv)
        } else {
            None
        }
    }
}

/// Refuses, before a run, an output `path` (if any) whose format cannot
/// hold particles of these ids and kinds (which a run does not change).
pub fn check_writable(path: Option<&str>, ids: &[u64], types: Option<&[u8]>) -> Result<()> {
    match path {
        Some(path) => Format::from_path(path)?.check(ids, types),
        None => Ok(()),
    }
}

/// The refusal of an HDF5 file by a build without the HDF5 library.
#[cfg(not(all(feature = "hdf5", not(target_arch = "wasm32"))))]
fn no_hdf5(name: &str) -> Error {
    bad(
        name,
        "HDF5 needs the HDF5 library (the native build's `hdf5` feature; the page reads \
         HDF5 with h5wasm)",
    )
}

/// An I/O failure on the file `path` (a snapshot or one of its side files).
pub(crate) fn io_error(path: &str, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_string(),
        source,
    }
}

pub(crate) fn bad(name: &str, problem: impl Into<String>) -> Error {
    Error::BadSnapshot {
        path: name.to_string(),
        problem: problem.into(),
    }
}

/// A failed read of a snapshot: one that ran out of bytes is a truncated
/// file (`bad`), anything else the I/O error it is.
pub(crate) fn read_error(name: &str, source: std::io::Error) -> Error {
    match source.kind() {
        std::io::ErrorKind::UnexpectedEof => bad(name, "truncated while it was read"),
        _ => Error::Io {
            path: name.to_string(),
            source,
        },
    }
}

/// Checks a decoded snapshot with the same rules as every solver input.
pub(crate) fn checked(snap: Snapshot, name: &str) -> Result<Snapshot> {
    snap.particles.validate().map_err(|p| bad(name, p))?;
    Ok(snap)
}

#[cfg(not(target_arch = "wasm32"))]
pub use file::{
    check_output, hold_writes, process_parts, read_file, read_one_file, read_share,
    remove_pending_temporaries, write_atomic, write_atomic_path, write_atomic_with, write_file,
    write_file_as, AtomicFile, ReadAhead, Written,
};
