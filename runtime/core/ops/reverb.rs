//! `reverb`: a 16-line feedback delay network with a Hadamard feedback
//! matrix and a two-band decay per line.
//!
//! Per sample, with `x` the input and every param read at that sample:
//!
//! ```text
//! u    = x delayed by predelay·sr (linear interpolation; 0 … 0.5 s)
//! y_i  = DC(line i's output (the sample written L_i frames ago))
//! z_i  = g_hi_i·y_i + (g_lo_i − g_hi_i)·LP(y_i)            the damping shelf
//! v    = ¼·H16·z                                          H16: Sylvester Hadamard
//! line i is fed  v_i + b_i·u                              b_i = ±¼
//! wet  = Σ c_i·y_i,  wet_r = Σ c_i·w_i·y_i                c_i = ±¼, w: Walsh row 6
//! out  = (1 − mix)·x + mix·wet,   out_r = (1 − mix)·x + mix·wet_r
//! ```
//!
//! **Stereo input.** When an edge feeds `in_r` (`x_r`), it has its own
//! predelay (`u_r`), line i is fed `v_i + b_i·u + b_i·w'_i·u_r` (`w'`:
//! Walsh row 9, so the right input's taps are orthogonal to the left's)
//! and `out_r = (1 − mix)·x_r + mix·wet_r`. Without that edge the network
//! is the mono one above, operation for operation.
//!
//! **Lengths.** Line i is nominally `BASE_S[i]·size` seconds (15 … 55 ms at
//! size 1); its length `L_i` in samples is the smallest prime at least that
//! many samples and above `L_{i−1}`, so the sixteen lengths are distinct
//! primes and pairwise coprime. `size` is static (it sizes the lines at
//! build); nothing else allocates.
//!
//! **Decay.** A line of `L` samples loses `g = 10^(−3·L/(sr·rt60))` per
//! pass, so every line decays 60 dB in `rt60` seconds whatever its length
//! (the feedback matrix is exactly orthogonal: ¼ is a power of two). The
//! two bands come from one first-order lowpass per line, the bilinear
//! `LP(z) = β(1 + z⁻¹)/(1 − α z⁻¹)` with `k = tan(π·crossover/sr)`,
//! `β = k/(1+k)`, `α = (1−k)/(1+k)`: `LP` is 1 at DC and 0 at Nyquist, and
//! `LP` and `1 − LP` are power complementary, so the shelf's magnitude is
//! `√(g_lo²·|LP|² + g_hi²·|1−LP|²)`: `g_lo` well below the crossover,
//! `g_hi` well above it, halfway (in power) at it, never above the larger
//! gain. The gains and `α`, `β` are designed (through the math policy's
//! coefficient functions) whenever `rt60_low`, `rt60_high` or `crossover`
//! change, so modulating them costs a design per sample.
//!
//! **DC.** Every line's output passes a DC blocker before it is read
//! into the outputs and fed back: the bilinear first-order highpass at
//! [`DC_HZ`], `DC(z) = (1 − z⁻¹)/((1 + k_dc)(1 − α_dc z⁻¹))` with
//! `k_dc = tan(π·DC_HZ/sr)`, `α_dc = (1 − k_dc)/(1 + k_dc)`. It is 0 at DC and
//! 1 at Nyquist, never above 1, so the loop stays stable and a DC offset
//! at the input leaves no offset in the wet signal: every path from the
//! input to `wet` passes a blocker, so the impulse response sums to 0 (up
//! to rounding). Without it the network's DC gain (the lines' low-band gain
//! fed back through the matrix) turned an offset into a larger one.
//!
//! **Stereo.** `out` and `out_r` read every line with orthogonal sign
//! vectors: over a diffuse tail the two are uncorrelated.
//!
//! **Fused (repro and live).** In f32 on a CPU with FMA (every one with
//! AVX2), the damping shelf, the DC blocker's state and the inputs' taps
//! are multiply-adds rounded once (`fuses`): `dc ← a·y − b·x` (with `b·x`
//! rounded as before), `LP ← β·y + s`, `s ← α·LP + (β·y)`, `z = g_hi·y +
//! (g_lo − g_hi)·LP` and `v_i + b_i·u` each one rounding; the same bits
//! at every instruction set and block size there. Strict and f64 nodes
//! never fuse.
//!
//! **State.** The lines (one flat array, line i at its offset), the
//! damping filters' and DC blockers' states, the predelay ring and the frame count since
//! reset (every ring's write index is the frame count modulo its length).
//! The lines and the predelay ring are long histories, saved and reset
//! in parts.

