//! The operator registry and the processor contract.
//!
//! Each operator family lives in its own file and declares, in one
//! [`OpSpec`], its ports, params (unit, range, default, whether events may
//! set them), determinism tier, the implementation choices it makes per
//! profile, and how to build it at a given precision and math policy. The
//! compiler, `check`, `ops` and the engine read those decisions there, never
//! from a table of operator names kept elsewhere. Nodes are generic over the
//! sample type and the math policy, chosen once when the graph is compiled.
//!
//! Port numbering seen by a processor: audio inputs `0..inputs.len()` in
//! [`Io::inputs`]; outputs in [`Io::outputs`]; every param by its index in
//! `OpSpec::params` through `Io::params` (numbers may be modulated).

#[cfg(test)]
pub(crate) mod conformance;
pub mod describe;
#[cfg(test)]
mod golden;
#[cfg(test)]
pub(crate) mod harness;
mod value;

/// The no-op state methods of a node without state (the utilities,
/// `input`); defined before the operator modules so each can use it.
macro_rules! stateless {
    () => {
        /// Stateless: nothing to reset.
        fn reset(&mut self) {}

        /// Stateless: writes nothing.
        fn snapshot(&self, _st: &mut NodeState) {}

        /// Stateless: accepts any state.
        fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
            Ok(())
        }
    };
}

mod allpass;
mod comb;
pub mod convolution;
mod crush;
mod delay;
mod dust;
mod dynamics;
mod filters;
mod fracline;
mod grains;
mod input;
mod modulation;
mod noise;
mod noise_color;
mod nonlinear;
mod oscillators;
mod pitch_shift;
mod pluck;
mod reverb;
mod sampler;
pub(crate) mod sequencer;
mod shaper;
mod spectral;
mod utility;

pub use crate::dsp::state::{NodeState, PartClear, Progress, StateError, StateValue};
pub use input::{input_channel, is_session_input, MAX_INPUT_CHANNEL};
pub use value::{
    default_value, no_audio, number_value, resolve_param, AudioData, ParamError, Value,
};

use crate::dsp::{FastMath, Math, MathKind, Precision, Sample, StdMath, StrictMath};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;

/// What a param is and what it accepts.
#[derive(Clone, Copy, Debug)]
pub enum ParamKind {
    /// A continuous number in a canonical unit. Always also an input port of
    /// the same name unless `modulatable` is false (sizes such as `max_time`).
    Number {
        /// The physical dimension, which decides the units a scene may write.
        dim: Dimension,
        /// The value when the scene gives none, in the canonical unit.
        default: f64,
        /// The smallest value accepted, in the canonical unit.
        min: f64,
        /// The largest value accepted, in the canonical unit.
        max: f64,
        /// Whether it is also an audio-rate input port.
        modulatable: bool,
    },
    /// An integer in `min…max`.
    Integer {
        /// The value when the scene gives none.
        default: i64,
        /// The smallest value accepted.
        min: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// One of a fixed list of names.
    Enum {
        /// The names accepted, in index order.
        choices: &'static [&'static str],
        /// The name when the scene gives none.
        default: &'static str,
    },
    /// True or false.
    Bool {
        /// The value when the scene gives none.
        default: bool,
    },
    /// An `@resource:NAME` audio file; required.
    Resource,
    /// An `@resource:NAME` audio file the node can do without; absent, it
    /// is an empty [`AudioData`] (no channels, [`no_audio`]).
    OptionalResource,
    /// An array of amplitudes (`mix.gains`); default: all 1.0.
    Gains,
    /// An array of step values, numbers or `null` rests (`sequencer.steps`),
    /// at most `max`; resolved to [`Value::Gains`] with NaN for a rest.
    Steps {
        /// The most steps accepted.
        max: usize,
    },
    /// A step length (`sequencer.rate`): a note value (`"1/16"`), beats or
    /// bars, or a time; resolved to exact seconds, [`Value::Span`]. The
    /// default is `default_ms`, or a sixteenth note in a scene with a tempo.
    StepLength {
        /// The step length in milliseconds when the scene gives none and has no tempo.
        default_ms: u32,
    },
}

/// One param as an operator declares it.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// The name scenes, events and ports use.
    pub name: &'static str,
    /// What it accepts.
    pub kind: ParamKind,
    /// One line for `morphrt ops`.
    pub(crate) doc: &'static str,
    /// Whether an event may change the param while the node runs. A number
    /// is settable exactly when it is modulatable (an event ramps the same
    /// per-sample value modulation adds to; a size such as `max_time` is read
    /// once at build). A discrete param is settable when the node applies it
    /// live in [`NodeProcessor::set_discrete`]. A resource or a gains array never
    /// is. The compiler rejects events on every other param.
    pub settable_by_events: bool,
}

impl ParamSpec {
    /// Whether this param is also an input port.
    pub(crate) fn is_port(&self) -> bool {
        matches!(
            self.kind,
            ParamKind::Number {
                modulatable: true,
                ..
            }
        )
    }
}

/// Worst-case solver steps per sample of a node with these settings.
pub(crate) type SolverStepsFn = fn(&NodeProfile, &[Value]) -> u64;

