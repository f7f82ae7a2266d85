//! The `morphrt` binary: parses the command line and runs the command
//! ([`morphrt::cli`]); the exit code is 0 on success, 2 for bad input
//! (scene, arguments), 1 for a runtime failure (device, I/O), and 128 + n
//! after signal n.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    morphrt::cli::main(morphrt::cli::Cli::parse())
}