use super::{
    build_any, by_profile, frequency_lint, no_choices, number, BuildCtx, Io, Lint, NodeProcessor,
    NodeState, OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError, Value,
};
use crate::dsp::math::fuses;
use crate::dsp::state::ring_part;
use crate::dsp::vector::SimdLevel;
use crate::dsp::{Math, Precision, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const RT60_LOW: usize = REVERB.index_of("rt60_low");
const RT60_HIGH: usize = REVERB.index_of("rt60_high");
const CROSSOVER: usize = REVERB.index_of("crossover");
const PREDELAY: usize = REVERB.index_of("predelay");
const MIX: usize = REVERB.index_of("mix");
const SIZE: usize = REVERB.index_of("size");

/// Delay lines.
pub(crate) const LINES: usize = 16;

/// Nominal line lengths at size 1, in seconds: ×1.09 apart, 15 … 54.6 ms.
pub(crate) const BASE_S: [f64; LINES] = [
    0.0150, 0.0163, 0.0179, 0.0194, 0.0212, 0.0231, 0.0252, 0.0274, 0.0299, 0.0326, 0.0355, 0.0387,
    0.0422, 0.0460, 0.0501, 0.0546,
];

/// Signs of the input into each line (scaled by ¼).
const IN_SIGNS: [f64; LINES] = [
    1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 1.0,
];

/// Signs of each line into `out` (scaled by ¼); `out_r` multiplies them by
/// Walsh row [`RIGHT_ROW`], which makes the two sign vectors orthogonal.
const OUT_SIGNS: [f64; LINES] = [
    1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0,
];

/// The Walsh row (`(−1)^popcount(i & RIGHT_ROW)`) that turns `out`'s
/// signs into `out_r`'s.
const RIGHT_ROW: usize = 6;

/// The Walsh row (`(−1)^popcount(i & IN_RIGHT_ROW)`) that turns the input's
/// signs into the right input's, which makes the two orthogonal.
const IN_RIGHT_ROW: usize = 9;

/// The most samples the network runs before it adds up the wet sums.
const CHUNK: usize = 64;

/// ¼ = 1/√16: the Hadamard matrix's scale, and the input and output taps'.
const QUARTER: f64 = 0.25;

/// The DC blockers' corner (Hz): far below what a room rings at.
pub(crate) const DC_HZ: f64 = 5.0;

/// `rt60_low`/`rt60_high` are designed within this range (seconds).
const MIN_RT60: f64 = 0.05;
const MAX_RT60: f64 = 100.0;
/// The longest predelay (seconds); it sizes the predelay ring.
const MAX_PREDELAY: f64 = 0.5;
/// The crossover is designed within `[MIN_CROSSOVER, MAX_CROSSOVER_RATIO·sr]`.
const MIN_CROSSOVER: f64 = 10.0;
const MAX_CROSSOVER_RATIO: f64 = 0.49;
/// `size` range.
const MIN_SIZE: f64 = 0.25;
const MAX_SIZE: f64 = 4.0;
/// The most samples the lines may hold in all (a guard against a huge
/// sample rate): 2^26.
const MAX_LINE_SAMPLES: usize = 1 << 26;

const PI: f64 = core::f64::consts::PI;

/// `v` within `[lo, hi]`; NaN gives `lo`.
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

fn is_prime(n: usize) -> bool {
    if n < 2 {
        return false;
    }
    let mut d = 2;
    while d * d <= n {
        if n.is_multiple_of(d) {
            return false;
        }
        d += 1;
    }
    true
}

/// The line lengths in samples at this sample rate and size: the smallest
/// prime at least `BASE_S[i]·size·sr` (rounded) and above the previous
/// line's, so all sixteen are distinct primes.
pub(crate) fn line_lengths(sample_rate: f64, size: f64) -> Result<[usize; LINES], String> {
    let size = limit(size, MIN_SIZE, MAX_SIZE);
    let mut out = [0usize; LINES];
    let mut prev = 1usize;
    let mut total = 0usize;
    for (i, base) in BASE_S.iter().enumerate() {
        let want = (base * size * sample_rate).round();
        if !(want.is_finite() && want < MAX_LINE_SAMPLES as f64) {
            return Err(format!(
                "`size` {size} makes the delay lines too long at {sample_rate} Hz"
            ));
        }
        let mut n = (want as usize).max(prev + 1);
        while !is_prime(n) {
            n += 1;
        }
        out[i] = n;
        prev = n;
        total += n;
    }
    if total > MAX_LINE_SAMPLES {
        return Err(format!(
            "`size` {size} makes the delay lines too long at {sample_rate} Hz ({total} samples)"
        ));
    }
    Ok(out)
}

/// `(−1)^popcount(i & row)`.
const fn walsh(row: usize, i: usize) -> f64 {
    if (i & row).count_ones().is_multiple_of(2) {
        1.0
    } else {
        -1.0
    }
}

/// `a·b + c` rounded once. Call it only where FMA instructions are
/// enabled (`Reverb::run_avx2`; elsewhere `mul_add` is a library call,
/// the same bits, slowly).
#[inline(always)]
#[allow(clippy::disallowed_methods)] // f32 under repro and live only: `fuses`
fn fused<S: Sample>(a: S, b: S, c: S) -> S {
    match S::PRECISION {
        Precision::F32 => S::from_f32(a.to_f32().mul_add(b.to_f32(), c.to_f32())),
        Precision::F64 => S::from_f64(a.to_f64().mul_add(b.to_f64(), c.to_f64())),
    }
}

/// `v ← ¼·H16·v`, the Sylvester Hadamard matrix in four butterfly stages:
/// orthogonal exactly (up to the rounding of the sums). Stage `h` (1, 2,
/// 4, 8) pairs lines `j` and `j + h` (bit `h` of `j` clear) into `a + b` and
/// `a − b`; each stage is written lane-wise, one operation for all sixteen
/// lines, so it compiles to vector adds and shuffles.
#[inline(always)]
fn hadamard<S: Sample>(v: &mut [S; LINES]) {
    butterfly_swapped::<S, 1>(v);
    butterfly_swapped::<S, 2>(v);
    butterfly_halves::<S, 4>(v);
    butterfly_halves::<S, 8>(v);
    let q = S::from_f64(QUARTER);
    for x in v.iter_mut() {
        *x *= q;
    }
}

/// One butterfly stage as `v[j ^ H] ± v[j]`: `v[j + H] + v[j]` where bit
/// `H` of `j` is clear (the same sum as `v[j] + v[j + H]`), `v[j − H] +
/// (−v[j])` where it is set (the same as `v[j − H] − v[j]`). For a stride
/// inside one vector register (1, 2), this form is a shuffle and an add.
#[inline(always)]
fn butterfly_swapped<S: Sample, const H: usize>(v: &mut [S; LINES]) {
    let mut swapped = [S::ZERO; LINES];
    for (j, s) in swapped.iter_mut().enumerate() {
        *s = v[j ^ H];
    }
    for (j, x) in v.iter_mut().enumerate() {
        *x = swapped[j] + if j & H == 0 { *x } else { -*x };
    }
}

/// One butterfly stage on runs of `H` lines (4, 8): `a + b`, `a − b` over
/// whole runs, which are whole vector registers or halves of them.
#[inline(always)]
fn butterfly_halves<S: Sample, const H: usize>(v: &mut [S; LINES]) {
    for pair in v.chunks_exact_mut(2 * H) {
        let (lo, hi) = pair.split_at_mut(H);
        for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
            let (x, y) = (*a, *b);
            *a = x + y;
            *b = x - y;
        }
    }
}

