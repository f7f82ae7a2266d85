//! The reverb's network several samples at a time. With AVX-512: all
//! sixteen lines in one register in f32 (sixteen samples a group), in two
//! in f64 (eight samples a group). With AVX2: the lines in two registers
//! in f32 (eight samples a group), in four in f64 (four samples a group).
//!
//! The lines are read and written as rows: loads of a group's consecutive
//! samples of each line, transposes ([`transpose16_regs`], [`transpose8`],
//! [`transpose8_regs`], [`transpose4_pd`]) that turn them into registers per
//! sample holding every line's output, the step of the module docs on
//! those registers for each sample in turn, and transposes that turn the
//! results (what is written back into each line, and each line's output)
//! back into rows; the wet sums add the output rows, line 0 first, a
//! group's samples at once. Only data moves differ from the scalar step
//! (`Reverb::run_lanes`): every lane does the same operations on the same
//! operands in the same order, so the bits are the same (the fused step's
//! multiply-adds, `FUSED`, are fused in the lanes as in the scalar step). A group's samples
//! of a line never read what they write: a line is longer than a group.

use super::LINES;
use crate::dsp::vector::Isa;
#[cfg(target_arch = "x86_64")]
use crate::dsp::vector::{transpose16_regs, transpose8_regs};
use crate::dsp::{Precision, Sample};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

/// The most samples a group holds (f32's).
pub(super) const MAX_GROUP: usize = 16;

/// The samples a group of `S` holds at `isa`, 0 where there are no groups.
pub(super) fn group_len<S: Sample>(isa: Isa) -> usize {
    if !cfg!(target_arch = "x86_64") {
        return 0;
    }
    match (isa, S::PRECISION) {
        (Isa::Base, _) => 0,
        (Isa::Avx2, Precision::F32) => 8,
        (Isa::Avx2, Precision::F64) => 4,
        (Isa::Avx512, Precision::F32) => 16,
        (Isa::Avx512, Precision::F64) => 8,
    }
}

/// The network's coefficients, at the lines' precision.
#[repr(C)]
pub(super) struct Coefs<S> {
    pub(super) dc_b: S,
    pub(super) dc_alpha: S,
    pub(super) alpha: S,
    pub(super) beta: S,
    pub(super) g_hi: [S; LINES],
    pub(super) g_diff: [S; LINES],
    pub(super) in_gain: [S; LINES],
    pub(super) in_gain_r: [S; LINES],
    pub(super) out_l: [S; LINES],
    pub(super) out_r: [S; LINES],
}

/// The lines, their rings and the state a group carries from sample to
/// sample.
pub(super) struct Net<'a, S> {
    pub(super) lines: &'a mut [S],
    /// Where each line reads and then writes next, and its ring's bounds.
    pub(super) pos: &'a [usize; LINES],
    pub(super) start: &'a [usize; LINES],
    pub(super) end: &'a [usize; LINES],
    pub(super) dc: &'a mut [S; LINES],
    pub(super) damp: &'a mut [S; LINES],
}

/// `T` as the `U` it is: `S` is f32 or f64 and the caller matched on
/// `S::PRECISION`.
///
/// # Safety
/// `T` and `U` are the same type.
#[cfg(target_arch = "x86_64")]
unsafe fn same<T, U>(x: &mut T) -> &mut U {
    debug_assert_eq!(std::any::type_name::<T>(), std::any::type_name::<U>());
    // SAFETY: the contract.
    unsafe { &mut *(x as *mut T as *mut U) }
}

