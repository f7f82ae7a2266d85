//! morphrt as a CLAP plugin. `morphrt plugin SCENE -o NAME.clap` copies
//! this crate's library and appends the scene with every resource it
//! reads ([`payload`]); when a host loads the file, the entry reads that
//! payload from the plugin's own path, so the file needs nothing beside
//! it. Each instance plays the scene through the core's embedding API:
//! an [`Activation`] at the host's rate and maximum frame count gives a
//! [`Controller`] (the main thread's) and a [`Processor`] (the audio
//! thread's).
//!
//! | CLAP | morphrt |
//! |---|---|
//! | params | the [`ParamList`](morphrt_core::api::ParamList): `profile`, the scene's `controls`, the nodes' params; ids are hashes of the param ids ([`bundle::clap_id`]) |
//! | audio ports | an input of the channels the scene reads (if any), the main bus out |
//! | note port | when the scene has a voice module: CLAP notes and MIDI, to voice module 0 |
//! | latency | the processor's block plus the scene's own latency, at the host's rate |
//! | tail | the latency plus each reverb's decay and each delay's echoes to −100 dB ([`Engine::tail`](morphrt_core::engine::Engine::tail)) |
//! | note ends | a note-end event when a voice stops sounding ([`Processor::take_note_ends`]) |
//! | process | CLAP events at their sample offsets become [`Event`]s |
//!
//! Every scene compiles at load; a scene that does not fails the entry's
//! `init`, with the diagnostics on standard error.

pub mod bundle;
pub mod notes;
pub mod payload;
pub mod state;
mod tail;
pub mod watch;

use bundle::Bundle;
use clack_extensions::audio_ports::{
    AudioPortFlags, AudioPortInfo, AudioPortInfoWriter, AudioPortType, PluginAudioPorts,
    PluginAudioPortsImpl,
};
use clack_extensions::latency::{PluginLatency, PluginLatencyImpl};
use clack_extensions::note_ports::{
    NoteDialect, NoteDialects, NotePortInfo, NotePortInfoWriter, PluginNotePorts,
    PluginNotePortsImpl,
};
use clack_extensions::params::{
    ParamDisplayWriter, ParamInfo, ParamInfoFlags, ParamInfoWriter, PluginAudioProcessorParams,
    PluginMainThreadParams, PluginParams,
};
use clack_plugin::entry::prelude::*;
use clack_plugin::events::spaces::CoreEventSpace;
use clack_plugin::prelude::*;
use morphrt_core::api::{Activation, Controller, Event, ParamList, Processor};
use std::cell::RefCell;
use std::ffi::CStr;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// The most channels a port may have (the processor's buffers are
/// gathered on the stack).
pub const MAX_CHANNELS: usize = 64;
/// Events one `process` call gathers before handing them to the
/// processor; a call with more is split at the frame of the first one
/// that does not fit (see `Audio::hand_over`).
pub const EVENT_CAPACITY: usize = 4096;

/// The plugin type.
pub struct Morphrt;

impl Plugin for Morphrt {
    type AudioProcessor<'a> = Audio<'a>;
    type Shared<'a> = Shared;
    type MainThread<'a> = MainThread<'a>;

    fn declare_extensions(builder: &mut PluginExtensions<Self>, shared: Option<&Shared>) {
        builder
            .register::<PluginAudioPorts>()
            .register::<PluginParams>()
            .register::<PluginLatency>()
            .register::<clack_extensions::state::PluginState>()
            .register::<clack_extensions::tail::PluginTail>();
        if shared.is_none_or(|s| s.bundle.voice_modules > 0) {
            builder.register::<PluginNotePorts>();
        }
    }
}

/// What the main thread and the audio thread share: the scene and each
/// param's current value.
pub struct Shared {
    bundle: Arc<Bundle>,
    /// Each param's value (f64 bits), by its index.
    values: Vec<AtomicU64>,
    /// The latency (the processor's engine block and the scene's own),
    /// set at activation.
    block: AtomicU32,
    /// The `profile` param moved: the main thread switches.
    switch: AtomicBool,
    /// A switch is under way: the controller needs polling.
    busy: AtomicBool,
    /// A `--watch` build's source scene file.
    watch: watch::Watch,
}

impl PluginShared<'_> for Shared {}

impl Shared {
    fn new(bundle: Arc<Bundle>) -> Shared {
        let values = bundle
            .params
            .iter()
            .map(|p| AtomicU64::new(p.default_value().to_bits()))
            .collect();
        Shared {
            values,
            block: AtomicU32::new(0),
            switch: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            watch: watch::Watch::new(bundle.payload.watch.clone()),
            bundle,
        }
    }

