//! The control side of an input device: [`InputDevice`] owns the capture
//! stream and the ring's control end, watches the stream from the control
//! thread, and rebuilds a lost one as the output is rebuilt — the stream's
//! error callback reports, or the pushes stop; the same device is opened
//! again, else the default input, into a new ring that the callback primes
//! before it plays from it. The stream itself comes from a
//! [`InputStreamSource`]: cpal's (`cpal/input.rs`) or a test double.

use crate::host::live::device::{DeviceError, Stream, StreamEvents};
use crate::host::live::input::ring::{
    input_ring_at, InputMeters, InputRates, RingControl, RingInput, RingShape, RingWriter,
};
use crate::host::live::input::{InputFormat, LiveInput};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Something that records: a cpal input device, or a test double.
pub trait InputStreamSource {
    /// Finds the device again and chooses its configuration for a
    /// rebuild: the same device, or (`fallback`) the default input.
    /// Returns the channels it will deliver.
    fn prepare(&mut self, fallback: bool) -> Result<usize, DeviceError>;
    /// Starts a stream that pushes what it records into `writer`, and
    /// reports failures to `events`.
    fn open(
        &mut self,
        writer: RingWriter,
        events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, DeviceError>;
    /// The device's id, as `morphrt devices` shows it.
    fn id(&self) -> String;
    /// Frames per input callback, when fixed.
    fn period_frames(&self) -> Option<usize>;
}

/// A session's input device (see the module docs).
pub struct InputDevice {
    source: Box<dyn InputStreamSource>,
    stream: Option<Box<dyn Stream>>,
    events: Arc<StreamEvents>,
    rings: RingControl,
    meters: Arc<InputMeters>,
    /// The callback's end, until the player takes it.
    input: Option<RingInput>,
    shape: RingShape,
    rates: Option<InputRates>,
    origin: Instant,
    /// The stream opened (or was last reopened) at this time.
    opened_at: Instant,
    /// No push for this long is a lost stream.
    stall_after: Duration,
    /// Streams rebuilt so far.
    rebuilds: u32,
    /// While the stream is lost: failed attempts and when to try next.
    failures: u32,
    retry_at: Instant,
}

impl InputDevice {
    /// Opens the first stream of `source` into a new ring of `shape`; a
    /// stream that pushes nothing for `stall_after` is rebuilt.
    pub fn start(
        source: Box<dyn InputStreamSource>,
        shape: RingShape,
        stall_after: Duration,
    ) -> Result<InputDevice, DeviceError> {
        InputDevice::start_at(source, shape, None, stall_after)
    }

    /// [`start`](Self::start) for a source recording at another rate than
    /// the session's (`rates`): what it records is converted to the
    /// session's rate on the input thread, before the ring, so the drift
    /// control works on the converted stream.
    pub fn start_at(
        mut source: Box<dyn InputStreamSource>,
        shape: RingShape,
        rates: Option<InputRates>,
        stall_after: Duration,
    ) -> Result<InputDevice, DeviceError> {
        let origin = Instant::now();
        let meters = Arc::new(InputMeters::default());
        let (writer, input, rings) = input_ring_at(shape, rates, meters.clone(), origin);
        let events = Arc::new(StreamEvents::default());
        let stream = source.open(writer, events.clone())?;
        Ok(InputDevice {
            source,
            stream: Some(stream),
            events,
            rings,
            meters,
            input: Some(input),
            shape,
            rates,
            origin,
            opened_at: Instant::now(),
            stall_after,
            rebuilds: 0,
            failures: 0,
            retry_at: Instant::now(),
        })
    }

    /// The callback's end of the ring, for `Player::set_input` (once).
    pub fn take_input(&mut self) -> Option<Box<dyn LiveInput>> {
        self.input.take().map(|i| Box::new(i) as Box<dyn LiveInput>)
    }

    /// What the input side and the callback counted.
    pub fn meters(&self) -> &Arc<InputMeters> {
        &self.meters
    }

