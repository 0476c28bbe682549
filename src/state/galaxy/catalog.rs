//! The named galaxies behind the `--model` choices, with their parameters
//! and units. N-body units (G = 1) unless said otherwise; the Milky Way
//! and the Bonsai merger's galaxies are in Bonsai units (`units`).

use super::disk::{Disk, DiskGalaxy};
use super::merger::{Galaxy, Merger, MinorMergers, Orbit, Spin};
use super::profile::Shape;
use super::spherical::{Component, Kind, SphericalGalaxy};
use super::units::{msun, KPC};
use crate::error::{Error, Result};

/// A galaxy of one component of unit mass, `shape` truncated at `r_t`.
pub fn single(name: &'static str, shape: Shape, r_t: f64) -> SphericalGalaxy {
    SphericalGalaxy {
        components: vec![Component::truncated(name, 1.0, shape, r_t)],
    }
}

/// Hernquist (1990) sphere, M = a = 1, truncated at 100 a (98 % of the
/// untruncated mass lies inside).
pub fn hernquist() -> SphericalGalaxy {
    single("stars", Shape::Hernquist { a: 1.0 }, 100.0)
}

/// NFW halo, M = 1 (truncated mass), r_s = 1, truncated at the
/// concentration c = r_t/r_s = 10 (Kazantzidis et al.'s taper).
pub fn nfw() -> SphericalGalaxy {
    single("halo", Shape::Nfw { rs: 1.0 }, 10.0)
}

/// An elliptical: a Sérsic n = 4 (de Vaucouleurs) spheroid, M = 1,
/// R_e = 1, truncated at 30 R_e, with a central black hole of 0.0014 of
/// its mass (Häring & Rix 2004).
pub fn sersic() -> SphericalGalaxy {
    SphericalGalaxy {
        components: vec![
            Component::truncated("stars", 1.0, Shape::Sersic { re: 1.0, n: 4.0 }, 30.0),
            Component::black_hole(0.0014),
        ],
    }
}

/// A disk galaxy in the spirit of Hernquist (1993): disk M = 1, R_d = 1,
/// z₀ = 0.1, Toomre Q `toomre_q` at 2.5 R_d (1.2 by default: spiral arms
/// within a few rotations, 1.5 and above nearly quiet); Hernquist bulge
/// of 0.2 with a = 0.2; NFW halo of 5 within r_t = 30, r_s = 5 (v_c ≈ 0.76
/// and a rotation period of ~20 time units at 2.5 R_d).
pub fn disk_galaxy(toomre_q: f64) -> DiskGalaxy {
    DiskGalaxy {
        disk: Disk::new(1.0, 1.0, 0.1, toomre_q),
        spheroid: vec![
            Component::truncated("halo", 5.0, Shape::Nfw { rs: 5.0 }, 30.0),
            Component::truncated("bulge", 0.2, Shape::Hernquist { a: 0.2 }, 20.0),
        ],
    }
}

/// The Gordon Bell paper's Milky Way (Bédorf et al. 2014) in Bonsai units:
/// NFW halo 6.0e11 M☉ (r_s = 20 kpc, truncated at 200 kpc), exponential
/// disk 5.0e10 M☉ (R_d = 2.8 kpc, z₀ = 0.3 kpc, Toomre Q `toomre_q` at
/// 2.5 R_d; 1.2, cool enough to grow a bar and spiral arms, by default),
/// Hernquist bulge 4.6e9 M☉ (a = 0.7 kpc, truncated at 20 kpc).
pub fn milky_way(toomre_q: f64) -> DiskGalaxy {
    DiskGalaxy {
        disk: Disk::new(msun(5.0e10), 2.8 * KPC, 0.3 * KPC, toomre_q),
        spheroid: vec![
            Component::truncated(
                "halo",
                msun(6.0e11),
                Shape::Nfw { rs: 20.0 * KPC },
                200.0 * KPC,
            ),
            Component::truncated(
                "bulge",
                msun(4.6e9),
                Shape::Hernquist { a: 0.7 * KPC },
                20.0 * KPC,
            ),
        ],
    }
}

/// A spherical galaxy of `mass` (Bonsai units) as in the Bonsai paper's
/// merger: NFW dark halo (5/6 of the mass: 10⁵ dark and 2×10⁴ star
/// particles of one mass), Hernquist stellar spheroid (1/6) and a central
/// black hole of 0.0014 of the stars (Häring & Rix 2004). Lengths grow as
/// mass^(1/3) (equal mean density, so equal dynamical times); at
/// mass = 180 (4.2e11 M☉): r_s = 12 kpc, r_t = 120 kpc, a = 2 kpc.
pub fn merger_galaxy(mass: f64) -> SphericalGalaxy {
    let s = (mass / 180.0).cbrt();
    let stars = mass / 6.0;
    SphericalGalaxy {
        components: vec![
            Component::truncated("halo", mass - stars, Shape::Nfw { rs: 12.0 * s }, 120.0 * s),
            Component::truncated("stars", stars, Shape::Hernquist { a: 2.0 * s }, 40.0 * s),
            Component::black_hole(0.0014 * stars),
        ],
    }
}