/// Builds a node at a precision and math policy.
pub(crate) type BuildFn = fn(&BuildCtx<'_>, Precision, MathKind) -> Result<AnyNode, String>;

/// The implementation choices a node makes from its resolved profile and
/// static param values, beyond precision and math policy, as (what, choice)
/// pairs such as `("conv", "uniform")`. An operator's build reaches the same
/// choices through the same functions, so what `check` reports is what runs.
pub(crate) type ChoicesFn = fn(&NodeProfile, &[Value]) -> Vec<(&'static str, String)>;

/// A setting that will not do what it says, found by an operator's
/// `LintFn`: the param it is about, what happens instead, and what to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Lint {
    pub(crate) param: &'static str,
    /// What is wrong, in one sentence.
    pub message: String,
    pub(crate) help: Option<String>,
    /// What the node plays instead, when that is one value of `param`.
    pub(crate) held: Option<Held>,
}

/// The value a node plays for a param it holds elsewhere than asked (a
/// delay past its `max_time`, a cutoff above what the filter designs),
/// computed by the same function the node's processing calls, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// In the param's canonical unit.
    pub plays: f64,
    /// Why, in a few words: `max_time is 0.5 s`.
    pub why: String,
}

/// What a node of `op` with static values `values` plays when its number
/// param `param` is set to `asked` at `sample_rate`, when that differs
/// from `asked` (see [`Held`]): read from the operator's own lints, so a
/// reply to a live change and the compiler's warning say the same.
pub fn played(
    op: &OpSpec,
    values: &[Value],
    param: usize,
    asked: f64,
    sample_rate: f64,
) -> Option<Held> {
    let name = op.params.get(param)?.name;
    let mut values = values.to_vec();
    *values.get_mut(param)? = Value::Number(asked);
    (op.lints)(&values, sample_rate)
        .into_iter()
        .filter(|l| l.param == name)
        .find_map(|l| l.held)
}

/// The [`Lint`]s of a node with these static param values at this sample rate.
pub(crate) type LintFn = fn(&[Value], f64) -> Vec<Lint>;

/// [`LintFn`] of the operators that accept every in-range setting as written.
pub(crate) fn no_lints(_: &[Value], _: f64) -> Vec<Lint> {
    Vec::new()
}

/// What `op`'s lints say of its param `pi` moved to `value` while the node
/// plays (by an event, a sequencer step through its port, a control), the
/// rest of the node keeping its static `values`: the lint about that param
/// (an oscillator's `freq` above Nyquist plays its alias), unless the
/// static value draws one already (warned where the node is declared).
/// Events, sequencer steps and live controls all ask this one function, so
/// a param is a frequency to warn about exactly where its operator's lints
/// say so.
pub fn lint_of_setting(
    op: &OpSpec,
    values: &[Value],
    pi: usize,
    value: f64,
    sample_rate: f64,
) -> Option<Lint> {
    let name = op.params.get(pi)?.name;
    let about = |values: &[Value]| {
        (op.lints)(values, sample_rate)
            .into_iter()
            .find(|l| l.param == name)
    };
    if about(values).is_some() {
        return None;
    }
    let mut moved = values.to_vec();
    *moved.get_mut(pi)? = Value::Number(value);
    about(&moved)
}

/// A frequency param above what the operator designs with: `values[index]`
/// (its magnitude: an oscillator's may be negative) against
/// `ratio · sample_rate` (Nyquist is `0.5 · sample_rate`); `instead` says
/// what the operator does with it, and `plays` is the function its
/// processing calls for the frequency it plays (`plays(hz, sample_rate)`).
pub(crate) fn frequency_lint(
    values: &[Value],
    index: usize,
    name: &'static str,
    sample_rate: f64,
    ratio: f64,
    instead: &str,
    plays: fn(f64, f64) -> f64,
) -> Option<Lint> {
    let hz = values.get(index)?.as_number()?;
    let limit = ratio * sample_rate;
    if hz.is_nan() || hz.abs() <= limit {
        // Nothing to say, and no message formatted (a scene's every
        // oscillator and filter is checked as it loads).
        return None;
    }
    let nyquist = 0.5 * sample_rate;
    let above = if hz.abs() > nyquist {
        format!("above Nyquist ({nyquist} Hz at {sample_rate} Hz)")
    } else {
        format!("above this operator's design limit of {ratio} × the sample rate ({limit} Hz; Nyquist is {nyquist} Hz)")
    };
    Some(Lint {
        param: name,
        message: format!("`{name}` {hz} Hz is {above}: {instead} {limit} Hz"),
        help: Some(format!(
            "write a {name} of at most {limit} Hz, or raise the scene's sample_rate"
        )),
        held: Some(Held {
            plays: plays(hz, sample_rate),
            why: if hz.abs() > nyquist {
                format!("above Nyquist, {nyquist} Hz at {sample_rate} Hz")
            } else {
                format!("above the design limit of {ratio} × the sample rate, {limit} Hz")
            },
        }),
    })
}

/// A static bound on a node's output under its profile: the output's
/// magnitude never exceeds `peak` while each of `params` keeps its static
/// value (no edge into it, no event on it). Only the oscillators declare
/// one (`|amp|`, see `oscillators::output_bound`); `None` for the rest.
pub(crate) fn output_bound(
    op: &OpSpec,
    profile: &NodeProfile,
    values: &[Value],
) -> Option<OutputBound> {
    oscillators::output_bound(op, profile, values)
}

/// What [`output_bound`] finds: the peak, whether it is exact (the output
/// rounded to the node's precision never passes it: `false` when it
/// allows for rounding or an approximation), and the params it rests on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OutputBound {
    pub(crate) peak: f64,
    pub(crate) exact: bool,
    pub(crate) params: &'static [&'static str],
}

/// A param that switches the node on only above a threshold (`adsr`'s
/// `gate`, on while `> 0.5`): the param and the threshold; `None` for
/// operators with no such param.
pub(crate) fn gate_threshold(op: &OpSpec) -> Option<(&'static str, f64)> {
    dynamics::gate_threshold(op)
}

/// Nominal cost per base-rate sample, in nanoseconds, of a node under its
/// profile and params. The figures come from `morphrt bench` of a release
/// build (per-node ns/sample) on the machine named in
/// `benches/costs.md`; they are for the warning that a render will be slower
/// than real time, not a measurement.
pub(crate) type CostFn = fn(&NodeProfile, &[Value]) -> f64;

