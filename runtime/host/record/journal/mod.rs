//! The journal of a live session, and its replay.
//!
//! `run` appends one JSON object per line (JSON Lines), flushed per record,
//! with a progress record (the sample clock) every second of audio, synced
//! to disk, so a session cut off by a crash still replays up to its last
//! complete record: [`read`] drops a last line cut short with a warning
//! naming it, and [`rerender`] plays a journal without an end record up to
//! its last record's sample, saying so. The journal holds what the handover did (see [`crate::engine::incoming`]:
//! the save sample N, the swap sample S and the fade of every edit and
//! profile switch, with the full scene text), every rejected edit, the
//! stop fade and the end sample, and a copy of every resource beside it,
//! stored by SHA-256 so that many sessions on one impulse response keep it
//! once. `replay` renders it offline through the same handover code
//! ([`Scripted`](crate::api::player::Scripted)) and the same device output stage, and reproduces the
//! device output bit for bit on the same build and CPU feature level.
//!
//! | file | what it holds |
//! |---|---|
//! | `records` | the [`Record`]s of a journal, one per line |
//! | `writer` | the open [`Journal`] `run` appends to, and where it goes |
//! | `read` | a journal read back and checked ([`read`]) |
//! | `rerender` | the offline render of a journal ([`rerender`]) |
//! | `timeline` | the timeline `replay --info` prints |
//! | `error` | what is wrong with a journal that cannot be replayed ([`JournalError`]) |
//! | `command` | `morphrt replay`: arguments, output, the WAV |

mod command;
mod error;
mod read;
mod records;
mod rerender;
mod timeline;
mod writer;

pub use command::{inputs, replay, write_wav, ReplayOptions};
pub use error::{JournalError, Problem};
pub use read::{read, Session};
pub use records::{control_changes, note_changes, KeptResource, Record};
pub use rerender::{rerender, Replay};
pub use timeline::timeline;
pub use writer::{default_path, prepare, Journal};

/// The journal format this build writes and reads.
pub const FORMAT: &str = "morphrt-journal";
pub const VERSION: u32 = 1;
