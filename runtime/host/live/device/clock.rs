//! The clock backend: one output, the clock device (`--device clock`),
//! which plays nowhere but calls back at real-time pace, so a scene can
//! play on a machine without a sound card. It has no inputs and no
//! default device: it plays only when asked for by name.

use crate::host::live::device::input::InputDevice;
use crate::host::live::device::{
    names, Device, DeviceError, DeviceInfo, Direction, Host, Need, Opened, Request, Stream,
    StreamEvents,
};
use crate::host::live::player::PlayerCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The device id of the headless device paced by a clock.
pub const CLOCK_DEVICE: &str = "clock";

/// What an xrun is on the clock device, said at the first one.
pub const XRUN_MEANING: &str =
    "on the clock device an xrun is a callback that missed its real-time deadline on this machine (there is no sound card to underrun): the engine was late, or the machine was busy";

/// What an xrun is on the clock device, in the summary.
pub const XRUN_SUMMARY: &str =
    "the clock device has no sound card: an xrun is a callback that missed its real-time deadline on this machine";

/// The clock backend (see the module docs).
pub struct ClockHost;

impl Host for ClockHost {
    fn name(&self) -> String {
        "clock (no sound card, paced in real time)".to_string()
    }

    fn outputs(&self) -> Result<Vec<DeviceInfo>, DeviceError> {
        Ok(vec![DeviceInfo {
            id: CLOCK_DEVICE.to_string(),
            name: "plays nowhere, at real-time pace".to_string(),
            default_config: None,
            configs: vec![
                "any channels, any rate, format f32, period the block size (or --period)"
                    .to_string(),
            ],
            is_default: false,
        }])
    }

    fn inputs(&self) -> Result<Vec<DeviceInfo>, DeviceError> {
        Ok(Vec::new())
    }

    fn open_output(&self, id: Option<&str>, request: &Request) -> Result<Opened, DeviceError> {
        if id.is_none() {
            return Err(DeviceError::NoDefault {
                available: names(Direction::Output),
            });
        }
        let channels = request.channels_wanted();
        Ok(Opened {
            device: Box::new(ClockDevice {
                period: request.period,
                sample_rate: request.sample_rate as f64,
                channels,
            }),
            sample_rate: request.sample_rate,
            channels,
            id: CLOCK_DEVICE.to_string(),
            warnings: Vec::new(),
        })
    }

    fn open_input(&self, id: Option<&str>, _need: Need) -> Result<InputDevice, DeviceError> {
        let available = names(Direction::Input);
        Err(match id {
            Some(id) => DeviceError::NoInput {
                id: id.to_string(),
                available,
            },
            None => DeviceError::NoDefaultInput { available },
        })
    }
}

/// A device that discards what it plays but calls back at real-time pace
/// (for measuring load and xruns on machines without a sound card).
pub struct ClockDevice {
    /// Frames per callback.
    pub period: usize,
    /// The pace: `period` frames every `period / sample_rate` seconds.
    pub sample_rate: f64,
    /// Interleaved channels per frame.
    pub channels: usize,
}

struct ClockStream {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stream for ClockStream {}

impl Drop for ClockStream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Device for ClockDevice {
    fn open(
        &mut self,
        cell: Arc<PlayerCell>,
        _events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, DeviceError> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = stop.clone();
        let (period, rate, ch) = (self.period, self.sample_rate, self.channels);
        let thread = std::thread::Builder::new()
            .name("paced-output".to_string())
            .spawn(move || {
                let mut buf = vec![0.0f32; period * ch];
                let t0 = Instant::now();
                let mut frames = 0u64;
                while !stop2.load(Ordering::Relaxed) {
                    cell.fill(&mut buf);
                    frames += period as u64;
                    let due = t0 + Duration::from_secs_f64(frames as f64 / rate);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                }
            })
            .map_err(|e| DeviceError::stream("cannot start the paced output thread", e))?;
        Ok(Box::new(ClockStream {
            stop,
            thread: Some(thread),
        }))
    }

    fn period_frames(&self) -> Option<usize> {
        Some(self.period)
    }

    fn xrun_meaning(&self) -> Option<&'static str> {
        Some(XRUN_MEANING)
    }

    fn xrun_summary(&self) -> Option<&'static str> {
        Some(XRUN_SUMMARY)
    }
}
