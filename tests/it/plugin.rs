//! `morphrt plugin` and the CLAP plugin it writes, loaded from disk by a
//! host built with clack-host as a DAW loads it: the descriptor, the
//! ports and the params a host lists; processing at the host's rate in
//! any buffer sizes, equal bit for bit to `morphrt render` of the same
//! scene with the same changes written as scene events; `process` with
//! no allocation (through the plugin linked in, so the test's counting
//! allocator sees it).
//!
//! clap-validator's checks that apply, and the tests that make them here
//! and in `plugin_host.rs`:
//! - descriptor fields, features (a main category, no duplicates), the
//!   factory's one plugin: `the_plugin_lists_its_scene_descriptor_ports_and_params`,
//!   `an_effect_has_an_audio_input_of_the_channels_it_reads_and_no_note_port`;
//! - create-id-with-trailing-garbage: `an_id_with_trailing_garbage_makes_no_instance`;
//! - query-nonexistent-extension: the effect's missing note ports;
//! - param-conversions (value → text → value): the descriptor test;
//! - param-fuzz-basic, process with events: `an_automation_flood_lands_every_change_at_its_sample_without_allocating`
//!   and the render comparisons (notes, MIDI, automation, a profile switch);
//! - process-note-out-of-place-basic: `the_plugin_plays_what_render_writes_bit_for_bit_at_any_buffer_size_and_rate`;
//! - process without events, activate/deactivate cycles at other rates:
//!   `the_plugin_carries_its_resources_and_plays_them_with_the_folder_gone`,
//!   `reactivated_at_another_rate_the_plugin_starts_the_scene_again_with_the_host_s_values`;
//! - thread checks: the host calls main-thread functions (params, ports,
//!   latency, activate) on the test's thread and `process` apart from
//!   them; clack's types keep each half on its thread.
//!
//! Not made here: state checks (the state extension's), audio-in
//! out-of-place processing of random input, note events for keys never
//! started.

use crate::support::{counting, morphrt, stderr, temp_dir};
use clack_extensions::audio_ports::{AudioPortInfoBuffer, PluginAudioPorts};
use clack_extensions::latency::PluginLatency;
use clack_extensions::note_ports::{NotePortInfoBuffer, PluginNotePorts};
use clack_extensions::params::{ParamInfoBuffer, ParamInfoFlags, PluginParams};
use clack_host::events::event_types::{MidiEvent, NoteOffEvent, NoteOnEvent, ParamValueEvent};
use clack_host::prelude::*;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A strict instrument: a voice module, a tone whose frequency and level
/// a host automates, a filter an OSC control moves.
pub(super) const SCENE: &str = r#"{
  "version": "1.0",
  "profile": "strict",
  "sample_rate": 48000,
  "seed": 3,
  "modules": [{
    "id": "pad", "voices": 3,
    "note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "vel.gain" },
    "nodes": [
      { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.2 } },
      { "id": "env", "op": "adsr", "params": { "attack": "2ms", "decay": "20ms", "sustain": 0.5, "release": "15ms" } },
      { "id": "vca", "op": "multiply" },
      { "id": "vel", "op": "gain", "params": { "gain": 1 } }
    ]
  }],
  "nodes": [
    { "id": "tone", "op": "sine", "params": { "freq": "330Hz", "amp": 0.25 } },
    { "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "3kHz", "q": 0.7 } },
    { "id": "sum", "op": "mix", "params": { "gains": [1, 1] } }
  ],
  "edges": [
    { "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "vel" },
    { "from": "pad", "to": "lp" }, { "from": "lp", "to": "sum:in0" }, { "from": "tone", "to": "sum:in1" }
  ],
  "controls": [
    { "osc": "/cut", "node": "lp", "param": "cutoff", "min": "200Hz", "max": "8kHz", "curve": "exp" }
  ],
  "outputs": { "main": ["sum", "tone"] }
}"#;

/// The plugin library of this build: the test binary depends on the
/// plugin crate, so cargo builds its library with the test, in `deps/`
/// (a build of the workspace also places it next to `morphrt`).
pub(crate) fn library() -> &'static Path {
    static FOUND: OnceLock<PathBuf> = OnceLock::new();
    FOUND.get_or_init(|| {
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_morphrt"));
        let dir = bin.parent().unwrap();
        let lib = [dir.join("deps"), dir.to_path_buf()]
            .into_iter()
            .map(|d| d.join("libmorphrt_clap.so"))
            .find(|p| p.is_file());
        lib.expect("the plugin library is built with the tests: cargo test --test it")
    })
}

/// `morphrt plugin` of scene `text` as `dir/NAME.clap`.
pub(super) fn write_plugin(dir: &Path, text: &str, name: &str) -> PathBuf {
    let scene = dir.join(format!("{name}.json"));
    std::fs::write(&scene, text).unwrap();
    let out = dir.join(format!("{name}.clap"));
    let lib = library().to_str().unwrap().to_string();
    let o = morphrt(&[
        "plugin",
        scene.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--library",
        &lib,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    // The plugin file is all the host needs.
    std::fs::remove_file(&scene).unwrap();
    out
}

pub(super) struct Shared;
impl SharedHandler<'_> for Shared {
    fn request_restart(&self) {}
    fn request_process(&self) {}
    fn request_callback(&self) {}
}

pub(super) struct TestHost;
impl HostHandlers for TestHost {
    type Shared<'a> = Shared;
    type MainThread<'a> = ();
    type AudioProcessor<'a> = ();
}

fn host_info() -> HostInfo {
    HostInfo::new("morphrt tests", "morphrt", "https://example.invalid", "1.0").unwrap()
}

/// The plugin file at `path` loaded as a DAW loads it, and its one id.
pub(super) fn load(path: &Path) -> (PluginEntry, CString) {
    // SAFETY: the file is the plugin `morphrt plugin` just wrote.
    let entry = unsafe { PluginEntry::load(path) }.expect("the plugin loads");
    let id = {
        let factory = entry.get_plugin_factory().expect("a plugin factory");
        let d = factory.plugin_descriptors().next().expect("one descriptor");
        CString::from(d.id().unwrap())
    };
    (entry, id)
}

pub(super) fn instance(entry: &PluginEntry, id: &CString) -> PluginInstance<TestHost> {
    PluginInstance::<TestHost>::new(|_| Shared, |_| (), entry, id, &host_info())
        .expect("an instance")
}

/// FNV-1a 64 of `s` folded to 32 bits: the CLAP id of param `s`,
/// computed here from the published algorithm.
fn expected_id(s: &str) -> u32 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    (h ^ (h >> 32)) as u32
}