/// A cost that depends only on the profile: `ns` is (strict, repro, live),
/// nanoseconds per sample as `morphrt bench` measured them (`benches/costs.md`).
pub(crate) fn by_profile(p: &NodeProfile, ns: [f64; 3]) -> f64 {
    match p.profile {
        Profile::Strict => ns[0],
        Profile::Repro => ns[1],
        Profile::Live => ns[2],
    }
}

/// [`ChoicesFn`] of the operators whose only choices are precision and math.
pub(crate) fn no_choices(_: &NodeProfile, _: &[Value]) -> Vec<(&'static str, String)> {
    Vec::new()
}

/// The FFT a node runs with, as `provider/norm` (e.g. `rustfft/ortho`): the
/// same [`NodeProfile`] methods an FFT-using operator builds its plan from.
pub(crate) fn fft_choice(p: &NodeProfile) -> String {
    format!("{}/{}", p.fft_provider().name(), p.fft_norm().name())
}

/// An operator's declaration: the one place its interface is written down.
pub struct OpSpec {
    /// The name scenes use in `"op"`.
    pub name: &'static str,
    /// One paragraph for `morphrt ops`.
    pub(crate) doc: &'static str,
    /// Audio input ports (params that are ports are not listed here).
    pub inputs: &'static [&'static str],
    /// Output ports; a bare source endpoint means the first, `out`.
    pub outputs: &'static [&'static str],
    /// Params in the order processors index them.
    pub params: &'static [ParamSpec],
    /// The strongest profile the operator can honour.
    pub(crate) tier: Profile,
    /// Inputs are `in0 … inN` (N from the edges and params), not `inputs`.
    pub variadic_inputs: bool,
    /// Whether the node draws from the seeded noise streams.
    pub(crate) uses_rng: bool,
    /// The param (an enum of precision names) that sets the node's
    /// precision whatever its profile says: `cast`'s `to`. Such a node is
    /// an explicit precision change, so the implicit-cast rules do not apply
    /// to the edges into it.
    pub(crate) precision_param: Option<&'static str>,
    /// Worst-case iterative-solver steps per base-rate sample (iterations ×
    /// oversampling), for operators with a solver: `check` and `run` compare
    /// it with the block's deadline.
    pub(crate) solver_steps: Option<SolverStepsFn>,
    /// What this node runs with under its profile and params (see
    /// [`ChoicesFn`]); `check` prints it.
    pub(crate) choices: ChoicesFn,
    /// Settings the operator accepts but that will not do what they say
    /// (a cutoff above Nyquist, a delay longer than its buffer): the
    /// compiler turns each into a located warning.
    pub(crate) lints: LintFn,
    /// Estimated cost per base-rate sample, in nanoseconds, under the
    /// node's profile and params (see [`CostFn`]); `check` prints it.
    pub(crate) cost: CostFn,
    /// What the operator runs under strict, repro and live, in words, for
    /// `morphrt ops`; `None` when only precision and math policy differ
    /// and its signal path calls the math policy's sin, cos, tanh or exp
    /// (fast approximations under live);
    /// [`describe::NO_FAST_MATH`] when it calls none of them.
    pub(crate) algorithms: Option<[&'static str; 3]>,
    /// Builds a node (may allocate).
    pub(crate) build: BuildFn,
}

impl OpSpec {
    /// The index of a param by name, for scene params and event targets.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// The index of param `name`, for the constants a processor reads its
    /// params by (`const CUTOFF: usize = BIQUAD.index_of("cutoff")`).
    /// Evaluated at compile time, so a name the spec does not declare fails
    /// the build, and an index cannot drift from the declaration.
    pub(crate) const fn index_of(&self, name: &str) -> usize {
        let mut i = 0;
        while i < self.params.len() {
            if const_str_eq(self.params[i].name, name) {
                return i;
            }
            i += 1;
        }
        panic!("the operator declares no param of that name");
    }

    /// The precision a node of this operator runs at when its own params
    /// decide it ([`precision_param`](Self::precision_param)).
    pub(crate) fn own_precision(&self, values: &[Value]) -> Option<Precision> {
        let i = self.param_index(self.precision_param?)?;
        match (self.params[i].kind, values.get(i)?) {
            (ParamKind::Enum { choices, .. }, Value::Enum(k)) => Precision::parse(choices.get(*k)?),
            _ => None,
        }
    }
}

/// `a == b` for strings, usable in `const` evaluation.
const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Everything a node may look at while it is built (may allocate).
pub(crate) struct BuildCtx<'a> {
    pub(crate) sample_rate: f64,
    /// Static param values, in `OpSpec::params` order.
    pub(crate) values: &'a [Value],
    /// Audio input count (for variadic operators).
    pub(crate) n_inputs: usize,
    /// Per audio input (`OpSpec::inputs` order, or `in0 … inN`), whether an
    /// edge feeds it. An unconnected input reads silence; a node that treats
    /// an unconnected input differently (`compressor`'s `sidechain` keys from
    /// `in` instead) decides at build, and an edit that wires it rebuilds the
    /// node. Shorter than the inputs when a caller knows nothing: read it
    /// with [`input_connected`](Self::input_connected).
    pub(crate) connected: &'a [bool],
    /// `hash64(global seed, node id, local seed)` for nodes that use noise.
    pub(crate) noise_hash: u64,
    pub(crate) profile: &'a NodeProfile,
}

impl BuildCtx<'_> {
    /// Whether audio input `i` has an edge (see [`connected`](Self::connected)).
    pub(crate) fn input_connected(&self, i: usize) -> bool {
        self.connected.get(i).copied().unwrap_or(false)
    }

    pub(crate) fn number(&self, i: usize) -> f64 {
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
    /// The ramp in progress towards `value`, if any.
    pub ramp: Option<Ramp>,
}

