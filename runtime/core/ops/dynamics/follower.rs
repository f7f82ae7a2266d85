//! `follower`: an envelope follower, the level detector of `compressor`
//! (see [`super::detector`]) on its own: `out` is the level of `in` as a
//! linear amplitude, for routing into a param or metering.

use super::detector::{Detector, Mode, DETECTORS};
use crate::dsp::vector::SimdLevel;
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const DETECTOR: usize = FOLLOWER.index_of("detector");
const ATTACK: usize = FOLLOWER.index_of("attack");
const RELEASE: usize = FOLLOWER.index_of("release");

struct Follower<S, M> {
    det: Detector,
    sample_rate: f64,
    /// The instruction set of the detector's run (chosen at build).
    simd: SimdLevel,
    _p: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Follower<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (a, r) = (io.params.get(ATTACK), io.params.get(RELEASE));
        let sr = self.sample_rate;
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if a.is_const() && r.is_const() {
            // The compressor's detector run, in chunks: under strict and
            // std math the bits of `tick` sample by sample.
            const CHUNK: usize = 64;
            let times = (a.value(), r.value());
            let mut level = [0.0f64; CHUNK];
            for (x, out) in x.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
                let level = &mut level[..x.len()];
                self.det.run::<S, M>(self.simd, x, times, sr, level);
                for (o, l) in out.iter_mut().zip(&*level) {
                    *o = S::from_f64(*l);
                }
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                *o = S::from_f64(self.det.tick::<M>(x.to_f64(), a.at(i), r.at(i), sr));
            }
        }
    }

    fn reset(&mut self) {
        self.det.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.det.snapshot(st);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.det.restore(st)
    }
}

/// The detector mode of a node's static values (its `detector` param).
pub(super) fn mode(values: &[Value], index: usize) -> Mode {
    match values.get(index) {
        Some(Value::Enum(i)) => Mode::from_index(*i),
        _ => Mode::Peak,
    }
}

/// The `detector` param `follower` and `compressor` declare alike.
pub(super) const DETECTOR_PARAM: ParamSpec = ParamSpec {
    name: "detector",
    kind: ParamKind::Enum {
        choices: DETECTORS,
        default: "peak",
    },
    doc: "peak: |in|; rms: the mean square under the same ballistics, then its root",
    settable_by_events: false,
};

struct FollowerOp;
impl Operator for FollowerOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Follower::<S, M> {
            det: Detector::new(mode(cx.values, DETECTOR)),
            sample_rate: cx.sample_rate,
            simd: SimdLevel::detect(),
            _p: PhantomData,
        }))
    }
}

