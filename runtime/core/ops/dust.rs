//! `dust`: random impulses at a mean density, from the locked Philox
//! streams (scenes/README.md, "Randomness").
//!
//! The node's key is `noise`'s (`hash64(global seed, node id, seed)`); it
//! draws two streams, word `n` of each at absolute sample `n`:
//!
//! ```text
//! stream 0, word u:  an impulse at n  ⇔  u < density/sr · 2^32   (probability density/sr)
//! stream 1, word v:  its amplitude    amp · (v + 1)·2^−32        (0, 1]  (unipolar)
//!                                     amp · (v·2^−31 − 1)        [−1, 1) (bipolar: noise's map)
//! ```
//!
//! (f32: `((v >> 8) + 1)·2^−24` and noise's f32 map; both exact.) Every other
//! sample is 0. So the mean count over `N` samples is `N·density/sr`, and
//! like `noise` the output is a pure function of the sample index: no
//! state, block-size invariant, seekable. `density` is held to 0 … the
//! sample rate (an impulse every sample).

use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError,
};
use crate::dsp::rng::NoiseStream;
use crate::dsp::{Math, Precision, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;

const DENSITY: usize = DUST.index_of("density");
const AMP: usize = DUST.index_of("amp");
const BIPOLAR: usize = DUST.index_of("bipolar");

/// The stream that decides where impulses fall.
const WHEN: u32 = 0;
/// The stream of their amplitudes.
const HOW_LOUD: u32 = 1;

/// The threshold a stream-0 word is compared with: `density/sr · 2^32`,
/// density held to 0 … sr.
#[inline(always)]
fn threshold(density: f64, sample_rate: f64) -> f64 {
    let p = density / sample_rate;
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
    p * 4294967296.0
}

/// Word `v` as a unipolar amplitude in (0, 1], exact at both precisions.
#[inline(always)]
fn unipolar<S: Sample>(v: u32) -> S {
    match S::PRECISION {
        Precision::F64 => S::from_f64((v as f64 + 1.0) * (1.0 / 4294967296.0)),
        Precision::F32 => S::from_f32(((v >> 8) + 1) as f32 * (1.0 / 16777216.0)),
    }
}

/// `dust` at one precision.
struct Dust<S> {
    when: NoiseStream,
    how_loud: NoiseStream,
    bipolar: bool,
    sample_rate: f64,
    _p: std::marker::PhantomData<fn() -> S>,
}

impl<S: Sample> Dust<S> {
    #[inline(always)]
    fn at(&mut self, n: u64, threshold: f64, amp: f64) -> S {
        if (self.when.word(n) as f64) < threshold {
            let v = self.how_loud.word(n);
            let a = if self.bipolar {
                S::from_noise_word(v)
            } else {
                unipolar::<S>(v)
            };
            S::from_f64(amp) * a
        } else {
            S::ZERO
        }
    }
}

impl<S: Sample> NodeProcessor<S> for Dust<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let (density, amp) = (io.params.get(DENSITY), io.params.get(AMP));
        let start = io.start;
        let sr = self.sample_rate;
        let out = &mut io.outputs[0][..io.frames];
        if density.is_const() && amp.is_const() {
            let (t, a) = (threshold(density.value(), sr), amp.value());
            for (i, o) in out.iter_mut().enumerate() {
                *o = self.at(start + i as u64, t, a);
            }
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                let t = threshold(density.at(i), sr);
                *o = self.at(start + i as u64, t, amp.at(i));
            }
        }
    }

    /// Nothing to do: the output depends only on the absolute sample index.
    fn reset(&mut self) {}

    /// No state (its position is the engine's sample clock).
    fn snapshot(&self, _st: &mut NodeState) {}

    fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
        Ok(())
    }

    /// An amplitude in [−1, 1] times a finite `amp`, or 0.
    fn always_finite(&self) -> bool {
        true
    }
}

struct DustOp;
impl Operator for DustOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Dust::<S> {
            when: NoiseStream::new(cx.noise_hash, WHEN),
            how_loud: NoiseStream::new(cx.noise_hash, HOW_LOUD),
            bipolar: matches!(cx.values[BIPOLAR], super::Value::Bool(true)),
            sample_rate: cx.sample_rate,
            _p: std::marker::PhantomData,
        }))
    }
}

/// `dust`: random impulses; see the module docs.
pub(crate) static DUST: OpSpec = OpSpec {
    name: "dust",
    doc: "Random single-sample impulses, `density` a second on average, each of a random \
          amplitude in (0, amp] (or [−amp, amp) when `bipolar`): Philox 4x32-10 keyed as \
          `noise` is, stream 0 places them and stream 1 sizes them, a pure function of the \
          sample index (scenes/README.md, \"Randomness\").",
    inputs: &[],
    outputs: &["out"],
    params: &[
        number(
            "density",
            Dimension::Frequency,
            10.0,
            0.0,
            1e6,
            "mean impulses per second (held to the sample rate)",
        ),
        number(
            "amp",
            Dimension::Amplitude,
            1.0,
            -1e6,
            1e6,
            "peak amplitude",
        ),
        ParamSpec {
            name: "bipolar",
            kind: ParamKind::Bool { default: false },
            doc: "amplitudes in [−amp, amp) instead of (0, amp]",
            settable_by_events: false,
        },
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
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: true,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [6.2, 6.2, 6.1]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<DustOp>,
};

#[cfg(test)]
#[path = "dust_tests.rs"]
mod tests;
