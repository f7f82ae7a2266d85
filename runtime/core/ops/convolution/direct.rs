//! The strict engine's direct convolution: every output summed in tap order
//! from a contiguous input history, `W` neighbouring outputs at a time (AVX2
//! when the CPU has it), skipping spans of taps that provably change no bit
//! ([`skippable`]).

use crate::dsp::Sample;

/// Taps, and history samples, per span of the strict engine's skip test.
pub(super) const SPAN: usize = 64;

/// Magnitude bounds that let the direct kernel skip spans of taps exactly
/// (strict engine only; see [`skippable`]).
#[derive(Clone, Copy)]
pub(super) struct Bounds<'a, S> {
    /// Largest `|h[k]|` over taps `[c·SPAN, (c+1)·SPAN)`, per span `c`.
    pub(super) h: &'a [S],
    /// Largest `|x[i]|` over history `[b·SPAN, (b+1)·SPAN)` as magnitude bits
    /// (`abs().to_bits_u64()`; a NaN is above every number), per block `b`.
    pub(super) x: &'a [u64],
}

/// Whether adding the products of one tap span to every accumulator of a
/// `W`-output group provably leaves each accumulator's bits unchanged, so
/// the span can be skipped without changing any output bit. `hmax` bounds
/// `|h|` over the span and `[lo, hi]` are the history indices it reads.
///
/// Each output is `acc = ((+0 + h0·x0) + h1·x1) + …` in tap order, in IEEE
/// round-to-nearest arithmetic (no FMA), and a skipped term must be exactly
/// a no-op for the `acc` of the moment:
///
/// 1. **Bound without the product.** `p = fl(H·X)` with `H ≥ |h|`, `X ≥ |x|`
///    over the span bounds every product: `|h·x| ≤ H·X` as reals and
///    rounding is monotone, so `|fl(h·x)| = fl(|h·x|) ≤ fl(H·X) = p`. Only
///    this one product of bounds is computed, never the (possibly
///    subnormal) products themselves. A NaN or infinite `h` or `x` makes `p`
///    NaN or infinite, and nothing is skipped.
/// 2. **Exact zeros.** `p = 0` means every product is `+0` or `−0` (finite
///    `h`, `x`: zero inputs, zero taps, or products that round to zero). The
///    accumulator is never `−0`: it starts at `+0`, and a round-to-nearest
///    sum is `−0` only when both addends are `−0`. So `acc + (±0)` is `acc`
///    for a nonzero `acc` and `+0 + (±0) = +0`: the sign of a zero product
///    never shows. (A NaN `acc` stays NaN, and the engine replaces a NaN
///    output with silence, so no bit of it is ever observed.)
/// 3. **Absorbed products.** Otherwise, with `p` below the smallest normal
///    (only then can products be subnormal, where some CPUs take a slow
///    microcode path), a term with `|fl(h·x)| ≤ p < acc.absorb_bound()` is
///    strictly less than half the gap from `acc` to either neighbour, so
///    `acc + fl(h·x)` rounds back to `acc` — never a tie (see
///    [`Sample::absorb_bound`]). Compared against the smallest bound of the
///    `W` accumulators, it holds for every lane.
///
/// Induction over the span: each term leaves `acc` unchanged, so the next
/// term meets the same `acc` and the same bound; skipping the whole span
/// gives the bits of summing it term by term, in tap order.
#[inline(always)]
fn skippable<S: Sample, const W: usize>(
    hmax: S,
    xbits: &[u64],
    lo: usize,
    hi: usize,
    acc: &[S; W],
) -> bool {
    let mut m = 0u64;
    for &b in &xbits[lo / SPAN..=hi / SPAN] {
        m = m.max(b);
    }
    let p = hmax * S::from_bits_u64(m);
    // False for a NaN `p` too.
    let tiny = p < S::MIN_POSITIVE;
    if !tiny {
        return false;
    }
    if p == S::ZERO {
        return true;
    }
    let mut t = acc[0].absorb_bound();
    for a in &acc[1..] {
        t = t.min(a.absorb_bound());
    }
    p < t
}

