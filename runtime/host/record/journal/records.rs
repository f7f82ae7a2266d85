//! What a journal holds: one [`Record`] per line, the resources kept
//! beside it ([`KeptResource`]), and the control changes and notes a
//! replay schedules from them.

use crate::engine::incoming::{ScriptedChange, ScriptedNote};
use crate::graph::NoteAction;
use crate::profile::Profile;
use serde::{Deserialize, Serialize};

/// A resource a scene read, kept with the journal: its reference, the file,
/// its SHA-256 and the copy kept beside the journal (relative to the
/// journal's directory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeptResource {
    pub reference: String,
    pub path: String,
    pub sha256: String,
    pub copy: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The control changes of a journal, in sample order (journal order
/// within a sample), for a scripted replay to land where they landed.
pub fn control_changes(records: &[Record]) -> Vec<ScriptedChange> {
    let mut v: Vec<ScriptedChange> = records
        .iter()
        .filter_map(|r| match r {
            Record::Control {
                at,
                node,
                param,
                value,
                ramp,
                ..
            } => Some(ScriptedChange {
                sample: *at,
                node: node.clone(),
                param: param.clone(),
                value: *value,
                ramp: *ramp,
            }),
            _ => None,
        })
        .collect();
    v.sort_by_key(|c| c.sample);
    v
}

/// The notes of a journal, in sample order (journal order within a
/// sample), for a scripted replay to play where they landed.
pub fn note_changes(records: &[Record]) -> Vec<ScriptedNote> {
    let mut v: Vec<ScriptedNote> = records
        .iter()
        .filter_map(|r| match r {
            Record::Note {
                at, module, action, ..
            } => Some(ScriptedNote {
                sample: *at,
                module: module.clone(),
                action: *action,
            }),
            _ => None,
        })
        .collect();
    v.sort_by_key(|n| n.sample);
    v
}

/// One line of a journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The session's constants; the first line.
    Header {
        format: String,
        version: u32,
        morphrt: String,
        /// SHA-256 of the executable that ran the session.
        build: String,
        cpu: String,
        /// The CPU feature level (x86-64-v2/v3/v4, or the architecture).
        cpu_level: String,
        scene: String,
        block_size: usize,
        sample_rate: u32,
        seed: Option<u64>,
        /// The seed live picked for any engine that drew noise without one
        /// (an edit that adds noise to a scene without a seed); older
        /// journals have none, and their replay picks one from the clock.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auto_seed: Option<u64>,
        profile: Profile,
        channels: usize,
        period: Option<usize>,
        resource_dirs: Vec<String>,
    },
    /// The scene the session started with.
    Scene {
        text: String,
        resources: Vec<KeptResource>,
    },
    /// The session resumed from a snapshot (kept beside the journal) before
    /// it started playing.
    Resume { snapshot: KeptResource, clock: u64 },
    /// An applied edit or profile switch: saved at N, swapped at S.
    Handover {
        reason: String,
        from: Option<Profile>,
        to: Option<Profile>,
        profile: Profile,
        #[serde(rename = "captured_at")]
        saved_at: u64,
        swap_at: u64,
        fade: u64,
        text: String,
        resources: Vec<KeptResource>,
    },
    /// An edit that did not compile (the running graph kept playing).
    Rejected {
        at: u64,
        error: String,
        text: String,
    },
    /// A snapshot written while playing, holding the state at sample `at`:
    /// inside a block when a timetag asked for that sample, the audio
    /// thread then cutting the block there, and `replay` cutting it too.
    Snapshot { at: u64, file: String },
    /// The session reads an input, recorded beside the journal in `file`
    /// (relative to the journal's directory; `format` is `i16`, `i24` or
    /// `f32`) from engine sample `start`, the session's first; `source` is
    /// where it came from (a file, a device). Written before it plays.
    Input {
        file: String,
        source: String,
        channels: usize,
        format: String,
        start: u64,
    },
    /// The recorded input is complete: `frames` frames, SHA-256 `sha256`
    /// of the whole file (`replay` refuses a file that differs).
    InputEnd { frames: u64, sha256: String },
    /// A control message (OSC, MIDI) changed `node`'s `param` to `value`
    /// from engine sample `at`, gliding over `ramp` samples; `from` is the
    /// message as it arrived. `replay` applies it at that sample.
    Control {
        at: u64,
        node: String,
        param: String,
        value: crate::graph::ControlValue,
        #[serde(default, skip_serializing_if = "is_zero")]
        ramp: u64,
        from: String,
    },
    /// A control message (OSC, MIDI) played a note on voice module
    /// `module` at engine sample `at`: `action` as the engine took it
    /// (its key the bits of the pitch in Hz); `from` is the message as it
    /// arrived. `replay` plays it at that sample.
    Note {
        at: u64,
        module: String,
        action: NoteAction,
        from: String,
    },
    /// A control message that changed nothing, and why (the clock `at` it
    /// was refused at).
    ControlError {
        at: u64,
        from: String,
        error: String,
    },
    /// The session had played up to sample `at` (written every second of
    /// audio, so a session cut off by a crash replays up to there).
    Progress { at: u64 },
    /// The stop fade began at frame `at` and lasted `fade` frames.
    Stop { at: u64, fade: u64 },
    /// The session ended after `frames` device frames.
    End { frames: u64 },
}

impl Record {
    /// The sample the record happened at, for timelines.
    pub fn at(&self) -> Option<u64> {
        match self {
            Record::Handover { swap_at, .. } => Some(*swap_at),
            Record::Rejected { at, .. }
            | Record::Control { at, .. }
            | Record::Note { at, .. }
            | Record::ControlError { at, .. }
            | Record::Snapshot { at, .. }
            | Record::Progress { at }
            | Record::Stop { at, .. } => Some(*at),
            Record::End { frames } => Some(*frames),
            _ => None,
        }
    }
}
