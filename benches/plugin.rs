//! The CLAP plugin's `process` against `render`'s engine on the same
//! scene (`scenes/pluck-delay.json` under strict, mono), side by side in
//! one run: the engine's block loop as `render` runs it, the core's
//! `Processor` that the plugin wraps, and the plugin's `process` called
//! through a clack-host host (the plugin linked in, reading its scene
//! from a plugin file written here), each in calls of 64 frames, best of
//! 5, in ns a block.
//!
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench plugin`

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
    let file = dir.join("pluck.clap");
    let payload = Payload {
        name: "pluck".into(),
        scene_name: "pluck.json".into(),
        scene: text.clone(),
        resources: Vec::new(),
        watch: None,
    };
    std::fs::write(&file, payload.to_appendix()).unwrap();
    let c = CString::new(file.to_str().unwrap()).unwrap();
    let entry = PluginEntry::load_from_clack::<morphrt_clap::Entry>(&c).expect("the entry loads");
    let info = HostInfo::new("bench", "morphrt", "https://example.invalid", "1.0").unwrap();
    let id = CString::new("morphrt.pluck").unwrap();
    let mut plugin =
        PluginInstance::<Bench>::new(|_| Shared, |_| (), &entry, &id, &info).expect("an instance");
    let config = PluginAudioConfiguration {
        sample_rate: 48_000.0,
        min_frames_count: 1,
        max_frames_count: BLOCK as u32,
    };
    let mut processor_ = plugin
        .activate(|_, _| (), config)
        .unwrap()
        .start_processing()
        .unwrap();
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
}
