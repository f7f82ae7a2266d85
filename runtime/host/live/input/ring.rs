//! The wait-free ring that joins an input stream to the callback (cpal has
//! no duplex stream: input and output are two streams on two threads).
//!
//! Three ends, made together by [`input_ring`]:
//! - [`RingWriter`], on the input thread: pushes whole frames, converted
//!   to f64 and, from a device at another rate than the session's, to the
//!   session's rate ([`InputRates`]); a full ring drops what does not fit
//!   (an overrun, counted).
//! - [`RingInput`], the [`LiveInput`] the player reads one block from per
//!   block of output; [`Drift`] holds its fill level steady, and a block
//!   it cannot fill is completed with silence (an underrun, counted).
//! - [`RingControl`], on the control thread: when the input stream is
//!   rebuilt it makes a new ring, hands its reading end to the
//!   [`RingInput`] (which swaps it in at its next read and primes it) and
//!   drops the old one when it comes back, so the audio thread never
//!   allocates or frees.
//!
//! What both sides see is counted in [`InputMeters`], atomics the status
//! line and the summary read.

use crate::dsp::resample::{Polyphase, RateConverter};
use crate::host::live::input::drift::{quietest_frame, Adjust, Drift, Step};
use crate::host::live::input::{InputFormat, LiveInput};
use rtrb::{Consumer, Producer, RingBuffer};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Counters of a session's input device, written by the input thread
/// and the callback, read by the control thread.
#[derive(Debug, Default)]
pub struct InputMeters {
    /// Frames waiting in the ring before the callback's last read.
    pub fill: AtomicU64,
    /// The sum of `fill` over all reads, and the number of reads (for the mean).
    pub fill_sum: AtomicU64,
    pub reads: AtomicU64,
    /// Frames the input side could not push because the ring was full.
    pub overruns: AtomicU64,
    /// Frames of silence the callback played for want of input.
    pub underruns: AtomicU64,
    /// Drift corrections: frames left out, and frames played twice.
    pub dropped: AtomicU64,
    pub repeated: AtomicU64,
    /// Frames skipped to bring a ring that ran far ahead (the output
    /// stalled) back to its set point.
    pub skipped: AtomicU64,
    /// The largest chunk the input side pushed at once (its period).
    pub period: AtomicU64,
    /// Frames the input side pushed.
    pub pushed: AtomicU64,
    /// When the input side last pushed: nanoseconds since the writer's
    /// origin, plus one (0: never).
    pub last_push_ns: AtomicU64,
    /// Rings the callback took over (one per rebuilt input stream).
    pub swaps: AtomicU64,
    /// Set at the callback's first read: a ring that fills up before the
    /// callback starts loses nothing the session would have played.
    pub reading: AtomicBool,
}

impl InputMeters {
    /// The mean fill over all reads so far, in frames.
    pub fn mean_fill(&self) -> f64 {
        let reads = self.reads.load(Ordering::Relaxed);
        if reads == 0 {
            return 0.0;
        }
        self.fill_sum.load(Ordering::Relaxed) as f64 / reads as f64
    }
}

/// An input device recording at another rate than the session plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputRates {
    /// The device's rate, in Hz.
    pub device_hz: u32,
    /// The session's rate, in Hz.
    pub session_hz: u32,
}

/// Device frames converted at a time.
const CONVERT_FRAMES: usize = 256;

/// The input side's rate conversion: morphrt's polyphase converter (its
/// lookahead is a few milliseconds, and its output the same bits on every
/// machine), with buffers made when the ring is.
struct Converting {
    conv: Polyphase,
    /// Device frames as f64 at the ring's channels.
    frames: Vec<f64>,
    /// Converted frames.
    out: Vec<f64>,
}

impl Converting {
    /// Allocates: call it off the audio thread.
    fn new(rates: InputRates, channels: usize) -> Converting {
        let conv = Polyphase::new(rates.device_hz, rates.session_hz, channels, CONVERT_FRAMES)
            .expect("input rates are checked when the device is chosen");
        let out_frames = conv.output_frames(CONVERT_FRAMES as u64) as usize + 1;
        Converting {
            conv,
            frames: vec![0.0; CONVERT_FRAMES * channels],
            out: vec![0.0; out_frames * channels],
        }
    }
}