#[test]
fn the_plugin_lists_its_scene_descriptor_ports_and_params() {
    let dir = temp_dir("plugin-describe");
    let path = write_plugin(&dir, SCENE, "Pad Synth");
    let (entry, id) = load(&path);
    let factory = entry.get_plugin_factory().unwrap();
    let d = factory.plugin_descriptors().next().unwrap();
    assert_eq!(d.id().unwrap().to_str().unwrap(), "morphrt.pad-synth");
    assert_eq!(d.name().unwrap().to_str().unwrap(), "Pad Synth");
    assert_eq!(d.vendor().unwrap().to_str().unwrap(), "morphrt");
    let features: Vec<&str> = d.features().map(|f| f.to_str().unwrap()).collect();
    assert_eq!(features, ["instrument"]);

    let mut plugin = instance(&entry, &id);
    let handle = plugin.plugin_handle();
    let ports = handle.get_extension::<PluginAudioPorts>().unwrap();
    assert_eq!(ports.count(&handle, true), 0);
    assert_eq!(ports.count(&handle, false), 1);
    let mut buf = AudioPortInfoBuffer::new();
    let out = ports.get(&handle, 0, false, &mut buf).unwrap();
    assert_eq!(out.channel_count, 2);
    let notes = handle.get_extension::<PluginNotePorts>().unwrap();
    assert_eq!(notes.count(&handle, true), 1);
    let mut nbuf = NotePortInfoBuffer::new();
    assert!(notes.get(&handle, 0, true, &mut nbuf).is_some());

    let params = handle.get_extension::<PluginParams>().unwrap();
    let n = params.count(&handle);
    let mut ids = Vec::new();
    let mut names = Vec::new();
    for i in 0..n {
        let mut b = ParamInfoBuffer::new();
        let info = params.get_info(&handle, i, &mut b).unwrap();
        let name = String::from_utf8(info.name.to_vec()).unwrap();
        assert_eq!(info.id.get(), expected_id(&name), "{name}");
        assert!(info.min_value <= info.default_value && info.default_value <= info.max_value);
        ids.push(info.id);
        names.push((name, info.flags, info.default_value));
    }
    let listed: Vec<&str> = names.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(&listed[..2], &["profile", "/cut"]);
    for want in ["tone.freq", "tone.amp", "lp.cutoff", "osc.amp", "vel.gain"] {
        assert!(listed.contains(&want), "{want} missing from {listed:?}");
    }
    // `profile` is a stepped choice: strict (the scene's), repro, live.
    let (_, flags, default) = &names[0];
    assert!(flags.contains(ParamInfoFlags::IS_STEPPED | ParamInfoFlags::IS_ENUM));
    assert_eq!(*default, 0.0);
    let mut text = [0u8; 64];
    let shown = params
        .value_to_text(&handle, ids[0], 2.0, &mut text)
        .unwrap();
    assert_eq!(shown, b"live");
    // Value → text → value for a frequency and an amplitude, and text a
    // user types.
    let freq = ids[listed.iter().position(|n| *n == "tone.freq").unwrap()];
    let amp = ids[listed.iter().position(|n| *n == "tone.amp").unwrap()];
    for (id, v, want) in [
        (freq, 330.0, "330 Hz"),
        (freq, 1234.6, "1.235 kHz"),
        (amp, 0.5, "-6.021 dB"),
    ] {
        let mut text = [0u8; 64];
        let shown = params
            .value_to_text(&handle, id, v, &mut text)
            .unwrap()
            .to_vec();
        assert_eq!(std::str::from_utf8(&shown).unwrap(), want);
        let c = CString::new(shown).unwrap();
        let back = params.text_to_value(&handle, id, &c).unwrap();
        assert!(((back - v) / v).abs() < 1e-3, "{want} → {back}");
    }
    assert_eq!(params.text_to_value(&handle, freq, c"1.2kHz"), Some(1200.0));
    assert_eq!(params.text_to_value(&handle, freq, c"3 ms"), None);
    assert_eq!(params.get_value(&handle, freq), Some(330.0));
    assert_eq!(
        params.get_value(&handle, ClapId::new(expected_id("nope"))),
        None
    );
}