/// `out[i] = Σ_k h[k]·x[base + i − k]` in tap order, for `W` outputs, taking
/// the taps a span of [`SPAN`] at a time and skipping spans that provably
/// change no bit (with `bounds`).
#[inline(always)]
fn direct_w<S: Sample, const W: usize>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    let mut acc = [S::ZERO; W];
    for (c, hc) in h.chunks(SPAN).enumerate() {
        let top = base - c * SPAN;
        if let Some(b) = bounds {
            if skippable(b.h[c], b.x, top + 1 - hc.len(), top + W - 1, &acc) {
                continue;
            }
        }
        for (k, hk) in hc.iter().enumerate() {
            let s = top - k;
            let xs: &[S; W] = x[s..s + W].try_into().unwrap();
            for j in 0..W {
                acc[j] += *hk * xs[j];
            }
        }
    }
    out[..W].copy_from_slice(&acc);
}

#[inline(always)]
fn direct_kernel<S: Sample>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    let n = out.len();
    let mut i = 0;
    while i + 32 <= n {
        direct_w::<S, 32>(h, bounds, x, base + i, &mut out[i..]);
        i += 32;
    }
    while i + 8 <= n {
        direct_w::<S, 8>(h, bounds, x, base + i, &mut out[i..]);
        i += 8;
    }
    while i < n {
        direct_w::<S, 1>(h, bounds, x, base + i, &mut out[i..]);
        i += 1;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn direct_avx2<S: Sample>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    direct_kernel(h, bounds, x, base, out)
}

/// Direct convolution of `out.len()` outputs; output `i` is at history index
/// `base + i`, which must have `h.len() − 1` samples before it. With
/// `bounds` (the strict engine), spans of taps that provably change no bit
/// are skipped; the result is the same bits either way.
pub(super) fn direct<S: Sample>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    debug_assert!(base + 1 >= h.len() && base + out.len() <= x.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked above).
        unsafe { direct_avx2(h, bounds, x, base, out) };
        return;
    }
    direct_kernel(h, bounds, x, base, out)
}

