//! `sampler`: plays an audio file (a resource) at a variable rate.
//!
//! The play position is a signed 32.32 fixed-point frame index, advanced by
//! `round(rate · 2^32)` per sample (the increment computed in f64 once per
//! rate change), so position never drifts and migrates exactly between
//! precisions. Output at position `p = i + f` (frame `i`, fraction `f`) is
//! `amp · (s[i] + f·(s[i+1] − s[i]))`, where outside the file `s` is 0 (not
//! looping) or wraps (looping). Not looping, any position outside
//! `[0, frames)` is silence, and the position stops one frame past either end
//! (so a negative rate later plays back from the end); looping, it wraps
//! modulo the file length. `out` plays channel 0 and `out_r` channel 1
//! (channel 0 again for a mono file).
//!
//! `trigger` restarts playback: at a sample where it rises from ≤ 0 to > 0
//! (static value plus its port, so an event or a signal edge alike) the
//! position returns to frame 0 before that sample is read, so the sample
//! plays from its first frame exactly there. Whether the trigger was high
//! at the last sample is state (snapshotted), so an edge across a block
//! boundary, a handover or a resume is seen once.

use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;

const FILE: usize = SAMPLER.index_of("file");
const RATE: usize = SAMPLER.index_of("rate");
const LOOP: usize = SAMPLER.index_of("loop");
const AMP: usize = SAMPLER.index_of("amp");
const TRIGGER: usize = SAMPLER.index_of("trigger");

/// One frame in 32.32 fixed point.
const ONE_FRAME: i64 = 1 << 32;
/// 2^32 as f64 (exact).
const TWO_POW_32: f64 = 4294967296.0;
/// 2^-32 as f64 (exact).
const TWO_POW_NEG_32: f64 = 1.0 / 4294967296.0;

/// `sampler` at one precision.
struct Sampler<S> {
    left: Vec<S>,
    /// Channel 1, or `None` for a mono file (`out_r` repeats `out`).
    right: Option<Vec<S>>,
    looping: bool,
    /// Position in 32.32 fixed-point frames.
    pos: i64,
    /// The file length in 32.32 fixed point.
    end: i64,
    /// Increment per sample for `rate`, recomputed when the rate changes.
    inc: i64,
    rate: f64,
    /// Whether `trigger` was > 0 at the previous sample.
    trigger_high: bool,
}

impl<S: Sample> Sampler<S> {
    /// The fixed-point increment for `rate` (non-finite rates stop).
    #[inline]
    fn increment(rate: f64) -> i64 {
        let v = (rate * TWO_POW_32).round();
        if v.is_finite() {
            // The param range keeps |v| ≤ 2^36; saturate for modulation.
            v.clamp(-(1i64 << 40) as f64, (1i64 << 40) as f64) as i64
        } else {
            0
        }
    }

    #[inline]
    fn set_rate(&mut self, rate: f64) {
        // Bitwise comparison: a NaN rate is recomputed once, not every sample.
        if rate.to_bits() != self.rate.to_bits() {
            self.rate = rate;
            self.inc = Self::increment(rate);
        }
    }

    /// Channel value at the current position, before `amp`.
    #[inline]
    fn read(&self, data: &[S]) -> S {
        if self.pos < 0 || self.pos >= self.end {
            return S::ZERO;
        }
        let i = (self.pos >> 32) as usize;
        let f = S::from_f64((self.pos & (ONE_FRAME - 1)) as f64 * TWO_POW_NEG_32);
        let a = data[i];
        let b = match data.get(i + 1) {
            Some(b) => *b,
            None if self.looping => data[0],
            None => S::ZERO,
        };
        a + f * (b - a)
    }

    #[inline]
    fn advance(&mut self) {
        if self.end == 0 {
            return;
        }
        let p = self.pos + self.inc;
        self.pos = if self.looping {
            p.rem_euclid(self.end)
        } else {
            p.clamp(-ONE_FRAME, self.end)
        };
    }

