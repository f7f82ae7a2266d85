//! `input`: one channel of the session's audio input.
//!
//! The input is host data, not math: a WAV file offline (`render --input`),
//! an input device or a file live (`run`). The engine hands the node the
//! channel named by `channel` (0-based) as its one audio input, block by
//! block; the node copies it to `out`, rounding to its precision (f32 keeps
//! an f32 or 16/24-bit source exactly). It has no state: what came in is the
//! session's, so a handover, a profile switch or a snapshot carries nothing
//! for it, and the journal keeps the input itself.

use super::{
    build_any, by_profile, no_choices, no_lints, BuildCtx, Io, NodeProcessor, NodeState, OpSpec,
    Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use std::marker::PhantomData;

/// The highest input channel a scene may read (the engine keeps a buffer
/// per channel up to the highest one read).
pub const MAX_INPUT_CHANNEL: i64 = 63;

/// Copies the session input it is given to `out`.
struct Input<S>(PhantomData<fn() -> S>);

impl<S: Sample> NodeProcessor<S> for Input<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let out = &mut io.outputs[0][..n];
        match io.inputs.first() {
            Some(x) => out.copy_from_slice(&x[..n]),
            None => out.fill(S::ZERO),
        }
    }

    stateless!();
}

struct InputOp;
impl Operator for InputOp {
    fn build<S: Sample, M: Math>(_cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Input::<S>(PhantomData)))
    }
}

/// `input`: reads one channel of the session's input.
pub(crate) static INPUT: OpSpec = OpSpec {
    name: "input",
    doc: "One channel of the session's audio input: `render --input FILE.wav` (or `-` for stdin) offline; the capture device, or `run --input FILE.wav`, live. Sample n of the input is sample n of `out`; the input itself is recorded in the journal, so a session with input replays bit for bit.",
    inputs: &[],
    outputs: &["out"],
    params: &[ParamSpec {
        name: "channel",
        kind: ParamKind::Integer {
            default: 0,
            min: 0,
            max: MAX_INPUT_CHANNEL,
        },
        doc: "the input channel to read, 0-based (0 is the left or only channel)",
        settable_by_events: false,
    }],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [1.7, 1.8, 1.8]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<InputOp>,
};

/// Whether nodes of `spec` read the session input (the engine then gives
/// each one buffer, its channel, as audio input 0).
pub fn is_session_input(spec: &OpSpec) -> bool {
    std::ptr::eq(spec, &INPUT)
}

/// The channel an `input` node reads, from its static param values.
pub fn input_channel(values: &[Value]) -> usize {
    match values.first() {
        Some(Value::Integer(c)) => (*c).clamp(0, MAX_INPUT_CHANNEL) as usize,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{values_with, NodeRunner};

    /// The oracle: `out` is the channel it is given, rounded to the node's
    /// precision, at every block size.
    #[test]
    fn input_copies_its_channel() {
        let x: Vec<f64> = (0..500)
            .map(|i| libm::sin(i as f64 * 0.013) * 0.7)
            .collect();
        for precision in [Precision::F32, Precision::F64] {
            let mut r = NodeRunner::new(
                &INPUT,
                values_with(&INPUT, &[("channel", Value::Integer(3))]),
                Profile::Strict,
                Some(precision),
                48000.0,
                64,
                0,
            )
            .unwrap();
            let out = r.run(std::slice::from_ref(&x), &[], x.len(), &[1, 7, 64]);
            for (i, (&y, &v)) in out[0].iter().zip(&x).enumerate() {
                let want = if precision == Precision::F32 {
                    v as f32 as f64
                } else {
                    v
                };
                assert_eq!(y.to_bits(), want.to_bits(), "{precision:?} frame {i}");
            }
        }
        assert_eq!(input_channel(&[Value::Integer(3)]), 3);
        assert!(is_session_input(&INPUT));
    }
}
