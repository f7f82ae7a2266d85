//! The reverb's network sixteen samples at a time in f32 with AVX-512: all
//! sixteen lines in one register.
//!
//! The lines are read and written as rows: sixteen loads of sixteen
//! consecutive samples of each line, one 16 × 16 transpose
//! ([`transpose16_regs`]) turns them into one register per sample holding
//! every line's output, the step of the module docs runs on that register
//! for each sample in turn, and two transposes turn the sixteen results
//! (what is written back into each line, and each line's output for the
//! wet sums) back into rows. Only data moves differ from the scalar step
//! (`Reverb::run_lanes`): every lane does the same operations on the same
//! operands in the same order, so the bits are the same. Sixteen samples
//! of a line never read what they write: a line is longer than that.

#[cfg(target_arch = "x86_64")]
use crate::dsp::vector::transpose16_regs;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

/// Samples (and lines) per group.
pub(super) const GROUP: usize = 16;

/// The network's coefficients for [`step16_avx512`], in f32.
pub(super) struct Coefs32 {
    pub(super) dc_b: f32,
    pub(super) dc_alpha: f32,
    pub(super) alpha: f32,
    pub(super) beta: f32,
    pub(super) g_hi: [f32; GROUP],
    pub(super) g_diff: [f32; GROUP],
    pub(super) in_gain: [f32; GROUP],
    pub(super) in_gain_r: [f32; GROUP],
}

/// The state a group carries from sample to sample.
pub(super) struct State32<'a> {
    pub(super) dc: &'a mut [f32; GROUP],
    pub(super) damp: &'a mut [f32; GROUP],
}

/// One butterfly stage of the Hadamard matrix on the sixteen lanes: lane
/// `j` becomes `v[j] + v[j ^ h]` where bit `h` of `j` is clear and
/// `v[j ^ h] − v[j]` where it is set, `swapped` being `v` with lanes `j`
/// and `j ^ h` exchanged — the scalar stages' operands in their order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn butterfly(v: __m512, swapped: __m512, high: __mmask16, swapped_first: bool) -> __m512 {
    let sum = if swapped_first {
        _mm512_add_ps(swapped, v)
    } else {
        _mm512_add_ps(v, swapped)
    };
    _mm512_mask_sub_ps(sum, high, swapped, v)
}

/// `v ← ¼·H16·v` as the scalar `hadamard` computes it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn hadamard(v: __m512, quarter: __m512) -> __m512 {
    // Lanes whose bit 1, 2, 4, 8 is set.
    const H1: __mmask16 = 0xAAAA;
    const H2: __mmask16 = 0xCCCC;
    const H4: __mmask16 = 0xF0F0;
    const H8: __mmask16 = 0xFF00;
    // Strides 1 and 2 are written `swapped + v` (`butterfly_swapped`),
    // strides 4 and 8 `v + swapped` (`butterfly_halves`).
    let v = butterfly(v, _mm512_permute_ps::<0xB1>(v), H1, true);
    let v = butterfly(v, _mm512_permute_ps::<0x4E>(v), H2, true);
    let v = butterfly(v, _mm512_shuffle_f32x4::<0xB1>(v, v), H4, false);
    let v = butterfly(v, _mm512_shuffle_f32x4::<0x4E>(v, v), H8, false);
    _mm512_mul_ps(v, quarter)
}

