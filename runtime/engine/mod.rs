//! The block processor: runs a compiled [`Plan`] one block at a time, the
//! same way offline and in real time.
//!
//! `process_block` is real-time safe: every buffer is allocated in
//! [`Engine::new`]; the block loop only copies, converts and calls the nodes.

mod bus;

pub use bus::{Bus, BusRef};

use crate::dsp::fpmode::FpGuard;
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
    /// Latency-compensation delay lines of incoming edges.
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

    pub(crate) fn reset(&mut self) {
        self.buf.iter_mut().for_each(|x| *x = S::ZERO);
        self.pos = 0;
    }

    pub(crate) fn save(&self) -> (Vec<f64>, usize) {
        (self.buf.iter().map(|x| x.to_f64()).collect(), self.pos)
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
    /// Muted after producing NaN/Inf under live.
    muted: bool,
    flush: bool,
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
}

/// A snapshot of the whole engine: the sample clock, every node's state and
/// every param's current value (with any ramp in progress).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineState {
    pub clock: u64,
    pub next_event: usize,
    pub nodes: Vec<NodeSnapshot>,
    /// Main-bus alignment delay lines.
    pub main: Vec<(Vec<f64>, usize)>,
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
    /// Latency-compensation delay lines of incoming edges (contents, position).
    pub edges: Vec<(Vec<f64>, usize)>,
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
        let mut slots = Vec::with_capacity(plan.nodes.len());
        for pn in plan.nodes.iter_mut() {
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
                                ring: if src.delay > 0 {
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
                muted: false,
                flush: pn.profile.flush_to_zero,
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

    /// Renders `frames` (1 ≤ frames ≤ block size) into the main bus.
    /// Real-time safe: no allocation, lock or I/O.
    pub fn process_block(&mut self, frames: usize) {
        let frames = frames.min(self.block_size);
        self.frames = frames;
        if frames == 0 {
            return;
        }
        let guard = FpGuard::new(self.session_flush);
        let end = self.clock + frames as u64;
        let mut pos = self.clock;
        let mut offset = 0;
        while pos < end {
            self.apply_events(pos);
            let next = self
                .events
                .get(self.next_event)
                .map_or(end, |e| e.sample.clamp(pos + 1, end));
            let n = (next - pos) as usize;
            for r in 0..self.runs.len() {
                let run = self.runs[r];
                guard.set_flush(run.flush);
                for i in run.start..run.end {
                    self.process_slot(i, pos, n);
                }
            }
            guard.set_flush(self.session_flush);
            self.gather_main(offset, n);
            pos = next;
            offset += n;
        }
        if self.limit_main {
            self.bus.clamp(frames, 1.0);
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

    fn collapse_ramps(&mut self) {
        let now = self.clock;
        for s in &mut self.slots {
            for p in &mut s.params {
                if let Some(r) = p.ramp {
                    if now >= r.start + r.len {
                        p.ramp = None;
                    }
                }
            }
        }
    }

    fn process_slot(&mut self, i: usize, start: u64, n: usize) {
        let (before, rest) = self.slots.split_at_mut(i);
        let slot = &mut rest[0];
        let bad = match &mut slot.core {
            Core::F32(t) => run_typed(
                t,
                before,
                &slot.inputs,
                &slot.param_inputs,
                &slot.params,
                start,
                n,
                slot.muted,
            ),
            Core::F64(t) => run_typed(
                t,
                before,
                &slot.inputs,
                &slot.param_inputs,
                &slot.params,
                start,
                n,
                slot.muted,
            ),
        };
        if bad {
            self.report_nan(i, start);
        }
    }

    #[cold]
    #[inline(never)]
    fn report_nan(&mut self, i: usize, sample: u64) {
        self.stats.nan_events += 1;
        if self.stats.first_nan.is_none() {
            self.stats.first_nan = Some((i, sample));
        }
        if self.session == Profile::Live {
            self.slots[i].muted = true;
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
            match &mut s.core {
                Core::F32(t) => {
                    t.node.reset();
                    t.rings.iter_mut().for_each(Ring::reset);
                }
                Core::F64(t) => {
                    t.node.reset();
                    t.rings.iter_mut().for_each(Ring::reset);
                }
            }
            s.muted = false;
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
    }

    /// Captures the clock, node states and param states.
    pub fn snapshot(&self) -> EngineState {
        let mut st = EngineState {
            clock: self.clock,
            next_event: self.next_event,
            nodes: Vec::with_capacity(self.slots.len()),
            main: self.bus.save(),
        };
        for s in &self.slots {
            let mut ns = NodeState::default();
            match &s.core {
                Core::F32(t) => t.node.snapshot(&mut ns),
                Core::F64(t) => t.node.snapshot(&mut ns),
            }
            let discrete = s
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| matches!(v, Value::Enum(_) | Value::Integer(_) | Value::Bool(_)))
                .map(|(i, v)| (i, v.clone()))
                .collect();
            st.nodes.push(NodeSnapshot {
                id: s.id.clone(),
                op: s.op,
                state: ns,
                params: s.params.clone(),
                discrete,
                edges: match &s.core {
                    Core::F32(t) => t.rings.iter().map(Ring::save).collect(),
                    Core::F64(t) => t.rings.iter().map(Ring::save).collect(),
                },
            });
        }
        st
    }

    /// Restores state into nodes whose id and operator match; others keep
    /// their state. The precision of each array is converted as needed.
    pub fn restore(&mut self, st: &EngineState) -> Result<(), (String, StateError)> {
        self.clock = st.clock;
        self.next_event = st.next_event.min(self.events.len());
        self.bus.load(&st.main);
        for s in &mut self.slots {
            let Some(snap) = st.nodes.iter().find(|n| n.id == s.id && n.op == s.op) else {
                continue;
            };
            for (i, v) in &snap.discrete {
                if s.values.get(*i).is_some_and(|cur| cur != v) {
                    match &mut s.core {
                        Core::F32(t) => t.node.set_discrete(*i, v),
                        Core::F64(t) => t.node.set_discrete(*i, v),
                    }
                    s.values[*i] = v.clone();
                }
            }
            let r = match &mut s.core {
                Core::F32(t) => t.node.restore(&snap.state),
                Core::F64(t) => t.node.restore(&snap.state),
            };
            r.map_err(|e| (s.id.clone(), e))?;
            if snap.params.len() == s.params.len() {
                s.params.copy_from_slice(&snap.params);
            }
            match &mut s.core {
                Core::F32(t) => t
                    .rings
                    .iter_mut()
                    .zip(&snap.edges)
                    .for_each(|(r, e)| r.load(e)),
                Core::F64(t) => t
                    .rings
                    .iter_mut()
                    .zip(&snap.edges)
                    .for_each(|(r, e)| r.load(e)),
            }
        }
        Ok(())
    }
}

impl Slot {
    fn precision(&self) -> Precision {
        match self.core {
            Core::F32(_) => Precision::F32,
            Core::F64(_) => Precision::F64,
        }
    }
}

/// Copies (first source) or adds (the rest) each source into `dst`,
/// converting precision and applying alignment delays. The order is the
/// plan's fixed summing order.
#[inline]
fn gather<S: Sample>(
    dst: &mut [S],
    edges: &[EdgeIn],
    before: &[Slot],
    rings: &mut [Ring<S>],
    tmp: &mut [S],
) {
    let n = dst.len();
    for (k, e) in edges.iter().enumerate() {
        let src = e.src;
        if e.ring == NO_RING {
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

/// Precision conversion: exact widening, round-to-nearest narrowing.
#[inline(always)]
pub(crate) fn convert<S: Sample, T: Sample>(x: T) -> S {
    match T::PRECISION {
        Precision::F32 => S::from_f32(x.to_f32()),
        Precision::F64 => S::from_f64(x.to_f64()),
    }
}

/// Runs one node; returns true if it produced NaN/Inf (then replaced by silence).
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
) -> bool {
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
    t.node.process(&mut io);
    let mut bad = false;
    for out in t.outs.iter_mut() {
        for x in out[..n].iter_mut() {
            if !x.is_finite() {
                *x = S::ZERO;
                bad = true;
            }
        }
        if muted {
            out[..n].iter_mut().for_each(|x| *x = S::ZERO);
        }
    }
    bad
}
