//! `sampler`: plays an audio file (a resource) at a variable rate, from a
//! start offset, optionally looping a region forward or ping-pong, pitched
//! by a note.
//!
//! The play position is a signed 32.32 fixed-point frame index, advanced by
//! `round(speed · 2^32)` per sample with `speed = rate · pitch / root` (the
//! increment computed in f64 once per change; `pitch` and `root` default
//! to the same note, so the speed is `rate` exactly), so position never
//! drifts and migrates exactly between precisions. Output at position
//! `p = i + f` (frame `i`, fraction `f`) is `amp · (s[i] + f·(s[i+1] − s[i]))`,
//! where outside the file `s` is 0, and inside a forward loop the frame
//! after the loop's last is its first. `out` plays channel 0 and `out_r`
//! channel 1 (channel 0 again for a mono file).
//!
//! **Start and loops.** `start`, `loop_start`, `loop_end` (0: the file's
//! end) and `crossfade` are seconds, rounded to whole frames at build, the
//! loop at least one frame long. Playback starts at `start`. Not looping,
//! any position outside `[0, frames)` is silence, and the position stops
//! one frame past either end (so a negative rate later plays back from the
//! end). Looping forward, a position before the loop (from a `start`
//! before `loop_start`) plays on into it, and one that leaves the loop
//! wraps modulo its length; ping-pong, it reflects at the loop's first and
//! last frames and the direction turns (state: snapshotted). With the
//! defaults the loop is the whole file, as a sampler without loop points.
//!
//! **Crossfade.** A forward loop's seam jumps from the loop's last frame
//! to its first, a click unless the material matches. With `crossfade` of
//! `X` frames (at most `loop_start` and the loop's length), a position `p`
//! in the loop's last `X` frames plays `(1 − w)·s(p) + w·s(p − len)`,
//! `w = (p − (loop_end − X)) / X`, `len` the loop's length: the end fades
//! into the frames just before `loop_start`, which lead into `loop_start`
//! itself, so the output is continuous across the wrap.
//!
//! `trigger` restarts playback: at a sample where it rises from ≤ 0 to > 0
//! (static value plus its port, so an event or a signal edge alike) the
//! position returns to `start` before that sample is read, so the sample
//! plays from there exactly at that sample. Whether the trigger was high
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
const LOOP_MODE: usize = SAMPLER.index_of("loop_mode");
const START: usize = SAMPLER.index_of("start");
const LOOP_START: usize = SAMPLER.index_of("loop_start");
const LOOP_END: usize = SAMPLER.index_of("loop_end");
const CROSSFADE: usize = SAMPLER.index_of("crossfade");
const PITCH: usize = SAMPLER.index_of("pitch");
const ROOT: usize = SAMPLER.index_of("root");

/// One frame in 32.32 fixed point.
const ONE_FRAME: i64 = 1 << 32;
/// 2^32 as f64 (exact).
const TWO_POW_32: f64 = 4294967296.0;
/// 2^-32 as f64 (exact).
const TWO_POW_NEG_32: f64 = 1.0 / 4294967296.0;

/// The pitch of MIDI note 60 (middle C), 440 · 2^(−9/12) Hz: the default
/// of `pitch` and `root`, whose ratio is then exactly 1.
pub(crate) const MIDDLE_C_HZ: f64 = 261.625_565_300_598_6;

/// The `loop_mode` choices, in index order.
const LOOP_MODES: &[&str] = &["forward", "ping_pong"];

/// Where a node loops, in 32.32 fixed point (whole frames), from its static
/// params and the file's length.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Region {
    /// Where playback starts (and `trigger` restarts it).
    start: i64,
    /// The loop's first frame.
    ls: i64,
    /// One past the loop's last frame.
    le: i64,
    /// The crossfade's length before `le`.
    xfade: i64,
}

impl Region {
    /// `start`, `loop_start`, `loop_end` (0: the file's end) and
    /// `crossfade` in seconds at `sample_rate`, for a file of `frames`.
    fn new(values: &[Value], sample_rate: f64, frames: i64) -> Region {
        let at = |i: usize| -> i64 {
            let s = match values.get(i) {
                Some(Value::Number(v)) => *v,
                _ => 0.0,
            };
            let n = (s * sample_rate).round();
            if n.is_finite() && n > 0.0 {
                (n as i64).min(frames)
            } else {
                0
            }
        };
        let le = match at(LOOP_END) {
            0 => frames,
            n => n,
        };
        let ls = at(LOOP_START).min((le - 1).max(0));
        let xfade = at(CROSSFADE).min(ls).min(le - ls);
        Region {
            start: at(START) << 32,
            ls: ls << 32,
            le: le << 32,
            xfade: xfade << 32,
        }
    }
}

