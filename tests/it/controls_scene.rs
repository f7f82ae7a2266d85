//! A scene's `controls`: `check` lists every one, and a mapping the
//! scene cannot honour is a located error (exit 2) with what would be
//! valid.

use crate::support as common;

use common::{morphrt, stderr, stdout, temp_dir};

const BASE: &str = r#"{"version": "1.0", "nodes": [
  {"id": "tone", "op": "saw"},
  {"id": "lp", "op": "svf", "params": {"cutoff": "1kHz"}},
  {"id": "echo", "op": "delay", "params": {"max_time": "1s"}},
  {"id": "env", "op": "adsr"}],
 "edges": [{"from": "tone", "to": "lp"}, {"from": "lp", "to": "echo"}],
 "outputs": {"main": "echo"},
 "controls": [CONTROLS]}"#;

fn check(controls: &str) -> std::process::Output {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = temp_dir(&format!("controls-scene-{n}"));
    let path = dir.join("s.json");
    std::fs::write(&path, BASE.replace("CONTROLS", controls)).unwrap();
    morphrt(&["check", path.to_str().unwrap()])
}

/// `check` of a scene with one bad control: exit 2, and stderr holds every
/// needle.
fn refused(control: &str, needles: &[&str]) {
    let o = check(control);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{control}\n{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in:\n{err}");
    }
}

#[test]
fn check_lists_every_control_in_text_and_json() {
    let o = morphrt(&["check", "scenes/played-synth.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("controls: 8\n"), "{out}");
    assert!(
        out.contains("osc /filter/cutoff → lp.cutoff 100 … 8000 Hz (exp curve), ramp 480 samples"),
        "{out}"
    );
    assert!(out.contains("midi cc 74 → lp.cutoff"), "{out}");
    assert!(
        out.contains(
            "midi note any → env.gate 0 … 1, pitch → tone.freq, velocity → tone.amp 0.1 … 0.7"
        ),
        "{out}"
    );
    let o = morphrt(&["check", "scenes/played-synth.json", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let controls = v["controls"].as_array().unwrap();
    assert_eq!(controls.len(), 8);
    assert_eq!(controls[0]["source"], "osc /filter/cutoff");
    assert_eq!(controls[0]["target"]["min"], 100.0);
    assert_eq!(controls[0]["target"]["max"], 8000.0);
    assert_eq!(controls[0]["target"]["curve"], "exp");
    assert_eq!(controls[0]["ramp_samples"], 480);
    // Without controls, check says the namespace still reaches everything.
    let o = morphrt(&["check", "scenes/drone.json"]);
    assert!(
        stdout(&o).contains("controls: 0 (`/morphrt/param"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_control_onto_an_unknown_node_or_param_names_the_closest() {
    refused(
        r#"{"osc": "/c", "node": "lpf", "param": "cutoff"}"#,
        &[
            "controls[0]",
            "control targets unknown node `lpf`",
            "did you mean `lp`?",
        ],
    );
    refused(
        r#"{"osc": "/c", "node": "lp", "param": "cutof"}"#,
        &[
            "control targets unknown param `cutof` of `svf`",
            "did you mean `cutoff`?",
        ],
    );
}

#[test]
fn a_control_onto_a_param_fixed_at_build_is_refused() {
    refused(
        r#"{"midi": {"cc": 1}, "node": "echo", "param": "max_time"}"#,
        &["param `max_time` of `delay` cannot be moved by a control"],
    );
}

#[test]
fn a_range_the_param_refuses_is_refused_with_its_range() {
    refused(
        r#"{"osc": "/c", "node": "lp", "param": "cutoff", "min": "20Hz", "max": 5000000}"#,
        &[
            "control `max`",
            "out of range",
            "valid range: 0.001 … 1000000 Hz",
        ],
    );
    refused(
        r#"{"osc": "/c", "node": "lp", "param": "cutoff", "min": "2s"}"#,
        &["control `min`"],
    );
    refused(
        r#"{"osc": "/c", "node": "env", "param": "sustain", "curve": "exp"}"#,
        &["an `exp` curve needs `min` and `max` above zero"],
    );
}

#[test]
fn keys_that_do_not_fit_the_source_or_target_are_refused() {
    refused(
        r#"{"osc": "/m", "node": "lp", "param": "mode", "ramp": "10ms"}"#,
        &["param `mode` is not a continuous number, so it cannot ramp"],
    );
    refused(
        r#"{"midi": {"cc": 3}, "node": "lp", "param": "cutoff", "raw": true}"#,
        &["`raw` belongs to an OSC control"],
    );
    refused(
        r#"{"midi": {"cc": 3}, "node": "lp", "param": "cutoff", "pitch": {"node": "tone", "param": "freq"}}"#,
        &["`pitch` and `velocity` belong to a note control"],
    );
    refused(
        r#"{"midi": {"note": 60}, "node": "env", "param": "gate", "pitch": {"node": "tone", "param": "freq", "min": 1}}"#,
        &["a note's `pitch` takes no range"],
    );
    refused(
        r#"{"osc": "/morphrt/param", "node": "lp", "param": "cutoff"}"#,
        &["reserved"],
    );
}

#[test]
fn every_error_in_controls_is_reported_in_one_run() {
    let o = check(
        r#"{"osc": "/a", "node": "nope", "param": "cutoff"}, {"osc": "/b", "node": "lp", "param": "nope"}"#,
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("controls[0]") && err.contains("controls[1]"),
        "{err}"
    );
}

#[test]
fn two_controls_on_one_address_warn() {
    let o = check(
        r#"{"osc": "/a", "node": "lp", "param": "cutoff"}, {"osc": "/a", "node": "lp", "param": "q"}"#,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`/a` is also mapped by controls[0]"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn raw_with_a_range_is_refused_and_a_whole_range_is_warned_about() {
    refused(
        r#"{"osc": "/q", "node": "lp", "param": "q", "raw": true, "max": 2}"#,
        &["`min` and `max` do not apply with `\"raw\": true`"],
    );
    let o = check(r#"{"osc": "/c", "node": "lp", "param": "cutoff"}"#);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the control spans `cutoff`'s whole range, 0.001 … 1000000"),
        "{}",
        stderr(&o)
    );
    let o =
        check(r#"{"osc": "/c", "node": "lp", "param": "cutoff", "min": "1kHz", "max": "1kHz"}"#);
    assert!(
        stderr(&o).contains("`min` and `max` are equal"),
        "{}",
        stderr(&o)
    );
}