    /// Input streams rebuilt so far.
    pub fn rebuilds(&self) -> u32 {
        self.rebuilds
    }

    /// The device recording now.
    pub fn id(&self) -> String {
        self.source.id()
    }

    /// Channels per frame the callback gets.
    pub fn channels(&self) -> usize {
        self.shape.channels
    }

    /// The device's rate and the session's, when the input converts.
    pub fn rates(&self) -> Option<InputRates> {
        self.rates
    }

    /// The device's own sample format.
    pub fn format(&self) -> InputFormat {
        self.shape.format
    }

    /// Frames per input callback: fixed, else the largest chunk seen.
    pub fn period_frames(&self) -> Option<usize> {
        self.source.period_frames().or_else(|| {
            let p = self.meters.period.load(Ordering::Relaxed) as usize;
            (p > 0).then_some(p)
        })
    }

    /// Whether the stream is playing (not lost and waiting for a rebuild).
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Called by the control thread every loop iteration: drops rings the
    /// callback gave back, notices a lost stream and rebuilds it (retrying
    /// with a growing wait while the device stays away; the callback reads
    /// silence meanwhile).
    pub fn poll(&mut self, log: &mut dyn Write) {
        self.rings.collect();
        if self.stream.is_some() {
            let Some(why) = self.trouble() else {
                return;
            };
            let _ = writeln!(
                log,
                "\nwarning: {why} on the input `{}`; rebuilding the capture stream",
                self.source.id()
            );
            drop(self.stream.take());
            self.events.take();
            self.failures = 0;
            self.retry_at = Instant::now();
        }
        if Instant::now() >= self.retry_at {
            self.reopen(log);
        }
    }

    /// What is wrong with the stream, if anything: an error it reported,
    /// or no push for longer than the stall bound.
    fn trouble(&self) -> Option<String> {
        if let Some(fault) = self.events.take() {
            return Some(format!("a stream error ({fault:?})"));
        }
        let last = self.meters.last_push_ns.load(Ordering::Acquire);
        let since = if last == 0 {
            self.opened_at.elapsed()
        } else {
            let now = self.origin.elapsed().as_nanos() as u64;
            Duration::from_nanos(now.saturating_sub(last - 1))
        };
        (since > self.stall_after).then(|| format!("no input for {} ms", since.as_millis()))
    }

    /// One attempt to open the stream again: the same device, else the
    /// default input, into a new ring.
    fn reopen(&mut self, log: &mut dyn Write) {
        if self.rings.swap_pending() {
            // The callback has not taken the last ring yet.
            self.retry_at = Instant::now() + Duration::from_millis(10);
            return;
        }
        let before = self.source.id();
        let opened = self
            .source
            .prepare(false)
            .or_else(|e| self.source.prepare(true).map_err(|f| format!("{e}; {f}")))
            .and_then(|channels| {
                let writer = self
                    .rings
                    .replace(channels)
                    .ok_or_else(|| "the ring is still in use".to_string())?;
                self.meters.last_push_ns.store(0, Ordering::Release);
                self.source
                    .open(writer, self.events.clone())
                    .map_err(|e| e.to_string())
            });
        match opened {
            Ok(stream) => {
                self.stream = Some(stream);
                self.opened_at = Instant::now();
                self.rebuilds += 1;
                let now = self.source.id();
                let which = if now == before {
                    format!("reopened `{now}`")
                } else {
                    format!("`{before}` is gone; recording from the default input `{now}`")
                };
                let _ = writeln!(
                    log,
                    "\ninput: {which} (capture stream rebuilt {} time(s))",
                    self.rebuilds
                );
            }
            Err(e) => {
                if self.failures == 0 {
                    let _ = writeln!(
                        log,
                        "\nwarning: cannot reopen the input device: {e}; the input is silent until it is back (retrying)"
                    );
                }
                let wait = 100u64 << self.failures.min(5);
                self.failures += 1;
                self.retry_at = Instant::now() + Duration::from_millis(wait.min(2000));
            }
        }
    }
}
