//! `import morphrt`: scenes rendered into numpy arrays, on morphrt-core's
//! embedding API, bit for bit what `morphrt render` writes under strict.
//!
//! The scene is a path, a JSON string or a dict; `params` overrides node
//! params before compiling (`{"lp.cutoff": "900Hz"}`); `events` are added
//! to the scene's; `input` is an array or an audio file the scene's `input`
//! nodes read, and `midi` a MIDI file that plays its MIDI controls
//! (`inputs.rs`, through the command line's readers).
//! A scene with errors raises `morphrt.SceneError`, which carries every
//! located diagnostic; a bad argument raises `ValueError`/`TypeError`
//! naming what was expected. The GIL is released while audio renders.
//! `Scene` and `Processor` (`stream.rs`) stream a scene block by block,
//! in float32 or float64 (`sample.rs`), their snapshots in the core's
//! snapshot format; `inputs.rs` reads audio and MIDI files as the command
//! line does; `resources.rs` supplies `@resource:` files from a dict.

mod inputs;
mod resources;
mod sample;
mod stream;

use ::morphrt::host::files::threads::MAX_THREADS;
use ::morphrt::host::offline::ahead;
use morphrt_core::api::player::offline_player;
use morphrt_core::api::{Diagnostics, Loaded};
use morphrt_core::engine::{BusRef, ChangeFeed, Engine, InputBlock, InputFeed, Workers};
use morphrt_core::graph::CompileOptions;
use morphrt_core::profile::Profile;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::conversion::FromPyObjectOwned;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use std::path::{Path, PathBuf};

pyo3::create_exception!(
    morphrt,
    SceneError,
    PyValueError,
    "A scene that does not load or compile. `diagnostics` holds each error and warning as a dict: severity, file, line, column, path (the JSON path), node, message, help."
);

/// A scene's text, the name diagnostics give it and its folder.
#[derive(Clone)]
pub(crate) struct Source {
    text: String,
    name: String,
    dir: Option<PathBuf>,
}

/// The scene argument: a path (str or os.PathLike) to a JSON file, a JSON
/// string (it starts with `{`), a dict, or a `Scene`.
pub(crate) fn source(py: Python<'_>, scene: &Bound<'_, PyAny>) -> PyResult<Source> {
    if let Ok(s) = scene.cast::<stream::Scene>() {
        return Ok(s.get().src.clone());
    }
    if let Ok(d) = scene.cast::<PyDict>() {
        return Ok(Source {
            text: json_dumps(py, d.as_any())?,
            name: "<dict>".to_string(),
            dir: None,
        });
    }
    let text: String = if let Ok(s) = scene.cast::<PyString>() {
        s.to_string()
    } else {
        match scene.call_method0("__fspath__") {
            Ok(p) => p.extract()?,
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "scene: expected a path, a JSON string, a dict or a morphrt.Scene, got {}",
                    scene.get_type().name()?
                )))
            }
        }
    };
    if text.trim_start().starts_with('{') {
        return Ok(Source {
            text,
            name: "<string>".to_string(),
            dir: None,
        });
    }
    let path = PathBuf::from(&text);
    let body = std::fs::read_to_string(&path).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err(format!("cannot read the scene `{text}`: {e}"))
    })?;
    Ok(Source {
        text: body,
        name: text,
        dir: path.parent().map(Path::to_path_buf),
    })
}

fn json_dumps(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<String> {
    py.import("json")?.call_method1("dumps", (v,))?.extract()
}

/// `text` with `params` (`node.param` → value, as the scene writes it)
/// set on the scene's nodes and `events` appended to its events.
fn edited(
    py: Python<'_>,
    src: &Source,
    params: Option<&Bound<'_, PyDict>>,
    events: Option<&Bound<'_, PyList>>,
) -> PyResult<String> {
    let mut sets = Vec::new();
    for (k, v) in params.into_iter().flat_map(|p| p.iter()) {
        let key: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("params: keys are `node.param` strings"))?;
        let value: serde_json::Value = serde_json::from_str(&json_dumps(py, &v)?)
            .map_err(|e| PyValueError::new_err(format!("params: `{key}`: {e}")))?;
        sets.push((key, value));
    }
    let text = morphrt_core::api::set_params(&src.text, &sets)
        .map_err(|e| PyValueError::new_err(format!("params: {e}")))?;
    let Some(events) = events.filter(|e| !e.is_empty()) else {
        return Ok(text);
    };
    // A text that is not JSON is left as it is: loading it reports where.
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(text);
    };
    let extra: serde_json::Value = serde_json::from_str(&json_dumps(py, events.as_any())?)
        .map_err(|e| PyValueError::new_err(format!("events: {e}")))?;
    let list = doc
        .as_object_mut()
        .ok_or_else(|| PyValueError::new_err("the scene is not a JSON object"))?
        .entry("events")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    match (list.as_array_mut(), extra) {
        (Some(list), serde_json::Value::Array(extra)) => list.extend(extra),
        _ => {
            return Err(PyValueError::new_err(
                "events: the scene's `events` is not a list",
            ))
        }
    }
    Ok(doc.to_string())
}

