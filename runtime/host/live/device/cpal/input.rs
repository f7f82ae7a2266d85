//! cpal's input stream: choosing an input configuration (the output's
//! rate, else the nearest the device records, at least the scene's input
//! channels, a sample format morphrt reads), converting what the device
//! records to f64 (and to the session's rate) on the capture thread, and
//! [`open_input`], which `run` calls.
//!
//! Integer samples of `b` bits become `v / (2^(b−1) − 1)`, as an integer
//! WAV input does ([`int_to_sample`]); unsigned ones are centred first;
//! f32 samples are taken as they are. The input keeps the device's own
//! format ([`InputFormat`]), in which a journal stores it exactly.

use super::{fault_of, find, id_of};
use crate::host::files::wav_in::int_to_sample;
use crate::host::live::device::input::{InputDevice, InputStreamSource};
use crate::host::live::device::{Cause, DeviceError, Direction, Need, Stream, StreamEvents};
use crate::host::live::input::ring::{InputRates, RingShape, RingWriter};
use crate::host::live::input::InputFormat;
use cpal::traits::{DeviceTrait, StreamTrait};
use cpal::{SampleFormat, SupportedStreamConfigRange};
use std::sync::Arc;
use std::time::Duration;

/// A sample type an input stream delivers, and how it becomes f64.
pub trait InputSample: cpal::SizedSample + Send + 'static {
    /// The sample as the engine reads it (±1 full scale).
    fn to_f64(self) -> f64;
}

impl InputSample for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl InputSample for i32 {
    fn to_f64(self) -> f64 {
        int_to_sample(self, 32)
    }
}

impl InputSample for cpal::I24 {
    fn to_f64(self) -> f64 {
        int_to_sample(self.inner(), 24)
    }
}

impl InputSample for i16 {
    fn to_f64(self) -> f64 {
        int_to_sample(self as i32, 16)
    }
}

impl InputSample for i8 {
    fn to_f64(self) -> f64 {
        int_to_sample(self as i32, 8)
    }
}

impl InputSample for u16 {
    fn to_f64(self) -> f64 {
        int_to_sample(self as i32 - 32768, 16)
    }
}

impl InputSample for u8 {
    fn to_f64(self) -> f64 {
        int_to_sample(self as i32 - 128, 8)
    }
}

/// The input format of a cpal sample format morphrt reads, in the order
/// it prefers them when the device's default is not one of them.
pub fn input_format(f: SampleFormat) -> Option<InputFormat> {
    match f {
        SampleFormat::F32 => Some(InputFormat::F32),
        SampleFormat::I32 => Some(InputFormat::Int(32)),
        SampleFormat::I24 => Some(InputFormat::Int(24)),
        SampleFormat::I16 | SampleFormat::U16 => Some(InputFormat::Int(16)),
        SampleFormat::I8 | SampleFormat::U8 => Some(InputFormat::Int(8)),
        _ => None,
    }
}

const PREFERRED: [SampleFormat; 7] = [
    SampleFormat::F32,
    SampleFormat::I32,
    SampleFormat::I24,
    SampleFormat::I16,
    SampleFormat::U16,
    SampleFormat::I8,
    SampleFormat::U8,
];

/// The configuration [`choose`] picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The rate it records at: the session's when it can, else the one
    /// the input converts from.
    pub sample_rate: u32,
    pub channels: u16,
    pub format: SampleFormat,
    /// The input period, when the device takes the block size.
    pub fixed: Option<usize>,
}

/// What an input device lacks to record for the session; the text
/// completes "the input device `ID` cannot record for this session: ".
#[derive(Clone, Debug, PartialEq)]
pub enum Lacks {
    /// No sample format morphrt reads: `offered` lists the device's.
    Format { offered: String },
    /// Neither the session's rate nor one converted to it: `offered`
    /// lists the rates the device records in a format morphrt reads.
    Rate { rate: u32, offered: String },
    /// At most `most` input channels at `rate`, and the scene reads
    /// `needs`.
    Channels { most: u16, rate: u32, needs: usize },
    /// Reopened, it records at `now` Hz, not at `then`, the rate the
    /// session's input converts from.
    RateChanged { now: u32, then: u32 },
}

impl std::fmt::Display for Lacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lacks::Format { offered } => write!(
                f,
                "it offers no sample format morphrt reads (it has {offered}; morphrt reads f32, i32, i24, i16, u16, i8, u8)"
            ),
            Lacks::Rate { rate, offered } => write!(
                f,
                "it cannot record at {rate} Hz, the output's rate, nor at a rate morphrt converts to it (it records {offered})"
            ),
            Lacks::Channels { most, rate, needs } => write!(
                f,
                "it has {most} input channel(s) at {rate} Hz, and the scene reads {needs} (input channels 0…{})",
                needs - 1
            ),
            Lacks::RateChanged { now, then } => write!(
                f,
                "it records at {now} Hz, not at {then} Hz, the rate the session's input converts from"
            ),
        }
    }
}

