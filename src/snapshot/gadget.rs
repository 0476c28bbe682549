//! Gadget-2 snapshots (Springel 2005; the user guide's §6): format 1, a
//! sequence of Fortran records (each framed by its byte length) HEAD, POS,
//! VEL, ID, MASS (only for types whose header mass is 0), then gas-only
//! blocks; and format 2, where a small labelled record (`"POS "` and the
//! next block's size) precedes each block. Both byte orders, 32- or 64-bit
//! ids, several files per snapshot (`snap_000.0`, `snap_000.1`, …; the
//! header's `num_files`). Particle types: 0 gas (read as collisionless), 1
//! halo, 2 disk, 3 bulge, 4 stars, 5 boundary. Values are taken in the
//! file's units (`to_nbody` converts physical ones). Format 1 is written,
//! little-endian, one file.

use super::{bad, checked, read_error, FileShare, Snapshot};
use crate::error::Result;
use crate::gpu::layout::{PosMass, Velocity};
use crate::state::parallel::{indices_where, map_indices, sum_by_chunks};
use crate::state::share::RankShare;
use crate::state::Particles;

/// Bytes of the header block.
const HEADER_BYTES: usize = 256;

/// What one file's header says.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Particles of each type in this file.
    pub npart: [u32; 6],
    /// Mass of each type when all its particles weigh the same (else 0:
    /// the MASS block holds them).
    pub mass: [f64; 6],
    pub time: f64,
    /// Particles of each type in all files (low and high 32 bits).
    pub npart_total: [u64; 6],
    pub num_files: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Endian {
    Little,
    Big,
}

/// Words of the file's byte order, each from a slice of its width.
impl Endian {
    fn u32(self, w: &[u8]) -> u32 {
        let w: [u8; 4] = w.try_into().expect("4 bytes");
        match self {
            Endian::Little => u32::from_le_bytes(w),
            Endian::Big => u32::from_be_bytes(w),
        }
    }

    fn u64(self, w: &[u8]) -> u64 {
        let w: [u8; 8] = w.try_into().expect("8 bytes");
        match self {
            Endian::Little => u64::from_le_bytes(w),
            Endian::Big => u64::from_be_bytes(w),
        }
    }

    fn f32(self, w: &[u8]) -> f32 {
        f32::from_bits(self.u32(w))
    }

    fn f64(self, w: &[u8]) -> f64 {
        f64::from_bits(self.u64(w))
    }

    /// The three f32 of a POS or VEL record (12 bytes).
    fn vector(self, w: &[u8]) -> [f32; 3] {
        std::array::from_fn(|c| self.f32(&w[4 * c..4 * c + 4]))
    }
}

/// Reads Fortran records of one byte order, each checked against its
/// trailing length.
struct Records<'a> {
    b: &'a [u8],
    at: usize,
    endian: Endian,
    /// Format 2: a labelled record precedes each block.
    labelled: bool,
    name: &'a str,
}

impl<'a> Records<'a> {
    fn u32_at(&self, at: usize) -> Option<u32> {
        self.b.get(at..at + 4).map(|w| self.endian.u32(w))
    }

    /// The next record's payload; `what` names it in errors.
    fn record(&mut self, what: &str) -> Result<&'a [u8]> {
        let len = self
            .u32_at(self.at)
            .ok_or_else(|| bad(self.name, format!("truncated before the {what} block")))?
            as usize;
        let start = self.at + 4;
        let end = start
            .checked_add(len)
            .filter(|&e| e + 4 <= self.b.len())
            .ok_or_else(|| {
                bad(
                    self.name,
                    format!("the {what} block announces {len} bytes, more than the file holds"),
                )
            })?;
        if self.u32_at(end) != Some(len as u32) {
            return Err(bad(
                self.name,
                format!(
                    "the {what} block's record markers disagree ({len} before, {:?} after)",
                    self.u32_at(end)
                ),
            ));
        }
        self.at = end + 4;
        Ok(&self.b[start..end])
    }

    /// The next block (after its label record in format 2).
    fn block(&mut self, label: &str) -> Result<&'a [u8]> {
        if self.labelled {
            let tag = self.record(&format!("{label} label"))?;
            if tag.len() != 8 {
                return Err(bad(
                    self.name,
                    format!("a {}-byte block label, expected 8", tag.len()),
                ));
            }
            let found = String::from_utf8_lossy(&tag[..4]).trim().to_string();
            if found != label.trim() {
                return Err(bad(
                    self.name,
                    format!("block '{found}' where '{}' was expected", label.trim()),
                ));
            }
        }
        self.record(label)
    }

    fn f32s(&self, bytes: &[u8]) -> Vec<f32> {
        bytes.chunks_exact(4).map(|c| self.endian.f32(c)).collect()
    }

    /// The three f32 of record k of a POS or VEL block.
    fn vector(&self, block: &[u8], k: usize) -> [f32; 3] {
        self.endian.vector(&block[12 * k..12 * k + 12])
    }
}

