//! What a host plugs into the player: where input comes from, where each
//! block of input read is kept, and where the output frames go. Every
//! method here runs on the audio thread: it never allocates, frees, locks,
//! blocks or does I/O, and its work is bounded.

use crate::engine::InputBlock;

/// A source of input frames for the callback: an input device's ring, a
/// file played as if it were one, a test double.
///
/// A source fed by another thread hands frames over through a wait-free
/// ring and counts what it could not deliver instead of waiting for it.
pub trait InputSource: Send {
    /// Channels per frame (fixed for the session).
    fn channels(&self) -> usize;
    /// Fills `dst` with the next `dst.len() / channels()` frames,
    /// interleaved; frames the source cannot deliver in time are silence.
    fn read(&mut self, dst: &mut [f64]);
}

/// Where each block of input the callback read is kept, in order, and
/// from where an engine catching up with the clock reads it back.
pub trait InputHistory: Send {
    /// Keeps the block just read (interleaved, the input's channels).
    fn push(&mut self, interleaved: &[f64]);
    /// Loads the frames from absolute sample `start` into `block`; false
    /// when they are no longer (or not yet) kept.
    fn load(&self, start: u64, block: &mut InputBlock<'_>) -> bool;
}

/// Where the frames the callback wrote go as well (after the output
/// stage: clip, stop fade), interleaved in the output's channels.
pub trait OutputTap: Send {
    /// Takes the frames of one callback.
    fn push(&mut self, interleaved: &[f32]);
}
