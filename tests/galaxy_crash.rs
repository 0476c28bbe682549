//! The galaxy-crash model (after Chris Mihos's applet "Galaxy Crash"):
//! two Milky-Way-like disks on a parabolic orbit. Its masses and mass
//! ratio, the orbit of the two centres of mass, each disk's inclination
//! to the orbit, the halo mass, the refusal of bad parameters, the
//! centre-of-mass frame, each galaxy's equilibrium and determinism. CPU
//! only, a few thousand particles.
#![cfg(not(target_arch = "wasm32"))]

use webgrav::app::settings::Settings;
use webgrav::direct::reference;
use webgrav::render::map::Units;
use webgrav::run::params::{model_params, validate_model_params};
use webgrav::state::galaxy::catalog::{self, crash_galaxy, galaxy_crash, CRASH_HALO};
use webgrav::state::galaxy::units::msun;
use webgrav::state::galaxy::RealizeOnCpu;
use webgrav::state::galaxy::{Galaxy, Realization};
use webgrav::state::{Diagnostics, Model, ModelParams};

fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn angle_degrees(a: [f64; 3], b: [f64; 3]) -> f64 {
    let c = (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) / (norm(a) * norm(b));
    c.clamp(-1.0, 1.0).acos().to_degrees()
}

/// The particles of `g` whose component's name passes `keep`, as a
/// realization of their own (same component list).
fn select(g: &Realization, keep: impl Fn(&str) -> bool) -> Realization {
    let mut out = Realization {
        components: g.components.clone(),
        ..Default::default()
    };
    for k in 0..g.len() {
        if keep(&g.components[g.tag[k] as usize]) {
            out.push(g.pos[k], g.vel[k], g.mass[k], g.tag[k]);
        }
    }
    out
}

/// One galaxy of the pair ("primary" or "secondary").
fn galaxy(g: &Realization, which: &str) -> Realization {
    let prefix = format!("{which} ");
    select(g, |name| name.starts_with(&prefix))
}

/// The stellar (disk + bulge) mass of the Milky Way model, mass units.
fn stars() -> f64 {
    msun(5.0e10 + 4.6e9)
}

#[test]
fn masses_and_mass_ratio_are_the_requested_ones() {
    for (ratio, halo) in [(3.0, CRASH_HALO), (1.0, 0.0), (10.0, 25.0)] {
        let m = galaxy_crash(ratio, 10.0, (0.0, 60.0), halo, 1.2).unwrap();
        let g = m.realize(3000, 1).unwrap();
        let (m1, m2) = (
            galaxy(&g, "primary").total_mass(),
            galaxy(&g, "secondary").total_mass(),
        );
        // The primary: the Milky Way's stars and `halo` times their mass
        // in dark matter.
        let expected = (1.0 + halo) * stars();
        println!("ratio {ratio}, halo {halo}: masses {m1:.6} {m2:.6} (primary {expected:.6})");
        assert!((m1 / expected - 1.0).abs() < 1e-6, "{m1} {expected}");
        assert!((m1 / m2 / ratio - 1.0).abs() < 1e-6, "{}", m1 / m2);
        assert!((g.total_mass() / (expected * (1.0 + 1.0 / ratio)) - 1.0).abs() < 1e-6);
        // Half the particles in each galaxy.
        assert_eq!(galaxy(&g, "primary").len(), 1500);
    }
}

#[test]
fn components_are_named_for_the_renderer_and_the_files() {
    let t = Model::GalaxyCrash.generate_tagged(2000, 3).unwrap();
    assert_eq!(
        t.components,
        [
            "primary halo",
            "primary bulge",
            "primary disk",
            "secondary halo",
            "secondary bulge",
            "secondary disk"
        ]
    );
    // Gadget-2's kinds: halo 1, disk 2, bulge 3.
    let types = t.types().unwrap();
    for (k, kind) in [1u8, 3, 2, 1, 3, 2].into_iter().enumerate() {
        let first = t.tags.iter().position(|&tag| tag as usize == k).unwrap();
        assert_eq!(types[first], kind, "{}", t.components[k]);
    }
    // The secondary's stars are drawn in their own hues.
    use webgrav::render::components::style_of;
    for part in ["disk", "bulge"] {
        let (a, _) = style_of(&format!("primary {part}"), false, 0);
        let (b, _) = style_of(&format!("secondary {part}"), false, 0);
        assert_ne!(a.color, b.color, "{part}");
    }
    assert_eq!(Units::of_model(Model::GalaxyCrash), Units::Bonsai);
}

