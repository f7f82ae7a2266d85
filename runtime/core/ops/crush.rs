//! `crush`: bit-depth and sample-rate reduction.
//!
//! Per sample, with `ratio = min(rate / sample_rate, 1)` and the phase `φ`
//! (state, starting at 1 so the first sample is taken):
//!
//! ```text
//! if φ ≥ 1:  held = in,  φ = φ − 1        (sample and hold at `rate` Hz)
//! φ = φ + ratio
//! q   = 2^(1 − bits)                      (2^bits levels across −1 … 1; bits may be fractional)
//! out = q · floor(held / q + 1/2)         (round half up: a mid-tread quantiser, 0 stays 0)
//! ```
//!
//! The phase keeps its fraction, so a rate that does not divide the sample
//! rate holds some values one sample longer than others and averages the
//! asked rate exactly, as SuperCollider's `Latch` under a `Phasor` does. A
//! `rate` at or above the sample rate takes every sample; `bits` = 32 is
//! a step of 2^−31 (inaudible). Phase and quantiser run in f64 at every
//! precision, and `2^(1 − bits)` is computed with libm when `bits` changes,
//! so every profile is bit-exact with strict up to the f32 rounding of
//! input and output. A non-finite input holds 0. The state is the phase
//! and the held value.

use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, StateError,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const BITS: usize = CRUSH.index_of("bits");
const RATE: usize = CRUSH.index_of("rate");

/// The quantiser's step for `bits`, recomputed when `bits` changes.
#[derive(Clone, Copy, Debug)]
struct Step {
    bits: f64,
    q: f64,
}

impl Step {
    #[inline]
    fn get(&mut self, bits: f64) -> f64 {
        if bits.to_bits() != self.bits.to_bits() {
            self.bits = bits;
            self.q = libm::exp2(1.0 - bits);
        }
        self.q
    }
}

/// The quantiser: `q · floor(x/q + 1/2)`.
#[inline]
pub(crate) fn quantise(x: f64, q: f64) -> f64 {
    q * libm::floor(x / q + 0.5)
}

struct Crush<S, M> {
    sample_rate: f64,
    phase: f64,
    held: f64,
    step: Step,
    _m: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> Crush<S, M> {
    #[inline]
    fn tick(&mut self, x: S, ratio: f64, q: f64) -> S {
        if self.phase >= 1.0 {
            let x = x.to_f64();
            self.held = if x.is_finite() { x } else { 0.0 };
            self.phase -= 1.0;
        }
        self.phase += ratio;
        S::from_f64(quantise(self.held, q))
    }

    #[inline]
    fn ratio(&self, rate: f64) -> f64 {
        let r = rate / self.sample_rate;
        if r >= 1.0 {
            1.0
        } else if r > 0.0 {
            r
        } else {
            0.0
        }
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Crush<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let bits = io.params.get(BITS);
        let rate = io.params.get(RATE);
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if bits.is_const() && rate.is_const() {
            let q = self.step.get(bits.value());
            let ratio = self.ratio(rate.value());
            for (o, x) in out.iter_mut().zip(x) {
                *o = self.tick(*x, ratio, q);
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                let q = self.step.get(bits.at(i));
                let ratio = self.ratio(rate.at(i));
                *o = self.tick(*x, ratio, q);
            }
        }
    }

    fn reset(&mut self) {
        self.phase = 1.0;
        self.held = 0.0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_sample::<f64>("phase", self.phase);
        st.put_sample::<f64>("held", self.held);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let phase = st.get_sample::<f64>("phase")?;
        let held = st.get_sample::<f64>("held")?;
        self.phase = if (0.0..2.0).contains(&phase) {
            phase
        } else {
            1.0
        };
        self.held = if held.is_finite() { held } else { 0.0 };
        Ok(())
    }
}

struct CrushOp;
impl Operator for CrushOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Crush::<S, M> {
            sample_rate: cx.sample_rate,
            phase: 1.0,
            held: 0.0,
            step: Step {
                bits: f64::NAN,
                q: 1.0,
            },
            _m: PhantomData,
        }))
    }
}

pub(crate) static CRUSH: OpSpec = OpSpec {
    name: "crush",
    doc: "Bit crusher: holds the input at `rate` Hz (a phase accumulator, so any rate, \
          the fraction carried) and quantises it to 2^bits levels across −1 … 1 \
          (step 2^(1 − bits), rounded half up; fractional bits allowed).",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "bits",
            Dimension::Scalar,
            8.0,
            1.0,
            32.0,
            "bit depth: 2^bits levels across −1 … 1 (fractional values allowed)",
        ),
        number(
            "rate",
            Dimension::Frequency,
            48000.0,
            1.0,
            1e6,
            "the hold rate in Hz; at or above the sample rate every sample is taken",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [5.0, 4.8, 4.8]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<CrushOp>,
};

#[cfg(test)]
#[path = "crush_tests.rs"]
mod tests;
