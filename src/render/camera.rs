//! The view: an orbit camera around a target point (yaw/pitch angles,
//! distance, vertical field of view), what is drawn (a picture of the
//! light, or a map of the surface density) and how particles are coloured,
//! turned into the renderer's uniform. The same numbers drive the browser canvas
//! (URL parameters `yaw`, `pitch`, `dist`, ...) and the CLI's offscreen PNG
//! (`webgrav render --yaw ...`), so their images can be compared.

use crate::gpu::layout::CameraUniform;

/// What the colour of a particle shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorMode {
    /// One colour for all.
    Uniform,
    /// |v| through the colour map (slow: blue, fast: red).
    #[default]
    Speed,
    /// Potential through the colour map (deep: red, shallow: blue).
    Potential,
    /// One colour per component (for one-component models: the initial
    /// Lagrangian shell, inner quarter of the mass to outer quarter).
    Component,
}

impl ColorMode {
    pub const ALL: &'static [ColorMode] = &[
        ColorMode::Uniform,
        ColorMode::Speed,
        ColorMode::Potential,
        ColorMode::Component,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ColorMode::Uniform => "uniform",
            ColorMode::Speed => "speed",
            ColorMode::Potential => "potential",
            ColorMode::Component => "component",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The value of `color_mode` in the shader.
    pub fn index(self) -> u32 {
        match self {
            ColorMode::Uniform => 0,
            ColorMode::Speed => 1,
            ColorMode::Potential => 2,
            ColorMode::Component => 3,
        }
    }
}

/// What a frame shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MapKind {
    /// The light of the particles, a perspective picture exposed by the
    /// frame's own brightness.
    #[default]
    Light,
    /// Projected surface density Σ of the drawn particles, orthographic
    /// (pixels of one area), log scale through a colour map.
    Density,
}

impl MapKind {
    pub const ALL: &'static [MapKind] = &[MapKind::Light, MapKind::Density];

    pub fn name(self) -> &'static str {
        match self {
            MapKind::Light => "light",
            MapKind::Density => "density",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The value of `quantity` in the shaders.
    pub fn index(self) -> u32 {
        match self {
            MapKind::Light => 0,
            MapKind::Density => 1,
        }
    }
}

/// The background a frame is drawn on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Theme {
    /// Light on black: the night sky, for screens.
    #[default]
    Dark,
    /// Ink on white, for projectors and print: a projector cannot show
    /// black, so faint light on it washes out, while dark ink on the white
    /// it shows well keeps its contrast.
    Light,
}

impl Theme {
    pub const ALL: &'static [Theme] = &[Theme::Dark, Theme::Light];

    pub fn name(self) -> &'static str {
        match self {
            Theme::Dark => "dark",
            Theme::Light => "light",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The value of `paper` in the tone-mapping shader.
    pub fn index(self) -> u32 {
        match self {
            Theme::Dark => 0,
            Theme::Light => 1,
        }
    }
}

/// Sprites of twice the particles' mean spacing in radius: a dozen
/// neighbours overlap (as SPH smooths), so a disk of 10^4-10^5 particles
/// reads as a surface with arms rather than as dots, and detail stays
/// where particles are dense (at 1 the sprites still show as blobs).
pub const DEFAULT_SMOOTHING: f32 = 2.0;

/// Largest |pitch| (radians), just short of the poles.
pub const MAX_PITCH: f32 = 1.55;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Rotation about the vertical axis (radians).
    pub yaw: f32,
    /// Elevation above the x-z plane (radians).
    pub pitch: f32,
    /// Distance from the target (N-body length units).
    pub distance: f32,
    /// The point looked at (N-body length units).
    pub target: [f32; 3],
    /// Vertical field of view (radians).
    pub fov_y: f32,
    /// Sprite diameter in pixels at the target's depth.
    pub point_size: f32,
    /// Sprites shrink with distance from the eye (and grow nearer it).
    pub size_attenuation: bool,
    /// Bias of the exposure: the white point the frame measured is divided
    /// by it (1: as measured).
    pub brightness: f32,
    pub color_mode: ColorMode,
    /// Colour of `ColorMode::Uniform`.
    pub color: [f32; 3],
    /// Bit t set: particles of component tag t are not drawn.
    pub hidden_tags: u32,
    /// A picture or a surface-density map.
    pub map: MapKind,
    /// Adaptive smoothing: sprites at least this many times the mean
    /// spacing of the particles drawn about them (0: sprites of
    /// `point_size` alone).
    pub smoothing: f32,
    /// Light on black or ink on white.
    pub theme: Theme,
}

