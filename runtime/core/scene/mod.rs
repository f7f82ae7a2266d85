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
mod split;
pub mod suggest;
pub(crate) mod units;

pub use diag::{
    capped_list, escape_invisible, Diagnostic, Loc, Severity, Shown, LIST_SHOWN, MAX_SHOWN,
};
pub use load::{load_file, load_str, read_scene_text};
/// The loader's field lists and limits, which `morphrt schema` describes.
pub(crate) use load::{
    CONTROL_KEYS, DEFAULT_SAMPLE_RATE, EDGE_KEYS, EDIT_KEYS, EVENT_KEYS, FFT_NORMS,
    MAX_BEND_SEMITONES, MAX_ITERATIONS, MAX_SAMPLE_RATE, MIDI_KEYS, MODULE_KEYS, NODE_KEYS,
    NOTE_EVENT_KEYS, PRECISIONS, PROFILES, TARGET_KEYS, TOP_KEYS, TOP_LEVEL_SETTINGS,
};
pub use split::Split;
pub use units::{seed_arg, Dimension, Musical, Quantity, Rational, Tempo, TimeArg, TimeSpec, Unit};

use crate::profile::{Overrides, Profile};
use std::path::PathBuf;

/// A raw param or event value as written in the scene. Units are interpreted
/// by the graph compiler, which knows each param's dimension.
#[derive(Clone, Debug, PartialEq)]
pub enum RawValue {
    /// A JSON number, with its literal text (times are exact decimals).
    Number {
        /// The number.
        value: f64,
        /// Its text as written (times are read from it exactly).
        literal: String,
    },
    /// A JSON string: a quantity with a unit, an enum value, a resource.
    Text(String),
    /// A JSON boolean.
    Bool(bool),
    /// A JSON array.
    Array(Vec<RawValue>),
    /// JSON null or an object: never valid for a param; kept for the error.
    Other(&'static str),
}

/// `"node"` or `"node:port"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) node: String,
    pub(crate) port: Option<String>,
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
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) value: RawValue,
    pub(crate) loc: Loc,
}

#[derive(Clone, Debug)]
pub(crate) struct NodeDecl {
    pub(crate) id: String,
    pub(crate) op: String,
    pub(crate) params: Vec<Param>,
    /// How long a live edit of this node's params glides (`"ramp"`);
    /// overrides the scene's `edit.ramp`.
    pub(crate) ramp: Option<TimeSpec>,
    /// Index into `Scene::modules`, if the node is declared inside one.
    pub(crate) module: Option<usize>,
    pub(crate) overrides: Overrides,
    /// Location of the node object; `op_loc` of its `op` value.
    pub(crate) loc: Loc,
    pub(crate) op_loc: Loc,
    pub(crate) overrides_loc: Option<Loc>,
}

#[derive(Clone, Debug)]
pub(crate) struct ModuleDecl {
    pub(crate) id: String,
    /// The module's `profile` merged with its `profile_overrides`, if any.
    pub(crate) overrides: Overrides,
    pub(crate) loc: Loc,
    /// `"voices": N`: the module is a voice template played by notes.
    pub(crate) voices: Option<VoicesDecl>,
}

/// A voice module's settings (`scenes/README.md`, *Voices*): how many
/// voices, what a note drives, which node's outputs are the voice's sound,
/// and how a voice is stolen and freed.
#[derive(Clone, Debug)]
pub(crate) struct VoicesDecl {
    /// 1…[`MAX_VOICES`].
    pub(crate) count: usize,
    /// `note.pitch`, `note.gate`, `note.velocity`: `"node.param"` each.
    pub(crate) pitch: Option<NoteTarget>,
    pub(crate) gate: Option<NoteTarget>,
    pub(crate) velocity: Option<NoteTarget>,
    /// `"out"`: the node whose outputs are a voice's sound (default: the
    /// module's last node).
    pub(crate) out: Option<(String, Loc)>,
    /// `"release_end"`: a node whose output reaching silence after the
    /// gate closes frees the voice at once.
    pub(crate) release_end: Option<(String, Loc)>,
    /// `"steal_fade"`: how long a stolen voice fades out (default 5 ms).
    pub(crate) steal_fade: Option<(TimeSpec, Loc)>,
    /// `"same_note"`: `reuse` (default) plays a repeated note on the voice
    /// that already holds it; `new` takes another voice.
    pub(crate) reuse_same_note: bool,
    /// `"legato"` (one voice only): a note-on while a note is held
    /// retunes the sounding voice instead of starting it again.
    pub(crate) legato: bool,
}

