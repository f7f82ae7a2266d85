//! Offline rendering: exactly N frames of the main bus into a WAV file,
//! with an optional SHA-256 of the samples at engine precision, levels
//! (peak, clipping, DC offset), snapshots written at chosen samples, and
//! renders that resume from a snapshot.
//!
//! A render never costs the user data: its output is checked before the
//! first block ([`crate::host::files::rules`]), written under a temporary
//! name or streamed ([`crate::host::files::write`]), cleaned up on every
//! failure and on SIGINT/SIGTERM ([`crate::host::files::signals`]), and
//! its header is RF64 when the file passes 4 GiB ([`crate::host::files::wav`]).

use super::input::{open_input, protect, InputState, RenderInput, Tail, TAIL_MAX_S};
use super::levels::Levels;
use super::midi::{open_midi, protect_midi, RenderMidi};
use super::wav_out::{Body, BodyError, Encoder, Framer};
use crate::engine::{run_blocks, try_run_blocks_fed, ControlFeed};
use crate::engine::{BusRef, Engine};
use crate::graph::{compile, CompileOptions, Plan};
use crate::host::files::digest::hex;
use crate::host::files::rules::{check_side_output, Inputs, Kind, Output};
use crate::host::files::signals::{signal_name, InterruptGuard};
use crate::host::files::wav::{WavFormat, WavLayout};
use crate::host::files::write::Sink;
use crate::host::record::snapshot::{numbered_path, SnapshotContext, SnapshotFile, Written};
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::TimeArg;
use crate::scene::{self, Diagnostic};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest render, in seconds of audio: the one duration limit
/// ([`scene::MAX_DURATION_S`]) for `-d`, the scene's `duration`, `run
/// --duration` and a resumed render.
pub const MAX_RENDER_S: u64 = scene::MAX_DURATION_S;

/// What a render did.
#[derive(Clone, Debug)]
pub struct RenderReport {
    pub frames: u64,
    pub channels: usize,
    /// Lower-case hex SHA-256 of the interleaved LE main-bus samples.
    pub hash: String,
    pub elapsed: Duration,
    /// Peak, clipping and DC offset of what was written.
    pub levels: Levels,
}

