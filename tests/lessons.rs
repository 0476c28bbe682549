//! Lessons (`app::lessons`, `www/lessons/*.json`): every file holds to
//! the schema and opens by URL; the orbit lessons' runs measure what their
//! teacher notes say (Kepler's third law for every planet, the
//! figure-eight's return after one period); playback speed (steps per
//! frame) never changes a trajectory, to the bit.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use pollster::block_on;
use webgrav::app::lessons::{self, Lesson};
use webgrav::app::orbits::OrbitTracker;
use webgrav::app::settings::Settings;
use webgrav::gpu::GpuContext;
use webgrav::render::map::Units;
use webgrav::run::{Readout, Run};
use webgrav::state::few_body::{Sample, FIGURE_EIGHT_PERIOD, PLANETS};
use webgrav::state::Model;

#[test]
fn every_lesson_file_is_listed_and_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("www/lessons");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|f| f.strip_suffix(".json").map(String::from))
        .collect();
    files.sort();
    let mut listed: Vec<String> = lessons::names().map(String::from).collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "www/lessons/*.json and app::lessons::SOURCES"
    );
    for l in lessons::all().unwrap() {
        l.validate(&l.name.clone()).unwrap();
    }
}

#[test]
fn validation_refuses_what_the_page_cannot_measure() {
    let good = lessons::lesson("kepler").unwrap().unwrap();
    let broken = |edit: &dyn Fn(&mut Lesson)| {
        let mut l = good.clone();
        edit(&mut l);
        l.validate("kepler").unwrap_err()
    };
    let e = broken(&|l| {
        l.parts[0].questions[0]
            .measures
            .push(measure("weight", None))
    });
    assert!(e.contains("unknown measure 'weight'"), "{e}");
    // An orbit measure without a body, or of the central star.
    let e = broken(&|l| {
        l.parts[0].questions[0]
            .measures
            .push(measure("period", None))
    });
    assert!(e.contains("needs a body"), "{e}");
    let e = broken(&|l| {
        l.parts[0].questions[0]
            .measures
            .push(measure("period", Some(0)))
    });
    assert!(e.contains("needs a body"), "{e}");
    let e = broken(&|l| l.parts[0].query.push_str("&theta=7"));
    assert!(e.contains("theta=7"), "{e}");
    let e = broken(&|l| l.parts[0].teacher.expect[0].key = "virial".into());
    assert!(e.contains("names no measure"), "{e}");
    let e = broken(&|l| l.parts[0].questions.truncate(1));
    assert!(e.contains("questions"), "{e}");
    let e = broken(&|l| l.name = "other".into());
    assert!(e.contains("name"), "{e}");
    // The file's own fields only.
    let text = serde_json::to_string(&good)
        .unwrap()
        .replacen('{', "{\"extra\":1,", 1);
    assert!(serde_json::from_str::<Lesson>(&text).is_err());
}

fn measure(key: &str, body: Option<usize>) -> lessons::Measure {
    lessons::Measure {
        key: key.into(),
        body,
        run: None,
        label: "x".into(),
        unit: String::new(),
    }
}

#[test]
fn a_lesson_opens_by_url_with_its_part_and_variant() {
    let kepler = lessons::lesson("kepler").unwrap().unwrap();
    let (s, w) = Settings::from_query("lesson=kepler");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(s, Settings::from_query(&kepler.parts[0].query).0);
    let (s, w) = Settings::from_query("lesson=kepler&part=1");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(s.model, Model::FigureEight);
    // Explicit parameters override the lesson's.
    let (s, _) = Settings::from_query("lesson=kepler&spf=3");
    assert_eq!(s.steps_per_frame, 3);
    let keys = Settings::given_keys("lesson=kepler");
    assert!(keys.iter().any(|k| k == "model"), "{keys:?}");
    let with_runs = lessons::all()
        .unwrap()
        .into_iter()
        .find(|l| l.parts.iter().any(|p| !p.runs.is_empty()))
        .expect("a lesson with variants");
    let i = with_runs
        .parts
        .iter()
        .position(|p| !p.runs.is_empty())
        .unwrap();
    let q = format!("lesson={}&part={i}&variant=0", with_runs.name);
    let (s, w) = Settings::from_query(&q);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        s,
        Settings::from_query(&with_runs.query(i, Some(0)).unwrap()).0
    );
    for bad in [
        "lesson=nope",
        "lesson=kepler&part=9",
        "lesson=kepler&part=x",
    ] {
        let (_, w) = Settings::from_query(bad);
        assert_eq!(w.len(), 1, "{bad}: {w:?}");
    }
}