/// The byte order and format of a Gadget-2 file, if its first record says
/// it is one (the header record of 256 bytes, or format 2's 8-byte label
/// record "HEAD").
fn layout_of(bytes: &[u8]) -> Option<(Endian, bool)> {
    let first: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    for endian in [Endian::Little, Endian::Big] {
        let n = endian.u32(&first);
        if n == HEADER_BYTES as u32 {
            return Some((endian, false));
        }
        if n == 8 && bytes.get(4..8) == Some(b"HEAD") {
            return Some((endian, true));
        }
    }
    None
}

/// The particles a file's header announces (from its first 280 bytes),
/// if they are a Gadget-2 header.
pub fn decode_counts(head: &[u8]) -> Option<u64> {
    let (endian, labelled) = layout_of(head)?;
    let at = if labelled { 20 } else { 4 };
    (0..6)
        .map(|k| Some(endian.u32(head.get(at + 4 * k..at + 4 * k + 4)?) as u64))
        .sum()
}

/// The files of the snapshot a file's header announces (from its first
/// 280 bytes), if they are a Gadget-2 header.
pub fn decode_num_files(head: &[u8]) -> Option<u32> {
    let (endian, labelled) = layout_of(head)?;
    let at = if labelled { 20 } else { 4 } + 124;
    Some(endian.u32(head.get(at..at + 4)?))
}

/// Whether `bytes` look like a Gadget-2 file.
pub fn is_gadget(bytes: &[u8]) -> bool {
    layout_of(bytes).is_some()
}

fn header(endian: Endian, h: &[u8]) -> Header {
    let i32s = |at: usize, k: usize| -> u32 { endian.u32(&h[at + 4 * k..at + 4 * k + 4]) };
    let f64_at = |at: usize| -> f64 { endian.f64(&h[at..at + 8]) };
    let npart = std::array::from_fn(|k| i32s(0, k));
    let mass = std::array::from_fn(|k| f64_at(24 + 8 * k));
    let low: [u32; 6] = std::array::from_fn(|k| i32s(96, k));
    let high: [u32; 6] = std::array::from_fn(|k| i32s(168, k));
    Header {
        npart,
        mass,
        time: f64_at(72),
        npart_total: std::array::from_fn(|k| low[k] as u64 | (high[k] as u64) << 32),
        num_files: i32s(124, 0),
    }
}

/// Checks the header record's size.
fn check_header_size(bytes: u64, name: &str) -> Result<()> {
    if bytes != HEADER_BYTES as u64 {
        return Err(bad(name, format!("a {bytes}-byte header, expected 256")));
    }
    Ok(())
}

/// The header record's payload `hb`, its size, counts and time checked.
fn checked_header(endian: Endian, hb: &[u8], name: &str) -> Result<Header> {
    check_header_size(hb.len() as u64, name)?;
    let h = header(endian, hb);
    if h.npart.iter().any(|&n| n > i32::MAX as u32) || !h.time.is_finite() {
        return Err(bad(
            name,
            "header with negative counts or a non-finite time",
        ));
    }
    Ok(h)
}

impl Header {
    /// The particles of this file.
    fn particles(&self) -> u64 {
        self.npart.iter().map(|&x| x as u64).sum()
    }

    /// Particles of the types whose masses the MASS block holds.
    fn variable(&self) -> u64 {
        (0..6)
            .filter(|&k| self.mass[k] == 0.0)
            .map(|k| self.npart[k] as u64)
            .sum()
    }

    /// Refuses a later file of a snapshot (`name`) whose header disagrees
    /// with the first file's (`first`) on the files or the time.
    fn check_agrees(&self, first: &Header, name: &str) -> Result<()> {
        if self.num_files != first.num_files || self.time != first.time {
            return Err(bad(name, "its header disagrees with the first file's"));
        }
        Ok(())
    }

    /// Refuses a first file (`name`) whose header's totals (where it gives
    /// them) are not the `n` particles its snapshot's files hold.
    fn check_total(&self, n: u64, name: &str) -> Result<()> {
        let total = self.total(name)?;
        if total != 0 && total != n {
            return Err(bad(
                name,
                format!("the files hold {n} particles, the header's total is {total}"),
            ));
        }
        Ok(())
    }

