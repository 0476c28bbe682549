//! What colouring by component draws and hides: a tag per particle (in
//! upload order; the display's id buffer indexes it) and the name of each
//! tag. Galaxies tag their components; files tag particle kinds; a model
//! of one component is tagged by the quarter of the mass each particle
//! starts in, so mixing shows.

use crate::gpu::layout::PosMass;
use crate::state::{Tagged, KINDS};

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

    /// The quarter of the mass, by radius, each particle starts in.
    pub fn shells(pos_mass: &[PosMass]) -> Self {
        Self {
            tags: shell_tags(pos_mass),
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
    pub fn is(&self, k: usize, suffix: &str) -> bool {
        !self.by_shells
            && (self.tags.get(k))
                .and_then(|&t| self.names.get(t as usize))
                .is_some_and(|name| name.ends_with(suffix))
    }

    /// The mask that hides the dark haloes ("halo", "primary halo", ...).
    pub fn halo_mask(&self) -> u32 {
        self.mask(|name| name.ends_with("halo"))
    }
}

/// Component tags of a one-component state: the quarter of the mass, by
/// radius about the centre of mass, that each particle starts in (0: the
/// innermost quarter ... 3: the outermost), so mixing shows over time.
pub fn shell_tags(pos_mass: &[PosMass]) -> Vec<u32> {
    let total: f64 = pos_mass.iter().map(|p| p.mass as f64).sum();
    if pos_mass.is_empty() || total <= 0.0 {
        return vec![0; pos_mass.len()];
    }
    let mut com = [0.0f64; 3];
    for p in pos_mass {
        for (c, x) in com.iter_mut().zip(p.pos) {
            *c += p.mass as f64 * x as f64 / total;
        }
    }
    let r2 = |p: &PosMass| -> f64 { (0..3).map(|k| (p.pos[k] as f64 - com[k]).powi(2)).sum() };
    let mut order: Vec<usize> = (0..pos_mass.len()).collect();
    order.sort_by(|&a, &b| r2(&pos_mass[a]).total_cmp(&r2(&pos_mass[b])));
    let mut tags = vec![0; pos_mass.len()];
    let mut enclosed = 0.0;
    for k in order {
        tags[k] = ((4.0 * enclosed / total) as u32).min(3);
        enclosed += pos_mass[k].mass as f64;
    }
    tags
}
