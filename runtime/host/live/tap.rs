//! Recording exactly what went to the audio device (`morphrt run --capture
//! FILE.wav`).
//!
//! The callback copies its interleaved output into a wait-free
//! single-producer single-consumer ring ([`Tap::push`]); a writer
//! thread drains the ring every few milliseconds into a 32-bit float WAV
//! file. The callback therefore never allocates, frees, locks, blocks or
//! does I/O for the capture: when the writer falls behind, the samples that
//! do not fit are counted, not waited for.
//!
//! The file goes through the one writer ([`crate::host::files::write`]),
//! under the output rules ([`Kind::CAPTURE`]): it is written under a
//! temporary name in the destination directory and renamed into place only
//! by [`TapWriter::finish`], so a crash, an error or a stop signal never
//! leaves a truncated file under the requested name, nor replaces an
//! existing file with one; and it is never one of the session's inputs, a
//! device or a FIFO (the header is written last, so it cannot stream).

use crate::host::files::error::FileError;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::files::write::TempFile;
use crate::host::HostError;
use rtrb::{Consumer, Producer, RingBuffer};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the writer thread sleeps between drains. A ring of a second or
/// more absorbs hundreds of these, and longer stalls of the writer (a slow
/// disk) are what the ring is sized for.
const DRAIN_INTERVAL: Duration = Duration::from_millis(5);

/// The largest ring `start` agrees to allocate, in samples (1 GiB of f32).
const MAX_RING_SAMPLES: usize = 1 << 28;

/// A WAV file's sizes are 32-bit: the data chunk must stay under 4 GiB with
/// room for the header, or the header would silently wrap.
const MAX_DATA_BYTES: u64 = u32::MAX as u64 - 1024;

/// What the owner asks of the writer thread (stored in an `AtomicU8`).
const RUN: u8 = 0;
/// Not draining yet: lets tests fill the ring deterministically.
const PAUSE: u8 = 1;
/// Drain what is in the ring, finalise the file and stop.
const FINISH: u8 = 2;
/// Stop without finishing; the writer thread drops (so removes) the temporary file.
const DISCARD: u8 = 3;

/// Why a capture could not start or finish.
#[derive(Debug)]
pub enum TapError {
    /// The file: refused by the output rules, or an I/O failure on it.
    File(FileError),
    /// Not a recording that can be made (a ring length, a format); the
    /// message names the file.
    Setup(String),
    /// The writer thread could not start.
    Thread(std::io::Error),
    /// The writer thread panicked (its temporary file is gone with it).
    Panicked,
    /// `finish` after the writer had stopped.
    Stopped,
}

impl std::fmt::Display for TapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TapError::File(e) => write!(f, "{e}"),
            TapError::Setup(m) => f.write_str(m),
            TapError::Thread(e) => write!(f, "cannot start the capture writer: {e}"),
            TapError::Panicked => f.write_str("the capture writer thread panicked"),
            TapError::Stopped => f.write_str("the capture writer has already stopped"),
        }
    }
}

impl std::error::Error for TapError {}

impl From<FileError> for TapError {
    fn from(e: FileError) -> TapError {
        TapError::File(e)
    }
}

/// A refused path keeps its exit code; the rest is the machine's failure.
impl From<TapError> for HostError {
    fn from(e: TapError) -> HostError {
        match e {
            TapError::File(f) => f.into(),
            other => HostError::Runtime(other.to_string()),
        }
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

/// What a finished capture wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapReport {
    /// Where the recording now is (the `path` given to `start`).
    pub path: PathBuf,
    /// Frames in the file.
    pub frames: u64,
    /// Interleaved samples the tap could not push because the ring was full
    /// (the writer fell behind): the file has a gap wherever this happened.
    pub dropped_samples: u64,
    /// Samples that arrived after the file reached the WAV size limit
    /// (4 GiB) and were not written: the file ends early.
    pub overflow_samples: u64,
    /// Channels in the file, for the caller's message.
    pub channels: u16,
    /// Sample rate of the file, for the caller's message and `duration_s`.
    pub sample_rate: u32,
}

impl TapReport {
    /// Whether the file holds every sample pushed to the tap, so the caller
    /// can decide whether a recording with gaps is an error.
    pub fn is_complete(&self) -> bool {
        self.dropped_samples == 0 && self.overflow_samples == 0
    }

