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
//! f64 at every precision. The compressor under fast math computes the
//! step as `e = c·e + (1 − c)·r` (the same value, rounded otherwise).

use crate::dsp::{Math, MathKind, Sample};
use crate::ops::{NodeState, StateError};

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
    let c = if r > e { rise } else { fall };
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
/// or `|x|`, each step [`step`]'s formula (`SPLIT`: as `c·e + (1 − c)·r`),
/// the flush in every step only with `FLUSH`. Returns the last state.
#[inline(always)]
fn ballistics<S: Sample, const RMS: bool, const SPLIT: bool, const FLUSH: bool>(
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
            let up = rise * e + keep_rise * r;
            let down = fall * e + keep_fall * r;
            if r > e {
                up
            } else {
                down
            }
        } else {
            let c = if r > e { rise } else { fall };
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
        let c = if r > self.state {
            self.attack.get::<M>(attack, sr)
        } else {
            self.release.get::<M>(release, sr)
        };
        self.state = step(r, self.state, c, c);
        match self.mode {
            Mode::Peak => self.state,
            Mode::Rms => self.state.sqrt(),
        }
    }

    /// The level after each sample of `key`, with the times held, into
    /// `level`. Under strict and std math these are the bits `tick` gives
    /// sample by sample. Under fast math each step is written
    /// `c·e + (1 − c)·r`, both coefficients' results computed and one
    /// chosen: the same value, rounded otherwise, with a shorter chain
    /// from one sample's state to the next.
    ///
    /// The flush of a state below 1e-30 or not finite is checked after the
    /// chunk: when some state of it needed one, the chunk runs again with
    /// the flush in each step, so the result is always the stepwise one.
    pub(super) fn run<S: Sample, M: Math>(
        &mut self,
        key: &[S],
        attack: f64,
        release: f64,
        sr: f64,
        level: &mut [f64],
    ) {
        let c = (
            self.attack.get::<M>(attack, sr),
            self.release.get::<M>(release, sr),
        );
        let split = M::KIND == MathKind::Fast;
        let e0 = self.state;
        let rms = self.mode == Mode::Rms;
        let mut e = match (rms, split) {
            (false, false) => ballistics::<S, false, false, false>(key, e0, c, level),
            (false, true) => ballistics::<S, false, true, false>(key, e0, c, level),
            (true, false) => ballistics::<S, true, false, false>(key, e0, c, level),
            (true, true) => ballistics::<S, true, true, false>(key, e0, c, level),
        };
        // A state the flush changes: below TINY but not 0, or not finite.
        let flushed = level.iter().fold(false, |any, e| {
            any | (!(TINY..=f64::MAX).contains(e) & (*e != 0.0))
        });
        if flushed {
            e = match (rms, split) {
                (false, false) => ballistics::<S, false, false, true>(key, e0, c, level),
                (false, true) => ballistics::<S, false, true, true>(key, e0, c, level),
                (true, false) => ballistics::<S, true, false, true>(key, e0, c, level),
                (true, true) => ballistics::<S, true, true, true>(key, e0, c, level),
            };
        }
        self.state = e;
        if rms {
            for l in level.iter_mut() {
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

    /// A key with a burst, a NaN, then silence long enough for the state
    /// to decay below 1e-30 (so the flush happens at both ends).
    fn key() -> Vec<f64> {
        let mut x = crate::ops::conformance::test_signal(5, 3000);
        x[1234] = f64::NAN;
        x.extend(std::iter::repeat_n(0.0, 20_000));
        x
    }

    /// The step of the module docs; `split`: as `c·e + (1 − c)·r`.
    fn stepwise(key: &[f64], rms: bool, split: bool, (ca, cr): (f64, f64)) -> Vec<f64> {
        let mut e = 0.0f64;
        key.iter()
            .map(|x| {
                let r = if rms { x * x } else { x.abs() };
                let c = if r > e { ca } else { cr };
                e = if split {
                    c * e + (1.0 - c) * r
                } else {
                    r + c * (e - r)
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
    /// strict and std math `tick`'s; under fast math the split form's;
    /// through a NaN and a decay into the flush.
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
            let exact = stepwise(&x, rms, false, c);
            let split = stepwise(&x, rms, true, c);
            assert_eq!(bits(&by_tick), bits(&exact));
            assert!(exact[1234] == 0.0 && exact[1300] > 0.0 && *exact.last().unwrap() == 0.0);
            assert_ne!(
                bits(&split),
                bits(&exact),
                "the split form rounds otherwise"
            );
            for chunk in [1, 7, 64, 4096] {
                for (kind, want) in [
                    (MathKind::Strict, &exact),
                    (MathKind::Std, &exact),
                    (MathKind::Fast, &split),
                ] {
                    let mut d = Detector::new(mode);
                    let mut got = vec![0.0; x.len()];
                    for (k, l) in x.chunks(chunk).zip(got.chunks_mut(chunk)) {
                        match kind {
                            MathKind::Strict => d.run::<f64, StrictMath>(k, attack, release, sr, l),
                            MathKind::Std => d.run::<f64, StdMath>(k, attack, release, sr, l),
                            MathKind::Fast => d.run::<f64, FastMath>(k, attack, release, sr, l),
                        }
                    }
                    assert_eq!(bits(&got), bits(want), "{mode:?} {kind:?} chunk {chunk}");
                }
            }
        }
    }

    fn bits(x: &[f64]) -> Vec<u64> {
        x.iter().map(|v| v.to_bits()).collect()
    }
}
