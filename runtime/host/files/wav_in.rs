//! Reading a WAV file as the session's audio input (`render --input`,
//! `run --input`, a journal's recorded input): streamed frame by frame, so
//! an hour-long recording or a pipe from `sox` is never held in memory.
//!
//! Integer samples of `b` bits are scaled by 1/(2^(b−1)−1): the exact
//! inverse of the integer output rule (scale by 2^(b−1)−1, round half to
//! even), so a 16- or 24-bit input written back in its own format through
//! an identity scene keeps every value; 8-bit samples are unsigned (128 is
//! zero); 32-bit float samples are taken as they are (an f32 input through
//! an f32 or f64 scene is written back bit for bit as f32).
//!
//! The header is read here, not by a general WAV library, because a
//! program writing a WAV to a pipe cannot go back to fill in its sizes:
//! a `data` size of 0 or `0xFFFFFFFF` (in a RIFF, not an RF64 file) means
//! "not recorded", and the data then runs to the end of the stream or file.
//! RF64 files (the `ds64` chunk's 64-bit sizes, as morphrt writes past
//! 4 GiB) are read too.
//!
//! A file is refused up front when it is not a regular file (a FIFO would
//! wait forever for a writer), not a WAV, a format not read, cut short of
//! what its header declares, or has no frames; standard input is read as
//! it comes, and a stream that ends before the length its header declares,
//! or inside a frame, is cut short ([`WavInput::error`]).

use super::resources::{unread_format, WAV_FORMATS_READ};
use crate::engine::{InputBlock, InputFeed};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The sample format of an input, as stored: integer PCM of `bits` bits,
/// or 32-bit float.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Integer PCM of this many bits (8, 16, 24 or 32).
    Int(u16),
    /// 32-bit IEEE float.
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

    /// Bytes of one stored sample.
    fn width(self) -> usize {
        match self {
            InputFormat::Int(b) => (b as usize).div_ceil(8),
            InputFormat::F32 => 4,
        }
    }
}

/// Why a WAV input cannot be read; each names the input (`` `in.wav` ``
/// or `standard input`).
#[derive(Debug)]
pub enum WavInError {
    /// Reading it failed: in its header (`frame` is `None`) or at `frame`.
    Io {
        shown: String,
        frame: Option<u64>,
        source: io::Error,
    },
    /// It is not a regular file: `kind` says what it is (a FIFO would wait
    /// forever for a writer).
    NotAFile { shown: String, kind: &'static str },
    /// It is not a WAV morphrt reads: empty, not a WAV, a format not read,
    /// a header that contradicts itself, cut short, no frames. The message
    /// names it and says which.
    Refused(String),
}

impl std::fmt::Display for WavInError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WavInError::Io {
                shown,
                frame: None,
                source,
            } => write!(f, "cannot read {shown}: {source}"),
            WavInError::Io {
                shown,
                frame: Some(at),
                source,
            } => write!(f, "cannot read {shown} at frame {at}: {source}"),
            WavInError::NotAFile { shown, kind } => write!(f, "{shown} is {kind}, not a WAV file"),
            WavInError::Refused(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for WavInError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WavInError::Io { source, .. } => Some(source),
            WavInError::NotAFile { .. } | WavInError::Refused(_) => None,
        }
    }
}

/// A read failure in the header of `shown`.
fn header_io(shown: &str, source: io::Error) -> WavInError {
    WavInError::Io {
        shown: shown.to_string(),
        frame: None,
        source,
    }
}

/// An integer sample of `bits` bits as the engine reads it: `v / (2^(bits−1) − 1)`.
#[inline]
pub fn int_to_sample(v: i32, bits: u16) -> f64 {
    v as f64 / ((1i64 << (bits.clamp(2, 32) - 1)) - 1) as f64
}

