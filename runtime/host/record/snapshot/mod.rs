//! Snapshot files: an engine's whole state at one sample, as versioned JSON,
//! so that a render or a session can stop and continue later — bit for bit
//! on the same build, or carried into an edited scene or another profile by
//! the handover's carry rules ([`crate::engine::incoming`]: nodes match by
//! id and operator, the rest start fresh, each named).
//!
//! A file (format `morphrt-snapshot`, version 1) holds the morphrt version
//! that wrote it, the scene's SHA-256 and topology hash, the session
//! profile, sample rate, block size, seed and sample clock, the SHA-256 of
//! every resource, the main bus's alignment delays, and per node its id,
//! operator, resolved profile and precision, named state, params (scene
//! value, running value, ramp in progress, discrete value an event set),
//! edge delay lines and, for a node that failed, its mute and backoff, and
//! per voice module its allocator (every voice's phase, note, ages and
//! quiet count, the pedal; absent when the scene has none, so older files
//! read as before, every voice free), and the beat grid the engine played on
//! when the scene has a tempo (`tempo`: the anchor sample, the beat there
//! and the samples a beat lasts, the last two exact rationals `"num/den"`;
//! absent without a tempo, and a file without it resumes on its scene's
//! grid from sample 0). Sample arrays are hex strings of IEEE bit patterns
//! (16 digits per f64, 8 per f32, most significant first): exact for every
//! value including NaN, infinities and -0, and compact. Scalar params are
//! JSON numbers, which round-trip exactly with serde_json's
//! `float_roundtrip`.
//!
//! Files are written through the one writer ([`crate::host::files::write`])
//! under the output rules: never over an input, and a crash or a full disk
//! never leaves a partial snapshot under the final name.
//!
//! | part | what lives there |
//! |---|---|
//! | `format.rs` | the versioned JSON types, reading and checking a file |
//! | `codec.rs` | engine state ↔ those types: exact sample arrays and numbers |
//! | `context.rs` | [`SnapshotContext`]: a snapshot matched to a scene's plan, written and resumed |

mod codec;
mod context;
mod format;
mod numbers;

pub use context::{Resumed, SnapshotContext, Written};
pub use format::{
    BusRecord, DelayRecord, NodeRecord, NoteRecord, ParamRecord, PhaseRecord, PoolRecord,
    RampRecord, RecoveryRecord, ResourceRecord, SceneRecord, SnapshotFile, StateEntry, StateRecord,
    TempoRecord, ValueRecord, VoiceRecord, FORMAT, MAX_CLOCK, VERSION,
};
pub use numbers::{HexF32, HexF64, Num};

use crate::host::files::error::FileError;
use crate::scene::{Diagnostic, Loc};
use std::io;
use std::path::{Path, PathBuf};

/// Why a snapshot could not be read, written or resumed.
#[derive(Debug)]
pub enum SnapshotError {
    /// The snapshot file could not be read.
    Read { file: String, error: io::Error },
    /// The file ends before the JSON does: cut short or not completely written.
    /// `source` is the JSON reader's error, which says where it stopped.
    Truncated {
        file: String,
        source: serde_json::Error,
    },
    /// The file is not JSON: `source` is the JSON reader's error.
    Syntax {
        file: String,
        source: serde_json::Error,
    },
    /// JSON, but not a morphrt snapshot.
    NotASnapshot { file: String },
    /// A snapshot of a format version this build does not read.
    Version { file: String, found: String },
    /// A version-1 snapshot whose content does not fit the format or this
    /// build's operators; `at` is the line and column, when the JSON
    /// reader knows it.
    Invalid {
        file: String,
        message: String,
        at: Option<(usize, usize)>,
    },
    /// The scene runs at another sample rate than the snapshot was taken at.
    SampleRate {
        file: String,
        snapshot: u32,
        scene: u32,
    },
    /// No node of the snapshot is in the scene (same id and operator).
    NothingMatches { file: String },
    /// The snapshot could not be written (or the rules refuse its path).
    File(FileError),
    /// A resource file could not be read to hash it.
    Resource { file: String, error: io::Error },
    /// The saved state does not come from the engine of this context's
    /// plan (a host bug, not the user's).
    Mismatch(String),
}

impl SnapshotError {
    /// 2 for bad input (the snapshot, or a scene it does not fit), 1 for I/O
    /// failures while writing and for host bugs.
    pub fn exit_code(&self) -> i32 {
        match self {
            SnapshotError::File(e) => e.exit_code(),
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
            SnapshotError::File(e) => write!(f, "{e}"),
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
            SnapshotError::File(e) => Some(e),
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
            SnapshotError::File(_) | SnapshotError::Mismatch(_) => return None,
        })
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// Where the snapshot taken at `sample` goes: `out` itself when it is the
/// only one, else `out` with the sample index before its extension
/// (`snap.json` → `snap.240000.json`).
pub fn numbered_path(out: &Path, sample: u64, several: bool) -> PathBuf {
    if !several {
        return out.to_path_buf();
    }
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match out.extension() {
        Some(ext) => format!("{stem}.{sample}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{sample}"),
    };
    out.with_file_name(name)
}

/// What the parts' tests share: a scene with every kind of state.
#[cfg(test)]
mod fixture {
    use crate::graph::{compile, CompileOptions, Plan};
    use crate::profile::Profile;
    use std::path::PathBuf;

    /// Every kind of value a snapshot holds: noise (seeded), a ramp in
    /// progress, an enum an event changed, gains, a resource, a delay line.
    pub const SCENE: &str = r#"{ "version": "1.0", "seed": 9, "sample_rate": 48000,
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } },
        { "id": "hiss", "op": "noise", "params": { "amp": 0.05 } },
        { "id": "kick", "op": "sampler", "params": { "file": "@resource:kick.wav", "loop": true } },
        { "id": "sum", "op": "mix", "params": { "gains": [1.0, "-6dB", 0.5] } },
        { "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "2kHz" } },
        { "id": "echo", "op": "delay", "params": { "time": "3ms", "feedback": 0.3, "max_time": "10ms" } }
      ],
      "edges": [ { "from": "osc", "to": "sum:in0" }, { "from": "hiss", "to": "sum:in1" },
                 { "from": "kick", "to": "sum:in2" }, { "from": "sum", "to": "lp" },
                 { "from": "lp", "to": "echo" } ],
      "outputs": { "main": ["echo"] },
      "events": [ { "time": "500samples", "node": "osc", "param": "freq", "value": "330Hz", "ramp": "2000samples" },
                  { "time": "1000samples", "node": "lp", "param": "mode", "value": "highpass" } ] }"#;

    pub fn build(profile: Profile) -> (Plan, String) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let scene = crate::scene::load_str(SCENE, "t.json", Some(root)).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(profile),
                ..crate::host::files::resources::compile_options()
            },
        )
        .unwrap_or_else(|e| panic!("{}", e[0]));
        (plan, SCENE.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_snapshots_are_numbered_by_sample() {
        let p = Path::new("out/snap.json");
        assert_eq!(numbered_path(p, 240000, false), p);
        assert_eq!(
            numbered_path(p, 240000, true),
            Path::new("out/snap.240000.json")
        );
        assert_eq!(
            numbered_path(Path::new("snap"), 7, true),
            Path::new("snap.7")
        );
    }
}
