//! The web app's platform-free parts: URL settings (parse, canonical query,
//! presets, warnings), Lagrangian radii, the cold-collapse model, and the
//! device limit on N.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::app::readout::{center_of_mass, lagrangian_radii, view_sphere};
use webgrav::app::settings::{relative_url, Settings, Sources, PRESETS};
use webgrav::app::{
    check_particle_count, max_particles, max_particles_within, HERMITE_MAX_PARTICLES,
};
use webgrav::hermite::Precision;
use webgrav::render::{ColorMode, Theme};
use webgrav::run::SolverKind;
use webgrav::state::{Diagnostics, Model};
use webgrav::Error;

#[test]
fn url_parameters_set_every_setting() {
    let (s, warnings) = Settings::from_query(
        "?model=cold-collapse&n=65536&seed=7&solver=direct&theta=0.4&eps=0.02&dt=0.001953125\
         &spf=3&autoplay=0&embed=1&color=potential&ps=4&bright=2&atten=0\
         &yaw=1.5&pitch=-0.5&dist=12&tx=1&ty=-2&tz=0.5&fov=1",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(s.model, Model::ColdCollapse);
    assert_eq!((s.n, s.seed, s.steps_per_frame), (65536, 7, 3));
    assert_eq!(s.run.solver, SolverKind::Direct);
    assert_eq!((s.run.theta, s.run.eps, s.run.dt), (0.4, 0.02, 0.001953125));
    assert!(!s.autoplay && s.embed && s.camera_given);
    let c = s.camera;
    assert_eq!(c.color_mode, ColorMode::Potential);
    assert_eq!(
        (c.point_size, c.brightness, c.size_attenuation),
        (4.0, 2.0, false)
    );
    assert_eq!(
        (c.yaw, c.pitch, c.distance, c.fov_y),
        (1.5, -0.5, 12.0, 1.0)
    );
    assert_eq!(c.target, [1.0, -2.0, 0.5]);
}

#[test]
fn canonical_query_round_trips() {
    let (s, _) = Settings::from_query("n=4096&solver=direct&color=component&yaw=0.25&dist=3.5");
    let q = s.to_query(true);
    let (back, warnings) = Settings::from_query(&q);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(back, s, "{q}");
    // Without the camera, the run's settings alone come back.
    let (no_cam, _) = Settings::from_query(&s.to_query(false));
    assert_eq!(no_cam.run, s.run);
    assert!(!no_cam.camera_given);
}

#[test]
fn the_light_theme_stays_in_the_shared_link() {
    let (s, warnings) = Settings::from_query("n=4096&theme=light");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(s.camera.theme, Theme::Light);
    // The share link leaves the camera out, never the theme.
    let q = s.to_query(false);
    assert!(q.contains("theme=light"), "{q}");
    assert_eq!(Settings::from_query(&q).0.camera.theme, Theme::Light);
    // The default (dark) is not written.
    let (dark, _) = Settings::from_query("n=4096");
    assert!(!dark.to_query(false).contains("theme"));
}

#[test]
fn model_parameters_apply_to_their_models() {
    let (s, warnings) =
        Settings::from_query("model=galaxy-merger&ratio=2&rperi=15&q=1.6&satellites=4");
    assert!(warnings.is_empty(), "{warnings:?}");
    let p = s.model_params;
    assert_eq!(
        (p.mass_ratio, p.pericenter, p.toomre_q, p.satellites),
        (2.0, 15.0, 1.6, 4)
    );
    // The canonical query always names the parameters of its model, and
    // the others only where they differ from the defaults.
    let q = s.to_query(false);
    assert!(
        q.contains("ratio=2") && q.contains("rperi=15") && q.contains("q=1.6"),
        "{q}"
    );
    let (plummer, _) = Settings::from_query("model=plummer");
    assert!(!plummer.to_query(false).contains("ratio="));
    let (disk, _) = Settings::from_query("model=milky-way");
    assert!(disk.to_query(false).contains("q=1.2"));
    let (_, warnings) = Settings::from_query("q=0&ratio=0.5&satellites=1.5");
    assert_eq!(warnings.len(), 3, "{warnings:?}");
}

#[test]
fn bad_parameters_warn_and_keep_defaults() {
    let (s, warnings) =
        Settings::from_query("n=abc&solver=fmm&theta=-1&dt=0&model=disk&bogus=1&n2=%ZZ");
    let d = Settings::default();
    assert_eq!((s.n, s.run), (d.n, d.run));
    assert_eq!(s.model, d.model);
    assert_eq!(warnings.len(), 7, "{warnings:?}");
    assert!(warnings[0].contains("n=abc"));
    assert!(warnings[1].contains("known: tree, direct"));
    assert!(warnings[4].contains("known: plummer, cold-collapse"));
}

// Files named in the URL (`snapshot`, `series`, `fallback`) are not
// settings; only same-origin relative URLs are kept, the rest warned about
// as bad parameters.
#[test]
fn sources_in_the_url_are_same_origin_paths() {
    let q = "embed=1&n=512&snapshot=data%2Fa.tipsy&snapshot=/runs/b.bonsai&series=run/index.json&fallback=data/a.png";
    let (s, warnings) = Settings::from_query(q);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(s.embed && s.n == 512);
    let (src, warnings) = Sources::from_query(q);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(src.snapshots, ["data/a.tipsy", "/runs/b.bonsai"]);
    assert_eq!(src.series, ["run/index.json"]);
    assert_eq!(src.fallback.as_deref(), Some("data/a.png"));
    assert_eq!(Sources::from_query(&src.to_query()).0, src);
    assert_eq!(Sources::default().to_query(), "");
    for hostile in [
        "https://evil/x",
        "//evil/x",
        "%2F%2Fevil%2Fx",
        "/\\evil/x",
        "javascript:alert(1)",
        "data:text/plain,x",
        "/%09/evil/x",
        "a b",
        "x?y=1",
        "",
    ] {
        let (src, warnings) =
            Sources::from_query(&format!("snapshot={hostile}&fallback={hostile}"));
        assert_eq!(src, Sources::default(), "{hostile}");
        assert_eq!(warnings.len(), 2, "{hostile}: {warnings:?}");
        assert!(warnings[0].starts_with("snapshot="), "{warnings:?}");
    }
    for ok in [
        "a.tipsy",
        "../up/snap_0001.bonsai",
        "/x/y-1.5(2).csv",
        "d/%7E.png",
    ] {
        assert_eq!(relative_url(ok), Ok(ok));
    }
    assert!(relative_url(&"a".repeat(5000)).is_err());
}

#[test]
fn presets_parse_and_explicit_parameters_win() {
    for p in PRESETS {
        let (s, warnings) = Settings::from_query(&format!("preset={}", p.name));
        assert!(warnings.is_empty(), "{}: {warnings:?}", p.name);
        assert_eq!(
            s.model.name(),
            p.query.split('&').next().unwrap()[6..].to_string()
        );
    }
    let (s, _) = Settings::from_query("preset=cold-collapse&n=2048");
    assert_eq!((s.model, s.n), (Model::ColdCollapse, 2048));
    let (_, warnings) = Settings::from_query("preset=nope");
    assert_eq!(warnings.len(), 1);
}

/// The page's gallery shows `www/figures/gallery/NAME.jpg` for every
/// preset (the e2e test clicks them): a 320×240 baseline JPEG each.
#[test]
fn every_preset_has_its_gallery_picture() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("www/figures/gallery");
    for p in PRESETS {
        let path = dir.join(format!("{}.jpg", p.name));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(&bytes[..3], [0xff, 0xd8, 0xff], "{}: not a JPEG", p.name);
        // The baseline frame header (SOF0): height and width, big-endian.
        let sof = bytes
            .windows(2)
            .position(|w| w == [0xff, 0xc0])
            .unwrap_or_else(|| panic!("{}: no baseline frame", p.name));
        let size = |at: usize| u16::from_be_bytes([bytes[at], bytes[at + 1]]);
        assert_eq!((size(sof + 7), size(sof + 5)), (320, 240), "{}", p.name);
    }
    let pictures = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(
        pictures,
        PRESETS.len(),
        "a gallery picture without a preset"
    );
}

