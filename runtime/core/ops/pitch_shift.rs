//! `pitch_shift`: a time-domain pitch shifter, two read taps moving
//! through a delay line of the input and crossfaded where they jump.
//!
//! With `L` the window in samples (`window·sr` rounded to an even number,
//! at least 4), `ratio = 2^(semitones/12)`, `s = 1 − ratio`, `X` the
//! crossfade in samples (`crossfade·sr`), and the line's taps `x[n−k]` read
//! before the frame's sample is written, per sample (every param read at
//! that sample):
//!
//! ```text
//! p    ← p + s/L, wrapped into [0, 1)       (the first tap's phase; starts at 0)
//! q    = p + ½, wrapped into [0, 1)         (the second tap's)
//! dₚ   = 2 + p·L,  d_q = 2 + q·L             (each tap's delay in samples)
//! c    = min(X·|s|/L, ½)                     (the crossfade as a share of a cycle)
//! e    = ¼ − |p − ½|
//! u    = clamp(½ + e/c, 0, 1)                (e > 0 ↦ 1, else 0, when c = 0)
//! wₚ   = u²·(3 − 2u),  w_q = 1 − wₚ           (smoothstep: wₚ + w_q = 1)
//! wet  = wₚ·line(dₚ) + w_q·line(d_q)         (a tap of weight 0 is not read)
//! dry  = x[n − D],  D = 2 + L/2
//! out  = mix·wet + (1 − mix)·dry
//! ```
//!
//! `line(d)` reads between samples by the 4-point Catmull–Rom cubic
//! (`k = ⌊d⌋`, `f = d − k`, through `x[n−k+1] … x[n−k−2]`). Each tap's
//! delay changes by `s` a sample, so it reads the input `ratio` times as
//! fast: the pitch moves by `semitones`. A tap's delay jumps by `L` where
//! its phase wraps; it is silent there, and sounds for the half cycle
//! around `p = ½`. The other tap, half a cycle away, takes over in a
//! crossfade of `X` samples (at most half the cycle, the classic two-tap
//! shifter's triangle-like windows), so the two weights always sum to 1.
//! One tap sounds alone between crossfades, so a sine keeps its level
//! there whatever its phase; only in a crossfade can the taps' phases
//! cancel, a dip that a short crossfade keeps short. The taps' delays
//! average `D`, which the node reports as its latency (the plan delays
//! the paths that meet it by as much), and `dry` is the input delayed by
//! the same: at 0 semitones the output is the input `D` samples late.
//!
//! The state is the line, its write index and `p` (f64 under every
//! profile); `ratio` is cached per value of `semitones`.

use super::fracline::Line;
use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const SEMITONES: usize = PITCH_SHIFT.index_of("semitones");
const CROSSFADE: usize = PITCH_SHIFT.index_of("crossfade");
const MIX: usize = PITCH_SHIFT.index_of("mix");
const WINDOW: usize = PITCH_SHIFT.index_of("window");

/// The shortest delay a tap reads: the cubic reads one sample newer.
pub(super) const MIN_DELAY: f64 = 2.0;

/// The window in samples at `sample_rate`: `window·sr` rounded to an even
/// number (so the latency is whole), at least 4.
pub(super) fn window_samples(window: f64, sample_rate: f64) -> Result<usize, String> {
    let half = (0.5 * window * sample_rate).round();
    if !(half.is_finite() && half < (1u64 << 31) as f64) {
        return Err(format!(
            "`window` = {window} s is too long at {sample_rate} Hz"
        ));
    }
    Ok(2 * (half as usize).max(2))
}

/// The most semitones either way.
pub(super) const MAX_SEMITONES: f64 = 24.0;

/// `2^(semitones/12)`, held to ±[`MAX_SEMITONES`] (NaN reads 0).
pub(super) fn ratio<M: Math>(semitones: f64) -> f64 {
    let st = if semitones.is_nan() {
        0.0
    } else {
        semitones.clamp(-MAX_SEMITONES, MAX_SEMITONES)
    };
    M::coef_pow(2.0, st / 12.0)
}

/// `p` (within one cycle of [0, 1), as a phase moved by less than one
/// cycle is) wrapped into [0, 1).
#[inline(always)]
pub(super) fn wrap(p: f64) -> f64 {
    if p >= 1.0 {
        p - 1.0
    } else if p < 0.0 {
        // A tiny negative phase plus 1 rounds to 1.
        let q = p + 1.0;
        if q >= 1.0 {
            0.0
        } else {
            q
        }
    } else {
        p
    }
}

/// The first tap's weight at phase `p` with crossfade share `c` (see the
/// module docs); the second tap's is 1 minus it.
#[inline(always)]
pub(super) fn weight(p: f64, c: f64) -> f64 {
    let e = 0.25 - (p - 0.5).abs();
    let u = if c > 0.0 {
        (0.5 + e / c).clamp(0.0, 1.0)
    } else if e > 0.0 {
        1.0
    } else {
        0.0
    };
    u * u * (3.0 - 2.0 * u)
}

/// The line `d` samples back by the Catmull–Rom cubic; `2 ≤ d < longest − 2`.
#[inline(always)]
fn cubic<S: Sample>(line: &Line<S>, d: f64) -> S {
    let whole = d.floor();
    let k = whole as usize;
    let f = S::from_f64(d - whole);
    let (ym, y0, y1, y2) = (
        line.tap(k - 1),
        line.tap(k),
        line.tap(k + 1),
        line.tap(k + 2),
    );
    let half = S::from_f64(0.5);
    let c1 = half * (y1 - ym);
    let c2 = ym - S::from_f64(2.5) * y0 + S::from_f64(2.0) * y1 - half * y2;
    let c3 = half * (y2 - ym) + S::from_f64(1.5) * (y0 - y1);
    ((c3 * f + c2) * f + c1) * f + y0
}

