//! Stateless utilities: `dc`, `gain`, `mix`, `multiply`, `pan`, `cast`.
//!
//! None of them carries state between blocks, so `reset`, `snapshot` and
//! `restore` are no-ops and block-size invariance follows from computing each
//! frame from that frame's inputs and param values only.
//!
//! The submodules hold the signal utilities: [`math`] (`abs`, `clip`,
//! `min`, `max`, `scale`, `quantise`), [`control`] (`sample_hold`,
//! `crossfade`), [`lag`] (`lag`, `slew`, which keep state) and [`stereo`]
//! (`balance`, `width`).

mod control;
mod lag;
mod math;
mod stereo;

pub(crate) use control::{CROSSFADE, SAMPLE_HOLD};
pub(crate) use lag::{LAG, SLEW};
pub(crate) use math::{ABS, CLIP, MAX, MIN, QUANTISE, SCALE};
pub(crate) use stereo::{BALANCE, WIDTH_OP as WIDTH};

use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

// ---------------------------------------------------------------- dc

/// A constant (plus its modulation): `out = value`.
struct Dc<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Dc<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let value = io.params.get(DC_VALUE);
        let out = &mut io.outputs[0][..io.frames];
        if value.is_const() {
            out.fill(S::from_f64(value.value()));
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                *o = S::from_f64(value.at(i));
            }
        }
    }

    stateless!();
}

struct DcOp;
impl Operator for DcOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Dc::<S>(PhantomData)))
    }
}

const DC_VALUE: usize = DC.index_of("value");

/// `dc`: a constant signal; modulating `value` adds to it.
pub(crate) static DC: OpSpec = OpSpec {
    name: "dc",
    doc: "A constant signal: out = value (plus any signal on the `value` port).",
    inputs: &[],
    outputs: &["out"],
    params: &[number(
        "value",
        Dimension::Scalar,
        0.0,
        -1e6,
        1e6,
        "the constant",
    )],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [1.3, 0.9, 0.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<DcOp>,
};

// ---------------------------------------------------------------- gain

/// `out = gain · in`.
struct Gain<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Gain<S> {
    /// Runs in a lane group through its own `process`: one engine dispatch for the group.
    fn lanes(&self, _: crate::dsp::vector::SimdLevel) -> Option<crate::ops::LaneKernel<S>> {
        Some(crate::ops::serial_lanes::<S, Self>)
    }

    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let gain = io.params.get(GAIN_GAIN);
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if gain.is_const() {
            let g = S::from_f64(gain.value());
            for (o, x) in out.iter_mut().zip(x) {
                *o = g * *x;
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                *o = S::from_f64(gain.at(i)) * *x;
            }
        }
    }

    stateless!();
}

struct GainOp;
impl Operator for GainOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Gain::<S>(PhantomData)))
    }
}

const GAIN_GAIN: usize = GAIN.index_of("gain");

/// `gain`: multiplies its input by a linear gain (given linear or in dB).
pub(crate) static GAIN: OpSpec = OpSpec {
    name: "gain",
    doc: "Scales the input: out = gain · in (gain linear or in dB; 0dB = 1).",
    inputs: &["in"],
    outputs: &["out"],
    params: &[number(
        "gain",
        Dimension::Amplitude,
        1.0,
        -1e6,
        1e6,
        "linear gain",
    )],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [1.5, 1.2, 1.2]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<GainOp>,
};

// ---------------------------------------------------------------- mix

/// `out = g0·in0 + g1·in1 + …`, summed left to right in index order.
struct Mix<S> {
    /// One gain per input at build (missing entries 1.0), rounded to `S`.
    gains: Vec<S>,
}

impl<S: Sample> Mix<S> {
    #[inline]
    fn gain(&self, k: usize) -> S {
        self.gains.get(k).copied().unwrap_or(S::ONE)
    }
}

impl<S: Sample> NodeProcessor<S> for Mix<S> {
    /// Runs in a lane group through its own `process`: one engine dispatch for the group.
    fn lanes(&self, _: crate::dsp::vector::SimdLevel) -> Option<crate::ops::LaneKernel<S>> {
        Some(crate::ops::serial_lanes::<S, Self>)
    }

    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let out = &mut io.outputs[0][..n];
        let Some((first, rest)) = io.inputs.split_first() else {
            out.fill(S::ZERO);
            return;
        };
        // Input by input over the whole block: the same per-frame order of
        // additions as a per-frame loop, so the result is identical.
        let g0 = self.gain(0);
        for (o, x) in out.iter_mut().zip(&first[..n]) {
            *o = g0 * *x;
        }
        for (k, input) in rest.iter().enumerate() {
            let g = self.gain(k + 1);
            for (o, x) in out.iter_mut().zip(&input[..n]) {
                *o += g * *x;
            }
        }
    }

    stateless!();
}

