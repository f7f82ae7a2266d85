//! `phaser`: `stages` first-order allpass filters in series, their break
//! frequency swept by the LFO, with feedback around the chain. Per frame
//! and channel, every param read at that frame:
//!
//! ```text
//! f_b = clamp(center·2^(depth·sin(2π·phase + ch)), 1 Hz, 0.49·sr)   ch = 0 left, `phase` right
//! t   = tan(π·f_b/sr),  a = (t − 1)/(t + 1)
//! A(z) = (a + z^−1)/(1 + a·z^−1)        each stage: phase −2·atan(tan(ω/2)/t), −π/2 at f_b
//! u   = x + feedback·y,  y = A^N(u)      (the loop solved exactly within the frame)
//! out = (1 − mix)·x + mix·y
//! ```
//!
//! Each stage runs in transposed direct form II (`y = a·u + s`,
//! `s ← u − a·y`). The chain is linear in `u` (`y = G·u + C`, `G = a^N`, `C`
//! from the states), so the feedback loop needs no extra sample of delay:
//! `u = (x + feedback·C)/(1 − feedback·G)`, and the notches stay where the
//! allpass phase puts them. At `mix` 0.5 and `feedback` ≥ 0 the output has
//! N/2 notches, where the chain's phase is an odd multiple of π:
//! `f_k = (sr/π)·atan(t·tan((2k+1)·π/(2N)))`, k = 0 … N/2−1.

use super::{clamp_or, mix_param, phase_param, rate_param, Sweep, MAX_FEEDBACK};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, number, BuildCtx, Io, Lint, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const RATE: usize = PHASER.index_of("rate");
const DEPTH: usize = PHASER.index_of("depth");
const CENTER: usize = PHASER.index_of("center");
const STAGES: usize = PHASER.index_of("stages");
const FEEDBACK: usize = PHASER.index_of("feedback");
const PHASE: usize = PHASER.index_of("phase");
const MIX: usize = PHASER.index_of("mix");

const MAX_STAGES: usize = 12;
/// The break frequency's lowest value (Hz) and highest (× the sample rate).
const MIN_BREAK: f64 = 1.0;
const MAX_BREAK_RATIO: f64 = 0.49;

struct Phaser<S, M> {
    /// The stages' states: left in `0..stages`, right in `stages..2·stages`.
    s: [S; 2 * MAX_STAGES],
    stages: usize,
    sweep: Sweep,
    _math: PhantomData<fn() -> M>,
}

/// The allpass coefficient `a` for break frequency `center·2^(depth·lfo)`.
#[inline]
fn coefficient<M: Math>(center: f64, depth: f64, lfo: f64, sample_rate: f64) -> f64 {
    let f = center * M::coef_exp(core::f64::consts::LN_2 * depth * lfo);
    let f = clamp_or(f, MIN_BREAK, MAX_BREAK_RATIO * sample_rate, MIN_BREAK);
    let t = M::coef_tan(core::f64::consts::PI * f / sample_rate);
    (t - 1.0) / (t + 1.0)
}

/// One frame of one channel's chain with feedback (see the module docs).
#[inline]
fn chain<S: Sample>(s: &mut [S], a: S, fb: S, x: S) -> S {
    let (mut g, mut c) = (S::ONE, S::ZERO);
    for z in s.iter() {
        g = a * g;
        c = a * c + *z;
    }
    let mut y = (x + fb * c) / (S::ONE - fb * g);
    for z in s.iter_mut() {
        let out = a * y + *z;
        *z = y - a * out;
        y = out;
    }
    y
}

impl<S: Sample, M: Math> NodeProcessor<S> for Phaser<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let params = [RATE, DEPTH, CENTER, FEEDBACK, PHASE, MIX];
        let (sl, sr_states) = self.s[..2 * self.stages].split_at_mut(self.stages);
        let offsets = |p: &[f64; 6], out: &mut [f64]| {
            out[0] = 0.0;
            out[1] = p[4];
        };
        self.sweep
            .process::<S, M>(io, params, 2, offsets, |x, f, lfo| {
                let [center, feedback] = f.own;
                let fb = S::from_f64(clamp_or(feedback, -MAX_FEEDBACK, MAX_FEEDBACK, 0.0));
                let (depth, sr) = (f.depth, f.sample_rate);
                let al = coefficient::<M>(center, depth, lfo[0], sr);
                let ar = coefficient::<M>(center, depth, lfo[1], sr);
                let yl = chain(sl, S::from_f64(al), fb, x);
                let yr = chain(sr_states, S::from_f64(ar), fb, x);
                (yl, yr)
            });
    }

    fn reset(&mut self) {
        self.s = [S::ZERO; 2 * MAX_STAGES];
        self.sweep.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_samples("allpass", &self.s[..2 * self.stages]);
        self.sweep.snapshot(st);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let phase = Sweep::read(st)?;
        st.get_samples("allpass", &mut self.s[..2 * self.stages])?;
        self.sweep.set(phase);
        Ok(())
    }
}