#[test]
fn cold_collapse_is_the_plummer_sphere_at_rest() {
    let plummer = Model::Plummer.generate(2000, 5).unwrap();
    let cold = Model::ColdCollapse.generate(2000, 5).unwrap();
    assert_eq!(cold.pos_mass, plummer.pos_mass);
    assert!(cold.vel.iter().all(|v| v.vel == [0.0; 3]));
    // No kinetic energy: virial ratio 0.
    let d = Diagnostics::of(&cold.pos_mass, &cold.vel, &vec![Default::default(); 2000]);
    assert_eq!(d.kinetic, 0.0);
}

#[test]
fn lagrangian_radii_of_a_plummer_sphere() {
    // Plummer: M(<r) = r³/(r² + a²)^{3/2}, so r_f = a / sqrt(f^{-2/3} - 1)
    // with a = 3π/16; the sample is cut at 0.999 of the mass, so fractions
    // of the sample are fractions 0.999 f of the model.
    let p = Model::Plummer.generate(100_000, 11).unwrap();
    let c = center_of_mass(&p.pos_mass);
    let fractions = [0.1, 0.5, 0.9];
    let radii = lagrangian_radii(&p.pos_mass, c, &fractions);
    let a = 3.0 * std::f64::consts::PI / 16.0;
    for (f, r) in fractions.iter().zip(&radii) {
        let exact = a / ((0.999 * f).powf(-2.0 / 3.0) - 1.0).sqrt();
        // Sampling noise of a quantile with 1e5 particles is well below
        // 2 % at these fractions.
        assert!(
            (r / exact - 1.0).abs() < 0.02,
            "r({f}) = {r}, model {exact}"
        );
    }
    let (center, radius) = view_sphere(&p.pos_mass);
    assert!(center.iter().all(|x| x.abs() < 1e-3));
    assert!((radius as f64 - radii[2]).abs() < 1e-4);
}

