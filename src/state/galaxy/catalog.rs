//! The named galaxies behind the `--model` choices, with their parameters
//! and units. N-body units (G = 1) unless said otherwise; the Milky Way
//! and the Bonsai merger's galaxies are in Bonsai units (`units`).

use super::disk::{Disk, DiskGalaxy};
use super::merger::{Galaxy, Merger, MinorMergers, Orbit, Spin};
use super::profile::Shape;
use super::spherical::{Component, SphericalGalaxy};
use super::units::{msun, KPC};

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
