//! `libm::exp` and `libm::log` (libm 0.2.16, ports of FreeBSD's `e_exp.c`
//! and musl's `log.c`) on [`LANES`] f64 arguments side by side, bit for
//! bit.
//!
//! A strict compressor spends most of its time in one `log` and one `exp`
//! per sample (the level in dB, the gain back to linear). Here the same
//! IEEE operations, in the same order, run on eight arguments at once, as
//! [`super::strict_sin`] does for `sin`: every lane computes its result
//! without a branch (the candidates of a branch are computed and one is
//! selected bit for bit), only `+ − × ÷` (Rust never contracts `a * b + c`
//! and no FMA is enabled), so the loops vectorise. A lane outside the
//! ported range is marked, and its caller recomputes it with the libm
//! function itself:
//!
//! - `exp`: |x| ≥ 708.39 (overflow, underflow, the subnormal results),
//!   ±∞ and NaN; the rest — argument reduction by k·ln 2 in two parts,
//!   the rational approximation, the scaling by 2^k (one multiply, as
//!   `scalbn` does for every k this range gives) and `1 + x` for
//!   |x| ≤ 2^−28 — is ported;
//! - `log`: 0, subnormals, negative numbers, ±∞ and NaN; every positive
//!   normal number is ported.
//!
//! Tests compare both kernels with the libm functions on millions of
//! arguments across their ranges and on the edges of each branch.

#![allow(clippy::excessive_precision, clippy::approx_constant)] // libm's literals, copied verbatim

/// Arguments computed side by side.
pub(crate) const LANES: usize = 8;

// exp.rs
const LN2HI: f64 = 6.93147180369123816490e-01;
const LN2LO: f64 = 1.90821492927058770002e-10;
const INVLN2: f64 = 1.44269504088896338700e+00;
const P1: f64 = 1.66666666666666019037e-01;
const P2: f64 = -2.77777777770155933842e-03;
const P3: f64 = 6.61375632143793436117e-05;
const P4: f64 = -1.65339022054652515390e-06;
const P5: f64 = 4.13813679705723846039e-08;
// log.rs
const LN2_HI: f64 = 6.93147180369123816490e-01;
const LN2_LO: f64 = 1.90821492927058770002e-10;
const LG1: f64 = 6.666666666666735130e-01;
const LG2: f64 = 3.999999999940941908e-01;
const LG3: f64 = 2.857142874366239149e-01;
const LG4: f64 = 2.222219843214978396e-01;
const LG5: f64 = 1.818357216161805012e-01;
const LG6: f64 = 1.531383769920937332e-01;
const LG7: f64 = 1.479819860511658591e-01;

/// `a` where `c`, else `b`, bit for bit (a blend once vectorised).
#[inline(always)]
fn pick(c: bool, a: f64, b: f64) -> f64 {
    let m = (c as u64).wrapping_neg();
    f64::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
}

/// `libm::exp` of each lane, and a mask of the lanes outside the ported
/// range (bit `i` for lane `i`), whose value means nothing.
#[inline(always)]
pub(crate) fn exp_lanes(x: &[f64; LANES]) -> ([f64; LANES], u32) {
    let mut y = [0.0f64; LANES];
    let mut outside = 0u32;
    for i in 0..LANES {
        let bits = x[i].to_bits();
        let hx = ((bits >> 32) as u32) & 0x7fff_ffff;
        let negative = bits >> 63 != 0;
        // |x| < 708.39…: no overflow, no underflow (and not ∞ or NaN).
        let ported = hx < 0x4086_232b;
        outside |= (!ported as u32) << i;
        let xs = pick(ported, x[i], 0.0);
        // |x| > 0.5·ln 2 is reduced by k·ln 2 (k from the rounded
        // quotient for |x| ≥ 1.5·ln 2, else ±1); below, k = 0, which
        // the same operations give exactly (x − 0·LN2HI = x, lo = 0).
        let t = INVLN2 * xs + pick(negative, -0.5, 0.5);
        // SAFETY: |t| < 1023 for a ported lane, and 0.5 for the others.
        let quotient = unsafe { t.to_int_unchecked::<i32>() };
        let one = 1 - 2 * negative as i32;
        let k = if hx > 0x3fd6_2e42 {
            if hx >= 0x3ff0_a2b2 {
                quotient
            } else {
                one
            }
        } else {
            0
        };
        let kf = k as f64;
        let hi = xs - kf * LN2HI;
        let lo = kf * LN2LO;
        let r = hi - lo;
        let xx = r * r;
        let c = r - xx * (P1 + xx * (P2 + xx * (P3 + xx * (P4 + xx * P5))));
        let e = 1. + (r * c / (2. - c) - lo + hi);
        // scalbn(e, k): one multiply by 2^k for −1022 ≤ k ≤ 1023 (and
        // k = 0 multiplies by 1).
        let scaled = e * f64::from_bits(((0x3ff + k) as u64) << 52);
        // |x| ≤ 2^−28: 1 + x.
        y[i] = pick(hx <= 0x3e30_0000, 1. + xs, scaled);
    }
    (y, outside)
}