/// Decodes whole stored samples of `src` into `dst` (as many as both hold).
fn decode(format: InputFormat, src: &[u8], dst: &mut [f64]) {
    let w = format.width();
    let samples = src.chunks_exact(w).zip(dst.iter_mut());
    match format {
        InputFormat::F32 => samples.for_each(|(b, d)| {
            *d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64;
        }),
        InputFormat::Int(8) => samples.for_each(|(b, d)| *d = int_to_sample(b[0] as i32 - 128, 8)),
        InputFormat::Int(16) => samples.for_each(|(b, d)| {
            *d = int_to_sample(i16::from_le_bytes([b[0], b[1]]) as i32, 16);
        }),
        InputFormat::Int(24) => samples.for_each(|(b, d)| {
            let v = i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8;
            *d = int_to_sample(v, 24);
        }),
        InputFormat::Int(bits) => samples.for_each(|(b, d)| {
            *d = int_to_sample(i32::from_le_bytes([b[0], b[1], b[2], b[3]]), bits);
        }),
    }
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// What a WAV header says about the samples after it.
#[derive(Clone, Copy, Debug)]
struct Header {
    channels: u16,
    sample_rate: u32,
    format: InputFormat,
    /// Bytes of samples the header declares; `None` when it records none
    /// (a streaming header): the data runs to the end.
    data_len: Option<u64>,
    /// Bytes before the first sample.
    offset: u64,
}

impl Header {
    fn frame_bytes(&self) -> u64 {
        self.channels as u64 * self.format.width() as u64
    }
}

/// The header reader: counts the bytes it consumed; `shown` names the
/// input in messages (`` `in.wav` `` or `standard input`).
struct HeaderReader<'a> {
    r: &'a mut dyn Read,
    at: u64,
    shown: &'a str,
}

impl HeaderReader<'_> {
    /// Exactly `buf.len()` bytes, or the error that the header is cut short.
    fn exact(&mut self, buf: &mut [u8]) -> Result<(), WavInError> {
        let n = read_full(self.r, buf).map_err(|e| header_io(self.shown, e))?;
        self.at += n as u64;
        if n < buf.len() {
            return Err(WavInError::Refused(format!(
                "{} is cut short: it ends inside its WAV header, after {} bytes (was it not completely written?)",
                self.shown, self.at
            )));
        }
        Ok(())
    }

    /// Reads and drops `len` bytes (a chunk this reader has no use for).
    fn skip(&mut self, len: u64) -> Result<(), WavInError> {
        let copied = io::copy(&mut self.r.take(len), &mut io::sink())
            .map_err(|e| header_io(self.shown, e))?;
        self.at += copied;
        if copied < len {
            return Err(WavInError::Refused(format!(
                "{} is cut short: it ends inside a chunk of its WAV header, after {} bytes (was it not completely written?)",
                self.shown, self.at
            )));
        }
        Ok(())
    }

    /// A chunk's body of `len` bytes, of which the first `keep` are returned.
    fn body(&mut self, len: u64, keep: usize) -> Result<Vec<u8>, WavInError> {
        let mut b = vec![0; keep.min(len as usize)];
        self.exact(&mut b)?;
        self.skip(len - b.len() as u64 + (len & 1))?;
        Ok(b)
    }
}

/// Reads a RIFF (or RF64) WAVE header up to the first sample.
fn read_header(r: &mut dyn Read, shown: &str) -> Result<Header, WavInError> {
    let mut h = HeaderReader { r, at: 0, shown };
    let mut riff = [0u8; 12];
    let n = read_full(h.r, &mut riff).map_err(|e| header_io(shown, e))?;
    h.at = n as u64;
    let rf64 = matches!(&riff[0..4], b"RF64" | b"BW64");
    if n < 12 || !(rf64 || &riff[0..4] == b"RIFF") || &riff[8..12] != b"WAVE" {
        return Err(if n == 0 {
            WavInError::Refused(format!(
                "{shown} is empty: it holds no WAV header; {WAV_FORMATS_READ}"
            ))
        } else {
            WavInError::Refused(format!(
                "{shown} is not a WAV file (it does not start with a RIFF WAVE header); {WAV_FORMATS_READ}"
            ))
        });
    }
    let mut ds64_data = None;
    let mut fmt = None;
    loop {
        let mut chunk = [0u8; 8];
        h.exact(&mut chunk)
            .map_err(|_| WavInError::Refused(format!("{shown} is cut short: it ends after {} bytes, before its `data` chunk (was it not completely written?)", h.at)))?;
        let len = u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
        match &chunk[0..4] {
            b"ds64" => {
                let b = h.body(len as u64, 16)?;
                ds64_data = b
                    .get(8..16)
                    .map(|d| u64::from_le_bytes(d.try_into().unwrap()));
            }
            b"fmt " => fmt = Some(parse_fmt(&h.body(len as u64, 40)?, shown)?),
            b"data" => {
                let Some((channels, sample_rate, format)) = fmt else {
                    return Err(WavInError::Refused(format!("{shown} is not a WAV file morphrt can read: its `data` chunk comes before its `fmt ` chunk")));
                };
                let data_len = match len {
                    u32::MAX if rf64 => Some(ds64_data.ok_or_else(|| {
                        WavInError::Refused(format!(
                            "{shown} is an RF64 file without the `ds64` chunk that holds its sizes"
                        ))
                    })?),
                    0 | u32::MAX => None,
                    n => Some(n as u64),
                };
                return Ok(Header {
                    channels,
                    sample_rate,
                    format,
                    data_len,
                    offset: h.at,
                });
            }
            _ => h.skip(len as u64 + (len as u64 & 1))?,
        }
    }
}

