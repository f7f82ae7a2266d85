//! `libm::sin` (libm 0.2.16, a port of musl) for a block of f64 arguments, in
//! lanes, bit for bit.
//!
//! The strict sine oscillator spends its time in one `libm::sin` call per
//! sample. Here the same IEEE operations, in the same order, run on
//! [`LANES`] arguments side by side: the `|x| < 2^-26` and `|x| ≤ π/4`
//! branches of `sin`, the `|x| ≤ 9π/4` fast reductions of `rem_pio2` (x ∓ k·π/2
//! in two parts, k = 1…4), the quadrant selection and the `k_sin` / `k_cos`
//! polynomials. Every lane computes every candidate and selects one, so the
//! loop has no per-lane branch and vectorises; only `+ − × ÷` (Rust never
//! contracts `a * b + c`, and no FMA is enabled). A lane outside that range
//! (the `medium` reductions near π/2, π, 3π/2, 2π; |x| > 9π/4; NaN, ±∞) is
//! recomputed with `libm::sin` itself. A test compares the kernel with
//! `libm::sin` on every argument class the oscillator produces.

#![allow(clippy::excessive_precision)] // libm's literals, copied verbatim

use super::sample::Sample;
use super::vector::{Isa, SimdLevel};

/// Arguments computed side by side.
const LANES: usize = 8;

// The constants as libm writes them (each names one f64 exactly).
// k_sin.rs
const S1: f64 = -1.66666666666666324348e-01;
const S2: f64 = 8.33333333332248946124e-03;
const S3: f64 = -1.98412698298579493134e-04;
const S4: f64 = 2.75573137070700676789e-06;
const S5: f64 = -2.50507602534068634195e-08;
const S6: f64 = 1.58969099521155010221e-10;
// k_cos.rs
const C1: f64 = 4.16666666666666019037e-02;
const C2: f64 = -1.38888888888741095749e-03;
const C3: f64 = 2.48015872894767294178e-05;
const C4: f64 = -2.75573143513906633035e-07;
const C5: f64 = 2.08757232129817482790e-09;
const C6: f64 = -1.13596475577881948265e-11;
// rem_pio2.rs
const PIO2_1: f64 = 1.57079632673412561417e+00;
const PIO2_1T: f64 = 6.07710050650619224932e-11;

/// Select `a` where `m` is all ones, `b` where it is zero (bitwise, so it
/// vectorises to a blend and never changes a bit of either value).
#[inline(always)]
fn pick(m: u64, a: f64, b: f64) -> f64 {
    f64::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
}

/// All ones if `c`, else zero.
#[inline(always)]
fn mask(c: bool) -> u64 {
    (c as u64).wrapping_neg()
}

/// The sines of [`LANES`] arguments, and a mask of the lanes in the ported
/// range (the others hold no meaningful value). Each step is one loop over
/// the lanes, so the compiler emits vector instructions for it.
#[inline(always)]
fn lanes(x: &[f64; LANES]) -> ([f64; LANES], u64) {
    let mut y = [0.0f64; LANES];
    let mut out_of_range = 0u64;
    for i in 0..LANES {
        let bits = x[i].to_bits();
        let ix = (bits >> 32) & 0x7fff_ffff;
        let negative = mask(bits >> 63 != 0);
        // sin: |x| < 2^-26 returns x; |x| ~≤ π/4 is k_sin(x, 0, 0).
        let tiny = mask(ix < 0x3e50_0000);
        let small = mask(ix <= 0x3fe9_21fb);
        // rem_pio2 for |x| ~≤ 9π/4: k from the high word (1…4), except the
        // words near π/2, π, 3π/2, 2π, which take `medium`.
        let k =
            1 + (ix > 0x4002_d97c) as u64 + (ix > 0x400f_6a7a) as u64 + (ix > 0x4015_fdbc) as u64;
        let to_medium = (ix <= 0x400f_6a7a && (ix & 0xf_ffff) == 0x9_21fb)
            || ix == 0x4012_d97c
            || ix == 0x4019_21fb;
        let ported = small | mask(ix <= 0x401c_463b && !to_medium);
        out_of_range |= (!ported & 1) << i;
        // `k as f64 * PIO2_1` is rem_pio2's `2.0 * PIO2_1` (…) to the bit;
        // x + k·PIO2_1 is x − (−k·PIO2_1) exactly, so one form serves both
        // signs (the sign bit flipped by xor).
        let kf = k as f64;
        let sign = negative & (1 << 63);
        let hi = f64::from_bits((kf * PIO2_1).to_bits() ^ sign);
        let lo = f64::from_bits((kf * PIO2_1T).to_bits() ^ sign);
        // rem_pio2 returns n = ±k; sin takes n & 3.
        let n = ((k ^ negative).wrapping_sub(negative)) & 3;
        let z = x[i] - hi;
        let r0 = z - lo;
        let r1 = (z - r0) - lo;
        let y0 = pick(small, x[i], r0);
        let y1 = pick(small, 0.0, r1);

        // k_sin (both forms share z, w, r, v) and k_cos.
        let z = y0 * y0;
        let w = z * z;
        let r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
        let v = z * y0;
        let sin0 = y0 + v * (S1 + z * r);
        let sin1 = y0 - ((z * (0.5 * y1 - v * r) - y1) - v * S1);
        let rc = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
        let hz = 0.5 * z;
        let wc = 1.0 - hz;
        let cos = wc + (((1.0 - wc) - hz) + (z * rc - y0 * y1));

        // Quadrant: n even → ±sin1, odd → ±cos; n ≥ 2 → negated.
        let q = pick(mask(n & 1 != 0), cos, sin1);
        let q = f64::from_bits(q.to_bits() ^ ((n >> 1) << 63));
        y[i] = pick(tiny, x[i], pick(small, sin0, q));
    }
    (y, out_of_range)
}