/// A `SceneError` holding `d` as dicts, its message what `morphrt check`
/// prints.
pub(crate) fn scene_error(py: Python<'_>, d: Diagnostics) -> PyErr {
    let message = d.to_string();
    let list = PyList::empty(py);
    for x in d.all() {
        let item = PyDict::new(py);
        let _ = item.set_item("severity", if x.is_error() { "error" } else { "warning" });
        let _ = item.set_item("file", &x.file);
        let _ = item.set_item("line", x.loc.as_ref().map(|l| l.line));
        let _ = item.set_item("column", x.loc.as_ref().map(|l| l.col));
        let _ = item.set_item("path", x.loc.as_ref().map(|l| l.path.clone()));
        let _ = item.set_item("node", &x.node);
        let _ = item.set_item("message", &x.message);
        let _ = item.set_item("help", &x.help);
        let _ = list.append(item);
    }
    let err = SceneError::new_err(message);
    let _ = err.value(py).setattr("diagnostics", list);
    err
}

/// Input channels held in memory, read by the scene's `input` nodes;
/// silence past their end.
pub(crate) struct ArrayInput {
    pub(crate) channels: std::sync::Arc<Vec<Vec<f64>>>,
}

impl InputFeed for ArrayInput {
    fn read(&mut self, start: u64, block: &mut InputBlock<'_>) {
        let frames = block.frames();
        for c in 0..block.channels() {
            let dst = block.channel_mut(c);
            match self.channels.get(c) {
                Some(src) => {
                    for (i, d) in dst.iter_mut().enumerate().take(frames) {
                        *d = src.get(start as usize + i).copied().unwrap_or(0.0);
                    }
                }
                None => dst.fill(0.0),
            }
        }
    }
}

/// Argument `what` as channels of f64: an array `(channels, frames)` or
/// `(frames,)` of float32 or float64, every sample finite.
pub(crate) fn channels_f64(input: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Vec<f64>>> {
    let shape_err = |got: String| {
        PyValueError::new_err(format!(
            "{what}: expected a float32 or float64 array of shape (channels, frames) or (frames,), got {got}"
        ))
    };
    let array = input
        .cast::<numpy::PyUntypedArray>()
        .map_err(|_| PyTypeError::new_err(format!("{what}: expected a numpy array")))?;
    let dtype = array.dtype().str()?.to_string();
    let rows: Vec<Vec<f64>> = if let Ok(a) = input.cast::<numpy::PyArrayDyn<f64>>() {
        rows_of(a.readonly().as_array().view())
    } else if let Ok(a) = input.cast::<numpy::PyArrayDyn<f32>>() {
        rows_of(a.readonly().as_array().mapv(f64::from).view())
    } else {
        return Err(shape_err(format!("dtype {dtype}")));
    }
    .ok_or_else(|| shape_err(format!("shape {:?}", array.shape())))?;
    for (c, row) in rows.iter().enumerate() {
        if let Some(i) = row.iter().position(|x| !x.is_finite()) {
            return Err(PyValueError::new_err(format!(
                "{what}: channel {c}, frame {i} is {} (not a finite number)",
                row[i]
            )));
        }
    }
    Ok(rows)
}

/// Runs `f`, a panic in it becoming an error with the panic's message.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        format!("the engine panicked: {msg}")
    })
}

