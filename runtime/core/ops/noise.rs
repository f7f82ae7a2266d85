//! `noise`: white noise, uniform in [-1, 1), from the locked Philox streams
//! written out in scenes/README.md, "Randomness".
//!
//! Sample `n` (absolute sample index) is `amp · map(word n of stream 0)`,
//! where the stream is keyed by `hash64(global seed, node id, local seed)`
//! (computed by the graph compiler, [`BuildCtx::noise_hash`]). Noise is a
//! pure function of the sample index: it carries no state, is block-size
//! invariant and seekable, and `reset` changes nothing because the engine's
//! clock, not the node, decides which samples come next. `seed` is part of
//! the hash the compiler computes, so a new seed takes effect when the node
//! is rebuilt (a scene edit), not through `set_discrete`.

use super::noise_color::{ColorFilter, Colored};
use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError,
};
use super::{serial_lanes, LaneKernel, Value};
use crate::dsp::rng::NoiseStream;
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

pub(super) const AMP: usize = NOISE.index_of("amp");
const COLOR: usize = NOISE.index_of("color");

/// The stream index noise draws from (the only one `noise` uses).
const STREAM: u32 = 0;

/// White noise at one precision.
struct Noise<S> {
    stream: NoiseStream,
    _p: PhantomData<fn() -> S>,
}

impl<S: Sample> NodeProcessor<S> for Noise<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let amp = io.params.get(AMP);
        let start = io.start;
        let out = &mut io.outputs[0][..io.frames];
        if amp.is_const() {
            self.stream
                .fill_scaled(start, out, S::from_f64(amp.value()));
        } else {
            self.stream.fill(start, out);
            for (i, o) in out.iter_mut().enumerate() {
                *o = S::from_f64(amp.at(i)) * *o;
            }
        }
    }

    /// Nothing to do: the output depends only on the absolute sample index.
    fn reset(&mut self) {}

    /// Noise has no state (its position is the engine's sample clock).
    fn snapshot(&self, _st: &mut NodeState) {}

    fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
        Ok(())
    }

    /// Its words come many Philox blocks at a time: a group saves the
    /// engine's per-node work.
    fn lanes(&self, _: crate::dsp::vector::SimdLevel) -> Option<LaneKernel<S>> {
        Some(serial_lanes::<S, Self>)
    }

    /// An noise: a word in [-1, 1) times a finite `amp`.
    fn always_finite(&self) -> bool {
        true
    }
}

struct NoiseOp;
impl Operator for NoiseOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let stream = NoiseStream::new(cx.noise_hash, STREAM);
        let filter = match cx.values[COLOR] {
            Value::Enum(1) => ColorFilter::pink::<M>(cx.sample_rate),
            Value::Enum(2) => ColorFilter::brown::<M>(cx.sample_rate),
            _ => {
                return Ok(Box::new(Noise::<S> {
                    stream,
                    _p: PhantomData,
                }))
            }
        };
        Ok(Box::new(Colored::<S>::new(stream, AMP, &filter)))
    }
}

