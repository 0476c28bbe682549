//! HDF5 snapshots in the two layouts of today's simulation codes:
//! GADGET-4's (`Header` attributes, `PartType0…5` groups of
//! `Coordinates`, `Velocities`, `ParticleIDs`, `Masses`, `Potential`,
//! units in `Parameters`) and SWIFT's (the same groups, plus its `Units`,
//! `InternalCodeUnits`, `Cosmology` and `Code` groups, double-precision
//! `Coordinates` and `Potentials`). Particle types follow Gadget's
//! numbering, as webgrav's kinds do (0 gas … 5 boundary). A file's layout
//! is told by its content (SWIFT's `Units` and `Cosmology` groups), never
//! by its name. Values are taken in the file's units (`units` says which
//! they are; `gadget::to_nbody` converts, as for Gadget-2).
//!
//! The checks and the assembly of the particles (`Arrays`) are portable:
//! the page reads the datasets with h5wasm and hands them to the same
//! code. The file access (`read_path`, `read_share` of a parallel run's
//! rank, `write_path`) needs the HDF5 C
//! library (the `hdf5` feature, native only); each dataset is read and
//! written in slabs of `SLAB_ROWS` rows, so a file of any size never needs
//! a second copy of its particles in memory.

use super::{bad, checked, Snapshot};
use crate::error::Result;
use crate::gpu::layout::{PosMass, Velocity};

/// The first bytes of every HDF5 file (at offset 0, where GADGET-4 and
/// SWIFT put the superblock).
pub const MAGIC: [u8; 8] = *b"\x89HDF\r\n\x1a\n";

/// Whether a file starting with `head` is an HDF5 file.
pub fn is_hdf5(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}

/// Which code's layout a file follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Gadget4,
    Swift,
}

impl Layout {
    /// The name `--snap-format` and `convert --to` take.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Gadget4 => "gadget4-hdf5",
            Layout::Swift => "swift-hdf5",
        }
    }

    /// The per-particle potential's dataset.
    pub fn potential(self) -> &'static str {
        match self {
            Layout::Gadget4 => "Potential",
            Layout::Swift => "Potentials",
        }
    }
}

/// Particle types (Gadget's numbering; a file with SWIFT's type 6,
/// neutrinos, is refused).
pub const TYPES: usize = 6;

/// Rows read or written at a time: 2^20 rows of three doubles are 24 MiB.
pub const SLAB_ROWS: usize = 1 << 20;

/// webgrav's units as `gadget::to_nbody` chooses them (Bonsai's): 1 kpc,
/// 2.325e9 M☉, 100 km/s, in cgs; with them G = 1 to 0.1 %.
pub const UNIT_LENGTH_CM: f64 = 3.085678e21;
pub const UNIT_MASS_G: f64 = 2.325e9 * SOLAR_MASS_G;
pub const UNIT_VELOCITY_CM_S: f64 = 1e7;
const SOLAR_MASS_G: f64 = 1.989e33;

/// A file's units as `--units` takes them (kpc, M☉ and km/s per file
/// unit), where they are not webgrav's own.
pub fn units_flag(length_cm: f64, mass_g: f64, velocity_cm_s: f64) -> Option<[f64; 3]> {
    let same = |a: f64, b: f64| ((a - b) / b).abs() < 1e-6;
    if same(length_cm, UNIT_LENGTH_CM)
        && same(mass_g, UNIT_MASS_G)
        && same(velocity_cm_s, UNIT_VELOCITY_CM_S)
    {
        return None;
    }
    Some([
        length_cm / UNIT_LENGTH_CM,
        mass_g / SOLAR_MASS_G,
        velocity_cm_s / 1e5,
    ])
}

/// The particles of a file, type after type, as its datasets hold them
/// (flat: three values a row for positions and velocities); `counts[t]`
/// rows of type t. What the page hands over after reading with h5wasm.
#[derive(Clone, Debug, Default)]
pub struct Arrays {
    pub time: f64,
    pub counts: [usize; TYPES],
    pub ids: Vec<u64>,
    pub pos: Vec<f32>,
    pub vel: Vec<f32>,
    pub mass: Vec<f32>,
    pub potential: Option<Vec<f32>>,
}

