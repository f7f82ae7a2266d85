//! `chorus`: `voices` taps of one delay line, each swept by the LFO at its
//! own phase. Per frame, with `x` the input, `V` the voices and every param
//! read at that frame:
//!
//! ```text
//! offset_v = 2π·spread·v/V                                  v = 0 … V−1
//! d_v      = (delay + depth·sin(2π·phase + offset_v + ch))·sr   ch = 0 left, `phase` right
//! wet      = (1/V)·Σ_v line(d_v)                            (linear interpolation)
//! out      = (1 − mix)·x + mix·wet
//! ```
//!
//! then `x` is written to the line (no feedback). `d_v` is clamped to
//! 1 sample … the line's length (`delay` + `depth` at their maxima).

use super::super::delay::Ring;
use super::{clamp_or, mix_param, phase_param, rate_param, Sweep, TWO_PI};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, number, BuildCtx, Io, Lint, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const RATE: usize = CHORUS.index_of("rate");
const DEPTH: usize = CHORUS.index_of("depth");
const DELAY: usize = CHORUS.index_of("delay");
const VOICES: usize = CHORUS.index_of("voices");
const SPREAD: usize = CHORUS.index_of("spread");
const PHASE: usize = CHORUS.index_of("phase");
const MIX: usize = CHORUS.index_of("mix");

const MAX_DELAY: f64 = 0.05;
const MAX_DEPTH: f64 = 0.02;
const MAX_VOICES: i64 = 8;

struct Chorus<S, M> {
    line: Ring<S>,
    sweep: Sweep,
    voices: usize,
    /// `v / voices` of each voice `v` (its share of `spread`).
    ratios: Vec<f64>,
    _math: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Chorus<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let params = [RATE, DEPTH, DELAY, SPREAD, PHASE, MIX];
        let (line, count, ratios) = (&mut self.line, self.voices, &self.ratios);
        let gain = S::from_f64(1.0 / count as f64);
        // Per voice v, the left LFO value at 2v and the right at 2v + 1.
        let offsets = |p: &[f64; 6], out: &mut [f64]| {
            let spread = clamp_or(p[3], 0.0, 1.0, 0.0);
            for (pair, ratio) in out.chunks_exact_mut(2).zip(ratios) {
                let offset = TWO_PI * spread * ratio;
                pair[0] = offset;
                pair[1] = offset + p[4];
            }
        };
        self.sweep
            .process::<S, M>(io, params, 2 * count, offsets, |x, f, lfo| {
                let delay = f.own[0];
                let sr = f.sample_rate;
                let (mut wl, mut wr) = (S::ZERO, S::ZERO);
                for pair in lfo.chunks_exact(2) {
                    let dl = (delay + f.depth * pair[0]) * sr;
                    let dr = (delay + f.depth * pair[1]) * sr;
                    wl += line.read(dl);
                    wr += line.read(dr);
                }
                line.push(x);
                (gain * wl, gain * wr)
            });
    }

    fn reset(&mut self) {
        self.line.reset();
        self.sweep.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.line.snapshot(st, "buffer", "write");
        self.sweep.snapshot(st);
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        self.line.zero_part(&mut part);
        let p = part.progress();
        if p == Progress::Done {
            self.line.rewind();
            self.sweep.reset();
        }
        p
    }

    /// The line as `delay` saves its own, then the LFO phase (at the
    /// first call, the phase at N).
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        let next = self.line.save_part(st, "buffer", "write", done, budget);
        if done == 0 {
            self.sweep.snapshot(st);
        }
        if next >= self.line.len() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let phase = Sweep::read(st)?;
        self.line.restore(st, "buffer", "write")?;
        self.sweep.set(phase);
        Ok(())
    }
}

struct ChorusOp;
impl Operator for ChorusOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let voices = match cx.values[VOICES] {
            Value::Integer(v) if (1..=MAX_VOICES).contains(&v) => v as usize,
            ref other => return Err(format!("`voices` must be 1 … {MAX_VOICES}, not {other:?}")),
        };
        Ok(Box::new(Chorus::<S, M> {
            line: Ring::new(MAX_DELAY + MAX_DEPTH, cx.sample_rate)?,
            sweep: Sweep::new(cx.sample_rate),
            voices,
            ratios: (0..voices).map(|v| v as f64 / voices as f64).collect(),
            _math: PhantomData,
        }))
    }
}

/// A `depth` above `delay`: the LFO's troughs ask for a negative delay,
/// which is clamped to 1 sample (the sweep flattens there).
pub(super) fn depth_lints(values: &[Value], depth: usize, delay: usize) -> Vec<Lint> {
    let (Some(dp), Some(dl)) = (values[depth].as_number(), values[delay].as_number()) else {
        return Vec::new();
    };
    if dp <= dl {
        return Vec::new();
    }
    vec![Lint {
        param: "depth",
        message: format!(
            "`depth` {dp} s is more than `delay` {dl} s: the LFO's troughs ask for a delay below \
             0, which is held at 1 sample (the sweep flattens there)"
        ),
        help: Some(format!(
            "make `depth` at most `delay` ({dl} s), or lengthen `delay`"
        )),
        held: None,
    }]
}

pub(crate) static CHORUS: OpSpec = OpSpec {
    name: "chorus",
    doc: "Chorus: `voices` taps of one delay line (linear interpolation), each swept by a sine \
          LFO around `delay` by ±`depth`, the voices' LFO phases spread evenly over `spread` of \
          a cycle; wet = the voices' mean, out = (1−mix)·in + mix·wet. The right channel's \
          LFOs run `phase` ahead of the left's. No feedback.",
    inputs: &["in"],
    outputs: &["out", "out_r"],
    params: &[
        rate_param(0.8),
        number(
            "depth",
            Dimension::Time,
            0.002,
            0.0,
            MAX_DEPTH,
            "how far the LFO sweeps each voice's delay either side of `delay`",
        ),
        number(
            "delay",
            Dimension::Time,
            0.015,
            0.0,
            MAX_DELAY,
            "the voices' centre delay (the delay at the LFO's midpoint; ~7–30 ms for a chorus)",
        ),
        ParamSpec {
            name: "voices",
            kind: ParamKind::Integer {
                default: 3,
                min: 1,
                max: MAX_VOICES,
            },
            doc: "how many swept taps (the wet signal is their mean)",
            settable_by_events: false,
        },
        number(
            "spread",
            Dimension::Scalar,
            1.0,
            0.0,
            1.0,
            "the fraction of an LFO cycle the voices' phases span (voice v at spread·v/voices; \
             0: all in step)",
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
    // benches/costs.md: per voice, two LFO sines and two line reads
    // (measured at 3 voices).
    cost: |p, v| {
        let voices = match v.get(VOICES) {
            Some(Value::Integer(n)) => *n as f64,
            _ => 3.0,
        };
        10.0 + voices * by_profile(p, [53.0, 49.0, 58.0])
    },
    algorithms: None,
    build: build_any::<ChorusOp>,
};
