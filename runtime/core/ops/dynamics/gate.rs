//! `gate`: a noise gate (a downward expander to a floor) with hysteresis,
//! hold and a sidechain key.
//!
//! Per sample, with every param read at that sample:
//!
//! ```text
//! key    = sidechain if an edge feeds it, else in
//! level  = detector(key)            (super::detector, the compressor's: peak with attack 0
//!                                    and release 5 ms, or RMS with both 5 ms)
//! open   = level > 10^(threshold/20)                        → open, hold = round(hold·sr)
//!          open and level ≥ 10^((threshold − hysteresis)/20) → stays open, hold restarts
//!          open and below that                             → counts the hold down, closes at 0
//! target = 1 if open, else 10^(−range/20)
//! g      = target + c·(g − target),  c = exp(−1/(attack·sr)) while g rises, exp(−1/(release·sr)) while it falls
//! out    = in · g,   gain = g
//! ```
//!
//! So a closed gate opens only above `threshold`, and an open one closes
//! only once the level has stayed below `threshold − hysteresis` for
//! `hold`: a level inside the hysteresis band changes nothing. The gain
//! glides between 1 and the floor with the detector's one-pole ballistics
//! (1 − 1/e of the way in `attack` or `release`). A node starts closed, at
//! the floor of its static `range`. `range` 0 dB never attenuates; a large
//! range is a gate, a small one a downward expander to that floor. The
//! state is the detector's level, the gain, whether the gate is open and
//! the hold left, all f64 or integers at every precision.

use super::compressor::MIN_TIME;
use super::db_to_lin;
use super::detector::{Coef, Detector, Mode};
use super::follower::{mode, DETECTOR_PARAM};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const DETECTOR: usize = GATE.index_of("detector");
const THRESHOLD: usize = GATE.index_of("threshold");
const RANGE: usize = GATE.index_of("range");
const HYSTERESIS: usize = GATE.index_of("hysteresis");
const ATTACK: usize = GATE.index_of("attack");
const HOLD: usize = GATE.index_of("hold");
const RELEASE: usize = GATE.index_of("release");

/// The detector's release, in seconds, and its attack in RMS mode (a peak
/// detector's attack is instant; a mean square needs time to average).
pub(super) const DETECT_TIME: f64 = 0.005;

/// A dB threshold as a linear level, recomputed when the dB value changes.
#[derive(Clone, Copy, Debug)]
struct Lin {
    db: f64,
    lin: f64,
}

impl Lin {
    const NEW: Lin = Lin {
        db: f64::NAN,
        lin: 1.0,
    };

    #[inline]
    fn get<M: Math>(&mut self, db: f64) -> f64 {
        if db.to_bits() != self.db.to_bits() {
            self.db = db;
            self.lin = db_to_lin::<M>(db);
        }
        self.lin
    }
}

/// One sample's settings.
#[derive(Clone, Copy)]
struct Settings {
    threshold: f64,
    range: f64,
    hysteresis: f64,
    attack: f64,
    hold: f64,
    release: f64,
}