impl RenderReport {
    /// Seconds of audio rendered per second of wall time.
    pub fn speed(&self, sample_rate: u32) -> f64 {
        self.frames as f64 / sample_rate as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Adds one block of the bus to the hash (interleaved LE bytes at bus precision).
fn hash_block(hasher: &mut Sha256, bytes: &mut Vec<u8>, bus: BusRef<'_>) {
    bytes.clear();
    bus.write_le_interleaved(bytes);
    hasher.update(&bytes[..]);
}

/// Renders and hashes without writing a file.
pub fn render_hash(engine: &mut Engine, frames: u64) -> String {
    let mut hasher = Sha256::new();
    let mut bytes = Vec::new();
    run_blocks(
        engine,
        frames,
        |bus| hash_block(&mut hasher, &mut bytes, bus),
        |_| {},
    );
    hex(&hasher.finalize())
}

/// Renders `frames` into a WAV file at `path` under the output rules
/// ([`crate::host::files::rules`], no inputs to protect): written under a temporary name and
/// renamed into place when complete, streamed to a FIFO or device, so a
/// failed render never leaves a truncated file or destroys an existing one.
/// Installs no signal handlers; [`render`] does.
pub fn render_to_wav(
    engine: &mut Engine,
    path: &Path,
    frames: u64,
    format: WavFormat,
    show_progress: bool,
) -> Result<RenderReport, HostError> {
    let layout = wav_layout(engine.channels(), engine.sample_rate(), format, frames)?;
    let needed = layout.file_len().unwrap_or(u64::MAX);
    let output = Output::prepare(path, &Inputs::default(), needed, &Kind::RENDER)?;
    let what = output.describe();
    let mut stdout = std::io::stdout();
    let sink = output.start(&mut stdout)?;
    write_wav(
        engine,
        sink,
        &what,
        &layout,
        &WriteOptions {
            progress: show_progress,
            stops: &[],
            interrupt: None,
            input: None,
            tail: None,
        },
        None,
        |_| Ok(()),
    )
    .map(|(report, _)| report)
}

/// The WAV's shape, refused when it cannot be written at all.
fn wav_layout(
    channels: usize,
    sample_rate: u32,
    format: WavFormat,
    frames: u64,
) -> Result<WavLayout, HostError> {
    let layout = WavLayout {
        channels: u16::try_from(channels)
            .map_err(|_| HostError::Usage(format!("{channels} channels do not fit a WAV file")))?,
        sample_rate,
        format,
        frames,
    };
    if layout.file_len().is_none() {
        return Err(HostError::Usage(format!(
            "{frames} frames of {channels} channels do not fit any WAV file"
        )));
    }
    Ok(layout)
}

/// How [`write_wav`] runs.
struct WriteOptions<'a> {
    /// Show progress on stderr when it is a terminal.
    progress: bool,
    /// Samples at which to call `at_stop`.
    stops: &'a [u64],
    /// Stop (and clean up) when this caught a signal.
    interrupt: Option<&'a InterruptGuard>,
    /// The input the engine reads, checked after every block.
    input: Option<&'a RenderInput>,
    /// The render ends with the scene's tail after the input: `layout`'s
    /// length is then only the least it writes, and it runs at most `limit`.
    tail: Option<(Tail, u64)>,
}

/// Why a render stopped early.
enum Abort {
    /// The output (or the spool) failed.
    Write(BodyError),
    /// Writing a snapshot failed.
    Snapshot(HostError),
    /// The input failed part-way (cut short, unreadable).
    Input(HostError),
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(i32),
    /// The tail ended: the render is complete.
    Done,
}

/// Writes the header and the frames from the engine to `sink` (exactly
/// `layout.frames`, or with a tail until it ends), finishing it (rename
/// into place, flush) only when all went well; otherwise the sink is
/// dropped, which removes a temporary file.
fn write_wav(
    engine: &mut Engine,
    sink: Sink<'_>,
    what: &str,
    layout: &WavLayout,
    opts: &WriteOptions<'_>,
    feed: Option<&mut ControlFeed>,
    mut at_stop: impl FnMut(&Engine) -> Result<(), HostError>,
) -> Result<(RenderReport, Option<Tail>), HostError> {
    let aftermath = sink.aftermath();
    let (tail, frames) = match &opts.tail {
        Some((t, limit)) => (Some(t.clone()), *limit),
        None => (None, layout.frames),
    };
    let mut body = Body::open(sink, layout, tail.is_none())?;
    let f32_bus = matches!(engine.bus(), BusRef::F32(..));
    let mut enc = Encoder::new(engine.channels(), layout.format, f32_bus);
    let mut framer = Framer::new(engine.clock(), engine.channels(), tail);
    let mut progress = crate::host::term::Progress::new(layout.frames.max(1), opts.progress);
    let sr = engine.sample_rate() as f64;
    let first = engine.clock();
    let start = Instant::now();
    let caught = || opts.interrupt.and_then(InterruptGuard::caught);
    let mut result = try_run_blocks_fed(
        engine,
        frames,
        opts.stops,
        feed,
        |e| {
            at_stop(e).map_err(|e| match e {
                // A signal while the snapshot was written stops the render as one between blocks.
                HostError::Interrupted { signal, .. } => Abort::Signal(signal),
                e => Abort::Snapshot(e),
            })
        },
        |bus| {
            if let Some(signal) = caught() {
                return Err(Abort::Signal(signal));
            }
            input_after_block(opts.input, &mut framer)?;
            let done = framer.block(bus, &mut enc);
            body.write(enc.take()).map_err(Abort::Write)?;
            enc.clear();
            if done {
                Err(Abort::Done)
            } else {
                Ok(())
            }
        },
        |done| progress.update(done.min(layout.frames)),
    );
    if matches!(result, Err(Abort::Done)) {
        result = Ok(());
    } else if result.is_ok() && opts.tail.is_some() {
        result = input_within_limit(opts.input, frames, engine.sample_rate());
    }
    if result.is_ok() {
        // A signal during the last block still stops the render: the user
        // asked for no file.
        if let Some(signal) = caught() {
            result = Err(Abort::Signal(signal));
        }
    }
    let elapsed = start.elapsed();
    progress.finish();
    if let Err(stop) = result {
        // Dropping the body removes a temporary file; the buffered tail is
        // not written anywhere.
        let elapsed_s = (engine.clock() - first) as f64 / sr;
        let of_s = layout.frames as f64 / sr;
        return Err(abort_error(stop, body, what, aftermath, elapsed_s, of_s));
    }
    let final_layout = WavLayout {
        frames: enc.frames,
        ..*layout
    };
    body.complete(&final_layout)?.finish()?;
    let report = RenderReport {
        frames: enc.frames,
        channels: engine.channels(),
        elapsed,
        levels: enc.levels.clone(),
        hash: enc.hash(),
    };
    Ok((report, framer.into_tail()))
}

/// After a block: a failed input stops the render; an ended one starts the tail.
fn input_after_block(input: Option<&RenderInput>, framer: &mut Framer) -> Result<(), Abort> {
    let Some(input) = input else {
        return Ok(());
    };
    if let InputState::Ended(n) = input.state().map_err(Abort::Input)? {
        if let Some(t) = framer.tail_mut() {
            t.input_ended(n);
        }
    }
    Ok(())
}

/// A render that reached its limit with its input still going was given
/// an input longer than a render may be.
fn input_within_limit(input: Option<&RenderInput>, limit: u64, sr: u32) -> Result<(), Abort> {
    match input.map(RenderInput::state) {
        Some(Ok(InputState::Reading)) => Err(Abort::Input(over_limit(
            format!(
                "the input ({} frames read so far, {:.3}s)",
                limit,
                limit as f64 / sr as f64
            ),
            sr,
        ))),
        _ => Ok(()),
    }
}

/// The error a stopped render reports, saying what became of the output.
fn abort_error(
    stop: Abort,
    body: Body<'_>,
    what: &str,
    aftermath: &str,
    at_s: f64,
    of_s: f64,
) -> HostError {
    let with_aftermath = |e: HostError| {
        let message = format!("{}{aftermath}", e.message());
        if e.exit_code() == 2 {
            HostError::Usage(message)
        } else {
            HostError::Runtime(message)
        }
    };
    match stop {
        Abort::Write(e) => body.error(e),
        Abort::Snapshot(e) | Abort::Input(e) => with_aftermath(e),
        Abort::Signal(signal) => HostError::Interrupted {
            signal,
            message: format!(
                "interrupted by {} at {at_s:.2}s of {of_s:.2}s; stopped writing {what}{aftermath}",
                signal_name(signal),
            ),
        },
        Abort::Done => unreachable!("a completed render is no failure"),
    }
}

/// What `morphrt render` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct RenderOptions {
    /// The scene file (JSON); `-` reads it from standard input.
    ///
    /// A scene from standard input resolves its resources from the current
    /// directory. The scene and every resource it reads must be regular
    /// files: a FIFO, a device, a directory or a socket is refused up
    /// front, naming the path and what it is (exit 2).
    pub scene: PathBuf,
    /// Output WAV file (replaced only when the render completes), a FIFO
    /// or device (streamed), or `-` for standard output. Never a file
    /// the render reads.
    ///
    /// The output is named as a WAV: it must end in `.wav` or `.wave` (any
    /// case), be `-`, or be an existing FIFO or device; `-o x.mp3` or a
    /// name without an extension is refused up front (exit 2) with the
    /// `.wav` name to use. `-o -` is refused when standard output is a
    /// terminal. The output rules (see the command's description) are
    /// checked before anything renders.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Session profile: strict, repro or live (default: the snapshot's when
    /// resuming, else the scene's, else repro).
    #[arg(long, value_parser = Profile::parse_arg)]
    pub profile: Option<Profile>,
    /// Length, e.g. 10s, 250ms, 4800samples, 8bars (at the scene's tempo); at most 24 hours (default: the
    /// scene's duration, else 10s; when resuming, what remains of it).
    ///
    /// The render writes exactly this much (e.g. `10s`, `250ms`, `1m30s`,
    /// `4800samples`). Without it: the scene's `duration`, else 10 s; with
    /// `--input`, the input's length plus the scene's tail; with `--midi`
    /// (and no `duration`), the file's last event plus the tail. A length
    /// that rounds to no sample is refused, saying so. One limit holds for
    /// `-d`, the scene's `duration`, `run --duration` and a resumed render:
    /// 24 hours, refused up front (exit 2) with the limit in the message.
    #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
    pub duration: Option<TimeArg>,
    /// Sample format of the WAV file.
    ///
    /// Integer formats scale by 2^(b−1)−1, round half to even and clamp (no
    /// dither). The header carries the final sizes from the start; past
    /// 4 GiB it is RF64 (a `ds64` chunk with 64-bit sizes).
    #[arg(long, value_enum, default_value = "f32")]
    pub format: WavFormat,
    /// Replace the scene's seed (when resuming it must agree with the snapshot's).
    ///
    /// An unsigned integer 0 … 18446744073709551615; a value outside that
    /// range says so.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::scene::seed_arg)]
    pub seed: Option<u64>,
    /// Block size in frames (default: the scene's, else the profile's; when
    /// resuming it must agree with the snapshot's).
    #[arg(long = "block-size")]
    pub block_size: Option<usize>,
    /// Print the SHA-256 of the main-bus samples at engine precision.
    ///
    /// The hash is of the interleaved little-endian main-bus samples at
    /// engine precision, so a strict hash is the same at every block size.
    /// With `-o -` it goes to stderr.
    #[arg(long)]
    pub hash: bool,
    /// Print a JSON summary: frames, duration, hash, peak, clipped
    /// samples, per-channel levels, time and real-time factor.
    ///
    /// One JSON object on stdout: `frames`, `duration_s`, `hash`, `peak`,
    /// `peak_dbfs`, `clipped`, `per_channel` (`peak`, `peak_dbfs`,
    /// `clipped`, `dc_offset`), `time_s` and `rtf` (wall time / audio time;
    /// below 1 is faster than real time), with `format`, `rf64`, `bytes`,
    /// `profile` and `block_size`; stdout then holds only that object (no
    /// `--hash` line). With `-o -` it goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// Write the engine state at this time on the scene's timeline
    /// (repeatable; absolute, also when resuming), e.g. 5s or 240000samples.
    #[arg(
        allow_hyphen_values = true,
        long = "snapshot-at",
        requires = "snapshot_out"
    )]
    pub snapshot_at: Vec<TimeArg>,
    /// The snapshot file; with several times, the sample index goes
    /// before the extension (snap.240000.json).
    #[arg(long = "snapshot-out", requires = "snapshot_at")]
    pub snapshot_out: Option<PathBuf>,
    /// Continue from a snapshot: the WAV holds only the continuation,
    /// -d long (default: the rest of the scene's duration).
    ///
    /// The continuation is bit for bit what the uninterrupted render
    /// writes. A snapshot of an edited scene carries by node id and
    /// operator, naming every node that starts fresh. The snapshot must be
    /// a regular file, and the output may not be it.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// The audio input the scene's `input` nodes read: a WAV file, or `-`
    /// for standard input. The render is then, unless -d says otherwise,
    /// the input's length plus the scene's tail. Given once.
    ///
    /// Integer (8/16/24/32-bit) and float WAVs of any channel count are
    /// read; the file's rate must be the scene's (the error names both, and
    /// the fix). The tail: the render goes on until the main bus stays
    /// below −100 dBFS for 100 ms (at most 60 s more), so a dry chain adds
    /// nothing and a reverb's tail is kept; the summary says which length
    /// was used (`length: input 3.000 s + tail 1.996 s`, or `length: -d
    /// 5s`).
    ///
    /// `--input -` reads the WAV from standard input, also one whose header
    /// records no length (data size 0 or `0xFFFFFFFF`, as a program writing
    /// to a pipe leaves it), so renders chain: `morphrt render
    /// scenes/drone.json -o - -d 3s | morphrt render scenes/input-hall.json
    /// --input - -o wet.wav`. With a tail the header's sizes are known only
    /// at the end: a file output is written as always (nothing until it is
    /// complete), while `-o -` gets the whole WAV when the render ends (it
    /// waits in an unlinked file in `TMPDIR`; `-d` streams as it renders).
    ///
    /// A bad input — not a WAV, cut short (also standard input part-way),
    /// no frames, a directory or a FIFO (refused unopened), another rate,
    /// too few channels, `--input` given twice — exits 2 naming the file,
    /// and no output file is left (to `-o -` with `-d`, what streamed
    /// before a failure part-way has gone out). A scene with `input` nodes
    /// rendered without `--input` is refused; `--input` for a scene without
    /// them is a warning.
    #[arg(long = "input", value_name = "FILE.wav")]
    pub input: Vec<PathBuf>,
    /// A standard MIDI file (format 0 or 1) played into the scene's MIDI
    /// `controls`, each message at its exact sample. The render is then,
    /// unless -d or the scene's duration says otherwise, the file's last
    /// event plus the scene's tail. Given once.
    ///
    /// Every message lands on its exact sample: the tempo map, or SMPTE
    /// timecode, is converted in integer arithmetic to the nearest sample,
    /// halves up; all tracks are merged by time, ties in track order. It
    /// goes through the same mapping `run --midi` uses, so a strict render
    /// is the same bits at any block size. Notes on a channel a `"module"`
    /// control listens on play that voice module (CC 64 as its sustain
    /// pedal). Without `-d` or the scene's `duration` the render runs to
    /// the file's last event (its End of Track) and then the tail, as after
    /// `--input`. The summary counts the messages mapped and those no
    /// control listens to.
    ///
    /// A missing file, a directory or device, one that is not a MIDI file
    /// (the error says what it starts with), a format 2 file, `--midi`
    /// given twice, or a scene with no MIDI control (nothing would move)
    /// exits 2, leaving no output.
    #[arg(long = "midi", value_name = "FILE.mid")]
    pub midi: Vec<PathBuf>,
}