    /// Restarts from frame 0 on a rising edge of `trigger` (≤ 0 to > 0; NaN
    /// counts as low).
    #[inline]
    fn trigger(&mut self, trigger: f64) {
        let high = trigger > 0.0;
        if high && !self.trigger_high {
            self.pos = 0;
        }
        self.trigger_high = high;
    }

    /// One frame of both outputs.
    #[inline]
    fn tick(&mut self, rate: f64, amp: S) -> (S, S) {
        self.set_rate(rate);
        let l = amp * self.read(&self.left);
        let r = match &self.right {
            Some(right) => amp * self.read(right),
            None => l,
        };
        self.advance();
        (l, r)
    }
}

impl<S: Sample> NodeProcessor<S> for Sampler<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let rate = io.params.get(RATE);
        let amp = io.params.get(AMP);
        let trigger = io.params.get(TRIGGER);
        let (left, right) = io.outputs.split_at_mut(1);
        let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
        if rate.is_const() && amp.is_const() && trigger.is_const() {
            // A constant trigger can only rise at the block's first frame.
            self.trigger(trigger.value());
            let (r, a) = (rate.value(), S::from_f64(amp.value()));
            for i in 0..n {
                (left[i], right[i]) = self.tick(r, a);
            }
        } else {
            for i in 0..n {
                self.trigger(trigger.at(i));
                (left[i], right[i]) = self.tick(rate.at(i), S::from_f64(amp.at(i)));
            }
        }
    }

    fn reset(&mut self) {
        self.pos = 0;
        self.trigger_high = false;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_i64("position", self.pos);
        st.put_bool("trigger_high", self.trigger_high);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let pos = st.get_i64("position")?;
        // A snapshot from before `trigger` existed has no edge state: low.
        self.trigger_high = match st.get_bool("trigger_high") {
            Err(StateError::Missing(_)) => false,
            other => other?,
        };
        self.pos = if self.looping && self.end > 0 {
            pos.rem_euclid(self.end)
        } else {
            pos.clamp(-ONE_FRAME, self.end)
        };
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if let (LOOP, Value::Bool(looping)) = (param, value) {
            self.looping = *looping;
            if self.looping && self.end > 0 {
                self.pos = self.pos.rem_euclid(self.end);
            }
        }
    }
}

struct SamplerOp;
impl Operator for SamplerOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let Some(Value::Resource(file)) = cx.values.get(FILE) else {
            return Err("`file` must be an audio resource (\"@resource:NAME\")".to_string());
        };
        let frames = file.frames();
        if frames as u64 >= 1 << 30 {
            return Err(format!(
                "`{}` has {frames} frames; the sampler plays at most 2^30 − 1",
                file.path.display()
            ));
        }
        let convert = |c: &Vec<f64>| c.iter().map(|x| S::from_f64(*x)).collect::<Vec<S>>();
        let left = file.channels.first().map(convert).unwrap_or_default();
        let right = file.channels.get(1).map(convert);
        let looping = matches!(cx.values.get(LOOP), Some(Value::Bool(true)));
        let rate = cx.number(RATE);
        Ok(Box::new(Sampler::<S> {
            left,
            right,
            looping,
            pos: 0,
            end: (frames as i64) << 32,
            inc: Sampler::<S>::increment(rate),
            rate,
            trigger_high: false,
        }))
    }
}

