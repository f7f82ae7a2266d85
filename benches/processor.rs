//! The core's `Processor` called from Rust in calls of 64 frames: the
//! effects chain of `benches/vs_pedalboard.py` (biquad highpass 80 Hz →
//! compressor −20 dB 4:1 → reverb, one input channel, stereo out), its
//! input 22 s of `scenes/pluck-delay.json`, best of 5, under live and
//! strict in f32 buffers, and under strict in f64 buffers (`process_f64`). `benches/vs_pedalboard.py` times `morphrt.Processor.process` on the
//! same scene and input: the difference per call is what the Python
//! module adds.
//!
//! Then a host that sends all its param changes at a call's first frame
//! (as many hosts send automation): a scene of 1100 `dc` nodes summed,
//! under live, in calls of 64 frames, quiet and with 256 and with 1024
//! changes of distinct params at offset 0 in every call (1024 is the
//! most one block holds), and with those 1024 changed twice (each second
//! change replaces the first): each call's mean and longest time, 4000
//! calls each.
//!
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench processor`

use morphrt::api::{Activation, Event, Loaded};
use morphrt::engine::{run_blocks, Engine};
use morphrt::graph::CompileOptions;
use morphrt::profile::Profile;
use std::time::Instant;

const CHAIN: &str = r#"{"version": "1.0", "sample_rate": 48000,
  "nodes": [
    {"id": "mic", "op": "input", "params": {"channel": 0}},
    {"id": "hp", "op": "biquad", "params": {"mode": "highpass", "cutoff": "80Hz", "q": 0.707}},
    {"id": "comp", "op": "compressor", "params": {"threshold": "-20dB", "ratio": 4, "attack": "5ms", "release": "100ms"}},
    {"id": "room", "op": "reverb", "params": {"mix": 0.3}}],
  "edges": [{"from": "mic", "to": "hp"}, {"from": "hp", "to": "comp"}, {"from": "comp", "to": "room"}],
  "outputs": {"main": ["room:out", "room:out_r"]}}"#;

const BLOCK: usize = 64;
const CALLS: usize = 1 << 14;
const RUNS: usize = 5;

/// `frames` of scenes/pluck-delay.json under live, as f32.
fn input(frames: u64) -> Vec<f32> {
    let options = CompileOptions {
        profile: Some(Profile::Live),
        ..CompileOptions::default()
    };
    let loaded = Loaded::from_path(std::path::Path::new("scenes/pluck-delay.json"), &options)
        .expect("the shipped scene loads");
    let (plan, _) = loaded.into_parts();
    let mut engine = Engine::new(plan);
    let mut out = Vec::with_capacity(frames as usize);
    run_blocks(
        &mut engine,
        frames,
        |bus| out.extend((0..bus.frames()).map(|i| bus.get(0, i) as f32)),
        |_| {},
    );
    out
}

fn main() {
    let x = input((BLOCK * CALLS) as u64);
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    for (profile, wide) in [
        (Profile::Live, false),
        (Profile::Strict, false),
        (Profile::Strict, true),
    ] {
        let mut best = f64::INFINITY;
        for _ in 0..RUNS {
            let mut a = Activation::new(48_000, BLOCK).profile(profile);
            a.block_size = Some(BLOCK);
            let (_controller, mut p) = a.activate_scene(CHAIN, "chain.json").expect("it compiles");
            let (mut l, mut r) = (vec![0.0f32; BLOCK], vec![0.0f32; BLOCK]);
            let (mut l64, mut r64) = (vec![0.0f64; BLOCK], vec![0.0f64; BLOCK]);
            let t = Instant::now();
            for k in 0..CALLS {
                let span = k * BLOCK..(k + 1) * BLOCK;
                if wide {
                    let ins = [&x64[span]];
                    p.process_f64(&ins, &mut [&mut l64[..], &mut r64[..]], &[], BLOCK)
                } else {
                    let ins = [&x[span]];
                    p.process(&ins, &mut [&mut l[..], &mut r[..]], &[], BLOCK)
                }
                .expect("a valid call");
            }
            best = best.min(t.elapsed().as_secs_f64());
            std::hint::black_box((&l, &l64));
        }
        let seconds = (BLOCK * CALLS) as f64 / 48_000.0;
        println!(
            "Processor::process{} (Rust), block 64, {:6}: {:7.0} ns a call ({:.1} x real time)",
            if wide { "_f64" } else { "    " },
            profile.name(),
            best / CALLS as f64 * 1e9,
            seconds / best
        );
    }
    changes_at_one_frame();
}

/// Every call's time with `n` param changes at its first frame (see the
/// crate doc).
fn changes_at_one_frame() {
    let nodes: Vec<String> = (0..1100)
        .map(|k| format!(r#"{{"id": "d{k}", "op": "dc", "params": {{"value": 0}}}}"#))
        .collect();
    let edges: Vec<String> = (0..1100)
        .map(|k| format!(r#"{{"from": "d{k}", "to": "out"}}"#))
        .collect();
    let text = format!(
        r#"{{"version": "1.0", "sample_rate": 48000,
  "nodes": [{}, {{"id": "out", "op": "gain", "params": {{"gain": 1}}}}],
  "edges": [{}], "outputs": {{"main": ["out"]}}}}"#,
        nodes.join(", "),
        edges.join(", ")
    );
    for (n, twice) in [(0usize, false), (256, false), (1024, false), (1024, true)] {
        let (ctl, mut p) = Activation::new(48_000, BLOCK)
            .profile(Profile::Live)
            .activate_scene(&text, "dcs.json")
            .expect("it compiles");
        let params: Vec<u32> = (0..n)
            .map(|k| {
                ctl.params()
                    .index_of(&format!("d{k}.value"))
                    .expect("a param") as u32
            })
            .collect();
        let mut out = vec![0.0f32; BLOCK];
        let (mut total, mut longest) = (0.0f64, 0.0f64);
        const TIMED: usize = 4000;
        let mut events = Vec::with_capacity(2 * n);
        for call in 0..TIMED {
            events.clear();
            let v = (call % 5) as f64 / 1e4;
            events.extend(params.iter().map(|&i| Event::param(0, i, v)));
            if twice {
                events.extend(params.iter().map(|&i| Event::param(0, i, v / 2.0)));
            }
            let t = Instant::now();
            p.process(&[], &mut [&mut out[..]], &events, BLOCK)
                .expect("a valid call");
            let took = t.elapsed().as_secs_f64() * 1e6;
            total += took;
            longest = longest.max(took);
        }
        std::hint::black_box(&out);
        println!(
            "1100 dc nodes, live, block 64, {n:4} param changes at offset 0 a call{}: mean {:6.1} µs, longest {:6.1} µs ({} refused)",
            if twice { ", each twice" } else { "" },
            total / TIMED as f64,
            longest,
            p.refused_events()
        );
    }
}
