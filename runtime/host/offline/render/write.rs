//! The render's sink: blocks the player plays offline
//! ([`Player::play_frames`]) through the encoder into the WAV's body, stopping cleanly on a signal, a failed input or output, or
//! a snapshot that cannot be written ([`write_wav`]), and what a render
//! did ([`RenderReport`]).

use super::plan::over_limit;
use crate::api::player::offline_player;
use crate::api::Player;
use crate::engine::{BusRef, ChangeFeed, Engine};
use crate::host::files::digest::hex;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::files::signals::{signal_name, InterruptGuard};
use crate::host::files::wav::{WavFormat, WavLayout};
use crate::host::files::write::Sink;
use crate::host::offline::error::RenderError;
use crate::host::offline::input::{InputState, RenderInput, Tail};
use crate::host::offline::levels::Levels;
use crate::host::offline::wav_out::{Batch, Body, BodyError, Encoder, Framer};
use crate::host::HostError;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a render did.
#[derive(Clone, Debug)]
pub struct RenderReport {
    pub frames: u64,
    pub channels: usize,
    /// Lower-case hex SHA-256 of the interleaved LE main-bus samples, when
    /// the render was asked for it (`--hash`, `--json`).
    pub hash: Option<String>,
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
pub(super) fn hash_block(hasher: &mut Sha256, bytes: &mut Vec<u8>, bus: BusRef<'_>) {
    bytes.clear();
    bus.write_le_interleaved(bytes);
    hasher.update(&bytes[..]);
}

/// Renders and hashes without writing a file.
pub fn render_hash(engine: Engine, frames: u64) -> String {
    let mut hasher = Sha256::new();
    let mut bytes = Vec::new();
    let _ = offline_player(engine).play_frames(
        frames,
        &[],
        None,
        |_| Ok::<(), ()>(()),
        |bus| {
            hash_block(&mut hasher, &mut bytes, bus);
            Ok(())
        },
        |_| {},
    );
    hex(&hasher.finalize())
}

/// Renders `frames` into a WAV file at `path` under the output rules
/// ([`crate::host::files::rules`], no inputs to protect): written under a temporary name and
/// renamed into place when complete, streamed to a FIFO or device, so a
/// failed render never leaves a truncated file or destroys an existing one.
/// Installs no signal handlers; [`render`](super::render) does.
pub fn render_to_wav(
    engine: Engine,
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
        &mut offline_player(engine),
        sink,
        &what,
        &layout,
        &WriteOptions {
            progress: show_progress,
            stops: &[],
            interrupt: None,
            input: None,
            tail: None,
            flac: false,
            hash: true,
            spoiled: None,
            keeps: None,
        },
        None,
        |_| Ok(()),
    )
    .map(|(report, _)| report)
}

/// The WAV's shape, refused when it cannot be written at all.
pub(super) fn wav_layout(
    channels: usize,
    sample_rate: u32,
    format: WavFormat,
    frames: u64,
) -> Result<WavLayout, HostError> {
    let layout = WavLayout {
        channels: u16::try_from(channels).map_err(|_| RenderError::Channels(channels))?,
        sample_rate,
        format,
        frames,
    };
    if layout.file_len().is_none() {
        return Err(RenderError::TooManyFrames { frames, channels }.into());
    }
    Ok(layout)
}

/// How [`write_wav`] runs.
pub(super) struct WriteOptions<'a> {
    /// Show progress on stderr when it is a terminal.
    pub(super) progress: bool,
    /// Samples at which to call `at_stop`.
    pub(super) stops: &'a [u64],
    /// Stop (and clean up) when this caught a signal.
    pub(super) interrupt: Option<&'a InterruptGuard>,
    /// The input the engine reads, checked after every block.
    pub(super) input: Option<&'a RenderInput>,
    /// The render ends with the scene's tail after the input: `layout`'s
    /// length is then only the least it writes, and it runs at most `limit`.
    pub(super) tail: Option<(Tail, u64)>,
    /// Write FLAC instead of WAV (`layout`'s format is then i16 or i24).
    pub(super) flac: bool,
    /// Hash the samples (for `--hash` and `--json`); a render that prints
    /// no hash does not compute one.
    pub(super) hash: bool,
    /// Stop (and keep nothing) once this is raised: a part of the scene
    /// rendered ahead spoiled the render (`ahead.rs`).
    pub(super) spoiled: Option<&'a std::sync::atomic::AtomicBool>,
    /// Asked of the engine once it has played every frame, before the
    /// output is kept: keep nothing when it says no (as when spoiled).
    pub(super) keeps: Option<&'a dyn Fn(&Engine) -> bool>,
}

/// Why a render stopped early.
pub(super) enum Abort {
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
    /// The writer thread stopped (on a failed write, which it gives when
    /// joined).
    Writer,
    /// The part rendered ahead spoiled the render.
    Spoiled,
}

