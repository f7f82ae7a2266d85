//! Stateless per-sample maths on signals: `abs`, `clip`, `min`, `max`,
//! `scale` and `quantise`.
//!
//! Each is its own small operator rather than one operator with a `fn`
//! param: their ports differ (`min` and `max` take two signals, `clip` a
//! range, `scale` two ranges, `quantise` a step or a scale), so a scene
//! reads as what it does (`"op": "clip"`, `"lo": -0.5`), `morphrt ops clip`
//! documents exactly the params that node takes, and a check of the scene
//! rejects a param the operation has no use for.
//!
//! Every value is computed in f64 from the input widened to f64 and
//! rounded to the node's precision, with comparisons and `libm`-free
//! arithmetic (except `scale`'s exponential map, through the math policy's
//! `coef_pow`). A NaN input comes out NaN.

use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, Param, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

/// Applies `f(x, i)` to every input sample, in f64.
#[inline]
fn map<S: Sample>(io: &mut Io<'_, S>, mut f: impl FnMut(f64, usize) -> f64) {
    let n = io.frames;
    let x = &io.inputs[0][..n];
    for (i, (o, x)) in io.outputs[0][..n].iter_mut().zip(x).enumerate() {
        *o = S::from_f64(f(x.to_f64(), i));
    }
}

/// The spec fields every operator of this file shares.
macro_rules! stateless_spec {
    ($name:expr, $doc:expr, $inputs:expr, $params:expr, $build:ty) => {
        OpSpec {
            name: $name,
            doc: $doc,
            inputs: $inputs,
            outputs: &["out"],
            params: $params,
            tier: Profile::Strict,
            variadic_inputs: false,
            uses_rng: false,
            precision_param: None,
            solver_steps: None,
            choices: no_choices,
            lints: no_lints,
            cost: |p, _| by_profile(p, [2.0, 1.5, 1.5]),
            algorithms: Some(crate::ops::describe::NO_FAST_MATH),
            build: build_any::<$build>,
        }
    };
}

/// A number param of a level: any value within ±1e6.
const fn level(name: &'static str, default: f64, doc: &'static str) -> ParamSpec {
    number(name, Dimension::Scalar, default, -1e6, 1e6, doc)
}

// ---------------------------------------------------------------- abs

struct Abs<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Abs<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        for (o, x) in io.outputs[0][..n].iter_mut().zip(&io.inputs[0][..n]) {
            *o = x.abs();
        }
    }

    stateless!();
}

struct AbsOp;
impl Operator for AbsOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Abs::<S>(PhantomData)))
    }
}

/// `abs`: the magnitude of a signal (full-wave rectification).
pub(crate) static ABS: OpSpec = stateless_spec!(
    "abs",
    "The magnitude of the input: out = |in| (a full-wave rectifier).",
    &["in"],
    &[],
    AbsOp
);

// ---------------------------------------------------------------- clip

const CLIP_LO: usize = CLIP.index_of("lo");
const CLIP_HI: usize = CLIP.index_of("hi");

/// `x` held to the range between `lo` and `hi` (in either order).
#[inline]
fn clip(x: f64, lo: f64, hi: f64) -> f64 {
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
    if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

struct Clip<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Clip<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let (lo, hi) = (io.params.get(CLIP_LO), io.params.get(CLIP_HI));
        map(io, |x, i| clip(x, lo.at(i), hi.at(i)));
    }

    stateless!();
}

struct ClipOp;
impl Operator for ClipOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Clip::<S>(PhantomData)))
    }
}

/// `clip`: a hard clip to a range.
pub(crate) static CLIP: OpSpec = stateless_spec!(
    "clip",
    "Holds the input to lo…hi: out = lo below lo, hi above hi, else in (lo and hi may come \
     in either order).",
    &["in"],
    &[
        level("lo", -1.0, "the lower bound"),
        level("hi", 1.0, "the upper bound"),
    ],
    ClipOp
);

// ---------------------------------------------------------------- min, max

/// The smaller (`LARGER` false) or larger of two signals; NaN if either is.
struct Extremum<S, const LARGER: bool>(PhantomData<fn() -> S>);

