//! `morphrt.Scene` and `morphrt.Processor`: a scene loaded once and
//! checked, and a scene streamed block by block on the core's
//! [`Controller`] and [`CoreProcessor`], with params, notes, profile
//! switches and snapshots.

use crate::sample::Sample;
use crate::{catch, channels_f64, scene_error, source, Source};
use morphrt_core::api::snapshot::{HexF64, SnapshotContext, SnapshotError, SnapshotFile};
use morphrt_core::api::{
    ActivateError, Activation, ControlError, Controller, Diagnostics, Event, EventKind, Loaded,
    Notice, ParamList, ParamRange, Processor as CoreProcessor,
};
use morphrt_core::graph::{compile, CompileOptions, Resolver};
use morphrt_core::profile::Profile;
use numpy::{PyArray2, PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::sync::{Arc, Mutex};

/// A scene loaded from a path, a JSON string or a dict: its text and the
/// name its diagnostics give it. Any function that takes a scene takes a
/// `Scene` too.
#[pyclass(module = "morphrt", frozen)]
pub struct Scene {
    pub(crate) src: Source,
}

#[pymethods]
impl Scene {
    /// Loads `scene`: a path (str or os.PathLike), a JSON string or a dict.
    #[new]
    fn new(py: Python<'_>, scene: &Bound<'_, PyAny>) -> PyResult<Scene> {
        Ok(Scene {
            src: source(py, scene)?,
        })
    }

    /// The scene's JSON text.
    #[getter]
    fn text(&self) -> &str {
        &self.src.text
    }

    /// The name diagnostics give the scene: its path, `<string>` or
    /// `<dict>`.
    #[getter]
    fn name(&self) -> &str {
        &self.src.name
    }

    /// Checks the scene as `morphrt check` does: returns its warnings as
    /// dicts, raises `SceneError` (with every located diagnostic) on
    /// errors.
    #[pyo3(signature = (*, profile=None, resources=None))]
    fn check<'py>(
        &self,
        py: Python<'py>,
        profile: Option<&str>,
        resources: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        crate::check_source(py, &self.src, profile, resources)
    }

    /// The params a host lists, in a stable order: `profile`, the
    /// scene's controls by source, then every node param as
    /// `node.param`. Each is a dict: `id`, `module`, `kind` (`number`,
    /// `integer`, `choice`, `toggle`), `min`, `max`, `unit`, `default`,
    /// `display` (the default in words) and, for a choice, `choices`.
    #[pyo3(signature = (*, profile=None, resources=None))]
    fn params<'py>(
        &self,
        py: Python<'py>,
        profile: Option<&str>,
        resources: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let profile = profile
            .map(Profile::parse_arg)
            .transpose()
            .map_err(PyValueError::new_err)?;
        let rate = crate::scene_rate(&self.src, None);
        let options = CompileOptions {
            profile,
            resolver: crate::resolver_of(resources, rate)?,
            ..CompileOptions::default()
        };
        let loaded = Loaded::from_text(
            &self.src.text,
            &self.src.name,
            self.src.dir.as_deref(),
            &options,
        )
        .map_err(|d| scene_error(py, d))?;
        param_dicts(py, loaded.params())
    }

    fn __repr__(&self) -> String {
        format!("morphrt.Scene({:?})", self.src.name)
    }
}

/// Each param of `list` as a dict.
fn param_dicts<'py>(py: Python<'py>, list: &ParamList) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for p in list.iter() {
        let d = PyDict::new(py);
        d.set_item("id", p.id())?;
        d.set_item("module", p.module())?;
        let range = p.range();
        let (min, max) = range.bounds();
        let kind = match range {
            ParamRange::Number { .. } => "number",
            ParamRange::Integer { .. } => "integer",
            ParamRange::Choice(c) => {
                d.set_item("choices", c.to_vec())?;
                "choice"
            }
            ParamRange::Toggle => "toggle",
        };
        d.set_item("kind", kind)?;
        d.set_item("min", min)?;
        d.set_item("max", max)?;
        d.set_item("unit", p.unit())?;
        d.set_item("default", p.default_value())?;
        d.set_item("display", p.display(p.default_value()))?;
        out.append(d)?;
    }
    Ok(out)
}