/// Frames a batch gathers before it goes to the writer thread (1.4 s at
/// 48 kHz): the writer waits for each, and waking it is a system call the
/// engine's thread pays (at 16384 frames, about 5 % of a render of an
/// effects chain on this machine's virtual CPUs).
const BATCH_FRAMES: usize = 65536;

/// Batches sent and not yet written, at most: the engine plays ahead of
/// the writer by no more.
const BATCHES_IN_FLIGHT: usize = 4;

/// How long a render stopped by a signal waits for its writer to finish
/// the write it is in, when the output is a stream (a pipe, a FIFO,
/// standard output): a reader that stopped reading never lets that write
/// end, and nothing of a stream needs cleaning up, so the process then
/// ends.
const STREAM_STOP_GRACE: Duration = Duration::from_millis(500);

/// The writer thread: encodes each batch and writes it to `body`, giving
/// the batch back to be filled again, until the batches end, a write
/// fails, or (when `watch`) a stop signal was caught: what is queued then
/// is not written.
fn write_batches<'a>(
    mut enc: Encoder,
    mut body: Body<'a>,
    batches: mpsc::Receiver<Batch>,
    give_back: mpsc::Sender<Batch>,
    watch: bool,
) -> (Encoder, Body<'a>, Result<(), BodyError>) {
    for mut batch in batches {
        if watch && crate::host::files::signals::stop_caught() {
            break;
        }
        enc.batch(&mut batch);
        if let Err(e) = body.write(enc.take()) {
            return (enc, body, Err(e));
        }
        enc.clear();
        let _ = give_back.send(batch);
    }
    (enc, body, Ok(()))
}

