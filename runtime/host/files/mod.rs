//! Files: reading a scene from disk, the output rules every file the
//! program writes obeys (never over an input, never a partial file), the
//! one writer that carries them out, and the signals that must not leave a
//! partial file behind; the lock that keeps a file written in place to one
//! writer; WAV headers and sample formats, which render, replay and the tap
//! write; reading audio files of every format read (`wav_in`, `media`).

pub mod digest;
pub mod error;
pub mod lock;
pub mod media;
pub mod resources;
pub mod rules;
pub mod scene;
pub mod signals;
pub mod threads;
pub mod wav;
pub mod wav_in;
pub mod write;
