//! The galaxy models against their formulas: sampled densities (KS
//! distances on the enclosed mass), velocities against the Jeans equation
//! (an independent route to the moments Eddington's f(E) must give), the
//! virial ratio from the f64 direct sum, disk kinematics and Toomre Q, the
//! Milky Way's components, and the merger's orbit. Each galaxy check runs
//! on the CPU's sampler and on the GPU's (`generate::Gpu`), which must
//! pass the same checks; the GPU's particles are also compared with the
//! CPU's one by one, as the Plummer sphere's are. Small N.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::direct::reference;
use webgrav::state::galaxy::catalog;
use webgrav::state::galaxy::units::msun;
use webgrav::state::galaxy::{
    Component, Cpu, DiskEquilibrium, Equilibrium, Realization, Sampler, Shape, SphericalGalaxy,
};
use webgrav::state::galaxy::{Realize, RealizeOnCpu};
use webgrav::state::plummer::PLUMMER_CHUNK;
use webgrav::state::{generate, plummer, Diagnostics, Model, Particles};

/// Kolmogorov–Smirnov distance between the samples `r` and the
/// cumulative distribution `cdf`.
fn ks_distance(r: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut r = r.to_vec();
    r.sort_by(f64::total_cmp);
    let n = r.len() as f64;
    r.iter()
        .enumerate()
        .map(|(i, &x)| {
            let c = cdf(x);
            (c - i as f64 / n).abs().max((c - (i + 1) as f64 / n).abs())
        })
        .fold(0.0, f64::max)
}

/// The KS distance that N samples of the true distribution exceed with
/// probability 1 % (asymptotic critical value 1.63/√N).
fn ks_bound(n: usize) -> f64 {
    1.63 / (n as f64).sqrt()
}

fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Radii of the particles tagged `tag`.
fn radii(g: &Realization, tag: u32) -> Vec<f64> {
    (0..g.len())
        .filter(|&k| g.tag[k] == tag)
        .map(|k| norm(g.pos[k]))
        .collect()
}

/// `n` particles of every extended component of `galaxy` about the model's
/// own centre (`realize` moves them to the centre of mass, which the few
/// particles far out in a Hernquist tail shift by ~√(a r_t / N)), with
/// its tabulated equilibrium, drawn by `sampler`.
fn sample(
    galaxy: &SphericalGalaxy,
    n: usize,
    seed: u64,
    sampler: &impl Sampler,
) -> (Equilibrium, Realization) {
    let eq = Equilibrium::new(&galaxy.components, None);
    let mut g = Realization::default();
    for (k, c) in galaxy.components.iter().enumerate() {
        let tag = g.add_component(c.name);
        if eq.component(k).is_some() {
            let drawn = eq.sample(k, n, (c.mass / n as f64, tag), seed, (&mut g, sampler));
            pollster::block_on(drawn).unwrap();
        }
    }
    (eq, g)
}

/// Runs `check` with the CPU's sampler and with a GPU's.
macro_rules! on_both_samplers {
    ($check:ident) => {{
        println!("-- CPU");
        $check(&Cpu);
        println!("-- GPU");
        let ctx = common::gpu();
        $check(&generate::Gpu::new(&ctx));
    }};
}

/// `realize_with` of any galaxy, waited for.
fn drawn<T>(future: impl std::future::Future<Output = webgrav::Result<T>>) -> T {
    pollster::block_on(future).unwrap()
}

#[test]
fn spherical_models_sample_their_cumulative_mass() {
    fn check(s: &impl Sampler) {
        let n = 4000;
        // Truncated far out (10⁴ scale radii), so M(<r) is the untruncated
        // formula to ~1e-3 (Hernquist's mass beyond 10⁴ a) where it matters.
        let (_, hernquist) = sample(
            &catalog::single("stars", Shape::Hernquist { a: 1.0 }, 1e4),
            n,
            3,
            s,
        );
        let d = ks_distance(&radii(&hernquist, 0), |r| (r / (1.0 + r)).powi(2));
        println!("Hernquist KS {d:.4} (bound {:.4})", ks_bound(n));
        assert!(d < ks_bound(n));

        let (_, plummer) = sample(
            &catalog::single("stars", Shape::Plummer { a: 1.0 }, 1e3),
            n,
            4,
            s,
        );
        let d = ks_distance(&radii(&plummer, 0), |r| (r * r / (1.0 + r * r)).powf(1.5));
        println!("Plummer KS {d:.4}");
        assert!(d < ks_bound(n));

        // NFW inside its truncation radius has exactly the NFW shape: the
        // radii below r_t follow m(r)/m(r_t), m(x) = ln(1 + x) − x/(1 + x).
        let c = 10.0;
        let (_, nfw) = sample(&catalog::single("halo", Shape::Nfw { rs: 1.0 }, c), n, 5, s);
        let inside: Vec<f64> = radii(&nfw, 0).into_iter().filter(|r| *r < c).collect();
        let m = |x: f64| (1.0 + x).ln() - x / (1.0 + x);
        let d = ks_distance(&inside, |r| m(r) / m(c));
        println!("NFW KS {d:.4} ({} inside r_t)", inside.len());
        assert!(d < ks_bound(inside.len()));
    }
    on_both_samplers!(check);
}

