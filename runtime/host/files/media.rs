//! Decoding audio through Symphonia: the containers morphrt tells apart
//! by their first bytes ([`sniff`]), the containers other than WAV
//! demuxed and decoded by Symphonia ([`Media`]), and Symphonia's decoded
//! buffers turned into the engine's f64 samples ([`interleave`]).
//!
//! Integer samples keep morphrt's own scaling (Symphonia's conversion
//! divides by 2^(b−1); see [`Scale`]): a decoder's integer buffer holds
//! its `b` significant bits left-justified in the buffer's width (FLAC
//! decodes into 32 bits, a 20-bit WAV into 24), so a sample is shifted
//! down to its `b` bits first. Float samples are taken as they are.
//!
//! Symphonia is built without its SIMD features, so a lossy file (MP3,
//! Vorbis) decodes through the same scalar code, to the same bits, on
//! every machine.

use symphonia::core::audio::{Audio, AudioBuffer, GenericAudioBufferRef};
use symphonia::core::codecs::audio::well_known::{CODEC_ID_MP3, CODEC_ID_VORBIS};
use symphonia::core::codecs::audio::{AudioDecoder, AudioDecoderOptions, VerificationCheck};
use symphonia::core::errors::Error;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, FormatReader, TrackType};
use symphonia::core::io::{MediaSource, MediaSourceStream};
use symphonia::core::meta::MetadataOptions;

/// The sample format of an input, as decoded: integer PCM of `bits`
/// bits, or float.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Integer PCM of this many bits (8, 16, 24 or 32; a FLAC or a WAV
    /// may hold another width).
    Int(u16),
    /// 32-bit IEEE float (and what lossy decoders give).
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl InputFormat {
    /// In words, for summaries: `16-bit integer`, `32-bit float`.
    pub fn describe(self) -> String {
        match self {
            InputFormat::Int(b) => format!("{b}-bit integer"),
            InputFormat::F32 => "32-bit float".to_string(),
            InputFormat::F64 => "64-bit float".to_string(),
        }
    }
}

/// How an integer sample of `b` bits becomes an f64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Divided by 2^(b−1) − 1: the audio input's rule, the exact inverse
    /// of the integer output rule (a 16- or 24-bit input written back in
    /// its own format keeps every value).
    Input,
    /// Multiplied by 2^−(b−1): the rule of `@resource:` files and `plot`.
    Resource,
}

impl Scale {
    /// The sample `v` of `bits` significant bits.
    #[inline]
    pub fn int(self, v: i32, bits: u32) -> f64 {
        let bits = bits.clamp(2, 32);
        match self {
            Scale::Input => v as f64 / ((1i64 << (bits - 1)) - 1) as f64,
            Scale::Resource => v as f64 * (1.0 / (1u64 << (bits - 1)) as f64),
        }
    }
}

/// What a stream's first bytes (at least 12 of them, when it has them)
/// say it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniffed {
    /// A RIFF, RF64 or BW64 WAVE file.
    Wav,
    /// A container Symphonia demuxes, by name (`FLAC`, `MP3`, `Ogg`, `AIFF`).
    Other(&'static str),
    /// None of the formats read.
    Unknown,
}

/// The container `head` (a stream's first bytes) starts.
pub fn sniff(head: &[u8]) -> Sniffed {
    let at = |a: usize, b: usize| head.get(a..b).unwrap_or(&[]);
    let riff = matches!(at(0, 4), b"RIFF" | b"RF64" | b"BW64");
    if riff && at(8, 12) == b"WAVE" {
        return Sniffed::Wav;
    }
    if at(0, 4) == b"FORM" && matches!(at(8, 12), b"AIFF" | b"AIFC") {
        return Sniffed::Other("AIFF");
    }
    match at(0, 4) {
        b"fLaC" => return Sniffed::Other("FLAC"),
        b"OggS" => return Sniffed::Other("Ogg"),
        _ => {}
    }
    // An ID3v2 tag, or an MPEG audio frame's sync word (11 bits set).
    if at(0, 3) == b"ID3" || (head.len() >= 2 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0) {
        return Sniffed::Other("MP3");
    }
    Sniffed::Unknown
}

