//! Side files of a Tipsy file in the Tipsy tools' and pynbody's ASCII
//! array format (the particle count on the first line, then one integer per
//! line in file order): the ids of a standard Tipsy file in `NAME.iord`,
//! and the kinds a Tipsy flavour cannot record (disk, bulge and boundary in
//! standard Tipsy; gas, stars and boundary in Bonsai's) in
//! `NAME.webgrav_kind`, which pynbody loads as the array `webgrav_kind`
//! (what `webgrav.Simulation.from_pynbody` reads kinds from).

use super::tipsy::{self, Flavor};
use super::{bad, io_error, Snapshot};
use crate::error::Result;
use crate::state::parallel::map_indices;

/// The side file's name for snapshot `path` (`run.tipsy` → `run.tipsy.iord`,
/// as pynbody looks for it).
pub fn side_path(path: &str) -> String {
    format!("{path}.iord")
}

/// The kinds side file's name for snapshot `path`.
pub fn kinds_path(path: &str) -> String {
    format!("{path}.webgrav_kind")
}

/// Whether `ids` are simply 0..N-1 (then no side file is needed).
pub fn is_identity(ids: &[u64]) -> bool {
    ids.iter().enumerate().all(|(k, &id)| id == k as u64)
}

/// Values formatted at a time by one core.
const RUN: usize = 1 << 16;

/// The side file of `values` (ids, or kinds as numbers), formatted on
/// every core a run of values at a time.
pub fn encode<T: std::fmt::Display + Sync>(values: &[T]) -> Vec<u8> {
    use std::fmt::Write as _;
    let runs = map_indices(values.len().div_ceil(RUN), |r| {
        let mut s = String::new();
        for v in &values[r * RUN..((r + 1) * RUN).min(values.len())] {
            let _ = writeln!(s, "{v}");
        }
        s
    });
    let mut out = format!("{}\n", values.len()).into_bytes();
    out.reserve(runs.iter().map(String::len).sum());
    for r in &runs {
        out.extend_from_slice(r.as_bytes());
    }
    out
}

/// Parses a kinds side file that must hold `n` kinds (Gadget's numbers,
/// 0 to 5); `name` appears in errors.
pub fn decode_kinds(bytes: &[u8], n: usize, name: &str) -> Result<Vec<u8>> {
    decode(bytes, n, name)?
        .into_iter()
        .enumerate()
        .map(|(k, t)| kind_of(t, k, name))
        .collect()
}

/// Particle `k`'s kind `t` (Gadget's numbers, 0 to 5).
fn kind_of(t: u64, k: usize, name: &str) -> Result<u8> {
    u8::try_from(t)
        .ok()
        .filter(|&t| (t as usize) < crate::state::KINDS.len())
        .ok_or_else(|| bad(name, format!("particle {k}: kind {t} is not 0 to 5")))
}

/// Checks a side file's first line, `first`: the count of its values,
/// which must be the snapshot's `n`.
fn check_count(first: &str, n: usize, name: &str) -> Result<()> {
    let count: usize = first
        .parse()
        .map_err(|_| bad(name, "no particle count on the first line"))?;
    if count != n {
        return Err(bad(
            name,
            format!("holds {count} values, the snapshot has {n} particles"),
        ));
    }
    Ok(())
}

