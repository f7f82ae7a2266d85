//! Diagnostics as JSON, a cap on repeated errors, and settings that would
//! do something other than written warned about or refused.

use crate::support as common;

use common::{morphrt, stderr, stdout, temp_dir};
use serde_json::Value;
use std::path::Path;

fn json(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// The 1-based line and character column of the first `needle` in `text`.
fn position(text: &str, needle: &str) -> (u64, u64) {
    let at = text.find(needle).expect("needle in text");
    let before = &text[..at];
    let line = before.matches('\n').count() as u64 + 1;
    let col = before.rsplit('\n').next().unwrap().chars().count() as u64 + 1;
    (line, col)
}

/// The fields of the first diagnostic of the human form, read back from its
/// text: (severity, file, line, column, path, node, message, help).
fn parse_human(text: &str) -> Value {
    let mut lines = text.lines();
    let first = lines.next().expect("a first line");
    let (severity, rest) = first.split_once(": ").unwrap();
    let (place, message) = rest.split_once(": ").unwrap();
    let mut parts = place.split(':');
    let file = parts.next().unwrap();
    let line: Option<u64> = parts.next().map(|x| x.parse().unwrap());
    let column: Option<u64> = parts.next().map(|x| x.parse().unwrap());
    let (mut path, mut node, mut help) = (None, None, None);
    for l in lines.take_while(|l| !l.is_empty()) {
        if let Some(ctx) = l.strip_prefix("  --> ") {
            for c in ctx.split(", ") {
                if let Some(p) = c.strip_prefix("at ") {
                    path = Some(p.to_string());
                } else if let Some(n) = c.strip_prefix("node `") {
                    node = Some(n.trim_end_matches('`').to_string());
                }
            }
        } else if let Some(h) = l.strip_prefix("  help: ") {
            help = Some(h.to_string());
        }
    }
    serde_json::json!({"severity": severity, "file": file, "line": line, "column": column,
        "path": path, "node": node, "message": message, "help": help})
}

/// `check --json` prints errors as diagnostics on stdout.
#[test]
fn check_json_prints_errors_as_diagnostics() {
    let path = "tests/fixtures/bad/bad_enum.json";
    let o = morphrt(&["check", path, "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "the JSON is the whole report");
    let v = json(&o);
    assert_eq!(v["ok"], false);
    assert_eq!(v["truncated"], 0);
    let d = &v["diagnostics"][0];
    let text = std::fs::read_to_string(common::root().join(path)).unwrap();
    let (line, col) = position(&text, "\"lowpas\"");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["file"], path);
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(line), Some(col))
    );
    assert_eq!(d["path"], "nodes[1].params.mode");
    assert_eq!(d["node"], "lp");
    assert!(d["message"].as_str().unwrap().contains("`lowpas`"), "{d}");
    assert!(
        d["help"]
            .as_str()
            .unwrap()
            .contains("did you mean `lowpass`?"),
        "{d}"
    );

    // Every fixture: the JSON says what the human form says, field by field.
    for name in [
        "bad_enum",
        "unknown_param",
        "cycle",
        "syntax",
        "dangling_edge",
        "wrong_unit",
    ] {
        let path = format!("tests/fixtures/bad/{name}.json");
        let human = morphrt(&["check", &path]);
        let o = morphrt(&["check", &path, "--json"]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let v = json(&o);
        assert_eq!(v["ok"], false, "{name}");
        assert_eq!(v["diagnostics"][0], parse_human(&stderr(&human)), "{name}");
    }
    let v = json(&morphrt(&[
        "check",
        "tests/fixtures/bad/unknown_param.json",
        "--json",
    ]));
    let d = &v["diagnostics"][0];
    assert_eq!(d["path"], "nodes[0].params.frequency");
    assert_eq!(d["node"], "osc");
    assert!(d["help"].as_str().unwrap().contains("`freq`"), "{d}");
    let v = json(&morphrt(&[
        "check",
        "tests/fixtures/bad/syntax.json",
        "--json",
    ]));
    let d = &v["diagnostics"][0];
    assert_eq!(d["line"], 5);
    assert_eq!(d["path"], Value::Null);
    assert_eq!(d["node"], Value::Null);
}

/// `check --json` lists a scene's warnings as diagnostics, as it does errors.
#[test]
fn check_json_lists_warnings_as_diagnostics() {
    let dir = temp_dir("w-json");
    let text = r#"{
  "version": "1.0", "duration": "1s", "profle": "strict",
  "nodes": [
    { "id": "a", "op": "sine" },
    { "id": "lp", "op": "biquad", "params": { "cutoff": "30kHz" } },
    { "id": "m", "op": "mix", "params": { "gains": [1, 1, 1] } }
  ],
  "edges": [ { "from": "a", "to": "lp" }, { "from": "lp", "to": "m:in0" } ],
  "outputs": { "main": ["m"] },
  "events": [ { "time": "2s", "node": "a", "param": "freq", "value": 220 } ]
}"#;
    let scene = write(&dir, "w.json", text);
    let o = morphrt(&["check", &scene, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["ok"], true);
    assert_eq!(v["truncated"], 0);
    assert_eq!(
        v["nodes"].as_array().unwrap().len(),
        3,
        "the report is still there"
    );
    let ds = v["diagnostics"].as_array().unwrap();
    let find = |path: &str| {
        ds.iter()
            .find(|d| d["path"] == path)
            .unwrap_or_else(|| panic!("no diagnostic at {path}: {ds:?}"))
    };
    for d in ds {
        assert_eq!(d["severity"], "warning", "{d}");
        assert_eq!(d["file"], scene.as_str());
    }
    let unknown = find("profle");
    assert!(
        unknown["help"].as_str().unwrap().contains("`profile`"),
        "{unknown}"
    );
    assert_eq!((unknown["line"].as_u64(), unknown["column"].as_u64()), {
        let (l, c) = position(text, "\"profle\"");
        (Some(l), Some(c))
    });
    assert_eq!(find("nodes[1].params.cutoff")["node"], "lp");
    assert_eq!(find("nodes[2].params.gains")["node"], "m");
    let ev = find("events[0]");
    assert_eq!(ev["node"], "a");
    assert_eq!(
        ev["line"].as_u64(),
        Some(position(text, "{ \"time\": \"2s\"").0)
    );
    // The older string list stays, one entry per diagnostic.
    assert_eq!(v["warnings"].as_array().unwrap().len(), ds.len());
}

/// Repeated errors are capped at 20, with the number left out.
#[test]
fn repeated_errors_are_capped_at_20() {
    let dir = temp_dir("w-cap");
    // 150 unknown operators: exactly 150 errors.
    let nodes: Vec<String> = (0..150)
        .map(|i| format!("{{\"id\": \"n{i}\", \"op\": \"nope\"}}"))
        .collect();
    let scene = write(
        &dir,
        "many.json",
        &format!(
            "{{\"version\": \"1.0\", \"nodes\": [{}], \"outputs\": {{\"main\": [\"n0\"]}}}}",
            nodes.join(",\n")
        ),
    );
    let o = morphrt(&["check", &scene]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.matches("error: ").count(), 20, "{err}");
    assert!(err.contains("… and 130 more errors"), "{err}");
    assert!(err.trim_end().ends_with("150 errors"), "{err}");
    let v = json(&morphrt(&["check", &scene, "--json"]));
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 20);
    assert_eq!(v["truncated"], 130);

    // A mix with far more inputs than it takes.
    let edges: Vec<String> = (0..3000)
        .map(|i| format!("{{\"from\": \"a\", \"to\": \"m:in{i}\"}}"))
        .collect();
    let scene = write(
        &dir,
        "wide.json",
        &format!(
            "{{\"version\": \"1.0\", \"nodes\": [{{\"id\": \"a\", \"op\": \"sine\"}}, {{\"id\": \"m\", \"op\": \"mix\"}}], \"edges\": [{}], \"outputs\": {{\"main\": [\"m\"]}}}}",
            edges.join(",\n")
        ),
    );
    let o = morphrt(&["check", &scene]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.matches("error: ").count() <= 20, "{err}");
    let v = json(&morphrt(&["check", &scene, "--json"]));
    let shown = v["diagnostics"].as_array().unwrap().len() as u64;
    let more = v["truncated"].as_u64().unwrap();
    assert!(more > 0, "{v}");
    assert!(err.contains(&format!("… and {more} more errors")), "{err}");
    assert!(
        err.trim_end()
            .ends_with(&format!("{} errors", shown + more)),
        "{err}"
    );
}

