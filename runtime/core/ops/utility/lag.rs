//! Smoothers of a control signal: `lag` (a one-pole lag with separate
//! rise and fall times, SuperCollider's `LagUD`) and `slew` (a linear slew
//! limiter, SuperCollider's `Slew`).
//!
//! Both follow `in + value`: `value` is a param (a frequency, so a note's
//! pitch can set it: `"note": { "pitch": "glide.value" }`) that events and
//! notes move, `in` a signal. Both start on their first sample
//! (`out[0] = in[0] + value`, as SuperCollider's start on their input), so
//! a voice's pitch through a lag starts on its note and only a change
//! glides: portamento. Their state, the output
//! so far, is kept in f64 at every precision (the output is rounded to the
//! node's), so it migrates between precisions exactly. A state that is
//! not finite (a NaN or an infinity came through) restarts on the input.

use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, StateError,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

/// `ln(0.001)`: a lag's time is how long a step takes to come within
/// −60 dB of its end, as SuperCollider's `Lag` times are.
const LN_MINUS_60_DB: f64 = -6.907_755_278_982_137;

/// The pole of a one-pole lag of `samples` samples (60 dB time):
/// `b = e^(ln 0.001 / samples)`, 0 (no lag) when `samples` is not > 0.
#[inline]
fn pole<M: Math>(samples: f64) -> f64 {
    if samples > 0.0 {
        M::coef_exp(LN_MINUS_60_DB / samples)
    } else {
        0.0
    }
}

/// A pole recomputed only when its time changes (a function of the time
/// alone, so not state).
#[derive(Clone, Copy, Debug)]
struct PoleCache {
    samples: f64,
    b: f64,
}

impl PoleCache {
    const NEW: PoleCache = PoleCache {
        samples: f64::NAN,
        b: 0.0,
    };

    #[inline]
    fn get<M: Math>(&mut self, samples: f64) -> f64 {
        if samples.to_bits() != self.samples.to_bits() {
            self.samples = samples;
            self.b = pole::<M>(samples);
        }
        self.b
    }
}

/// The output so far, `None` before the first sample.
#[derive(Clone, Copy, Debug)]
struct Held(Option<f64>);

impl Held {
    fn snapshot(&self, st: &mut NodeState) {
        st.put_bool("started", self.0.is_some());
        st.put_sample::<f64>("y", self.0.unwrap_or(0.0));
    }

    fn restore(st: &NodeState) -> Result<Held, StateError> {
        let started = st.get_bool("started")?;
        let y = st.get_sample::<f64>("y")?;
        Ok(Held(started.then_some(y)))
    }
}

/// `value`, added to `in`: what a note's pitch or an event sets.
const fn target_param() -> crate::ops::ParamSpec {
    number(
        "value",
        Dimension::Frequency,
        0.0,
        -1e9,
        1e9,
        "added to `in` (a note's pitch can set it: a frequency, or any number)",
    )
}

// ---------------------------------------------------------------- lag

const LAG_UP: usize = LAG.index_of("up");
const LAG_DOWN: usize = LAG.index_of("down");
const LAG_VALUE: usize = LAG.index_of("value");

/// `lag` at one precision and math policy.
struct Lag<S, M> {
    y: Held,
    sample_rate: f64,
    up: PoleCache,
    down: PoleCache,
    _p: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Lag<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (up, down) = (io.params.get(LAG_UP), io.params.get(LAG_DOWN));
        let value = io.params.get(LAG_VALUE);
        let sr = self.sample_rate;
        let x = &io.inputs[0][..n];
        for (i, (o, x)) in io.outputs[0][..n].iter_mut().zip(x).enumerate() {
            let x = x.to_f64() + value.at(i);
            let y = match self.y.0 {
                Some(y) if y.is_finite() => {
                    let b = if x > y {
                        self.up.get::<M>(up.at(i) * sr)
                    } else {
                        self.down.get::<M>(down.at(i) * sr)
                    };
                    x + b * (y - x)
                }
                _ => x,
            };
            self.y = Held(Some(y));
            *o = S::from_f64(y);
        }
    }

    fn reset(&mut self) {
        self.y = Held(None);
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.y.snapshot(st);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.y = Held::restore(st)?;
        Ok(())
    }
}

struct LagOp;
impl Operator for LagOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Lag::<S, M> {
            y: Held(None),
            sample_rate: cx.sample_rate,
            up: PoleCache::NEW,
            down: PoleCache::NEW,
            _p: PhantomData,
        }))
    }
}