/// The primary of the minor mergers (thesis ch. 5): an NFW halo (mass
/// 0.8 · `mass`, r_s = 1, r_t = 10, lengths scaled by mass^(1/3)) and a
/// Sérsic n = 3 bulge (0.2 · `mass`, R_e = 0.2), no disk.
pub fn minor_merger_galaxy(mass: f64) -> SphericalGalaxy {
    let s = mass.cbrt();
    SphericalGalaxy {
        components: vec![
            Component::truncated("halo", 0.8 * mass, Shape::Nfw { rs: s }, 10.0 * s),
            Component::truncated(
                "bulge",
                0.2 * mass,
                Shape::Sersic {
                    re: 0.2 * s,
                    n: 3.0,
                },
                5.0 * s,
            ),
        ],
    }
}

/// The Bonsai paper's merger (Bédorf et al. 2012, §4.3): two galaxies of
/// `merger_galaxy`, the primary of 4.2e11 M☉ and the secondary lighter by
/// `mass_ratio` (3 in the paper), on a parabolic orbit with pericentre
/// `pericenter` kpc (10 in the paper), starting 160 kpc apart (past the
/// primary's halo truncation; pericentre after ~70 time units, 0.7 Gyr),
/// half the particles in each. The secondary's spin is tilted by 60° so a
/// disk galaxy swapped in meets the primary off-plane.
pub fn bonsai_merger(mass_ratio: f64, pericenter: f64) -> Merger {
    Merger {
        primary: Galaxy::Spherical(merger_galaxy(180.0)),
        secondary: Galaxy::Spherical(merger_galaxy(180.0 / mass_ratio)),
        orbit: Orbit {
            pericenter: pericenter * KPC,
            eccentricity: 1.0,
            separation: 160.0 * KPC,
        },
        primary_spin: Spin::default(),
        secondary_spin: Spin {
            inclination: std::f64::consts::FRAC_PI_3,
            azimuth: 0.0,
        },
        primary_share: 0.5,
    }
}

/// Galaxy Crash's default dark-halo mass in units of a galaxy's stellar
/// (disk + bulge) mass: the Milky Way model's 6.0e11 / 5.46e10 = 10.99,
/// rounded. A halo of this mass has `milky_way`'s lengths.
pub const CRASH_HALO: f64 = 11.0;

/// A Milky-Way-like disk galaxy for Galaxy Crash: `milky_way`'s disk and
/// bulge (5.46e10 M☉ of stars) times `scale` in mass, their lengths times
/// scale^(1/3) (equal mean density, as `merger_galaxy`), with Toomre Q
/// `toomre_q`; and an NFW dark halo of `halo` times the stellar mass, none
/// where `halo` is 0. The halo's lengths (r_s = 20 kpc, truncated at
/// r_t = 200 kpc for the Milky Way's mass, `CRASH_HALO`) grow as its mass
/// to the 1/3 too: every halo has the Milky Way's mean density inside r_t
/// and its concentration c = 10, so a heavier halo is also a larger one,
/// as in Dubinski, Mihos & Hernquist's (1996) study of tidal tails in
/// haloes of different masses.
pub fn crash_galaxy(scale: f64, halo: f64, toomre_q: f64) -> DiskGalaxy {
    let s = scale.cbrt();
    let stars = msun(5.46e10) * scale;
    let mut spheroid = Vec::new();
    if halo > 0.0 {
        let h = s * (halo / CRASH_HALO).cbrt();
        spheroid.push(Component::truncated(
            "halo",
            halo * stars,
            Shape::Nfw { rs: 20.0 * KPC * h },
            200.0 * KPC * h,
        ));
    }
    spheroid.push(Component::truncated(
        "bulge",
        msun(4.6e9) * scale,
        Shape::Hernquist { a: 0.7 * KPC * s },
        20.0 * KPC * s,
    ));
    DiskGalaxy {
        disk: Disk::new(msun(5.0e10) * scale, 2.8 * KPC * s, 0.3 * KPC * s, toomre_q),
        spheroid,
    }
}

