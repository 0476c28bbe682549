//! Read-outs of a state read-back: Lagrangian radii (the radii enclosing
//! given fractions of the mass) and the sphere a view should fit; and the
//! page's read-out of a run for its plots (`read_for_plots`), whole or,
//! where the run measures on the GPU, from a view sample.

use crate::error::Result;
use crate::gpu::layout::PosMass;
use crate::gpu::GpuContext;
use crate::render::camera::{sample_indices, weighted_quantile, VIEW_SAMPLE};
use crate::render::view_sample::ViewSample;
use crate::render::ColorRanges;
use crate::run::{Measured, Readout, Run};
use crate::state::parallel::{map_indices, sort_unstable_by};

/// A read-out of a run for the page's plots.
pub enum PlotRead {
    /// The whole state read back (`Run::readout`).
    Whole(Box<Readout>),
    /// Measured on the GPU (`Run::measure`), with a view sample gathered
    /// there from the run's state (`ViewSample::of_state`, with forces and
    /// ids): at most 14 MB at any N. The sample stands for every
    /// particle: the marked ones (a galaxy's black holes, which a sample
    /// may miss and which would weigh as thousands of particles when it
    /// does not) are taken out of it and its last `holes` entries are
    /// they, found by id, each for itself; the rest weigh as many
    /// particles as each stands for (`stand_for`).
    Sampled(Box<Measured>, ViewSample, usize),
}

impl PlotRead {
    pub fn measured(&self) -> Measured {
        match self {
            PlotRead::Whole(r) => r.measured(),
            PlotRead::Sampled(m, ..) => (**m).clone(),
        }
    }

    /// The positions and masses the plots and the view take: every
    /// particle's, or the sample's.
    pub fn pos_mass(&self) -> &[PosMass] {
        match self {
            PlotRead::Whole(r) => &r.snapshot.particles.pos_mass,
            PlotRead::Sampled(_, s, _) => &s.pos_mass,
        }
    }

    /// The Lagrangian radii (`LAGRANGIAN_FRACTIONS`) and the colour
    /// ranges: every particle's, or the sample's.
    pub fn figures(&self) -> (Vec<f64>, ColorRanges) {
        let ranges = match self {
            PlotRead::Whole(r) => ColorRanges::of(&r.snapshot.particles.vel, Some(&r.acc_pot)),
            PlotRead::Sampled(_, s, _) => ColorRanges::of(&s.vel, Some(&s.acc_pot)),
        };
        (radii_and_view(self.pos_mass()).0, ranges)
    }
}

/// The page's read-out of `run`: with `light`, where the run measures on
/// the GPU (`Run::measures_on_gpu`), `PlotRead::Sampled` (the particles
/// of ids `marked` found wherever the state holds them); else the whole
/// read-out.
pub async fn read_for_plots(
    ctx: &GpuContext,
    run: &mut Run,
    light: bool,
    marked: &[u32],
) -> Result<PlotRead> {
    if light {
        if let Some(m) = run.measure(ctx).await? {
            let (sample, holes) = ViewSample::of_state(ctx, run.display(), marked).await?;
            let n = run.display().n as usize;
            let found = holes.pos_mass.len();
            return Ok(PlotRead::Sampled(
                Box::new(m),
                stand_for(sample, holes, n),
                found,
            ));
        }
    }
    Ok(PlotRead::Whole(Box::new(run.readout(ctx).await?)))
}

/// `sample` (of `n` particles) less the particles in `holes`, each
/// weighing for as many particles as it stands for among those not in
/// `holes`, then `holes` (each for itself): the same mass as the state's,
/// the same mass profile in expectation.
fn stand_for(sample: ViewSample, holes: ViewSample, n: usize) -> ViewSample {
    let keep: Vec<usize> = (0..sample.id.len().max(sample.pos_mass.len()))
        .filter(|&k| sample.id.get(k).is_none_or(|id| !holes.id.contains(id)))
        .collect();
    let scale = (n - holes.pos_mass.len()) as f32 / keep.len().max(1) as f32;
    let mut out = ViewSample {
        pos_mass: (keep.iter())
            .map(|&k| {
                let p = sample.pos_mass[k];
                PosMass {
                    mass: p.mass * scale,
                    ..p
                }
            })
            .collect(),
        vel: keep.iter().map(|&k| sample.vel[k]).collect(),
        acc_pot: keep
            .iter()
            .filter_map(|&k| sample.acc_pot.get(k).copied())
            .collect(),
        id: keep
            .iter()
            .filter_map(|&k| sample.id.get(k).copied())
            .collect(),
    };
    out.pos_mass.extend(holes.pos_mass);
    out.vel.extend(holes.vel);
    out.acc_pot.extend(holes.acc_pot);
    out.id.extend(holes.id);
    out
}

