//! Reading an audio file as the session's audio input (`render --input`,
//! `run --input`, a journal's recorded input), and whole, as an
//! `@resource:` sample or impulse response or a file `plot` draws
//! ([`read_all`]): streamed packet by packet, so an hour-long recording
//! or a pipe from `sox` is never held in memory.
//!
//! The format is told from the first bytes, not the name ([`sniff`]):
//! WAV (RIFF, RF64 or BW64: 8-, 16-, 24- or 32-bit integer PCM, fewer
//! valid bits in a wider container, 32- or 64-bit float, μ-law, A-law),
//! AIFF/AIFC, FLAC, MP3 and Ogg Vorbis. Symphonia decodes every sample
//! ([`super::media`]). A WAV's header is read here, not by Symphonia's WAV
//! reader, because a program writing a WAV to a pipe cannot go back to
//! fill in its sizes: a `data` size of 0 or `0xFFFFFFFF` (in a RIFF, not
//! an RF64 file) means "not recorded", and the data then runs to the end
//! of the stream or file; RF64 files (the `ds64` chunk's 64-bit sizes, as
//! morphrt writes past 4 GiB) are read too. Its samples then go through
//! Symphonia's PCM decoder. The other containers are demuxed and decoded
//! by Symphonia; they stream from a pipe as from a file (AIFF, whose
//! header Symphonia reads by seeking, from a file only).
//!
//! Integer samples of `b` bits are scaled by 1/(2^(b−1)−1): the exact
//! inverse of the integer output rule (scale by 2^(b−1)−1, round half to
//! even), so a 16- or 24-bit input written back in its own format through
//! an identity scene keeps every value; 8-bit WAV samples are unsigned
//! (128 is zero); μ-law and A-law samples expand to 16-bit integers;
//! float samples are taken as they are (an f32 input through an f32 or
//! f64 scene is written back bit for bit as f32). A file read whole as a
//! resource keeps the resource rule ([`Scale::Resource`]).
//!
//! A file is refused up front when it is not a regular file (a FIFO would
//! wait forever for a writer), none of the formats read, a format not
//! read, cut short of what its WAV header declares, or has no frames;
//! standard input is read as it comes. Data that ends before the length
//! its header declares, inside a frame, or that a decoder finds damaged,
//! or a FLAC whose audio does not match the MD5 its header records, ends
//! the input with an error naming the frame ([`WavInput::error`]).

use super::media::{interleave, sniff, what, Media, OpenFailure, Sniffed};
pub use super::media::{InputFormat, Scale};
use crate::engine::{InputBlock, InputFeed};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use symphonia::core::audio::Channels;
use symphonia::core::codecs::audio::well_known::{
    CODEC_ID_PCM_ALAW, CODEC_ID_PCM_F32LE, CODEC_ID_PCM_F64LE, CODEC_ID_PCM_MULAW,
    CODEC_ID_PCM_S16LE, CODEC_ID_PCM_S24LE, CODEC_ID_PCM_S32LE, CODEC_ID_PCM_U8,
};
use symphonia::core::codecs::audio::{AudioCodecParameters, AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error as DecodeError;
use symphonia::core::io::{MediaSource, ReadOnlySource};
use symphonia::core::packet::PacketRef;
use symphonia::core::units::{Duration, Timestamp};

/// Bytes of a file looked at to tell its format (and an MP3's tag).
const HEAD: usize = 256;

/// The formats morphrt reads, for messages.
pub const FORMATS_READ: &str = "morphrt reads WAV files (8-, 16-, 24- or 32-bit integer PCM, 32-bit float, 64-bit float, μ-law or A-law samples), AIFF/AIFC, FLAC, MP3 and Ogg Vorbis";

/// Why an audio input cannot be read; each names the input (`` `in.wav` ``
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
    /// It is not audio morphrt reads: empty, none of the formats read, a
    /// format not read, a header that contradicts itself, cut short,
    /// damaged, no frames. The message names it and says which (and where).
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
            WavInError::NotAFile { shown, kind } => {
                write!(f, "{shown} is {kind}, not an audio file")
            }
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
    Scale::Input.int(v, bits as u32)
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

/// How a WAV stores its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WavCodec {
    /// Symphonia's codec for one stored sample.
    id: symphonia::core::codecs::audio::AudioCodecId,
    /// Bytes of one stored sample.
    width: u16,
    /// Significant bits of an integer sample (`None` for float).
    bits: Option<u32>,
    /// In words: `16-bit integer`, `μ-law`.
    name: &'static str,
}

/// What a WAV header says about the samples after it.
#[derive(Clone, Copy, Debug)]
struct Header {
    channels: u16,
    sample_rate: u32,
    format: InputFormat,
    codec: WavCodec,
    /// Bytes of samples the header declares; `None` when it records none
    /// (a streaming header): the data runs to the end.
    data_len: Option<u64>,
    /// Bytes before the first sample.
    offset: u64,
}

impl Header {
    fn frame_bytes(&self) -> u64 {
        self.channels as u64 * self.codec.width as u64
    }

