//! The tree's cells drawn over a picture (drives `shaders/overlay.wgsl`):
//! every cell of levels 0..=L as its tight box, coloured by level, or the
//! cells of one traced interaction list (`tree::trace`), coloured by what
//! the walk did with them. Read straight from the tree's buffers in the
//! frame's own encoder: no read-back, so it keeps the frame rate.

use super::layout::OverlayParams;
use super::trace::{trace_consts, Trace};
use super::TreeSolver;
use crate::gpu::buffers::uniform_buffer;
use crate::gpu::kernel::{bind_group, render_pipeline, Binding, ShaderSource, Slot};
use crate::gpu::GpuContext;

const OVERLAY_WGSL: &str = include_str!("../../shaders/overlay.wgsl");

pub fn wgsl() -> String {
    super::compose_with(&trace_consts(), OVERLAY_WGSL)
}

/// The binding contract of `shaders/overlay.wgsl` (vertex stage).
pub const BINDINGS: &[Slot] = &[
    ("camera", Binding::Uniform),
    ("overlay", Binding::Uniform),
    ("cell_boxes", Binding::StorageRead),
    ("counter_words", Binding::StorageRead),
    ("list", Binding::StorageRead),
];

/// Opacity of the root's lines (deeper levels fade by 0.8 per level).
const ALPHA: f32 = 0.9;

/// What the overlay shows.
pub enum Cells<'a> {
    /// Every cell of levels 0..=max_level.
    Levels(u32),
    /// The cells of a traced interaction list.
    Traced(&'a Trace),
}

pub struct CellOverlay {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    params: wgpu::Buffer,
    /// Bound in place of a list when the overlay draws levels.
    no_list: wgpu::Buffer,
}

impl CellOverlay {
    /// The overlay for targets of `format` (blended over what is there).
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        let module = ShaderSource::new("tree overlay", wgsl());
        // Premultiplied colour added over the picture.
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::OneMinusSrcAlpha,
            operation: wgpu::BlendOperation::Add,
        };
        let blend = wgpu::BlendState {
            color: add,
            alpha: add,
        };
        let (pipeline, layout) = render_pipeline(
            device,
            ("tree overlay", &module),
            (BINDINGS, wgpu::ShaderStages::VERTEX),
            wgpu::PrimitiveTopology::LineList,
            (format, Some(blend)),
        );
        let params = uniform_buffer(device, "tree overlay", &OverlayParams::default());
        let no_list = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tree overlay: no list"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        Self {
            pipeline,
            layout,
            params,
            no_list,
        }
    }

    /// Records a pass that draws `cells` of `tree` over `view` through the
    /// renderer's camera uniform `camera` (the picture's own).
    pub fn draw(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        view: &wgpu::TextureView,
        camera: &wgpu::Buffer,
        tree: &TreeSolver,
        cells: Cells,
    ) {
        let (device, queue) = (&ctx.device, &ctx.queue);
        let b = &tree.buffers;
        let (params, list, instances) = match cells {
            Cells::Levels(max_level) => (
                OverlayParams {
                    max_level,
                    from_list: 0,
                    alpha: ALPHA,
                    _pad: 0,
                },
                &self.no_list,
                b.cell_capacity,
            ),
            Cells::Traced(trace) => (
                OverlayParams {
                    max_level: 0,
                    from_list: 1,
                    alpha: ALPHA,
                    _pad: 0,
                },
                &trace.list,
                trace.capacity(),
            ),
        };
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        let buffers = [camera, &self.params, &b.cell_boxes, &b.counters, list];
        let bind = bind_group(device, "tree overlay", &self.layout, BINDINGS, &buffers);
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("tree overlay"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.draw(0..24, 0..instances);
    }
}
