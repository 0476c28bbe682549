//! Snapshot files on disk (native only): reads bounded by what the file
//! announces, outputs checked before any work, and atomic writes that keep
//! a file's mode, write through symbolic links and leave nothing behind
//! when they fail or the process is interrupted.

use super::progress::{Progress, Reading, Writing};
use super::write_behind::WriteBehind;
use super::{gadget, io_error, iord, tipsy, FileShare, Format, Snapshot};
use crate::error::{Error, Result};
use crate::state::share::RankShare;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most bytes read from a text snapshot whose size the file system does
/// not tell (a pipe, a device): 4 GiB, a CSV of some 40 million particles,
/// rather than "read until memory runs out".
const MAX_STREAM_TEXT_BYTES: u64 = 1 << 32;

/// Reads a snapshot file, the format chosen by its extension or, without
/// a known one, by its content (Bonsai's and Gadget's files often carry
/// none). A standard Tipsy file takes its ids from a `.iord` side file
/// where there is one, and a Tipsy file the kinds its format cannot record
/// from a `.webgrav_kind` side file; a Gadget-2 snapshot of several files is read whole
/// from any of them (`snap_000.0`, `snap_000.1`, …, or `snap_000` for
/// the set).
pub fn read_file(path: &str) -> Result<Snapshot> {
    match process_parts(path) {
        Some(parts) => read_parts(&parts),
        None => read_one_file(path),
    }
}

/// The per-process parts that `path` begins, as Bonsai names them and a
/// run on several ranks writes them (`snap_TTTTT.TTTT-0`, `-1`, …): when
/// `path` ends in `-0` and a `-1` lies beside it, every part from `-0` up
/// to the first number missing.
pub fn process_parts(path: &str) -> Option<Vec<String>> {
    let stem = path.strip_suffix("-0")?;
    let part = |k: usize| format!("{stem}-{k}");
    if !Path::new(&part(1)).is_file() {
        return None;
    }
    Some(
        (0..)
            .map(part)
            .take_while(|p| Path::new(p).is_file())
            .collect(),
    )
}

/// The parts read as one snapshot: their particles in order, at the time
/// they all share.
fn read_parts(parts: &[String]) -> Result<Snapshot> {
    let rest = parts[1..].iter().map(|p| (read_one_file(p), p.as_str()));
    read_one_file(&parts[0])?.join_parts(&parts[0], rest)
}

/// One file of a snapshot, never joined with its siblings (`read_file`
/// reads `snap_…-0` with `-1`, `-2`, …): what a rank of a parallel run
/// reads of the parts it is dealt.
pub fn read_one_file(path: &str) -> Result<Snapshot> {
    let path = first_of_stem(path);
    let path = path.as_str();
    let head = first_bytes(path)?;
    let format = Format::identify(path, &head)?;
    if format == Format::Gadget {
        return gadget::decode_files(&gadget_files(path)?);
    }
    if let Format::Hdf5(_) = format {
        return read_hdf5(path);
    }
    let mut snap = match format.tipsy_flavor() {
        Some(_) => read_tipsy(path)?,
        None => format.decode(&read_bounded(path, format)?, path)?,
    };
    if format.tipsy_flavor().is_some() {
        read_side_files(path, &mut snap, tipsy::flavor_of(&head))?;
    }
    Ok(snap)
}

/// `path`, or where nothing is there but `path.0` is, that file:
/// `snap_000` standing for the files `snap_000.0`, `snap_000.1`, …
fn first_of_stem(path: &str) -> String {
    let first = format!("{path}.0");
    match !Path::new(path).exists() && Path::new(&first).is_file() {
        true => first,
        false => path.to_string(),
    }
}

/// Bytes of a Gadget-2 file's start that hold its header (markers, the
/// 256-byte header, and the label record of format 2).
const GADGET_HEAD: u64 = 4 + 256 + 4 + 16;

