//! Statistics the analyses share: error percentiles, medians, samples of
//! particles, and a threaded map over particle indices.

use super::rng::Rng;

/// Percentiles of an error distribution (as in Bonsai's figure 4.8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorStats {
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl ErrorStats {
    /// NaN errors sort last, so they show up in `max`.
    pub fn of(errors: &[f64]) -> Self {
        let mut e = errors.to_vec();
        e.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Greater));
        let at = |q: f64| {
            e.get(((e.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        Self {
            median: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: e.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// The median of `v` (sorts it; NaN for an empty slice).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// `count` distinct particle indices out of `n` (all when count is 0 or
/// at least n), sorted, deterministic for `seed`.
pub fn sample_indices(n: usize, count: usize, seed: u64) -> Vec<usize> {
    if count == 0 || count >= n {
        return (0..n).collect();
    }
    // Partial Fisher-Yates shuffle.
    let mut rng = Rng::new(seed ^ 0x5eed);
    let mut idx: Vec<usize> = (0..n).collect();
    for k in 0..count {
        let j = k + (rng.uniform() * (n - k) as f64) as usize;
        idx.swap(k, j.min(n - 1));
    }
    idx.truncate(count);
    idx.sort_unstable();
    idx
}

/// `f(i)` for every index of `sinks`, in order, spread over the CPU's
/// threads (one thread in the browser, where threads cannot be spawned).
pub fn map_indices<T: Clone + Default + Send>(
    sinks: &[usize],
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(64);
    let mut out = vec![T::default(); sinks.len()];
    let chunk = sinks.len().div_ceil(threads).max(1);
    if threads == 1 {
        for (o, &i) in out.iter_mut().zip(sinks) {
            *o = f(i);
        }
        return out;
    }
    let f = &f;
    std::thread::scope(|scope| {
        for (part, idx) in out.chunks_mut(chunk).zip(sinks.chunks(chunk)) {
            scope.spawn(move || {
                for (o, &i) in part.iter_mut().zip(idx) {
                    *o = f(i);
                }
            });
        }
    });
    out
}