    /// The format in words: `WAV 24-bit integer`, `WAV μ-law`.
    fn description(&self) -> String {
        let container = self.codec.width * 8;
        match self.format {
            InputFormat::Int(b) if self.codec.name == "integer" && b == container => {
                format!("WAV {b}-bit integer")
            }
            InputFormat::Int(b) if self.codec.name == "integer" => {
                format!("WAV {b}-bit integer in {container}-bit containers")
            }
            _ => format!("WAV {}", self.codec.name),
        }
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
                "{} is cut short: it ends inside its header, after {} bytes (was it not completely written?)",
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

/// Reads a RIFF (or RF64) WAVE header, whose first 12 bytes were
/// checked, up to the first sample.
fn read_header(r: &mut dyn Read, shown: &str) -> Result<Header, WavInError> {
    let mut h = HeaderReader { r, at: 0, shown };
    let mut riff = [0u8; 12];
    h.exact(&mut riff)?;
    let rf64 = matches!(&riff[0..4], b"RF64" | b"BW64");
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
                let Some((channels, sample_rate, format, codec)) = fmt else {
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
                    codec,
                    data_len,
                    offset: h.at,
                });
            }
            _ => h.skip(len as u64 + (len as u64 & 1))?,
        }
    }
}

/// The `fmt ` chunk: channels, rate and a format morphrt reads.
fn parse_fmt(b: &[u8], shown: &str) -> Result<(u16, u32, InputFormat, WavCodec), WavInError> {
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
    let mut valid = bits;
    if tag == 0xFFFE {
        // WAVE_FORMAT_EXTENSIBLE: the format is the sub-format GUID's first
        // two bytes; the valid bits (0: all) sit at the top of each container.
        tag = u16_at(24).unwrap_or(0);
        valid = u16_at(18).filter(|v| *v != 0).unwrap_or(bits);
        if valid > bits || (tag != 1 && valid != bits) {
            return Err(WavInError::Refused(format!(
                "{shown} declares {valid} valid bits in {bits}-bit containers, which is not a format morphrt reads; {FORMATS_READ}"
            )));
        }
    }
    if let Some(what) = unread_format(tag, bits) {
        return Err(WavInError::Refused(format!(
            "{shown} holds {what}, which is not read; {FORMATS_READ}"
        )));
    }
    let codec = |id, width, bits, name| WavCodec {
        id,
        width,
        bits,
        name,
    };
    let (format, codec) = match (tag, bits) {
        (3, 32) => (
            InputFormat::F32,
            codec(CODEC_ID_PCM_F32LE, 4, None, "32-bit float"),
        ),
        (3, _) => (
            InputFormat::F64,
            codec(CODEC_ID_PCM_F64LE, 8, None, "64-bit float"),
        ),
        (6, _) => (
            InputFormat::Int(16),
            codec(CODEC_ID_PCM_ALAW, 1, Some(16), "A-law"),
        ),
        (7, _) => (
            InputFormat::Int(16),
            codec(CODEC_ID_PCM_MULAW, 1, Some(16), "μ-law"),
        ),
        (_, 8) => (
            InputFormat::Int(valid),
            codec(CODEC_ID_PCM_U8, 1, Some(valid as u32), "integer"),
        ),
        (_, 16) => (
            InputFormat::Int(valid),
            codec(CODEC_ID_PCM_S16LE, 2, Some(valid as u32), "integer"),
        ),
        (_, 24) => (
            InputFormat::Int(valid),
            codec(CODEC_ID_PCM_S24LE, 3, Some(valid as u32), "integer"),
        ),
        (_, _) => (
            InputFormat::Int(valid),
            codec(CODEC_ID_PCM_S32LE, 4, Some(valid as u32), "integer"),
        ),
    };
    if channels == 0 || rate == 0 {
        return Err(WavInError::Refused(format!(
            "{shown} declares {channels} channels at {rate} Hz: not audio morphrt can read"
        )));
    }
    if align as usize != channels as usize * codec.width as usize {
        return Err(WavInError::Refused(format!(
            "{shown} declares frames of {align} bytes, but {channels} channels of {bits}-bit samples take {}; {FORMATS_READ}",
            channels as usize * codec.width as usize
        )));
    }
    Ok((channels, rate, format, codec))
}

/// Symphonia's PCM decoder for the samples of a WAV with header `h`.
fn pcm_decoder(h: &Header, shown: &str) -> Result<Box<dyn AudioDecoder>, WavInError> {
    let mut params = AudioCodecParameters::new();
    params
        .for_codec(h.codec.id)
        .with_sample_rate(h.sample_rate)
        .with_channels(Channels::Discrete(h.channels));
    symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| {
            WavInError::Refused(format!(
                "{shown} holds {} samples that cannot be decoded ({}); {FORMATS_READ}",
                h.codec.name,
                what(&e)
            ))
        })
}

