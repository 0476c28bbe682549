//! Tipsy binary snapshots. Header: `double time; int nbodies, ndim, nsph,
//! ndark, nstar; int pad` (32 bytes), then gas (48 B), dark (36 B) and star
//! (44 B) records of f32. Standard files are big-endian (XDR); Bonsai writes
//! native little-endian with `pad = 2` ("version 2") and a 64-bit particle id
//! in the bytes of the eps and phi fields. Both byte orders are read (the
//! order is recognised from `ndim == 3`), and both flavours are written.

use super::{bad, checked, read_error, FileShare, Snapshot};
use crate::error::{Error, Result};
use crate::gpu::layout::{PosMass, Velocity};
use crate::state::parallel::{for_each_pair, indices_where, map_indices, sum_by_chunks};
use crate::state::share::RankShare;
use crate::state::Particles;
use std::io::{Read, Write};

const HEADER_BYTES: usize = 32;
/// Header without the trailing pad word, as some old writers produce.
const SHORT_HEADER_BYTES: usize = 28;
const GAS_BYTES: u64 = 48;
const DARK_BYTES: u64 = 36;
const STAR_BYTES: u64 = 44;
/// The `pad` word value by which Bonsai marks 64-bit ids in eps/phi.
const BONSAI_VERSION: i32 = 2;
/// Bonsai's id ranges (its `tipsyIO.h`): disk particles from 0, bulge from
/// 2e18, dark matter from 3e18. The `.bonsai` writer adds them to ids by
/// type and the reader takes them off again, so both codes agree on what
/// each particle is.
pub const BONSAI_BULGE_ID: u64 = 2_000_000_000_000_000_000;
pub const BONSAI_DARK_ID: u64 = 3_000_000_000_000_000_000;

/// The records of a Tipsy file, in the order the format stores them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Gas,
    Dark,
    Star,
}

/// The record a particle of (Gadget-numbered) `kind` is written in. Standard
/// Tipsy has records for gas, dark matter and stars; Bonsai's flavour only
/// dark and star records (Bonsai reads every record after the dark ones as
/// a star, so a gas record would be misread): gas goes with the halo.
fn record(flavor: Flavor, kind: u8) -> Kind {
    match (flavor, kind) {
        (Flavor::Standard, 0) => Kind::Gas,
        (_, 0 | 1) => Kind::Dark,
        _ => Kind::Star,
    }
}

/// The kind a file of `flavor` itself records for a particle of `kind`,
/// as `decode` reads it back: standard Tipsy knows gas, dark matter and
/// stars by record (0, 1, 4); Bonsai knows dark matter, bulge and disk by
/// id range (1, 3, 2). Where it differs from `kind`, only a side file
/// (`file::write_file`) keeps the kind.
pub fn recorded_kind(flavor: Flavor, kind: u8) -> u8 {
    match (flavor, record(flavor, kind)) {
        (_, Kind::Gas) => 0,
        (_, Kind::Dark) => 1,
        (Flavor::Standard, Kind::Star) => 4,
        (Flavor::Bonsai, Kind::Star) if kind == 3 => 3,
        (Flavor::Bonsai, Kind::Star) => 2,
    }
}

/// (kind, particles, what the file records them as) for each kind of
/// `snap` that a file of `flavor` has no record or id range for.
pub fn unrecorded(snap: &Snapshot, flavor: Flavor) -> Vec<(u8, usize, u8)> {
    let Some(types) = snap
        .types
        .as_ref()
        .filter(|t| t.len() == snap.particles.len())
    else {
        return Vec::new();
    };
    (0..crate::state::KINDS.len() as u8)
        .map(|t| {
            (
                t,
                types.iter().filter(|&&k| k == t).count(),
                recorded_kind(flavor, t),
            )
        })
        .filter(|&(t, n, recorded)| n > 0 && recorded != t)
        .collect()
}

