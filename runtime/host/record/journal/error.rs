//! What is wrong with a journal that `replay` cannot play: located in the
//! journal (its path, and the line when the problem is one line's), with
//! the I/O, parse or recorded-input error underneath kept as its source.

use crate::host::record::input::RecordedInputError;
use crate::scene::Diagnostic;
use std::io;
use std::path::PathBuf;

/// A journal that cannot be replayed, and where in it (exit 2).
#[derive(Debug)]
pub struct JournalError {
    /// The journal.
    pub path: PathBuf,
    /// The line the problem is on (from 1), when it is one line's.
    pub line: Option<usize>,
    /// What is wrong (boxed: a journal's error travels up through every
    /// `Result` of the replay).
    pub problem: Box<Problem>,
}

/// What is wrong with a journal.
#[derive(Debug)]
pub enum Problem {
    /// The journal cannot be read.
    Unreadable(io::Error),
    /// A line is not UTF-8 text; `byte` is its first byte that is not
    /// (from 1).
    NotText {
        byte: usize,
        source: std::str::Utf8Error,
    },
    /// A line is not a record.
    NotARecord(serde_json::Error),
    /// The header names a format or version this build does not read.
    Format { format: String, version: u32 },
    /// The header's channel count is no device's.
    Channels(usize),
    /// The first record is not the header.
    NoHeader,
    /// There is no scene record.
    NoScene,
    /// A record that needs the scene comes before it: `what` it is ("a
    /// resume record", "a handover").
    BeforeScene(&'static str),
    /// The copy of a resource (or snapshot) kept beside the journal cannot
    /// be read.
    CopyUnreadable {
        reference: String,
        path: String,
        copy: PathBuf,
        source: io::Error,
    },
    /// The copy of a resource kept beside the journal is not the one the
    /// journal hashed.
    CopyChanged {
        reference: String,
        copy: PathBuf,
        sha256: String,
        expected: String,
    },
    /// The session's recorded input is missing, changed or unreadable.
    RecordedInput(RecordedInputError),
    /// A handover of the journal does not fit the session (the engine's
    /// words).
    Handover(String),
    /// A control change recorded at sample `at` does not fit the session.
    ControlChange { at: u64, error: String },
    /// The session is longer than a replay renders: `limit` says how long
    /// that is.
    TooLong { frames: u64, limit: String },
}

impl JournalError {
    /// A problem of the whole journal.
    pub fn new(path: impl Into<PathBuf>, problem: Problem) -> JournalError {
        JournalError {
            path: path.into(),
            line: None,
            problem: Box::new(problem),
        }
    }

    /// A problem of one line.
    pub fn at_line(path: impl Into<PathBuf>, line: usize, problem: Problem) -> JournalError {
        JournalError {
            path: path.into(),
            line: Some(line),
            problem: Box::new(problem),
        }
    }

    /// Where it is: `path`, or `path:line`.
    fn place(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    /// The error as a diagnostic located in the journal, as bad input is
    /// shown.
    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::error(&self.place(), None, self.problem.to_string())
    }
}

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.place(), self.problem)
    }
}

impl std::error::Error for JournalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.problem {
            Problem::Unreadable(e) | Problem::CopyUnreadable { source: e, .. } => Some(e),
            Problem::NotText { source, .. } => Some(source),
            Problem::NotARecord(e) => Some(e),
            Problem::RecordedInput(e) => Some(e),
            Problem::Format { .. }
            | Problem::Channels(_)
            | Problem::NoHeader
            | Problem::NoScene
            | Problem::BeforeScene(_)
            | Problem::CopyChanged { .. }
            | Problem::Handover(_)
            | Problem::ControlChange { .. }
            | Problem::TooLong { .. } => None,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Unreadable(e) => write!(f, "cannot read the journal: {e}"),
            Problem::NotText { byte, .. } => write!(
                f,
                "not a journal record: byte {byte} of the line is not UTF-8 text"
            ),
            Problem::NotARecord(e) => write!(f, "not a journal record: {e}"),
            Problem::Format { format, version } => write!(
                f,
                "`{format}` version {version} is not a journal this build reads ({} version {})",
                super::FORMAT,
                super::VERSION
            ),
            Problem::Channels(n) => write!(
                f,
                "the header's `channels` is {n}; a device has 1 … {} channels",
                u16::MAX
            ),
            Problem::NoHeader => f.write_str("the journal does not start with a header record"),
            Problem::NoScene => f.write_str("the journal has no scene record"),
            Problem::BeforeScene(what) => write!(f, "{what} before the scene record"),
            Problem::CopyUnreadable {
                reference,
                path,
                copy,
                source,
            } => write!(
                f,
                "resource `{reference}` ({path}): its copy `{}` cannot be read: {source}",
                copy.display()
            ),
            Problem::CopyChanged {
                reference,
                copy,
                sha256,
                expected,
            } => write!(
                f,
                "resource `{reference}`: its copy `{}` has changed (SHA-256 {sha256}, the journal says {expected})",
                copy.display()
            ),
            Problem::RecordedInput(e) => write!(f, "{e}"),
            Problem::Handover(e) => f.write_str(e),
            Problem::ControlChange { at, error } => write!(
                f,
                "a control change recorded at sample {at} does not fit the session: {error}"
            ),
            Problem::TooLong { frames, limit } => write!(
                f,
                "the session is {frames} frames long, more than a replay renders ({limit}); replay a part of it with --until"
            ),
        }
    }
}
