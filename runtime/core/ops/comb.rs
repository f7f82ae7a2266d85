//! `comb`: a feedback or feedforward comb filter on a fractional delay
//! line ([`Line`], linear or allpass interpolation).
//!
//! Per sample, with `x` the input, `g` = `gain` and `r(d)` the line read
//! `d = clamp(time·sr, min, max_delay)` samples back (every param read at
//! that sample; `min` is 1 sample for linear, 1.5 for allpass reading):
//!
//! ```text
//! feedback:     y = x + g·r(d),  the line is fed y   (peaks at k·sr/d, gain 1/(1 − |g|))
//! feedforward:  y = x + g·r(d),  the line is fed x   (notches between, depth |1 − |g||)
//! ```
//!
//! `max_delay = max(⌈max_time·sr⌉, 1)` sizes the line at build, as
//! `delay`'s. `gain` is held to ±0.999, so a modulated loop stays stable.
//! The state is the line, its write index and the allpass reader's last
//! output; `reset` zeroes them in place.

use super::delay::max_delay_samples;
use super::fracline::{Interp, Line, INTERP_CHOICES};
use super::{
    build_any, by_profile, no_choices, number, BuildCtx, Held, Io, Lint, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError, Value,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;

const TIME: usize = COMB.index_of("time");
const GAIN: usize = COMB.index_of("gain");
const MODE: usize = COMB.index_of("mode");
const INTERP: usize = COMB.index_of("interp");
const MAX_TIME: usize = COMB.index_of("max_time");

/// The largest |gain| of `comb` and `allpass`.
pub(super) const MAX_GAIN: f64 = 0.999;

/// The delay in samples a line of `max_delay` samples reads for `d`, held
/// to `interp`'s shortest … `max_delay` (NaN reads the shortest).
#[inline(always)]
pub(super) fn held_delay(d: f64, max_delay: f64, interp: Interp) -> f64 {
    let lo = interp.min_delay();
    if d.is_nan() || d < lo {
        lo
    } else if d > max_delay {
        max_delay
    } else {
        d
    }
}

/// A line of `max_time` seconds at `sample_rate` and its longest delay in samples.
pub(super) fn line_for<S: Sample>(
    max_time: f64,
    sample_rate: f64,
) -> Result<(Line<S>, f64), String> {
    let max_delay = max_delay_samples(max_time, sample_rate)?.max(2);
    Ok((Line::new(max_delay + 1), max_delay as f64))
}

/// A line read at a held delay by one interpolation, with its reader's state.
pub(super) struct Reader<S> {
    pub(super) line: Line<S>,
    pub(super) interp: Interp,
    pub(super) max_delay: f64,
    pub(super) sample_rate: f64,
    /// The allpass reader's last output (0 when reading linearly).
    prev: S,
}

impl<S: Sample> Reader<S> {
    pub(super) fn new(cx: &BuildCtx<'_>, max_time: usize, interp: usize) -> Result<Self, String> {
        let (line, max_delay) = line_for(cx.number(max_time), cx.sample_rate)?;
        let Value::Enum(k) = cx.values[interp] else {
            return Err("`interp` is not one of its choices".into());
        };
        Ok(Reader {
            line,
            interp: Interp::from_index(k),
            max_delay,
            sample_rate: cx.sample_rate,
            prev: S::ZERO,
        })
    }

    /// The line `time` seconds back.
    #[inline(always)]
    pub(super) fn read(&mut self, time: f64) -> S {
        let d = held_delay(time * self.sample_rate, self.max_delay, self.interp);
        match self.interp {
            Interp::Linear => self.line.linear(d),
            Interp::Allpass => self.line.allpass(d, &mut self.prev),
        }
    }

    pub(super) fn reset(&mut self) {
        self.line.reset();
        self.prev = S::ZERO;
    }

    pub(super) fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        self.line.zero_part(&mut part);
        let p = part.progress();
        if p == Progress::Done {
            self.line.rewind();
            self.prev = S::ZERO;
        }
        p
    }

    pub(super) fn snapshot(&self, st: &mut NodeState) {
        self.line.snapshot(st);
        st.put_sample("interp_prev", self.prev);
    }

    pub(super) fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        if done == 0 {
            st.put_sample("interp_prev", self.prev);
        }
        let next = self.line.save_part(st, done, budget);
        if next >= self.line.len() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    pub(super) fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.line.restore(st)?;
        self.prev = st.get_sample("interp_prev")?;
        Ok(())
    }
}

