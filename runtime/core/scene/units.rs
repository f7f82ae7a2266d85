//! Units and exact times (`scenes/README.md`, *Values and units*).
//!
//! A param value is a bare number in the param's canonical unit, or a string
//! `<decimal><unit>`. Canonical units: Hz, s, linear amplitude, rad. Times are
//! exact decimals converted to samples with rational arithmetic: `"1.1s"` at
//! 48 kHz is sample 52800 exactly.

use std::io::Write;

/// An exact rational number, always reduced, denominator > 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rational {
    /// The numerator.
    pub num: i128,
    /// The denominator (> 0).
    pub den: i128,
}

/// A param's physical dimension, which decides the units it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dimension {
    /// Hz (canonical), kHz, midi.
    Frequency,
    /// s (canonical), ms, us, samples.
    Time,
    /// Linear amplitude (canonical), dB.
    Amplitude,
    /// rad (canonical), deg.
    Angle,
    /// A level in dB (canonical): a bare number or `dB` (`-20`, `"-20dB"`),
    /// never converted to linear (a compressor's threshold).
    Level,
    /// A plain number: no unit accepted.
    Scalar,
}

/// A unit suffix, case-sensitive as written in scenes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Hertz.
    Hz,
    /// Kilohertz.
    KHz,
    /// Seconds.
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Samples at the scene's rate.
    Samples,
    /// Decibels.
    DB,
    /// Radians.
    Rad,
    /// Degrees.
    Deg,
    /// A MIDI note number (69 is 440 Hz).
    Midi,
}

/// A time: seconds or samples, exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpec {
    /// Seconds.
    Seconds(Rational),
    /// Samples at the scene's rate.
    Samples(Rational),
}

/// A parsed `<decimal><unit>` string (or bare number).
#[derive(Clone, Debug, PartialEq)]
pub struct Quantity {
    /// The decimal text as written (`"-12"`, `"1.5"`, `"-inf"`).
    pub(crate) number: String,
    pub(crate) unit: Option<Unit>,
}

impl Rational {
    pub(crate) const ZERO: Rational = Rational { num: 0, den: 1 };

    /// `num/den` reduced. Returns `None` for a zero denominator.
    pub fn new(num: i128, den: i128) -> Option<Rational> {
        if den == 0 {
            return None;
        }
        let g = gcd(num.unsigned_abs(), den.unsigned_abs()).max(1) as i128;
        let s = if den < 0 { -1 } else { 1 };
        Some(Rational {
            num: s * num / g,
            den: s * den / g,
        })
    }

    pub(crate) fn from_int(v: i128) -> Rational {
        Rational { num: v, den: 1 }
    }

    /// Parses an exact decimal: `-?digits[.digits][(e|E)[+-]digits]`.
    /// Returns `None` for anything else or for magnitudes that do not fit.
    pub(crate) fn parse_decimal(s: &str) -> Option<Rational> {
        let (mant, exp) = match s.find(['e', 'E']) {
            Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
            None => (s, 0),
        };
        let (neg, mant) = match mant.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, mant.strip_prefix('+').unwrap_or(mant)),
        };
        let (int, frac) = match mant.split_once('.') {
            Some((i, f)) => (i, f),
            None => (mant, ""),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits = format!("{int}{frac}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 30 {
            return None;
        }
        let mut num: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let mut scale = exp - frac.len() as i32;
        if num == 0 {
            scale = 0;
        }
        if !(-30..=30).contains(&scale) {
            return None;
        }
        let mut den: i128 = 1;
        if scale >= 0 {
            num = num.checked_mul(10i128.checked_pow(scale as u32)?)?;
        } else {
            den = 10i128.pow((-scale) as u32);
        }
        if neg {
            num = -num;
        }
        Rational::new(num, den)
    }

    pub(crate) fn checked_mul_int(self, k: i128) -> Option<Rational> {
        Rational::new(self.num.checked_mul(k)?, self.den)
    }

    pub(crate) fn checked_div_int(self, k: i128) -> Option<Rational> {
        Rational::new(self.num, self.den.checked_mul(k)?)
    }

    pub(crate) fn checked_mul(self, o: Rational) -> Option<Rational> {
        let g1 = gcd(self.num.unsigned_abs(), o.den.unsigned_abs()).max(1) as i128;
        let g2 = gcd(o.num.unsigned_abs(), self.den.unsigned_abs()).max(1) as i128;
        Rational::new(
            (self.num / g1).checked_mul(o.num / g2)?,
            (self.den / g2).checked_mul(o.den / g1)?,
        )
    }

    /// `self / o`; `None` when `o` is zero or on overflow.
    pub(crate) fn checked_div(self, o: Rational) -> Option<Rational> {
        if o.num == 0 {
            return None;
        }
        self.checked_mul(Rational::new(o.den, o.num)?)
    }

    pub(crate) fn checked_add(self, o: Rational) -> Option<Rational> {
        let g = gcd(self.den.unsigned_abs(), o.den.unsigned_abs()).max(1) as i128;
        let den = (self.den / g).checked_mul(o.den)?;
        let num = self
            .num
            .checked_mul(o.den / g)?
            .checked_add(o.num.checked_mul(self.den / g)?)?;
        Rational::new(num, den)
    }

    pub(crate) fn checked_sub(self, o: Rational) -> Option<Rational> {
        self.checked_add(Rational {
            num: o.num.checked_neg()?,
            den: o.den,
        })
    }

    /// A short text: `120`, `96.5`, or `2880000/97` when not a finite decimal.
    pub(crate) fn decimal_text(self) -> String {
        if self.den == 1 {
            return self.num.to_string();
        }
        let mut d = self.den;
        while d % 2 == 0 {
            d /= 2;
        }
        while d % 5 == 0 {
            d /= 5;
        }
        if d != 1 {
            return format!("{}/{}", self.num, self.den);
        }
        let mut scale = 0u32;
        let mut n = self;
        while n.den != 1 && scale < 30 {
            n = match n.checked_mul_int(10) {
                Some(x) => x,
                None => return format!("{}/{}", self.num, self.den),
            };
            scale += 1;
        }
        let neg = n.num < 0;
        let digits = format!(
            "{:0>width$}",
            n.num.unsigned_abs(),
            width = scale as usize + 1
        );
        let (i, f) = digits.split_at(digits.len() - scale as usize);
        format!("{}{i}.{f}", if neg { "-" } else { "" })
    }

    pub(crate) fn is_integer(self) -> bool {
        self.den == 1
    }

    pub(crate) fn floor(self) -> i128 {
        self.num.div_euclid(self.den)
    }

    /// Nearest integer, ties away from zero... no: ties to even, so that a
    /// snap is symmetric and deterministic.
    pub fn round_half_even(self) -> i128 {
        let f = self.floor();
        let rem2 = 2 * (self.num - f * self.den); // 2·frac·den
        match rem2.cmp(&self.den) {
            std::cmp::Ordering::Less => f,
            std::cmp::Ordering::Greater => f + 1,
            std::cmp::Ordering::Equal => {
                if f % 2 == 0 {
                    f
                } else {
                    f + 1
                }
            }
        }
    }

    /// Whether it is below zero.
    pub fn is_negative(self) -> bool {
        self.num < 0
    }

    /// The nearest f64 (exact for the values scenes use; correctly rounded
    /// through the decimal text otherwise).
    pub(crate) fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