/// The `fmt ` chunk: channels, rate and a format morphrt reads.
fn parse_fmt(b: &[u8], shown: &str) -> Result<(u16, u32, InputFormat), WavInError> {
    let u16_at = |i: usize| b.get(i..i + 2).map(|x| u16::from_le_bytes([x[0], x[1]]));
    let (Some(mut tag), Some(channels), Some(rate), Some(align), Some(bits)) = (
        u16_at(0),
        u16_at(2),
        b.get(4..8)
            .map(|x| u32::from_le_bytes(x.try_into().unwrap())),
        u16_at(12),
        u16_at(14),
    ) else {
        return Err(WavInError::Refused(format!(
            "{shown} has a `fmt ` chunk of {} bytes, too short to say its format",
            b.len()
        )));
    };
    if tag == 0xFFFE {
        // WAVE_FORMAT_EXTENSIBLE: the format is the sub-format GUID's first two bytes.
        tag = u16_at(24).unwrap_or(0);
        if let Some(valid) = u16_at(18).filter(|v| *v != 0 && *v != bits) {
            return Err(WavInError::Refused(format!(
                "{shown} holds {valid}-bit samples in {bits}-bit containers, which are not read; {WAV_FORMATS_READ}"
            )));
        }
    }
    if let Some(what) = unread_format(tag, bits) {
        return Err(WavInError::Refused(format!(
            "{shown} holds {what}, which is not read; {WAV_FORMATS_READ}"
        )));
    }
    let format = if tag == 3 {
        InputFormat::F32
    } else {
        InputFormat::Int(bits)
    };
    if channels == 0 || rate == 0 {
        return Err(WavInError::Refused(format!(
            "{shown} declares {channels} channels at {rate} Hz: not audio morphrt can read"
        )));
    }
    if align as usize != channels as usize * format.width() {
        return Err(WavInError::Refused(format!(
            "{shown} declares frames of {align} bytes, but {channels} channels of {bits}-bit samples take {}; {WAV_FORMATS_READ}",
            channels as usize * format.width()
        )));
    }
    Ok((channels, rate, format))
}

/// Channels `a` … `b` in words: `channel 2` or `channels 2 … 5`.
fn channels_text(a: usize, b: usize) -> String {
    if a == b {
        format!("channel {a}")
    } else {
        format!("channels {a} … {b}")
    }
}

/// Checks that an input at `rate` plays at the scene's rate, where nothing
/// converts it: the error names both rates and the fix.
pub fn check_rate(shown: &str, rate: u32, plan: &crate::graph::Plan) -> Result<(), String> {
    if rate != plan.sample_rate {
        return Err(format!(
            "{shown} is at {rate} Hz, but scene `{}` runs at {} Hz, and morphrt does not resample: set \"sample_rate\": {rate} in the scene, or convert the file to {} Hz (e.g. `sox in.wav -r {} out.wav`)",
            plan.file, plan.sample_rate, plan.sample_rate, plan.sample_rate
        ));
    }
    Ok(())
}

/// Checks an input (`shown` as messages name it, with `has` channels)
/// against the scene of `plan`: it must have every channel a node reads;
/// channels no node reads are ignored, with a note on `log`.
pub fn check_fits(
    shown: &str,
    has: usize,
    plan: &crate::graph::Plan,
    log: &mut dyn std::io::Write,
) -> Result<(), String> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if let Some(u) = plan.inputs().into_iter().find(|u| u.channel >= has) {
        return Err(format!(
            "node `{}` reads input channel {}, but {shown} has {has} channel{} (0 … {}): give a WAV with at least {} channels, or read a channel it has",
            u.node,
            u.channel,
            plural(has),
            has.saturating_sub(1),
            u.channel + 1
        ));
    }
    let width = plan.input_width();
    if width > 0 && has > width {
        let _ = writeln!(
            log,
            "note: {shown} has {has} channels; the scene reads {}, so {} {} ignored",
            channels_text(0, width - 1),
            channels_text(width, has - 1),
            if has - width == 1 { "is" } else { "are" }
        );
    }
    Ok(())
}

