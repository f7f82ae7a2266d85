//! The cpal backend, [`CpalHost`]: cpal's default host (ALSA on Linux).
//! Listing devices (outputs and inputs), choosing an output stream
//! configuration, and [`CpalDevice`], the [`Device`] that plays through
//! one; its input streams are [`input`].

use crate::host::live::device::input::InputDevice;
use crate::host::live::device::{
    names, Device, DeviceError, DeviceInfo, Direction, Host, Need, Opened, Request, Stream,
    StreamEvents, StreamFault,
};
use crate::host::live::player::PlayerCell;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use std::sync::Arc;

pub mod input;

/// alsa-lib prints its own errors to stderr while cpal probes devices
/// ("ALSA lib confmisc.c:855:(parse_card) cannot find card '0'"); morphrt
/// reports what matters itself, so alsa-lib's lines are dropped, except
/// under `-v`, where its default handler stays and prints them.
#[cfg(target_os = "linux")]
pub(crate) fn quiet_alsa() {
    use std::ffi::{c_char, c_int};
    /// The handler type is C-variadic (`const char *fmt, ...`); a handler
    /// that never reads the variable arguments can be a fixed-signature
    /// function, which stable Rust can define.
    type Handler = unsafe extern "C" fn(*const c_char, c_int, *const c_char, c_int, *const c_char);
    #[link(name = "asound")]
    extern "C" {
        fn snd_lib_error_set_handler(handler: Option<Handler>) -> c_int;
    }
    unsafe extern "C" fn ignore(
        _file: *const c_char,
        _line: c_int,
        _function: *const c_char,
        _err: c_int,
        _fmt: *const c_char,
    ) {
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    if crate::host::term::verbose() {
        return;
    }
    ONCE.call_once(|| {
        // SAFETY: sets a process-wide pointer in alsa-lib to a function that
        // lives for the whole program and touches none of its arguments.
        unsafe {
            snd_lib_error_set_handler(Some(ignore));
        }
    });
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn quiet_alsa() {}

/// cpal's default host as a backend (see the module docs). Its ids are
/// cpal's: `HOST:DEVICE` (`alsa:default`).
pub struct CpalHost;

impl Host for CpalHost {
    fn name(&self) -> String {
        format!("cpal ({})", cpal::default_host().id().name())
    }

    fn outputs(&self) -> Result<Vec<DeviceInfo>, DeviceError> {
        list_of(Direction::Output)
    }

    fn inputs(&self) -> Result<Vec<DeviceInfo>, DeviceError> {
        list_of(Direction::Input)
    }

    fn owns(&self, id: &str) -> bool {
        // `alsa:…` on Linux: a host cpal was built with.
        id.parse::<cpal::DeviceId>().is_ok()
    }

    fn open_output(&self, id: Option<&str>, request: &Request) -> Result<Opened, DeviceError> {
        open(id, request)
    }

    fn open_input(&self, id: Option<&str>, need: Need) -> Result<InputDevice, DeviceError> {
        input::open_input(id, need)
    }
}

/// Every device of the default host on the `dir` side.
fn list_of(dir: Direction) -> Result<Vec<DeviceInfo>, DeviceError> {
    quiet_alsa();
    let host = cpal::default_host();
    let default = match dir {
        Direction::Output => host.default_output_device(),
        Direction::Input => host.default_input_device(),
    };
    let default_id = default.and_then(|d| d.id().ok()).map(|i| i.to_string());
    let devices: Vec<cpal::Device> = match dir {
        Direction::Output => host.output_devices().map(|d| d.collect()),
        Direction::Input => host.input_devices().map(|d| d.collect()),
    }
    .map_err(|e| DeviceError::List {
        source: Box::new(e),
    })?;
    Ok(devices
        .iter()
        .map(|d| describe(d, dir, default_id.as_deref()))
        .collect())
}

/// One device as `morphrt devices` shows it, on the `dir` side.
fn describe(d: &cpal::Device, dir: Direction, default_id: Option<&str>) -> DeviceInfo {
    let id = id_of(d);
    let default_config = match dir {
        Direction::Output => d.default_output_config(),
        Direction::Input => d.default_input_config(),
    };
    let default_config = default_config.ok().map(|c| {
        format!(
            "{} ch, {} Hz, {}",
            c.channels(),
            c.sample_rate(),
            c.sample_format()
        )
    });
    let ranges = match dir {
        Direction::Output => d.supported_output_configs().map(|it| it.collect()),
        Direction::Input => d.supported_input_configs().map(|it| it.collect()),
    };
    DeviceInfo {
        is_default: default_id == Some(id.as_str()),
        name: d.to_string(),
        id,
        default_config,
        configs: ranges.map(summarize).unwrap_or_default(),
    }
}

/// One line for all supported ranges: channel range, rate range, formats,
/// period range.
fn summarize(ranges: Vec<cpal::SupportedStreamConfigRange>) -> Vec<String> {
    if ranges.is_empty() {
        return Vec::new();
    }
    let ch_min = ranges.iter().map(|r| r.channels()).min().unwrap_or(0);
    let ch_max = ranges.iter().map(|r| r.channels()).max().unwrap_or(0);
    let sr_min = ranges
        .iter()
        .map(|r| r.min_sample_rate())
        .min()
        .unwrap_or(0);
    let sr_max = ranges
        .iter()
        .map(|r| r.max_sample_rate())
        .max()
        .unwrap_or(0);
    let mut formats: Vec<String> = Vec::new();
    for r in &ranges {
        let f = r.sample_format().to_string();
        if !formats.contains(&f) {
            formats.push(f);
        }
    }
    let buf = ranges
        .iter()
        .filter_map(|r| match r.buffer_size() {
            cpal::SupportedBufferSize::Range { min, max } => Some((*min, *max)),
            cpal::SupportedBufferSize::Unknown => None,
        })
        .fold(None, |acc: Option<(u32, u32)>, (a, b)| {
            Some(acc.map_or((a, b), |(x, y)| (x.min(a), y.max(b))))
        });
    vec![format!(
        "{ch_min}…{ch_max} channels, {sr_min}…{sr_max} Hz, formats {}, period {}",
        formats.join(" "),
        buf.map_or("unknown".to_string(), |(a, b)| format!("{a}…{b} frames"))
    )]
}

/// The device `id` names (as `morphrt devices` shows it), or the default
/// one on the `dir` side; an error lists that side's devices.
pub(crate) fn find(id: Option<&str>, dir: Direction) -> Result<cpal::Device, DeviceError> {
    quiet_alsa();
    let host = cpal::default_host();
    let available = || names(dir);
    match (id, dir) {
        (Some(id), _) => {
            let parsed: cpal::DeviceId = id.parse().map_err(|e| DeviceError::BadId {
                id: id.to_string(),
                source: Box::new(e),
                available: available(),
            })?;
            let found = host.device_by_id(&parsed);
            found.ok_or_else(|| match dir {
                Direction::Output => DeviceError::NotFound {
                    id: id.to_string(),
                    available: available(),
                },
                Direction::Input => DeviceError::NoInput {
                    id: id.to_string(),
                    available: available(),
                },
            })
        }
        (None, Direction::Output) => {
            host.default_output_device()
                .ok_or_else(|| DeviceError::NoDefault {
                    available: available(),
                })
        }
        (None, Direction::Input) => {
            host.default_input_device()
                .ok_or_else(|| DeviceError::NoDefaultInput {
                    available: available(),
                })
        }
    }
}

/// A device's id as `morphrt devices` shows it.
pub(crate) fn id_of(device: &cpal::Device) -> String {
    device
        .id()
        .map(|i| i.to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// The chosen device and how to drive it.
pub struct CpalDevice {
    device: cpal::Device,
    config: cpal::StreamConfig,
    fixed: Option<usize>,
}

/// Finds the device and a configuration: f32 samples, the scene's rate if
/// the device has it (else its default rate, with a warning), two channels
/// for a mono bus, and a fixed period when the device allows one.
pub fn open(id: Option<&str>, req: &Request) -> Result<Opened, DeviceError> {
    let device = find(id, Direction::Output)?;
    let device_id = id_of(&device);
    let ranges: Vec<cpal::SupportedStreamConfigRange> = device
        .supported_output_configs()
        .map_err(|e| DeviceError::CannotPlay {
            id: device_id.clone(),
            source: Box::new(e),
            available: names(Direction::Output),
        })?
        .filter(|r| r.sample_format() == cpal::SampleFormat::F32)
        .collect();
    if ranges.is_empty() {
        return Err(DeviceError::NoF32 {
            id: device_id,
            available: names(Direction::Output),
        });
    }
    let want_ch = req.channels_wanted() as u16;
    let mut warnings = Vec::new();
    let has_rate = |r: &cpal::SupportedStreamConfigRange| {
        r.min_sample_rate() <= req.sample_rate && req.sample_rate <= r.max_sample_rate()
    };
    let range = ranges
        .iter()
        .find(|r| r.channels() == want_ch && has_rate(r))
        .or_else(|| {
            ranges
                .iter()
                .find(|r| r.channels() >= want_ch && has_rate(r))
        })
        .or_else(|| {
            ranges
                .iter()
                .filter(|r| has_rate(r))
                .max_by_key(|r| r.channels())
        })
        .or_else(|| ranges.first())
        .expect("non-empty");
    let sample_rate = if has_rate(range) {
        req.sample_rate
    } else {
        let fallback = device
            .default_output_config()
            .map(|c| c.sample_rate())
            .unwrap_or(range.max_sample_rate())
            .clamp(range.min_sample_rate(), range.max_sample_rate());
        warnings.push(format!(
            "device `{device_id}` cannot play {} Hz; running the scene at {fallback} Hz",
            req.sample_rate
        ));
        fallback
    };
    let fixed = match range.buffer_size() {
        cpal::SupportedBufferSize::Range { min, max }
            if (*min as usize) <= req.period && req.period <= *max as usize =>
        {
            Some(req.period)
        }
        _ => None,
    };
    let config = cpal::StreamConfig {
        channels: range.channels(),
        sample_rate,
        buffer_size: match fixed {
            Some(n) => cpal::BufferSize::Fixed(n as u32),
            None => cpal::BufferSize::Default,
        },
    };
    Ok(Opened {
        channels: range.channels() as usize,
        sample_rate,
        id: device_id,
        warnings,
        device: Box::new(CpalDevice {
            device,
            config,
            fixed,
        }),
    })
}

/// The failure a stream error means for the control thread, if any.
pub(crate) fn fault_of(e: &cpal::Error) -> Option<StreamFault> {
    match e.kind() {
        cpal::ErrorKind::DeviceNotAvailable => Some(StreamFault::DeviceNotAvailable),
        cpal::ErrorKind::StreamInvalidated => Some(StreamFault::StreamInvalidated),
        // Xruns are counted by the player itself (and by the capture
        // ring); a route change needs nothing.
        cpal::ErrorKind::Xrun
        | cpal::ErrorKind::DeviceChanged
        | cpal::ErrorKind::RealtimeDenied => None,
        _ => Some(StreamFault::Other),
    }
}

struct CpalStream(#[allow(dead_code)] cpal::Stream);
impl Stream for CpalStream {}

impl Device for CpalDevice {
    fn open(
        &mut self,
        cell: Arc<PlayerCell>,
        events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, DeviceError> {
        let err_events = events.clone();
        let stream = self
            .device
            .build_output_stream::<f32, _, _>(
                self.config,
                move |data: &mut [f32], _: &cpal::OutputCallbackInfo| cell.fill(data),
                move |e: cpal::Error| {
                    if let Some(f) = fault_of(&e) {
                        err_events.report(f);
                    }
                },
                None,
            )
            .map_err(|e| DeviceError::stream("cannot open an output stream", e))?;
        stream
            .play()
            .map_err(|e| DeviceError::stream("cannot start the output stream", e))?;
        Ok(Box::new(CpalStream(stream)))
    }

    fn period_frames(&self) -> Option<usize> {
        self.fixed
    }
}
