//! `compressor`: a feed-forward compressor with a soft knee, a sidechain
//! key and lookahead.
//!
//! Per sample, with every param read at that sample (dB params in dB):
//!
//! ```text
//! key   = sidechain if an edge feeds it, else in
//! level = detector(key)                      (super::detector: peak or RMS, attack/release)
//! x     = 20·log10(level)                    (dB)
//! over  = x − threshold
//! gr    = 0                                  if 2·over < −knee
//!       = (1/ratio − 1)·(over + knee/2)² / (2·knee)   if 2·|over| ≤ knee (knee > 0)
//!       = (1/ratio − 1)·over                 otherwise
//! gain  = 10^(gr/20)                         (≤ 1; 1 = no reduction)
//! out   = in[n − lookahead] · gain · 10^(makeup/20)
//! ```
//!
//! `gr` is the standard quadratic soft knee: the static curve is the
//! identity below `threshold − knee/2`, slope 1/ratio above
//! `threshold + knee/2`, and a parabola joining them with matching slopes.
//! `attack` and `release` are the detector's time constants: a step of the
//! detected level covers 1 − 1/e of its change in that time. `lookahead`
//! delays `in` (not the key) by `round(lookahead·sr)` samples, which the
//! node reports as its latency: the plan delays the paths that meet it by
//! the same, and the gain falls that long before the delayed signal's
//! transient arrives. `ratio` is clamped to ≥ 1, `knee` to ≥ 0 and the
//! times to ≥ 10 µs per sample under modulation.
//!
//! Strict and repro compute the curve as written, the level's log and the
//! gain's exp through libm (repro too: the platform's functions differ
//! between systems), eight samples at a time in lanes that give libm's
//! bits ([`crate::dsp::strict_explog`]). Live
//! computes it in log2 units of amplitude, without a library call: the
//! polynomial `fast_log2` of the level, the same three pieces, the
//! polynomial `fast_exp2` of the result, in vector lanes over the block;
//! its gain is within 2e-8 relative of the exact one.
//!
//! The state is the detector's level (f64) and the lookahead ring of `in`.

