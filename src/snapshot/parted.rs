//! One snapshot file written by several processes at once: the ranks of a
//! run each hold a part of the particles, and the parts in rank order are
//! the file's particle order. The file is what `file::write_file_as` writes
//! for the whole, byte for byte, without the whole gathered anywhere.
//!
//! A format's bytes are framing, which only the whole file's counts decide
//! (headers, block lengths; rank 0 writes it), and sections, each the
//! concatenation in rank order of every rank's bytes of it (a kind's Tipsy
//! records, a Gadget block's particles of one type, CSV rows). A section's
//! lengths are all-gathered, and every rank writes its bytes at their
//! offset in one temporary file (positioned writes: the ranks write at
//! once). Fixed-size records are encoded and written a run at a time, so
//! a rank holds one run of them; text (CSV rows, side files) is made
//! whole, as its length is known only then. After every rank
//! has synced, rank 0 renames the file into place: readers see the old
//! file or the whole new one, as with every write of webgrav's.

use super::file::{pending, resolve, temporary_named, write_lock, Written};
use super::io_error;
use super::{gadget, iord, tipsy, Format, Snapshot};
use crate::error::{Error, Result};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The processes writing one file together.
pub trait Ranks {
    fn rank(&self) -> usize;
    /// Every rank's `mine`, in rank order (every rank calls it, in the
    /// same order).
    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>>;
}

/// Whether `format` is written in parts (HDF5 is written by its library,
/// one process to a file: its parts are gathered).
pub fn writes_in_parts(format: Format) -> bool {
    !matches!(format, Format::Hdf5(_))
}

/// Writes `part`, this rank's particles (the ranks' parts in rank order
/// being the snapshot), into `path` in `format` with every other rank
/// (each calls it with its part), side files included as
/// `file::write_file_as` writes them. Every rank returns the same outcome:
/// an error on any rank (ids the format cannot hold, a failed write) is
/// every rank's. A failed write leaves the file it was writing as it was;
/// the side files are written after the snapshot, each in the same way.
pub fn write_parted(
    path: &str,
    format: Format,
    part: &Snapshot,
    ranks: &dyn Ranks,
) -> Result<Written> {
    assert!(
        writes_in_parts(format),
        "{} is not written in parts",
        format.name()
    );
    agree(
        ranks,
        format.check(&part.particles.id, part.types.as_deref()),
    )?;
    let counts = KindCounts::gather(part, ranks);
    let pieces = match format {
        Format::Tipsy | Format::TipsyBonsai => {
            let flavor = format.tipsy_flavor().expect("Tipsy");
            tipsy_pieces(part, flavor, &counts)
        }
        Format::Gadget => gadget_pieces(part, &counts, ranks),
        Format::Csv => csv_pieces(part),
        Format::Hdf5(_) => unreachable!("checked"),
    };
    write_pieces(path, pieces, ranks)?;
    let mut written = Written::default();
    if let Some(flavor) = format.tipsy_flavor() {
        tipsy_side_files(path, part, flavor, &counts, ranks, &mut written)?;
    }
    Ok(written)
}

/// A piece of a file: bytes that rank 0 writes, or a section (each rank's
/// bytes of it, made when it is written).
pub(crate) enum Piece<'a> {
    Framing(Vec<u8>),
    /// Records of `size` bytes: this rank's particles in the section
    /// (`keep`) and the bytes of a run of them (`encode`), written a run
    /// at a time.
    Records {
        size: u64,
        keep: Box<dyn Fn() -> Vec<u32> + 'a>,
        encode: RecordsOf<'a>,
    },
    /// Text of this rank's particles, made whole.
    Text(Box<dyn Fn() -> Vec<u8> + 'a>),
    /// The XXH3-64 of every byte before it, little-endian (a checkpoint's
    /// checksum): rank 0 reads the file back once every rank's bytes are
    /// in it.
    Xxh3Trailer,
}

