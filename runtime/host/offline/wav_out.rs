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
use crate::host::files::wav::{encode_sample, to_int_clipped, WavFormat, WavLayout};
use crate::host::files::write::Sink;
use crate::host::offline::error::RenderError;
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
    /// The hash of what was encoded, when one was asked for.
    hasher: Option<Sha256>,
    hash_bytes: Vec<u8>,
    bytes: Vec<u8>,
    /// Each channel's clipped samples in a run.
    clips: Vec<u64>,
    /// Frames encoded so far.
    pub frames: u64,
}

impl Encoder {
    /// An encoder for `channels` channels of a bus at f32 (`f32_bus`) or
    /// f64, hashing what it encodes when `hash` says so.
    pub fn new(channels: usize, format: WavFormat, f32_bus: bool, hash: bool) -> Encoder {
        Encoder {
            format,
            f32_bus,
            levels: Levels::new(channels, format),
            hasher: hash.then(Sha256::new),
            hash_bytes: Vec::new(),
            bytes: Vec::new(),
            clips: Vec::with_capacity(channels),
            frames: 0,
        }
    }

    /// One frame, channel by channel.
    fn one_frame(&mut self, samples: impl Iterator<Item = f64>) {
        for (c, x) in samples.enumerate() {
            // (f32 at f32 is hashed from the encoded bytes, in `take`.)
            if self.hash_is_separate() {
                if self.f32_bus {
                    self.hash_bytes.extend_from_slice(&(x as f32).to_le_bytes());
                } else {
                    self.hash_bytes.extend_from_slice(&x.to_le_bytes());
                }
            }
            let clipped = encode_sample(x, self.format, &mut self.bytes);
            self.levels.add(c, x, clipped);
        }
        self.frames += 1;
    }

    /// Encodes the frames gathered in `batch`, which is left empty.
    pub fn batch(&mut self, batch: &mut Batch) {
        let n = batch.frames;
        match &batch.chans {
            Chans::F32(c) => self.run_of(c, 0, n),
            Chans::F64(c) => self.run_of(c, 0, n),
        }
        batch.clear();
    }

    fn run_of<S: BusSample>(&mut self, chans: &[Vec<S>], from: usize, to: usize) {
        let (len, width) = (to.saturating_sub(from), chans.len());
        if len == 0 {
            return;
        }
        let format = self.format;
        let w = format.bytes_per_sample();
        // The samples at engine precision are hashed; for f32 at f32 they
        // are the encoded bytes themselves (see `take`).
        if self.hash_is_separate() {
            let at = self.hash_bytes.len();
            self.hash_bytes.resize(at + len * width * S::BYTES, 0);
            let out = &mut self.hash_bytes[at..];
            match S::BYTES {
                4 => interleave::<S, 4>(out, chans, from..to, |_, _| {}, |x| (x.le4(), false)),
                _ => interleave::<S, 8>(out, chans, from..to, |_, _| {}, |x| (x.le8(), false)),
            }
        }
        let at = self.bytes.len();
        self.bytes.resize(at + len * width * w, 0);
        let out = &mut self.bytes[at..];
        let mut clips = std::mem::take(&mut self.clips);
        clips.clear();
        let counted = |_, clipped| clips.push(clipped);
        match format {
            WavFormat::F32 => interleave::<S, 4>(out, chans, from..to, counted, |x| {
                let x = x.to_f64();
                ((x as f32).to_le_bytes(), x.abs() > 1.0)
            }),
            WavFormat::F64 => interleave::<S, 8>(out, chans, from..to, counted, |x| {
                let x = x.to_f64();
                (x.to_le_bytes(), x.abs() > 1.0)
            }),
            WavFormat::I32 => interleave::<S, 4>(out, chans, from..to, counted, |x| {
                let (v, c) = to_int_clipped(x.to_f64(), 32);
                (v.to_le_bytes(), c)
            }),
            WavFormat::I24 => interleave::<S, 3>(out, chans, from..to, counted, |x| {
                let (v, c) = to_int_clipped(x.to_f64(), 24);
                let b = v.to_le_bytes();
                ([b[0], b[1], b[2]], c)
            }),
            WavFormat::I16 => interleave::<S, 2>(out, chans, from..to, counted, |x| {
                let (v, c) = to_int_clipped(x.to_f64(), 16);
                ((v as i16).to_le_bytes(), c)
            }),
            WavFormat::U8 => interleave::<S, 1>(out, chans, from..to, counted, |x| {
                let (v, c) = to_int_clipped(x.to_f64(), 8);
                ([(v + 128) as u8], c)
            }),
        }
        self.levels.add_frames(chans, from..to, |c| clips[c]);
        self.clips = clips;
        self.frames += len as u64;
    }

