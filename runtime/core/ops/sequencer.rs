//! `sequencer`: a step sequencer on the beat grid.
//!
//! Step `k` starts at `round_half_even((k + s_k) · L)` samples from the
//! node's anchor, where `L` is the step length in samples as an exact
//! rational (`rate` × the sample rate: a sixteenth at 120 bpm and 48 kHz is
//! 6000 samples, at 97 bpm 720000/97) and `s_k` is `swing` on odd steps, 0
//! on even ones (swing exact as its binary value). Nothing accumulates: a
//! step lands on the sample the tempo gives however long the sequencer has
//! run. A new `rate` (a tempo edit while playing) re-anchors the grid where
//! it applies: the step position there is kept and later steps follow the
//! new length.

use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::{Dimension, Rational};
use std::marker::PhantomData;

/// The most steps a `steps` array may hold.
pub(crate) const MAX_STEPS: usize = 4096;
pub(crate) const OUTPUT_MODES: &[&str] = &["value", "hz"];

const STEPS: usize = SEQUENCER.index_of("steps");
const RATE: usize = SEQUENCER.index_of("rate");
const GATE: usize = SEQUENCER.index_of("gate");
const SWING: usize = SEQUENCER.index_of("swing");
const LOOP: usize = SEQUENCER.index_of("loop");
const OUTPUT: usize = SEQUENCER.index_of("output");

/// The exact value of a finite f64 as a rational (`None` when it does not
/// fit: not for the 0 … 1 values it is used on).
pub(crate) fn exact_rational(x: f64) -> Option<Rational> {
    if !x.is_finite() {
        return None;
    }
    if x == 0.0 {
        return Some(Rational::ZERO);
    }
    let bits = x.to_bits();
    let neg = bits >> 63 == 1;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mant, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    };
    let m = if neg { -(mant as i128) } else { mant as i128 };
    if e >= 0 {
        Rational::new(m.checked_mul(1i128.checked_shl(e as u32)?)?, 1)
    } else if e > -120 {
        Rational::new(m, 1i128 << (-e) as u32)
    } else {
        None
    }
}

/// The step length in samples: `seconds · sample_rate`, exact.
fn step_samples(v: &Value, sample_rate: f64) -> Rational {
    let secs = match v {
        Value::Span(r) => *r,
        _ => Rational::new(1, 8).expect("den > 0"),
    };
    secs.checked_mul_int(sample_rate as i128)
        .filter(|r| r.num > 0)
        .unwrap_or(Rational::from_int(1))
}

/// What a sequencer with these static params outputs on `value`, step by
/// step: each step as written, or under `output: "hz"` its note number as
/// Hz (440·2^((n − 69)/12)); NaN for a rest. The node plays these, and the
/// compiler reads them to warn about a step that drives a frequency past
/// what its target can play.
pub(crate) fn step_outputs(values: &[Value]) -> Vec<f64> {
    let raw = match values.get(STEPS) {
        Some(Value::Gains(g)) if !g.is_empty() => g.clone(),
        _ => vec![0.0],
    };
    let hz = matches!(values.get(OUTPUT), Some(Value::Enum(1)));
    raw.into_iter()
        .map(|v| {
            if hz && !v.is_nan() {
                440.0 * libm::pow(2.0, (v - 69.0) / 12.0)
            } else {
                v
            }
        })
        .collect()
}

