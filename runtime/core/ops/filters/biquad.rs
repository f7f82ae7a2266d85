//! `biquad`: the RBJ Audio-EQ-Cookbook filters (lowpass, highpass,
//! bandpass, notch, peak, allpass, lowshelf, highshelf) in transposed
//! direct form II, with the cookbook design in f64. The shelves use the
//! cookbook's Q form (α = sin ω0 / 2Q; Q = 1/√2 is its steepest shelf
//! without overshoot, S = 1).
//!
//! The recursion, its coefficients and its state are f64 at every
//! precision; an f32 node reads and writes f32 samples. TDF-II in f32
//! fails at low cutoffs: with the poles near z = 1, `a1 ≈ −2` and
//! `a2 ≈ 1` rounded to f32 move the poles by a large fraction of their
//! distance from 1, and the state's rounding is amplified by about 1/ω0²
//! (a 10 Hz resonant lowpass came out 13 % off, its gain depending on the
//! input's level). A state-variable form would hold in f32 while the
//! cutoff holds still, but it carries its state through a moving cutoff
//! differently from strict's TDF-II (6.5e-3 apart for a bandpass swept at
//! 20 Hz); one recursion in f64 is strict's filter under any modulation.
//!
//! An f32 node under repro or live, on a CPU with FMA (every one with
//! AVX2), runs the recursion with fused multiply-adds
//! ([`Biquad::tick_fused`]), alone and in lanes alike: five operations a
//! sample instead of nine, each rounded once (closer to exact than
//! strict's), the same bits with AVX2 as with AVX-512. Strict never fuses,
//! and f64 nodes and CPUs without AVX2 run the unfused recursion.