impl Unit {
    pub(crate) const ALL: [Unit; 10] = [
        Unit::Hz,
        Unit::KHz,
        Unit::S,
        Unit::Ms,
        Unit::Us,
        Unit::Samples,
        Unit::DB,
        Unit::Rad,
        Unit::Deg,
        Unit::Midi,
    ];

    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Unit::Hz => "Hz",
            Unit::KHz => "kHz",
            Unit::S => "s",
            Unit::Ms => "ms",
            Unit::Us => "us",
            Unit::Samples => "samples",
            Unit::DB => "dB",
            Unit::Rad => "rad",
            Unit::Deg => "deg",
            Unit::Midi => "midi",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Unit> {
        Unit::ALL.into_iter().find(|u| u.suffix() == s)
    }

    pub(crate) fn dimension(self) -> Dimension {
        match self {
            Unit::Hz | Unit::KHz | Unit::Midi => Dimension::Frequency,
            Unit::S | Unit::Ms | Unit::Us | Unit::Samples => Dimension::Time,
            Unit::DB => Dimension::Amplitude,
            Unit::Rad | Unit::Deg => Dimension::Angle,
        }
    }
}

impl Dimension {
    /// Units this dimension accepts, for "what would be valid" messages.
    pub(crate) fn units(self) -> &'static [&'static str] {
        match self {
            Dimension::Frequency => &["Hz", "kHz", "midi", "beats", "bars"],
            Dimension::Time => &["s", "ms", "us", "samples", "beats", "bars"],
            Dimension::Amplitude => &["dB", "(linear number)"],
            Dimension::Angle => &["rad", "deg"],
            Dimension::Level => &["dB"],
            Dimension::Scalar => &[],
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Dimension::Frequency => "frequency",
            Dimension::Time => "time",
            Dimension::Amplitude => "amplitude",
            Dimension::Angle => "angle",
            Dimension::Level => "level",
            Dimension::Scalar => "plain number",
        }
    }

    /// The canonical unit's name (for `ops`).
    pub fn canonical(self) -> &'static str {
        match self {
            Dimension::Frequency => "Hz",
            Dimension::Time => "s",
            Dimension::Amplitude => "linear",
            Dimension::Angle => "rad",
            Dimension::Level => "dB",
            Dimension::Scalar => "",
        }
    }
}

/// Why a quantity could not be converted.
#[derive(Clone, Debug, PartialEq)]
pub enum UnitError {
    /// Not `<decimal><unit>` at all.
    Syntax(String),
    /// A known unit of another dimension (`"3ms"` for a frequency).
    WrongDimension { unit: Unit, expected: Dimension },
    /// Beats or bars (the text) in a scene without a tempo.
    NoTempo(String),
}

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitError::Syntax(s) => f.write_str(s),
            UnitError::NoTempo(t) => write!(f, "{}; {NO_TEMPO_HELP}", no_tempo_message(t)),
            UnitError::WrongDimension { unit, expected } => {
                let a = |name: &str| {
                    let an = name.starts_with(['a', 'e', 'i', 'o', 'u']);
                    format!("{} {name}", if an { "an" } else { "a" })
                };
                write!(
                    f,
                    "unit `{}` is {}, but this param is {}",
                    unit.suffix(),
                    a(unit.dimension().name()),
                    a(expected.name())
                )?;
                if !expected.units().is_empty() {
                    write!(f, " (valid units: {})", expected.units().join(", "))?;
                }
                Ok(())
            }
        }
    }
}

