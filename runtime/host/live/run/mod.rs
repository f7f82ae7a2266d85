//! `morphrt run`: real-time playback with hot reload, profile switches by
//! key or by the file, and an optional capture of what the device played.
//!
//! A take survives its end, however it comes: `q`, `--duration` and the
//! stop signals (SIGINT, SIGTERM, SIGHUP: a fade, the capture and the
//! journal finished, then exit 128 + the signal's number) finish both files;
//! after a crash the capture is a valid WAV up to its last second
//! ([`crate::host::live::tap`]) and the journal replays up to its last
//! progress record ([`crate::host::record::journal`]).

mod driving;
mod input_device;
mod setup;
mod timing;
mod transports;

use crate::graph::SeedSource;
use crate::host::files::error::FileError;
use crate::host::files::rules::Inputs;
use crate::host::files::signals::{signal_name, InterruptGuard};
use crate::host::live::control::{self, LoopConfig, RunReport, StatusMode};
use crate::host::live::device::input::InputDevice;
use crate::host::live::input;
use crate::host::live::player::{self, Meters, Player, Switches};
use crate::host::live::remote_in::{AudioClock, Inlet, RemoteHub};
use crate::host::live::session::{LiveSession, Playing, PlayingControls, SessionConfig};
use crate::host::live::tap::{TapError, TapReport, TapWriter};
use crate::host::live::transport::Transport;
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::TimeArg;
use driving::LiveDriver;
use setup::*;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use timing::top_nodes_line;
use transports::open_transports;
pub use transports::TransportArgs;

