//! Side files of a Tipsy file in the Tipsy tools' and pynbody's ASCII
//! array format (the particle count on the first line, then one integer per
//! line in file order): the ids of a standard Tipsy file in `NAME.iord`,
//! and the kinds a Tipsy flavour cannot record (disk, bulge and boundary in
//! standard Tipsy; gas, stars and boundary in Bonsai's) in
//! `NAME.webgrav_kind`, which pynbody loads as the array `webgrav_kind`
//! (what `webgrav.Simulation.from_pynbody` reads kinds from).

use super::tipsy::{self, Flavor};
use super::{bad, Snapshot};
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
        .map(|(k, t)| {
            u8::try_from(t)
                .ok()
                .filter(|&t| (t as usize) < crate::state::KINDS.len())
                .ok_or_else(|| bad(name, format!("particle {k}: kind {t} is not 0 to 5")))
        })
        .collect()
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
    let count: usize = first
        .parse()
        .map_err(|_| bad(name, "no particle count on the first line"))?;
    if count != n {
        return Err(bad(
            name,
            format!("holds {count} values, the snapshot has {n} particles"),
        ));
    }
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
    let side = kinds_path(path);
    let kinds = decode_kinds(bytes, n, &side)?;
    let recorded = snap.types.clone().unwrap_or_else(|| vec![1; n]);
    if let Some(k) = (0..n).find(|&k| tipsy::recorded_kind(flavor, kinds[k]) != recorded[k]) {
        let name = |t: u8| crate::state::KINDS[t as usize];
        return Err(bad(
            &side,
            format!(
                "particle {k} is {} here but {} in {path}: the side file belongs to another \
                 snapshot (remove it to read {path} alone)",
                name(kinds[k]),
                name(recorded[k])
            ),
        ));
    }
    snap.types = Some(kinds);
    Ok(())
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
