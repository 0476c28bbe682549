//! Labels drawn into a native picture on the CPU after it is read back:
//! the surface-density map's colour bar (log Σ with its unit, ticks at
//! round values), a scale bar of a round length, and a caption (the time).
//! The page draws the same as HTML over its canvas, so the canvas itself
//! stays comparable with `webgrav render --legend off`.

use super::density_color;
use super::font::{self, glyph, HEIGHT, WIDTH};
use super::map::Units;

/// The colour bar of a map: Σ at the two ends of the colour map, in the
/// labels' units.
#[derive(Clone, Debug, PartialEq)]
pub struct ColorBar {
    pub lo: f64,
    pub hi: f64,
    pub label: String,
}

/// What to draw over a picture.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Legend {
    pub color_bar: Option<ColorBar>,
    /// A scale bar: the side of a pixel (state's length units) and the
    /// units to label it in.
    pub scale: Option<(f64, Units)>,
    /// Top left, e.g. the time.
    pub caption: Option<String>,
}

/// An RGBA8 image being labelled.
struct Canvas<'a> {
    rgba: &'a mut [u8],
    width: u32,
    height: u32,
}

impl Canvas<'_> {
    fn put(&mut self, x: i64, y: i64, c: [f32; 3]) {
        if x < 0 || y < 0 || x >= self.width as i64 || y >= self.height as i64 {
            return;
        }
        let k = 4 * (y as usize * self.width as usize + x as usize);
        for (d, v) in self.rgba[k..k + 3].iter_mut().zip(c) {
            *d = (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        }
        self.rgba[k + 3] = 255;
    }

    fn rect(&mut self, x: i64, y: i64, w: i64, h: i64, c: [f32; 3]) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.put(xx, yy, c);
            }
        }
    }

    /// `text` at (x, y) (its top left), font pixels `s` image pixels wide,
    /// white on a black outline so it reads on any background.
    fn text(&mut self, x: i64, y: i64, s: i64, text: &str) {
        for pass in 0..2 {
            for (n, ch) in text.chars().enumerate() {
                let gx = x + n as i64 * (WIDTH as i64 + 1) * s;
                for (row, bits) in glyph(ch).iter().enumerate() {
                    for col in 0..WIDTH as i64 {
                        if bits >> (WIDTH as i64 - 1 - col) & 1 == 0 {
                            continue;
                        }
                        let (px, py) = (gx + col * s, y + row as i64 * s);
                        if pass == 0 {
                            self.rect(px - 1, py - 1, s + 2, s + 2, [0.0; 3]);
                        } else {
                            self.rect(px, py, s, s, [1.0; 3]);
                        }
                    }
                }
            }
        }
    }
}

/// Font pixel size for an image `height` pixels high.
fn font_scale(height: u32) -> i64 {
    ((height as f64 / 350.0).round() as i64).max(1)
}

/// The largest of 1, 2 and 5 times a power of ten that is at most `x`.
pub fn round_length(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&l| l <= x)
        .unwrap_or(p)
}

/// Tick values of log10 Σ between `a` and `b`: every 1, 0.5, 0.2 or 0.1,
/// whichever gives at least two, and the decimals to print them with.
pub fn ticks(a: f64, b: f64) -> (Vec<f64>, usize) {
    for (step, decimals) in [(1.0, 0), (0.5, 1), (0.2, 1), (0.1, 1)] {
        let first = (a / step).ceil() as i64;
        let last = (b / step).floor() as i64;
        if last - first >= 1 || step == 0.1 {
            return ((first..=last).map(|k| k as f64 * step).collect(), decimals);
        }
    }
    unreachable!("the last step returns")
}

/// Draws `legend` over `rgba` (RGBA8, rows top to bottom).
pub fn draw(rgba: &mut [u8], width: u32, height: u32, legend: &Legend) {
    let mut c = Canvas {
        rgba,
        width,
        height,
    };
    let s = font_scale(height);
    let margin = 6 * s;
    let line = (HEIGHT as i64 + 3) * s;
    if let Some(caption) = &legend.caption {
        c.text(margin, margin, s, caption);
    }
    if let Some((pixel, units)) = legend.scale {
        if pixel > 0.0 && pixel.is_finite() {
            let length = round_length(0.2 * width as f64 * pixel);
            let bar = (length / pixel).round() as i64;
            let y = height as i64 - margin - 2 * s;
            c.rect(margin - 1, y - 1, bar + 2, 2 * s + 2, [0.0; 3]);
            c.rect(margin, y, bar, 2 * s, [1.0; 3]);
            let label = units.length_label(length);
            let w = font::text_width(&label) as i64 * s;
            c.text(margin + (bar - w) / 2, y - line, s, &label);
        }
    }
    if let Some(bar) = &legend.color_bar {
        if !(bar.lo > 0.0 && bar.hi > bar.lo) {
            return;
        }
        let (a, b) = (bar.lo.log10(), bar.hi.log10());
        let bw = 6 * s;
        let x0 = width as i64 - margin - bw;
        let y0 = (0.2 * height as f64) as i64;
        let h = (0.6 * height as f64) as i64;
        c.rect(x0 - 1, y0 - 1, bw + 2, h + 2, [1.0; 3]);
        for y in 0..h {
            let t = 1.0 - y as f64 / (h - 1).max(1) as f64;
            c.rect(x0, y0 + y, bw, 1, density_color(t));
        }
        let (values, decimals) = ticks(a, b);
        for v in values {
            let y = y0 + ((1.0 - (v - a) / (b - a)) * (h - 1) as f64).round() as i64;
            c.rect(x0 - 3 * s, y, 3 * s, s.max(1), [1.0; 3]);
            let label = format!("{v:.decimals$}");
            let w = font::text_width(&label) as i64 * s;
            c.text(x0 - 5 * s - w, y - (HEIGHT as i64 * s) / 2, s, &label);
        }
        let w = font::text_width(&bar.label) as i64 * s;
        let x = (width as i64 - margin - w).max(0);
        c.text(x, y0 - line - 2 * s, s, &bar.label);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_lengths_and_ticks() {
        assert_eq!(round_length(7.3), 5.0);
        assert_eq!(round_length(0.31), 0.2);
        assert_eq!(round_length(1.0), 1.0);
        assert_eq!(ticks(5.3, 9.1).0, vec![6.0, 7.0, 8.0, 9.0]);
        let (t, d) = ticks(6.1, 7.2);
        assert_eq!((t, d), (vec![6.5, 7.0], 1));
    }

    #[test]
    fn a_legend_lights_pixels_where_it_says() {
        let (w, h) = (400u32, 300u32);
        let mut rgba = vec![0u8; (4 * w * h) as usize];
        let legend = Legend {
            color_bar: Some(ColorBar {
                lo: 1e6,
                hi: 1e9,
                label: Units::Bonsai.sigma_label().into(),
            }),
            scale: Some((0.1, Units::Bonsai)),
            caption: Some("t = 293 Myr".into()),
        };
        draw(&mut rgba, w, h, &legend);
        let lit = |x0: u32, x1: u32, y0: u32, y1: u32| {
            (y0..y1)
                .flat_map(|y| (x0..x1).map(move |x| (x, y)))
                .filter(|&(x, y)| rgba[(4 * (y * w + x)) as usize] > 128)
                .count()
        };
        // Caption top left, scale bar bottom left, colour bar right.
        assert!(lit(0, 150, 0, 30) > 50);
        assert!(lit(0, 150, 260, 300) > 50);
        assert!(lit(360, 400, 60, 240) > 500);
        // The middle stays untouched.
        assert_eq!(lit(150, 300, 100, 200), 0);
    }
}