/// The rate a scene plays at: `asked`, else its own `sample_rate` (48 kHz
/// when the text does not load: compiling it then says why).
pub(crate) fn scene_rate(src: &Source, asked: Option<u32>) -> u32 {
    asked.unwrap_or_else(|| {
        morphrt_core::scene::load_str(&src.text, &src.name, src.dir.clone())
            .map_or(48_000, |s| s.sample_rate)
    })
}

/// The resolver of a `resources=` dict (arrays at `rate` unless given
/// with their own).
pub(crate) fn resolver_of(
    resources: Option<&Bound<'_, PyDict>>,
    rate: u32,
) -> PyResult<Option<std::sync::Arc<dyn morphrt_core::graph::Resolver>>> {
    Ok(match resources {
        Some(r) => Some(std::sync::Arc::new(resources::resolver(r, rate)?)),
        None => None,
    })
}

fn rows_of(a: numpy::ndarray::ArrayViewD<'_, f64>) -> Option<Vec<Vec<f64>>> {
    match a.ndim() {
        1 => Some(vec![a.iter().copied().collect()]),
        2 => Some(
            a.outer_iter()
                .map(|row| row.iter().copied().collect())
                .collect(),
        ),
        _ => None,
    }
}

/// A time argument: seconds as a number, or a string with a unit
/// (`"2.5s"`, `"480ms"`, `"96000samples"`, `"4bars"` in a scene with a
/// tempo), in frames at `rate`: at least one.
fn frames_of(
    v: &Bound<'_, PyAny>,
    rate: u32,
    tempo: Option<&morphrt_core::scene::Tempo>,
) -> PyResult<u64> {
    let text = if let Ok(s) = v.extract::<f64>() {
        if !(s.is_finite() && s > 0.0) {
            return Err(PyValueError::new_err(format!(
                "duration: {s} is not a number of seconds > 0"
            )));
        }
        format!("{s}s")
    } else {
        v.extract().map_err(|_| {
            PyTypeError::new_err("duration: expected seconds or a time such as \"2.5s\"")
        })?
    };
    morphrt_core::scene::TimeArg::parse(&text)
        .and_then(|t| t.length(rate, tempo, &mut std::io::sink()))
        .map_err(|e| PyValueError::new_err(format!("duration: {e}")))
}

/// `render`'s keyword arguments, read by name from its `**kwargs`: each
/// optional; an unknown one, or one of the wrong type, is refused as
/// PyO3 refuses a function's own keywords.
#[derive(Default)]
struct RenderArgs<'py> {
    duration: Option<Bound<'py, PyAny>>,
    input: Option<Bound<'py, PyAny>>,
    sample_rate: Option<u32>,
    profile: Option<String>,
    seed: Option<u64>,
    block_size: Option<usize>,
    params: Option<Bound<'py, PyDict>>,
    events: Option<Bound<'py, PyList>>,
    dtype: Option<Bound<'py, PyAny>>,
    resources: Option<Bound<'py, PyDict>>,
    midi: Option<Bound<'py, PyAny>>,
    threads: Option<usize>,
}

impl<'py> RenderArgs<'py> {
    fn from_kwargs(kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<RenderArgs<'py>> {
        let mut a = RenderArgs::default();
        for (key, value) in kwargs.into_iter().flat_map(|k| k.iter()) {
            let name: String = key.extract()?;
            let any = || (!value.is_none()).then(|| value.clone());
            match name.as_str() {
                "duration" => a.duration = any(),
                "input" => a.input = any(),
                "sample_rate" => a.sample_rate = keyword(&name, &value)?,
                "profile" => a.profile = Some(keyword(&name, &value)?),
                "seed" => a.seed = keyword(&name, &value)?,
                "block_size" => a.block_size = keyword(&name, &value)?,
                "params" => a.params = keyword(&name, &value)?,
                "events" => a.events = keyword(&name, &value)?,
                "dtype" => a.dtype = any(),
                "resources" => a.resources = keyword(&name, &value)?,
                "midi" => a.midi = any(),
                "threads" => a.threads = keyword(&name, &value)?,
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "render() got an unexpected keyword argument '{name}'"
                    )))
                }
            }
        }
        Ok(a)
    }
}

