//! Modulation effects: `chorus`, `flanger`, `phaser`. Each reads a mono
//! `in` and writes a stereo pair `out` / `out_r`, swept by its own sine LFO.
//!
//! The LFO is a u64 fixed-point phase (a fraction of a cycle, as the
//! oscillators keep theirs), advanced after every frame by
//! `rate / sample_rate` of a cycle (computed once per block while `rate`
//! holds still, per frame while it moves), and starting at 0 after build or
//! reset. A channel's LFO value at a frame is
//!
//! ```text
//! lfo = sin(2π·phase + offset)     offset = voice offset (chorus) + 0 (left) or `phase` (right)
//! ```
//!
//! through the node's math policy in f64 (`libm` under strict), so the
//! value at a frame depends only on how many frames came before it, never on
//! the block size, and the phase migrates exactly between precisions. A
//! `rate` of 0 holds the LFO where its offset puts it: the left channel at
//! its midpoint (0), the right at `sin(phase)` (±1 for `phase` ±π/2).
//!
//! Every param is read per frame; `mix` is clamped to 0…1 and the feedback
//! params to ±0.99 (NaN from modulation reads 0), so modulation cannot make
//! a loop unstable. The delay lines are `delay`'s ([`Ring`]: linear
//! interpolation, 1 sample at the shortest), sized at build for the longest
//! `delay + depth` the param ranges allow; long state is saved and reset
//! in parts as `delay`'s is.
//!
//! [`Ring`]: super::delay::Ring

mod chorus;
mod flanger;
mod phaser;
#[cfg(test)]
mod tests;

pub(crate) use chorus::CHORUS;
pub(crate) use flanger::FLANGER;
pub(crate) use phaser::PHASER;

use super::oscillators::Phasor;
use super::{number, Io, NodeState, Param, ParamSpec, StateError};
use crate::dsp::{Math, Sample};
use crate::scene::Dimension;

const TWO_PI: f64 = 2.0 * core::f64::consts::PI;

/// The largest |feedback| of `flanger` and `phaser`.
const MAX_FEEDBACK: f64 = 0.99;

/// A sine LFO's phase (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
struct Lfo {
    phase: u64,
}

impl Lfo {
    /// The phase as a fraction of a cycle in [0, 1) (53 bits, exact).
    #[inline]
    fn turns(&self) -> f64 {
        f64::from_phase(self.phase)
    }

    /// The LFO value at this frame for a channel's `offset` (rad).
    #[inline]
    fn value<M: Math>(turns: f64, offset: f64) -> f64 {
        M::sin::<f64>(TWO_PI * turns + offset)
    }

    /// On to the next frame at `rate` Hz.
    #[inline]
    fn advance(&mut self, rate: f64, sample_rate: f64) {
        self.phase = self
            .phase
            .wrapping_add(Phasor::increment(rate, sample_rate));
    }
}

/// What the three effects share: the LFO and the sample rate it advances
/// at, and the frame loop around each effect's own wet signal.
struct Sweep {
    lfo: Lfo,
    sample_rate: f64,
}

/// One frame as an effect's wet signal sees it: the LFO phase (turns) and
/// the params read at that frame, `own` being the effect's two of its own
/// (see [`Sweep::process`]).
struct Frame {
    turns: f64,
    depth: f64,
    own: [f64; 2],
    phase: f64,
    sample_rate: f64,
}

impl Sweep {
    /// The LFO at 0 (after build or reset).
    fn new(sample_rate: f64) -> Self {
        Sweep {
            lfo: Lfo::default(),
            sample_rate,
        }
    }

    /// One block. `params` are the indices of `[rate, depth, own₀, own₁,
    /// phase, mix]`, read per frame ([`Frames`]); per frame, `wet` gets the
    /// input and the [`Frame`] and returns the left and right wet values
    /// (updating the effect's own state), the outputs are their
    /// [`blend`] with the input by `mix`, and the LFO then advances by
    /// `rate`.
    #[inline]
    fn process<S: Sample>(
        &mut self,
        io: &mut Io<'_, S>,
        params: [usize; 6],
        mut wet: impl FnMut(S, &Frame) -> (S, S),
    ) {
        let n = io.frames;
        let frames = Frames::new(params.map(|k| io.params.get(k)));
        let x = &io.inputs[0][..n];
        let (left, right) = io.outputs.split_at_mut(1);
        let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
        let sample_rate = self.sample_rate;
        for i in 0..n {
            let [rate, depth, own0, own1, phase, mix] = frames.at(i);
            let frame = Frame {
                turns: self.lfo.turns(),
                depth,
                own: [own0, own1],
                phase,
                sample_rate,
            };
            let (wl, wr) = wet(x[i], &frame);
            left[i] = blend(x[i], wl, mix);
            right[i] = blend(x[i], wr, mix);
            self.lfo.advance(rate, sample_rate);
        }
    }

    /// Back to the LFO at 0.
    fn reset(&mut self) {
        self.lfo = Lfo::default();
    }

    /// The LFO phase, as `lfo`.
    fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("lfo", self.lfo.phase);
    }

    /// The LFO phase [`snapshot`](Self::snapshot) wrote, to be set with
    /// [`set`](Self::set) once the rest of the state has been read.
    fn read(st: &NodeState) -> Result<u64, StateError> {
        st.get_u64("lfo")
    }

    fn set(&mut self, phase: u64) {
        self.lfo.phase = phase;
    }
}

/// `v` clamped to `lo … hi`, NaN read as `nan`.
#[inline]
fn clamp_or(v: f64, lo: f64, hi: f64, nan: f64) -> f64 {
    if v.is_nan() {
        nan
    } else {
        v.clamp(lo, hi)
    }
}

/// The output blend `(1 − mix)·dry + mix·wet`, `mix` clamped to 0…1.
#[inline]
fn blend<S: Sample>(dry: S, wet: S, mix: f64) -> S {
    let m = clamp_or(mix, 0.0, 1.0, 0.0);
    S::from_f64(1.0 - m) * dry + S::from_f64(m) * wet
}

/// The `K` params of one block read per frame: once for the block when all
/// of them hold still, else at every frame.
struct Frames<'a, S, const K: usize> {
    params: [Param<'a, S>; K],
    fixed: Option<[f64; K]>,
}

impl<'a, S: Sample, const K: usize> Frames<'a, S, K> {
    fn new(params: [Param<'a, S>; K]) -> Self {
        let fixed = params
            .iter()
            .all(|p| p.is_const())
            .then(|| params.map(|p| p.value()));
        Frames { params, fixed }
    }

    #[inline]
    fn at(&self, i: usize) -> [f64; K] {
        match self.fixed {
            Some(v) => v,
            None => self.params.map(|p| p.at(i)),
        }
    }
}

const RATE_DOC: &str =
    "LFO rate (0 holds the LFO at its offset: left at its midpoint, right at sin(phase))";
const PHASE_DOC: &str =
    "the right channel's LFO phase offset (π/2 = 90°: the channels sweep in quadrature)";
const MIX_DOC: &str = "wet fraction of the output (0 dry, 1 wet only; clamped to 0…1)";

const fn rate_param(default: f64) -> ParamSpec {
    number("rate", Dimension::Frequency, default, 0.0, 20.0, RATE_DOC)
}

const fn phase_param() -> ParamSpec {
    number(
        "phase",
        Dimension::Angle,
        core::f64::consts::FRAC_PI_2,
        -TWO_PI,
        TWO_PI,
        PHASE_DOC,
    )
}

const fn mix_param() -> ParamSpec {
    number("mix", Dimension::Scalar, 0.5, 0.0, 1.0, MIX_DOC)
}