#[test]
fn planets_start_on_their_keplerian_ellipses() {
    let m = Model::Planets.generate_tagged(9, 4).unwrap();
    let p = &m.particles;
    let star = p.pos_mass[0].pos.map(f64::from);
    let star_v = p.vel[0].vel.map(f64::from);
    for (k, planet) in PLANETS.iter().enumerate() {
        let x = p.pos_mass[k + 1].pos.map(f64::from);
        let v = p.vel[k + 1].vel.map(f64::from);
        let r = (0..3).map(|d| (x[d] - star[d]).powi(2)).sum::<f64>().sqrt();
        let v2 = (0..3).map(|d| (v[d] - star_v[d]).powi(2)).sum::<f64>();
        let mu = 1.0 + planet.mass;
        // Vis-viva: a = 1 / (2/r − v²/μ); at perihelion r = a (1 − e).
        let a = 1.0 / (2.0 / r - v2 / mu);
        assert!(
            (a / planet.semi_major_axis - 1.0).abs() < 1e-5,
            "{}: a = {a}",
            planet.name
        );
        let e = 1.0 - r / a;
        assert!(
            (e - planet.eccentricity).abs() < 1e-5,
            "{}: e = {e}",
            planet.name
        );
        assert_eq!(m.components[k + 1], planet.name);
    }
    assert!(Model::Planets.generate(10, 0).is_err());
    assert!(Model::Planets.generate(1, 0).is_err());
    assert!(Model::FigureEight.generate(4, 0).is_err());
}

/// A run of `query` played as the page plays it: `spf` steps queued per
/// frame (Hermite: the target moved by spf × dt, then the block steps up
/// to it), the bodies sampled after every block step, until `until`.
fn play(ctx: &GpuContext, query: &str, spf: u32, until: f64) -> (Run, Option<OrbitTracker>) {
    let (s, w) = Settings::from_query(query);
    assert!(w.is_empty(), "{w:?}");
    let m = block_on(s.generate_on(ctx)).unwrap();
    let mut run = block_on(Run::new(ctx, &m.particles, 0.0, s.run.validate().unwrap())).unwrap();
    let masses = m.particles.pos_mass.iter().map(|p| p.mass as f64).collect();
    let mut tracker = run
        .few_body_sample()
        .map(|first| OrbitTracker::new(masses, first));
    assert_eq!(run.sample_few_bodies(), tracker.is_some());
    // The page reads the state out before its first step: E₀ of |ΔE/E₀|.
    block_on(run.readout(ctx)).unwrap();
    while run.time() < until {
        run.queue_frame(ctx, spf);
        if run.needs_advance() {
            block_on(run.advance(ctx)).unwrap();
        }
        for sample in run.take_few_body_samples() {
            tracker.as_mut().expect("a few-body run").push(sample);
        }
    }
    (run, tracker)
}

// The kepler lesson's measures of its own runs land where its teacher
// notes say: T²/a³ of every planet, the figure-eight's return.
#[test]
fn the_kepler_lesson_measures_what_its_notes_expect() {
    let ctx = common::gpu();
    let lesson = lessons::lesson("kepler").unwrap().unwrap();
    for (i, part) in lesson.parts.iter().enumerate() {
        let (s, _) = Settings::from_query(&part.query);
        let (mut run, tracker) = play(&ctx, &part.query, s.steps_per_frame, part.run_until);
        let tracker = tracker.expect("a few-body Hermite run");
        let r = block_on(run.readout(&ctx)).unwrap();
        let units = Units::of_model(s.model);
        for e in &part.teacher.expect {
            let value = measure_of(&tracker, &r, &e.key, e.body, units);
            let value = value.unwrap_or_else(|| panic!("part {i}: {} not measured", e.key));
            assert!(
                e.holds(value),
                "part {i}: {} of body {:?} = {value}, expected {e:?}",
                e.key,
                e.body
            );
        }
    }
}

/// An orbit lesson's measure as the page takes it: from the tracker (the
/// page's `bodies()`) or the read-out.
fn measure_of(
    t: &OrbitTracker,
    r: &Readout,
    key: &str,
    body: Option<usize>,
    u: Units,
) -> Option<f64> {
    let orbit = || t.orbit(body.expect("a body"));
    Some(match key {
        "period" => u.time_in_unit(orbit()?.period),
        "semi_major_axis" => orbit()?.semi_major_axis,
        "eccentricity" => orbit()?.eccentricity,
        "kepler_ratio" => {
            let o = orbit()?;
            u.time_in_unit(o.period).powi(2) / o.semi_major_axis.powi(3)
        }
        "return_time" => u.time_in_unit(t.closest_return()?.time),
        "return_distance" => t.closest_return()?.distance,
        "energy_error" => r.energy_error(),
        "energy" => r.diagnostics.total,
        "kinetic" => r.diagnostics.kinetic,
        "potential" => r.diagnostics.potential,
        "virial" => r.diagnostics.virial_ratio,
        "time" => u.time_in_unit(r.snapshot.time),
        _ => panic!("the orbit lessons' test does not measure {key}"),
    })
}