/// A WAV `fmt ` chunk's format tag (the sub-format's, for
/// WAVE_FORMAT_EXTENSIBLE) and bits per sample in words (`64-bit float
/// samples`, `ADPCM-compressed audio`) when morphrt does not read it;
/// `None` for the formats it reads.
pub fn unread_format(tag: u16, bits: u16) -> Option<String> {
    match (tag, bits) {
        (1, 8 | 16 | 24 | 32) | (3, 32 | 64) | (6 | 7, 8) => None,
        (1, b) => Some(format!("{b}-bit integer samples")),
        (3, b) => Some(format!("{b}-bit float samples")),
        (2 | 0x11, _) => Some("ADPCM-compressed audio".to_string()),
        (6, b) => Some(format!("A-law audio of {b} bits per sample")),
        (7, b) => Some(format!("μ-law audio of {b} bits per sample")),
        (0x55, _) => Some("MP3 audio".to_string()),
        (t, _) => Some(format!("audio in format 0x{t:04x}")),
    }
}

/// Channels `a` … `b` in words: `channel 2` or `channels 2 … 5`.
fn channels_text(a: usize, b: usize) -> String {
    if a == b {
        format!("channel {a}")
    } else {
        format!("channels {a} … {b}")
    }
}

/// An input without a channel a node of the scene reads: `node` reads
/// `channel`, and the input (`shown` as messages name it) has `has`.
#[derive(Clone, Debug, PartialEq)]
pub struct MissingChannel {
    pub shown: String,
    pub has: usize,
    pub node: String,
    pub channel: usize,
}

impl std::fmt::Display for MissingChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let MissingChannel {
            shown,
            has,
            node,
            channel,
        } = self;
        write!(
            f,
            "node `{node}` reads input channel {channel}, but {shown} has {has} channel{} (0 … {}): give a WAV with at least {} channels, or read a channel it has",
            if *has == 1 { "" } else { "s" },
            has.saturating_sub(1),
            channel + 1
        )
    }
}

impl std::error::Error for MissingChannel {}

/// Checks an input (`shown` as messages name it, with `has` channels)
/// against the scene of `plan`: it must have every channel a node reads;
/// channels no node reads are ignored, with a note on `log`.
pub fn check_fits(
    shown: &str,
    has: usize,
    plan: &crate::graph::Plan,
    log: &mut dyn std::io::Write,
) -> Result<(), MissingChannel> {
    if let Some(u) = plan.inputs().into_iter().find(|u| u.channel >= has) {
        return Err(MissingChannel {
            shown: shown.to_string(),
            has,
            node: u.node,
            channel: u.channel,
        });
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

/// Where the samples come from.
enum Source {
    /// A WAV whose header was read here: its data bytes, decoded by
    /// Symphonia's PCM decoder.
    Wav {
        header: Header,
        reader: Box<dyn Read + Send>,
        pcm: Box<dyn AudioDecoder>,
        /// Stored bytes of the frames being read.
        bytes: Vec<u8>,
    },
    /// Another container, demuxed and decoded by Symphonia.
    Media(Box<Media>),
}

/// An input file being read, from a file or standard input.
pub struct WavInput {
    /// The path as given, or `standard input`.
    name: String,
    /// The name as messages show it: `` `in.wav` `` or `standard input`.
    shown: String,
    path: Option<PathBuf>,
    channels: usize,
    sample_rate: u32,
    format: InputFormat,
    /// The format in words: `WAV 16-bit integer`, `FLAC 24-bit`, `MP3`.
    description: String,
    /// How integer samples are scaled.
    scale: Scale,
    /// The frames there are, when known before reading: a file's, or what
    /// a header declares. `None`: a stream read to its end.
    frames: Option<u64>,
    source: Source,
    /// Decoded frames (interleaved) not yet delivered, from `pending_at`.
    pending: Vec<f64>,
    pending_at: usize,
    /// Frames delivered so far.
    read: u64,
    /// Set once the data ended: the frame count.
    ended: Option<u64>,
    /// A failure that ended the input part-way.
    error: Option<WavInError>,
    /// One block of interleaved frames, for [`InputFeed::read`].
    scratch: Vec<f64>,
}

impl std::fmt::Debug for WavInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavInput")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("frames", &self.frames)
            .finish()
    }
}

/// A source stream and how messages name it.
struct Opening {
    name: String,
    shown: String,
    path: Option<PathBuf>,
    /// The file's length, for a file.
    file_len: Option<u64>,
    scale: Scale,
}

impl WavInput {
    /// Opens an audio file; what is not a readable, complete file of a
    /// format read with at least one frame is refused with a message
    /// naming the file.
    pub fn open(path: &Path) -> Result<WavInput, WavInError> {
        let input = WavInput::open_scaled(path, Scale::Input)?;
        if input.frames == Some(0) {
            return Err(WavInError::Refused(format!(
                "{} holds no audio (0 frames): there is nothing to run through the scene",
                input.shown
            )));
        }
        Ok(input)
    }