/// The render limit in samples at `sr`.
fn max_frames(sr: u32) -> u64 {
    scene::max_duration_samples(sr)
}

/// The error for a length over [`MAX_RENDER_S`]; `what` says whose.
fn over_limit(what: String, sr: u32) -> HostError {
    HostError::Usage(format!(
        "{what} is longer than {}; render it in parts (--snapshot-at, --resume)",
        scene::duration_limit_text(sr)
    ))
}

/// The scene from standard input (`render -`): resources resolve from the
/// current directory.
fn read_stdin_scene() -> Result<(String, scene::Scene), HostError> {
    const FILE: &str = "<stdin>";
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).map_err(|e| {
        HostError::Input(vec![Diagnostic::error(
            FILE,
            None,
            format!("cannot read the scene from standard input: {e}"),
        )])
    })?;
    let scene = scene::load_str(&text, FILE, Some(PathBuf::from("."))).map_err(HostError::Input)?;
    Ok((text, scene))
}

/// `morphrt render`: compiles the scene (at the snapshot's block size and
/// seed when resuming), opens and checks the input, checks the output
/// before anything renders, carries the snapshot's state into the engine,
/// renders to the WAV, writing snapshots on the way, and reports on `log`
/// (the hash and the JSON summary go to `out`, or to `log` when `out`
/// carries the WAV).
pub fn render(
    opts: &RenderOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let from_stdin = opts.scene.as_os_str() == "-";
    let (text, scene) = if from_stdin {
        read_stdin_scene()?
    } else {
        crate::host::read_scene(&opts.scene)?
    };
    let snap = opts.resume.as_deref().map(SnapshotFile::read).transpose()?;
    let mut plan = compile_for_render(opts, &scene, snap.as_ref(), log)?;
    let input = open_input(&opts.input, &plan, from_stdin, log)?;
    let sr = plan.sample_rate;
    let start = snap.as_ref().map_or(0, |s| s.clock);
    let midi = open_midi(&opts.midi, &plan, start)?;
    let midi_end = midi.as_ref().map(|m| m.end);
    let length = render_length(opts, &plan, snap.as_ref(), input.as_ref(), midi_end, log)?;
    let warnings = warn_before_render(opts, &mut plan, start, &length, log);
    let stops = snapshot_stops(opts, sr, start, length.most(sr), log)?;
    let several = stops.len() > 1;

    // Everything read, and where everything goes, is known: check the
    // output now, before any block renders.
    let mut inputs = render_inputs(opts, &plan, from_stdin);
    protect(&mut inputs, &opts.input);
    protect_midi(&mut inputs, &opts.midi);
    let layout = wav_layout(plan.main.len(), sr, opts.format, length.least())?;
    let output = prepare_outputs(opts, &layout, &inputs, &stops, several)?;

    let context = if stops.is_empty() && snap.is_none() {
        None
    } else {
        Some(SnapshotContext::new(&plan, &text)?)
    };
    let latency = plan.latency;
    let mut engine = Engine::new(plan);
    if let (Some(s), Some(cx)) = (&snap, &context) {
        resume_from(s, cx, &mut engine, log)?;
    }
    if let Some(i) = &input {
        engine.set_input_feed(i.feed());
    }
    let mut written = Vec::new();
    let mut feed = midi
        .as_ref()
        .map(|m| ControlFeed::with_notes(m.changes.clone(), m.notes.clone()));
    let mut tail = length.tail(start, latency, sr);
    if let (None, Some((t, _)), Length::Tail { input: Some(n), .. }) = (&input, &mut tail, length) {
        // The MIDI file's end is known before the render: the tail starts there.
        t.input_ended(n);
    }
    let to_stdout = output.is_stdout();
    let what = output.describe();
    // Installed after a FIFO was opened (that open may wait for a reader,
    // and Ctrl-C there should simply end the process) and before the
    // temporary file exists.
    let guard = InterruptGuard::install();
    let mut no_stdout = std::io::sink();
    let sink = output.start(if to_stdout { &mut *out } else { &mut no_stdout })?;
    let (report, tail) = write_wav(
        &mut engine,
        sink,
        &what,
        &layout,
        &WriteOptions {
            progress: true,
            stops: &stops,
            interrupt: Some(&guard),
            input: input.as_ref(),
            tail,
        },
        feed.as_mut(),
        snapshot_writer(context.as_ref(), opts, several, &inputs, &mut written),
    )?;
    drop(guard);
    let layout = WavLayout {
        frames: report.frames,
        ..layout
    };
    let length_text = match (&input, &midi) {
        // The input's line gives the length; the MIDI file's lines say
        // what it played.
        (Some(i), Some(m)) => Some(format!(
            "{}\n{}",
            length_line(opts, i, tail.as_ref(), &report, sr),
            midi_lines(m, feed.as_ref(), None, &report, sr)
        )),
        (Some(i), None) => Some(length_line(opts, i, tail.as_ref(), &report, sr)),
        (None, Some(m)) => Some(midi_lines(m, feed.as_ref(), tail.as_ref(), &report, sr)),
        (None, None) => None,
    };
    report_snapshots(&written, &stops, sr, log);
    report_render(
        &engine,
        &report,
        &layout,
        start,
        &what,
        length_text.as_deref(),
        log,
    );
    let json = opts.json.then(|| {
        let mut summary = json_summary(opts, &engine, &report, &layout, start, &warnings);
        if let (Some(i), Some(m)) = (&input, summary.as_object_mut()) {
            m.insert("input".into(), input_json(i, tail.as_ref(), &report, sr));
        }
        if let (Some(midi), Some(m)) = (&midi, summary.as_object_mut()) {
            m.insert("midi".into(), midi.json(sr));
        }
        serde_json::to_string_pretty(&summary).expect("json")
    });
    let asked = json.or_else(|| opts.hash.then(|| report.hash.clone()));
    if let Some(text) = asked {
        // Standard output carries the WAV with `-o -`: the hash and the
        // summary go to the log then, or straight to stderr under `-q`,
        // where the log keeps only errors but what was asked for still prints.
        let _ = match (to_stdout, crate::host::term::quiet()) {
            (false, _) => writeln!(out, "{text}"),
            (true, false) => writeln!(log, "{text}"),
            (true, true) => writeln!(std::io::stderr(), "{text}"),
        };
    }
    Ok(())
}

