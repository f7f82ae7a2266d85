//! The block processor: runs a compiled [`Plan`] one block at a time, the
//! same way offline and in real time.
//!
//! `process_block` is real-time safe: every buffer is allocated in
//! [`Engine::new`]; the block loop only copies, converts and calls the nodes.
//!
//! This file holds the [`Engine`] type, its constructor and the block loop
//! (chunks between events, FP-mode runs, ramps); the rest of the engine
//! lives beside it: nodes and their NaN/panic recovery in `node.rs`, input
//! and main-bus mixing in `mix.rs`, delay lines in `ring.rs`, feedback
//! edges in `feedback.rs`, per-node timing in `timing.rs`, snapshots and
//! reset in `snapshot.rs`, the audio thread's save in parts over
//! blocks in `save.rs`; the offline loops (N frames, stops, into
//! memory) in `blocks.rs`, with control changes scheduled for them in
//! `feed.rs`; the two-pass loop of a graph with voice modules, where a
//! change cuts only the nodes it changes, in `split.rs`; the control
//! side's handover steps (compile,
//! save, migrate, fast-forward, offer) in `incoming.rs`.

mod beats;
mod blocks;
mod bus;
mod caught;
mod changes;
mod deck;
#[cfg(test)]
mod delay;
mod feed;
mod feedback;
mod handover;
pub mod incoming;
mod input;
mod lanes;
mod mix;
mod node;
mod parallel;
mod ring;
mod save;
mod snapshot;
mod split;
mod spread_groups;
mod tail;
mod threads_report;
mod timing;
mod voices;
mod workers;

pub use beats::TempoMap;
pub use blocks::{render_to_vec, run_blocks, run_blocks_with_stops};
pub use bus::{Bus, BusRef};
pub use changes::{ChangeRecord, ChangeReport, NodeTable, Outcome, CHANGE_QUEUE};
pub use deck::{device_sample, faded, stop_fade_gain, Deck};
pub use feed::{ChangeFeed, ScriptedChange, ScriptedNote};
pub use handover::{fold_voice_copies, voices_suffix, Migration, Notice};
pub use input::{InputBlock, InputFeed};
pub use node::{EngineStats, Recovery, ResetPart};
pub use save::PART_SAMPLES;
pub use snapshot::{EngineState, NodeSnapshot};
pub use threads_report::{GroupReport, GroupSpread, LevelKind, LevelReport, ThreadsReport};
pub use timing::NodeTime;
pub use voices::{
    NoteEnd, NoteRecord, Pending, Phase, PoolState, Voice, CLEAR_PER_SAMPLE, HELD_NOTES,
    NOTE_QUEUE, SHORT_STATE,
};
pub use workers::{Workers, MIN_WORK_NS};

pub(crate) use mix::convert;
pub(crate) use ring::Ring;

use crate::dsp::fpmode::FpGuard;
use crate::dsp::Precision;
use crate::graph::{EventAction, Plan, PlanEvent, SourceRef};
use crate::ops::{ParamState, Ramp};
use crate::profile::Profile;
use feedback::Feed;
use node::{Core, Slot};

