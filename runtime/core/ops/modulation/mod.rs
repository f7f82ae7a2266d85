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
mod reference_tests;
#[cfg(test)]
mod tests;

pub(crate) use chorus::CHORUS;
pub(crate) use flanger::FLANGER;
pub(crate) use phaser::PHASER;

use super::oscillators::Phasor;
use super::{number, Io, NodeState, Param, ParamSpec, StateError};
use crate::dsp::strict_sin::sin_block;
use crate::dsp::vector::SimdLevel;
use crate::dsp::{Math, MathKind, Sample};
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

    /// On to the next frame at `rate` Hz.
    #[inline]
    fn advance(&mut self, rate: f64, sample_rate: f64) {
        self.phase = self
            .phase
            .wrapping_add(Phasor::increment(rate, sample_rate));
    }
}

/// Frames whose LFO values are computed together (see [`Sweep::process`]).
const CHUNK: usize = 64;

/// The most LFO values one frame needs: two channels of `chorus`'s 8 voices.
const MAX_SINES: usize = 16;

/// What the three effects share: the LFO and the sample rate it advances
/// at, and the frame loop around each effect's own wet signal.
struct Sweep {
    lfo: Lfo,
    sample_rate: f64,
    /// The CPU's vector level, for strict's sines in lanes.
    simd: SimdLevel,
    /// One chunk's LFO values: frame j's `w` values at `j·w .. (j+1)·w`.
    sines: [f64; CHUNK * MAX_SINES],
    /// One chunk's params, per frame (`[rate, depth, own₀, own₁, phase, mix]`).
    params: [[f64; 6]; CHUNK],
}

/// One frame as an effect's wet signal sees it: the params read at that
/// frame, `own` being the effect's two of its own (see [`Sweep::process`]).
struct Frame {
    depth: f64,
    own: [f64; 2],
    sample_rate: f64,
}

impl Sweep {
    /// The LFO at 0 (after build or reset).
    fn new(sample_rate: f64) -> Self {
        Sweep {
            lfo: Lfo::default(),
            sample_rate,
            simd: SimdLevel::detect(),
            sines: [0.0; CHUNK * MAX_SINES],
            params: [[0.0; 6]; CHUNK],
        }
    }

    /// One block. `params` are the indices of `[rate, depth, own₀, own₁,
    /// phase, mix]`, read per frame ([`Frames`]). Per frame, `offsets` gets
    /// those params and writes the `w` (≤ [`MAX_SINES`]) phase offsets (rad)
    /// of the LFO values the effect reads; the values are
    /// `sin(2π·phase + offset)` through the math policy, computed for a
    /// chunk of frames at a time (under strict by
    /// [`sin_block`](crate::dsp::strict_sin::sin_block): `libm::sin`'s bits,
    /// in lanes). Then per frame `wet` gets the input, the [`Frame`] and
    /// the frame's `w` LFO values and returns the left and right wet values
    /// (updating the effect's own state); the outputs are their [`blend`]
    /// with the input by `mix`. The LFO advances by `rate` after each frame.
    #[inline]
    fn process<S: Sample, M: Math>(
        &mut self,
        io: &mut Io<'_, S>,
        params: [usize; 6],
        w: usize,
        offsets: impl Fn(&[f64; 6], &mut [f64]),
        mut wet: impl FnMut(S, &Frame, &[f64]) -> (S, S),
    ) {
        let n = io.frames;
        let frames = Frames::new(params.map(|k| io.params.get(k)));
        let x = &io.inputs[0][..n];
        let (left, right) = io.outputs.split_at_mut(1);
        let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
        let sample_rate = self.sample_rate;
        let mut i0 = 0;
        while i0 < n {
            let m = (n - i0).min(CHUNK);
            for j in 0..m {
                let p = frames.at(i0 + j);
                let arg = TWO_PI * self.lfo.turns();
                let values = &mut self.sines[j * w..(j + 1) * w];
                offsets(&p, values);
                for v in values.iter_mut() {
                    *v += arg;
                }
                self.params[j] = p;
                self.lfo.advance(p[0], sample_rate);
            }
            sines::<M>(self.simd, &mut self.sines[..m * w]);
            for j in 0..m {
                let i = i0 + j;
                let [_, depth, own0, own1, _, mix] = self.params[j];
                let frame = Frame {
                    depth,
                    own: [own0, own1],
                    sample_rate,
                };
                let (wl, wr) = wet(x[i], &frame, &self.sines[j * w..(j + 1) * w]);
                left[i] = blend(x[i], wl, mix);
                right[i] = blend(x[i], wr, mix);
            }
            i0 += m;
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

/// `x[i] = sin(x[i])` through the math policy `M`, in f64: under strict
/// in lanes, the same bits as `libm::sin` of each.
#[inline]
fn sines<M: Math>(simd: SimdLevel, x: &mut [f64]) {
    if M::KIND == MathKind::Strict {
        sin_block(simd, x);
    } else {
        for v in x.iter_mut() {
            *v = M::sin::<f64>(*v);
        }
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
