//! Convolution speed per profile on `scenes/hall-reverb.json` (the 2 s
//! stereo hall IR): live at block 64 and repro at block 128 over 30 s, strict
//! (direct, 96,000 taps per channel) over a shorter span from silence. Reports
//! seconds of audio per second of wall time, the strict real-time factor per
//! mono channel, and the ratios between profiles.
//!
//! Then strict in its **steady state**, on the scene's own signal: from
//! silence the direct engine's 2 s history is mostly exact zeros, which says
//! little about a real render, where notes ring down through subnormals into
//! a limit cycle of ±(smallest subnormal) between them. The render runs
//! untimed to STEADY_FROM seconds (default 4: the history holds two seconds
//! of real signal), its state is captured, and each round restores it into a
//! fresh engine and times STEADY_SECONDS (default 4) from there, printing the
//! SHA-256 of those samples so that runs of two builds can be checked for
//! the same bits. The same span from the command line, for comparing two
//! binaries:
//!
//! ```sh
//! morphrt render scenes/hall-reverb.json --profile strict -d 4s -o /dev/null \
//!     --snapshot-at 4s --snapshot-out snap4.json        # once (seconds 0–4)
//! morphrt render scenes/hall-reverb.json --profile strict --resume snap4.json \
//!     -d 4s -o /dev/null --json         # per mono channel: 2 / "rtf"
//! ```
//!
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench convolution [-- STRICT_SECONDS [STEADY_FROM STEADY_SECONDS]]`

use morphrt::engine::run_blocks;
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::offline::render_hash;
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
                ..morphrt::host::files::resources::compile_options()
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

/// Strict from `from` seconds of the scene's own signal: best wall time of
/// `rounds` renders of `seconds` after restoring the state at `from` (the
/// render up to it is not timed), and the hash of those samples.
fn time_steady(
    scene: &morphrt::scene::Scene,
    from: u64,
    seconds: u64,
    rounds: usize,
) -> (f64, String) {
    let build = || {
        let plan = compile(
            scene,
            &CompileOptions {
                profile: Some(Profile::Strict),
                block_size: Some(64),
                ..morphrt::host::files::resources::compile_options()
            },
        )
        .expect("hall-reverb compiles");
        Engine::new(plan)
    };
    let mut warm = build();
    let rate = warm.sample_rate() as u64;
    run_blocks(&mut warm, from * rate, |_| {}, |_| {});
    let state = warm.snapshot();
    let mut best = f64::INFINITY;
    let mut hash = String::new();
    for _ in 0..rounds {
        let mut engine = build();
        engine
            .restore(&state)
            .expect("the state fits its own scene");
        let t = Instant::now();
        hash = render_hash(engine, seconds * rate);
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, hash)
}

fn main() {
    let nums: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let strict_seconds = nums.first().copied().unwrap_or(3);
    let steady_from = nums.get(1).copied().unwrap_or(4);
    let steady_seconds = nums.get(2).copied().unwrap_or(4);
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
    let (wall, hash) = time_steady(&scene, steady_from, steady_seconds, 3);
    let s = steady_seconds as f64 / wall;
    println!(
        "strict steady state, seconds {steady_from}–{}: wall {wall:.3} s, {s:.2} audio s / s, \
         {:.2}x real time per mono channel",
        steady_from + steady_seconds,
        s * channels
    );
    println!("  sha256 of those samples: {hash}");
}
