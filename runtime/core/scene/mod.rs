//! Scene format v1 (described field by field in `scenes/README.md`): the
//! serde-free typed model of a scene file, its loader, unit parsing,
//! resource resolution and located diagnostics.
//!
//! The loader keeps every value's JSON path and line:column, so that later
//! layers (graph compile) can point at the exact place a problem comes from.

mod diag;
mod load;
mod pos;
pub mod resource;
pub mod suggest;
pub mod units;

pub use diag::{
    capped_list, escape_invisible, Diagnostic, Loc, Severity, Shown, LIST_SHOWN, MAX_SHOWN,
};
pub use load::{load_file, load_str, read_scene_text};
/// The loader's field lists and limits, which `morphrt schema` describes.
pub use load::{
    CONTROL_KEYS, DEFAULT_SAMPLE_RATE, EDGE_KEYS, EDIT_KEYS, EVENT_KEYS, FFT_NORMS,
    MAX_BEND_SEMITONES, MAX_ITERATIONS, MAX_SAMPLE_RATE, MIDI_KEYS, MODULE_KEYS, NODE_KEYS,
    NOTE_EVENT_KEYS, NOTE_KEYS, PRECISIONS, PROFILES, TARGET_KEYS, TOP_KEYS, TOP_LEVEL_SETTINGS,
};
pub use units::{seed_arg, Dimension, Musical, Quantity, Rational, Tempo, TimeArg, TimeSpec, Unit};

use crate::profile::{Overrides, Profile};
use std::path::PathBuf;