/// `unrecorded`'s list in words: "200 disk (read as stars), …".
pub fn describe_unrecorded(list: &[(u8, usize, u8)]) -> String {
    let name = |t: u8| crate::state::KINDS[t as usize];
    list.iter()
        .map(|&(t, n, as_)| format!("{n} {} (read as {})", name(t), name(as_)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The file order of a snapshot's particles: without types, as given (all
/// dark records); with types, the gas records, then the dark records, then
/// the stars, each in input order, as Tipsy's layout demands. An iterator,
/// so that a large snapshot's order takes no memory.
pub fn record_order(snap: &Snapshot, flavor: Flavor) -> impl Iterator<Item = usize> + '_ {
    let n = snap.particles.len();
    let types = snap.types.as_deref().filter(|t| t.len() == n);
    let records: &[Kind] = match types {
        Some(_) => &[Kind::Gas, Kind::Dark, Kind::Star],
        None => &[Kind::Dark],
    };
    let rec = move |k: usize| types.map_or(Kind::Dark, |t| record(flavor, t[k]));
    records
        .iter()
        .flat_map(move |&r| (0..n).filter(move |&k| rec(k) == r))
}

/// The id range Bonsai gives a particle of `kind` (`None`: untyped, written
/// as before with its own id) and the largest id that fits in it: Bonsai
/// tells disk (ids below 2e18), bulge (2e18…) and dark matter (3e18…)
/// apart by id alone, so an id beyond its range would read back as another
/// particle of another kind.
fn bonsai_range(kind: Option<u8>) -> (u64, u64) {
    match kind {
        Some(0 | 1) => (BONSAI_DARK_ID, u64::MAX - BONSAI_DARK_ID),
        Some(3) => (BONSAI_BULGE_ID, BONSAI_DARK_ID - BONSAI_BULGE_ID - 1),
        _ => (0, BONSAI_BULGE_ID - 1),
    }
}

/// Refuses, naming the first such particle, a snapshot whose ids Bonsai's
/// id ranges cannot hold (see `bonsai_range`).
pub fn check_bonsai_ids(ids: &[u64], types: Option<&[u8]>) -> Result<()> {
    let types = types.filter(|t| t.len() == ids.len());
    for (k, &id) in ids.iter().enumerate() {
        let kind = types.map(|t| t[k]);
        let (_, max) = bonsai_range(kind);
        if id > max {
            let what = kind.map_or("untyped".to_string(), |t| {
                crate::state::KINDS
                    .get(t as usize)
                    .unwrap_or(&"?")
                    .to_string()
            });
            return Err(Error::InvalidParameter(format!(
                "particle {k} (id {id}, {what}) cannot be written to Bonsai's format: Bonsai tells \
                 disk, bulge and dark matter apart by id (disk below 2e18, bulge 2e18 + id, dark \
                 matter 3e18 + id), so a {what} particle's id must be at most {max}; .gadget, \
                 .csv and .tipsy (ids in its .iord side file) keep any id"
            )));
        }
    }
    Ok(())
}

/// Which Tipsy variant to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Big-endian (XDR); dark records carry softening and potential.
    Standard,
    /// Bonsai's little-endian "version 2": dark records carry 64-bit ids.
    Bonsai,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Endian {
    Big,
    Little,
}

struct Header {
    time: f64,
    nbodies: i32,
    ndim: i32,
    nsph: i32,
    ndark: i32,
    nstar: i32,
}

/// Bounds-checked reader of f32/i32/f64 words in one byte order.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    endian: Endian,
}

impl Cursor<'_> {
    fn take<const K: usize>(&mut self) -> [u8; K] {
        // Callers check the total length against the header first, so a
        // short read here is a logic error, not bad input.
        let mut b = [0u8; K];
        b.copy_from_slice(&self.bytes[self.at..self.at + K]);
        self.at += K;
        if self.endian == Endian::Big {
            b.reverse();
        }
        b
    }
    fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    fn u64_le(&mut self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[self.at..self.at + 8]);
        self.at += 8;
        u64::from_le_bytes(b)
    }
}

fn header(bytes: &[u8], endian: Endian) -> Header {
    let mut c = Cursor {
        bytes,
        at: 0,
        endian,
    };
    Header {
        time: c.f64(),
        nbodies: c.i32(),
        ndim: c.i32(),
        nsph: c.i32(),
        ndark: c.i32(),
        nstar: c.i32(),
    }
}

/// The file size a Tipsy header announces (32-byte header and records),
/// or `None` when `head` (the first 32 bytes or fewer) is no Tipsy header:
/// how much a reader of a stream of unknown length needs at most.
pub fn announced_len(head: &[u8]) -> Option<u64> {
    if head.len() < HEADER_BYTES {
        return None;
    }
    [Endian::Big, Endian::Little]
        .into_iter()
        .map(|e| header(head, e))
        .find(|h| h.ndim == 3 && h.nsph >= 0 && h.ndark >= 0 && h.nstar >= 0)
        .map(|h| {
            HEADER_BYTES as u64
                + GAS_BYTES * h.nsph as u64
                + DARK_BYTES * h.ndark as u64
                + STAR_BYTES * h.nstar as u64
        })
}

