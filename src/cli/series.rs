//! The snapshot series of `webgrav run --snap-every`: numbered files and
//! their index, `index.json` (`{"format", "run", "snapshots": [{"file",
//! "time", "step", "n"}]}`), which lists only files that are complete.
//!
//! The index names the run that wrote it (`run`, its identity in hex):
//! a run resumed from one of that run's checkpoints continues the series
//! (its numbering, its entries up to the checkpoint's time; later ones
//! are dropped and their files removed, since the resumed run writes
//! them again), and any other run refuses the directory rather than
//! overwrite part of someone's series.
//!
//! The index is rewritten atomically, but not after every file: after a
//! file only when a second has passed since the last rewrite and ten
//! times what that rewrite took (a long series, whose index costs O(n) to
//! write and a sync, spends at most a tenth of its time on it; 4,096
//! snapshots of 64 particles rewrote it 4,096 times, now 23), and always
//! before a checkpoint is written and when the run ends, fails or is
//! interrupted.
//! So the index never lists a file that is incomplete or missing, and
//! every checkpoint's series is listed up to its time.

use super::say;
use crate::app::series::Naming;
use crate::error::{Error, Result};
use crate::hermite::State64;
use crate::run::schedule::at;
use crate::run::write_state_as;
use crate::snapshot::{self, Format, Snapshot};
use std::path::Path;
use std::time::{Duration, Instant};

/// Name of the index in a series directory.
const INDEX: &str = "index.json";

/// Names of a series' files start so (`snap_NNNNN.EXT`, Bonsai's
/// `snap_TTTTT.TTTT-0`).
const PREFIX: &str = "snap_";

/// Least time between two rewrites of the index while files are written.
const FLUSH_PAUSE: Duration = Duration::from_secs(1);

/// One file of the series.
struct Entry {
    file: String,
    time: f64,
    /// The entry as it appears in the index.
    json: String,
}

impl Entry {
    fn new(file: String, time: f64, steps: u64, n: usize) -> Self {
        let json =
            serde_json::json!({"file": file, "time": time, "step": steps, "n": n}).to_string();
        Self { file, time, json }
    }
}

/// The number of a numbered series file (`snap_00012.csv`: 12).
fn number_of(name: &str) -> Option<usize> {
    let (digits, _extension) = name.strip_prefix(PREFIX)?.split_once('.')?;
    (digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The time in a file name of Bonsai's (`snap_0000.2500-0`: 0.25).
fn time_of(name: &str) -> Option<f64> {
    let time = name.strip_prefix(PREFIX)?.strip_suffix("-0")?;
    time.parse().ok().filter(|t: &f64| t.is_finite())
}

/// How a series file was named, if it is one of `run`'s.
fn naming_of(name: &str) -> Option<Naming> {
    if number_of(name).is_some() {
        Some(Naming::Numbered)
    } else if time_of(name).is_some() {
        Some(Naming::Bonsai)
    } else {
        None
    }
}

/// The names of the series files in `dir` (not the index).
fn series_files(dir: &str) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|source| Error::Io {
            path: dir.to_string(),
            source,
        })?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_series_name(n) && n != INDEX)
        .collect();
    names.sort();
    Ok(names)
}

/// A series being written.
pub struct Series {
    dir: String,
    format: Format,
    naming: Naming,
    /// The run's identity, written into the index.
    run_id: u64,
    entries: Vec<Entry>,
    /// Entries the index on disk lists (the first `listed`), or `None`
    /// when it must be rewritten whatever it lists (entries dropped).
    listed: Option<usize>,
    /// Files of entries dropped at a resume, removed when the run starts.
    dropped: Vec<String>,
    /// Entries of a resumed index whose files are gone, left out of it.
    missing: Vec<String>,
    /// The number of the next numbered file: after the highest one the
    /// series keeps, so a resume never reuses a kept file's name, whatever
    /// files were deleted or entries edited before it.
    next_number: usize,
    /// A resumed series: it has its snapshots up to the checkpoint.
    resumed: bool,
    /// When the index was last rewritten (never: `None`) and what that
    /// took.
    last_flush: Option<Instant>,
    flush_cost: Duration,
}

/// Whether `name` could be a file of a series (or its index).
pub fn is_series_name(name: &str) -> bool {
    name == INDEX || name.starts_with(PREFIX)
}