/// The keyword argument `name` as a `T`; the error of a value that is
/// not one carries the note "while processing 'name'", as PyO3's errors
/// for a function's own arguments do.
fn keyword<'py, T: FromPyObjectOwned<'py>>(name: &str, value: &Bound<'py, PyAny>) -> PyResult<T> {
    let extracted: PyResult<T> = value.extract::<T>().map_err(Into::into);
    extracted.inspect_err(|e| {
        let note = format!("while processing '{name}'");
        // `add_note` is Python 3.11's: before it the error goes as it is.
        let _ = e.value(value.py()).call_method1("add_note", (note,));
    })
}

/// Renders `scene` and returns its main bus as an array
/// `(channels, frames)`: float64 under strict, float32 under repro and
/// live (the engine's own samples, converted exactly), or `dtype`.
/// `input` is an array or an audio file's path; `midi` a MIDI file's path
/// or bytes (see `inputs.rs`).
#[pyfunction]
#[pyo3(
    signature = (scene, **kwargs),
    text_signature = "(scene, *, duration=None, input=None, sample_rate=None, profile=\"strict\", seed=None, block_size=None, params=None, events=None, dtype=None, resources=None, midi=None, threads=1)"
)]
fn render<'py>(
    py: Python<'py>,
    scene: &Bound<'py, PyAny>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let RenderArgs {
        duration,
        input,
        sample_rate,
        profile,
        seed,
        block_size,
        params,
        events,
        dtype,
        resources,
        midi,
        threads,
    } = RenderArgs::from_kwargs(kwargs)?;
    let threads = threads_in_range(threads.unwrap_or(1))?;
    let profile = profile.as_deref().unwrap_or("strict");
    let (duration, input, params, events, dtype, resources, midi) = (
        duration.as_ref(),
        input.as_ref(),
        params.as_ref(),
        events.as_ref(),
        dtype.as_ref(),
        resources.as_ref(),
        midi.as_ref(),
    );
    let profile = Profile::parse_arg(profile).map_err(PyValueError::new_err)?;
    let src = source(py, scene)?;
    let text = edited(py, &src, params, events)?;
    let input = input.map(inputs::input_of).transpose()?;
    let sample_rate = sample_rate.or_else(|| {
        let i = input.as_ref()?;
        i.scene_rate(&text, &src.name, src.dir.as_deref())
    });
    let options = CompileOptions {
        profile: Some(profile),
        block_size,
        seed,
        sample_rate,
        resolver: resolver_of(resources, scene_rate(&src, sample_rate))?,
        ..CompileOptions::default()
    };
    let loaded = Loaded::from_text(&text, &src.name, src.dir.as_deref(), &options)
        .map_err(|d| scene_error(py, d))?;
    let plan = loaded.plan();
    let rate = plan.sample_rate;
    let (feed, input_frames, file, spare) = match input {
        Some(i) => {
            let o = i.open(py, plan)?;
            (Some(o.feed), o.frames, o.file, o.spare)
        }
        None => (None, None, None, None),
    };
    let midi = midi.map(|m| inputs::midi_of(py, m, plan)).transpose()?;
    let frames = match (duration, plan.duration, input_frames, &midi) {
        (Some(d), _, _, _) => frames_of(d, rate, plan.tempo.as_ref())?,
        (None, Some(f), _, _) => f,
        (None, None, Some(f), _) => f,
        (None, None, None, Some((_, end))) => *end,
        (None, None, None, None) if feed.is_some() => return Err(PyValueError::new_err(
            "duration: the input file does not say how long it is before it is read; give duration= (seconds or a time such as \"2s\")",
        )),
        (None, None, None, None) => return Err(PyValueError::new_err(
            "duration: the scene sets none; give duration= (seconds or a time such as \"2s\")",
        )),
    };
    let (plan, _) = loaded.into_parts();
    let strict = profile == Profile::Strict;
    // Half of a wide sum (or the head of a chain) on a thread of its own,
    // as `morphrt render` into a file does (`ahead.rs` of the command
    // line): a scene without MIDI to read, whose input (if any) can be
    // read again from its start should the whole scene play again (an
    // array).
    let may_cut = threads >= 2
        && midi.is_none()
        && (feed.is_none() || spare.is_some())
        && ahead::may_cut(&plan);
    let has_input = feed.is_some();
    let (name, dir) = (src.name.clone(), src.dir.clone());
    let (out, errors) = py
        .detach(move || {
            catch(move || {
                let scene = may_cut
                    .then(|| morphrt_core::scene::load_str(&text, &name, dir).ok())
                    .flatten();
                let compile = move |part: &morphrt_core::scene::Scene| {
                    morphrt_core::graph::compile(part, &options).ok()
                };
                let parts = scene.and_then(|scene| {
                    ahead::start_parts(&plan, &scene, compile, has_input, frames)
                });
                let mut feed = feed;
                let ask_fewer = |e: &dyn std::fmt::Display| format!("threads: {e}; ask for fewer");
                match parts {
                    Some(Ok((mut ahead, mut rest, _))) => {
                        rest.set_workers(workers_of(threads - 1).map_err(|e| ask_fewer(&e))?);
                        if let Some(feed) = ahead.feed() {
                            rest.set_input_feed(feed);
                        }
                        // The part ahead holds every `input` node; the
                        // whole scene, should it play again, reads the
                        // spare from the start.
                        if let Some(input) = feed.take() {
                            ahead.read_input(input);
                            feed = spare;
                        }
                        let spoiled = ahead.spoiled();
                        let keeps = |rest: &Engine| ahead.keeps(rest);
                        let kept = Some((&*spoiled, &keeps as &dyn Fn(&Engine) -> bool));
                        if let Some(played) = play(rest, frames, None, strict, kept) {
                            return Ok(played);
                        }
                        // What the part ahead gave is not what the whole
                        // scene plays: nothing is kept, the whole scene plays.
                    }
                    Some(Err(e)) => return Err(ask_fewer(&e)),
                    None => {}
                }
                let mut engine = Engine::new(plan);
                engine.set_workers(workers_of(threads).map_err(|e| ask_fewer(&e))?);
                if let Some(feed) = feed {
                    engine.set_input_feed(feed);
                }
                Ok(play(engine, frames, midi.map(|m| m.0), strict, None)
                    .expect("a render without a part ahead plays to its end"))
            })
        })
        .and_then(|r: Result<_, String>| r)
        .map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
    if let Some(e) = file.and_then(|f| f.state().err()) {
        return Err(inputs::host_error("input", e.into()));
    }
    let lines: Vec<String> = errors
        .iter()
        .map(|(at, e)| {
            let at = *at as f64 / f64::from(rate);
            format!("warning: midi: a change at {at:.3} s did not land: {e}")
        })
        .collect();
    inputs::warn_lines(py, &lines.join("\n"))?;
    let array = match out {
        Samples::F32(a) => a.into_pyarray(py).into_any(),
        Samples::F64(a) => a.into_pyarray(py).into_any(),
    };
    match dtype {
        Some(d) => array.call_method1("astype", (d,)),
        None => Ok(array),
    }
}