impl Default for Camera {
    fn default() -> Self {
        Self {
            yaw: 0.0,
            pitch: 0.3,
            distance: 6.0,
            target: [0.0; 3],
            fov_y: 0.8,
            point_size: 3.0,
            size_attenuation: true,
            brightness: 1.0,
            color_mode: ColorMode::default(),
            color: [0.55, 0.75, 1.0],
            hidden_tags: 0,
            map: MapKind::Light,
            smoothing: DEFAULT_SMOOTHING,
            theme: Theme::Dark,
        }
    }
}

impl Camera {
    /// The eye position.
    pub fn eye(&self) -> [f32; 3] {
        let (sy, cy) = self.yaw.sin_cos();
        // Straight up or down the view matrix's "up" would be undefined.
        let (sp, cp) = self.pitch.clamp(-MAX_PITCH, MAX_PITCH).sin_cos();
        [
            self.target[0] + self.distance * cp * sy,
            self.target[1] + self.distance * sp,
            self.target[2] + self.distance * cp * cy,
        ]
    }

    /// Turns the view by `dyaw`, `dpitch` (radians) about the target.
    pub fn orbit(&mut self, dyaw: f32, dpitch: f32) {
        self.yaw = (self.yaw + dyaw) % std::f32::consts::TAU;
        self.pitch = (self.pitch + dpitch).clamp(-MAX_PITCH, MAX_PITCH);
    }

    /// Moves the target (and the eye with it) by `dx`, `dy` pixels of a
    /// view `height` pixels high, so the point under the cursor follows it.
    pub fn pan(&mut self, dx: f32, dy: f32, height: u32) {
        let per_px = 2.0 * self.distance * (0.5 * self.fov_y).tan() / height.max(1) as f32;
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.clamp(-MAX_PITCH, MAX_PITCH).sin_cos();
        // Camera right and up vectors in world space.
        let right = [cy, 0.0, -sy];
        let up = [-sp * sy, cp, -sp * cy];
        for k in 0..3 {
            self.target[k] += per_px * (-dx * right[k] + dy * up[k]);
        }
    }

    /// Moves toward (factor < 1) or away from (factor > 1) the target.
    pub fn zoom(&mut self, factor: f32) {
        if factor.is_finite() && factor > 0.0 {
            self.distance = (self.distance * factor).clamp(1e-4, 1e6);
        }
    }

    /// Moves the camera so that a sphere of `radius` about `center` fills
    /// the view of a `width` × `height` target.
    pub fn fit(&mut self, center: [f32; 3], radius: f32, width: u32, height: u32) {
        let aspect = width.max(1) as f32 / height.max(1) as f32;
        let half_y = 0.5 * self.fov_y;
        let half_x = (half_y.tan() * aspect).atan();
        self.target = center;
        self.distance = (radius.max(1e-6) / half_y.min(half_x).sin()).max(1e-5);
    }

