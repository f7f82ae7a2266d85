//! Filters: `biquad` (RBJ cookbook), `onepole` and `svf` (Simper/Cytomic
//! topology-preserving state-variable filter).
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

use super::{
    build_any, by_profile, frequency_lint, no_choices, number, BuildCtx, Io, Lint, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, Processor, StateError, Value,
};
use crate::dsp::{Math, MathKind, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const PI: f64 = core::f64::consts::PI;
const TWO_PI: f64 = 2.0 * PI;

/// Lowest cutoff used for design (Hz); keeps `w0 > 0` for the biquad and svf.
const MIN_CUTOFF_HZ: f64 = 1e-3;
/// Highest cutoff used for design, as a fraction of the sample rate; keeps
/// `tan(π·fc/sr)` finite and the poles away from Nyquist.
const MAX_CUTOFF_RATIO: f64 = 0.49;
const MIN_Q: f64 = 0.01;
const MAX_Q: f64 = 1000.0;
/// Smallest linear gain the peak filter designs with (−240 dB); 0 would
/// divide by zero in `α/A`.
const MIN_PEAK_GAIN: f64 = 1e-12;
const MAX_PEAK_GAIN: f64 = 1e6;

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
fn design_cutoff_hz(cutoff_hz: f64, sample_rate: f64) -> f64 {
    limit(cutoff_hz, MIN_CUTOFF_HZ, MAX_CUTOFF_RATIO * sample_rate)
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

// ---------------------------------------------------------------------------
// biquad

const BIQUAD_MODES: &[&str] = &[
    "lowpass", "highpass", "bandpass", "notch", "peak", "allpass",
];

/// The response of a [`Biquad`], in the order of [`BIQUAD_MODES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BiquadMode {
    Lowpass,
    Highpass,
    /// Constant 0 dB peak gain.
    Bandpass,
    Notch,
    Peak,
    Allpass,
}

impl BiquadMode {
    fn from_index(i: usize) -> BiquadMode {
        match i {
            1 => BiquadMode::Highpass,
            2 => BiquadMode::Bandpass,
            3 => BiquadMode::Notch,
            4 => BiquadMode::Peak,
            5 => BiquadMode::Allpass,
            _ => BiquadMode::Lowpass,
        }
    }
}

const BQ_MODE: usize = BIQUAD.index_of("mode");
const BQ_CUTOFF: usize = BIQUAD.index_of("cutoff");
const BQ_Q: usize = BIQUAD.index_of("q");
const BQ_GAIN: usize = BIQUAD.index_of("gain");

/// Normalised biquad coefficients `[b0, b1, b2, a1, a2]` (a0 = 1).
type BiquadCoefs = [f64; 5];

/// RBJ Audio-EQ-Cookbook design, normalised by `a0`, in f64 with the math
/// policy `M`. `gain` is the peak filter's linear gain at the cutoff
/// (A = √gain = 10^(dB/40)); other modes ignore it.
fn biquad_design<M: Math>(
    mode: BiquadMode,
    cutoff_hz: f64,
    q: f64,
    gain: f64,
    sample_rate: f64,
) -> BiquadCoefs {
    let w0 = TWO_PI * design_cutoff_hz(cutoff_hz, sample_rate) / sample_rate;
    let q = limit(q, MIN_Q, MAX_Q);
    let cos_w0 = M::coef_cos(w0);
    let sin_w0 = M::coef_sin(w0);
    let alpha = sin_w0 / (2.0 * q);
    let minus_two_cos = -2.0 * cos_w0;
    // [b0, b1, b2, a0, a1, a2]
    let raw = match mode {
        BiquadMode::Lowpass => {
            let b1 = 1.0 - cos_w0;
            let b0 = b1 / 2.0;
            [b0, b1, b0, 1.0 + alpha, minus_two_cos, 1.0 - alpha]
        }
        BiquadMode::Highpass => {
            let one_plus_cos = 1.0 + cos_w0;
            let b0 = one_plus_cos / 2.0;
            [
                b0,
                -one_plus_cos,
                b0,
                1.0 + alpha,
                minus_two_cos,
                1.0 - alpha,
            ]
        }
        BiquadMode::Bandpass => [alpha, 0.0, -alpha, 1.0 + alpha, minus_two_cos, 1.0 - alpha],
        BiquadMode::Notch => [
            1.0,
            minus_two_cos,
            1.0,
            1.0 + alpha,
            minus_two_cos,
            1.0 - alpha,
        ],
        BiquadMode::Peak => {
            let a = limit(gain, MIN_PEAK_GAIN, MAX_PEAK_GAIN).sqrt();
            let alpha_times_a = alpha * a;
            let alpha_over_a = alpha / a;
            [
                1.0 + alpha_times_a,
                minus_two_cos,
                1.0 - alpha_times_a,
                1.0 + alpha_over_a,
                minus_two_cos,
                1.0 - alpha_over_a,
            ]
        }
        BiquadMode::Allpass => [
            1.0 - alpha,
            minus_two_cos,
            1.0 + alpha,
            1.0 + alpha,
            minus_two_cos,
            1.0 - alpha,
        ],
    };
    let a0 = raw[3];
    [
        raw[0] / a0,
        raw[1] / a0,
        raw[2] / a0,
        raw[4] / a0,
        raw[5] / a0,
    ]
}

/// An RBJ biquad in transposed direct form II at precision `S`.
struct Biquad<S, M> {
    mode: BiquadMode,
    sample_rate: f64,
    cache: DesignCache<3>,
    /// `[b0, b1, b2, a1, a2]` at precision `S`.
    coefs: [S; 5],
    z1: S,
    z2: S,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Biquad<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64, q: f64, gain: f64) {
        if self.cache.stale([cutoff_hz, q, gain]) {
            let c = biquad_design::<M>(self.mode, cutoff_hz, q, gain, self.sample_rate);
            self.coefs = c.map(S::from_f64);
        }
    }

    /// One TDF-II step: y = b0·x + z1; z1 = (b1·x − a1·y) + z2; z2 = b2·x − a2·y.
    #[inline]
    fn tick(c: &[S; 5], z1: &mut S, z2: &mut S, x: S) -> S {
        let y = c[0] * x + *z1;
        *z1 = c[1] * x - c[3] * y + *z2;
        *z2 = c[2] * x - c[4] * y;
        y
    }

    /// [`tick`](Self::tick) with `z1`'s sum reassociated as
    /// `(b1·x + z2) − a1·y`: the part that does not wait for `y` is computed
    /// off the recursion, which then carries one add, one multiply and one
    /// subtract per sample instead of one more add. Rounds differently from
    /// `tick`, so only the live profile (fast math) runs it.
    #[inline]
    fn tick_short(c: &[S; 5], z1: &mut S, z2: &mut S, x: S) -> S {
        let y = c[0] * x + *z1;
        *z1 = (c[1] * x + *z2) - c[3] * y;
        *z2 = c[2] * x - c[4] * y;
        y
    }

    #[inline]
    fn step(c: &[S; 5], z1: &mut S, z2: &mut S, x: S) -> S {
        if M::KIND == MathKind::Fast {
            Self::tick_short(c, z1, z2, x)
        } else {
            Self::tick(c, z1, z2, x)
        }
    }
}