/// A linear ramp on the absolute sample clock, `from` at `start` to the
/// param's `value` at `start + len`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ramp {
    /// The value at `start`.
    pub from: f64,
    /// The absolute sample the ramp starts at.
    pub start: u64,
    /// Its length in samples (> 0).
    pub len: u64,
}

impl ParamState {
    pub(crate) fn constant(value: f64) -> ParamState {
        ParamState { value, ramp: None }
    }

    /// The static value at absolute sample `n`: a pure function of `n`, so
    /// block size never changes it.
    #[inline]
    pub(crate) fn at(&self, n: u64) -> f64 {
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
pub(crate) struct Params<'a, S> {
    pub(crate) states: &'a [ParamState],
    /// Modulation signals by param index; empty when unconnected.
    pub(crate) signals: &'a [Vec<S>],
    pub(crate) start: u64,
    /// The params' declarations, by index: their ranges hold modulated values.
    pub(crate) specs: &'a [ParamSpec],
}

/// One param over the current block: a static value (maybe ramping) plus an
/// optional modulation signal, in the param's canonical unit.
///
/// A modulated value is held to the param's declared range, here and so
/// for every operator alike: static value + signal is clamped to
/// `min ..= max` of its [`ParamKind::Number`], and a sum that is NaN (a NaN
/// or an infinity of each sign in the signal) reads as the static value.
/// An operator therefore sees only numbers its declaration allows, whatever
/// drives its ports. A value inside the range is returned unchanged, bit for
/// bit (no `min`/`max`, whose choice between −0 and +0 is the compiler's).
#[derive(Clone, Copy)]
pub(crate) struct Param<'a, S> {
    state: &'a ParamState,
    signal: Option<&'a [S]>,
    start: u64,
    /// The declared range a modulated value is held to.
    lo: f64,
    hi: f64,
}

impl<'a, S: Sample> Params<'a, S> {
    /// `specs` are the params' declarations (the operator's
    /// [`OpSpec::params`]); a param with a signal must have one.
    pub(crate) fn new(
        states: &'a [ParamState],
        signals: &'a [Vec<S>],
        start: u64,
        specs: &'a [ParamSpec],
    ) -> Params<'a, S> {
        Params {
            states,
            signals,
            start,
            specs,
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Param<'a, S> {
        let signal = self
            .signals
            .get(i)
            .filter(|s| !s.is_empty())
            .map(|s| s.as_slice());
        let (lo, hi) = match (signal, self.specs.get(i).map(|p| &p.kind)) {
            (Some(_), Some(ParamKind::Number { min, max, .. })) => (*min, *max),
            _ => (f64::NEG_INFINITY, f64::INFINITY),
        };
        Param {
            state: &self.states[i],
            signal,
            start: self.start,
            lo,
            hi,
        }
    }
}

impl<S: Sample> Param<'_, S> {
    /// True when the value is the same for every frame of this block.
    #[inline]
    pub(crate) fn is_const(&self) -> bool {
        self.signal.is_none()
            && self
                .state
                .ramp
                .is_none_or(|r| self.start >= r.start + r.len)
    }

    /// The value at the block start (the value for the whole block when
    /// [`is_const`](Self::is_const)).
    #[inline]
    pub(crate) fn value(&self) -> f64 {
        self.at(0)
    }

    /// The value at frame `i` of the block.
    #[inline]
    pub(crate) fn at(&self, i: usize) -> f64 {
        let base = self.state.at(self.start + i as u64);
        match self.signal {
            Some(s) => held(base, base + s[i].to_f64(), self.lo, self.hi),
            None => base,
        }
    }
}

/// A modulated value `v` (static value `base` + signal) held to `lo ..= hi`;
/// NaN reads as `base`. Plain comparisons: `v` inside the range comes back
/// as it is, −0 included.
#[inline(always)]
fn held(base: f64, v: f64, lo: f64, hi: f64) -> f64 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else if v.is_nan() {
        base
    } else {
        v
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
    pub(crate) params: Params<'a, S>,
}

/// One node of a lane group for one chunk (see [`NodeProcessor::lanes`]): its
/// processor, its param states (constant over the chunk: no ramp in
/// progress and no modulation signal, so each param's `value` holds for
/// every frame), its gathered inputs and its outputs.
pub struct LaneMember<'a, S> {
    /// The member's processor, to downcast to the kernel's concrete type.
    pub node: &'a mut dyn std::any::Any,
    pub(crate) params: &'a [ParamState],
    pub(crate) inputs: &'a [Vec<S>],
    /// Its output buffers, one per port, written for the chunk's frames.
    pub outputs: &'a mut [Vec<S>],
    /// False on entry. A kernel sets it once the member is finished: its
    /// state advanced over the chunk and its outputs written, as its own
    /// `process` would. Read only when the kernel panics ([`LaneKernel`]).
    pub(crate) done: bool,
}

/// The one input every member of a group feeds, and that nothing else
/// reads from them: their output 0 summed into it in member order (the
/// scene's summing order), `dst = ((out₀ + out₁) + out₂) + …` per sample,
/// written by the kernel instead of by the consumer's own gathering. A
/// fused write saves each member's output buffer a store and a load.
pub struct LaneSum<'a, S> {
    /// The consumer's input, `frames` long.
    pub dst: &'a mut [S],
    /// Nothing is summed into `dst` yet: the next member's output is
    /// copied into it, not added (`0 + x` is not always `x`: −0).
    pub first: bool,
    /// The members' output 0 must be written as well (the engine checks
    /// them for NaN); when false the kernel may leave it unwritten.
    pub(crate) outputs: bool,
}