impl Arrays {
    /// The snapshot, once every array is checked against the counts and
    /// every value (errors name the dataset and row).
    pub fn into_snapshot(self, name: &str) -> Result<Snapshot> {
        let n: usize = self.counts.iter().sum();
        let want = |what: &str, got: usize, per: usize| -> Result<()> {
            match got == per * n {
                true => Ok(()),
                false => Err(bad(
                    name,
                    format!(
                        "{what}: {} values for {n} particles (types {:?})",
                        got, self.counts
                    ),
                )),
            }
        };
        want("Coordinates", self.pos.len(), 3)?;
        want("Velocities", self.vel.len(), 3)?;
        want("ParticleIDs", self.ids.len(), 1)?;
        want("Masses", self.mass.len(), 1)?;
        if let Some(p) = &self.potential {
            want("Potential", p.len(), 1)?;
        }
        let mut start = 0;
        for (t, &k) in self.counts.iter().enumerate() {
            let rows = start..start + k;
            let g = group(t);
            let (x, v) = (3 * rows.start..3 * rows.end, 3 * rows.start..3 * rows.end);
            check_values(name, &g, "Coordinates", 0, &self.pos[x], 3)?;
            check_values(name, &g, "Velocities", 0, &self.vel[v], 3)?;
            check_masses(name, &g, 0, &self.mass[rows.clone()])?;
            if let Some(p) = &self.potential {
                check_values(name, &g, "Potential", 0, &p[rows.clone()], 1)?;
            }
            start += k;
        }
        let particles = crate::state::Particles {
            pos_mass: (0..n)
                .map(|k| PosMass {
                    pos: [self.pos[3 * k], self.pos[3 * k + 1], self.pos[3 * k + 2]],
                    mass: self.mass[k],
                })
                .collect(),
            vel: (0..n)
                .map(|k| Velocity::new([self.vel[3 * k], self.vel[3 * k + 1], self.vel[3 * k + 2]]))
                .collect(),
            id: self.ids,
        };
        let types = (0..TYPES)
            .flat_map(|t| std::iter::repeat_n(t as u8, self.counts[t]))
            .collect();
        finish(name, self.time, particles, types, self.potential)
    }
}

/// The group of particle type `t`.
pub fn group(t: usize) -> String {
    format!("PartType{t}")
}

/// Refuses a non-finite value of `dataset` in `group` (`width` values a
/// row; the first row of `values` is the group's row `first`).
fn check_values(
    name: &str,
    group: &str,
    dataset: &str,
    first: usize,
    values: &[f32],
    width: usize,
) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(bad(
            name,
            format!(
                "{group}/{dataset}: the value of particle {} is not finite ({})",
                first + i / width,
                values[i]
            ),
        )),
    }
}

fn check_masses(name: &str, group: &str, first: usize, masses: &[f32]) -> Result<()> {
    check_values(name, group, "Masses", first, masses, 1)?;
    match masses.iter().position(|&m| m < 0.0) {
        None => Ok(()),
        Some(i) => Err(bad(
            name,
            format!(
                "{group}/Masses: particle {} has a negative mass ({})",
                first + i,
                masses[i]
            ),
        )),
    }
}

fn finish(
    name: &str,
    time: f64,
    particles: crate::state::Particles,
    types: Vec<u8>,
    potential: Option<Vec<f32>>,
) -> Result<Snapshot> {
    if !time.is_finite() {
        return Err(bad(name, format!("Header/Time is not finite ({time})")));
    }
    checked(
        Snapshot {
            time,
            particles,
            types: Some(types),
            potential,
            ..Default::default()
        },
        name,
    )
}

#[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
pub use native::{decode, encode, read_path, read_share, units, write_path};

#[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
mod native {
    use super::*;
    use crate::error::Error;
    use crate::snapshot::write_behind::WriteBack;
    use crate::snapshot::FileShare;
    use crate::state::parallel::indices_where;
    use crate::state::share::RankShare;
    use hdf5_metno::{File, Group, H5Type};
    use ndarray::{s, ArrayView1, ArrayView2};

    /// An error of the HDF5 library about `what`, as a refusal of the file.
    fn lib(name: &str, what: &str, e: hdf5_metno::Error) -> Error {
        bad(name, format!("{what}: {e}"))
    }

    /// Opens `path` to read, or creates it, without the library's file
    /// lock: a process started meanwhile (the CLI's tests start many)
    /// inherits the lock's descriptor and would hold it until it ends;
    /// webgrav writes private temporaries and never writes a file others
    /// read.
    fn open(path: &str, create: bool) -> hdf5_metno::Result<File> {
        let mut b = File::with_options();
        b.with_fapl(|p| p.file_locking(false));
        match create {
            true => b.create(path),
            false => b.open(path),
        }
    }

