//! Resolved param values and their conversion from the scene's raw values.

use super::{ParamKind, ParamSpec};
use crate::scene::units::{UnitError, NO_TEMPO_HELP};
use crate::scene::{suggest, Dimension, Musical, Quantity, Rational, RawValue, Tempo, TimeSpec};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A param's static value after unit conversion and range checking.
/// Equality compares arrays bit for bit, so a sequencer's rests (NaN
/// entries of its `steps`) equal themselves.
#[derive(Clone, Debug)]
pub enum Value {
    /// In the param's canonical unit.
    Number(f64),
    Integer(i64),
    /// Index into the enum's `choices`.
    Enum(usize),
    Bool(bool),
    Resource(Arc<AudioData>),
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

/// The WAV files [`AudioData::load`] reads, for its messages.
pub const WAV_FORMATS_READ: &str =
    "morphrt reads WAV files of 8-, 16-, 24- or 32-bit integer PCM or 32-bit float samples";

impl AudioData {
    /// Decodes a WAV file (integer PCM scaled by 2^-(bits-1), or 32-bit float).
    /// What is not one is refused saying what it is: a directory, a FIFO or
    /// a device (known from its metadata before it is opened, and checked
    /// again on the open file: reading a FIFO would wait for a writer), an
    /// empty file, another file, another WAV format.
    pub fn load(path: &Path) -> Result<AudioData, String> {
        use crate::scene::resource::{open_regular, NotRegular};
        let shown = path.display();
        let file = open_regular(path).map_err(|e| match e {
            NotRegular::Kind(k) => format!("`{shown}` is {k}, not a WAV file"),
            NotRegular::Io(e) => format!("cannot read `{shown}`: {e}"),
        })?;
        let len = file
            .metadata()
            .map_err(|e| format!("cannot read `{shown}`: {e}"))?
            .len();
        if len == 0 {
            return Err(format!(
                "`{shown}` is empty (0 bytes), not a WAV file; {WAV_FORMATS_READ}"
            ));
        }
        let reader = hound::WavReader::new(std::io::BufReader::new(file))
            .map_err(|e| unreadable_wav(path, &e))?;
        let spec = reader.spec();
        let nch = spec.channels as usize;
        if nch == 0 {
            return Err(format!("`{}` has no channels", path.display()));
        }
        let declared = reader.len() as usize;
        let interleaved: Vec<f64> = match spec.sample_format {
            hound::SampleFormat::Float => decode(
                reader.into_samples::<f32>(),
                |v| v as f64,
                path,
                declared,
                nch,
            )?,
            hound::SampleFormat::Int => {
                let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f64;
                let samples = reader.into_samples::<i32>();
                decode(samples, |v| v as f64 * scale, path, declared, nch)?
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

/// Every sample of a WAV file's data chunk, converted by `f`; a file that
/// ends before the `declared` samples of its header is named as cut short,
/// with how far its samples go.
fn decode<T>(
    samples: impl Iterator<Item = hound::Result<T>>,
    f: impl Fn(T) -> f64,
    path: &Path,
    declared: usize,
    nch: usize,
) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for s in samples {
        match s {
            Ok(v) => out.push(f(v)),
            Err(e) if is_short_read(&e) => {
                return Err(format!(
                    "`{}` is cut short: its header declares {declared} samples ({} frames of {nch} channels), but the file ends after {} (was it not completely written?)",
                    path.display(),
                    declared / nch,
                    out.len()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "cannot decode `{}` at sample {}: {e}",
                    path.display(),
                    out.len()
                ))
            }
        }
    }
    Ok(out)
}

/// Whether hound stopped because the file ended (it says so in an
/// `ErrorKind::Other` error of its own).
fn is_short_read(e: &hound::Error) -> bool {
    matches!(e, hound::Error::IoError(io)
        if io.kind() == std::io::ErrorKind::UnexpectedEof
            || io.to_string() == "Failed to read enough bytes.")
}

/// Why `path` could not be opened as a WAV file, from its first bytes: not
/// a RIFF WAVE file at all, a WAV of a format it does not read (named), or
/// what the decoder said.
fn unreadable_wav(path: &Path, e: &hound::Error) -> String {
    let shown = path.display();
    let mut head = Vec::new();
    if let Ok(f) = crate::scene::resource::open_regular(path) {
        use std::io::Read;
        let _ = f.take(4096).read_to_end(&mut head);
    }
    if head.len() < 12 || &head[0..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return format!(
            "`{shown}` is not a WAV file (it does not start with a RIFF WAVE header; {} bytes); {WAV_FORMATS_READ}",
            std::fs::metadata(path).map_or(0, |m| m.len())
        );
    }
    let cut = is_short_read(e);
    match wav_format(&head) {
        Some(what) => format!("`{shown}` holds {what}, which is not read; {WAV_FORMATS_READ}"),
        None if cut => format!(
            "`{shown}` is cut short: it ends inside its header, after {} bytes (was it not completely written?)",
            std::fs::metadata(path).map_or(0, |m| m.len())
        ),
        None => format!("cannot read `{shown}` as a WAV file: {e}; {WAV_FORMATS_READ}"),
    }
}

/// The sample format a RIFF WAVE header declares, in words (`64-bit float
/// samples`, `ADPCM-compressed audio`), when its `fmt ` chunk is among the
/// first bytes and is not one [`AudioData::load`] reads.
fn wav_format(head: &[u8]) -> Option<String> {
    let u16_at = |i: usize| Some(u16::from_le_bytes(head.get(i..i + 2)?.try_into().ok()?));
    let u32_at = |i: usize| Some(u32::from_le_bytes(head.get(i..i + 4)?.try_into().ok()?));
    let mut at = 12;
    while at + 8 <= head.len() {
        let len = u32_at(at + 4)? as usize;
        if &head[at..at + 4] == b"fmt " {
            let body = at + 8;
            let mut tag = u16_at(body)?;
            let bits = u16_at(body + 14)?;
            if tag == 0xFFFE {
                // WAVE_FORMAT_EXTENSIBLE: the format is the sub-format GUID's first two bytes.
                tag = u16_at(body + 24)?;
            }
            return unread_format(tag, bits);
        }
        at = at
            .saturating_add(8)
            .saturating_add(len)
            .saturating_add(len & 1);
    }
    None
}

/// A WAV `fmt ` chunk's format tag (the sub-format's, for
/// WAVE_FORMAT_EXTENSIBLE) and bits per sample in words (`64-bit float
/// samples`, `ADPCM-compressed audio`) when morphrt does not read it;
/// `None` for the formats it reads.
pub fn unread_format(tag: u16, bits: u16) -> Option<String> {
    match (tag, bits) {
        (1, 8 | 16 | 24 | 32) | (3, 32) => None,
        (1, b) => Some(format!("{b}-bit integer samples")),
        (3, b) => Some(format!("{b}-bit float samples")),
        (2 | 0x11, _) => Some("ADPCM-compressed audio".to_string()),
        (6, _) => Some("A-law audio".to_string()),
        (7, _) => Some("μ-law audio".to_string()),
        (0x55, _) => Some("MP3 audio".to_string()),
        (t, _) => Some(format!("audio in format 0x{t:04x}")),
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
        ParamKind::Resource => Err(ParamError::invalid(
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
