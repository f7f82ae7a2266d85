//! `render --midi FILE.mid`: a standard MIDI file drives the scene's MIDI
//! `controls` offline (params, and notes for voice modules), through the same mapper a live port uses
//! ([`crate::host::remote::midi`]). Every message is timed exactly and
//! lands on its sample ([`crate::host::remote::midi_file`]: nearest,
//! halves up); the changes it maps to land there (sample-accurate under
//! strict and repro, at the start of their block under live), so a render
//! is the same bits at every block size under strict.
//!
//! Without `-d` or a scene `duration`, the render runs to the file's last
//! event (its End of Track) and then the scene's tail, as a render with
//! `--input` does after the input ends: until the main bus stayed below
//! −100 dBFS for 100 ms, at most 60 s.

use crate::engine::{ScriptedChange, ScriptedNote};
use crate::graph::{ControlSource, ControlValue, Plan};
use crate::host::files::rules::Inputs;
use crate::host::remote::midi::{decode, describe, Event, Mapper};
use crate::host::remote::midi_file::MidiFile;
use crate::host::remote::Change;
use crate::host::HostError;
use std::path::{Path, PathBuf};

/// The most mapping errors a render prints (the rest are counted).
const SHOWN_ERRORS: usize = 5;

/// A MIDI file mapped onto a scene's controls.
#[derive(Clone, Debug)]
pub struct RenderMidi {
    /// As messages name it: `` `song.mid` ``.
    pub shown: String,
    /// `format 1, 2 tracks, 480 ticks per quarter`.
    pub shape: String,
    /// Channel messages in the file, and how many a control listens to.
    pub messages: usize,
    pub mapped: usize,
    /// The changes they map to, at their samples (those before the
    /// render's first sample are left out).
    pub changes: Vec<ScriptedChange>,
    /// The notes for voice modules they map to, likewise.
    pub notes: Vec<ScriptedNote>,
    /// The sample of the file's last event.
    pub end: u64,
    /// Values a control could not set, with where they came from.
    pub errors: Vec<String>,
    /// Notes a control plays that the file never ends, as warnings.
    pub left_on: Vec<String>,
    /// Changes that set a value their node will not play as set (an
    /// oscillator's `freq` above Nyquist), the first for each node only.
    pub lints: Vec<String>,
}

impl RenderMidi {
    /// Messages no control listens to.
    pub fn unmapped(&self) -> usize {
        self.messages - self.mapped
    }

    /// The summary line: `midi from `song.mid` (…): 12 messages, 10
    /// mapped, 2 unmapped, 14 changes`.
    pub fn summary(&self) -> String {
        format!(
            "midi from {} ({}): {} messages, {} mapped, {} unmapped (no control listens), {} changes, {} notes",
            self.shown,
            self.shape,
            self.messages,
            self.mapped,
            self.unmapped(),
            self.changes.len(),
            self.notes.len()
        )
    }

    /// The mapping errors to print: the first few, then how many more.
    pub fn error_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .left_on
            .iter()
            .take(SHOWN_ERRORS)
            .map(|e| format!("warning: {e}"))
            .collect();
        if self.left_on.len() > SHOWN_ERRORS {
            lines.push(format!(
                "warning: {} more notes have no note-off",
                self.left_on.len() - SHOWN_ERRORS
            ));
        }
        lines.extend(self.lints.iter().map(|l| format!("warning: {l}")));
        lines.extend(
            self.errors
                .iter()
                .take(SHOWN_ERRORS)
                .map(|e| format!("warning: {e}")),
        );
        if self.errors.len() > SHOWN_ERRORS {
            lines.push(format!(
                "warning: {} more MIDI values could not be set",
                self.errors.len() - SHOWN_ERRORS
            ));
        }
        lines
    }

    /// `--json`'s `midi`.
    pub fn json(&self, sample_rate: u32) -> serde_json::Value {
        serde_json::json!({
            "file": self.shown.trim_matches('`'),
            "shape": self.shape,
            "messages": self.messages,
            "mapped": self.mapped,
            "unmapped": self.unmapped(),
            "changes": self.changes.len(),
            "notes": self.notes.len(),
            "last_event_s": self.end as f64 / f64::from(sample_rate),
            "errors": self.errors.len(),
        })
    }
}

/// Reads `--midi` (given at most once) and maps it onto `plan`'s MIDI
/// controls, for a render starting at sample `start`: the messages before
/// it still move the mapper (held notes, 14-bit MSBs) but their changes
/// are in the snapshot resumed from. An error (exit 2) for a file given
/// twice, missing, not a MIDI file, or a scene no MIDI moves.
pub fn open_midi(
    given: &[PathBuf],
    plan: &Plan,
    start: u64,
) -> Result<Option<RenderMidi>, HostError> {
    let path = match given {
        [] => return Ok(None),
        [p] => p,
        [first, second, ..] => {
            return Err(HostError::Usage(format!(
                "--midi is given {} times (`{}`, `{}`): a render plays one MIDI file (merge its tracks into one file to play them together)",
                given.len(),
                first.display(),
                second.display()
            )))
        }
    };
    let file = MidiFile::read(path)?;
    map_midi(&file, &shown(path), plan, start).map(Some)
}

