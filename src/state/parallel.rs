//! Work over particle indices on every host core (rayon) natively, in
//! turn in the browser. Each index's result depends on the index alone
//! and sums go by fixed-size chunks in order, so the results are
//! bit-identical whatever the number of threads, and the same in both
//! builds.

#[cfg(not(target_arch = "wasm32"))]
use rayon::prelude::*;

/// Particles per partial sum of `sum_by_chunks`: fixed, so the rounding
/// does not depend on the threads.
pub const SUM_CHUNK: usize = 1 << 16;

/// `[f(0), f(1), …, f(n − 1)]`.
pub fn map_indices<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    #[cfg(not(target_arch = "wasm32"))]
    return (0..n).into_par_iter().map(f).collect();
    #[cfg(target_arch = "wasm32")]
    return (0..n).map(f).collect();
}

/// Records per chunk of `map_chunks`.
const CHUNK: usize = 1 << 14;

/// `f(range)` for the consecutive chunks of 0..n (fixed sizes, so results
/// combined in order are the same on any number of cores), on every core.
pub fn map_chunks<T: Send>(
    n: usize,
    f: impl Fn(std::ops::Range<usize>) -> T + Sync + Send,
) -> Vec<T> {
    map_indices(
        n.div_ceil(CHUNK),
        |c| f(c * CHUNK..((c + 1) * CHUNK).min(n)),
    )
}

/// `dst[k] = f(&src[k])` for every k (slices of one length), on every
/// core a chunk at a time: a read-back copied into place without one
/// core's page faults and copies.
pub fn map_into<T: Sync, U: Send>(dst: &mut [U], src: &[T], f: impl Fn(&T) -> U + Sync + Send) {
    assert_eq!(dst.len(), src.len(), "slices of one length");
    let each = |(d, s): (&mut [U], &[T])| {
        for (d, s) in d.iter_mut().zip(s) {
            *d = f(s);
        }
    };
    #[cfg(not(target_arch = "wasm32"))]
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(each);
    #[cfg(target_arch = "wasm32")]
    dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)).for_each(each);
}

/// `dst.copy_from_slice(src)`, on every core a MiB at a time natively.
pub fn copy<T: bytemuck::Pod + Send + Sync>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "slices of one length");
    let piece = ((1 << 20) / std::mem::size_of::<T>().max(1)).max(1);
    #[cfg(not(target_arch = "wasm32"))]
    dst.par_chunks_mut(piece)
        .zip(src.par_chunks(piece))
        .for_each(|(d, s)| d.copy_from_slice(s));
    #[cfg(target_arch = "wasm32")]
    {
        let _ = piece;
        dst.copy_from_slice(src);
    }
}

/// A vector for `n` records that pieces fill in order (`fill_piece`):
/// natively zeroed memory the pieces fault in on every core; in the
/// browser (one core) an empty one they are appended to, since zeroing
/// it first is a pass of its own (0.23 s for a model of 2^24 there).
pub fn vec_for_pieces<T: bytemuck::Pod>(n: usize) -> Vec<T> {
    if cfg!(target_arch = "wasm32") {
        Vec::with_capacity(n)
    } else {
        bytemuck::zeroed_vec(n)
    }
}

/// Puts piece `src` at record `at` of `v` (`vec_for_pieces`), the
/// pieces in order.
pub fn fill_piece<T: bytemuck::Pod + Send + Sync>(v: &mut Vec<T>, at: usize, src: &[T]) {
    if v.len() == at {
        v.extend_from_slice(src);
    } else {
        copy(&mut v[at..at + src.len()], src);
    }
}

/// Sorts `v` by `cmp`, stably (the order of equal elements kept): on
/// every core natively, the same order as in turn.
pub fn sort_by<T: Send>(v: &mut [T], cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Sync) {
    #[cfg(not(target_arch = "wasm32"))]
    v.par_sort_by(cmp);
    #[cfg(target_arch = "wasm32")]
    v.sort_by(cmp);
}

