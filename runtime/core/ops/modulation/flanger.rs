//! `flanger`: a short swept delay with feedback, one line per channel. Per
//! frame, with `x` the input and every param read at that frame:
//!
//! ```text
//! d    = (delay + depth·sin(2π·phase + ch))·sr     ch = 0 left, `phase` right
//! wet  = line(d)                                   (linear interpolation)
//! write  x + feedback·wet
//! out  = (1 − mix)·x + mix·wet
//! ```
//!
//! `d` is clamped to 1 sample … the line's length (`delay` + `depth` at
//! their maxima), `feedback` to ±0.99. With the LFO held, the wet path is
//! the comb `z^−d / (1 − feedback·z^−d)`: peaks every `sr/d` Hz (from 0 Hz
//! for a positive feedback, from `sr/2d` for a negative one).

use super::super::delay::Ring;
use super::chorus::depth_lints;
use super::{clamp_or, mix_param, phase_param, rate_param, Sweep, MAX_FEEDBACK};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, number, BuildCtx, Io, NodeProcessor, NodeState, OpSpec,
    Operator, PartClear, Progress, StateError,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const RATE: usize = FLANGER.index_of("rate");
const DEPTH: usize = FLANGER.index_of("depth");
const DELAY: usize = FLANGER.index_of("delay");
const FEEDBACK: usize = FLANGER.index_of("feedback");
const PHASE: usize = FLANGER.index_of("phase");
const MIX: usize = FLANGER.index_of("mix");

const MAX_DELAY: f64 = 0.02;
const MAX_DEPTH: f64 = 0.01;

struct Flanger<S, M> {
    left: Ring<S>,
    right: Ring<S>,
    sweep: Sweep,
    _math: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Flanger<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let params = [RATE, DEPTH, DELAY, FEEDBACK, PHASE, MIX];
        let (left, right) = (&mut self.left, &mut self.right);
        let offsets = |p: &[f64; 6], out: &mut [f64]| {
            out[0] = 0.0;
            out[1] = p[4];
        };
        self.sweep
            .process::<S, M>(io, params, 2, offsets, |x, f, lfo| {
                let [delay, feedback] = f.own;
                let fb = S::from_f64(clamp_or(feedback, -MAX_FEEDBACK, MAX_FEEDBACK, 0.0));
                let sr = f.sample_rate;
                let dl = (delay + f.depth * lfo[0]) * sr;
                let dr = (delay + f.depth * lfo[1]) * sr;
                let wl = left.read(dl);
                let wr = right.read(dr);
                left.push(x + fb * wl);
                right.push(x + fb * wr);
                (wl, wr)
            });
    }

    fn reset(&mut self) {
        self.left.reset();
        self.right.reset();
        self.sweep.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.left.snapshot(st, "buffer", "write");
        self.right.snapshot(st, "buffer_r", "write_r");
        self.sweep.snapshot(st);
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        self.left.zero_part(&mut part);
        self.right.zero_part(&mut part);
        let p = part.progress();
        if p == Progress::Done {
            self.left.rewind();
            self.right.rewind();
            self.sweep.reset();
        }
        p
    }

    /// Both lines as `delay` saves its own (the same part of each per
    /// call), then the LFO phase at N.
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        let a = self.left.save_part(st, "buffer", "write", done, budget);
        let b = self
            .right
            .save_part(st, "buffer_r", "write_r", done, budget);
        if done == 0 {
            self.sweep.snapshot(st);
        }
        let next = a.min(b);
        if next >= self.left.len().max(self.right.len()) {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let phase = Sweep::read(st)?;
        self.left.restore(st, "buffer", "write")?;
        self.right.restore(st, "buffer_r", "write_r")?;
        self.sweep.set(phase);
        Ok(())
    }
}

struct FlangerOp;
impl Operator for FlangerOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Flanger::<S, M> {
            left: Ring::new(MAX_DELAY + MAX_DEPTH, cx.sample_rate)?,
            right: Ring::new(MAX_DELAY + MAX_DEPTH, cx.sample_rate)?,
            sweep: Sweep::new(cx.sample_rate),
            _math: PhantomData,
        }))
    }
}

pub(crate) static FLANGER: OpSpec = OpSpec {
    name: "flanger",
    doc: "Flanger: a short delay (linear interpolation) swept by a sine LFO around `delay` by \
          ±`depth`, its output fed back into it by `feedback`: the comb's peaks, every 1/delay \
          Hz, sweep with the LFO. out = (1−mix)·in + mix·wet; each channel has its own line, \
          the right channel's LFO `phase` ahead of the left's.",
    inputs: &["in"],
    outputs: &["out", "out_r"],
    params: &[
        rate_param(0.25),
        number(
            "depth",
            Dimension::Time,
            0.002,
            0.0,
            MAX_DEPTH,
            "how far the LFO sweeps the delay either side of `delay`",
        ),
        number(
            "delay",
            Dimension::Time,
            0.003,
            0.0,
            MAX_DELAY,
            "the centre delay (at the LFO's midpoint; ~0.5–10 ms for a flanger)",
        ),
        number(
            "feedback",
            Dimension::Scalar,
            0.5,
            -MAX_FEEDBACK,
            MAX_FEEDBACK,
            "fraction of the delayed signal fed back into the line (negative: peaks at odd \
             multiples of 1/(2·delay))",
        ),
        phase_param(),
        mix_param(),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: |v, _| depth_lints(v, DEPTH, DELAY),
    // benches/costs.md.
    cost: |p, _| by_profile(p, [48.4, 42.0, 29.1]),
    algorithms: None,
    build: build_any::<FlangerOp>,
};