/// `noise`: white noise, uniform in [-1, 1) before `amp`; see the module docs.
pub(crate) static NOISE: OpSpec = OpSpec {
    name: "noise",
    doc: "White noise, uniform in [-amp, amp): Philox 4x32-10 keyed by (global seed, node id, seed), \
          a pure function of the sample index (the locked formula: scenes/README.md, \
          \"Randomness\"). `color` pink (−3 dB/octave) or brown (−6 dB/octave) filters those \
          words, to an RMS of amp/5.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        number(
            "amp",
            Dimension::Amplitude,
            1.0,
            -1e6,
            1e6,
            "peak amplitude",
        ),
        ParamSpec {
            name: "seed",
            kind: ParamKind::Integer {
                default: 0,
                min: 0,
                max: i64::MAX,
            },
            doc: "local seed, mixed with the global seed and the node id",
            settable_by_events: false,
        },
        ParamSpec {
            name: "color",
            kind: ParamKind::Enum {
                choices: &["white", "pink", "brown"],
                default: "white",
            },
            doc: "white (flat), pink (−3 dB/octave) or brown (−6 dB/octave, a leaky integrator)",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: true,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [2.2, 2.0, 2.0]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<NoiseOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{first_difference, values_with, NodeRunner};
    use crate::ops::Value;

    /// The hash the harness builds nodes with.
    fn harness_hash() -> u64 {
        crate::dsp::rng::hash64(1, "node", 0)
    }

    /// The locked formula (scenes/README.md, "Randomness") written out
    /// directly against rand_philox.
    fn oracle_word(hash: u64, n: u64) -> u32 {
        let key = [hash as u32, (hash >> 32) as u32];
        let b = n / 4;
        let ctr = [b as u32, (b >> 32) as u32, 0, 0];
        rand_philox::philox4x32_10(ctr, key)[(n % 4) as usize]
    }

    fn oracle_f64(hash: u64, n: u64) -> f64 {
        oracle_word(hash, n) as f64 * (1.0 / 2147483648.0) - 1.0
    }

    fn oracle_f32(hash: u64, n: u64) -> f32 {
        (oracle_word(hash, n) >> 8) as f32 * (1.0 / 8388608.0) - 1.0
    }

    fn runner(amp: f64, profile: Profile, precision: Precision) -> NodeRunner {
        NodeRunner::new(
            &NOISE,
            values_with(&NOISE, &[("amp", Value::Number(amp))]),
            profile,
            Some(precision),
            48000.0,
            4096,
            0,
        )
        .unwrap()
    }

    #[test]
    fn matches_the_design_mapping_at_f64() {
        let h = harness_hash();
        for start in [0u64, 1, 5, 1000, (1u64 << 34) + 3] {
            let mut r = runner(1.0, Profile::Strict, Precision::F64);
            r.set_clock(start);
            let out = r.run(&[], &[], 9, &[4]);
            for (i, y) in out[0].iter().enumerate() {
                let n = start + i as u64;
                assert_eq!(y.to_bits(), oracle_f64(h, n).to_bits(), "sample {n}");
            }
        }
    }

    #[test]
    fn matches_the_design_mapping_at_f32() {
        let h = harness_hash();
        let mut r = runner(1.0, Profile::Repro, Precision::F32);
        r.set_clock(77);
        let out = r.run(&[], &[], 50, &[3]);
        for (i, y) in out[0].iter().enumerate() {
            let n = 77 + i as u64;
            assert_eq!(*y, oracle_f32(h, n) as f64, "sample {n}");
        }
    }

    #[test]
    fn amp_scales_and_range_is_half_open() {
        let h = harness_hash();
        let mut r = runner(0.5, Profile::Strict, Precision::F64);
        let out = r.run(&[], &[], 4000, &[64]);
        for (n, y) in out[0].iter().enumerate() {
            assert_eq!(*y, 0.5 * oracle_f64(h, n as u64));
            assert!((-0.5..0.5).contains(y));
        }
    }

    #[test]
    fn pure_function_of_sample_index() {
        let mut whole = runner(1.0, Profile::Strict, Precision::F64);
        let all = whole.run(&[], &[], 3000, &[1]);
        for (offset, blocks) in [(0usize, vec![7, 1, 300]), (123, vec![64]), (2999, vec![5])] {
            let mut r = runner(1.0, Profile::Strict, Precision::F64);
            r.set_clock(offset as u64);
            let part = r.run(&[], &[], 3000 - offset, &blocks);
            let want = vec![all[0][offset..].to_vec()];
            assert_eq!(first_difference(&want, &part), None, "offset {offset}");
        }
        // A reset node restarts at whatever clock the engine gives it.
        whole.reset();
        whole.set_clock(1000);
        let again = whole.run(&[], &[], 10, &[10]);
        assert_eq!(again[0], all[0][1000..1010]);
    }
}