#[test]
fn the_centres_of_mass_start_on_the_requested_parabola() {
    for (ratio, rperi, halo) in [(3.0, 10.0, CRASH_HALO), (1.0, 25.0, 5.0), (20.0, 5.0, 0.0)] {
        let m = galaxy_crash(ratio, rperi, (30.0, 120.0), halo, 1.2).unwrap();
        let g = m.realize(3000, 7).unwrap();
        let (a, b) = (galaxy(&g, "primary"), galaxy(&g, "secondary"));
        let (xa, va) = a.center_of_mass();
        let (xb, vb) = b.center_of_mass();
        let mass = a.total_mass() + b.total_mass();
        let dx: [f64; 3] = std::array::from_fn(|k| xb[k] - xa[k]);
        let dv: [f64; 3] = std::array::from_fn(|k| vb[k] - va[k]);
        let (d, v2) = (norm(dx), norm(dv).powi(2));
        // Energy of the relative orbit (zero on a parabola) against the
        // potential's scale; pericentre from h and E.
        let energy = 0.5 * v2 - mass / d;
        let h = norm(cross(dx, dv));
        let e = (1.0 + 2.0 * energy * h * h / (mass * mass)).max(0.0).sqrt();
        let pericentre = h * h / mass / (1.0 + e);
        // The start: the outer radii touch (haloes' truncation radii,
        // 200 kpc for the Milky Way's halo, scaled by mass^(1/3)).
        let (ga, gb) = match (&m.primary, &m.secondary) {
            (Galaxy::Disk(a), Galaxy::Disk(b)) => (a, b),
            _ => panic!("two disk galaxies"),
        };
        let touching = catalog::outer_radius(ga) + catalog::outer_radius(gb);
        println!(
            "ratio {ratio} rperi {rperi} halo {halo}: separation {d:.3} (outer radii {touching:.3}), \
             E/(M/d) {:.2e}, e {e:.6}, r_p {pericentre:.5}, approaching {:.3}",
            energy / (mass / d),
            (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) / (d * norm(dv))
        );
        assert!((energy / (mass / d)).abs() < 1e-6);
        assert!((pericentre / rperi - 1.0).abs() < 0.01);
        assert!((d / touching.max(2.0 * rperi) - 1.0).abs() < 1e-9);
        // On the way in, in the xy plane (angular momentum along +z).
        assert!(dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2] < 0.0);
        let l = cross(dx, dv);
        assert!(l[2] > 0.0 && angle_degrees(l, [0.0, 0.0, 1.0]) < 1e-6);
        if halo == CRASH_HALO {
            let expected = 200.0 * (1.0 + ratio.powf(-1.0 / 3.0));
            assert!((d / expected - 1.0).abs() < 1e-9, "{d} {expected}");
            // The defaults' point masses reach pericentre after 158 time
            // units (1.55 Gyr), as the model's documentation says.
            let t = m.orbit.time_to_pericenter(mass).unwrap();
            println!("time to pericentre {t:.2} ({:.0} Myr)", t * 9.78);
            assert!((t - 158.1).abs() < 0.1, "{t}");
        }
    }
}

