//! Render speed per profile: seconds of audio rendered per second of wall
//! time, for shipped scenes, with the three profiles interleaved in one run
//! so their ratios are comparable on a noisy machine. Measures only; asserts
//! nothing.
//!
//! `cargo bench --bench render [-- SECONDS]`

use morphrt::engine::run_blocks;
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use std::time::Instant;

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    let root = env!("CARGO_MANIFEST_DIR");
    let scenes = [
        "drone",
        "pluck-delay",
        "noise-wash",
        "chord-pad",
        "ping-pong",
    ];
    let rounds = 5;
    println!("{seconds} s of audio per render, best of {rounds} interleaved rounds");
    println!(
        "{:<14} {:<7} {:>6} {:>14} {:>12}",
        "scene", "profile", "block", "audio s / s", "vs strict"
    );
    for name in scenes {
        let path = format!("{root}/scenes/{name}.json");
        let scene =
            morphrt::scene::load_file(std::path::Path::new(&path)).expect("shipped scene loads");
        let mut best = [f64::INFINITY; 3];
        let mut block = [0usize; 3];
        for _ in 0..rounds {
            for (k, p) in Profile::ALL.iter().enumerate() {
                let plan = compile(
                    &scene,
                    &CompileOptions {
                        profile: Some(*p),
                        ..morphrt::host::files::resources::compile_options()
                    },
                )
                .expect("shipped scene compiles");
                let frames = seconds * plan.sample_rate as u64;
                let mut engine = Engine::new(plan);
                block[k] = engine.block_size();
                let mut sink = 0.0f64;
                let t = Instant::now();
                run_blocks(&mut engine, frames, |bus| sink += bus.get(0, 0), |_| {});
                best[k] = best[k].min(t.elapsed().as_secs_f64());
                std::hint::black_box(sink);
            }
        }
        for (k, p) in Profile::ALL.iter().enumerate() {
            let speed = seconds as f64 / best[k];
            let vs = best[0] / best[k];
            println!(
                "{name:<14} {:<7} {:>6} {speed:>14.1} {vs:>11.2}x",
                p.name(),
                block[k]
            );
        }
    }
}
