//! `biquad`: the RBJ Audio-EQ-Cookbook filters (lowpass, highpass,
//! bandpass, notch, peak, allpass, lowshelf, highshelf), designed in f64.
//! The shelves use the cookbook's Q form (α = sin ω0 / 2Q; Q = 1/√2 is its
//! steepest shelf without overshoot, S = 1).
//!
//! At f64 the filter runs in transposed direct form II. At f32 that form
//! fails at low cutoffs: with the poles near z = 1, `a1 ≈ −2` and `a2 ≈ 1`
//! rounded to f32 move the poles by a large fraction of their distance
//! from 1, and the state's rounding is amplified by about 1/ω0² (a 10 Hz
//! resonant lowpass came out 13 % off). So f32 runs the same response as a
//! trapezoidal (topology-preserving) state-variable filter after Andrew
//! Simper (Cytomic): `g = tan(ω0/2)` and `k = 1/Q` set the poles (the
//! cookbook's designs are all bilinear transforms prewarped at ω0, so their
//! denominators are exactly the SVF's), and the output mixes the input,
//! band and low outputs, `y = m0·x + m1·v1 + m2·v2`, for the numerator.
//! Written in increments (`svf_increments`), its coefficients are all
//! small numbers f32 holds to full precision at any cutoff.

use super::{
    built_enum, design_cutoff_hz, enum_index, limit, svf_increment_coefs, svf_increments,
    DesignCache, CUTOFF_PARAM, MAX_CUTOFF_RATIO, MAX_Q, MIN_CUTOFF_HZ, MIN_Q, Q_PARAM, TWO_PI,
};
use crate::dsp::vector::SimdLevel;
use crate::dsp::{Math, MathKind, Precision, Sample};
use crate::ops::{
    build_any, by_profile, frequency_lint, no_choices, number, BuildCtx, Io, LaneKernel,
    LaneMember, LaneSum, Lint, NodeState, OpSpec, Operator, ParamKind, ParamSpec, Processor,
    StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

/// Smallest linear gain the peak and shelf filters design with (−240 dB);
/// 0 would divide by zero in `α/A`.
const MIN_PEAK_GAIN: f64 = 1e-12;
const MAX_PEAK_GAIN: f64 = 1e6;

pub(super) const BIQUAD_MODES: &[&str] = &[
    "lowpass",
    "highpass",
    "bandpass",
    "notch",
    "peak",
    "allpass",
    "lowshelf",
    "highshelf",
];

/// The response of a [`Biquad`], in the order of [`BIQUAD_MODES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BiquadMode {
    Lowpass,
    Highpass,
    /// Constant 0 dB peak gain.
    Bandpass,
    Notch,
    Peak,
    Allpass,
    /// `gain` below the cutoff, 0 dB above.
    Lowshelf,
    /// 0 dB below the cutoff, `gain` above.
    Highshelf,
}

