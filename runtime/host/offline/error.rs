//! What stops a render or a plot that is not the output file's fault
//! ([`FileError`] covers that) nor the scene's: arguments that contradict
//! each other or the snapshot resumed from, lengths and windows past their
//! limits, the input WAV, the spool that holds a streamed render until its
//! length is known, and the picture `plot` draws. Each keeps the error
//! underneath, when there is one, as its source.
//!
//! [`FileError`]: crate::host::files::error::FileError

use crate::host::files::wav_in::{MissingChannel, WavInError};
use std::io;
use std::path::PathBuf;

/// Why a render cannot go on.
#[derive(Debug)]
pub enum RenderError {
    /// The input WAV (`--input`) cannot be read, or failed part-way
    /// (exit 2: it is the input's fault).
    Input(WavInError),
    /// The input lacks a channel a node of the scene reads (exit 2).
    InputChannels(MissingChannel),
    /// The input WAV ended without a frame (exit 2); `shown` names it.
    NoAudio { shown: String },
    /// The temporary file that holds a render streamed with a tail, until
    /// its length is known, failed in `dir` (exit 1).
    Spool { dir: PathBuf, source: io::Error },
    /// `plot` could not draw or encode its picture (exit 1).
    Picture(PictureError),
    /// A resumed render's `flag` (`--block-size`, `--seed`) gives `given`,
    /// but `snapshot` was taken `taken` ("at block size", "with seed")
    /// `value` (exit 2).
    ConflictsWithSnapshot {
        flag: &'static str,
        given: u64,
        snapshot: String,
        taken: &'static str,
        value: u64,
    },
    /// `what` (the input, the MIDI file, the scene's duration) is longer
    /// than a render may be, `limit` (exit 2).
    TooLong { what: String, limit: String },
    /// A resumed render without `-d` starts at or past the scene's end
    /// (exit 2).
    PastEnd {
        snapshot: String,
        at_s: f64,
        end_s: f64,
    },
    /// A `--snapshot-at` time (`time` as given, sample `at`) outside the
    /// render's samples `start` … `end` (exit 2).
    SnapshotOutside {
        time: String,
        at: u64,
        start: u64,
        end: u64,
    },
    /// More channels than a WAV file holds (exit 2).
    Channels(usize),
    /// More frames than any WAV file holds (exit 2).
    TooManyFrames { frames: u64, channels: usize },
    /// The scene reads audio input (`readers` says which nodes) and no
    /// `--input` was given (exit 2).
    NoInput { scene: String, readers: String },
    /// `--input` is given `count` times (exit 2).
    InputTwice {
        count: usize,
        first: PathBuf,
        second: PathBuf,
    },
    /// Both the scene and `--input` are `-` (exit 2).
    BothFromStdin,
    /// `plot`'s `flag` (`--width`, `--height`) is outside `lo` … `hi`
    /// pixels (exit 2).
    PictureSize {
        flag: &'static str,
        value: u32,
        lo: u32,
        hi: u32,
    },
    /// `plot`'s `--to` (`to` as given) is past the end of `file`; `end`
    /// says where that is (exit 2).
    PastTheEnd {
        to: String,
        file: PathBuf,
        end: String,
    },
    /// `plot`'s window is empty or reversed: `from` and `to` as given,
    /// and in seconds (exit 2).
    EmptyWindow {
        from: String,
        from_s: f64,
        to: String,
        to_s: f64,
    },
    /// `plot`'s window of `seconds` is longer than one picture shows, at
    /// most `max_s` (exit 2).
    WindowTooLong { seconds: f64, max_s: u64 },
    /// A scene's `flag` given to `plot` for a WAV file (exit 2).
    SceneFlagForWav { flag: &'static str, file: PathBuf },
    /// The scene `plot` renders is `seconds` long, past the render limit
    /// of `max_s` (exit 2).
    PlotTooLong { seconds: f64, max_s: u64 },
}

/// What failed while `plot` drew its picture.
#[derive(Debug)]
pub enum PictureError {
    /// A spectrogram frame's FFT.
    Fft(realfft::FftError),
    /// Encoding the PNG.
    Png(png::EncodingError),
}

impl std::fmt::Display for PictureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PictureError::Fft(e) => write!(f, "{e}"),
            PictureError::Png(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PictureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PictureError::Fft(e) => Some(e),
            PictureError::Png(e) => Some(e),
        }
    }
}

