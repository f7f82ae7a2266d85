//! What stops a render that is not the output file's fault ([`FileError`]
//! covers that) nor the scene's: its input WAV, and the spool that holds a
//! streamed render until its length is known, and the picture `plot`
//! draws. Each keeps the error
//! underneath as its source.
//!
//! [`FileError`]: crate::host::files::error::FileError

use crate::host::files::wav_in::WavInError;
use std::io;
use std::path::PathBuf;

/// Why a render cannot go on.
#[derive(Debug)]
pub enum RenderError {
    /// The input WAV (`--input`) cannot be read, or failed part-way
    /// (exit 2: it is the input's fault).
    Input(WavInError),
    /// The input WAV ended without a frame (exit 2); `shown` names it.
    NoAudio { shown: String },
    /// The temporary file that holds a render streamed with a tail, until
    /// its length is known, failed in `dir` (exit 1).
    Spool { dir: PathBuf, source: io::Error },
    /// `plot` could not draw or encode its picture (exit 1).
    Picture(PictureError),
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
            RenderError::Input(_) | RenderError::NoAudio { .. } => 2,
            RenderError::Spool { .. } | RenderError::Picture(_) => 1,
        }
    }
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenderError::Input(e) => write!(f, "{e}"),
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
        }
    }
}

impl std::error::Error for RenderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RenderError::Input(e) => Some(e),
            RenderError::Spool { source, .. } => Some(source),
            RenderError::Picture(e) => Some(e),
            RenderError::NoAudio { .. } => None,
        }
    }
}

impl From<WavInError> for RenderError {
    fn from(e: WavInError) -> RenderError {
        RenderError::Input(e)
    }
}
