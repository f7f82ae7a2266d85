//! What `morphrt run` plays through and records from: the [`Device`] trait
//! every output implements, the stream it opens and how a stream reports
//! trouble, and the devices themselves — cpal's ([`cpal`]: listing,
//! choosing a configuration, playing), the headless clock device
//! ([`clock`]), and the capture input ([`capture`]: the control side and
//! its rebuilds; [`cpal_capture`]: cpal's input stream).

use crate::host::live::player::PlayerCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub mod capture;
pub mod clock;
pub mod cpal;
pub mod cpal_capture;

pub use self::cpal::{input_names, list, list_inputs, names, DeviceError, DeviceInfo};

/// Why a stream reported trouble (set from the stream's error callback).
#[derive(Default)]
pub struct StreamEvents {
    /// 0: none; see [`StreamFault`].
    fault: AtomicU32,
}

/// A stream failure the control thread must handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFault {
    DeviceNotAvailable,
    StreamInvalidated,
    Other,
}

impl StreamEvents {
    pub fn report(&self, f: StreamFault) {
        let code = match f {
            StreamFault::DeviceNotAvailable => 1,
            StreamFault::StreamInvalidated => 2,
            StreamFault::Other => 3,
        };
        self.fault.store(code, Ordering::Release);
    }

    pub(crate) fn take(&self) -> Option<StreamFault> {
        match self.fault.swap(0, Ordering::AcqRel) {
            1 => Some(StreamFault::DeviceNotAvailable),
            2 => Some(StreamFault::StreamInvalidated),
            3 => Some(StreamFault::Other),
            _ => None,
        }
    }
}

/// A running stream; dropping it stops the callbacks (and waits for any in
/// flight to return).
pub trait Stream {}

/// Something that can play: a cpal device, or a test double.
pub trait Device {
    /// Starts calling `cell.fill` with device buffers; reports failures to `events`.
    fn open(
        &mut self,
        cell: Arc<PlayerCell>,
        events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, String>;
    /// Frames per callback when fixed, for the status line and the watchdog.
    fn period_frames(&self) -> Option<usize>;
    /// What an xrun means on this device, when it is not a sound card's
    /// underrun: said once, at the first one.
    fn xrun_meaning(&self) -> Option<&'static str> {
        None
    }
}