impl<S: Sample, M: Math> Processor<S> for Biquad<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let cutoff = io.params.get(BQ_CUTOFF);
        let q = io.params.get(BQ_Q);
        let gain = io.params.get(BQ_GAIN);
        let input = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        let (mut z1, mut z2) = (self.z1, self.z2);
        if cutoff.is_const() && q.is_const() && gain.is_const() {
            self.update(cutoff.value(), q.value(), gain.value());
            let c = self.coefs;
            for (o, &x) in out.iter_mut().zip(input) {
                *o = Self::step(&c, &mut z1, &mut z2, x);
            }
        } else {
            for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
                self.update(cutoff.at(i), q.at(i), gain.at(i));
                *o = Self::step(&self.coefs, &mut z1, &mut z2, x);
            }
        }
        // A direct-form filter driven unstable by extreme modulation would
        // keep its non-finite state forever; start again from silence (the
        // engine has already replaced the bad output and reported the node).
        if z1.is_finite() && z2.is_finite() {
            self.z1 = z1;
            self.z2 = z2;
        } else {
            self.z1 = S::ZERO;
            self.z2 = S::ZERO;
        }
    }

    fn reset(&mut self) {
        self.z1 = S::ZERO;
        self.z2 = S::ZERO;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_sample("z1", self.z1);
        st.put_sample("z2", self.z2);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let z1 = st.get_sample("z1")?;
        let z2 = st.get_sample("z2")?;
        self.z1 = z1;
        self.z2 = z2;
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if param == BQ_MODE {
            if let Some(i) = enum_index(value, BIQUAD_MODES.len()) {
                self.mode = BiquadMode::from_index(i);
                self.cache.valid = false;
            }
        }
    }
}

