//! Remote in: what OSC and MIDI (live, or a MIDI file offline) ask of a
//! session, once a transport has read and parsed it — param changes by
//! name, profile switches, snapshots, stops — and how a change becomes a
//! record for the engine playing now.
//!
//! Transports (an OSC socket, a MIDI port) run on their own threads and
//! send [`Message`]s; the control thread resolves each against the scene's
//! `controls` and the playing engine, hands the records to the audio
//! thread through a wait-free ring, and journals each change with the
//! sample it landed on.

pub mod error;
pub mod midi;
pub mod midi_file;

pub use error::{MidiFileError, RemoteError, TransportError};

use crate::engine::{ChangeRecord, NodeTable, NoteRecord};
use crate::graph::{short_number, ControlMap, ControlValue, NoteAction, PlanNote};
use crate::ops::ParamSpec;
use crate::profile::Profile;
use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime};

pub mod osc;

/// A change of one param, by name: what a mapping or `/morphrt/param`
/// resolves a message to, before it is resolved against an engine.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub node: String,
    pub param: String,
    pub value: ControlValue,
    /// Samples it glides over (0: a step).
    pub ramp: u64,
}

/// A note for a voice module, by the module's id: what a note control
/// resolves a message to, before it is resolved against an engine (see
/// [`note_record`]). MIDI and OSC notes carry tag 0 (a note-off releases
/// whichever voice holds the key).
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub module: String,
    pub action: NoteAction,
}

impl Note {
    /// MIDI note `note` on, at `velocity` 0…1: the key is the bits of its
    /// pitch in Hz ([`crate::graph::midi_note_hz`], as a scene's note
    /// events make it).
    pub fn on(module: &str, note: f64, velocity: f64) -> Note {
        let hz = crate::graph::midi_note_hz(note);
        Note {
            module: module.to_string(),
            action: NoteAction::On {
                key: hz.to_bits(),
                tag: 0,
                pitch_hz: hz,
                velocity,
            },
        }
    }

    /// MIDI note `note` off.
    pub fn off(module: &str, note: f64) -> Note {
        let hz = crate::graph::midi_note_hz(note);
        Note {
            module: module.to_string(),
            action: NoteAction::Off {
                key: hz.to_bits(),
                tag: 0,
            },
        }
    }

    /// The sustain pedal of `module` down or up.
    pub fn sustain(module: &str, down: bool) -> Note {
        Note {
            module: module.to_string(),
            action: NoteAction::Sustain(down),
        }
    }

    /// The note in words (see [`NoteAction::text`]).
    pub fn text(&self) -> String {
        self.action.text(&self.module)
    }
}

/// What a message asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Param changes, applied together at one sample.
    Changes(Vec<Change>),
    /// Notes for voice modules and the param changes the same message
    /// made, all at one sample.
    Notes {
        notes: Vec<Note>,
        changes: Vec<Change>,
    },
    /// Switch the session's profile (as the `s` key does).
    Profile(Profile),
    /// Write a snapshot (as the `w` key does).
    Snapshot,
    /// Fade out and end the session (as `q` does).
    Stop,
}

/// When a message should land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// At the next block.
    Now,
    /// At the sample this wall-clock time maps to (an OSC bundle's
    /// timetag); at the next block if it has passed.
    At(SystemTime),
    /// At the sample this instant maps to, plus the transport's fixed
    /// latency (a MIDI message's timestamp).
    Stamped(Instant),
    /// At this output frame (as [`Meters::frames`] counts the frames the
    /// device got), plus the transport's fixed latency: a message a device
    /// callback read at a known frame (JACK MIDI).
    ///
    /// [`Meters::frames`]: crate::api::player::Meters::frames
    Frame(u64),
}

/// An answer to the sender of a message: the applied change, or why not.
/// Both are text because the answer goes out on the wire as it is (an
/// OSC `/morphrt/reply ok|error "…"`): the hub turns a [`RemoteError`]
/// into its message where it answers.
pub type Reply = Box<dyn FnOnce(Result<String, String>) + Send>;

/// One message from a transport.
pub struct Message {
    /// What it asks, or why it cannot be done (an unknown address, a
    /// wrong argument): counted, journaled and answered, never fatal.
    pub command: Result<Command, RemoteError>,
    pub when: When,
    /// The message as it arrived, for the journal, errors and the
    /// monitor: `osc 127.0.0.1:50000 /filter/cutoff 0.5`.
    pub from: String,
    /// Where the answer goes, if the transport can answer.
    pub reply: Option<Reply>,
    /// How many messages of the same packet (an OSC bundle) the
    /// transport sends right after this one: the hub takes them all in
    /// one tick, so they land at one block. 0 for a message alone.
    pub batch_rest: usize,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("command", &self.command)
            .field("when", &self.when)
            .field("from", &self.from)
            .field("reply", &self.reply.is_some())
            .field("batch_rest", &self.batch_rest)
            .finish()
    }
}

