//! Math policies: which implementation of each transcendental function a node
//! uses, chosen once when the node is built (by its profile: see
//! [`crate::profile`]).
//!
//! - [`StrictMath`]: the pinned `libm` crate for everything. Bit-exact across
//!   runs, builds, opt levels and targets.
//! - [`StdMath`]: `std` (the platform's libm), for repro.
//! - [`FastMath`]: polynomial approximations (absolute error ≤ 1e-4 on the
//!   ranges audio uses) on the *signal* path, for live. Coefficient math
//!   (filter design) stays on `std`: approximations there move poles.
//!
//! This is the only module allowed to call `std` transcendentals; clippy's
//! `disallowed_methods` (clippy.toml) rejects them everywhere else.
#![allow(clippy::disallowed_methods)]

use super::sample::{Precision, Sample};
use super::vector::SimdLevel;

/// Which math policy a node runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathKind {
    Strict,
    Std,
    Fast,
}

impl MathKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            MathKind::Strict => "libm",
            MathKind::Std => "std",
            MathKind::Fast => "fast",
        }
    }
}

/// Whether a node of precision `S` under math `M` fuses its multiply-adds
/// (each `a·b + c` rounded once) at `level`: f32 under repro and live on a
/// CPU with FMA (every level with AVX2, [`SimdLevel::has_fma`]), so the
/// same bits with AVX2 as with AVX-512. Strict never fuses (bit-exact
/// everywhere), nor does f64. The operators that fuse (`biquad`, `reverb`)
/// ask here.
pub(crate) fn fuses<S: Sample, M: Math>(level: SimdLevel) -> bool {
    S::PRECISION == Precision::F32 && M::KIND != MathKind::Strict && level.has_fma()
}

/// A math policy. Implementors are zero-sized; nodes are generic over one, so
/// the choice costs nothing per sample.
pub trait Math: Send + Sync + 'static {
    const KIND: MathKind;

    /// Sine on the signal path.
    fn sin<S: Sample>(x: S) -> S;
    /// Cosine on the signal path.
    fn cos<S: Sample>(x: S) -> S;
    /// Hyperbolic tangent on the signal path.
    fn tanh<S: Sample>(x: S) -> S;
    /// Exponential on the signal path.
    fn exp<S: Sample>(x: S) -> S;

    /// Coefficient math (never approximated), computed in f64.
    fn coef_sin(x: f64) -> f64;
    fn coef_cos(x: f64) -> f64;
    fn coef_tan(x: f64) -> f64;
    fn coef_exp(x: f64) -> f64;
    fn coef_pow(x: f64, y: f64) -> f64;
    /// Natural logarithm (dB conversions of levels), computed in f64.
    fn coef_ln(x: f64) -> f64;
}

macro_rules! per_precision {
    ($x:expr, $f64fn:expr, $f32fn:expr) => {
        match S::PRECISION {
            Precision::F64 => S::from_f64($f64fn($x.to_f64())),
            Precision::F32 => S::from_f32($f32fn($x.to_f32())),
        }
    };
}

/// The pinned `libm` for everything.
pub(crate) struct StrictMath;

impl Math for StrictMath {
    const KIND: MathKind = MathKind::Strict;
    #[inline]
    fn sin<S: Sample>(x: S) -> S {
        per_precision!(x, libm::sin, libm::sinf)
    }
    #[inline]
    fn cos<S: Sample>(x: S) -> S {
        per_precision!(x, libm::cos, libm::cosf)
    }
    #[inline]
    fn tanh<S: Sample>(x: S) -> S {
        per_precision!(x, libm::tanh, libm::tanhf)
    }
    #[inline]
    fn exp<S: Sample>(x: S) -> S {
        per_precision!(x, libm::exp, libm::expf)
    }
    fn coef_sin(x: f64) -> f64 {
        libm::sin(x)
    }
    fn coef_cos(x: f64) -> f64 {
        libm::cos(x)
    }
    fn coef_tan(x: f64) -> f64 {
        libm::tan(x)
    }
    fn coef_exp(x: f64) -> f64 {
        libm::exp(x)
    }
    fn coef_pow(x: f64, y: f64) -> f64 {
        libm::pow(x, y)
    }
    fn coef_ln(x: f64) -> f64 {
        libm::log(x)
    }
}

