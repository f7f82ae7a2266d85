//! Control changes scheduled by name for an offline loop (`render --midi`):
//! before each block, those due in it are resolved against the engine and
//! queued, so each lands at its sample (its block under live), as a live
//! session's records do.
//!
//! The engine's queue holds [`super::CONTROL_QUEUE`] records; when more
//! are due in one block, the block is cut short before the first that
//! does not fit, so none is lost or late (only a record whose sample is
//! the block's own first one and that still found the queue full lands
//! one sample later).

use super::{ControlRecord, Engine};
use std::collections::VecDeque;

/// A control change a scripted session applies at `sample`: a journal's
/// record of one, or a MIDI file's mapped message. Its node and param are
/// looked up in the engine playing when it lands.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedControl {
    pub sample: u64,
    pub node: String,
    pub param: String,
    pub value: crate::graph::ControlValue,
    pub ramp: u64,
}

impl ScriptedControl {
    /// The record for `engine`, numbered `seq`, or why its node or param
    /// is not there.
    pub fn resolve(&self, engine: &Engine, seq: u64) -> Result<ControlRecord, String> {
        let Some((node, param)) = engine.find_param(&self.node, &self.param) else {
            return Err(format!(
                "no param `{}` of a node `{}` plays at sample {}",
                self.param, self.node, self.sample
            ));
        };
        Ok(ControlRecord {
            sample: self.sample,
            node: node as u32,
            param: param as u16,
            value: self.value,
            ramp: self.ramp,
            engine: engine.id(),
            seq,
        })
    }
}

/// Scheduled control changes and what became of those that could not land.
#[derive(Debug, Default)]
pub struct ControlFeed {
    due: VecDeque<ScriptedControl>,
    /// Changes that could not land, with their samples.
    errors: Vec<(u64, String)>,
    seq: u64,
}

impl ControlFeed {
    /// The changes to land, in any order: kept by sample, ties in the
    /// order given.
    pub fn new(mut list: Vec<ScriptedControl>) -> ControlFeed {
        list.sort_by_key(|c| c.sample);
        ControlFeed {
            due: list.into(),
            errors: Vec::new(),
            seq: 0,
        }
    }

    /// Changes still waiting.
    pub fn pending(&self) -> usize {
        self.due.len()
    }

    /// The changes that could not land (an unknown node or param, a value
    /// the param does not take), by sample.
    pub fn errors(&self) -> &[(u64, String)] {
        &self.errors
    }

    /// Queues on `engine` the changes due before `to` (the end of the
    /// block about to play) and returns where the block may end: `to`, or
    /// earlier when the queue filled up.
    pub fn push_due(&mut self, engine: &mut Engine, to: u64) -> u64 {
        let clock = engine.clock();
        while let Some(c) = self.due.front() {
            if c.sample >= to {
                break;
            }
            if engine.control_room() == 0 {
                return c.sample.max(clock + 1).min(to);
            }
            let c = self.due.pop_front().expect("checked");
            self.seq += 1;
            let r = match c.resolve(engine, self.seq) {
                Ok(r) => r,
                Err(e) => {
                    self.errors.push((c.sample, e));
                    continue;
                }
            };
            if let Err(report) = engine.push_control(r) {
                self.errors
                    .push((c.sample, format!("{:?}", report.outcome)));
            }
        }
        engine.take_control_reports(|_| {});
        to
    }
}