/// `threads` when `morphrt render --threads` would take it.
fn threads_in_range(threads: usize) -> PyResult<usize> {
    let most = usize::from(MAX_THREADS);
    if !(1..=most).contains(&threads) {
        return Err(PyValueError::new_err(format!(
            "threads: {threads} is not in 1..={most} (as `morphrt render --threads` takes)"
        )));
    }
    Ok(threads)
}

/// The worker pool of a render on `threads` threads (none for one), as
/// `morphrt render --threads` starts it; the same bytes at every count.
fn workers_of(threads: usize) -> std::io::Result<Option<Workers>> {
    if threads == 1 {
        return Ok(None);
    }
    Workers::try_new(threads).map(Some)
}

/// A render's samples, `(channels, frames)`: f64 under strict, f32
/// otherwise (the main bus's precision, so exact either way).
enum Samples {
    F32(Array2<f32>),
    F64(Array2<f64>),
}

/// Copies the frames of `bus` into each channel's row of `data` (rows
/// `frames` long) at frame `at`: row by row where the bus holds `T`
/// (`rows`), sample by sample through `sample` otherwise.
fn copy_bus<T: Copy>(
    data: &mut [T],
    frames: usize,
    at: usize,
    bus: &BusRef<'_>,
    rows: Option<&[Vec<T>]>,
    sample: impl Fn(f64) -> T,
) {
    let n = bus.frames();
    for c in 0..bus.channels() {
        let row = &mut data[c * frames + at..][..n];
        match rows {
            Some(r) => row.copy_from_slice(&r[c][..n]),
            None => row
                .iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = sample(bus.get(c, i))),
        }
    }
}

