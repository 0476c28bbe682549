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
        say!("webgrav: interrupted");
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
