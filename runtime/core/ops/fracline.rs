//! A delay line read at a fractional delay, by linear or by first-order
//! allpass (Thiran) interpolation: the line of `comb`, `allpass` and
//! `pluck`.
//!
//! The line is read before the frame's sample is written, so tap `k` is the
//! sample written `k` frames ago (`k ≥ 1`). Reading `d` samples back:
//!
//! ```text
//! linear:   k = ⌊d⌋, f = d − k:        x[n−k] + f·(x[n−k−1] − x[n−k])
//! allpass:  k = ⌊d − ½⌋, f = d − k ∈ [½, 3⁄2), η = (1 − f)/(1 + f):
//!           y[n] = η·x[n−k] + x[n−k−1] − η·y[n−1]
//! ```
//!
//! The allpass reader's phase delay is `f` at low frequencies (exactly `d`
//! in all); its magnitude is 1 at every frequency, so in a feedback loop
//! it damps no partial, where linear interpolation is a lowpass. Its one
//! state is `y[n−1]`.

use super::{NodeState, PartClear, StateError};
use crate::dsp::Sample;

/// How a [`Line`] is read between samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Interp {
    Linear,
    Allpass,
}

/// The names of [`Interp`], in the order an operator's `interp` enum lists them.
pub(super) const INTERP_CHOICES: &[&str] = &["linear", "allpass"];

impl Interp {
    /// The interpolation of choice `k` of [`INTERP_CHOICES`].
    pub(super) fn from_index(k: usize) -> Interp {
        if k == 1 {
            Interp::Allpass
        } else {
            Interp::Linear
        }
    }

    /// The shortest delay in samples this reader plays: 1 (linear) or 1.5
    /// (allpass: its integer part is at least 1 and its fraction at least ½).
    pub(super) fn min_delay(self) -> f64 {
        match self {
            Interp::Linear => 1.0,
            Interp::Allpass => 1.5,
        }
    }
}

/// A ring of samples with integer taps; see the module docs.
pub(super) struct Line<S> {
    buf: Vec<S>,
    /// The slot the current frame's sample is written to.
    write: usize,
}

impl<S: Sample> Line<S> {
    /// A silent line whose taps reach `longest` samples back; allocates.
    pub(super) fn new(longest: usize) -> Line<S> {
        Line {
            buf: vec![S::ZERO; longest.max(1) + 1],
            write: 0,
        }
    }

    /// The sample written `k` frames ago, `1 ≤ k ≤ longest`.
    #[inline(always)]
    pub(super) fn tap(&self, k: usize) -> S {
        let len = self.buf.len();
        // write + len − k < 2·len: at most one wrap, no division.
        let i = self.write + len - k;
        self.buf[if i >= len { i - len } else { i }]
    }

    /// Writes this frame's sample and moves on to the next frame.
    #[inline(always)]
    pub(super) fn push(&mut self, x: S) {
        self.buf[self.write] = x;
        self.write += 1;
        if self.write == self.buf.len() {
            self.write = 0;
        }
    }

    /// `d` samples back by linear interpolation; `1 ≤ d ≤ longest − 1`.
    #[inline(always)]
    pub(super) fn linear(&self, d: f64) -> S {
        // d ≥ 1: truncation is ⌊d⌋, without a call to `floor`.
        let k = d as usize;
        let f = S::from_f64(d - k as f64);
        let a = self.tap(k);
        a + f * (self.tap(k + 1) - a)
    }

    /// `d` samples back by the allpass reader whose last output is `*prev`
    /// (updated); `1.5 ≤ d ≤ longest`.
    #[inline(always)]
    pub(super) fn allpass(&self, d: f64, prev: &mut S) -> S {
        // d ≥ 3⁄2: truncation is ⌊d − ½⌋, without a call to `floor`.
        let k = (d - 0.5) as usize;
        let f = d - k as f64;
        let eta = S::from_f64((1.0 - f) / (1.0 + f));
        let y = eta * self.tap(k) + self.tap(k + 1) - eta * *prev;
        *prev = y;
        y
    }

    pub(super) fn reset(&mut self) {
        self.buf.fill(S::ZERO);
        self.write = 0;
    }

    /// This line's share of a reset in parts; [`rewind`](Self::rewind) after the last.
    pub(super) fn zero_part(&mut self, part: &mut PartClear) {
        part.zero(&mut self.buf, S::ZERO);
    }

    pub(super) fn rewind(&mut self) {
        self.write = 0;
    }

    pub(super) fn snapshot(&self, st: &mut NodeState) {
        st.put_samples("buffer", &self.buf);
        st.put_u64("write", self.write as u64);
    }

    /// The part `[done, done + budget)` of the line, oldest sample first
    /// from the write index at the save's first call, then the write index;
    /// returns where the copy stands (complete at [`len`](Self::len)).
    pub(super) fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> usize {
        let start = if done == 0 {
            self.write
        } else {
            st.get_u64("write").map_or(self.write, |w| w as usize)
        };
        let next = st.put_ring_part("buffer", &self.buf, start, done, budget);
        if done == 0 {
            st.put_u64("write", self.write as u64);
        }
        next
    }

    /// Slots in the ring.
    pub(super) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(super) fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let w = st.get_u64("write")?;
        if w >= self.buf.len() as u64 {
            return Err(StateError::Shape {
                name: "write",
                expected: self.buf.len(),
                found: w as usize,
            });
        }
        st.get_samples("buffer", &mut self.buf)?;
        self.write = w as usize;
        Ok(())
    }
}
