//! An orbit camera around the origin: yaw/pitch angles, distance and a
//! vertical field of view, turned into the renderer's view-projection.

use crate::gpu::layout::CameraUniform;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Rotation about the vertical axis (radians).
    pub yaw: f32,
    /// Elevation above the x-z plane (radians).
    pub pitch: f32,
    /// Distance from the origin (N-body length units).
    pub distance: f32,
    /// Vertical field of view (radians).
    pub fov_y: f32,
    /// Sprite size in pixels.
    pub point_size: f32,
    /// Sprite colour and alpha (additive).
    pub color: [f32; 4],
}

impl Default for Camera {
    fn default() -> Self {
        Self {
            yaw: 0.0,
            pitch: 0.3,
            distance: 6.0,
            fov_y: 0.8,
            point_size: 2.0,
            color: [0.55, 0.75, 1.0, 0.35],
        }
    }
}

impl Camera {
    /// The uniform for a `width` × `height` pixel target.
    pub fn uniform(&self, width: u32, height: u32) -> CameraUniform {
        let aspect = width.max(1) as f32 / height.max(1) as f32;
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        let eye = [
            self.distance * cp * sy,
            self.distance * sp,
            self.distance * cp * cy,
        ];
        let view = look_at_origin(eye);
        let near = 0.01 * self.distance;
        let far = 100.0 * self.distance;
        let proj = perspective(self.fov_y, aspect, near, far);
        CameraUniform {
            view_proj: mul(&proj, &view),
            color: self.color,
            viewport: [width as f32, height as f32, self.point_size, 0.0],
        }
    }
}

type Mat4 = [[f32; 4]; 4];

/// Right-handed view matrix looking from `eye` at the origin, y up
/// (column-major: m[column][row]).
fn look_at_origin(eye: [f32; 3]) -> Mat4 {
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
    let f = norm(eye.map(|x| -x));
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
