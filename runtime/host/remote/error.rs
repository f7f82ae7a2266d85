//! The remote layer's errors: why one message cannot be done
//! ([`RemoteError`], answered and counted, never fatal), why a transport
//! cannot start ([`TransportError`]) and why a MIDI file cannot be played
//! ([`MidiFileError`]). Each says in its `Display` what the user reads;
//! the I/O or backend error underneath is its [`std::error::Error::source`].

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why a message from a transport cannot be done. Its text is what the
/// warning, the journal and the sender's reply say.
#[derive(Clone, Debug, PartialEq)]
pub enum RemoteError {
    /// The packet, or one element of a bundle, cannot be read at all (not
    /// OSC, bundles nested too deep, an element's size wrong): counted as
    /// malformed. The text starts with `malformed`.
    Malformed(String),
    /// A bundle that holds no message.
    EmptyBundle,
    /// An address the scene does not map and the namespace does not hold,
    /// or a pattern that matches none; the text lists what is valid.
    UnknownAddress(String),
    /// A node, param or voice module that is not playing, or a param that
    /// cannot be set while the node plays; the text says what is valid.
    NotPlaying(String),
    /// An argument of the wrong kind, or the wrong number of them.
    Argument(String),
    /// A number outside the range it may take (a position, a velocity, a
    /// note number, a ramp, a choice's index).
    OutOfRange(String),
    /// A value the param does not take: of another kind, or in a unit it
    /// does not have, or a ramp on a param that cannot glide.
    Value(String),
    /// A bundle whose timetag lies further ahead than is held.
    TooFarAhead { ahead: Duration, max: Duration },
    /// A change that was resolved and did not land: the session stopped,
    /// the backlog was full, the engine changed or lost its node.
    NotLanded(String),
    /// Every error of one message that went wrong in more than one way
    /// (a MIDI message two controls map): the texts joined by `; `.
    Several(Vec<RemoteError>),
    /// `source` said of what `context` names (`/morphrt/param lp cutoff`,
    /// `/cut`): the text is `context: source`.
    In {
        context: String,
        source: Box<RemoteError>,
    },
}

impl RemoteError {
    /// Whether the message could not be read at all (counted apart from
    /// refusals); looks through [`RemoteError::In`].
    pub fn is_malformed(&self) -> bool {
        match self {
            RemoteError::Malformed(_) => true,
            RemoteError::In { source, .. } => source.is_malformed(),
            _ => false,
        }
    }