/// What `morphrt run` was asked to do: the command's arguments.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunOptions {
    /// The scene file (JSON).
    pub scene: PathBuf,
    #[command(flatten)]
    pub threads: crate::host::files::threads::ThreadArgs,
    /// Session profile: strict, repro or live (default: the scene's, else repro).
    #[arg(long, value_parser = Profile::parse_arg)]
    pub profile: Option<Profile>,
    /// Output device id (see `morphrt devices`), or `clock` for no device,
    /// paced in real time; default: the default output.
    ///
    /// `clock` plays paced in real time without a device; an xrun there is
    /// a callback that missed its real-time deadline on this machine, not a
    /// sound card's underrun (the first one and the summary say so).
    /// Without a usable device `run` says so, lists the devices and
    /// exits 1. A stalled or lost device is detected and the stream rebuilt
    /// with the engine's state and sample clock intact.
    #[arg(long)]
    pub device: Option<String>,
    /// The client name `--device jack` registers (default: morphrt; JACK
    /// numbers a second client of the same name, `morphrt-01`).
    #[arg(long)]
    pub name: Option<String>,
    /// What `--device jack` connects its output ports to: the server's
    /// physical playback ports (default), `none`, or the input ports whose
    /// names match this regular expression (`--connect 'recorder:in_'`),
    /// `out_1` to the first, `out_2` to the second, …
    ///
    /// A pattern no input port matches exits 1, listing the input ports.
    #[arg(long)]
    pub connect: Option<String>,
    /// `follow`: with `--device jack`, the scene's beat clock follows the
    /// JACK transport: its tempo is the transport's, and it plays only
    /// while the transport rolls.
    ///
    /// The scene needs a `tempo` (else exit 2). While the transport is
    /// stopped, morphrt plays silence and the scene stands still (its
    /// clock, the beat grid, events, sequencers, `--duration`); it goes on
    /// from there when the transport rolls again. When the tempo of the
    /// transport's bar-beat-tick position (its timebase master's) differs
    /// from the scene's, the scene is handed over to the same text with
    /// that `tempo`, as an edit of it would be: the beat grid re-anchors at
    /// the swap sample, the journal keeps the text and the sample, and
    /// `replay` plays it bit for bit. The scene starts at its own tempo.
    #[arg(long, value_enum, value_name = "MODE")]
    pub transport: Option<TransportMode>,
    /// When the output device is lost and cannot be reopened (a JACK
    /// server that stops), wait for it to return and play on, instead of
    /// ending the session (exit 1).
    ///
    /// While it waits the session's clock is held: the capture and the
    /// journal go on from the same sample when the device returns, so the
    /// take has no gap and `replay` plays it bit for bit. It says when the
    /// device went and when it came back; `q` or Ctrl-C ends the wait.
    #[arg(long)]
    pub reconnect: bool,
    /// Input device id (see `morphrt devices`) the scene's `input` nodes
    /// read; default: the default input. Opened only when the scene has
    /// `input` nodes.
    ///
    /// The input records at the output's rate (a device that cannot
    /// records at the nearest rate it can, converted to the output's on the
    /// capture thread by the strict polyphase converter before the drift
    /// control), in the device's own sample format (integer samples scale
    /// as an integer WAV input's do; a converted input is journaled as
    /// 64-bit float), with at
    /// least the channels the scene reads (else it says what the device
    /// has; an id that is no input device exits 2 listing the inputs). A
    /// scene without `input` nodes opens no input (`--input-device` then
    /// warns). The two devices' clocks drift apart: the input waits in a
    /// ring held at about one input period, one block and a margin of the
    /// larger of the two (a callback woken late by that much does not run
    /// it dry), and when it drifts a single frame is left out or played
    /// twice where the block is quietest. The status line and the summary
    /// add the input latency (the ring's fill), the round trip (input
    /// fill + block + output period) and the frames lost to overruns (the
    /// ring full) and underruns (played as silence) and the drift corrections; a
    /// lost input device is reopened (the same one, else the default
    /// input) while the output plays on.
    #[arg(long = "input-device")]
    pub input_device: Option<String>,
    /// Block size in frames, or `auto`: the size `morphrt calibrate`
    /// stored for this scene on this machine (else the default).
    ///
    /// When the stored choice's key has changed (another machine or build,
    /// an edited scene) `auto` says so and plays the default until
    /// `calibrate` runs again.
    #[arg(long = "block-size")]
    pub block_size: Option<String>,
    /// Stop after this much audio (e.g. 2s), without a fade.
    ///
    /// At most 24 h, with a warning for each event it will not reach.
    #[arg(allow_hyphen_values = true, long)]
    pub duration: Option<TimeArg>,
    /// Replace the scene's seed (noise is a pure function of seed, node id and sample).
    ///
    /// An unsigned integer 0 … 18446744073709551615; a value outside that
    /// range says so.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::scene::seed_arg)]
    pub seed: Option<u64>,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// Device period in frames, when it should differ from the block size.
    #[arg(long, hide = true)]
    pub period: Option<usize>,
    /// Do not watch the scene file for edits.
    ///
    /// Without it, saving the scene file (or a resource it reads) while it
    /// plays applies the edit.
    #[arg(long = "no-watch")]
    pub no_watch: bool,
    /// Also write exactly what went to the device into this WAV file.
    ///
    /// A 32-bit float WAV written under its name from the start (never
    /// over an existing file unasked: see `--overwrite`) whose sizes are
    /// kept current twice a second, so after a crash or a `kill -9` it is
    /// a valid WAV of everything up to its last second. At the 4 GiB WAV
    /// limit or a write error (a full disk) it keeps what it has, with
    /// correct sizes, and says so (a write error exits 1).
    #[arg(long)]
    pub capture: Option<PathBuf>,
    /// Quiet time after a file change before it is read, in milliseconds.
    #[arg(long = "debounce-ms", default_value_t = 30, hide = true)]
    pub debounce_ms: u64,
    /// Journal the session to this file (default: a new file in the
    /// platform's data directory, printed at the end).
    ///
    /// JSON Lines, one record per line, flushed as it goes: the session's
    /// constants, the scene, every applied edit and profile switch with the
    /// samples where it was captured and swapped, rejected edits, a
    /// progress record every second of audio (synced to disk), the stop.
    /// Resources are copied beside the journal, stored by SHA-256; an input
    /// played is recorded beside it (`take.jsonl` → `take.input.wav`). A
    /// journal is locked (a POSIX record lock, released when the session's
    /// process ends, however it ends) by the session writing it: a second
    /// session told to write it is refused (exit 1) naming the first (the
    /// journal `j.jsonl` is being written by morphrt (PID 1234)).
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Do not journal the session.
    #[arg(long = "no-journal", conflicts_with = "journal")]
    pub no_journal: bool,
    /// Replace an existing --capture or --journal file instead of taking
    /// the next free numbered name (take-2.wav, take-3.wav, …).
    ///
    /// Without it, when the `--capture` or `--journal` file exists the
    /// session takes the next free numbered name beside it (`take-2.wav`,
    /// `take-3.wav`, …; `take-2.jsonl`), says so before playing (`capture:
    /// take-2.wav (take.wav exists; --overwrite replaces it)`) and names
    /// the files it wrote at the end. With it, they are replaced under the
    /// output rules of `render` (never an input, a FIFO or a device).
    #[arg(long)]
    pub overwrite: bool,
    /// Start playing from a snapshot file (`render --snapshot-out`, or `w` while playing).
    ///
    /// A snapshot at any sample, not only a block boundary: edits, switches
    /// and `w` then apply on the resumed clock's block grid, blocks counted
    /// from that sample, and a snapshot `w` writes is at a sample on that
    /// grid.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Play this audio file (any format `render --input` reads) into the
    /// scene's `input` nodes, as a capture device would (with at least the
    /// channels the scene reads; silence after its end).
    ///
    /// Paced by the output, so `--device clock` runs a whole session
    /// without a sound card. A file with too few channels exits 2, naming
    /// both; a file at another rate is converted to the session's as
    /// `render --input` converts it (said as `converted: …`); the end of
    /// the input is said once. What the session plays is what an offline
    /// render with the same input writes, bit for bit. While input plays, an edit or switch
    /// whose new engine reads the input catches up with the audio clock
    /// through the last 8 s of input the callback read, and swaps where it
    /// reaches the clock. A journaled session records the input beside the
    /// journal (`take.jsonl` → `take.input.wav`, in the source's format: 8-,
    /// 16-, 24- and 32-bit integers kept exactly, a converted input as
    /// 64-bit float) with its SHA-256, and
    /// `replay` feeds it back; a recorded input that is missing or changed
    /// is refused, naming it (exit 2). `--input` wins over an input device
    /// (`--input-device` then warns).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Play under live even when a node's worst case cannot meet the block
    /// deadline, and hand over edits and switches whose estimate is over
    /// the handover budget (one that then cannot keep up is still dropped).
    ///
    /// Without it, `run` refuses at start-up a live scene whose worst case
    /// misses the deadline, and refuses a switch or edit whose new engine's
    /// estimated cost (`check`'s) is over half the block deadline, and over
    /// what is playing (with the estimate; the old engine keeps playing),
    /// or, when the scene reads the input, whose estimate of two new blocks
    /// beside each playing one is over the block deadline.
    #[arg(long)]
    pub force: bool,
    /// The control transports' flags: `--osc`, `--midi`.
    #[command(flatten)]
    pub transports: TransportArgs,
}

