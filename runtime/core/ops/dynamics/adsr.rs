//! `adsr`: a linear attack–decay–sustain–release envelope.
//!
//! The exact rules, per sample, with `sr` the sample rate and every param
//! read at that sample (static value plus modulation, canonical units):
//!
//! 1. **Gate.** The gate is on when `gate > 0.5` (so a 0/1 signal or event
//!    toggles it and small modulation noise around 0 does not).
//! 2. **Edges.** Gate on while idle or releasing → *attack*, starting from
//!    the current level (retrigger never jumps). Gate off during attack,
//!    decay or sustain → *release*, with a fixed step
//!    `level / (release·sr)` computed once at that sample from the level and
//!    `release` then (so release takes `release` seconds from any level).
//! 3. **Advance** (then output the new level):
//!    - attack: `level += 1 / (attack·sr)`; on reaching ≥ 1 the level is 1
//!      and the stage becomes decay;
//!    - decay: `level −= (1 − sustain) / (decay·sr)`; on reaching ≤ sustain
//!      the level is sustain and the stage becomes sustain;
//!    - sustain: `level = sustain` (follows sustain modulation);
//!    - release: `level −= step`; on reaching ≤ 0 the level is 0 and the
//!      stage becomes idle;
//!    - idle: the level stays 0.
//!
//!    A time whose `time·sr` is not > 0 (zero, negative after modulation,
//!    NaN) completes its stage in that sample (an instant jump). `sustain`
//!    is clamped to 0…1 per sample.
//!
//! **Curve.** With `curve` c (`|c| ≥ 0.001`; below that the rules above,
//! bit for bit) each stage follows SuperCollider's curvature shape
//! `g(x) = (1 − e^(c·x))/(1 − e^c)` of a linear progress x that runs 0 → 1
//! at 1/time per second: attack `g(x)`, decay `1 − (1 − sustain)·g(x)`,
//! release `from·(1 − g(x))` (`from` the gate-off level). An attack that
//! starts from a level y (a retrigger) starts at `x = g⁻¹(y)`, so the
//! output never jumps. Negative c moves fast first (an analog-style
//! attack and exponential-like decays), positive c slowly first.
//!
//! The output is the level after the advance, so with `attack = 0` the gate's
//! first sample outputs 1. Rates are computed in f64 and the level is kept in
//! f64 at every precision (the output is rounded to the node's precision):
//! a control envelope then migrates between f32 and f64 without drift, and
//! the f32 and f64 envelopes differ only by the final rounding. The state is
//! the level, the stage and the release step (with a curve, the gate-off
//! level), and the curved stages' progress.

use super::env::{curve, curve_inverse, LINEAR_BELOW};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const ATTACK: usize = ADSR.index_of("attack");
const DECAY: usize = ADSR.index_of("decay");
const SUSTAIN: usize = ADSR.index_of("sustain");
const RELEASE: usize = ADSR.index_of("release");
const GATE: usize = ADSR.index_of("gate");
const CURVE: usize = ADSR.index_of("curve");

/// The gate is on above this value.
const GATE_THRESHOLD: f64 = 0.5;

/// `adsr`'s gate and its threshold, for [`crate::ops::gate_threshold`].
pub(crate) fn gate_threshold(op: &OpSpec) -> Option<(&'static str, f64)> {
    core::ptr::eq(op, &ADSR).then_some((ADSR.params[GATE].name, GATE_THRESHOLD))
}

/// Envelope stages, stored as i64 in snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Idle = 0,
    Attack = 1,
    Decay = 2,
    Sustain = 3,
    Release = 4,
}

impl Stage {
    fn from_i64(v: i64) -> Option<Stage> {
        Some(match v {
            0 => Stage::Idle,
            1 => Stage::Attack,
            2 => Stage::Decay,
            3 => Stage::Sustain,
            4 => Stage::Release,
            _ => return None,
        })
    }
}

/// The envelope generator's state and rules (see the module docs).
#[derive(Clone, Copy, Debug)]
struct Envelope {
    level: f64,
    stage: Stage,
    release_step: f64,
    /// A curved stage's linear progress, 0 → 1.
    progress: f64,
}

impl Envelope {
    const IDLE: Envelope = Envelope {
        level: 0.0,
        stage: Stage::Idle,
        release_step: 0.0,
        progress: 0.0,
    };