    /// Opens an audio file whose integer samples are scaled by `scale`;
    /// a file of no frames is not refused here.
    pub fn open_scaled(path: &Path, scale: Scale) -> Result<WavInput, WavInError> {
        use crate::scene::resource::{open_regular, NotRegular};
        let shown = format!("`{}`", path.display());
        let mut file = open_regular(path).map_err(|e| match e {
            NotRegular::Kind(kind) => WavInError::NotAFile {
                shown: shown.clone(),
                kind,
            },
            NotRegular::Io(e) => header_io(&shown, e),
        })?;
        let len = file.metadata().map_err(|e| header_io(&shown, e))?.len();
        if len == 0 {
            return Err(WavInError::Refused(format!(
                "{shown} is empty (0 bytes), not a WAV file; {FORMATS_READ}"
            )));
        }
        let mut head = [0u8; HEAD];
        let n = read_full(&mut file, &mut head).map_err(|e| header_io(&shown, e))?;
        io::Seek::seek(&mut file, io::SeekFrom::Start(0)).map_err(|e| header_io(&shown, e))?;
        let opening = Opening {
            name: path.display().to_string(),
            shown,
            path: Some(path.to_path_buf()),
            file_len: Some(len),
            scale,
        };
        match sniff(&head[..n]) {
            Sniffed::Wav => WavInput::wav(Box::new(io::BufReader::new(file)), opening),
            Sniffed::Other(container) => {
                WavInput::media(Box::new(file), container, &head[..n], opening)
            }
            Sniffed::Unknown => Err(unknown(&opening.shown, &head[..n], Some(len))),
        }
    }

    /// Reads audio from standard input (`--input -`): its data is read as
    /// it comes; a WAV header that records no length (0 or `0xFFFFFFFF`,
    /// as a program writing to a pipe leaves it) is read to the end of
    /// the stream.
    pub fn stdin() -> Result<WavInput, WavInError> {
        let reader: Box<dyn Read + Send + Sync> =
            Box::new(io::BufReader::with_capacity(1 << 16, io::stdin()));
        WavInput::from_stream(reader, "standard input")
    }

    /// Reads audio from any stream, as [`stdin`](Self::stdin) does; `name`
    /// names it in messages.
    pub fn from_stream(
        mut reader: Box<dyn Read + Send + Sync>,
        name: &str,
    ) -> Result<WavInput, WavInError> {
        let mut head = [0u8; HEAD];
        let n = read_full(&mut reader, &mut head).map_err(|e| header_io(name, e))?;
        let again: Box<dyn Read + Send + Sync> =
            Box::new(io::Cursor::new(head[..n].to_vec()).chain(reader));
        let opening = Opening {
            name: name.to_string(),
            shown: name.to_string(),
            path: None,
            file_len: None,
            scale: Scale::Input,
        };
        match sniff(&head[..n]) {
            Sniffed::Wav => WavInput::wav(again, opening),
            Sniffed::Other("AIFF") => Err(WavInError::Refused(format!(
                "{name} is an AIFF file, which is read from a file only (its header is read by seeking): give it as a file, or pipe a WAV, FLAC, MP3 or Ogg instead"
            ))),
            Sniffed::Other(container) => WavInput::media(
                Box::new(ReadOnlySource::new(again)),
                container,
                &head[..n],
                opening,
            ),
            Sniffed::Unknown => Err(unknown(name, &head[..n], None)),
        }
    }

    /// A WAV: its header read here, its samples by Symphonia's PCM decoder.
    fn wav(mut reader: Box<dyn Read + Send>, o: Opening) -> Result<WavInput, WavInError> {
        let header = read_header(&mut reader, &o.shown)?;
        let frames = match (o.file_len, header.data_len) {
            (Some(len), _) => Some(file_frames(&header, len, &o.shown)?),
            (None, Some(len)) => Some(whole_frames(&header, len, &o.shown)?),
            (None, None) => None,
        };
        let pcm = pcm_decoder(&header, &o.shown)?;
        let source = Source::Wav {
            header,
            reader,
            pcm,
            bytes: Vec::new(),
        };
        Ok(WavInput::new(
            o,
            (header.channels as usize, header.sample_rate, header.format),
            header.description(),
            frames,
            source,
        ))
    }

    /// Another container, through Symphonia.
    fn media(
        source: Box<dyn MediaSource>,
        container: &'static str,
        head: &[u8],
        o: Opening,
    ) -> Result<WavInput, WavInError> {
        let m = Media::open(source, container, head).map_err(|failure| {
            let shown = &o.shown;
            WavInError::Refused(match (failure, o.file_len) {
                (OpenFailure::CutShort, Some(len)) => format!(
                    "{shown} is cut short: it ends at byte {len}, before the end of its {container} header or data (was it not completely written?)"
                ),
                (OpenFailure::CutShort, None) => format!(
                    "{shown} is cut short: it ends inside its {container} header (was it not completely written?)"
                ),
                (OpenFailure::NoAudio, len) => format!(
                    "{shown} starts as {container} but holds no {container} audio that can be read{}: it is empty of frames, damaged or cut short; {FORMATS_READ}",
                    len.map_or(String::new(), |n| format!(" in its {n} bytes"))
                ),
                (OpenFailure::Other(why), _) => {
                    format!("{shown} cannot be read: {why}; {FORMATS_READ}")
                }
            })
        })?;
        let (shape, description, frames) = (
            (m.channels, m.sample_rate, m.format),
            m.description.clone(),
            m.frames,
        );
        Ok(WavInput::new(
            o,
            shape,
            description,
            frames,
            Source::Media(Box::new(m)),
        ))
    }

