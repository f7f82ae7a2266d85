//! `env`: a multi-segment envelope, as SuperCollider's `Env` played by an
//! `EnvGen`.
//!
//! Levels `L0 … Ln` (`levels`), segment k going from `L(k)` to `L(k+1)`
//! over `times[k]` seconds. The exact rules, per sample, with `sr` the
//! sample rate:
//!
//! 1. **Gate.** On while `gate > 0.5`. A rising edge (off → on, and a gate
//!    already on at the first sample) starts segment 0 from the current
//!    level (a retrigger never jumps). A falling edge before the envelope
//!    has passed its `sustain` node starts segment `sustain` (from the
//!    current level towards `L(sustain + 1)`): the release. Without a
//!    `sustain` node a falling edge does nothing (the envelope runs to its
//!    end once per trigger).
//! 2. **Advance** (then output the level): in segment k, `pos` counts the
//!    samples since it started, `n = times[k]·sr`; the level is
//!    `shape(from, L(k+1), pos/n)` while `pos < n`, and `L(k+1)` exactly
//!    at the first `pos ≥ n`, where the segment ends (so a segment lasts
//!    ⌈n⌉ samples, at least 1). On reaching node `sustain` with the gate
//!    on, the envelope holds there (or, with a `loop` node, starts segment
//!    `loop` again from there, until the gate closes); on reaching `Ln` it
//!    holds `Ln`. Before the first gate the level is `L0`.
//! 3. **Shape** of a segment from `a` to `b` at `t` in 0…1: with a
//!    curvature `c` (`curves[k]`; `|c| < 0.001` is linear, as
//!    SuperCollider's), `a + (b − a)·(1 − e^(c·t))/(1 − e^c)` (positive `c`
//!    starts slowly, negative fast); linear `a + (b − a)·t`; with
//!    `exponential`, `a·(b/a)^t`, which needs `a` and `b` nonzero and of
//!    one sign (a segment that is not plays linear, and a static level that
//!    makes it so is a warning).
//!
//! The level is kept in f64 at every precision (the output is rounded to
//! the node's), so an envelope migrates between precisions exactly. The
//! state is the level, the segment's start level, the phase, `pos` and
//! whether the gate was on.

use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, BuildCtx, Io, Lint, NodeProcessor, NodeState, OpSpec,
    Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const LEVELS: usize = ENV.index_of("levels");
const TIMES: usize = ENV.index_of("times");
const CURVES: usize = ENV.index_of("curves");
const EXPONENTIAL: usize = ENV.index_of("exponential");
const SUSTAIN: usize = ENV.index_of("sustain");
const LOOP: usize = ENV.index_of("loop");
const GATE: usize = ENV.index_of("gate");

/// The gate is on above this value (as `adsr`'s).
const GATE_THRESHOLD: f64 = 0.5;

/// Below this curvature a segment is linear (SuperCollider's threshold).
pub(crate) const LINEAR_BELOW: f64 = 0.001;

/// Levels when the scene gives none: a rise to 1 and a fall back to 0.
const DEFAULT_LEVELS: [f64; 3] = [0.0, 1.0, 0.0];
/// Times when the scene gives none (with the default levels).
const DEFAULT_TIMES: [f64; 2] = [0.01, 0.5];

/// `(1 − e^(c·t))/(1 − e^c)`: the curvature shape, 0 at `t` = 0 and 1 at
/// `t` = 1; `t` for `|c| < LINEAR_BELOW`.
#[inline]
pub(crate) fn curve<M: Math>(c: f64, t: f64) -> f64 {
    if c.abs() < LINEAR_BELOW {
        t
    } else {
        (1.0 - M::coef_exp(c * t)) / (1.0 - M::coef_exp(c))
    }
}

/// The `t` at which [`curve`] is `y` (its inverse on 0…1).
#[inline]
pub(crate) fn curve_inverse<M: Math>(c: f64, y: f64) -> f64 {
    if c.abs() < LINEAR_BELOW {
        y
    } else {
        M::coef_ln(1.0 - y * (1.0 - M::coef_exp(c))) / c
    }
}