/// The per-line gain for a decay of 60 dB in `rt60` seconds over a line of
/// `len` samples: `10^(−3·len/(sr·rt60))`.
pub(crate) fn line_gain<M: Math>(len: usize, sample_rate: f64, rt60: f64) -> f64 {
    M::coef_pow(10.0, -3.0 * len as f64 / (sample_rate * rt60))
}

/// One sample of the predelay: `x` (and `x_r` when `STEREO`) written at
/// `*w`, then read `delay.0` samples back with linear interpolation towards
/// the sample before by `delay.1`; written first, so 0 s passes the input
/// through.
#[inline(always)]
fn predelay_step<S: Sample, const STEREO: bool>(
    pre: &mut [S],
    pre_r: &mut [S],
    w: &mut usize,
    delay: (usize, S),
    x: S,
    x_r: S,
) -> (S, S) {
    let (k, frac) = delay;
    let plen = pre.len();
    pre[*w] = x;
    let mut at = *w + plen - k;
    if at >= plen {
        at -= plen;
    }
    let before = if at == 0 { plen - 1 } else { at - 1 };
    let (pa, pb) = (pre[at], pre[before]);
    let u = pa + frac * (pb - pa);
    let u_r = if STEREO {
        pre_r[*w] = x_r;
        let (pa, pb) = (pre_r[at], pre_r[before]);
        pa + frac * (pb - pa)
    } else {
        S::ZERO
    };
    *w += 1;
    if *w == plen {
        *w = 0;
    }
    (u, u_r)
}

/// [`predelay_step`] for each sample of `x` (and `x_r`) in turn, the
/// results into `u` (and `u_r`): the same bits. Where the run's writes do
/// not wrap (`w + n ≤ len`) and its reads do not either (`w > k`), every
/// read is of a sample written before the run or by an earlier step of it
/// (`w − k + t ≤ w + t`), so the run writes its samples first and then
/// reads and interpolates them all, with no test per sample.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn predelay_run<S: Sample, const STEREO: bool>(
    pre: &mut [S],
    pre_r: &mut [S],
    w: &mut usize,
    delay: (usize, S),
    x: &[S],
    x_r: &[S],
    u: &mut [S],
    u_r: &mut [S],
) {
    let (k, frac) = delay;
    let (n, plen) = (x.len(), pre.len());
    if *w <= k || *w + n > plen {
        for t in 0..n {
            (u[t], u_r[t]) = predelay_step::<S, STEREO>(pre, pre_r, w, delay, x[t], x_r[t]);
        }
        return;
    }
    let at = *w - k;
    let through = |pre: &mut [S], x: &[S], u: &mut [S]| {
        pre[*w..*w + n].copy_from_slice(x);
        let (now, before) = (&pre[at..at + n], &pre[at - 1..at - 1 + n]);
        for ((u, &pa), &pb) in u[..n].iter_mut().zip(now).zip(before) {
            *u = pa + frac * (pb - pa);
        }
    };
    through(pre, x, u);
    if STEREO {
        through(pre_r, x_r, u_r);
    } else {
        u_r[..n].fill(S::ZERO);
    }
    *w += n;
    if *w == plen {
        *w = 0;
    }
}