use super::{
    built_enum, design_cutoff_hz, enum_index, limit, DesignCache, CUTOFF_PARAM, MAX_CUTOFF_RATIO,
    MAX_Q, MIN_CUTOFF_HZ, MIN_Q, Q_PARAM, TWO_PI,
};
use crate::dsp::math::fuses;
#[cfg(target_arch = "x86_64")]
use crate::dsp::vector;
use crate::dsp::vector::{Isa, SimdLevel};
use crate::dsp::{Math, MathKind, Precision, Sample};
use crate::ops::{
    build_any, by_profile, frequency_lint, no_choices, number, BuildCtx, Io, LaneKernel,
    LaneMember, LaneSum, Lint, NodeProcessor, NodeState, OpSpec, Operator, ParamKind, ParamSpec,
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

/// An RBJ biquad in transposed direct form II, its samples at precision
/// `S`, its recursion in f64.
struct Biquad<S, M> {
    mode: BiquadMode,
    sample_rate: f64,
    cache: DesignCache<3>,
    /// `[b0, b1, b2, a1, a2]`.
    coefs: [f64; 5],
    z1: f64,
    z2: f64,
    /// Runs [`tick_fused`](Self::tick_fused) ([`fuses`]).
    fused: bool,
    _m: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> Biquad<S, M> {
    #[inline]
    fn update(&mut self, cutoff_hz: f64, q: f64, gain: f64) {
        if self.cache.stale([cutoff_hz, q, gain]) {
            let c = biquad_design::<M>(self.mode, cutoff_hz, q, gain, self.sample_rate);
            self.coefs = c;
        }
    }

    /// One TDF-II step: y = b0·x + z1; z1 = (b1·x − a1·y) + z2; z2 = b2·x − a2·y.
    #[inline]
    fn tick(c: &[f64; 5], z1: &mut f64, z2: &mut f64, x: f64) -> f64 {
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
    fn tick_short(c: &[f64; 5], z1: &mut f64, z2: &mut f64, x: f64) -> f64 {
        let y = c[0] * x + *z1;
        *z1 = (c[1] * x + *z2) - c[3] * y;
        *z2 = c[2] * x - c[4] * y;
        y
    }

    /// [`tick_short`](Self::tick_short) with fused multiply-adds:
    /// y = fma(b0, x, z1); z1 = fma(−a1, y, fma(b1, x, z2));
    /// z2 = fma(−a2, y, b2·x). Call it only where FMA instructions are
    /// enabled (else `mul_add` is a library call).
    #[inline(always)]
    #[allow(clippy::disallowed_methods)] // repro and live only: `fuses`
    fn tick_fused(c: &[f64; 5], z1: &mut f64, z2: &mut f64, x: f64) -> f64 {
        let y = c[0].mul_add(x, *z1);
        *z1 = (-c[3]).mul_add(y, c[1].mul_add(x, *z2));
        *z2 = (-c[4]).mul_add(y, c[2] * x);
        y
    }

    /// A sample through [`tick`](Self::tick) (`tick_short` under live,
    /// `tick_fused` where `FUSED`), in f64: at f64 the conversions are the
    /// identity.
    #[inline(always)]
    fn step<const FUSED: bool>(c: &[f64; 5], z1: &mut f64, z2: &mut f64, x: S) -> S {
        let x = x.to_f64();
        S::from_f64(if FUSED {
            Self::tick_fused(c, z1, z2, x)
        } else if M::KIND == MathKind::Fast {
            Self::tick_short(c, z1, z2, x)
        } else {
            Self::tick(c, z1, z2, x)
        })
    }

    /// `input` through the recursion into `out`, the coefficients designed
    /// once when the params hold still, else sample by sample.
    #[inline(always)]
    fn run<const FUSED: bool>(&mut self, io: &mut Io<'_, S>) {
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
                *o = Self::step::<FUSED>(&c, &mut z1, &mut z2, x);
            }
        } else {
            for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
                self.update(cutoff.at(i), q.at(i), gain.at(i));
                *o = Self::step::<FUSED>(&self.coefs, &mut z1, &mut z2, x);
            }
        }
        // A direct-form filter driven unstable by extreme modulation would
        // keep its non-finite state forever; start again from silence (the
        // engine has already replaced the bad output and reported the node).
        if z1.is_finite() && z2.is_finite() {
            self.z1 = z1;
            self.z2 = z2;
        } else {
            self.z1 = 0.0;
            self.z2 = 0.0;
        }
    }

    /// [`run`](Self::run) fused, with FMA instructions. Call it only when
    /// `SimdLevel::detect` saw a level with FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_fused(&mut self, io: &mut Io<'_, S>) {
        self.run::<true>(io)
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Biquad<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        #[cfg(target_arch = "x86_64")]
        if self.fused {
            // SAFETY: `fused` is set only when `SimdLevel::detect` saw a
            // level with AVX2 and FMA (`fuses`).
            unsafe { self.run_fused(io) };
            return;
        }
        self.run::<false>(io)
    }

    fn reset(&mut self) {
        self.z1 = 0.0;
        self.z2 = 0.0;
    }

    /// The f64 state at every precision, so it migrates exactly.
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

    /// Biquads run side by side, one node per lane: each lane's recursion
    /// is the node's own, with its own coefficients and state. The kernel
    /// is `level`'s, and fuses its multiply-adds exactly when the node does
    /// ([`fuses`]): a node that fuses runs on a CPU with FMA, so every
    /// level's kernel can.
    fn lanes(&self, level: SimdLevel) -> Option<LaneKernel<S>> {
        #[cfg(target_arch = "x86_64")]
        if self.fused && !std::arch::is_x86_feature_detected!("fma") {
            return None;
        }
        let kernel: LaneKernel<S> = match (level.isa(), self.fused) {
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx512, false) => biquad_lanes_avx512::<S, M, false>,
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx512, true) => biquad_lanes_avx512::<S, M, true>,
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2, false) => biquad_lanes_avx2::<S, M>,
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2, true) => biquad_lanes_avx2_fused::<S, M>,
            #[cfg(target_arch = "x86_64")]
            (_, true) => biquad_lanes_fused::<S, M>,
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
fn step_lanes<S: Sample, M: Math, const L: usize, const FUSED: bool>(
    c: &[[f64; L]; 5],
    z1: &mut [f64; L],
    z2: &mut [f64; L],
    row: &mut [S; L],
) {
    for l in 0..L {
        let cl = [c[0][l], c[1][l], c[2][l], c[3][l], c[4][l]];
        row[l] = Biquad::<S, M>::step::<FUSED>(&cl, &mut z1[l], &mut z2[l], row[l]);
    }
}

/// A vector unit's way of running a full batch transposed
/// ([`transposed_f32`]): `W` × `W` blocks of f32 moved between members and
/// frames in registers, and one step of `W` biquads in f64 lanes
/// ([`Biquad::step`] in each lane: the same bits).
trait Tiles<const W: usize> {
    /// Whether full batches run transposed (else through the tile alone).
    const ON: bool = true;
    /// `W` f64 lanes.
    type Lanes: Copy;
    const ZERO: Self::Lanes;
    /// # Safety
    /// The CPU must have the unit (as every method's).
    unsafe fn load(x: &[f64]) -> Self::Lanes;
    unsafe fn store(v: Self::Lanes, x: &mut [f64]);
    unsafe fn rows_in(rows: &[&[f32]], at: usize, m: &mut [[f32; W]; W]);
    unsafe fn rows_out(
        m: &[[f32; W]; W],
        rows: &mut [&mut [f32]],
        at: usize,
        sum: Option<&mut [f32; W]>,
        first: bool,
    );
    unsafe fn step<const FUSED: bool>(
        short: bool,
        c: &[Self::Lanes; 5],
        z1: &mut Self::Lanes,
        z2: &mut Self::Lanes,
        row: &mut [f32; W],
    );
}

