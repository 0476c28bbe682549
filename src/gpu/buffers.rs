//! Creation of GPU buffers and their asynchronous read-back. The same code
//! runs natively (where we poll the device until the map completes) and in
//! the browser (where the event loop completes it; `poll` never blocks there).

use crate::error::{Error, Result};
use wgpu::util::DeviceExt;

/// Copies whole buffers to the CPU. All copies are recorded in one
/// submission, so together they show one consistent state even if more
/// work is queued while the maps complete.
pub async fn read_buffers(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    sources: &[&wgpu::Buffer],
) -> Result<Vec<Vec<u8>>> {
    let ranges: Vec<_> = sources.iter().map(|&b| (b, 0, b.size())).collect();
    read_buffer_ranges(device, queue, &ranges).await
}

/// Copies the byte ranges (buffer, offset, size) to the CPU, in one
/// submission as `read_buffers` does; each staging buffer is freed as
/// soon as its bytes are out.
pub async fn read_buffer_ranges(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    sources: &[(&wgpu::Buffer, u64, u64)],
) -> Result<Vec<Vec<u8>>> {
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("read-back copy"),
    });
    let staging: Vec<wgpu::Buffer> = sources
        .iter()
        .map(|&(src, offset, size)| {
            let buf = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("read-back staging"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            encoder.copy_buffer_to_buffer(src, offset, &buf, 0, size);
            buf
        })
        .collect();
    queue.submit(Some(encoder.finish()));
    let receivers: Vec<_> = staging
        .iter()
        .map(|buf| {
            let (tx, rx) = futures_channel::oneshot::channel();
            buf.map_async(wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            rx
        })
        .collect();
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| Error::Readback(e.to_string()))?;
    let mut out = Vec::with_capacity(staging.len());
    for (buf, rx) in staging.iter().zip(receivers) {
        rx.await
            .map_err(|_| Error::Readback("map callback dropped".into()))?
            .map_err(|e| Error::Readback(e.to_string()))?;
        out.push(
            buf.get_mapped_range(..)
                .map_err(|e| Error::Readback(e.to_string()))?
                .to_vec(),
        );
        buf.unmap();
        buf.destroy();
    }
    Ok(out)
}

/// Reads `records` consecutive records of several buffers back, `piece`
/// records at a time: `f(first, bytes)` for each piece in order, with the
/// bytes of each source's range (sources given as buffer and record size),
/// until `f` returns false. Two sets of staging buffers, made once, take
/// turns: the copy of the next piece is queued before a piece is handed to
/// `f`, so the GPU copies while the host works, and no staging memory is
/// allocated (or faulted in) per piece, which made reading back 10^8
/// particles take tens of seconds. Pieces are one state where no work is
/// queued between them.
pub async fn read_pieces(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    sources: &[(&wgpu::Buffer, u64)],
    records: u64,
    piece: u64,
    f: impl FnMut(u64, &[&[u8]]) -> bool,
) -> Result<()> {
    read_pieces_with(device, queue, sources, records, piece, None, f).await
}

/// A GPU pass that writes piece (first, count) into buffers of one piece:
/// `read_pieces_with`'s `prepare`.
pub type PreparePiece<'a> = &'a dyn Fn(&mut wgpu::CommandEncoder, u64, u64);