    fn value(&self, index: usize) -> f64 {
        f64::from_bits(self.values[index].load(Ordering::Relaxed))
    }

    fn set_value(&self, index: usize, v: f64) {
        self.values[index].store(v.to_bits(), Ordering::Relaxed);
    }
}

/// The main thread's half of an instance: the controller while active.
pub struct MainThread<'a> {
    shared: &'a Shared,
    host: HostMainThreadHandle<'a>,
    controller: RefCell<Option<Controller>>,
    pending: state::Pending,
}

impl<'a> PluginMainThread<'a, Shared> for MainThread<'a> {
    /// Moves a profile switch on: starts one when the `profile` param
    /// moved, polls the controller while one is under way.
    fn on_main_thread(&self) {
        let mut controller = self.controller.borrow_mut();
        let Some(c) = controller.as_mut() else {
            return;
        };
        c.poll();
        if let Some(e) = self.shared.watch.apply(c) {
            watch::log(&self.host.shared(), &e);
        }
        if !c.busy() && self.shared.switch.swap(false, Ordering::AcqRel) {
            let wanted = ParamList::profile(self.shared.value(ParamList::PROFILE));
            if let Some(p) = wanted.filter(|p| *p != c.profile()) {
                if c.set_profile(p).is_err() {
                    // Busy after all, or the scene does not compile under
                    // `p`: it keeps playing under the profile it has.
                    self.shared
                        .set_value(ParamList::PROFILE, profile_value(c.profile()));
                }
            }
        }
        self.shared.busy.store(c.busy(), Ordering::Release);
    }
}

/// The latency of `processor`: its engine block and the scene's own, at
/// the rate it was activated at.
fn latency(processor: &Processor) -> u32 {
    (processor.latency() + processor.engine().latency()) as u32
}

/// The `profile` param's value naming `p`.
fn profile_value(p: morphrt_core::profile::Profile) -> f64 {
    (0..3)
        .map(f64::from)
        .find(|v| ParamList::profile(*v) == Some(p))
        .unwrap_or(1.0)
}

/// The audio thread's half of an instance: the processor, with the
/// buffers one call needs, allocated at activation.
pub struct Audio<'a> {
    shared: &'a Shared,
    host: HostAudioProcessorHandle<'a>,
    processor: Processor,
    events: Vec<Event>,
    notes: notes::NoteIds,
    inputs: Vec<Vec<f32>>,
    outputs: Vec<Vec<f32>>,
}

impl<'a> PluginAudioProcessor<'a, Shared, MainThread<'a>> for Audio<'a> {
    fn activate(
        host: HostAudioProcessorHandle<'a>,
        main_thread: &MainThread<'a>,
        shared: &'a Shared,
        config: PluginAudioConfiguration,
    ) -> Result<Self, PluginError> {
        let bundle = &shared.bundle;
        if bundle.inputs > MAX_CHANNELS || bundle.outputs > MAX_CHANNELS {
            return Err(PluginError::Message("the scene has more than 64 channels"));
        }
        let rate = config.sample_rate.round();
        if !(1.0..=768_000.0).contains(&rate) {
            return Err(PluginError::Message("the sample rate is out of range"));
        }
        let max = (config.max_frames_count as usize).max(1);
        let mut activation = Activation::new(rate as u32, max).resolver(bundle.resolver.clone());
        activation.profile = ParamList::profile(shared.value(ParamList::PROFILE));
        let (mut controller, processor) = activation
            .activate_scene(&bundle.payload.scene, &bundle.payload.scene_name)
            .map_err(|e| PluginError::Error(Box::new(e)))?;
        // The host's values hold across activations: every param it
        // moved lands at the first frame (a loaded state's engine is given
        // them as it is restored).
        let restored = state::restore_pending(main_thread, &mut controller);
        let moved: Vec<Event> = if restored {
            Vec::new()
        } else {
            (state::off_defaults(shared).into_iter())
                .map(|(i, v)| Event::param(0, i as u32, v))
                .collect()
        };
        let mut processor = processor;
        processor.queue(&moved);
        *main_thread.controller.borrow_mut() = Some(controller);
        shared.watch.start(&bundle.payload.scene);
        shared.block.store(latency(&processor), Ordering::Relaxed);
        Ok(Audio {
            shared,
            host,
            events: Vec::with_capacity(EVENT_CAPACITY),
            notes: notes::NoteIds::default(),
            inputs: vec![vec![0.0; max]; processor.input_channels()],
            outputs: vec![vec![0.0; max]; processor.output_channels()],
            processor,
        })
    }

