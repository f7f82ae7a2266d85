//! The reference FFT: ours, bit-exact across runs, builds, opt levels and
//! targets (the strict profile's FFT, see [`crate::profile`]).
//!
//! A real transform of size N (a power of two, 2 ≤ N ≤ 65536) is computed
//! through one complex transform of size M = N/2:
//!
//! 1. **Packing.** z\[k\] = x\[2k\] + i·x\[2k+1\] for k in 0..M, stored at the
//!    bit-reversed index of k (the permutation of an iterative radix-2
//!    decimation-in-time FFT).
//! 2. **Complex FFT.** Stages of span s = 2, 4, …, M, in that order. Within a
//!    stage, blocks start at 0, s, 2s, … and within a block j runs 0..s/2;
//!    each butterfly is
//!    `t = w·b; b' = a − t; a' = a + t` with `w = W_N^(j·N/s)`
//!    (conjugated for the inverse) and the complex product computed as
//!    `(wr·br − wi·bi, wr·bi + wi·br)`. Every butterfly of a stage touches
//!    its own two elements only, so the loop order within a stage cannot
//!    change a bit; the operation order of every output is fixed.
//! 3. **Split (forward).** With Z the M-point spectrum and Z\[M\] = Z\[0\]:
//!    X\[0\] = Re Z0 + Im Z0, X\[M\] = Re Z0 − Im Z0, and for 0 < k < M
//!    `E = (Z[k] + conj Z[M−k])·½`, `O = −i·(Z[k] − conj Z[M−k])·½`,
//!    `X[k] = E + W_N^k·O`.
//!    **Merge (inverse)** is the exact reverse, without the halves:
//!    `E = X[k] + conj X[M−k]`, `O = (X[k] − conj X[M−k])·conj W_N^k`,
//!    `Z[k] = E + i·O` (the imaginary parts of X\[0\] and X\[M\] are
//!    ignored); an inverse complex FFT then gives N·x, unnormalised.
//! 4. **Scale.** A final multiply of every value by the normalisation's
//!    scale ([`FftNorm::scales`], computed in f64 and rounded once to `S`),
//!    skipped when that scale is exactly 1.
//!
//! Twiddles W_N^k = cos θ − i·sin θ, θ = (2π·k)/N with 2π the f64 constant
//! `TAU` (`TAU * k`, then `/ N`, which is exact for a power of two), are
//! computed once at plan time in f64 with the pinned `libm::cos`/`libm::sin`
//! and rounded to `S`. Only + − × and those libm calls are used; no fused
//! multiply-add. All buffers are allocated in [`ReferenceFft::new`];
//! `forward`/`inverse` never allocate and keep no state between calls.

use super::{Complex, FftNorm, RealFft};
use crate::dsp::Sample;

/// Largest supported size.
pub(crate) const MAX_SIZE: usize = 1 << 16;

/// A planned reference real FFT of one size, norm and precision.
pub(crate) struct ReferenceFft<S: Sample> {
    n: usize,
    /// W_N^k for k in 0..N/2, rounded to `S`.
    twiddles: Vec<Complex<S>>,
    /// Bit-reversal permutation of 0..N/2.
    bitrev: Vec<u32>,
    /// The N/2-point complex work buffer.
    buf: Vec<Complex<S>>,
    scale_fwd: S,
    scale_inv: S,
}

impl<S: Sample> ReferenceFft<S> {
    /// Plans a transform of size `n` (a power of two, 2 ≤ n ≤ 65536).
    pub(crate) fn new(n: usize, norm: FftNorm) -> ReferenceFft<S> {
        assert!(
            (2..=MAX_SIZE).contains(&n) && n.is_power_of_two(),
            "reference FFT size must be a power of two in 2..=65536, got {n}"
        );
        let m = n / 2;
        let nf = n as f64;
        let twiddles = (0..m)
            .map(|k| {
                let theta = core::f64::consts::TAU * (k as f64) / nf;
                Complex::new(
                    S::from_f64(libm::cos(theta)),
                    S::from_f64(-libm::sin(theta)),
                )
            })
            .collect();
        let bits = m.trailing_zeros();
        let bitrev = (0..m)
            .map(|k| {
                if bits == 0 {
                    0
                } else {
                    (k as u32).reverse_bits() >> (32 - bits)
                }
            })
            .collect();
        let (a, b) = norm.scales(n);
        ReferenceFft {
            n,
            twiddles,
            bitrev,
            buf: vec![Complex::new(S::ZERO, S::ZERO); m],
            scale_fwd: S::from_f64(a),
            scale_inv: S::from_f64(b),
        }
    }

