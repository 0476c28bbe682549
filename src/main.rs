//! The native command-line front end; see `webgrav --help`.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    webgrav::cli::main()
}

// The browser build has no command line: it starts from `web.rs`.
#[cfg(target_arch = "wasm32")]
fn main() {}