impl<S: Sample, const LARGER: bool> NodeProcessor<S> for Extremum<S, LARGER> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (a, b) = (&io.inputs[0][..n], &io.inputs[1][..n]);
        for ((o, a), b) in io.outputs[0][..n].iter_mut().zip(a).zip(b) {
            let (a, b) = (a.to_f64(), b.to_f64());
            let y = if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if (LARGER && b > a) || (!LARGER && b < a) {
                b
            } else {
                a
            };
            *o = S::from_f64(y);
        }
    }

    stateless!();
}

struct ExtremumOp<const LARGER: bool>;
impl<const LARGER: bool> Operator for ExtremumOp<LARGER> {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Extremum::<S, LARGER>(PhantomData)))
    }
}

/// `min`: the smaller of two signals.
pub(crate) static MIN: OpSpec = stateless_spec!(
    "min",
    "The smaller of two signals: out = a if a ≤ b, else b (NaN if either is NaN).",
    &["a", "b"],
    &[],
    ExtremumOp<false>
);

/// `max`: the larger of two signals.
pub(crate) static MAX: OpSpec = stateless_spec!(
    "max",
    "The larger of two signals: out = a if a ≥ b, else b (NaN if either is NaN).",
    &["a", "b"],
    &[],
    ExtremumOp<true>
);

// ---------------------------------------------------------------- scale

const IN_LO: usize = SCALE.index_of("in_lo");
const IN_HI: usize = SCALE.index_of("in_hi");
const OUT_LO: usize = SCALE.index_of("out_lo");
const OUT_HI: usize = SCALE.index_of("out_hi");
const CURVE: usize = SCALE.index_of("curve");

/// Where `x` lies between `in_lo` (0) and `in_hi` (1), held to 0…1; 0
/// when that is not a number (an empty input range at `in_lo`, a NaN).
#[inline]
fn position(x: f64, in_lo: f64, in_hi: f64) -> f64 {
    let t = (x - in_lo) / (in_hi - in_lo);
    if t > 1.0 {
        1.0
    } else if t > 0.0 {
        t
    } else {
        0.0
    }
}

/// SuperCollider's `linlin`: `t·(out_hi − out_lo) + out_lo`.
#[inline]
fn linear(t: f64, out_lo: f64, out_hi: f64) -> f64 {
    t * (out_hi - out_lo) + out_lo
}

/// SuperCollider's `linexp`: `(out_hi/out_lo)^t · out_lo`, linear when the
/// ends are not nonzero and of one sign.
#[inline]
fn exponential<M: Math>(t: f64, out_lo: f64, out_hi: f64) -> f64 {
    if out_lo * out_hi > 0.0 {
        M::coef_pow(out_hi / out_lo, t) * out_lo
    } else {
        linear(t, out_lo, out_hi)
    }
}

struct Scale<S, M> {
    exponential: bool,
    _p: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Scale<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let p = &io.params;
        let ps: [Param<'_, S>; 4] = [p.get(IN_LO), p.get(IN_HI), p.get(OUT_LO), p.get(OUT_HI)];
        let exp = self.exponential;
        map(io, |x, i| {
            let t = position(x, ps[0].at(i), ps[1].at(i));
            let (lo, hi) = (ps[2].at(i), ps[3].at(i));
            if x.is_nan() {
                x
            } else if exp {
                exponential::<M>(t, lo, hi)
            } else {
                linear(t, lo, hi)
            }
        });
    }

    stateless!();
}

struct ScaleOp;
impl Operator for ScaleOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Scale::<S, M> {
            exponential: matches!(cx.values.get(CURVE), Some(Value::Enum(1))),
            _p: PhantomData,
        }))
    }
}