    /// The particles of all files, from the header's 64-bit totals.
    fn total(&self, name: &str) -> Result<u64> {
        // Each total is 64 bits (low word and high word): their sum can
        // overflow in a damaged header.
        self.npart_total
            .iter()
            .try_fold(0u64, |sum, &k| sum.checked_add(k))
            .ok_or_else(|| bad(name, "the header's particle totals overflow"))
    }
}

/// Checks a POS or VEL block's size against the header's `n` particles.
fn check_vectors(what: &str, bytes: u64, n: u64, name: &str) -> Result<()> {
    if bytes != 12 * n {
        return Err(bad(
            name,
            format!(
                "{what} holds {bytes} bytes, the header's {n} particles need {}",
                12 * n
            ),
        ));
    }
    Ok(())
}

/// The bytes of an id in an ID block of `bytes` for `n` particles: 4 or 8.
fn id_width(bytes: u64, n: u64, name: &str) -> Result<u64> {
    match bytes {
        b if b == 4 * n || b == 8 * n => Ok(b / n),
        b => Err(bad(name, format!("ID holds {b} bytes for {n} particles"))),
    }
}

/// The ids of an ID block's bytes, `width` (4 or 8) each.
fn ids_of(bytes: &[u8], width: u64, endian: Endian) -> Vec<u64> {
    let w = width as usize;
    bytes
        .chunks_exact(w)
        .map(|c| match w {
            4 => endian.u32(c) as u64,
            _ => endian.u64(c),
        })
        .collect()
}

/// Checks a MASS block's size against the header's `variable` particles.
fn check_masses(bytes: u64, variable: u64, name: &str) -> Result<()> {
    if bytes != 4 * variable {
        return Err(bad(
            name,
            format!(
                "MASS holds {bytes} bytes, the header's types need {}",
                4 * variable
            ),
        ));
    }
    Ok(())
}

/// A file's records positioned after its header, and the header (counts
/// and time checked).
fn read_header<'a>(bytes: &'a [u8], name: &'a str) -> Result<(Records<'a>, Header)> {
    let (endian, labelled) = layout_of(bytes).ok_or_else(|| {
        bad(
            name,
            "not a Gadget-2 file: the first record is neither the 256-byte header nor a HEAD label",
        )
    })?;
    let mut r = Records {
        b: bytes,
        at: 0,
        endian,
        labelled,
        name,
    };
    let hb = r.block("HEAD")?;
    let h = checked_header(endian, hb, name)?;
    Ok((r, h))
}

/// One file of a snapshot: its header, particles (in type order) and their
/// types.
pub fn decode_file(bytes: &[u8], name: &str) -> Result<(Header, Particles, Vec<u8>)> {
    decode_file_after(bytes, name, 0)
}

/// `decode_file` of a snapshot's file that `before` particles of the
/// files before it precede: without an ID block its particles are
/// numbered from there.
fn decode_file_after(
    bytes: &[u8],
    name: &str,
    before: u64,
) -> Result<(Header, Particles, Vec<u8>)> {
    let (mut r, h) = read_header(bytes, name)?;
    let (endian, labelled) = (r.endian, r.labelled);
    let n: u64 = h.npart.iter().map(|&x| x as u64).sum();
    if n == 0 {
        return Err(bad(name, "header announces no particles"));
    }
    let n = n as usize;
    // Format 1: the blocks in their fixed order. Format 2: by label, in
    // any order, ID optional (some writers, pynbody's among them, leave it
    // out; particles are then numbered in file order, across the files).
    let variable = h.variable() as usize;
    let (pos, vel, ids, masses) = if labelled {
        let mut found: Vec<(String, &[u8])> = Vec::new();
        while r.at < bytes.len() {
            let tag = r.record("block label")?;
            if tag.len() != 8 {
                return Err(bad(
                    name,
                    format!("a {}-byte block label, expected 8", tag.len()),
                ));
            }
            let label = String::from_utf8_lossy(&tag[..4]).trim().to_string();
            let block = r.record(&label)?;
            found.push((label, block));
        }
        let get = |l: &str| found.iter().find(|(k, _)| k == l).map(|(_, b)| *b);
        let need = |l: &str| get(l).ok_or_else(|| bad(name, format!("no {l} block")));
        let masses = if variable > 0 {
            Some(need("MASS")?)
        } else {
            None
        };
        (need("POS")?, need("VEL")?, get("ID"), masses)
    } else {
        let pos = r.block("POS ")?;
        let vel = r.block("VEL ")?;
        let ids = r.block("ID  ")?;
        let masses = if variable > 0 {
            Some(r.block("MASS")?)
        } else {
            None
        };
        (pos, vel, Some(ids), masses)
    };
    // Every block's size follows from the counts: a lying header is caught
    // before anything is allocated for it.
    check_vectors("POS", pos.len() as u64, n as u64, name)?;
    check_vectors("VEL", vel.len() as u64, n as u64, name)?;
    let id: Vec<u64> = match ids {
        None => (before..before + n as u64).collect(),
        Some(ids) => ids_of(ids, id_width(ids.len() as u64, n as u64, name)?, endian),
    };
    let masses = match masses {
        Some(m) => {
            check_masses(m.len() as u64, variable as u64, name)?;
            r.f32s(m)
        }
        None => Vec::new(),
    };
    // Straight from the blocks into the records: no copy of the file's
    // positions and velocities between them.
    let mut p = Particles {
        pos_mass: Vec::with_capacity(n),
        vel: Vec::with_capacity(n),
        id,
    };
    let mut types = Vec::with_capacity(n);
    let mut next_mass = masses.iter();
    let mut k = 0;
    for t in 0..6 {
        for _ in 0..h.npart[t] {
            let mass = if h.mass[t] == 0.0 {
                *next_mass.next().expect("counted above")
            } else {
                h.mass[t] as f32
            };
            p.pos_mass.push(PosMass {
                pos: r.vector(pos, k),
                mass,
            });
            p.vel.push(Velocity::new(r.vector(vel, k)));
            types.push(t as u8);
            k += 1;
        }
    }
    Ok((h, p, types))
}