/// Writes a snapshot at each stop (`--snapshot-at`), noting what it wrote.
fn snapshot_writer<'a>(
    context: Option<&'a SnapshotContext>,
    opts: &'a RenderOptions,
    several: bool,
    inputs: &'a Inputs,
    written: &'a mut Vec<(u64, Written, Duration)>,
) -> impl FnMut(&Engine) -> Result<(), HostError> + 'a {
    move |e| {
        let (Some(cx), Some(base)) = (context, &opts.snapshot_out) else {
            return Ok(());
        };
        let path = numbered_path(base, e.clock(), several);
        let captured = Instant::now();
        let st = e.snapshot();
        let capture = captured.elapsed();
        let w = cx.write(&st, &path, inputs)?;
        written.push((e.clock(), w, capture));
        Ok(())
    }
}

/// Checks the WAV output and every snapshot's before anything renders.
fn prepare_outputs(
    opts: &RenderOptions,
    layout: &WavLayout,
    inputs: &Inputs,
    stops: &[u64],
    several: bool,
) -> Result<Output, HostError> {
    let output = Output::prepare(
        &opts.output,
        inputs,
        layout.file_len().unwrap_or(u64::MAX),
        &Kind::RENDER,
    )?;
    if let Some(base) = &opts.snapshot_out {
        for at in stops {
            let path = numbered_path(base, *at, several);
            check_side_output(&path, &Kind::SNAPSHOT, inputs, &output, "the WAV output")?;
        }
    }
    Ok(output)
}

