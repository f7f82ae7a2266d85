//! Nonlinear operators: `saturator` (tanh) and `diode_clipper` (an RC
//! low-pass into an antiparallel diode pair), both oversampled.
//!
//! **Oversampling.** The `oversampling` param is an enum: `"default"` (the
//! profile decides: strict 1×, repro 2×, live 1× unless `critical`, then
//! 2×; a `profile_overrides.oversampling` wins over the profile's rule), or
//! `"1"`, `"2"`, `"4"` to pin the factor in every profile. The factor is
//! `NodeProfile::oversampling_factor(param, critical)`. Filters are the
//! half-band polyphase stages of [`crate::dsp::oversample`].
//!
//! **Latency.** Every node reports [`crate::dsp::oversample::MAX_LATENCY`] (the 4× path's latency,
//! 45 samples at any rate) whatever its factor: the 1× and 2× paths go
//! through a plain integer delay line to match, so switching profile or
//! factor never shifts time.
//!
//! **State.** A snapshot records the oversampling factor; restoring it into a
//! node running another factor keeps time and continues the old path's
//! pending outputs, then re-primes this factor's filters from the recorded
//! base-rate input history (see [`crate::dsp::oversample`]). The diode
//! clipper's capacitor state carries over: the priming run starts from it
//! (its companion term rescaled to the new step), and the solver continues
//! from where the priming ends, aligned with the new path's delay. An edit
//! (or event) of `oversampling` or `critical` switches the factor the same
//! way in place, so the output continues through it.
//!
//! **Saturator.** `y = tanh(drive·x)` with `M::tanh` at the oversampled rate
//! (`drive` is applied at the base rate, before the upsampler).
//!
//! **Diode clipper.** With `u = drive·x` the input voltage (upsampled),
//! `a = 1/(RC) = 2π·cutoff` (C = 10 nF, so R = 1/(2π·cutoff·C)), and the
//! diode pair `Is = 2.52 nA`, `n = 1.752`, `Vt = 25.85 mV`:
//!
//! ```text
//! dv/dt = f(v, u) = a·(u − v) − (2·Is/C)·sinh(v/(n·Vt))
//! ```
//!
//! discretized with the trapezoidal rule at the internal rate (step T) in
//! its companion form: with `s = v[n−1] + (T/2)·f(v[n−1], u[n−1])`, solve
//! `g(v) = v − (T/2)·f(v, u[n]) − s = 0`, then `s ← 2·v − s`. Newton–Raphson
//! per sample from the previous `v`, each step clamped to `|Δv| ≤ 2·n·Vt`;
//! sinh and cosh come from one `M::exp` (argument clamped to ±80, far beyond
//! any reachable voltage, so f32 never overflows). Under strict the solver
//! always runs exactly `max_iterations` steps (no early exit); under repro
//! and live it stops once `|Δv| <` the profile's `solver_tolerance` (1e-6 /
//! 1e-4) or at `max_iterations`. The output is `v` in volts.
//!
//! `max_iterations`: the node's param when it differs from its default (32),
//! else the profile's `max_iterations` (default 32). Newton steps taken are
//! counted and exposed through [`NodeProcessor::iterations`].