/// A whole snapshot from its files' bytes (in file order); `name` appears
/// in error messages.
pub fn decode_files<N: AsRef<str>, B: AsRef<[u8]>>(files: &[(N, B)]) -> Result<Snapshot> {
    let mut all = Particles::default();
    let mut types = Vec::new();
    let mut first: Option<Header> = None;
    for (name, bytes) in files {
        let (name, bytes) = (name.as_ref(), bytes.as_ref());
        let (h, p, t) = decode_file_after(bytes, name, all.len() as u64)?;
        if let Some(f) = &first {
            h.check_agrees(f, name)?;
        }
        // The first file's particles moved, not copied (a single-file
        // snapshot is then never held twice).
        if all.is_empty() {
            (all, types) = (p, t);
        } else {
            all.pos_mass.extend(p.pos_mass);
            all.vel.extend(p.vel);
            all.id.extend(p.id);
            types.extend(t);
        }
        first.get_or_insert(h);
    }
    let h = first.ok_or_else(|| bad("gadget", "no files"))?;
    let name = files[0].0.as_ref();
    h.check_total(all.len() as u64, name)?;
    checked(
        Snapshot {
            time: h.time,
            particles: all,
            types: Some(types),
            ..Default::default()
        },
        name,
    )
}

/// A single-file snapshot's bytes.
pub fn decode(bytes: &[u8], name: &str) -> Result<Snapshot> {
    let (_, h) = read_header(bytes, name)?;
    if h.num_files > 1 {
        return Err(bad(
            name,
            format!(
                "one of {} files of a snapshot: read it by its file name",
                h.num_files
            ),
        ));
    }
    decode_files(&[(name, bytes)])
}

/// Where a one-file snapshot's blocks lie: each block's payload as
/// (offset, bytes), found by the record markers alone (each checked
/// against its trailing twin), the payloads left unread.
struct Blocks {
    endian: Endian,
    header: Header,
    pos: (u64, u64),
    vel: (u64, u64),
    id: Option<(u64, u64)>,
    mass: Option<(u64, u64)>,
}

/// Reads `len` bytes at `offset` of `file` (`name` in errors).
fn read_at<F: std::io::Read + std::io::Seek>(
    file: &mut F,
    offset: u64,
    len: u64,
    name: &str,
) -> Result<Vec<u8>> {
    let failed = |e| read_error(name, e);
    file.seek(std::io::SeekFrom::Start(offset))
        .map_err(failed)?;
    let mut bytes = vec![0u8; len as usize];
    file.read_exact(&mut bytes).map_err(failed)?;
    Ok(bytes)
}

