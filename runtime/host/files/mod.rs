//! Files: reading a scene from disk, the output rules every file the
//! program writes obeys (never over an input, never a partial file), and
//! the signals that must not leave one behind.

pub mod digest;
pub mod rules;
pub mod scene;
pub mod signals;