/// `read_pieces`, where `prepare`, if given, records for each piece the
/// work that puts it at the start of the sources (which then hold one
/// piece), ahead of the piece's copies in the same submission.
pub async fn read_pieces_with(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    sources: &[(&wgpu::Buffer, u64)],
    records: u64,
    piece: u64,
    prepare: Option<PreparePiece<'_>>,
    mut f: impl FnMut(u64, &[&[u8]]) -> bool,
) -> Result<()> {
    if records == 0 {
        return Ok(());
    }
    let piece = piece.clamp(1, records);
    let pieces = records.div_ceil(piece);
    let staging = |_| -> Vec<wgpu::Buffer> {
        sources
            .iter()
            .map(|&(_, size)| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("read-back staging"),
                    size: piece * size,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect()
    };
    let sets: Vec<Vec<wgpu::Buffer>> = (0..pieces.min(2)).map(staging).collect();
    let count = |k: u64| (records - k * piece).min(piece);
    // Queues the copy of piece k into its set and asks for the maps.
    let queue_piece = |k: u64| {
        let set = &sets[(k % 2) as usize];
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("read-back copy"),
        });
        let from = match prepare {
            Some(prepare) => {
                prepare(&mut encoder, k * piece, count(k));
                0
            }
            None => k * piece,
        };
        for (&(src, size), dst) in sources.iter().zip(set) {
            encoder.copy_buffer_to_buffer(src, from * size, dst, 0, count(k) * size);
        }
        let done = queue.submit(Some(encoder.finish()));
        let maps: Vec<_> = set
            .iter()
            .zip(sources)
            .map(|(dst, &(_, size))| {
                let (tx, rx) = futures_channel::oneshot::channel();
                dst.map_async(wgpu::MapMode::Read, ..count(k) * size, move |r| {
                    let _ = tx.send(r);
                });
                rx
            })
            .collect();
        (done, maps)
    };
    let mut in_flight = std::collections::VecDeque::new();
    for k in 0..pieces.min(2) {
        in_flight.push_back(queue_piece(k));
    }
    for k in 0..pieces {
        let (done, maps) = in_flight.pop_front().expect("a piece in flight");
        device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(done),
                timeout: None,
            })
            .map_err(|e| Error::Readback(e.to_string()))?;
        for rx in maps {
            rx.await
                .map_err(|_| Error::Readback("map callback dropped".into()))?
                .map_err(|e| Error::Readback(e.to_string()))?;
        }
        let set = &sets[(k % 2) as usize];
        let more = {
            let views = set
                .iter()
                .zip(sources)
                .map(|(b, &(_, size))| b.get_mapped_range(..count(k) * size))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::Readback(e.to_string()))?;
            let bytes: Vec<&[u8]> = views.iter().map(|v| &v[..]).collect();
            f(k * piece, &bytes)
        };
        set.iter().for_each(wgpu::Buffer::unmap);
        if !more {
            break;
        }
        if k + 2 < pieces {
            in_flight.push_back(queue_piece(k + 2));
        }
    }
    Ok(())
}

/// Read-back bytes as records: borrowed where aligned for `T` (mapped GPU
/// memory is), else copied.
pub fn records<T: bytemuck::Pod>(bytes: &[u8]) -> std::borrow::Cow<'_, [T]> {
    match bytemuck::try_cast_slice(bytes) {
        Ok(r) => std::borrow::Cow::Borrowed(r),
        Err(_) => std::borrow::Cow::Owned(bytemuck::pod_collect_to_vec(bytes)),
    }
}

/// Reads a whole buffer as a vector of `T`.
pub async fn read_vec<T: bytemuck::Pod>(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    src: &wgpu::Buffer,
) -> Result<Vec<T>> {
    let bytes = read_buffers(device, queue, &[src]).await?;
    Ok(bytemuck::pod_collect_to_vec(&bytes[0]))
}

/// A zeroed storage buffer of `size` bytes that copies go to and from.
pub fn empty_storage_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A storage buffer initialised from `data`.
pub fn storage_buffer<T: bytemuck::Pod>(
    device: &wgpu::Device,
    label: &str,
    data: &[T],
) -> wgpu::Buffer {
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytemuck::cast_slice(data),
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
    })
}

/// `storage_buffer`, written through the queue in the browser: there a
/// buffer mapped at creation is first copied into the module by wgpu (an
/// N-sized `Uint8Array::to_vec`, 8 of the 10 s of a 2^22-particle first
/// frame in Chrome's engine, 2026-11-28), while `writeBuffer` reads the
/// module's memory in place. Natively, mapped at creation (no copy).
pub fn storage_buffer_written<T: bytemuck::Pod>(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    data: &[T],
) -> wgpu::Buffer {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    if !cfg!(target_arch = "wasm32") || bytes.is_empty() {
        return storage_buffer(device, label, data);
    }
    let buffer = empty_storage_buffer(device, label, bytes.len() as u64);
    queue.write_buffer(&buffer, 0, bytes);
    buffer
}

/// A piece of a mapped range that one thread writes: wgpu's `WriteOnly`
/// of a slice is not `Send` (its impl asks for a sized target).
struct Disjoint<'a>(wgpu::WriteOnly<'a, [u8]>);