/// Mass fractions of the Lagrangian radii shown by the web app.
pub const LAGRANGIAN_FRACTIONS: [f64; 3] = [0.1, 0.5, 0.9];

/// Centre of mass of the particles.
pub fn center_of_mass<'a>(pos_mass: impl IntoIterator<Item = &'a PosMass>) -> [f64; 3] {
    let mut c = [0.0f64; 3];
    let mut m = 0.0;
    for p in pos_mass {
        m += p.mass as f64;
        for (ck, x) in c.iter_mut().zip(p.pos) {
            *ck += p.mass as f64 * x as f64;
        }
    }
    if m > 0.0 {
        c = c.map(|x| x / m);
    }
    c
}

/// Radii about `center` enclosing each of `fractions` (ascending, in
/// (0, 1]) of the total mass: the first radius at which the enclosed mass
/// reaches the fraction.
pub fn lagrangian_radii(pos_mass: &[PosMass], center: [f64; 3], fractions: &[f64]) -> Vec<f64> {
    let mut shells: Vec<(f64, f64)> = map_indices(pos_mass.len(), |i| {
        let p = &pos_mass[i];
        let r2: f64 = (0..3).map(|k| (p.pos[k] as f64 - center[k]).powi(2)).sum();
        (r2.sqrt(), p.mass as f64)
    });
    // By radius, then mass: a total order of what the sums below see, so
    // the radii do not depend on how the sort orders ties.
    sort_unstable_by(&mut shells, |a, b| {
        a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
    });
    let total: f64 = shells.iter().map(|s| s.1).sum();
    let mut out = Vec::with_capacity(fractions.len());
    let mut enclosed = 0.0;
    let mut it = shells.iter();
    let mut last = 0.0;
    for &f in fractions {
        while enclosed < f * total {
            match it.next() {
                Some(&(r, m)) => {
                    enclosed += m;
                    last = r;
                }
                None => break,
            }
        }
        out.push(last);
    }
    out
}

/// The Lagrangian radii at `LAGRANGIAN_FRACTIONS` about the centre of
/// mass and the sphere to frame (`view_sphere`, whose radius is the last
/// of them), from one sort of the particles.
pub fn radii_and_view(pos_mass: &[PosMass]) -> (Vec<f64>, ([f32; 3], f32)) {
    const _: () = assert!(LAGRANGIAN_FRACTIONS[2] == 0.9);
    let c = center_of_mass(pos_mass);
    let radii = lagrangian_radii(pos_mass, c, &LAGRANGIAN_FRACTIONS);
    let sphere = (c.map(|x| x as f32), (radii[2] as f32).max(1e-3));
    (radii, sphere)
}

/// Centre and radius of a sphere to frame: the centre of mass and the
/// radius enclosing 90 % of the mass (escapers do not shrink the view).
pub fn view_sphere(pos_mass: &[PosMass]) -> ([f32; 3], f32) {
    let c = center_of_mass(pos_mass);
    // One radius from a sample (`VIEW_SAMPLE`), not a sort of every
    // particle's (seconds of the browser's one core at 2^24).
    let shells = sample_indices(pos_mass.len(), VIEW_SAMPLE)
        .map(|i| {
            let p = &pos_mass[i];
            let r2: f64 = (0..3).map(|k| (p.pos[k] as f64 - c[k]).powi(2)).sum();
            (r2, p.mass as f64)
        })
        .collect();
    let r = weighted_quantile(shells, 0.9).sqrt();
    (c.map(|x| x as f32), (r as f32).max(1e-3))
}