    /// One sample: gate edges, then the stage's advance. Times in samples.
    #[inline]
    fn tick(&mut self, gate: f64, attack: f64, decay: f64, sustain: f64, release: f64) -> f64 {
        let on = gate > GATE_THRESHOLD;
        match self.stage {
            Stage::Idle | Stage::Release if on => self.stage = Stage::Attack,
            Stage::Attack | Stage::Decay | Stage::Sustain if !on => {
                self.stage = Stage::Release;
                self.release_step = if release > 0.0 {
                    self.level / release
                } else {
                    f64::INFINITY
                };
            }
            _ => {}
        }
        let sustain = if sustain.is_nan() {
            sustain
        } else {
            sustain.clamp(0.0, 1.0)
        };
        match self.stage {
            Stage::Idle => {}
            Stage::Attack => {
                if attack > 0.0 {
                    self.level += 1.0 / attack;
                } else {
                    self.level = 1.0;
                }
                if self.level >= 1.0 {
                    self.level = 1.0;
                    self.stage = Stage::Decay;
                }
            }
            Stage::Decay => {
                if decay > 0.0 {
                    self.level -= (1.0 - sustain) / decay;
                } else {
                    self.level = sustain;
                }
                if self.level <= sustain {
                    self.level = sustain;
                    self.stage = Stage::Sustain;
                }
            }
            Stage::Sustain => self.level = sustain,
            Stage::Release => {
                self.level -= self.release_step;
                // Also catches a NaN level, so a bad modulation value heals.
                if self.level.is_nan() || self.level <= 0.0 {
                    self.level = 0.0;
                    self.stage = Stage::Idle;
                }
            }
        }
        self.level
    }

    /// One sample with curvature `c` (`|c| ≥ LINEAR_BELOW`): the same
    /// edges and stages as [`tick`](Self::tick), each stage's level the
    /// curve of its linear progress; `release_step` holds the gate-off level.
    #[inline]
    fn tick_curved<M: Math>(&mut self, gate: f64, times: [f64; 3], sustain: f64, c: f64) -> f64 {
        let [attack, decay, release] = times;
        let on = gate > GATE_THRESHOLD;
        match self.stage {
            Stage::Idle | Stage::Release if on => {
                self.stage = Stage::Attack;
                let y = self.level.clamp(0.0, 1.0);
                let x = curve_inverse::<M>(c, y);
                self.progress = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
            }
            Stage::Attack | Stage::Decay | Stage::Sustain if !on => {
                self.stage = Stage::Release;
                self.release_step = self.level;
                self.progress = 0.0;
            }
            _ => {}
        }
        let sustain = if sustain.is_nan() {
            sustain
        } else {
            sustain.clamp(0.0, 1.0)
        };
        let advance = |x: &mut f64, len: f64| {
            *x = if len > 0.0 { *x + 1.0 / len } else { 1.0 };
            *x >= 1.0
        };
        match self.stage {
            Stage::Idle => {}
            Stage::Attack => {
                if advance(&mut self.progress, attack) {
                    self.level = 1.0;
                    self.stage = Stage::Decay;
                    self.progress = 0.0;
                } else {
                    self.level = curve::<M>(c, self.progress);
                }
            }
            Stage::Decay => {
                if advance(&mut self.progress, decay) {
                    self.level = sustain;
                    self.stage = Stage::Sustain;
                } else {
                    self.level = 1.0 - (1.0 - sustain) * curve::<M>(c, self.progress);
                }
            }
            Stage::Sustain => self.level = sustain,
            Stage::Release => {
                if advance(&mut self.progress, release) || self.level.is_nan() {
                    self.level = 0.0;
                    self.stage = Stage::Idle;
                } else {
                    self.level = self.release_step * (1.0 - curve::<M>(c, self.progress));
                }
            }
        }
        self.level
    }
}

