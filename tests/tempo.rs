//! A tempo edit while playing: a sequencer's steps follow the new tempo
//! from the swap sample, nothing before it moves, and the same handover
//! gives the same bits again.

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
