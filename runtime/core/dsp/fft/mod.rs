//! FFT providers, chosen when a node is built (by its profile: see
//! [`crate::profile`]):
//!
//! - [`FftProvider::Reference`]: ours — radix-2, twiddles from the pinned
//!   libm, a fixed operation order. Bit-exact across runs, builds, opt levels
//!   and targets; the only provider allowed under strict.
//! - [`FftProvider::RustFft`]: rustfft/realfft. Fast; picks SIMD code by CPU
//!   at run time, so it is deterministic only per build and CPU feature level.
//!
//! Normalisation follows NumPy: `backward` (1/N on the inverse only),
//! `ortho` (1/√N both ways), `forward` (1/N on the forward only).
//! All plans and scratch are allocated by `plan_real`; `forward`/`inverse`
//! never allocate.

mod reference;
mod rust;
#[cfg(test)]
mod tests;

pub(crate) use reference::ReferenceFft;
pub(crate) use rust::RustRealFft;
pub use rustfft::num_complex::Complex;

use super::Sample;

/// Which FFT implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftProvider {
    /// morphrt's own FFT, bit-exact across runs, builds, opt levels and
    /// targets (the strict profile's).
    Reference,
    /// The `rustfft` and `realfft` crates: faster, not bit-exact across
    /// builds and CPUs.
    RustFft,
}

impl FftProvider {
    /// Every provider, for the names a scene may give.
    pub(crate) const ALL: [FftProvider; 2] = [FftProvider::Reference, FftProvider::RustFft];

    pub(crate) fn name(self) -> &'static str {
        match self {
            FftProvider::Reference => "reference",
            FftProvider::RustFft => "rustfft",
        }
    }
    pub(crate) fn parse(s: &str) -> Option<FftProvider> {
        match s {
            "reference" => Some(FftProvider::Reference),
            "rustfft" => Some(FftProvider::RustFft),
            _ => None,
        }
    }
}

/// NumPy's normalisation conventions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftNorm {
    /// Forward unscaled, inverse scaled by 1/n (NumPy's default).
    Backward,
    /// Both directions scaled by 1/√n.
    Ortho,
    /// Forward scaled by 1/n, inverse unscaled.
    Forward,
}

impl FftNorm {
    pub(crate) fn name(self) -> &'static str {
        match self {
            FftNorm::Backward => "backward",
            FftNorm::Ortho => "ortho",
            FftNorm::Forward => "forward",
        }
    }
    pub(crate) fn parse(s: &str) -> Option<FftNorm> {
        match s {
            "backward" => Some(FftNorm::Backward),
            "ortho" => Some(FftNorm::Ortho),
            "forward" => Some(FftNorm::Forward),
            _ => None,
        }
    }

    /// (forward scale, inverse scale) for size `n`, computed with `sqrt` only.
    pub(crate) fn scales(self, n: usize) -> (f64, f64) {
        let nf = n as f64;
        match self {
            FftNorm::Backward => (1.0, 1.0 / nf),
            FftNorm::Ortho => {
                let s = 1.0 / nf.sqrt();
                (s, s)
            }
            FftNorm::Forward => (1.0 / nf, 1.0),
        }
    }
}

/// A planned real-input FFT of one power-of-two size at precision `S`.
pub trait RealFft<S: Sample>: Send {
    /// The transform size N (real samples).
    fn len(&self) -> usize;
    /// Never true for a planned transform (N ≥ 2).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// N real samples → N/2+1 bins. `input` may be used as scratch.
    fn forward(&mut self, input: &mut [S], output: &mut [Complex<S>]);
    /// N/2+1 bins → N real samples. `input` may be used as scratch; the
    /// imaginary parts of bins 0 and N/2 are ignored.
    fn inverse(&mut self, input: &mut [Complex<S>], output: &mut [S]);
}

/// Plans a real FFT of size `n` (a power of two ≥ 2). May allocate.
pub fn plan_real<S: Sample>(provider: FftProvider, n: usize, norm: FftNorm) -> Box<dyn RealFft<S>> {
    match provider {
        FftProvider::Reference => Box::new(ReferenceFft::<S>::new(n, norm)),
        FftProvider::RustFft => S::plan_rustfft(n, norm),
    }
}