/// `adsr` at one precision.
struct Adsr<S, M> {
    env: Envelope,
    sample_rate: f64,
    /// The curvature; linear (the plain rules) below `LINEAR_BELOW`.
    curve: f64,
    _p: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for Adsr<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        if self.curve.abs() >= LINEAR_BELOW {
            return self.process_curved(io);
        }
        let p = &io.params;
        let (a, d, s, r, g) = (
            p.get(ATTACK),
            p.get(DECAY),
            p.get(SUSTAIN),
            p.get(RELEASE),
            p.get(GATE),
        );
        let sr = self.sample_rate;
        let out = &mut io.outputs[0][..io.frames];
        if a.is_const() && d.is_const() && s.is_const() && r.is_const() && g.is_const() {
            let (a, d, s, r, g) = (
                a.value() * sr,
                d.value() * sr,
                s.value(),
                r.value() * sr,
                g.value(),
            );
            for o in out.iter_mut() {
                *o = S::from_f64(self.env.tick(g, a, d, s, r));
            }
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                let level =
                    self.env
                        .tick(g.at(i), a.at(i) * sr, d.at(i) * sr, s.at(i), r.at(i) * sr);
                *o = S::from_f64(level);
            }
        }
    }

    fn reset(&mut self) {
        self.env = Envelope::IDLE;
    }

    /// The level and release step are f64 at every precision (exact
    /// migration); a curved envelope's progress too.
    fn snapshot(&self, st: &mut NodeState) {
        st.put_sample::<f64>("level", self.env.level);
        st.put_i64("stage", self.env.stage as i64);
        st.put_sample::<f64>("release_step", self.env.release_step);
        if self.curve.abs() >= LINEAR_BELOW {
            st.put_sample::<f64>("progress", self.env.progress);
        }
    }

    /// A state without a progress (a linear envelope's) starts the
    /// current stage's progress at 0.
    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let level = st.get_sample::<f64>("level")?;
        let stage = Stage::from_i64(st.get_i64("stage")?).ok_or(StateError::Kind("stage"))?;
        let release_step = st.get_sample::<f64>("release_step")?;
        let progress = st.get_sample::<f64>("progress").unwrap_or(0.0);
        self.env = Envelope {
            level,
            stage,
            release_step,
            progress,
        };
        Ok(())
    }
}

impl<S: Sample, M: Math> Adsr<S, M> {
    /// `process` with a curve (see the module docs).
    fn process_curved(&mut self, io: &mut Io<'_, S>) {
        let p = &io.params;
        let (a, d, s, r, g) = (
            p.get(ATTACK),
            p.get(DECAY),
            p.get(SUSTAIN),
            p.get(RELEASE),
            p.get(GATE),
        );
        let (sr, c) = (self.sample_rate, self.curve);
        let out = &mut io.outputs[0][..io.frames];
        for (i, o) in out.iter_mut().enumerate() {
            let times = [a.at(i) * sr, d.at(i) * sr, r.at(i) * sr];
            let level = self.env.tick_curved::<M>(g.at(i), times, s.at(i), c);
            *o = S::from_f64(level);
        }
    }
}

struct AdsrOp;
impl Operator for AdsrOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Adsr::<S, M> {
            env: Envelope::IDLE,
            sample_rate: cx.sample_rate,
            curve: cx.number(CURVE),
            _p: PhantomData,
        }))
    }
}

const fn time_param(name: &'static str, default: f64, doc: &'static str) -> ParamSpec {
    number(name, Dimension::Time, default, 0.0, 3600.0, doc)
}