/// Maps `file` (named `shown` in messages: `` `song.mid` ``) onto
/// `plan`'s MIDI controls as [`open_midi`] does, for a render starting at
/// sample `start`; an error for a scene no MIDI moves.
pub fn map_midi(
    file: &MidiFile,
    shown: &str,
    plan: &Plan,
    start: u64,
) -> Result<RenderMidi, HostError> {
    let has_midi = plan
        .controls
        .iter()
        .any(|c| matches!(c.source, ControlSource::Midi(_)));
    if !has_midi {
        return Err(HostError::Usage(format!(
            "scene `{}` maps no MIDI (its `controls` have no `midi` source), so {shown} would move nothing: add a control such as {{\"midi\": {{\"cc\": 74}}, \"node\": \"NODE\", \"param\": \"PARAM\"}} (scenes/README.md, Controls), or render without --midi",
            plan.file,
        )));
    }
    Ok(map_file(file, shown, plan, start))
}

/// The file as messages name it.
fn shown(path: &Path) -> String {
    format!("`{}`", path.display())
}

/// Every message of `file` through a fresh mapper of `plan`'s controls.
fn map_file(file: &MidiFile, shown: &str, plan: &Plan, start: u64) -> RenderMidi {
    let sr = plan.sample_rate;
    let mut mapper = Mapper::new(&plan.controls);
    let mut out = RenderMidi {
        shown: shown.to_string(),
        shape: file.shape.clone(),
        messages: file.messages.len(),
        mapped: 0,
        changes: Vec::new(),
        notes: Vec::new(),
        end: file.sample(file.end, sr),
        errors: Vec::new(),
        left_on: Vec::new(),
        lints: Vec::new(),
    };
    let mut linted = std::collections::HashSet::new();
    // Notes a control plays, by (channel, note): when they were struck.
    let mut held = std::collections::BTreeMap::new();
    for m in &file.messages {
        let sample = file.sample(m.num, sr);
        let mapped = mapper.map(m.message());
        out.mapped += usize::from(mapped.matched);
        match decode(m.message()) {
            (Some(ch), Event::NoteOn { note, .. }) if mapped.matched => {
                held.insert((ch, note), sample);
            }
            (Some(ch), Event::NoteOff { note }) => {
                held.remove(&(ch, note));
            }
            _ => {}
        }
        for e in mapped.errors {
            let at = sample as f64 / f64::from(sr);
            let what = describe(m.message());
            out.errors
                .push(format!("MIDI {what} at {at:.3}s in {shown}: {e}"));
        }
        if sample < start {
            continue;
        }
        for c in &mapped.changes {
            if linted.contains(&c.node) {
                continue;
            }
            if let Some(lint) = change_lint(plan, c) {
                out.lints.push(format!(
                    "node `{}`: a control sets {} (at {:.3} s, from MIDI {} in {shown}; warned once for this node)",
                    c.node,
                    lint.message,
                    sample as f64 / f64::from(sr),
                    describe(m.message())
                ));
                linted.insert(c.node.clone());
            }
        }
        out.notes
            .extend(mapped.notes.into_iter().map(|n| ScriptedNote {
                sample,
                module: n.module,
                action: n.action,
            }));
        out.changes
            .extend(mapped.changes.into_iter().map(|c| ScriptedChange {
                sample,
                node: c.node,
                param: c.param,
                value: c.value,
                ramp: c.ramp,
            }));
    }
    let mut left: Vec<_> = held.into_iter().collect();
    left.sort_by_key(|&((ch, note), at)| (at, ch, note));
    out.left_on = left
        .into_iter()
        .map(|((ch, note), at)| {
            format!(
                "note {note} on channel {ch} at {:.3} s in {shown} has no note-off: it sounds to the end",
                at as f64 / f64::from(sr)
            )
        })
        .collect();
    out
}

/// What `plan`'s node says of the value `change` sets, when it will not
/// play as set: the rule of [`crate::ops::lint_of_setting`], as for a
/// control while playing. A voice module's template node is read from its
/// first voice's copy.
fn change_lint(plan: &Plan, change: &Change) -> Option<crate::ops::Lint> {
    let ControlValue::Number(v) = change.value else {
        return None;
    };
    let copy = crate::graph::voice_node_id(&change.node, 0);
    let node = plan
        .nodes
        .iter()
        .find(|n| n.id == change.node || n.id == copy)?;
    let pi = node.op.param_index(&change.param)?;
    crate::ops::lint_of_setting(node.op, &node.values, pi, v, f64::from(plan.sample_rate))
}

/// The MIDI file is read by the render: no output may replace it.
pub fn protect_midi(inputs: &mut Inputs, given: &[PathBuf]) {
    for p in given {
        inputs.add("the MIDI file", p);
    }
}
