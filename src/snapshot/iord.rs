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

/// The side file of `values` (ids, or kinds as numbers).
pub fn encode<T: ToString>(values: &[T]) -> Vec<u8> {
    let mut s = format!("{}\n", values.len());
    for v in values {
        s.push_str(&v.to_string());
        s.push('\n');
    }
    s.into_bytes()
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
    let mut words = text.split_ascii_whitespace();
    let count: usize = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| bad(name, "no particle count on the first line"))?;
    if count != n {
        return Err(bad(
            name,
            format!("holds {count} values, the snapshot has {n} particles"),
        ));
    }
    let ids: Vec<u64> = words
        .take(n + 1)
        .enumerate()
        .map(|(k, w)| {
            // Signed values (as some tools write) are accepted if >= 0.
            w.parse::<u64>().map_err(|_| {
                bad(
                    name,
                    format!("value {k}: '{w}' is not an integer from 0 to 2^64 - 1"),
                )
            })
        })
        .collect::<Result<_>>()?;
    if ids.len() != n {
        return Err(bad(name, format!("{} values, expected {n}", ids.len())));
    }
    Ok(ids)
}

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
