//! Numeric core: the sample trait, math policies, the FP-mode guard, FFT
//! providers, analysis windows and the locked random streams.

pub mod bits;
pub mod fft;
pub mod fpmode;
pub mod math;
pub mod oversample;
pub mod rng;
pub mod sample;
pub mod window;

pub use math::{FastMath, Math, MathKind, StdMath, StrictMath};
pub use sample::{Precision, Sample};