    fn new(
        o: Opening,
        (channels, sample_rate, format): (usize, u32, InputFormat),
        description: String,
        frames: Option<u64>,
        source: Source,
    ) -> WavInput {
        WavInput {
            name: o.name,
            shown: o.shown,
            path: o.path,
            channels,
            sample_rate,
            format,
            description,
            scale: o.scale,
            frames,
            source,
            pending: Vec::new(),
            pending_at: 0,
            read: 0,
            ended: None,
            error: None,
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
        self.channels
    }
    /// Frames per second: the file's own rate.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }
    /// The decoded sample format.
    pub fn format(&self) -> InputFormat {
        self.format
    }
    /// The file's format in words, for messages and summaries:
    /// `WAV 16-bit integer`, `WAV μ-law`, `FLAC 24-bit`, `AIFF 16-bit`,
    /// `MP3`, `Ogg Vorbis`.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// Frames the input holds, when known before reading: a file's, or
    /// what a header declares (0 for a stream whose header records no
    /// length; [`ended`](Self::ended) then tells).
    pub fn declared_frames(&self) -> u64 {
        self.frames.unwrap_or(0)
    }
    /// Whether the length is known before reading (a file or a stream
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
    /// short, damaged data, a read error), with where.
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
        let want = dst.len() / self.channels;
        self.read_frames(want, Out::Interleaved(dst))
    }