#[test]
fn sersic_bulge_projects_to_its_effective_radius() {
    fn check(s: &impl Sampler) {
        // The Prugniel–Simien deprojection's projected half-mass radius is
        // R_e to ~1 % (Lima Neto et al. 1999); the sample median of 4000
        // projected radii scatters by ~2.5 % (1.25/(2 f(R_e) √N) for this
        // profile), so 8 % is a 3σ bound with the deprojection's error.
        for n_sersic in [1.0, 3.0, 4.0] {
            let (_, g) = sample(
                &catalog::single(
                    "bulge",
                    Shape::Sersic {
                        re: 1.0,
                        n: n_sersic,
                    },
                    1e3,
                ),
                4000,
                6,
                s,
            );
            let mut projected: Vec<f64> = g.pos.iter().map(|p| p[0].hypot(p[1])).collect();
            projected.sort_by(f64::total_cmp);
            let median = projected[projected.len() / 2];
            println!("Sérsic n = {n_sersic}: projected half-mass radius {median:.4}");
            assert!((median - 1.0).abs() < 0.08, "n = {n_sersic}: {median}");
        }
    }
    on_both_samplers!(check);
}

/// A halo, a bulge and a black hole: the bulge's velocities depend on
/// the halo's and the hole's mass, so this checks the total potential.
fn halo_bulge_bh() -> SphericalGalaxy {
    SphericalGalaxy {
        components: vec![
            Component::truncated("halo", 1.0, Shape::Nfw { rs: 1.0 }, 10.0),
            Component::truncated("bulge", 0.25, Shape::Hernquist { a: 0.2 }, 20.0),
            Component::black_hole(0.02),
        ],
    }
}

/// ⟨v²⟩ = 3σ_r² of an isotropic component from the Jeans equation,
/// σ_r²(r) = (1/ρ) ∫_r^∞ ρ M / r'² dr', by quadrature in ln r.
fn jeans_v2(eq: &Equilibrium, k: usize, r: f64) -> f64 {
    let (table, _) = eq.component(k).unwrap();
    let r_max = *eq.potential.r.last().unwrap();
    let steps = 4000;
    let h = (r_max / r).ln() / steps as f64;
    let integrand = |x: f64| table.density(x) * eq.potential.mass_at(x) / x;
    let mut s = 0.5 * (integrand(r) + integrand(r_max));
    for i in 1..steps {
        s += integrand(r * (h * i as f64).exp());
    }
    3.0 * s * h / table.density(r)
}

/// `jeans_v2` on 200 radii from 10⁻³ to 10³, interpolated linearly in
/// ln r (smooth, so far below the sampling noise).
fn jeans_table(eq: &Equilibrium, k: usize) -> impl Fn(f64) -> f64 {
    let ln_r: Vec<f64> = (0..200)
        .map(|i| (-3.0 + 6.0 * i as f64 / 199.0) * 10f64.ln())
        .collect();
    let v2: Vec<f64> = ln_r.iter().map(|x| jeans_v2(eq, k, x.exp())).collect();
    move |r: f64| {
        let x = r.ln().clamp(ln_r[0], ln_r[199]);
        let i = ln_r.partition_point(|l| *l <= x).clamp(1, 199);
        let t = (x - ln_r[i - 1]) / (ln_r[i] - ln_r[i - 1]);
        v2[i - 1] + t * (v2[i] - v2[i - 1])
    }
}

#[test]
fn velocities_follow_the_jeans_equation_in_the_total_potential() {
    fn check(s: &impl Sampler) {
        // 5000 particles in each component.
        let (eq, g) = sample(&halo_bulge_bh(), 5000, 7, s);
        for (k, name) in [(0usize, "halo"), (1, "bulge")] {
            let jeans = jeans_table(&eq, k);
            // Radial bins of equal numbers of particles; in each, the mean v²
            // against the mean Jeans ⟨v²⟩ at the particles' radii.
            let mut parts: Vec<(f64, f64)> = (0..g.len())
                .filter(|&i| g.tag[i] == k as u32)
                .map(|i| (norm(g.pos[i]), norm(g.vel[i]).powi(2)))
                .collect();
            parts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let bins = 6;
            let per = parts.len() / bins;
            for b in 0..bins {
                let bin = &parts[b * per..(b + 1) * per];
                let measured = bin.iter().map(|p| p.1).sum::<f64>() / per as f64;
                let expected = bin.iter().map(|p| jeans(p.0)).sum::<f64>() / per as f64;
                // v² of an isotropic, nearly Maxwellian population has a
                // relative standard deviation ≈ √(2/3): the bin mean's is
                // √(2/(3 n)); 4 of those bound it (plus 2 % for the grid).
                let tol = 4.0 * (2.0 / (3.0 * per as f64)).sqrt() + 0.02;
                let r_mid = bin[per / 2].0;
                println!(
                    "{name} r ≈ {r_mid:.3}: <v²> {measured:.4} Jeans {expected:.4} ({:+.3}, tol {tol:.3})",
                    measured / expected - 1.0
                );
                assert!((measured / expected - 1.0).abs() < tol, "{name} bin {b}");
            }
        }
    }
    on_both_samplers!(check);
}

