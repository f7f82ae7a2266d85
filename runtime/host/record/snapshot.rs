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
//! value, running value, ramp in progress, discrete value an event set) and
//! edge delay lines. Sample arrays are hex strings of IEEE bit patterns
//! (16 digits per f64, 8 per f32, most significant first): exact for every
//! value including NaN, infinities and -0, and compact. Scalar params are
//! JSON numbers, which round-trip exactly with serde_json's
//! `float_roundtrip`.
//!
//! Files are written atomically ([`write_atomic`]): a crash or a full disk
//! never leaves a partial snapshot under the final name.

use crate::dsp::Precision;
use crate::engine::incoming::{switch_warning, SessionFixed};
use crate::engine::{Engine, EngineState, Migration, NodeSnapshot, Notice};
use crate::graph::{CompileOptions, Plan, SeedSource};
use crate::host::files::digest::sha256_hex;
use crate::host::HostError;
use crate::ops::{
    self, AudioData, NodeState, OpSpec, ParamKind, ParamState, Ramp, StateValue, Value,
};
use crate::profile::Profile;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `format` field every snapshot file starts with.
pub const FORMAT: &str = "morphrt-snapshot";
/// The format version this build writes and reads; bumped on any change a
/// version-1 reader would misread.
pub const VERSION: u32 = 1;

/// Why a snapshot could not be read, written or resumed.
#[derive(Debug)]
pub enum SnapshotError {
    /// The snapshot file could not be read.
    Read { file: String, error: io::Error },
    /// The file ends before the JSON does: cut short or not completely written.
    Truncated {
        file: String,
        line: usize,
        column: usize,
    },
    /// The file is not JSON.
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// JSON, but not a morphrt snapshot.
    NotASnapshot { file: String },
    /// A snapshot of a format version this build does not read.
    Version { file: String, found: String },
    /// A version-1 snapshot whose content does not fit the format or this
    /// build's operators.
    Invalid { file: String, message: String },
    /// The scene runs at another sample rate than the snapshot was taken at.
    SampleRate {
        file: String,
        snapshot: u32,
        scene: u32,
    },
    /// No node of the snapshot is in the scene (same id and operator).
    NothingMatches { file: String },
    /// The snapshot could not be written.
    Write { file: String, error: io::Error },
    /// A resource file could not be read to hash it.
    Resource { file: String, error: io::Error },
    /// The captured state does not come from the engine of this context's
    /// plan (a host bug, not the user's).
    Mismatch(String),
}

impl SnapshotError {
    /// 2 for bad input (the snapshot, or a scene it does not fit), 1 for I/O
    /// failures while writing and for host bugs.
    pub fn exit_code(&self) -> i32 {
        match self {
            SnapshotError::Write { .. } | SnapshotError::Mismatch(_) => 1,
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
            SnapshotError::Truncated { file, line, column } => write!(
                f,
                "snapshot `{file}` is truncated: it ends at line {line}, column {column}, before the JSON does (was it cut short or not completely written?)"
            ),
            SnapshotError::Syntax {
                file,
                line,
                column,
                message,
            } => write!(
                f,
                "snapshot `{file}` is corrupted: not valid JSON at line {line}, column {column}: {message}"
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
            SnapshotError::Invalid { file, message } => {
                write!(f, "snapshot `{file}` is invalid: {message}")
            }
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
            SnapshotError::Write { file, error } => {
                write!(f, "cannot write snapshot `{file}`: {error}")
            }
            SnapshotError::Resource { file, error } => {
                write!(f, "cannot read resource `{file}` to hash it: {error}")
            }
            SnapshotError::Mismatch(m) => write!(f, "snapshot: {m}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

impl From<SnapshotError> for HostError {
    fn from(e: SnapshotError) -> HostError {
        match e.exit_code() {
            2 => HostError::Usage(e.to_string()),
            _ => HostError::Runtime(e.to_string()),
        }
    }
}

/// A snapshot file as it is stored (see the module docs for the layout).
/// Field order is the file's key order, so writing one is deterministic.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version, [`VERSION`].
    pub version: u32,
    /// The morphrt that wrote the file (repro and live state continues bit
    /// for bit only on the same build).
    pub morphrt_version: String,
    /// The scene the state belongs to; another one resumes by the carry rules.
    pub scene: SceneRecord,
    /// The profile every unpinned node ran under; a resume keeps it unless
    /// asked for another.
    #[serde(with = "profile_name")]
    pub session_profile: Profile,
    /// State does not carry across rates: a resume at another is refused.
    pub sample_rate: u32,
    /// A resume keeps it, so repro and live take the same blocks as the
    /// uninterrupted run.
    pub block_size: usize,
    /// The session seed; `null` when no node draws noise and none was given.
    pub seed: Option<u64>,
    /// The sample the state was taken at: the first sample a resumed engine
    /// renders.
    pub clock: u64,
    /// Every resource file the scene read, so a resume can tell a changed one.
    pub resources: Vec<ResourceRecord>,
    /// The main bus's alignment delay lines.
    pub main: BusRecord,
    /// Every node, in schedule order.
    pub nodes: Vec<NodeRecord>,
    /// Where the file was read from, for messages.
    #[serde(skip)]
    origin: Option<String>,
}

/// Which scene a snapshot was taken from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SceneRecord {
    /// The scene file as the writer named it (informational).
    pub file: String,
    /// SHA-256 of the scene file's bytes.
    pub sha256: String,
    /// SHA-256 of the node ids, operators and edges: equal when an edit
    /// only changed param values.
    pub topology_sha256: String,
}

/// A resource file the scene read, by the path it resolved to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceRecord {
    /// The path the scene's `@resource:` resolved to when the snapshot was taken.
    pub path: String,
    /// SHA-256 of the file's bytes then.
    pub sha256: String,
}

/// The main bus's alignment delay lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BusRecord {
    /// Fingerprint of the bus's sources and alignment under the session profile.
    pub sig: u64,
    /// Fingerprint of its sources and alignment alone: its delay lines carry
    /// when it matches.
    pub wiring: u64,
    pub delays: Vec<DelayRecord>,
}

/// A delay line: its contents (always stored at f64, exact for f32) and
/// write position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DelayRecord {
    /// The next write position.
    pub pos: usize,
    /// The contents, in buffer order.
    #[serde(rename = "f64")]
    pub samples: HexF64,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// Nodes match by id and operator when a snapshot resumes.
    pub id: String,
    pub op: String,
    /// The node's resolved profile and precision when the state was taken
    /// (state converts when it is restored at another).
    #[serde(with = "profile_name")]
    pub profile: Profile,
    #[serde(with = "precision_name")]
    pub precision: Precision,
    /// Structure fingerprint (op, profile, precision, wiring).
    pub sig: u64,
    /// Fingerprint of the incoming wiring: edge delay lines carry when it
    /// matches.
    pub wiring: u64,
    /// The operator's named state, in the order it writes it.
    pub state: Vec<StateEntry>,
    /// Every param of the operator, in its declared order.
    pub params: Vec<ParamRecord>,
    /// Latency-compensation delay lines of incoming edges.
    pub edges: Vec<DelayRecord>,
}

