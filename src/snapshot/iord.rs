//! Particle ids of a standard Tipsy file in its `.iord` side file, the
//! Tipsy tools' and pynbody's ASCII array format: the particle count on the
//! first line, then one integer per line in file order.

use super::bad;
use crate::error::Result;

/// The side file's name for snapshot `path` (`run.tipsy` → `run.tipsy.iord`,
/// as pynbody looks for it).
pub fn side_path(path: &str) -> String {
    format!("{path}.iord")
}

/// Whether `ids` are simply 0..N-1 (then no side file is needed).
pub fn is_identity(ids: &[u64]) -> bool {
    ids.iter().enumerate().all(|(k, &id)| id == k as u64)
}

pub fn encode(ids: &[u64]) -> Vec<u8> {
    let mut s = format!("{}\n", ids.len());
    for id in ids {
        s.push_str(&id.to_string());
        s.push('\n');
    }
    s.into_bytes()
}

/// Parses a side file that must hold `n` ids; `name` appears in errors.
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
            format!("holds {count} ids, the snapshot has {n} particles"),
        ));
    }
    let ids: Vec<u64> = words
        .take(n + 1)
        .enumerate()
        .map(|(k, w)| {
            // Signed values (as some tools write) are accepted if >= 0.
            w.parse::<u64>()
                .map_err(|_| bad(name, format!("id {k}: '{w}' is not a particle id")))
        })
        .collect::<Result<_>>()?;
    if ids.len() != n {
        return Err(bad(name, format!("{} ids, expected {n}", ids.len())));
    }
    Ok(ids)
}