    /// The layout of an open file: SWIFT's has its `Units` and `Cosmology`
    /// groups.
    fn layout_of(f: &File) -> Layout {
        let is_group = |g: &str| f.group(g).is_ok();
        match is_group("Units") && is_group("Cosmology") {
            true => Layout::Swift,
            false => Layout::Gadget4,
        }
    }

    /// An attribute of `loc` as f64 values (any numeric type converts).
    fn attr_f64s(loc: &Group, path: &str, attr: &str, name: &str) -> Result<Vec<f64>> {
        let a = loc
            .attr(attr)
            .map_err(|_| bad(name, format!("{path}/{attr} is missing")))?;
        a.read_raw::<f64>()
            .map_err(|e| lib(name, &format!("{path}/{attr}"), e))
    }

    /// The units a file states (kpc, M☉, km/s per file unit, as `--units`
    /// takes them), where they are not webgrav's own; `None` where they
    /// are or where the file states none.
    pub fn units(path: &str) -> Result<Option<[f64; 3]>> {
        let f = open(path, false).map_err(|e| lib(path, "opening", e))?;
        let get = |g: &str, a: &str| -> Option<f64> {
            let v = f.group(g).ok()?.attr(a).ok()?.read_raw::<f64>().ok()?;
            v.first().copied()
        };
        let found = match layout_of(&f) {
            Layout::Swift => (|| {
                let l = get("Units", "Unit length in cgs (U_L)")?;
                let t = get("Units", "Unit time in cgs (U_t)")?;
                Some((l, get("Units", "Unit mass in cgs (U_M)")?, l / t))
            })(),
            Layout::Gadget4 => ["Parameters", "Header"].iter().find_map(|g| {
                Some((
                    get(g, "UnitLength_in_cm")?,
                    get(g, "UnitMass_in_g")?,
                    get(g, "UnitVelocity_in_cm_per_s")?,
                ))
            }),
        };
        Ok(found
            .filter(|(l, m, v)| [l, m, v].iter().all(|x| x.is_finite() && **x > 0.0))
            .and_then(|(l, m, v)| units_flag(l, m, v)))
    }

    /// Reads the HDF5 snapshot at `path` (either layout, told by its
    /// content); errors name the dataset or attribute at fault.
    pub fn read_path(path: &str) -> Result<Snapshot> {
        read_as(path, path)
    }

    fn read_as(path: &str, name: &str) -> Result<Snapshot> {
        let read = read_rows(path, name, |n| Ok(0..n))?;
        finish(name, read.time, read.particles, read.types, read.potential)
    }

    /// Reads particles `share.of(n)` of the HDF5 snapshot at `path` (the
    /// types' groups in order, as `read_path` joins them), only their rows
    /// of each dataset; the file's header and every dataset's shape
    /// checked as `read_path` checks them, a particle named by its row in
    /// its group. `fits(count)` checks that the share fits before any row
    /// is read.
    pub fn read_share(
        path: &str,
        share: RankShare,
        fits: impl FnOnce(usize) -> Result<()>,
    ) -> Result<FileShare> {
        let read = read_rows(path, path, |n| {
            let range = share.of(n);
            fits(range.len())?;
            Ok(range)
        })?;
        Ok(FileShare {
            snap: Snapshot {
                time: read.time,
                particles: read.particles,
                types: Some(read.types),
                potential: read.potential,
                ..Default::default()
            },
            n: read.n,
            typed: true,
            counted: None,
        })
    }

    /// What `read_rows` read: particles `range` of the file's `n`.
    struct Rows {
        time: f64,
        particles: crate::state::Particles,
        types: Vec<u8>,
        potential: Option<Vec<f32>>,
        n: usize,
    }