/// The flavour of a Tipsy file by its first 32 bytes: Bonsai's is
/// little-endian with version 2 in its pad word.
pub fn flavor_of(head: &[u8]) -> Flavor {
    let little = head.len() >= HEADER_BYTES && header(head, Endian::Little).ndim == 3;
    let version = head
        .get(28..32)
        .map(|w| i32::from_le_bytes(w.try_into().expect("4 bytes")));
    if little && version == Some(BONSAI_VERSION) {
        Flavor::Bonsai
    } else {
        Flavor::Standard
    }
}

/// Parses a Tipsy file; `name` appears in error messages.
pub fn decode(bytes: &[u8], name: &str) -> Result<Snapshot> {
    decode_from(bytes, bytes.len() as u64, name)
}

/// Records read from the source at a time by `decode_from`.
const CHUNK_RECORDS: usize = 1 << 18;

/// What a Tipsy file's header says, checked against the file's length:
/// where each record lies.
struct Layout {
    h: Header,
    endian: Endian,
    /// 32, or 28 where the writer left out the pad word.
    header_bytes: usize,
    /// Bonsai's flavour: 64-bit ids in the dark and star records.
    bonsai_ids: bool,
}

impl Layout {
    /// Reads and checks the header of a file of `len` bytes from its
    /// first `len.min(32)` bytes (`head`).
    fn of(head: &[u8], len: u64, name: &str) -> Result<Self> {
        if len < SHORT_HEADER_BYTES as u64 || head.len() < SHORT_HEADER_BYTES {
            return Err(bad(
                name,
                format!(
                    "truncated: {len} bytes, shorter than the {HEADER_BYTES}-byte Tipsy header"
                ),
            ));
        }
        let mut padded = [0u8; HEADER_BYTES];
        padded[..head.len().min(HEADER_BYTES)]
            .copy_from_slice(&head[..head.len().min(HEADER_BYTES)]);
        let bytes = &padded[..];
        let (big, little) = (header(bytes, Endian::Big), header(bytes, Endian::Little));
        let (h, endian) = if big.ndim == 3 {
            (big, Endian::Big)
        } else if little.ndim == 3 {
            (little, Endian::Little)
        } else {
            return Err(bad(
                name,
                format!(
                    "not a Tipsy file: ndim reads {} (big-endian) or {} (little-endian), expected 3",
                    big.ndim, little.ndim
                ),
            ));
        };
        if h.nbodies < 0 || h.nsph < 0 || h.ndark < 0 || h.nstar < 0 {
            return Err(bad(
                name,
                format!(
                    "negative particle count in header (nbodies {}, nsph {}, ndark {}, nstar {})",
                    h.nbodies, h.nsph, h.ndark, h.nstar
                ),
            ));
        }
        let total = h.nsph as i64 + h.ndark as i64 + h.nstar as i64;
        if total != h.nbodies as i64 {
            return Err(bad(
                name,
                format!(
                    "header counts disagree: nbodies = {} but nsph + ndark + nstar = {total}",
                    h.nbodies
                ),
            ));
        }
        if h.nbodies == 0 {
            return Err(bad(name, "header announces no particles"));
        }
        if !h.time.is_finite() {
            return Err(bad(name, format!("non-finite time {}", h.time)));
        }
        let records =
            GAS_BYTES * h.nsph as u64 + DARK_BYTES * h.ndark as u64 + STAR_BYTES * h.nstar as u64;
        let header_bytes = if len == records + HEADER_BYTES as u64 {
            HEADER_BYTES
        } else if len == records + SHORT_HEADER_BYTES as u64 {
            SHORT_HEADER_BYTES
        } else if len < records + HEADER_BYTES as u64 {
            return Err(bad(
                name,
                format!(
                    "truncated: header announces {} particles ({} gas, {} dark, {} star) = {} bytes, file has {len}",
                    h.nbodies,
                    h.nsph,
                    h.ndark,
                    h.nstar,
                    records + HEADER_BYTES as u64
                ),
            ));
        } else {
            return Err(bad(
                name,
                format!(
                    "{} unexpected bytes after the last of the {} particle records",
                    len - records - HEADER_BYTES as u64,
                    h.nbodies
                ),
            ));
        };
        let version = if header_bytes == HEADER_BYTES {
            Cursor {
                bytes,
                at: 28,
                endian,
            }
            .i32()
        } else {
            0
        };
        Ok(Self {
            bonsai_ids: endian == Endian::Little && version == BONSAI_VERSION,
            h,
            endian,
            header_bytes,
        })
    }