/// `sampler` at one precision.
struct Sampler<S> {
    left: Vec<S>,
    /// Channel 1, or `None` for a mono file (`out_r` repeats `out`).
    right: Option<Vec<S>>,
    looping: bool,
    /// Ping-pong rather than forward looping.
    ping_pong: bool,
    /// Playing backwards after an odd number of ping-pong turns.
    backwards: bool,
    region: Region,
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

    /// Channel value at position `pos`, before `amp`: linear between frame
    /// `i` and the next one, which inside a forward loop is the loop's
    /// first frame after its last.
    #[inline]
    fn read_at(&self, data: &[S], pos: i64) -> S {
        if pos < 0 || pos >= self.end {
            return S::ZERO;
        }
        let i = (pos >> 32) as usize;
        let f = S::from_f64((pos & (ONE_FRAME - 1)) as f64 * TWO_POW_NEG_32);
        let a = data[i];
        let r = self.region;
        let next =
            if self.looping && !self.ping_pong && pos >= r.ls && i + 1 == (r.le >> 32) as usize {
                (r.ls >> 32) as usize
            } else {
                i + 1
            };
        let b = match data.get(next) {
            Some(b) => *b,
            None => S::ZERO,
        };
        a + f * (b - a)
    }

    /// Channel value at the current position, crossfaded near a forward
    /// loop's end with the frames as far before its start.
    #[inline]
    fn read(&self, data: &[S]) -> S {
        let a = self.read_at(data, self.pos);
        let r = self.region;
        let fade_from = r.le - r.xfade;
        if r.xfade == 0 || !self.looping || self.ping_pong || self.pos < fade_from.max(r.ls) {
            return a;
        }
        let b = self.read_at(data, self.pos - (r.le - r.ls));
        let w = S::from_f64((self.pos - fade_from) as f64 / r.xfade as f64);
        a + w * (b - a)
    }

    /// A forward loop's position `p` reached from `from`: a position before
    /// the loop plays on into it (from `start`), anything past its ends
    /// wraps into it.
    #[inline]
    fn wrap(&self, p: i64, from: i64) -> i64 {
        let r = self.region;
        let lo = r.start.min(r.ls);
        if p >= r.le || p < lo || (from >= r.ls && p < r.ls) {
            r.ls + (p - r.ls).rem_euclid(r.le - r.ls)
        } else {
            p
        }
    }

    /// A ping-pong loop's position `p` reached from `from`: reflected at
    /// the loop's first and last frames, turning the direction at each.
    #[inline]
    fn fold(&mut self, p: i64, from: i64) -> i64 {
        let r = self.region;
        let last = r.le - ONE_FRAME;
        if from < r.ls && p >= r.start.min(r.ls) && p < r.ls {
            return p;
        }
        let span = last - r.ls;
        if span <= 0 {
            return r.ls;
        }
        let q = (p - r.ls).rem_euclid(2 * span);
        if q <= span {
            r.ls + q
        } else {
            self.backwards = !self.backwards;
            r.ls + 2 * span - q
        }
    }

    /// The position held to where the node may play: inside its loop (or
    /// before it, from `start`) when looping, else within one frame of the
    /// file's ends.
    fn confine(&mut self, pos: i64) -> i64 {
        if !self.looping || self.end == 0 {
            return pos.clamp(-ONE_FRAME, self.end);
        }
        if self.ping_pong {
            self.fold(pos, pos)
        } else {
            self.wrap(pos, pos)
        }
    }

    #[inline]
    fn advance(&mut self) {
        if self.end == 0 {
            return;
        }
        let step = if self.backwards { -self.inc } else { self.inc };
        let p = self.pos + step;
        self.pos = if !self.looping {
            p.clamp(-ONE_FRAME, self.end)
        } else if self.ping_pong {
            self.fold(p, self.pos)
        } else {
            self.wrap(p, self.pos)
        };
    }