/// One group ([`group_len`] samples at `isa`) of the network: line `i`
/// reads and then writes its samples from `net.pos[i]` on, wrapping from
/// `end[i]` to `start[i]`, fed `u.0[t]` (and `u.1[t]` when `STEREO`) at
/// sample `t`; the wet sums of its samples (`Σ out_l[i]·y_i`,
/// `Σ out_r[i]·y_i`, the lines in order from 0, as the scalar sums add
/// them) go to `wet.0[t]` and `wet.1[t]`.
///
/// # Safety
/// The CPU has `isa` (and `group_len` is not 0 for it); for every line
/// `start[i] ≤ pos[i] < end[i] ≤ lines.len()`, `end[i] − start[i]` is at
/// least a group, and the lines' ranges are disjoint; `wet.0` and `wet.1`
/// have room for a group's samples; `FUSED` only for f32 (the fused step
/// of `Reverb::run_lanes`).
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn step<S: Sample, const STEREO: bool, const FUSED: bool>(
    isa: Isa,
    net: &mut Net<'_, S>,
    u: (&mut [S; MAX_GROUP], &mut [S; MAX_GROUP]),
    c: &mut Coefs<S>,
    wet: (*mut S, *mut S),
) {
    debug_assert!(!FUSED || S::PRECISION == Precision::F32);
    // SAFETY: `S` is the type its precision names; the rest is the
    // contract.
    unsafe {
        match (isa, S::PRECISION) {
            (Isa::Base, _) => unreachable!("no groups without AVX2"),
            (Isa::Avx512, Precision::F32) => step16_avx512::<STEREO, FUSED>(
                same(net),
                (same(u.0), same(u.1)),
                same(c),
                (wet.0 as *mut f32, wet.1 as *mut f32),
            ),
            (Isa::Avx512, Precision::F64) => step8_avx512::<STEREO>(
                same(net),
                (same(u.0), same(u.1)),
                same(c),
                (wet.0 as *mut f64, wet.1 as *mut f64),
            ),
            (Isa::Avx2, Precision::F32) => step8_avx2::<STEREO, FUSED>(
                same(net),
                (same(u.0), same(u.1)),
                same(c),
                (wet.0 as *mut f32, wet.1 as *mut f32),
            ),
            (Isa::Avx2, Precision::F64) => step4_avx2::<STEREO>(
                same(net),
                (same(u.0), same(u.1)),
                same(c),
                (wet.0 as *mut f64, wet.1 as *mut f64),
            ),
        }
    }
}

/// Where the `n` samples of line `i` from `pos[i]` on are (`base`: the
/// lines' start): in the line, or copied into `wrapped` (room for `n`)
/// where they wrap.
///
/// # Safety
/// As [`step`]'s, `n` ≤ 16.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn row_in<S: Copy>(
    base: *mut S,
    net: &Net<'_, S>,
    i: usize,
    n: usize,
    wrapped: *mut S,
) -> *mut S {
    let head = net.end[i] - net.pos[i];
    // SAFETY: `pos[i] .. end[i]` and `start[i] .. start[i] + n − head` are
    // within line i (it is longer than `n`).
    unsafe {
        if head >= n {
            base.add(net.pos[i])
        } else {
            let w = wrapped;
            core::ptr::copy_nonoverlapping(base.add(net.pos[i]), w, head);
            core::ptr::copy_nonoverlapping(base.add(net.start[i]), w.add(head), n - head);
            w
        }
    }
}

/// After [`row_in`] gave `at` and the row was stored there: copies a
/// wrapped row back into the line.
///
/// # Safety
/// As [`row_in`]'s.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn row_out<S: Copy>(base: *mut S, net: &Net<'_, S>, i: usize, n: usize, at: *const S) {
    let head = net.end[i] - net.pos[i];
    if head < n {
        // SAFETY: as in `row_in`.
        unsafe {
            core::ptr::copy_nonoverlapping(at, base.add(net.pos[i]), head);
            core::ptr::copy_nonoverlapping(at.add(head), base.add(net.start[i]), n - head);
        }
    }
}

/// One butterfly stage of the Hadamard matrix on the sixteen lanes: lane
/// `j` becomes `v[j^h] + v[j]` where bit `h` of `j` is clear and
/// `v[j^h] − v[j]` where it is set, `swapped` being `v` with lanes `j`
/// and `j ^ h` exchanged — the scalar stages' sums and differences. It is
/// one fused multiply-add, `v·sign + swapped` with `sign` ±1 per lane: the
/// product is exact (a sign at most), so the one rounding is that of the
/// sum or difference itself, the same bits (signed zeros included: the
/// product of a zero and −1 is the zero negated, as a difference takes
/// it). Either order of the scalar's operands gives them: a sum of two
/// numbers rounds the same whichever comes first.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn butterfly(v: __m512, swapped: __m512, sign: __m512) -> __m512 {
    _mm512_fmadd_ps(v, sign, swapped)
}

/// `v ← ¼·H16·v` as the scalar `hadamard` computes it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn hadamard(v: __m512, signs: &[__m512; 4], quarter: __m512) -> __m512 {
    let v = butterfly(v, _mm512_permute_ps::<0xB1>(v), signs[0]);
    let v = butterfly(v, _mm512_permute_ps::<0x4E>(v), signs[1]);
    let v = butterfly(v, _mm512_shuffle_f32x4::<0xB1>(v, v), signs[2]);
    let v = butterfly(v, _mm512_shuffle_f32x4::<0x4E>(v, v), signs[3]);
    _mm512_mul_ps(v, quarter)
}

