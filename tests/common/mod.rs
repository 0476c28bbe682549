//! Helpers shared by the native integration tests.
#![allow(dead_code)]

use webgrav::gpu::GpuContext;
use webgrav::state::galaxy::{Component, Disk, DiskGalaxy, Shape};

/// The headless GPU context (lavapipe on CI). Tests fail, not skip, when
/// there is none: the suite is meant to exercise the GPU path.
pub fn gpu() -> GpuContext {
    pollster::block_on(GpuContext::headless())
        .expect("a GPU adapter (install mesa-vulkan-drivers for lavapipe)")
}

/// Runs the CLI with `args` in `dir`, its whole output kept.
pub fn webgrav_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run webgrav")
}

/// Runs the CLI with `args`: (success, stdout, stderr).
pub fn webgrav(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .output()
        .expect("run webgrav");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A small disk galaxy for the galaxy tests: a third of the mass in the
/// disk (M = R_d = 1, z₀ = 0.1, Q = 1.5, axisymmetric for a rotation), an
/// NFW halo of 2 and a Hernquist bulge of 0.1.
pub fn small_disk_galaxy() -> DiskGalaxy {
    DiskGalaxy {
        disk: Disk::new(1.0, 1.0, 0.1, 1.5),
        spheroid: vec![
            Component::truncated("halo", 2.0, Shape::Nfw { rs: 3.0 }, 15.0),
            Component::truncated("bulge", 0.1, Shape::Hernquist { a: 0.2 }, 10.0),
        ],
    }
}

/// A fresh, empty directory for one test (`webgrav-NAME-PID`).
pub fn fresh_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("webgrav-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Bytes of a process's output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A path in this test process's own temporary directory.
pub fn tmp(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("webgrav-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_str().unwrap().to_string()
}

pub mod cases;
pub mod fuzz;
pub mod shaders;

/// The CLI started in `dir` with `args`, its stderr piped (to be sent a
/// signal while it runs).
pub fn spawn_webgrav_in(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start webgrav")
}

/// A run log's lines without what differs between runs (wall times,
/// phase timings).
#[allow(dead_code)]
pub fn log_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("wall_s");
            o.remove("wall_s_per_step");
            o.remove("phase_ms");
            v
        })
        .collect()
}