    fn n(&self) -> usize {
        self.h.nbodies as usize
    }

    /// The sections in the file's order: their kind, first particle,
    /// count and record size.
    fn sections(&self) -> [(Kind, usize, usize, u64); 3] {
        let (nsph, ndark) = (self.h.nsph as usize, self.h.ndark as usize);
        [
            (Kind::Gas, 0, nsph, GAS_BYTES),
            (Kind::Dark, nsph, ndark, DARK_BYTES),
            (Kind::Star, nsph + ndark, self.h.nstar as usize, STAR_BYTES),
        ]
    }

    /// Where particle `k`'s record starts in the file.
    fn offset_of(&self, k: usize) -> u64 {
        self.header_bytes as u64
            + self
                .sections()
                .iter()
                .map(|&(_, first, count, size)| k.saturating_sub(first).min(count) as u64 * size)
                .sum::<u64>()
    }

    /// Whether the file has records of more than one kind.
    fn mixes_kinds(&self) -> bool {
        self.h.nsph > 0 || self.h.nstar > 0
    }

    /// The kinds as Gadget numbers them (gas 0, dark 1, star 4) of the
    /// particles in `range`, where the file mixes kinds.
    fn types(&self, range: std::ops::Range<usize>) -> Option<Vec<u8>> {
        self.mixes_kinds().then(|| {
            let [_, (_, first_dark, ndark, _), _] = self.sections();
            range
                .map(|k| match k {
                    k if k < first_dark => 0,
                    k if k < first_dark + ndark => 1,
                    _ => 4,
                })
                .collect()
        })
    }
}

/// The records of particles `range` (their first at the `source`'s
/// position), parsed a piece at a time on every core: positions, masses
/// and velocities, ids (the file's, or the particles' indices), potentials
/// and the first softening a record holds.
fn read_records(
    source: &mut impl Read,
    l: &Layout,
    range: std::ops::Range<usize>,
    name: &str,
) -> Result<(Particles, Vec<f32>, Option<f32>)> {
    let n = range.len();
    let mut chunk = Vec::new();
    // Zeroed pages take memory only as the records fill them.
    let mut p = Particles {
        pos_mass: bytemuck::zeroed_vec(n),
        vel: bytemuck::zeroed_vec(n),
        id: vec![0; n],
    };
    let mut potential = vec![0f32; n];
    let mut softening = None;
    let mut base = 0;
    for (kind, first, count, size) in l.sections() {
        let size = size as usize;
        let mine = range.start.max(first)..range.end.min(first + count);
        let mut left = mine.len();
        while left > 0 {
            let records = left.min(CHUNK_RECORDS);
            left -= records;
            chunk.resize(records * size, 0);
            source
                .read_exact(&mut chunk)
                .map_err(|e| read_error(name, e))?;
            // Parsed on every core into the records' places.
            let parse = |j: usize| {
                parse_record(
                    &chunk[j * size..(j + 1) * size],
                    kind,
                    l.endian,
                    l.bonsai_ids,
                )
            };
            let at = base..base + records;
            for_each_pair(
                &mut p.pos_mass[at.clone()],
                &mut p.vel[at.clone()],
                |j, pm, v| {
                    let r = parse(j);
                    (*pm, *v) = (r.pos_mass, r.vel);
                },
            );
            let index = range.start + base;
            for_each_pair(&mut p.id[at.clone()], &mut potential[at], |j, id, phi| {
                let r = parse(j);
                (*id, *phi) = (r.id.unwrap_or((index + j) as u64), r.phi);
            });
            softening = softening.or_else(|| parse(0).eps);
            base += records;
        }
    }
    Ok((p, potential, softening))
}