/// `lag`: a one-pole lag with separate rise and fall times.
pub(crate) static LAG: OpSpec = OpSpec {
    name: "lag",
    doc: "One-pole lag (SuperCollider's LagUD) of x = in + value: y = x + b·(y − x), \
          b = e^(ln 0.001 / (time·sr)) with time `up` while x > y and `down` otherwise, so a step \
          comes within 60 dB of its end in that time; starts on the first sample's x; a time of 0 \
          passes x.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "up",
            Dimension::Time,
            0.1,
            0.0,
            3600.0,
            "60 dB time of a rise",
        ),
        number(
            "down",
            Dimension::Time,
            0.1,
            0.0,
            3600.0,
            "60 dB time of a fall",
        ),
        target_param(),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [5.4, 5.7, 5.4]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<LagOp>,
};

// ---------------------------------------------------------------- slew

const SLEW_UP: usize = SLEW.index_of("up");
const SLEW_DOWN: usize = SLEW.index_of("down");
const SLEW_VALUE: usize = SLEW.index_of("value");

/// `slew` at one precision.
struct Slew<S> {
    y: Held,
    sample_rate: f64,
    _p: PhantomData<fn() -> S>,
}

impl<S: Sample> NodeProcessor<S> for Slew<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (up, down) = (io.params.get(SLEW_UP), io.params.get(SLEW_DOWN));
        let value = io.params.get(SLEW_VALUE);
        let sr = self.sample_rate;
        let x = &io.inputs[0][..n];
        for (i, (o, x)) in io.outputs[0][..n].iter_mut().zip(x).enumerate() {
            let x = x.to_f64() + value.at(i);
            let y = match self.y.0 {
                Some(y) if y.is_finite() => {
                    let (rise, fall) = (up.at(i) / sr, down.at(i) / sr);
                    let d = x - y;
                    if d > rise {
                        y + rise
                    } else if d < -fall {
                        y - fall
                    } else {
                        x
                    }
                }
                _ => x,
            };
            self.y = Held(Some(y));
            *o = S::from_f64(y);
        }
    }

    fn reset(&mut self) {
        self.y = Held(None);
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.y.snapshot(st);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.y = Held::restore(st)?;
        Ok(())
    }
}

struct SlewOp;
impl Operator for SlewOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Slew::<S> {
            y: Held(None),
            sample_rate: cx.sample_rate,
            _p: PhantomData,
        }))
    }
}

