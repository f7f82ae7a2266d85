//! What `morphrt run` plays through and records from, behind one seam.
//! A [`Backend`] names each backend; each implements [`Host`] in its own
//! file (cpal's split of host, device and stream is the model): listing
//! its devices, its errors ([`DeviceError`]), and opening an output
//! ([`Device`], whose [`Stream`] runs the callbacks) or an input
//! ([`input::InputDevice`]).
//!
//! - [`cpal`]: cpal's default host (ALSA on Linux): listing, choosing an
//!   output configuration, playing, and its input streams.
//! - [`clock`]: the headless clock device, paced in real time.
//! - [`jack`]: a JACK client, its ports patched into the server's graph.
//! - [`input`]: the control side of an input, whichever backend
//!   records, and its rebuilds.
//!
//! `--device ID` goes to the first backend (in [`Backend::ALL`]'s order)
//! whose ids have the form of `ID`; without it, the default output is the
//! first backend's that has one. Every error that names what exists lists
//! the devices of every backend.

use crate::host::live::device::input::InputDevice;
use crate::host::live::player::PlayerCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub mod clock;
pub mod cpal;
mod error;
pub mod input;
pub mod jack;

pub use self::error::{Cause, DeviceError};

/// Declares [`Backend`], one variant per backend with the type that
/// implements [`Host`] for it, [`Backend::ALL`] in the order given, and
/// [`Backend::host`].
macro_rules! backends {
    ($($(#[$doc:meta])* $variant:ident => $host:path,)+) => {
        /// Every backend `run` can play through and record from.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Backend {
            $($(#[$doc])* $variant,)+
        }

        impl Backend {
            /// Every backend, in the order `morphrt devices` lists them
            /// and a device id or the default device is looked up in.
            pub const ALL: &'static [Backend] = &[$(Backend::$variant,)+];

            /// The backend's implementation.
            pub fn host(self) -> &'static dyn Host {
                match self {
                    $(Backend::$variant => &$host,)+
                }
            }
        }
    };
}

backends! {
    /// cpal's default host: the machine's sound cards (ALSA on Linux).
    Cpal => self::cpal::CpalHost,
    /// The clock device: no sound card, paced in real time.
    Clock => self::clock::ClockHost,
    /// A JACK client (`--device jack`).
    Jack => self::jack::JackHost,
}

/// What a backend does: list its devices, and open an output or an input
/// for a session. Every method runs on the control thread.
pub trait Host: Sync {
    /// Its name, as `morphrt devices` heads its devices: `cpal (ALSA)`.
    fn name(&self) -> String;
    /// Its output devices.
    fn outputs(&self) -> Result<Vec<DeviceInfo>, DeviceError>;
    /// Its input devices.
    fn inputs(&self) -> Result<Vec<DeviceInfo>, DeviceError>;
    /// A line `morphrt devices` prints under its name, when there is
    /// something to say beside its devices (a server that is not running).
    fn note(&self) -> Option<String> {
        None
    }
    /// Whether `id` has the form of its device ids, whether or not such a
    /// device exists (a device it cannot find is then its error to say).
    /// By default: one of the ids it lists.
    fn owns(&self, id: &str) -> bool {
        let listed =
            |l: Result<Vec<DeviceInfo>, DeviceError>| l.is_ok_and(|l| l.iter().any(|d| d.id == id));
        listed(self.outputs()) || listed(self.inputs())
    }
    /// Opens the output `id` (`None`: its default output, or
    /// [`DeviceError::NoDefault`] when it has none) for `request`.
    fn open_output(&self, id: Option<&str>, request: &Request) -> Result<Opened, DeviceError>;
    /// Opens the input `id` (`None`: its default input, or
    /// [`DeviceError::NoDefaultInput`] when it has none) for `need`; its
    /// stream starts at once.
    fn open_input(&self, id: Option<&str>, need: Need) -> Result<InputDevice, DeviceError>;
}

/// One device as `morphrt devices` shows it.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// What `--device` and `--input-device` take.
    pub id: String,
    pub name: String,
    pub default_config: Option<String>,
    /// "channels, rate range, format, buffer range" per supported range.
    pub configs: Vec<String>,
    pub is_default: bool,
}

/// What a session asks of its output.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The scene's rate (a device that cannot play it may choose another).
    pub sample_rate: u32,
    /// Channels of the scene's main bus (a mono bus plays on two).
    pub bus_channels: usize,
    /// The device period to ask for, in frames (the engine block size
    /// unless overridden).
    pub period: usize,
    /// Whether the scene sets its `sample_rate` (a backend that plays only
    /// its server's rate refuses another one it sets).
    pub rate_pinned: bool,
    /// The name a backend that registers a client takes (`--name`).
    pub name: Option<String>,
    /// Where a backend whose ports are patched connects them
    /// (`--connect`): `none`, or a pattern of port names.
    pub connect: Option<String>,
    /// The scene's names of the main bus's channels (`channel_names`;
    /// empty: none), for a backend that names its ports.
    pub channel_names: Vec<String>,
}

