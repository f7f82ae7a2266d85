//! `sample_hold` (SuperCollider's `Latch`) and `crossfade` (an
//! equal-power crossfade of two signals).

use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, StateError,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

// ---------------------------------------------------------------- sample_hold

const TRIG: usize = SAMPLE_HOLD.index_of("trig");

/// `sample_hold` at one precision: the held value (the input widened to
/// f64, exact at either precision) and the trigger's previous value.
struct SampleHold<S> {
    held: f64,
    prev: f64,
    _p: PhantomData<fn() -> S>,
}

impl<S: Sample> NodeProcessor<S> for SampleHold<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let trig = io.params.get(TRIG);
        let x = &io.inputs[0][..n];
        for (i, (o, x)) in io.outputs[0][..n].iter_mut().zip(x).enumerate() {
            let t = trig.at(i);
            if t > 0.0 && self.prev <= 0.0 {
                self.held = x.to_f64();
            }
            self.prev = t;
            *o = S::from_f64(self.held);
        }
    }

    fn reset(&mut self) {
        self.held = 0.0;
        self.prev = 0.0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_sample::<f64>("held", self.held);
        st.put_sample::<f64>("prev_trig", self.prev);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let held = st.get_sample::<f64>("held")?;
        let prev = st.get_sample::<f64>("prev_trig")?;
        self.held = held;
        self.prev = prev;
        Ok(())
    }
}

struct SampleHoldOp;
impl Operator for SampleHoldOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(SampleHold::<S> {
            held: 0.0,
            prev: 0.0,
            _p: PhantomData,
        }))
    }
}

/// `sample_hold`: holds its input from one rising trigger to the next.
pub(crate) static SAMPLE_HOLD: OpSpec = OpSpec {
    name: "sample_hold",
    doc: "Sample and hold (SuperCollider's Latch): when `trig` goes from ≤ 0 to > 0 the output \
          takes the input at that sample and holds it until the next such edge; 0 before the \
          first (the trigger starts at 0, so a trigger already positive at the first sample \
          takes it).",
    inputs: &["in"],
    outputs: &["out"],
    params: &[number(
        "trig",
        Dimension::Scalar,
        0.0,
        -1e6,
        1e6,
        "a rise from ≤ 0 to > 0 samples the input (a signal, or events)",
    )],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [3.2, 3.3, 3.3]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<SampleHoldOp>,
};

// ---------------------------------------------------------------- crossfade

const MIX: usize = CROSSFADE.index_of("mix");

/// π/2, the angle over the whole fade.
const HALF_PI: f64 = core::f64::consts::FRAC_PI_2;

/// Equal-power gains `(a, b)` at `mix` (held to 0…1):
/// `a = cos(mix·π/2)`, `b = cos((1 − mix)·π/2)` — `b` is `sin(mix·π/2)`,
/// written as the mirrored cosine so the law is exactly symmetric, as
/// `pan`'s is.
#[inline]
fn fade_gains<S: Sample, M: Math>(mix: f64) -> (S, S) {
    let m = if mix.is_nan() {
        0.5
    } else {
        mix.clamp(0.0, 1.0)
    };
    (
        M::cos(S::from_f64(m * HALF_PI)),
        M::cos(S::from_f64((1.0 - m) * HALF_PI)),
    )
}

struct Crossfade<S, M>(PhantomData<fn() -> (S, M)>);

impl<S: Sample, M: Math> NodeProcessor<S> for Crossfade<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let mix = io.params.get(MIX);
        let (a, b) = (&io.inputs[0][..n], &io.inputs[1][..n]);
        let out = &mut io.outputs[0][..n];
        if mix.is_const() {
            let (ga, gb) = fade_gains::<S, M>(mix.value());
            for i in 0..n {
                out[i] = ga * a[i] + gb * b[i];
            }
        } else {
            for i in 0..n {
                let (ga, gb) = fade_gains::<S, M>(mix.at(i));
                out[i] = ga * a[i] + gb * b[i];
            }
        }
    }

    stateless!();
}

