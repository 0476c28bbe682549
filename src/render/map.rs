//! A surface-density map as numbers: the mass of each pixel of a map read
//! back from the accumulation (exact integers over the unit scale), Σ in
//! the run's units or in physical ones, and what is measured on the
//! image: its total mass, Σ(R) in rings about its centre and the bar's
//! m = 2 mode.

use crate::state::galaxy::units::MASS_UNIT_MSUN;
use crate::state::Model;

/// The units of a state, for labels: N-body units, Bonsai's (1 kpc,
/// 2.325e9 M☉, 9.78 Myr), which webgrav's Milky Way and merger use, or
/// the Solar System's (1 AU, 1 M☉, G = 1: a year is 2π), which the
/// planets use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Units {
    #[default]
    NBody,
    Bonsai,
    Solar,
}

impl Units {
    pub const ALL: &'static [Units] = &[Units::NBody, Units::Bonsai, Units::Solar];

    pub fn name(self) -> &'static str {
        match self {
            Units::NBody => "nbody",
            Units::Bonsai => "bonsai",
            Units::Solar => "solar",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|u| u.name() == name)
    }

    /// The units a model is built in (`state::galaxy::catalog`).
    pub fn of_model(model: Model) -> Self {
        match model {
            Model::MilkyWay | Model::GalaxyMerger | Model::GalaxyCrash => Units::Bonsai,
            Model::Planets => Units::Solar,
            _ => Units::NBody,
        }
    }

    /// Σ in the labels' unit per Σ in the state's unit.
    pub fn sigma_factor(self) -> f64 {
        match self {
            Units::NBody | Units::Solar => 1.0,
            Units::Bonsai => MASS_UNIT_MSUN,
        }
    }

    /// The label of log Σ's unit.
    pub fn sigma_label(self) -> &'static str {
        match self {
            Units::NBody => "log Σ (N-body units)",
            Units::Bonsai => "log Σ [M☉ kpc⁻²]",
            Units::Solar => "log Σ [M☉ AU⁻²]",
        }
    }

    /// A time in the state's units as text: "t = 293 Myr" or "t = 1.25".
    pub fn time_label(self, t: f64) -> String {
        match self {
            Units::NBody => format!("t = {}", round_to(t, 3)),
            Units::Bonsai => {
                let myr = t * crate::state::galaxy::units::TIME_UNIT_MYR;
                format!("t = {myr:.0} Myr")
            }
            Units::Solar => format!("t = {} yr", round_to(self.time_in_unit(t), 3)),
        }
    }

    /// A length as text with its unit ("5 kpc", "0.5 (N-body)").
    pub fn length_label(self, l: f64) -> String {
        let v = round_to(l, 3);
        match self {
            Units::NBody => format!("{v} (N-body)"),
            Units::Bonsai | Units::Solar => format!("{v} {}", self.length_unit()),
        }
    }

    /// A time in the state's units in the unit its labels use (years,
    /// Myr, or the state's own).
    pub fn time_in_unit(self, t: f64) -> f64 {
        match self {
            Units::NBody => t,
            Units::Bonsai => t * crate::state::galaxy::units::TIME_UNIT_MYR,
            Units::Solar => t / std::f64::consts::TAU,
        }
    }

    /// The name of the length unit ("" for N-body units).
    pub fn length_unit(self) -> &'static str {
        match self {
            Units::NBody => "",
            Units::Bonsai => "kpc",
            Units::Solar => "AU",
        }
    }

    /// The name of the unit of `time_in_unit` ("" for N-body units).
    pub fn time_unit(self) -> &'static str {
        match self {
            Units::NBody => "",
            Units::Bonsai => "Myr",
            Units::Solar => "yr",
        }
    }
}