/// What a processor is activated with (and a reset or a resume
/// activates again).
struct Settings {
    text: String,
    name: String,
    sample_rate: u32,
    max_frames: usize,
    block_size: Option<usize>,
    seed: Option<u64>,
    profile: Profile,
    resolver: Option<Arc<dyn Resolver>>,
}

impl Settings {
    fn activate(&self, profile: Profile) -> Result<(Controller, CoreProcessor), ActivateError> {
        let mut a = Activation::new(self.sample_rate, self.max_frames).profile(profile);
        a.block_size = self.block_size;
        a.seed = self.seed;
        if let Some(r) = &self.resolver {
            a = a.resolver(r.clone());
        }
        a.activate_scene(&self.text, &self.name)
    }
}

/// A processor's two halves and what the Python side keeps beside them.
struct Stream {
    settings: Settings,
    controller: Controller,
    core: CoreProcessor,
    /// Events for the next call, at its first frame.
    queued: Vec<EventKind>,
    /// Frames given to the core since activation (with a resume's saved
    /// input, which comes first).
    internal: u64,
    /// Frames the core took before the caller's: a resume's saved input.
    lead: u64,
    /// The caller's input since the last engine block boundary.
    block_input: Vec<Vec<f64>>,
    /// Whether an event landed since the last engine block boundary.
    block_events: bool,
    /// A resume's output for the caller's first frames (the rest of the
    /// block that was playing when the snapshot was taken).
    tail: Vec<Vec<f64>>,
    /// The internal frame a resume's restore plays from; events asked for
    /// before it land there.
    restore_at: u64,
    /// The engine sample from which no crossfade plays.
    settled_at: u64,
    profile: Profile,
}

fn activate_error(py: Python<'_>, e: ActivateError) -> PyErr {
    match e {
        ActivateError::Scene(d) => scene_error(py, Diagnostics::from(d)),
        other => PyValueError::new_err(other.to_string()),
    }
}

fn control_error(py: Python<'_>, e: ControlError) -> PyErr {
    match e {
        ControlError::Scene(d) => scene_error(py, Diagnostics::from(d)),
        other => PyValueError::new_err(other.to_string()),
    }
}

impl Stream {
    fn new(py: Python<'_>, mut settings: Settings, profile: Profile) -> PyResult<Stream> {
        let (controller, core) = settings
            .activate(profile)
            .map_err(|e| activate_error(py, e))?;
        // The seed live picked, if it did, is the processor's from now on:
        // its snapshots, a reset and a resume play the same noise.
        settings.seed = settings.seed.or(controller.seed());
        let inputs = core.input_channels();
        Ok(Stream {
            settings,
            controller,
            core,
            queued: Vec::new(),
            internal: 0,
            lead: 0,
            block_input: vec![Vec::new(); inputs],
            block_events: false,
            tail: Vec::new(),
            restore_at: 0,
            settled_at: 0,
            profile,
        })
    }

    fn block(&self) -> u64 {
        self.core.latency() as u64
    }

