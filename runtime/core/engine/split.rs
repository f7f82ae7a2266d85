//! Voices in their own chunks: the block loop of an engine with voice
//! modules, where a change cuts only the nodes it changes.
//!
//! Under a sample-accurate profile every distinct sample an event, a
//! change record or a note lands on cuts the block there. Cutting the
//! whole graph at each would run every node once per such sample: a flood
//! of notes and records on 64 distinct samples runs every node 64 times
//! for one sample each. Here a block runs in two passes instead, and each
//! node is cut only where something of its own changes:
//!
//! 1. **Voices.** The block's events, change records and notes are taken
//!    in sample order, as the one-pass loop takes them. A voice's nodes
//!    run, as one unit in schedule order, only up to a sample at which
//!    something of that voice changes, right before the change: one of its
//!    params (an event, a record, a note's pitch, gate or velocity, a bend,
//!    a key pressure), its state (a note starting) or its phase (held,
//!    released, stealing, free). Before a choice that reads whether a
//!    released voice has gone quiet (a note-on takes a free voice first),
//!    the module's released voices run up to that sample. After the last
//!    sample, every voice runs to the block's end. A voice's sound node
//!    keeps the whole block in its outputs, each chunk at its offset.
//! 2. **The rest.** The nodes outside voices run in chunks cut at the
//!    samples of their own events and records (deferred from the first
//!    pass, reported there in sample order), reading the voices' sound at
//!    the chunk's offset in the block.
//!
//! **Why the bits are the same.** A node runs the same samples whatever
//! the chunks, when its params, state and inputs change only at the
//! chunks' starts: every operator is block-size invariant (its tests say
//! so) and params and ramps are functions of the absolute sample. Each
//! node here is cut at every sample at which something of its own
//! changes, so it plays exactly what the one-pass loop makes it play.
//! Where that would not hold, the engine keeps the one-pass loop
//! (`Engine::new` decides, see [`Split::plan`]): feedback edges (each
//! chunk writes their lines), voice modules whose voices are cleared over
//! time (the order voices are queued for clearing follows the chunks), a
//! voice reading a node outside its voice or its own sound node, a node
//! outside a voice reading one of a voice's nodes other than its sound.
//! A block also runs in one pass while per-node timing is on, and while
//! some node is recovering from a failure (NaN recovery counts in the
//! node's chunks). A node that first fails within a two-pass block is
//! reset at the end of the chunk it ran, as in the one-pass loop; where
//! the two loops cut it differently, that end differs.

use super::changes::{ChangeRecord, CHANGE_QUEUE};
use super::lanes::Step;
use super::node::{Core, Recovery, Slot, Typed};
use super::Engine;
use crate::dsp::fpmode::FpGuard;
use crate::graph::SourceRef;

/// What the two-pass block loop needs (see the module docs).
#[derive(Default)]
pub(super) struct Split {
    /// The engine's blocks may run in two passes.
    pub(super) eligible: bool,
    /// The first pass is in progress: a change to a voice first brings the
    /// voice up to the change's sample.
    active: bool,
    /// Each voice's nodes in schedule order (its sound node last), voices
    /// numbered module after module from `first[pool]`.
    pub(super) nodes: Vec<Vec<usize>>,
    first: Vec<usize>,
    /// Each voice's nodes have run up to this sample in the current block.
    pub(super) done: Vec<u64>,
    /// The steps of the nodes outside voices, in order, each with its FP
    /// mode.
    outer: Vec<(usize, bool)>,
    /// Main-bus channels fed by a voice's sound node.
    main: Vec<bool>,
    /// Change records for nodes outside voices, with the sample they
    /// landed at, for the second pass (within [`CHANGE_QUEUE`]).
    deferred: Vec<(u64, ChangeRecord)>,
}

impl Split {
    /// Whether main-bus channel `c` reads a voice's sound node (staged).
    #[inline]
    pub(super) fn main_staged(&self, c: usize) -> bool {
        self.main.get(c).copied().unwrap_or(false)
    }

    /// Whether the graph may run in two passes: voice modules without long
    /// state, no feedback edge, each voice reading only its own nodes and
    /// never its sound node, which runs last of them, and nothing outside
    /// a voice reading a voice's node but its sound.
    fn allowed(engine: &Engine) -> bool {
        if engine.voices.is_empty() || !engine.feeds.is_empty() || engine.voices.clears() {
            return false;
        }
        let slots = &engine.slots;
        let reads_ok = |dst: &Slot, src: &SourceRef| {
            let from = &slots[src.node];
            match (dst.voice, from.voice) {
                (Some(a), Some(b)) => a.pool == b.pool && a.voice == b.voice && !b.out,
                (Some(_), None) => false,
                (None, Some(b)) => b.out,
                (None, None) => true,
            }
        };
        let edges_ok = slots.iter().all(|s| {
            s.inputs
                .iter()
                .chain(&s.param_inputs)
                .flatten()
                .all(|e| !e.src.is_feedback() && reads_ok(s, &e.src))
        });
        let main_ok = engine
            .main
            .iter()
            .all(|m| slots[m.node].voice.is_none_or(|t| t.out));
        // Each voice's sound node is the last of its nodes in the schedule.
        let last_ok = slots.iter().enumerate().all(|(i, s)| match s.voice {
            Some(t) if !t.out => {
                let plan = &engine.voices.pools[t.pool as usize].plan;
                plan.nodes[t.voice as usize][plan.out] > i
            }
            _ => true,
        });
        edges_ok && main_ok && last_ok
    }