impl<S: Sample> LaneSum<'_, S> {
    /// Sums one member's output `x` into `dst`, in turn.
    #[inline]
    pub fn add(&mut self, x: &[S]) {
        let n = self.dst.len();
        if self.first {
            self.dst.copy_from_slice(&x[..n]);
            self.first = false;
        } else {
            for (d, v) in self.dst.iter_mut().zip(&x[..n]) {
                *d += *v;
            }
        }
    }
}

/// Runs `frames` frames from absolute sample `start` of every member, all
/// of one concrete processor type (the one whose [`NodeProcessor::lanes`]
/// gave the kernel). Each member's outputs must be exactly the bits its
/// own `process` would write with the same params, whatever the number of
/// members: lanes never change a node's operations or their order. With a
/// `sum`, the members' output 0 also goes into it, in member order
/// ([`LaneSum`]). Returns a mask of the members (bit k: member k) whose
/// outputs are known to be finite, which the engine then does not check
/// for NaN (0: check them all). Real-time safe, like `process`.
///
/// **If it panics**, every member must be either untouched (its state as
/// at the call; a cache derived from the params alone, such as
/// coefficients, may have been updated) or finished and marked
/// `LaneMember::done`. The engine then keeps the finished members' outputs
/// and runs the untouched ones alone, each once, so a member's state never
/// advances twice over one chunk. So a kernel either writes its members'
/// state back in a last pass that cannot panic, after every output and the
/// sum, or finishes its members one at a time ([`serial_lanes`]).
pub type LaneKernel<S> = fn(
    members: &mut [LaneMember<'_, S>],
    frames: usize,
    start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64;

/// What a fused group's kernel keeps of its members between chunks
/// ([`NodeProcessor::steady_lanes`]), so that a chunk in which nothing about
/// any member changed — no event, control or edit reached it, every member
/// is healthy and ran in the kernel the chunk before — runs with each
/// member's node alone at hand: not its params, buffers or health, which
/// are as they were. The engine decides when a chunk is steady; the kept
/// copy checks that each node is in the state it kept, so a change it was
/// not told of makes the chunk run as usual instead of wrongly.
pub trait SteadyLanes<S: Sample>: Send + Sync {
    /// Member `k` (in the group's order) ran in its kernel in the chunk
    /// that just ended, with `params` (constant over it): keeps what a
    /// steady chunk needs of it. False when the member cannot run steady
    /// (the group then does not).
    fn load(&mut self, k: usize, node: &mut dyn std::any::Any, params: &[ParamState]) -> bool;
    /// Members `k0..k0 + nodes.len()` (their nodes, in the group's order)
    /// for `frames` frames from `start`: summed into `sum` in member order,
    /// each node's state advanced — exactly the bits and state the lane
    /// kernel gives with the kept params. False, with nothing written and
    /// no node advanced, when some node is not in the state kept for it
    /// (something changed it since `load`). Real-time safe.
    fn run(
        &mut self,
        k0: usize,
        nodes: &mut [&mut dyn std::any::Any],
        frames: usize,
        start: u64,
        sum: &mut LaneSum<'_, S>,
    ) -> bool;
    /// Takes back a `run` of `frames` frames of members `k0..` (their
    /// nodes, as lent to it): each node's state and the kept copy as they
    /// were before it, when a later batch of the chunk found a change, or
    /// this batch or a later one panicked, and the chunk runs the usual way
    /// instead. After a `run` that panicked part way, exactly what it had
    /// done is taken back (a member it had not reached is left as it is).
    /// Real-time safe.
    fn undo(&mut self, k0: usize, nodes: &mut [&mut dyn std::any::Any], frames: usize);

    /// Whether a steady chunk may instead be cut into spans of frames
    /// summed apart, on several threads at once: each thread sums a span
    /// ([`span`](Self::span)) and settles a range of members
    /// ([`settle`](Self::settle)); once all are done, either every member
    /// was settled and [`settled`](Self::settled) is called — the bits and
    /// state of `run` — or the settled ones are taken back
    /// ([`unsettle`](Self::unsettle)) and the chunk runs the usual way.
    fn spans(&self) -> bool {
        false
    }

    /// Frames `from..to` of the chunk of every member, summed into `dst`
    /// (`to − from` frames) in member order, the first member's written:
    /// exactly those frames of `run`'s sum. Reads the kept copy alone and
    /// changes nothing. Real-time safe.
    fn span(&self, from: usize, to: usize, dst: &mut [S]) {
        let _ = (from, to, dst);
    }

    /// Members `k0..k0 + nodes.len()` (their nodes): each in turn checked
    /// to be in the state kept for it, as `run` checks, and moved on by
    /// `frames` as `run` leaves it; returns how many were, stopping at the
    /// first changed one. Changes only the nodes lent, so ranges of
    /// members may settle on several threads at once. Real-time safe.
    fn settle(&self, k0: usize, nodes: &mut [&mut dyn std::any::Any], frames: usize) -> usize {
        let _ = (k0, nodes, frames);
        0
    }

    /// Members `k0..` (their nodes, all settled by this chunk's `settle`)
    /// put back as they were at the chunk's start. Real-time safe.
    fn unsettle(&self, k0: usize, nodes: &mut [&mut dyn std::any::Any]) {
        let _ = (k0, nodes);
    }

    /// Every member settled `frames` on: the kept copy moves on with
    /// them. Real-time safe.
    fn settled(&mut self, frames: usize) {
        let _ = frames;
    }
}

/// The most members one [`LaneKernel`] call receives.
pub(crate) const MAX_LANES: usize = 64;

/// A [`LaneKernel`] that runs each member's own `process` in turn, called
/// statically: no lanes across nodes, but one engine dispatch for the
/// whole group instead of one per node. Right for nodes whose kernel is
/// already vectorised over time (oscillators, noise), where a group saves
/// the engine's per-node work.
pub fn serial_lanes<S: Sample, T: NodeProcessor<S> + 'static>(
    members: &mut [LaneMember<'_, S>],
    frames: usize,
    start: u64,
    mut sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    for m in members.iter_mut() {
        let Some(node) = m.node.downcast_mut::<T>() else {
            continue;
        };
        let mut io = Io {
            frames,
            start,
            inputs: m.inputs,
            outputs: m.outputs,
            params: Params::new(m.params, &[], start, &[]),
        };
        node.process(&mut io);
        m.done = true;
        if let Some(s) = sum.as_deref_mut() {
            s.add(&m.outputs[0][..frames]);
        }
    }
    0
}

/// A running node at one precision.
///
/// Lifecycle: built (may allocate) → `process` / `reset` on the audio thread
/// (never allocate, lock, block or do I/O; bounded time) → dropped off the
/// audio thread.
pub trait NodeProcessor<S: Sample>: Send + std::any::Any {
    /// Renders `io.frames` frames. Real-time safe.
    fn process(&mut self, io: &mut Io<'_, S>);
    /// Returns to the state right after build. Real-time safe.
    fn reset(&mut self);
    /// Writes every piece of state that `process` carries between calls.
    fn snapshot(&self, st: &mut NodeState);
    /// Does what [`reset`](Self::reset) does, in parts, for a reset spread
    /// over blocks: `done` is what the previous call returned (0 first);
    /// each call zeroes about `budget` samples of state ([`PartClear`]).
    /// The engine keeps the node silent and does not run it until a call
    /// returns [`Progress::Done`]; the node is then exactly as after
    /// `reset`. Real-time safe. The default resets at once, for nodes with
    /// short state.
    fn reset_part(&mut self, _done: usize, _budget: usize) -> Progress {
        self.reset();
        Progress::Done
    }
    /// Writes the same state as [`snapshot`](Self::snapshot), in parts,
    /// for a save spread over blocks: the first call (`done` = 0) is at
    /// the save sample N; each later call passes what the previous one
    /// returned and comes before the node runs again. Each call copies
    /// at least `budget` more samples of every long history (or the rest of
    /// it), and the node runs at most `budget` frames between two calls;
    /// so a history written one sample per frame at a moving position and
    /// copied oldest first, from where the next frame writes, is never read
    /// after a frame overwrote it: the result is the state at N exactly.
    /// Real-time safe on a state shaped by an earlier `snapshot`. The
    /// default writes everything at once, for nodes with short state.
    fn save_part(&self, st: &mut NodeState, _done: usize, _budget: usize) -> Progress {
        self.snapshot(st);
        Progress::Done
    }
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
    /// The kernel that runs several nodes of this concrete type side by
    /// side (its lane group), handed each as `Any`: `None` for nodes that
    /// always run alone. The engine groups nodes whose concrete types are
    /// equal (same operator, math and precision) and that may run at one
    /// position of the schedule, and calls the kernel for chunks in which
    /// every member is healthy and its params constant; otherwise each
    /// member's own `process` runs. `level`: the instruction set the
    /// engine runs at ([`SimdLevel`](crate::dsp::vector::SimdLevel)); a
    /// kernel uses none wider.
    fn lanes(&self, level: crate::dsp::vector::SimdLevel) -> Option<LaneKernel<S>> {
        let _ = level;
        None
    }
    /// What the lane kernel keeps of `members` nodes of this type between
    /// steady chunks of a fused group ([`SteadyLanes`]), if it has such a
    /// path. Called when the plan is built (it may allocate).
    fn steady_lanes(&self, members: usize) -> Option<Box<dyn SteadyLanes<S>>> {
        let _ = members;
        None
    }
    /// True when every output sample is finite whatever the node's inputs,
    /// given finite params (as every param value is: scene values, events
    /// and controls are range-checked). The engine then skips the NaN
    /// check of the node's outputs when it runs in a lane group. False by
    /// default.
    fn always_finite(&self) -> bool {
        false
    }
}

/// A built node at its precision.
pub enum AnyNode {
    /// A node that runs at f32.
    F32(Box<dyn NodeProcessor<f32>>),
    /// A node that runs at f64.
    F64(Box<dyn NodeProcessor<f64>>),
}

impl AnyNode {
    /// The node's latency in samples.
    pub(crate) fn latency(&self) -> usize {
        match self {
            AnyNode::F32(n) => n.latency(),
            AnyNode::F64(n) => n.latency(),
        }
    }
}

/// Both precisions behind one call, for the tests' node runner.
#[cfg(test)]
impl AnyNode {
    pub(crate) fn reset(&mut self) {
        match self {
            AnyNode::F32(n) => n.reset(),
            AnyNode::F64(n) => n.reset(),
        }
    }
    pub(crate) fn snapshot(&self, st: &mut NodeState) {
        match self {
            AnyNode::F32(n) => n.snapshot(st),
            AnyNode::F64(n) => n.snapshot(st),
        }
    }
    pub(crate) fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        match self {
            AnyNode::F32(n) => n.save_part(st, done, budget),
            AnyNode::F64(n) => n.save_part(st, done, budget),
        }
    }
    pub(crate) fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        match self {
            AnyNode::F32(n) => n.reset_part(done, budget),
            AnyNode::F64(n) => n.reset_part(done, budget),
        }
    }
    pub(crate) fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        match self {
            AnyNode::F32(n) => n.restore(st),
            AnyNode::F64(n) => n.restore(st),
        }
    }
    pub(crate) fn set_discrete(&mut self, param: usize, value: &Value) {
        match self {
            AnyNode::F32(n) => n.set_discrete(param, value),
            AnyNode::F64(n) => n.set_discrete(param, value),
        }
    }
    pub(crate) fn iterations(&self) -> u64 {
        match self {
            AnyNode::F32(n) => n.iterations(),
            AnyNode::F64(n) => n.iterations(),
        }
    }
}