    /// Reads up to `want` frames into `out`; returns the frames read. Past
    /// the end (or after a failure) it returns 0. A block gets the frames
    /// read in its channels the input has, and nothing else is written.
    fn read_frames(&mut self, want: usize, mut out: Out<'_, '_>) -> usize {
        let ch = self.channels;
        if self.ended.is_some() || want == 0 {
            return 0;
        }
        let limit = match self.frames {
            Some(total) => (total - self.read).min(want as u64) as usize,
            None => want,
        };
        let (frames, partial) = match &mut self.source {
            Source::Wav {
                header,
                reader,
                pcm,
                bytes,
            } => {
                let fb = header.frame_bytes() as usize;
                bytes.resize(limit * fb, 0);
                let got = match read_full(reader, bytes) {
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
                let stored = &bytes[..frames * fb];
                let bits = header.codec.bits;
                match Pcm::of(header.codec.id) {
                    _ if frames == 0 => {}
                    Some(kind) => match &mut out {
                        Out::Interleaved(dst) => (0..ch).for_each(|c| {
                            let dst = dst[c..frames * ch].iter_mut().step_by(ch);
                            kind.decode(bits, self.scale, stored, ch, c, dst)
                        }),
                        Out::Block(block) => (0..ch.min(block.channels())).for_each(|c| {
                            let dst = block.channel_mut(c).iter_mut();
                            kind.decode(bits, self.scale, stored, ch, c, dst)
                        }),
                    },
                    None => {
                        let packet = PacketRef::new(
                            0,
                            Timestamp::new(0),
                            Duration::new(frames as u64),
                            stored,
                        );
                        match pcm.decode_ref(&packet) {
                            Ok(buf) => match &mut out {
                                Out::Interleaved(dst) => interleave(&buf, bits, self.scale, dst),
                                Out::Block(block) => {
                                    self.scratch.resize(frames * ch, 0.0);
                                    interleave(&buf, bits, self.scale, &mut self.scratch);
                                    load(block, &self.scratch[..frames * ch], ch);
                                }
                            },
                            Err(e) => {
                                self.error = Some(WavInError::Refused(format!(
                                    "{} cannot be decoded at frame {}: {}",
                                    self.shown,
                                    self.read,
                                    what(&e)
                                )));
                            }
                        }
                    }
                }
                (frames, Some((got % fb, fb)))
            }
            Source::Media(_) => match &mut out {
                Out::Interleaved(dst) => (self.read_media(&mut dst[..limit * ch]), None),
                Out::Block(block) => {
                    let mut buf = std::mem::take(&mut self.scratch);
                    buf.resize(limit * ch, 0.0);
                    let n = self.read_media(&mut buf);
                    load(block, &buf[..n * ch], ch);
                    self.scratch = buf;
                    (n, None)
                }
            },
        };
        self.read += frames as u64;
        if frames < limit || self.frames == Some(self.read) {
            self.ended = Some(self.read);
            if self.error.is_none() {
                self.error = self.cut_short(partial);
            }
            if self.error.is_none() {
                self.error = self.check_sum();
            }
        }
        frames
    }

    /// Fills `dst` with whole frames decoded by Symphonia, decoding
    /// packets as needed; fewer at the end or at a failure (then `error`).
    fn read_media(&mut self, dst: &mut [f64]) -> usize {
        let Source::Media(m) = &mut self.source else {
            return 0;
        };
        let ch = self.channels;
        let mut filled = 0;
        while filled < dst.len() {
            if self.pending_at == self.pending.len() {
                self.pending.clear();
                self.pending_at = 0;
                match m.next(self.scale, &mut self.pending) {
                    Ok(true) => continue,
                    Ok(false) => break,
                    Err(e) => {
                        let at = self.read + (filled / ch) as u64;
                        self.error = Some(decode_failure(&self.shown, &m.description, at, e));
                        break;
                    }
                }
            }
            let n = (self.pending.len() - self.pending_at).min(dst.len() - filled);
            dst[filled..filled + n]
                .copy_from_slice(&self.pending[self.pending_at..self.pending_at + n]);
            filled += n;
            self.pending_at += n;
        }
        filled / ch
    }

    /// Why the data ended where it did, when that was too early: before
    /// the declared length, or (`partial` of a WAV's `fb`-byte frame)
    /// inside a frame.
    fn cut_short(&self, partial: Option<(usize, usize)>) -> Option<WavInError> {
        let at = self.read;
        match (self.frames, partial) {
            (Some(n), _) if at < n => Some(WavInError::Refused(format!(
                "{} is cut short: its header declares {n} frames, but its data ends at frame {at} (was it not completely written?)",
                self.shown
            ))),
            (_, Some((partial, fb))) if partial > 0 => Some(WavInError::Refused(format!(
                "{} is cut short: its data ends inside frame {at} ({partial} of its {fb} bytes)",
                self.shown
            ))),
            _ => None,
        }
    }

    /// At the end: a FLAC whose audio does not match the MD5 its header
    /// records is refused (the file is damaged, though every frame decoded).
    fn check_sum(&mut self) -> Option<WavInError> {
        let Source::Media(m) = &mut self.source else {
            return None;
        };
        (m.verified() == Some(false)).then(|| {
            WavInError::Refused(format!(
                "{} is damaged: its audio (all {} frames) does not match the MD5 checksum its header records",
                self.shown, self.read
            ))
        })
    }
}

/// A decoder's failure at frame `at` of `shown` (a file of `what`), in words.
fn decode_failure(shown: &str, what_file: &str, at: u64, e: DecodeError) -> WavInError {
    match e {
        DecodeError::IoError(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            WavInError::Refused(format!(
                "{shown} is cut short: its {what_file} data ends inside a packet at frame {at} (was it not completely written?)"
            ))
        }
        DecodeError::IoError(source) => WavInError::Io {
            shown: shown.to_string(),
            frame: Some(at),
            source,
        },
        e => WavInError::Refused(format!(
            "{shown} is damaged at frame {at}: its {what_file} data cannot be decoded ({})",
            what(&e)
        )),
    }
}

/// The refusal of a stream whose first bytes (`head`) are no format read.
fn unknown(shown: &str, head: &[u8], file_len: Option<u64>) -> WavInError {
    WavInError::Refused(match (head.len(), file_len) {
        (0, _) => format!("{shown} is empty: it holds no audio header; {FORMATS_READ}"),
        (_, Some(len)) => format!(
            "{shown} is not a WAV file (it does not start with a RIFF WAVE header; {len} bytes), nor AIFF, FLAC, MP3 or Ogg; {FORMATS_READ}"
        ),
        (_, None) => format!(
            "{shown} is not a WAV file (it does not start with a RIFF WAVE header), nor FLAC, MP3 or Ogg; {FORMATS_READ}"
        ),
    })
}

/// Reads a whole audio file (as a resource: [`Scale::Resource`]); a file
/// of no frames gives no samples. The channels, each its frames.
pub fn read_all(path: &Path) -> Result<(u32, Vec<Vec<f64>>), WavInError> {
    let mut input = WavInput::open_scaled(path, Scale::Resource)?;
    let ch = input.channels();
    let mut interleaved = Vec::new();
    let mut buf = vec![0.0; ch * 8192];
    loop {
        let n = input.read_interleaved(&mut buf);
        interleaved.extend_from_slice(&buf[..n * ch]);
        if n == 0 || input.ended().is_some() {
            break;
        }
    }
    if let Some(e) = input.take_error() {
        return Err(e);
    }
    let frames = interleaved.len() / ch;
    let channels = (0..ch)
        .map(|c| (0..frames).map(|f| interleaved[f * ch + c]).collect())
        .collect();
    Ok((input.sample_rate(), channels))
}

/// The frames `len` bytes of data hold, refused when not a whole number.
fn whole_frames(h: &Header, len: u64, shown: &str) -> Result<u64, WavInError> {
    let fb = h.frame_bytes();
    if !len.is_multiple_of(fb) {
        return Err(WavInError::Refused(format!(
            "{shown} declares {len} bytes of samples, not a whole number of its {fb}-byte frames ({} channels of {})",
            h.channels,
            h.description()
        )));
    }
    Ok(len / fb)
}

/// A file's frames: what its header declares (all there, or the file is
/// cut short), else what the file holds after the header.
fn file_frames(h: &Header, file_len: u64, shown: &str) -> Result<u64, WavInError> {
    let available = file_len.saturating_sub(h.offset);
    match h.data_len {
        Some(data) => {
            let frames = whole_frames(h, data, shown)?;
            if available < data {
                let fb = h.frame_bytes();
                return Err(WavInError::Refused(format!(
                    "{shown} is cut short: its header declares {frames} frames ({data} bytes of samples), but the file is {file_len} bytes: its data ends {} frame {} (was it not completely written?)",
                    if available.is_multiple_of(fb) { "at" } else { "inside" },
                    available / fb
                )));
            }
            Ok(frames)
        }
        None => whole_frames(h, available, shown).map_err(|_| {
            WavInError::Refused(format!(
                "{shown} is cut short: its data ({available} bytes after the header, which records no length) ends inside frame {} of {} bytes",
                available / h.frame_bytes(),
                h.frame_bytes()
            ))
        }),
    }
}

impl InputFeed for WavInput {
    /// Frames in order from the first; silence after the end. `start` is
    /// the engine's clock: the first block read is input frame 0.
    fn read(&mut self, _start: u64, block: &mut InputBlock<'_>) {
        let frames = block.frames();
        let got = self.read_frames(frames, Out::Block(block));
        let ch = self.channels;
        for c in 0..block.channels() {
            let from = if c < ch { got } else { 0 };
            block.channel_mut(c)[from..].fill(0.0);
        }
    }
}

/// Where [`WavInput::read_frames`] puts the frames it reads.
enum Out<'a, 'b> {
    /// Interleaved, from the start.
    Interleaved(&'a mut [f64]),
    /// A buffer per channel, in the channels the block and the input both have.
    Block(&'a mut InputBlock<'b>),
}

/// `frames` interleaved frames of `ch` channels (`src`) into the channels
/// of `block` the input has.
fn load(block: &mut InputBlock<'_>, src: &[f64], ch: usize) {
    for c in 0..ch.min(block.channels()) {
        let dst = block.channel_mut(c).iter_mut();
        dst.zip(src[c..].iter().step_by(ch))
            .for_each(|(d, &x)| *d = x);
    }
}

/// A WAV's stored samples that are decoded here, straight from their
/// bytes, to the values Symphonia's PCM decoder and
/// [`interleave`] give (μ-law and A-law go through the decoder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pcm {
    U8,
    S16,
    S24,
    S32,
    F32,
    F64,
}

impl Pcm {
    /// The samples of `id`, when decoded here.
    fn of(id: symphonia::core::codecs::audio::AudioCodecId) -> Option<Pcm> {
        Some(match id {
            CODEC_ID_PCM_U8 => Pcm::U8,
            CODEC_ID_PCM_S16LE => Pcm::S16,
            CODEC_ID_PCM_S24LE => Pcm::S24,
            CODEC_ID_PCM_S32LE => Pcm::S32,
            CODEC_ID_PCM_F32LE => Pcm::F32,
            CODEC_ID_PCM_F64LE => Pcm::F64,
            _ => return None,
        })
    }