    fn process(
        &mut self,
        _process: Process,
        mut audio: clack_plugin::prelude::Audio,
        events: Events,
    ) -> Result<ProcessStatus, PluginError> {
        let frames = (audio.frames_count() as usize).min(self.processor.max_frames());
        let first = self.processor.frames();
        // The input, copied (the host may hand the same buffer out).
        if let Some(port) = audio.input_port(0) {
            if let Some(chans) = port.channels()?.into_f32() {
                for (c, buf) in self.inputs.iter_mut().enumerate() {
                    match chans.channel(c as u32) {
                        Some(x) => buf[..frames].copy_from_slice(&x[..frames]),
                        None => buf[..frames].fill(0.0),
                    }
                }
            }
        }
        // Events are gathered up to the list's capacity; a full list is
        // handed over up to the frame of the event that did not fit, and
        // the call goes on from that frame, so none is lost however many
        // come at one frame. A host's events come in time order (an
        // earlier one after a later lands at the later's frame).
        let mut start = 0usize;
        self.events.clear();
        for e in events.input {
            let at = (e.header().time() as usize)
                .min(frames.saturating_sub(1))
                .max(start);
            if self.events.len() == self.events.capacity() {
                self.hand_over(start, at);
                start = at;
            }
            if let Some(event) = self.event(e, (at - start) as u32) {
                self.events.push(event);
            }
        }
        self.run(start, frames);
        (self.notes).write_ends(&mut self.processor, first, frames, events.output);
        let shared = self.shared;
        if shared.switch.load(Ordering::Relaxed)
            || shared.busy.load(Ordering::Relaxed)
            || shared.watch.due()
        {
            // The main thread starts and moves the switch on.
            self.host.request_callback();
        }
        if let Some(mut port) = audio.output_port(0) {
            if let Some(mut chans) = port.channels()?.into_f32() {
                for (c, out) in chans.iter_mut().enumerate() {
                    match self.outputs.get(c) {
                        Some(x) => out[..frames].copy_from_slice(&x[..frames]),
                        None => out[..frames].fill(0.0),
                    }
                }
            }
        }
        Ok(ProcessStatus::Continue)
    }

    fn deactivate(self, main_thread: &MainThread<'a>) {
        main_thread.shared.watch.stop();
        main_thread.controller.borrow_mut().take();
    }
}