/// The summary's length line for a render with input: which length was
/// used (`-d`, or the input's and the tail's).
fn length_line(
    opts: &RenderOptions,
    input: &RenderInput,
    tail: Option<&Tail>,
    report: &RenderReport,
    sr: u32,
) -> String {
    let s = |n: u64| n as f64 / sr as f64;
    let from = format!(
        "input from {} ({} ch, {})",
        input.shown,
        input.channels,
        input.format.describe()
    );
    match (tail, &opts.duration) {
        (Some(t), _) => {
            let (i, after) = t.split(report.frames);
            format!(
                "{from}; length: input {:.3} s + tail {:.3} s",
                s(i),
                s(after)
            )
        }
        (None, Some(d)) => format!("{from}; length: -d {}", d.text()),
        (None, None) => format!("{from}; length: the scene's duration"),
    }
}

/// The summary's MIDI lines: what was mapped, what could not land, and
/// the length (`-d`, the scene's duration, or the last event and the tail).
fn midi_lines(
    midi: &RenderMidi,
    feed: Option<&ControlFeed>,
    tail: Option<&Tail>,
    report: &RenderReport,
    sr: u32,
) -> String {
    let mut lines = midi.error_lines();
    let lost = feed.map_or(&[][..], ControlFeed::errors);
    for (at, e) in lost.iter().take(5) {
        lines.push(format!(
            "warning: a MIDI change at sample {at} did not land: {e}"
        ));
    }
    if lost.len() > 5 {
        lines.push(format!(
            "warning: {} more MIDI changes did not land",
            lost.len() - 5
        ));
    }
    let s = |n: u64| n as f64 / sr as f64;
    if let Some(n) = feed.map(ControlFeed::pending).filter(|n| *n > 0) {
        lines.push(format!(
            "warning: {n} MIDI changes come after the render's end and did not play (the file's last event is at {:.3} s)",
            s(midi.end)
        ));
    }
    let length = match tail {
        Some(t) => {
            let (to, after) = t.split(report.frames);
            format!(
                "; length: last event {:.3} s + tail {:.3} s",
                s(to),
                s(after)
            )
        }
        None => String::new(),
    };
    lines.push(format!("{}{length}", midi.summary()));
    lines.join("\n")
}

