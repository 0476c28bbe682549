//! Galactic-dynamics analysis of a state, on the CPU in f64: the density
//! centre, spherical profiles (ρ, M(<r), v_c), disk profiles in a frame
//! aligned with the angular momentum (Σ, scale height, dispersions), the
//! m = 2 bar mode and its pattern speed, and black-hole separations.
//! Sub-populations (a galaxy component) are analysed by `select`ing them
//! first; every function then sees only the particles it is given.

use super::readout::{lagrangian_radii, PlotRead};
use crate::gpu::layout::PosMass;
use crate::render::ComponentTags;
use crate::state::parallel::{filter, indices_where, map_indices, max_by_chunks, sum_by_chunks};
use crate::state::Particles;
use std::borrow::Cow;
use std::f64::consts::PI;

/// Mass fractions of the Lagrangian radii the analysis reports.
pub const FRACTIONS: [f64; 5] = [0.1, 0.25, 0.5, 0.75, 0.9];

/// The particles `keep` accepts (by index), in order.
pub fn select(p: &Particles, keep: impl Fn(usize) -> bool + Sync + Send) -> Particles {
    let idx = indices_where(p.len(), keep);
    Particles {
        pos_mass: map_indices(idx.len(), |j| p.pos_mass[idx[j] as usize]),
        vel: map_indices(idx.len(), |j| p.vel[idx[j] as usize]),
        id: map_indices(idx.len(), |j| p.id[idx[j] as usize]),
    }
}

fn dist2(pos: [f32; 3], c: [f64; 3]) -> f64 {
    (0..3).map(|k| (pos[k] as f64 - c[k]).powi(2)).sum()
}

/// Density centre by shrinking spheres (Power et al. 2003, §2.4): start
/// from the centre of mass of all particles in the sphere that holds them
/// all, then repeatedly shrink the radius by 2.5 % and recentre on the
/// centre of mass of the particles inside, until 1000 particles remain,
/// as the paper stops (half of them where N < 2000, so a small system
/// still gets a density centre rather than its centre of mass). Its noise
/// is that of the last sphere, not of N: in a cored profile (Plummer)
/// about 0.05 a. While a sphere holds more than `FAST_SHRINK_ABOVE`
/// particles the radius shrinks by 30 % a step (pynbody's
/// `shrink_sphere_center` factor): the 2.5 % steps through a galaxy's
/// halo, each over all particles, were what made `analyze` cost minutes
/// at 10^8 particles, and the centre is decided by the last spheres,
/// which still shrink by 2.5 %.
pub fn density_center(pos_mass: &[PosMass]) -> [f64; 3] {
    /// Spheres of more particles than this shrink by 30 % a step.
    const FAST_SHRINK_ABOVE: usize = 100_000;
    let [m, mx, my, mz] = sum_by_chunks(pos_mass.len(), |k| {
        let p = &pos_mass[k];
        let m = p.mass as f64;
        [
            m,
            m * p.pos[0] as f64,
            m * p.pos[1] as f64,
            m * p.pos[2] as f64,
        ]
    });
    let mut c = if m > 0.0 {
        [mx / m, my / m, mz / m]
    } else {
        [0.0; 3]
    };
    let n_min = 1000.min(pos_mass.len().div_ceil(2));
    let mut r = max_by_chunks(pos_mass.len(), |k| dist2(pos_mass[k].pos, c)).sqrt();
    // Spheres stop shrinking far below f32's resolution of the positions:
    // what is left inside is particles at one point (a lone black hole,
    // duplicates), which a smaller sphere keeps forever (0.975 r rounds
    // to r at the smallest subnormal: the loop never ended).
    let r_min = r * 1e-12;
    // Candidates: every particle within `reach` of `around`, a sphere that
    // holds the current one; rebuilt (from all particles, at 1.5 times the
    // radius) when the sphere leaves it, and narrowed (from themselves)
    // when the sphere has shrunk to a third of it, so the work stays
    // O(N log N) and no particle of a sphere is ever missed (filtering
    // only the last sphere's members would drift the centre by ~a/10).
    // The candidates keep the particles' order: each sphere's members, and
    // so its centre, are the same whichever set they are taken from.
    let (mut around, mut reach) = (c, f64::INFINITY);
    // (At first every particle: borrowed, not copied.)
    let mut candidates: Cow<[PosMass]> = Cow::Borrowed(pos_mass);
    let mut members = pos_mass.len();
    while r > 0.0 {
        r *= if members > FAST_SHRINK_ABOVE {
            0.7
        } else {
            0.975
        };
        let off: f64 = (0..3).map(|k| (c[k] - around[k]).powi(2)).sum();
        let from = if off.sqrt() + r > reach {
            Some(pos_mass)
        } else if 3.0 * r < reach && off.sqrt() + 1.5 * r <= reach {
            Some(&candidates[..])
        } else {
            None
        };
        if let Some(from) = from {
            (around, reach) = (c, 1.5 * r);
            candidates = Cow::Owned(filter(from, |p| dist2(p.pos, around) <= reach * reach));
        }
        // The sphere's members counted and summed in place, on every core
        // (in fixed chunks: the same centre on any number of threads).
        let [count, m, mx, my, mz] = sum_by_chunks(candidates.len(), |k| {
            let p = &candidates[k];
            if dist2(p.pos, c) <= r * r {
                let m = p.mass as f64;
                [
                    1.0,
                    m,
                    m * p.pos[0] as f64,
                    m * p.pos[1] as f64,
                    m * p.pos[2] as f64,
                ]
            } else {
                [0.0; 5]
            }
        });
        members = count as usize;
        if members < n_min || r < r_min {
            break;
        }
        if m > 0.0 {
            c = [mx / m, my / m, mz / m];
        }
    }
    c
}