    /// The recording's length in seconds.
    pub fn duration_s(&self) -> f64 {
        self.frames as f64 / self.sample_rate as f64
    }
}

/// The control thread's end of a capture: owns the writer thread and the
/// temporary file. Call [`finish`](TapWriter::finish) to keep the
/// recording; dropping it without `finish` discards the recording and
/// removes the temporary file.
pub struct TapWriter {
    thread: Option<JoinHandle<Result<Written, FileError>>>,
    state: Arc<AtomicU8>,
    dropped: Arc<AtomicU64>,
    path: PathBuf,
    channels: u16,
    sample_rate: u32,
}

/// What the writer thread hands back when it stops: the complete
/// temporary file (when it finished rather than discarded) and its counts.
struct Written {
    temp: Option<TempFile>,
    frames: u64,
    overflow_samples: u64,
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

impl TapWriter {
    /// Creates the writer for `path`, which protects no input (a session
    /// checks its capture against its inputs with [`Kind::CAPTURE`] and
    /// [`start_at`](Self::start_at)).
    pub fn start(
        path: &Path,
        channels: u16,
        sample_rate: u32,
        ring_seconds: f64,
    ) -> Result<(TapWriter, Tap), TapError> {
        let ring = ring_frames(path, channels, sample_rate, ring_seconds)?;
        let output = Output::prepare(path, &Inputs::default(), 0, &Kind::CAPTURE)?;
        TapWriter::spawn(output, setup(channels, sample_rate, ring))
    }

    /// Creates the writer at a checked output: the file is written under a
    /// temporary name in the same directory and renamed into place only by
    /// `finish`, so a crash or error never leaves a partial file and never
    /// overwrites an existing file with a truncated one. `ring_seconds`
    /// sizes the ring: how long the writer may stall before samples are
    /// dropped (half a second or more is comfortable).
    ///
    /// Fails early, naming the path, when its directory is not writable or
    /// when the format is impossible (zero channels or rate).
    pub fn start_at(
        output: Output,
        channels: u16,
        sample_rate: u32,
        ring_seconds: f64,
    ) -> Result<(TapWriter, Tap), TapError> {
        let ring = ring_frames(&output.shown, channels, sample_rate, ring_seconds)?;
        TapWriter::spawn(output, setup(channels, sample_rate, ring))
    }

    fn spawn(output: Output, setup: Setup) -> Result<(TapWriter, Tap), TapError> {
        let Setup {
            channels,
            sample_rate,
            ring_frames,
            max_frames,
            paused,
        } = setup;
        let path = output.shown.clone();
        if channels == 0 || sample_rate == 0 {
            return Err(TapError::Setup(format!(
                "cannot capture into `{}`: {channels} channels at {sample_rate} Hz is not a sound format",
                path.display()
            )));
        }
        let temp = output.create_temp()?;
        let spec = hound::WavSpec {
            channels,
            sample_rate,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        };
        // hound owns a second handle on the same file; the temporary file
        // itself syncs, renames or removes it.
        let file = temp.try_clone_file()?;
        let wav = hound::WavWriter::new(BufWriter::new(file), spec)
            .map_err(|e| temp_error(&temp, &path, "cannot write", e))?;
        let (producer, consumer) = RingBuffer::new(ring_frames * channels as usize);
        let state = Arc::new(AtomicU8::new(if paused { PAUSE } else { RUN }));
        let dropped = Arc::new(AtomicU64::new(0));
        let drain = Drain {
            consumer,
            wav,
            temp,
            path: path.clone(),
            channels: channels as u64,
            max_samples: max_frames.saturating_mul(channels as u64),
            samples: 0,
            overflow: 0,
        };
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
                channels,
                sample_rate,
            },
            Tap {
                producer,
                channels: channels as usize,
                dropped,
            },
        ))
    }

    /// Samples dropped so far because the ring was full, so the control
    /// thread can warn while playing rather than only at the end.
    pub fn dropped_samples(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Drains what the tap has pushed so far, finalises the WAV header,
    /// syncs the file and renames it to `path`. Samples the tap pushes after
    /// this call are discarded. The report says what was written and what was
    /// lost; whether a recording with gaps is an error is the caller's call.
    ///
    /// On a write error the temporary file is removed. If only the final
    /// rename fails, the complete recording is kept under its temporary name
    /// and the error says where.
    pub fn finish(mut self) -> Result<TapReport, TapError> {
        self.state.store(FINISH, Ordering::Release);
        let written = self.join()?;
        if let Some(temp) = written.temp {
            temp.commit_or_keep()?;
        }
        Ok(TapReport {
            path: self.path.clone(),
            frames: written.frames,
            dropped_samples: self.dropped.load(Ordering::Relaxed),
            overflow_samples: written.overflow_samples,
            channels: self.channels,
            sample_rate: self.sample_rate,
        })
    }

    /// Waits for the writer thread (taken, so `Drop` does nothing more).
    fn join(&mut self) -> Result<Written, TapError> {
        match self.thread.take() {
            Some(t) => match t.join() {
                Ok(w) => Ok(w?),
                Err(_) => Err(TapError::Panicked),
            },
            None => Err(TapError::Stopped),
        }
    }
}

