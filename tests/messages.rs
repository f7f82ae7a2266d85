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