/// The input thread's end: pushes frames of the device's channels as
/// frames of the ring's channels (extra device channels are left out,
/// missing ones are silence), converted to the session's rate when the
/// device records at another.
pub struct RingWriter {
    tx: Producer<f64>,
    device_channels: usize,
    channels: usize,
    rate: Option<Converting>,
    meters: Arc<InputMeters>,
    origin: Instant,
}

/// Writes the whole frames of `samples` that fit into `tx`; returns how
/// many frames it wrote.
fn write_frames(tx: &mut Producer<f64>, samples: &[f64], channels: usize) -> usize {
    let n = (samples.len() / channels).min(tx.slots() / channels);
    if let Ok(chunk) = tx.write_chunk_uninit(n * channels) {
        chunk.fill_from_iter(samples[..n * channels].iter().copied());
    }
    n
}

impl RingWriter {
    /// Pushes the whole frames of `data` (interleaved, the device's
    /// channels), each sample through `convert`, converted to the
    /// session's rate when the device has another. Real-time safe: never
    /// allocates, whatever the size of `data`.
    pub fn push<T: Copy>(&mut self, data: &[T], convert: impl Fn(T) -> f64) {
        let (dc, rc) = (self.device_channels.max(1), self.channels);
        let frames = data.len() / dc;
        let sample = |frame: &[T], c: usize| frame.get(c).map_or(0.0, |&x| convert(x));
        // Frames offered to the ring (at the session's rate) and written.
        let (offered, n) = match &mut self.rate {
            None => {
                let n = frames.min(self.tx.slots() / rc);
                if let Ok(chunk) = self.tx.write_chunk_uninit(n * rc) {
                    let samples = (0..n).flat_map(|f| {
                        let frame = &data[f * dc..(f + 1) * dc];
                        (0..rc).map(move |c| sample(frame, c))
                    });
                    chunk.fill_from_iter(samples);
                }
                (frames, n)
            }
            Some(r) => {
                let (mut offered, mut n) = (0, 0);
                for part in data[..frames * dc].chunks(CONVERT_FRAMES * dc) {
                    let pf = part.len() / dc;
                    for (f, dst) in r.frames[..pf * rc].chunks_exact_mut(rc).enumerate() {
                        let frame = &part[f * dc..(f + 1) * dc];
                        for (c, d) in dst.iter_mut().enumerate() {
                            *d = sample(frame, c);
                        }
                    }
                    let mut at = 0;
                    while at < pf {
                        at += r.conv.push(&r.frames[at * rc..pf * rc]);
                        loop {
                            let got = r.conv.pull(&mut r.out);
                            if got == 0 {
                                break;
                            }
                            offered += got;
                            n += write_frames(&mut self.tx, &r.out[..got * rc], rc);
                        }
                    }
                }
                (offered, n)
            }
        };
        let m = &self.meters;
        if m.reading.load(Ordering::Relaxed) {
            m.overruns
                .fetch_add((offered - n) as u64, Ordering::Relaxed);
        }
        m.pushed.fetch_add(n as u64, Ordering::Relaxed);
        m.period.fetch_max(offered as u64, Ordering::Relaxed);
        let now = self.origin.elapsed().as_nanos() as u64 + 1;
        m.last_push_ns.store(now, Ordering::Release);
    }

    /// Channels per frame the device delivers.
    pub fn device_channels(&self) -> usize {
        self.device_channels
    }
}

/// The callback's end: a [`LiveInput`] over the ring.
pub struct RingInput {
    rx: Consumer<f64>,
    channels: usize,
    format: InputFormat,
    capacity_frames: usize,
    drift: Drift,
    /// A block and one frame, for the drift corrections.
    scratch: Vec<f64>,
    swaps: Consumer<Consumer<f64>>,
    retired: Producer<Consumer<f64>>,
    meters: Arc<InputMeters>,
}

