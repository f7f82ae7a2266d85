//! Snapshots: an engine's whole state at one sample, in one versioned
//! format every host reads and writes — the command line's snapshot files
//! (`--snapshot-out`, `render --resume`), the Python module's
//! `Processor.snapshot()` and the CLAP plugin's state. A snapshot resumes
//! bit for bit on the same build, or is carried into an edited scene or
//! another profile by the handover's carry rules
//! ([`crate::engine::incoming`]: nodes match by id and operator, the rest
//! start fresh, each named).
//!
//! The format (`morphrt-snapshot`, version 1) is JSON. It holds the
//! morphrt version that wrote it, the scene's SHA-256 and topology hash,
//! the session profile, sample rate, block size, seed and sample clock,
//! the SHA-256 of every resource, the main bus's alignment delays, and per
//! node its id, operator, resolved profile and precision, named state,
//! params (scene value, running value, ramp in progress, discrete value an
//! event set), edge delay lines and, for a node that failed, its mute and
//! backoff, and per voice module its allocator (every voice's phase, note,
//! ages and quiet count, the pedal; absent when the scene has none, so
//! older snapshots read as before, every voice free), and the beat grid
//! the engine played on when the scene has a tempo (`tempo`: the anchor
//! sample, the beat there and the samples a beat lasts, the last two exact
//! rationals `"num/den"`; absent without a tempo, and a snapshot without
//! it resumes on its scene's grid from sample 0), and what a host keeps
//! beside the engine state to continue its own stream (`host`, under a
//! key naming the host; absent from the command line's files). Sample arrays are hex
//! strings of IEEE bit patterns (16 digits per f64, 8 per f32, most
//! significant first): exact for every value including NaN, infinities
//! and -0, and compact. Scalar params are JSON numbers, which round-trip
//! exactly with serde_json's `float_roundtrip`.
//!
//! A host takes an [`EngineState`](crate::engine::EngineState) (from
//! [`Controller::snapshot`](super::Controller::snapshot) or
//! [`Engine::snapshot`](crate::engine::Engine::snapshot)), turns it into a
//! [`SnapshotFile`] with the [`SnapshotContext`] of the plan it plays, and
//! stores [`SnapshotFile::to_bytes`] where it keeps state; it reads bytes
//! back with [`SnapshotFile::from_bytes`], which checks them, and resumes
//! them with [`SnapshotContext::resume`] (or restores
//! [`SnapshotFile::state`] through [`Controller::restore`](super::Controller::restore)).
//!
//! ```
//! use morphrt_core::api::snapshot::{SnapshotContext, SnapshotFile};
//! use morphrt_core::engine::Engine;
//! use morphrt_core::graph::{compile, CompileOptions};
//!
//! let text = r#"{ "version": "1.0", "sample_rate": 48000, "profile": "strict",
//!     "nodes": [{ "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } }],
//!     "outputs": { "main": ["osc"] } }"#;
//! let plan = || {
//!     let scene = morphrt_core::scene::load_str(text, "saw.json", None).expect("a valid scene");
//!     compile(&scene, &CompileOptions::default()).expect("it compiles")
//! };
//! let cx = SnapshotContext::new(&plan(), text, &|_: &std::path::Path| unreachable!("no resources"))
//!     .expect("a scene without resources");
//! let mut a = Engine::new(plan());
//! morphrt_core::engine::render_to_vec(&mut a, 1000);
//! let bytes = cx.file(&a.snapshot()).expect("a's state").to_bytes();
//!
//! let snap = SnapshotFile::from_bytes(&bytes, "saw.snapshot").expect("a valid snapshot");
//! let mut b = Engine::new(plan());
//! cx.resume(&snap, &mut b).expect("the same scene");
//! let (x, y) = (morphrt_core::engine::render_to_vec(&mut a, 500), morphrt_core::engine::render_to_vec(&mut b, 500));
//! assert!(x[0].iter().zip(&y[0]).all(|(p, q)| p.to_bits() == q.to_bits()));
//! ```
//!
//! | part | what lives there |
//! |---|---|
//! | `format.rs` | the versioned JSON types, reading and checking snapshot bytes |
//! | `codec.rs` | engine state ↔ those types: exact sample arrays and numbers |
//! | `numbers.rs` | the exact number encodings |
//! | `context.rs` | [`SnapshotContext`]: a snapshot matched to a scene's plan, made and resumed; the scene and topology hashes |