/// One process's share of the snapshot file `path` (particles
/// `share.of(n)`, read from where their records start: a Tipsy file,
/// `tipsy::decode_share`, a Gadget-2 snapshot of one file or several,
/// `gadget::decode_share`, which `path` is any of or, as `snap_000`, the
/// stem of, or an HDF5 snapshot, `hdf5::read_share`; a CSV file's rows in
/// the share's part of its bytes, `csv::decode_share`, placed once every
/// share is counted, `FileShare::place`), or `None` where a share cannot
/// be read of it: not a regular file, HDF5 without the library, a CSV
/// file that `csv::decode_share` leaves whole; then one process reads it
/// whole. A Tipsy file's side files (ids and
/// kinds as lines of text) are read as far as the share's end
/// (`iord::apply_range`). `fits(count)` checks, before any record is
/// read, that the share's particles fit.
pub fn read_share(
    path: &str,
    share: RankShare,
    fits: impl FnOnce(usize) -> Result<()>,
) -> Result<Option<FileShare>> {
    let path = first_of_stem(path);
    let path = path.as_str();
    let io = |e| io_error(path, e);
    let meta = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => meta,
        _ => return Ok(None),
    };
    let head = first_bytes(path)?;
    let format = Format::identify(path, &head)?;
    if format == Format::Gadget {
        let head = read_capped(path, GADGET_HEAD)?;
        let names = match gadget::decode_num_files(&head) {
            Some(k) if k > 1 => gadget_file_names(path, k)?,
            _ => vec![path.to_string()],
        };
        let open = |name: &str| -> Result<(std::fs::File, u64)> {
            let failed = |e| io_error(name, e);
            let file = std::fs::File::open(name).map_err(failed)?;
            let len = file.metadata().map_err(failed)?.len();
            Ok((file, len))
        };
        return gadget::decode_share(&names, open, share, fits).map(Some);
    }
    if let Format::Hdf5(_) = format {
        #[cfg(feature = "hdf5")]
        return super::hdf5::read_share(path, share, fits).map(Some);
        // (Without the library the whole read says why it cannot.)
        #[cfg(not(feature = "hdf5"))]
        return Ok(None);
    }
    if format == Format::Csv {
        let file = std::fs::File::open(path).map_err(io)?;
        return super::csv::decode_share(file, meta.len(), path, share, fits);
    }
    if format.tipsy_flavor().is_none() {
        return Ok(None);
    }
    let records_at = |offset, count| -> Result<ReadAhead> {
        fits(count)?;
        let mut file = std::fs::File::open(path).map_err(io)?;
        file.seek(std::io::SeekFrom::Start(offset)).map_err(io)?;
        Ok(ReadAhead::new(file))
    };
    let mut read = tipsy::decode_share(&head, meta.len(), path, share, records_at)?;
    let open = |side: String| -> Result<Option<std::io::BufReader<std::fs::File>>> {
        match side_file(path, &side)? {
            true => {
                let file = std::fs::File::open(&side).map_err(|e| io_error(&side, e))?;
                Ok(Some(std::io::BufReader::with_capacity(1 << 20, file)))
            }
            false => Ok(None),
        }
    };
    let (ids, kinds) = (open(iord::side_path(path))?, open(iord::kinds_path(path))?);
    let typed = kinds.is_some();
    let flavor = tipsy::flavor_of(&head);
    let range = share.of(read.n);
    iord::apply_range(&mut read.snap, (flavor, path, read.n), range, ids, kinds)?;
    read.typed |= typed;
    Ok(Some(read))
}

/// Whether the side file `side` of `path` is there. One that is there but
/// no plain file (a directory, a link to a device) is refused: read past,
/// its ids or kinds would be lost without a word.
fn side_file(path: &str, side: &str) -> Result<bool> {
    match std::fs::metadata(side) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(m) => Err(Error::InvalidParameter(format!(
            "'{side}' (the side file of {path}) is {}, not a file: move it away to read \
             {path} without it",
            kind_of_file(&m)
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error(side, e)),
    }
}

/// An HDF5 file, read by name by the HDF5 library (a pipe or a device is
/// refused: the library seeks).
#[cfg(feature = "hdf5")]
fn read_hdf5(path: &str) -> Result<Snapshot> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    if !meta.is_file() {
        return Err(Error::BadSnapshot {
            path: path.to_string(),
            problem: "an HDF5 snapshot must be a regular file (not a pipe or a device)".into(),
        });
    }
    super::hdf5::read_path(path)
}

#[cfg(not(feature = "hdf5"))]
fn read_hdf5(path: &str) -> Result<Snapshot> {
    Format::Hdf5(super::hdf5::Layout::Gadget4).decode(&[], path)
}

