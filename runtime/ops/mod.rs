//! The operator registry and the processor contract.
//!
//! Each operator family lives in its own file and declares, in one
//! [`OpSpec`], its ports, params (unit, range, default), determinism tier
//! and how to build it at a given precision and math policy. Nodes are
//! generic over the sample type and the math policy, chosen once when the
//! graph is compiled.
//!
//! Port numbering seen by a processor: audio inputs `0..inputs.len()` in
//! [`Io::inputs`]; outputs in [`Io::outputs`]; every param by its index in
//! `OpSpec::params` through [`Io::params`] (numbers may be modulated).

#[cfg(test)]
pub(crate) mod conformance;
pub mod describe;
#[cfg(test)]
mod golden;
pub mod harness;
mod value;

pub mod convolution;
mod delay;
mod dynamics;
mod filters;
mod noise;
mod nonlinear;
mod oscillators;
mod sampler;
mod spectral;
mod utility;

pub use crate::dsp::state::{NodeState, StateError, StateValue};
pub use value::{default_value, number_value, resolve_param, AudioData, ParamError, Value};

use crate::dsp::{FastMath, Math, MathKind, Precision, Sample, StdMath, StrictMath};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;

/// What a param is and what it accepts.
#[derive(Clone, Copy, Debug)]
pub enum ParamKind {
    /// A continuous number in a canonical unit. Always also an input port of
    /// the same name unless `modulatable` is false (sizes such as `max_time`).
    Number {
        dim: Dimension,
        default: f64,
        min: f64,
        max: f64,
        modulatable: bool,
    },
    Integer {
        default: i64,
        min: i64,
        max: i64,
    },
    Enum {
        choices: &'static [&'static str],
        default: &'static str,
    },
    Bool {
        default: bool,
    },
    /// An `@resource:NAME` audio file; required.
    Resource,
    /// An array of amplitudes (`mix.gains`); default: all 1.0.
    Gains,
}

#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    pub doc: &'static str,
}

impl ParamSpec {
    /// Whether this param is also an input port.
    pub fn is_port(&self) -> bool {
        matches!(
            self.kind,
            ParamKind::Number {
                modulatable: true,
                ..
            }
        )
    }
}

/// Builds a node at a precision and math policy.
pub type BuildFn = fn(&BuildCtx<'_>, Precision, MathKind) -> Result<AnyNode, String>;

/// An operator's declaration: the one place its interface is written down.
pub struct OpSpec {
    pub name: &'static str,
    pub doc: &'static str,
    /// Audio input ports (params that are ports are not listed here).
    pub inputs: &'static [&'static str],
    pub outputs: &'static [&'static str],
    pub params: &'static [ParamSpec],
    /// The strongest profile the operator can honour.
    pub tier: Profile,
    /// Inputs are `in0 … inN` (N from the edges and params), not `inputs`.
    pub variadic_inputs: bool,
    /// Whether the node draws from the seeded noise streams.
    pub uses_rng: bool,
    pub build: BuildFn,
}

impl OpSpec {
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }
}

/// Everything a node may look at while it is built (may allocate).
pub struct BuildCtx<'a> {
    pub node_id: &'a str,
    pub sample_rate: f64,
    /// The largest block `process` will ever be asked for.
    pub max_block: usize,
    /// Static param values, in `OpSpec::params` order.
    pub values: &'a [Value],
    /// Audio input count (for variadic operators).
    pub n_inputs: usize,
    /// `hash64(global seed, node id, local seed)` for nodes that use noise.
    pub noise_hash: u64,
    pub profile: &'a NodeProfile,
}

impl BuildCtx<'_> {
    pub fn number(&self, i: usize) -> f64 {
        match &self.values[i] {
            Value::Number(v) => *v,
            other => panic!("param {i} is not a number: {other:?}"),
        }
    }
}

/// A node's current static param value plus an optional linear ramp towards it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamState {
    /// The target value (the value once any ramp has finished).
    pub value: f64,
    pub ramp: Option<Ramp>,
}

/// A linear ramp on the absolute sample clock, `from` at `start` to the
/// param's `value` at `start + len`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ramp {
    pub from: f64,
    pub start: u64,
    pub len: u64,
}

impl ParamState {
    pub fn constant(value: f64) -> ParamState {
        ParamState { value, ramp: None }
    }

