//! Stereo pairs: `balance` and `width`. Each reads a pair `in` (left) /
//! `in_r` (right) and writes a pair `out` / `out_r`, sample by sample at
//! the node's precision, with only multiplications and additions (no math
//! policy: every profile computes the same formula).

use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, StateError,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

/// Runs `f(l, r, i) -> (l', r')` over the block's pair.
#[inline]
fn pair<S: Sample>(io: &mut Io<'_, S>, mut f: impl FnMut(S, S, usize) -> (S, S)) {
    let n = io.frames;
    let (l, r) = (&io.inputs[0][..n], &io.inputs[1][..n]);
    let (left, right) = io.outputs.split_at_mut(1);
    let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
    for i in 0..n {
        (left[i], right[i]) = f(l[i], r[i], i);
    }
}

// ---------------------------------------------------------------- balance

const POS: usize = BALANCE.index_of("pos");

/// The gains `(left, right)` at `pos`: the side `pos` moves away from is
/// turned down linearly, the other kept at 1 — `left = 1 − pos` for
/// `pos > 0`, `right = 1 + pos` for `pos < 0`.
#[inline]
fn balance_gains(pos: f64) -> (f64, f64) {
    if pos > 0.0 {
        (1.0 - pos.min(1.0), 1.0)
    } else if pos < 0.0 {
        (1.0, 1.0 + pos.max(-1.0))
    } else {
        (1.0, 1.0)
    }
}

struct Balance<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Balance<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let pos = io.params.get(POS);
        pair(io, |l, r, i| {
            let (gl, gr) = balance_gains(pos.at(i));
            (S::from_f64(gl) * l, S::from_f64(gr) * r)
        });
    }

    stateless!();
}

struct BalanceOp;
impl Operator for BalanceOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Balance::<S>(PhantomData)))
    }
}

/// `balance`: turns one side of a stereo pair down.
pub(crate) static BALANCE: OpSpec = OpSpec {
    name: "balance",
    doc: "Stereo balance, as a mixing desk's: pos > 0 turns the left channel down to \
          (1 − pos)·in, pos < 0 the right to (1 + pos)·in_r; the other channel and pos 0 pass \
          unchanged (unlike SuperCollider's Balance2, which is −3 dB on both at its centre).",
    inputs: &["in", "in_r"],
    outputs: &["out", "out_r"],
    params: &[number(
        "pos",
        Dimension::Scalar,
        0.0,
        -1.0,
        1.0,
        "−1 right silent … 0 both unchanged … 1 left silent",
    )],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [3.9, 3.2, 3.3]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<BalanceOp>,
};

// ---------------------------------------------------------------- width

const WIDTH: usize = WIDTH_OP.index_of("width");

struct Width<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Width<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let width = io.params.get(WIDTH);
        let half = S::from_f64(0.5);
        pair(io, |l, r, i| {
            let w = width.at(i);
            if w == 1.0 {
                return (l, r);
            }
            let mid = half * (l + r);
            let side = half * (l - r) * S::from_f64(w);
            (mid + side, mid - side)
        });
    }

    stateless!();
}

struct WidthOp;
impl Operator for WidthOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Width::<S>(PhantomData)))
    }
}

/// `width`: mid/side stereo width.
pub(crate) static WIDTH_OP: OpSpec = OpSpec {
    name: "width",
    doc: "Mid/side width of a stereo pair: mid = (in + in_r)/2, side = (in − in_r)/2 · width; \
          out = mid + side, out_r = mid − side. 0 is mono (both mid), 1 passes the pair \
          unchanged (bit for bit), 2 doubles the side.",
    inputs: &["in", "in_r"],
    outputs: &["out", "out_r"],
    params: &[number(
        "width",
        Dimension::Scalar,
        1.0,
        0.0,
        2.0,
        "0 mono … 1 as it is … 2 twice the side",
    )],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [3.7, 3.1, 2.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<WidthOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::Value;

    fn run(spec: &'static OpSpec, param: (&str, f64), l: &[f64], r: &[f64]) -> Vec<Vec<f64>> {
        let mut node = NodeRunner::new(
            spec,
            values_with(spec, &[(param.0, Value::Number(param.1))]),
            Profile::Strict,
            Some(Precision::F64),
            48000.0,
            256,
            2,
        )
        .unwrap();
        node.run(&[l.to_vec(), r.to_vec()], &[], l.len(), &[64])
    }

    #[test]
    fn balance_turns_down_one_side_and_passes_the_centre() {
        let (l, r) = (test_signal(1, 300), test_signal(2, 300));
        assert_eq!(run(&BALANCE, ("pos", 0.0), &l, &r), [l.clone(), r.clone()]);
        let y = run(&BALANCE, ("pos", 0.25), &l, &r);
        for i in 0..300 {
            assert_eq!(y[0][i], 0.75 * l[i]);
            assert_eq!(y[1][i], r[i]);
        }
        let y = run(&BALANCE, ("pos", -1.0), &l, &r);
        assert_eq!(y[0], l);
        assert!(y[1].iter().all(|v| *v == 0.0));
    }

    #[test]
    fn width_scales_the_side_and_keeps_the_mid() {
        let (l, r) = (test_signal(3, 300), test_signal(4, 300));
        assert_eq!(
            run(&WIDTH_OP, ("width", 1.0), &l, &r),
            [l.clone(), r.clone()]
        );
        for w in [0.0, 0.5, 2.0] {
            let y = run(&WIDTH_OP, ("width", w), &l, &r);
            for i in 0..300 {
                // The oracle: mid and side of input and output.
                let (mid, side) = ((l[i] + r[i]) / 2.0, (l[i] - r[i]) / 2.0);
                let (omid, oside) = ((y[0][i] + y[1][i]) / 2.0, (y[0][i] - y[1][i]) / 2.0);
                assert!((omid - mid).abs() < 1e-15, "{w} {i}");
                assert!((oside - w * side).abs() < 1e-15, "{w} {i}");
            }
        }
        // Width 0 is mono: both channels the same.
        let y = run(&WIDTH_OP, ("width", 0.0), &l, &r);
        assert_eq!(y[0], y[1]);
    }
}