/// An input WAV being read, from a file or standard input.
pub struct WavInput {
    /// The path as given, or `standard input`.
    name: String,
    /// The name as messages show it: `` `in.wav` `` or `standard input`.
    shown: String,
    path: Option<PathBuf>,
    header: Header,
    /// The frames there are, when known before reading: a file's, or what
    /// a stream's header declares. `None`: a stream read to its end.
    frames: Option<u64>,
    reader: Box<dyn Read + Send>,
    /// Frames delivered so far.
    read: u64,
    /// Set once the data ended: the frame count.
    ended: Option<u64>,
    /// A failure that ended the input part-way.
    error: Option<WavInError>,
    /// Stored bytes of the frames being read.
    bytes: Vec<u8>,
    /// One block of interleaved frames, for [`InputFeed::read`].
    scratch: Vec<f64>,
}

impl std::fmt::Debug for WavInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavInput")
            .field("name", &self.name)
            .field("header", &self.header)
            .field("frames", &self.frames)
            .finish()
    }
}

impl WavInput {
    /// Opens a WAV file; what is not a readable, complete WAV with at least
    /// one frame is refused with a message naming the file.
    pub fn open(path: &Path) -> Result<WavInput, WavInError> {
        use crate::scene::resource::{open_regular, NotRegular};
        let shown = format!("`{}`", path.display());
        let file = open_regular(path).map_err(|e| match e {
            NotRegular::Kind(kind) => WavInError::NotAFile {
                shown: shown.clone(),
                kind,
            },
            NotRegular::Io(e) => header_io(&shown, e),
        })?;
        let len = file.metadata().map_err(|e| header_io(&shown, e))?.len();
        if len == 0 {
            return Err(WavInError::Refused(format!(
                "{shown} is empty (0 bytes), not a WAV file; {WAV_FORMATS_READ}"
            )));
        }
        let mut reader: Box<dyn Read + Send> = Box::new(io::BufReader::new(file));
        let header = read_header(&mut reader, &shown)?;
        let frames = file_frames(&header, len, &shown)?;
        let name = path.display().to_string();
        Ok(WavInput::new(
            name,
            shown,
            Some(path.to_path_buf()),
            header,
            Some(frames),
            reader,
        ))
    }

    /// Reads a WAV from standard input (`--input -`): its data is read as
    /// it comes; a header that records no length (0 or `0xFFFFFFFF`, as a
    /// program writing to a pipe leaves it) is read to the end of the stream.
    pub fn stdin() -> Result<WavInput, WavInError> {
        let reader: Box<dyn Read + Send> =
            Box::new(io::BufReader::with_capacity(1 << 16, io::stdin()));
        WavInput::from_stream(reader, "standard input")
    }

    /// Reads a WAV from any stream, as [`stdin`](Self::stdin) does; `name`
    /// names it in messages.
    pub fn from_stream(
        mut reader: Box<dyn Read + Send>,
        name: &str,
    ) -> Result<WavInput, WavInError> {
        let header = read_header(&mut reader, name)?;
        let frames = match header.data_len {
            Some(len) => Some(whole_frames(&header, len, name)?),
            None => None,
        };
        Ok(WavInput::new(
            name.to_string(),
            name.to_string(),
            None,
            header,
            frames,
            reader,
        ))
    }