    /// Turns the view so that the eye looks at the target from direction
    /// `dir` (e.g. a disk's angular momentum: face-on), as far as the
    /// pitch limit allows.
    pub fn look_from(&mut self, dir: [f64; 3]) {
        let l = (dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]).sqrt();
        if l.is_nan() || l <= 0.0 {
            return;
        }
        let d = dir.map(|x| x / l);
        self.pitch = (d[1].asin() as f32).clamp(-MAX_PITCH, MAX_PITCH);
        self.yaw = if d[0].hypot(d[2]) > 1e-9 {
            d[0].atan2(d[2]) as f32
        } else {
            0.0
        };
    }

    /// Half the height of the view at the target's distance (N-body
    /// lengths): a map's half height.
    pub fn half_height(&self) -> f32 {
        self.distance * (0.5 * self.fov_y).tan()
    }

    /// Side of a pixel at the target's distance (of every pixel of a map)
    /// for a view `height` pixels high.
    pub fn pixel_size(&self, height: u32) -> f64 {
        2.0 * self.half_height() as f64 / height.max(1) as f64
    }

    /// Largest sprite radius in pixels: sprites nearer the eye grow up to
    /// four times the sprite diameter, a lone particle's smoothing to
    /// `smoothing` cells.
    pub fn max_radius(&self) -> f32 {
        (2.0 * self.point_size)
            .max(self.smoothing * super::CELL_PX as f32)
            .max(1.0)
    }

    /// Where the point `p` lands on a `width` × `height` pixel target (x
    /// right, y down, from the top left), as the particles are drawn;
    /// `None` behind the camera.
    pub fn project(&self, p: [f32; 3], width: u32, height: u32) -> Option<[f32; 2]> {
        self.projector(width, height)(p)
    }

    /// `project` for many points: the view's matrix made once.
    pub fn projector(&self, width: u32, height: u32) -> impl Fn([f32; 3]) -> Option<[f32; 2]> {
        let m = self.uniform(width, height, [0.0, 1.0]).view_proj;
        let (w, h) = (width as f32, height as f32);
        move |p: [f32; 3]| {
            let clip: [f32; 4] = std::array::from_fn(|row| {
                (0..3).map(|c| m[c][row] * p[c]).sum::<f32>() + m[3][row]
            });
            if clip[3] <= 0.0 {
                return None;
            }
            let (x, y) = (clip[0] / clip[3], clip[1] / clip[3]);
            Some([(x + 1.0) * 0.5 * w, (1.0 - y) * 0.5 * h])
        }
    }

    /// The uniform for a `width` × `height` pixel target; `range` is the
    /// value of the colour-mapped quantity at the low and the high end of
    /// the map (see `render::ColorRanges`). The renderer fills in the
    /// particle count, the unit scale and the marked tags.
    pub fn uniform(&self, width: u32, height: u32, range: [f32; 2]) -> CameraUniform {
        let aspect = width.max(1) as f32 / height.max(1) as f32;
        let view = look_at(self.eye(), self.target);
        let (proj, reference) = match self.map {
            MapKind::Light => {
                let near = 0.01 * self.distance;
                let far = 100.0 * self.distance;
                let attenuated = if self.size_attenuation {
                    self.distance
                } else {
                    0.0
                };
                (perspective(self.fov_y, aspect, near, far), attenuated)
            }
            MapKind::Density => {
                let h = self.half_height();
                (orthographic(h * aspect, h), 0.0)
            }
        };
        CameraUniform {
            view_proj: mul(&proj, &view),
            viewport: [width as f32, height as f32, self.point_size, reference],
            color: self.color,
            unit_scale: 0.0,
            color_mode: self.color_mode.index(),
            value_lo: range[0],
            value_hi: range[1],
            hidden_tags: self.hidden_tags,
            marked_tags: 0,
            quantity: self.map.index(),
            n: 0,
            max_radius: self.max_radius(),
            smoothing: self.smoothing.max(0.0),
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        }
    }
}

type Mat4 = [[f32; 4]; 4];

/// Right-handed view matrix looking from `eye` at `target`, y up
/// (column-major: m[column][row]).
fn look_at(eye: [f32; 3], target: [f32; 3]) -> Mat4 {
    let norm = |v: [f32; 3]| {
        let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|x| x / l)
    };
    let cross = |a: [f32; 3], b: [f32; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let dot = |a: [f32; 3], b: [f32; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let f = norm([target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]]);
    let s = norm(cross(f, [0.0, 1.0, 0.0]));
    let u = cross(s, f);
    [
        [s[0], u[0], -f[0], 0.0],
        [s[1], u[1], -f[1], 0.0],
        [s[2], u[2], -f[2], 0.0],
        [-dot(s, eye), -dot(u, eye), dot(f, eye), 1.0],
    ]
}

/// Perspective projection to WebGPU clip space (depth 0..1).
fn perspective(fov_y: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let f = 1.0 / (0.5 * fov_y).tan();
    let r = far / (near - far);
    [
        [f / aspect, 0.0, 0.0, 0.0],
        [0.0, f, 0.0, 0.0],
        [0.0, 0.0, r, -1.0],
        [0.0, 0.0, r * near, 0.0],
    ]
}

/// Orthographic projection of the view space's x in [-half_w, half_w] and
/// y in [-half_h, half_h] (depth is not used: a map takes every particle).
fn orthographic(half_w: f32, half_h: f32) -> Mat4 {
    [
        [1.0 / half_w, 0.0, 0.0, 0.0],
        [0.0, 1.0 / half_h, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.5, 1.0],
    ]
}

fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut m = [[0.0; 4]; 4];
    for (c, col) in m.iter_mut().enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[k][r] * b[c][k]).sum();
        }
    }
    m
}

