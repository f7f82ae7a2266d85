//! `shaper`: a waveshaper by a named curve, oversampled as `saturator` is.
//!
//! Per sample, with `u = drive·in` (applied at the base rate, before the
//! upsampler) and the curve evaluated at the oversampled rate:
//!
//! ```text
//! tanh       y = tanh(u)                        (the math policy's tanh)
//! hard_clip  y = clamp(u, −1, 1)
//! soft_clip  y = 1.5·u − 0.5·u³ for |u| ≤ 1, else sign(u)   (cubic, slope 0 at ±1)
//! chebyshev  y = T_order(clamp(u, −1, 1))       (T₀ = 1, T₁ = x, Tₖ₊₁ = 2x·Tₖ − Tₖ₋₁)
//! fold       y = u reflected into [−1, 1]:  t = (u + 1) mod 4,  y = t − 1 if t < 2 else 3 − t
//! out        = level · y
//! ```
//!
//! `chebyshev` turns a full-scale sine into its `order`-th harmonic alone
//! (Tₙ(cos θ) = cos nθ), the classic harmonic generator; a smaller input
//! gives a blend of lower harmonics. Every curve stays within ±1 (a NaN
//! input reads as 0, an infinite one as ±1e30 first), so the output's
//! magnitude is at most `level` ≤ 1 times the decimating filters' gain
//! for the worst pattern (the product of the half-band stages' absolute
//! tap sums, ≈ 2.3).
//!
//! Oversampling, latency and state are `saturator`'s (see
//! [`super::nonlinear`]): the `oversampling` enum and `critical` flag pick
//! the factor per profile, the node always reports the 4× path's latency,
//! and a factor change (edit, event, or a restore from another factor)
//! keeps time.

use super::nonlinear::{limit_drive, FactorRule, CRITICAL_PARAM, MAX_DRIVE, OVERSAMPLING_PARAM};
use super::{
    build_any, by_profile, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState, OpSpec,
    Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::dsp::oversample::Oversampler;
use crate::dsp::{Math, Sample};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;
use std::marker::PhantomData;

const CURVE: usize = SHAPER.index_of("curve");
const DRIVE: usize = SHAPER.index_of("drive");
const ORDER: usize = SHAPER.index_of("order");
const LEVEL: usize = SHAPER.index_of("level");
const OVERSAMPLING: usize = SHAPER.index_of("oversampling");
const CRITICAL: usize = SHAPER.index_of("critical");

/// The `curve` choices, in index order.
pub(crate) const CURVES: &[&str] = &["tanh", "hard_clip", "soft_clip", "chebyshev", "fold"];

/// The highest Chebyshev order.
const MAX_ORDER: i64 = 32;

/// A curve as the node runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Curve {
    Tanh,
    HardClip,
    SoftClip,
    Chebyshev(u32),
    Fold,
}

impl Curve {
    fn new(choice: usize, order: i64) -> Curve {
        match choice {
            1 => Curve::HardClip,
            2 => Curve::SoftClip,
            3 => Curve::Chebyshev(order.clamp(0, MAX_ORDER) as u32),
            4 => Curve::Fold,
            _ => Curve::Tanh,
        }
    }

    /// The curve at `u` (see the module docs).
    #[inline]
    fn apply<S: Sample, M: Math>(self, u: S) -> S {
        let big = S::from_f64(1e30);
        let u = if u.is_finite() {
            u
        } else if u > S::ZERO {
            big
        } else if u < S::ZERO {
            S::ZERO - big
        } else {
            S::ZERO
        };
        let one = S::ONE;
        match self {
            Curve::Tanh => M::tanh(u),
            Curve::HardClip => u.clamp(S::ZERO - one, one),
            Curve::SoftClip => {
                if u >= one {
                    one
                } else if u <= S::ZERO - one {
                    S::ZERO - one
                } else {
                    S::from_f64(1.5) * u - S::from_f64(0.5) * u * u * u
                }
            }
            Curve::Chebyshev(n) => {
                let x = u.clamp(S::ZERO - one, one);
                let (mut prev, mut t) = (one, x);
                if n == 0 {
                    return one;
                }
                let two_x = x + x;
                for _ in 1..n {
                    let next = two_x * t - prev;
                    prev = t;
                    t = next;
                }
                t
            }
            Curve::Fold => {
                let four = S::from_f64(4.0);
                let v = u + one;
                let mut t = v - four * (v / four).floor();
                // Rounding may land `t` on 4 (or a hair outside) for a
                // large `u`: fold it back into [0, 4].
                t = t.clamp(S::ZERO, four);
                let two = S::from_f64(2.0);
                if t < two {
                    t - one
                } else {
                    S::from_f64(3.0) - t
                }
            }
        }
    }
}

