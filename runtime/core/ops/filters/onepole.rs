//! `onepole`: a 6 dB/octave lowpass `y += a·(x − y)` and its complementary
//! highpass `x − y`.

use super::{built_enum, enum_index, limit, DesignCache, TWO_PI};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, frequency_lint, no_choices, number, BuildCtx, Io, Lint, NodeProcessor,
    NodeState, OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

pub(super) const ONEPOLE_MODES: &[&str] = &["lowpass", "highpass"];
const OP_MODE: usize = ONEPOLE.index_of("mode");
const OP_CUTOFF: usize = ONEPOLE.index_of("cutoff");

/// The cutoff the one-pole designs at: `cutoff_hz` limited to `[0, sr/2]`.
#[inline]
fn onepole_cutoff_hz(cutoff_hz: f64, sample_rate: f64) -> f64 {
    limit(cutoff_hz, 0.0, 0.5 * sample_rate)
}

/// The one-pole smoothing coefficient `a = 1 − exp(−2π·fc/sr)`, with the
/// cutoff limited to `[0, sr/2]` (0 Hz holds the output).
pub(super) fn onepole_coef<M: Math>(cutoff_hz: f64, sample_rate: f64) -> f64 {
    let fc = onepole_cutoff_hz(cutoff_hz, sample_rate);
    1.0 - M::coef_exp(-TWO_PI * fc / sample_rate)
}

/// A one-pole lowpass `y += a·(x − y)`; the highpass is `x − y`.
struct OnePole<S, M> {
    highpass: bool,
    sample_rate: f64,
    cache: DesignCache<1>,
    a: S,
    y: S,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> OnePole<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64) {
        if self.cache.stale([cutoff_hz]) {
            self.a = S::from_f64(onepole_coef::<M>(cutoff_hz, self.sample_rate));
        }
    }

    #[inline]
    fn tick(a: S, y: &mut S, x: S, highpass: bool) -> S {
        *y += a * (x - *y);
        if highpass {
            x - *y
        } else {
            *y
        }
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for OnePole<S, M> {
    /// Runs in a lane group through its own `process`: one engine dispatch for the group.
    fn lanes(&self, _: crate::dsp::vector::SimdLevel) -> Option<crate::ops::LaneKernel<S>> {
        Some(crate::ops::serial_lanes::<S, Self>)
    }

    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let cutoff = io.params.get(OP_CUTOFF);
        let input = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        let hp = self.highpass;
        let mut y = self.y;
        if cutoff.is_const() {
            self.update(cutoff.value());
            let a = self.a;
            for (o, &x) in out.iter_mut().zip(input) {
                *o = Self::tick(a, &mut y, x, hp);
            }
        } else {
            for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
                self.update(cutoff.at(i));
                *o = Self::tick(self.a, &mut y, x, hp);
            }
        }
        self.y = y;
    }

    fn reset(&mut self) {
        self.y = S::ZERO;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_sample("y", self.y);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.y = st.get_sample("y")?;
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if param == OP_MODE {
            if let Some(i) = enum_index(value, ONEPOLE_MODES.len()) {
                self.highpass = i == 1;
            }
        }
    }
}

struct OnePoleOp;
impl Operator for OnePoleOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(OnePole::<S, M> {
            highpass: built_enum(cx, OP_MODE, ONEPOLE_MODES.len()) == 1,
            sample_rate: cx.sample_rate,
            cache: DesignCache::new(),
            a: S::ZERO,
            y: S::ZERO,
            _m: PhantomData,
        }))
    }
}

/// `onepole`: a 6 dB/octave lowpass (`y += a·(x − y)`, `a = 1 − e^(−2π·fc/sr)`)
/// or its complementary highpass (`x − lowpass`).
/// A cutoff above Nyquist: the one-pole designs at Nyquist instead.
fn onepole_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    frequency_lint(
        values,
        OP_CUTOFF,
        "cutoff",
        sample_rate,
        0.5,
        "the filter is designed at",
        onepole_cutoff_hz,
    )
    .into_iter()
    .collect()
}

pub(crate) static ONEPOLE: OpSpec = OpSpec {
    name: "onepole",
    doc: "One-pole lowpass y += a·(x − y) with a = 1 − exp(−2π·cutoff/sr); highpass = input − lowpass.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        ParamSpec {
            name: "mode",
            kind: ParamKind::Enum {
                choices: ONEPOLE_MODES,
                default: "lowpass",
            },
            doc: "filter response",
            settable_by_events: true,
        },
        number(
            "cutoff",
            Dimension::Frequency,
            1000.0,
            0.0,
            1e6,
            "cutoff frequency; designed within [0, sample rate / 2]",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: onepole_lints,
    cost: |p, _| by_profile(p, [4.0, 4.1, 4.1]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<OnePoleOp>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::PI;
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;

    #[test]
    fn onepole_step_response_is_the_closed_form() {
        let fc = 440.0;
        let a = 1.0 - libm::exp(-2.0 * PI * fc / SR);
        let step = vec![1.0; 3000];
        let params = [("cutoff", Value::Number(fc))];
        let y = render(&ONEPOLE, &params, &step);
        for (n, v) in y.iter().enumerate() {
            let want = 1.0 - libm::pow(1.0 - a, (n + 1) as f64);
            assert!((v - want).abs() <= 1e-12, "n = {n}: {v} vs {want}");
        }
        let y32 = render_at(&ONEPOLE, &params, Profile::Repro, Precision::F32, &step);
        for (n, v) in y32.iter().enumerate() {
            let want = 1.0 - libm::pow(1.0 - a, (n + 1) as f64);
            assert!((v - want).abs() <= 1e-5, "f32 n = {n}: {v} vs {want}");
        }
    }

    #[test]
    fn onepole_highpass_plus_lowpass_is_the_input() {
        let x = test_signal(5, 4000);
        for fc in [20.0, 800.0, 20000.0] {
            let lp = render(
                &ONEPOLE,
                &[
                    ("mode", mode(&ONEPOLE, "lowpass")),
                    ("cutoff", Value::Number(fc)),
                ],
                &x,
            );
            let hp = render(
                &ONEPOLE,
                &[
                    ("mode", mode(&ONEPOLE, "highpass")),
                    ("cutoff", Value::Number(fc)),
                ],
                &x,
            );
            for (n, ((l, h), x)) in lp.iter().zip(&hp).zip(&x).enumerate() {
                assert!((l + h - x).abs() <= 1e-15, "{fc} Hz, n = {n}");
            }
        }
    }

    #[test]
    fn onepole_lowpass_magnitude_matches_its_transfer_function() {
        // H(z) = a / (1 − (1−a)·z⁻¹)
        let fc = 1000.0;
        let a = 1.0 - libm::exp(-2.0 * PI * fc / SR);
        let params = [("cutoff", Value::Number(fc))];
        for f in TEST_FREQS {
            let w = TWO_PI * f / SR;
            let re = 1.0 - (1.0 - a) * libm::cos(w);
            let im = (1.0 - a) * libm::sin(w);
            let analytic = a / (re * re + im * im).sqrt();
            assert_response(
                &format!("onepole at {f} Hz"),
                tone_gain(&ONEPOLE, &params, f),
                analytic,
            );
        }
    }
}
