//! A series of snapshots, from webgrav or any other code, in time order:
//! what the page's player opens. Files of every format webgrav reads,
//! told apart by name or content (Bonsai names its files
//! `snap_0000.1250-0`, without extension); a series index (`index.json`,
//! as `webgrav run --snap-every` writes it) among them gives the times in
//! full precision, and a Tipsy file's side files among them (`.iord`,
//! `.webgrav_kind`) its ids and kinds. Frames keep their bytes and are
//! decoded when shown, so a long series costs its file sizes, not its
//! decoded particles.

use crate::error::{Error, Result};
use crate::snapshot::{Format, Snapshot};

/// Name of the series index `webgrav run --snap-every` writes.
pub const INDEX_NAME: &str = "index.json";

/// How `webgrav run --snap-every` names the files of a series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// `snap_NNNNN.EXT`, numbered in order.
    Numbered,
    /// Bonsai's own `snap_TTTTT.TTTT-0`: the time as its `%010.4f`, then
    /// the rank of the writing process (0), so Bonsai's tools read the
    /// series. Times closer than 1e-4 share a name; `check` refuses such a
    /// schedule before a run starts.
    Bonsai,
}

impl Naming {
    /// Bonsai's names where `bonsai` (`run --bonsai-names`), else numbered.
    pub fn bonsai_if(bonsai: bool) -> Self {
        if bonsai {
            Naming::Bonsai
        } else {
            Naming::Numbered
        }
    }

    /// The name of the `k`-th snapshot of a series, at `time`.
    pub fn name(self, k: usize, time: f64, format: Format) -> String {
        match self {
            Naming::Numbered => format!("snap_{k:05}.{}", format.extension()),
            Naming::Bonsai => format!("snap_{time:010.4}-0"),
        }
    }

