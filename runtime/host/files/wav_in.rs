//! Reading a WAV file as the session's audio input (`render --input`,
//! `run --input`, a journal's recorded input): streamed frame by frame, so
//! an hour-long recording or a pipe from `sox` is never held in memory.
//!
//! Integer samples of `b` bits are scaled by 1/(2^(b−1)−1): the exact
//! inverse of the integer output rule (scale by 2^(b−1)−1, round half to
//! even), so a 16- or 24-bit input written back in its own format through
//! an identity scene keeps every value; 32-bit float samples are taken as
//! they are (an f32 input through an f32 or f64 scene is written back bit
//! for bit as f32).
//!
//! A file is refused up front when it is not a regular file (a FIFO would
//! wait forever for a writer), not a WAV, a format not read, cut short of
//! what its header declares, or has no frames; standard input is read as
//! it comes, its end being where the data ends.

use crate::engine::{InputBlock, InputFeed};
use crate::ops::{is_short_read, unreadable_wav, WAV_FORMATS_READ};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The sample format of an input, as stored: integer PCM of `bits` bits,
/// or 32-bit float.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    Int(u16),
    F32,
}

impl InputFormat {
    /// In words, for summaries: `16-bit integer`, `32-bit float`.
    pub fn describe(self) -> String {
        match self {
            InputFormat::Int(b) => format!("{b}-bit integer"),
            InputFormat::F32 => "32-bit float".to_string(),
        }
    }
}

/// An integer sample of `bits` bits as the engine reads it: `v / (2^(bits−1) − 1)`.
#[inline]
pub fn int_to_sample(v: i32, bits: u16) -> f64 {
    v as f64 / ((1i64 << (bits.clamp(2, 32) - 1)) - 1) as f64
}

/// An input WAV being read, from a file or standard input.
pub struct WavInput {
    /// The path as given, or `standard input`.
    name: String,
    path: Option<PathBuf>,
    spec: hound::WavSpec,
    /// Frames the header declares (unreliable on a pipe: see `frames`).
    declared: u64,
    reader: hound::WavReader<Box<dyn Read + Send>>,
    /// Frames delivered so far.
    read: u64,
    /// Set once the data ended: the frame count.
    ended: Option<u64>,
    /// A decoding failure part-way (the input counts as ended there).
    error: Option<String>,
    /// One block of interleaved frames, for [`InputFeed::read`].
    scratch: Vec<f64>,
}

impl std::fmt::Debug for WavInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavInput")
            .field("name", &self.name)
            .field("spec", &self.spec)
            .field("declared", &self.declared)
            .finish()
    }
}

impl WavInput {
    /// Opens a WAV file; what is not a readable, complete WAV with at least
    /// one frame is refused with a message naming the file.
    pub fn open(path: &Path) -> Result<WavInput, String> {
        use crate::scene::resource::{open_regular, NotRegular};
        let shown = path.display();
        let file = open_regular(path).map_err(|e| match e {
            NotRegular::Kind(k) => format!("`{shown}` is {k}, not a WAV file"),
            NotRegular::Io(e) => format!("cannot read `{shown}`: {e}"),
        })?;
        let len = file
            .metadata()
            .map_err(|e| format!("cannot read `{shown}`: {e}"))?
            .len();
        if len == 0 {
            return Err(format!(
                "`{shown}` is empty (0 bytes), not a WAV file; {WAV_FORMATS_READ}"
            ));
        }
        let boxed: Box<dyn Read + Send> = Box::new(std::io::BufReader::new(file));
        let reader = hound::WavReader::new(boxed).map_err(|e| unreadable_wav(path, &e))?;
        let input = WavInput::from_reader(shown.to_string(), Some(path.to_path_buf()), reader)?;
        let data = input.declared * input.frame_bytes();
        // The smallest header is 44 bytes: a file shorter than that plus
        // its declared data was cut short.
        if len < data + 44 {
            return Err(format!(
                "`{shown}` is cut short: its header declares {} frames ({data} bytes of samples), but the file is {len} bytes (was it not completely written?)",
                input.declared
            ));
        }
        Ok(input)
    }

