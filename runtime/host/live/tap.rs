//! Recording exactly what went to the audio device (`morphrt run --capture
//! FILE.wav`), readable under its own name at every moment.
//!
//! The callback copies its interleaved output into a wait-free
//! single-producer single-consumer ring ([`Tap::push`]); a writer
//! thread drains the ring every few milliseconds into a 32-bit float WAV
//! file. The callback therefore never allocates, frees, locks, blocks or
//! does I/O for the capture: when the writer falls behind, the samples that
//! do not fit are counted, not waited for.
//!
//! The file is the take from its first byte. It is created under its final
//! name — new, never over an existing file unless the caller asks
//! ([`Existing`]) — with the header `replay` writes, and the writer thread
//! keeps the header's RIFF and data sizes current: twice a second, while
//! samples come, it rewrites the two sizes in place (without seeking) and
//! syncs the file. A crash or a `SIGKILL` therefore leaves a valid WAV
//! holding everything up to its last update, less than a second before the
//! end, and so does a power cut once that update is synced;
//! [`TapWriter::finish`] writes the final sizes. At the WAV size limit (4 GiB) or a write error the file stops
//! growing and keeps every whole frame written before, with correct sizes;
//! the report says so ([`TapReport::error`], [`TapReport::overflow_samples`]).
//!
//! The file goes through the one writer ([`crate::host::files::write`]),
//! under the output rules ([`Kind::CAPTURE`]): it is never one of the
//! session's inputs, a device or a FIFO (its header is rewritten as it goes,
//! so it cannot stream).

use crate::host::files::error::FileError;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::files::wav::{WavFormat, WavLayout};
pub use crate::host::files::write::Existing;
use rtrb::{Consumer, Producer, RingBuffer};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the writer thread sleeps between drains. A ring of a second or
/// more absorbs hundreds of these, and longer stalls of the writer (a slow
/// disk) are what the ring is sized for.
const DRAIN_INTERVAL: Duration = Duration::from_millis(5);

/// How often the header's sizes are brought up to date while recording:
/// what a crash can cost, at most, plus the ring's lag.
const HEADER_INTERVAL: Duration = Duration::from_millis(500);

/// The largest ring `start` agrees to allocate, in samples (1 GiB of f32).
const MAX_RING_SAMPLES: usize = 1 << 28;

/// A WAV file's sizes are 32-bit: the data chunk must stay under 4 GiB with
/// room for the header, or the header would silently wrap.
const MAX_DATA_BYTES: u64 = u32::MAX as u64 - 1024;

/// What the owner asks of the writer thread (stored in an `AtomicU8`).
const RUN: u8 = 0;
/// Not draining yet: lets tests fill the ring deterministically.
const PAUSE: u8 = 1;
/// Drain what is in the ring, write the final sizes and stop.
const FINISH: u8 = 2;
/// As `FINISH`, for a writer dropped without `finish`: a file that got no
/// audio is removed (a session that failed to start leaves nothing).
const ABANDON: u8 = 3;

/// Why a capture could not start or finish.
#[derive(Debug)]
pub enum TapError {
    /// The file: refused by the output rules, or an I/O failure on it.
    File(FileError),
    /// `channels` at `sample_rate` is no sound format to capture into `path`.
    NoSound {
        path: PathBuf,
        channels: u16,
        sample_rate: u32,
    },
    /// The ring's length, `seconds`, is not a positive number.
    RingLength { path: PathBuf, seconds: f64 },
    /// A ring of `seconds` at `sample_rate` × `channels` is larger than
    /// the capture allocates.
    RingTooLarge {
        path: PathBuf,
        seconds: f64,
        sample_rate: u32,
        channels: u16,
    },
    /// The writer thread could not start.
    Thread(std::io::Error),
    /// The writer thread panicked (the file keeps its last sizes).
    Panicked,
    /// `finish` after the writer had stopped.
    Stopped,
}
impl std::fmt::Display for TapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TapError::File(e) => write!(f, "{e}"),
            TapError::NoSound {
                path,
                channels,
                sample_rate,
            } => write!(
                f,
                "cannot capture into `{}`: {channels} channels at {sample_rate} Hz is not a sound format",
                path.display()
            ),
            TapError::RingLength { path, seconds } => write!(
                f,
                "cannot capture into `{}`: the ring length must be a positive number of seconds, not {seconds}",
                path.display()
            ),
            TapError::RingTooLarge {
                path,
                seconds,
                sample_rate,
                channels,
            } => write!(
                f,
                "cannot capture into `{}`: a ring of {seconds} s at {sample_rate} Hz × {channels} channels is too large",
                path.display()
            ),
            TapError::Thread(e) => write!(f, "cannot start the capture writer: {e}"),
            TapError::Panicked => f.write_str("the capture writer thread panicked"),
            TapError::Stopped => f.write_str("the capture writer has already stopped"),
        }
    }
}

