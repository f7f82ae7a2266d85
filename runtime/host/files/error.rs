//! What goes wrong with a file the program writes: the refusals of the
//! output rules ([`super::rules`]) and the I/O failures of the writer
//! ([`super::write`]), each naming the path (and keeping the `io::Error`),
//! with the exit code it maps to.

use std::io;
use std::path::PathBuf;

/// A file that could not be written, or that the rules refuse to write.
#[derive(Debug)]
pub enum FileError {
    /// The output is a file the command reads (exit 2). `shown` is the
    /// output as named (with a link's target), `input` what it is to the
    /// command ("the scene `a.json`").
    IsInput {
        path: PathBuf,
        shown: String,
        input: String,
    },
    /// `-` names standard output, which is a terminal (exit 2).
    StdoutIsTerminal,
    /// Standard output is a file the command reads (exit 2).
    StdoutIsInput { input: String },
    /// `-` (standard output) for a file that must be a regular file (exit 2).
    StdoutNotAllowed {
        writer: &'static str,
        what: &'static str,
    },
    /// A FLAC output asked for a sample format FLAC does not hold
    /// (`format`: `f32`); exit 2.
    FlacFormat { format: &'static str },
    /// The name says another format than the command writes (exit 2).
    Extension { path: PathBuf, message: String },
    /// A second output of the command is one of its inputs or its first
    /// output (exit 2): `what` it is, `other` what it would overwrite.
    Clash {
        path: PathBuf,
        what: String,
        other: String,
    },
    /// The path cannot take the file (exit 1): a directory, a missing
    /// directory, a block device, a socket, a file the user may not
    /// replace, no room on its file system.
    Unsuitable { path: PathBuf, message: String },
    /// The directory the file would go in does not exist (exit 1):
    /// `named` is the output as the messages name it, `source` what the
    /// file system said (`NotFound`).
    NoDirectory {
        path: PathBuf,
        dir: PathBuf,
        named: String,
        source: io::Error,
    },
    /// A file that must be new is there (exit 1): `shown` is the output
    /// as named. The takes of `run` move on to the next numbered name.
    Exists { path: PathBuf, shown: String },
    /// Another process is writing the file (exit 1): it holds its lock
    /// ([`super::lock`]).
    InUse {
        path: PathBuf,
        shown: String,
        holder: super::lock::Holder,
    },
    /// An I/O call on `path` failed (exit 1): `context` says what was being
    /// done and names the file, `after` what became of it ("; the file is
    /// unchanged").
    Io {
        path: PathBuf,
        context: String,
        source: io::Error,
        after: String,
    },
    /// More channels than a WAV file holds (exit 1).
    WavChannels(usize),
    /// More frames than any WAV file holds (exit 1).
    WavFrames(u64),
}

impl FileError {
    /// An I/O failure with nothing to add after the error.
    pub fn io(
        path: impl Into<PathBuf>,
        context: impl Into<String>,
        source: io::Error,
    ) -> FileError {
        FileError::Io {
            path: path.into(),
            context: context.into(),
            source,
            after: String::new(),
        }
    }

    /// 2 when the command line contradicts itself (the user's argument is
    /// refused), 1 when the file system says no.
    pub fn exit_code(&self) -> i32 {
        match self {
            FileError::IsInput { .. }
            | FileError::StdoutIsTerminal
            | FileError::StdoutIsInput { .. }
            | FileError::StdoutNotAllowed { .. }
            | FileError::Extension { .. }
            | FileError::FlacFormat { .. }
            | FileError::Clash { .. } => 2,
            FileError::Unsuitable { .. }
            | FileError::NoDirectory { .. }
            | FileError::Exists { .. }
            | FileError::InUse { .. }
            | FileError::Io { .. }
            | FileError::WavChannels(_)
            | FileError::WavFrames(_) => 1,
        }
    }

    /// The I/O error underneath, if the file system gave one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            FileError::Io { source, .. } | FileError::NoDirectory { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::IsInput { shown, input, .. } => write!(
                f,
                "{shown} is {input}; morphrt never writes over what it reads: choose another output file"
            ),
            FileError::FlacFormat { format } => write!(
                f,
                "FLAC holds 16- or 24-bit integer samples, not {format}: give --format i16 or --format i24, or write {format} to a .wav"
            ),
            FileError::StdoutIsTerminal => f.write_str(
                "`-o -` writes to standard output, which is a terminal; redirect it (`> out.wav`, `| program`) or give -o FILE",
            ),
            FileError::StdoutIsInput { input } => write!(
                f,
                "standard output is {input}; morphrt never writes over what it reads"
            ),
            FileError::StdoutNotAllowed { writer, what } => write!(
                f,
                "`-` would be standard output; {writer} writes {what} to regular files only: give a file name"
            ),
            FileError::Extension { message, .. } | FileError::Unsuitable { message, .. } => {
                f.write_str(message)
            }
            FileError::Clash { path, what, other } => write!(
                f,
                "{what} `{}` is {other}; morphrt never writes over what it reads or writes twice: choose another file",
                path.display()
            ),
            FileError::NoDirectory { dir, named, .. } => write!(
                f,
                "cannot create {named}: the directory `{}` does not exist",
                dir.display()
            ),
            FileError::Exists { shown, .. } => write!(
                f,
                "{shown} already exists (it appeared after it was checked); nothing was replaced: run again, or choose another file"
            ),
            FileError::InUse { shown, holder, .. } => write!(
                f,
                "{shown} is being written by {holder}; one session writes a file at a time: wait for it to end, or choose another file"
            ),
            FileError::Io {
                context,
                source,
                after,
                ..
            } => write!(f, "{context}: {source}{after}"),
            FileError::WavChannels(n) => write!(f, "{n} channels do not fit a WAV file"),
            FileError::WavFrames(n) => write!(f, "{n} frames do not fit any WAV file"),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io_error().map(|e| e as _)
    }
}

