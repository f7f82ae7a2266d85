//! The outside world, grouped by concept. Each wing is a folder:
//!
//! | wing | what lives there |
//! |---|---|
//! | `error` | [`HostError`], the one error a command returns: it holds each wing's own error (files, snapshot, journal, tap) with its cause |
//! | [`files`] | reading a scene from disk; the output rules every written file obeys, and the one writer that carries them out; signals |
//! | [`offline`] | `render` into a WAV file (with `--input`, a WAV as the scene's audio input), its levels, and `plot` |
//! | [`record`] | the journal of a live session and its replay; snapshot files |
//! | [`control`] | control in: what OSC and MIDI messages ask of a session, and MIDI files |
//! | [`live`] | what `run` plays: the control side, the audio callback, devices, the file watcher, keys, the tap |
//! | [`machine`] | the machine and build a measurement belongs to; stored calibrations |
//! | [`term`] | the terminal: how much is said, in which colours, the progress line |
//!
//! Wings use each other only downwards in this table's order reversed
//! (`live` may use `offline`, `control`, `record` and `files`; `files` uses none;
//! `error` may use every wing, which reach it only as `crate::host::HostError`),
//! checked by a test in `runtime/lib.rs`.

mod error;
pub mod files;
pub mod live;
pub mod machine;
pub mod offline;
pub mod record;
pub mod remote;
pub mod term;

pub use error::{HostError, LayerError};
pub use files::scene::{load_engine, load_plan, read_scene, verbose_plan};
