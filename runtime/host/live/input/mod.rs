//! Live audio input: where the callback takes one block of input per block
//! of output. Every source — an input device, a file played as if it were
//! one (`run --input FILE.wav`), a test double — implements [`LiveInput`];
//! the player never knows which it has. An input device reaches the
//! callback through a wait-free ring ([`ring`]) whose fill level is held
//! steady against the drift between the two devices' clocks ([`drift`]).
//!
//! What the callback reads is kept in the input history ([`history`]),
//! from which a handover's new engine catches up with the audio clock and
//! from which the journal's recorded input is written ([`record`]).

pub mod drift;
pub mod ring;

use crate::api::player::InputSource;
pub use crate::host::files::wav_in::InputFormat;

/// A source of input frames for the callback.
///
/// `read` runs on the audio thread: it never allocates, frees, locks,
/// blocks or does I/O. A source fed by another thread (an input stream, a
/// file reader) hands frames over through a wait-free ring and counts what
/// it could not deliver instead of waiting for it.
pub trait LiveInput: Send {
    /// Channels per frame (fixed for the session).
    fn channels(&self) -> usize;
    /// The format the source delivers, in which a journal stores it
    /// exactly (a 16-bit device's samples as 16-bit integers).
    fn format(&self) -> InputFormat;
    /// Fills `dst` with the next `dst.len() / channels()` frames,
    /// interleaved; frames the source cannot deliver in time are silence.
    fn read(&mut self, dst: &mut [f64]);
}

/// The player reads a live input as the core's [`InputSource`].
impl InputSource for dyn LiveInput {
    fn channels(&self) -> usize {
        LiveInput::channels(self)
    }
    fn read(&mut self, dst: &mut [f64]) {
        LiveInput::read(self, dst)
    }
}

pub mod file;
pub use crate::api::player::history;
pub mod record;
