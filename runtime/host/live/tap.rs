//! Recording exactly what went to the audio device (`morphrt run --capture
//! FILE.wav`).
//!
//! The callback copies its interleaved output into a wait-free
//! single-producer single-consumer ring ([`Tap::push`]); a writer
//! thread drains the ring every few milliseconds into a 32-bit float WAV
//! file. The callback therefore never allocates, frees, locks, blocks or
//! does I/O for the recording: when the writer falls behind, the samples that
//! do not fit are counted, not waited for.
//!
//! The file is written under a temporary name in the destination directory
//! and renamed into place only by [`TapWriter::finish`], so a crash or an
//! error never leaves a truncated file under the requested name, nor
//! replaces an existing file with one.

use rtrb::{Consumer, Producer, RingBuffer};
use std::fs::{File, OpenOptions};
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
/// Stop without finishing; the owner removes the temporary file.
const DISCARD: u8 = 3;

/// Numbers each temporary file, so that two captures to the same path in
/// one process never share one.
static TEMP_SERIAL: AtomicU64 = AtomicU64::new(0);

/// The audio thread's end of a tap: moved into the player, fed once per
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

/// What a finished tap wrote.
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

/// The control thread's end of a tap: owns the writer thread and the
/// temporary file. Call [`finish`](TapWriter::finish) to keep the
/// recording; dropping it without `finish` discards the recording and
/// removes the temporary file.
pub struct TapWriter {
    thread: Option<JoinHandle<Result<Written, String>>>,
    state: Arc<AtomicU8>,
    dropped: Arc<AtomicU64>,
    path: PathBuf,
    temp: PathBuf,
    channels: u16,
    sample_rate: u32,
}

/// What the writer thread hands back when it stops.
struct Written {
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
    /// Creates the writer: the file is written under a temporary name in the
    /// same directory and renamed to `path` only by `finish`, so a crash or
    /// error never leaves a partial file and never overwrites an existing
    /// file with a truncated one. `ring_seconds` sizes the ring: how long
    /// the writer may stall before samples are dropped (half a second or more
    /// is comfortable).
    ///
    /// Fails early, naming the path, when `path` is a directory, when its
    /// directory is missing or not writable, or when the format is
    /// impossible (zero channels or rate).
    pub fn start(
        path: &Path,
        channels: u16,
        sample_rate: u32,
        ring_seconds: f64,
    ) -> Result<(TapWriter, Tap), String> {
        if !(ring_seconds.is_finite() && ring_seconds > 0.0) {
            return Err(format!(
                "cannot capture into `{}`: the ring length must be a positive number of seconds, not {ring_seconds}",
                path.display()
            ));
        }
        let ring_frames = (ring_seconds * sample_rate as f64).ceil().max(1.0);
        if ring_frames * channels.max(1) as f64 > MAX_RING_SAMPLES as f64 {
            return Err(format!(
                "cannot capture into `{}`: a ring of {ring_seconds} s at {sample_rate} Hz × {channels} channels is too large",
                path.display()
            ));
        }
        let max_frames = MAX_DATA_BYTES / (4 * channels.max(1) as u64);
        TapWriter::spawn(
            path,
            Setup {
                channels,
                sample_rate,
                ring_frames: ring_frames as usize,
                max_frames,
                paused: false,
            },
        )
    }