/// A Tipsy file: a regular file streamed through a buffer (its size is
/// checked against its header first), anything else (a pipe, a device)
/// read whole as far as its header announces.
fn read_tipsy(path: &str) -> Result<Snapshot> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if !meta.is_file() {
        return Format::Tipsy.decode(&read_bounded(path, Format::Tipsy)?, path);
    }
    let reader = Reading {
        inner: ReadAhead::new(file),
        progress: Progress::new(format!("reading {path}"), meta.len()),
    };
    tipsy::decode_from(reader, meta.len(), path)
}

/// Takes a Tipsy file's ids (standard flavour) and kinds from its side
/// files where they exist. The kinds must agree with what the file itself
/// records of each particle (`tipsy::recorded_kind`): a side file left
/// from another snapshot is refused, not applied.
fn read_side_files(path: &str, snap: &mut Snapshot, flavor: tipsy::Flavor) -> Result<()> {
    let n = snap.particles.len() as u64;
    let read = |side: String, cap: u64| -> Result<Option<Vec<u8>>> {
        match side_file(path, &side)? {
            true => read_capped(&side, cap).map(Some),
            false => Ok(None),
        }
    };
    // A count line and n ids of at most 20 digits; n one-digit kinds
    // (with CRLF line ends).
    let ids = read(iord::side_path(path), 32 + 21 * n)?;
    let kinds = read(iord::kinds_path(path), 32 + 3 * n)?;
    iord::apply(snap, flavor, path, ids.as_deref(), kinds.as_deref())
}

/// The first 32 bytes of a file (fewer if it is shorter).
fn first_bytes(path: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    if file.metadata().map_err(|e| io_error(path, e))?.is_dir() {
        return Err(Error::InvalidParameter(format!("'{path}' is a directory")));
    }
    let mut head = Vec::new();
    file.take(32)
        .read_to_end(&mut head)
        .map_err(|e| io_error(path, e))?;
    Ok(head)
}

/// The files of a Gadget-2 snapshot, `path` among them, with their bytes:
/// `NAME.k` for k = 0 … num_files − 1 where the header asks for several.
fn gadget_files(path: &str) -> Result<Vec<(String, Vec<u8>)>> {
    // A file's size follows from its header's counts: 40 bytes per
    // particle at most (positions, velocities, 64-bit ids, masses) and the
    // framing; a device or pipe is not read beyond that.
    let read = |p: &str| -> Result<Vec<u8>> {
        let head = read_capped(p, GADGET_HEAD)?;
        let counts: u64 = gadget::decode_counts(&head).unwrap_or(0);
        read_capped(p, 4096 + 40 * counts)
    };
    let first = read(path)?;
    let (h, _, _) = gadget::decode_file(&first, path)?;
    if h.num_files <= 1 {
        return Ok(vec![(path.to_string(), first)]);
    }
    gadget_file_names(path, h.num_files)?
        .into_iter()
        .map(|p| {
            let bytes = read(&p)?;
            Ok((p, bytes))
        })
        .collect()
}

/// The most files of one Gadget-2 snapshot webgrav reads.
const MAX_GADGET_FILES: u32 = 1 << 20;

/// The names of the `num_files` files of the Gadget-2 snapshot that
/// `path` (`NAME.k`) is one of: `NAME.0` … `NAME.(num_files − 1)`.
fn gadget_file_names(path: &str, num_files: u32) -> Result<Vec<String>> {
    // (Gadget-2 writes at most one file per process; a damaged header's
    // count is refused before its names are made.)
    if num_files > MAX_GADGET_FILES {
        return Err(Error::BadSnapshot {
            path: path.to_string(),
            problem: format!(
                "its header says the snapshot has {num_files} files (at most \
                 {MAX_GADGET_FILES} are read)"
            ),
        });
    }
    let stem = path
        .rsplit_once('.')
        .filter(|(_, k)| k.parse::<u32>().is_ok())
        .map(|(s, _)| s)
        .ok_or_else(|| Error::BadSnapshot {
            path: path.to_string(),
            problem: format!("one of {num_files} files, but its name does not end in .NUMBER"),
        })?;
    Ok((0..num_files).map(|k| format!("{stem}.{k}")).collect())
}

fn read_capped(path: &str, cap: u64) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut bytes = Vec::new();
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, e))?;
    Ok(bytes)
}

