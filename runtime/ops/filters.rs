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
    build_any, number, BuildCtx, Io, NodeState, OpSpec, Operator, ParamKind, ParamSpec, Processor,
    StateError, Value,
};
use crate::dsp::{Math, Sample};
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

const BQ_MODE: usize = 0;
const BQ_CUTOFF: usize = 1;
const BQ_Q: usize = 2;
const BQ_GAIN: usize = 3;

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
                *o = Self::tick(&c, &mut z1, &mut z2, x);
            }
        } else {
            for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
                self.update(cutoff.at(i), q.at(i), gain.at(i));
                *o = Self::tick(&self.coefs, &mut z1, &mut z2, x);
            }
        }
        self.z1 = z1;
        self.z2 = z2;
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
    build: build_any::<BiquadOp>,
};

// ---------------------------------------------------------------------------
// onepole

const ONEPOLE_MODES: &[&str] = &["lowpass", "highpass"];
const OP_MODE: usize = 0;
const OP_CUTOFF: usize = 1;

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
    build: build_any::<OnePoleOp>,
};

// ---------------------------------------------------------------------------
// svf

const SVF_MODES: &[&str] = &["lowpass", "highpass", "bandpass", "notch"];
const SVF_MODE: usize = 0;
const SVF_CUTOFF: usize = 1;
const SVF_Q: usize = 2;

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
        },
        CUTOFF_PARAM,
        Q_PARAM,
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: build_any::<SvfOp>,
};