/// The butterflies' signs: −1 in the lanes whose bit 1, 2, 4, 8 is set.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn butterfly_signs() -> [__m512; 4] {
    [0xAAAA, 0xCCCC, 0xF0F0, 0xFF00]
        .map(|high: __mmask16| _mm512_mask_mov_ps(_mm512_set1_ps(1.0), high, _mm512_set1_ps(-1.0)))
}

/// [`step`] in f32: sixteen samples, the sixteen lines in one register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn step16_avx512<const STEREO: bool, const FUSED: bool>(
    net: &mut Net<'_, f32>,
    u: (&[f32; 16], &[f32; 16]),
    c: &Coefs<f32>,
    sums: (*mut f32, *mut f32),
) {
    const N: usize = 16;
    // (Not zeroed: a row is written before it is read.)
    let mut wrapped = [const { MaybeUninit::<[f32; MAX_GROUP]>::uninit() }; LINES];
    let base = net.lines.as_mut_ptr();
    let spare = wrapped.as_mut_ptr() as *mut f32;
    let mut at = [core::ptr::null_mut::<f32>(); LINES];
    let mut rows = [_mm512_setzero_ps(); LINES];
    for i in 0..LINES {
        // SAFETY (this and every load and store below): `step`'s contract.
        at[i] = row_in(base, net, i, N, spare.add(i * MAX_GROUP));
        rows[i] = _mm512_loadu_ps(at[i]);
        // The line's samples two groups on, towards L1 (a hint: an
        // address past the line's end is never read).
        _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(net.pos[i] + 2 * N) as *const i8);
    }
    let y = transpose16_regs(rows);
    let (b, a) = (_mm512_set1_ps(c.dc_b), _mm512_set1_ps(c.dc_alpha));
    let (alpha, beta) = (_mm512_set1_ps(c.alpha), _mm512_set1_ps(c.beta));
    let g_hi = _mm512_loadu_ps(c.g_hi.as_ptr());
    let g_diff = _mm512_loadu_ps(c.g_diff.as_ptr());
    let in_gain = _mm512_loadu_ps(c.in_gain.as_ptr());
    let in_gain_r = _mm512_loadu_ps(c.in_gain_r.as_ptr());
    let quarter = _mm512_set1_ps(0.25);
    let signs = butterfly_signs();
    let mut dc = _mm512_loadu_ps(net.dc.as_ptr());
    let mut damp = _mm512_loadu_ps(net.damp.as_ptr());
    let mut out = [_mm512_setzero_ps(); N];
    let mut wet = [_mm512_setzero_ps(); N];
    for t in 0..N {
        let by = _mm512_mul_ps(b, y[t]);
        let yi = _mm512_add_ps(by, dc);
        wet[t] = yi;
        let v = if FUSED {
            // `Reverb::run_lanes`'s fused step.
            dc = _mm512_fmsub_ps(a, yi, by);
            let lp = _mm512_fmadd_ps(beta, yi, damp);
            damp = _mm512_fmadd_ps(alpha, lp, _mm512_mul_ps(beta, yi));
            _mm512_fmadd_ps(g_hi, yi, _mm512_mul_ps(g_diff, lp))
        } else {
            dc = _mm512_sub_ps(_mm512_mul_ps(a, yi), by);
            let lp = _mm512_add_ps(_mm512_mul_ps(beta, yi), damp);
            damp = _mm512_add_ps(_mm512_mul_ps(beta, yi), _mm512_mul_ps(alpha, lp));
            _mm512_add_ps(_mm512_mul_ps(g_hi, yi), _mm512_mul_ps(g_diff, lp))
        };
        let mut v = hadamard(v, &signs, quarter);
        let add = |v, g, u: f32| {
            if FUSED {
                _mm512_fmadd_ps(g, _mm512_set1_ps(u), v)
            } else {
                _mm512_add_ps(v, _mm512_mul_ps(g, _mm512_set1_ps(u)))
            }
        };
        v = add(v, in_gain, u.0[t]);
        if STEREO {
            v = add(v, in_gain_r, u.1[t]);
        }
        out[t] = v;
    }
    _mm512_storeu_ps(net.dc.as_mut_ptr(), dc);
    _mm512_storeu_ps(net.damp.as_mut_ptr(), damp);
    for (i, row) in transpose16_regs(out).into_iter().enumerate() {
        _mm512_storeu_ps(at[i], row);
        row_out(base, net, i, N, at[i]);
    }
    let (mut l, mut r) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    for (i, row) in transpose16_regs(wet).into_iter().enumerate() {
        let (cl, cr) = (_mm512_set1_ps(c.out_l[i]), _mm512_set1_ps(c.out_r[i]));
        if FUSED {
            l = _mm512_fmadd_ps(cl, row, l);
            r = _mm512_fmadd_ps(cr, row, r);
        } else {
            l = _mm512_add_ps(l, _mm512_mul_ps(cl, row));
            r = _mm512_add_ps(r, _mm512_mul_ps(cr, row));
        }
    }
    _mm512_storeu_ps(sums.0, l);
    _mm512_storeu_ps(sums.1, r);
}

