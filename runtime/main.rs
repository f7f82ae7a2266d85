//! The `morphrt` command line: parses arguments, calls the library, maps
//! errors to exit codes (0 success, 2 bad input, 1 runtime failure).

use clap::{CommandFactory, Parser, Subcommand};
use morphrt::host::offline::{RenderOptions, WavFormat};
use morphrt::host::term::{self, ColorWhen, Verbosity};
use morphrt::host::HostError;
use morphrt::profile::Profile;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `--version`: the release, the commit and the build's settings (repro and
/// live bits depend on the build and the CPU feature level).
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("MORPHRT_BUILD_DETAIL"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "morphrt",
    version = LONG_VERSION,
    about = "A scene-graph audio runtime with strict, repro and live profiles"
)]
struct Cli {
    /// Print only errors (and what was asked for on stdout: --hash, --json, tables).
    #[arg(short = 'q', long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Say more: resolved profiles, resource paths, timings.
    #[arg(short = 'v', long, global = true)]
    verbose: bool,
    /// Colour messages: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render a scene offline to a WAV file (strict renders are bit-exact).
    Render {
        /// The scene file (JSON); `-` reads it from standard input.
        scene: PathBuf,
        /// Output WAV file (replaced only when the render completes), a FIFO
        /// or device (streamed), or `-` for standard output. Never a file
        /// the render reads.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Session profile: strict, repro or live (default: the scene's, else repro).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Length, e.g. 10s, 250ms, 4800samples; at most 24 hours (default: the
        /// scene's duration, else 10s).
        #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
        duration: Option<String>,
        /// Sample format of the WAV file.
        #[arg(long, default_value = "f32", value_parser = ["f32", "i24", "i16"])]
        format: String,
        /// Replace the scene's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Block size in frames (default: the scene's, else the profile's).
        #[arg(long = "block-size")]
        block_size: Option<usize>,
        /// Print the SHA-256 of the main-bus samples at engine precision.
        #[arg(long)]
        hash: bool,
        /// Print a JSON summary: frames, duration, hash, peak, clipped
        /// samples, per-channel levels, time and real-time factor.
        #[arg(long)]
        json: bool,
        /// Extra directories to look up "@resource:NAME" in (repeatable).
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
        /// Write the engine state at this time on the scene's timeline
        /// (repeatable), e.g. 5s or 240000samples.
        #[arg(
            allow_hyphen_values = true,
            long = "snapshot-at",
            requires = "snapshot_out"
        )]
        snapshot_at: Vec<String>,
        /// The snapshot file; with several times, the sample index goes
        /// before the extension (snap.240000.json).
        #[arg(long = "snapshot-out", requires = "snapshot_at")]
        snapshot_out: Option<PathBuf>,
        /// Continue from a snapshot: the WAV holds only the continuation,
        /// -d long (default: the rest of the scene's duration).
        #[arg(long)]
        resume: Option<PathBuf>,
    },
    /// Play a scene in real time, applying edits of the file as it plays
    /// (keys s/r/l switch profile; q or Ctrl-C stops).
    Run {
        /// The scene file (JSON).
        scene: PathBuf,
        /// Session profile: strict, repro or live (default: the scene's, else repro).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Output device id (see `morphrt devices`), or `clock` for no device,
        /// paced in real time; default: the default output.
        #[arg(long)]
        device: Option<String>,
        /// Block size in frames, or `auto`: the size `morphrt calibrate`
        /// stored for this scene on this machine (else the default).
        #[arg(long = "block-size")]
        block_size: Option<String>,
        /// Stop after this much audio (e.g. 2s), without a fade.
        #[arg(allow_hyphen_values = true, long)]
        duration: Option<String>,
        /// Replace the scene's seed (noise is a pure function of seed, node id and sample).
        #[arg(long)]
        seed: Option<u64>,
        /// Extra directories to look up "@resource:NAME" in (repeatable).
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
        /// Device period in frames, when it should differ from the block size.
        #[arg(long, hide = true)]
        period: Option<usize>,
        /// Do not watch the scene file for edits.
        #[arg(long = "no-watch")]
        no_watch: bool,
        /// Also write exactly what went to the device into this WAV file.
        #[arg(long)]
        capture: Option<PathBuf>,
        /// Quiet time after a file change before it is read, in milliseconds.
        #[arg(long, default_value_t = 30, hide = true)]
        debounce_ms: u64,
        /// Journal the session to this file (default: a new file in the
        /// platform's data directory, printed at the end).
        #[arg(long)]
        journal: Option<PathBuf>,
        /// Do not journal the session.
        #[arg(long = "no-journal", conflicts_with = "journal")]
        no_journal: bool,
        /// Start playing from a snapshot file (`render --snapshot-out`, or `w` while playing).
        #[arg(long)]
        resume: Option<PathBuf>,
        /// Play under live even when a node's worst case cannot meet the block deadline.
        #[arg(long)]
        force: bool,
    },
    /// Re-render a journaled `run` session offline, bit for bit.
    Replay {
        /// The journal (`.jsonl`) that `run` wrote.
        journal: PathBuf,
        /// Output WAV file.
        #[arg(short = 'o', long = "output", required_unless_present = "info")]
        output: Option<PathBuf>,
        /// Stop at this time of the session (e.g. 30s, 1440000samples).
        #[arg(allow_hyphen_values = true, long)]
        until: Option<String>,
        /// Print the session's timeline (edits, switches, rejected edits) instead.
        #[arg(long)]
        info: bool,
    },
    /// List audio output devices and their configurations.
    Devices,
    /// Validate a scene and print every node's resolved profile, precision,
    /// math policy, providers and guarantee.
    Check {
        /// The scene file (JSON).
        scene: PathBuf,
        /// Session profile: strict, repro or live (default: the scene's, else repro).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Extra directories to look up "@resource:NAME" in (repeatable).
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
    },
    /// Check parity (strict: the golden's hash; repro/live: within the bound
    /// of a strict render), then time: real-time factor, per-block times
    /// against the deadline, per-node shares. A failed parity check times
    /// nothing and exits 1.
    Bench {
        /// The scene file (JSON).
        scene: PathBuf,
        /// Session profile: strict, repro or live (default: the scene's, else repro).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Audio per timed run, e.g. 5s, 500ms.
        #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
        duration: Option<String>,
        /// Block size in frames (default: the scene's, else the profile's).
        #[arg(long = "block-size")]
        block_size: Option<usize>,
        /// Timed runs.
        #[arg(long, default_value_t = morphrt::bench::DEFAULT_RUNS)]
        runs: usize,
        /// Replace the scene's seed (noise is a pure function of seed, node id and sample).
        #[arg(long)]
        seed: Option<u64>,
        /// Extra directories to look up "@resource:NAME" in (repeatable).
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
        /// The golden to check strict against (default:
        /// golden/scenes/<stem>.json beside the scene's folder; without
        /// one, strict is checked across block sizes instead).
        #[arg(long)]
        golden: Option<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Exit 1 when an --assert-* bound is missed, saying by how much.
        #[arg(long)]
        ci: bool,
        /// With --ci: the median real-time factor must be at least X.
        #[arg(long = "assert-rtf", requires = "ci", value_name = "X")]
        assert_rtf: Option<f64>,
        /// With --ci: the 99th-percentile block time must be at most Y µs.
        #[arg(long = "assert-p99-us", requires = "ci", value_name = "Y")]
        assert_p99_us: Option<f64>,
    },
    /// Time the scene under live at block sizes 32, 64, 128 and 256 and
    /// store the smallest whose p99 block time stays under half its
    /// deadline, for `run --block-size auto`.
    Calibrate {
        /// The scene file (JSON).
        scene: PathBuf,
        /// Audio per run and block size, e.g. 5s.
        #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
        duration: Option<String>,
        /// Runs per block size.
        #[arg(long, default_value_t = morphrt::bench::calibrate::DEFAULT_RUNS)]
        runs: usize,
        /// Replace the scene's seed (noise is a pure function of seed, node id and sample).
        #[arg(long)]
        seed: Option<u64>,
        /// Extra directories to look up "@resource:NAME" in (repeatable).
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Measure and report without storing the result.
        #[arg(long = "no-store")]
        no_store: bool,
    },
    /// Draw a scene's main bus (rendered offline into memory) or a WAV file
    /// as a PNG: per channel, a waveform (the min and max sample of each
    /// pixel column, so a one-sample click shows; −1 … +1, red where it
    /// passes full scale) above a spectrogram (Hann STFT, −120 … 0 dB of a
    /// full-scale sine through the viridis colours, low frequencies at the
    /// bottom). The picture has no text: tick marks along each panel's
    /// bottom mark time at the step the command prints.
    Plot {
        /// A scene (JSON) or a .wav file.
        input: PathBuf,
        /// The PNG file (must end in .png; never a file the plot reads), or
        /// `-` for standard output.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Start of the plotted range, e.g. 1.5s, 250ms, 4800samples (default 0).
        #[arg(allow_hyphen_values = true, long)]
        from: Option<String>,
        /// End of the plotted range (default: the end).
        #[arg(allow_hyphen_values = true, long)]
        to: Option<String>,
        /// Session profile of a scene: strict, repro or live (default: the scene's, else repro).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// How long a scene runs (default: its duration, else 10s).
        #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
        duration: Option<String>,
        /// Replace a scene's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Block size of a scene's render (default: the scene's, else the profile's).
        #[arg(long = "block-size")]
        block_size: Option<usize>,
        /// Extra directories to look up "@resource:NAME" in (repeatable).
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
        /// Picture width in pixels (one column per width-th of the range).
        #[arg(long, default_value_t = 1200)]
        width: u32,
        /// Height of each channel's waveform and spectrogram, in pixels.
        #[arg(long, default_value_t = 400)]
        height: u32,
        /// The spectrogram's frequency axis: log (20 Hz … Nyquist) or linear (0 … Nyquist).
        #[arg(long = "freq-scale", default_value = "log", value_parser = ["log", "linear"])]
        freq_scale: String,
    },
    /// Print a JSON Schema (draft 2020-12) of the scene format, generated
    /// from the operator registry, for editors to validate and complete
    /// scenes (a scene's "$schema" key or VS Code's json.schemas setting).
    /// It allows unknown fields, which morphrt only warns about, but not
    /// unknown params, which are errors.
    Schema {
        /// Write it to this file instead of standard output.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Print a shell completion script, e.g.
    /// `morphrt completions bash > ~/.local/share/bash-completion/completions/morphrt`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `morphrt man | man -l -`.
    Man,
    /// List operators: ports, params (unit, default, range) and tier.
    Ops {
        /// Show one operator in detail.
        name: Option<String>,
        /// Machine-readable output (JSON).
        #[arg(long)]
        json: bool,
    },
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::parse(s).ok_or_else(|| format!("`{s}` is not a profile (valid: strict, repro, live)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    match run(cli) {
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

fn run(cli: Cli) -> Result<(), HostError> {
    match cli.command {
        Command::Render {
            scene,
            output,
            profile,
            duration,
            format,
            seed,
            block_size,
            hash,
            json,
            resources,
            snapshot_at,
            snapshot_out,
            resume,
        } => morphrt::host::offline::render::render(
            &RenderOptions {
                scene,
                output,
                profile,
                duration,
                format: WavFormat::parse(&format).expect("clap checked the format"),
                seed,
                block_size,
                hash,
                json,
                resources,
                snapshot_at,
                snapshot_out,
                resume,
            },
            &mut std::io::stdout(),
            &mut term::messages(),
        ),
        Command::Run {
            scene,
            profile,
            device,
            block_size,
            duration,
            seed,
            resources,
            period,
            no_watch,
            capture,
            debounce_ms,
            journal,
            no_journal,
            resume,
            force,
        } => morphrt::host::live::run::run(
            &morphrt::host::live::run::RunOptions {
                scene,
                profile,
                device,
                block_size,
                duration,
                seed,
                resources,
                period,
                watch: !no_watch,
                capture,
                debounce: std::time::Duration::from_millis(debounce_ms),
                journal,
                no_journal,
                resume,
                force,
            },
            &mut term::messages(),
        ),
        Command::Replay {
            journal,
            output,
            until,
            info,
        } => morphrt::host::record::journal::cli(
            &journal,
            output.as_deref(),
            until.as_deref(),
            info,
            &mut term::messages(),
        ),
        Command::Devices => {
            let list = morphrt::host::live::device::list()?;
            if list.is_empty() {
                println!("no audio output devices");
            }
            for d in list {
                println!(
                    "{}{}  ({})",
                    d.id,
                    if d.is_default { "  [default]" } else { "" },
                    d.name
                );
                if let Some(c) = d.default_config {
                    println!("    default: {c}");
                }
                for c in d.configs {
                    println!("    supports: {c}");
                }
            }
            Ok(())
        }
        Command::Check {
            scene,
            profile,
            json,
            resources,
        } => morphrt::host::check::cli(
            &morphrt::host::check::CheckOptions {
                scene,
                profile,
                json,
                resources,
            },
            &mut std::io::stdout(),
            &mut term::messages(),
        ),
        Command::Bench {
            scene,
            profile,
            duration,
            block_size,
            runs,
            seed,
            resources,
            golden,
            json,
            ci,
            assert_rtf,
            assert_p99_us,
        } => morphrt::bench::cli(
            &morphrt::bench::BenchOptions {
                scene,
                profile,
                duration,
                block_size,
                runs,
                seed,
                resources,
                golden,
                json,
                ci,
                assert_rtf,
                assert_p99_us,
            },
            &mut std::io::stdout(),
            &mut term::messages(),
        ),
        Command::Calibrate {
            scene,
            duration,
            runs,
            seed,
            resources,
            json,
            no_store,
        } => morphrt::bench::calibrate::cli(
            &morphrt::bench::calibrate::CalibrateOptions {
                scene,
                duration,
                runs,
                seed,
                resources,
                json,
                store: !no_store,
            },
            &mut std::io::stdout(),
            &mut term::messages(),
        ),
        Command::Plot {
            input,
            output,
            from,
            to,
            profile,
            duration,
            seed,
            block_size,
            resources,
            width,
            height,
            freq_scale,
        } => morphrt::host::offline::plot::plot(
            &morphrt::host::offline::plot::PlotOptions {
                input,
                output,
                from,
                to,
                profile,
                seed,
                block_size,
                resources,
                duration,
                width,
                height,
                freq_scale: morphrt::host::offline::plot::FreqScale::parse(&freq_scale)
                    .expect("clap checked the scale"),
            },
            &mut std::io::stdout(),
            &mut term::messages(),
        ),
        Command::Schema { output } => {
            morphrt::host::files::scene::write_schema(output.as_deref(), &mut std::io::stdout())
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "morphrt",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout())
            .map_err(|e| HostError::Runtime(format!("cannot print the manual: {e}"))),
        Command::Ops { name, json } => {
            let all = morphrt::ops::registry();
            let chosen: Vec<&morphrt::ops::OpSpec> = match &name {
                Some(n) => match morphrt::ops::lookup(n) {
                    Some(s) => vec![s],
                    None => {
                        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
                        let hint = morphrt::scene::suggest::closest(n, names.iter().copied())
                            .map(|s| format!("did you mean `{s}`? "))
                            .unwrap_or_default();
                        return Err(HostError::Usage(format!(
                            "no operator `{n}`; {hint}(operators: {})",
                            names.join(", ")
                        )));
                    }
                },
                None => all.to_vec(),
            };
            if json {
                let v: Vec<serde_json::Value> = chosen
                    .iter()
                    .map(|s| morphrt::ops::describe::json(s))
                    .collect();
                let out = if name.is_some() {
                    v[0].clone()
                } else {
                    serde_json::Value::Array(v)
                };
                println!("{}", serde_json::to_string_pretty(&out).expect("json"));
            } else if name.is_some() {
                print!("{}", morphrt::ops::describe::detail(chosen[0]));
            } else {
                print!("{}", morphrt::ops::describe::summary(&chosen));
            }
            Ok(())
        }
    }
}