/// What `run --transport` does with the JACK transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportMode {
    /// The scene's tempo and clock follow it.
    Follow,
}

/// Plays a scene until `q`, Ctrl-C or the duration ends: opens what it
/// needs, starts the session, plays it.
pub fn run(opts: &RunOptions, log: &mut dyn Write) -> Result<(), HostError> {
    let prepared = Prepared::open(opts, log)?;
    let live = Live::start(opts, prepared, log)?;
    live.play(opts, log)
}

/// What `run` opens before anything plays, in this order: the scene, the
/// transports, the files it writes (checked), the device, the input.
struct Prepared {
    compiled: Compiled,
    /// Where the transports deliver, until the hub takes it over.
    inlet: Inlet,
    transports: Vec<Box<dyn Transport>>,
    files: SessionFiles,
    out: ChosenDevice,
    /// `--input FILE`, else the input device, if the scene reads input.
    input: Option<input::file::Opened>,
    input_device: Option<InputDevice>,
    frames: Option<u64>,
}

impl Prepared {
    fn open(opts: &RunOptions, log: &mut dyn Write) -> Result<Prepared, HostError> {
        let mut compiled = Compiled::new(opts, log)?;
        // Opened before anything is written or played: a port in use or a
        // wrong MIDI name stops here. What they send waits for the control
        // hub, which takes the inlet over and keeps its mappings current.
        let inlet = Inlet::new(&compiled.plan.controls, compiled.plan.sample_rate);
        let transports = open_transports(&opts.transports, &inlet, log)?;
        setup::follow_transport(opts, &compiled.plan)?;
        // Where the session writes is checked before the device opens.
        let files = session_files(opts, &compiled.plan, log)?;
        let out = open_device(opts, &mut compiled, log)?;
        let (input, input_device) = open_inputs(opts, &compiled.plan, log)?;
        let frames = duration_frames(opts, &compiled.plan, log)?;
        show_warnings(opts, &mut compiled.plan, frames, log);
        Ok(Prepared {
            compiled,
            inlet,
            transports,
            files,
            out,
            input,
            input_device,
            frames,
        })
    }
}