/// How a segment moves from its start level to its end level.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    /// A curvature (linear below [`LINEAR_BELOW`]).
    Curve(f64),
    /// `a·(b/a)^t`.
    Exponential,
}

/// Where the envelope is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the first gate: the level is `L0`.
    Idle,
    /// Segment k is running.
    Segment(usize),
    /// Held at the sustain node while the gate is on.
    Sustain,
    /// Past the last node: the level is `Ln`.
    Done,
}

impl Phase {
    fn to_i64(self) -> i64 {
        match self {
            Phase::Idle => -1,
            Phase::Sustain => -2,
            Phase::Done => -3,
            Phase::Segment(k) => k as i64,
        }
    }

    fn from_i64(v: i64, segments: usize) -> Option<Phase> {
        Some(match v {
            -1 => Phase::Idle,
            -2 => Phase::Sustain,
            -3 => Phase::Done,
            k if k >= 0 && (k as usize) < segments => Phase::Segment(k as usize),
            _ => return None,
        })
    }
}

/// `env` at one precision and math policy.
struct Env<S, M> {
    levels: Vec<f64>,
    /// Segment lengths in samples (`times[k]·sr`).
    lengths: Vec<f64>,
    shapes: Vec<Shape>,
    sustain: Option<usize>,
    looping: Option<usize>,
    level: f64,
    from: f64,
    pos: u64,
    phase: Phase,
    was_on: bool,
    _p: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> Env<S, M> {
    /// Segment k starts from the current level.
    #[inline]
    fn start(&mut self, k: usize) {
        if k >= self.lengths.len() {
            self.phase = Phase::Done;
        } else {
            self.phase = Phase::Segment(k);
            self.from = self.level;
            self.pos = 0;
        }
    }

    /// One sample: the gate's edges, then the advance; returns the level.
    #[inline]
    fn tick(&mut self, gate: f64) -> f64 {
        let on = gate > GATE_THRESHOLD;
        if on && !self.was_on {
            self.start(0);
        } else if !on && self.was_on {
            if let Some(s) = self.sustain {
                let before = match self.phase {
                    Phase::Segment(k) => k < s,
                    Phase::Sustain => true,
                    _ => false,
                };
                if before {
                    self.start(s);
                }
            }
        }
        self.was_on = on;
        if let Phase::Segment(k) = self.phase {
            self.pos += 1;
            let n = self.lengths[k];
            let to = self.levels[k + 1];
            let t = self.pos as f64 / n;
            if n > 0.0 && t < 1.0 {
                self.level = shape_at::<M>(self.shapes[k], self.from, to, t);
            } else {
                self.level = to;
                let node = k + 1;
                match (self.sustain, self.looping) {
                    (Some(s), Some(l)) if node == s && on => self.start(l),
                    (Some(s), None) if node == s && on => self.phase = Phase::Sustain,
                    _ => self.start(node),
                }
            }
        }
        self.level
    }
}

/// A segment's level at `t` in 0…1 (see the module docs).
#[inline]
fn shape_at<M: Math>(shape: Shape, a: f64, b: f64, t: f64) -> f64 {
    match shape {
        Shape::Exponential if a * b > 0.0 => a * M::coef_pow(b / a, t),
        Shape::Exponential => a + (b - a) * t,
        Shape::Curve(c) if c.abs() < LINEAR_BELOW => a + (b - a) * t,
        Shape::Curve(c) => a + (b - a) * curve::<M>(c, t),
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Env<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let gate = io.params.get(GATE);
        let out = &mut io.outputs[0][..io.frames];
        if gate.is_const() {
            let g = gate.value();
            for o in out.iter_mut() {
                *o = S::from_f64(self.tick(g));
            }
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                *o = S::from_f64(self.tick(gate.at(i)));
            }
        }
    }

    fn reset(&mut self) {
        self.level = self.levels[0];
        self.from = self.levels[0];
        self.pos = 0;
        self.phase = Phase::Idle;
        self.was_on = false;
    }

