//! CSV snapshots, one particle per line in N-body units, with the header
//! `id,x,y,z,vx,vy,vz,m,t` (`t`, the snapshot's time, repeated on every
//! row), so pandas.read_csv, Python's csv.DictReader and numpy.genfromtxt
//! (names=True) read the file with no options; and the force table
//! `id,x,y,z,m,ax,ay,az,pot`. Floats are written in Rust's shortest
//! round-trip form, so write→read is exact. The reader takes what such
//! tools write: columns in any order (`id` and `t` optional), a UTF-8 BOM,
//! CRLF line ends, RFC 4180 quoted fields, and the `# time = t` comment of
//! older webgrav files.

use super::{bad, checked, read_error, Counted, FileShare, Snapshot};
use crate::error::Result;
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::state::share::RankShare;
use crate::state::Particles;
use std::borrow::Cow;
use std::fmt::Write;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;

pub const SNAPSHOT_HEADER: &str = "id,x,y,z,vx,vy,vz,m,t";
pub const FORCES_HEADER: &str = "id,x,y,z,m,ax,ay,az,pot";
/// The columns a snapshot must have (`id` and `t` may be left out).
const REQUIRED: [&str; 7] = ["x", "y", "z", "vx", "vy", "vz", "m"];

/// Encodes a snapshot.
pub fn encode(snap: &Snapshot) -> Vec<u8> {
    let mut out = Vec::new();
    write_to(snap, &mut out).expect("writing to memory");
    out
}

/// The bytes of `encode` into `out`, some thousands of rows at a time.
pub fn write_to(snap: &Snapshot, out: &mut (impl std::io::Write + ?Sized)) -> std::io::Result<()> {
    let p = &snap.particles;
    write_rows(snap, out, |s, k| {
        let (x, v) = (p.pos_mass[k].pos, p.vel[k].vel);
        let m = p.pos_mass[k].mass;
        write!(
            s,
            "{},{},{},{},{},{},{m}",
            x[0], x[1], x[2], v[0], v[1], v[2]
        )
    })
}

/// Encodes a state held in f64 (a Hermite integrator's: mass, position,
/// velocity per particle, input order) with the ids, time and kinds of
/// `snap`, at full precision: the shortest text that reads back to the
/// same f64, so nothing is rounded to f32 on the way to the file.
/// webgrav's own reader takes f32; an f64 reader (pandas, numpy) gets
/// every bit.
pub fn encode_f64(snap: &Snapshot, state: &[(f64, [f64; 3], [f64; 3])]) -> Vec<u8> {
    let mut out = Vec::new();
    write_f64_to(snap, state, &mut out).expect("writing to memory");
    out
}

/// The bytes of `encode_f64` into `out`, some thousands of rows at a time.
pub fn write_f64_to(
    snap: &Snapshot,
    state: &[(f64, [f64; 3], [f64; 3])],
    out: &mut (impl std::io::Write + ?Sized),
) -> std::io::Result<()> {
    write_rows(snap, out, |s, k| {
        let (m, x, v) = &state[k];
        write!(
            s,
            "{},{},{},{},{},{},{m}",
            x[0], x[1], x[2], v[0], v[1], v[2]
        )
    })
}

/// Rows formatted by one core at a time, and pieces (of rows written, of
/// text read) handled together before they go on in order: some MB,
/// whatever the N, so a write streams.
const PIECE_ROWS: usize = 1 << 11;
/// (In the browser the pieces go one at a time, on its one core.)
const PIECES_AT_ONCE: usize = if cfg!(target_arch = "wasm32") { 1 } else { 32 };

