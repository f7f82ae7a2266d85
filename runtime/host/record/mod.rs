//! Records of a session: the journal `run` writes and `replay` renders
//! bit for bit, and snapshot files (an engine's whole state at one sample).

pub mod journal;
pub mod snapshot;
