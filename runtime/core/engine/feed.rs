//! Control changes scheduled by name for an offline loop (`render --midi`):
//! before each block, those due in it are resolved against the engine and
//! queued, so each lands at its sample (its block under live), as a live
//! session's records do.
//!
//! The engine's queue holds [`super::CHANGE_QUEUE`] records; when more
//! are due in one block, the block is cut short before the first that
//! does not fit, so none is lost or late (only a record whose sample is
//! the block's own first one and that still found the queue full lands
//! one sample later).

use super::{ChangeRecord, Engine};
use crate::graph::{NoteAction, PlanNote};
use std::collections::VecDeque;

/// A control change a scripted session applies at `sample`: a journal's
/// record of one, or a MIDI file's mapped message. Its node and param are
/// looked up in the engine playing when it lands.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedChange {
    /// The sample it lands at.
    pub sample: u64,
    /// The id of the node it moves.
    pub node: String,
    /// The name of the param it moves.
    pub param: String,
    /// The value the param moves to.
    pub value: crate::graph::ControlValue,
    /// Samples a number glides over (0: a step).
    pub ramp: u64,
}

impl ScriptedChange {
    /// The record for schedule index `node` of `engine` (a node, or one
    /// copy of a template node: see [`Engine::node_copies`]).
    pub(crate) fn resolve_at(
        &self,
        engine: &Engine,
        node: usize,
        seq: u64,
    ) -> Result<ChangeRecord, String> {
        let Some(param) = engine.param_index(node, &self.param) else {
            return Err(self.missing());
        };
        Ok(ChangeRecord {
            sample: self.sample,
            node: node as u32,
            param: param as u16,
            value: self.value,
            ramp: self.ramp,
            engine: engine.id(),
            seq,
        })
    }

    fn missing(&self) -> String {
        format!(
            "no param `{}` of a node `{}` plays at sample {}",
            self.param, self.node, self.sample
        )
    }
}

/// A note for a voice module a scripted session plays at `sample`: a
/// journal's record of one, or a MIDI file's mapped note. Its module is
/// looked up by id in the engine playing when it lands.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedNote {
    /// The sample it plays at.
    pub sample: u64,
    /// The id of the voice module that plays it.
    pub module: String,
    /// What the note does.
    pub action: NoteAction,
}

impl ScriptedNote {
    /// The note for `engine`, or why its module is not there.
    pub(crate) fn resolve(&self, engine: &Engine) -> Result<PlanNote, String> {
        match engine.voice_pool(&self.module) {
            Some(pool) => Ok(PlanNote {
                sample: self.sample,
                pool,
                action: self.action,
            }),
            None => Err(format!(
                "no voice module `{}` plays at sample {}",
                self.module, self.sample
            )),
        }
    }

    /// Queues it on `engine` (false: the queue is full), or says why not.
    pub(crate) fn push(&self, engine: &mut Engine) -> Result<bool, String> {
        Ok(engine.push_note(self.resolve(engine)?))
    }
}

/// Scheduled control changes and notes, and what became of those that
/// could not land.
#[derive(Debug, Default)]
pub struct ChangeFeed {
    due: VecDeque<ScriptedChange>,
    notes: VecDeque<ScriptedNote>,
    /// Changes that could not land, with their samples.
    errors: Vec<(u64, String)>,
    seq: u64,
}

impl ChangeFeed {
    /// The changes to land, in any order, and notes for voice modules,
    /// each kept by sample, ties in the order given.
    pub fn with_notes(mut list: Vec<ScriptedChange>, mut notes: Vec<ScriptedNote>) -> ChangeFeed {
        list.sort_by_key(|c| c.sample);
        notes.sort_by_key(|n| n.sample);
        ChangeFeed {
            due: list.into(),
            notes: notes.into(),
            errors: Vec::new(),
            seq: 0,
        }
    }

    /// Adds changes and notes to those waiting, each kept by sample
    /// behind those of the same sample already there (ties in the order
    /// given).
    pub(crate) fn extend(
        &mut self,
        list: impl IntoIterator<Item = ScriptedChange>,
        notes: impl IntoIterator<Item = ScriptedNote>,
    ) {
        self.due.extend(list);
        self.due.make_contiguous().sort_by_key(|c| c.sample);
        self.notes.extend(notes);
        self.notes.make_contiguous().sort_by_key(|n| n.sample);
    }

    /// Changes and notes still waiting.
    pub fn pending(&self) -> usize {
        self.due.len() + self.notes.len()
    }

    /// The changes that could not land (an unknown node or param, a value
    /// the param does not take), by sample.
    pub fn errors(&self) -> &[(u64, String)] {
        &self.errors
    }

    /// Queues on `engine` the changes due before `to` (the end of the
    /// block about to play) and returns where the block may end: `to`, or
    /// earlier when the queue filled up.
    pub(crate) fn push_due(&mut self, engine: &mut Engine, to: u64) -> u64 {
        let to = self.push_notes(engine, to);
        let clock = engine.clock();
        while let Some(c) = self.due.front() {
            if c.sample >= to {
                break;
            }
            // A voice module's template node moves every voice's copy.
            let copies = engine.node_copies(&c.node);
            if engine.control_room() < copies.len().max(1) {
                return c.sample.max(clock + 1).min(to);
            }
            let c = self.due.pop_front().expect("checked");
            if copies.is_empty() {
                self.errors.push((c.sample, c.missing()));
            }
            for si in copies {
                self.seq += 1;
                let r = match c.resolve_at(engine, si, self.seq) {
                    Ok(r) => r,
                    Err(e) => {
                        self.errors.push((c.sample, e));
                        break;
                    }
                };
                if let Err(report) = engine.push_change(r) {
                    self.errors
                        .push((c.sample, format!("{:?}", report.outcome)));
                }
            }
        }
        engine.take_change_reports(|_| {});
        to
    }

    /// Queues the notes due before `to`; where the block may end (before
    /// the first note the queue cannot hold).
    fn push_notes(&mut self, engine: &mut Engine, to: u64) -> u64 {
        let clock = engine.clock();
        while let Some(n) = self.notes.front() {
            if n.sample >= to {
                break;
            }
            if engine.note_room() == 0 {
                return n.sample.max(clock + 1).min(to);
            }
            let n = self.notes.pop_front().expect("checked");
            if let Err(e) = n.push(engine) {
                self.errors.push((n.sample, e));
            }
        }
        to
    }
}
