//! WAV headers written once, up front, from the render's known length.
//!
//! A render knows its frame count before the first sample, so the header
//! can carry the final sizes from the start: no seek back at the end, which
//! is what lets the same writer stream to a pipe, a FIFO or a device. Past
//! the 4 GiB that a RIFF size field can hold, the header is RF64 (EBU Tech
//! 3306): the 32-bit sizes are `0xFFFFFFFF` and a `ds64` chunk holds the
//! 64-bit ones. Below that, the bytes are exactly what hound writes, so
//! files stay readable by every WAV reader and identical to earlier renders.

/// `KSDATAFORMAT_SUBTYPE_PCM`, the extensible format's integer sub-format.
const SUBTYPE_PCM: [u8; 16] = [
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71,
];
/// `KSDATAFORMAT_SUBTYPE_IEEE_FLOAT`.
const SUBTYPE_FLOAT: [u8; 16] = [
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71,
];

/// The shape of one WAV file: enough to write its header and to know its
/// size before rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WavLayout {
    pub channels: u16,
    pub sample_rate: u32,
    pub format: WavFormat,
    pub frames: u64,
}

impl WavLayout {
    /// Bytes per sample of one channel.
    pub fn bytes_per_sample(&self) -> u64 {
        self.format.bytes_per_sample() as u64
    }

    fn bits(&self) -> u16 {
        self.bytes_per_sample() as u16 * 8
    }

    /// Bytes of sample data (the `data` chunk's size), or `None` past u64.
    pub fn data_len(&self) -> Option<u64> {
        self.frames
            .checked_mul(self.channels as u64)?
            .checked_mul(self.bytes_per_sample())
    }

    /// WAVE_FORMAT_EXTENSIBLE above 2 channels or 16 bits, as Microsoft
    /// asks (and hound does); the plain 16-byte `fmt ` otherwise.
    fn extensible(&self) -> bool {
        self.channels > 2 || self.bits() > 16
    }

    fn fmt_len(&self) -> u64 {
        if self.extensible() {
            40
        } else {
            16
        }
    }

    /// RIFF wants chunks of even length: an odd `data` chunk (24-bit mono,
    /// odd frame count) is followed by one zero byte.
    pub fn pad_len(&self) -> u64 {
        self.data_len().map_or(0, |d| d & 1)
    }

    /// The RIFF size of the classic layout: everything after the first 8 bytes.
    fn riff_len_classic(&self) -> Option<u64> {
        (4 + 8 + self.fmt_len() + 8 + self.pad_len()).checked_add(self.data_len()?)
    }

    /// Whether the file needs RF64: its RIFF size does not fit in 32 bits
    /// (`0xFFFFFFFF` itself is RF64's "see ds64" marker, so it counts).
    pub fn is_rf64(&self) -> bool {
        self.riff_len_classic().is_none_or(|r| r >= u32::MAX as u64)
    }

    /// Bytes of header before the first sample.
    pub fn header_len(&self) -> u64 {
        let ds64 = if self.is_rf64() { 8 + 28 } else { 0 };
        12 + ds64 + 8 + self.fmt_len() + 8
    }

    /// The whole file's size in bytes, or `None` past u64.
    pub fn file_len(&self) -> Option<u64> {
        self.header_len()
            .checked_add(self.data_len()?)?
            .checked_add(self.pad_len())
    }

