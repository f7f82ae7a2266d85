//! `svf`: Simper's (Cytomic) topology-preserving trapezoidal state-variable
//! filter: lowpass, highpass, bandpass (peak gain `q`), notch.

use super::{
    built_enum, design_cutoff_hz, enum_index, limit, svf_increment_coefs, svf_increments,
    DesignCache, CUTOFF_PARAM, MAX_CUTOFF_RATIO, MAX_Q, MIN_Q, PI, Q_PARAM,
};
use crate::dsp::{Math, Precision, Sample};
use crate::ops::{
    build_any, by_profile, frequency_lint, no_choices, BuildCtx, Io, Lint, NodeProcessor,
    NodeState, OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use std::marker::PhantomData;

pub(super) const SVF_MODES: &[&str] = &["lowpass", "highpass", "bandpass", "notch"];
const SVF_MODE: usize = SVF.index_of("mode");
const SVF_CUTOFF: usize = SVF.index_of("cutoff");
const SVF_Q: usize = SVF.index_of("q");

/// The output an [`Svf`] taps, in the order of [`SVF_MODES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SvfMode {
    Lowpass,
    Highpass,
    /// Peak gain `q` at the cutoff (the unnormalised band output).
    Bandpass,
    Notch,
}

impl SvfMode {
    fn from_index(i: usize) -> SvfMode {
        match i {
            1 => SvfMode::Highpass,
            2 => SvfMode::Bandpass,
            3 => SvfMode::Notch,
            _ => SvfMode::Lowpass,
        }
    }
}

/// Simper SVF coefficients `[k, a1, a2, a3]`: g = tan(π·fc/sr), k = 1/q,
/// a1 = 1/(1 + g(g + k)), a2 = g·a1, a3 = g·a2.
pub(super) fn svf_design<M: Math>(cutoff_hz: f64, q: f64, sample_rate: f64) -> [f64; 4] {
    let g = M::coef_tan(PI * design_cutoff_hz(cutoff_hz, sample_rate) / sample_rate);
    let k = 1.0 / limit(q, MIN_Q, MAX_Q);
    let a1 = 1.0 / (1.0 + g * (g + k));
    let a2 = g * a1;
    let a3 = g * a2;
    [k, a1, a2, a3]
}

/// [`svf_design`]'s filter as `[k, d, a2, g]` for [`svf_increments`]
/// (the f32 path).
fn svf_increment_design<M: Math>(cutoff_hz: f64, q: f64, sample_rate: f64) -> [f64; 4] {
    let g = M::coef_tan(PI * design_cutoff_hz(cutoff_hz, sample_rate) / sample_rate);
    let k = 1.0 / limit(q, MIN_Q, MAX_Q);
    let [d, a2, g] = svf_increment_coefs(g, k);
    [k, d, a2, g]
}

/// A topology-preserving (trapezoidal) state-variable filter after Andrew
/// Simper (Cytomic), at precision `S`: Simper's form at f64, the same
/// filter in increments ([`svf_increments`]) at f32, where Simper's
/// `a1 ≈ 1` would lose the damping of a low cutoff.
struct Svf<S, M> {
    mode: SvfMode,
    sample_rate: f64,
    cache: DesignCache<2>,
    /// `[k, a1, a2, a3]` (f64) or `[k, d, a2, g]` (f32) at precision `S`.
    coefs: [S; 4],
    ic1: S,
    ic2: S,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Svf<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64, q: f64) {
        if self.cache.stale([cutoff_hz, q]) {
            let sr = self.sample_rate;
            self.coefs = if S::PRECISION == Precision::F32 {
                svf_increment_design::<M>(cutoff_hz, q, sr).map(S::from_f64)
            } else {
                svf_design::<M>(cutoff_hz, q, sr).map(S::from_f64)
            };
        }
    }

    #[inline]
    fn tick(c: &[S; 4], mode: SvfMode, ic1: &mut S, ic2: &mut S, x: S) -> S {
        let k = c[0];
        let (v1, v2) = if S::PRECISION == Precision::F32 {
            svf_increments(c[1], c[2], c[3], ic1, ic2, x)
        } else {
            let [_, a1, a2, a3] = *c;
            let v3 = x - *ic2;
            let v1 = a1 * *ic1 + a2 * v3;
            let v2 = *ic2 + a2 * *ic1 + a3 * v3;
            *ic1 = v1 + v1 - *ic1;
            *ic2 = v2 + v2 - *ic2;
            (v1, v2)
        };
        match mode {
            SvfMode::Lowpass => v2,
            SvfMode::Bandpass => v1,
            SvfMode::Highpass => x - k * v1 - v2,
            SvfMode::Notch => v2 + (x - k * v1 - v2),
        }
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Svf<S, M> {
    /// Runs in a lane group through its own `process`: one engine dispatch for the group.
    fn lanes(&self, _: crate::dsp::vector::SimdLevel) -> Option<crate::ops::LaneKernel<S>> {
        Some(crate::ops::serial_lanes::<S, Self>)
    }

    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let cutoff = io.params.get(SVF_CUTOFF);
        let q = io.params.get(SVF_Q);
        let input = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        let mode = self.mode;
        let (mut ic1, mut ic2) = (self.ic1, self.ic2);
        if cutoff.is_const() && q.is_const() {
            self.update(cutoff.value(), q.value());
            let c = self.coefs;
            for (o, &x) in out.iter_mut().zip(input) {
                *o = Self::tick(&c, mode, &mut ic1, &mut ic2, x);
            }
        } else {
            for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
                self.update(cutoff.at(i), q.at(i));
                *o = Self::tick(&self.coefs, mode, &mut ic1, &mut ic2, x);
            }
        }
        self.ic1 = ic1;
        self.ic2 = ic2;
    }

    fn reset(&mut self) {
        self.ic1 = S::ZERO;
        self.ic2 = S::ZERO;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_sample("ic1", self.ic1);
        st.put_sample("ic2", self.ic2);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let ic1 = st.get_sample("ic1")?;
        let ic2 = st.get_sample("ic2")?;
        self.ic1 = ic1;
        self.ic2 = ic2;
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if param == SVF_MODE {
            if let Some(i) = enum_index(value, SVF_MODES.len()) {
                self.mode = SvfMode::from_index(i);
            }
        }
    }
}

