//! Control changes from outside the scene (OSC, MIDI, a MIDI file, a
//! journal being replayed): fixed-size records, resolved off the audio
//! thread against one engine, queued here in sample order and applied in
//! the block loop at their sample, as events are.
//!
//! Everything here is real-time safe: the queue and the list of reports
//! are allocated in [`Engine::new`] and only copied into.
//!
//! **Where a record lands.** At its `sample`, or at the next block when
//! that has passed; under a block-accurate profile (live) at the start of
//! the block holding it. Plan events at the same sample apply first, then
//! records in `(sample, seq)` order, ties in the order they came.
//! Under a sample-accurate profile each distinct sample a record or a
//! note from outside lands on cuts the block there, one cut each at most:
//! the queues bound those cuts to [`CHANGE_QUEUE`] +
//! [`NOTE_QUEUE`](super::NOTE_QUEUE) a block (a block-accurate profile
//! lands them all at the block's start). A cut splits the chunks of the
//! nodes it reaches: in a graph with voice modules, most often only those
//! of the voice or the node the change is for (`split.rs` says when),
//! otherwise every node's.
//!
//! **Across a handover.** A record names the engine it was resolved for
//! ([`Engine::id`]). The engine that takes over from it maps the nodes of
//! its predecessor by id (see `migrate`), so a record resolved for the
//! predecessor still lands, and at the swap the new engine takes over the
//! predecessor's queue and the current value of every param a control
//! moved ([`Engine::carry_controls_from`]), unless the edit itself changed
//! that param in the file: the file wins. A record for any older engine
//! is reported [`Outcome::Stale`], for the sender to resolve again.

use super::handover::set_discrete;
use super::node::Slot;
use super::Engine;
use crate::graph::ControlValue;
use crate::ops::{ParamState, Ramp};
use crate::profile::EventTiming;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Records an engine holds waiting for their sample.
pub const CHANGE_QUEUE: usize = 512;

/// No node: a node of the predecessor the new engine does not have.
const NONE: u32 = u32::MAX;

/// A control change resolved against one engine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangeRecord {
    /// The sample it is meant for; a past one lands at the next block.
    pub sample: u64,
    /// Schedule index of the node in the engine `engine`.
    pub node: u32,
    /// Index of the param in the node's operator.
    pub param: u16,
    /// The value the param moves to.
    pub value: ControlValue,
    /// Samples a number glides over (0: a step).
    pub ramp: u64,
    /// The [`Engine::id`] it was resolved against.
    pub engine: u64,
    /// The sender's number for it, returned in its [`ChangeReport`].
    pub seq: u64,
}

/// What became of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It took effect at sample `at`, on schedule index `node` of the
    /// engine playing then (`engine`).
    Applied {
        /// The sample it took effect at.
        at: u64,
        /// The schedule index of its node (or pool).
        node: u32,
        /// The [`Engine::id`] of the engine it landed on.
        engine: u64,
    },
    /// It was resolved for an engine that no longer plays: resolve again.
    Stale,
    /// Its node left the scene with an edit before it landed.
    Removed,
    /// Its value is not of the kind its param takes (a number for an enum,
    /// anything for a resource or an array): refused, never applied.
    WrongKind,
    /// The queue was full.
    Full,
}

/// A record's outcome, by its `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeReport {
    /// The sender's number of the record.
    pub seq: u64,
    /// What became of it.
    pub outcome: Outcome,
}

