//! A scene's `controls`, resolved: each source (an OSC address, a MIDI
//! message) and the param it moves, with its range and curve checked
//! against the operator, so that a control thread can turn a message into
//! a value without any lookup in the scene (`scenes/README.md`,
//! *Controls*).
//!
//! Scaling uses only arithmetic and `libm` (pinned), so a mapped value is
//! the same bits on every build: a MIDI file renders bit for bit under
//! strict.

use crate::ops::{ParamKind, Value};
use crate::scene::{Curve, Dimension, Loc, MidiSource};

/// A value a control sets: a number in the param's canonical unit, or a
/// discrete value. `Copy`, so it crosses to the audio thread in a
/// fixed-size record.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlValue {
    /// A number, in the param's canonical unit.
    Number(f64),
    /// An integer.
    Integer(i64),
    /// Index into the enum's choices.
    Enum(usize),
    /// A boolean.
    Bool(bool),
}

impl ControlValue {
    /// The param value it stands for (no allocation: never a resource or
    /// an array).
    pub(crate) fn to_value(self) -> Value {
        match self {
            ControlValue::Number(x) => Value::Number(x),
            ControlValue::Integer(i) => Value::Integer(i),
            ControlValue::Enum(i) => Value::Enum(i),
            ControlValue::Bool(b) => Value::Bool(b),
        }
    }

    /// The number a journal writes for it (enum index, 0/1 for a bool).
    pub fn as_f64(self) -> f64 {
        match self {
            ControlValue::Number(x) => x,
            ControlValue::Integer(i) => i as f64,
            ControlValue::Enum(i) => i as f64,
            ControlValue::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

/// What a control's source is, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlSource {
    /// An OSC address.
    Osc(String),
    /// A MIDI message kind.
    Midi(MidiSource),
}

/// How a 0…1 position becomes a value of the target param.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TargetRange {
    /// `min…max` in the param's canonical unit; `lo…hi` is what the param
    /// itself accepts (a raw value is checked against it).
    Number {
        /// The value at position 0, in the param's canonical unit.
        min: f64,
        /// The value at position 1, in the param's canonical unit.
        max: f64,
        /// How the position maps onto `min…max`.
        curve: Curve,
        /// The smallest value the param accepts.
        lo: f64,
        /// The largest value the param accepts.
        hi: f64,
        /// The param's dimension (which units a raw value may carry).
        dim: Dimension,
    },
    /// An integer param: the position picks one of `min…max`.
    Integer {
        /// The value at position 0.
        min: i64,
        /// The value at position 1.
        max: i64,
    },
    /// An enum of `choices` values: the position picks one, a raw value
    /// is its index.
    Enum {
        /// How many choices the enum has.
        choices: usize,
    },
    /// A boolean param: on at positions of 0.5 and above, off below.
    Bool,
}

/// A node's param a control moves.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlTarget {
    /// The id of the node.
    pub node: String,
    /// The name of the param.
    pub param: &'static str,
    /// How a position becomes its value.
    pub range: TargetRange,
}

impl ControlTarget {
    /// The value at position `x` (clamped to 0…1) of the target's range.
    pub fn scale(&self, x: f64) -> ControlValue {
        let x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
        match self.range {
            TargetRange::Number {
                min, max, curve, ..
            } => ControlValue::Number(match curve {
                Curve::Linear => min + x * (max - min),
                // min·(max/min)^x; both ends exact.
                Curve::Exp if x == 0.0 => min,
                Curve::Exp if x == 1.0 => max,
                Curve::Exp => min * libm::exp2(x * libm::log2(max / min)),
                Curve::Db if x == 0.0 => min,
                Curve::Db if x == 1.0 => max,
                Curve::Db => {
                    let (a, b) = (libm::log10(min), libm::log10(max));
                    libm::pow(10.0, a + x * (b - a))
                }
            }),
            TargetRange::Integer { min, max } => {
                let span = (max - min) as f64;
                ControlValue::Integer(min + libm::round(x * span) as i64)
            }
            TargetRange::Enum { choices } => {
                ControlValue::Enum(((x * choices as f64) as usize).min(choices.saturating_sub(1)))
            }
            TargetRange::Bool => ControlValue::Bool(x >= 0.5),
        }
    }

