//! CSV snapshots, `id,x,y,z,vx,vy,vz,m` (one particle per line, N-body
//! units), and the force table `id,x,y,z,m,ax,ay,az,pot`. Floats are written
//! in Rust's shortest round-trip form, so write→read is exact.

use super::{bad, checked, Snapshot};
use crate::error::Result;
use crate::gpu::layout::{AccPot, PosMass, Velocity};
use crate::state::Particles;
use std::fmt::Write;

pub const SNAPSHOT_HEADER: &str = "id,x,y,z,vx,vy,vz,m";
pub const FORCES_HEADER: &str = "id,x,y,z,m,ax,ay,az,pot";

/// Encodes a snapshot (the time goes into a leading `# time = t` comment).
pub fn encode(snap: &Snapshot) -> Vec<u8> {
    let p = &snap.particles;
    let mut s = format!("# time = {}\n{SNAPSHOT_HEADER}\n", snap.time);
    for k in 0..p.len() {
        let (x, v) = (p.pos_mass[k].pos, p.vel[k].vel);
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{}",
            p.id[k], x[0], x[1], x[2], v[0], v[1], v[2], p.pos_mass[k].mass
        );
    }
    s.into_bytes()
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

/// Parses a CSV snapshot; `name` appears in error messages. Blank lines and
/// `#` comments are skipped; a `# time = t` comment sets the time.
pub fn decode(bytes: &[u8], name: &str) -> Result<Snapshot> {
    let text = std::str::from_utf8(bytes).map_err(|e| bad(name, format!("not UTF-8 text: {e}")))?;
    let mut time = 0.0;
    let mut header_seen = false;
    let mut p = Particles::default();
    for (lineno, line) in text.lines().enumerate().map(|(k, l)| (k + 1, l.trim())) {
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(t) = comment.trim().strip_prefix("time =") {
                time = t
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| bad(name, format!("line {lineno}: bad time '{}'", t.trim())))?;
            }
            continue;
        }
        if !header_seen {
            let cols: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            if cols != SNAPSHOT_HEADER {
                return Err(bad(
                    name,
                    format!(
                        "line {lineno}: expected the header '{SNAPSHOT_HEADER}', found '{line}'"
                    ),
                ));
            }
            header_seen = true;
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 8 {
            return Err(bad(
                name,
                format!("line {lineno}: {} fields, expected 8", fields.len()),
            ));
        }
        let id = fields[0]
            .parse::<u64>()
            .map_err(|_| bad(name, format!("line {lineno}: bad id '{}'", fields[0])))?;
        let mut v = [0f32; 7];
        for (k, f) in fields[1..].iter().enumerate() {
            v[k] = f.parse::<f32>().map_err(|_| {
                bad(
                    name,
                    format!("line {lineno}: bad number '{f}' in column {}", k + 2),
                )
            })?;
        }
        p.pos_mass.push(PosMass {
            pos: [v[0], v[1], v[2]],
            mass: v[6],
        });
        p.vel.push(Velocity::new([v[3], v[4], v[5]]));
        p.id.push(id);
    }
    if !header_seen {
        return Err(bad(name, format!("no header line '{SNAPSHOT_HEADER}'")));
    }
    if !time.is_finite() {
        return Err(bad(name, format!("non-finite time {time}")));
    }
    checked(
        Snapshot {
            time,
            particles: p,
            ..Default::default()
        },
        name,
    )
}
