//! `webgrav analyze`: the galactic-dynamics read-outs of `app::analysis`
//! for a snapshot (JSON lines, profiles as CSV) or for a series written by
//! `webgrav run --snap-every` (one JSON line per snapshot and component,
//! with the bar's pattern speed between consecutive snapshots and the
//! black holes' separation).

use super::{check_distinct_outputs, check_typed_output, emit, parse_kind, say};
use crate::app::analysis::{self, BarMode, Frame, FRACTIONS};
use crate::app::readout::lagrangian_radii;
use crate::app::series::read_index;
use crate::error::{Error, Result};
use crate::snapshot::{self, Snapshot};
use crate::state::Particles;
use clap::Args;
use std::borrow::Cow;

#[derive(Args)]
pub struct AnalyzeArgs {
    /// Snapshot to analyse (any format `webgrav run --in` reads).
    #[arg(required_unless_present = "series", conflicts_with = "series")]
    snapshot: Option<String>,
    /// Analyse the series in this directory (its index.json, as `webgrav
    /// run --snap-every` writes it) instead: one line per snapshot and
    /// component, with the pattern speed since the previous snapshot.
    #[arg(long)]
    series: Option<String>,
    /// Analyse only particles of this type: gas, halo, disk, bulge, stars,
    /// boundary (Gadget-2's numbers 0-5 also do) or all; repeat it to
    /// analyse several components, each on its own. Default: all.
    #[arg(long = "component", value_name = "K")]
    components: Vec<String>,
    /// Cylindrical radius within which the m = 2 mode (A2, its phase, the
    /// pattern speed) is measured. Default: the component's half-mass
    /// radius.
    #[arg(long)]
    bar_radius: Option<f64>,
    /// Ids of the two black holes whose separation is reported. Default:
    /// the two heaviest particles, where both are heavier than all others.
    #[arg(long, num_args = 2, value_names = ["ID", "ID"])]
    bh: Option<Vec<u64>>,
    /// Write the spherical profile as CSV: component, r_in, r_out, r, n,
    /// density, enclosed_mass, v_circ (log-spaced shells about the density
    /// centre).
    #[arg(long, conflicts_with = "series")]
    profile_csv: Option<String>,
    /// Write the disk profile as CSV: component, r_in, r_out, n,
    /// surface_density, z_median, z_rms, v_phi, sigma_r, sigma_phi,
    /// sigma_z (rings about the density centre, z along the component's
    /// angular momentum).
    #[arg(long, conflicts_with = "series")]
    disk_csv: Option<String>,
    /// Shells and rings of the profiles (1 to 10,000).
    #[arg(long, default_value_t = 30)]
    bins: usize,
    /// Inner radius of the spherical profile. Default: the radius holding
    /// 1 % of the component's mass.
    #[arg(long)]
    r_min: Option<f64>,
    /// Outer radius of the profiles. Default: the radius holding 99 % of
    /// the component's mass (spheres) and 90 % (rings).
    #[arg(long)]
    r_max: Option<f64>,
}

/// The particles of component `t` in `snap` (read from `path`).
/// The particles of component `t` (all: the snapshot's own, not a copy).
fn component<'a>(
    snap: &'a Snapshot,
    path: &str,
    name: &str,
    t: Option<u8>,
) -> Result<Cow<'a, Particles>> {
    let p = match (t, &snap.types) {
        (None, _) => Cow::Borrowed(&snap.particles),
        (Some(t), Some(types)) => Cow::Owned(analysis::select(&snap.particles, |i| types[i] == t)),
        (Some(_), None) => {
            return Err(Error::InvalidParameter(format!(
                "{path} has no particle types, so --component {name} selects nothing"
            )))
        }
    };
    if p.is_empty() {
        return Err(Error::InvalidParameter(format!(
            "{path} has no particles of component {name}"
        )));
    }
    Ok(p)
}

