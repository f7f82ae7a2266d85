//! The input a journaled session read, fed back by `replay`.
//!
//! `run` keeps what the callback read beside the journal, a WAV file in the
//! source's own format, and journals it in two records: [`Record::Input`]
//! when the session starts (the file, its format and the engine sample of
//! its first frame: the session's start clock, a resumed session's
//! snapshot sample) and [`Record::InputEnd`] when it ends (its frames and
//! SHA-256). `replay` refuses a journal whose file is missing, or changed
//! when the end record gives its SHA-256; a journal cut short by a crash
//! has no end record and replays with the frames the file holds.
//!
//! Every engine of the replay reads the file through its own
//! [`RecordedFeed`], which seeks to the engine's clock: a handover's new
//! engine fast-forwards from its save sample N with the input of N..S,
//! as the live one did.
//!
//! [`Record::Input`]: super::journal::Record::Input
//! [`Record::InputEnd`]: super::journal::Record::InputEnd

use crate::engine::{InputBlock, InputFeed};
use crate::host::files::digest::file_sha256_hex;
use crate::host::files::wav_in::int_to_sample;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

/// The name of the recorded input beside a journal: `take.jsonl` →
/// `take.input.wav`.
pub fn recorded_name(journal: &Path) -> PathBuf {
    let stem = journal.file_stem().unwrap_or_default().to_string_lossy();
    journal.with_file_name(format!("{stem}.input.wav"))
}

/// A journal's recorded input, checked: where it is and where it starts.
#[derive(Clone, Debug)]
pub struct RecordedInputFile {
    pub path: PathBuf,
    /// The engine sample of the file's first frame.
    pub origin: u64,
    pub channels: usize,
}

/// Why a journal's recorded input cannot be replayed; each names the file.
#[derive(Debug)]
pub enum RecordedInputError {
    /// The file is missing, or not a regular file.
    Missing {
        path: PathBuf,
        source: crate::scene::resource::NotRegular,
    },
    /// The file could not be read to hash it.
    Unreadable { path: PathBuf, source: io::Error },
    /// Its SHA-256 is not the one the journal's end record gives.
    Changed {
        path: PathBuf,
        sha256: String,
        expected: String,
    },
    /// It is not a WAV file the reader opens (`feed`: no longer).
    NotWav {
        path: PathBuf,
        source: hound::Error,
        /// Whether the file was being opened for a feed, after it was checked.
        feed: bool,
    },
    /// It holds another channel count or rate than the journal says.
    Shape {
        path: PathBuf,
        channels: u16,
        sample_rate: u32,
        expected: (usize, u32),
    },
}

impl std::fmt::Display for RecordedInputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordedInputError::Missing { path, source } => write!(
                f,
                "the session's recorded input `{}` cannot be read ({source}); a replay needs the input the session read",
                path.display()
            ),
            RecordedInputError::Unreadable { path, source } => {
                write!(f, "cannot read the recorded input `{}`: {source}", path.display())
            }
            RecordedInputError::Changed {
                path,
                sha256,
                expected,
            } => write!(
                f,
                "the session's recorded input `{}` has changed (SHA-256 {sha256}, the journal says {expected})",
                path.display()
            ),
            RecordedInputError::NotWav {
                path,
                source,
                feed: false,
            } => write!(
                f,
                "the recorded input `{}` is not a readable WAV: {source}",
                path.display()
            ),
            RecordedInputError::NotWav {
                path,
                source,
                feed: true,
            } => write!(f, "cannot read the recorded input `{}`: {source}", path.display()),
            RecordedInputError::Shape {
                path,
                channels,
                sample_rate,
                expected: (want_channels, want_rate),
            } => write!(
                f,
                "the recorded input `{}` holds {channels} ch at {sample_rate} Hz, the journal says {want_channels} ch at {want_rate} Hz",
                path.display()
            ),
        }
    }
}

impl std::error::Error for RecordedInputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordedInputError::Missing {
                source: crate::scene::resource::NotRegular::Io(e),
                ..
            }
            | RecordedInputError::Unreadable { source: e, .. } => Some(e),
            RecordedInputError::NotWav { source, .. } => Some(source),
            RecordedInputError::Missing { .. }
            | RecordedInputError::Changed { .. }
            | RecordedInputError::Shape { .. } => None,
        }
    }
}