    /// Channel `c` of the whole frames of `stored` (`ch` channels) into
    /// `dst`, a sample each: integers of `bits` significant bits (all
    /// when `None`) scaled by `scale`, as [`interleave`] does.
    fn decode<'a>(
        self,
        bits: Option<u32>,
        scale: Scale,
        stored: &[u8],
        ch: usize,
        c: usize,
        dst: impl Iterator<Item = &'a mut f64>,
    ) {
        let int = |v: i32, width: u32| {
            let b = bits.unwrap_or(width).clamp(2, width);
            scale.int(v >> (width - b), b)
        };
        match self {
            Pcm::U8 => column(stored, ch, c, dst, |[s]: [u8; 1]| {
                int((s as i32 - 128) << 24, 32)
            }),
            Pcm::S16 => column(stored, ch, c, dst, |b| {
                int(i16::from_le_bytes(b) as i32, 16)
            }),
            Pcm::S24 => column(stored, ch, c, dst, |[x, y, z]: [u8; 3]| {
                int(i32::from_le_bytes([0, x, y, z]) >> 8, 24)
            }),
            Pcm::S32 => column(stored, ch, c, dst, |b| int(i32::from_le_bytes(b), 32)),
            Pcm::F32 => column(stored, ch, c, dst, |b| f32::from_le_bytes(b) as f64),
            Pcm::F64 => column(stored, ch, c, dst, f64::from_le_bytes),
        }
    }
}