/// An operator generic over sample type and math policy.
pub(crate) trait Operator {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String>;
}

/// Monomorphises `O` for the requested precision and math policy.
pub(crate) fn build_any<O: Operator>(
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
    static ALL: &[&OpSpec] = &[
        &oscillators::SINE,
        &oscillators::SAW,
        &oscillators::SQUARE,
        &oscillators::TRIANGLE,
        &oscillators::WAVETABLE,
        &noise::NOISE,
        &dust::DUST,
        &oscillators::IMPULSE,
        &oscillators::LFO,
        &utility::DC,
        &input::INPUT,
        &sampler::SAMPLER,
        &grains::GRAINS,
        &pluck::PLUCK,
        &filters::BIQUAD,
        &filters::ONEPOLE,
        &filters::SVF,
        &filters::LADDER,
        &dynamics::ADSR,
        &dynamics::ENV,
        &dynamics::FOLLOWER,
        &dynamics::COMPRESSOR,
        &dynamics::LIMITER,
        &dynamics::GATE,
        &utility::GAIN,
        &utility::MIX,
        &utility::MULTIPLY,
        &utility::PAN,
        &utility::BALANCE,
        &utility::WIDTH,
        &utility::LAG,
        &utility::SLEW,
        &utility::ABS,
        &utility::CLIP,
        &utility::MIN,
        &utility::MAX,
        &utility::SCALE,
        &utility::QUANTISE,
        &utility::SAMPLE_HOLD,
        &utility::CROSSFADE,
        &utility::CAST,
        &delay::DELAY,
        &comb::COMB,
        &allpass::ALLPASS,
        &pitch_shift::PITCH_SHIFT,
        &modulation::CHORUS,
        &modulation::FLANGER,
        &modulation::PHASER,
        &convolution::CONVOLUTION,
        &reverb::REVERB,
        &spectral::SPECTRAL_GATE,
        &nonlinear::SATURATOR,
        &nonlinear::DIODE_CLIPPER,
        &shaper::SHAPER,
        &crush::CRUSH,
        &sequencer::SEQUENCER,
    ];
    ALL
}