/// The session's input: `--input FILE` wins over an input device.
fn open_inputs(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Result<(Option<input::file::Opened>, Option<InputDevice>), HostError> {
    let input = file_input(opts, plan, log)?;
    let input_device = match &input {
        None => input_device::open_input(opts, plan, log)?,
        Some(_) => {
            if let Some(id) = &opts.input_device {
                let _ = writeln!(
                    log,
                    "warning: --input-device {id} is not used: --input plays a file into the scene instead"
                );
            }
            None
        }
    };
    Ok((input, input_device))
}

/// A session started and ready to play: the player, the control side
/// driving it, and what the end needs.
struct Live {
    player: Player,
    control: LiveDriver,
    out: ChosenDevice,
    input_device: Option<InputDevice>,
    tap_writer: Option<TapWriter>,
    meters: Arc<Meters>,
    origin: Instant,
    profile: Profile,
    label: String,
    sr: u32,
    block: usize,
    fade: u64,
    /// Threads that compute each block (1: no workers).
    threads: usize,
}

impl Live {
    /// Builds the first engine and its player, the control hub (the
    /// transports start delivering to it), the tap, the input, the live
    /// session and what drives it.
    fn start(
        opts: &RunOptions,
        prepared: Prepared,
        log: &mut dyn Write,
    ) -> Result<Live, HostError> {
        let Prepared {
            compiled,
            inlet,
            transports,
            files,
            out,
            input,
            mut input_device,
            frames,
        } = prepared;
        let sr = compiled.plan.sample_rate;
        let block = compiled.plan.block_size;
        let label = status_label(&compiled.plan, &out.id);
        let FirstEngine {
            text,
            file_profile,
            fixed,
            incoming,
            snap_clock,
        } = FirstEngine::new(opts, compiled, log)?;
        let profile = incoming.profile;
        let meters = Arc::new(Meters::default());
        let controls = Arc::new(Switches::default());
        let origin = Instant::now();
        let fade = (sr as u64 * 5 / 1000).max(1);
        // Caught from before the capture's file exists: from here on a stop
        // signal stops the session as `q` does.
        let signals = InterruptGuard::install();
        let tap = start_tap(files.capture, out.channels, sr)?;
        // Per-node timing is off until `t` turns it on.
        let mut p = Player::new(
            *incoming.engine,
            out.channels,
            frames,
            fade,
            meters.clone(),
            controls.clone(),
            origin,
        );
        let link = p.control_link();
        let period = out.device.period_frames().unwrap_or(block);
        let first_controls = PlayingControls {
            maps: incoming.controls.clone(),
            table: incoming.table.clone(),
        };
        let clock = AudioClock {
            meters: meters.clone(),
            origin,
            sample_rate: sr,
            stamped_latency: (block + period) as u64,
            first_sample: snap_clock.unwrap_or(0),
        };
        let hub = RemoteHub::with_inlet(inlet, link, first_controls, clock);
        let transports = start_transports(transports, log)?;
        let tap_writer = tap.map(|(writer, tap)| {
            p.set_tap(tap);
            writer
        });
        let input = attach_input(opts, &mut p, input, input_device.as_mut());
        player::install_panic_hook();
        let first = Playing {
            profile,
            file_profile,
            saved: incoming.saved,
            resources: incoming.resources,
            asked: incoming.asked,
            events: incoming.events,
            controls: PlayingControls {
                maps: incoming.controls,
                table: incoming.table,
            },
        };
        let threads = fixed.workers.as_ref().map_or(1, |w| w.threads());
        let mut protected = Inputs::default();
        if let Some(p) = &opts.resume {
            protected.add("the snapshot resumed from", p);
        }
        let session = LiveSession::new(
            SessionConfig {
                force: opts.force,
                protected,
                history: input.as_ref().map(|i| i.history.clone()),
                ..SessionConfig::new(&opts.scene, text, fixed, first)
            },
            p.link(),
            meters.clone(),
        );
        let shared = driving::Shared {
            controls,
            meters: meters.clone(),
            signals,
            timing: p.timing_link(),
            hub,
            transports,
        };
        let control = LiveDriver::start(
            opts,
            session,
            shared,
            (files.journal, &files.inputs),
            (out.channels, input),
            snap_clock,
            log,
        )?;
        Ok(Live {
            player: p,
            control,
            out,
            input_device,
            tap_writer,
            meters,
            origin,
            profile,
            label,
            sr,
            block,
            fade,
            threads,
        })
    }

    /// Plays until the session ends, then finishes the journal and the
    /// capture and says what played.
    fn play(self, opts: &RunOptions, log: &mut dyn Write) -> Result<(), HostError> {
        let Live {
            player,
            mut control,
            mut out,
            mut input_device,
            tap_writer,
            meters,
            origin,
            profile,
            label,
            sr,
            block,
            fade,
            threads,
        } = self;
        let tty = std::io::stderr().is_terminal();
        let cfg = loop_config(tty, label, block, opts.reconnect);
        say_playing(opts, profile, threads, tty, log);
        let latency = input_device::Latency {
            output_frames: block + out.device.period_frames().unwrap_or(0),
            sample_rate: sr,
        };
        let result = control::run_loop_with(
            out.device.as_mut(),
            player,
            meters.clone(),
            origin,
            &cfg,
            log,
            &mut input_device::WithInput {
                control: &mut control,
                device: input_device.as_mut(),
                latency,
            },
        );
        control.end(&meters, fade, log);
        let tap_report = match tap_writer {
            Some(w) => Some(w.finish()?),
            None => None,
        };
        let r = result?;
        let mut xruns = xruns_text(&r, out.device.xrun_summary());
        if let Some(late) = control.worker_xruns() {
            xruns +=
                &format!("; worker xruns (callbacks a worker kept past their deadline): {late}");
        }
        summary(&r, sr, &xruns, &control, &meters, tap_report.as_ref(), log);
        let capture_error = tap_report.and_then(|t| t.error);
        if let Some(c) = &input_device {
            let _ = writeln!(log, "{}", input_device::summary_line(c, latency));
        }
        outcome(control.stop_signal(), capture_error, r.frames, sr, log)
    }
}

/// Starts every transport (the hub is ready), saying what each listens on.
fn start_transports(
    mut transports: Vec<Box<dyn Transport>>,
    log: &mut dyn Write,
) -> Result<Vec<Box<dyn Transport>>, HostError> {
    for t in &mut transports {
        let said = t.start()?;
        let _ = writeln!(log, "{said}");
    }
    Ok(transports)
}

/// Gives the session's input to the player: the file of `--input`, else
/// the input device's ring; the control side keeps its history.
fn attach_input(
    opts: &RunOptions,
    p: &mut Player,
    input: Option<input::file::Opened>,
    input_device: Option<&mut InputDevice>,
) -> Option<driving::SessionInput> {
    match input {
        Some((live, status)) => {
            let source = opts.input.as_deref().unwrap_or(Path::new("")).display();
            Some(driving::SessionInput::attach(
                p,
                live,
                Some(status),
                source.to_string(),
            ))
        }
        None => input_device.and_then(|c| {
            let source = format!("input device {}", c.id());
            c.take_input()
                .map(|live| driving::SessionInput::attach(p, live, None, source))
        }),
    }
}

/// How a session that played to its end exits: 128 + the stop signal that
/// ended it, else 1 when the capture hit a write error, else 0.
fn outcome(
    signal: Option<i32>,
    capture_error: Option<FileError>,
    frames: u64,
    sr: u32,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    match (signal, capture_error) {
        (Some(signal), error) => {
            if let Some(e) = error {
                let _ = writeln!(log, "warning: {e}");
            }
            Err(HostError::Interrupted {
                signal,
                message: format!(
                    "stopped by {} at {:.2}s, as `q` stops",
                    signal_name(signal),
                    frames as f64 / sr as f64
                ),
            })
        }
        (None, Some(e)) => Err(TapError::File(e).into()),
        (None, None) => Ok(()),
    }
}

/// `48000 Hz, block 64, alsa:default, seed 7 (auto)`: the status line's label.
fn status_label(plan: &crate::graph::Plan, device_id: &str) -> String {
    format!(
        "{} Hz, block {}, {}{}",
        plan.sample_rate,
        plan.block_size,
        device_id,
        match plan.seed {
            SeedSource::Auto(s) => format!(", seed {s} (auto)"),
            _ => String::new(),
        }
    )
}

/// The control loop's settings: a live status line on a terminal, else a
/// log line every 5 s.
fn loop_config(tty: bool, label: String, block: usize, reconnect: bool) -> LoopConfig {
    LoopConfig {
        status: if tty {
            StatusMode::Live
        } else {
            StatusMode::Log {
                every: Duration::from_secs(5),
            }
        },
        stall_periods: 4,
        stall_min: Duration::from_millis(200),
        max_rebuilds: 3,
        reconnect,
        label,
        fifo_latency: block,
    }
}

/// `playing scene.json (repro) on 2 threads, watching for edits — keys: …`
/// (the threads said when there is more than one).
fn say_playing(
    opts: &RunOptions,
    profile: Profile,
    threads: usize,
    tty: bool,
    log: &mut dyn Write,
) {
    let _ = writeln!(
        log,
        "playing {} ({profile}){}{} — {}",
        opts.scene.display(),
        if threads > 1 {
            format!(" on {threads} threads")
        } else {
            String::new()
        },
        if !opts.no_watch {
            ", watching for edits"
        } else {
            ""
        },
        if tty {
            "keys: s/r/l switch profile, w snapshot, t times nodes, q quits"
        } else {
            "commands on stdin, one per line: s, r, l, w, t, q"
        }
    );
}

/// The lines after a run that played to its end: what played (`xruns`:
/// its xruns in words), the most expensive nodes, control in, and what the
/// tap recorded.
fn summary(
    r: &RunReport,
    sr: u32,
    xruns: &str,
    control: &LiveDriver,
    meters: &Meters,
    tap_report: Option<&TapReport>,
    log: &mut dyn Write,
) {
    let panics =
        meters.node_panics.load(Ordering::Relaxed) + meters.callback_panics.load(Ordering::Relaxed);
    let _ = writeln!(
        log,
        "played {} frames ({:.2}s); edits applied {}, rejected {}; {xruns}; DSP load mean {:.1}%, p99 {:.1}%, max {:.1}%{}{}",
        r.frames,
        r.frames as f64 / sr as f64,
        control.session.applied.len(),
        control.session.rejected.len(),
        r.load_mean * 100.0,
        r.load_p99 * 100.0,
        r.load_max * 100.0,
        if r.rebuilds > 0 {
            format!("; stream rebuilt {} time(s)", r.rebuilds)
        } else {
            String::new()
        },
        if panics > 0 {
            format!("; {panics} panic(s) contained")
        } else {
            String::new()
        }
    );
    let _ = writeln!(log, "{}", nodes_summary(control));
    if !control.transports.is_empty() || control.hub.counts.received > 0 {
        let _ = writeln!(log, "{}", control.hub.summary());
    }
    if let Some(rep) = tap_report {
        captured(rep, log);
    }
}

/// The three most expensive nodes when per-node timing was on at the end
/// (`t`), else how to turn it on.
fn nodes_summary(control: &LiveDriver) -> String {
    if !control.timing.is_on() {
        return "per-node timing was off; `t` while playing turns it on (a second `t` shows the table)".to_string();
    }
    match top_nodes_line(&control.node_times, 3) {
        Some(line) if control.timing.swapped_since_on() => format!("{line} (since the last swap)"),
        Some(line) => line,
        None => "per-node timing was on, but no node time was measured yet".to_string(),
    }
}

/// `captured 96000 frames (2.00s) to take.wav`, with what the file lacks.
fn captured(rep: &TapReport, log: &mut dyn Write) {
    let _ = writeln!(
        log,
        "captured {} frames ({:.2}s) to {}{}",
        rep.frames,
        rep.duration_s(),
        rep.path.display(),
        if rep.dropped_samples > 0 {
            format!(
                " ({} samples lost: the disk could not keep up)",
                rep.dropped_samples
            )
        } else {
            String::new()
        }
    );
    if rep.overflow_samples > 0 && rep.error.is_none() {
        let _ = writeln!(
            log,
            "warning: the capture reached the WAV size limit (4 GiB) at {:.2}s; the {} samples after it were not recorded",
            rep.duration_s(),
            rep.overflow_samples
        );
    }
}

/// `xruns 2`, and on a device where an xrun is not a sound card's
/// underrun (the clock device) what they were there (`meaning`), with how
/// many started late and how many overran: `xruns 2 (the clock device has
/// no sound card: …: 1 started late, 1 overran their budget)`.
fn xruns_text(r: &RunReport, meaning: Option<&str>) -> String {
    let Some(meaning) = meaning else {
        return format!("xruns {}", r.xruns);
    };
    let kinds = if r.xruns > 0 {
        format!(
            ": {} started late, {} overran their budget",
            r.late, r.overruns
        )
    } else {
        String::new()
    };
    format!("xruns {} ({meaning}{kinds})", r.xruns)
}