/// A named piece of node state, e.g. `{"name": "z1", "f64": "3fe0…"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateEntry {
    /// The operator's name for the entry (state is restored by name).
    pub name: String,
    #[serde(flatten)]
    pub value: StateRecord,
}

/// A state value: sample arrays as hex bit patterns, integers and flags as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateRecord {
    F32(HexF32),
    F64(HexF64),
    U64(u64),
    I64(i64),
    Bool(bool),
}

/// One param of a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamRecord {
    /// The operator's name for it (checked on load).
    pub name: String,
    /// What the scene file said (a handover compares it with the new scene's
    /// to tell an edit from an event's change).
    pub scene: ValueRecord,
    /// The running value of a number param (0 for other kinds).
    pub value: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<RampRecord>,
    /// The running value of a discrete param (enum, integer, bool), which
    /// an event may have changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<ValueRecord>,
}

/// A ramp in progress: `from` at `start` to the param's value at `start + len`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RampRecord {
    pub from: Num,
    /// Absolute sample where the ramp began.
    pub start: u64,
    /// Its length in samples.
    pub len: u64,
}

/// A param value; enums by choice name, resources by path (their SHA-256
/// is in the file's `resources`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueRecord {
    Number(Num),
    Integer(i64),
    Enum(String),
    Bool(bool),
    Resource(String),
    Gains(Vec<Num>),
}

/// An f64 that is a JSON number when finite (exact with `float_roundtrip`)
/// and a `0x…` bit-pattern string otherwise, so no value is ever lost.
#[derive(Clone, Copy, Debug)]
pub struct Num(pub f64);

impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else {
            s.serialize_str(&format!("0x{:016x}", self.0.to_bits()))
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number, or an f64 bit pattern as \"0x\" and 16 hex digits")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Num, E> {
                let bits = v
                    .strip_prefix("0x")
                    .filter(|h| h.len() == 16)
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .ok_or_else(|| E::custom(format!("`{v}` is not an f64 bit pattern")))?;
                Ok(Num(f64::from_bits(bits)))
            }
        }
        d.deserialize_any(V)
    }
}

/// f64 samples as one string of 16-hex-digit bit patterns.
#[derive(Clone, Debug, Default)]
pub struct HexF64(pub Vec<f64>);

/// f32 samples as one string of 8-hex-digit bit patterns.
#[derive(Clone, Debug, Default)]
pub struct HexF32(pub Vec<f32>);

impl PartialEq for HexF64 {
    fn eq(&self, other: &HexF64) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl PartialEq for HexF32 {
    fn eq(&self, other: &HexF32) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

fn encode_hex(values: impl ExactSizeIterator<Item = u64>, digits: usize) -> String {
    let mut out = Vec::with_capacity(values.len() * digits);
    for v in values {
        for k in (0..digits).rev() {
            out.push(HEX_DIGITS[((v >> (4 * k)) & 15) as usize]);
        }
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

fn decode_hex(text: &str, digits: usize) -> Result<Vec<u64>, String> {
    let bytes = text.as_bytes();
    if bytes.len() % digits != 0 {
        return Err(format!(
            "a sample array of {} hex digits is not a whole number of {digits}-digit values",
            bytes.len()
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() / digits);
    for (i, chunk) in bytes.chunks_exact(digits).enumerate() {
        let mut v = 0u64;
        for (j, &c) in chunk.iter().enumerate() {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => {
                    return Err(format!(
                        "byte 0x{c:02x} at offset {} of a sample array is not a hex digit",
                        i * digits + j
                    ))
                }
            };
            v = v << 4 | d as u64;
        }
        out.push(v);
    }
    Ok(out)
}

impl Serialize for HexF64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode_hex(self.0.iter().map(|x| x.to_bits()), 16))
    }
}

impl Serialize for HexF32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode_hex(self.0.iter().map(|x| x.to_bits() as u64), 8))
    }
}

