//! The one bound for sample genericity: [`Sample`], implemented for `f32` and `f64`.

use super::fft::{FftNorm, RealFft, RustRealFft};
use std::fmt::Debug;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// The numeric precision a node runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Precision {
    /// IEEE-754 single precision (`f32`).
    F32,
    /// IEEE-754 double precision (`f64`): the strict profile's.
    F64,
}

impl Precision {
    /// The name used in scenes and reports (`"f32"`, `"f64"`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }

    /// Parses `"f32"` / `"f64"`.
    pub fn parse(s: &str) -> Option<Precision> {
        match s {
            "f32" => Some(Precision::F32),
            "f64" => Some(Precision::F64),
            _ => None,
        }
    }
}

/// A sample type. Only `+ − × ÷ sqrt` are exposed as arithmetic here: anything
/// transcendental goes through a math policy (`dsp::math`), so that strict
/// paths cannot reach a `std` transcendental by accident.
pub trait Sample:
    Copy
    + Default
    + Debug
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
{
    /// The precision this type is.
    const PRECISION: Precision;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The smallest positive normal number; below it lie the subnormals.
    const MIN_POSITIVE: Self;

    /// Rounds to nearest (f64 → f32) or is exact (f64 → f64).
    fn from_f64(v: f64) -> Self;
    /// Exact.
    fn to_f64(self) -> f64;
    /// Exact.
    fn from_f32(v: f32) -> Self;
    /// Rounds to nearest (f64) or is exact (f32).
    fn to_f32(self) -> f32;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// The absolute value (exact).
    fn abs(self) -> Self;
    /// IEEE-754 correctly rounded square root (allowed on strict paths).
    fn sqrt(self) -> Self;
    /// The largest integer not above it (exact).
    fn floor(self) -> Self;
    /// The locked Philox word → sample mapping of [`crate::dsp::rng`] (exact):
    /// f64 `u * 2^-31 - 1`, f32 `(u >> 8) * 2^-23 - 1`.
    fn from_noise_word(u: u32) -> Self;
    /// A u64 fixed-point phase (fraction of a cycle) as a value in [0, 1),
    /// truncated to the precision's mantissa (exact).
    fn from_phase(phase: u64) -> Self;
    /// Raw bits for hashing and goldens, little-endian.
    fn write_le(self, out: &mut Vec<u8>);
    /// Bit pattern as u64 (f32 bits zero-extended).
    fn to_bits_u64(self) -> u64;
    /// The inverse of [`Sample::to_bits_u64`] (f32 takes the low 32 bits).
    fn from_bits_u64(bits: u64) -> Self;
    /// A bound `t ≥ 0` such that `self + p` is `self`, bit for bit, under
    /// round-to-nearest for every `p` with `|p| < t`: adding such a `p` is
    /// provably absorbed by the rounding and may be skipped. `t` is
    ///
    /// - `2^(E−M−2)` for a normal `self` with `2^E ≤ |self| < 2^(E+1)` and
    ///   `M` mantissa bits, when that is a normal number: the representable
    ///   neighbours of `self` are at least `2^(E−M−1)` away (the smaller gap
    ///   is the one below a power of two), so `|p| < 2^(E−M−2)` leaves
    ///   `self + p` strictly nearer to `self` than to either neighbour — no
    ///   tie can arise;
    /// - the smallest subnormal for `+0` and for small or subnormal `self`:
    ///   `|p| <` it means `p = ±0`, and `self + (±0) = self` for nonzero
    ///   `self`, `+0 + (±0) = +0`;
    /// - `0` (nothing may be skipped) for `−0` (`−0 + (+0)` is `+0`), and
    ///   for an infinite or NaN `self`.
    fn absorb_bound(self) -> Self;
    /// Plans a rustfft/realfft transform at this precision.
    fn plan_rustfft(n: usize, norm: FftNorm) -> Box<dyn RealFft<Self>>;

    /// The nearest value to `v` (through f64).
    #[inline]
    fn from_usize(v: usize) -> Self {
        Self::from_f64(v as f64)
    }
    /// The larger of the two; `other` when they compare unordered (NaN).
    #[inline]
    fn max(self, other: Self) -> Self {
        if self > other {
            self
        } else {
            other
        }
    }
    /// The smaller of the two; `other` when they compare unordered (NaN).
    #[inline]
    fn min(self, other: Self) -> Self {
        if self < other {
            self
        } else {
            other
        }
    }
    /// Limited to `lo…hi` (`lo` ≤ `hi`): `max(lo)`, then `min(hi)`.
    #[inline]
    fn clamp(self, lo: Self, hi: Self) -> Self {
        self.max(lo).min(hi)
    }
}