/// No transposed path: every batch through the tile.
struct NoTiles;
impl<const W: usize> Tiles<W> for NoTiles {
    const ON: bool = false;
    type Lanes = ();
    const ZERO: () = ();
    unsafe fn load(_: &[f64]) {}
    unsafe fn store(_: (), _: &mut [f64]) {}
    unsafe fn rows_in(_: &[&[f32]], _: usize, _: &mut [[f32; W]; W]) {
        unreachable!("no transposed path")
    }
    unsafe fn rows_out(
        _: &[[f32; W]; W],
        _: &mut [&mut [f32]],
        _: usize,
        _: Option<&mut [f32; W]>,
        _: bool,
    ) {
        unreachable!("no transposed path")
    }
    unsafe fn step<const FUSED: bool>(
        _: bool,
        _: &[(); 5],
        _: &mut (),
        _: &mut (),
        _: &mut [f32; W],
    ) {
        unreachable!("no transposed path")
    }
}

/// A unit's [`Tiles`] from `dsp::vector`'s lanes, transposes and step.
macro_rules! tiles {
    ($(#[$doc:meta])* $unit:ident, $w:literal, $lanes:ident, $rows_in:ident, $rows_out:ident, $step:ident) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        struct $unit;
        #[cfg(target_arch = "x86_64")]
        impl Tiles<$w> for $unit {
            type Lanes = vector::$lanes;
            const ZERO: vector::$lanes = vector::$lanes::ZERO;
            #[inline(always)]
            unsafe fn load(x: &[f64]) -> vector::$lanes {
                vector::$lanes::load(x)
            }
            #[inline(always)]
            unsafe fn store(v: vector::$lanes, x: &mut [f64]) {
                v.store(x)
            }
            #[inline(always)]
            unsafe fn rows_in(rows: &[&[f32]], at: usize, m: &mut [[f32; $w]; $w]) {
                vector::$rows_in(rows, at, m)
            }
            #[inline(always)]
            unsafe fn rows_out(
                m: &[[f32; $w]; $w],
                rows: &mut [&mut [f32]],
                at: usize,
                sum: Option<&mut [f32; $w]>,
                first: bool,
            ) {
                vector::$rows_out(m, rows, at, sum, first)
            }
            #[inline(always)]
            unsafe fn step<const FUSED: bool>(
                short: bool,
                c: &[vector::$lanes; 5],
                z1: &mut vector::$lanes,
                z2: &mut vector::$lanes,
                row: &mut [f32; $w],
            ) {
                vector::$step::<FUSED>(short, c, z1, z2, row)
            }
        }
    };
}

tiles!(
    /// AVX-512: blocks of 16.
    Avx512Tiles, 16, Lanes16, transpose16_in_avx512, transpose16_out_avx512, biquad_step16_avx512
);
tiles!(
    /// AVX2 with FMA: blocks of 8.
    Avx2Tiles, 8, Lanes8, transpose8_in_avx2, transpose8_out_avx2, biquad_step8_avx2
);

/// The lane kernel ([`LaneKernel`]): members in batches of `L`, a full
/// batch of f32 members transposed `W` at a time by `T` where it has a
/// transposed path, else each batch's input moved into a frame × lane
/// tile, run through [`step_lanes`], and moved out to the members'
/// outputs. With `sum`, full transposed batches add their outputs into it
/// as they go (the frames they do are returned with the finite mask).
#[inline(always)]
fn biquad_lanes_body<
    S: Sample,
    M: Math,
    const L: usize,
    const W: usize,
    T: Tiles<W>,
    const FUSED: bool,
>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    mut sum: Option<(&mut [S], bool)>,
) -> (u64, usize) {
    let mut finite = 0u64;
    let mut summed = 0;
    for (j, batch) in members.chunks_mut(L).enumerate() {
        let mut c = [[0.0; L]; 5];
        let (mut z1, mut z2) = ([0.0; L], [0.0; L]);
        for (l, m) in batch.iter_mut().enumerate() {
            let Some(b) = m.node.downcast_mut::<Biquad<S, M>>() else {
                continue;
            };
            let p = m.params;
            b.update(p[BQ_CUTOFF].value, p[BQ_Q].value, p[BQ_GAIN].value);
            for (j, cj) in c.iter_mut().enumerate() {
                cj[l] = b.coefs[j];
            }
            (z1[l], z2[l]) = (b.z1, b.z2);
        }
        let mut done = 0;
        // Members whose f32 outputs the transposed path found finite, if it
        // ran every frame.
        let mut fits = 0u64;
        if T::ON && batch.len() == L {
            let checked;
            (done, checked) = transposed_f32::<S, M, L, W, T, FUSED>(
                batch,
                &c,
                &mut z1,
                &mut z2,
                n,
                sum.as_mut(),
            );
            if let Some((_, first)) = sum.as_mut() {
                summed = done;
                // The next batch adds to what this one summed.
                *first &= done == 0;
            }
            if done == n {
                fits = checked;
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
                step_lanes::<S, M, L, FUSED>(&c, &mut z1, &mut z2, row);
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
                    (b.z1, b.z2) = (z1[l], z2[l]);
                    // A non-finite output would have made the state
                    // non-finite for good (z1 takes −c3·y, even for c3 = 0),
                    // so every output of this chunk is finite at f64. At
                    // f32 a finite f64 output may still round to infinity:
                    // known finite only where the transposed path checked
                    // it; the engine checks the others.
                    let known = S::PRECISION == Precision::F64 || fits >> l & 1 != 0;
                    if known && j * L + l < 64 {
                        finite |= 1 << (j * L + l);
                    }
                } else {
                    (b.z1, b.z2) = (0.0, 0.0);
                }
                // Its outputs are written and its state advanced: a panic
                // from here on leaves it finished ([`LaneKernel`]); before,
                // the batch's state was only in `z1`, `z2`.
                m.done = true;
            }
        }
    }
    (finite, summed)
}