/// `reverb` at one precision and math policy.
struct Reverb<S, M> {
    /// Every line, line i at `off[i] .. off[i] + len[i]`.
    lines: Vec<S>,
    off: [usize; LINES],
    len: [usize; LINES],
    /// Where line i reads and then writes, as an index into `lines`:
    /// `off[i] + frames mod len[i]`.
    pos: [usize; LINES],
    /// The damping lowpasses' states (transposed direct form II).
    damp: [S; LINES],
    /// The DC blockers' states (transposed direct form II) and coefficients:
    /// `out = b·y + st; st = α_dc·out − b·y`, `b = 1/(1 + k_dc)`.
    dc: [S; LINES],
    dc_b: S,
    dc_alpha: S,
    /// The predelay ring and where it writes (`frames mod pre.len()`).
    pre: Vec<S>,
    pre_w: usize,
    /// The right input's predelay ring (as long as `pre`, written at
    /// `pre_w`) when an edge feeds `in_r`; empty otherwise.
    pre_r: Vec<S>,
    /// The lines' outputs (after the DC blockers) of the current run, line
    /// by line: scratch for the wet sums, not state.
    ys: Box<[[S; CHUNK]; LINES]>,
    /// Frames since build or reset.
    frames: u64,
    /// The designed shelf: `g_hi`, `g_lo − g_hi` per line, and `α`, `β`.
    g_hi: [S; LINES],
    g_diff: [S; LINES],
    alpha: S,
    beta: S,
    /// The (rt60_low, rt60_high, crossover) bits last designed for.
    key: Option<[u64; 3]>,
    in_gain: [S; LINES],
    /// The right input's taps into the lines (used when `in_r` is fed).
    in_gain_r: [S; LINES],
    out_l: [S; LINES],
    out_r: [S; LINES],
    sample_rate: f64,
    /// The longest predelay in samples (`pre.len() − 2`).
    max_pre: f64,
    /// The instruction set [`Reverb::run`] uses (the same bits at every one).
    level: SimdLevel,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Reverb<S, M> {
    /// Designs the shelf when the three params differ from the last design.
    #[inline]
    fn design(&mut self, rt60_low: f64, rt60_high: f64, crossover: f64) {
        let key = [rt60_low.to_bits(), rt60_high.to_bits(), crossover.to_bits()];
        if self.key == Some(key) {
            return;
        }
        self.key = Some(key);
        let sr = self.sample_rate;
        let lo = limit(rt60_low, MIN_RT60, MAX_RT60);
        let hi = limit(rt60_high, MIN_RT60, MAX_RT60);
        let fc = crossover_hz(crossover, sr);
        let k = M::coef_tan(PI * fc / sr);
        self.alpha = S::from_f64((1.0 - k) / (1.0 + k));
        self.beta = S::from_f64(k / (1.0 + k));
        for i in 0..LINES {
            let g_lo = line_gain::<M>(self.len[i], sr, lo);
            let g_hi = line_gain::<M>(self.len[i], sr, hi);
            self.g_hi[i] = S::from_f64(g_hi);
            self.g_diff[i] = S::from_f64(g_lo - g_hi);
        }
    }

    /// `x` (and `x_r`, when `in_r` is fed) through the network into `left`,
    /// `right` (as long as `x`), with `predelay` (seconds) and `mix` (as
    /// given) held for the run, at the instruction set `level` allows.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        level: SimdLevel,
        x: &[S],
        x_r: Option<&[S]>,
        left: &mut [S],
        right: &mut [S],
        predelay: f64,
        mix: f64,
    ) {
        #[cfg(target_arch = "x86_64")]
        if level.has_avx2() {
            // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
            return unsafe { self.run_avx2(level, x, x_r, left, right, predelay, mix) };
        }
        self.run_any(level, x, x_r, left, right, predelay, mix)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn run_avx2(
        &mut self,
        level: SimdLevel,
        x: &[S],
        x_r: Option<&[S]>,
        left: &mut [S],
        right: &mut [S],
        predelay: f64,
        mix: f64,
    ) {
        self.run_any(level, x, x_r, left, right, predelay, mix)
    }

    /// The mono network, or the stereo one when `x_r` is given.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn run_any(
        &mut self,
        level: SimdLevel,
        x: &[S],
        x_r: Option<&[S]>,
        left: &mut [S],
        right: &mut [S],
        predelay: f64,
        mix: f64,
    ) {
        match (x_r, fuses::<S, M>(level)) {
            (None, false) => {
                self.run_lanes::<false, false>(level, x, x, left, right, predelay, mix)
            }
            (None, true) => self.run_lanes::<false, true>(level, x, x, left, right, predelay, mix),
            (Some(x_r), false) => {
                self.run_lanes::<true, false>(level, x, x_r, left, right, predelay, mix)
            }
            (Some(x_r), true) => {
                self.run_lanes::<true, true>(level, x, x_r, left, right, predelay, mix)
            }
        }
    }