/// `sampler`: plays an audio file at a variable rate, optionally looping.
pub(crate) static SAMPLER: OpSpec = OpSpec {
    name: "sampler",
    doc: "Plays a WAV resource from its first frame at `rate` (1 = original speed, negative = \
          backwards), linearly interpolated, times `amp`; silence after the end unless `loop`. \
          A rising edge of `trigger` (from ≤ 0 to > 0, by an event or a signal) restarts it from \
          the first frame at exactly that sample. `out` is channel 0, `out_r` channel 1 \
          (channel 0 for mono files). To loop without clicks, use a sample that starts and ends \
          at zero (cut at zero crossings, or with short fades in and out).",
    inputs: &[],
    outputs: &["out", "out_r"],
    params: &[
        ParamSpec {
            name: "file",
            kind: ParamKind::Resource,
            doc: "the audio file (\"@resource:NAME\"), at the scene's sample rate",
            settable_by_events: false,
        },
        number(
            "rate",
            Dimension::Scalar,
            1.0,
            -16.0,
            16.0,
            "playback speed (frames per sample)",
        ),
        ParamSpec {
            name: "loop",
            kind: ParamKind::Bool { default: false },
            doc: "wrap around at the ends instead of stopping",
            settable_by_events: true,
        },
        number("amp", Dimension::Amplitude, 1.0, -1e6, 1e6, "output gain"),
        number(
            "trigger",
            Dimension::Scalar,
            0.0,
            -1e6,
            1e6,
            "restarts from the first frame where it rises from ≤ 0 to > 0",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [6.8, 5.5, 5.5]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<SamplerOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::AudioData;
    use std::sync::Arc;

    fn audio(channels: Vec<Vec<f64>>) -> Arc<AudioData> {
        Arc::new(AudioData {
            path: "t.wav".into(),
            sample_rate: 48000,
            channels,
        })
    }

    fn file_data(n: usize, seed: u64) -> Vec<f64> {
        crate::ops::conformance::test_signal(seed, n)
    }

    fn runner(file: Arc<AudioData>, set: &[(&str, Value)], precision: Precision) -> NodeRunner {
        let mut params = vec![("file", Value::Resource(file))];
        params.extend(set.iter().cloned());
        let profile = match precision {
            Precision::F64 => Profile::Strict,
            Precision::F32 => Profile::Repro,
        };
        NodeRunner::new(
            &SAMPLER,
            values_with(&SAMPLER, &params),
            profile,
            Some(precision),
            48000.0,
            256,
            0,
        )
        .unwrap()
    }

    #[test]
    fn rate_one_reproduces_the_file_then_silence() {
        let l = file_data(500, 1);
        let r = file_data(500, 2);
        let mut node = runner(audio(vec![l.clone(), r.clone()]), &[], Precision::F64);
        let out = node.run(&[], &[], 800, &[33]);
        for n in 0..800 {
            let (wl, wr) = if n < 500 { (l[n], r[n]) } else { (0.0, 0.0) };
            assert_eq!((out[0][n], out[1][n]), (wl, wr), "frame {n}");
        }
        // f32: the file rounded to f32.
        let mut node = runner(audio(vec![l.clone()]), &[], Precision::F32);
        let out = node.run(&[], &[], 600, &[64]);
        for n in 0..600 {
            let want = if n < 500 { l[n] as f32 as f64 } else { 0.0 };
            assert_eq!(out[0][n], want);
            assert_eq!(out[1][n], want, "mono: out_r repeats out");
        }
    }

    #[test]
    fn half_rate_interpolates_midpoints() {
        let l = file_data(100, 3);
        let mut node = runner(
            audio(vec![l.clone()]),
            &[("rate", Value::Number(0.5))],
            Precision::F64,
        );
        let out = node.run(&[], &[], 200, &[7]);
        for k in 0..100 {
            assert_eq!(out[0][2 * k], l[k]);
            let next = if k + 1 < 100 { l[k + 1] } else { 0.0 };
            let mid = (l[k] + next) / 2.0;
            assert!((out[0][2 * k + 1] - mid).abs() <= 1e-15, "k {k}");
        }
    }

    #[test]
    fn looping_wraps() {
        let l = file_data(37, 4);
        let mut node = runner(
            audio(vec![l.clone()]),
            &[("loop", Value::Bool(true)), ("amp", Value::Number(0.5))],
            Precision::F64,
        );
        let out = node.run(&[], &[], 200, &[64]);
        for n in 0..200 {
            assert_eq!(out[0][n], 0.5 * l[n % 37]);
        }
        // At rate 1.5 the position between the last and the first frame
        // interpolates across the seam.
        let mut node = runner(
            audio(vec![l.clone()]),
            &[("loop", Value::Bool(true)), ("rate", Value::Number(1.5))],
            Precision::F64,
        );
        let out = node.run(&[], &[], 200, &[64]);
        for (n, y) in out[0].iter().enumerate() {
            let p = n as f64 * 1.5 % 37.0;
            let i = p.floor() as usize;
            let f = p - i as f64;
            let want = l[i] + f * (l[(i + 1) % 37] - l[i]);
            assert!((y - want).abs() <= 1e-15, "frame {n}");
        }
    }

    #[test]
    fn negative_rate_plays_backwards_through_a_loop() {
        let l = file_data(10, 5);
        let mut node = runner(
            audio(vec![l.clone()]),
            &[("loop", Value::Bool(true)), ("rate", Value::Number(-1.0))],
            Precision::F64,
        );
        let out = node.run(&[], &[], 25, &[4]);
        for n in 0..25 {
            assert_eq!(out[0][n], l[(10 - n % 10) % 10], "frame {n}");
        }
        // Not looping, reverse from the start is silence at once.
        let mut node = runner(
            audio(vec![l]),
            &[("rate", Value::Number(-1.0))],
            Precision::F64,
        );
        let out = node.run(&[], &[], 5, &[5]);
        assert_eq!(out[0][1..], [0.0; 4]);
    }

    #[test]
    fn loop_event_and_restore() {
        let l = file_data(20, 6);
        let mut node = runner(audio(vec![l.clone()]), &[], Precision::F64);
        node.run(&[], &[], 30, &[30]);
        let st = node.snapshot();
        // Past the end, not looping: the position is parked one frame past.
        assert_eq!(st.get_i64("position").unwrap(), 20 << 32);
        node.node().set_discrete(LOOP, &Value::Bool(true));
        let out = node.run(&[], &[], 5, &[5]);
        assert_eq!(out[0], l[..5]);
    }

    /// A rising `trigger` edge in the sampler's signal restarts the file at
    /// exactly that sample.
    #[test]
    fn a_trigger_signal_edge_restarts_at_that_sample() {
        let l = file_data(500, 7);
        // Low, high 150..200, low, high again from 320 (rises at 150 and 320).
        let trig: Vec<f64> = (0..800)
            .map(|n| {
                if (150..200).contains(&n) || n >= 320 {
                    1.0
                } else {
                    -0.5
                }
            })
            .collect();
        let want = |n: usize| {
            let start = if n >= 320 {
                320
            } else if n >= 150 {
                150
            } else {
                0
            };
            l.get(n - start).copied().unwrap_or(0.0)
        };
        for blocks in [vec![1], vec![7], vec![64], vec![256], vec![3, 150, 17]] {
            let mut node = runner(audio(vec![l.clone()]), &[], Precision::F64);
            let out = node.run(&[], &[(TRIGGER, trig.clone())], 800, &blocks);
            assert_eq!(out[0].len(), 800);
            for (n, y) in out[0].iter().enumerate() {
                assert_eq!(*y, want(n), "frame {n}, blocks {blocks:?}");
            }
        }
    }

    /// A static trigger that goes high between blocks (as an event sets
    /// it) restarts at the next block's first frame; staying high does not
    /// restart again, and the edge state survives snapshot → restore.
    #[test]
    fn a_trigger_param_edge_restarts_once_and_survives_a_snapshot() {
        let l = file_data(300, 8);
        let mut node = runner(audio(vec![l.clone()]), &[], Precision::F64);
        node.run(&[], &[], 100, &[100]);
        node.param_state(TRIGGER).value = 1.0;
        let out = node.run(&[], &[], 50, &[50]);
        assert_eq!(out[0], l[..50], "restarted at the edge");
        let st = node.snapshot();
        assert!(st.get_bool("trigger_high").unwrap());
        // A fresh node restored from the snapshot, trigger still high: no
        // second restart, playback continues from frame 50.
        let mut other = runner(audio(vec![l.clone()]), &[], Precision::F64);
        other.node().restore(&st).unwrap();
        other.param_state(TRIGGER).value = 1.0;
        let out = other.run(&[], &[], 50, &[50]);
        assert_eq!(out[0], l[50..100]);
    }

    #[test]
    fn missing_file_is_an_error() {
        let r = NodeRunner::new(
            &SAMPLER,
            values_with(&SAMPLER, &[]),
            Profile::Strict,
            None,
            48000.0,
            64,
            0,
        );
        assert!(r.is_err());
    }
}