// SAFETY: the pieces are disjoint ranges (`split_at`) of mappings that
// outlive the copy; each is written by one thread, once.
unsafe impl Send for Disjoint<'_> {}

/// Bytes one core copies into a mapped range at a time.
const COPY_PIECE: usize = 4 << 20;

/// Writes each `src` into its `dst` (as long; disjoint pieces of mapped
/// ranges), on every core natively, `COPY_PIECE` bytes at a time: one core
/// fills host-visible staging at a fraction of the memory's bandwidth.
pub fn copy_to_mapped(pairs: Vec<(wgpu::WriteOnly<'_, [u8]>, &[u8])>) {
    let mut copies = Vec::new();
    for (mut dst, src) in pairs {
        for s in src.chunks(COPY_PIECE) {
            let (d, more) = dst.split_at(s.len());
            copies.push((Disjoint(d), s));
            dst = more;
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        copies
            .into_par_iter()
            .for_each(|(mut dst, src)| dst.0.copy_from_slice(src));
    }
    #[cfg(target_arch = "wasm32")]
    for (mut dst, src) in copies {
        dst.0.copy_from_slice(src);
    }
}

/// Bytes uploaded at a time by `storage_buffer_in_pieces`.
const UPLOAD_PIECE_BYTES: usize = 64 << 20;

/// `storage_buffer`, natively uploaded a piece at a time through two
/// staging buffers that take turns (one is filled while the other's copy
/// runs): a large upload takes two pieces of host memory beside `data`, not
/// a second copy of it, and allocates nothing per piece. In the browser,
/// whose queue cannot be waited on, one `storage_buffer_written`.
pub fn storage_buffer_in_pieces<T: bytemuck::Pod>(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    data: &[T],
) -> Result<wgpu::Buffer> {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    if cfg!(target_arch = "wasm32") || bytes.len() <= UPLOAD_PIECE_BYTES {
        return Ok(storage_buffer_written(device, queue, label, data));
    }
    let buffer = empty_storage_buffer(device, label, bytes.len() as u64);
    let staging: Vec<wgpu::Buffer> = (0..2)
        .map(|_| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("upload staging"),
                size: UPLOAD_PIECE_BYTES as u64,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        })
        .collect();
    let failed = |e: String| Error::Readback(format!("uploading {label}: {e}"));
    let mut copies: [Option<wgpu::SubmissionIndex>; 2] = [None, None];
    for (k, piece) in bytes.chunks(UPLOAD_PIECE_BYTES).enumerate() {
        let (stage, len) = (&staging[k % 2], piece.len() as u64);
        // Mapped once its last copy is done (the poll completes the map).
        let (tx, mut rx) = futures_channel::oneshot::channel();
        stage.map_async(wgpu::MapMode::Write, ..len, move |r| {
            let _ = tx.send(r);
        });
        device
            .poll(wgpu::PollType::Wait {
                submission_index: copies[k % 2].take(),
                timeout: None,
            })
            .map_err(|e| failed(e.to_string()))?;
        match rx.try_recv() {
            Ok(Some(Ok(()))) => {}
            Ok(Some(Err(e))) => return Err(failed(e.to_string())),
            _ => return Err(failed("the staging buffer was not mapped".into())),
        }
        let mut mapped = stage
            .get_mapped_range_mut(..len)
            .map_err(|e| failed(e.to_string()))?;
        copy_to_mapped(vec![(mapped.slice(..), piece)]);
        drop(mapped);
        stage.unmap();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("upload copy"),
        });
        encoder.copy_buffer_to_buffer(stage, 0, &buffer, (k * UPLOAD_PIECE_BYTES) as u64, len);
        copies[k % 2] = Some(queue.submit(Some(encoder.finish())));
    }
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| failed(e.to_string()))?;
    Ok(buffer)
}

/// A uniform buffer initialised from `value`.
pub fn uniform_buffer<T: bytemuck::Pod>(
    device: &wgpu::Device,
    label: &str,
    value: &T,
) -> wgpu::Buffer {
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytemuck::bytes_of(value),
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    })
}