    /// The network in runs of at most [`CHUNK`] samples (without AVX2,
    /// runs in which no line's ring wraps). Each sample's step is written
    /// for all sixteen lines at once (fixed-size arrays the compiler turns
    /// into vector operations); with AVX2 or AVX-512 (`level`), groups of
    /// samples (AVX-512: sixteen in f32, eight in f64; AVX2: eight in f32,
    /// four in f64) run through `reverb_lanes.rs`, which reads and writes
    /// each line's samples as a row and transposes them, and adds the
    /// group's wet sums itself; the samples of a run no group holds take
    /// the step one at a time. Otherwise the lines' outputs of the run are kept line by
    /// line, and the two wet sums then add them line by line for every
    /// sample of the run at once (the samples side by side in vector
    /// lanes). Every lane does the operations of the formulas in
    /// the module docs in that order, and each wet sum adds the lines in
    /// order 0 … 15, so the bits are the same at every instruction set and
    /// block size. `STEREO` feeds `x_r` into the lines through the right
    /// input's taps and into `out_r`'s dry part. `FUSED` ([`fuses`]) rounds
    /// the module docs' multiply-adds once, in the groups and in the step
    /// one sample at a time alike.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn run_lanes<const STEREO: bool, const FUSED: bool>(
        &mut self,
        level: SimdLevel,
        x: &[S],
        x_r: &[S],
        left: &mut [S],
        right: &mut [S],
        predelay: f64,
        mix: f64,
    ) {
        let d = limit(predelay * self.sample_rate, 0.0, self.max_pre);
        let whole = d.floor();
        let frac = S::from_f64(d - whole);
        let k = whole as usize; // 0 ≤ k ≤ plen − 2
        let mix = limit(mix, 0.0, 1.0);
        let (dry, wet) = (S::from_f64(1.0 - mix), S::from_f64(mix));
        let (b, a) = (self.dc_b, self.dc_alpha);
        let (alpha, beta) = (self.alpha, self.beta);
        let (g_hi, g_diff, in_gain, in_gain_r) =
            (self.g_hi, self.g_diff, self.in_gain, self.in_gain_r);
        let (out_l, out_r) = (self.out_l, self.out_r);
        let (mut dc, mut damp, mut pos) = (self.dc, self.damp, self.pos);
        let start = self.off;
        let end: [usize; LINES] = std::array::from_fn(|i| self.off[i] + self.len[i]);
        let lines = &mut self.lines[..];
        let pre = &mut self.pre[..];
        let pre_r = &mut self.pre_r[..];
        let ys = &mut *self.ys;
        let mut pre_w = self.pre_w;
        // Groups of samples at a time where the CPU allows it
        // (`reverb_lanes.rs`): the same bits as the step below.
        let isa = level.isa();
        // A group reads and writes a run of each line: no groups where a
        // line is shorter (low sample rates at small sizes), where the
        // step one sample at a time gives the same bits. Line 0 is the
        // shortest ([`line_lengths`]).
        let group = match lanes::group_len::<S>(isa) {
            g if self.len[0] < g => 0,
            g => g,
        };
        let groups = group > 0;
        let mut coefs = lanes::Coefs {
            dc_b: b,
            dc_alpha: a,
            alpha,
            beta,
            g_hi,
            g_diff,
            in_gain,
            in_gain_r,
            out_l,
            out_r,
        };
        let n = x.len();
        let mut done = 0;
        while done < n {
            // A run of at most `CHUNK` samples. Without groups, one no ring
            // wraps in: line i reads and writes `pos[i] + j`. With groups,
            // `pos` advances sample by sample and wraps where it must.
            let mut m = (n - done).min(CHUNK);
            if !groups {
                for i in 0..LINES {
                    m = m.min(end[i] - pos[i]);
                }
            }
            let xs = &x[done..done + m];
            let xs_r = &x_r[done..done + m];
            // The run's predelayed input, what the lines are fed.
            // (A group's inputs are read in place: room for a whole
            // `MAX_GROUP` from any group's start.)
            let mut us = [S::ZERO; CHUNK + lanes::MAX_GROUP];
            let mut us_r = [S::ZERO; CHUNK + lanes::MAX_GROUP];
            predelay_run::<S, STEREO>(
                pre,
                pre_r,
                &mut pre_w,
                (k, frac),
                xs,
                xs_r,
                &mut us,
                &mut us_r,
            );
            let mut j = 0;
            while j < m {
                #[cfg(target_arch = "x86_64")]
                if groups && m - j >= group {
                    let u: &mut [S; lanes::MAX_GROUP] =
                        (&mut us[j..j + lanes::MAX_GROUP]).try_into().unwrap();
                    let u_r: &mut [S; lanes::MAX_GROUP] =
                        (&mut us_r[j..j + lanes::MAX_GROUP]).try_into().unwrap();
                    let mut net = lanes::Net {
                        lines: &mut *lines,
                        pos: &pos,
                        start: &start,
                        end: &end,
                        dc: &mut dc,
                        damp: &mut damp,
                    };
                    let wet_l = left[done + j..].as_mut_ptr();
                    let wet_r = right[done + j..].as_mut_ptr();
                    // SAFETY: `group` is not 0 only for an `isa` of a
                    // `SimdLevel`, which this CPU has;
                    // `pos`, `start` and `end` are the lines' own rings (each
                    // longer than a group); `left` and `right` hold
                    // `done + m ≥ done + j + group` samples.
                    unsafe {
                        lanes::step::<S, STEREO, FUSED>(
                            isa,
                            &mut net,
                            (u, u_r),
                            &mut coefs,
                            (wet_l, wet_r),
                        );
                    }
                    for i in 0..LINES {
                        pos[i] += group;
                        if pos[i] >= end[i] {
                            pos[i] -= end[i] - start[i];
                        }
                    }
                    j += group;
                    continue;
                }
                let (u, u_r) = (us[j], us_r[j]);
                let at: [usize; LINES] = if groups {
                    pos
                } else {
                    std::array::from_fn(|i| pos[i] + j)
                };
                let mut y = [S::ZERO; LINES];
                for i in 0..LINES {
                    debug_assert!(at[i] < end[i] && end[i] <= lines.len());
                    // SAFETY: `at[i] < end[i] ≤ lines.len()`: with groups
                    // `pos[i]` wraps before it reaches `end[i]`; without,
                    // `pos[i] + j < pos[i] + m ≤ end[i]` (the run ends
                    // before any ring wraps).
                    y[i] = unsafe { *lines.get_unchecked(at[i]) };
                }
                let mut v = [S::ZERO; LINES];
                for i in 0..LINES {
                    let by = b * y[i];
                    let yi = by + dc[i];
                    ys[i][j] = yi;
                    if FUSED {
                        dc[i] = fused(a, yi, -by);
                        let lp = fused(beta, yi, damp[i]);
                        damp[i] = fused(alpha, lp, beta * yi);
                        v[i] = fused(g_hi[i], yi, g_diff[i] * lp);
                    } else {
                        dc[i] = a * yi - by;
                        let lp = beta * yi + damp[i];
                        damp[i] = beta * yi + alpha * lp;
                        v[i] = g_hi[i] * yi + g_diff[i] * lp;
                    }
                }
                hadamard(&mut v);
                for i in 0..LINES {
                    v[i] = if FUSED {
                        fused(in_gain[i], u, v[i])
                    } else {
                        v[i] + in_gain[i] * u
                    };
                }
                if STEREO {
                    for i in 0..LINES {
                        v[i] = if FUSED {
                            fused(in_gain_r[i], u_r, v[i])
                        } else {
                            v[i] + in_gain_r[i] * u_r
                        };
                    }
                }
                for i in 0..LINES {
                    // SAFETY: as for the read above.
                    unsafe { *lines.get_unchecked_mut(at[i]) = v[i] };
                }
                if groups {
                    for i in 0..LINES {
                        pos[i] += 1;
                        if pos[i] == end[i] {
                            pos[i] = start[i];
                        }
                    }
                }
                j += 1;
            }
            if !groups {
                for i in 0..LINES {
                    pos[i] += m;
                    if pos[i] == end[i] {
                        pos[i] = start[i];
                    }
                }
            }
            // The wet sums of the samples no group ran (the groups wrote
            // theirs), line by line, for all of them at once.
            let tail = if groups { m - (m % group) } else { 0 };
            let l = &mut left[done..done + m];
            let r = &mut right[done..done + m];
            l[tail..].fill(S::ZERO);
            r[tail..].fill(S::ZERO);
            for i in 0..LINES {
                let (cl, cr) = (out_l[i], out_r[i]);
                let yi = &ys[i][tail..m];
                for ((l, r), &y) in l[tail..].iter_mut().zip(r[tail..].iter_mut()).zip(yi) {
                    if FUSED {
                        *l = fused(cl, y, *l);
                        *r = fused(cr, y, *r);
                    } else {
                        *l += cl * y;
                        *r += cr * y;
                    }
                }
            }
            for ((l, r), (&x, &x_r)) in l.iter_mut().zip(r.iter_mut()).zip(xs.iter().zip(xs_r)) {
                *l = dry * x + wet * *l;
                *r = dry * if STEREO { x_r } else { x } + wet * *r;
            }
            done += m;
        }
        self.dc = dc;
        self.damp = damp;
        self.pos = pos;
        self.pre_w = pre_w;
        self.frames += n as u64;
    }

    /// Every ring's write index from the frame count.
    fn set_positions(&mut self) {
        for i in 0..LINES {
            self.pos[i] = self.off[i] + (self.frames % self.len[i] as u64) as usize;
        }
        self.pre_w = (self.frames % self.pre.len() as u64) as usize;
    }

    /// The longest history, in samples.
    fn longest(&self) -> usize {
        self.len
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(self.pre.len())
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Reverb<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let p = &io.params;
        let (rl, rh, xo, pd, mix) = (
            p.get(RT60_LOW),
            p.get(RT60_HIGH),
            p.get(CROSSOVER),
            p.get(PREDELAY),
            p.get(MIX),
        );
        let x = &io.inputs[0][..n];
        let x_r = (!self.pre_r.is_empty()).then(|| &io.inputs[1][..n]);
        let (left, right) = io.outputs.split_at_mut(1);
        let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
        if rl.is_const() && rh.is_const() && xo.is_const() && pd.is_const() && mix.is_const() {
            self.design(rl.value(), rh.value(), xo.value());
            self.run(self.level, x, x_r, left, right, pd.value(), mix.value());
        } else {
            for i in 0..n {
                self.design(rl.at(i), rh.at(i), xo.at(i));
                let (l, r) = (&mut left[i..i + 1], &mut right[i..i + 1]);
                let x_r = x_r.map(|x_r| &x_r[i..i + 1]);
                self.run(self.level, &x[i..i + 1], x_r, l, r, pd.at(i), mix.at(i));
            }
        }
    }

    fn reset(&mut self) {
        self.lines.fill(S::ZERO);
        self.pre.fill(S::ZERO);
        self.pre_r.fill(S::ZERO);
        self.damp = [S::ZERO; LINES];
        self.dc = [S::ZERO; LINES];
        self.frames = 0;
        self.set_positions();
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_samples("lines", &self.lines);
        st.put_samples("damp", &self.damp);
        st.put_samples("dc", &self.dc);
        st.put_samples("predelay", &self.pre);
        if !self.pre_r.is_empty() {
            st.put_samples("predelay_r", &self.pre_r);
        }
        st.put_u64("frames", self.frames);
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget.max(1));
        part.zero(&mut self.lines, S::ZERO);
        part.zero(&mut self.pre, S::ZERO);
        part.zero(&mut self.pre_r, S::ZERO);
        let p = part.progress();
        if p == Progress::Done {
            self.damp = [S::ZERO; LINES];
            self.dc = [S::ZERO; LINES];
            self.frames = 0;
            self.set_positions();
        }
        p
    }

    /// Every line and the predelay ring oldest sample first from its write
    /// index at N (the sample the next frame reads, then overwrites); the
    /// damping states and the frame count at N in the first part.
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        let budget = budget.max(1);
        let frames = if done == 0 {
            self.frames
        } else {
            st.get_u64("frames").unwrap_or(self.frames)
        };
        let total = self.lines.len();
        for i in 0..LINES {
            let len = self.len[i];
            let start = (frames % len as u64) as usize;
            let (ranges, _) = ring_part(len, start, done, budget);
            for r in ranges {
                if !r.is_empty() {
                    let at = self.off[i] + r.start;
                    st.put_samples_part("lines", total, at, &self.lines[at..at + r.len()]);
                }
            }
        }
        if done == 0 {
            st.put_samples("damp", &self.damp);
            st.put_samples("dc", &self.dc);
        }
        let pstart = (frames % self.pre.len() as u64) as usize;
        st.put_ring_part("predelay", &self.pre, pstart, done, budget);
        if !self.pre_r.is_empty() {
            st.put_ring_part("predelay_r", &self.pre_r, pstart, done, budget);
        }
        if done == 0 {
            st.put_u64("frames", frames);
        }
        let next = done.saturating_add(budget);
        if next >= self.longest() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let frames = st.get_u64("frames")?;
        st.get_samples("lines", &mut self.lines)?;
        st.get_samples("damp", &mut self.damp)?;
        st.get_samples("dc", &mut self.dc)?;
        st.get_samples("predelay", &mut self.pre)?;
        if !self.pre_r.is_empty() {
            st.get_samples("predelay_r", &mut self.pre_r)?;
        }
        self.frames = frames;
        self.set_positions();
        Ok(())
    }
}