    /// Runs `frames` frames of `input` (one buffer per input channel)
    /// through the core in calls of at most its maximum (of at most one
    /// engine block while a switch is under way, so that it is polled at
    /// every boundary), writing the output into `out` (one buffer per
    /// output channel).
    fn run<S: Sample>(
        &mut self,
        input: &[&[S]],
        out: &mut [&mut [S]],
        frames: usize,
    ) -> Result<(), String> {
        let b = self.block();
        let mut done = 0;
        while done < frames {
            let mut n = (frames - done).min(self.settings.max_frames);
            if self.controller.busy() {
                n = n.min((b - self.internal % b) as usize);
            }
            let waiting = self.internal < self.restore_at;
            if waiting {
                n = n.min((self.restore_at - self.internal) as usize);
            }
            let events: Vec<Event> = if waiting {
                Vec::new()
            } else {
                self.queued
                    .drain(..)
                    .map(|kind| Event { offset: 0, kind })
                    .collect()
            };
            let ins: Vec<&[S]> = input.iter().map(|c| &c[done..done + n]).collect();
            let mut outs: Vec<&mut [S]> = out.iter_mut().map(|c| &mut c[done..done + n]).collect();
            S::process(&mut self.core, &ins, &mut outs, &events, n).map_err(|e| e.to_string())?;
            let start = self.internal;
            self.internal += n as u64;
            // The block under way: what a snapshot must carry.
            let pos = start % b;
            if pos + n as u64 >= b {
                let keep = (self.internal % b) as usize;
                for (c, ch) in input.iter().enumerate() {
                    self.block_input[c].clear();
                    let kept = &ch[done + n - keep..done + n];
                    self.block_input[c].extend(kept.iter().map(|x| x.to_f64()));
                }
                self.block_events = false;
            } else {
                for (c, ch) in input.iter().enumerate() {
                    let part = &ch[done..done + n];
                    self.block_input[c].extend(part.iter().map(|x| x.to_f64()));
                }
                self.block_events |= !events.is_empty();
            }
            // A resume plays the rest of the snapshot's block first.
            let tail_len = self.tail.first().map_or(0, Vec::len) as u64;
            for i in 0..n as u64 {
                let k = start + i;
                if k >= self.lead && k < self.lead + tail_len {
                    for (c, o) in out.iter_mut().enumerate() {
                        o[done + i as usize] = S::of_f64(self.tail[c][(k - self.lead) as usize]);
                    }
                }
            }
            done += n;
            self.poll();
        }
        Ok(())
    }

    /// Moves the controller's request on.
    fn poll(&mut self) {
        for notice in self.controller.poll() {
            if let Notice::Swapped { swap_at, fade, .. } = notice {
                self.profile = self.controller.profile();
                self.settled_at = swap_at + fade;
            }
        }
    }

    /// The snapshot's bytes: the activation, the block under way and the
    /// engine's state at its start.
    fn snapshot(&self) -> Result<Vec<u8>, String> {
        let b = self.block();
        if self.controller.busy() {
            return Err("a profile switch is under way: process until `switching` is False, then take the snapshot".into());
        }
        if self.internal < self.restore_at {
            return Err(format!(
                "the resumed processor plays its snapshot's block for {} more frames: process them first",
                self.restore_at - self.internal
            ));
        }
        if self.block_events {
            return Err(format!(
                "a param or note landed in the engine block under way: process {} more frames (to the next multiple of latency) and take the snapshot there",
                b - self.internal % b
            ));
        }
        let engine = self.core.engine();
        if self.settled_at > 0 && engine.clock() < self.settled_at + b {
            return Err(
                "a crossfade from a profile switch is still playing: process one block more".into(),
            );
        }
        let f = self.internal % b;
        let oc = self.core.output_channels();
        let mut tail = vec![vec![0.0f64; (b - f) as usize]; oc];
        if self.internal >= b {
            let bus = engine.bus();
            if bus.frames() as u64 != b {
                return Err(
                    "the last engine block was cut short by a handover: process one block more"
                        .into(),
                );
            }
            for (c, t) in tail.iter_mut().enumerate() {
                for (i, x) in t.iter_mut().enumerate() {
                    *x = bus.get(c, f as usize + i);
                }
            }
        }
        let s = &self.settings;
        let options = CompileOptions {
            profile: Some(self.profile),
            sample_rate: Some(s.sample_rate),
            block_size: Some(b as usize),
            seed: s.seed,
            resolver: s.resolver.clone(),
            skip_build: true,
            ..CompileOptions::default()
        };
        let scene =
            morphrt_core::scene::load_str(&s.text, &s.name, None).map_err(|d| d[0].to_string())?;
        let plan = compile(&scene, &options).map_err(|d| d[0].to_string())?;
        let cx = match &s.resolver {
            Some(r) => SnapshotContext::from_resolver(&plan, &s.text, &**r),
            None => SnapshotContext::new(&plan, &s.text, &|_| unreachable!("no resources")),
        }
        .map_err(|e| e.to_string())?;
        let mut file = cx.file(&engine.snapshot()).map_err(|e| e.to_string())?;
        let part = StreamPart {
            max_frames: s.max_frames,
            profile: s.profile.name().to_string(),
            frame: f,
            input: self.block_input.iter().map(|c| HexF64(c.clone())).collect(),
            tail: tail.into_iter().map(HexF64).collect(),
        };
        let part = serde_json::to_value(part).expect("the stream part serializes");
        file.host = Some(serde_json::json!({ HOST: part }));
        Ok(file.to_bytes())
    }
}