/// The bytes of the records of some of a rank's particles (indices).
pub(crate) type RecordsOf<'a> = Box<dyn Fn(&[u32]) -> Vec<u8> + 'a>;

/// Records encoded and written at a time by a rank.
const WRITE_RECORDS: usize = 1 << 20;

/// How many particles of each kind every rank holds (index 6: untyped).
struct KindCounts {
    /// `[rank][kind]`.
    by_rank: Vec<[u64; 7]>,
    typed: bool,
}

impl KindCounts {
    fn gather(part: &Snapshot, ranks: &dyn Ranks) -> Self {
        // The counts, then whether the part has kinds (a rank may have
        // none of a typed snapshot's particles).
        let mut mine = [0u64; 8];
        for k in 0..part.particles.len() {
            mine[kind_index(part, k)] += 1;
        }
        mine[7] = typed(part) as u64;
        let gathered = ranks.all_gather(&mine);
        let by_rank = (gathered.iter())
            .map(|c| c[..7].try_into().expect("7 counts"))
            .collect();
        // A run's particles are typed on every rank or on none.
        let typed = gathered.iter().any(|c| c[7] == 1);
        Self { by_rank, typed }
    }

    /// Particles of `kind` (`None`: untyped) on ranks `ranks`.
    fn of(&self, ranks: std::ops::Range<usize>, kind: Option<u8>) -> u64 {
        let i = kind.map_or(6, usize::from);
        self.by_rank[ranks].iter().map(|c| c[i]).sum()
    }

    /// The kinds counted: Gadget's six, or `None` for untyped particles.
    fn kinds(&self) -> Vec<Option<u8>> {
        match self.typed {
            true => (0..6).map(Some).collect(),
            false => vec![None],
        }
    }

    /// Particles (on ranks `ranks`) in each section, a section being the
    /// particles for which `section_of` (of a kind) gives its index.
    fn by_section(
        &self,
        ranks: std::ops::Range<usize>,
        sections: usize,
        section_of: impl Fn(Option<u8>) -> usize,
    ) -> Vec<u64> {
        let mut n = vec![0; sections];
        for kind in self.kinds() {
            n[section_of(kind)] += self.of(ranks.clone(), kind);
        }
        n
    }
}

fn typed(part: &Snapshot) -> bool {
    (part.types.as_ref()).is_some_and(|t| t.len() == part.particles.len())
}

fn kind_index(part: &Snapshot, k: usize) -> usize {
    match part.types.as_deref() {
        Some(t) if typed(part) => t[k].min(5) as usize,
        _ => 6,
    }
}

fn tipsy_pieces<'a>(
    part: &'a Snapshot,
    flavor: tipsy::Flavor,
    counts: &KindCounts,
) -> Vec<Piece<'a>> {
    let all = 0..counts.by_rank.len();
    let records = counts.by_section(all, 3, |kind| tipsy::record_section(flavor, kind));
    let mut pieces = vec![Piece::Framing(tipsy::header_bytes(
        part.time,
        records.clone().try_into().expect("3 sections"),
        flavor,
    ))];
    for section in 0..3 {
        pieces.push(Piece::Records {
            size: tipsy::record_len(section),
            keep: Box::new(move || tipsy::section_indices(part, flavor, section)),
            encode: Box::new(move |keep| tipsy::records_bytes(part, flavor, keep)),
        });
    }
    pieces
}