#[test]
fn an_effect_has_an_audio_input_of_the_channels_it_reads_and_no_note_port() {
    let dir = temp_dir("plugin-effect");
    let scene = r#"{ "version": "1.0",
      "plugin": { "id": "com.example.crush", "name": "Crush", "vendor": "Example", "features": ["audio-effect", "distortion"] },
      "nodes": [
        { "id": "l", "op": "input", "params": { "channel": 0 } },
        { "id": "r", "op": "input", "params": { "channel": 1 } },
        { "id": "g", "op": "gain", "params": { "gain": "-6dB" } } ],
      "edges": [{ "from": "l", "to": "g" }],
      "outputs": { "main": ["g", "r"] } }"#;
    let scene_text = scene;
    let path = write_plugin(&dir, scene, "crush");
    let (entry, id) = load(&path);
    assert_eq!(id.to_str().unwrap(), "com.example.crush");
    let factory = entry.get_plugin_factory().unwrap();
    let d = factory.plugin_descriptors().next().unwrap();
    assert_eq!(d.name().unwrap().to_str().unwrap(), "Crush");
    assert_eq!(d.vendor().unwrap().to_str().unwrap(), "Example");
    let features: Vec<&str> = d.features().map(|f| f.to_str().unwrap()).collect();
    assert_eq!(features, ["audio-effect", "distortion"]);
    let mut plugin = instance(&entry, &id);
    let handle = plugin.plugin_handle();
    let ports = handle.get_extension::<PluginAudioPorts>().unwrap();
    assert_eq!(ports.count(&handle, true), 1);
    let mut buf = AudioPortInfoBuffer::new();
    assert_eq!(
        ports.get(&handle, 0, true, &mut buf).unwrap().channel_count,
        2
    );
    assert!(handle.get_extension::<PluginNotePorts>().is_none());
    // Every other command reads the `plugin` object without a warning.
    let scene = dir.join("crush-check.json");
    std::fs::write(&scene, scene_text).unwrap();
    let o = morphrt(&["check", scene.to_str().unwrap()]);
    assert!(
        o.status.success() && !stderr(&o).contains("plugin"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_bad_plugin_object_or_scene_exits_2_naming_it_and_writes_nothing() {
    let dir = temp_dir("plugin-bad");
    let scene = dir.join("s.json");
    let out = dir.join("s.clap");
    let lib = library().to_str().unwrap().to_string();
    let run = |text: &str| {
        std::fs::write(&scene, text).unwrap();
        morphrt(&[
            "plugin",
            scene.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--library",
            &lib,
        ])
    };
    let bad = SCENE.replace(
        r#""seed": 3,"#,
        r#""seed": 3, "plugin": { "features": "synth" },"#,
    );
    let o = run(&bad);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("`plugin.features`"), "{}", stderr(&o));
    let o = run(&SCENE.replace("\"sine\"", "\"sinus\""));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("sinus"), "{}", stderr(&o));
    assert!(!out.exists());
    let o = morphrt(&[
        "plugin",
        "scenes/drone.json",
        "-o",
        out.to_str().unwrap(),
        "--library",
        dir.join("missing.so").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cargo build --release -p morphrt-clap"),
        "{}",
        stderr(&o)
    );
}

/// What a host does at one frame.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// Param `id` (a ParamList id string's index in SCENE's list) to a value.
    Param(&'static str, f64),
    On(u8, f64),
    Off(u8),
    /// The `profile` param to a value (0 strict, 1 repro, 2 live).
    Profile(f64),
    /// A MIDI note on (velocity 127) or off.
    Midi(u8, bool),
}

/// The host's changes, by frame: notes, and automation of the tone.
fn script() -> Vec<(u64, Change)> {
    vec![
        (5, Change::Param("tone.freq", 440.0)),
        (700, Change::On(60, 0.75)),
        (700, Change::On(64, 0.5)),
        (1301, Change::Param("tone.freq", 523.25)),
        (2000, Change::Off(60)),
        (2000, Change::Off(64)),
        (2500, Change::Param("tone.amp", 0.125)),
        (3003, Change::On(67, 1.0)),
        (4500, Change::Off(67)),
        (6001, Change::Param("tone.freq", 300.0)),
        (7777, Change::On(48, 1.0)),
        (8500, Change::Off(48)),
    ]
}

/// SCENE at `rate` with the script as scene events.
fn scene_with_events(rate: u32) -> String {
    let events: Vec<String> = script()
        .iter()
        .map(|(at, c)| match *c {
            Change::Param(id, v) => {
                let (node, param) = id.split_once('.').unwrap();
                format!(r#"{{ "time": "{at}samples", "node": "{node}", "param": "{param}", "value": {v} }}"#)
            }
            Change::On(key, vel) => format!(
                r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "velocity": {vel} }}"#
            ),
            Change::Off(key) => {
                format!(r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "off": true }}"#)
            }
            Change::Midi(key, true) => format!(
                r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "velocity": 1 }}"#
            ),
            Change::Midi(key, false) => {
                format!(r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "off": true }}"#)
            }
            Change::Profile(_) => unreachable!("a render keeps its profile"),
        })
        .collect();
    SCENE
        .replace(
            "\"sample_rate\": 48000",
            &format!("\"sample_rate\": {rate}"),
        )
        .replace(
            "\"controls\"",
            &format!("\"events\": [{}],\n  \"controls\"", events.join(",\n")),
        )
}