/// Runs a compiled plan.
///
/// Scheduled events land on their exact sample under the strict and repro
/// profiles, whatever the block size:
///
/// ```
/// use morphrt_core::engine::{render_to_vec, Engine};
/// use morphrt_core::graph::{compile, CompileOptions};
///
/// let text = r#"{
///     "version": "1.0",
///     "sample_rate": 48000,
///     "profile": "strict",
///     "nodes": [{ "id": "level", "op": "dc", "params": { "value": 0.25 } }],
///     "outputs": { "main": ["level"] },
///     "events": [{ "time": "100samples", "node": "level", "param": "value", "value": 0.5 }]
/// }"#;
/// let scene = morphrt_core::scene::load_str(text, "level.json", None).expect("a valid scene");
/// let plan = compile(&scene, &CompileOptions::default()).expect("it compiles");
/// let mut engine = Engine::new(plan);
/// assert_eq!(engine.channels(), 1);
/// let out = render_to_vec(&mut engine, 200);
/// assert_eq!(out[0][99], 0.25);
/// assert_eq!(out[0][100], 0.5);
/// assert_eq!(engine.clock(), 200);
/// ```
pub struct Engine {
    slots: Vec<Slot>,
    /// The main bus's latency relative to the sources, in samples (the
    /// plan's).
    latency: usize,
    runs: Vec<Run>,
    /// Every run's steps in order: nodes alone and lane groups (`lanes.rs`).
    steps: Vec<lanes::Step>,
    groups: Vec<lanes::Group>,
    /// The instruction set of the engine's own checks (chosen at build).
    simd: crate::dsp::vector::SimdLevel,
    clock: u64,
    block_size: usize,
    sample_rate: u32,
    session: Profile,
    session_flush: bool,
    events: Vec<PlanEvent>,
    next_event: usize,
    main: Vec<SourceRef>,
    bus: Bus,
    frames: usize,
    limit_main: bool,
    stats: EngineStats,
    /// Payloads of the panics caught while running, kept until the engine
    /// is dropped (off the audio thread).
    caught: caught::Caught,
    main_sig: u64,
    main_wiring: u64,
    crossfade: u64,
    /// Param changes of a live edit, applied at the swap sample.
    pending: handover::Pending,
    /// Whether `process_block` times each node (see [`Engine::set_node_timing`]).
    node_timing: bool,
    /// Nanoseconds each node (by schedule index) spent in `process_block`
    /// while timing was on; allocated in `new`, so switching timing on or
    /// off never allocates.
    node_ns: Vec<u64>,
    /// Frames processed while timing was on.
    timed_frames: u64,
    /// Whether some param may have a ramp in progress: set wherever a ramp
    /// can start (events, a handover's param changes, a migration), cleared
    /// by `collapse_ramps` once none is left, so a block without ramps does
    /// not visit every param of every node.
    ramps_live: bool,
    /// Feedback edges, written after each chunk in plan order.
    feeds: Vec<Feed>,
    /// The longest chunk the block loop may run: the shortest feedback
    /// delay (u64::MAX without feedback), so that everything a feedback
    /// edge reads within a chunk was written before it.
    max_chunk: u64,
    /// A save spread over blocks, in progress or not.
    save: save::Cursor,
    /// The session input's buffers for this block (see `input.rs`).
    inputs: input::Inputs,
    /// Change records waiting for their sample (see `control.rs`).
    changes: changes::Changes,
    /// Voice modules and their notes (see `voices.rs`).
    voices: voices::Voices,
    /// The two-pass block loop's plan and state (see `split.rs`).
    split: split::Split,
    /// Where a chunk reads staged sources (voices' sound nodes holding the
    /// whole block): its offset in the block in the second pass of
    /// `split.rs`, 0 otherwise.
    stage_at: usize,
    /// Samples a beat lasts at the plan's tempo, if it has one.
    spb: Option<crate::scene::Rational>,
    /// The beat grid from the swap sample on (see `beats.rs`).
    tempo_map: Option<TempoMap>,
    /// The map of the engine migrated from, which places the events before
    /// the swap sample: kept until the swap sample is final.
    prior_map: Option<TempoMap>,
    /// What a host attached to travel with the engine (see
    /// [`Engine::attach`]); the engine never reads it.
    attached: Option<Box<dyn std::any::Any + Send>>,
    /// The pool that runs independent nodes side by side (`parallel.rs`),
    /// if the host gave one.
    workers: Option<Workers>,
    /// Each run's levels (`parallel.rs`).
    levels: parallel::Levels,
    /// Each node's estimated cost per sample, in ns (as `check` prints it).
    costs: Vec<f64>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("profile", &self.session)
            .field("clock", &self.clock)
            .field("nodes", &self.slots.len())
            .finish()
    }
}

