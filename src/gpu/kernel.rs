//! A compute kernel: one WGSL entry point with an explicit bind-group layout.
//! Each module that drives a shader declares the shader's binding contract
//! once, as a `BINDINGS` list of (WGSL variable name, access) in binding
//! order; kernels and bind groups are built from it, `bind` checks the
//! buffers against it, and `tests/gpu_layout.rs` checks it against the WGSL
//! itself (naga reflection), so a mismatch fails a native test instead of
//! a browser tab.

use super::context::{dispatch_size, GpuContext};
use super::kernel_cache;
use super::layout::WORKGROUP_SIZE;
use super::shader::reachable;

/// Stride of the slots of a `Binding::UniformDynamic` buffer: WebGPU's
/// minimum uniform offset alignment.
pub const DYNAMIC_SLOT: u64 = 256;

/// How a kernel sees one binding of group 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    Uniform,
    /// A uniform bound with a dynamic offset: one `DYNAMIC_SLOT`-byte slot
    /// per dispatch (e.g. per tree level).
    UniformDynamic,
    StorageRead,
    StorageReadWrite,
}

/// One binding of group 0: the WGSL variable's name and its access.
pub type Slot = (&'static str, Binding);

/// The layout of bind group 0 for `bindings` (`bindings[k]` is
/// `@binding(k)`), visible to `stages`.
pub fn bind_group_layout(
    device: &wgpu::Device,
    label: &str,
    bindings: &[Slot],
    stages: wgpu::ShaderStages,
) -> wgpu::BindGroupLayout {
    let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
        .iter()
        .enumerate()
        .map(|(k, (_, b))| wgpu::BindGroupLayoutEntry {
            binding: k as u32,
            visibility: stages,
            ty: match b {
                Binding::Uniform | Binding::UniformDynamic => wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: matches!(b, Binding::UniformDynamic),
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
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &entries,
    })
}

/// A bind group of `layout` with `buffers[k]` at `@binding(k)`. Panics when
/// the buffers do not match the contract's length (a programming error the
/// native tests catch).
pub fn bind_group(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    bindings: &[Slot],
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    assert_eq!(
        buffers.len(),
        bindings.len(),
        "{label}: {} buffers for the bindings {:?}",
        buffers.len(),
        bindings.iter().map(|b| b.0).collect::<Vec<_>>()
    );
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .zip(bindings)
        .enumerate()
        .map(|(k, (b, (_, access)))| wgpu::BindGroupEntry {
            binding: k as u32,
            resource: match access {
                Binding::UniformDynamic => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: b,
                    offset: 0,
                    size: wgpu::BufferSize::new(DYNAMIC_SLOT),
                }),
                _ => b.as_entire_binding(),
            },
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
}

/// A composed WGSL module (`shader::compose`), compiled for each entry
/// point from the part of it that entry point reaches
/// (`shader::reachable`): Chrome's engine compiles a pipeline from its
/// whole module, so one module's other entry points, and the layouts
/// every module carries, would be compiled again with every pipeline of a
/// page's first frame (a tenth to a seventh of its compiles).
pub struct ShaderSource {
    label: String,
    source: String,
    checks: Option<wgpu::ShaderRuntimeChecks>,
}

impl ShaderSource {
    pub fn new(label: &str, source: impl Into<String>) -> Self {
        Self {
            label: label.to_string(),
            source: source.into(),
            checks: None,
        }
    }

    /// As `new`, compiled with the given runtime checks (see
    /// `Kernel::new_with_checks`).
    ///
    /// # Safety
    /// As `Kernel::new_with_checks`, for every entry point of the module.
    pub unsafe fn with_checks(
        label: &str,
        source: impl Into<String>,
        checks: wgpu::ShaderRuntimeChecks,
    ) -> Self {
        Self {
            checks: Some(checks),
            ..Self::new(label, source)
        }
    }

    /// The shader module of what `entries` reach, built once per device
    /// (`kernel_cache`).
    fn compile(&self, device: &wgpu::Device, entries: &[&str]) -> wgpu::ShaderModule {
        let checks = self.checks.map(|c| format!("{c:?}"));
        kernel_cache::module(device, (&self.source, entries), checks, || {
            let descriptor = wgpu::ShaderModuleDescriptor {
                label: Some(&self.label),
                source: wgpu::ShaderSource::Wgsl(reachable(&self.source, entries).into()),
            };
            match self.checks {
                None => device.create_shader_module(descriptor),
                // SAFETY: `with_checks`'s caller promised what this needs.
                Some(checks) => unsafe { device.create_shader_module_trusted(descriptor, checks) },
            }
        })
    }
}

/// The entry points of a render pipeline's module: its vertex and
/// fragment stages.
pub const RENDER_ENTRY_POINTS: [&str; 2] = ["vs_main", "fs_main"];

/// The render pipeline of `module`'s `vs_main` and `fs_main` (no vertex
/// buffers: the vertex shader makes its own geometry) drawing
/// `topology` into one target of `format` with `blend`, and the layout
/// of its bind group 0 (`bindings`, visible to `stages`). Its build is
/// timed with the compute kernels' (`kernel_cache::built`).
pub fn render_pipeline(
    device: &wgpu::Device,
    (label, module): (&str, &ShaderSource),
    (bindings, stages): (&[Slot], wgpu::ShaderStages),
    topology: wgpu::PrimitiveTopology,
    (format, blend): (wgpu::TextureFormat, Option<wgpu::BlendState>),
) -> (wgpu::RenderPipeline, wgpu::BindGroupLayout) {
    let module = &module.compile(device, &RENDER_ENTRY_POINTS);
    let layout = bind_group_layout(device, label, bindings, stages);
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = kernel_cache::built(|| {
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(label),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module,
                entry_point: Some(RENDER_ENTRY_POINTS[0]),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                topology,
                ..Default::default()
            },
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module,
                entry_point: Some(RENDER_ENTRY_POINTS[1]),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format,
                    blend,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        })
    });
    (pipeline, layout)
}