/// The header and one row per particle of `snap` into `out`: its id, the
/// fields `fields` writes (x … m), the time, and its kind in a `type`
/// column (Gadget's numbering) where the particles have kinds. Rows are
/// formatted on every core, a piece each, and written in order.
fn write_rows(
    snap: &Snapshot,
    out: &mut (impl std::io::Write + ?Sized),
    fields: impl Fn(&mut String, usize) -> std::fmt::Result + Sync + Send,
) -> std::io::Result<()> {
    let p = &snap.particles;
    let t = snap.time;
    let types = snap.types.as_ref().filter(|ty| ty.len() == p.len());
    match types {
        Some(_) => writeln!(out, "{SNAPSHOT_HEADER},type")?,
        None => writeln!(out, "{SNAPSHOT_HEADER}")?,
    }
    let piece = |k: usize| {
        let mut s = String::new();
        for k in k * PIECE_ROWS..((k + 1) * PIECE_ROWS).min(p.len()) {
            // Writing to a String cannot fail.
            let _ = write!(s, "{},", p.id[k]);
            let _ = fields(&mut s, k);
            let _ = write!(s, ",{t}");
            if let Some(ty) = types {
                let _ = write!(s, ",{}", ty[k]);
            }
            s.push('\n');
        }
        s
    };
    let pieces = p.len().div_ceil(PIECE_ROWS);
    for first in (0..pieces).step_by(PIECES_AT_ONCE) {
        let count = PIECES_AT_ONCE.min(pieces - first);
        for text in crate::state::parallel::map_indices(count, |k| piece(first + k)) {
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

/// Encodes accelerations and potentials next to positions and masses.
pub fn encode_forces(ids: &[u64], pos_mass: &[PosMass], acc_pot: &[AccPot]) -> Vec<u8> {
    let mut s = format!("{FORCES_HEADER}\n");
    for ((id, p), a) in ids.iter().zip(pos_mass).zip(acc_pot) {
        let _ = writeln!(
            s,
            "{id},{},{},{},{},{},{},{},{}",
            p.pos[0], p.pos[1], p.pos[2], p.mass, a.acc[0], a.acc[1], a.acc[2], a.pot
        );
    }
    s.into_bytes()
}

/// Where a snapshot's columns are: `id` and `t` if present, the required
/// ones in `REQUIRED` order, and how many columns a row has.
#[derive(Clone, Copy)]
struct Columns {
    id: Option<usize>,
    t: Option<usize>,
    kind: Option<usize>,
    required: [usize; 7],
    width: usize,
}

/// Whether `head` (a file's first bytes) looks like a CSV snapshot: text
/// whose first non-comment line names the x column.
pub fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}');
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| fields(l).iter().any(|f| f.eq_ignore_ascii_case("x")))
}

/// The fields of one CSV record (RFC 4180: a field may be quoted, `""`
/// inside quotes is a quote), trimmed. A line without quotes (every row
/// webgrav and pandas write) is split in place.
fn fields(line: &str) -> Vec<Cow<'_, str>> {
    if !line.contains('"') {
        return line.split(',').map(|f| Cow::Borrowed(f.trim())).collect();
    }
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(Cow::Owned(std::mem::take(&mut field).trim().to_string())),
            c => field.push(c),
        }
    }
    out.push(Cow::Owned(field.trim().to_string()));
    out
}

/// The time of an old-style `# time = t` (or `# time=t`) comment.
fn comment_time(comment: &str) -> Option<&str> {
    let c = comment.trim();
    let rest = c.strip_prefix("time")?.trim_start();
    Some(
        rest.strip_prefix('=')
            .or_else(|| rest.strip_prefix(':'))?
            .trim(),
    )
}

/// Parses a CSV snapshot; `name` appears in error messages. Blank lines and
/// `#` comments are skipped.
pub fn decode(bytes: &[u8], name: &str) -> Result<Snapshot> {
    let mut rows = Rows::default();
    // The lines up to the header in turn, then the rows on every core.
    let (header_end, lines) = read_head(&mut std::io::Cursor::new(bytes), name, &mut rows)?;
    let rest = &bytes[header_end as usize..];
    let at_line = |(line, problem): (usize, String)| bad(name, format!("line {line}: {problem}"));
    if rows.read_lines(rest, lines + 1).map_err(at_line)? == Lines::TimeAmongRows {
        // Rows are checked against a time said among them: in turn.
        return decode_in_turn(bytes.strip_prefix(BOM).unwrap_or(bytes), name);
    }
    checked(rows.into_snapshot(name)?, name)
}