    /// A value given in the param's own unit (`"raw": true`, `/morphrt/param`):
    /// checked against what the param accepts, never clamped.
    pub fn raw(&self, v: f64) -> Result<ControlValue, String> {
        let out = |what: String| {
            Err(format!(
                "{v} is out of range for `{}` of `{}` ({what})",
                self.param, self.node
            ))
        };
        if !v.is_finite() {
            return Err(format!("{v} is not a finite number"));
        }
        match self.range {
            TargetRange::Number { lo, hi, dim, .. } => {
                if v >= lo && v <= hi {
                    Ok(ControlValue::Number(v))
                } else {
                    out(format!("valid: {lo} … {hi} {}", dim.canonical()))
                }
            }
            TargetRange::Integer { min, max } => {
                if v.fract() == 0.0 && v >= min as f64 && v <= max as f64 {
                    Ok(ControlValue::Integer(v as i64))
                } else {
                    out(format!("valid: an integer from {min} to {max}"))
                }
            }
            TargetRange::Enum { choices } => {
                if v.fract() == 0.0 && v >= 0.0 && (v as usize) < choices {
                    Ok(ControlValue::Enum(v as usize))
                } else {
                    out(format!("valid: an index from 0 to {}", choices - 1))
                }
            }
            TargetRange::Bool => match v {
                0.0 => Ok(ControlValue::Bool(false)),
                1.0 => Ok(ControlValue::Bool(true)),
                _ => out("valid: 0 or 1".to_string()),
            },
        }
    }

    /// A note's pitch for this target: Hz (equal temperament, A4 = 440 Hz
    /// on note 69) for a frequency param, else the note number itself.
    pub fn pitch(&self, note: u8) -> ControlValue {
        match self.range {
            TargetRange::Number {
                dim: Dimension::Frequency,
                ..
            } => ControlValue::Number(440.0 * libm::exp2((note as f64 - 69.0) / 12.0)),
            TargetRange::Integer { .. } => ControlValue::Integer(note as i64),
            _ => ControlValue::Number(note as f64),
        }
    }
}

impl ControlTarget {
    /// `lp.cutoff 200 … 8000 Hz exp` (the range a position 0…1 spans).
    pub(crate) fn describe(&self) -> String {
        let range = match self.range {
            TargetRange::Number {
                min,
                max,
                curve,
                dim,
                ..
            } => {
                let unit = match dim.canonical() {
                    "" | "linear" => String::new(),
                    u => format!(" {u}"),
                };
                let curve = match curve {
                    Curve::Linear => String::new(),
                    c => format!(" ({} curve)", c.name()),
                };
                format!("{min} … {max}{unit}{curve}")
            }
            TargetRange::Integer { min, max } => format!("{min} … {max}"),
            TargetRange::Enum { choices } => format!("one of {choices} choices"),
            TargetRange::Bool => "off/on".to_string(),
        };
        format!("{}.{} {}", self.node, self.param, range.trim_end())
    }

    /// The same as JSON, for `check --json`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "node": self.node, "param": self.param });
        match self.range {
            TargetRange::Number {
                min, max, curve, ..
            } => {
                v["min"] = serde_json::json!(min);
                v["max"] = serde_json::json!(max);
                v["curve"] = serde_json::json!(curve.name());
            }
            TargetRange::Integer { min, max } => {
                v["min"] = serde_json::json!(min);
                v["max"] = serde_json::json!(max);
            }
            TargetRange::Enum { choices } => v["choices"] = serde_json::json!(choices),
            TargetRange::Bool => {}
        }
        v
    }
}

/// The bend range of a note control that names none, in semitones.
pub const DEFAULT_BEND_SEMITONES: f64 = 2.0;

/// A param of one voice module's template node, by place: what poly
/// aftertouch moves on the one voice that plays its note.
#[derive(Clone, Debug, PartialEq)]
pub struct VoiceParam {
    /// The id of the voice module.
    pub module: String,
    /// The node's place in the module's template (declaration order).
    pub node: u32,
    /// The param's index in the node's operator.
    pub param: u16,
}

