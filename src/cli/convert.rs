//! `webgrav convert` (snapshot formats by content and extension) and `webgrav info`
//! (the adapter and its limits).

use super::{emit, say};
use crate::app::{device_max_particles, host};
use crate::error::Result;
use crate::gpu::{GpuContext, LimitsRequest};
use crate::run::SolverKind;
use crate::snapshot;

pub fn convert(input: &str, output: &str, to: Option<&str>) -> Result<()> {
    let format = match to {
        Some(name) => snapshot::Format::named(name)?,
        None => snapshot::Format::from_path(output)?,
    };
    snapshot::check_output(output, &[input])?;
    let clock = std::time::Instant::now();
    let snap = snapshot::read_file(input)?;
    say!(
        "read {} particles {}",
        snap.particles.len(),
        rate(input, clock)
    );
    let clock = std::time::Instant::now();
    let written = snapshot::write_file_as(output, format, &snap)?;
    say!(
        "wrote {} particles to {output} {}",
        snap.particles.len(),
        rate(output, clock)
    );
    for note in written.notes(output) {
        say!("{note}");
    }
    Ok(())
}

/// "in T s (R GB/s)" of the file at `path` since `clock`.
fn rate(path: &str, clock: std::time::Instant) -> String {
    let s = clock.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    format!("in {s:.2} s ({:.2} GB/s)", bytes as f64 / s.max(1e-9) / 1e9)
}

pub async fn info() -> Result<()> {
    let ctx = GpuContext::headless().await?;
    emit(ctx.adapter_summary())?;
    let l = ctx.device.limits();
    emit(format_args!(
        "limits ({}): {} bytes per storage binding, {} bytes of workgroup storage, {} \
         storage buffers per stage, {} invocations per workgroup",
        match ctx.limits_request {
            LimitsRequest::Adapter => "the adapter's",
            LimitsRequest::WebGpuMinimum => "WebGPU's minimum, WEBGRAV_LIMITS=minimum",
        },
        l.max_storage_buffer_binding_size,
        l.max_compute_workgroup_storage_size,
        l.max_storage_buffers_per_shader_stage,
        l.max_compute_invocations_per_workgroup
    ))?;
    emit(format_args!("timestamp queries: {}", ctx.has_timestamps))?;
    emit(format_args!("shader f64 (--precision dp): {}", ctx.has_f64))?;
    emit(format_args!(
        "max particles (16-byte records): {}",
        ctx.max_elements(16)
    ))?;
    for &solver in SolverKind::ALL {
        emit(format_args!(
            "max particles, {}: {}",
            solver.name(),
            device_max_particles(&ctx, solver)
        ))?;
    }
    let available = host::available_bytes();
    emit(format_args!(
        "host memory available: {}",
        available.map_or("unknown".into(), |b| format!("{} MiB", b >> 20))
    ))?;
    for (what, solver) in [
        ("tree, direct", SolverKind::Tree),
        ("hermite", SolverKind::Hermite4),
    ] {
        let per = host::host_bytes_per_particle(solver);
        emit(format_args!(
            "host memory per particle, {what}: {per} bytes beyond the input file; max \
             particles: {}",
            host::host_max_particles(solver).map_or("unknown".into(), |n| n.to_string())
        ))?;
    }
    Ok(())
}
