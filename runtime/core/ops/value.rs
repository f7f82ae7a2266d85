//! Resolved param values and their conversion from the scene's raw values.

use super::{ParamKind, ParamSpec};
use crate::scene::units::{UnitError, NO_TEMPO_HELP};
use crate::scene::{suggest, Dimension, Musical, Quantity, Rational, RawValue, Tempo, TimeSpec};
use std::path::PathBuf;
use std::sync::Arc;

/// A param's static value after unit conversion and range checking.
/// Equality compares arrays bit for bit, so a sequencer's rests (NaN
/// entries of its `steps`) equal themselves.
#[derive(Clone, Debug)]
pub enum Value {
    /// In the param's canonical unit.
    Number(f64),
    /// An integer.
    Integer(i64),
    /// Index into the enum's `choices`.
    Enum(usize),
    /// A boolean.
    Bool(bool),
    /// A decoded audio file (`@resource:NAME`).
    Resource(Arc<AudioData>),
    /// An array of numbers: gains, or a sequencer's steps (NaN for a rest).
    Gains(Vec<f64>),
    /// A length of time in exact seconds (a sequencer's step).
    Span(Rational),
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Number(a), Number(b)) => a == b,
            (Integer(a), Integer(b)) => a == b,
            (Enum(a), Enum(b)) => a == b,
            (Bool(a), Bool(b)) => a == b,
            (Resource(a), Resource(b)) => a == b,
            (Gains(a), Gains(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Span(a), Span(b)) => a == b,
            _ => false,
        }
    }
}

impl Value {
    /// The number, if this is a number param's value.
    pub(crate) fn as_number(&self) -> Option<f64> {
        match self {
            Value::Number(x) => Some(*x),
            _ => None,
        }
    }
}

/// A decoded audio file (a resource), channels as exact f64 samples.
#[derive(Debug, PartialEq)]
pub struct AudioData {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its sample rate, in Hz.
    pub sample_rate: u32,
    /// The samples of each channel.
    pub channels: Vec<Vec<f64>>,
}

impl AudioData {
    /// The length in frames (0 without channels).
    pub fn frames(&self) -> usize {
        self.channels.first().map_or(0, |c| c.len())
    }
}

/// Why a raw value does not fit a param.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamError {
    /// A unit of the wrong dimension: an error under strict and repro, a
    /// warning under live (the param keeps its default).
    WrongUnit(UnitError),
    /// Anything else: wrong JSON type, bad syntax, out of range, unknown choice.
    Invalid {
        /// What is wrong.
        message: String,
        /// What would be valid, if there is something to say.
        help: Option<String>,
    },
}

impl ParamError {
    fn invalid(message: String, help: impl Into<Option<String>>) -> ParamError {
        ParamError::Invalid {
            message,
            help: help.into(),
        }
    }
}

fn describe(raw: &RawValue) -> String {
    match raw {
        RawValue::Number { literal, .. } => format!("the number {literal}"),
        RawValue::Text(t) => format!("the string \"{t}\""),
        RawValue::Bool(b) => format!("the boolean {b}"),
        RawValue::Array(_) => "an array".to_string(),
        RawValue::Other(k) => k.to_string(),
    }
}

