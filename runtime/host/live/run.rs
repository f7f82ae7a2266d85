//! `morphrt run`: real-time playback with hot reload, profile switches by
//! key or by the file, and an optional capture of what the device played.

use crate::engine::incoming::{Incoming, SessionFixed};
use crate::graph::{compile, CompileOptions, SeedSource};
use crate::host::files::error::FileError;
use crate::host::files::rules::{check_side_output, Inputs, Kind, Output};
use crate::host::live::control::{self, Control, LoopConfig, RunReport, StatusMode};
use crate::host::live::device::clock::{ClockDevice, CLOCK_DEVICE};
use crate::host::live::device::{self, Device};
use crate::host::live::keys::{Command, Input, KeyListener};
use crate::host::live::player::{self, Controls, Meters, Player};
use crate::host::live::session::{LiveSession, Reason};
use crate::host::live::tap::{Tap, TapReport, TapWriter};
use crate::host::live::watch::FileWatcher;
use crate::host::machine::calibration;
use crate::host::machine::{self, MachineKey};
use crate::host::record::journal::{self, Journal, Record};
use crate::host::record::snapshot::{SnapshotContext, SnapshotFile};
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::TimeArg;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What `morphrt run` was asked to do: the command's arguments.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunOptions {
    /// The scene file (JSON).
    pub scene: PathBuf,
    /// Session profile: strict, repro or live (default: the scene's, else repro).
    #[arg(long, value_parser = Profile::parse_arg)]
    pub profile: Option<Profile>,
    /// Output device id (see `morphrt devices`), or `clock` for no device,
    /// paced in real time; default: the default output.
    #[arg(long)]
    pub device: Option<String>,
    /// Block size in frames, or `auto`: the size `morphrt calibrate`
    /// stored for this scene on this machine (else the default).
    #[arg(long = "block-size")]
    pub block_size: Option<String>,
    /// Stop after this much audio (e.g. 2s), without a fade.
    #[arg(allow_hyphen_values = true, long)]
    pub duration: Option<TimeArg>,
    /// Replace the scene's seed (noise is a pure function of seed, node id and sample).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// Device period in frames, when it should differ from the block size.
    #[arg(long, hide = true)]
    pub period: Option<usize>,
    /// Do not watch the scene file for edits.
    #[arg(long = "no-watch")]
    pub no_watch: bool,
    /// Also write exactly what went to the device into this WAV file.
    #[arg(long)]
    pub capture: Option<PathBuf>,
    /// Quiet time after a file change before it is read, in milliseconds.
    #[arg(long = "debounce-ms", default_value_t = 30, hide = true)]
    pub debounce_ms: u64,
    /// Journal the session to this file (default: a new file in the
    /// platform's data directory, printed at the end).
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Do not journal the session.
    #[arg(long = "no-journal", conflicts_with = "journal")]
    pub no_journal: bool,
    /// Start playing from a snapshot file (`render --snapshot-out`, or `w` while playing).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Play under live even when a node's worst case cannot meet the block deadline.
    #[arg(long)]
    pub force: bool,
}

/// The control side of a `run`: the live session plus the watcher and keys.
struct LiveControl {
    session: LiveSession,
    journal: Option<Journal>,
    /// Handovers, rejections and snapshots already journaled.
    journaled: (usize, usize, usize),
    /// Snapshot files (`w`) are named after this stem.
    snapshot_stem: PathBuf,
    watcher: Option<FileWatcher>,
    commands: Option<Receiver<Input>>,
    controls: Arc<Controls>,
    scene: PathBuf,
    watched: Vec<PathBuf>,
    /// The playing engine's nodes by time, read when playback ended.
    node_times: Vec<crate::engine::NodeTime>,
    /// Reads the keys until dropped (after everything above).
    _keys: KeyListener,
}