/// The whole `W`-frame spans of a full batch of `L` f32 members (`L` a
/// multiple of `W`, at most `4·W`), through `W` × `W` blocks transposed in
/// registers (`T`) rather than moved sample by sample: the frames of
/// one member load as one vector, straight from its input, and store
/// straight to its output. The recursion is [`step_lanes`] on each block
/// of `W` members, the blocks' independent recursions interleaved frame by
/// frame. Returns the frames done (0 unless the samples are f32) and a
/// mask of the members (bit `l`: member `l`) whose f32 outputs over them
/// are finite: the recursion's f64 output is finite while its state is,
/// but may round to infinity in f32. With a sum, that is every member if
/// the sum is finite throughout (an infinite output makes it infinite or
/// NaN for good), else none; without, each member's outputs are checked
/// in the registers the recursion leaves them in. Call it only from a
/// kernel compiled for `T`'s unit, on a CPU that has it.
#[inline(always)]
fn transposed_f32<
    S: Sample,
    M: Math,
    const L: usize,
    const W: usize,
    T: Tiles<W>,
    const FUSED: bool,
>(
    batch: &mut [LaneMember<'_, S>],
    c: &[[f64; L]; 5],
    z1: &mut [f64; L],
    z2: &mut [f64; L],
    n: usize,
    sum: Option<&mut (&mut [S], bool)>,
) -> (usize, u64) {
    use std::any::Any;
    const MAX: usize = 4;
    let k = L / W;
    if !T::ON || !L.is_multiple_of(W) || k > MAX || batch.len() != L {
        return (0, 0);
    }
    if std::any::TypeId::of::<S>() != std::any::TypeId::of::<f32>() {
        return (0, 0);
    }
    let mut sum = match sum {
        Some((dst, first)) => {
            // SAFETY: `S` is `f32` (checked just above): the same slice.
            let d: &mut [f32] =
                unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), dst.len()) };
            Some((d, *first))
        }
        None => None,
    };
    let whole = n / W * W;
    let mut ins: [&[f32]; L] = [&[]; L];
    let mut outs: [&mut [f32]; L] = std::array::from_fn(|_| <&mut [f32]>::default());
    for (l, m) in batch.iter_mut().enumerate() {
        let input: &dyn Any = &m.inputs[0];
        let output: &mut dyn Any = &mut m.outputs[0];
        let (Some(i), Some(o)) = (
            input.downcast_ref::<Vec<f32>>(),
            output.downcast_mut::<Vec<f32>>(),
        ) else {
            return (0, 0);
        };
        if i.len() < whole || o.len() < whole {
            return (0, 0);
        }
        (ins[l], outs[l]) = (i, o);
    }
    if sum.as_ref().is_some_and(|(d, _)| d.len() < whole) {
        return (0, 0);
    }
    // Each block of `W` members: its coefficients and state in f64 lanes.
    // SAFETY (every `T` call below): the caller is compiled for `T`'s unit
    // and runs on a CPU that has it; each input and output is at least
    // `whole` long, and so is the sum.
    let (cs, mut s1, mut s2) = {
        let mut cs = [[T::ZERO; 5]; MAX];
        let (mut s1, mut s2) = ([T::ZERO; MAX], [T::ZERO; MAX]);
        for b in 0..k {
            let r = W * b..W * b + W;
            for j in 0..5 {
                cs[b][j] = unsafe { T::load(&c[j][r.clone()]) };
            }
            unsafe {
                s1[b] = T::load(&z1[r.clone()]);
                s2[b] = T::load(&z2[r]);
            }
        }
        (cs, s1, s2)
    };
    let mut blocks = [[[0f32; W]; W]; MAX];
    // `x · 0` summed: 0 while every `x` is finite, NaN from the first that
    // is not. Per block's lanes without a sum; the sum's frames with one.
    let mut check = [[0f32; W]; MAX];
    for t0 in (0..whole).step_by(W) {
        for (b, block) in blocks[..k].iter_mut().enumerate() {
            unsafe { T::rows_in(&ins[W * b..W * b + W], t0, block) };
        }
        // Frame t of every block in turn: the blocks' recursions are
        // independent, so they overlap instead of waiting on one another.
        // Each is `step_lanes` on `W` members, written in vectors of f64.
        #[allow(clippy::needless_range_loop)]
        for t in 0..W {
            for b in 0..k {
                let fast = M::KIND == MathKind::Fast;
                unsafe {
                    T::step::<FUSED>(fast, &cs[b], &mut s1[b], &mut s2[b], &mut blocks[b][t])
                };
                if sum.is_none() {
                    for (c, x) in check[b].iter_mut().zip(&blocks[b][t]) {
                        *c += *x * 0.0;
                    }
                }
            }
        }
        // The blocks out to the members' outputs and, from the same
        // registers, into the sum in member order.
        let mut acc = [0f32; W];
        if let Some((dst, _)) = sum.as_ref() {
            acc.copy_from_slice(&dst[t0..t0 + W]);
        }
        for (b, block) in blocks[..k].iter().enumerate() {
            let first = b == 0 && sum.as_ref().is_some_and(|(_, first)| *first);
            unsafe {
                T::rows_out(
                    block,
                    &mut outs[W * b..W * b + W],
                    t0,
                    sum.is_some().then_some(&mut acc),
                    first,
                )
            };
        }
        if let Some((dst, _)) = sum.as_mut() {
            dst[t0..t0 + W].copy_from_slice(&acc);
            for (c, x) in check[0].iter_mut().zip(&acc) {
                *c += *x * 0.0;
            }
        }
    }
    for b in 0..k {
        unsafe {
            T::store(s1[b], &mut z1[W * b..W * b + W]);
            T::store(s2[b], &mut z2[W * b..W * b + W]);
        }
    }
    (whole, finite_members::<L, W>(&check, k, sum.is_some()))
}

