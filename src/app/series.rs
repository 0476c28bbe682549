//! A series of snapshots, from webgrav or any other code, in time order:
//! what the page's player opens. Files of every format webgrav reads,
//! told apart by name or content (Bonsai names its files
//! `snap_0000.1250-0`, without extension); a series index (`index.json`,
//! as `webgrav run --snap-every` writes it) among them gives the times in
//! full precision. Frames keep their bytes and are decoded when shown,
//! so a long series costs its file sizes, not its decoded particles.

use crate::error::{Error, Result};
use crate::snapshot::{Format, Snapshot};

/// Name of the series index `webgrav run --snap-every` writes.
pub const INDEX_NAME: &str = "index.json";

#[derive(Clone, Debug)]
pub struct Frame {
    pub name: String,
    pub time: f64,
    pub n: usize,
    format: Format,
    bytes: Vec<u8>,
}

#[derive(Clone, Debug, Default)]
pub struct Series {
    frames: Vec<Frame>,
}

/// The format of `name`'s bytes (`Format::identify` on their start).
pub fn format_of(name: &str, bytes: &[u8]) -> Result<Format> {
    Format::identify(name, &bytes[..bytes.len().min(4096)])
}

/// (file name, time) of each snapshot a series index's text lists;
/// `path` names the index in errors.
pub fn index_times(text: &str, path: &str) -> Result<Vec<(String, f64)>> {
    let bad = |why: &str| Error::InvalidParameter(format!("{path}: {why}"));
    let doc: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(&format!("not JSON ({e})")))?;
    doc["snapshots"]
        .as_array()
        .ok_or_else(|| bad("no \"snapshots\" list"))?
        .iter()
        .map(|s| match (s["file"].as_str(), s["time"].as_f64()) {
            (Some(f), Some(t)) => Ok((f.to_string(), t)),
            _ => Err(bad("a snapshot without \"file\" and \"time\"")),
        })
        .collect()
}

impl Series {
    /// Opens `files` (name, bytes) as one series, every file checked
    /// (a file that does not decode is refused by name, and nothing is
    /// opened); ordered by time, then by name.
    pub fn open(files: Vec<(String, Vec<u8>)>) -> Result<Series> {
        let mut times = Vec::new();
        let mut frames = Vec::new();
        for (name, bytes) in files {
            let base = name.rsplit(['/', '\\']).next().unwrap_or(&name).to_string();
            if base == INDEX_NAME {
                times = index_times(&String::from_utf8_lossy(&bytes), &name)?;
                continue;
            }
            let format = format_of(&name, &bytes)?;
            let snap = format.decode(&bytes, &name)?;
            frames.push(Frame {
                name: base,
                time: snap.time,
                n: snap.particles.len(),
                format,
                bytes,
            });
        }
        if frames.is_empty() {
            return Err(Error::InvalidParameter(
                "a series needs at least one snapshot file".into(),
            ));
        }
        for f in &mut frames {
            if let Some((_, t)) = times.iter().find(|(file, _)| *file == f.name) {
                f.time = *t;
            }
        }
        frames.sort_by(|a, b| a.time.total_cmp(&b.time).then_with(|| a.name.cmp(&b.name)));
        Ok(Series { frames })
    }

    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Frame `k` decoded, at its series time.
    pub fn snapshot(&self, k: usize) -> Result<Snapshot> {
        let f = self.frames.get(k).ok_or_else(|| {
            Error::InvalidParameter(format!("no frame {k} in a series of {}", self.frames.len()))
        })?;
        let mut snap = f.format.decode(&f.bytes, &f.name)?;
        snap.time = f.time;
        Ok(snap)
    }
}
