//! The audio thread's callbacks while the control side hands over, against
//! the block budget: each scene plays in real time on a paced callback of
//! 64 frames (no sound card needed) until its long state is full, then
//! takes a param edit (a cut), a structural edit (a crossfade) and a
//! profile switch there and back, one after another. Reports, per scene
//! and profile, the longest callback during the handovers (from each
//! capture to the end of its crossfade) and outside them, against the
//! budget of one 64-frame period; then the same in the CPU time the audio
//! thread spent in each callback, which leaves out the time it did not run
//! (on a shared or virtual machine a callback can be stalled for
//! milliseconds by the host, whatever it computes).
//!
//! Scenes: `scenes/hall-reverb.json` (a 2 s stereo convolution),
//! `scenes/bench/long-delays.json` (three delays of 30 s: 4.3 million
//! samples of state), and a 10 s stereo impulse response (made here with
//! `synth_ir`). Measures only; asserts nothing.
//!
//! `cargo bench --bench handover [-- SCENE-FILTER]`; with
//! `MORPHRT_BENCH_DETAIL=1` it also lists the six longest callbacks and
//! where each fell relative to every handover's N and S, and with
//! `MORPHRT_BENCH_HANDOVERS=0` it plays as long without handing over;
//! with it, `MORPHRT_BENCH_UNPACED=1` calls back to back instead of in real
//! time (the engine then runs far ahead of the session's clock, so it is
//! for the steady state only: handovers are refused).

#[path = "common/paced.rs"]
mod paced;

use morphrt::profile::Profile;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BLOCK: usize = 64;
const RATE: f64 = 48_000.0;

fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

/// A scene to hand over: its file, the text of a param edit and of a
/// structural edit, and how long to play before the first handover.
struct Case {
    name: &'static str,
    path: PathBuf,
    edit: String,
    structural: String,
    warm: Duration,
}

fn cases(root: &Path, dir: &Path) -> Vec<Case> {
    let add_node = |t: &str| {
        t.replacen(
            "\"nodes\": [",
            "\"nodes\": [\n    { \"id\": \"extra\", \"op\": \"dc\", \"params\": { \"value\": 0.0 } },",
            1,
        )
    };
    let mut v = Vec::new();
    let hall = std::fs::read_to_string(root.join("scenes/hall-reverb.json")).unwrap();
    let p = dir.join("hall-reverb.json");
    std::fs::write(&p, &hall).unwrap();
    v.push(Case {
        name: "hall-reverb",
        edit: hall.replace("\"mix\": 0.35", "\"mix\": 0.3"),
        structural: add_node(&hall),
        path: p,
        warm: Duration::from_secs(3),
    });
    let delays = std::fs::read_to_string(root.join("scenes/bench/long-delays.json")).unwrap();
    let p = dir.join("long-delays.json");
    std::fs::write(&p, &delays).unwrap();
    v.push(Case {
        name: "long-delays",
        edit: delays.replace("\"feedback\": 0.6", "\"feedback\": 0.55"),
        structural: add_node(&delays),
        path: p,
        warm: Duration::from_secs(8),
    });
    // A 10 s stereo impulse response.
    let res = dir.join("resources");
    std::fs::create_dir_all(&res).unwrap();
    let ir = morphrt::ops::convolution::synth_ir(10.0, 8.0, 11, 2, RATE);
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: RATE as u32,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(res.join("ir10.wav"), spec).unwrap();
    for (l, r) in ir[0].iter().zip(&ir[1]) {
        w.write_sample(*l as f32).unwrap();
        w.write_sample(*r as f32).unwrap();
    }
    w.finalize().unwrap();
    let long_ir = hall
        .replace("@resource:hall.wav", "@resource:ir10.wav")
        .replace("\"duration\": \"30s\"", "\"duration\": \"60s\"");
    let p = dir.join("long-ir.json");
    std::fs::write(&p, &long_ir).unwrap();
    v.push(Case {
        name: "10 s stereo IR",
        edit: long_ir.replace("\"mix\": 0.35", "\"mix\": 0.3"),
        structural: add_node(&long_ir),
        path: p,
        warm: Duration::from_secs(11),
    });
    v
}