impl std::error::Error for TapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TapError::File(e) => Some(e),
            TapError::Thread(e) => Some(e),
            TapError::NoSound { .. }
            | TapError::RingLength { .. }
            | TapError::RingTooLarge { .. }
            | TapError::Panicked
            | TapError::Stopped => None,
        }
    }
}

impl From<FileError> for TapError {
    fn from(e: FileError) -> TapError {
        TapError::File(e)
    }
}

/// The audio thread's end of a capture: moved into the player, fed once per
/// callback with exactly what was written to the device.
///
/// Drop it off the audio thread (as the player is): if the writer has
/// already stopped, dropping the tap frees the ring.
pub struct Tap {
    producer: Producer<f32>,
    channels: usize,
    dropped: Arc<AtomicU64>,
}

impl Tap {
    /// Real-time safe: copies interleaved samples into the ring without
    /// allocating, locking or blocking. If the ring is full, it copies the
    /// whole frames that fit and counts the samples it could not push (the
    /// writer reports them), so the file never holds a torn frame. A trailing
    /// partial frame (a slice whose length is not a multiple of the channel
    /// count) is counted as dropped too.
    pub fn push(&mut self, interleaved: &[f32]) {
        let ch = self.channels;
        let whole = interleaved.len() - interleaved.len() % ch;
        let free = self.producer.slots();
        let n = whole.min(free - free % ch);
        if n > 0 {
            // Cannot fail: only this side fills the ring, and `n` slots were free.
            let _ = self.producer.push_entire_slice(&interleaved[..n]);
        }
        let lost = interleaved.len() - n;
        if lost > 0 {
            self.dropped.fetch_add(lost as u64, Ordering::Relaxed);
        }
    }

    /// The channel count of the frames this tap expects, so the player can
    /// check it against the device before playing.
    pub fn channels(&self) -> u16 {
        self.channels as u16
    }
}

/// The player records its output into the tap through the core's trait.
impl crate::api::player::OutputTap for Tap {
    fn push(&mut self, interleaved: &[f32]) {
        Tap::push(self, interleaved)
    }
}

/// What a finished capture wrote.
#[derive(Debug)]
pub struct TapReport {
    /// Where the recording is (the `path` given to `start`).
    pub path: PathBuf,
    /// Frames in the file.
    pub frames: u64,
    /// Interleaved samples the tap could not push because the ring was full
    /// (the writer fell behind): the file has a gap wherever this happened.
    pub dropped_samples: u64,
    /// Samples that arrived after the file stopped growing — at the WAV
    /// size limit (4 GiB), or at [`error`](Self::error) — and were not
    /// written: the file ends early.
    pub overflow_samples: u64,
    /// The write error that stopped the file early, if one did; the file
    /// keeps every whole frame before it, with correct sizes.
    pub error: Option<FileError>,
    /// Channels in the file, for the caller's message.
    pub channels: u16,
    /// Sample rate of the file, for the caller's message and `duration_s`.
    pub sample_rate: u32,
}

impl TapReport {
    /// Whether the file holds every sample pushed to the tap, so the caller
    /// can decide whether a recording with gaps is an error.
    pub fn is_complete(&self) -> bool {
        self.dropped_samples == 0 && self.overflow_samples == 0 && self.error.is_none()
    }

    /// The recording's length in seconds.
    pub fn duration_s(&self) -> f64 {
        self.frames as f64 / self.sample_rate as f64
    }
}

