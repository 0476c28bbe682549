//! The point renderer offscreen (what `webgrav render` writes): sprites
//! land where the camera puts them, colour modes differ, and the CLI writes
//! a PNG of the requested size.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::gpu::layout::{PosMass, Velocity};
use webgrav::render::{render_rgba, shell_tags, Camera, ColorMode, ColorRanges, ComponentTags};
use webgrav::state::{GpuParticles, Model, Particles};

fn lit(rgba: &[u8]) -> Vec<usize> {
    rgba.chunks(4)
        .enumerate()
        .filter(|(_, p)| p[..3].iter().any(|&c| c > 0))
        .map(|(k, _)| k)
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
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let mut camera = Camera {
        color_mode: ColorMode::Uniform,
        point_size: 5.0,
        ..Camera::default()
    };
    camera.fit([1.0, 2.0, 3.0], 1.0, 65, 33);
    let rgba =
        pollster::block_on(render_rgba(&ctx, &state, &[0], &camera, [0.0, 1.0], 65, 33)).unwrap();
    let px = lit(&rgba);
    assert!(!px.is_empty());
    // A 5-pixel sprite at the target: every lit pixel within 3 of (32, 16).
    for k in px {
        let (x, y) = ((k % 65) as i32, (k / 65) as i32);
        assert!(
            (x - 32).abs() <= 3 && (y - 16).abs() <= 3,
            "lit pixel at {x},{y}"
        );
    }
}

#[test]
fn colour_modes_change_the_image() {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(2000, 1).unwrap();
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let tags = shell_tags(&p.pos_mass);
    let ranges = ColorRanges::of(&p.vel, None);
    let mut images = Vec::new();
    for &mode in &[ColorMode::Uniform, ColorMode::Speed, ColorMode::Component] {
        let camera = Camera {
            color_mode: mode,
            ..Camera::default()
        };
        let rgba = pollster::block_on(render_rgba(
            &ctx,
            &state,
            &tags,
            &camera,
            ranges.for_mode(mode),
            160,
            120,
        ))
        .unwrap();
        // A Plummer sphere lights a good part of a small view.
        assert!(lit(&rgba).len() > 160 * 120 / 50, "{mode:?}");
        images.push(rgba);
    }
    assert_ne!(images[0], images[1]);
    assert_ne!(images[1], images[2]);
    // Shell tags split the mass into quarters.
    for q in 0..4 {
        let count = tags.iter().filter(|&&t| t == q).count();
        assert!((count as i64 - 500).abs() <= 1, "shell {q}: {count}");
    }
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
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let mut camera = Camera {
        color_mode: ColorMode::Component,
        point_size: 5.0,
        ..Camera::default()
    };
    camera.fit([0.0; 3], 1.5, 64, 32);
    camera.pitch = 0.0;
    let mut draw = |hidden: u32| {
        camera.hidden_tags = hidden;
        let rgba = pollster::block_on(render_rgba(
            &ctx,
            &state,
            &components.tags,
            &camera,
            [0.0, 1.0],
            64,
            32,
        ))
        .unwrap();
        let xs: Vec<usize> = lit(&rgba).iter().map(|k| k % 64).collect();
        (xs.iter().any(|&x| x < 32), xs.iter().any(|&x| x >= 32))
    };
    assert_eq!(draw(0), (true, true));
    assert_eq!(draw(components.halo_mask()), (true, false));
    assert_eq!(draw(0b11), (false, false));
}

#[test]
fn cli_renders_a_snapshot_to_png() {
    let dir = std::env::temp_dir().join(format!("webgrav-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let snap = dir.join("s.csv");
    let png = dir.join("frame.png");
    let snap_s = snap.to_str().unwrap();
    let png_s = png.to_str().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["run", "-n", "256", "--t-end", "0", "--out", snap_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&[
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
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    // IHDR: width and height, big-endian, at bytes 16..24.
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 96);
    assert_eq!(u32::from_be_bytes(bytes[20..24].try_into().unwrap()), 64);
    let out = run(&["render", snap_s, "-o", "frame.jpg"]);
    assert!(!out.status.success());
    // A Plummer sphere's file carries no kinds: nothing to hide, said so.
    let out = run(&["render", snap_s, "-o", png_s, "--hide", "halo"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no particle kinds"));
    // A galaxy's does: hiding its halo draws fewer pixels.
    let galaxy = dir.join("g.bonsai");
    let galaxy_s = galaxy.to_str().unwrap();
    let out = run(&[
        "run",
        "--model",
        "disk-galaxy",
        "-n",
        "3000",
        "--t-end",
        "0",
        "--out",
        galaxy_s,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lit_pixels = |extra: &[&str]| {
        let mut args = vec!["render", galaxy_s, "-o", png_s, "--color", "component"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--distance", "40", "--target", "0", "0", "0"]);
        let out = run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        reader.next_frame(&mut buf).unwrap();
        lit(&buf).len()
    };
    let (all, without_halo) = (lit_pixels(&[]), lit_pixels(&["--hide", "halo"]));
    assert!(
        without_halo > 0 && without_halo < all,
        "{all} → {without_halo} lit pixels"
    );
}
