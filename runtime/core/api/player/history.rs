//! The input history: the last few seconds of the session's input, exactly
//! as the engines read it, readable off the audio thread while the
//! callback keeps writing.
//!
//! The callback is the one writer ([`HistoryWriter::push`]): after reading
//! each block of input it stores the block (every source channel, f64) at
//! its engine sample in a ring allocated up front. Readers — the control
//! thread fast-forwarding a handover's new engine, the thread writing the
//! journal's recorded input — copy frames out ([`History::copy`]) and are
//! told when the frames are not there yet or were overwritten while they
//! copied; they never hold the writer up. It is a sequence lock over frames:
//! the writer announces how far it is about to write (`claimed`), writes,
//! then publishes how far it wrote (`written`); a reader checks `written`
//! before copying and `claimed` after, so a frame it copied that the writer
//! was overwriting is caught. Samples are stored as `AtomicU64` bits, so a
//! torn read is a detected miss, never undefined behaviour.

use crate::engine::InputBlock;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;

/// What the history holds, in seconds: enough for a save in parts, a
/// migration and a fast-forward to catch up with the audio clock (a
/// handover gives up after 2 s), and for the recorded input's writer to
/// stall on a slow disk.
pub const HISTORY_SECONDS: f64 = 8.0;

/// The ring and its two counters, shared by the writer and the readers.
struct Ring {
    /// `capacity × width` sample bits, frame after frame.
    data: Box<[AtomicU64]>,
    width: usize,
    /// Frames the ring holds.
    capacity: u64,
    /// The engine sample of the first frame pushed (the session's start).
    origin: u64,
    /// Frames up to this engine sample are complete.
    written: AtomicU64,
    /// Frames up to this engine sample may be being written.
    claimed: AtomicU64,
}

/// Why a read found no frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// Not pushed yet: the history reaches this engine sample so far.
    NotYet(u64),
    /// Overwritten (or before the session started): the history now
    /// starts at this engine sample.
    Gone(u64),
}

/// A reader of the history (cheap to clone; any thread).
#[derive(Clone)]
pub struct History {
    ring: Arc<Ring>,
}

/// The callback's end: the only writer.
pub struct HistoryWriter {
    ring: Arc<Ring>,
}

/// A history of `width` channels holding `seconds` at `sample_rate`, whose
/// first frame will be engine sample `origin`. Allocates: call it before
/// the session plays.
pub fn history(
    width: usize,
    sample_rate: u32,
    seconds: f64,
    origin: u64,
) -> (HistoryWriter, History) {
    let width = width.max(1);
    let capacity = (seconds * sample_rate as f64).ceil().max(1.0) as u64;
    let data = (0..capacity as usize * width)
        .map(|_| AtomicU64::new(0))
        .collect();
    let ring = Arc::new(Ring {
        data,
        width,
        capacity,
        origin,
        written: AtomicU64::new(origin),
        claimed: AtomicU64::new(origin),
    });
    (HistoryWriter { ring: ring.clone() }, History { ring })
}

impl Ring {
    fn slot(&self, frame: u64) -> usize {
        ((frame % self.capacity) as usize) * self.width
    }

    /// Frames `start ..` into channel-major `block` (its channels beyond
    /// the source's silent), without checks.
    fn load(&self, start: u64, block: &mut InputBlock<'_>) {
        let frames = block.frames();
        for c in 0..block.channels() {
            let dst = block.channel_mut(c);
            if c >= self.width {
                dst.fill(0.0);
                continue;
            }
            for (i, d) in dst.iter_mut().enumerate().take(frames) {
                let bits = self.data[self.slot(start + i as u64) + c].load(Ordering::Relaxed);
                *d = f64::from_bits(bits);
            }
        }
    }

    /// Whether frames from `start` were still intact after a copy (the
    /// writer had not claimed their slots for later frames).
    fn intact_from(&self, start: u64) -> Result<(), Miss> {
        fence(Ordering::Acquire);
        let claimed = self.claimed.load(Ordering::Relaxed);
        let first = claimed.saturating_sub(self.capacity).max(self.origin);
        if start < first {
            return Err(Miss::Gone(first));
        }
        Ok(())
    }

    /// Whether `start .. start + frames` has been pushed.
    fn available(&self, start: u64, frames: u64) -> Result<(), Miss> {
        let written = self.written.load(Ordering::Acquire);
        if start + frames > written {
            return Err(Miss::NotYet(written));
        }
        if start < self.origin {
            return Err(Miss::Gone(self.origin));
        }
        Ok(())
    }
}