/// Mass-weighted mean velocity of the particles within `radius` of
/// `center` (the bulk velocity of a galaxy's centre, which escapers and
/// companions do not pull).
pub fn center_velocity(p: &Particles, center: [f64; 3], radius: f64) -> [f64; 3] {
    let [m, vx, vy, vz] = sum_by_chunks(p.len(), |k| {
        let (pm, vel) = (&p.pos_mass[k], &p.vel[k]);
        if dist2(pm.pos, center) <= radius * radius {
            let m = pm.mass as f64;
            [
                m,
                m * vel.vel[0] as f64,
                m * vel.vel[1] as f64,
                m * vel.vel[2] as f64,
            ]
        } else {
            [0.0; 4]
        }
    });
    if m > 0.0 {
        [vx / m, vy / m, vz / m]
    } else {
        [0.0; 3]
    }
}

/// Lagrangian radii at `FRACTIONS` about `center`; the half-mass radius
/// is the third.
pub fn lagrangian(pos_mass: &[PosMass], center: [f64; 3]) -> [f64; 5] {
    let r = lagrangian_radii(pos_mass, center, &FRACTIONS);
    [r[0], r[1], r[2], r[3], r[4]]
}

/// One spherical shell of a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Shell {
    pub r_in: f64,
    pub r_out: f64,
    /// Geometric mean of the edges (the shell's radius on a log plot).
    pub r: f64,
    pub count: usize,
    /// Mass in the shell over its volume.
    pub density: f64,
    /// Mass within `r_out`.
    pub enclosed_mass: f64,
    /// Circular velocity at `r_out`, sqrt(G M(<r)/r) with G = 1 (exact
    /// for a spherical system, Binney & Tremaine eq. 2.33).
    pub v_circ: f64,
}

/// Most shells or rings a profile takes. A profile resolves what its
/// particles resolve: from the 1 % to the 99 % mass radius (2 to 3
/// decades for galaxies and clusters) 10^4 log shells are thousands per
/// decade, far finer than the softening or Poisson noise allow, and still
/// some 5,000 particles per shell at the largest N a GPU runs (5·10^7);
/// the CSV stays near a megabyte. More is a typo (`--bins 1e8` would write
/// gigabytes of empty shells).
pub const MAX_PROFILE_BINS: usize = 10_000;

