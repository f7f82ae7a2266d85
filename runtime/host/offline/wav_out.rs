//! The render's WAV output: the main bus encoded frame by frame (with its
//! hash and levels), and where the header goes when the length is known
//! only at the end (a render whose length is its input's plus the scene's
//! tail).
//!
//! The header carries the final sizes, so it is written first when the
//! length is known (`-d`, the scene's duration): the samples then stream
//! to a pipe as they render. When it is not, the output must still never
//! be a partial file and `-o -` must still get a WAV with true sizes:
//!
//! - a regular file is written under its temporary name after a
//!   placeholder header (the input's length), which is rewritten in place
//!   once the length is known and before the rename, so a render that
//!   fails leaves nothing; only a tail that takes the file past 4 GiB,
//!   where the header grows by the 36-byte `ds64` chunk, moves the samples;
//! - a stream (standard output, a FIFO, a device) cannot be rewritten, and
//!   rendering twice (once to learn the length) would cost the render again
//!   and need the input twice, which a pipe cannot give: the samples go to
//!   a spool file that is removed from the directory as soon as it is made
//!   (so nothing is left behind however the process ends), and the header
//!   and the samples follow once the render is complete. The stream then
//!   gets everything at the end; `-d` streams as it renders.

use super::input::{Step, Tail, TAIL_THRESHOLD};
use super::levels::Levels;
use crate::engine::BusRef;
use crate::host::files::wav::{encode_sample, WavFormat, WavLayout};
use crate::host::files::write::Sink;
use crate::host::HostError;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufWriter, Seek, Write};
use std::os::unix::fs::FileExt;

/// Encodes frames into the WAV format, hashing them at engine precision
/// and measuring their levels.
pub struct Encoder {
    format: WavFormat,
    f32_bus: bool,
    /// Peak, clipping and DC offset of what was encoded.
    pub levels: Levels,
    hasher: Sha256,
    hash_bytes: Vec<u8>,
    bytes: Vec<u8>,
    /// Frames encoded so far.
    pub frames: u64,
}

impl Encoder {
    /// An encoder for `channels` channels of a bus at f32 (`f32_bus`) or f64.
    pub fn new(channels: usize, format: WavFormat, f32_bus: bool) -> Encoder {
        Encoder {
            format,
            f32_bus,
            levels: Levels::new(channels, format),
            hasher: Sha256::new(),
            hash_bytes: Vec::new(),
            bytes: Vec::new(),
            frames: 0,
        }
    }

    /// One frame, channel by channel.
    fn frame(&mut self, samples: impl Iterator<Item = f64>) {
        for (c, x) in samples.enumerate() {
            if self.f32_bus {
                self.hash_bytes.extend_from_slice(&(x as f32).to_le_bytes());
            } else {
                self.hash_bytes.extend_from_slice(&x.to_le_bytes());
            }
            let clipped = encode_sample(x, self.format, &mut self.bytes);
            self.levels.add(c, x, clipped);
        }
        self.frames += 1;
    }

    /// The bytes encoded since the last call (hashed now).
    pub fn take(&mut self) -> &[u8] {
        self.hasher.update(&self.hash_bytes);
        self.hash_bytes.clear();
        &self.bytes
    }

    /// Empties the byte buffer after its bytes were written.
    pub fn clear(&mut self) {
        self.bytes.clear();
    }

    /// The hex SHA-256 of every frame encoded.
    pub fn hash(self) -> String {
        crate::host::files::digest::hex(&self.hasher.finalize())
    }
}

/// Which frames of each block are written: all of them, or those the
/// [`Tail`] lets through (silent frames past the input held back until
/// the tail goes on).
pub struct Framer {
    tail: Option<Tail>,
    /// The absolute sample of the next block's first frame.
    at: u64,
    channels: usize,
    /// Interleaved frames held back.
    held: Vec<f64>,
}

