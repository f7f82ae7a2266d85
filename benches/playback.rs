//! Real-time behaviour with a paced callback (no sound card needed): plays
//! a scene for N seconds through `ClockDevice` (real-time pace, 64-frame
//! periods) and reports DSP load (mean, per-callback p99, worst) and xruns.
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench playback [-- SECONDS [SCENE]]`

use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::live::control::{run_loop, LoopConfig, StatusMode};
use morphrt::host::live::device::clock::ClockDevice;
use morphrt::host::live::player::{Meters, Player, Switches};
use morphrt::profile::Profile;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let seconds: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(60.0);
    let name = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "hall-reverb".to_string());
    let path = format!("{}/scenes/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let scene = morphrt::scene::load_file(std::path::Path::new(&path)).expect("scene loads");
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(Profile::Live),
            block_size: Some(64),
            seed: Some(1),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .expect("scene compiles");
    let rate = plan.sample_rate as f64;
    let engine = Engine::new(plan);
    let meters = Arc::new(Meters::default());
    let origin = Instant::now();
    let frames = (seconds * rate) as u64;
    let player = Player::new(
        engine,
        2,
        Some(frames),
        240,
        meters.clone(),
        Arc::new(Switches::default()),
        origin,
    );
    let mut out = ClockDevice {
        period: 64,
        sample_rate: rate,
        channels: 2,
    };
    let cfg = LoopConfig {
        status: StatusMode::Log {
            every: Duration::from_secs(10),
        },
        stall_periods: 4,
        stall_min: Duration::from_millis(200),
        max_rebuilds: 0,
        reconnect: false,
        label: format!("{name} live block 64"),
        fifo_latency: 64,
    };
    let mut log = std::io::stderr();
    let r = run_loop(&mut out, player, meters, origin, &cfg, &mut log).expect("plays");
    println!(
        "{name}, live, block 64, paced 64-frame callbacks, {seconds} s: DSP load mean {:.2}%, p99 {:.0}% (per callback, 1% steps), max {:.1}%; xruns {} ({:.2}/min: {} late starts, {} budget overruns)",
        r.load_mean * 100.0,
        r.load_p99 * 100.0,
        r.load_max * 100.0,
        r.xruns,
        r.xruns as f64 / seconds * 60.0,
        r.late,
        r.overruns
    );
}