    /// The rows `pick(n)` of the file's `n` particles (the types' groups in
    /// order), every group's datasets checked whether or not rows of it
    /// are read.
    fn read_rows(
        path: &str,
        name: &str,
        pick: impl FnOnce(usize) -> Result<std::ops::Range<usize>>,
    ) -> Result<Rows> {
        let f = open(path, false).map_err(|e| lib(name, "not an HDF5 file webgrav can open", e))?;
        let layout = layout_of(&f);
        let header = f
            .group("Header")
            .map_err(|_| bad(name, "no Header group (not a GADGET-4 or SWIFT snapshot)"))?;
        let files = attr_f64s(&header, "Header", "NumFilesPerSnapshot", name).unwrap_or(vec![1.0]);
        if files.first().is_some_and(|&k| k > 1.0) {
            return Err(bad(
                name,
                format!(
                    "Header/NumFilesPerSnapshot is {}: webgrav reads snapshots of one file",
                    files[0]
                ),
            ));
        }
        let time = attr_f64s(&header, "Header", "Time", name)?;
        let time = *time
            .first()
            .ok_or_else(|| bad(name, "Header/Time holds no value"))?;
        if !time.is_finite() {
            return Err(bad(name, format!("Header/Time is not finite ({time})")));
        }
        let table = attr_f64s(&header, "Header", "MassTable", name).unwrap_or_default();
        let listed = attr_f64s(&header, "Header", "NumPart_ThisFile", name)?;
        if let Some((t, k)) = listed
            .iter()
            .enumerate()
            .skip(TYPES)
            .find(|(_, &k)| k != 0.0)
        {
            return Err(bad(
                name,
                format!("Header/NumPart_ThisFile lists {k} particles of type {t}: webgrav's kinds are types 0 to 5"),
            ));
        }
        // Each type's count from its Coordinates, checked against the header.
        let mut groups: Vec<(usize, Group, usize)> = Vec::new();
        for t in 0..TYPES {
            let g = group(t);
            let said = listed.get(t).copied().unwrap_or(0.0);
            let Ok(grp) = f.group(&g) else {
                if said != 0.0 {
                    return Err(bad(
                        name,
                        format!("Header/NumPart_ThisFile lists {said} particles of type {t}, but there is no {g} group"),
                    ));
                }
                continue;
            };
            let coords = grp
                .dataset("Coordinates")
                .map_err(|_| bad(name, format!("{g}/Coordinates is missing")))?;
            let shape = coords.shape();
            if shape.len() != 2 || shape[1] != 3 {
                return Err(bad(
                    name,
                    format!("{g}/Coordinates has shape {shape:?}, expected [N, 3]"),
                ));
            }
            if said != shape[0] as f64 {
                return Err(bad(
                    name,
                    format!(
                        "{g}/Coordinates holds {} particles, Header/NumPart_ThisFile[{t}] says {said}",
                        shape[0]
                    ),
                ));
            }
            groups.push((t, grp, shape[0]));
        }
        let n: usize = groups.iter().map(|g| g.2).sum();
        let range = pick(n)?;
        let mut p = crate::state::Particles {
            pos_mass: Vec::with_capacity(range.len()),
            vel: Vec::with_capacity(range.len()),
            id: Vec::with_capacity(range.len()),
        };
        let mut types = Vec::with_capacity(range.len());
        let with_potential = groups
            .iter()
            .filter(|(_, grp, _)| potential_of(grp, layout).is_some())
            .count();
        if with_potential != 0 && with_potential != groups.len() {
            return Err(bad(
                name,
                format!(
                    "only some particle types have a {} dataset",
                    layout.potential()
                ),
            ));
        }
        let mut potential = (with_potential > 0).then(|| Vec::with_capacity(range.len()));
        let mut before = 0;
        for (t, grp, k) in &groups {
            let (t, k) = (*t, *k);
            let g = group(t);
            let first = p.len();
            // This group's rows among those picked.
            let rows = range.start.clamp(before, before + k) - before
                ..range.end.clamp(before, before + k) - before;
            before += k;
            let dataset = |d: &str, width: usize| -> Result<hdf5_metno::Dataset> {
                let ds = grp
                    .dataset(d)
                    .map_err(|_| bad(name, format!("{g}/{d} is missing")))?;
                let shape = ds.shape();
                let want: Vec<usize> = if width == 1 { vec![k] } else { vec![k, width] };
                if shape != want {
                    return Err(bad(
                        name,
                        format!(
                            "{g}/{d} has shape {shape:?}, expected {want:?} (as {g}/Coordinates)"
                        ),
                    ));
                }
                Ok(ds)
            };
            let coords = dataset("Coordinates", 3)?;
            let vels = dataset("Velocities", 3)?;
            let ids = dataset("ParticleIDs", 1)?;
            // SWIFT (and h5py's default) stores signed ids.
            let signed_ids = matches!(
                ids.dtype().and_then(|t| t.to_descriptor()),
                Ok(hdf5_metno::types::TypeDescriptor::Integer(_))
            );
            let header_mass = table.get(t).copied().unwrap_or(0.0);
            let masses = match grp.dataset("Masses") {
                Ok(_) => Some(dataset("Masses", 1)?),
                Err(_) if header_mass > 0.0 => None,
                Err(_) => {
                    return Err(bad(
                        name,
                        format!("{g}/Masses is missing and Header/MassTable[{t}] is 0"),
                    ))
                }
            };
            let pots = match &potential {
                Some(_) => Some(dataset(
                    potential_of(grp, layout).unwrap_or("Potential"),
                    1,
                )?),
                None => None,
            };
            let read_rows = |ds: &hdf5_metno::Dataset, d: &str, lo: usize, hi: usize| {
                ds.read_slice_2d::<f32, _>(s![lo..hi, ..])
                    .map_err(|e| lib(name, &format!("{g}/{d}"), e))
            };
            let read_col = |ds: &hdf5_metno::Dataset, d: &str, lo: usize, hi: usize| {
                ds.read_slice_1d::<f32, _>(lo..hi)
                    .map_err(|e| lib(name, &format!("{g}/{d}"), e))
            };
            let mut lo = rows.start;
            while lo < rows.end {
                let hi = (lo + SLAB_ROWS).min(rows.end);
                let x = read_rows(&coords, "Coordinates", lo, hi)?;
                let v = read_rows(&vels, "Velocities", lo, hi)?;
                let x = x.as_slice().expect("standard layout");
                let v = v.as_slice().expect("standard layout");
                check_values(name, &g, "Coordinates", lo, x, 3)?;
                check_values(name, &g, "Velocities", lo, v, 3)?;
                let m = match &masses {
                    Some(ds) => read_col(ds, "Masses", lo, hi)?.to_vec(),
                    None => vec![header_mass as f32; hi - lo],
                };
                check_masses(name, &g, lo, &m)?;
                let id = read_ids(&ids, signed_ids, lo, hi)
                    .map_err(|e| lib(name, &format!("{g}/ParticleIDs"), e))?;
                let id = match id {
                    Ok(id) => id,
                    // A signed id below 0 would come through the library
                    // as 0: refused, not changed.
                    Err((row, value)) => {
                        return Err(bad(
                            name,
                            format!(
                                "{g}/ParticleIDs[{}] is {value}: ids must not be negative",
                                lo + row
                            ),
                        ))
                    }
                };
                p.pos_mass.extend((0..hi - lo).map(|r| PosMass {
                    pos: [x[3 * r], x[3 * r + 1], x[3 * r + 2]],
                    mass: m[r],
                }));
                p.vel.extend(
                    (0..hi - lo).map(|r| Velocity::new([v[3 * r], v[3 * r + 1], v[3 * r + 2]])),
                );
                p.id.extend(id.iter());
                if let (Some(ds), Some(all)) = (&pots, &mut potential) {
                    let d = potential_of(grp, layout).unwrap_or("Potential");
                    let phi = read_col(ds, d, lo, hi)?;
                    let phi = phi.as_slice().expect("standard layout");
                    check_values(name, &g, d, lo, phi, 1)?;
                    all.extend_from_slice(phi);
                }
                lo = hi;
            }
            types.resize(first + rows.len(), t as u8);
        }
        Ok(Rows {
            time,
            particles: p,
            types,
            potential,
            n,
        })
    }