impl<S: Sample, M: Math> Reverb<S, M> {
    /// The node `cx` describes, silent, its shelf designed for the static
    /// params.
    fn new(cx: &BuildCtx<'_>) -> Result<Reverb<S, M>, String> {
        let len = line_lengths(cx.sample_rate, cx.number(SIZE))?;
        let mut off = [0usize; LINES];
        let mut total = 0;
        for i in 0..LINES {
            off[i] = total;
            total += len[i];
        }
        let pre = (MAX_PREDELAY * cx.sample_rate).ceil();
        if !(pre.is_finite() && pre >= 0.0 && pre < MAX_LINE_SAMPLES as f64) {
            return Err(format!(
                "the predelay ring is too long at {} Hz",
                cx.sample_rate
            ));
        }
        let max_pre = pre as usize;
        let q = QUARTER;
        let k_dc = M::coef_tan(PI * DC_HZ / cx.sample_rate);
        let mut node = Reverb::<S, M> {
            lines: vec![S::ZERO; total],
            off,
            len,
            pos: off,
            damp: [S::ZERO; LINES],
            dc: [S::ZERO; LINES],
            dc_b: S::from_f64(1.0 / (1.0 + k_dc)),
            dc_alpha: S::from_f64((1.0 - k_dc) / (1.0 + k_dc)),
            pre: vec![S::ZERO; max_pre + 2],
            pre_w: 0,
            pre_r: if cx.input_connected(1) {
                vec![S::ZERO; max_pre + 2]
            } else {
                Vec::new()
            },
            ys: Box::new([[S::ZERO; CHUNK]; LINES]),
            frames: 0,
            g_hi: [S::ZERO; LINES],
            g_diff: [S::ZERO; LINES],
            alpha: S::ZERO,
            beta: S::ZERO,
            key: None,
            in_gain: IN_SIGNS.map(|s| S::from_f64(s * q)),
            in_gain_r: std::array::from_fn(|i| {
                S::from_f64(IN_SIGNS[i] * walsh(IN_RIGHT_ROW, i) * q)
            }),
            out_l: OUT_SIGNS.map(|s| S::from_f64(s * q)),
            out_r: std::array::from_fn(|i| S::from_f64(OUT_SIGNS[i] * walsh(RIGHT_ROW, i) * q)),
            sample_rate: cx.sample_rate,
            max_pre: max_pre as f64,
            level: SimdLevel::detect(),
            _m: PhantomData,
        };
        node.design(
            cx.number(RT60_LOW),
            cx.number(RT60_HIGH),
            cx.number(CROSSOVER),
        );
        Ok(node)
    }
}