/// The blocks of the Gadget-2 file `file` of `len` bytes, as
/// `decode_file` finds them (format 1 in its fixed order, format 2 by
/// label, ID optional there), with its header.
fn plan_blocks<F: std::io::Read + std::io::Seek>(
    file: &mut F,
    len: u64,
    name: &str,
) -> Result<Blocks> {
    let head = read_at(file, 0, len.min(8), name)?;
    let (endian, labelled) = layout_of(&head).ok_or_else(|| {
        bad(
            name,
            "not a Gadget-2 file: the first record is neither the 256-byte header nor a HEAD label",
        )
    })?;
    // The record at `at`: its payload (offset, bytes) and where the next
    // begins.
    let record = |file: &mut F, at: u64, what: &str| -> Result<((u64, u64), u64)> {
        if at + 4 > len {
            return Err(bad(name, format!("truncated before the {what} block")));
        }
        let size = endian.u32(&read_at(file, at, 4, name)?) as u64;
        let end = at + 4 + size;
        if end + 4 > len {
            return Err(bad(
                name,
                format!("the {what} block announces {size} bytes, more than the file holds"),
            ));
        }
        let after = endian.u32(&read_at(file, end, 4, name)?) as u64;
        if after != size {
            return Err(bad(
                name,
                format!(
                    "the {what} block's record markers disagree ({size} before, {after} after)"
                ),
            ));
        }
        Ok(((at + 4, size), end + 4))
    };
    // Format 2: every block by its label, in any order. Format 1: the
    // header, POS, VEL and ID in that order, then MASS where the header
    // leaves some type's masses to it (the rest, gas blocks, unread).
    let mut found: Vec<(String, (u64, u64))> = Vec::new();
    let mut at = 0;
    let header_of = |(at, size): (u64, u64), file: &mut F| -> Result<Header> {
        // A header record of any other size is refused unread.
        check_header_size(size, name)?;
        checked_header(endian, &read_at(file, at, size, name)?, name)
    };
    let header = if labelled {
        while at < len {
            let ((tag_at, tag_len), next) = record(file, at, "block label")?;
            if tag_len != 8 {
                return Err(bad(
                    name,
                    format!("a {tag_len}-byte block label, expected 8"),
                ));
            }
            let tag = read_at(file, tag_at, 4, name)?;
            let label = String::from_utf8_lossy(&tag).trim().to_string();
            let (block, after) = record(file, next, &label)?;
            found.push((label, block));
            at = after;
        }
        let head = found.iter().find(|(k, _)| k == "HEAD").map(|(_, b)| *b);
        header_of(head.ok_or_else(|| bad(name, "no HEAD block"))?, file)?
    } else {
        let (head, next) = record(file, 0, "HEAD")?;
        let h = header_of(head, file)?;
        at = next;
        for label in ["POS", "VEL", "ID", "MASS"] {
            if label == "MASS" && h.variable() == 0 {
                break;
            }
            let (block, after) = record(file, at, label)?;
            found.push((label.to_string(), block));
            at = after;
        }
        h
    };
    let get = |l: &str| found.iter().find(|(k, _)| k == l).map(|(_, b)| *b);
    let need = |l: &str| get(l).ok_or_else(|| bad(name, format!("no {l} block")));
    Ok(Blocks {
        endian,
        pos: need("POS")?,
        vel: need("VEL")?,
        id: get("ID"),
        mass: get("MASS"),
        header,
    })
}

/// Particles read from a share's piece of a block at a time.
const SHARE_PIECE: usize = 1 << 18;

/// Reads particles `share.of(n)` of a Gadget-2 snapshot of one or several
/// files (`names`, in order: particles are numbered across them, as
/// `decode_files` joins them), only their bytes of each file's blocks
/// (found by their record markers; the headers, the blocks' sizes and the
/// values checked as `decode_files` checks them, a particle named by its
/// file and its index there). `open(name)` opens a file, with its length:
/// one at a time (a snapshot may have thousands). `fits(count)` checks
/// that the share fits before any of it is read.
pub fn decode_share<F: std::io::Read + std::io::Seek>(
    names: &[String],
    open: impl Fn(&str) -> Result<(F, u64)>,
    share: RankShare,
    fits: impl FnOnce(usize) -> Result<()>,
) -> Result<FileShare> {
    let mut planned = Vec::with_capacity(names.len());
    for name in names {
        let (mut file, len) = open(name)?;
        let b = plan_blocks(&mut file, len, name)?;
        check_blocks(&b, name)?;
        planned.push(b);
    }
    let (first, name) = match (planned.first(), names.first()) {
        (Some(b), Some(name)) => (&b.header, name.as_str()),
        _ => return Err(bad("gadget", "no files")),
    };
    for (b, name) in planned.iter().zip(names).skip(1) {
        b.header.check_agrees(first, name)?;
    }
    let counts: Vec<usize> = planned
        .iter()
        .map(|b| b.header.particles() as usize)
        .collect();
    let n: usize = counts.iter().sum();
    first.check_total(n as u64, name)?;
    let range = share.of(n);
    fits(range.len())?;
    let mut p = Particles::default();
    let mut types = Vec::with_capacity(range.len());
    let mut before = 0;
    for ((name, b), count) in names.iter().zip(&planned).zip(counts) {
        let (lo, hi) = (range.start.max(before), range.end.min(before + count));
        if lo < hi {
            let (mut file, _) = open(name)?;
            let rows = (lo - before)..(hi - before);
            read_range((&mut file, name), b, rows, before, (&mut p, &mut types))?;
        }
        before += count;
    }
    Ok(FileShare {
        snap: Snapshot {
            time: first.time,
            particles: p,
            types: Some(types),
            ..Default::default()
        },
        n,
        typed: true,
        counted: None,
    })
}