#[test]
fn too_large_n_is_refused_with_the_limit() {
    let ctx = common::gpu();
    for &solver in SolverKind::ALL.iter().filter(|s| !s.is_hermite()) {
        let max = max_particles(&ctx, solver);
        assert!(max >= 1 << 16, "{}: {max}", solver.name());
        check_particle_count(&ctx, max, solver).unwrap();
        match check_particle_count(&ctx, max + 1, solver) {
            Err(Error::TooManyParticles { n, max: m, .. }) => assert_eq!((n, m), (max + 1, max)),
            other => panic!("{}: {other:?}", solver.name()),
        }
        let msg = check_particle_count(&ctx, max + 1, solver)
            .unwrap_err()
            .to_string();
        assert!(msg.contains(&max.to_string()), "{msg}");
    }
}

#[test]
fn device_errors_while_allocating_are_errors_not_panics() {
    let ctx = common::gpu();
    // A buffer past the device's limit: without the captured scope wgpu's
    // uncaptured-error handler panics natively.
    let past_limit = ctx.device.limits().max_buffer_size.saturating_add(256);
    let made = pollster::block_on(ctx.allocating(7, async {
        let _buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("past the limit"),
            size: past_limit,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        Ok(())
    }));
    match made {
        Err(Error::DeviceRefused(msg)) => assert!(!msg.is_empty()),
        other => panic!("{other:?}"),
    }
    // The device goes on working: a run starts and steps afterwards.
    let particles = webgrav::state::plummer::plummer(64, 1);
    let config = webgrav::run::RunParams::default().validate().unwrap();
    let mut run =
        pollster::block_on(webgrav::run::Run::new(&ctx, &particles, 0.0, config)).unwrap();
    pollster::block_on(run.run_to(&ctx, 0.25, |_, _| true)).unwrap();
    assert!(run.steps() > 0 && run.time() >= 0.25, "{}", run.time());
}