impl Framer {
    /// Frames from absolute sample `at`; `tail` decides the end, or every
    /// frame is written.
    pub fn new(at: u64, channels: usize, tail: Option<Tail>) -> Framer {
        Framer {
            tail,
            at,
            channels,
            held: Vec::new(),
        }
    }

    /// The tail, once the input's end is known.
    pub fn tail_mut(&mut self) -> Option<&mut Tail> {
        self.tail.as_mut()
    }

    /// Encodes the frames of `bus` to be written; returns whether the
    /// render ends here (the tail ended).
    pub fn block(&mut self, bus: BusRef<'_>, enc: &mut Encoder) -> bool {
        let n = bus.frames();
        let Some(tail) = &mut self.tail else {
            (0..n).for_each(|i| enc.frame((0..bus.channels()).map(|c| bus.get(c, i))));
            self.at += n as u64;
            return false;
        };
        for i in 0..n {
            let loud = (0..self.channels).any(|c| bus.get(c, i).abs() >= TAIL_THRESHOLD);
            match tail.step(self.at + i as u64, loud) {
                Step::Write => {
                    for f in self.held.chunks(self.channels) {
                        enc.frame(f.iter().copied());
                    }
                    self.held.clear();
                    enc.frame((0..self.channels).map(|c| bus.get(c, i)));
                }
                Step::Hold => self.held.extend((0..self.channels).map(|c| bus.get(c, i))),
                Step::End => {
                    self.held.clear();
                    return true;
                }
            }
        }
        self.at += n as u64;
        false
    }

    /// The tail, at the end.
    pub fn into_tail(self) -> Option<Tail> {
        self.tail
    }
}

/// Where the encoded samples go.
pub enum Body<'a> {
    /// To the output after its header: the final one, or (`placeholder`) one
    /// rewritten in the temporary file at the end.
    Direct {
        w: BufWriter<Sink<'a>>,
        placeholder: Option<WavLayout>,
    },
    /// To a spool file, copied to the stream after the header at the end.
    Spool { w: BufWriter<File>, sink: Sink<'a> },
}

/// A write failure: the output's, or the spool's.
pub enum BodyError {
    Output(io::Error),
    Spool(io::Error),
}

impl<'a> Body<'a> {
    /// Writes the header of `layout` when its length is final; otherwise a
    /// placeholder (a temporary file) or nothing yet (a stream, spooled).
    pub fn open(
        sink: Sink<'a>,
        layout: &WavLayout,
        final_length: bool,
    ) -> Result<Body<'a>, HostError> {
        let header = layout.header().expect("wav_layout() checked the size");
        if final_length || sink.temp_file().is_some() {
            let mut w = BufWriter::with_capacity(1 << 20, sink);
            if let Err(e) = w.write_all(&header) {
                return Err(w.into_parts().0.write_error(e).into());
            }
            let placeholder = (!final_length).then_some(*layout);
            return Ok(Body::Direct { w, placeholder });
        }
        let spool = spool_file().map_err(spool_error)?;
        Ok(Body::Spool {
            w: BufWriter::with_capacity(1 << 20, spool),
            sink,
        })
    }

    /// Writes encoded samples.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), BodyError> {
        match self {
            Body::Direct { w, .. } => w.write_all(bytes).map_err(BodyError::Output),
            Body::Spool { w, .. } => w.write_all(bytes).map_err(BodyError::Spool),
        }
    }

    /// The output, for a failure's message (dropping it removes a temporary file).
    pub fn into_sink(self) -> Sink<'a> {
        match self {
            Body::Direct { w, .. } => w.into_parts().0,
            Body::Spool { sink, .. } => sink,
        }
    }

    /// The error for `e`, naming the output or the spool.
    pub fn error(self, e: BodyError) -> HostError {
        match e {
            BodyError::Output(e) => self.into_sink().write_error(e).into(),
            BodyError::Spool(e) => spool_error(e),
        }
    }

    /// Completes the samples of `layout` (its final length): the pad byte,
    /// then the header rewritten in place, or the header and the spool
    /// copied to the stream. The sink is left to finish (rename, flush).
    pub fn complete(self, layout: &WavLayout) -> Result<Sink<'a>, HostError> {
        let header = layout.header().expect("wav_layout() checked the size");
        let pad = vec![0u8; layout.pad_len() as usize];
        match self {
            Body::Direct { mut w, placeholder } => {
                if let Err(e) = w.write_all(&pad).and_then(|_| w.flush()) {
                    return Err(w.into_parts().0.write_error(e).into());
                }
                let sink = w.into_parts().0;
                if let (Some(p), Some(file)) = (placeholder, sink.temp_file()) {
                    let data = layout.data_len().unwrap_or(0) + layout.pad_len();
                    if let Err(e) = rewrite_header(file, &header, p.header_len(), data) {
                        return Err(sink.write_error(e).into());
                    }
                }
                Ok(sink)
            }
            Body::Spool { w, mut sink } => {
                let mut spool = w.into_inner().map_err(|e| spool_error(e.into_error()))?;
                spool.rewind().map_err(spool_error)?;
                let data = layout.data_len().unwrap_or(0);
                let copied = sink
                    .write_all(&header)
                    .and_then(|_| io::copy(&mut io::Read::take(&mut spool, data), &mut sink))
                    .and_then(|n| sink.write_all(&pad).map(|_| n));
                match copied {
                    Ok(n) if n == data => Ok(sink),
                    Ok(n) => Err(spool_error(io::Error::other(format!(
                        "{n} of its {data} bytes came back"
                    )))),
                    Err(e) => Err(sink.write_error(e).into()),
                }
            }
        }
    }
}

