//! Domain decomposition along the space-filling curve (Bédorf et al.
//! 2014, §2.2): every rank samples its particles' Peano–Hilbert keys (in
//! the global cube) weighted by their work in the last walk,
//! all ranks cut the gathered samples into P runs of equal work, and each
//! particle moves to the rank whose run holds its key. Each domain is thus
//! a run of the curve, and the ranks' walks take about equal time. The
//! Hilbert curve, unlike the Morton curve of the tree's own keys, never
//! jumps: a run of it is one connected piece of space, so the domains'
//! boundaries, and the trees they exchange, stay small.

use super::comm::{allgather_records, Comm};
use crate::error::{Error, Result};
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::state::share::RankShare;
use crate::state::Particles;
use crate::tree::layout::{Bounds, CutCandidate, SystemCube, MAX_DEPTH};
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

/// Samples each rank contributes per rank of the run: enough that the
/// work of a domain is within about 1/SAMPLES_PER_RANK of the mean.
pub const SAMPLES_PER_RANK: usize = 256;

/// Candidate keys a rank sorts for each of its samples.
const CANDIDATES_PER_SAMPLE: usize = 64;

/// The particles one rank holds, in any order: state, global ids and the
/// work of each in the last walk (interactions; 1 before any).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankParticles {
    pub pos_mass: Vec<PosMass>,
    pub vel: Vec<Velocity>,
    pub acc_pot: Vec<AccPot>,
    pub id: Vec<u64>,
    pub work: Vec<f32>,
}

impl RankParticles {
    /// Particles `range` of `p` (clamped to its length), with no forces
    /// yet and a work of 1 each: a share before the first decomposition.
    pub fn of_range(p: &Particles, range: std::ops::Range<usize>) -> Self {
        let range = range.start.min(p.len())..range.end.min(p.len());
        let len = range.len();
        Self {
            pos_mass: p.pos_mass[range.clone()].to_vec(),
            vel: p.vel[range.clone()].to_vec(),
            acc_pot: vec![AccPot::default(); len],
            id: p.id[range].to_vec(),
            work: vec![1.0; len],
        }
    }

    /// Rank `rank`'s equal slice of `p` among `ranks`.
    pub fn equal_share(p: &Particles, rank: usize, ranks: usize) -> Self {
        let n = p.len();
        Self::of_range(p, RankShare { rank, ranks }.of(n))
    }

    /// The particles at `keep` (indices), in that order.
    pub fn select(&self, keep: &[usize]) -> Self {
        Self {
            pos_mass: keep.par_iter().map(|&k| self.pos_mass[k]).collect(),
            vel: keep.par_iter().map(|&k| self.vel[k]).collect(),
            acc_pot: keep.par_iter().map(|&k| self.acc_pot[k]).collect(),
            id: keep.par_iter().map(|&k| self.id[k]).collect(),
            work: keep.par_iter().map(|&k| self.work[k]).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.pos_mass.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos_mass.is_empty()
    }
}

/// A particle on its way to another rank (its record on the wire).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(crate) struct Migrant {
    pub pos_mass: PosMass,
    pub vel: Velocity,
    pub acc_pot: AccPot,
    pub id: u64,
    pub work: f32,
    pub _pad: u32,
}

/// A weighted sample of the curve.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct Sample {
    key: u64,
    work: f64,
}

/// An axis-aligned box: (low corner, high corner).
pub type Box3 = ([f32; 3], [f32; 3]);

/// The box of `pos_mass` (low f32::MAX, high f32::MIN when empty).
fn local_box(pos_mass: &[PosMass]) -> Box3 {
    let empty = || ([f32::MAX; 3], [f32::MIN; 3]);
    pos_mass
        .par_iter()
        .fold(empty, |b, p| union(b, (p.pos, p.pos)))
        .reduce(empty, union)
}

/// The smallest box around two.
fn union((lo, hi): Box3, (l, h): Box3) -> Box3 {
    (
        std::array::from_fn(|k| lo[k].min(l[k])),
        std::array::from_fn(|k| hi[k].max(h[k])),
    )
}

/// The cube around every rank's particles, from each rank's `local` box
/// (one gather of boxes).
pub fn global_bounds(comm: &dyn Comm, local: Box3) -> Bounds {
    let boxes = allgather_records(comm, &[local.0, local.1]);
    let (lo, hi) = boxes
        .iter()
        .map(|r| (r[0], r[1]))
        .fold(([f32::MAX; 3], [f32::MIN; 3]), union);
    Bounds {
        lo: [lo[0], lo[1], lo[2], 0.0],
        hi: [hi[0], hi[1], hi[2], 0.0],
    }
}