mod codec;
mod context;
mod format;
mod numbers;

pub use context::{topology_sha256, ReadResource, Resumed, SnapshotContext};
pub use format::{
    BusRecord, DelayRecord, NodeRecord, NoteRecord, ParamRecord, PhaseRecord, PoolRecord,
    RampRecord, RecoveryRecord, ResourceRecord, SceneRecord, SnapshotFile, StateEntry, StateRecord,
    TempoRecord, ValueRecord, VoiceRecord, FORMAT, MAX_CLOCK, VERSION,
};
pub use numbers::{HexF32, HexF64, Num};

use crate::scene::{Diagnostic, Loc};
use std::io;
use std::path::Path;

/// Why a snapshot could not be read, written or resumed.
#[derive(Debug)]
pub enum SnapshotError {
    /// The snapshot's bytes could not be read (by the host, from a file).
    Read {
        /// The snapshot, as its host names it.
        file: String,
        /// Why.
        error: io::Error,
    },
    /// The file ends before the JSON does: cut short or not completely written.
    /// `source` is the JSON reader's error, which says where it stopped.
    Truncated {
        /// The snapshot, as its host names it.
        file: String,
        /// The JSON reader's error.
        source: serde_json::Error,
    },
    /// The file is not JSON: `source` is the JSON reader's error.
    Syntax {
        /// The snapshot, as its host names it.
        file: String,
        /// The JSON reader's error.
        source: serde_json::Error,
    },
    /// JSON, but not a morphrt snapshot.
    NotASnapshot {
        /// The bytes, as their host names them.
        file: String,
    },
    /// A snapshot of a format version this build does not read.
    Version {
        /// The snapshot, as its host names it.
        file: String,
        /// The version it has, as JSON (`(none)` when it has none).
        found: String,
    },
    /// A version-1 snapshot whose content does not fit the format or this
    /// build's operators; `at` is the line and column, when the JSON
    /// reader knows it.
    Invalid {
        /// The snapshot, as its host names it.
        file: String,
        /// What does not fit.
        message: String,
        /// Line and column, when known.
        at: Option<(usize, usize)>,
    },
    /// The scene runs at another sample rate than the snapshot was taken at.
    SampleRate {
        /// The snapshot, as its host names it.
        file: String,
        /// The rate it was taken at.
        snapshot: u32,
        /// The scene's rate.
        scene: u32,
    },
    /// No node of the snapshot is in the scene (same id and operator).
    NothingMatches {
        /// The snapshot, as its host names it.
        file: String,
    },
    /// A resource could not be read to hash it.
    Resource {
        /// The resource's path.
        file: String,
        /// Why.
        error: io::Error,
    },
    /// The saved state does not come from the engine of this context's
    /// plan (a host bug, not the user's).
    Mismatch(String),
}

impl SnapshotError {
    /// The exit code of a command that fails with it: 2 for bad input (the
    /// snapshot, or a scene it does not fit), 1 for a host bug.
    pub fn exit_code(&self) -> i32 {
        match self {
            SnapshotError::Mismatch(_) => 1,
            _ => 2,
        }
    }
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Read { file, error } => {
                write!(f, "cannot read snapshot `{file}`: {error}")
            }
            SnapshotError::Truncated { file, source } => write!(
                f,
                "snapshot `{file}` is truncated: it ends at line {}, column {}, before the JSON does (was it cut short or not completely written?)",
                source.line(),
                source.column()
            ),
            SnapshotError::Syntax { file, source } => write!(
                f,
                "snapshot `{file}` is corrupted: not valid JSON at line {}, column {}: {}",
                source.line(),
                source.column(),
                format::strip_position(&source.to_string())
            ),
            SnapshotError::NotASnapshot { file } => write!(
                f,
                "`{file}` is not a morphrt snapshot (it has no `\"format\": \"{FORMAT}\"`)"
            ),
            SnapshotError::Version { file, found } => write!(
                f,
                "snapshot `{file}` has format version {found}; this morphrt ({}) reads version {VERSION}",
                env!("CARGO_PKG_VERSION")
            ),
            SnapshotError::Invalid { file, message, at } => match at {
                Some((line, column)) => write!(
                    f,
                    "snapshot `{file}` is invalid at line {line}, column {column}: {message}"
                ),
                None => write!(f, "snapshot `{file}` is invalid: {message}"),
            },
            SnapshotError::SampleRate {
                file,
                snapshot,
                scene,
            } => write!(
                f,
                "snapshot `{file}` was taken at {snapshot} Hz but the scene runs at {scene} Hz; state cannot carry across sample rates"
            ),
            SnapshotError::NothingMatches { file } => write!(
                f,
                "snapshot `{file}` has no node of this scene (no node with the same id and operator): it was taken from another scene"
            ),
            SnapshotError::Resource { file, error } => {
                write!(f, "cannot read resource `{file}` to hash it: {error}")
            }
            SnapshotError::Mismatch(m) => write!(f, "snapshot: {m}"),
        }
    }
}