impl<'de> Deserialize<'de> for HexF64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HexF64, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bits = decode_hex(&s, 16).map_err(serde::de::Error::custom)?;
        Ok(HexF64(bits.into_iter().map(f64::from_bits).collect()))
    }
}

impl<'de> Deserialize<'de> for HexF32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HexF32, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bits = decode_hex(&s, 8).map_err(serde::de::Error::custom)?;
        Ok(HexF32(
            bits.into_iter().map(|b| f32::from_bits(b as u32)).collect(),
        ))
    }
}

mod profile_name {
    use crate::profile::Profile;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Profile, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Profile, D::Error> {
        let s = String::deserialize(d)?;
        Profile::parse(&s).ok_or_else(|| {
            D::Error::custom(format!(
                "`{s}` is not a profile (valid: strict, repro, live)"
            ))
        })
    }
}

mod precision_name {
    use crate::dsp::Precision;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Precision, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Precision, D::Error> {
        let s = String::deserialize(d)?;
        Precision::parse(&s)
            .ok_or_else(|| D::Error::custom(format!("`{s}` is not a precision (valid: f32, f64)")))
    }
}

/// What a node looked like when its plan was compiled.
#[derive(Clone, Debug)]
struct NodeInfo {
    id: String,
    op: &'static str,
    profile: Profile,
    precision: Precision,
}

/// Everything a snapshot records that the engine state does not hold: the
/// scene's identity, the session constants, each node's resolved profile
/// and precision, and the resources' SHA-256. Built once per compiled plan
/// (off the audio thread: it hashes the resource files), it turns any
/// [`EngineState`] captured from that plan's engine into a file, and
/// resumes a snapshot into that engine.
#[derive(Clone, Debug)]
pub struct SnapshotContext {
    scene: SceneRecord,
    sample_rate: u32,
    block_size: usize,
    seed: Option<u64>,
    nodes: Vec<NodeInfo>,
    resources: Vec<ResourceRecord>,
}

/// A snapshot written to disk.
#[derive(Clone, Debug)]
pub struct Written {
    /// Where the snapshot now is.
    pub path: PathBuf,
    /// The file's size.
    pub bytes: u64,
    /// From the captured state to a durable file: conversion, JSON, write,
    /// fsync and rename.
    pub elapsed: Duration,
}

/// What resuming a snapshot did.
#[derive(Clone, Debug)]
pub struct Resumed {
    /// The sample the engine now stands at (the snapshot's clock).
    pub clock: u64,
    /// Which nodes carried and which start fresh.
    pub migration: Migration,
    /// One line per warning and per node that does not simply continue
    /// (starts fresh, is gone, or glides to an edited value), for the user.
    pub messages: Vec<String>,
}

