//! The two sample types a `Processor` streams: float32 blocks go through
//! the core's f32 calls, float64 blocks through its f64 calls, each read
//! from and written to the numpy arrays in place.

use morphrt_core::api::{Event, ProcessError, Processor as CoreProcessor};

/// A sample of a block: f32 or f64.
pub(crate) trait Sample: numpy::Element + Copy + Default + Send + Sync {
    /// The sample as the engine holds it (exact for both).
    fn to_f64(self) -> f64;
    /// An engine sample as a block holds it (rounded to f32 for f32).
    fn of_f64(x: f64) -> Self;
    /// The core's call for buffers of this type.
    fn process(
        core: &mut CoreProcessor,
        inputs: &[&[Self]],
        outputs: &mut [&mut [Self]],
        events: &[Event],
        frames: usize,
    ) -> Result<(), ProcessError>;
}

impl Sample for f32 {
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn of_f64(x: f64) -> f32 {
        x as f32
    }
    fn process(
        core: &mut CoreProcessor,
        inputs: &[&[f32]],
        outputs: &mut [&mut [f32]],
        events: &[Event],
        frames: usize,
    ) -> Result<(), ProcessError> {
        core.process(inputs, outputs, events, frames)
    }
}

impl Sample for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn of_f64(x: f64) -> f64 {
        x
    }
    fn process(
        core: &mut CoreProcessor,
        inputs: &[&[f64]],
        outputs: &mut [&mut [f64]],
        events: &[Event],
        frames: usize,
    ) -> Result<(), ProcessError> {
        core.process_f64(inputs, outputs, events, frames)
    }
}