    /// The potential's dataset in a type's group: the layout's name, else
    /// the other code's.
    fn potential_of(grp: &Group, layout: Layout) -> Option<&'static str> {
        let other = match layout {
            Layout::Gadget4 => Layout::Swift,
            Layout::Swift => Layout::Gadget4,
        };
        [layout.potential(), other.potential()]
            .into_iter()
            .find(|d| grp.link_exists(d))
    }

    /// Rows `lo..hi` of a `ParticleIDs` dataset as unsigned ids, or the
    /// first negative one (its row in the slab, its value) of a signed
    /// dataset.
    fn read_ids(
        ds: &hdf5_metno::Dataset,
        signed: bool,
        lo: usize,
        hi: usize,
    ) -> hdf5_metno::Result<std::result::Result<Vec<u64>, (usize, i64)>> {
        if !signed {
            return Ok(Ok(ds.read_slice_1d::<u64, _>(lo..hi)?.to_vec()));
        }
        let ids = ds.read_slice_1d::<i64, _>(lo..hi)?;
        Ok(match ids.iter().position(|&i| i < 0) {
            Some(row) => Err((row, ids[row])),
            None => Ok(ids.iter().map(|&i| i as u64).collect()),
        })
    }

    fn write_err(path: &str, what: &str, e: hdf5_metno::Error) -> Error {
        Error::Io {
            path: path.to_string(),
            source: std::io::Error::other(format!("{what}: {e}")),
        }
    }

    fn attr<T: H5Type>(loc: &Group, path: &str, name: &str, values: &[T]) -> Result<()> {
        loc.new_attr_builder()
            .with_data(ArrayView1::from(values))
            .create(name)
            .map(|_| ())
            .map_err(|e| write_err(path, name, e))
    }

    fn scalar<T: H5Type>(loc: &Group, path: &str, name: &str, value: T) -> Result<()> {
        loc.new_attr::<T>()
            .create(name)
            .and_then(|a| a.write_scalar(&value))
            .map_err(|e| write_err(path, name, e))
    }

    /// An attribute of one value as SWIFT writes them: an array of one.
    fn one<T: H5Type>(loc: &Group, path: &str, name: &str, value: T) -> Result<()> {
        attr(loc, path, name, &[value])
    }

    fn text(loc: &Group, path: &str, name: &str, value: &str) -> Result<()> {
        let v: hdf5_metno::types::VarLenUnicode = value.parse().expect("no NUL in the text");
        scalar(loc, path, name, v)
    }

    /// Writes `snap` to a new HDF5 file at `path` in `layout`: particles
    /// grouped by type (type 1, halo, where the snapshot has none), in
    /// the order given within a type; positions, velocities and masses in
    /// f32 as the state holds them (SWIFT's coordinates in f64, exactly
    /// the same values), 64-bit ids, the time, potentials where present.
    pub fn write_path(path: &str, snap: &Snapshot, layout: Layout) -> Result<()> {
        let f = open(path, true).map_err(|e| write_err(path, "creating", e))?;
        // The disk writes each slab while the next is made (as every
        // other format's writes, `WriteBehind`): the closing sync then
        // finds little left.
        let mut back = WriteBack::open(path);
        // Every group and dataset is closed before the file is.
        write_groups(&f, path, snap, layout, &mut back)?;
        f.close().map_err(|e| write_err(path, "closing", e))
    }

    fn write_groups(
        f: &File,
        path: &str,
        snap: &Snapshot,
        layout: Layout,
        back: &mut Option<WriteBack>,
    ) -> Result<()> {
        let p = &snap.particles;
        let n = p.len();
        let types = snap.types.as_deref().filter(|t| t.len() == n);
        let kind = |k: usize| types.map_or(1, |t| t[k].min(5) as usize);
        let order: Vec<Vec<u32>> = (0..TYPES)
            .map(|t| match types {
                Some(_) => indices_where(n, |k| kind(k) == t),
                None if t == 1 => (0..n as u32).collect(),
                None => Vec::new(),
            })
            .collect();
        let counts: Vec<u64> = order.iter().map(|o| o.len() as u64).collect();
        let w = |what: &str, e| write_err(path, what, e);
        let header = f.create_group("Header").map_err(|e| w("Header", e))?;
        let swift = layout == Layout::Swift;
        let value = |name: &str, x: f64| match swift {
            true => one(&header, path, name, x),
            false => scalar(&header, path, name, x),
        };
        value("Time", snap.time)?;
        value("Redshift", 0.0)?;
        match swift {
            true => one(&header, path, "NumFilesPerSnapshot", 1i32)?,
            false => scalar(&header, path, "NumFilesPerSnapshot", 1i32)?,
        }
        attr(&header, path, "MassTable", &[0.0f64; TYPES])?;
        match layout {
            Layout::Gadget4 => {
                attr(&header, path, "NumPart_ThisFile", &counts)?;
                attr(&header, path, "NumPart_Total", &counts)?;
                scalar(&header, path, "BoxSize", 0.0f64)?;
                // Where GADGET-4 states its units (and GADGET-3 and
                // AREPO, whose readers look in the Header).
                let params = f
                    .create_group("Parameters")
                    .map_err(|e| w("Parameters", e))?;
                for g in [&params, &header] {
                    scalar(g, path, "UnitLength_in_cm", UNIT_LENGTH_CM)?;
                    scalar(g, path, "UnitMass_in_g", UNIT_MASS_G)?;
                    scalar(g, path, "UnitVelocity_in_cm_per_s", UNIT_VELOCITY_CM_S)?;
                }
                scalar(&params, path, "GravityConstantInternal", 1.0f64)?;
            }
            Layout::Swift => {
                attr(&header, path, "NumPart_ThisFile", &counts)?;
                attr(&header, path, "NumPart_Total", &counts)?;
                attr(&header, path, "NumPart_Total_HighWord", &[0u32; TYPES])?;
                attr(&header, path, "BoxSize", &[0.0f64; 3])?;
                one(&header, path, "Dimension", 3i32)?;
                one(&header, path, "Scale-factor", 1.0f64)?;
                one(&header, path, "Flag_Entropy_ICs", 0i32)?;
                text(&header, path, "Code", "webgrav")?;
                let time_s = UNIT_LENGTH_CM / UNIT_VELOCITY_CM_S;
                for g in ["Units", "InternalCodeUnits"] {
                    let u = f.create_group(g).map_err(|e| w(g, e))?;
                    one(&u, path, "Unit mass in cgs (U_M)", UNIT_MASS_G)?;
                    one(&u, path, "Unit length in cgs (U_L)", UNIT_LENGTH_CM)?;
                    one(&u, path, "Unit time in cgs (U_t)", time_s)?;
                    one(&u, path, "Unit current in cgs (U_I)", 1.0f64)?;
                    one(&u, path, "Unit temperature in cgs (U_T)", 1.0f64)?;
                }
                let c = f.create_group("Cosmology").map_err(|e| w("Cosmology", e))?;
                one(&c, path, "Cosmological run", 0i32)?;
                one(&c, path, "Redshift", 0.0f64)?;
                one(&c, path, "Scale-factor", 1.0f64)?;
                let code = f.create_group("Code").map_err(|e| w("Code", e))?;
                text(&code, path, "Code", "webgrav")?;
            }
        }
        for (t, rows) in order.iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let g = group(t);
            let grp = f.create_group(&g).map_err(|e| w(&g, e))?;
            write_type(path, &grp, &g, snap, rows, layout, back)?;
        }
        Ok(())
    }

    /// One type's datasets, a slab of `rows` (indices of its particles) at
    /// a time.
    fn write_type(
        path: &str,
        grp: &Group,
        g: &str,
        snap: &Snapshot,
        rows: &[u32],
        layout: Layout,
        back: &mut Option<WriteBack>,
    ) -> Result<()> {
        let p = &snap.particles;
        let k = rows.len();
        let w = |d: &str, e| write_err(path, &format!("{g}/{d}"), e);
        let create = |d: &str, f64s: bool, width: usize| {
            let b = grp.new_dataset_builder();
            let b = match f64s {
                true => b.empty::<f64>(),
                false => b.empty::<f32>(),
            };
            match width {
                1 => b.shape([k]).create(d),
                _ => b.shape([k, width]).create(d),
            }
            .map_err(|e| w(d, e))
        };
        let swift = layout == Layout::Swift;
        let coords = create("Coordinates", swift, 3)?;
        let vels = create("Velocities", false, 3)?;
        let masses = create("Masses", false, 1)?;
        let ids = grp
            .new_dataset::<u64>()
            .shape([k])
            .create("ParticleIDs")
            .map_err(|e| w("ParticleIDs", e))?;
        let potential = snap.potential.as_ref().filter(|phi| phi.len() == p.len());
        let pots = match potential {
            Some(_) => Some(create(layout.potential(), false, 1)?),
            None => None,
        };
        // What each dataset's numbers mean, as each code says it: the
        // powers of the length, mass and velocity units (and none of the
        // scale factor or h: not a cosmological run) and the factor to cgs.
        let described = [
            (Some(&coords), "Coordinates", [1, 0, 0], UNIT_LENGTH_CM),
            (Some(&vels), "Velocities", [0, 0, 1], UNIT_VELOCITY_CM_S),
            (Some(&masses), "Masses", [0, 1, 0], UNIT_MASS_G),
            (Some(&ids), "ParticleIDs", [0, 0, 0], 1.0),
            (
                pots.as_ref(),
                layout.potential(),
                [0, 0, 2],
                UNIT_VELOCITY_CM_S * UNIT_VELOCITY_CM_S,
            ),
        ];
        for (ds, d, [l, m, v], cgs) in described {
            let Some(ds) = ds else { continue };
            let loc: &hdf5_metno::Location = ds;
            describe(loc, d, [l, m, v], cgs, layout).map_err(|e| w(d, e))?;
        }
        let mut lo = 0;
        while lo < k {
            let hi = (lo + SLAB_ROWS).min(k);
            let slab = &rows[lo..hi];
            let m = hi - lo;
            let xs: Vec<f32> = slab
                .iter()
                .flat_map(|&j| p.pos_mass[j as usize].pos)
                .collect();
            let written = if swift {
                let x64: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
                let a = ArrayView2::from_shape((m, 3), &x64[..]).expect("3 a row");
                coords.write_slice(a, s![lo..hi, ..])
            } else {
                let a = ArrayView2::from_shape((m, 3), &xs[..]).expect("3 a row");
                coords.write_slice(a, s![lo..hi, ..])
            };
            written.map_err(|e| w("Coordinates", e))?;
            let vs: Vec<f32> = slab.iter().flat_map(|&j| p.vel[j as usize].vel).collect();
            let a = ArrayView2::from_shape((m, 3), &vs[..]).expect("3 a row");
            vels.write_slice(a, s![lo..hi, ..])
                .map_err(|e| w("Velocities", e))?;
            let ms: Vec<f32> = slab.iter().map(|&j| p.pos_mass[j as usize].mass).collect();
            masses
                .write_slice(&ms[..], lo..hi)
                .map_err(|e| w("Masses", e))?;
            let is: Vec<u64> = slab.iter().map(|&j| p.id[j as usize]).collect();
            ids.write_slice(&is[..], lo..hi)
                .map_err(|e| w("ParticleIDs", e))?;
            if let (Some(ds), Some(phi)) = (&pots, potential) {
                let ps: Vec<f32> = slab.iter().map(|&j| phi[j as usize]).collect();
                ds.write_slice(&ps[..], lo..hi)
                    .map_err(|e| w(layout.potential(), e))?;
            }
            if let Some(b) = back {
                b.wrote();
            }
            lo = hi;
        }
        Ok(())
    }

    /// A dataset's unit attributes: GADGET-4's (`length_scaling`, …,
    /// `to_cgs`, which pynbody reads) or SWIFT's (`U_L exponent`, …,
    /// `Conversion factor to CGS …`, which swiftsimio reads).
    fn describe(
        ds: &hdf5_metno::Location,
        what: &str,
        [l, m, v]: [i32; 3],
        cgs: f64,
        layout: Layout,
    ) -> hdf5_metno::Result<()> {
        let f = |name: &str, x: f64| -> hdf5_metno::Result<()> {
            ds.new_attr::<f64>().create(name)?.write_scalar(&x)
        };
        // SWIFT's attributes are arrays of one value.
        let g = |name: &str, x: f64| -> hdf5_metno::Result<()> {
            ds.new_attr_builder()
                .with_data(&[x][..])
                .create(name)
                .map(|_| ())
        };
        match layout {
            Layout::Gadget4 => {
                f("length_scaling", l as f64)?;
                f("mass_scaling", m as f64)?;
                f("velocity_scaling", v as f64)?;
                f("a_scaling", 0.0)?;
                f("h_scaling", 0.0)?;
                f("to_cgs", cgs)
            }
            Layout::Swift => {
                // SWIFT's units are mass, length, time: a velocity is L/t.
                g("U_M exponent", m as f64)?;
                g("U_L exponent", (l + v) as f64)?;
                g("U_t exponent", -v as f64)?;
                g("U_I exponent", 0.0)?;
                g("U_T exponent", 0.0)?;
                g("a-scale exponent", 0.0)?;
                g("h-scale exponent", 0.0)?;
                g(
                    "Conversion factor to CGS (not including cosmological corrections)",
                    cgs,
                )?;
                g(
                    "Conversion factor to physical CGS (including cosmological corrections)",
                    cgs,
                )?;
                let t: hdf5_metno::types::VarLenUnicode = what.parse().expect("no NUL");
                ds.new_attr::<hdf5_metno::types::VarLenUnicode>()
                    .create("Description")?
                    .write_scalar(&t)
            }
        }
    }

    /// A private temporary file (the HDF5 library reads and writes files
    /// by name); removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new() -> Self {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Self(std::env::temp_dir().join(format!("webgrav-hdf5-{}-{k}.hdf5", std::process::id())))
        }
        fn path(&self) -> &str {
            self.0
                .to_str()
                .expect("temporary directory's path is UTF-8")
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// The snapshot whose HDF5 file's bytes are `bytes` (a series' frame,
    /// a fuzzer's mutant); `name` appears in error messages.
    pub fn decode(bytes: &[u8], name: &str) -> Result<Snapshot> {
        if !is_hdf5(bytes) {
            return Err(bad(
                name,
                "not an HDF5 file (no HDF5 signature at its start)",
            ));
        }
        let scratch = Scratch::new();
        std::fs::write(&scratch.0, bytes).map_err(|e| Error::Io {
            path: scratch.path().to_string(),
            source: e,
        })?;
        read_as(scratch.path(), name)
    }

    /// The bytes of `snap` as an HDF5 file in `layout`.
    pub fn encode(snap: &Snapshot, layout: Layout) -> Result<Vec<u8>> {
        let scratch = Scratch::new();
        write_path(scratch.path(), snap, layout)?;
        std::fs::read(&scratch.0).map_err(|e| Error::Io {
            path: scratch.path().to_string(),
            source: e,
        })
    }
}