use super::detector::Detector;
use super::follower::{mode, DETECTOR_PARAM};
use super::{db_to_lin, lin_to_db, lookahead_samples, DbCache, DB_TO_LN};
use crate::dsp::math::StrictMath;
use crate::dsp::math::{fast_exp2, fast_log2};
use crate::dsp::strict_explog::{exp_lanes, log_lanes, LANES};
use crate::dsp::vector::{at_level, Isa, SimdLevel};
use crate::dsp::{Math, MathKind, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const DETECTOR: usize = COMPRESSOR.index_of("detector");
const THRESHOLD: usize = COMPRESSOR.index_of("threshold");
const RATIO: usize = COMPRESSOR.index_of("ratio");
const KNEE: usize = COMPRESSOR.index_of("knee");
const ATTACK: usize = COMPRESSOR.index_of("attack");
const RELEASE: usize = COMPRESSOR.index_of("release");
const MAKEUP: usize = COMPRESSOR.index_of("makeup");
const LOOKAHEAD: usize = COMPRESSOR.index_of("lookahead");

/// The shortest attack and release, in seconds.
pub(super) const MIN_TIME: f64 = 1e-5;

/// The static curve's gain change in dB (≤ 0) at input level `x` dB: the
/// quadratic soft knee of the module docs.
#[inline]
pub(super) fn gain_db(x: f64, threshold: f64, ratio: f64, knee: f64) -> f64 {
    let over = x - threshold;
    let slope = 1.0 / ratio - 1.0;
    if 2.0 * over < -knee {
        0.0
    } else if knee > 0.0 && 2.0 * over.abs() <= knee {
        let k = over + 0.5 * knee;
        slope * k * k / (2.0 * knee)
    } else {
        slope * over
    }
}

/// `log2(10)/20`: dB → log2 units of amplitude.
const DB_TO_LOG2: f64 = core::f64::consts::LOG2_10 / 20.0;

/// The samples the detector, the gain and the output each run over in turn.
const CHUNK: usize = 64;

/// The curve's settings for one sample, and what follows from them.
#[derive(Clone, Copy)]
struct Curve {
    threshold: f64,
    ratio: f64,
    knee: f64,
    /// `10^((threshold − knee/2)/20)`: levels at or below it are not reduced.
    floor: f64,
    /// The curve in log2 units of amplitude, for [`Curve::fast_gain`]:
    /// the threshold, half the knee, the knee's upper edge over the
    /// threshold (−∞ for a hard knee), the knee parabola's factor
    /// `slope/(2·knee)` and `slope` = 1/ratio − 1.
    log2_threshold: f64,
    log2_half_knee: f64,
    log2_knee_top: f64,
    knee_factor: f64,
    slope: f64,
}

impl Curve {
    fn new<M: Math>(threshold: f64, ratio: f64, knee: f64) -> Curve {
        let ratio = if ratio.is_nan() { 1.0 } else { ratio.max(1.0) };
        let knee = if knee.is_nan() { 0.0 } else { knee.max(0.0) };
        let slope = 1.0 / ratio - 1.0;
        let k = knee * DB_TO_LOG2;
        Curve {
            threshold,
            ratio,
            knee,
            floor: db_to_lin::<M>(threshold - 0.5 * knee),
            log2_threshold: threshold * DB_TO_LOG2,
            log2_half_knee: 0.5 * k,
            log2_knee_top: if k > 0.0 { 0.5 * k } else { f64::NEG_INFINITY },
            knee_factor: if k > 0.0 { slope / (2.0 * k) } else { 0.0 },
            slope,
        }
    }

    /// The linear gain (≤ 1) at detected level `level`: under fast math
    /// [`Curve::fast_gain`], else through libm's ln and exp — under std
    /// math too, whose platform functions would give other bits on other
    /// systems and cannot run in lanes ([`crate::dsp::strict_explog`]).
    #[inline]
    fn gain<M: Math>(&self, level: f64) -> f64 {
        if M::KIND == MathKind::Fast {
            return self.fast_gain(level);
        }
        // Not `<=`: a NaN floor (a NaN threshold) takes the formula, which
        // then gives NaN → no reduction below.
        if level <= self.floor {
            return 1.0;
        }
        let gr = gain_db(
            lin_to_db::<StrictMath>(level),
            self.threshold,
            self.ratio,
            self.knee,
        );
        if gr.is_nan() {
            1.0
        } else {
            db_to_lin::<StrictMath>(gr)
        }
    }

    /// The same curve in log2 units, without a call or a branch (a loop of
    /// it vectorises): `2^gr` with `gr` from [`fast_log2`] of the level,
    /// through [`fast_exp2`]. Relative error ≤ 2e-8 of the exact gain (the
    /// two functions' own errors); a gain change below 2^−1000 stops there.
    /// A NaN anywhere in the curve gives 1, as [`Curve::gain`] does.
    #[inline(always)]
    fn fast_gain(&self, level: f64) -> f64 {
        let over = fast_log2(level) - self.log2_threshold;
        let u = over + self.log2_half_knee;
        let knee = self.knee_factor * u * u;
        let hard = self.slope * over;
        let gr = if over <= self.log2_knee_top {
            knee
        } else {
            hard
        };
        // ≤ 0 (NaN → 0), then no further down than the exponent reaches.
        let gr = if gr < 0.0 { gr } else { 0.0 };
        let gr = if gr > -1000.0 { gr } else { -1000.0 };
        let g = fast_exp2(gr);
        if level <= self.floor {
            1.0
        } else {
            g
        }
    }

    /// `gain[i]` = [`Curve::gain`] of `level[i]`; under fast math in
    /// vector lanes of the widest instruction set `simd` allows (the same
    /// bits at every one: no FMA).
    fn gains<M: Math>(&self, simd: SimdLevel, level: &[f64], gain: &mut [f64]) {
        if M::KIND != MathKind::Fast {
            #[cfg(target_arch = "x86_64")]
            match simd.isa() {
                // SAFETY: as for the fast gains below.
                Isa::Avx512 => return unsafe { strict_gains_avx512(self, level, gain) },
                Isa::Avx2 => return unsafe { strict_gains_avx2(self, level, gain) },
                Isa::Base => {}
            }
            return strict_gains(self, level, gain);
        }
        #[cfg(target_arch = "x86_64")]
        match simd.isa() {
            // SAFETY: a `SimdLevel` of AVX-512 is made only on a CPU that
            // has AVX2, AVX-512F and AVX-512DQ; one of AVX2 only where the
            // CPU has AVX2.
            Isa::Avx512 => return unsafe { fast_gains_avx512(self, level, gain) },
            Isa::Avx2 => return unsafe { fast_gains_avx2(self, level, gain) },
            Isa::Base => {}
        }
        let _ = simd;
        fast_gains(self, level, gain);
    }
}

/// [`Curve::gain`] under strict and std math of each level, the same bits, with
/// libm's `log` and `exp` in lanes ([`crate::dsp::strict_explog`]) and the
/// curve's branches as selects; the lanes outside those kernels' range
/// call libm. Levels at or below the floor take no logarithm.
#[inline(always)]
fn strict_gains(curve: &Curve, level: &[f64], gain: &mut [f64]) {
    let floor = curve.floor;
    let (threshold, ratio, knee) = (curve.threshold, curve.ratio, curve.knee);
    let mut levels = level.chunks_exact(LANES);
    let mut gains = gain.chunks_exact_mut(LANES);
    for (l, g) in (&mut levels).zip(&mut gains) {
        let l: &[f64; LANES] = l.try_into().expect("a chunk of LANES");
        if l.iter().fold(true, |below, &l| below & (l <= floor)) {
            g.fill(1.0);
            continue;
        }
        let below: [bool; LANES] = std::array::from_fn(|i| l[i] <= floor);
        // A level that takes no logarithm gives it an argument in range.
        let x: [f64; LANES] = std::array::from_fn(|i| if below[i] { 2.0 } else { l[i] });
        let (mut ln, outside) = log_lanes(&x);
        if outside != 0 {
            for i in (0..LANES).filter(|i| outside >> i & 1 != 0) {
                ln[i] = libm::log(x[i]);
            }
        }
        let mut gr = [0.0f64; LANES];
        let mut arg = [0.0f64; LANES];
        for i in 0..LANES {
            // `gain_db(lin_to_db(level))` with its branches as selects.
            let over = ln[i] / DB_TO_LN - threshold;
            let slope = 1.0 / ratio - 1.0;
            let k = over + 0.5 * knee;
            let soft = slope * k * k / (2.0 * knee);
            let hard = slope * over;
            gr[i] = if 2.0 * over < -knee {
                0.0
            } else if knee > 0.0 && 2.0 * over.abs() <= knee {
                soft
            } else {
                hard
            };
            arg[i] = gr[i] * DB_TO_LN;
        }
        let (mut e, outside) = exp_lanes(&arg);
        if outside != 0 {
            for i in (0..LANES).filter(|i| outside >> i & 1 != 0) {
                e[i] = libm::exp(arg[i]);
            }
        }
        for i in 0..LANES {
            g[i] = if below[i] || gr[i].is_nan() {
                1.0
            } else {
                e[i]
            };
        }
    }
    for (g, l) in gains.into_remainder().iter_mut().zip(levels.remainder()) {
        *g = curve.gain::<StrictMath>(*l);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn strict_gains_avx2(curve: &Curve, level: &[f64], gain: &mut [f64]) {
    strict_gains(curve, level, gain);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq")]
unsafe fn strict_gains_avx512(curve: &Curve, level: &[f64], gain: &mut [f64]) {
    strict_gains(curve, level, gain);
}

/// [`Curve::fast_gain`] of each level; a run whose every level is at or
/// below the floor is 1 throughout, as `fast_gain` gives it, without the
/// curve.
#[inline(always)]
fn fast_gains(curve: &Curve, level: &[f64], gain: &mut [f64]) {
    let floor = curve.floor;
    if level.iter().fold(true, |below, &l| below & (l <= floor)) {
        gain[..level.len()].fill(1.0);
        return;
    }
    for (g, l) in gain.iter_mut().zip(level) {
        *g = curve.fast_gain(*l);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fast_gains_avx2(curve: &Curve, level: &[f64], gain: &mut [f64]) {
    fast_gains(curve, level, gain);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq")]
unsafe fn fast_gains_avx512(curve: &Curve, level: &[f64], gain: &mut [f64]) {
    fast_gains(curve, level, gain);
}

fn clamp_time(t: f64) -> f64 {
    if t.is_nan() {
        MIN_TIME
    } else {
        t.max(MIN_TIME)
    }
}

/// `compressor` at one precision and math policy.
struct Compressor<S, M> {
    det: Detector,
    /// The last `lookahead` samples of `in`; empty without lookahead.
    ring: Vec<S>,
    /// The slot the current input is written to (and the delayed one read).
    write: usize,
    /// Key from `sidechain` (an edge feeds it) rather than `in`.
    keyed: bool,
    sample_rate: f64,
    makeup: DbCache,
    /// The curve of the last settings a block held constant, with their
    /// bits (threshold, ratio, knee): a pure function of them, not state.
    curve: Option<([u64; 3], Curve)>,
    /// The instruction set the gain's lanes run with.
    simd: SimdLevel,
    _p: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Compressor<S, M> {
    /// `in` delayed by the lookahead.
    #[inline]
    fn delay(&mut self, x: S) -> S {
        if self.ring.is_empty() {
            return x;
        }
        let y = core::mem::replace(&mut self.ring[self.write], x);
        self.write += 1;
        if self.write == self.ring.len() {
            self.write = 0;
        }
        y
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Compressor<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let p = &io.params;
        let (th, ra, kn, at, re, mk) = (
            p.get(THRESHOLD),
            p.get(RATIO),
            p.get(KNEE),
            p.get(ATTACK),
            p.get(RELEASE),
            p.get(MAKEUP),
        );
        let sr = self.sample_rate;
        let x = &io.inputs[0][..n];
        let key = &io.inputs[if self.keyed { 1 } else { 0 }][..n];
        let (out, rest) = io.outputs.split_at_mut(1);
        let out = &mut out[0][..n];
        let gain_out = &mut rest[0][..n];
        let constant = [th, ra, kn, at, re, mk].iter().all(|p| p.is_const());
        if constant {
            let bits = [th.value(), ra.value(), kn.value()].map(f64::to_bits);
            let curve = match self.curve {
                Some((held, curve)) if held == bits => curve,
                _ => {
                    let curve = Curve::new::<M>(th.value(), ra.value(), kn.value());
                    self.curve = Some((bits, curve));
                    curve
                }
            };
            let (a, r) = (clamp_time(at.value()), clamp_time(re.value()));
            let makeup = self.makeup.get::<M>(mk.value());
            // In chunks, each in three passes: the detector (a recursion),
            // the gain (independent per sample, in lanes: under strict and
            // std math the bits of libm's calls one by one), the output.
            let mut level = [0.0f64; CHUNK];
            let mut gain = [0.0f64; CHUNK];
            let mut start = 0;
            while start < n {
                let end = n.min(start + CHUNK);
                let (level, gain) = (&mut level[..end - start], &mut gain[..end - start]);
                self.det
                    .run::<S, M>(self.simd, &key[start..end], (a, r), sr, level);
                curve.gains::<M>(self.simd, level, gain);
                let (x, out) = (&x[start..end], &mut out[start..end]);
                let gain_out = &mut gain_out[start..end];
                if self.ring.is_empty() {
                    apply_gains(self.simd, x, gain, makeup, out, gain_out);
                } else {
                    for (((o, go), g), x) in out.iter_mut().zip(gain_out).zip(&*gain).zip(x) {
                        let d = self.delay(*x);
                        *o = S::from_f64(d.to_f64() * (g * makeup));
                        *go = S::from_f64(*g);
                    }
                }
                start = end;
            }
        } else {
            for i in 0..n {
                let curve = Curve::new::<M>(th.at(i), ra.at(i), kn.at(i));
                let (a, r) = (clamp_time(at.at(i)), clamp_time(re.at(i)));
                let makeup = self.makeup.get::<M>(mk.at(i));
                let level = self.det.tick::<M>(key[i].to_f64(), a, r, sr);
                let g = curve.gain::<M>(level);
                let d = self.delay(x[i]);
                out[i] = S::from_f64(d.to_f64() * (g * makeup));
                gain_out[i] = S::from_f64(g);
            }
        }
    }

    fn reset(&mut self) {
        self.det.reset();
        self.ring.fill(S::ZERO);
        self.write = 0;
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        part.zero(&mut self.ring, S::ZERO);
        let p = part.progress();
        if p == Progress::Done {
            self.det.reset();
            self.write = 0;
        }
        p
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.det.snapshot(st);
        st.put_samples("lookahead", &self.ring);
        st.put_u64("write", self.write as u64);
    }

    /// The detector and write index at N, then the ring oldest first from
    /// the write index (as `delay` does).
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        let start = if done == 0 {
            self.det.snapshot(st);
            st.put_u64("write", self.write as u64);
            self.write
        } else {
            st.get_u64("write").map_or(self.write, |w| w as usize)
        };
        let next = st.put_ring_part("lookahead", &self.ring, start, done, budget);
        if next >= self.ring.len() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let write = st.get_u64("write")?;
        if write as usize >= self.ring.len().max(1) {
            return Err(StateError::Shape {
                name: "write",
                expected: self.ring.len(),
                found: write as usize,
            });
        }
        st.get_samples("lookahead", &mut self.ring)?;
        self.det.restore(st)?;
        self.write = write as usize;
        Ok(())
    }

    fn latency(&self) -> usize {
        self.ring.len()
    }
}

struct CompressorOp;
impl Operator for CompressorOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let lookahead = lookahead_samples(cx.number(LOOKAHEAD), cx.sample_rate)?;
        Ok(Box::new(Compressor::<S, M> {
            det: Detector::new(mode(cx.values, DETECTOR)),
            ring: vec![S::ZERO; lookahead],
            write: 0,
            keyed: cx.input_connected(1),
            sample_rate: cx.sample_rate,
            makeup: DbCache::NEW,
            curve: None,
            simd: SimdLevel::detect(),
            _p: PhantomData,
        }))
    }
}

pub(crate) static COMPRESSOR: OpSpec = OpSpec {
    name: "compressor",
    doc: "Feed-forward compressor. The key (`sidechain` when an edge feeds it, else `in`) \
          passes the same detector as `follower`; its level in dB goes through the static \
          curve (no change below threshold − knee/2, slope 1/ratio above threshold + knee/2, \
          the quadratic soft knee between) and `out` = in · gain · makeup. `gain` is the \
          reduction as a linear factor (1 = none, makeup not included), to meter or route. \
          `lookahead` delays `in`, not the key, and is reported as latency, so the plan \
          aligns the paths that meet it.",
    inputs: &["in", "sidechain"],
    outputs: &["out", "gain"],
    params: &[
        DETECTOR_PARAM,
        number(
            "threshold",
            Dimension::Level,
            -20.0,
            -120.0,
            24.0,
            "level in dB (`-20` or `\"-20dB\"`) where compression starts (knee centre)",
        ),
        number(
            "ratio",
            Dimension::Scalar,
            4.0,
            1.0,
            1000.0,
            "input dB over threshold per output dB (≥ 1; 1 = no compression)",
        ),
        number(
            "knee",
            Dimension::Level,
            6.0,
            0.0,
            48.0,
            "width in dB of the soft knee around threshold (0 = hard knee)",
        ),
        number(
            "attack",
            Dimension::Time,
            0.01,
            MIN_TIME,
            60.0,
            "detector time constant while the level rises (at least 10 µs)",
        ),
        number(
            "release",
            Dimension::Time,
            0.1,
            MIN_TIME,
            60.0,
            "detector time constant while the level falls (at least 10 µs)",
        ),
        number(
            "makeup",
            Dimension::Level,
            0.0,
            -48.0,
            48.0,
            "gain in dB applied after compression",
        ),
        ParamSpec {
            name: "lookahead",
            kind: ParamKind::Number {
                dim: Dimension::Time,
                default: 0.0,
                min: 0.0,
                max: 0.1,
                modulatable: false,
            },
            doc: "delay of `in` against the key, reported as latency; fixed at build",
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
    cost: |p, _| by_profile(p, [34.0, 24.0, 12.0]),
    algorithms: Some([
        "f64, libm",
        "f32 samples, std math; levels and the curve in f64",
        "f32 samples; the curve in f64 log2 units through polynomial log2 and exp2 \
         (within 2e-8 relative of the exact gain), in vector lanes",
    ]),
    build: build_any::<CompressorOp>,
};

/// `out = x·(g·makeup)` and `gain_out = g`, sample by sample, at the
/// instruction set `level` allows (the same operations: the same bits).
fn apply_gains<S: Sample>(
    level: SimdLevel,
    x: &[S],
    gain: &[f64],
    makeup: f64,
    out: &mut [S],
    gain_out: &mut [S],
) {
    at_level(
        level,
        #[inline(always)]
        || {
            for (((o, go), g), x) in out.iter_mut().zip(gain_out).zip(gain).zip(x) {
                *o = S::from_f64(x.to_f64() * (g * makeup));
                *go = S::from_f64(*g);
            }
        },
    )
}

#[cfg(test)]
#[path = "compressor_tests.rs"]
mod tests;