struct ReverbOp;
impl Operator for ReverbOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Reverb::<S, M>::new(cx)?))
    }
}

/// The crossover the damping shelf is designed at: within
/// `[MIN_CROSSOVER, MAX_CROSSOVER_RATIO·sr]`.
#[inline]
fn crossover_hz(crossover: f64, sample_rate: f64) -> f64 {
    limit(crossover, MIN_CROSSOVER, MAX_CROSSOVER_RATIO * sample_rate)
}

/// A crossover above what the shelf designs with: it is designed at
/// 0.49 × the sample rate.
fn reverb_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    frequency_lint(
        values,
        CROSSOVER,
        "crossover",
        sample_rate,
        MAX_CROSSOVER_RATIO,
        "the damping shelf is designed at",
        crossover_hz,
    )
    .into_iter()
    .collect()
}

pub(crate) static REVERB: OpSpec = OpSpec {
    name: "reverb",
    doc: "Algorithmic reverb: a 16-line feedback delay network (lengths distinct primes, \
          15 … 55 ms × size; feedback ¼·Hadamard, orthogonal), each line damped by a \
          first-order shelf so the tail decays 60 dB in rt60_low below the crossover and \
          in rt60_high above it; a DC blocker (a 5 Hz highpass) on every line keeps an \
          offset out of the wet signal. The input is predelayed; out and out_r read the lines \
          through orthogonal sign vectors (a decorrelated stereo tail); \
          out = (1−mix)·in + mix·wet. When an edge feeds in_r, the input is stereo: in_r is \
          predelayed too and enters the lines through its own sign vector (orthogonal to in's), \
          and out_r = (1−mix)·in_r + mix·wet_r; without it, in feeds both.",
    inputs: &["in", "in_r"],
    outputs: &["out", "out_r"],
    params: &[
        number(
            "rt60_low",
            Dimension::Time,
            2.0,
            MIN_RT60,
            MAX_RT60,
            "time to decay 60 dB below the crossover",
        ),
        number(
            "rt60_high",
            Dimension::Time,
            1.0,
            MIN_RT60,
            MAX_RT60,
            "time to decay 60 dB above the crossover",
        ),
        number(
            "crossover",
            Dimension::Frequency,
            1500.0,
            20.0,
            1e6,
            "where the decay turns from rt60_low to rt60_high (a first-order shelf; designed at ≤ 0.49 × the sample rate)",
        ),
        number(
            "predelay",
            Dimension::Time,
            0.02,
            0.0,
            MAX_PREDELAY,
            "delay before the input enters the network (modulation is clamped to 0 … 0.5 s)",
        ),
        number(
            "mix",
            Dimension::Scalar,
            0.3,
            0.0,
            1.0,
            "wet fraction of both outputs (0 dry, 1 wet only)",
        ),
        ParamSpec {
            name: "size",
            kind: ParamKind::Number {
                dim: Dimension::Scalar,
                default: 1.0,
                min: MIN_SIZE,
                max: MAX_SIZE,
                modulatable: false,
            },
            doc: "scales every line's length (the room's size); sets the lines at build",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: reverb_lints,
    cost: |p, _| by_profile(p, [31.0, 18.0, 19.0]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<ReverbOp>,
};

#[path = "reverb_lanes.rs"]
mod lanes;

#[cfg(test)]
#[path = "reverb_tests.rs"]
mod tests;