/// The bytes of a snapshot, never more than its header announces (plus one
/// byte, so the decoder sees a file that is too long): a device or a pipe
/// cannot make the reader consume memory without bound.
fn read_bounded(path: &str, format: Format) -> Result<Vec<u8>> {
    let mut file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if meta.is_dir() {
        return Err(Error::InvalidParameter(format!("'{path}' is a directory")));
    }
    match format {
        Format::Tipsy | Format::TipsyBonsai => {
            let mut head = Vec::new();
            (&mut file)
                .take(32)
                .read_to_end(&mut head)
                .map_err(|e| io_error(path, e))?;
            let rest = tipsy::announced_len(&head).map_or(0, |len| len + 1 - head.len() as u64);
            file.take(rest)
                .read_to_end(&mut head)
                .map_err(|e| io_error(path, e))?;
            Ok(head)
        }
        Format::Gadget => unreachable!("read by gadget_files"),
        Format::Hdf5(_) => unreachable!("read by read_hdf5"),
        Format::Csv => {
            // A regular file's size, plus one byte: reaching it means the
            // file grew while being read.
            let cap = if meta.is_file() {
                meta.len() + 1
            } else {
                MAX_STREAM_TEXT_BYTES
            };
            // In chunks, so a binary stream (a NUL byte is never text) is
            // refused at once instead of read to the cap.
            let mut bytes = Vec::new();
            let mut chunk = vec![0u8; 1 << 20];
            loop {
                let k = file.read(&mut chunk).map_err(|e| io_error(path, e))?;
                if k == 0 {
                    break;
                }
                if chunk[..k].contains(&0) {
                    return Err(Error::BadSnapshot {
                        path: path.to_string(),
                        problem: "not a text file (it holds NUL bytes)".into(),
                    });
                }
                bytes.extend_from_slice(&chunk[..k]);
                if bytes.len() as u64 >= cap {
                    return Err(Error::BadSnapshot {
                        path: path.to_string(),
                        problem: format!("more than {cap} bytes; not read further"),
                    });
                }
            }
            Ok(bytes)
        }
    }
}

/// Checks, before any work, that `path` can be written as an output:
/// a file name (not a directory) in an existing, writable directory, and
/// not one of `inputs` (which the command still needs, and which a failed
/// run must not destroy).
pub fn check_output(path: &str, inputs: &[&str]) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidParameter(format!("output '{path}': {m}")));
    let target = resolve(path)?;
    if target.is_dir() {
        return bad("is a directory".into());
    }
    let dir = parent(&target);
    if !dir.is_dir() {
        return bad(format!("directory '{}' does not exist", dir.display()));
    }
    for input in inputs {
        let same = match (target.canonicalize(), Path::new(input).canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            return bad(format!("is the input file '{input}'; choose another name"));
        }
    }
    // Writable: create (and remove) a file there, as the write will.
    let probe = temporary(&target, "probe");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => bad(format!("cannot write in '{}': {e}", dir.display())),
    }
}

/// What a snapshot write produced besides the file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    /// The side file holding the ids (standard Tipsy with ids other than
    /// 0..N-1).
    pub side_file: Option<String>,
    /// The side file holding the kinds the format cannot record.
    pub kinds_file: Option<String>,
    /// (kind, particles, what the format records them as) for each kind
    /// the format has no place for.
    pub unrecorded: Vec<(u8, usize, u8)>,
}

impl Written {
    /// What a user should be told about the write, one line each: where
    /// the ids and kinds went that the format itself does not hold.
    pub fn notes(&self, path: &str) -> Vec<String> {
        let ids = self.side_file.as_ref().map(|side| {
            format!("wrote the particle ids to {side} (standard Tipsy has no id field)")
        });
        ids.into_iter().chain(self.kinds_note(path)).collect()
    }

    /// Which kinds the format has no place for and where they went.
    pub fn kinds_note(&self, path: &str) -> Option<String> {
        let side = self.kinds_file.as_ref()?;
        if self.unrecorded.is_empty() {
            return None;
        }
        Some(format!(
            "{path}'s format has no kind for {}: their kinds are in {side}, which webgrav \
             and pynbody read with it",
            tipsy::describe_unrecorded(&self.unrecorded)
        ))
    }
}

/// Writes a snapshot file atomically, the format chosen by its extension
/// (see `write_file_as`).
pub fn write_file(path: &str, snap: &Snapshot) -> Result<Written> {
    write_file_as(path, Format::from_path(path)?, snap)
}