struct MixOp;
impl Operator for MixOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let given: &[f64] = match cx.values.get(MIX_GAINS) {
            Some(Value::Gains(g)) => g,
            _ => &[],
        };
        let gains = (0..cx.n_inputs.max(given.len()))
            .map(|k| S::from_f64(given.get(k).copied().unwrap_or(1.0)))
            .collect();
        Ok(Box::new(Mix::<S> { gains }))
    }
}

const MIX_GAINS: usize = MIX.index_of("gains");

/// `mix`: sums `in0 … inN`, each scaled by its entry of `gains`.
pub(crate) static MIX: OpSpec = OpSpec {
    name: "mix",
    doc: "Sums inputs in0 … inN in index order, each times its entry of `gains` \
          (missing entries are 1.0): out = g0·in0 + g1·in1 + …, left to right.",
    inputs: &[],
    outputs: &["out"],
    params: &[ParamSpec {
        name: "gains",
        kind: ParamKind::Gains,
        doc: "per-input linear gains (or dB strings), in input order; default all 1.0",
        settable_by_events: false,
    }],
    tier: Profile::Strict,
    variadic_inputs: true,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [2.1, 1.8, 1.7]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<MixOp>,
};

// ---------------------------------------------------------------- multiply

/// `out = a · b` (ring modulation, VCA).
struct Multiply<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Multiply<S> {
    /// Runs in a lane group through its own `process`: one engine dispatch for the group.
    fn lanes(&self, _: crate::dsp::vector::SimdLevel) -> Option<crate::ops::LaneKernel<S>> {
        Some(crate::ops::serial_lanes::<S, Self>)
    }

    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let a = &io.inputs[0][..n];
        let b = &io.inputs[1][..n];
        for ((o, a), b) in io.outputs[0][..n].iter_mut().zip(a).zip(b) {
            *o = *a * *b;
        }
    }

    stateless!();
}

struct MultiplyOp;
impl Operator for MultiplyOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Multiply::<S>(PhantomData)))
    }
}

/// `multiply`: the product of two signals.
pub(crate) static MULTIPLY: OpSpec = OpSpec {
    name: "multiply",
    doc: "The product of two signals: out = a · b.",
    inputs: &["a", "b"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [1.8, 1.6, 1.6]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<MultiplyOp>,
};

// ---------------------------------------------------------------- pan

/// π/4, the angle per unit of `pos`.
const QUARTER_PI: f64 = core::f64::consts::FRAC_PI_4;

/// Equal-power gains `(left, right)` for `pos` (clamped to −1…1):
/// `left = cos((1 + pos)·π/4)`, `right = cos((1 − pos)·π/4)`.
///
/// `right` equals `sin((pos + 1)·π/4)` mathematically; writing it as a cosine
/// of the mirrored angle makes the law exactly symmetric in every precision
/// (`right(pos) == left(−pos)` bit for bit, equal gains at the centre), which
/// `sin(π/4)` vs `cos(π/4)` on a rounded π/4 is not.
#[inline]
fn pan_gains<S: Sample, M: Math>(pos: f64) -> (S, S) {
    let p = if pos.is_nan() {
        0.0
    } else {
        pos.clamp(-1.0, 1.0)
    };
    let l = M::cos(S::from_f64((1.0 + p) * QUARTER_PI));
    let r = M::cos(S::from_f64((1.0 - p) * QUARTER_PI));
    (l, r)
}

/// Equal-power mono-to-stereo panner.
struct Pan<S, M>(PhantomData<fn() -> (S, M)>);

impl<S: Sample, M: Math> NodeProcessor<S> for Pan<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let pos = io.params.get(PAN_POS);
        let x = &io.inputs[0][..n];
        let (left, right) = io.outputs.split_at_mut(1);
        let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
        if pos.is_const() {
            let (gl, gr) = pan_gains::<S, M>(pos.value());
            for i in 0..n {
                left[i] = gl * x[i];
                right[i] = gr * x[i];
            }
        } else {
            for i in 0..n {
                let (gl, gr) = pan_gains::<S, M>(pos.at(i));
                left[i] = gl * x[i];
                right[i] = gr * x[i];
            }
        }
    }

    stateless!();
}