/// `std` for everything.
pub(crate) struct StdMath;

impl Math for StdMath {
    const KIND: MathKind = MathKind::Std;
    #[inline]
    fn sin<S: Sample>(x: S) -> S {
        per_precision!(x, f64::sin, f32::sin)
    }
    #[inline]
    fn cos<S: Sample>(x: S) -> S {
        per_precision!(x, f64::cos, f32::cos)
    }
    #[inline]
    fn tanh<S: Sample>(x: S) -> S {
        per_precision!(x, f64::tanh, f32::tanh)
    }
    #[inline]
    fn exp<S: Sample>(x: S) -> S {
        per_precision!(x, f64::exp, f32::exp)
    }
    fn coef_sin(x: f64) -> f64 {
        x.sin()
    }
    fn coef_cos(x: f64) -> f64 {
        x.cos()
    }
    fn coef_tan(x: f64) -> f64 {
        x.tan()
    }
    fn coef_exp(x: f64) -> f64 {
        x.exp()
    }
    fn coef_pow(x: f64, y: f64) -> f64 {
        x.powf(y)
    }
    fn coef_ln(x: f64) -> f64 {
        x.ln()
    }
}

/// Approximations on the signal path, `std` for coefficients.
pub(crate) struct FastMath;

const PI: f64 = core::f64::consts::PI;

/// ⌊x⌋ through a truncating conversion: the default x86-64 target has no
/// rounding instruction, and `f64::floor` is a libm call per sample there.
/// Exact for every finite x (beyond 2^52 every f64 is already whole); the
/// sign of a zero result may differ from `floor`'s.
#[inline(always)]
fn floor_no_call(x: f64) -> f64 {
    if x.abs() < 4503599627370496.0 {
        let t = x as i64 as f64;
        if t > x {
            t - 1.0
        } else {
            t
        }
    } else {
        x
    }
}

/// sin(x) for any finite x: reduce to [-π/2, π/2], then an odd Taylor
/// polynomial to x⁹ (|error| ≤ 4e-6 on the reduced range).
#[inline]
fn fast_sin<S: Sample>(x: S) -> S {
    let two_pi = S::from_f64(2.0 * PI);
    let inv_two_pi = S::from_f64(1.0 / (2.0 * PI));
    // Reduce to [-π, π).
    let k = S::from_f64(floor_no_call((x * inv_two_pi + S::from_f64(0.5)).to_f64()));
    let mut r = x - k * two_pi;
    let half_pi = S::from_f64(PI / 2.0);
    let pi = S::from_f64(PI);
    // Fold into [-π/2, π/2] using sin(π - r) = sin(r).
    if r > half_pi {
        r = pi - r;
    } else if r < -half_pi {
        r = -pi - r;
    }
    let r2 = r * r;
    let c3 = S::from_f64(-1.0 / 6.0);
    let c5 = S::from_f64(1.0 / 120.0);
    let c7 = S::from_f64(-1.0 / 5040.0);
    let c9 = S::from_f64(1.0 / 362880.0);
    r * (S::ONE + r2 * (c3 + r2 * (c5 + r2 * (c7 + r2 * c9))))
}

/// e^x through 2^(x·log2 e): integer part into the exponent bits, a degree-6
/// polynomial for the fraction (relative error ≤ 1.2e-5, measured 8.3e-6). Saturates outside ±700.
#[inline]
fn fast_exp<S: Sample>(x: S) -> S {
    let xf = x.to_f64().clamp(-700.0, 700.0);
    let t = xf * core::f64::consts::LOG2_E;
    let n = floor_no_call(t);
    let f = S::from_f64(t - n);
    let ln2 = S::from_f64(core::f64::consts::LN_2);
    let y = f * ln2;
    // e^y on y ∈ [0, ln 2)
    let p = S::ONE
        + y * (S::ONE
            + y * (S::from_f64(0.5)
                + y * (S::from_f64(1.0 / 6.0)
                    + y * (S::from_f64(1.0 / 24.0)
                        + y * (S::from_f64(1.0 / 120.0) + y * S::from_f64(1.0 / 720.0))))));
    let scale = f64::from_bits(((n as i64 + 1023) as u64) << 52);
    p * S::from_f64(scale)
}