/// 2K/|W| with W from the unsoftened f64 direct sum.
fn virial_ratio(g: &Realization) -> Diagnostics {
    let p = g.particles();
    let f = reference::forces(&p.pos_mass, 0.0);
    Diagnostics::sum((0..g.len()).map(|k| (g.mass[k], g.pos[k], g.vel[k], f[k].pot)))
}

#[test]
fn spherical_models_are_in_virial_equilibrium_at_rest_and_centred() {
    fn check(s: &impl Sampler) {
        for (name, galaxy) in [
            ("hernquist", catalog::hernquist()),
            ("nfw", catalog::nfw()),
            ("sersic", catalog::sersic()),
            ("halo+bulge+bh", halo_bulge_bh()),
        ] {
            let g = drawn(galaxy.realize_with(3000, 8, s));
            let d = virial_ratio(&g);
            println!(
                "{name}: 2K/|W| = {:.4}, |p| = {:.2e}, |com| = {:.2e}",
                d.virial_ratio,
                norm(d.momentum),
                norm(d.center_of_mass)
            );
            // W of N particles scatters by a few per cent for cuspy models
            // (the innermost particles), K by ~1/√N.
            assert!((d.virial_ratio - 1.0).abs() < 0.05, "{name}");
            assert!(norm(d.momentum) < 1e-12 && norm(d.center_of_mass) < 1e-12);
        }
    }
    on_both_samplers!(check);
}

/// N for a test of every model: the few-body models have their own (a
/// star and at most 8 planets; the figure eight's 3).
fn n_for(m: Model, n: usize) -> usize {
    match m {
        Model::Planets => 9,
        Model::FigureEight => 3,
        _ => n,
    }
}

#[test]
fn models_are_deterministic_per_seed() {
    for &m in Model::ALL {
        let n = n_for(m, 600);
        let a = m.generate_tagged(n, 5).unwrap();
        assert_eq!(a, m.generate_tagged(n, 5).unwrap(), "{}", m.name());
        // (The figure eight is one exact orbit: no seed in it.)
        if m != Model::FigureEight {
            assert_ne!(a.particles, m.generate(n, 6).unwrap(), "{}", m.name());
        }
        assert_eq!(a.particles.len(), n);
        assert_eq!(a.tags.len(), n);
        assert!(a.tags.iter().all(|&t| (t as usize) < a.components.len()));
        a.particles.validate().unwrap();
    }
}

#[test]
fn models_are_the_same_on_any_number_of_threads() {
    // Every particle comes from its own stream, so the cores may split
    // the work in any way: bit-identical particles on 1, 2 and 7 threads
    // (7: chunks that do not divide the components' counts).
    let on = |threads: usize, m: Model| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| m.generate_tagged(n_for(m, 5000), 21).unwrap())
    };
    for &m in Model::ALL {
        let one = on(1, m);
        for threads in [2, 7] {
            assert_eq!(one, on(threads, m), "{} on {threads} threads", m.name());
        }
    }
}

/// KS distance of the Plummer sphere `p`'s speeds from the AHW law: its
/// q = v/v_esc(r) has the density q²(1 − q²)^(7/2) at every radius
/// (Aarseth, Hénon & Wielen 1974); the CDF by Simpson's rule. Radii and
/// speeds about the centre of mass, which moves by ~1/√N.
fn plummer_speed_ks(p: &Particles) -> f64 {
    let a = plummer::SCALE_RADIUS;
    let q: Vec<f64> = (0..p.len())
        .map(|k| {
            let r = norm(p.pos_mass[k].pos.map(f64::from)) / a;
            let v = norm(p.vel[k].vel.map(f64::from)) * a.sqrt();
            v / (std::f64::consts::SQRT_2 * (1.0 + r * r).powf(-0.25))
        })
        .collect();
    let g = |x: f64| x * x * (1.0 - x * x).max(0.0).powf(3.5);
    let integral = |x: f64| {
        let steps = 400;
        let h = x / steps as f64;
        (0..steps)
            .map(|i| {
                let (u, w) = (i as f64 * h, (i + 1) as f64 * h);
                h / 6.0 * (g(u) + 4.0 * g(0.5 * (u + w)) + g(w))
            })
            .sum::<f64>()
    };
    let total = integral(1.0);
    ks_distance(&q, |x| integral(x.clamp(0.0, 1.0)) / total)
}

