//! Graph compile: a parsed [`Scene`](crate::scene::Scene) becomes a [`Plan`] — every node's
//! profile resolved, params converted and checked, edges validated against
//! the operator registry, cast rules applied, feedback edges (`"delay"`)
//! resolved to whole samples and every cycle that does not pass through one
//! rejected, a deterministic topological schedule of the ordinary edges,
//! events placed on the sample clock, and every node built (prepared) at its
//! precision and math policy. No pass recurses along the graph, so the
//! depth of a scene's chains never bounds what compiles.
//!
//! All problems are collected, each located in the scene file; a plan is
//! returned only when there is none (never a partial scene).

mod compile;
pub(crate) mod controls;
mod report;
pub mod schema;
mod voice_report;

pub use compile::{
    auto_seed, compile, midi_note_hz, voice_node_id, CompileOptions, Resolved, Resolver,
};
pub use controls::{
    ControlMap, ControlSource, ControlTarget, ControlValue, TargetRange, VoiceParam,
    DEFAULT_BEND_SEMITONES,
};
pub use report::{
    check_json, check_table, check_warnings, conversion_json, deadline_risks, estimated_rtf,
    events_after_end, inputs_text, node_cost_ns, plan_cost_ns, slow_render_warning, DeadlineRisk,
};

use crate::ops::{AnyNode, OpSpec, Value};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Diagnostic;

/// Where a signal comes from: a node (schedule index) and one of its
/// outputs, plus the delay that aligns it with the other inputs of its
/// destination (latency compensation; 0 almost always).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceRef {
    /// The source node's schedule index.
    pub node: usize,
    /// The index of its output port.
    pub port: usize,
    /// Samples of delay that align it with the other inputs (0 almost always).
    pub delay: usize,
    /// A feedback edge (the scene's `"delay"`): the source's output from
    /// this many samples ago (≥ 1). The source may run later in the
    /// schedule; `delay` is then 0. 0 for an ordinary edge.
    pub feedback: usize,
}

impl SourceRef {
    /// Whether this is a feedback edge.
    pub fn is_feedback(&self) -> bool {
        self.feedback > 0
    }
}

/// A compiled node, in schedule order.
pub struct PlanNode {
    /// The node's id in the scene.
    pub id: String,
    /// Its operator.
    pub op: &'static OpSpec,
    pub(crate) module: Option<String>,
    /// Its resolved execution settings.
    pub profile: NodeProfile,
    /// The weakest profile among this node and everything upstream of it.
    pub guarantee: Profile,
    /// Static param values, in `op.params` order.
    pub values: Vec<Value>,
    /// Sources of each audio input, in summing order.
    pub inputs: Vec<Vec<SourceRef>>,
    /// Modulation sources of each param (empty when unconnected).
    pub param_inputs: Vec<Vec<SourceRef>>,
    /// The built node; taken by the engine.
    pub node: Option<AnyNode>,
    /// Samples of delay the node itself adds.
    pub latency: usize,
    /// Samples from the scene's sources to this node's output, after
    /// compensation (the latest of its inputs plus its own latency).
    pub(crate) output_latency: usize,
    /// Samples over which a live edit of this node's params glides.
    pub(crate) edit_ramp: u64,
}

/// What an event does to its param.
#[derive(Clone, Debug, PartialEq)]
pub enum EventAction {
    /// A number param moves to `value`, linearly over `ramp` samples (0 = a step).
    Set {
        /// The value it moves to, in the param's canonical unit.
        value: f64,
        /// Samples it glides over (0: a step).
        ramp: u64,
    },
    /// An enum, integer or boolean param changes.
    Discrete(Value),
}

/// An event placed on the absolute sample clock.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanEvent {
    /// The sample it takes effect at.
    pub sample: u64,
    pub(crate) node: usize,
    pub(crate) param: usize,
    /// What it does.
    pub action: EventAction,
    /// Where the event is written (`events[3]`), for diagnostics.
    pub(crate) loc: crate::scene::Loc,
    /// Its beat, when its time is in beats or bars: a tempo edit while
    /// playing moves it on the beat grid (`engine::TempoMap`).
    pub(crate) beat: Option<crate::scene::Rational>,
    /// Whether its node's profile moves it to its block's start.
    pub(crate) at_block: bool,
    /// Its place in the plan's events as compiled (which a tempo edit may
    /// reorder).
    pub(crate) order: usize,
}