struct Shaper<S, M> {
    os: Oversampler<S>,
    rule: FactorRule,
    curve: Curve,
    /// The curve's enum index and the order, as last set.
    choice: usize,
    order: i64,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Shaper<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let drive = io.params.get(DRIVE);
        let level = io.params.get(LEVEL);
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        let curve = self.curve;
        if drive.is_const() && level.is_const() {
            let d = S::from_f64(limit_drive(drive.value()));
            let g = S::from_f64(level.value());
            for (o, x) in out.iter_mut().zip(x) {
                *o = g * self.os.process(*x * d, |u| curve.apply::<S, M>(u));
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                let d = S::from_f64(limit_drive(drive.at(i)));
                let g = S::from_f64(level.at(i));
                *o = g * self.os.process(*x * d, |u| curve.apply::<S, M>(u));
            }
        }
    }

    fn reset(&mut self) {
        self.os.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.os.snapshot(st);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.os.restore(st)
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if self.rule.set(param, value, OVERSAMPLING, CRITICAL) {
            self.os.set_factor(self.rule.factor());
            return;
        }
        match (param, value) {
            (CURVE, Value::Enum(i)) if *i < CURVES.len() => self.choice = *i,
            (ORDER, Value::Integer(k)) => self.order = *k,
            _ => return,
        }
        self.curve = Curve::new(self.choice, self.order);
    }

    fn latency(&self) -> usize {
        self.os.latency()
    }
}

struct ShaperOp;
impl Operator for ShaperOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let rule = FactorRule::new(cx.profile, cx.values, OVERSAMPLING, CRITICAL);
        let choice = match cx.values.get(CURVE) {
            Some(Value::Enum(i)) => *i,
            _ => 0,
        };
        let order = match cx.values.get(ORDER) {
            Some(Value::Integer(k)) => *k,
            _ => 3,
        };
        Ok(Box::new(Shaper::<S, M> {
            os: Oversampler::new(rule.factor()),
            rule,
            curve: Curve::new(choice, order),
            choice,
            order,
            _m: PhantomData,
        }))
    }
}

/// `check`'s view of a node: its oversampling factor.
fn shaper_choices(profile: &NodeProfile, values: &[Value]) -> Vec<(&'static str, String)> {
    vec![FactorRule::new(profile, values, OVERSAMPLING, CRITICAL).choice()]
}

/// Nanoseconds per sample (`benches/costs.md`): at 1× ≈ 64 under strict
/// (the `tanh` curve), ≈ 16 under repro and live; oversampled, the
/// half-band filters dominate, ≈ 100 per oversampled sample.
fn shaper_cost(p: &NodeProfile, values: &[Value]) -> f64 {
    match FactorRule::new(p, values, OVERSAMPLING, CRITICAL).factor() {
        1 => by_profile(p, [64.0, 16.0, 16.0]),
        f => 100.0 * f as f64,
    }
}

pub(crate) static SHAPER: OpSpec = OpSpec {
    name: "shaper",
    doc: "Waveshaper: level · curve(drive·in), the curve one of tanh, hard_clip, soft_clip \
          (cubic 1.5u − 0.5u³, flat beyond ±1), chebyshev (T_order of the input clipped to \
          ±1: a full-scale sine becomes its order-th harmonic) and fold (reflected into ±1, \
          a wavefolder); oversampled like `saturator`, latency the 4× path's in every profile.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        ParamSpec {
            name: "curve",
            kind: ParamKind::Enum {
                choices: CURVES,
                default: "tanh",
            },
            doc: "tanh | hard_clip | soft_clip | chebyshev | fold",
            settable_by_events: false,
        },
        number(
            "drive",
            Dimension::Amplitude,
            1.0,
            0.0,
            MAX_DRIVE,
            "input gain before the curve (linear amplitude or dB)",
        ),
        ParamSpec {
            name: "order",
            kind: ParamKind::Integer {
                default: 3,
                min: 0,
                max: MAX_ORDER,
            },
            doc: "the Chebyshev polynomial's order (the harmonic a full-scale sine becomes)",
            settable_by_events: false,
        },
        number(
            "level",
            Dimension::Amplitude,
            1.0,
            0.0,
            1.0,
            "output gain after the curve (linear amplitude or dB, at most 1 = 0 dB)",
        ),
        OVERSAMPLING_PARAM,
        CRITICAL_PARAM,
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: shaper_choices,
    lints: no_lints,
    cost: shaper_cost,
    algorithms: Some([
        "1x unless set",
        "2x oversampled",
        "1x unless critical (then 2x)",
    ]),
    build: build_any::<ShaperOp>,
};

#[cfg(test)]
#[path = "shaper_tests.rs"]
mod tests;
