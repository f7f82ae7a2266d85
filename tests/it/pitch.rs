//! `pitch_shift` in scenes: the scene reference's example plays under
//! every profile; its latency is aligned by the plan; the block loop never
//! allocates with it; strict output is the same bits at every block size;
//! its line carries through a hot edit of another node.

use crate::support as common;

use common::counting::{counts, realtime};
use morphrt::api::player::Scripted;
use morphrt::engine::incoming::SessionFixed;
use morphrt::profile::Profile;

/// A noise burst and a saw shifted, one with its shift swept by an LFO and
/// its mix and crossfade moved by events, and another sine to edit.
const SCENE: &str = r#"{ "version": "1.0", "seed": 1, "sample_rate": 48000,
  "nodes": [
    { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } },
    { "id": "hiss", "op": "noise", "params": { "amp": 0.2 } },
    { "id": "sweep", "op": "lfo", "params": { "rate": "3Hz", "amount": 5 } },
    { "id": "up", "op": "pitch_shift", "params": { "semitones": 7, "window": "30ms" } },
    { "id": "down", "op": "pitch_shift", "params": { "semitones": -9.5, "mix": 0.7 } },
    { "id": "other", "op": "sine", "params": { "freq": "90Hz", "amp": 0.2 } } ],
  "edges": [ { "from": "osc", "to": "up" }, { "from": "sweep", "to": "up:semitones" },
             { "from": "hiss", "to": "down" } ],
  "outputs": { "main": ["up", "down", "other"] },
  "events": [
    { "time": "100ms", "node": "down", "param": "mix", "value": 0.2, "ramp": "50ms" },
    { "time": "150ms", "node": "up", "param": "crossfade", "value": 0.012 },
    { "time": "200ms", "node": "down", "param": "semitones", "value": 12 } ] }"#;

/// The scene's main bus, channel-major, at `block` frames a block.
fn render(text: &str, p: Profile, block: usize, frames: u64) -> Vec<Vec<f64>> {
    let mut e = common::engine(text, Some(p), block);
    let mut out = vec![Vec::new(); e.channels()];
    while e.clock() < frames {
        e.process_block(((frames - e.clock()) as usize).min(block));
        let b = e.bus();
        for (c, o) in out.iter_mut().enumerate() {
            o.extend((0..b.frames()).map(|i| b.get(c, i)));
        }
    }
    out
}

#[test]
fn the_pitch_shift_example_of_the_scene_reference_plays_under_every_profile() {
    let text = std::fs::read_to_string(common::root().join("scenes/README.md")).unwrap();
    let section = text
        .split("## Pitch shifter: `pitch_shift`")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the section");
    let json = section
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a json block");
    for p in Profile::ALL {
        // The shifters' latencies (1922 and 2402 samples): the plan's is
        // the later one's.
        assert_eq!(common::plan(json, Some(p), 64).latency, 2402, "{p}");
        let mut e = common::engine(json, Some(p), 64);
        let y = common::play(&mut e, 48_000, 0);
        assert!(y.iter().all(|v| v.is_finite()), "{p}");
        let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(peak > 0.1 && peak < 1.0, "{p}: peak {peak}");
    }
}

/// An impulse reaches `sum` directly and through a shifter at 0
/// semitones: the plan delays the direct path by the shifter's latency,
/// so both copies land on one sample.
#[test]
fn the_latency_is_aligned_by_the_plan() {
    for (window, latency) in [("100ms", 2402), ("10ms", 242)] {
        let text = format!(
            r#"{{ "version": "1.0", "seed": 1, "nodes": [
                {{ "id": "imp", "op": "impulse", "params": {{ "freq": 0, "amp": 0.4 }} }},
                {{ "id": "ps", "op": "pitch_shift", "params": {{ "window": "{window}" }} }},
                {{ "id": "sum", "op": "mix" }} ],
              "edges": [ {{ "from": "imp", "to": "ps" }}, {{ "from": "ps", "to": "sum:in0" }}, {{ "from": "imp", "to": "sum:in1" }} ],
              "outputs": {{ "main": "sum" }} }}"#
        );
        for p in Profile::ALL {
            assert_eq!(common::plan(&text, Some(p), 64).latency, latency, "{p}");
            for block in [1, 64, 100] {
                let out = common::play(&mut common::engine(&text, Some(p), block), 4096, 0);
                let loud: Vec<usize> = (0..out.len()).filter(|&i| out[i] != 0.0).collect();
                assert_eq!(loud, [latency], "{p} block {block}");
                assert!((out[latency] - 0.8).abs() < 1e-6, "{p}: {}", out[latency]);
            }
        }
    }
}

