//! Checkpoints: everything a run needs to continue exactly where it was,
//! in the integrator's own precision, as one versioned binary file with a
//! checksum. A leapfrog checkpoint holds the GPU state as it lies (the
//! tree's key order, the forces of the last evaluation, the upload index);
//! a Hermite checkpoint holds the f64 bodies (each with its own time and
//! step) and the counters. `Run::resume` of a checkpoint continues
//! bit-identically to the run that wrote it, on the same adapter.
//!
//! Layout (little-endian): magic `WGCHKPT\n`, version (u32), the run
//! parameters, time, steps, ids, E₀ and dE_max, the engine's state, then
//! an FNV-1a 64 checksum of everything before it. Version 2 added the
//! 6th-order time-step criterion to the parameters and `dp` (code 2) to
//! the precisions; version 3 the tree's rebuild interval (version 2 files
//! read as rebuilding every step); version 4 the tolerance of the tree's
//! acceleration MAC (older files read as the opening angle MAC); version 5
//! the run's identity and the origin of its output grid (after the base
//! step count; older files read as identity 0, which owns no series, and
//! the base time as the origin) and the particles' kinds (after the ids);
//! version 6 the tree's time steps and their levels (after α; older files
//! read as shared steps); version 7 changed only the checksum, from FNV-1a
//! 64 (one byte at a time, ~3 s per gigabyte: longer than the disk takes)
//! to XXH3-64; version 8 the deepest level the tree's next build records
//! (after the levels; older files read as every level), so that a resumed
//! tree run sorts and builds as the run that wrote it would have;
//! version 9 what the run was asked to do beyond its physics (after
//! dE_max: a length and UTF-8 text, empty if none; the CLI keeps its end
//! time, outputs and schedules there as JSON, so a bare `--resume`
//! finishes the run as asked).
//! Version 1 files are refused with a message.
//!
//! The ranks of a parallel run write one leapfrog checkpoint together,
//! each its own records at their place (`write_parted`), and each reads
//! back only its share of them (`Checkpoint::read_path_share`), checking
//! the whole file's checksum: no process holds every particle's state.
//!
//! A checkpoint is written as it is encoded (`Checkpoint::write_to`, the
//! checksum summed on the way; a leapfrog run's particle arrays go from
//! the GPU to the file a piece at a time, `StateWriter`), read only as far as its header says it
//! reaches (`read_file`), and its contents are checked against each other before
//! a run is built from them: times and step counts, and every Hermite
//! body's step (a power of two the integrator can take).

use super::block::Timesteps;
use super::params::RunParams;
use super::SolverKind;
use crate::error::{Error, Result};
use crate::hermite::integrator::DT_MIN;
use crate::hermite::{Body, Criterion, HermiteStats, Precision};
use crate::state::particles::StateReadback;
use crate::state::share::RankShare;
use crate::state::Diagnostics;
use crate::tree::layout::MAX_DEPTH;
use std::ops::Range;

const MAGIC: &[u8; 8] = b"WGCHKPT\n";
/// The format's version; a reader takes it and versions 2 to 8.
pub const VERSION: u32 = 9;

/// Most bytes of a checkpoint's request (`Checkpoint::request`).
pub const MAX_REQUEST: usize = 1 << 16;

/// The first version whose checksum is XXH3-64 (FNV-1a 64 before).
const XXH3_VERSION: u32 = 7;

/// Most time-step levels a Hermite checkpoint may list: the integrator's
/// steps reach from `dt_max` down to `DT_MIN` = 2^-40.
const MAX_LEVELS: usize = 64;

/// The state of one integrator.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineState {
    /// The GPU state as read back: GPU order, forces included;
    /// `index[k]` is the input position of record k.
    Leapfrog(StateReadback),
    Hermite(HermiteState),
}

/// The state of a Hermite integrator.
#[derive(Clone, Debug, PartialEq)]
pub struct HermiteState {
    /// Run time of the integrator's t = 0, its target and its time.
    pub offset: f64,
    pub target: f64,
    pub time: f64,
    pub stats: HermiteStats,
    pub bodies: Vec<Body>,
}

/// A run's complete state.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub params: RunParams,
    pub time: f64,
    pub steps: u64,
    /// Where leapfrog time is counted from (`Run`'s `base_time`) and the
    /// steps since, so a resumed run counts the same times to the bit.
    pub base_time: f64,
    pub base_steps: u64,
    /// The start time of the run that the checkpoint continues (through
    /// any number of resumes): logs, snapshots and checkpoints fall on
    /// its grid `origin + k × every`.
    pub origin: f64,
    /// The identity of that run (0: unknown, a version 4 file), which its
    /// series index carries, so a resumed run knows its own series.
    pub run_id: u64,
    /// Ids in input order.
    pub ids: Vec<u64>,
    /// Particle kinds in input order (Gadget-2's numbering), if the run
    /// has them.
    pub types: Option<Vec<u8>>,
    pub e0: Option<Diagnostics>,
    pub de_max: f64,
    /// The deepest level the tree's next build records
    /// (`TreeSolver::deepest_level`; `MAX_DEPTH` for other solvers).
    pub tree_deepest: u32,
    /// What the run was asked to do beyond its physics, as its front end
    /// wrote it (the CLI: JSON of its end time and outputs; empty: none).
    pub request: String,
    pub engine: EngineState,
}