impl Quantity {
    /// Parses `<decimal><unit>` (an optional space before the unit), e.g.
    /// `"110Hz"`, `"-12dB"`, `"-inf dB"`, `"1.5kHz"`, `"250ms"`, `"0.5"`.
    pub(crate) fn parse(text: &str) -> Result<Quantity, UnitError> {
        let t = text.trim();
        let split = t
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_digit()
                    || c == '.'
                    || ((c == '-' || c == '+') && (i == 0 || t[..i].ends_with(['e', 'E'])))
                    || ((c == 'e' || c == 'E')
                        && i > 0
                        && t[i + 1..]
                            .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')))
            })
            .map(|(i, _)| i)
            .unwrap_or(t.len());
        let (mut number, rest) = t.split_at(split);
        let mut rest = rest;
        // "-inf dB" / "inf"
        if number.is_empty() || number == "-" || number == "+" {
            if let Some(r) = rest.strip_prefix("inf") {
                number = if t.starts_with('-') { "-inf" } else { "inf" };
                rest = r;
            }
        }
        let unit_text = rest.trim_start();
        let bad = || {
            // A unit in the wrong case (`440hz`) gets the right one.
            let suffixes = Unit::ALL.map(|u| u.suffix());
            let fix = suffixes
                .into_iter()
                .find(|u| u.eq_ignore_ascii_case(unit_text));
            let units = suffixes.join(", ");
            UnitError::Syntax(match fix {
                Some(u) if !number.is_empty() => {
                    let space = &rest[..rest.len() - unit_text.len()];
                    format!("`{text}` is not a number with a unit: did you mean `{number}{space}{u}`? (units are case-sensitive: {units})")
                }
                _ => format!("`{text}` is not a number with a unit (expected e.g. `440Hz`, `-12dB`, `250ms`; units: {units})"),
            })
        };
        if number.is_empty() {
            return Err(bad());
        }
        if number != "-inf"
            && number != "inf"
            && Rational::parse_decimal(number).is_none()
            && number.parse::<f64>().is_err()
        {
            return Err(bad());
        }
        let unit = if unit_text.is_empty() {
            None
        } else {
            Some(Unit::parse(unit_text).ok_or_else(bad)?)
        };
        Ok(Quantity {
            number: number.to_string(),
            unit,
        })
    }

    /// The value in the canonical unit of `dim`. `sample_rate` converts
    /// `samples` to seconds. Conversions use the pinned libm, so every profile
    /// sees the same static values.
    pub(crate) fn to_canonical(&self, dim: Dimension, sample_rate: u32) -> Result<f64, UnitError> {
        let unit = match self.unit {
            None => return parse_f64(&self.number, 0),
            Some(u) => u,
        };
        if dim == Dimension::Level && unit == Unit::DB {
            return parse_f64(&self.number, 0);
        }
        if unit.dimension() != dim {
            return Err(UnitError::WrongDimension {
                unit,
                expected: dim,
            });
        }
        let v = match unit {
            Unit::Hz | Unit::S | Unit::Rad => parse_f64(&self.number, 0)?,
            Unit::KHz => parse_f64(&self.number, 3)?,
            Unit::Ms => parse_f64(&self.number, -3)?,
            Unit::Us => parse_f64(&self.number, -6)?,
            Unit::Samples => parse_f64(&self.number, 0)? / sample_rate as f64,
            Unit::DB => {
                let db = parse_f64(&self.number, 0)?;
                if db == f64::NEG_INFINITY {
                    0.0
                } else {
                    libm::pow(10.0, db / 20.0)
                }
            }
            Unit::Deg => parse_f64(&self.number, 0)? * (core::f64::consts::PI / 180.0),
            Unit::Midi => {
                let n = parse_f64(&self.number, 0)?;
                440.0 * libm::pow(2.0, (n - 69.0) / 12.0)
            }
        };
        Ok(v)
    }
}

/// Parses a decimal scaled by 10^shift, correctly rounded (the shift is
/// applied to the text, not by a float multiply).
fn parse_f64(number: &str, shift: i32) -> Result<f64, UnitError> {
    match number {
        "-inf" => return Ok(f64::NEG_INFINITY),
        "inf" => return Ok(f64::INFINITY),
        _ => {}
    }
    let text = if shift == 0 {
        number.to_string()
    } else {
        match number.find(['e', 'E']) {
            Some(i) => {
                let e: i32 = number[i + 1..]
                    .parse()
                    .map_err(|_| UnitError::Syntax(format!("bad exponent in `{number}`")))?;
                format!("{}e{}", &number[..i], e + shift)
            }
            None => format!("{number}e{shift}"),
        }
    };
    text.parse::<f64>()
        .map_err(|_| UnitError::Syntax(format!("`{number}` is not a number")))
}

impl TimeSpec {
    /// Parses a time string: `"1.5s"`, `"250ms"`, `"20us"`, `"4800samples"`.
    /// Beats and bars need a tempo: see `TimeSpec::parse_in`.
    pub fn parse(text: &str) -> Result<TimeSpec, UnitError> {
        TimeSpec::parse_in(text, None)
    }

