//! `delay`: a fractional feedback delay line with linear interpolation.
//!
//! Per sample, with `x` the input and every param read at that sample:
//!
//! ```text
//! d   = clamp(time·sr, 1, max_delay)          (samples, f64)
//! wet = x[n−⌊d⌋] + f·(x'[n−⌊d⌋−1] − x'[n−⌊d⌋])  f = d − ⌊d⌋; x' = what was written
//! write  x + feedback·wet
//! out = (1 − mix)·x + mix·wet
//! ```
//!
//! where `max_delay = max(⌈max_time·sr⌉, 1)`; the ring holds `max_delay + 2`
//! samples, allocated at build. The line is read before it is written, so the
//! shortest delay is one sample. `feedback` is clamped to ±0.999 and `mix` to
//! 0…1 per sample (modulation cannot make the loop unstable). The state is
//! the ring and its write index; `reset` zeroes the ring in place.

use super::{
    build_any, by_profile, no_choices, number, BuildCtx, Held, Io, Lint, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError, Value,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;

const TIME: usize = DELAY.index_of("time");
const FEEDBACK: usize = DELAY.index_of("feedback");
const MIX: usize = DELAY.index_of("mix");
const MAX_TIME: usize = DELAY.index_of("max_time");

/// The largest |feedback|.
const MAX_FEEDBACK: f64 = 0.999;

/// The longest delay in samples of a ring for `max_time` seconds at
/// `sample_rate`: `max(⌈max_time·sr⌉, 1)`; an error past 2³² samples.
pub(super) fn max_delay_samples(max_time: f64, sample_rate: f64) -> Result<usize, String> {
    let samples = (max_time * sample_rate).ceil();
    if !(samples.is_finite() && samples >= 0.0 && samples < (1u64 << 32) as f64) {
        return Err(format!(
            "`max_time` = {max_time} s is too long at {sample_rate} Hz"
        ));
    }
    Ok((samples as usize).max(1))
}

/// The delay in samples a ring reads for `d`: held to 1 … `max_delay`
/// (NaN reads 1).
#[inline(always)]
fn held_delay(mut d: f64, max_delay: f64) -> f64 {
    if d.is_nan() || d < 1.0 {
        d = 1.0;
    }
    if d > max_delay {
        d = max_delay;
    }
    d
}

/// A ring of samples read at a fractional delay by linear interpolation:
/// `delay`'s line, and the modulated lines of `chorus` and `flanger`. A
/// delay of `max_delay` samples needs `max_delay + 2` slots; it is read
/// before the frame's input is written, so the shortest delay is 1 sample.
pub(super) struct Ring<S> {
    buf: Vec<S>,
    /// The slot the current input is written to.
    write: usize,
    /// The longest delay in samples (`buf.len() − 2`).
    max_delay: f64,
}

impl<S: Sample> Ring<S> {
    /// A silent ring for delays up to `max_time` seconds at `sample_rate`
    /// (at least 1 sample); allocates.
    pub(super) fn new(max_time: f64, sample_rate: f64) -> Result<Ring<S>, String> {
        let max_delay = max_delay_samples(max_time, sample_rate)?;
        Ok(Ring {
            buf: vec![S::ZERO; max_delay + 2],
            write: 0,
            max_delay: max_delay as f64,
        })
    }

    /// The line `d` samples back, clamped to 1 … `max_delay` (NaN reads
    /// 1): `x[n−⌊d⌋] + f·(x[n−⌊d⌋−1] − x[n−⌊d⌋])`, `f = d − ⌊d⌋`.
    #[inline]
    pub(super) fn read(&self, d: f64) -> S {
        self.read_held(held_delay(d, self.max_delay))
    }

    /// [`read`](Self::read) of a delay already held to 1 … `max_delay`
    /// ([`held`](Self::held)). `⌊d⌋` is the truncating conversion (d ≥ 1,
    /// so the same value, without a call to `floor`), and the two slots
    /// wrap by one comparison each instead of a division.
    #[inline]
    pub(super) fn read_held(&self, d: f64) -> S {
        let len = self.buf.len();
        let k = d as usize; // ⌊d⌋: 1 ≤ k ≤ len − 2
        let frac = S::from_f64(d - k as f64);
        // write + len − k < 2·len: at most one wrap.
        let mut ia = self.write + len - k;
        if ia >= len {
            ia -= len;
        }
        let ib = if ia == 0 { len - 1 } else { ia - 1 };
        let a = self.buf[ia];
        let b = self.buf[ib];
        a + frac * (b - a)
    }

    /// `d` held to 1 … `max_delay` (NaN reads 1), as [`read`](Self::read)
    /// holds it.
    #[inline]
    pub(super) fn held(&self, d: f64) -> f64 {
        held_delay(d, self.max_delay)
    }

    /// Writes this frame's sample and moves on to the next frame.
    #[inline]
    pub(super) fn push(&mut self, x: S) {
        self.buf[self.write] = x;
        self.write += 1;
        if self.write == self.buf.len() {
            self.write = 0;
        }
    }

    pub(super) fn reset(&mut self) {
        self.buf.fill(S::ZERO);
        self.write = 0;
    }

    /// This ring's share of a reset in parts; the write index returns to 0
    /// once the whole part sequence is done (see `rewind`).
    pub(super) fn zero_part(&mut self, part: &mut PartClear) {
        part.zero(&mut self.buf, S::ZERO);
    }

    /// The write index back to the start, after the last part of a reset.
    pub(super) fn rewind(&mut self) {
        self.write = 0;
    }

    /// The ring as `buf` and its write index as `write`.
    pub(super) fn snapshot(&self, st: &mut NodeState, buf: &'static str, write: &'static str) {
        st.put_samples(buf, &self.buf);
        st.put_u64(write, self.write as u64);
    }

    /// The part `[done, done + budget)` of the ring, oldest sample first
    /// from the write index at N (the next frame overwrites it), then the
    /// write index (at the first call); returns where the copy stands
    /// (complete when ≥ [`len`](Self::len)).
    pub(super) fn save_part(
        &self,
        st: &mut NodeState,
        buf: &'static str,
        write: &'static str,
        done: usize,
        budget: usize,
    ) -> usize {
        let start = if done == 0 {
            self.write
        } else {
            st.get_u64(write).map_or(self.write, |w| w as usize)
        };
        let next = st.put_ring_part(buf, &self.buf, start, done, budget);
        if done == 0 {
            st.put_u64(write, self.write as u64);
        }
        next
    }

    /// Slots in the ring (`max_delay + 2`).
    pub(super) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Reads what [`snapshot`](Self::snapshot) wrote (at either precision).
    pub(super) fn restore(
        &mut self,
        st: &NodeState,
        buf: &'static str,
        write: &'static str,
    ) -> Result<(), StateError> {
        let w = st.get_u64(write)?;
        if w >= self.buf.len() as u64 {
            return Err(StateError::Shape {
                name: write,
                expected: self.buf.len(),
                found: w as usize,
            });
        }
        st.get_samples(buf, &mut self.buf)?;
        self.write = w as usize;
        Ok(())
    }
}

/// `delay` at one precision.
struct Delay<S> {
    line: Ring<S>,
    sample_rate: f64,
}

/// One frame's params as a [`Delay`] applies them: the delay in samples
/// held to the ring, the feedback factor and the dry and wet gains.
#[derive(Clone, Copy)]
struct Taps<S> {
    delay: f64,
    feedback: S,
    dry: S,
    wet: S,
}

impl<S: Sample> Delay<S> {
    /// The [`Taps`] of `time` (seconds), `feedback` and `mix` (clamped,
    /// NaN read as 0).
    #[inline]
    fn taps(&self, time: f64, feedback: f64, mix: f64) -> Taps<S> {
        let fb = if feedback.is_nan() {
            0.0
        } else {
            feedback.clamp(-MAX_FEEDBACK, MAX_FEEDBACK)
        };
        let mix = if mix.is_nan() {
            0.0
        } else {
            mix.clamp(0.0, 1.0)
        };
        Taps {
            delay: self.line.held(time * self.sample_rate),
            feedback: S::from_f64(fb),
            dry: S::from_f64(1.0 - mix),
            wet: S::from_f64(mix),
        }
    }

    /// One sample.
    #[inline]
    fn tick(&mut self, x: S, t: &Taps<S>) -> S {
        let wet = self.line.read_held(t.delay);
        self.line.push(x + t.feedback * wet);
        t.dry * x + t.wet * wet
    }
}

impl<S: Sample> NodeProcessor<S> for Delay<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let (time, feedback, mix) = (
            io.params.get(TIME),
            io.params.get(FEEDBACK),
            io.params.get(MIX),
        );
        let x = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        if time.is_const() && feedback.is_const() && mix.is_const() {
            let t = self.taps(time.value(), feedback.value(), mix.value());
            for (o, x) in out.iter_mut().zip(x) {
                *o = self.tick(*x, &t);
            }
        } else {
            for (i, (o, x)) in out.iter_mut().zip(x).enumerate() {
                let t = self.taps(time.at(i), feedback.at(i), mix.at(i));
                *o = self.tick(*x, &t);
            }
        }
    }

    fn reset(&mut self) {
        self.line.reset();
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.line.snapshot(st, "buffer", "write");
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        self.line.zero_part(&mut part);
        let p = part.progress();
        if p == Progress::Done {
            self.line.rewind();
        }
        p
    }

    /// The ring, oldest sample first from the write index at N (the next
    /// frame overwrites it), then the write index.
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        let next = self.line.save_part(st, "buffer", "write", done, budget);
        if next >= self.line.len() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.line.restore(st, "buffer", "write")
    }
}