/// Spherical profile about `center` in `bins` shells log-spaced from
/// `r_min` to `r_max` (0 < r_min < r_max); mass inside `r_min` counts in
/// the enclosed mass.
pub fn spherical_profile(
    pos_mass: &[PosMass],
    center: [f64; 3],
    r_min: f64,
    r_max: f64,
    bins: usize,
) -> Vec<Shell> {
    let edge = |k: usize| r_min * (r_max / r_min).powf(k as f64 / bins as f64);
    let (mut mass, mut count, mut inner) = (vec![0.0f64; bins], vec![0usize; bins], 0.0);
    let log_step = (r_max / r_min).ln() / bins as f64;
    for p in pos_mass {
        let r = dist2(p.pos, center).sqrt();
        if r < r_min {
            inner += p.mass as f64;
        } else if r < r_max {
            let k = (((r / r_min).ln() / log_step) as usize).min(bins - 1);
            mass[k] += p.mass as f64;
            count[k] += 1;
        }
    }
    let mut enclosed = inner;
    (0..bins)
        .map(|k| {
            let (r_in, r_out) = (edge(k), edge(k + 1));
            enclosed += mass[k];
            Shell {
                r_in,
                r_out,
                r: (r_in * r_out).sqrt(),
                count: count[k],
                density: mass[k] / (4.0 / 3.0 * PI * (r_out.powi(3) - r_in.powi(3))),
                enclosed_mass: enclosed,
                v_circ: (enclosed / r_out).sqrt(),
            }
        })
        .collect()
}

/// A particle in a galaxy's cylindrical frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cylindrical {
    pub r: f64,
    pub phi: f64,
    pub z: f64,
    pub v_r: f64,
    pub v_phi: f64,
    pub v_z: f64,
    pub mass: f64,
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn unit(a: [f64; 3]) -> Option<[f64; 3]> {
    let n = dot(a, a).sqrt();
    (n > 0.0).then(|| a.map(|x| x / n))
}

/// Orthonormal axes (x, y, z) of a disk: z along the total angular
/// momentum of `p` about `center` (moving with `v_center`), x the
/// projection of the simulation's x axis (its y axis where z lies along
/// x), so the azimuths of successive snapshots share one origin and a bar
/// phase can be differenced over time.
pub fn disk_axes(p: &Particles, center: [f64; 3], v_center: [f64; 3]) -> [[f64; 3]; 3] {
    let l = sum_by_chunks(p.len(), |i| {
        let (pm, v) = (&p.pos_mass[i], &p.vel[i]);
        let x = [0, 1, 2].map(|k| pm.pos[k] as f64 - center[k]);
        let u = [0, 1, 2].map(|k| v.vel[k] as f64 - v_center[k]);
        cross(x, u).map(|j| pm.mass as f64 * j)
    });
    let z = unit(l).unwrap_or([0.0, 0.0, 1.0]);
    let reference = if z[0].abs() < 0.9 {
        [1.0, 0.0, 0.0]
    } else {
        [0.0, 1.0, 0.0]
    };
    let along = dot(reference, z);
    let x = unit([0, 1, 2].map(|k| reference[k] - along * z[k])).expect("reference is not z");
    [x, cross(z, x), z]
}

/// The particles in the cylindrical frame of `axes` about `center`,
/// velocities relative to `v_center`.
pub fn to_cylindrical(
    p: &Particles,
    center: [f64; 3],
    v_center: [f64; 3],
    axes: &[[f64; 3]; 3],
) -> Vec<Cylindrical> {
    map_indices(p.len(), |i| {
        let (pm, v) = (&p.pos_mass[i], &p.vel[i]);
        let d = [0, 1, 2].map(|k| pm.pos[k] as f64 - center[k]);
        let u = [0, 1, 2].map(|k| v.vel[k] as f64 - v_center[k]);
        let [x, y, z] = axes.map(|a| dot(a, d));
        let [ux, uy, uz] = axes.map(|a| dot(a, u));
        let r = x.hypot(y);
        let (s, c) = if r > 0.0 { (y / r, x / r) } else { (0.0, 1.0) };
        Cylindrical {
            r,
            phi: y.atan2(x),
            z,
            v_r: ux * c + uy * s,
            v_phi: -ux * s + uy * c,
            v_z: uz,
            mass: pm.mass as f64,
        }
    })
}