    /// [`TimeSpec::parse`], with beats and bars (`"1.5beats"`, `"2bars"`,
    /// `"1/8beat"`) at `tempo`, as exact seconds.
    pub(crate) fn parse_in(text: &str, tempo: Option<&Tempo>) -> Result<TimeSpec, UnitError> {
        if let Some(m) = Musical::parse(text) {
            let m = m?;
            let tempo = tempo.ok_or_else(|| UnitError::NoTempo(text.trim().to_string()))?;
            return tempo
                .seconds(m)
                .map(TimeSpec::Seconds)
                .ok_or_else(|| UnitError::Syntax(format!("`{text}` is out of range")));
        }
        if let Some(seconds) = clock_time_seconds(text) {
            return TimeSpec::from_seconds_literal(&seconds);
        }
        let q = Quantity::parse(text)?;
        let r = Rational::parse_decimal(&q.number)
            .ok_or_else(|| UnitError::Syntax(format!("`{text}` is not an exact decimal time")))?;
        let unit = q.unit.ok_or_else(|| {
            UnitError::Syntax(format!(
                "`{text}` needs a time unit (s, ms, us, samples), or write it as a JSON number of seconds"
            ))
        })?;
        let scaled = |k: i128| {
            r.checked_div_int(k)
                .ok_or_else(|| UnitError::Syntax(format!("`{text}` is out of range")))
        };
        match unit {
            Unit::S => Ok(TimeSpec::Seconds(r)),
            Unit::Ms => Ok(TimeSpec::Seconds(scaled(1000)?)),
            Unit::Us => Ok(TimeSpec::Seconds(scaled(1_000_000)?)),
            Unit::Samples => Ok(TimeSpec::Samples(r)),
            other => Err(UnitError::WrongDimension {
                unit: other,
                expected: Dimension::Time,
            }),
        }
    }

    /// A JSON number's literal text, in seconds.
    pub(crate) fn from_seconds_literal(literal: &str) -> Result<TimeSpec, UnitError> {
        Rational::parse_decimal(literal)
            .map(TimeSpec::Seconds)
            .ok_or_else(|| UnitError::Syntax(format!("`{literal}` is not an exact decimal time")))
    }

    /// The exact position on the sample clock (may be fractional).
    pub fn to_samples(self, sample_rate: u32) -> Option<Rational> {
        match self {
            TimeSpec::Seconds(r) => r.checked_mul_int(sample_rate as i128),
            TimeSpec::Samples(r) => Some(r),
        }
    }

    pub(crate) fn is_negative(self) -> bool {
        match self {
            TimeSpec::Seconds(r) | TimeSpec::Samples(r) => r.is_negative(),
        }
    }
}

/// A scene's musical clock: `"tempo": "120bpm"` and `"meter": "4/4"`.
///
/// A beat is a quarter note at `bpm` beats a minute, whatever the meter; a
/// bar is the meter's numerator of its denominator's notes, in beats
/// `num · 4 / den` (4/4: 4 beats, 6/8: 3 beats, 3/2: 6 beats). Every
/// conversion is exact: `beats · 60 / bpm` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tempo {
    /// Quarter notes a minute, > 0.
    pub(crate) bpm: Rational,
    /// Numerator and denominator of the meter (4/4 when not given).
    pub(crate) meter: (u32, u32),
}

/// A count of beats or bars, as written (`"1.5beats"`, `"2bars"`, `"1/8beat"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Musical {
    pub(crate) count: Rational,
    pub(crate) bars: bool,
}

/// The largest tempo a scene may give.
pub(crate) const MAX_BPM: i128 = 10_000;
/// The meter's denominators (note values) a scene may give.
pub(crate) const METER_DENOMINATORS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// The largest meter numerator.
pub(crate) const MAX_METER_BEATS: u32 = 64;
/// What a tempo and a meter look like, for errors.
pub(crate) const TEMPO_HELP: &str = "a tempo is a string `<number>bpm` greater than 0 and at most 10000, e.g. `\"tempo\": \"120bpm\"` or `\"96.5bpm\"`";
pub(crate) const METER_HELP: &str = "a meter is `<beats>/<note value>`: beats 1 … 64 and a note value 1, 2, 4, 8, 16, 32 or 64, e.g. `\"4/4\"`, `\"3/4\"`, `\"6/8\"`";

impl Tempo {
    /// Parses a tempo, `"120bpm"` (a space before `bpm` allowed).
    pub(crate) fn parse_bpm(text: &str) -> Result<Rational, String> {
        let t = text.trim();
        let Some(n) = t.strip_suffix("bpm").or_else(|| t.strip_suffix("BPM")) else {
            return Err(format!("`{text}` is not a tempo"));
        };
        match Rational::parse_decimal(n.trim_end()) {
            Some(r) if r.num > 0 && r.num <= MAX_BPM * r.den => Ok(r),
            Some(_) => Err(format!(
                "tempo `{text}` is out of range: it must be greater than 0 and at most {MAX_BPM}bpm"
            )),
            None => Err(format!("`{text}` is not a tempo")),
        }
    }

    /// Parses a meter, `"4/4"`, `"6/8"`.
    pub(crate) fn parse_meter(text: &str) -> Result<(u32, u32), String> {
        let bad = || format!("`{text}` is not a meter");
        let (a, b) = text.trim().split_once('/').ok_or_else(bad)?;
        let num: u32 = a.trim().parse().map_err(|_| bad())?;
        let den: u32 = b.trim().parse().map_err(|_| bad())?;
        if num == 0 || num > MAX_METER_BEATS {
            return Err(format!(
                "meter `{text}` has {num} beats a bar; give 1 … {MAX_METER_BEATS}"
            ));
        }
        if !METER_DENOMINATORS.contains(&den) {
            return Err(format!(
                "meter `{text}` has note value {den}; give 1, 2, 4, 8, 16, 32 or 64"
            ));
        }
        Ok((num, den))
    }

