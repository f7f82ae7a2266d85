//! The snapshot file's versioned JSON types: the layout of a
//! `morphrt-snapshot` version-1 file, field by field in the order it is
//! written, and reading one back, its format and version checked first.

use super::numbers::{precision_name, profile_name, HexF32, HexF64, Num};
use super::SnapshotError;
use crate::dsp::Precision;
use crate::profile::Profile;
use crate::scene::Rational;
use serde::{Deserialize, Serialize};

/// The `format` field every snapshot file starts with.
pub const FORMAT: &str = "morphrt-snapshot";
/// The format version this build writes and reads; bumped on any change a
/// version-1 reader would misread.
pub const VERSION: u32 = 1;

/// The latest sample a snapshot may be taken at: 2^53, exact as an f64 and
/// thousands of years at any rate, so that the clock plus any render after
/// it stays far from overflowing.
pub const MAX_CLOCK: u64 = 1 << 53;

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
    /// Every voice module's allocator: which voice plays which note.
    /// Absent from files of scenes without voice modules (and from files
    /// written before there were any): every voice then resumes free.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub voices: Vec<PoolRecord>,
    /// The beat grid the engine played on, when its scene has a tempo.
    /// Absent from files of scenes without one (and from files written
    /// before grids were kept): a resume then plays its scene's grid from
    /// sample 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tempo: Option<TempoRecord>,
    /// What a host keeps beside the engine state to continue its own
    /// stream, under a key naming the host (the Python module's
    /// `Processor.snapshot()`: `{"python": …}`, the frames of the block
    /// under way). Absent from the command line's files; a host ignores
    /// what is not its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<serde_json::Value>,
    /// Where the file was read from, for messages.
    #[serde(skip)]
    pub(super) origin: Option<String>,
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
    /// Its delay lines, one per channel.
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
    /// The node's operator.
    pub op: String,
    /// The node's resolved profile and precision when the state was taken
    /// (state converts when it is restored at another).
    #[serde(with = "profile_name")]
    pub profile: Profile,
    /// The node's resolved precision.
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
    /// The node's failure state, when it has one (absent for a healthy node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryRecord>,
}

/// A node that failed: muted, backing off before it counts as recovered, or
/// dead after a panic (the fields of [`crate::engine::Recovery`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRecord {
    /// Muted until this absolute sample (0: not muted).
    pub muted_until: u64,
    /// The mute the next failure brings, in samples (0: none pending).
    pub wait: u64,
    /// Recovered once a clean block ends at or after this absolute sample.
    pub clear_at: u64,
    /// The node had panicked.
    pub dead: bool,
    /// A reset spread over blocks in progress: the parts of the node's own
    /// state done so far, or (once that is complete) of its edge delay lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_node: Option<u64>,
    /// The parts of the edge delay lines reset so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_lines: Option<u64>,
}

/// A named piece of node state, e.g. `{"name": "z1", "f64": "3fe0…"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateEntry {
    /// The operator's name for the entry (state is restored by name).
    pub name: String,
    /// Its value.
    #[serde(flatten)]
    pub value: StateRecord,
}

/// A state value: sample arrays as hex bit patterns, integers and flags as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateRecord {
    /// f32 samples.
    F32(HexF32),
    /// f64 samples.
    F64(HexF64),
    /// An unsigned counter.
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A flag.
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
    /// A ramp in progress toward `value`.
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
    /// The value it started from.
    pub from: Num,
    /// Absolute sample where the ramp began.
    pub start: u64,
    /// Its length in samples.
    pub len: u64,
}

/// A voice module's allocator state (the fields of
/// [`crate::engine::PoolState`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolRecord {
    /// The voice module's id; a resume matches pools by it.
    pub module: String,
    /// The sustain pedal is down.
    pub sustain: bool,
    /// Notes started and released so far: the age counter.
    pub seq: u64,
    /// Notes lost because every voice was already fading out for another.
    pub dropped: u64,
    /// Where the clearing of its voices ends (absent: none queued).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clear_until: u64,
    /// The pitch bend in semitones (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bend: Option<Num>,
    /// Every voice, in voice-index order.
    pub voices: Vec<VoiceRecord>,
    /// A legato module's notes held under the one it sounds, oldest first
    /// (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<NoteRecord>,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn is_false(x: &bool) -> bool {
    !*x
}

/// Where a voice is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseRecord {
    /// Plays nothing.
    Free,
    /// Its note is held.
    Held,
    /// Its note was released; it sounds until it is quiet.
    Released,
    /// Fading out for another note.
    Stealing,
}

/// One voice (the fields of [`crate::engine::Voice`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VoiceRecord {
    /// Where it is in its life.
    pub phase: PhaseRecord,
    /// The note it plays (the bit pattern of its pitch in Hz).
    pub key: u64,
    /// The tag of its note.
    pub tag: u64,
    /// The age counter when its note started.
    pub started: u64,
    /// The age counter when its note was released.
    pub released: u64,
    /// Its note-off came while the pedal was down.
    pub sustained: bool,
    /// Samples it has been quiet since its release.
    pub quiet: u64,
    /// While stealing: the sample its next note starts at.
    pub restart_at: u64,
    /// While stealing: the note it starts then.
    pub next: NoteRecord,
    /// Its nodes are clean from this sample on (absent: clean).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clean_at: u64,
    /// Its steal fade is over: silent until its nodes are clean.
    #[serde(default, skip_serializing_if = "is_false")]
    pub clearing: bool,
}

