//! The one error a host command returns, and the exit code it maps to.

use crate::scene::{self, Diagnostic};

/// A failure a command can report, with the exit code it maps to.
#[derive(Debug)]
pub enum HostError {
    /// Bad input: the scene or the arguments (exit code 2).
    Input(Vec<Diagnostic>),
    /// Bad command-line usage that is not a scene problem (exit code 2).
    Usage(String),
    /// The machine let us down: I/O, devices (exit code 1).
    Runtime(String),
    /// A signal stopped the command after it cleaned up; the exit code is
    /// 128 + the signal's number, as a shell reports a process the signal
    /// killed (130 for SIGINT, 143 for SIGTERM).
    Interrupted { signal: i32, message: String },
    /// Already reported on the command's output (`check --json` prints
    /// its errors as JSON); nothing more to print, exit with this code.
    Reported(i32),
}

impl HostError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            HostError::Input(_) | HostError::Usage(_) => 2,
            HostError::Runtime(_) => 1,
            HostError::Interrupted { signal, .. } => 128 + signal,
            HostError::Reported(code) => *code,
        }
    }

    /// The failure in words, without the `error:` prefix (for a one-line
    /// diagnostic); diagnostics of bad input are joined.
    pub fn message(&self) -> String {
        match self {
            HostError::Input(ds) => ds
                .iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
            HostError::Usage(s) | HostError::Runtime(s) => s.clone(),
            HostError::Interrupted { message, .. } => message.clone(),
            HostError::Reported(_) => String::new(),
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Input(ds) => write!(f, "{}", scene::Shown::new(ds)),
            HostError::Usage(s) => write!(f, "error: {s}"),
            HostError::Runtime(s) => write!(f, "error: {s}"),
            HostError::Interrupted { message, .. } => write!(f, "{message}"),
            HostError::Reported(_) => Ok(()),
        }
    }
}

impl std::error::Error for HostError {}

/// A device that cannot play is the machine's failure, not the input's.
impl From<crate::host::live::device::DeviceError> for HostError {
    fn from(e: crate::host::live::device::DeviceError) -> HostError {
        HostError::Runtime(e.to_string())
    }
}

/// A refused output is bad usage (exit 2); a failed write is the
/// machine's failure (exit 1).
impl From<crate::host::files::error::FileError> for HostError {
    fn from(e: crate::host::files::error::FileError) -> HostError {
        match e.exit_code() {
            2 => HostError::Usage(e.to_string()),
            _ => HostError::Runtime(e.to_string()),
        }
    }
}
