//! The render's FLAC output (`render -o out.flac`, or `--container flac`):
//! the integer samples the WAV writer encodes (16- or 24-bit little-endian,
//! interleaved) are spooled while the render runs, then encoded here by the
//! `flacenc` crate into the output, frame by frame. Two passes over the
//! spool: the first takes the MD5 of the samples and their count, which the
//! stream's header (`STREAMINFO`) carries before the first frame, so the
//! FLAC also streams to standard output or a FIFO; the second encodes.
//! Decoding gives back every integer sample exactly.

use crate::host::files::wav::{WavFormat, WavLayout};
use flacenc::bitsink::ByteSink;
use flacenc::component::{BitRepr, Stream};
use flacenc::error::Verify;
use flacenc::source::{Context, Fill, FrameBuf};
use std::io::{self, Read, Seek, Write};

/// Frames per FLAC frame (the reference encoder's default).
const BLOCK_FRAMES: usize = 4096;

/// What FLAC output refuses: a sample format it does not hold.
pub fn check_format(format: WavFormat) -> Result<(), crate::host::files::error::FileError> {
    match format {
        WavFormat::I16 | WavFormat::I24 => Ok(()),
        other => Err(crate::host::files::error::FileError::FlacFormat {
            format: other.name(),
        }),
    }
}

/// Reads until `buf` is full or `r` ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
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

fn flac_error(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("the FLAC encoder failed: {e}"))
}

/// Encodes the samples of `spool` (the WAV body of `layout`, from its
/// start) into a FLAC stream written to `out`.
pub fn encode<R: Read + Seek>(
    spool: &mut R,
    layout: &WavLayout,
    out: &mut dyn Write,
) -> io::Result<()> {
    check_format(layout.format).map_err(io::Error::other)?;
    let width = layout.bytes_per_sample() as usize;
    let bits = width * 8;
    let channels = layout.channels as usize;
    let mut buf = vec![0u8; BLOCK_FRAMES * channels * width];

    // Pass 1: the MD5 of the samples and their count, for the header.
    let mut sums = Context::new(bits, channels);
    loop {
        let n = read_full(spool, &mut buf)?;
        if n == 0 {
            break;
        }
        sums.fill_le_bytes(&buf[..n], width).map_err(flac_error)?;
    }
    let mut stream =
        Stream::new(layout.sample_rate as usize, channels, bits).map_err(flac_error)?;
    let info = stream.stream_info_mut();
    info.set_md5_digest(&sums.md5_digest());
    info.set_total_samples(sums.total_samples());
    info.set_block_sizes(BLOCK_FRAMES, BLOCK_FRAMES)
        .map_err(flac_error)?;
    let mut bytes = ByteSink::new();
    stream.write(&mut bytes).map_err(flac_error)?;
    out.write_all(bytes.as_slice())?;

    // Pass 2: the frames.
    spool.rewind()?;
    let config = flacenc::config::Encoder::default()
        .into_verified()
        .map_err(|(_, e)| flac_error(e))?;
    let mut frame = FrameBuf::with_size(channels, BLOCK_FRAMES).map_err(flac_error)?;
    let mut context = Context::new(bits, channels);
    loop {
        let n = read_full(spool, &mut buf)?;
        if n == 0 {
            break;
        }
        (&mut frame, &mut context)
            .fill_le_bytes(&buf[..n], width)
            .map_err(flac_error)?;
        let number = context
            .current_frame_number()
            .ok_or_else(|| flac_error("no frame number"))?;
        let encoded =
            flacenc::encode_fixed_size_frame(&config, &frame, number, stream.stream_info())
                .map_err(flac_error)?;
        bytes.clear();
        encoded.write(&mut bytes).map_err(flac_error)?;
        out.write_all(bytes.as_slice())?;
    }
    Ok(())
}
