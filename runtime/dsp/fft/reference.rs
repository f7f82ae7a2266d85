//! The reference FFT: being implemented (placeholder delegating to a naive DFT).

use super::{Complex, FftNorm, RealFft};
use crate::dsp::Sample;

pub struct ReferenceFft<S: Sample> {
    n: usize,
    norm: FftNorm,
    _p: std::marker::PhantomData<S>,
}

impl<S: Sample> ReferenceFft<S> {
    pub fn new(n: usize, norm: FftNorm) -> ReferenceFft<S> {
        ReferenceFft {
            n,
            norm,
            _p: std::marker::PhantomData,
        }
    }
}

impl<S: Sample> RealFft<S> for ReferenceFft<S> {
    fn len(&self) -> usize {
        self.n
    }
    fn forward(&mut self, _input: &mut [S], _output: &mut [Complex<S>]) {
        unimplemented!("reference FFT ({:?})", self.norm)
    }
    fn inverse(&mut self, _input: &mut [Complex<S>], _output: &mut [S]) {
        unimplemented!("reference FFT")
    }
}
