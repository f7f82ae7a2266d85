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
//! | `plugin` | [`PluginOptions`] | [`crate::host::offline::plugin::plugin`] |
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
use crate::host::offline::plugin::PluginOptions;
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

/// A scene-graph audio runtime with strict, repro and live profiles.
///
/// `morphrt help COMMAND` (or `morphrt COMMAND --help`) describes a command
/// and every flag; `-h` gives the short form, and `morphrt man` prints the
/// whole manual. The tutorial and the concepts are in GUIDE.md, the scene
/// format in scenes/README.md.
///
/// Exit codes: 0 success, 2 bad input (scene or arguments), 1 runtime
/// failure (I/O, audio device), 128 + N a render or a `run` stopped by
/// signal N (after cleaning up, or finishing the take). Errors name the
/// file, line:column, JSON path, node and what would be valid.
#[derive(Parser)]
#[command(name = "morphrt", version = LONG_VERSION)]
pub struct Cli {
    /// Print only errors (and what was asked for on stdout: --hash, --json, tables).
    ///
    /// Warnings, summaries, status and progress lines go.
    #[arg(short = 'q', long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: resolved profiles, resource paths, timings.
    ///
    /// Adds the session's settings (profile, block size, rate, seed,
    /// latency), every node's resolved profile, precision and guarantee,
    /// and the file each `@resource:` was read from (`render`, `check`),
    /// and alsa-lib's own diagnostics when a device is opened (otherwise
    /// morphrt alone reports device problems).
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// Colour messages: auto (on a terminal, unless NO_COLOR is set), always or never.
    ///
    /// Messages colour `error:` red, `warning:` yellow, `help:` and `note:`
    /// cyan: with `auto` (the default) only when stderr is a terminal and
    /// `NO_COLOR` is unset or empty (<https://no-color.org>); `always` and
    /// `never` decide regardless.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands. Each one's doc comment is its `--help` text: the first
/// paragraph the summary, the whole its description.
#[derive(Subcommand)]
pub enum Command {
    /// Render a scene offline to a WAV file (strict renders are bit-exact).
    ///
    /// Before rendering it prints the scene's warnings, warns about events
    /// at or after the end of the render (naming each event, its time and
    /// the length), and warns when the cost estimate (see `check`) says the
    /// render will be slower than real time ("estimated 0.42× real time: a
    /// 10 s render may take ~24 s"). On a terminal a progress line
    /// (percentage, elapsed time, estimated time left; redrawn at most 10
    /// times a second) shows while it renders and is erased at the end;
    /// there is none when stderr is not a terminal or with `-q`. After the
    /// render it reports the sample peak (dBFS, overall and per channel),
    /// the DC offset per channel and the clipped samples (clamped to full
    /// scale in i16/i24; in f32, samples over 0 dBFS are kept but counted),
    /// with a warning when anything clipped.
    ///
    /// Output rules. The output never costs you data, and is checked before
    /// anything renders (`replay -o`, `plot -o`, `schema -o` and `run
    /// --overwrite` follow the same rules):
    ///
    /// - it may not be the scene or a resource the scene reads (nor the
    ///   snapshot resumed from), under any name: a link or a hard link to
    ///   one is refused (exit 2);
    ///
    /// - a regular file is written under a hidden `.NAME.PID.partial`
    ///   beside it and renamed over it only when complete, keeping the
    ///   replaced file's permissions (and, as root, its owner); a missing
    ///   directory, a directory, a file you could not write, a file with no
    ///   write permission (even as root: it was made read-only on purpose)
    ///   or too little free space is refused up front, naming your path
    ///   (exit 1);
    ///
    /// - a symbolic link is written through: its target is replaced, the
    ///   link stays;
    ///
    /// - a FIFO or a character device (`/dev/null`) is written in place,
    ///   streaming, with no temporary file (a FIFO waits for its reader);
    ///   `-o -` streams to standard output (refused when that is a
    ///   terminal; the `--hash` line and `--json` then go to stderr); block
    ///   devices and sockets are refused;
    ///
    /// - on any failure, and on SIGINT, SIGTERM or SIGHUP, the partial file
    ///   is removed and a replaced file is left as it was; a signal exits
    ///   128 + its number (130 for Ctrl-C, 143 for SIGTERM). A partial file
    ///   that a killed process (SIGKILL, a crash) left is removed by the
    ///   next write to the same output once that process is gone, with a
    ///   note naming it and the PID.
    ///
    /// The scene, every resource it reads, a snapshot resumed from and a
    /// journal replayed must be regular files (the scene may be `-`,
    /// standard input, for `render`): a FIFO, a device, a directory or a
    /// socket is refused up front, naming the path and what it is (exit 2),
    /// by every command that reads one.
    Render(RenderOptions),
    /// Play a scene in real time, applying edits of the file as it plays
    /// (keys s/r/l switch profile; q or Ctrl-C stops).
    ///
    /// It plays on the default output (or `--device ID`) with the same
    /// engine that renders offline: what you hear is bit for bit what
    /// `render` writes (clipped at ±1 for safety). A status line shows
    /// time, profile, block size, rate, latency, DSP load (the last
    /// second's mean and longest callback; the last line, the session's,
    /// as the summary gives them), xruns, peak level and NaN events. A node that outputs NaN/Inf — or, in f64, a
    /// value beyond f32's range, so strict silences and names the same node
    /// repro and live do, and never writes an infinity — is silenced and
    /// reset; one that keeps failing is muted and retried after 10 ms, the
    /// wait doubling up to 1 s, so it sounds again soon after the cause
    /// ends; `render` and `replay` do the same, sample for sample. A node
    /// that panics is silenced until the next edit (in a lane group only
    /// that node: the other members play exactly what they play without it,
    /// steady groups included, and none runs a block twice); a panic in the
    /// callback outside every node silences the
    /// output and stops `run` with an error.
    ///
    /// Keys (one per line when stdin is piped): `q` (or `quit`) fades out
    /// and stops; the end of piped input does not. `s`, `r`, `l` switch the
    /// profile to strict, repro or live, carrying every node's state across
    /// (f64 ↔ f32); a save right after a switch is built under the switched
    /// profile. `t` turns per-node timing on (off by default: it reads the
    /// clock once per node) and a second `t` turns it off and prints the
    /// nodes by time since; the summary at the end lists the three most
    /// expensive nodes when timing is still on. `w` writes a snapshot of
    /// the engine playing (never of an edit still queued) beside the
    /// journal, for `run --resume`.
    ///
    /// Ctrl-C, SIGTERM and SIGHUP stop as `q` does (also with stdin piped;
    /// a signal ignored when `run` started stays ignored): they finish the
    /// capture and the journal, print what was saved and exit 128 + the
    /// signal's number (130, 143, 129); a second signal while finishing
    /// ends the process at once.
    ///
    /// While it plays, saving the scene file (or a resource it reads)
    /// applies the edit; a switch (by key or the file's `profile`) or an
    /// edit whose new engine's estimated cost (`check`'s) is over half the
    /// block deadline, and over what is playing, is refused with the
    /// estimate and the old engine keeps playing (an edit that costs no
    /// more is taken). When the scene reads the input, the new engine
    /// catches up on the audio thread, two of its blocks beside each block
    /// of the playing one: an edit whose estimate of that sum is over the
    /// block deadline is refused the same way (`--force` tries it anyway).
    /// A handover whose new engine cannot fast-forward ahead of the audio
    /// clock (slower than real time, or more than 2 s behind) is dropped
    /// with "… cannot keep up …; P keeps playing"; `q` and Ctrl-C stop the
    /// session promptly even then. What edits carry and glide: GUIDE.md,
    /// "Hot edits and profile switches". Every session is journaled (`--journal`), and `morphrt
    /// replay` plays the journal back bit for bit.
    Run(RunOptions),
    /// Re-render a journaled `run` session offline, bit for bit.
    ///
    /// `replay` renders the journal offline through the same handover code
    /// and reproduces what the device played bit for bit (on the same build
    /// and CPU feature level; elsewhere it says bits may differ outside
    /// strict stretches). A recorded input is fed back (one missing or
    /// changed is refused, naming it, exit 2). A journal cut off by a crash
    /// still replays: without an end record, `replay` and `replay --info`
    /// warn and play up to its last record (so up to its last second), and
    /// a last line cut in the middle is dropped with a warning naming its
    /// file and line; the capture of that session is the same audio, bit
    /// for bit, up to where it ends. Reading is not locked: `replay` of a
    /// journal still being written renders the session up to its last
    /// record so far, with a note that it is in progress. Like a render, a
    /// replay is at most 24 h long (`--until` replays a part of a longer
    /// session).
    Replay(ReplayOptions),
    /// List audio output and input devices and their configurations.
    ///
    /// Every backend's devices under its name (cpal's host, the clock
    /// device): outputs, then inputs, each with its id (for `run --device`
    /// and `--input-device`), default and supported configurations; then
    /// the MIDI inputs (for `run --midi`), or why there are none (no MIDI
    /// system: on Linux, no ALSA sequencer).
    Devices,
    /// Validate a scene and print every node's resolved profile, precision,
    /// math policy, providers and guarantee.
    ///
    /// For each node: profile, precision, FP mode, math policy, guarantee,
    /// latency and estimated cost (ns per sample); every feedback edge (an
    /// edge with a `"delay"`, the only kind that may close a loop) with its
    /// delay in samples; then the scene's total cost and estimated
    /// real-time factor. Scenes of a million nodes check without trouble:
    /// no pass recurses along the graph.
    ///
    /// The costs are nominal per-operator figures measured once with
    /// `morphrt bench` on a release build (benches/costs.md): strict direct
    /// convolution costs about 0.065 ns per IR tap and channel per sample (a
    /// 2 s stereo IR: 12.5 µs per sample) and is by far the most expensive;
    /// a strict render full of subnormal numbers can be 10–100× slower
    /// still.
    ///
    /// Warnings go to stderr, at most 20 errors and 20 warnings (then "…
    /// and N more errors"): unknown fields, settings that will not do what
    /// they say (a cutoff or an oscillator's `freq` above Nyquist or the
    /// operator's design limit, a delay `time` over its `max_time`, `mix`
    /// gains with no input, an `adsr` gate whose sources never reach its 0.5
    /// threshold), nodes that may miss the block deadline under live,
    /// events after the scene's `duration`, and a render of the scene's
    /// length (else 10 s) slower than real time (naming the node that
    /// dominates the estimate, or the operator whose nodes together do). A
    /// list inside one message (unused gains, `main`'s channels, node ids
    /// to choose from) shows its first 10 entries, then "… and N more".
    Check(CheckOptions),
    /// Check parity (strict: the golden's hash; repro/live: within the bound
    /// of a strict render), then time: real-time factor, per-block times
    /// against the deadline, per-node shares. A failed parity check times
    /// nothing and exits 1.
    ///
    /// Parity first, and only what passes is timed. Under strict the render
    /// must hash to the scene's golden: `--golden FILE`, by default
    /// `golden/scenes/<stem>.json` beside the scene's folder
    /// (`scenes/drone.json` → `golden/scenes/drone.json`). A scene without
    /// a golden (such as `scenes/bench/`) is said so and checked instead for
    /// the same bits at two block sizes. Under repro and live, bench renders
    /// strict itself (checked against the golden when there is one) and
    /// requires the relative RMS error to stay within the golden's bound
    /// (default 1e-3 repro, 3e-2 live). A failed check prints why, times
    /// nothing and exits 1.
    ///
    /// Then `--runs` runs of `-d` audio give the real-time factor (audio
    /// seconds per second: min and median), every block's time against its
    /// deadline (p50, p95, p99, max, blocks over), and from one more run
    /// with per-node timers each node's share, ns per sample and solver
    /// iterations, also summed by operator. Every report starts with its
    /// comparison key: scene SHA-256 (text and resources), profile, block
    /// size, sample rate, build (release/debug), version, CPU model and
    /// feature level, cores. Numbers compare only between reports with the
    /// same key. The `--json` layout: benches/README.md.
    Bench(BenchOptions),
    /// Time the scene under live at block sizes 32, 64, 128 and 256 and
    /// store the smallest whose p99 block time stays under half its
    /// deadline, for `run --block-size auto`; then, at that block size, on
    /// every thread count up to the cores (at most 8), and store the count
    /// whose p99 is lowest when it is under 90 % of one thread's, for `run`
    /// without `--threads`.
    ///
    /// The choice is stored with its key (machine, build, version, scene
    /// hash, sample rate) in the platform's cache directory
    /// (~/.cache/morphrt/calibration.json on Linux); `run --block-size
    /// auto` plays with it, and when the key has changed (another machine
    /// or build, an edited scene) it says so and plays the default until
    /// `calibrate` runs again.
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
    ///
    /// The scene renders with the same `--profile`, `-d`, `--seed`,
    /// `--block-size` and `--resources` as `render`; it is for looking for
    /// a click instead of listening for it. Per channel, `--height` pixels
    /// hold a waveform — the minimum and maximum sample under each pixel
    /// column, so a single-sample click is a full stroke; −1 … +1, red where
    /// it passes full scale — above a spectrogram: a Hann-windowed STFT
    /// (2048 points at 48 kHz) centred on each column, −120 dB (dark) … 0 dB
    /// (bright, a full-scale sine) through the viridis colours, low
    /// frequencies at the bottom on a log (20 Hz … Nyquist, default) or
    /// linear axis.
    ///
    /// `--width` × `--height` are the panels' pixels (one column is a
    /// width-th of the range); margins around them carry the labels, never
    /// over the data, in an 8×8 bitmap font built into the program (doubled
    /// from 800 × 300 up; no system fonts, and the same input gives the same
    /// PNG bytes): a title line (file name, profile or "WAV file", sample
    /// rate, channels, range); left of each waveform its scale (+1 0 -1)
    /// and of each spectrogram its frequencies (100 Hz, 1 kHz, …); right of
    /// each waveform the channel (L/R for two channels, else ch 1, ch 2, …)
    /// and of each spectrogram a colour bar of its dB levels (0 dB …
    /// -120 dB); tick marks under every panel at a round time step (1, 2 or
    /// 5 × 10ⁿ s, printed too) labelled along the bottom (0.5 s). Only as
    /// many ticks are labelled as fit without two labels touching.
    ///
    /// The output must end in `.png` and follows `render`'s output rules:
    /// never the scene, a resource or the WAV it reads, a missing directory
    /// refused up front, written under a temporary name and renamed into
    /// place (`-o -` writes to standard output).
    Plot(PlotOptions),
    /// Write a scene as a CLAP plugin (NAME.clap) that carries the scene
    /// and every resource it reads: copy it to ~/.clap/ to install it.
    ///
    /// The scene is checked under every profile first (errors exit 2, as
    /// `check`). The plugin library built by `cargo build --release -p
    /// morphrt-clap` (next to the `morphrt` executable, or `--library`) is
    /// copied and the scene's text and its resources, decoded, are
    /// appended, so the file needs no scene, no resources folder and no
    /// environment. The plugin's id, name, vendor and CLAP features come
    /// from the scene's optional `"plugin"` object (`{"id": …, "name": …,
    /// "vendor": …, "features": ["audio-effect"]}`), by default from the
    /// file name (`Dub.clap`: name `Dub`, id `morphrt.dub`). A scene with
    /// `input` nodes has an audio input port of the channels it reads, one
    /// with a voice module a note port (CLAP notes and MIDI); the main bus
    /// is the output port. Every param (`profile`, the scene's `controls`,
    /// the nodes' params) is a CLAP param whose id is a hash of its id
    /// string. Its strict output is `render`'s, delayed by its latency
    /// (the engine's block), however the host slices its buffers.
    ///
    /// The output must end in `.clap` and follows `render`'s output rules.
    Plugin(PluginOptions),
    /// Print a JSON Schema (draft 2020-12) of the scene format, generated
    /// from the operator registry, for editors to validate and complete
    /// scenes (a scene's "$schema" key or VS Code's json.schemas setting).
    /// It allows unknown fields, which morphrt only warns about, but not
    /// unknown params, which are errors.
    ///
    /// Every field, each operator's params (numbers with their range, or a
    /// string with one of the param's units, e.g. "440Hz", "-6dB"; enums
    /// with their values; defaults and descriptions), ids, endpoints and
    /// resource names. Editors then complete and check scenes as you type.
    /// It allows fields it does not know because a newer scene still loads.
    /// What needs the whole graph (dangling edges, cycles, casts, missing
    /// resources) stays with `check`. The schema ships as
    /// scenes/schema/scene.schema.json; GUIDE.md shows how to use it in VS
    /// Code.
    Schema(docs::SchemaOptions),
    /// Print a shell completion script, e.g.
    /// `morphrt completions bash > ~/.local/share/bash-completion/completions/morphrt`.
    ///
    /// For bash, zsh, fish, elvish or PowerShell.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `morphrt man | man -l -`.
    ///
    /// The page of `morphrt`, then one page per command with its
    /// description and every flag.
    Man,
    /// List operators: ports, params (unit, default, range) and tier.
    ///
    /// Params show their canonical unit and the units each accepts (e.g.
    /// `Hz (Hz, kHz, midi)`), default and range; the tier is the strongest
    /// profile the operator can honour (the listing's first line says so).
    /// scenes/README.md is the scene format's reference: every field and
    /// key with its default, resource lookup, and the locked noise formula.
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
    let done = match crate::dsp::vector::isa_cap() {
        Ok(_) => dispatch(cli.command),
        Err(message) => Err(HostError::Usage(message)),
    };
    match done {
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
        Command::Plugin(o) => crate::host::offline::plugin::plugin(&o, log),
        Command::Schema(o) => docs::schema(&o, stdout),
        Command::Completions { shell } => docs::completions(shell, stdout),
        Command::Man => docs::man(stdout),
        Command::Ops(o) => ops::ops(&o, stdout),
    }
}