/// The key of a snapshot's `host` object under which `Processor.snapshot()`
/// keeps its [`StreamPart`].
const HOST: &str = "python";

/// What a processor keeps beside the engine state in its snapshot (the
/// core's `morphrt-snapshot` format, under `host.python`): how it was
/// created and the block under way. The engine state is at the last engine
/// block boundary; `frame` frames of the next block had been given since.
#[derive(serde::Serialize, serde::Deserialize)]
struct StreamPart {
    /// The most frames one call to the core took.
    max_frames: usize,
    /// The profile it was created with (what `reset()` returns to).
    profile: String,
    /// Frames of the block under way.
    frame: u64,
    /// Their input, per input channel (f64 bit patterns).
    input: Vec<HexF64>,
    /// The output still to come from the last block played, per output
    /// channel: `latency - frame` frames.
    tail: Vec<HexF64>,
}

/// A scene streamed block by block, as a plugin or an audio callback plays
/// it: `process(block)` takes any number of frames and returns as many,
/// `latency` frames behind (the engine runs in fixed blocks behind the
/// calls, so how the calls are sliced changes nothing: under strict the
/// output is the offline render, bit for bit, delayed by `latency`).
///
/// The output is (output_channels, frames), float32 or float64 as
/// `process` says. Params, notes and
/// profile switches take effect at the first frame of the next `process`
/// call. The GIL is released while audio is processed; one processor is
/// used by one thread at a time (a second waits).
#[pyclass(module = "morphrt", frozen)]
pub struct Processor {
    inner: Mutex<Stream>,
}

impl Processor {
    fn with<T>(&self, f: impl FnOnce(&mut Stream) -> PyResult<T>) -> PyResult<T> {
        let mut g = self.inner.lock().map_err(|_| {
            PyRuntimeError::new_err(
                "the processor stopped after a panic in the engine: create another",
            )
        })?;
        f(&mut g)
    }
}