    /// Beats (quarter notes) in a bar: `num · 4 / den`.
    pub(crate) fn bar_beats(&self) -> Rational {
        Rational::new(self.meter.0 as i128 * 4, self.meter.1 as i128).expect("den > 0")
    }

    /// The beats a count of beats or bars is.
    pub(crate) fn beats(&self, m: Musical) -> Option<Rational> {
        if m.bars {
            m.count.checked_mul(self.bar_beats())
        } else {
            Some(m.count)
        }
    }

    /// Seconds a count of beats is: `beats · 60 / bpm`, exact.
    pub(crate) fn beats_to_seconds(&self, beats: Rational) -> Option<Rational> {
        beats.checked_mul_int(60)?.checked_div(self.bpm)
    }

    /// Seconds of a count of beats or bars, exact.
    pub(crate) fn seconds(&self, m: Musical) -> Option<Rational> {
        self.beats_to_seconds(self.beats(m)?)
    }

    /// Samples a beat lasts at `sample_rate`: `sample_rate · 60 / bpm`
    /// (120 bpm at 48 kHz: 24000 exactly; 97 bpm: 2880000/97).
    pub(crate) fn samples_per_beat(&self, sample_rate: u32) -> Rational {
        Rational::from_int(sample_rate as i128 * 60)
            .checked_div(self.bpm)
            .expect("bpm > 0 and small")
    }

    /// The tempo as written, `120bpm`.
    pub(crate) fn bpm_text(&self) -> String {
        format!("{}bpm", self.bpm.decimal_text())
    }
}

impl Musical {
    /// Reads `<count><unit>` where the unit is `beat`, `beats`, `bar` or
    /// `bars` and the count a decimal or a fraction `a/b` (`"1/8beat"`).
    /// `None` when the text does not end in one of those units; an error
    /// when it does but the count is not a number.
    pub(crate) fn parse(text: &str) -> Option<Result<Musical, UnitError>> {
        let t = text.trim();
        let (count, bars) = [
            ("beats", false),
            ("beat", false),
            ("bars", true),
            ("bar", true),
        ]
        .into_iter()
        .find_map(|(u, bars)| t.strip_suffix(u).map(|c| (c.trim_end(), bars)))?;
        let bad = || {
            UnitError::Syntax(format!(
                "`{text}` is not a count of beats or bars (e.g. `1.5beats`, `2bars`, `1/8beat`)"
            ))
        };
        let value = match count.split_once('/') {
            Some((a, b)) => {
                let a = Rational::parse_decimal(a.trim());
                let b = Rational::parse_decimal(b.trim());
                match (a, b) {
                    (Some(a), Some(b)) if b.num != 0 => a.checked_div(b),
                    _ => None,
                }
            }
            None => Rational::parse_decimal(count),
        };
        Some(value.map(|count| Musical { count, bars }).ok_or_else(bad))
    }

    /// The unit as a user writes it, for messages.
    pub(crate) fn unit(&self) -> &'static str {
        if self.bars {
            "bars"
        } else {
            "beats"
        }
    }
}

/// The error for beats or bars in a scene without a tempo.
pub(crate) fn no_tempo_message(text: &str) -> String {
    format!("`{text}` is in beats or bars, but the scene has no `tempo`")
}

/// The help for [`no_tempo_message`].
pub(crate) const NO_TEMPO_HELP: &str = "add `\"tempo\": \"120bpm\"` (and optionally `\"meter\": \"4/4\"`) at the top level of the scene, or give the time in s, ms or samples";

/// A time given on the command line (`-d`, `--duration`, `--until`,
/// `--snapshot-at`, `--from`, `--to`): `10s`, `250ms`, `4800samples`,
/// `1m30s`, `2h`, or a bare number of seconds. Parsed once, when the
/// arguments are ([`TimeArg::parse`] is the clap value parser); converted
/// to samples once the sample rate is known, within the one duration limit
/// ([`super::MAX_DURATION_S`], 24 h) that `render -d`, a scene's
/// `duration`, `run --duration` and a resumed render share.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeArg {
    text: String,
    spec: ArgSpec,
}

/// A command-line time: a clock time, or beats and bars read at the
/// scene's tempo.
#[derive(Clone, Debug, PartialEq)]
enum ArgSpec {
    Time(TimeSpec),
    Musical(Musical),
}

impl TimeArg {
    /// Parses a time; refuses a negative one and anything that is not a time.
    pub fn parse(text: &str) -> Result<TimeArg, String> {
        if text.trim_start().starts_with('-') {
            return Err(format!(
                "`{text}` is negative; give a time such as 10s, 1m30s, 2h or 4800samples"
            ));
        }
        let bad = |e: UnitError| {
            format!("bad duration `{text}`: {e} (e.g. 10s, 250ms, 1m30s, 2h, 4800samples, 8bars)")
        };
        if let Some(m) = Musical::parse(text) {
            let m = m.map_err(bad)?;
            return Ok(TimeArg {
                text: text.to_string(),
                spec: ArgSpec::Musical(m),
            });
        }
        let spec = TimeSpec::parse(text)
            .or_else(|_| TimeSpec::from_seconds_literal(text.trim()))
            .map_err(bad)?;
        if spec.is_negative() {
            return Err(format!(
                "`{text}` is negative; give a time such as 10s, 1m30s, 2h or 4800samples"
            ));
        }
        Ok(TimeArg {
            text: text.to_string(),
            spec: ArgSpec::Time(spec),
        })
    }