struct Sequencer<S, M> {
    /// The step values as output (note numbers already in Hz under
    /// `output: "hz"`); NaN is a rest.
    steps: Vec<f64>,
    looping: bool,
    /// Step length in samples.
    len: Rational,
    /// The node's clock: samples since build or reset.
    t: u64,
    /// The anchor: at clock `a` the grid stood at step position `q`.
    a: u64,
    q: Rational,
    /// The next step to start, counted on the grid, and when it starts.
    k: u64,
    next_on: u64,
    /// When the open gate closes (`u64::MAX`: at the next step's start).
    gate_off: u64,
    value: f64,
    gate: bool,
    /// A non-looping sequence played its last step.
    done: bool,
    sample_rate: f64,
    /// The swing read at the last step's start (the next step's).
    swing: f64,
    _m: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> Sequencer<S, M> {
    /// The clock sample step `k` starts at (never before `self.t`).
    fn onset(&self, k: u64, swing: f64) -> u64 {
        let s = if k % 2 == 1 {
            exact_rational(swing.clamp(0.0, 0.75)).unwrap_or(Rational::ZERO)
        } else {
            Rational::ZERO
        };
        let pos = Rational::from_int(k as i128)
            .checked_sub(self.q)
            .and_then(|p| p.checked_add(s))
            .and_then(|p| p.checked_mul(self.len));
        match pos {
            Some(p) if !p.is_negative() => {
                let off = p.round_half_even();
                self.a
                    .saturating_add(u64::try_from(off).unwrap_or(u64::MAX))
                    .max(self.t)
            }
            _ => self.t,
        }
    }

    /// Starts step `self.k` at clock `self.t`.
    fn start_step(&mut self, gate: f64, swing: f64) {
        let n = self.steps.len() as u64;
        if !self.looping && self.k >= n {
            self.done = true;
            self.next_on = u64::MAX;
            return;
        }
        let v = self.steps[(self.k % n) as usize];
        let this_on = self.t;
        self.swing = swing;
        self.k += 1;
        self.next_on = if !self.looping && self.k >= n {
            // After the last step: its gate still closes after a step length.
            let end = Rational::from_int(self.k as i128)
                .checked_sub(self.q)
                .and_then(|p| p.checked_mul(self.len))
                .map(|p| self.a.saturating_add(p.round_half_even().max(0) as u64))
                .unwrap_or(this_on);
            end.max(this_on + 1)
        } else {
            self.onset(self.k, swing)
        };
        if v.is_nan() {
            self.gate = false;
            self.gate_off = u64::MAX;
            return;
        }
        self.value = v;
        // NaN (a port's) reads as 0: the shortest gate.
        let g = if gate.is_nan() {
            0.0
        } else {
            gate.clamp(0.0, 1.0)
        };
        self.gate = true;
        let last = !self.looping && self.k >= n;
        if g >= 1.0 {
            // A gate of 1 ties into the next step: it stays open (an
            // envelope is not retriggered) unless that step is a rest.
            self.gate_off = if last { self.next_on } else { u64::MAX };
            return;
        }
        // At least 1 sample; closed for at least the sample before the next
        // step starts (a swung step is shorter than `len`), so that step
        // retriggers. A step 1 sample long leaves no room: its gate is that
        // sample.
        let glen = exact_rational(g)
            .and_then(|g| g.checked_mul(self.len))
            .map(|x| x.round_half_even().max(1) as u64)
            .unwrap_or(1);
        let latest = self.next_on.saturating_sub(1).max(this_on + 1);
        self.gate_off = this_on.saturating_add(glen).min(latest);
    }

    /// Re-anchors the grid at the clock: the step position now is kept,
    /// later steps are `len` apart.
    fn reanchor(&mut self, len: Rational) {
        let moved = Rational::from_int(self.t as i128 - self.a as i128)
            .checked_div(self.len)
            .and_then(|d| d.checked_add(self.q));
        match moved {
            Some(q) => self.q = q,
            // Out of exact range (many edits): anchor at the next step.
            None => {
                self.q = Rational::from_int(self.k as i128);
                self.a = self.next_on.max(self.t);
                self.len = len;
                return;
            }
        }
        self.a = self.t;
        self.len = len;
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Sequencer<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let gate = io.params.get(GATE);
        let swing = io.params.get(SWING);
        let (vo, go) = io.outputs.split_at_mut(1);
        let (vo, go) = (&mut vo[0][..n], &mut go[0][..n]);
        for i in 0..n {
            if self.t == self.gate_off {
                self.gate = false;
                self.gate_off = u64::MAX;
            }
            if !self.done && self.t >= self.next_on {
                self.start_step(gate.at(i), swing.at(i));
            }
            vo[i] = S::from_f64(self.value);
            go[i] = if self.gate { S::ONE } else { S::ZERO };
            self.t += 1;
        }
    }

    fn reset(&mut self) {
        self.t = 0;
        self.a = 0;
        self.q = Rational::ZERO;
        self.k = 0;
        self.next_on = 0;
        self.gate_off = u64::MAX;
        self.value = 0.0;
        self.gate = false;
        self.done = false;
        self.swing = 0.0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        let i = |x: i128| i64::try_from(x).unwrap_or(0);
        st.put_u64("t", self.t);
        st.put_u64("a", self.a);
        st.put_i64("q_num", i(self.q.num));
        st.put_i64("q_den", i(self.q.den));
        st.put_i64("len_num", i(self.len.num));
        st.put_i64("len_den", i(self.len.den));
        st.put_u64("k", self.k);
        st.put_u64("next_on", self.next_on);
        st.put_u64("gate_off", self.gate_off);
        // The value is an f64 whatever the precision: a note's Hz stays exact.
        st.put_u64("value_bits", self.value.to_bits());
        st.put_bool("gate", self.gate);
        st.put_bool("done", self.done);
        st.put_u64("swing_bits", self.swing.to_bits());
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let rational = |n: &'static str, d: &'static str| -> Result<Rational, StateError> {
            let (n, d) = (st.get_i64(n)?, st.get_i64(d)?);
            Ok(Rational::new(n as i128, d as i128).unwrap_or(Rational::ZERO))
        };
        let q = rational("q_num", "q_den")?;
        let len = rational("len_num", "len_den")?;
        let t = st.get_u64("t")?;
        let a = st.get_u64("a")?;
        let k = st.get_u64("k")?;
        let next_on = st.get_u64("next_on")?;
        let gate_off = st.get_u64("gate_off")?;
        let value = f64::from_bits(st.get_u64("value_bits")?);
        let gate = st.get_bool("gate")?;
        let done = st.get_bool("done")?;
        let swing = f64::from_bits(st.get_u64("swing_bits")?);
        self.swing = swing;
        self.t = t;
        self.a = a;
        self.q = q;
        if len.num > 0 {
            self.len = len;
        }
        self.k = k;
        self.next_on = next_on;
        self.gate_off = gate_off;
        self.value = value;
        self.gate = gate;
        self.done = done;
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        match (param, value) {
            (LOOP, Value::Bool(b)) => {
                self.looping = *b;
                if *b && self.done {
                    // Looping again: the grid goes on from where it stopped.
                    self.done = false;
                    self.next_on = self.onset(self.k, 0.0);
                }
            }
            (RATE, Value::Span(_)) => {
                let len = step_samples(value, self.sample_rate);
                if len != self.len {
                    self.reanchor(len);
                    if !self.done {
                        self.next_on = self.onset(self.k, self.swing);
                        // An open gate still closes before the next step.
                        if self.gate_off != u64::MAX {
                            let latest = self.next_on.saturating_sub(1).max(self.t);
                            self.gate_off = self.gate_off.min(latest);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

struct SequencerOp;
impl Operator for SequencerOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let steps = step_outputs(cx.values);
        let looping = !matches!(cx.values[LOOP], Value::Bool(false));
        Ok(Box::new(Sequencer::<S, M> {
            steps,
            looping,
            len: step_samples(&cx.values[RATE], cx.sample_rate),
            t: 0,
            a: 0,
            q: Rational::ZERO,
            k: 0,
            next_on: 0,
            gate_off: u64::MAX,
            value: 0.0,
            gate: false,
            done: false,
            sample_rate: cx.sample_rate,
            swing: 0.0,
            _m: PhantomData,
        }))
    }
}

pub(crate) static SEQUENCER: OpSpec = OpSpec {
    name: "sequencer",
    doc: "Step sequencer on the beat grid: step k starts at round_half_even((k + s_k)·L) samples, L the exact step length (`rate` × the sample rate) and s_k the `swing` on odd steps; `value` holds the current step's value (a `null` rest keeps the previous one, 0 before the first), `gate` is 1 from a step's start for `gate` × L samples (at least 1) and 0 from the sample before the next step's start at the latest (a swung step is shorter), so every step retriggers; only a gate of 1 ties into the next step. `output: \"hz\"` turns note numbers into Hz (440·2^((n−69)/12)) for an oscillator's `freq`. A tempo edit while playing re-anchors the grid where it applies.",
    inputs: &[],
    outputs: &["value", "gate"],
    params: &[
        ParamSpec {
            name: "steps",
            kind: ParamKind::Steps { max: MAX_STEPS },
            doc: "the step values: numbers (note numbers, levels, …) or null for a rest",
            settable_by_events: false,
        },
        ParamSpec {
            name: "rate",
            kind: ParamKind::StepLength { default_ms: 125 },
            doc: "step length: a note value (\"1/16\" is a sixteenth note, a quarter beat), beats or bars (\"1/4beat\"), or a time (\"125ms\")",
            settable_by_events: false,
        },
        number(
            "gate",
            Dimension::Scalar,
            0.5,
            0.0,
            1.0,
            "gate length, a fraction of a step (read at each step's start; 1 ties into the next step)",
        ),
        number(
            "swing",
            Dimension::Scalar,
            0.0,
            0.0,
            0.75,
            "every second (odd) step starts swing × a step length late (read when the step before it starts)",
        ),
        ParamSpec {
            name: "loop",
            kind: ParamKind::Bool { default: true },
            doc: "start again after the last step; false stops after it (the value holds, the gate closes)",
            settable_by_events: true,
        },
        ParamSpec {
            name: "output",
            kind: ParamKind::Enum {
                choices: OUTPUT_MODES,
                default: "value",
            },
            doc: "what `value` outputs: the steps as written, or note numbers as Hz (440·2^((n−69)/12), 69 = A4)",
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
    cost: |p, _| by_profile(p, [3.2, 2.2, 2.3]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<SequencerOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{values_with, NodeRunner};

    const SR: f64 = 48_000.0;

    fn span(num: i128, den: i128) -> Value {
        Value::Span(Rational::new(num, den).unwrap())
    }

    fn run(set: &[(&str, Value)], frames: usize, block: usize, p: Profile) -> Vec<Vec<f64>> {
        let mut r = NodeRunner::new(
            &SEQUENCER,
            values_with(&SEQUENCER, set),
            p,
            None,
            SR,
            4096,
            0,
        )
        .unwrap();
        r.run(&[], &[], frames, &[block])
    }

    /// The samples where `gate` rises.
    fn rises(gate: &[f64]) -> Vec<usize> {
        (0..gate.len())
            .filter(|&i| gate[i] == 1.0 && (i == 0 || gate[i - 1] == 0.0))
            .collect()
    }

    #[test]
    fn steps_land_on_the_tempo_exactly_at_120_bpm() {
        // A sixteenth at 120 bpm is 1/8 s: 6000 samples at 48 kHz.
        let steps = Value::Gains(vec![60.0, 62.0, 64.0, 65.0]);
        for block in [1, 7, 64, 4096] {
            let out = run(
                &[
                    ("steps", steps.clone()),
                    ("rate", span(1, 8)),
                    ("gate", Value::Number(0.5)),
                ],
                60_000,
                block,
                Profile::Strict,
            );
            // The oracle: step k at 6000·k, gate open 3000 samples.
            let want: Vec<usize> = (0..10).map(|k| 6000 * k).collect();
            assert_eq!(rises(&out[1]), want, "block {block}");
            for k in 0..10 {
                assert_eq!(out[1][6000 * k + 2999], 1.0);
                assert_eq!(out[1][6000 * k + 3000], 0.0);
                assert_eq!(out[0][6000 * k], [60.0, 62.0, 64.0, 65.0][k % 4]);
            }
        }
    }

    #[test]
    fn steps_round_half_to_even_at_97_bpm() {
        // A sixteenth at 97 bpm is 15/97 s: 720000/97 = 7422.68… samples.
        let out = run(
            &[
                ("steps", Value::Gains(vec![1.0, 2.0, 3.0])),
                ("rate", span(15, 97)),
                ("gate", Value::Number(0.25)),
            ],
            400_000,
            64,
            Profile::Strict,
        );
        // The oracle in integers: round(720000·k / 97) = ⌊(1440000·k + 97) / 194⌋
        // (97 is odd: no ties).
        let want: Vec<usize> = (0..54).map(|k| (1_440_000 * k + 97) / 194).collect();
        let got = rises(&out[1]);
        assert_eq!(got, want);
        let worst = got
            .iter()
            .enumerate()
            .map(|(k, &s)| (s as f64 - 720_000.0 * k as f64 / 97.0).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 0.5, "{worst}");
        // Not drifting: step 53 is at 393402, where adding 7423 each step
        // would put it at 393419.
        assert_eq!(got[53], 393_402);
        // The gate is 1/4 step: round(180000·k/97 …) samples.
        let glen = (1_440_000 / 4 + 97) / 194; // 1855.67 → 1856
        assert_eq!(out[1][got[1] + glen - 1], 1.0);
        assert_eq!(out[1][got[1] + glen], 0.0);
    }

    #[test]
    fn rests_hold_the_value_swing_delays_odd_steps_and_the_end_stops() {
        let out = run(
            &[
                ("steps", Value::Gains(vec![10.0, f64::NAN, 30.0, 40.0])),
                ("rate", span(1, 100)), // 480 samples
                ("swing", Value::Number(0.5)),
                ("gate", Value::Number(0.25)),
                ("loop", Value::Bool(false)),
            ],
            4000,
            7,
            Profile::Strict,
        );
        // Steps 0 and 2 on the grid, 1 (a rest) and 3 half a step late.
        assert_eq!(rises(&out[1]), vec![0, 960, 1440 + 240]);
        assert_eq!(out[0][0], 10.0);
        assert_eq!(out[0][800], 10.0, "a rest keeps the value");
        assert_eq!(out[0][960], 30.0);
        assert_eq!(out[0][1680], 40.0);
        assert_eq!(out[1][1680 + 119], 1.0);
        assert_eq!(out[1][1680 + 120], 0.0);
        // Stopped: no more steps, the value holds.
        assert!(out[1][1800..].iter().all(|&g| g == 0.0));
        assert!(out[0][1800..].iter().all(|&v| v == 40.0));
    }

    #[test]
    fn note_numbers_out_as_hz() {
        let out = run(
            &[
                ("steps", Value::Gains(vec![69.0, 57.0, 60.0])),
                ("rate", span(1, 100)),
                ("output", Value::Enum(1)),
            ],
            1500,
            64,
            Profile::Strict,
        );
        assert_eq!(out[0][0], 440.0);
        assert_eq!(out[0][480], 220.0);
        assert!((out[0][960] - 261.625_565_300_598_6).abs() < 1e-9);
    }

    #[test]
    fn a_swung_steps_gate_closes_before_the_next_step_which_retriggers() {
        // An eighth at 120 bpm is 12000 samples; swing 0.5 puts step 1 at
        // 18000, 6000 samples before step 2, and its half-step gate (6000
        // samples) would reach step 2.
        for block in [1, 7, 64, 4096] {
            let out = run(
                &[
                    ("steps", Value::Gains(vec![1.0, 2.0, 3.0, 4.0])),
                    ("rate", span(1, 4)),
                    ("gate", Value::Number(0.5)),
                    ("swing", Value::Number(0.5)),
                ],
                60_000,
                block,
                Profile::Strict,
            );
            let g = &out[1];
            // The oracle: step k at 12000·k, odd steps 6000 late.
            let want: Vec<usize> = (0..5).map(|k| 12000 * k + 6000 * (k % 2)).collect();
            assert_eq!(rises(g), want, "block {block}");
            assert_eq!(g[23_998], 1.0, "block {block}");
            assert_eq!(
                g[23_999], 0.0,
                "block {block}: closed the sample before step 2"
            );
            assert_eq!(g[24_000], 1.0, "block {block}");
            // Unswung steps keep their full gate.
            assert_eq!(g[5999], 1.0);
            assert_eq!(g[6000], 0.0);
        }
    }

    #[test]
    fn a_gate_just_under_one_still_retriggers_every_step() {
        // 0.9999 of 480 samples rounds to 480: only a gate of 1 ties.
        let out = run(
            &[
                ("steps", Value::Gains(vec![1.0, 2.0])),
                ("rate", span(1, 100)),
                ("gate", Value::Number(0.9999)),
            ],
            1440,
            64,
            Profile::Strict,
        );
        assert_eq!(rises(&out[1]), vec![0, 480, 960]);
        assert_eq!(out[1][479], 0.0);
        assert_eq!(out[1][478], 1.0);
    }

    #[test]
    fn a_gate_of_zero_opens_for_one_sample() {
        for block in [1, 7, 64] {
            let out = run(
                &[
                    ("steps", Value::Gains(vec![1.0, f64::NAN, 3.0])),
                    ("rate", span(1, 100)),
                    ("gate", Value::Number(0.0)),
                ],
                1440,
                block,
                Profile::Strict,
            );
            let open: Vec<usize> = (0..1440).filter(|&i| out[1][i] == 1.0).collect();
            // One sample at each step that is not a rest.
            assert_eq!(open, vec![0, 960], "block {block}");
        }
    }

    #[test]
    fn a_gate_of_one_ties_steps_and_a_rest_closes_it() {
        let out = run(
            &[
                ("steps", Value::Gains(vec![1.0, 2.0, f64::NAN])),
                ("rate", span(1, 100)),
                ("gate", Value::Number(1.0)),
            ],
            1440,
            64,
            Profile::Strict,
        );
        assert!(out[1][..960].iter().all(|&g| g == 1.0));
        assert!(out[1][960..].iter().all(|&g| g == 0.0));
    }

    #[test]
    fn a_new_rate_reanchors_where_it_applies() {
        // 480 samples a step; at sample 1000 (step position 1000/480) the
        // step becomes 240 samples: step 3 is at 1000 + (3 − 1000/480)·240
        // = 1220, then 240 apart.
        let mut r = NodeRunner::new(
            &SEQUENCER,
            values_with(
                &SEQUENCER,
                &[("steps", Value::Gains(vec![1.0])), ("rate", span(1, 100))],
            ),
            Profile::Strict,
            None,
            SR,
            64,
            0,
        )
        .unwrap();
        let a = r.run(&[], &[], 1000, &[64]);
        r.node().set_discrete(RATE, &span(1, 200));
        let b = r.run(&[], &[], 1000, &[64]);
        let gate: Vec<f64> = a[1].iter().chain(&b[1]).copied().collect();
        assert_eq!(rises(&gate), vec![0, 480, 960, 1220, 1460, 1700, 1940]);
    }

    #[test]
    fn state_migrates_between_precisions() {
        let set = [
            ("steps", Value::Gains(vec![60.0, f64::NAN, 63.0])),
            ("rate", span(1, 97)),
            ("swing", Value::Number(0.2)),
            ("output", Value::Enum(1)),
        ];
        let make = |p: Precision| {
            NodeRunner::new(
                &SEQUENCER,
                values_with(&SEQUENCER, &set),
                Profile::Strict,
                Some(p),
                SR,
                64,
                0,
            )
            .unwrap()
        };
        let mut whole = make(Precision::F64);
        let full = whole.run(&[], &[], 6000, &[64]);
        let mut first = make(Precision::F64);
        first.run(&[], &[], 2500, &[64]);
        let st = first.snapshot();
        // f64 state into an f32 node and back into an f64 one.
        let mut f32_node = make(Precision::F32);
        f32_node.node().restore(&st).unwrap();
        f32_node.set_clock(2500);
        let mid = f32_node.run(&[], &[], 1000, &[64]);
        let mut back = make(Precision::F64);
        back.node().restore(&f32_node.snapshot()).unwrap();
        back.set_clock(3500);
        let tail = back.run(&[], &[], 2500, &[64]);
        assert_eq!(mid[1], full[1][2500..3500]);
        for (m, f) in mid[0].iter().zip(&full[0][2500..3500]) {
            assert_eq!(*m, *f as f32 as f64);
        }
        assert_eq!(tail[0], full[0][3500..]);
        assert_eq!(tail[1], full[1][3500..]);
    }

    #[test]
    fn exact_rationals_of_floats() {
        assert_eq!(exact_rational(0.5), Rational::new(1, 2));
        assert_eq!(exact_rational(0.3).unwrap().to_f64(), 0.3);
        assert_eq!(exact_rational(0.0), Some(Rational::ZERO));
        assert_eq!(exact_rational(f64::NAN), None);
    }
}