    /// Decides whether `engine` runs its blocks in two passes and, if so,
    /// builds what they need: the voices' node lists, the outer steps, the
    /// staged edges and main-bus channels and the sound nodes' spare
    /// buffers. Allocates: called when the engine is built and when its
    /// steps change.
    pub(super) fn plan(engine: &mut Engine) {
        let eligible = Split::allowed(engine);
        for s in &mut engine.slots {
            for e in s.inputs.iter_mut().chain(&mut s.param_inputs).flatten() {
                e.staged = false;
            }
        }
        if !eligible {
            engine.split = Split::default();
            return;
        }
        let mut split = Split {
            eligible,
            deferred: Vec::with_capacity(CHANGE_QUEUE),
            ..Split::default()
        };
        for pool in &engine.voices.pools {
            split.first.push(split.nodes.len());
            for nodes in &pool.plan.nodes {
                let mut v = nodes.clone();
                v.sort_unstable();
                split.nodes.push(v);
            }
        }
        split.done = vec![0; split.nodes.len()];
        for r in &engine.runs {
            for k in r.steps.0..r.steps.1 {
                let outside = match engine.steps[k] {
                    Step::Slot(i) => engine.slots[i].voice.is_none(),
                    Step::Group(_) => true,
                };
                if outside {
                    split.outer.push((k, r.flush));
                }
            }
        }
        let out = |i: usize| engine.slots[i].voice.is_some_and(|t| t.out);
        split.main = engine.main.iter().map(|m| out(m.node)).collect();
        let outs: Vec<bool> = (0..engine.slots.len()).map(out).collect();
        let block = engine.block_size;
        for (i, s) in engine.slots.iter_mut().enumerate() {
            for e in s.inputs.iter_mut().chain(&mut s.param_inputs).flatten() {
                e.staged = outs[e.src.node];
            }
            if outs[i] {
                match &mut s.core {
                    Core::F32(t) => t.spare = vec![vec![0.0; block]; t.outs.len()],
                    Core::F64(t) => t.spare = vec![vec![0.0; block]; t.outs.len()],
                }
            }
        }
        engine.split = split;
    }
}

impl Engine {
    /// Whether this block may run in two passes: the graph allows it, per-node
    /// timing is off and every node is healthy.
    pub(super) fn split_block(&self) -> bool {
        self.split.eligible
            && !self.node_timing
            && self.slots.iter().all(|s| s.recovery == Recovery::default())
    }

    /// The block `clock..end` in two passes (see the module docs).
    pub(super) fn process_split(&mut self, guard: &FpGuard, end: u64) {
        let start = self.clock;
        let first_event = self.next_event;
        self.split.done.iter_mut().for_each(|d| *d = start);
        self.split.deferred.clear();
        self.split.active = true;
        let mut pos = start;
        while pos < end {
            self.apply_voice_events(pos);
            self.apply_controls(pos);
            self.apply_notes(pos);
            pos = self
                .events
                .get(self.next_event)
                .map_or(end, |e| e.sample.clamp(pos + 1, end))
                .min(
                    self.changes
                        .next_sample()
                        .map_or(end, |s| s.clamp(pos + 1, end)),
                )
                .min(self.voices.next_sample().clamp(pos + 1, end));
        }
        let workers = self.workers.take();
        let spread = workers.as_ref().is_some_and(|w| self.spread_voices(w, end));
        self.workers = workers;
        if !spread {
            for f in 0..self.split.done.len() {
                self.settle_voice(f, end);
            }
        }
        self.split.active = false;

        let last_event = self.next_event;
        let (mut k, mut d) = (first_event, 0);
        let mut pos = start;
        while pos < end {
            // Events of nodes outside voices at `pos` (the voices' were
            // taken in the first pass).
            while let Some(e) = self.events[..last_event].get(k) {
                let inside = self.slots[e.node].voice.is_some();
                if !inside && e.sample > pos {
                    break;
                }
                if !inside {
                    self.apply_event(k, pos);
                }
                k += 1;
            }
            while let Some(&(at, r)) = self.split.deferred.get(d) {
                if at > pos {
                    break;
                }
                self.set_param(r.node as usize, r.param as usize, r.value, r.ramp, at);
                d += 1;
            }
            let next = self.events[..last_event]
                .get(k)
                .map_or(end, |e| e.sample.clamp(pos + 1, end))
                .min(
                    self.split
                        .deferred
                        .get(d)
                        .map_or(end, |&(at, _)| at.clamp(pos + 1, end)),
                )
                .min(pos.saturating_add(self.max_chunk));
            let n = (next - pos) as usize;
            let offset = (pos - start) as usize;
            self.stage_at = offset;
            let mut flush = self.session_flush;
            for s in 0..self.split.outer.len() {
                let (step, f) = self.split.outer[s];
                if f != flush {
                    guard.set_flush(f);
                    flush = f;
                }
                self.run_step(step, pos, n);
            }
            if flush != self.session_flush {
                guard.set_flush(self.session_flush);
            }
            self.gather_main(offset, n);
            pos = next;
        }
        self.stage_at = 0;
        self.next_event = last_event;
    }