impl RecordedInputFile {
    /// Checks the file a journal names (`file`, relative to the journal's
    /// directory `dir`): it exists, plays at `sample_rate` with `channels`
    /// channels, and has the SHA-256 `sha256` when the journal says one.
    pub fn check(
        dir: &Path,
        file: &str,
        origin: u64,
        channels: usize,
        sample_rate: u32,
        sha256: Option<&str>,
    ) -> Result<RecordedInputFile, RecordedInputError> {
        let path = dir.join(file);
        if let Err(source) = crate::scene::resource::open_regular(&path) {
            return Err(RecordedInputError::Missing { path, source });
        }
        if let Some(want) = sha256 {
            let got = match file_sha256_hex(&path) {
                Ok(got) => got,
                Err(source) => return Err(RecordedInputError::Unreadable { path, source }),
            };
            if got != want {
                return Err(RecordedInputError::Changed {
                    path,
                    sha256: got,
                    expected: want.to_string(),
                });
            }
        }
        let spec = match F64Wav::open(&path) {
            Ok(Some(f)) => f.spec,
            _ => match hound::WavReader::open(&path) {
                Ok(r) => r.spec(),
                Err(source) => {
                    return Err(RecordedInputError::NotWav {
                        path,
                        source,
                        feed: false,
                    })
                }
            },
        };
        if spec.channels as usize != channels || spec.sample_rate != sample_rate {
            return Err(RecordedInputError::Shape {
                path,
                channels: spec.channels,
                sample_rate: spec.sample_rate,
                expected: (channels, sample_rate),
            });
        }
        Ok(RecordedInputFile {
            path,
            origin,
            channels,
        })
    }

    /// A feed of the file for one engine (its own reader).
    pub fn feed(&self) -> Result<Box<dyn InputFeed>, RecordedInputError> {
        if let Ok(Some(f)) = F64Wav::open(&self.path) {
            return Ok(Box::new(F64Feed {
                origin: self.origin,
                pos: self.origin,
                scratch: Vec::new(),
                bytes: Vec::new(),
                file: f,
            }));
        }
        let reader =
            hound::WavReader::open(&self.path).map_err(|source| RecordedInputError::NotWav {
                path: self.path.clone(),
                source,
                feed: true,
            })?;
        Ok(Box::new(RecordedFeed {
            frames: reader.duration() as u64,
            spec: reader.spec(),
            reader,
            origin: self.origin,
            pos: self.origin,
            scratch: Vec::new(),
        }))
    }
}

/// One engine's reader of a recorded input: frame `n − origin` of the file
/// at engine sample `n`; silence outside the file.
pub struct RecordedFeed {
    reader: hound::WavReader<BufReader<std::fs::File>>,
    spec: hound::WavSpec,
    frames: u64,
    origin: u64,
    /// The engine sample of the frame the reader yields next.
    pos: u64,
    scratch: Vec<f64>,
}

impl RecordedFeed {
    /// Reads `frames` interleaved frames at engine sample `start` into the
    /// scratch buffer; those the file does not have are silence.
    fn fill(&mut self, start: u64, frames: usize) {
        let ch = self.spec.channels as usize;
        self.scratch.clear();
        self.scratch.resize(frames * ch, 0.0);
        let Some(first) = start.checked_sub(self.origin) else {
            return;
        };
        if first >= self.frames {
            return;
        }
        if start != self.pos {
            let Ok(at) = u32::try_from(first) else {
                return;
            };
            if self.reader.seek(at).is_err() {
                return;
            }
        }
        let n = (self.frames - first).min(frames as u64) as usize * ch;
        let bits = self.spec.bits_per_sample;
        let float = self.spec.sample_format == hound::SampleFormat::Float;
        for d in &mut self.scratch[..n] {
            let x = if float {
                self.reader
                    .samples::<f32>()
                    .next()
                    .map(|s| s.map(f64::from))
            } else {
                self.reader
                    .samples::<i32>()
                    .next()
                    .map(|s| s.map(|v| int_to_sample(v, bits)))
            };
            match x {
                Some(Ok(x)) => *d = x,
                _ => break,
            }
        }
        self.pos = start + (n / ch) as u64;
    }
}