/// `morphrt render` of `text`, `frames` long, as f32 bits, channel-interleaved.
pub(super) fn render_bits(dir: &Path, text: &str, frames: usize) -> Vec<u32> {
    let scene = dir.join("render.json");
    std::fs::write(&scene, text).unwrap();
    let wav = dir.join("render.wav");
    let d = format!("{frames}samples");
    let o = crate::support::render(&scene, &wav, &["-d", &d, "--format", "f32"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut r = hound::WavReader::open(&wav).unwrap();
    r.samples::<f32>().map(|s| s.unwrap().to_bits()).collect()
}

/// A deterministic generator of buffer sizes.
pub(super) struct Sizes(pub(super) u64);
impl Sizes {
    pub(super) fn next(&mut self, max: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        1 + ((self.0 >> 33) as usize % max)
    }
}

/// Plays the script through the plugin at `rate` in buffers of 1…`max`
/// frames (and a 0-frame buffer now and then); returns the output,
/// channel-interleaved f32 bits, and the plugin's latency.
fn play(
    path: &Path,
    rate: u32,
    max: usize,
    frames: usize,
    seed: u64,
    script: &[(u64, Change)],
) -> (Vec<u32>, usize, f64) {
    let (entry, id) = load(path);
    let mut plugin = instance(&entry, &id);
    let handle = plugin.plugin_handle();
    let params = handle.get_extension::<PluginParams>().unwrap();
    let mut ids = std::collections::HashMap::new();
    for i in 0..params.count(&handle) {
        let mut b = ParamInfoBuffer::new();
        let info = params.get_info(&handle, i, &mut b).unwrap();
        ids.insert(String::from_utf8(info.name.to_vec()).unwrap(), info.id);
    }
    let config = PluginAudioConfiguration {
        sample_rate: rate as f64,
        min_frames_count: 1,
        max_frames_count: max as u32,
    };
    let processor = plugin.activate(|_, _| (), config).unwrap();
    let latency = {
        let handle = plugin.plugin_handle();
        let ext = handle.get_extension::<PluginLatency>().unwrap();
        ext.get(&handle) as usize
    };
    let mut processor = processor.start_processing().unwrap();
    let mut sizes = Sizes(seed);
    let (mut left, mut right) = (vec![0f32; max], vec![0f32; max]);
    let mut out = Vec::with_capacity(frames * 2);
    let mut outs = AudioPorts::with_capacity(2, 1);
    let mut done = 0usize;
    let mut k = 0;
    while done < frames {
        let n = if k % 7 == 3 {
            0
        } else {
            sizes.next(max).min(frames - done)
        };
        k += 1;
        let mut events = EventBuffer::new();
        for (at, c) in script {
            let at = *at as usize;
            if at < done || at >= done + n {
                continue;
            }
            let t = (at - done) as u32;
            match *c {
                Change::Param(p, v) => {
                    events.push(&ParamValueEvent::new(t, ids[p], Pckn::match_all(), v))
                }
                Change::On(key, vel) => events.push(&NoteOnEvent::new(
                    t,
                    Pckn::new(0u16, 0u16, key as u16, 0u32),
                    vel,
                )),
                Change::Midi(key, on) => {
                    let data = if on { [0x90, key, 127] } else { [0x80, key, 0] };
                    events.push(&MidiEvent::new(t, 0, data))
                }
                Change::Profile(v) => events.push(&ParamValueEvent::new(
                    t,
                    ids["profile"],
                    Pckn::match_all(),
                    v,
                )),
                Change::Off(key) => events.push(&NoteOffEvent::new(
                    t,
                    Pckn::new(0u16, 0u16, key as u16, 0u32),
                    0.0,
                )),
            }
        }
        let input_audio = InputAudioBuffers::empty();
        let mut output_audio = outs.with_output_buffers([AudioPortBuffer {
            latency: 0,
            channels: AudioPortBufferType::f32_output_only(
                [&mut left[..n], &mut right[..n]].into_iter(),
            ),
        }]);
        let input_events = InputEvents::from_buffer(&events);
        let mut output_events = EventBuffer::new();
        let mut output_events = OutputEvents::from_buffer(&mut output_events);
        processor
            .process(
                &input_audio,
                &mut output_audio,
                &input_events,
                &mut output_events,
                None,
                None,
            )
            .unwrap();
        for i in 0..n {
            out.push(left[i].to_bits());
            out.push(right[i].to_bits());
        }
        done += n;
        // A host calls the main thread back when the plugin asks (this
        // one after every buffer).
        plugin.call_on_main_thread_callback();
    }
    plugin.deactivate(processor.stop_processing());
    let handle = plugin.plugin_handle();
    let profile = params.get_value(&handle, ids["profile"]).unwrap();
    (out, latency, profile)
}

#[test]
fn the_plugin_plays_what_render_writes_bit_for_bit_at_any_buffer_size_and_rate() {
    let dir = temp_dir("plugin-render");
    let path = write_plugin(&dir, SCENE, "pad");
    let frames = 9000;
    for (rate, max, seed) in [(48_000, 2048, 1), (44_100, 2048, 2), (48_000, 37, 3)] {
        let want = render_bits(&dir, &scene_with_events(rate), frames);
        let (got, latency, _) = play(&path, rate, max, frames + 1024, seed, &script());
        // The processor runs one engine block behind the host.
        assert!(latency > 0 && latency <= 1024, "{latency}");
        assert!(got[..latency * 2].iter().all(|b| f32::from_bits(*b) == 0.0));
        let got = &got[latency * 2..latency * 2 + frames * 2];
        if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
            panic!(
                "at {rate} Hz in buffers up to {max}: frame {} channel {} differs: {} vs render's {}",
                i / 2,
                i % 2,
                f32::from_bits(got[i]),
                f32::from_bits(want[i])
            );
        }
        assert!(
            want.iter().any(|b| f32::from_bits(*b).abs() > 0.01),
            "it plays"
        );
    }
}

#[test]
fn midi_notes_play_as_the_scene_s_note_events() {
    let dir = temp_dir("plugin-midi");
    let path = write_plugin(&dir, SCENE, "pad");
    let script = vec![
        (100, Change::Midi(57, true)),
        (1500, Change::Midi(61, true)),
        (2100, Change::Midi(57, false)),
        (3000, Change::Midi(61, false)),
    ];
    let frames = 4000;
    let text = scene_with_events(48_000);
    // The scene's own events replaced by the MIDI script's.
    let events: Vec<String> = script
        .iter()
        .map(|(at, c)| match *c {
            Change::Midi(key, true) => format!(
                r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "velocity": 1 }}"#
            ),
            Change::Midi(key, false) => format!(
                r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "off": true }}"#
            ),
            _ => unreachable!(),
        })
        .collect();
    let start = text.find("\"events\": [").unwrap();
    let end = start + text[start..].find("],\n  \"controls\"").unwrap() + 1;
    let text = format!(
        "{}\"events\": [{}]{}",
        &text[..start],
        events.join(", "),
        &text[end..]
    );
    let want = render_bits(&dir, &text, frames);
    let (got, latency, _) = play(&path, 48_000, 512, frames + 1024, 6, &script);
    assert!(got[latency * 2..latency * 2 + frames * 2] == want[..]);
    let without = render_bits(&dir, SCENE, frames);
    assert!(without != want, "the notes are heard");
}

#[test]
fn the_profile_param_switches_profile_while_a_note_sounds() {
    let dir = temp_dir("plugin-switch");
    let path = write_plugin(&dir, SCENE, "pad");
    let frames = 9000;
    let strict = render_bits(&dir, &scene_with_events(48_000), frames);
    let mut script = script();
    // To repro while note 67 sounds.
    script.push((4000, Change::Profile(1.0)));
    script.sort_by_key(|(at, _)| *at);
    let (got, latency, profile) = play(&path, 48_000, 300, frames + 1024, 5, &script);
    assert_eq!(profile, 1.0, "the param reads repro");
    let got = &got[latency * 2..latency * 2 + frames * 2];
    // Strict until the switch, bit for bit.
    assert!(got[..4000 * 2] == strict[..4000 * 2]);
    // Then repro: other bits; once the note sounding at the switch has
    // ended, within repro's bound of strict (the tone's phase, the filter
    // and the host's param values carried across).
    assert!(got[4000 * 2..] != strict[4000 * 2..], "the switch happened");
    let chans = |bits: &[u32]| -> Vec<Vec<f64>> {
        (0..2)
            .map(|c| {
                bits.iter()
                    .skip(c)
                    .step_by(2)
                    .map(|b| f32::from_bits(*b) as f64)
                    .collect()
            })
            .collect()
    };
    let err = crate::support::rel_rms(&chans(&strict), &chans(got), 6000, frames as u64, &[]);
    assert!(err < 1e-3, "repro after the switch is {err} from strict");
}

