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