/// An 8 × 8 transpose of f64 rows in registers: `out[t]` holds element
/// `t` of every row, in row order. Moves data only.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn transpose8(r: [__m512d; 8]) -> [__m512d; 8] {
    // Pairs of rows interleaved: t[2k] = (r[2k][e], r[2k+1][e]) for even e,
    // t[2k+1] the same for odd e, one 128-bit block per element pair.
    let t: [__m512d; 8] = core::array::from_fn(|k| {
        if k % 2 == 0 {
            _mm512_unpacklo_pd(r[k], r[k + 1])
        } else {
            _mm512_unpackhi_pd(r[k - 1], r[k])
        }
    });
    // Blocks: [a.b0, a.b2, b.b0, b.b2] (0x88) and [a.b1, a.b3, b.b1, b.b3] (0xDD).
    let mut out = [_mm512_setzero_pd(); 8];
    for odd in 0..2 {
        let (t0, t2, t4, t6) = (t[odd], t[2 + odd], t[4 + odd], t[6 + odd]);
        let v0 = _mm512_shuffle_f64x2::<0x88>(t0, t2);
        let v1 = _mm512_shuffle_f64x2::<0xDD>(t0, t2);
        let w0 = _mm512_shuffle_f64x2::<0x88>(t4, t6);
        let w1 = _mm512_shuffle_f64x2::<0xDD>(t4, t6);
        out[odd] = _mm512_shuffle_f64x2::<0x88>(v0, w0);
        out[4 + odd] = _mm512_shuffle_f64x2::<0xDD>(v0, w0);
        out[2 + odd] = _mm512_shuffle_f64x2::<0x88>(v1, w1);
        out[6 + odd] = _mm512_shuffle_f64x2::<0xDD>(v1, w1);
    }
    out
}

/// One butterfly stage on eight f64 lanes, as [`butterfly`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn butterfly_pd(
    v: __m512d,
    swapped: __m512d,
    high: __mmask8,
    swapped_first: bool,
) -> __m512d {
    let sum = if swapped_first {
        _mm512_add_pd(swapped, v)
    } else {
        _mm512_add_pd(v, swapped)
    };
    _mm512_mask_sub_pd(sum, high, swapped, v)
}

/// `v ← ¼·H16·v` on lines 0–7 (`lo`) and 8–15 (`hi`), as the scalar
/// `hadamard` computes it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn hadamard_pd(lo: __m512d, hi: __m512d, quarter: __m512d) -> (__m512d, __m512d) {
    let stage = |v: __m512d| {
        let v = butterfly_pd(v, _mm512_permute_pd::<0x55>(v), 0xAA, true);
        let v = butterfly_pd(v, _mm512_permutex_pd::<0x4E>(v), 0xCC, true);
        butterfly_pd(v, _mm512_shuffle_f64x2::<0x4E>(v, v), 0xF0, false)
    };
    let (lo, hi) = (stage(lo), stage(hi));
    let (lo, hi) = (_mm512_add_pd(lo, hi), _mm512_sub_pd(lo, hi));
    (_mm512_mul_pd(lo, quarter), _mm512_mul_pd(hi, quarter))
}