struct BiquadOp;
impl Operator for BiquadOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String> {
        Ok(Box::new(Biquad::<S, M> {
            mode: BiquadMode::from_index(built_enum(cx, BQ_MODE, BIQUAD_MODES.len())),
            sample_rate: cx.sample_rate,
            cache: DesignCache::new(),
            coefs: [S::ZERO; 5],
            z1: S::ZERO,
            z2: S::ZERO,
            _m: PhantomData,
        }))
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

/// `biquad`: the RBJ Audio-EQ-Cookbook filters in transposed direct form II.
/// A cutoff the biquad cannot design: above `0.49·sr` it designs at that.
fn biquad_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    frequency_lint(
        values,
        BQ_CUTOFF,
        "cutoff",
        sample_rate,
        MAX_CUTOFF_RATIO,
        "the filter is designed at",
    )
    .into_iter()
    .collect()
}

pub static BIQUAD: OpSpec = OpSpec {
    name: "biquad",
    doc: "RBJ cookbook biquad (lowpass, highpass, bandpass with 0 dB peak, notch, peak, allpass) in transposed direct form II.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        ParamSpec {
            name: "mode",
            kind: ParamKind::Enum {
                choices: BIQUAD_MODES,
                default: "lowpass",
            },
            doc: "filter response",
            settable_by_events: true,
        },
        CUTOFF_PARAM,
        Q_PARAM,
        number(
            "gain",
            Dimension::Amplitude,
            1.0,
            0.0,
            MAX_PEAK_GAIN,
            "gain at the cutoff (peak mode only), linear amplitude",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: biquad_lints,
    cost: |p, _| by_profile(p, [5.6, 4.2, 4.2]),
    algorithms: None,
    build: build_any::<BiquadOp>,
};

// ---------------------------------------------------------------------------
// onepole

const ONEPOLE_MODES: &[&str] = &["lowpass", "highpass"];
const OP_MODE: usize = ONEPOLE.index_of("mode");
const OP_CUTOFF: usize = ONEPOLE.index_of("cutoff");