/// KS distance of `p`'s radii from the Plummer sphere's cumulative mass
/// (r³/(1 + r²)^(3/2) in scale radii, cut at `plummer::MASS_CUT`).
fn plummer_radius_ks(p: &Particles) -> f64 {
    let a = plummer::SCALE_RADIUS;
    let r: Vec<f64> = p
        .pos_mass
        .iter()
        .map(|x| norm(x.pos.map(f64::from)) / a)
        .collect();
    ks_distance(&r, |x| {
        (x.powi(3) / (1.0 + x * x).powf(1.5) / plummer::MASS_CUT).min(1.0)
    })
}

#[test]
fn plummer_speeds_follow_the_aarseth_henon_wielen_distribution() {
    let n = 20_000;
    let p = Model::Plummer.generate(n, 1).unwrap();
    let (d, dr) = (plummer_speed_ks(&p), plummer_radius_ks(&p));
    println!(
        "Plummer speeds KS {d:.4}, radii {dr:.4} (bound {:.4})",
        ks_bound(n)
    );
    assert!(d < ks_bound(n) && dr < ks_bound(n));
}

#[test]
fn plummer_sampled_on_the_gpu_is_the_cpu_model_to_f32_rounding() {
    let ctx = common::gpu();
    let n = 20_000;
    let on_gpu = |n: usize, seed, at_rest| {
        pollster::block_on(generate::plummer(&ctx, n, seed, at_rest)).unwrap()
    };
    // As the ranks of a run on several GPUs sample it: each its own chunks
    // (`cuts`, in chunks), the frame from every chunk's sums.
    let in_parts = |n: usize, cuts: &[usize]| {
        let parts: Vec<_> = cuts
            .windows(2)
            .map(|w| pollster::block_on(generate::plummer_part(&ctx, n, 1, false, w[0]..w[1])))
            .collect::<Result<_, _>>()
            .unwrap();
        let sums: Vec<[f64; 6]> = parts.iter().flat_map(|p| p.sums.clone()).collect();
        assert_eq!(sums.len(), n.div_ceil(PLUMMER_CHUNK));
        let frame = plummer::centre_of_chunks(n, &sums);
        let mut whole = Particles::default();
        for part in parts {
            let p = pollster::block_on(part.centred(&ctx, frame).read(&ctx)).unwrap();
            whole.pos_mass.extend(p.pos_mass);
            whole.vel.extend(p.vel);
            whole.id.extend(p.id);
        }
        whole
    };
    let gpu = on_gpu(n, 1, false);
    let cpu = Model::Plummer.generate(n, 1).unwrap();
    assert_eq!(gpu.id, cpu.id);
    assert!(gpu
        .pos_mass
        .iter()
        .zip(&cpu.pos_mass)
        .all(|(g, c)| g.mass == c.mass));
    // Particle by particle: f32 arithmetic on the same random numbers
    // (the outermost radii lose ~1e-4 to the cancellation in m^(-2/3) − 1).
    let apart = |g: [f32; 3], c: [f32; 3]| {
        let (g, c) = (g.map(f64::from), c.map(f64::from));
        norm([g[0] - c[0], g[1] - c[1], g[2] - c[2]]) / (norm(c) + 1e-6)
    };
    let mut worst = 0.0f64;
    let mut differ = 0;
    for k in 0..n {
        let d = apart(gpu.pos_mass[k].pos, cpu.pos_mass[k].pos)
            .max(apart(gpu.vel[k].vel, cpu.vel[k].vel));
        if d > 1e-3 {
            differ += 1;
        } else {
            worst = worst.max(d);
        }
    }
    println!("GPU Plummer vs CPU: {differ} of {n} apart, the rest within {worst:.2e}");
    // A particle differs only where the speed's rejection test falls on
    // the other side in f32: ~1e-6 of the trials.
    assert!(
        differ <= n / 1000 && worst < 1e-3,
        "{differ} apart, worst {worst:e}"
    );
    // The same distribution, and centred.
    let (d, dr) = (plummer_speed_ks(&gpu), plummer_radius_ks(&gpu));
    assert!(
        d < ks_bound(n) && dr < ks_bound(n),
        "KS speeds {d}, radii {dr}"
    );
    let mean = |f: &dyn Fn(usize) -> [f32; 3]| {
        let s = (0..n).fold([0.0; 3], |s, k| {
            std::array::from_fn(|a| s[a] + f(k)[a] as f64)
        });
        norm(s) / n as f64
    };
    assert!(mean(&|k| gpu.pos_mass[k].pos) < 1e-7 && mean(&|k| gpu.vel[k].vel) < 1e-7);
    // One adapter, one seed: the same bits every time, and in any parts
    // (chunks of 65,536 particles; the last one short); another seed,
    // another model; at rest, the same positions and no motion.
    assert_eq!(gpu, on_gpu(n, 1, false));
    let big = 4 * PLUMMER_CHUNK + 4321;
    let all = on_gpu(big, 1, false);
    assert_eq!(in_parts(big, &[0, 5]), all);
    assert_eq!(in_parts(big, &[0, 1, 1, 4, 5]), all);
    assert_ne!(gpu.pos_mass, on_gpu(n, 2, false).pos_mass);
    let cold = on_gpu(n, 1, true);
    assert_eq!(cold.pos_mass, gpu.pos_mass);
    assert!(cold.vel.iter().all(|v| v.vel == [0.0; 3]));
    // Equilibrium: 2K/|W| = 1 within the scatter of 5000 particles.
    let few = on_gpu(5000, 3, false);
    let f = reference::forces(&few.pos_mass, 0.0);
    let d = Diagnostics::sum((0..few.len()).map(|k| {
        let (x, v) = (few.pos_mass[k].pos, few.vel[k].vel);
        (1.0 / 5000.0, x.map(f64::from), v.map(f64::from), f[k].pot)
    }));
    println!("GPU Plummer 2K/|W| = {:.4}", d.virial_ratio);
    assert!((d.virial_ratio - 1.0).abs() < 0.06);
}