/// How many characters of a name or address a message echoes.
pub const ECHO_CHARS: usize = 200;

/// `s` as a message echoes it: its first [`ECHO_CHARS`] characters and
/// `…` when it is longer (a 64 KB address is not printed whole).
pub fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    clip_to(s, ECHO_CHARS)
}

/// `s` cut to `max` characters, with `…` when it was longer.
pub fn clip_to(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(s),
        Some((end, _)) => std::borrow::Cow::Owned(format!("{}…", &s[..end])),
    }
}

/// The sending end transports hold.
pub type Sender = std::sync::mpsc::Sender<Message>;

/// `node`'s `param` in the engine `table` describes, settable while it
/// plays: its schedule index, its index and its declaration; else what is
/// wrong, with a did-you-mean.
pub fn param_spec(
    table: &NodeTable,
    node: &str,
    param: &str,
) -> Result<(usize, usize, &'static ParamSpec), RemoteError> {
    let Some(op) = table.op(node) else {
        let help = crate::scene::suggest::closest(node, table.ids())
            .map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
        return Err(RemoteError::NotPlaying(format!(
            "no node `{}` is playing{help}",
            clip(node)
        )));
    };
    let Some((si, pi)) = table.find(node, param) else {
        let names: Vec<&str> = op
            .params
            .iter()
            .filter(|p| p.settable_by_events)
            .map(|p| p.name)
            .collect();
        let help = match crate::scene::suggest::closest(param, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if names.is_empty() => format!(
                "no param of a `{}` can be set while it plays; set one of a node feeding it (of a voice module, its template's nodes: every voice's copy moves)",
                op.name
            ),
            None => format!("valid: {}", names.join(", ")),
        };
        return Err(RemoteError::NotPlaying(format!(
            "`{}` ({}) has no param `{}`; {help}",
            clip(node),
            op.name,
            clip(param)
        )));
    };
    let spec = &op.params[pi];
    if !spec.settable_by_events {
        return Err(RemoteError::NotPlaying(format!(
            "param `{}` of `{node}` is fixed when the node is built",
            spec.name
        )));
    }
    Ok((si, pi, spec))
}

/// Resolves `change` against the engine `table` describes, to land at
/// `sample` (or the next block): its node and param by name, the value
/// of the kind the param takes. Numbers are checked against the param's
/// range again, whatever resolved them.
pub fn record(
    change: &Change,
    table: &NodeTable,
    sample: u64,
    seq: u64,
) -> Result<ChangeRecord, RemoteError> {
    let (node, param, spec) = param_spec(table, &change.node, &change.param)?;
    let fits = match (spec.kind, change.value) {
        (crate::ops::ParamKind::Number { min, max, .. }, ControlValue::Number(v)) => {
            v.is_finite() && v >= min && v <= max
        }
        (crate::ops::ParamKind::Integer { min, max, .. }, ControlValue::Integer(v)) => {
            (min..=max).contains(&v)
        }
        (crate::ops::ParamKind::Enum { choices, .. }, ControlValue::Enum(i)) => i < choices.len(),
        (crate::ops::ParamKind::Bool { .. }, ControlValue::Bool(_)) => true,
        _ => false,
    };
    if !fits {
        return Err(RemoteError::Value(format!(
            "{:?} does not fit param `{}` of `{}`",
            change.value, spec.name, change.node
        )));
    }
    if change.ramp > 0 && !matches!(change.value, ControlValue::Number(_)) {
        return Err(RemoteError::Value(format!(
            "param `{}` cannot ramp",
            spec.name
        )));
    }
    Ok(ChangeRecord {
        sample,
        node: node as u32,
        param: param as u16,
        value: change.value,
        ramp: change.ramp,
        engine: table.engine,
        seq,
    })
}

/// Resolves `note` against the engine `table` describes, to land at
/// `sample` (or the next block): its module by id.
pub fn note_record(
    note: &Note,
    table: &NodeTable,
    sample: u64,
    seq: u64,
) -> Result<NoteRecord, RemoteError> {
    let Some(pool) = table.pool(&note.module) else {
        return Err(RemoteError::NotPlaying(format!(
            "no voice module `{}` is playing",
            note.module
        )));
    };
    Ok(NoteRecord {
        note: PlanNote {
            sample,
            pool,
            action: note.action,
        },
        engine: table.engine,
        seq,
    })
}

/// What the operator of `change`'s node says of the value it sets, when
/// it will not play as set (an oscillator's `freq` above Nyquist plays its
/// alias): the rule events and sequencer steps are warned by
/// ([`crate::ops::lint_of_setting`]), the node's other params at their
/// static values. `None` for a value that plays as set, one that is not a
/// number, or a node or param the `table` does not have.
pub fn change_lint(
    change: &Change,
    table: &NodeTable,
    sample_rate: u32,
) -> Option<crate::ops::Lint> {
    let ControlValue::Number(v) = change.value else {
        return None;
    };
    let (si, pi) = table.find(&change.node, &change.param)?;
    let op = table.op(&change.node)?;
    crate::ops::lint_of_setting(op, table.values(si), pi, v, f64::from(sample_rate))
}

