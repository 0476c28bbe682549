//! The renderer offscreen (what `webgrav render` writes), checked by
//! measured properties: sprites land where the camera puts them, light and
//! mass are conserved and summed the same in any order, the GPU's exposure
//! is its CPU twin's, a picture fills the range whatever N, a Plummer
//! sphere's surface density follows its formula, the view fits what is
//! drawn, and the CLI writes pictures, maps and series.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::app::picture::{camera_for, View};
use webgrav::gpu::layout::{PosMass, ToneUniform, Velocity};
use webgrav::gpu::GpuContext;
use webgrav::render::exposure::{bin_of, expose};
use webgrav::render::map::SurfaceDensity;
use webgrav::render::{
    render_offscreen, shell_tags, upload, Camera, ColorMode, ColorRanges, ComponentTags, MapKind,
    Offscreen, Scene, TagTotals, Tone, HIST_BINS, MARKER_COLOR, MARKER_RADIUS,
};
use webgrav::state::galaxy::RealizeOnCpu;
use webgrav::state::plummer::SCALE_RADIUS;
use webgrav::state::{Model, Particles, Tagged};

fn lit(rgba: &[u8]) -> Vec<usize> {
    rgba.chunks(4)
        .enumerate()
        .filter(|(_, p)| p[..3].iter().any(|&c| c > 0))
        .map(|(k, _)| k)
        .collect()
}

/// Draws `p` (tags `components`) with `camera`, reading the accumulation
/// back too.
fn shoot(
    ctx: &GpuContext,
    p: &Particles,
    components: &ComponentTags,
    camera: &Camera,
    (w, h): (u32, u32),
) -> Offscreen {
    let state = upload(ctx, p, None).unwrap();
    let totals = TagTotals::of(&p.pos_mass, &components.tags);
    let scene = Scene::new(ctx, &state, components, totals);
    let ranges = ColorRanges::of(&p.vel, None);
    let tone = Tone::for_map(camera.map);
    pollster::block_on(render_offscreen(
        ctx,
        &scene,
        camera,
        ranges.for_mode(camera.color_mode),
        &tone,
        w,
        h,
        true,
    ))
    .unwrap()
}

fn shells(p: &Particles) -> ComponentTags {
    ComponentTags::shells(&p.pos_mass)
}

/// The value of every pixel of the accumulation (light's brightest of r,
/// g, b; a map's mass), in units, as `render.wgsl`'s `value_of` reads it.
fn values(shot: &Offscreen, map: MapKind) -> Vec<f64> {
    let words = shot.accum.as_ref().unwrap();
    words
        .chunks_exact(4)
        .map(|w| {
            let carry = |c: u32| ((w[3] >> (10 * c)) & 1023) as f64 * 4294967296.0;
            match map {
                MapKind::Light => (0..3)
                    .map(|c| w[c] as f64 + carry(c as u32))
                    .fold(0.0, f64::max),
                MapKind::Density => w[0] as f64 + w[3] as f64 * 4294967296.0,
            }
        })
        .collect()
}

#[test]
fn one_particle_lands_at_the_centre_of_the_view() {
    let ctx = common::gpu();
    let p = Particles {
        pos_mass: vec![PosMass {
            pos: [1.0, 2.0, 3.0],
            mass: 1.0,
        }],
        vel: vec![Velocity::new([0.0; 3])],
        id: vec![0],
    };
    let mut camera = Camera {
        color_mode: ColorMode::Uniform,
        point_size: 5.0,
        smoothing: 0.0,
        ..Camera::default()
    };
    camera.fit([1.0, 2.0, 3.0], 1.0, 65, 33);
    let shot = shoot(&ctx, &p, &shells(&p), &camera, (65, 33));
    let px = lit(&shot.rgba);
    assert!(!px.is_empty());
    // A 5-pixel sprite at the target: every lit pixel within 3 of (32, 16).
    for k in px {
        let (x, y) = ((k % 65) as i32, (k / 65) as i32);
        assert!(
            (x - 32).abs() <= 3 && (y - 16).abs() <= 3,
            "lit pixel at {x},{y}"
        );
    }
    // The one particle exposes the frame: its centre is the brightest
    // pixel, near the white point (the 99.7th percentile interpolated in
    // a histogram bin a quarter of an octave wide, which the peak may sit
    // below).
    let centre = *shot.rgba[4 * (16 * 65 + 32)..][..3].iter().max().unwrap();
    let brightest = shot
        .rgba
        .chunks(4)
        .map(|p| p[..3].iter().max().copied().unwrap())
        .max();
    assert!(
        centre > 200 && Some(centre) == brightest,
        "{centre} {:?}",
        shot.exposure
    );
}

#[test]
fn colour_modes_change_the_image() {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(2000, 1).unwrap();
    let tags = shells(&p);
    let mut images = Vec::new();
    for &mode in &[ColorMode::Uniform, ColorMode::Speed, ColorMode::Component] {
        let camera = Camera {
            color_mode: mode,
            ..Camera::default()
        };
        let shot = shoot(&ctx, &p, &tags, &camera, (160, 120));
        // A Plummer sphere lights a good part of a small view.
        assert!(lit(&shot.rgba).len() > 160 * 120 / 50, "{mode:?}");
        images.push(shot.rgba);
    }
    assert_ne!(images[0], images[1]);
    assert_ne!(images[1], images[2]);
    // Shell tags split the mass into quarters.
    for q in 0..4 {
        let count = tags.tags.iter().filter(|&&t| t == q).count();
        assert!((count as i64 - 500).abs() <= 1, "shell {q}: {count}");
    }
    assert_eq!(shell_tags(&p.pos_mass), tags.tags);
}

