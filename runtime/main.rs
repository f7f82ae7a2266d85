//! The `morphrt` command line: parses arguments, calls the library, maps
//! errors to exit codes (0 success, 2 bad input, 1 runtime failure).

use clap::{Parser, Subcommand};
use morphrt::graph::{check_json, check_table, CompileOptions};
use morphrt::host::render::{render_to_wav, WavFormat};
use morphrt::host::{load_plan, HostError};
use morphrt::profile::Profile;
use morphrt::scene::TimeSpec;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "morphrt",
    version,
    about = "A scene-graph audio runtime with strict, repro and live profiles"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render a scene offline to a WAV file (strict renders are bit-exact).
    Render {
        /// The scene file (JSON).
        scene: PathBuf,
        /// Output WAV file.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Session profile: strict, repro or live (default: the scene's, else repro).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Length, e.g. 10s, 250ms, 4800samples (default: the scene's duration, else 10s).
        #[arg(short = 'd', long = "duration")]
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
        /// Extra directories to look up "@resource:NAME" in (repeatable).
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
    },
    /// Play a scene on an audio device in real time (q or Ctrl-C stops).
    Run {
        scene: PathBuf,
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Output device id (see `morphrt devices`); default: the default output.
        #[arg(long)]
        device: Option<String>,
        /// Block size in frames, or `auto` (the profile's default).
        #[arg(long = "block-size")]
        block_size: Option<String>,
        /// Stop after this much audio (e.g. 2s), without a fade.
        #[arg(long)]
        duration: Option<String>,
        #[arg(long)]
        seed: Option<u64>,
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
        /// Device period in frames, when it should differ from the block size.
        #[arg(long, hide = true)]
        period: Option<usize>,
    },
    /// List audio output devices and their configurations.
    Devices,
    /// Validate a scene and print every node's resolved profile, precision,
    /// math policy, providers and guarantee.
    Check {
        scene: PathBuf,
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        #[arg(long = "resources")]
        resources: Vec<PathBuf>,
    },
    /// List operators: ports, params (unit, default, range) and tier.
    Ops {
        /// Show one operator in detail.
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::parse(s).ok_or_else(|| format!("`{s}` is not a profile (valid: strict, repro, live)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn print_warnings(ws: &[morphrt::scene::Diagnostic]) {
    for w in ws {
        eprintln!("{w}");
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
            resources,
        } => {
            let opts = CompileOptions {
                profile,
                block_size,
                seed,
                resource_dirs: resources,
                ..CompileOptions::default()
            };
            let mut plan = load_plan(&scene, &opts)?;
            let frames = match &duration {
                Some(d) => parse_duration(d, plan.sample_rate)?,
                None => plan.duration.unwrap_or(10 * plan.sample_rate as u64),
            };
            print_warnings(&std::mem::take(&mut plan.warnings));
            let mut engine = morphrt::engine::Engine::new(plan);
            let format = WavFormat::parse(&format).expect("clap checked the format");
            let report = render_to_wav(&mut engine, &output, frames, format, true)
                .map_err(HostError::Runtime)?;
            if let Some((node, sample)) = engine.stats().first_nan {
                eprintln!(
                    "warning: node `{}` produced NaN/Inf (first at sample {sample}); replaced with silence ({} blocks affected)",
                    engine.node_id(node),
                    engine.stats().nan_events
                );
            }
            if hash {
                println!("{}", report.hash);
            }
            eprintln!(
                "rendered {} frames ({:.3}s, {} ch, {} profile, block {}) to {} in {:.2}s ({:.1}x real time)",
                report.frames,
                report.frames as f64 / engine.sample_rate() as f64,
                report.channels,
                engine.profile(),
                engine.block_size(),
                output.display(),
                report.elapsed.as_secs_f64(),
                report.speed(engine.sample_rate())
            );
            Ok(())
        }
        Command::Run {
            scene,
            profile,
            device,
            block_size,
            duration,
            seed,
            resources,
            period,
        } => run_realtime(
            scene, profile, device, block_size, duration, seed, resources, period,
        ),
        Command::Devices => {
            let list = morphrt::host::device::list().map_err(HostError::Runtime)?;
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
        } => {
            let opts = CompileOptions {
                profile,
                resource_dirs: resources,
                ..CompileOptions::default()
            };
            let plan = load_plan(&scene, &opts)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&check_json(&plan)).expect("json")
                );
            } else {
                print_warnings(&plan.warnings);
                print!("{}", check_table(&plan));
            }
            Ok(())
        }
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