impl HistoryWriter {
    /// Stores one block of interleaved frames (`width` wide) at the next
    /// engine sample. Real-time safe: relaxed stores into the ring, two
    /// counter updates.
    pub fn push(&mut self, interleaved: &[f64]) {
        let r = &*self.ring;
        let frames = (interleaved.len() / r.width) as u64;
        let at = r.written.load(Ordering::Relaxed);
        r.claimed.store(at + frames, Ordering::Relaxed);
        fence(Ordering::Release);
        for (i, frame) in interleaved.chunks_exact(r.width).enumerate() {
            let slot = r.slot(at + i as u64);
            for (c, x) in frame.iter().enumerate() {
                r.data[slot + c].store(x.to_bits(), Ordering::Relaxed);
            }
        }
        r.written.store(at + frames, Ordering::Release);
    }

    /// Loads the frames from engine sample `start` into `block`, as a
    /// reader would, but on the writer's own thread (nothing can change
    /// them meanwhile). `false` when they are not (or no longer) held.
    /// Real-time safe.
    pub fn load(&self, start: u64, block: &mut InputBlock<'_>) -> bool {
        let r = &*self.ring;
        let written = r.written.load(Ordering::Relaxed);
        let first = written.saturating_sub(r.capacity).max(r.origin);
        if start < first || start + block.frames() as u64 > written {
            return false;
        }
        r.load(start, block);
        true
    }

    /// How far the history reaches (the engine sample after the last frame).
    pub fn written(&self) -> u64 {
        self.ring.written.load(Ordering::Relaxed)
    }
}

/// The player keeps its input in the history through the core's trait.
impl super::InputHistory for HistoryWriter {
    fn push(&mut self, interleaved: &[f64]) {
        HistoryWriter::push(self, interleaved)
    }
    fn load(&self, start: u64, block: &mut InputBlock<'_>) -> bool {
        HistoryWriter::load(self, start, block)
    }
}

impl History {
    /// Channels per frame (the source's).
    pub fn width(&self) -> usize {
        self.ring.width
    }

    /// Frames it holds at most.
    pub fn capacity(&self) -> u64 {
        self.ring.capacity
    }

    /// The engine sample of the session's first frame of input.
    pub fn origin(&self) -> u64 {
        self.ring.origin
    }

    /// How far the history reaches so far (the engine sample after the
    /// last frame pushed).
    pub fn written(&self) -> u64 {
        self.ring.written.load(Ordering::Acquire)
    }

    /// Copies the interleaved frames from engine sample `start` into `dst`
    /// (`dst.len() / width()` frames).
    pub fn copy(&self, start: u64, dst: &mut [f64]) -> Result<(), Miss> {
        let r = &*self.ring;
        let frames = (dst.len() / r.width) as u64;
        r.available(start, frames)?;
        for (i, frame) in dst.chunks_exact_mut(r.width).enumerate() {
            let slot = r.slot(start + i as u64);
            for (c, d) in frame.iter_mut().enumerate() {
                *d = f64::from_bits(r.data[slot + c].load(Ordering::Relaxed));
            }
        }
        r.intact_from(start)
    }

    /// Loads the frames from engine sample `start` into an engine's input
    /// `block` (channel-major; channels beyond the source silent).
    pub fn load(&self, start: u64, block: &mut InputBlock<'_>) -> Result<(), Miss> {
        let r = &*self.ring;
        r.available(start, block.frames() as u64)?;
        r.load(start, block);
        r.intact_from(start)
    }
}

/// Runs `engine` from its clock through the history, a block at a time,
/// as far as the history reaches on the block grid (never past `limit`):
/// the new engine of a handover catching up with the audio clock on the
/// control thread. Returns how far it got, or the miss that stopped it
/// when the frames it needed were already overwritten.
pub fn fast_forward_through(
    engine: &mut crate::engine::Engine,
    history: &History,
    limit: u64,
) -> Result<u64, Miss> {
    let block = engine.block_size() as u64;
    loop {
        let at = engine.clock();
        if at + block > limit.min(history.written()) {
            return Ok(at);
        }
        match history.load(at, &mut engine.input_block(block as usize)) {
            Ok(()) => engine.fast_forward(at + block),
            Err(Miss::NotYet(_)) => return Ok(at),
            Err(gone) => return Err(gone),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_back_at_their_engine_sample() {
        let (mut w, h) = history(2, 100, 0.5, 1000);
        assert_eq!(h.capacity(), 50);
        let block: Vec<f64> = (0..20).map(|i| i as f64).collect();
        w.push(&block);
        let mut dst = vec![0.0; 6];
        assert_eq!(h.copy(1003, &mut dst), Ok(()));
        assert_eq!(dst, vec![6.0, 7.0, 8.0, 9.0, 10.0, 11.0]);
        assert_eq!(h.copy(1008, &mut dst), Err(Miss::NotYet(1010)));
        assert_eq!(h.copy(999, &mut dst), Err(Miss::Gone(1000)));
        for _ in 0..6 {
            w.push(&block);
        }
        // 70 frames pushed into a ring of 50: the first 20 are gone.
        assert_eq!(h.copy(1010, &mut dst), Err(Miss::Gone(1020)));
        assert_eq!(h.copy(1020, &mut dst), Ok(()));
        assert_eq!(dst[..2], [0.0, 1.0]);
    }
}