/// `decode` a line at a time, on one core (`bytes` without a BOM).
fn decode_in_turn(bytes: &[u8], name: &str) -> Result<Snapshot> {
    let mut rows = Rows::default();
    for (k, line) in bytes.split(|&b| b == b'\n').enumerate() {
        (rows.read(line)).map_err(|p| bad(name, format!("line {}: {p}", k + 1)))?;
    }
    if rows.columns.is_none() {
        return Err(bad(name, format!("no header line '{SNAPSHOT_HEADER}'")));
    }
    checked(rows.into_snapshot(name)?, name)
}

/// UTF-8's byte order mark, which some tools write at a file's start.
const BOM: &[u8] = "\u{feff}".as_bytes();

/// A CSV snapshot read a line at a time: its columns once its header is
/// read, its time, and the particles of the rows read so far (ids by
/// row count from 0 where the file has no id column).
#[derive(Default)]
struct Rows {
    columns: Option<Columns>,
    time: Option<f64>,
    particles: Particles,
    kinds: Vec<u8>,
}

/// What a line of a CSV snapshot was.
#[derive(Debug, PartialEq)]
enum Line {
    /// Blank, or a comment that says nothing of the snapshot.
    Skipped,
    /// A `# time = t` comment.
    Time,
    Header,
    Row,
}

impl Rows {
    /// Reads `line`; a problem is said without the line's number, which
    /// the caller adds.
    fn read(&mut self, line: &[u8]) -> std::result::Result<Line, String> {
        let line = std::str::from_utf8(line).map_err(|_| "not UTF-8 text".to_string())?;
        let line = line.trim();
        if line.is_empty() {
            return Ok(Line::Skipped);
        }
        if let Some(comment) = line.strip_prefix('#') {
            let Some(t) = comment_time(comment) else {
                return Ok(Line::Skipped);
            };
            self.time = Some(t.parse::<f64>().map_err(|_| format!("bad time '{t}'"))?);
            return Ok(Line::Time);
        }
        let f = fields(line);
        let Some(columns) = self.columns else {
            self.columns = Some(header(&f, line)?);
            return Ok(Line::Header);
        };
        self.row(&f, columns)?;
        Ok(Line::Row)
    }

