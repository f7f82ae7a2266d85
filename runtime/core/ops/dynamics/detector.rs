//! The level detector `follower` and `compressor` share: a rectifier (peak:
//! `|x|`; RMS: `x²`) and one-pole ballistics with separate attack and
//! release.
//!
//! Per sample, with `r` the rectified input and `e` the state:
//!
//! ```text
//! c = a_att if r > e else a_rel,   a = exp(−1 / (time·sr))   (0 when time·sr ≤ 0)
//! e = r + c·(e − r)
//! level = e (peak) or √e (RMS)
//! ```
//!
//! So a step of the rectified input moves `e` by 1 − 1/e of the step in
//! exactly `attack` (rising) or `release` (falling) seconds. For RMS the
//! ballistics act on the mean square (power): a sine of amplitude A settles
//! at A/√2. A state that is not finite (a NaN or infinite input) restarts
//! at 0, and a state below 1e-30 is 0 (no subnormals). The state is `e`,
//! f64 at every precision. The compressor and the follower under fast math
//! compute the step as `e = c·e + (1 − c)·r` (the same value, rounded
//! otherwise), on every CPU with FMA (each with AVX2) with the multiply-add
//! fused, `e = fma(c, e, (1 − c)·r)`: the same bits with AVX2 as with
//! AVX-512.

use crate::dsp::vector::SimdLevel;
use crate::dsp::{Math, MathKind, Sample};
use crate::ops::{NodeState, StateError};
// Whether a sample rises above the state follows the signal's waveform, so
// a branch on it is mispredicted often: every choice is a select.
use std::hint::select_unpredictable;

/// The detector's choices, in the order the `detector` enum declares them.
pub(super) const DETECTORS: &[&str] = &["peak", "rms"];

/// The level a state below this is flushed to zero from.
const TINY: f64 = 1e-30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Peak,
    Rms,
}

impl Mode {
    /// The mode at index `i` of [`DETECTORS`].
    pub(super) fn from_index(i: usize) -> Mode {
        if i == 1 {
            Mode::Rms
        } else {
            Mode::Peak
        }
    }
}

/// A one-pole coefficient `exp(−1/(time·sr))`, recomputed only when the
/// time changes (a pure function of the time, so not state).
#[derive(Clone, Copy, Debug)]
pub(super) struct Coef {
    time: f64,
    coef: f64,
}

impl Coef {
    pub(super) const NEW: Coef = Coef {
        time: f64::NAN,
        coef: 0.0,
    };

    #[inline]
    pub(super) fn get<M: Math>(&mut self, time: f64, sample_rate: f64) -> f64 {
        if time.to_bits() != self.time.to_bits() {
            self.time = time;
            let n = time * sample_rate;
            self.coef = if n > 0.0 { M::coef_exp(-1.0 / n) } else { 0.0 };
        }
        self.coef
    }
}

/// One step of the ballistics from state `e` with rectified input `r`:
/// coefficient `rise` when `r > e`, else `fall`; a result that is not
/// finite, or below [`TINY`], is 0.
#[inline(always)]
fn step(r: f64, e: f64, rise: f64, fall: f64) -> f64 {
    let c = select_unpredictable(r > e, rise, fall);
    flush(r + c * (e - r))
}

/// A state not finite (NaN, ±∞) or below [`TINY`] as 0.
#[inline(always)]
fn flush(e: f64) -> f64 {
    if (TINY..=f64::MAX).contains(&e) {
        e
    } else {
        0.0
    }
}

/// The detector's states after each sample of `key` from state `e`, into
/// `state`, with `(rise, fall)` coefficients: the rectifier `x²` (`RMS`)
/// or `|x|`, each step [`step`]'s formula (`SPLIT`: as `c·e + (1 − c)·r`,
/// with `FUSED` as `fma(c, e, (1 − c)·r)`), the flush in every step only
/// with `FLUSH`. Returns the last state.
#[inline(always)]
#[allow(clippy::disallowed_methods)] // `FUSED`: live only (`Detector::run`)
fn ballistics<
    S: Sample,
    const RMS: bool,
    const SPLIT: bool,
    const FLUSH: bool,
    const FUSED: bool,
>(
    key: &[S],
    mut e: f64,
    (rise, fall): (f64, f64),
    state: &mut [f64],
) -> f64 {
    let (keep_rise, keep_fall) = (1.0 - rise, 1.0 - fall);
    for (s, k) in state.iter_mut().zip(key) {
        let x = k.to_f64();
        let r = if RMS { x * x } else { x.abs() };
        let next = if SPLIT {
            let (up, down) = if FUSED {
                (
                    rise.mul_add(e, keep_rise * r),
                    fall.mul_add(e, keep_fall * r),
                )
            } else {
                (rise * e + keep_rise * r, fall * e + keep_fall * r)
            };
            select_unpredictable(r > e, up, down)
        } else {
            let c = select_unpredictable(r > e, rise, fall);
            r + c * (e - r)
        };
        e = if !FLUSH || (TINY..=f64::MAX).contains(&next) {
            next
        } else {
            0.0
        };
        *s = e;
    }
    e
}