/// Particles per candidate of the cuts among `n` on each of `ranks`
/// ranks: CANDIDATES_PER_SAMPLE candidates for each sample a rank sends.
pub fn candidate_stride(n: usize, ranks: usize) -> usize {
    (n / (SAMPLES_PER_RANK * ranks * CANDIDATES_PER_SAMPLE)).max(1)
}

/// The candidates of `keys` with their `work`, one per `stride`
/// particles. Particles are held in the order of the last tree build, so
/// a stride's particles are neighbours in space; the cuts move by at most
/// a stride's work, and a redraw sorts `stride` times fewer keys than
/// there are particles.
fn candidates(keys: &[u64], work: &[f32], stride: usize) -> Vec<CutCandidate> {
    keys.par_chunks(stride)
        .zip(work.par_chunks(stride))
        .map(|(k, w)| CutCandidate::new(k[0], w.iter().sum()))
        .collect()
}

/// The candidates' keys with the work of one per particle: the fallback
/// cut by count, for `n` particles.
pub fn counted(candidates: &[CutCandidate], stride: usize, n: usize) -> Vec<CutCandidate> {
    candidates
        .iter()
        .enumerate()
        .map(|(c, k)| CutCandidate {
            work: (stride.min(n - c * stride)) as f32,
            ..*k
        })
        .collect()
}

/// The P − 1 keys that cut the curve into runs of equal work, from every
/// rank's candidates (the same on every rank).
fn splitters(comm: &dyn Comm, candidates: &[CutCandidate]) -> Vec<u64> {
    let p = comm.size();
    let s = SAMPLES_PER_RANK * p;
    let mut curve: Vec<(u64, f32)> = candidates.par_iter().map(|c| (c.key(), c.work)).collect();
    curve.par_sort_unstable_by_key(|&(key, _)| key);
    let total: f64 = curve.par_iter().map(|&(_, w)| w as f64).sum();
    // A sample where the cumulative work passes each multiple of total/S,
    // carrying total/S.
    let mut samples = Vec::with_capacity(s);
    if total > 0.0 {
        let step = total / s as f64;
        let (mut acc, mut next) = (0.0, 0.5 * step);
        for &(key, w) in &curve {
            acc += w as f64;
            while acc >= next && samples.len() < s {
                samples.push(Sample { key, work: step });
                next += step;
            }
        }
    }
    drop(curve);
    let mut all: Vec<Sample> = allgather_records(comm, &samples).concat();
    all.sort_by(|a, b| a.key.cmp(&b.key).then(a.work.total_cmp(&b.work)));
    let total: f64 = all.iter().map(|s| s.work).sum();
    let mut cuts = Vec::with_capacity(p - 1);
    let mut acc = 0.0;
    let mut it = all.iter();
    for r in 1..p {
        let target = total * r as f64 / p as f64;
        let mut key = u64::MAX;
        for s in it.by_ref() {
            acc += s.work;
            if acc >= target {
                key = s.key;
                break;
            }
        }
        cuts.push(key);
    }
    cuts
}

/// How the curve is shared: how many of this rank's particles go to each
/// rank, and how many each rank gets in all.
#[derive(Clone, Debug, PartialEq)]
pub struct Shares {
    pub mine: Vec<u64>,
    pub all: Vec<u64>,
}

/// The cuts of `candidates` (of `n` particles, one per `stride`), or
/// where work concentrated on few keys (coincident particles) would leave
/// a run empty, the cuts by particle count; cuts that would give a rank
/// more than `capacity` particles (what its GPU holds) are moved until
/// none does (`capped`). `local_counts(cuts)` gives how many of this
/// rank's particles go to each rank under `cuts`; its last call is with
/// the cuts returned. Fails (on every rank alike) when some rank would be
/// left empty, or the particles do not fit the ranks.
pub async fn balanced_cuts<F>(
    comm: &dyn Comm,
    candidates: &[CutCandidate],
    (stride, n): (usize, usize),
    capacity: u64,
    mut local_counts: impl FnMut(Vec<u64>) -> F,
) -> Result<Shares>
where
    F: std::future::Future<Output = Result<Vec<u64>>>,
{
    let p = comm.size();
    let shares = |mine: Vec<u64>| Shares {
        all: all_counts(comm, &mine),
        mine,
    };
    let over = |s: &Shares| s.all.iter().any(|&c| c > capacity);
    let mut cuts = splitters(comm, candidates);
    let mut chosen = shares(local_counts(cuts.clone()).await?);
    if chosen.all.contains(&0) {
        cuts = splitters(comm, &counted(candidates, stride, n));
        chosen = shares(local_counts(cuts.clone()).await?);
    }
    if over(&chosen) {
        let total = chosen.all.iter().sum();
        cuts = capped(comm, cuts, (total, capacity), &mut local_counts).await?;
        chosen = shares(local_counts(cuts).await?);
    }
    if let Some(empty) = chosen.all.iter().position(|&c| c == 0) {
        return Err(Error::InvalidParameter(format!(
            "{} particles cannot be shared among {p} ranks: rank {empty} would get none \
             (use fewer ranks, or more particles)",
            chosen.all.iter().sum::<u64>()
        )));
    }
    Ok(chosen)
}