    /// One particle's row.
    fn row(&mut self, f: &[Cow<'_, str>], columns: Columns) -> std::result::Result<(), String> {
        let width = columns.width;
        if f.len() != width {
            return Err(format!("{} fields, expected {width}", f.len()));
        }
        let id = match columns.id {
            Some(c) => f[c]
                .parse::<u64>()
                .map_err(|_| format!("bad id '{}'", f[c]))?,
            None => self.particles.id.len() as u64,
        };
        let mut v = [0f32; 7];
        for (k, &c) in columns.required.iter().enumerate() {
            v[k] = f[c]
                .parse::<f32>()
                .map_err(|_| format!("bad number '{}' in column {}", f[c], c + 1))?;
        }
        if let Some(c) = columns.t {
            let t = f[c]
                .parse::<f64>()
                .map_err(|_| format!("bad time '{}'", f[c]))?;
            self.take_time(t)?;
        }
        if let Some(c) = columns.kind {
            let kind = (f[c].parse::<u8>().ok())
                .filter(|&k| k <= 5)
                .ok_or_else(|| format!("bad type '{}' (0 to 5)", f[c]))?;
            self.kinds.push(kind);
        }
        let p = &mut self.particles;
        p.pos_mass.push(PosMass {
            pos: [v[0], v[1], v[2]],
            mass: v[6],
        });
        p.vel.push(Velocity::new([v[3], v[4], v[5]]));
        p.id.push(id);
        Ok(())
    }

    /// Reads `text`, whole lines after the header (the first of them line
    /// `first_line` of the file), a piece at a time on every core, as
    /// `read` reads them in turn. The file's first problem, by its line
    /// (`Err`); `TimeAmongRows` where a `# time` comment is among them, the
    /// rows before it read (the rows after it are checked against it,
    /// which only a read in turn does).
    fn read_lines(
        &mut self,
        text: &[u8],
        first_line: usize,
    ) -> std::result::Result<Lines, (usize, String)> {
        self.read_pieces(text, first_line, PIECE_BYTES)
    }

    /// `read_lines` in pieces of about `piece_bytes`.
    fn read_pieces(
        &mut self,
        text: &[u8],
        first_line: usize,
        piece_bytes: usize,
    ) -> std::result::Result<Lines, (usize, String)> {
        let columns = self.columns.expect("lines after the header");
        let pieces = pieces_of(text, piece_bytes);
        let mut line = first_line;
        // A batch of pieces at a time: their rows are held twice until joined.
        let read = pieces.chunks(PIECES_AT_ONCE).flat_map(|batch| {
            crate::state::parallel::map_indices(batch.len(), |k| Piece::read(batch[k], columns))
        });
        for piece in read {
            let rows = piece.rows;
            if let Some((first, Some(t))) = piece.first_row {
                self.take_time(t)
                    .map_err(|problem| (line + first, problem))?;
            }
            if let Some((k, problem)) = piece.problem {
                return Err((line + k, problem));
            }
            self.append(rows);
            if piece.time_comment {
                return Ok(Lines::TimeAmongRows);
            }
            line += piece.lines;
        }
        Ok(Lines::Read)
    }

    /// Appends the rows of a piece read after these (ids by row follow).
    fn append(&mut self, mut rows: Rows) {
        let before = self.particles.len() as u64;
        if self.columns.is_some_and(|c| c.id.is_none()) {
            rows.particles.id.iter_mut().for_each(|id| *id += before);
        }
        let (p, q) = (&mut self.particles, rows.particles);
        p.pos_mass.extend_from_slice(&q.pos_mass);
        p.vel.extend_from_slice(&q.vel);
        p.id.extend_from_slice(&q.id);
        self.kinds.extend_from_slice(&rows.kinds);
    }

    /// The time `t` of a row: the snapshot's, unless rows before it gave
    /// another.
    fn take_time(&mut self, t: f64) -> std::result::Result<(), String> {
        match self.time {
            Some(t0) if t0 != t && !self.particles.is_empty() => {
                Err(format!("time {t} differs from the earlier rows' {t0}"))
            }
            _ => {
                self.time = Some(t);
                Ok(())
            }
        }
    }

    /// The snapshot of the rows read (their values not yet checked).
    fn into_snapshot(self, name: &str) -> Result<Snapshot> {
        let time = self.time.unwrap_or(0.0);
        if !time.is_finite() {
            return Err(bad(name, format!("non-finite time {time}")));
        }
        let types = self.columns.and_then(|c| c.kind).map(|_| self.kinds);
        Ok(Snapshot {
            time,
            particles: self.particles,
            types,
            ..Default::default()
        })
    }
}

/// How `Rows::read_lines` ended.
#[derive(Debug, PartialEq)]
enum Lines {
    Read,
    TimeAmongRows,
}

/// Bytes of rows one core reads at a time (a piece ends at a line's end).
const PIECE_BYTES: usize = 1 << 20;

/// `text` cut at the first line end after every `piece_bytes`.
fn pieces_of(text: &[u8], piece_bytes: usize) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = match rest.get(piece_bytes..) {
            None => rest.len(),
            Some(after) => after
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |k| piece_bytes + k + 1),
        };
        let (piece, after) = rest.split_at(cut);
        pieces.push(piece);
        rest = after;
    }
    pieces
}

/// The rows of one piece of text, read on its own.
struct Piece {
    /// Its rows (their time: the first row's, which the others matched).
    rows: Rows,
    /// The lines it holds (its line ends).
    lines: usize,
    /// The line of its first row, counted from 0 in the piece, and the
    /// time that row gave.
    first_row: Option<(usize, Option<f64>)>,
    /// Its first problem, at a line counted from 0 in the piece: the
    /// piece is read no further.
    problem: Option<(usize, String)>,
    /// Whether a `# time` comment ended it.
    time_comment: bool,
}