fn check_positive(name: &str, x: Option<f64>) -> Result<()> {
    match x {
        Some(v) if !(v.is_finite() && v > 0.0) => Err(Error::InvalidParameter(format!(
            "{name} must be > 0, got {v}"
        ))),
        _ => Ok(()),
    }
}

pub fn analyze(a: AnalyzeArgs) -> Result<()> {
    check_positive("--bar-radius", a.bar_radius)?;
    check_positive("--r-min", a.r_min)?;
    check_positive("--r-max", a.r_max)?;
    if let (Some(r_in), Some(r_out)) = (a.r_min, a.r_max) {
        if r_in >= r_out {
            return Err(Error::InvalidParameter(format!(
                "the profile's radii must grow: r_min = {r_in}, r_max = {r_out}"
            )));
        }
    }
    if !(1..=analysis::MAX_PROFILE_BINS).contains(&a.bins) {
        return Err(Error::InvalidParameter(format!(
            "--bins {} is not from 1 to {}: profiles finer than that resolve nothing more \
             (see app::analysis::MAX_PROFILE_BINS)",
            a.bins,
            analysis::MAX_PROFILE_BINS
        )));
    }
    let names = if a.components.is_empty() {
        vec!["all".to_string()]
    } else {
        a.components.clone()
    };
    let components = names
        .iter()
        .map(|k| parse_kind("--component", k))
        .collect::<Result<Vec<_>>>()?;
    match (&a.snapshot, &a.series) {
        (Some(path), _) => one(&a, path, &components),
        (None, Some(dir)) => series(&a, dir, &components),
        (None, None) => unreachable!("clap requires a snapshot or --series"),
    }
}

/// The JSON line of one component of one snapshot.
fn summary(
    a: &AnalyzeArgs,
    bh: Option<(u64, u64)>,
    snap: &Snapshot,
    name: &str,
    p: &Particles,
    f: &Frame,
) -> (serde_json::Value, BarMode) {
    let bar_radius = a.bar_radius.unwrap_or(f.radii[2]);
    let bar = analysis::bar_mode(&f.cyl, bar_radius);
    let radii: serde_json::Map<String, serde_json::Value> = FRACTIONS
        .iter()
        .zip(f.radii)
        .map(|(q, r)| (q.to_string(), r.into()))
        .collect();
    let mass: f64 = p.pos_mass.iter().map(|x| x.mass as f64).sum();
    let mut line = serde_json::json!({
        "time": snap.time,
        "component": name,
        "n": p.len(),
        "mass": mass,
        "center": f.center,
        "lagrangian_radii": radii,
        "half_mass_radius": f.radii[2],
        "bar_radius": bar_radius,
        "a2": bar.a2,
        "bar_phase": bar.phase,
        "bar_angle": bar.angle(),
    });
    if let Some((x, y)) = bh {
        line["bh_ids"] = serde_json::json!([x, y]);
        line["bh_separation"] = analysis::separation(&snap.particles, x, y).into();
    }
    (line, bar)
}

