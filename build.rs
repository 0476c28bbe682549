//! With the `mpi` feature, links the system's Open MPI (`pkg-config ompi`,
//! as Debian's libopenmpi-dev installs it).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_MPI").is_none() {
        return;
    }
    let dirs = std::process::Command::new("pkg-config")
        .args(["--libs-only-L", "ompi"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|| "-L/usr/lib/x86_64-linux-gnu/openmpi/lib".into());
    for dir in dirs.split_whitespace().filter_map(|d| d.strip_prefix("-L")) {
        println!("cargo:rustc-link-search=native={dir}");
    }
}
