//! A sampled model in f64 with a component tag per particle: what the
//! galaxy generators build, shift, rotate and combine before it becomes
//! f32 `Particles`.

use crate::gpu::layout::{PosMass, Velocity};
use crate::state::parallel::for_each_pair;
use crate::state::particles::Particles;
use crate::state::share::{chunk_sums, frame_of, GatherSums, Share};
use std::ops::Range;

/// Particles of a model, each tagged with the index of its component in
/// `components` (e.g. "halo", "disk", "bulge", "black hole"). On one
/// process it holds every particle; a process of several holds its share
/// (`span`), and the arrays hold only those.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Realization {
    pub pos: Vec<[f64; 3]>,
    pub vel: Vec<[f64; 3]>,
    pub mass: Vec<f64>,
    pub tag: Vec<u32>,
    pub components: Vec<String>,
    /// Where its particles lie in the whole model, and which are held.
    pub span: Span,
    /// Where a GPU sampler keeps the particles in its own arrays
    /// (`generate::Gpu::resident`): the arrays above stay empty, and each
    /// run of slots keeps its sums as sampled and the placement that
    /// `rotate` and `shift` build up, applied once on the GPU at the end.
    pub resident: Option<Vec<Placement>>,
}

/// A run of slots of a resident realization: particles `start..start +
/// count` of the whole model, sampled in their galaxy's frame, to be
/// placed at x ↦ `rotation` x + `dx`, v ↦ `rotation` v + `dv` (what
/// `rotate` and `shift` do to held particles, in that order).
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub start: usize,
    pub count: usize,
    pub mass: f64,
    pub tag: u32,
    /// Σ x and Σ v of the particles as sampled (the sampler's).
    pub sums: [f64; 6],
    pub rotation: Rotation,
    pub dx: [f64; 3],
    pub dv: [f64; 3],
}

impl Placement {
    /// Σ m x and Σ m v of the placed particles.
    fn moments(&self) -> ([f64; 3], [f64; 3]) {
        let n = self.count as f64;
        let placed = |sum: [f64; 3], shift: [f64; 3]| {
            let turned = apply(&self.rotation, sum);
            std::array::from_fn(|k| self.mass * (turned[k] + n * shift[k]))
        };
        (
            placed([self.sums[0], self.sums[1], self.sums[2]], self.dx),
            placed([self.sums[3], self.sums[4], self.sums[5]], self.dv),
        )
    }
}

/// The rotation that turns nothing.
pub const IDENTITY: Rotation = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

/// The place of a realization (a galaxy of a merger, say) in the whole
/// model, and the whole model's particles a process holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Span {
    /// Index in the whole model of the realization's first particle.
    pub origin: usize,
    /// Its particles, held here or not.
    pub count: usize,
    /// The whole model's indices this process holds; `None`: all.
    pub keep: Option<Range<usize>>,
}

impl Span {
    /// The whole model's indices of the realization's particles that are
    /// held here (its arrays, in order).
    pub fn held(&self) -> Range<usize> {
        let all = self.origin..self.origin + self.count;
        match &self.keep {
            None => all,
            Some(k) => {
                let start = all.start.max(k.start).min(all.end);
                start..all.end.min(k.end).max(start)
            }
        }
    }
}

/// One particle's position and velocity, as a sampler draws them.
pub type PhasePoint = ([f64; 3], [f64; 3]);

/// The slots of one component's particles in a `Realization`
/// (`add_slots`): a sampler puts particle `first + i` of the component
/// (its stream's index) at `pos[i]`, `vel[i]`.
pub struct Slots<'a> {
    pub pos: &'a mut [[f64; 3]],
    pub vel: &'a mut [[f64; 3]],
    /// The component's index of the first slot's particle (0 but in a
    /// share that starts inside the component).
    pub first: usize,
    /// Of a resident realization (`pos` and `vel` empty): where the
    /// particles go in the sampler's arrays, their mass and tag, and
    /// their sums for the sampler to fill.
    pub resident: Option<&'a mut Placement>,
}

/// A 3×3 rotation matrix, rows first.
pub type Rotation = [[f64; 3]; 3];