#[test]
fn hidden_components_are_not_drawn() {
    let ctx = common::gpu();
    // Two particles side by side: the disk's at x = -1, the halo's at +1.
    let p = Particles {
        pos_mass: [-1.0f32, 1.0]
            .map(|x| PosMass {
                pos: [x, 0.0, 0.0],
                mass: 1.0,
            })
            .to_vec(),
        vel: vec![Velocity::new([0.0; 3]); 2],
        id: vec![0, 1],
    };
    let components = ComponentTags {
        tags: vec![0, 1],
        names: vec!["primary disk".into(), "primary halo".into()],
        by_shells: false,
    };
    assert_eq!(components.halo_mask(), 0b10);
    let mut camera = Camera {
        color_mode: ColorMode::Component,
        point_size: 5.0,
        smoothing: 0.0,
        ..Camera::default()
    };
    camera.fit([0.0; 3], 1.5, 64, 32);
    camera.pitch = 0.0;
    let mut draw = |hidden: u32| {
        camera.hidden_tags = hidden;
        let shot = shoot(&ctx, &p, &components, &camera, (64, 32));
        let xs: Vec<usize> = lit(&shot.rgba).iter().map(|k| k % 64).collect();
        (xs.iter().any(|&x| x < 32), xs.iter().any(|&x| x >= 32))
    };
    assert_eq!(draw(0), (true, true));
    assert_eq!(draw(components.halo_mask()), (true, false));
    assert_eq!(draw(0b11), (false, false));
}

// The splat adds integers with atomics: the same particles in another
// order give the same accumulation word for word (so the page and the CLI,
// whose particles the tree keeps in different orders, draw the same
// numbers), and the light added is what the unit scale promises.
#[test]
fn light_is_summed_exactly_in_any_order() {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(3000, 5).unwrap();
    let tags = shells(&p);
    let mut camera = Camera {
        color_mode: ColorMode::Uniform,
        color: [1.0; 3],
        ..Camera::default()
    };
    // Every particle in view: the sphere that holds them all fits it.
    let reach = (p.pos_mass.iter())
        .map(|q| q.pos.iter().map(|x| x * x).sum::<f32>().sqrt())
        .fold(0.0f32, f32::max);
    camera.fit([0.0; 3], reach * 1.2, 120, 90);
    let a = shoot(&ctx, &p, &tags, &camera, (120, 90));
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.reverse();
    order.rotate_left(1234);
    let shuffled = Particles {
        pos_mass: order.iter().map(|&k| p.pos_mass[k]).collect(),
        vel: order.iter().map(|&k| p.vel[k]).collect(),
        id: order.iter().map(|&k| p.id[k]).collect(),
    };
    let shuffled_tags = ComponentTags {
        tags: order.iter().map(|&k| tags.tags[k]).collect(),
        ..tags.clone()
    };
    let b = shoot(&ctx, &shuffled, &shuffled_tags, &camera, (120, 90));
    assert_eq!(a.accum, b.accum);
    assert_eq!(a.rgba, b.rgba);
    // Every particle adds LIGHT_UNITS (white: the same in each channel);
    // its sprite's pixels round their shares to whole units, which sums
    // to within a few per cent over thousands of pixels.
    let total: f64 = values(&a, MapKind::Light).iter().sum();
    let expected = webgrav::render::LIGHT_UNITS * p.len() as f64;
    assert!(
        (total / expected - 1.0).abs() < 0.02,
        "light {total} of {expected}"
    );
}

// The GPU's histogram and quantiles against the CPU twin fed with the
// read-back accumulation: same lit count, same ends.
#[test]
fn exposure_matches_its_cpu_twin() {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(4000, 2).unwrap();
    for map in [MapKind::Light, MapKind::Density] {
        let camera = Camera {
            map,
            ..Camera::default()
        };
        let (w, h) = (150, 100);
        let shot = shoot(&ctx, &p, &shells(&p), &camera, (w, h));
        let mut hist = vec![0u32; HIST_BINS as usize];
        for v in values(&shot, map) {
            if let Some(b) = bin_of(v) {
                hist[b] += 1;
            }
        }
        let t = Tone::for_map(map);
        let cpu = expose(
            &hist,
            &ToneUniform {
                width: w,
                height: h,
                quantity: map.index(),
                bias: 1.0,
                lo_quantile: t.lo_quantile,
                hi_quantile: t.hi_quantile,
                fixed_lo: 0.0,
                fixed_hi: 0.0,
                ..ToneUniform::default()
            },
        );
        let gpu = shot.exposure;
        assert_eq!(gpu.lit, cpu.lit, "{map:?}");
        assert!(gpu.lit > 1000, "{map:?}: {} lit", gpu.lit);
        // f32 sums of the light-weighted histogram on the GPU, f64 here.
        for (g, c) in [(gpu.lo, cpu.lo), (gpu.hi, cpu.hi), (gpu.top, cpu.top)] {
            assert!(((g / c) - 1.0).abs() < 1e-3, "{map:?}: {gpu:?} vs {cpu:?}");
        }
        assert!(gpu.lo < gpu.hi && gpu.hi <= gpu.top, "{gpu:?}");
    }
}