/// The control thread's end of a capture: owns the writer thread. Call
/// [`finish`](TapWriter::finish) for the final sizes and the report;
/// dropped without `finish`, it finishes the file all the same (the take is
/// kept) but removes a file that got no audio.
pub struct TapWriter {
    thread: Option<JoinHandle<Written>>,
    state: Arc<AtomicU8>,
    dropped: Arc<AtomicU64>,
    path: PathBuf,
    channels: u16,
    sample_rate: u32,
}

/// What the writer thread hands back when it stops.
struct Written {
    frames: u64,
    overflow_samples: u64,
    error: Option<FileError>,
}

/// How a capture is set up; `start` fills it from its arguments, tests
/// choose the ring, the size limit and whether the writer starts paused.
struct Setup {
    channels: u16,
    sample_rate: u32,
    ring_frames: usize,
    max_frames: u64,
    paused: bool,
}

/// The most whole frames of `channels` × `format` a WAV's 32-bit sizes hold.
fn max_frames(channels: u16, format: WavFormat) -> u64 {
    let frame = WavLayout {
        channels,
        sample_rate: 1,
        format,
        frames: 0,
    }
    .bytes_per_sample()
        * channels.max(1) as u64;
    MAX_DATA_BYTES / frame
}

impl TapWriter {
    /// Creates the writer for `path`, which protects no input (a session
    /// checks its capture against its inputs with [`Kind::CAPTURE`] and
    /// [`start_at`](Self::start_at)) and must not exist yet.
    pub fn start(
        path: &Path,
        channels: u16,
        sample_rate: u32,
        ring_seconds: f64,
    ) -> Result<(TapWriter, Tap), TapError> {
        let ring = ring_frames(path, channels, sample_rate, ring_seconds)?;
        let output = Output::prepare(path, &Inputs::default(), 0, &Kind::CAPTURE)?;
        TapWriter::spawn(output, Existing::Refuse, setup(channels, sample_rate, ring))
    }

    /// Creates the writer at a checked output: the file is created under
    /// its final name with the header of an empty WAV, new — or, only with
    /// [`Existing::Replace`], over an existing file. `ring_seconds` sizes
    /// the ring: how long the writer may stall before samples are dropped
    /// (half a second or more is comfortable).
    ///
    /// Fails early, naming the path, when the file exists (and may not be
    /// replaced), its directory is not writable, or the format is
    /// impossible (zero channels or rate).
    pub fn start_at(
        output: Output,
        existing: Existing,
        channels: u16,
        sample_rate: u32,
        ring_seconds: f64,
    ) -> Result<(TapWriter, Tap), TapError> {
        let ring = ring_frames(&output.shown, channels, sample_rate, ring_seconds)?;
        TapWriter::spawn(output, existing, setup(channels, sample_rate, ring))
    }

    fn spawn(
        output: Output,
        existing: Existing,
        setup: Setup,
    ) -> Result<(TapWriter, Tap), TapError> {
        let path = output.shown.clone();
        if setup.channels == 0 || setup.sample_rate == 0 {
            return Err(TapError::NoSound {
                path,
                channels: setup.channels,
                sample_rate: setup.sample_rate,
            });
        }
        let (producer, consumer) = RingBuffer::new(setup.ring_frames * setup.channels as usize);
        let drain = Drain::create(output, existing, &setup, consumer)?;
        let state = Arc::new(AtomicU8::new(if setup.paused { PAUSE } else { RUN }));
        let dropped = Arc::new(AtomicU64::new(0));
        let st = state.clone();
        let thread = std::thread::Builder::new()
            .name("morphrt-capture".into())
            .spawn(move || drain.run(&st))
            .map_err(TapError::Thread)?;
        Ok((
            TapWriter {
                thread: Some(thread),
                state,
                dropped: dropped.clone(),
                path,
                channels: setup.channels,
                sample_rate: setup.sample_rate,
            },
            Tap {
                producer,
                channels: setup.channels as usize,
                dropped,
            },
        ))
    }