struct CrossfadeOp;
impl Operator for CrossfadeOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Crossfade::<S, M>(PhantomData)))
    }
}

/// `crossfade`: an equal-power crossfade from `a` to `b`.
pub(crate) static CROSSFADE: OpSpec = OpSpec {
    name: "crossfade",
    doc: "Equal-power crossfade: out = cos(mix·π/2)·a + sin(mix·π/2)·b (the sine computed as \
          cos((1−mix)·π/2), so the law is exactly symmetric); mix 0 is a, 1 is b, and two \
          uncorrelated signals keep their power all the way.",
    inputs: &["a", "b"],
    outputs: &["out"],
    params: &[number(
        "mix",
        Dimension::Scalar,
        0.5,
        0.0,
        1.0,
        "0: a only … 1: b only",
    )],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [2.5, 2.2, 2.4]),
    algorithms: None,
    build: build_any::<CrossfadeOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::Value;

    fn runner(spec: &'static OpSpec, set: &[(&str, Value)], n_inputs: usize) -> NodeRunner {
        NodeRunner::new(
            spec,
            values_with(spec, set),
            Profile::Strict,
            Some(Precision::F64),
            48000.0,
            4096,
            n_inputs,
        )
        .unwrap()
    }

    #[test]
    fn sample_hold_takes_the_input_on_each_rising_trigger_only() {
        let x = test_signal(6, 1000);
        // Rising edges at 0 (from the initial 0), 300 and 700; a trigger
        // that stays up or goes from 1 to 2 takes nothing.
        let trig: Vec<f64> = (0..1000)
            .map(|i| match i {
                0..=99 => 1.0,
                100..=299 => 0.0,
                300..=399 => 1.0,
                400..=499 => 2.0,
                500..=699 => -1.0,
                _ => 0.5,
            })
            .collect();
        let want: Vec<f64> = (0..1000)
            .map(|i| match i {
                0..=299 => x[0],
                300..=699 => x[300],
                _ => x[700],
            })
            .collect();
        for blocks in [[1], [64], [4096]] {
            let mut r = runner(&SAMPLE_HOLD, &[], 1);
            let y = r.run(
                std::slice::from_ref(&x),
                &[(TRIG, trig.clone())],
                1000,
                &blocks,
            );
            assert_eq!(y[0], want);
        }
        // Without a trigger it holds 0.
        let mut r = runner(&SAMPLE_HOLD, &[], 1);
        let y = r.run(std::slice::from_ref(&x), &[], 1000, &[64]);
        assert!(y[0].iter().all(|v| *v == 0.0));
    }

    #[test]
    fn crossfade_is_equal_power_and_symmetric() {
        let (a, b) = (vec![1.0; 4], vec![0.0; 4]);
        let gains = |mix: f64| {
            let mut r = runner(&CROSSFADE, &[("mix", Value::Number(mix))], 2);
            let ga = r.run(&[a.clone(), b.clone()], &[], 4, &[4])[0][0];
            let mut r = runner(&CROSSFADE, &[("mix", Value::Number(mix))], 2);
            let gb = r.run(&[b.clone(), a.clone()], &[], 4, &[4])[0][0];
            (ga, gb)
        };
        // Sixteenths, so 1 − mix is exact and the mirror is comparable.
        for k in 0..=16 {
            let mix = k as f64 / 16.0;
            let (ga, gb) = gains(mix);
            // The oracle: the law as written, cos and sin of mix·π/2.
            let theta = mix * core::f64::consts::FRAC_PI_2;
            assert!((ga - libm::cos(theta)).abs() < 1e-15, "{mix}");
            assert!((gb - libm::sin(theta)).abs() < 1e-15, "{mix}");
            assert!((ga * ga + gb * gb - 1.0).abs() < 1e-15);
            let (ga2, gb2) = gains(1.0 - mix);
            assert_eq!((ga, gb), (gb2, ga2), "mirror at {mix}");
        }
        assert_eq!(gains(0.0).0, 1.0);
        assert_eq!(gains(0.5).0, gains(0.5).1);
    }
}