/// Where a disk galaxy ends: the largest truncation radius of its
/// spheroid's components, or the disk's cut (10 R_d) if that is larger.
pub fn outer_radius(g: &DiskGalaxy) -> f64 {
    g.spheroid
        .iter()
        .filter_map(|c| match c.kind {
            Kind::Profile(p) => Some(p.r_t),
            Kind::PointMass => None,
        })
        .fold(g.disk.max_radius, f64::max)
}

/// The successor of Chris Mihos's Java applet "Galaxy Crash": two
/// `crash_galaxy` disks with live haloes, in Bonsai units, the secondary
/// lighter by `mass_ratio` (lengths by its cube root), on a parabolic
/// orbit with pericentre `pericenter` kpc in the xy plane (orbital angular
/// momentum along +z).
///
/// - Each disk's spin is tilted from the orbit's angular momentum by its
///   inclination in `inclinations` (degrees; 0: prograde in the orbit's
///   plane, 90: polar, 180: retrograde in the plane). Both tilt about the
///   x axis, the line joining the centres at pericentre: the line of
///   nodes passes through pericentre (Toomre & Toomre's ω = 0).
/// - `halo`: each halo's mass in units of its galaxy's stellar mass
///   (`crash_galaxy`; 0: no halo).
/// - The galaxies start as far apart as their outer radii (`outer_radius`)
///   add up to, so the haloes' truncation radii just touch: spheres that
///   do not overlap attract as point masses, so the start is the point
///   masses' parabola the orbit assumes (only the haloes' tapers beyond
///   r_t overlap). With the Milky Way's halo that is 200 (1 + ratio^(-1/3))
///   kpc, 339 kpc for 1:3, and the point masses reach pericentre after
///   158 time units (1.55 Gyr; `Orbit::time_to_pericenter`); the start is
///   at least twice the pericentre apart, for small haloes and wide
///   pericentres. Once the haloes overlap, each pulls the other with only
///   the mass inside: at the defaults (1:3, 10 kpc) the stellar centres
///   come closest later and wider, at t ≈ 165-170 (1.6-1.7 Gyr) and
///   17-21 kpc apart (two seeds at N = 4096, direct sum, ε = 0.2 kpc).
/// - Half the particles in each galaxy (as `bonsai_merger`): the
///   secondary's are lighter by the mass ratio, so its disk, whose tails
///   are the show in unequal encounters, is as well resolved as the
///   primary's.
pub fn galaxy_crash(
    mass_ratio: f64,
    pericenter: f64,
    inclinations: (f64, f64),
    halo: f64,
    toomre_q: f64,
) -> Result<Merger> {
    let checks = [
        (
            mass_ratio.is_finite() && mass_ratio > 0.0,
            "the mass ratio must be positive",
        ),
        (
            pericenter.is_finite() && pericenter > 0.0,
            "the pericentre must be positive",
        ),
        (
            halo.is_finite() && halo >= 0.0,
            "the halo mass must be 0 or more",
        ),
        (
            inclinations.0.is_finite() && inclinations.1.is_finite(),
            "the inclinations must be numbers",
        ),
    ];
    if let Some((_, what)) = checks.iter().find(|(ok, _)| !ok) {
        return Err(Error::InvalidParameter(format!(
            "galaxy-crash: {what} (ratio {mass_ratio}, pericentre {pericenter} kpc, \
             halo {halo}, inclinations {} and {} degrees)",
            inclinations.0, inclinations.1
        )));
    }
    let primary = crash_galaxy(1.0, halo, toomre_q);
    let secondary = crash_galaxy(1.0 / mass_ratio, halo, toomre_q);
    let separation =
        (outer_radius(&primary) + outer_radius(&secondary)).max(2.0 * pericenter * KPC);
    let spin = |degrees: f64| Spin {
        inclination: degrees.to_radians(),
        azimuth: 0.0,
    };
    Ok(Merger {
        primary: Galaxy::Disk(primary),
        secondary: Galaxy::Disk(secondary),
        orbit: Orbit {
            pericenter: pericenter * KPC,
            eccentricity: 1.0,
            separation,
        },
        primary_spin: spin(inclinations.0),
        secondary_spin: spin(inclinations.1),
        primary_share: 0.5,
    })
}

/// Minor mergers in N-body units: `minor_merger_galaxy(1)` with `count`
/// satellites (8 by default) of 1:10 each, starting between 4 and 8
/// (inside the halo's truncation at 10) with 0.3–0.7 of the circular
/// speed.
pub fn minor_mergers(count: usize) -> MinorMergers {
    MinorMergers {
        primary: Galaxy::Spherical(minor_merger_galaxy(1.0)),
        satellite: minor_merger_galaxy,
        count,
        mass_ratio: 0.1,
        radii: (4.0, 8.0),
        speed_fraction: (0.3, 0.7),
    }
}