#[test]
fn the_plugin_carries_its_resources_and_plays_them_with_the_folder_gone() {
    let dir = temp_dir("plugin-resources");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    std::fs::copy(
        crate::support::root().join("resources/kick.wav"),
        dir.join("resources/kick.wav"),
    )
    .unwrap();
    let text = std::fs::read_to_string(crate::support::root().join("scenes/sampler-groove.json"))
        .unwrap()
        .replace(r#""profile": "repro""#, r#""profile": "strict""#);
    let frames = 30_000;
    let want = render_bits(&dir, &text, frames);
    let path = write_plugin(&dir, &text, "groove");
    std::fs::remove_dir_all(dir.join("resources")).unwrap();
    let (got, latency, _) = play(&path, 48_000, 1024, frames + 1024, 4, &[]);
    assert!(
        got[latency * 2..latency * 2 + frames * 2] == want[..],
        "the plugin plays render's bits"
    );
    assert!(
        want.iter().any(|b| f32::from_bits(*b).abs() > 0.1),
        "the kick plays"
    );
}

#[test]
fn the_plugin_process_never_allocates_or_frees() {
    let dir = temp_dir("plugin-alloc");
    let path = write_plugin(&dir, SCENE, "pad");
    // The plugin linked into this binary (its allocations are this
    // binary's), with the entry reading the file written above.
    let c = CString::new(path.to_str().unwrap()).unwrap();
    let entry = PluginEntry::load_from_clack::<morphrt_clap::Entry>(&c).expect("the entry loads");
    let id = CString::new("morphrt.pad").unwrap();
    let mut plugin = instance(&entry, &id);
    let handle = plugin.plugin_handle();
    let params = handle.get_extension::<PluginParams>().unwrap();
    let mut b = ParamInfoBuffer::new();
    let freq = (0..params.count(&handle))
        .find_map(|i| {
            let info = params.get_info(&handle, i, &mut b)?;
            (info.name == b"tone.freq").then_some(info.id)
        })
        .unwrap();
    let config = PluginAudioConfiguration {
        sample_rate: 48_000.0,
        min_frames_count: 1,
        max_frames_count: 512,
    };
    let processor = plugin.activate(|_, _| (), config).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let (mut left, mut right) = (vec![0f32; 512], vec![0f32; 512]);
    let mut outs = AudioPorts::with_capacity(2, 1);
    let mut events = EventBuffer::with_capacity(4096);
    let mut out_events = EventBuffer::with_capacity(64);
    let mut sizes = Sizes(9);
    let before = counting::counts();
    for k in 0..400 {
        let n = if k % 50 == 0 { 0 } else { sizes.next(512) };
        events.clear();
        for i in 0..n.min(3) as u32 {
            events.push(&ParamValueEvent::new(
                i,
                freq,
                Pckn::match_all(),
                300.0 + k as f64,
            ));
        }
        if n > 10 && k % 5 == 0 {
            events.push(&NoteOnEvent::new(
                5,
                Pckn::new(0u16, 0u16, (40 + k % 40) as u16, 0u32),
                0.5,
            ));
        }
        if n > 10 && k % 5 == 2 {
            events.push(&NoteOffEvent::new(
                7,
                Pckn::new(0u16, 0u16, (40 + (k - 2) % 40) as u16, 0u32),
                0.0,
            ));
        }
        let input_audio = InputAudioBuffers::empty();
        let mut output_audio = outs.with_output_buffers([AudioPortBuffer {
            latency: 0,
            channels: AudioPortBufferType::f32_output_only(
                [&mut left[..n], &mut right[..n]].into_iter(),
            ),
        }]);
        let input_events = InputEvents::from_buffer(&events);
        out_events.clear();
        let mut output_events = OutputEvents::from_buffer(&mut out_events);
        counting::realtime(|| {
            processor
                .process(
                    &input_audio,
                    &mut output_audio,
                    &input_events,
                    &mut output_events,
                    None,
                    None,
                )
                .unwrap()
        });
    }
    assert_eq!(
        counting::counts(),
        before,
        "allocations and frees in process"
    );
    plugin.deactivate(processor.stop_processing());
}

/// A host with the log extension: what the plugin logs, kept.
struct Logged(std::sync::Mutex<Vec<String>>);
impl SharedHandler<'_> for Logged {
    fn request_restart(&self) {}
    fn request_process(&self) {}
    fn request_callback(&self) {}
}
impl clack_extensions::log::HostLogImpl for Logged {
    fn log(&self, _: clack_extensions::log::LogSeverity, message: &str) {
        self.0.lock().unwrap().push(message.to_string());
    }
}

impl clack_extensions::params::HostParamsImplShared for Logged {
    fn request_flush(&self) {}
}

/// The host's main thread: how often the plugin asked it to read every
/// param's value again.
#[derive(Default)]
struct Rescans(std::cell::Cell<usize>);
impl MainThreadHandler<'_> for Rescans {}
impl clack_extensions::params::HostParamsImplMainThread for Rescans {
    fn rescan(&self, flags: clack_extensions::params::ParamRescanFlags) {
        if flags.contains(clack_extensions::params::ParamRescanFlags::VALUES) {
            self.0.set(self.0.get() + 1);
        }
    }
    fn clear(&self, _: ClapId, _: clack_extensions::params::ParamClearFlags) {}
}

struct LogHost;
impl HostHandlers for LogHost {
    type Shared<'a> = Logged;
    type MainThread<'a> = Rescans;
    type AudioProcessor<'a> = ();
    fn declare_extensions(builder: &mut HostExtensions<Self>, _: &Logged) {
        builder
            .register::<clack_extensions::log::HostLog>()
            .register::<clack_extensions::params::HostParams>();
    }
}

/// An instance of the plugin file at `path` linked into this binary (its
/// allocations are this binary's, which the counting allocator sees), in
/// a host that keeps what the plugin logs.
fn linked_instance(path: &Path) -> (PluginEntry, PluginInstance<LogHost>) {
    let c = CString::new(path.to_str().unwrap()).unwrap();
    let entry = PluginEntry::load_from_clack::<morphrt_clap::Entry>(&c).expect("the entry loads");
    let id = {
        let factory = entry.get_plugin_factory().expect("a plugin factory");
        let d = factory.plugin_descriptors().next().expect("one descriptor");
        CString::from(d.id().unwrap())
    };
    let plugin = PluginInstance::<LogHost>::new(
        |_| Logged(Default::default()),
        |_| Rescans::default(),
        &entry,
        &id,
        &host_info(),
    )
    .expect("an instance");
    (entry, plugin)
}

