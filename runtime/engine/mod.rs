//! The block processor: runs a compiled [`Plan`] one block at a time, the
//! same way offline and in real time.
//!
//! `process_block` is real-time safe: every buffer is allocated in
//! [`Engine::new`]; the block loop only copies, converts and calls the nodes.

mod blocks;
mod bus;
mod deck;
mod handover;
pub mod incoming;

pub use blocks::{render_to_vec, run_blocks, run_blocks_with_stops, try_run_blocks_with_stops};
pub use bus::{Bus, BusRef};
pub use deck::{device_sample, faded, stop_fade_gain, Deck};
pub use handover::{Migration, Notice};

use crate::dsp::fpmode::FpGuard;
use crate::dsp::vector::all_finite;
use crate::dsp::{Precision, Sample};
use crate::graph::{EventAction, Plan, PlanEvent, SeedSource, SourceRef};
use crate::ops::{AnyNode, Io, NodeState, ParamState, Params, Processor, Ramp, StateError, Value};
use crate::profile::Profile;

/// A node's processor and buffers at its precision.
struct Typed<S> {
    node: Box<dyn Processor<S>>,
    /// Audio inputs (always allocated; silence when unconnected).
    ins: Vec<Vec<S>>,
    outs: Vec<Vec<S>>,
    /// Modulation signals by param index (empty when unconnected).
    sigs: Vec<Vec<S>>,
    /// Delay lines of incoming edges: latency compensation, and the lines
    /// of feedback edges (written by [`Engine::feed_back`]).
    rings: Vec<Ring<S>>,
    /// Scratch for a delayed edge's block.
    tmp: Vec<S>,
}

/// A fixed delay line of `buf.len()` samples.
pub(crate) struct Ring<S> {
    buf: Vec<S>,
    pos: usize,
}

impl<S: Sample> Ring<S> {
    pub(crate) fn new(len: usize) -> Ring<S> {
        Ring {
            buf: vec![S::ZERO; len.max(1)],
            pos: 0,
        }
    }

    /// Delays `x` in place.
    #[inline]
    pub(crate) fn process(&mut self, x: &mut [S]) {
        for v in x {
            std::mem::swap(&mut self.buf[self.pos], v);
            self.pos += 1;
            if self.pos == self.buf.len() {
                self.pos = 0;
            }
        }
    }

    /// The next `out.len()` (at most the line's length) delayed samples,
    /// without moving on: a feedback edge's destination reads them before
    /// its source has run, and [`write`](Self::write) then replaces them.
    #[inline]
    pub(crate) fn read(&self, out: &mut [S]) {
        let len = self.buf.len();
        debug_assert!(out.len() <= len);
        let first = (len - self.pos).min(out.len());
        out[..first].copy_from_slice(&self.buf[self.pos..self.pos + first]);
        let rest = out.len() - first;
        out[first..].copy_from_slice(&self.buf[..rest]);
    }

    /// Stores `x` (at most the line's length) where [`read`](Self::read)
    /// just read and moves on; `read` then `write` is
    /// [`process`](Self::process) split in two.
    #[inline]
    pub(crate) fn write<T: Sample>(&mut self, x: &[T]) {
        let len = self.buf.len();
        debug_assert!(x.len() <= len);
        for v in x {
            self.buf[self.pos] = convert(*v);
            self.pos += 1;
            if self.pos == len {
                self.pos = 0;
            }
        }
    }

    pub(crate) fn reset(&mut self) {
        self.buf.iter_mut().for_each(|x| *x = S::ZERO);
        self.pos = 0;
    }

    pub(crate) fn save(&self) -> (Vec<f64>, usize) {
        (self.buf.iter().map(|x| x.to_f64()).collect(), self.pos)
    }

    /// Copies into a buffer shaped by [`save`](Self::save); no allocation.
    pub(crate) fn save_into(&self, (data, pos): &mut (Vec<f64>, usize)) {
        for (d, x) in data.iter_mut().zip(&self.buf) {
            *d = x.to_f64();
        }
        *pos = self.pos;
    }

    pub(crate) fn fits(&self, (data, pos): &(Vec<f64>, usize)) -> bool {
        data.len() == self.buf.len() && *pos < self.buf.len()
    }