/// The mask of members (bit `l`: member `l`) whose checks in the first
/// `k` blocks of `check` (`x · 0` summed: 0 while finite) stayed 0: with
/// a sum, its one check in `check[0]` says for every member at once.
#[inline(always)]
fn finite_members<const L: usize, const W: usize>(
    check: &[[f32; W]],
    k: usize,
    summed: bool,
) -> u64 {
    if summed {
        if check[0].iter().all(|c| *c == 0.0) {
            u64::MAX >> (64 - L)
        } else {
            0
        }
    } else {
        let mut finite = 0u64;
        for (l, c) in check[..k].iter().flatten().enumerate() {
            finite |= u64::from(*c == 0.0) << l;
        }
        finite
    }
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

/// The scalar kernel (any level), unfused.
fn biquad_lanes<S: Sample, M: Math>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    let (finite, _) = biquad_lanes_body::<S, M, 8, 8, NoTiles, false>(members, n, None);
    sum_outputs(members, n, 0, sum);
    finite
}

/// The scalar kernel with fused multiply-adds, for nodes that fuse.
#[cfg(target_arch = "x86_64")]
fn biquad_lanes_fused<S: Sample, M: Math>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    #[target_feature(enable = "fma")]
    unsafe fn run<S: Sample, M: Math>(members: &mut [LaneMember<'_, S>], n: usize) -> u64 {
        biquad_lanes_body::<S, M, 8, 8, NoTiles, true>(members, n, None).0
    }
    // SAFETY: chosen only for nodes that fuse, on a CPU with FMA
    // (`Biquad::lanes`).
    let finite = unsafe { run::<S, M>(members, n) };
    sum_outputs(members, n, 0, sum);
    finite
}