#[test]
fn each_disk_is_inclined_to_the_orbit_as_requested() {
    // At 4000 particles each disk has 153: the spin of a cold disk is
    // still defined to a fraction of a degree.
    for (i1, i2) in [(0.0, 60.0), (30.0, 150.0), (90.0, 180.0), (180.0, 0.0)] {
        let m = galaxy_crash(3.0, 10.0, (i1, i2), CRASH_HALO, 1.2).unwrap();
        let g = m.realize(4000, 11).unwrap();
        let (a, b) = (galaxy(&g, "primary"), galaxy(&g, "secondary"));
        let (xa, va) = a.center_of_mass();
        let (xb, vb) = b.center_of_mass();
        let orbit = cross(
            std::array::from_fn(|k| xb[k] - xa[k]),
            std::array::from_fn(|k| vb[k] - va[k]),
        );
        for (which, requested) in [("primary", i1), ("secondary", i2)] {
            let disk = select(&g, |name| name == format!("{which} disk"));
            let (x0, v0) = disk.center_of_mass();
            let mut spin = [0.0; 3];
            for k in 0..disk.len() {
                let x: [f64; 3] = std::array::from_fn(|c| disk.pos[k][c] - x0[c]);
                let v: [f64; 3] = std::array::from_fn(|c| disk.vel[k][c] - v0[c]);
                let l = cross(x, v);
                for c in 0..3 {
                    spin[c] += disk.mass[k] * l[c];
                }
            }
            let angle = angle_degrees(spin, orbit);
            // The tilt is about the x axis (the line of nodes through
            // pericentre): the spin stays in the yz plane.
            let off_plane = (spin[0] / norm(spin)).asin().to_degrees();
            println!(
                "{which} disk ({} particles): {angle:.3}° (requested {requested}), {off_plane:.3}° off the yz plane",
                disk.len()
            );
            assert!((angle - requested).abs() < 2.0, "{which}: {angle}");
            assert!(off_plane.abs() < 2.0, "{which}: {off_plane}");
        }
    }
}

#[test]
fn retrograde_flips_the_disks_spin() {
    let spin = |incl: f64| {
        let g = galaxy_crash(2.0, 10.0, (incl, incl), CRASH_HALO, 1.2)
            .unwrap()
            .realize(2000, 5)
            .unwrap();
        let disk = select(&g, |name| name == "secondary disk");
        let (x0, v0) = disk.center_of_mass();
        let mut s = [0.0; 3];
        for k in 0..disk.len() {
            let l = cross(
                std::array::from_fn(|c| disk.pos[k][c] - x0[c]),
                std::array::from_fn(|c| disk.vel[k][c] - v0[c]),
            );
            for c in 0..3 {
                s[c] += disk.mass[k] * l[c];
            }
        }
        s
    };
    let (pro, retro) = (spin(0.0), spin(180.0));
    println!("prograde {pro:?}, retrograde {retro:?}");
    // Along the orbit's angular momentum (+z), and against it.
    assert!(angle_degrees(pro, [0.0, 0.0, 1.0]) < 2.0);
    assert!(angle_degrees(retro, [0.0, 0.0, 1.0]) > 178.0);
    // The same disk turned over about the line of nodes (x): the
    // components across it change sign.
    for (c, sign) in [(0, 1.0), (1, -1.0), (2, -1.0)] {
        assert!((retro[c] - sign * pro[c]).abs() < 1e-9 * norm(pro), "{c}");
    }
}

#[test]
fn the_halo_mass_is_the_requested_multiple_of_the_stars() {
    for halo in [0.5, 5.0, CRASH_HALO, 30.0] {
        // The model: exactly `halo` times the stars, in each galaxy.
        let g1 = crash_galaxy(1.0, halo, 1.2);
        let g3 = crash_galaxy(1.0 / 3.0, halo, 1.2);
        for (g, scale) in [(&g1, 1.0), (&g3, 1.0 / 3.0)] {
            let dark = g.spheroid[0].mass;
            let stellar = g.total_mass() - dark;
            assert_eq!(g.spheroid[0].name, "halo");
            assert!((stellar / (stars() * scale) - 1.0).abs() < 1e-12);
            assert!((dark / (halo * stellar) - 1.0).abs() < 1e-12, "{halo}");
        }
        // The realization: within one particle of it (the split by mass).
        let g = galaxy_crash(3.0, 10.0, (0.0, 60.0), halo, 1.2)
            .unwrap()
            .realize(4000, 2)
            .unwrap();
        for (which, scale) in [("primary", 1.0), ("secondary", 1.0 / 3.0)] {
            let tag = g
                .components
                .iter()
                .position(|c| *c == format!("{which} halo"))
                .unwrap() as u32;
            let particle = g.mass[g.tag.iter().position(|&t| t == tag).unwrap()];
            let dark = g.component_mass(tag);
            println!(
                "halo {halo}: {which} halo {dark:.4} (requested {:.4})",
                halo * stars() * scale
            );
            assert!((dark - halo * stars() * scale).abs() <= particle * (1.0 + 1e-9));
        }
    }
    // The Milky Way's halo at the default: 6.0e11 M☉ within 0.1 %.
    assert!(
        (crash_galaxy(1.0, CRASH_HALO, 1.2).spheroid[0].mass / msun(6.0e11) - 1.0).abs() < 1e-3
    );
    // No halo: the stars alone, in equilibrium in their own potential.
    let g = galaxy_crash(3.0, 10.0, (0.0, 60.0), 0.0, 1.2)
        .unwrap()
        .realize(3000, 4)
        .unwrap();
    assert!(!g.components.iter().any(|c| c.ends_with("halo")));
    assert!((g.total_mass() / (stars() * (1.0 + 1.0 / 3.0)) - 1.0).abs() < 1e-9);
    // The default parameters are the Milky Way's halo.
    assert_eq!(ModelParams::default().halo_mass, CRASH_HALO);
}