/// A file's blocks' sizes checked against its header's counts, as
/// `decode_file` checks them.
fn check_blocks(b: &Blocks, name: &str) -> Result<()> {
    let n = b.header.particles();
    if n == 0 {
        return Err(bad(name, "header announces no particles"));
    }
    let variable = b.header.variable();
    check_vectors("POS", b.pos.1, n, name)?;
    check_vectors("VEL", b.vel.1, n, name)?;
    if let Some((_, size)) = b.id {
        id_width(size, n, name)?;
    }
    match b.mass {
        Some((_, size)) if variable > 0 => check_masses(size, variable, name),
        None if variable > 0 => Err(bad(name, "no MASS block")),
        _ => Ok(()),
    }
}

/// Particles `range` of one file (planned as `b`) appended to `out` with
/// their types, read a piece at a time; where the file has no ID block
/// their ids are their index across the files (`before` precede it).
fn read_range<F: std::io::Read + std::io::Seek>(
    (file, name): (&mut F, &str),
    b: &Blocks,
    range: std::ops::Range<usize>,
    before: usize,
    (p, types): (&mut Particles, &mut Vec<u8>),
) -> Result<()> {
    let (h, endian) = (&b.header, b.endian);
    let id_bytes =
        b.id.map(|(_, size)| id_width(size, h.particles(), name))
            .transpose()?;
    // Each particle's type, and its place among the MASS block's.
    let starts: Vec<usize> = (0..=6)
        .map(|t| h.npart[..t].iter().map(|&k| k as usize).sum())
        .collect();
    let type_of = |k: usize| (0..6).rfind(|&t| starts[t] <= k).expect("k < n");
    let variable_before = |k: usize| -> usize {
        (0..6)
            .filter(|&t| h.mass[t] == 0.0)
            .map(|t| k.clamp(starts[t], starts[t + 1]) - starts[t])
            .sum()
    };
    let mut piece = Particles::default();
    let mut first = range.start;
    while first < range.end {
        let last = (first + SHARE_PIECE).min(range.end);
        let count = (last - first) as u64;
        let slice = |(at, _): (u64, u64), per: u64, from: usize| (at + per * from as u64, per);
        let (pos_at, _) = slice(b.pos, 12, first);
        let (vel_at, _) = slice(b.vel, 12, first);
        let pos = read_at(file, pos_at, 12 * count, name)?;
        let vel = read_at(file, vel_at, 12 * count, name)?;
        let ids = match (b.id, id_bytes) {
            (Some(block), Some(w)) => {
                let (at, _) = slice(block, w, first);
                ids_of(&read_at(file, at, w * count, name)?, w, endian)
            }
            _ => ((before + first) as u64..(before + last) as u64).collect::<Vec<u64>>(),
        };
        let (v0, v1) = (variable_before(first), variable_before(last));
        let masses = match b.mass {
            Some((at, _)) if v1 > v0 => {
                let bytes = read_at(file, at + 4 * v0 as u64, 4 * (v1 - v0) as u64, name)?;
                bytes.chunks_exact(4).map(|c| endian.f32(c)).collect()
            }
            _ => Vec::new(),
        };
        let mut next_mass = masses.iter();
        for k in first..last {
            let j = k - first;
            let t = type_of(k);
            let mass = if h.mass[t] == 0.0 {
                *next_mass.next().expect("counted above")
            } else {
                h.mass[t] as f32
            };
            piece.pos_mass.push(PosMass {
                pos: endian.vector(&pos[12 * j..12 * j + 12]),
                mass,
            });
            piece
                .vel
                .push(Velocity::new(endian.vector(&vel[12 * j..12 * j + 12])));
            types.push(t as u8);
        }
        piece.id.extend(ids);
        first = last;
    }
    piece
        .check_values(range.start)
        .map_err(|problem| bad(name, problem))?;
    // (A share within one file, the usual case, is moved, not copied.)
    if p.is_empty() {
        *p = piece;
    } else {
        p.pos_mass.append(&mut piece.pos_mass);
        p.vel.append(&mut piece.vel);
        p.id.append(&mut piece.id);
    }
    Ok(())
}

/// Gadget's type of a particle of `kind` (`None`: untyped, halo).
pub fn type_of(kind: Option<u8>) -> usize {
    kind.map_or(1, |t| t.min(5) as usize)
}

