//! A session resumed from a snapshot taken between block boundaries
//! (`run --resume` of a `render --snapshot-at 1001ms`, 48 kHz, blocks of
//! 64: sample 48048) still hands over: an edit saved to the file, a profile
//! switch (`l`) and a snapshot (`w`) all complete, the summary counts them,
//! and the journal replays bit for bit what the device got.

use crate::support as common;

use std::path::Path;
use std::time::Duration;

/// Saves `text` over the scene as editors do (see `common::save_as_editor`).
fn save(path: &Path, text: &str) {
    common::save_as_editor(path, text, Duration::from_millis(150));
}

/// The number after `edits applied` in the run's summary line.
fn edits_applied(log: &[String]) -> Option<usize> {
    log.iter().find_map(|l| {
        l.split("edits applied ")
            .nth(1)?
            .split(',')
            .next()?
            .parse()
            .ok()
    })
}

#[test]
fn a_session_resumed_off_the_block_grid_applies_edits_switches_and_snapshots() {
    let dir = common::temp_dir("resume-live");
    let path = dir.join("scene.json");
    std::fs::write(&path, common::osc_into_gain("saw", 48_000, 64, 0.5, "")).unwrap();
    let snap = dir.join("snap.json");
    let o = common::morphrt(&[
        "render",
        path.to_str().unwrap(),
        "-o",
        dir.join("first.wav").to_str().unwrap(),
        "-d",
        "1001ms",
        "--snapshot-at",
        "1001ms",
        "--snapshot-out",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let journal = dir.join("j").join("resumed.jsonl");
    let capture = dir.join("cap.wav");
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--resume",
            snap.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    save(&path, &common::osc_into_gain("saw", 48_000, 64, 0.25, ""));
    common::wait_line(&lines, "edit applied", &mut log);
    let all = common::press_then_quit(
        &mut child,
        &lines,
        log,
        &[("l", "switched repro → live"), ("w", "snapshot at")],
    );
    let log: Vec<String> = all.lines().map(String::from).collect();
    assert_eq!(edits_applied(&log), Some(2), "{all}");
    let written = std::fs::read_dir(journal.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".snapshot.json"))
        .count();
    assert_eq!(written, 1, "the snapshot `w` asked for; log:\n{all}");

    common::assert_replays(&journal, &capture, &all);
}