/// The number of stages, or why it is not one: an even 2 … 12.
fn stages(v: &Value) -> Result<usize, String> {
    match *v {
        Value::Integer(n) if (2..=MAX_STAGES as i64).contains(&n) && n % 2 == 0 => Ok(n as usize),
        Value::Integer(n) => Err(format!(
            "`stages` = {n} is not an even number of stages from 2 to {MAX_STAGES} (2, 4, 6, … \
             {MAX_STAGES}): the notches come in pairs of stages"
        )),
        ref other => Err(format!("`stages` takes an integer, not {other:?}")),
    }
}

struct PhaserOp;
impl Operator for PhaserOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Phaser::<S, M> {
            s: [S::ZERO; 2 * MAX_STAGES],
            stages: stages(&cx.values[STAGES])?,
            sweep: Sweep::new(cx.sample_rate),
            _math: PhantomData,
        }))
    }
}

/// A sweep that leaves 1 Hz … 0.49 × the sample rate: the break frequency
/// is held at the edge.
fn phaser_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    let (Some(center), Some(depth)) = (values[CENTER].as_number(), values[DEPTH].as_number())
    else {
        return Vec::new();
    };
    let (lo, hi) = (
        center * libm::exp2(-depth.abs()),
        center * libm::exp2(depth.abs()),
    );
    let top = MAX_BREAK_RATIO * sample_rate;
    let mut out = Vec::new();
    if hi > top {
        out.push(Lint {
            param: "depth",
            message: format!(
                "the sweep reaches {hi} Hz (`center` {center} Hz · 2^{depth}), above 0.49 × the \
                 sample rate ({top} Hz): the break frequency is held at {top} Hz there"
            ),
            help: Some("lower `center` or `depth`, or raise the scene's sample_rate".into()),
            held: None,
        });
    }
    if lo < MIN_BREAK {
        out.push(Lint {
            param: "depth",
            message: format!(
                "the sweep reaches down to {lo} Hz (`center` {center} Hz · 2^−{depth}): the \
                 break frequency is held at {MIN_BREAK} Hz there"
            ),
            help: Some("raise `center` or lower `depth`".into()),
            held: None,
        });
    }
    out
}

pub(crate) static PHASER: OpSpec = OpSpec {
    name: "phaser",
    doc: "Phaser: `stages` first-order allpass filters in series, their break frequency (where \
          each shifts the phase by 90°) swept by a sine LFO over center·2^(±depth), with \
          `feedback` around the chain (solved within the frame: no extra delay). At mix 0.5 the \
          dry and allpassed signals cancel in stages/2 notches that sweep with the LFO. \
          out = (1−mix)·in + mix·wet; the right channel's LFO runs `phase` ahead of the left's.",
    inputs: &["in"],
    outputs: &["out", "out_r"],
    params: &[
        rate_param(0.5),
        number(
            "depth",
            Dimension::Scalar,
            2.0,
            0.0,
            6.0,
            "the sweep's half-width in octaves: the break frequency runs over center·2^(±depth)",
        ),
        number(
            "center",
            Dimension::Frequency,
            800.0,
            20.0,
            20000.0,
            "the break frequency at the LFO's midpoint (the sweep's geometric centre)",
        ),
        ParamSpec {
            name: "stages",
            kind: ParamKind::Integer {
                default: 4,
                min: 2,
                max: MAX_STAGES as i64,
            },
            doc: "allpass stages, an even number (stages/2 notches)",
            settable_by_events: false,
        },
        number(
            "feedback",
            Dimension::Scalar,
            0.0,
            -MAX_FEEDBACK,
            MAX_FEEDBACK,
            "fraction of the chain's output fed back into its input (resonant peaks between the \
             notches, which stay put, fb/(2·(1+fb)) deep at mix 0.5; below about −0.6 they turn \
             into peaks)",
        ),
        phase_param(),
        mix_param(),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: phaser_lints,
    // benches/costs.md: per channel and frame, the LFO's sine and the
    // coefficient's exp and tan, then two passes over the stages.
    cost: |p, v| {
        let n = match v.get(STAGES) {
            Some(Value::Integer(n)) => *n as f64,
            _ => 4.0,
        };
        by_profile(p, [190.0, 145.0, 93.0]) + n * by_profile(p, [9.0, 6.0, 7.0])
    },
    algorithms: None,
    build: build_any::<PhaserOp>,
};
