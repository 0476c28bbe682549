//! A compute kernel: one WGSL entry point with an explicit bind-group layout,
//! so the binding contract is written once, here, in the order of the shader.

/// How a kernel sees one binding of group 0.
#[derive(Clone, Copy, Debug)]
pub enum Binding {
    Uniform,
    StorageRead,
    StorageReadWrite,
}

/// A compute pipeline and the layout of its bind group 0.
pub struct Kernel {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
    label: String,
}

impl Kernel {
    /// Builds `entry` of the composed WGSL `source` (see `shader::compose`);
    /// `bindings[k]` is `@binding(k)` of group 0.
    pub fn new(
        device: &wgpu::Device,
        label: &str,
        source: &str,
        entry: &str,
        bindings: &[Binding],
    ) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        Self::from_module(device, label, &module, entry, bindings)
    }

    /// As `new`, for a module shared by several entry points.
    pub fn from_module(
        device: &wgpu::Device,
        label: &str,
        module: &wgpu::ShaderModule,
        entry: &str,
        bindings: &[Binding],
    ) -> Self {
        let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .enumerate()
            .map(|(k, b)| wgpu::BindGroupLayoutEntry {
                binding: k as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: match b {
                    Binding::Uniform => wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    Binding::StorageRead | Binding::StorageReadWrite => wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage {
                            read_only: matches!(b, Binding::StorageRead),
                        },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: Some(&pipeline_layout),
            module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        Self {
            pipeline,
            layout,
            label: label.to_string(),
        }
    }

    /// Bind group with `buffers[k]` at `@binding(k)`.
    pub fn bind(&self, device: &wgpu::Device, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(k, b)| wgpu::BindGroupEntry {
                binding: k as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&self.label),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// Records one dispatch of `groups` workgroups into `pass`.
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, bind: &wgpu::BindGroup, groups: (u32, u32)) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }
}
