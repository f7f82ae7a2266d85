//! The CLAP plugin's `process` against `render`'s engine on the same
//! scene (`scenes/pluck-delay.json` under strict, mono), side by side in
//! one run: the engine's block loop as `render` runs it, the core's
//! `Processor` that the plugin wraps, and the plugin's `process` called
//! through a clack-host host (the plugin linked in, reading its scene
//! from a plugin file written here), each in calls of 64 frames, best of
//! 5, in ns a block.
//!
//! Then the plugin's longest call under a flood, as a host automating
//! every param and playing chords sends it: `scenes/poly-pad.json` (six
//! voices) under live, one call of 64 frames after another, each call's
//! time taken apart; quiet (a chord held, no events), then with 256 param
//! changes in every call (every param but the profile in turn, four at
//! each frame) and a note on or off at every eighth frame, so that voices
//! are stolen all the time, then the same with a switch of the profile
//! param in every 100th call (strict, repro, live in turn): the median,
//! 99th percentile and longest call of each, and the deadline (64 frames
//! at 48 kHz, 1333 µs).
//!
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench plugin`

use clack_extensions::params::{ParamInfoBuffer, PluginParams};
use clack_host::events::event_types::{NoteOffEvent, NoteOnEvent, ParamValueEvent};
use clack_host::events::Pckn;
use clack_host::prelude::*;
use morphrt::api::{Activation, Loaded};
use morphrt::engine::Engine;
use morphrt::graph::CompileOptions;
use morphrt::profile::Profile;
use morphrt_clap::payload::Payload;
use std::ffi::CString;
use std::time::Instant;

const BLOCK: usize = 64;
const BLOCKS: usize = 1 << 13;
const RUNS: usize = 5;
const SCENE: &str = "scenes/pluck-delay.json";

struct Shared;
impl SharedHandler<'_> for Shared {
    fn request_restart(&self) {}
    fn request_process(&self) {}
    fn request_callback(&self) {}
}
struct Bench;
impl HostHandlers for Bench {
    type Shared<'a> = Shared;
    type MainThread<'a> = ();
    type AudioProcessor<'a> = ();
}

/// Best of `RUNS` of `f` (one run of `BLOCKS` blocks), in ns a block.
fn best(mut f: impl FnMut()) -> f64 {
    (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e9 / BLOCKS as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let text = std::fs::read_to_string(SCENE)
        .expect("the shipped scene")
        .replace(r#""profile": "repro""#, r#""profile": "strict""#);

    // render's engine: block after block.
    let options = CompileOptions {
        profile: Some(Profile::Strict),
        ..CompileOptions::default()
    };
    let (plan, _) = Loaded::from_text(&text, "pluck.json", None, &options)
        .expect("it compiles")
        .into_parts();
    let mut engine = Engine::new(plan);
    let render = best(|| {
        for _ in 0..BLOCKS {
            engine.process_block(BLOCK);
            std::hint::black_box(engine.bus());
        }
    });

    // The core's Processor.
    let (_controller, mut p) = Activation::new(48_000, BLOCK)
        .activate_scene(&text, "pluck.json")
        .expect("it compiles");
    let mut out = vec![0.0f32; BLOCK];
    let processor = best(|| {
        for _ in 0..BLOCKS {
            p.process(&[], &mut [&mut out[..]], &[], BLOCK)
                .expect("a valid call");
        }
    });

    // The plugin, through a host.
    let dir = std::env::temp_dir().join(format!("morphrt-bench-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let entry = entry_of(&dir, "pluck", text.clone());
    let mut plugin = instance(&entry);
    let mut processor_ = started(&mut plugin);
    let mut ports = AudioPorts::with_capacity(1, 1);
    let events = EventBuffer::new();
    let mut out_events = EventBuffer::with_capacity(64);
    let plugin_ns = best(|| {
        for _ in 0..BLOCKS {
            let mut output = ports.with_output_buffers([AudioPortBuffer {
                latency: 0,
                channels: AudioPortBufferType::f32_output_only([&mut out[..]].into_iter()),
            }]);
            out_events.clear();
            processor_
                .process(
                    &InputAudioBuffers::empty(),
                    &mut output,
                    &InputEvents::from_buffer(&events),
                    &mut OutputEvents::from_buffer(&mut out_events),
                    None,
                    None,
                )
                .unwrap();
        }
    });
    plugin.deactivate(processor_.stop_processing());

    let poly = std::fs::read_to_string(FLOOD_SCENE)
        .expect("the shipped scene")
        .replace(r#""profile": "repro""#, r#""profile": "live""#);
    let flood = flood(&entry_of(&dir, "poly-pad", poly));
    let _ = std::fs::remove_dir_all(&dir);

    println!("{SCENE}, strict, block {BLOCK}, best of {RUNS} runs of {BLOCKS} blocks:");
    println!("  render's engine      {render:8.0} ns a block");
    println!(
        "  Processor::process   {processor:8.0} ns a block ({:.2} x render)",
        processor / render
    );
    println!(
        "  the plugin's process {plugin_ns:8.0} ns a block ({:.2} x render)",
        plugin_ns / render
    );
    let deadline = BLOCK as f64 / 48_000.0 * 1e6;
    println!(
        "{FLOOD_SCENE}, live, {FLOOD_CALLS} calls of {BLOCK} frames each (deadline {deadline:.0} µs):"
    );
    for (what, mut times) in flood {
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "  {what:<44} median {:7.1} µs  p99 {:7.1} µs  longest {:7.1} µs",
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
}

const FLOOD_SCENE: &str = "scenes/poly-pad.json";
const FLOOD_CALLS: usize = 20_000;

/// The plugin file of scene `text`, written into `dir` as `NAME.clap`,
/// and its entry (the plugin linked in).
fn entry_of(dir: &std::path::Path, name: &str, text: String) -> PluginEntry {
    let file = dir.join(format!("{name}.clap"));
    let payload = Payload {
        name: name.into(),
        scene_name: format!("{name}.json"),
        scene: text,
        resources: Vec::new(),
        watch: None,
    };
    std::fs::write(&file, payload.to_appendix()).unwrap();
    let c = CString::new(file.to_str().unwrap()).unwrap();
    PluginEntry::load_from_clack::<morphrt_clap::Entry>(&c).expect("the entry loads")
}

/// An instance of the entry's plugin.
fn instance(entry: &PluginEntry) -> PluginInstance<Bench> {
    let info = HostInfo::new("bench", "morphrt", "https://example.invalid", "1.0").unwrap();
    let id = {
        let factory = entry.get_plugin_factory().unwrap();
        let d = factory.plugin_descriptors().next().unwrap();
        CString::from(d.id().unwrap())
    };
    PluginInstance::<Bench>::new(|_| Shared, |_| (), entry, &id, &info).expect("an instance")
}

/// The instance activated at 48 kHz for calls of up to `BLOCK` frames,
/// processing.
fn started(plugin: &mut PluginInstance<Bench>) -> StartedPluginAudioProcessor<Bench> {
    let config = PluginAudioConfiguration {
        sample_rate: 48_000.0,
        min_frames_count: 1,
        max_frames_count: BLOCK as u32,
    };
    plugin
        .activate(|_, _| (), config)
        .unwrap()
        .start_processing()
        .unwrap()
}

/// Each call's time in µs, quiet and under the flood (see the crate doc).
fn flood(entry: &PluginEntry) -> Vec<(&'static str, Vec<f64>)> {
    let mut plugin = instance(entry);
    // Every param but the profile, with its range; and the profile's id.
    let (params, profile) = {
        let handle = plugin.plugin_handle();
        let ext = handle.get_extension::<PluginParams>().expect("params");
        let all: Vec<_> = (0..ext.count(&handle))
            .map(|i| {
                let mut b = ParamInfoBuffer::new();
                let p = ext.get_info(&handle, i, &mut b).unwrap();
                (p.name.to_vec(), p.id, p.min_value, p.max_value)
            })
            .collect();
        let profile = all
            .iter()
            .find(|p| p.0 == b"profile")
            .expect("a profile param")
            .1;
        let rest: Vec<_> = all
            .into_iter()
            .filter(|p| p.0 != b"profile")
            .map(|(_, id, lo, hi)| (id, lo, hi))
            .collect();
        (rest, profile)
    };
    let mut processor = started(&mut plugin);
    let (mut left, mut right) = (vec![0f32; BLOCK], vec![0f32; BLOCK]);
    let mut ports = AudioPorts::with_capacity(2, 1);
    let mut events = EventBuffer::with_capacity(1024);
    let mut out_events = EventBuffer::with_capacity(1024);
    let mut runs = Vec::new();
    let (mut k, mut m) = (0u64, 0usize);
    for (what, flooded, switches) in [
        ("quiet (a chord held)", false, false),
        ("256 param changes and 8 notes a call", true, false),
        ("the same, and a profile switch every 100th", true, true),
    ] {
        let mut times = Vec::with_capacity(FLOOD_CALLS);
        for call in 0..FLOOD_CALLS {
            events.clear();
            if call == 0 {
                for (n, key) in [48u16, 55, 60, 64].into_iter().enumerate() {
                    events.push(&NoteOnEvent::new(
                        0,
                        Pckn::new(0u16, 0u16, key, n as u32),
                        0.6,
                    ));
                }
            }
            if flooded {
                for t in 0..BLOCK as u32 {
                    if t.is_multiple_of(8) {
                        // A note on or off at every eighth frame: keys move
                        // up and wrap, more of them sounding than voices.
                        k += 1;
                        let key = 36 + (k % 48) as u16;
                        let pckn = Pckn::new(0u16, 0u16, key, k as u32);
                        if k.is_multiple_of(3) {
                            events.push(&NoteOffEvent::new(t, pckn, 0.0));
                        } else {
                            events.push(&NoteOnEvent::new(t, pckn, 0.5));
                        }
                    }
                    for j in 0..4u64 {
                        m += 1;
                        let (id, lo, hi) = params[m % params.len()];
                        let x = ((call as u64 * 31 + u64::from(t) * 7 + j) % 101) as f64 / 100.0;
                        events.push(&ParamValueEvent::new(
                            t,
                            id,
                            Pckn::match_all(),
                            lo + (hi - lo) * x,
                        ));
                    }
                }
            }
            if switches && call % 100 == 50 {
                // strict, repro, live in turn (the choice's indices).
                let to = [0.0, 1.0, 2.0][(call / 100) % 3];
                events.push(&ParamValueEvent::new(32, profile, Pckn::match_all(), to));
            }
            let mut output = ports.with_output_buffers([AudioPortBuffer {
                latency: 0,
                channels: AudioPortBufferType::f32_output_only(
                    [&mut left[..], &mut right[..]].into_iter(),
                ),
            }]);
            out_events.clear();
            let input_events = InputEvents::from_buffer(&events);
            let t = Instant::now();
            processor
                .process(
                    &InputAudioBuffers::empty(),
                    &mut output,
                    &input_events,
                    &mut OutputEvents::from_buffer(&mut out_events),
                    None,
                    None,
                )
                .unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        runs.push((what, times));
    }
    plugin.deactivate(processor.stop_processing());
    runs
}