/// The sphere a view of what is drawn fits: the weighted centre of the
/// particles and the radius about it that holds 90 % of their weight
/// (`weight(k)`: a particle's mass times its light for pictures, its mass
/// for maps, 0 where hidden), so escapers, far haloes and faint dark
/// matter do not shrink the view. `None` when nothing weighs. The centre
/// from every particle, the radius from about `VIEW_SAMPLE` of those that
/// weigh (`sample_indices`).
pub fn visible_sphere(
    pos_mass: &[crate::gpu::layout::PosMass],
    weight: impl Fn(usize) -> f64,
) -> Option<([f32; 3], f32)> {
    let (mut c, mut m, mut weighing) = ([0.0f64; 3], 0.0, 0usize);
    for (k, p) in pos_mass.iter().enumerate() {
        let w = weight(k);
        if w > 0.0 {
            m += w;
            weighing += 1;
            for (ck, x) in c.iter_mut().zip(p.pos) {
                *ck += w * x as f64;
            }
        }
    }
    if m.is_nan() || m <= 0.0 {
        return None;
    }
    let c = c.map(|x| x / m);
    let n = pos_mass.len();
    // Drawn more densely where few weigh (a shown component among hidden
    // ones), so that about VIEW_SAMPLE of the draws weigh.
    let wanted = if weighing <= VIEW_SAMPLE {
        n
    } else {
        (VIEW_SAMPLE as u64 * n as u64 / weighing as u64) as usize
    };
    let r2: Vec<(f64, f64)> = sample_indices(n, wanted)
        .map(|k| (&pos_mass[k], weight(k)))
        .filter(|(_, w)| *w > 0.0)
        .map(|(p, w)| {
            let d: f64 = (0..3).map(|k| (p.pos[k] as f64 - c[k]).powi(2)).sum();
            (d, w)
        })
        .collect();
    let r = weighted_quantile(r2, 0.9).sqrt();
    Some((c.map(|x| x as f32), (r as f32).max(1e-3)))
}

/// At most this many particles decide a view's statistics (the framed
/// radius, the mass shells' edges, the colour ranges). A quantile of 2^18
/// draws is off by under 0.1 % of the mass (its standard error,
/// √(q(1 − q)/n); a Plummer sphere's framed radius by a few tenths of a
/// percent), which no picture shows, and costs a fixed time instead of
/// seconds of the browser's one core at 2^24.
pub const VIEW_SAMPLE: usize = 1 << 18;

/// About `wanted` of the indices `0..n` (all of them where `n` ≤
/// `wanted`), ascending: one at a hashed place in each of `wanted` equal
/// runs. Stratified, so every part of the array is drawn from (files and
/// models keep components in runs), and jittered, so kinds that
/// interleave with a period (every 8th particle dark) cannot alias with
/// a stride.
pub fn sample_indices(n: usize, wanted: usize) -> impl Iterator<Item = usize> {
    let (n, runs) = (n as u64, n.min(wanted.max(1)) as u64);
    (0..runs).map(move |k| {
        // u64: k·n passes 2^32 at 2^18 runs of 2^24 (usize is 32 bits in wasm).
        let (lo, hi) = (k * n / runs, (k + 1) * n / runs);
        (lo + crate::state::rng::mix(k) % (hi - lo)) as usize
    })
}

/// The smallest key at which the weights of the keys up to it reach
/// fraction `q` of all the weight (quickselect: linear in the count).
pub fn weighted_quantile(v: Vec<(f64, f64)>, q: f64) -> f64 {
    weighted_quantiles(v, [q])[0]
}

/// `weighted_quantile` at each of `qs` from one quickselect that follows
/// each fraction down its own side: every one meets the partitions and
/// sums it would meet alone (the same key), and those they share are made
/// once (the mass shells' three edges at 2^24 particles: one pass over
/// the page's one core instead of three).
pub fn weighted_quantiles<const K: usize>(mut v: Vec<(f64, f64)>, qs: [f64; K]) -> [f64; K] {
    let total = v.iter().map(|x| x.1).sum::<f64>();
    let mut wanted: Vec<(usize, f64)> = qs.iter().map(|q| q * total).enumerate().collect();
    let mut out = [0.0; K];
    descend(&mut v, &mut wanted, &mut out);
    out
}