/// `--json`'s `input`: the file, its shape, and the length's parts.
fn input_json(
    input: &RenderInput,
    tail: Option<&Tail>,
    report: &RenderReport,
    sr: u32,
) -> serde_json::Value {
    let (input_frames, tail_frames) = tail.map_or((None, None), |t| {
        let (i, a) = t.split(report.frames);
        (Some(i), Some(a))
    });
    serde_json::json!({
        "file": input.shown.trim_matches('`'),
        "channels": input.channels,
        "format": input.format.describe(),
        "length": if tail.is_some() { "input+tail" } else { "duration" },
        "input_frames": input_frames,
        "tail_frames": tail_frames,
        "tail_s": tail_frames.map(|f| f as f64 / sr as f64),
    })
}

/// The plan a render runs: compiled under the arguments, or under the
/// snapshot's settings when resuming (a `--block-size` or `--seed` that
/// disagrees with the snapshot's is refused). `-v` says what it resolved.
fn compile_for_render(
    opts: &RenderOptions,
    scene: &scene::Scene,
    snap: Option<&SnapshotFile>,
    log: &mut dyn Write,
) -> Result<Plan, HostError> {
    let copts = match snap {
        Some(s) => {
            if let Some(b) = opts.block_size.filter(|b| *b != s.block_size) {
                return Err(HostError::Usage(format!(
                    "--block-size {b} conflicts with snapshot `{}`, taken at block size {}; a resumed render keeps the snapshot's",
                    s.origin(),
                    s.block_size
                )));
            }
            if let Some(seed) = opts.seed.filter(|x| s.seed.is_some_and(|y| y != *x)) {
                return Err(HostError::Usage(format!(
                    "--seed {seed} conflicts with snapshot `{}`, taken with seed {}; a resumed render keeps the snapshot's",
                    s.origin(),
                    s.seed.unwrap_or_default()
                )));
            }
            let mut c = s.compile_options(opts.profile, opts.resources.clone());
            c.seed = c.seed.or(opts.seed);
            c
        }
        None => CompileOptions {
            profile: opts.profile,
            block_size: opts.block_size,
            seed: opts.seed,
            resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
            ..CompileOptions::default()
        },
    };
    let compiling = Instant::now();
    let plan = compile(scene, &copts).map_err(HostError::Input)?;
    let compiled = compiling.elapsed();
    if crate::host::term::verbose() {
        let _ = writeln!(log, "{}", crate::host::verbose_plan(&plan));
        let _ = writeln!(
            log,
            "note: compiled in {:.1} ms",
            compiled.as_secs_f64() * 1e3
        );
    }
    Ok(plan)
}