use super::{
    build_any, by_profile, frequency_lint, no_lints, number, BuildCtx, Io, Lint, NodeProcessor,
    NodeState, OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::dsp::oversample::Oversampler;
use crate::dsp::{Math, Sample};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;
use std::marker::PhantomData;

/// Choices of the `oversampling` param.
pub(crate) const OVERSAMPLING_CHOICES: &[&str] = &["default", "1", "2", "4"];

/// The factor an `oversampling` choice pins (None: the profile decides).
fn pinned_factor(choice: usize) -> Option<u32> {
    match choice {
        1 => Some(1),
        2 => Some(2),
        3 => Some(4),
        _ => None,
    }
}

/// How a node picks its oversampling factor.
#[derive(Clone, Debug)]
pub(crate) struct FactorRule {
    pub(crate) profile: NodeProfile,
    choice: usize,
    critical: bool,
}

impl FactorRule {
    /// The rule a node builds with; `check` asks the same rule.
    pub(crate) fn new(
        profile: &NodeProfile,
        values: &[Value],
        os_param: usize,
        critical_param: usize,
    ) -> FactorRule {
        let choice = match values.get(os_param) {
            Some(Value::Enum(i)) if *i < OVERSAMPLING_CHOICES.len() => *i,
            _ => 0,
        };
        let critical = matches!(values.get(critical_param), Some(Value::Bool(true)));
        FactorRule {
            profile: profile.clone(),
            choice,
            critical,
        }
    }

    /// `check`'s `os=…` entry.
    pub(crate) fn choice(&self) -> (&'static str, String) {
        ("os", format!("{}x", self.factor()))
    }

    pub(crate) fn factor(&self) -> u32 {
        self.profile
            .oversampling_factor(pinned_factor(self.choice), self.critical)
    }

    /// Applies a discrete param event; true when it was one of ours.
    pub(crate) fn set(
        &mut self,
        param: usize,
        value: &Value,
        os_param: usize,
        critical_param: usize,
    ) -> bool {
        match value {
            Value::Enum(i) if param == os_param && *i < OVERSAMPLING_CHOICES.len() => {
                self.choice = *i;
                true
            }
            Value::Bool(b) if param == critical_param => {
                self.critical = *b;
                true
            }
            _ => false,
        }
    }
}

pub(crate) const OVERSAMPLING_PARAM: ParamSpec = ParamSpec {
    name: "oversampling",
    kind: ParamKind::Enum {
        choices: OVERSAMPLING_CHOICES,
        default: "default",
    },
    doc: "oversampling factor: \"default\" (strict 1×, repro 2×, live 1× unless critical) or \"1\", \"2\", \"4\" in every profile",
    settable_by_events: false,
};

pub(crate) const CRITICAL_PARAM: ParamSpec = ParamSpec {
    name: "critical",
    kind: ParamKind::Bool { default: false },
    doc: "under live, oversample 2× by default like repro",
    settable_by_events: false,
};

/// Largest linear drive.
pub(crate) const MAX_DRIVE: f64 = 1e4;

/// `drive` clamped to `[0, MAX_DRIVE]`, NaN → 0.
#[inline]
pub(crate) fn limit_drive(d: f64) -> f64 {
    if d > MAX_DRIVE {
        MAX_DRIVE
    } else if d >= 0.0 {
        d
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------
// saturator

const SAT_DRIVE: usize = SATURATOR.index_of("drive");
const SAT_OVERSAMPLING: usize = SATURATOR.index_of("oversampling");
const SAT_CRITICAL: usize = SATURATOR.index_of("critical");

struct Saturator<S, M> {
    os: Oversampler<S>,
    rule: FactorRule,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Saturator<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let drive = io.params.get(SAT_DRIVE);
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if drive.is_const() {
            let d = S::from_f64(limit_drive(drive.value()));
            for (o, x) in out.iter_mut().zip(x) {
                *o = self.os.process(*x * d, M::tanh);
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                let d = S::from_f64(limit_drive(drive.at(i)));
                *o = self.os.process(*x * d, M::tanh);
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
        if self.rule.set(param, value, SAT_OVERSAMPLING, SAT_CRITICAL) {
            self.os.set_factor(self.rule.factor());
        }
    }

    fn latency(&self) -> usize {
        self.os.latency()
    }
}

struct SaturatorOp;

/// `check`'s view of a node: its oversampling factor.
fn saturator_choices(profile: &NodeProfile, values: &[Value]) -> Vec<(&'static str, String)> {
    vec![FactorRule::new(profile, values, SAT_OVERSAMPLING, SAT_CRITICAL).choice()]
}
impl Operator for SaturatorOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let rule = FactorRule::new(cx.profile, cx.values, SAT_OVERSAMPLING, SAT_CRITICAL);
        Ok(Box::new(Saturator::<S, M> {
            os: Oversampler::new(rule.factor()),
            rule,
            _m: PhantomData,
        }))
    }
}

/// `saturator`: oversampled tanh.
/// Nanoseconds per sample (`benches/costs.md`): at 1× ≈ 63 under strict
/// (libm `tanh`), ≈ 16 under repro and live; oversampled, the half-band
/// filters dominate, ≈ 88 per oversampled sample.
fn saturator_cost(p: &NodeProfile, values: &[Value]) -> f64 {
    match FactorRule::new(p, values, SAT_OVERSAMPLING, SAT_CRITICAL).factor() {
        1 => by_profile(p, [63.0, 16.0, 16.0]),
        f => 88.0 * f as f64,
    }
}

pub(crate) static SATURATOR: OpSpec = OpSpec {
    name: "saturator",
    doc: "tanh(drive·in), oversampled with linear-phase half-band filters; \
          latency is the 4× path's in every profile.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
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
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: saturator_choices,
    lints: no_lints,
    cost: saturator_cost,
    algorithms: Some([
        "1x unless set",
        "2x oversampled",
        "1x unless critical (then 2x)",
    ]),
    build: build_any::<SaturatorOp>,
};

// ---------------------------------------------------------------------------
// diode_clipper

const DC_CUTOFF: usize = DIODE_CLIPPER.index_of("cutoff");
const DC_DRIVE: usize = DIODE_CLIPPER.index_of("drive");
const DC_OVERSAMPLING: usize = DIODE_CLIPPER.index_of("oversampling");
const DC_CRITICAL: usize = DIODE_CLIPPER.index_of("critical");
const DC_MAX_ITERATIONS: usize = DIODE_CLIPPER.index_of("max_iterations");

/// Diode saturation current (A).
pub(crate) const DIODE_IS: f64 = 2.52e-9;
/// Diode ideality factor.
pub(crate) const DIODE_N: f64 = 1.752;
/// Thermal voltage (V).
pub(crate) const DIODE_VT: f64 = 25.85e-3;
/// Capacitance (F).
pub(crate) const CAPACITANCE: f64 = 10e-9;
/// Largest |v/(n·Vt)| passed to exp.
const MAX_EXP_ARG: f64 = 80.0;
/// Default of the `max_iterations` param.
pub(crate) const DEFAULT_MAX_ITERATIONS: i64 = 32;
/// Lowest cutoff (Hz).
const MIN_CUTOFF_HZ: f64 = 1.0;
/// Highest cutoff as a fraction of the base sample rate.
const MAX_CUTOFF_RATIO: f64 = 0.45;

/// The RC corner the clipper designs at: `cutoff_hz` within
/// `[MIN_CUTOFF_HZ, MAX_CUTOFF_RATIO·base_rate]`.
#[inline]
fn corner_hz(cutoff_hz: f64, base_rate: f64) -> f64 {
    let hi = MAX_CUTOFF_RATIO * base_rate;
    if cutoff_hz > hi {
        hi
    } else if cutoff_hz >= MIN_CUTOFF_HZ {
        cutoff_hz
    } else {
        MIN_CUTOFF_HZ
    }
}

/// Per-sample solver constants at precision `S` for one cutoff and rate.
#[derive(Clone, Copy, Debug)]
struct DiodeCoefs<S> {
    /// `a·T/2`.
    at2: S,
    /// `1 + a·T/2`.
    k1: S,
    /// `(T/2)·(2·Is/C)`.
    kb: S,
    /// `kb / (n·Vt)`.
    kc: S,
}

impl<S: Sample> DiodeCoefs<S> {
    /// `cutoff_hz` (clamped), at the internal rate `rate` (Hz), designed in f64.
    fn new(cutoff_hz: f64, base_rate: f64, rate: f64) -> DiodeCoefs<S> {
        let fc = corner_hz(cutoff_hz, base_rate);
        let half_t = 0.5 / rate;
        let a = 2.0 * core::f64::consts::PI * fc;
        let at2 = a * half_t;
        let kb = half_t * (2.0 * DIODE_IS / CAPACITANCE);
        DiodeCoefs {
            at2: S::from_f64(at2),
            k1: S::from_f64(1.0 + at2),
            kb: S::from_f64(kb),
            kc: S::from_f64(kb / (DIODE_N * DIODE_VT)),
        }
    }
}

/// The trapezoidal-rule state and the Newton solver.
#[derive(Clone, Debug)]
struct DiodeSolver<S, M> {
    /// The last solution.
    v: S,
    /// `v[n−1] + (T/2)·f(v[n−1], u[n−1])`.
    s: S,
    /// Iterations per solve (the cap).
    max_iterations: u32,
    /// Stop once |Δv| is below this; `None`: always `max_iterations`.
    tolerance: Option<S>,
    /// Newton steps taken since build or reset.
    iterations: u64,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> DiodeSolver<S, M> {
    /// One internal-rate sample with input voltage `u`.
    #[inline]
    fn step(&mut self, u: S, c: &DiodeCoefs<S>) -> S {
        let inv_nvt = S::from_f64(1.0 / (DIODE_N * DIODE_VT));
        let step_limit = S::from_f64(2.0 * DIODE_N * DIODE_VT);
        let arg_limit = S::from_f64(MAX_EXP_ARG);
        let half = S::from_f64(0.5);
        let u = if u.is_finite() { u } else { S::ZERO };
        // g(v) = k1·v + kb·sinh(v/nVt) − (a·T/2·u + s)
        let k0 = c.at2 * u + self.s;
        let mut v = self.v;
        let mut taken = 0u32;
        while taken < self.max_iterations {
            taken += 1;
            let e = M::exp((v * inv_nvt).clamp(-arg_limit, arg_limit));
            let ei = S::ONE / e;
            let sh = half * (e - ei);
            let ch = half * (e + ei);
            let g = c.k1 * v + c.kb * sh - k0;
            let gp = c.k1 + c.kc * ch;
            let dv = (S::ZERO - g / gp).clamp(S::ZERO - step_limit, step_limit);
            v += dv;
            if let Some(tol) = self.tolerance {
                if dv.abs() < tol {
                    break;
                }
            }
        }
        self.iterations += taken as u64;
        if !v.is_finite() {
            v = S::ZERO;
        }
        self.s = v + v - self.s;
        if !self.s.is_finite() {
            self.s = S::ZERO;
        }
        self.v = v;
        v
    }

    fn reset(&mut self) {
        self.v = S::ZERO;
        self.s = S::ZERO;
        self.iterations = 0;
    }
}

struct DiodeClipper<S, M> {
    os: Oversampler<S>,
    rule: FactorRule,
    solver: DiodeSolver<S, M>,
    base_rate: f64,
    /// Coefficients for `key` (cutoff, factor).
    coefs: DiodeCoefs<S>,
    key: (u64, u32),
}

impl<S: Sample, M: Math> DiodeClipper<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64) {
        let key = (cutoff_hz.to_bits(), self.os.factor());
        if key != self.key {
            self.key = key;
            let rate = self.base_rate * self.os.factor() as f64;
            self.coefs = DiodeCoefs::new(cutoff_hz, self.base_rate, rate);
        }
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for DiodeClipper<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let cutoff = io.params.get(DC_CUTOFF);
        let drive = io.params.get(DC_DRIVE);
        if self.os.needs_prime() {
            // After a restore from another factor: run the restored solver
            // state through the new path's priming. The other path fed its
            // solver with the input delayed by another upsampler latency, so
            // the capacitor state is carried into the priming (which starts
            // from it) and the solver takes the state the priming ends in,
            // time-aligned with this path.
            self.update(if cutoff.is_const() {
                cutoff.value()
            } else {
                cutoff.at(0)
            });
            let c = self.coefs;
            let mut tmp = DiodeSolver::<S, M> {
                v: self.solver.v,
                s: self.solver.s,
                max_iterations: self.solver.max_iterations,
                tolerance: self.solver.tolerance,
                iterations: 0,
                _m: PhantomData,
            };
            self.os.prime(|u| tmp.step(u, &c));
            self.solver.v = tmp.v;
            self.solver.s = tmp.s;
            self.solver.iterations += tmp.iterations;
        }
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if cutoff.is_const() && drive.is_const() {
            self.update(cutoff.value());
            let d = S::from_f64(limit_drive(drive.value()));
            let c = self.coefs;
            let solver = &mut self.solver;
            for (o, x) in out.iter_mut().zip(x) {
                *o = self.os.process(*x * d, |u| solver.step(u, &c));
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                self.update(cutoff.at(i));
                let d = S::from_f64(limit_drive(drive.at(i)));
                let c = self.coefs;
                let solver = &mut self.solver;
                *o = self.os.process(*x * d, |u| solver.step(u, &c));
            }
        }
    }

    fn reset(&mut self) {
        self.os.reset();
        self.solver.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.os.snapshot(st);
        st.put_sample("v", self.solver.v);
        st.put_sample("s", self.solver.s);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let v: S = st.get_sample("v")?;
        let mut s: S = st.get_sample("s")?;
        self.os.restore(st)?;
        // `s − v = (T/2)·f(v, u)`: from another factor, rescale it to this
        // factor's step so the capacitor state carries over.
        if let Ok(old) = st.get_u64("os_factor") {
            let new = self.os.factor() as u64;
            if old != new && old > 0 {
                s = v + (s - v) * S::from_f64(old as f64 / new as f64);
            }
        }
        self.solver.v = v;
        self.solver.s = s;
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if self.rule.set(param, value, DC_OVERSAMPLING, DC_CRITICAL) {
            let old = self.os.factor();
            self.os.set_factor(self.rule.factor());
            let new = self.os.factor();
            // As across a restore: the capacitor state carries, its
            // companion term rescaled to the new step.
            if old != new {
                let (v, s) = (self.solver.v, self.solver.s);
                self.solver.s = v + (s - v) * S::from_f64(old as f64 / new as f64);
            }
        } else if param == DC_MAX_ITERATIONS {
            if let Value::Integer(i) = value {
                self.solver.max_iterations = max_iterations(*i, self.rule.profile.max_iterations);
            }
        }
    }

    fn latency(&self) -> usize {
        self.os.latency()
    }

    fn iterations(&self) -> u64 {
        self.solver.iterations
    }
}

/// The effective iteration cap: the param unless it is the default, else
/// the profile's `max_iterations`.
pub(crate) fn max_iterations(param: i64, profile: u32) -> u32 {
    let n = if param == DEFAULT_MAX_ITERATIONS {
        profile as i64
    } else {
        param
    };
    n.clamp(1, 10_000) as u32
}

/// Where an oversampled solver's settings sit among its operator's
/// params: how every such operator (`diode_clipper`, `ladder`) reads its
/// iteration cap, tolerance and factor, and what `check` says of them.
#[derive(Clone, Copy)]
pub(crate) struct SolverParams {
    pub(crate) oversampling: usize,
    pub(crate) critical: usize,
    pub(crate) max_iterations: usize,
}

impl SolverParams {
    /// The solver's iteration cap and early-exit tolerance for a node
    /// (`None`: always the cap). Strict never exits early, whatever the
    /// overrides say.
    pub(crate) fn rule(self, profile: &NodeProfile, values: &[Value]) -> (u32, Option<f64>) {
        let param = match values.get(self.max_iterations) {
            Some(Value::Integer(i)) => *i,
            _ => DEFAULT_MAX_ITERATIONS,
        };
        let tolerance = match profile.profile {
            Profile::Strict => None,
            _ => profile.solver_tolerance,
        };
        (max_iterations(param, profile.max_iterations), tolerance)
    }

    /// `check`'s view of a node: its oversampling factor and how its
    /// solver stops (after a fixed count, or at a tolerance).
    pub(crate) fn choices(
        self,
        profile: &NodeProfile,
        values: &[Value],
    ) -> Vec<(&'static str, String)> {
        let os = FactorRule::new(profile, values, self.oversampling, self.critical).choice();
        let solver = match self.rule(profile, values) {
            (n, None) => ("newton_iterations", n.to_string()),
            (_, Some(t)) => ("newton_tol", format!("{t:e}")),
        };
        vec![os, solver]
    }

    /// Every solver step the node may take, at every oversampled sample.
    pub(crate) fn worst_steps(self, profile: &NodeProfile, values: &[Value]) -> u64 {
        let factor = FactorRule::new(profile, values, self.oversampling, self.critical).factor();
        self.rule(profile, values).0 as u64 * factor as u64
    }
}

/// The diode clipper's solver settings.
const DIODE_SOLVER: SolverParams = SolverParams {
    oversampling: DC_OVERSAMPLING,
    critical: DC_CRITICAL,
    max_iterations: DC_MAX_ITERATIONS,
};

fn solver_rule(profile: &NodeProfile, values: &[Value]) -> (u32, Option<f64>) {
    DIODE_SOLVER.rule(profile, values)
}

fn diode_choices(profile: &NodeProfile, values: &[Value]) -> Vec<(&'static str, String)> {
    DIODE_SOLVER.choices(profile, values)
}

fn diode_worst_steps(profile: &NodeProfile, values: &[Value]) -> u64 {
    DIODE_SOLVER.worst_steps(profile, values)
}

struct DiodeClipperOp;
impl Operator for DiodeClipperOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let rule = FactorRule::new(cx.profile, cx.values, DC_OVERSAMPLING, DC_CRITICAL);
        let (max_iterations, tolerance) = solver_rule(cx.profile, cx.values);
        let solver = DiodeSolver::<S, M> {
            v: S::ZERO,
            s: S::ZERO,
            max_iterations,
            tolerance: tolerance.map(S::from_f64),
            iterations: 0,
            _m: PhantomData,
        };
        let os = Oversampler::new(rule.factor());
        let factor = os.factor();
        let cutoff = cx.number(DC_CUTOFF);
        Ok(Box::new(DiodeClipper::<S, M> {
            coefs: DiodeCoefs::new(cutoff, cx.sample_rate, cx.sample_rate * factor as f64),
            key: (cutoff.to_bits(), factor),
            os,
            rule,
            solver,
            base_rate: cx.sample_rate,
        }))
    }
}