/// One ring of a disk profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Ring {
    pub r_in: f64,
    pub r_out: f64,
    pub count: usize,
    /// Mass in the ring over its area (all heights).
    pub surface_density: f64,
    /// Median |z|: for a sech²(z/z0) disk ln(3)/2 · z0 = 0.549 z0, and
    /// robust to the few particles far off the plane.
    pub z_median: f64,
    /// Root mean square of z.
    pub z_rms: f64,
    /// Mass-weighted mean azimuthal velocity.
    pub v_phi: f64,
    /// Mass-weighted dispersions about the ring's means.
    pub sigma_r: f64,
    pub sigma_phi: f64,
    pub sigma_z: f64,
}

/// Disk profile in `bins` rings of equal width from 0 to `r_max`.
pub fn disk_profile(cyl: &[Cylindrical], r_max: f64, bins: usize) -> Vec<Ring> {
    let mut rings: Vec<Vec<&Cylindrical>> = vec![Vec::new(); bins];
    for c in cyl {
        if c.r < r_max {
            rings[((c.r / r_max * bins as f64) as usize).min(bins - 1)].push(c);
        }
    }
    rings
        .into_iter()
        .enumerate()
        .map(|(k, ring)| {
            let (r_in, r_out) = (
                r_max * k as f64 / bins as f64,
                r_max * (k + 1) as f64 / bins as f64,
            );
            let m: f64 = ring.iter().map(|c| c.mass).sum();
            let mean = |f: fn(&Cylindrical) -> f64| {
                if m > 0.0 {
                    ring.iter().map(|c| c.mass * f(c)).sum::<f64>() / m
                } else {
                    0.0
                }
            };
            let sigma = |f: fn(&Cylindrical) -> f64| {
                let mu = mean(f);
                if m > 0.0 {
                    (ring
                        .iter()
                        .map(|c| c.mass * (f(c) - mu).powi(2))
                        .sum::<f64>()
                        / m)
                        .sqrt()
                } else {
                    0.0
                }
            };
            let mut abs_z: Vec<f64> = ring.iter().map(|c| c.z.abs()).collect();
            abs_z.sort_by(f64::total_cmp);
            Ring {
                r_in,
                r_out,
                count: ring.len(),
                surface_density: m / (PI * (r_out * r_out - r_in * r_in)),
                z_median: median(&abs_z),
                z_rms: mean(|c| c.z * c.z).sqrt(),
                v_phi: mean(|c| c.v_phi),
                sigma_r: sigma(|c| c.v_r),
                sigma_phi: sigma(|c| c.v_phi),
                sigma_z: sigma(|c| c.v_z),
            }
        })
        .collect()
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]),
    }
}

/// The m = 2 Fourier mode of the mass within a cylindrical radius.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BarMode {
    /// A2 = |Σ m e^{2iφ}| / Σ m: 0 for an axisymmetric disk (up to the
    /// sampling noise, ~1/√N), 1 for all the mass on one line.
    pub a2: f64,
    /// Phase of the mode, arg Σ m e^{2iφ}, in (-π, π]; the bar's major
    /// axis lies at half of it (modulo π).
    pub phase: f64,
}

impl BarMode {
    /// The bar's position angle in (-π/2, π/2].
    pub fn angle(&self) -> f64 {
        self.phase / 2.0
    }
}