#[test]
fn hermite_parameters_in_the_url() {
    let (s, warnings) =
        Settings::from_query("n=512&solver=hermite6&eta=0.01&precision=f32&eps=0.02");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(s.run.solver, SolverKind::Hermite6);
    assert_eq!((s.run.eta, s.run.precision), (0.01, Precision::F32));
    // The canonical query of a Hermite run holds η and the precision, and
    // round-trips.
    let q = s.to_query(false);
    assert!(
        q.contains("solver=hermite6") && q.contains("eta=0.01") && q.contains("precision=f32"),
        "{q}"
    );
    assert_eq!(Settings::from_query(&q).0, s);
    let (h4, _) = Settings::from_query("solver=hermite4");
    assert_eq!(h4.run.solver, SolverKind::Hermite4);
    assert_eq!((h4.run.eta, h4.run.precision), (0.02, Precision::Ds));
    assert!(h4.to_query(false).contains("eta=0.02&precision=ds"));
    // Tree links hold no Hermite setting; η is the tree's too (its block
    // time steps), beside the time steps and their levels. Direct links
    // hold none of them.
    let (tree, _) = Settings::from_query("solver=tree");
    let q = tree.to_query(false);
    assert!(!q.contains("precision") && !q.contains("criterion"), "{q}");
    assert!(q.contains("timesteps=shared&levels=4&eta=0.02"), "{q}");
    let (direct, _) = Settings::from_query("solver=direct");
    let q = direct.to_query(false);
    assert!(!q.contains("eta=") && !q.contains("timesteps"), "{q}");
    // Bad values warn and keep the defaults.
    let (bad, warnings) = Settings::from_query("solver=hermite4&eta=0&precision=f64");
    assert_eq!(
        (bad.run.eta, bad.run.precision),
        (h4.run.eta, h4.run.precision)
    );
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[1].contains("known: ds, ds-fast, f32"),
        "{warnings:?}"
    );
    assert!(
        SolverKind::ALL.contains(&SolverKind::Hermite4)
            && SolverKind::ALL.contains(&SolverKind::Hermite6)
    );
}

#[test]
fn hermite_n_is_capped_in_the_browser() {
    let ctx = common::gpu();
    for solver in [SolverKind::Hermite4, SolverKind::Hermite6] {
        assert_eq!(max_particles(&ctx, solver), HERMITE_MAX_PARTICLES);
        check_particle_count(&ctx, HERMITE_MAX_PARTICLES, solver).unwrap();
        let msg = check_particle_count(&ctx, HERMITE_MAX_PARTICLES + 1, solver)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("16384") && msg.contains("O(N²)"), "{msg}");
    }
}

// The parameter table is the one source of keys, ranges and defaults: the
// defaults of `Settings` are the table's, every key parses its own default
// and round-trips, and the ranges hold for the URL and for a run config.
#[test]
fn the_parameter_table_drives_settings_and_validation() {
    use webgrav::app::settings::{keys, params};
    use webgrav::run::RunParams;
    let d = Settings::default();
    for p in params() {
        // Setting the table's default changes nothing (numbers compare by
        // value: "0.0078125" and "0.0078125" print alike, "6" as "6").
        let mut s = Settings::default();
        s.set(p.key, p.default)
            .unwrap_or_else(|e| panic!("{}: {e}", p.key));
        assert_eq!(s.get(p.key), d.get(p.key), "default of {}", p.key);
    }
    assert_eq!(keys().len(), params().count());
    // θ is limited to the tree's own maximum (1.15), not 2.
    let (s, w) = Settings::from_query("theta=1.5");
    assert_eq!(s.run.theta, d.run.theta);
    assert!(
        w[0].contains("theta=1.5") && w[0].contains("<= 1.15"),
        "{w:?}"
    );
    // A run config checks what applies to its solver, with the same table.
    let tree = RunParams {
        solver: SolverKind::Tree,
        theta: 1.5,
        ..RunParams::default()
    };
    let e = tree.validate().unwrap_err().to_string();
    assert!(e.contains("theta = 1.5") && e.contains("<= 1.15"), "{e}");
    // θ does not matter to a direct run, η does not matter to a tree run.
    RunParams {
        solver: SolverKind::Direct,
        ..tree
    }
    .validate()
    .unwrap();
    let hermite = RunParams {
        solver: SolverKind::Hermite4,
        dt_max: 0.1,
        ..RunParams::default()
    };
    let e = hermite.validate().unwrap_err().to_string();
    assert!(e.contains("power of two"), "{e}");
    RunParams {
        solver: SolverKind::Tree,
        ..hermite
    }
    .validate()
    .unwrap();
    for bad in [f32::NAN, -0.01, 11.0] {
        let e = RunParams {
            eps: bad,
            ..RunParams::default()
        }
        .validate();
        assert!(e.is_err(), "eps {bad} accepted");
    }
}

