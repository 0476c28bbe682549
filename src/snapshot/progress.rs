//! A progress bar on stderr for reads and writes of large files (native
//! only): drawn where stderr is a terminal and the file is large enough to
//! take a while, silent otherwise (pipes, logs, tests).

use std::io::{IsTerminal, Read, Write};
use std::time::{Duration, Instant};

/// Files smaller than this are read and written without a bar.
const MIN_BYTES: u64 = 64 << 20;
/// The bar is redrawn at most this often.
const REDRAW: Duration = Duration::from_millis(200);
const WIDTH: usize = 30;

/// Bytes done of `total`, with a bar on stderr while it is shown.
pub struct Progress {
    what: String,
    total: u64,
    done: u64,
    start: Instant,
    drawn: Option<Instant>,
    shown: bool,
}

impl Progress {
    /// A bar for `total` bytes that `what` ("writing x.bonsai") describes;
    /// shown only where stderr is a terminal and `total` is large.
    pub fn new(what: String, total: u64) -> Self {
        Self {
            what,
            total,
            done: 0,
            start: Instant::now(),
            drawn: None,
            shown: total >= MIN_BYTES && std::io::stderr().is_terminal(),
        }
    }

    fn advance(&mut self, bytes: usize) {
        self.done += bytes as u64;
        if !self.shown || self.drawn.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.drawn = Some(Instant::now());
        let frac = (self.done as f64 / self.total.max(1) as f64).min(1.0);
        let filled = (frac * WIDTH as f64) as usize;
        let rate = self.done as f64 / self.start.elapsed().as_secs_f64().max(1e-9) / 1e9;
        let _ = write!(
            std::io::stderr(),
            "\r{} [{}{}] {:.1}/{:.1} GB, {rate:.2} GB/s",
            self.what,
            "#".repeat(filled),
            " ".repeat(WIDTH - filled),
            self.done as f64 / 1e9,
            self.total as f64 / 1e9,
        );
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.shown && self.drawn.is_some() {
            // Clears the bar's line.
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// A reader that counts its bytes into a `Progress`.
pub struct Reading<R> {
    pub inner: R,
    pub progress: Progress,
}

impl<R: Read> Read for Reading<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.progress.advance(k);
        Ok(k)
    }
}

/// A writer that counts its bytes into a `Progress`.
pub struct Writing<W> {
    pub inner: W,
    pub progress: Progress,
}

impl<W: Write> Write for Writing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.progress.advance(k);
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