impl Piece {
    fn read(text: &[u8], columns: Columns) -> Self {
        let mut piece = Piece {
            rows: Rows {
                columns: Some(columns),
                ..Default::default()
            },
            lines: text.iter().filter(|&&b| b == b'\n').count(),
            first_row: None,
            problem: None,
            time_comment: false,
        };
        let lines = text.strip_suffix(b"\n").unwrap_or(text);
        for (k, line) in lines.split(|&b| b == b'\n').enumerate() {
            match piece.rows.read(line) {
                Ok(Line::Row) => {
                    piece.first_row.get_or_insert((k, piece.rows.time));
                }
                Ok(Line::Time) => {
                    piece.time_comment = true;
                    break;
                }
                Ok(_) => {}
                Err(problem) => {
                    // A row that failed after its time was read: that time
                    // is checked first, as a read in turn checks it.
                    if piece.first_row.is_none() && piece.rows.time.is_some() {
                        piece.first_row = Some((k, piece.rows.time));
                    }
                    piece.problem = Some((k, problem));
                    break;
                }
            }
        }
        piece
    }
}

/// The columns a header line names.
fn header(f: &[Cow<'_, str>], line: &str) -> std::result::Result<Columns, String> {
    let names: Vec<String> = f.iter().map(|c| c.to_ascii_lowercase()).collect();
    let find = |c: &str| names.iter().position(|n| n == c);
    let required: Option<Vec<usize>> = REQUIRED.iter().map(|c| find(c)).collect();
    let Some(required) = required else {
        return Err(format!(
            "expected the header '{SNAPSHOT_HEADER}' (columns in any order; id and t \
             optional), found '{line}'"
        ));
    };
    let mut cols = [0; 7];
    cols.copy_from_slice(&required);
    Ok(Columns {
        id: find("id"),
        t: find("t").or_else(|| find("time")),
        kind: find("type"),
        required: cols,
        width: names.len(),
    })
}

/// One process's share of a CSV snapshot `file` of `len` bytes: the rows
/// whose lines start in its equal part of the bytes after the header
/// (`share`'s part of them, moved on to the next line's start), read
/// without the others. Every share reads the lines up to the header for
/// the columns and a `# time` comment before them. A share knows only
/// its own rows: the rows before it (where ids are row numbers) and the
/// file's count come from every share's (`FileShare::place`).
/// `fits(lines)` checks, before any row is parsed, that the share's
/// lines fit as particles. A problem is named by its line (or particle)
/// in the whole file, as the whole read names it, by the share that holds
/// it. `None` where the whole read is the one to do it: a share of no
/// rows (more shares than rows), or a `# time` comment among the rows
/// (which only the rows before it can be checked against).
pub fn decode_share<F: Read + Seek>(
    mut file: F,
    len: u64,
    name: &str,
    share: RankShare,
    fits: impl FnOnce(usize) -> Result<()>,
) -> Result<Option<FileShare>> {
    let io = |e| read_error(name, e);
    let mut rows = Rows::default();
    let (header_end, _) = read_head(&mut file, name, &mut rows)?;
    // Bytes no text holds are refused above the header too, as the whole
    // read refuses them.
    count_newlines(&mut file, 0..header_end, name)?;
    let rows_len = len.saturating_sub(header_end) as u128;
    let edge = |r: usize| header_end + (rows_len * r as u128 / share.ranks as u128) as u64;
    let start = line_start(&mut file, edge(share.rank), header_end, name)?;
    let end = match share.rank + 1 == share.ranks {
        true => len,
        false => line_start(&mut file, edge(share.rank + 1), header_end, name)?,
    };
    let lines = count_newlines(&mut file, start..end, name)?;
    fits(lines)?;
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    // Blocks of whole lines, each read on every core.
    let mut source = (&mut file).take(end - start);
    let (mut block, mut line) = (Vec::new(), 1);
    loop {
        let got = (source.by_ref().take(SHARE_BLOCK as u64))
            .read_to_end(&mut block)
            .map_err(io)?;
        let at_end = got < SHARE_BLOCK;
        let cut = match at_end {
            true => block.len(),
            false => block.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1),
        };
        let text = &block[..cut];
        match rows.read_lines(text, line) {
            Ok(Lines::TimeAmongRows) => return Ok(None),
            Ok(Lines::Read) => line += text.iter().filter(|&&b| b == b'\n').count(),
            Err((at, problem)) => {
                let before = count_newlines(&mut file, 0..start, name)?;
                return Err(bad(name, format!("line {}: {problem}", before + at)));
            }
        }
        block.drain(..cut);
        if at_end {
            break;
        }
    }
    let count = rows.particles.len();
    if count == 0 {
        return Ok(None);
    }
    let ids_by_row = rows.columns.is_some_and(|c| c.id.is_none());
    let typed = rows.columns.is_some_and(|c| c.kind.is_some());
    let snap = rows.into_snapshot(name)?;
    if let Err(problem) = snap.particles.check_values(0) {
        // Named by its index in the file, as the whole read names it.
        let first = count_rows(&mut file, header_end..start, name)?;
        let problem = (snap.particles.check_values(first)).map_or_else(|p| p, |_| problem);
        return Err(bad(name, problem));
    }
    Ok(Some(FileShare {
        snap,
        n: count,
        typed,
        counted: Some(Counted { ids_by_row }),
    }))
}

