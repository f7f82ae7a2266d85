//! Block kernels written to vectorise, and the CPU-feature dispatch that
//! picks a wider instruction set for them at run time.
//!
//! Each kernel is one plain loop over the block with no per-sample branch or
//! call, computed in lanes of a fixed width ([`LANES`]) whatever the
//! instruction set; every lane does the same operations in the same order
//! (no FMA: Rust never contracts `a * b + c`), so the output is the same bits
//! on every [`SimdLevel`] and never depends on the vector width. The level is
//! chosen once, when a node is built.

use super::sample::Sample;

/// Samples a kernel computes side by side.
pub const LANES: usize = 8;

/// The instruction set a kernel runs with, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimdLevel {
    /// The build's own target (SSE2 on a default x86-64 build).
    Base,
    /// x86-64 with AVX2, detected at run time.
    Avx2,
    /// x86-64 with AVX-512F as well as AVX2, detected at run time. A kernel
    /// without an AVX-512 form runs its AVX2 one ([`has_avx2`](Self::has_avx2)).
    Avx512,
}

impl SimdLevel {
    /// The widest level this CPU runs. Call it while building a node, not per
    /// block (the first call asks the CPU).
    pub fn detect() -> SimdLevel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    return SimdLevel::Avx512;
                }
                return SimdLevel::Avx2;
            }
        }
        SimdLevel::Base
    }

    /// Whether this level runs AVX2 code (`Avx2` and `Avx512`).
    pub fn has_avx2(self) -> bool {
        self >= SimdLevel::Avx2
    }

    /// Every level this CPU runs, narrowest first (for tests and benchmarks
    /// that compare them).
    pub fn available() -> impl Iterator<Item = SimdLevel> {
        let top = SimdLevel::detect();
        [SimdLevel::Base, SimdLevel::Avx2, SimdLevel::Avx512]
            .into_iter()
            .filter(move |l| *l <= top)
    }
}

/// 2π, and the odd Taylor coefficients of sin(2π·v) in powers of v.
const TAU: f64 = 2.0 * core::f64::consts::PI;
const K1: f32 = TAU as f32;
const K3: f32 = (-TAU * TAU * TAU / 6.0) as f32;
const K5: f32 = (TAU * TAU * TAU * TAU * TAU / 120.0) as f32;
const K7: f32 = (-TAU * TAU * TAU * TAU * TAU * TAU * TAU / 5040.0) as f32;
const K9: f32 = (TAU * TAU * TAU * TAU * TAU * TAU * TAU * TAU * TAU / 362880.0) as f32;

/// sin(2π·t) for t in [0, 1), without a call or a branch: reflect t to
/// v ∈ [-¼, ¼] (exactly: t has at most 24 significant bits), then an odd
/// polynomial to v⁹ (absolute error ≤ 4e-6; live's fast math, see
/// [`crate::dsp::math`], allows 1e-4).
#[inline(always)]
pub fn sin_turns(t: f32) -> f32 {
    // sin(2πt) = sin(π − 2πt) = sin(2πw), w ∈ (−½, ½].
    let w = 0.5 - t;
    // sin(2πw) = sin(2π(±½ − w)): fold |w| > ¼ into [−¼, ¼].
    let half = if w < 0.0 { -0.5 } else { 0.5 };
    let v = if w.abs() > 0.25 { half - w } else { w };
    let v2 = v * v;
    v * (K1 + v2 * (K3 + v2 * (K5 + v2 * (K7 + v2 * K9))))
}

/// A u64 fixed-point phase as a fraction of a cycle in [0, 1): its top 24
/// bits, exact in f32 (the same value as `f32::from_phase`, through a 32-bit
/// conversion the vector units have).
#[inline(always)]
pub fn phase_turns(phase: u64) -> f32 {
    ((phase >> 40) as u32 as i32) as f32 * (1.0 / 16777216.0)
}

/// A phase offset in turns (any finite number; NaN counts as 0) as a u64
/// fixed-point fraction of a cycle, to 2^-32 of a cycle. No call, no branch.
#[inline]
pub fn turns_to_phase(turns: f64) -> u64 {
    let whole = turns as i64;
    let frac = turns - whole as f64;
    ((frac * 4294967296.0) as i64 as u64) << 32
}