/// An engine's controls: its queue, its reports, and what it needs to take
/// over from its predecessor.
pub(super) struct Changes {
    pub(super) id: u64,
    /// Waiting records, by `(sample, seq)` then arrival (a heap: a record
    /// arriving early for its sample costs a few swaps, not a shift).
    queue: BinaryHeap<Reverse<Queued>>,
    /// Records queued so far: the arrival order.
    arrived: u64,
    /// Outcomes since the host last took them.
    reports: Vec<ChangeReport>,
    /// Reports that found the list full (the host drains it every block,
    /// so this stays 0 in a running session).
    pub(super) lost_reports: u64,
    /// The engine this one was migrated from, and its schedule indices
    /// mapped onto this engine's ([`NONE`] for a removed node).
    prev: Option<u64>,
    from_prev: Vec<u32>,
    /// Per node: the params a control has set (bit i: param i; params
    /// beyond 63 are not carried).
    pub(super) touched: Vec<u64>,
    /// Per node: the params the edit that built this engine changed in
    /// the file, which do not carry.
    pub(super) edited: Vec<u64>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Changes {
    pub(super) fn new(nodes: usize) -> Changes {
        Changes {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            queue: BinaryHeap::with_capacity(CHANGE_QUEUE),
            arrived: 0,
            reports: Vec::with_capacity(2 * CHANGE_QUEUE + super::NOTE_QUEUE),
            lost_reports: 0,
            prev: None,
            from_prev: Vec::new(),
            touched: vec![0; nodes],
            edited: vec![0; nodes],
        }
    }

    /// The sample of the next waiting record.
    pub(super) fn next_sample(&self) -> Option<u64> {
        self.queue.peek().map(|q| q.0.record.sample)
    }

    /// The next waiting record, if it is due at `pos`.
    fn pop_due(&mut self, pos: u64) -> Option<ChangeRecord> {
        if self.next_sample()? > pos {
            return None;
        }
        self.queue.pop().map(|q| q.0.record)
    }

    /// Prepares the take-over from the engine `prev` (off the audio
    /// thread): `map[i]` is this engine's index of its node `i`.
    pub(super) fn follow(&mut self, prev: u64, map: Vec<u32>) {
        self.prev = Some(prev);
        self.from_prev = map;
        self.edited.iter_mut().for_each(|m| *m = 0);
    }

    fn report(&mut self, seq: u64, outcome: Outcome) {
        if self.reports.len() < self.reports.capacity() {
            self.reports.push(ChangeReport { seq, outcome });
        } else {
            self.lost_reports += 1;
        }
    }

    /// Queues `r` after the records of the same `(sample, seq)` already
    /// waiting (within capacity: no allocation).
    fn insert(&mut self, record: ChangeRecord) -> bool {
        if self.queue.len() >= CHANGE_QUEUE {
            return false;
        }
        self.arrived += 1;
        // Within the capacity reserved in `new`: no allocation.
        self.queue.push(Reverse(Queued {
            record,
            arrival: self.arrived,
        }));
        true
    }
}

/// A record waiting for its sample.
#[derive(Clone, Copy, Debug)]
struct Queued {
    record: ChangeRecord,
    arrival: u64,
}

impl Queued {
    fn key(&self) -> (u64, u64, u64) {
        (self.record.sample, self.record.seq, self.arrival)
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Queued {}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl Engine {
    /// Attaches `value` to the engine, replacing what was attached: it
    /// travels with the engine through every handover (offered, caught up,
    /// restored, retired) and is dropped with it, off the audio thread. A
    /// host attaches what it resolved against this engine (the embedding
    /// API's param routes), so that whoever plays the engine finds them
    /// with it. Allocates: call it before the engine is handed over.
    pub fn attach<T: std::any::Any + Send>(&mut self, value: T) {
        self.attached = Some(Box::new(value));
    }

    /// What is attached, if it is a `T` (real-time safe: a type check).
    pub fn attached<T: std::any::Any>(&self) -> Option<&T> {
        self.attached.as_deref()?.downcast_ref::<T>()
    }

    /// Runs `f` with the attached `T` and the engine itself, to act on the
    /// engine with what is attached to it (queue the records a host's
    /// routes make). Real-time safe: the attachment is moved out and back,
    /// never copied or freed.
    pub fn with_attached<T: std::any::Any, R>(
        &mut self,
        f: impl FnOnce(Option<&T>, &mut Engine) -> R,
    ) -> R {
        let a = self.attached.take();
        let typed = a.as_deref().and_then(|a| a.downcast_ref::<T>());
        let r = f(typed, self);
        self.attached = a;
        r
    }

    /// A number no other engine of this process has: records name the
    /// engine they were resolved against.
    pub fn id(&self) -> u64 {
        self.changes.id
    }

    /// The schedule index and param index of `node`'s `param`, for a
    /// control thread resolving a record (a scan: call it off the audio
    /// thread, or build a [`NodeTable`]).
    pub fn find_param(&self, node: &str, param: &str) -> Option<(usize, usize)> {
        let si = self.slots.iter().position(|s| s.id == node)?;
        let op = crate::ops::lookup(self.slots[si].op)?;
        Some((si, op.param_index(param)?))
    }

    /// The index of `param` in the operator of schedule index `node`.
    pub(crate) fn param_index(&self, node: usize, param: &str) -> Option<usize> {
        crate::ops::lookup(self.slots.get(node)?.op)?.param_index(param)
    }

    /// Every node's id with its schedule index and operator, for resolving
    /// records off the audio thread while this engine plays.
    pub fn node_table(&self) -> NodeTable {
        let mut templates = std::collections::HashMap::new();
        for p in &self.voices.pools {
            for id in &p.plan.template {
                templates.insert(id.clone(), p.plan.nodes.len());
            }
        }
        NodeTable {
            engine: self.id(),
            nodes: self
                .slots
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id.clone(), (i, s.op)))
                .collect(),
            values: self
                .slots
                .iter()
                .map(|s| s.initial_values.clone())
                .collect(),
            templates,
            pools: self
                .voices
                .pools
                .iter()
                .map(|p| p.plan.module.clone())
                .collect(),
        }
    }

