//! CSV snapshots, one particle per line in N-body units, with the header
//! `id,x,y,z,vx,vy,vz,m,t` (`t`, the snapshot's time, repeated on every
//! row), so pandas.read_csv, Python's csv.DictReader and numpy.genfromtxt
//! (names=True) read the file with no options; and the force table
//! `id,x,y,z,m,ax,ay,az,pot`. Floats are written in Rust's shortest
//! round-trip form, so write→read is exact. The reader takes what such
//! tools write: columns in any order (`id` and `t` optional), a UTF-8 BOM,
//! CRLF line ends, RFC 4180 quoted fields, and the `# time = t` comment of
//! older webgrav files.

use super::{bad, checked, Snapshot};
use crate::error::Result;
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::state::Particles;
use std::fmt::Write;

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
/// inside quotes is a quote), trimmed.
fn fields(line: &str) -> Vec<String> {
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
            ',' if !quoted => out.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    out.push(field.trim().to_string());
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
    let text = std::str::from_utf8(bytes).map_err(|e| bad(name, format!("not UTF-8 text: {e}")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut time: Option<f64> = None;
    let mut columns: Option<Columns> = None;
    let mut kinds: Vec<u8> = Vec::new();
    let mut p = Particles::default();
    for (lineno, line) in text.lines().enumerate().map(|(k, l)| (k + 1, l.trim())) {
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(t) = comment_time(comment) {
                let t = t
                    .parse::<f64>()
                    .map_err(|_| bad(name, format!("line {lineno}: bad time '{t}'")))?;
                time = Some(t);
            }
            continue;
        }
        let f = fields(line);
        let Some(Columns {
            id: id_col,
            t: t_col,
            kind: kind_col,
            required: cols,
            width,
        }) = columns
        else {
            let names: Vec<String> = f.iter().map(|c| c.to_ascii_lowercase()).collect();
            let find = |c: &str| names.iter().position(|n| n == c);
            let required: Option<Vec<usize>> = REQUIRED.iter().map(|c| find(c)).collect();
            let Some(required) = required else {
                return Err(bad(
                    name,
                    format!(
                        "line {lineno}: expected the header '{SNAPSHOT_HEADER}' (columns in \
                         any order; id and t optional), found '{line}'"
                    ),
                ));
            };
            let mut cols = [0; 7];
            cols.copy_from_slice(&required);
            columns = Some(Columns {
                id: find("id"),
                t: find("t").or_else(|| find("time")),
                kind: find("type"),
                required: cols,
                width: names.len(),
            });
            continue;
        };
        if f.len() != width {
            return Err(bad(
                name,
                format!("line {lineno}: {} fields, expected {width}", f.len()),
            ));
        }
        let id = match id_col {
            Some(c) => f[c]
                .parse::<u64>()
                .map_err(|_| bad(name, format!("line {lineno}: bad id '{}'", f[c])))?,
            None => p.id.len() as u64,
        };
        let mut v = [0f32; 7];
        for (k, &c) in cols.iter().enumerate() {
            v[k] = f[c].parse::<f32>().map_err(|_| {
                bad(
                    name,
                    format!("line {lineno}: bad number '{}' in column {}", f[c], c + 1),
                )
            })?;
        }
        if let Some(c) = t_col {
            let t = f[c]
                .parse::<f64>()
                .map_err(|_| bad(name, format!("line {lineno}: bad time '{}'", f[c])))?;
            match time {
                Some(t0) if t0 != t && !p.id.is_empty() => {
                    return Err(bad(
                        name,
                        format!("line {lineno}: time {t} differs from the earlier rows' {t0}"),
                    ))
                }
                _ => time = Some(t),
            }
        }
        if let Some(c) = kind_col {
            let kind =
                f[c].parse::<u8>().ok().filter(|&k| k <= 5).ok_or_else(|| {
                    bad(name, format!("line {lineno}: bad type '{}' (0 to 5)", f[c]))
                })?;
            kinds.push(kind);
        }
        p.pos_mass.push(PosMass {
            pos: [v[0], v[1], v[2]],
            mass: v[6],
        });
        p.vel.push(Velocity::new([v[3], v[4], v[5]]));
        p.id.push(id);
    }
    if columns.is_none() {
        return Err(bad(name, format!("no header line '{SNAPSHOT_HEADER}'")));
    }
    let time = time.unwrap_or(0.0);
    if !time.is_finite() {
        return Err(bad(name, format!("non-finite time {time}")));
    }
    let types = columns.and_then(|c| c.kind).map(|_| kinds);
    checked(
        Snapshot {
            time,
            particles: p,
            types,
            ..Default::default()
        },
        name,
    )
}
