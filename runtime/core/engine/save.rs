//! A save spread over blocks: the audio thread's copy of the playing
//! engine's state at a block boundary N, in parts small enough for one
//! callback whatever the state's size.
//!
//! [`Engine::save_into`] copies everything at once: for a saw into three
//! delays of 30 s that is 4.3 million samples in one callback, several
//! block budgets at 64 frames. [`Engine::begin_save`] copies at N what
//! is short (oscillators, filters, params, event cursors) and the oldest
//! part of every long history — a node's own (`delay`'s line,
//! `convolution`'s input history, through `NodeProcessor::save_part`), its
//! incoming edges' delay lines, the main bus's alignment lines;
//! [`Engine::continue_save`] copies the next parts before each of the
//! following blocks. Every such history is written one sample per frame at
//! a moving position, and each part copies at least two blocks' worth of
//! each, oldest first from where the next frame writes, so no sample is
//! copied after a frame overwrote it: the buffer ends up holding the state
//! at N exactly, as `save_into` at N would (the tests compare the two).
//!
//! The copy per block is bounded: about [`PART_SAMPLES`] samples shared by
//! the histories still open, and never less than two blocks each. A node
//! reset while the copy runs (NaN recovery, itself spread over blocks the
//! same way) or a discrete param changed by an event would break that
//! reasoning: the save then starts again from the current boundary,
//! which becomes N.

use super::{Core, Engine, EngineState};
use crate::ops::Progress;

/// Samples copied per block, shared by the histories still open: at about
/// a nanosecond each (a copy, or an exact f32 → f64 widening), some 30 µs,
/// a few percent of a 64-frame block at 48 kHz. Three 30 s lines take
/// 132 blocks, 0.18 s.
pub const PART_SAMPLES: usize = 32_768;

/// A part that is complete.
const DONE: usize = usize::MAX;

/// Where a save spread over blocks stands. Allocated with the engine.
pub(super) struct Cursor {
    active: bool,
    /// A node was reset or switched since N: start again.
    spoiled: bool,
    /// Per slot: how far its node state and its edge lines have come.
    parts: Vec<(usize, usize)>,
    bus: usize,
    /// Histories still open after the last part: they share the budget.
    open: usize,
}

impl Cursor {
    pub(super) fn new(slots: usize) -> Cursor {
        Cursor {
            active: false,
            spoiled: false,
            parts: vec![(0, 0); slots],
            bus: 0,
            open: 0,
        }
    }

    /// A node's state changed other than by running (a reset, a discrete
    /// switch): a save in progress starts again.
    pub(super) fn spoil(&mut self) {
        self.spoiled |= self.active;
    }
}

impl Engine {
    /// Starts saving the state at this block boundary (N) into `st`, a
    /// buffer [`snapshot`](Self::snapshot) of this engine shaped. Returns
    /// true if the save is already complete (short state); otherwise
    /// call [`continue_save`](Self::continue_save) before each next
    /// block until it returns true. Real-time safe and bounded.
    pub fn begin_save(&mut self, st: &mut EngineState) -> bool {
        debug_assert_eq!(st.nodes.len(), self.slots.len());
        self.notes_from_save();
        st.clock = self.clock;
        st.next_event = self.next_event;
        st.engine = self.id();
        // The beat grid the engine plays on: the buffer was shaped by a
        // snapshot of this engine before a handover or a resume moved it.
        st.tempo_map = self.tempo_map;
        self.voices.save_into(&mut st.voices);
        for (s, snap) in self.slots.iter().zip(st.nodes.iter_mut()) {
            snap.params.copy_from_slice(&s.params);
            snap.recovery = s.recovery;
            for (i, v) in snap.discrete.iter_mut() {
                // Enum, integer and bool values: no allocation, no free.
                v.clone_from(&s.values[*i]);
            }
        }
        let c = &mut self.save;
        c.parts.iter_mut().for_each(|p| *p = (0, 0));
        c.bus = 0;
        c.active = true;
        c.spoiled = false;
        // Until the first part tells, every slot may hold two histories.
        c.open = 2 * self.slots.len() + 1;
        self.save_part(st)
    }

    /// Copies the next part of a save begun with
    /// [`begin_save`](Self::begin_save); call before each block.
    /// Returns true once `st` holds the state at its `clock`, which is the
    /// sample the save began at unless a node was reset meanwhile (then
    /// it began again at this boundary). True at once if no save runs.
    pub fn continue_save(&mut self, st: &mut EngineState) -> bool {
        if !self.save.active {
            return true;
        }
        if self.save.spoiled {
            return self.begin_save(st);
        }
        self.save_part(st)
    }

    fn save_part(&mut self, st: &mut EngineState) -> bool {
        let per = (2 * self.block_size).max(PART_SAMPLES / self.save.open.max(1));
        let mut open = 0;
        let parts = self.save.parts.iter_mut();
        for ((s, snap), part) in self.slots.iter().zip(st.nodes.iter_mut()).zip(parts) {
            if part.0 != DONE {
                let p = match &s.core {
                    Core::F32(t) => t.node.save_part(&mut snap.state, part.0, per),
                    Core::F64(t) => t.node.save_part(&mut snap.state, part.0, per),
                };
                part.0 = match p {
                    Progress::Done => DONE,
                    Progress::Copied(n) => {
                        open += 1;
                        n
                    }
                };
            }
            if part.1 != DONE {
                let (next, complete) = match &s.core {
                    Core::F32(t) => rings_part(&t.rings, &mut snap.edges, part.1, per),
                    Core::F64(t) => rings_part(&t.rings, &mut snap.edges, part.1, per),
                };
                part.1 = if complete {
                    DONE
                } else {
                    open += 1;
                    next
                };
            }
        }
        if self.save.bus != DONE {
            let (next, complete) = self.bus.save_part(&mut st.main, self.save.bus, per);
            self.save.bus = if complete {
                DONE
            } else {
                open += 1;
                next
            };
        }
        self.save.open = open;
        self.save.active = open > 0;
        open == 0
    }
}

/// The next part of a node's edge delay lines; whether all are complete.
fn rings_part<S: crate::dsp::Sample>(
    rings: &[super::Ring<S>],
    saved: &mut [(Vec<f64>, usize)],
    done: usize,
    budget: usize,
) -> (usize, bool) {
    let mut complete = true;
    let mut next = done;
    for (r, e) in rings.iter().zip(saved.iter_mut()) {
        let n = r.save_part(e, done, budget);
        complete &= n >= e.0.len();
        next = next.max(n);
    }
    (next, complete)
}
