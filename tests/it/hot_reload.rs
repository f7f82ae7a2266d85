//! The scene file saved in every way editors save it,
//! against a running `morphrt run --device clock --capture` (the real
//! binary, paced in real time): every complete save is applied, no partial
//! file is ever committed, the watcher never dies, and the capture has no gap.

use crate::support as common;

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const SAVES_PER_STYLE: usize = 100;

#[derive(Clone, Copy, Debug)]
enum Style {
    AtomicRename,
    Vim,
    TruncateWrite,
    DeleteRecreate,
    HalfThenComplete,
}

/// Saves `text` to `path` as `style` does; a half-written save waits for
/// the session to read and refuse the half (a line in `lines`) before it
/// writes the rest, however slow the machine.
fn save(path: &Path, text: &str, style: Style, lines: &Receiver<String>, log: &mut Vec<String>) {
    let tmp = path.with_extension("json.tmp");
    let backup = path.with_extension("json~");
    match style {
        Style::AtomicRename => {
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        }
        Style::Vim => {
            std::fs::rename(path, &backup).unwrap();
            std::fs::write(path, text).unwrap();
            std::fs::remove_file(&backup).unwrap();
        }
        Style::TruncateWrite => {
            let mut f = std::fs::File::create(path).unwrap();
            f.write_all(text.as_bytes()).unwrap();
        }
        Style::DeleteRecreate => {
            std::fs::remove_file(path).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Style::HalfThenComplete => {
            let mut f = std::fs::File::create(path).unwrap();
            let half = text.len() / 2;
            f.write_all(&text.as_bytes()[..half]).unwrap();
            f.flush().unwrap();
            assert!(
                wait_for(lines, |l| l.starts_with("edit rejected"), log),
                "the half-written file was not refused; log:\n{}",
                log[log.len().saturating_sub(30)..].join("\n")
            );
            f.write_all(&text.as_bytes()[half..]).unwrap();
        }
    }
}

/// Waits for the line announcing that `gain` glides to `to`.
fn wait_applied(lines: &Receiver<String>, to: f64, log: &mut Vec<String>) -> bool {
    let want = "`out.gain` glides ";
    let value = format!("→ {to}");
    wait_for(
        lines,
        |l| l.contains(want) && l.trim_end().ends_with(&value),
        log,
    )
}

/// Waits up to 20 s for a line `hit` accepts, keeping every line in `log`.
fn wait_for(lines: &Receiver<String>, hit: impl Fn(&str) -> bool, log: &mut Vec<String>) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(l) => {
                let hit = hit(&l);
                log.push(l);
                if hit {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
    false
}

#[test]
fn every_save_style_is_applied_and_nothing_partial_is_committed() {
    let dir = common::temp_dir("hot-reload");
    let path = dir.join("scene.json");
    let capture = dir.join("take.wav");
    std::fs::write(&path, common::osc_into_gain("sine", 48_000, 64, 0.5, "")).unwrap();
    let (mut child, lines) = common::run_clock(
        &path,
        &["--no-journal", "--capture", capture.to_str().unwrap()],
    );
    let mut log = Vec::new();
    // Wait for playback to start.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let l = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("morphrt run started");
        let started = l.starts_with("playing ");
        log.push(l);
        if started {
            break;
        }
    }
    let styles = [
        Style::AtomicRename,
        Style::Vim,
        Style::TruncateWrite,
        Style::DeleteRecreate,
        Style::HalfThenComplete,
    ];
    let mut k = 0;
    for style in styles {
        for _ in 0..SAVES_PER_STYLE {
            k += 1;
            // A new value every save: 0.5 + k/10000, exact in decimal.
            let gain = 0.5 + k as f64 / 10_000.0;
            let text = common::osc_into_gain("sine", 48_000, 64, gain, "");
            save(&path, &text, style, &lines, &mut log);
            assert!(
                wait_applied(&lines, gain, &mut log),
                "save {k} ({style:?}, gain {gain}) was not applied; log:\n{}",
                log[log.len().saturating_sub(30)..].join("\n")
            );
        }
    }
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "q").unwrap();
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let all = log.join("\n");
    assert!(status.success(), "{all}");
    let applied = log.iter().filter(|l| l.starts_with("edit applied")).count();
    assert_eq!(
        applied,
        styles.len() * SAVES_PER_STYLE,
        "one applied edit per complete save:\n{all}"
    );
    // Every half-written save was read and refused, never committed.
    let rejected = log
        .iter()
        .filter(|l| l.starts_with("edit rejected"))
        .count();
    assert!(
        rejected >= SAVES_PER_STYLE,
        "{rejected} rejections for {SAVES_PER_STYLE} half-written saves:\n{all}"
    );
    // The capture holds every frame that was played, with no gap.
    let played: u64 = log
        .iter()
        .find_map(|l| {
            l.strip_prefix("played ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse().ok())
        })
        .expect("the run reported the frames it played");
    let mut r = hound::WavReader::open(&capture).expect("the capture file");
    let spec = r.spec();
    assert_eq!(spec.channels, 2);
    let samples: Vec<f32> = r.samples::<f32>().map(Result::unwrap).collect();
    assert_eq!(
        samples.len() as u64,
        played * 2,
        "captured frames == played frames"
    );
    // A 220 Hz sine at 0.25…0.3 amplitude: a gap (silence) or a jump would
    // show as a long run of zeros or a step larger than the sine's own.
    let left: Vec<f32> = samples.iter().step_by(2).copied().collect();
    let fade = 48_000 * 5 / 1000; // the stop fade at the end
    let body = &left[..left.len() - fade];
    let max_step = body
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0f32, f32::max);
    let sine_step = 0.3 * 2.0 * std::f32::consts::PI * 220.0 / 48_000.0;
    assert!(
        max_step <= sine_step * 1.01,
        "a discontinuity of {max_step} in the capture (a sine step is at most {sine_step})"
    );
    let mut zeros = 0;
    let mut longest = 0;
    for x in body {
        zeros = if *x == 0.0 { zeros + 1 } else { 0 };
        longest = longest.max(zeros);
    }
    assert!(
        longest <= 2,
        "{longest} silent samples in a row: a gap in the capture"
    );
}
