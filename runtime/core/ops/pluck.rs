//! `pluck`: a Karplus–Strong plucked string, tuned by a first-order
//! allpass to a fraction of a sample.
//!
//! The string is a delay line fed its own output through a loop filter.
//! With `L = clamp(sr/freq, 2.5, sr/20)` the loop's length in samples,
//! `a = (1 − brightness)/4`, and the line's taps `y[n−k]` (read before the
//! frame's sample is written), per sample:
//!
//! ```text
//! N   = ⌊L − 3⁄2⌋,  f = L − 1 − N ∈ [½, 3⁄2)
//! lp  = a·y[n−N] + (1 − 2a)·y[n−N−1] + a·y[n−N−2]     (linear phase: N + 1 samples)
//! ap  = η·lp + lp[n−1] − η·ap[n−1]                     (phase delay f at the fundamental)
//! y   = in + burst + g·ap
//! ```
//!
//! - **Tuning.** The loop filter's three taps are symmetric, so it delays
//!   every partial by exactly `N + 1` samples; the allpass supplies the
//!   rest, its coefficient `η = sin((1 − f)·ω/2) / sin((1 + f)·ω/2)` set
//!   for a phase delay of exactly `f` at the fundamental `ω = 2π/L` (a
//!   Thiran allpass's `(1 − f)/(1 + f)` is exact only at DC, a few cents
//!   off at 4 kHz). The loop's phase at `ω` is then exactly `2π`.
//! - **Damping's pull.** A loop that loses more at higher frequencies
//!   rings slightly flat of its phase's frequency (by up to half a cent
//!   for a dark note at 3 kHz). The line is shortened by
//!   `δ = ln(g·H(ω))/L · (H′(ω)/H(ω)) / ω` samples (both factors negative), `H′(ω) = −2a·sin ω`
//!   (the pole's shift off the unit circle, to first order): `N` and `f`
//!   are taken from `L − δ` (at least 2.5) and `η` still for the fundamental `ω`.
//! - **Decay.** The fundamental loses `10^(−3/(decay·freq))` per pass, so
//!   it falls 60 dB in `decay` seconds: `g = 10^(−3·L/(decay·sr)) / H(ω)`
//!   with `H(ω) = 1 − 2a + 2a·cos ω` the loop filter's gain there. `g` is
//!   held to 0.99999, the loop's gain at DC: a note too high and dark for
//!   its decay loses at least `H(ω)` per pass and rings shorter (brightness
//!   0 at 3.3 kHz: about 1400 dB/s, whatever `decay` says). Partial `k` loses `g·H(k·ω)` per pass: `brightness` 1 lets
//!   every partial ring as long as the fundamental; 0 damps them as the
//!   classic two-point average does.
//! - **Excitation.** A rising edge of `trigger` (≤ 0 to > 0, by an event,
//!   a signal or a voice's gate) starts a burst of `⌊L⌉` samples of
//!   white noise times `amp`: word `n` of `noise`'s stream 0 at absolute
//!   sample `n`, mapped as `noise` maps it; so strict renders are
//!   bit-exact. The `in` port adds to the burst (a string excited by any
//!   signal). A new edge during a burst restarts it.
//!
//! Every coefficient is recomputed when `freq`, `decay` or `brightness`
//! changes (from one sample to the next, when modulated). The state is the
//! line, its write index, the loop filter's and allpass's last values,
//! the trigger's level and the burst's remaining length.

use super::fracline::Line;
use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError,
};
use crate::dsp::rng::NoiseStream;
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const FREQ: usize = PLUCK.index_of("freq");
const DECAY: usize = PLUCK.index_of("decay");
const BRIGHTNESS: usize = PLUCK.index_of("brightness");
const AMP: usize = PLUCK.index_of("amp");
const TRIGGER: usize = PLUCK.index_of("trigger");

/// The lowest note the line is sized for, in Hz.
pub(super) const LOWEST_HZ: f64 = 20.0;
/// The shortest loop in samples (the allpass's fraction at least ½ and `N` ≥ 1).
const SHORTEST: f64 = 2.5;
/// The largest loop gain.
pub(super) const MAX_LOOP_GAIN: f64 = 0.99999;

/// The loop's coefficients for one setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Tuning {
    /// The line's first tap.
    pub(super) n: usize,
    /// The loop filter's outer tap (`(1 − brightness)/4`).
    pub(super) a: f64,
    /// The allpass coefficient.
    pub(super) eta: f64,
    /// The loop gain.
    pub(super) g: f64,
    /// The loop's length in samples (for the burst).
    pub(super) len: f64,
}