pub(crate) static FOLLOWER: OpSpec = OpSpec {
    name: "follower",
    doc: "Envelope follower: `out` is the level of `in` as a linear amplitude (a control \
          signal: route it into a param, or meter it). The rectified input (peak |in|, or \
          rms in²) passes a one-pole smoother that rises with `attack` and falls with \
          `release`: a step moves it 1 − 1/e of the way in that time. The same detector \
          drives `compressor`. Times of 0 follow instantly.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        DETECTOR_PARAM,
        number(
            "attack",
            Dimension::Time,
            0.01,
            0.0,
            60.0,
            "time constant while the level rises (0: instant)",
        ),
        number(
            "release",
            Dimension::Time,
            0.1,
            0.0,
            60.0,
            "time constant while the level falls (0: instant)",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [7.4, 6.9, 4.3]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<FollowerOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{values_with, NodeRunner};

    const SR: f64 = 48000.0;

    fn runner(detector: usize, attack: f64, release: f64, precision: Precision) -> NodeRunner {
        let profile = match precision {
            Precision::F64 => Profile::Strict,
            Precision::F32 => Profile::Repro,
        };
        NodeRunner::new(
            &FOLLOWER,
            values_with(
                &FOLLOWER,
                &[
                    ("detector", Value::Enum(detector)),
                    ("attack", Value::Number(attack)),
                    ("release", Value::Number(release)),
                ],
            ),
            profile,
            Some(precision),
            SR,
            256,
            1,
        )
        .unwrap()
    }

    /// `x` through [`Detector::tick`] sample by sample (the node's loop
    /// before it ran the detector over chunks), each sample rounded to
    /// the node's precision on the way in and out.
    fn tick_by_tick<M: Math>(detector: usize, x: &[f64], f32s: bool) -> Vec<f64> {
        let round = |v: f64| if f32s { v as f32 as f64 } else { v };
        let mut det = Detector::new(Mode::from_index(detector));
        x.iter()
            .map(|&v| round(det.tick::<M>(round(v), 0.002, 0.05, SR)))
            .collect()
    }

    /// Under strict and repro the node plays the bits of the detector
    /// ticked sample by sample, and under live (whose run is written
    /// `c·e + (1 − c)·r`) within an f32 rounding of them, at blocks 1, 7,
    /// 64 and 4096, peak and RMS, over a decaying tone, a stretch below
    /// the flush floor and a noisy tone after it.
    #[test]
    fn the_node_plays_the_detector_ticked_sample_by_sample() {
        use crate::dsp::{FastMath, StdMath, StrictMath};
        let mut z = 5u64;
        let x: Vec<f64> = (0..20000)
            .map(|i| {
                let t = i as f64 / SR;
                z = z.wrapping_mul(6364136223846793005).wrapping_add(1);
                let noise = (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                let tone = |f: f64| libm::sin(2.0 * core::f64::consts::PI * f * t);
                match i {
                    0..6000 => 0.8 * tone(220.0) * libm::exp(-20.0 * t),
                    6000..9000 => 1e-35 * tone(220.0),
                    _ => 0.5 * tone(1000.0) + 0.1 * noise,
                }
            })
            .collect();
        for detector in [0, 1] {
            for (profile, precision) in [
                (Profile::Strict, Precision::F64),
                (Profile::Repro, Precision::F32),
                (Profile::Live, Precision::F32),
            ] {
                let f32s = precision == Precision::F32;
                let want = match profile {
                    Profile::Strict => tick_by_tick::<StrictMath>(detector, &x, f32s),
                    Profile::Repro => tick_by_tick::<StdMath>(detector, &x, f32s),
                    Profile::Live => tick_by_tick::<FastMath>(detector, &x, f32s),
                };
                for block in [1, 7, 64, 4096] {
                    let values = values_with(
                        &FOLLOWER,
                        &[
                            ("detector", Value::Enum(detector)),
                            ("attack", Value::Number(0.002)),
                            ("release", Value::Number(0.05)),
                        ],
                    );
                    let mut r =
                        NodeRunner::new(&FOLLOWER, values, profile, Some(precision), SR, 4096, 1)
                            .unwrap();
                    let got = &r.run(std::slice::from_ref(&x), &[], x.len(), &[block])[0];
                    let what = format!("detector {detector}, {profile}, block {block}");
                    assert!(got.iter().any(|v| *v > 0.1), "{what}: it follows");
                    if profile == Profile::Live {
                        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                            let tol = w.abs() * f32::EPSILON as f64 + 1e-30;
                            assert!((g - w).abs() <= tol, "{what}: sample {i}: {g} vs {w}");
                        }
                    } else {
                        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(got), bits(&want), "{what}");
                    }
                }
            }
        }
    }

    /// A level step up then down: the envelope covers 1 − 1/e of each step
    /// at exactly `attack` and `release` (computed here from the definition
    /// of a time constant, not from the detector's recursion).
    #[test]
    fn a_step_reaches_one_minus_one_over_e_at_the_time_constants() {
        let (attack, release) = (480.0 / SR, 2400.0 / SR);
        let (lo, hi) = (0.1, 0.8);
        let (up, down, frames) = (1000, 20000, 40000);
        // A square wave of amplitude lo, then hi, then lo: |x| is the level.
        let x: Vec<f64> = (0..frames)
            .map(|i| {
                let amp = if (up..down).contains(&i) { hi } else { lo };
                if i % 2 == 0 {
                    amp
                } else {
                    -amp
                }
            })
            .collect();
        let target = 1.0 - libm::exp(-1.0);
        for precision in [Precision::F64, Precision::F32] {
            let mut r = runner(0, attack, release, precision);
            let out = r.run(std::slice::from_ref(&x), &[], frames, &[64, 7]);
            let env = &out[0];
            // Settled at lo before the step (it starts from 0 and rises
            // with the attack: 1000 samples ≈ 2 time constants).
            let before = env[up - 1];
            let at = env[up - 1 + 480];
            let frac = (at - before) / (hi - before);
            assert!((frac - target).abs() <= 0.05 * target, "attack {frac}");
            let before = env[down - 1];
            assert!((before - hi).abs() < 1e-9 * hi.max(1.0) + 1e-6, "{before}");
            let at = env[down - 1 + 2400];
            let frac = (before - at) / (before - lo);
            assert!((frac - target).abs() <= 0.05 * target, "release {frac}");
        }
    }

    /// RMS: a sine of amplitude A settles at A/√2 (the ballistics smooth
    /// the power; a slow time constant leaves little ripple).
    #[test]
    fn rms_settles_at_the_sines_rms() {
        let frames = 96000;
        let a = 0.5;
        let x: Vec<f64> = (0..frames)
            .map(|i| a * libm::sin(2.0 * core::f64::consts::PI * 1000.0 * i as f64 / SR))
            .collect();
        let mut r = runner(1, 0.05, 0.05, Precision::F64);
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[128]);
        let want = a / libm::sqrt(2.0);
        for v in &out[0][frames - 4800..] {
            assert!((v / want - 1.0).abs() < 0.005, "{v} vs {want}");
        }
    }

    #[test]
    fn zero_times_follow_the_rectified_input() {
        let x = vec![0.5, -0.25, 0.0, 1.0, -2.0];
        let mut r = runner(0, 0.0, 0.0, Precision::F64);
        let out = r.run(std::slice::from_ref(&x), &[], 5, &[5]);
        assert_eq!(out[0], [0.5, 0.25, 0.0, 1.0, 2.0]);
    }

    /// A snapshot taken at f64 restores into an f32 node and back: the
    /// level is f64 in both, so only the output's rounding differs.
    #[test]
    fn snapshots_migrate_between_precisions() {
        let x = crate::ops::conformance::test_signal(7, 3000);
        let mut a = runner(1, 0.002, 0.02, Precision::F64);
        a.run(&[x[..1000].to_vec()], &[], 1000, &[64]);
        let st = a.snapshot();
        let mut b = runner(1, 0.002, 0.02, Precision::F32);
        b.node().restore(&st).unwrap();
        b.set_clock(1000);
        let tail32 = b.run(&[x[1000..2000].to_vec()], &[], 1000, &[64]);
        let tail64 = a.run(&[x[1000..2000].to_vec()], &[], 1000, &[64]);
        for (p, q) in tail32[0].iter().zip(&tail64[0]) {
            assert!((p - q).abs() <= 1e-6, "{p} vs {q}");
        }
        let mut c = runner(1, 0.002, 0.02, Precision::F64);
        c.node().restore(&b.snapshot()).unwrap();
        let back = c.run(&[x[2000..].to_vec()], &[], 1000, &[64]);
        let direct = a.run(&[x[2000..].to_vec()], &[], 1000, &[64]);
        for (p, q) in back[0].iter().zip(&direct[0]) {
            assert!((p - q).abs() <= 1e-6, "{p} vs {q}");
        }
    }
}
