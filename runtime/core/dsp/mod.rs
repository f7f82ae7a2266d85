//! Numeric core: the sample trait, math policies, the FP-mode guard, FFT
//! providers, analysis windows, oversampling filters, the locked random
//! streams and their vectorised Philox kernel, sample-rate conversion, and
//! the named-array form in which any of them snapshots state.

#[cfg(test)]
pub(crate) mod bits;
pub mod fft;
pub mod fpmode;
pub(crate) mod math;
pub(crate) mod oversample;
pub(crate) mod philox;
pub mod resample;
pub mod rng;
pub(crate) mod sample;
pub(crate) mod state;
pub(crate) mod strict_explog;
pub(crate) mod strict_sin;
pub mod vector;
pub(crate) mod window;

pub(crate) use math::{FastMath, Math, MathKind, StdMath, StrictMath};
pub use sample::{Precision, Sample};