/// The scene's structure as text lines: node ids and operators, edges by
/// port name, and the main bus.
fn topology_sha256(plan: &Plan) -> String {
    let mut lines = Vec::new();
    let src = |s: &crate::graph::SourceRef| {
        let n = &plan.nodes[s.node];
        format!(
            "{}:{}",
            n.id,
            n.op.outputs.get(s.port).copied().unwrap_or("?")
        )
    };
    // An ordinary edge's line is as it always was, so snapshots written
    // before feedback edges existed still match their scenes.
    let feedback = |s: &crate::graph::SourceRef| {
        if s.is_feedback() {
            format!(" delay {}", s.feedback)
        } else {
            String::new()
        }
    };
    for n in &plan.nodes {
        lines.push(format!("node {} {}", n.id, n.op.name));
        for (k, srcs) in n.inputs.iter().enumerate() {
            let port = match n.op.inputs.get(k) {
                Some(p) if !n.op.variadic_inputs => p.to_string(),
                _ => format!("in{k}"),
            };
            for s in srcs {
                lines.push(format!("edge {} -> {}:{port}{}", src(s), n.id, feedback(s)));
            }
        }
        for (k, srcs) in n.param_inputs.iter().enumerate() {
            let port = n.op.params.get(k).map_or("?", |p| p.name);
            for s in srcs {
                lines.push(format!("edge {} -> {}:{port}{}", src(s), n.id, feedback(s)));
            }
        }
    }
    for (c, s) in plan.main.iter().enumerate() {
        lines.push(format!("main {c} <- {}", src(s)));
    }
    lines.sort();
    sha256_hex(lines.join("\n").as_bytes())
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

impl SnapshotContext {
    /// Records `plan` (before it is moved into its [`Engine`]) and the text
    /// of the scene file it was compiled from; hashes the resource files.
    pub fn new(plan: &Plan, scene_text: &str) -> Result<SnapshotContext, SnapshotError> {
        let mut resources = Vec::new();
        for (_, path) in &plan.resources {
            let bytes = std::fs::read(path).map_err(|error| SnapshotError::Resource {
                file: display(path),
                error,
            })?;
            resources.push(ResourceRecord {
                path: display(path),
                sha256: sha256_hex(&bytes),
            });
        }
        Ok(SnapshotContext {
            scene: SceneRecord {
                file: plan.file.clone(),
                sha256: sha256_hex(scene_text.as_bytes()),
                topology_sha256: topology_sha256(plan),
            },
            sample_rate: plan.sample_rate,
            block_size: plan.block_size,
            seed: match plan.seed {
                SeedSource::None => None,
                SeedSource::Given(s) | SeedSource::Auto(s) => Some(s),
            },
            nodes: plan
                .nodes
                .iter()
                .map(|n| NodeInfo {
                    id: n.id.clone(),
                    op: n.op.name,
                    profile: n.profile.profile,
                    precision: n.profile.precision,
                })
                .collect(),
            resources,
        })
    }

    /// SHA-256 of the scene file this context was built from.
    pub fn scene_sha256(&self) -> &str {
        &self.scene.sha256
    }

    /// The file for `st`, a state captured from this context's engine.
    pub fn file(&self, st: &EngineState) -> Result<SnapshotFile, SnapshotError> {
        if st.nodes.len() != self.nodes.len()
            || st
                .nodes
                .iter()
                .zip(&self.nodes)
                .any(|(s, n)| s.id != n.id || s.op != n.op)
        {
            return Err(SnapshotError::Mismatch(
                "the captured state does not come from this scene's engine".to_string(),
            ));
        }
        let nodes = st
            .nodes
            .iter()
            .zip(&self.nodes)
            .map(|(s, n)| node_record(s, n))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SnapshotFile {
            format: FORMAT.to_string(),
            version: VERSION,
            morphrt_version: env!("CARGO_PKG_VERSION").to_string(),
            scene: self.scene.clone(),
            session_profile: st.profile,
            sample_rate: self.sample_rate,
            block_size: self.block_size,
            seed: self.seed,
            clock: st.clock,
            resources: self.resources.clone(),
            main: BusRecord {
                sig: st.main_sig,
                wiring: st.main_wiring,
                delays: st.main.iter().map(delay_record).collect(),
            },
            nodes,
            origin: None,
        })
    }

    /// Writes `st` (captured from this context's engine) to `path`
    /// atomically. Allocates and does I/O: never on the audio thread.
    pub fn write(&self, st: &EngineState, path: &Path) -> Result<Written, SnapshotError> {
        let start = Instant::now();
        let file = self.file(st)?;
        let bytes = file.write_file(path)?;
        Ok(Written {
            path: path.to_path_buf(),
            bytes,
            elapsed: start.elapsed(),
        })
    }

    /// Carries `snap` into `engine` (freshly built from this context's plan)
    /// by the handover's carry rules: nodes with the same id and operator
    /// take their state, converting precision; the rest start fresh, and
    /// each is named in [`Resumed::messages`]. A snapshot of another scene
    /// version, profile, block size or seed is a warning; another sample
    /// rate, or no node in common, is an error.
    pub fn resume(
        &self,
        snap: &SnapshotFile,
        engine: &mut Engine,
    ) -> Result<Resumed, SnapshotError> {
        let file = snap.origin();
        if snap.sample_rate != engine.sample_rate() {
            return Err(SnapshotError::SampleRate {
                file,
                snapshot: snap.sample_rate,
                scene: engine.sample_rate(),
            });
        }
        let common = snap
            .nodes
            .iter()
            .filter(|r| self.nodes.iter().any(|n| n.id == r.id && n.op == r.op))
            .count();
        if common == 0 && !snap.nodes.is_empty() {
            return Err(SnapshotError::NothingMatches { file });
        }
        let state = snap.state()?;
        let mut messages = Vec::new();
        let warn = |m: String| format!("warning: snapshot `{file}`: {m}");
        if snap.scene.sha256 != self.scene.sha256 {
            let how = if snap.scene.topology_sha256 == self.scene.topology_sha256 {
                "same nodes and edges, other values"
            } else {
                "other nodes or edges"
            };
            messages.push(warn(format!(
                "taken from another version of the scene ({how}); state carries by node id and operator"
            )));
        }
        if snap.session_profile != engine.profile() {
            messages.push(warn(format!(
                "taken under {}, resuming under {}",
                snap.session_profile,
                engine.profile()
            )));
            if let Some(w) = switch_warning(snap.session_profile, engine.profile()) {
                messages.push(format!("warning: {w}"));
            }
        }
        if snap.block_size != engine.block_size() {
            messages.push(warn(format!(
                "taken at block size {}, resuming at {}: repro and live output may differ from an uninterrupted run",
                snap.block_size,
                engine.block_size()
            )));
        }
        if snap.seed != self.seed {
            messages.push(warn(format!(
                "taken with seed {}, resuming with seed {}: noise differs from an uninterrupted run",
                seed_text(snap.seed),
                seed_text(self.seed)
            )));
        }
        if snap.morphrt_version != env!("CARGO_PKG_VERSION") {
            messages.push(warn(format!(
                "written by morphrt {}, resuming with {}: only strict output continues bit for bit across builds",
                snap.morphrt_version,
                env!("CARGO_PKG_VERSION")
            )));
        }
        for r in &snap.resources {
            if self.resources.iter().any(|o| o.sha256 == r.sha256) {
                continue;
            }
            let short: String = r.sha256.chars().take(12).collect();
            let what = match std::fs::read(&r.path) {
                Err(_) => "which is missing".to_string(),
                Ok(b) => {
                    let now = sha256_hex(&b);
                    if now == r.sha256 {
                        "which this scene does not read".to_string()
                    } else {
                        format!("which has changed since (sha256 now {})", &now[..12])
                    }
                }
            };
            messages.push(warn(format!(
                "taken with resource `{}` (sha256 {short}…), {what}; nodes that read it carry state computed from the old file",
                r.path
            )));
        }
        let migration = engine.migrate(&state, state.clock);
        for n in &migration.notices {
            messages.push(match n {
                Notice::Added { id } => {
                    format!("node `{id}` is not in the snapshot: it starts fresh")
                }
                Notice::Removed { id } => {
                    format!("node `{id}` of the snapshot is not in the scene: its state is dropped")
                }
                other => other.to_string(),
            });
        }
        Ok(Resumed {
            clock: engine.clock(),
            migration,
            messages,
        })
    }
}

