//! Filters: `biquad` (RBJ cookbook), `onepole`, `svf` (Simper/Cytomic
//! topology-preserving state-variable filter) and `ladder` (the transistor
//! ladder, zero-delay feedback with its tanh).
//!
//! Coefficients are designed in f64 with the node's math policy (`coef_*`:
//! libm under strict, never an approximation) and stored at the node's
//! precision. They are a pure function of the param values, cached on the
//! last values seen: a constant param costs one comparison per block, a
//! modulated or ramping one a comparison (and, when it moved, a redesign) per
//! sample. Because the cache only skips work that would give the same
//! result, output never depends on how frames are split into blocks, and a
//! node restored from a snapshot designs the same coefficients.
//!
//! Every per-sample sum is written out in one fixed order (no FMA).

mod biquad;
mod ladder;
mod onepole;
mod svf;
#[cfg(test)]
mod sweep_tests;

pub(crate) use biquad::BIQUAD;
pub(crate) use ladder::LADDER;
pub(crate) use onepole::ONEPOLE;
pub(crate) use svf::SVF;

use super::{number, BuildCtx, ParamSpec, Value};
use crate::scene::Dimension;

const PI: f64 = core::f64::consts::PI;
const TWO_PI: f64 = 2.0 * PI;

/// Lowest cutoff used for design (Hz); keeps `w0 > 0` for the biquad and svf.
const MIN_CUTOFF_HZ: f64 = 1e-3;
/// Highest cutoff used for design, as a fraction of the sample rate; keeps
/// `tan(π·fc/sr)` finite and the poles away from Nyquist.
const MAX_CUTOFF_RATIO: f64 = 0.49;
const MIN_Q: f64 = 0.01;
const MAX_Q: f64 = 1000.0;

/// `v` limited to `[lo, hi]`, NaN mapped to `lo` (a modulation signal may
/// carry anything; the design must stay finite).
#[inline]
fn limit(v: f64, lo: f64, hi: f64) -> f64 {
    if v > hi {
        hi
    } else if v >= lo {
        v
    } else {
        lo
    }
}

/// The design cutoff of the biquad and svf: inside `(0, 0.49·sr)`.
#[inline]
pub(super) fn design_cutoff_hz(cutoff_hz: f64, sample_rate: f64) -> f64 {
    limit(cutoff_hz, MIN_CUTOFF_HZ, MAX_CUTOFF_RATIO * sample_rate)
}

/// One step of the trapezoidal state-variable core (Simper's, see `svf`)
/// written in increments, as f32 runs it: with `d = 1 − a1 =
/// g(g + k)/(1 + g(g + k))` and `a2 = g/(1 + g(g + k))`,
/// v3 = x − ic2; t = a2·v3 − d·ic1; v1 = ic1 + t; u = g·v1; v2 = ic2 + u;
/// ic1 = v1 + t; ic2 = v2 + u (so ic = 2v − ic). Returns the band and low
/// outputs `(v1, v2)`. Simper's own form multiplies the integrator state
/// by `a1`, which at a low cutoff is 1 − (a few 1e-5): rounded to f32 it
/// keeps the damping to only a few significant bits (a 10 Hz, Q 20 filter
/// at 96 kHz came out 0.15 % off at its resonance); `d`, `a2` and `g` are
/// all small numbers that f32 holds to full precision.
#[inline(always)]
fn svf_increments<S: crate::dsp::Sample>(
    d: S,
    a2: S,
    g: S,
    ic1: &mut S,
    ic2: &mut S,
    x: S,
) -> (S, S) {
    let v3 = x - *ic2;
    let t = a2 * v3 - d * *ic1;
    let v1 = *ic1 + t;
    let u = g * v1;
    let v2 = *ic2 + u;
    *ic1 = v1 + t;
    *ic2 = v2 + u;
    (v1, v2)
}

/// `[d, a2, g]` of [`svf_increments`] for `g` and `k`, in f64.
fn svf_increment_coefs(g: f64, k: f64) -> [f64; 3] {
    let a1 = 1.0 / (1.0 + g * (g + k));
    [g * (g + k) * a1, g * a1, g]
}

/// The index of an enum param's value, if it is a valid choice.
fn enum_index(value: &Value, choices: usize) -> Option<usize> {
    match value {
        Value::Enum(i) if *i < choices => Some(*i),
        _ => None,
    }
}

/// The built enum param `i` (defaulting to the first choice when absent).
fn built_enum(cx: &BuildCtx<'_>, i: usize, choices: usize) -> usize {
    cx.values
        .get(i)
        .and_then(|v| enum_index(v, choices))
        .unwrap_or(0)
}