/// Writes `header` at the start of `file`, whose `data` bytes of samples
/// start at `old_len`; moves them first when the header's length changed.
fn rewrite_header(file: &File, header: &[u8], old_len: u64, data: u64) -> io::Result<()> {
    let new_len = header.len() as u64;
    if new_len != old_len {
        // From the end backwards, so a move to later bytes never
        // overwrites what is still to be moved.
        let mut buf = vec![0u8; 1 << 20];
        let mut left = data;
        while left > 0 {
            let n = left.min(buf.len() as u64);
            left -= n;
            file.read_exact_at(&mut buf[..n as usize], old_len + left)?;
            file.write_all_at(&buf[..n as usize], new_len + left)?;
        }
        file.set_len(new_len + data)?;
    }
    file.write_all_at(header, 0)
}

/// A new file in the temporary directory, already removed from it: it
/// lives as long as the handle, whatever ends the process.
fn spool_file() -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    for n in 0..100u32 {
        let path = dir.join(format!(".morphrt-render-{}-{n}.spool", std::process::id()));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free name"))
}

/// A spool failure: where it was and how to render without one.
fn spool_error(e: io::Error) -> HostError {
    HostError::Runtime(format!(
        "cannot hold the render in the temporary directory `{}` until its length is known: {e}; give -d to stream the output as it renders (or set TMPDIR)",
        std::env::temp_dir().display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header that grew (a tail that took the file past 4 GiB gains the
    /// `ds64` chunk) moves the samples after it intact; one of the same
    /// length is rewritten in place.
    #[test]
    fn a_grown_header_moves_the_samples_after_it() {
        let path = std::env::temp_dir().join(format!("morphrt-wav-out-{}", std::process::id()));
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * (1 << 20) + 17).collect();
        let mut bytes = b"OLD!".to_vec();
        bytes.extend_from_slice(&data);
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        rewrite_header(&file, b"NEWHEADER", 4, data.len() as u64).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(&got[..9], b"NEWHEADER");
        assert!(got[9..] == data[..], "the samples moved intact");
        rewrite_header(&file, b"SAMELENTH", 9, data.len() as u64).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!((&got[..9], got.len()), (&b"SAMELENTH"[..], 9 + data.len()));
        std::fs::remove_file(&path).unwrap();
    }
}