impl std::error::Error for SnapshotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SnapshotError::Read { error, .. } | SnapshotError::Resource { error, .. } => {
                Some(error)
            }
            SnapshotError::Truncated { source, .. } | SnapshotError::Syntax { source, .. } => {
                Some(source)
            }
            SnapshotError::NotASnapshot { .. }
            | SnapshotError::Version { .. }
            | SnapshotError::Invalid { .. }
            | SnapshotError::SampleRate { .. }
            | SnapshotError::NothingMatches { .. }
            | SnapshotError::Mismatch(_) => None,
        }
    }
}

impl SnapshotError {
    /// A problem with the snapshot file (or the scene it does not fit) as a
    /// diagnostic located in the file: its path, and the line and column
    /// where the JSON reader stopped. `None` for writing failures and host
    /// bugs, which are not the input's.
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        let at = |file: &str, line: usize, column: usize, message: String| {
            Diagnostic::error(
                file,
                Some(Loc::new("", line as u32, column as u32)),
                message,
            )
        };
        Some(match self {
            SnapshotError::Read { file, error } => {
                Diagnostic::error(file, None, format!("cannot read snapshot file: {error}"))
            }
            SnapshotError::Truncated { file, source } => at(
                file,
                source.line(),
                source.column(),
                "the snapshot is truncated: it ends before the JSON does (was it cut short or not completely written?)".to_string(),
            ),
            SnapshotError::Syntax { file, source } => at(
                file,
                source.line(),
                source.column(),
                format!(
                    "the snapshot is corrupted: not valid JSON: {}",
                    format::strip_position(&source.to_string())
                ),
            ),
            SnapshotError::NotASnapshot { file } => Diagnostic::error(
                file,
                None,
                format!("this is not a morphrt snapshot (it has no `\"format\": \"{FORMAT}\"`)"),
            ),
            SnapshotError::Version { file, found } => Diagnostic::error(
                file,
                Some(Loc::path("version")),
                format!(
                    "the snapshot has format version {found}; this morphrt ({}) reads version {VERSION}",
                    env!("CARGO_PKG_VERSION")
                ),
            ),
            SnapshotError::Invalid { file, message, at: pos } => {
                let message = format!("the snapshot is invalid: {message}");
                match pos {
                    Some((line, column)) => at(file, *line, *column, message),
                    None => Diagnostic::error(file, None, message),
                }
            }
            SnapshotError::SampleRate {
                file,
                snapshot,
                scene,
            } => Diagnostic::error(
                file,
                Some(Loc::path("sample_rate")),
                format!(
                    "the snapshot was taken at {snapshot} Hz but the scene runs at {scene} Hz; state cannot carry across sample rates"
                ),
            ),
            SnapshotError::NothingMatches { file } => Diagnostic::error(
                file,
                Some(Loc::path("nodes")),
                "the snapshot has no node of this scene (no node with the same id and operator): it was taken from another scene",
            ),
            SnapshotError::Resource { file, error } => {
                Diagnostic::error(file, None, format!("cannot read the resource to hash it: {error}"))
            }
            SnapshotError::Mismatch(_) => return None,
        })
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// The SHA-256 of `bytes` in lower-case hex: how a snapshot records its
/// scene, its topology and its resources.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let mut s = String::with_capacity(64);
    for b in Sha256::digest(bytes) {
        let _ = write!(s, "{b:02x}");
    }
    s
}