/// [`ballistics`] for the detector's mode (`rms`) and math (`split`; with
/// `fused`, on a CPU with FMA).
fn run_ballistics<S: Sample, const FLUSH: bool>(
    rms: bool,
    split: bool,
    fused: bool,
    key: &[S],
    e: f64,
    c: (f64, f64),
    state: &mut [f64],
) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if fused {
        // SAFETY: `fused` only where `SimdLevel` saw FMA.
        return unsafe {
            if rms {
                ballistics_fused::<S, true, FLUSH>(key, e, c, state)
            } else {
                ballistics_fused::<S, false, FLUSH>(key, e, c, state)
            }
        };
    }
    let _ = fused;
    match (rms, split) {
        (false, false) => ballistics::<S, false, false, FLUSH, false>(key, e, c, state),
        (false, true) => ballistics::<S, false, true, FLUSH, false>(key, e, c, state),
        (true, false) => ballistics::<S, true, false, FLUSH, false>(key, e, c, state),
        (true, true) => ballistics::<S, true, true, FLUSH, false>(key, e, c, state),
    }
}

/// The split form fused, with the instructions of AVX2 and FMA (`mul_add`
/// rounds once whatever the instruction set: the same bits at every level
/// with FMA).
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn ballistics_fused<S: Sample, const RMS: bool, const FLUSH: bool>(
    key: &[S],
    e: f64,
    c: (f64, f64),
    state: &mut [f64],
) -> f64 {
    ballistics::<S, RMS, true, FLUSH, true>(key, e, c, state)
}

/// Peak or RMS level with attack/release ballistics (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(super) struct Detector {
    pub(super) mode: Mode,
    state: f64,
    attack: Coef,
    release: Coef,
}

impl Detector {
    pub(super) fn new(mode: Mode) -> Detector {
        Detector {
            mode,
            state: 0.0,
            attack: Coef::NEW,
            release: Coef::NEW,
        }
    }

    /// One sample of input `x`; times in seconds. Returns the level
    /// (linear amplitude).
    #[inline]
    pub(super) fn tick<M: Math>(&mut self, x: f64, attack: f64, release: f64, sr: f64) -> f64 {
        let r = match self.mode {
            Mode::Peak => x.abs(),
            Mode::Rms => x * x,
        };
        let rise = self.attack.get::<M>(attack, sr);
        let fall = self.release.get::<M>(release, sr);
        self.state = step(r, self.state, rise, fall);
        match self.mode {
            Mode::Peak => self.state,
            Mode::Rms => self.state.sqrt(),
        }
    }

    /// The level after each sample of `key`, with the times held, into
    /// `levels`. Under strict and std math these are the bits `tick` gives
    /// sample by sample. Under fast math each step is written
    /// `c·e + (1 − c)·r`, both coefficients' results computed and one
    /// chosen: the same value, rounded otherwise, with a shorter chain
    /// from one sample's state to the next.
    ///
    /// The flush of a state below 1e-30 or not finite is checked after the
    /// chunk: when some state of it needed one, the chunk runs again with
    /// the flush in each step, so the result is always the stepwise one.
    ///
    /// On a CPU with FMA (a `level` of AVX2 or AVX-512), fast math
    /// fuses each step's multiply-add, `fma(c, e, (1 − c)·r)`: rounded
    /// once, and the chain from one state to the next is one fused
    /// multiply-add and a select.
    pub(super) fn run<S: Sample, M: Math>(
        &mut self,
        level: SimdLevel,
        key: &[S],
        (attack, release): (f64, f64),
        sr: f64,
        levels: &mut [f64],
    ) {
        let c = (
            self.attack.get::<M>(attack, sr),
            self.release.get::<M>(release, sr),
        );
        let split = M::KIND == MathKind::Fast;
        let fused = split && cfg!(target_arch = "x86_64") && level.has_fma();
        let e0 = self.state;
        let rms = self.mode == Mode::Rms;
        let mut e = run_ballistics::<S, false>(rms, split, fused, key, e0, c, levels);
        // A state the flush changes: below TINY but not 0, or not finite.
        let flushed = levels.iter().fold(false, |any, e| {
            any | (!(TINY..=f64::MAX).contains(e) & (*e != 0.0))
        });
        if flushed {
            e = run_ballistics::<S, true>(rms, split, fused, key, e0, c, levels);
        }
        self.state = e;
        if rms {
            for l in levels.iter_mut() {
                *l = l.sqrt();
            }
        }
    }

