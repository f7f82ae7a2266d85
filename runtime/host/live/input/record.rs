//! The recorded input: a thread that copies the input history
//! ([`super::history`]) into a WAV file beside the journal, so `replay`
//! feeds the session's engines the very samples they read.
//!
//! The file is stored in the source's own format
//! ([`super::LiveInput::format`]): 16- and 24-bit integer sources as
//! integers, through the output rule ([`to_int`]) that exactly inverts the
//! input rule ([`crate::host::files::wav_in::int_to_sample`]); 32-bit
//! float sources as 32-bit float, and an input converted to the session's
//! rate (64-bit float frames) as 64-bit float. Like the capture ([`crate::host::live::tap`]) it
//! grows under its final name with its header's sizes kept current twice a
//! second, so a crash leaves a valid WAV of all but the last second, and
//! [`InputRecorder::durable_until`] says how far that reaches (the journal's
//! progress records go no further, so a journal cut short replays with
//! input it has). The file goes through the one writer, under the output
//! rules ([`Kind::RECORDED_INPUT`]).

use super::history::{History, Miss};
use crate::host::files::digest::file_sha256_hex;
use crate::host::files::error::FileError;
use crate::host::files::rules::Output;
use crate::host::files::wav::{encode_sample, WavFormat};
use crate::host::files::wav_in::InputFormat;
use crate::host::files::write::Existing;
use crate::host::live::tap::Take;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the writer sleeps between copies from the history.
const COPY_INTERVAL: Duration = Duration::from_millis(5);

/// Frames copied from the history at a time.
const CHUNK_FRAMES: u64 = 4096;

/// The WAV format a source of `format` is stored in, and whether that
/// keeps every value exactly: integers of 8, 16, 24 and 32 bits, f32 and
/// f64 (a converted input) are stored as they came; another integer width
/// is stored as 32-bit float, which rounds it.
pub fn stored_format(format: InputFormat) -> (WavFormat, bool) {
    match format {
        InputFormat::Int(8) => (WavFormat::U8, true),
        InputFormat::Int(16) => (WavFormat::I16, true),
        InputFormat::Int(24) => (WavFormat::I24, true),
        InputFormat::Int(32) => (WavFormat::I32, true),
        InputFormat::F32 => (WavFormat::F32, true),
        InputFormat::F64 => (WavFormat::F64, true),
        InputFormat::Int(_) => (WavFormat::F32, false),
    }
}

/// What a finished recording holds.
#[derive(Debug)]
pub struct RecordedInput {
    pub path: PathBuf,
    /// Frames in the file, from the session's first.
    pub frames: u64,
    /// Frames the writer found overwritten in the history (it fell behind
    /// by more than the history holds): stored as silence.
    pub lost_frames: u64,
    /// SHA-256 of the whole file, as `replay` checks it.
    pub sha256: String,
    /// The write error that stopped the file early, if one did.
    pub error: Option<FileError>,
}

/// Why the recorded input cannot be finished.
#[derive(Debug)]
pub enum RecordError {
    /// The writer thread panicked.
    Panicked,
    /// The file cannot be read back to hash it.
    ReadBack {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Panicked => f.write_str("the recorded input's writer thread panicked"),
            RecordError::ReadBack { path, source } => write!(
                f,
                "cannot read back the recorded input `{}`: {source}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Panicked => None,
            RecordError::ReadBack { source, .. } => Some(source),
        }
    }
}

/// The thread writing the recorded input.
pub struct InputRecorder {
    thread: Option<std::thread::JoinHandle<Copier>>,
    stop: Arc<AtomicBool>,
    durable: Arc<AtomicU64>,
    path: PathBuf,
}

/// The writer thread's state.
struct Copier {
    history: History,
    take: Option<Take>,
    format: WavFormat,
    /// The engine sample of the next frame to write.
    next: u64,
    lost: u64,
    scratch: Vec<f64>,
    durable: Arc<AtomicU64>,
}