/// Why a scene's `@resource:NAME` cannot be played: the name, where it
/// was looked for, or the file it names. `searched` and `tried` are the
/// directories and paths in words, as the message lists them.
#[derive(Debug)]
pub enum ResourceError {
    /// The reference does not start with `@resource:`.
    NotAReference {
        reference: String,
        prefix: &'static str,
    },
    /// `@resource:` with no name after it.
    NoName {
        reference: String,
        prefix: &'static str,
        searched: String,
    },
    /// The name is an absolute path.
    Absolute { name: String, searched: String },
    /// The name holds `..`.
    Escapes { name: String, searched: String },
    /// There is no directory to look in.
    NowhereToLook { name: String, searched: String },
    /// The file found is a link that leads out of its resource directory.
    OutsideThroughLink {
        name: String,
        target: PathBuf,
        dir: PathBuf,
    },
    /// What the name finds is not a file (`kind`: a directory, a FIFO…).
    NotAFile {
        name: String,
        path: PathBuf,
        kind: &'static str,
        tried: String,
    },
    /// No resource directory holds the name.
    NotFound { name: String, tried: String },
    /// The file cannot be read as audio: the reader's error, which keeps
    /// its `io::Error`.
    Read(super::wav_in::WavInError),
    /// The audio holds a NaN or an infinity.
    NonFinite {
        path: PathBuf,
        frame: usize,
        channel: usize,
    },
}

impl std::fmt::Display for ResourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResourceError::NotAReference { reference, prefix } => write!(
                f,
                "`{reference}` is not a resource reference (expected `{prefix}NAME`)"
            ),
            ResourceError::NoName {
                reference,
                prefix,
                searched,
            } => write!(
                f,
                "`{reference}` names no file (expected `{prefix}NAME`, NAME relative to a resource directory; {searched})"
            ),
            ResourceError::Absolute { name, searched } => write!(
                f,
                "resource `{name}` is an absolute path; resource names are relative to a resource directory ({searched})"
            ),
            ResourceError::Escapes { name, searched } => write!(
                f,
                "resource `{name}` contains `..`; resources may not escape their directory ({searched})"
            ),
            ResourceError::NowhereToLook { name, searched } => {
                write!(f, "resource `{name}` not found: {searched}")
            }
            ResourceError::OutsideThroughLink { name, target, dir } => write!(
                f,
                "resource `{name}` resolves to `{}`, outside `{}` (through a link); resources may not escape their directory",
                target.display(),
                dir.display()
            ),
            ResourceError::NotAFile {
                name,
                path,
                kind,
                tried,
            } => write!(
                f,
                "resource `{name}` is not a file: `{}` is {kind}; tried {tried}",
                path.display()
            ),
            ResourceError::NotFound { name, tried } => {
                write!(f, "resource `{name}` not found; tried {tried}")
            }
            ResourceError::Read(e) => write!(f, "{e}"),
            ResourceError::NonFinite {
                path,
                frame,
                channel,
            } => write!(
                f,
                "`{}` holds a non-finite sample (NaN or infinity) at frame {frame}, channel {channel}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for ResourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ResourceError::Read(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostError;

    #[test]
    fn refusals_exit_2_and_failures_exit_1_keeping_the_io_error() {
        let refused = FileError::Clash {
            path: "s.json".into(),
            what: "the journal".into(),
            other: "the scene `s.json`".into(),
        };
        assert_eq!(refused.exit_code(), 2);
        assert_eq!(HostError::from(refused).exit_code(), 2);
        let failed = FileError::io(
            "/dev/full",
            "cannot write `/dev/full`",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(
            failed.io_error().and_then(io::Error::raw_os_error),
            Some(libc::ENOSPC)
        );
        let e = HostError::from(failed);
        assert_eq!(e.exit_code(), 1);
        assert!(e.message().starts_with("cannot write `/dev/full`: "), "{e}");
        let io = std::error::Error::source(&e)
            .and_then(std::error::Error::source)
            .and_then(|s| s.downcast_ref::<io::Error>());
        assert_eq!(io.and_then(io::Error::raw_os_error), Some(libc::ENOSPC));
    }
}