    /// Samples dropped so far because the ring was full, so the control
    /// thread can warn while playing rather than only at the end.
    pub fn dropped_samples(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Drains what the tap has pushed so far, writes the final sizes and
    /// syncs the file. Samples the tap pushes after this call are
    /// discarded. The report says what was written and what was lost (a
    /// write error included: the file keeps what came before it); whether
    /// a recording with gaps is an error is the caller's call.
    pub fn finish(mut self) -> Result<TapReport, TapError> {
        self.state.store(FINISH, Ordering::Release);
        let written = self.join()?;
        Ok(TapReport {
            path: self.path.clone(),
            frames: written.frames,
            dropped_samples: self.dropped.load(Ordering::Relaxed),
            overflow_samples: written.overflow_samples,
            error: written.error,
            channels: self.channels,
            sample_rate: self.sample_rate,
        })
    }

    /// Waits for the writer thread (taken, so `Drop` does nothing more).
    fn join(&mut self) -> Result<Written, TapError> {
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| TapError::Panicked),
            None => Err(TapError::Stopped),
        }
    }
}

impl Drop for TapWriter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.state.store(ABANDON, Ordering::Release);
            let _ = self.join();
        }
    }
}

/// The ring's length in frames for `ring_seconds`, refused when it is not a
/// positive number of seconds or would be too large.
fn ring_frames(
    path: &Path,
    channels: u16,
    sample_rate: u32,
    ring_seconds: f64,
) -> Result<usize, TapError> {
    if !(ring_seconds.is_finite() && ring_seconds > 0.0) {
        return Err(TapError::RingLength {
            path: path.to_path_buf(),
            seconds: ring_seconds,
        });
    }
    let ring_frames = (ring_seconds * sample_rate as f64).ceil().max(1.0);
    if ring_frames * channels.max(1) as f64 > MAX_RING_SAMPLES as f64 {
        return Err(TapError::RingTooLarge {
            path: path.to_path_buf(),
            seconds: ring_seconds,
            sample_rate,
            channels,
        });
    }
    Ok(ring_frames as usize)
}

/// The setup `start` uses: a running writer, the WAV size limit.
fn setup(channels: u16, sample_rate: u32, ring_frames: usize) -> Setup {
    Setup {
        channels,
        sample_rate,
        ring_frames,
        max_frames: max_frames(channels, WavFormat::F32),
        paused: false,
    }
}

/// The writer thread's state: the ring's consumer and the take.
struct Drain {
    consumer: Consumer<f32>,
    take: Take,
}

/// An open WAV file growing under its final name, its header's sizes kept
/// current ([`Take::keep_current`]): the capture's file, and the recorded
/// input a journal keeps ([`crate::host::live::input::record`]).
pub(crate) struct Take {
    file: File,
    /// The file's shape; `frames` is what its data holds, in whole frames.
    layout: WavLayout,
    /// Where the file is (links resolved), to remove an empty one.
    target: PathBuf,
    /// Whether this capture created the file (rather than replaced one).
    created: bool,
    /// The capture for messages: "the capture `take.wav`", and its path as given.
    named: String,
    shown: PathBuf,
    max_frames: u64,
    /// Bytes of samples written so far (whole frames unless a write failed).
    data_bytes: u64,
    /// Samples taken from the ring, written or not.
    received: u64,
    /// Frames the header says, and when it last said so.
    in_header: u64,
    updated: Instant,
    /// Why the file stopped growing before the end, if it did.
    error: Option<FileError>,
    /// The samples' bytes on their way to the file (reused).
    bytes: Vec<u8>,
}

impl Drain {
    /// Creates the file (see [`Take::create`]) for `consumer`'s samples.
    fn create(
        output: Output,
        existing: Existing,
        setup: &Setup,
        consumer: Consumer<f32>,
    ) -> Result<Drain, FileError> {
        let take = Take::create(output, existing, setup)?;
        Ok(Drain { consumer, take })
    }

    /// Drains until told to finish (or the tap is gone), keeping the
    /// header current; then writes the final sizes.
    fn run(mut self, state: &AtomicU8) -> Written {
        let abandoned = loop {
            let s = state.load(Ordering::Acquire);
            if s == PAUSE {
                std::thread::sleep(DRAIN_INTERVAL);
                continue;
            }
            // Read before draining: once the tap is gone, one more drain
            // empties the ring for good.
            let tap_gone = self.consumer.is_abandoned();
            self.drain();
            if s == FINISH || s == ABANDON || tap_gone {
                break s == ABANDON;
            }
            self.take.keep_current();
            std::thread::sleep(DRAIN_INTERVAL);
        };
        self.take.close(abandoned)
    }