impl Control for LiveControl {
    fn tick(&mut self, log: &mut dyn Write) {
        if let Some(rx) = &self.commands {
            while let Ok(input) = rx.try_recv() {
                let c = match input {
                    Ok(c) => c,
                    Err(unknown) => {
                        let _ = writeln!(log, "\n{unknown}");
                        continue;
                    }
                };
                match c {
                    Command::Strict => self.session.switch_profile(Profile::Strict, log),
                    Command::Repro => self.session.switch_profile(Profile::Repro, log),
                    Command::Live => self.session.switch_profile(Profile::Live, log),
                    Command::Quit => self.controls.stop.store(true, Ordering::Relaxed),
                    Command::Snapshot => self.session.request_snapshot(self.snapshot_stem.clone()),
                    Command::Timing => {
                        let _ = writeln!(log, "\n`{c:?}` is not available yet");
                    }
                }
            }
        }
        if let Some(w) = &mut self.watcher {
            let changes = w.take_changes();
            if !changes.is_empty() {
                let resource = changes.iter().any(|p| !same_file(p, &self.scene));
                self.session.file_changed(resource, log);
            }
            let errors = w.take_errors();
            for e in &errors {
                let _ = writeln!(log, "\nwarning: file watcher: {e}");
            }
            if !errors.is_empty() {
                // A watched directory may have been deleted and recreated:
                // watching the set again picks it up.
                if let Err(e) = w.set_files(&self.watched) {
                    let _ = writeln!(log, "\nwarning: {e}");
                }
            }
        }
        self.session.tick(log);
        self.journal_news(log);
        // A scene edit may have added or removed resources.
        let files = self.session.watched_files();
        if files != self.watched {
            if let Some(w) = &mut self.watcher {
                if let Err(e) = w.set_files(&files) {
                    let _ = writeln!(log, "\nwarning: {e}");
                }
            }
            self.watched = files;
        }
    }

    fn finished(&mut self, player: &Player) {
        self.node_times = player.engine().node_time_table();
    }

    fn status(&self) -> String {
        let mut s = format!("  [{}]", self.session.profile());
        if !self.session.last_result.is_empty() {
            s += "  ";
            s += &self.session.last_result;
        }
        s
    }
}