#[test]
fn the_figure_eight_returns_after_one_period() {
    let ctx = common::gpu();
    let q = "model=figure-eight&n=3&solver=hermite6&eps=0&dt=0.03125&eta=0.02";
    let (_, tracker) = play(&ctx, q, 2, 7.0);
    let r = tracker.unwrap().closest_return().expect("a return");
    assert!((r.time - FIGURE_EIGHT_PERIOD).abs() < 1e-3, "{r:?}");
    assert!(r.distance < 1e-3, "{r:?}");
}

/// The state a run reaches at `until` with `spf` steps per frame.
fn final_state(ctx: &GpuContext, query: &str, spf: u32, until: f64) -> (f64, Vec<Sample>, Vec<u8>) {
    let (mut run, _) = play(ctx, query, spf, until);
    let sample = run.few_body_sample();
    let r = block_on(run.readout(ctx)).unwrap();
    let bytes = bytemuck::cast_slice(&r.snapshot.particles.pos_mass).to_vec();
    (r.snapshot.time, sample.into_iter().collect(), bytes)
}

// PhET's Gravity and Orbits #373: the orbit changed with playback speed.
// Here the time step is the run's, never the frame's: 1, 3 or 8 steps per
// frame reach the same state, to the bit, for Hermite block steps, the
// direct leapfrog and the tree.
#[test]
fn playback_speed_never_changes_a_trajectory() {
    let ctx = common::gpu();
    for (query, until) in [
        ("model=planets&n=5&solver=hermite4&eps=0&dt=0.0625", 3.0),
        (
            "model=figure-eight&n=3&solver=hermite6&eps=0&dt=0.03125",
            1.5,
        ),
        (
            "model=plummer&n=256&solver=direct&eps=0.05&dt=0.0078125",
            0.1875,
        ),
        (
            "model=plummer&n=512&solver=tree&theta=0.6&alpha=0&eps=0.05&dt=0.0078125",
            0.1875,
        ),
    ] {
        let base = final_state(&ctx, query, 1, until);
        for spf in [3, 8] {
            let other = final_state(&ctx, query, spf, until);
            // A leapfrog run at spf = 8 may pass `until` by whole frames:
            // compare where both stopped on the same step.
            if other.0 == base.0 {
                assert_eq!(other, base, "{query}: spf {spf} against 1");
            } else {
                let same = final_state(&ctx, query, 1, other.0);
                assert_eq!(
                    other, same,
                    "{query}: spf {spf} against 1 at t = {}",
                    other.0
                );
            }
        }
    }
}

// The orbit measures follow the block steps, not the frames: a frame of
// 64 steps measures every planet's orbit as a frame of one does, to the
// bit (the page's measures do not depend on the playback speed either).
#[test]
fn orbit_measures_do_not_depend_on_steps_per_frame() {
    let ctx = common::gpu();
    let q = "model=planets&n=4&solver=hermite4&eps=0&dt=0.03125";
    let (_, slow) = play(&ctx, q, 1, 2.0);
    let (_, fast) = play(&ctx, q, 64, 2.0);
    let (slow, fast) = (slow.unwrap(), fast.unwrap());
    let mercury = slow.orbit(1).expect("Mercury's orbit");
    assert!((mercury.period / (std::f64::consts::TAU * 0.2408) - 1.0).abs() < 0.01);
    for k in 1..4 {
        assert_eq!(slow.orbit(k), fast.orbit(k), "planet {k}");
    }
}

// A run asked for its bodies' states keeps sampling when a
// reconfiguration gives it a new integrator (4th to 6th order).
#[test]
fn sampling_survives_a_new_integrator() {
    let ctx = common::gpu();
    let (s, _) = Settings::from_query("model=planets&n=3&solver=hermite4&eps=0&dt=0.03125");
    let m = s.generate().unwrap();
    let mut run = block_on(Run::new(&ctx, &m.particles, 0.0, s.run.validate().unwrap())).unwrap();
    assert!(run.sample_few_bodies());
    let mut p = s.run;
    p.solver = webgrav::run::SolverKind::Hermite6;
    block_on(run.reconfigure(&ctx, p.validate().unwrap())).unwrap();
    run.queue(&ctx, 4);
    block_on(run.advance(&ctx)).unwrap();
    let samples = run.take_few_body_samples();
    assert!(
        !samples.is_empty(),
        "no samples after the new integrator's block steps"
    );
    assert!(samples.windows(2).all(|w| w[0].t < w[1].t));
}
