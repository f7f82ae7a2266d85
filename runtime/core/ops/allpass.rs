//! `allpass`: a Schroeder allpass on a fractional delay line (the
//! diffuser of classic reverbs), read linearly or through a first-order
//! allpass.
//!
//! Per sample, with `x` the input, `g` = `gain` (held to ±0.999) and
//! `w = r(d)` the line read `d = clamp(time·sr, min, max_delay)` samples
//! back (see `comb`):
//!
//! ```text
//! v = x + g·w          (fed to the line)
//! y = w − g·v          H(z) = (z^−D − g)/(1 − g·z^−D): |H| = 1 at every frequency
//! ```
//!
//! With linear reading at a fractional `d`, the interpolator's lowpass
//! makes |H| dip slightly towards Nyquist; an integer `d` (or allpass
//! reading) keeps it flat. The state is `comb`'s.

use super::comb::{held_gain, line_params, time_lints, Reader, MAX_GAIN};
use super::fracline::INTERP_CHOICES;
use super::{
    build_any, by_profile, no_choices, number, BuildCtx, Io, NodeProcessor, NodeState, OpSpec,
    Operator, ParamKind, ParamSpec, Progress, StateError,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;

const TIME: usize = ALLPASS.index_of("time");
const GAIN: usize = ALLPASS.index_of("gain");
const INTERP: usize = ALLPASS.index_of("interp");
const MAX_TIME: usize = ALLPASS.index_of("max_time");

/// `allpass` at one precision.
struct Allpass<S> {
    reader: Reader<S>,
}

impl<S: Sample> Allpass<S> {
    #[inline(always)]
    fn tick(&mut self, x: S, time: f64, gain: f64) -> S {
        let g = S::from_f64(held_gain(gain));
        let w = self.reader.read(time);
        let v = x + g * w;
        self.reader.line.push(v);
        w - g * v
    }
}

impl<S: Sample> NodeProcessor<S> for Allpass<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (time, gain) = (io.params.get(TIME), io.params.get(GAIN));
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if time.is_const() && gain.is_const() {
            let (t, g) = (time.value(), gain.value());
            for (o, x) in out.iter_mut().zip(x) {
                *o = self.tick(*x, t, g);
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                *o = self.tick(*x, time.at(i), gain.at(i));
            }
        }
    }

    fn reset(&mut self) {
        self.reader.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.reader.snapshot(st);
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        self.reader.reset_part(done, budget)
    }

    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        self.reader.save_part(st, done, budget)
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.reader.restore(st)
    }
}

struct AllpassOp;
impl Operator for AllpassOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Allpass::<S> {
            reader: Reader::new(cx, MAX_TIME, INTERP)?,
        }))
    }
}

const LINE_PARAMS: [ParamSpec; 3] = line_params!(0.005);

pub(crate) static ALLPASS: OpSpec = OpSpec {
    name: "allpass",
    doc: "Schroeder allpass on a fractional delay line: v = in + gain·line(time) feeds the line, \
          out = line(time) − gain·v; a flat magnitude response that smears phase (a reverb's \
          diffuser). `interp` reads the line linearly or through a first-order allpass.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        LINE_PARAMS[0],
        number(
            "gain",
            Dimension::Scalar,
            0.5,
            -MAX_GAIN,
            MAX_GAIN,
            "the allpass coefficient",
        ),
        LINE_PARAMS[1],
        LINE_PARAMS[2],
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: |v, sr| time_lints(v, sr, TIME, MAX_TIME),
    cost: |p, _| by_profile(p, [3.7, 3.6, 3.6]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<AllpassOp>,
};

#[cfg(test)]
#[path = "allpass_tests.rs"]
mod tests;