/// `--resources` naming a missing directory or a file is an error.
#[test]
fn resources_must_name_a_directory() {
    let dir = temp_dir("w-res");
    let missing = dir.join("nowhere");
    let file = write(&dir, "a-file.txt", "x");
    for (arg, says) in [
        (missing.to_str().unwrap(), "does not exist"),
        (file.as_str(), "is a file, not a directory"),
    ] {
        let o = morphrt(&["check", "scenes/drone.json", "--resources", arg]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("--resources `{arg}` {says}")),
            "{err}"
        );
        let out = dir.join("out.wav");
        let o = morphrt(&[
            "render",
            "scenes/drone.json",
            "-o",
            out.to_str().unwrap(),
            "-d",
            "0.1s",
            "--resources",
            arg,
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(!out.exists());
    }
    let o = morphrt(&["check", "scenes/drone.json", "--resources", "resources"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

fn event_scene(dir: &Path) -> String {
    write(
        dir,
        "events.json",
        r#"{ "version": "1.0", "duration": "1s",
  "nodes": [ { "id": "a", "op": "sine", "params": { "amp": 0.1 } } ],
  "outputs": { "main": ["a"] },
  "events": [
    { "time": "0.5s", "node": "a", "param": "freq", "value": 220 },
    { "time": "1.5s", "node": "a", "param": "freq", "value": 330 } ] }"#,
    )
}

/// Events after the end of a render are warned about.
#[test]
fn events_after_the_end_are_warned() {
    let dir = temp_dir("w-events");
    let scene = event_scene(&dir);
    let o = morphrt(&["check", &scene]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("event at 1.5s (sample 72000) is after the end of the render (1s, 48000 samples, the scene's duration)"),
        "{err}"
    );
    assert!(err.contains("at events[1], node `a`"), "{err}");
    assert!(!err.contains("events[0]"), "{err}");

    let out = dir.join("out.wav");
    let render = |extra: &[&str]| {
        let mut args = vec!["render", scene.as_str(), "-o", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        morphrt(&args)
    };
    // -d longer than the scene: no event is late.
    let o = render(&["-d", "2s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("after the end"), "{}", stderr(&o));
    // -d shorter: both are late, each named.
    let o = render(&["-d", "0.25s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("(0.25s, 12000 samples, -d 0.25s)"), "{err}");
    assert!(
        err.contains("at events[0]") && err.contains("at events[1]"),
        "{err}"
    );
    // No -d: the scene's duration.
    let o = render(&[]);
    assert!(
        stderr(&o).contains("the scene's duration"),
        "{}",
        stderr(&o)
    );
}

/// `run --duration` shorter than the scene's events warns about the ones it will not reach.
#[test]
fn run_warns_about_events_it_will_not_reach() {
    let dir = temp_dir("w-run");
    let scene = event_scene(&dir);
    let o = morphrt(&[
        "run",
        &scene,
        "--device",
        "clock",
        "--no-journal",
        "--no-watch",
        "--duration",
        "0.1s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("(0.1s, 4800 samples, --duration 0.1s)"),
        "{err}"
    );
    assert!(
        err.contains("at events[0]") && err.contains("at events[1]"),
        "{err}"
    );
}

/// The warnings `check` prints for one node in a scene at 48 kHz.
fn check_one(dir: &Path, node: &str) -> String {
    let scene = write(
        dir,
        "one.json",
        &format!(
            r#"{{ "version": "1.0", "nodes": [ {{ "id": "src", "op": "sine" }}, {node} ],
  "edges": [ {{ "from": "src", "to": "x" }} ], "outputs": {{ "main": ["x"] }} }}"#
        ),
    );
    let o = morphrt(&["check", &scene]);
    assert!(o.status.success(), "{}", stderr(&o));
    stderr(&o)
}

/// A delay `time` over `max_time` (which clamps it) is warned about.
#[test]
fn delay_time_over_max_time_is_warned() {
    let dir = temp_dir("w-delay");
    let err = check_one(
        &dir,
        r#"{ "id": "x", "op": "delay", "params": { "time": "3s", "max_time": "2s" } }"#,
    );
    assert!(
        err.contains(
            "`time` 3 s is longer than `max_time` 2 s: the delay is clamped to max_time (2 s)"
        ),
        "{err}"
    );
    assert!(err.contains("at nodes[1].params.time, node `x`"), "{err}");
    let err = check_one(
        &dir,
        r#"{ "id": "x", "op": "delay", "params": { "time": "2s", "max_time": "2s" } }"#,
    );
    assert!(!err.contains("warning"), "{err}");
}

/// A cutoff above Nyquist is warned about, saying what the op does with it.
#[test]
fn cutoff_above_nyquist_is_warned_with_what_the_op_does() {
    let dir = temp_dir("w-nyquist");
    for (op, designed) in [
        ("biquad", "the filter is designed at 23520 Hz"),
        ("svf", "the filter is designed at 23520 Hz"),
        ("onepole", "the filter is designed at 24000 Hz"),
        ("diode_clipper", "the RC corner is designed at 21600 Hz"),
    ] {
        let err = check_one(
            &dir,
            &format!(r#"{{ "id": "x", "op": "{op}", "params": {{ "cutoff": "30kHz" }} }}"#),
        );
        assert!(
            err.contains("`cutoff` 30000 Hz is above Nyquist (24000 Hz at 48000 Hz)"),
            "{op}: {err}"
        );
        assert!(err.contains(designed), "{op}: {err}");
        assert!(
            err.contains("at nodes[1].params.cutoff, node `x`"),
            "{op}: {err}"
        );
        let err = check_one(
            &dir,
            &format!(r#"{{ "id": "x", "op": "{op}", "params": {{ "cutoff": "20kHz" }} }}"#),
        );
        assert!(!err.contains("warning"), "{op}: {err}");
    }
}

/// `mix` gains beyond the connected inputs (they scale nothing) are warned about by index.
#[test]
fn unused_mix_gains_are_warned_by_index() {
    let dir = temp_dir("w-gains");
    let scene = write(
        &dir,
        "mix.json",
        r#"{ "version": "1.0",
  "nodes": [ { "id": "a", "op": "sine" }, { "id": "m", "op": "mix", "params": { "gains": [1, 0.5, 1, 0.25] } } ],
  "edges": [ { "from": "a", "to": "m:in0" }, { "from": "a", "to": "m:in2" } ],
  "outputs": { "main": ["m"] } }"#,
    );
    let o = morphrt(&["check", &scene]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("`gains` has 4 entries but 2 of them have an input: entries 1, 3 (for in1, in3) scale nothing"),
        "{err}"
    );
    assert!(err.contains("at nodes[1].params.gains, node `m`"), "{err}");
}

/// `render` refuses output names that are not `.wav` (`-o x.mp3`), nor
/// `.flac` (a FLAC, see `flac_out`).
#[test]
fn render_refuses_output_names_that_are_not_wav() {
    let dir = temp_dir("w-ext");
    for name in ["x.mp3", "x.ogg", "noext"] {
        let out = dir.join(name);
        let o = morphrt(&[
            "render",
            "scenes/drone.json",
            "-o",
            out.to_str().unwrap(),
            "-d",
            "0.1s",
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(".wav or .wave"), "{name}: {err}");
        let hint = format!("-o {}", out.with_extension("wav").display());
        assert!(err.contains(&hint), "{name}: {err}");
        assert!(!out.exists(), "{name}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "nothing written"
        );
    }
    for name in ["a.wav", "b.WAV", "c.Wave"] {
        let out = dir.join(name);
        let o = morphrt(&[
            "render",
            "scenes/drone.json",
            "-o",
            out.to_str().unwrap(),
            "-d",
            "0.1s",
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(out.exists(), "{name}");
    }
    // A device takes the stream whatever its name.
    let o = morphrt(&[
        "render",
        "scenes/drone.json",
        "-o",
        "/dev/null",
        "-d",
        "0.1s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A scene's `duration` and `run --duration` share one limit, and a duration past it is a located error.
#[test]
fn one_duration_limit_with_a_located_error() {
    let dir = temp_dir("w-duration");
    let text = r#"{ "version": "1.0", "duration": "1e30s",
  "nodes": [ { "id": "a", "op": "sine" } ], "outputs": { "main": ["a"] } }"#;
    let scene = write(&dir, "long.json", text);
    let o = morphrt(&["check", &scene, "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let d = json(&o)["diagnostics"][0].clone();
    assert_eq!(d["path"], "duration");
    let (line, col) = position(text, "\"1e30s\"");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(line), Some(col))
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("duration limit of 24 h (86400 s, 4147200000 samples at 48000 Hz)"),
        "{d}"
    );
    let out = dir.join("out.wav");
    let o = morphrt(&["render", &scene, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!out.exists());
    for args in [
        vec![
            "render",
            "scenes/drone.json",
            "-o",
            out.to_str().unwrap(),
            "-d",
            "25h",
        ],
        vec![
            "run",
            "scenes/drone.json",
            "--device",
            "clock",
            "--no-journal",
            "--no-watch",
            "--duration",
            "25h",
        ],
    ] {
        let o = morphrt(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("duration limit of 24 h (86400 s"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// Scene numbers may be written as strings (`"sample_rate": "48000"`), as params may.
#[test]
fn scene_numbers_may_be_written_as_strings() {
    let dir = temp_dir("w-strings");
    let scene = write(
        &dir,
        "s.json",
        r#"{ "version": "1.0", "sample_rate": "44100", "seed": "3",
  "profile_config": { "block_size": "256", "oversampling": "4", "max_iterations": "16" },
  "nodes": [ { "id": "a", "op": "noise" } ], "outputs": { "main": ["a"] } }"#,
    );
    let o = morphrt(&["check", &scene, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["sample_rate"], 44100);
    assert_eq!(v["block_size"], 256);
    assert_eq!(v["seed"], 3);

    // Node params follow the same rule both ways: an integer param takes
    // "512", and an enum whose choices are numbers takes 4.
    let params = |fft_size: &str, oversampling: &str| {
        let scene = write(
            &dir,
            "p.json",
            &format!(
                r#"{{ "version": "1.0", "nodes": [ {{ "id": "a", "op": "sine" }},
  {{ "id": "g", "op": "spectral_gate", "params": {{ "fft_size": {fft_size}, "hop": 128 }} }},
  {{ "id": "s", "op": "saturator", "params": {{ "oversampling": {oversampling} }} }} ],
  "edges": [ {{ "from": "a", "to": "g" }}, {{ "from": "g", "to": "s" }} ], "outputs": {{ "main": ["s"] }} }}"#
            ),
        );
        let o = morphrt(&["check", &scene, "--json"]);
        assert!(
            o.status.success(),
            "{fft_size} {oversampling}: {}",
            stderr(&o)
        );
        let v = json(&o);
        let node = |id: &str| {
            v["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["id"] == id)
                .unwrap()["params"]
                .clone()
        };
        (
            node("g")["fft_size"].clone(),
            node("s")["oversampling"].clone(),
        )
    };
    let quoted = params("\"512\"", "\"4\"");
    assert_eq!(quoted, params("512", "4"));
    assert_eq!(quoted, (serde_json::json!(512), serde_json::json!("4")));
}

/// A strict scene of four convolutions with the 2 s stereo hall IR in
/// parallel: about 4 × 12.5 µs per sample by the nominal figures, slower
/// than real time.
fn heavy_convolution_scene(dir: &Path) -> String {
    let convs: Vec<String> = (0..4)
        .map(|i| format!(r#"{{ "id": "verb{i}", "op": "convolution", "params": {{ "ir": "@resource:hall.wav", "mix": 0.25 }} }}"#))
        .collect();
    let edges: Vec<String> = (0..4)
        .flat_map(|i| {
            [
                format!(r#"{{ "from": "src", "to": "verb{i}" }}"#),
                format!(r#"{{ "from": "verb{i}", "to": "out:in{i}" }}"#),
            ]
        })
        .collect();
    write(
        dir,
        "heavy.json",
        &format!(
            r#"{{ "version": "1.0", "profile": "strict", "duration": "10s",
  "nodes": [ {{ "id": "src", "op": "saw", "params": {{ "freq": "110Hz", "amp": 0.2 }} }}, {},
             {{ "id": "out", "op": "mix" }} ],
  "edges": [ {} ], "outputs": {{ "main": ["out"] }} }}"#,
            convs.join(", "),
            edges.join(", ")
        ),
    )
}

/// `check` and `render` warn when a strict render is estimated slower than real time.
#[test]
fn check_and_render_warn_when_the_estimate_is_slower_than_real_time() {
    let dir = temp_dir("w-slow");
    let scene = heavy_convolution_scene(&dir);
    let resources = common::root().join("resources");
    let resources = resources.to_str().unwrap();
    let o = morphrt(&["check", &scene, "--resources", resources]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("real time: a 10 s render may take ~"), "{err}");
    assert!(err.contains("(convolution)"), "{err}");
    assert!(err.contains("subnormal"), "strict: {err}");
    let table = stdout(&o);
    assert!(table.contains("ns/sample"), "{table}");
    assert!(table.contains("estimated cost:"), "{table}");
    let v = json(&morphrt(&[
        "check",
        &scene,
        "--resources",
        resources,
        "--json",
    ]));
    assert!(v["estimated_rtf"].as_f64().unwrap() < 1.0, "{v}");
    assert!(v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["message"].as_str().unwrap().contains("real time")));
    // repro's partitioned convolution is far cheaper: no warning.
    let o = morphrt(&[
        "check",
        &scene,
        "--resources",
        resources,
        "--profile",
        "repro",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("real time"), "{}", stderr(&o));
    // A tiny scene, even strict, is far faster than real time.
    let o = morphrt(&["check", "scenes/drone.json", "--profile", "strict"]);
    assert!(!stderr(&o).contains("real time"), "{}", stderr(&o));

    // render warns before it starts, about its own length.
    let out = dir.join("o.wav");
    let o = morphrt(&[
        "render",
        &scene,
        "--resources",
        resources,
        "-d",
        "0.05s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("real time: a 0.05 s render may take"), "{err}");
    assert!(
        err.find("real time").unwrap() < err.find("rendered").unwrap(),
        "the warning comes before the render: {err}"
    );
}

/// An event that sets an oscillator's `freq` above Nyquist is warned at
/// compile, at the event, once for the node however many such events it
/// has (it plays the alias: 30 kHz at 48 kHz sounds at 18 kHz); an event
/// in range draws nothing.
#[test]
fn an_event_setting_a_frequency_above_nyquist_is_warned_once_per_node() {
    let dir = temp_dir("event-alias");
    let scene = write(
        &dir,
        "s.json",
        r#"{"version": "1.0", "nodes": [
              {"id": "o", "op": "sine", "params": {"freq": "440Hz", "amp": 0.2}},
              {"id": "fine", "op": "sine", "params": {"freq": "440Hz", "amp": 0.2}}],
            "outputs": {"main": ["o", "fine"]},
            "events": [
              {"time": "0.5s", "node": "o", "param": "freq", "value": "30kHz"},
              {"time": "0.7s", "node": "o", "param": "freq", "value": "40kHz"},
              {"time": "0.5s", "node": "fine", "param": "freq", "value": "20kHz"}]}"#,
    );
    let o = morphrt(&["check", &scene]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(err.matches("an event sets `freq`").count(), 1, "{err}");
    assert!(
        err.contains("an event sets `freq` 30000 Hz is above Nyquist (24000 Hz at 48000 Hz)"),
        "{err}"
    );
    assert!(err.contains("node `o`"), "{err}");
    assert!(!err.contains("node `fine`"), "{err}");
}

/// The numbers in `text` after `word`, up to the first character that is
/// not part of a number.
fn number_after(text: &str, word: &str) -> f64 {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("`{word}` in {text}"))
        + word.len();
    let digits: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after `{word}` in {text}"))
}

/// A sequencer whose steps (MIDI notes as Hz) drive an oscillator's
/// `freq` past Nyquist is warned at compile, once for the pair, at the
/// first such step, naming the sequencer, the step, its value, the Hz and
/// the alias played (steps 140 and 200 play 21,420 Hz and 13,456 Hz at
/// 48 kHz); `check` and `render` say it alike. In-range steps draw nothing.
#[test]
fn sequencer_steps_driving_a_frequency_above_nyquist_are_warned_once_at_compile() {
    let dir = temp_dir("sequencer-alias");
    let scene = |steps: &str| {
        format!(
            r#"{{"version": "1.0", "duration": "0.25s", "nodes": [
              {{"id": "seq", "op": "sequencer", "params": {{"steps": {steps}, "rate": "50ms", "output": "hz"}}}},
              {{"id": "osc", "op": "sine", "params": {{"freq": 0, "amp": 0.2}}}}],
            "edges": [{{"from": "seq:value", "to": "osc:freq"}}],
            "outputs": {{"main": ["osc"]}}}}"#
        )
    };
    let loud = write(&dir, "loud.json", &scene("[60, 140, null, 200]"));
    let out = dir.join("out.wav");
    let runs = [
        morphrt(&["check", &loud]),
        morphrt(&["render", &loud, "-o", out.to_str().unwrap()]),
    ];
    // The oracle: equal temperament, A4 = 440 Hz on note 69, and the alias
    // of a frequency f at 48 kHz, |f − 48000 · round(f / 48000)|.
    let hz = |n: f64| 440.0 * libm::exp2((n - 69.0) / 12.0);
    let alias = |f: f64| (f - 48_000.0 * (f / 48_000.0).round()).abs();
    assert!((alias(hz(140.0)) - 21_420.5).abs() < 0.1);
    assert!((alias(hz(200.0)) - 13_456.0).abs() < 0.1);
    for o in &runs {
        let err = stderr(o);
        assert!(o.status.success(), "{err}");
        assert_eq!(err.matches("into `osc:freq` sets").count(), 1, "{err}");
        assert!(err.contains("node `seq`"), "{err}");
        assert!(
            err.contains("step 1 (140) into `osc:freq` sets `freq` "),
            "{err}"
        );
        assert!(
            (number_after(&err, "sets `freq` ") - hz(140.0)).abs() < 1e-6,
            "{err}"
        );
        assert!(
            err.contains("above Nyquist (24000 Hz at 48000 Hz)"),
            "{err}"
        );
        assert!(
            (number_after(&err, "plays its alias, ") - alias(hz(140.0))).abs() < 1e-6,
            "{err}"
        );
        assert!(err.contains("(so do steps 3 (200))"), "{err}");
    }
    // In range (the highest, note 127, is 12,543 Hz): nothing to say.
    let fine = write(&dir, "fine.json", &scene("[60, 127, null, 100]"));
    let o = morphrt(&["check", &fine]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("Nyquist"), "{err}");
}