/// Parses a Tipsy file of `len` bytes that `source` yields, a piece at a
/// time: a file of any size is read without a copy of its bytes in memory.
/// Its length is checked against its header before any record is read.
pub fn decode_from(mut source: impl Read, len: u64, name: &str) -> Result<Snapshot> {
    // The header, with the first bytes of the records where its pad word
    // is missing.
    let mut head = [0u8; HEADER_BYTES];
    let head_len = len.min(HEADER_BYTES as u64) as usize;
    source
        .read_exact(&mut head[..head_len])
        .map_err(|e| read_error(name, e))?;
    let l = Layout::of(&head[..head_len], len, name)?;
    let mut source = (&head[l.header_bytes..head_len]).chain(source);
    let (particles, potential, softening) = read_records(&mut source, &l, 0..l.n(), name)?;
    let mut snap = Snapshot {
        time: l.h.time,
        particles,
        softening: softening.unwrap_or(0.0),
        potential: potential.iter().any(|&x| x != 0.0).then_some(potential),
        types: l.types(0..l.n()),
    };
    if l.bonsai_ids {
        let types = bonsai_types(&mut snap.particles.id, &l, 0);
        if types.ranged || snap.types.is_some() {
            snap.types = Some(types.kinds);
        }
    }
    checked(snap, name)
}

/// Reads particles `share.of(n)` of a Tipsy file of `len` bytes, whose
/// first bytes are `head` (32, or all it has), and every record but
/// theirs left unread: `records_at(offset, count)` gives the file from
/// the share's first record on, once its count is known (a check of the
/// memory it needs goes there). Each process of a parallel run reads its
/// own part of one file. The header is checked as `decode_from` checks
/// it, and the share's values as a whole file's are; a particle named in
/// an error is named by its index in the file.
pub fn decode_share<R: Read>(
    head: &[u8],
    len: u64,
    name: &str,
    share: RankShare,
    records_at: impl FnOnce(u64, usize) -> Result<R>,
) -> Result<FileShare> {
    let l = Layout::of(head, len, name)?;
    let range = share.of(l.n());
    let mut source = records_at(l.offset_of(range.start), range.len())?;
    let (mut particles, _, _) = read_records(&mut source, &l, range.clone(), name)?;
    particles
        .check_values(range.start)
        .map_err(|problem| bad(name, problem))?;
    let (kinds, typed) = match l.bonsai_ids {
        true => {
            let mapped = bonsai_types(&mut particles.id, &l, range.start);
            (mapped.kinds, mapped.ranged || l.mixes_kinds())
        }
        // Untyped files' particles are dark matter.
        false => match l.types(range.clone()) {
            Some(kinds) => (kinds, true),
            None => (vec![1; range.len()], false),
        },
    };
    Ok(FileShare {
        snap: Snapshot {
            time: l.h.time,
            particles,
            softening: 0.0,
            potential: None,
            types: Some(kinds),
        },
        n: l.n(),
        typed,
        counted: None,
    })
}

/// One particle's record as read: its id where the file holds one
/// (Bonsai's), its softening where it holds one.
struct Record {
    pos_mass: PosMass,
    vel: Velocity,
    id: Option<u64>,
    eps: Option<f32>,
    phi: f32,
}

fn parse_record(bytes: &[u8], kind: Kind, endian: Endian, bonsai_ids: bool) -> Record {
    let mut c = Cursor {
        bytes,
        at: 0,
        endian,
    };
    let mass = c.f32();
    let pos = [c.f32(), c.f32(), c.f32()];
    let vel = [c.f32(), c.f32(), c.f32()];
    // Fields between velocity and the eps/phi pair: rho, temp, hsmooth,
    // metals (gas); metals, tform (star).
    let skip = match kind {
        Kind::Gas => 4,
        Kind::Dark => 0,
        Kind::Star => 2,
    };
    c.at += 4 * skip;
    let (id, eps, phi) = if bonsai_ids && kind != Kind::Gas {
        (Some(c.u64_le()), None, 0.0)
    } else if kind == Kind::Gas {
        (None, None, c.f32())
    } else {
        let eps = c.f32();
        (None, Some(eps), c.f32())
    };
    Record {
        pos_mass: PosMass { pos, mass },
        vel: Velocity::new(vel),
        id,
        eps,
        phi,
    }
}

/// The kinds Bonsai's id ranges say, and whether any id carried one.
struct BonsaiTypes {
    kinds: Vec<u8>,
    ranged: bool,
}