fn seed_text(s: Option<u64>) -> String {
    s.map_or_else(|| "none".to_string(), |s| s.to_string())
}

fn delay_record((data, pos): &(Vec<f64>, usize)) -> DelayRecord {
    DelayRecord {
        pos: *pos,
        samples: HexF64(data.clone()),
    }
}

fn node_record(s: &NodeSnapshot, n: &NodeInfo) -> Result<NodeRecord, SnapshotError> {
    let spec = ops::lookup(s.op)
        .ok_or_else(|| SnapshotError::Mismatch(format!("no operator `{}`", s.op)))?;
    let k = spec.params.len();
    if s.params.len() != k || s.scene_values.len() != k {
        return Err(SnapshotError::Mismatch(format!(
            "node `{}` has {} param states and {} scene values for {k} params of `{}`",
            s.id,
            s.params.len(),
            s.scene_values.len(),
            spec.name
        )));
    }
    let mut params = Vec::with_capacity(k);
    for (i, p) in spec.params.iter().enumerate() {
        let current = match s.discrete.iter().find(|(j, _)| *j == i) {
            Some((_, v)) => Some(value_record(spec, i, v, &s.id)?),
            None => None,
        };
        params.push(ParamRecord {
            name: p.name.to_string(),
            scene: value_record(spec, i, &s.scene_values[i], &s.id)?,
            value: Num(s.params[i].value),
            ramp: s.params[i].ramp.map(|r| RampRecord {
                from: Num(r.from),
                start: r.start,
                len: r.len,
            }),
            current,
        });
    }
    Ok(NodeRecord {
        id: s.id.clone(),
        op: s.op.to_string(),
        profile: n.profile,
        precision: n.precision,
        sig: s.sig,
        wiring: s.wiring,
        state: s
            .state
            .entries
            .iter()
            .map(|(name, v)| StateEntry {
                name: name.to_string(),
                value: match v {
                    StateValue::F32(x) => StateRecord::F32(HexF32(x.clone())),
                    StateValue::F64(x) => StateRecord::F64(HexF64(x.clone())),
                    StateValue::U64(x) => StateRecord::U64(*x),
                    StateValue::I64(x) => StateRecord::I64(*x),
                    StateValue::Bool(x) => StateRecord::Bool(*x),
                },
            })
            .collect(),
        params,
        edges: s.edges.iter().map(delay_record).collect(),
    })
}

fn value_record(
    spec: &OpSpec,
    i: usize,
    v: &Value,
    id: &str,
) -> Result<ValueRecord, SnapshotError> {
    Ok(match v {
        Value::Number(x) => ValueRecord::Number(Num(*x)),
        Value::Integer(x) => ValueRecord::Integer(*x),
        Value::Enum(k) => match spec.params[i].kind {
            ParamKind::Enum { choices, .. } if *k < choices.len() => {
                ValueRecord::Enum(choices[*k].to_string())
            }
            _ => {
                return Err(SnapshotError::Mismatch(format!(
                    "node `{id}`: choice {k} of `{}` does not exist",
                    spec.params[i].name
                )))
            }
        },
        Value::Bool(b) => ValueRecord::Bool(*b),
        Value::Resource(a) => ValueRecord::Resource(display(&a.path)),
        Value::Gains(g) => ValueRecord::Gains(g.iter().map(|x| Num(*x)).collect()),
    })
}

impl SnapshotFile {
    /// Reads and checks a snapshot file: its format and version first (so
    /// a newer file is named as such, not as malformed), then every field,
    /// every operator and param against this build's registry.
    pub fn read(path: &Path) -> Result<SnapshotFile, SnapshotError> {
        let file = display(path);
        let bytes = std::fs::read(path).map_err(|error| SnapshotError::Read {
            file: file.clone(),
            error,
        })?;
        SnapshotFile::from_bytes(&bytes, &file)
    }