fn one(a: &AnalyzeArgs, path: &str, components: &[(String, Option<u8>)]) -> Result<()> {
    let mut outputs = Vec::new();
    for (flag, out, what) in [
        ("--profile-csv", &a.profile_csv, "the profile"),
        ("--disk-csv", &a.disk_csv, "the disk profile"),
    ] {
        if let Some(out) = out {
            check_typed_output(out, "csv", what, &[path])?;
            outputs.push((flag, out.as_str()));
        }
    }
    check_distinct_outputs(&outputs)?;
    let snap = snapshot::read_file(path)?;
    let mut sphere_csv = String::from("component,r_in,r_out,r,n,density,enclosed_mass,v_circ\n");
    let mut disk_csv = String::from(
        "component,r_in,r_out,n,surface_density,z_median,z_rms,v_phi,sigma_r,sigma_phi,sigma_z\n",
    );
    for (name, t) in components {
        let p = component(&snap, path, name, *t)?;
        let f = Frame::of(&p);
        let bh = black_holes(a, &snap, path)?;
        emit(summary(a, bh, &snap, name, &p, &f).0)?;
        // The profiles only where their CSV is asked for (each a sort or
        // a pass over every particle: seconds at 10^8).
        if a.profile_csv.is_some() {
            // The radii holding 1 % and 99 % of the mass, in one sort.
            let (r_in, r_out) = match (a.r_min, a.r_max) {
                (Some(r_in), Some(r_out)) => (r_in, r_out),
                (r_in, r_out) => {
                    let r = lagrangian_radii(&p.pos_mass, f.center, &[0.01, 0.99]);
                    (r_in.unwrap_or(r[0]), r_out.unwrap_or(r[1]))
                }
            };
            if r_in >= r_out {
                return Err(Error::InvalidParameter(format!(
                    "the profile's radii must grow: r_min = {r_in}, r_max = {r_out}"
                )));
            }
            for s in analysis::spherical_profile(&p.pos_mass, f.center, r_in, r_out, a.bins) {
                sphere_csv += &format!(
                    "{name},{},{},{},{},{},{},{}\n",
                    s.r_in, s.r_out, s.r, s.count, s.density, s.enclosed_mass, s.v_circ
                );
            }
        }
        if a.disk_csv.is_some() {
            let ring_max = a.r_max.unwrap_or(f.radii[4]);
            for r in analysis::disk_profile(&f.cyl, ring_max, a.bins) {
                disk_csv += &format!(
                    "{name},{},{},{},{},{},{},{},{},{},{}\n",
                    r.r_in,
                    r.r_out,
                    r.count,
                    r.surface_density,
                    r.z_median,
                    r.z_rms,
                    r.v_phi,
                    r.sigma_r,
                    r.sigma_phi,
                    r.sigma_z
                );
            }
        }
    }
    for (out, table) in [(&a.profile_csv, sphere_csv), (&a.disk_csv, disk_csv)] {
        if let Some(out) = out {
            snapshot::write_atomic(out, table.as_bytes())?;
            say!("wrote {out}");
        }
    }
    Ok(())
}

/// The black holes' ids: --bh, else the two heaviest particles where
/// they stand out. Ids that `path` does not hold are refused (their
/// separation would be null, and nothing would say why).
fn black_holes(a: &AnalyzeArgs, snap: &Snapshot, path: &str) -> Result<Option<(u64, u64)>> {
    let Some(ids) = &a.bh else {
        return Ok(analysis::two_heaviest(&snap.particles));
    };
    let missing: Vec<String> = ids
        .iter()
        .filter(|id| !snap.particles.id.contains(id))
        .map(|id| id.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Error::InvalidParameter(format!(
            "--bh: {path} has no particle with id {}",
            missing.join(" or ")
        )));
    }
    Ok(Some((ids[0], ids[1])))
}

fn series(a: &AnalyzeArgs, dir: &str, components: &[(String, Option<u8>)]) -> Result<()> {
    let files = read_index(dir)?;
    // The previous snapshot's time and bar mode, per component.
    let mut previous: Vec<Option<(f64, BarMode)>> = vec![None; components.len()];
    let mut bh = None;
    for (path, time) in &files {
        let mut snap = snapshot::read_file(path)?;
        // index.json keeps the time in full precision (some formats round).
        snap.time = *time;
        // The black holes are picked once, in the first snapshot, and
        // followed by id (later masses could tie after a merger).
        if bh.is_none() {
            bh = black_holes(a, &snap, path)?;
        }
        for ((name, t), prev) in components.iter().zip(&mut previous) {
            let p = component(&snap, path, name, *t)?;
            let (mut line, bar) = summary(a, bh, &snap, name, &p, &Frame::of(&p));
            line["file"] = path.as_str().into();
            if let Some((t0, bar0)) = *prev {
                line["pattern_speed"] = analysis::pattern_speed(bar0, t0, bar, *time).into();
            }
            *prev = Some((*time, bar));
            emit(line)?;
        }
    }
    say!("analysed {} snapshots of {dir}", files.len());
    Ok(())
}