/// Takes Bonsai's id ranges off `ids` (particles `first`… of the file)
/// and keeps what they said: dark matter (≥ 3e18) is a halo particle,
/// 2e18… a bulge particle; other star records are Bonsai's disk. A file
/// without those ranges and with one kind of record keeps no types (as
/// before), which `ranged` tells its readers.
fn bonsai_types(ids: &mut [u64], l: &Layout, first: usize) -> BonsaiTypes {
    let (nsph, ndark) = (l.h.nsph as usize, l.h.ndark as usize);
    let ranged = ids.iter().any(|&id| id >= BONSAI_BULGE_ID);
    let mut kinds = vec![0u8; ids.len()];
    for_each_pair(ids, &mut kinds, |j, id, t| {
        let k = first + j;
        *t = if *id >= BONSAI_DARK_ID {
            *id -= BONSAI_DARK_ID;
            1
        } else if *id >= BONSAI_BULGE_ID {
            *id -= BONSAI_BULGE_ID;
            3
        } else if k < nsph {
            0
        } else if k < nsph + ndark {
            1
        } else {
            2
        };
    });
    BonsaiTypes { kinds, ranged }
}

/// Encodes a snapshot: untyped particles as dark-matter records; typed
/// ones in the records of their kind (`record`), with Bonsai's id ranges
/// in its flavour. Refuses ids that Bonsai's ranges cannot hold
/// (`check_bonsai_ids`) rather than change them.
pub fn encode(snap: &Snapshot, flavor: Flavor) -> Result<Vec<u8>> {
    if flavor == Flavor::Bonsai {
        check_bonsai_ids(&snap.particles.id, snap.types.as_deref())?;
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + snap.particles.len() * STAR_BYTES as usize);
    write_to(snap, flavor, &mut out).expect("writing to memory");
    Ok(out)
}

/// The bytes of `encode` into `out`, a record at a time: a file of any
/// size is written without a copy of it in memory. The caller has checked
/// the ids (`check_bonsai_ids`, as `encode` does).
pub fn write_to(
    snap: &Snapshot,
    flavor: Flavor,
    out: &mut (impl Write + ?Sized),
) -> std::io::Result<()> {
    let n = snap.particles.len();
    let types = snap.types.as_deref().filter(|t| t.len() == n);
    let rec_of = |k: usize| types.map_or(Kind::Dark, |t| record(flavor, t[k]));
    // Counted on every core (exact: counts below 2^53).
    let counts = sum_by_chunks(n, |k| {
        let r = rec_of(k);
        RECORDS.map(|kind| (r == kind) as u8 as f64)
    });
    out.write_all(&header_bytes(snap.time, counts.map(|c| c as u64), flavor))?;
    write_records(snap, flavor, record_order(snap, flavor), out)
}

/// The records of `snap`'s particles `order` (indices, in the file's
/// order) into `out`.
fn write_records(
    snap: &Snapshot,
    flavor: Flavor,
    mut order: impl Iterator<Item = usize>,
    out: &mut (impl Write + ?Sized),
) -> std::io::Result<()> {
    let p = &snap.particles;
    let n = p.len();
    let endian = endian_of(flavor);
    let kind = |k: usize| snap.types.as_ref().filter(|t| t.len() == n).map(|t| t[k]);
    let rec_of = |k: usize| kind(k).map_or(Kind::Dark, |t| record(flavor, t));
    let encode = |k: usize| {
        let mut rec = RecordBytes::new(endian);
        rec.put(&p.pos_mass[k].mass.to_le_bytes());
        for x in p.pos_mass[k].pos.iter().chain(&p.vel[k].vel) {
            rec.put(&x.to_le_bytes());
        }
        let phi = snap.potential.as_ref().map_or(0.0, |v| v[k]);
        match rec_of(k) {
            // A gas record's rho, temp, hsmooth and metals (webgrav's gas
            // is collisionless: none of them), then phi.
            Kind::Gas => [0.0, 0.0, 0.0, 0.0, phi]
                .iter()
                .for_each(|x: &f32| rec.put(&x.to_le_bytes())),
            // A star record's metals and formation time.
            Kind::Star => [0f32; 2].iter().for_each(|x| rec.put(&x.to_le_bytes())),
            Kind::Dark => {}
        }
        match (flavor, rec_of(k)) {
            (_, Kind::Gas) => {}
            (Flavor::Standard, _) => {
                rec.put(&snap.softening.to_le_bytes());
                rec.put(&phi.to_le_bytes());
            }
            (Flavor::Bonsai, _) => {
                // In range: checked by the caller. Bonsai's ids are
                // little-endian in either flavour's byte order.
                let (base, _) = bonsai_range(kind(k));
                rec.put_le(&base.wrapping_add(p.id[k]).to_le_bytes());
            }
        }
        rec
    };
    // Records encoded on every core a piece at a time, each core's run of
    // records straight into bytes of its own, written in order.
    const RUN: usize = 4096;
    let mut piece = Vec::new();
    loop {
        piece.clear();
        piece.extend(order.by_ref().take(CHUNK_RECORDS));
        if piece.is_empty() {
            return Ok(());
        }
        let runs = map_indices(piece.len().div_ceil(RUN), |r| {
            let run = &piece[r * RUN..((r + 1) * RUN).min(piece.len())];
            let mut bytes = Vec::with_capacity(run.len() * GAS_BYTES as usize);
            for &k in run {
                bytes.extend_from_slice(encode(k).bytes());
            }
            bytes
        });
        for bytes in &runs {
            out.write_all(bytes)?;
        }
    }
}

