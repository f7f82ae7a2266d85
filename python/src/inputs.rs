//! What `render` reads besides the scene: its `input` (an array, or an
//! audio file of any format `morphrt render --input` reads, converted to
//! the scene's rate as the command line converts it) and its `midi` (a
//! standard MIDI file's path or bytes, mapped onto the scene's MIDI
//! controls as `morphrt render --midi` maps it). Files go through the
//! command line's own readers in the `morphrt` crate, so a render here is
//! the command line's, bit for bit.

use crate::{channels_f64, ArrayInput};
use morphrt::host::offline::input::{open_early, open_input, RenderInput};
use morphrt::host::offline::midi::map_midi;
use morphrt::host::remote::midi_file::MidiFile;
use morphrt::host::HostError;
use morphrt_core::engine::{ChangeFeed, InputFeed};
use morphrt_core::graph::Plan;
use pyo3::exceptions::{PyFileNotFoundError, PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::path::{Path, PathBuf};

/// The `input` argument: channels in memory, or an audio file's path.
pub(crate) enum Input {
    Array(Vec<Vec<f64>>),
    File(PathBuf),
}

/// A path argument (str or os.PathLike), `None` for anything else.
fn path_of(v: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Some(PathBuf::from(s.to_string())));
    }
    match v.call_method0("__fspath__") {
        Ok(p) => Ok(Some(PathBuf::from(p.extract::<String>()?))),
        Err(_) => Ok(None),
    }
}

/// Reads the `input` argument: a path (str or os.PathLike) to an audio
/// file, or an array `(channels, frames)` or `(frames,)` of float32 or
/// float64.
pub(crate) fn input_of(v: &Bound<'_, PyAny>) -> PyResult<Input> {
    match path_of(v)? {
        Some(path) if path.is_file() => Ok(Input::File(path)),
        Some(path) => Err(PyFileNotFoundError::new_err(format!(
            "input: no file `{}`",
            path.display()
        ))),
        None => Ok(Input::Array(channels_f64(v, "input")?)),
    }
}

/// An input opened for a render.
pub(crate) struct Opened {
    /// What the engine reads.
    pub(crate) feed: Box<dyn InputFeed>,
    /// The frames it holds at the scene's rate (`None` when a file does
    /// not say before it is read).
    pub(crate) frames: Option<u64>,
    /// A file's reader, to ask afterwards whether it failed.
    pub(crate) file: Option<RenderInput>,
    /// A second feed of the same samples, from the start (an array's), for
    /// a render that may read its input twice; `None` for a file.
    pub(crate) spare: Option<Box<dyn InputFeed>>,
}

impl Input {
    /// The rate a scene that sets no `sample_rate` renders at: its input
    /// file's, as on the command line (`None`: the scene's own rate).
    pub(crate) fn scene_rate(&self, text: &str, name: &str, dir: Option<&Path>) -> Option<u32> {
        let Input::File(path) = self else {
            return None;
        };
        let scene = morphrt_core::scene::load_str(text, name, dir.map(Path::to_path_buf)).ok()?;
        match open_early(std::slice::from_ref(path), &scene, false)? {
            Ok(wav) => Some(wav.sample_rate()),
            Err(_) => None,
        }
    }

    /// Opens the input for `plan`. The command line's warnings become
    /// Python warnings.
    pub(crate) fn open(self, py: Python<'_>, plan: &Plan) -> PyResult<Opened> {
        match self {
            Input::Array(channels) => {
                let frames = channels.first().map_or(0, |c| c.len() as u64);
                let channels = std::sync::Arc::new(channels);
                Ok(Opened {
                    feed: Box::new(ArrayInput {
                        channels: channels.clone(),
                    }),
                    frames: Some(frames),
                    file: None,
                    spare: Some(Box::new(ArrayInput { channels })),
                })
            }
            Input::File(path) => {
                let mut log = Vec::new();
                let opened = open_input(&[path], plan, false, None, &mut log)
                    .map_err(|e| host_error("input", e));
                warn_lines(py, &String::from_utf8_lossy(&log))?;
                Ok(match opened? {
                    Some(file) => Opened {
                        feed: file.feed(),
                        frames: file.frames,
                        file: Some(file),
                        spare: None,
                    },
                    // The scene reads no input (warned): nothing to feed.
                    None => Opened {
                        feed: Box::new(ArrayInput {
                            channels: Default::default(),
                        }),
                        frames: None,
                        file: None,
                        spare: None,
                    },
                })
            }
        }
    }
}

/// The `midi` argument (a path, or the bytes of a standard MIDI file)
/// mapped onto `plan`'s MIDI controls: the feed of its changes and notes,
/// and the sample of its last event. What the command line warns of
/// (notes never ended, values a control could not set or its node will
/// not play as set) becomes Python warnings.
pub(crate) fn midi_of(
    py: Python<'_>,
    v: &Bound<'_, PyAny>,
    plan: &Plan,
) -> PyResult<(ChangeFeed, u64)> {
    let (file, shown) = if let Ok(b) = v.cast::<PyBytes>() {
        let file = MidiFile::parse(b.as_bytes())
            .map_err(|e| PyValueError::new_err(format!("midi: the bytes {e}")))?;
        (file, "the MIDI bytes".to_string())
    } else {
        let path = path_of(v)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "midi: expected the path of a MIDI file or its bytes, got {}",
                v.get_type()
                    .name()
                    .map_or("?".to_string(), |n| n.to_string())
            ))
        })?;
        if !path.is_file() {
            return Err(PyFileNotFoundError::new_err(format!(
                "midi: no file `{}`",
                path.display()
            )));
        }
        let file =
            MidiFile::read(&path).map_err(|e| PyValueError::new_err(format!("midi: {e}")))?;
        (file, format!("`{}`", path.display()))
    };
    let mapped = map_midi(&file, &shown, plan, 0).map_err(|e| host_error("midi", e))?;
    warn_lines(py, &mapped.error_lines().join("\n"))?;
    Ok((
        ChangeFeed::with_notes(mapped.changes, mapped.notes),
        mapped.end,
    ))
}

/// A command line's error as a `ValueError` naming the argument.
pub(crate) fn host_error(what: &str, e: HostError) -> PyErr {
    PyValueError::new_err(format!("{what}: {}", e.message()))
}

/// Each `warning: ` line of `text` as a `UserWarning` (its notes, which
/// the command line prints for information, are left out).
pub(crate) fn warn_lines(py: Python<'_>, text: &str) -> PyResult<()> {
    for line in text.lines().filter_map(|l| l.strip_prefix("warning: ")) {
        let msg = std::ffi::CString::new(line).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<PyUserWarning>(), &msg, 1)?;
    }
    Ok(())
}
