//! Rendering of particles as additive, size-attenuated point sprites read
//! straight from the simulation's GPU buffers (drives `shaders/render.wgsl`):
//! on the browser's canvas, and offscreen into an RGBA image (the CLI's
//! `render` command), with the same pipeline and the same camera numbers.

pub mod camera;
pub mod components;

use crate::error::{Error, Result};
use crate::gpu::buffers::{read_buffers, storage_buffer, uniform_buffer};
use crate::gpu::kernel::{bind_group, bind_group_layout, Binding, Slot};
use crate::gpu::layout::{AccPot, CameraUniform, Velocity};
use crate::gpu::shader::compose;
use crate::gpu::GpuContext;
use crate::state::GpuParticles;
pub use camera::{Camera, ColorMode};
pub use components::{shell_tags, ComponentTags};

const RENDER_WGSL: &str = include_str!("../../shaders/render.wgsl");

/// Format of offscreen images (the canvas uses the browser's format; both
/// are 8-bit unorm, not sRGB, so the stored values are the same).
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// The composed WGSL of the point renderer.
pub fn wgsl() -> String {
    compose(&[], RENDER_WGSL)
}

/// The binding contract of `shaders/render.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("camera", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("vel", Binding::StorageRead),
    ("acc_pot", Binding::StorageRead),
    ("id", Binding::StorageRead),
    ("tags", Binding::StorageRead),
];

/// The point-sprite pipeline for one target format.
pub struct PointRenderer {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    camera: wgpu::Buffer,
}

/// A particle state bound to the renderer: positions, velocities,
/// potentials and upload indices of the simulation, plus component tags.
pub struct PointBinding {
    bind: wgpu::BindGroup,
    pub tags: wgpu::Buffer,
    n: u32,
}

impl PointRenderer {
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("render points"),
            source: wgpu::ShaderSource::Wgsl(wgsl().into()),
        });
        // All read-only: visible to both stages.
        let layout = bind_group_layout(
            device,
            "render points",
            BINDINGS,
            wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT,
        );
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("render points"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let additive = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("render points"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format,
                    blend: Some(wgpu::BlendState {
                        color: additive,
                        alpha: additive,
                    }),
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        let camera = uniform_buffer(device, "camera", &CameraUniform::default());
        Self {
            pipeline,
            layout,
            camera,
        }
    }

    /// Binds a simulation's particle buffers; `tags[k]` is the component of
    /// the k-th uploaded particle.
    pub fn bind(&self, device: &wgpu::Device, state: &GpuParticles, tags: &[u32]) -> PointBinding {
        let tags = storage_buffer(device, "component tags", &padded_tags(tags, state.n));
        let buffers = [
            &self.camera,
            &state.pos_mass,
            &state.vel,
            &state.acc_pot,
            &state.id,
            &tags,
        ];
        let bind = bind_group(device, "render points", &self.layout, BINDINGS, &buffers);
        PointBinding {
            bind,
            tags,
            n: state.n,
        }
    }

    /// Clears `target` to black and draws every particle of `points` seen
    /// through `camera`.
    pub fn draw(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        points: &PointBinding,
        camera: &CameraUniform,
    ) {
        queue.write_buffer(&self.camera, 0, bytemuck::bytes_of(camera));
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("render points"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &points.bind, &[]);
        pass.draw(0..6 * points.n, 0..1);
    }
}

/// Tags for `n` particles (zeros where `tags` is short; WebGPU wants a
/// non-empty buffer).
fn padded_tags(tags: &[u32], n: u32) -> Vec<u32> {
    let mut t = tags.to_vec();
    t.resize((n as usize).max(1), 0);
    t
}

/// Renders `state` offscreen into a `width` × `height` RGBA8 image (rows top
/// to bottom, 4 bytes per pixel): what the CLI writes as PNG.
pub async fn render_rgba(
    ctx: &GpuContext,
    state: &GpuParticles,
    tags: &[u32],
    camera: &Camera,
    range: [f32; 2],
    width: u32,
    height: u32,
) -> Result<Vec<u8>> {
    let max = ctx.device.limits().max_texture_dimension_2d;
    if width == 0 || height == 0 || width > max || height > max {
        return Err(Error::InvalidParameter(format!(
            "image size {width}x{height} must be between 1 and {max} pixels per side"
        )));
    }
    let device = &ctx.device;
    let renderer = PointRenderer::new(device, OFFSCREEN_FORMAT);
    let points = renderer.bind(device, state, tags);
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("offscreen frame"),
        size: wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: OFFSCREEN_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    // Rows of a texture-to-buffer copy are padded to 256 bytes.
    let row = 4 * width;
    let padded_row =
        row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let pixels = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("offscreen pixels"),
        size: padded_row as u64 * height as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("offscreen render"),
    });
    let view = texture.create_view(&Default::default());
    let uniform = camera.uniform(width, height, state.n, range);
    renderer.draw(&ctx.queue, &mut encoder, &view, &points, &uniform);
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &pixels,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded_row),
                rows_per_image: Some(height),
            },
        },
        wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
    );
    ctx.queue.submit(Some(encoder.finish()));
    let bytes = read_buffers(device, &ctx.queue, &[&pixels])
        .await?
        .remove(0);
    Ok(bytes
        .chunks(padded_row as usize)
        .flat_map(|r| &r[..row as usize])
        .copied()
        .collect())
}

/// Low and high ends of the colour map of each quantity, from the 1st and
/// 99th percentiles of the state (robust to a few escapers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColorRanges {
    pub speed: [f32; 2],
    /// Shallow (blue) to deep (red): the high end is the lower potential.
    pub potential: [f32; 2],
}

impl Default for ColorRanges {
    /// Ranges of a Plummer sphere in N-body units, used until a state has
    /// been seen.
    fn default() -> Self {
        Self {
            speed: [0.0, 1.0],
            potential: [-0.3, -1.6],
        }
    }
}

impl ColorRanges {
    /// Ranges of a state; potentials are optional (not computed yet).
    pub fn of(vel: &[Velocity], acc_pot: Option<&[AccPot]>) -> Self {
        let mut r = Self::default();
        let speeds: Vec<f32> = vel
            .iter()
            .map(|v| (v.vel[0] * v.vel[0] + v.vel[1] * v.vel[1] + v.vel[2] * v.vel[2]).sqrt())
            .collect();
        if let Some([lo, hi]) = percentiles(speeds) {
            r.speed = [lo, if hi > lo { hi } else { lo + 1.0 }];
        }
        if let Some(pot) = acc_pot {
            let pots = pot.iter().map(|a| a.pot).collect();
            if let Some([lo, hi]) = percentiles(pots) {
                if hi > lo {
                    r.potential = [hi, lo];
                }
            }
        }
        r
    }

    /// The range of what `mode` maps.
    pub fn for_mode(&self, mode: ColorMode) -> [f32; 2] {
        match mode {
            ColorMode::Potential => self.potential,
            _ => self.speed,
        }
    }
}

/// 1st and 99th percentiles of the finite values, if any.
fn percentiles(mut v: Vec<f32>) -> Option<[f32; 2]> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f32::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Some([at(0.01), at(0.99)])
}