impl InputFeed for RecordedFeed {
    fn read(&mut self, start: u64, block: &mut InputBlock<'_>) {
        let frames = block.frames();
        self.fill(start, frames);
        let scratch = std::mem::take(&mut self.scratch);
        block.load_interleaved(&scratch, self.spec.channels as usize);
        self.scratch = scratch;
    }
}

/// A recorded input of 64-bit float samples (a converted input), which
/// hound does not read: its shape and where its samples are.
struct F64Wav {
    file: BufReader<std::fs::File>,
    spec: hound::WavSpec,
    /// Byte offset of the first sample.
    data: u64,
    frames: u64,
}

impl F64Wav {
    /// `Some` when `path` is a RIFF WAV of 64-bit IEEE float samples (the
    /// plain or the extensible `fmt `), `None` when it is another WAV.
    fn open(path: &Path) -> io::Result<Option<F64Wav>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = BufReader::new(std::fs::File::open(path)?);
        let mut riff = [0u8; 12];
        file.read_exact(&mut riff)?;
        if &riff[..4] != b"RIFF" || &riff[8..] != b"WAVE" {
            return Ok(None);
        }
        let mut spec = None;
        loop {
            let mut head = [0u8; 8];
            file.read_exact(&mut head)?;
            let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
            match &head[..4] {
                b"fmt " if len >= 16 => {
                    let mut fmt = vec![0u8; len as usize];
                    file.read_exact(&mut fmt)?;
                    let u16_at = |i: usize| u16::from_le_bytes([fmt[i], fmt[i + 1]]);
                    let tag = match u16_at(0) {
                        0xfffe if len >= 26 => u16_at(24),
                        t => t,
                    };
                    if tag != 3 || u16_at(14) != 64 {
                        return Ok(None);
                    }
                    spec = Some(hound::WavSpec {
                        channels: u16_at(2),
                        sample_rate: u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]),
                        bits_per_sample: 64,
                        sample_format: hound::SampleFormat::Float,
                    });
                    file.seek(SeekFrom::Current((len & 1) as i64))?;
                }
                b"data" => {
                    let Some(spec) = spec.filter(|s| s.channels > 0) else {
                        return Ok(None);
                    };
                    let data = file.stream_position()?;
                    let frames = len / (8 * spec.channels as u64);
                    return Ok(Some(F64Wav {
                        file,
                        spec,
                        data,
                        frames,
                    }));
                }
                _ => {
                    file.seek(SeekFrom::Current((len + (len & 1)) as i64))?;
                }
            }
        }
    }
}

/// One engine's reader of a 64-bit float recorded input, as
/// [`RecordedFeed`] reads the others: frame `n − origin` at engine sample
/// `n`, silence outside the file.
struct F64Feed {
    file: F64Wav,
    origin: u64,
    /// The engine sample of the frame the reader yields next.
    pos: u64,
    scratch: Vec<f64>,
    bytes: Vec<u8>,
}

impl F64Feed {
    fn fill(&mut self, start: u64, frames: usize) {
        use std::io::{Read, Seek, SeekFrom};
        let ch = self.file.spec.channels as usize;
        self.scratch.clear();
        self.scratch.resize(frames * ch, 0.0);
        let Some(first) = start.checked_sub(self.origin) else {
            return;
        };
        if first >= self.file.frames {
            return;
        }
        if start != self.pos {
            let at = self.file.data + first * ch as u64 * 8;
            if self.file.file.seek(SeekFrom::Start(at)).is_err() {
                return;
            }
        }
        let n = (self.file.frames - first).min(frames as u64) as usize * ch;
        self.bytes.resize(n * 8, 0);
        if self.file.file.read_exact(&mut self.bytes).is_err() {
            self.pos = u64::MAX;
            return;
        }
        for (d, b) in self.scratch.iter_mut().zip(self.bytes.chunks_exact(8)) {
            *d = f64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        self.pos = start + (n / ch) as u64;
    }
}

impl InputFeed for F64Feed {
    fn read(&mut self, start: u64, block: &mut InputBlock<'_>) {
        let frames = block.frames();
        self.fill(start, frames);
        let scratch = std::mem::take(&mut self.scratch);
        block.load_interleaved(&scratch, self.file.spec.channels as usize);
        self.scratch = scratch;
    }
}