/// Keys a probe of `capped` counts below at once: each narrows the range
/// a moved cut lies in 256-fold, so a cut exact to the key takes 8 probes
/// of the 64-bit curve where a bisection took 63 (each a pass over the
/// keys, a read-back and an all-gather: 1.5 s of a redraw at 1.26·10^8
/// particles a rank, 2026-11-30).
pub const PROBE_KEYS: usize = 255;

/// `cuts` moved, each as little as it must and in turn, until no rank
/// holds more than `capacity` of the `total` particles: cut r must leave
/// at most `capacity` to rank r − 1 and at most `capacity` for each rank
/// after it. A moved cut is found by a search of the keys, each probe
/// counting the particles below `PROBE_KEYS` keys on every rank
/// (`local_counts` with the probe's keys as cuts). The cuts by work or by
/// sample leave a rank within a few tenths of a percent of its share; a
/// run whose ranks are that close to full (2^27 − 2^16 particles a GPU,
/// say) needs cuts exact to the particle.
async fn capped<F>(
    comm: &dyn Comm,
    mut cuts: Vec<u64>,
    (total, capacity): (u64, u64),
    local_counts: &mut impl FnMut(Vec<u64>) -> F,
) -> Result<Vec<u64>>
where
    F: std::future::Future<Output = Result<Vec<u64>>>,
{
    let p = cuts.len() + 1;
    if total > capacity.saturating_mul(p as u64) {
        return Err(Error::InvalidParameter(format!(
            "{total} particles do not fit {p} GPUs, which hold {capacity} each \
             (use more ranks)"
        )));
    }
    // The particles of every rank whose keys lie below each of `keys`
    // (ascending).
    let mut below = async |keys: Vec<u64>| -> Result<Vec<u64>> {
        let k = keys.len();
        let mine = local_counts(keys).await?;
        // Every rank's particles in each bin, then below each key.
        let mut sum = 0;
        Ok(all_counts(comm, &mine[..k])
            .into_iter()
            .map(|c| {
                sum += c;
                sum
            })
            .collect())
    };
    let (mut last_cut, mut last_count) = (0u64, 0u64);
    for r in 1..p {
        let cut = cuts[r - 1].max(last_cut);
        let at_least = total.saturating_sub(capacity * (p - r) as u64);
        let at_most = last_count + capacity;
        let count = below(vec![cut]).await?[0];
        let (cut, count) = if count > at_most {
            // The last key with at most `at_most` below it.
            let over = |c: u64| c > at_most;
            search(&mut below, (last_cut, last_count), (cut, count), over).await?[0]
        } else if count < at_least {
            // The first key with at least `at_least` below it.
            let enough = |c: u64| c >= at_least;
            search(&mut below, (cut, count), (u64::MAX, total), enough).await?[1]
        } else {
            (cut, count)
        };
        cuts[r - 1] = cut;
        (last_cut, last_count) = (cut, count);
    }
    Ok(cuts)
}

/// Seconds of the parts of one `decompose` on one rank, and the cube it
/// drew the curve in.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecomposeParts {
    /// The curve's frame: the whole system's cube when the domains were
    /// drawn (`CurveFrame::system_cube`).
    pub frame: CurveFrame,
    /// The global cube and every particle's key.
    pub keys_s: f64,
    /// Splitters, destinations and the ranks' counts.
    pub cuts_s: f64,
    /// The migrants packed and the stayers listed.
    pub pack_s: f64,
    /// The migrants sent, received and unpacked.
    pub alltoall_s: f64,
    /// The new arrays gathered from the stayers and the arrivals.
    pub gather_s: f64,
}