struct DelayOp;
impl Operator for DelayOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Delay::<S> {
            line: Ring::new(cx.number(MAX_TIME), cx.sample_rate)?,
            sample_rate: cx.sample_rate,
        }))
    }
}

/// `delay`: fractional feedback delay; see the module docs for the rules.
/// A `time` longer than `max_time` (the buffer's length): the delay is
/// clamped to `max_time` (what it plays is the ring's own clamp, in
/// seconds).
fn delay_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    let (Some(time), Some(max)) = (values[TIME].as_number(), values[MAX_TIME].as_number()) else {
        return Vec::new();
    };
    if time <= max {
        return Vec::new();
    }
    let held = max_delay_samples(max, sample_rate).ok().map(|m| Held {
        plays: held_delay(time * sample_rate, m as f64) / sample_rate,
        why: format!("max_time is {max} s"),
    });
    vec![Lint {
        param: "time",
        message: format!(
            "`time` {time} s is longer than `max_time` {max} s: the delay is clamped to max_time ({max} s)"
        ),
        help: Some(format!("raise `max_time` to at least {time} s (it sizes the buffer), or shorten `time`")),
        held,
    }]
}

pub(crate) static DELAY: OpSpec = OpSpec {
    name: "delay",
    doc: "Fractional delay line with linear interpolation and feedback: \
          out = (1−mix)·in + mix·wet, the line is fed in + feedback·wet. \
          `time` is clamped to 1 sample … max_time.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "time",
            Dimension::Time,
            0.25,
            0.0,
            3600.0,
            "delay time (clamped to 1 sample … max_time)",
        ),
        number(
            "feedback",
            Dimension::Scalar,
            0.0,
            -MAX_FEEDBACK,
            MAX_FEEDBACK,
            "fraction of the delayed signal fed back into the line",
        ),
        number(
            "mix",
            Dimension::Scalar,
            0.5,
            0.0,
            1.0,
            "wet fraction of the output (0 dry, 1 wet only)",
        ),
        ParamSpec {
            name: "max_time",
            kind: ParamKind::Number {
                dim: Dimension::Time,
                default: 2.0,
                min: 0.0,
                max: 60.0,
                modulatable: false,
            },
            doc: "longest delay; sets the buffer size at build",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: delay_lints,
    cost: |p, _| by_profile(p, [3.3, 3.2, 2.8]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<DelayOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::Value;

    /// 2^15 Hz: times that are binary fractions give exact sample counts.
    const SR: f64 = 32768.0;

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
            &DELAY,
            values_with(&DELAY, &set),
            profile,
            Some(precision),
            SR,
            512,
            1,
        )
        .unwrap()
    }

    #[test]
    fn integer_delay_shifts_exactly() {
        let frames = 3000;
        let x = test_signal(1, frames);
        for (time, d) in [
            (128.0 / SR, 128usize),
            (1.0 / SR, 1),
            (0.0, 1),
            (1000.0 / SR, 1000),
        ] {
            for precision in [Precision::F64, Precision::F32] {
                let mut r = runner(
                    &[
                        ("time", time),
                        ("feedback", 0.0),
                        ("mix", 1.0),
                        ("max_time", 0.05),
                    ],
                    precision,
                );
                let out = r.run(std::slice::from_ref(&x), &[], frames, &[100, 7]);
                for n in 0..frames {
                    let want = if n >= d { x[n - d] } else { 0.0 };
                    let want = match precision {
                        Precision::F64 => want,
                        Precision::F32 => want as f32 as f64,
                    };
                    assert_eq!(out[0][n], want, "d {d} frame {n} {precision:?}");
                }
            }
        }
    }

    #[test]
    fn delay_at_max_time() {
        // max_time of exactly 64 samples: a 100-sample request is clamped to 64.
        let x = test_signal(2, 400);
        let mut r = runner(
            &[("time", 100.0 / SR), ("mix", 1.0), ("max_time", 64.0 / SR)],
            Precision::F64,
        );
        let out = r.run(std::slice::from_ref(&x), &[], 400, &[64]);
        for n in 64..400 {
            assert_eq!(out[0][n], x[n - 64]);
        }
    }

    #[test]
    fn fractional_delay_interpolates_linearly() {
        let frames = 1000;
        let x = test_signal(3, frames);
        // 128.25 samples exactly.
        let mut r = runner(&[("time", 128.25 / SR), ("mix", 1.0)], Precision::F64);
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[64]);
        let at = |k: isize| if k >= 0 { x[k as usize] } else { 0.0 };
        for n in 0..frames as isize {
            let want = 0.75 * at(n - 128) + 0.25 * at(n - 129);
            assert!((out[0][n as usize] - want).abs() <= 1e-15, "frame {n}");
        }
    }

    #[test]
    fn echoes_decay_by_the_feedback_factor() {
        let frames = 2000;
        let mut x = vec![0.0; frames];
        x[0] = 1.0;
        for fb in [0.5, -0.6, 0.9] {
            let mut r = runner(
                &[("time", 125.0 / SR), ("feedback", fb), ("mix", 1.0)],
                Precision::F64,
            );
            let out = r.run(std::slice::from_ref(&x), &[], frames, &[77]);
            let mut expect = 1.0;
            for (n, y) in out[0].iter().enumerate() {
                if n > 0 && n % 125 == 0 {
                    assert!(
                        (y - expect).abs() <= 1e-12 * expect.abs().max(1e-300),
                        "fb {fb} n {n}"
                    );
                    expect *= fb;
                } else {
                    assert_eq!(*y, 0.0, "fb {fb} n {n}");
                }
            }
        }
    }

    #[test]
    fn mix_blends_dry_and_wet() {
        let frames = 500;
        let x = test_signal(4, frames);
        let mut r = runner(&[("time", 10.0 / SR), ("mix", 0.25)], Precision::F64);
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[64]);
        for n in 0..frames {
            let wet = if n >= 10 { x[n - 10] } else { 0.0 };
            assert!((out[0][n] - (0.75 * x[n] + 0.25 * wet)).abs() <= 1e-15);
        }
    }

    #[test]
    fn reset_zeroes_the_line() {
        let x = test_signal(5, 300);
        let mut r = runner(&[("time", 50.0 / SR), ("feedback", 0.5)], Precision::F64);
        let first = r.run(std::slice::from_ref(&x), &[], 300, &[64]);
        r.reset();
        let second = r.run(std::slice::from_ref(&x), &[], 300, &[64]);
        assert_eq!(first, second);
    }

    #[test]
    fn rejects_a_huge_max_time_at_a_huge_rate() {
        let r = NodeRunner::new(
            &DELAY,
            values_with(&DELAY, &[("max_time", Value::Number(60.0))]),
            Profile::Strict,
            None,
            1e9,
            64,
            1,
        );
        assert!(r.is_err());
    }
}