    /// The schedule indices a change of `node` moves: the node itself, or
    /// every voice's copy of a voice module's template node (`osc` of a
    /// module whose voices play `osc#0`, `osc#1`, …). Empty when neither
    /// plays. Call it off the audio thread.
    pub(crate) fn node_copies(&self, node: &str) -> Vec<usize> {
        if let Some(i) = self.slots.iter().position(|s| s.id == node) {
            return vec![i];
        }
        for p in &self.voices.pools {
            if let Some(k) = p.plan.template.iter().position(|t| t == node) {
                return p.plan.nodes.iter().map(|v| v[k]).collect();
            }
        }
        Vec::new()
    }

    /// Queues a record (real-time safe). A record for this engine's
    /// predecessor is mapped onto this engine. Given back as a report when
    /// it cannot be queued.
    pub fn push_change(&mut self, mut r: ChangeRecord) -> Result<(), ChangeReport> {
        let refuse = |outcome| ChangeReport {
            seq: r.seq,
            outcome,
        };
        if r.engine != self.changes.id {
            if Some(r.engine) != self.changes.prev {
                return Err(refuse(Outcome::Stale));
            }
            match self.changes.from_prev.get(r.node as usize) {
                Some(&n) if n != NONE => r.node = n,
                _ => return Err(refuse(Outcome::Removed)),
            }
            r.engine = self.changes.id;
        }
        let Some(current) = self
            .slots
            .get(r.node as usize)
            .filter(|s| (r.param as usize) < s.params.len())
            .and_then(|s| s.values.get(r.param as usize))
        else {
            return Err(refuse(Outcome::Stale));
        };
        // Only a value of the param's own kind is queued: applying any
        // other would replace (and free, here) a resource or an array.
        if !takes(current, r.value) {
            return Err(refuse(Outcome::WrongKind));
        }
        r.sample = self.landing_sample(r.sample);
        if self.changes.insert(r) {
            Ok(())
        } else {
            Err(refuse(Outcome::Full))
        }
    }

    /// Queues `r`, resolved against `next` (the engine that took over
    /// from this one) or against this one, on this engine: its node mapped
    /// back through `next`'s map of this engine's nodes. The engine fading
    /// out under `next` hears what `next` hears; its reports are
    /// discarded. Whether it was queued (false: a node the edit added, or
    /// a full queue). Real-time safe.
    pub(super) fn push_change_as(&mut self, next: &Engine, mut r: ChangeRecord) -> bool {
        if r.engine == next.changes.id {
            if next.changes.prev != Some(self.changes.id) {
                return false;
            }
            let Some(old) = next.changes.from_prev.iter().position(|&n| n == r.node) else {
                return false;
            };
            r.node = old as u32;
            r.engine = self.changes.id;
        }
        self.push_change(r).is_ok()
    }

    /// Room left in the queue.
    pub fn control_room(&self) -> usize {
        CHANGE_QUEUE - self.changes.queue.len()
    }