/// Moves every particle to the rank whose run of the curve holds its key
/// (run r: keys from splitter r − 1 up to below splitter r), balanced by
/// `work`. Every rank calls it together; each gets its new particles.
/// Fails (on every rank alike) when some rank would be left empty.
pub fn decompose(comm: &dyn Comm, mine: RankParticles) -> Result<RankParticles> {
    decompose_timed(comm, mine, u64::MAX, &mut DecomposeParts::default())
}

/// `decompose`, no rank given more than `capacity` particles (what its
/// GPU holds), its parts timed into `parts`.
pub fn decompose_timed(
    comm: &dyn Comm,
    mine: RankParticles,
    capacity: u64,
    parts: &mut DecomposeParts,
) -> Result<RankParticles> {
    let p = comm.size();
    let mut clock = std::time::Instant::now();
    let mut lap = || {
        let s = clock.elapsed().as_secs_f64();
        clock = std::time::Instant::now();
        s
    };
    let bounds = global_bounds(comm, local_box(&mine.pos_mass));
    parts.frame = CurveFrame::around(&bounds);
    let keys = hilbert_keys(&mine.pos_mass, &bounds);
    parts.keys_s = lap();
    let stride = candidate_stride(keys.len(), p);
    let candidates = candidates(&keys, &mine.work, stride);
    let (mut dest, mut last_cuts, mut calls) = (Vec::new(), Vec::new(), 0);
    let mut sorted: Option<Vec<u64>> = None;
    // (The host's counts are ready at once.)
    pollster::block_on(balanced_cuts(
        comm,
        &candidates,
        (stride, keys.len()),
        capacity,
        |cuts| {
            calls += 1;
            // The third call on probes cuts moved for the ranks' capacity
            // (`capped`): a few dozen, of up to PROBE_KEYS keys each, each
            // key a binary search in the sorted keys rather than a pass
            // over them.
            let counts = if calls > 2 {
                let sorted = sorted.get_or_insert_with(|| {
                    let mut s = keys.clone();
                    s.par_sort_unstable();
                    s
                });
                counts_in_sorted(sorted, &cuts)
            } else {
                dest = destinations(&keys, &cuts);
                local_counts(&dest, cuts.len() + 1)
            };
            last_cuts = cuts;
            std::future::ready(Ok(counts))
        },
    ))?;
    if calls > 2 {
        dest = destinations(&keys, &last_cuts);
    }
    parts.cuts_s = lap();
    // Only the particles that change rank travel (after a redraw, those
    // near the domains' edges); the others are gathered in place.
    let me = comm.rank();
    let migrant = |i: usize| Migrant {
        pos_mass: mine.pos_mass[i],
        vel: mine.vel[i],
        acc_pot: mine.acc_pot[i],
        id: mine.id[i],
        work: mine.work[i],
        _pad: 0,
    };
    let outgoing: Vec<Vec<u8>> = (0..p)
        .map(|r| match r == me {
            true => Vec::new(),
            false => {
                let going = indices_to(&dest, r);
                packed(going.len(), |k| migrant(going[k] as usize))
            }
        })
        .collect();
    let staying = indices_to(&dest, me);
    parts.pack_s = lap();
    let arrived = exchange(comm, outgoing);
    parts.alltoall_s = lap();
    // The stayers in their order, then the arrivals.
    fn gather<T: Copy + Send + Sync>(
        from: &[T],
        staying: &[u32],
        arrived: &[Migrant],
        field: impl Fn(&Migrant) -> T + Sync + Send,
    ) -> Vec<T> {
        let mut out: Vec<T> = staying.par_iter().map(|&i| from[i as usize]).collect();
        out.par_extend(arrived.par_iter().map(field));
        out
    }
    let gathered = RankParticles {
        pos_mass: gather(&mine.pos_mass, &staying, &arrived, |m| m.pos_mass),
        vel: gather(&mine.vel, &staying, &arrived, |m| m.vel),
        acc_pot: gather(&mine.acc_pot, &staying, &arrived, |m| m.acc_pot),
        id: gather(&mine.id, &staying, &arrived, |m| m.id),
        work: gather(&mine.work, &staying, &arrived, |m| m.work),
    };
    parts.gather_s = lap();
    Ok(gathered)
}

/// The records `migrant(0..count)` on the wire, packed on every core.
pub(crate) fn packed(count: usize, migrant: impl Fn(usize) -> Migrant + Sync) -> Vec<u8> {
    let size = std::mem::size_of::<Migrant>();
    let mut bytes = vec![0u8; count * size];
    bytes
        .par_chunks_mut(size)
        .enumerate()
        .for_each(|(k, out)| out.copy_from_slice(bytemuck::bytes_of(&migrant(k))));
    bytes
}