    /// Reads a WAV from standard input (`--input -`): its data is read as
    /// it comes; a header that declares no length (as a program writing to
    /// a pipe may) is read to the end of the stream.
    pub fn stdin() -> Result<WavInput, String> {
        let boxed: Box<dyn Read + Send> = Box::new(std::io::BufReader::new(std::io::stdin()));
        let reader = hound::WavReader::new(boxed).map_err(|e| match e {
            hound::Error::FormatError(m) => format!(
                "standard input is not a WAV file ({m}); {WAV_FORMATS_READ}"
            ),
            e if is_short_read(&e) => {
                "standard input ended before a WAV header (nothing, or less than a header, was written to it)".to_string()
            }
            e => format!("cannot read a WAV file from standard input: {e}"),
        })?;
        WavInput::from_reader("standard input".to_string(), None, reader)
    }

    fn from_reader(
        name: String,
        path: Option<PathBuf>,
        reader: hound::WavReader<Box<dyn Read + Send>>,
    ) -> Result<WavInput, String> {
        let spec = reader.spec();
        if spec.channels == 0 {
            return Err(format!("`{name}` has no channels"));
        }
        let supported = match spec.sample_format {
            hound::SampleFormat::Float => spec.bits_per_sample == 32,
            hound::SampleFormat::Int => matches!(spec.bits_per_sample, 8 | 16 | 24 | 32),
        };
        if !supported {
            return Err(format!(
                "`{name}` holds {}-bit {} samples, which are not read; {WAV_FORMATS_READ}",
                spec.bits_per_sample,
                if spec.sample_format == hound::SampleFormat::Float {
                    "float"
                } else {
                    "integer"
                }
            ));
        }
        let declared = reader.len() as u64 / spec.channels as u64;
        let from_pipe = path.is_none();
        if declared == 0 && !from_pipe {
            return Err(format!(
                "`{name}` holds no audio (0 frames): there is nothing to run through the scene"
            ));
        }
        Ok(WavInput {
            name,
            path,
            spec,
            declared,
            reader,
            read: 0,
            ended: None,
            error: None,
            scratch: Vec::new(),
        })
    }

    /// The file as named in messages (`standard input` for `-`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The file's path (none for standard input).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
    pub fn channels(&self) -> usize {
        self.spec.channels as usize
    }
    pub fn sample_rate(&self) -> u32 {
        self.spec.sample_rate
    }
    pub fn format(&self) -> InputFormat {
        match self.spec.sample_format {
            hound::SampleFormat::Float => InputFormat::F32,
            hound::SampleFormat::Int => InputFormat::Int(self.spec.bits_per_sample),
        }
    }
    fn frame_bytes(&self) -> u64 {
        self.spec.channels as u64 * (self.spec.bits_per_sample as u64).div_ceil(8)
    }
    /// Frames the header declares: the input's length for a file. From a
    /// pipe it may be 0 or too large; [`ended`](Self::ended) then tells.
    pub fn declared_frames(&self) -> u64 {
        self.declared
    }
    /// Whether the length is known before reading (a file, not a pipe).
    pub fn length_known(&self) -> bool {
        self.path.is_some()
    }
    /// The number of frames the input turned out to have, once its data ended.
    pub fn ended(&self) -> Option<u64> {
        self.ended
    }
    /// Frames delivered so far.
    pub fn frames_read(&self) -> u64 {
        self.read
    }
    /// A failure that ended the input part-way (a file cut short while
    /// being read, a broken pipe), with where.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Reads up to `dst.len() / channels()` frames, interleaved; returns
    /// the frames read. Past the end (or after a failure) it returns 0.
    pub fn read_interleaved(&mut self, dst: &mut [f64]) -> usize {
        let ch = self.channels();
        let want = dst.len() / ch;
        if self.ended.is_some() || want == 0 {
            return 0;
        }
        let limit = if self.length_known() {
            (self.declared - self.read).min(want as u64) as usize
        } else {
            want
        };
        let got = match self.format() {
            InputFormat::F32 => self.fill(&mut dst[..limit * ch], |r: &mut hound::WavReader<_>| {
                r.samples::<f32>().next().map(|s| s.map(|v| v as f64))
            }),
            InputFormat::Int(bits) => self.fill(
                &mut dst[..limit * ch],
                move |r: &mut hound::WavReader<_>| {
                    r.samples::<i32>()
                        .next()
                        .map(|s| s.map(|v| int_to_sample(v, bits)))
                },
            ),
        };
        let frames = got / ch;
        self.read += frames as u64;
        if frames < limit || (self.length_known() && self.read >= self.declared) {
            self.ended = Some(self.read);
        }
        frames
    }