impl BiquadMode {
    pub(super) fn from_index(i: usize) -> BiquadMode {
        match i {
            1 => BiquadMode::Highpass,
            2 => BiquadMode::Bandpass,
            3 => BiquadMode::Notch,
            4 => BiquadMode::Peak,
            5 => BiquadMode::Allpass,
            6 => BiquadMode::Lowshelf,
            7 => BiquadMode::Highshelf,
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

/// `(cos ω0, sin ω0, Q)` of a design: the cutoff and Q held to what the
/// filter designs at, with the math policy `M`.
fn design_angle<M: Math>(
    mode: BiquadMode,
    cutoff_hz: f64,
    q: f64,
    gain: f64,
    sample_rate: f64,
) -> (f64, f64, f64) {
    // A shelf's poles sit at the cutoff times A^(∓1/2) (lowshelf: below
    // it when boosting; highshelf: below it when cutting): its cutoff is
    // kept high enough that they stay above the lowest cutoff any mode
    // designs at, where the poles are still resolved in f64.
    let cutoff_hz = match mode {
        BiquadMode::Lowshelf | BiquadMode::Highshelf => {
            let quarter = limit(gain, MIN_PEAK_GAIN, MAX_PEAK_GAIN).sqrt().sqrt();
            let lowest = if mode == BiquadMode::Lowshelf {
                MIN_CUTOFF_HZ * quarter
            } else {
                MIN_CUTOFF_HZ / quarter
            };
            if cutoff_hz >= lowest {
                cutoff_hz
            } else {
                lowest
            }
        }
        _ => cutoff_hz,
    };
    let w0 = TWO_PI * design_cutoff_hz(cutoff_hz, sample_rate) / sample_rate;
    let q = limit(q, MIN_Q, MAX_Q);
    (M::coef_cos(w0), M::coef_sin(w0), q)
}

/// Coefficients of the state-variable form `[d, a2, g, m0, m1, m2]`,
/// the same response as [`biquad_design`]: with `g = tan(ω0/2)` (from the
/// design's own cos and sin) and `k = 1/Q`, the core's `d`, `a2`, `g`
/// ([`svf_increments`]), and the output `m0·x + m1·band + m2·low`. The analog prototypes, with `s` normalised to the poles:
/// lowpass 1/D, highpass s²/D, bandpass (s/Q)/D, notch (s² + 1)/D,
/// allpass (s² − s/Q + 1)/D, peak (s² + (A/Q)s + 1)/(s² + s/(AQ) + 1)
/// (k = 1/(AQ)); the shelves move the poles to g/√A (lowshelf) or g·√A
/// (highshelf): (s² + (A/Q)s + A²)/D and (A²s² + (A/Q)s + 1)/D.
pub(super) fn svf_form_design<M: Math>(
    mode: BiquadMode,
    cutoff_hz: f64,
    q: f64,
    gain: f64,
    sample_rate: f64,
) -> [f64; 6] {
    let (cos_w0, sin_w0, q) = design_angle::<M>(mode, cutoff_hz, q, gain, sample_rate);
    let mut g = sin_w0 / (1.0 + cos_w0);
    let mut k = 1.0 / q;
    let a = limit(gain, MIN_PEAK_GAIN, MAX_PEAK_GAIN).sqrt();
    let a_sq = a * a;
    let m = match mode {
        BiquadMode::Lowpass => [0.0, 0.0, 1.0],
        BiquadMode::Highpass => [1.0, -k, -1.0],
        BiquadMode::Bandpass => [0.0, k, 0.0],
        BiquadMode::Notch => [1.0, -k, 0.0],
        BiquadMode::Allpass => [1.0, -2.0 * k, 0.0],
        BiquadMode::Peak => {
            k /= a;
            [1.0, k * (a_sq - 1.0), 0.0]
        }
        BiquadMode::Lowshelf => {
            g /= a.sqrt();
            [1.0, k * (a - 1.0), a_sq - 1.0]
        }
        BiquadMode::Highshelf => {
            g *= a.sqrt();
            [a_sq, k * a * (1.0 - a), 1.0 - a_sq]
        }
    };
    let [d, a2, g] = svf_increment_coefs(g, k);
    [d, a2, g, m[0], m[1], m[2]]
}

/// RBJ Audio-EQ-Cookbook design, normalised by `a0`, in f64 with the math
/// policy `M`. `gain` is the peak filter's linear gain at the cutoff and
/// the shelves' gain on their shelf (A = √gain = 10^(dB/40)); other modes
/// ignore it.
pub(super) fn biquad_design<M: Math>(
    mode: BiquadMode,
    cutoff_hz: f64,
    q: f64,
    gain: f64,
    sample_rate: f64,
) -> BiquadCoefs {
    let (cos_w0, sin_w0, q) = design_angle::<M>(mode, cutoff_hz, q, gain, sample_rate);
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
        BiquadMode::Lowshelf | BiquadMode::Highshelf => {
            let a = limit(gain, MIN_PEAK_GAIN, MAX_PEAK_GAIN).sqrt();
            let (ap1, am1) = (a + 1.0, a - 1.0);
            let two_sqrt_a_alpha = 2.0 * a.sqrt() * alpha;
            if mode == BiquadMode::Lowshelf {
                [
                    a * ((ap1 - am1 * cos_w0) + two_sqrt_a_alpha),
                    2.0 * a * (am1 - ap1 * cos_w0),
                    a * ((ap1 - am1 * cos_w0) - two_sqrt_a_alpha),
                    (ap1 + am1 * cos_w0) + two_sqrt_a_alpha,
                    -2.0 * (am1 + ap1 * cos_w0),
                    (ap1 + am1 * cos_w0) - two_sqrt_a_alpha,
                ]
            } else {
                [
                    a * ((ap1 + am1 * cos_w0) + two_sqrt_a_alpha),
                    -2.0 * a * (am1 + ap1 * cos_w0),
                    a * ((ap1 + am1 * cos_w0) - two_sqrt_a_alpha),
                    (ap1 - am1 * cos_w0) + two_sqrt_a_alpha,
                    2.0 * (am1 - ap1 * cos_w0),
                    (ap1 - am1 * cos_w0) - two_sqrt_a_alpha,
                ]
            }
        }
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

/// An RBJ biquad at precision `S`: transposed direct form II at f64, the
/// state-variable form at f32 (see the module doc).
struct Biquad<S, M> {
    mode: BiquadMode,
    sample_rate: f64,
    cache: DesignCache<3>,
    /// f64: `[b0, b1, b2, a1, a2, 0]`; f32: `[a1, a2, a3, m0, m1, m2]` of
    /// [`svf_form_design`].
    coefs: [S; 6],
    /// f64: the TDF-II state `z1`, `z2`; f32: the SVF's integrator states
    /// `ic1`, `ic2`.
    s1: S,
    s2: S,
    /// A TDF-II state restored into the state-variable form, converted
    /// when the node next designs (its coefficients depend on the params
    /// it then runs with).
    pending: Option<[f64; 2]>,
    _m: PhantomData<fn() -> M>,
}

/// True when `S` runs the state-variable form (f32), false for TDF-II (f64).
#[inline(always)]
fn svf_form<S: Sample>() -> bool {
    S::PRECISION == Precision::F32
}

impl<S: Sample, M: Math> Biquad<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64, q: f64, gain: f64) {
        if self.cache.stale([cutoff_hz, q, gain]) {
            let (mode, sr) = (self.mode, self.sample_rate);
            self.coefs = if svf_form::<S>() {
                svf_form_design::<M>(mode, cutoff_hz, q, gain, sr).map(S::from_f64)
            } else {
                let [b0, b1, b2, a1, a2] = biquad_design::<M>(mode, cutoff_hz, q, gain, sr);
                [b0, b1, b2, a1, a2, 0.0].map(S::from_f64)
            };
        }
    }

    /// [`update`](Self::update) at the start of a chunk, then a restored
    /// TDF-II state converted with the coefficients just designed.
    #[inline]
    fn prepare(&mut self, cutoff_hz: f64, q: f64, gain: f64) {
        self.update(cutoff_hz, q, gain);
        if let Some(z) = self.pending.take() {
            let c = self.coefs.map(|v| v.to_f64());
            let [s1, s2] = svf_state_from_tdf2(&c, z);
            (self.s1, self.s2) = (S::from_f64(s1), S::from_f64(s2));
        }
    }

    /// One TDF-II step: y = b0·x + z1; z1 = (b1·x − a1·y) + z2; z2 = b2·x − a2·y.
    #[inline]
    fn tick(c: &[S; 6], z1: &mut S, z2: &mut S, x: S) -> S {
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
    fn tick_short(c: &[S; 6], z1: &mut S, z2: &mut S, x: S) -> S {
        let y = c[0] * x + *z1;
        *z1 = (c[1] * x + *z2) - c[3] * y;
        *z2 = c[2] * x - c[4] * y;
        y
    }

    /// One step of the state-variable form ([`svf_increments`], as the
    /// `svf` operator's f32 path), its output mixed:
    /// y = (m0·x + m1·v1) + m2·v2.
    #[inline]
    fn tick_svf(c: &[S; 6], ic1: &mut S, ic2: &mut S, x: S) -> S {
        let (v1, v2) = svf_increments(c[0], c[1], c[2], ic1, ic2, x);
        c[3] * x + c[4] * v1 + c[5] * v2
    }

    #[inline]
    fn step(c: &[S; 6], s1: &mut S, s2: &mut S, x: S) -> S {
        if svf_form::<S>() {
            Self::tick_svf(c, s1, s2, x)
        } else if M::KIND == MathKind::Fast {
            Self::tick_short(c, s1, s2, x)
        } else {
            Self::tick(c, s1, s2, x)
        }
    }
}

/// The state-variable form's zero-input outputs y[0], y[1] from integrator
/// states `s` (coefficients `c` of [`svf_form_design`], in f64).
fn svf_free_response(c: &[f64; 6], s: [f64; 2]) -> [f64; 2] {
    let step = |[mut ic1, mut ic2]: [f64; 2]| {
        let (v1, v2) = svf_increments(c[0], c[1], c[2], &mut ic1, &mut ic2, 0.0);
        (c[4] * v1 + c[5] * v2, [ic1, ic2])
    };
    let (y0, s) = step(s);
    let (y1, _) = step(s);
    [y0, y1]
}

/// The TDF-II denominator's `a1` of the state-variable form:
/// 2(g² − 1)/(1 + g(g + k)) = 2(g·a2 − (1 − d)).
fn svf_tdf2_a1(c: &[f64; 6]) -> f64 {
    2.0 * (c[2] * c[1] - (1.0 - c[0]))
}

/// The TDF-II state `[z1, z2]` with the same future as the state-variable
/// form's integrator states `s`: a TDF-II filter left without input
/// outputs y[0] = z1, y[1] = z2 − a1·z1.
fn tdf2_state_from_svf(c: &[f64; 6], s: [f64; 2]) -> [f64; 2] {
    let [y0, y1] = svf_free_response(c, s);
    [y0, y1 + svf_tdf2_a1(c) * y0]
}

/// The inverse of [`tdf2_state_from_svf`]: the integrator states whose
/// zero-input outputs are those of the TDF-II state `z`. Where the output
/// does not see one of the states (a peak of gain 1 is a wire), the
/// smallest state that gives the closest outputs.
fn svf_state_from_tdf2(c: &[f64; 6], z: [f64; 2]) -> [f64; 2] {
    let r = [z[0], z[1] - svf_tdf2_a1(c) * z[0]];
    let [p, q] = svf_free_response(c, [1.0, 0.0]);
    let [u, v] = svf_free_response(c, [0.0, 1.0]);
    // [[p, u], [q, v]] · s = r
    let det = p * v - u * q;
    let norm = p * p + q * q + u * u + v * v;
    if det.abs() > 1e-9 * norm && det.is_finite() {
        [(r[0] * v - u * r[1]) / det, (p * r[1] - q * r[0]) / det]
    } else if norm > 0.0 && norm.is_finite() {
        // Rank one (or nearly): Mᵀr / ‖M‖² is the least-norm fit.
        [(p * r[0] + q * r[1]) / norm, (u * r[0] + v * r[1]) / norm]
    } else {
        [0.0, 0.0]
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
        if n == 0 {
            return;
        }
        self.prepare(cutoff.at(0), q.at(0), gain.at(0));
        let (mut s1, mut s2) = (self.s1, self.s2);
        if cutoff.is_const() && q.is_const() && gain.is_const() {
            let c = self.coefs;
            for (o, &x) in out.iter_mut().zip(input) {
                *o = Self::step(&c, &mut s1, &mut s2, x);
            }
        } else {
            for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
                self.update(cutoff.at(i), q.at(i), gain.at(i));
                *o = Self::step(&self.coefs, &mut s1, &mut s2, x);
            }
        }
        // A filter driven unstable by extreme modulation would keep its
        // non-finite state forever; start again from silence (the engine
        // has already replaced the bad output and reported the node).
        if s1.is_finite() && s2.is_finite() {
            self.s1 = s1;
            self.s2 = s2;
        } else {
            self.s1 = S::ZERO;
            self.s2 = S::ZERO;
        }
    }

    fn reset(&mut self) {
        self.s1 = S::ZERO;
        self.s2 = S::ZERO;
        self.pending = None;
    }

    /// f64: the TDF-II state `z1`, `z2`. f32: the integrator states `ic1`,
    /// `ic2` (restored exactly at f32) and, for an f64 node, the TDF-II
    /// state with the same future, `z1` and `z2` in f64 (`ic` flags whether
    /// `ic1` and `ic2` hold: not while a restored TDF-II state waits for
    /// its conversion).
    fn snapshot(&self, st: &mut NodeState) {
        if !svf_form::<S>() {
            st.put_sample("z1", self.s1);
            st.put_sample("z2", self.s2);
            return;
        }
        let z = match self.pending {
            Some(z) => z,
            None => tdf2_state_from_svf(
                &self.coefs.map(|v| v.to_f64()),
                [self.s1.to_f64(), self.s2.to_f64()],
            ),
        };
        st.put_sample("z1", z[0]);
        st.put_sample("z2", z[1]);
        st.put_sample("ic1", self.s1);
        st.put_sample("ic2", self.s2);
        st.put_bool("ic", self.pending.is_none());
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let z1 = st.get_sample::<f64>("z1")?;
        let z2 = st.get_sample::<f64>("z2")?;
        if !svf_form::<S>() {
            self.s1 = S::from_f64(z1);
            self.s2 = S::from_f64(z2);
            return Ok(());
        }
        if st.get_bool("ic") == Ok(true) {
            self.s1 = st.get_sample("ic1")?;
            self.s2 = st.get_sample("ic2")?;
            self.pending = None;
        } else {
            self.pending = Some([z1, z2]);
        }
        Ok(())
    }

    /// Biquads run side by side, one node per lane: each lane's recursion
    /// is the node's own, with its own coefficients and state.
    fn lanes(&self) -> Option<LaneKernel<S>> {
        let kernel: LaneKernel<S> = match SimdLevel::detect() {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2 => biquad_lanes_avx2::<S, M>,
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => biquad_lanes_avx512::<S, M>,
            _ => biquad_lanes::<S, M>,
        };
        Some(kernel)
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

/// Frames moved through a batch's tile at a time.
const TILE: usize = 32;

/// [`Biquad::step`] of each lane: lane `l` runs node `l`'s recursion with
/// its own coefficients `c[·][l]` and state, the same operations in the
/// same order as the node alone (so the same bits).
#[inline(always)]
fn step_lanes<S: Sample, M: Math, const L: usize>(
    c: &[[S; L]; 6],
    s1: &mut [S; L],
    s2: &mut [S; L],
    row: &mut [S; L],
) {
    if svf_form::<S>() {
        for l in 0..L {
            let x = row[l];
            let (v1, v2) = svf_increments(c[0][l], c[1][l], c[2][l], &mut s1[l], &mut s2[l], x);
            row[l] = c[3][l] * x + c[4][l] * v1 + c[5][l] * v2;
        }
        return;
    }
    for l in 0..L {
        let x = row[l];
        let y = c[0][l] * x + s1[l];
        if M::KIND == MathKind::Fast {
            s1[l] = (c[1][l] * x + s2[l]) - c[3][l] * y;
        } else {
            s1[l] = c[1][l] * x - c[3][l] * y + s2[l];
        }
        s2[l] = c[2][l] * x - c[4][l] * y;
        row[l] = y;
    }
}

/// The lane kernel ([`LaneKernel`]): members in batches of `L` (8: a
/// vector of f32 with AVX2; 16 with AVX-512), each batch's input moved
/// into a frame × lane tile, run through [`step_lanes`], and moved out to
/// the members' outputs.
#[inline(always)]
fn biquad_lanes_body<S: Sample, M: Math, const L: usize, const T16: bool>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    mut sum: Option<(&mut [S], bool)>,
) -> (u64, usize) {
    let mut finite = 0u64;
    let mut summed = 0;
    for (j, batch) in members.chunks_mut(L).enumerate() {
        let mut c = [[S::ZERO; L]; 6];
        let (mut z1, mut z2) = ([S::ZERO; L], [S::ZERO; L]);
        for (l, m) in batch.iter_mut().enumerate() {
            let Some(b) = m.node.downcast_mut::<Biquad<S, M>>() else {
                continue;
            };
            let p = m.params;
            b.prepare(p[BQ_CUTOFF].value, p[BQ_Q].value, p[BQ_GAIN].value);
            for (j, cj) in c.iter_mut().enumerate() {
                cj[l] = b.coefs[j];
            }
            (z1[l], z2[l]) = (b.s1, b.s2);
        }
        let mut done = 0;
        if T16 && batch.len() == L {
            done = transposed_f32::<S, M, L>(batch, &c, &mut z1, &mut z2, n, sum.as_mut());
            if sum.is_some() {
                summed = done;
            }
        }
        while done < n {
            let len = (n - done).min(TILE);
            let mut tile = [[S::ZERO; L]; TILE];
            for (l, m) in batch.iter().enumerate() {
                for (row, x) in tile.iter_mut().zip(&m.inputs[0][done..done + len]) {
                    row[l] = *x;
                }
            }
            for row in tile[..len].iter_mut() {
                step_lanes::<S, M, L>(&c, &mut z1, &mut z2, row);
            }
            for (l, m) in batch.iter_mut().enumerate() {
                for (o, row) in m.outputs[0][done..done + len].iter_mut().zip(&tile) {
                    *o = row[l];
                }
            }
            done += len;
        }
        for (l, m) in batch.iter_mut().enumerate() {
            if let Some(b) = m.node.downcast_mut::<Biquad<S, M>>() {
                // As `process`: a non-finite state starts again from silence.
                if z1[l].is_finite() && z2[l].is_finite() {
                    (b.s1, b.s2) = (z1[l], z2[l]);
                    // TDF-II: a non-finite output would have made the
                    // state non-finite for good (z1 takes −a1·y, even for
                    // a1 = 0), so every output of this chunk is finite. The
                    // SVF's output is a mix the states do not take back
                    // (it may overflow alone): the engine checks it.
                    if !svf_form::<S>() && j * L + l < 64 {
                        finite |= 1 << (j * L + l);
                    }
                } else {
                    (b.s1, b.s2) = (S::ZERO, S::ZERO);
                }
            }
        }
    }
    (finite, summed)
}

/// The whole 16-frame spans of a full batch of `L` f32 members (`L` a
/// multiple of 16, at most 64), through 16 × 16 blocks transposed in
/// registers (AVX-512) rather than moved sample by sample: the frames of
/// one member load as one vector. The recursion is [`step_lanes`] on each
/// block of 16 members, the blocks' independent recursions interleaved
/// frame by frame. Returns the frames done (0 unless the samples are f32).
/// Call it only from an AVX-512 kernel.
#[inline(always)]
fn transposed_f32<S: Sample, M: Math, const L: usize>(
    batch: &mut [LaneMember<'_, S>],
    c: &[[S; L]; 6],
    z1: &mut [S; L],
    z2: &mut [S; L],
    n: usize,
    sum: Option<&mut (&mut [S], bool)>,
) -> usize {
    use std::any::Any;
    const MAX: usize = 4;
    let k = L / 16;
    if cfg!(not(target_arch = "x86_64")) || !L.is_multiple_of(16) || k > MAX || batch.len() != L {
        return 0;
    }
    let c: &dyn Any = c;
    let (z1, z2): (&mut dyn Any, &mut dyn Any) = (z1, z2);
    let mut sum = match sum {
        Some((dst, first)) => {
            if std::any::TypeId::of::<S>() != std::any::TypeId::of::<f32>() {
                return 0;
            }
            // SAFETY: `S` is `f32` (checked just above): the same slice.
            let d: &mut [f32] =
                unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), dst.len()) };
            Some((d, *first))
        }
        None => None,
    };
    let (Some(c), Some(z1), Some(z2)) = (
        c.downcast_ref::<[[f32; L]; 6]>(),
        z1.downcast_mut::<[f32; L]>(),
        z2.downcast_mut::<[f32; L]>(),
    ) else {
        return 0;
    };
    let mut ins: [&[f32]; 16 * MAX] = [&[]; 16 * MAX];
    let mut outs: [Option<&mut Vec<f32>>; 16 * MAX] = std::array::from_fn(|_| None);
    for (l, m) in batch.iter_mut().enumerate() {
        let input: &dyn Any = &m.inputs[0];
        let output: &mut dyn Any = &mut m.outputs[0];
        let (Some(i), Some(o)) = (
            input.downcast_ref::<Vec<f32>>(),
            output.downcast_mut::<Vec<f32>>(),
        ) else {
            return 0;
        };
        (ins[l], outs[l]) = (i, Some(o));
    }
    // Each block of 16 members: its coefficients and state.
    let mut cs = [[[0f32; 16]; 6]; MAX];
    let (mut s1, mut s2) = ([[0f32; 16]; MAX], [[0f32; 16]; MAX]);
    for b in 0..k {
        for j in 0..6 {
            cs[b][j].copy_from_slice(&c[j][16 * b..16 * b + 16]);
        }
        s1[b].copy_from_slice(&z1[16 * b..16 * b + 16]);
        s2[b].copy_from_slice(&z2[16 * b..16 * b + 16]);
    }
    let whole = n / 16 * 16;
    let mut blocks = [[[0f32; 16]; 16]; MAX];
    for t0 in (0..whole).step_by(16) {
        for (b, block) in blocks[..k].iter_mut().enumerate() {
            for (row, x) in block.iter_mut().zip(&ins[16 * b..]) {
                row.copy_from_slice(&x[t0..t0 + 16]);
            }
            // SAFETY: only the AVX-512 kernel runs this, chosen when
            // `SimdLevel::detect` saw AVX-512F.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                crate::dsp::vector::transpose16_avx512(block)
            };
        }
        // Frame t of every block in turn: the blocks' recursions are
        // independent, so they overlap instead of waiting on one another.
        #[allow(clippy::needless_range_loop)]
        for t in 0..16 {
            for b in 0..k {
                step_lanes::<f32, M, 16>(&cs[b], &mut s1[b], &mut s2[b], &mut blocks[b][t]);
            }
        }
        for (b, block) in blocks[..k].iter_mut().enumerate() {
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                crate::dsp::vector::transpose16_avx512(block)
            };
            for (row, o) in block.iter().zip(outs[16 * b..].iter_mut().flatten()) {
                o[t0..t0 + 16].copy_from_slice(row);
            }
        }
        // The members' frames into the sum, in member order, from registers.
        if let Some((dst, first)) = sum.as_mut() {
            let mut acc = [0f32; 16];
            acc.copy_from_slice(&dst[t0..t0 + 16]);
            for (r, row) in blocks[..k].iter().flatten().enumerate() {
                if r == 0 && *first {
                    acc = *row;
                } else {
                    for (a, x) in acc.iter_mut().zip(row) {
                        *a += *x;
                    }
                }
            }
            dst[t0..t0 + 16].copy_from_slice(&acc);
        }
    }
    for b in 0..k {
        z1[16 * b..16 * b + 16].copy_from_slice(&s1[b]);
        z2[16 * b..16 * b + 16].copy_from_slice(&s2[b]);
    }
    whole
}