/// Coefficients designed in f64 for a set of param values, remembered
/// together with the values they came from.
#[derive(Clone, Copy, Debug)]
struct DesignCache<const N: usize> {
    key: [f64; N],
    valid: bool,
}

impl<const N: usize> DesignCache<N> {
    fn new() -> Self {
        DesignCache {
            key: [0.0; N],
            valid: false,
        }
    }

    /// True (and remembers `key`) when `key` differs from the last design.
    #[inline]
    fn stale(&mut self, key: [f64; N]) -> bool {
        // Compare bit patterns so that a NaN param does not redesign every
        // sample and −0.0 / 0.0 count as different inputs (as they are).
        let same = self.valid
            && self
                .key
                .iter()
                .zip(&key)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        if !same {
            self.key = key;
            self.valid = true;
        }
        !same
    }
}

const CUTOFF_PARAM: ParamSpec = number(
    "cutoff",
    Dimension::Frequency,
    1000.0,
    MIN_CUTOFF_HZ,
    1e6,
    "cutoff (centre) frequency; designed within (0, 0.49·sample rate)",
);

const Q_PARAM: ParamSpec = number(
    "q",
    Dimension::Scalar,
    0.707,
    MIN_Q,
    MAX_Q,
    "resonance (quality factor)",
);

#[cfg(test)]
mod tests {
    use super::biquad::{biquad_design, BiquadMode, BIQUAD_MODES};
    use super::onepole::{onepole_coef, ONEPOLE_MODES};
    use super::svf::{svf_design, SVF_MODES};
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::StateValue;
    use crate::ops::{OpSpec, ParamKind};
    use crate::profile::Profile;

    pub(super) const SR: f64 = 48000.0;

    pub(super) fn mode(spec: &OpSpec, name: &str) -> Value {
        match spec.params[0].kind {
            ParamKind::Enum { choices, .. } => {
                Value::Enum(choices.iter().position(|c| *c == name).unwrap())
            }
            _ => panic!("{}: param 0 is not the mode", spec.name),
        }
    }

    pub(super) fn runner(
        spec: &'static OpSpec,
        params: &[(&str, Value)],
        profile: Profile,
        precision: Precision,
    ) -> NodeRunner {
        NodeRunner::new(
            spec,
            values_with(spec, params),
            profile,
            Some(precision),
            SR,
            256,
            1,
        )
        .unwrap()
    }

    pub(super) fn render_at(
        spec: &'static OpSpec,
        params: &[(&str, Value)],
        profile: Profile,
        precision: Precision,
        input: &[f64],
    ) -> Vec<f64> {
        runner(spec, params, profile, precision)
            .run(&[input.to_vec()], &[], input.len(), &[64])
            .remove(0)
    }

    pub(super) fn render(
        spec: &'static OpSpec,
        params: &[(&str, Value)],
        input: &[f64],
    ) -> Vec<f64> {
        render_at(spec, params, Profile::Strict, Precision::F64, input)
    }

    pub(super) fn rel_rms(got: &[f64], want: &[f64]) -> f64 {
        assert_eq!(got.len(), want.len());
        let err: f64 = got.iter().zip(want).map(|(g, w)| (g - w) * (g - w)).sum();
        let norm: f64 = want.iter().map(|w| w * w).sum();
        (err / norm).sqrt()
    }

    pub(super) fn db(x: f64) -> f64 {
        20.0 * libm::log10(x)
    }

    const WINDOW: usize = 4800;

    /// Steady-state gain at `freq_hz` (a multiple of 10 Hz, so the window
    /// holds whole cycles): a unit sine runs for three windows and the last
    /// one is correlated with sine and cosine.
    pub(super) fn tone_gain(spec: &'static OpSpec, params: &[(&str, Value)], freq_hz: f64) -> f64 {
        let w = TWO_PI * freq_hz / SR;
        let x: Vec<f64> = (0..3 * WINDOW).map(|n| libm::sin(w * n as f64)).collect();
        let y = render(spec, params, &x);
        let (mut i_sum, mut q_sum) = (0.0, 0.0);
        for (n, v) in y.iter().enumerate().skip(2 * WINDOW) {
            i_sum += v * libm::sin(w * n as f64);
            q_sum += v * libm::cos(w * n as f64);
        }
        2.0 / WINDOW as f64 * (i_sum * i_sum + q_sum * q_sum).sqrt()
    }

    /// |N(jω)/D(jω)| for polynomials `p[0] + p[1]·s + p[2]·s²`.
    pub(super) fn analog_mag(num: [f64; 3], den: [f64; 3], w: f64) -> f64 {
        let eval = |p: [f64; 3]| {
            let re = p[0] - p[2] * w * w;
            let im = p[1] * w;
            (re * re + im * im).sqrt()
        };
        eval(num) / eval(den)
    }

