//! SIGINT (Ctrl-C), SIGTERM (what a batch system sends at its time limit)
//! and SIGHUP (a closed terminal), all handled alike. While a run is
//! under way (`Phase::Running`) the first signal asks it to stop at its
//! next batch of steps and write its checkpoint; while it writes its end
//! state (`Phase::Finishing`) the writes are finished first. Otherwise, or
//! at a second signal, the process exits at once with status 130, after
//! the atomic write under way (if any) has landed and with no temporary
//! file left behind.

use super::say;
use crate::snapshot;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;

/// The exit status of a run stopped by a signal (its checkpoint written),
/// and of a process that a signal ended at once: 128 + SIGINT's number,
/// whichever signal it was.
pub const EXIT_STATUS: u8 = 130;

/// What a signal interrupts.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Nothing that must finish: exit at once.
    Idle = 0,
    /// Steps: stop at the next batch and write a checkpoint.
    Running = 1,
    /// The end state's writes: finish them, then exit.
    Finishing = 2,
}

static PHASE: AtomicU8 = AtomicU8::new(Phase::Idle as u8);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// What a process ended at once has left on disk, for its last words.
#[derive(Default)]
struct Left {
    /// The latest checkpoint written completely, and its time.
    checkpoint: Option<(String, f64)>,
    /// The series directory, how many snapshots its index lists and the
    /// time of the last.
    series: Option<(String, usize, Option<f64>)>,
    /// The series index as it would list every snapshot written so far
    /// (path, the document up to its list, the entries, the last time):
    /// the index is rewritten lazily, so a second signal writes it first.
    draft: Option<(String, String, Vec<String>, Option<f64>)>,
}

static LEFT: Mutex<Left> = Mutex::new(Left {
    checkpoint: None,
    series: None,
    draft: None,
});

fn left() -> std::sync::MutexGuard<'static, Left> {
    LEFT.lock().unwrap_or_else(|p| p.into_inner())
}

/// A checkpoint has been written completely (its rename done).
pub fn checkpoint_written(path: &str, time: f64) {
    left().checkpoint = Some((path.to_string(), time));
}

/// The series index in `dir` now lists `listed` snapshots, the last at
/// `last`.
pub fn index_written(dir: &str, listed: usize, last: Option<f64>) {
    left().series = Some((dir.to_string(), listed, last));
}

/// A series index at `path` begins with `head` (up to its list of
/// snapshots) and lists `entries`; later entries come by `snapshot_written`.
pub fn series_started(path: &str, head: String, entries: Vec<String>, last: Option<f64>) {
    left().draft = Some((path.to_string(), head, entries, last));
}

/// A snapshot of the series landed completely: its index entry.
pub fn snapshot_written(entry: &str, time: f64) {
    if let Some((_, _, entries, last)) = left().draft.as_mut() {
        entries.push(entry.to_string());
        *last = Some(time);
    }
}

/// Writes the series index with every snapshot written, if it lists fewer
/// (from the signal handler, which holds every other write back: a
/// temporary renamed over the index, as `write_atomic` does).
fn write_index_draft(l: &mut Left) {
    let Some((path, head, entries, last)) = &l.draft else {
        return;
    };
    let listed = l.series.as_ref().map_or(0, |s| s.1);
    if listed >= entries.len() {
        return;
    }
    let doc = format!("{head}{}]}}\n", entries.join(","));
    let tmp = format!("{path}.exit-tmp");
    if std::fs::write(&tmp, doc)
        .and_then(|()| std::fs::rename(&tmp, path))
        .is_ok()
    {
        let dir = std::path::Path::new(path)
            .parent()
            .map_or(".".into(), |d| d.display().to_string());
        l.series = Some((dir, entries.len(), *last));
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// What a second signal says before the exit: the checkpoint to resume
/// from and what the index holds.
fn last_words() -> String {
    let mut l = left();
    write_index_draft(&mut l);
    let mut words = String::from("webgrav: interrupted at once");
    match &l.checkpoint {
        Some((path, t)) => words.push_str(&format!(
            "; the latest checkpoint is {path} at t = {t} (continue with --resume {path})"
        )),
        None => words.push_str("; no checkpoint was written"),
    }
    if let Some((dir, listed, last)) = &l.series {
        words.push_str(&format!("; {dir}/index.json lists {listed} snapshots"));
        if let Some(t) = last {
            words.push_str(&format!(", the last at t = {t}"));
        }
    }
    words
}

/// Installs the handler (once, at start).
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        let phase = PHASE.load(Ordering::SeqCst);
        if phase != Phase::Idle as u8 && !INTERRUPTED.swap(true, Ordering::SeqCst) {
            if phase == Phase::Running as u8 {
                say!(
                    "webgrav: interrupted; stopping at the next steps to write a checkpoint \
                     (a second signal exits at once)"
                );
            } else {
                say!("webgrav: interrupted; finishing the end state's writes first");
            }
            return;
        }
        // Held until the exit: no write starts after the one under way.
        let _writes = snapshot::hold_writes(std::time::Duration::from_secs(5));
        snapshot::remove_pending_temporaries();
        say!("{}", last_words());
        std::process::exit(EXIT_STATUS as i32);
    });
}

/// Sets what a signal interrupts from now on.
pub fn enter(phase: Phase) {
    PHASE.store(phase as u8, Ordering::SeqCst);
}

/// A signal has asked the run to stop.
pub fn requested() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