/// Tipsy's record kinds in file order: gas, dark matter, stars.
const RECORDS: [Kind; 3] = [Kind::Gas, Kind::Dark, Kind::Star];

fn endian_of(flavor: Flavor) -> Endian {
    match flavor {
        Flavor::Standard => Endian::Big,
        Flavor::Bonsai => Endian::Little,
    }
}

/// The file's header: its time and its numbers of gas, dark and star
/// records (in `RECORDS` order).
pub fn header_bytes(time: f64, counts: [u64; 3], flavor: Flavor) -> Vec<u8> {
    let mut head = RecordBytes::new(endian_of(flavor));
    head.put(&time.to_le_bytes());
    let version = if flavor == Flavor::Bonsai {
        BONSAI_VERSION
    } else {
        0
    };
    let [nsph, ndark, nstar] = counts.map(|c| c as i32);
    let n = nsph + ndark + nstar;
    for word in [n, 3, nsph, ndark, nstar, version] {
        head.put(&word.to_le_bytes());
    }
    head.bytes().to_vec()
}

/// Which of the file's record sections (`RECORDS` order: 0 gas, 1 dark, 2
/// stars) holds a particle of `kind` (`None`: untyped, a dark record).
pub fn record_section(flavor: Flavor, kind: Option<u8>) -> usize {
    let r = kind.map_or(Kind::Dark, |t| record(flavor, t));
    RECORDS.iter().position(|&k| k == r).expect("a record kind")
}

/// The bytes of one record of record section `section` (`RECORDS` order).
pub fn record_len(section: usize) -> u64 {
    [GAS_BYTES, DARK_BYTES, STAR_BYTES][section]
}

/// `snap`'s particles in record section `section` (`record_section`),
/// in their order: one rank's records of that section in a file written
/// in parts.
pub fn section_indices(snap: &Snapshot, flavor: Flavor, section: usize) -> Vec<u32> {
    let n = snap.particles.len();
    let types = snap.types.as_deref().filter(|t| t.len() == n);
    indices_where(n, |k| {
        record_section(flavor, types.map(|t| t[k])) == section
    })
}

/// The records of `snap`'s particles `keep` (of one record section), in
/// that order.
pub fn records_bytes(snap: &Snapshot, flavor: Flavor, keep: &[u32]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let order = keep.iter().map(|&k| k as usize);
    write_records(snap, flavor, order, &mut bytes).expect("writing to memory");
    bytes
}

/// The bytes of one record (or the header), words in the file's order.
struct RecordBytes {
    b: [u8; GAS_BYTES as usize],
    len: usize,
    endian: Endian,
}

impl RecordBytes {
    fn new(endian: Endian) -> Self {
        Self {
            b: [0; GAS_BYTES as usize],
            len: 0,
            endian,
        }
    }
    /// A little-endian word, in the file's byte order.
    fn put(&mut self, le: &[u8]) {
        self.put_le(le);
        if self.endian == Endian::Big {
            self.b[self.len - le.len()..self.len].reverse();
        }
    }
    /// Bytes as they are.
    fn put_le(&mut self, le: &[u8]) {
        self.b[self.len..self.len + le.len()].copy_from_slice(le);
        self.len += le.len();
    }
    fn bytes(&self) -> &[u8] {
        &self.b[..self.len]
    }
}