    /// Where a record meant for `sample` lands: not before the next block,
    /// and at its block's start under a block-accurate profile.
    pub(super) fn landing_sample(&self, sample: u64) -> u64 {
        let s = sample.max(self.clock);
        match self.session.event_timing() {
            EventTiming::SampleAccurate => s,
            EventTiming::BlockAccurate => {
                let b = self.block_size as u64;
                self.clock + (s - self.clock) / b * b
            }
        }
    }

    /// Hands every report since the last call to `f` (real-time safe).
    pub fn take_change_reports(&mut self, mut f: impl FnMut(ChangeReport)) {
        for r in self.changes.reports.drain(..) {
            f(r);
        }
    }

    /// Adds a report for the host (real-time safe: within capacity).
    pub(super) fn report_control(&mut self, seq: u64, outcome: Outcome) {
        self.changes.report(seq, outcome);
    }

    /// Applies the records due at `pos` (called by the block loop).
    pub(super) fn apply_controls(&mut self, pos: u64) {
        while let Some(r) = self.changes.pop_due(pos) {
            if !self.defer_control(r, pos) {
                self.set_param(r.node as usize, r.param as usize, r.value, r.ramp, pos);
            }
            let outcome = Outcome::Applied {
                at: pos,
                node: r.node,
                engine: self.changes.id,
            };
            self.changes.report(r.seq, outcome);
        }
    }

    /// Param `pi` of slot `i` moves to `value` at `pos`, a number gliding
    /// over `ramp` samples, and counts as moved by a control (a handover
    /// carries it). Nothing moves when the slot has no such param or the
    /// value is of another kind. Real-time safe.
    pub(super) fn set_param(
        &mut self,
        i: usize,
        pi: usize,
        value: ControlValue,
        ramp: u64,
        pos: u64,
    ) {
        let fits = self.slots[i]
            .values
            .get(pi)
            .is_some_and(|v| takes(v, value))
            && pi < self.slots[i].params.len();
        if !fits {
            return;
        }
        self.settle_slot(i, pos);
        self.unsteady(i);
        let slot = &mut self.slots[i];
        match value {
            ControlValue::Number(v) => {
                self.ramps_live |= ramp != 0;
                let p = &mut slot.params[pi];
                let from = p.at(pos);
                *p = ParamState {
                    value: v,
                    ramp: (ramp != 0).then_some(Ramp {
                        from,
                        start: pos,
                        len: ramp,
                    }),
                };
            }
            other => {
                self.save.spoil();
                set_discrete(slot, pi, &other.to_value());
            }
        }
        if pi < 64 {
            self.changes.touched[i] |= 1 << pi;
        }
    }