/// `gain` held to ±[`MAX_GAIN`].
#[inline(always)]
pub(super) fn held_gain(g: f64) -> f64 {
    if g.is_nan() {
        0.0
    } else {
        g.clamp(-MAX_GAIN, MAX_GAIN)
    }
}

/// `comb` at one precision.
struct Comb<S> {
    reader: Reader<S>,
    feedback: bool,
}

impl<S: Sample> Comb<S> {
    #[inline(always)]
    fn tick(&mut self, x: S, time: f64, gain: f64) -> S {
        let y = x + S::from_f64(held_gain(gain)) * self.reader.read(time);
        self.reader.line.push(if self.feedback { y } else { x });
        y
    }
}

impl<S: Sample> NodeProcessor<S> for Comb<S> {
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

struct CombOp;
impl Operator for CombOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Comb::<S> {
            reader: Reader::new(cx, MAX_TIME, INTERP)?,
            feedback: matches!(cx.values[MODE], Value::Enum(0)),
        }))
    }
}

/// A `time` longer than `max_time`: the delay is held to `max_time`, as
/// `delay`'s is (the lint of `comb` and `allpass`).
pub(super) fn time_lints(
    values: &[Value],
    sample_rate: f64,
    time: usize,
    max_time: usize,
) -> Vec<Lint> {
    let (Some(t), Some(max)) = (values[time].as_number(), values[max_time].as_number()) else {
        return Vec::new();
    };
    if t <= max {
        return Vec::new();
    }
    let held = max_delay_samples(max, sample_rate).ok().map(|m| Held {
        plays: held_delay(t * sample_rate, m.max(2) as f64, Interp::Linear) / sample_rate,
        why: format!("max_time is {max} s"),
    });
    vec![Lint {
        param: "time",
        message: format!(
            "`time` {t} s is longer than `max_time` {max} s: the delay is clamped to max_time ({max} s)"
        ),
        help: Some(format!(
            "raise `max_time` to at least {t} s (it sizes the line), or shorten `time`"
        )),
        held,
    }]
}

/// The `time`, `max_time` and `interp` params of `comb` and `allpass`.
macro_rules! line_params {
    ($default_time:expr) => {
        [
            number(
                "time",
                Dimension::Time,
                $default_time,
                0.0,
                3600.0,
                "delay time (held to 1 sample, or 1.5 with allpass reading, … max_time)",
            ),
            ParamSpec {
                name: "interp",
                kind: ParamKind::Enum {
                    choices: INTERP_CHOICES,
                    default: "linear",
                },
                doc: "how the line is read between samples: linear, or a first-order allpass \
                      (flat magnitude: no damping in the loop)",
                settable_by_events: false,
            },
            ParamSpec {
                name: "max_time",
                kind: ParamKind::Number {
                    dim: Dimension::Time,
                    default: 1.0,
                    min: 0.0,
                    max: 60.0,
                    modulatable: false,
                },
                doc: "longest delay; sets the line's size at build",
                settable_by_events: false,
            },
        ]
    };
}
pub(super) use line_params;

const LINE_PARAMS: [ParamSpec; 3] = line_params!(0.01);

pub(crate) static COMB: OpSpec = OpSpec {
    name: "comb",
    doc: "Comb filter on a fractional delay line: y = in + gain·line(time). `feedback` feeds the \
          line with y (resonant peaks every 1/time Hz, decaying by gain each pass); \
          `feedforward` feeds it with the input (notches). `interp` reads the line linearly \
          or through a first-order allpass.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        LINE_PARAMS[0],
        number(
            "gain",
            Dimension::Scalar,
            0.7,
            -MAX_GAIN,
            MAX_GAIN,
            "the delayed signal's gain (the loop's, in feedback mode)",
        ),
        ParamSpec {
            name: "mode",
            kind: ParamKind::Enum {
                choices: &["feedback", "feedforward"],
                default: "feedback",
            },
            doc: "feedback (the line is fed the output: peaks) or feedforward (fed the input: notches)",
            settable_by_events: false,
        },
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
    cost: |p, _| by_profile(p, [3.6, 3.3, 3.4]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<CombOp>,
};

#[cfg(test)]
#[path = "comb_tests.rs"]
pub(super) mod tests;