impl Audio<'_> {
    /// Hands the events gathered from frame `from` to the processor up
    /// to frame `at`: those before it with the call for `from..at`, those
    /// at it queued for the frame the next call starts with.
    fn hand_over(&mut self, from: usize, at: usize) {
        let split = self
            .events
            .partition_point(|e| (e.offset as usize) < at - from);
        if at > from {
            self.call(from, at, split);
        }
        self.processor.queue(&self.events[split..]);
        self.events.clear();
    }

    /// The processor's call for host frames `from..to`, with the events
    /// gathered (their offsets counted from `from`); with no frames, the
    /// events are queued for the next call's first frame.
    fn run(&mut self, from: usize, to: usize) {
        if to == from {
            self.processor.queue(&self.events);
        } else {
            self.call(from, to, self.events.len());
        }
        self.events.clear();
    }

    /// The processor's call for host frames `from..to` with the first
    /// `count` events gathered.
    fn call(&mut self, from: usize, to: usize, count: usize) {
        let n = to - from;
        let (ni, no) = (self.inputs.len(), self.outputs.len());
        let empty: &[f32] = &[];
        let mut ins = [empty; MAX_CHANNELS];
        for (slot, buf) in ins.iter_mut().zip(&self.inputs) {
            *slot = &buf[from..to];
        }
        let mut outs: [&mut [f32]; MAX_CHANNELS] = std::array::from_fn(|_| Default::default());
        for (slot, buf) in outs.iter_mut().zip(self.outputs.iter_mut()) {
            *slot = &mut buf[from..to];
        }
        // The buffers fit the activation by construction: an error here
        // leaves silence in the outputs, which is all it can do.
        let _ = self
            .processor
            .process(&ins[..ni], &mut outs[..no], &self.events[..count], n);
    }

    /// The processor's event for CLAP event `e` at `offset`.
    fn event(&mut self, e: &UnknownEvent, offset: u32) -> Option<Event> {
        match e.as_core_event()? {
            CoreEventSpace::ParamValue(p) => {
                let index = self.shared.bundle.index_of(p.param_id()?.get())?;
                self.shared.set_value(index as usize, p.value());
                if index as usize == ParamList::PROFILE {
                    self.shared.switch.store(true, Ordering::Release);
                    return None;
                }
                Some(Event::param(offset, index, p.value()))
            }
            CoreEventSpace::NoteOn(n) => {
                let key = u8::try_from(n.pckn().raw_key()).ok()?;
                let p = n.pckn();
                self.notes.on(key, p.raw_channel(), p.raw_note_id());
                Some(Event::note_on(
                    offset,
                    key.min(127),
                    n.velocity().clamp(0.0, 1.0) as f32,
                ))
            }
            CoreEventSpace::NoteOff(n) => {
                let key = u8::try_from(n.pckn().raw_key()).ok()?;
                Some(Event::note_off(offset, key.min(127)))
            }
            CoreEventSpace::NoteChoke(n) => {
                let key = u8::try_from(n.pckn().raw_key()).ok()?;
                Some(Event::note_off(offset, key.min(127)))
            }
            CoreEventSpace::Midi(m) => {
                let [status, a, b] = m.data();
                match status & 0xf0 {
                    0x90 if b > 0 => {
                        self.notes.on(a & 0x7f, i16::from(status & 0x0f), -1);
                        Some(Event::note_on(
                            offset,
                            a & 0x7f,
                            f32::from(b & 0x7f) / 127.0,
                        ))
                    }
                    0x80 | 0x90 => Some(Event::note_off(offset, a & 0x7f)),
                    0xb0 if a == 64 => Some(Event::sustain(offset, b >= 64)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

impl PluginAudioProcessorParams for Audio<'_> {
    fn flush(&mut self, input: &InputEvents, _output: &mut OutputEvents) {
        for e in input {
            if let Some(CoreEventSpace::ParamValue(p)) = e.as_core_event() {
                if let Some(i) = p
                    .param_id()
                    .and_then(|id| self.shared.bundle.index_of(id.get()))
                {
                    self.shared.set_value(i as usize, p.value());
                    if i as usize == ParamList::PROFILE {
                        self.shared.switch.store(true, Ordering::Release);
                    }
                }
            }
        }
    }
}

impl PluginMainThreadParams for MainThread<'_> {
    fn count(&self) -> u32 {
        self.shared.bundle.params.len() as u32
    }

    fn get_info(&self, index: u32, info: &mut ParamInfoWriter) {
        let bundle = &self.shared.bundle;
        let Some(p) = bundle.params.get(index as usize) else {
            return;
        };
        let (min, max) = p.range().bounds();
        let mut flags = ParamInfoFlags::IS_AUTOMATABLE;
        if p.range().steps().is_some() {
            flags |= ParamInfoFlags::IS_STEPPED;
        }
        if matches!(p.range(), morphrt_core::api::ParamRange::Choice(_)) {
            flags |= ParamInfoFlags::IS_ENUM;
        }
        info.set(&ParamInfo {
            id: ClapId::new(bundle.ids[index as usize]),
            flags,
            cookie: Default::default(),
            name: p.id().as_bytes(),
            module: p.module().unwrap_or("").as_bytes(),
            min_value: min,
            max_value: max,
            default_value: p.default_value(),
        });
    }

    fn get_value(&self, id: ClapId) -> Option<f64> {
        let i = self.shared.bundle.index_of(id.get())?;
        Some(self.shared.value(i as usize))
    }

    fn value_to_text(
        &self,
        id: ClapId,
        value: f64,
        writer: &mut ParamDisplayWriter,
    ) -> std::fmt::Result {
        let bundle = &self.shared.bundle;
        let i = bundle.index_of(id.get()).ok_or(std::fmt::Error)?;
        let p = bundle.params.get(i as usize).ok_or(std::fmt::Error)?;
        write!(writer, "{}", p.display(value))
    }

    fn text_to_value(&self, id: ClapId, text: &CStr) -> Option<f64> {
        let bundle = &self.shared.bundle;
        let p = bundle.params.get(bundle.index_of(id.get())? as usize)?;
        p.parse(text.to_str().ok()?, bundle.params.sample_rate())
            .ok()
    }

    fn flush(&self, input: &InputEvents, _output: &mut OutputEvents) {
        for e in input {
            if let Some(CoreEventSpace::ParamValue(p)) = e.as_core_event() {
                if let Some(i) = p
                    .param_id()
                    .and_then(|id| self.shared.bundle.index_of(id.get()))
                {
                    self.shared.set_value(i as usize, p.value());
                    if i as usize == ParamList::PROFILE {
                        self.shared.switch.store(true, Ordering::Release);
                    }
                }
            }
        }
    }
}

impl PluginAudioPortsImpl for MainThread<'_> {
    fn count(&self, is_input: bool) -> u32 {
        let b = &self.shared.bundle;
        u32::from(if is_input {
            b.inputs > 0
        } else {
            b.outputs > 0
        })
    }

    fn get(&self, index: u32, is_input: bool, writer: &mut AudioPortInfoWriter) {
        let b = &self.shared.bundle;
        let channels = if is_input { b.inputs } else { b.outputs };
        if index != 0 || channels == 0 {
            return;
        }
        writer.set(&AudioPortInfo {
            id: ClapId::new(0),
            name: if is_input { b"input" } else { b"main" },
            channel_count: channels as u32,
            flags: AudioPortFlags::IS_MAIN,
            port_type: match channels {
                1 => Some(AudioPortType::MONO),
                2 => Some(AudioPortType::STEREO),
                _ => None,
            },
            in_place_pair: None,
        });
    }
}

impl PluginNotePortsImpl for MainThread<'_> {
    fn count(&self, is_input: bool) -> u32 {
        u32::from(is_input && self.shared.bundle.voice_modules > 0)
    }

    fn get(&self, index: u32, is_input: bool, writer: &mut NotePortInfoWriter) {
        if index == 0 && is_input && self.shared.bundle.voice_modules > 0 {
            writer.set(&NotePortInfo {
                id: ClapId::new(0),
                name: b"notes",
                preferred_dialect: Some(NoteDialect::Clap),
                supported_dialects: NoteDialects::CLAP | NoteDialects::MIDI,
            });
        }
    }
}

impl PluginLatencyImpl for MainThread<'_> {
    fn get(&self) -> u32 {
        self.shared.block.load(Ordering::Relaxed)
    }
}