/// The header record (its length before and after it): the numbers of
/// particles of each type, the types' masses (0: in the MASS block) and
/// the time.
pub fn header_record(npart: [u32; 6], mass: [f64; 6], time: f64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_BYTES + 8);
    h.extend_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
    npart
        .iter()
        .for_each(|x| h.extend_from_slice(&x.to_le_bytes()));
    mass.iter()
        .for_each(|x| h.extend_from_slice(&x.to_le_bytes()));
    h.extend_from_slice(&time.to_le_bytes());
    h.extend_from_slice(&0f64.to_le_bytes()); // redshift
    h.extend_from_slice(&[0u8; 8]); // flag_sfr, flag_feedback
    npart
        .iter()
        .for_each(|x| h.extend_from_slice(&x.to_le_bytes())); // npartTotal
    h.extend_from_slice(&0u32.to_le_bytes()); // flag_cooling
    h.extend_from_slice(&1u32.to_le_bytes()); // num_files
    h.extend_from_slice(&[0u8; 32]); // BoxSize, Omega0, OmegaLambda, HubbleParam
    h.extend_from_slice(&[0u8; 8]); // flag_stellarage, flag_metals
    h.extend_from_slice(&[0u8; 24]); // npartTotalHighWord
    h.resize(4 + HEADER_BYTES, 0);
    h.extend_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
    h
}

/// The particle blocks, in file order (MASS holds only the types whose
/// particles' masses differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    Pos,
    Vel,
    Id,
    Mass,
}

impl Block {
    pub const ALL: [Block; 4] = [Block::Pos, Block::Vel, Block::Id, Block::Mass];

    pub fn bytes_per_particle(self) -> usize {
        match self {
            Block::Pos | Block::Vel => 12,
            Block::Id => 8,
            Block::Mass => 4,
        }
    }

    /// Particle `k`'s bytes in this block.
    fn put(self, p: &Particles, k: usize, out: &mut Vec<u8>) {
        let f32s =
            |out: &mut Vec<u8>, xs: [f32; 3]| xs.iter().for_each(|x| out.extend(x.to_le_bytes()));
        match self {
            Block::Pos => f32s(out, p.pos_mass[k].pos),
            Block::Vel => f32s(out, p.vel[k].vel),
            Block::Id => out.extend(p.id[k].to_le_bytes()),
            Block::Mass => out.extend(p.pos_mass[k].mass.to_le_bytes()),
        }
    }

    /// The bytes in this block of `snap`'s particles `keep`, in that
    /// order (encoded on every core, a run of particles each).
    pub fn bytes_of(self, snap: &Snapshot, keep: &[u32]) -> Vec<u8> {
        let runs = map_indices(keep.len().div_ceil(RUN), |r| {
            let mut out = Vec::with_capacity(RUN * self.bytes_per_particle());
            for &k in &keep[r * RUN..((r + 1) * RUN).min(keep.len())] {
                self.put(&snap.particles, k as usize, &mut out);
            }
            out
        });
        runs.concat()
    }
}

/// `snap`'s particles of type `ty`, in their order: one rank's piece of
/// each block's particles of that type in a file written in parts.
pub fn indices_of_type(snap: &Snapshot, ty: usize) -> Vec<u32> {
    let n = snap.particles.len();
    let types = snap.types.as_deref().filter(|t| t.len() == n);
    indices_where(n, |k| type_of(types.map(|t| t[k])) == ty)
}

/// Format 1, little-endian, one file: particles grouped by type (type 1,
/// halo, where the snapshot has none), 64-bit ids, a MASS block unless all
/// particles of a type weigh the same.
pub fn encode(snap: &Snapshot) -> Vec<u8> {
    let mut out = Vec::new();
    write_to(snap, &mut out).expect("writing to memory");
    out
}

/// Bytes gathered before they go to the writer.
/// Records encoded at a time, and by one core.
const PIECE_RECORDS: usize = 1 << 18;
const RUN: usize = 4096;