/// FNV-1a, 64 bits: the checksum of versions 2 to 6, against truncated
/// or damaged files (not against tampering).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The checksum of a checkpoint's `body` in the format `version`.
fn checksum(version: u32, body: &[u8]) -> u64 {
    if version >= XXH3_VERSION {
        xxhash_rust::xxh3::xxh3_64(body)
    } else {
        fnv1a(body)
    }
}

/// The encoder's output: bytes go to a writer as they come, summed on
/// the way (a checkpoint of any size is written without a copy of it in
/// memory); the first write error is kept and ends the writing.
struct Out<'a> {
    w: &'a mut dyn std::io::Write,
    sum: xxhash_rust::xxh3::Xxh3Default,
    error: Option<std::io::Error>,
}

impl<'a> Out<'a> {
    fn new(w: &'a mut dyn std::io::Write) -> Self {
        Self {
            w,
            sum: xxhash_rust::xxh3::Xxh3Default::new(),
            error: None,
        }
    }
    fn put(&mut self, b: &[u8]) {
        if self.error.is_none() {
            self.sum.update(b);
            self.error = self.w.write_all(b).err();
        }
    }
    fn u32(&mut self, x: u32) {
        self.put(&x.to_le_bytes());
    }
    fn u64(&mut self, x: u64) {
        self.put(&x.to_le_bytes());
    }
    fn f32(&mut self, x: f32) {
        self.put(&x.to_le_bytes());
    }
    fn f64(&mut self, x: f64) {
        self.put(&x.to_le_bytes());
    }
    fn f64s(&mut self, xs: &[f64]) {
        xs.iter().for_each(|&x| self.f64(x));
    }
    fn pod<T: bytemuck::Pod>(&mut self, xs: &[T]) {
        self.u64(xs.len() as u64);
        self.put(bytemuck::cast_slice(xs));
    }
    /// The checksum of everything before it, then the first error.
    fn seal(mut self) -> std::io::Result<()> {
        let sum = self.sum.digest();
        self.u64(sum);
        self.error.map_or(Ok(()), Err)
    }
}

/// A checksum being summed as bytes are read: FNV-1a 64 (versions 2 to
/// 6) or XXH3-64. (Files are read natively only.)
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
enum Sum {
    Fnv(u64),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3Default>),
}

#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
impl Sum {
    fn for_version(version: u32) -> Self {
        if version >= XXH3_VERSION {
            Sum::Xxh3(Box::default())
        } else {
            Sum::Fnv(0xcbf2_9ce4_8422_2325)
        }
    }
    fn update(&mut self, b: &[u8]) {
        match self {
            Sum::Fnv(h) => {
                *h = b.iter().fold(*h, |h, &b| {
                    (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
                })
            }
            Sum::Xxh3(x) => x.update(b),
        }
    }
    fn digest(&self) -> u64 {
        match self {
            Sum::Fnv(h) => *h,
            Sum::Xxh3(x) => x.digest(),
        }
    }
}

fn bad(name: &str, problem: impl Into<String>) -> Error {
    Error::BadSnapshot {
        path: name.to_string(),
        problem: format!("checkpoint: {}", problem.into()),
    }
}

fn read_error(name: &str, source: std::io::Error) -> Error {
    match source.kind() {
        std::io::ErrorKind::UnexpectedEof => bad(name, "truncated"),
        _ => Error::Io {
            path: name.to_string(),
            source,
        },
    }
}

/// What a checkpoint is decoded from: its bytes in memory (whose checksum
/// `decode` checks first), or a file read as it is parsed, its body's
/// `left` bytes summed on the way (`read_path` checks the sum at the end).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
enum Src<'a> {
    Bytes {
        b: &'a [u8],
        at: usize,
    },
    Stream {
        r: &'a mut dyn std::io::Read,
        left: u64,
        sum: Sum,
        /// The bytes of the last `take`.
        scratch: Vec<u8>,
    },
}

struct In<'a> {
    src: Src<'a>,
    name: &'a str,
}

