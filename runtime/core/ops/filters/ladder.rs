//! `ladder`: the 4-pole transistor ladder lowpass, zero-delay feedback,
//! with the tanh of its input differential pair.
//!
//! **Model.** Four equal one-pole lowpass stages (each the trapezoidal,
//! topology-preserving one-pole: `y = G·(x − s) + s`, `s ← 2·y − s`, with
//! `g = tan(π·fc/rate)` and `G = g/(1 + g)`), fed by
//!
//! ```text
//! u = tanh(drive·in − k·y4),   k = 4·resonance
//! ```
//!
//! where `y4` is the fourth stage's output at the same sample (zero-delay
//! feedback). The stages are linear in `u`, so `y4 = G⁴·u + S` with `S` the
//! stages' response to their states alone, and each sample solves the one
//! equation `f(u) = u − tanh(a − c·u) = 0` (`a = drive·in − k·S`,
//! `c = k·G⁴`). `f` is increasing (`f′ = 1 + c·(1 − tanh²) ≥ 1`) and the
//! root lies in [−1, 1], so the solver keeps that bracket: Newton–Raphson
//! from the previous sample's `u`, a step leaving the bracket replaced by
//! bisection. Under strict it always runs `max_iterations` steps; under repro
//! and live it stops once `|Δu|` is below the profile's `solver_tolerance`,
//! or at `max_iterations`, as `diode_clipper` does. The output is `y4`.
//!
//! **Response.** At a low level the ladder is the bilinear transform
//! (prewarped at the cutoff) of `1/((1 + s)⁴ + k)`: −24 dB/octave above the
//! cutoff, a passband gain of `drive/(1 + k)`, and at `k = 4` (resonance 1)
//! a pole pair on the unit circle at the cutoff, so from resonance 1 up it
//! oscillates at the cutoff by itself, its level held by the tanh.
//!
//! **Oversampling, latency, state.** As the nonlinear operators (see
//! `nonlinear.rs`): the `oversampling` param and `critical`, the half-band
//! path, a latency of 45 samples in every profile and factor. The stage
//! states carry across a snapshot, a restore into another factor and an
//! oversampling edit, each stage's trapezoidal term rescaled to the new step
//! (as the diode clipper's capacitor).

use super::super::nonlinear::{
    limit_drive, max_iterations, FactorRule, SolverParams, CRITICAL_PARAM, DEFAULT_MAX_ITERATIONS,
    MAX_DRIVE, OVERSAMPLING_PARAM,
};
use super::PI;
use crate::dsp::oversample::Oversampler;
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, frequency_lint, number, BuildCtx, Io, Lint, NodeProcessor, NodeState, OpSpec,
    Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;
use std::marker::PhantomData;

const CUTOFF: usize = LADDER.index_of("cutoff");
const RESONANCE: usize = LADDER.index_of("resonance");
const DRIVE: usize = LADDER.index_of("drive");
const OVERSAMPLING: usize = LADDER.index_of("oversampling");
const CRITICAL: usize = LADDER.index_of("critical");
const MAX_ITERATIONS: usize = LADDER.index_of("max_iterations");

/// Lowest design cutoff (Hz).
const MIN_CUTOFF_HZ: f64 = 1.0;
/// Highest design cutoff, as a fraction of the base sample rate.
pub(crate) const MAX_CUTOFF_RATIO: f64 = 0.45;
/// Highest `resonance`.
const MAX_RESONANCE: f64 = 1.25;

/// The cutoff the ladder designs at: within `[1 Hz, 0.45·base_rate]`.
#[inline]
pub(crate) fn ladder_cutoff_hz(cutoff_hz: f64, base_rate: f64) -> f64 {
    let hi = MAX_CUTOFF_RATIO * base_rate;
    if cutoff_hz > hi {
        hi
    } else if cutoff_hz >= MIN_CUTOFF_HZ {
        cutoff_hz
    } else {
        MIN_CUTOFF_HZ
    }
}