/// Each member's output 0 into `sum`, in member order, from frame `from`
/// on (the frames before it already summed); `sum`'s `first` as it was
/// when the kernel began.
fn sum_outputs<S: Sample>(
    members: &[LaneMember<'_, S>],
    n: usize,
    from: usize,
    sum: Option<&mut LaneSum<'_, S>>,
) {
    let Some(s) = sum else {
        return;
    };
    if from < n {
        let first = s.first;
        for (k, m) in members.iter().enumerate() {
            let (dst, x) = (&mut s.dst[from..n], &m.outputs[0][from..n]);
            if k == 0 && first {
                dst.copy_from_slice(x);
            } else {
                for (d, v) in dst.iter_mut().zip(x) {
                    *d += *v;
                }
            }
        }
    }
    if !members.is_empty() {
        s.first = false;
    }
}

fn biquad_lanes<S: Sample, M: Math>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    let (finite, _) = biquad_lanes_body::<S, M, 8, false>(members, n, None);
    sum_outputs(members, n, 0, sum);
    finite
}

#[cfg(target_arch = "x86_64")]
fn biquad_lanes_avx2<S: Sample, M: Math>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    #[target_feature(enable = "avx2")]
    unsafe fn run<S: Sample, M: Math>(members: &mut [LaneMember<'_, S>], n: usize) -> u64 {
        biquad_lanes_body::<S, M, 8, false>(members, n, None).0
    }
    // SAFETY: this kernel is chosen only when `SimdLevel::detect` saw AVX2.
    let finite = unsafe { run::<S, M>(members, n) };
    sum_outputs(members, n, 0, sum);
    finite
}