/// `scale`: maps one range onto another, linearly or exponentially.
pub(crate) static SCALE: OpSpec = OpSpec {
    lints: scale_lints,
    ..stateless_spec!(
        "scale",
        "Maps in_lo…in_hi onto out_lo…out_hi (SuperCollider's linlin / linexp, input clipped \
         to its range as theirs by default): t = (in − in_lo)/(in_hi − in_lo) held to 0…1; \
         linear: out = t·(out_hi − out_lo) + out_lo; exponential: out = (out_hi/out_lo)^t · \
         out_lo (linear when out_lo and out_hi are not nonzero and of one sign).",
        &["in"],
        &[
            level("in_lo", -1.0, "the input that maps to out_lo"),
            level("in_hi", 1.0, "the input that maps to out_hi"),
            level("out_lo", 0.0, "the output at in_lo"),
            level("out_hi", 1.0, "the output at in_hi"),
            ParamSpec {
                name: "curve",
                kind: ParamKind::Enum {
                    choices: &["linear", "exponential"],
                    default: "linear",
                },
                doc: "linear, or exponential (equal ratios for equal steps: a frequency range)",
                settable_by_events: false,
            },
        ],
        ScaleOp
    )
};

/// An exponential map whose static output range is not nonzero and of one
/// sign plays linear.
fn scale_lints(values: &[Value], _sample_rate: f64) -> Vec<crate::ops::Lint> {
    let exp = matches!(values.get(CURVE), Some(Value::Enum(1)));
    let lo = values.get(OUT_LO).and_then(Value::as_number).unwrap_or(0.0);
    let hi = values.get(OUT_HI).and_then(Value::as_number).unwrap_or(0.0);
    if !exp || lo * hi > 0.0 {
        return Vec::new();
    }
    vec![crate::ops::Lint {
        param: "out_lo",
        message: format!(
            "an exponential scale from {lo} to {hi} needs both ends nonzero and of one sign, so it plays linear"
        ),
        help: Some("give out_lo and out_hi of one sign (e.g. 20 and 20000), or `\"curve\": \"linear\"`".to_string()),
        held: None,
    }]
}

// ---------------------------------------------------------------- quantise

const STEP: usize = QUANTISE.index_of("step");
const SCALE_DEGREES: usize = QUANTISE.index_of("scale");

/// Semitones in the octave a scale repeats over.
const OCTAVE: f64 = 12.0;

/// `x` rounded to the nearest multiple of `step`, a tie upwards
/// (`floor(x/step + 0.5)·step`, SuperCollider's `round`); `x` itself when
/// `step` is not > 0 or `x/step` is not finite.
#[inline]
fn to_step(x: f64, step: f64) -> f64 {
    let q = x / step;
    if step > 0.0 && q.is_finite() {
        libm::floor(q + 0.5) * step
    } else {
        x
    }
}

/// `x` (a note number) moved to the nearest degree of `degrees` (sorted
/// semitones in 0…12) in any octave, a tie upwards.
#[inline]
fn to_scale(x: f64, degrees: &[f64]) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let base = libm::floor(x / OCTAVE) * OCTAVE;
    let mut best = x;
    let mut distance = f64::INFINITY;
    // The degrees of this octave, then the first of the next (and the last
    // of the one before), so a note near an octave line finds its nearest.
    let candidates = degrees
        .iter()
        .map(|d| base + d)
        .chain(degrees.first().map(|d| base + OCTAVE + d))
        .chain(degrees.last().map(|d| base - OCTAVE + d));
    for c in candidates {
        let dist = (x - c).abs();
        if dist < distance || (dist == distance && c > best) {
            best = c;
            distance = dist;
        }
    }
    best
}

struct Quantise<S> {
    /// Sorted scale degrees in 0…12; empty: quantise to `step`.
    degrees: Vec<f64>,
    _p: PhantomData<fn() -> S>,
}

impl<S: Sample> NodeProcessor<S> for Quantise<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let step = io.params.get(STEP);
        if self.degrees.is_empty() {
            map(io, |x, i| to_step(x, step.at(i)));
        } else {
            let degrees = &self.degrees;
            map(io, |x, _| to_scale(x, degrees));
        }
    }

    stateless!();
}

struct QuantiseOp;
impl Operator for QuantiseOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let given: &[f64] = match cx.values.get(SCALE_DEGREES) {
            Some(Value::Gains(g)) => g,
            _ => &[],
        };
        let mut degrees: Vec<f64> = given
            .iter()
            .map(|d| d - libm::floor(d / OCTAVE) * OCTAVE)
            .collect();
        degrees.sort_by(f64::total_cmp);
        degrees.dedup();
        Ok(Box::new(Quantise::<S> {
            degrees,
            _p: PhantomData,
        }))
    }
}

