//! `run`'s input device: the input device opened when the scene reads
//! input (`--input-device ID`, else the default input), watched and rebuilt
//! from the control loop, and what the status line and the summary say
//! about it — input latency (the ring's fill), round-trip latency (input
//! fill + engine block + output period) and what was lost or corrected.

use super::driving::LiveDriver;
use super::RunOptions;
use crate::host::live::control::Driver;
use crate::host::live::device::input::InputDevice;
use crate::host::live::device::{self, Need};
use crate::host::live::input::ring::InputMeters;
use crate::host::live::player::Player;
use crate::host::HostError;
use std::io::Write;
use std::sync::atomic::Ordering;

/// Opens the input device when the scene has `input` nodes: the device
/// `--input-device` names, else the default input, at the session's rate
/// (the output's), or converted to it from the nearest rate the device
/// records (said on the `input:` line). A scene without input nodes records nothing, and
/// `--input-device` then warns. An id that names no input device is bad
/// input (exit 2, listing the input devices); a device that cannot record
/// is the machine's failure (exit 1).
pub(super) fn open_input(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Result<Option<InputDevice>, HostError> {
    let width = plan.input_width();
    if width == 0 {
        if let Some(id) = &opts.input_device {
            let _ = writeln!(
                log,
                "warning: --input-device {id} is not used: the scene has no `input` node, so nothing is recorded"
            );
        }
        return Ok(None);
    }
    let need = Need {
        sample_rate: plan.sample_rate,
        min_channels: width,
        block: plan.block_size,
    };
    let device = device::open_input(opts.input_device.as_deref(), need, opts.device.as_deref())
        .map_err(|e| {
            if e.is_bad_id() {
                HostError::Usage(format!("--input-device: {e}"))
            } else {
                HostError::from(e)
            }
        })?;
    let rate = match device.rates() {
        Some(r) => format!(
            "{} Hz converted to {} Hz (polyphase)",
            r.device_hz, r.session_hz
        ),
        None => format!("{} Hz", plan.sample_rate),
    };
    let _ = writeln!(
        log,
        "input: {} ({} ch, {}, {rate}, capture period {})",
        device.id(),
        device.channels(),
        device.format().describe(),
        device
            .period_frames()
            .map_or("chosen by the device".to_string(), |p| format!(
                "{p} frames"
            ))
    );
    Ok(Some(device))
}

/// The latencies around the input, in frames: the output side's (engine
/// block + output period), added to the input's fill for the round trip.
#[derive(Clone, Copy, Debug)]
pub(super) struct Latency {
    pub(super) output_frames: usize,
    pub(super) sample_rate: u32,
}

impl Latency {
    fn ms(&self, frames: f64) -> f64 {
        frames / self.sample_rate.max(1) as f64 * 1e3
    }
}

/// The session's control with the input device's watch added: the input
/// is polled (and rebuilt) every iteration, and the status line says its
/// latency and counters.
pub(super) struct WithInput<'a> {
    pub(super) control: &'a mut LiveDriver,
    pub(super) device: Option<&'a mut InputDevice>,
    pub(super) latency: Latency,
}

impl Driver for WithInput<'_> {
    fn tick(&mut self, log: &mut dyn Write) {
        if let Some(c) = &mut self.device {
            c.poll(log);
        }
        self.control.tick(log);
    }

    fn wait(&mut self, max: std::time::Duration) {
        self.control.wait(max);
    }

    fn status(&self) -> String {
        let input = match &self.device {
            Some(c) => status_text(c.meters(), self.latency),
            None => String::new(),
        };
        format!("{input}{}", self.control.status())
    }

    fn finished(&mut self, player: &Player) {
        self.control.finished(player);
    }
}

/// `  input 2.7 ms, round trip 4.0 ms, overruns 0, underruns 0, drift 0`:
/// the ring's fill at the last block, and what was lost (frames) or
/// corrected (frames dropped + repeated).
fn status_text(m: &InputMeters, latency: Latency) -> String {
    let fill = m.fill.load(Ordering::Relaxed) as f64;
    format!(
        "  input {:.1} ms, round trip {:.1} ms, overruns {}, underruns {}, drift {}",
        latency.ms(fill),
        latency.ms(fill + latency.output_frames as f64),
        m.overruns.load(Ordering::Relaxed),
        m.underruns.load(Ordering::Relaxed),
        m.dropped.load(Ordering::Relaxed) + m.repeated.load(Ordering::Relaxed),
    )
}

/// The summary's input line: the device, the mean latencies, and every
/// frame lost or corrected, with the rebuilds.
pub(super) fn summary_line(device: &InputDevice, latency: Latency) -> String {
    let m = device.meters();
    let fill = m.mean_fill();
    let count = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let skipped = count(&m.skipped);
    format!(
        "input {} ({} ch, {}): latency mean {:.1} ms (ring fill), round trip {:.1} ms; overruns {} frames, underruns {} frames, drift corrections {} dropped, {} repeated{}{}",
        device.id(),
        device.channels(),
        device.format().describe(),
        latency.ms(fill),
        latency.ms(fill + latency.output_frames as f64),
        count(&m.overruns),
        count(&m.underruns),
        count(&m.dropped),
        count(&m.repeated),
        if skipped > 0 {
            format!(", {skipped} frames skipped to catch up")
        } else {
            String::new()
        },
        match device.rebuilds() {
            0 => String::new(),
            n => format!("; capture stream rebuilt {n} time(s)"),
        }
    )
}
