//! A tempo edit while playing: a sequencer's steps follow the new tempo
//! from the swap sample, nothing before it moves, and the same handover
//! gives the same bits again.

mod common;

use morphrt::engine::incoming::{Incoming, Scripted, SessionFixed};
use morphrt::profile::Profile;

fn fixed() -> SessionFixed {
    SessionFixed {
        block_size: 64,
        sample_rate: 48_000,
        seed: None,
        resource_dirs: Vec::new(),
        pinned: Vec::new(),
    }
}

fn incoming(text: &str) -> Incoming {
    Incoming::compile(
        text,
        std::path::Path::new("t.json"),
        &fixed(),
        Profile::Strict,
    )
    .unwrap()
}

/// The sequencer's gate alone on the main bus.
fn scene(tempo: &str) -> String {
    format!(
        r#"{{"version": "1.0", "profile": "strict", "tempo": "{tempo}", "nodes": [
  {{"id": "seq", "op": "sequencer", "params": {{"steps": [1, 2, 3, 4], "rate": "1/16", "gate": 0.25}}}}],
 "outputs": {{"main": "seq:gate"}}}}"#
    )
}

fn rises(gate: &[f64]) -> Vec<usize> {
    (0..gate.len())
        .filter(|&i| gate[i] > 0.5 && (i == 0 || gate[i - 1] < 0.5))
        .collect()
}

fn played_with_edit() -> Vec<f64> {
    let mut s = Scripted::new(incoming(&scene("120bpm")), 1);
    s.play_to(20_480);
    // Captured at 20480, swapped at 20992 to 97 bpm.
    s.handover_at(incoming(&scene("97bpm")), 20_480, 20_992, 0)
        .unwrap();
    s.play_to(60_000);
    s.output().to_vec()
}

