//! The rustfft/realfft provider.

use super::{Complex, FftNorm, RealFft};
use crate::dsp::Sample;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use std::sync::Arc;

/// realfft plans plus their scratch, owned so the hot path never allocates.
pub(crate) struct RustRealFft<S: Sample + realfft::FftNum> {
    n: usize,
    fwd: Arc<dyn RealToComplex<S>>,
    inv: Arc<dyn ComplexToReal<S>>,
    scratch_fwd: Vec<Complex<S>>,
    scratch_inv: Vec<Complex<S>>,
    scale_fwd: S,
    scale_inv: S,
}

impl<S: Sample + realfft::FftNum> RustRealFft<S> {
    pub(crate) fn new(n: usize, norm: FftNorm) -> RustRealFft<S> {
        assert!(
            n >= 2 && n.is_power_of_two(),
            "FFT size must be a power of two ≥ 2"
        );
        let mut planner = RealFftPlanner::<S>::new();
        let fwd = planner.plan_fft_forward(n);
        let inv = planner.plan_fft_inverse(n);
        let (a, b) = norm.scales(n);
        RustRealFft {
            n,
            scratch_fwd: fwd.make_scratch_vec(),
            scratch_inv: inv.make_scratch_vec(),
            fwd,
            inv,
            scale_fwd: <S as Sample>::from_f64(a),
            scale_inv: <S as Sample>::from_f64(b),
        }
    }
}

impl<S: Sample + realfft::FftNum> RealFft<S> for RustRealFft<S> {
    fn len(&self) -> usize {
        self.n
    }

    fn forward(&mut self, input: &mut [S], output: &mut [Complex<S>]) {
        self.fwd
            .process_with_scratch(
                &mut input[..self.n],
                &mut output[..self.n / 2 + 1],
                &mut self.scratch_fwd,
            )
            .expect("buffer sizes are fixed at plan time");
        if self.scale_fwd != <S as Sample>::ONE {
            for c in output[..self.n / 2 + 1].iter_mut() {
                *c = Complex::new(c.re * self.scale_fwd, c.im * self.scale_fwd);
            }
        }
    }

    fn inverse(&mut self, input: &mut [Complex<S>], output: &mut [S]) {
        let h = self.n / 2;
        input[0].im = <S as Sample>::ZERO;
        input[h].im = <S as Sample>::ZERO;
        self.inv
            .process_with_scratch(
                &mut input[..h + 1],
                &mut output[..self.n],
                &mut self.scratch_inv,
            )
            .expect("buffer sizes are fixed at plan time");
        if self.scale_inv != <S as Sample>::ONE {
            for x in output[..self.n].iter_mut() {
                *x *= self.scale_inv;
            }
        }
    }
}