/// Writes a snapshot file atomically in `format` (names without an
/// extension, as Bonsai's, included), particles in the order given, ids
/// and kinds kept: standard Tipsy has no id field, so ids other than
/// 0..N-1 go to the `.iord` side file; kinds a Tipsy flavour has no record
/// or id range for go to the `.webgrav_kind` side file. A side file of an
/// earlier write is brought up to date (or removed) rather than left to
/// contradict this one. Ids the format cannot hold are refused before
/// anything is written.
pub fn write_file_as(path: &str, format: Format, snap: &Snapshot) -> Result<Written> {
    let p = &snap.particles;
    format.check(&p.id, snap.types.as_deref())?;
    #[cfg(feature = "hdf5")]
    if let Format::Hdf5(layout) = format {
        write_atomic_path(path, |tmp| super::hdf5::write_path(tmp, snap, layout))?;
        return Ok(Written::default());
    }
    // What the file takes, near enough for the progress bar: Tipsy's and
    // Gadget's records are 36 to 48 bytes, CSV rows about 100.
    let per_particle = if format == Format::Csv { 100 } else { 40 };
    write_atomic_with(path, per_particle * p.len() as u64, |w| {
        format.write_to(snap, w)
    })?;
    let mut written = Written::default();
    let Some(flavor) = format.tipsy_flavor() else {
        return Ok(written);
    };
    // Side files list the particles in the order of the file's records.
    let order = || tipsy::record_order(snap, flavor);
    if flavor == tipsy::Flavor::Standard {
        let ids: Vec<u64> = order().map(|k| snap.particles.id[k]).collect();
        let side = iord::side_path(path);
        if !iord::is_identity(&ids) || Path::new(&side).exists() {
            write_atomic(&side, &iord::encode(&ids))?;
            written.side_file = Some(side);
        }
    }
    let side = iord::kinds_path(path);
    let kinds: Option<Vec<u8>> = snap
        .types
        .as_ref()
        .filter(|t| t.len() == p.len())
        .map(|t| order().map(|k| t[k]).collect());
    match kinds {
        Some(kinds) => {
            written.unrecorded = tipsy::unrecorded(snap, flavor);
            if !written.unrecorded.is_empty() || Path::new(&side).exists() {
                write_atomic(&side, &iord::encode(&kinds))?;
                written.kinds_file = Some(side);
            }
        }
        None if Path::new(&side).exists() => {
            std::fs::remove_file(&side).map_err(|e| io_error(&side, e))?
        }
        None => {}
    }
    Ok(written)
}

/// Temporary files being written, removed by `remove_pending_temporaries`
/// when the process is interrupted.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Held by each atomic write from its temporary's creation to its rename.
static WRITING: Mutex<()> = Mutex::new(());

/// The process's write lock (`WRITING`), even if a holder panicked.
pub(super) fn write_lock() -> std::sync::MutexGuard<'static, ()> {
    match WRITING.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// For a process about to exit on a signal: waits (at most `patience`)
/// for the atomic write under way to finish, and holds back every write
/// after it while the returned guard lives, so that the exit lands
/// between writes (the old file or the new one, never neither).
pub fn hold_writes(patience: std::time::Duration) -> Option<std::sync::MutexGuard<'static, ()>> {
    let until = std::time::Instant::now() + patience;
    loop {
        match WRITING.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::sync::TryLockError::WouldBlock) => return None,
        }
    }
}

/// Removes the temporary files of writes under way (for a signal handler:
/// an interrupted write leaves neither a partial file nor its temporary).
pub fn remove_pending_temporaries() {
    let pending = match PENDING.lock() {
        Ok(p) => p,
        Err(p) => p.into_inner(),
    };
    for tmp in pending.iter() {
        let _ = std::fs::remove_file(tmp);
    }
}

pub(super) fn pending(tmp: &Path, add: bool) {
    let mut list = match PENDING.lock() {
        Ok(p) => p,
        Err(p) => p.into_inner(),
    };
    if add {
        list.push(tmp.to_path_buf());
    } else {
        list.retain(|p| p != tmp);
    }
}