#[test]
fn largest_n_follows_the_adapter_limits() {
    let limits = |binding: u64, buffer: u64| wgpu::Limits {
        max_storage_buffer_binding_size: binding,
        max_buffer_size: buffer,
        ..wgpu::Limits::default()
    };
    const MIB: u64 = 1 << 20;
    // WebGPU's default binding (128 MiB): 16-byte particle records, and
    // no tree array larger (cell moments 48 bytes at 0.3 cells per
    // particle, group boxes 48 bytes at 0.32 groups per particle).
    let default = limits(128 * MIB, 256 * MIB);
    assert_eq!(max_particles_within(&default, SolverKind::Direct), 8 * MIB);
    assert_eq!(max_particles_within(&default, SolverKind::Tree), 8 * MIB);
    // A desktop GPU that binds 1 GiB (SwiftShader does, so do discrete
    // GPUs in Chrome).
    let desktop = limits(1024 * MIB, 1024 * MIB);
    assert_eq!(max_particles_within(&desktop, SolverKind::Tree), 64 * MIB);
    // The smaller of the binding and the buffer limits counts.
    assert_eq!(
        max_particles_within(&limits(1024 * MIB, 64 * MIB), SolverKind::Direct),
        4 * MIB
    );
    // An H100 under wgpu's Vulkan backend: 2^31 − 1 bytes per binding and
    // 2^52 per buffer. The tree takes 2^27 − 1 particles (16-byte records
    // of 2^27 would need 2^31 bytes), every one of its arrays within the
    // binding; with the 80-byte cell records of before, 2^27 did not fit.
    let h100 = limits((1 << 31) - 1, 1 << 52);
    let max = max_particles_within(&h100, SolverKind::Tree);
    assert_eq!(max, (1 << 27) - 1);
    let arrays = webgrav::tree::TreeArrays::for_particles(max as u32);
    assert!(arrays.largest().1 < (1 << 31) - 1, "{arrays:?}");
    assert!(arrays.props + arrays.cell_boxes > 1 << 31, "{arrays:?}");
    // A huge binding: the 31-bit indices count.
    let huge = limits(1 << 40, 1 << 40);
    for &solver in &[SolverKind::Direct, SolverKind::Tree] {
        assert_eq!(max_particles_within(&huge, solver), u32::MAX as u64 / 2);
    }
    // At the largest N a binding allows every tree array fits it; one
    // particle more and an array (or a state record array) does not.
    let binding = 1 << 20;
    let n = webgrav::tree::max_particles_within(binding);
    assert!(
        webgrav::tree::TreeArrays::for_particles(n as u32)
            .largest()
            .1
            <= binding
    );
    assert!(
        webgrav::tree::TreeArrays::for_particles(n as u32 + 1)
            .largest()
            .1
            > binding
            || (n + 1) * 16 > binding
    );
    // The real device agrees with its own limits.
    let ctx = common::gpu();
    for &solver in SolverKind::ALL {
        assert_eq!(
            webgrav::app::device_max_particles(&ctx, solver),
            max_particles_within(&ctx.device.limits(), solver)
        );
    }
}