/// `quantise`: rounds to a step or to the notes of a scale.
pub(crate) static QUANTISE: OpSpec = stateless_spec!(
    "quantise",
    "Rounds the input to the nearest multiple of `step` (floor(in/step + 0.5)·step, a tie \
     upwards; a step of 0 passes the input), or, with a `scale`, moves a note number to the \
     nearest note of the scale (degrees in semitones, repeating every 12; a tie upwards).",
    &["in"],
    &[
        number(
            "step",
            Dimension::Scalar,
            1.0,
            0.0,
            1e6,
            "the grid to round to (without a scale)",
        ),
        ParamSpec {
            name: "scale",
            kind: ParamKind::Gains,
            doc: "scale degrees in semitones, e.g. [0, 2, 4, 5, 7, 9, 11]; empty: round to `step`",
            settable_by_events: false,
        },
    ],
    QuantiseOp
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};

    fn run(spec: &'static OpSpec, set: &[(&str, Value)], inputs: &[Vec<f64>]) -> Vec<f64> {
        run_at(spec, set, inputs, Precision::F64)
    }

    fn run_at(
        spec: &'static OpSpec,
        set: &[(&str, Value)],
        inputs: &[Vec<f64>],
        precision: Precision,
    ) -> Vec<f64> {
        let profile = match precision {
            Precision::F64 => Profile::Strict,
            Precision::F32 => Profile::Repro,
        };
        let mut r = NodeRunner::new(
            spec,
            values_with(spec, set),
            profile,
            Some(precision),
            48000.0,
            256,
            inputs.len(),
        )
        .unwrap();
        r.run(inputs, &[], inputs[0].len(), &[64]).swap_remove(0)
    }

    fn num(v: f64) -> Value {
        Value::Number(v)
    }

    #[test]
    fn abs_clip_min_and_max_are_their_definitions() {
        let a: Vec<f64> = test_signal(1, 400).iter().map(|x| 2.0 * x).collect();
        let b = test_signal(2, 400);
        let y = run(&ABS, &[], std::slice::from_ref(&a));
        let y_min = run(&MIN, &[], &[a.clone(), b.clone()]);
        let y_max = run(&MAX, &[], &[a.clone(), b.clone()]);
        // lo and hi in either order are the same range.
        let y_clip = run(
            &CLIP,
            &[("lo", num(0.5)), ("hi", num(-0.25))],
            std::slice::from_ref(&a),
        );
        for i in 0..400 {
            assert_eq!(y[i], a[i].abs());
            assert_eq!(y_min[i], if a[i] <= b[i] { a[i] } else { b[i] });
            assert_eq!(y_max[i], if a[i] >= b[i] { a[i] } else { b[i] });
            assert_eq!(y_clip[i], a[i].clamp(-0.25, 0.5));
        }
        assert!(y_clip.contains(&0.5) && y_clip.contains(&-0.25));
        let nan = run(&MAX, &[], &[vec![f64::NAN, 1.0], vec![0.0, f64::NAN]]);
        assert!(nan.iter().all(|v| v.is_nan()));
    }

    /// SuperCollider's linlin and linexp (with their default clip) written
    /// out in the test.
    #[test]
    fn scale_maps_ranges_as_linlin_and_linexp() {
        let x: Vec<f64> = (0..=200).map(|i| -1.5 + 3.0 * i as f64 / 200.0).collect();
        let set = [
            ("in_lo", num(-1.0)),
            ("in_hi", num(1.0)),
            ("out_lo", num(200.0)),
            ("out_hi", num(5000.0)),
        ];
        let lin = run(&SCALE, &set, std::slice::from_ref(&x));
        let mut exp_set = set.to_vec();
        exp_set.push(("curve", Value::Enum(1)));
        let exp = run(&SCALE, &exp_set, std::slice::from_ref(&x));
        for (i, x) in x.iter().enumerate() {
            let c = x.clamp(-1.0, 1.0);
            let want_lin = (c + 1.0) / 2.0 * 4800.0 + 200.0;
            let want_exp = libm::pow(5000.0 / 200.0, (c + 1.0) / 2.0) * 200.0;
            assert!(
                (lin[i] - want_lin).abs() <= 1e-9,
                "{x}: {} vs {want_lin}",
                lin[i]
            );
            assert!(
                (exp[i] - want_exp).abs() <= 1e-9,
                "{x}: {} vs {want_exp}",
                exp[i]
            );
        }
        // The ends land exactly; the middle of an exponential map is the
        // geometric mean.
        assert_eq!((lin[0], lin[200]), (200.0, 5000.0));
        assert!((exp[100] - libm::sqrt(200.0 * 5000.0)).abs() < 1e-9);
        // An inverted input range, and an empty one.
        let inv = run(
            &SCALE,
            &[("in_lo", num(1.0)), ("in_hi", num(-1.0))],
            &[vec![1.0, -1.0, 0.5]],
        );
        assert_eq!(inv, [0.0, 1.0, 0.25]);
        let empty = run(
            &SCALE,
            &[("in_lo", num(0.0)), ("in_hi", num(0.0))],
            &[vec![-1.0, 0.0, 1.0]],
        );
        assert_eq!(empty, [0.0, 0.0, 1.0]);
        // An exponential map through zero plays linear, with a warning.
        let v = values_with(&SCALE, &[("curve", Value::Enum(1))]);
        assert_eq!(scale_lints(&v, 48000.0).len(), 1);
        let through_zero = run(&SCALE, &[("curve", Value::Enum(1))], &[vec![0.0]]);
        assert_eq!(through_zero, [0.5]);
    }

    #[test]
    fn quantise_rounds_to_a_step_and_to_a_scale() {
        let x: Vec<f64> = (0..=400).map(|i| -10.0 + 0.05 * i as f64).collect();
        let y = run(&QUANTISE, &[("step", num(0.5))], std::slice::from_ref(&x));
        for (x, y) in x.iter().zip(&y) {
            assert_eq!(*y, libm::floor(x / 0.5 + 0.5) * 0.5, "{x}");
            assert!((x - y).abs() <= 0.25 + 1e-12);
        }
        // A tie rounds up; a step of 0 passes the input.
        assert_eq!(
            run(&QUANTISE, &[("step", num(1.0))], &[vec![2.5, -2.5]]),
            [3.0, -2.0]
        );
        let x = test_signal(4, 100);
        assert_eq!(
            run(&QUANTISE, &[("step", num(0.0))], std::slice::from_ref(&x)),
            x
        );
        // C major, given unsorted, with an octave above written as 12 + 2.
        let major = Value::Gains(vec![14.0, 0.0, 4.0, 5.0, 7.0, 9.0, 11.0]);
        let notes: Vec<f64> = (0..=480).map(|i| 48.0 + 0.05 * i as f64).collect();
        let y = run(&QUANTISE, &[("scale", major)], std::slice::from_ref(&notes));
        // The oracle: every note of the scale from 36 to 84, the nearest
        // (ties upwards) by brute force.
        let pitches: Vec<f64> = (36..=84)
            .map(f64::from)
            .filter(|n| [0.0, 2.0, 4.0, 5.0, 7.0, 9.0, 11.0].contains(&(n % 12.0)))
            .collect();
        for (x, y) in notes.iter().zip(&y) {
            let mut best = pitches[0];
            for p in &pitches {
                let (d, e) = ((x - p).abs(), (x - best).abs());
                if d < e || (d == e && *p > best) {
                    best = *p;
                }
            }
            assert_eq!(*y, best, "note {x}");
        }
    }

    #[test]
    fn f32_nodes_round_the_f64_result() {
        let x = test_signal(5, 300);
        let set = [
            ("out_lo", num(20.0)),
            ("out_hi", num(20000.0)),
            ("curve", Value::Enum(1)),
        ];
        let y64 = run(&SCALE, &set, std::slice::from_ref(&x));
        let y32 = run_at(&SCALE, &set, std::slice::from_ref(&x), Precision::F32);
        for (a, b) in y64.iter().zip(&y32) {
            assert!((a - b).abs() <= 1e-6 * a.abs(), "{a} vs {b}");
        }
    }
}