    /// The text as given, for messages.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The time in samples at `sample_rate`, rounded half to even (with a
    /// warning on `log` when it is not a whole number of samples); at most
    /// the duration limit. Zero is allowed: a position on the timeline.
    ///
    /// Beats and bars (`-d 8bars`) are read at the scene's `tempo`, and
    /// refused without one.
    pub fn position(
        &self,
        sample_rate: u32,
        tempo: Option<&Tempo>,
        log: &mut dyn Write,
    ) -> Result<u64, String> {
        let text = &self.text;
        let exact = self.exact(sample_rate, tempo)?;
        let limit = crate::scene::max_duration_samples(sample_rate) as i128;
        let Some(r) = exact.filter(|r| r.round_half_even() <= limit) else {
            return Err(format!(
                "duration `{text}` is longer than {}",
                crate::scene::duration_limit_text(sample_rate)
            ));
        };
        if !r.is_integer() {
            let _ = writeln!(
                log,
                "warning: duration `{text}` is not a whole number of samples at {sample_rate} Hz; using {} samples",
                r.round_half_even()
            );
        }
        Ok(r.round_half_even() as u64)
    }

    /// [`TimeArg::position`] of a length, which must be at least one sample:
    /// zero, or a time that rounds to no sample, is refused saying so.
    pub fn length(
        &self,
        sample_rate: u32,
        tempo: Option<&Tempo>,
        log: &mut dyn Write,
    ) -> Result<u64, String> {
        let text = &self.text;
        match self.exact(sample_rate, tempo)? {
            Some(r) if r.round_half_even() == 0 && r.is_integer() => {
                Err(format!("duration `{text}` is zero; give a length of at least one sample"))
            }
            Some(r) if r.round_half_even() == 0 => Err(format!(
                "duration `{text}` is shorter than one sample at {sample_rate} Hz (it is {} samples; one sample is 1/{sample_rate} s); give at least `1samples`",
                r.to_f64()
            )),
            _ => self.position(sample_rate, tempo, log),
        }
    }

    /// The exact samples, `None` when out of range.
    fn exact(&self, sample_rate: u32, tempo: Option<&Tempo>) -> Result<Option<Rational>, String> {
        Ok(match &self.spec {
            ArgSpec::Time(t) => t.to_samples(sample_rate),
            ArgSpec::Musical(m) => {
                let Some(tempo) = tempo else {
                    return Err(format!(
                        "duration `{}` is in {}, but the scene has no `tempo`: add `\"tempo\": \"120bpm\"` to the scene, or give the duration in s, ms or samples",
                        self.text,
                        m.unit()
                    ));
                };
                tempo
                    .seconds(*m)
                    .and_then(|s| TimeSpec::Seconds(s).to_samples(sample_rate))
            }
        })
    }
}

impl std::fmt::Display for TimeArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for TimeArg {
    type Err = String;
    fn from_str(s: &str) -> Result<TimeArg, String> {
        TimeArg::parse(s)
    }
}

/// The value parser of every `--seed`: an unsigned 64-bit integer, with an
/// error that gives the range (a negative seed is not mistaken for an
/// option; one too large names the maximum).
pub fn seed_arg(text: &str) -> Result<u64, String> {
    let range = format!("the seed is an unsigned integer 0 … {}", u64::MAX);
    let t = text.trim();
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    if let Ok(seed) = t.parse::<u64>() {
        return Ok(seed);
    }
    Err(if t.strip_prefix('-').is_some_and(digits) {
        format!("`{text}` is negative: {range}")
    } else if digits(t.strip_prefix('+').unwrap_or(t)) {
        format!("`{text}` is above the maximum {}: {range}", u64::MAX)
    } else {
        format!("`{text}` is not an integer: {range}")
    })
}