    pub(crate) fn load(&mut self, (data, pos): &(Vec<f64>, usize)) {
        if data.len() == self.buf.len() && *pos < self.buf.len() {
            for (b, x) in self.buf.iter_mut().zip(data) {
                *b = S::from_f64(*x);
            }
            self.pos = *pos;
        }
    }
}

/// An incoming edge as the engine runs it.
#[derive(Clone, Copy, Debug)]
struct EdgeIn {
    src: SourceRef,
    /// Index into the destination's `rings`, or `NO_RING`.
    ring: usize,
}

/// A feedback edge's write side: after every chunk, its source's output
/// goes into the delay line `ring` of slot `dst`.
#[derive(Clone, Copy, Debug)]
struct Feed {
    dst: usize,
    ring: usize,
    src: SourceRef,
}

const NO_RING: usize = usize::MAX;

enum Core {
    F32(Typed<f32>),
    F64(Typed<f64>),
}

struct Slot {
    id: String,
    op: &'static str,
    core: Core,
    params: Vec<ParamState>,
    /// Current values of discrete params (enum, integer, bool), changed by
    /// events; other entries keep their static value and are unused.
    values: Vec<Value>,
    /// The scene's values, restored by `reset`.
    initial_params: Vec<ParamState>,
    initial_values: Vec<Value>,
    inputs: Vec<Vec<EdgeIn>>,
    param_inputs: Vec<Vec<EdgeIn>>,
    /// Muted until this sample after producing NaN/Inf twice within a
    /// second (0: not muted).
    muted_until: u64,
    /// The sample where the node last produced NaN/Inf.
    last_failure: Option<u64>,
    /// Panicked while processing: never called again, outputs silent.
    dead: bool,
    flush: bool,
    /// What must match for state to carry as-is across a handover: op,
    /// resolved profile, precision and incoming wiring (see `handover`).
    sig: u64,
    /// Incoming wiring alone: the edge delay lines carry when it matches.
    wiring: u64,
    /// Samples over which a live edit of this node's params glides.
    edit_ramp: u64,
}

/// A contiguous run of scheduled nodes sharing one FP mode.
#[derive(Clone, Copy, Debug)]
struct Run {
    start: usize,
    end: usize,
    flush: bool,
}

/// Counters the engine keeps while running (read by hosts between blocks).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineStats {
    /// Blocks in which some node produced NaN or Inf.
    pub nan_events: u64,
    /// The first node that produced NaN/Inf, and the sample where it did.
    pub first_nan: Option<(usize, u64)>,
    /// Nodes that panicked (each is muted from then on).
    pub panics: u64,
    /// The first node that panicked, and the sample where it did.
    pub first_panic: Option<(usize, u64)>,
}

/// Where one node's time went while per-node timing was on
/// ([`Engine::node_time_table`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTime {
    /// Schedule index.
    pub index: usize,
    pub id: String,
    pub op: &'static str,
    /// Wall time in the node, its input gathering included.
    pub ns: u64,
    /// `ns` over the time of every node (0…1).
    pub share: f64,
    /// `ns` per frame of the timed blocks.
    pub ns_per_sample: f64,
    /// Iterative-solver steps since the engine was built or reset.
    pub iterations: u64,
}

/// A snapshot of the whole engine: the sample clock, every node's state and
/// every param's current value (with any ramp in progress).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineState {
    pub clock: u64,
    pub next_event: usize,
    pub nodes: Vec<NodeSnapshot>,
    /// Main-bus alignment delay lines.
    pub main: Vec<(Vec<f64>, usize)>,
    /// The session profile the state was taken under.
    pub profile: Profile,
    /// The main bus's sources and alignment under the session profile: a
    /// handover that changes it crossfades.
    pub main_sig: u64,
    /// The main bus's sources and alignment alone: its delay lines carry
    /// when this matches, whatever the profile.
    pub main_wiring: u64,
}