    /// The levels are f64 at every precision (exact migration).
    fn snapshot(&self, st: &mut NodeState) {
        st.put_sample::<f64>("level", self.level);
        st.put_sample::<f64>("from", self.from);
        st.put_u64("pos", self.pos);
        st.put_i64("phase", self.phase.to_i64());
        st.put_bool("gate_on", self.was_on);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let level = st.get_sample::<f64>("level")?;
        let from = st.get_sample::<f64>("from")?;
        let pos = st.get_u64("pos")?;
        let phase = Phase::from_i64(st.get_i64("phase")?, self.lengths.len())
            .ok_or(StateError::Kind("phase"))?;
        let was_on = st.get_bool("gate_on")?;
        self.level = level;
        self.from = from;
        self.pos = pos;
        self.phase = phase;
        self.was_on = was_on;
        Ok(())
    }
}

/// The envelope's breakpoints as the scene gives them (or the defaults).
struct Breakpoints {
    levels: Vec<f64>,
    times: Vec<f64>,
    curves: Vec<f64>,
    exponential: bool,
    sustain: Option<usize>,
    looping: Option<usize>,
}

fn gains(values: &[Value], i: usize) -> &[f64] {
    match values.get(i) {
        Some(Value::Gains(g)) => g,
        _ => &[],
    }
}

fn integer(values: &[Value], i: usize) -> i64 {
    match values.get(i) {
        Some(Value::Integer(v)) => *v,
        _ => -1,
    }
}

/// Reads and checks the breakpoints: a clear message for each mistake.
fn breakpoints(values: &[Value]) -> Result<Breakpoints, String> {
    let given_levels = gains(values, LEVELS);
    let given_times = gains(values, TIMES);
    let levels = if given_levels.is_empty() {
        DEFAULT_LEVELS.to_vec()
    } else {
        given_levels.to_vec()
    };
    let times = if given_times.is_empty() && given_levels.is_empty() {
        DEFAULT_TIMES.to_vec()
    } else {
        given_times.to_vec()
    };
    if levels.len() < 2 {
        return Err(format!(
            "`levels` has {} entry; an envelope needs at least 2 (one segment)",
            levels.len()
        ));
    }
    let segments = levels.len() - 1;
    if times.len() != segments {
        return Err(format!(
            "`times` has {} entries; `levels` has {}, so its {segments} segments need {segments} times",
            times.len(),
            levels.len()
        ));
    }
    if let Some(k) = times.iter().position(|t| *t < 0.0) {
        return Err(format!("`times[{k}]` = {} is negative", times[k]));
    }
    let curves = gains(values, CURVES).to_vec();
    if curves.len() > segments {
        return Err(format!(
            "`curves` has {} entries; there are only {segments} segments",
            curves.len()
        ));
    }
    let exponential = matches!(values.get(EXPONENTIAL), Some(Value::Bool(true)));
    let sustain = integer(values, SUSTAIN);
    let looping = integer(values, LOOP);
    if sustain > segments as i64 {
        return Err(format!(
            "`sustain` = {sustain} is past the last node ({segments}); give a node 0 … {segments}, or -1 for none"
        ));
    }
    if looping >= 0 && !(sustain >= 0 && looping < sustain) {
        return Err(format!(
            "`loop` = {looping} needs a `sustain` node after it (sustain is {sustain}); the loop runs from node `loop` to node `sustain` while the gate is on"
        ));
    }
    Ok(Breakpoints {
        levels,
        times,
        curves,
        exponential,
        sustain: usize::try_from(sustain).ok(),
        looping: usize::try_from(looping).ok(),
    })
}

/// Exponential segments whose levels make them play linear.
fn lints(values: &[Value], _sample_rate: f64) -> Vec<Lint> {
    let Ok(b) = breakpoints(values) else {
        return Vec::new();
    };
    if !b.exponential {
        return Vec::new();
    }
    b.levels
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] * w[1] <= 0.0)
        .map(|(k, w)| Lint {
            param: "levels",
            message: format!(
                "exponential segment {k} goes from {} to {}: an exponential segment needs both levels nonzero and of one sign, so it plays linear",
                w[0], w[1]
            ),
            help: Some("use a small level such as 0.001 instead of 0, or `curves` (e.g. -4) instead of `exponential`".to_string()),
            held: None,
        })
        .collect()
}