impl Sample for f64 {
    const PRECISION: Precision = Precision::F64;
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const MIN_POSITIVE: f64 = f64::MIN_POSITIVE;

    #[inline]
    fn from_f64(v: f64) -> f64 {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_f32(v: f32) -> f64 {
        v as f64
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    #[inline]
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    #[inline]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    #[inline]
    fn floor(self) -> f64 {
        f64::floor(self)
    }
    #[inline]
    fn from_noise_word(u: u32) -> f64 {
        // u·2^-31 − 1 = (u − 2^31)·2^-31, both exact: the same f64, through
        // the signed 32-bit conversion the vector units have.
        ((u ^ 0x8000_0000) as i32) as f64 * (1.0 / 2147483648.0)
    }
    #[inline]
    fn from_phase(phase: u64) -> f64 {
        (phase >> 11) as f64 * (1.0 / 9007199254740992.0)
    }
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    #[inline]
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
    #[inline]
    fn from_bits_u64(bits: u64) -> f64 {
        f64::from_bits(bits)
    }
    #[inline]
    fn absorb_bound(self) -> f64 {
        f64::from_bits(absorb_bound_bits(self.to_bits(), 52, 11))
    }
    fn plan_rustfft(n: usize, norm: FftNorm) -> Box<dyn RealFft<f64>> {
        Box::new(RustRealFft::<f64>::new(n, norm))
    }
}

impl Sample for f32 {
    const PRECISION: Precision = Precision::F32;
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const MIN_POSITIVE: f32 = f32::MIN_POSITIVE;

    #[inline]
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn from_f32(v: f32) -> f32 {
        v
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    #[inline]
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline]
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    #[inline]
    fn floor(self) -> f32 {
        f32::floor(self)
    }
    #[inline]
    fn from_noise_word(u: u32) -> f32 {
        // u >> 8 < 2^24 converts exactly either way; the signed conversion
        // is the one the vector units have.
        ((u >> 8) as i32) as f32 * (1.0 / 8388608.0) - 1.0
    }
    #[inline]
    fn from_phase(phase: u64) -> f32 {
        (phase >> 40) as f32 * (1.0 / 16777216.0)
    }
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    #[inline]
    fn to_bits_u64(self) -> u64 {
        self.to_bits() as u64
    }
    #[inline]
    fn from_bits_u64(bits: u64) -> f32 {
        f32::from_bits(bits as u32)
    }
    #[inline]
    fn absorb_bound(self) -> f32 {
        f32::from_bits(absorb_bound_bits(self.to_bits() as u64, 23, 8) as u32)
    }
    fn plan_rustfft(n: usize, norm: FftNorm) -> Box<dyn RealFft<f32>> {
        Box::new(RustRealFft::<f32>::new(n, norm))
    }
}

/// [`Sample::absorb_bound`] on the bits of an IEEE binary format with
/// `mant` mantissa bits and `exp` exponent bits.
#[inline]
fn absorb_bound_bits(bits: u64, mant: u32, exp: u32) -> u64 {
    let sign = 1u64 << (mant + exp);
    let emax = (1u64 << exp) - 1;
    let smallest_subnormal = 1u64;
    if bits & !sign == 0 {
        // +0 absorbs exact zeros only; −0 absorbs nothing.
        return if bits == 0 { smallest_subnormal } else { 0 };
    }
    let e = (bits >> mant) & emax;
    if e == emax {
        return 0;
    }
    // 2^(E−M−2) with the biased exponent e − (M + 2), while it is ≥ 1 (normal).
    let shift = u64::from(mant) + 2;
    if e > shift {
        (e - shift) << mant
    } else {
        smallest_subnormal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_mapping_is_in_range_and_exact() {
        assert_eq!(f64::from_noise_word(0), -1.0);
        assert_eq!(f64::from_noise_word(u32::MAX), 1.0 - 1.0 / 2147483648.0);
        assert_eq!(f32::from_noise_word(0), -1.0);
        assert_eq!(f32::from_noise_word(u32::MAX), 1.0 - 1.0 / 8388608.0);
        assert_eq!(f64::from_noise_word(1 << 31), 0.0);
    }

    /// The mapping as `scenes/README.md` (*Randomness*) writes it, word for
    /// word over a spread of words and the edges.
    #[test]
    fn noise_mapping_is_the_design_formula() {
        let check = |u: u32| {
            let f64_design = u as f64 * (1.0 / 2147483648.0) - 1.0;
            let f32_design = (u >> 8) as f32 * (1.0 / 8388608.0) - 1.0;
            assert_eq!(
                f64::from_noise_word(u).to_bits(),
                f64_design.to_bits(),
                "{u:#x}"
            );
            assert_eq!(
                f32::from_noise_word(u).to_bits(),
                f32_design.to_bits(),
                "{u:#x}"
            );
        };
        for u in (0..=u32::MAX).step_by(65521) {
            check(u);
        }
        for u in [
            0,
            1,
            255,
            256,
            0x7fff_ffff,
            0x8000_0000,
            0x8000_0001,
            u32::MAX - 1,
            u32::MAX,
        ] {
            check(u);
        }
    }

    #[test]
    fn phase_is_a_fraction_of_a_cycle() {
        assert_eq!(f64::from_phase(0), 0.0);
        assert_eq!(f64::from_phase(1 << 63), 0.5);
        assert_eq!(f32::from_phase(1 << 62), 0.25);
        assert!(f64::from_phase(u64::MAX) < 1.0);
        assert!(f32::from_phase(u64::MAX) < 1.0);
    }

    /// `absorb_bound` is safe (every smaller addend leaves the value's bits
    /// unchanged) and tight to a factor of two (an addend of twice the bound
    /// changes an odd-mantissa value, and a power of two from below).
    #[test]
    fn absorb_bound_is_exact_and_tight() {
        fn check<S: Sample>(a: S, label: &str) {
            let t = a.absorb_bound();
            let tb = t.to_bits_u64();
            if tb == 0 {
                return;
            }
            // The largest addends below the bound, both signs, and a few smaller.
            let below = S::from_bits_u64(tb - 1);
            for p in [
                below,
                below * S::from_f64(0.5),
                S::from_bits_u64(1),
                S::ZERO,
            ] {
                let below_bound = p < t;
                if !below_bound {
                    continue;
                }
                for p in [p, -p] {
                    assert_eq!(
                        (a + p).to_bits_u64(),
                        a.to_bits_u64(),
                        "{label}: {a:?} + {p:?} (bound {t:?})"
                    );
                }
            }
            let two = t + t;
            let m = a.to_bits_u64();
            let normal_enough = tb > 1;
            if normal_enough && m & 1 == 1 {
                assert_ne!((a + two).to_bits_u64(), m, "{label}: {a:?} + 2·bound");
            }
        }
        let mut z = 12345u64;
        let mut next = || {
            z = rand_philox::splitmix64(z);
            z
        };
        let specials64 = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.75,
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE * 2.0,
            f64::MIN_POSITIVE * 18014398509481984.0,
            f64::from_bits(1),
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        for a in specials64 {
            check(a, "f64 special");
        }
        for a in [
            0.0f32,
            -0.0,
            1.0,
            f32::MIN_POSITIVE * 1073741824.0,
            f32::MAX,
        ] {
            check(a, "f32 special");
        }
        for _ in 0..20000 {
            let b = next();
            check(f64::from_bits(b), "f64");
            check(f32::from_bits(b as u32), "f32");
            // Powers of two: the gap below is half the gap above.
            let p2 = f64::from_bits(b & 0xfff0_0000_0000_0000);
            check(p2, "f64 power of two");
            let t = p2.absorb_bound();
            if p2.is_finite() && t.to_bits() > 1 {
                assert_ne!((p2.abs() - (t + t)).to_bits(), p2.abs().to_bits());
            }
        }
        // Zeros: +0 absorbs only exact zeros, −0 nothing, infinities and NaN nothing.
        assert_eq!(0.0f64.absorb_bound().to_bits(), 1);
        assert_eq!((-0.0f64).absorb_bound(), 0.0);
        assert_eq!(f64::INFINITY.absorb_bound(), 0.0);
        assert_eq!(f64::NAN.absorb_bound(), 0.0);
        assert_eq!(1.0f64.absorb_bound(), 1.0 / 18014398509481984.0);
        assert_eq!(1.0f32.absorb_bound(), 1.0 / 33554432.0);
    }
}