impl RenderError {
    /// 2 when the input is at fault, 1 when the machine is.
    pub fn exit_code(&self) -> i32 {
        match self {
            RenderError::Spool { .. } | RenderError::Picture(_) => 1,
            RenderError::Input(_)
            | RenderError::InputChannels(_)
            | RenderError::NoAudio { .. }
            | RenderError::ConflictsWithSnapshot { .. }
            | RenderError::TooLong { .. }
            | RenderError::PastEnd { .. }
            | RenderError::SnapshotOutside { .. }
            | RenderError::Channels(_)
            | RenderError::TooManyFrames { .. }
            | RenderError::NoInput { .. }
            | RenderError::InputTwice { .. }
            | RenderError::BothFromStdin
            | RenderError::PictureSize { .. }
            | RenderError::PastTheEnd { .. }
            | RenderError::EmptyWindow { .. }
            | RenderError::WindowTooLong { .. }
            | RenderError::SceneFlagForWav { .. }
            | RenderError::PlotTooLong { .. } => 2,
        }
    }
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenderError::Input(e) => write!(f, "{e}"),
            RenderError::InputChannels(e) => write!(f, "{e}"),
            RenderError::NoAudio { shown } => write!(
                f,
                "{shown} holds no audio (0 frames): there is nothing to run through the scene"
            ),
            RenderError::Spool { dir, source } => write!(
                f,
                "cannot hold the render in the temporary directory `{}` until its length is known: {source}; give -d to stream the output as it renders (or set TMPDIR)",
                dir.display()
            ),
            RenderError::Picture(e) => write!(f, "cannot draw the picture: {e}"),
            RenderError::ConflictsWithSnapshot {
                flag,
                given,
                snapshot,
                taken,
                value,
            } => write!(
                f,
                "{flag} {given} conflicts with snapshot `{snapshot}`, taken {taken} {value}; a resumed render keeps the snapshot's"
            ),
            RenderError::TooLong { what, limit } => write!(
                f,
                "{what} is longer than {limit}; render it in parts (--snapshot-at, --resume)"
            ),
            RenderError::PastEnd {
                snapshot,
                at_s,
                end_s,
            } => write!(
                f,
                "snapshot `{snapshot}` is at {at_s:.3}s, at or past the scene's end ({end_s:.3}s): give -d to render on"
            ),
            RenderError::SnapshotOutside {
                time,
                at,
                start,
                end,
            } => write!(
                f,
                "--snapshot-at {time} (sample {at}) is outside the render (samples {start} … {end})"
            ),
            RenderError::Channels(n) => write!(f, "{n} channels do not fit a WAV file"),
            RenderError::TooManyFrames { frames, channels } => write!(
                f,
                "{frames} frames of {channels} channels do not fit any WAV file"
            ),
            RenderError::NoInput { scene, readers } => write!(
                f,
                "scene `{scene}` reads audio input ({readers}) but no --input was given: render it with `--input FILE.wav`, or `--input -` to read a WAV from standard input"
            ),
            RenderError::InputTwice {
                count,
                first,
                second,
            } => write!(
                f,
                "--input is given {count} times (`{}`, `{}`): a render reads one input WAV, whose channels are the scene's input channels 0, 1, …; give one --input",
                first.display(),
                second.display()
            ),
            RenderError::BothFromStdin => f.write_str(
                "the scene and --input cannot both be read from standard input: give one of them as a file",
            ),
            RenderError::PictureSize {
                flag,
                value,
                lo,
                hi,
            } => write!(
                f,
                "{flag} {value} is out of range (valid: {lo} … {hi} pixels)"
            ),
            RenderError::PastTheEnd { to, file, end } => write!(
                f,
                "--to {to} is beyond the end of `{}`: {end}",
                file.display()
            ),
            RenderError::EmptyWindow {
                from,
                from_s,
                to,
                to_s,
            } => write!(
                f,
                "--from {from} ({from_s:.3}s) is not before --to {to} ({to_s:.3}s): nothing to plot"
            ),
            RenderError::WindowTooLong { seconds, max_s } => write!(
                f,
                "{seconds:.3}s is more than one picture shows ({max_s} s at most); choose a shorter range with --from/--to"
            ),
            RenderError::SceneFlagForWav { flag, file } => write!(
                f,
                "{flag} applies to a scene; `{}` is a WAV file, plotted as it is",
                file.display()
            ),
            RenderError::PlotTooLong { seconds, max_s } => write!(
                f,
                "{seconds:.3}s is longer than the render limit of 24 h ({max_s} s)"
            ),
        }
    }
}

impl std::error::Error for RenderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RenderError::Input(e) => Some(e),
            RenderError::InputChannels(e) => Some(e),
            RenderError::Spool { source, .. } => Some(source),
            RenderError::Picture(e) => Some(e),
            RenderError::NoAudio { .. }
            | RenderError::ConflictsWithSnapshot { .. }
            | RenderError::TooLong { .. }
            | RenderError::PastEnd { .. }
            | RenderError::SnapshotOutside { .. }
            | RenderError::Channels(_)
            | RenderError::TooManyFrames { .. }
            | RenderError::NoInput { .. }
            | RenderError::InputTwice { .. }
            | RenderError::BothFromStdin
            | RenderError::PictureSize { .. }
            | RenderError::PastTheEnd { .. }
            | RenderError::EmptyWindow { .. }
            | RenderError::WindowTooLong { .. }
            | RenderError::SceneFlagForWav { .. }
            | RenderError::PlotTooLong { .. } => None,
        }
    }
}

impl From<WavInError> for RenderError {
    fn from(e: WavInError) -> RenderError {
        RenderError::Input(e)
    }
}