    /// The header: RIFF (or RF64 with its `ds64`), `fmt `, and the `data`
    /// chunk's header, with the final sizes. Write `data_len()` bytes of
    /// samples and `pad_len()` zero bytes after it. `None` when the size
    /// does not fit in 64 bits (no render comes near that).
    pub fn header(&self) -> Option<Vec<u8>> {
        let data_len = self.data_len()?;
        let file_len = self.file_len()?;
        let mut h = Vec::with_capacity(self.header_len() as usize);
        let rf64 = self.is_rf64();
        h.extend_from_slice(if rf64 { b"RF64" } else { b"RIFF" });
        push_u32(
            &mut h,
            if rf64 {
                u32::MAX
            } else {
                (file_len - 8) as u32
            },
        );
        h.extend_from_slice(b"WAVE");
        if rf64 {
            h.extend_from_slice(b"ds64");
            push_u32(&mut h, 28);
            h.extend_from_slice(&(file_len - 8).to_le_bytes());
            h.extend_from_slice(&data_len.to_le_bytes());
            // The fact chunk's sample count, in frames; no table entries.
            h.extend_from_slice(&self.frames.to_le_bytes());
            push_u32(&mut h, 0);
        }
        h.extend_from_slice(b"fmt ");
        push_u32(&mut h, self.fmt_len() as u32);
        let bytes = self.bytes_per_sample() as u32;
        let block_align = bytes * self.channels as u32;
        let tag: u16 = match (self.extensible(), self.format) {
            (true, _) => 0xfffe,
            (false, WavFormat::F32 | WavFormat::F64) => 3,
            (false, _) => 1,
        };
        push_u16(&mut h, tag);
        push_u16(&mut h, self.channels);
        push_u32(&mut h, self.sample_rate);
        push_u32(&mut h, self.sample_rate.wrapping_mul(block_align));
        push_u16(&mut h, block_align as u16);
        push_u16(&mut h, self.bits());
        if self.extensible() {
            push_u16(&mut h, 22);
            push_u16(&mut h, self.bits());
            push_u32(&mut h, channel_mask(self.channels));
            h.extend_from_slice(match self.format {
                WavFormat::F32 | WavFormat::F64 => &SUBTYPE_FLOAT,
                _ => &SUBTYPE_PCM,
            });
        }
        h.extend_from_slice(b"data");
        push_u32(&mut h, if rf64 { u32::MAX } else { data_len as u32 });
        debug_assert_eq!(h.len() as u64, self.header_len());
        Some(h)
    }
}

/// The default speaker assignment: the first `channels` positions (at most
/// the 18 defined ones), as hound writes it.
fn channel_mask(channels: u16) -> u32 {
    let n = channels.min(18) as u32;
    if n == 0 {
        0
    } else {
        u32::MAX >> (32 - n)
    }
}

fn push_u16(h: &mut Vec<u8>, v: u16) {
    h.extend_from_slice(&v.to_le_bytes());
}

fn push_u32(h: &mut Vec<u8>, v: u32) {
    h.extend_from_slice(&v.to_le_bytes());
}

/// The WAV sample format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WavFormat {
    F32,
    I24,
    I16,
    /// 32-bit integers: a recorded input from a 32-bit source, kept
    /// exactly (not a render format).
    #[value(skip)]
    I32,
    /// 8-bit unsigned (offset) integers: a recorded input from an 8-bit
    /// source, kept exactly (not a render format).
    #[value(skip)]
    U8,
    /// 64-bit IEEE float: a recorded input converted to the session's
    /// rate, kept exactly (not a render format).
    #[value(skip)]
    F64,
}

impl WavFormat {
    /// Bytes per sample of one channel.
    pub fn bytes_per_sample(self) -> usize {
        match self {
            WavFormat::F64 => 8,
            WavFormat::F32 | WavFormat::I32 => 4,
            WavFormat::I24 => 3,
            WavFormat::I16 => 2,
            WavFormat::U8 => 1,
        }
    }

    /// The `--format` value, for reports.
    pub fn name(self) -> &'static str {
        match self {
            WavFormat::F32 => "f32",
            WavFormat::I24 => "i24",
            WavFormat::I16 => "i16",
            WavFormat::I32 => "i32",
            WavFormat::U8 => "u8",
            WavFormat::F64 => "f64",
        }
    }
}

/// Appends `x` in `format`'s bytes (integers by [`to_int_clipped`]; 8-bit
/// WAV samples are unsigned, offset by 128); true when the sample clipped
/// (beyond ±1 an f32 sample keeps its value, but counts as clipping).
#[inline]
pub fn encode_sample(x: f64, format: WavFormat, out: &mut Vec<u8>) -> bool {
    let mut b = [0u8; 8];
    let w = format.bytes_per_sample();
    let clipped = encode_sample_into(x, format, &mut b[..w]);
    out.extend_from_slice(&b[..w]);
    clipped
}

/// [`encode_sample`] into `out`, which holds exactly one sample's bytes
/// ([`WavFormat::bytes_per_sample`]).
#[inline]
pub fn encode_sample_into(x: f64, format: WavFormat, out: &mut [u8]) -> bool {
    match format {
        WavFormat::F32 => {
            out.copy_from_slice(&(x as f32).to_le_bytes());
            x.abs() > 1.0
        }
        WavFormat::F64 => {
            out.copy_from_slice(&x.to_le_bytes());
            x.abs() > 1.0
        }
        WavFormat::I32 => {
            let (v, clipped) = to_int_clipped(x, 32);
            out.copy_from_slice(&v.to_le_bytes());
            clipped
        }
        WavFormat::I24 => {
            let (v, clipped) = to_int_clipped(x, 24);
            out.copy_from_slice(&v.to_le_bytes()[..3]);
            clipped
        }
        WavFormat::I16 => {
            let (v, clipped) = to_int_clipped(x, 16);
            out.copy_from_slice(&(v as i16).to_le_bytes());
            clipped
        }
        WavFormat::U8 => {
            let (v, clipped) = to_int_clipped(x, 8);
            out[0] = (v + 128) as u8;
            clipped
        }
    }
}

