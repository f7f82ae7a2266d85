//! A node as the engine holds and runs it: its processor and buffers at its
//! precision ([`Slot`]), built from the plan; the call that gathers its
//! inputs and runs it; and recovery when it misbehaves — NaN/Inf is
//! silenced and the node reset; one that keeps failing is muted and retried
//! on a backoff (10 ms, doubling up to 1 s) until its input lets it run
//! clean ([`Recovery`]); a panic silences it for good — counted in
//! [`EngineStats`].

use super::feedback::Feed;
use super::mix::{gather, EdgeIn, Sources, NO_RING};
use super::{Engine, Ring};
use crate::dsp::vector::{all_finite_at, fits_f32, SimdLevel};
use crate::dsp::{Precision, Sample};
use crate::graph::{PlanNode, SourceRef};
use crate::ops::{
    AnyNode, Io, NodeProcessor, ParamSpec, ParamState, Params, PartClear, Progress, Value,
};

/// A node's processor and buffers at its precision.
/// `repr(C)`: what a lane group reads of every member (the processor and
/// its buffers) comes first, on the slot's first lines.
#[repr(C)]
pub(super) struct Typed<S> {
    pub(super) node: Box<dyn NodeProcessor<S>>,
    /// Audio inputs (always allocated; silence when unconnected).
    pub(super) ins: Vec<Vec<S>>,
    pub(super) outs: Vec<Vec<S>>,
    /// Modulation signals by param index (empty when unconnected).
    pub(super) sigs: Vec<Vec<S>>,
    /// Delay lines of incoming edges: latency compensation, and the lines
    /// of feedback edges (written by [`Engine::feed_back`]).
    pub(super) rings: Vec<Ring<S>>,
    /// Scratch for a delayed edge's block.
    pub(super) tmp: Vec<S>,
    /// A voice's sound node run in its own chunks (`split.rs`): the
    /// buffers a chunk is written into before it moves to its offset in
    /// `outs`, which holds the whole block. Empty otherwise.
    pub(super) spare: Vec<Vec<S>>,
}

pub(super) enum Core {
    F32(Typed<f32>),
    F64(Typed<f64>),
}

/// `repr(C)`: the fields a lane group reads of every member each chunk
/// (processor and buffers, params, inputs, recovery, the fused-sum and
/// swap bits) lie together on the slot's first four cache lines; the
/// rest is read when the graph is built, edited or saved.
#[repr(C)]
pub(super) struct Slot {
    pub(super) core: Core,
    pub(super) params: Vec<ParamState>,
    pub(super) inputs: Vec<Vec<EdgeIn>>,
    /// Its failures and the backoff of its retries.
    pub(super) recovery: Recovery,
    /// Audio inputs (bit k: input k) a fused lane group has already summed
    /// for the current chunk: not gathered again; cleared when the node runs.
    pub(super) prefilled: u64,
    /// Audio inputs (bit k: input k) fed by one edge from a node nothing
    /// else reads: the source's output buffer is swapped in rather than
    /// copied ([`take_inputs`]). Set by the lane plan.
    pub(super) steal: u64,
    /// The lane group the node is in ([`NO_GROUP`] if none). Set by the
    /// lane plan.
    pub(super) lane_group: u32,
    pub(super) id: String,
    pub(super) op: &'static str,
    /// The operator's param declarations: their ranges hold modulated values.
    pub(super) param_specs: &'static [ParamSpec],
    /// Current values of discrete params (enum, integer, bool), changed by
    /// events; other entries keep their static value and are unused.
    pub(super) values: Vec<Value>,
    /// The scene's values, restored by `reset`.
    pub(super) initial_params: Vec<ParamState>,
    pub(super) initial_values: Vec<Value>,
    pub(super) param_inputs: Vec<Vec<EdgeIn>>,
    pub(super) flush: bool,
    /// What must match for state to carry as-is across a handover: op,
    /// resolved profile, precision and incoming wiring (see `handover`).
    pub(super) sig: u64,
    /// Incoming wiring alone: the edge delay lines carry when it matches.
    pub(super) wiring: u64,
    /// Samples over which a live edit of this node's params glides.
    pub(super) edit_ramp: u64,
    /// The session input channel an `input` node reads (its audio input 0).
    pub(super) feed: Option<usize>,
    /// The voice the node plays in, if it is a voice module's.
    pub(super) voice: Option<VoiceOf>,
}

/// A slot's [`Slot::lane_group`] when it is in no lane group.
pub(super) const NO_GROUP: u32 = u32::MAX;