struct PanOp;
impl Operator for PanOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Pan::<S, M>(PhantomData)))
    }
}

const PAN_POS: usize = PAN.index_of("pos");

/// `pan`: equal-power panning of a mono input to `left`/`right`.
pub(crate) static PAN: OpSpec = OpSpec {
    name: "pan",
    doc: "Equal-power pan: θ = (pos+1)·π/4, left = cos θ · in, right = sin θ · in \
          (computed as cos((1−pos)·π/4) so the law is exactly symmetric); pos is clamped to −1…1.",
    inputs: &["in"],
    outputs: &["left", "right"],
    params: &[number(
        "pos",
        Dimension::Scalar,
        0.0,
        -1.0,
        1.0,
        "position: −1 left, 0 centre, 1 right",
    )],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [2.5, 1.6, 1.9]),
    algorithms: None,
    build: build_any::<PanOp>,
};

// ---------------------------------------------------------------- cast

/// Copies `in` to `out`; the engine converts precision on the edges around
/// the node (the node itself runs at the target precision).
struct Cast<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Cast<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (x, out) = (&io.inputs[0][..n], &mut io.outputs[0][..n]);
        out.copy_from_slice(x);
    }

    stateless!();
}

struct CastOp;
impl Operator for CastOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Cast::<S>(PhantomData)))
    }
}