impl InputRecorder {
    /// Creates the file at a checked output (new, or replacing a file only
    /// with [`Existing::Replace`]) and starts copying `history` into it.
    pub fn start(
        output: Output,
        existing: Existing,
        history: History,
        format: InputFormat,
        sample_rate: u32,
    ) -> Result<InputRecorder, FileError> {
        let path = output.shown.clone();
        let (stored, _) = stored_format(format);
        let channels = history.width() as u16;
        let take = Take::create_file(output, existing, channels, sample_rate, stored)?;
        let durable = Arc::new(AtomicU64::new(history.origin()));
        let stop = Arc::new(AtomicBool::new(false));
        let copier = Copier {
            next: history.origin(),
            history,
            take: Some(take),
            format: stored,
            lost: 0,
            scratch: Vec::new(),
            durable: durable.clone(),
        };
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("morphrt-input-record".into())
            .spawn(move || copier.run(&st))
            .map_err(|e| {
                FileError::io(
                    &path,
                    "cannot start the recorded input's writer".to_string(),
                    e,
                )
            })?;
        Ok(InputRecorder {
            thread: Some(thread),
            stop,
            durable,
            path,
        })
    }

    /// The engine sample up to which the file's header counts the frames
    /// (synced): what a crash leaves readable.
    pub fn durable_until(&self) -> u64 {
        self.durable.load(Ordering::Relaxed)
    }

    /// Copies what the history holds beyond the file, writes the final
    /// sizes and hashes the file. Call once the callback has stopped.
    pub fn finish(mut self) -> Result<RecordedInput, RecordError> {
        self.stop.store(true, Ordering::Release);
        let copier = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .ok_or(RecordError::Panicked)?;
        let Copier { take, lost, .. } = copier;
        let (frames, error) = take.map(Take::finish).unwrap_or((0, None));
        let sha256 = file_sha256_hex(&self.path).map_err(|source| RecordError::ReadBack {
            path: self.path.clone(),
            source,
        })?;
        Ok(RecordedInput {
            path: self.path.clone(),
            frames,
            lost_frames: lost,
            sha256,
            error,
        })
    }
}

impl Drop for InputRecorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            if let Ok(c) = t.join() {
                if let Some(take) = c.take {
                    let _ = take.finish();
                }
            }
        }
    }
}

impl Copier {
    fn run(mut self, stop: &AtomicBool) -> Copier {
        loop {
            let last = stop.load(Ordering::Acquire);
            self.copy_available();
            if let Some(take) = &mut self.take {
                take.keep_current();
                let held = self.history.origin() + take.frames_in_header();
                self.durable.store(held, Ordering::Relaxed);
            }
            if last {
                return self;
            }
            std::thread::sleep(COPY_INTERVAL);
        }
    }

    /// Writes every frame the history has beyond the file; frames it lost
    /// (overwritten before they were copied) are written as silence.
    fn copy_available(&mut self) {
        let width = self.history.width();
        let Some(take) = self.take.as_mut() else {
            return;
        };
        let format = self.format;
        loop {
            let written = self.history.written();
            if self.next >= written {
                return;
            }
            let n = (written - self.next).min(CHUNK_FRAMES);
            self.scratch.resize(n as usize * width, 0.0);
            match self.history.copy(self.next, &mut self.scratch) {
                Ok(()) => {}
                Err(Miss::Gone(first)) => {
                    let gap = (first - self.next).min(CHUNK_FRAMES);
                    self.scratch.resize(gap as usize * width, 0.0);
                    self.scratch.fill(0.0);
                    self.lost += gap;
                }
                Err(Miss::NotYet(_)) => return,
            }
            take.write_with(&self.scratch, |x, out| {
                encode_sample(*x, format, out);
            });
            self.next += (self.scratch.len() / width) as u64;
        }
    }
}