/// Sends every rank its `outgoing` migrants (packed) and returns the
/// arrivals, by source rank.
pub(crate) fn exchange(comm: &dyn Comm, outgoing: Vec<Vec<u8>>) -> Vec<Migrant> {
    let arrived = comm.alltoall(outgoing);
    let size = std::mem::size_of::<Migrant>();
    let count = arrived.iter().map(|b| b.len() / size).sum();
    // Copied into place on every core (gigabytes at a run's start).
    let mut migrants: Vec<Migrant> = bytemuck::zeroed_vec(count);
    let mut rest: &mut [u8] = bytemuck::cast_slice_mut(&mut migrants);
    for bytes in &arrived {
        let whole = bytes.len() - bytes.len() % size;
        let (into, tail) = std::mem::take(&mut rest).split_at_mut(whole);
        crate::state::parallel::copy(into, &bytes[..whole]);
        rest = tail;
    }
    migrants
}

/// The indices of the particles bound for rank `r`, in order.
fn indices_to(dest: &[usize], r: usize) -> Vec<u32> {
    (0..dest.len() as u32)
        .into_par_iter()
        .filter(|&i| dest[i as usize] == r)
        .collect()
}

fn destinations(keys: &[u64], cuts: &[u64]) -> Vec<usize> {
    keys.par_iter()
        .map(|k| cuts.partition_point(|&c| c <= *k))
        .collect()
}

/// The adjacent keys `[lo, hi]` (with the counts below them) between
/// `lo` and `hi` where `past` (of the count below a key, which grows with
/// the key) turns true: `past` is false at `lo.0` and true at `hi.0`.
/// Each round counts below up to `PROBE_KEYS` keys spread evenly between.
async fn search(
    below: &mut impl AsyncFnMut(Vec<u64>) -> Result<Vec<u64>>,
    mut lo: (u64, u64),
    mut hi: (u64, u64),
    past: impl Fn(u64) -> bool,
) -> Result<[(u64, u64); 2]> {
    while hi.0 - lo.0 > 1 {
        let gap = (hi.0 - lo.0) as u128;
        let probes = (gap - 1).min(PROBE_KEYS as u128) as u64;
        let keys: Vec<u64> = (1..=probes as u128)
            .map(|j| lo.0 + (gap * j / (probes as u128 + 1)) as u64)
            .collect();
        let counts = below(keys.clone()).await?;
        match counts.iter().position(|&c| past(c)) {
            Some(j) => {
                hi = (keys[j], counts[j]);
                if j > 0 {
                    lo = (keys[j - 1], counts[j - 1]);
                }
            }
            None => lo = (keys[probes as usize - 1], counts[probes as usize - 1]),
        }
    }
    Ok([lo, hi])
}

/// `local_counts` of the destinations under `cuts` (sorted), from the
/// keys sorted: rank r gets the keys from cut r − 1 up to below cut r.
fn counts_in_sorted(sorted: &[u64], cuts: &[u64]) -> Vec<u64> {
    let below = |c: u64| sorted.partition_point(|&k| k < c) as u64;
    let mut edges = vec![0];
    edges.extend(cuts.iter().map(|&c| below(c)));
    edges.push(sorted.len() as u64);
    edges.windows(2).map(|w| w[1] - w[0]).collect()
}

/// How many of this rank's particles go to each of `p` ranks (or bins).
fn local_counts(dest: &[usize], p: usize) -> Vec<u64> {
    let mut mine = vec![0u64; p];
    for &r in dest {
        mine[r] += 1;
    }
    mine
}

/// Every rank's counts per destination rank (the same on every rank):
/// `all[q][r]` of rank q's particles go to rank r.
fn all_counts(comm: &dyn Comm, mine: &[u64]) -> Vec<u64> {
    let all = allgather_records(comm, mine);
    (0..mine.len())
        .map(|r| all.iter().map(|c| c[r]).sum())
        .collect()
}

/// The 63-bit Peano–Hilbert key of `p` in the cube around `b` (21 bits an
/// axis, as the tree's Morton keys): Skilling's transform of the axes
/// into the Hilbert curve's transposed form (Skilling 2004, "Programming
/// the Hilbert curve", AIP Conf. Proc. 707, 381), then its bits
/// interleaved.
pub fn hilbert_key(p: [f32; 3], b: &Bounds) -> u64 {
    let c = CurveFrame::around(b).cell_of(p);
    transform_lanes(c.map(|a| [a; LANES]))[0]
}