/// The coefficients for `freq`, `decay`, `brightness` at `sample_rate` (see
/// the module docs); `longest` is the longest loop the line holds.
pub(super) fn tuning<M: Math>(
    freq: f64,
    decay: f64,
    brightness: f64,
    sample_rate: f64,
    longest: f64,
) -> Tuning {
    let mut len = sample_rate / freq;
    if len.is_nan() || len > longest {
        len = longest;
    }
    if len < SHORTEST {
        len = SHORTEST;
    }
    let w = 2.0 * core::f64::consts::PI / len;
    let b = if brightness.is_nan() {
        1.0
    } else {
        brightness.clamp(0.0, 1.0)
    };
    let a = 0.25 * (1.0 - b);
    let h = 1.0 - 2.0 * a + 2.0 * a * M::coef_cos(w);
    let decay = if decay > 1e-6 { decay } else { 1e-6 };
    let per_pass = M::coef_pow(10.0, -3.0 * len / (decay * sample_rate));
    let mut g = per_pass / h;
    if g.is_nan() || g > MAX_LOOP_GAIN {
        g = MAX_LOOP_GAIN;
    }
    // A loop whose gain falls with frequency rings a little below the
    // frequency its phase says: shorten it by that much.
    let slope = -2.0 * a * M::coef_sin(w) / h;
    let mut loop_len = len - M::coef_ln(g * h) / len * slope / w;
    if loop_len.is_nan() || loop_len < SHORTEST {
        loop_len = SHORTEST;
    }
    let n = (loop_len - 1.5).floor();
    let f = loop_len - 1.0 - n;
    let eta = M::coef_sin((1.0 - f) * w * 0.5) / M::coef_sin((1.0 + f) * w * 0.5);
    Tuning {
        n: n as usize,
        a,
        eta,
        g,
        len,
    }
}

/// `pluck` at one precision.
struct Pluck<S, M> {
    line: Line<S>,
    noise: NoiseStream,
    sample_rate: f64,
    /// The longest loop in samples.
    longest: f64,
    /// The setting `tuning` was computed for, and its coefficients at `S`.
    key: [f64; 3],
    tuning: Tuning,
    coef: [S; 4],
    lp_prev: S,
    ap_prev: S,
    trigger_high: bool,
    burst_left: u64,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Pluck<S, M> {
    #[inline]
    fn retune(&mut self, freq: f64, decay: f64, brightness: f64) {
        let key = [freq, decay, brightness];
        if key
            .iter()
            .zip(&self.key)
            .all(|(a, b)| a.to_bits() == b.to_bits())
        {
            return;
        }
        self.key = key;
        self.tuning = tuning::<M>(freq, decay, brightness, self.sample_rate, self.longest);
        let t = &self.tuning;
        self.coef = [
            S::from_f64(t.a),
            S::from_f64(1.0 - 2.0 * t.a),
            S::from_f64(t.eta),
            S::from_f64(t.g),
        ];
    }

    #[inline(always)]
    fn tick(&mut self, n: u64, x: S, amp: f64, trigger: f64) -> S {
        let high = trigger > 0.0;
        if high && !self.trigger_high {
            self.burst_left = (self.tuning.len + 0.5).floor() as u64;
        }
        self.trigger_high = high;
        let mut x = x;
        if self.burst_left > 0 {
            self.burst_left -= 1;
            x += S::from_f64(amp) * self.noise.sample::<S>(n);
        }
        let [a, mid, eta, g] = self.coef;
        let k = self.tuning.n;
        let lp = a * (self.line.tap(k) + self.line.tap(k + 2)) + mid * self.line.tap(k + 1);
        let ap = eta * lp + self.lp_prev - eta * self.ap_prev;
        self.lp_prev = lp;
        self.ap_prev = ap;
        let y = x + g * ap;
        self.line.push(y);
        y
    }

    fn clear_small(&mut self) {
        self.lp_prev = S::ZERO;
        self.ap_prev = S::ZERO;
        self.trigger_high = false;
        self.burst_left = 0;
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Pluck<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let frames = io.frames;
        let p = |i| io.params.get(i);
        let (freq, decay, bright, amp, trig) =
            (p(FREQ), p(DECAY), p(BRIGHTNESS), p(AMP), p(TRIGGER));
        let start = io.start;
        let x = &io.inputs[0][..frames];
        let out = &mut io.outputs[0][..frames];
        if freq.is_const() && decay.is_const() && bright.is_const() {
            self.retune(freq.value(), decay.value(), bright.value());
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                *o = self.tick(start + i as u64, *x, amp.at(i), trig.at(i));
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                self.retune(freq.at(i), decay.at(i), bright.at(i));
                *o = self.tick(start + i as u64, *x, amp.at(i), trig.at(i));
            }
        }
    }