/// `2h`, `1m30s`, `1h2m3.5s`: hours and minutes (integers) with optional
/// seconds, as an exact decimal number of seconds; `None` for anything else
/// (plain `10s`, `250ms` and `4800samples` are units). [`TimeSpec::parse`]
/// reads these first, so the scene and the command line take the same
/// times.
fn clock_time_seconds(text: &str) -> Option<String> {
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    let t = text.trim();
    let (h, rest) = match t.split_once('h') {
        Some((h, r)) if digits(h) => (Some(h), r),
        _ => (None, t),
    };
    let (m, rest) = match rest.split_once('m') {
        // `250ms` is milliseconds, not minutes.
        Some((m, r)) if digits(m) && !r.starts_with('s') => (Some(m), r),
        _ => (None, rest),
    };
    if h.is_none() && m.is_none() {
        return None;
    }
    let secs = match rest {
        "" => "0",
        r => {
            let n = r.strip_suffix('s')?;
            let (int, frac) = n.split_once('.').unwrap_or((n, ""));
            if !digits(int) || !(frac.is_empty() || digits(frac)) {
                return None;
            }
            n
        }
    };
    let whole = h
        .unwrap_or("0")
        .parse::<u64>()
        .ok()?
        .checked_mul(3600)?
        .checked_add(m.unwrap_or("0").parse::<u64>().ok()?.checked_mul(60)?)?;
    let (int, frac) = secs.split_once('.').unwrap_or((secs, ""));
    let total = whole.checked_add(int.parse().ok()?)?;
    Some(if frac.is_empty() {
        total.to_string()
    } else {
        format!("{total}.{frac}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`TimeArg::length`] of `text`, as the command line converts `-d`.
    fn parse_duration(text: &str, sample_rate: u32, log: &mut dyn Write) -> Result<u64, String> {
        TimeArg::parse(text)?.length(sample_rate, None, log)
    }

    #[test]
    fn exact_decimal_times() {
        let t = TimeSpec::parse("1.1s").unwrap();
        assert_eq!(t.to_samples(48000).unwrap(), Rational::from_int(52800));
        let t = TimeSpec::parse("250ms").unwrap();
        assert_eq!(
            t.to_samples(44100).unwrap(),
            Rational::new(11025, 1).unwrap()
        );
        let t = TimeSpec::parse("4800samples").unwrap();
        assert_eq!(t.to_samples(48000).unwrap(), Rational::from_int(4800));
        let t = TimeSpec::parse("10us").unwrap();
        assert_eq!(t.to_samples(48000).unwrap(), Rational::new(12, 25).unwrap());
        assert!(!t.to_samples(48000).unwrap().is_integer());
        let t = TimeSpec::from_seconds_literal("0.1").unwrap();
        assert_eq!(t.to_samples(48000).unwrap(), Rational::from_int(4800));
    }

    #[test]
    fn rounding() {
        assert_eq!(Rational::new(5, 2).unwrap().round_half_even(), 2);
        assert_eq!(Rational::new(7, 2).unwrap().round_half_even(), 4);
        assert_eq!(Rational::new(-5, 2).unwrap().round_half_even(), -2);
        assert_eq!(Rational::new(12, 25).unwrap().round_half_even(), 0);
        assert_eq!(Rational::new(13, 25).unwrap().round_half_even(), 1);
        assert_eq!(Rational::new(-1, 3).unwrap().floor(), -1);
    }

    #[test]
    fn quantities_convert_to_canonical_units() {
        let c = |s: &str, d| Quantity::parse(s).unwrap().to_canonical(d, 48000);
        assert_eq!(c("110Hz", Dimension::Frequency).unwrap(), 110.0);
        assert_eq!(c("1.5kHz", Dimension::Frequency).unwrap(), 1500.0);
        assert_eq!(c("69midi", Dimension::Frequency).unwrap(), 440.0);
        assert_eq!(c("250ms", Dimension::Time).unwrap(), 0.25);
        assert_eq!(c("4800samples", Dimension::Time).unwrap(), 0.1);
        assert_eq!(c("-inf dB", Dimension::Amplitude).unwrap(), 0.0);
        assert_eq!(c("0dB", Dimension::Amplitude).unwrap(), 1.0);
        assert!((c("-6dB", Dimension::Amplitude).unwrap() - 0.501187).abs() < 1e-6);
        assert_eq!(
            c("180deg", Dimension::Angle).unwrap(),
            core::f64::consts::PI
        );
        assert_eq!(c("0.707", Dimension::Scalar).unwrap(), 0.707);
        assert_eq!(c("1e3Hz", Dimension::Frequency).unwrap(), 1000.0);
        // 0.1 ms is correctly rounded, not 0.1 * 1e-3 in floating point.
        assert_eq!(c("0.1ms", Dimension::Time).unwrap(), 1e-4);
    }

    #[test]
    fn wrong_dimension_and_syntax_errors() {
        let e = Quantity::parse("3ms")
            .unwrap()
            .to_canonical(Dimension::Frequency, 48000)
            .unwrap_err();
        assert!(matches!(
            e,
            UnitError::WrongDimension { unit: Unit::Ms, .. }
        ));
        assert!(e.to_string().contains("Hz"));
        assert!(Quantity::parse("440hz").is_err());
        assert!(Quantity::parse("fast").is_err());
        assert!(Quantity::parse("").is_err());
        assert!(TimeSpec::parse("3Hz").is_err());
        assert!(TimeSpec::parse("3").is_err());
    }

    #[test]
    fn hours_and_minutes_are_exact_seconds() {
        assert_eq!(clock_time_seconds("2h").as_deref(), Some("7200"));
        assert_eq!(clock_time_seconds("1m30s").as_deref(), Some("90"));
        assert_eq!(clock_time_seconds("1h2m3.5s").as_deref(), Some("3723.5"));
        assert_eq!(clock_time_seconds("5m").as_deref(), Some("300"));
        for plain in ["10s", "250ms", "4800samples", "1.5", "xm", "1h2x"] {
            assert_eq!(clock_time_seconds(plain), None, "{plain}");
        }
        let mut log = Vec::new();
        assert_eq!(
            parse_duration("1m30s", 48_000, &mut log).unwrap(),
            90 * 48_000
        );
        assert_eq!(parse_duration("250ms", 48_000, &mut log).unwrap(), 12_000);
        // The scene's times read the same clock forms.
        assert_eq!(
            TimeSpec::parse("1m30s").unwrap(),
            TimeSpec::from_seconds_literal("90").unwrap()
        );
        assert_eq!(
            TimeSpec::parse("2h").unwrap(),
            TimeSpec::from_seconds_literal("7200").unwrap()
        );
        assert!(TimeSpec::parse("1m30").is_err());
        let e = parse_duration("-5s", 48_000, &mut log).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
    }

    // `run --duration` has render's 24 h limit.
    #[test]
    fn run_duration_has_the_render_limit() {
        let mut log = Vec::new();
        let limit = crate::scene::max_duration_samples(48_000);
        assert_eq!(parse_duration("24h", 48_000, &mut log).unwrap(), limit);
        assert_eq!(parse_duration("86400s", 48_000, &mut log).unwrap(), limit);
        for over in [
            "86400.001s",
            "24h1s",
            "1e30s",
            "100000000000000000000samples",
        ] {
            let e = parse_duration(over, 48_000, &mut log)
                .unwrap_err()
                .to_string();
            assert!(e.contains("duration limit of 24 h (86400 s"), "{over}: {e}");
        }
    }

    #[test]
    fn beats_and_bars_are_exact_at_the_tempo() {
        let t = |bpm: &str, meter: &str| Tempo {
            bpm: Tempo::parse_bpm(bpm).unwrap(),
            meter: Tempo::parse_meter(meter).unwrap(),
        };
        let t120 = t("120bpm", "4/4");
        assert_eq!(t120.samples_per_beat(48_000), Rational::from_int(24_000));
        let at = |text: &str, tempo: &Tempo| {
            TimeSpec::parse_in(text, Some(tempo))
                .unwrap()
                .to_samples(48_000)
                .unwrap()
        };
        assert_eq!(at("1.5beats", &t120), Rational::from_int(36_000));
        assert_eq!(at("1beat", &t120), Rational::from_int(24_000));
        assert_eq!(at("2bars", &t120), Rational::from_int(192_000));
        assert_eq!(at("1bar", &t120), Rational::from_int(96_000));
        assert_eq!(at("1/8beat", &t120), Rational::from_int(3_000));
        assert_eq!(at("3/2 beats", &t120), Rational::from_int(36_000));
        // 6/8: a bar is six eighths, three (quarter-note) beats.
        let t68 = t("120bpm", "6/8");
        assert_eq!(at("1bar", &t68), Rational::from_int(72_000));
        // 97 bpm: a beat is 2880000/97 samples, not whole.
        let t97 = t("97bpm", "4/4");
        let b = at("1beat", &t97);
        assert_eq!(b, Rational::new(2_880_000, 97).unwrap());
        assert_eq!(b.round_half_even(), 29_691); // 29690.72…
        assert_eq!(at("97beats", &t97), Rational::from_int(2_880_000));
        // 96.5 bpm is exact too.
        assert_eq!(
            t("96.5bpm", "4/4").samples_per_beat(48_000),
            Rational::new(5_760_000, 193).unwrap()
        );
        // Without a tempo, beats are refused, naming what to add.
        let e = TimeSpec::parse("2bars").unwrap_err();
        assert!(matches!(e, UnitError::NoTempo(_)));
        assert!(e.to_string().contains("\"tempo\": \"120bpm\""), "{e}");
        assert!(matches!(Musical::parse("x beats"), Some(Err(_))));
        assert!(matches!(Musical::parse("1/0beat"), Some(Err(_))));
        assert_eq!(Musical::parse("120bpm"), None);
        assert_eq!(t120.bpm_text(), "120bpm");
        assert_eq!(Rational::new(193, 2).unwrap().decimal_text(), "96.5");
        assert_eq!(
            Rational::new(2_880_000, 97).unwrap().decimal_text(),
            "2880000/97"
        );
    }

    #[test]
    fn bad_tempos_and_meters_say_what_is_valid() {
        for bad in ["0bpm", "-5bpm", "10001bpm"] {
            let e = Tempo::parse_bpm(bad).unwrap_err();
            assert!(e.contains("out of range"), "{bad}: {e}");
        }
        for bad in ["fast", "120", "bpm", "1.2.3bpm"] {
            assert!(
                Tempo::parse_bpm(bad).unwrap_err().contains("not a tempo"),
                "{bad}"
            );
        }
        assert!(Tempo::parse_meter("4/0")
            .unwrap_err()
            .contains("note value 0"));
        assert!(Tempo::parse_meter("4/3")
            .unwrap_err()
            .contains("1, 2, 4, 8"));
        assert!(Tempo::parse_meter("0/4").unwrap_err().contains("1 … 64"));
        assert!(Tempo::parse_meter("x").unwrap_err().contains("not a meter"));
        assert_eq!(Tempo::parse_meter("7/8"), Ok((7, 8)));
    }

    #[test]
    fn a_duration_in_bars_needs_the_tempo() {
        let mut log = Vec::new();
        let t120 = Tempo {
            bpm: Rational::from_int(120),
            meter: (4, 4),
        };
        let d = TimeArg::parse("2bars").unwrap();
        assert_eq!(d.length(48_000, Some(&t120), &mut log).unwrap(), 192_000);
        let e = d.length(48_000, None, &mut log).unwrap_err();
        assert!(e.contains("no `tempo`") && e.contains("120bpm"), "{e}");
        let t97 = Tempo {
            bpm: Rational::from_int(97),
            meter: (4, 4),
        };
        let d = TimeArg::parse("1beat").unwrap();
        assert_eq!(d.length(48_000, Some(&t97), &mut log).unwrap(), 29_691);
        assert!(String::from_utf8_lossy(&log).contains("using 29691 samples"));
    }
}