/// Sixteen samples of the network: line `i` reads and then writes the
/// sixteen samples from `pos[i]` on, wrapping from `end[i]` to `start[i]`,
/// fed `u.0[t]` (and `u.1[t]` when `STEREO`) at sample `t`; each line's
/// output (after its DC blocker) goes to `ys[i·stride + t]`.
///
/// # Safety
/// The CPU has AVX-512F; for every line `start[i] ≤ pos[i] < end[i] ≤
/// lines.len()`, `end[i] − start[i] ≥ 16`, and the lines' ranges are
/// disjoint; `ys[i·stride .. i·stride + 16]` are in bounds for every line.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn step16_avx512<const STEREO: bool>(
    lines: &mut [f32],
    ring: (&[usize; GROUP], &[usize; GROUP], &[usize; GROUP]),
    u: (&[f32; GROUP], &[f32; GROUP]),
    c: &Coefs32,
    st: &mut State32<'_>,
    ys: *mut f32,
    stride: usize,
) {
    let (pos, start, end) = ring;
    let (u, u_r) = u;
    // A line whose sixteen samples wrap is copied into `wrapped` and back.
    // (Not zeroed: a row is written before it is read.)
    let mut wrapped = [const { MaybeUninit::<[f32; GROUP]>::uninit() }; GROUP];
    debug_assert!(
        (0..GROUP).all(|i| start[i] <= pos[i] && pos[i] < end[i] && end[i] <= lines.len())
    );
    let base = lines.as_mut_ptr();
    let mut rows = [_mm512_setzero_ps(); GROUP];
    for i in 0..GROUP {
        let head = end[i] - pos[i];
        rows[i] = if head >= GROUP {
            // SAFETY: `pos[i] + 16 ≤ end[i] ≤ lines.len()`.
            _mm512_loadu_ps(base.add(pos[i]))
        } else {
            let w = wrapped[i].as_mut_ptr() as *mut f32;
            // SAFETY: `pos[i] .. end[i]` and `start[i] .. start[i] + 16 −
            // head` are within line i (it is at least 16 long).
            core::ptr::copy_nonoverlapping(base.add(pos[i]), w, head);
            core::ptr::copy_nonoverlapping(base.add(start[i]), w.add(head), GROUP - head);
            _mm512_loadu_ps(w)
        };
    }
    let y = transpose16_regs(rows);
    let (b, a) = (_mm512_set1_ps(c.dc_b), _mm512_set1_ps(c.dc_alpha));
    let (alpha, beta) = (_mm512_set1_ps(c.alpha), _mm512_set1_ps(c.beta));
    let g_hi = _mm512_loadu_ps(c.g_hi.as_ptr());
    let g_diff = _mm512_loadu_ps(c.g_diff.as_ptr());
    let in_gain = _mm512_loadu_ps(c.in_gain.as_ptr());
    let in_gain_r = _mm512_loadu_ps(c.in_gain_r.as_ptr());
    let quarter = _mm512_set1_ps(0.25);
    let mut dc = _mm512_loadu_ps(st.dc.as_ptr());
    let mut damp = _mm512_loadu_ps(st.damp.as_ptr());
    let mut out = [_mm512_setzero_ps(); GROUP];
    let mut wet = [_mm512_setzero_ps(); GROUP];
    for t in 0..GROUP {
        let by = _mm512_mul_ps(b, y[t]);
        let yi = _mm512_add_ps(by, dc);
        dc = _mm512_sub_ps(_mm512_mul_ps(a, yi), by);
        wet[t] = yi;
        let lp = _mm512_add_ps(_mm512_mul_ps(beta, yi), damp);
        damp = _mm512_add_ps(_mm512_mul_ps(beta, yi), _mm512_mul_ps(alpha, lp));
        let v = _mm512_add_ps(_mm512_mul_ps(g_hi, yi), _mm512_mul_ps(g_diff, lp));
        let mut v = hadamard(v, quarter);
        v = _mm512_add_ps(v, _mm512_mul_ps(in_gain, _mm512_set1_ps(u[t])));
        if STEREO {
            v = _mm512_add_ps(v, _mm512_mul_ps(in_gain_r, _mm512_set1_ps(u_r[t])));
        }
        out[t] = v;
    }
    _mm512_storeu_ps(st.dc.as_mut_ptr(), dc);
    _mm512_storeu_ps(st.damp.as_mut_ptr(), damp);
    for (i, row) in transpose16_regs(out).into_iter().enumerate() {
        let head = end[i] - pos[i];
        if head >= GROUP {
            // SAFETY: as for the load.
            _mm512_storeu_ps(base.add(pos[i]), row);
        } else {
            let w = wrapped[i].as_mut_ptr() as *mut f32;
            _mm512_storeu_ps(w, row);
            // SAFETY: as for the load.
            core::ptr::copy_nonoverlapping(w, base.add(pos[i]), head);
            core::ptr::copy_nonoverlapping(w.add(head), base.add(start[i]), GROUP - head);
        }
    }
    for (i, row) in transpose16_regs(wet).into_iter().enumerate() {
        // SAFETY: the contract above.
        _mm512_storeu_ps(ys.add(i * stride), row);
    }
}