impl Processor {
    /// Processes an array block of samples `S`: checked (rank, channels,
    /// every sample finite) and read in place.
    fn process_array<'py, S: Sample>(
        &self,
        py: Python<'py>,
        block: &Bound<'py, PyAny>,
        array: &Bound<'py, PyArrayDyn<S>>,
        inputs: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ro = array.readonly();
        let view = ro.as_array();
        let (channels, frames) = match *view.shape() {
            [f] => (1, f),
            [c, f] => (c, f),
            _ => {
                channels_f64(block, "block")?;
                return Err(PyValueError::new_err("block: expected (channels, frames)"));
            }
        };
        if channels != inputs {
            return Err(PyValueError::new_err(format!(
                "block: the scene reads {inputs} input channel(s), got an array of {channels} (expected shape ({inputs}, frames){})",
                if inputs == 0 { ", or a number of frames" } else if inputs == 1 { " or (frames,)" } else { "" }
            )));
        }
        let data = view.as_standard_layout();
        let flat = data.as_slice().expect("a standard layout");
        let rows: Vec<&[S]> = if frames == 0 {
            vec![&[][..]; channels]
        } else {
            flat.chunks(frames).collect()
        };
        for (c, row) in rows.iter().enumerate() {
            if let Some(i) = row.iter().position(|x| !x.to_f64().is_finite()) {
                return Err(PyValueError::new_err(format!(
                    "block: channel {c}, frame {i} is {} (not a finite number)",
                    row[i].to_f64()
                )));
            }
        }
        self.process_as(py, &rows, frames)
    }

    /// Runs `frames` frames of `input` through the stream, the GIL
    /// released, into a new array (output_channels, frames) of `S`.
    fn process_as<'py, S: Sample>(
        &self,
        py: Python<'py>,
        input: &[&[S]],
        frames: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let outputs = self.with(|s| Ok(s.core.output_channels()))?;
        let array = PyArray2::<S>::zeros(py, [outputs, frames], false);
        {
            let mut rw = array.readwrite();
            let flat = rw.as_slice_mut().expect("a new C-contiguous array");
            let mut rows: Vec<&mut [S]> = if frames == 0 {
                Vec::new()
            } else {
                flat.chunks_mut(frames).collect()
            };
            let done = py.detach(|| {
                catch(|| {
                    let mut g = self.inner.lock().map_err(|_| {
                        "the processor stopped after a panic in the engine: create another"
                            .to_string()
                    })?;
                    if frames == 0 {
                        return Ok(());
                    }
                    g.run(input, &mut rows, frames)
                })
            });
            done.map_err(PyRuntimeError::new_err)?
                .map_err(PyValueError::new_err)?;
        }
        Ok(array.into_any())
    }
}