struct Gate<S, M> {
    det: Detector,
    /// Whether the gate is open.
    open: bool,
    /// Samples of hold left once the level fell below the close threshold.
    hold_left: u64,
    /// The gain, f64 at every precision.
    g: f64,
    /// The gain a node starts from: the floor of its static `range`.
    g0: f64,
    keyed: bool,
    sample_rate: f64,
    open_at: Lin,
    close_at: Lin,
    floor: Lin,
    attack: Coef,
    release: Coef,
    _p: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> Gate<S, M> {
    #[inline]
    fn tick(&mut self, key: f64, s: &Settings) -> f64 {
        let sr = self.sample_rate;
        let attack = match self.det.mode {
            Mode::Peak => 0.0,
            Mode::Rms => DETECT_TIME,
        };
        let level = self.det.tick::<M>(key, attack, DETECT_TIME, sr);
        let open_at = self.open_at.get::<M>(s.threshold);
        let hysteresis = if s.hysteresis > 0.0 {
            s.hysteresis
        } else {
            0.0
        };
        let close_at = self.close_at.get::<M>(s.threshold - hysteresis);
        let hold = s.hold * sr;
        let hold = if hold > 0.0 { hold.round() as u64 } else { 0 };
        if level > open_at {
            self.open = true;
            self.hold_left = hold;
        } else if self.open {
            if level >= close_at {
                self.hold_left = hold;
            } else if self.hold_left > 0 {
                self.hold_left = (self.hold_left - 1).min(hold);
            } else {
                self.open = false;
            }
        }
        let target = if self.open {
            1.0
        } else {
            self.floor.get::<M>(-s.range)
        };
        let c = if target > self.g {
            self.attack.get::<M>(s.attack.max(MIN_TIME), sr)
        } else {
            self.release.get::<M>(s.release.max(MIN_TIME), sr)
        };
        let g = target + c * (self.g - target);
        self.g = if g.is_finite() { g } else { target };
        self.g
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Gate<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let p = &io.params;
        let ps = [
            p.get(THRESHOLD),
            p.get(RANGE),
            p.get(HYSTERESIS),
            p.get(ATTACK),
            p.get(HOLD),
            p.get(RELEASE),
        ];
        let at = |i: usize| Settings {
            threshold: ps[0].at(i),
            range: ps[1].at(i),
            hysteresis: ps[2].at(i),
            attack: ps[3].at(i),
            hold: ps[4].at(i),
            release: ps[5].at(i),
        };
        let x = &io.inputs[0][..n];
        let key = &io.inputs[if self.keyed { 1 } else { 0 }][..n];
        let (out, rest) = io.outputs.split_at_mut(1);
        let out = &mut out[0][..n];
        let gain_out = &mut rest[0][..n];
        let constant = ps.iter().all(|p| p.is_const());
        let fixed = at(0);
        for i in 0..n {
            let s = if constant { fixed } else { at(i) };
            let g = self.tick(key[i].to_f64(), &s);
            out[i] = S::from_f64(x[i].to_f64() * g);
            gain_out[i] = S::from_f64(g);
        }
    }

    fn reset(&mut self) {
        self.det.reset();
        self.open = false;
        self.hold_left = 0;
        self.g = self.g0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        self.det.snapshot(st);
        st.put_bool("open", self.open);
        st.put_u64("hold_left", self.hold_left);
        st.put_sample::<f64>("gain", self.g);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let open = st.get_bool("open")?;
        let hold_left = st.get_u64("hold_left")?;
        let g = st.get_sample::<f64>("gain")?;
        self.det.restore(st)?;
        self.open = open;
        self.hold_left = hold_left;
        self.g = if g.is_finite() { g } else { self.g0 };
        Ok(())
    }

    fn set_discrete(&mut self, param: usize, value: &Value) {
        if let (DETECTOR, Value::Enum(i)) = (param, value) {
            self.det.mode = Mode::from_index(*i);
        }
    }
}

struct GateOp;
impl Operator for GateOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let g0 = db_to_lin::<M>(-cx.number(RANGE));
        Ok(Box::new(Gate::<S, M> {
            det: Detector::new(mode(cx.values, DETECTOR)),
            open: false,
            hold_left: 0,
            g: g0,
            g0,
            keyed: cx.input_connected(1),
            sample_rate: cx.sample_rate,
            open_at: Lin::NEW,
            close_at: Lin::NEW,
            floor: Lin::NEW,
            attack: Coef::NEW,
            release: Coef::NEW,
            _p: PhantomData,
        }))
    }
}

pub(crate) static GATE: OpSpec = OpSpec {
    name: "gate",
    doc: "Noise gate / downward expander. The key (`sidechain` when an edge feeds it, else \
          `in`) passes the compressor's detector (peak: instant attack, 5 ms release; rms: \
          5 ms both ways); the gate \
          opens when its level rises above `threshold` and closes once it has stayed below \
          `threshold − hysteresis` for `hold`. `out` = in · gain, the gain gliding to 1 \
          (open) in `attack` and to −`range` dB (closed) in `release`; `gain` outputs it.",
    inputs: &["in", "sidechain"],
    outputs: &["out", "gain"],
    params: &[
        DETECTOR_PARAM,
        number(
            "threshold",
            Dimension::Level,
            -40.0,
            -120.0,
            24.0,
            "level in dB above which the gate opens",
        ),
        number(
            "range",
            Dimension::Level,
            80.0,
            0.0,
            120.0,
            "attenuation in dB while closed (0 = none; small values expand downwards)",
        ),
        number(
            "hysteresis",
            Dimension::Level,
            6.0,
            0.0,
            48.0,
            "dB below threshold the level must fall to before the gate closes",
        ),
        number(
            "attack",
            Dimension::Time,
            0.001,
            MIN_TIME,
            10.0,
            "time constant of the gain while the gate opens (at least 10 µs)",
        ),
        number(
            "hold",
            Dimension::Time,
            0.02,
            0.0,
            10.0,
            "how long the level must stay below the close threshold before the gate closes",
        ),
        number(
            "release",
            Dimension::Time,
            0.1,
            MIN_TIME,
            60.0,
            "time constant of the gain while the gate closes (at least 10 µs)",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [12.4, 11.8, 18.6]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<GateOp>,
};

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