/// `G = g/(1 + g)` of one stage, `g = tan(π·fc/rate)`, in f64 with the math
/// policy's coefficient functions (libm under strict).
pub(crate) fn stage_gain<M: Math>(cutoff_hz: f64, base_rate: f64, rate: f64) -> f64 {
    let g = M::coef_tan(PI * ladder_cutoff_hz(cutoff_hz, base_rate) / rate);
    g / (1.0 + g)
}

/// The stage states and the solver.
struct LadderCore<S, M> {
    /// Each stage's trapezoidal state `s`.
    s: [S; 4],
    /// Each stage's last output (for rescaling `s` to another step).
    y: [S; 4],
    /// The last solution, where the next solve starts.
    u: S,
    max_iterations: u32,
    /// Stop once |Δu| is below this; `None`: always `max_iterations`.
    tolerance: Option<S>,
    iterations: u64,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> LadderCore<S, M> {
    fn new(max_iterations: u32, tolerance: Option<S>) -> Self {
        LadderCore {
            s: [S::ZERO; 4],
            y: [S::ZERO; 4],
            u: S::ZERO,
            max_iterations,
            tolerance,
            iterations: 0,
            _m: PhantomData,
        }
    }

    /// One internal-rate sample of input `x` (already times `drive`), with
    /// stage gain `gg` (`G`) and feedback `k`.
    #[inline]
    fn step(&mut self, x: S, gg: S, k: S) -> S {
        let one = S::ONE;
        let half = S::from_f64(0.5);
        let x = if x.is_finite() { x } else { S::ZERO };
        let h = one - gg;
        // The fourth stage's output with u = 0 (the states' response).
        let mut z = h * self.s[0];
        z = gg * z + h * self.s[1];
        z = gg * z + h * self.s[2];
        z = gg * z + h * self.s[3];
        let g4 = (gg * gg) * (gg * gg);
        let a = x - k * z;
        let c = k * g4;
        let (mut lo, mut hi) = (S::ZERO - one, one);
        let mut u = self.u.clamp(lo, hi);
        let mut taken = 0u32;
        while taken < self.max_iterations {
            taken += 1;
            let t = M::tanh(a - c * u);
            let f = u - t;
            if f > S::ZERO {
                hi = u;
            } else if f < S::ZERO {
                lo = u;
            }
            let fp = one + c * (one - t * t);
            let mut next = u - f / fp;
            if !(next >= lo && next <= hi) {
                next = half * (lo + hi);
            }
            let du = next - u;
            u = next;
            if let Some(tol) = self.tolerance {
                if du.abs() < tol {
                    break;
                }
            }
        }
        self.iterations += taken as u64;
        let mut v = u;
        for (s, y) in self.s.iter_mut().zip(&mut self.y) {
            let out = gg * (v - *s) + *s;
            *s = out + out - *s;
            *y = out;
            v = out;
        }
        if !self.s.iter().all(|s| s.is_finite()) {
            self.s = [S::ZERO; 4];
            self.y = [S::ZERO; 4];
            u = S::ZERO;
            v = S::ZERO;
        }
        self.u = u;
        v
    }

    /// The trapezoidal terms `s − y` are `G·(x − s)`, a step's worth:
    /// rescaled from a step of `1/old` to `1/new` of the base period.
    fn rescale(&mut self, old: u32, new: u32) {
        if old != new && old > 0 {
            let r = S::from_f64(old as f64 / new as f64);
            for (s, y) in self.s.iter_mut().zip(&self.y) {
                *s = *y + (*s - *y) * r;
            }
        }
    }

    fn reset(&mut self) {
        self.s = [S::ZERO; 4];
        self.y = [S::ZERO; 4];
        self.u = S::ZERO;
        self.iterations = 0;
    }
}

struct Ladder<S, M> {
    os: Oversampler<S>,
    rule: FactorRule,
    core: LadderCore<S, M>,
    base_rate: f64,
    /// `G` for `key` (cutoff bits, factor).
    gg: S,
    key: (u64, u32),
}

impl<S: Sample, M: Math> Ladder<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64) {
        let key = (cutoff_hz.to_bits(), self.os.factor());
        if key != self.key {
            self.key = key;
            let rate = self.base_rate * self.os.factor() as f64;
            self.gg = S::from_f64(stage_gain::<M>(cutoff_hz, self.base_rate, rate));
        }
    }
}