/// Writes the header and the frames from the engine to `sink` (exactly
/// `layout.frames`, or with a tail until it ends), finishing it (rename
/// into place, flush) only when all went well; otherwise the sink is
/// dropped, which removes a temporary file.
pub(super) fn write_wav(
    player: &mut Player,
    sink: Sink<'_>,
    what: &str,
    layout: &WavLayout,
    opts: &WriteOptions<'_>,
    feed: Option<&mut ChangeFeed>,
    mut at_stop: impl FnMut(&Engine) -> Result<(), HostError>,
) -> Result<(RenderReport, Option<Tail>), HostError> {
    let aftermath = sink.aftermath();
    let stream = sink.temp_file().is_none();
    let (tail, frames) = match &opts.tail {
        Some((t, limit)) => (Some(t.clone()), *limit),
        None => (None, layout.frames),
    };
    let body = if opts.flac {
        Body::open_flac(sink)?
    } else {
        Body::open(sink, layout, tail.is_none())?
    };
    let engine = player.engine();
    let f32_bus = matches!(engine.bus(), BusRef::F32(..));
    let channels = engine.channels();
    let enc = Encoder::new(channels, layout.format, f32_bus, opts.hash);
    let mut framer = Framer::new(engine.clock(), channels, tail);
    let mut progress = crate::host::term::Progress::new(layout.frames.max(1), opts.progress);
    let sr = engine.sample_rate() as f64;
    let first = engine.clock();
    let start = Instant::now();
    let caught = || opts.interrupt.and_then(InterruptGuard::caught);
    let spoiled = || {
        opts.spoiled
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Acquire))
    };
    // The engine plays here; the frames to write go in batches to a thread
    // that encodes, measures, hashes and writes them.
    // A writer thread the system refuses ends the render with that error
    // (the body, and a temporary file, dropped with it).
    let (mut result, (enc, body, written)) = std::thread::scope(|scope| {
        let (to_writer, batches) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
        let (give_back, spares) = mpsc::channel::<Batch>();
        let (wrote, written) = mpsc::channel::<()>();
        let watch = opts.interrupt.is_some();
        let writer = std::thread::Builder::new()
            .name("morphrt-render-writer".into())
            .spawn_scoped(scope, move || {
                let ended = write_batches(enc, body, batches, give_back, watch);
                drop(wrote);
                ended
            })
            .map_err(|source| HostError::Thread {
                what: "the render's writer",
                source,
            })?;
        let mut batch = Batch::new(channels, f32_bus, BATCH_FRAMES);
        let send = |batch: &mut Batch| {
            let next = spares
                .try_recv()
                .unwrap_or_else(|_| Batch::new(channels, f32_bus, BATCH_FRAMES));
            // A writer that stopped has its error, given when it is joined,
            // or stopped on a signal. A writer behind (a slow disk, a
            // stream read slowly or not at all) is waited for while no
            // stop signal comes.
            let mut full = std::mem::replace(batch, next);
            loop {
                match to_writer.try_send(full) {
                    Ok(()) => return Ok(()),
                    Err(mpsc::TrySendError::Disconnected(_)) => {
                        return Err(caught().map_or(Abort::Writer, Abort::Signal))
                    }
                    Err(mpsc::TrySendError::Full(b)) => {
                        if let Some(signal) = caught() {
                            return Err(Abort::Signal(signal));
                        }
                        full = b;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        };
        let mut result = player.play_frames(
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
                if spoiled() {
                    return Err(Abort::Spoiled);
                }
                input_after_block(opts.input, &mut framer)?;
                let done = framer.block(bus, &mut batch);
                if batch.frames() >= BATCH_FRAMES {
                    send(&mut batch)?;
                }
                if done {
                    Err(Abort::Done)
                } else {
                    Ok(())
                }
            },
            |done| progress.update(done.min(layout.frames)),
        );
        if matches!(result, Ok(()) | Err(Abort::Done)) && batch.frames() > 0 {
            if let Err(e) = send(&mut batch) {
                result = Err(e);
            }
        }
        drop(to_writer);
        if watch && stream {
            wait_for_stream_writer(&written, caught, || {
                let at_s = (player.engine().clock() - first) as f64 / sr;
                let of_s = layout.frames as f64 / sr;
                interrupted_message(caught().unwrap_or(libc::SIGINT), what, "", at_s, of_s)
            });
        }
        let ended = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok::<_, HostError>((result, ended))
    })?;
    // A failed write is why the render stopped, or it stops a render that
    // had finished.
    if let Err(e) = written {
        if matches!(result, Ok(()) | Err(Abort::Done) | Err(Abort::Writer)) {
            result = Err(Abort::Write(e));
        }
    }
    if matches!(result, Err(Abort::Done)) {
        result = Ok(());
    } else if result.is_ok() && opts.tail.is_some() {
        result = input_within_limit(opts.input, frames, player.engine().sample_rate());
    }
    if result.is_ok() {
        // A signal during the last block still stops the render: the user
        // asked for no file.
        if let Some(signal) = caught() {
            result = Err(Abort::Signal(signal));
        } else if spoiled() || opts.keeps.is_some_and(|k| !k(player.engine())) {
            result = Err(Abort::Spoiled);
        }
    }
    let elapsed = start.elapsed();
    progress.finish();
    let engine = player.engine();
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
pub(super) fn input_after_block(
    input: Option<&RenderInput>,
    framer: &mut Framer,
) -> Result<(), Abort> {
    let Some(input) = input else {
        return Ok(());
    };
    if let InputState::Ended(n) = input.state().map_err(|e| Abort::Input(e.into()))? {
        if let Some(t) = framer.tail_mut() {
            t.input_ended(n);
        }
    }
    Ok(())
}

/// A render that reached its limit with its input still going was given
/// an input longer than a render may be.
pub(super) fn input_within_limit(
    input: Option<&RenderInput>,
    limit: u64,
    sr: u32,
) -> Result<(), Abort> {
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

/// What a render stopped by `signal` says.
fn interrupted_message(signal: i32, what: &str, aftermath: &str, at_s: f64, of_s: f64) -> String {
    format!(
        "interrupted by {} at {at_s:.2}s of {of_s:.2}s; stopped writing {what}{aftermath}",
        signal_name(signal),
    )
}

/// Waits for the writer of a stream to end (`written` disconnects). Once a
/// stop signal is caught, it waits [`STREAM_STOP_GRACE`] more: a writer
/// still in its write then writes to a reader that stopped reading, and
/// the process ends there, saying `message()` and exiting 128 + the
/// signal's number as an interrupted render does (without flushing
/// standard output, whose reader would never take it).
fn wait_for_stream_writer(
    written: &mpsc::Receiver<()>,
    caught: impl Fn() -> Option<i32>,
    message: impl Fn() -> String,
) {
    let mut since: Option<Instant> = None;
    loop {
        match written.recv_timeout(Duration::from_millis(50)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let Some(signal) = caught() else { continue };
        let at = *since.get_or_insert_with(Instant::now);
        if at.elapsed() >= STREAM_STOP_GRACE {
            let _ = std::io::Write::write_fmt(
                &mut crate::host::term::errors(),
                format_args!("{}\n", message()),
            );
            // SAFETY: ends the process at once; nothing of a stream is
            // left to clean up, and the temporary files of snapshots are
            // complete or removed by then (they are written between blocks).
            unsafe { libc::_exit(128 + signal) };
        }
    }
}

/// The error a stopped render reports, saying what became of the output.
pub(super) fn abort_error(
    stop: Abort,
    body: Body<'_>,
    what: &str,
    aftermath: &str,
    at_s: f64,
    of_s: f64,
) -> HostError {
    let with_aftermath = |e: HostError| HostError::Stopped {
        cause: Box::new(e),
        aftermath: aftermath.to_string(),
    };
    match stop {
        Abort::Write(e) => body.error(e),
        Abort::Snapshot(e) | Abort::Input(e) => with_aftermath(e),
        Abort::Signal(signal) => HostError::Interrupted {
            signal,
            message: interrupted_message(signal, what, aftermath, at_s, of_s),
        },
        Abort::Spoiled => with_aftermath(HostError::Thread {
            what: crate::host::offline::ahead::WHAT,
            source: std::io::Error::other("what it rendered is not what the whole scene plays"),
        }),
        Abort::Done | Abort::Writer => {
            unreachable!("a completed render is no failure; a writer's stop is its error")
        }
    }
}