    /// Whether the hash's bytes are the encoded ones (f32 samples at f32).
    fn hash_is_body(&self) -> bool {
        self.f32_bus && self.format == WavFormat::F32
    }

    /// Whether the samples are hashed from bytes of their own (a hash was
    /// asked for, and the encoded bytes are not the samples at engine
    /// precision).
    fn hash_is_separate(&self) -> bool {
        self.hasher.is_some() && !self.hash_is_body()
    }

    /// The bytes encoded since the last call (hashed now, when hashing);
    /// [`clear`](Self::clear) them once written, before encoding more (for
    /// f32 at f32 the hash reads them from here).
    pub fn take(&mut self) -> &[u8] {
        let body = self.hash_is_body();
        if let Some(hasher) = &mut self.hasher {
            if body {
                hasher.update(&self.bytes);
            } else {
                hasher.update(&self.hash_bytes);
                self.hash_bytes.clear();
            }
        }
        &self.bytes
    }

    /// Empties the byte buffer after its bytes were written.
    pub fn clear(&mut self) {
        self.bytes.clear();
    }

    /// The hex SHA-256 of every frame encoded, when hashing.
    pub fn hash(self) -> Option<String> {
        self.hasher
            .map(|h| crate::host::files::digest::hex(&h.finalize()))
    }
}

/// Where the frames to write go, in order: runs of a block, and single
/// frames (held back by a tail, at bus precision in f64).
pub trait Frames {
    /// Frames `from..to` of `bus`.
    fn frames_of(&mut self, bus: BusRef<'_>, from: usize, to: usize);
    /// One frame, channel by channel.
    fn frame(&mut self, samples: impl Iterator<Item = f64>);
}

impl Frames for Encoder {
    /// Every frame of the run written: each channel's levels over the run,
    /// then the run's samples interleaved (the same bytes, hash and levels
    /// as frame by frame, with no per-sample dispatch).
    fn frames_of(&mut self, bus: BusRef<'_>, from: usize, to: usize) {
        match bus {
            BusRef::F32(b, _) => self.run_of(b, from, to),
            BusRef::F64(b, _) => self.run_of(b, from, to),
        }
    }

    fn frame(&mut self, samples: impl Iterator<Item = f64>) {
        self.one_frame(samples)
    }
}

/// Frames gathered at bus precision, one buffer per channel, to be
/// encoded elsewhere ([`Encoder::batch`]): the same bytes, hash and
/// levels as encoding them where they were played.
pub struct Batch {
    chans: Chans,
    frames: usize,
}

enum Chans {
    F32(Vec<Vec<f32>>),
    F64(Vec<Vec<f64>>),
}

impl Batch {
    /// An empty batch for `channels` channels of a bus at f32 (`f32_bus`)
    /// or f64, with room for `frames` frames.
    pub fn new(channels: usize, f32_bus: bool, frames: usize) -> Batch {
        let chans = if f32_bus {
            Chans::F32(vec![Vec::with_capacity(frames); channels])
        } else {
            Chans::F64(vec![Vec::with_capacity(frames); channels])
        };
        Batch { chans, frames: 0 }
    }

    /// The frames gathered.
    pub fn frames(&self) -> usize {
        self.frames
    }