/// A contiguous run of scheduled nodes sharing one FP mode.
#[derive(Clone, Copy, Debug)]
struct Run {
    start: usize,
    end: usize,
    flush: bool,
    /// Its range in `Engine::steps`.
    steps: (usize, usize),
}

impl Engine {
    /// Plans the two-pass block loop over the engine's steps
    /// (`split.rs`): at build and whenever the steps change.
    fn plan_two_passes(&mut self) {
        split::Split::plan(self);
        self.levels = parallel::Levels::plan(self);
    }

    /// Takes the built nodes out of `plan` and allocates every buffer.
    pub fn new(mut plan: Plan) -> Engine {
        let block = plan.block_size;
        let wirings: Vec<u64> = (0..plan.nodes.len())
            .map(|i| handover::node_wiring(&plan, i))
            .collect();
        let sigs: Vec<u64> = (0..plan.nodes.len())
            .map(|i| handover::node_sig(&plan, i, wirings[i]))
            .collect();
        let main_sig = handover::main_sig(&plan);
        let main_wiring = handover::main_wiring(&plan);
        let costs: Vec<f64> = plan.nodes.iter().map(crate::graph::node_cost_ns).collect();
        let mut slots = Vec::with_capacity(plan.nodes.len());
        let mut feeds = Vec::new();
        for (dst, ((pn, sig), wiring)) in plan.nodes.iter_mut().zip(sigs).zip(wirings).enumerate() {
            slots.push(Slot::new(pn, dst, sig, wiring, block, &mut feeds));
        }
        let mut runs: Vec<Run> = Vec::new();
        for (i, s) in slots.iter().enumerate() {
            match runs.last_mut() {
                Some(r) if r.flush == s.flush => r.end = i + 1,
                _ => runs.push(Run {
                    start: i,
                    end: i + 1,
                    flush: s.flush,
                    steps: (0, 0),
                }),
            }
        }
        let bus_precision = plan
            .main
            .iter()
            .map(|s| slots[s.node].precision())
            .max()
            .unwrap_or(Precision::F64);
        let session = plan.session_profile;
        let input_channels = slots
            .iter()
            .filter_map(|s| s.feed)
            .max()
            .map_or(0, |c| c + 1);
        let mut voices = voices::Voices::new(
            std::mem::take(&mut plan.voices),
            std::mem::take(&mut plan.notes),
        );
        for (i, t) in voices.tags(slots.len()).into_iter().enumerate() {
            slots[i].voice = t;
        }
        voices.measure(&mut slots);
        let simd = crate::dsp::vector::SimdLevel::detect();
        let (steps, groups) = lanes::plan(&mut slots, &mut runs, &plan.main, simd);
        let spb = plan.tempo.map(|t| t.samples_per_beat(plan.sample_rate));
        let mut engine = Engine {
            latency: plan.latency,
            steps,
            groups,
            simd,
            spb,
            tempo_map: spb.map(TempoMap::from_start),
            prior_map: None,
            attached: None,
            voices,
            inputs: input::Inputs::new(input_channels, block),
            runs,
            clock: 0,
            block_size: block,
            sample_rate: plan.sample_rate,
            session,
            session_flush: session.flush_to_zero(),
            events: std::mem::take(&mut plan.events),
            next_event: 0,
            bus: Bus::new(
                bus_precision,
                &plan.main.iter().map(|s| s.delay).collect::<Vec<_>>(),
                block,
            ),
            main: std::mem::take(&mut plan.main),
            frames: 0,
            limit_main: session == Profile::Live,
            stats: EngineStats::default(),
            caught: caught::Caught::new(),
            main_sig,
            main_wiring,
            crossfade: plan.crossfade,
            pending: handover::Pending::default(),
            node_timing: false,
            node_ns: vec![0; slots.len()],
            timed_frames: 0,
            ramps_live: false,
            max_chunk: feeds
                .iter()
                .map(|f| f.src.feedback as u64)
                .min()
                .unwrap_or(u64::MAX),
            feeds,
            save: save::Cursor::new(slots.len()),
            changes: changes::Changes::new(slots.len()),
            slots,
            split: split::Split::default(),
            stage_at: 0,
            workers: None,
            levels: parallel::Levels::default(),
            costs,
        };
        engine.plan_two_passes();
        engine
    }

