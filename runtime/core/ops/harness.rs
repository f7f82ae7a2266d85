//! Drives one node outside a graph: for operator tests, conformance checks
//! and golden vectors. Inputs and outputs are exchanged as f64 (exact for
//! both precisions on the way out; rounded to the node's precision on the
//! way in).

use super::{
    default_value, AnyNode, BuildCtx, Io, NodeProcessor, NodeState, OpSpec, ParamSpec, ParamState,
    Params, Value,
};
use crate::dsp::{fpmode::FpGuard, Sample};
use crate::profile::{NodeProfile, Overrides, Profile};

/// A node plus the buffers and param states the engine would give it.
pub(crate) struct NodeRunner {
    pub(crate) spec: &'static OpSpec,
    node: AnyNode,
    params: Vec<ParamState>,
    n_inputs: usize,
    max_block: usize,
    clock: u64,
    flush: bool,
    /// Fill value for output buffers before each block (tests of dirty buffers).
    pub(crate) dirty_fill: f64,
}

/// Param values for `spec`: defaults, replaced by `set` (name, value) pairs.
pub(crate) fn values_with(spec: &OpSpec, set: &[(&str, Value)]) -> Vec<Value> {
    spec.params
        .iter()
        .map(|p| {
            set.iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, v)| v.clone())
                .or_else(|| default_value(p))
                .unwrap_or(Value::Number(0.0))
        })
        .collect()
}

impl NodeRunner {
    /// Builds `spec` under `profile` (default precision and math of that
    /// profile unless `precision` overrides it).
    pub(crate) fn new(
        spec: &'static OpSpec,
        values: Vec<Value>,
        profile: Profile,
        precision: Option<crate::dsp::Precision>,
        sample_rate: f64,
        max_block: usize,
        n_inputs: usize,
    ) -> Result<NodeRunner, String> {
        let np = NodeProfile::resolve(
            profile,
            &Overrides {
                precision,
                ..Overrides::default()
            },
            None,
        );
        // The first `n_inputs` audio inputs are fed (those a test passes).
        let connected = vec![true; n_inputs];
        let cx = BuildCtx {
            sample_rate,
            values: &values,
            n_inputs,
            connected: &connected,
            noise_hash: crate::dsp::rng::hash64(1, "node", 0),
            profile: &np,
        };
        let node = (spec.build)(&cx, np.precision, np.math)?;
        let params = values
            .iter()
            .map(|v| match v {
                Value::Number(x) => ParamState::constant(*x),
                _ => ParamState::constant(0.0),
            })
            .collect();
        let n_inputs = if spec.variadic_inputs {
            n_inputs
        } else if super::is_session_input(spec) {
            // The engine gives an `input` node its channel as input 0.
            1
        } else {
            spec.inputs.len()
        };
        Ok(NodeRunner {
            spec,
            node,
            params,
            n_inputs,
            max_block,
            clock: 0,
            flush: np.flush_to_zero,
            dirty_fill: 0.0,
        })
    }

    pub(crate) fn node(&mut self) -> &mut AnyNode {
        &mut self.node
    }

    pub(crate) fn param_state(&mut self, i: usize) -> &mut ParamState {
        &mut self.params[i]
    }

    pub(crate) fn reset(&mut self) {
        self.node.reset();
        self.clock = 0;
    }

    pub(crate) fn snapshot(&self) -> NodeState {
        let mut st = NodeState::default();
        self.node.snapshot(&mut st);
        st
    }

    pub(crate) fn set_clock(&mut self, clock: u64) {
        self.clock = clock;
    }

    /// Renders `inputs[0].len()` frames (or `frames` when there are no inputs)
    /// in blocks whose sizes cycle through `blocks`. `mods` are modulation
    /// signals by param index. Returns one f64 vector per output.
    pub(crate) fn run(
        &mut self,
        inputs: &[Vec<f64>],
        mods: &[(usize, Vec<f64>)],
        frames: usize,
        blocks: &[usize],
    ) -> Vec<Vec<f64>> {
        let rig = Rig {
            params: &self.params,
            specs: self.spec.params,
            n_inputs: self.n_inputs,
            n_outputs: self.spec.outputs.len(),
            max_block: self.max_block,
            clock: &mut self.clock,
            flush: self.flush,
            dirty: self.dirty_fill,
        };
        match &mut self.node {
            AnyNode::F32(n) => run_typed::<f32>(n.as_mut(), rig, inputs, mods, frames, blocks),
            AnyNode::F64(n) => run_typed::<f64>(n.as_mut(), rig, inputs, mods, frames, blocks),
        }
    }
}

/// What the engine would give a node besides its signals: its param
/// states, the buffer sizes, the sample clock it runs at and its FP mode.
struct Rig<'a> {
    params: &'a [ParamState],
    specs: &'a [ParamSpec],
    n_inputs: usize,
    n_outputs: usize,
    max_block: usize,
    clock: &'a mut u64,
    flush: bool,
    /// Fill value for output buffers before each block.
    dirty: f64,
}