/// Measured properties of a picture: the fraction of pixels above the
/// noise (a channel > 8 of 255), the brightest level reached (the 99.9th
/// percentile of the pixels' brightest channel) and the 8-bit levels the
/// lit pixels use.
fn picture_stats(rgba: &[u8]) -> (f64, u8, usize) {
    let mut m: Vec<u8> = rgba.chunks(4).map(|p| p[0].max(p[1]).max(p[2])).collect();
    let lit = m.iter().filter(|&&v| v > 8).count() as f64 / m.len() as f64;
    let mut levels = [false; 256];
    for &v in m.iter().filter(|&&v| v > 8) {
        levels[v as usize] = true;
    }
    m.sort_unstable();
    let top = m[(m.len() - 1) * 999 / 1000];
    (lit, top, levels.iter().filter(|&&l| l).count())
}

// No slider: a sparse sphere of 2^10 particles and a dense one of 2^14, a
// galaxy with its halo, each exposes itself to fill the range, from
// levels just above black to saturated cores.
#[test]
fn pictures_fill_the_range_at_any_n() {
    let ctx = common::gpu();
    let (w, h) = (200, 150);
    let galaxy: Tagged = common::small_disk_galaxy().realize(6000, 3).unwrap().into();
    let cases: Vec<(String, Particles, ComponentTags)> = vec![
        {
            let p = Model::Plummer.generate(1024, 1).unwrap();
            let t = shells(&p);
            ("plummer 2^10".into(), p, t)
        },
        {
            let p = Model::Plummer.generate(16384, 1).unwrap();
            let t = shells(&p);
            ("plummer 2^14".into(), p, t)
        },
        {
            let t = ComponentTags::of_model(&galaxy);
            ("disk galaxy".into(), galaxy.particles.clone(), t)
        },
    ];
    for (name, p, tags) in cases {
        let view = View {
            width: w,
            height: h,
            color: ColorMode::Component,
            ..View::default()
        };
        let camera = camera_for(&view, &p, &tags, 0);
        let shot = shoot(&ctx, &p, &tags, &camera, (w, h));
        let (lit, top, levels) = picture_stats(&shot.rgba);
        // Fitted to 90 % of the light, the object covers a good part of
        // the view; the exposure's white point is reached (top 0.3 %
        // saturate) and the stretch spreads the rest over most levels.
        assert!(lit > 0.15, "{name}: {:.1} % lit", 100.0 * lit);
        assert!(top >= 250, "{name}: brightest {top}");
        assert!(levels > 150, "{name}: {levels} levels");
    }
}

/// Σ(R) of a Plummer sphere of mass M and scale a.
fn plummer_sigma(r: f64) -> f64 {
    let a2 = SCALE_RADIUS * SCALE_RADIUS;
    a2 / (std::f64::consts::PI * (a2 + r * r).powi(2))
}

// A map's pixels are numbers: all the mass in view, exactly; and a
// Plummer sphere's Σ(R) in rings within Poisson noise of its formula.
#[test]
fn surface_density_of_a_plummer_sphere() {
    let ctx = common::gpu();
    let n = 20000;
    let p = Model::Plummer.generate(n, 7).unwrap();
    let (w, h) = (240, 240);
    // Looking down z (image x, y are the particles' x, y), the centre of
    // mass in the middle, 40 scale radii across.
    let c = webgrav::app::readout::center_of_mass(&p.pos_mass).map(|x| x as f32);
    let mut camera = Camera {
        map: MapKind::Density,
        yaw: 0.0,
        pitch: 0.0,
        target: c,
        ..Camera::default()
    };
    let across = |camera: &mut Camera, width: f64| {
        camera.distance = (0.5 * width) as f32 / (0.5 * camera.fov_y).tan();
    };
    across(&mut camera, 40.0 * SCALE_RADIUS);
    let map_of = |camera: &Camera| {
        let shot = shoot(&ctx, &p, &shells(&p), camera, (w, h));
        SurfaceDensity::from_accum(
            shot.accum.as_ref().unwrap(),
            w,
            h,
            shot.drawn.unit_scale,
            camera.pixel_size(h),
        )
    };
    let map = map_of(&camera);
    let pixel = camera.pixel_size(h);
    // Mass: each particle whose sprite lies wholly in view adds exactly
    // its mass (2^16 units each); those on the edges part of it.
    let half = 0.5 * w as f64 * pixel;
    let margin = camera.max_radius() as f64 * pixel;
    let mass_within = |d: f64| -> f64 {
        (p.pos_mass.iter())
            .filter(|q| (0..2).all(|k| ((q.pos[k] - c[k]) as f64).abs() < d))
            .map(|q| q.mass as f64)
            .sum()
    };
    let drawn = map.total_mass();
    let (inner, outer) = (mass_within(half - margin), mass_within(half + margin));
    assert!(
        drawn >= inner * (1.0 - 1e-6) && drawn <= outer * (1.0 + 1e-6),
        "map {drawn}, wholly in view {inner}, touching it {outer}"
    );
    assert!(
        inner < outer,
        "some particles on the edges: {inner} {outer}"
    );
    // Zoomed out to hold every particle: all the mass, to f32 rounding.
    let mut wide = camera;
    across(&mut wide, 200.0 * SCALE_RADIUS);
    let total: f64 = p.pos_mass.iter().map(|q| q.mass as f64).sum();
    let all = map_of(&wide).total_mass();
    assert!((all / total - 1.0).abs() < 1e-6, "map {all} of {total}");
    // Σ(R) in rings 0.1 a to 3 a: each within 4 sigma of Poisson noise
    // (the ring's particle count) plus 3 % for the smoothing kernel, which
    // spreads mass across ring edges where Σ falls steeply.
    let a = SCALE_RADIUS;
    let edges: Vec<f64> = (0..=12)
        .map(|k| a * (0.1 + 2.9 * k as f64 / 12.0))
        .collect();
    let sigma = map.profile(&edges);
    for k in 0..12 {
        let (r0, r1) = (edges[k], edges[k + 1]);
        let want = plummer_sigma(0.5 * (r0 + r1));
        // Mean Σ over the ring from the enclosed projected mass,
        // M(<R) = R² / (a² + R²).
        let m = |r: f64| r * r / (a * a + r * r);
        let mean = (m(r1) - m(r0)) / (std::f64::consts::PI * (r1 * r1 - r0 * r0));
        let count = (m(r1) - m(r0)) * n as f64;
        let noise = 4.0 / count.sqrt() + 0.03;
        assert!(
            (sigma[k] / mean - 1.0).abs() < noise,
            "ring {r0:.3}-{r1:.3}: Σ {} vs {mean} (midpoint {want}), bound {noise:.3}",
            sigma[k]
        );
    }
}

