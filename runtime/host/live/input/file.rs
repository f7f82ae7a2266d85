//! A file played as the session's input (`run --input FILE`), as if it
//! were an input device: a reader thread decodes the file ([`WavInput`])
//! and, when its rate is not the session's, converts it as `render
//! --input` does ([`Source`]), into a wait-free ring of f64 frames at the
//! session's rate, and keeps the ring full; the callback takes one block
//! from it per block of output. The ring is filled before the session
//! plays and holds two seconds, so the file is paced by the output (the
//! clock device included) and the callback never waits for the disk.
//! After the file's last frame the input is silence
//! ([`FileInputStatus::ended`] says when).

use super::LiveInput;
use crate::graph::Plan;
use crate::host::files::wav_in::{check_fits, InputFormat, WavInput};
use crate::host::offline::input::Source;
use crate::host::HostError;
use crate::scene::Diagnostic;
use rtrb::{Consumer, Producer, RingBuffer};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Seconds of input the ring holds ahead of the callback.
const RING_SECONDS: f64 = 2.0;

/// How long the reader sleeps between top-ups of the ring.
const TOP_UP_INTERVAL: Duration = Duration::from_millis(5);

/// What the reader thread and the callback tell the control thread.
#[derive(Default)]
pub struct FileInputStatus {
    /// Set once the file's frames have all been delivered to the ring.
    done: AtomicBool,
    /// Frames the file had at the session's rate (valid once `done`).
    frames: AtomicU64,
    /// Set once the callback has taken the last frame: from then on the
    /// input is silence.
    ended: AtomicBool,
    /// Frames the callback found missing while the file still had some
    /// (the reader fell behind): they were read as silence.
    late_frames: AtomicU64,
    /// Why the file stopped early (a decoding error), if it did.
    error: std::sync::Mutex<Option<String>>,
}

impl FileInputStatus {
    /// The file's length in frames, once the callback has played past it.
    pub fn ended(&self) -> Option<u64> {
        self.ended
            .load(Ordering::Acquire)
            .then(|| self.frames.load(Ordering::Relaxed))
    }

    /// Frames read as silence because the reader fell behind.
    pub fn late_frames(&self) -> u64 {
        self.late_frames.load(Ordering::Relaxed)
    }

    /// The error that ended the file early, once (taken).
    pub fn take_error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }
}

/// The callback's end of a file played as input.
pub struct FileInput {
    ring: Consumer<f64>,
    channels: usize,
    format: InputFormat,
    status: Arc<FileInputStatus>,
    _reader: Reader,
}

/// The reader thread, stopped and joined when the input is dropped (off
/// the audio thread, with the player).
struct Reader {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file opened as the session's input: the callback's end, and what it
/// tells the control thread.
pub type Opened = (Box<dyn LiveInput>, Arc<FileInputStatus>);

/// Opens `path` as the input of a session playing `plan`: the file must
/// have every channel a node reads (exit 2, naming both; see
/// [`check_fits`]); at another rate than the session's it is converted,
/// which `log` is told. The ring is full when this returns.
pub fn open(path: &Path, plan: &Plan, log: &mut dyn std::io::Write) -> Result<Opened, HostError> {
    let refused = |msg: String| {
        HostError::Input(vec![Diagnostic::error(
            &path.display().to_string(),
            None,
            msg,
        )])
    };
    if path == Path::new("-") {
        return Err(refused(
            "`run` reads no standard input as audio: its standard input carries the session's commands (s, r, l, w, t, q, one per line); give the input as a WAV file (`run --input FILE.wav`), or render from standard input offline (`render --input -`)".to_string(),
        ));
    }
    let wav = WavInput::open(path).map_err(|e| refused(e.to_string()))?;
    // The diagnostic names the file; the message calls it what it is.
    check_fits("the input file", wav.channels(), plan, log).map_err(|e| refused(e.to_string()))?;
    let shown = format!("`{}`", wav.name());
    let (source, conversion) = Source::new(&shown, wav, plan)?;
    if let Some(c) = conversion {
        let _ = writeln!(log, "converted: {c}");
    }
    let sample_rate = plan.sample_rate;
    let width = source.channels();
    let format = source.format();
    let capacity = (RING_SECONDS * sample_rate as f64).ceil() as usize * width;
    let (mut producer, ring) = RingBuffer::new(capacity);
    let status = Arc::new(FileInputStatus::default());
    let mut feeder = Feeder {
        source,
        scratch: Vec::new(),
        status: status.clone(),
    };
    feeder.top_up(&mut producer);
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("morphrt-input-file".into())
            .spawn(move || feeder.run(producer, &stop))
            .map_err(|source| HostError::Thread {
                what: "the input reader",
                source,
            })?
    };
    let input = FileInput {
        ring,
        channels: width,
        format,
        status: status.clone(),
        _reader: Reader {
            stop,
            thread: Some(thread),
        },
    };
    Ok((Box::new(input), status))
}

/// The reader thread's state: the file and a buffer of decoded frames.
struct Feeder {
    source: Source,
    scratch: Vec<f64>,
    status: Arc<FileInputStatus>,
}

impl Feeder {
    fn run(mut self, mut producer: Producer<f64>, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) && !self.status.done.load(Ordering::Relaxed) {
            self.top_up(&mut producer);
            std::thread::sleep(TOP_UP_INTERVAL);
        }
    }

    /// Fills the ring's free room with whole frames of the file; at its
    /// end, says so.
    fn top_up(&mut self, producer: &mut Producer<f64>) {
        let width = self.source.channels();
        let room = producer.slots() / width * width;
        if room == 0 || self.status.done.load(Ordering::Relaxed) {
            return;
        }
        self.scratch.resize(room, 0.0);
        let frames = self.source.read_interleaved(&mut self.scratch);
        if let Ok(chunk) = producer.write_chunk_uninit(frames * width) {
            chunk.fill_from_iter(self.scratch[..frames * width].iter().copied());
        }
        if let Some(total) = self.source.ended() {
            if let Some(e) = self.source.error() {
                if let Ok(mut slot) = self.status.error.lock() {
                    *slot = Some(e);
                }
            }
            self.status.frames.store(total, Ordering::Relaxed);
            self.status.done.store(true, Ordering::Release);
        }
    }
}

impl LiveInput for FileInput {
    fn channels(&self) -> usize {
        self.channels
    }

    fn format(&self) -> InputFormat {
        self.format
    }

    /// Real-time safe: pops from the ring; what it lacks is silence,
    /// counted as late unless the file has ended.
    fn read(&mut self, dst: &mut [f64]) {
        let done = self.status.done.load(Ordering::Acquire);
        let have = self.ring.slots().min(dst.len());
        let have = have - have % self.channels;
        if let Ok(chunk) = self.ring.read_chunk(have) {
            let (a, b) = chunk.as_slices();
            dst[..a.len()].copy_from_slice(a);
            dst[a.len()..a.len() + b.len()].copy_from_slice(b);
            chunk.commit_all();
        }
        dst[have..].fill(0.0);
        let missing = ((dst.len() - have) / self.channels) as u64;
        if missing == 0 {
            return;
        }
        if done {
            self.status.ended.store(true, Ordering::Release);
        } else {
            self.status
                .late_frames
                .fetch_add(missing, Ordering::Relaxed);
        }
    }
}