impl In<'_> {
    fn bad(&self, problem: impl Into<String>) -> Error {
        bad(self.name, problem)
    }
    /// Bytes of the body not read yet.
    fn remaining(&self) -> u64 {
        match &self.src {
            Src::Bytes { b, at } => (b.len() - at) as u64,
            Src::Stream { left, .. } => *left,
        }
    }
    fn take(&mut self, k: usize) -> Result<&[u8]> {
        if k as u64 > self.remaining() {
            return Err(self.bad("truncated"));
        }
        match &mut self.src {
            Src::Bytes { b, at } => {
                let s = &b[*at..*at + k];
                *at += k;
                Ok(s)
            }
            Src::Stream {
                r,
                left,
                sum,
                scratch,
            } => {
                scratch.resize(k, 0);
                if let Err(e) = r.read_exact(scratch) {
                    return Err(read_error(self.name, e));
                }
                sum.update(scratch);
                *left -= k as u64;
                Ok(scratch)
            }
        }
    }
    /// The next `K` bytes.
    fn bytes<const K: usize>(&mut self) -> Result<[u8; K]> {
        Ok(self.take(K)?.try_into().expect("K bytes"))
    }
    fn u32(&mut self) -> Result<u32> {
        self.bytes().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64> {
        self.bytes().map(u64::from_le_bytes)
    }
    fn f32(&mut self) -> Result<f32> {
        self.bytes().map(f32::from_le_bytes)
    }
    fn f64(&mut self) -> Result<f64> {
        self.bytes().map(f64::from_le_bytes)
    }
    fn f64s<const K: usize>(&mut self) -> Result<[f64; K]> {
        let mut a = [0.0; K];
        for x in &mut a {
            *x = self.f64()?;
        }
        Ok(a)
    }
    /// A record count, then as many records (`expect` of them, if given).
    fn pod<T: bytemuck::Pod>(&mut self, expect: Option<usize>) -> Result<Vec<T>> {
        let n = self.u64()?;
        if expect.is_some_and(|e| e as u64 != n) {
            return Err(self.bad(format!(
                "{n} records where {} were expected",
                expect.unwrap_or(0)
            )));
        }
        self.records(n)
    }
    /// A count that must be `n`, then `n` records of which only those of
    /// `keep` are kept (the rest read past, summed all the same).
    fn pod_part<T: bytemuck::Pod>(&mut self, n: usize, keep: Range<usize>) -> Result<Vec<T>> {
        if self.u64()? != n as u64 {
            return Err(self.bad("a particle array whose length differs from the id count"));
        }
        let size = std::mem::size_of::<T>() as u64;
        self.skip(keep.start as u64 * size)?;
        let kept = self.records(keep.len() as u64)?;
        self.skip((n - keep.end) as u64 * size)?;
        Ok(kept)
    }
    /// Reads past `k` bytes.
    fn skip(&mut self, k: u64) -> Result<()> {
        if k > self.remaining() {
            return Err(self.bad("truncated"));
        }
        match &mut self.src {
            Src::Bytes { at, .. } => *at += k as usize,
            Src::Stream { .. } => {
                let mut left = k;
                while left > 0 {
                    let piece = left.min(1 << 20) as usize;
                    self.take(piece)?;
                    left -= piece as u64;
                }
            }
        }
        Ok(())
    }
    /// `n` records, their count known: read straight into their array (a
    /// file's records are never in memory twice), once the body is known
    /// to hold them.
    fn records<T: bytemuck::Pod>(&mut self, n: u64) -> Result<Vec<T>> {
        let bytes = n
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| self.bad("record count overflows"))?;
        if bytes > self.remaining() {
            return Err(self.bad("truncated"));
        }
        let name = self.name;
        match &mut self.src {
            Src::Bytes { .. } => Ok(bytemuck::pod_collect_to_vec(self.take(bytes as usize)?)),
            Src::Stream { r, left, sum, .. } => {
                let mut v: Vec<T> = bytemuck::zeroed_vec(n as usize);
                let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut v);
                if let Err(e) = r.read_exact(dst) {
                    return Err(read_error(name, e));
                }
                sum.update(dst);
                *left -= bytes;
                Ok(v)
            }
        }
    }
}

fn solver_code(s: SolverKind) -> u32 {
    SolverKind::ALL
        .iter()
        .position(|&k| k == s)
        .expect("listed") as u32
}

fn put_diagnostics(o: &mut Out, d: &Diagnostics) {
    o.f64s(&[d.kinetic, d.potential, d.total, d.virial_ratio]);
    o.f64s(&d.momentum);
    o.f64s(&d.angular_momentum);
    o.f64s(&d.center_of_mass);
}

fn get_diagnostics(i: &mut In) -> Result<Diagnostics> {
    let [kinetic, potential, total, virial_ratio] = i.f64s::<4>()?;
    Ok(Diagnostics {
        kinetic,
        potential,
        total,
        virial_ratio,
        momentum: i.f64s()?,
        angular_momentum: i.f64s()?,
        center_of_mass: i.f64s()?,
    })
}