/// Parses a side file that must hold `n` ids (or other numbers); `name`
/// appears in errors.
pub fn decode(bytes: &[u8], n: usize, name: &str) -> Result<Vec<u64>> {
    let text = std::str::from_utf8(bytes).map_err(|e| bad(name, format!("not text: {e}")))?;
    let body = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (first, rest) = body.split_at(
        body.find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(body.len()),
    );
    check_count(first, n, name)?;
    // The rest cut into pieces at whitespace and parsed on every core;
    // the first bad value in file order is the one named.
    let rest = rest.as_bytes();
    let pieces = rest.len().div_ceil(PIECE_BYTES).max(1);
    let mut cuts = vec![0];
    for c in 1..pieces {
        let mut at = (c * PIECE_BYTES).max(*cuts.last().expect("one cut"));
        while at < rest.len() && !rest[at].is_ascii_whitespace() {
            at += 1;
        }
        cuts.push(at);
    }
    cuts.push(rest.len());
    let parsed = map_indices(pieces, |c| {
        let piece = std::str::from_utf8(&rest[cuts[c]..cuts[c + 1]]).expect("cut at ASCII");
        piece
            .split_ascii_whitespace()
            .enumerate()
            // Signed values (as some tools write) are accepted if >= 0.
            .map(|(k, w)| w.parse::<u64>().map_err(|_| (k, w.to_string())))
            .collect::<std::result::Result<Vec<u64>, _>>()
    });
    let mut ids = Vec::with_capacity(n);
    for piece in parsed {
        match piece {
            Ok(values) => ids.extend(values),
            Err((k, w)) => {
                return Err(bad(
                    name,
                    format!(
                        "value {}: '{w}' is not an integer from 0 to 2^64 - 1",
                        ids.len() + k
                    ),
                ))
            }
        }
        if ids.len() > n {
            break;
        }
    }
    if ids.len() != n {
        return Err(bad(name, format!("{} values, expected {n}", ids.len())));
    }
    Ok(ids)
}

/// Bytes of a side file parsed at a time by one core.
const PIECE_BYTES: usize = 1 << 20;

/// Applies the side files of the Tipsy snapshot `path` (their bytes where
/// present): the ids (a standard file's; Bonsai's hold their own) and the
/// kinds, which must agree with what the file itself records of each
/// particle (`tipsy::recorded_kind`): a side file left from another
/// snapshot is refused, not applied.
pub fn apply(
    snap: &mut Snapshot,
    flavor: Flavor,
    path: &str,
    ids: Option<&[u8]>,
    kinds: Option<&[u8]>,
) -> Result<()> {
    let n = snap.particles.len();
    if let (Flavor::Standard, Some(bytes)) = (flavor, ids) {
        snap.particles.id = decode(bytes, n, &side_path(path))?;
    }
    let Some(bytes) = kinds else {
        return Ok(());
    };
    let kinds = decode_kinds(bytes, n, &kinds_path(path))?;
    apply_kinds(snap, flavor, path, kinds, 0)
}

/// Takes `kinds` (of particles `first..` of the Tipsy file `path`, which
/// `snap` holds) where they agree with what the file records of each.
fn apply_kinds(
    snap: &mut Snapshot,
    flavor: Flavor,
    path: &str,
    kinds: Vec<u8>,
    first: usize,
) -> Result<()> {
    let recorded = snap.types.clone().unwrap_or_else(|| vec![1; kinds.len()]);
    let differs = |k: &usize| tipsy::recorded_kind(flavor, kinds[*k]) != recorded[*k];
    if let Some(k) = (0..kinds.len()).find(differs) {
        let name = |t: u8| crate::state::KINDS[t as usize];
        return Err(bad(
            &kinds_path(path),
            format!(
                "particle {} is {} here but {} in {path}: the side file belongs to another \
                 snapshot (remove it to read {path} alone)",
                first + k,
                name(kinds[k]),
                name(recorded[k])
            ),
        ));
    }
    snap.types = Some(kinds);
    Ok(())
}

/// `apply` for a share of the file: `snap` holds its particles `range`,
/// the side files are read (`ids`, `kinds`: streams of them where
/// present) as far as the range's end, and to their ends by the last
/// share, which alone can see a value too many. Values before the range
/// are counted, not parsed: a bad value is named by the share that holds
/// it, as a damaged record is.
pub fn apply_range(
    snap: &mut Snapshot,
    (flavor, path, n): (Flavor, &str, usize),
    range: std::ops::Range<usize>,
    ids: Option<impl std::io::BufRead>,
    kinds: Option<impl std::io::BufRead>,
) -> Result<()> {
    if let (Flavor::Standard, Some(input)) = (flavor, ids) {
        snap.particles.id = decode_range(input, n, range.clone(), &side_path(path))?;
    }
    let Some(input) = kinds else {
        return Ok(());
    };
    let side = kinds_path(path);
    let kinds = decode_range(input, n, range.clone(), &side)?
        .into_iter()
        .zip(range.clone())
        .map(|(t, k)| kind_of(t, k, &side))
        .collect::<Result<Vec<u8>>>()?;
    apply_kinds(snap, flavor, path, kinds, range.start)
}