/// A swept shift, events on mix, crossfade and semitones: no block
/// allocates or frees, at odd block lengths too.
#[test]
fn pitch_shift_never_allocates_or_frees() {
    for p in Profile::ALL {
        let mut e = common::engine(SCENE, Some(p), 64);
        let (a0, f0) = counts();
        realtime(|| {
            for k in 0..250 {
                e.process_block(if k % 5 == 2 { 1 + k % 63 } else { 64 });
                std::hint::black_box(e.bus().get(0, 0));
            }
        });
        let (a1, f1) = counts();
        assert_eq!((a1 - a0, f1 - f0), (0, 0), "under {p}");
        assert!(e.clock() > 12_000, "the events ran");
    }
}

/// Strict output is the same bits in blocks of 1, 64 and 4096 samples.
#[test]
fn strict_output_is_the_same_bits_at_every_block_size() {
    let frames = 16_000;
    let want = render(SCENE, Profile::Strict, 4096, frames);
    assert!(want.iter().all(|c| c.iter().any(|v| *v != 0.0)));
    for block in [1, 64] {
        assert!(
            render(SCENE, Profile::Strict, block, frames) == want,
            "block {block}"
        );
    }
}

/// An edit of another node's param swaps in a new engine that carries
/// both shifters' lines and phases: their channels continue bit for bit
/// under every profile.
#[test]
fn its_state_carries_through_a_hot_edit_of_another_node() {
    let path = common::root().join("scenes/pitch.json");
    let edited = SCENE.replace(
        r#""freq": "90Hz", "amp": 0.2"#,
        r#""freq": "90Hz", "amp": 0.3"#,
    );
    assert_ne!(edited, SCENE);
    let fixed = SessionFixed::from_plan(
        &common::plan(SCENE, Some(Profile::Strict), 64),
        morphrt::host::files::resources::Folders::shared(Vec::new()),
    );
    let (total, at, lead) = (20_000u64, 9_600u64, 256u64);
    let channels = 3;
    let split = |x: &[f64]| -> Vec<Vec<f64>> {
        (0..channels)
            .map(|c| x.iter().skip(c).step_by(channels).copied().collect())
            .collect()
    };
    for p in Profile::ALL {
        let mut plain = Scripted::new(common::incoming(SCENE, &path, &fixed, p), channels);
        plain.play_to(total);
        let want = split(plain.output());
        let mut s = Scripted::new(common::incoming(SCENE, &path, &fixed, p), channels);
        s.play_to(at - lead);
        let a = s.handover(common::incoming(&edited, &path, &fixed, p), lead);
        assert!(!a.migration.structural, "{p}: a param edit");
        s.play_to(total);
        let got = split(s.output());
        for (c, what) in ["up", "down"].iter().enumerate() {
            assert!(
                got[c] == want[c],
                "{p}: {what} changed by an unrelated edit"
            );
            assert!(
                want[c][at as usize..].iter().any(|v| *v != 0.0),
                "{p}: {what} sounds"
            );
        }
        assert_ne!(got[2], want[2], "{p}: the edited node changed");
    }
}

/// `morphrt ops pitch_shift` describes it: its params and its latency.
#[test]
fn ops_describes_pitch_shift() {
    let o = common::morphrt(&["ops", "pitch_shift"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let s = common::stdout(&o);
    for word in [
        "pitch_shift",
        "semitones",
        "crossfade",
        "mix",
        "window",
        "latency",
    ] {
        assert!(s.contains(word), "missing {word}:\n{s}");
    }
}
