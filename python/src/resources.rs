//! `resources={"name": array_or_path}`: the `@resource:NAME` files of a
//! scene, supplied by the caller through the core's [`Resolver`]. Nothing
//! is looked up on disk but the paths given.

use morphrt_core::graph::{Resolved, Resolver};
use morphrt_core::ops::AudioData;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::{Path, PathBuf};

/// Resources by name, each decoded audio.
#[derive(Debug)]
pub struct DictResolver {
    audio: Vec<(String, AudioData)>,
}

impl Resolver for DictResolver {
    fn resolve(&self, reference: &str, _scene_dir: Option<&Path>) -> Result<Resolved, String> {
        let name = reference.strip_prefix("@resource:").unwrap_or(reference);
        match self.audio.iter().find(|(n, _)| n == name) {
            Some((_, a)) => Ok(Resolved {
                path: a.path.clone(),
                audio: AudioData {
                    path: a.path.clone(),
                    sample_rate: a.sample_rate,
                    channels: a.channels.clone(),
                },
            }),
            None => {
                let mut names: Vec<&str> = self.audio.iter().map(|(n, _)| n.as_str()).collect();
                names.sort_unstable();
                Err(format!(
                    "`{reference}`: resources= has no `{name}` (it has: {})",
                    if names.is_empty() {
                        "nothing".to_string()
                    } else {
                        names.join(", ")
                    }
                ))
            }
        }
    }
}

/// The `resources` argument: a dict of name → a float array
/// `(channels, frames)` or `(frames,)` at `rate`, an `(array, rate)`
/// tuple, or the path of a WAV file.
pub fn resolver(resources: &Bound<'_, PyDict>, rate: u32) -> PyResult<DictResolver> {
    let mut audio = Vec::new();
    for (k, v) in resources.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("resources: keys are resource names (str)"))?;
        let what = format!("resources[{name:?}]");
        let data = if let Ok(t) = v.cast::<PyTuple>() {
            let (array, r): (Bound<'_, PyAny>, u32) = t.extract().map_err(|_| {
                PyTypeError::new_err(format!("{what}: expected (array, sample_rate)"))
            })?;
            from_array(&array, r, &name, &what)?
        } else if v.hasattr("__array_interface__")? {
            from_array(&v, rate, &name, &what)?
        } else if let Ok(p) = v
            .call_method0("__fspath__")
            .or_else(|_| Ok::<_, PyErr>(v.clone()))
        {
            let path: String = p.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{what}: expected a float array, (array, sample_rate) or a WAV file's path"
                ))
            })?;
            read_wav(Path::new(&path)).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))?
        } else {
            unreachable!("the fallback is Ok")
        };
        audio.push((name, data));
    }
    Ok(DictResolver { audio })
}

fn from_array(array: &Bound<'_, PyAny>, rate: u32, name: &str, what: &str) -> PyResult<AudioData> {
    let channels = crate::channels_f64(array, what)?;
    Ok(AudioData {
        path: PathBuf::from(format!("<resources:{name}>")),
        sample_rate: rate,
        channels,
    })
}

/// A WAV file's samples as f64 in −1 … 1, channel by channel.
fn read_wav(path: &Path) -> Result<AudioData, String> {
    let mut r = hound::WavReader::open(path).map_err(|e| format!("`{}`: {e}", path.display()))?;
    let spec = r.spec();
    let ch = spec.channels as usize;
    let flat: Vec<f64> = match spec.sample_format {
        hound::SampleFormat::Float => r
            .samples::<f32>()
            .map(|s| s.map(f64::from))
            .collect::<Result<_, _>>(),
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f64;
            r.samples::<i32>()
                .map(|s| s.map(|x| x as f64 * scale))
                .collect::<Result<_, _>>()
        }
    }
    .map_err(|e| format!("`{}`: {e}", path.display()))?;
    if ch == 0 || flat.iter().any(|x| !x.is_finite()) {
        return Err(format!(
            "`{}` has no channels or holds a non-finite sample",
            path.display()
        ));
    }
    let mut channels = vec![Vec::with_capacity(flat.len() / ch.max(1)); ch];
    for (i, x) in flat.into_iter().enumerate() {
        channels[i % ch].push(x);
    }
    Ok(AudioData {
        path: path.to_path_buf(),
        sample_rate: spec.sample_rate,
        channels,
    })
}
