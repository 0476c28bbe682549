//! The tone-mapping pass (drives `shaders/tonemap.wgsl`): the
//! accumulation through the frame's exposure into the target's format.

use crate::gpu::kernel::{bind_group, bind_group_layout, shader_module, Binding, Slot};

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
        let module = shader_module(device, "render tonemap", &wgsl());
        let layout = bind_group_layout(
            device,
            "render tonemap",
            BINDINGS,
            wgpu::ShaderStages::FRAGMENT,
        );
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("render tonemap"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = crate::gpu::kernel_cache::built(|| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("render tonemap"),
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
                        blend: None,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview_mask: None,
                cache: None,
            })
        });
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