/// [`step`] in f64: eight samples, lines 0–7 and 8–15 in two registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn step8_avx512<const STEREO: bool>(
    net: &mut Net<'_, f64>,
    u: (&[f64; 16], &[f64; 16]),
    c: &Coefs<f64>,
    sums: (*mut f64, *mut f64),
) {
    const N: usize = 8;
    // (Not zeroed: a row is written before it is read.)
    let mut wrapped = [const { MaybeUninit::<[f64; MAX_GROUP]>::uninit() }; LINES];
    let base = net.lines.as_mut_ptr();
    let spare = wrapped.as_mut_ptr() as *mut f64;
    let mut at = [core::ptr::null_mut::<f64>(); LINES];
    let mut rows = [_mm512_setzero_pd(); LINES];
    for i in 0..LINES {
        // SAFETY (this and every load and store below): `step`'s contract.
        at[i] = row_in(base, net, i, N, spare.add(i * MAX_GROUP));
        rows[i] = _mm512_loadu_pd(at[i]);
        // As in `step16_avx512`.
        _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(net.pos[i] + 2 * N) as *const i8);
    }
    let y_lo = transpose8(core::array::from_fn(|i| rows[i]));
    let y_hi = transpose8(core::array::from_fn(|i| rows[8 + i]));
    let (b, a) = (_mm512_set1_pd(c.dc_b), _mm512_set1_pd(c.dc_alpha));
    let (alpha, beta) = (_mm512_set1_pd(c.alpha), _mm512_set1_pd(c.beta));
    let half = |x: &[f64; LINES], h: usize| _mm512_loadu_pd(x[8 * h..].as_ptr());
    let g_hi = [half(&c.g_hi, 0), half(&c.g_hi, 1)];
    let g_diff = [half(&c.g_diff, 0), half(&c.g_diff, 1)];
    let in_gain = [half(&c.in_gain, 0), half(&c.in_gain, 1)];
    let in_gain_r = [half(&c.in_gain_r, 0), half(&c.in_gain_r, 1)];
    let quarter = _mm512_set1_pd(0.25);
    let mut dc = [half(net.dc, 0), half(net.dc, 1)];
    let mut damp = [half(net.damp, 0), half(net.damp, 1)];
    let mut out = [[_mm512_setzero_pd(); N]; 2];
    let mut wet = [[_mm512_setzero_pd(); N]; 2];
    for t in 0..N {
        let mut v = [_mm512_setzero_pd(); 2];
        for h in 0..2 {
            let y = if h == 0 { y_lo[t] } else { y_hi[t] };
            let by = _mm512_mul_pd(b, y);
            let yi = _mm512_add_pd(by, dc[h]);
            dc[h] = _mm512_sub_pd(_mm512_mul_pd(a, yi), by);
            wet[h][t] = yi;
            let lp = _mm512_add_pd(_mm512_mul_pd(beta, yi), damp[h]);
            damp[h] = _mm512_add_pd(_mm512_mul_pd(beta, yi), _mm512_mul_pd(alpha, lp));
            v[h] = _mm512_add_pd(_mm512_mul_pd(g_hi[h], yi), _mm512_mul_pd(g_diff[h], lp));
        }
        let (lo, hi) = hadamard_pd(v[0], v[1], quarter);
        for (h, mut v) in [lo, hi].into_iter().enumerate() {
            v = _mm512_add_pd(v, _mm512_mul_pd(in_gain[h], _mm512_set1_pd(u.0[t])));
            if STEREO {
                v = _mm512_add_pd(v, _mm512_mul_pd(in_gain_r[h], _mm512_set1_pd(u.1[t])));
            }
            out[h][t] = v;
        }
    }
    let (mut l, mut r) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    for h in 0..2 {
        _mm512_storeu_pd(net.dc[8 * h..].as_mut_ptr(), dc[h]);
        _mm512_storeu_pd(net.damp[8 * h..].as_mut_ptr(), damp[h]);
        for (k, row) in transpose8(out[h]).into_iter().enumerate() {
            let i = 8 * h + k;
            _mm512_storeu_pd(at[i], row);
            row_out(base, net, i, N, at[i]);
        }
        for (k, row) in transpose8(wet[h]).into_iter().enumerate() {
            let i = 8 * h + k;
            l = _mm512_add_pd(l, _mm512_mul_pd(_mm512_set1_pd(c.out_l[i]), row));
            r = _mm512_add_pd(r, _mm512_mul_pd(_mm512_set1_pd(c.out_r[i]), row));
        }
    }
    _mm512_storeu_pd(sums.0, l);
    _mm512_storeu_pd(sums.1, r);
}

/// One butterfly stage inside a register (the scalar `butterfly_swapped`
/// or, across its halves, `butterfly_halves`): `swapped + v` in the lanes
/// `HIGH` leaves clear, `swapped − v` in those it sets.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn butterfly_ps<const HIGH: i32>(v: __m256, swapped: __m256) -> __m256 {
    _mm256_blend_ps::<HIGH>(_mm256_add_ps(swapped, v), _mm256_sub_ps(swapped, v))
}