    /// The first pass's events at `pos`: those of voices' nodes apply (the
    /// voice first runs up to `pos`), the others wait for the second pass.
    fn apply_voice_events(&mut self, pos: u64) {
        while let Some(e) = self.events.get(self.next_event) {
            if e.sample > pos {
                break;
            }
            let node = e.node;
            if self.slots[node].voice.is_some() {
                self.settle_slot(node, pos);
                self.apply_event(self.next_event, pos);
            }
            self.next_event += 1;
        }
    }

    /// In the first pass, a change record for a node outside voices waits
    /// for the second: true when `r`, landing at `pos`, was kept for it.
    pub(super) fn defer_control(&mut self, r: ChangeRecord, pos: u64) -> bool {
        if !self.split.active || self.slots[r.node as usize].voice.is_some() {
            return false;
        }
        // Never more than the queue holds: no allocation.
        debug_assert!(self.split.deferred.len() < self.split.deferred.capacity());
        self.split.deferred.push((pos, r));
        true
    }

    /// In the first pass, the voice of slot `i` (if it plays in one) runs
    /// up to `pos`, as something of it is about to change there.
    #[inline]
    pub(super) fn settle_slot(&mut self, i: usize, pos: u64) {
        if let Some(t) = self.slots[i].voice {
            self.settle(t.pool as usize, t.voice as usize, pos);
        }
    }

    /// In the first pass, voice `v` of module `p` runs up to `pos`.
    #[inline]
    pub(super) fn settle(&mut self, p: usize, v: usize, pos: u64) {
        if self.split.active {
            let f = self.split.first[p] + v;
            self.settle_voice(f, pos);
        }
    }

    /// In the first pass, module `p`'s released voices run up to `pos`:
    /// whether one has gone quiet, and so free, by then is known.
    pub(super) fn settle_released(&mut self, p: usize, pos: u64) {
        if !self.split.active {
            return;
        }
        for v in 0..self.voices.pools[p].state.voices.len() {
            if self.voices.pools[p].state.voices[v].phase == super::Phase::Released {
                self.settle(p, v, pos);
            }
        }
    }

    /// Voice `f` (numbered as in [`Split::nodes`]) runs from where it is up
    /// to `to`, its nodes in schedule order, each under its FP mode; its
    /// sound node's outputs land at their offset in the block.
    fn settle_voice(&mut self, f: usize, to: u64) {
        let from = self.split.done[f];
        if from >= to {
            return;
        }
        self.split.done[f] = to;
        let n = (to - from) as usize;
        let at = (from - self.clock) as usize;
        for k in 0..self.split.nodes[f].len() {
            let i = self.split.nodes[f][k];
            let _mode = FpGuard::new(self.slots[i].flush);
            let staged = at > 0 && self.slots[i].voice.is_some_and(|t| t.out);
            if staged {
                match &mut self.slots[i].core {
                    Core::F32(t) => std::mem::swap(&mut t.outs, &mut t.spare),
                    Core::F64(t) => std::mem::swap(&mut t.outs, &mut t.spare),
                }
            }
            self.process_slot(i, from, n);
            if staged {
                match &mut self.slots[i].core {
                    Core::F32(t) => unstage(t, at, n),
                    Core::F64(t) => unstage(t, at, n),
                }
            }
        }
    }
}

/// A chunk just run into the spare buffers (swapped in as the outputs)
/// moves to offset `at` of the block-long outputs, swapped back.
pub(super) fn unstage<S: Copy>(t: &mut Typed<S>, at: usize, n: usize) {
    std::mem::swap(&mut t.outs, &mut t.spare);
    for (out, chunk) in t.outs.iter_mut().zip(&t.spare) {
        out[at..at + n].copy_from_slice(&chunk[..n]);
    }
}