/// A `controls` entry, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlMap {
    /// What the control listens to.
    pub source: ControlSource,
    /// What the source moves (for a note: the gate, its max on note-on and
    /// its min on note-off); `None` for a note routed to a voice module.
    pub target: Option<ControlTarget>,
    /// A voice module notes play (`module`).
    pub module: Option<String>,
    /// A voice module's note: the param its pitch sets, if any.
    pub pitch: Option<ControlTarget>,
    /// A voice module's note: the param its velocity sets, if any.
    pub velocity: Option<ControlTarget>,
    /// Samples each change glides over (0: a step).
    pub ramp: u64,
    /// OSC: the argument is in the param's unit (see [`ControlTarget::raw`]).
    pub raw: bool,
    /// A MIDI note control that plays a voice module: semitones the bend
    /// wheel's full throw bends its voices (the scene's `bend`, default
    /// [`DEFAULT_BEND_SEMITONES`]); 0 for every other control.
    pub bend: f64,
    /// Poly aftertouch onto a voice module's template node: the param of
    /// the voice playing the pressed note (see [`VoiceParam`]).
    pub touch: Option<VoiceParam>,
    /// Position in the scene's `controls`.
    pub index: usize,
    /// Where the entry is written, for diagnostics.
    pub loc: Loc,
}

impl ControlMap {
    /// The OSC address this control listens on, if any.
    pub fn osc_address(&self) -> Option<&str> {
        match &self.source {
            ControlSource::Osc(a) => Some(a),
            ControlSource::Midi(_) => None,
        }
    }

    /// The value an OSC argument `arg` sets: a position 0…1 (outside it:
    /// refused, never clamped), or with `raw` a value in the param's unit.
    pub fn osc_value(&self, arg: f64) -> Result<ControlValue, String> {
        let Some(t) = &self.target else {
            return Err("this control plays a voice module, not a param".to_string());
        };
        if self.raw {
            t.raw(arg)
        } else if (0.0..=1.0).contains(&arg) {
            Ok(t.scale(arg))
        } else {
            Err(format!(
                "{arg} is outside 0…1: the control maps a position 0…1 onto {} (`\"raw\": true` takes values in the param's unit)",
                t.describe()
            ))
        }
    }

    /// One line for `check`: `osc /f/c → lp.cutoff 200 … 8000 Hz exp,
    /// ramp 480 samples`.
    pub(crate) fn describe(&self) -> String {
        let mut parts = vec![match (&self.target, &self.module) {
            (Some(t), _) if self.raw => format!("{}.{} (raw, in its own unit)", t.node, t.param),
            (Some(t), _) => t.describe(),
            (None, Some(m)) => format!("voice module {m}"),
            (None, None) => "nothing".to_string(),
        }];
        if let Some(p) = &self.pitch {
            parts.push(format!("pitch → {}.{}", p.node, p.param));
        }
        if let Some(v) = &self.velocity {
            parts.push(format!("velocity → {}", v.describe()));
        }
        if self.bend > 0.0 {
            parts.push(format!(
                "pitch bend ±{} semitones",
                super::short_number(self.bend)
            ));
        }
        if self.touch.is_some() {
            parts.push("each note's pressure → its own voice".to_string());
        }
        if self.ramp > 0 {
            parts.push(format!("ramp {} samples", self.ramp));
        }
        format!("{} → {}", self.source_text(), parts.join(", "))
    }

    /// The same as JSON, for `check --json`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "source": self.source_text(),
            "target": self.target.as_ref().map(ControlTarget::to_json),
            "module": self.module,
            "pitch": self.pitch.as_ref().map(ControlTarget::to_json),
            "velocity": self.velocity.as_ref().map(ControlTarget::to_json),
            "ramp_samples": self.ramp,
            "raw": self.raw,
            "bend_semitones": self.bend,
            "per_voice": self.touch.is_some(),
        })
    }

    /// How the source reads in `check` and the monitor: `osc /f/c`,
    /// `midi cc 74 ch 1`, `midi note any`.
    pub(crate) fn source_text(&self) -> String {
        match &self.source {
            ControlSource::Osc(a) => format!("osc {a}"),
            ControlSource::Midi(m) => midi_source_text(m),
        }
    }
}