/// `x` with at most `digits` significant digits, no trailing zeros.
fn round_to(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    let r = (x * scale).round() / scale;
    let s = format!("{r:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The mass of every pixel of a map (rows top to bottom) and the side of
/// a pixel, in the state's units.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceDensity {
    pub width: u32,
    pub height: u32,
    /// Side of a pixel (length units).
    pub pixel: f64,
    /// Mass in each pixel (mass units).
    pub mass: Vec<f64>,
}

impl SurfaceDensity {
    /// A map from the accumulation's words (four per pixel, the mass in the
    /// first and the fourth; see `shaders/render.wgsl`) drawn with
    /// `unit_scale` units per unit mass.
    pub fn from_accum(words: &[u32], width: u32, height: u32, unit_scale: f64, pixel: f64) -> Self {
        let mass = words
            .chunks_exact(4)
            .map(|w| (w[0] as f64 + w[3] as f64 * 4294967296.0) / unit_scale)
            .collect();
        Self {
            width,
            height,
            pixel,
            mass,
        }
    }

    /// Σ of pixel k (mass per length²).
    pub fn sigma(&self, k: usize) -> f64 {
        self.mass[k] / (self.pixel * self.pixel)
    }

    pub fn total_mass(&self) -> f64 {
        self.mass.iter().sum()
    }

    /// Position of pixel (i, j)'s centre in the image plane about the
    /// image's centre (x right, y up; length units).
    pub fn position(&self, i: u32, j: u32) -> [f64; 2] {
        [
            (i as f64 + 0.5 - 0.5 * self.width as f64) * self.pixel,
            (0.5 * self.height as f64 - j as f64 - 0.5) * self.pixel,
        ]
    }

    fn pixels(&self) -> impl Iterator<Item = ([f64; 2], f64)> + '_ {
        (0..self.height).flat_map(move |j| {
            (0..self.width).map(move |i| {
                (
                    self.position(i, j),
                    self.mass[(j * self.width + i) as usize],
                )
            })
        })
    }

    /// Mean Σ in rings `edges[k]..edges[k + 1]` about the image's centre
    /// (each pixel in the ring of its centre).
    pub fn profile(&self, edges: &[f64]) -> Vec<f64> {
        let rings = edges.len().saturating_sub(1);
        let (mut mass, mut area) = (vec![0.0; rings], vec![0.0; rings]);
        for ([x, y], m) in self.pixels() {
            let r = x.hypot(y);
            if let Some(k) = (0..rings).find(|&k| r >= edges[k] && r < edges[k + 1]) {
                mass[k] += m;
                area[k] += self.pixel * self.pixel;
            }
        }
        mass.iter()
            .zip(&area)
            .map(|(m, a)| if *a > 0.0 { m / a } else { 0.0 })
            .collect()
    }

    /// The radius about the image's centre that holds half the map's mass
    /// (the pixels' centres; `app::analysis` measures a disk's half-mass
    /// radius on its particles likewise).
    pub fn half_mass_radius(&self) -> f64 {
        let v: Vec<(f64, f64)> = self.pixels().map(|([x, y], m)| (x.hypot(y), m)).collect();
        super::camera::weighted_quantile(v, 0.5)
    }

    /// The m = 2 mode of the mass within `r_max` of the image's centre:
    /// (A2, phase), as `app::analysis::bar_mode` measures it on particles.
    pub fn bar_mode(&self, r_max: f64) -> (f64, f64) {
        let (mut re, mut im, mut total) = (0.0, 0.0, 0.0);
        for ([x, y], m) in self.pixels() {
            if x.hypot(y) < r_max && m > 0.0 {
                let phi = y.atan2(x);
                re += m * (2.0 * phi).cos();
                im += m * (2.0 * phi).sin();
                total += m;
            }
        }
        let a2 = if total > 0.0 {
            re.hypot(im) / total
        } else {
            0.0
        };
        (a2, im.atan2(re))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_and_carry_units() {
        assert_eq!(Units::Bonsai.length_label(5.0), "5 kpc");
        assert_eq!(Units::NBody.length_label(0.5), "0.5 (N-body)");
        assert_eq!(Units::Bonsai.time_label(30.0), "t = 293 Myr");
        assert_eq!(Units::NBody.time_label(1.2345), "t = 1.23");
    }

    #[test]
    fn a_pixel_pair_on_a_line_is_a_full_bar() {
        // Two equal masses on one line through the centre: A2 = 1.
        let mut map = SurfaceDensity {
            width: 4,
            height: 2,
            pixel: 1.0,
            mass: vec![0.0; 8],
        };
        map.mass[3] = 1.0;
        map.mass[4] = 1.0;
        let (a2, _) = map.bar_mode(10.0);
        assert!((a2 - 1.0).abs() < 1e-12, "{a2}");
        assert_eq!(map.total_mass(), 2.0);
    }
}