    /// The static value at absolute sample `n`: a pure function of `n`, so
    /// block size never changes it.
    #[inline]
    pub fn at(&self, n: u64) -> f64 {
        match self.ramp {
            Some(r) if n < r.start + r.len => {
                let k = n.saturating_sub(r.start) as f64 / r.len as f64;
                r.from + (self.value - r.from) * k
            }
            _ => self.value,
        }
    }
}

/// Read access to a node's params for one block.
pub struct Params<'a, S> {
    pub(crate) states: &'a [ParamState],
    /// Modulation signals by param index; empty when unconnected.
    pub(crate) signals: &'a [Vec<S>],
    pub(crate) start: u64,
}

/// One param over the current block: a static value (maybe ramping) plus an
/// optional modulation signal, in the param's canonical unit.
#[derive(Clone, Copy)]
pub struct Param<'a, S> {
    state: &'a ParamState,
    signal: Option<&'a [S]>,
    start: u64,
}

impl<'a, S: Sample> Params<'a, S> {
    pub fn new(states: &'a [ParamState], signals: &'a [Vec<S>], start: u64) -> Params<'a, S> {
        Params {
            states,
            signals,
            start,
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> Param<'a, S> {
        let signal = self
            .signals
            .get(i)
            .filter(|s| !s.is_empty())
            .map(|s| s.as_slice());
        Param {
            state: &self.states[i],
            signal,
            start: self.start,
        }
    }
}

impl<S: Sample> Param<'_, S> {
    /// True when the value is the same for every frame of this block.
    #[inline]
    pub fn is_const(&self) -> bool {
        self.signal.is_none()
            && self
                .state
                .ramp
                .is_none_or(|r| self.start >= r.start + r.len)
    }

    /// The value at the block start (the value for the whole block when
    /// [`is_const`](Self::is_const)).
    #[inline]
    pub fn value(&self) -> f64 {
        self.at(0)
    }

    /// The value at frame `i` of the block.
    #[inline]
    pub fn at(&self, i: usize) -> f64 {
        let base = self.state.at(self.start + i as u64);
        match self.signal {
            Some(s) => base + s[i].to_f64(),
            None => base,
        }
    }
}

/// The buffers of one `process` call.
pub struct Io<'a, S> {
    /// Frames to render, ≥ 1 and ≤ the `max_block` given at build.
    pub frames: usize,
    /// Absolute sample index of frame 0.
    pub start: u64,
    /// Audio inputs (silence when unconnected), each at least `frames` long.
    pub inputs: &'a [Vec<S>],
    /// Outputs, each at least `frames` long; may hold stale data on entry,
    /// so every frame must be written.
    pub outputs: &'a mut [Vec<S>],
    pub params: Params<'a, S>,
}

/// A running node at one precision.
///
/// Lifecycle: built (may allocate) → `process` / `reset` on the audio thread
/// (never allocate, lock, block or do I/O; bounded time) → dropped off the
/// audio thread.
pub trait Processor<S: Sample>: Send {
    /// Renders `io.frames` frames. Real-time safe.
    fn process(&mut self, io: &mut Io<'_, S>);
    /// Returns to the state right after build. Real-time safe.
    fn reset(&mut self);
    /// Writes every piece of state that `process` carries between calls.
    fn snapshot(&self, st: &mut NodeState);
    /// Reads state written by `snapshot` (at either precision). Allocation-free.
    fn restore(&mut self, st: &NodeState) -> Result<(), StateError>;
    /// A discrete param (enum, integer, bool) changed by an event.
    fn set_discrete(&mut self, _param: usize, _value: &Value) {}
    /// Samples of delay this node adds between input and output.
    fn latency(&self) -> usize {
        0
    }
    /// Iterative-solver steps taken since build or `reset` (0 for nodes
    /// without a solver); read by the engine's statistics.
    fn iterations(&self) -> u64 {
        0
    }
}

/// A built node at its precision.
pub enum AnyNode {
    F32(Box<dyn Processor<f32>>),
    F64(Box<dyn Processor<f64>>),
}

impl AnyNode {
    pub fn precision(&self) -> Precision {
        match self {
            AnyNode::F32(_) => Precision::F32,
            AnyNode::F64(_) => Precision::F64,
        }
    }
    pub fn reset(&mut self) {
        match self {
            AnyNode::F32(n) => n.reset(),
            AnyNode::F64(n) => n.reset(),
        }
    }
    pub fn snapshot(&self, st: &mut NodeState) {
        match self {
            AnyNode::F32(n) => n.snapshot(st),
            AnyNode::F64(n) => n.snapshot(st),
        }
    }
    pub fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        match self {
            AnyNode::F32(n) => n.restore(st),
            AnyNode::F64(n) => n.restore(st),
        }
    }
    pub fn set_discrete(&mut self, param: usize, value: &Value) {
        match self {
            AnyNode::F32(n) => n.set_discrete(param, value),
            AnyNode::F64(n) => n.set_discrete(param, value),
        }
    }
    pub fn latency(&self) -> usize {
        match self {
            AnyNode::F32(n) => n.latency(),
            AnyNode::F64(n) => n.latency(),
        }
    }
    pub fn iterations(&self) -> u64 {
        match self {
            AnyNode::F32(n) => n.iterations(),
            AnyNode::F64(n) => n.iterations(),
        }
    }
}