/// `v ← ¼·H16·v` on lines 0–7 (`lo`) and 8–15 (`hi`) in f32, as the scalar
/// `hadamard` computes it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn hadamard_ps(lo: __m256, hi: __m256, quarter: __m256) -> (__m256, __m256) {
    let stage = |v: __m256| {
        let v = butterfly_ps::<0xAA>(v, _mm256_permute_ps::<0xB1>(v));
        let v = butterfly_ps::<0xCC>(v, _mm256_permute_ps::<0x4E>(v));
        butterfly_ps::<0xF0>(v, _mm256_permute2f128_ps::<0x01>(v, v))
    };
    let (lo, hi) = (stage(lo), stage(hi));
    let (lo, hi) = (_mm256_add_ps(lo, hi), _mm256_sub_ps(lo, hi));
    (_mm256_mul_ps(lo, quarter), _mm256_mul_ps(hi, quarter))
}

/// [`step`] in f32 with AVX2: eight samples, lines 0–7 and 8–15 in two
/// registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn step8_avx2<const STEREO: bool, const FUSED: bool>(
    net: &mut Net<'_, f32>,
    u: (&[f32; 16], &[f32; 16]),
    c: &Coefs<f32>,
    sums: (*mut f32, *mut f32),
) {
    const N: usize = 8;
    // (Not zeroed: a row is written before it is read.)
    let mut wrapped = [const { MaybeUninit::<[f32; MAX_GROUP]>::uninit() }; LINES];
    let base = net.lines.as_mut_ptr();
    let spare = wrapped.as_mut_ptr() as *mut f32;
    let mut at = [core::ptr::null_mut::<f32>(); LINES];
    let mut rows = [_mm256_setzero_ps(); LINES];
    for i in 0..LINES {
        // SAFETY (this and every load and store below): `step`'s contract.
        at[i] = row_in(base, net, i, N, spare.add(i * MAX_GROUP));
        rows[i] = _mm256_loadu_ps(at[i]);
        // As in `step16_avx512`.
        _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(net.pos[i] + 2 * N) as *const i8);
    }
    let y_lo = transpose8_regs(core::array::from_fn(|i| rows[i]));
    let y_hi = transpose8_regs(core::array::from_fn(|i| rows[8 + i]));
    let (b, a) = (_mm256_set1_ps(c.dc_b), _mm256_set1_ps(c.dc_alpha));
    let (alpha, beta) = (_mm256_set1_ps(c.alpha), _mm256_set1_ps(c.beta));
    let half = |x: &[f32; LINES], h: usize| _mm256_loadu_ps(x[8 * h..].as_ptr());
    let g_hi = [half(&c.g_hi, 0), half(&c.g_hi, 1)];
    let g_diff = [half(&c.g_diff, 0), half(&c.g_diff, 1)];
    let in_gain = [half(&c.in_gain, 0), half(&c.in_gain, 1)];
    let in_gain_r = [half(&c.in_gain_r, 0), half(&c.in_gain_r, 1)];
    let quarter = _mm256_set1_ps(0.25);
    let mut dc = [half(net.dc, 0), half(net.dc, 1)];
    let mut damp = [half(net.damp, 0), half(net.damp, 1)];
    let mut out = [[_mm256_setzero_ps(); N]; 2];
    let mut wet = [[_mm256_setzero_ps(); N]; 2];
    for t in 0..N {
        let mut v = [_mm256_setzero_ps(); 2];
        for h in 0..2 {
            let y = if h == 0 { y_lo[t] } else { y_hi[t] };
            let by = _mm256_mul_ps(b, y);
            let yi = _mm256_add_ps(by, dc[h]);
            wet[h][t] = yi;
            v[h] = if FUSED {
                // `Reverb::run_lanes`'s fused step.
                dc[h] = _mm256_fmsub_ps(a, yi, by);
                let lp = _mm256_fmadd_ps(beta, yi, damp[h]);
                damp[h] = _mm256_fmadd_ps(alpha, lp, _mm256_mul_ps(beta, yi));
                _mm256_fmadd_ps(g_hi[h], yi, _mm256_mul_ps(g_diff[h], lp))
            } else {
                dc[h] = _mm256_sub_ps(_mm256_mul_ps(a, yi), by);
                let lp = _mm256_add_ps(_mm256_mul_ps(beta, yi), damp[h]);
                damp[h] = _mm256_add_ps(_mm256_mul_ps(beta, yi), _mm256_mul_ps(alpha, lp));
                _mm256_add_ps(_mm256_mul_ps(g_hi[h], yi), _mm256_mul_ps(g_diff[h], lp))
            };
        }
        let (lo, hi) = hadamard_ps(v[0], v[1], quarter);
        let add = |v, g, u: f32| {
            if FUSED {
                _mm256_fmadd_ps(g, _mm256_set1_ps(u), v)
            } else {
                _mm256_add_ps(v, _mm256_mul_ps(g, _mm256_set1_ps(u)))
            }
        };
        for (h, mut v) in [lo, hi].into_iter().enumerate() {
            v = add(v, in_gain[h], u.0[t]);
            if STEREO {
                v = add(v, in_gain_r[h], u.1[t]);
            }
            out[h][t] = v;
        }
    }
    let (mut l, mut r) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    for h in 0..2 {
        _mm256_storeu_ps(net.dc[8 * h..].as_mut_ptr(), dc[h]);
        _mm256_storeu_ps(net.damp[8 * h..].as_mut_ptr(), damp[h]);
        for (k, row) in transpose8_regs(out[h]).into_iter().enumerate() {
            let i = 8 * h + k;
            _mm256_storeu_ps(at[i], row);
            row_out(base, net, i, N, at[i]);
        }
        for (k, row) in transpose8_regs(wet[h]).into_iter().enumerate() {
            let i = 8 * h + k;
            let (cl, cr) = (_mm256_set1_ps(c.out_l[i]), _mm256_set1_ps(c.out_r[i]));
            if FUSED {
                l = _mm256_fmadd_ps(cl, row, l);
                r = _mm256_fmadd_ps(cr, row, r);
            } else {
                l = _mm256_add_ps(l, _mm256_mul_ps(cl, row));
                r = _mm256_add_ps(r, _mm256_mul_ps(cr, row));
            }
        }
    }
    _mm256_storeu_ps(sums.0, l);
    _mm256_storeu_ps(sums.1, r);
}