    pub(super) fn reset(&mut self) {
        self.state = 0.0;
    }

    pub(super) fn snapshot(&self, st: &mut NodeState) {
        st.put_sample::<f64>("detector", self.state);
    }

    pub(super) fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.state = st.get_sample::<f64>("detector")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::math::{FastMath, StdMath, StrictMath};
    use crate::dsp::vector::Isa;

    /// A key with a burst, a NaN, then silence long enough for the state
    /// to decay below 1e-30 (so the flush happens at both ends).
    fn key() -> Vec<f64> {
        let mut x = crate::ops::conformance::test_signal(5, 3000);
        x[1234] = f64::NAN;
        x.extend(std::iter::repeat_n(0.0, 20_000));
        x
    }

    /// How the step of the module docs is written.
    #[derive(Clone, Copy, PartialEq)]
    enum Form {
        /// `r + c·(e − r)`.
        Exact,
        /// `c·e + (1 − c)·r`.
        Split,
        /// `fma(c, e, (1 − c)·r)`.
        Fused,
    }

    /// The step of the module docs, written as `form` says.
    #[allow(clippy::disallowed_methods)] // the fused oracle
    fn stepwise(key: &[f64], rms: bool, form: Form, (ca, cr): (f64, f64)) -> Vec<f64> {
        let mut e = 0.0f64;
        key.iter()
            .map(|x| {
                let r = if rms { x * x } else { x.abs() };
                let c = if r > e { ca } else { cr };
                e = match form {
                    Form::Exact => r + c * (e - r),
                    Form::Split => c * e + (1.0 - c) * r,
                    Form::Fused => c.mul_add(e, (1.0 - c) * r),
                };
                if !e.is_finite() || e < 1e-30 {
                    e = 0.0;
                }
                if rms {
                    e.sqrt()
                } else {
                    e
                }
            })
            .collect()
    }

    /// `run` over chunks of any length gives the stepwise bits: under
    /// strict and std math `tick`'s; under fast math the split form's,
    /// fused on AVX-512 (at every level this CPU runs); through a NaN and
    /// a decay into the flush.
    #[test]
    fn a_run_is_the_stepwise_detector_through_nan_and_flush() {
        let x = key();
        let (attack, release, sr) = (0.0005, 0.002, 48000.0);
        let c = (
            libm::exp(-1.0 / (attack * sr)),
            libm::exp(-1.0 / (release * sr)),
        );
        for mode in [Mode::Peak, Mode::Rms] {
            let rms = mode == Mode::Rms;
            let mut ticked = Detector::new(mode);
            let by_tick: Vec<f64> = x
                .iter()
                .map(|v| ticked.tick::<StrictMath>(*v, attack, release, sr))
                .collect();
            let exact = stepwise(&x, rms, Form::Exact, c);
            let split = stepwise(&x, rms, Form::Split, c);
            let fused = stepwise(&x, rms, Form::Fused, c);
            assert_eq!(bits(&by_tick), bits(&exact));
            assert!(exact[1234] == 0.0 && exact[1300] > 0.0 && *exact.last().unwrap() == 0.0);
            assert_ne!(
                bits(&split),
                bits(&exact),
                "the split form rounds otherwise"
            );
            assert_ne!(bits(&fused), bits(&split), "fused rounds otherwise");
            let levels = [Isa::Base, Isa::Avx2, Isa::Avx512].map(SimdLevel::at_most);
            for (level, chunk) in levels
                .into_iter()
                .flat_map(|l| [1, 7, 64, 4096].map(|c| (l, c)))
            {
                let fast = if level.has_fma() { &fused } else { &split };
                for (kind, want) in [
                    (MathKind::Strict, &exact),
                    (MathKind::Std, &exact),
                    (MathKind::Fast, fast),
                ] {
                    let mut d = Detector::new(mode);
                    let mut got = vec![0.0; x.len()];
                    let t = (attack, release);
                    for (k, l) in x.chunks(chunk).zip(got.chunks_mut(chunk)) {
                        match kind {
                            MathKind::Strict => d.run::<f64, StrictMath>(level, k, t, sr, l),
                            MathKind::Std => d.run::<f64, StdMath>(level, k, t, sr, l),
                            MathKind::Fast => d.run::<f64, FastMath>(level, k, t, sr, l),
                        }
                    }
                    let what = format!("{mode:?} {kind:?} at {level:?}, chunk {chunk}");
                    assert_eq!(bits(&got), bits(want), "{what}");
                }
            }
        }
    }

    fn bits(x: &[f64]) -> Vec<u64> {
        x.iter().map(|v| v.to_bits()).collect()
    }
}
