//! The command line: one clap type for the whole of `morphrt`, one
//! variant per subcommand holding that command's options type (the same
//! type the library's entry point takes, so no field is copied), and the
//! dispatch from a parsed command to its entry point.
//!
//! | command | options | entry point |
//! |---|---|---|
//! | `render` | [`RenderOptions`] | [`crate::host::offline::render::render`] |
//! | `run` | [`RunOptions`] | [`crate::host::live::run::run`] |
//! | `replay` | [`ReplayOptions`] | [`crate::host::record::journal::replay`] |
//! | `check` | [`CheckOptions`] | [`check::check`] |
//! | `bench` | [`BenchOptions`] | [`crate::bench::bench`] |
//! | `calibrate` | [`CalibrateOptions`] | [`crate::bench::calibrate::calibrate`] |
//! | `plot` | [`PlotOptions`] | [`crate::host::offline::plot::plot`] |
//! | `devices`, `ops` | — | [`devices::devices`], [`ops::ops`] |
//! | `schema`, `completions`, `man` | — | [`docs`] |

pub mod check;
pub mod devices;
pub mod docs;
pub mod ops;

use crate::bench::calibrate::CalibrateOptions;
use crate::bench::BenchOptions;
use crate::host::live::run::RunOptions;
use crate::host::offline::plot::PlotOptions;
use crate::host::offline::RenderOptions;
use crate::host::record::journal::ReplayOptions;
use crate::host::term::{self, ColorWhen, Verbosity};
use crate::host::HostError;
use check::CheckOptions;
use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

/// `--version`: the release, the commit and the build's settings (repro and
/// live bits depend on the build and the CPU feature level).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("MORPHRT_BUILD_DETAIL"),
    ")"
);

/// `morphrt`: its global options and one subcommand.
#[derive(Parser)]
#[command(
    name = "morphrt",
    version = LONG_VERSION,
    about = "A scene-graph audio runtime with strict, repro and live profiles"
)]
pub struct Cli {
    /// Print only errors (and what was asked for on stdout: --hash, --json, tables).
    #[arg(short = 'q', long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: resolved profiles, resource paths, timings.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// Colour messages: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Render a scene offline to a WAV file (strict renders are bit-exact).
    Render(RenderOptions),
    /// Play a scene in real time, applying edits of the file as it plays
    /// (keys s/r/l switch profile; q or Ctrl-C stops).
    Run(RunOptions),
    /// Re-render a journaled `run` session offline, bit for bit.
    Replay(ReplayOptions),
    /// List audio output and input devices and their configurations.
    Devices,
    /// Validate a scene and print every node's resolved profile, precision,
    /// math policy, providers and guarantee.
    Check(CheckOptions),
    /// Check parity (strict: the golden's hash; repro/live: within the bound
    /// of a strict render), then time: real-time factor, per-block times
    /// against the deadline, per-node shares. A failed parity check times
    /// nothing and exits 1.
    Bench(BenchOptions),
    /// Time the scene under live at block sizes 32, 64, 128 and 256 and
    /// store the smallest whose p99 block time stays under half its
    /// deadline, for `run --block-size auto`.
    Calibrate(CalibrateOptions),
    /// Draw a scene's main bus (rendered offline into memory) or a WAV file
    /// as a PNG: per channel, a waveform (the min and max sample of each
    /// pixel column, so a one-sample click shows; −1 … +1, red where it
    /// passes full scale) above a spectrogram (Hann STFT, −120 … 0 dB of a
    /// full-scale sine through the viridis colours, low frequencies at the
    /// bottom). Labelled in an embedded bitmap font: a title line (file,
    /// profile, rate, channels, range), the time in seconds below, the
    /// waveform scale and the frequencies left, the channel and a dB colour
    /// bar right.
    Plot(PlotOptions),
    /// Print a JSON Schema (draft 2020-12) of the scene format, generated
    /// from the operator registry, for editors to validate and complete
    /// scenes (a scene's "$schema" key or VS Code's json.schemas setting).
    /// It allows unknown fields, which morphrt only warns about, but not
    /// unknown params, which are errors.
    Schema(docs::SchemaOptions),
    /// Print a shell completion script, e.g.
    /// `morphrt completions bash > ~/.local/share/bash-completion/completions/morphrt`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `morphrt man | man -l -`.
    Man,
    /// List operators: ports, params (unit, default, range) and tier.
    Ops(ops::OpsOptions),
}

/// Runs a parsed command line: sets the terminal up from the global
/// options, runs the command, prints its error and returns the exit code
/// (0 success, 2 bad input, 1 runtime failure, 128 + n after signal n).
pub fn main(cli: Cli) -> ExitCode {
    term::init(
        if cli.quiet {
            Verbosity::Quiet
        } else if cli.verbose {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        },
        ColorWhen::parse(&cli.color).expect("clap checked --color"),
    );
    match dispatch(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = e.to_string();
            if !message.is_empty() {
                let _ = writeln!(term::errors(), "{message}");
            }
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Calls the command's entry point with the process's standard output and
/// the terminal's message stream.
pub fn dispatch(command: Command) -> Result<(), HostError> {
    let stdout = &mut std::io::stdout();
    let log = &mut term::messages();
    match command {
        Command::Render(o) => crate::host::offline::render::render(&o, stdout, log),
        Command::Run(o) => crate::host::live::run::run(&o, log),
        Command::Replay(o) => crate::host::record::journal::replay(&o, log),
        Command::Devices => devices::devices(stdout),
        Command::Check(o) => check::check(&o, stdout, log),
        Command::Bench(o) => crate::bench::bench(&o, stdout, log),
        Command::Calibrate(o) => crate::bench::calibrate::calibrate(&o, stdout, log),
        Command::Plot(o) => crate::host::offline::plot::plot(&o, stdout, log),
        Command::Schema(o) => docs::schema(&o, stdout),
        Command::Completions { shell } => docs::completions(shell, stdout),
        Command::Man => docs::man(stdout),
        Command::Ops(o) => ops::ops(&o, stdout),
    }
}