/// Channel `c` of the `W`-byte samples of `stored` (`ch` channels a
/// frame) into `dst`, each through `f`.
#[inline]
fn column<'a, const W: usize>(
    stored: &[u8],
    ch: usize,
    c: usize,
    dst: impl Iterator<Item = &'a mut f64>,
    f: impl Fn([u8; W]) -> f64,
) {
    for (frame, d) in stored.chunks_exact(W * ch).zip(dst) {
        let mut b = [0u8; W];
        b.copy_from_slice(&frame[c * W..(c + 1) * W]);
        *d = f(b);
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

    /// A WAVE_FORMAT_EXTENSIBLE header (`tag` the sub-format) for `data`.
    fn extensible(tag: u16, channels: u16, bits: u16, valid: u16, data: &[u8]) -> Vec<u8> {
        let align = channels * bits / 8;
        let mut b = Vec::new();
        b.extend_from_slice(b"RIFF");
        b.extend_from_slice(&(60 + data.len() as u32).to_le_bytes());
        b.extend_from_slice(b"WAVEfmt \x28\0\0\0\xfe\xff");
        b.extend_from_slice(&channels.to_le_bytes());
        b.extend_from_slice(&44100u32.to_le_bytes());
        b.extend_from_slice(&(44100 * align as u32).to_le_bytes());
        b.extend_from_slice(&align.to_le_bytes());
        b.extend_from_slice(&bits.to_le_bytes());
        b.extend_from_slice(&22u16.to_le_bytes());
        b.extend_from_slice(&valid.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(b"\0\0\0\0\x10\0\x80\0\0\xaa\0\x38\x9b\x71");
        b.extend_from_slice(b"data");
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(data);
        b
    }

    /// Every PCM sample format decoded from its bytes (read interleaved
    /// in pieces of any length, and into an engine block with fewer or
    /// more channels than the file) gives the values of Symphonia's PCM
    /// decoder for the same bytes: random bytes, so every bit pattern
    /// (NaNs, infinities, the most negative integers, samples with bits
    /// below the valid ones) occurs, under both scales.
    #[test]
    fn pcm_samples_decode_as_symphonia_decodes_them() {
        let formats: &[(u16, u16, &[u16])] = &[
            (1, 8, &[8, 5]),
            (1, 16, &[16, 12]),
            (1, 24, &[24, 20]),
            (1, 32, &[32, 24]),
            (3, 32, &[32]),
            (3, 64, &[64]),
            (6, 8, &[8]),
            (7, 8, &[8]),
        ];
        let mut z = 3u64;
        for &(tag, bits, valids) in formats {
            for &valid in valids {
                for channels in [1u16, 2, 3] {
                    let frames = 301;
                    let len = frames * (channels * bits / 8) as usize;
                    let data: Vec<u8> = (0..len)
                        .map(|_| {
                            z = rand_philox::splitmix64(z);
                            (z >> 56) as u8
                        })
                        .collect();
                    let what = format!("tag {tag}, {bits} bits ({valid} valid), {channels} ch");
                    let bytes = extensible(tag, channels, bits, valid, &data);
                    for scale in [Scale::Input, Scale::Resource] {
                        // Symphonia's decoder, the whole data at once.
                        let input = stream(bytes.clone()).unwrap();
                        let Source::Wav { header, .. } = &input.source else {
                            panic!("{what}: not read as a WAV")
                        };
                        let mut pcm = pcm_decoder(header, "x").unwrap();
                        let packet = PacketRef::new(
                            0,
                            Timestamp::new(0),
                            Duration::new(frames as u64),
                            &data,
                        );
                        let mut want = vec![0.0; len / (bits as usize / 8)];
                        let buf = pcm.decode_ref(&packet).unwrap();
                        interleave(&buf, header.codec.bits, scale, &mut want);
                        let ch = channels as usize;
                        let same = |a: &[f64], b: &[f64]| {
                            a.len() == b.len()
                                && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
                        };
                        // Interleaved, in pieces.
                        let mut input = stream(bytes.clone()).unwrap();
                        input.scale = scale;
                        let mut got = Vec::new();
                        for piece in [1, 7, 64, 1000].iter().cycle() {
                            let mut buf = vec![0.0; piece * ch];
                            let n = input.read_interleaved(&mut buf);
                            got.extend_from_slice(&buf[..n * ch]);
                            if n == 0 {
                                break;
                            }
                        }
                        assert!(same(&got, &want), "{what}, {scale:?}, interleaved");
                        assert!(input.error().is_none(), "{what}");
                        // Into engine blocks of 64 frames, with one channel
                        // fewer and one more than the file.
                        for width in [ch - 1, ch + 1] {
                            let mut input = stream(bytes.clone()).unwrap();
                            input.scale = scale;
                            let mut data = vec![f64::NAN; width * 64];
                            for block in 0..6 {
                                data.fill(f64::NAN);
                                let mut b = InputBlock::new(&mut data, 64, 64);
                                InputFeed::read(&mut input, 0, &mut b);
                                for c in 0..width {
                                    for i in 0..64 {
                                        let f = block * 64 + i;
                                        let x = if c < ch && f < frames {
                                            want[f * ch + c]
                                        } else {
                                            0.0
                                        };
                                        assert_eq!(
                                            data[c * 64 + i].to_bits(),
                                            x.to_bits(),
                                            "{what}, {scale:?}, block of {width} channels, channel {c} frame {f}"
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