fn logged(plugin: &PluginInstance<LogHost>) -> Vec<String> {
    plugin.access_shared_handler(|s| s.0.lock().unwrap().clone())
}

/// Processes `frames` frames (in buffers of 1…`max`, note `on` at frame
/// `on.0` if any) on `processor` as real-time code, calling `tick` with
/// the frames done after each buffer; returns the output, interleaved f32
/// bits, and the allocations and frees counted in `process`.
fn run_audio(
    processor: &mut StartedPluginAudioProcessor<LogHost>,
    max: usize,
    seed: u64,
    note: Option<(usize, u8)>,
    mut more: impl FnMut(usize) -> bool,
) -> (Vec<u32>, (usize, usize)) {
    let (mut left, mut right) = (vec![0f32; max], vec![0f32; max]);
    let mut outs = AudioPorts::with_capacity(2, 1);
    let mut events = EventBuffer::with_capacity(16);
    let mut out_events = EventBuffer::with_capacity(64);
    let mut sizes = Sizes(seed);
    let mut out = Vec::new();
    let mut done = 0usize;
    let before = counting::counts();
    while more(done) {
        let n = sizes.next(max);
        out.reserve(2 * n);
        events.clear();
        if let Some((at, key)) = note.filter(|(at, _)| (done..done + n).contains(at)) {
            events.push(&NoteOnEvent::new(
                (at - done) as u32,
                Pckn::new(0u16, 0u16, key as u16, 0u32),
                0.8,
            ));
        }
        let input_audio = InputAudioBuffers::empty();
        let mut output_audio = outs.with_output_buffers([AudioPortBuffer {
            latency: 0,
            channels: AudioPortBufferType::f32_output_only(
                [&mut left[..n], &mut right[..n]].into_iter(),
            ),
        }]);
        let input_events = InputEvents::from_buffer(&events);
        out_events.clear();
        let mut output_events = OutputEvents::from_buffer(&mut out_events);
        counting::realtime(|| {
            processor
                .process(
                    &input_audio,
                    &mut output_audio,
                    &input_events,
                    &mut output_events,
                    None,
                    None,
                )
                .unwrap()
        });
        for i in 0..n {
            out.push(left[i].to_bits());
            out.push(right[i].to_bits());
        }
        done += n;
    }
    let after = counting::counts();
    (out, (after.0 - before.0, after.1 - before.1))
}

fn strict_config(max: usize) -> PluginAudioConfiguration {
    PluginAudioConfiguration {
        sample_rate: 48_000.0,
        min_frames_count: 1,
        max_frames_count: max as u32,
    }
}

/// The state saved while a note is held, on the main thread while the
/// audio thread plays, is a morphrt snapshot of the scene; loaded into a
/// new instance, it plays on bit for bit what the saved instance played
/// after the block boundary it was taken at (under strict, one latency
/// after the new instance starts). The save allocates nothing in
/// `process`.
#[test]
fn a_state_saved_mid_note_resumes_bit_for_bit_in_a_new_instance() {
    use clack_extensions::state::PluginState;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = temp_dir("plugin-state");
    let path = write_plugin(&dir, SCENE, "pad");
    let (_entry, mut a) = linked_instance(&path);
    let processor = a.activate(|_, _| (), strict_config(300)).unwrap();
    let latency = {
        let h = a.plugin_handle();
        h.get_extension::<PluginLatency>().unwrap().get(&h) as usize
    };
    let mut processor = processor.start_processing().unwrap();
    let (progress, saved) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let audio = {
        let (progress, saved) = (progress.clone(), saved.clone());
        std::thread::spawn(move || {
            let mut saved_at = None;
            let (out, counts) = run_audio(&mut processor, 300, 11, Some((100, 60)), |done| {
                progress.store(done, Ordering::Release);
                // Until the save is done, then far enough past it.
                if saved_at.is_none() && saved.load(Ordering::Acquire) {
                    saved_at = Some(done);
                }
                saved_at.is_none_or(|at| done < at + 30_000)
            });
            (processor, out, counts)
        })
    };
    while progress.load(Ordering::Acquire) < 5_000 {
        std::thread::yield_now();
    }
    let mut state = Vec::new();
    {
        let h = a.plugin_handle();
        let ext = h
            .get_extension::<PluginState>()
            .expect("the state extension");
        ext.save(&h, &mut state).expect("the state saves");
    }
    saved.store(true, Ordering::Release);
    let (processor, whole, counts) = audio.join().unwrap();
    a.deactivate(processor.stop_processing());
    assert_eq!(
        counts,
        (0, 0),
        "allocations and frees in process across a save"
    );

    // A snapshot of this scene, mid-note.
    let snap = morphrt::host::record::snapshot::SnapshotFile::from_bytes(&state, "state").unwrap();
    let sha = morphrt::host::files::digest::sha256_hex(SCENE.as_bytes());
    assert_eq!(snap.scene.sha256, sha);
    let clock = snap.clock as usize;
    assert!(clock >= 5_000 && clock.is_multiple_of(latency), "{clock}");
    use morphrt::host::record::snapshot::PhaseRecord;
    assert!(
        snap.voices[0]
            .voices
            .iter()
            .any(|v| v.phase == PhaseRecord::Held),
        "a note is held in the state"
    );

    // Loaded into a new instance before it activates.
    let (_entry_b, mut b) = linked_instance(&path);
    {
        let h = b.plugin_handle();
        let ext = h.get_extension::<PluginState>().unwrap();
        ext.load(&h, &mut &state[..]).expect("the state loads");
    }
    let processor = b.activate(|_, _| (), strict_config(512)).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let frames = 20_000;
    let (got, _) = run_audio(&mut processor, 512, 12, None, |done| {
        done < latency + frames
    });
    b.deactivate(processor.stop_processing());
    assert!(logged(&b).is_empty(), "{:?}", logged(&b));
    let want = &whole[(clock + latency) * 2..(clock + latency + frames) * 2];
    let got = &got[latency * 2..(latency + frames) * 2];
    if let Some(i) = got.iter().zip(want).position(|(x, y)| x != y) {
        panic!(
            "frame {} after the state's clock differs: {} vs {}",
            i / 2,
            f32::from_bits(got[i]),
            f32::from_bits(want[i])
        );
    }
    assert!(
        want.iter().any(|b| f32::from_bits(*b).abs() > 0.01),
        "it plays"
    );
    // Not a coincidence: a fresh instance plays something else there.
    let (_entry_c, mut c) = linked_instance(&path);
    let processor = c.activate(|_, _| (), strict_config(512)).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let (fresh, _) = run_audio(&mut processor, 512, 12, None, |done| {
        done < latency + frames
    });
    c.deactivate(processor.stop_processing());
    assert!(&fresh[latency * 2..(latency + frames) * 2] != got);
}