/// Reads `file`'s lines as far as its header into `rows` (its columns, a
/// `# time` comment before them); where the header's line ends, and the
/// lines up to it.
fn read_head<F: Read + Seek>(file: &mut F, name: &str, rows: &mut Rows) -> Result<(u64, usize)> {
    file.seek(SeekFrom::Start(0))
        .map_err(|e| read_error(name, e))?;
    let mut source = BufReader::new(file);
    let (mut line, mut at, mut lineno) = (Vec::new(), 0u64, 0);
    loop {
        line.clear();
        let k = (source.read_until(b'\n', &mut line)).map_err(|e| read_error(name, e))?;
        if k == 0 {
            return Err(bad(name, format!("no header line '{SNAPSHOT_HEADER}'")));
        }
        lineno += 1;
        let mut text = line.strip_suffix(b"\n").unwrap_or(&line);
        if at == 0 {
            text = text.strip_prefix(BOM).unwrap_or(text);
        }
        at += k as u64;
        let read = rows.read(text);
        match read.map_err(|p| bad(name, format!("line {lineno}: {p}")))? {
            Line::Header => return Ok((at, lineno)),
            _ => continue,
        }
    }
}

/// The first line start at or after `at` that is past the header (which
/// ends at `header_end`), or the file's end.
fn line_start<F: Read + Seek>(file: &mut F, at: u64, header_end: u64, name: &str) -> Result<u64> {
    if at <= header_end {
        return Ok(header_end);
    }
    let io = |e| read_error(name, e);
    // A line starts at `at` where the byte before it ends one.
    file.seek(SeekFrom::Start(at - 1)).map_err(io)?;
    let mut source = BufReader::new(file);
    let mut skipped = Vec::new();
    let k = source.read_until(b'\n', &mut skipped).map_err(io)?;
    Ok(at - 1 + k as u64)
}

/// The bytes `range` of `file`.
fn bytes_of<'f, F: Read + Seek>(
    file: &'f mut F,
    range: Range<u64>,
    name: &str,
) -> Result<std::io::Take<&'f mut F>> {
    (file.seek(SeekFrom::Start(range.start))).map_err(|e| read_error(name, e))?;
    Ok(file.take(range.end - range.start))
}

/// Bytes of a share read and parsed at a time.
const SHARE_BLOCK: usize = 64 << 20;