/// log2(x) for a positive normal x, without a call or a branch (so a loop of
/// it vectorises): the exponent from the bits, the mantissa folded into
/// [√2/2, √2), and ln of it as 2·atanh(s), s = (m − 1)/(m + 1), to s⁹.
/// Absolute error ≤ 2e-9 (measured 1.0e-9 from 1e-30 to 1e30). Zero gives a
/// finite value far below log2 of any normal number; negative, subnormal,
/// infinite or NaN x give an unspecified finite or NaN value.
#[inline(always)]
pub(crate) fn fast_log2(x: f64) -> f64 {
    // The bits of √2/2: mantissas at or above √2 carry into the exponent.
    const HALF_SQRT2: u64 = 0x3fe6_a09e_667f_3bcd;
    const MANTISSA: u64 = 0x000f_ffff_ffff_ffff;
    // 2^52: an exponent field e in its low mantissa bits reads 2^52 + e.
    const TWO52: u64 = 0x4330_0000_0000_0000;
    let ix = x.to_bits().wrapping_add(0x3ff0_0000_0000_0000 - HALF_SQRT2);
    let k = f64::from_bits((ix >> 52) | TWO52) - (4503599627370496.0 + 1023.0);
    let m = f64::from_bits((ix & MANTISSA) + HALF_SQRT2);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let s2 = s * s;
    let atanh =
        s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0)))));
    k + atanh * (2.0 * core::f64::consts::LOG2_E)
}

/// 2^x for x in [−1022, 1023], without a call or a branch: x rounded to the
/// nearest integer n by adding and subtracting 1.5·2^52 (n is then the low
/// bits of the sum, moved into the exponent field), and 2^(x − n) on
/// [−1/2, 1/2] as the Taylor series of e^y to y⁷. Relative error ≤ 1e-8
/// (measured 7.0e-9). Outside that range the exponent wraps: clamp first.
#[inline(always)]
pub(crate) fn fast_exp2(x: f64) -> f64 {
    const SHIFT: f64 = 6755399441055744.0;
    let t = x + SHIFT;
    let n = t - SHIFT;
    let scale = f64::from_bits(t.to_bits().wrapping_sub(SHIFT.to_bits()).wrapping_add(1023) << 52);
    let y = (x - n) * core::f64::consts::LN_2;
    let p = 1.0
        + y * (1.0
            + y * (1.0 / 2.0
                + y * (1.0 / 6.0
                    + y * (1.0 / 24.0
                        + y * (1.0 / 120.0 + y * (1.0 / 720.0 + y * (1.0 / 5040.0)))))));
    p * scale
}

#[inline]
fn fast_tanh<S: Sample>(x: S) -> S {
    let lim = S::from_f64(9.0);
    let xc = x.clamp(-lim, lim);
    let e = fast_exp(xc + xc);
    (e - S::ONE) / (e + S::ONE)
}