/// The bytes of `encode` into `out`, a piece of a block at a time: a file
/// of any size is written without a copy of it in memory.
pub fn write_to(snap: &Snapshot, out: &mut (impl std::io::Write + ?Sized)) -> std::io::Result<()> {
    let p = &snap.particles;
    let n = p.len();
    let types = snap.types.as_deref().filter(|t| t.len() == n);
    let kind = |k: usize| type_of(types.map(|t| t[k])) as u8;
    // Gadget wants the particles of each type together, in type order:
    // the order is found once, on every core (untyped: as they are).
    let order: Option<Vec<u32>> = types.map(|_| {
        (0..6u8)
            .flat_map(|t| indices_where(n, |k| kind(k) == t))
            .collect()
    });
    let at = |j: usize| order.as_ref().map_or(j, |o| o[j] as usize);
    let counts = sum_by_chunks(n, |k| {
        std::array::from_fn::<f64, 6, _>(|t| (kind(k) as usize == t) as u8 as f64)
    });
    let npart: [u32; 6] = counts.map(|c| c as u32);
    let first: [usize; 6] = std::array::from_fn(|t| npart[..t].iter().map(|&c| c as usize).sum());
    // A type's mass goes into the header when all its particles share it
    // (its smallest and largest masses are equal).
    let mass: [f64; 6] = std::array::from_fn(|t| {
        let (lo, hi) = (first[t], first[t] + npart[t] as usize);
        if lo == hi {
            return 0.0;
        }
        let m0 = p.pos_mass[at(lo)].mass;
        let differs = map_indices((hi - lo).div_ceil(RUN), |r| {
            (lo + r * RUN..(lo + (r + 1) * RUN).min(hi)).any(|j| p.pos_mass[at(j)].mass != m0)
        });
        if differs.contains(&true) {
            0.0
        } else {
            m0 as f64
        }
    });
    out.write_all(&header_record(npart, mass, snap.time))?;
    // One block: its length, its payload (`each` adds the bytes of the
    // particle at `k`; the records of `range` of the order), its length
    // again. Runs of records are encoded on every core, written in order.
    let mut block = |len: usize,
                     range: std::ops::Range<usize>,
                     each: &(dyn Fn(usize, &mut Vec<u8>) + Sync)|
     -> std::io::Result<()> {
        out.write_all(&(len as u32).to_le_bytes())?;
        let mut start = range.start;
        while start < range.end {
            let end = (start + PIECE_RECORDS).min(range.end);
            let runs = map_indices((end - start).div_ceil(RUN), |r| {
                let mut b = Vec::with_capacity(RUN * 12);
                for j in start + r * RUN..(start + (r + 1) * RUN).min(end) {
                    each(at(j), &mut b);
                }
                b
            });
            for b in &runs {
                out.write_all(b)?;
            }
            start = end;
        }
        out.write_all(&(len as u32).to_le_bytes())
    };
    for b in [Block::Pos, Block::Vel, Block::Id] {
        block(b.bytes_per_particle() * n, 0..n, &|k, out| b.put(p, k, out))?;
    }
    // Masses of the types without one in the header, in the same order
    // (the types are contiguous in it).
    let variable: usize = (0..6)
        .filter(|&t| mass[t] == 0.0)
        .map(|t| npart[t] as usize)
        .sum();
    if variable > 0 {
        out.write_all(&(4 * variable as u32).to_le_bytes())?;
        for t in (0..6).filter(|&t| mass[t] == 0.0) {
            let (lo, hi) = (first[t], first[t] + npart[t] as usize);
            let runs = map_indices((hi - lo).div_ceil(RUN), |r| {
                let mut b = Vec::with_capacity(RUN * 4);
                for j in lo + r * RUN..(lo + (r + 1) * RUN).min(hi) {
                    Block::Mass.put(p, at(j), &mut b);
                }
                b
            });
            for b in &runs {
                out.write_all(b)?;
            }
        }
        out.write_all(&(4 * variable as u32).to_le_bytes())?;
    }
    Ok(())
}

/// Converts a snapshot in physical units (lengths of `kpc` kpc, masses of
/// `msun` solar masses, velocities of `kms` km/s per file unit) into
/// webgrav's G = 1 units as Bonsai chooses them: 1 kpc, 2.325e9 M☉ and
/// 100 km/s (then G = 1 to 0.1 %), so the numbers mean the same in both
/// codes.
pub fn to_nbody(snap: &mut Snapshot, kpc: f64, msun: f64, kms: f64) {
    const MASS_UNIT_MSUN: f64 = 2.325e9;
    const VELOCITY_UNIT_KMS: f64 = 100.0;
    let (fl, fm, fv) = (kpc, msun / MASS_UNIT_MSUN, kms / VELOCITY_UNIT_KMS);
    for p in &mut snap.particles.pos_mass {
        p.pos = p.pos.map(|x| (x as f64 * fl) as f32);
        p.mass = (p.mass as f64 * fm) as f32;
    }
    for v in &mut snap.particles.vel {
        v.vel = v.vel.map(|x| (x as f64 * fv) as f32);
    }
    // Time unit = kpc / (100 km/s) = 9.78 Myr; a file's time unit is its
    // length unit over its velocity unit.
    snap.time *= fl / fv;
}