/// A raw param or event value as written in the scene. Units are interpreted
/// by the graph compiler, which knows each param's dimension.
#[derive(Clone, Debug, PartialEq)]
pub enum RawValue {
    /// A JSON number, with its literal text (times are exact decimals).
    Number {
        value: f64,
        literal: String,
    },
    /// A JSON string: a quantity with a unit, an enum value, a resource.
    Text(String),
    Bool(bool),
    Array(Vec<RawValue>),
    /// JSON null or an object: never valid for a param; kept for the error.
    Other(&'static str),
}

/// `"node"` or `"node:port"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub node: String,
    pub port: Option<String>,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.port {
            Some(p) => write!(f, "{}:{}", self.node, p),
            None => f.write_str(&self.node),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub value: RawValue,
    pub loc: Loc,
}

#[derive(Clone, Debug)]
pub struct NodeDecl {
    pub id: String,
    pub op: String,
    pub params: Vec<Param>,
    /// How long a live edit of this node's params glides (`"ramp"`);
    /// overrides the scene's `edit.ramp`.
    pub ramp: Option<TimeSpec>,
    /// Index into `Scene::modules`, if the node is declared inside one.
    pub module: Option<usize>,
    pub overrides: Overrides,
    /// Location of the node object; `op_loc` of its `op` value.
    pub loc: Loc,
    pub op_loc: Loc,
    pub overrides_loc: Option<Loc>,
}

#[derive(Clone, Debug)]
pub struct ModuleDecl {
    pub id: String,
    /// The module's `profile` merged with its `profile_overrides`, if any.
    pub overrides: Overrides,
    pub loc: Loc,
    /// `"voices": N`: the module is a voice template played by notes.
    pub voices: Option<VoicesDecl>,
}

/// A voice module's settings (`scenes/README.md`, *Voices*): how many
/// voices, what a note drives, which node's outputs are the voice's sound,
/// and how a voice is stolen and freed.
#[derive(Clone, Debug)]
pub struct VoicesDecl {
    /// 1…[`MAX_VOICES`].
    pub count: usize,
    pub count_loc: Loc,
    /// `note.pitch`, `note.gate`, `note.velocity`: `"node.param"` each.
    pub pitch: Option<NoteTarget>,
    pub gate: Option<NoteTarget>,
    pub velocity: Option<NoteTarget>,
    /// `"out"`: the node whose outputs are a voice's sound (default: the
    /// module's last node).
    pub out: Option<(String, Loc)>,
    /// `"release_end"`: a node whose output reaching silence after the
    /// gate closes frees the voice at once.
    pub release_end: Option<(String, Loc)>,
    /// `"steal_fade"`: how long a stolen voice fades out (default 5 ms).
    pub steal_fade: Option<(TimeSpec, Loc)>,
    /// `"same_note"`: `reuse` (default) plays a repeated note on the voice
    /// that already holds it; `new` takes another voice.
    pub reuse_same_note: bool,
}

/// The most voices a module may have.
pub const MAX_VOICES: usize = 256;

/// A `"node.param"` a note drives.
#[derive(Clone, Debug)]
pub struct NoteTarget {
    pub node: String,
    pub param: String,
    pub loc: Loc,
}

/// A note event: `{"time", "module", "note", "velocity", "duration"}`, a
/// note-off (`"off": true`) or the sustain pedal (`"sustain": true|false`).
#[derive(Clone, Debug)]
pub struct NoteEventDecl {
    pub time: TimeSpec,
    pub module: String,
    pub kind: NoteKind,
    /// Position in the file's `events` array.
    pub index: usize,
    pub loc: Loc,
}

/// What a note event does.
#[derive(Clone, Debug)]
pub enum NoteKind {
    /// A note starts; with a `duration` it ends by itself.
    On {
        pitch: RawValue,
        velocity: f64,
        duration: Option<TimeSpec>,
    },
    /// The note `pitch` ends.
    Off { pitch: RawValue },
    /// The sustain pedal goes down (true) or up.
    Sustain(bool),
}

#[derive(Clone, Debug)]
pub struct EdgeDecl {
    pub from: Endpoint,
    pub to: Endpoint,
    /// `"delay"`: a feedback edge, which reads its source's output from this
    /// long ago (a whole number of samples, checked by the graph compiler
    /// at the session's sample rate). Only such edges may close a loop.
    pub delay: Option<TimeSpec>,
    pub loc: Loc,
    /// Location of the `delay` value, when there is one.
    pub delay_loc: Option<Loc>,
}

#[derive(Clone, Debug)]
pub struct OutputBus {
    pub name: String,
    pub channels: Vec<(Endpoint, Loc)>,
    pub loc: Loc,
}

#[derive(Clone, Debug)]
pub struct EventDecl {
    pub time: TimeSpec,
    /// The time in beats, when it is written in beats or bars: a tempo
    /// edit while playing moves the event with the beat grid.
    pub beat: Option<Rational>,
    pub node: String,
    pub param: String,
    pub value: RawValue,
    pub ramp: Option<TimeSpec>,
    /// Position in the file's `events` array (ties keep file order).
    pub index: usize,
    pub loc: Loc,
}

/// A `controls` entry: a source (an OSC address or a MIDI message) mapped
/// onto a node's param, scaled from the source's range to `min…max`.
#[derive(Clone, Debug)]
pub struct ControlDecl {
    pub source: ControlSourceDecl,
    /// The param the source moves (for a note: the gate).
    pub target: Option<TargetDecl>,
    /// A voice module a note source plays (the `module` key).
    pub module: Option<(String, Loc)>,
    /// Note sources only: where the note's pitch and velocity go.
    pub pitch: Option<TargetDecl>,
    pub velocity: Option<TargetDecl>,
    pub ramp: Option<TimeSpec>,
    /// OSC: the argument is in the param's own unit, not 0…1.
    pub raw: bool,
    /// A MIDI note control playing a voice module: semitones the pitch
    /// bend wheel's full throw bends its voices, as written (the `bend`
    /// key beside `midi`).
    pub bend: Option<(f64, Loc)>,
    /// Position in the file's `controls` array.
    pub index: usize,
    pub loc: Loc,
}

/// A node and param a control moves, with its range and curve as written.
#[derive(Clone, Debug)]
pub struct TargetDecl {
    pub node: String,
    pub param: String,
    pub min: Option<(RawValue, Loc)>,
    pub max: Option<(RawValue, Loc)>,
    pub curve: Option<Curve>,
    pub loc: Loc,
}

/// How a control's 0…1 position maps onto `min…max`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Curve {
    /// `min + x·(max − min)`.
    #[default]
    Linear,
    /// `min·(max/min)^x`: equal steps are equal ratios (frequencies).
    Exp,
    /// Linear in decibels between `min` and `max` (amplitudes).
    Db,
}

/// The curves a control may name.
pub const CURVES: [&str; 3] = ["linear", "exp", "db"];

impl Curve {
    pub fn name(self) -> &'static str {
        match self {
            Curve::Linear => "linear",
            Curve::Exp => "exp",
            Curve::Db => "db",
        }
    }
}