/// Why [`Media::open`] failed.
#[derive(Debug)]
pub enum OpenFailure {
    /// The source ended before its header and pages did.
    CutShort,
    /// No header or frame of its container was found in it.
    NoAudio,
    /// Another reason, in words.
    Other(String),
}

/// A file of a container other than WAV, demuxed and decoded by Symphonia.
pub struct Media {
    reader: Box<dyn FormatReader>,
    decoder: Box<dyn AudioDecoder>,
    track: u32,
    /// Significant bits of an integer sample (`None` for float codecs).
    bits: Option<u32>,
    /// Whether the decoder checks the stream against a checksum (a FLAC's MD5).
    verifies: bool,
    /// Whether it is Ogg, whose packets' positions are checked for a gap.
    ogg: bool,
    /// The position the next packet starts at, once a packet was read.
    next_pts: Option<i64>,
    /// Channels per frame.
    pub channels: usize,
    /// Frames per second.
    pub sample_rate: u32,
    /// The decoded sample format.
    pub format: InputFormat,
    /// The frames its header declares, when it declares them.
    pub frames: Option<u64>,
    /// In words, for messages and summaries: `FLAC 24-bit`, `MP3`.
    pub description: String,
}

impl Media {
    /// Opens `source` (whose first bytes, `head`, said `container`) and
    /// its first audio track; what cannot be read is refused in words,
    /// without the file's name (the caller adds it).
    pub fn open(
        source: Box<dyn MediaSource>,
        container: &'static str,
        head: &[u8],
    ) -> Result<Media, OpenFailure> {
        let mss = MediaSourceStream::new(source, Default::default());
        let reader = symphonia::default::get_probe()
            .probe(
                &Hint::new(),
                mss,
                FormatOptions::default(),
                MetadataOptions::default(),
            )
            .map_err(|e| match &e {
                Error::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                    OpenFailure::CutShort
                }
                Error::Unsupported(_) => OpenFailure::NoAudio,
                e => OpenFailure::Other(format!(
                    "its {container} header cannot be read ({})",
                    what(e)
                )),
            })?;
        let failed = OpenFailure::Other;
        let track = reader
            .default_track(TrackType::Audio)
            .ok_or_else(|| failed(format!("it is {container} but holds no audio track")))?;
        let params = track
            .codec_params
            .as_ref()
            .and_then(|p| p.audio())
            .ok_or_else(|| {
                failed(format!(
                    "it is {container} but its audio track has no codec"
                ))
            })?
            .clone();
        let channels = params.channels.as_ref().map_or(0, |c| c.count());
        let sample_rate = params.sample_rate.unwrap_or(0);
        if channels == 0 || sample_rate == 0 {
            return Err(failed(format!(
                "it declares {channels} channels at {sample_rate} Hz: not audio morphrt can read"
            )));
        }
        let lossy = params.codec == CODEC_ID_MP3 || params.codec == CODEC_ID_VORBIS;
        let verifies = matches!(
            params.verification_check,
            Some(VerificationCheck::Md5(sum)) if sum != [0; 16]
        );
        let decoder = symphonia::default::get_codecs()
            .make_audio_decoder(&params, &AudioDecoderOptions::default().verify(verifies))
            .map_err(|e| {
                failed(format!(
                    "its {container} audio cannot be decoded ({})",
                    what(&e)
                ))
            })?;
        let bits = if lossy { None } else { params.bits_per_sample };
        let (format, description) = match (lossy, bits) {
            (true, _) => (
                InputFormat::F32,
                if params.codec == CODEC_ID_MP3 {
                    "MP3".to_string()
                } else {
                    "Ogg Vorbis".to_string()
                },
            ),
            (false, Some(b)) => (InputFormat::Int(b as u16), format!("{container} {b}-bit")),
            (false, None) => (InputFormat::F32, container.to_string()),
        };
        // A declared length is kept when it is exact: lossless containers
        // and Ogg (the last page's position) record it; an MP3's is an
        // estimate unless an encoder's tag in its first frame records it.
        let tagged = |tag: &[u8]| head.windows(4).any(|w| w == tag);
        let exact = container != "MP3" || tagged(b"Xing") || tagged(b"Info") || tagged(b"VBRI");
        let frames = track.num_frames.filter(|_| exact);
        Ok(Media {
            track: track.id,
            reader,
            decoder,
            bits,
            verifies,
            ogg: container == "Ogg",
            next_pts: None,
            channels,
            sample_rate,
            format,
            frames,
            description,
        })
    }

    /// Decodes the next packet of the track, appending its frames
    /// (interleaved, under `scale`) to `out`; `false` at the end.
    pub fn next(&mut self, scale: Scale, out: &mut Vec<f64>) -> Result<bool, Error> {
        loop {
            let Some(packet) = self.reader.next_packet()? else {
                return Ok(false);
            };
            if packet.track_id != self.track {
                continue;
            }
            // An Ogg page that is missing shows as a jump in the packets'
            // positions (Symphonia's Ogg reader only logs it).
            if self.ogg {
                let pts = packet.pts.get();
                if self.next_pts.is_some_and(|want| pts > want) {
                    return Err(Error::DecodeError(
                        "a page is missing: the positions of its packets jump ahead",
                    ));
                }
                // A packet spans the frames it trims at its start and its duration.
                let span = packet.trim_start.get().saturating_add(packet.dur.get());
                self.next_pts = Some(pts.saturating_add(span as i64));
            }
            let buf = self.decoder.decode(&packet)?;
            if buf.num_planes() != self.channels {
                return Err(Error::DecodeError("the channel count changes mid-stream"));
            }
            let start = out.len();
            let n = buf.frames() * self.channels;
            out.resize(start + n, 0.0);
            interleave(&buf, self.bits, scale, &mut out[start..]);
            return Ok(true);
        }
    }

    /// After the last packet: whether the decoded audio matches the
    /// checksum the file records (`None` when it records none).
    pub fn verified(&mut self) -> Option<bool> {
        if !self.verifies {
            return None;
        }
        self.decoder.finalize().verify_ok
    }
}

