//! `env`, `lag`/`slew`, the signal utilities and the stereo-pair
//! operators in whole scenes: the scene reference's examples play,
//! portamento through a lag on a voice's pitch follows the lag's formula,
//! a wrong envelope is an error naming its node, and none of them
//! allocates in the block loop.

use crate::support as common;

use common::counting::{counts, realtime};
use morphrt::profile::Profile;

/// The `{ "version" … }` scenes of the scene reference's section `heading`.
fn examples(heading: &str) -> Vec<String> {
    let text = std::fs::read_to_string(common::root().join("scenes/README.md")).unwrap();
    let section = text
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("the section {heading}"));
    let section = section.split("\n## ").next().unwrap();
    let section = section.split("\n### ").next().unwrap();
    section
        .split("```json\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter(|b| b.starts_with("{ \"version\""))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_examples_of_the_envelope_smoothing_utility_and_stereo_sections_play_under_every_profile() {
    let mut played = 0;
    for heading in [
        "### Envelopes: `env`, and `adsr`'s `curve`",
        "### Smoothing: `lag` and `slew`",
        "### Signal utilities",
        "### Stereo pairs: `balance` and `width`",
    ] {
        // The section's first example (a later one, the legato lead of
        // "Smoothing", is played by `legato::`).
        let scenes = examples(heading);
        assert!(!scenes.is_empty(), "{heading} has no example");
        for json in scenes.into_iter().take(1) {
            for p in Profile::ALL {
                let channels = common::engine(&json, Some(p), 64).bus().channels();
                for ch in 0..channels {
                    let mut e = common::engine(&json, Some(p), 64);
                    let y = common::play(&mut e, 48_000, ch);
                    let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    assert!(y.iter().all(|v| v.is_finite()), "{heading} {p}");
                    assert!(
                        peak > 0.05 && peak < 1.0,
                        "{heading} {p} ch {ch}: peak {peak}"
                    );
                }
            }
            played += 1;
        }
    }
    assert_eq!(played, 4);
}

/// A one-voice module whose oscillator's `freq` comes from a smoother that
/// the note's pitch sets; an event at 0.5 s moves the pitch from 220 to
/// 440 Hz. `out` is the module's sound node.
fn portamento(op: &str, params: &str, out: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "seed": 1, "sample_rate": 48000, "duration": "2s",
  "modules": [ {{ "id": "lead", "voices": 1,
      "note": {{ "pitch": "glide.value", "gate": "amp.gate" }},
      "nodes": [
        {{ "id": "glide", "op": "{op}", "params": {params} }},
        {{ "id": "osc", "op": "sine", "params": {{ "freq": 0, "amp": 0.5 }} }},
        {{ "id": "amp", "op": "adsr", "params": {{ "attack": "1ms", "sustain": 1 }} }},
        {{ "id": "vca", "op": "multiply" }} ],
      "out": "{out}" }} ],
  "edges": [ {{ "from": "glide", "to": "osc:freq" }},
             {{ "from": "osc", "to": "vca:a" }}, {{ "from": "amp", "to": "vca:b" }} ],
  "events": [ {{ "time": "0s", "module": "lead", "note": 57, "duration": "1.8s" }},
              {{ "time": "0.5s", "node": "glide", "param": "value", "value": "69midi" }} ],
  "outputs": {{ "main": ["lead"] }} }}"#
    )
}

/// The mean frequency of `y` between samples `a` and `b`, from its first
/// and last upward zero crossings there (interpolated).
fn frequency(y: &[f64], a: usize, b: usize) -> f64 {
    let ups: Vec<f64> = (a..b)
        .filter(|&i| y[i - 1] < 0.0 && y[i] >= 0.0)
        .map(|i| (i - 1) as f64 + y[i - 1] / (y[i - 1] - y[i]))
        .collect();
    let (first, last) = (ups[0], ups[ups.len() - 1]);
    (ups.len() - 1) as f64 * 48_000.0 / (last - first)
}