struct EnvOp;
impl Operator for EnvOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let b = breakpoints(cx.values)?;
        let shapes = (0..b.times.len())
            .map(|k| {
                if b.exponential {
                    Shape::Exponential
                } else {
                    Shape::Curve(b.curves.get(k).or(b.curves.last()).copied().unwrap_or(0.0))
                }
            })
            .collect();
        let l0 = b.levels[0];
        Ok(Box::new(Env::<S, M> {
            lengths: b.times.iter().map(|t| t * cx.sample_rate).collect(),
            levels: b.levels,
            shapes,
            sustain: b.sustain,
            looping: b.looping,
            level: l0,
            from: l0,
            pos: 0,
            phase: Phase::Idle,
            was_on: false,
            _p: PhantomData,
        }))
    }
}

const fn array(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Gains,
        doc,
        settable_by_events: false,
    }
}

const fn node(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Integer {
            default: -1,
            min: -1,
            max: 1024,
        },
        doc,
        settable_by_events: false,
    }
}

/// `env`: a multi-segment envelope with sustain and loop nodes.
pub(crate) static ENV: OpSpec = OpSpec {
    name: "env",
    doc: "Multi-segment envelope (SuperCollider's Env): levels L0…Ln, segment k from L(k) to \
          L(k+1) in times[k] s, shaped by curves[k] (curvature c: a + (b−a)·(1−e^(c·t))/(1−e^c); \
          0 linear) or, with `exponential`, a·(b/a)^t. A rising gate (> 0.5) starts segment 0 from \
          the current level; the envelope holds at node `sustain` (or loops from node `loop`) while \
          the gate is on, and a falling gate plays on from there.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        array("levels", "the node levels L0 … Ln; default [0, 1, 0]"),
        array(
            "times",
            "seconds per segment (one fewer than levels); default [0.01, 0.5]",
        ),
        array(
            "curves",
            "curvature per segment (0 linear, < 0 fast start, > 0 slow start); a shorter list repeats its last entry; default all 0",
        ),
        ParamSpec {
            name: "exponential",
            kind: ParamKind::Bool { default: false },
            doc: "every segment exponential, a·(b/a)^t (levels nonzero, of one sign)",
            settable_by_events: false,
        },
        node(
            "sustain",
            "the node held while the gate is on; -1 none (the envelope runs through once per trigger)",
        ),
        node(
            "loop",
            "the node the envelope loops back to on reaching `sustain` while the gate is on; -1 none",
        ),
        crate::ops::number(
            "gate",
            Dimension::Scalar,
            0.0,
            -1e6,
            1e6,
            "on while > 0.5; a rising edge (re)starts the envelope",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints,
    cost: |p, _| by_profile(p, [5.5, 5.7, 4.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<EnvOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{values_with, NodeRunner};

    /// A binary rate: `n / SR` seconds is exactly `n` samples.
    const SR: f64 = 1024.0;

    fn samples(n: u32) -> f64 {
        n as f64 / SR
    }

    fn runner(params: &[(&str, Value)], profile: Profile) -> NodeRunner {
        NodeRunner::new(&ENV, values_with(&ENV, params), profile, None, SR, 256, 0).unwrap()
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

    /// SuperCollider's curvature formula, written out in the test.
    fn sc_curve(a: f64, b: f64, c: f64, t: f64) -> f64 {
        if c.abs() < 0.001 {
            a + (b - a) * t
        } else {
            a + (b - a) * (1.0 - libm::exp(c * t)) / (1.0 - libm::exp(c))
        }
    }

    #[test]
    fn each_segment_follows_its_formula_at_each_sample() {
        // Three segments of 10, 20 and 40 samples: a curved
        // rise, a linear fall and a concave fall; no sustain.
        let levels = vec![0.0, 1.0, 0.25, 0.0];
        let times = vec![samples(10), samples(20), samples(40)];
        let curves = vec![-4.0, 0.0, 3.0];
        let mut node = runner(
            &[
                ("levels", Value::Gains(levels.clone())),
                ("times", Value::Gains(times.clone())),
                ("curves", Value::Gains(curves.clone())),
            ],
            Profile::Strict,
        );
        let frames = 100;
        let g = gate(frames, &[(5, 6)]);
        let out = node.run(&[], &[(GATE, g)], frames, &[7]);
        // The oracle: sample 5 is the first of segment 0, at t = 1/10.
        let mut want = vec![0.0; frames];
        let mut start = 5;
        for k in 0..3 {
            let n = (times[k] * SR).round() as usize;
            for j in 1..=n {
                want[start + j - 1] =
                    sc_curve(levels[k], levels[k + 1], curves[k], j as f64 / n as f64);
            }
            start += n;
        }
        for i in 0..frames {
            assert!(
                (out[0][i] - want[i]).abs() <= 1e-12,
                "frame {i}: {} vs {}",
                out[0][i],
                want[i]
            );
        }
        // Each segment ends exactly on its level.
        assert_eq!(out[0][14], 1.0);
        assert_eq!(out[0][34], 0.25);
        assert_eq!(out[0][74], 0.0);
    }

    #[test]
    fn exponential_segments_are_geometric() {
        let mut node = runner(
            &[
                ("levels", Value::Gains(vec![0.001, 1.0, 0.01])),
                ("times", Value::Gains(vec![samples(8), samples(16)])),
                ("exponential", Value::Bool(true)),
            ],
            Profile::Strict,
        );
        let out = node.run(&[], &[(GATE, vec![1.0; 30])], 30, &[30]);
        for j in 1..=8 {
            let want = 0.001 * libm::pow(1000.0, j as f64 / 8.0);
            assert!(
                (out[0][j - 1] - want).abs() <= 1e-12 * want.max(1.0),
                "rise {j}"
            );
        }
        for j in 1..=16 {
            let want = 1.0 * libm::pow(0.01, j as f64 / 16.0);
            assert!((out[0][7 + j] - want).abs() <= 1e-12, "fall {j}");
        }
        assert_eq!(out[0][29], 0.01);
    }

    #[test]
    fn sustain_holds_while_the_gate_is_on_and_release_starts_from_the_level() {
        // ADSR-like: 0 → 1 (4 samples) → 0.5 (4) hold, → 0 (8).
        let set = [
            ("levels", Value::Gains(vec![0.0, 1.0, 0.5, 0.0])),
            (
                "times",
                Value::Gains(vec![samples(4), samples(4), samples(8)]),
            ),
            ("sustain", Value::Integer(2)),
        ];
        let mut node = runner(&set, Profile::Strict);
        let g = gate(40, &[(0, 20)]);
        let out = node.run(&[], &[(GATE, g)], 40, &[3]);
        let want_head = [0.25, 0.5, 0.75, 1.0, 0.875, 0.75, 0.625, 0.5];
        assert_eq!(&out[0][..8], &want_head);
        assert!(out[0][8..20].iter().all(|y| *y == 0.5));
        for j in 1..=8 {
            assert_eq!(out[0][19 + j], 0.5 - 0.5 * j as f64 / 8.0, "release {j}");
        }
        assert!(out[0][28..].iter().all(|y| *y == 0.0));
        // A gate closing mid-attack releases from the level reached.
        let mut node = runner(&set, Profile::Strict);
        let out = node.run(&[], &[(GATE, gate(12, &[(0, 2)]))], 12, &[12]);
        assert_eq!(out[0][1], 0.5);
        for j in 1..=8 {
            assert_eq!(out[0][1 + j], 0.5 - 0.5 * j as f64 / 8.0);
        }
    }

    #[test]
    fn a_loop_repeats_until_the_gate_closes_and_a_retrigger_starts_from_the_level() {
        // Nodes 0 … 3: loop from node 1 to node 3 (sustain), 2 samples a segment.
        let set = [
            ("levels", Value::Gains(vec![0.0, 1.0, 0.0, 1.0, 0.0])),
            ("times", Value::Gains(vec![samples(2); 4])),
            ("sustain", Value::Integer(3)),
            ("loop", Value::Integer(1)),
        ];
        let mut node = runner(&set, Profile::Strict);
        let out = node.run(&[], &[(GATE, gate(20, &[(0, 11)]))], 20, &[20]);
        // Rise, then (fall, rise) repeated; at sample 11 the release.
        let want = [
            0.5, 1.0, 0.5, 0.0, 0.5, 1.0, 0.5, 0.0, 0.5, 1.0, 0.5, // gate closes
            0.25, 0.0, 0.0,
        ];
        assert_eq!(&out[0][..14], &want);
        // Without a sustain node the envelope runs through once per rising
        // edge; a retrigger starts segment 0 from where it is.
        let set = [
            ("levels", Value::Gains(vec![0.0, 1.0, 0.0])),
            ("times", Value::Gains(vec![samples(4), samples(4)])),
        ];
        let mut node = runner(&set, Profile::Strict);
        let out = node.run(&[], &[(GATE, gate(12, &[(0, 1), (5, 6)]))], 12, &[12]);
        assert_eq!(&out[0][..5], &[0.25, 0.5, 0.75, 1.0, 0.75]);
        // Retriggered at 0.75: towards 1 in 4 samples.
        assert_eq!(&out[0][5..9], &[0.8125, 0.875, 0.9375, 1.0]);
    }

    #[test]
    fn block_sizes_and_precisions_agree_and_errors_name_the_param() {
        let set = [
            ("levels", Value::Gains(vec![0.0, 1.0, 0.3, 0.0])),
            ("times", Value::Gains(vec![0.0123, 0.05, 0.1])),
            ("curves", Value::Gains(vec![-3.0, 2.0])),
            ("sustain", Value::Integer(2)),
        ];
        let g = gate(400, &[(10, 150), (200, 220)]);
        let mut a = runner(&set, Profile::Strict);
        let want = a.run(&[], &[(GATE, g.clone())], 400, &[1]);
        for blocks in [vec![64], vec![4096], vec![3, 50, 17]] {
            let mut b = runner(&set, Profile::Strict);
            assert_eq!(b.run(&[], &[(GATE, g.clone())], 400, &blocks), want);
        }
        let mut f32 = NodeRunner::new(
            &ENV,
            values_with(&ENV, &set),
            Profile::Repro,
            Some(Precision::F32),
            SR,
            256,
            0,
        )
        .unwrap();
        let out = f32.run(&[], &[(GATE, g)], 400, &[64]);
        // The level is f64 at both; repro's std exp may differ from libm's
        // in the last bit before the rounding to f32.
        for (a, b) in out[0].iter().zip(&want[0]) {
            assert!((a - b).abs() <= 1e-7, "{a} vs {b}");
        }
        let bad = |set: &[(&str, Value)]| {
            NodeRunner::new(
                &ENV,
                values_with(&ENV, set),
                Profile::Strict,
                None,
                SR,
                64,
                0,
            )
            .err()
            .expect("an error")
        };
        let e = bad(&[
            ("levels", Value::Gains(vec![0.0, 1.0, 0.0])),
            ("times", Value::Gains(vec![0.1])),
        ]);
        assert!(e.contains("`times` has 1 entries"), "{e}");
        let e = bad(&[("loop", Value::Integer(1))]);
        assert!(e.contains("`loop` = 1 needs a `sustain` node"), "{e}");
        let e = bad(&[("sustain", Value::Integer(3))]);
        assert!(e.contains("`sustain` = 3 is past the last node (2)"), "{e}");
        // An exponential segment through 0 is a warning.
        let lints = (ENV.lints)(
            &values_with(&ENV, &[("exponential", Value::Bool(true))]),
            SR,
        );
        assert_eq!(lints.len(), 2);
        assert!(lints[0].message.contains("plays linear"));
    }
}