/// Reads elements `first..first + count` of a buffer of `T` (one copy, one
/// map), e.g. the results of the first `count` sinks of a larger buffer.
pub async fn read_range<T: bytemuck::Pod>(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    src: &wgpu::Buffer,
    first: u64,
    count: u64,
) -> Result<Vec<T>> {
    let stride = std::mem::size_of::<T>() as u64;
    if count == 0 {
        return Ok(Vec::new());
    }
    let size = count * stride;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read-back staging (range)"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("read-back copy (range)"),
    });
    encoder.copy_buffer_to_buffer(src, first * stride, &staging, 0, size);
    queue.submit(Some(encoder.finish()));
    map_and_collect(device, &staging, size, None, Wait::Block).await
}

/// How a native read-back waits for the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The driver's blocking wait (the thread sleeps until the GPU is done).
    Block,
    /// Polls the device in a loop until the map completes, keeping a CPU
    /// core busy (as CUDA's default synchronisation does): no sleep and
    /// wake-up between the GPU finishing and the host going on, which a
    /// GRAPE-style client pays once per block step. Natively only; in the
    /// browser the event loop completes the map either way.
    Spin,
}

/// The first `size` bytes of a MAP_READ buffer whose copy has been
/// submitted, as `T`s; the buffer is unmapped again (natively this waits
/// for the GPU, in the browser the event loop completes the map).
/// Maps the first `size` bytes of `buffer` once the submission `after`
/// (`None`: all submitted work) has run, and copies them out.
async fn map_and_collect<T: bytemuck::Pod>(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    size: u64,
    after: Option<wgpu::SubmissionIndex>,
    wait: Wait,
) -> Result<Vec<T>> {
    let (tx, mut rx) = futures_channel::oneshot::channel();
    buffer.map_async(wgpu::MapMode::Read, ..size, move |r| {
        let _ = tx.send(r);
    });
    let dropped = || Error::Readback("map callback dropped".into());
    let mapped = if wait == Wait::Spin && cfg!(not(target_arch = "wasm32")) {
        loop {
            device
                .poll(wgpu::PollType::Poll)
                .map_err(|e| Error::Readback(e.to_string()))?;
            if let Some(r) = rx.try_recv().map_err(|_| dropped())? {
                break r;
            }
            std::hint::spin_loop();
        }
    } else {
        device
            .poll(wgpu::PollType::Wait {
                submission_index: after,
                timeout: None,
            })
            .map_err(|e| Error::Readback(e.to_string()))?;
        rx.await.map_err(|_| dropped())?
    };
    mapped.map_err(|e| Error::Readback(e.to_string()))?;
    let out = bytemuck::pod_collect_to_vec(
        &buffer
            .get_mapped_range(..size)
            .map_err(|e| Error::Readback(e.to_string()))?,
    );
    buffer.unmap();
    Ok(out)
}

/// A buffer the GPU copies results into and the host maps, kept for the
/// life of its user: a read-back per evaluation (a Hermite block step)
/// then costs no allocation and no submission of its own, only the copy
/// recorded with the work (`record_copy`) and the map (`read`).
pub struct Readback {
    buffer: wgpu::Buffer,
}

impl Readback {
    pub fn new(device: &wgpu::Device, label: &str, bytes: u64) -> Self {
        Self {
            buffer: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(4),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        }
    }

    /// Records the copy of the first `bytes` of `src`.
    pub fn record_copy(&self, encoder: &mut wgpu::CommandEncoder, src: &wgpu::Buffer, bytes: u64) {
        encoder.copy_buffer_to_buffer(src, 0, &self.buffer, 0, bytes);
    }

    /// The first `count` elements, once the submission that copied them
    /// (`after`; `None`: all submitted work) has run. Waiting for that
    /// submission only lets later ones run on while the host reads.
    pub async fn read<T: bytemuck::Pod>(
        &self,
        device: &wgpu::Device,
        count: u64,
        after: Option<wgpu::SubmissionIndex>,
        wait: Wait,
    ) -> Result<Vec<T>> {
        let size = count * std::mem::size_of::<T>() as u64;
        if size == 0 {
            return Ok(Vec::new());
        }
        map_and_collect(device, &self.buffer, size, after, wait).await
    }
}