/// How long a render is.
#[derive(Clone, Copy, Debug)]
enum Length {
    /// Exactly this many frames: `-d`, the scene's duration, 10 s.
    Frames(u64),
    /// The input's length (`input` frames, when known before reading) and
    /// the scene's latency, then its tail ([`Tail`]).
    Tail { input: Option<u64>, latency: u64 },
}

impl Length {
    /// The least it writes: the header written first carries this.
    fn least(&self) -> u64 {
        match *self {
            Length::Frames(n) => n,
            Length::Tail { input, latency } => input.map_or(0, |n| n + latency),
        }
    }

    /// The tail, and the most the render runs, when it ends with one.
    fn tail(&self, start: u64, latency: usize, sr: u32) -> Option<(Tail, u64)> {
        match self {
            Length::Tail { .. } => Some((Tail::new(start, latency, sr), self.most(sr))),
            Length::Frames(_) => None,
        }
    }

    /// The most it may write, within the render limit.
    fn most(&self, sr: u32) -> u64 {
        match *self {
            Length::Frames(n) => n,
            Length::Tail {
                input: Some(n),
                latency,
            } => (n + latency + TAIL_MAX_S * sr as u64).min(max_frames(sr)),
            Length::Tail { input: None, .. } => max_frames(sr),
        }
    }
}

/// How many frames to render: `-d`; else with an input its length and the
/// tail; else the scene's duration (else 10 s), less what a resumed
/// snapshot already rendered; within the render limit.
fn render_length(
    opts: &RenderOptions,
    plan: &Plan,
    snap: Option<&SnapshotFile>,
    input: Option<&RenderInput>,
    midi_end: Option<u64>,
    log: &mut dyn Write,
) -> Result<Length, HostError> {
    let sr = plan.sample_rate;
    if let Some(d) = &opts.duration {
        return d
            .length(sr, plan.tempo.as_ref(), log)
            .map(Length::Frames)
            .map_err(HostError::Usage);
    }
    if let Some(i) = input {
        let latency = plan.latency as u64;
        if let Some(n) = i.frames.filter(|n| n + latency > max_frames(sr)) {
            return Err(over_limit(
                format!("the input {} ({n} frames)", i.shown),
                sr,
            ));
        }
        return Ok(Length::Tail {
            input: i.frames,
            latency,
        });
    }
    let start = snap.map_or(0, |s| s.clock);
    if let (None, Some(end)) = (plan.duration, midi_end) {
        let latency = plan.latency as u64;
        if end + latency > max_frames(sr) {
            return Err(over_limit(
                format!("the MIDI file (its last event at sample {end})"),
                sr,
            ));
        }
        return Ok(Length::Tail {
            input: Some(end.saturating_sub(start)),
            latency,
        });
    }
    let total = plan.duration.unwrap_or(10 * sr as u64);
    if total > max_frames(sr) {
        return Err(over_limit(
            format!(
                "the duration of scene `{}` ({} s)",
                plan.file,
                total as f64 / sr as f64
            ),
            sr,
        ));
    }
    if total <= start {
        return Err(HostError::Usage(format!(
            "snapshot `{}` is at {:.3}s, at or past the scene's end ({:.3}s): give -d to render on",
            snap.map(|s| s.origin()).unwrap_or_default(),
            start as f64 / sr as f64,
            total as f64 / sr as f64
        )));
    }
    Ok(Length::Frames(total - start))
}

/// The compile's warnings, plus events past the end and a render slower
/// than real time, printed before the first block; returned for `--json`.
fn warn_before_render(
    opts: &RenderOptions,
    plan: &mut Plan,
    start: u64,
    length: &Length,
    log: &mut dyn Write,
) -> Vec<Diagnostic> {
    let mut warnings = std::mem::take(&mut plan.warnings);
    let named = match (&opts.duration, length) {
        (Some(d), _) => format!("-d {}", d.text()),
        (None, Length::Tail { .. }) if opts.input.is_empty() => {
            "the MIDI file's last event and the tail".to_string()
        }
        (None, Length::Tail { .. }) => "the input's length and the tail".to_string(),
        (None, _) if plan.duration.is_some() => "the scene's duration".to_string(),
        (None, _) => "the default length of 10 s".to_string(),
    };
    let frames = length.least();
    // A tail's end is not known yet: only events past its longest end are.
    let end = match length {
        Length::Tail { input: None, .. } => None,
        _ => Some(start + length.most(plan.sample_rate)),
    };
    if let Some(end) = end {
        warnings.extend(crate::graph::events_after_end(plan, end, &named));
    }
    warnings.extend(crate::graph::slow_render_warning(plan, frames));
    if !warnings.is_empty() {
        let _ = writeln!(log, "{}", scene::Shown::new(&warnings));
    }
    warnings
}

/// The samples `--snapshot-at` names, sorted, each inside the render.
fn snapshot_stops(
    opts: &RenderOptions,
    sr: u32,
    start: u64,
    frames: u64,
    log: &mut dyn Write,
) -> Result<Vec<u64>, HostError> {
    let mut stops: Vec<u64> = Vec::new();
    for t in &opts.snapshot_at {
        let at = t.length(sr, None, log).map_err(HostError::Usage)?;
        if at < start || at > start + frames {
            return Err(HostError::Usage(format!(
                "--snapshot-at {t} (sample {at}) is outside the render (samples {start} … {})",
                start + frames
            )));
        }
        stops.push(at);
    }
    stops.sort_unstable();
    stops.dedup();
    Ok(stops)
}