/// The AVX2 kernel, unfused.
#[cfg(target_arch = "x86_64")]
fn biquad_lanes_avx2<S: Sample, M: Math>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    #[target_feature(enable = "avx2")]
    unsafe fn run<S: Sample, M: Math>(members: &mut [LaneMember<'_, S>], n: usize) -> u64 {
        biquad_lanes_body::<S, M, 8, 8, NoTiles, false>(members, n, None).0
    }
    // SAFETY: this kernel is chosen only for a `SimdLevel` of AVX2 or
    // wider, which this CPU has.
    let finite = unsafe { run::<S, M>(members, n) };
    sum_outputs(members, n, 0, sum);
    finite
}

/// The AVX2 kernel with fused multiply-adds, for nodes that fuse: f32
/// members transposed eight at a time (four recursions interleaved).
#[cfg(target_arch = "x86_64")]
fn biquad_lanes_avx2_fused<S: Sample, M: Math>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run<S: Sample, M: Math>(
        members: &mut [LaneMember<'_, S>],
        n: usize,
        sum: Option<(&mut [S], bool)>,
    ) -> (u64, usize) {
        tiled::<S, M, 32, 16, 8, Avx2Tiles, true>(members, n, sum)
    }
    // SAFETY: chosen only for a `SimdLevel` of AVX2 or wider, for nodes
    // that fuse, on a CPU with FMA (`Biquad::lanes`).
    with_sum(members, n, sum, |m, n, dst| unsafe {
        run::<S, M>(m, n, dst)
    })
}

/// `kernel` with the sum's buffer and whether it is the first to add to
/// it, then what the kernel left unsummed added by [`sum_outputs`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn with_sum<'a, S: Sample>(
    members: &mut [LaneMember<'a, S>],
    n: usize,
    mut sum: Option<&mut LaneSum<'_, S>>,
    kernel: impl FnOnce(&mut [LaneMember<'a, S>], usize, Option<(&mut [S], bool)>) -> (u64, usize),
) -> u64 {
    let dst = sum.as_deref_mut().map(|s| (&mut *s.dst, s.first));
    let (finite, summed) = kernel(members, n, dst);
    sum_outputs(members, n, summed, sum);
    finite
}

/// Members in full batches of `L` (four blocks of `W` interleaved), then
/// one batch of `H` (two blocks) if as many are left, and the rest by `W`,
/// transposed by `T`. When every member is in one of these batches (their
/// count a multiple of `W`) and every batch will run transposed (f32,
/// buffers at least `n` long), the batches add their outputs into `sum`
/// from registers as they go, in member order, each after the one before.
/// Returns the finite mask and the frames summed.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tiled<
    S: Sample,
    M: Math,
    const L: usize,
    const H: usize,
    const W: usize,
    T: Tiles<W>,
    const FUSED: bool,
>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    sum: Option<(&mut [S], bool)>,
) -> (u64, usize) {
    debug_assert!(L == 2 * H && H == 2 * W);
    let sums = members.len().is_multiple_of(W)
        && std::any::TypeId::of::<S>() == std::any::TypeId::of::<f32>()
        && members
            .iter()
            .all(|m| m.inputs[0].len() >= n && m.outputs[0].len() >= n)
        && sum.as_ref().is_some_and(|(d, _)| d.len() >= n);
    let mut sum = if sums { sum } else { None };
    let whole = members.len() / L * L;
    let half = if members.len() - whole >= H { H } else { 0 };
    let (full, rest) = members.split_at_mut(whole);
    let (middle, rest) = rest.split_at_mut(half);
    // Each part adds to what the one before summed. Every part with
    // members sums the same frames: all run transposed or none does.
    let mut summed = 0;
    let mut after = |done: usize, sum: &mut Option<(&mut [S], bool)>, members: usize| {
        if let Some((_, first)) = sum.as_mut() {
            if members > 0 {
                debug_assert!(summed == 0 || done == summed, "parts summed alike");
                summed = done;
                *first &= done == 0;
            }
        }
    };
    let (a, done) = biquad_lanes_body::<S, M, L, W, T, FUSED>(full, n, reborrow(&mut sum));
    after(done, &mut sum, full.len());
    let (b, done) = biquad_lanes_body::<S, M, H, W, T, FUSED>(middle, n, reborrow(&mut sum));
    after(done, &mut sum, middle.len());
    let (c, done) = biquad_lanes_body::<S, M, W, W, T, FUSED>(rest, n, reborrow(&mut sum));
    after(done, &mut sum, rest.len());
    let shifted = |mask: u64, by: usize| mask.checked_shl(by as u32).unwrap_or(0);
    (a | shifted(b, whole) | shifted(c, whole + half), summed)
}

/// The sum lent to one part of [`tiled`], with its `first` as it is now.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn reborrow<'a, S>(sum: &'a mut Option<(&mut [S], bool)>) -> Option<(&'a mut [S], bool)> {
    sum.as_mut().map(|(d, f)| (&mut **d, *f))
}

