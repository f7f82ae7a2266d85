//! Resolved param values and their conversion from the scene's raw values.

use super::{ParamKind, ParamSpec};
use crate::scene::units::UnitError;
use crate::scene::{suggest, Dimension, Quantity, RawValue};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A param's static value after unit conversion and range checking.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// In the param's canonical unit.
    Number(f64),
    Integer(i64),
    /// Index into the enum's `choices`.
    Enum(usize),
    Bool(bool),
    Resource(Arc<AudioData>),
    Gains(Vec<f64>),
}

impl Value {
    /// The number, if this is a number param's value.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Value::Number(x) => Some(*x),
            _ => None,
        }
    }
}

/// A decoded audio file (a resource), channels as exact f64 samples.
#[derive(Debug, PartialEq)]
pub struct AudioData {
    pub path: PathBuf,
    pub sample_rate: u32,
    pub channels: Vec<Vec<f64>>,
}

impl AudioData {
    /// Decodes a WAV file (integer PCM scaled by 2^-(bits-1), or 32-bit float).
    pub fn load(path: &Path) -> Result<AudioData, String> {
        let reader = hound::WavReader::open(path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let spec = reader.spec();
        let nch = spec.channels as usize;
        if nch == 0 {
            return Err(format!("`{}` has no channels", path.display()));
        }
        let interleaved: Vec<f64> = match spec.sample_format {
            hound::SampleFormat::Float => reader
                .into_samples::<f32>()
                .map(|s| s.map(|v| v as f64))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("cannot decode `{}`: {e}", path.display()))?,
            hound::SampleFormat::Int => {
                let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f64;
                reader
                    .into_samples::<i32>()
                    .map(|s| s.map(|v| v as f64 * scale))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("cannot decode `{}`: {e}", path.display()))?
            }
        };
        if let Some(k) = interleaved.iter().position(|x| !x.is_finite()) {
            return Err(format!(
                "`{}` holds a non-finite sample (NaN or infinity) at frame {}, channel {}",
                path.display(),
                k / nch,
                k % nch
            ));
        }
        let frames = interleaved.len() / nch;
        let channels = (0..nch)
            .map(|c| (0..frames).map(|f| interleaved[f * nch + c]).collect())
            .collect();
        Ok(AudioData {
            path: path.to_path_buf(),
            sample_rate: spec.sample_rate,
            channels,
        })
    }

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
        message: String,
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
pub fn number_value(raw: &RawValue, dim: Dimension, sample_rate: u32) -> Result<f64, ParamError> {
    match raw {
        RawValue::Number { value, .. } => Ok(*value),
        RawValue::Text(t) => {
            let q = Quantity::parse(t).map_err(|e| ParamError::invalid(e.to_string(), None))?;
            q.to_canonical(dim, sample_rate).map_err(|e| match e {
                UnitError::WrongDimension { .. } => ParamError::WrongUnit(e),
                UnitError::Syntax(s) => ParamError::invalid(s, None),
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
) -> Result<Value, ParamError> {
    match spec.kind {
        ParamKind::Number { dim, min, max, .. } => {
            let v = number_value(raw, dim, sample_rate)?;
            if !(v >= min && v <= max) {
                return Err(ParamError::invalid(
                    format!("`{}` = {v} is out of range", spec.name),
                    Some(format!(
                        "valid range: {} … {} {}",
                        fmt_num(min),
                        fmt_num(max),
                        dim.canonical()
                    )),
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
                    let g =
                        number_value(item, Dimension::Amplitude, sample_rate).map_err(
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
        ParamKind::Resource => Err(ParamError::invalid(
            format!("`{}` is resolved by the compiler", spec.name),
            None,
        )),
    }
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
        ParamKind::Resource => return None,
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