/// `k = 4·resonance` at precision `S`, NaN → 0.
#[inline]
fn feedback<S: Sample>(resonance: f64) -> S {
    let r = if resonance > MAX_RESONANCE {
        MAX_RESONANCE
    } else if resonance >= 0.0 {
        resonance
    } else {
        0.0
    };
    S::from_f64(4.0 * r)
}

impl<S: Sample, M: Math> NodeProcessor<S> for Ladder<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let cutoff = io.params.get(CUTOFF);
        let resonance = io.params.get(RESONANCE);
        let drive = io.params.get(DRIVE);
        if self.os.needs_prime() {
            // After a restore from another factor: the restored stages run
            // through the new path's priming, and the ladder continues from
            // where the priming ends (see `nonlinear.rs`).
            self.update(cutoff.at(0));
            let (gg, k) = (self.gg, feedback::<S>(resonance.at(0)));
            let mut tmp = LadderCore::<S, M> {
                iterations: 0,
                ..self.core
            };
            self.os.prime(|x| tmp.step(x, gg, k));
            self.core.iterations += tmp.iterations;
            self.core.s = tmp.s;
            self.core.y = tmp.y;
            self.core.u = tmp.u;
        }
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if cutoff.is_const() && resonance.is_const() && drive.is_const() {
            self.update(cutoff.value());
            let d = S::from_f64(limit_drive(drive.value()));
            let (gg, k) = (self.gg, feedback::<S>(resonance.value()));
            let core = &mut self.core;
            for (o, x) in out.iter_mut().zip(x) {
                *o = self.os.process(*x * d, |v| core.step(v, gg, k));
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                self.update(cutoff.at(i));
                let d = S::from_f64(limit_drive(drive.at(i)));
                let (gg, k) = (self.gg, feedback::<S>(resonance.at(i)));
                let core = &mut self.core;
                *o = self.os.process(*x * d, |v| core.step(v, gg, k));
            }
        }
    }

    fn reset(&mut self) {
        self.os.reset();
        self.core.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.os.snapshot(st);
        st.put_samples("s", &self.core.s);
        st.put_samples("y", &self.core.y);
        st.put_sample("u", self.core.u);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let mut s = [S::ZERO; 4];
        let mut y = [S::ZERO; 4];
        st.get_samples("s", &mut s)?;
        st.get_samples("y", &mut y)?;
        let u: S = st.get_sample("u")?;
        self.os.restore(st)?;
        self.core.s = s;
        self.core.y = y;
        self.core.u = u;
        if let Ok(old) = st.get_u64("os_factor") {
            self.core.rescale(old as u32, self.os.factor());
        }
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if self.rule.set(param, value, OVERSAMPLING, CRITICAL) {
            let old = self.os.factor();
            self.os.set_factor(self.rule.factor());
            self.core.rescale(old, self.os.factor());
        } else if param == MAX_ITERATIONS {
            if let Value::Integer(i) = value {
                self.core.max_iterations = max_iterations(*i, self.rule.profile.max_iterations);
            }
        }
    }

    fn latency(&self) -> usize {
        self.os.latency()
    }

    fn iterations(&self) -> u64 {
        self.core.iterations
    }
}

/// The ladder's solver settings, read as the diode clipper reads its own.
const SOLVER: SolverParams = SolverParams {
    oversampling: OVERSAMPLING,
    critical: CRITICAL,
    max_iterations: MAX_ITERATIONS,
};

fn solver_rule(profile: &NodeProfile, values: &[Value]) -> (u32, Option<f64>) {
    SOLVER.rule(profile, values)
}