#[allow(clippy::too_many_arguments)]
fn run_realtime(
    scene_path: PathBuf,
    profile: Option<Profile>,
    device: Option<String>,
    block_size: Option<String>,
    duration: Option<String>,
    seed: Option<u64>,
    resources: Vec<PathBuf>,
    period: Option<usize>,
) -> Result<(), HostError> {
    use morphrt::host::{device as dev, keys, player, realtime};
    use std::io::IsTerminal;
    use std::sync::Arc;
    let block_size = match block_size.as_deref() {
        None | Some("auto") => None,
        Some(b) => Some(b.parse::<usize>().map_err(|_| {
            HostError::Usage(format!("--block-size takes a number or `auto`, not `{b}`"))
        })?),
    };
    let mut opts = CompileOptions {
        profile,
        block_size,
        seed,
        resource_dirs: resources,
        ..CompileOptions::default()
    };
    let scene = morphrt::scene::load_file(&scene_path).map_err(HostError::Input)?;
    let mut plan = morphrt::graph::compile(&scene, &opts).map_err(HostError::Input)?;
    let opened = dev::open(&dev::Request {
        device: device.as_deref(),
        sample_rate: plan.sample_rate,
        bus_channels: plan.main.len(),
        period: period.unwrap_or(plan.block_size),
    })
    .map_err(HostError::Runtime)?;
    for w in &opened.warnings {
        eprintln!("warning: {w}");
    }
    if opened.sample_rate != plan.sample_rate {
        let scene_rate = plan.sample_rate;
        opts.sample_rate = Some(opened.sample_rate);
        plan = morphrt::graph::compile(&scene, &opts).map_err(|e| {
            // The scene itself is fine; the device's rate is the problem
            // (resources are not resampled).
            let first = e.iter().find(|d| d.is_error()).map(|d| d.message.clone()).unwrap_or_default();
            HostError::Runtime(format!(
                "the device plays {} Hz, not the scene's {scene_rate} Hz, and the scene cannot run at {} Hz: {first}\n  help: choose a device that supports {scene_rate} Hz (see `morphrt devices`), or render to a file",
                opened.sample_rate, opened.sample_rate
            ))
        })?;
    }
    print_warnings(&std::mem::take(&mut plan.warnings));
    let frames = match &duration {
        Some(d) => Some(parse_duration(d, plan.sample_rate)?),
        None => None,
    };
    let label = format!(
        "{} @ {} Hz, block {}, {}{}",
        plan.session_profile,
        plan.sample_rate,
        plan.block_size,
        opened.device_id,
        match plan.seed {
            morphrt::graph::SeedSource::Auto(s) => format!(", seed {s} (auto)"),
            _ => String::new(),
        }
    );
    let block = plan.block_size;
    let sr = plan.sample_rate;
    let engine = morphrt::engine::Engine::new(plan);
    let meters = Arc::new(player::Meters::default());
    let controls = Arc::new(player::Controls::default());
    let origin = std::time::Instant::now();
    let fade = (sr as u64 * 5 / 1000).max(1);
    let p = player::Player::new(
        engine,
        opened.channels,
        frames,
        fade,
        meters.clone(),
        controls.clone(),
        origin,
    );
    let (_keys, _commands) = keys::KeyListener::start(controls);
    let tty = std::io::stderr().is_terminal();
    let cfg = realtime::LoopConfig {
        status: if tty {
            realtime::StatusMode::Live
        } else {
            realtime::StatusMode::Log {
                every: std::time::Duration::from_secs(5),
            }
        },
        stall_periods: 4,
        stall_min: std::time::Duration::from_millis(200),
        max_rebuilds: 3,
        label,
        fifo_latency: block,
    };
    if tty {
        eprintln!("playing {} — press q to stop", scene_path.display());
    }
    let mut output = opened.output;
    let mut err = std::io::stderr();
    match realtime::run_loop(&mut output, p, meters, origin, &cfg, &mut err) {
        Ok(r) => {
            eprintln!(
                "played {} frames ({:.2}s); xruns {}; DSP load mean {:.1}%, p99 {:.1}%, max {:.1}%{}",
                r.frames,
                r.frames as f64 / sr as f64,
                r.xruns,
                r.load_mean * 100.0,
                r.load_p99 * 100.0,
                r.load_max * 100.0,
                if r.rebuilds > 0 { format!("; stream rebuilt {} time(s)", r.rebuilds) } else { String::new() }
            );
            Ok(())
        }
        Err((e, _)) => Err(HostError::Runtime(e)),
    }
}

/// `10s`, `250ms`, `4800samples`, or a bare number of seconds.
fn parse_duration(text: &str, sample_rate: u32) -> Result<u64, HostError> {
    let spec = TimeSpec::parse(text)
        .or_else(|_| TimeSpec::from_seconds_literal(text))
        .map_err(|e| HostError::Usage(format!("bad duration `{text}`: {e}")))?;
    let exact = spec.to_samples(sample_rate);
    if let Some(r) = exact.filter(|r| !r.is_integer()) {
        eprintln!(
            "warning: duration `{text}` is not a whole number of samples at {sample_rate} Hz; rendering {} samples",
            r.round_half_even()
        );
    }
    let samples = exact
        .map(|r| r.round_half_even())
        .filter(|s| *s > 0 && *s <= u32::MAX as i128 * 64)
        .ok_or_else(|| {
            HostError::Usage(format!(
                "duration `{text}` is out of range (it must be positive)"
            ))
        })?;
    Ok(samples as u64)
}