/// A MIDI source in words: `midi cc 74 ch 1`, `midi cc 1+33 (14-bit)`.
pub(crate) fn midi_source_text(m: &MidiSource) -> String {
    let ch = |c: &Option<u8>| c.map_or(String::new(), |c| format!(" ch {c}"));
    match m {
        MidiSource::Cc {
            cc,
            lsb: None,
            channel,
        } => format!("midi cc {cc}{}", ch(channel)),
        MidiSource::Cc {
            cc,
            lsb: Some(l),
            channel,
        } => format!("midi cc {cc}+{l} (14-bit){}", ch(channel)),
        MidiSource::Note { note, channel } => format!(
            "midi note {}{}",
            note.map_or("any".to_string(), |n| n.to_string()),
            ch(channel)
        ),
        MidiSource::Bend { channel } => format!("midi bend{}", ch(channel)),
        MidiSource::Aftertouch { channel } => format!("midi aftertouch{}", ch(channel)),
        MidiSource::PolyAftertouch { channel } => format!("midi poly aftertouch{}", ch(channel)),
        MidiSource::Program { channel } => format!("midi program{}", ch(channel)),
    }
}

/// The range a param's kind gives a control that names no `min`/`max`.
pub(crate) fn default_range(kind: &ParamKind) -> Option<TargetRange> {
    Some(match *kind {
        ParamKind::Number { dim, min, max, .. } => TargetRange::Number {
            min,
            max,
            curve: Curve::Linear,
            lo: min,
            hi: max,
            dim,
        },
        ParamKind::Integer { min, max, .. } => TargetRange::Integer { min, max },
        ParamKind::Enum { choices, .. } => TargetRange::Enum {
            choices: choices.len(),
        },
        ParamKind::Bool { .. } => TargetRange::Bool,
        ParamKind::Resource
        | ParamKind::OptionalResource
        | ParamKind::Gains
        | ParamKind::Steps { .. }
        | ParamKind::StepLength { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(min: f64, max: f64, curve: Curve) -> ControlTarget {
        ControlTarget {
            node: "lp".into(),
            param: "cutoff",
            range: TargetRange::Number {
                min,
                max,
                curve,
                lo: 1.0,
                hi: 20000.0,
                dim: Dimension::Frequency,
            },
        }
    }

    fn num(v: ControlValue) -> f64 {
        match v {
            ControlValue::Number(x) => x,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn curves_land_on_their_formulas() {
        let lin = number(200.0, 8000.0, Curve::Linear);
        assert_eq!(num(lin.scale(0.25)), 200.0 + 0.25 * 7800.0);
        assert_eq!(num(lin.scale(-1.0)), 200.0);
        assert_eq!(num(lin.scale(2.0)), 8000.0);
        let exp = number(200.0, 8000.0, Curve::Exp);
        assert_eq!(num(exp.scale(0.0)), 200.0);
        assert_eq!(num(exp.scale(1.0)), 8000.0);
        // Equal steps are equal ratios: halfway is the geometric mean.
        assert!((num(exp.scale(0.5)) - (200.0f64 * 8000.0).sqrt()).abs() < 1e-9);
        let db = number(0.001, 1.0, Curve::Db);
        // Halfway between −60 dB and 0 dB is −30 dB.
        assert!((num(db.scale(0.5)) - 0.031_622_776_601_683_79).abs() < 1e-12);
    }

    #[test]
    fn discrete_targets_take_positions_and_indices() {
        let e = ControlTarget {
            node: "f".into(),
            param: "mode",
            range: TargetRange::Enum { choices: 3 },
        };
        assert_eq!(e.scale(0.0), ControlValue::Enum(0));
        assert_eq!(e.scale(0.5), ControlValue::Enum(1));
        assert_eq!(e.scale(1.0), ControlValue::Enum(2));
        assert_eq!(e.raw(2.0), Ok(ControlValue::Enum(2)));
        assert!(e
            .raw(3.0)
            .unwrap_err()
            .contains("valid: an index from 0 to 2"));
        let i = ControlTarget {
            node: "f".into(),
            param: "n",
            range: TargetRange::Integer { min: 1, max: 5 },
        };
        assert_eq!(i.scale(0.5), ControlValue::Integer(3));
        assert!(number(1.0, 2.0, Curve::Linear)
            .raw(1e9)
            .unwrap_err()
            .contains("out of range"));
        assert!(number(1.0, 2.0, Curve::Linear).raw(f64::NAN).is_err());
    }

    #[test]
    fn pitch_is_equal_tempered_for_frequencies() {
        let t = number(1.0, 2.0, Curve::Linear);
        assert_eq!(num(t.pitch(69)), 440.0);
        assert_eq!(num(t.pitch(81)), 880.0);
        assert!((num(t.pitch(60)) - 261.625_565_300_598_6).abs() < 1e-9);
    }
}