#[cfg(target_arch = "x86_64")]
fn biquad_lanes_avx512<S: Sample, M: Math>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    mut sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn run<S: Sample, M: Math>(
        members: &mut [LaneMember<'_, S>],
        n: usize,
        sum: Option<(&mut [S], bool)>,
    ) -> (u64, usize) {
        // Batches of 64 (four recursions interleaved), the rest by 16. A
        // batch of exactly 64 sums from registers.
        let whole = members.len() / 64 * 64;
        let (full, rest) = members.split_at_mut(whole);
        let sum = if rest.is_empty() { sum } else { None };
        let (a, summed) = biquad_lanes_body::<S, M, 64, true>(full, n, sum);
        let (b, _) = biquad_lanes_body::<S, M, 16, true>(rest, n, None);
        (a | b.checked_shl(whole as u32).unwrap_or(0), summed)
    }
    let dst = sum.as_deref_mut().map(|s| (&mut *s.dst, s.first));
    // SAFETY: this kernel is chosen only when `SimdLevel::detect` saw AVX-512F.
    let (finite, summed) = unsafe { run::<S, M>(members, n, dst) };
    sum_outputs(members, n, summed, sum);
    finite
}

struct BiquadOp;
impl Operator for BiquadOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String> {
        Ok(Box::new(Biquad::<S, M> {
            mode: BiquadMode::from_index(built_enum(cx, BQ_MODE, BIQUAD_MODES.len())),
            sample_rate: cx.sample_rate,
            cache: DesignCache::new(),
            coefs: [S::ZERO; 6],
            s1: S::ZERO,
            s2: S::ZERO,
            pending: None,
            _m: PhantomData,
        }))
    }
}