/// Looks an operator up by name.
pub fn lookup(name: &str) -> Option<&'static OpSpec> {
    registry().iter().copied().find(|s| s.name == name)
}

/// Shorthand for declaring a number param.
pub(crate) const fn number(
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
        settable_by_events: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Overrides;

    fn profile(p: Profile) -> NodeProfile {
        NodeProfile::resolve(p, &Overrides::default(), None)
    }

    /// Static values for a spec's defaults; a resource (which no choice
    /// depends on) is stood in for by a flag.
    fn defaults(spec: &OpSpec) -> Vec<Value> {
        spec.params
            .iter()
            .map(|p| default_value(p).unwrap_or(Value::Bool(false)))
            .collect()
    }

    #[test]
    fn every_operator_declares_a_positive_finite_cost_under_every_profile() {
        for spec in registry() {
            for p in [Profile::Strict, Profile::Repro, Profile::Live] {
                let ns = (spec.cost)(&profile(p), &defaults(spec));
                assert!(ns.is_finite() && ns > 0.0, "{} under {p}: {ns}", spec.name);
            }
        }
    }

    #[test]
    fn convolution_cost_grows_with_the_taps_and_strict_costs_most() {
        let spec = lookup("convolution").expect("registered");
        let with_ir = |frames: usize, channels: usize| {
            let ir = Value::Resource(std::sync::Arc::new(AudioData {
                path: "ir.wav".into(),
                sample_rate: 48_000,
                channels: vec![vec![0.0; frames]; channels],
            }));
            let mut v = defaults(spec);
            v[spec.param_index("ir").expect("ir")] = ir;
            v
        };
        let cost = |p: Profile, v: &[Value]| (spec.cost)(&profile(p), v);
        for p in [Profile::Strict, Profile::Repro, Profile::Live] {
            let short = cost(p, &with_ir(1000, 1));
            let long = cost(p, &with_ir(96_000, 2));
            assert!(long > short, "{p}");
            // A third channel is not rendered (`out` and `out_r` only).
            assert_eq!(cost(p, &with_ir(96_000, 3)), long, "{p}");
        }
        let long = with_ir(96_000, 2);
        assert!(cost(Profile::Strict, &long) > 10.0 * cost(Profile::Repro, &long));
        // Direct convolution: the taps times one figure, plus a constant.
        let (a, b) = (
            cost(Profile::Strict, &with_ir(1000, 1)),
            cost(Profile::Strict, &with_ir(3000, 1)),
        );
        let c = cost(Profile::Strict, &with_ir(5000, 1));
        assert!(((c - b) - (b - a)).abs() < 1e-9, "{a} {b} {c}");
    }

    #[test]
    fn a_frequency_lint_fires_only_above_the_limit_and_names_nyquist() {
        let v = [Value::Number(30_000.0)];
        let l = frequency_lint(&v, 0, "cutoff", 48_000.0, 0.5, "designed at", |hz, _| hz)
            .expect("above");
        assert_eq!(l.param, "cutoff");
        assert!(
            l.message.contains("above Nyquist (24000 Hz at 48000 Hz)"),
            "{}",
            l.message
        );
        assert!(l.message.ends_with("designed at 24000 Hz"), "{}", l.message);
        let v = [Value::Number(23_600.0)];
        let l = frequency_lint(&v, 0, "cutoff", 48_000.0, 0.49, "designed at", |hz, _| hz)
            .expect("above 0.49");
        assert!(
            l.message
                .contains("design limit of 0.49 × the sample rate (23520 Hz; Nyquist is 24000 Hz)"),
            "{}",
            l.message
        );
        assert!(frequency_lint(
            &[Value::Number(23_520.0)],
            0,
            "cutoff",
            48_000.0,
            0.49,
            "x",
            |hz, _| hz
        )
        .is_none());
        assert!(frequency_lint(
            &[Value::Enum(0)],
            0,
            "cutoff",
            48_000.0,
            0.49,
            "x",
            |hz, _| hz
        )
        .is_none());
    }

    fn choices(name: &str, p: Profile, values: Option<Vec<Value>>) -> Vec<(&'static str, String)> {
        let spec = lookup(name).expect("registered");
        (spec.choices)(&profile(p), &values.unwrap_or_else(|| defaults(spec)))
    }

    #[test]
    fn whether_events_may_set_a_param_follows_its_kind() {
        for spec in registry() {
            for p in spec.params {
                let why = format!("{}.{}", spec.name, p.name);
                match p.kind {
                    ParamKind::Number { modulatable, .. } => {
                        assert_eq!(p.settable_by_events, modulatable, "{why}")
                    }
                    ParamKind::Resource | ParamKind::OptionalResource | ParamKind::Gains => {
                        assert!(!p.settable_by_events, "{why}")
                    }
                    _ => {}
                }
            }
        }
        // The discrete params the nodes apply live (the table these flags
        // replaced): a filter's mode and a sampler's loop.
        let discrete: Vec<String> = registry()
            .iter()
            .flat_map(|s| {
                s.params
                    .iter()
                    .filter(|p| p.settable_by_events && !matches!(p.kind, ParamKind::Number { .. }))
                    .map(|p| format!("{}.{}", s.name, p.name))
            })
            .collect();
        assert_eq!(
            discrete,
            [
                "sampler.loop",
                "biquad.mode",
                "onepole.mode",
                "svf.mode",
                "sequencer.loop"
            ]
        );
    }

    #[test]
    fn index_of_is_the_declared_position() {
        for spec in registry() {
            for (i, p) in spec.params.iter().enumerate() {
                assert_eq!(spec.index_of(p.name), i, "{}.{}", spec.name, p.name);
                assert_eq!(spec.param_index(p.name), Some(i));
            }
        }
    }

    #[test]
    fn only_cast_sets_its_own_precision_and_every_choice_is_a_precision() {
        let setters: Vec<&str> = registry()
            .iter()
            .filter(|s| s.precision_param.is_some())
            .map(|s| s.name)
            .collect();
        assert_eq!(setters, ["cast"]);
        for spec in registry() {
            let Some(name) = spec.precision_param else {
                assert_eq!(spec.own_precision(&defaults(spec)), None);
                continue;
            };
            let i = spec.param_index(name).expect("a declared param");
            let ParamKind::Enum { choices, .. } = spec.params[i].kind else {
                panic!("{}.{name} is not an enum", spec.name);
            };
            for (k, c) in choices.iter().enumerate() {
                let mut values = defaults(spec);
                values[i] = Value::Enum(k);
                let want = Precision::parse(c).expect("a precision name");
                assert_eq!(spec.own_precision(&values), Some(want));
            }
        }
    }

    #[test]
    fn choices_follow_the_profile_as_the_builds_do() {
        let fft = |p| fft_choice(&profile(p));
        assert_eq!(
            choices("convolution", Profile::Strict, None),
            [("conv", "direct".to_string())]
        );
        assert_eq!(
            choices("convolution", Profile::Repro, None),
            [
                ("conv", "uniform".to_string()),
                ("fft", fft(Profile::Repro))
            ]
        );
        assert_eq!(fft(Profile::Repro), "rustfft/ortho");
        assert_eq!(
            choices("convolution", Profile::Live, None),
            [
                ("conv", "non-uniform".to_string()),
                ("fft", "rustfft/backward".to_string())
            ]
        );
        assert_eq!(
            choices("spectral_gate", Profile::Strict, None),
            [("fft", "reference/ortho".to_string())]
        );
        assert_eq!(
            choices("saturator", Profile::Repro, None),
            [("os", "2x".to_string())]
        );
        assert_eq!(
            choices("diode_clipper", Profile::Strict, None),
            [
                ("os", "1x".to_string()),
                ("newton_iterations", "32".to_string())
            ]
        );
        assert_eq!(
            choices("diode_clipper", Profile::Live, None),
            [("os", "1x".to_string()), ("newton_tol", "1e-4".to_string())]
        );
        // A pinned factor and `critical` are the node's params, read by the
        // same rule the node builds with.
        let spec = lookup("saturator").unwrap();
        let mut v = defaults(spec);
        v[spec.index_of("critical")] = Value::Bool(true);
        assert_eq!(
            choices("saturator", Profile::Live, Some(v.clone())),
            [("os", "2x".to_string())]
        );
        v[spec.index_of("oversampling")] = Value::Enum(3);
        assert_eq!(
            choices("saturator", Profile::Strict, Some(v)),
            [("os", "4x".to_string())]
        );
        assert!(choices("sine", Profile::Live, None).is_empty());
    }

    #[test]
    fn choices_are_single_words_for_the_table() {
        for spec in registry() {
            for p in Profile::ALL {
                for (what, choice) in (spec.choices)(&profile(p), &defaults(spec)) {
                    for word in [what, choice.as_str()] {
                        assert!(
                            !word.is_empty()
                                && !word.contains(char::is_whitespace)
                                && !word.contains('='),
                            "{} under {p}: `{what}={choice}`",
                            spec.name
                        );
                    }
                }
            }
        }
    }
}
