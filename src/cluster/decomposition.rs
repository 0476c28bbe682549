//! Domain decomposition along the space-filling curve (Bédorf et al.
//! 2014, §2.2): every rank samples its particles' Morton keys (the tree's
//! own keys, in the global cube) weighted by their work in the last walk,
//! all ranks cut the gathered samples into P runs of equal work, and each
//! particle moves to the rank whose run holds its key. Each domain is thus
//! a run of the curve, compact in space, and the ranks' walks take about
//! equal time.

use super::comm::{allgather_records, Comm};
use crate::error::{Error, Result};
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::tree::keys::morton_key;
use crate::tree::layout::Bounds;
use bytemuck::{Pod, Zeroable};

/// Samples each rank contributes per rank of the run: enough that the
/// work of a domain is within about 1/SAMPLES_PER_RANK of the mean.
pub const SAMPLES_PER_RANK: usize = 256;

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
    pub fn len(&self) -> usize {
        self.pos_mass.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos_mass.is_empty()
    }
}

/// A particle on its way to another rank.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct Migrant {
    pos_mass: PosMass,
    vel: Velocity,
    acc_pot: AccPot,
    id: u64,
    work: f32,
    _pad: u32,
}

/// A weighted sample of the curve.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct Sample {
    key: u64,
    work: f64,
}

/// The cube around every rank's particles (one gather of boxes).
pub fn global_bounds(comm: &dyn Comm, pos_mass: &[PosMass]) -> Bounds {
    let mut lo = [f32::MAX; 3];
    let mut hi = [f32::MIN; 3];
    for p in pos_mass {
        for k in 0..3 {
            lo[k] = lo[k].min(p.pos[k]);
            hi[k] = hi[k].max(p.pos[k]);
        }
    }
    let boxes = allgather_records(comm, &[lo, hi]);
    let mut b = Bounds {
        lo: [f32::MAX, f32::MAX, f32::MAX, 0.0],
        hi: [f32::MIN, f32::MIN, f32::MIN, 0.0],
    };
    for r in boxes {
        for k in 0..3 {
            b.lo[k] = b.lo[k].min(r[0][k]);
            b.hi[k] = b.hi[k].max(r[1][k]);
        }
    }
    b
}

/// The P − 1 keys that cut the curve into runs of equal work, from every
/// rank's samples (the same on every rank).
fn splitters(comm: &dyn Comm, keys: &[u64], work: &[f32]) -> Vec<u64> {
    let p = comm.size();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by_key(|&i| keys[i]);
    let total: f64 = work.iter().map(|&w| w as f64).sum();
    // A sample where the cumulative work passes each multiple of total/S,
    // carrying total/S.
    let s = SAMPLES_PER_RANK * p;
    let mut samples = Vec::with_capacity(s);
    if total > 0.0 {
        let step = total / s as f64;
        let (mut acc, mut next) = (0.0, 0.5 * step);
        for &i in &order {
            acc += work[i] as f64;
            while acc >= next && samples.len() < s {
                samples.push(Sample {
                    key: keys[i],
                    work: step,
                });
                next += step;
            }
        }
    }
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

/// Moves every particle to the rank whose run of the curve holds its key
/// (run r: keys from splitter r − 1 up to below splitter r), balanced by
/// `work`. Every rank calls it together; each gets its new particles.
/// Fails (on every rank alike) when some rank would be left empty.
pub fn decompose(comm: &dyn Comm, mine: RankParticles) -> Result<RankParticles> {
    let p = comm.size();
    let bounds = global_bounds(comm, &mine.pos_mass);
    let keys: Vec<u64> = mine
        .pos_mass
        .iter()
        .map(|q| morton_key(q.pos, &bounds))
        .collect();
    let mut cuts = splitters(comm, &keys, &mine.work);
    let mut dest = destinations(&keys, &cuts);
    // Work concentrated on few keys (coincident particles) can leave a
    // run empty: cut by particle count instead.
    if counts_per_rank(comm, &dest, p).contains(&0) {
        cuts = splitters(comm, &keys, &vec![1.0; keys.len()]);
        dest = destinations(&keys, &cuts);
        let counts = counts_per_rank(comm, &dest, p);
        if let Some(empty) = counts.iter().position(|&c| c == 0) {
            return Err(Error::InvalidParameter(format!(
                "{} particles cannot be shared among {p} ranks: rank {empty} would get none \
                 (use fewer ranks, or more particles)",
                counts.iter().sum::<u64>()
            )));
        }
    }
    let mut outgoing: Vec<Vec<Migrant>> = vec![Vec::new(); p];
    for (i, &r) in dest.iter().enumerate() {
        outgoing[r].push(Migrant {
            pos_mass: mine.pos_mass[i],
            vel: mine.vel[i],
            acc_pot: mine.acc_pot[i],
            id: mine.id[i],
            work: mine.work[i],
            _pad: 0,
        });
    }
    drop(mine);
    let incoming = comm.alltoall(
        outgoing
            .into_iter()
            .map(|m| bytemuck::cast_slice(&m).to_vec())
            .collect(),
    );
    let mut out = RankParticles::default();
    for bytes in incoming {
        for m in bytemuck::pod_collect_to_vec::<u8, Migrant>(&bytes) {
            out.pos_mass.push(m.pos_mass);
            out.vel.push(m.vel);
            out.acc_pot.push(m.acc_pot);
            out.id.push(m.id);
            out.work.push(m.work);
        }
    }
    Ok(out)
}

fn destinations(keys: &[u64], cuts: &[u64]) -> Vec<usize> {
    keys.iter()
        .map(|k| cuts.partition_point(|&c| c <= *k))
        .collect()
}

/// How many particles each rank would get (the same on every rank).
fn counts_per_rank(comm: &dyn Comm, dest: &[usize], p: usize) -> Vec<u64> {
    let mut mine = vec![0u64; p];
    for &r in dest {
        mine[r] += 1;
    }
    let all = allgather_records(comm, &mine);
    (0..p).map(|r| all.iter().map(|c| c[r]).sum()).collect()
}