    /// Parses and checks snapshot bytes; `file` names them in errors.
    pub fn from_bytes(bytes: &[u8], file: &str) -> Result<SnapshotFile, SnapshotError> {
        #[derive(Deserialize)]
        struct Header {
            format: Option<serde_json::Value>,
            version: Option<serde_json::Value>,
        }
        let json_error = |e: serde_json::Error| match e.classify() {
            serde_json::error::Category::Eof => SnapshotError::Truncated {
                file: file.to_string(),
                line: e.line(),
                column: e.column(),
            },
            serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
                SnapshotError::Syntax {
                    file: file.to_string(),
                    line: e.line(),
                    column: e.column(),
                    message: strip_position(&e.to_string()),
                }
            }
            serde_json::error::Category::Data => SnapshotError::Invalid {
                file: file.to_string(),
                message: e.to_string(),
            },
        };
        let header: Header = serde_json::from_slice(bytes).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => SnapshotError::NotASnapshot {
                file: file.to_string(),
            },
            _ => json_error(e),
        })?;
        if header.format.as_ref().and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(SnapshotError::NotASnapshot {
                file: file.to_string(),
            });
        }
        match &header.version {
            Some(v) if v.as_u64() == Some(VERSION as u64) => {}
            Some(v) => {
                return Err(SnapshotError::Version {
                    file: file.to_string(),
                    found: v.to_string(),
                })
            }
            None => {
                return Err(SnapshotError::Version {
                    file: file.to_string(),
                    found: "(none)".to_string(),
                })
            }
        }
        let mut snap: SnapshotFile = serde_json::from_slice(bytes).map_err(json_error)?;
        snap.origin = Some(file.to_string());
        snap.check()?;
        Ok(snap)
    }

    /// The serialized file: pretty-printed JSON and a final newline. The
    /// same value always gives the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_json(&mut out).expect("writing to memory");
        out
    }

    fn write_json(&self, w: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, self)?;
        w.write_all(b"\n")
    }

    /// Writes the file atomically to `path`; returns its size in bytes.
    pub fn write_file(&self, path: &Path) -> Result<u64, SnapshotError> {
        write_atomic(path, |w| self.write_json(w)).map_err(|error| SnapshotError::Write {
            file: display(path),
            error,
        })
    }

    /// The session profile the snapshot was taken under.
    pub fn profile(&self) -> Profile {
        self.session_profile
    }

    /// The file the snapshot was read from, or a label when it was built in memory.
    pub fn origin(&self) -> String {
        self.origin
            .clone()
            .unwrap_or_else(|| "<snapshot>".to_string())
    }

    /// Compile options for an offline engine that resumes this snapshot:
    /// its block size and seed, under `profile` (default: the snapshot's),
    /// at the scene's own sample rate (a render writes at the scene's rate;
    /// [`SnapshotContext::resume`] refuses another rate than the snapshot's).
    pub fn compile_options(
        &self,
        profile: Option<Profile>,
        resource_dirs: Vec<PathBuf>,
    ) -> CompileOptions {
        CompileOptions {
            profile: Some(profile.unwrap_or(self.session_profile)),
            block_size: Some(self.block_size),
            seed: self.seed,
            resource_dirs,
            ..CompileOptions::default()
        }
    }

    /// The session constants a resumed `run` keeps: the snapshot's block
    /// size, sample rate and seed.
    pub fn session_fixed(&self, resource_dirs: Vec<PathBuf>) -> SessionFixed {
        SessionFixed {
            block_size: self.block_size,
            sample_rate: self.sample_rate,
            seed: self.seed,
            resource_dirs,
            pinned: Vec::new(),
        }
    }

    fn invalid(&self, message: String) -> SnapshotError {
        SnapshotError::Invalid {
            file: self.origin(),
            message,
        }
    }

    /// Everything [`state`](Self::state) relies on, checked once on read.
    fn check(&self) -> Result<(), SnapshotError> {
        if self.sample_rate == 0 {
            return Err(self.invalid("`sample_rate` is 0".to_string()));
        }
        if self.block_size == 0 || self.block_size > crate::profile::MAX_BLOCK_SIZE {
            return Err(self.invalid(format!(
                "`block_size` {} is out of range (1 … {})",
                self.block_size,
                crate::profile::MAX_BLOCK_SIZE
            )));
        }
        for (k, n) in self.nodes.iter().enumerate() {
            if self.nodes[..k].iter().any(|m| m.id == n.id) {
                return Err(self.invalid(format!("node `{}` appears twice", n.id)));
            }
        }
        self.state().map(drop)
    }

    /// The engine state the file holds, ready for [`Engine::migrate`].
    /// Resources are placeholders carrying only their path: a resume keeps
    /// the engine's own, and the file's SHA-256 tells whether they changed.
    pub fn state(&self) -> Result<EngineState, SnapshotError> {
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for r in &self.nodes {
            nodes.push(self.node_snapshot(r)?);
        }
        Ok(EngineState {
            clock: self.clock,
            // Event cursors are recomputed from the clock by `migrate`.
            next_event: 0,
            nodes,
            main: self
                .main
                .delays
                .iter()
                .map(|d| (d.samples.0.clone(), d.pos))
                .collect(),
            profile: self.session_profile,
            main_sig: self.main.sig,
            main_wiring: self.main.wiring,
        })
    }

    fn node_snapshot(&self, r: &NodeRecord) -> Result<NodeSnapshot, SnapshotError> {
        let bad = |m: String| self.invalid(format!("node `{}` (`{}`): {m}", r.id, r.op));
        let spec = ops::lookup(&r.op).ok_or_else(|| {
            bad(format!(
                "this morphrt has no operator `{}` (operators: {})",
                r.op,
                ops::registry()
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let names: Vec<&str> = r.params.iter().map(|p| p.name.as_str()).collect();
        let want: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
        if names != want {
            return Err(bad(format!(
                "params [{}] do not match this build's `{}` params [{}]",
                names.join(", "),
                spec.name,
                want.join(", ")
            )));
        }
        for (k, e) in r.state.iter().enumerate() {
            if r.state[..k].iter().any(|f| f.name == e.name) {
                return Err(bad(format!("state `{}` appears twice", e.name)));
            }
        }
        let mut params = Vec::with_capacity(r.params.len());
        let mut discrete = Vec::new();
        let mut scene_values = Vec::with_capacity(r.params.len());
        for (i, p) in r.params.iter().enumerate() {
            params.push(ParamState {
                value: p.value.0,
                ramp: p.ramp.as_ref().map(|m| Ramp {
                    from: m.from.0,
                    start: m.start,
                    len: m.len,
                }),
            });
            scene_values.push(self.value(spec, i, &p.scene).map_err(&bad)?);
            if let Some(c) = &p.current {
                let v = self.value(spec, i, c).map_err(&bad)?;
                if !matches!(v, Value::Enum(_) | Value::Integer(_) | Value::Bool(_)) {
                    return Err(bad(format!(
                        "`{}`: only enum, integer and bool params have a `current` value",
                        p.name
                    )));
                }
                discrete.push((i, v));
            }
        }
        Ok(NodeSnapshot {
            id: r.id.clone(),
            op: spec.name,
            state: NodeState {
                entries: r
                    .state
                    .iter()
                    .map(|e| {
                        let v = match &e.value {
                            StateRecord::F32(x) => StateValue::F32(x.0.clone()),
                            StateRecord::F64(x) => StateValue::F64(x.0.clone()),
                            StateRecord::U64(x) => StateValue::U64(*x),
                            StateRecord::I64(x) => StateValue::I64(*x),
                            StateRecord::Bool(x) => StateValue::Bool(*x),
                        };
                        (Cow::Owned(e.name.clone()), v)
                    })
                    .collect(),
            },
            params,
            discrete,
            edges: r
                .edges
                .iter()
                .map(|d| (d.samples.0.clone(), d.pos))
                .collect(),
            scene_values,
            sig: r.sig,
            wiring: r.wiring,
        })
    }

    fn value(&self, spec: &OpSpec, i: usize, v: &ValueRecord) -> Result<Value, String> {
        let p = &spec.params[i];
        Ok(match v {
            ValueRecord::Number(x) => Value::Number(x.0),
            ValueRecord::Integer(x) => Value::Integer(*x),
            ValueRecord::Bool(b) => Value::Bool(*b),
            ValueRecord::Gains(g) => Value::Gains(g.iter().map(|x| x.0).collect()),
            ValueRecord::Enum(name) => match p.kind {
                ParamKind::Enum { choices, .. } => {
                    Value::Enum(choices.iter().position(|c| c == name).ok_or_else(|| {
                        format!(
                            "`{name}` is not a `{}` (valid: {})",
                            p.name,
                            choices.join(", ")
                        )
                    })?)
                }
                _ => return Err(format!("`{}` is not an enum param", p.name)),
            },
            ValueRecord::Resource(path) => {
                if !self.resources.iter().any(|r| r.path == *path) {
                    return Err(format!(
                        "`{}` reads resource `{path}`, which the file's `resources` does not list",
                        p.name
                    ));
                }
                Value::Resource(Arc::new(AudioData {
                    path: PathBuf::from(path),
                    sample_rate: 0,
                    channels: Vec::new(),
                }))
            }
        })
    }
}

/// Drops serde_json's " at line L column C" suffix (the error says it already).
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Writes a file so that `path` holds either its old content or the whole
/// new one, never a part: `write` fills a temporary file in the same
/// directory, which is flushed to disk (fsync) and renamed over `path`;
/// the directory is synced so the rename survives a crash. On any failure
/// the temporary file is removed. Returns the size written.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<u64> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.{}.partial",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let mut w = io::BufWriter::with_capacity(1 << 16, f);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        let len = f.metadata()?.len();
        drop(f);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            // Not every platform can sync a directory; the file itself is durable.
            let _ = d.sync_all();
        }
        Ok(len)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::compile;

    /// Every kind of value a snapshot holds: noise (seeded), a ramp in
    /// progress, an enum an event changed, gains, a resource, a delay line.
    const SCENE: &str = r#"{ "version": "1.0", "seed": 9, "sample_rate": 48000,
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

    fn build(profile: Profile) -> (Plan, String) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let scene = crate::scene::load_str(SCENE, "t.json", Some(root)).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(profile),
                ..CompileOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{}", e[0]));
        (plan, SCENE.to_string())
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "morphrt-snapshot-unit-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn sample_arrays_keep_every_bit() {
        let f64s = vec![
            0.0,
            -0.0,
            1.0,
            f64::MIN_POSITIVE / 3.0,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(0x7ff8_0000_dead_beef),
            0.1 + 0.2,
        ];
        let json = serde_json::to_string(&HexF64(f64s.clone())).unwrap();
        assert!(json.starts_with("\"0000000000000000"));
        let back: HexF64 = serde_json::from_str(&json).unwrap();
        assert_eq!(back, HexF64(f64s.clone()));
        let f32s: Vec<f32> = vec![0.1, -0.0, 1e-40, f32::NAN, 16_777_217.0];
        let back: HexF32 =
            serde_json::from_str(&serde_json::to_string(&HexF32(f32s.clone())).unwrap()).unwrap();
        assert_eq!(back, HexF32(f32s));
        assert!(serde_json::from_str::<HexF64>("\"3ff00000000000\"").is_err());
        assert!(serde_json::from_str::<HexF32>("\"3f80000g\"").is_err());
        for x in f64s {
            let back: Num = serde_json::from_str(&serde_json::to_string(&Num(x)).unwrap()).unwrap();
            assert_eq!(back, Num(x), "{x:e}");
        }
    }

    #[test]
    fn state_round_trips_through_the_file_exactly() {
        let (plan, text) = build(Profile::Repro);
        let cx = SnapshotContext::new(&plan, &text).unwrap();
        let mut e = Engine::new(plan);
        crate::engine::render_to_vec(&mut e, 1500);
        let st = e.snapshot();
        // What the scene exercises is really in the state.
        let osc = &st.nodes.iter().find(|n| n.id == "osc").unwrap().params[0];
        assert!(osc.ramp.is_some(), "the freq ramp is in progress");
        let lp = st.nodes.iter().find(|n| n.id == "lp").unwrap();
        assert_eq!(
            lp.discrete[0],
            (0, Value::Enum(1)),
            "the event set highpass"
        );
        let file = cx.file(&st).unwrap();
        assert_eq!(file.resources.len(), 1);
        let bytes = file.to_bytes();
        let back = SnapshotFile::from_bytes(&bytes, "t.snap").unwrap();
        assert_eq!(back.to_bytes(), bytes, "read and written again: same bytes");
        let mut got = back.state().unwrap();
        // Cursors are recomputed on restore; resources come back as placeholders.
        got.next_event = st.next_event;
        for (g, s) in got.nodes.iter_mut().zip(&st.nodes) {
            for (gv, sv) in g.scene_values.iter_mut().zip(&s.scene_values) {
                if let (Value::Resource(a), Value::Resource(b)) = (&*gv, sv) {
                    assert_eq!(a.path, b.path);
                    *gv = sv.clone();
                }
            }
        }
        assert_eq!(got, st);
    }

    #[test]
    fn a_restored_engine_continues_bit_for_bit_and_snapshots_identically() {
        for profile in Profile::ALL {
            let (plan, text) = build(profile);
            let cx = SnapshotContext::new(&plan, &text).unwrap();
            let mut a = Engine::new(plan);
            crate::engine::render_to_vec(&mut a, 1500);
            let bytes = cx.file(&a.snapshot()).unwrap().to_bytes();
            let snap = SnapshotFile::from_bytes(&bytes, "t.snap").unwrap();
            let (plan, _) = build(profile);
            let mut b = Engine::new(plan);
            let r = cx.resume(&snap, &mut b).unwrap();
            assert!(r.messages.is_empty(), "{profile}: {:?}", r.messages);
            assert_eq!(r.migration.carried, 6);
            assert_eq!(
                cx.file(&b.snapshot()).unwrap().to_bytes(),
                bytes,
                "{profile}: restored then snapshotted again"
            );
            let want = crate::engine::render_to_vec(&mut a, 3000);
            let got = crate::engine::render_to_vec(&mut b, 3000);
            assert!(want[0].iter().any(|x| *x != 0.0));
            assert!(
                want.iter()
                    .flatten()
                    .zip(got.iter().flatten())
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{profile}: the restored engine continues differently"
            );
        }
    }

    #[test]
    fn bad_files_are_named_for_what_is_wrong() {
        let (plan, text) = build(Profile::Live);
        let cx = SnapshotContext::new(&plan, &text).unwrap();
        let good =
            String::from_utf8(cx.file(&Engine::new(plan).snapshot()).unwrap().to_bytes()).unwrap();
        let err = |s: &str| SnapshotFile::from_bytes(s.as_bytes(), "x.snap").unwrap_err();
        let e = err(&good[..good.len() / 2]);
        assert!(matches!(e, SnapshotError::Truncated { .. }), "{e}");
        assert!(e.to_string().contains("`x.snap` is truncated"), "{e}");
        let e = err(&good.replacen("\"clock\":", "\"clock\";", 1));
        assert!(matches!(e, SnapshotError::Syntax { .. }), "{e}");
        let e = err(&good.replacen("\"version\": 1,", "\"version\": 2,", 1));
        assert!(e.to_string().contains("format version 2"), "{e}");
        assert!(matches!(err(SCENE), SnapshotError::NotASnapshot { .. }));
        assert!(matches!(err("[1, 2]"), SnapshotError::NotASnapshot { .. }));
        let e = err(&good.replacen("\"op\": \"biquad\"", "\"op\": \"biquadd\"", 1));
        assert!(e.to_string().contains("no operator `biquadd`"), "{e}");
        let e = err(&good.replacen("\"name\": \"cutoff\"", "\"name\": \"cut\"", 1));
        assert!(e.to_string().contains("node `lp`"), "{e}");
        let e = err(&good.replacen("\"enum\": \"lowpass\"", "\"enum\": \"lowpas\"", 1));
        assert!(e.to_string().contains("`lowpas` is not a `mode`"), "{e}");
        let e = err(&good.replacen("\"f32\": \"", "\"f32\": \"z", 1));
        assert!(e.to_string().contains("not a whole number"), "{e}");
        let e = err(&good.replacen(
            "\"session_profile\": \"live\"",
            "\"session_profile\": \"fast\"",
            1,
        ));
        assert!(e.to_string().contains("`fast` is not a profile"), "{e}");
        for e in [
            err(&good[..10]),
            err(&good.replacen("\"version\": 1,", "\"version\": 2,", 1)),
        ] {
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn atomic_write_never_leaves_a_partial_file() {
        let d = temp("atomic");
        let path = d.join("s.json");
        assert_eq!(write_atomic(&path, |w| w.write_all(b"old")).unwrap(), 3);
        let failed = write_atomic(&path, |w| {
            w.write_all(b"new and half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"old",
            "the old file stays whole"
        );
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("s.json")],
            "no temporary file is left"
        );
        assert!(write_atomic(&d.join("missing/s.json"), |w| w.write_all(b"x")).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

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
