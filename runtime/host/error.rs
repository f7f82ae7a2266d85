//! The one error a host command returns, and the exit code it maps to.
//!
//! Each wing reports its own typed error ([`FileError`], [`SnapshotError`],
//! [`JournalError`], [`TapError`], [`RenderError`], [`DeviceError`]); [`HostError`] holds it whole, so
//! [`std::error::Error::source`] walks from the command's failure down to
//! the I/O or parse error underneath, while the message the user reads is
//! the wing's own.

use crate::host::files::error::FileError;
use crate::host::live::control::RunFailure;
use crate::host::live::device::DeviceError;
use crate::host::live::tap::TapError;
use crate::host::offline::error::RenderError;
use crate::host::offline::plugin::PluginError;
use crate::host::record::journal::JournalError;
use crate::host::record::snapshot::{SnapshotError, WriteError};
use crate::host::remote::{MidiFileError, TransportError};
use crate::scene::{self, Diagnostic};

/// The typed error of a layer above the host (`bench`), which a
/// [`HostError::Layer`] holds whole.
pub trait LayerError: std::error::Error + Send + Sync + 'static {
    /// The process exit code for this failure.
    fn exit_code(&self) -> i32;
}

/// A failure a command can report, with the exit code it maps to.
#[derive(Debug)]
pub enum HostError {
    /// Bad input: the scene or the arguments (exit code 2).
    Input(Vec<Diagnostic>),
    /// Bad command-line usage that is not a scene problem (exit code 2).
    Usage(String),
    /// A failure of code outside the crate (a transport written
    /// elsewhere) whose text is the whole of what is known (exit code 1).
    /// The host's own failures each have a typed variant, which keeps
    /// their cause as its source.
    Runtime(String),
    /// A signal stopped the command after it cleaned up; the exit code is
    /// 128 + the signal's number, as a shell reports a process the signal
    /// killed (130 for SIGINT, 143 for SIGTERM).
    Interrupted { signal: i32, message: String },
    /// Already reported on the command's output (`check --json` prints
    /// its errors as JSON); nothing more to print, exit with this code.
    Reported(i32),
    /// A file the command writes: refused by the output rules (exit 2) or
    /// failed on the file system (exit 1).
    File(FileError),
    /// A snapshot that is not one this build reads or that does not fit
    /// the scene (exit 2, located in the file), or that could not be
    /// written (exit 1).
    Snapshot(SnapshotError),
    /// A journal that cannot be replayed (exit 2, located in the journal).
    Journal(JournalError),
    /// The capture of what a session plays (`run --capture`).
    Tap(TapError),
    /// A render's input WAV, or the spool of a streamed render.
    Render(RenderError),
    /// An audio device that cannot be found, opened or played (exit 1):
    /// the backend's own error is its source.
    Device(DeviceError),
    /// A transport (OSC, MIDI ports) that cannot start: exit 2 for an OSC
    /// port that cannot be listened on, else 1.
    Transport(TransportError),
    /// A MIDI file that cannot be played (exit 2).
    MidiFile(MidiFileError),
    /// A calibration store that cannot be read or is not one this build
    /// reads (exit 1); one that cannot be written is a [`HostError::File`].
    Store(crate::host::machine::calibration::StoreError),
    /// Playback stopped beyond recovery: the device's stream could not be
    /// opened, or the device failed and could not be reopened (exit 1).
    Playback(Box<RunFailure>),
    /// A failure of a layer above the host (`bench`, `calibrate`), which
    /// gives its own exit code.
    Layer(Box<dyn LayerError>),
    /// `morphrt plugin` cannot build the plugin (exit 1).
    Plugin(PluginError),
    /// A thread the command needs (`what`: `the input reader`) could not
    /// start (exit 1).
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
    /// Writing the command's report to standard output failed (exit 1):
    /// `context` says what was being written ("cannot write the
    /// operator list").
    Stdout {
        context: &'static str,
        source: std::io::Error,
    },
    /// A render stopped part-way by `cause`; `aftermath` says what became
    /// of its output ("; no file was written"). Exit 2 when the cause is
    /// bad input, else 1.
    Stopped {
        cause: Box<HostError>,
        aftermath: String,
    },
}