fn gadget_pieces<'a>(part: &'a Snapshot, counts: &KindCounts, ranks: &dyn Ranks) -> Vec<Piece<'a>> {
    let all = 0..counts.by_rank.len();
    let npart: Vec<u64> = counts.by_section(all, 6, gadget::type_of);
    // A type's mass is in the header when all its particles, on every
    // rank, weigh what its first one does (compared as one process's
    // writer compares them): the first ranks' first masses gathered, then
    // whether each rank's particles all equal them.
    let p = &part.particles;
    let types = part.types.as_deref().filter(|t| t.len() == p.len());
    let type_at = |k: usize| gadget::type_of(types.map(|t| t[k]));
    let mut firsts = [0u64; 12];
    for t in 0..6 {
        if let Some(k) = (0..p.len()).find(|&k| type_at(k) == t) {
            firsts[2 * t..2 * t + 2].copy_from_slice(&[1, p.pos_mass[k].mass.to_bits() as u64]);
        }
    }
    let gathered = ranks.all_gather(&firsts);
    let first: [Option<f32>; 6] = std::array::from_fn(|t| {
        let on = gathered.iter().find(|g| g[2 * t] == 1)?;
        Some(f32::from_bits(on[2 * t + 1] as u32))
    });
    let mut differs = [0u64; 6];
    for k in 0..p.len() {
        let t = type_at(k);
        differs[t] |= first[t].is_some_and(|m| p.pos_mass[k].mass != m) as u64;
    }
    let differs = ranks.all_gather(&differs);
    let mass: [f64; 6] = std::array::from_fn(|t| match first[t] {
        Some(m) if differs.iter().all(|d| d[t] == 0) => m as f64,
        _ => 0.0,
    });
    let npart: [u32; 6] = std::array::from_fn(|t| npart[t] as u32);
    let mut pieces = vec![Piece::Framing(gadget::header_record(
        npart, mass, part.time,
    ))];
    for block in gadget::Block::ALL {
        let in_block = |t: usize| block != gadget::Block::Mass || mass[t] == 0.0;
        let n: u64 = (0..6)
            .filter(|&t| in_block(t))
            .map(|t| npart[t] as u64)
            .sum();
        if block == gadget::Block::Mass && n == 0 {
            continue;
        }
        let marker = ((block.bytes_per_particle() as u64 * n) as u32)
            .to_le_bytes()
            .to_vec();
        pieces.push(Piece::Framing(marker.clone()));
        for t in (0..6).filter(|&t| in_block(t)) {
            pieces.push(Piece::Records {
                size: block.bytes_per_particle() as u64,
                keep: Box::new(move || gadget::indices_of_type(part, t)),
                encode: Box::new(move |keep| block.bytes_of(part, keep)),
            });
        }
        pieces.push(Piece::Framing(marker));
    }
    pieces
}

fn csv_pieces(part: &Snapshot) -> Vec<Piece<'_>> {
    // The header is an empty part's file; the rows are those of the
    // part's own file, after its header line.
    let file = |snap: &Snapshot| {
        let mut bytes = Vec::new();
        super::csv::write_to(snap, &mut bytes).expect("writing to memory");
        bytes
    };
    let header = file(&part.subset(&[]));
    let header_len = header.len();
    vec![
        Piece::Framing(header),
        Piece::Text(Box::new(move || {
            let mut rows = file(part);
            rows.drain(..header_len);
            rows
        })),
    ]
}