/// `change` for each node it moves in the engine `table` describes: itself
/// for a node that plays, one change per voice for a voice module's
/// template node (`osc` → `osc#0`, `osc#1`, …); unchanged when neither
/// plays (resolving it then says what is wrong).
pub fn fan_out(change: Change, table: &NodeTable) -> Vec<Change> {
    let copies = table.copies(&change.node);
    if copies.len() <= 1 {
        return vec![change];
    }
    copies
        .into_iter()
        .map(|node| Change {
            node,
            ..change.clone()
        })
        .collect()
}

/// What a transport resolves messages against: the scene's `controls`
/// and the nodes of the engine playing now, at the session's rate.
#[derive(Clone)]
pub struct Mapping {
    pub controls: Arc<Vec<ControlMap>>,
    pub table: Arc<NodeTable>,
    pub sample_rate: u32,
}

/// The [`Mapping`] of the engine playing now, shared between the control
/// thread (which replaces it when a handover swaps) and the transports'
/// threads (which read it for each message). Never touched by the audio
/// thread.
#[derive(Clone)]
pub struct Mappings(Arc<RwLock<Arc<Mapping>>>);

impl Mappings {
    /// Shares `first`.
    pub fn new(first: Mapping) -> Mappings {
        Mappings(Arc::new(RwLock::new(Arc::new(first))))
    }

    /// The mapping now.
    pub fn current(&self) -> Arc<Mapping> {
        match self.0.read() {
            Ok(m) => m.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the mapping (a handover swapped).
    pub fn set(&self, m: Mapping) {
        match self.0.write() {
            Ok(mut g) => *g = Arc::new(m),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(m),
        }
    }
}

/// A change in words for a reply or a warning: `lp.cutoff = 1234 Hz`,
/// `f.mode = highpass`, with its ramp when it glides. A number the node
/// plays otherwise than asked (a delay past its `max_time`, a cutoff the
/// filter designs below Nyquist) is said as it plays, with what was asked
/// and why: `echo.time = 0.5 s (asked 2 s; max_time is 0.5 s)`.
pub fn change_text(change: &Change, table: &NodeTable, sample_rate: u32) -> String {
    let spec = param_spec(table, &change.node, &change.param).ok();
    let in_unit = |v: f64, dim: crate::scene::Dimension| match dim.canonical() {
        "" | "linear" => short_number(v),
        unit => format!("{} {unit}", short_number(v)),
    };
    let mut asked = String::new();
    let value = match (change.value, spec.map(|s| s.2.kind)) {
        (ControlValue::Number(v), Some(crate::ops::ParamKind::Number { dim, .. })) => {
            let held = spec
                .zip(table.op(&change.node))
                .and_then(|((_, pi, _), op)| {
                    let values = table.node_values(&change.node)?;
                    crate::ops::played(op, values, pi, v, sample_rate as f64)
                });
            match held {
                Some(h) => {
                    asked = format!(" (asked {}; {})", in_unit(v, dim), h.why);
                    in_unit(h.plays, dim)
                }
                None => in_unit(v, dim),
            }
        }
        (ControlValue::Enum(i), Some(crate::ops::ParamKind::Enum { choices, .. })) => choices
            .get(i)
            .map_or_else(|| i.to_string(), |c| (*c).to_string()),
        (ControlValue::Number(v), _) => short_number(v),
        (ControlValue::Integer(v), _) => v.to_string(),
        (ControlValue::Enum(i), _) => i.to_string(),
        (ControlValue::Bool(b), _) => b.to_string(),
    };
    let ramp = if change.ramp > 0 {
        format!(
            " over {} ms",
            (change.ramp as f64 * 1e3 / sample_rate.max(1) as f64).round()
        )
    } else {
        String::new()
    };
    format!("{}.{} = {value}{ramp}{asked}", change.node, change.param)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_with_no_settable_param_says_so_rather_than_an_empty_list() {
        let text = r#"{"version": "1.0", "sample_rate": 48000,
          "nodes": [{"id": "mic", "op": "input", "params": {"channel": 0}}],
          "outputs": {"main": ["mic"]}}"#;
        let scene = crate::scene::load_str(text, "t.json", None).unwrap();
        let plan = crate::graph::compile(&scene, &Default::default()).unwrap();
        let table = crate::engine::Engine::new(plan).node_table();
        let e = param_spec(&table, "mic", "gain").unwrap_err().to_string();
        assert!(!e.contains("valid: "), "{e}");
        assert!(
            e.contains("no param of a `input` can be set while it plays"),
            "{e}"
        );
    }
}