struct SvfOp;
impl Operator for SvfOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Svf::<S, M> {
            mode: SvfMode::from_index(built_enum(cx, SVF_MODE, SVF_MODES.len())),
            sample_rate: cx.sample_rate,
            cache: DesignCache::new(),
            coefs: [S::ZERO; 4],
            ic1: S::ZERO,
            ic2: S::ZERO,
            _m: PhantomData,
        }))
    }
}

/// `svf`: Simper's trapezoidal state-variable filter; its responses are the
/// bilinear transforms (prewarped at the cutoff) of the analog 2nd-order
/// lowpass, highpass, bandpass (peak gain `q`) and notch.
/// A cutoff the svf cannot design: above `0.49·sr` it designs at that.
fn svf_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    frequency_lint(
        values,
        SVF_CUTOFF,
        "cutoff",
        sample_rate,
        MAX_CUTOFF_RATIO,
        "the filter is designed at",
        design_cutoff_hz,
    )
    .into_iter()
    .collect()
}

pub(crate) static SVF: OpSpec = OpSpec {
    name: "svf",
    doc: "Topology-preserving state-variable filter (Simper/Cytomic): lowpass, highpass, bandpass (peak gain q), notch.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        ParamSpec {
            name: "mode",
            kind: ParamKind::Enum {
                choices: SVF_MODES,
                default: "lowpass",
            },
            doc: "filter response",
            settable_by_events: true,
        },
        CUTOFF_PARAM,
        Q_PARAM,
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: svf_lints,
    cost: |p, _| by_profile(p, [6.8, 7.8, 7.8]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<SvfOp>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::ops::conformance::test_signal;

    #[test]
    fn svf_magnitude_matches_the_bilinear_transform() {
        for (fc, q) in [(1000.0, 0.707), (3000.0, 2.0), (200.0, 0.5)] {
            let k = 1.0 / q;
            let den = [1.0, k, 1.0];
            let protos: [(&str, [f64; 3]); 4] = [
                ("lowpass", [1.0, 0.0, 0.0]),
                ("highpass", [0.0, 0.0, 1.0]),
                ("bandpass", [0.0, 1.0, 0.0]),
                ("notch", [1.0, 0.0, 1.0]),
            ];
            for (name, num) in protos {
                let params = [
                    ("mode", mode(&SVF, name)),
                    ("cutoff", Value::Number(fc)),
                    ("q", Value::Number(q)),
                ];
                for f in TEST_FREQS.iter().copied().chain([fc]) {
                    let measured = tone_gain(&SVF, &params, f);
                    let analytic = analog_mag(num, den, warped(f, fc));
                    assert_response(
                        &format!("svf {name} {fc} Hz q {q} at {f} Hz"),
                        measured,
                        analytic,
                    );
                }
                if name == "bandpass" {
                    // The band output peaks at q.
                    assert!((tone_gain(&SVF, &params, fc) - q).abs() < 1e-6);
                }
            }
        }
    }

    #[test]
    fn svf_lowpass_minus_notch_is_minus_highpass() {
        let x = test_signal(9, 4000);
        let out = |name: &str| {
            render(
                &SVF,
                &[
                    ("mode", mode(&SVF, name)),
                    ("cutoff", Value::Number(2500.0)),
                    ("q", Value::Number(3.0)),
                ],
                &x,
            )
        };
        let (lp, hp, notch) = (out("lowpass"), out("highpass"), out("notch"));
        for n in 0..x.len() {
            assert!((lp[n] - notch[n] + hp[n]).abs() <= 1e-14, "n = {n}");
        }
    }
}
