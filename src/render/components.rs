//! What colouring by component draws and hides: a tag per particle (in
//! upload order; the display's id buffer indexes it) and the name of each
//! tag. Galaxies tag their components; files tag particle kinds; a model
//! of one component is tagged by the quarter of the mass each particle
//! starts in, so mixing shows. Each tag's style follows from its name:
//! old spheroids (bulges, ellipticals) warm, disks blue-white, dark matter
//! faint and cold, black holes ringed rather than lit; satellites and a
//! merger's secondary are told apart by hue.

use super::camera::{sample_indices, weighted_quantiles, VIEW_SAMPLE};
use super::MAX_TAGS;
use crate::gpu::layout::{PosMass, TagStyle};
use crate::state::{kinds_of_components, Tagged, KINDS};

/// Light per unit mass of dark matter against stars' 1: a faint haze that
/// shows the halo's extent without drowning the stars it holds (a halo
/// has 5-10 times the stars' mass).
pub const DARK_LIGHT: f32 = 0.08;

/// Marked particles (black holes) a light read-out finds apart from its
/// sample, at most: a galaxy model has a handful.
pub const MARKED_LIMIT: usize = 64;

/// Mass and particle count of each tag (what the renderer's unit scale
/// needs; masses do not change during a run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TagTotals(pub Vec<(f64, u64)>);

impl TagTotals {
    pub fn of(pos_mass: &[PosMass], tags: &[u32]) -> Self {
        let mut t: Vec<(f64, u64)> = Vec::new();
        for (k, p) in pos_mass.iter().enumerate() {
            let tag = tags.get(k).copied().unwrap_or(0) as usize;
            if tag >= t.len() {
                t.resize(tag + 1, (0.0, 0));
            }
            t[tag].0 += p.mass as f64;
            t[tag].1 += 1;
        }
        Self(t)
    }
}

