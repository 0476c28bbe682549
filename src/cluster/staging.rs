//! Staging buffers kept from one step to the next for the trees a rank
//! sends and receives every step. A fresh host-visible buffer of tens of
//! megabytes costs far more than its copy (the driver allocates, pins and
//! faults it in: the trees' read-back ran at about 1 GB/s on an H200 that
//! way, BENCHMARKS.md), so each of these grows to a quarter more than it
//! was asked for, and at least twice what it held, and is otherwise
//! reused.

use crate::error::{Error, Result};
use crate::gpu::buffers::copy_to_mapped;

/// Offsets of the ranges within a staging buffer: a multiple of this (wgpu
/// maps at 8-byte offsets and copies at 4; 256 keeps every record type
/// aligned for `bytemuck`).
const ALIGN: u64 = 256;

/// Where each of `sizes` starts when laid end to end, each at a multiple
/// of `align`, and where the last ends (rounded up to `align`).
pub(super) fn aligned_layout(sizes: &[u64], align: u64) -> (Vec<u64>, u64) {
    let mut at = 0;
    let offsets = sizes
        .iter()
        .map(|&s| {
            let o = at;
            at += s.next_multiple_of(align);
            o
        })
        .collect();
    (offsets, at)
}

/// Where each of `sizes` starts in one buffer, and the buffer's size.
fn layout(sizes: &[u64]) -> (Vec<u64>, u64) {
    let (offsets, end) = aligned_layout(sizes, ALIGN);
    (offsets, end.max(ALIGN))
}

/// Which way a staging buffer carries bytes.
#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Read,
    Write,
}

/// Makes `buffer` a staging buffer of at least `total` bytes, when it is
/// smaller (or none): one for `total` bytes and a quarter more, and at
/// least twice the one it replaces (trees that grow step by step between
/// redraws would otherwise make a new one every few steps, each costing
/// tens of milliseconds at first use); one to write into is born mapped
/// (no wait for its first map). Whether it made a new one.
fn hold(
    device: &wgpu::Device,
    label: &str,
    buffer: &mut Option<wgpu::Buffer>,
    total: u64,
    direction: Direction,
) -> bool {
    let held = buffer.as_ref().map_or(0, |b| b.size());
    if buffer.is_some() && held >= total {
        return false;
    }
    let usage = match direction {
        Direction::Read => wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        Direction::Write => wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
    };
    *buffer = None;
    *buffer = Some(device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (total + total / 4).max(2 * held).next_multiple_of(ALIGN),
        usage,
        mapped_at_creation: direction == Direction::Write,
    }));
    true
}

fn mapping_failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Readback(format!("{what}: {e}"))
}

/// Reads byte ranges of GPU buffers into one kept MAP_READ buffer.
pub struct StagingReader {
    label: &'static str,
    buffer: Option<wgpu::Buffer>,
}

impl StagingReader {
    pub fn new(label: &'static str) -> Self {
        Self {
            label,
            buffer: None,
        }
    }

    /// The buffer, for a successor (this one starts afresh).
    pub fn take(&mut self) -> Self {
        std::mem::replace(self, Self::new(self.label))
    }

    /// Copies the ranges (buffer, offset, size) in one submission, calls
    /// `meanwhile` (which may queue more work: only the copy is waited
    /// for), waits, and hands `f` their bytes where they are mapped.
    pub async fn read<R>(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        sources: &[(&wgpu::Buffer, u64, u64)],
        meanwhile: impl FnOnce(),
        f: impl FnOnce(&[&[u8]]) -> R,
    ) -> Result<R> {
        let sizes: Vec<u64> = sources.iter().map(|s| s.2).collect();
        let (offsets, total) = layout(&sizes);
        hold(device, self.label, &mut self.buffer, total, Direction::Read);
        let staging = self.buffer.as_ref().expect("made above");
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some(self.label),
        });
        for (&(src, offset, size), &at) in sources.iter().zip(&offsets) {
            if size > 0 {
                encoder.copy_buffer_to_buffer(src, offset, staging, at, size);
            }
        }
        let done = queue.submit(Some(encoder.finish()));
        meanwhile();
        let (tx, rx) = futures_channel::oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, ..total, move |r| {
            let _ = tx.send(r);
        });
        device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(done),
                timeout: None,
            })
            .map_err(|e| mapping_failed(self.label, e))?;
        rx.await
            .map_err(|_| mapping_failed(self.label, "map callback dropped"))?
            .map_err(|e| mapping_failed(self.label, e))?;
        let out = {
            let view = staging
                .get_mapped_range(..total)
                .map_err(|e| mapping_failed(self.label, e))?;
            let slices: Vec<&[u8]> = offsets
                .iter()
                .zip(&sizes)
                .map(|(&o, &s)| &view[o as usize..(o + s) as usize])
                .collect();
            f(&slices)
        };
        staging.unmap();
        Ok(out)
    }
}

