//! Records of a session: the journal `run` writes and `replay` renders
//! bit for bit with the input it recorded, and snapshot files (an engine's whole state at one sample).

pub mod input;
pub mod journal;
pub mod snapshot;