/// Which voice of a voice module a slot plays in, and whether it is the
/// voice's sound (the module's `out` node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VoiceOf {
    pub(super) pool: u32,
    pub(super) voice: u32,
    pub(super) out: bool,
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
    /// The node that last produced NaN/Inf, and the start of that block
    /// (of the nodes that did in one block, the last in schedule order).
    pub last_nan: Option<(usize, u64)>,
    /// Another node produced NaN/Inf in the same block as the first
    /// (which of them an engine names depends on the order it runs them
    /// in).
    pub first_nan_shared: bool,
    /// Input samples that were NaN or infinite, read as silence.
    pub(crate) input_scrubbed: u64,
}

fn new_typed<S: Sample>(
    node: Box<dyn NodeProcessor<S>>,
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
        spare: Vec::new(),
        ins: vec![vec![S::ZERO; block]; n_in],
        outs: vec![vec![S::ZERO; block]; n_out],
        sigs: sig_ports
            .iter()
            .map(|&c| if c { vec![S::ZERO; block] } else { Vec::new() })
            .collect(),
    }
}

impl Slot {
    /// Takes the built node out of `pn` (schedule index `dst`) and
    /// allocates its buffers and the delay lines of its incoming edges; each
    /// feedback edge into it goes on `feeds`.
    pub(super) fn new(
        pn: &mut PlanNode,
        dst: usize,
        sig: u64,
        wiring: u64,
        block: usize,
        feeds: &mut Vec<Feed>,
    ) -> Slot {
        let node = pn.node.take().expect("plan was built with nodes");
        let sig_ports: Vec<bool> = pn.param_inputs.iter().map(|l| !l.is_empty()).collect();
        let feed =
            crate::ops::is_session_input(pn.op).then(|| crate::ops::input_channel(&pn.values));
        let n_in = pn.inputs.len() + usize::from(feed.is_some());
        let n_out = pn.op.outputs.len();
        let mut delays = Vec::new();
        let mut wire = |list: &Vec<Vec<SourceRef>>| -> Vec<Vec<EdgeIn>> {
            list.iter()
                .map(|l| {
                    l.iter()
                        .map(|src| EdgeIn {
                            staged: false,
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
        Slot {
            id: pn.id.clone(),
            op: pn.op.name,
            param_specs: pn.op.params,
            core,
            params: params_init.clone(),
            values: pn.values.clone(),
            initial_params: params_init.clone(),
            initial_values: pn.values.clone(),
            inputs,
            param_inputs,
            recovery: Recovery::default(),
            flush: pn.profile.flush_to_zero,
            sig,
            wiring,
            edit_ramp: pn.edit_ramp,
            feed,
            voice: None,
            prefilled: 0,
            steal: 0,
            lane_group: NO_GROUP,
        }
    }

    /// Returns the node and its edge delay lines to their post-build state
    /// (params and clock untouched). Real-time safe.
    pub(super) fn reset_state(&mut self) {
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

    /// Starts returning the node and its edge delay lines to their
    /// post-build state on the audio thread, a part per call of
    /// [`reset_step`](Self::reset_step): a 30 s delay line or a long
    /// convolution history is not zeroed in one callback.
    pub(super) fn begin_reset(&mut self) {
        self.recovery.resetting = Some(ResetPart::Node(0));
    }

    /// The next part, about `budget` samples, of a reset begun with
    /// [`begin_reset`](Self::begin_reset); true once none is in progress
    /// (the node is then as [`reset_state`](Self::reset_state) leaves it).
    /// Short state completes in the first part.
    pub(super) fn reset_step(&mut self, budget: usize) -> bool {
        let Some(part) = self.recovery.resetting else {
            return true;
        };
        let next = match &mut self.core {
            Core::F32(t) => reset_part(t, part, budget),
            Core::F64(t) => reset_part(t, part, budget),
        };
        self.recovery.resetting = next;
        next.is_none()
    }

    /// How many samples of state a reset spread over blocks zeroes: the
    /// node's own ([`NodeProcessor::reset_part`](crate::ops::NodeProcessor::reset_part)
    /// complete from there with no budget), then its edge delay lines.
    /// [`reset_step`](Self::reset_step) calls whose budgets add up to it
    /// complete a reset. Call on a node fresh from its build (it is
    /// left so): measuring may run the last step of a reset.
    pub(super) fn reset_len(&mut self) -> u64 {
        let (node, lines) = match &mut self.core {
            Core::F32(t) => (
                part_len(|d| t.node.reset_part(d, 0)),
                t.rings.iter().map(Ring::len).sum::<usize>(),
            ),
            Core::F64(t) => (
                part_len(|d| t.node.reset_part(d, 0)),
                t.rings.iter().map(Ring::len).sum::<usize>(),
            ),
        };
        (node + lines) as u64
    }

    pub(super) fn precision(&self) -> Precision {
        match self.core {
            Core::F32(_) => Precision::F32,
            Core::F64(_) => Precision::F64,
        }
    }
}

impl Engine {
    pub(super) fn process_slot(&mut self, i: usize, start: u64, n: usize) {
        // A free voice's nodes are not run: its sound is silence.
        if self.slots[i].voice.is_some() && self.voice_idle(i) {
            if self.slots[i].voice.is_some_and(|t| t.out) {
                match &mut self.slots[i].core {
                    Core::F32(t) => t.outs.iter_mut().for_each(|o| o[..n].fill(0.0)),
                    Core::F64(t) => t.outs.iter_mut().for_each(|o| o[..n].fill(0.0)),
                }
            }
            return;
        }
        self.run_slot(i, start, n);
        if self.slots[i].voice.is_some_and(|t| t.out) {
            self.voice_sound(i, start, n);
        }
    }

    fn run_slot(&mut self, i: usize, start: u64, n: usize) {
        let (before, rest) = self.slots.split_at_mut(i);
        let slot = &mut rest[0];
        if slot.steal != 0 {
            take_inputs(before, slot, n);
        }
        let at = Ambient {
            clock: self.clock,
            block_size: self.block_size,
            simd: self.simd,
            stage_at: self.stage_at,
            inputs: &self.inputs,
        };
        let fx = run_one(slot, Sources::of(before), &at, start, n);
        self.apply_effects(i, fx, start, n);
    }

    /// Applies to the engine what running node `i` over `start..start + n`
    /// left for it ([`Effects`]): a spoilt save, scrubbed input samples, a
    /// NaN or a panic to report.
    #[inline]
    pub(super) fn apply_effects(&mut self, i: usize, fx: Effects, start: u64, n: usize) {
        if fx.spoil {
            self.save.spoil();
        }
        self.stats.input_scrubbed += fx.scrubbed;
        match fx.outcome {
            Outcome::Ok => {}
            Outcome::NonFinite => self.report_nan(i, start, start + n as u64),
            Outcome::Panicked(p) => {
                self.caught.keep(p);
                self.report_panic(i, start);
            }
        }
    }

    /// A node panicked: its outputs were silenced; it is never called again
    /// (its state may be broken) until the next edit builds a new engine.
    #[cold]
    #[inline(never)]
    pub(super) fn report_panic(&mut self, i: usize, sample: u64) {
        self.stats.panics += 1;
        if self.stats.first_panic.is_none() {
            self.stats.first_panic = Some((i, sample));
        }
        self.slots[i].recovery.dead = true;
    }

    /// A node produced NaN/Inf in the block `start..end` (already replaced
    /// by silence): counted, and reset or muted by the [`Recovery`] rule.
    #[cold]
    #[inline(never)]
    pub(super) fn report_nan(&mut self, i: usize, start: u64, end: u64) {
        self.stats.nan_events += 1;
        match self.stats.first_nan {
            None => self.stats.first_nan = Some((i, start)),
            Some((first, at)) => self.stats.first_nan_shared |= at == start && first != i,
        }
        self.stats.last_nan = Some((i, start));
        let rate = self.sample_rate as u64;
        let s = &mut self.slots[i];
        if s.recovery.fail(end, rate) {
            // Short state is clean at once, as before the next block; long
            // state goes on in parts, the node silent meanwhile.
            s.begin_reset();
            let budget = (2 * self.block_size).max(super::PART_SAMPLES);
            s.reset_step(budget);
            self.save.spoil();
        }
    }
}

/// A node's failure state: whether it is muted and until when, how long its
/// next mute lasts, and whether it panicked. A handover that matches the
/// node carries it (a param-only cut changes nothing about it); a node that
/// panicked starts fresh in the new engine instead.
///
/// **The rule.** A healthy node that produces NaN/Inf is reset and runs
/// again from the next block: a transient overflow must not silence a voice
/// for the rest of a performance, and costs one block. If it fails again
/// before it has recovered, it is muted for 10 ms and then retried from a
/// clean state; each failure that follows doubles the wait, up to one
/// second, so a node whose input stays broken costs nothing and reports
/// ever more rarely. Once the cause has gone the node sounds again at its
/// next retry, which comes at most about as long after the cause ended as
/// the cause lasted (the waits double, so the last one is about the time
/// spent failing so far): a 0.1 s overflow is back by about 0.15 s.
///
/// **Recovered.** The backoff starts over (the next failure only resets
/// again) once the node has run clean for as long as its last wait since it
/// restarted (10 ms after a plain reset). Not at its first clean block: a
/// node whose input breaks only now and then (a resonance that blows up
/// every few blocks) would then be reset every few blocks for good, each
/// time costing a reset and a NaN event, where this rule keeps lengthening
/// its mutes. The node plays throughout that time: waiting to call it
/// recovered costs no sound.
///
/// Counted in samples alone, never wall-clock time, and the same under every
/// profile, so `render` twice, and `run` and its `replay`, agree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Muted until this sample (0: not muted): the first block at or after
    /// it runs the node again from a clean state.
    pub muted_until: u64,
    /// The mute the next failure brings, in samples (0: healthy, the next
    /// failure only resets the node).
    pub wait: u64,
    /// While `wait` is set: recovered once a clean block ends at or after
    /// this sample.
    pub clear_at: u64,
    /// Panicked: never called again in this engine, outputs silent.
    pub dead: bool,
    /// A reset spread over blocks in progress (the node is silent until it
    /// completes), and how far it got.
    pub resetting: Option<ResetPart>,
}

/// How far a reset spread over blocks got: the node's own state (its
/// [`NodeProcessor::reset_part`](crate::ops::NodeProcessor::reset_part) progress),
/// then its incoming edges' delay lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetPart {
    /// The node's own state, with this much progress so far.
    Node(u64),
    /// The delay lines of its incoming edges, with this much progress so far.
    Lines(u64),
}

impl Recovery {
    /// The node's first mute: 10 ms at `rate` (at least a sample).
    fn first_wait(rate: u64) -> u64 {
        (rate / 100).max(1)
    }

    /// The longest mute: a second at `rate`.
    fn longest_wait(rate: u64) -> u64 {
        rate.max(Self::first_wait(rate))
    }

    /// True (and the mute is over) when the block at `start` ends a mute:
    /// the node is then to be reset and run.
    #[inline]
    fn retry_due(&mut self, start: u64) -> bool {
        if self.muted_until != 0 && start >= self.muted_until {
            self.muted_until = 0;
            true
        } else {
            false
        }
    }

    /// The node ran clean up to `end` (or was muted or dead, and so silent).
    #[inline]
    pub(super) fn ran_clean(&mut self, end: u64) {
        if self.wait != 0 && self.muted_until == 0 && end >= self.clear_at {
            self.wait = 0;
        }
    }

    /// The node produced NaN/Inf in a block ending at `end`, at `rate`:
    /// returns true when it is to be reset now (it was healthy), false when
    /// it is muted instead (and reset when it is retried).
    fn fail(&mut self, end: u64, rate: u64) -> bool {
        if self.wait == 0 {
            self.wait = Self::first_wait(rate);
            self.clear_at = end + self.wait;
            return true;
        }
        let wait = self.wait;
        self.muted_until = end + wait;
        self.clear_at = self.muted_until + wait;
        self.wait = (wait * 2).min(Self::longest_wait(rate));
        false
    }
}

/// One part of a reset: the node's state, then its edge lines; `None`
/// once complete.
fn reset_part<S: Sample>(t: &mut Typed<S>, part: ResetPart, budget: usize) -> Option<ResetPart> {
    let mut part = part;
    if let ResetPart::Node(done) = part {
        match t.node.reset_part(done as usize, budget) {
            Progress::Done => part = ResetPart::Lines(0),
            Progress::Copied(n) => return Some(ResetPart::Node(n as u64)),
        }
    }
    let ResetPart::Lines(done) = part else {
        return Some(part);
    };
    let mut clear = PartClear::new(done as usize, budget);
    for r in t.rings.iter_mut() {
        r.clear_part(&mut clear);
    }
    match clear.progress() {
        Progress::Done => {
            t.rings.iter_mut().for_each(Ring::rewind);
            None
        }
        Progress::Copied(n) => Some(ResetPart::Lines(n as u64)),
    }
}

/// The least `done` from which a reset in parts is complete with no more
/// budget (`step(done)` is [`Progress::Done`]), by doubling then halving.
fn part_len(mut step: impl FnMut(usize) -> Progress) -> usize {
    if step(0) == Progress::Done {
        return 0;
    }
    let mut hi = 1usize;
    while step(hi) != Progress::Done {
        if hi >= 1 << 48 {
            return hi;
        }
        hi *= 2;
    }
    // step(lo) is not complete, step(hi) is.
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if step(mid) == Progress::Done {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// For each input in `slot.steal`: the source's output buffer and the
/// input's are swapped (the source's block becomes the input, the same
/// values a copy would give; the source writes every frame of its next
/// block into the other buffer), and the input is marked prefilled.
pub(super) fn take_inputs(before: &mut [Slot], slot: &mut Slot, n: usize) {
    let mut bits = slot.steal;
    while bits != 0 {
        let k = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let Some(e) = slot.inputs.get(k).and_then(|l| l.first()) else {
            continue;
        };
        let Some(src) = before.get_mut(e.src.node) else {
            continue;
        };
        let swapped = match (&mut src.core, &mut slot.core) {
            (Core::F32(a), Core::F32(b)) => swap_block(&mut a.outs, e.src.port, &mut b.ins, k, n),
            (Core::F64(a), Core::F64(b)) => swap_block(&mut a.outs, e.src.port, &mut b.ins, k, n),
            _ => false,
        };
        if swapped {
            slot.prefilled |= 1 << k;
        }
    }
}

/// [`take_inputs`] on a worker, where node `i` (`slot`) reaches its sources
/// through `base`, the engine's slots.
///
/// # Safety
/// `base` points at the engine's slots, `slot` is the `i`-th, and no other
/// thread touches the source of a stolen input while the call runs: it is
/// in an earlier level than node `i`, and node `i` is its only reader (the
/// lane plan steals an input only then).
pub(super) unsafe fn take_inputs_raw(base: *mut Slot, i: usize, slot: &mut Slot, n: usize) {
    let mut bits = slot.steal;
    while bits != 0 {
        let k = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let Some(e) = slot.inputs.get(k).and_then(|l| l.first()) else {
            continue;
        };
        if e.src.node >= i {
            continue;
        }
        // SAFETY: in bounds (below `i`) and touched by no other thread:
        // the contract above.
        let src = unsafe { &mut *base.add(e.src.node) };
        let swapped = match (&mut src.core, &mut slot.core) {
            (Core::F32(a), Core::F32(b)) => swap_block(&mut a.outs, e.src.port, &mut b.ins, k, n),
            (Core::F64(a), Core::F64(b)) => swap_block(&mut a.outs, e.src.port, &mut b.ins, k, n),
            _ => false,
        };
        if swapped {
            slot.prefilled |= 1 << k;
        }
    }
}

/// Swaps `outs[p]` and `ins[k]` when both hold at least `n` frames.
fn swap_block<S>(outs: &mut [Vec<S>], p: usize, ins: &mut [Vec<S>], k: usize, n: usize) -> bool {
    match (outs.get_mut(p), ins.get_mut(k)) {
        (Some(o), Some(i)) if o.len() >= n && i.len() == o.len() => {
            std::mem::swap(o, i);
            true
        }
        _ => false,
    }
}

/// What happened when a node ran.
#[derive(Default)]
pub(super) enum Outcome {
    #[default]
    Ok,
    /// It produced NaN/Inf (replaced by silence).
    NonFinite,
    /// It panicked (its outputs are silence); the payload, to be kept.
    Panicked(super::caught::Payload),
}

/// What running one node leaves for the engine to apply ([`Engine::apply_effects`]),
/// so that a worker running it touches nothing but the node.
#[derive(Default)]
pub(super) struct Effects {
    pub(super) outcome: Outcome,
    /// A reset step ran: a save in progress is spoilt.
    pub(super) spoil: bool,
    /// Session input samples that were not finite.
    pub(super) scrubbed: u64,
    /// A voice's sound node ran: what follows its sound is still to do
    /// ([`Engine::voice_sound`]).
    pub(super) sound: bool,
}

/// What every node of a chunk reads of the engine (never writes).
pub(super) struct Ambient<'a> {
    pub(super) clock: u64,
    pub(super) block_size: usize,
    pub(super) simd: SimdLevel,
    pub(super) stage_at: usize,
    pub(super) inputs: &'a super::input::Inputs,
}

/// Runs node `slot` over `start..start + n` (its stolen inputs already
/// taken), reading its sources from `before`: a retry or a reset step due,
/// its session input, its inputs gathered, the node called; a clean run
/// is recorded in its recovery, anything else is returned.
pub(super) fn run_one(
    slot: &mut Slot,
    before: Sources<'_>,
    at: &Ambient<'_>,
    start: u64,
    n: usize,
) -> Effects {
    let mut fx = Effects::default();
    if slot.recovery.retry_due(start) {
        slot.begin_reset();
    }
    if slot.recovery.resetting.is_some() {
        // About PART_SAMPLES per block, whatever the chunks.
        let budget = (2 * n).max(super::PART_SAMPLES * n / at.block_size.max(1));
        slot.reset_step(budget);
        fx.spoil = true;
    }
    if let Some(c) = slot.feed {
        let offset = (start - at.clock) as usize;
        fx.scrubbed = match &mut slot.core {
            Core::F32(t) => at.inputs.copy_to(at.simd, c, offset, &mut t.ins[0][..n]),
            Core::F64(t) => at.inputs.copy_to(at.simd, c, offset, &mut t.ins[0][..n]),
        };
    }
    let call = Call {
        before,
        inputs: &slot.inputs,
        param_inputs: &slot.param_inputs,
        params: &slot.params,
        specs: slot.param_specs,
        start,
        n,
        muted: slot.recovery.muted_until != 0 || slot.recovery.resetting.is_some(),
        dead: slot.recovery.dead,
        simd: at.simd,
        prefilled: slot.prefilled,
        at: at.stage_at,
    };
    let outcome = match &mut slot.core {
        Core::F32(t) => run_typed(t, &call),
        Core::F64(t) => run_typed(t, &call),
    };
    slot.prefilled = 0;
    match outcome {
        // A node silent while its reset completes has not run clean.
        Outcome::Ok if slot.recovery.resetting.is_some() => {}
        Outcome::Ok => slot.recovery.ran_clean(start + n as u64),
        other => fx.outcome = other,
    }
    fx
}

/// What one call of a node reads besides its own buffers.
struct Call<'a> {
    /// The nodes scheduled before it: its (non-feedback) sources.
    before: Sources<'a>,
    inputs: &'a [Vec<EdgeIn>],
    param_inputs: &'a [Vec<EdgeIn>],
    params: &'a [ParamState],
    specs: &'a [ParamSpec],
    start: u64,
    n: usize,
    muted: bool,
    dead: bool,
    /// The instruction set of the output check.
    simd: SimdLevel,
    /// Inputs already summed by a fused lane group ([`Slot::prefilled`]).
    prefilled: u64,
    /// Where staged sources are read ([`Engine::stage_at`]).
    at: usize,
}

/// Runs one node.
fn run_typed<S: Sample>(t: &mut Typed<S>, call: &Call<'_>) -> Outcome {
    let &Call {
        before,
        inputs,
        param_inputs,
        params,
        specs,
        start,
        n,
        muted,
        dead,
        simd,
        prefilled,
        at,
    } = call;
    if dead || muted {
        for out in t.outs.iter_mut() {
            out[..n].iter_mut().for_each(|x| *x = S::ZERO);
        }
        return Outcome::Ok;
    }
    for (k, (buf, srcs)) in t.ins.iter_mut().zip(inputs).enumerate() {
        if !srcs.is_empty() && (k >= 64 || prefilled >> k & 1 == 0) {
            gather(&mut buf[..n], srcs, before, &mut t.rings, &mut t.tmp, at);
        }
    }
    for (buf, srcs) in t.sigs.iter_mut().zip(param_inputs) {
        if !srcs.is_empty() {
            gather(&mut buf[..n], srcs, before, &mut t.rings, &mut t.tmp, at);
        }
    }
    let mut io = Io {
        frames: n,
        start,
        inputs: &t.ins,
        outputs: &mut t.outs,
        params: Params::new(params, &t.sigs, start, specs),
    };
    // A panic in one node must not take the audio thread (and the session)
    // with it. Unwinding itself is cheap when nothing panics.
    let node = &mut t.node;
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        node.process(&mut io);
    })) {
        // Kept by the engine: freeing it here would free on the audio thread.
        for out in t.outs.iter_mut() {
            out[..n].iter_mut().for_each(|x| *x = S::ZERO);
        }
        return Outcome::Panicked(payload);
    }
    let mut bad = false;
    for out in t.outs.iter_mut() {
        // One branch-free pass finds out; only a bad block is scrubbed.
        if !all_finite_at(simd, &out[..n]) {
            for x in out[..n].iter_mut() {
                if !fits_f32(*x) {
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