/// Converts a number or quantity string to the canonical unit of `dim`.
/// Beats and bars are read at `tempo`: a time in beats is its seconds, a
/// frequency in beats one cycle per that length (`"1/4beat"` at 120 bpm is
/// 8 Hz).
pub fn number_value(
    raw: &RawValue,
    dim: Dimension,
    sample_rate: u32,
    tempo: Option<&Tempo>,
) -> Result<f64, ParamError> {
    match raw {
        RawValue::Number { value, .. } => Ok(*value),
        RawValue::Text(t) if Musical::parse(t).is_some() => {
            let m = Musical::parse(t)
                .expect("checked")
                .map_err(|e| ParamError::invalid(e.to_string(), None))?;
            if !matches!(dim, Dimension::Time | Dimension::Frequency) {
                return Err(ParamError::invalid(
                    format!(
                        "`{t}` is in {}, a time, but this param is {} {}",
                        m.unit(),
                        if dim == Dimension::Amplitude || dim == Dimension::Angle {
                            "an"
                        } else {
                            "a"
                        },
                        dim.name()
                    ),
                    Some(unit_help(dim)),
                ));
            }
            let Some(tempo) = tempo else {
                return Err(ParamError::invalid(
                    crate::scene::units::no_tempo_message(t),
                    Some(NO_TEMPO_HELP.to_string()),
                ));
            };
            let out_of_range = || ParamError::invalid(format!("`{t}` is out of range"), None);
            let secs = tempo.seconds(m).ok_or_else(out_of_range)?;
            match dim {
                Dimension::Frequency => {
                    let hz = Rational::from_int(1)
                        .checked_div(secs)
                        .ok_or_else(|| {
                            ParamError::invalid(
                                format!("`{t}` is no length: a rate in beats is one cycle per that many beats, and must be greater than 0"),
                                None,
                            )
                        })?;
                    Ok(hz.to_f64())
                }
                _ => Ok(secs.to_f64()),
            }
        }
        RawValue::Text(t) => {
            let q = Quantity::parse(t).map_err(|e| ParamError::invalid(e.to_string(), None))?;
            q.to_canonical(dim, sample_rate).map_err(|e| match e {
                UnitError::WrongDimension { .. } => ParamError::WrongUnit(e),
                UnitError::Syntax(s) => ParamError::invalid(s, None),
                UnitError::NoTempo(_) => ParamError::invalid(e.to_string(), None),
            })
        }
        other => Err(ParamError::invalid(
            format!("expected a {} but found {}", dim.name(), describe(other)),
            Some(unit_help(dim)),
        )),
    }
}

fn unit_help(dim: Dimension) -> String {
    match dim {
        Dimension::Scalar => "write a plain number".to_string(),
        _ => format!(
            "write a number in {} or a string with a unit ({})",
            dim.canonical(),
            dim.units().join(", ")
        ),
    }
}

/// Resolves a raw value against a param's declaration. Resources are
/// resolved by the graph compiler (they need the scene's directories).
pub fn resolve_param(
    spec: &ParamSpec,
    raw: &RawValue,
    sample_rate: u32,
    tempo: Option<&Tempo>,
) -> Result<Value, ParamError> {
    match spec.kind {
        ParamKind::Number { dim, min, max, .. } => {
            let v = number_value(raw, dim, sample_rate, tempo)?;
            if !(v >= min && v <= max) {
                return Err(ParamError::invalid(
                    format!("`{}` = {v} is out of range", spec.name),
                    Some(
                        format!(
                            "valid range: {} … {} {}",
                            fmt_num(min),
                            fmt_num(max),
                            dim.canonical()
                        )
                        .trim_end()
                        .to_string(),
                    ),
                ));
            }
            Ok(Value::Number(v))
        }
        ParamKind::Integer { min, max, .. } => match raw {
            // A number in a string is that number (scenes/README.md).
            RawValue::Number { literal, .. } | RawValue::Text(literal)
                if matches!(raw, RawValue::Number { .. })
                    || serde_json::from_str::<serde_json::Number>(literal).is_ok() =>
            {
                let v: i64 = literal.parse().map_err(|_| {
                    ParamError::invalid(
                        format!("`{}` takes an integer, found {literal}", spec.name),
                        Some(format!("valid range: {min} … {max}")),
                    )
                })?;
                if v < min || v > max {
                    return Err(ParamError::invalid(
                        format!("`{}` = {v} is out of range", spec.name),
                        Some(format!("valid range: {min} … {max}")),
                    ));
                }
                Ok(Value::Integer(v))
            }
            other => Err(ParamError::invalid(
                format!(
                    "`{}` takes an integer, found {}",
                    spec.name,
                    describe(other)
                ),
                None,
            )),
        },
        ParamKind::Enum { choices, .. } => match raw {
            // Choices that are numbers (`oversampling`: "1", "2", "4") may be
            // written as JSON numbers, as numbers may be written as strings.
            RawValue::Number { literal, .. } if choices.contains(&literal.as_str()) => {
                Ok(Value::Enum(
                    choices
                        .iter()
                        .position(|c| c == literal)
                        .expect("contained"),
                ))
            }
            RawValue::Text(t) => match choices.iter().position(|c| c == t) {
                Some(i) => Ok(Value::Enum(i)),
                None => {
                    let mut help = format!("valid values: {}", choices.join(", "));
                    if let Some(s) = suggest::closest(t, choices.iter().copied()) {
                        help = format!("did you mean `{s}`? ({help})");
                    }
                    Err(ParamError::invalid(
                        format!("`{t}` is not a valid `{}`", spec.name),
                        Some(help),
                    ))
                }
            },
            other => Err(ParamError::invalid(
                format!(
                    "`{}` takes one of {}, found {}",
                    spec.name,
                    choices.join(", "),
                    describe(other)
                ),
                None,
            )),
        },
        ParamKind::Bool { .. } => match raw {
            RawValue::Bool(b) => Ok(Value::Bool(*b)),
            other => Err(ParamError::invalid(
                format!(
                    "`{}` takes true or false, found {}",
                    spec.name,
                    describe(other)
                ),
                None,
            )),
        },
        ParamKind::Gains => match raw {
            RawValue::Array(items) => {
                let mut gains = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let g = number_value(item, Dimension::Amplitude, sample_rate, tempo).map_err(
                        |e| match e {
                            ParamError::Invalid { message, help } => ParamError::invalid(
                                format!("`{}[{i}]`: {message}", spec.name),
                                help,
                            ),
                            e => e,
                        },
                    )?;
                    if !g.is_finite() {
                        return Err(ParamError::invalid(
                            format!("`{}[{i}]` is not finite", spec.name),
                            None,
                        ));
                    }
                    gains.push(g);
                }
                Ok(Value::Gains(gains))
            }
            other => Err(ParamError::invalid(
                format!(
                    "`{}` takes an array of gains, found {}",
                    spec.name,
                    describe(other)
                ),
                Some("e.g. [1.0, 0.5, \"-6dB\"]".to_string()),
            )),
        },
        ParamKind::Steps { max } => steps_value(spec, raw, max, sample_rate, tempo),
        ParamKind::StepLength { .. } => step_length(spec, raw, tempo),
        ParamKind::Resource | ParamKind::OptionalResource => Err(ParamError::invalid(
            format!("`{}` is resolved by the compiler", spec.name),
            None,
        )),
    }
}

