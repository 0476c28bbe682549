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

/// Text gathered before it goes to the writer.
const ROWS_BUFFER_BYTES: usize = 1 << 20;

/// The header and one row per particle of `snap` into `out`: its id, the
/// fields `fields` writes (x … m), the time, and its kind in a `type`
/// column (Gadget's numbering) where the particles have kinds.
fn write_rows(
    snap: &Snapshot,
    out: &mut (impl std::io::Write + ?Sized),
    fields: impl Fn(&mut String, usize) -> std::fmt::Result,
) -> std::io::Result<()> {
    let p = &snap.particles;
    let t = snap.time;
    let types = snap.types.as_ref().filter(|ty| ty.len() == p.len());
    let mut s = match types {
        Some(_) => format!("{SNAPSHOT_HEADER},type\n"),
        None => format!("{SNAPSHOT_HEADER}\n"),
    };
    for k in 0..p.len() {
        // Writing to a String cannot fail.
        let _ = write!(s, "{},", p.id[k]);
        let _ = fields(&mut s, k);
        let _ = write!(s, ",{t}");
        if let Some(ty) = types {
            let _ = write!(s, ",{}", ty[k]);
        }
        s.push('\n');
        if s.len() >= ROWS_BUFFER_BYTES {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    out.write_all(s.as_bytes())
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
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let mut rows = Rows::default();
    for (k, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let lineno = k + 1;
        rows.read(line)
            .map_err(|p| bad(name, format!("line {lineno}: {p}")))?;
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
        let p = &mut self.particles;
        let id = match columns.id {
            Some(c) => f[c]
                .parse::<u64>()
                .map_err(|_| format!("bad id '{}'", f[c]))?,
            None => p.id.len() as u64,
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
            match self.time {
                Some(t0) if t0 != t && !p.id.is_empty() => {
                    return Err(format!("time {t} differs from the earlier rows' {t0}"))
                }
                _ => self.time = Some(t),
            }
        }
        if let Some(c) = columns.kind {
            let kind = (f[c].parse::<u8>().ok())
                .filter(|&k| k <= 5)
                .ok_or_else(|| format!("bad type '{}' (0 to 5)", f[c]))?;
            self.kinds.push(kind);
        }
        p.pos_mass.push(PosMass {
            pos: [v[0], v[1], v[2]],
            mass: v[6],
        });
        p.vel.push(Velocity::new([v[3], v[4], v[5]]));
        p.id.push(id);
        Ok(())
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
    let header_end = read_head(&mut file, name, &mut rows)?;
    let edge = |r: usize| (len as u128 * r as u128 / share.ranks as u128) as u64;
    let start = line_start(&mut file, edge(share.rank), header_end, name)?;
    let end = match share.rank + 1 == share.ranks {
        true => len,
        false => line_start(&mut file, edge(share.rank + 1), header_end, name)?,
    };
    let lines = count_lines(&mut file, start..end, name)?;
    fits(lines.newlines + lines.unterminated as usize)?;
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut source = BufReader::with_capacity(1 << 20, (&mut file).take(end - start));
    let mut line = Vec::new();
    let mut lineno = 0;
    loop {
        line.clear();
        if source.read_until(b'\n', &mut line).map_err(io)? == 0 {
            break;
        }
        lineno += 1;
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        match rows.read(text) {
            Ok(Line::Time) => return Ok(None),
            Ok(_) => {}
            Err(problem) => {
                drop(source);
                let before = count_lines(&mut file, 0..start, name)?.newlines;
                return Err(bad(name, format!("line {}: {problem}", before + lineno)));
            }
        }
    }
    drop(source);
    let count = rows.particles.len();
    if count == 0 {
        return Ok(None);
    }
    let ids_by_row = rows.columns.is_some_and(|c| c.id.is_none());
    let typed = rows.columns.is_some_and(|c| c.kind.is_some());
    let snap = rows.into_snapshot(name)?;
    if let Err(problem) = snap.particles.check_values(0) {
        // Named by its index in the file, as the whole read names it.
        let first = count_lines(&mut file, header_end..start, name)?.rows;
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
/// `# time` comment before them); where the header's line ends.
fn read_head<F: Read + Seek>(file: &mut F, name: &str, rows: &mut Rows) -> Result<u64> {
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
            Line::Header => return Ok(at),
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

/// What the bytes `range` of a CSV file hold.
#[derive(Default)]
struct LineCount {
    newlines: usize,
    /// Rows: lines that are neither blank nor comments.
    rows: usize,
    /// Whether the range ends in a line without its newline.
    unterminated: bool,
}

/// Counts the lines of `range` in `file`, refusing bytes no text holds
/// (NUL), as the whole read does.
fn count_lines<F: Read + Seek>(
    file: &mut F,
    range: std::ops::Range<u64>,
    name: &str,
) -> Result<LineCount> {
    let io = |e| read_error(name, e);
    file.seek(SeekFrom::Start(range.start)).map_err(io)?;
    let mut source = BufReader::with_capacity(1 << 20, file.take(range.end - range.start));
    let mut count = LineCount::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        if source.read_until(b'\n', &mut line).map_err(io)? == 0 {
            return Ok(count);
        }
        if line.contains(&0) {
            return Err(bad(name, "not a text file (it holds NUL bytes)"));
        }
        count.unterminated = line.last() != Some(&b'\n');
        count.newlines += !count.unterminated as usize;
        let text = line.trim_ascii();
        count.rows += !(text.is_empty() || text.starts_with(b"#")) as usize;
    }
}