/// The most voices a module may have.
pub const MAX_VOICES: usize = 256;

/// A `"node.param"` a note drives.
#[derive(Clone, Debug)]
pub(crate) struct NoteTarget {
    pub(crate) node: String,
    pub(crate) param: String,
    pub(crate) loc: Loc,
}

/// A note event: `{"time", "module", "note", "velocity", "duration"}`, a
/// note-off (`"off": true`) or the sustain pedal (`"sustain": true|false`).
#[derive(Clone, Debug)]
pub(crate) struct NoteEventDecl {
    pub(crate) time: TimeSpec,
    pub(crate) module: String,
    pub(crate) kind: NoteKind,
    /// Position in the file's `events` array.
    pub(crate) index: usize,
    pub(crate) loc: Loc,
}

/// What a note event does.
#[derive(Clone, Debug)]
pub(crate) enum NoteKind {
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
pub(crate) struct EdgeDecl {
    pub(crate) from: Endpoint,
    pub(crate) to: Endpoint,
    /// `"delay"`: a feedback edge, which reads its source's output from this
    /// long ago (a whole number of samples, checked by the graph compiler
    /// at the session's sample rate). Only such edges may close a loop.
    pub(crate) delay: Option<TimeSpec>,
    pub(crate) loc: Loc,
    /// Location of the `delay` value, when there is one.
    pub(crate) delay_loc: Option<Loc>,
}

#[derive(Clone, Debug)]
pub(crate) struct OutputBus {
    pub(crate) name: String,
    pub(crate) channels: Vec<(Endpoint, Loc)>,
    pub(crate) loc: Loc,
}

#[derive(Clone, Debug)]
pub(crate) struct EventDecl {
    pub(crate) time: TimeSpec,
    /// The time in beats, when it is written in beats or bars: a tempo
    /// edit while playing moves the event with the beat grid.
    pub(crate) beat: Option<Rational>,
    pub(crate) node: String,
    pub(crate) param: String,
    pub(crate) value: RawValue,
    pub(crate) ramp: Option<TimeSpec>,
    /// Position in the file's `events` array (ties keep file order).
    pub(crate) index: usize,
    pub(crate) loc: Loc,
}

/// A `controls` entry: a source (an OSC address or a MIDI message) mapped
/// onto a node's param, scaled from the source's range to `min…max`.
#[derive(Clone, Debug)]
pub(crate) struct ControlDecl {
    pub(crate) source: ControlSourceDecl,
    /// The param the source moves (for a note: the gate).
    pub(crate) target: Option<TargetDecl>,
    /// A voice module a note source plays (the `module` key).
    pub(crate) module: Option<(String, Loc)>,
    /// Note sources only: where the note's pitch and velocity go.
    pub(crate) pitch: Option<TargetDecl>,
    pub(crate) velocity: Option<TargetDecl>,
    pub(crate) ramp: Option<TimeSpec>,
    /// OSC: the argument is in the param's own unit, not 0…1.
    pub(crate) raw: bool,
    /// A MIDI note control playing a voice module: semitones the pitch
    /// bend wheel's full throw bends its voices, as written (the `bend`
    /// key beside `midi`).
    pub(crate) bend: Option<(f64, Loc)>,
    /// Position in the file's `controls` array.
    pub(crate) index: usize,
    pub(crate) loc: Loc,
}

/// A node and param a control moves, with its range and curve as written.
#[derive(Clone, Debug)]
pub(crate) struct TargetDecl {
    pub(crate) node: String,
    pub(crate) param: String,
    pub(crate) min: Option<(RawValue, Loc)>,
    pub(crate) max: Option<(RawValue, Loc)>,
    pub(crate) curve: Option<Curve>,
    pub(crate) loc: Loc,
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
pub(crate) const CURVES: [&str; 3] = ["linear", "exp", "db"];

impl Curve {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Curve::Linear => "linear",
            Curve::Exp => "exp",
            Curve::Db => "db",
        }
    }
}