/// A Symphonia error in words: the decoder's message without its
/// `malformed stream:` prefix.
pub fn what(e: &Error) -> String {
    match e {
        Error::DecodeError(m) | Error::Unsupported(m) | Error::LimitError(m) => m.to_string(),
        e => e.to_string(),
    }
}

/// Writes the frames of `buf`, interleaved, to `dst` (which holds at
/// least `frames × channels` samples): integers of `bits` significant
/// bits (the buffer's width when `None`), left-justified in the buffer's
/// width, scaled by `scale`; unsigned ones centred first; floats as they are.
pub fn interleave(
    buf: &GenericAudioBufferRef<'_>,
    bits: Option<u32>,
    scale: Scale,
    dst: &mut [f64],
) {
    let int = |v: i32, width: u32| {
        let b = bits.unwrap_or(width).clamp(2, width);
        scale.int(v >> (width - b), b)
    };
    match buf {
        GenericAudioBufferRef::U8(b) => put(b, dst, |s| int((s as i32 - 128) << 24, 32)),
        GenericAudioBufferRef::U16(b) => put(b, dst, |s| int((s as i32 - 32768) << 16, 32)),
        GenericAudioBufferRef::U24(b) => {
            put(b, dst, |s| int((s.inner() as i32 - (1 << 23)) << 8, 32))
        }
        GenericAudioBufferRef::U32(b) => put(b, dst, |s| int((s ^ 0x8000_0000) as i32, 32)),
        GenericAudioBufferRef::S8(b) => put(b, dst, |s| int(s as i32, 8)),
        GenericAudioBufferRef::S16(b) => put(b, dst, |s| int(s as i32, 16)),
        GenericAudioBufferRef::S24(b) => put(b, dst, |s| int(s.inner(), 24)),
        GenericAudioBufferRef::S32(b) => put(b, dst, |s| int(s, 32)),
        GenericAudioBufferRef::F32(b) => put(b, dst, |s| s as f64),
        GenericAudioBufferRef::F64(b) => put(b, dst, |s| s),
    }
}

/// Interleaves the planes of `buf` into `dst`, each sample through `f`.
fn put<S: symphonia::core::audio::sample::Sample + Copy>(
    buf: &AudioBuffer<S>,
    dst: &mut [f64],
    f: impl Fn(S) -> f64,
) {
    let ch = buf.num_planes();
    for (c, plane) in buf.iter_planes().enumerate() {
        for (i, s) in plane.iter().enumerate() {
            dst[i * ch + c] = f(*s);
        }
    }
}