#[test]
fn bad_parameters_are_refused_with_their_ranges() {
    // The table's ranges, with the key in the message.
    for ((incl1, incl2, mhalo), words) in [
        (
            (-1.0, 60.0, 11.0),
            "incl1 = -1: expected a number in [0, 180]",
        ),
        (
            (0.0, 181.0, 11.0),
            "incl2 = 181: expected a number in [0, 180]",
        ),
        (
            (0.0, 60.0, 40.0),
            "mhalo = 40: expected a number in [0, 30]",
        ),
    ] {
        let e = model_params(1.2, 3.0, 10.0, 8.0, incl1, incl2, mhalo)
            .unwrap_err()
            .to_string();
        assert!(e.contains(words), "{e}");
        let p = ModelParams {
            inclination1: incl1,
            inclination2: incl2,
            halo_mass: mhalo,
            ..ModelParams::default()
        };
        assert!(validate_model_params(&p)
            .unwrap_err()
            .to_string()
            .contains(words));
    }
    let e = model_params(1.2, 3.0, 0.0, 8.0, 0.0, 60.0, 11.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rperi = 0: expected a number > 0"), "{e}");
    // The URL warns and keeps the defaults.
    let (s, warnings) = Settings::from_query("model=galaxy-crash&incl1=200&incl2=-3&mhalo=abc");
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings[0].contains("incl1=200") && warnings[0].contains("[0, 180]"));
    assert_eq!(s.model_params, ModelParams::default());
    // The generator itself refuses what no galaxy can be, in words.
    for (ratio, rperi, halo, what) in [
        (0.0, 10.0, 11.0, "mass ratio must be positive"),
        (3.0, -1.0, 11.0, "pericentre must be positive"),
        (3.0, 10.0, -2.0, "halo mass must be 0 or more"),
        (3.0, 10.0, f64::NAN, "halo mass must be 0 or more"),
    ] {
        let p = ModelParams {
            mass_ratio: ratio,
            pericenter: rperi,
            halo_mass: halo,
            ..ModelParams::default()
        };
        let e = Model::GalaxyCrash
            .generate_with(1000, 1, &p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("galaxy-crash") && e.contains(what), "{e}");
    }
    let e = galaxy_crash(3.0, 10.0, (f64::INFINITY, 0.0), 11.0, 1.2).unwrap_err();
    assert!(
        e.to_string().contains("inclinations must be numbers"),
        "{e}"
    );
}

#[test]
fn the_model_is_in_the_centre_of_mass_frame() {
    let p = ModelParams {
        mass_ratio: 4.0,
        pericenter: 20.0,
        inclination1: 45.0,
        inclination2: 135.0,
        halo_mass: 8.0,
        ..ModelParams::default()
    };
    let g = galaxy_crash(4.0, 20.0, (45.0, 135.0), 8.0, 1.2)
        .unwrap()
        .realize(3000, 9)
        .unwrap();
    let (x, v) = g.center_of_mass();
    println!("f64: |com| {:.2e}, |v_com| {:.2e}", norm(x), norm(v));
    assert!(norm(x) < 1e-9 && norm(v) < 1e-12);
    // The f32 particles the model hands on: the momentum over the sum of
    // |m v| is f32 rounding.
    let t = Model::GalaxyCrash.generate_with(3000, 9, &p).unwrap();
    let (mut momentum, mut scale) = ([0.0f64; 3], 0.0f64);
    for (pm, v) in t.particles.pos_mass.iter().zip(&t.particles.vel) {
        let u = v.vel.map(f64::from);
        for c in 0..3 {
            momentum[c] += pm.mass as f64 * u[c];
        }
        scale += pm.mass as f64 * norm(u);
    }
    println!("f32: |p| / Σ m|v| = {:.2e}", norm(momentum) / scale);
    assert!(norm(momentum) / scale < 1e-6);
}