/// One node's part of an [`EngineState`].
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSnapshot {
    pub id: String,
    pub op: &'static str,
    pub state: NodeState,
    /// Number params: current value and any ramp in progress.
    pub params: Vec<ParamState>,
    /// Discrete params as changed by events.
    pub discrete: Vec<(usize, Value)>,
    /// Delay lines of incoming edges (contents, position): latency
    /// compensation and feedback edges, in the order of the node's inputs.
    pub edges: Vec<(Vec<f64>, usize)>,
    /// The scene's own values of the node's params (what the file said, not
    /// what events made of them): a handover tells an edit from an event's
    /// change by comparing these with the new scene's.
    pub scene_values: Vec<Value>,
    /// Op, resolved profile, precision and incoming wiring.
    pub sig: u64,
    /// Incoming wiring alone: the edge delay lines carry when it matches.
    pub wiring: u64,
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

/// Runs a compiled plan.
pub struct Engine {
    slots: Vec<Slot>,
    runs: Vec<Run>,
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
    seed: SeedSource,
    stats: EngineStats,
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
}

fn new_typed<S: Sample>(
    node: Box<dyn Processor<S>>,
    n_in: usize,
    n_out: usize,
    sig_ports: &[bool],
    block: usize,
    delays: &[usize],
) -> Typed<S> {
    Typed {
        rings: delays.iter().map(|d| Ring::new(*d)).collect(),
        tmp: if delays.is_empty() {
            Vec::new()
        } else {
            vec![S::ZERO; block]
        },
        node,
        ins: vec![vec![S::ZERO; block]; n_in],
        outs: vec![vec![S::ZERO; block]; n_out],
        sigs: sig_ports
            .iter()
            .map(|&c| if c { vec![S::ZERO; block] } else { Vec::new() })
            .collect(),
    }
}

impl Engine {
    /// Takes the built nodes out of `plan` and allocates every buffer.
    pub fn new(mut plan: Plan) -> Engine {
        let block = plan.block_size;
        let sigs: Vec<u64> = (0..plan.nodes.len())
            .map(|i| handover::node_sig(&plan, i))
            .collect();
        let wirings: Vec<u64> = (0..plan.nodes.len())
            .map(|i| handover::node_wiring(&plan, i))
            .collect();
        let main_sig = handover::main_sig(&plan);
        let main_wiring = handover::main_wiring(&plan);
        let mut slots = Vec::with_capacity(plan.nodes.len());
        let mut feeds = Vec::new();
        for (dst, ((pn, sig), wiring)) in plan.nodes.iter_mut().zip(sigs).zip(wirings).enumerate() {
            let node = pn.node.take().expect("plan was built with nodes");
            let sig_ports: Vec<bool> = pn.param_inputs.iter().map(|l| !l.is_empty()).collect();
            let n_in = pn.inputs.len();
            let n_out = pn.op.outputs.len();
            let mut delays = Vec::new();
            let mut wire = |list: &Vec<Vec<SourceRef>>| -> Vec<Vec<EdgeIn>> {
                list.iter()
                    .map(|l| {
                        l.iter()
                            .map(|src| EdgeIn {
                                src: *src,
                                ring: if src.is_feedback() {
                                    delays.push(src.feedback);
                                    feeds.push(Feed {
                                        dst,
                                        ring: delays.len() - 1,
                                        src: *src,
                                    });
                                    delays.len() - 1
                                } else if src.delay > 0 {
                                    delays.push(src.delay);
                                    delays.len() - 1
                                } else {
                                    NO_RING
                                },
                            })
                            .collect()
                    })
                    .collect()
            };
            let inputs = wire(&pn.inputs);
            let param_inputs = wire(&pn.param_inputs);
            let core = match node {
                AnyNode::F32(n) => Core::F32(new_typed(n, n_in, n_out, &sig_ports, block, &delays)),
                AnyNode::F64(n) => Core::F64(new_typed(n, n_in, n_out, &sig_ports, block, &delays)),
            };
            let params_init: Vec<ParamState> = pn
                .values
                .iter()
                .map(|v| match v {
                    Value::Number(x) => ParamState::constant(*x),
                    _ => ParamState::constant(0.0),
                })
                .collect();
            slots.push(Slot {
                id: pn.id.clone(),
                op: pn.op.name,
                core,
                params: params_init.clone(),
                values: pn.values.clone(),
                initial_params: params_init.clone(),
                initial_values: pn.values.clone(),
                inputs,
                param_inputs,
                muted_until: 0,
                last_failure: None,
                dead: false,
                flush: pn.profile.flush_to_zero,
                sig,
                wiring,
                edit_ramp: pn.edit_ramp,
            });
        }
        let mut runs: Vec<Run> = Vec::new();
        for (i, s) in slots.iter().enumerate() {
            match runs.last_mut() {
                Some(r) if r.flush == s.flush => r.end = i + 1,
                _ => runs.push(Run {
                    start: i,
                    end: i + 1,
                    flush: s.flush,
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
        Engine {
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
            seed: plan.seed,
            stats: EngineStats::default(),
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
            slots,
        }
    }

    pub fn block_size(&self) -> usize {
        self.block_size
    }
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }
    pub fn channels(&self) -> usize {
        self.main.len()
    }
    /// The absolute sample index of the next block's first frame.
    pub fn clock(&self) -> u64 {
        self.clock
    }
    pub fn profile(&self) -> Profile {
        self.session
    }
    pub fn seed(&self) -> SeedSource {
        self.seed
    }
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }
    /// The id of a node by schedule index.
    pub fn node_id(&self, i: usize) -> &str {
        &self.slots[i].id
    }
    /// Iterative-solver steps (e.g. `diode_clipper`'s Newton iterations) a
    /// node by schedule index has taken since the engine was built or reset.
    pub fn node_iterations(&self, i: usize) -> u64 {
        match &self.slots[i].core {
            Core::F32(t) => t.node.iterations(),
            Core::F64(t) => t.node.iterations(),
        }
    }
    /// Iterative-solver steps of every node, summed in schedule order.
    pub fn solver_iterations(&self) -> u64 {
        (0..self.slots.len()).map(|i| self.node_iterations(i)).sum()
    }
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

    /// Turns per-node timing on or off. While on, `process_block` adds the
    /// wall time each node takes (gathering its inputs included) to a
    /// counter per node, so a profile can say where a block's time goes;
    /// while off it costs one predictable branch per run of nodes. Real-time
    /// safe: the counters were allocated with the engine.
    pub fn set_node_timing(&mut self, on: bool) {
        self.node_timing = on;
    }
    /// Whether per-node timing is on.
    pub fn node_timing(&self) -> bool {
        self.node_timing
    }
    /// Nanoseconds each node (by schedule index) has spent while timing was
    /// on, since the engine was built or [`clear_node_times`](Self::clear_node_times).
    pub fn node_times_ns(&self) -> &[u64] {
        &self.node_ns
    }
    /// Zeroes the per-node time counters (timing stays as it is).
    pub fn clear_node_times(&mut self) {
        self.node_ns.iter_mut().for_each(|t| *t = 0);
        self.timed_frames = 0;
    }
    /// Frames processed while timing was on, the denominator of
    /// [`NodeTime::ns_per_sample`].
    pub fn timed_frames(&self) -> u64 {
        self.timed_frames
    }

    /// Every node's time while timing was on, most expensive first (ties in
    /// schedule order). Allocates: call it off the audio thread.
    pub fn node_time_table(&self) -> Vec<NodeTime> {
        let total: u64 = self.node_ns.iter().sum();
        let mut v: Vec<NodeTime> = self
            .node_ns
            .iter()
            .enumerate()
            .map(|(i, &ns)| NodeTime {
                index: i,
                id: self.slots[i].id.clone(),
                op: self.slots[i].op,
                ns,
                share: if total == 0 {
                    0.0
                } else {
                    ns as f64 / total as f64
                },
                ns_per_sample: if self.timed_frames == 0 {
                    0.0
                } else {
                    ns as f64 / self.timed_frames as f64
                },
                iterations: self.node_iterations(i),
            })
            .collect();
        v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.index.cmp(&b.index)));
        v
    }

    /// Renders `frames` (1 ≤ frames ≤ block size) into the main bus.
    /// Real-time safe: no allocation, lock or I/O.
    pub fn process_block(&mut self, frames: usize) {
        let frames = frames.min(self.block_size);
        self.frames = frames;
        if frames == 0 {
            return;
        }
        let guard = FpGuard::new(self.session_flush);
        if self.pending.due(self.clock) {
            self.apply_pending();
        }
        let end = self.clock + frames as u64;
        let mut pos = self.clock;
        let mut offset = 0;
        while pos < end {
            self.apply_events(pos);
            // Chunks end at events (sample-accurate) and are never longer
            // than the shortest feedback delay.
            let next = self
                .events
                .get(self.next_event)
                .map_or(end, |e| e.sample.clamp(pos + 1, end))
                .min(pos.saturating_add(self.max_chunk));
            let n = (next - pos) as usize;
            for r in 0..self.runs.len() {
                let run = self.runs[r];
                guard.set_flush(run.flush);
                if self.node_timing {
                    self.process_run_timed(run, pos, n);
                } else {
                    for i in run.start..run.end {
                        self.process_slot(i, pos, n);
                    }
                }
            }
            if !self.feeds.is_empty() {
                self.feed_back(&guard, n);
            }
            guard.set_flush(self.session_flush);
            self.gather_main(offset, n);
            pos = next;
            offset += n;
        }
        if self.limit_main {
            self.bus.clamp(frames, 1.0);
        }
        if self.node_timing {
            self.timed_frames += frames as u64;
        }
        self.clock = end;
        self.collapse_ramps();
        drop(guard);
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
            let slot = &mut self.slots[e.node];
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
                    match &mut slot.core {
                        Core::F32(t) => t.node.set_discrete(e.param, v),
                        Core::F64(t) => t.node.set_discrete(e.param, v),
                    }
                    // Enum, integer and bool values: no allocation, no free.
                    slot.values[e.param] = v.clone();
                }
            }
            self.next_event += 1;
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

    /// A run of nodes with each node's wall time added to its counter.
    #[inline(never)]
    fn process_run_timed(&mut self, run: Run, pos: u64, n: usize) {
        let mut t0 = std::time::Instant::now();
        for i in run.start..run.end {
            self.process_slot(i, pos, n);
            // One clock read per node: each node's end is the next one's start.
            let t1 = std::time::Instant::now();
            self.node_ns[i] += t1.duration_since(t0).as_nanos() as u64;
            t0 = t1;
        }
    }

    fn process_slot(&mut self, i: usize, start: u64, n: usize) {
        let (before, rest) = self.slots.split_at_mut(i);
        let slot = &mut rest[0];
        if slot.muted_until != 0 && start >= slot.muted_until {
            // The mute is over: try again from a clean state.
            slot.muted_until = 0;
            slot.reset_state();
        }
        let muted = slot.muted_until != 0;
        let outcome = match &mut slot.core {
            Core::F32(t) => run_typed(
                t,
                before,
                &slot.inputs,
                &slot.param_inputs,
                &slot.params,
                start,
                n,
                muted,
                slot.dead,
            ),
            Core::F64(t) => run_typed(
                t,
                before,
                &slot.inputs,
                &slot.param_inputs,
                &slot.params,
                start,
                n,
                muted,
                slot.dead,
            ),
        };
        match outcome {
            Outcome::Ok => {}
            Outcome::NonFinite => self.report_nan(i, start),
            Outcome::Panicked => self.report_panic(i, start),
        }
    }

    /// A node panicked: its outputs were silenced; it is never called again
    /// (its state may be broken) until the next edit builds a new engine.
    #[cold]
    #[inline(never)]
    fn report_panic(&mut self, i: usize, sample: u64) {
        self.stats.panics += 1;
        if self.stats.first_panic.is_none() {
            self.stats.first_panic = Some((i, sample));
        }
        self.slots[i].dead = true;
    }

    /// A node produced NaN/Inf (already replaced by silence): its state is
    /// reset so it runs again from the next block — a transient overflow
    /// must not silence a voice for the rest of a performance. If it failed
    /// within the last second too, it is muted for a second (and then tried
    /// again from a clean state), so a node that keeps failing costs
    /// nothing and reports once a second. The same under every profile, so
    /// run, render and replay agree.
    #[cold]
    #[inline(never)]
    fn report_nan(&mut self, i: usize, sample: u64) {
        self.stats.nan_events += 1;
        if self.stats.first_nan.is_none() {
            self.stats.first_nan = Some((i, sample));
        }
        let rate = self.sample_rate as u64;
        let s = &mut self.slots[i];
        if s.last_failure
            .is_some_and(|t| sample.saturating_sub(t) < rate)
        {
            s.muted_until = sample + rate;
        } else {
            s.reset_state();
        }
        s.last_failure = Some(sample);
    }

    /// Writes each feedback edge's source output of the chunk just run
    /// into its delay line, for the chunks `delay` samples on. A change of
    /// precision converts under the destination's FP mode, as any edge
    /// into it does. Real-time safe: copies only.
    fn feed_back(&mut self, guard: &FpGuard, n: usize) {
        for f in 0..self.feeds.len() {
            let Feed { dst, ring, src } = self.feeds[f];
            if src.node == dst {
                // A node feeding itself: disjoint fields of one node.
                match &mut self.slots[dst].core {
                    Core::F32(t) => t.rings[ring].write(&t.outs[src.port][..n]),
                    Core::F64(t) => t.rings[ring].write(&t.outs[src.port][..n]),
                }
                continue;
            }
            let (from, to) = if src.node < dst {
                let (lo, hi) = self.slots.split_at_mut(dst);
                (&lo[src.node], &mut hi[0])
            } else {
                let (lo, hi) = self.slots.split_at_mut(src.node);
                (&hi[0], &mut lo[dst])
            };
            let converts = from.precision() != to.precision();
            if converts {
                guard.set_flush(to.flush);
            }
            match (&from.core, &mut to.core) {
                (Core::F32(a), Core::F32(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
                (Core::F32(a), Core::F64(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
                (Core::F64(a), Core::F32(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
                (Core::F64(a), Core::F64(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
            }
        }
    }

    fn gather_main(&mut self, offset: usize, n: usize) {
        for (c, src) in self.main.iter().enumerate() {
            let s = &self.slots[src.node];
            match &s.core {
                Core::F32(t) => self.bus.write(c, offset, &t.outs[src.port][..n]),
                Core::F64(t) => self.bus.write(c, offset, &t.outs[src.port][..n]),
            }
        }
    }

    /// Returns every node to its post-build state and the clock to 0.
    pub fn reset(&mut self) {
        for s in &mut self.slots {
            s.reset_state();
            s.muted_until = 0;
            s.last_failure = None;
            s.dead = false;
            s.params.copy_from_slice(&s.initial_params);
            for (i, v) in s.initial_values.iter().enumerate() {
                if s.values[i] != *v {
                    match &mut s.core {
                        Core::F32(t) => t.node.set_discrete(i, v),
                        Core::F64(t) => t.node.set_discrete(i, v),
                    }
                    s.values[i] = v.clone();
                }
            }
        }
        self.bus.reset();
        self.clock = 0;
        self.next_event = 0;
        self.pending.clear();
    }

    /// Captures the clock, node states and param states. Allocates: on the
    /// audio thread use [`capture_into`](Self::capture_into) with a buffer
    /// from this method instead.
    pub fn snapshot(&self) -> EngineState {
        let mut st = EngineState {
            clock: 0,
            next_event: 0,
            nodes: Vec::with_capacity(self.slots.len()),
            main: self.bus.save(),
            profile: self.session,
            main_sig: self.main_sig,
            main_wiring: self.main_wiring,
        };
        for s in &self.slots {
            st.nodes.push(NodeSnapshot {
                id: s.id.clone(),
                op: s.op,
                state: NodeState::default(),
                params: s.params.clone(),
                discrete: s
                    .values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| {
                        matches!(v, Value::Enum(_) | Value::Integer(_) | Value::Bool(_))
                    })
                    .map(|(i, v)| (i, v.clone()))
                    .collect(),
                edges: match &s.core {
                    Core::F32(t) => t.rings.iter().map(Ring::save).collect(),
                    Core::F64(t) => t.rings.iter().map(Ring::save).collect(),
                },
                scene_values: s.initial_values.clone(),
                sig: s.sig,
                wiring: s.wiring,
            });
        }
        self.capture_into(&mut st);
        st
    }

    /// Copies the running state into `st`, a buffer that
    /// [`snapshot`](Self::snapshot) of this same engine shaped: copies only,
    /// no allocation or free, so the audio thread can do it at a block
    /// boundary. The scene values and signatures in `st` never change while
    /// an engine runs and are left as they are.
    pub fn capture_into(&self, st: &mut EngineState) {
        debug_assert_eq!(st.nodes.len(), self.slots.len());
        st.clock = self.clock;
        st.next_event = self.next_event;
        self.bus.save_into(&mut st.main);
        for (s, snap) in self.slots.iter().zip(st.nodes.iter_mut()) {
            match &s.core {
                Core::F32(t) => t.node.snapshot(&mut snap.state),
                Core::F64(t) => t.node.snapshot(&mut snap.state),
            }
            snap.params.copy_from_slice(&s.params);
            for (i, v) in snap.discrete.iter_mut() {
                // Enum, integer and bool values: no allocation, no free.
                v.clone_from(&s.values[*i]);
            }
            match &s.core {
                Core::F32(t) => t
                    .rings
                    .iter()
                    .zip(snap.edges.iter_mut())
                    .for_each(|(r, e)| r.save_into(e)),
                Core::F64(t) => t
                    .rings
                    .iter()
                    .zip(snap.edges.iter_mut())
                    .for_each(|(r, e)| r.save_into(e)),
            }
        }
    }

    /// Continues from `st` (taken from an engine of the same scene, at any
    /// profile): every node whose id and operator match takes its state,
    /// converting precision. Fails, naming the node, if a matching node's
    /// state does not fit; that node is then left fresh.
    pub fn restore(&mut self, st: &EngineState) -> Result<(), (String, StateError)> {
        let clock = st.clock;
        let m = self.migrate(st, clock);
        match m.notices.into_iter().find_map(|n| match n {
            Notice::StateNotCarried { id, error } => Some((id, error)),
            _ => None,
        }) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Slot {
    /// Returns the node and its edge delay lines to their post-build state
    /// (params and clock untouched). Real-time safe.
    fn reset_state(&mut self) {
        match &mut self.core {
            Core::F32(t) => {
                t.node.reset();
                t.rings.iter_mut().for_each(Ring::reset);
            }
            Core::F64(t) => {
                t.node.reset();
                t.rings.iter_mut().for_each(Ring::reset);
            }
        }
    }

    fn precision(&self) -> Precision {
        match self.core {
            Core::F32(_) => Precision::F32,
            Core::F64(_) => Precision::F64,
        }
    }
}

/// Copies (first source) or adds (the rest) each source into `dst`,
/// converting precision and applying alignment delays. The order is the
/// plan's fixed summing order: `dst = ((s0 + s1) + s2) + …` per sample.
/// Consecutive undelayed sources at `dst`'s precision are added
/// [`FAN`] per pass over the block (the same sums in the same order, with
/// one load and store of `dst` per group instead of per source).
#[inline]
fn gather<S: Sample>(
    dst: &mut [S],
    edges: &[EdgeIn],
    before: &[Slot],
    rings: &mut [Ring<S>],
    tmp: &mut [S],
) {
    let n = dst.len();
    let mut k = 0;
    while k < edges.len() {
        let mut group: [&[S]; FAN] = [&[]; FAN];
        let mut len = 0;
        while len < FAN && k + len < edges.len() {
            match same_precision_source::<S>(&edges[k + len], before, n) {
                Some(src) => group[len] = src,
                None => break,
            }
            len += 1;
        }
        if len > 1 {
            add_group(dst, &group[..len], k == 0);
            k += len;
            continue;
        }
        let e = edges[k];
        let src = e.src;
        if src.is_feedback() {
            // The source may run later: read its past from the line.
            let tmp = &mut tmp[..n];
            rings[e.ring].read(tmp);
            add_into(dst, tmp, k == 0);
        } else if e.ring == NO_RING {
            match &before[src.node].core {
                Core::F32(t) => add_into(dst, &t.outs[src.port][..n], k == 0),
                Core::F64(t) => add_into(dst, &t.outs[src.port][..n], k == 0),
            }
        } else {
            let tmp = &mut tmp[..n];
            match &before[src.node].core {
                Core::F32(t) => add_into(tmp, &t.outs[src.port][..n], true),
                Core::F64(t) => add_into(tmp, &t.outs[src.port][..n], true),
            }
            rings[e.ring].process(tmp);
            add_into(dst, tmp, k == 0);
        }
        k += 1;
    }
}

/// Sources summed per pass over the block in [`gather`].
const FAN: usize = 8;

/// An undelayed edge's source block when it is at precision `S`.
#[inline]
fn same_precision_source<'a, S: Sample>(
    e: &EdgeIn,
    before: &'a [Slot],
    n: usize,
) -> Option<&'a [S]> {
    if e.ring != NO_RING || e.src.is_feedback() {
        return None;
    }
    let out: &dyn std::any::Any = match &before[e.src.node].core {
        Core::F32(t) => &t.outs[e.src.port],
        Core::F64(t) => &t.outs[e.src.port],
    };
    out.downcast_ref::<Vec<S>>().map(|v| &v[..n])
}

/// `dst = dst + s0 + s1 + …` left to right per sample (`first`: `dst` is
/// not read, `dst = s0 + s1 + …`), four sources per pass.
#[inline]
fn add_group<S: Sample>(dst: &mut [S], srcs: &[&[S]], first: bool) {
    let n = dst.len();
    let rest = if first {
        dst.copy_from_slice(&srcs[0][..n]);
        &srcs[1..]
    } else {
        srcs
    };
    for quad in rest.chunks(4) {
        if let [a, b, c, e] = quad {
            let sums = dst
                .iter_mut()
                .zip(&a[..n])
                .zip(&b[..n])
                .zip(&c[..n])
                .zip(&e[..n]);
            for ((((d, a), b), c), e) in sums {
                *d = (((*d + *a) + *b) + *c) + *e;
            }
        } else {
            for src in quad {
                for (d, x) in dst.iter_mut().zip(&src[..n]) {
                    *d += *x;
                }
            }
        }
    }
}

#[inline]
fn add_into<S: Sample, T: Sample>(dst: &mut [S], src: &[T], first: bool) {
    if first {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = convert(*s);
        }
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d += convert::<S, T>(*s);
        }
    }
}

/// Precision conversion: exact widening, round-to-nearest narrowing that
/// saturates at ±f32::MAX (a finite f64 beyond f32's range must not become
/// an infinity inside the next node's state).
#[inline(always)]
pub(crate) fn convert<S: Sample, T: Sample>(x: T) -> S {
    match (T::PRECISION, S::PRECISION) {
        (Precision::F32, _) => S::from_f32(x.to_f32()),
        (Precision::F64, Precision::F64) => S::from_f64(x.to_f64()),
        (Precision::F64, Precision::F32) => {
            let max = f32::MAX as f64;
            S::from_f64(x.to_f64().clamp(-max, max))
        }
    }
}

/// What happened when a node ran.
enum Outcome {
    Ok,
    /// It produced NaN/Inf (replaced by silence).
    NonFinite,
    /// It panicked (its outputs are silence).
    Panicked,
}

/// Runs one node.
#[allow(clippy::too_many_arguments)]
fn run_typed<S: Sample>(
    t: &mut Typed<S>,
    before: &[Slot],
    inputs: &[Vec<EdgeIn>],
    param_inputs: &[Vec<EdgeIn>],
    params: &[ParamState],
    start: u64,
    n: usize,
    muted: bool,
    dead: bool,
) -> Outcome {
    if dead || muted {
        for out in t.outs.iter_mut() {
            out[..n].iter_mut().for_each(|x| *x = S::ZERO);
        }
        return Outcome::Ok;
    }
    for (buf, srcs) in t.ins.iter_mut().zip(inputs) {
        if !srcs.is_empty() {
            gather(&mut buf[..n], srcs, before, &mut t.rings, &mut t.tmp);
        }
    }
    for (buf, srcs) in t.sigs.iter_mut().zip(param_inputs) {
        if !srcs.is_empty() {
            gather(&mut buf[..n], srcs, before, &mut t.rings, &mut t.tmp);
        }
    }
    let mut io = Io {
        frames: n,
        start,
        inputs: &t.ins,
        outputs: &mut t.outs,
        params: Params::new(params, &t.sigs, start),
    };
    // A panic in one node must not take the audio thread (and the session)
    // with it. Unwinding itself is cheap when nothing panics.
    let node = &mut t.node;
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        node.process(&mut io);
    })) {
        // Freeing the payload would be a free on the audio thread; a node
        // panics at most once per engine, so leaking it is bounded.
        std::mem::forget(payload);
        for out in t.outs.iter_mut() {
            out[..n].iter_mut().for_each(|x| *x = S::ZERO);
        }
        return Outcome::Panicked;
    }
    let mut bad = false;
    for out in t.outs.iter_mut() {
        // One branch-free pass finds out; only a bad block is scrubbed.
        if !all_finite(&out[..n]) {
            for x in out[..n].iter_mut() {
                if !x.is_finite() {
                    *x = S::ZERO;
                }
            }
            bad = true;
        }
    }
    if bad {
        Outcome::NonFinite
    } else {
        Outcome::Ok
    }
}