/// `libm::log` of each lane, and a mask of the lanes outside the ported
/// range (bit `i` for lane `i`), whose value means nothing.
#[inline(always)]
pub(crate) fn log_lanes(x: &[f64; LANES]) -> ([f64; LANES], u32) {
    let mut y = [0.0f64; LANES];
    let mut outside = 0u32;
    for i in 0..LANES {
        let hx = (x[i].to_bits() >> 32) as u32;
        // A positive normal number (the sign bit is bit 31 of `hx`).
        let ported = (0x0010_0000..0x7ff0_0000).contains(&hx);
        outside |= (!ported as u32) << i;
        let ui = pick(ported, x[i], 2.0).to_bits();
        // Reduce x into [√2/2, √2]: x = 2^k·(1 + f).
        let hx = ((ui >> 32) as u32) + (0x3ff0_0000 - 0x3fe6_a09e);
        let k = (hx >> 20) as i32 - 0x3ff;
        let hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
        let xr = f64::from_bits(((hx as u64) << 32) | (ui & 0xffff_ffff));
        let f = xr - 1.0;
        let hfsq = 0.5 * f * f;
        let s = f / (2.0 + f);
        let z = s * s;
        let w = z * z;
        let t1 = w * (LG2 + w * (LG4 + w * LG6));
        let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
        let r = t2 + t1;
        let dk = k as f64;
        y[i] = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
    }
    (y, outside)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64: the test's arguments, the same in every run.
    struct Draw(u64);

    impl Draw {
        fn bits(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        /// Uniform in `lo..hi`.
        fn within(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * ((self.bits() >> 11) as f64 / (1u64 << 53) as f64)
        }
    }

    fn check(
        f: fn(&[f64; LANES]) -> ([f64; LANES], u32),
        reference: fn(f64) -> f64,
        xs: &[f64],
    ) -> usize {
        let mut ported = 0;
        for chunk in xs.chunks(LANES) {
            let mut a = [1.5f64; LANES];
            a[..chunk.len()].copy_from_slice(chunk);
            let (y, outside) = f(&a);
            for i in 0..chunk.len() {
                if outside >> i & 1 == 0 {
                    ported += 1;
                    assert_eq!(
                        y[i].to_bits(),
                        reference(a[i]).to_bits(),
                        "at {:e} ({:#x}): {:e} against {:e}",
                        a[i],
                        a[i].to_bits(),
                        y[i],
                        reference(a[i])
                    );
                }
            }
        }
        ported
    }

    /// Every f64 near `x`: `x` and the `n` on each side of it.
    fn around(x: f64, n: i64) -> impl Iterator<Item = f64> {
        (-n..=n).map(move |d| f64::from_bits((x.to_bits() as i64 + d) as u64))
    }

    #[test]
    fn exp_lanes_give_libm_s_bits_over_its_range_and_mark_the_rest() {
        let mut draw = Draw(7);
        // Uniform over the ported range, and over each scale of |x| from
        // 2^−40 to 2^9 with both signs.
        let mut xs: Vec<f64> = (0..1_000_000)
            .map(|_| draw.within(-708.39, 708.39))
            .collect();
        xs.extend((0..1_000_000).map(|_| {
            let bits = draw.bits();
            let m = 1.0 + (bits >> 12) as f64 / (1u64 << 52) as f64;
            let e = (bits % 50) as i32 - 40;
            let s = if bits & 1 << 11 != 0 { -1.0 } else { 1.0 };
            s * m * libm::exp2(e as f64)
        }));
        // The edges of every branch: |x| ≤ 2^−28, 0.5·ln 2, 1.5·ln 2,
        // the limits, and the gain curve's dB range.
        for edge in [
            f64::from_bits(0x3e30_0000_0000_0000),
            f64::from_bits(0x3fd6_2e42_0000_0000),
            f64::from_bits(0x3fd6_2e43_0000_0000),
            f64::from_bits(0x3ff0_a2b2_0000_0000),
            f64::from_bits(0x4086_232a_ffff_ffff),
            0.5 * core::f64::consts::LN_2,
            1.5 * core::f64::consts::LN_2,
            1.0,
            -1.0,
            -6.9,
        ] {
            xs.extend(around(edge, 1000));
            xs.extend(around(-edge, 1000));
        }
        xs.extend([0.0, -0.0, f64::MIN_POSITIVE, -f64::MIN_POSITIVE, 5e-324]);
        let ported = check(exp_lanes, libm::exp, &xs);
        // libm's first test: a high word of |x| under 0x4086232b (708.39…).
        let limit = f64::from_bits(0x4086_232b_0000_0000);
        let within = xs.iter().filter(|x| x.abs() < limit).count();
        assert_eq!(ported, within, "every |x| under 708.39… is ported");
        // Outside: overflow, underflow, ∞, NaN.
        let (_, outside) = exp_lanes(&[
            709.0,
            -709.0,
            708.4,
            -745.2,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e300,
        ]);
        assert_eq!(outside, 0xff);
    }

    #[test]
    fn log_lanes_give_libm_s_bits_for_every_positive_normal_number() {
        let mut draw = Draw(8);
        // Every binade, uniform within it.
        let (lo, hi) = (0x0010_0000_0000_0000u64, 0x7ff0_0000_0000_0000u64);
        let mut xs: Vec<f64> = (0..2_000_000)
            .map(|_| f64::from_bits(lo + draw.bits() % (hi - lo)))
            .collect();
        // Levels a compressor detects, around 1 (where the reduction
        // changes k) and √2/2, √2.
        xs.extend((0..1_000_000).map(|_| draw.within(1e-6, 4.0)));
        for edge in [
            1.0,
            core::f64::consts::FRAC_1_SQRT_2,
            core::f64::consts::SQRT_2,
            f64::MIN_POSITIVE,
            f64::MAX,
            0.5,
            2.0,
        ] {
            xs.extend(around(edge, 1000).filter(|x| x.is_normal() && *x > 0.0));
        }
        let ported = check(log_lanes, libm::log, &xs);
        assert_eq!(ported, xs.len());
        let (_, outside) = log_lanes(&[
            0.0,
            -0.0,
            5e-324,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE / 2.0,
        ]);
        assert_eq!(outside, 0xff);
    }
}
