//! `morphrt check` shows a voice module as one block: its template nodes
//! once, marked with the voice count (no row per voice), its sum, and a
//! line with the note map, the free rule, the cost per sounding voice and
//! at every voice, and the latency; the events line counts notes and pedal
//! changes beside param changes; `check --json` has them in `voices`,
//! `notes` and `pedal_changes`.

use crate::support as common;

use common::{morphrt, stderr, stdout, temp_dir};

const SCENE: &str = r#"{ "version": "1.0",
  "modules": [ { "id": "pad", "voices": 8, "steal_fade": "10ms", "same_note": "new",
      "note": { "pitch": "osc.freq", "gate": "env.gate" }, "out": "vca", "release_end": "env",
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } },
        { "id": "env", "op": "adsr", "params": { "release": "100ms" } },
        { "id": "vca", "op": "multiply" } ] } ],
  "edges": [ { "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" } ],
  "outputs": { "main": ["pad"] },
  "events": [ { "time": "0s", "module": "pad", "note": 60 },
              { "time": "0.1s", "module": "pad", "sustain": true } ] }"#;

#[test]
fn check_shows_a_voice_module_as_one_block() {
    let dir = temp_dir("voices-check");
    let path = dir.join("pad.json");
    std::fs::write(&path, SCENE).unwrap();
    let o = morphrt(&["check", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(!table.contains("osc#"), "no row per voice:\n{table}");
    assert!(
        table.contains("\nevents: 0 param changes, 1 note, 1 pedal change\n"),
        "{table}"
    );
    for (node, module) in [
        ("osc", "pad ×8 voices"),
        ("env", "pad ×8 voices"),
        ("pad", "pad (sum)"),
    ] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("{node} ")) && l.contains(module)),
            "no `{node}` row of `{module}`:\n{table}"
        );
    }
    assert!(
        table.contains("voices: `pad` ×8 (3 template nodes each; note pitch osc.freq, gate env.gate; out `vca`; steal fade 480 samples (10.0 ms); same note takes a new voice; free once `env` is below -100 dBFS after the note-off)"),
        "{table}"
    );

    let o = morphrt(&["check", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((&v["notes"], &v["pedal_changes"]), (&1.into(), &1.into()));
    let pad = &v["voices"][0];
    assert_eq!(pad["module"], "pad");
    assert_eq!(pad["voices"], 8);
    assert_eq!(pad["template"], serde_json::json!(["osc", "env", "vca"]));
    assert_eq!(pad["note"]["pitch"], "osc.freq");
    assert_eq!(pad["note"]["velocity"], serde_json::Value::Null);
    assert_eq!(pad["steal_fade_samples"], 480);
    assert_eq!(pad["same_note"], "new");
    assert_eq!(pad["release_end"], "env");
    // Every voice's nodes plus the sum: the whole plan's estimate.
    let per_voice = pad["cost_ns_per_sample_per_voice"].as_f64().unwrap();
    let all = pad["cost_ns_per_sample_all_voices"].as_f64().unwrap();
    assert!(per_voice > 0.0 && all > 8.0 * per_voice, "{pad}");
    assert!(
        (all - v["cost_ns_per_sample"].as_f64().unwrap()).abs() < 1e-6,
        "{v}"
    );
    let cost_line = format!("{per_voice:.1} ns per sample per sounding voice, {all:.1} with all 8");
    assert!(table.contains(&cost_line), "{cost_line}:\n{table}");

    // A scene without voice modules says nothing about them.
    let o = morphrt(&["check", "scenes/pluck-delay.json", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["voices"], serde_json::json!([]));
    let o = morphrt(&["check", "scenes/pluck-delay.json"]);
    assert!(!stdout(&o).contains("voices"), "{}", stdout(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