impl HostError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            HostError::Input(_)
            | HostError::Usage(_)
            | HostError::Journal(_)
            | HostError::MidiFile(_) => 2,
            HostError::Transport(e) => e.exit_code(),
            HostError::Layer(e) => e.exit_code(),
            HostError::Runtime(_)
            | HostError::Playback(_)
            | HostError::Plugin(_)
            | HostError::Thread { .. }
            | HostError::Stdout { .. }
            | HostError::Device(_)
            | HostError::Store(_) => 1,
            HostError::Interrupted { signal, .. } => 128 + signal,
            HostError::Reported(code) => *code,
            HostError::File(e) => e.exit_code(),
            HostError::Snapshot(e) => e.exit_code(),
            HostError::Tap(TapError::File(e)) => e.exit_code(),
            HostError::Tap(_) => 1,
            HostError::Render(e) => e.exit_code(),
            HostError::Stopped { cause, .. } => match cause.exit_code() {
                2 => 2,
                _ => 1,
            },
        }
    }

    /// The failure in words, without the `error:` prefix (for a one-line
    /// diagnostic); diagnostics of bad input are joined.
    pub fn message(&self) -> String {
        match self.diagnostics() {
            Some(ds) => ds
                .iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
            None => match self {
                HostError::Usage(s) | HostError::Runtime(s) => s.clone(),
                HostError::Interrupted { message, .. } => message.clone(),
                HostError::File(e) => e.to_string(),
                HostError::Snapshot(e) => e.to_string(),
                HostError::Tap(e) => e.to_string(),
                HostError::Render(e) => e.to_string(),
                HostError::Device(e) => e.to_string(),
                HostError::Transport(e) => e.to_string(),
                HostError::MidiFile(e) => e.to_string(),
                HostError::Store(e) => e.to_string(),
                HostError::Playback(e) => e.to_string(),
                HostError::Layer(e) => e.to_string(),
                HostError::Plugin(e) => e.to_string(),
                HostError::Thread { what, source } => format!("cannot start {what}: {source}"),
                HostError::Stdout { context, source } => format!("{context}: {source}"),
                HostError::Stopped { cause, aftermath } => {
                    format!("{}{aftermath}", cause.message())
                }
                HostError::Input(_) | HostError::Journal(_) | HostError::Reported(_) => {
                    String::new()
                }
            },
        }
    }

    /// The located diagnostics bad input is shown as, for the failures
    /// that are one: the scene's, a journal's, a snapshot file's.
    fn diagnostics(&self) -> Option<Vec<Diagnostic>> {
        match self {
            HostError::Input(ds) => Some(ds.clone()),
            HostError::Journal(e) => Some(vec![e.diagnostic()]),
            HostError::Snapshot(e) => e.diagnostic().map(|d| vec![d]),
            _ => None,
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(ds) = self.diagnostics() {
            return write!(f, "{}", scene::Shown::new(&ds));
        }
        match self {
            HostError::Interrupted { message, .. } => write!(f, "{message}"),
            HostError::Reported(_) => Ok(()),
            _ => write!(f, "error: {}", self.message()),
        }
    }
}

impl std::error::Error for HostError {
    /// The wing's own error, whose own `source` leads on to the I/O or
    /// parse error underneath.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostError::File(e) => Some(e),
            HostError::Snapshot(e) => Some(e),
            HostError::Journal(e) => Some(e),
            HostError::Tap(e) => Some(e),
            HostError::Render(e) => Some(e),
            HostError::Device(e) => Some(e),
            HostError::Transport(e) => Some(e),
            HostError::MidiFile(e) => Some(e),
            HostError::Store(e) => Some(e),
            HostError::Playback(e) => Some(&**e),
            HostError::Layer(e) => Some(&**e),
            HostError::Plugin(e) => Some(e),
            HostError::Thread { source, .. } => Some(source),
            HostError::Stdout { source, .. } => Some(source),
            HostError::Stopped { cause, .. } => Some(&**cause),
            HostError::Input(_)
            | HostError::Usage(_)
            | HostError::Runtime(_)
            | HostError::Interrupted { .. }
            | HostError::Reported(_) => None,
        }
    }
}

impl HostError {
    /// A failed write of the command's report to standard output.
    pub fn stdout(context: &'static str) -> impl Fn(std::io::Error) -> HostError + Copy {
        move |source| HostError::Stdout { context, source }
    }
}