#[test]
fn a_tempo_edit_moves_the_following_steps_only() {
    let out = played_with_edit();
    let got = rises(&out);
    // Before the swap: 120 bpm, a sixteenth every 6000 samples.
    assert_eq!(&got[..4], &[0, 6000, 12000, 18000]);
    // At 20992 the grid stands at step 20992/6000 = 3.4986…; step 4 is
    // (4 − 20992/6000) · 720000/97 samples later (97 bpm), then every
    // 720000/97, rounded half to even from the anchor.
    let len = 720_000.0 / 97.0;
    let q = 20_992.0 / 6000.0;
    let want: Vec<usize> = (4..got.len())
        .map(|k| 20_992 + ((k as f64 - q) * len).round() as usize)
        .collect();
    assert_eq!(&got[4..], &want[..]);
    assert!(got.len() >= 8, "{got:?}");
    // The same handover again gives the same bits.
    let again = played_with_edit();
    assert!(out
        .iter()
        .zip(&again)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

/// A dc stepped by events at beats 1…16 (its value becomes the beat).
fn beat_scene(tempo: &str, duration: &str) -> String {
    let events: Vec<String> = (1..=16)
        .map(|b| format!(r#"{{"time": "{b}beats", "node": "v", "param": "value", "value": {b}}}"#))
        .collect();
    format!(
        r#"{{"version": "1.0", "profile": "strict", "tempo": "{tempo}", "duration": "{duration}",
 "nodes": [{{"id": "v", "op": "dc", "params": {{"value": 0}}}}],
 "outputs": {{"main": "v"}}, "events": [{}]}}"#,
        events.join(", ")
    )
}

/// Where the output steps, and to which beat.
fn steps(out: &[f64]) -> Vec<(usize, i64)> {
    (1..out.len())
        .filter(|&i| out[i] != out[i - 1])
        .map(|i| (i, out[i] as i64))
        .collect()
}

/// Beat `b` on a map anchored at (`at`, `beat`), `spb` samples a beat,
/// rounded half to even (no halves occur here).
fn on_map(at: f64, beat: f64, spb: f64, b: f64) -> usize {
    let x = at + (b - beat) * spb;
    assert!((x - x.floor() - 0.5).abs() > 1e-6, "{x} is a tie");
    x.round() as usize
}

const S1: u64 = 60_032;
const S2: u64 = 140_032;
const S3: u64 = 200_000;

/// 120 bpm, handed over to 97 bpm at S1, to the same tempo (another
/// duration) at S2 and back to 120 bpm at S3.
fn three_edits() -> Vec<f64> {
    let mut s = Scripted::new(incoming(&beat_scene("120bpm", "10s")), 1);
    s.handover_at(incoming(&beat_scene("97bpm", "10s")), S1 - 512, S1, 0)
        .unwrap();
    s.handover_at(incoming(&beat_scene("97bpm", "9s")), S2 - 512, S2, 0)
        .unwrap();
    s.handover_at(incoming(&beat_scene("120bpm", "9s")), S3 - 512, S3, 0)
        .unwrap();
    s.play_to(330_000);
    s.output().to_vec()
}

#[test]
fn events_in_beats_follow_tempo_edits_from_the_swap_only() {
    let out = three_edits();
    let got = steps(&out);
    let (s1, s2, s3) = (S1 as f64, S2 as f64, S3 as f64);
    let spb97 = 2_880_000.0 / 97.0;
    // The beat the 120 bpm grid stands at at S1; the 97 bpm grid from
    // there (the edit at S2 keeps the tempo, so it keeps the anchor); the
    // beat that grid stands at at S3, where 120 bpm takes over again.
    let b1 = s1 / 24_000.0;
    let b3 = b1 + (s3 - s1) / spb97;
    let want: Vec<(usize, i64)> = (1..=16)
        .map(|b| {
            let bf = b as f64;
            let at = if bf < b1 {
                bf as usize * 24_000
            } else if bf < b3 {
                on_map(s1, b1, spb97, bf)
            } else {
                on_map(s3, b3, 24_000.0, bf)
            };
            (at, b)
        })
        .filter(|(at, _)| *at < out.len())
        .collect();
    assert_eq!(got, want);
    // Beats 1 and 2 before the first swap, 3…5 between, and one between
    // S2 and S3 on the grid anchored at S1.
    assert_eq!(&got[..2], &[(24_000, 1), (48_000, 2)]);
    assert!(got
        .iter()
        .any(|(at, _)| (s2 as usize..S3 as usize).contains(at)));
    assert!(got.len() >= 12, "{got:?}");
    // The same handovers again (as a replay redoes them): the same bits.
    let again = three_edits();
    assert!(out
        .iter()
        .zip(&again)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

/// A live session: a dc stepped to b/100 at each beat b, 240 bpm (12000 samples a beat), the file rewritten to
/// 200 bpm (14400) while it plays, captured and journaled; the events
/// before the swap stay on the 240 bpm grid, the later ones land on the
/// 200 bpm grid re-anchored at the swap, and the journal replays bit for
/// bit.
#[test]
fn a_live_tempo_edit_re_anchors_events_and_replays() {
    let dir = common::temp_dir("tempo_live_edit");
    let path = dir.join("scene.json");
    let text = |tempo: &str| {
        let events: Vec<String> = (1..=60)
            .map(|b| {
                format!(
                    r#"{{"time": "{b}beats", "node": "v", "param": "value", "value": {}}}"#,
                    b as f64 / 100.0
                )
            })
            .collect();
        format!(
            r#"{{"version": "1.0", "profile": "strict", "sample_rate": 48000,
 "profile_config": {{"block_size": 64}}, "tempo": "{tempo}",
 "nodes": [{{"id": "v", "op": "dc", "params": {{"value": 0}}}}],
 "outputs": {{"main": "v"}}, "events": [{}]}}"#,
            events.join(", ")
        )
    };
    std::fs::write(&path, text("240bpm")).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("take.jsonl"));
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--capture",
            cap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    common::save_as_editor(
        &path,
        &text("200bpm"),
        std::time::Duration::from_millis(1500),
    );
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let log = common::press_then_quit(&mut child, &lines, log, &[]);
    let s = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["type"] == "handover")
        .and_then(|r| r["swap_at"].as_u64())
        .unwrap_or_else(|| panic!("no handover journaled; log:\n{log}"));
    // The capture is stereo (a mono bus feeds both channels) and within
    // ±1: beat b sets b/100.
    let played: Vec<f64> = common::read_f32(&cap)
        .chunks(2)
        .map(|c| (c[0] as f64 * 100.0).round())
        .collect();
    // The steps from one beat to the next (not the fade when it stops).
    let got: Vec<(usize, i64)> = steps(&played)
        .into_iter()
        .filter(|&(at, b)| b >= 1 && played[at] == b as f64 && played[at - 1] == (b - 1) as f64)
        .collect();
    let (mut before, mut after) = (0, 0);
    for &(at, b) in &got {
        let b = b as u64;
        let want = if b * 12_000 < s {
            before += 1;
            b * 12_000
        } else {
            // s + (b − s/12000) · 14400 = (72000·b − s) / 5, never a tie.
            after += 1;
            (72_000 * b - s + 2) / 5
        };
        assert_eq!(at as u64, want, "beat {b}, swap at {s}; {got:?}\n{log}");
    }
    assert!(before >= 2 && after >= 2, "{got:?}\n{log}");
    // The events keep their beats: none of them is said to be in the past.
    assert!(!log.contains("is in the past"), "{log}");
    common::assert_replays(&journal, &cap, &log);
}