/// A state of another scene, one cut short and bytes that are no state
/// are refused: the load fails, the host's log says why, and the
/// instance plays on as a fresh one.
#[test]
fn a_state_of_another_scene_or_a_damaged_one_is_refused_in_the_host_s_log() {
    use clack_extensions::state::PluginState;
    let dir = temp_dir("plugin-bad-state");
    let path = write_plugin(&dir, SCENE, "pad");
    let other = write_plugin(&dir, &SCENE.replace("330Hz", "440Hz"), "other");
    let save = |p: &Path| {
        let (_e, mut i) = linked_instance(p);
        let h = i.plugin_handle();
        let mut state = Vec::new();
        h.get_extension::<PluginState>()
            .unwrap()
            .save(&h, &mut state)
            .expect("an inactive instance saves its fresh state");
        state
    };
    let ours = save(&path);
    let theirs = save(&other);
    // Ours loads.
    let (_e, mut p) = linked_instance(&path);
    let h = p.plugin_handle();
    let ext = h.get_extension::<PluginState>().unwrap();
    ext.load(&h, &mut &ours[..]).expect("its own state loads");
    for (bytes, says) in [
        (&theirs[..], "saved by another scene"),
        (&ours[..ours.len() / 2], "truncated"),
        (&b"\x00\x01 not json"[..], "is corrupted: not valid JSON"),
        (&b"{\"presets\": [1, 2]}"[..], "not a morphrt snapshot"),
        (
            &b"{\"format\": \"morphrt-snapshot\", \"version\": 9}"[..],
            "format version 9",
        ),
    ] {
        let h = p.plugin_handle();
        assert!(ext.load(&h, &mut &bytes[..]).is_err(), "{says}");
        let log = logged(&p);
        assert!(
            log.last()
                .is_some_and(|m| m.contains("state load refused") && m.contains(says)),
            "{says}: {log:?}"
        );
    }
    // It plays on: what a fresh instance plays.
    let processor = p.activate(|_, _| (), strict_config(256)).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let (got, _) = run_audio(&mut processor, 256, 3, Some((10, 64)), |d| d < 6_000);
    p.deactivate(processor.stop_processing());
    let (_e2, mut q) = linked_instance(&path);
    let processor = q.activate(|_, _| (), strict_config(256)).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let (want, _) = run_audio(&mut processor, 256, 3, Some((10, 64)), |d| d < 6_000);
    q.deactivate(processor.stop_processing());
    assert!(got == want);
}

#[test]
fn an_id_with_trailing_garbage_makes_no_instance() {
    let dir = temp_dir("plugin-id-garbage");
    let path = write_plugin(&dir, SCENE, "pad");
    let (entry, id) = load(&path);
    let mut garbage = id.to_bytes().to_vec();
    garbage.extend_from_slice(b"-garbage");
    let garbage = CString::new(garbage).unwrap();
    assert!(
        PluginInstance::<TestHost>::new(|_| Shared, |_| (), &entry, &garbage, &host_info())
            .is_err()
    );
    instance(&entry, &id);
}

/// Sets param `name` of inactive `plugin` to `v` through the params
/// extension's main-thread flush, as a host does before activating.
fn set_inactive(plugin: &mut PluginInstance<LogHost>, name: &str, v: f64) {
    let params = plugin
        .plugin_handle()
        .get_extension::<PluginParams>()
        .unwrap();
    let mut events = EventBuffer::with_capacity(1);
    events.push(&ParamValueEvent::new(
        0,
        ClapId::new(expected_id(name)),
        Pckn::match_all(),
        v,
    ));
    let mut handle = plugin.inactive_plugin_handle().expect("inactive");
    params.flush(
        &mut handle,
        &InputEvents::from_buffer(&events),
        &mut OutputEvents::void(),
    );
}

/// What the host reads as param `name` of `plugin`.
fn value_of(plugin: &mut PluginInstance<LogHost>, name: &str) -> Option<f64> {
    let handle = plugin.plugin_handle();
    let params = handle.get_extension::<PluginParams>().unwrap();
    params.get_value(&handle, ClapId::new(expected_id(name)))
}

fn save_state(plugin: &mut PluginInstance<LogHost>) -> Vec<u8> {
    use clack_extensions::state::PluginState;
    let mut state = Vec::new();
    let h = plugin.plugin_handle();
    let ext = h.get_extension::<PluginState>().unwrap();
    ext.save(&h, &mut state).expect("the state saves");
    state
}

fn load_state(plugin: &mut PluginInstance<LogHost>, state: &[u8]) {
    use clack_extensions::state::PluginState;
    let h = plugin.plugin_handle();
    let ext = h.get_extension::<PluginState>().unwrap();
    ext.load(&h, &mut &state[..]).expect("the state loads");
}

/// 6000 frames of `plugin` from its activation, a note held from frame
/// 100.
fn first_frames(plugin: &mut PluginInstance<LogHost>) -> Vec<u32> {
    let processor = plugin.activate(|_, _| (), strict_config(512)).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let (out, _) = run_audio(&mut processor, 512, 5, Some((100, 60)), |done| done < 6000);
    plugin.deactivate(processor.stop_processing());
    out
}