/// A 4 × 4 transpose of f64 rows in registers: `out[t]` holds element
/// `t` of every row, in row order. Moves data only.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn transpose4_pd(r: [__m256d; 4]) -> [__m256d; 4] {
    // Elements (0 | 2) and (1 | 3) of rows 0, 1 and of rows 2, 3.
    let t0 = _mm256_unpacklo_pd(r[0], r[1]);
    let t1 = _mm256_unpackhi_pd(r[0], r[1]);
    let t2 = _mm256_unpacklo_pd(r[2], r[3]);
    let t3 = _mm256_unpackhi_pd(r[2], r[3]);
    [
        _mm256_permute2f128_pd::<0x20>(t0, t2),
        _mm256_permute2f128_pd::<0x20>(t1, t3),
        _mm256_permute2f128_pd::<0x31>(t0, t2),
        _mm256_permute2f128_pd::<0x31>(t1, t3),
    ]
}

/// One butterfly stage inside a register, as [`butterfly_ps`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn butterfly_pd4<const HIGH: i32>(v: __m256d, swapped: __m256d) -> __m256d {
    _mm256_blend_pd::<HIGH>(_mm256_add_pd(swapped, v), _mm256_sub_pd(swapped, v))
}

/// `v ← ¼·H16·v` on lines 0–3, 4–7, 8–11 and 12–15 (`v[0..4]`) in f64, as
/// the scalar `hadamard` computes it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn hadamard_pd4(v: [__m256d; 4], quarter: __m256d) -> [__m256d; 4] {
    let v = v.map(|v| {
        let v = butterfly_pd4::<0b1010>(v, _mm256_permute_pd::<0b0101>(v));
        butterfly_pd4::<0b1100>(v, _mm256_permute2f128_pd::<0x01>(v, v))
    });
    // Stride 4: registers 0 with 1 and 2 with 3; stride 8: 0, 1 with 2, 3.
    let v = [
        _mm256_add_pd(v[0], v[1]),
        _mm256_sub_pd(v[0], v[1]),
        _mm256_add_pd(v[2], v[3]),
        _mm256_sub_pd(v[2], v[3]),
    ];
    let v = [
        _mm256_add_pd(v[0], v[2]),
        _mm256_add_pd(v[1], v[3]),
        _mm256_sub_pd(v[0], v[2]),
        _mm256_sub_pd(v[1], v[3]),
    ];
    v.map(|v| _mm256_mul_pd(v, quarter))
}