/// The size of a checkpoint of `n` particles, near enough for a progress
/// bar.
pub fn approximate_len(n: usize, hermite: bool) -> u64 {
    n as u64 * if hermite { 185 } else { 61 }
}

/// A checkpoint's fields before its integrator's state, borrowed from a
/// `Checkpoint` or from the run that streams one (`StateWriter`), so that
/// neither copies the ids.
pub struct Preamble<'a> {
    pub params: &'a RunParams,
    pub time: f64,
    pub steps: u64,
    pub base_time: f64,
    pub base_steps: u64,
    pub origin: f64,
    pub run_id: u64,
    pub ids: &'a [u64],
    pub types: Option<&'a [u8]>,
    pub e0: Option<Diagnostics>,
    pub de_max: f64,
    pub tree_deepest: u32,
    pub request: &'a str,
}

impl Preamble<'_> {
    fn write(&self, o: &mut Out) {
        self.write_head(o);
        o.pod(self.ids);
        o.u32(self.types.is_some() as u32);
        if let Some(t) = self.types {
            o.pod(t);
        }
        self.write_tail(o);
    }

    /// The preamble up to the ids' count.
    fn write_head(&self, o: &mut Out) {
        o.put(MAGIC);
        o.u32(VERSION);
        let p = self.params;
        o.u32(solver_code(p.solver));
        o.f32(p.eps);
        o.f64(p.dt);
        o.f32(p.theta);
        o.f64(p.eta);
        o.u32(
            Criterion::ALL
                .iter()
                .position(|&c| c == p.criterion)
                .expect("listed") as u32,
        );
        // 1 ds, 0 f32 (version 1's codes), 2 dp.
        o.u32(match p.precision {
            Precision::F32 => 0,
            Precision::Ds => 1,
            Precision::Dp => 2,
            Precision::DsFast => 3,
        });
        o.f64(p.dt_max);
        o.u32(p.rebuild);
        o.f32(p.alpha);
        o.u32(
            Timesteps::ALL
                .iter()
                .position(|&t| t == p.timesteps)
                .expect("listed") as u32,
        );
        o.u32(p.levels);
        o.u32(self.tree_deepest);
        o.f64(self.time);
        o.u64(self.steps);
        o.f64(self.base_time);
        o.u64(self.base_steps);
        o.f64(self.origin);
        o.u64(self.run_id);
    }

    /// The preamble after the ids and the kinds.
    fn write_tail(&self, o: &mut Out) {
        o.u32(self.e0.is_some() as u32);
        put_diagnostics(o, &self.e0.unwrap_or_default());
        o.f64(self.de_max);
        o.u32(self.request.len() as u32);
        o.put(self.request.as_bytes());
    }
}

/// A leapfrog checkpoint written as its state comes back from the GPU:
/// the preamble, then each particle array (positions and masses,
/// velocities, forces, upload indices, as `EngineState::Leapfrog` holds
/// them) a piece at a time, then the checksum. The bytes are those of
/// `Checkpoint::encode` of the same state; the host holds a piece, not
/// the state (52 bytes per particle).
pub struct StateWriter<'a> {
    o: Out<'a>,
}

impl<'a> StateWriter<'a> {
    pub fn start(w: &'a mut dyn std::io::Write, preamble: &Preamble) -> Self {
        let mut o = Out::new(w);
        preamble.write(&mut o);
        o.u32(0);
        Self { o }
    }
    /// Starts the next array, of `n` records.
    pub fn array(&mut self, n: usize) {
        self.o.u64(n as u64);
    }
    /// The next bytes of the array under way.
    pub fn bytes(&mut self, b: &[u8]) {
        self.o.put(b);
    }
    /// Whether a write has failed (the rest would be lost).
    pub fn failed(&self) -> bool {
        self.o.error.is_some()
    }
    pub fn finish(self) -> std::io::Result<()> {
        self.o.seal()
    }
}