/// The file a write to `path` lands in: `path`, or where its symbolic
/// links lead (a write replaces the target's content, not the link).
pub(super) fn resolve(path: &str) -> Result<PathBuf> {
    let p = Path::new(path);
    if p.file_name().is_none() {
        return Err(Error::InvalidParameter(format!(
            "'{path}' is not a file name"
        )));
    }
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_symlink() => p.canonicalize().map_err(|e| {
            // /dev/stdout into a pipe leads to "pipe:[…]", no path at all.
            match std::fs::metadata(p) {
                Ok(m) => Error::InvalidParameter(format!(
                    "'{path}' leads to {}, not a file (outputs are files; a run's log \
                     lines go to stdout anyway)",
                    kind_of_file(&m)
                )),
                Err(_) => Error::InvalidParameter(format!(
                    "'{path}' is a symbolic link that leads nowhere: {e}"
                )),
            }
        }),
        _ => Ok(p.to_path_buf()),
    }
}

/// What a path that is no regular file is, for a message.
fn kind_of_file(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            return "a pipe";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if m.is_dir() {
        "a directory"
    } else {
        "something that is not a plain file"
    }
}

fn parent(target: &Path) -> PathBuf {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn temporary(target: &Path, what: &str) -> PathBuf {
    temporary_named(target, what, std::process::id().into())
}

/// The temporary beside `target` of process `pid`'s write.
pub(super) fn temporary_named(target: &Path, what: &str, pid: u64) -> PathBuf {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    parent(target).join(format!(".{name}.{what}-{pid}"))
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, then renames
/// it over `path`: readers see the old file or the whole new one. An
/// existing file keeps its permissions; a symbolic link keeps pointing at
/// its target, whose content is replaced.
pub fn write_atomic(path: &str, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, bytes.len() as u64, |w| w.write_all(bytes))
}

/// `write_atomic` of the bytes that `write` produces, streamed through a
/// buffer into the temporary file (a file of any size without a copy of
/// it in memory), with a progress bar for the `total` bytes expected.
pub fn write_atomic_with(
    path: &str,
    total: u64,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut file = AtomicFile::create(path, total)?;
    write(&mut file).map_err(|e| io_error(path, e))?;
    file.commit()
}

/// `write_atomic` of a file that `write` creates by name (the HDF5
/// library's files): written at the temporary's path, synced, then renamed
/// over `path`, with the same guarantees.
pub fn write_atomic_path(path: &str, write: impl FnOnce(&str) -> Result<()>) -> Result<()> {
    let file = AtomicFile::create(path, 0)?;
    let tmp = file.tmp.to_str().map(str::to_string).ok_or_else(|| {
        Error::InvalidParameter(format!("'{path}': its directory's path is not UTF-8"))
    })?;
    // The library creates the file anew (the empty one made here is
    // replaced); what it writes reaches the disk at the commit's sync.
    write(&tmp)?;
    file.commit()
}

/// An atomic write whose bytes come in their own time (from the GPU, say,
/// across awaits): `create`, write, then `commit` renames the synced
/// temporary over the path; dropped without a commit, the temporary is
/// removed and the path left as it was. Bytes reach the disk while they
/// are still being written (`WriteBehind`). Every atomic write holds the
/// process's write lock (`hold_writes`) from creation to commit.
pub struct AtomicFile {
    path: String,
    target: PathBuf,
    tmp: PathBuf,
    permissions: Option<std::fs::Permissions>,
    writing: Option<Writing<WriteBehind>>,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl AtomicFile {
    /// Starts the write of `path`, with a progress bar for `total` bytes.
    pub fn create(path: &str, total: u64) -> Result<Self> {
        let target = resolve(path)?;
        let tmp = temporary(&target, "tmp");
        let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
        let lock = write_lock();
        pending(&tmp, true);
        let file = std::fs::File::create(&tmp).map_err(|e| {
            pending(&tmp, false);
            io_error(path, e)
        })?;
        Ok(Self {
            path: path.to_string(),
            target,
            tmp,
            permissions,
            writing: Some(Writing {
                inner: WriteBehind::new(file),
                progress: Progress::new(format!("writing {path}"), total),
            }),
            _lock: lock,
        })
    }

    /// Syncs the bytes written and renames the file into place.
    pub fn commit(mut self) -> Result<()> {
        let writing = self.writing.take().expect("committed once");
        let result = (|| {
            let f = writing.inner.finish()?;
            if let Some(p) = &self.permissions {
                f.set_permissions(p.clone())?;
            }
            f.sync_all()?;
            std::fs::rename(&self.tmp, &self.target)
        })();
        result.map_err(|e| io_error(&self.path, e))
        // Dropped here: the temporary is gone (renamed, or removed).
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.writing {
            Some(w) => w.write(buf),
            None => Err(std::io::Error::other("written after its commit")),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Not committed, or its commit failed: no temporary is left. (After
        // a rename there is nothing at `tmp` to remove.)
        drop(self.writing.take());
        let _ = std::fs::remove_file(&self.tmp);
        pending(&self.tmp, false);
    }
}

/// A file read ahead on a thread of its own, a block at a time, while its
/// reader parses the blocks before: the disk does not wait for the parsing.
/// The kernel is told the file is read in order (a larger read-ahead of
/// its own) and asked for the blocks after the one being read, so the
/// disk has several requests in hand; blocks the reader is done with are
/// filled again rather than allocated.
pub struct ReadAhead {
    blocks: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    spare: std::sync::mpsc::SyncSender<Vec<u8>>,
    block: Vec<u8>,
    at: usize,
}

/// Blocks read ahead of the reader, and their size.
const AHEAD_BLOCKS: usize = 4;
const AHEAD_BLOCK_BYTES: usize = 8 << 20;

impl ReadAhead {
    pub fn new(mut file: std::fs::File) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD_BLOCKS);
        let (spare, spares) = std::sync::mpsc::sync_channel::<Vec<u8>>(AHEAD_BLOCKS + 2);
        advise_sequential(&file);
        std::thread::spawn(move || {
            // Where the file was opened or moved to.
            let mut offset = file.stream_position().unwrap_or(0);
            loop {
                let mut block = spares.try_recv().unwrap_or_default();
                block.resize(AHEAD_BLOCK_BYTES, 0);
                will_need(
                    &file,
                    offset + AHEAD_BLOCK_BYTES as u64,
                    (AHEAD_BLOCKS * AHEAD_BLOCK_BYTES) as u64,
                );
                let read = read_full(&mut file, &mut block).map(|k| {
                    block.truncate(k);
                    block
                });
                let end = !matches!(&read, Ok(b) if !b.is_empty());
                if let Ok(b) = &read {
                    offset += b.len() as u64;
                }
                // A reader that stopped early has dropped the receiver.
                if tx.send(read).is_err() || end {
                    return;
                }
            }
        });
        Self {
            blocks: rx,
            spare,
            block: Vec::new(),
            at: 0,
        }
    }
}

/// Reads until `buf` is full or the file ends: the bytes read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut k = 0;
    while k < buf.len() {
        match file.read(&mut buf[k..]) {
            Ok(0) => break,
            Ok(m) => k += m,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(k)
}

/// Tells the kernel the file is read from start to end.
#[cfg(target_os = "linux")]
fn advise_sequential(file: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: advice on an open descriptor; ignoring it is always sound.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
    }
}

/// Asks the kernel to start reading `len` bytes at `offset`.
#[cfg(target_os = "linux")]
fn will_need(file: &std::fs::File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: as above.
    unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_WILLNEED,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_sequential(_: &std::fs::File) {}

#[cfg(not(target_os = "linux"))]
fn will_need(_: &std::fs::File, _: u64, _: u64) {}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.block.len() {
            match self.blocks.recv() {
                Ok(block) => {
                    let done = std::mem::replace(&mut self.block, block?);
                    let _ = self.spare.try_send(done);
                    self.at = 0;
                }
                // The thread ended after the end of the file.
                Err(_) => return Ok(0),
            }
        }
        let k = buf.len().min(self.block.len() - self.at);
        buf[..k].copy_from_slice(&self.block[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // What a signal handler does: the temporary files of writes under way
    // are removed, others are left alone.
    #[test]
    fn pending_temporaries_are_removed() {
        let dir = std::env::temp_dir().join(format!("webgrav-pending-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join(".x.tmp-1");
        let other = dir.join("keep");
        std::fs::write(&tmp, b"partial").unwrap();
        std::fs::write(&other, b"keep").unwrap();
        pending(&tmp, true);
        remove_pending_temporaries();
        pending(&tmp, false);
        assert!(!tmp.exists() && other.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // What a signal handler does before it exits: no write starts while
    // it holds the writes, and one under way would finish first.
    #[test]
    fn held_writes_wait() {
        let dir = std::env::temp_dir().join(format!("webgrav-held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x");
        let held = hold_writes(std::time::Duration::from_secs(5)).expect("no write under way");
        let p = path.to_str().unwrap().to_string();
        let writer = std::thread::spawn(move || write_atomic(&p, b"x"));
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!path.exists());
        drop(held);
        writer.join().unwrap().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