/// Finds the keys of `wanted` (output slot, weight still to cover) in `s`.
fn descend(s: &mut [(f64, f64)], wanted: &mut [(usize, f64)], out: &mut [f64]) {
    if wanted.is_empty() {
        return;
    }
    match s.len() {
        0 => wanted.iter().for_each(|&(k, _)| out[k] = 0.0),
        1 => wanted.iter().for_each(|&(k, _)| out[k] = s[0].0),
        len => {
            let mid = len / 2;
            s.select_nth_unstable_by(mid, |a, b| a.0.total_cmp(&b.0));
            let below: f64 = s[..mid].iter().map(|x| x.1).sum();
            let (mut left, mut right) = (Vec::new(), Vec::new());
            for &(k, target) in wanted.iter() {
                if below >= target {
                    left.push((k, target));
                } else if below + s[mid].1 >= target {
                    out[k] = s[mid].0;
                } else {
                    right.push((k, target - (below + s[mid].1)));
                }
            }
            let (lower, upper) = s.split_at_mut(mid);
            descend(lower, &mut left, out);
            descend(&mut upper[1..], &mut right, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_quantile_matches_a_sorted_scan() {
        let v: Vec<(f64, f64)> = (0..1000)
            .map(|k| (((k * 7919) % 1000) as f64, 1.0 + (k % 3) as f64))
            .collect();
        let mut sorted = v.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = v.iter().map(|x| x.1).sum();
        for q in [0.1, 0.5, 0.9, 1.0] {
            let mut acc = 0.0;
            let want = sorted
                .iter()
                .find(|x| {
                    acc += x.1;
                    acc >= q * total
                })
                .unwrap()
                .0;
            assert_eq!(weighted_quantile(v.clone(), q), want, "q = {q}");
        }
        // Several at once: each the key it is alone (here ties in the keys
        // and unequal weights), in any order of the fractions.
        let qs = [0.9, 0.25, 0.5, 0.75, 0.1, 1.0, 0.0];
        let alone = qs.map(|q| {
            let mut acc = 0.0;
            sorted
                .iter()
                .find(|x| {
                    acc += x.1;
                    acc >= q * total
                })
                .unwrap()
                .0
        });
        assert_eq!(weighted_quantiles(v.clone(), qs), alone);
        assert_eq!(weighted_quantiles(Vec::new(), [0.5, 0.9]), [0.0, 0.0]);
    }

    #[test]
    fn a_view_sample_is_every_index_or_one_from_each_run() {
        let all: Vec<usize> = sample_indices(1000, VIEW_SAMPLE).collect();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
        assert_eq!(sample_indices(0, VIEW_SAMPLE).count(), 0);
        for n in [VIEW_SAMPLE + 1, 3 * VIEW_SAMPLE + 7, 1 << 24, (1 << 27) - 1] {
            let s: Vec<usize> = sample_indices(n, VIEW_SAMPLE).collect();
            assert_eq!(s.len(), VIEW_SAMPLE, "n = {n}");
            // Ascending, in bounds, one in each equal run of the indices.
            for (k, w) in s.windows(2).enumerate() {
                assert!(w[0] < w[1], "n = {n}, k = {k}");
            }
            assert!(*s.last().unwrap() < n);
            let start = |k: usize| (k as u64 * n as u64 / VIEW_SAMPLE as u64) as usize;
            let in_run = |(k, &i): (usize, &usize)| start(k) <= i && i < start(k + 1);
            assert!(s.iter().enumerate().all(in_run), "n = {n}");
        }
    }

    #[test]
    fn a_sampled_radius_is_the_whole_one_and_no_period_aliases_it() {
        use crate::gpu::layout::PosMass;
        // 2^21 particles, every 8th at radius 10 and the rest at 1, a
        // period a stride of 8 (2^21 / VIEW_SAMPLE) would always hit: 12.5 %
        // of the mass lies at 10, so the radius holding 90 % is 10; with
        // that 8th particle a quarter as heavy (3.4 %), it is 1.
        let n = 1 << 21;
        for (far_mass, want) in [(1.0f32, 10.0f32), (0.25, 1.0)] {
            let p: Vec<PosMass> = (0..n)
                .map(|k| {
                    let (r, mass) = if k % 8 == 0 {
                        (10.0, far_mass)
                    } else {
                        (1.0, 1.0)
                    };
                    let a = k as f32 * 0.618;
                    PosMass {
                        pos: [r * a.cos(), r * a.sin(), 0.0],
                        mass,
                    }
                })
                .collect();
            let (_, r) = visible_sphere(&p, |k| p[k].mass as f64).unwrap();
            // The centre is off the origin by the rings' discreteness only.
            assert!((r - want).abs() < 0.01 * want, "far mass {far_mass}: {r}");
            // Only the far ones weighing: drawn densely enough to see them.
            let (_, r) = visible_sphere(&p, |k| (k % 8 == 0) as u8 as f64).unwrap();
            assert!((r - 10.0).abs() < 0.1, "{r}");
        }
    }

    #[test]
    fn looking_from_a_direction_puts_the_eye_there() {
        let mut c = Camera::default();
        for dir in [[0.0, 0.0, 1.0], [1.0, 0.2, -0.5], [0.0, -0.3, -1.0]] {
            c.look_from(dir);
            let e = c.eye();
            let l = (dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]).sqrt();
            for k in 0..3 {
                let want = c.target[k] as f64 + c.distance as f64 * dir[k] / l;
                assert!((e[k] as f64 - want).abs() < 1e-5, "{dir:?}: {e:?}");
            }
        }
    }
}