/// Largest magnitude over each [`SPAN`] of `v`, as bits.
pub(super) fn span_max_bits<S: Sample>(v: &[S]) -> impl Iterator<Item = u64> + '_ {
    v.chunks(SPAN)
        .map(|c| c.iter().map(|s| s.abs().to_bits_u64()).max().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::super::tests::runner;
    use super::super::{Conv, ConvEngine};
    use super::*;
    use crate::dsp::fft::{FftNorm, FftProvider};
    use crate::ops::conformance::test_signal;
    use crate::profile::Profile;

    /// The naive oracle of the strict engine: each output summed in tap
    /// order from `+0`, every tap, the history before sample 0 being `+0`,
    /// with separate `×` and `+` at precision `S`.
    fn tap_order_sum<S: Sample>(x: &[S], h: &[S]) -> Vec<S> {
        (0..x.len())
            .map(|n| {
                let mut s = S::ZERO;
                for (k, hk) in h.iter().enumerate() {
                    let xv = if k <= n { x[n - k] } else { S::ZERO };
                    s += *hk * xv;
                }
                s
            })
            .collect()
    }

    /// A signal shaped like a strict render's steady state, in miniature:
    /// bursts of noise, each ringing down through tiny normals and
    /// subnormals into a limit cycle of ±(smallest subnormal) and zeros of
    /// both signs, long runs of exact `+0` and `−0`, lone subnormals.
    fn subnormal_signal(frames: usize) -> Vec<f64> {
        let noise = test_signal(31, frames);
        let tiny = f64::from_bits(1);
        let mut x = vec![0.0f64; frames];
        let mut y = 0.0f64;
        for (i, xi) in x.iter_mut().enumerate() {
            let t = i % 700;
            *xi = match t {
                0..=89 => {
                    y = noise[i] * 0.5;
                    y
                }
                // 2^-20 per sample reaches the subnormals in ~50 samples, 0.3
                // keeps inexact mantissas on the way down.
                90..=199 => {
                    y *= if t % 2 == 0 { 1.0 / 1048576.0 } else { 0.3 };
                    y
                }
                200..=399 => [tiny, -tiny, 0.0, -0.0][t % 4],
                400..=499 => 0.0,
                500..=599 => -0.0,
                650 => -3.0 * tiny,
                _ => {
                    if i % 2 == 0 {
                        0.0
                    } else {
                        -0.0
                    }
                }
            };
        }
        x
    }

    /// An IR with a zero pre-delay, zero taps of both signs, tiny normal and
    /// subnormal taps among ordinary ones.
    fn subnormal_ir(len: usize, scale: f64) -> Vec<f64> {
        let a = test_signal(17, len);
        (0..len)
            .map(|k| match k {
                0..=69 => 0.0,
                200..=263 => -0.0,
                300..=309 => f64::from_bits(5 + k as u64) * scale,
                400..=409 => 1e-300 * a[k] * scale,
                _ => a[k] * libm::exp(-(k as f64) / 150.0) * scale,
            })
            .collect()
    }

    fn same_bits<S: Sample>(got: &[S], want: &[S], label: &str) {
        assert_eq!(got.len(), want.len(), "{label}");
        for (n, (g, w)) in got.iter().zip(want).enumerate() {
            let nan = g.to_f64().is_nan() && w.to_f64().is_nan();
            assert!(
                nan || g.to_bits_u64() == w.to_bits_u64(),
                "{label}: output {n}: {g:?} vs the tap-order sum {w:?}"
            );
        }
    }

    fn strict_matches_tap_order_sum<S: Sample>(x: &[f64], ir: &[f64], label: &str) {
        let xs: Vec<S> = x.iter().map(|v| S::from_f64(*v)).collect();
        let hs: Vec<S> = ir.iter().map(|v| S::from_f64(*v)).collect();
        let want = tap_order_sum(&xs, &hs);
        for blocks in [
            vec![1],
            vec![7],
            vec![64],
            vec![4096],
            vec![3, 61, 1000, 128],
        ] {
            let mut c = Conv::<S>::new(
                &[ir.to_vec()],
                ConvEngine::Direct,
                FftProvider::Reference,
                FftNorm::Ortho,
            )
            .unwrap();
            let got = c.run_wet(&xs, &blocks);
            same_bits(
                &got[0],
                &want,
                &format!("{label} {:?} blocks {blocks:?}", S::PRECISION),
            );
        }
    }

    // The exact skips of strict convolution (zero spans, zero products,
    // absorbed products) do not change one bit.
    #[test]
    fn strict_skips_match_a_naive_tap_order_sum() {
        // Long enough for the history to wrap (its span bounds are rebuilt then).
        let x = subnormal_signal(40000);
        for (scale, name) in [
            (1.0, "unit IR"),
            // Products of subnormal inputs are normal here: nothing tiny to skip.
            (1e300, "huge IR"),
            // Products of ordinary inputs are subnormal here.
            (1e-305, "tiny IR"),
        ] {
            strict_matches_tap_order_sum::<f64>(&x, &subnormal_ir(450, scale), name);
        }
        // The same at f32 (a strict node may be pinned to f32), on f32's scale.
        for (scale, name) in [(1.0, "unit IR"), (1e30, "huge IR"), (1e-36, "tiny IR")] {
            strict_matches_tap_order_sum::<f32>(&x, &subnormal_ir(450, scale), name);
        }
        // Non-finite input: a NaN or an infinity is never skipped past.
        let mut x = subnormal_signal(3000);
        x[1000] = f64::INFINITY;
        x[2100] = f64::NAN;
        strict_matches_tap_order_sum::<f64>(&x, &subnormal_ir(450, 1.0), "non-finite input");
        // A non-finite tap: infinity × 0 is NaN, so zero inputs are not skipped either.
        let mut ir = subnormal_ir(450, 1.0);
        ir[100] = f64::INFINITY;
        strict_matches_tap_order_sum::<f64>(&subnormal_signal(3000), &ir, "infinite tap");
    }

    // A snapshot restores the history's span bounds too, so a resumed
    // strict render keeps the bits of the uninterrupted one.
    #[test]
    fn strict_restore_keeps_the_skips_exact() {
        let x = subnormal_signal(12000);
        let ir = subnormal_ir(450, 1.0);
        let whole = tap_order_sum(&x, &ir);
        let split = 5000;
        let mut a = runner(vec![ir.clone()], &[], Profile::Strict, 64);
        a.run(&[x[..split].to_vec()], &[], split, &[64]);
        let st = a.snapshot();
        let mut b = runner(vec![ir], &[], Profile::Strict, 64);
        b.node().restore(&st).unwrap();
        b.set_clock(split as u64);
        let out = b.run(&[x[split..].to_vec()], &[], x.len() - split, &[64, 5]);
        // mix = 1: out = 0·x + 1·wet, which is wet bit for bit (wet is never −0).
        same_bits(&out[0], &whole[split..], "resumed");
    }

    /// Each skip rule fires where it should and nowhere else.
    #[test]
    fn each_skip_rule_fires_where_it_should_and_nowhere_else() {
        let sub = f64::from_bits(1);
        let bits = |v: f64| [v.abs().to_bits(); 4];
        // Exact zero inputs, and products that round to zero: skipped even at acc = +0.
        assert!(skippable(0.3, &bits(0.0), 0, 100, &[0.0; 8]));
        assert!(skippable(0.3, &bits(sub), 0, 100, &[0.0; 8]));
        assert!(skippable(0.0, &bits(1.0), 0, 100, &[0.0; 8]));
        // A product that may be a nonzero subnormal is not skipped at +0 ...
        assert!(!skippable(0.9, &bits(sub), 0, 100, &[0.0; 8]));
        // ... nor when one lane is small ...
        let mut acc = [1.0; 8];
        acc[5] = 2.0 * f64::MIN_POSITIVE;
        assert!(!skippable(0.9, &bits(sub * 3.0), 0, 100, &acc));
        // ... but is when every lane absorbs it.
        acc[5] = -1e-3;
        assert!(skippable(0.9, &bits(sub * 3.0), 0, 100, &[1.0; 8]));
        assert!(skippable(0.9, &bits(1e-310), 0, 100, &acc));
        // A subnormal product that a small lane would not absorb.
        acc[5] = 1e-300;
        assert!(!skippable(0.9, &bits(1e-310), 0, 100, &acc));
        // Normal-sized products are always summed (no subnormal, nothing to gain).
        assert!(!skippable(0.9, &bits(1e-200), 0, 100, &[1e200; 8]));
        // Non-finite: never.
        assert!(!skippable(f64::INFINITY, &bits(0.0), 0, 100, &[1.0; 8]));
        assert!(!skippable(0.5, &bits(f64::NAN), 0, 100, &[1.0; 8]));
        assert!(!skippable(0.9, &bits(sub), 0, 100, &[f64::NAN; 8]));
        // (0.5 × the smallest subnormal rounds to 0: an exact zero, skipped
        // at any accumulator — a NaN one stays NaN.)
        assert!(skippable(0.5, &bits(sub), 0, 100, &[f64::NAN; 8]));
        // The largest block in the read range counts.
        let mut xb = [0u64; 4];
        xb[3] = 1.0f64.to_bits();
        assert!(skippable(0.5, &xb, 0, 3 * SPAN - 1, &[0.0; 1]));
        assert!(!skippable(0.5, &xb, 0, 3 * SPAN, &[0.0; 1]));
    }
}