/// Every file the render reads, which no output may replace: the scene,
/// its resources, the snapshot resumed from.
fn render_inputs(opts: &RenderOptions, plan: &Plan, from_stdin: bool) -> Inputs {
    let mut inputs = Inputs::default();
    if from_stdin {
        inputs.add_stdin("the scene (read from standard input)");
    } else {
        inputs.add("the scene", &opts.scene);
    }
    for (reference, path) in &plan.resources {
        inputs.add(&format!("resource `{reference}`, read from"), path);
    }
    if let Some(p) = &opts.resume {
        inputs.add("the snapshot resumed from", p);
    }
    inputs
}

/// Carries a snapshot's state into the fresh engine and says what carried.
fn resume_from(
    s: &SnapshotFile,
    cx: &SnapshotContext,
    engine: &mut Engine,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let resumed = cx.resume(s, engine)?;
    for m in &resumed.messages {
        let _ = writeln!(log, "{m}");
    }
    let _ = writeln!(
        log,
        "resuming `{}` at sample {} ({:.3}s) under {}: {} of {} nodes carried",
        s.origin(),
        resumed.clock,
        resumed.clock as f64 / engine.sample_rate() as f64,
        engine.profile(),
        resumed.migration.carried,
        s.nodes.len()
    );
    Ok(())
}

/// One line per snapshot written during the render, and a warning for
/// each one a render that ended with its tail did not reach.
fn report_snapshots(
    written: &[(u64, Written, Duration)],
    stops: &[u64],
    sr: u32,
    log: &mut dyn Write,
) {
    for at in stops.iter().filter(|s| written.iter().all(|w| w.0 != **s)) {
        let _ = writeln!(
            log,
            "warning: no snapshot at sample {at} ({:.3}s): the render ended before it",
            *at as f64 / sr as f64
        );
    }
    for (at, w, capture) in written {
        let _ = writeln!(
            log,
            "snapshot at sample {at} ({:.3}s) written to {}: {} bytes, captured in {:.2} ms, written in {:.2} ms",
            *at as f64 / sr as f64,
            w.path.display(),
            w.bytes,
            capture.as_secs_f64() * 1e3,
            w.elapsed.as_secs_f64() * 1e3
        );
    }
}

/// What the render did: NaN/Inf replaced, frames, profile, speed, levels.
fn report_render(
    engine: &Engine,
    report: &RenderReport,
    layout: &WavLayout,
    start: u64,
    what: &str,
    length: Option<&str>,
    log: &mut dyn Write,
) {
    let sr = engine.sample_rate();
    if let Some((node, sample)) = engine.stats().first_nan {
        let _ = writeln!(
            log,
            "warning: node `{}` produced NaN/Inf (first at sample {sample}); replaced with silence ({} blocks affected)",
            engine.node_id(node),
            engine.stats().nan_events
        );
    }
    let from = if start > 0 {
        format!(" from sample {start}")
    } else {
        String::new()
    };
    let rf64 = if layout.is_rf64() { " as RF64" } else { "" };
    let _ = writeln!(
        log,
        "rendered {} frames{from} ({:.3}s, {} ch, {} profile, block {}) to {what}{rf64} in {:.2}s ({:.1}x real time)",
        report.frames,
        report.frames as f64 / sr as f64,
        report.channels,
        engine.profile(),
        engine.block_size(),
        report.elapsed.as_secs_f64(),
        report.speed(sr)
    );
    if let Some(l) = length {
        let _ = writeln!(log, "{l}");
    }
    let _ = writeln!(log, "{}", report.levels.summary());
    if let Some(w) = report.levels.clip_warning() {
        let _ = writeln!(log, "{w}");
    }
}

/// `--json`: the render's summary, levels and the warnings printed before it.
fn json_summary(
    opts: &RenderOptions,
    engine: &Engine,
    report: &RenderReport,
    layout: &WavLayout,
    start: u64,
    warnings: &[Diagnostic],
) -> serde_json::Value {
    let sr = engine.sample_rate();
    let duration_s = report.frames as f64 / sr as f64;
    let mut summary = serde_json::json!({
        "output": opts.output.display().to_string(),
        "format": opts.format.name(),
        "rf64": layout.is_rf64(),
        "bytes": layout.file_len().unwrap_or(u64::MAX),
        "sample_rate": sr,
        "channels": report.channels,
        "start_frame": start,
        "frames": report.frames,
        "duration_s": duration_s,
        "profile": engine.profile().to_string(),
        "block_size": engine.block_size(),
        "hash": report.hash,
        "time_s": report.elapsed.as_secs_f64(),
        "rtf": report.elapsed.as_secs_f64() / duration_s,
        // The warnings printed before the render, as `check --json` gives them.
        "diagnostics": scene::Shown::new(warnings).json(),
        "truncated": scene::Shown::new(warnings).truncated(),
    });
    if let (Some(m), serde_json::Value::Object(levels)) =
        (summary.as_object_mut(), report.levels.json())
    {
        m.extend(levels);
    }
    summary
}