/// The control thread's end: replaces the ring when the input stream is
/// rebuilt.
pub struct RingControl {
    swaps: Producer<Consumer<f64>>,
    retired: Consumer<Consumer<f64>>,
    channels: usize,
    rates: Option<InputRates>,
    capacity_frames: usize,
    meters: Arc<InputMeters>,
    origin: Instant,
}

/// What a ring carries, and how much.
#[derive(Clone, Copy, Debug)]
pub struct RingShape {
    /// Channels per frame of the ring (the device's, when it opened).
    pub channels: usize,
    /// How the device delivers its samples (kept for the journal).
    pub format: InputFormat,
    /// Frames the ring holds.
    pub capacity_frames: usize,
    /// The largest block the reader reads at once.
    pub block: usize,
}

/// The three ends of a new ring (allocates: call it off the audio thread).
/// `origin` is the clock [`InputMeters::last_push_ns`] counts from.
pub fn input_ring(
    shape: RingShape,
    meters: Arc<InputMeters>,
    origin: Instant,
) -> (RingWriter, RingInput, RingControl) {
    input_ring_at(shape, None, meters, origin)
}

/// [`input_ring`] for a device recording at another rate than the
/// session's (`rates`): the writer converts what it pushes, and the
/// callback reads 64-bit float frames at the session's rate (the format a
/// journal then keeps them in, exactly).
pub fn input_ring_at(
    shape: RingShape,
    rates: Option<InputRates>,
    meters: Arc<InputMeters>,
    origin: Instant,
) -> (RingWriter, RingInput, RingControl) {
    let ch = shape.channels.max(1);
    let (tx, rx) = RingBuffer::new(shape.capacity_frames * ch);
    let (swap_tx, swap_rx) = RingBuffer::new(1);
    let (retired_tx, retired_rx) = RingBuffer::new(1);
    let writer = RingWriter {
        tx,
        device_channels: ch,
        channels: ch,
        rate: rates.map(|r| Converting::new(r, ch)),
        meters: meters.clone(),
        origin,
    };
    let input = RingInput {
        rx,
        channels: ch,
        format: if rates.is_some() {
            InputFormat::F64
        } else {
            shape.format
        },
        capacity_frames: shape.capacity_frames,
        drift: Drift::default(),
        scratch: vec![0.0; (shape.block + 1) * ch],
        swaps: swap_rx,
        retired: retired_tx,
        meters: meters.clone(),
    };
    let control = RingControl {
        swaps: swap_tx,
        retired: retired_rx,
        channels: ch,
        rates,
        capacity_frames: shape.capacity_frames,
        meters,
        origin,
    };
    (writer, input, control)
}

impl RingControl {
    /// A new ring for a rebuilt input stream that delivers
    /// `device_channels`: its writer, while its reading end goes to the
    /// callback. `None` while the callback has not taken the previous one
    /// yet (try again later).
    pub fn replace(&mut self, device_channels: usize) -> Option<RingWriter> {
        self.collect();
        if self.swaps.slots() == 0 {
            return None;
        }
        let (tx, rx) = RingBuffer::new(self.capacity_frames * self.channels);
        if self.swaps.push(rx).is_err() {
            return None;
        }
        self.meters.period.store(0, Ordering::Relaxed);
        Some(RingWriter {
            tx,
            device_channels: device_channels.max(1),
            channels: self.channels,
            rate: self.rates.map(|r| Converting::new(r, self.channels)),
            meters: self.meters.clone(),
            origin: self.origin,
        })
    }

    /// Drops the rings the callback gave back.
    pub fn collect(&mut self) {
        while self.retired.pop().is_ok() {}
    }

    /// Whether a ring handed over has not been taken by the callback yet.
    pub fn swap_pending(&self) -> bool {
        self.swaps.slots() == 0
    }
}