/// Integer PCM: scale by 2^(bits−1)−1, round half to even, clamp; no dither.
#[inline]
pub fn to_int(x: f64, bits: u32) -> i32 {
    to_int_clipped(x, bits).0
}

/// [`to_int`], and whether the clamp changed the value (the sample clipped).
#[inline]
pub fn to_int_clipped(x: f64, bits: u32) -> (i32, bool) {
    let full = ((1i64 << (bits - 1)) - 1) as f64;
    let v = (x * full).round_ties_even();
    let c = v.clamp(-full - 1.0, full);
    (c as i32, c != v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 8-bit value, and 32-bit values across the range, scaled as
    /// an input reads them (v / (2^(b−1) − 1)), encode back to themselves:
    /// the recorded input of an 8- or 32-bit source is exact.
    #[test]
    fn eight_and_thirty_two_bit_samples_are_kept_exactly() {
        let int_to_sample = |v: i32, bits: u32| v as f64 / ((1i64 << (bits - 1)) - 1) as f64;
        for v in -128i32..=127 {
            let mut b = Vec::new();
            encode_sample(int_to_sample(v, 8), WavFormat::U8, &mut b);
            assert_eq!(b, vec![(v + 128) as u8], "{v}");
        }
        let mut v = i32::MIN;
        loop {
            let mut b = Vec::new();
            encode_sample(int_to_sample(v, 32), WavFormat::I32, &mut b);
            assert_eq!(i32::from_le_bytes(b[..].try_into().unwrap()), v);
            match v.checked_add(16_777_259) {
                Some(n) => v = n,
                None => break,
            }
        }
    }

    fn layout(channels: u16, format: WavFormat, frames: u64) -> WavLayout {
        WavLayout {
            channels,
            sample_rate: 48000,
            format,
            frames,
        }
    }

    fn u32_at(h: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(h[at..at + 4].try_into().unwrap())
    }

    fn u64_at(h: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(h[at..at + 8].try_into().unwrap())
    }

    /// Oracle: below 4 GiB the header is byte for byte what hound writes
    /// (hound seeks back to fill in the sizes; ours knows them up front).
    #[test]
    fn small_headers_match_hound() {
        for channels in [1u16, 2, 3, 8] {
            for format in [
                WavFormat::F32,
                WavFormat::I24,
                WavFormat::I16,
                WavFormat::I32,
                WavFormat::U8,
            ] {
                let l = layout(channels, format, 1001);
                let spec = hound::WavSpec {
                    channels,
                    sample_rate: 48000,
                    bits_per_sample: l.bits(),
                    sample_format: match format {
                        WavFormat::F32 => hound::SampleFormat::Float,
                        _ => hound::SampleFormat::Int,
                    },
                };
                let mut cursor = std::io::Cursor::new(Vec::new());
                let mut w = hound::WavWriter::new(&mut cursor, spec).unwrap();
                for _ in 0..1001 * channels as usize {
                    match format {
                        WavFormat::F32 => w.write_sample(0.0f32).unwrap(),
                        WavFormat::I24 | WavFormat::I32 => w.write_sample(0i32).unwrap(),
                        WavFormat::I16 => w.write_sample(0i16).unwrap(),
                        WavFormat::U8 => w.write_sample(0i8).unwrap(),
                        WavFormat::F64 => unreachable!("hound writes no 64-bit float"),
                    }
                }
                w.finalize().unwrap();
                let theirs = cursor.into_inner();
                let ours = l.header().unwrap();
                assert!(!l.is_rf64());
                let data = l.data_len().unwrap() as usize;
                if data % 2 == 1 {
                    // hound leaves out the pad byte and does not count it.
                    assert_eq!(ours[..4], theirs[..4]);
                    assert_eq!(u32_at(&ours, 4), u32_at(&theirs, 4) + 1);
                    assert_eq!(ours[8..], theirs[8..ours.len()], "{channels} ch {format:?}");
                } else {
                    assert_eq!(ours[..], theirs[..ours.len()], "{channels} ch {format:?}");
                }
                assert_eq!(theirs.len(), ours.len() + data);
                assert_eq!(l.file_len().unwrap(), (theirs.len() as u64 + l.pad_len()));
            }
        }
    }

    // #render-safety: `-d 22400s` (4.3 GB, f32 mono) wrote a header saying 30.38 s.
    #[test]
    fn past_4_gib_the_header_is_rf64_with_exact_64_bit_sizes() {
        let frames = 22400 * 48000;
        let l = layout(1, WavFormat::F32, frames);
        let data = 4_300_800_000u64;
        assert_eq!(l.data_len(), Some(data));
        assert!(l.is_rf64(), "{data} bytes do not fit a RIFF size");
        let h = l.header().unwrap();
        assert_eq!(&h[0..4], b"RF64");
        assert_eq!(u32_at(&h, 4), u32::MAX);
        assert_eq!(&h[8..16], b"WAVEds64");
        assert_eq!(u32_at(&h, 16), 28);
        assert_eq!(u64_at(&h, 20), l.file_len().unwrap() - 8);
        assert_eq!(u64_at(&h, 28), data);
        assert_eq!(u64_at(&h, 36), frames);
        assert_eq!(u32_at(&h, 44), 0);
        assert_eq!(&h[48..52], b"fmt ");
        let data_at = h.len() - 8;
        assert_eq!(&h[data_at..data_at + 4], b"data");
        assert_eq!(u32_at(&h, data_at + 4), u32::MAX);
        assert_eq!(l.file_len(), Some(h.len() as u64 + data));

        // 5 GiB of stereo i24 (whole frames): the arithmetic, never the bytes.
        let five_gib = 5u64 << 30;
        let l = layout(2, WavFormat::I24, five_gib / 6);
        assert_eq!(l.data_len(), Some(five_gib / 6 * 6));
        assert!(l.is_rf64());
        let h = l.header().unwrap();
        assert_eq!(u64_at(&h, 28), five_gib / 6 * 6);
        assert_eq!(u64_at(&h, 20), h.len() as u64 + five_gib / 6 * 6 - 8);
    }

    #[test]
    fn rf64_starts_exactly_where_the_riff_size_overflows() {
        // f32 mono has the 40-byte extensible fmt: RIFF size = data + 60.
        let last_classic = (u32::MAX as u64 - 1 - 60) / 4;
        let l = layout(1, WavFormat::F32, last_classic);
        assert!(!l.is_rf64());
        assert_eq!(
            u32_at(&l.header().unwrap(), 4) as u64,
            last_classic * 4 + 60
        );
        assert!(layout(1, WavFormat::F32, last_classic + 1).is_rf64());
    }

    #[test]
    fn odd_data_is_padded_and_counted() {
        let l = layout(1, WavFormat::I24, 3);
        assert_eq!(l.data_len(), Some(9));
        assert_eq!(l.pad_len(), 1);
        let h = l.header().unwrap();
        assert_eq!(u32_at(&h, 4) as u64, l.file_len().unwrap() - 8);
        assert_eq!(l.file_len(), Some(h.len() as u64 + 10));
    }

    #[test]
    fn sizes_past_u64_have_no_header() {
        let l = layout(8, WavFormat::F32, u64::MAX / 4);
        assert_eq!(l.data_len(), None);
        assert!(l.header().is_none());
    }

    #[test]
    fn integer_conversion_rounds_half_even_and_clamps() {
        assert_eq!(to_int(1.0, 16), 32767);
        assert_eq!(to_int(-1.0, 16), -32767);
        assert_eq!(to_int(2.0, 16), 32767);
        assert_eq!(to_int(-2.0, 16), -32768);
        // 0.5/32767 scales to exactly 0.5 → rounds to 0 (even); 1.5 → 2.
        assert_eq!(to_int(0.5 / 32767.0, 16), 0);
        assert_eq!(to_int(1.5 / 32767.0, 16), 2);
        assert_eq!(to_int(1.0, 24), 8388607);
    }

    #[test]
    fn clipping_is_exactly_what_the_clamp_changed() {
        // ±1.0 is full scale, not clipped; -32768 is reached only by clamping.
        assert_eq!(to_int_clipped(1.0, 16), (32767, false));
        assert_eq!(to_int_clipped(-1.0, 16), (-32767, false));
        assert_eq!(to_int_clipped(-32768.0 / 32767.0, 16), (-32768, false));
        assert_eq!(to_int_clipped(-32768.6 / 32767.0, 16), (-32768, true));
        // Rounds to full scale first: not clipped.
        assert_eq!(to_int_clipped(32767.4 / 32767.0, 16), (32767, false));
        assert_eq!(to_int_clipped(32767.6 / 32767.0, 16), (32767, true));
        assert_eq!(to_int_clipped(1.5, 24), (8388607, true));
    }
}