/// `out[i] = amp · sin(2π · phase_i)` with `phase_i = phase + i·inc`
/// (wrapping): the live `sine` kernel. Each sample's phase is computed from
/// `i` alone, in 32-bit halves the vector units multiply (`top` is exactly
/// the upper half of `phase + i·inc`), so there is no carried dependency.
#[inline(always)]
fn sine_block_lanes<S: Sample>(phase: u64, inc: u64, amp: S, out: &mut [S]) {
    let (h0, l0) = ((phase >> 32) as u32, phase as u32 as u64);
    let (hi, li) = ((inc >> 32) as u32, inc as u32 as u64);
    for (i, o) in out.iter_mut().enumerate() {
        let k = i as u32;
        let carry = ((l0 + k as u64 * li) >> 32) as u32;
        let top = h0.wrapping_add(k.wrapping_mul(hi)).wrapping_add(carry);
        let t = ((top >> 8) as i32) as f32 * (1.0 / 16777216.0);
        *o = amp * S::from_f32(sin_turns(t));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sine_block_avx2<S: Sample>(phase: u64, inc: u64, amp: S, out: &mut [S]) {
    sine_block_lanes(phase, inc, amp, out)
}

/// `out[i] = amp · sin(2π · (phase + i·inc))`, the phase a u64 fraction of a
/// cycle, through [`sin_turns`]. The same bits at every level.
pub fn sine_block<S: Sample>(level: SimdLevel, phase: u64, inc: u64, amp: S, out: &mut [S]) {
    #[cfg(target_arch = "x86_64")]
    if level.has_avx2() {
        // SAFETY: `Avx2` and `Avx512` come only from `detect`, which saw AVX2.
        return unsafe { sine_block_avx2(phase, inc, amp, out) };
    }
    let _ = level;
    sine_block_lanes(phase, inc, amp, out)
}

/// Whether every sample is finite: `x · 0` is ±0 for a finite `x` and NaN
/// otherwise, summed in [`LANES`] lanes (one plain vector loop, no branch).
#[inline]
pub fn all_finite<S: Sample>(x: &[S]) -> bool {
    let mut acc = [S::ZERO; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += *v * S::ZERO;
        }
    }
    let mut sum = S::ZERO;
    for v in chunks.remainder() {
        sum += *v * S::ZERO;
    }
    sum == S::ZERO && acc.iter().all(|a| *a == S::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast sine against libm's sin over 2^20 phases spread over the
    /// cycle, including the fold points: within the 1e-4 live's fast math
    /// allows, and within the polynomial's own 4e-6.
    #[test]
    fn sin_turns_within_documented_error_of_libm() {
        let mut worst = 0.0f64;
        let mut check = |t: f32| {
            let want = libm::sin(TAU * t as f64);
            worst = worst.max((sin_turns(t) as f64 - want).abs());
        };
        for i in 0..(1u32 << 20) {
            check(i as f32 / (1u32 << 20) as f32);
        }
        for t in [0.0f32, 0.25, 0.5, 0.75, 1.0 - 1.0 / 16777216.0] {
            check(t);
            check((t - 1.0 / 16777216.0).max(0.0));
        }
        assert!(worst <= 4e-6, "worst error {worst}");
    }

    #[test]
    fn phase_turns_is_the_f32_phase_mapping() {
        let mut p = 0x0123_4567_89ab_cdefu64;
        for _ in 0..100_000 {
            p = crate::dsp::rng::mix64(p);
            assert_eq!(phase_turns(p), <f32 as Sample>::from_phase(p));
        }
        assert_eq!(phase_turns(u64::MAX), <f32 as Sample>::from_phase(u64::MAX));
    }

    #[test]
    fn turns_to_phase_wraps_whole_cycles() {
        assert_eq!(turns_to_phase(0.0), 0);
        assert_eq!(turns_to_phase(0.25), 1 << 62);
        assert_eq!(turns_to_phase(3.5), 1 << 63);
        assert_eq!(turns_to_phase(-0.25), 3 << 62);
        assert_eq!(turns_to_phase(f64::NAN), 0);
    }

    /// The block kernel is the scalar formula sample by sample, at every
    /// level this CPU has and any block length (remainder lanes included).
    #[test]
    fn sine_block_equals_scalar_formula_at_every_level() {
        let mut z = 5u64;
        for _ in 0..200 {
            z = crate::dsp::rng::mix64(z);
            let inc = z;
            z = crate::dsp::rng::mix64(z);
            let phase = if z % 3 == 0 {
                u64::MAX.wrapping_sub(inc.wrapping_mul(5))
            } else {
                z
            };
            let len = (z >> 40) as usize % 300;
            let want: Vec<f32> = (0..len as u64)
                .map(|i| 0.5 * sin_turns(phase_turns(phase.wrapping_add(inc.wrapping_mul(i)))))
                .collect();
            for level in [SimdLevel::Base, SimdLevel::detect()] {
                let mut got = vec![f32::NAN; len];
                sine_block(level, phase, inc, 0.5f32, &mut got);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "len {len}, {level:?}");
            }
        }
    }

    #[test]
    fn all_finite_finds_any_nan_or_infinity() {
        let mut x = vec![0.5f32; 67];
        x[3] = f32::MAX;
        x[4] = -f32::MAX;
        x[5] = f32::MIN_POSITIVE / 2.0;
        assert!(all_finite(&x));
        for (i, bad) in [
            (0, f32::NAN),
            (66, f32::INFINITY),
            (31, f32::NEG_INFINITY),
            (64, -f32::NAN),
        ] {
            x[i] = bad;
            assert!(!all_finite(&x), "{bad} at {i}");
            x[i] = 0.5;
        }
    }
}