/// The one-pole smoothing coefficient `a = 1 − exp(−2π·fc/sr)`, with the
/// cutoff limited to `[0, sr/2]` (0 Hz holds the output).
fn onepole_coef<M: Math>(cutoff_hz: f64, sample_rate: f64) -> f64 {
    let fc = limit(cutoff_hz, 0.0, 0.5 * sample_rate);
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

impl<S: Sample, M: Math> Processor<S> for OnePole<S, M> {
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
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String> {
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
    )
    .into_iter()
    .collect()
}

pub static ONEPOLE: OpSpec = OpSpec {
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
    cost: |p, _| by_profile(p, [3.5, 3.2, 3.2]),
    algorithms: None,
    build: build_any::<OnePoleOp>,
};

// ---------------------------------------------------------------------------
// svf

const SVF_MODES: &[&str] = &["lowpass", "highpass", "bandpass", "notch"];
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
fn svf_design<M: Math>(cutoff_hz: f64, q: f64, sample_rate: f64) -> [f64; 4] {
    let g = M::coef_tan(PI * design_cutoff_hz(cutoff_hz, sample_rate) / sample_rate);
    let k = 1.0 / limit(q, MIN_Q, MAX_Q);
    let a1 = 1.0 / (1.0 + g * (g + k));
    let a2 = g * a1;
    let a3 = g * a2;
    [k, a1, a2, a3]
}

/// A topology-preserving (trapezoidal) state-variable filter after Andrew
/// Simper (Cytomic), at precision `S`.
struct Svf<S, M> {
    mode: SvfMode,
    sample_rate: f64,
    cache: DesignCache<2>,
    /// `[k, a1, a2, a3]` at precision `S`.
    coefs: [S; 4],
    ic1: S,
    ic2: S,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Svf<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64, q: f64) {
        if self.cache.stale([cutoff_hz, q]) {
            self.coefs = svf_design::<M>(cutoff_hz, q, self.sample_rate).map(S::from_f64);
        }
    }

    #[inline]
    fn tick(c: &[S; 4], mode: SvfMode, ic1: &mut S, ic2: &mut S, x: S) -> S {
        let [k, a1, a2, a3] = *c;
        let v3 = x - *ic2;
        let v1 = a1 * *ic1 + a2 * v3;
        let v2 = *ic2 + a2 * *ic1 + a3 * v3;
        *ic1 = v1 + v1 - *ic1;
        *ic2 = v2 + v2 - *ic2;
        match mode {
            SvfMode::Lowpass => v2,
            SvfMode::Bandpass => v1,
            SvfMode::Highpass => x - k * v1 - v2,
            SvfMode::Notch => v2 + (x - k * v1 - v2),
        }
    }
}

impl<S: Sample, M: Math> Processor<S> for Svf<S, M> {
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
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String> {
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
    )
    .into_iter()
    .collect()
}