fn ladder_choices(profile: &NodeProfile, values: &[Value]) -> Vec<(&'static str, String)> {
    SOLVER.choices(profile, values)
}

fn ladder_worst_steps(profile: &NodeProfile, values: &[Value]) -> u64 {
    SOLVER.worst_steps(profile, values)
}

/// A cutoff the ladder cannot design: above `0.45·sr` (the base rate) it
/// designs at that.
fn ladder_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    frequency_lint(
        values,
        CUTOFF,
        "cutoff",
        sample_rate,
        MAX_CUTOFF_RATIO,
        "the ladder is designed at",
        ladder_cutoff_hz,
    )
    .into_iter()
    .collect()
}

/// Nanoseconds per sample (`benches/costs.md`): ≈ 126 ns per solver step
/// under strict, every one of `max_iterations` taken; ≈ 120 under repro
/// and live, which stop at their tolerance after about 3 steps per
/// oversampled sample.
fn ladder_cost(p: &NodeProfile, values: &[Value]) -> f64 {
    let factor = FactorRule::new(p, values, OVERSAMPLING, CRITICAL).factor() as f64;
    let (max_iterations, _) = solver_rule(p, values);
    match p.profile {
        Profile::Strict => 126.0 * max_iterations as f64 * factor,
        Profile::Repro | Profile::Live => 120.0 * (max_iterations as f64).min(3.0) * factor,
    }
}

struct LadderOp;
impl Operator for LadderOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let rule = FactorRule::new(cx.profile, cx.values, OVERSAMPLING, CRITICAL);
        let (max_iterations, tolerance) = solver_rule(cx.profile, cx.values);
        let os = Oversampler::new(rule.factor());
        let factor = os.factor();
        let cutoff = cx.number(CUTOFF);
        let rate = cx.sample_rate * factor as f64;
        Ok(Box::new(Ladder::<S, M> {
            gg: S::from_f64(stage_gain::<M>(cutoff, cx.sample_rate, rate)),
            key: (cutoff.to_bits(), factor),
            os,
            rule,
            core: LadderCore::new(max_iterations, tolerance.map(S::from_f64)),
            base_rate: cx.sample_rate,
        }))
    }
}

pub(crate) static LADDER: OpSpec = OpSpec {
    name: "ladder",
    doc: "4-pole transistor ladder lowpass (−24 dB/octave), zero-delay feedback with the \
          tanh of its input stage, solved per sample; self-oscillates at the cutoff from \
          resonance 1; oversampled like `saturator`.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "cutoff",
            Dimension::Frequency,
            1000.0,
            MIN_CUTOFF_HZ,
            1e5,
            "cutoff frequency; designed within 1 Hz … 0.45·sample rate",
        ),
        number(
            "resonance",
            Dimension::Scalar,
            0.0,
            0.0,
            MAX_RESONANCE,
            "feedback k = 4·resonance; self-oscillates at the cutoff from 1",
        ),
        number(
            "drive",
            Dimension::Amplitude,
            1.0,
            0.0,
            MAX_DRIVE,
            "input gain before the tanh (linear amplitude or dB)",
        ),
        OVERSAMPLING_PARAM,
        CRITICAL_PARAM,
        ParamSpec {
            name: "max_iterations",
            kind: ParamKind::Integer {
                default: DEFAULT_MAX_ITERATIONS,
                min: 1,
                max: 1000,
            },
            doc: "solver steps per sample: all of them under strict, the cap under repro/live \
                  (left at the default, the profile's max_iterations applies)",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: Some(ladder_worst_steps),
    choices: ladder_choices,
    lints: ladder_lints,
    cost: ladder_cost,
    algorithms: Some([
        "1x unless set; solver always max_iterations",
        "2x oversampled; solver to |du| < 1e-6",
        "1x unless critical; solver to |du| < 1e-4",
    ]),
    build: build_any::<LadderOp>,
};

#[cfg(test)]
#[path = "ladder_tests.rs"]
mod tests;