impl From<FileError> for HostError {
    fn from(e: FileError) -> HostError {
        HostError::File(e)
    }
}

impl From<SnapshotError> for HostError {
    fn from(e: SnapshotError) -> HostError {
        HostError::Snapshot(e)
    }
}

impl From<WriteError> for HostError {
    fn from(e: WriteError) -> HostError {
        match e {
            WriteError::Snapshot(e) => HostError::Snapshot(e),
            WriteError::File(e) => HostError::File(e),
        }
    }
}

impl From<JournalError> for HostError {
    fn from(e: JournalError) -> HostError {
        HostError::Journal(e)
    }
}

impl From<RenderError> for HostError {
    fn from(e: RenderError) -> HostError {
        HostError::Render(e)
    }
}

impl From<DeviceError> for HostError {
    fn from(e: DeviceError) -> HostError {
        HostError::Device(e)
    }
}

impl From<TransportError> for HostError {
    fn from(e: TransportError) -> HostError {
        HostError::Transport(e)
    }
}

impl From<MidiFileError> for HostError {
    fn from(e: MidiFileError) -> HostError {
        HostError::MidiFile(e)
    }
}

impl From<RunFailure> for HostError {
    fn from(e: RunFailure) -> HostError {
        HostError::Playback(Box::new(e))
    }
}

impl From<PluginError> for HostError {
    fn from(e: PluginError) -> HostError {
        HostError::Plugin(e)
    }
}

impl From<TapError> for HostError {
    fn from(e: TapError) -> HostError {
        HostError::Tap(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;
    use std::io;

    /// The first `io::Error` of `e`'s source chain.
    fn io_cause(e: &HostError) -> Option<&io::Error> {
        let mut next: Option<&(dyn Error + 'static)> = Some(e);
        while let Some(err) = next {
            if let Some(io) = err.downcast_ref::<io::Error>() {
                return Some(io);
            }
            next = err.source();
        }
        None
    }

    #[test]
    fn a_tap_error_keeps_its_io_error_and_exit_code() {
        let thread = HostError::from(TapError::Thread(io::Error::from_raw_os_error(libc::EAGAIN)));
        assert_eq!(thread.exit_code(), 1);
        assert_eq!(
            io_cause(&thread).and_then(io::Error::raw_os_error),
            Some(libc::EAGAIN)
        );
        assert!(thread
            .to_string()
            .starts_with("error: cannot start the capture writer: "));
        let refused = HostError::from(TapError::File(FileError::StdoutIsTerminal));
        assert_eq!(refused.exit_code(), 2);
        assert!(io_cause(&refused).is_none());
    }

    #[test]
    fn a_device_error_keeps_the_backends_error_and_exits_1() {
        let e = HostError::from(DeviceError::Stream {
            what: "cannot start the output stream".to_string(),
            source: Some(Box::new(io::Error::from_raw_os_error(libc::EBUSY))),
        });
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.to_string()
                .starts_with("error: cannot start the output stream"),
            "{e}"
        );
        assert_eq!(
            io_cause(&e).and_then(io::Error::raw_os_error),
            Some(libc::EBUSY)
        );
    }

    #[test]
    fn an_osc_port_in_use_keeps_its_io_error_exits_2_and_says_what_to_do() {
        let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let Err(e) = crate::host::live::osc_in::bind(&port.to_string(), &mut Vec::new()) else {
            panic!("a second socket bound port {port}");
        };
        assert!(matches!(e, HostError::Transport(_)), "{e:?}");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            format!(
                "error: --osc {port}: cannot listen for OSC on 127.0.0.1:{port}: the port is in use (another program, or another session, listens there)\n  help: choose another port (`--osc 9001`), or stop what listens there"
            )
        );
        assert_eq!(
            io_cause(&e).map(io::Error::kind),
            Some(io::ErrorKind::AddrInUse)
        );
    }

    #[test]
    fn a_midi_file_that_cannot_be_read_keeps_its_io_error_and_exits_2() {
        let path = std::path::Path::new("/nonexistent-morphrt-dir/take.mid");
        let e = HostError::from(
            crate::host::remote::midi_file::MidiFile::read(path).expect_err("no such file"),
        );
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "error: MIDI file `/nonexistent-morphrt-dir/take.mid` does not exist"
        );
        assert_eq!(
            io_cause(&e).map(io::Error::kind),
            Some(io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn a_stopped_render_keeps_its_cause_and_says_what_became_of_the_output() {
        let spool = RenderError::Spool {
            dir: "/tmp".into(),
            source: io::Error::from_raw_os_error(libc::ENOSPC),
        };
        let e = HostError::Stopped {
            cause: Box::new(spool.into()),
            aftermath: "; no file was written".to_string(),
        };
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with(
            "error: cannot hold the render in the temporary directory `/tmp` until its length is known: "
        ));
        assert!(e.to_string().ends_with("; no file was written"), "{e}");
        assert_eq!(
            io_cause(&e).and_then(io::Error::raw_os_error),
            Some(libc::ENOSPC)
        );
        let bad_input = HostError::Stopped {
            cause: Box::new(HostError::Usage("the input is cut short".to_string())),
            aftermath: "; no file was written".to_string(),
        };
        assert_eq!(bad_input.exit_code(), 2);
        assert_eq!(
            bad_input.to_string(),
            "error: the input is cut short; no file was written"
        );
    }

    #[test]
    fn a_playback_failure_keeps_the_device_error_and_exits_1() {
        use crate::host::live::control::{RunReport, Stop};
        let e = HostError::from(RunFailure {
            cause: Stop::Device(Box::new(DeviceError::Stream {
                what: "cannot start the output stream".to_string(),
                source: Some(Box::new(io::Error::from_raw_os_error(libc::EBUSY))),
            })),
            report: RunReport::default(),
        });
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.to_string()
                .starts_with("error: cannot start the output stream: "),
            "{e}"
        );
        assert_eq!(
            io_cause(&e).and_then(io::Error::raw_os_error),
            Some(libc::EBUSY)
        );
        let lost = HostError::from(RunFailure {
            cause: Stop::Lost { attempts: 3 },
            report: RunReport::default(),
        });
        assert_eq!(
            lost.to_string(),
            "error: the audio device failed and could not be reopened after 3 attempts"
        );
        assert!(io_cause(&lost).is_none());
    }

    #[test]
    fn a_thread_that_cannot_start_keeps_its_io_error_and_exits_1() {
        let e = HostError::Thread {
            what: "the input reader",
            source: io::Error::from_raw_os_error(libc::EAGAIN),
        };
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.to_string()
                .starts_with("error: cannot start the input reader: "),
            "{e}"
        );
        assert_eq!(
            io_cause(&e).and_then(io::Error::raw_os_error),
            Some(libc::EAGAIN)
        );
    }

