//! Numeric core: the sample trait, math policies, the FP-mode guard, FFT
//! providers, analysis windows, oversampling filters, the locked random
//! streams and their vectorised Philox kernel, sample-rate conversion, and
//! the named-array form in which any of them snapshots state.

pub mod bits;
pub mod fft;
pub mod fpmode;
pub mod math;
pub mod oversample;
pub mod philox;
pub mod resample;
pub mod rng;
pub mod sample;
pub mod state;
pub mod strict_sin;
pub mod vector;
pub mod window;

pub use math::{FastMath, Math, MathKind, StdMath, StrictMath};
pub use sample::{Precision, Sample};