/// Values `range` of a side file that must hold `n`, read from `input`
/// as far as the range's end (to the file's end where the range is the
/// last); `name` appears in errors, which say what `decode` says.
pub fn decode_range(
    mut input: impl std::io::BufRead,
    n: usize,
    range: std::ops::Range<usize>,
    name: &str,
) -> Result<Vec<u64>> {
    let mut values = Vec::with_capacity(range.len());
    // Words seen: the count first, then value 0, 1, ...
    let mut words = 0usize;
    let mut word = Vec::new();
    let mut in_word = false;
    let mut take = |words: usize, word: &[u8]| -> Result<()> {
        let text = String::from_utf8_lossy(word);
        if words == 0 {
            check_count(&text, n, name)?;
        } else if range.contains(&(words - 1)) {
            let v = text.parse::<u64>().map_err(|_| {
                bad(
                    name,
                    format!(
                        "value {}: '{text}' is not an integer from 0 to 2^64 - 1",
                        words - 1
                    ),
                )
            })?;
            values.push(v);
        }
        Ok(())
    };
    // Past the range's end only the last share reads on (to count).
    let enough = |words: usize| range.end < n && words > range.end;
    'read: loop {
        let buf = input.fill_buf().map_err(|e| io_error(name, e))?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        for &b in buf {
            if b.is_ascii_whitespace() {
                if in_word {
                    take(words, &word)?;
                    words += 1;
                    word.clear();
                    in_word = false;
                    if enough(words) {
                        break 'read;
                    }
                }
            } else {
                in_word = true;
                // Only the count and the range's values are kept (a
                // longer word is no number either way).
                let kept = words == 0 || range.contains(&(words - 1));
                if kept && word.len() < 64 {
                    word.push(b);
                }
            }
        }
        input.consume(len);
    }
    if in_word {
        take(words, &word)?;
        words += 1;
    }
    if words == 0 {
        return Err(bad(name, "no particle count on the first line"));
    }
    let seen = words - 1;
    if seen < range.end || (range.end == n && seen != n) {
        return Err(bad(name, format!("{seen} values, expected {n}")));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Files longer than one parsing piece: the ids come back in order, and
    // a bad value in a later piece is named by its place in the file.
    #[test]
    fn side_files_over_several_pieces_round_trip_and_name_bad_values() {
        let n = 400_000; // ~2.7 MB of text: three pieces
        let ids: Vec<u64> = (0..n as u64).map(|k| k * 7919 % n as u64).collect();
        let bytes = encode(&ids);
        assert!(bytes.len() > 2 * PIECE_BYTES);
        assert_eq!(decode(&bytes, n, "f").unwrap(), ids);

        let mut text = String::from_utf8(bytes).unwrap();
        let bad_at = 350_000;
        let line = format!("\n{}\n", ids[bad_at]);
        let place = text.find(&line).unwrap();
        text.replace_range(place + 1..place + line.len() - 1, "-3");
        let err = decode(text.as_bytes(), n, "f").unwrap_err().to_string();
        assert!(err.contains(&format!("value {bad_at}: '-3'")), "{err}");

        // One value too many, or too few, is refused.
        let mut long = encode(&ids);
        long.extend_from_slice(b"5\n");
        assert!(decode(&long, n, "f").is_err());
        assert!(decode(&encode(&ids[..n - 1]), n, "f").is_err());
    }
}