    /// One error for all of `errors`: `None` when there is none, the one
    /// itself, or [`RemoteError::Several`].
    pub fn joined(mut errors: Vec<RemoteError>) -> Option<RemoteError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(RemoteError::Several(errors)),
        }
    }

    /// `self` said of `context`.
    pub fn within(self, context: impl Into<String>) -> RemoteError {
        RemoteError::In {
            context: context.into(),
            source: Box::new(self),
        }
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Malformed(s)
            | RemoteError::UnknownAddress(s)
            | RemoteError::NotPlaying(s)
            | RemoteError::Argument(s)
            | RemoteError::OutOfRange(s)
            | RemoteError::Value(s)
            | RemoteError::NotLanded(s) => f.write_str(s),
            RemoteError::EmptyBundle => f.write_str("an empty bundle: it holds no message"),
            RemoteError::TooFarAhead { ahead, max } => write!(
                f,
                "its timetag lies {:.1} s ahead: at most {} s ahead is held (is the sender's clock right?)",
                ahead.as_secs_f64(),
                max.as_secs()
            ),
            RemoteError::Several(all) => {
                for (i, e) in all.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            RemoteError::In { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for RemoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RemoteError::In { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// Why a MIDI file cannot be played (`--midi file:PATH`, `render
/// --midi`): bad input, exit code 2.
#[derive(Debug)]
pub enum MidiFileError {
    /// `-` was given: a MIDI file is read from a path.
    Stdin,
    /// The path is a directory, a FIFO or a device.
    NotAFile(PathBuf),
    /// The file is larger than a MIDI file may be here.
    TooBig { path: PathBuf, bytes: u64, max: u64 },
    /// The file cannot be read: missing, or the I/O error `source`.
    Read { path: PathBuf, source: io::Error },
    /// The bytes do not start as a standard MIDI file; `what` says what
    /// they look like.
    NotMidi { what: String },
    /// The MIDI parser refused the bytes.
    Damaged(midly::Error),
    /// A format 2 file (independent sequences).
    Format2,
    /// A division of 0 ticks per quarter note (`smpte`: per frame).
    ZeroDivision { smpte: bool },
    /// `source` is what is wrong with the file at `path`.
    At {
        path: PathBuf,
        source: Box<MidiFileError>,
    },
}

impl fmt::Display for MidiFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MidiFileError::Stdin => f.write_str(
                "a MIDI file is read from a path, not from standard input: give the .mid file's path",
            ),
            MidiFileError::NotAFile(path) => write!(
                f,
                "MIDI file `{}` is not a regular file (a directory, FIFO or device): give a .mid file",
                path.display()
            ),
            MidiFileError::TooBig { path, bytes, max } => write!(
                f,
                "MIDI file `{}` is {bytes} bytes: over the {max} a MIDI file may be here",
                path.display()
            ),
            MidiFileError::Read { path, source } if source.kind() == io::ErrorKind::NotFound => {
                write!(f, "MIDI file `{}` does not exist", path.display())
            }
            MidiFileError::Read { path, source } => {
                write!(f, "MIDI file `{}` cannot be read: {source}", path.display())
            }
            MidiFileError::NotMidi { what } => write!(f, "is not a standard MIDI file: {what}"),
            MidiFileError::Damaged(e) => write!(f, "is a damaged MIDI file ({e})"),
            MidiFileError::Format2 => f.write_str(
                "is a format 2 MIDI file (independent sequences), which is not \
                 supported: save it as format 0 or 1",
            ),
            MidiFileError::ZeroDivision { smpte: false } => {
                f.write_str("has a division of 0 ticks per quarter note")
            }
            MidiFileError::ZeroDivision { smpte: true } => {
                f.write_str("has an SMPTE division of 0 ticks per frame")
            }
            MidiFileError::At { path, source } => write!(f, "`{}` {source}", path.display()),
        }
    }
}

impl std::error::Error for MidiFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MidiFileError::Read { source, .. } => Some(source),
            MidiFileError::Damaged(e) => Some(e),
            MidiFileError::At { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// Why a transport cannot start (exit code 1, or 2 for a port that
/// cannot be listened on, which the user chose).
#[derive(Debug)]
pub enum TransportError {
    /// `--osc SPEC`: the socket cannot listen on `addr`.
    Bind {
        spec: String,
        addr: std::net::SocketAddr,
        source: io::Error,
    },
    /// `--osc SPEC`: the bound socket refused a setting.
    Socket { spec: String, source: io::Error },
    /// The thread that reads a transport (`what`: `OSC`) cannot start.
    Thread {
        what: &'static str,
        source: io::Error,
    },
    /// The transport's `start` ran a second time.
    StartedTwice(&'static str),
    /// No MIDI system (`why` says what is missing, or is empty).
    MidiSystem {
        source: midir::InitError,
        why: String,
    },
    /// `--midi all` and no MIDI input exists; `listed` says so.
    NoMidiInputs { listed: String },
    /// The MIDI input `name` cannot be opened.
    MidiPort {
        name: String,
        source: midir::ConnectError<()>,
    },
}

impl TransportError {
    /// The process exit code: 2 for a port the user chose that cannot be
    /// listened on, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            TransportError::Bind { .. } => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Bind { spec, addr, source } => {
                let why = match source.kind() {
                    io::ErrorKind::AddrInUse => {
                        "the port is in use (another program, or another session, listens there)"
                            .to_string()
                    }
                    _ => source.to_string(),
                };
                write!(
                    f,
                    "--osc {spec}: cannot listen for OSC on {addr}: {why}\n  help: choose another port (`--osc 9001`), or stop what listens there"
                )
            }
            TransportError::Socket { spec, source } => write!(f, "--osc {spec}: {source}"),
            TransportError::Thread { what, source } => {
                write!(f, "cannot start the {what} thread: {source}")
            }
            TransportError::StartedTwice(what) => write!(f, "{what} started twice"),
            TransportError::MidiSystem { source, why } => write!(
                f,
                "no MIDI system: {source}{why}; a MIDI file plays without one as `--midi file:PATH.mid`"
            ),
            TransportError::NoMidiInputs { listed } => write!(f, "--midi all: {listed}"),
            TransportError::MidiPort { name, source } => {
                write!(f, "cannot open MIDI input `{name}`: {source}")
            }
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransportError::Bind { source, .. }
            | TransportError::Socket { source, .. }
            | TransportError::Thread { source, .. } => Some(source),
            TransportError::MidiSystem { source, .. } => Some(source),
            TransportError::MidiPort { source, .. } => Some(source),
            TransportError::StartedTwice(_) | TransportError::NoMidiInputs { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_error_is_known_by_its_variant_through_its_context() {
        let e = RemoteError::Malformed("malformed OSC packet: x".to_string()).within("/cut");
        assert!(e.is_malformed());
        assert_eq!(e.to_string(), "/cut: malformed OSC packet: x");
        assert!(!RemoteError::EmptyBundle.is_malformed());
        assert!(!RemoteError::Argument("malformed".to_string()).is_malformed());
    }
}