/// A note waiting for a stolen voice (the fields of [`crate::engine::Pending`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoteRecord {
    /// The note (the bit pattern of its pitch in Hz).
    pub key: u64,
    /// Its tag.
    pub tag: u64,
    /// Its pitch.
    pub pitch_hz: Num,
    /// Its velocity, 0 … 1.
    pub velocity: Num,
    /// Its note-off came before it started: the voice goes free instead.
    pub cancelled: bool,
}

/// The beat grid (the fields of [`crate::engine::TempoMap`]): beat `beat`
/// at absolute sample `sample`, then `samples_per_beat` samples a beat.
/// Both are exact rationals, written `"num/den"` (reduced, den > 0). A
/// beat that is not a rational of 0 or more, a beat length that is not one
/// greater than 0, or an anchor past any session is refused at its line
/// in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TempoRecord {
    /// The anchor's absolute sample.
    #[serde(deserialize_with = "anchor_sample")]
    pub sample: u64,
    /// The beat at the anchor.
    #[serde(serialize_with = "write_rational", deserialize_with = "beat")]
    pub beat: Rational,
    /// Samples a beat lasts.
    #[serde(serialize_with = "write_rational", deserialize_with = "beat_length")]
    pub samples_per_beat: Rational,
}

fn write_rational<S: serde::Serializer>(r: &Rational, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rational_text(*r))
}

fn anchor_sample<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let at = u64::deserialize(d)?;
    if at > MAX_CLOCK {
        return Err(serde::de::Error::custom(format!(
            "`tempo`: `sample` {at} is past any session (at most 2^53 = {MAX_CLOCK})"
        )));
    }
    Ok(at)
}

fn beat<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Rational, D::Error> {
    let t = String::deserialize(d)?;
    parse_rational(&t)
        .filter(|b| !b.is_negative())
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`tempo`: `beat` `{t}` is not an exact beat of 0 or more (\"num/den\", den > 0)"
            ))
        })
}

fn beat_length<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Rational, D::Error> {
    let t = String::deserialize(d)?;
    parse_rational(&t).filter(|r| r.num > 0).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "`tempo`: `samples_per_beat` `{t}` is not an exact number of samples greater than 0 (\"num/den\", den > 0)"
        ))
    })
}

/// An exact rational as `"num/den"` (how a step length is written too).
pub(super) fn rational_text(r: Rational) -> String {
    format!("{}/{}", r.num, r.den)
}

/// `"num/den"` with a denominator greater than 0 (reduced on reading).
pub(super) fn parse_rational(t: &str) -> Option<Rational> {
    let (a, b) = t.split_once('/')?;
    let (num, den) = (a.parse::<i128>().ok()?, b.parse::<i128>().ok()?);
    if den <= 0 {
        return None;
    }
    Rational::new(num, den)
}

/// A param value; enums by choice name, resources by path (their SHA-256
/// is in the file's `resources`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueRecord {
    /// A number param.
    Number(Num),
    /// An integer param.
    Integer(i64),
    /// An enum param, by choice name.
    Enum(String),
    /// A bool param.
    Bool(bool),
    /// A resource, by the path it resolved to.
    Resource(String),
    /// A mixer's gains.
    Gains(Vec<Num>),
    /// A step length in exact seconds, `"num/den"`.
    Span(String),
}

impl SnapshotFile {
    /// Parses and checks snapshot bytes: their format and version first
    /// (so a newer snapshot is named as such, not as malformed), then
    /// every field, every operator and param against this build's
    /// registry. `file` names them in errors.
    pub fn from_bytes(bytes: &[u8], file: &str) -> Result<SnapshotFile, SnapshotError> {
        #[derive(Deserialize)]
        struct Header {
            format: Option<serde_json::Value>,
            version: Option<serde_json::Value>,
        }
        let json_error = |e: serde_json::Error| match e.classify() {
            serde_json::error::Category::Eof => SnapshotError::Truncated {
                file: file.to_string(),
                source: e,
            },
            serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
                SnapshotError::Syntax {
                    file: file.to_string(),
                    source: e,
                }
            }
            serde_json::error::Category::Data => SnapshotError::Invalid {
                file: file.to_string(),
                message: strip_position(&e.to_string()),
                at: (e.line() > 0).then(|| (e.line(), e.column())),
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

    /// The serialized snapshot: pretty-printed JSON and a final newline.
    /// The same value always gives the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a snapshot serializes");
        out.push(b'\n');
        out
    }

    /// The session profile the snapshot was taken under.
    pub fn profile(&self) -> Profile {
        self.session_profile
    }

    /// What the snapshot's bytes were named when read, or a label when it
    /// was built in memory.
    pub fn origin(&self) -> String {
        self.origin
            .clone()
            .unwrap_or_else(|| "<snapshot>".to_string())
    }

    pub(crate) fn invalid(&self, message: String) -> SnapshotError {
        SnapshotError::Invalid {
            file: self.origin(),
            message,
            at: None,
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
        if self.clock > MAX_CLOCK {
            return Err(self.invalid(format!(
                "`clock` {} is past any session (at most 2^53 = {MAX_CLOCK} samples, {:.0} years at {} Hz)",
                self.clock,
                MAX_CLOCK as f64 / self.sample_rate as f64 / (365.25 * 86_400.0),
                self.sample_rate
            )));
        }
        for (k, n) in self.nodes.iter().enumerate() {
            if self.nodes[..k].iter().any(|m| m.id == n.id) {
                return Err(self.invalid(format!("node `{}` appears twice", n.id)));
            }
        }
        self.state().map(drop)
    }
}

/// Drops serde_json's " at line L column C" suffix (the error says it already).
pub(super) fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