/// The `.iord` and kinds side files of standard Tipsy and Bonsai's flavour,
/// as `file::write_file_as` writes them, in parts.
fn tipsy_side_files(
    path: &str,
    part: &Snapshot,
    flavor: tipsy::Flavor,
    counts: &KindCounts,
    ranks: &dyn Ranks,
    written: &mut Written,
) -> Result<()> {
    let size = counts.by_rank.len();
    let section_of = |kind| tipsy::record_section(flavor, kind);
    let total = counts.by_section(0..size, 3, section_of);
    let before = counts.by_section(0..ranks.rank(), 3, section_of);
    // This rank's particles of each section, in order.
    let sections: Vec<Vec<u32>> = (0..3)
        .map(|s| tipsy::section_indices(part, flavor, s))
        .collect();
    // Any side file already there (rank 0 looks) is rewritten or removed,
    // never left to contradict the new file.
    let exists = |side: &str| -> bool {
        let mine = (ranks.rank() == 0 && Path::new(side).exists()) as u64;
        ranks.all_gather(&[mine]).iter().any(|e| e[0] == 1)
    };
    if flavor == tipsy::Flavor::Standard {
        // Ids other than 0..N-1 in record order need the .iord file.
        let first = |s: usize| total[..s].iter().sum::<u64>() + before[s];
        let identity = (0..3).all(|s| {
            (sections[s].iter().enumerate())
                .all(|(j, &k)| part.particles.id[k as usize] == first(s) + j as u64)
        });
        let side = iord::side_path(path);
        let all_identity = ranks
            .all_gather(&[identity as u64])
            .iter()
            .all(|i| i[0] == 1);
        if !all_identity || exists(&side) {
            let ids = |s: usize| {
                sections[s]
                    .iter()
                    .map(|&k| part.particles.id[k as usize])
                    .collect::<Vec<_>>()
            };
            write_pieces(&side, lines_pieces(total.iter().sum(), &ids), ranks)?;
            written.side_file = Some(side);
        }
    }
    let side = iord::kinds_path(path);
    if !counts.typed {
        let removed = match ranks.rank() == 0 && Path::new(&side).exists() {
            true => std::fs::remove_file(&side).map_err(|e| io_error(&side, e)),
            false => Ok(()),
        };
        return agree(ranks, removed);
    }
    // Kinds the format records as another kind, over all ranks.
    written.unrecorded = (0..6u8)
        .filter_map(|t| {
            let n = counts.of(0..size, Some(t));
            let recorded = tipsy::recorded_kind(flavor, t);
            (n > 0 && recorded != t).then_some((t, n as usize, recorded))
        })
        .collect();
    if !written.unrecorded.is_empty() || exists(&side) {
        let types = part.types.as_deref().expect("typed");
        let kinds = |s: usize| {
            (sections[s].iter())
                .map(|&k| types[k as usize])
                .collect::<Vec<_>>()
        };
        write_pieces(&side, lines_pieces(total.iter().sum(), &kinds), ranks)?;
        written.kinds_file = Some(side);
    }
    Ok(())
}

/// A side file (`iord`'s text: the count, then a value a line) of the
/// values `values(section)` gives for each record section.
fn lines_pieces<'a, T: std::fmt::Display + Sync>(
    n: u64,
    values: &'a (dyn Fn(usize) -> Vec<T> + 'a),
) -> Vec<Piece<'a>> {
    let mut pieces = vec![Piece::Framing(format!("{n}\n").into_bytes())];
    for s in 0..3 {
        pieces.push(Piece::Text(Box::new(move || {
            let mut bytes = iord::encode(&values(s));
            // Without iord's own count line.
            let first_line = bytes.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
            bytes.drain(..first_line);
            bytes
        })));
    }
    pieces
}