/// `pitch_shift` at one precision and math policy.
struct PitchShift<S, M> {
    line: Line<S>,
    /// The window `L` in samples.
    len: f64,
    /// The latency `D` in samples.
    latency: usize,
    sample_rate: f64,
    /// The first tap's phase, in [0, 1).
    phase: f64,
    /// The `semitones` the cached `ratio` is for.
    key: f64,
    ratio: f64,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> PitchShift<S, M> {
    #[inline]
    fn retune(&mut self, semitones: f64) -> f64 {
        if semitones.to_bits() != self.key.to_bits() {
            self.key = semitones;
            self.ratio = ratio::<M>(semitones);
        }
        1.0 - self.ratio
    }

    #[inline(always)]
    fn tick(&mut self, x: S, s: f64, crossfade: f64, mix: f64) -> S {
        let len = self.len;
        let p = wrap(self.phase + s / len);
        self.phase = p;
        let q = if p < 0.5 { p + 0.5 } else { p - 0.5 };
        let c = (crossfade * self.sample_rate * s.abs() / len).min(0.5);
        let wp = weight(p, c);
        let wq = 1.0 - wp;
        let wet = if wq == 0.0 {
            S::from_f64(wp) * cubic(&self.line, MIN_DELAY + p * len)
        } else if wp == 0.0 {
            S::from_f64(wq) * cubic(&self.line, MIN_DELAY + q * len)
        } else {
            S::from_f64(wp) * cubic(&self.line, MIN_DELAY + p * len)
                + S::from_f64(wq) * cubic(&self.line, MIN_DELAY + q * len)
        };
        let dry = self.line.tap(self.latency);
        self.line.push(x);
        S::from_f64(mix) * wet + S::from_f64(1.0 - mix) * dry
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for PitchShift<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (st, xf, mix) = (
            io.params.get(SEMITONES),
            io.params.get(CROSSFADE),
            io.params.get(MIX),
        );
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if st.is_const() && xf.is_const() && mix.is_const() {
            let s = self.retune(st.value());
            let (c, m) = (xf.value(), mix.value());
            for (o, x) in out.iter_mut().zip(x) {
                *o = self.tick(*x, s, c, m);
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                let s = self.retune(st.at(i));
                *o = self.tick(*x, s, xf.at(i), mix.at(i));
            }
        }
    }

    fn reset(&mut self) {
        self.line.reset();
        self.phase = 0.0;
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        self.line.zero_part(&mut part);
        let p = part.progress();
        if p == Progress::Done {
            self.line.rewind();
            self.phase = 0.0;
        }
        p
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.line.snapshot(st);
        st.put_sample("phase", self.phase);
    }

    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        if done == 0 {
            st.put_sample("phase", self.phase);
        }
        let next = self.line.save_part(st, done, budget);
        if next >= self.line.len() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let phase: f64 = st.get_sample("phase")?;
        if !(0.0..1.0).contains(&phase) {
            return Err(StateError::Kind("phase"));
        }
        self.line.restore(st)?;
        self.phase = phase;
        Ok(())
    }

    fn latency(&self) -> usize {
        self.latency
    }
}

struct PitchShiftOp;
impl Operator for PitchShiftOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let len = window_samples(cx.number(WINDOW), cx.sample_rate)?;
        Ok(Box::new(PitchShift::<S, M> {
            // Taps reach ⌊2 + L⌋ + 2 back.
            line: Line::new(len + 4),
            len: len as f64,
            latency: MIN_DELAY as usize + len / 2,
            sample_rate: cx.sample_rate,
            phase: 0.0,
            key: f64::NAN,
            ratio: 1.0,
            _m: PhantomData,
        }))
    }
}

/// `pitch_shift`; see the module docs.
pub(crate) static PITCH_SHIFT: OpSpec = OpSpec {
    name: "pitch_shift",
    doc: "Time-domain pitch shifter: two taps read a delay line of `in` at 2^(semitones/12) \
          times its speed, each jumping by `window` where its phase wraps, after the other has \
          taken over in a smoothstep crossfade of `crossfade` (at most half a cycle), so their weights sum to \
          1. The taps' delays average window/2 (plus 2 samples), reported as latency, so the \
          plan aligns the paths that meet it; `mix` blends in the input delayed as much.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "semitones",
            Dimension::Scalar,
            0.0,
            -MAX_SEMITONES,
            MAX_SEMITONES,
            "the shift in semitones (fractions allowed; 12 = an octave up)",
        ),
        number(
            "crossfade",
            Dimension::Time,
            0.005,
            0.0,
            1.0,
            "length of the crossfade where one tap hands over to the other (held to half a \
             tap's cycle, window/(2·|1 − 2^(semitones/12)|))",
        ),
        number(
            "mix",
            Dimension::Scalar,
            1.0,
            0.0,
            1.0,
            "share of the shifted signal (0 = the input, delayed by the latency)",
        ),
        ParamSpec {
            name: "window",
            kind: ParamKind::Number {
                dim: Dimension::Time,
                default: 0.1,
                min: 0.002,
                max: 2.0,
                modulatable: false,
            },
            doc: "the span the taps' delays sweep (a tap jumps by it); half of it is the \
                  latency; fixed at build",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [20.0, 20.0, 20.0]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<PitchShiftOp>,
};

#[cfg(test)]
#[path = "pitch_shift_tests.rs"]
mod tests;