/// A compute pipeline and the layout of its bind group 0. Built once per
/// device, module, entry point and contract (`kernel_cache`).
pub struct Kernel {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
    bindings: &'static [Slot],
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
        bindings: &'static [Slot],
    ) -> Self {
        Self::from_module(
            device,
            label,
            &ShaderSource::new(label, source),
            entry,
            bindings,
        )
    }

    /// As `new`, with the given runtime checks in place of wgpu's default
    /// ones. `ShaderRuntimeChecks::unchecked()` leaves a native shader
    /// without index clamping of arrays and without loop counters
    /// (storage buffers stay bounded where the driver has robust buffer
    /// access, as Vulkan drivers with `robustBufferAccess2` do). In the
    /// browser this is `new`: WebGPU keeps its own checks. Worth it only
    /// for a hot kernel (the tree walk: 4–6 % faster on the H100; the
    /// direct f32 kernel 5 %, the Hermite `ds` kernels with their lighter
    /// guards 5–7 %: BENCHMARKS.md).
    ///
    /// # Safety
    /// With checks off, every index into an array of `source` must be in
    /// bounds by the kernel's construction, and every loop must end.
    pub unsafe fn new_with_checks(
        device: &wgpu::Device,
        label: &str,
        source: &str,
        entry: &str,
        bindings: &'static [Slot],
        checks: wgpu::ShaderRuntimeChecks,
    ) -> Self {
        // SAFETY: the caller's promise is this function's contract.
        let module = unsafe { ShaderSource::with_checks(label, source, checks) };
        Self::from_module(device, label, &module, entry, bindings)
    }

    /// As `new`, for a module shared by several entry points.
    pub fn from_module(
        device: &wgpu::Device,
        label: &str,
        module: &ShaderSource,
        entry: &str,
        bindings: &'static [Slot],
    ) -> Self {
        let module = &module.compile(device, &[entry]);
        let (pipeline, layout) = kernel_cache::pipeline(device, module, (entry, bindings), || {
            let layout = bind_group_layout(device, label, bindings, wgpu::ShaderStages::COMPUTE);
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
            (pipeline, layout)
        });
        Self {
            pipeline,
            layout,
            bindings,
            label: label.to_string(),
        }
    }

    /// Bind group with `buffers[k]` at `@binding(k)`, in the order of the
    /// contract.
    pub fn bind(&self, device: &wgpu::Device, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        bind_group(device, &self.label, &self.layout, self.bindings, buffers)
    }

    /// Records one dispatch of `groups` workgroups into `pass`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        groups: (u32, u32),
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }

    /// Submits one dispatch over `threads` invocations (workgroups of
    /// `WORKGROUP_SIZE`) with `bind`, alone: for a kernel run once between
    /// read-backs.
    pub fn submit(&self, ctx: &GpuContext, bind: &wgpu::BindGroup, threads: u32) {
        let device = &ctx.device;
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            let groups = dispatch_size(device, threads, WORKGROUP_SIZE);
            self.dispatch(&mut pass, bind, groups);
        }
        ctx.queue.submit(Some(encoder.finish()));
    }

    /// Records one dispatch of `groups` workgroups with the dynamic
    /// uniform slot `slot`.
    pub fn dispatch_in_slot(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        slot: u32,
        groups: (u32, u32),
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[slot * DYNAMIC_SLOT as u32]);
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }

    /// Records one dispatch of work whose amount the GPU wrote: of the
    /// workgroup counts in `args` at byte `offset`, or with `strided`, of
    /// that many workgroups, over which the kernel strides its work
    /// (`DispatchSizing`). `slot` selects the dynamic uniform slot (ignored
    /// by kernels without one).
    pub fn dispatch_gpu_sized(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        slot: Option<u32>,
        (args, offset): (&wgpu::Buffer, u64),
        strided: Option<u32>,
    ) {
        pass.set_pipeline(&self.pipeline);
        match slot {
            Some(s) => pass.set_bind_group(0, bind, &[s * DYNAMIC_SLOT as u32]),
            None => pass.set_bind_group(0, bind, &[]),
        }
        match strided {
            Some(workgroups) => pass.dispatch_workgroups(workgroups, 1, 1),
            None => pass.dispatch_workgroups_indirect(args, offset),
        }
    }
}
