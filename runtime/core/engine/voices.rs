//! Voice modules at run time: which voice plays which note, and what a
//! voice costs when it plays none.
//!
//! **The rules** (the same under every profile, counted in samples alone):
//! - Notes on one sample are taken note-offs first, then the sustain pedal,
//!   then note-ons, each kind in the order it came (file order for the
//!   scene's events, arrival order for MIDI and OSC); but a note-off from
//!   outside that came after a note-on of the same note on that sample is
//!   taken after it, in the order they came (a note struck and released
//!   on one sample starts and is released, never held).
//! - A note-on takes, in this order: the voice that holds or releases the
//!   same note (unless the module says `"same_note": "new"`); else the free
//!   voice that is clean first (of those, the lowest index); else it
//!   steals the voice released longest ago; else the voice held longest.
//!   A stolen voice fades out linearly over the module's `steal_fade`
//!   (5 ms by default) and then starts the new note from a clean state. A repeated note on a released voice starts
//!   again from where the voice is (its gate opens again), without a fade.
//! - Starting a note resets the voice's nodes (their params keep what the
//!   scene, its events and its controls made them) and then sets the
//!   note's pitch (Hz), gate (1) and velocity (0…1) params.
//! - **Long state is cleared over time, never in one block.** In a voice
//!   module whose voice holds a node with more than [`SHORT_STATE`]
//!   samples of state (a `delay` line, a `reverb`, a `convolution`
//!   history, a `limiter` or `compressor` lookahead, a `chorus` or
//!   `flanger` line), a voice that stops running (it goes free, or its
//!   steal fade ends) is cleared at [`CLEAR_PER_SAMPLE`] samples of state
//!   per sample of time, one voice of the module after the other, in the
//!   order they stopped: a voice whose longest node holds L samples takes
//!   ⌊L / 512⌋ + 1 samples (a 2 s `delay` at 48 kHz: 188 samples, 3.9 ms).
//!   A note that takes a voice still being cleared (a stolen one, or a
//!   free one freed a moment ago) starts once it is clean, the voice
//!   silent until then; a note on a free voice prefers the one clean
//!   first (the free voices of a module without long state are all clean,
//!   so it takes the lowest index). The state a note starts from is the
//!   same as a fresh voice's, bit for bit. Counted in samples, so the
//!   same at every block size.
//! - A note-off closes the gate, unless the pedal is down: the note is then
//!   held until the pedal comes up.
//! - A key pressure (poly aftertouch) moves its param on the voices that
//!   play its note (held or released), in the order it came among the
//!   note-ons of its sample, so a pressure right after its note-on reaches
//!   the voice that note took; a bend glides every sounding voice's pitch.
//! - **Legato** (a module with `"legato": true`, one voice): a note-on
//!   while the voice holds a note retunes it — its pitch param alone moves
//!   to the new note, the gate stays open, nothing is reset — and the note
//!   it held waits underneath (the newest [`HELD_NOTES`] are kept). A
//!   note-off of the sounding note returns to the newest note still held,
//!   or, with none, releases the voice; a note-off of a note underneath
//!   only forgets it (last-note priority). A note-on while the voice is
//!   released or free starts it as any module does. Each note ends
//!   ([`NoteEnd`]) once: the one a note-off leaves and one forgotten
//!   underneath at once, the one sounding when its voice goes free, those
//!   underneath when the voice is released.
//! - A released voice is free once its sound has stayed below −100 dBFS
//!   for [`FREE_AFTER_MS`](crate::graph::FREE_AFTER_MS) (or, with
//!   `release_end`, once that node's output is that quiet): its sound ends
//!   there, sample-exactly, and its nodes are not run again until it plays
//!   another note. A free voice costs nothing.

use super::node::{Core, Slot, Typed, VoiceOf};
use super::{ChangeReport, Engine, Outcome};
use crate::dsp::Sample;
use crate::graph::{NoteAction, PlanNote, VoicePool, BEND_GLIDE_MS, VOICE_SILENCE};
use crate::ops::{ParamState, Ramp};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Notes from outside (OSC, MIDI) that may wait at once for their sample.
pub const NOTE_QUEUE: usize = 1024;

/// Notes a legato module keeps underneath the one it sounds (the newest:
/// a note struck past these forgets the oldest).
pub const HELD_NOTES: usize = 32;

/// Samples of state a voice's node is cleared by per sample of time (see
/// the module docs): at 64 frames a block, 32768 a node, the budget NaN
/// recovery and saves spend per block.
pub const CLEAR_PER_SAMPLE: u64 = 512;

/// A voice whose every node holds at most this many samples of state is
/// reset at once when it starts a note, as cheaply as a sample's clearing.
pub const SHORT_STATE: u64 = CLEAR_PER_SAMPLE;

/// A note from outside (OSC, MIDI) resolved against one engine: what
/// crosses to the audio thread beside the change records. Its report
/// ([`ChangeReport`], `node` the pool) says where it landed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoteRecord {
    /// The note and the sample it is for.
    pub note: PlanNote,
    /// The [`Engine::id`] it was resolved against.
    pub engine: u64,
    /// The sender's number for it (not 0), returned in its report.
    pub seq: u64,
}

/// A note whose sound ended: its voice went free, or the note was
/// stolen (at the end of the steal fade, or at once without one), or
/// every sound of its module stopped, or a legato voice left it for good
/// (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoteEnd {
    /// The first sample it no longer sounds at.
    pub sample: u64,
    /// Its voice module (the pool's index).
    pub pool: usize,
    /// Which note it was (the bits of its pitch in Hz).
    pub key: u64,
    /// The tag that tied it to its note-off (0: none).
    pub tag: u64,
}

/// Where a voice is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Silent and not run.
    #[default]
    Free,
    /// Its note is held (gate open).
    Held,
    /// Its note ended (gate closed); it sounds until it is quiet.
    Released,
    /// Fading out to start another note at `restart_at`.
    Stealing,
}