/// The m = 2 mode of the particles within cylindrical radius `r_max`.
pub fn bar_mode(cyl: &[Cylindrical], r_max: f64) -> BarMode {
    let [re, im, m] = sum_by_chunks(cyl.len(), |k| {
        let c = &cyl[k];
        if c.r < r_max {
            let (s, co) = (2.0 * c.phi).sin_cos();
            [c.mass * co, c.mass * s, c.mass]
        } else {
            [0.0; 3]
        }
    });
    BarMode {
        a2: if m > 0.0 { re.hypot(im) / m } else { 0.0 },
        phase: im.atan2(re),
    }
}

/// Pattern speed Ω_p of a bar between two snapshots: the change of the
/// m = 2 phase, unwrapped into (-π, π], over 2 dt (the phase turns twice
/// as fast as the bar). The bar must turn less than a quarter turn in
/// between, or the answer is aliased.
pub fn pattern_speed(earlier: BarMode, t0: f64, later: BarMode, t1: f64) -> f64 {
    let mut d = later.phase - earlier.phase;
    d -= 2.0 * PI * ((d + PI) / (2.0 * PI)).floor();
    if d == -PI {
        d = PI;
    }
    d / (2.0 * (t1 - t0))
}

/// Ids of the two most massive particles, when they stand out: both
/// heavier than every other particle (as black holes in a galaxy are);
/// `None` where the masses do not tell them apart.
pub fn two_heaviest(p: &Particles) -> Option<(u64, u64)> {
    // The three heaviest in one pass, as a stable sort by mass (heaviest
    // first) would begin: of equal masses the first particle first.
    let mass = |k: usize| p.pos_mass[k].mass;
    let mut order: Vec<usize> = Vec::with_capacity(4);
    for k in 0..p.len() {
        let at = order
            .iter()
            .position(|&j| mass(k).total_cmp(&mass(j)).is_gt())
            .unwrap_or(order.len());
        if at < 3 {
            order.insert(at, k);
            order.truncate(3);
        }
    }
    match order[..] {
        [a, b, c, ..] if p.pos_mass[b].mass > p.pos_mass[c].mass => Some((p.id[a], p.id[b])),
        [a, b] => Some((p.id[a], p.id[b])),
        _ => None,
    }
}

/// Distance between the particles with ids `a` and `b`, if both exist.
pub fn separation(p: &Particles, a: u64, b: u64) -> Option<f64> {
    let find = |id: u64| {
        p.id.iter()
            .position(|&i| i == id)
            .map(|k| p.pos_mass[k].pos)
    };
    let (pa, pb) = (find(a)?, find(b)?);
    Some(dist2(pa, pb.map(|x| x as f64)).sqrt())
}

/// What every read-out of one component starts from: its density centre,
/// Lagrangian radii, and its particles in the disk frame (velocities about
/// the bulk velocity within the half-mass radius).
pub struct Frame {
    pub center: [f64; 3],
    pub radii: [f64; 5],
    pub cyl: Vec<Cylindrical>,
}

impl Frame {
    pub fn of(p: &Particles) -> Self {
        let center = density_center(&p.pos_mass);
        let radii = lagrangian(&p.pos_mass, center);
        let v_center = center_velocity(p, center, radii[2]);
        let axes = disk_axes(p, center, v_center);
        Frame {
            center,
            radii,
            cyl: to_cylindrical(p, center, v_center, &axes),
        }
    }
}

/// What the page plots of a galaxy while it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct GalaxyReadout {
    /// (r, v_c) of all the mass about its density centre, in
    /// `ROTATION_CURVE_SHELLS` log-spaced shells from the radius holding
    /// 1 % of the mass to the one holding 90 %.
    pub rotation_curve: Vec<[f64; 2]>,
    /// (r, v_c) of the mass outside the dark haloes alone at the same
    /// radii (what the stars would hold up without the halo), where the
    /// galaxy has a halo; empty otherwise.
    pub without_halo: Vec<[f64; 2]>,
    /// A2 of the disk within its half-mass radius, where there is a disk.
    pub bar_a2: Option<f64>,
    /// Separation of the two black holes, where two particles outweigh
    /// all others.
    pub bh_separation: Option<f64>,
}