/// Where a control's values come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ControlSourceDecl {
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
        /// The controller number, 0…127 (the coarse part of a 14-bit pair).
        cc: u8,
        /// The controller of the fine part of a 14-bit pair, 0…127.
        lsb: Option<u8>,
        /// The channel, 1…16; `None` is any.
        channel: Option<u8>,
    },
    /// Note on/off: `note` `None` is any note.
    Note {
        /// The note number, 0…127; `None` is any.
        note: Option<u8>,
        /// The channel, 1…16; `None` is any.
        channel: Option<u8>,
    },
    /// Pitch bend (14-bit, centre 8192).
    Bend {
        /// The channel, 1…16; `None` is any.
        channel: Option<u8>,
    },
    /// Channel pressure (channel aftertouch, 0…127).
    Aftertouch {
        /// The channel, 1…16; `None` is any.
        channel: Option<u8>,
    },
    /// Polyphonic key pressure (poly aftertouch, 0…127 per note): onto a
    /// voice module's param, only the voice playing the pressed note moves.
    PolyAftertouch {
        /// The channel, 1…16; `None` is any.
        channel: Option<u8>,
    },
    /// Program change (0…127).
    Program {
        /// The channel, 1…16; `None` is any.
        channel: Option<u8>,
    },
}

/// Scene-level `profile_config`.
#[derive(Clone, Debug, Default)]
pub(crate) struct SceneConfig {
    pub(crate) overrides: Overrides,
    pub(crate) block_size: Option<usize>,
    pub(crate) flush_to_zero: Option<bool>,
}

/// Top-level `edit`: how a live edit of the file is applied while playing.
#[derive(Clone, Debug, Default)]
pub(crate) struct EditConfig {
    /// A changed param glides from its running value to the new one over
    /// this long (default 10 ms).
    pub(crate) ramp: Option<TimeSpec>,
    /// Structural edits and profile switches crossfade old → new over this
    /// long (default 20 ms).
    pub(crate) crossfade: Option<TimeSpec>,
}

/// A parsed scene. Nothing here is validated against the operator registry
/// yet: that is the graph compiler's work.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The file the scene came from (or a label such as `<string>`).
    pub file: String,
    /// Directory holding the scene file, for `@resource:` resolution.
    pub(crate) dir: Option<PathBuf>,
    pub(crate) version: String,
    /// The scene's top-level `profile`, if it names one.
    pub profile: Option<Profile>,
    pub(crate) seed: Option<u64>,
    pub(crate) seed_loc: Option<Loc>,
    /// Samples per second, in Hz.
    pub sample_rate: u32,
    /// Whether the scene writes `sample_rate` (else it is the default, and
    /// a render takes its input's rate).
    pub sample_rate_set: bool,
    pub(crate) duration: Option<TimeSpec>,
    /// `tempo` and `meter`: the beat grid that beats and bars are read on.
    pub(crate) tempo: Option<Tempo>,
    /// Where `duration` is written.
    pub(crate) duration_loc: Option<Loc>,
    pub(crate) config: SceneConfig,
    pub(crate) modules: Vec<ModuleDecl>,
    pub(crate) nodes: Vec<NodeDecl>,
    pub(crate) edges: Vec<EdgeDecl>,
    pub(crate) outputs: Vec<OutputBus>,
    pub(crate) outputs_loc: Option<Loc>,
    /// `channel_names`: a name for each channel of the `main` bus (empty:
    /// none given), which `run --device jack` names its ports after.
    pub channel_names: Vec<String>,
    pub(crate) events: Vec<EventDecl>,
    /// The `events` that play a voice module (with `module`).
    pub(crate) notes: Vec<NoteEventDecl>,
    /// `controls`: OSC and MIDI sources mapped onto params.
    pub(crate) controls: Vec<ControlDecl>,
    pub(crate) edit: EditConfig,
    /// Warnings found while loading (unknown fields, …).
    pub(crate) warnings: Vec<Diagnostic>,
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
    /// The directory `@resource:` references resolve against (the scene
    /// file's own), if the scene came from a file.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.dir.as_deref()
    }

    /// Whether any node of the scene reads the session input (op `input`).
    pub fn reads_input(&self) -> bool {
        self.nodes.iter().any(|n| n.op == "input")
    }
}

#[cfg(test)]
impl Scene {
    /// The node declared with `id`.
    pub(crate) fn node(&self, id: &str) -> Option<&NodeDecl> {
        self.nodes.iter().find(|n| n.id == id)
    }
}