/// The lines of `range` in `file` (a last one without its line end
/// counted too), refusing bytes no text holds (NUL), as the whole read
/// does.
fn count_newlines<F: Read + Seek>(file: &mut F, range: Range<u64>, name: &str) -> Result<usize> {
    let io = |e| read_error(name, e);
    let mut source = bytes_of(file, range, name)?;
    let mut block = vec![0u8; 8 << 20];
    let (mut lines, mut last) = (0, b'\n');
    loop {
        let k = source.read(&mut block).map_err(io)?;
        if k == 0 {
            return Ok(lines + (last != b'\n') as usize);
        }
        if block[..k].contains(&0) {
            return Err(bad(name, "not a text file (it holds NUL bytes)"));
        }
        lines += block[..k].iter().filter(|&&b| b == b'\n').count();
        last = block[k - 1];
    }
}

/// The rows in `range` of `file`: lines neither blank nor comments.
fn count_rows<F: Read + Seek>(file: &mut F, range: Range<u64>, name: &str) -> Result<usize> {
    let source = BufReader::with_capacity(1 << 20, bytes_of(file, range, name)?);
    let mut rows = 0;
    for line in source.split(b'\n') {
        let line = line.map_err(|e| read_error(name, e))?;
        // As `Rows::read` tells them (a line no text is counted: it is a bad row).
        let row = std::str::from_utf8(&line).map_or(true, |l| {
            let l = l.trim();
            !(l.is_empty() || l.starts_with('#'))
        });
        rows += row as usize;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows read in pieces on every core are the rows read in turn: the
    /// same particles, ids by row, kinds and time, and the same first
    /// problem named at the same line, wherever the pieces are cut.
    #[test]
    fn rows_read_in_pieces_are_rows_read_in_turn() {
        let mut text = String::from("# time = 0.5\nx,y,z,vx,vy,vz,m,t,type\n");
        for k in 0..600 {
            text += &format!("{k},{},0.5,1,2,3,0.01,0.5,{}\n", k as f32 * 0.25, k % 3);
            if k % 50 == 7 {
                text += "\n# a comment\n";
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        let with_line = |k: usize, line: &str| {
            let mut l = lines.clone();
            l[k] = line;
            l.join("\n") + "\n"
        };
        let cases = [
            text.clone(),
            text.replace(",0.5,", ","),
            with_line(300, "1,2,3,4,5,6,0.01,0.75,1"),
            with_line(2, "1,2,3,4,5,6,0.01,0.75,1"),
            with_line(400, "1,2,3,4,5,x,0.01,0.5,1"),
            with_line(401, "1,2,3"),
            with_line(402, "1,2,3,4,5,6,0.01,0.5,9"),
            with_line(403, "1,2,3,4,5,6,-1,0.5,1"),
            with_line(404, "# time = 0.5"),
            with_line(405, "# time = 0.25"),
            // Another time and a bad type: the time is the first problem.
            with_line(300, "1,2,3,4,5,6,0.01,0.75,9"),
        ];
        for (c, case) in cases.iter().enumerate() {
            let bytes = case.as_bytes();
            let in_turn = decode_in_turn(bytes, "f.csv");
            // Every case but the first and the time said again is refused.
            assert_eq!(
                in_turn.is_err(),
                !matches!(c, 0 | 8),
                "case {c}: {in_turn:?}"
            );
            let header_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
            let header_end = header_end
                + bytes[header_end..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap()
                + 1;
            for piece_bytes in [1, 17, 100, 1 << 20] {
                let mut rows = Rows::default();
                for line in case.lines().take(2) {
                    rows.read(line.as_bytes()).unwrap();
                }
                let read = rows.read_pieces(&bytes[header_end..], 3, piece_bytes);
                let pieces = match read {
                    Ok(Lines::Read) => checked(rows.into_snapshot("f.csv").unwrap(), "f.csv"),
                    Ok(Lines::TimeAmongRows) => {
                        // Left to the read in turn.
                        assert!(case[header_end..].contains("# time"), "case {c}");
                        continue;
                    }
                    Err((line, p)) => Err(bad("f.csv", format!("line {line}: {p}"))),
                };
                assert_eq!(
                    format!("{pieces:?}"),
                    format!("{in_turn:?}"),
                    "case {c}, pieces of {piece_bytes} bytes"
                );
            }
        }
    }
}