impl std::error::Error for Lacks {}

/// The device's input configurations cannot be read.
#[derive(Debug)]
struct NoConfigs(cpal::Error);

impl std::fmt::Display for NoConfigs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "it cannot record ({})", self.0)
    }
}

impl std::error::Error for NoConfigs {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Chooses an input configuration among `ranges`: the session's rate
/// (else the nearest rate the device records that converts to it, the
/// higher of two as near), the fewest channels that hold the scene's input width, the device's default
/// sample format when morphrt reads it (else f32, then the widest
/// integers), and an input period of one block when the device allows it.
/// The error says what the device lacks.
pub fn choose(
    ranges: &[SupportedStreamConfigRange],
    default_format: Option<SampleFormat>,
    need: &Need,
) -> Result<Choice, Lacks> {
    let readable: Vec<&SupportedStreamConfigRange> = ranges
        .iter()
        .filter(|r| input_format(r.sample_format()).is_some())
        .collect();
    if readable.is_empty() {
        return Err(Lacks::Format {
            offered: list(ranges.iter().map(|r| r.sample_format().to_string())),
        });
    }
    let session = need.sample_rate;
    let convertible = |r: u32| crate::dsp::resample::ratio(r, session).is_ok();
    let rate = readable
        .iter()
        .map(|r| session.clamp(r.min_sample_rate(), r.max_sample_rate()))
        .filter(|r| convertible(*r))
        .min_by_key(|r| (r.abs_diff(session), u32::MAX - r))
        .unwrap_or(session);
    let at_rate: Vec<_> = readable
        .iter()
        .filter(|r| r.min_sample_rate() <= rate && rate <= r.max_sample_rate())
        .collect();
    if at_rate.is_empty() {
        return Err(Lacks::Rate {
            rate,
            offered: list(readable.iter().map(|r| {
                if r.min_sample_rate() == r.max_sample_rate() {
                    format!("{} Hz", r.min_sample_rate())
                } else {
                    format!("{}…{} Hz", r.min_sample_rate(), r.max_sample_rate())
                }
            })),
        });
    }
    let wide: Vec<_> = at_rate
        .iter()
        .filter(|r| r.channels() as usize >= need.min_channels)
        .collect();
    let Some(most) = at_rate.iter().map(|r| r.channels()).max() else {
        unreachable!("at_rate is not empty");
    };
    if wide.is_empty() {
        return Err(Lacks::Channels {
            most,
            rate,
            needs: need.min_channels,
        });
    }
    let rank = |f: SampleFormat| {
        let preferred = PREFERRED
            .iter()
            .position(|p| *p == f)
            .unwrap_or(PREFERRED.len());
        (Some(f) != default_format, preferred)
    };
    let Some(best) = wide
        .iter()
        .min_by_key(|r| (rank(r.sample_format()), r.channels()))
    else {
        unreachable!("wide is not empty");
    };
    let fixed = match best.buffer_size() {
        cpal::SupportedBufferSize::Range { min, max }
            if (*min as usize) <= need.block && need.block <= *max as usize =>
        {
            Some(need.block)
        }
        _ => None,
    };
    Ok(Choice {
        sample_rate: rate,
        channels: best.channels(),
        format: best.sample_format(),
        fixed,
    })
}

/// `a, b, c` without repeats.
fn list(items: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for i in items {
        if !seen.contains(&i) {
            seen.push(i);
        }
    }
    seen.join(", ")
}

/// A cpal input device and the configuration chosen for it.
pub struct CpalInput {
    /// The id asked for (`--input-device`), or `None` for the default.
    asked: Option<String>,
    device: cpal::Device,
    id: String,
    need: Need,
    choice: Choice,
}

impl CpalInput {
    /// Finds the input device `id` (or the default input) and chooses its
    /// configuration for `need`.
    pub fn find(id: Option<&str>, need: Need) -> Result<CpalInput, DeviceError> {
        let device = find(id, Direction::Input)?;
        let device_id = id_of(&device);
        let choice = configure(&device, &need).map_err(|why| DeviceError::CannotRecord {
            id: device_id.clone(),
            why,
        })?;
        Ok(CpalInput {
            asked: id.map(str::to_string),
            device,
            id: device_id,
            need,
            choice,
        })
    }

    /// Channels per frame the stream delivers.
    pub fn channels(&self) -> usize {
        self.choice.channels as usize
    }

    /// The device's sample format, as the input keeps it.
    pub fn format(&self) -> InputFormat {
        input_format(self.choice.format).unwrap_or(InputFormat::F32)
    }