/// A note waiting for a stolen voice to fade out.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pending {
    /// Which note it is (the bits of its pitch in Hz).
    pub key: u64,
    /// The tag that ties it to its note-off (0: none).
    pub tag: u64,
    /// Its pitch, in Hz.
    pub pitch_hz: f64,
    /// Its velocity, 0…1.
    pub velocity: f64,
    /// Its note-off came before it started: the voice goes free instead.
    pub cancelled: bool,
}

/// One voice's allocator state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Voice {
    /// Where the voice is in its life.
    pub phase: Phase,
    /// The note it plays (the bits of its pitch in Hz) and its tag.
    pub key: u64,
    /// The tag of the note it plays (0: none).
    pub tag: u64,
    /// When its note started and when it was released, as the pool's
    /// note count: smaller is older.
    pub started: u64,
    /// When its note was released, as the pool's note count.
    pub released: u64,
    /// Its note-off came while the pedal was down.
    pub sustained: bool,
    /// Samples its sound has been quiet since it was released.
    pub quiet: u64,
    /// While stealing: the sample its next note starts at.
    pub restart_at: u64,
    /// While stealing: the note it starts at `restart_at`.
    pub next: Pending,
    /// Its nodes are clean (as built) from this sample on; they are being
    /// cleared until then (0: clean). Only in a module with long state.
    pub clean_at: u64,
    /// Stealing, its fade over: silent and not run until `restart_at`,
    /// when its nodes are clean.
    pub clearing: bool,
}

/// A voice module's allocator state, as snapshots and handovers carry it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolState {
    /// The id of the voice module.
    pub module: String,
    /// Every voice, in voice order.
    pub voices: Vec<Voice>,
    /// The sustain pedal is down.
    pub sustain: bool,
    /// Notes started so far (the age counter).
    pub seq: u64,
    /// Notes lost because every voice was already fading out for another.
    pub dropped: u64,
    /// Where the module's clearing of voices ends: the last voice queued
    /// for clearing is clean from this sample on.
    pub clear_until: u64,
    /// The pitch bend, in semitones (0: none).
    pub bend: f64,
    /// A legato module's notes held under the one it sounds, oldest
    /// first (at most [`HELD_NOTES`]; empty otherwise).
    pub held: Vec<Pending>,
}

/// A voice module in the engine.
pub(super) struct Pool {
    pub(super) plan: VoicePool,
    pub(super) state: PoolState,
    /// Voices fading out (so a chunk looks for restarts only then).
    stealing: usize,
    /// Samples a voice takes to be cleared (0: short state, reset at once
    /// when a note starts).
    clear_len: u64,
}

/// The engine's voice modules and their notes.
pub(super) struct Voices {
    pub(super) pools: Vec<Pool>,
    /// The plan's notes, by sample, and the next one due.
    notes: Vec<PlanNote>,
    next: usize,
    /// Notes from outside, by sample then arrival (a heap: an early note
    /// arriving late costs a few swaps, not a shift of the queue); the
    /// order within a sample is made when they land ([`Batch`]).
    /// Preallocated to `room`.
    incoming: BinaryHeap<Reverse<Queued>>,
    room: usize,
    /// Notes queued so far: the arrival order.
    arrived: u64,
    batch: Batch,
    /// Some module clears its voices over time.
    clears: bool,
    /// The notes from outside taken since the last save began, at the
    /// samples they took effect (preallocated to `room`): an engine
    /// migrated from that save has not heard them.
    since_save: Vec<PlanNote>,
    /// The notes that ended since they were last taken (preallocated:
    /// more are not kept).
    ended: Vec<NoteEnd>,
}

/// A note from outside waiting for its sample, with the `seq` its report
/// carries (0: none).
#[derive(Clone, Copy, Debug)]
struct Queued {
    note: PlanNote,
    seq: u64,
    arrival: u64,
}