// A software adapter (SwiftShader in headless Chromium) starts the page
// from the direct sum at N = 2048 (~40 ms a step there, where the tree's
// barrier-heavy walk takes ~0.5 s at N = 4096) where the URL or its
// preset chose nothing else: what a visitor asked for is kept, and a
// solver alone gets the small N.
#[test]
fn software_adapters_start_small_unless_the_url_chose() {
    let start = |q: &str| {
        let (mut s, _) = Settings::from_query(q);
        let changed = s.apply_software_defaults(&Settings::given_keys(q));
        (s, changed)
    };
    let (s, changed) = start("?theta=0.3&autoplay=0");
    assert_eq!(changed, vec!["solver = direct", "n = 2048"]);
    assert_eq!(s.run.solver, SolverKind::Direct);
    assert_eq!(s.n, 2048);
    assert_eq!(s.get("theta").as_deref(), Some("0.3"));
    let (s, changed) = start("?solver=tree");
    assert_eq!(changed, vec!["n = 2048"]);
    assert_eq!((s.run.solver, s.n), (SolverKind::Tree, 2048));
    for q in [
        "?n=100000",
        "?n=100000&solver=direct",
        "?preset=plummer-relaxation",
    ] {
        let (plain, _) = Settings::from_query(q);
        let (s, changed) = start(q);
        assert!(changed.is_empty(), "{q}: {changed:?}");
        assert_eq!(s.to_query(true), plain.to_query(true), "{q}");
    }
    assert!(Settings::given_keys("?preset=plummer-relaxation").contains(&"n".to_string()));
    // A refused value chose nothing: the software start still applies
    // (a bad n fell back to the GPU's 16,384, a step per 20 s there).
    for q in ["?n=1e12", "?n=abc&solver=warp"] {
        let (s, changed) = start(q);
        assert_eq!(changed, vec!["solver = direct", "n = 2048"], "{q}");
        assert_eq!(s.n, 2048, "{q}");
    }
    let (s, changed) = start("?n=1e12&solver=direct");
    assert_eq!(changed, vec!["n = 2048"]);
    assert_eq!((s.run.solver, s.n), (SolverKind::Direct, 2048));
}

/// The page starts a Plummer sphere on the GPU alone, as from its read
/// back (`common::cases`; in the browser too, tests/web.rs).
#[test]
fn the_page_starts_a_plummer_sphere_on_the_gpu_as_from_its_read_back() {
    let ctx = common::gpu();
    pollster::block_on(common::cases::page_start_on_gpu(&ctx, 3000));
}

/// The page starts a galaxy on the GPU alone, as from the same galaxy
/// placed on the host (`common::cases`; in the browser too, tests/web.rs).
#[test]
fn the_page_starts_a_galaxy_on_the_gpu_as_from_the_host() {
    let ctx = common::gpu();
    pollster::block_on(common::cases::page_start_of_a_galaxy_on_gpu(&ctx, 3000));
}

/// The page's light read-out of a galaxy is its whole read-out's
/// (`common::cases`; in the browser too, tests/web.rs).
#[test]
fn a_light_read_out_of_a_galaxy_is_its_whole_read_out() {
    let ctx = common::gpu();
    pollster::block_on(common::cases::light_readout_of_a_galaxy(&ctx, 40_000));
}

/// The page's light read-out of a run is its whole read-out's
/// (`common::cases`; in the browser too, tests/web.rs).
#[test]
fn a_light_read_out_of_a_run_is_its_whole_read_out() {
    let ctx = common::gpu();
    pollster::block_on(common::cases::light_readout_of_a_run(&ctx, 6000));
}

/// The Lagrangian radii of a view sample (what the page's light read-outs
/// plot above `VIEW_SAMPLE` particles) against every particle's, at 2^20:
/// a quantile of 2^18 draws, whose standard error is largest at the 90 %
/// radius, where the density is lowest (about 0.15 % of it for a Plummer
/// sphere).
#[test]
fn lagrangian_radii_of_a_view_sample_are_every_particles() {
    use webgrav::app::readout::radii_and_view;
    use webgrav::render::camera::{sample_indices, VIEW_SAMPLE};
    let p = Model::Plummer.generate(1 << 20, 3).unwrap();
    let sample: Vec<_> = sample_indices(p.len(), VIEW_SAMPLE)
        .map(|k| p.pos_mass[k])
        .collect();
    let (all, _) = radii_and_view(&p.pos_mass);
    let (some, _) = radii_and_view(&sample);
    for (a, s) in all.iter().zip(&some) {
        let off = (s / a - 1.0).abs();
        println!("radius {a:.5}: sample {s:.5} ({off:.2e})");
        assert!(off < 5e-3, "{a} against {s}");
    }
}