/// A voice module (`"voices": N`), compiled: its voices' nodes by schedule
/// index and what a note drives. A voice's node `k` is the template's `k`th
/// node (declaration order); its copy for voice `v` has the id `id#v`, which
/// is also the id its noise is keyed by.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VoicePool {
    pub(crate) module: String,
    /// The template's node ids, in declaration order.
    pub(crate) template: Vec<String>,
    /// Per voice, the schedule index of each template node.
    pub(crate) nodes: Vec<Vec<usize>>,
    /// The template node whose outputs are a voice's sound.
    pub(crate) out: usize,
    /// (template node, param index) a note's pitch (Hz), gate (1 while
    /// held, 0 after) and velocity (0…1) set.
    pub(crate) pitch: Option<(usize, usize)>,
    pub(crate) gate: Option<(usize, usize)>,
    pub(crate) velocity: Option<(usize, usize)>,
    /// The template node whose silence after the gate closes frees a voice
    /// at once (otherwise: the voice's sound stays below
    /// [`VOICE_SILENCE`] for `free_after` samples).
    pub(crate) release_end: Option<usize>,
    /// Samples a stolen voice fades out over before its new note starts.
    pub(crate) steal_fade: u64,
    /// Samples of silence after the gate closes that free a voice.
    pub(crate) free_after: u64,
    /// A repeated note plays on the voice that holds it.
    pub(crate) reuse_same_note: bool,
    /// A note-on while a note is held retunes the held voice (its pitch
    /// alone), the gate staying open; a note-off returns to the newest
    /// note still held.
    pub(crate) legato: bool,
}

/// −100 dBFS: a released voice whose sound stays below this is free.
pub(crate) const VOICE_SILENCE: f64 = 1e-5;

/// A note for a voice module, placed on the sample clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanNote {
    /// The sample it takes effect at.
    pub sample: u64,
    /// Index into `Plan::voices`.
    pub pool: usize,
    /// What it does.
    pub action: NoteAction,
}

/// What a note does.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteAction {
    /// A note starts. `key` says which note it is (the bits of its pitch
    /// in Hz), for its note-off and a repeat; `tag` (not 0) ties it to the
    /// note-off its `duration` placed.
    On {
        /// Which note it is: the bits of its pitch in Hz.
        key: u64,
        /// The tag that ties it to its note-off (0: none).
        tag: u64,
        /// Its pitch, in Hz.
        pitch_hz: f64,
        /// Its velocity, 0…1.
        velocity: f64,
    },
    /// The note `key` ends (tag 0: whichever voice holds it; otherwise
    /// only the voice the note with that tag started).
    Off {
        /// Which note ends: the bits of its pitch in Hz.
        key: u64,
        /// The tag of the note it ends (0: any).
        tag: u64,
    },
    /// The sustain pedal goes down (true) or up.
    Sustain(bool),
    /// Every sounding voice, and every note started after, plays this
    /// many semitones off its pitch (a pitch bend); it glides there over
    /// `BEND_GLIDE_MS`.
    Bend(f64),
    /// Every held note is released (MIDI CC 123, `/morphrt/panic`), the
    /// pedal too.
    AllNotesOff,
    /// The pressure of note `key` (poly aftertouch): param `param` of the
    /// template's node `node` (its place in the template) of the voice
    /// that plays `key` moves to `value`, gliding over `ramp` samples
    /// when it is a number; no other voice moves.
    Touch {
        /// The pressed note: the bits of its pitch in Hz.
        key: u64,
        /// The node's place in the voice module's template.
        node: u32,
        /// The param's index in the node's operator.
        param: u16,
        /// The value it moves to.
        value: ControlValue,
        /// Samples a number glides over (0: a step).
        ramp: u64,
    },
    /// Every voice stops at once, without its release (MIDI CC 120,
    /// `/morphrt/panic sound`), and the pedal comes up.
    AllSoundOff,
}

/// Milliseconds a pitch bend glides over.
pub(crate) const BEND_GLIDE_MS: f64 = 5.0;

impl NoteAction {
    /// The rank of note-ons (the last).
    pub(crate) const ON_RANK: u8 = 2;

    /// The order of notes on one sample: note-offs, then the pedal and
    /// bends, then note-ons, pressures and panics (each kind in the order
    /// given; a panic after a note-on on one sample ends it, a pressure
    /// after it reaches its voice).
    pub(crate) fn rank(&self) -> u8 {
        match self {
            NoteAction::Off { .. } => 0,
            NoteAction::Sustain(_) | NoteAction::Bend(_) => 1,
            NoteAction::On { .. }
            | NoteAction::Touch { .. }
            | NoteAction::AllNotesOff
            | NoteAction::AllSoundOff => Self::ON_RANK,
        }
    }
}

impl NoteAction {
    /// The note in words, for replies and timelines: `pad note on
    /// 261.625565 Hz vel 0.8`, `pad note off 261.625565 Hz`, `pad sustain
    /// down`.
    pub fn text(&self, module: &str) -> String {
        match *self {
            NoteAction::On {
                pitch_hz, velocity, ..
            } => format!(
                "{module} note on {} Hz vel {}",
                short_number(pitch_hz),
                short_number(velocity)
            ),
            NoteAction::Off { key, .. } => {
                format!("{module} note off {} Hz", short_number(f64::from_bits(key)))
            }
            NoteAction::Sustain(down) => {
                format!("{module} sustain {}", if down { "down" } else { "up" })
            }
            NoteAction::Bend(semitones) => {
                format!("{module} bend {} semitones", short_number(semitones))
            }
            NoteAction::Touch { key, value, .. } => format!(
                "{module} pressure of {} Hz: {}",
                short_number(f64::from_bits(key)),
                short_number(value.as_f64())
            ),
            NoteAction::AllNotesOff => format!("{module} all notes off"),
            NoteAction::AllSoundOff => format!("{module} all sound off"),
        }
    }
}

