//! The tone-mapping pass (drives `shaders/tonemap.wgsl`): the
//! accumulation through the frame's exposure into the target's format.

use crate::gpu::kernel::{bind_group, render_pipeline, Binding, ShaderSource, Slot};

const TONEMAP_WGSL: &str = include_str!("../../shaders/tonemap.wgsl");

/// The composed WGSL of the tone-mapping pass.
pub fn wgsl() -> String {
    super::compose(TONEMAP_WGSL)
}

/// The binding contract of `shaders/tonemap.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("tone", Binding::Uniform),
    ("accum", Binding::StorageRead),
    ("exposure", Binding::StorageRead),
    ("markers", Binding::StorageRead),
];

pub(crate) struct ToneMap {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
}

impl ToneMap {
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        let module = ShaderSource::new("render tonemap", wgsl());
        let (pipeline, layout) = render_pipeline(
            device,
            ("render tonemap", &module),
            (BINDINGS, wgpu::ShaderStages::FRAGMENT),
            wgpu::PrimitiveTopology::TriangleList,
            (format, None),
        );
        Self { pipeline, layout }
    }

    /// Records the pass that fills `view`; `buffers` in the contract's
    /// order.
    pub fn draw(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        view: &wgpu::TextureView,
        buffers: [&wgpu::Buffer; 4],
    ) {
        let bind = bind_group(device, "render tonemap", &self.layout, BINDINGS, &buffers);
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("render tonemap"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view,
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
        pass.set_bind_group(0, &bind, &[]);
        pass.draw(0..3, 0..1);
    }
}