/// [`step`] in f64 with AVX2: four samples, the lines in four registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn step4_avx2<const STEREO: bool>(
    net: &mut Net<'_, f64>,
    u: (&[f64; 16], &[f64; 16]),
    c: &Coefs<f64>,
    sums: (*mut f64, *mut f64),
) {
    const N: usize = 4;
    // (Not zeroed: a row is written before it is read.)
    let mut wrapped = [const { MaybeUninit::<[f64; MAX_GROUP]>::uninit() }; LINES];
    let base = net.lines.as_mut_ptr();
    let spare = wrapped.as_mut_ptr() as *mut f64;
    let mut at = [core::ptr::null_mut::<f64>(); LINES];
    let mut rows = [_mm256_setzero_pd(); LINES];
    for i in 0..LINES {
        // SAFETY (this and every load and store below): `step`'s contract.
        at[i] = row_in(base, net, i, N, spare.add(i * MAX_GROUP));
        rows[i] = _mm256_loadu_pd(at[i]);
        // As in `step16_avx512`.
        _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(net.pos[i] + 2 * N) as *const i8);
    }
    // y[q][t]: lines 4q … 4q + 3 at sample t.
    let y: [[__m256d; N]; 4] =
        core::array::from_fn(|q| transpose4_pd(core::array::from_fn(|k| rows[4 * q + k])));
    let (b, a) = (_mm256_set1_pd(c.dc_b), _mm256_set1_pd(c.dc_alpha));
    let (alpha, beta) = (_mm256_set1_pd(c.alpha), _mm256_set1_pd(c.beta));
    let quad = |x: &[f64; LINES]| -> [__m256d; 4] {
        core::array::from_fn(|q| _mm256_loadu_pd(x[4 * q..].as_ptr()))
    };
    let (g_hi, g_diff) = (quad(&c.g_hi), quad(&c.g_diff));
    let (in_gain, in_gain_r) = (quad(&c.in_gain), quad(&c.in_gain_r));
    let quarter = _mm256_set1_pd(0.25);
    let mut dc = quad(net.dc);
    let mut damp = quad(net.damp);
    let mut out = [[_mm256_setzero_pd(); N]; 4];
    let mut wet = [[_mm256_setzero_pd(); N]; 4];
    for t in 0..N {
        let mut v = [_mm256_setzero_pd(); 4];
        for q in 0..4 {
            let by = _mm256_mul_pd(b, y[q][t]);
            let yi = _mm256_add_pd(by, dc[q]);
            dc[q] = _mm256_sub_pd(_mm256_mul_pd(a, yi), by);
            wet[q][t] = yi;
            let lp = _mm256_add_pd(_mm256_mul_pd(beta, yi), damp[q]);
            damp[q] = _mm256_add_pd(_mm256_mul_pd(beta, yi), _mm256_mul_pd(alpha, lp));
            v[q] = _mm256_add_pd(_mm256_mul_pd(g_hi[q], yi), _mm256_mul_pd(g_diff[q], lp));
        }
        for (q, mut v) in hadamard_pd4(v, quarter).into_iter().enumerate() {
            v = _mm256_add_pd(v, _mm256_mul_pd(in_gain[q], _mm256_set1_pd(u.0[t])));
            if STEREO {
                v = _mm256_add_pd(v, _mm256_mul_pd(in_gain_r[q], _mm256_set1_pd(u.1[t])));
            }
            out[q][t] = v;
        }
    }
    let (mut l, mut r) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for q in 0..4 {
        _mm256_storeu_pd(net.dc[4 * q..].as_mut_ptr(), dc[q]);
        _mm256_storeu_pd(net.damp[4 * q..].as_mut_ptr(), damp[q]);
        for (k, row) in transpose4_pd(out[q]).into_iter().enumerate() {
            let i = 4 * q + k;
            _mm256_storeu_pd(at[i], row);
            row_out(base, net, i, N, at[i]);
        }
        for (k, row) in transpose4_pd(wet[q]).into_iter().enumerate() {
            let i = 4 * q + k;
            l = _mm256_add_pd(l, _mm256_mul_pd(_mm256_set1_pd(c.out_l[i]), row));
            r = _mm256_add_pd(r, _mm256_mul_pd(_mm256_set1_pd(c.out_r[i]), row));
        }
    }
    _mm256_storeu_pd(sums.0, l);
    _mm256_storeu_pd(sums.1, r);
}