/// The AVX-512 kernel, fused when the nodes are (`FUSED`, [`fuses`]).
#[cfg(target_arch = "x86_64")]
fn biquad_lanes_avx512<S: Sample, M: Math, const FUSED: bool>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    _start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn run<S: Sample, M: Math, const FUSED: bool>(
        members: &mut [LaneMember<'_, S>],
        n: usize,
        sum: Option<(&mut [S], bool)>,
    ) -> (u64, usize) {
        tiled::<S, M, 64, 32, 16, Avx512Tiles, FUSED>(members, n, sum)
    }
    // SAFETY: this kernel is chosen only for a `SimdLevel` of AVX-512,
    // which this CPU has.
    with_sum(members, n, sum, |m, n, dst| unsafe {
        run::<S, M, FUSED>(m, n, dst)
    })
}

struct BiquadOp;
impl Operator for BiquadOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Biquad::<S, M> {
            mode: BiquadMode::from_index(built_enum(cx, BQ_MODE, BIQUAD_MODES.len())),
            sample_rate: cx.sample_rate,
            cache: DesignCache::new(),
            coefs: [0.0; 5],
            z1: 0.0,
            z2: 0.0,
            fused: fuses::<S, M>(SimdLevel::detect()),
            _m: PhantomData,
        }))
    }
}

/// `biquad`: the RBJ Audio-EQ-Cookbook filters in transposed direct form
/// II, the recursion in f64 at every precision.
/// A cutoff the biquad cannot design: above `0.49·sr` it designs at that.
fn biquad_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    frequency_lint(
        values,
        BQ_CUTOFF,
        "cutoff",
        sample_rate,
        MAX_CUTOFF_RATIO,
        "the filter is designed at",
        design_cutoff_hz,
    )
    .into_iter()
    .collect()
}

