//! The clock device (`--device clock`): plays nowhere, but calls back at
//! real-time pace, so a scene can play on a machine without a sound card.

use crate::host::live::device::{Device, Stream, StreamEvents};
use crate::host::live::player::PlayerCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The device id of the headless device paced by a clock.
pub const CLOCK_DEVICE: &str = "clock";

/// What an xrun is on the clock device, for the first one and the summary.
pub const XRUN_MEANING: &str =
    "on the clock device an xrun is a callback that missed its real-time deadline on this machine (there is no sound card to underrun): the engine was late, or the machine was busy";

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
    ) -> Result<Box<dyn Stream>, String> {
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
            .map_err(|e| format!("cannot start the paced output thread: {e}"))?;
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
}
