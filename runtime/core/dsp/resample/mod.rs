//! Sample-rate conversion between two integer rates, streaming: push any
//! number of interleaved input frames, pull what is ready, and
//! [`finish`](RateConverter::finish) to pull the tail.
//!
//! Two methods stand behind one trait, [`RateConverter`]:
//!
//! - [`Method::Polyphase`] ([`Polyphase`]), morphrt's own: a Kaiser-windowed
//!   sinc in polyphase form with fixed taps, f64 state, the pinned `libm`
//!   and one summation order, so its output is the same bits on every run,
//!   build and CPU and whatever the sizes of the pushes and pulls. The
//!   strict profile converts with it.
//! - [`Method::Library`] (`Library`), the `rubato` crate's FFT
//!   resampler, which repro and live may use (see its docs for the
//!   determinism it keeps).
//!
//! Both compensate their filter's delay: output frame 0 is input time 0,
//! and an impulse at input frame `k` comes out at output time
//! `k × to_hz / from_hz` (within half an output frame). In a live stream
//! the output lags the input by [`latency`](RateConverter::latency) output
//! frames, the filter's lookahead. After `finish`, the output is
//! [`output_frames`](RateConverter::output_frames)`(n)` frames long for
//! `n` input frames: every output frame whose time falls before the end of
//! the input.

mod library;
mod polyphase;

pub(crate) use library::Library;
pub use polyphase::{prototype, ratio, Polyphase, CUTOFF, KAISER_BETA, MAX_PHASES, TAPS_PER_RATIO};

use std::fmt;

/// A streaming rate converter over interleaved f64 frames.
///
/// [`push`](Self::push), [`pull`](Self::pull), [`finish`](Self::finish)
/// and [`reset`](Self::reset) never allocate, lock or block: they may run
/// on the audio thread. Each converter buffers a bounded number of frames,
/// fixed when it is made.
pub trait RateConverter: Send {
    /// Channels per frame.
    fn channels(&self) -> usize;

    /// Takes whole interleaved frames and returns how many it took: all of
    /// them while the caller pulls the output as it goes, fewer when its
    /// buffer is full (pull, then push the rest). After
    /// [`finish`](Self::finish) it takes none.
    fn push(&mut self, frames: &[f64]) -> usize;

    /// Writes up to `out.len() / channels` ready output frames, interleaved,
    /// and returns how many it wrote.
    fn pull(&mut self, out: &mut [f64]) -> usize;

    /// Marks the end of the input: the input continues as silence so that
    /// pulls deliver the tail, up to
    /// [`output_frames`](Self::output_frames) of everything pushed.
    fn finish(&mut self);

    /// Forgets all input and output: the converter is as new.
    fn reset(&mut self);

    /// Output frames by which the output lags the input in a stream (the
    /// filter's lookahead; an output frame needs input up to this far past
    /// its own time before it is ready).
    fn latency(&self) -> usize;

    /// Output frames a finished input of `input_frames` frames gives:
    /// `⌈input_frames × to_hz / from_hz⌉`.
    fn output_frames(&self, input_frames: u64) -> u64;
}

/// Which converter to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// morphrt's own polyphase filter, bit-exact ([`Polyphase`]).
    Polyphase,
    /// The `rubato` crate's FFT resampler (`Library`).
    Library,
}

impl Method {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Method::Polyphase => "polyphase",
            Method::Library => "rubato",
        }
    }
}

/// Builds a converter of `method` from `from_hz` to `to_hz` over `channels`
/// channels that takes up to `capacity` frames per push between pulls.
/// Allocates: call it off the audio thread.
pub fn converter(
    method: Method,
    from_hz: u32,
    to_hz: u32,
    channels: usize,
    capacity: usize,
) -> Result<Box<dyn RateConverter>, RateError> {
    Ok(match method {
        Method::Polyphase => Box::new(Polyphase::new(from_hz, to_hz, channels, capacity)?),
        Method::Library => Box::new(Library::new(from_hz, to_hz, channels, capacity)?),
    })
}

/// Why a converter cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RateError {
    /// A rate of 0 Hz.
    ZeroRate {
        /// The input rate in Hz.
        from_hz: u32,
        /// The output rate in Hz.
        to_hz: u32,
    },
    /// The ratio in lowest terms needs more than [`MAX_PHASES`] phases.
    RatioTooFine {
        /// The input rate in Hz.
        from_hz: u32,
        /// The output rate in Hz.
        to_hz: u32,
        /// The upsampling factor of the reduced ratio.
        up: u64,
        /// The downsampling factor of the reduced ratio.
        down: u64,
    },
    /// A converter of no channels.
    NoChannels,
    /// The library refused the conversion.
    Library(String),
}

impl fmt::Display for RateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateError::ZeroRate { from_hz, to_hz } => write!(
                f,
                "cannot convert {from_hz} Hz to {to_hz} Hz: a sample rate must be at least 1 Hz"
            ),
            RateError::RatioTooFine {
                from_hz,
                to_hz,
                up,
                down,
            } => write!(
                f,
                "cannot convert {from_hz} Hz to {to_hz} Hz: the ratio {up}/{down} needs more than \
                 {MAX_PHASES} filter phases; convert through a common rate such as 48000 Hz"
            ),
            RateError::NoChannels => write!(f, "a rate converter needs at least one channel"),
            RateError::Library(e) => write!(f, "the resampling library refused: {e}"),
        }
    }
}

impl std::error::Error for RateError {}