    fn new(
        name: String,
        shown: String,
        path: Option<PathBuf>,
        header: Header,
        frames: Option<u64>,
        reader: Box<dyn Read + Send>,
    ) -> WavInput {
        WavInput {
            name,
            shown,
            path,
            header,
            frames,
            reader,
            read: 0,
            ended: None,
            error: None,
            bytes: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The file as named in messages (`standard input` for `-`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The file's path (none for standard input).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
    /// Channels per frame.
    pub fn channels(&self) -> usize {
        self.header.channels as usize
    }
    /// Frames per second.
    pub fn sample_rate(&self) -> u32 {
        self.header.sample_rate
    }
    /// The stored sample format.
    pub fn format(&self) -> InputFormat {
        self.header.format
    }
    /// Frames the input holds, when known before reading: a file's, or
    /// what a stream's header declares (0 for a stream whose header
    /// records no length; [`ended`](Self::ended) then tells).
    pub fn declared_frames(&self) -> u64 {
        self.frames.unwrap_or(0)
    }
    /// Whether the length is known before reading (a file, or a stream
    /// whose header records it).
    pub fn length_known(&self) -> bool {
        self.frames.is_some()
    }
    /// The number of frames the input turned out to have, once its data ended.
    pub fn ended(&self) -> Option<u64> {
        self.ended
    }
    /// Frames delivered so far.
    pub fn frames_read(&self) -> u64 {
        self.read
    }
    /// A failure that ended the input part-way (a file or a stream cut
    /// short, a read error), with where.
    pub fn error(&self) -> Option<&WavInError> {
        self.error.as_ref()
    }

    /// The failure that ended the input part-way, taken out to be
    /// reported (after which [`error`](Self::error) is `None`).
    pub fn take_error(&mut self) -> Option<WavInError> {
        self.error.take()
    }

    /// Reads up to `dst.len() / channels()` frames, interleaved; returns
    /// the frames read. Past the end (or after a failure) it returns 0.
    pub fn read_interleaved(&mut self, dst: &mut [f64]) -> usize {
        let ch = self.channels();
        let want = dst.len() / ch;
        if self.ended.is_some() || want == 0 {
            return 0;
        }
        let limit = match self.frames {
            Some(total) => (total - self.read).min(want as u64) as usize,
            None => want,
        };
        let fb = self.header.frame_bytes() as usize;
        self.bytes.resize(limit * fb, 0);
        let got = match read_full(&mut self.reader, &mut self.bytes) {
            Ok(n) => n,
            Err(source) => {
                self.error = Some(WavInError::Io {
                    shown: self.shown.clone(),
                    frame: Some(self.read),
                    source,
                });
                0
            }
        };
        let frames = got / fb;
        decode(
            self.header.format,
            &self.bytes[..frames * fb],
            &mut dst[..frames * ch],
        );
        self.read += frames as u64;
        if frames < limit || self.frames == Some(self.read) {
            self.ended = Some(self.read);
            if self.error.is_none() {
                self.error = self.cut_short(got % fb, fb);
            }
        }
        frames
    }

    /// Why the data ended where it did, when that was too early: before
    /// the declared length, or inside a frame (`partial` of `fb` bytes).
    fn cut_short(&self, partial: usize, fb: usize) -> Option<WavInError> {
        let at = self.read;
        match self.frames {
            Some(n) if at < n => Some(WavInError::Refused(format!(
                "{} is cut short: its header declares {n} frames, but its data ends at frame {at} (was it not completely written?)",
                self.shown
            ))),
            _ if partial > 0 => Some(WavInError::Refused(format!(
                "{} is cut short: its data ends inside frame {at} ({partial} of its {fb} bytes)",
                self.shown
            ))),
            _ => None,
        }
    }
}

/// The frames `len` bytes of data hold, refused when not a whole number.
fn whole_frames(h: &Header, len: u64, shown: &str) -> Result<u64, WavInError> {
    let fb = h.frame_bytes();
    if !len.is_multiple_of(fb) {
        return Err(WavInError::Refused(format!(
            "{shown} declares {len} bytes of samples, not a whole number of its {fb}-byte frames ({} channels of {})",
            h.channels,
            h.format.describe()
        )));
    }
    Ok(len / fb)
}

/// A file's frames: what its header declares (all there, or the file is
/// cut short), else what the file holds after the header; at least one.
fn file_frames(h: &Header, file_len: u64, shown: &str) -> Result<u64, WavInError> {
    let available = file_len.saturating_sub(h.offset);
    let frames = match h.data_len {
        Some(data) => {
            let frames = whole_frames(h, data, shown)?;
            if available < data {
                return Err(WavInError::Refused(format!(
                    "{shown} is cut short: its header declares {frames} frames ({data} bytes of samples), but the file is {file_len} bytes (was it not completely written?)"
                )));
            }
            frames
        }
        None => whole_frames(h, available, shown).map_err(|_| {
            WavInError::Refused(format!(
                "{shown} is cut short: its data ({available} bytes after the header, which records no length) ends inside a frame of {} bytes",
                h.frame_bytes()
            ))
        })?,
    };
    if frames == 0 {
        return Err(WavInError::Refused(format!(
            "{shown} holds no audio (0 frames): there is nothing to run through the scene"
        )));
    }
    Ok(frames)
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

    /// A header as a pipe writer leaves it: 16-bit stereo, `data_len` as given.
    fn streamed(data_len: u32, samples: &[i16]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"RIFF");
        b.extend_from_slice(&data_len.to_le_bytes());
        b.extend_from_slice(b"WAVE");
        b.extend_from_slice(b"LIST\x03\0\0\0abc\0"); // odd: a pad byte
        b.extend_from_slice(b"fmt \x10\0\0\0\x01\0\x02\0");
        b.extend_from_slice(&48000u32.to_le_bytes());
        b.extend_from_slice(&(48000u32 * 4).to_le_bytes());
        b.extend_from_slice(&[4, 0, 16, 0]);
        b.extend_from_slice(b"data");
        b.extend_from_slice(&data_len.to_le_bytes());
        for s in samples {
            b.extend_from_slice(&s.to_le_bytes());
        }
        b
    }

    fn stream(bytes: Vec<u8>) -> Result<WavInput, WavInError> {
        WavInput::from_stream(Box::new(std::io::Cursor::new(bytes)), "standard input")
    }

    /// A data size of 0 or 0xFFFFFFFF reads to the end of the stream; a
    /// declared size that the stream does not reach, or a partial last
    /// frame, is cut short.
    #[test]
    fn streaming_headers_read_to_the_end_and_short_streams_are_cut_short() {
        let samples: Vec<i16> = (0..200).map(|i| i * 100 - 9000).collect();
        for size in [0, u32::MAX] {
            let mut input = stream(streamed(size, &samples)).unwrap();
            assert!(!input.length_known());
            let mut buf = vec![0.0; 2 * 64];
            let mut got = Vec::new();
            while input.read_interleaved(&mut buf) > 0 {
                got.extend_from_slice(&buf[..]);
            }
            assert_eq!(input.ended(), Some(100), "size {size:#x}");
            assert!(input.error().is_none());
            assert_eq!(got[199], int_to_sample(samples[199] as i32, 16));
        }
        let mut declared = stream(streamed(800, &samples)).unwrap();
        assert_eq!(declared.declared_frames(), 200);
        let mut buf = vec![0.0; 2 * 512];
        assert_eq!(declared.read_interleaved(&mut buf), 100);
        assert!(declared
            .error()
            .unwrap()
            .to_string()
            .contains("declares 200 frames, but its data ends at frame 100"));
        let mut partial = stream(streamed(0, &samples[..199])).unwrap();
        while partial.read_interleaved(&mut buf) > 0 {}
        assert!(
            partial
                .error()
                .unwrap()
                .to_string()
                .contains("inside frame 99"),
            "{:?}",
            partial.error()
        );
        assert!(stream(b"RIFF".to_vec())
            .unwrap_err()
            .to_string()
            .contains("not a WAV file"));
        assert!(stream(Vec::new())
            .unwrap_err()
            .to_string()
            .contains("is empty"));
        let cut = streamed(0, &[])[..30].to_vec();
        assert!(stream(cut).unwrap_err().to_string().contains("cut short"));
    }

    /// 8-bit samples are unsigned around 128; 32-bit integers scale by 2^31−1.
    #[test]
    fn eight_and_thirty_two_bit_integers() {
        let mut b = streamed(0, &[]);
        // Mono 8-bit: channels 1, block align 1, 8 bits.
        b[34..36].copy_from_slice(&1u16.to_le_bytes());
        b[44..46].copy_from_slice(&1u16.to_le_bytes());
        b[46..48].copy_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&[0, 128, 255]);
        let mut input = stream(b).unwrap();
        assert_eq!(input.format(), InputFormat::Int(8));
        let mut buf = [0.0; 3];
        assert_eq!(input.read_interleaved(&mut buf), 3);
        assert_eq!(buf, [-128.0 / 127.0, 0.0, 1.0]);
        let mut b = streamed(0, &[]);
        b[34..36].copy_from_slice(&1u16.to_le_bytes());
        b[44..46].copy_from_slice(&4u16.to_le_bytes());
        b[46..48].copy_from_slice(&32u16.to_le_bytes());
        for v in [i32::MAX, -i32::MAX, 1] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let mut input = stream(b).unwrap();
        assert_eq!(input.read_interleaved(&mut buf), 3);
        assert_eq!(buf, [1.0, -1.0, 1.0 / i32::MAX as f64]);
    }
}
