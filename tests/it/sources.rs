//! The second wave's sources and resonators in the engine: coloured
//! `noise`, `dust`, `pluck`, `comb` and `allpass`. The scene reference's
//! examples play under every profile; the block loop never allocates with
//! them; strict output is the same bits at every block size; their state
//! carries through a hot edit of another node.

use crate::support as common;

use common::counting::{counts, realtime};
use morphrt::api::player::Scripted;
use morphrt::engine::incoming::SessionFixed;
use morphrt::profile::Profile;

/// Every node of the section: pink and brown noise, dust into a comb read
/// by allpass with a swept delay, an allpass, and a plucked voice module.
const SCENE: &str = r#"{ "version": "1.0", "seed": 1, "sample_rate": 48000,
  "modules": [ { "id": "harp", "voices": 3,
      "note": { "pitch": "str.freq", "gate": "str.trigger" },
      "nodes": [ { "id": "str", "op": "pluck", "params": { "decay": "2s", "amp": 0.4 } } ] } ],
  "nodes": [
    { "id": "pink", "op": "noise", "params": { "color": "pink", "amp": 0.2 } },
    { "id": "brown", "op": "noise", "params": { "color": "brown", "amp": 0.2 } },
    { "id": "hits", "op": "dust", "params": { "density": "200Hz", "amp": 0.5, "bipolar": true } },
    { "id": "sweep", "op": "sine", "params": { "freq": "3Hz", "amp": 0.002 } },
    { "id": "tube", "op": "comb", "params": { "time": "4ms", "gain": 0.9, "interp": "allpass", "max_time": "20ms" } },
    { "id": "ap", "op": "allpass", "params": { "time": "2.3ms", "gain": 0.6 } },
    { "id": "other", "op": "sine", "params": { "freq": "90Hz", "amp": 0.2 } } ],
  "edges": [ { "from": "hits", "to": "tube" }, { "from": "sweep", "to": "tube:time" },
             { "from": "tube", "to": "ap" } ],
  "outputs": { "main": ["pink", "brown", "ap", "harp", "other"] },
  "events": [
    { "time": "0s", "module": "harp", "note": 52, "duration": "150ms" },
    { "time": "100ms", "module": "harp", "note": 59, "duration": "150ms" },
    { "time": "200ms", "module": "harp", "note": 64 },
    { "time": "300ms", "module": "harp", "note": 52 } ] }"#;

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
fn the_source_and_resonator_examples_of_the_scene_reference_play_under_every_profile() {
    let text = std::fs::read_to_string(common::root().join("scenes/README.md")).unwrap();
    let section = text
        .split("## Sources and resonators:")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the section");
    let blocks: Vec<&str> = section
        .split("```json\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert_eq!(blocks.len(), 4, "an example per subsection");
    for json in blocks {
        for p in Profile::ALL {
            let mut e = common::engine(json, Some(p), 64);
            let y = common::play(&mut e, 48_000, 0);
            let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(y.iter().all(|v| v.is_finite()), "{p}: {json}");
            assert!(peak > 0.01 && peak < 2.0, "{p}: peak {peak} of {json}");
        }
    }
}

/// Notes starting and stopping plucks, a swept comb, noise and dust: no
/// block allocates or frees, at odd block lengths too.
#[test]
fn the_new_sources_and_resonators_never_allocate_or_free() {
    for p in Profile::ALL {
        let mut e = common::engine(SCENE, Some(p), 64);
        let (a0, f0) = counts();
        realtime(|| {
            for k in 0..400 {
                e.process_block(if k % 5 == 2 { 1 + k % 63 } else { 64 });
                std::hint::black_box(e.bus().get(0, 0));
            }
        });
        let (a1, f1) = counts();
        assert_eq!((a1 - a0, f1 - f0), (0, 0), "under {p}");
        assert!(e.clock() > 15_000, "the notes ran");
    }
}

/// Strict output is the same bits in blocks of 1, 64 and 4096 samples.
#[test]
fn strict_output_is_the_same_bits_at_every_block_size() {
    let frames = 20_000;
    let want = render(SCENE, Profile::Strict, 4096, frames);
    assert!(want.iter().all(|c| c.iter().any(|v| *v != 0.0)));
    for block in [1, 64] {
        assert!(
            render(SCENE, Profile::Strict, block, frames) == want,
            "block {block}"
        );
    }
}

/// An edit of another node's param swaps in a new engine that carries the
/// noise filters', the comb's and allpass's lines' and the strings' state:
/// their channels continue bit for bit under every profile.
#[test]
fn their_state_carries_through_a_hot_edit_of_another_node() {
    let path = common::root().join("scenes/sources.json");
    let edited = SCENE.replace(
        r#""freq": "90Hz", "amp": 0.2"#,
        r#""freq": "90Hz", "amp": 0.3"#,
    );
    assert_ne!(edited, SCENE);
    let fixed = SessionFixed::from_plan(
        &common::plan(SCENE, Some(Profile::Strict), 64),
        morphrt::host::files::resources::Folders::shared(Vec::new()),
    );
    let (total, at, lead) = (24_000u64, 9_600u64, 256u64);
    let channels = 5;
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
        for (c, what) in ["pink", "brown", "dust, comb, allpass", "plucks"]
            .iter()
            .enumerate()
        {
            assert!(
                got[c] == want[c],
                "{p}: {what} changed by an unrelated edit"
            );
            assert!(
                want[c][at as usize..].iter().any(|v| *v != 0.0),
                "{p}: {what} sounds"
            );
        }
        assert_ne!(got[4], want[4], "{p}: the edited node changed");
    }
}