    fn reset(&mut self) {
        self.line.reset();
        self.clear_small();
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        self.line.zero_part(&mut part);
        let p = part.progress();
        if p == Progress::Done {
            self.line.rewind();
            self.clear_small();
        }
        p
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.line.snapshot(st);
        self.put_small(st);
    }

    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        if done == 0 {
            self.put_small(st);
        }
        let next = self.line.save_part(st, done, budget);
        if next >= self.line.len() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.line.restore(st)?;
        self.lp_prev = st.get_sample("lp_prev")?;
        self.ap_prev = st.get_sample("ap_prev")?;
        self.trigger_high = st.get_bool("trigger_high")?;
        self.burst_left = st.get_u64("burst_left")?;
        Ok(())
    }
}

impl<S: Sample, M: Math> Pluck<S, M> {
    fn put_small(&self, st: &mut NodeState) {
        st.put_sample("lp_prev", self.lp_prev);
        st.put_sample("ap_prev", self.ap_prev);
        st.put_bool("trigger_high", self.trigger_high);
        st.put_u64("burst_left", self.burst_left);
    }
}

/// The longest loop in samples at `sample_rate`: `sr/20 Hz`.
pub(super) fn longest_loop(sample_rate: f64) -> f64 {
    (sample_rate / LOWEST_HZ).max(SHORTEST + 1.0)
}

struct PluckOp;
impl Operator for PluckOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let longest = longest_loop(cx.sample_rate);
        if longest.is_nan() || longest >= (1u64 << 32) as f64 {
            return Err(format!("the sample rate {} Hz is too high", cx.sample_rate));
        }
        let mut node = Pluck::<S, M> {
            // Taps reach N + 2 ≤ L + ½.
            line: Line::new(longest.ceil() as usize + 2),
            noise: NoiseStream::new(cx.noise_hash, 0),
            sample_rate: cx.sample_rate,
            longest,
            key: [f64::NAN; 3],
            tuning: tuning::<M>(220.0, 1.0, 0.5, cx.sample_rate, longest),
            coef: [S::ZERO; 4],
            lp_prev: S::ZERO,
            ap_prev: S::ZERO,
            trigger_high: false,
            burst_left: 0,
            _m: PhantomData,
        };
        node.retune(cx.number(FREQ), cx.number(DECAY), cx.number(BRIGHTNESS));
        Ok(Box::new(node))
    }
}

/// `pluck`: a Karplus–Strong string; see the module docs.
pub(crate) static PLUCK: OpSpec = OpSpec {
    name: "pluck",
    doc: "Karplus–Strong plucked string: a rising edge of `trigger` (≤ 0 to > 0; a voice's gate) \
          excites it with a period of white noise times `amp` (plus `in`); it rings at `freq`, \
          tuned to a fraction of a sample by an allpass, the fundamental falling 60 dB in \
          `decay`; `brightness` 1 lets the upper partials ring as long, 0 damps them as the \
          classic two-point average does.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "freq",
            Dimension::Frequency,
            220.0,
            LOWEST_HZ,
            20000.0,
            "the string's pitch (held to at most 1/2.5 of the sample rate)",
        ),
        number(
            "decay",
            Dimension::Time,
            1.0,
            0.001,
            100.0,
            "time for the fundamental to fall 60 dB",
        ),
        number(
            "brightness",
            Dimension::Scalar,
            0.5,
            0.0,
            1.0,
            "0 damps the upper partials most, 1 lets them ring as long as the fundamental",
        ),
        number(
            "amp",
            Dimension::Amplitude,
            1.0,
            -1e6,
            1e6,
            "the noise burst's peak amplitude",
        ),
        number(
            "trigger",
            Dimension::Scalar,
            0.0,
            -1e6,
            1e6,
            "plucks where it rises from ≤ 0 to > 0",
        ),
        ParamSpec {
            name: "seed",
            kind: ParamKind::Integer {
                default: 0,
                min: 0,
                max: i64::MAX,
            },
            doc: "local seed of the burst's noise, mixed with the global seed and the node id",
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
    cost: |p, _| by_profile(p, [7.3, 7.3, 7.7]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<PluckOp>,
};

#[cfg(test)]
#[path = "pluck_tests.rs"]
mod tests;