    /// Starts the stream for samples of type `T`.
    fn build<T: InputSample>(
        &self,
        mut writer: RingWriter,
        events: Arc<StreamEvents>,
    ) -> Result<cpal::Stream, cpal::Error> {
        let config = cpal::StreamConfig {
            channels: self.choice.channels,
            sample_rate: self.choice.sample_rate,
            buffer_size: match self.choice.fixed {
                Some(n) => cpal::BufferSize::Fixed(n as u32),
                None => cpal::BufferSize::Default,
            },
        };
        self.device.build_input_stream::<T, _, _>(
            config,
            move |data: &[T], _: &cpal::InputCallbackInfo| writer.push(data, T::to_f64),
            move |e: cpal::Error| {
                if let Some(f) = fault_of(&e) {
                    events.report(f);
                }
            },
            None,
        )
    }
}

/// The configuration of `device` for `need`.
fn configure(device: &cpal::Device, need: &Need) -> Result<Choice, Cause> {
    let ranges: Vec<SupportedStreamConfigRange> = device
        .supported_input_configs()
        .map_err(NoConfigs)?
        .collect();
    let default = device
        .default_input_config()
        .ok()
        .map(|c| c.sample_format());
    Ok(choose(&ranges, default, need)?)
}

struct CpalStream(#[allow(dead_code)] cpal::Stream);
impl Stream for CpalStream {}

impl InputStreamSource for CpalInput {
    fn prepare(&mut self, fallback: bool) -> Result<usize, DeviceError> {
        let asked = if fallback {
            None
        } else {
            self.asked.as_deref()
        };
        let again = CpalInput::find(asked, self.need)?;
        if again.choice.sample_rate != self.choice.sample_rate {
            // The ring converts from the rate the session started with.
            return Err(DeviceError::CannotRecord {
                id: again.id,
                why: Box::new(Lacks::RateChanged {
                    now: again.choice.sample_rate,
                    then: self.choice.sample_rate,
                }),
            });
        }
        *self = CpalInput {
            asked: self.asked.take(),
            ..again
        };
        Ok(self.channels())
    }

    fn open(
        &mut self,
        writer: RingWriter,
        events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, DeviceError> {
        let stream = match self.choice.format {
            SampleFormat::F32 => self.build::<f32>(writer, events),
            SampleFormat::I32 => self.build::<i32>(writer, events),
            SampleFormat::I24 => self.build::<cpal::I24>(writer, events),
            SampleFormat::I16 => self.build::<i16>(writer, events),
            SampleFormat::U16 => self.build::<u16>(writer, events),
            SampleFormat::I8 => self.build::<i8>(writer, events),
            SampleFormat::U8 => self.build::<u8>(writer, events),
            f => {
                return Err(DeviceError::stream_refused(format!(
                    "morphrt does not read {f} samples"
                )))
            }
        }
        .map_err(|e| {
            DeviceError::stream(format!("cannot open an input stream on `{}`", self.id), e)
        })?;
        stream.play().map_err(|e| {
            DeviceError::stream(format!("cannot start the input stream on `{}`", self.id), e)
        })?;
        Ok(Box::new(CpalStream(stream)))
    }

    fn id(&self) -> String {
        self.id.clone()
    }

    fn period_frames(&self) -> Option<usize> {
        self.choice.fixed
    }
}

/// Frames an input ring holds: room for several input periods and
/// blocks (a device without a fixed period is assumed to deliver up to
/// 4096 frames at once), and never less than 16384.
pub fn ring_frames(period: Option<usize>, block: usize) -> usize {
    (8 * (period.unwrap_or(4096) + block)).max(16384)
}

/// Opens the input device `run` records from: the input device `id` (as
/// `morphrt devices` shows it) or the default input, at the output's rate
/// (else converted from the nearest rate it records), with at least the channels `need` asks (one at least), its ring read
/// one block per block of output. The stream starts at once; what it
/// records before the callback starts is not played.
pub fn open_input(id: Option<&str>, need: Need) -> Result<InputDevice, DeviceError> {
    let Need {
        sample_rate, block, ..
    } = need;
    let need = Need {
        min_channels: need.min_channels.max(1),
        ..need
    };
    let source = CpalInput::find(id, need)?;
    let period = source.choice.fixed;
    let rates = (source.choice.sample_rate != sample_rate).then_some(InputRates {
        device_hz: source.choice.sample_rate,
        session_hz: sample_rate,
    });
    let shape = RingShape {
        channels: source.channels(),
        format: source.format(),
        capacity_frames: ring_frames(period, block),
        block,
    };
    // A lost stream: no push for 8 periods, and never sooner than 0.5 s.
    let period_s = period.unwrap_or(4096) as f64 / sample_rate.max(1) as f64;
    let stall = Duration::from_secs_f64(period_s * 8.0).max(Duration::from_millis(500));
    InputDevice::start_at(Box::new(source), shape, rates, stall)
}
