//! Black-box tests of what `morphrt` says about settings that will not do
//! what they say, floods of list entries, command-line values, scene text
//! and resource files.

mod common;

use common::{morphrt, stderr, temp_dir};
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A scene of `nodes` (JSON objects) and `edges`, `main` the bus.
fn scene(extra: &str, nodes: &[&str], edges: &[&str], main: &str) -> String {
    format!(
        r#"{{"version": "1.0", "duration": "1s", "seed": 1{extra}, "nodes": [{}], "edges": [{}], "outputs": {{"main": [{main}]}}}}"#,
        nodes.join(", "),
        edges.join(", ")
    )
}

/// `check` of scene text: (exit code, stderr).
fn check(dir: &Path, text: &str) -> (Option<i32>, String) {
    let path = write(dir, "s.json", text);
    let o = morphrt(&["check", &path]);
    (o.status.code(), stderr(&o))
}

// An oscillator above Nyquist folded to an alias (or to silence) without a word.
#[test]
fn oscillators_above_nyquist_are_warned() {
    let dir = temp_dir("m-nyquist");
    for op in ["sine", "saw", "square", "triangle", "impulse"] {
        let node = format!(r#"{{"id": "osc", "op": "{op}", "params": {{"freq": "30kHz"}}}}"#);
        let (code, err) = check(&dir, &scene("", &[&node], &[], r#""osc""#));
        assert_eq!(code, Some(0), "{op}: {err}");
        assert!(
            err.contains("`freq` 30000 Hz is above Nyquist (24000 Hz at 48000 Hz)"),
            "{op}: {err}"
        );
        assert!(err.contains("plays its alias, 18000 Hz"), "{op}: {err}");
        assert!(err.contains("node `osc`"), "{op}: {err}");
    }
    let node = r#"{"id": "m", "op": "sine", "params": {"freq": "200midi"}}"#;
    let (_, err) = check(&dir, &scene("", &[node], &[], r#""m""#));
    assert!(err.contains("is above Nyquist (24000 Hz"), "{err}");
    assert!(err.contains("node `m`"), "{err}");
    // 440 Hz at 1 Hz: a whole number of cycles per sample, silence.
    let node = r#"{"id": "slow", "op": "sine", "params": {"freq": "440Hz"}}"#;
    let (_, err) = check(&dir, &scene(r#", "sample_rate": 1"#, &[node], &[], r#""slow""#));
    assert!(
        err.contains("`freq` 440 Hz is above Nyquist (0.5 Hz at 1 Hz)"),
        "{err}"
    );
    assert!(err.contains("plays its alias, 0 Hz"), "{err}");
    // At and below Nyquist, and negative below it: no warning.
    for f in ["24kHz", "-20kHz", "440Hz"] {
        let node = format!(r#"{{"id": "ok", "op": "sine", "params": {{"freq": "{f}"}}}}"#);
        let (code, err) = check(&dir, &scene("", &[&node], &[], r#""ok""#));
        assert_eq!(code, Some(0), "{err}");
        assert!(!err.contains("Nyquist"), "{f}: {err}");
    }
}

// An `adsr` gated by a signal that never rises above 0.5 never fired, silently.
#[test]
fn a_gate_driven_below_its_threshold_is_warned() {
    let dir = temp_dir("m-gate");
    let env = r#"{"id": "env", "op": "adsr"}"#;
    let sq = |amp: &str| format!(r#"{{"id": "sq", "op": "square", "params": {{"freq": "2Hz", "amp": {amp}}}}}"#);
    let gate = r#"{"from": "sq", "to": "env:gate"}"#;
    let (code, err) = check(&dir, &scene("", &[&sq("0.5"), env], &[gate], r#""env""#));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("`gate` is on only above the threshold 0.5, but what drives it peaks at 0.5: `sq` (square of amp 0.5)"),
        "{err}"
    );
    assert!(err.contains("node `env`"), "{err}");
    // A sine of amp 0.5 under strict math, and two sources below it together.
    let sine = r#"{"id": "sq", "op": "sine", "params": {"freq": "2Hz", "amp": 0.5}}"#;
    let strict = r#", "profile": "strict""#;
    let (_, err) = check(&dir, &scene(strict, &[sine, env], &[gate], r#""env""#));
    assert!(err.contains("peaks at 0.5: `sq` (sine of amp 0.5)"), "{err}");
    let quiet = r#"{"id": "sq2", "op": "triangle", "params": {"amp": 0.2}}"#;
    let gate2 = r#"{"from": "sq2", "to": "env:gate"}"#;
    let (_, err) = check(&dir, &scene("", &[&sq("0.2"), quiet, env], &[gate, gate2], r#""env""#));
    assert!(err.contains("peaks at 0.4: `sq` (square of amp 0.2), `sq2` (triangle of amp 0.2)"), "{err}");
    // Two sources that together exceed it, a louder one, one whose amp is
    // modulated or set by an event, an unbounded source, a square off duty
    // 0.5, the live sine (whose approximation peaks past 1), a gate set by
    // an event: no warning.
    let sq2 = r#"{"id": "sq2", "op": "sine", "params": {"amp": 0.25}}"#;
    let gate2 = r#"{"from": "sq2", "to": "env:gate"}"#;
    let lfo = r#"{"id": "lfo", "op": "sine", "params": {"freq": "1Hz", "amp": 0.5}}"#;
    let noise = r#"{"id": "sq", "op": "noise", "params": {"amp": 0.1}}"#;
    let modulated = r#"{"from": "lfo", "to": "sq:amp"}"#;
    let cases = [
        (scene("", &[&sq("0.3"), sq2, env], &[gate, gate2], r#""env""#), "two sources"),
        (scene("", &[&sq("0.51"), env], &[gate], r#""env""#), "louder"),
        (scene("", &[&sq("0.5"), lfo, env], &[gate, modulated], r#""env""#), "modulated amp"),
        (scene("", &[noise, env], &[gate], r#""env""#), "noise"),
        (scene("", &[&sq("0.5").replace("}}", r#", "duty": 0.3}}"#), env], &[gate], r#""env""#), "duty"),
        (scene(r#", "profile": "live""#, &[sine, env], &[gate], r#""env""#), "live sine"),
    ];
    for (text, what) in &cases {
        let (code, err) = check(&dir, text);
        assert_eq!(code, Some(0), "{what}: {err}");
        assert!(!err.contains("threshold"), "{what}: {err}");
    }
    for event in [
        r#"{"time": "0.5s", "node": "sq", "param": "amp", "value": 1}"#,
        r#"{"time": "0.5s", "node": "env", "param": "gate", "value": 1}"#,
    ] {
        let events = format!(r#", "events": [{event}]"#);
        let (code, err) = check(&dir, &scene(&events, &[&sq("0.5"), env], &[gate], r#""env""#));
        assert_eq!(code, Some(0), "{event}: {err}");
        assert!(!err.contains("threshold"), "{event}: {err}");
    }
}