    fn spawn(path: &Path, setup: Setup) -> Result<(TapWriter, Tap), String> {
        let Setup {
            channels,
            sample_rate,
            ring_frames,
            max_frames,
            paused,
        } = setup;
        if channels == 0 || sample_rate == 0 {
            return Err(format!(
                "cannot capture into `{}`: {channels} channels at {sample_rate} Hz is not a sound format",
                path.display()
            ));
        }
        let (temp, file) = create_temp(path)?;
        let remove_temp = |e: String| {
            let _ = std::fs::remove_file(&temp);
            e
        };
        let spec = hound::WavSpec {
            channels,
            sample_rate,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        };
        // A second handle on the same file, to sync it before the rename.
        let sync_handle = file
            .try_clone()
            .map_err(|e| remove_temp(format!("cannot write `{}`: {e}", temp.display())))?;
        let wav = hound::WavWriter::new(BufWriter::new(file), spec)
            .map_err(|e| remove_temp(format!("cannot write `{}`: {e}", temp.display())))?;
        let (producer, consumer) = RingBuffer::new(ring_frames * channels as usize);
        let state = Arc::new(AtomicU8::new(if paused { PAUSE } else { RUN }));
        let dropped = Arc::new(AtomicU64::new(0));
        let drain = Drain {
            consumer,
            wav,
            file: sync_handle,
            temp: temp.clone(),
            channels: channels as u64,
            max_samples: max_frames.saturating_mul(channels as u64),
            samples: 0,
            overflow: 0,
        };
        let st = state.clone();
        let thread = std::thread::Builder::new()
            .name("morphrt-capture".into())
            .spawn(move || drain.run(&st))
            .map_err(|e| remove_temp(format!("cannot start the capture writer: {e}")))?;
        Ok((
            TapWriter {
                thread: Some(thread),
                state,
                dropped: dropped.clone(),
                path: path.to_path_buf(),
                temp,
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
    pub fn finish(mut self) -> Result<TapReport, String> {
        self.state.store(FINISH, Ordering::Release);
        let written = match self.join() {
            Ok(w) => w,
            Err(e) => {
                let _ = std::fs::remove_file(&self.temp);
                return Err(e);
            }
        };
        std::fs::rename(&self.temp, &self.path).map_err(|e| {
            format!(
                "cannot move the capture into `{}`: {e}; the complete recording is in `{}`",
                self.path.display(),
                self.temp.display()
            )
        })?;
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
    fn join(&mut self) -> Result<Written, String> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err("the capture writer thread panicked".into())),
            None => Err("the capture writer has already stopped".into()),
        }
    }
}

impl Drop for TapWriter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.state.store(DISCARD, Ordering::Release);
            let _ = self.join();
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Checks the destination and creates the temporary file next to it (which
/// is also the writability check: it names the directory when it fails).
fn create_temp(path: &Path) -> Result<(PathBuf, File), String> {
    let shown = path.display();
    let ends_with_separator = path
        .as_os_str()
        .to_string_lossy()
        .ends_with(std::path::is_separator);
    if path.is_dir() || ends_with_separator {
        return Err(format!(
            "cannot capture into `{shown}`: it is a directory; give a file name such as `{}`",
            path.join("capture.wav").display()
        ));
    }
    let name = path
        .file_name()
        .ok_or_else(|| format!("cannot capture into `{shown}`: it names no file"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "cannot capture into `{shown}`: the directory `{}` does not exist",
            dir.display()
        ));
    }
    let temp = dir.join(format!(
        ".{}.{}-{}.partial",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|e| {
            format!(
                "cannot capture into `{shown}`: cannot write in the directory `{}`: {e}",
                dir.display()
            )
        })?;
    Ok((temp, file))
}

/// The writer thread's state: the ring's consumer and the open file.
struct Drain {
    consumer: Consumer<f32>,
    wav: hound::WavWriter<BufWriter<File>>,
    file: File,
    temp: PathBuf,
    channels: u64,
    max_samples: u64,
    samples: u64,
    overflow: u64,
}

impl Drain {
    fn run(mut self, state: &AtomicU8) -> Result<Written, String> {
        loop {
            let s = state.load(Ordering::Acquire);
            if s == DISCARD {
                return Ok(self.written());
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
        let written = self.written();
        let err =
            |e: &dyn std::fmt::Display| format!("cannot finish `{}`: {e}", self.temp.display());
        self.wav.finalize().map_err(|e| err(&e))?;
        self.file.sync_all().map_err(|e| err(&e))?;
        Ok(written)
    }

    /// Writes everything in the ring, in the ring's own (at most two) slices.
    fn drain(&mut self) -> Result<(), String> {
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
            self.wav
                .write_sample(*x)
                .map_err(|e| format!("cannot write `{}`: {e}", self.temp.display()))?;
            self.samples += 1;
        }
        chunk.commit_all();
        Ok(())
    }

    fn written(&self) -> Written {
        Written {
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
        let (writer, mut tap) = TapWriter::spawn(&path, setup(100, u64::MAX, true)).unwrap();
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
        let (writer, mut tap) = TapWriter::spawn(&path, setup(10, u64::MAX, true)).unwrap();
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
        let (writer, mut tap) = TapWriter::spawn(&path, setup(1000, 50, false)).unwrap();
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
            let e = TapWriter::start(&path, 2, 48_000, secs).err().unwrap();
            assert!(e.contains("c.wav"), "{e}");
        }
        for (ch, rate) in [(0, 48_000), (2, 0)] {
            let e = TapWriter::start(&path, ch, rate, 1.0).err().unwrap();
            assert!(e.contains("not a sound format"), "{e}");
        }
        // None of the refusals left a file behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}