    /// Restarts from `start` on a rising edge of `trigger` (≤ 0 to > 0; NaN
    /// counts as low).
    #[inline]
    fn trigger(&mut self, trigger: f64) {
        let high = trigger > 0.0;
        if high && !self.trigger_high {
            self.backwards = false;
            self.pos = self.confine(self.region.start);
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
        let (pitch, root) = (io.params.get(PITCH), io.params.get(ROOT));
        let (left, right) = io.outputs.split_at_mut(1);
        let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
        let steady = [rate, amp, trigger, pitch, root];
        if steady.iter().all(|p| p.is_const()) {
            // A constant trigger can only rise at the block's first frame.
            self.trigger(trigger.value());
            let r = rate.value() * (pitch.value() / root.value());
            let a = S::from_f64(amp.value());
            for i in 0..n {
                (left[i], right[i]) = self.tick(r, a);
            }
        } else {
            for i in 0..n {
                self.trigger(trigger.at(i));
                let r = rate.at(i) * (pitch.at(i) / root.at(i));
                (left[i], right[i]) = self.tick(r, S::from_f64(amp.at(i)));
            }
        }
    }

    fn reset(&mut self) {
        self.backwards = false;
        self.pos = self.confine(self.region.start);
        self.trigger_high = false;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_i64("position", self.pos);
        st.put_bool("trigger_high", self.trigger_high);
        st.put_bool("backwards", self.backwards);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let pos = st.get_i64("position")?;
        // A snapshot from before `trigger` or ping-pong existed has no edge
        // state (low) and no direction (forwards).
        let missing_is_false = |name| match st.get_bool(name) {
            Err(StateError::Missing(_)) => Ok(false),
            other => other,
        };
        self.trigger_high = missing_is_false("trigger_high")?;
        self.backwards = missing_is_false("backwards")? && self.looping && self.ping_pong;
        self.pos = self.confine(pos);
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        match (param, value) {
            (LOOP, Value::Bool(looping)) => self.looping = *looping,
            (LOOP_MODE, Value::Enum(i)) if *i < LOOP_MODES.len() => self.ping_pong = *i == 1,
            _ => return,
        }
        if !(self.looping && self.ping_pong) {
            self.backwards = false;
        }
        if self.looping {
            self.pos = self.confine(self.pos);
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
        let ping_pong = matches!(cx.values.get(LOOP_MODE), Some(Value::Enum(1)));
        let rate = cx.number(RATE);
        let mut node = Sampler::<S> {
            left,
            right,
            looping,
            ping_pong,
            backwards: false,
            region: Region::new(cx.values, cx.sample_rate, frames as i64),
            pos: 0,
            end: (frames as i64) << 32,
            inc: Sampler::<S>::increment(rate),
            rate,
            trigger_high: false,
        };
        node.reset();
        Ok(Box::new(node))
    }
}

/// A time param read once at build (not a port).
const fn static_time(name: &'static str, max: f64, doc: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Number {
            dim: Dimension::Time,
            default: 0.0,
            min: 0.0,
            max,
            modulatable: false,
        },
        doc,
        settable_by_events: false,
    }
}

/// `sampler`: plays an audio file at a variable rate, optionally looping.
pub(crate) static SAMPLER: OpSpec = OpSpec {
    name: "sampler",
    doc: "Plays a WAV resource from `start` at `rate` · pitch/root (1 = original speed, \
          negative = backwards), linearly interpolated, times `amp`; silence after the end \
          unless `loop`. Looping repeats `loop_start` … `loop_end` (the whole file by \
          default), forward or ping-pong; a forward loop may crossfade its last `crossfade` \
          seconds with as many before `loop_start`, so the seam does not click. A rising \
          edge of `trigger` (from ≤ 0 to > 0, by an event or a signal) restarts it from \
          `start` at exactly that sample. In a voice module, point `note.pitch` at `pitch`: \
          the sample plays at its recorded pitch on the note `root`. `out` is channel 0, \
          `out_r` channel 1 (channel 0 for mono files).",
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
            doc: "repeat the loop (loop_start … loop_end) instead of stopping at the end",
            settable_by_events: true,
        },
        number("amp", Dimension::Amplitude, 1.0, -1e6, 1e6, "output gain"),
        number(
            "trigger",
            Dimension::Scalar,
            0.0,
            -1e6,
            1e6,
            "restarts from `start` where it rises from ≤ 0 to > 0",
        ),
        ParamSpec {
            name: "loop_mode",
            kind: ParamKind::Enum {
                choices: LOOP_MODES,
                default: "forward",
            },
            doc:
                "forward: from loop_end back to loop_start; ping_pong: back and forth between them",
            settable_by_events: false,
        },
        static_time(
            "start",
            1e5,
            "where playback starts and `trigger` restarts it, from the file's start",
        ),
        static_time(
            "loop_start",
            1e5,
            "the loop's first frame, from the file's start",
        ),
        static_time(
            "loop_end",
            1e5,
            "the end of the loop (its last frame + 1); 0 = the file's end",
        ),
        static_time(
            "crossfade",
            10.0,
            "a forward loop's last crossfade seconds fade into as many before loop_start \
             (at most loop_start and the loop's length)",
        ),
        number(
            "pitch",
            Dimension::Frequency,
            MIDDLE_C_HZ,
            1.0,
            1e5,
            "the pitch to play (a voice's note.pitch); the speed is rate · pitch / root",
        ),
        number(
            "root",
            Dimension::Frequency,
            MIDDLE_C_HZ,
            1.0,
            1e5,
            "the pitch the sample was recorded at (\"60midi\" is middle C, the default)",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [9.1, 7.8, 7.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<SamplerOp>,
};

#[cfg(test)]
#[path = "sampler_loop_tests.rs"]
mod loop_tests;

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
