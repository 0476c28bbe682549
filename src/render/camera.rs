//! The view: an orbit camera around a target point (yaw/pitch angles,
//! distance, vertical field of view) and how particles are coloured, turned
//! into the renderer's uniform. The same numbers drive the browser canvas
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
    /// Multiplies the per-sprite alpha chosen for N (`auto_alpha`).
    pub brightness: f32,
    pub color_mode: ColorMode,
    /// Colour of `ColorMode::Uniform`.
    pub color: [f32; 3],
    /// Bit t set: particles of component tag t are not drawn.
    pub hidden_tags: u32,
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
        }
    }
}

impl Camera {
    /// Per-sprite alpha for `n` particles: additive blending of many
    /// sprites saturates, so alpha falls as 1/sqrt(N) (about the growth of
    /// the brightest pixels' sprite count), from 1 at N <= 2000.
    pub fn auto_alpha(n: u32) -> f32 {
        (2000.0 / n.max(1) as f32).sqrt().clamp(0.02, 1.0)
    }

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

    /// The uniform for a `width` × `height` pixel target showing `n`
    /// particles; `range` is the value of the colour-mapped quantity at the
    /// low and the high end of the map (see `render::color_range`).
    pub fn uniform(&self, width: u32, height: u32, n: u32, range: [f32; 2]) -> CameraUniform {
        let aspect = width.max(1) as f32 / height.max(1) as f32;
        let view = look_at(self.eye(), self.target);
        let near = 0.01 * self.distance;
        let far = 100.0 * self.distance;
        let proj = perspective(self.fov_y, aspect, near, far);
        let alpha = (Self::auto_alpha(n) * self.brightness).clamp(0.0, 1.0);
        CameraUniform {
            view_proj: mul(&proj, &view),
            color: [self.color[0], self.color[1], self.color[2], alpha],
            viewport: [
                width as f32,
                height as f32,
                self.point_size,
                if self.size_attenuation {
                    self.distance
                } else {
                    0.0
                },
            ],
            color_mode: self.color_mode.index(),
            value_lo: range[0],
            value_hi: range[1],
            hidden_tags: self.hidden_tags,
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

fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut m = [[0.0; 4]; 4];
    for (c, col) in m.iter_mut().enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[k][r] * b[c][k]).sum();
        }
    }
    m
}