impl LiveControl {
    /// Appends what happened since the last call to the journal. A journal
    /// that cannot be written is reported once and closed; playback goes on.
    fn journal_news(&mut self, log: &mut dyn Write) {
        let Some(j) = &mut self.journal else {
            return;
        };
        let mut records = Vec::new();
        let mut failed = None;
        for h in &self.session.applied[self.journaled.0..] {
            let resources = match j.resources(&h.resources) {
                Ok(r) => r,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let (reason, from, to) = match h.reason {
                Reason::Edit => ("edit", None, None),
                Reason::Switch { from, to } => ("switch", Some(from), Some(to)),
            };
            records.push(Record::Handover {
                reason: reason.to_string(),
                from,
                to,
                profile: h.profile,
                captured_at: h.captured_at,
                swap_at: h.swap_at,
                fade: h.fade,
                text: h.text.to_string(),
                resources,
            });
        }
        for r in &self.session.rejected[self.journaled.1..] {
            records.push(Record::Rejected {
                at: r.at,
                error: r.error.clone(),
                text: r.text.to_string(),
            });
        }
        for (at, file) in &self.session.snapshots[self.journaled.2..] {
            records.push(Record::Snapshot {
                at: *at,
                file: file.display().to_string(),
            });
        }
        self.journaled = (
            self.session.applied.len(),
            self.session.rejected.len(),
            self.session.snapshots.len(),
        );
        for r in &records {
            if let Err(e) = j.write(r) {
                failed = Some(e);
                break;
            }
        }
        if let Some(e) = failed {
            let _ = writeln!(log, "\nwarning: {e}; the journal stops here");
            self.journal = None;
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.file_name() == b.file_name(),
    }
}

/// Plays a scene until `q`, Ctrl-C or the duration ends.
pub fn run(opts: &RunOptions, log: &mut dyn Write) -> Result<(), HostError> {
    let mut compiled = Compiled::new(opts, log)?;
    // Where the session writes is checked before the device opens.
    let files = session_files(opts, &compiled.plan, log)?;
    let mut out = open_device(opts, &mut compiled, log)?;
    let frames = duration_frames(opts, &compiled.plan, log)?;
    show_warnings(opts, &mut compiled.plan, frames, log);
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
    let controls = Arc::new(Controls::default());
    let origin = Instant::now();
    let fade = (sr as u64 * 5 / 1000).max(1);
    let tap = start_tap(files.capture, out.channels, sr)?;
    let mut engine = incoming.engine;
    // Per-node times for the final summary; the deck carries timing over to
    // every engine an edit or profile switch swaps in.
    engine.set_node_timing(true);
    let mut p = Player::new(
        *engine,
        out.channels,
        frames,
        fade,
        meters.clone(),
        controls.clone(),
        origin,
    );
    let tap_writer = match tap {
        Some((writer, tap)) => {
            p.set_tap(tap);
            Some(writer)
        }
        None => None,
    };
    player::install_panic_hook();
    let mut session = LiveSession::new(
        &opts.scene,
        text,
        fixed,
        profile,
        file_profile,
        incoming.capture,
        incoming.resources,
        p.link(),
        meters.clone(),
    );
    let mut protected = Inputs::default();
    if let Some(p) = &opts.resume {
        protected.add("the snapshot resumed from", p);
    }
    session.protect(protected);
    let mut control = LiveControl::start(
        opts,
        session,
        controls,
        (files.journal, &files.inputs),
        out.channels,
        snap_clock,
        log,
    )?;
    let tty = std::io::stderr().is_terminal();
    let cfg = loop_config(tty, label, block);
    say_playing(opts, profile, tty, log);
    let result = control::run_loop_with(
        out.device.as_mut(),
        p,
        meters.clone(),
        origin,
        &cfg,
        log,
        &mut control,
    );
    control.end(&meters, fade, log);
    let tap_report = match tap_writer {
        Some(w) => Some(w.finish()?),
        None => None,
    };
    match result {
        Ok(r) => {
            summary(opts, &r, sr, &control, &meters, tap_report, log);
            Ok(())
        }
        Err(e) => Err(HostError::Runtime(e.message)),
    }
}

/// The scene `run` plays, compiled for the session: its text, how it was
/// compiled (kept to compile again at the device's rate) and the snapshot
/// it resumes from.
struct Compiled {
    text: String,
    scene: crate::scene::Scene,
    copts: CompileOptions,
    plan: crate::graph::Plan,
    snap: Option<SnapshotFile>,
}

impl Compiled {
    /// Reads and compiles the scene: the block size given, the snapshot's,
    /// or (`auto`) the calibrated one; refuses a live session that cannot
    /// meet its deadline unless forced.
    fn new(opts: &RunOptions, log: &mut dyn Write) -> Result<Compiled, HostError> {
        let auto = opts.block_size.as_deref() == Some("auto");
        let block_size = match opts.block_size.as_deref() {
            None | Some("auto") => None,
            Some(b) => Some(b.parse::<usize>().map_err(|_| {
                HostError::Usage(format!("--block-size takes a number or `auto`, not `{b}`"))
            })?),
        };
        let mut copts = CompileOptions {
            profile: opts.profile,
            block_size,
            seed: opts.seed,
            resource_dirs: opts.resources.clone(),
            ..CompileOptions::default()
        };
        let (text, scene) = crate::host::read_scene(&opts.scene)?;
        let snap = resume_snapshot(opts, block_size, &mut copts)?;
        let mut plan = compile(&scene, &copts).map_err(HostError::Input)?;
        if auto {
            if let Some(b) = calibrated_block_size(&text, &plan, log) {
                if b != plan.block_size {
                    copts.block_size = Some(b);
                    plan = compile(&scene, &copts).map_err(HostError::Input)?;
                }
            }
        }
        check_deadlines(&plan, opts, log)?;
        Ok(Compiled {
            text,
            scene,
            copts,
            plan,
            snap,
        })
    }
}

/// The snapshot of `--resume`, read; it fixes the block size and gives the
/// seed and profile unless the command line does.
fn resume_snapshot(
    opts: &RunOptions,
    block_size: Option<usize>,
    copts: &mut CompileOptions,
) -> Result<Option<SnapshotFile>, HostError> {
    let snap = match &opts.resume {
        Some(p) => {
            let s = SnapshotFile::read(p)?;
            if let Some(b) = block_size.filter(|b| *b != s.block_size) {
                return Err(HostError::Usage(format!(
                    "--block-size {b} conflicts with snapshot `{}`, taken at block size {}",
                    s.origin(),
                    s.block_size
                )));
            }
            copts.block_size = Some(s.block_size);
            copts.seed = s.seed.or(opts.seed);
            copts.profile = opts.profile.or(Some(s.profile()));
            Some(s)
        }
        None => None,
    };
    Ok(snap)
}

/// Nodes whose worst case may miss the block deadline: an error under live
/// (unless `--force`), else a diagnostic each.
fn check_deadlines(
    plan: &crate::graph::Plan,
    opts: &RunOptions,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let risks = crate::graph::deadline_risks(plan);
    if !risks.is_empty() {
        let lines: Vec<String> = risks.iter().map(|r| r.to_string()).collect();
        if plan.session_profile == crate::profile::Profile::Live && !opts.force {
            return Err(HostError::Usage(format!(
                "live cannot meet its block deadline with this scene:\n  {}\n  help: lower those settings, use a larger --block-size, or pass --force to play anyway",
                lines.join("\n  ")
            )));
        }
        for r in &risks {
            let _ = writeln!(log, "{}", r.diagnostic(&plan.file));
        }
    }
    Ok(())
}

/// The device `run` plays through, with its channel count and its id for
/// the status line.
struct ChosenDevice {
    device: Box<dyn Device>,
    channels: usize,
    id: String,
}

/// Opens `--device`: the clock device, or a cpal device (the scene is
/// compiled again when the device plays another rate).
fn open_device(
    opts: &RunOptions,
    compiled: &mut Compiled,
    log: &mut dyn Write,
) -> Result<ChosenDevice, HostError> {
    let plan = &compiled.plan;
    let clock_device = opts.device.as_deref() == Some(CLOCK_DEVICE);
    let bus = plan.main.len();
    let device_channels_wanted = if bus == 1 { 2 } else { bus };
    let period = opts.period.unwrap_or(plan.block_size);
    if clock_device {
        Ok(ChosenDevice {
            device: Box::new(ClockDevice {
                period,
                sample_rate: plan.sample_rate as f64,
                channels: device_channels_wanted,
            }),
            channels: device_channels_wanted,
            id: CLOCK_DEVICE.to_string(),
        })
    } else {
        open_cpal(opts, compiled, bus, period, log)
    }
}

/// Opens a cpal device for the scene's rate and `bus` channels; when the
/// device plays another rate, the scene is compiled again at that rate.
fn open_cpal(
    opts: &RunOptions,
    compiled: &mut Compiled,
    bus: usize,
    period: usize,
    log: &mut dyn Write,
) -> Result<ChosenDevice, HostError> {
    let Compiled {
        scene, copts, plan, ..
    } = compiled;
    let opened = device::cpal::open(&device::cpal::Request {
        device: opts.device.as_deref(),
        sample_rate: plan.sample_rate,
        bus_channels: bus,
        period,
    })?;
    for w in &opened.warnings {
        let _ = writeln!(log, "warning: {w}");
    }
    if opened.sample_rate != plan.sample_rate {
        let scene_rate = plan.sample_rate;
        copts.sample_rate = Some(opened.sample_rate);
        *plan = compile(scene, copts).map_err(|e| {
            // The scene itself is fine; the device's rate is the problem
            // (resources are not resampled).
            let first = e
                .iter()
                .find(|d| d.is_error())
                .map(|d| d.message.clone())
                .unwrap_or_default();
            HostError::Runtime(format!(
                "the device plays {} Hz, not the scene's {scene_rate} Hz, and the scene cannot run at {} Hz: {first}\n  help: choose a device that supports {scene_rate} Hz (see `morphrt devices`), or render to a file",
                opened.sample_rate, opened.sample_rate
            ))
        })?;
    }
    Ok(ChosenDevice {
        device: Box::new(opened.device),
        channels: opened.channels,
        id: opened.device_id,
    })
}

/// `--duration` in frames at the scene's rate.
fn duration_frames(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Result<Option<u64>, HostError> {
    match &opts.duration {
        Some(d) => Ok(Some(
            d.length(plan.sample_rate, log).map_err(HostError::Usage)?,
        )),
        None => Ok(None),
    }
}

/// Prints the plan's warnings (taken from it), and those about events the
/// duration cuts off.
fn show_warnings(
    opts: &RunOptions,
    plan: &mut crate::graph::Plan,
    frames: Option<u64>,
    log: &mut dyn Write,
) {
    let mut warnings = std::mem::take(&mut plan.warnings);
    if let (Some(f), None) = (frames, &opts.resume) {
        let length = format!(
            "--duration {}",
            opts.duration
                .as_ref()
                .map(TimeArg::text)
                .unwrap_or_default()
        );
        warnings.extend(crate::graph::events_after_end(plan, f, &length));
    }
    if !warnings.is_empty() {
        let _ = writeln!(log, "{}", crate::scene::Shown::new(&warnings));
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

/// The first engine, built from the plan (and resumed from the snapshot),
/// with what the live session keeps of the scene.
struct FirstEngine {
    text: String,
    /// The scene's own `profile`.
    file_profile: Option<Profile>,
    fixed: SessionFixed,
    incoming: Incoming,
    /// The snapshot's clock, when resuming.
    snap_clock: Option<u64>,
}

impl FirstEngine {
    fn new(
        opts: &RunOptions,
        compiled: Compiled,
        log: &mut dyn Write,
    ) -> Result<FirstEngine, HostError> {
        let Compiled {
            text,
            scene,
            plan,
            snap,
            ..
        } = compiled;
        let sr = plan.sample_rate;
        let fixed = SessionFixed::from_plan(&plan, opts.resources.clone());
        let context = match &snap {
            Some(_) => Some(SnapshotContext::new(&plan, &text)?),
            None => None,
        };
        let mut incoming = Incoming::from_plan(plan, scene.profile, Vec::new());
        if let (Some(s), Some(cx)) = (&snap, &context) {
            let resumed = cx.resume(s, &mut incoming.engine)?;
            for m in &resumed.messages {
                let _ = writeln!(log, "{m}");
            }
            let _ = writeln!(
                log,
                "resuming `{}` at {:.3}s: {} of {} nodes carried",
                s.origin(),
                resumed.clock as f64 / sr as f64,
                resumed.migration.carried,
                s.nodes.len()
            );
        }
        Ok(FirstEngine {
            text,
            file_profile: scene.profile,
            fixed,
            incoming,
            snap_clock: snap.as_ref().map(|s| s.clock),
        })
    }
}

/// Starts the tap of `--capture`: the writer, and the tap for the player.
fn start_tap(
    output: Option<Output>,
    channels: usize,
    sr: u32,
) -> Result<Option<(TapWriter, Tap)>, HostError> {
    let tap = match output {
        Some(output) => Some(TapWriter::start_at(output, channels as u16, sr, 4.0)?),
        None => None,
    };
    Ok(tap)
}

impl LiveControl {
    /// Starts what drives `session` from the control thread: the file
    /// watcher, the journal (`snap_clock`: where a resumed session
    /// started) and the keys.
    fn start(
        opts: &RunOptions,
        session: LiveSession,
        controls: Arc<Controls>,
        (journal_output, inputs): (Option<Output>, &Inputs),
        channels: usize,
        snap_clock: Option<u64>,
        log: &mut dyn Write,
    ) -> Result<LiveControl, HostError> {
        let watched = session.watched_files();
        let watcher = start_watcher(opts, &watched, log);
        let journal = match journal_output {
            Some(output) => {
                match start_journal(output, inputs, opts, &session, channels, snap_clock) {
                    Ok(j) => Some(j),
                    Err(e) if opts.journal.is_some() => return Err(e.into()),
                    Err(e) => {
                        let _ = writeln!(log, "warning: {e}; this session is not journaled");
                        None
                    }
                }
            }
            None => None,
        };
        let snapshot_stem = snapshot_stem(opts, journal.as_ref());
        let (keys, commands) = KeyListener::start(controls.clone());
        Ok(LiveControl {
            session,
            journal,
            journaled: (0, 0, 0),
            snapshot_stem,
            watcher,
            commands: Some(commands),
            controls,
            scene: opts.scene.clone(),
            watched,
            node_times: Vec::new(),
            _keys: keys,
        })
    }

    /// After playback: journals what the audio thread sent back (engines are
    /// dropped here), then the stop and the end.
    fn end(&mut self, meters: &Meters, fade: u64, log: &mut dyn Write) {
        self.session.tick(log);
        self.journal_news(log);
        if let Some(j) = &mut self.journal {
            let stop = meters.stop_at.load(Ordering::Relaxed);
            let mut end = vec![Record::End {
                frames: meters.frames.load(Ordering::Relaxed),
            }];
            if stop != u64::MAX {
                end.insert(0, Record::Stop { at: stop, fade });
            }
            for r in &end {
                if let Err(e) = j.write(r) {
                    let _ = writeln!(log, "warning: {e}");
                }
            }
            let _ = writeln!(
                log,
                "journal: {} (replay it with `morphrt replay`)",
                j.path().display()
            );
        }
    }
}

/// Watches the scene and its resources, unless `--no-watch`; a watcher that
/// cannot start is a warning.
fn start_watcher(
    opts: &RunOptions,
    watched: &[PathBuf],
    log: &mut dyn Write,
) -> Option<FileWatcher> {
    if !opts.no_watch {
        match FileWatcher::start(watched, Duration::from_millis(opts.debounce_ms)) {
            Ok(w) => Some(w),
            Err(e) => {
                let _ = writeln!(
                    log,
                    "warning: cannot watch the scene ({e}); edits will not be applied"
                );
                None
            }
        }
    } else {
        None
    }
}

/// What snapshot files (`w`) are named after: the journal's name, else the
/// scene's.
fn snapshot_stem(opts: &RunOptions, journal: Option<&Journal>) -> PathBuf {
    match journal {
        Some(j) => j.path().with_extension(""),
        None => PathBuf::from(
            opts.scene
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "scene".to_string()),
        ),
    }
}

/// The control loop's settings: a live status line on a terminal, else a
/// log line every 5 s.
fn loop_config(tty: bool, label: String, block: usize) -> LoopConfig {
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
        label,
        fifo_latency: block,
    }
}

/// `playing scene.json (repro), watching for edits — keys: …`
fn say_playing(opts: &RunOptions, profile: Profile, tty: bool, log: &mut dyn Write) {
    let _ = writeln!(
        log,
        "playing {} ({profile}){} — {}",
        opts.scene.display(),
        if !opts.no_watch {
            ", watching for edits"
        } else {
            ""
        },
        if tty {
            "keys: s/r/l switch profile, q quits"
        } else {
            "commands on stdin, one per line: s, r, l, q"
        }
    );
}

/// The lines after a run that played to its end: what played, the most
/// expensive nodes, and what the tap recorded.
fn summary(
    opts: &RunOptions,
    r: &RunReport,
    sr: u32,
    control: &LiveControl,
    meters: &Meters,
    tap_report: Option<TapReport>,
    log: &mut dyn Write,
) {
    let panics =
        meters.node_panics.load(Ordering::Relaxed) + meters.callback_panics.load(Ordering::Relaxed);
    let _ = writeln!(
        log,
        "played {} frames ({:.2}s); edits applied {}, rejected {}; xruns {}; DSP load mean {:.1}%, p99 {:.1}%, max {:.1}%{}{}",
        r.frames,
        r.frames as f64 / sr as f64,
        control.session.applied.len(),
        control.session.rejected.len(),
        r.xruns,
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
    if let Some(line) = top_nodes_line(&control.node_times, 3) {
        let swapped = meters.swaps.load(Ordering::Relaxed) > 0;
        let _ = writeln!(
            log,
            "{line}{}",
            if swapped {
                " (since the last swap)"
            } else {
                ""
            }
        );
    }
    if let (Some(rep), Some(path)) = (tap_report, &opts.capture) {
        let _ = writeln!(
            log,
            "captured {} frames to {}{}",
            rep.frames,
            path.display(),
            if rep.dropped_samples > 0 {
                format!(
                    " ({} samples lost: the disk could not keep up)",
                    rep.dropped_samples
                )
            } else {
                String::new()
            }
        );
    }
}

/// The block size stored by `morphrt calibrate` for this scene (text and
/// resources), sample rate and machine, saying where it came from; `None`
/// (with a hint) when there is none. Never measures: calibrating takes
/// seconds the user did not ask for.
fn calibrated_block_size(
    text: &str,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Option<usize> {
    let found = (|| {
        let path = calibration::store_path()
            .ok_or_else(|| "no cache directory on this system".to_string())?;
        let sha = machine::scene_sha256(text.as_bytes(), &plan.resources)?;
        calibration::lookup(&path, &MachineKey::current(), &sha, plan.sample_rate)
            .map(|c| c.map(|c| (c, path)))
            .map_err(|e| e.to_string())
    })();
    match found {
        Ok(Some((c, path))) => {
            let _ = writeln!(
                log,
                "block size {} (auto: calibrated for this scene and machine, {})",
                c.block_size,
                path.display()
            );
            Some(c.block_size)
        }
        Ok(None) => {
            let _ = writeln!(
                log,
                "block size {} (auto: no calibration for this scene on this machine; `morphrt calibrate {}` measures one)",
                plan.block_size,
                plan.file
            );
            None
        }
        Err(e) => {
            let _ = writeln!(
                log,
                "warning: block size {} (auto: cannot read calibrations: {e})",
                plan.block_size
            );
            None
        }
    }
}

/// `nodes by time: lp (biquad) 61.2 % (12.0 ns/sample), …`: the `k`
/// most expensive nodes of the engine that played last; `None` when nothing
/// was timed.
pub fn top_nodes_line(table: &[crate::engine::NodeTime], k: usize) -> Option<String> {
    if table.iter().all(|t| t.ns == 0) {
        return None;
    }
    let parts: Vec<String> = table
        .iter()
        .take(k)
        .map(|t| {
            format!(
                "{} ({}) {:.1} % ({:.1} ns/sample)",
                t.id,
                t.op,
                t.share * 100.0,
                t.ns_per_sample
            )
        })
        .collect();
    Some(format!("nodes by time: {}", parts.join(", ")))
}

/// What a session reads, and its capture and journal, checked against it
/// and against each other.
struct SessionFiles {
    inputs: Inputs,
    capture: Option<Output>,
    journal: Option<Output>,
}

/// Checks the capture and the journal of `run` under the output rules: no
/// capture or journal over an input, nor over each other. A journal given
/// with `--journal` that cannot be written is an error; the default one is
/// a warning, and the session goes unjournaled.
fn session_files(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Result<SessionFiles, HostError> {
    let mut inputs = Inputs::default();
    inputs.add("the scene", &opts.scene);
    for (reference, path) in &plan.resources {
        inputs.add(&format!("resource `{reference}`, read from"), path);
    }
    if let Some(p) = &opts.resume {
        inputs.add("the snapshot resumed from", p);
    }
    let capture = match &opts.capture {
        Some(path) => Some(Output::prepare(path, &inputs, 0, &Kind::CAPTURE)?),
        None => None,
    };
    if opts.no_journal {
        return Ok(SessionFiles {
            inputs,
            capture,
            journal: None,
        });
    }
    let path = opts
        .journal
        .clone()
        .or_else(|| journal::default_path(&opts.scene));
    let checked = path.map(|p| {
        let o = journal::prepare(&p, &inputs)?;
        if let Some(c) = &capture {
            check_side_output(&p, &Kind::JOURNAL, &inputs, c, "the capture")?;
        }
        Ok::<_, FileError>(o)
    });
    let journal = match checked {
        Some(Ok(o)) => Some(o),
        Some(Err(e)) if opts.journal.is_some() => return Err(e.into()),
        Some(Err(e)) => {
            let _ = writeln!(log, "warning: {e}; this session is not journaled");
            None
        }
        None => {
            let _ = writeln!(
                log,
                "warning: no data directory for journals on this system; use --journal FILE"
            );
            None
        }
    };
    Ok(SessionFiles {
        inputs,
        capture,
        journal,
    })
}

/// Opens the journal at its checked output and writes the session's
/// header and first scene.
fn start_journal(
    output: Output,
    inputs: &Inputs,
    opts: &RunOptions,
    session: &LiveSession,
    channels: usize,
    resumed_at: Option<u64>,
) -> Result<Journal, FileError> {
    let mut j = Journal::create(output, inputs)?;
    let (cpu, cpu_level) = machine::cpu_info();
    let fixed = session.fixed();
    j.write(&Record::Header {
        format: journal::FORMAT.to_string(),
        version: journal::VERSION,
        morphrt: env!("CARGO_PKG_VERSION").to_string(),
        build: machine::build_id(),
        cpu,
        cpu_level,
        scene: opts.scene.display().to_string(),
        block_size: fixed.block_size,
        sample_rate: fixed.sample_rate,
        seed: fixed.seed,
        profile: session.profile(),
        channels,
        period: opts.period,
        resource_dirs: fixed
            .resource_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
    })?;
    let resources = j.resources(session.resources())?;
    j.write(&Record::Scene {
        text: session.text().to_string(),
        resources,
    })?;
    if let (Some(clock), Some(file)) = (resumed_at, &opts.resume) {
        let kept = j.resources(&[("snapshot".to_string(), file.clone())])?;
        j.write(&Record::Resume {
            snapshot: kept.into_iter().next().expect("one record per file"),
            clock,
        })?;
    }
    Ok(j)
}