impl Request {
    /// The device channels the bus wants: two for a mono bus.
    pub fn channels_wanted(&self) -> usize {
        if self.bus_channels == 1 {
            2
        } else {
            self.bus_channels
        }
    }
}

/// What a session needs of an input device.
#[derive(Clone, Copy, Debug)]
pub struct Need {
    /// The output's rate (there is no resampling).
    pub sample_rate: u32,
    /// The scene's input width: the highest channel an `input` node reads, plus one.
    pub min_channels: usize,
    /// The engine block: the input period asked for.
    pub block: usize,
}

/// An output opened for a session: the device plus facts for the status
/// line.
pub struct Opened {
    pub device: Box<dyn Device>,
    /// The rate it plays (the scene is compiled again when it differs).
    pub sample_rate: u32,
    pub channels: usize,
    /// Its id, as `morphrt devices` shows it.
    pub id: String,
    /// What the user should know (a rate the device cannot play).
    pub warnings: Vec<String>,
}

/// Which side of a device: what it plays, or what it records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Output,
    Input,
}

/// The backend whose ids have the form of `id`, if any.
pub fn owner(id: &str) -> Option<Backend> {
    Backend::ALL.iter().copied().find(|b| b.host().owns(id))
}

/// Opens the output `--device` names (`None`: the first backend's
/// default output) for `request`.
pub fn open_output(id: Option<&str>, request: &Request) -> Result<Opened, DeviceError> {
    match id {
        Some(id) => match owner(id) {
            Some(b) => b.host().open_output(Some(id), request),
            None => Err(DeviceError::UnknownForm {
                id: id.to_string(),
                available: names(Direction::Output),
            }),
        },
        None => first_default(
            |h| h.open_output(None, request),
            |e| matches!(e, DeviceError::NoDefault { .. }),
        ),
    }
}

/// Opens the input `--input-device` names (`None`: the default input of
/// the backend of `output`, the output's id, else the first backend's
/// default input) for `need`.
pub fn open_input(
    id: Option<&str>,
    need: Need,
    output: Option<&str>,
) -> Result<InputDevice, DeviceError> {
    if let (None, Some(b)) = (id, output.and_then(owner)) {
        match b.host().open_input(None, need) {
            Err(DeviceError::NoDefaultInput { .. }) => {}
            other => return other,
        }
    }
    match id {
        Some(id) => match owner(id) {
            Some(b) => b.host().open_input(Some(id), need),
            None => Err(DeviceError::UnknownForm {
                id: id.to_string(),
                available: names(Direction::Input),
            }),
        },
        None => first_default(
            |h| h.open_input(None, need),
            |e| matches!(e, DeviceError::NoDefaultInput { .. }),
        ),
    }
}

/// The first backend's answer that is not `none` (it has no default
/// device), else the first backend's.
fn first_default<T>(
    open: impl Fn(&dyn Host) -> Result<T, DeviceError>,
    none: impl Fn(&DeviceError) -> bool,
) -> Result<T, DeviceError> {
    let mut first = None;
    for b in Backend::ALL {
        match open(b.host()) {
            Err(e) if none(&e) => {
                first.get_or_insert(e);
            }
            other => return other,
        }
    }
    Err(first.expect("there is a backend"))
}

/// A compact listing of every backend's devices on the `dir` side, for
/// messages ("alsa:null, alsa:default, clock"); a backend that cannot
/// list its devices says why in their place.
pub fn names(dir: Direction) -> String {
    let mut all = Vec::new();
    for b in Backend::ALL {
        let host = b.host();
        let listed = match dir {
            Direction::Output => host.outputs(),
            Direction::Input => host.inputs(),
        };
        match listed {
            Ok(v) => all.extend(v.into_iter().map(|d| d.id)),
            Err(e) => all.push(e.to_string()),
        }
    }
    if all.is_empty() {
        "none".to_string()
    } else {
        all.join(", ")
    }
}

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
    ) -> Result<Box<dyn Stream>, DeviceError>;
    /// Frames per callback when fixed, for the status line and the watchdog.
    fn period_frames(&self) -> Option<usize>;
    /// How long without a callback the watchdog waits before it rebuilds
    /// the stream, when the device knows better than its bound (a JACK
    /// server suspends its clients while its graph changes, and says
    /// itself when it stops).
    fn stall_after(&self) -> Option<std::time::Duration> {
        None
    }
    /// What an xrun means on this device, when it is not a sound card's
    /// underrun: said once, at the first one.
    fn xrun_meaning(&self) -> Option<&'static str> {
        None
    }
    /// What the summary says an xrun is on this device, when it is not a
    /// sound card's underrun (it adds how many callbacks started late and
    /// how many overran their budget).
    fn xrun_summary(&self) -> Option<&'static str> {
        None
    }
}