    fn clear(&mut self) {
        match &mut self.chans {
            Chans::F32(c) => c.iter_mut().for_each(Vec::clear),
            Chans::F64(c) => c.iter_mut().for_each(Vec::clear),
        }
        self.frames = 0;
    }
}

impl Frames for Batch {
    /// Copies the run; a render's bus keeps the precision its batch was
    /// made for.
    fn frames_of(&mut self, bus: BusRef<'_>, from: usize, to: usize) {
        match (bus, &mut self.chans) {
            (BusRef::F32(b, _), Chans::F32(c)) => c
                .iter_mut()
                .zip(b)
                .for_each(|(c, b)| c.extend_from_slice(&b[from..to])),
            (BusRef::F64(b, _), Chans::F64(c)) => c
                .iter_mut()
                .zip(b)
                .for_each(|(c, b)| c.extend_from_slice(&b[from..to])),
            _ => unreachable!("a batch is made for the bus's precision"),
        }
        self.frames += to.saturating_sub(from);
    }

    /// A held frame's f64 values are f32 samples on an f32 bus, so the
    /// conversion back is exact.
    fn frame(&mut self, samples: impl Iterator<Item = f64>) {
        match &mut self.chans {
            Chans::F32(c) => c
                .iter_mut()
                .zip(samples)
                .for_each(|(c, x)| c.push(x as f32)),
            Chans::F64(c) => c.iter_mut().zip(samples).for_each(|(c, x)| c.push(x)),
        }
        self.frames += 1;
    }
}

/// A bus sample: its exact f64 value and its little-endian bytes.
trait BusSample: Copy + Into<f64> {
    const BYTES: usize;
    fn to_f64(self) -> f64;
    /// The bytes of an f32 sample (unused for f64).
    fn le4(self) -> [u8; 4];
    /// The bytes of an f64 sample (unused for f32).
    fn le8(self) -> [u8; 8];
}

impl BusSample for f32 {
    const BYTES: usize = 4;
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn le4(self) -> [u8; 4] {
        self.to_le_bytes()
    }
    #[inline]
    fn le8(self) -> [u8; 8] {
        unreachable!("an f32 sample is hashed as 4 bytes")
    }
}

impl BusSample for f64 {
    const BYTES: usize = 8;
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn le4(self) -> [u8; 4] {
        unreachable!("an f64 sample is hashed as 8 bytes")
    }
    #[inline]
    fn le8(self) -> [u8; 8] {
        self.to_le_bytes()
    }
}

/// Frames `frames` of `chans` into `out`, interleaved, `W` bytes a sample
/// made by `put` (which also says whether the sample clipped), channel by
/// channel; `counted(c, clipped)` after each channel `c`.
#[inline]
fn interleave<S: Copy, const W: usize>(
    out: &mut [u8],
    chans: &[Vec<S>],
    frames: std::ops::Range<usize>,
    mut counted: impl FnMut(usize, u64),
    put: impl Fn(S) -> ([u8; W], bool),
) {
    let stride = W * chans.len();
    // Mono and stereo, the common cases, a frame at a time.
    if let [m] = chans {
        let mut clipped = 0u64;
        for (o, &x) in out.chunks_exact_mut(W).zip(&m[frames]) {
            let (b, c) = put(x);
            o.copy_from_slice(&b);
            clipped += c as u64;
        }
        counted(0, clipped);
        return;
    }
    if let [l, r] = chans {
        let (mut a, mut b) = (0u64, 0u64);
        let (l, r) = (&l[frames.clone()], &r[frames]);
        for ((frame, &x), &y) in out.chunks_exact_mut(2 * W).zip(l).zip(r) {
            let ((bx, cx), (by, cy)) = (put(x), put(y));
            frame[..W].copy_from_slice(&bx);
            frame[W..2 * W].copy_from_slice(&by);
            a += cx as u64;
            b += cy as u64;
        }
        counted(0, a);
        counted(1, b);
        return;
    }
    for (c, ch) in chans.iter().enumerate() {
        let mut clipped = 0u64;
        for (frame, &x) in out.chunks_exact_mut(stride).zip(&ch[frames.clone()]) {
            let (b, clip) = put(x);
            frame[c * W..(c + 1) * W].copy_from_slice(&b);
            clipped += clip as u64;
        }
        counted(c, clipped);
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
    pub fn block(&mut self, bus: BusRef<'_>, enc: &mut impl Frames) -> bool {
        let n = bus.frames();
        // Frames before the tail's floor are all written, and none is held
        // before it.
        let run = match &self.tail {
            None => n,
            Some(tail) => tail.writes_before().saturating_sub(self.at).min(n as u64) as usize,
        };
        let Some(tail) = &mut self.tail else {
            enc.frames_of(bus, 0, n);
            self.at += n as u64;
            return false;
        };
        // Frames to write go in runs: from `start` while none is held.
        let mut start = self.held.is_empty().then_some(0);
        for i in run..n {
            let loud = (0..self.channels).any(|c| bus.get(c, i).abs() >= TAIL_THRESHOLD);
            match tail.step(self.at + i as u64, loud) {
                Step::Write => {
                    if start.is_none() {
                        for f in self.held.chunks(self.channels) {
                            enc.frame(f.iter().copied());
                        }
                        self.held.clear();
                        start = Some(i);
                    }
                }
                Step::Hold => {
                    if let Some(s) = start.take() {
                        enc.frames_of(bus, s, i);
                    }
                    self.held.extend((0..self.channels).map(|c| bus.get(c, i)));
                }
                Step::End => {
                    if let Some(s) = start {
                        enc.frames_of(bus, s, i);
                    }
                    self.held.clear();
                    return true;
                }
            }
        }
        if let Some(s) = start {
            enc.frames_of(bus, s, n);
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
    /// To a spool file, encoded as FLAC into the output at the end
    /// ([`crate::host::offline::flac_out`]).
    Flac { w: BufWriter<File>, sink: Sink<'a> },
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
            // The render's writer writes batches of at least 64 KiB: they
            // go through at once, so that what is left for the end (to be
            // written, and synced) is only the last batch.
            let mut w = BufWriter::with_capacity(1 << 16, sink);
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

    /// The body of a FLAC output: the samples wait in a spool.
    pub fn open_flac(sink: Sink<'a>) -> Result<Body<'a>, HostError> {
        let spool = spool_file().map_err(spool_error)?;
        Ok(Body::Flac {
            w: BufWriter::with_capacity(1 << 20, spool),
            sink,
        })
    }

    /// Writes encoded samples.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), BodyError> {
        match self {
            Body::Direct { w, .. } => w.write_all(bytes).map_err(BodyError::Output),
            Body::Spool { w, .. } | Body::Flac { w, .. } => {
                w.write_all(bytes).map_err(BodyError::Spool)
            }
        }
    }

    /// The output, for a failure's message (dropping it removes a temporary file).
    pub fn into_sink(self) -> Sink<'a> {
        match self {
            Body::Direct { w, .. } => w.into_parts().0,
            Body::Spool { sink, .. } | Body::Flac { sink, .. } => sink,
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
            Body::Flac { w, mut sink } => {
                let mut spool = w.into_inner().map_err(|e| spool_error(e.into_error()))?;
                spool.rewind().map_err(spool_error)?;
                let mut out = BufWriter::with_capacity(1 << 20, &mut sink);
                let written = crate::host::offline::flac_out::encode(&mut spool, layout, &mut out)
                    .and_then(|_| out.flush());
                drop(out);
                match written {
                    Ok(()) => Ok(sink),
                    Err(e) => Err(sink.write_error(e).into()),
                }
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

/// A spool failure: where it was (the message says how to render
/// without one).
fn spool_error(source: io::Error) -> HostError {
    RenderError::Spool {
        dir: std::env::temp_dir(),
        source,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encoding a run of frames at once gives the bytes, hash and levels of
    /// encoding them frame by frame (the tail's path), for both bus
    /// precisions and every format, with samples that clip and a split
    /// into runs of any length.
    #[test]
    fn a_run_of_frames_encodes_as_frame_by_frame() {
        let mut z = 9u64;
        let chans: Vec<Vec<f64>> = (0..3)
            .map(|_| {
                (0..200)
                    .map(|_| {
                        z = rand_philox::splitmix64(z);
                        ((z >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.6
                    })
                    .collect()
            })
            .collect();
        let narrow: Vec<Vec<f32>> = chans
            .iter()
            .map(|c| c.iter().map(|&x| x as f32).collect())
            .collect();
        let formats = [
            WavFormat::F32,
            WavFormat::I32,
            WavFormat::I24,
            WavFormat::I16,
            WavFormat::U8,
        ];
        for format in formats {
            for f32_bus in [false, true] {
                let bus = |n| {
                    if f32_bus {
                        BusRef::F32(&narrow, n)
                    } else {
                        BusRef::F64(&chans, n)
                    }
                };
                let (mut one, mut run, mut unhashed) = (
                    Encoder::new(3, format, f32_bus, true),
                    Encoder::new(3, format, f32_bus, true),
                    Encoder::new(3, format, f32_bus, false),
                );
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for i in 0..200 {
                    one.frame((0..3).map(|c| bus(200).get(c, i)));
                    a.extend_from_slice(one.take());
                    one.clear();
                }
                let mut c = Vec::new();
                for (from, to) in [(0, 1), (1, 64), (64, 65), (65, 200)] {
                    run.frames_of(bus(200), from, to);
                    b.extend_from_slice(run.take());
                    run.clear();
                    unhashed.frames_of(bus(200), from, to);
                    c.extend_from_slice(unhashed.take());
                    unhashed.clear();
                }
                assert_eq!(a, b, "{format:?}, f32 bus {f32_bus}");
                // Without a hash the bytes and levels are the same.
                assert_eq!(a, c, "{format:?}, f32 bus {f32_bus}, unhashed");
                assert_eq!(unhashed.levels, run.levels);
                assert_eq!(unhashed.hash(), None);
                assert_eq!(one.frames, run.frames);
                assert_eq!(one.levels, run.levels);
                assert!(run.levels.clipped() > 0);
                assert!(one.hash().is_some_and(|h| Some(h) == run.hash()));
            }
        }
    }

    /// Samples that test every conversion rule: in range, over full scale,
    /// exactly ±1, halfway between integer steps, signed zeros, denormals,
    /// infinities and NaN.
    fn awkward(channels: usize, frames: usize, seed: u64) -> Vec<Vec<f64>> {
        let special = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            1.0000001,
            -1.0000001,
            0.5 / 32767.0,
            -1.5 / 32767.0,
            2.5 / 8388607.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-310,
            -3.0,
        ];
        let mut z = seed;
        (0..channels)
            .map(|c| {
                (0..frames)
                    .map(|i| {
                        z = rand_philox::splitmix64(z);
                        if (i + c) % 5 == 0 {
                            special[(z % special.len() as u64) as usize]
                        } else {
                            ((z >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.6
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// The `data` chunk's body of a RIFF file.
    fn data_chunk(file: &[u8]) -> &[u8] {
        let mut at = 12;
        loop {
            let len = u32::from_le_bytes(file[at + 4..at + 8].try_into().unwrap()) as usize;
            if &file[at..at + 4] == b"data" {
                return &file[at + 8..at + 8 + len];
            }
            at += 8 + len + (len & 1);
        }
    }

    /// What the writer encodes, for every sample format, both bus
    /// precisions, odd channel and frame counts, and blocks of 1, 7, 64
    /// and odd lengths, is what hound writes for the same samples
    /// converted by the integer rule (scale by 2^(b−1)−1, round half to
    /// even, clamp; NaN is 0), and the levels count what clipped: beyond
    /// full scale (NaN included) in integer formats, |x| > 1 in float
    /// ones. f64 output (which hound does not write) is the samples'
    /// little-endian bytes.
    #[test]
    fn the_writer_encodes_every_format_as_hound_writes_it() {
        let formats = [
            (WavFormat::F32, 32, hound::SampleFormat::Float),
            (WavFormat::I32, 32, hound::SampleFormat::Int),
            (WavFormat::I24, 24, hound::SampleFormat::Int),
            (WavFormat::I16, 16, hound::SampleFormat::Int),
            (WavFormat::U8, 8, hound::SampleFormat::Int),
            (WavFormat::F64, 64, hound::SampleFormat::Float),
        ];
        let blocks = [1usize, 7, 64, 63, 4096, 5, 64];
        let frames: usize = blocks.iter().sum();
        for channels in [1usize, 2, 3] {
            let wide = awkward(channels, frames, channels as u64);
            let narrow: Vec<Vec<f32>> = wide
                .iter()
                .map(|c| c.iter().map(|&x| x as f32).collect())
                .collect();
            for (format, bits, kind) in formats {
                for f32_bus in [false, true] {
                    let what = format!("{format:?}, {channels} channels, f32 bus {f32_bus}");
                    let x = |c: usize, i: usize| {
                        if f32_bus {
                            narrow[c][i] as f64
                        } else {
                            wide[c][i]
                        }
                    };
                    // The writer, block by block.
                    let mut enc = Encoder::new(channels, format, f32_bus, false);
                    let mut framer = Framer::new(0, channels, None);
                    let mut got = Vec::new();
                    let mut at = 0;
                    for n in blocks {
                        let w: Vec<Vec<f64>> =
                            wide.iter().map(|c| c[at..at + n].to_vec()).collect();
                        let f: Vec<Vec<f32>> =
                            narrow.iter().map(|c| c[at..at + n].to_vec()).collect();
                        let bus = if f32_bus {
                            BusRef::F32(&f, n)
                        } else {
                            BusRef::F64(&w, n)
                        };
                        assert!(!framer.block(bus, &mut enc));
                        got.extend_from_slice(enc.take());
                        enc.clear();
                        at += n;
                    }
                    assert_eq!(enc.frames, frames as u64, "{what}");
                    // The reference: hound, and the conversion rule.
                    let full = ((1i64 << (bits.min(32) - 1)) - 1) as f64;
                    let int = |x: f64| -> (i32, bool) {
                        if x.is_nan() {
                            return (0, true);
                        }
                        let v = (x * full).round_ties_even();
                        if v > full {
                            (full as i32, true)
                        } else if v < -full - 1.0 {
                            ((-full - 1.0) as i32, true)
                        } else {
                            (v as i32, false)
                        }
                    };
                    let mut clipped = vec![0u64; channels];
                    let want = if format == WavFormat::F64 {
                        let mut b = Vec::new();
                        for i in 0..frames {
                            for (c, n) in clipped.iter_mut().enumerate() {
                                b.extend_from_slice(&x(c, i).to_le_bytes());
                                *n += (x(c, i).abs() > 1.0) as u64;
                            }
                        }
                        b
                    } else {
                        let spec = hound::WavSpec {
                            channels: channels as u16,
                            sample_rate: 48000,
                            bits_per_sample: bits as u16,
                            sample_format: kind,
                        };
                        let mut file = std::io::Cursor::new(Vec::new());
                        let mut w = hound::WavWriter::new(&mut file, spec).unwrap();
                        for i in 0..frames {
                            for (c, n) in clipped.iter_mut().enumerate() {
                                let x = x(c, i);
                                match format {
                                    WavFormat::F32 => {
                                        *n += (x.abs() > 1.0) as u64;
                                        w.write_sample(x as f32).unwrap()
                                    }
                                    WavFormat::I16 => {
                                        let (v, cl) = int(x);
                                        *n += cl as u64;
                                        w.write_sample(v as i16).unwrap()
                                    }
                                    WavFormat::U8 => {
                                        let (v, cl) = int(x);
                                        *n += cl as u64;
                                        w.write_sample(v as i8).unwrap()
                                    }
                                    _ => {
                                        let (v, cl) = int(x);
                                        *n += cl as u64;
                                        w.write_sample(v).unwrap()
                                    }
                                }
                            }
                        }
                        w.finalize().unwrap();
                        data_chunk(file.get_ref()).to_vec()
                    };
                    assert_eq!(got.len(), want.len(), "{what}");
                    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                        let w = format.bytes_per_sample();
                        let s = i / w;
                        panic!(
                            "{what}: byte {i} differs (frame {}, channel {}, sample {:e})",
                            s / channels,
                            s % channels,
                            x(s % channels, s / channels)
                        );
                    }
                    for (c, l) in enc.levels.channels.iter().enumerate() {
                        let peak = (0..frames).map(|i| x(c, i).abs()).fold(0.0, f64::max);
                        // Frames n % 4 = k summed apart, then paired.
                        let s: Vec<f64> = (0..4)
                            .map(|k| (k..frames).step_by(4).fold(0.0, |s, i| s + x(c, i)))
                            .collect();
                        let sum = (s[0] + s[1]) + (s[2] + s[3]);
                        assert_eq!(l.clipped, clipped[c], "{what}, channel {c}");
                        assert_eq!(l.peak, peak, "{what}, channel {c}");
                        // (With ±∞ among the samples, a NaN of either sign.)
                        let (got, want) = (l.dc_offset(), sum / frames as f64);
                        assert!(
                            got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                            "{what}, channel {c}: {got} against {want}"
                        );
                    }
                    assert!(enc.levels.clipped() > 0, "{what}");
                }
            }
        }
    }

    /// Frames gathered in batches ([`Batch`], the render's way to its
    /// writer thread) and encoded batch by batch give the bytes, levels
    /// and hash of the encoder fed block by block, on f32 and f64 buses,
    /// with a tail holding quiet frames back and letting them through.
    #[test]
    fn frames_gathered_in_batches_encode_as_block_by_block() {
        let (frames, floor) = (3000usize, 300u64);
        let signal = |c: usize, i: usize| {
            let x = ((i * 7 + c * 3) % 23) as f64 / 23.0 - 0.4;
            // Quiet stretches after the floor, held then let through, and
            // the quiet that ends the tail (100 frames at 1 kHz).
            if i > 400 && (i % 150 < 60 || i > 2500) {
                x * 1e-7
            } else {
                x
            }
        };
        for f32_bus in [false, true] {
            let chans: Vec<Vec<f64>> = (0..2)
                .map(|c| {
                    (0..frames)
                        .map(|i| {
                            let x = signal(c, i);
                            if f32_bus {
                                x as f32 as f64
                            } else {
                                x
                            }
                        })
                        .collect()
                })
                .collect();
            let chans32: Vec<Vec<f32>> = chans
                .iter()
                .map(|c| c.iter().map(|&x| x as f32).collect())
                .collect();
            let format = if f32_bus {
                WavFormat::F32
            } else {
                WavFormat::I24
            };
            for block in [7, 64] {
                let mut direct = Encoder::new(2, format, f32_bus, true);
                let mut batched = Encoder::new(2, format, f32_bus, true);
                let mut framers = [0, 1].map(|_| Framer::new(0, 2, Some(Tail::new(0, 0, 1000))));
                let mut batch = Batch::new(2, f32_bus, 64);
                let (mut want, mut got) = (Vec::new(), Vec::new());
                let mut at = 0;
                while at < frames {
                    let n = block.min(frames - at);
                    if at as u64 + n as u64 >= floor {
                        for f in &mut framers {
                            f.tail_mut().unwrap().input_ended(floor);
                        }
                    }
                    let p64: Vec<Vec<f64>> = chans.iter().map(|c| c[at..at + n].to_vec()).collect();
                    let p32: Vec<Vec<f32>> =
                        chans32.iter().map(|c| c[at..at + n].to_vec()).collect();
                    let bus = || {
                        if f32_bus {
                            BusRef::F32(&p32, n)
                        } else {
                            BusRef::F64(&p64, n)
                        }
                    };
                    let done = framers[0].block(bus(), &mut direct);
                    want.extend_from_slice(direct.take());
                    direct.clear();
                    assert_eq!(framers[1].block(bus(), &mut batch), done);
                    // Batches go at irregular sizes, as a render's at its own.
                    if batch.frames() >= 333 || done {
                        batched.batch(&mut batch);
                        assert_eq!(batch.frames(), 0);
                        got.extend_from_slice(batched.take());
                        batched.clear();
                    }
                    at += n;
                    if done {
                        break;
                    }
                }
                batched.batch(&mut batch);
                got.extend_from_slice(batched.take());
                let what = format!("f32 bus {f32_bus}, blocks of {block}");
                assert!(
                    direct.frames > floor && direct.frames < frames as u64,
                    "{what}: a tail held some back"
                );
                assert_eq!(batched.frames, direct.frames, "{what}");
                assert!(got == want, "{what}");
                assert_eq!(batched.levels, direct.levels, "{what}");
                assert_eq!(batched.hash(), direct.hash(), "{what}");
            }
        }
    }

    /// With a tail, the frames written (those before the floor, loud ones
    /// after it with the quiet ones between them, none after the tail
    /// ended) are those [`Tail::step`] decides frame by frame, whatever
    /// the block size.
    #[test]
    fn a_tail_writes_the_frames_its_steps_decide_in_any_blocks() {
        // At 1 kHz the tail ends after 100 quiet frames, or 60 000 frames
        // after the floor.
        let floor = 300;
        let gaps = |i: usize| !(350..400).contains(&i) && !(500..700).contains(&i);
        let always = |_: usize| true;
        type Loud<'a> = &'a dyn Fn(usize) -> bool;
        let cases: [(usize, Loud, u64); 2] = [(2000, &gaps, 500), (60_500, &always, 60_300)];
        for (frames, loud, written) in cases {
            let chans: Vec<Vec<f64>> = (0..2)
                .map(|c| {
                    (0..frames)
                        .map(|i| {
                            let x = ((i * 7 + c * 3) % 23) as f64 / 23.0 - 0.4;
                            if loud(i) || i < floor {
                                x
                            } else {
                                x * 1e-7
                            }
                        })
                        .collect()
                })
                .collect();
            // Frame by frame, as the steps decide.
            let mut tail = Tail::new(0, 0, 1000);
            tail.input_ended(floor as u64);
            let mut want = Encoder::new(2, WavFormat::I24, false, true);
            let mut held = Vec::new();
            let mut expected = Vec::new();
            for i in 0..frames {
                let frame = [chans[0][i], chans[1][i]];
                let is_loud = frame.iter().any(|x| x.abs() >= TAIL_THRESHOLD);
                match tail.step(i as u64, is_loud) {
                    Step::Write => {
                        for f in held.drain(..) {
                            want.frame([chans[0][f], chans[1][f]].into_iter());
                        }
                        want.frame(frame.into_iter());
                    }
                    Step::Hold => held.push(i),
                    Step::End => break,
                }
                expected.extend_from_slice(want.take());
                want.clear();
            }
            assert_eq!(want.frames, written);
            let (levels, hash) = (want.levels.clone(), want.hash());
            for block in [1, 7, 64, 100, 4096] {
                let mut enc = Encoder::new(2, WavFormat::I24, false, true);
                let mut framer = Framer::new(0, 2, Some(Tail::new(0, 0, 1000)));
                let mut got = Vec::new();
                let mut at = 0;
                loop {
                    let n = block.min(frames - at);
                    if at + n >= floor {
                        framer.tail_mut().unwrap().input_ended(floor as u64);
                    }
                    let part: Vec<Vec<f64>> =
                        chans.iter().map(|c| c[at..at + n].to_vec()).collect();
                    let done = framer.block(BusRef::F64(&part, n), &mut enc);
                    got.extend_from_slice(enc.take());
                    enc.clear();
                    at += n;
                    if done || at == frames {
                        break;
                    }
                }
                let what = format!("{frames} frames in blocks of {block}");
                assert_eq!(enc.frames, written, "{what}");
                assert!(got == expected, "{what}");
                assert_eq!(enc.levels, levels, "{what}");
                assert_eq!(enc.hash(), hash, "{what}");
            }
        }
    }

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