    /// Writes everything in the ring, in the ring's own (at most two) slices.
    fn drain(&mut self) {
        let n = self.consumer.slots();
        if n == 0 {
            return;
        }
        // Cannot fail: only this side empties the ring, and `n` slots were full.
        let Ok(chunk) = self.consumer.read_chunk(n) else {
            return;
        };
        let (a, b) = chunk.as_slices();
        self.take.write(a);
        self.take.write(b);
        chunk.commit_all();
    }
}

impl Take {
    /// Creates the file under its final name and writes the header of an
    /// empty WAV, synced, so even a capture cut at once is a valid file.
    fn create(output: Output, existing: Existing, setup: &Setup) -> Result<Take, FileError> {
        Take::create_as(output, existing, setup, WavFormat::F32)
    }

    /// Creates a file of `channels` × `format` samples at `sample_rate`
    /// (see [`create`](Self::create)), up to the WAV size limit.
    pub(crate) fn create_file(
        output: Output,
        existing: Existing,
        channels: u16,
        sample_rate: u32,
        format: WavFormat,
    ) -> Result<Take, FileError> {
        let mut s = setup(channels, sample_rate, 1);
        s.max_frames = max_frames(channels, format);
        Take::create_as(output, existing, &s, format)
    }

    fn create_as(
        output: Output,
        existing: Existing,
        setup: &Setup,
        format: WavFormat,
    ) -> Result<Take, FileError> {
        let named = output.named();
        let shown = output.shown.clone();
        let placed = output.create_in_place(existing)?;
        let mut take = Take {
            file: placed.file,
            layout: WavLayout {
                channels: setup.channels,
                sample_rate: setup.sample_rate,
                format,
                frames: 0,
            },
            target: placed.path,
            created: placed.created,
            named,
            shown,
            max_frames: setup.max_frames,
            data_bytes: 0,
            received: 0,
            in_header: 0,
            updated: Instant::now(),
            error: None,
            bytes: Vec::new(),
        };
        let header = take.header();
        let started = take
            .file
            .write_all(&header)
            .and_then(|_| take.file.sync_data());
        if let Err(e) = started {
            if take.created {
                let _ = std::fs::remove_file(&take.target);
            }
            return Err(take.failure(e, "; nothing was recorded"));
        }
        Ok(take)
    }

    /// Whether frames were written since the header last counted them.
    fn is_stale(&self) -> bool {
        self.layout.frames != self.in_header
    }

    /// Appends whole frames of `samples`, up to the size limit; after the
    /// limit or a write error they are only counted.
    fn write(&mut self, samples: &[f32]) {
        self.write_with(samples, |x, out| out.extend_from_slice(&x.to_le_bytes()));
    }

    /// Appends whole frames of `samples`, each encoded by `encode` into
    /// the file's sample format, as [`write`](Self::write) does.
    pub(crate) fn write_with<T>(&mut self, samples: &[T], encode: impl Fn(&T, &mut Vec<u8>)) {
        self.received += samples.len() as u64;
        let ch = self.layout.channels as u64;
        if self.error.is_some() || samples.is_empty() {
            return;
        }
        let room = (self.max_frames - self.layout.frames).saturating_mul(ch);
        let take = samples
            .len()
            .min(usize::try_from(room).unwrap_or(usize::MAX));
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.clear();
        samples[..take].iter().for_each(|x| encode(x, &mut bytes));
        let written = self.append(&bytes);
        self.bytes = bytes;
        if let Err(e) = written {
            return self.stop_at_error(e);
        }
        self.layout.frames = self.data_bytes / self.frame_bytes();
    }