/// The rotation that tilts the z axis (a galaxy's spin) by `inclination`
/// about the x axis, then turns it by `azimuth` about the z axis (radians).
pub fn rotation(inclination: f64, azimuth: f64) -> Rotation {
    let (si, ci) = inclination.sin_cos();
    let (sa, ca) = azimuth.sin_cos();
    // R = Rz(azimuth) · Rx(inclination).
    [
        [ca, -sa * ci, sa * si],
        [sa, ca * ci, -ca * si],
        [0.0, si, ci],
    ]
}

fn apply(m: &Rotation, v: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|i| m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2])
}

impl Realization {
    /// An empty realization whose particles will start at index `origin`
    /// of the whole model, holding `share`'s of them (all with `None`).
    pub fn starting_at(origin: usize, share: Option<&Share>) -> Self {
        Self {
            span: Span {
                origin,
                count: 0,
                keep: share.map(|s| s.keep.clone()),
            },
            ..Default::default()
        }
    }

    /// This (empty) realization, resident if `resident` (its sampler
    /// keeps what it samples on its GPU: `SpheroidSampler::resident`).
    pub fn resident_if(mut self, resident: bool) -> Self {
        if resident {
            self.resident = Some(Vec::new());
        }
        self
    }

    /// The particles held here.
    pub fn len(&self) -> usize {
        match &self.resident {
            Some(_) => self.span.count,
            None => self.pos.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a component and returns its tag.
    pub fn add_component(&mut self, name: impl Into<String>) -> u32 {
        self.components.push(name.into());
        (self.components.len() - 1) as u32
    }

    /// Appends one particle (to a realization that holds all of its own).
    pub fn push(&mut self, pos: [f64; 3], vel: [f64; 3], mass: f64, tag: u32) {
        debug_assert!(self.span.keep.is_none(), "a share is sampled, not pushed");
        debug_assert!(self.resident.is_none(), "a resident realization is sampled");
        self.span.count += 1;
        self.pos.push(pos);
        self.vel.push(vel);
        self.mass.push(mass);
        self.tag.push(tag);
    }

    /// Appends `count` particles of mass `mass` tagged `tag`, at the
    /// origin, and returns the slots of those held here for a `Sampler`
    /// to fill.
    pub fn add_slots(&mut self, count: usize, (mass, tag): (f64, u32)) -> Slots<'_> {
        let component = self.span.origin + self.span.count;
        self.span.count += count;
        if self.resident.is_some() {
            return self.add_resident_slots(component, count, (mass, tag));
        }
        let start = self.len();
        let end = self.span.held().len();
        self.pos.resize(end, [0.0; 3]);
        self.vel.resize(end, [0.0; 3]);
        self.mass.resize(end, mass);
        self.tag.resize(end, tag);
        Slots {
            pos: &mut self.pos[start..],
            vel: &mut self.vel[start..],
            first: self
                .span
                .keep
                .as_ref()
                .map_or(0, |k| k.start.saturating_sub(component)),
            resident: None,
        }
    }

    /// `add_slots` of a resident realization: a run of slots
    /// (particles `start..start + count` of the whole model) that the
    /// sampler fills in its GPU's arrays.
    fn add_resident_slots(
        &mut self,
        start: usize,
        count: usize,
        (mass, tag): (f64, u32),
    ) -> Slots<'_> {
        let placements = self.resident.get_or_insert_with(Vec::new);
        placements.push(Placement {
            start,
            count,
            mass,
            tag,
            sums: [0.0; 6],
            rotation: IDENTITY,
            dx: [0.0; 3],
            dv: [0.0; 3],
        });
        Slots {
            pos: &mut [],
            vel: &mut [],
            first: 0,
            resident: placements.last_mut(),
        }
    }

    pub fn total_mass(&self) -> f64 {
        match &self.resident {
            Some(placements) => placements.iter().map(|p| p.mass * p.count as f64).sum(),
            None => self.mass.iter().sum(),
        }
    }

    /// Mass of the particles tagged `tag`.
    pub fn component_mass(&self, tag: u32) -> f64 {
        if let Some(placements) = &self.resident {
            return placements
                .iter()
                .filter(|p| p.tag == tag)
                .map(|p| p.mass * p.count as f64)
                .sum();
        }
        self.mass
            .iter()
            .zip(&self.tag)
            .filter(|(_, t)| **t == tag)
            .map(|(m, _)| m)
            .sum()
    }

