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
//! f64 at every precision.

use crate::dsp::Math;
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
        let e = r + c * (self.state - r);
        self.state = if !e.is_finite() || e < TINY { 0.0 } else { e };
        match self.mode {
            Mode::Peak => self.state,
            Mode::Rms => self.state.sqrt(),
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
