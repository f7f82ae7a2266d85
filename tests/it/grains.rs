//! `grains` in the engine: the scene reference's examples play under every
//! profile (repro and live within a millionth of strict); the block loop
//! never allocates while grains start, end and fill the pool; strict output
//! is the same bits at every block size; the grains carry through a hot
//! edit of another node; `morphrt ops grains` describes it.

use crate::support as common;

use common::counting::{counts, realtime};
use morphrt::api::player::Scripted;
use morphrt::engine::incoming::SessionFixed;
use morphrt::engine::Engine;
use morphrt::graph::compile;
use morphrt::profile::Profile;

/// Grains of the input with a pool of two at a density that keeps it full,
/// grains of a file, and a sine to edit.
const SCENE: &str = r#"{ "version": "1.0", "seed": 3, "sample_rate": 48000,
  "nodes": [
    { "id": "mic", "op": "input", "params": { "channel": 0 } },
    { "id": "busy", "op": "grains", "params": { "size": "20ms", "density": "2kHz", "max_grains": 2,
        "spread": 0.5, "pitch": 5, "pan_spread": 1, "buffer": "100ms", "amp": 0.5 } },
    { "id": "kick", "op": "grains", "params": { "file": "@resource:kick.wav", "position": 0.1,
        "spread": 0.1, "size": "30ms", "density": "60Hz", "pitch": -7, "window": "trapezoid", "amp": 0.4 } },
    { "id": "other", "op": "sine", "params": { "freq": "90Hz", "amp": 0.2 } } ],
  "edges": [ { "from": "mic", "to": "busy" } ],
  "outputs": { "main": ["busy:out", "busy:out_r", "kick:out", "kick:out_r", "other"] } }"#;

/// The plan of scene text whose resources resolve from `scenes/`.
fn plan(text: &str, p: Profile, block: usize) -> morphrt::graph::Plan {
    let scene = morphrt::scene::load_str(text, "grains.json", Some(common::root().join("scenes")))
        .unwrap_or_else(|e| panic!("{}", e[0]));
    compile(
        &scene,
        &morphrt::graph::CompileOptions {
            profile: Some(p),
            block_size: Some(block),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{}", e[0]))
}

/// An engine for scene text, fed the test input.
fn engine(text: &str, p: Profile, block: usize) -> Engine {
    common::fed(Engine::new(plan(text, p, block)))
}

/// The scene's main bus, channel-major, at `block` frames a block.
fn render(text: &str, p: Profile, block: usize, frames: u64) -> Vec<Vec<f64>> {
    let mut e = engine(text, p, block);
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
fn the_granular_examples_of_the_scene_reference_play_under_every_profile() {
    let text = std::fs::read_to_string(common::root().join("scenes/README.md")).unwrap();
    let section = text
        .split("## Granular playback: `grains`")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the section");
    let blocks: Vec<&str> = section
        .split("```json\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert_eq!(
        blocks.len(),
        2,
        "an example from the input and one from a file"
    );
    for json in blocks {
        let strict = render(json, Profile::Strict, 64, 48_000);
        let peak = strict.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(peak > 0.01 && peak < 2.0, "peak {peak} of {json}");
        assert_ne!(strict[0], strict[1], "the grains are spread in stereo");
        for p in [Profile::Repro, Profile::Live] {
            let y = render(json, p, 128, 48_000);
            let err = strict
                .iter()
                .flatten()
                .zip(y.iter().flatten())
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(err < 1e-6, "{p}: {err:e} from strict in {json}");
        }
    }
}

/// Grains starting and ending every few samples, a pool that is full most
/// of the time, a file's grains: no block allocates or frees, at odd block
/// lengths too.
#[test]
fn grains_never_allocate_or_free_as_they_start_end_and_fill_the_pool() {
    for p in Profile::ALL {
        let mut e = engine(SCENE, p, 64);
        let (a0, f0) = counts();
        realtime(|| {
            for k in 0..400 {
                e.process_block(if k % 5 == 2 { 1 + k % 63 } else { 64 });
                std::hint::black_box(e.bus().get(0, 0));
            }
        });
        let (a1, f1) = counts();
        assert_eq!((a1 - a0, f1 - f0), (0, 0), "under {p}");
        assert!(e.clock() > 15_000);
    }
}

/// Strict output is the same bits in blocks of 1, 64 and 4096 samples.
#[test]
fn strict_grains_are_the_same_bits_at_every_block_size() {
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
/// grains (the pool and the input buffer): their channels continue bit for
/// bit under every profile.
#[test]
fn grains_carry_through_a_hot_edit_of_another_node() {
    let path = common::root().join("scenes/grains.json");
    let edited = SCENE.replace(
        r#""freq": "90Hz", "amp": 0.2"#,
        r#""freq": "90Hz", "amp": 0.3"#,
    );
    assert_ne!(edited, SCENE);
    let fixed = SessionFixed::from_plan(
        &plan(SCENE, Profile::Strict, 64),
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
        for c in 0..4 {
            assert!(
                got[c] == want[c],
                "{p}: channel {c} changed by an unrelated edit"
            );
            assert!(
                want[c][at as usize..].iter().any(|v| *v != 0.0),
                "{p}: channel {c} sounds"
            );
        }
        assert_ne!(got[4], want[4], "{p}: the edited node changed");
    }
}

#[test]
fn morphrt_ops_grains_describes_it() {
    let o = common::morphrt(&["ops", "grains"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let s = common::stdout(&o);
    for word in [
        "grains",
        "Philox",
        "position",
        "size",
        "density",
        "pitch",
        "spread",
        "pan_spread",
        "window",
        "hann",
        "trapezoid",
        "amp",
        "buffer",
        "max_grains",
        "seed",
        "out_r",
    ] {
        assert!(s.contains(word), "`ops grains` lacks {word}:\n{s}");
    }
}