    /// At the swap to this engine from `old` (its predecessor, on the
    /// audio thread): takes over the current value of every param a
    /// control moved in `old` that the edit did not change in the file,
    /// and the records still waiting in `old`'s queue. Real-time safe.
    pub(super) fn carry_controls_from(&mut self, old: &mut Engine) {
        if self.changes.prev != Some(old.changes.id) {
            return;
        }
        // Carried params change members of lane groups behind their kept
        // copies.
        self.unsteady_all();
        for (oi, &ni) in self.changes.from_prev.iter().enumerate() {
            if ni == NONE {
                continue;
            }
            let (ni, mask) = (
                ni as usize,
                old.changes.touched[oi] & !self.changes.edited[ni as usize],
            );
            if mask == 0 {
                continue;
            }
            let (from, to) = (&old.slots[oi], &mut self.slots[ni]);
            carry_params(from, to, mask);
            self.changes.touched[ni] |= mask;
            self.ramps_live = true;
        }
        while let Some(Reverse(Queued { record: r, .. })) = old.changes.queue.pop() {
            if let Err(report) = self.push_change(r) {
                self.changes.report(report.seq, report.outcome);
            }
        }
    }
}

/// Whether a param whose current value is `current` takes `v`: a number
/// for a number, an integer, enum or bool for its own kind, nothing for a
/// resource, an array or a step length.
fn takes(current: &crate::ops::Value, v: ControlValue) -> bool {
    use crate::ops::Value;
    matches!(
        (current, v),
        (Value::Number(_), ControlValue::Number(_))
            | (Value::Integer(_), ControlValue::Integer(_))
            | (Value::Enum(_), ControlValue::Enum(_))
            | (Value::Bool(_), ControlValue::Bool(_))
    )
}

/// Copies the params in `mask` from `from` to `to` (same op).
fn carry_params(from: &Slot, to: &mut Slot, mask: u64) {
    for i in 0..to.params.len().min(from.params.len()).min(64) {
        if mask & (1 << i) == 0 {
            continue;
        }
        match &from.values[i] {
            crate::ops::Value::Enum(_)
            | crate::ops::Value::Integer(_)
            | crate::ops::Value::Bool(_) => {
                if to.values[i] != from.values[i] {
                    // Enum, integer and bool values: no allocation.
                    let v = from.values[i].clone();
                    set_discrete(to, i, &v);
                }
            }
            _ => to.params[i] = from.params[i],
        }
    }
}

/// The nodes of one engine by id, for resolving records off the audio
/// thread (see [`Engine::node_table`]).
#[derive(Clone, Debug, Default)]
pub struct NodeTable {
    /// The [`Engine::id`] of the engine these nodes belong to.
    pub engine: u64,
    nodes: std::collections::HashMap<String, (usize, &'static str)>,
    /// Each node's values as the scene gives them, by schedule index.
    values: Vec<Vec<crate::ops::Value>>,
    /// A voice module's template node id → its number of voices.
    templates: std::collections::HashMap<String, usize>,
    /// The voice modules' ids, by pool index.
    pools: Vec<String>,
}

impl NodeTable {
    /// `node`'s schedule index and the index of its `param` (for a voice
    /// module's template node: its first voice's copy's; see
    /// [`copies`](Self::copies)).
    pub fn find(&self, node: &str, param: &str) -> Option<(usize, usize)> {
        let &(si, op) = self.node(node)?;
        Some((si, crate::ops::lookup(op)?.param_index(param)?))
    }

    /// The static param values (the scene's) of the node at schedule
    /// index `si`, in its operator's param order; empty for none.
    pub fn values(&self, si: usize) -> &[crate::ops::Value] {
        self.values.get(si).map_or(&[], Vec::as_slice)
    }

    /// The operator of `node` (or of a template node's copies).
    pub fn op(&self, node: &str) -> Option<&'static crate::ops::OpSpec> {
        crate::ops::lookup(self.node(node)?.1)
    }

    /// `node`'s param values as the scene gives them (a template node's:
    /// its first voice's copy's), for what a change of one of them plays
    /// (see [`crate::ops::played`]).
    pub fn node_values(&self, node: &str) -> Option<&[crate::ops::Value]> {
        self.values.get(self.node(node)?.0).map(Vec::as_slice)
    }

    fn node(&self, node: &str) -> Option<&(usize, &'static str)> {
        match self.nodes.get(node) {
            Some(n) => Some(n),
            None if self.templates.contains_key(node) => {
                self.nodes.get(&crate::graph::voice_node_id(node, 0))
            }
            None => None,
        }
    }

    /// The ids of the nodes a change of `node` moves: `node` itself, or
    /// every voice's copy of a template node (see `Engine::node_copies`);
    /// empty when neither plays.
    pub fn copies(&self, node: &str) -> Vec<String> {
        if self.nodes.contains_key(node) {
            return vec![node.to_string()];
        }
        match self.templates.get(node) {
            Some(&n) => (0..n)
                .map(|i| crate::graph::voice_node_id(node, i))
                .collect(),
            None => Vec::new(),
        }
    }

    /// The pool index of voice module `module`, for a [`NoteRecord`](super::NoteRecord).
    pub fn pool(&self, module: &str) -> Option<usize> {
        self.pools.iter().position(|p| p == module)
    }

    /// The voice modules' ids.
    pub fn modules(&self) -> &[String] {
        &self.pools
    }

    /// Node ids, for did-you-mean.
    pub fn ids(&self) -> impl Iterator<Item = &str> + Clone {
        self.nodes.keys().map(String::as_str)
    }
}
