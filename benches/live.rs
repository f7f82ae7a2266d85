//! Hot edits while playing, measured: the heaviest shipped scene
//! (hall-reverb: a 2 s stereo convolution) plays in real time on a paced
//! callback (no sound card needed) while its file is saved 100 times —
//! param edits and structural edits in turn — and then switched between
//! profiles by key. Reports:
//!
//! - edit latency: file saved (its modification time) → the audio thread
//!   reached the swap sample, p50 / p99 / max;
//! - the audio thread's callbacks during a handover (capture → end of the
//!   crossfade) against all callbacks: median and longest;
//! - the control thread's time to migrate and to fast-forward.
//!
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench live [-- EDITS [live|repro]]`

#[path = "common/paced.rs"]
mod paced;

use morphrt::host::live::session::{HandoverRecord, Reason};
use morphrt::host::live::watch::FileWatcher;
use morphrt::profile::Profile;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let edits: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let profile = args
        .get(1)
        .and_then(|p| Profile::parse(p))
        .unwrap_or(Profile::Live);
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/scenes/hall-reverb.json")).unwrap();
    let dir = std::env::temp_dir().join(format!("morphrt-bench-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hall-reverb.json");
    std::fs::write(&path, &text).unwrap();
    let resources = vec![std::path::PathBuf::from(format!("{root}/resources"))];

    let (mut session, cell, meters, rate) = paced::session(&path, &text, profile, 64, resources);

    // The audio thread: real-time pace, 64-frame periods, each callback timed.
    let stop = Arc::new(AtomicBool::new(false));
    let audio = paced::audio_thread(cell.clone(), stop.clone(), meters.clone(), 64, rate);

    let watcher = FileWatcher::start(&session.watched_files(), Duration::from_millis(30))
        .expect("watch the scene");
    let mut log: Vec<u8> = Vec::new();
    let cutoffs = ["2.5kHz", "3kHz", "3.5kHz", "2kHz"];
    let mut made = 0usize;
    let mut last_edit = Instant::now();
    let mut switches = 0usize;
    let total_switches = 10usize;
    std::thread::sleep(Duration::from_millis(500));
    loop {
        std::thread::sleep(Duration::from_millis(5));
        if !watcher.take_changes().is_empty() {
            session.file_changed(false, &mut log);
        }
        session.tick(&mut log);
        let applied = session.applied.len();
        if !session.is_idle() || last_edit.elapsed() < Duration::from_millis(250) {
            continue;
        }
        if made < edits {
            if applied < made {
                continue;
            }
            // Every edit changes the cutoff; every other one also adds or
            // removes a node (structural), the rest are param-only.
            let mut t = text.replace("\"3kHz\"", &format!("\"{}\"", cutoffs[made % 4]));
            if (made / 2) % 2 == 1 {
                t = t.replace(
                    "\"nodes\": [",
                    "\"nodes\": [\n    { \"id\": \"extra\", \"op\": \"dc\", \"params\": { \"value\": 0.0 } },",
                );
            }
            std::fs::write(&path, t).unwrap();
            made += 1;
            last_edit = Instant::now();
        } else if switches < total_switches {
            if applied < made + switches {
                continue;
            }
            let to = if switches.is_multiple_of(2) {
                if profile == Profile::Live {
                    Profile::Repro
                } else {
                    Profile::Live
                }
            } else {
                profile
            };
            session.switch_profile(to, &mut log);
            switches += 1;
            last_edit = Instant::now();
        } else if applied >= made + switches {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let times = audio.join().unwrap();
    drop(watcher);

    report(&session.applied, &times, rate, profile);
    if !session.rejected.is_empty() {
        println!("rejected edits: {}", session.rejected.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Prints the latencies, the control thread's times and the callbacks
/// during handovers of each kind of handover in `recs`, then all
/// callbacks' times (`times`: clock, ns, frames per callback).
fn report(recs: &[HandoverRecord], times: &[(u64, u32, u32)], rate: f64, profile: Profile) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let block = 64u64;
    for (label, pick) in [
        ("param edits", 0),
        ("structural edits", 1),
        ("profile switches", 2),
    ] {
        let sel: Vec<_> = recs
            .iter()
            .filter(|r| match (&r.reason, pick) {
                (Reason::Edit, 0) => !r.migration.structural,
                (Reason::Edit, 1) => r.migration.structural,
                (Reason::Switch { .. }, 2) => true,
                _ => false,
            })
            .collect();
        let mut lat: Vec<f64> = sel.iter().filter_map(|r| r.latency.map(ms)).collect();
        let mut mig: Vec<f64> = sel.iter().map(|r| ms(r.migrate_time)).collect();
        let mut ff: Vec<f64> = sel.iter().map(|r| ms(r.fast_forward_time)).collect();
        let refusals: u32 = sel.iter().map(|r| r.refusals).sum();
        // Callbacks from each capture to the end of its fade.
        let windows: Vec<(u64, u64)> = sel
            .iter()
            .map(|r| (r.saved_at, r.swap_at + r.fade + block))
            .collect();
        let mut during: Vec<f64> = times
            .iter()
            .filter(|(c, _, _)| windows.iter().any(|(a, b)| c >= a && c < b))
            .map(|(_, ns, _)| *ns as f64 / 1e3)
            .collect();
        let n = sel.len();
        if n == 0 {
            continue;
        }
        let lat_line = if lat.is_empty() {
            String::from("latency n/a (key)")
        } else {
            format!(
                "save → swap p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                percentile(&mut lat.clone(), 0.5),
                percentile(&mut lat.clone(), 0.99),
                percentile(&mut lat, 1.0)
            )
        };
        println!(
            "{label:>17} ({n}): {lat_line}; migrate p50 {:.2} ms max {:.2} ms; fast-forward p50 {:.2} ms max {:.2} ms; refused offers {refusals}; callbacks during handovers: median {:.1} µs, longest {:.1} µs",
            percentile(&mut mig.clone(), 0.5),
            percentile(&mut mig, 1.0),
            percentile(&mut ff.clone(), 0.5),
            percentile(&mut ff, 1.0),
            percentile(&mut during.clone(), 0.5),
            percentile(&mut during, 1.0),
        );
    }
    let mut all: Vec<f64> = times.iter().map(|(_, ns, _)| *ns as f64 / 1e3).collect();
    let budget = 64.0 / rate * 1e6;
    println!(
        "all callbacks ({}): median {:.1} µs, p99 {:.1} µs, longest {:.1} µs (budget {budget:.0} µs); {profile}, block 64, hall-reverb",
        all.len(),
        percentile(&mut all.clone(), 0.5),
        percentile(&mut all.clone(), 0.99),
        percentile(&mut all, 1.0),
    );
}
