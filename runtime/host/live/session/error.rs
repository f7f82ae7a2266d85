//! The live session's errors: why an edit, a profile switch or a
//! followed tempo is refused ([`EditError`], the running graph keeps
//! playing) and why a snapshot asked for while playing is not written
//! ([`SnapshotFailure`]). Each says in its `Display` what the session's
//! log shows; the error underneath is its [`std::error::Error::source`].

use crate::host::files::wav_in::MissingChannel;
use crate::host::record::snapshot::WriteError;
use crate::scene::Diagnostic;
use std::fmt;

/// Why a change of the scene is not handed over.
#[derive(Debug)]
pub enum EditError {
    /// The text does not load or compile: its located diagnostics.
    Scene(Vec<Diagnostic>),
    /// A node of the scene in `file` reads the session's input, and the
    /// session started without one.
    NoInput { file: String, node: String },
    /// A node of the scene in `file` reads a channel the session's input
    /// does not have.
    InputChannels {
        file: String,
        source: MissingChannel,
    },
    /// The new engine's estimate does not fit the handover's budget
    /// (`run --force` hands it over anyway): the whole message, which
    /// names the file and gives the figures.
    OverBudget(String),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Scene(ds) => write!(f, "{}", crate::scene::Shown::new(ds)),
            EditError::NoInput { file, node } => write!(
                f,
                "error: {file}: node `{node}` reads the session's input, but this session started without one (its scene had no `input` node): an input is opened when the session starts (`run --input FILE.wav`, or the input device); restart it to read one"
            ),
            EditError::InputChannels { file, source } => write!(f, "error: {file}: {source}"),
            EditError::OverBudget(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for EditError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EditError::InputChannels { source, .. } => Some(source),
            EditError::Scene(_) | EditError::NoInput { .. } | EditError::OverBudget(_) => None,
        }
    }
}

/// Why a snapshot of the engine playing was not written.
#[derive(Debug)]
pub enum SnapshotFailure {
    /// The playing scene's text no longer compiles (a resource it reads
    /// went away), so its context cannot be rebuilt.
    Scene(EditError),
    /// The state does not fit the context, or the file was not written.
    Write(WriteError),
}

impl fmt::Display for SnapshotFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotFailure::Scene(e) => write!(f, "{e}"),
            SnapshotFailure::Write(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SnapshotFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SnapshotFailure::Scene(e) => Some(e),
            SnapshotFailure::Write(e) => Some(e),
        }
    }
}

impl From<EditError> for SnapshotFailure {
    fn from(e: EditError) -> SnapshotFailure {
        SnapshotFailure::Scene(e)
    }
}

impl From<WriteError> for SnapshotFailure {
    fn from(e: WriteError) -> SnapshotFailure {
        SnapshotFailure::Write(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn an_edit_reading_a_channel_the_input_lacks_keeps_that_as_its_cause() {
        let missing = MissingChannel {
            shown: "the session's input".to_string(),
            has: 1,
            node: "mic".to_string(),
            channel: 1,
        };
        let e = EditError::InputChannels {
            file: "scene.json".to_string(),
            source: missing.clone(),
        };
        assert_eq!(
            e.to_string(),
            "error: scene.json: node `mic` reads input channel 1, but the session's input has 1 channel (0 … 0): give a WAV with at least 2 channels, or read a channel it has"
        );
        let failure = SnapshotFailure::from(e);
        let cause = failure
            .source()
            .and_then(Error::source)
            .and_then(|c| c.downcast_ref::<MissingChannel>());
        assert_eq!(cause, Some(&missing));
    }
}
