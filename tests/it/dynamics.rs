//! `follower`, `compressor` and `limiter` in scenes: a sidechain keys the
//! compressor only when an edge feeds it, lookahead is latency the plan
//! aligns, and bad settings are located errors that say what is valid.

use crate::support as common;

use common::{engine, plan, play};
use morphrt::profile::Profile;

fn db(x: f64) -> f64 {
    20.0 * libm::log10(x)
}

/// A 440 Hz tone at −20 dB and a 60 Hz "kick" at 0 dB; the compressor's
/// `out` is main channel 0 and its `gain` channel 1. `SIDECHAIN` is
/// replaced by the edges under test.
const KEYED: &str = r#"{ "version": "1.0", "seed": 1, "nodes": [
    { "id": "tone", "op": "sine", "params": { "freq": "440Hz", "amp": 0.1 } },
    { "id": "kick", "op": "sine", "params": { "freq": "60Hz", "amp": 1.0 } },
    { "id": "duck", "op": "compressor", "params": { "threshold": -30, "ratio": 10, "knee": 0, "attack": "1ms", "release": "200ms" } } ],
  "edges": [ { "from": "tone", "to": "duck" } SIDECHAIN ],
  "outputs": { "main": ["duck", "duck:gain"] } }"#;

#[test]
fn a_sidechain_keys_the_compressor_only_when_connected() {
    let keyed = KEYED.replace(
        "SIDECHAIN",
        r#", { "from": "kick", "to": "duck:sidechain" }"#,
    );
    let own = KEYED.replace("SIDECHAIN", "");
    for p in Profile::ALL {
        let mut e = engine(&keyed, Some(p), 64);
        let gain = play(&mut e, 24000, 1);
        // Keyed by a 0 dB kick over a −30 dB threshold at 10:1: about −27 dB.
        let g = db(gain[23999]);
        assert!((-27.5..-25.0).contains(&g), "{p}: keyed gain {g} dB");
        // Unkeyed, the −20 dB tone itself is the key: −9 dB at its peak,
        // less below it (a 1 ms attack against a 440 Hz sine).
        let mut e = engine(&own, Some(p), 64);
        let gain = play(&mut e, 24000, 1);
        let g = db(gain[23999]);
        assert!((-9.1..-5.0).contains(&g), "{p}: self-keyed gain {g} dB");
    }
}