/// Writes byte ranges of GPU buffers through one kept MAP_WRITE buffer.
pub struct StagingWriter {
    label: &'static str,
    buffer: Option<wgpu::Buffer>,
    /// The submission of the last copy out of `buffer`: it is mapped again
    /// once that has run (long since, a step later).
    last_copy: Option<wgpu::SubmissionIndex>,
}

impl StagingWriter {
    pub fn new(label: &'static str) -> Self {
        Self {
            label,
            buffer: None,
            last_copy: None,
        }
    }

    /// The buffer, for a successor (this one starts afresh).
    pub fn take(&mut self) -> Self {
        std::mem::replace(self, Self::new(self.label))
    }

    /// Copies each of `ranges` (target buffer, offset in it, and its bytes
    /// as pieces laid end to end) into the mapped staging buffer, on every
    /// core, then to its target in a submission of its own (ahead of
    /// anything the caller submits next).
    pub fn write(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        ranges: &[(&wgpu::Buffer, u64, Vec<&[u8]>)],
    ) -> Result<()> {
        let sizes: Vec<u64> = ranges
            .iter()
            .map(|r| r.2.iter().map(|p| p.len() as u64).sum())
            .collect();
        let (offsets, total) = layout(&sizes);
        if hold(
            device,
            self.label,
            &mut self.buffer,
            total,
            Direction::Write,
        ) {
            self.last_copy = None;
        } else {
            let staging = self.buffer.as_ref().expect("checked above");
            let (tx, mut rx) = futures_channel::oneshot::channel();
            staging.map_async(wgpu::MapMode::Write, .., move |r| {
                let _ = tx.send(r);
            });
            device
                .poll(wgpu::PollType::Wait {
                    submission_index: self.last_copy.take(),
                    timeout: None,
                })
                .map_err(|e| mapping_failed(self.label, e))?;
            match rx.try_recv() {
                Ok(Some(r)) => r.map_err(|e| mapping_failed(self.label, e))?,
                _ => return Err(mapping_failed(self.label, "the buffer was not mapped")),
            }
        }
        let staging = self.buffer.as_ref().expect("made above");
        {
            let mut view = staging
                .get_mapped_range_mut(..)
                .map_err(|e| mapping_failed(self.label, e))?;
            // Every source piece beside its place.
            let mut copies = Vec::new();
            let (mut rest, mut at) = (view.slice(..), 0u64);
            for ((_, _, pieces), (&o, &size)) in ranges.iter().zip(offsets.iter().zip(&sizes)) {
                let (_, tail) = rest.split_at((o - at) as usize);
                let (mut dst, tail) = tail.split_at(size as usize);
                (rest, at) = (tail, o + size);
                for piece in pieces {
                    let (d, more) = dst.split_at(piece.len());
                    copies.push((d, *piece));
                    dst = more;
                }
            }
            copy_to_mapped(copies);
        }
        staging.unmap();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some(self.label),
        });
        for ((dst, offset, _), (&at, &size)) in ranges.iter().zip(offsets.iter().zip(&sizes)) {
            if size > 0 {
                encoder.copy_buffer_to_buffer(staging, at, dst, *offset, size);
            }
        }
        self.last_copy = Some(queue.submit(Some(encoder.finish())));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::layout;

    #[test]
    fn ranges_start_aligned_and_never_overlap() {
        let (offsets, total) = layout(&[3, 0, 256, 257]);
        assert_eq!(offsets, vec![0, 256, 256, 512]);
        assert_eq!(total, 1024);
        assert_eq!(layout(&[]).1, 256);
    }
}