/// An operator generic over sample type and math policy.
pub trait Operator {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String>;
}

/// Monomorphises `O` for the requested precision and math policy.
pub fn build_any<O: Operator>(
    cx: &BuildCtx<'_>,
    precision: Precision,
    math: MathKind,
) -> Result<AnyNode, String> {
    Ok(match (precision, math) {
        (Precision::F32, MathKind::Strict) => AnyNode::F32(O::build::<f32, StrictMath>(cx)?),
        (Precision::F32, MathKind::Std) => AnyNode::F32(O::build::<f32, StdMath>(cx)?),
        (Precision::F32, MathKind::Fast) => AnyNode::F32(O::build::<f32, FastMath>(cx)?),
        (Precision::F64, MathKind::Strict) => AnyNode::F64(O::build::<f64, StrictMath>(cx)?),
        (Precision::F64, MathKind::Std) => AnyNode::F64(O::build::<f64, StdMath>(cx)?),
        (Precision::F64, MathKind::Fast) => AnyNode::F64(O::build::<f64, FastMath>(cx)?),
    })
}

/// Every operator, in the order `morphrt ops` lists them.
pub fn registry() -> &'static [&'static OpSpec] {
    static ALL: [&OpSpec; 22] = [
        &oscillators::SINE,
        &oscillators::SAW,
        &oscillators::SQUARE,
        &oscillators::TRIANGLE,
        &noise::NOISE,
        &oscillators::IMPULSE,
        &utility::DC,
        &sampler::SAMPLER,
        &filters::BIQUAD,
        &filters::ONEPOLE,
        &filters::SVF,
        &dynamics::ADSR,
        &utility::GAIN,
        &utility::MIX,
        &utility::MULTIPLY,
        &utility::PAN,
        &utility::CAST,
        &delay::DELAY,
        &convolution::CONVOLUTION,
        &spectral::SPECTRAL_GATE,
        &nonlinear::SATURATOR,
        &nonlinear::DIODE_CLIPPER,
    ];
    &ALL
}

/// Discrete params (enum, integer, bool) that an event may change while the
/// node runs; every other discrete param is fixed when the node is built.
const EVENT_SETTABLE: &[(&str, &str)] = &[
    ("biquad", "mode"),
    ("onepole", "mode"),
    ("svf", "mode"),
    ("sampler", "loop"),
];

/// Whether an event may change param `i` of `spec`: modulatable numbers
/// and the discrete params a node applies live.
pub fn event_settable(spec: &OpSpec, i: usize) -> bool {
    let p = &spec.params[i];
    match p.kind {
        ParamKind::Number { modulatable, .. } => modulatable,
        ParamKind::Resource | ParamKind::Gains => false,
        _ => EVENT_SETTABLE.contains(&(spec.name, p.name)),
    }
}

/// Looks an operator up by name.
pub fn lookup(name: &str) -> Option<&'static OpSpec> {
    registry().iter().copied().find(|s| s.name == name)
}

/// Shorthand for declaring a number param.
pub const fn number(
    name: &'static str,
    dim: Dimension,
    default: f64,
    min: f64,
    max: f64,
    doc: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Number {
            dim,
            default,
            min,
            max,
            modulatable: true,
        },
        doc,
    }
}