#[pymethods]
impl Processor {
    /// Activates `scene` (a path, JSON string, dict or `Scene`) at
    /// `sample_rate` (default: the scene's) under `profile`, the engine
    /// running in blocks of `block_size` (default: the scene's, else the
    /// profile's). `resources` supplies the scene's `@resource:` files as
    /// `render` does. A scene with errors raises `SceneError`.
    #[new]
    #[pyo3(signature = (scene, sample_rate=None, block_size=None, profile="strict", *, seed=None, max_frames=4096, resources=None))]
    fn new(
        scene: &Bound<'_, PyAny>,
        sample_rate: Option<u32>,
        block_size: Option<usize>,
        profile: &str,
        seed: Option<u64>,
        max_frames: usize,
        resources: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Processor> {
        let py = scene.py();
        let profile = Profile::parse_arg(profile).map_err(PyValueError::new_err)?;
        let src = source(py, scene)?;
        let rate = crate::scene_rate(&src, sample_rate);
        let settings = Settings {
            text: src.text,
            name: src.name,
            sample_rate: rate,
            max_frames,
            block_size,
            seed,
            profile,
            resolver: crate::resolver_of(resources, rate)?,
        };
        Ok(Processor {
            inner: Mutex::new(Stream::new(py, settings, profile)?),
        })
    }

    /// Processes `block` and returns as many frames of output,
    /// (output_channels, frames). `block` is a float32 or float64 array
    /// (input_channels, frames), or (frames,) for one channel; for a
    /// scene that reads no input, the number of frames (an int) or an
    /// array of shape (0, frames). A float32 block is processed through
    /// float32 buffers and a float64 block at the engine's precision, in
    /// place (a C-contiguous block is not copied); the output has the
    /// block's dtype, or for a number of frames float64 under strict and
    /// float32 under repro and live (the profile the processor was created
    /// with), or `dtype`. Under strict a float64 stream is the offline
    /// render bit for bit, `latency` frames late.
    #[pyo3(signature = (block, *, dtype=None))]
    fn process<'py>(
        &self,
        py: Python<'py>,
        block: &Bound<'py, PyAny>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (inputs, strict) = self.with(|s| {
            Ok((
                s.core.input_channels(),
                s.settings.profile == Profile::Strict,
            ))
        })?;
        let out = if let Ok(n) = block.extract::<usize>() {
            if inputs > 0 {
                return Err(PyValueError::new_err(format!(
                    "block: the scene reads {inputs} input channel(s): pass an array of shape ({inputs}, frames), not a number of frames"
                )));
            }
            if strict {
                self.process_as::<f64>(py, &[], n)?
            } else {
                self.process_as::<f32>(py, &[], n)?
            }
        } else if let Ok(a) = block.cast::<PyArrayDyn<f64>>() {
            self.process_array(py, block, a, inputs)?
        } else if let Ok(a) = block.cast::<PyArrayDyn<f32>>() {
            self.process_array(py, block, a, inputs)?
        } else {
            // Not a float array: the reader of arrays says what was expected.
            channels_f64(block, "block")?;
            return Err(PyValueError::new_err(
                "block: expected a float32 or float64 array",
            ));
        };
        match dtype {
            Some(d) => out.call_method1("astype", (d,)),
            None => Ok(out),
        }
    }
    /// Sets param `id` (as `Scene.params()` lists it: `node.param`, a
    /// control's source, or `profile`) to `value`: a number in the param's
    /// canonical unit (Hz, s, linear amplitude, dB for a level; a choice's
    /// index; 0/1 for a toggle) or text the param parses (`"900Hz"`,
    /// `"-6dB"`, `"lowpass"`, `"on"`). It lands at the first frame of the
    /// next `process` call. `profile` switches the profile (see
    /// `switch_profile`).
    fn set_param(&self, py: Python<'_>, id: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.with(|s| {
            let params = s.controller.params();
            let index = params.index_of(id).ok_or_else(|| {
                let ids: Vec<&str> = params.iter().map(|p| p.id()).take(12).collect();
                let more = if params.len() > 12 { ", …" } else { "" };
                PyValueError::new_err(format!(
                    "set_param: the scene has no param `{id}` (its params: {}{more})",
                    ids.join(", ")
                ))
            })?;
            let p = params.get(index).expect("an index of the list");
            let v = if let Ok(text) = value.extract::<String>() {
                p.parse(&text, params.sample_rate())
                    .map_err(|e| PyValueError::new_err(format!("set_param: {e}")))?
            } else if let Ok(x) = value.extract::<f64>() {
                let (lo, hi) = p.range().bounds();
                if !(x >= lo && x <= hi) {
                    return Err(PyValueError::new_err(format!(
                        "set_param: `{id}`: {x} is out of range (valid: {} … {})",
                        p.display(lo),
                        p.display(hi)
                    )));
                }
                x
            } else {
                return Err(PyTypeError::new_err(format!(
                    "set_param: `{id}`: expected a number or text such as \"900Hz\", got {}",
                    value.get_type().name()?
                )));
            };
            if p.is_profile() {
                let profile = ParamList::profile(v).expect("a value in range");
                return switch(py, s, profile);
            }
            s.queued.push(EventKind::Param {
                param: index as u32,
                value: v,
            });
            Ok(())
        })
    }

    /// Starts MIDI note `key` (0…127) at `velocity` (0…1) in voice module
    /// `module` (its index among the scene's voice modules) at the first
    /// frame of the next `process` call.
    #[pyo3(signature = (key, velocity=1.0, *, module=0))]
    fn note_on(&self, key: u8, velocity: f32, module: u16) -> PyResult<()> {
        check_note(key, velocity)?;
        self.with(|s| {
            s.queued.push(EventKind::NoteOn {
                module,
                key,
                velocity,
            });
            Ok(())
        })
    }

    /// Ends MIDI note `key` of voice module `module` at the first frame of
    /// the next `process` call.
    #[pyo3(signature = (key, *, module=0))]
    fn note_off(&self, key: u8, module: u16) -> PyResult<()> {
        check_note(key, 0.0)?;
        self.with(|s| {
            s.queued.push(EventKind::NoteOff { module, key });
            Ok(())
        })
    }

    /// Switches the profile while the stream plays, every node's state
    /// carried: the scene is compiled under `profile` here, and the
    /// following `process` calls hand over to it at an engine block
    /// boundary, with a crossfade. `switching` is True until it plays;
    /// `profile` names the one playing.
    fn switch_profile(&self, py: Python<'_>, profile: &str) -> PyResult<()> {
        let profile = Profile::parse_arg(profile).map_err(PyValueError::new_err)?;
        self.with(|s| switch(py, s, profile))
    }

    /// Everything needed to continue the stream from here, as a morphrt
    /// snapshot file (the core's format, which `morphrt render --resume`
    /// reads): the engine's state at the last block boundary and, under
    /// `host.python`, the input since and the output still to come from
    /// the block playing. `Processor.resume(scene, bytes)` continues bit for
    /// bit. Refused while a switch is under way, and when a param or note
    /// landed in the engine block under way (process to the next multiple
    /// of `latency` first).
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(|s| s.snapshot().map_err(PyValueError::new_err))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A processor that continues from `snapshot` (bytes from
    /// `Processor.snapshot()` of the same scene): its output from its
    /// first frame is what the snapshotted processor would have played
    /// next, bit for bit, given the same input and events. Params and
    /// notes set in its first `latency` frames land at the end of them.
    /// A snapshot file `morphrt render --snapshot-out` wrote has no block
    /// under way: `latency` frames of silence come first.
    #[staticmethod]
    #[pyo3(signature = (scene, snapshot, *, resources=None))]
    fn resume(
        py: Python<'_>,
        scene: &Bound<'_, PyAny>,
        snapshot: &[u8],
        resources: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Processor> {
        let src = source(py, scene)?;
        let bad = |e: String| PyValueError::new_err(format!("snapshot: {e}"));
        let json = snapshot.trim_ascii_start().starts_with(b"{");
        let snap = SnapshotFile::from_bytes(snapshot, "<bytes>").map_err(|e| match e {
            SnapshotError::Syntax { .. } if !json => bad(
                "not the bytes of a morphrt snapshot (from `Processor.snapshot()` or a snapshot file)"
                    .to_string(),
            ),
            SnapshotError::NotASnapshot { .. } => bad(
                "not the bytes of a morphrt snapshot (from `Processor.snapshot()` or a snapshot file)"
                    .to_string(),
            ),
            e => bad(e.to_string()),
        })?;
        let part: Option<StreamPart> = match snap.host.as_ref().and_then(|h| h.get(HOST)) {
            Some(v) => Some(
                serde_json::from_value(v.clone())
                    .map_err(|e| bad(format!("`host.{HOST}`: {e}")))?,
            ),
            None => None,
        };
        let state = snap.state().map_err(|e| bad(e.to_string()))?;
        let (rate, block_size, seed, now) = (
            snap.sample_rate,
            Some(snap.block_size),
            snap.seed,
            snap.session_profile,
        );
        let b = snap.block_size as u64;
        // A snapshot file (`morphrt render --snapshot-out`) has nothing of
        // a block under way: `latency` frames of silence come first.
        let (max_frames, first, f, given) = match part {
            Some(p) => (
                p.max_frames,
                Profile::parse(&p.profile)
                    .ok_or_else(|| bad(format!("`{}` is not a profile", p.profile)))?,
                p.frame,
                Some((
                    p.input.into_iter().map(|c| c.0).collect::<Vec<_>>(),
                    p.tail.into_iter().map(|c| c.0).collect::<Vec<_>>(),
                )),
            ),
            None => (4096, now, 0, None),
        };
        let settings = Settings {
            text: src.text,
            name: src.name,
            sample_rate: rate,
            max_frames,
            block_size,
            seed,
            profile: first,
            resolver: crate::resolver_of(resources, rate)?,
        };
        let mut s = Stream::new(py, settings, now)?;
        let (input, tail) = given.unwrap_or_else(|| {
            (
                vec![Vec::new(); s.core.input_channels()],
                vec![vec![0.0; b as usize]; s.core.output_channels()],
            )
        });
        if s.block() != b || input.len() != s.core.input_channels() {
            return Err(bad(format!(
                "taken with engine blocks of {b} frames and {} input channel(s); this scene plays blocks of {} with {}",
                input.len(),
                s.block(),
                s.core.input_channels()
            )));
        }
        if tail.len() != s.core.output_channels() {
            return Err(bad(format!(
                "taken with {} output channel(s); this scene has {}",
                tail.len(),
                s.core.output_channels()
            )));
        }
        s.controller
            .restore(&state)
            .map_err(|e| control_error(py, e))?;
        // The saved input comes first: the restored engine plays the block
        // it completes, at the snapshot's clock.
        if f >= b || input.iter().any(|c| c.len() as u64 != f) {
            return Err(bad("its block under way is damaged".to_string()));
        }
        s.restore_at = b;
        let ins: Vec<&[f64]> = input.iter().map(Vec::as_slice).collect();
        let mut scratch = vec![vec![0.0f64; f as usize]; s.core.output_channels()];
        let mut outs: Vec<&mut [f64]> = scratch.iter_mut().map(Vec::as_mut_slice).collect();
        s.run(&ins, &mut outs, f as usize)
            .map_err(PyValueError::new_err)?;
        s.lead = f;
        s.tail = tail;
        Ok(Processor {
            inner: Mutex::new(s),
        })
    }

    /// Returns to the state at activation: a fresh engine under the
    /// profile it was created with, nothing queued.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.with(|s| {
            let settings = Settings {
                text: std::mem::take(&mut s.settings.text),
                name: std::mem::take(&mut s.settings.name),
                resolver: s.settings.resolver.take(),
                ..s.settings
            };
            let profile = settings.profile;
            *s = Stream::new(py, settings, profile)?;
            Ok(())
        })
    }

    /// Frames between an input (or event) and the output it makes: one
    /// engine block.
    #[getter]
    fn latency(&self) -> PyResult<usize> {
        self.with(|s| Ok(s.core.latency()))
    }

    /// Input channels `process` takes.
    #[getter]
    fn input_channels(&self) -> PyResult<usize> {
        self.with(|s| Ok(s.core.input_channels()))
    }

    /// Output channels `process` returns.
    #[getter]
    fn output_channels(&self) -> PyResult<usize> {
        self.with(|s| Ok(s.core.output_channels()))
    }

    /// The sample rate.
    #[getter]
    fn sample_rate(&self) -> PyResult<u32> {
        self.with(|s| Ok(s.core.sample_rate()))
    }

    /// The profile playing.
    #[getter]
    fn profile(&self) -> PyResult<&'static str> {
        self.with(|s| Ok(s.profile.name()))
    }

    /// Whether a profile switch is under way.
    #[getter]
    fn switching(&self) -> PyResult<bool> {
        self.with(|s| Ok(s.controller.busy()))
    }

    /// Frames processed (since activation, or since the resume).
    #[getter]
    fn frames(&self) -> PyResult<u64> {
        self.with(|s| Ok(s.internal - s.lead))
    }

    /// Events the engine did not take (a param an event cannot set, a
    /// full queue).
    #[getter]
    fn refused_events(&self) -> PyResult<u64> {
        self.with(|s| Ok(s.core.refused_events()))
    }
}

fn switch(py: Python<'_>, s: &mut Stream, profile: Profile) -> PyResult<()> {
    if profile == s.profile && !s.controller.busy() {
        return Ok(());
    }
    s.controller
        .set_profile(profile)
        .map_err(|e| control_error(py, e))
}

fn check_note(key: u8, velocity: f32) -> PyResult<()> {
    if key > 127 {
        return Err(PyValueError::new_err(format!(
            "key: {key} is not a MIDI note (0 … 127)"
        )));
    }
    if !(0.0..=1.0).contains(&velocity) {
        return Err(PyValueError::new_err(format!(
            "velocity: {velocity} is not within 0 … 1"
        )));
    }
    Ok(())
}