/// A `steps` array: numbers (with units: `"440Hz"`, `"60midi"` read as
/// plain numbers of their unit's dimension … see below) or `null` rests,
/// at most `max`. A rest is NaN in the value.
fn steps_value(
    spec: &ParamSpec,
    raw: &RawValue,
    max: usize,
    sample_rate: u32,
    tempo: Option<&Tempo>,
) -> Result<Value, ParamError> {
    let RawValue::Array(items) = raw else {
        return Err(ParamError::invalid(
            format!(
                "`{}` takes an array of step values (numbers, or null for a rest), found {}",
                spec.name,
                describe(raw)
            ),
            Some("e.g. [60, null, 63, 67]".to_string()),
        ));
    };
    if items.len() > max {
        return Err(ParamError::invalid(
            format!(
                "`{}` has {} steps; at most {max} are allowed",
                spec.name,
                items.len()
            ),
            Some(format!("give 1 … {max} steps")),
        ));
    }
    if items.is_empty() {
        return Err(ParamError::invalid(
            format!("`{}` is empty", spec.name),
            Some(format!("give 1 … {max} steps, e.g. [60, null, 63, 67]")),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if matches!(item, RawValue::Other("null")) {
            out.push(f64::NAN);
            continue;
        }
        let v = number_value(item, Dimension::Scalar, sample_rate, tempo).map_err(|e| {
            let message = match e {
                ParamError::Invalid { message, .. } => message,
                ParamError::WrongUnit(e) => e.to_string(),
            };
            ParamError::invalid(
                format!("`{}[{i}]`: {message}", spec.name),
                Some(
                    "a step is a plain number (a note number, a level, …) or null for a rest"
                        .to_string(),
                ),
            )
        })?;
        if !v.is_finite() {
            return Err(ParamError::invalid(
                format!("`{}[{i}]` is not finite", spec.name),
                None,
            ));
        }
        out.push(v);
    }
    Ok(Value::Gains(out))
}

/// A step length: a note value `"1/16"` (a sixteenth note, a quarter
/// beat), beats or bars (`"1/4beat"`), or a time (`"125ms"`, a number of
/// seconds); exact, greater than zero.
fn step_length(
    spec: &ParamSpec,
    raw: &RawValue,
    tempo: Option<&Tempo>,
) -> Result<Value, ParamError> {
    let help = || {
        Some(
            "a step length is a note value (`\"1/16\"`: a sixteenth note), beats or bars (`\"1/4beat\"`), or a time (`\"125ms\"`, a number of seconds)"
                .to_string(),
        )
    };
    let text = match raw {
        RawValue::Number { literal, .. } => literal.clone(),
        RawValue::Text(t) => t.clone(),
        other => {
            return Err(ParamError::invalid(
                format!(
                    "`{}` takes a step length, found {}",
                    spec.name,
                    describe(other)
                ),
                help(),
            ))
        }
    };
    let bad = |why: String| ParamError::invalid(format!("`{}`: {why}", spec.name), help());
    let t = text.trim();
    // A note value: a/b of a whole note (4 beats).
    let note = t.split_once('/').and_then(|(a, b)| {
        let a: i128 = a.trim().parse().ok()?;
        let b: i128 = b.trim().parse().ok()?;
        (a > 0 && b > 0 && a <= 1 << 20 && b <= 1 << 20).then(|| Rational::new(4 * a, b))?
    });
    let secs = if let Some(beats) = note {
        let Some(tempo) = tempo else {
            return Err(ParamError::invalid(
                format!(
                    "`{}` = `{t}` is a note value (in beats), but the scene has no `tempo`",
                    spec.name
                ),
                Some(NO_TEMPO_HELP.to_string()),
            ));
        };
        tempo
            .beats_to_seconds(beats)
            .ok_or_else(|| bad(format!("`{t}` is out of range")))?
    } else {
        let parsed = match raw {
            RawValue::Number { .. } => TimeSpec::from_seconds_literal(t),
            _ => TimeSpec::parse_in(t, tempo),
        };
        match parsed {
            Ok(TimeSpec::Seconds(r)) => r,
            Ok(TimeSpec::Samples(_)) => {
                return Err(bad(format!(
                    "`{t}`: give a step length as a note value, beats or a time in s, ms or us"
                )))
            }
            Err(UnitError::NoTempo(_)) => {
                return Err(ParamError::invalid(
                    crate::scene::units::no_tempo_message(t),
                    Some(NO_TEMPO_HELP.to_string()),
                ))
            }
            Err(e) => return Err(bad(e.to_string())),
        }
    };
    // At least 1 ms, at most 1 hour.
    if secs.num * 1000 < secs.den || secs.num > 3600 * secs.den {
        return Err(ParamError::invalid(
            format!(
                "`{}` = `{t}` ({} s) is out of range",
                spec.name,
                secs.to_f64()
            ),
            Some("valid range: 1 ms … 1 hour a step".to_string()),
        ));
    }
    Ok(Value::Span(secs))
}

/// The default value of a param (resources have none).
pub fn default_value(spec: &ParamSpec) -> Option<Value> {
    Some(match spec.kind {
        ParamKind::Number { default, .. } => Value::Number(default),
        ParamKind::Integer { default, .. } => Value::Integer(default),
        ParamKind::Enum { choices, default } => {
            Value::Enum(choices.iter().position(|c| *c == default)?)
        }
        ParamKind::Bool { default } => Value::Bool(default),
        ParamKind::Gains => Value::Gains(Vec::new()),
        ParamKind::Steps { .. } => Value::Gains(vec![0.0]),
        ParamKind::StepLength { default_ms } => {
            Value::Span(Rational::new(default_ms as i128, 1000).expect("den > 0"))
        }
        ParamKind::Resource => return None,
        ParamKind::OptionalResource => Value::Resource(no_audio()),
    })
}

/// The value of an [`OptionalResource`](ParamKind::OptionalResource) param
/// a scene does not give: no file, no channels.
pub fn no_audio() -> Arc<AudioData> {
    Arc::new(AudioData {
        path: PathBuf::new(),
        sample_rate: 0,
        channels: Vec::new(),
    })
}

fn fmt_num(v: f64) -> String {
    if v == f64::INFINITY {
        "∞".to_string()
    } else if v == f64::NEG_INFINITY {
        "-∞".to_string()
    } else {
        format!("{v}")
    }
}