/// `diode_clipper`: RC low-pass into an antiparallel diode pair.
/// An RC corner the clipper cannot design: above `0.45·sr` (the base rate,
/// whatever the oversampling) it designs at that.
fn diode_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    frequency_lint(
        values,
        DC_CUTOFF,
        "cutoff",
        sample_rate,
        MAX_CUTOFF_RATIO,
        "the RC corner is designed at",
        corner_hz,
    )
    .into_iter()
    .collect()
}

/// Nanoseconds per sample (`benches/costs.md`): each Newton step costs
/// ≈ 180 ns under strict (libm `exp`, every one of `max_iterations` taken)
/// and ≈ 145 ns under repro and live, which stop at their tolerance after
/// ≈ 2.5 steps per oversampled sample on a typical signal.
fn diode_cost(p: &NodeProfile, values: &[Value]) -> f64 {
    let factor = FactorRule::new(p, values, DC_OVERSAMPLING, DC_CRITICAL).factor() as f64;
    let (max_iterations, _) = solver_rule(p, values);
    match p.profile {
        Profile::Strict => 180.0 * max_iterations as f64 * factor,
        Profile::Repro | Profile::Live => 145.0 * (max_iterations as f64).min(2.5) * factor,
    }
}

pub(crate) static DIODE_CLIPPER: OpSpec = OpSpec {
    name: "diode_clipper",
    doc: "RC low-pass (C = 10 nF, R from `cutoff`) into an antiparallel diode pair; \
          trapezoidal rule, damped Newton–Raphson per sample; input voltage = drive·in, \
          output = capacitor voltage; oversampled like `saturator`.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "cutoff",
            Dimension::Frequency,
            2000.0,
            MIN_CUTOFF_HZ,
            1e5,
            "RC corner frequency 1/(2πRC); designed within 1 Hz … 0.45·sample rate",
        ),
        number(
            "drive",
            Dimension::Amplitude,
            1.0,
            0.0,
            MAX_DRIVE,
            "input volts per unit of signal (linear amplitude or dB)",
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
            doc:
                "Newton iterations per sample: all of them under strict, the cap under repro/live \
                  (left at the default, the profile's max_iterations applies)",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: Some(diode_worst_steps),
    choices: diode_choices,
    lints: diode_lints,
    cost: diode_cost,
    algorithms: Some([
        "1x unless set; Newton always max_iterations",
        "2x oversampled; Newton to |dv| < 1e-6",
        "1x unless critical; Newton to |dv| < 1e-4",
    ]),
    build: build_any::<DiodeClipperOp>,
};

#[cfg(test)]
#[path = "nonlinear_tests.rs"]
mod tests;