impl Drop for TapWriter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            // The thread drops its temporary file, which removes it.
            self.state.store(DISCARD, Ordering::Release);
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
        return Err(TapError::Setup(format!(
            "cannot capture into `{}`: the ring length must be a positive number of seconds, not {ring_seconds}",
            path.display()
        )));
    }
    let ring_frames = (ring_seconds * sample_rate as f64).ceil().max(1.0);
    if ring_frames * channels.max(1) as f64 > MAX_RING_SAMPLES as f64 {
        return Err(TapError::Setup(format!(
            "cannot capture into `{}`: a ring of {ring_seconds} s at {sample_rate} Hz × {channels} channels is too large",
            path.display()
        )));
    }
    Ok(ring_frames as usize)
}

/// The setup `start` uses: a running writer, the WAV size limit.
fn setup(channels: u16, sample_rate: u32, ring_frames: usize) -> Setup {
    Setup {
        channels,
        sample_rate,
        ring_frames,
        max_frames: MAX_DATA_BYTES / (4 * channels.max(1) as u64),
        paused: false,
    }
}

/// A hound error while writing the capture's temporary file, naming the
/// capture (the user's path), with its I/O error when it is one.
fn temp_error(temp: &TempFile, path: &Path, doing: &str, e: hound::Error) -> FileError {
    let source = match e {
        hound::Error::IoError(e) => e,
        other => std::io::Error::other(other.to_string()),
    };
    FileError::Io {
        path: path.to_path_buf(),
        context: format!("{doing} the capture `{}`", path.display()),
        source,
        after: temp.aftermath().to_string(),
    }
}

/// The writer thread's state: the ring's consumer and the open file.
struct Drain {
    consumer: Consumer<f32>,
    wav: hound::WavWriter<BufWriter<File>>,
    temp: TempFile,
    path: PathBuf,
    channels: u64,
    max_samples: u64,
    samples: u64,
    overflow: u64,
}

impl Drain {
    /// Drains until told to finish (or the tap is gone); hands back the
    /// finalised temporary file. Discarding, or failing, drops it (which
    /// removes it).
    fn run(mut self, state: &AtomicU8) -> Result<Written, FileError> {
        loop {
            let s = state.load(Ordering::Acquire);
            if s == DISCARD {
                return Ok(self.written(None));
            }
            if s == PAUSE {
                std::thread::sleep(DRAIN_INTERVAL);
                continue;
            }
            // Read before draining: once the tap is gone, one more drain
            // empties the ring for good.
            let abandoned = self.consumer.is_abandoned();
            self.drain()?;
            if s == FINISH || abandoned {
                break;
            }
            std::thread::sleep(DRAIN_INTERVAL);
        }
        let written = self.written(None);
        let Drain {
            wav, temp, path, ..
        } = self;
        wav.finalize()
            .map_err(|e| temp_error(&temp, &path, "cannot finish", e))?;
        Ok(Written {
            temp: Some(temp),
            ..written
        })
    }

    /// Writes everything in the ring, in the ring's own (at most two) slices.
    fn drain(&mut self) -> Result<(), FileError> {
        let n = self.consumer.slots();
        if n == 0 {
            return Ok(());
        }
        // Cannot fail: only this side empties the ring, and `n` slots were full.
        let Ok(chunk) = self.consumer.read_chunk(n) else {
            return Ok(());
        };
        let (a, b) = chunk.as_slices();
        for x in a.iter().chain(b) {
            if self.samples == self.max_samples {
                self.overflow += 1;
                continue;
            }
            if let Err(e) = self.wav.write_sample(*x) {
                return Err(temp_error(&self.temp, &self.path, "cannot write", e));
            }
            self.samples += 1;
        }
        chunk.commit_all();
        Ok(())
    }

    fn written(&self, temp: Option<TempFile>) -> Written {
        Written {
            temp,
            frames: self.samples / self.channels,
            overflow_samples: self.overflow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            TapWriter::spawn(output(&path), setup(100, u64::MAX, true)).unwrap();
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
        let (writer, mut tap) = TapWriter::spawn(output(&path), setup(10, u64::MAX, true)).unwrap();
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
        let (writer, mut tap) = TapWriter::spawn(output(&path), setup(1000, 50, false)).unwrap();
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