impl Queued {
    fn key(&self) -> (u64, u64) {
        (self.note.sample, self.arrival)
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Queued {}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Queued {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// The notes from outside landing on one sample, in arrival order, and
/// the order they are taken in (preallocated: no allocation).
struct Batch {
    /// Each note, its `seq` and its rank: [`NoteAction::rank`], except a
    /// note-off that came after a note-on of its note, which ranks with
    /// the note-ons.
    notes: Vec<(PlanNote, u64, u8)>,
    /// (pool, key, index in `notes`) of the ons and offs, to find those.
    keys: Vec<(usize, u64, usize)>,
}

impl Batch {
    fn with_capacity(n: usize) -> Batch {
        Batch {
            notes: Vec::with_capacity(n),
            keys: Vec::with_capacity(n),
        }
    }

    /// Ranks the notes in `notes`: a note-off ranks with the note-ons
    /// when a note-on of the same module and key came before it (notes
    /// from outside carry tag 0: an off releases whichever voice holds
    /// its key).
    fn rank(&mut self) {
        self.keys.clear();
        for (i, (n, _, _)) in self.notes.iter().enumerate() {
            if let NoteAction::On { key, .. } | NoteAction::Off { key, .. } = n.action {
                self.keys.push((n.pool, key, i));
            }
        }
        // Unique keys (the index): the same order on every run.
        self.keys.sort_unstable();
        let mut group = None;
        let mut struck = false;
        for &(pool, key, i) in &self.keys {
            if group != Some((pool, key)) {
                group = Some((pool, key));
                struck = false;
            }
            let (n, _, rank) = &mut self.notes[i];
            match n.action {
                NoteAction::On { .. } => struck = true,
                NoteAction::Off { .. } if struck => *rank = NoteAction::ON_RANK,
                _ => {}
            }
        }
    }
}

impl Voices {
    pub(super) fn new(pools: Vec<VoicePool>, notes: Vec<PlanNote>) -> Voices {
        let queue = if pools.is_empty() { 0 } else { NOTE_QUEUE };
        Voices {
            pools: pools
                .into_iter()
                .map(|plan| Pool {
                    state: PoolState {
                        module: plan.module.clone(),
                        voices: vec![Voice::default(); plan.nodes.len()],
                        held: Vec::with_capacity(HELD_NOTES),
                        ..PoolState::default()
                    },
                    plan,
                    stealing: 0,
                    clear_len: 0,
                })
                .collect(),
            notes,
            next: 0,
            incoming: BinaryHeap::with_capacity(queue),
            room: queue,
            arrived: 0,
            batch: Batch::with_capacity(queue),
            clears: false,
            since_save: Vec::with_capacity(queue),
            ended: Vec::with_capacity(queue),
        }
    }

    /// Measures each module's clearing time on its freshly built nodes.
    pub(super) fn measure(&mut self, slots: &mut [Slot]) {
        for pool in &mut self.pools {
            let longest = pool
                .plan
                .nodes
                .iter()
                .flatten()
                .map(|&i| slots[i].reset_len())
                .max()
                .unwrap_or(0);
            pool.clear_len = if longest <= SHORT_STATE {
                0
            } else {
                longest / CLEAR_PER_SAMPLE + 1
            };
        }
        self.clears = self.pools.iter().any(|p| p.clear_len > 0);
    }

    /// Each slot's voice, by schedule index.
    pub(super) fn tags(&self, slots: usize) -> Vec<Option<VoiceOf>> {
        let mut tags = vec![None; slots];
        for (p, pool) in self.pools.iter().enumerate() {
            for (v, nodes) in pool.plan.nodes.iter().enumerate() {
                for (k, &i) in nodes.iter().enumerate() {
                    tags[i] = Some(VoiceOf {
                        pool: p as u32,
                        voice: v as u32,
                        out: k == pool.plan.out,
                    });
                }
            }
        }
        tags
    }

    /// Whether param `pi` of slot `si` (of voice `tag`) is one a note sets:
    /// its voice's pitch, gate or velocity. Those belong to the notes, so
    /// an edit of the scene's value does not move them.
    pub(super) fn note_param(&self, tag: Option<VoiceOf>, si: usize, pi: usize) -> bool {
        let Some(t) = tag else {
            return false;
        };
        let plan = &self.pools[t.pool as usize].plan;
        let nodes = &plan.nodes[t.voice as usize];
        [plan.pitch, plan.gate, plan.velocity]
            .into_iter()
            .flatten()
            .any(|(k, p)| p == pi && nodes[k] == si)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pools.is_empty()
    }

    /// Whether a node of voice `tag` (if any) is idle: its voice is free
    /// or being cleared.
    #[inline]
    pub(super) fn idle(&self, tag: Option<super::node::VoiceOf>) -> bool {
        match tag {
            Some(t) => {
                let v = &self.pools[t.pool as usize].state.voices[t.voice as usize];
                v.phase == Phase::Free || v.clearing
            }
            None => false,
        }
    }

    /// Whether some module clears its voices over time (long state).
    pub(super) fn clears(&self) -> bool {
        self.clears
    }

    /// The next sample at which something is due: a note or a stolen
    /// voice's restart (`u64::MAX`: none).
    pub(super) fn next_sample(&self) -> u64 {
        let mut next = self.notes.get(self.next).map_or(u64::MAX, |n| n.sample);
        if let Some(Reverse(q)) = self.incoming.peek() {
            next = next.min(q.note.sample);
        }
        for p in &self.pools {
            if p.stealing > 0 {
                for v in &p.state.voices {
                    if v.phase == Phase::Stealing {
                        next = next.min(v.restart_at);
                    }
                }
            }
        }
        next
    }

    /// Moves the plan's note cursor to `clock` (a handover or a resume).
    pub(super) fn seek(&mut self, clock: u64) {
        self.next = self.notes.partition_point(|n| n.sample < clock);
        self.incoming.clear();
    }

    /// Every pool's allocator state.
    pub(super) fn states(&self) -> Vec<PoolState> {
        self.pools
            .iter()
            .map(|p| {
                let mut s = p.state.clone();
                s.held.reserve_exact(HELD_NOTES - s.held.len());
                s
            })
            .collect()
    }

    /// Copies the allocator states into `out` (shaped by [`states`]):
    /// no allocation.
    pub(super) fn save_into(&self, out: &mut [PoolState]) {
        for (p, o) in self.pools.iter().zip(out.iter_mut()) {
            o.voices.copy_from_slice(&p.state.voices);
            o.sustain = p.state.sustain;
            o.seq = p.state.seq;
            o.dropped = p.state.dropped;
            o.clear_until = p.state.clear_until;
            o.bend = p.state.bend;
            o.held.clear();
            o.held.extend_from_slice(&p.state.held);
        }
    }

    /// Takes the allocator states of `states` by module id: the voices both
    /// pools have carry (a pool grown by an edit has its new voices free;
    /// one shrunk loses its last voices).
    pub(super) fn load(&mut self, states: &[PoolState]) {
        for p in &mut self.pools {
            let Some(s) = states.iter().find(|s| s.module == p.plan.module) else {
                continue;
            };
            let n = p.state.voices.len().min(s.voices.len());
            p.state.voices[..n].copy_from_slice(&s.voices[..n]);
            p.state.sustain = s.sustain;
            p.state.seq = s.seq;
            p.state.dropped = s.dropped;
            p.state.clear_until = s.clear_until;
            p.state.bend = s.bend;
            p.state.held.clear();
            if p.plan.legato && p.state.voices[0].phase == Phase::Held {
                let keep = s.held.len().min(HELD_NOTES);
                p.state
                    .held
                    .extend_from_slice(&s.held[s.held.len() - keep..]);
            }
            p.stealing = p
                .state
                .voices
                .iter()
                .filter(|v| v.phase == Phase::Stealing)
                .count();
        }
    }

    /// A note of pool `p` ended at `sample` (kept while the list has
    /// room).
    fn end(&mut self, p: usize, key: u64, tag: u64, sample: u64) {
        if self.ended.len() < self.ended.capacity() {
            self.ended.push(NoteEnd {
                sample,
                pool: p,
                key,
                tag,
            });
        }
    }

    /// A legato pool `p`'s notes underneath end at `sample`: its voice is
    /// released or silenced.
    fn drop_held(&mut self, p: usize, sample: u64) {
        while let Some(n) = self.pools[p].state.held.pop() {
            self.end(p, n.key, n.tag, sample);
        }
    }

    /// Puts every voice back to free (the engine's reset).
    pub(super) fn reset(&mut self) {
        for p in &mut self.pools {
            p.state
                .voices
                .iter_mut()
                .for_each(|v| *v = Voice::default());
            p.state.sustain = false;
            p.state.seq = 0;
            p.state.dropped = 0;
            p.state.clear_until = 0;
            p.state.bend = 0.0;
            p.state.held.clear();
            p.stealing = 0;
        }
        self.next = 0;
        self.incoming.clear();
    }
}

impl Engine {
    /// Queues a note from outside for its sample (a past one lands at the
    /// next chunk; under a block-accurate profile at the start of its
    /// block), after the notes already waiting for that sample. False when
    /// the queue is full or the plan has no such voice module. Real-time
    /// safe.
    pub fn push_note(&mut self, note: PlanNote) -> bool {
        self.queue_note(note, 0)
    }

    /// Queues a note resolved against this engine (real-time safe); its
    /// [`ChangeReport`] says where it landed. A note resolved for another
    /// engine is reported [`Outcome::Stale`], for the sender to resolve
    /// again.
    pub fn push_note_record(&mut self, r: NoteRecord) -> Result<(), ChangeReport> {
        let refuse = |outcome| ChangeReport {
            seq: r.seq,
            outcome,
        };
        if r.engine != self.id() || r.note.pool >= self.voices.pools.len() {
            return Err(refuse(Outcome::Stale));
        }
        if self.queue_note(r.note, r.seq) {
            Ok(())
        } else {
            Err(refuse(Outcome::Full))
        }
    }

    /// Room left in the queue of notes from outside.
    pub(crate) fn note_room(&self) -> usize {
        self.voices.room - self.voices.incoming.len()
    }

    fn queue_note(&mut self, mut note: PlanNote, seq: u64) -> bool {
        note.sample = self.landing_sample(note.sample);
        let v = &mut self.voices;
        if note.pool >= v.pools.len() || v.incoming.len() >= v.room {
            return false;
        }
        v.arrived += 1;
        // Within the capacity reserved in `Voices::new`: no allocation.
        v.incoming.push(Reverse(Queued {
            note,
            seq,
            arrival: v.arrived,
        }));
        true
    }

    /// A save begins: the notes from outside are counted from here.
    /// Real-time safe.
    pub(super) fn notes_from_save(&mut self) {
        self.voices.since_save.clear();
    }

    /// At the swap to this engine from `old`, migrated from `old`'s last
    /// save: the notes from outside `old` took since that save, which
    /// this engine has not heard, land here at the swap sample, in their
    /// order (a note off between the save and the swap would otherwise
    /// leave its note held). Real-time safe.
    pub(super) fn take_notes_since_save(&mut self, old: &mut Engine) {
        for i in 0..old.voices.since_save.len() {
            let n = old.voices.since_save[i];
            self.push_note_as(old, n);
        }
        old.voices.since_save.clear();
    }

    /// At the swap to this engine from `old`: the notes still waiting in
    /// `old`'s queue move here, to the voice module of the same id (a
    /// note whose module the edit removed is reported removed). Real-time
    /// safe.
    pub(super) fn carry_notes_from(&mut self, old: &mut Engine) {
        while let Some(Reverse(Queued {
            note: mut n, seq, ..
        })) = old.voices.incoming.pop()
        {
            let module = &old.voices.pools[n.pool].plan.module;
            let pool = self
                .voices
                .pools
                .iter()
                .position(|p| &p.plan.module == module);
            let outcome = match pool {
                Some(p) => {
                    n.pool = p;
                    if self.queue_note(n, seq) {
                        continue;
                    }
                    Outcome::Full
                }
                None => Outcome::Removed,
            };
            if seq != 0 {
                self.report_control(seq, outcome);
            }
        }
    }

    /// Queues `note`, resolved against `other` (its pool is one of
    /// `other`'s), on this engine's voice module of the same id, without a
    /// report: the engine fading out under `other` hears what `other`
    /// hears. Whether it was queued (false: no such module, or the queue
    /// is full). Real-time safe.
    pub(super) fn push_note_as(&mut self, other: &Engine, mut note: PlanNote) -> bool {
        let Some(module) = other.voices.pools.get(note.pool).map(|p| &p.plan.module) else {
            return false;
        };
        match self
            .voices
            .pools
            .iter()
            .position(|p| &p.plan.module == module)
        {
            Some(pool) => {
                note.pool = pool;
                self.queue_note(note, 0)
            }
            None => false,
        }
    }

    /// The voice module `module`'s index for [`push_note`](Self::push_note).
    pub fn voice_pool(&self, module: &str) -> Option<usize> {
        self.voices
            .pools
            .iter()
            .position(|p| p.plan.module == module)
    }

    /// Every voice module's allocator state.
    pub fn voice_states(&self) -> Vec<PoolState> {
        self.voices.states()
    }

    /// Voices sounding (not free) in each voice module.
    pub fn voices_sounding(&self) -> Vec<(String, usize)> {
        self.voices
            .pools
            .iter()
            .map(|p| {
                (
                    p.plan.module.clone(),
                    p.state
                        .voices
                        .iter()
                        .filter(|v| v.phase != Phase::Free)
                        .count(),
                )
            })
            .collect()
    }

    /// Whether slot `i` belongs to a free voice (and so is not run).
    #[inline]
    pub(super) fn voice_idle(&self, i: usize) -> bool {
        self.voices.idle(self.slots[i].voice)
    }

    /// Takes the notes due at `pos`: stolen voices whose fade ended start
    /// their note, then the plan's and the incoming notes at `pos`.
    pub(super) fn apply_notes(&mut self, pos: u64) {
        if self.voices.is_empty() {
            return;
        }
        for p in 0..self.voices.pools.len() {
            if self.voices.pools[p].stealing == 0 {
                continue;
            }
            for v in 0..self.voices.pools[p].state.voices.len() {
                let voice = self.voices.pools[p].state.voices[v];
                if voice.phase == Phase::Stealing && voice.restart_at <= pos {
                    self.settle(p, v, pos);
                    self.voices.pools[p].stealing -= 1;
                    if !voice.clearing {
                        // Its fade is over: it stops running here.
                        self.begin_clear(p, v, pos);
                        self.note_ended(p, voice, pos);
                    }
                    if voice.next.cancelled {
                        self.free_voice(p, v);
                    } else {
                        self.start_voice(p, v, voice.next, pos);
                    }
                }
            }
        }
        while let Some(n) = self.voices.notes.get(self.voices.next) {
            if n.sample > pos {
                break;
            }
            let n = *n;
            self.voices.next += 1;
            self.take_note(n.pool, n.action, pos);
        }
        while let Some(Reverse(first)) = self.voices.incoming.peek() {
            let sample = first.note.sample;
            if sample > pos {
                break;
            }
            let v = &mut self.voices;
            v.batch.notes.clear();
            while let Some(Reverse(q)) = v.incoming.peek() {
                if q.note.sample != sample {
                    break;
                }
                let q = v.incoming.pop().expect("a peeked note").0;
                v.batch.notes.push((q.note, q.seq, q.note.action.rank()));
            }
            v.batch.rank();
            for rank in 0..=NoteAction::ON_RANK {
                for i in 0..self.voices.batch.notes.len() {
                    let (n, seq, r) = self.voices.batch.notes[i];
                    if r == rank {
                        self.take_incoming(n, seq, pos);
                    }
                }
            }
        }
    }

    fn take_incoming(&mut self, n: PlanNote, seq: u64, pos: u64) {
        self.take_note(n.pool, n.action, pos);
        let log = &mut self.voices.since_save;
        if log.len() < log.capacity() {
            log.push(PlanNote { sample: pos, ..n });
        }
        if seq != 0 {
            let outcome = Outcome::Applied {
                at: pos,
                node: n.pool as u32,
                engine: self.id(),
            };
            self.report_control(seq, outcome);
        }
    }

    fn take_note(&mut self, p: usize, action: NoteAction, pos: u64) {
        match action {
            NoteAction::On {
                key,
                tag,
                pitch_hz,
                velocity,
            } => self.note_on(
                p,
                Pending {
                    key,
                    tag,
                    pitch_hz,
                    velocity,
                    cancelled: false,
                },
                pos,
            ),
            NoteAction::Off { key, tag } => self.note_off(p, key, tag, pos),
            NoteAction::Sustain(down) => {
                let pool = &mut self.voices.pools[p];
                pool.state.sustain = down;
                if !down {
                    for v in 0..pool.state.voices.len() {
                        let voice = self.voices.pools[p].state.voices[v];
                        if voice.phase == Phase::Held
                            && voice.sustained
                            && !self.legato_return(p, pos)
                        {
                            self.release_voice(p, v, pos);
                        }
                    }
                }
            }
            NoteAction::Bend(semitones) => self.bend(p, semitones, pos),
            NoteAction::Touch {
                key,
                node,
                param,
                value,
                ramp,
            } => {
                let target = TemplateParam {
                    node: node as usize,
                    param: param as usize,
                };
                self.touch(p, key, target, value, ramp, pos)
            }
            NoteAction::AllNotesOff => self.all_notes_off(p, pos),
            NoteAction::AllSoundOff => self.all_sound_off(p, pos),
        }
    }

    /// Every held note of pool `p` is released (held by the pedal too, and
    /// the pedal comes up); a note waiting for a stolen voice is dropped.
    fn all_notes_off(&mut self, p: usize, pos: u64) {
        self.voices.pools[p].state.sustain = false;
        for v in 0..self.voices.pools[p].state.voices.len() {
            let voice = &mut self.voices.pools[p].state.voices[v];
            match voice.phase {
                Phase::Held => self.release_voice(p, v, pos),
                Phase::Stealing => voice.next.cancelled = true,
                Phase::Free | Phase::Released => {}
            }
        }
    }

    /// Every voice of pool `p` is free at once: silent from this sample.
    fn all_sound_off(&mut self, p: usize, pos: u64) {
        self.settle_released(p, pos);
        self.voices.drop_held(p, pos);
        self.voices.pools[p].state.sustain = false;
        for v in 0..self.voices.pools[p].state.voices.len() {
            let voice = self.voices.pools[p].state.voices[v];
            if voice.phase != Phase::Free {
                if !voice.clearing {
                    self.note_ended(p, voice, pos);
                }
                self.settle(p, v, pos);
                self.free_voice(p, v);
            }
        }
        self.voices.pools[p].stealing = 0;
    }

    /// The pressure of note `key` in pool `p` (poly aftertouch): the
    /// `target` param of the voice playing `key` (held, or released and
    /// still sounding) moves; no other voice does. A node the template no
    /// longer has moves nothing.
    fn touch(
        &mut self,
        p: usize,
        key: u64,
        target: TemplateParam,
        value: crate::graph::ControlValue,
        ramp: u64,
        pos: u64,
    ) {
        self.settle_released(p, pos);
        for v in 0..self.voices.pools[p].state.voices.len() {
            let voice = self.voices.pools[p].state.voices[v];
            if voice.key != key || !matches!(voice.phase, Phase::Held | Phase::Released) {
                continue;
            }
            if let Some(&i) = self.voices.pools[p].plan.nodes[v].get(target.node) {
                self.set_param(i, target.param, value, ramp, pos);
            }
        }
    }

    /// Pool `p` bends by `semitones`: every sounding voice's pitch glides
    /// there over [`BEND_GLIDE_MS`] from `pos`.
    fn bend(&mut self, p: usize, semitones: f64, pos: u64) {
        self.voices.pools[p].state.bend = semitones;
        let Some((k, pi)) = self.voices.pools[p].plan.pitch else {
            return;
        };
        let ratio = bend_ratio(semitones);
        let len = (BEND_GLIDE_MS * f64::from(self.sample_rate) / 1000.0).round() as u64;
        self.settle_released(p, pos);
        for v in 0..self.voices.pools[p].state.voices.len() {
            let voice = self.voices.pools[p].state.voices[v];
            if voice.phase == Phase::Free {
                continue;
            }
            self.settle(p, v, pos);
            let i = self.voices.pools[p].plan.nodes[v][k];
            self.unsteady(i);
            let param = &mut self.slots[i].params[pi];
            let from = param.at(pos);
            *param = ParamState {
                value: f64::from_bits(voice.key) * ratio,
                ramp: (len != 0).then_some(Ramp {
                    from,
                    start: pos,
                    len,
                }),
            };
            self.ramps_live |= len != 0;
        }
    }

    fn note_on(&mut self, p: usize, note: Pending, pos: u64) {
        self.settle_released(p, pos);
        let pool = &self.voices.pools[p];
        let voices = &pool.state.voices;
        if pool.plan.legato && voices[0].phase == Phase::Held {
            self.legato_on(p, note, pos);
            return;
        }
        if pool.plan.reuse_same_note {
            if let Some(v) = voices
                .iter()
                .position(|x| matches!(x.phase, Phase::Held | Phase::Released) && x.key == note.key)
            {
                if voices[v].phase == Phase::Released {
                    self.regate(p, v, note, pos);
                } else {
                    self.steal(p, v, note, pos);
                }
                return;
            }
            if let Some(v) = voices
                .iter()
                .position(|x| x.phase == Phase::Stealing && x.next.key == note.key)
            {
                self.voices.pools[p].state.voices[v].next = note;
                return;
            }
        }
        // The free voice clean first (all are clean without long state),
        // of those the lowest.
        if let Some((v, _)) = voices
            .iter()
            .enumerate()
            .filter(|(_, x)| x.phase == Phase::Free)
            .min_by_key(|(i, x)| (x.clean_at.max(pos), *i))
        {
            self.start_voice(p, v, note, pos);
            return;
        }
        let oldest = |phase: Phase, age: fn(&Voice) -> u64| {
            voices
                .iter()
                .enumerate()
                .filter(|(_, x)| x.phase == phase)
                .min_by_key(|(i, x)| (age(x), *i))
                .map(|(i, _)| i)
        };
        if let Some(v) =
            oldest(Phase::Released, |x| x.released).or_else(|| oldest(Phase::Held, |x| x.started))
        {
            self.steal(p, v, note, pos);
        } else if let Some(v) = oldest(Phase::Stealing, |x| x.started) {
            // Every voice is already fading out for a note: the one whose
            // note is oldest takes this one instead.
            let pool = &mut self.voices.pools[p];
            pool.state.voices[v].next = note;
            pool.state.dropped += 1;
        }
    }

    fn note_off(&mut self, p: usize, key: u64, tag: u64, pos: u64) {
        let matches = |k: u64, t: u64| k == key && (tag == 0 || t == tag);
        let held = &mut self.voices.pools[p].state.held;
        if let Some(i) = held.iter().rposition(|n| matches(n.key, n.tag)) {
            // A note underneath a legato voice's: forgotten, nothing sounds
            // different.
            let gone = held.remove(i);
            self.voices.end(p, gone.key, gone.tag, pos);
            return;
        }
        let n = self.voices.pools[p].state.voices.len();
        for v in 0..n {
            let pool = &mut self.voices.pools[p];
            let voice = &mut pool.state.voices[v];
            let matches = |k: u64, t: u64| k == key && (tag == 0 || t == tag);
            match voice.phase {
                Phase::Held if matches(voice.key, voice.tag) => {
                    if pool.state.sustain {
                        voice.sustained = true;
                    } else if !self.legato_return(p, pos) {
                        self.release_voice(p, v, pos);
                    }
                    if tag == 0 {
                        return;
                    }
                }
                Phase::Stealing if matches(voice.next.key, voice.next.tag) => {
                    voice.next.cancelled = true;
                }
                _ => {}
            }
        }
    }

    /// Legato pool `p`'s held voice takes `note` at `pos`: its pitch param
    /// moves there (the gate, the velocity and every node's state stay),
    /// and the note it played waits underneath unless it was only held by
    /// the pedal.
    ///
    /// A note that leaves for good — the pedal's, one struck again, the
    /// oldest past [`HELD_NOTES`] — ends here ([`NoteEnd`]).
    fn legato_on(&mut self, p: usize, note: Pending, pos: u64) {
        self.settle(p, 0, pos);
        let voices = &mut self.voices;
        let voice = voices.pools[p].state.voices[0];
        let held = &mut voices.pools[p].state.held;
        let mut gone = [None; 2];
        if let Some(i) = held.iter().position(|n| n.key == note.key) {
            gone[0] = Some(held.remove(i));
        }
        if voice.sustained {
            gone[1] = Some(Pending {
                key: voice.key,
                tag: voice.tag,
                ..Pending::default()
            });
        } else {
            if held.len() == HELD_NOTES {
                gone[1] = Some(held.remove(0));
            }
            held.push(Pending {
                key: voice.key,
                tag: voice.tag,
                pitch_hz: f64::from_bits(voice.key),
                velocity: 0.0,
                cancelled: false,
            });
        }
        for n in gone.into_iter().flatten() {
            voices.end(p, n.key, n.tag, pos);
        }
        self.retune(p, note);
    }

    /// A note-off took legato pool `p`'s sounding note: it returns to the
    /// newest note still held underneath (true), or has none (false).
    fn legato_return(&mut self, p: usize, pos: u64) -> bool {
        let Some(note) = self.voices.pools[p].state.held.pop() else {
            return false;
        };
        self.settle(p, 0, pos);
        let left = self.voices.pools[p].state.voices[0];
        self.voices.end(p, left.key, left.tag, pos);
        self.retune(p, note);
        true
    }

    /// Legato pool `p`'s voice plays `note` from where it is: its key, tag
    /// and pitch param change, nothing else.
    fn retune(&mut self, p: usize, note: Pending) {
        let pool = &mut self.voices.pools[p];
        let voice = &mut pool.state.voices[0];
        voice.key = note.key;
        voice.tag = note.tag;
        voice.sustained = false;
        voice.started = pool.state.seq;
        pool.state.seq += 1;
        if let Some((k, pi)) = pool.plan.pitch {
            let ratio = bend_ratio(pool.state.bend);
            self.slots[pool.plan.nodes[0][k]].params[pi] =
                ParamState::constant(note.pitch_hz * ratio);
        }
    }

    /// Voice `v` fades out from `pos` and then plays `note`.
    fn steal(&mut self, p: usize, v: usize, note: Pending, pos: u64) {
        self.settle(p, v, pos);
        let pool = &mut self.voices.pools[p];
        let fade = pool.plan.steal_fade;
        if fade == 0 || pool.state.voices[v].phase == Phase::Free {
            self.start_voice(p, v, note, pos);
            return;
        }
        let voice = &mut pool.state.voices[v];
        voice.phase = Phase::Stealing;
        voice.restart_at = pos + fade;
        voice.next = note;
        pool.stealing += 1;
    }

    /// Voice `v` starts `note` from a clean state at `pos`: reset at once
    /// (short state), or once its clearing is over (the voice waits
    /// silent, as a stolen one does).
    fn start_voice(&mut self, p: usize, v: usize, note: Pending, pos: u64) {
        self.settle(p, v, pos);
        let voice = self.voices.pools[p].state.voices[v];
        if matches!(voice.phase, Phase::Held | Phase::Released) {
            // Stolen without a fade: its note ends here.
            self.note_ended(p, voice, pos);
        }
        if self.voices.pools[p].clear_len == 0 {
            for &i in &self.voices.pools[p].plan.nodes[v] {
                let slot = &mut self.slots[i];
                slot.reset_state();
                slot.recovery = Default::default();
            }
            self.save.spoil();
        } else {
            if matches!(
                self.voices.pools[p].state.voices[v].phase,
                Phase::Held | Phase::Released
            ) {
                // Stolen without a fade: it stops running here.
                self.begin_clear(p, v, pos);
            }
            let pool = &mut self.voices.pools[p];
            let voice = &mut pool.state.voices[v];
            if voice.clean_at > pos {
                voice.phase = Phase::Stealing;
                voice.clearing = true;
                voice.restart_at = voice.clean_at;
                voice.next = note;
                pool.stealing += 1;
                return;
            }
            voice.clearing = false;
            self.finish_clear(p, v);
        }
        self.voices.pools[p].state.voices[v].key = note.key;
        self.regate(p, v, note, pos);
    }

    /// Voice `v` stops running at `pos`: in a module with long state, it
    /// is queued for clearing behind the module's others, its nodes
    /// cleared a part per chunk ([`clear_voices`](Self::clear_voices))
    /// until its `clean_at`.
    fn begin_clear(&mut self, p: usize, v: usize, pos: u64) {
        let pool = &mut self.voices.pools[p];
        if pool.clear_len == 0 {
            return;
        }
        let at = pos.max(pool.state.clear_until) + pool.clear_len;
        pool.state.clear_until = at;
        pool.state.voices[v].clean_at = at;
        for &i in &pool.plan.nodes[v] {
            let slot = &mut self.slots[i];
            slot.recovery = Default::default();
            slot.begin_reset();
        }
        self.save.spoil();
    }

    /// Completes what is left of voice `v`'s clearing, as its note starts:
    /// nothing, unless its nodes changed under it (an edit that made them
    /// longer, a resume); and leaves its nodes healthy.
    fn finish_clear(&mut self, p: usize, v: usize) {
        for &i in &self.voices.pools[p].plan.nodes[v] {
            let slot = &mut self.slots[i];
            if slot.recovery.resetting.is_some() {
                slot.reset_step(usize::MAX);
                self.save.spoil();
            }
            slot.recovery = Default::default();
        }
    }

    /// After the chunk `start..start + n` ran: the part of each voice's
    /// clearing that falls in it, [`CLEAR_PER_SAMPLE`] samples of each of
    /// its nodes' state per sample. The parts add up to the voice's
    /// clearing time whatever the chunks, so a voice is clean at its
    /// `clean_at` at every block size. Real-time safe and bounded: one
    /// voice of a module at a time.
    pub(super) fn clear_voices(&mut self, start: u64, n: usize) {
        if !self.voices.clears {
            return;
        }
        let end = start + n as u64;
        for p in 0..self.voices.pools.len() {
            let pool = &self.voices.pools[p];
            let len = pool.clear_len;
            if len == 0 || pool.state.clear_until <= start {
                continue;
            }
            for v in 0..pool.state.voices.len() {
                let at = self.voices.pools[p].state.voices[v].clean_at;
                let (from, to) = (start.max(at.saturating_sub(len)), end.min(at));
                if to <= from {
                    continue;
                }
                let budget = ((to - from) * CLEAR_PER_SAMPLE) as usize;
                for &i in &self.voices.pools[p].plan.nodes[v] {
                    self.slots[i].reset_step(budget);
                }
            }
        }
    }

    /// Voice `v` holds `note` (a released voice plays its note again from
    /// where it is).
    fn regate(&mut self, p: usize, v: usize, note: Pending, pos: u64) {
        self.settle(p, v, pos);
        let pool = &mut self.voices.pools[p];
        let voice = &mut pool.state.voices[v];
        voice.phase = Phase::Held;
        voice.tag = note.tag;
        voice.started = pool.state.seq;
        voice.sustained = false;
        voice.quiet = 0;
        pool.state.seq += 1;
        self.set_note_params(p, v, note, 1.0);
    }

    fn set_note_params(&mut self, p: usize, v: usize, note: Pending, gate: f64) {
        let plan = &self.voices.pools[p].plan;
        let set = |slots: &mut [Slot], t: Option<(usize, usize)>, value: f64| {
            if let Some((k, pi)) = t {
                slots[plan.nodes[v][k]].params[pi] = ParamState::constant(value);
            }
        };
        let ratio = bend_ratio(self.voices.pools[p].state.bend);
        set(&mut self.slots, plan.pitch, note.pitch_hz * ratio);
        set(&mut self.slots, plan.velocity, note.velocity);
        set(&mut self.slots, plan.gate, gate);
    }

    fn release_voice(&mut self, p: usize, v: usize, pos: u64) {
        self.settle(p, v, pos);
        let pool = &mut self.voices.pools[p];
        let voice = &mut pool.state.voices[v];
        voice.phase = Phase::Released;
        voice.sustained = false;
        voice.quiet = 0;
        voice.released = pool.state.seq;
        pool.state.seq += 1;
        self.voices.drop_held(p, pos);
        let pool = &mut self.voices.pools[p];
        if let Some((k, pi)) = pool.plan.gate {
            self.slots[pool.plan.nodes[v][k]].params[pi] = ParamState::constant(0.0);
        }
    }

    /// The note `voice` of pool `p` plays ends at `sample` (kept while
    /// the list has room).
    fn note_ended(&mut self, p: usize, voice: Voice, sample: u64) {
        self.voices.end(p, voice.key, voice.tag, sample);
    }

    /// Hands every note that ended since the last call to `f`, in the
    /// order they ended within each chunk the engine ran (real-time
    /// safe). An engine keeps [`NOTE_QUEUE`] of them between calls.
    pub fn take_note_ends(&mut self, mut f: impl FnMut(NoteEnd)) {
        for e in self.voices.ended.drain(..) {
            f(e);
        }
    }

    /// Voice `v` is free: its sound is silence until it plays again (a
    /// free voice's sound node is silenced chunk by chunk, not run).
    fn free_voice(&mut self, p: usize, v: usize) {
        let pool = &mut self.voices.pools[p];
        pool.state.held.clear();
        pool.state.voices[v] = Voice {
            started: pool.state.voices[v].started,
            released: pool.state.voices[v].released,
            clean_at: pool.state.voices[v].clean_at,
            ..Voice::default()
        };
    }

    /// After a voice's sound node ran over `start..start + n`: a stolen
    /// voice's fade, and a released voice's silence count (which may free
    /// it within the chunk).
    pub(super) fn voice_sound(&mut self, i: usize, start: u64, n: usize) {
        let t = self.slots[i].voice.expect("a voice's node");
        let (p, v) = (t.pool as usize, t.voice as usize);
        let pool = &self.voices.pools[p];
        let voice = pool.state.voices[v];
        match voice.phase {
            Phase::Stealing => {
                let fade = pool.plan.steal_fade as f64;
                let at = voice.restart_at;
                match &mut self.slots[i].core {
                    Core::F32(t) => fade_out(t, start, n, at, fade),
                    Core::F64(t) => fade_out(t, start, n, at, fade),
                }
            }
            Phase::Released => {
                let gate_node = pool.plan.release_end.map(|k| pool.plan.nodes[v][k]);
                let need = pool.plan.free_after;
                let quiet_at = match gate_node {
                    Some(g) => match &self.slots[g].core {
                        Core::F32(t) => first_quiet(&t.outs[..1], n),
                        Core::F64(t) => first_quiet(&t.outs[..1], n),
                    },
                    None => {
                        let counted = match &self.slots[i].core {
                            Core::F32(t) => count_quiet(t, n, voice.quiet, need),
                            Core::F64(t) => count_quiet(t, n, voice.quiet, need),
                        };
                        match counted {
                            Ok(q) => {
                                self.voices.pools[p].state.voices[v].quiet = q;
                                None
                            }
                            Err(at) => Some(at),
                        }
                    }
                };
                if let Some(at) = quiet_at {
                    match &mut self.slots[i].core {
                        Core::F32(t) => silence_from(t, at),
                        Core::F64(t) => silence_from(t, at),
                    }
                    self.note_ended(p, voice, start + at as u64);
                    self.free_voice(p, v);
                    self.begin_clear(p, v, start + at as u64);
                }
            }
            _ => {}
        }
    }
}

/// The pitch ratio of a bend by `semitones` (exactly 1 for none).
fn bend_ratio(semitones: f64) -> f64 {
    if semitones == 0.0 {
        1.0
    } else {
        libm::exp2(semitones / 12.0)
    }
}

/// The linear fade of a stolen voice: sample `t` is scaled by
/// `(at − t) / fade`, from 1 down to `1/fade` at the last sample before `at`.
fn fade_out<S: Sample>(t: &mut Typed<S>, start: u64, n: usize, at: u64, fade: f64) {
    for out in t.outs.iter_mut() {
        for (j, x) in out[..n].iter_mut().enumerate() {
            let left = at.saturating_sub(start + j as u64) as f64;
            *x *= S::from_f64(left / fade);
        }
    }
}

fn quiet<S: Sample>(x: S) -> bool {
    x.to_f64().abs() < VOICE_SILENCE
}

/// The first sample (of `n`) from which the voice is free: at or after the
/// first sample where every output of `outs` is quiet.
fn first_quiet<S: Sample>(outs: &[Vec<S>], n: usize) -> Option<usize> {
    (0..n).find(|&j| outs.iter().all(|o| quiet(o[j])))
}

/// Counts quiet samples on from `so_far`: `Err(j)` when the count reaches
/// `need` at sample `j` (the voice is free from `j + 1`), else the count.
fn count_quiet<S: Sample>(t: &Typed<S>, n: usize, so_far: u64, need: u64) -> Result<u64, usize> {
    let mut q = so_far;
    for j in 0..n {
        if t.outs.iter().all(|o| quiet(o[j])) {
            q += 1;
            if q >= need {
                return Err(j + 1);
            }
        } else {
            q = 0;
        }
    }
    Ok(q)
}

/// Silences a node's outputs from sample `from` of this chunk on.
fn silence_from<S: Sample>(t: &mut Typed<S>, from: usize) {
    for out in t.outs.iter_mut() {
        let from = from.min(out.len());
        out[from..].iter_mut().for_each(|x| *x = S::ZERO);
    }
}

/// A param of a voice module's template: param `param` of its node
/// `node` (its place in the template), in every voice's copy.
#[derive(Clone, Copy)]
struct TemplateParam {
    node: usize,
    param: usize,
}