    /// In-place radix-2 DIT butterflies over `buf` (already in bit-reversed
    /// order). `inverse` conjugates the twiddles (unnormalised inverse).
    fn butterflies(&mut self, inverse: bool) {
        let m = self.buf.len();
        let buf = &mut self.buf;
        let tw = &self.twiddles;
        let mut span = 2;
        while span <= m {
            let half = span / 2;
            let step = self.n / span;
            let mut start = 0;
            while start < m {
                for j in 0..half {
                    let w = tw[j * step];
                    let wi = if inverse { -w.im } else { w.im };
                    let a = buf[start + j];
                    let b = buf[start + j + half];
                    let tr = w.re * b.re - wi * b.im;
                    let ti = w.re * b.im + wi * b.re;
                    buf[start + j + half] = Complex::new(a.re - tr, a.im - ti);
                    buf[start + j] = Complex::new(a.re + tr, a.im + ti);
                }
                start += span;
            }
            span *= 2;
        }
    }
}

impl<S: Sample> RealFft<S> for ReferenceFft<S> {
    fn len(&self) -> usize {
        self.n
    }

    fn forward(&mut self, input: &mut [S], output: &mut [Complex<S>]) {
        let m = self.n / 2;
        let x = &input[..self.n];
        for k in 0..m {
            self.buf[self.bitrev[k] as usize] = Complex::new(x[2 * k], x[2 * k + 1]);
        }
        self.butterflies(false);

        let z = &self.buf;
        let out = &mut output[..m + 1];
        let half = S::from_f64(0.5);
        out[0] = Complex::new(z[0].re + z[0].im, S::ZERO);
        out[m] = Complex::new(z[0].re - z[0].im, S::ZERO);
        for k in 1..m {
            let a = z[k];
            let b = z[m - k];
            let er = (a.re + b.re) * half;
            let ei = (a.im - b.im) * half;
            let or = (a.im + b.im) * half;
            let oi = -((a.re - b.re) * half);
            let w = self.twiddles[k];
            out[k] = Complex::new(er + (w.re * or - w.im * oi), ei + (w.re * oi + w.im * or));
        }
        if self.scale_fwd != S::ONE {
            let s = self.scale_fwd;
            for c in out.iter_mut() {
                *c = Complex::new(c.re * s, c.im * s);
            }
        }
    }

    fn inverse(&mut self, input: &mut [Complex<S>], output: &mut [S]) {
        let m = self.n / 2;
        let x = &input[..m + 1];
        let (r0, rm) = (x[0].re, x[m].re);
        self.buf[0] = Complex::new(r0 + rm, r0 - rm);
        for k in 1..m {
            let p = x[k];
            let q = x[m - k];
            let er = p.re + q.re;
            let ei = p.im - q.im;
            let dr = p.re - q.re;
            let di = p.im + q.im;
            let w = self.twiddles[k];
            // O = D · conj(W)
            let or = dr * w.re + di * w.im;
            let oi = di * w.re - dr * w.im;
            // Z = E + i·O
            self.buf[self.bitrev[k] as usize] = Complex::new(er - oi, ei + or);
        }
        self.butterflies(true);

        let out = &mut output[..self.n];
        let s = self.scale_inv;
        let scale = s != S::ONE;
        for (k, z) in self.buf.iter().enumerate() {
            if scale {
                out[2 * k] = z.re * s;
                out[2 * k + 1] = z.im * s;
            } else {
                out[2 * k] = z.re;
                out[2 * k + 1] = z.im;
            }
        }
    }
}
