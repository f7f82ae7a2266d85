//! Offline: `render` (exactly N frames of the main bus into a WAV file,
//! or an input's length and the scene's tail, with levels, a hash,
//! snapshots and resumes), its audio input (`input`), a MIDI file driving
//! the scene's controls (`midi`), the WAV writer it
//! streams through (`wav_out`) and its FLAC encoder (`flac_out`), the part
//! of a wide sum a render on several threads runs ahead (`ahead`), and `plot`, which draws a render or a WAV file (with `axes`,
//! its ticks and labels, and `canvas`, the picture and its font); what stops
//! a render or a plot that is not a file's or the scene's fault is a
//! [`RenderError`] (`error`).

pub mod ahead;
pub mod axes;
pub mod canvas;
pub mod error;
pub mod flac_out;
pub mod input;
pub mod levels;
pub mod midi;
pub mod plot;
pub mod plugin;
pub mod render;
pub mod wav_out;

pub use crate::host::files::wav::WavFormat;
pub use error::RenderError;
pub use render::{render, render_hash, RenderOptions, RenderReport};