#[inline(always)]
fn sin_lanes<S: Sample>(x: &mut [S]) {
    let mut chunks = x.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        let mut a = [0.0f64; LANES];
        for i in 0..LANES {
            a[i] = chunk[i].to_f64();
        }
        let (mut y, out_of_range) = lanes(&a);
        if out_of_range != 0 {
            for i in 0..LANES {
                if out_of_range >> i & 1 != 0 {
                    y[i] = libm::sin(a[i]);
                }
            }
        }
        for i in 0..LANES {
            chunk[i] = S::from_f64(y[i]);
        }
    }
    for v in chunks.into_remainder() {
        *v = S::from_f64(libm::sin(v.to_f64()));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sin_lanes_avx2<S: Sample>(x: &mut [S]) {
    sin_lanes(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq")]
unsafe fn sin_lanes_avx512<S: Sample>(x: &mut [S]) {
    sin_lanes(x)
}

/// `x[i] = libm::sin(x[i])` for every element, the same bits as the call,
/// at every [`SimdLevel`]. Only for f64 samples: an f32 `S` would round the
/// argument and the result (strict f32 uses `libm::sinf`).
pub(crate) fn sin_block<S: Sample>(level: SimdLevel, x: &mut [S]) {
    #[cfg(target_arch = "x86_64")]
    if level.isa() == Isa::Avx512 {
        // SAFETY: a `SimdLevel` is only ever an ISA this CPU has (AVX-512F
        // and DQ for `Avx512`).
        return unsafe { sin_lanes_avx512(x) };
    }
    #[cfg(target_arch = "x86_64")]
    if level.has_avx2() {
        // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
        return unsafe { sin_lanes_avx2(x) };
    }
    let _ = level;
    sin_lanes(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The bit-for-bit comparison with `libm::sin` on 10^7 oscillator
    // arguments is `ops::oscillators`' issue9 test; here, that the kernel
    // itself (not its `libm::sin` fallback) computes the oscillator's range.
    #[test]
    fn the_oscillators_range_is_ported_and_the_rest_falls_back() {
        let inside = [0.0, 1e-9, 0.5, 1.0, 2.0, 3.0, 4.5, 6.2];
        let (y, out_of_range) = lanes(&inside);
        assert_eq!(out_of_range, 0);
        for (x, y) in inside.iter().zip(y) {
            assert_eq!(y.to_bits(), libm::sin(*x).to_bits(), "sin({x})");
        }
        let medium = [
            core::f64::consts::FRAC_PI_2,
            core::f64::consts::PI,
            3.0 * core::f64::consts::FRAC_PI_2,
            2.0 * core::f64::consts::PI,
            8.0,
            -100.0,
            f64::NAN,
            f64::INFINITY,
        ];
        assert_eq!(lanes(&medium).1, 0xff);
    }
}
