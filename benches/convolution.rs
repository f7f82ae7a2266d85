//! Convolution speed per profile on `scenes/hall-reverb.json` (the 2 s
//! stereo hall IR): live at block 64 and repro at block 128 over 30 s, strict
//! (direct, 96,000 taps per channel) over a shorter span. Reports seconds of
//! audio per second of wall time, the strict real-time factor per mono
//! channel, and the ratios between profiles. Measures only; asserts nothing.
//!
//! `cargo bench --bench convolution [-- STRICT_SECONDS]`

use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::render::run_blocks;
use morphrt::profile::Profile;
use std::time::Instant;

/// Best wall time of `rounds` renders of `seconds` under `profile`.
fn time(
    scene: &morphrt::scene::Scene,
    profile: Profile,
    block: usize,
    seconds: u64,
    rounds: usize,
) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        let plan = compile(
            scene,
            &CompileOptions {
                profile: Some(profile),
                block_size: Some(block),
                ..CompileOptions::default()
            },
        )
        .expect("hall-reverb compiles");
        let frames = seconds * plan.sample_rate as u64;
        let mut engine = Engine::new(plan);
        let mut sink = 0.0f64;
        let t = Instant::now();
        run_blocks(&mut engine, frames, |bus| sink += bus.get(0, 0), |_| {});
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(sink);
    }
    best
}

fn main() {
    let strict_seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/hall-reverb.json");
    let scene = morphrt::scene::load_file(std::path::Path::new(path)).expect("scene loads");
    let channels = 2.0; // the hall IR is stereo: two mono convolutions
    let runs = [
        (Profile::Live, 64usize, 30u64, 3usize),
        (Profile::Repro, 128, 30, 2),
        (Profile::Strict, 64, strict_seconds, 1),
    ];
    println!("hall-reverb (2 s stereo IR, 96,000 taps per channel)");
    println!(
        "{:<7} {:>6} {:>8} {:>10} {:>14} {:>22}",
        "profile", "block", "audio s", "wall s", "audio s / s", "x real time per mono ch"
    );
    let mut speed = Vec::new();
    for (p, block, secs, rounds) in runs {
        let wall = time(&scene, p, block, secs, rounds);
        let s = secs as f64 / wall;
        speed.push(s);
        println!(
            "{:<7} {block:>6} {secs:>8} {wall:>10.3} {s:>14.2} {:>22.2}",
            p.name(),
            s * channels
        );
    }
    println!(
        "ratios: live/repro {:.1}x, live/strict {:.1}x, repro/strict {:.1}x",
        speed[0] / speed[1],
        speed[0] / speed[2],
        speed[1] / speed[2]
    );
}
