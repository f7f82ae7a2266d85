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

/// A `steal_fade` is at most a second at the scene's rate, whether given
/// as a time or in samples (a count of samples was once read as
/// milliseconds), and `check --json` gives it in samples.
#[test]
fn a_steal_fade_in_samples_is_held_to_a_second_at_the_scene_s_rate() {
    let dir = temp_dir("voices-steal-fade");
    let checked = |rate: u32, fade: &str| {
        let text = SCENE
            .replace(
                r#""steal_fade": "10ms""#,
                &format!(r#""steal_fade": "{fade}""#),
            )
            .replace(
                r#"{ "version": "1.0","#,
                &format!(r#"{{ "version": "1.0", "sample_rate": {rate},"#),
            );
        assert!(text.contains(fade) && text.contains(&rate.to_string()));
        let path = dir.join("pad.json");
        std::fs::write(&path, text).unwrap();
        let o = morphrt(&["check", path.to_str().unwrap(), "--json"]);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        if o.status.success() {
            Ok(v["voices"][0]["steal_fade_samples"].as_u64().unwrap())
        } else {
            let d = &v["diagnostics"][0];
            assert_eq!(d["path"], "modules[0].steal_fade", "{v}");
            assert_eq!(
                d["message"], "`steal_fade` of voice module `pad` is longer than 1000 ms",
                "{v}"
            );
            Err(())
        }
    };
    assert_eq!(checked(48_000, "1001samples"), Ok(1001));
    assert_eq!(checked(48_000, "47999samples"), Ok(47_999));
    assert_eq!(checked(48_000, "48000samples"), Ok(48_000));
    assert_eq!(checked(48_000, "48001samples"), Err(()));
    assert_eq!(checked(96_000, "96000samples"), Ok(96_000));
    assert_eq!(checked(96_000, "96001samples"), Err(()));
    assert_eq!(checked(96_000, "1s"), Ok(96_000));
    assert_eq!(checked(44_100, "1.001s"), Err(()));
}

/// A node's id may hold dots: a note's pitch, gate and velocity name it
/// with its param after the last dot.
#[test]
fn a_note_names_a_node_whose_id_holds_dots() {
    let dir = temp_dir("voices-dotted");
    let text = SCENE
        .replace(r#""osc.freq""#, r#""o.sc.freq""#)
        .replace(r#""env.gate""#, r#""e.n.v.gate""#)
        .replace(r#""id": "osc""#, r#""id": "o.sc""#)
        .replace(r#""id": "env""#, r#""id": "e.n.v""#)
        .replace(r#""from": "osc""#, r#""from": "o.sc""#)
        .replace(r#""from": "env""#, r#""from": "e.n.v""#)
        .replace(r#""release_end": "env""#, r#""release_end": "e.n.v""#);
    assert!(
        !text.contains(r#""osc"#) && !text.contains(r#""env"#),
        "{text}"
    );
    let path = dir.join("dotted.json");
    std::fs::write(&path, &text).unwrap();
    let plain = dir.join("plain.json");
    std::fs::write(&plain, SCENE).unwrap();
    let render = |scene: &std::path::Path| {
        let out = dir.join("out.wav");
        let o = common::render(scene, &out, &["-d", "0.2s"]);
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read(&out).unwrap()
    };
    assert!(render(&path) == render(&plain), "the same notes play");
}