/// `cast`: the explicit precision change between f32 and f64 nodes.
pub(crate) static CAST: OpSpec = OpSpec {
    name: "cast",
    doc: "The explicit precision change: an identity node that runs at precision `to`; \
          the engine rounds (f64→f32) or widens (f32→f64, exact) on its edges.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[ParamSpec {
        name: "to",
        kind: ParamKind::Enum {
            choices: &["f32", "f64"],
            default: "f64",
        },
        doc: "the precision of the output",
        settable_by_events: false,
    }],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: Some("to"),
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [1.5, 1.8, 1.7]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<CastOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};

    fn run(
        spec: &'static OpSpec,
        params: &[(&str, Value)],
        precision: Precision,
        inputs: &[Vec<f64>],
        mods: &[(usize, Vec<f64>)],
        frames: usize,
        blocks: &[usize],
    ) -> Vec<Vec<f64>> {
        let profile = match precision {
            Precision::F64 => Profile::Strict,
            Precision::F32 => Profile::Repro,
        };
        let mut r = NodeRunner::new(
            spec,
            values_with(spec, params),
            profile,
            Some(precision),
            48000.0,
            512,
            inputs.len(),
        )
        .unwrap();
        r.run(inputs, mods, frames, blocks)
    }

    #[test]
    fn dc_outputs_value_plus_modulation() {
        let m: Vec<f64> = (0..100).map(|i| i as f64 * 0.01).collect();
        let out = run(
            &DC,
            &[("value", Value::Number(0.25))],
            Precision::F64,
            &[],
            &[(0, m.clone())],
            100,
            &[13],
        );
        for (y, m) in out[0].iter().zip(&m) {
            assert_eq!(*y, 0.25 + m);
        }
        let out = run(&DC, &[], Precision::F64, &[], &[], 10, &[3]);
        assert!(out[0].iter().all(|y| *y == 0.0));
    }

    #[test]
    fn gain_scales() {
        let x = test_signal(1, 300);
        let out = run(
            &GAIN,
            &[("gain", Value::Number(-0.5))],
            Precision::F64,
            std::slice::from_ref(&x),
            &[],
            300,
            &[64],
        );
        for (y, x) in out[0].iter().zip(&x) {
            assert_eq!(*y, -0.5 * x);
        }
    }

    /// Naive oracle: one frame at a time, terms added in index order.
    fn naive_mix<T>(inputs: &[Vec<T>], gains: &[T], one: T, i: usize) -> T
    where
        T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
    {
        let g = |k: usize| gains.get(k).copied().unwrap_or(one);
        let mut acc = g(0) * inputs[0][i];
        for (k, x) in inputs.iter().enumerate().skip(1) {
            acc = acc + g(k) * x[i];
        }
        acc
    }

    #[test]
    fn mix_is_the_naive_sum_in_index_order() {
        let frames = 700;
        let inputs: Vec<Vec<f64>> = (0..4).map(|k| test_signal(20 + k, frames)).collect();
        // Three gains for four inputs: the fourth is 1.0.
        let gains = vec![0.3, -1.7, 2.5];
        let params = [("gains", Value::Gains(gains.clone()))];
        let out = run(&MIX, &params, Precision::F64, &inputs, &[], frames, &[37]);
        for (i, y) in out[0].iter().enumerate() {
            assert_eq!(y.to_bits(), naive_mix(&inputs, &gains, 1.0, i).to_bits());
        }
        // At f32 every operand and every partial sum rounds to f32.
        let out = run(&MIX, &params, Precision::F32, &inputs, &[], frames, &[37]);
        let in32: Vec<Vec<f32>> = inputs
            .iter()
            .map(|v| v.iter().map(|x| *x as f32).collect())
            .collect();
        let g32: Vec<f32> = gains.iter().map(|g| *g as f32).collect();
        for (i, y) in out[0].iter().enumerate() {
            assert_eq!(*y, naive_mix(&in32, &g32, 1.0f32, i) as f64);
        }
    }

    #[test]
    fn mix_of_one_and_of_none() {
        let x = test_signal(3, 50);
        let out = run(
            &MIX,
            &[],
            Precision::F64,
            std::slice::from_ref(&x),
            &[],
            50,
            &[8],
        );
        assert_eq!(out[0], x);
        let out = run(&MIX, &[], Precision::F64, &[], &[], 50, &[8]);
        assert!(out[0].iter().all(|y| *y == 0.0));
    }

    #[test]
    fn multiply_is_the_product() {
        let a = test_signal(4, 200);
        let b = test_signal(5, 200);
        let out = run(
            &MULTIPLY,
            &[],
            Precision::F64,
            &[a.clone(), b.clone()],
            &[],
            200,
            &[7],
        );
        for i in 0..200 {
            assert_eq!(out[0][i], a[i] * b[i]);
        }
    }

    #[test]
    fn pan_is_equal_power() {
        let frames = 2000;
        let x = test_signal(6, frames);
        let sweep: Vec<f64> = (0..frames)
            .map(|i| -1.2 + 2.4 * i as f64 / frames as f64)
            .collect();
        for mods in [vec![], vec![(0usize, sweep)]] {
            for pos in [-1.0, -0.3, 0.0, 0.6, 1.0] {
                let out = run(
                    &PAN,
                    &[("pos", Value::Number(pos))],
                    Precision::F64,
                    std::slice::from_ref(&x),
                    &mods,
                    frames,
                    &[64],
                );
                for i in 0..frames {
                    let (l, r) = (out[0][i], out[1][i]);
                    assert!((l * l + r * r - x[i] * x[i]).abs() <= 1e-12, "frame {i}");
                }
            }
        }
    }

    #[test]
    fn pan_law_endpoints_and_centre() {
        let x = vec![1.0; 4];
        let gains = |pos: f64| {
            let out = run(
                &PAN,
                &[("pos", Value::Number(pos))],
                Precision::F64,
                std::slice::from_ref(&x),
                &[],
                4,
                &[4],
            );
            (out[0][0], out[1][0])
        };
        let (l, r) = gains(0.0);
        assert_eq!(l, r);
        assert!((l - core::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15);
        let (l, r) = gains(-1.0);
        assert!(l == 1.0 && r.abs() < 1e-15);
        let (l, r) = gains(1.0);
        assert!(r == 1.0 && l.abs() < 1e-15);
        // Mirror symmetry is exact.
        let (l, r) = gains(0.37);
        let (l2, r2) = gains(-0.37);
        assert_eq!((l, r), (r2, l2));
        // The brief's law: left = cos θ, right = sin θ, θ = (pos+1)π/4.
        let theta = (0.37 + 1.0) * QUARTER_PI;
        assert!((l - libm::cos(theta)).abs() < 1e-15);
        assert!((r - libm::sin(theta)).abs() < 1e-15);
    }

    #[test]
    fn cast_is_identity_at_its_precision() {
        let x = test_signal(7, 300);
        let out = run(
            &CAST,
            &[],
            Precision::F64,
            std::slice::from_ref(&x),
            &[],
            300,
            &[50],
        );
        assert_eq!(out[0], x);
        let out = run(
            &CAST,
            &[],
            Precision::F32,
            std::slice::from_ref(&x),
            &[],
            300,
            &[50],
        );
        for (y, x) in out[0].iter().zip(&x) {
            assert_eq!(*y, *x as f32 as f64);
        }
    }
}
