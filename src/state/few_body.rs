//! Few-body models for the orbit lessons: a star with the Sun's planets,
//! and the three-body figure-eight. Both are exact initial conditions (no
//! sampling), meant for the Hermite integrators with ε = 0.

use super::particles::Particles;
use super::rng::Rng;
use crate::error::{Error, Result};
use crate::gpu::layout::{PosMass, Velocity};

/// Most bodies whose states a run samples every frame (the page's trails
/// and orbit read-outs, `app::orbits`).
pub const MAX_TRACKED_BODIES: usize = 64;

/// The state of every body of a few-body run at time `t`, in f64, with
/// the accelerations that make interpolation between samples exact to
/// high order.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub pos: Vec<[f64; 3]>,
    pub vel: Vec<[f64; 3]>,
    pub acc: Vec<[f64; 3]>,
}

/// One of the Sun's planets: name, semi-major axis (AU), eccentricity and
/// mass (solar masses); J2000 mean elements, rounded.
pub struct Planet {
    pub name: &'static str,
    pub semi_major_axis: f64,
    pub eccentricity: f64,
    pub mass: f64,
}

/// The Sun's planets in order from the Sun (Earth's mass includes the
/// Moon's: the pair orbits the Sun as one body).
pub const PLANETS: [Planet; 8] = [
    planet("Mercury", 0.387, 0.206, 1.660e-7),
    planet("Venus", 0.723, 0.007, 2.448e-6),
    planet("Earth", 1.000, 0.017, 3.040e-6),
    planet("Mars", 1.524, 0.093, 3.227e-7),
    planet("Jupiter", 5.203, 0.049, 9.548e-4),
    planet("Saturn", 9.537, 0.057, 2.859e-4),
    planet("Uranus", 19.19, 0.046, 4.366e-5),
    planet("Neptune", 30.07, 0.010, 5.151e-5),
];

const fn planet(name: &'static str, a: f64, e: f64, mass: f64) -> Planet {
    Planet {
        name,
        semi_major_axis: a,
        eccentricity: e,
        mass,
    }
}

/// Period of the figure-eight choreography (G = m = 1), Simó's value.
pub const FIGURE_EIGHT_PERIOD: f64 = 6.325_913_985;

/// A star of one solar mass with the first `n − 1` of the Sun's planets,
/// in units of AU and solar masses with G = 1 (so a year is 2π time
/// units). Each planet starts at its perihelion, in one plane, with its
/// perihelion's direction drawn from `seed`; the system is moved to its
/// centre-of-mass frame. The orbits are the two-body ellipses of each
/// planet around the star, μ = G (M + m), so T²/a³ = 1/(1 + m) yr²/AU³.
/// With the bodies' names ("star", then the planets').
pub fn planets(n: usize, seed: u64) -> Result<(Particles, Vec<String>)> {
    if !(2..=PLANETS.len() + 1).contains(&n) {
        return Err(Error::InvalidParameter(format!(
            "model planets has a star and 1 to {} planets: N must be 2 to {}, got {n}",
            PLANETS.len(),
            PLANETS.len() + 1
        )));
    }
    let mut bodies = vec![([0.0; 3], [0.0; 3], 1.0)];
    for (k, p) in PLANETS[..n - 1].iter().enumerate() {
        let rng = &mut Rng::for_particle(seed, 0, k as u64);
        let omega = std::f64::consts::TAU * rng.uniform();
        let (a, e) = (p.semi_major_axis, p.eccentricity);
        let r = a * (1.0 - e);
        // Vis-viva at perihelion, perpendicular to the radius.
        let v = ((1.0 + p.mass) * (1.0 + e) / r).sqrt();
        let (s, c) = omega.sin_cos();
        bodies.push(([r * c, r * s, 0.0], [-v * s, v * c, 0.0], p.mass));
    }
    let mut names = vec!["star".to_string()];
    names.extend(PLANETS[..n - 1].iter().map(|p| p.name.to_string()));
    Ok((centred(&bodies), names))
}

/// The figure-eight three-body choreography (Chenciner & Montgomery 2000;
/// Simó's initial conditions), G = m = 1: the three bodies chase each
/// other on one figure-eight curve with period `FIGURE_EIGHT_PERIOD`.
pub fn figure_eight(n: usize) -> Result<Particles> {
    if n != 3 {
        return Err(Error::InvalidParameter(format!(
            "model figure-eight has exactly 3 bodies: N must be 3, got {n}"
        )));
    }
    let x1 = [0.970_004_36, -0.243_087_53, 0.0];
    let v3 = [-0.932_407_37, -0.864_731_46, 0.0];
    let half = [-v3[0] / 2.0, -v3[1] / 2.0, 0.0];
    let bodies = [
        (x1, half, 1.0),
        ([-x1[0], -x1[1], 0.0], half, 1.0),
        ([0.0; 3], v3, 1.0),
    ];
    Ok(centred(&bodies))
}

/// Bodies (position, velocity, mass) as particles in their
/// centre-of-mass frame, ids in order.
fn centred(bodies: &[([f64; 3], [f64; 3], f64)]) -> Particles {
    let m: f64 = bodies.iter().map(|b| b.2).sum();
    let (mut x0, mut v0) = ([0.0; 3], [0.0; 3]);
    for (x, v, mass) in bodies {
        for d in 0..3 {
            x0[d] += mass * x[d] / m;
            v0[d] += mass * v[d] / m;
        }
    }
    let f = |a: [f64; 3], b: [f64; 3]| {
        [
            (a[0] - b[0]) as f32,
            (a[1] - b[1]) as f32,
            (a[2] - b[2]) as f32,
        ]
    };
    Particles {
        pos_mass: bodies
            .iter()
            .map(|(x, _, mass)| PosMass {
                pos: f(*x, x0),
                mass: *mass as f32,
            })
            .collect(),
        vel: bodies
            .iter()
            .map(|(_, v, _)| Velocity::new(f(*v, v0)))
            .collect(),
        id: (0..bodies.len() as u64).collect(),
    }
}