#[test]
fn a_voice_pitch_through_lag_or_slew_glides_by_their_formulas_and_the_oscillator_follows() {
    let at = 24_000usize;
    // The lag: 150 ms up, so b = e^(ln 0.001 / 7200).
    let text = portamento("lag", r#"{ "up": "150ms", "down": "300ms" }"#, "glide");
    let mut e = common::engine(&text, Some(Profile::Strict), 64);
    let pitch = common::play(&mut e, 60_000, 0);
    assert!(
        pitch[..at].iter().all(|v| *v == 220.0),
        "the note starts on its pitch"
    );
    let b = libm::exp(libm::log(0.001) / (0.150 * 48_000.0));
    for k in 1..(60_000 - at) {
        let want = 440.0 - 220.0 * libm::pow(b, k as f64);
        let got = pitch[at - 1 + k];
        assert!(
            (got - want).abs() < 1e-9,
            "sample {k} of the glide: {got} vs {want}"
        );
    }
    // 60 dB of the way (0.22 Hz short) after exactly the lag's time.
    assert!((pitch[at - 1 + 7200] - (440.0 - 0.22)).abs() < 1e-9);
    // The slew: 1100 Hz a second, so 200 ms for the 220 Hz.
    let text = portamento("slew", r#"{ "up": 1100, "down": 1100 }"#, "glide");
    let mut e = common::engine(&text, Some(Profile::Strict), 64);
    let pitch = common::play(&mut e, 40_000, 0);
    for k in 1..9_000 {
        let want = 220.0 + 1100.0 / 48_000.0 * k as f64;
        assert!((pitch[at - 1 + k] - want).abs() < 1e-9, "{k}");
    }
    assert!(pitch[at + 9_700..].iter().all(|v| *v == 440.0));
    // The oscillator the lag drives: 220 Hz before, rising through the
    // glide, 440 Hz once it has settled.
    let text = portamento("lag", r#"{ "up": "150ms", "down": "300ms" }"#, "vca");
    let mut e = common::engine(&text, Some(Profile::Strict), 64);
    let y = common::play(&mut e, 72_000, 0);
    let before = frequency(&y, 2_400, at);
    let early = frequency(&y, at + 100, at + 1_300);
    let late = frequency(&y, at + 7_200, at + 8_400);
    let after = frequency(&y, 60_000, 72_000);
    assert!((before - 220.0).abs() < 0.1, "{before}");
    assert!((after - 440.0).abs() < 0.1, "{after}");
    assert!(before + 20.0 < early && early + 20.0 < late && late < after + 0.5);
}

#[test]
fn a_wrong_envelope_is_an_error_naming_the_node_and_the_param() {
    let text = r#"{ "version": "1.0", "seed": 1,
        "nodes": [ { "id": "shape", "op": "env", "params": { "levels": [0, 1, 0], "times": [0.1] } } ],
        "outputs": { "main": ["shape"] } }"#;
    let scene = morphrt::scene::load_str(text, "bad.json", None).expect("it loads");
    let e = morphrt::graph::compile(
        &scene,
        &morphrt::graph::CompileOptions {
            profile: Some(Profile::Strict),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .err()
    .expect("an error");
    let text = e
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("shape"), "{text}");
    assert!(
        text.contains("`times` has 1 entries; `levels` has 3, so its 2 segments need 2 times"),
        "{text}"
    );
}

/// Every operator of this family in one scene, modulated by signals and
/// events (gates, ramps), under every profile, odd block lengths mixed in:
/// no allocation or free in `process_block`.
#[test]
fn envelopes_smoothers_and_utilities_never_allocate_or_free() {
    let text = r#"{ "version": "1.0", "seed": 1,
         "nodes": [ { "id": "src", "op": "noise", "params": { "amp": 0.5 } },
                    { "id": "lfo", "op": "sine", "params": { "freq": "3Hz", "amp": 0.4 } },
                    { "id": "e", "op": "env", "params": { "levels": [0, 1, 0.2, 0.7, 0], "times": [0.002, 0.003, 0.001, 0.01], "curves": [-4, 2], "sustain": 3, "loop": 1 } },
                    { "id": "a", "op": "adsr", "params": { "attack": "2ms", "release": "5ms", "curve": 3 } },
                    { "id": "lg", "op": "lag", "params": { "up": "5ms" } },
                    { "id": "sl", "op": "slew", "params": { "up": 200 } },
                    { "id": "ab", "op": "abs" },
                    { "id": "cl", "op": "clip", "params": { "lo": -0.2 } },
                    { "id": "mn", "op": "min" }, { "id": "mx", "op": "max" },
                    { "id": "sc", "op": "scale", "params": { "out_lo": 0.1, "out_hi": 2, "curve": "exponential" } },
                    { "id": "qs", "op": "quantise", "params": { "scale": [0, 0.5, 7] } },
                    { "id": "qt", "op": "quantise", "params": { "step": 0.1 } },
                    { "id": "sh", "op": "sample_hold" },
                    { "id": "xf", "op": "crossfade" },
                    { "id": "w", "op": "width", "params": { "width": 1.5 } },
                    { "id": "bl", "op": "balance" },
                    { "id": "sum", "op": "mix" } ],
         "edges": [ { "from": "src", "to": "lg" }, { "from": "lfo", "to": "lg:up" },
                    { "from": "src", "to": "sl" }, { "from": "lg", "to": "ab" },
                    { "from": "sl", "to": "cl" }, { "from": "lfo", "to": "cl:hi" },
                    { "from": "ab", "to": "mn:a" }, { "from": "cl", "to": "mn:b" },
                    { "from": "ab", "to": "mx:a" }, { "from": "e", "to": "mx:b" },
                    { "from": "mx", "to": "sc" }, { "from": "lfo", "to": "sc:out_hi" },
                    { "from": "sc", "to": "qs" }, { "from": "mn", "to": "qt" },
                    { "from": "lfo", "to": "qt:step" },
                    { "from": "src", "to": "sh" }, { "from": "lfo", "to": "sh:trig" },
                    { "from": "qs", "to": "xf:a" }, { "from": "sh", "to": "xf:b" },
                    { "from": "lfo", "to": "xf:mix" }, { "from": "a", "to": "e:gate" },
                    { "from": "xf", "to": "w" }, { "from": "qt", "to": "w:in_r" },
                    { "from": "w", "to": "bl" }, { "from": "w:out_r", "to": "bl:in_r" },
                    { "from": "lfo", "to": "bl:pos" },
                    { "from": "bl", "to": "sum:in0" }, { "from": "bl:out_r", "to": "sum:in1" } ],
         "outputs": { "main": ["sum"] },
         "events": [ { "time": "50samples", "node": "a", "param": "gate", "value": 1 },
                     { "time": "900samples", "node": "a", "param": "gate", "value": 0 },
                     { "time": "1500samples", "node": "a", "param": "gate", "value": 1 },
                     { "time": "200samples", "node": "sc", "param": "in_hi", "value": 0.5, "ramp": "500samples" } ] }"#;
    for p in Profile::ALL {
        let mut e = common::engine(text, Some(p), 64);
        let (a0, f0) = counts();
        realtime(|| {
            for k in 0..400 {
                e.process_block(if k % 5 == 2 { 1 + k % 63 } else { 64 });
                std::hint::black_box(e.bus().get(0, 0));
            }
        });
        let (a1, f1) = counts();
        assert_eq!((a1 - a0, f1 - f0), (0, 0), "under {p}");
        assert!(e.clock() > 1500, "the events ran");
    }
}