/// Whether a render whose part ahead is on a thread of its own may keep
/// what it played: the flag `ahead.rs` raises when the part spoiled it,
/// and the check of the rest's engine once every frame played.
type Kept<'a> = (
    &'a std::sync::atomic::AtomicBool,
    &'a dyn Fn(&Engine) -> bool,
);

/// Plays `frames` frames of `engine` as `morphrt render` does (its
/// offline player, `feed`'s changes and notes landing at their samples):
/// the main bus `(channels, frames)` (f64 when `strict`, else f32), and
/// the changes that could not land; `None` when `kept` says the render
/// may not keep it (it stops at the first block after the part ahead
/// spoiled it).
fn play(
    engine: Engine,
    frames: u64,
    mut feed: Option<ChangeFeed>,
    strict: bool,
    kept: Option<Kept<'_>>,
) -> Option<(Samples, Vec<(u64, String)>)> {
    use std::sync::atomic::Ordering;
    let spoiled = || kept.is_some_and(|(s, _)| s.load(Ordering::Acquire));
    let width = engine.channels();
    let frames = frames as usize;
    let mut player = offline_player(engine);
    let (mut wide, mut narrow) = match strict {
        true => (vec![0.0f64; width * frames], Vec::new()),
        false => (Vec::new(), vec![0.0f32; width * frames]),
    };
    let mut at = 0usize;
    let played = player.play_frames(
        frames as u64,
        &[],
        feed.as_mut(),
        |_| Ok::<(), ()>(()),
        |bus| {
            if spoiled() {
                return Err(());
            }
            if strict {
                let rows = match &bus {
                    BusRef::F64(rows, _) => Some(&rows[..]),
                    BusRef::F32(..) => None,
                };
                copy_bus(&mut wide, frames, at, &bus, rows, |x| x);
            } else {
                let rows = match &bus {
                    BusRef::F32(rows, _) => Some(&rows[..]),
                    BusRef::F64(..) => None,
                };
                copy_bus(&mut narrow, frames, at, &bus, rows, |x| x as f32);
            }
            at += bus.frames();
            Ok(())
        },
        |_| {},
    );
    if played.is_err() || spoiled() || kept.is_some_and(|(_, keeps)| !keeps(player.engine())) {
        return None;
    }
    let shape = (width, frames);
    let out = match strict {
        true => {
            Samples::F64(Array2::from_shape_vec(shape, wide).expect("the shape holds the data"))
        }
        false => {
            Samples::F32(Array2::from_shape_vec(shape, narrow).expect("the shape holds the data"))
        }
    };
    Some((out, feed.map(|f| f.errors().to_vec()).unwrap_or_default()))
}

/// Checks a scene as `morphrt check` does: returns its warnings (as
/// dicts, like `SceneError.diagnostics`), raises `SceneError` on errors.
/// `resources` supplies its `@resource:` files as `render`'s does.
#[pyfunction]
#[pyo3(signature = (scene, *, profile=None, resources=None))]
fn check<'py>(
    py: Python<'py>,
    scene: &Bound<'py, PyAny>,
    profile: Option<&str>,
    resources: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let src = source(py, scene)?;
    check_source(py, &src, profile, resources)
}

pub(crate) fn check_source<'py>(
    py: Python<'py>,
    src: &Source,
    profile: Option<&str>,
    resources: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let profile = profile
        .map(Profile::parse_arg)
        .transpose()
        .map_err(PyValueError::new_err)?;
    let options = CompileOptions {
        profile,
        skip_build: true,
        resolver: resolver_of(resources, scene_rate(src, None))?,
        ..CompileOptions::default()
    };
    let loaded = Loaded::from_text(&src.text, &src.name, src.dir.as_deref(), &options)
        .map_err(|d| scene_error(py, d))?;
    let warnings = loaded.warnings().to_vec();
    let err = scene_error(py, Diagnostics::from(warnings));
    let list = err.value(py).getattr("diagnostics")?;
    Ok(list.cast_into::<PyList>()?)
}

/// The module.
#[pymodule]
fn morphrt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // An instruction-set cap the core does not know would be ignored: refuse
    // it at import, as the command line does before it builds anything.
    morphrt_core::dsp::vector::isa_cap().map_err(PyValueError::new_err)?;
    m.add("SceneError", m.py().get_type::<SceneError>())?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_class::<stream::Scene>()?;
    m.add_class::<stream::Processor>()?;
    Ok(())
}