impl Series {
    /// Checks the directory of a series before any work: a new run
    /// (`resume` = `None`) needs one that holds no series; a run resumed
    /// from a checkpoint of run `id` at time `t` (`resume` = (id, t))
    /// continues its own series there, or starts one in a directory that
    /// holds none.
    pub fn open(
        dir: &str,
        format: Format,
        naming: Naming,
        resume: Option<(u64, f64)>,
    ) -> Result<Self> {
        let bad = |m: String| Err(Error::InvalidParameter(format!("--snap-dir '{dir}': {m}")));
        if dir.is_empty() {
            return bad("names no directory".into());
        }
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_string(),
            source,
        })?;
        let index = format!("{dir}/{INDEX}");
        snapshot::check_output(&index, &[])?;
        let mut series = Self {
            dir: dir.to_string(),
            format,
            naming,
            run_id: resume.map_or(0, |(id, _)| id),
            entries: Vec::new(),
            listed: Some(0),
            dropped: Vec::new(),
            missing: Vec::new(),
            next_number: 0,
            resumed: false,
            last_flush: None,
            flush_cost: Duration::ZERO,
        };
        let elsewhere = "choose another --snap-dir, or move the files away";
        if !Path::new(&index).exists() {
            // Files of a series without its index (another code's, or a
            // run that never listed them) would be overwritten.
            let names = series_files(dir)?;
            if !names.is_empty() {
                return bad(format!(
                    "holds {} snapshot files ({}, …) that no index lists and this run would \
                     overwrite; {elsewhere}",
                    names.len(),
                    names[0]
                ));
            }
            return Ok(series);
        }
        let text = std::fs::read_to_string(&index).map_err(|source| Error::Io {
            path: index.clone(),
            source,
        })?;
        let doc: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::InvalidParameter(format!("{index}: not JSON ({e})")))?;
        let listed = doc["snapshots"].as_array().map_or(0, |s| s.len());
        let owner = doc["run"]
            .as_str()
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        let Some((id, t)) = resume.filter(|&(id, _)| id != 0 && owner == Some(id)) else {
            let to_continue = if resume.is_some() {
                "the checkpoint is not of the run that wrote it"
            } else {
                "to continue that run, --resume its checkpoint with this --snap-dir"
            };
            return bad(format!(
                "holds the series of another run ({INDEX} lists {listed} snapshots; \
                 {to_continue}); {elsewhere}"
            ));
        };
        if doc["format"].as_str() != Some(format.name()) {
            return bad(format!(
                "the series is in format {}; resume with --snap-format {0}",
                doc["format"]
            ));
        }
        let entries = doc["snapshots"].as_array().cloned().unwrap_or_default();
        for e in entries {
            let (Some(file), Some(time), Some(step), Some(n)) = (
                e["file"].as_str(),
                e["time"].as_f64(),
                e["step"].as_u64(),
                e["n"].as_u64(),
            ) else {
                return bad(format!(
                    "{INDEX} has an entry without file, time, step and n: {e}"
                ));
            };
            // Files the resumed run may remove or replace: its own, here.
            if file.contains(['/', '\\']) || !is_series_name(file) || file == INDEX {
                return bad(format!("{INDEX} lists '{file}', not a file of this series"));
            }
            if naming_of(file) != Some(naming) {
                let resume_with = match naming {
                    Naming::Numbered => "resume with --bonsai-names",
                    Naming::Bonsai => "resume without --bonsai-names",
                };
                return bad(format!(
                    "{INDEX} lists '{file}', which this run would not name so; \
                     {resume_with} to keep one naming in the series"
                ));
            }
            if time > t && !at(time, t) {
                series.dropped.push(file.to_string());
            } else if Path::new(&format!("{dir}/{file}")).exists() {
                series.next_number = series.next_number.max(number_of(file).map_or(0, |k| k + 1));
                series
                    .entries
                    .push(Entry::new(file.to_string(), time, step, n as usize));
            } else {
                series.missing.push(file.to_string());
            }
        }
        // Files the index does not list, later than what it keeps: written
        // by this run after its last index before it stopped. The resume
        // writes them again; any other file of the series is left alone
        // and never overwritten.
        let kept_until = series.entries.iter().map(|e| e.time).fold(t, f64::max);
        for name in series_files(dir)? {
            let listed =
                series.entries.iter().any(|e| e.file == name) || series.dropped.contains(&name);
            let later = match naming {
                Naming::Numbered => number_of(&name).is_some_and(|k| k >= series.next_number),
                Naming::Bonsai => time_of(&name).is_some_and(|x| x > kept_until && !at(x, t)),
            };
            if !listed && later && naming_of(&name) == Some(naming) {
                series.dropped.push(name);
            } else if !listed {
                series.next_number = series
                    .next_number
                    .max(number_of(&name).map_or(0, |k| k + 1));
            }
        }
        let unchanged = series.dropped.is_empty() && series.missing.is_empty();
        series.listed = unchanged.then_some(series.entries.len());
        if unchanged {
            let last = series.entries.last().map(|e| e.time);
            super::interrupt::index_written(dir, series.entries.len(), last);
        }
        series.run_id = id;
        series.resumed = true;
        Ok(series)
    }

    /// The run's identity, for the index (a new run's, or a new one for a
    /// run resumed from a version 4 checkpoint).
    pub fn set_run_id(&mut self, id: u64) {
        self.run_id = id;
    }

    /// Whether the run that starts (or resumes) at `t` writes a snapshot
    /// there first: a new series begins with the start state; a resumed one
    /// has it already, if `t` is on its grid (`on_grid`) and it was written.
    pub fn wants_start(&self, t: f64, on_grid: bool) -> bool {
        !self.resumed || (on_grid && !self.entries.iter().any(|e| at(e.time, t)))
    }

    /// At the run's start: removes the files of entries later than a
    /// resumed checkpoint (the run writes them again) and says what the
    /// series kept.
    pub fn start(&mut self) -> Result<()> {
        // From here on a second signal can list what was written.
        super::interrupt::series_started(
            &format!("{}/{INDEX}", self.dir),
            self.index_head(),
            self.entries.iter().map(|e| e.json.clone()).collect(),
            self.entries.last().map(|e| e.time),
        );
        for file in &self.missing {
            say!(
                "{}: {file} is listed but gone; left out of the index",
                self.dir
            );
        }
        if self.resumed {
            say!(
                "{}: continuing the series after its {} snapshots up to the checkpoint",
                self.dir,
                self.entries.len()
            );
        }
        if !self.dropped.is_empty() {
            self.flush()?;
            for file in std::mem::take(&mut self.dropped) {
                let path = format!("{}/{file}", self.dir);
                let side = snapshot::iord::side_path(&path);
                for p in [path, side] {
                    match std::fs::remove_file(&p) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(Error::Io { path: p, source: e })
                        }
                        _ => {}
                    }
                }
                say!(
                    "{}: removed {file}, later than the checkpoint (written again)",
                    self.dir
                );
            }
        }
        Ok(())
    }

    /// Writes one snapshot; the index follows (`flush`) unless it was
    /// rewritten too recently.
    pub fn write(&mut self, snap: &Snapshot, steps: u64, f64s: Option<&State64>) -> Result<()> {
        let name = self.naming.name(self.next_number, snap.time, self.format);
        self.next_number += 1;
        let path = format!("{}/{name}", self.dir);
        // By the series' format, not the name (Bonsai's names have no
        // extension); ids and kinds the format lacks go to side files.
        let written = write_state_as(&path, self.format, snap, f64s)?;
        if self.entries.is_empty() {
            for note in written.notes(&path) {
                say!("{note} (so for every snapshot of the series)");
            }
        }
        let entry = Entry::new(name, snap.time, steps, snap.particles.len());
        super::interrupt::snapshot_written(&entry.json, entry.time);
        self.entries.push(entry);
        // Once a signal has asked the run to stop, every snapshot is
        // listed as it lands: a second signal ends the process at once.
        let pause = FLUSH_PAUSE.max(10 * self.flush_cost);
        if self.last_flush.is_none_or(|t| t.elapsed() >= pause) || super::interrupt::requested() {
            self.flush()?;
        }
        Ok(())
    }

    /// The index's text up to its list of snapshots.
    fn index_head(&self) -> String {
        format!(
            "{{\"format\":\"{}\",\"run\":\"{:016x}\",\"snapshots\":[",
            self.format.name(),
            self.run_id
        )
    }

    /// Rewrites the index (atomically) if it does not list every file yet.
    pub fn flush(&mut self) -> Result<()> {
        if self.listed == Some(self.entries.len()) {
            return Ok(());
        }
        let began = Instant::now();
        let mut doc = self.index_head();
        for (k, e) in self.entries.iter().enumerate() {
            if k > 0 {
                doc.push(',');
            }
            doc.push_str(&e.json);
        }
        doc.push_str("]}\n");
        snapshot::write_atomic(&format!("{}/{INDEX}", self.dir), doc.as_bytes())?;
        self.listed = Some(self.entries.len());
        let last = self.entries.last().map(|e| e.time);
        super::interrupt::index_written(&self.dir, self.entries.len(), last);
        let now = Instant::now();
        self.last_flush = Some(now);
        self.flush_cost = now - began;
        Ok(())
    }

    /// Flushes the index where a run stops on an error or a signal: a
    /// failure is said, not returned (the first error is the one to report).
    pub fn flush_or_say(&mut self) {
        if let Err(e) = self.flush() {
            say!(
                "webgrav: could not update the series index in {}: {e}",
                self.dir
            );
        }
    }
}