/// The galaxy read-out (`galaxy_readout`) of a page's read-out `read`,
/// each particle's component from `components` (which tag every particle
/// of the run, by id); `None` where the tags are mass shells. Of a
/// sample, the black holes' separation is taken among the marked
/// particles found apart from it (`PlotRead::Sampled`).
pub fn galaxy_of_read(read: &PlotRead, components: &ComponentTags) -> Option<GalaxyReadout> {
    if components.by_shells {
        return None;
    }
    Some(match read {
        PlotRead::Whole(r) => {
            let p = &r.snapshot.particles;
            galaxy_readout(p, of(components, "disk"), of(components, "halo"))
        }
        PlotRead::Sampled(_, s, holes) => {
            let ids = |range: std::ops::Range<usize>| -> Vec<u64> {
                s.id[range].iter().map(|&i| i as u64).collect()
            };
            let (n, first_hole) = (s.pos_mass.len(), s.pos_mass.len() - holes);
            let p = Particles {
                pos_mass: s.pos_mass.clone(),
                vel: s.vel.clone(),
                id: ids(0..n),
            };
            let heaviest = Particles {
                pos_mass: s.pos_mass[first_hole..].to_vec(),
                vel: s.vel[first_hole..].to_vec(),
                id: ids(first_hole..n),
            };
            let sampled = ComponentTags {
                tags: (s.id.iter())
                    .map(|&i| components.tags.get(i as usize).copied().unwrap_or(0))
                    .collect(),
                names: components.names.clone(),
                by_shells: false,
            };
            galaxy_readout_of(&p, of(&sampled, "disk"), of(&sampled, "halo"), &heaviest)
        }
    })
}

/// Whether particle k is of a component named `...suffix`.
fn of<'a>(c: &'a ComponentTags, suffix: &'a str) -> impl Fn(usize) -> bool + Sync + Send + 'a {
    move |k| c.is(k, suffix)
}

pub const ROTATION_CURVE_SHELLS: usize = 24;

/// The page's read-out of a galaxy; `in_disk(k)` and `in_halo(k)` say
/// whether particle k belongs to a disk or to a dark halo.
pub fn galaxy_readout(
    p: &Particles,
    in_disk: impl Fn(usize) -> bool + Sync + Send,
    in_halo: impl Fn(usize) -> bool + Sync + Send,
) -> GalaxyReadout {
    galaxy_readout_of(p, in_disk, in_halo, p)
}

/// `galaxy_readout` with the black holes' separation taken among
/// `heaviest`'s particles (a light read-out's sample weighs its particles
/// for many, and keeps the marked ones apart: `PlotRead::Sampled`).
pub fn galaxy_readout_of(
    p: &Particles,
    in_disk: impl Fn(usize) -> bool + Sync + Send,
    in_halo: impl Fn(usize) -> bool + Sync + Send,
    heaviest: &Particles,
) -> GalaxyReadout {
    let center = density_center(&p.pos_mass);
    let r = lagrangian_radii(&p.pos_mass, center, &[0.01, 0.9]);
    let curve = |pos: &[PosMass]| -> Vec<[f64; 2]> {
        if r[0] > 0.0 && r[1] > r[0] {
            spherical_profile(pos, center, r[0], r[1], ROTATION_CURVE_SHELLS)
                .iter()
                .map(|s| [s.r_out, s.v_circ])
                .collect()
        } else {
            Vec::new()
        }
    };
    let rotation_curve = curve(&p.pos_mass);
    let visible = select(p, |k| !in_halo(k));
    let without_halo = if visible.len() < p.len() && !visible.is_empty() {
        curve(&visible.pos_mass)
    } else {
        Vec::new()
    };
    let disk = select(p, in_disk);
    let bar_a2 = (disk.len() >= 16).then(|| {
        let f = Frame::of(&disk);
        bar_mode(&f.cyl, f.radii[2]).a2
    });
    let bh_separation = two_heaviest(heaviest).and_then(|(a, b)| separation(heaviest, a, b));
    GalaxyReadout {
        rotation_curve,
        without_halo,
        bar_a2,
        bh_separation,
    }
}