/// Plays `case` under `profile` and prints its line.
fn run(case: &Case, profile: Profile) {
    let text = std::fs::read_to_string(&case.path).unwrap();
    let dir = case.path.parent().unwrap();
    let resources = vec![
        dir.join("resources"),
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/resources")),
    ];
    let (mut session, cell, meters, _) =
        paced::session(&case.path, &text, profile, BLOCK, resources);
    let stop = Arc::new(AtomicBool::new(false));
    let audio = paced::audio_thread(cell.clone(), stop.clone(), meters.clone(), BLOCK, RATE);
    let mut log: Vec<u8> = Vec::new();
    let other = if profile == Profile::Live {
        Profile::Repro
    } else {
        Profile::Live
    };
    let started = Instant::now();
    while started.elapsed() < case.warm {
        std::thread::sleep(Duration::from_millis(5));
        session.tick(&mut log);
    }
    let mut step = 0;
    // `MORPHRT_BENCH_HANDOVERS=0` plays the same time without handing
    // over: the steady state to compare with.
    let steps: usize = std::env::var("MORPHRT_BENCH_HANDOVERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
        .min(4);
    let deadline = Instant::now() + Duration::from_secs(60);
    while step < steps || !session.is_idle() {
        std::thread::sleep(Duration::from_millis(5));
        session.tick(&mut log);
        if Instant::now() > deadline {
            eprintln!("{}: handovers did not complete", case.name);
            break;
        }
        if step >= steps || !session.is_idle() || session.applied.len() < step {
            continue;
        }
        match step {
            0 => std::fs::write(&case.path, &case.edit).unwrap(),
            1 => std::fs::write(&case.path, &case.structural).unwrap(),
            _ => {}
        }
        match step {
            0 | 1 => session.file_changed(false, &mut log),
            2 => session.switch_profile(other, &mut log),
            _ => session.switch_profile(profile, &mut log),
        }
        step += 1;
    }
    // A little steady state after the last fade.
    std::thread::sleep(Duration::from_millis(if steps == 0 { 2000 } else { 300 }));
    stop.store(true, Ordering::Relaxed);
    let times = audio.join().unwrap();
    std::fs::write(&case.path, &text).unwrap();

    let windows: Vec<(u64, u64)> = session
        .applied
        .iter()
        .map(|r| (r.saved_at, r.swap_at + r.fade + BLOCK as u64))
        .collect();
    let warm_frames = (case.warm.as_secs_f64() * RATE) as u64 / 2;
    let (mut during, mut outside): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let (mut during_cpu, mut outside_cpu): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for (c, ns, cpu) in times.iter().filter(|(c, _, _)| *c >= warm_frames) {
        let (us, cpu) = (*ns as f64 / 1e3, *cpu as f64 / 1e3);
        if windows.iter().any(|(a, b)| c >= a && c < b) {
            during.push(us);
            during_cpu.push(cpu);
        } else {
            outside.push(us);
            outside_cpu.push(cpu);
        }
    }
    let budget = BLOCK as f64 / RATE * 1e6;
    let over = during.iter().filter(|t| **t > budget).count();
    let over_cpu = during_cpu.iter().filter(|t| **t > budget).count();
    let longest = |v: &[f64]| percentile(&mut v.to_vec(), 1.0);
    println!(
        "{:>15} {profile:>5} block {BLOCK}: {} handovers; during them {} callbacks, median {:.1} µs, longest {:.1} µs = {:.0} % of the {budget:.0} µs budget, {over} over it; outside: median {:.1} µs, longest {:.1} µs",
        case.name,
        session.applied.len(),
        during.len(),
        percentile(&mut during.clone(), 0.5),
        longest(&during),
        longest(&during) / budget * 100.0,
        percentile(&mut outside.clone(), 0.5),
        longest(&outside),
    );
    println!(
        "{:>15} {profile:>5} in CPU time: during {:.1} µs longest = {:.0} % of the budget, {over_cpu} over it; outside {:.1} µs longest",
        "",
        longest(&during_cpu),
        longest(&during_cpu) / budget * 100.0,
        longest(&outside_cpu),
    );
    if std::env::var_os("MORPHRT_BENCH_DETAIL").is_some() {
        let mut worst: Vec<&(u64, u32, u32)> =
            times.iter().filter(|(c, _, _)| *c >= warm_frames).collect();
        worst.sort_by_key(|(_, ns, _)| std::cmp::Reverse(*ns));
        for (c, ns, cpu) in worst.iter().take(6) {
            let near: Vec<String> = session
                .applied
                .iter()
                .map(|r| {
                    format!(
                        "N{:+} S{:+}",
                        *c as i64 - r.saved_at as i64,
                        *c as i64 - r.swap_at as i64
                    )
                })
                .collect();
            println!(
                "  {:.1} µs ({:.1} µs CPU) at {c}: {}",
                *ns as f64 / 1e3,
                *cpu as f64 / 1e3,
                near.join(", ")
            );
        }
    }
    if !session.rejected.is_empty() {
        println!("  rejected edits: {}", session.rejected.len());
    }
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("morphrt-bench-handover-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for case in cases(root, &dir) {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        for profile in [Profile::Live, Profile::Repro] {
            run(&case, profile);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