    /// Mass-weighted mean position and velocity of the particles held
    /// here, summed by the whole model's chunks (`state::share`); of a
    /// resident realization, from its runs' sums and placements.
    pub fn center_of_mass(&self) -> PhasePoint {
        let Some(placements) = &self.resident else {
            return frame_of(self.chunk_sums());
        };
        let (mut x, mut v) = ([0.0; 3], [0.0; 3]);
        for p in placements {
            let (px, pv) = p.moments();
            for k in 0..3 {
                x[k] += px[k];
                v[k] += pv[k];
            }
        }
        let mass = self.total_mass();
        (x.map(|c| c / mass), v.map(|c| c / mass))
    }

    /// The chunk sums of the particles held here (`share::chunk_sums`).
    fn chunk_sums(&self) -> Vec<crate::state::share::ChunkSums> {
        chunk_sums(self.span.held().start, self.len(), |k| {
            let (m, x, v) = (self.mass[k], self.pos[k], self.vel[k]);
            [
                m,
                m * x[0],
                m * x[1],
                m * x[2],
                m * v[0],
                m * v[1],
                m * v[2],
            ]
        })
    }

    /// Moves by `dx` and boosts by `dv`.
    pub fn shift(&mut self, dx: [f64; 3], dv: [f64; 3]) {
        if let Some(placements) = &mut self.resident {
            for p in placements {
                for k in 0..3 {
                    p.dx[k] += dx[k];
                    p.dv[k] += dv[k];
                }
            }
            return;
        }
        for_each_pair(&mut self.pos, &mut self.vel, |_, x, v| {
            for a in 0..3 {
                x[a] += dx[a];
                v[a] += dv[a];
            }
        });
    }

    /// Into the centre-of-mass frame (position and momentum zero).
    pub fn center(&mut self) {
        self.center_among(None);
    }

    /// `center`, of the whole realization where this process holds a
    /// share of it (`gather` brings every process's sums).
    pub fn center_among(&mut self, gather: Option<&dyn GatherSums>) {
        let (x, v) = match gather {
            None => self.center_of_mass(),
            Some(_) if self.resident.is_some() => {
                unreachable!("a resident realization holds the whole model")
            }
            Some(g) => frame_of(g.gather(&self.chunk_sums())),
        };
        self.shift(x.map(|c| -c), v.map(|c| -c));
    }

    /// Rotates positions and velocities about the origin.
    pub fn rotate(&mut self, m: &Rotation) {
        if let Some(placements) = &mut self.resident {
            for p in placements {
                p.rotation = std::array::from_fn(|i| {
                    std::array::from_fn(|j| (0..3).map(|k| m[i][k] * p.rotation[k][j]).sum())
                });
                p.dx = apply(m, p.dx);
                p.dv = apply(m, p.dv);
            }
            return;
        }
        for_each_pair(&mut self.pos, &mut self.vel, |_, x, v| {
            *x = apply(m, *x);
            *v = apply(m, *v);
        });
    }

    /// Appends `other`, its component names prefixed with `prefix` (e.g.
    /// "satellite 2 "), its tags moved past ours.
    /// `other` must start where `self` ends in the whole model
    /// (`starting_at`).
    pub fn append(&mut self, other: Realization, prefix: &str) {
        assert_eq!(
            other.span.origin,
            self.span.origin + self.span.count,
            "appended where it was sampled"
        );
        self.span.count += other.span.count;
        let offset = self.components.len() as u32;
        self.components
            .extend(other.components.into_iter().map(|c| format!("{prefix}{c}")));
        if let Some(placements) = &mut self.resident {
            let theirs = other.resident.expect("realizations drawn by one sampler");
            placements.extend(theirs.into_iter().map(|p| Placement {
                tag: p.tag + offset,
                ..p
            }));
            return;
        }
        self.pos.extend(other.pos);
        self.vel.extend(other.vel);
        self.mass.extend(other.mass);
        self.tag.extend(other.tag.into_iter().map(|t| t + offset));
    }

    /// The whole model's indices of the particles held here, as ids.
    fn ids(&self) -> Vec<u64> {
        let held = self.span.held();
        (held.start as u64..held.end as u64).collect()
    }