pub(crate) static BIQUAD: OpSpec = OpSpec {
    name: "biquad",
    doc: "RBJ cookbook biquad (lowpass, highpass, bandpass with 0 dB peak, notch, peak, allpass, lowshelf, highshelf) in transposed direct form II, its recursion and state in f64 at every precision: at f32 within 1e-3 relative RMS of strict from 10 Hz to 20 kHz at Q 0.5 to 20, its cutoff moving or not.",
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
    cost: |p, _| by_profile(p, [4.8, 4.7, 4.6]),
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
    /// z = 1, where an f32 TDF-II state was far off.
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

    #[test]
    fn a_state_carried_between_strict_and_f32_continues_the_same_filter() {
        let (params, x) = low_resonant();
        let cut = 16000;
        let strict = (Profile::Strict, Precision::F64);
        let repro = (Profile::Repro, Precision::F32);
        // Runs `x[..cut]` at `from`, continues `x[cut..]` from its snapshot at `to`.
        let carried = |from: (Profile, Precision), to: (Profile, Precision)| {
            let mut a = runner(&BIQUAD, &params, from.0, from.1);
            a.run(&[x[..cut].to_vec()], &[], cut, &[64]);
            let mut b = runner(&BIQUAD, &params, to.0, to.1);
            b.node().restore(&a.snapshot()).unwrap();
            b.set_clock(cut as u64);
            b.run(&[x[cut..].to_vec()], &[], x.len() - cut, &[64])
                .remove(0)
        };
        let whole = |p: (Profile, Precision)| {
            let mut r = runner(&BIQUAD, &params, p.0, p.1);
            r.run(std::slice::from_ref(&x), &[], x.len(), &[64])
                .remove(0)
                .split_off(cut)
        };
        let (strict_on, repro_on) = (whole(strict), whole(repro));
        // The state is f64 at both precisions: strict → f32 continues as
        // strict does (to f32 samples), f32 → strict as f32 does.
        let e = rel_rms(&carried(strict, repro), &strict_on);
        assert!(e <= 1e-6, "strict → repro: {e:e}");
        let e = rel_rms(&carried(repro, strict), &repro_on);
        assert!(e <= 1e-6, "repro → strict: {e:e}");
        assert_eq!(carried(repro, repro), repro_on);
    }

    /// A 1.2 kHz bandpass (Q 2) on noise, its cutoff swept ±900 Hz at
    /// 0.13 Hz (as `scenes/noise-wash.json`) and ±400 Hz at 20 Hz: f32 runs
    /// strict's recursion, so a moving cutoff stays as close to strict as
    /// a still one (a state-variable form, with its own way of carrying
    /// state through a moving cutoff, measured 7e-5 and 6.5e-3).
    #[test]
    fn a_moving_cutoff_plays_in_f32_as_in_strict() {
        let x = test_signal(12, 48000);
        let params = [
            ("mode", mode(&BIQUAD, "bandpass")),
            ("cutoff", Value::Number(1200.0)),
            ("q", Value::Number(2.0)),
        ];
        let cutoff = BIQUAD.param_index("cutoff").unwrap();
        let sweep = |rate: f64, depth: f64| -> Vec<f64> {
            (0..x.len())
                .map(|n| depth * libm::sin(TWO_PI * rate * n as f64 / SR))
                .collect()
        };
        let run = |p: Profile, pr: Precision, m: &[f64]| {
            runner(&BIQUAD, &params, p, pr)
                .run(
                    std::slice::from_ref(&x),
                    &[(cutoff, m.to_vec())],
                    x.len(),
                    &[64],
                )
                .remove(0)
        };
        for (rate, depth) in [(0.13, 900.0), (20.0, 400.0)] {
            let m = sweep(rate, depth);
            let strict = run(Profile::Strict, Precision::F64, &m);
            for p in [Profile::Repro, Profile::Live] {
                let e = rel_rms(&run(p, Precision::F32, &m), &strict);
                assert!(e <= 1e-6, "{p:?}, swept at {rate} Hz: {e:e}");
            }
        }
    }

    /// The recursion an f32 node runs, written out again per profile: with
    /// FMA (AVX2 or AVX-512), repro and live with each multiply-add fused (rounded once),
    /// elsewhere repro as strict's order and live reassociated; strict
    /// never fused. Outputs compared bit for bit.
    #[test]
    #[allow(clippy::disallowed_methods)] // the fused oracle
    fn an_f32_biquad_fuses_its_multiply_adds_with_fma_under_repro_and_live() {
        let x = test_signal(21, 4000);
        let with_fma = SimdLevel::detect().has_fma();
        for (name, fc, q) in [
            ("bandpass", 200.0, 10.0),
            ("lowpass", 30.0, 5.0),
            ("peak", 3000.0, 0.7),
        ] {
            let params = [
                ("mode", mode(&BIQUAD, name)),
                ("cutoff", Value::Number(fc)),
                ("q", Value::Number(q)),
                ("gain", Value::Number(2.0)),
            ];
            let m = BiquadMode::from_index(BIQUAD_MODES.iter().position(|m| *m == name).unwrap());
            for p in [Profile::Strict, Profile::Repro, Profile::Live] {
                let c = match p {
                    Profile::Strict => {
                        biquad_design::<crate::dsp::math::StrictMath>(m, fc, q, 2.0, SR)
                    }
                    Profile::Repro => biquad_design::<crate::dsp::math::StdMath>(m, fc, q, 2.0, SR),
                    Profile::Live => biquad_design::<crate::dsp::math::FastMath>(m, fc, q, 2.0, SR),
                };
                let fused = with_fma && p != Profile::Strict;
                let (mut z1, mut z2) = (0.0f64, 0.0f64);
                let want: Vec<f64> = x
                    .iter()
                    .map(|&v| {
                        let v = v as f32 as f64;
                        let y;
                        if fused {
                            y = c[0].mul_add(v, z1);
                            z1 = (-c[3]).mul_add(y, c[1].mul_add(v, z2));
                            z2 = (-c[4]).mul_add(y, c[2] * v);
                        } else {
                            y = c[0] * v + z1;
                            z1 = if p == Profile::Live {
                                (c[1] * v + z2) - c[3] * y
                            } else {
                                c[1] * v - c[3] * y + z2
                            };
                            z2 = c[2] * v - c[4] * y;
                        }
                        y as f32 as f64
                    })
                    .collect();
                let got = render_at(&BIQUAD, &params, p, Precision::F32, &x);
                let diff = got
                    .iter()
                    .zip(&want)
                    .position(|(a, b)| a.to_bits() != b.to_bits());
                assert_eq!(
                    diff, None,
                    "{name} {p:?} (fused: {fused}): first differing sample"
                );
            }
        }
    }
}