/// A number for people: at most six decimals, no trailing zeros
/// (`418.255826`, `900`); journals keep every bit.
pub fn short_number(v: f64) -> String {
    if v != 0.0 && v.abs() < 1e-3 {
        return format!("{v:e}");
    }
    let t = format!("{v:.6}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    match t {
        "-0" => "0".to_string(),
        t => t.to_string(),
    }
}

/// The seed the session runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedSource {
    /// No node uses randomness and no seed was given.
    None,
    /// From the scene or `--seed`.
    Given(u64),
    /// Chosen from the clock (live only); printed so it can be replayed.
    Auto(u64),
}

impl SeedSource {
    pub(crate) fn value(self) -> u64 {
        match self {
            SeedSource::None => 0,
            SeedSource::Given(s) | SeedSource::Auto(s) => s,
        }
    }
}

/// A compiled scene, ready for the engine.
pub struct Plan {
    /// The file the scene came from (or a label such as `<string>`).
    pub file: String,
    /// The profile the session runs under.
    pub session_profile: Profile,
    /// Samples per second, in Hz.
    pub sample_rate: u32,
    /// Frames per block.
    pub block_size: usize,
    /// Where the seed of its random streams comes from.
    pub seed: SeedSource,
    /// The scene's `duration`, in samples.
    pub duration: Option<u64>,
    /// The scene's `tempo` and `meter`.
    pub tempo: Option<crate::scene::Tempo>,
    /// Nodes in schedule order.
    pub nodes: Vec<PlanNode>,
    /// The main bus: one source per channel (delays align the channels).
    pub main: Vec<SourceRef>,
    /// Latency of the main bus relative to the sources, in samples.
    pub latency: usize,
    /// Sorted by sample; ties keep file order.
    pub events: Vec<PlanEvent>,
    /// The scene's `controls`, resolved (in file order).
    pub controls: Vec<ControlMap>,
    /// Voice modules, in the scene's module order.
    pub(crate) voices: Vec<VoicePool>,
    /// The scene's notes, sorted by sample, then [`NoteAction::rank`],
    /// then file order.
    pub(crate) notes: Vec<PlanNote>,
    /// Samples over which a structural edit or profile switch crossfades.
    pub(crate) crossfade: u64,
    /// Every resource reference (`@resource:NAME`) and the file it read.
    pub resources: Vec<(String, std::path::PathBuf)>,
    /// Every resource whose file is at another rate than the session's,
    /// converted once, while the scene compiled.
    pub conversions: Vec<Conversion>,
    /// What compiling the scene warned about.
    pub warnings: Vec<Diagnostic>,
}

/// Audio converted from one sample rate to another: what, from and to
/// which rate, and by which method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// What was converted, as messages name it: `` resource `@resource:hall.wav` ``.
    pub what: String,
    /// The rate of the file, in Hz.
    pub from_hz: u32,
    /// The session's rate it was converted to, in Hz.
    pub to_hz: u32,
    /// The converter: polyphase (strict, morphrt's own) or the library's.
    pub method: crate::dsp::resample::Method,
}

impl std::fmt::Display for Conversion {
    /// `` resource `@resource:hall.wav`: 44100 Hz → 48000 Hz (polyphase) ``
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} Hz → {} Hz ({})",
            self.what,
            self.from_hz,
            self.to_hz,
            self.method.name()
        )
    }
}

/// An `input` node and the session input channel it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputUse {
    /// The id of the `input` node.
    pub node: String,
    /// The session input channel it reads (0-based).
    pub channel: usize,
}

impl Plan {
    /// Every `input` node of the plan with its channel, by channel then id.
    pub fn inputs(&self) -> Vec<InputUse> {
        let mut v: Vec<InputUse> = self
            .nodes
            .iter()
            .filter(|n| crate::ops::is_session_input(n.op))
            .map(|n| InputUse {
                node: n.id.clone(),
                channel: crate::ops::input_channel(&n.values),
            })
            .collect();
        v.sort_by(|a, b| (a.channel, &a.node).cmp(&(b.channel, &b.node)));
        v
    }

    /// How many voice modules the scene has (modules with `"voices"`):
    /// a host that takes notes offers a note port when there is one.
    pub fn voice_modules(&self) -> usize {
        self.voices.len()
    }

    /// Input channels the plan reads: the highest channel read plus one
    /// (0 when it has no `input` node).
    pub fn input_width(&self) -> usize {
        self.inputs()
            .iter()
            .map(|u| u.channel + 1)
            .max()
            .unwrap_or(0)
    }

    /// The weakest guarantee of anything feeding the main bus.
    pub(crate) fn guarantee(&self) -> Profile {
        self.main
            .iter()
            .map(|s| self.nodes[s.node].guarantee)
            .min()
            .unwrap_or(self.session_profile)
    }
}