    #[test]
    fn a_plugin_library_that_cannot_be_read_keeps_its_io_error_and_exits_1() {
        let e = HostError::from(PluginError::Read {
            path: "/nonexistent-morphrt-dir/libmorphrt_clap.so".into(),
            source: io::Error::from(io::ErrorKind::NotFound),
        });
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with(
            "error: cannot read the plugin library `/nonexistent-morphrt-dir/libmorphrt_clap.so`: "
        ));
        assert_eq!(
            io_cause(&e).map(io::Error::kind),
            Some(io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn an_input_without_a_channel_the_scene_reads_is_the_cause_of_the_render_error() {
        use crate::host::files::wav_in::MissingChannel;
        let missing = MissingChannel {
            shown: "`in.wav`".to_string(),
            has: 1,
            node: "mic".to_string(),
            channel: 1,
        };
        let e = HostError::from(RenderError::InputChannels(missing.clone()));
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "error: node `mic` reads input channel 1, but `in.wav` has 1 channel (0 … 0): give a WAV with at least 2 channels, or read a channel it has"
        );
        let cause = e
            .source()
            .and_then(Error::source)
            .and_then(|c| c.downcast_ref::<MissingChannel>());
        assert_eq!(cause, Some(&missing));
    }

    #[test]
    fn a_wav_too_wide_to_write_is_a_file_error_that_exits_1() {
        let e = HostError::from(FileError::WavChannels(70_000));
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "error: 70000 channels do not fit a WAV file");
        let e = HostError::from(FileError::WavFrames(u64::MAX));
        assert_eq!(
            e.to_string(),
            format!("error: {} frames do not fit any WAV file", u64::MAX)
        );
    }
}
