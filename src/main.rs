//! The native command-line front end; see `webgrav --help`.

fn main() -> std::process::ExitCode {
    webgrav::cli::main()
}