/// Runs `node` on `rig` as [`NodeRunner::run`] describes.
fn run_typed<S: Sample>(
    node: &mut dyn NodeProcessor<S>,
    rig: Rig<'_>,
    inputs: &[Vec<f64>],
    mods: &[(usize, Vec<f64>)],
    frames: usize,
    blocks: &[usize],
) -> Vec<Vec<f64>> {
    let Rig {
        params,
        specs,
        n_inputs,
        n_outputs,
        max_block,
        clock,
        flush,
        dirty,
    } = rig;
    let mut in_bufs: Vec<Vec<S>> = vec![vec![S::ZERO; max_block]; n_inputs];
    let mut out_bufs: Vec<Vec<S>> = vec![vec![S::ZERO; max_block]; n_outputs];
    let mut sig_bufs: Vec<Vec<S>> = vec![Vec::new(); params.len()];
    for (p, _) in mods {
        sig_bufs[*p] = vec![S::ZERO; max_block];
    }
    let mut result = vec![Vec::with_capacity(frames); n_outputs];
    let mut pos = 0;
    let mut bi = 0;
    while pos < frames {
        let n = blocks[bi % blocks.len()]
            .clamp(1, max_block)
            .min(frames - pos);
        bi += 1;
        for (k, buf) in in_bufs.iter_mut().enumerate() {
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = S::from_f64(inputs.get(k).map_or(0.0, |v| v[pos + i]));
            }
        }
        for (p, sig) in mods {
            for (i, b) in sig_bufs[*p][..n].iter_mut().enumerate() {
                *b = S::from_f64(sig[pos + i]);
            }
        }
        for o in out_bufs.iter_mut() {
            o.iter_mut().for_each(|x| *x = S::from_f64(dirty));
        }
        {
            let _fp = FpGuard::new(flush);
            let mut io = Io {
                frames: n,
                start: *clock,
                inputs: &in_bufs,
                outputs: &mut out_bufs,
                params: Params::new(params, &sig_bufs, *clock, specs),
            };
            node.process(&mut io);
        }
        for (r, o) in result.iter_mut().zip(&out_bufs) {
            r.extend(o[..n].iter().map(|x| x.to_f64()));
        }
        *clock += n as u64;
        pos += n;
    }
    result
}

/// Block sizes of the conformance suite: 1, 7, 64, 128, 4096 and a
/// deterministic pseudo-random mix.
pub(crate) fn conformance_block_sizes() -> Vec<Vec<usize>> {
    let mut random = Vec::new();
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for _ in 0..64 {
        x = crate::dsp::rng::mix64(x);
        random.push(1 + (x % 300) as usize);
    }
    vec![vec![1], vec![7], vec![64], vec![128], vec![4096], random]
}

/// Bitwise equality of two renders, with the first difference on failure.
pub(crate) fn first_difference(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<String> {
    for (c, (x, y)) in a.iter().zip(b).enumerate() {
        if x.len() != y.len() {
            return Some(format!("output {c}: length {} vs {}", x.len(), y.len()));
        }
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            if p.to_bits() != q.to_bits() {
                return Some(format!("output {c} frame {i}: {p:e} vs {q:e}"));
            }
        }
    }
    if a.len() != b.len() {
        return Some(format!("{} outputs vs {}", a.len(), b.len()));
    }
    None
}

/// Seconds 3 to 4.5 of the graph of `scenes/pluck-delay.json` (its
/// events left out), played node by node under strict: plucked notes and
/// their echoes, the delay line full (a steady state, not a start from
/// silence).
pub(crate) fn pluck_delay_signal(sample_rate: f64) -> Vec<f64> {
    let n = (4.5 * sample_rate) as usize;
    let num = Value::Number;
    let run = |name: &str,
               set: &[(&str, Value)],
               inputs: &[Vec<f64>],
               mods: Vec<(&str, Vec<f64>)>|
     -> Vec<f64> {
        let spec = crate::ops::lookup(name).unwrap();
        let values = values_with(spec, set);
        let mut r = NodeRunner::new(
            spec,
            values,
            Profile::Strict,
            None,
            sample_rate,
            64,
            inputs.len(),
        )
        .unwrap();
        let mods: Vec<(usize, Vec<f64>)> = mods
            .into_iter()
            .map(|(p, x)| (spec.param_index(p).unwrap(), x))
            .collect();
        r.run(inputs, &mods, n, &[64]).swap_remove(0)
    };
    let lowpass = {
        let spec = crate::ops::lookup("biquad").unwrap();
        match spec.params[spec.param_index("mode").unwrap()].kind {
            crate::ops::ParamKind::Enum { choices, .. } => {
                Value::Enum(choices.iter().position(|c| *c == "lowpass").unwrap())
            }
            _ => unreachable!("biquad's mode is an enum"),
        }
    };
    let clock = run(
        "square",
        &[("freq", num(2.0)), ("amp", num(0.5)), ("duty", num(0.1))],
        &[],
        vec![],
    );
    let env = run(
        "adsr",
        &[
            ("attack", num(0.002)),
            ("decay", num(0.18)),
            ("sustain", num(0.0)),
            ("release", num(0.06)),
            ("gate", num(0.5)),
        ],
        &[],
        vec![("gate", clock)],
    );
    let tone = run(
        "saw",
        &[("freq", num(220.0)), ("amp", num(0.6))],
        &[],
        vec![],
    );
    let vca = run("multiply", &[], &[env, tone], vec![]);
    let lp = run(
        "biquad",
        &[("mode", lowpass), ("cutoff", num(2400.0)), ("q", num(0.9))],
        &[vca],
        vec![],
    );
    let echo = run(
        "delay",
        &[
            ("time", num(0.375)),
            ("feedback", num(0.55)),
            ("mix", num(0.4)),
            ("max_time", num(1.0)),
        ],
        &[lp],
        vec![],
    );
    let x = echo[(3.0 * sample_rate) as usize..].to_vec();
    assert!(x.iter().any(|v| v.abs() > 0.1), "the signal is not silent");
    x
}