#[test]
fn galaxies_sampled_on_the_gpu_are_the_cpu_models_to_f32_rounding() {
    // Every galaxy model through `Model::generate_on` against the CPU's
    // `generate_with`: the same components, tags and masses, and particle
    // by particle the same positions and velocities but for f32 rounding
    // (the tables' lookups in f32, the disk's moments interpolated) and the
    // rare particle whose rejection test falls on the other side.
    let ctx = common::gpu();
    let params = webgrav::state::ModelParams::default();
    // Every galaxy: all but the Plummer sphere, the cold collapse and the
    // few-body models.
    let not_galaxies = [
        Model::Plummer,
        Model::ColdCollapse,
        Model::Planets,
        Model::FigureEight,
    ];
    for &model in Model::ALL.iter().filter(|m| !not_galaxies.contains(m)) {
        let n = 6000;
        let gpu = pollster::block_on(model.generate_on(&ctx, n, 3, &params)).unwrap();
        let cpu = model.generate_with(n, 3, &params).unwrap();
        let name = model.name();
        assert_eq!(gpu.components, cpu.components, "{name}");
        assert_eq!(gpu.tags, cpu.tags, "{name}");
        let (g, c) = (&gpu.particles, &cpu.particles);
        assert_eq!(g.id, c.id, "{name}");
        assert!(g
            .pos_mass
            .iter()
            .zip(&c.pos_mass)
            .all(|(a, b)| a.mass == b.mass));
        // Relative to the model's own scale: the median radius and speed.
        let median = |v: Vec<f64>| {
            let mut v = v;
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let wide = |x: [f32; 3]| x.map(f64::from);
        let r_scale = median(c.pos_mass.iter().map(|p| norm(wide(p.pos))).collect());
        let v_scale = median(c.vel.iter().map(|v| norm(wide(v.vel))).collect());
        let apart = |a: [f32; 3], b: [f32; 3], scale: f64| {
            let (a, b) = (wide(a), wide(b));
            norm([a[0] - b[0], a[1] - b[1], a[2] - b[2]]) / (norm(b) + 1e-3 * scale)
        };
        let (mut differ, mut worst) = (0, 0.0f64);
        for k in 0..n {
            let d = apart(g.pos_mass[k].pos, c.pos_mass[k].pos, r_scale).max(apart(
                g.vel[k].vel,
                c.vel[k].vel,
                v_scale,
            ));
            if d > 1e-3 {
                differ += 1;
            } else {
                worst = worst.max(d);
            }
        }
        println!("{name}: {differ} of {n} apart, the rest within {worst:.2e}");
        assert!(differ <= n / 200 && worst < 1e-3, "{name}: {differ} apart");
        // One adapter, one seed: the same bits.
        let again = pollster::block_on(model.generate_on(&ctx, n, 3, &params)).unwrap();
        assert_eq!(again, gpu, "{name}");
    }
    // N the device cannot hold is refused before anything is sampled.
    let huge = ctx.max_elements(16) as usize + 1;
    let refused = pollster::block_on(Model::MilkyWay.generate_on(&ctx, huge, 1, &params));
    assert!(matches!(
        refused,
        Err(webgrav::Error::TooManyParticles { .. })
    ));
}

#[test]
fn galaxies_placed_on_the_gpu_are_the_galaxies_placed_on_the_host() {
    // `Model::galaxy_on_gpu` (components sampled in place, placed on the
    // GPU from their sums) against `generate_on` (the same samples read
    // back, placed and centred in f64 on the host): the same tags and
    // masses, and every particle where the host put it but for the f32
    // placement's rounding; the centre of mass at rest at the origin.
    let ctx = common::gpu();
    let params = webgrav::state::ModelParams::default();
    for &model in Model::ALL {
        let n = 6000;
        let Some(g) = pollster::block_on(model.galaxy_on_gpu(&ctx, n, 3, &params)).unwrap() else {
            assert!(!model.is_galaxy(), "{model:?}");
            continue;
        };
        let name = model.name();
        let host = pollster::block_on(model.generate_on(&ctx, n, 3, &params)).unwrap();
        assert_eq!(g.components, host.components, "{name}");
        assert_eq!(
            pollster::block_on(g.read_tags(&ctx)).unwrap(),
            host.tags,
            "{name}"
        );
        let p = pollster::block_on(g.sampled.read(&ctx)).unwrap();
        let h = &host.particles;
        assert_eq!(p.id, h.id, "{name}");
        for (t, &(mass, count)) in g.totals.iter().enumerate() {
            let of_tag = || (0..n).filter(|&k| host.tags[k] as usize == t);
            assert_eq!(count, of_tag().count() as u64, "{name}: tag {t}");
            let m: f64 = of_tag().map(|k| h.pos_mass[k].mass as f64).sum();
            assert!(
                (mass - m).abs() <= 1e-6 * m,
                "{name}: tag {t}: {mass} vs {m}"
            );
        }
        let wide = |x: [f32; 3]| x.map(f64::from);
        let scale =
            |x: &mut dyn Iterator<Item = [f32; 3]>| x.map(|a| norm(wide(a))).fold(0.0, f64::max);
        let (r_max, v_max) = (
            scale(&mut h.pos_mass.iter().map(|q| q.pos)),
            scale(&mut h.vel.iter().map(|v| v.vel)),
        );
        let apart = |a: [f32; 3], b: [f32; 3]| {
            let (a, b) = (wide(a), wide(b));
            norm([a[0] - b[0], a[1] - b[1], a[2] - b[2]])
        };
        let (mut worst_x, mut worst_v) = (0.0f64, 0.0f64);
        let (mut mx, mut mv, mut mass) = ([0.0f64; 3], [0.0f64; 3], 0.0);
        for k in 0..n {
            assert_eq!(
                p.pos_mass[k].mass, h.pos_mass[k].mass,
                "{name}: mass of {k}"
            );
            worst_x = worst_x.max(apart(p.pos_mass[k].pos, h.pos_mass[k].pos) / r_max);
            worst_v = worst_v.max(apart(p.vel[k].vel, h.vel[k].vel) / v_max);
            let m = p.pos_mass[k].mass as f64;
            mass += m;
            for a in 0..3 {
                mx[a] += m * p.pos_mass[k].pos[a] as f64;
                mv[a] += m * p.vel[k].vel[a] as f64;
            }
        }
        let (com, vcom) = (norm(mx) / mass / r_max, norm(mv) / mass / v_max);
        println!("{name}: apart by {worst_x:.1e} (positions), {worst_v:.1e} (velocities) of the largest; centre {com:.1e}, {vcom:.1e}");
        assert!(worst_x < 1e-6 && worst_v < 1e-6, "{name}");
        assert!(com < 1e-6 && vcom < 1e-6, "{name}");
    }
    // N the device cannot hold is refused before anything is sampled.
    let huge = ctx.max_elements(16) as usize + 1;
    let refused = pollster::block_on(Model::MilkyWay.galaxy_on_gpu(&ctx, huge, 1, &params));
    assert!(matches!(
        refused,
        Err(webgrav::Error::TooManyParticles { .. })
    ));
}

#[test]
fn milky_way_is_in_virial_equilibrium() {
    fn check(s: &impl Sampler) {
        // Halo, bulge and disk together (the disk's moments, the spheroid's
        // f(E)): 2K/|W| within the few per cent the cusp's innermost
        // particles scatter W by.
        let g = drawn(catalog::milky_way(1.2).realize_with(4000, 12, s));
        let d = virial_ratio(&g);
        println!("Milky Way: 2K/|W| = {:.4}", d.virial_ratio);
        assert!((d.virial_ratio - 1.0).abs() < 0.05);
    }
    on_both_samplers!(check);
}

/// Mean and standard error of the mean.
fn mean_err(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

#[test]
fn disk_follows_its_profile_and_toomre_q() {
    fn check(s: &impl Sampler) {
        let galaxy = common::small_disk_galaxy();
        let eq = DiskEquilibrium::new(&galaxy);
        let n = 20_000;
        let mut g = Realization::default();
        drawn(eq.sample_disk(n, (1.0 / n as f64, 0), (11, 0), (&mut g, s)));
        let d = galaxy.disk;

        // Surface density: cylindrical radii against the exponential's
        // M(<R) = 1 − (1 + x)e^(−x), cut at 10 R_d; heights against sech²'s
        // (1 + tanh(z/z₀))/2.
        let big_r: Vec<f64> = g.pos.iter().map(|p| p[0].hypot(p[1])).collect();
        let m = |x: f64| 1.0 - (1.0 + x) * (-x).exp();
        let ks_r = ks_distance(&big_r, |r| m(r) / m(10.0));
        let z: Vec<f64> = g.pos.iter().map(|p| p[2]).collect();
        let ks_z = ks_distance(&z, |x| 0.5 * (1.0 + (x / d.scale_height).tanh()));
        println!(
            "disk KS: R {ks_r:.4}, z {ks_z:.4} (bound {:.4})",
            ks_bound(n)
        );
        assert!(ks_r < ks_bound(n));
        assert!(ks_z < ks_bound(n));

        // Per annulus: v_R, v_φ, v_z of its particles.
        let annulus = |lo: f64, hi: f64| -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
            let (mut r, mut vr, mut vphi, mut vz) = (vec![], vec![], vec![], vec![]);
            for (p, v) in g.pos.iter().zip(&g.vel) {
                let rr = p[0].hypot(p[1]);
                if (lo..hi).contains(&rr) {
                    let (c, s) = (p[0] / rr, p[1] / rr);
                    r.push(rr);
                    vr.push(v[0] * c + v[1] * s);
                    vphi.push(-v[0] * s + v[1] * c);
                    vz.push(v[2]);
                }
            }
            (r, vr, vphi, vz)
        };

        // Toomre Q at 2.5 R_d from the sampled σ_R and Σ (counts in the
        // annulus) and the model's κ: σ_R from ~2000 particles scatters by
        // 1.6 %, Σ from their count by 2.2 %; 10 % is about 4σ.
        let (lo, hi) = (2.25, 2.75);
        let (r, vr, _, _) = annulus(lo, hi);
        let sigma_r = (vr.iter().map(|v| v * v).sum::<f64>() / vr.len() as f64).sqrt();
        let sigma = r.len() as f64 / n as f64 / (std::f64::consts::PI * (hi * hi - lo * lo));
        let q = sigma_r * eq.kappa(2.5) / (3.36 * sigma);
        println!("Toomre Q at 2.5 R_d: {q:.3} (requested {})", d.toomre_q);
        assert!((q / d.toomre_q - 1.0).abs() < 0.1);

        // Mean rotation and vertical dispersion against the model's moments
        // averaged over each annulus' particles, within 4 standard errors
        // (plus 1 % for the moments' variation across the annulus).
        for (lo, hi) in [(0.8, 1.2), (2.25, 2.75), (4.0, 5.0)] {
            let (r, _, vphi, vz) = annulus(lo, hi);
            let model: Vec<_> = r.iter().map(|&x| eq.kinematics(x)).collect();
            let (mean_vphi, err) = mean_err(&vphi);
            let expected = model.iter().map(|k| k.mean_vphi).sum::<f64>() / r.len() as f64;
            let vc = model.iter().map(|k| k.circular_speed).sum::<f64>() / r.len() as f64;
            let sigma_z = (vz.iter().map(|v| v * v).sum::<f64>() / vz.len() as f64).sqrt();
            let expected_z =
                (model.iter().map(|k| k.sigma_z.powi(2)).sum::<f64>() / r.len() as f64).sqrt();
            println!(
                "R {lo}–{hi}: v̄_φ {mean_vphi:.4} ± {err:.4} (model {expected:.4}, v_c {vc:.4}), σ_z {sigma_z:.4} (model {expected_z:.4})"
            );
            assert!((mean_vphi - expected).abs() < 4.0 * err + 0.01 * expected);
            // Asymmetric drift: the disk lags the circular speed.
            assert!(expected < vc);
            // σ_z from n particles scatters by 1/√(2n).
            let tol = 4.0 / (2.0 * vz.len() as f64).sqrt() + 0.01;
            assert!((sigma_z / expected_z - 1.0).abs() < tol);
        }
    }
    on_both_samplers!(check);
}

#[test]
fn milky_way_has_the_gordon_bell_masses_in_equal_mass_particles() {
    let n = 5000;
    let g = catalog::milky_way(1.2).realize(n, 2).unwrap();
    let m = g.mass[0];
    assert!(g.mass.iter().all(|&x| x == m), "equal particle masses");
    // Bonsai units: 2.325e9 M☉ per mass unit.
    for (name, msun_mass) in [("halo", 6.0e11), ("disk", 5.0e10), ("bulge", 4.6e9)] {
        let tag = g.components.iter().position(|c| c == name).unwrap() as u32;
        let mass = g.component_mass(tag);
        println!("{name}: {mass:.3} units ({:.4e} M☉)", mass * 2.325e9);
        // The largest-remainder split puts each component within one
        // particle of its mass.
        assert!((mass - msun(msun_mass)).abs() < m, "{name}");
    }
    assert!((g.total_mass() - msun(6.546e11)).abs() < 1e-9 * g.total_mass());
}

#[test]
fn merger_galaxies_start_on_the_requested_orbit() {
    fn check(s: &impl Sampler) {
        let merger = catalog::bonsai_merger(3.0, 10.0);
        let g = drawn(merger.realize_with(2402, 4, s));
        let (m1, m2) = (merger.primary.total_mass(), merger.secondary.total_mass());
        // Centre of mass and velocity of each galaxy, by its tags' names.
        let part = |prefix: &str| {
            let (mut m, mut x, mut v) = (0.0, [0.0; 3], [0.0; 3]);
            for k in 0..g.len() {
                if g.components[g.tag[k] as usize].starts_with(prefix) {
                    m += g.mass[k];
                    for a in 0..3 {
                        x[a] += g.mass[k] * g.pos[k][a];
                        v[a] += g.mass[k] * g.vel[k][a];
                    }
                }
            }
            (m, x.map(|c| c / m), v.map(|c| c / m))
        };
        let (ma, xa, va) = part("primary");
        let (mb, xb, vb) = part("secondary");
        println!("galaxy masses {ma:.3} {mb:.3} (model {m1} {m2})");
        let dx: [f64; 3] = std::array::from_fn(|a| xb[a] - xa[a]);
        let dv: [f64; 3] = std::array::from_fn(|a| vb[a] - va[a]);
        let d = norm(dx);
        // Parabolic: v = √(2M/d) and specific angular momentum √(2 M r_p).
        let m = m1 + m2;
        let h = norm([
            dx[1] * dv[2] - dx[2] * dv[1],
            dx[2] * dv[0] - dx[0] * dv[2],
            dx[0] * dv[1] - dx[1] * dv[0],
        ]);
        println!(
            "separation {d:.4}, |Δv| {:.5} (Kepler {:.5})",
            norm(dv),
            (2.0 * m / d).sqrt()
        );
        assert!((d / merger.orbit.separation - 1.0).abs() < 1e-9);
        assert!((norm(dv) / (2.0 * m / d).sqrt() - 1.0).abs() < 1e-9);
        assert!((h / (2.0 * m * merger.orbit.pericenter).sqrt() - 1.0).abs() < 1e-9);
        let (_, com, vcom) = part("");
        assert!(norm(com) < 1e-9 && norm(vcom) < 1e-12, "{com:?} {vcom:?}");
        // One black hole per galaxy.
        let holes = g
            .components
            .iter()
            .filter(|c| c.ends_with("black hole"))
            .count();
        assert_eq!(holes, 2);
    }
    on_both_samplers!(check);
}

#[test]
fn minor_merger_satellites_are_bound_and_share_the_particle_mass() {
    fn check(s: &impl Sampler) {
        let mm = catalog::minor_mergers(8);
        let g = drawn(mm.realize_with(3000, 9, s));
        // Each galaxy's particles have one mass, its mass over its count from
        // the split of N by mass: equal across galaxies to a particle in the
        // smallest (~170 particles here).
        let m = g.mass[0];
        assert!(g.mass.iter().all(|&x| (x / m - 1.0).abs() < 0.01));
        let m_primary = mm.primary.total_mass();
        for k in 1..=mm.count {
            let prefix = format!("satellite {k} ");
            let idx: Vec<usize> = (0..g.len())
                .filter(|&i| g.components[g.tag[i] as usize].starts_with(&prefix))
                .collect();
            let ms: f64 = idx.iter().map(|&i| g.mass[i]).sum();
            assert!(
                (ms / (mm.mass_ratio * m_primary) - 1.0).abs() < 0.05,
                "{k}: {ms}"
            );
            let x: [f64; 3] = std::array::from_fn(|a| {
                idx.iter().map(|&i| g.mass[i] * g.pos[i][a]).sum::<f64>() / ms
            });
            let v: [f64; 3] = std::array::from_fn(|a| {
                idx.iter().map(|&i| g.mass[i] * g.vel[i][a]).sum::<f64>() / ms
            });
            // Bound to the primary as point masses (the centre of mass moved
            // the primary by less than the satellites' spread of radii).
            let energy = 0.5 * norm(v).powi(2) - m_primary / norm(x);
            assert!(energy < 0.0, "satellite {k}: E = {energy}");
        }
    }
    on_both_samplers!(check);
}

#[test]
fn invalid_galaxies_are_refused() {
    let bh_only = SphericalGalaxy {
        components: vec![Component::black_hole(1.0)],
    };
    assert!(bh_only.realize(10, 1).is_err());
    let negative = SphericalGalaxy {
        components: vec![Component::truncated(
            "halo",
            -1.0,
            Shape::Nfw { rs: 1.0 },
            10.0,
        )],
    };
    assert!(negative.realize(10, 1).is_err());
    let sersic = catalog::single("bulge", Shape::Sersic { re: 1.0, n: 0.3 }, 10.0);
    assert!(sersic.realize(10, 1).is_err());
    let mut disk = common::small_disk_galaxy();
    disk.disk.scale_height = 0.0;
    assert!(disk.realize(10, 1).is_err());
    // Fewer particles than components.
    assert!(halo_bulge_bh().realize(2, 1).is_err());
}