/// Particles keyed together by `hilbert_keys`: the branch-free transform
/// on lanes of this many, which the compiler turns into vector code.
const LANES: usize = 8;

/// `hilbert_key` of every particle, on every core, LANES at a time.
pub fn hilbert_keys(pos_mass: &[PosMass], b: &Bounds) -> Vec<u64> {
    let frame = CurveFrame::around(b);
    let mut keys = vec![0u64; pos_mass.len()];
    keys.par_chunks_mut(LANES)
        .zip(pos_mass.par_chunks(LANES))
        .for_each(|(out, p)| {
            let mut x = [[0u32; LANES]; 3];
            for (l, q) in p.iter().enumerate() {
                let c = frame.cell_of(q.pos);
                for a in 0..3 {
                    x[a][l] = c[a];
                }
            }
            let k = transform_lanes(x);
            out.copy_from_slice(&k[..out.len()]);
        });
    keys
}

/// Skilling's transform of LANES cells at once, without branches on the
/// bits (a redraw keys every particle: the bit-by-bit loop with branches
/// took 0.3–0.6 s for 2^24 particles on an H200's host, this takes a
/// fifth of that), then the bits interleaved.
fn transform_lanes(mut x: [[u32; LANES]; 3]) -> [u64; LANES] {
    // Inverse undo of the excess work (AxesToTranspose): where axis i's
    // bit q is set, x[0]'s lower bits are inverted; where it is clear,
    // they are exchanged with x[i]'s.
    let mut q = 1u32 << (MAX_DEPTH - 1);
    while q > 1 {
        let pm = q - 1;
        let [x0, x1, x2] = &mut x;
        // Axis 0 itself: only the inversion does anything.
        for a in x0.iter_mut() {
            *a ^= pm & 0u32.wrapping_sub((*a & q != 0) as u32);
        }
        for xi in [x1, x2] {
            for (a, b) in x0.iter_mut().zip(xi.iter_mut()) {
                let set = 0u32.wrapping_sub((*b & q != 0) as u32);
                let t = (*a ^ *b) & pm & !set;
                *a ^= (pm & set) | t;
                *b ^= t;
            }
        }
        q >>= 1;
    }
    // Gray encode, then interleave, most significant bits first: x[0]
    // x[1] x[2] per level.
    let mut key = [0u64; LANES];
    for l in 0..LANES {
        x[1][l] ^= x[0][l];
        x[2][l] ^= x[1][l];
        let mut t = 0;
        let mut q = 1u32 << (MAX_DEPTH - 1);
        while q > 1 {
            t ^= (q - 1) & 0u32.wrapping_sub((x[2][l] & q != 0) as u32);
            q >>= 1;
        }
        key[l] = (spread_by_3(x[0][l] ^ t) << 2)
            | (spread_by_3(x[1][l] ^ t) << 1)
            | spread_by_3(x[2][l] ^ t);
    }
    key
}

/// The curve's cells: 2^MAX_DEPTH across the cube around a box. The
/// GPU's keys (`shaders/domain_keys.wgsl`) take the same frame, so both
/// put a particle in the same cell.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CurveFrame {
    pub lo: [f32; 3],
    /// Cells per unit length.
    pub scale: f32,
}

impl CurveFrame {
    pub fn around(b: &Bounds) -> Self {
        let ext = [b.hi[0] - b.lo[0], b.hi[1] - b.lo[1], b.hi[2] - b.lo[2]];
        let side = ext[0].max(ext[1]).max(ext[2].max(1.0e-30)) * 1.0001;
        Self {
            lo: [b.lo[0], b.lo[1], b.lo[2]],
            scale: (1u32 << MAX_DEPTH) as f32 / side,
        }
    }

    /// The frame's cube, as the ranks' trees take it for the whole
    /// system's (`TreeSolver::set_system_cube`); none (side 0) for a frame
    /// never drawn.
    pub fn system_cube(&self) -> SystemCube {
        let side = (1u32 << MAX_DEPTH) as f32 / self.scale;
        SystemCube {
            lo: self.lo,
            side: if side.is_finite() { side } else { 0.0 },
        }
    }

    /// The cell of `p` on each axis.
    fn cell_of(&self, p: [f32; 3]) -> [u32; 3] {
        let last = (1u32 << MAX_DEPTH) - 1;
        std::array::from_fn(|a| {
            let f = ((p[a] - self.lo[a]) * self.scale).clamp(0.0, last as f32);
            (f as u32).min(last)
        })
    }
}