/// `adsr`: a linear envelope driven by its `gate` param or port.
pub(crate) static ADSR: OpSpec = OpSpec {
    name: "adsr",
    doc: "ADSR envelope in 0…1. The gate is on while `gate` > 0.5; attack rises at \
          1/attack per second from the current level, decay falls to sustain, release falls \
          from the gate-off level to 0 in `release` seconds; linear, or each stage shaped by \
          `curve` c: g(x) = (1 − e^(c·x))/(1 − e^c) of its linear progress x.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        time_param("attack", 0.01, "time from 0 to 1"),
        time_param("decay", 0.1, "time from 1 down to sustain"),
        number(
            "sustain",
            Dimension::Amplitude,
            0.7,
            0.0,
            1.0,
            "level held while the gate is on",
        ),
        time_param("release", 0.2, "time from the gate-off level to 0"),
        number(
            "gate",
            Dimension::Scalar,
            0.0,
            -1e6,
            1e6,
            "on while > 0.5 (set by events or a signal)",
        ),
        ParamSpec {
            name: "curve",
            kind: ParamKind::Number {
                dim: Dimension::Scalar,
                default: 0.0,
                min: -50.0,
                max: 50.0,
                modulatable: false,
            },
            doc: "curvature of every stage, as SuperCollider's Env: 0 linear, < 0 fast first, > 0 slow first",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [9.4, 8.0, 7.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<AdsrOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::Value;

    /// A deliberately plain reference: a phase name and a level, one sample
    /// at a time, times converted to seconds-per-sample arithmetic.
    struct Naive {
        phase: &'static str,
        level: f64,
        rel_from: f64,
        rel_len: f64,
    }

    impl Naive {
        fn next(&mut self, gate: f64, a_s: f64, d_s: f64, sus: f64, r_s: f64, sr: f64) -> f64 {
            let on = gate > 0.5;
            if on && (self.phase == "idle" || self.phase == "release") {
                self.phase = "attack";
            }
            if !on && matches!(self.phase, "attack" | "decay" | "sustain") {
                self.phase = "release";
                self.rel_from = self.level;
                self.rel_len = r_s * sr;
            }
            let sus = sus.clamp(0.0, 1.0);
            match self.phase {
                "attack" => {
                    let n = a_s * sr;
                    self.level = if n > 0.0 { self.level + 1.0 / n } else { 1.0 };
                    if self.level >= 1.0 {
                        self.level = 1.0;
                        self.phase = "decay";
                    }
                }
                "decay" => {
                    let n = d_s * sr;
                    self.level = if n > 0.0 {
                        self.level - (1.0 - sus) / n
                    } else {
                        sus
                    };
                    if self.level <= sus {
                        self.level = sus;
                        self.phase = "sustain";
                    }
                }
                "sustain" => self.level = sus,
                "release" => {
                    self.level = if self.rel_len > 0.0 {
                        self.level - self.rel_from / self.rel_len
                    } else {
                        0.0
                    };
                    if self.level <= 0.0 {
                        self.level = 0.0;
                        self.phase = "idle";
                    }
                }
                _ => {}
            }
            self.level
        }
    }

    const SR: f64 = 48000.0;

    fn runner(params: &[(&str, f64)], precision: Precision) -> NodeRunner {
        let set: Vec<(&str, Value)> = params
            .iter()
            .map(|(n, v)| (*n, Value::Number(*v)))
            .collect();
        let profile = match precision {
            Precision::F64 => Profile::Strict,
            Precision::F32 => Profile::Repro,
        };
        NodeRunner::new(
            &ADSR,
            values_with(&ADSR, &set),
            profile,
            Some(precision),
            SR,
            256,
            0,
        )
        .unwrap()
    }

    fn gate(frames: usize, on: &[(usize, usize)]) -> Vec<f64> {
        (0..frames)
            .map(|i| {
                if on.iter().any(|(a, b)| (*a..*b).contains(&i)) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect()
    }

    #[test]
    fn matches_the_naive_reference() {
        let frames = 20000;
        // Full cycle, a retrigger during release, a gate-off during attack
        // and one during decay.
        let g = gate(
            frames,
            &[(100, 6000), (7000, 7100), (9000, 9300), (12000, 19000)],
        );
        let (a, d, s, r) = (0.01, 0.05, 0.4, 0.1);
        let set = [("attack", a), ("decay", d), ("sustain", s), ("release", r)];
        for precision in [Precision::F64, Precision::F32] {
            let mut node = runner(&set, precision);
            let out = node.run(&[], &[(GATE, g.clone())], frames, &[61]);
            let mut naive = Naive {
                phase: "idle",
                level: 0.0,
                rel_from: 0.0,
                rel_len: 0.0,
            };
            for i in 0..frames {
                let want = naive.next(g[i], a, d, s, r, SR);
                let tol = match precision {
                    Precision::F64 => 1e-12,
                    Precision::F32 => 1e-7,
                };
                assert!(
                    (out[0][i] - want).abs() <= tol,
                    "{precision:?} frame {i}: {} vs {want}",
                    out[0][i]
                );
            }
        }
    }

    #[test]
    fn matches_the_naive_reference_under_modulation() {
        let frames = 12000;
        let g = gate(frames, &[(0, 3000), (4000, 9000)]);
        let sus: Vec<f64> = (0..frames)
            .map(|i| 0.3 * libm::sin(i as f64 * 0.001))
            .collect();
        let att: Vec<f64> = (0..frames).map(|i| 0.002 * (i % 7) as f64).collect();
        let set = [
            ("attack", 0.005),
            ("decay", 0.02),
            ("sustain", 0.5),
            ("release", 0.03),
        ];
        let mut node = runner(&set, Precision::F64);
        let out = node.run(
            &[],
            &[
                (GATE, g.clone()),
                (SUSTAIN, sus.clone()),
                (ATTACK, att.clone()),
            ],
            frames,
            &[1, 100, 33],
        );
        let mut naive = Naive {
            phase: "idle",
            level: 0.0,
            rel_from: 0.0,
            rel_len: 0.0,
        };
        for i in 0..frames {
            let want = naive.next(g[i], 0.005 + att[i], 0.02, 0.5 + sus[i], 0.03, SR);
            assert!((out[0][i] - want).abs() <= 1e-12, "frame {i}");
        }
    }

    #[test]
    fn exact_segments_on_binary_times() {
        // At 1024 Hz, 4/1024 s is exactly 4 samples.
        let mut node = NodeRunner::new(
            &ADSR,
            values_with(
                &ADSR,
                &[
                    ("attack", Value::Number(4.0 / 1024.0)),
                    ("decay", Value::Number(2.0 / 1024.0)),
                    ("sustain", Value::Number(0.5)),
                    ("release", Value::Number(4.0 / 1024.0)),
                ],
            ),
            Profile::Strict,
            None,
            1024.0,
            64,
            0,
        )
        .unwrap();
        let g = gate(16, &[(1, 9)]);
        let out = node.run(&[], &[(GATE, g)], 16, &[16]);
        let want = [
            0.0, 0.25, 0.5, 0.75, 1.0, 0.75, 0.5, 0.5, 0.5, // gate off at 9
            0.375, 0.25, 0.125, 0.0, 0.0, 0.0, 0.0,
        ];
        assert_eq!(out[0], want);
    }

    #[test]
    fn zero_times_jump() {
        let set = [
            ("attack", 0.0),
            ("decay", 0.0),
            ("sustain", 0.3),
            ("release", 0.0),
        ];
        let mut node = runner(&set, Precision::F64);
        let out = node.run(&[], &[(GATE, gate(6, &[(2, 4)]))], 6, &[6]);
        // Attack jumps to 1 then decay jumps to sustain on the next sample.
        assert_eq!(out[0], [0.0, 0.0, 1.0, 0.3, 0.0, 0.0]);
    }

    /// SuperCollider's curvature shape, written out in the test.
    fn g(c: f64, x: f64) -> f64 {
        (1.0 - libm::exp(c * x)) / (1.0 - libm::exp(c))
    }

    #[test]
    fn a_curve_shapes_each_stage_and_a_retrigger_starts_where_the_level_is() {
        // At 1024 Hz, n/1024 s is exactly n samples.
        let c = -4.0;
        let mut node = NodeRunner::new(
            &ADSR,
            values_with(
                &ADSR,
                &[
                    ("attack", Value::Number(8.0 / 1024.0)),
                    ("decay", Value::Number(8.0 / 1024.0)),
                    ("sustain", Value::Number(0.5)),
                    ("release", Value::Number(8.0 / 1024.0)),
                    ("curve", Value::Number(c)),
                ],
            ),
            Profile::Strict,
            None,
            1024.0,
            64,
            0,
        )
        .unwrap();
        // On for 20 samples, off for 4, on again.
        let gates = gate(40, &[(0, 20), (24, 40)]);
        let out = node.run(&[], &[(GATE, gates)], 40, &[5]);
        let close = |got: f64, want: f64, what: &str| {
            assert!((got - want).abs() <= 1e-12, "{what}: {got} vs {want}");
        };
        for j in 1..8 {
            close(out[0][j - 1], g(c, j as f64 / 8.0), "attack");
        }
        assert_eq!(out[0][7], 1.0);
        for j in 1..8 {
            close(out[0][7 + j], 1.0 - 0.5 * g(c, j as f64 / 8.0), "decay");
        }
        assert!(out[0][15..20].iter().all(|y| *y == 0.5));
        for j in 1..=4 {
            close(
                out[0][19 + j],
                0.5 * (1.0 - g(c, j as f64 / 8.0)),
                "release",
            );
        }
        // Retriggered at the level y after 4 release samples: the attack's
        // progress starts where g reaches y, so the next sample is one step on.
        let y = out[0][23];
        let x0 = libm::log(1.0 - y * (1.0 - libm::exp(c))) / c;
        close(g(c, x0), y, "the inverse");
        close(out[0][24], g(c, x0 + 1.0 / 8.0), "retrigger");
        assert!(out[0][24] > y);
        // A curved negative attack rises faster than the linear one.
        assert!(out[0][0] > 1.0 / 8.0);
    }

    #[test]
    fn a_curve_below_a_thousandth_is_the_linear_envelope_bit_for_bit() {
        let set = [("attack", 0.003), ("decay", 0.01), ("release", 0.02)];
        let g = gate(3000, &[(10, 1000), (1500, 1600)]);
        let mut linear = runner(&set, Precision::F64);
        let want = linear.run(&[], &[(GATE, g.clone())], 3000, &[64]);
        let mut set = set.to_vec();
        set.push(("curve", 0.0009));
        let mut nearly = runner(&set, Precision::F64);
        assert_eq!(nearly.run(&[], &[(GATE, g.clone())], 3000, &[64]), want);
        set.pop();
        set.push(("curve", 0.5));
        let mut curved = runner(&set, Precision::F64);
        assert_ne!(curved.run(&[], &[(GATE, g)], 3000, &[64]), want);
    }

    #[test]
    fn static_gate_param_opens_the_envelope() {
        let set = [("attack", 0.0), ("sustain", 1.0), ("gate", 1.0)];
        let mut node = runner(&set, Precision::F64);
        let out = node.run(&[], &[], 3, &[3]);
        assert_eq!(out[0], [1.0, 1.0, 1.0]);
    }
}
