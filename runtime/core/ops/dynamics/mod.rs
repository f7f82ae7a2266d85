//! Envelopes and dynamics: `adsr` and `env`, and the level-driven
//! operators `follower`, `compressor` and `limiter`.
//!
//! `follower` and `compressor` measure level with one [`detector::Detector`]
//! (peak or RMS, attack/release ballistics); `limiter` has its own lookahead
//! peak hold, because a brickwall needs the peak before it arrives. Levels
//! are kept in f64 at every precision, and every dB ↔ linear conversion and
//! coefficient goes through the node's `M: Math` (`coef_exp`, `coef_ln`),
//! so all four are strict. The compressor's per-sample curve takes libm's
//! log and exp under std math too, and the polynomial `fast_log2` and
//! `fast_exp2` under fast math.

mod adsr;
mod compressor;
mod detector;
mod env;
mod follower;
mod gate;
mod limiter;

pub(crate) use adsr::{gate_threshold, ADSR};
pub(crate) use compressor::COMPRESSOR;
pub(crate) use env::ENV;
pub(crate) use follower::FOLLOWER;
pub(crate) use gate::GATE;
pub(crate) use limiter::LIMITER;

use crate::dsp::Math;

/// `ln(10) / 20`: dB → natural-log units of amplitude.
pub(super) const DB_TO_LN: f64 = core::f64::consts::LN_10 / 20.0;

/// A level in dB as a linear amplitude: `10^(db/20)`.
#[inline]
pub(super) fn db_to_lin<M: Math>(db: f64) -> f64 {
    M::coef_exp(db * DB_TO_LN)
}

/// A linear amplitude in dB: `20·log10(x)` (−∞ for 0).
#[inline]
pub(super) fn lin_to_db<M: Math>(x: f64) -> f64 {
    M::coef_ln(x) / DB_TO_LN
}

/// Lookahead samples for `seconds` at `sample_rate`: rounded to the nearest
/// sample, an error when it does not fit.
pub(super) fn lookahead_samples(seconds: f64, sample_rate: f64) -> Result<usize, String> {
    let n = (seconds * sample_rate).round();
    if !(n.is_finite() && n >= 0.0 && n < (1u64 << 32) as f64) {
        return Err(format!(
            "`lookahead` = {seconds} s is too long at {sample_rate} Hz"
        ));
    }
    Ok(n as usize)
}

/// `db_to_lin` of a param, recomputed only when its value changes (a pure
/// function of the value, so not state).
#[derive(Clone, Copy, Debug)]
pub(super) struct DbCache {
    db: f64,
    lin: f64,
}

impl DbCache {
    pub(super) const NEW: DbCache = DbCache {
        db: f64::NAN,
        lin: 1.0,
    };

    #[inline]
    pub(super) fn get<M: Math>(&mut self, db: f64) -> f64 {
        if db.to_bits() != self.db.to_bits() {
            self.db = db;
            self.lin = db_to_lin::<M>(db);
        }
        self.lin
    }
}