impl Math for FastMath {
    const KIND: MathKind = MathKind::Fast;
    #[inline]
    fn sin<S: Sample>(x: S) -> S {
        fast_sin(x)
    }
    #[inline]
    fn cos<S: Sample>(x: S) -> S {
        fast_sin(x + S::from_f64(PI / 2.0))
    }
    #[inline]
    fn tanh<S: Sample>(x: S) -> S {
        fast_tanh(x)
    }
    #[inline]
    fn exp<S: Sample>(x: S) -> S {
        fast_exp(x)
    }
    fn coef_sin(x: f64) -> f64 {
        x.sin()
    }
    fn coef_cos(x: f64) -> f64 {
        x.cos()
    }
    fn coef_tan(x: f64) -> f64 {
        x.tan()
    }
    fn coef_exp(x: f64) -> f64 {
        x.exp()
    }
    fn coef_pow(x: f64, y: f64) -> f64 {
        x.powf(y)
    }
    fn coef_ln(x: f64) -> f64 {
        x.ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_sin_and_cos_within_documented_error() {
        let mut worst = 0.0f64;
        for i in -20000..=20000 {
            let x = i as f64 * 0.001;
            worst = worst.max((FastMath::sin(x) - libm::sin(x)).abs());
            worst = worst.max((FastMath::cos(x) - libm::cos(x)).abs());
            let xf = x as f32;
            worst = worst.max((FastMath::sin(xf) as f64 - libm::sin(xf as f64)).abs());
        }
        // Measured 3.6e-6 (the polynomial's own error); the profile allows
        // 1e-4. Asserted with a 40 % margin so a worse polynomial fails.
        assert!(worst <= 5e-6, "worst error {worst}");
    }

    #[test]
    fn fast_tanh_and_exp_within_documented_error() {
        let mut worst = 0.0f64;
        for i in -10000..=10000 {
            let x = i as f64 * 0.002;
            worst = worst.max((FastMath::tanh(x) - libm::tanh(x)).abs());
            let rel = (FastMath::exp(x) - libm::exp(x)).abs() / libm::exp(x);
            worst = worst.max(rel);
        }
        // Measured 8.3e-6; the profile allows 1e-4.
        assert!(worst <= 1.2e-5, "worst error {worst}");
    }

    #[test]
    fn fast_log2_within_documented_error_of_libm() {
        let mut worst = 0.0f64;
        // Geometric steps from 1e-30 to 1e30, plus random mantissas.
        let mut x = 1e-30f64;
        while x < 1e30 {
            worst = worst.max((fast_log2(x) - libm::log2(x)).abs());
            x *= 1.000_37;
        }
        let mut z = 3u64;
        for _ in 0..200_000 {
            z = crate::dsp::rng::mix64(z);
            let x = f64::from_bits((z >> 12) | (((z & 0xff) + 920) << 52));
            worst = worst.max((fast_log2(x) - libm::log2(x)).abs());
        }
        for x in [
            1.0,
            2.0,
            0.5,
            core::f64::consts::SQRT_2,
            f64::MIN_POSITIVE,
            f64::MAX,
        ] {
            worst = worst.max((fast_log2(x) - libm::log2(x)).abs());
        }
        eprintln!("fast_log2: worst absolute error {worst:e}");
        assert!(worst <= 2e-9, "worst error {worst:e}");
        assert!(fast_log2(0.0) < -1000.0);
    }

    #[test]
    fn fast_exp2_within_documented_error_of_libm() {
        let mut worst = 0.0f64;
        for i in -1_022_000..=1_023_000 {
            let x = i as f64 * 0.001 + 0.000_37;
            let exact = libm::exp2(x);
            worst = worst.max((fast_exp2(x) - exact).abs() / exact);
        }
        for x in [-1022.0, 1023.0, 0.0, 0.5, -0.5, 1.5, -2.5] {
            let exact = libm::exp2(x);
            worst = worst.max((fast_exp2(x) - exact).abs() / exact);
        }
        eprintln!("fast_exp2: worst relative error {worst:e}");
        assert!(worst <= 1e-8, "worst error {worst:e}");
    }

    #[test]
    fn floor_no_call_is_floor() {
        let mut z = 1u64;
        for _ in 0..100_000 {
            z = crate::dsp::rng::mix64(z);
            let x = f64::from_bits(z);
            if x.is_finite() {
                assert_eq!(floor_no_call(x), libm::floor(x), "{x:e}");
                let y = (z >> 11) as f64 / 1024.0 - 4e12;
                assert_eq!(floor_no_call(y), libm::floor(y), "{y}");
            }
        }
        for x in [
            0.5,
            -0.5,
            -1.0,
            1.0,
            -1e-300,
            4503599627370495.5,
            -4503599627370495.5,
        ] {
            assert_eq!(floor_no_call(x), libm::floor(x), "{x:e}");
        }
    }

    #[test]
    fn strict_math_is_libm() {
        for x in [0.1f64, 1.0, 3.0, -2.5] {
            assert_eq!(StrictMath::sin(x).to_bits(), libm::sin(x).to_bits());
            assert_eq!(
                StrictMath::tanh(x as f32).to_bits(),
                libm::tanhf(x as f32).to_bits()
            );
        }
    }
}