/// Writes `pieces` into `path` with every other rank (see the module's
/// comment).
pub(crate) fn write_pieces(path: &str, pieces: Vec<Piece<'_>>, ranks: &dyn Ranks) -> Result<()> {
    let root = ranks.rank() == 0;
    // Rank 0 creates the temporary, named after its process; the others
    // open it once it is there.
    let pid = ranks.all_gather(&[std::process::id() as u64])[0][0];
    let target = agree(ranks, resolve(path))?;
    let tmp = temporary_named(&target, "parts", pid);
    // Rank 0 holds the process's write lock as an atomic write does, so
    // that a signal ends the process between writes (`hold_writes`).
    let _lock = root.then(write_lock);
    let created = root.then(|| {
        pending(&tmp, true);
        // Readable too: a checksum of the whole is read back.
        (std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true))
        .open(&tmp)
        .map_err(|e| io_error(path, e))
    });
    let _cleanup = Cleanup { tmp: &tmp, root };
    let created = agree(ranks, created.transpose())?;
    let file = match created {
        Some(f) => Ok(f),
        None => (std::fs::OpenOptions::new().write(true).open(&tmp)).map_err(|e| io_error(path, e)),
    };
    let file = agree(ranks, file)?;
    let mut at = 0u64;
    let mut result: std::io::Result<()> = Ok(());
    for piece in pieces {
        match piece {
            Piece::Framing(bytes) => {
                if root && result.is_ok() {
                    result = file.write_all_at(&bytes, at);
                }
                at += bytes.len() as u64;
            }
            Piece::Records { size, keep, encode } => {
                let keep = keep();
                let lens = ranks.all_gather(&[keep.len() as u64 * size]);
                let mut offset = at + lens[..ranks.rank()].iter().map(|l| l[0]).sum::<u64>();
                for run in keep.chunks(WRITE_RECORDS) {
                    if result.is_err() {
                        break;
                    }
                    let bytes = encode(run);
                    result = match bytes.len() as u64 == run.len() as u64 * size {
                        true => file.write_all_at(&bytes, offset),
                        false => Err(std::io::Error::other("records of an unexpected size")),
                    };
                    offset += bytes.len() as u64;
                }
                at += lens.iter().map(|l| l[0]).sum::<u64>();
            }
            Piece::Text(make) => {
                let bytes = make();
                let lens = ranks.all_gather(&[bytes.len() as u64]);
                let before: u64 = lens[..ranks.rank()].iter().map(|l| l[0]).sum();
                if result.is_ok() {
                    result = file.write_all_at(&bytes, at + before);
                }
                at += lens.iter().map(|l| l[0]).sum::<u64>();
            }
            Piece::Xxh3Trailer => {
                // Every rank's bytes before it are in the file (synced, so
                // a file system shared by hosts shows them too).
                let synced = std::mem::replace(&mut result, Ok(())).and_then(|()| file.sync_data());
                agree(ranks, synced.map_err(|e| io_error(path, e)))?;
                if root {
                    result = xxh3_of(&file, at)
                        .and_then(|sum| file.write_all_at(&sum.to_le_bytes(), at));
                }
                at += 8;
            }
        }
    }
    let synced = result.and_then(|()| file.sync_all());
    agree(ranks, synced.map_err(|e| io_error(path, e)))?;
    drop(file);
    let renamed = if root {
        let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
        (|| {
            if let Some(p) = permissions {
                std::fs::set_permissions(&tmp, p)?;
            }
            std::fs::rename(&tmp, &target)
        })()
        .map_err(|e| io_error(path, e))
    } else {
        Ok(())
    };
    agree(ranks, renamed)
}

/// The XXH3-64 of `file`'s first `len` bytes, read a piece at a time.
fn xxh3_of(file: &std::fs::File, len: u64) -> std::io::Result<u64> {
    let mut sum = xxhash_rust::xxh3::Xxh3Default::new();
    let mut piece = vec![0u8; (len as usize).min(1 << 24)];
    let mut at = 0u64;
    while at < len {
        let k = ((len - at) as usize).min(piece.len());
        file.read_exact_at(&mut piece[..k], at)?;
        sum.update(&piece[..k]);
        at += k as u64;
    }
    Ok(sum.digest())
}

/// Removes the temporary (rank 0) unless it was renamed into place.
struct Cleanup<'a> {
    tmp: &'a Path,
    root: bool,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if self.root {
            let _ = std::fs::remove_file(self.tmp);
            pending(self.tmp, false);
        }
    }
}

/// `mine` if every rank succeeded; otherwise this rank's error, or an
/// error naming the first rank that failed: every rank takes the same
/// branch.
pub(crate) fn agree<T>(ranks: &dyn Ranks, mine: Result<T>) -> Result<T> {
    let failed = ranks.all_gather(&[mine.is_err() as u64]);
    match mine {
        Err(e) => Err(e),
        Ok(v) => match failed.iter().position(|f| f[0] == 1) {
            None => Ok(v),
            Some(r) => Err(Error::InvalidParameter(format!(
                "rank {r} failed to write its part of the file (its own error says why)"
            ))),
        },
    }
}