/// A leapfrog checkpoint written by the ranks of a run together, each
/// with its part of the particles (`preamble`'s ids and kinds, `state`'s
/// records, in one order), the ranks' parts in rank order being the whole
/// (`snapshot::parted`): the bytes of `encode` of the whole, its upload
/// index the identity, with no process holding more than its part. Every
/// rank returns the same outcome; a failed write leaves the old file.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_parted(
    path: &str,
    preamble: &Preamble,
    state: &StateReadback,
    ranks: &dyn crate::snapshot::parted::Ranks,
) -> Result<()> {
    use crate::snapshot::parted::{write_pieces, Piece, RecordsOf};
    let mine = preamble.ids.len();
    let lens = ranks.all_gather(&[mine as u64]);
    let n: u64 = lens.iter().map(|l| l[0]).sum();
    let first: u64 = lens[..ranks.rank()].iter().map(|l| l[0]).sum();
    let framing = |f: &dyn Fn(&mut Out)| {
        let mut bytes = Vec::new();
        f(&mut Out::new(&mut bytes));
        Piece::Framing(bytes)
    };
    // Each rank's records, all of them, in their order.
    let records = |size: usize, encode| whole_part(size, mine, encode);
    fn whole_part(size: usize, mine: usize, encode: RecordsOf<'_>) -> Piece<'_> {
        Piece::Records {
            size: size as u64,
            keep: Box::new(move || (0..mine as u32).collect()),
            encode,
        }
    }
    // `keep` is every record in order, so a run is a range of them.
    fn range(run: &[u32]) -> Range<usize> {
        let first = run.first().map_or(0, |&k| k as usize);
        debug_assert!(run
            .last()
            .is_none_or(|&k| k as usize == first + run.len() - 1));
        first..first + run.len()
    }
    fn of<T: bytemuck::Pod>(xs: &[T]) -> RecordsOf<'_> {
        Box::new(move |run: &[u32]| bytemuck::cast_slice(&xs[range(run)]).to_vec())
    }
    let count = || framing(&|o| o.u64(n));
    let mut pieces = vec![
        framing(&|o| {
            preamble.write_head(o);
            o.u64(n);
        }),
        records(8, of(preamble.ids)),
        framing(&|o| {
            o.u32(preamble.types.is_some() as u32);
            if preamble.types.is_some() {
                o.u64(n);
            }
        }),
    ];
    if let Some(types) = preamble.types {
        pieces.push(records(1, of(types)));
    }
    pieces.extend([
        framing(&|o| {
            preamble.write_tail(o);
            o.u32(0);
            o.u64(n);
        }),
        records(16, of(&state.pos_mass)),
        count(),
        records(16, of(&state.vel)),
        count(),
        records(16, of(&state.acc_pot)),
        count(),
        records(
            4,
            Box::new(move |run: &[u32]| {
                let index: Vec<u32> = range(run).map(|k| first as u32 + k as u32).collect();
                bytemuck::cast_slice(&index).to_vec()
            }),
        ),
        Piece::Xxh3Trailer,
    ]);
    write_pieces(path, pieces, ranks)
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        self.write_to(&mut bytes).expect("writing to memory");
        bytes
    }

    /// The bytes of `encode` into `w`, as they are made.
    pub fn write_to(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut o = Out::new(w);
        self.preamble().write(&mut o);
        match &self.engine {
            EngineState::Leapfrog(s) => {
                o.u32(0);
                o.pod(&s.pos_mass);
                o.pod(&s.vel);
                o.pod(&s.acc_pot);
                o.pod(&s.index);
            }
            EngineState::Hermite(h) => {
                let (stats, bodies) = (&h.stats, &h.bodies);
                o.u32(1);
                o.f64s(&[h.offset, h.target, h.time]);
                o.u64(stats.block_steps);
                o.u64(stats.force_evaluations);
                o.pod(&stats.steps_per_level);
                o.u64(bodies.len() as u64);
                for b in bodies {
                    o.f64s(&[b.mass, b.t0, b.dt]);
                    for v in [b.pos, b.vel, b.acc, b.jerk, b.snap, b.crackle] {
                        o.f64s(&v);
                    }
                    o.f64(b.pot);
                }
            }
        }
        o.seal()
    }

    /// Everything before the integrator's state.
    fn preamble(&self) -> Preamble<'_> {
        Preamble {
            params: &self.params,
            time: self.time,
            steps: self.steps,
            base_time: self.base_time,
            base_steps: self.base_steps,
            origin: self.origin,
            run_id: self.run_id,
            ids: &self.ids,
            types: self.types.as_deref(),
            e0: self.e0,
            de_max: self.de_max,
            tree_deepest: self.tree_deepest,
            request: &self.request,
        }
    }

    /// The file size of `encode`, near enough for a progress bar.
    pub fn approximate_len(&self) -> u64 {
        approximate_len(
            self.ids.len(),
            matches!(self.engine, EngineState::Hermite(_)),
        )
    }

    /// Parses a checkpoint; `name` appears in error messages.
    pub fn decode(bytes: &[u8], name: &str) -> Result<Self> {
        Self::decode_share(bytes, name, None)
    }

    fn decode_share(bytes: &[u8], name: &str, share: Option<RankShare>) -> Result<Self> {
        if bytes.len() < MAGIC.len() + 12 || &bytes[..8] != MAGIC {
            return Err(bad(name, "not a webgrav checkpoint"));
        }
        let body = &bytes[..bytes.len() - 8];
        let sum = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().expect("8 bytes"));
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if checksum(version, body) != sum {
            return Err(bad(name, "checksum mismatch (damaged or truncated file)"));
        }
        Self::read(
            &mut In {
                src: Src::Bytes { b: body, at: 0 },
                name,
            },
            share,
        )
    }

    /// Reads a checkpoint file as it is parsed (read ahead on a thread of
    /// its own; each array straight into its place, summed on the way):
    /// the host holds the decoded state, not the file's bytes besides. A
    /// file damaged anywhere is refused for its checksum, as `decode`
    /// refuses it, even where its parsing stopped first. Anything but a
    /// regular file (a pipe, a device) is read as `read_file` reads it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_path(path: &str) -> Result<Self> {
        Self::read_path_share(path, None)
    }

    /// `read_path` for one of the ranks of a run (`share`): a leapfrog
    /// state's records are only this rank's, the rest of the file read
    /// past (and summed: every rank checks the whole file), so that no
    /// rank holds every particle's state. The ids and kinds are whole
    /// (`StateReadback::index` of the share points into them).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_path_share(path: &str, share: Option<RankShare>) -> Result<Self> {
        use std::io::Read as _;
        let io = |source| Error::Io {
            path: path.to_string(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Self::decode_share(&read_file(path)?, path, share);
        }
        // The header first: a file longer than a checkpoint of its N can
        // be is refused before anything else is read, as `read_file` does.
        let mut head = Vec::new();
        (&mut file).take(256).read_to_end(&mut head).map_err(io)?;
        let (version, longest) = announced(&head, path)?;
        if meta.len() > longest {
            return Err(too_long(path, &head));
        }
        if meta.len() < MAGIC.len() as u64 + 12 {
            return Err(bad(path, "not a webgrav checkpoint"));
        }
        // Parsed from the first byte: the header's bytes again, then the
        // rest read ahead.
        let mut source = (&head[..]).chain(crate::snapshot::ReadAhead::new(file));
        let mut i = In {
            src: Src::Stream {
                r: &mut source,
                left: meta.len() - 8,
                sum: Sum::for_version(version),
                scratch: Vec::new(),
            },
            name: path,
        };
        let parsed = Self::read(&mut i, share);
        // What was not parsed is summed too, so that damage anywhere is
        // told as such.
        let Src::Stream { r, left, sum, .. } = &mut i.src else {
            unreachable!("a stream")
        };
        let mut rest = vec![0u8; 1 << 20];
        while *left > 0 {
            let k = (*left).min(rest.len() as u64) as usize;
            r.read_exact(&mut rest[..k])
                .map_err(|e| read_error(path, e))?;
            sum.update(&rest[..k]);
            *left -= k as u64;
        }
        let mut stored = [0u8; 8];
        r.read_exact(&mut stored).map_err(|e| read_error(path, e))?;
        if sum.digest() != u64::from_le_bytes(stored) {
            return Err(bad(path, "checksum mismatch (damaged or truncated file)"));
        }
        parsed
    }

    /// The checkpoint `i` holds, from its first byte to its checksum; of a
    /// leapfrog state only `share`'s records if given (`RankShare`).
    fn read(i: &mut In, share: Option<RankShare>) -> Result<Self> {
        let h = Head::read(i)?;
        let ids: Vec<u64> = i.records(h.n as u64)?;
        let n = ids.len();
        let types = if h.version >= 5 && i.u32()? == 1 {
            Some(i.pod(Some(n))?)
        } else {
            None
        };
        let has_e0 = i.u32()? == 1;
        let e0 = get_diagnostics(i)?;
        let de_max = i.f64()?;
        let request = if h.version >= 9 {
            let len = i.u32()? as usize;
            if len > MAX_REQUEST {
                return Err(i.bad(format!("a request of {len} bytes (at most {MAX_REQUEST})")));
            }
            String::from_utf8(i.take(len)?.to_vec())
                .map_err(|_| i.bad("a request that is not UTF-8 text"))?
        } else {
            String::new()
        };
        let engine = match i.u32()? {
            0 => {
                let keep = share.map_or(0..n, |s| s.of(n));
                EngineState::Leapfrog(StateReadback {
                    pos_mass: i.pod_part(n, keep.clone())?,
                    vel: i.pod_part(n, keep.clone())?,
                    acc_pot: i.pod_part(n, keep.clone())?,
                    index: i.pod_part(n, keep)?,
                })
            }
            1 => {
                let [offset, target, time] = i.f64s::<3>()?;
                let block_steps = i.u64()?;
                let force_evaluations = i.u64()?;
                let levels = i.u64()?;
                if levels as usize > MAX_LEVELS {
                    return Err(i.bad(format!("{levels} time-step levels")));
                }
                let stats = HermiteStats {
                    block_steps,
                    force_evaluations,
                    steps_per_level: i.records(levels)?,
                };
                if i.u64()? as usize != n {
                    return Err(i.bad("body count differs from the id count"));
                }
                let mut bodies = Vec::with_capacity(n.min(i.remaining() as usize / 176));
                for _ in 0..n {
                    let [mass, t0, dt] = i.f64s::<3>()?;
                    bodies.push(Body {
                        mass,
                        t0,
                        dt,
                        pos: i.f64s()?,
                        vel: i.f64s()?,
                        acc: i.f64s()?,
                        jerk: i.f64s()?,
                        snap: i.f64s()?,
                        crackle: i.f64s()?,
                        pot: i.f64()?,
                    });
                }
                EngineState::Hermite(HermiteState {
                    offset,
                    target,
                    time,
                    stats,
                    bodies,
                })
            }
            _ => return Err(i.bad("unknown integrator")),
        };
        if i.remaining() != 0 {
            return Err(i.bad("unexpected bytes after the state"));
        }
        let c = Self {
            params: h.params,
            time: h.time,
            steps: h.steps,
            base_time: h.base_time,
            base_steps: h.base_steps,
            origin: h.origin,
            run_id: h.run_id,
            ids,
            types,
            e0: has_e0.then_some(e0),
            de_max,
            tree_deepest: h.tree_deepest,
            request,
            engine,
        };
        c.check().map_err(|problem| i.bad(problem))?;
        Ok(c)
    }

    /// Checks that the parts agree with each other and that the
    /// integrator can continue from them (a valid checksum says only that
    /// the file is as it was written).
    fn check(&self) -> std::result::Result<(), String> {
        let finite = [self.time, self.base_time, self.origin, self.de_max];
        if !finite.iter().all(|x| x.is_finite()) {
            return Err("a time that is not finite".into());
        }
        if !(1..=MAX_DEPTH).contains(&self.tree_deepest) {
            return Err(format!(
                "the tree's deepest level is {}, not 1 to {MAX_DEPTH}",
                self.tree_deepest
            ));
        }
        // A run takes at most MAX_STEPS steps from its start, so no count
        // near u64's end (which later counts would wrap) is a real one.
        let max_steps = crate::run::schedule::MAX_STEPS as u64;
        if self.steps > max_steps || self.base_steps > max_steps {
            return Err(format!(
                "{} steps, more than a run takes ({max_steps})",
                self.steps.max(self.base_steps)
            ));
        }
        if self.origin > self.base_time || self.base_time > self.time {
            return Err(format!(
                "times out of order: origin {}, base {}, now {}",
                self.origin, self.base_time, self.time
            ));
        }
        match &self.engine {
            EngineState::Leapfrog(s) => {
                let mut seen = vec![false; self.ids.len()];
                for &k in &s.index {
                    match seen.get_mut(k as usize) {
                        Some(s) if !*s => *s = true,
                        _ => return Err("the upload index is not a permutation".into()),
                    }
                }
                // How `Run` counts leapfrog time.
                let t = self.base_time + self.base_steps as f64 * self.params.dt;
                if self.base_steps > self.steps || t != self.time {
                    return Err(format!(
                        "time {} after {} steps is not {} + {} steps of dt {}",
                        self.time, self.steps, self.base_time, self.base_steps, self.params.dt
                    ));
                }
            }
            EngineState::Hermite(h) => {
                let time = h.time;
                if h.stats.block_steps != self.steps || h.offset + time != self.time {
                    return Err(format!(
                        "time {} after {} block steps, but the integrator is at {} + {time} \
                         after {}",
                        self.time, self.steps, h.offset, h.stats.block_steps
                    ));
                }
                if ![h.target, time, h.offset].iter().all(|t| t.is_finite()) {
                    return Err("a Hermite time that is not finite".into());
                }
                let dt_max = self.params.dt_max;
                for (k, b) in h.bodies.iter().enumerate() {
                    let numbers = [b.mass, b.t0, b.dt, b.pot].into_iter().chain(
                        [b.pos, b.vel, b.acc, b.jerk, b.snap, b.crackle]
                            .into_iter()
                            .flatten(),
                    );
                    let steps_ok = b.dt >= DT_MIN
                        && b.dt <= dt_max
                        && b.dt.log2().fract() == 0.0
                        && (b.t0 / b.dt).fract() == 0.0
                        && b.t0 <= time
                        && time <= b.t0 + b.dt;
                    if !steps_ok || b.mass < 0.0 || !numbers.into_iter().all(f64::is_finite) {
                        return Err(format!(
                            "body {k} (id {}): time {} and step {} (dt_max {dt_max}, \
                             integrator at {time}), or values the integrator cannot take",
                            self.ids[k], b.t0, b.dt
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// What a checkpoint holds before its particles: the version, the run's
/// settings, times and counts, and N.
struct Head {
    version: u32,
    params: RunParams,
    time: f64,
    steps: u64,
    base_time: f64,
    base_steps: u64,
    origin: f64,
    run_id: u64,
    tree_deepest: u32,
    n: usize,
}

/// Most bytes a checkpoint of `n` particles may take besides its header:
/// 8 + 1 bytes of id and kind and at most 176 of state (a Hermite body)
/// per particle, and the diagnostics and counters.
#[cfg(not(target_arch = "wasm32"))]
fn max_len(n: u64) -> Option<u64> {
    n.checked_mul(8 + 1 + 176)?
        .checked_add(4096 + MAX_REQUEST as u64)
}

impl Head {
    /// The header up to N (the ids' count, which it leaves unread).
    fn read(i: &mut In) -> Result<Self> {
        i.take(8)?;
        let version = i.u32()?;
        if !(2..=VERSION).contains(&version) {
            return Err(i.bad(format!(
                "version {version}; this webgrav reads versions 2 to {VERSION}"
            )));
        }
        let solver = *SolverKind::ALL
            .get(i.u32()? as usize)
            .ok_or_else(|| i.bad("unknown solver"))?;
        let params = RunParams {
            solver,
            eps: i.f32()?,
            dt: i.f64()?,
            theta: i.f32()?,
            eta: i.f64()?,
            criterion: *Criterion::ALL
                .get(i.u32()? as usize)
                .ok_or_else(|| i.bad("unknown time-step criterion"))?,
            precision: match i.u32()? {
                0 => Precision::F32,
                1 => Precision::Ds,
                2 => Precision::Dp,
                3 => Precision::DsFast,
                _ => return Err(i.bad("unknown precision")),
            },
            dt_max: i.f64()?,
            rebuild: if version >= 3 { i.u32()? } else { 1 },
            alpha: if version >= 4 { i.f32()? } else { 0.0 },
            ..RunParams::default()
        };
        let params = if version >= 6 {
            RunParams {
                timesteps: *Timesteps::ALL
                    .get(i.u32()? as usize)
                    .ok_or_else(|| i.bad("unknown time steps"))?,
                levels: i.u32()?,
                ..params
            }
        } else {
            params
        };
        let tree_deepest = if version >= 8 { i.u32()? } else { MAX_DEPTH };
        let time = i.f64()?;
        let steps = i.u64()?;
        let base_time = i.f64()?;
        let base_steps = i.u64()?;
        let (origin, run_id) = if version >= 5 {
            (i.f64()?, i.u64()?)
        } else {
            (base_time, 0)
        };
        // The ids' count, which the ids follow.
        let n = i.u64()?;
        Ok(Self {
            version,
            params,
            time,
            steps,
            base_time,
            base_steps,
            origin,
            run_id,
            tree_deepest,
            n: usize::try_from(n).map_err(|_| i.bad(format!("{n} particles")))?,
        })
    }
}

/// The version of the checkpoint whose first bytes are `head` and the
/// most bytes a checkpoint of its N may take.
#[cfg(not(target_arch = "wasm32"))]
fn announced(head: &[u8], path: &str) -> Result<(u32, u64)> {
    let mut i = In {
        src: Src::Bytes { b: head, at: 0 },
        name: path,
    };
    if head.len() < MAGIC.len() || &head[..8] != MAGIC {
        return Err(i.bad("not a webgrav checkpoint"));
    }
    let h = Head::read(&mut i)?;
    let total = max_len(h.n as u64)
        .and_then(|m| m.checked_add(head.len() as u64 - i.remaining()))
        .ok_or_else(|| i.bad(format!("{} particles", h.n)))?;
    Ok((h.version, total))
}

/// The refusal of a file longer than a checkpoint of its N can be.
#[cfg(not(target_arch = "wasm32"))]
fn too_long(path: &str, head: &[u8]) -> Error {
    let n = announced_n(head);
    bad(
        path,
        format!("longer than a checkpoint of its {n} particles can be"),
    )
}

/// The N a checkpoint's header announces (0 if it announces none).
#[cfg(not(target_arch = "wasm32"))]
fn announced_n(head: &[u8]) -> usize {
    let mut i = In {
        src: Src::Bytes { b: head, at: 0 },
        name: "",
    };
    Head::read(&mut i).map_or(0, |h| h.n)
}

/// Reads a checkpoint file, never more than its header announces (N
/// particles' worth): a device, a pipe or a large file of something else
/// is refused after its first bytes, not read into memory.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_file(path: &str) -> Result<Vec<u8>> {
    use std::io::Read as _;
    let io = |source| Error::Io {
        path: path.to_string(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    if file.metadata().map_err(io)?.is_dir() {
        return Err(Error::InvalidParameter(format!("'{path}' is a directory")));
    }
    // Every version's header is shorter than this.
    let mut bytes = Vec::new();
    (&mut file).take(256).read_to_end(&mut bytes).map_err(io)?;
    let (_, total) = announced(&bytes, path)?;
    // One byte more than a checkpoint of N may hold: reaching it means
    // the file is not one.
    let rest = (total + 1).saturating_sub(bytes.len() as u64);
    file.take(rest).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > total {
        return Err(too_long(path, &bytes));
    }
    Ok(bytes)
}