/// The style of a component by its name (k: its tag, for shells), and
/// whether its particles are marked (black holes).
pub fn style_of(name: &str, by_shells: bool, k: usize) -> (TagStyle, bool) {
    let style = |color: [f32; 3], light: f32| (TagStyle { color, light }, false);
    if by_shells {
        // Inner quarter warm to outer quarter cold: mixing shows as colour.
        const SHELLS: [[f32; 3]; 4] = [
            [1.0, 0.72, 0.42],
            [1.0, 0.9, 0.7],
            [0.72, 0.84, 1.0],
            [0.45, 0.6, 1.0],
        ];
        return style(SHELLS[k.min(3)], 1.0);
    }
    if name.ends_with("black hole") || name == "boundary" {
        return (
            TagStyle {
                color: super::MARKER_COLOR,
                light: 0.0,
            },
            true,
        );
    }
    if name.ends_with("halo") {
        return style([0.35, 0.42, 1.0], DARK_LIGHT);
    }
    // Satellites' stars by satellite, in hues the host's warm stars do not
    // take, so their debris can be followed.
    if let Some(rest) = name.strip_prefix("satellite ") {
        const HUES: [[f32; 3]; 6] = [
            [0.5, 1.0, 0.7],
            [1.0, 0.55, 0.8],
            [0.55, 0.9, 1.0],
            [0.95, 1.0, 0.45],
            [0.75, 0.6, 1.0],
            [1.0, 0.5, 0.45],
        ];
        let number: usize = rest
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        return style(HUES[(number.max(1) - 1) % HUES.len()], 1.0);
    }
    let secondary = name.starts_with("secondary");
    if name.ends_with("disk") {
        return style(
            if secondary {
                [0.6, 0.95, 1.0]
            } else {
                [0.72, 0.84, 1.0]
            },
            1.0,
        );
    }
    if name.ends_with("gas") {
        return style([1.0, 0.5, 0.6], 1.0);
    }
    // Bulges, ellipticals' stars and anything else stellar: old, warm.
    if secondary {
        style([1.0, 0.62, 0.4], 1.0)
    } else {
        style([1.0, 0.84, 0.6], 1.0)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ComponentTags {
    pub tags: Vec<u32>,
    pub names: Vec<String>,
    /// The tags are mass shells, not components.
    pub by_shells: bool,
}

impl ComponentTags {
    /// A model's components, or its mass shells where it has one.
    pub fn of_model(m: &Tagged) -> Self {
        if m.components.len() > 1 {
            Self {
                tags: m.tags.clone(),
                names: m.components.clone(),
                by_shells: false,
            }
        } else {
            Self::shells(&m.particles.pos_mass)
        }
    }

    /// The particle kinds a file carries (Gadget-2's numbering, `KINDS`),
    /// or mass shells where it carries none.
    pub fn of_kinds(kinds: Option<&[u8]>, pos_mass: &[PosMass]) -> Self {
        match kinds {
            Some(k) => Self {
                tags: k.iter().map(|&t| t as u32).collect(),
                names: KINDS.iter().map(|s| s.to_string()).collect(),
                by_shells: false,
            },
            None => Self::shells(pos_mass),
        }
    }

    /// The kind of each particle (Gadget-2's numbering, what files carry)
    /// where the tags are components; `None` for mass shells.
    pub fn kinds(&self) -> Option<Vec<u8>> {
        (!self.by_shells).then(|| kinds_of_components(&self.tags, &self.names))
    }

    /// The quarter of the mass, by radius, each particle starts in.
    pub fn shells(pos_mass: &[PosMass]) -> Self {
        Self {
            tags: shell_tags(pos_mass),
            ..Self::shells_on_gpu()
        }
    }

    /// Mass shells whose tags are on the GPU only
    /// (`view_sample::tag_shells`): `tags` is empty, and nothing reads a
    /// shell's tag on the host (shells weigh alike in a fit, and are no
    /// component a read-out or an export names).
    pub fn shells_on_gpu() -> Self {
        Self {
            tags: Vec::new(),
            names: [
                "inner quarter",
                "second quarter",
                "third quarter",
                "outer quarter",
            ]
            .map(String::from)
            .to_vec(),
            by_shells: true,
        }
    }

    /// The style of every tag (the renderer's palette) and the mask of the
    /// marked ones.
    pub fn styles(&self) -> ([TagStyle; MAX_TAGS as usize], u32) {
        let mut styles = [TagStyle {
            color: [1.0; 3],
            light: 1.0,
        }; MAX_TAGS as usize];
        let mut marked = 0;
        for (k, name) in self.names.iter().enumerate().take(MAX_TAGS as usize) {
            let (s, m) = style_of(name, self.by_shells, k);
            styles[k] = s;
            if m {
                marked |= 1 << k;
            }
        }
        (styles, marked)
    }

    /// What particle k weighs in the fit of a view (`camera::visible_sphere`):
    /// 0 where its tag is `hidden`, its mass for maps; for pictures its
    /// mass where it is luminous (not dark matter), so that a galaxy's view
    /// fits its stars and its halo glows faintly around them; the mass of
    /// dark matter counts only where no luminous component is shown.
    /// `pos_mass` may be a view sample of the tagged particles, then
    /// weighed by the sampled ones' tags: those of `ids` (a sample of a
    /// run's state, in the tree's order, with each particle's index in
    /// the tags' order), else those `camera::sample_indices` picks.
    pub fn fit_weights(
        &self,
        pos_mass: &[PosMass],
        ids: Option<&[u32]>,
        hidden: u32,
        map: super::MapKind,
    ) -> Vec<f64> {
        let (styles, marked) = self.styles();
        let sampled: Vec<u32>;
        let tags = match ids {
            Some(ids) => {
                let tag = |&i: &u32| self.tags.get(i as usize).copied().unwrap_or(0);
                sampled = ids.iter().map(tag).collect();
                &sampled
            }
            None if self.tags.len() > pos_mass.len() => {
                let picks = sample_indices(self.tags.len(), pos_mass.len());
                sampled = picks.map(|k| self.tags[k]).collect();
                &sampled
            }
            None => &self.tags,
        };
        let dark = |t: u32| styles[(t as usize).min(MAX_TAGS as usize - 1)].light <= DARK_LIGHT;
        let shown = |t: u32| t >= 32 || hidden >> t & 1 == 0;
        let marked_tag = |t: u32| t < 32 && marked >> t & 1 == 1;
        // Whether any luminous component is shown (then dark matter does
        // not weigh).
        let luminous =
            (0..self.names.len().max(1) as u32).any(|t| shown(t) && !dark(t) && !marked_tag(t));
        (pos_mass.iter().enumerate())
            .map(|(k, p)| {
                let t = tags.get(k).copied().unwrap_or(0);
                let weighs = match map {
                    super::MapKind::Density => shown(t),
                    super::MapKind::Light => shown(t) && !marked_tag(t) && (!luminous || !dark(t)),
                };
                if weighs {
                    p.mass as f64
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// The camera's `hidden_tags` that hides every component `hide`
    /// accepts (by name; tags past 31 cannot be hidden).
    pub fn mask(&self, hide: impl Fn(&str) -> bool) -> u32 {
        self.names
            .iter()
            .enumerate()
            .filter(|&(t, name)| t < 32 && hide(name))
            .fold(0, |m, (t, _)| m | 1 << t)
    }

    /// Whether particle k belongs to a component named `*suffix`.
    /// How many particles belong to components named `*suffix` (none
    /// where the tags are mass shells).
    pub fn count_ending(&self, suffix: &str) -> u64 {
        if self.by_shells {
            return 0;
        }
        let named: Vec<bool> = self.names.iter().map(|n| n.ends_with(suffix)).collect();
        self.tags
            .iter()
            .filter(|&&t| named.get(t as usize) == Some(&true))
            .count() as u64
    }

    pub fn is(&self, k: usize, suffix: &str) -> bool {
        !self.by_shells
            && (self.tags.get(k))
                .and_then(|&t| self.names.get(t as usize))
                .is_some_and(|name| name.ends_with(suffix))
    }

    /// What a light read-out of a run of `n` particles finds apart from
    /// its sample: the ids (upload indices) of the marked particles
    /// (black holes). `None` where it cannot read light: components need
    /// every particle's tag (mass shells none), and a run of more than
    /// `MARKED_LIMIT` marked particles (a file's many "boundary" ones) is
    /// read whole.
    pub fn marked_ids(&self, n: usize) -> Option<Vec<u32>> {
        if self.by_shells {
            return Some(Vec::new());
        }
        if self.tags.len() != n {
            return None;
        }
        let (_, marked) = self.styles();
        let ids: Vec<u32> = (self.tags.iter().enumerate())
            .filter(|&(_, &t)| t < 32 && marked >> t & 1 == 1)
            .map(|(k, _)| k as u32)
            .take(MARKED_LIMIT + 1)
            .collect();
        (ids.len() <= MARKED_LIMIT).then_some(ids)
    }

    /// The mask that hides the dark haloes ("halo", "primary halo", ...).
    pub fn halo_mask(&self) -> u32 {
        self.mask(|name| name.ends_with("halo"))
    }
}

/// Component tags of a one-component state: the quarter of the mass, by
/// radius about the centre of mass, that each particle starts in (0: the
/// innermost quarter ... 3: the outermost), so mixing shows over time.
/// Linear in N: the quarters' edges from one weighted selection of a
/// sample's radii (`VIEW_SAMPLE`), no sort.
pub fn shell_tags(pos_mass: &[PosMass]) -> Vec<u32> {
    match MassShells::of(pos_mass) {
        Some(shells) => pos_mass.iter().map(|p| shells.tag(p)).collect(),
        None => vec![0; pos_mass.len()],
    }
}

/// The quarters of a state's mass by radius about a centre: the squared
/// radii within which each of the first three quarters ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MassShells {
    pub centre: [f64; 3],
    pub edges: [f64; 3],
}

impl MassShells {
    /// The shells of `pos_mass` about its centre of mass; `None` where
    /// it has no mass.
    pub fn of(pos_mass: &[PosMass]) -> Option<Self> {
        let total: f64 = pos_mass.iter().map(|p| p.mass as f64).sum();
        if pos_mass.is_empty() || total.is_nan() || total <= 0.0 {
            return None;
        }
        let mut com = [0.0f64; 3];
        for p in pos_mass {
            for (c, x) in com.iter_mut().zip(p.pos) {
                *c += p.mass as f64 * x as f64 / total;
            }
        }
        Some(Self::about(com, pos_mass))
    }

    /// The shells about `centre`, their edges from the radii of
    /// `sample_indices(len, VIEW_SAMPLE)` of `pos_mass`: of a state's
    /// every particle, or of a sample of it already drawn so
    /// (`view_sample::ViewSample`), which gives the same edges.
    pub fn about(centre: [f64; 3], pos_mass: &[PosMass]) -> Self {
        let mut shells = Self {
            centre,
            edges: [0.0; 3],
        };
        let pairs: Vec<(f64, f64)> = sample_indices(pos_mass.len(), VIEW_SAMPLE)
            .map(|k| (shells.r2(&pos_mass[k]), pos_mass[k].mass as f64))
            .collect();
        shells.edges = weighted_quantiles(pairs, [0.25, 0.5, 0.75]);
        shells
    }

    /// The squared radius of `p` about the centre.
    pub fn r2(&self, p: &PosMass) -> f64 {
        (0..3)
            .map(|k| (p.pos[k] as f64 - self.centre[k]).powi(2))
            .sum()
    }

    /// The shell `p` is in (0: the innermost quarter).
    pub fn tag(&self, p: &PosMass) -> u32 {
        let r = self.r2(p);
        self.edges.iter().filter(|&&e| r > e).count() as u32
    }
}