    /// Samples into `dst` until it is full or the data ends; a failure is
    /// kept in `error`. Returns the samples of whole frames written.
    fn fill(
        &mut self,
        dst: &mut [f64],
        mut next: impl FnMut(&mut hound::WavReader<Box<dyn Read + Send>>) -> Option<hound::Result<f64>>,
    ) -> usize {
        let ch = self.channels();
        let mut n = 0;
        while n < dst.len() {
            match next(&mut self.reader) {
                Some(Ok(v)) => {
                    dst[n] = v;
                    n += 1;
                }
                None => break,
                Some(Err(e)) if is_short_read(&e) && !self.length_known() => break,
                Some(Err(e)) => {
                    let frame = self.read + (n / ch) as u64;
                    self.error = Some(if is_short_read(&e) {
                        format!("`{}` is cut short: its header declares {} frames, but its data ends at frame {frame} (was it not completely written?)", self.name, self.declared)
                    } else {
                        format!("cannot decode `{}` at frame {frame}: {e}", self.name)
                    });
                    break;
                }
            }
        }
        n - n % ch
    }
}

impl InputFeed for WavInput {
    /// Frames in order from the first; silence after the end. `start` is
    /// the engine's clock: the first block read is input frame 0.
    fn read(&mut self, _start: u64, block: &mut InputBlock<'_>) {
        let frames = block.frames();
        let ch = self.channels();
        let mut buf = std::mem::take(&mut self.scratch);
        buf.resize(frames * ch, 0.0);
        let got = self.read_interleaved(&mut buf);
        for c in 0..block.channels() {
            for (i, d) in block.channel_mut(c).iter_mut().enumerate() {
                *d = if i < got && c < ch {
                    buf[i * ch + c]
                } else {
                    0.0
                };
            }
        }
        self.scratch = buf;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::files::wav::to_int;

    /// Every 16-bit value, and 24-bit values across the range, come back
    /// through the integer output rule unchanged, via f64 and via f32.
    #[test]
    fn integer_samples_invert_the_output_rule() {
        for v in i16::MIN as i32..=i16::MAX as i32 {
            let x = int_to_sample(v, 16);
            assert_eq!(to_int(x, 16), v);
            assert_eq!(to_int(x as f32 as f64, 16), v);
        }
        let mut v: i32 = -(1 << 23);
        while v < (1 << 23) {
            let x = int_to_sample(v, 24);
            assert_eq!(to_int(x, 24), v, "{v}");
            assert_eq!(to_int(x as f32 as f64, 24), v, "{v} via f32");
            v += 997;
        }
        assert_eq!(
            to_int(int_to_sample((1 << 23) - 1, 24) as f32 as f64, 24),
            (1 << 23) - 1
        );
    }

    /// A file's frames in order, then silence; its length is known.
    #[test]
    fn reads_a_file_in_order_then_silence() {
        let dir = std::env::temp_dir().join(format!("morphrt-wav-in-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("in.wav");
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 48000,
            bits_per_sample: 24,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        for i in 0..300i32 {
            w.write_sample(i * 1000).unwrap();
            w.write_sample(-i).unwrap();
        }
        w.finalize().unwrap();
        let mut input = WavInput::open(&path).unwrap();
        assert_eq!((input.channels(), input.declared_frames()), (2, 300));
        assert_eq!(input.format(), InputFormat::Int(24));
        let mut buf = vec![0.0; 2 * 256];
        assert_eq!(input.read_interleaved(&mut buf), 256);
        assert_eq!(buf[2 * 255], int_to_sample(255_000, 24));
        assert_eq!(input.read_interleaved(&mut buf), 44);
        assert_eq!(buf[1], int_to_sample(-256, 24));
        assert_eq!(input.ended(), Some(300));
        assert_eq!(input.read_interleaved(&mut buf), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