/// A state keeps the host's param values: loaded before activation into
/// another instance (fresh, or one whose host had moved the same param
/// elsewhere), each param reads the state's value and the instance plays
/// what an instance given those values plays, bit for bit. A state saved
/// while inactive holds a fresh engine, so the values are applied at
/// activation; one saved while playing has them in its engine.
#[test]
fn a_state_keeps_the_host_s_param_values_and_a_load_plays_them() {
    let dir = temp_dir("plugin-state-values");
    let path = write_plugin(&dir, SCENE, "pad");
    let (_ea, mut a) = linked_instance(&path);
    assert_eq!(value_of(&mut a, "tone.freq"), Some(330.0));
    set_inactive(&mut a, "tone.freq", 440.0);
    set_inactive(&mut a, "tone.amp", 0.125);
    let state = save_state(&mut a);
    let want = first_frames(&mut a);

    let (_eb, mut b) = linked_instance(&path);
    load_state(&mut b, &state);
    assert_eq!(value_of(&mut b, "tone.freq"), Some(440.0));
    assert_eq!(value_of(&mut b, "tone.amp"), Some(0.125));
    assert!(
        first_frames(&mut b) == want,
        "a fresh instance given the state"
    );

    let (_ec, mut c) = linked_instance(&path);
    set_inactive(&mut c, "tone.freq", 550.0);
    load_state(&mut c, &state);
    assert_eq!(value_of(&mut c, "tone.freq"), Some(440.0));
    assert!(
        first_frames(&mut c) == want,
        "the state's values, not the host's own"
    );

    // Not a coincidence: the scene's own values play something else.
    let (_ed, mut d) = linked_instance(&path);
    assert!(first_frames(&mut d) != want);

    // A state without the host's values (a command-line snapshot of the
    // scene) sets every param to its default.
    let mut snap =
        morphrt::host::record::snapshot::SnapshotFile::from_bytes(&state, "state").unwrap();
    assert!(snap
        .host
        .as_ref()
        .is_some_and(|h| h["clap"]["in_engine"] == false));
    snap.host = None;
    let (_ee, mut e) = linked_instance(&path);
    set_inactive(&mut e, "tone.freq", 550.0);
    load_state(&mut e, &snap.to_bytes());
    assert_eq!(value_of(&mut e, "tone.freq"), Some(330.0));
    assert!(first_frames(&mut e) == first_frames(&mut d));
}

/// 0.1 s of `plugin` from its activation, no note played: the tone alone.
fn tone_alone(plugin: &mut PluginInstance<LogHost>) -> Vec<u32> {
    let processor = plugin.activate(|_, _| (), strict_config(512)).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let (out, _) = run_audio(&mut processor, 512, 5, None, |done| done < 4800);
    plugin.deactivate(processor.stop_processing());
    out
}

/// Zero crossings (rising and falling) of the left channel of `out`
/// (interleaved stereo f32 bits): the tone alone at f Hz makes 2·f a
/// second.
fn crossings(out: &[u32]) -> usize {
    let left: Vec<f32> = out.iter().step_by(2).map(|b| f32::from_bits(*b)).collect();
    left.windows(2)
        .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
        .count()
}

/// A state loaded while the instance plays: the host is told to read the
/// params again and reads the state's values, and a state saved while
/// inactive (a fresh engine, which lacks them) plays them from the first
/// frame of the engine swapped in, before the host's main-thread callback
/// has run at all.
#[test]
fn a_state_loaded_while_playing_has_the_host_rescan_and_plays_its_values() {
    let dir = temp_dir("plugin-state-playing");
    let path = write_plugin(&dir, SCENE, "pad");
    let (_ea, mut a) = linked_instance(&path);
    set_inactive(&mut a, "tone.freq", 440.0);
    let state = save_state(&mut a);

    let (_eb, mut b) = linked_instance(&path);
    let processor = b.activate(|_, _| (), strict_config(256)).unwrap();
    let mut processor = processor.start_processing().unwrap();
    let play = |processor: &mut StartedPluginAudioProcessor<LogHost>, frames: usize| {
        let (out, counts) = run_audio(processor, 256, 9, None, |done| done < frames);
        assert_eq!(counts, (0, 0), "allocations and frees in process");
        out
    };
    let before = play(&mut processor, 4800);
    b.call_on_main_thread_callback();
    load_state(&mut b, &state);
    assert_eq!(
        b.access_handler(|h| h.0.get()),
        1,
        "one rescan of the values"
    );
    assert_eq!(value_of(&mut b, "tone.freq"), Some(440.0));
    let after = play(&mut processor, 4800);
    for _ in 0..10 {
        play(&mut processor, 480);
        b.call_on_main_thread_callback();
    }
    let last = play(&mut processor, 48_000);
    b.deactivate(processor.stop_processing());
    assert!(logged(&b).is_empty(), "{:?}", logged(&b));
    // The tone (no note sounds): 330 Hz before, 440 Hz from the swap on.
    let (c0, c1, c2) = (crossings(&before), crossings(&after), crossings(&last));
    assert!(
        (64..=68).contains(&c0),
        "{c0} zero crossings in 0.1 s before"
    );
    assert!(
        (86..=90).contains(&c1),
        "{c1} zero crossings in 0.1 s after"
    );
    assert!((875..=885).contains(&c2), "{c2} zero crossings in 1 s");
}

/// A state whose engine plays the host's values (as one saved while the
/// instance played does), loaded before activation: a param the host
/// moves after the load and before activating is what plays; an inactive
/// load also has the host rescan the values.
#[test]
fn a_host_change_after_a_load_before_activation_is_what_plays() {
    let dir = temp_dir("plugin-state-moved");
    let path = write_plugin(&dir, SCENE, "pad");
    let (_ea, mut a) = linked_instance(&path);
    let fresh = save_state(&mut a);
    // The fresh engine plays the scene's values: so does the state say.
    let mut snap =
        morphrt::host::record::snapshot::SnapshotFile::from_bytes(&fresh, "state").unwrap();
    let host = snap.host.as_mut().unwrap();
    assert_eq!(host["clap"]["params"]["tone.freq"], 330.0);
    host["clap"]["in_engine"] = serde_json::Value::Bool(true);
    let playing = snap.to_bytes();

    let (_eb, mut b) = linked_instance(&path);
    load_state(&mut b, &playing);
    assert_eq!(
        b.access_handler(|h| h.0.get()),
        1,
        "one rescan of the values"
    );
    set_inactive(&mut b, "tone.freq", 550.0);
    let c = crossings(&tone_alone(&mut b));
    assert!(
        (108..=112).contains(&c),
        "{c} zero crossings in 0.1 s, not 550 Hz"
    );
    // Left alone, it plays the state's 330 Hz.
    let (_ec, mut c2) = linked_instance(&path);
    load_state(&mut c2, &playing);
    let c = crossings(&tone_alone(&mut c2));
    assert!(
        (64..=68).contains(&c),
        "{c} zero crossings in 0.1 s, not 330 Hz"
    );
}