    /// Refuses a schedule of snapshots at `start + k × every` up to `end`
    /// in which two snapshots would get the same name (the later would
    /// replace the earlier while the index listed both). Bonsai's names
    /// cannot be made unique otherwise: another suffix than `-0` would
    /// name another process's part of a snapshot.
    pub fn check(self, start: f64, every: f64, end: f64) -> Result<()> {
        if self == Naming::Numbered || every <= 0.0 {
            return Ok(());
        }
        let name = |t: f64| self.name(0, t, Format::TipsyBonsai);
        let mut previous = (start, name(start));
        // As many snapshots as the run takes (`webgrav run` allows at most
        // 10^6: a bound on this loop, not on the schedule).
        let count = ((end - start) / every + 1e-9).floor().min(1e7);
        for k in 1..=count as u64 {
            let t = start + k as f64 * every;
            let this = name(t);
            if this == previous.1 {
                return Err(Error::InvalidParameter(format!(
                    "--bonsai-names: the snapshots at t = {} and t = {t} would both be named \
                     {this} (Bonsai's names keep the time to 4 decimals): choose a \
                     --snap-every of at least 1e-4, or leave out --bonsai-names",
                    previous.0
                )));
            }
            previous = (t, this);
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Frame {
    pub name: String,
    pub time: f64,
    pub n: usize,
    format: Format,
    bytes: Vec<u8>,
    /// A Tipsy file's side files given with it (`NAME.iord`,
    /// `NAME.webgrav_kind`).
    ids: Option<Vec<u8>>,
    kinds: Option<Vec<u8>>,
    /// The other processes' parts of this snapshot, in order (a run on
    /// several ranks writes `snap_TTTTT.TTTT-0`, `-1`, …; this frame is
    /// `-0`).
    parts: Vec<Frame>,
}

impl Frame {
    /// The frame's file decoded, with its side files and its other parts.
    fn decode(&self) -> Result<Snapshot> {
        let mut snap = self.format.decode(&self.bytes, &self.name)?;
        if self.format.tipsy_flavor().is_some() {
            let flavor = crate::snapshot::tipsy::flavor_of(&self.bytes);
            let (ids, kinds) = (self.ids.as_deref(), self.kinds.as_deref());
            crate::snapshot::iord::apply(&mut snap, flavor, &self.name, ids, kinds)?;
        }
        if self.parts.is_empty() {
            return Ok(snap);
        }
        let parts = self.parts.iter().map(|p| (p.decode(), p.name.as_str()));
        snap.join_parts(&self.name, parts)
    }
}

/// `frames` with each snapshot's per-process parts (`NAME-1`, `NAME-2`,
/// … beside a `NAME-0`, up to the first number missing) taken into its
/// `-0` frame, as the CLI reads them (`snapshot::process_parts`).
fn join_process_parts(frames: Vec<Frame>) -> Vec<Frame> {
    let names: std::collections::HashSet<String> = frames.iter().map(|f| f.name.clone()).collect();
    let stem_of = |name: &str| -> Option<(String, usize)> {
        let (stem, k) = name.rsplit_once('-')?;
        let k = k
            .parse::<usize>()
            .ok()
            .filter(|_| k.bytes().all(|b| b.is_ascii_digit()))?;
        names
            .contains(&format!("{stem}-1"))
            .then(|| (stem.to_string(), k))
    };
    // The parts of each stem, by number, up to the first missing.
    let mut parts: std::collections::HashMap<String, Vec<Option<Frame>>> = Default::default();
    let mut whole = Vec::new();
    for f in frames {
        match stem_of(&f.name) {
            Some((stem, k)) => {
                let slots = parts.entry(stem).or_default();
                if slots.len() <= k {
                    slots.resize_with(k + 1, || None);
                }
                slots[k] = Some(f);
            }
            None => whole.push(f),
        }
    }
    for (_, slots) in parts {
        let mut run = slots.into_iter();
        // Parts past the first gap are not part of the snapshot: alone.
        let mut joined: Vec<Frame> = run.by_ref().map_while(|f| f).collect();
        whole.extend(run.flatten());
        if joined.is_empty() {
            continue;
        }
        let mut first = joined.remove(0);
        first.parts = joined;
        whole.push(first);
    }
    whole
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
            // A series lists files of its own directory (what `run`
            // writes): `../` or a path would be read from elsewhere.
            (Some(f), Some(_))
                if f.is_empty() || f == "." || f == ".." || f.contains(['/', '\\']) =>
            {
                Err(bad(&format!(
                    "lists '{f}', not a file of the series' directory"
                )))
            }
            (Some(f), Some(t)) => Ok((f.to_string(), t)),
            _ => Err(bad("a snapshot without \"file\" and \"time\"")),
        })
        .collect()
}

/// Most bytes of an index read from disk: an index of 10^6 snapshots
/// (what one run may write) is some 80 MB; a pipe or a device named
/// `index.json` is not read without end.
pub const MAX_INDEX_BYTES: u64 = 1 << 28;

/// (path, time) of each snapshot the index of the series directory `dir`
/// lists, paths joined to `dir`.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_index(dir: &str) -> Result<Vec<(String, f64)>> {
    use std::io::Read;
    let path = std::path::Path::new(dir).join(INDEX_NAME);
    let name = path.display().to_string();
    let io = |source| Error::Io {
        path: name.clone(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .map_err(io)?
        .take(MAX_INDEX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_INDEX_BYTES {
        return Err(Error::InvalidParameter(format!(
            "{name}: more than {MAX_INDEX_BYTES} bytes, not a series index"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::InvalidParameter(format!("{name}: not UTF-8 text")))?;
    Ok(index_times(&text, &name)?
        .into_iter()
        .map(|(f, t)| (std::path::Path::new(dir).join(f).display().to_string(), t))
        .collect())
}

impl Series {
    /// Opens `files` (name, bytes) as one series, every file checked
    /// (a file that does not decode is refused by name, and nothing is
    /// opened); ordered by time, then by name.
    pub fn open(files: Vec<(String, Vec<u8>)>) -> Result<Series> {
        let mut times = Vec::new();
        let mut frames = Vec::new();
        // Side files of Tipsy files: (the snapshot's name, ids?, bytes).
        let mut sides = Vec::new();
        for (name, bytes) in files {
            let base = name.rsplit(['/', '\\']).next().unwrap_or(&name).to_string();
            if base == INDEX_NAME {
                times = index_times(&String::from_utf8_lossy(&bytes), &name)?;
                continue;
            }
            if let Some(of) = base.strip_suffix(".iord") {
                sides.push((of.to_string(), true, bytes));
                continue;
            }
            if let Some(of) = base.strip_suffix(".webgrav_kind") {
                sides.push((of.to_string(), false, bytes));
                continue;
            }
            frames.push(Frame {
                name: base,
                time: 0.0,
                n: 0,
                format: format_of(&name, &bytes)?,
                bytes,
                ids: None,
                kinds: None,
                parts: Vec::new(),
            });
        }
        for (of, ids, bytes) in sides {
            if let Some(f) = frames.iter_mut().find(|f| f.name == of) {
                *(if ids { &mut f.ids } else { &mut f.kinds }) = Some(bytes);
            }
        }
        let mut frames = join_process_parts(frames);
        for f in &mut frames {
            let snap = f.decode()?;
            (f.time, f.n) = (snap.time, snap.particles.len());
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
        let mut snap = f.decode()?;
        snap.time = f.time;
        Ok(snap)
    }
}