/// Where a control's values come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlSourceDecl {
    /// An OSC address (`/filter/cutoff`).
    Osc(String),
    Midi(MidiSource),
}

/// A MIDI message kind a control listens to. Channels are 1…16; `None`
/// is any channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MidiSource {
    /// A controller (`cc` 0…127); with `lsb`, a 14-bit pair whose fine
    /// part comes on controller `lsb`.
    Cc {
        cc: u8,
        lsb: Option<u8>,
        channel: Option<u8>,
    },
    /// Note on/off: `note` `None` is any note.
    Note {
        note: Option<u8>,
        channel: Option<u8>,
    },
    /// Pitch bend (14-bit, centre 8192).
    Bend { channel: Option<u8> },
    /// Channel pressure (channel aftertouch, 0…127).
    Aftertouch { channel: Option<u8> },
    /// Polyphonic key pressure (poly aftertouch, 0…127 per note): onto a
    /// voice module's param, only the voice playing the pressed note moves.
    PolyAftertouch { channel: Option<u8> },
    /// Program change (0…127).
    Program { channel: Option<u8> },
}

/// Scene-level `profile_config`.
#[derive(Clone, Debug, Default)]
pub struct SceneConfig {
    pub overrides: Overrides,
    pub block_size: Option<usize>,
    pub flush_to_zero: Option<bool>,
}

/// Top-level `edit`: how a live edit of the file is applied while playing.
#[derive(Clone, Debug, Default)]
pub struct EditConfig {
    /// A changed param glides from its running value to the new one over
    /// this long (default 10 ms).
    pub ramp: Option<TimeSpec>,
    /// Structural edits and profile switches crossfade old → new over this
    /// long (default 20 ms).
    pub crossfade: Option<TimeSpec>,
}

/// A parsed scene. Nothing here is validated against the operator registry
/// yet: that is the graph compiler's work.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The file the scene came from (or a label such as `<string>`).
    pub file: String,
    /// Directory holding the scene file, for `@resource:` resolution.
    pub dir: Option<PathBuf>,
    pub version: String,
    pub profile: Option<Profile>,
    pub seed: Option<u64>,
    pub seed_loc: Option<Loc>,
    pub sample_rate: u32,
    /// Whether the scene writes `sample_rate` (else it is the default, and
    /// a render takes its input's rate).
    pub sample_rate_set: bool,
    pub duration: Option<TimeSpec>,
    /// `tempo` and `meter`: the beat grid that beats and bars are read on.
    pub tempo: Option<Tempo>,
    /// Where `duration` is written.
    pub duration_loc: Option<Loc>,
    pub config: SceneConfig,
    pub modules: Vec<ModuleDecl>,
    pub nodes: Vec<NodeDecl>,
    pub edges: Vec<EdgeDecl>,
    pub outputs: Vec<OutputBus>,
    pub outputs_loc: Option<Loc>,
    pub events: Vec<EventDecl>,
    /// The `events` that play a voice module (with `module`).
    pub notes: Vec<NoteEventDecl>,
    /// `controls`: OSC and MIDI sources mapped onto params.
    pub controls: Vec<ControlDecl>,
    pub edit: EditConfig,
    /// Warnings found while loading (unknown fields, …).
    pub warnings: Vec<Diagnostic>,
}

/// The longest length of audio any command renders or plays: 24 hours.
/// One limit for `render -d`, a scene's `duration`, `run --duration` and a
/// resumed render, so a typo cannot start a render that fills the disk
/// (24 h of 8-channel f32 at 48 kHz is 133 GB).
pub const MAX_DURATION_S: u64 = 24 * 60 * 60;

/// [`MAX_DURATION_S`] in samples at `sample_rate`.
pub fn max_duration_samples(sample_rate: u32) -> u64 {
    MAX_DURATION_S * sample_rate as u64
}

/// The limit in words, for errors: `the duration limit of 24 h (86400 s,
/// 4147200000 samples at 48000 Hz)`.
pub fn duration_limit_text(sample_rate: u32) -> String {
    format!(
        "the duration limit of 24 h ({MAX_DURATION_S} s, {} samples at {sample_rate} Hz)",
        max_duration_samples(sample_rate)
    )
}

impl Scene {
    pub fn node(&self, id: &str) -> Option<&NodeDecl> {
        self.nodes.iter().find(|n| n.id == id)
    }
}
