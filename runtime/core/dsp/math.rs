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
