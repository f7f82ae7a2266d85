//! A node as the engine holds and runs it: its processor and buffers at its
//! precision ([`Slot`]), built from the plan; the call that gathers its
//! inputs and runs it; and recovery when it misbehaves — NaN/Inf is
//! silenced and the node reset, or muted for a second when it keeps
//! failing; a panic silences it for good — counted in [`EngineStats`].

use super::feedback::Feed;
use super::mix::{gather, EdgeIn, NO_RING};
use super::{Engine, Ring};
use crate::dsp::vector::all_finite;
use crate::dsp::{Precision, Sample};
use crate::graph::{PlanNode, SourceRef};
use crate::ops::{AnyNode, Io, ParamState, Params, Processor, Value};

/// A node's processor and buffers at its precision.
pub(super) struct Typed<S> {
    pub(super) node: Box<dyn Processor<S>>,
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
}

pub(super) enum Core {
    F32(Typed<f32>),
    F64(Typed<f64>),
}

pub(super) struct Slot {
    pub(super) id: String,
    pub(super) op: &'static str,
    pub(super) core: Core,
    pub(super) params: Vec<ParamState>,
    /// Current values of discrete params (enum, integer, bool), changed by
    /// events; other entries keep their static value and are unused.
    pub(super) values: Vec<Value>,
    /// The scene's values, restored by `reset`.
    pub(super) initial_params: Vec<ParamState>,
    pub(super) initial_values: Vec<Value>,
    pub(super) inputs: Vec<Vec<EdgeIn>>,
    pub(super) param_inputs: Vec<Vec<EdgeIn>>,
    /// Muted until this sample after producing NaN/Inf twice within a
    /// second (0: not muted).
    pub(super) muted_until: u64,
    /// The sample where the node last produced NaN/Inf.
    pub(super) last_failure: Option<u64>,
    /// Panicked while processing: never called again, outputs silent.
    pub(super) dead: bool,
    pub(super) flush: bool,
    /// What must match for state to carry as-is across a handover: op,
    /// resolved profile, precision and incoming wiring (see `handover`).
    pub(super) sig: u64,
    /// Incoming wiring alone: the edge delay lines carry when it matches.
    pub(super) wiring: u64,
    /// Samples over which a live edit of this node's params glides.
    pub(super) edit_ramp: u64,
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
        Slot {
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

    pub(super) fn precision(&self) -> Precision {
        match self.core {
            Core::F32(_) => Precision::F32,
            Core::F64(_) => Precision::F64,
        }
    }
}

impl Engine {
    pub(super) fn process_slot(&mut self, i: usize, start: u64, n: usize) {
        let (before, rest) = self.slots.split_at_mut(i);
        let slot = &mut rest[0];
        if slot.muted_until != 0 && start >= slot.muted_until {
            // The mute is over: try again from a clean state.
            slot.muted_until = 0;
            slot.reset_state();
            self.capture.spoil();
        }
        let call = Call {
            before,
            inputs: &slot.inputs,
            param_inputs: &slot.param_inputs,
            params: &slot.params,
            start,
            n,
            muted: slot.muted_until != 0,
            dead: slot.dead,
        };
        let outcome = match &mut slot.core {
            Core::F32(t) => run_typed(t, &call),
            Core::F64(t) => run_typed(t, &call),
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
            self.capture.spoil();
        }
        s.last_failure = Some(sample);
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

/// What one call of a node reads besides its own buffers.
struct Call<'a> {
    /// The nodes scheduled before it: its (non-feedback) sources.
    before: &'a [Slot],
    inputs: &'a [Vec<EdgeIn>],
    param_inputs: &'a [Vec<EdgeIn>],
    params: &'a [ParamState],
    start: u64,
    n: usize,
    muted: bool,
    dead: bool,
}

/// Runs one node.
fn run_typed<S: Sample>(t: &mut Typed<S>, call: &Call<'_>) -> Outcome {
    let &Call {
        before,
        inputs,
        param_inputs,
        params,
        start,
        n,
        muted,
        dead,
    } = call;
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
