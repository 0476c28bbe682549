//! `webgrav convert` (snapshot formats by extension) and `webgrav info`
//! (the adapter and its limits).

use crate::app::max_particles;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::run::SolverKind;
use crate::snapshot;

pub fn convert(input: &str, output: &str) -> Result<()> {
    let snap = snapshot::read_file(input)?;
    snapshot::write_file(output, &snap)?;
    eprintln!("wrote {} particles to {output}", snap.particles.len());
    Ok(())
}

pub async fn info() -> Result<()> {
    let ctx = GpuContext::headless().await?;
    println!("{}", ctx.adapter_summary());
    println!("timestamp queries: {}", ctx.has_timestamps);
    println!("max particles (16-byte records): {}", ctx.max_elements(16));
    for &solver in SolverKind::ALL {
        if !solver.is_hermite() {
            println!(
                "max particles, {}: {}",
                solver.name(),
                max_particles(&ctx, solver)
            );
        }
    }
    Ok(())
}