    /// Frames per block: the most one `process_block` renders.
    pub fn block_size(&self) -> usize {
        self.block_size
    }
    /// Samples per second, in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }
    /// Channels of the main bus.
    pub fn channels(&self) -> usize {
        self.main.len()
    }
    /// The absolute sample index of the next block's first frame.
    pub fn clock(&self) -> u64 {
        self.clock
    }
    /// The session profile it was compiled under.
    pub fn profile(&self) -> Profile {
        self.session
    }
    /// Whether the main bus is clamped to ±1 after each block (under a
    /// live session by default). A host that reads the bus as a signal to
    /// compute on, not to play, turns it off.
    pub fn set_main_limit(&mut self, on: bool) {
        self.limit_main = on;
    }

    /// Counters of what happened while it ran (recoveries, NaN, panics).
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// The message of the first panic caught while running (a node's or a
    /// lane kernel's), when it was a string; for a report off the audio
    /// thread.
    pub fn first_panic_message(&self) -> Option<&str> {
        self.caught.first_message()
    }
    /// The id of a node by schedule index.
    pub fn node_id(&self, i: usize) -> &str {
        &self.slots[i].id
    }
    /// The schedule index of the node `id`, if there is one.
    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.id == id)
    }
    /// Iterative-solver steps (e.g. `diode_clipper`'s Newton iterations) a
    /// node by schedule index has taken since the engine was built or reset.
    pub(crate) fn node_iterations(&self, i: usize) -> u64 {
        match &self.slots[i].core {
            Core::F32(t) => t.node.iterations(),
            Core::F64(t) => t.node.iterations(),
        }
    }
    /// Iterative-solver steps of every node, summed in schedule order.
    pub fn solver_iterations(&self) -> u64 {
        (0..self.slots.len()).map(|i| self.node_iterations(i)).sum()
    }
    /// The precision the main bus is mixed at.
    pub fn bus_precision(&self) -> Precision {
        self.bus.precision()
    }
    /// The operator of a node by schedule index.
    pub fn node_op(&self, i: usize) -> &'static str {
        self.slots[i].op
    }
    /// Number of nodes (schedule indices are `0..node_count()`).
    pub fn node_count(&self) -> usize {
        self.slots.len()
    }

    /// The main bus's latency relative to the sources, in samples (the
    /// operators' own, aligned across paths: see `morphrt check`).
    pub fn latency(&self) -> usize {
        self.latency
    }

    /// Renders `frames` (1 ≤ frames ≤ block size) into the main bus.
    /// Real-time safe: no allocation, lock or I/O.
    pub fn process_block(&mut self, frames: usize) {
        let frames = frames.min(self.block_size);
        self.frames = frames;
        if frames == 0 {
            return;
        }
        self.inputs.pull(self.clock, frames);
        let guard = FpGuard::new(self.session_flush);
        if self.pending.due(self.clock) {
            self.apply_pending();
        }
        let end = self.clock + frames as u64;
        if self.split_block() {
            self.process_split(&guard, end);
        } else {
            self.process_chunks(&guard, end);
        }
        if self.limit_main {
            self.bus.clamp(self.simd, frames, 1.0);
        }
        if self.node_timing {
            self.timed_frames += frames as u64;
        }
        self.clock = end;
        self.collapse_ramps();
        drop(guard);
    }

    /// The block `clock..end` in one pass: every node cut at every sample
    /// an event, a change record or a note lands on.
    fn process_chunks(&mut self, guard: &FpGuard, end: u64) {
        let mut pos = self.clock;
        let mut offset = 0;
        // Moved out for the block (no count changes hands), so that a
        // level can borrow the engine and the pool at once.
        let workers = self.workers.take();
        while pos < end {
            self.apply_events(pos);
            self.apply_controls(pos);
            self.apply_notes(pos);
            // Chunks end at events, change records and notes
            // (sample-accurate) and are never longer than the shortest
            // feedback delay.
            let next = self
                .events
                .get(self.next_event)
                .map_or(end, |e| e.sample.clamp(pos + 1, end))
                .min(
                    self.changes
                        .next_sample()
                        .map_or(end, |s| s.clamp(pos + 1, end)),
                )
                .min(self.voices.next_sample().clamp(pos + 1, end))
                .min(pos.saturating_add(self.max_chunk));
            let n = (next - pos) as usize;
            for r in 0..self.runs.len() {
                let run = self.runs[r];
                guard.set_flush(run.flush);
                if self.node_timing {
                    self.process_run_timed(run, pos, n);
                } else if let Some(w) = &workers {
                    self.run_levels(w, guard, r, pos, n);
                } else {
                    for k in run.steps.0..run.steps.1 {
                        self.run_step(k, pos, n);
                    }
                }
            }
            self.clear_voices(pos, n);
            if !self.feeds.is_empty() {
                self.feed_back(guard, n);
            }
            guard.set_flush(self.session_flush);
            self.gather_main(offset, n);
            pos = next;
            offset += n;
        }
        self.workers = workers;
    }

    /// Runs independent nodes of each block side by side on `workers`
    /// (`None`: all on the calling thread). What the engine plays is the
    /// same bits either way. Call it between blocks.
    pub fn set_workers(&mut self, workers: Option<Workers>) {
        self.workers = workers;
    }

    /// The pool set by [`set_workers`](Self::set_workers), if any.
    pub fn workers(&self) -> Option<&Workers> {
        self.workers.as_ref()
    }

    /// The main bus after the last `process_block`.
    pub fn bus(&self) -> BusRef<'_> {
        self.bus.as_ref(self.frames)
    }

    fn apply_events(&mut self, pos: u64) {
        while let Some(e) = self.events.get(self.next_event) {
            if e.sample > pos {
                break;
            }
            self.apply_event(self.next_event, pos);
            self.next_event += 1;
        }
    }

    /// Plan event `k` takes effect at `pos`.
    fn apply_event(&mut self, k: usize, pos: u64) {
        {
            let e = &self.events[k];
            let slot = &mut self.slots[e.node];
            if let Some(group) = self.groups.get_mut(slot.lane_group as usize) {
                group.is_steady = false;
            }
            match &e.action {
                EventAction::Set { value, ramp } => {
                    self.ramps_live |= *ramp != 0;
                    let p = &mut slot.params[e.param];
                    let from = p.at(pos);
                    *p = ParamState {
                        value: *value,
                        ramp: if *ramp == 0 {
                            None
                        } else {
                            Some(Ramp {
                                from,
                                start: pos,
                                len: *ramp,
                            })
                        },
                    };
                }
                EventAction::Discrete(v) => {
                    self.save.spoil();
                    match &mut slot.core {
                        Core::F32(t) => t.node.set_discrete(e.param, v),
                        Core::F64(t) => t.node.set_discrete(e.param, v),
                    }
                    // Enum, integer and bool values: no allocation, no free.
                    slot.values[e.param] = v.clone();
                }
            }
        }
    }

    /// Drops the ramps that have ended. Visits the params only while some
    /// ramp may be in progress (`ramps_live`).
    fn collapse_ramps(&mut self) {
        if !self.ramps_live {
            return;
        }
        let now = self.clock;
        let mut live = false;
        for s in &mut self.slots {
            for p in &mut s.params {
                if let Some(r) = p.ramp {
                    if now >= r.start + r.len {
                        p.ramp = None;
                    } else {
                        live = true;
                    }
                }
            }
        }
        self.ramps_live = live;
    }
}