/// Levels in dB are written bare or with `dB`: the same threshold, knee,
/// makeup and ceiling either way, and a linear unit is refused.
#[test]
fn levels_in_db_take_a_bare_number_or_db() {
    let scene = |threshold: &str, knee: &str, makeup: &str| {
        KEYED
            .replace(
                "SIDECHAIN",
                r#", { "from": "kick", "to": "duck:sidechain" }"#,
            )
            .replace(
                r#""threshold": -30"#,
                &format!(r#""threshold": {threshold}, "makeup": {makeup}"#),
            )
            .replace(r#""knee": 0"#, &format!(r#""knee": {knee}"#))
    };
    let bare = play(
        &mut engine(&scene("-30", "6", "3"), Some(Profile::Strict), 64),
        4800,
        0,
    );
    let with_db = play(
        &mut engine(
            &scene(r#""-30dB""#, r#""6dB""#, r#""3 dB""#),
            Some(Profile::Strict),
            64,
        ),
        4800,
        0,
    );
    assert_eq!(bare, with_db);
    let louder = play(
        &mut engine(&scene("-30", "6", "9"), Some(Profile::Strict), 64),
        4800,
        0,
    );
    assert_ne!(bare, louder, "makeup is read");
    let e = errors(r#"{ "threshold": "-30Hz" }"#, "compressor");
    assert!(e.contains("dyn.json:3:") && e.contains("threshold"), "{e}");
    let e = errors(r#"{ "ceiling": "3dB" }"#, "limiter");
    assert!(e.contains("out of range"), "{e}");
}

/// An impulse reaches `sum` directly and through a compressor (or a
/// limiter) with lookahead that does not reduce it: the plan delays the
/// direct path by the lookahead, so both copies land on one sample.
#[test]
fn lookahead_is_latency_the_plan_aligns() {
    for (node, latency) in [
        (
            r#"{ "id": "dyn", "op": "compressor", "params": { "ratio": 1, "lookahead": "10ms" } }"#,
            480,
        ),
        (
            r#"{ "id": "dyn", "op": "limiter", "params": { "ceiling": 0, "lookahead": "5ms" } }"#,
            240,
        ),
    ] {
        let text = format!(
            r#"{{ "version": "1.0", "seed": 1, "nodes": [
                {{ "id": "imp", "op": "impulse", "params": {{ "freq": 0, "amp": 0.4 }} }},
                {node},
                {{ "id": "sum", "op": "mix" }} ],
              "edges": [ {{ "from": "imp", "to": "dyn" }}, {{ "from": "dyn", "to": "sum:in0" }}, {{ "from": "imp", "to": "sum:in1" }} ],
              "outputs": {{ "main": "sum" }} }}"#
        );
        for p in Profile::ALL {
            assert_eq!(plan(&text, Some(p), 64).latency, latency, "{p}");
            for block in [1, 64, 100] {
                let out = play(&mut engine(&text, Some(p), block), 2048, 0);
                let loud: Vec<usize> = (0..out.len()).filter(|&i| out[i].abs() > 1e-4).collect();
                assert_eq!(loud, [latency], "{p} block {block}");
                assert!((out[latency] - 0.8).abs() < 1e-6, "{p}: {}", out[latency]);
            }
        }
    }
}

fn errors(node_params: &str, op: &str) -> String {
    let text = format!(
        r#"{{ "version": "1.0", "nodes": [
  {{ "id": "src", "op": "noise" }},
  {{ "id": "dyn", "op": "{op}", "params": {node_params} }} ],
  "edges": [ {{ "from": "src", "to": "dyn" }} ],
  "outputs": {{ "main": "dyn" }} }}"#
    );
    let scene = morphrt::scene::load_str(&text, "dyn.json", None).expect("loads");
    match morphrt::graph::compile(&scene, &morphrt::host::files::resources::compile_options()) {
        Ok(_) => panic!("{node_params} compiled"),
        Err(e) => e
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[test]
fn bad_settings_are_located_errors_that_say_what_is_valid() {
    for (op, params, needles) in [
        (
            "compressor",
            r#"{ "ratio": 0.5 }"#,
            &[
                "dyn.json:3:",
                "`ratio` = 0.5 is out of range",
                "node `dyn`",
                "valid range: 1 … 1000",
            ][..],
        ),
        (
            "compressor",
            r#"{ "attack": 0 }"#,
            &[
                "dyn.json:3:",
                "`attack` = 0 is out of range",
                "valid range: 0.00001 … 60 s",
            ],
        ),
        (
            "compressor",
            r#"{ "threshold": "-20Hz" }"#,
            &["dyn.json:3:", "threshold"],
        ),
        (
            "compressor",
            r#"{ "detector": "vu" }"#,
            &["dyn.json:3:", "peak", "rms"],
        ),
        (
            "compressor",
            r#"{ "lookahead": "1s" }"#,
            &["`lookahead` = 1 is out of range", "valid range: 0 … 0.1 s"],
        ),
        (
            "limiter",
            r#"{ "ceiling": 3 }"#,
            &["`ceiling` = 3 is out of range", "valid range: -60 … 0"],
        ),
        (
            "follower",
            r#"{ "release": -1 }"#,
            &["`release` = -1 is out of range", "valid range: 0 … 60 s"],
        ),
    ] {
        let e = errors(params, op);
        for n in needles {
            assert!(e.contains(n), "{op} {params}: `{n}` not in:\n{e}");
        }
    }
}

/// A compressor's `threshold`, `knee` and `makeup` driven through their
/// ports far past their declared ranges play exactly as at the ranges'
/// ends. A `dc` of 1000 into `knee` once gave −98.6 dB of gain (the knee
/// is at most 48 dB), and into `makeup` an infinite output under strict.
#[test]
fn compressor_levels_driven_through_ports_stay_in_their_declared_ranges() {
    let scene = |param: &str, static_value: f64, drive: f64| {
        format!(
            r#"{{ "version": "1.0", "seed": 1, "nodes": [
    {{ "id": "tone", "op": "sine", "params": {{ "freq": "440Hz", "amp": 0.5 }} }},
    {{ "id": "push", "op": "dc", "params": {{ "value": {drive} }} }},
    {{ "id": "c", "op": "compressor", "params": {{ "threshold": -30, "ratio": 4, "knee": 6, "makeup": 0, "{param}": {static_value} }} }} ],
  "edges": [ {{ "from": "tone", "to": "c" }}, {{ "from": "push", "to": "c:{param}" }} ],
  "outputs": {{ "main": ["c", "c:gain"] }} }}"#
        )
    };
    // (param, its static value, the end of its declared range, a drive past it)
    let cases = [
        ("knee", 6.0, 48.0, 1000.0),
        ("makeup", 0.0, 48.0, 1000.0),
        ("makeup", 0.0, -48.0, -1e6),
        ("threshold", -30.0, 24.0, 1000.0),
        ("threshold", -30.0, -120.0, -1000.0),
    ];
    // Both main channels: the compressor's `out` and its `gain`.
    let play_both = |text: &str, p: Profile| -> Vec<Vec<f64>> {
        (0..2)
            .map(|ch| play(&mut engine(text, Some(p), 64), 4800, ch))
            .collect()
    };
    for p in Profile::ALL {
        for (param, value, end, drive) in cases {
            let driven = play_both(&scene(param, value, drive), p);
            let at_end = play_both(&scene(param, end, 0.0), p);
            assert!(
                driven.iter().flatten().all(|x| x.is_finite()),
                "{p}: {param} driven to {drive}: non-finite output"
            );
            for (ch, (a, b)) in driven.iter().zip(&at_end).enumerate() {
                let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(
                    same,
                    "{p}: {param} {value} + {drive} does not play as {param} {end} (channel {ch})"
                );
            }
        }
    }
}