/// `slew`: a linear slew limiter.
pub(crate) static SLEW: OpSpec = OpSpec {
    name: "slew",
    doc: "Linear slew limiter (SuperCollider's Slew) of x = in + value: each sample the output \
          moves towards x by at most up/sr rising and down/sr falling (units per second), \
          reaching it when closer; starts on the first sample's x; a rate of 0 holds that \
          direction still.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "up",
            Dimension::Scalar,
            1000.0,
            0.0,
            1e12,
            "largest rise, in the input's units per second",
        ),
        number(
            "down",
            Dimension::Scalar,
            1000.0,
            0.0,
            1e12,
            "largest fall, in the input's units per second",
        ),
        target_param(),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [8.8, 7.5, 8.1]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<SlewOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::Value;

    const SR: f64 = 48000.0;

    fn run(
        spec: &'static OpSpec,
        set: &[(&str, f64)],
        x: &[f64],
        mods: &[(usize, Vec<f64>)],
        blocks: &[usize],
    ) -> Vec<f64> {
        let set: Vec<(&str, Value)> = set.iter().map(|(n, v)| (*n, Value::Number(*v))).collect();
        let mut r = NodeRunner::new(
            spec,
            values_with(spec, &set),
            Profile::Strict,
            Some(Precision::F64),
            SR,
            4096,
            1,
        )
        .unwrap();
        r.run(&[x.to_vec()], mods, x.len(), blocks).swap_remove(0)
    }

    /// A step from 0 to 1 and back: SuperCollider's 60 dB lag reaches
    /// 0.001 of the step in exactly its time, rising and falling on their
    /// own times.
    #[test]
    fn a_lag_step_comes_within_60_db_in_its_time_up_and_down() {
        let (up, down) = (0.01, 0.04);
        let mut x = vec![0.0; 100];
        x.extend(vec![1.0; 3000]);
        x.extend(vec![0.0; 3000]);
        let y = run(&LAG, &[("up", up), ("down", down)], &x, &[], &[64]);
        // The oracle: the closed form of the recursion, b^k of the step left.
        let b_up = libm::exp(libm::log(0.001) / (up * SR));
        let b_down = libm::exp(libm::log(0.001) / (down * SR));
        for k in 1..3000 {
            let want = 1.0 - libm::pow(b_up, k as f64);
            assert!((y[99 + k] - want).abs() < 1e-9, "rise {k}");
        }
        let at_up = y[99 + (up * SR) as usize];
        assert!((at_up - 0.999).abs() < 1e-9, "{at_up}");
        let top = y[3099];
        for k in 1..3000 {
            let want = top * libm::pow(b_down, k as f64);
            assert!((y[3099 + k] - want).abs() < 1e-9, "fall {k}");
        }
        // It starts on its first input, and a time of 0 passes the input.
        let y = run(&LAG, &[], &[0.7, 0.7, 0.2], &[], &[1]);
        assert_eq!(y[0], 0.7);
        let x = test_signal(3, 500);
        assert_eq!(run(&LAG, &[("up", 0.0), ("down", 0.0)], &x, &[], &[7]), x);
    }

    #[test]
    fn a_slew_moves_at_most_its_rate_and_lands_on_the_input() {
        // 480 units/s rising and 960 falling at 48 kHz: 0.01 and 0.02 a sample.
        let mut x = vec![0.0; 10];
        x.extend(vec![1.0; 200]);
        x.extend(vec![-1.0; 200]);
        let y = run(&SLEW, &[("up", 480.0), ("down", 960.0)], &x, &[], &[64]);
        // The oracle, a sample at a time.
        let mut want = x[0];
        for i in 0..x.len() {
            let d = x[i] - want;
            want = if d > 0.01 {
                want + 0.01
            } else if d < -0.02 {
                want - 0.02
            } else {
                x[i]
            };
            assert!((y[i] - want).abs() < 1e-12, "frame {i}: {} vs {want}", y[i]);
        }
        // It rises for 100 samples (1/0.01), then holds 1 exactly.
        assert!(y[108] < 1.0 && y[110] == 1.0 && y[209] == 1.0);
        // 2 units down at 0.02 a sample: 100 samples.
        assert!(y[308] > -1.0 && y[310] == -1.0);
        // A rate of 0 holds that direction still: it never rises, and
        // falls at its other rate.
        let y = run(&SLEW, &[("up", 0.0), ("down", 960.0)], &x, &[], &[64]);
        assert!(y[..210].iter().all(|v| *v == 0.0));
        assert!(y[210] < 0.0 && y[260] == -1.0);
    }

    #[test]
    fn value_adds_to_the_input_and_an_event_step_on_it_glides() {
        // `value` 220 from the start, stepping to 440 at sample 100 (as an
        // event or a note's pitch sets it); `in` silent.
        let steps: Vec<f64> = (0..1000)
            .map(|i| if i < 100 { 0.0 } else { 220.0 })
            .collect();
        let x = vec![0.0; 1000];
        let y = run(
            &LAG,
            &[("value", 220.0), ("up", 0.01)],
            &x,
            &[(LAG_VALUE, steps.clone())],
            &[64],
        );
        assert!(y[..100].iter().all(|v| *v == 220.0));
        let b = libm::exp(libm::log(0.001) / (0.01 * SR));
        for k in 1..900 {
            let want = 440.0 - 220.0 * libm::pow(b, k as f64);
            assert!((y[99 + k] - want).abs() < 1e-9, "{k}");
        }
        let y = run(
            &SLEW,
            &[("value", 220.0), ("up", 4800.0)],
            &x,
            &[(SLEW_VALUE, steps)],
            &[64],
        );
        // 4800 units/s at 48 kHz is 0.1 a sample: 2200 samples to cover 220.
        for k in 1..900 {
            assert!((y[99 + k] - (220.0 + 0.1 * k as f64)).abs() < 1e-9, "{k}");
        }
    }

    #[test]
    fn lag_and_slew_are_the_same_at_every_block_size() {
        let x = test_signal(8, 3000);
        let m: Vec<f64> = (0..3000)
            .map(|i| 0.01 * libm::sin(i as f64 * 0.01))
            .collect();
        for (spec, set, k) in [
            (&LAG, [("up", 0.001), ("down", 0.02)], LAG_UP),
            (&SLEW, [("up", 50.0), ("down", 20.0)], SLEW_UP),
        ] {
            let mods = [(k, m.clone())];
            let want = run(spec, &set, &x, &mods, &[1]);
            for blocks in [[64], [4096], [17]] {
                assert_eq!(run(spec, &set, &x, &mods, &blocks), want, "{}", spec.name);
            }
        }
    }
}
