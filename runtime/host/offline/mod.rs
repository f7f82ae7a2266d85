//! Offline: `render` (exactly N frames of the main bus into a WAV file,
//! with levels, a hash, snapshots and resumes), the WAV writer it streams
//! through, and `plot`, which draws a render or a WAV file (with `axes`,
//! its ticks and labels, and `canvas`, the picture and its font).

pub mod axes;
pub mod canvas;
pub mod levels;
pub mod plot;
pub mod render;

pub use crate::host::files::wav::WavFormat;
pub use render::{render, render_hash, RenderOptions, RenderReport};