    /// The f32 particles (ids: their indices in the whole model, 0..N on
    /// one process). Not of a resident realization, whose particles are
    /// on the GPU.
    pub fn particles(&self) -> Particles {
        assert!(
            self.resident.is_none(),
            "a resident realization's particles are on the GPU"
        );
        let mut p = Particles {
            pos_mass: bytemuck::zeroed_vec(self.len()),
            vel: bytemuck::zeroed_vec(self.len()),
            id: self.ids(),
        };
        self.convert(&mut p, 0);
        p
    }

    /// `particles`, converted from the end a piece at a time, each f64
    /// piece freed once converted: the f64 model (56 bytes per particle)
    /// and the f32 particles (40) are never both whole in memory, which
    /// keeps a large model's peak near the first alone.
    pub fn into_particles(mut self) -> (Particles, Vec<u32>, Vec<String>) {
        assert!(
            self.resident.is_none(),
            "a resident realization's particles are on the GPU"
        );
        let n = self.len();
        // Zeroed pages take no memory until they are written.
        let mut p = Particles {
            pos_mass: bytemuck::zeroed_vec(n),
            vel: bytemuck::zeroed_vec(n),
            id: Vec::new(),
        };
        let mut end = n;
        while end > 0 {
            let start = end.saturating_sub(CONVERT_PIECE);
            self.convert(&mut p, start);
            // Shrinking a large allocation returns its tail to the system.
            self.pos.truncate(start);
            self.vel.truncate(start);
            self.mass.truncate(start);
            self.pos.shrink_to_fit();
            self.vel.shrink_to_fit();
            self.mass.shrink_to_fit();
            end = start;
        }
        p.id = self.ids();
        (p, self.tag, self.components)
    }

    /// Converts particles `start..` (all that `self` still holds) into
    /// their places in `p`.
    fn convert(&self, p: &mut Particles, start: usize) {
        let f = |v: [f64; 3]| v.map(|x| x as f32);
        let end = self.len();
        for_each_pair(
            &mut p.pos_mass[start..end],
            &mut p.vel[start..end],
            |i, pm, v| {
                let k = start + i;
                *pm = PosMass {
                    pos: f(self.pos[k]),
                    mass: self.mass[k] as f32,
                };
                *v = Velocity::new(f(self.vel[k]));
            },
        );
    }
}

/// Particles converted at a time by `Realization::into_particles`.
const CONVERT_PIECE: usize = 1 << 20;

/// Splits `n` particles over components in proportion to `weights`
/// (largest remainders, so the counts add up to `n`); a component of
/// positive weight gets at least one particle while `n` allows.
pub fn split_count(n: usize, weights: &[f64]) -> Vec<usize> {
    let total: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| n as f64 * w / total).collect();
    let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    // The remainders add up to fewer than one per component.
    let left = n - counts.iter().sum::<usize>();
    for &k in order.iter().take(left) {
        counts[k] += 1;
    }
    // Give empty components one particle from the largest.
    for k in 0..counts.len() {
        if counts[k] == 0 && weights[k] > 0.0 {
            let big = (0..counts.len()).max_by_key(|&j| counts[j]).unwrap_or(k);
            if counts[big] > 1 {
                counts[big] -= 1;
                counts[k] += 1;
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_adds_up_and_keeps_small_components() {
        assert_eq!(split_count(10, &[1.0, 1.0]), vec![5, 5]);
        assert_eq!(
            split_count(100, &[90.0, 9.9, 0.1]).iter().sum::<usize>(),
            100
        );
        assert_eq!(split_count(100, &[90.0, 9.9, 0.1])[2], 1);
        assert_eq!(split_count(7, &[1.0, 1.0, 1.0]).iter().sum::<usize>(), 7);
    }

    #[test]
    fn rotation_is_orthonormal_and_tilts_the_spin() {
        let m = rotation(0.7, 1.9);
        let z = apply(&m, [0.0, 0.0, 1.0]);
        assert!((z[2] - 0.7f64.cos()).abs() < 1e-15);
        for i in 0..3 {
            for j in 0..3 {
                let d: f64 = (0..3).map(|k| m[i][k] * m[j][k]).sum();
                assert!((d - if i == j { 1.0 } else { 0.0 }).abs() < 1e-14);
            }
        }
    }
}