/// The plugin file's entry: the scene read from the file's own payload.
pub struct Entry {
    factory: PluginFactoryWrapper<Factory>,
}

/// The factory of the one plugin a file holds.
pub struct Factory {
    bundle: Arc<Bundle>,
    descriptor: PluginDescriptor,
}

impl Factory {
    /// The factory of the scene in `bundle`.
    pub fn new(bundle: Bundle) -> Factory {
        let d = &bundle.describe;
        let features: Vec<std::ffi::CString> = d
            .features
            .iter()
            .filter_map(|f| std::ffi::CString::new(f.as_str()).ok())
            .collect();
        let descriptor = PluginDescriptor::new(&d.id, &d.name)
            .with_vendor(&d.vendor)
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_description("A morphrt scene")
            .with_features(features.iter().map(|f| f.as_c_str()));
        Factory {
            bundle: Arc::new(bundle),
            descriptor,
        }
    }
}

impl PluginFactoryImpl for Factory {
    fn plugin_count(&self) -> u32 {
        1
    }

    fn plugin_descriptor(&self, index: u32) -> Option<&PluginDescriptor> {
        (index == 0).then_some(&self.descriptor)
    }

    fn create_plugin<'a>(
        &'a self,
        host_info: HostInfo<'a>,
        plugin_id: &CStr,
    ) -> Option<PluginInstance<'a>> {
        if Some(plugin_id) != self.descriptor.id() {
            return None;
        }
        let bundle = self.bundle.clone();
        Some(PluginInstance::new::<Morphrt>(
            host_info,
            &self.descriptor,
            move |_host| Ok(Shared::new(bundle)),
            |host, shared| {
                Ok(MainThread {
                    shared,
                    host,
                    controller: RefCell::new(None),
                    pending: Default::default(),
                })
            },
        ))
    }
}

impl Entry {
    /// The entry of the plugin file at `path`: its payload loaded and
    /// compiled. The error says what is wrong with the file or the scene.
    pub fn load(path: &std::path::Path) -> Result<Entry, String> {
        let (payload, hash) = payload::Payload::read(path)?;
        let bundle = Bundle::new(payload, hash)?;
        Ok(Entry {
            factory: PluginFactoryWrapper::new(Factory::new(bundle)),
        })
    }
}

impl clack_plugin::entry::Entry for Entry {
    fn new(bundle_path: Option<&CStr>) -> Result<Self, EntryLoadError> {
        let path = bundle_path.ok_or(EntryLoadError)?;
        let path = std::path::PathBuf::from(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path.to_bytes()),
        );
        Entry::load(&path).map_err(|e| {
            eprintln!("morphrt: {}: {e}", path.display());
            EntryLoadError
        })
    }

    fn declare_factories<'a>(&'a self, builder: &mut EntryFactories<'a>) {
        builder.register_factory(&self.factory);
    }
}

clack_export_entry!(Entry);