/// The 21 low bits of `v` spread to every third bit (bit k to bit 3k).
fn spread_by_3(v: u32) -> u64 {
    let mut x = (v & 0x1f_ffff) as u64;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    x = (x | x << 2) & 0x1249_2492_4924_9249;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search finds the adjacent keys where the count below them
    /// crosses a target, as a bisection of the 64-bit keys would, in 8
    /// probes of the whole curve where a bisection takes 63.
    #[test]
    fn a_cut_is_found_to_the_key_in_eight_probes() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut keys: Vec<u64> = (0..50_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            })
            .collect();
        keys.sort_unstable();
        let total = keys.len() as u64;
        for target in [1, 777, 25_000, 49_999] {
            let mut probes = 0;
            let mut below = async |probe: Vec<u64>| -> Result<Vec<u64>> {
                probes += 1;
                assert!(probe.len() <= PROBE_KEYS && probe.is_sorted());
                Ok(probe
                    .iter()
                    .map(|&c| keys.partition_point(|&k| k < c) as u64)
                    .collect())
            };
            let past = |c: u64| c > target;
            let [lo, hi] =
                pollster::block_on(search(&mut below, (0, 0), (u64::MAX, total), past)).unwrap();
            assert_eq!(hi.0, lo.0 + 1, "adjacent keys");
            assert!(!past(lo.1) && past(hi.1), "{lo:?} {hi:?}");
            // The last key with `target` keys below it is the next one's.
            assert_eq!(lo.0, keys[target as usize], "target {target}");
            assert!(probes <= 8, "{probes} probes");
        }
    }

    /// The branch-free key is the textbook loop's (Skilling's transform as
    /// written, bit by bit), at random points and at the cube's corners.
    #[test]
    fn hilbert_keys_are_the_textbook_transforms() {
        let b = Bounds {
            lo: [-1.0, -2.0, -0.5, 0.0],
            hi: [1.0, 0.5, 3.0, 0.0],
        };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut points: Vec<[f32; 3]> = (0..20_000)
            .map(|_| std::array::from_fn(|a| b.lo[a] + (b.hi[a] - b.lo[a]) * uniform()))
            .collect();
        points.extend([b.lo, b.hi].map(|c| [c[0], c[1], c[2]]));
        points.push([b.lo[0], b.hi[1], b.lo[2]]);
        // An odd count: the last lanes of `hilbert_keys` hold no particle.
        let pos_mass: Vec<PosMass> = points
            .iter()
            .map(|&pos| PosMass { pos, mass: 1.0 })
            .collect();
        let keys = hilbert_keys(&pos_mass, &b);
        for (p, key) in points.into_iter().zip(keys) {
            let textbook = textbook_hilbert_key(p, &b);
            assert_eq!(key, textbook, "at {p:?}");
            assert_eq!(hilbert_key(p, &b), textbook, "at {p:?}");
        }
    }

    /// Consecutive Hilbert keys are neighbouring cells: on an 8³ grid
    /// every cell gets its own key, and the cells of keys k and k + 1
    /// share a face.
    #[test]
    fn hilbert_keys_walk_from_cell_to_neighbouring_cell() {
        let b = Bounds {
            lo: [0.0; 4],
            hi: [1.0, 1.0, 1.0, 0.0],
        };
        let side = 8u64;
        let shift = 3 * (MAX_DEPTH as u64 - 3);
        let mut cell_of = vec![None; 512];
        for i in 0..side {
            for j in 0..side {
                for k in 0..side {
                    let c = |v: u64| (v as f32 + 0.5) / side as f32 / 1.0001;
                    let key = hilbert_key([c(i), c(j), c(k)], &b) >> shift;
                    assert!(cell_of[key as usize].is_none(), "key {key} twice");
                    cell_of[key as usize] = Some([i as i64, j as i64, k as i64]);
                }
            }
        }
        for w in cell_of.windows(2) {
            let (a, b) = (w[0].unwrap(), w[1].unwrap());
            let steps: i64 = (0..3).map(|d| (a[d] - b[d]).abs()).sum();
            assert_eq!(steps, 1, "{a:?} -> {b:?}");
        }
    }

    /// Three ranks share 120,000 particles of a Plummer sphere, each
    /// starting with an equal slice (in the order generated, as a run
    /// starts), work growing with distance from the centre: every
    /// particle arrives once, each domain is one run of the curve (every
    /// key of rank r below every key of rank r + 1), and the sampled cuts
    /// balance the work within 3 %. A second decomposition of the result
    /// (held in another order, so sampled anew) moves under 1 % of them.
    #[test]
    fn sampled_cuts_balance_work_and_keep_domains_runs_of_the_curve() {
        use crate::cluster::comm::ThreadComm;
        let n = 120_000;
        let p = 3;
        let all = crate::state::plummer::plummer(n, 7);
        let work = |q: &PosMass| 1.0 + q.pos.iter().map(|x| x * x).sum::<f32>().sqrt();
        let results: Vec<(RankParticles, RankParticles)> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadComm::ranks(p)
                .into_iter()
                .enumerate()
                .map(|(r, comm)| {
                    let all = &all;
                    s.spawn(move || {
                        let mut mine = RankParticles::equal_share(all, r, p);
                        mine.work = mine.pos_mass.iter().map(work).collect();
                        let once = decompose(&comm, mine).unwrap();
                        let again = decompose(&comm, once.clone()).unwrap();
                        (once, again)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let moved: usize = results
            .iter()
            .map(|(once, again)| {
                let before: std::collections::HashSet<u64> = once.id.iter().copied().collect();
                again.id.iter().filter(|i| !before.contains(i)).count()
            })
            .sum();
        assert!(moved < n / 100, "{moved} particles moved again");
        let results: Vec<RankParticles> = results.into_iter().map(|(once, _)| once).collect();
        let mut ids: Vec<u64> = results.iter().flat_map(|r| r.id.clone()).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            (0..n as u64).collect::<Vec<_>>(),
            "every particle once"
        );
        let bounds = {
            let mut b = Bounds {
                lo: [f32::MAX, f32::MAX, f32::MAX, 0.0],
                hi: [f32::MIN, f32::MIN, f32::MIN, 0.0],
            };
            for q in &all.pos_mass {
                for k in 0..3 {
                    b.lo[k] = b.lo[k].min(q.pos[k]);
                    b.hi[k] = b.hi[k].max(q.pos[k]);
                }
            }
            b
        };
        let key_range = |r: &RankParticles| {
            let keys = r.pos_mass.iter().map(|q| hilbert_key(q.pos, &bounds));
            (keys.clone().min().unwrap(), keys.max().unwrap())
        };
        for w in results.windows(2) {
            assert!(
                key_range(&w[0]).1 < key_range(&w[1]).0,
                "domains overlap on the curve"
            );
        }
        let loads: Vec<f64> = results
            .iter()
            .map(|r| r.pos_mass.iter().map(|q| work(q) as f64).sum())
            .collect();
        let mean = loads.iter().sum::<f64>() / p as f64;
        for (r, load) in loads.iter().enumerate() {
            assert!(
                (load / mean - 1.0).abs() < 0.03,
                "rank {r}: work {load} against {mean}"
            );
        }
    }

    /// The transform as first written, bit by bit with branches.
    fn textbook_hilbert_key(p: [f32; 3], b: &Bounds) -> u64 {
        let cells = 1u32 << MAX_DEPTH;
        let ext = [b.hi[0] - b.lo[0], b.hi[1] - b.lo[1], b.hi[2] - b.lo[2]];
        let side = ext[0].max(ext[1]).max(ext[2].max(1.0e-30)) * 1.0001;
        let scale = cells as f32 / side;
        let mut x: [u32; 3] = std::array::from_fn(|a| {
            let f = ((p[a] - b.lo[a]) * scale).clamp(0.0, (cells - 1) as f32);
            (f as u32).min(cells - 1)
        });
        // Inverse undo of the excess work (AxesToTranspose).
        let m = 1u32 << (MAX_DEPTH - 1);
        let mut q = m;
        while q > 1 {
            let pm = q - 1;
            for i in 0..3 {
                if x[i] & q != 0 {
                    x[0] ^= pm;
                } else {
                    let t = (x[0] ^ x[i]) & pm;
                    x[0] ^= t;
                    x[i] ^= t;
                }
            }
            q >>= 1;
        }
        // Gray encode.
        for i in 1..3 {
            x[i] ^= x[i - 1];
        }
        let mut t = 0;
        let mut q = m;
        while q > 1 {
            if x[2] & q != 0 {
                t ^= q - 1;
            }
            q >>= 1;
        }
        for xi in &mut x {
            *xi ^= t;
        }
        // Interleave, most significant bits first: x[0] x[1] x[2] per level.
        let mut key = 0u64;
        for bit in (0..MAX_DEPTH).rev() {
            for xi in &x {
                key = (key << 1) | ((xi >> bit) & 1) as u64;
            }
        }
        key
    }
}