    /// Writes `bytes` at the end of the data, counting what reached the file.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let mut at = 0;
        while at < bytes.len() {
            match self.file.write(&bytes[at..]) {
                Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
                Ok(k) => {
                    self.data_bytes += k as u64;
                    at += k;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Bytes of one frame.
    fn frame_bytes(&self) -> u64 {
        self.layout.bytes_per_sample() * self.layout.channels.max(1) as u64
    }

    /// Frames the header counts (what a crash leaves readable).
    pub(crate) fn frames_in_header(&self) -> u64 {
        self.in_header
    }

    /// Brings the header's sizes up to date (and syncs) when frames came
    /// since it last did and [`HEADER_INTERVAL`] has passed.
    pub(crate) fn keep_current(&mut self) {
        if self.is_stale() && self.updated.elapsed() >= HEADER_INTERVAL {
            self.update_header();
        }
    }

    /// Writes the final sizes (and the pad byte an odd data chunk needs):
    /// the frames in the file, and the write error that stopped it early.
    pub(crate) fn finish(mut self) -> (u64, Option<FileError>) {
        if self.error.is_none() && self.layout.pad_len() > 0 {
            let pad = self
                .file
                .write_all_at(&[0], self.header().len() as u64 + self.data_bytes);
            if let Err(e) = pad {
                self.stop_at_error(e);
            }
        }
        let w = self.close(false);
        (w.frames, w.error)
    }

    /// The header for the frames written so far.
    fn header(&self) -> Vec<u8> {
        // Under the size limit the header is the classic one, always.
        self.layout
            .header()
            .expect("a capture's sizes fit a WAV header")
    }

    /// Rewrites the header's RIFF and data sizes in place for the frames
    /// written so far, then syncs the file: from the rewrite on, a killed
    /// process leaves a WAV of those frames; from the sync on, so does a
    /// power cut (one during the sync can leave sizes that count samples
    /// the disk did not get: a reader sees the data end early).
    fn update_header(&mut self) {
        self.updated = Instant::now();
        let done = self.write_sizes().and_then(|_| self.file.sync_data());
        match done {
            Ok(()) => self.in_header = self.layout.frames,
            Err(e) => self.stop_at_error(e),
        }
    }

    /// Writes the two sizes of the header for `layout.frames`, where they
    /// are (the rest of the header never changes), without moving the
    /// file's position.
    fn write_sizes(&self) -> std::io::Result<()> {
        let header = self.header();
        let data_size = header.len() - 4;
        self.file.write_all_at(&header[4..8], 4)?;
        self.file
            .write_all_at(&header[data_size..], data_size as u64)
    }

    /// A write failed: the file keeps the whole frames before it, with
    /// sizes that say so (as far as the disk still takes them).
    fn stop_at_error(&mut self, e: std::io::Error) {
        if self.error.is_some() {
            return;
        }
        let frame = self.frame_bytes();
        self.layout.frames = self.data_bytes / frame;
        self.data_bytes = self.layout.frames * frame;
        let header_len = self.header().len() as u64;
        let _ = self.file.set_len(header_len + self.data_bytes);
        let rewritten = self.write_sizes().and_then(|_| self.file.sync_data());
        if rewritten.is_ok() {
            self.in_header = self.layout.frames;
        }
        let kept = format!(
            "; the file keeps the first {:.2}s ({} frames) and records no more",
            self.layout.frames as f64 / self.layout.sample_rate as f64,
            self.layout.frames
        );
        self.error = Some(self.failure(e, &kept));
    }

    /// Writes the final sizes; a writer dropped without `finish` (`abandoned`)
    /// removes a file it created that got no audio.
    fn close(mut self, abandoned: bool) -> Written {
        if self.is_stale() {
            self.update_header();
        }
        if abandoned && self.created && self.layout.frames == 0 {
            let _ = std::fs::remove_file(&self.target);
        }
        let samples = self.layout.frames * self.layout.channels as u64;
        Written {
            frames: self.layout.frames,
            overflow_samples: self.received - samples,
            error: self.error,
        }
    }

    /// An I/O error on the capture, naming it (the user's path).
    fn failure(&self, source: std::io::Error, after: &str) -> FileError {
        FileError::Io {
            path: self.shown.clone(),
            context: format!("cannot write {}", self.named),
            source,
            after: after.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_that_cannot_be_made_is_refused_naming_the_file() {
        let path = Path::new("take.wav");
        let e = ring_frames(path, 2, 48_000, 0.0).unwrap_err();
        assert!(matches!(e, TapError::RingLength { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "cannot capture into `take.wav`: the ring length must be a positive number of seconds, not 0"
        );
        let e = ring_frames(path, 2, 48_000, 1e9).unwrap_err();
        assert!(matches!(e, TapError::RingTooLarge { .. }), "{e:?}");
        assert!(e.to_string().ends_with("× 2 channels is too large"), "{e}");
        assert_eq!(ring_frames(path, 2, 48_000, 0.5).unwrap(), 24_000);
    }

    fn fresh_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "morphrt-capture-unit-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Distinct, finite samples whose bits are easy to compare.
    fn samples(n: usize) -> Vec<f32> {
        (0..n).map(|i| (i as f32 + 0.25) / n as f32 - 0.5).collect()
    }

    fn read_back(path: &Path) -> (hound::WavSpec, Vec<u32>) {
        let mut r = hound::WavReader::open(path).unwrap();
        let bits = r.samples::<f32>().map(|s| s.unwrap().to_bits()).collect();
        (r.spec(), bits)
    }

    fn bits(x: &[f32]) -> Vec<u32> {
        x.iter().map(|s| s.to_bits()).collect()
    }

    fn output(path: &Path) -> Output {
        Output::prepare(path, &Inputs::default(), 0, &Kind::CAPTURE).unwrap()
    }

    fn setup(ring_frames: usize, max_frames: u64, paused: bool) -> Setup {
        Setup {
            channels: 2,
            sample_rate: 48_000,
            ring_frames,
            max_frames,
            paused,
        }
    }

    #[test]
    fn a_full_ring_counts_what_it_could_not_push() {
        let dir = fresh_dir("full");
        let path = dir.join("c.wav");
        // The writer does not drain until `finish`, so the ring fills for sure.
        let (writer, mut tap) =
            TapWriter::spawn(output(&path), Existing::Refuse, setup(100, u64::MAX, true)).unwrap();
        let x = samples(1000 * 2);
        for chunk in x.chunks(37 * 2) {
            tap.push(chunk);
        }
        // 37 + 37 frames fit, then 26 of the third chunk; the other 900 frames do not.
        assert_eq!(writer.dropped_samples(), 900 * 2);
        let report = writer.finish().unwrap();
        assert_eq!(report.frames, 100);
        assert_eq!(report.dropped_samples, 1800);
        assert_eq!(report.overflow_samples, 0);
        assert!(!report.is_complete());
        let (_, got) = read_back(&path);
        assert_eq!(got, bits(&x[..200]));
    }

    #[test]
    fn a_torn_frame_is_counted_and_never_written() {
        let dir = fresh_dir("torn");
        let path = dir.join("c.wav");
        let (writer, mut tap) =
            TapWriter::spawn(output(&path), Existing::Refuse, setup(10, u64::MAX, true)).unwrap();
        let x = samples(5);
        tap.push(&x);
        let report = writer.finish().unwrap();
        assert_eq!((report.frames, report.dropped_samples), (2, 1));
        assert_eq!(read_back(&path).1, bits(&x[..4]));
    }

    #[test]
    fn the_file_stops_at_the_size_limit_and_counts_the_rest() {
        let dir = fresh_dir("limit");
        let path = dir.join("c.wav");
        let (writer, mut tap) =
            TapWriter::spawn(output(&path), Existing::Refuse, setup(1000, 50, false)).unwrap();
        let x = samples(80 * 2);
        tap.push(&x);
        let report = writer.finish().unwrap();
        assert_eq!(report.frames, 50);
        assert_eq!(report.overflow_samples, 60);
        assert_eq!(report.dropped_samples, 0);
        assert!(!report.is_complete());
        let (spec, got) = read_back(&path);
        assert_eq!(spec.channels, 2);
        assert_eq!(got, bits(&x[..100]));
    }

    #[test]
    fn start_sizes_the_ring_from_seconds_and_refuses_nonsense() {
        let dir = fresh_dir("sizes");
        let path = dir.join("c.wav");
        let (writer, tap) = TapWriter::start(&path, 3, 1000, 0.0105).unwrap();
        // ceil(10.5 frames) = 11 frames of 3 channels.
        assert_eq!(tap.producer.buffer().capacity(), 33);
        assert_eq!(tap.channels(), 3);
        drop(writer);
        for secs in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e9] {
            let e = TapWriter::start(&path, 2, 48_000, secs)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("c.wav"), "{e}");
        }
        for (ch, rate) in [(0, 48_000), (2, 0)] {
            let e = TapWriter::start(&path, ch, rate, 1.0)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("not a sound format"), "{e}");
        }
        // None of the refusals left a file behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}