/// A disk in the x-y plane of `n` particles, Σ ∝ e^{-R}, rotating about
/// +z, whose azimuths within R < 2 follow 1 + ε cos 2(φ - φ_bar): a bar of
/// A2 = ε / 2 along φ_bar.
fn barred_disk(n: usize, eps: f64, phi_bar: f64) -> Particles {
    let mut rng = webgrav::state::rng::Rng::new(11);
    let mut p = Particles::default();
    while p.len() < n {
        let r = -(rng.uniform_open() * rng.uniform_open()).ln();
        let phi = std::f64::consts::TAU * rng.uniform();
        let bar = if r < 2.0 { eps } else { 0.0 };
        if rng.uniform() * (1.0 + bar) > 1.0 + bar * (2.0 * (phi - phi_bar)).cos() {
            continue;
        }
        let z = 0.05 * rng.gaussian();
        let (s, c) = phi.sin_cos();
        p.pos_mass.push(PosMass {
            pos: [(r * c) as f32, (r * s) as f32, z as f32],
            mass: 1.0 / n as f32,
        });
        p.vel
            .push(Velocity::new([(-0.5 * s) as f32, (0.5 * c) as f32, 0.0]));
        p.id.push(p.id.len() as u64);
    }
    p
}

// The bar measured on the map's pixels is the bar measured on the
// particles (`webgrav analyze`'s A2 within the half-mass radius): the view
// turns face-on by itself and the map keeps the mass where it lies.
#[test]
fn a_bar_on_the_map_is_the_bar_of_the_particles() {
    let ctx = common::gpu();
    let p = barred_disk(20000, 0.5, 0.6);
    let components = ComponentTags {
        tags: vec![0; p.len()],
        names: vec!["disk".into()],
        by_shells: false,
    };
    let frame = webgrav::app::analysis::Frame::of(&p);
    let bar = webgrav::app::analysis::bar_mode(&frame.cyl, frame.radii[2]);
    let view = View {
        width: 240,
        height: 240,
        map: MapKind::Density,
        ..View::default()
    };
    let camera = camera_for(&view, &p, &components, 0);
    assert!(
        camera.pitch.abs() < 0.05,
        "not face-on: pitch {}",
        camera.pitch
    );
    // The bar mode on the map of `particles` seen through that camera.
    let map_bar = |particles: &Particles| {
        let shot = shoot(&ctx, particles, &components, &camera, (240, 240));
        let map = SurfaceDensity::from_accum(
            shot.accum.as_ref().unwrap(),
            240,
            240,
            shot.drawn.unit_scale,
            camera.pixel_size(240),
        );
        map.bar_mode(map.half_mass_radius())
    };
    let (a2, phase) = map_bar(&p);
    // The particles' A2 is ~0.2 (ε/2 within R < 2, diluted beyond); the
    // map's pixels smooth each particle over a few pixels about the same
    // place: within 10 % of it (the bound for the Milky Way is 20 %).
    assert!(bar.a2 > 0.1, "particles' A2 {}", bar.a2);
    assert!(
        (a2 / bar.a2 - 1.0).abs() < 0.1,
        "map A2 {a2} vs particles' {}",
        bar.a2
    );
    // Same orientation: x right, y up, the phase of the same mode.
    let d = (phase - bar.phase + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
        - std::f64::consts::PI;
    assert!(d.abs() < 0.1, "phase {phase} vs {}", bar.phase);
    // And an axisymmetric disk stays at the noise floor on both.
    let (a2, _) = map_bar(&barred_disk(20000, 0.0, 0.0));
    assert!(a2 < 0.03, "round disk's map A2 {a2}");
}

// Black holes are ringed, not lit: the ring's colour at its radius about
// the hole, nothing added to the light.
#[test]
fn black_holes_are_ringed() {
    let ctx = common::gpu();
    let mut p = Model::Plummer.generate(500, 4).unwrap();
    p.pos_mass.push(PosMass {
        pos: [0.0; 3],
        mass: 0.1,
    });
    p.vel.push(Velocity::new([0.0; 3]));
    p.id.push(500);
    let mut tags = vec![0u32; 500];
    tags.push(1);
    let components = ComponentTags {
        tags,
        names: vec!["stars".into(), "black hole".into()],
        by_shells: false,
    };
    let (w, h) = (101, 101);
    let mut camera = Camera {
        color_mode: ColorMode::Component,
        ..Camera::default()
    };
    camera.fit([0.0; 3], 2.0, w, h);
    let shot = shoot(&ctx, &p, &components, &camera, (w, h));
    let at = |x: u32, y: u32| &shot.rgba[(4 * (y * w + x)) as usize..][..3];
    let ring = at(50 + MARKER_RADIUS as u32, 50);
    let want = MARKER_COLOR.map(|c| (c * 255.0).round() as i32);
    for c in 0..3 {
        assert!(
            (ring[c] as i32 - want[c]).abs() <= 3,
            "{ring:?} vs {want:?}"
        );
    }
    // The hole's own mass adds no light: the same picture without it.
    let light: f64 = values(&shot, MapKind::Light).iter().sum();
    let stars = webgrav::render::LIGHT_UNITS * 500.0;
    assert!(light <= stars * 1.001, "{light} > {stars}");
}

// The view fits what is drawn: with the halo hidden a galaxy's disk fills
// it, and a disk is seen face-on (the eye along its angular momentum).
#[test]
fn the_view_fits_what_is_drawn() {
    let galaxy: Tagged = common::small_disk_galaxy().realize(6000, 1).unwrap().into();
    let tags = ComponentTags::of_model(&galaxy);
    let p = &galaxy.particles;
    let view = View::default();
    let all = camera_for(&view, p, &tags, 0);
    let without_halo = camera_for(&view, p, &tags, tags.halo_mask());
    // The disk (R_d = 1) inside a halo of r_s = 3: hiding the halo leaves
    // the view no larger, and the disk face-on (pitch 0 looks along z).
    assert!(without_halo.distance <= all.distance * 1.01);
    assert!(without_halo.pitch.abs() < 0.1, "{}", without_halo.pitch);
    let map_all = camera_for(
        &View {
            map: MapKind::Density,
            ..View::default()
        },
        p,
        &tags,
        0,
    );
    // A map of all the mass fits the halo: a wider view than the stars'.
    assert!(map_all.distance > 1.5 * all.distance);
    // Given angles win.
    let turned = camera_for(
        &View {
            pitch: Some(0.7),
            ..View::default()
        },
        p,
        &tags,
        0,
    );
    assert_eq!(turned.pitch, 0.7);
}

// A view sample of tagged particles (the page's start on the GPU keeps
// only a sample of positions beside every particle's tags; a light
// read-out, a sample of the run's state in the tree's order with each
// particle's id) weighs in a fit as those particles do among all.
#[test]
fn a_view_sample_weighs_as_its_particles() {
    use webgrav::render::camera::{sample_indices, VIEW_SAMPLE};
    let n = VIEW_SAMPLE + 40_000;
    let galaxy: Tagged = common::small_disk_galaxy().realize(n, 2).unwrap().into();
    let tags = ComponentTags::of_model(&galaxy);
    let p = &galaxy.particles.pos_mass;
    let picks: Vec<usize> = sample_indices(n, VIEW_SAMPLE).collect();
    let sample: Vec<_> = picks.iter().map(|&k| p[k]).collect();
    // A state's order (every 7th particle of a permutation, as a tree's
    // order scatters the components), sampled with ids.
    let ids: Vec<u32> = (0..n as u32)
        .map(|k| k * 7919 % n as u32)
        .step_by(7)
        .collect();
    let of_state: Vec<_> = ids.iter().map(|&i| p[i as usize]).collect();
    for (hidden, map) in [
        (0, MapKind::Light),
        (tags.halo_mask(), MapKind::Light),
        (0, MapKind::Density),
    ] {
        let all = tags.fit_weights(p, None, hidden, map);
        let of_sample = tags.fit_weights(&sample, None, hidden, map);
        let want: Vec<f64> = picks.iter().map(|&k| all[k]).collect();
        assert_eq!(of_sample, want, "hidden {hidden}, {map:?}");
        let by_ids = tags.fit_weights(&of_state, Some(&ids), hidden, map);
        let want: Vec<f64> = ids.iter().map(|&i| all[i as usize]).collect();
        assert_eq!(by_ids, want, "ids: hidden {hidden}, {map:?}");
        // Dark matter weighs nothing in a picture of stars.
        assert!(
            of_sample.contains(&0.0) == (map == MapKind::Light),
            "{map:?}"
        );
    }
}

fn run_cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_png(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    (info.width, info.height, buf)
}

#[test]
fn cli_renders_pictures_and_maps() {
    let dir = common::fresh_dir("render");
    std::fs::create_dir_all(&dir).unwrap();
    let snap = dir.join("s.csv");
    let png = dir.join("frame.png");
    let snap_s = snap.to_str().unwrap();
    let png_s = png.to_str().unwrap();
    ok(&run_cli(&[
        "run", "-n", "256", "--t-end", "0", "--out", snap_s,
    ]));
    ok(&run_cli(&[
        "render",
        snap_s,
        "-o",
        png_s,
        "--width",
        "96",
        "--height",
        "64",
        "--yaw",
        "-0.5",
        "--pitch",
        "0.2",
        "--distance",
        "5",
        "--target",
        "0",
        "0",
        "0",
        "--color",
        "potential",
    ]));
    let (w, h, _) = read_png(&png);
    assert_eq!((w, h), (96, 64));
    let out = run_cli(&["render", snap_s, "-o", "frame.jpg"]);
    assert!(!out.status.success());
    // A Plummer sphere's file carries no kinds: nothing to hide, said so.
    let out = run_cli(&["render", snap_s, "-o", png_s, "--hide", "halo"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no particle kinds"));
    // A galaxy's does: hiding its halo draws fewer particles, and the map
    // of what is drawn holds their mass (the JSON line's numbers).
    let galaxy = dir.join("g.bonsai");
    let galaxy_s = galaxy.to_str().unwrap();
    ok(&run_cli(&[
        "run",
        "--model",
        "disk-galaxy",
        "-n",
        "3000",
        "--t-end",
        "0",
        "--out",
        galaxy_s,
    ]));
    let line = |text: &str| -> serde_json::Value { serde_json::from_str(text.trim()).unwrap() };
    let all = line(&ok(&run_cli(&[
        "render", galaxy_s, "-o", png_s, "--width", "160", "--height", "120",
    ])));
    let disk = line(&ok(&run_cli(&[
        "render",
        galaxy_s,
        "-o",
        png_s,
        "--width",
        "160",
        "--height",
        "120",
        "--hide",
        "halo",
        "--map",
        "density",
        "--distance",
        "60",
    ])));
    assert_eq!(all["drawn"], 3000);
    let drawn = disk["drawn"].as_u64().unwrap();
    assert!(drawn > 0 && drawn < 3000, "{disk}");
    // Equal masses: the map holds the mass of the particles drawn (a wide
    // view takes them all).
    let snapshot = webgrav::snapshot::read_file(galaxy_s).unwrap();
    let m = snapshot.particles.pos_mass[0].mass as f64;
    let mass = disk["mass"].as_f64().unwrap();
    assert!(
        (mass / (m * drawn as f64) - 1.0).abs() < 1e-4,
        "map mass {mass} for {drawn} particles of {m}"
    );
    assert!(disk["sigma_hi"].as_f64().unwrap() > disk["sigma_lo"].as_f64().unwrap());
    let (_, _, rgba) = read_png(&png);
    // The legend's colour bar at the right edge: many colours in a column.
    let column: std::collections::HashSet<[u8; 3]> = (0..120)
        .map(|y| {
            let k = 4 * (y * 160 + 150);
            [rgba[k], rgba[k + 1], rgba[k + 2]]
        })
        .collect();
    assert!(column.len() > 20, "{} colours", column.len());
}

// A series becomes numbered frames; the video needs ffmpeg, and without it
// on the PATH the frames stay and the message says how to encode them.
#[test]
fn cli_renders_a_series_to_frames() {
    let dir = common::fresh_dir("series");
    let runs = dir.join("run");
    std::fs::create_dir_all(&runs).unwrap();
    let runs_s = runs.to_str().unwrap();
    ok(&run_cli(&[
        "run",
        "-n",
        "300",
        "--solver",
        "direct",
        "--dt",
        "0.0625",
        "--t-end",
        "0.25",
        "--snap-every",
        "0.125",
        "--snap-dir",
        runs_s,
        "--snap-format",
        "csv",
    ]));
    let frames = dir.join("frames");
    let frames_s = frames.to_str().unwrap();
    let text = ok(&run_cli(&[
        "render", "--series", runs_s, "-o", frames_s, "--width", "64", "--height", "48",
    ]));
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    // One camera for every frame.
    assert!(lines.iter().all(|l| l["distance"] == lines[0]["distance"]));
    for k in 0..3 {
        assert_eq!(read_png(&frames.join(format!("frame_{k:05}.png"))).0, 64);
    }
    let video = dir.join("movie.mp4");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(["render", "--series", runs_s, "-o", video.to_str().unwrap()])
        .args(["--width", "64", "--height", "48"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ffmpeg is not on PATH") && err.contains("movie-frames"),
        "{err}"
    );
    // The printed command pastes into a shell: the filter's parentheses
    // quoted (issue 48 item 8).
    assert!(err.contains("'pad=ceil(iw/2)*2:ceil(ih/2)*2'"), "{err}");
    assert!(dir.join("movie-frames").join("frame_00002.png").is_file());
    let out = run_cli(&["render", "--series", runs_s, "-o", "x.png"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("video"));
    // Where ffmpeg is installed, the video is made (odd sizes padded to
    // even for H.264's yuv420p).
    let ffmpeg = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("ffmpeg").is_file()));
    if ffmpeg {
        let video = dir.join("odd.mp4");
        ok(&run_cli(&[
            "render",
            "--series",
            runs_s,
            "-o",
            video.to_str().unwrap(),
            "--width",
            "65",
            "--height",
            "49",
        ]));
        let bytes = std::fs::read(&video).unwrap();
        assert!(
            bytes.len() > 1000 && &bytes[4..8] == b"ftyp",
            "{} bytes",
            bytes.len()
        );
    }
}

// A movie may follow what it shows: with --follow each frame aims at the
// density centre of its particles (a cluster moved by 5 is followed),
// without it every frame keeps the first frame's camera.
#[test]
fn cli_series_follows_the_density_centre() {
    let dir = common::fresh_dir("follow");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let mut p = Model::Plummer.generate(2000, 8).unwrap();
    for (k, shift) in [0.0f32, 5.0].into_iter().enumerate() {
        for q in &mut p.pos_mass {
            q.pos[0] += shift;
        }
        let snap = webgrav::snapshot::Snapshot {
            particles: p.clone(),
            time: k as f64,
            ..Default::default()
        };
        let path = files.join(format!("f{k}.csv"));
        webgrav::snapshot::write_file(path.to_str().unwrap(), &snap).unwrap();
    }
    let targets = |extra: &[&str]| -> Vec<f64> {
        let out = dir.join(format!("frames{}", extra.len()));
        let mut args = vec![
            "render",
            "--series",
            files.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--width",
            "32",
            "--height",
            "32",
        ];
        args.extend_from_slice(extra);
        ok(&run_cli(&args))
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["target"][0]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    let kept = targets(&[]);
    assert_eq!(kept[0], kept[1]);
    let followed = targets(&["--follow"]);
    // The density centre of 2000 particles: within 0.1 of the shift.
    assert!(
        (followed[1] - followed[0] - 5.0).abs() < 0.1,
        "{followed:?}"
    );
}

// Drawing costs no forces unless the colouring needs potentials: 2^17
// particles render in seconds on lavapipe, where one direct sum (2^34
// interactions at ~6e7/s) would take minutes.
#[test]
fn cli_renders_large_n_without_forces() {
    let dir = common::fresh_dir("large");
    std::fs::create_dir_all(&dir).unwrap();
    let snap = dir.join("big.bonsai");
    let snap_s = snap.to_str().unwrap();
    // A Gaussian blob written here (`run` would sample a model and compute
    // its first forces, which takes longer than drawing it).
    let n = 131072;
    let mut rng = webgrav::state::rng::Rng::new(3);
    let mut g = || rng.gaussian() as f32;
    let particles = Particles {
        pos_mass: (0..n)
            .map(|_| PosMass {
                pos: [g(), g(), g()],
                mass: 1.0 / n as f32,
            })
            .collect(),
        vel: (0..n).map(|_| Velocity::new([g(), g(), g()])).collect(),
        id: (0..n as u64).collect(),
    };
    let snapshot = webgrav::snapshot::Snapshot {
        particles,
        ..Default::default()
    };
    let bytes = webgrav::snapshot::Format::TipsyBonsai
        .encode(&snapshot)
        .unwrap();
    std::fs::write(&snap, bytes).unwrap();
    let start = std::time::Instant::now();
    ok(&run_cli(&[
        "render",
        snap_s,
        "-o",
        dir.join("big.png").to_str().unwrap(),
    ]));
    let took = start.elapsed().as_secs_f64();
    assert!(took < 60.0, "render of 2^17 took {took:.1} s");
}

/// The view of a state held on the GPU (`render::view_sample`, what the
/// page keeps of a model it never reads back) is the view of the same
/// state on the host: the same sampled particles, the same shells'
/// edges, every particle's shell but where f32's rounding of its radius
/// meets an edge, and each shell's mass and count. More particles than
/// `VIEW_SAMPLE`, so the sample is a sample.
#[test]
fn the_view_of_a_state_on_the_gpu_is_the_view_of_its_read_back() {
    use webgrav::gpu::buffers::read_vec;
    use webgrav::render::camera::VIEW_SAMPLE;
    use webgrav::render::view_sample::{tag_shells, ViewSample};
    use webgrav::render::MassShells;
    use webgrav::state::GpuParticles;
    let ctx = common::gpu();
    let n = VIEW_SAMPLE + 40_000;
    let p = Model::Plummer.generate(n, 9).unwrap();
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let sample = ViewSample::gather(&ctx, &state.pos_mass, &state.vel, None, n);
    let sample = pollster::block_on(sample).unwrap();
    assert_eq!(sample.pos_mass.len(), VIEW_SAMPLE);
    assert_eq!(sample, ViewSample::of(&p));
    // With forces: each sampled particle's own.
    let pot: Vec<f32> = (0..n).map(|k| -(k as f32)).collect();
    let drawn = upload(&ctx, &p, Some(&pot)).unwrap();
    let with_forces =
        ViewSample::gather(&ctx, &drawn.pos_mass, &drawn.vel, Some(&drawn.acc_pot), n);
    let with_forces = pollster::block_on(with_forces).unwrap();
    assert_eq!(with_forces.pos_mass, sample.pos_mass);
    let picks = webgrav::render::camera::sample_indices(n, VIEW_SAMPLE);
    assert!(picks
        .zip(&with_forces.acc_pot)
        .all(|(k, a)| a.pot == pot[k] && a.acc == [0.0; 3]));
    // The colour ranges and the edges of the sample are the whole state's.
    assert_eq!(
        ColorRanges::of(&sample.vel, None),
        ColorRanges::of(&p.vel, None)
    );
    let shells = MassShells::of(&p.pos_mass).unwrap();
    assert_eq!(MassShells::about(shells.centre, &sample.pos_mass), shells);
    let (tags, totals) = pollster::block_on(tag_shells(&ctx, &state.pos_mass, n, &shells)).unwrap();
    let tags: Vec<u32> = pollster::block_on(read_vec(&ctx.device, &ctx.queue, &tags)).unwrap();
    let host = shell_tags(&p.pos_mass);
    assert_eq!(tags.len(), n);
    let differ: Vec<usize> = (0..n).filter(|&k| tags[k] != host[k]).collect();
    // Each differing particle lies on an edge, within f32's rounding.
    for &k in &differ {
        let r2 = shells.r2(&p.pos_mass[k]);
        let edge = shells.edges[tags[k].min(host[k]) as usize];
        assert!(
            tags[k].abs_diff(host[k]) == 1 && (r2 - edge).abs() <= 1e-6 * edge,
            "particle {k}: shell {} on the GPU, {} on the host (r² {r2}, edge {edge})",
            tags[k],
            host[k]
        );
    }
    assert!(differ.len() <= 3, "{} particles differ", differ.len());
    let expected = TagTotals::of(&p.pos_mass, &host);
    assert_eq!(totals.0.len(), 4);
    let moved = differ.len() as u64;
    for (t, (&(m, c), &(em, ec))) in totals.0.iter().zip(&expected.0).enumerate() {
        assert!(
            c.abs_diff(ec) <= moved,
            "shell {t}: {c} particles, host {ec}"
        );
        let slack = moved as f64 / n as f64 + 1e-6;
        assert!(
            (m - em).abs() <= slack * em,
            "shell {t}: mass {m}, host {em}"
        );
        // A quarter of the mass each, to the sample's error.
        assert!((m - 0.25).abs() < 0.01, "shell {t}: mass {m}");
    }
}

/// The page draws its first model before that model's run exists
/// (`app::start::Made::Viewed`, while the solver's kernels compile):
/// that picture is the run's at t = 0 (the run's tree sorts the
/// particles in place, and light sums the same in any order), and its
/// scene is the run's, so the picture moves with the run's steps.
#[test]
fn a_model_drawn_before_its_run_is_the_runs_first_picture() {
    use webgrav::app::readout::view_sphere;
    use webgrav::app::start::{make_model, Made};
    use webgrav::run::{RunParams, SolverKind};
    let ctx = common::gpu();
    let config = RunParams {
        solver: SolverKind::Tree,
        ..RunParams::default()
    }
    .validate()
    .unwrap();
    let size = (192, 128);
    // A sphere (tagged by mass shells on the GPU) and a galaxy of several
    // components (tagged by component).
    for model in [Model::Plummer, Model::GalaxyCrash] {
        let made = pollster::block_on(make_model(
            &ctx,
            model,
            4096,
            5,
            &Default::default(),
            config,
        ))
        .unwrap();
        let Made::Viewed(picture, _) = &made else {
            panic!("{model:?}: a leapfrog run's model is viewed on the GPU");
        };
        let mut camera = Camera::default();
        let (c, r) = view_sphere(&picture.view.positions);
        camera.fit(c, r, size.0, size.1);
        let range = picture.view.ranges.for_mode(camera.color_mode);
        let tone = Tone::for_map(camera.map);
        let shoot = |scene: &Scene| {
            let (w, h) = size;
            pollster::block_on(render_offscreen(
                &ctx, scene, &camera, range, &tone, w, h, true,
            ))
            .unwrap()
        };
        let before = shoot(&picture.scene);
        assert!(lit(&before.rgba).len() > 200, "{model:?}: too little drawn");
        let mut started = pollster::block_on(made.start(&ctx)).unwrap();
        assert_eq!(started.run.time(), 0.0);
        let at_start = shoot(&started.scene);
        assert_eq!(
            before.accum, at_start.accum,
            "{model:?}: the picture before the run is not the run's at t = 0"
        );
        assert_eq!(before.rgba, at_start.rgba, "{model:?}");
        started.run.queue(&ctx, 8);
        pollster::block_on(ctx.finish()).unwrap();
        let moved = shoot(&started.scene);
        assert_ne!(
            before.accum, moved.accum,
            "{model:?}: the scene does not follow the run's steps"
        );
        // What the run displays now, bound afresh, is what the scene made
        // before the run draws.
        let displayed = shoot(&started.scene.rebound(started.run.display()));
        assert_eq!(moved.accum, displayed.accum, "{model:?}");
    }
}