/// `biquad`: the RBJ Audio-EQ-Cookbook filters (TDF-II at f64, the
/// state-variable form at f32).
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
    doc: "RBJ cookbook biquad (lowpass, highpass, bandpass with 0 dB peak, notch, peak, allpass, lowshelf, highshelf): transposed direct form II at f64; at f32 the same response as a trapezoidal state-variable filter, within 1e-3 relative RMS of f64 from 10 Hz to 20 kHz at Q 0.5 to 20.",
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
            "gain at the cutoff (peak) or on the shelf (lowshelf below the cutoff, highshelf above), linear amplitude; other modes ignore it",
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
    algorithms: Some(crate::ops::describe::BIQUAD_MATH),
    build: build_any::<BiquadOp>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::PI;
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;

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
            // The cookbook's shelves, term by term: with √A·α written as
            // √A·α, not folded into one factor as the design does.
            "lowshelf" => {
                let k = 2.0 * libm::sqrt(big_a) * alpha;
                (
                    [
                        big_a * ((big_a + 1.0) - (big_a - 1.0) * c + k),
                        2.0 * big_a * ((big_a - 1.0) - (big_a + 1.0) * c),
                        big_a * ((big_a + 1.0) - (big_a - 1.0) * c - k),
                    ],
                    [
                        (big_a + 1.0) + (big_a - 1.0) * c + k,
                        -2.0 * ((big_a - 1.0) + (big_a + 1.0) * c),
                        (big_a + 1.0) + (big_a - 1.0) * c - k,
                    ],
                )
            }
            "highshelf" => {
                let k = 2.0 * libm::sqrt(big_a) * alpha;
                (
                    [
                        big_a * ((big_a + 1.0) + (big_a - 1.0) * c + k),
                        -2.0 * big_a * ((big_a - 1.0) + (big_a + 1.0) * c),
                        big_a * ((big_a + 1.0) + (big_a - 1.0) * c - k),
                    ],
                    [
                        (big_a + 1.0) - (big_a - 1.0) * c + k,
                        2.0 * ((big_a - 1.0) - (big_a + 1.0) * c),
                        (big_a + 1.0) - (big_a - 1.0) * c - k,
                    ],
                )
            }
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
                // Live runs repro's recursion: the same bits.
                let live = render_at(&BIQUAD, &params, Profile::Live, Precision::F32, &x);
                assert_eq!(live, repro, "{name} {fc} Hz q {q}: live differs from repro");
            }
        }
    }

    #[test]
    fn biquad_magnitude_matches_the_analog_prototype() {
        let fc = 1000.0;
        let q = core::f64::consts::FRAC_1_SQRT_2;
        let gain = 4.0;
        let big_a = gain.sqrt();
        let sa = big_a.sqrt();
        let protos: [(&str, [f64; 3], [f64; 3]); 8] = [
            // The cookbook's analog shelves, H(s) = A·(s² + (√A/Q)s + A) /
            // (As² + (√A/Q)s + 1) and its mirror, coefficients from s⁰ up.
            (
                "lowshelf",
                [big_a * big_a, big_a * sa / q, big_a],
                [1.0, sa / q, big_a],
            ),
            (
                "highshelf",
                [big_a, big_a * sa / q, big_a * big_a],
                [big_a, sa / q, 1.0],
            ),
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
                    // Half the shelf's gain in dB at the cutoff.
                    "lowshelf" | "highshelf" if f == fc => {
                        assert!(
                            (measured - big_a).abs() < 1e-6,
                            "{name} at cutoff: {measured}"
                        )
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

    /// A 20 Hz lowpass (Q 5) fed a 20 Hz sine plus noise: its poles sit near
    /// z = 1, where f32 TDF-II state rounded from strict's was far off.
    fn low_resonant() -> (Vec<(&'static str, Value)>, Vec<f64>) {
        let params = vec![
            ("mode", mode(&BIQUAD, "lowpass")),
            ("cutoff", Value::Number(20.0)),
            ("q", Value::Number(5.0)),
        ];
        let noise = test_signal(11, 24000);
        let x = noise
            .iter()
            .enumerate()
            .map(|(n, v)| 0.3 * libm::sin(TWO_PI * 20.0 / SR * n as f64) + 0.05 * v)
            .collect();
        (params, x)
    }

    /// Runs `params` over `x[..cut]` at (`from`, `from_p`), snapshots, and
    /// continues `x[cut..]` from that snapshot at (`to`, `to_p`).
    fn carried(
        params: &[(&str, Value)],
        x: &[f64],
        cut: usize,
        from: (Profile, Precision),
        to: (Profile, Precision),
    ) -> Vec<f64> {
        let mut a = runner(&BIQUAD, params, from.0, from.1);
        a.run(&[x[..cut].to_vec()], &[], cut, &[64]);
        let mut b = runner(&BIQUAD, params, to.0, to.1);
        b.node().restore(&a.snapshot()).unwrap();
        b.set_clock(cut as u64);
        b.run(&[x[cut..].to_vec()], &[], x.len() - cut, &[64])
            .remove(0)
    }

    #[test]
    fn a_state_carried_between_strict_and_f32_continues_the_same_filter() {
        let (params, x) = low_resonant();
        let cut = 16000;
        let strict = (Profile::Strict, Precision::F64);
        let repro = (Profile::Repro, Precision::F32);
        let whole = |p: (Profile, Precision)| {
            let mut r = runner(&BIQUAD, &params, p.0, p.1);
            r.run(std::slice::from_ref(&x), &[], x.len(), &[64])
                .remove(0)
                .split_off(cut)
        };
        let (strict_on, repro_on) = (whole(strict), whole(repro));
        // Strict → f32: the TDF-II state becomes the f32 filter's own state
        // with the same future, so it continues as strict does.
        let e = rel_rms(&carried(&params, &x, cut, strict, repro), &strict_on);
        assert!(e <= 1e-4, "strict → repro: {e:e}");
        // f32 → strict: the TDF-II state with the f32 filter's future.
        let e = rel_rms(&carried(&params, &x, cut, repro, strict), &repro_on);
        assert!(e <= 1e-4, "repro → strict: {e:e}");
        // f32 → f32 keeps the state exactly.
        assert_eq!(carried(&params, &x, cut, repro, repro), repro_on);
    }

    #[test]
    fn a_restored_strict_state_snapshotted_before_the_f32_node_runs_keeps_it() {
        let (params, x) = low_resonant();
        let cut = 16000;
        let mut strict = runner(&BIQUAD, &params, Profile::Strict, Precision::F64);
        strict.run(&[x[..cut].to_vec()], &[], cut, &[64]);
        let st = strict.snapshot();
        let continue_from = |st: &NodeState| {
            let mut r = runner(&BIQUAD, &params, Profile::Repro, Precision::F32);
            r.node().restore(st).unwrap();
            r.set_clock(cut as u64);
            r.run(&[x[cut..].to_vec()], &[], x.len() - cut, &[64])
                .remove(0)
        };
        // Restored, not yet run (the conversion waits for the params), and
        // snapshotted again: the same TDF-II state goes on.
        let mut waiting = runner(&BIQUAD, &params, Profile::Repro, Precision::F32);
        waiting.node().restore(&st).unwrap();
        assert_eq!(continue_from(&waiting.snapshot()), continue_from(&st));
    }
}