impl RingInput {
    /// Takes over a new ring, when one was handed over and the old one can
    /// be given back (never freed here).
    fn take_new_ring(&mut self) {
        if self.retired.slots() == 0 {
            return;
        }
        if let Ok(rx) = self.swaps.pop() {
            let old = std::mem::replace(&mut self.rx, rx);
            // Room was checked above, and this is the only producer.
            let _ = self.retired.push(old);
            self.drift.reset();
            self.meters.swaps.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Leaves out the next `frames` frames.
    fn discard(&mut self, frames: usize) {
        if let Ok(chunk) = self.rx.read_chunk(frames * self.channels) {
            chunk.commit_all();
        }
    }

    /// Reads a block with one frame left out: the quietest of one more.
    fn read_dropping(&mut self, dst: &mut [f64]) {
        let ch = self.channels;
        let n = dst.len() + ch;
        let scratch = &mut self.scratch[..n];
        pop(&mut self.rx, scratch);
        let k = quietest_frame(scratch, ch) * ch;
        dst[..k].copy_from_slice(&scratch[..k]);
        dst[k..].copy_from_slice(&scratch[k + ch..]);
    }

    /// Reads a block with one frame played twice: the quietest of one less.
    fn read_repeating(&mut self, dst: &mut [f64]) {
        let ch = self.channels;
        let n = dst.len() - ch;
        let scratch = &mut self.scratch[..n];
        pop(&mut self.rx, scratch);
        let k = quietest_frame(scratch, ch) * ch;
        dst[..k + ch].copy_from_slice(&scratch[..k + ch]);
        dst[k + ch..].copy_from_slice(&scratch[k..]);
    }

    /// Reads a block as [`Drift`] decided.
    fn read_block(&mut self, dst: &mut [f64], skip: usize, counted: bool, adjust: Adjust) {
        self.discard(skip);
        let m = &self.meters;
        if counted {
            m.skipped.fetch_add(skip as u64, Ordering::Relaxed);
        }
        // A block longer than the scratch buffer is read as it is.
        let fits = dst.len() + self.channels <= self.scratch.len();
        match adjust {
            Adjust::Drop if fits => {
                m.dropped.fetch_add(1, Ordering::Relaxed);
                self.read_dropping(dst)
            }
            Adjust::Repeat if fits => {
                m.repeated.fetch_add(1, Ordering::Relaxed);
                self.read_repeating(dst)
            }
            _ => pop(&mut self.rx, dst),
        }
    }
}

impl LiveInput for RingInput {
    fn channels(&self) -> usize {
        self.channels
    }

    fn format(&self) -> InputFormat {
        self.format
    }

    /// Real-time safe: moves samples out of the ring, never waits.
    fn read(&mut self, dst: &mut [f64]) {
        self.take_new_ring();
        let ch = self.channels;
        let frames = dst.len() / ch;
        let dst = &mut dst[..frames * ch];
        let avail = self.rx.slots() / ch;
        let period = self.meters.period.load(Ordering::Relaxed) as usize;
        let m = &self.meters;
        m.reading.store(true, Ordering::Relaxed);
        m.fill.store(avail as u64, Ordering::Relaxed);
        if self.drift.primed() {
            m.fill_sum.fetch_add(avail as u64, Ordering::Relaxed);
            m.reads.fetch_add(1, Ordering::Relaxed);
        }
        match self.drift.step(avail, frames, period, self.capacity_frames) {
            Step::Prime => dst.fill(0.0),
            Step::Read {
                skip,
                counted,
                adjust,
            } => self.read_block(dst, skip, counted, adjust),
            Step::Short(n) => {
                pop(&mut self.rx, &mut dst[..n * ch]);
                dst[n * ch..].fill(0.0);
                let missing = (frames - n) as u64;
                self.meters.underruns.fetch_add(missing, Ordering::Relaxed);
            }
        }
    }
}

/// Moves the next `dst.len()` samples out of `rx` (the caller saw them there).
fn pop(rx: &mut Consumer<f64>, dst: &mut [f64]) {
    if let Ok(chunk) = rx.read_chunk(dst.len()) {
        let (a, b) = chunk.as_slices();
        dst[..a.len()].copy_from_slice(a);
        dst[a.len()..].copy_from_slice(b);
        chunk.commit_all();
    }
}