/// Calls `f(k, &mut a[k], &mut b[k])` for every k (the slices are of one
/// length).
pub fn for_each_pair<A: Send, B: Send>(
    a: &mut [A],
    b: &mut [B],
    f: impl Fn(usize, &mut A, &mut B) + Sync + Send,
) {
    assert_eq!(a.len(), b.len(), "paired slices of one length");
    #[cfg(not(target_arch = "wasm32"))]
    a.par_iter_mut()
        .zip(b.par_iter_mut())
        .enumerate()
        .for_each(|(k, (x, y))| f(k, x, y));
    #[cfg(target_arch = "wasm32")]
    a.iter_mut()
        .zip(b.iter_mut())
        .enumerate()
        .for_each(|(k, (x, y))| f(k, x, y));
}

/// Σ f(k) over k < n as K f64 lanes, summed chunk by chunk in index
/// order (the same bits on any number of threads).
pub fn sum_by_chunks<const K: usize>(
    n: usize,
    f: impl Fn(usize) -> [f64; K] + Sync + Send,
) -> [f64; K] {
    add_chunk_sums(&sums_per_chunk(n, f))
}

/// Σ f(k) over each `SUM_CHUNK` of consecutive k < n, in index order: the
/// partial sums of `sum_by_chunks` (a model sampled in parts sums each
/// part's chunks so, and `add_chunk_sums` of all of them in order gives
/// the whole model's bits).
pub fn sums_per_chunk<const K: usize>(
    n: usize,
    f: impl Fn(usize) -> [f64; K] + Sync + Send,
) -> Vec<[f64; K]> {
    map_indices(n.div_ceil(SUM_CHUNK), |c| {
        let mut s = [0.0; K];
        for k in c * SUM_CHUNK..((c + 1) * SUM_CHUNK).min(n) {
            let x = f(k);
            for a in 0..K {
                s[a] += x[a];
            }
        }
        s
    })
}

/// The chunks' sums added in order.
pub fn add_chunk_sums<const K: usize>(sums: &[[f64; K]]) -> [f64; K] {
    sums.iter()
        .fold([0.0; K], |s, p| std::array::from_fn(|a| s[a] + p[a]))
}

/// The indices k < n that `keep`, in order.
pub fn indices_where(n: usize, keep: impl Fn(usize) -> bool + Sync + Send) -> Vec<u32> {
    #[cfg(not(target_arch = "wasm32"))]
    return (0..n)
        .into_par_iter()
        .filter(|&k| keep(k))
        .map(|k| k as u32)
        .collect();
    #[cfg(target_arch = "wasm32")]
    return (0..n).filter(|&k| keep(k)).map(|k| k as u32).collect();
}

/// The largest f(k) over k < n (0 for none): exact, so the same on any
/// number of threads.
pub fn max_by_chunks(n: usize, f: impl Fn(usize) -> f64 + Sync + Send) -> f64 {
    map_indices(n.div_ceil(SUM_CHUNK), |c| {
        (c * SUM_CHUNK..((c + 1) * SUM_CHUNK).min(n))
            .map(&f)
            .fold(0.0f64, f64::max)
    })
    .into_iter()
    .fold(0.0, f64::max)
}

/// Sorts `v` by `cmp` on every core natively, in turn in the browser; the
/// order of elements `cmp` calls equal is unspecified, so `cmp` should be
/// a total order of what matters.
pub fn sort_unstable_by<T: Send>(v: &mut [T], cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Sync) {
    #[cfg(not(target_arch = "wasm32"))]
    v.par_sort_unstable_by(cmp);
    #[cfg(target_arch = "wasm32")]
    v.sort_unstable_by(cmp);
}

/// The elements of `v` that `keep`, in order.
pub fn filter<T: Copy + Send + Sync>(v: &[T], keep: impl Fn(&T) -> bool + Sync + Send) -> Vec<T> {
    #[cfg(not(target_arch = "wasm32"))]
    return v.par_iter().copied().filter(|x| keep(x)).collect();
    #[cfg(target_arch = "wasm32")]
    return v.iter().copied().filter(|x| keep(x)).collect();
}
