//! [`DeviceError`]: what can go wrong with an audio device, whichever
//! backend owns it, each saying what the user can do, and keeping the
//! backend's own error as its [`source`](std::error::Error::source).

/// The backend's own error behind a [`DeviceError`].
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What can go wrong with an audio device; each says what the user can do.
#[derive(Debug)]
pub enum DeviceError {
    /// A backend's device list could not be read.
    List { source: Cause },
    /// `--device` has the form of a backend's ids, which that backend
    /// cannot read.
    BadId {
        id: String,
        source: Cause,
        available: String,
    },
    /// No backend has ids of the form of `--device`.
    UnknownForm { id: String, available: String },
    /// No device has that id.
    NotFound { id: String, available: String },
    /// No backend has a default output.
    NoDefault { available: String },
    /// The device exists but cannot play.
    CannotPlay {
        id: String,
        source: Cause,
        available: String,
    },
    /// The device takes no f32 samples.
    NoF32 { id: String, available: String },
    /// Opening or starting a stream failed: what failed, and the
    /// backend's reason when it gave one.
    Stream { what: String, source: Option<Cause> },
    /// The backend's own error, whose text says what failed.
    Backend(Cause),
    /// No input device has that id (`--input-device`).
    NoInput { id: String, available: String },
    /// No backend has a default input.
    NoDefaultInput { available: String },
    /// The input device cannot record what the session needs (its rate,
    /// its input channels, a sample format morphrt reads).
    CannotRecord { id: String, why: Cause },
    /// The device plays at `device_hz`, not the scene's `scene_hz`, and
    /// the scene does not compile at the device's rate (`why`: its first
    /// error).
    SceneRate {
        device_hz: u32,
        scene_hz: u32,
        why: String,
    },
}

const DEVICE_HELP: &str = "help: pick one with --device ID (see `morphrt devices`), play without a device with --device clock, or render to a file with `morphrt render SCENE -o out.wav`";

impl DeviceError {
    /// A stream that could not be opened or started: `what` failed,
    /// because of `source`.
    pub fn stream(what: impl Into<String>, source: impl Into<Cause>) -> DeviceError {
        DeviceError::Stream {
            what: what.into(),
            source: Some(source.into()),
        }
    }

    /// A stream that could not be opened, for a reason morphrt states
    /// itself (`what`).
    pub fn stream_refused(what: impl Into<String>) -> DeviceError {
        DeviceError::Stream {
            what: what.into(),
            source: None,
        }
    }

    /// Whether the id given is at fault (bad input), rather than the
    /// machine.
    pub fn is_bad_id(&self) -> bool {
        matches!(
            self,
            DeviceError::BadId { .. }
                | DeviceError::UnknownForm { .. }
                | DeviceError::NoInput { .. }
        )
    }
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceError::List { source } => write!(f, "cannot list audio devices: {source}"),
            DeviceError::BadId {
                id,
                source,
                available,
            } => {
                write!(
                    f,
                    "`{id}` is not a device id ({source}); available: {available}"
                )
            }
            DeviceError::UnknownForm { id, available } => write!(
                f,
                "`{id}` is not a device id (no backend has ids of that form); available: {available}"
            ),
            DeviceError::NotFound { id, available } => {
                write!(f, "no output device `{id}`; available: {available}")
            }
            DeviceError::NoDefault { available } => write!(
                f,
                "no default audio output device is available on this machine (available: {available}).\n  {DEVICE_HELP}"
            ),
            DeviceError::CannotPlay {
                id,
                source,
                available,
            } => write!(
                f,
                "the audio device `{id}` cannot play ({source}).\n  available devices: {available}\n  {DEVICE_HELP}"
            ),
            DeviceError::NoF32 { id, available } => write!(
                f,
                "device `{id}` does not accept f32 samples; available: {available}"
            ),
            DeviceError::Backend(e) => write!(f, "{e}"),
            DeviceError::Stream { what, source } => match source {
                Some(s) => write!(f, "{what}: {s}"),
                None => f.write_str(what),
            },
            DeviceError::NoInput { id, available } => write!(
                f,
                "no input device `{id}`; input devices: {available}\n  help: `morphrt devices` lists them with their configurations"
            ),
            DeviceError::NoDefaultInput { available } => write!(
                f,
                "no default audio input device is available on this machine (input devices: {available}).\n  help: pick one with --input-device ID (see `morphrt devices`)"
            ),
            DeviceError::CannotRecord { id, why } => write!(
                f,
                "the input device `{id}` cannot record for this session: {why}\n  help: pick another with --input-device ID (see `morphrt devices`)"
            ),
            DeviceError::SceneRate {
                device_hz,
                scene_hz,
                why,
            } => write!(
                f,
                "the device plays {device_hz} Hz, not the scene's {scene_hz} Hz, and the scene cannot run at {device_hz} Hz: {why}\n  help: choose a device that supports {scene_hz} Hz (see `morphrt devices`), or render to a file"
            ),
        }
    }
}

impl std::error::Error for DeviceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DeviceError::List { source }
            | DeviceError::BadId { source, .. }
            | DeviceError::CannotPlay { source, .. }
            | DeviceError::CannotRecord { why: source, .. }
            | DeviceError::Backend(source)
            | DeviceError::Stream {
                source: Some(source),
                ..
            } => Some(source.as_ref()),
            _ => None,
        }
    }
}