pub static SVF: OpSpec = OpSpec {
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
    cost: |p, _| by_profile(p, [6.5, 5.8, 5.8]),
    algorithms: None,
    build: build_any::<SvfOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::StateValue;

    const SR: f64 = 48000.0;

    fn mode(spec: &OpSpec, name: &str) -> Value {
        match spec.params[0].kind {
            ParamKind::Enum { choices, .. } => {
                Value::Enum(choices.iter().position(|c| *c == name).unwrap())
            }
            _ => panic!("{}: param 0 is not the mode", spec.name),
        }
    }

    fn runner(
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

    fn render_at(
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

    fn render(spec: &'static OpSpec, params: &[(&str, Value)], input: &[f64]) -> Vec<f64> {
        render_at(spec, params, Profile::Strict, Precision::F64, input)
    }

    fn rel_rms(got: &[f64], want: &[f64]) -> f64 {
        assert_eq!(got.len(), want.len());
        let err: f64 = got.iter().zip(want).map(|(g, w)| (g - w) * (g - w)).sum();
        let norm: f64 = want.iter().map(|w| w * w).sum();
        (err / norm).sqrt()
    }

    fn db(x: f64) -> f64 {
        20.0 * libm::log10(x)
    }

    const WINDOW: usize = 4800;

    /// Steady-state gain at `freq_hz` (a multiple of 10 Hz, so the window
    /// holds whole cycles): a unit sine runs for three windows and the last
    /// one is correlated with sine and cosine.
    fn tone_gain(spec: &'static OpSpec, params: &[(&str, Value)], freq_hz: f64) -> f64 {
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
    fn analog_mag(num: [f64; 3], den: [f64; 3], w: f64) -> f64 {
        let eval = |p: [f64; 3]| {
            let re = p[0] - p[2] * w * w;
            let im = p[1] * w;
            (re * re + im * im).sqrt()
        };
        eval(num) / eval(den)
    }

    /// The analog frequency (normalised to the prototype's cutoff) that the
    /// bilinear transform prewarped at `fc_hz` maps `f_hz` to.
    fn warped(f_hz: f64, fc_hz: f64) -> f64 {
        libm::tan(PI * f_hz / SR) / libm::tan(PI * fc_hz / SR)
    }

    /// Compares measured and analytic gains: within 0.05 dB, or both below
    /// −80 dB where the analytic response has a zero.
    fn assert_response(label: &str, measured: f64, analytic: f64) {
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

    const TEST_FREQS: [f64; 7] = [50.0, 300.0, 700.0, 1000.0, 1500.0, 4000.0, 15000.0];

    // --- biquad -----------------------------------------------------------

    /// The cookbook written out again, unnormalised, with the peak gain
    /// taken through decibels, filtered in direct form I.
    fn rbj_direct_form_1(mode: &str, fc: f64, q: f64, gain: f64, x: &[f64]) -> Vec<f64> {
        let w0 = 2.0 * PI * fc / SR;
        let (c, s) = (libm::cos(w0), libm::sin(w0));
        let alpha = s / (2.0 * q);
        let gain_db = 20.0 * libm::log10(gain);
        let big_a = libm::pow(10.0, gain_db / 40.0);
        let (b, a) = match mode {
            "lowpass" => (
                [(1.0 - c) / 2.0, 1.0 - c, (1.0 - c) / 2.0],
                [1.0 + alpha, -2.0 * c, 1.0 - alpha],
            ),
            "highpass" => (
                [(1.0 + c) / 2.0, -(1.0 + c), (1.0 + c) / 2.0],
                [1.0 + alpha, -2.0 * c, 1.0 - alpha],
            ),
            "bandpass" => ([alpha, 0.0, -alpha], [1.0 + alpha, -2.0 * c, 1.0 - alpha]),
            "notch" => ([1.0, -2.0 * c, 1.0], [1.0 + alpha, -2.0 * c, 1.0 - alpha]),
            "peak" => (
                [1.0 + alpha * big_a, -2.0 * c, 1.0 - alpha * big_a],
                [1.0 + alpha / big_a, -2.0 * c, 1.0 - alpha / big_a],
            ),
            "allpass" => (
                [1.0 - alpha, -2.0 * c, 1.0 + alpha],
                [1.0 + alpha, -2.0 * c, 1.0 - alpha],
            ),
            _ => unreachable!(),
        };
        let (mut x1, mut x2, mut y1, mut y2) = (0.0, 0.0, 0.0, 0.0);
        x.iter()
            .map(|&x0| {
                let y0 = (b[0] * x0 + b[1] * x1 + b[2] * x2 - a[1] * y1 - a[2] * y2) / a[0];
                (x2, x1, y2, y1) = (x1, x0, y1, y0);
                y0
            })
            .collect()
    }

    #[test]
    fn biquad_matches_a_direct_form_1_reference() {
        let x = test_signal(7, 8000);
        // f32 bound per setting: a low, resonant cutoff puts the poles near
        // z = 1, where rounding a1 and a2 to f32 moves them most (measured
        // ≈ 7e-5 for the 300 Hz notch); elsewhere the error is ≤ 2e-6.
        for (fc, q, gain, f32_bound) in [
            (1500.0, 0.9, 2.0, 1e-5),
            (300.0, 4.0, 0.25, 2e-4),
            (9000.0, 0.5, 3.0, 1e-5),
        ] {
            for name in BIQUAD_MODES {
                let params = [
                    ("mode", mode(&BIQUAD, name)),
                    ("cutoff", Value::Number(fc)),
                    ("q", Value::Number(q)),
                    ("gain", Value::Number(gain)),
                ];
                let want = rbj_direct_form_1(name, fc, q, gain, &x);
                let strict = render(&BIQUAD, &params, &x);
                let e = rel_rms(&strict, &want);
                assert!(
                    e <= 1e-12,
                    "{name} {fc} Hz q {q}: strict f64 rel. RMS {e:e}"
                );
                let repro = render_at(&BIQUAD, &params, Profile::Repro, Precision::F32, &x);
                let e = rel_rms(&repro, &want);
                assert!(
                    e <= f32_bound,
                    "{name} {fc} Hz q {q}: repro f32 rel. RMS {e:e}"
                );
                // Live runs the reassociated recursion (`tick_short`).
                let live = render_at(&BIQUAD, &params, Profile::Live, Precision::F32, &x);
                let e = rel_rms(&live, &want);
                assert!(
                    e <= f32_bound,
                    "{name} {fc} Hz q {q}: live f32 rel. RMS {e:e}"
                );
            }
        }
    }

    #[test]
    fn biquad_magnitude_matches_the_analog_prototype() {
        let fc = 1000.0;
        let q = core::f64::consts::FRAC_1_SQRT_2;
        let gain = 4.0;
        let big_a = gain.sqrt();
        let protos: [(&str, [f64; 3], [f64; 3]); 6] = [
            ("lowpass", [1.0, 0.0, 0.0], [1.0, 1.0 / q, 1.0]),
            ("highpass", [0.0, 0.0, 1.0], [1.0, 1.0 / q, 1.0]),
            ("bandpass", [0.0, 1.0 / q, 0.0], [1.0, 1.0 / q, 1.0]),
            ("notch", [1.0, 0.0, 1.0], [1.0, 1.0 / q, 1.0]),
            ("peak", [1.0, big_a / q, 1.0], [1.0, 1.0 / (big_a * q), 1.0]),
            ("allpass", [1.0, -1.0 / q, 1.0], [1.0, 1.0 / q, 1.0]),
        ];
        for (name, num, den) in protos {
            let params = [
                ("mode", mode(&BIQUAD, name)),
                ("cutoff", Value::Number(fc)),
                ("q", Value::Number(q)),
                ("gain", Value::Number(gain)),
            ];
            for f in TEST_FREQS {
                let measured = tone_gain(&BIQUAD, &params, f);
                let analytic = analog_mag(num, den, warped(f, fc));
                assert_response(&format!("biquad {name} at {f} Hz"), measured, analytic);
                match name {
                    "allpass" => assert!(db(measured).abs() < 1e-3, "allpass at {f} Hz"),
                    "lowpass" if f == fc => {
                        assert!((db(measured) + 3.0103).abs() < 1e-3, "lowpass at cutoff")
                    }
                    "notch" if f == fc => assert!(db(measured) < -100.0, "notch at cutoff"),
                    "peak" if f == fc => {
                        assert!((measured - gain).abs() < 1e-6, "peak at cutoff: {measured}")
                    }
                    "bandpass" if f == fc => {
                        assert!((measured - 1.0).abs() < 1e-6, "bandpass at cutoff")
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn biquad_peak_gain_is_linear_amplitude() {
        // -6 dB as a linear amplitude cuts by that much at the cutoff.
        let gain = libm::pow(10.0, -6.0 / 20.0);
        let params = [
            ("mode", mode(&BIQUAD, "peak")),
            ("cutoff", Value::Number(2000.0)),
            ("q", Value::Number(1.0)),
            ("gain", Value::Number(gain)),
        ];
        assert!((db(tone_gain(&BIQUAD, &params, 2000.0)) + 6.0).abs() < 1e-3);
        // Unity gain is a wire.
        let params = [
            ("mode", mode(&BIQUAD, "peak")),
            ("gain", Value::Number(1.0)),
        ];
        let x = test_signal(3, 2000);
        let y = render(&BIQUAD, &params, &x);
        assert!(rel_rms(&y, &x) < 1e-14);
    }

    // --- onepole ----------------------------------------------------------

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

    // --- svf --------------------------------------------------------------

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
        for (spec, params, names) in [
            (&BIQUAD, vec![], &["z1", "z2"][..]),
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