#[test]
fn each_galaxy_starts_in_virial_equilibrium() {
    // 2K/|W| of each galaxy in its own frame, W from the unsoftened f64
    // direct sum of its own particles: with a halo within the few per cent
    // the cusps' innermost particles scatter W by (the Milky Way's test).
    // Without one the disk's self-gravity dominates, and its moments take
    // the razor-thin disk's v_c for the sech² disk of z₀ = 0.11 R_d, whose
    // midplane pull is weaker: 2K/|W| ≈ 1.07 (1.00 at z₀ = 0.01 R_d),
    // which relaxes within the first rotation.
    for (halo, tol) in [(CRASH_HALO, 0.06), (0.0, 0.12)] {
        let g = galaxy_crash(3.0, 10.0, (0.0, 60.0), halo, 1.2)
            .unwrap()
            .realize(4000, 12)
            .unwrap();
        for which in ["primary", "secondary"] {
            let mut part = galaxy(&g, which);
            part.center();
            let f = reference::forces(&part.particles().pos_mass, 0.0);
            let d = Diagnostics::sum(
                (0..part.len()).map(|k| (part.mass[k], part.pos[k], part.vel[k], f[k].pot)),
            );
            println!("halo {halo}, {which}: 2K/|W| = {:.4}", d.virial_ratio);
            assert!((d.virial_ratio - 1.0).abs() < tol, "{which}");
        }
    }
}

#[test]
fn the_model_is_deterministic_per_seed() {
    let p = ModelParams {
        mass_ratio: 2.0,
        pericenter: 15.0,
        inclination1: 20.0,
        inclination2: 170.0,
        halo_mass: 3.0,
        ..ModelParams::default()
    };
    let a = Model::GalaxyCrash.generate_with(2500, 8, &p).unwrap();
    assert_eq!(a, Model::GalaxyCrash.generate_with(2500, 8, &p).unwrap());
    let b = Model::GalaxyCrash.generate_with(2500, 9, &p).unwrap();
    assert_ne!(a.particles, b.particles);
    // Another parameter, another model from the same seed.
    let q = ModelParams {
        inclination2: 10.0,
        ..p
    };
    assert_ne!(
        a.particles,
        Model::GalaxyCrash
            .generate_with(2500, 8, &q)
            .unwrap()
            .particles
    );
    a.particles.validate().unwrap();
}

#[test]
fn the_url_sets_the_models_parameters() {
    let (s, warnings) = Settings::from_query(
        "model=galaxy-crash&ratio=2&rperi=15&incl1=30&incl2=150&mhalo=5&q=1.5",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    let p = s.model_params;
    assert_eq!(
        (
            p.mass_ratio,
            p.pericenter,
            p.inclination1,
            p.inclination2,
            p.halo_mass,
            p.toomre_q
        ),
        (2.0, 15.0, 30.0, 150.0, 5.0, 1.5)
    );
    // The canonical query names the model's parameters, and only its.
    let q = s.to_query(false);
    for words in [
        "incl1=30",
        "incl2=150",
        "mhalo=5",
        "ratio=2",
        "rperi=15",
        "q=1.5",
    ] {
        assert!(q.contains(words), "{q}");
    }
    assert!(!q.contains("satellites="), "{q}");
    let (plummer, _) = Settings::from_query("model=plummer");
    assert!(!plummer.to_query(false).contains("incl1="));
    // The settings' model is the library's.
    assert_eq!(
        s.generate().unwrap(),
        Model::GalaxyCrash
            .generate_with(s.n as usize, s.seed as u64, &p)
            .unwrap()
    );
}