    /// The analog frequency (normalised to the prototype's cutoff) that the
    /// bilinear transform prewarped at `fc_hz` maps `f_hz` to.
    pub(super) fn warped(f_hz: f64, fc_hz: f64) -> f64 {
        libm::tan(PI * f_hz / SR) / libm::tan(PI * fc_hz / SR)
    }

    /// Compares measured and analytic gains: within 0.05 dB, or both below
    /// −80 dB where the analytic response has a zero.
    pub(super) fn assert_response(label: &str, measured: f64, analytic: f64) {
        if db(analytic) < -80.0 {
            assert!(
                db(measured) < -80.0,
                "{label}: {} dB, expected below -80 dB",
                db(measured)
            );
        } else {
            let d = db(measured) - db(analytic);
            assert!(
                d.abs() <= 0.05,
                "{label}: measured {} dB, analytic {} dB",
                db(measured),
                db(analytic)
            );
        }
    }

    pub(super) const TEST_FREQS: [f64; 7] = [50.0, 300.0, 700.0, 1000.0, 1500.0, 4000.0, 15000.0];

    // --- all three --------------------------------------------------------

    fn every_filter_case() -> Vec<(&'static OpSpec, Vec<(&'static str, Value)>)> {
        let mut v = Vec::new();
        for name in BIQUAD_MODES {
            v.push((
                &BIQUAD,
                vec![
                    ("mode", mode(&BIQUAD, name)),
                    ("cutoff", Value::Number(700.0)),
                    ("q", Value::Number(3.0)),
                    ("gain", Value::Number(0.5)),
                ],
            ));
        }
        for name in ONEPOLE_MODES {
            v.push((
                &ONEPOLE,
                vec![
                    ("mode", mode(&ONEPOLE, name)),
                    ("cutoff", Value::Number(700.0)),
                ],
            ));
        }
        for name in SVF_MODES {
            v.push((
                &SVF,
                vec![
                    ("mode", mode(&SVF, name)),
                    ("cutoff", Value::Number(700.0)),
                    ("q", Value::Number(3.0)),
                ],
            ));
        }
        v
    }

    #[test]
    fn zero_modulation_gives_the_constant_output() {
        let x = test_signal(4, 3000);
        for (spec, params) in every_filter_case() {
            let reference = render(spec, &params, &x);
            let zeros = vec![0.0; x.len()];
            for p in spec.params.iter().filter(|p| p.is_port()) {
                let i = spec.param_index(p.name).unwrap();
                let mut r = runner(spec, &params, Profile::Strict, Precision::F64);
                let y = r.run(
                    std::slice::from_ref(&x),
                    &[(i, zeros.clone())],
                    x.len(),
                    &[13],
                );
                assert!(
                    y[0].iter()
                        .zip(&reference)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{} {:?}: zero modulation of `{}` changed the output",
                    spec.name,
                    params[0].1,
                    p.name
                );
            }
        }
    }

    #[test]
    fn a_mode_event_continues_like_a_node_built_in_that_mode() {
        let x = test_signal(6, 2000);
        let (head, tail) = (vec![x[..1000].to_vec()], vec![x[1000..].to_vec()]);
        for (spec, from, to) in [
            (&BIQUAD, "lowpass", "peak"),
            (&ONEPOLE, "lowpass", "highpass"),
            (&SVF, "notch", "bandpass"),
        ] {
            let with = |m: &str| {
                vec![
                    ("mode", mode(spec, m)),
                    ("cutoff", Value::Number(1200.0)),
                    ("gain", Value::Number(3.0)),
                ]
            };
            let mut switched = runner(spec, &with(from), Profile::Strict, Precision::F64);
            switched.run(&head, &[], 1000, &[64]);
            switched.node().set_discrete(0, &mode(spec, to));
            let got = switched.run(&tail, &[], 1000, &[64]);

            let mut before = runner(spec, &with(from), Profile::Strict, Precision::F64);
            before.run(&head, &[], 1000, &[64]);
            let mut fresh = runner(spec, &with(to), Profile::Strict, Precision::F64);
            fresh.node().restore(&before.snapshot()).unwrap();
            fresh.set_clock(1000);
            let want = fresh.run(&tail, &[], 1000, &[64]);
            assert_eq!(got, want, "{}: {from} → {to}", spec.name);
        }
    }

    #[test]
    fn extreme_params_stay_finite_and_stable() {
        let x = test_signal(8, 4000);
        let extremes = [
            ("cutoff", Value::Number(1e6)),
            ("cutoff", Value::Number(1e-3)),
            ("cutoff", Value::Number(0.0)),
            ("q", Value::Number(0.01)),
            ("q", Value::Number(1000.0)),
            ("gain", Value::Number(0.0)),
            ("gain", Value::Number(1e6)),
        ];
        for (spec, base) in every_filter_case() {
            for (name, v) in &extremes {
                if spec.param_index(name).is_none() {
                    continue;
                }
                let mut params = base.clone();
                params.retain(|(n, _)| n != name);
                params.push((name, v.clone()));
                let y = render(spec, &params, &x);
                assert!(
                    y.iter().all(|s| s.is_finite() && s.abs() < 1e7),
                    "{} {:?} {name} = {v:?}",
                    spec.name,
                    base[0].1
                );
            }
        }
        // Modulation may push cutoff, q and gain anywhere, NaN included: the
        // designs stay finite and stable (poles inside the unit circle).
        let wild_values = [-1e9, 1e9, f64::NAN, 0.0, -1000.0, 1e-300, f64::INFINITY];
        for &fc in &wild_values {
            for &q in &wild_values {
                for &g in &wild_values {
                    for m in 0..BIQUAD_MODES.len() {
                        let c = biquad_design::<crate::dsp::StrictMath>(
                            BiquadMode::from_index(m),
                            fc,
                            q,
                            g,
                            SR,
                        );
                        assert!(c.iter().all(|v| v.is_finite()), "{m} {fc} {q} {g}: {c:?}");
                        // |a2| < 1 and |a1| < 1 + a2: both poles inside.
                        assert!(c[4].abs() < 1.0 && c[3].abs() < 1.0 + c[4], "{c:?}");
                    }
                    let c = svf_design::<crate::dsp::StrictMath>(fc, q, SR);
                    assert!(c.iter().all(|v| v.is_finite() && *v >= 0.0), "{c:?}");
                }
            }
            let a = onepole_coef::<crate::dsp::StrictMath>(fc, SR);
            assert!((0.0..1.0).contains(&a), "{fc}: {a}");
        }
        // The trapezoidal SVF and the one-pole also stay bounded when the
        // coefficients jump every sample (a direct-form biquad need not:
        // its state is not the SVF's energy-preserving one).
        let wild: Vec<f64> = (0..x.len())
            .map(|n| match n % 5 {
                0 => -1e9,
                1 => 1e9,
                2 => f64::NAN,
                3 => 0.0,
                _ => -1000.0,
            })
            .collect();
        for (spec, params) in every_filter_case()
            .into_iter()
            .filter(|(spec, _)| spec.name != "biquad")
        {
            let mods: Vec<(usize, Vec<f64>)> = spec
                .params
                .iter()
                .filter(|p| p.is_port())
                .map(|p| (spec.param_index(p.name).unwrap(), wild.clone()))
                .collect();
            let mut r = runner(spec, &params, Profile::Strict, Precision::F64);
            let y = r.run(std::slice::from_ref(&x), &mods, x.len(), &[64]);
            assert!(
                y[0].iter().all(|s| s.is_finite()),
                "{} {:?}: non-finite output under wild modulation",
                spec.name,
                params[0].1
            );
        }
    }

    #[test]
    fn state_is_named_and_migrates_between_precisions() {
        let x = test_signal(2, 500);
        // (The biquad's state is f64 at both precisions: see its own
        // tests, `a_state_carried_between_strict_and_f32_…`.)
        for (spec, params, names) in [
            (&ONEPOLE, vec![], &["y"][..]),
            (&SVF, vec![], &["ic1", "ic2"][..]),
        ] {
            let mut r64 = runner(spec, &params, Profile::Strict, Precision::F64);
            r64.run(std::slice::from_ref(&x), &[], x.len(), &[64]);
            let st = r64.snapshot();
            let got: Vec<&str> = st.entries.iter().map(|(n, _)| n.as_ref()).collect();
            assert_eq!(got, names, "{}", spec.name);
            // f64 → f32 → f64 keeps the f32-rounded state.
            let mut r32 = runner(spec, &params, Profile::Repro, Precision::F32);
            r32.node().restore(&st).unwrap();
            let st32 = r32.snapshot();
            for ((_, a), (_, b)) in st.entries.iter().zip(&st32.entries) {
                match (a, b) {
                    (StateValue::F64(a), StateValue::F32(b)) => {
                        assert_eq!(a.len(), b.len());
                        for (p, q) in a.iter().zip(b) {
                            assert_eq!(*p as f32, *q);
                        }
                    }
                    _ => panic!("{}: unexpected state kinds", spec.name),
                }
            }
        }
    }
}
