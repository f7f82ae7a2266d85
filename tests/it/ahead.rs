//! `render --threads N`: half of a wide sum rendered ahead on a thread of
//! its own writes the same bytes as one thread, in every profile and at
//! every block size, reports a NaN in that half as one thread does, and is
//! not used where something but time moves what the half plays.

use crate::support as common;
use std::path::Path;

/// `render SCENE --hash -v ARGS…` at `threads` (the WAV in `dir`): its
/// hash, whether it rendered a part ahead (`-v` says so), and its stderr.
fn rendered(dir: &Path, scene: &Path, threads: &str, args: &[&str]) -> (String, bool, String) {
    let stem = scene.file_stem().unwrap().to_string_lossy();
    let tag = args.join("_").replace(['/', '.'], "_");
    let out = dir.join(format!("{stem}-{threads}-{tag}.wav"));
    let mut all = vec!["--hash", "-v", "--threads", threads];
    all.extend_from_slice(args);
    let o = common::render(scene, &out, &all);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    let hash = common::stdout(&o).trim().to_string();
    assert!(hash.len() >= 64, "a hash: {hash}");
    let cut = err
        .lines()
        .any(|l| l.starts_with("ahead: ") && !l.starts_with("ahead: nothing"));
    (hash, cut, err)
}

/// The render's NaN/Inf warning, if it printed one.
fn nan_line(err: &str) -> Option<String> {
    err.lines()
        .find(|l| l.contains("produced NaN/Inf"))
        .map(str::to_string)
}

/// `n` noise → bandpass chains summed by a gain, the first chain's source
/// given as `first` (a node object with id `src0`).
fn chains(n: usize, first: &str, extra: &str) -> String {
    let mut nodes = vec![first.to_string()];
    let mut edges = Vec::new();
    for k in 0..n {
        if k > 0 {
            nodes.push(format!(
                r#"{{ "id": "src{k}", "op": "noise", "params": {{ "amp": 0.25 }} }}"#
            ));
        }
        nodes.push(format!(
            r#"{{ "id": "bp{k}", "op": "biquad", "params": {{ "mode": "bandpass", "cutoff": "{}Hz", "q": 10 }} }}"#,
            200 + 150 * k
        ));
        edges.push(format!(r#"{{ "from": "src{k}", "to": "bp{k}" }}"#));
        edges.push(format!(r#"{{ "from": "bp{k}", "to": "sum" }}"#));
    }
    nodes.push(r#"{ "id": "sum", "op": "gain", "params": { "gain": 0.5 } }"#.to_string());
    format!(
        r#"{{ "version": "1.0", "seed": 7, "sample_rate": 48000, "nodes": [{}], "edges": [{}], "outputs": {{ "main": ["sum"] }}{extra} }}"#,
        nodes.join(", "),
        edges.join(", ")
    )
}

const NOISE: &str = r#"{ "id": "src0", "op": "noise", "params": { "amp": 0.25 } }"#;

#[test]
fn half_of_a_wide_sum_rendered_ahead_writes_the_same_bytes_in_every_profile_and_block_size() {
    let dir = common::temp_dir("same");
    let w4 = common::root().join("scenes/bench/w4.json");
    for profile in ["strict", "repro", "live"] {
        for (block, duration) in [("1", "0.1s"), ("64", "0.3s"), ("4096", "0.3s")] {
            let args = ["--profile", profile, "--block-size", block, "-d", duration];
            let (one, cut, _) = rendered(&dir, &w4, "1", &args);
            assert!(!cut, "one thread renders nothing ahead");
            for threads in ["2", "3"] {
                let (hash, cut, err) = rendered(&dir, &w4, threads, &args);
                assert!(cut, "{profile} block {block}: {err}");
                assert_eq!(hash, one, "{profile} at block {block}, {threads} threads");
            }
        }
    }
    // Many sines into a filter, cut near the middle of its 256 inputs:
    // under live the rest's sines run their steady path onto the part's
    // sum (its first edge), on one thread or beside a pool's.
    let w1 = common::root().join("scenes/bench/w1.json");
    for profile in ["repro", "live"] {
        for (block, duration) in [("1", "0.05s"), ("64", "0.3s"), ("4096", "0.3s")] {
            let args = ["--profile", profile, "--block-size", block, "-d", duration];
            let (one, _, _) = rendered(&dir, &w1, "1", &args);
            for threads in ["2", "3"] {
                let (hash, cut, err) = rendered(&dir, &w1, threads, &args);
                assert!(cut && err.contains("of the 256 inputs of `lp`"), "{err}");
                assert_eq!(
                    hash, one,
                    "W1 {profile} at block {block}, {threads} threads"
                );
            }
        }
    }
}

#[test]
fn a_nan_in_the_part_rendered_ahead_is_reported_as_on_one_thread() {
    // The first chain's source overflows f32 at its sixth gain of 1e6:
    // that node is silenced and named.
    let mut first = vec![r#"{ "id": "d", "op": "dc", "params": { "value": 1e6 } }"#.to_string()];
    let mut links = Vec::new();
    let mut prev = "d".to_string();
    for k in 1..=6 {
        let id = if k == 6 {
            "src0".to_string()
        } else {
            format!("g{k}")
        };
        first.push(format!(
            r#"{{ "id": "{id}", "op": "gain", "params": {{ "gain": 1e6 }} }}"#
        ));
        links.push(format!(r#"{{ "from": "{prev}", "to": "{id}" }}"#));
        prev = id;
    }
    let text = chains(16, &first.join(", "), "").replacen(
        r#""edges": ["#,
        &format!(r#""edges": [{}, "#, links.join(", ")),
        1,
    );
    let dir = common::temp_dir("ahead-nan");
    let scene = dir.join("nan.json");
    std::fs::write(&scene, text).unwrap();
    for profile in ["strict", "live"] {
        let args = ["--profile", profile, "-d", "0.3s"];
        let (one, _, err1) = rendered(&dir, &scene, "1", &args);
        let (two, cut, err2) = rendered(&dir, &scene, "2", &args);
        assert!(cut, "{err2}");
        assert!(
            nan_line(&err1).expect(&err1).contains("node `src0`"),
            "{err1}"
        );
        assert_eq!(
            nan_line(&err2).expect(&err2),
            nan_line(&err1).expect(&err1),
            "{profile}"
        );
        assert_eq!(two, one, "{profile}");
    }
}

#[test]
fn nothing_renders_ahead_where_events_controls_voices_feedback_latency_or_unreadable_inputs_are() {
    let dir = common::temp_dir("ahead-not");
    let plain = dir.join("plain.json");
    std::fs::write(&plain, chains(16, NOISE, "")).unwrap();
    let (one, _, _) = rendered(&dir, &plain, "1", &["-d", "0.2s"]);
    let (two, cut, err) = rendered(&dir, &plain, "2", &["-d", "0.2s"]);
    assert!(cut, "sixteen chains are cut: {err}");
    assert_eq!(two, one);
    // An event on a node of the first half: what that half plays is no
    // longer a function of time alone.
    let events = dir.join("events.json");
    let event =
        r#", "events": [ { "time": "0.1s", "node": "bp0", "param": "cutoff", "value": "900Hz" } ]"#;
    std::fs::write(&events, chains(16, NOISE, event)).unwrap();
    let (one, _, _) = rendered(&dir, &events, "1", &["-d", "0.2s"]);
    let (two, cut, err) = rendered(&dir, &events, "2", &["-d", "0.2s"]);
    assert!(!cut, "a scene with events is not cut: {err}");
    assert_eq!(two, one);
    // A feedback edge on the first half, and a limiter (latency) there.
    let feedback = chains(16, NOISE, "").replacen(
        r#""edges": ["#,
        r#""edges": [{ "from": "bp1", "to": "bp0", "delay": "10ms" }, "#,
        1,
    );
    let limited = chains(16, NOISE, "")
        .replacen(
            r#"{ "id": "bp0","#,
            r#"{ "id": "lim", "op": "limiter" }, { "id": "bp0","#,
            1,
        )
        .replacen(
            r#"{ "from": "src0", "to": "bp0" }"#,
            r#"{ "from": "src0", "to": "lim" }, { "from": "lim", "to": "bp0" }"#,
            1,
        );
    // A control a MIDI controller could move, and a voice module (its
    // voices sound only when played).
    let controlled = chains(
        16,
        NOISE,
        r#", "controls": [ { "midi": { "cc": 74 }, "node": "bp0", "param": "cutoff", "min": "100Hz", "max": "8kHz" } ]"#,
    );
    let voiced = chains(
        16,
        NOISE,
        r#", "modules": [ { "id": "pad", "voices": 2, "note": { "pitch": "osc.freq", "gate": "env.gate" },
            "nodes": [ { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.1 } },
                       { "id": "env", "op": "adsr" }, { "id": "vca", "op": "multiply" } ] } ]"#,
    )
    .replacen(
        r#""edges": ["#,
        r#""edges": [{ "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" }, { "from": "pad", "to": "sum" }, "#,
        1,
    );
    for (name, text) in [
        ("feedback", feedback),
        ("latency", limited),
        ("controls", controlled),
        ("a voice module", voiced),
    ] {
        let scene = dir.join(format!("{}.json", name.replace(' ', "-")));
        std::fs::write(&scene, text).unwrap();
        let (one, _, _) = rendered(&dir, &scene, "1", &["-d", "0.2s"]);
        let (two, cut, err) = rendered(&dir, &scene, "2", &["-d", "0.2s"]);
        assert!(!cut, "a scene with {name} is not cut: {err}");
        assert_eq!(two, one, "{name}");
    }
    // An `input` node in the rest (the part ahead must hold them all),
    // and an input read from standard input (it could not be read again).
    let input = dir.join("in.wav");
    common::write_mono_f32(&input, &tone(14_400));
    let inputs = dir.join("inputs.json");
    let mic = r#"{ "id": "src9", "op": "input", "params": { "channel": 0 } }"#;
    let late = chains(16, NOISE, "").replacen(
        r#"{ "id": "src9", "op": "noise", "params": { "amp": 0.25 } }"#,
        mic,
        1,
    );
    assert!(late.contains(mic));
    std::fs::write(&inputs, late).unwrap();
    let args = ["-d", "0.2s", "--input", input.to_str().unwrap()];
    let (one, _, _) = rendered(&dir, &inputs, "1", &args);
    let (two, cut, err) = rendered(&dir, &inputs, "2", &args);
    assert!(!cut, "an input node in the rest: {err}");
    assert_eq!(two, one);
    let first = dir.join("first.json");
    std::fs::write(&first, chains(16, &mic.replace("src9", "src0"), "")).unwrap();
    let piped = |threads: &str| {
        let out = dir.join(format!("piped-{threads}.wav"));
        let o = common::run_with_stdin(
            &[
                "render",
                first.to_str().unwrap(),
                "--input",
                "-",
                "-d",
                "0.2s",
                "-v",
                "--threads",
                threads,
                "-o",
                out.to_str().unwrap(),
            ],
            &std::fs::read(&input).unwrap(),
        );
        assert!(o.status.success(), "{}", common::stderr(&o));
        (std::fs::read(&out).unwrap(), common::stderr(&o))
    };
    let ((one, _), (two, err)) = (piped("1"), piped("2"));
    assert!(
        err.contains("ahead: nothing (the input is standard input); 2 threads play every block"),
        "standard input is read once: {err}"
    );
    assert!(two == one);
    // And `--no-ahead` turns it off.
    let (_, cut, err) = rendered(&dir, &plain, "2", &["-d", "0.2s", "--no-ahead"]);
    assert!(!cut);
    assert!(err.contains("ahead: nothing (--no-ahead)"), "{err}");
}

#[test]
fn check_threads_says_what_render_puts_ahead() {
    let o = common::morphrt(&["check", "scenes/bench/w4.json", "--threads", "2"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains(
            "render: the first 32 of the 64 inputs of `out` (and what feeds them) render ahead"
        ) && common::stdout(&o).contains(" ns/sample: 1.99x on two threads)"),
        "{}",
        common::stdout(&o)
    );
    let json = |scene: &str, threads: &str| -> serde_json::Value {
        let o = common::morphrt(&["check", scene, "--threads", threads, "--json"]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        v["threads"]["render_ahead"].clone()
    };
    let w4 = json("scenes/bench/w4.json", "2");
    assert_eq!(
        (
            w4["sum"].as_str(),
            w4["taken"].as_u64(),
            w4["edges"].as_u64()
        ),
        (Some("out"), Some(32), Some(64))
    );
    // The estimates: the part ahead is what check gives its nodes (the
    // first 32 noises and bandpasses), the whole every node's.
    let o = common::morphrt(&["check", "scenes/bench/w4.json", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let cost = |ahead: bool| -> f64 {
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| {
                let id = n["id"].as_str().unwrap();
                let k: Option<u32> = id.trim_start_matches(['n', 'b', 'p']).parse().ok();
                !ahead || k.is_some_and(|k| k < 32)
            })
            .map(|n| n["cost_ns_per_sample"].as_f64().unwrap())
            .sum()
    };
    let (part, total) = (
        w4["part_ns_per_sample"].as_f64().unwrap(),
        w4["cost_ns_per_sample"].as_f64().unwrap(),
    );
    assert!((part - cost(true)).abs() < 1e-9, "{part} {}", cost(true));
    assert!(
        (total - cost(false)).abs() < 1e-9,
        "{total} {}",
        cost(false)
    );
    let speedup = w4["expected_speedup"].as_f64().unwrap();
    assert_eq!(speedup, total / part.max(total - part));
    assert!(speedup > 1.9, "{speedup}");
    assert!(json("scenes/bench/w4.json", "1").is_null());
    assert!(json("scenes/dub-chain.json", "2").is_null());
    // And why nothing is put ahead.
    for (scene, threads, why) in [
        ("scenes/bench/w4.json", "1", "one thread"),
        (
            "scenes/dub-chain.json",
            "2",
            "the scene has events, controls or latency, or more than 8192 nodes",
        ),
        (
            "scenes/drone.json",
            "2",
            "no part of the scene is cut off as GUIDE.md (Threads) says, or none pays",
        ),
    ] {
        let o = common::morphrt(&["check", scene, "--threads", threads]);
        assert!(
            common::stdout(&o).contains(&format!("render: nothing ahead ({why})")),
            "{scene}: {}",
            common::stdout(&o)
        );
        let o = common::morphrt(&["check", scene, "--threads", threads, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        assert_eq!(v["threads"]["render_not_ahead"], why, "{scene}");
    }
    let o = common::morphrt(&["check", "scenes/bench/w4.json", "--threads", "2", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert!(v["threads"]["render_not_ahead"].is_null(), "{v}");
}

/// `chains(16)` changed by `edit` (on the scene as JSON).
fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&chains(16, NOISE, "")).unwrap();
    edit(&mut v);
    v.to_string()
}

/// The node `id` of scene `v`.
fn node<'a>(v: &'a mut serde_json::Value, id: &str) -> &'a mut serde_json::Value {
    v["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["id"] == id)
        .unwrap()
}

/// A chain of gains of 1e6 from a dc of 1e6 (or from `source`) to `to`.
fn overflowing(v: &mut serde_json::Value, source: serde_json::Value, to: &[&str]) {
    let mut nodes = vec![source];
    let mut links = Vec::new();
    let mut prev = "d".to_string();
    for k in 1..=5 {
        nodes.push(
            serde_json::json!({ "id": format!("g{k}"), "op": "gain", "params": { "gain": 1e6 } }),
        );
        links.push(serde_json::json!({ "from": prev, "to": format!("g{k}") }));
        prev = format!("g{k}");
    }
    v["nodes"].as_array_mut().unwrap().extend(nodes);
    let edges = v["edges"].as_array_mut().unwrap();
    edges.retain(|e| !to.contains(&e["to"].as_str().unwrap()));
    edges.extend(links);
    for t in to {
        edges.push(serde_json::json!({ "from": prev, "to": t }));
    }
}

#[test]
fn the_cut_keeps_the_summing_order_the_live_bus_and_each_node_s_settings_or_is_not_made() {
    let dir = common::temp_dir("kept");
    let gain = |v: &mut serde_json::Value, id: &str, g: f64| {
        node(v, id)["params"] = serde_json::json!({ "gain": g })
    };
    let cases: Vec<(&str, String, &[&str], bool)> = vec![
        // Ids sorting before the rest's input would be summed before it.
        (
            "ids",
            chains(16, NOISE, "").replace("\"bp", "\"a"),
            &["--profile", "strict"],
            true,
        ),
        (
            "ids",
            chains(16, NOISE, "").replace("\"bp", "\"A"),
            &["--profile", "repro"],
            true,
        ),
        // A partial sum above 1 under live: the part's bus is not clamped.
        (
            "loud",
            edited(|v| {
                for k in 0..16 {
                    node(v, &format!("bp{k}"))["params"] =
                        serde_json::json!({ "mode": "lowpass", "cutoff": "2000Hz", "q": 0.7 });
                    if k > 0 {
                        node(v, &format!("src{k}"))["params"]["amp"] = 1.into();
                    }
                }
                node(v, "src0")["params"]["amp"] = 1.into();
                gain(v, "sum", 0.05);
            }),
            &["--profile", "live"],
            true,
        ),
        // The sum at its own precision: the cut's nodes would not be.
        (
            "precision",
            edited(|v| {
                node(v, "sum")["profile_overrides"] = serde_json::json!({ "precision": "f64" })
            }),
            &["--profile", "repro"],
            false,
        ),
        // A sine that overflows f32 near its peaks, at a block size that
        // does not divide the chunks: its recoveries fall on the same
        // blocks.
        (
            "peaks",
            edited(|v| {
                overflowing(
                    v,
                    serde_json::json!({ "id": "d", "op": "sine", "params": { "freq": "37Hz", "amp": 1 } }),
                    &["g6"],
                );
                let nodes = v["nodes"].as_array_mut().unwrap();
                nodes.push(
                    serde_json::json!({ "id": "g6", "op": "gain", "params": { "gain": 1e6 } }),
                );
                v["edges"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|e| e["to"] != "bp0" || e["from"] == "g6");
                v["edges"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({ "from": "g6", "to": "bp0" }));
                gain(v, "bp0", 1000.0);
                node(v, "bp0")["op"] = "gain".into();
            }),
            &["--profile", "repro", "--block-size", "1000"],
            true,
        ),
    ];
    for (name, text, args, cuts) in cases {
        let scene = dir.join(format!("{name}.json"));
        std::fs::write(&scene, &text).unwrap();
        let mut all = vec!["-d", "0.2s"];
        all.extend_from_slice(args);
        let (one, _, _) = rendered(&dir, &scene, "1", &all);
        let (two, cut, err) = rendered(&dir, &scene, "2", &all);
        assert_eq!(cut, cuts, "{name} {args:?}: {err}");
        assert_eq!(two, one, "{name} {args:?}");
    }
}

#[test]
fn a_partial_sum_that_overflows_renders_the_whole_scene_again() {
    let dir = common::temp_dir("overflow");
    // Two members of 2e38 each: their f32 sum overflows, which the whole
    // scene reports at the sum's node.
    let text = edited(|v| {
        overflowing(
            v,
            serde_json::json!({ "id": "d", "op": "dc", "params": { "value": 1e6 } }),
            &["bp0", "bp1"],
        );
        for id in ["bp0", "bp1"] {
            node(v, id)["op"] = "gain".into();
            node(v, id)["params"] = serde_json::json!({ "gain": 200 });
        }
    });
    let scene = dir.join("over.json");
    std::fs::write(&scene, text).unwrap();
    for profile in ["strict", "repro"] {
        let args = ["-d", "0.2s", "--profile", profile];
        let (one, _, err1) = rendered(&dir, &scene, "1", &args);
        let (two, cut, err2) = rendered(&dir, &scene, "2", &args);
        assert!(cut, "{err2}");
        assert!(err2.contains("rendering the whole scene again"), "{err2}");
        // Under strict the sum (4e38 · 0.5) is in f32's range, the partial
        // sum alone is not; under repro the sum's node overflows.
        assert_eq!(nan_line(&err2), nan_line(&err1), "{profile}");
        assert_eq!(
            nan_line(&err1).is_some_and(|l| l.contains("node `sum`")),
            profile == "repro",
            "{err1}"
        );
        assert_eq!(two, one, "{profile}");
        // The pass that played is the whole scene's: nothing went ahead.
        let o = common::render(
            &scene,
            &dir.join(format!("over-{profile}.wav")),
            &[
                "--json",
                "--threads",
                "2",
                "-d",
                "0.2s",
                "--profile",
                profile,
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        assert_eq!(
            (&v["threads"], &v["ahead"]),
            (&2.into(), &serde_json::Value::Null),
            "{v}"
        );
    }
}

/// `render` uses every core unless told otherwise, and `--json` says how
/// many threads it rendered with and what it put ahead.
#[test]
fn render_uses_every_core_by_default_and_says_what_it_put_ahead() {
    let dir = common::temp_dir("cores");
    let scene = Path::new("scenes/bench/w4.json");
    let cores = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(1024);
    let json = |threads: &[&str]| {
        let out = dir.join(format!("w4{}.wav", threads.join("")));
        let mut args = vec!["--json", "-d", "0.1s"];
        args.extend_from_slice(threads);
        let o = common::render(scene, &out, &args);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        // No pass was given up: the key is there, null.
        assert_eq!(
            v.get("ahead_given_up"),
            Some(&serde_json::Value::Null),
            "{v}"
        );
        (v["threads"].as_u64().unwrap() as usize, v["ahead"].clone())
    };
    let half = serde_json::json!({ "sum": "out", "taken": 32, "edges": 64 });
    let (n, ahead) = json(&[]);
    assert_eq!(n, cores);
    assert_eq!(
        ahead,
        if cores >= 2 {
            half.clone()
        } else {
            serde_json::Value::Null
        }
    );
    assert_eq!(json(&["--threads", "1"]), (1, serde_json::Value::Null));
    assert_eq!(json(&["--threads", "3"]), (3, half));
}

#[test]
fn a_nan_in_both_parts_in_one_block_renders_the_whole_scene_again_to_name_the_same_node() {
    // Two chains of gains of 1e6 that overflow f32 in the first block:
    // one into the first half (declared first, one node longer), one into
    // the rest (declared last). Which the whole scene names depends on the
    // order its engine runs them in.
    let mut v: serde_json::Value = serde_json::from_str(&chains(16, NOISE, "")).unwrap();
    let chain = |prefix: &str, extra: bool, to: &str| {
        let mut nodes = vec![
            serde_json::json!({ "id": format!("{prefix}dc"), "op": "dc", "params": { "value": 1e6 } }),
        ];
        let mut ids = vec![format!("{prefix}dc")];
        if extra {
            nodes.push(serde_json::json!({ "id": format!("{prefix}p1"), "op": "gain", "params": { "gain": 1 } }));
            ids.push(format!("{prefix}p1"));
        }
        for k in 1..=6 {
            nodes.push(serde_json::json!({ "id": format!("{prefix}g{k}"), "op": "gain", "params": { "gain": 1e6 } }));
            ids.push(format!("{prefix}g{k}"));
        }
        ids.push(to.to_string());
        let edges: Vec<serde_json::Value> = ids
            .windows(2)
            .map(|w| serde_json::json!({ "from": w[0], "to": w[1] }))
            .collect();
        (nodes, edges)
    };
    let (a_nodes, a_edges) = chain("a", true, "bp0");
    let (b_nodes, b_edges) = chain("b", false, "bp9");
    let nodes = v["nodes"].as_array_mut().unwrap();
    let rest: Vec<serde_json::Value> = std::mem::take(nodes);
    nodes.extend(a_nodes);
    nodes.extend(rest);
    nodes.extend(b_nodes);
    let edges = v["edges"].as_array_mut().unwrap();
    edges.retain(|e| e["to"] != "bp0" && e["to"] != "bp9");
    edges.extend(a_edges);
    edges.extend(b_edges);
    let dir = common::temp_dir("both");
    let scene = dir.join("both.json");
    std::fs::write(&scene, v.to_string()).unwrap();
    for profile in ["strict", "live"] {
        let args = ["-d", "0.2s", "--profile", profile];
        let (one, _, err1) = rendered(&dir, &scene, "1", &args);
        let (two, cut, err2) = rendered(&dir, &scene, "2", &args);
        assert!(cut, "{err2}");
        assert!(err2.contains("rendering the whole scene again"), "{err2}");
        assert!(nan_line(&err1).is_some(), "{err1}");
        assert_eq!(nan_line(&err2), nan_line(&err1), "{profile}");
        assert_eq!(two, one, "{profile}");
    }
}

#[test]
fn nothing_renders_ahead_into_standard_output_a_fifo_or_with_snapshots() {
    let dir = common::temp_dir("where");
    let w4 = common::root().join("scenes/bench/w4.json");
    let w4s = w4.to_str().unwrap();
    let (one, _, _) = rendered(&dir, &w4, "1", &["-d", "0.2s"]);
    // Standard output: the WAV there is what one thread writes.
    let file = dir.join("one.wav");
    let o = common::render(&w4, &file, &["-d", "0.2s", "--threads", "1", "-q"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::morphrt(&[
        "render",
        w4s,
        "-d",
        "0.2s",
        "--threads",
        "2",
        "-v",
        "-o",
        "-",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("ahead: nothing (the output is not a regular file)"),
        "{}",
        common::stderr(&o)
    );
    assert_eq!(o.stdout, std::fs::read(&file).unwrap(), "standard output");
    // A FIFO, read to its end by a thread.
    let fifo = dir.join("out.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path in the test's own directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let o = common::render(&w4, &fifo, &["-d", "0.2s", "--threads", "2", "-v"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        !common::stderr(&o).contains("ahead: the first"),
        "{}",
        common::stderr(&o)
    );
    assert_eq!(
        reader.join().unwrap(),
        std::fs::read(&file).unwrap(),
        "a FIFO"
    );
    // Snapshots on the way, and a render resumed from one.
    let snap = dir.join("snap.json");
    let snap_s = snap.to_str().unwrap();
    let (two, cut, err) = rendered(
        &dir,
        &w4,
        "2",
        &[
            "-d",
            "0.2s",
            "--snapshot-at",
            "0.1s",
            "--snapshot-out",
            snap_s,
        ],
    );
    assert!(
        !cut && err.contains("ahead: nothing (--snapshot-at)"),
        "{err}"
    );
    assert_eq!(two, one);
    let (_, cut, err) = rendered(&dir, &w4, "2", &["-d", "0.1s", "--resume", snap_s]);
    assert!(!cut && err.contains("ahead: nothing (--resume)"), "{err}");
    // A scene with events, and one thread.
    let dub = common::root().join("scenes/dub-chain.json");
    let (_, cut, err) = rendered(&dir, &dub, "2", &["-d", "0.1s"]);
    assert!(
        !cut && err.contains("ahead: nothing (the scene has events, controls or latency"),
        "{err}"
    );
    let (_, cut, err) = rendered(&dir, &w4, "1", &["-d", "0.1s"]);
    assert!(
        !cut && err.contains("ahead: nothing (one thread); one thread plays every block"),
        "{err}"
    );
}

/// A mono test signal of `frames` frames (a sawtooth at ±0.25).
fn tone(frames: usize) -> Vec<f32> {
    (0..frames)
        .map(|k| ((k % 89) as f32 / 89.0 - 0.5) * 0.5)
        .collect()
}

/// A recording through an effects chain: an `input` node, a highpass, a
/// compressor and a reverb.
const CHAIN: &str = r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "mic", "op": "input", "params": { "channel": 0 } },
             { "id": "hp", "op": "biquad", "params": { "mode": "highpass", "cutoff": "80Hz", "q": 0.707 } },
             { "id": "comp", "op": "compressor", "params": { "threshold": "-20dB", "ratio": 4, "attack": "5ms", "release": "100ms" } },
             { "id": "room", "op": "reverb", "params": { "mix": 0.3 } } ],
  "edges": [ { "from": "mic", "to": "hp" }, { "from": "hp", "to": "comp" }, { "from": "comp", "to": "room" } ],
  "outputs": { "main": ["room:out", "room:out_r"] } }"#;

#[test]
fn a_chain_reading_the_input_renders_ahead_and_writes_the_same_bytes() {
    let dir = common::temp_dir("chain");
    let scene = dir.join("chain.json");
    std::fs::write(&scene, CHAIN).unwrap();
    let input = dir.join("rec.wav");
    common::write_mono_f32(&input, &tone(24_000));
    let wav = input.to_str().unwrap();
    for profile in ["strict", "repro", "live"] {
        for block in ["1", "64", "4096"] {
            // A given length, and the input's with the reverb's tail.
            for length in [&["-d", "0.3s"][..], &[]] {
                let mut args = vec!["--profile", profile, "--block-size", block, "--input", wav];
                args.extend_from_slice(length);
                let (one, cut, _) = rendered(&dir, &scene, "1", &args);
                assert!(!cut);
                for threads in ["2", "3"] {
                    let what = format!("{profile}, block {block}, {length:?}, {threads} threads");
                    let (hash, cut, err) = rendered(&dir, &scene, threads, &args);
                    assert!(
                        cut && err.contains(
                            "what feeds `room` (its input and what feeds that) renders ahead"
                        ),
                        "{what}: {err}"
                    );
                    assert_eq!(hash, one, "{what}");
                }
            }
        }
    }
    // An input at another rate: the part ahead converts it as one thread does.
    let slow = dir.join("rec-44k.wav");
    common::write_mono_f32_at(&slow, 44_100, &tone(22_050));
    let args = ["--profile", "live", "--input", slow.to_str().unwrap()];
    let (one, _, _) = rendered(&dir, &scene, "1", &args);
    let (two, cut, err) = rendered(&dir, &scene, "2", &args);
    assert!(cut && err.contains("44100 Hz → 48000 Hz"), "{err}");
    assert_eq!(two, one);
}

/// A NaN in two nodes of the rest in one block: cut off from what fed
/// them, their order there is not the whole scene's, so the render plays
/// the whole scene again on one engine (reading the input again) and
/// names the node one thread names.
#[test]
fn two_nans_in_one_block_of_a_part_render_the_whole_scene_again_with_its_input() {
    let dir = common::temp_dir("chain-nan");
    let mut nodes = vec![
        r#"{ "id": "mic", "op": "input", "params": { "channel": 0 } }"#.to_string(),
        r#"{ "id": "comp", "op": "compressor", "params": { "threshold": "-20dB", "ratio": 4 } }"#
            .to_string(),
    ];
    let mut edges = vec![r#"{ "from": "mic", "to": "comp" }"#.to_string()];
    // The input through seven gains of 1e6 (f32 overflows at the last),
    // into a reverb; a dc of 1e6 through six such gains on the side.
    // Gains of 1e6 `name1` … `name{count}` after `from`: the last's id.
    let mut gains = |from: &str, name: &str, count: usize| {
        let mut prev = from.to_string();
        for k in 1..=count {
            nodes.push(format!(
                r#"{{ "id": "{name}{k}", "op": "gain", "params": {{ "gain": 1e6 }} }}"#
            ));
            edges.push(format!(r#"{{ "from": "{prev}", "to": "{name}{k}" }}"#));
            prev = format!("{name}{k}");
        }
        prev
    };
    let last = gains("comp", "h", 7);
    let prev = gains("dc", "r", 6);
    nodes.push(r#"{ "id": "room", "op": "reverb", "params": { "mix": 0.3 } }"#.to_string());
    edges.push(format!(r#"{{ "from": "{last}", "to": "room" }}"#));
    nodes.push(r#"{ "id": "dc", "op": "dc", "params": { "value": 1e6 } }"#.to_string());
    let scene = dir.join("nan.json");
    std::fs::write(
        &scene,
        format!(
            r#"{{ "version": "1.0", "sample_rate": 48000, "nodes": [{}], "edges": [{}], "outputs": {{ "main": ["room:out", "{prev}"] }} }}"#,
            nodes.join(", "),
            edges.join(", ")
        ),
    )
    .unwrap();
    let input = dir.join("rec.wav");
    common::write_mono_f32(&input, &tone(24_000));
    let args = [
        "--profile",
        "repro",
        "-d",
        "0.3s",
        "--input",
        input.to_str().unwrap(),
    ];
    let (one, _, err_one) = rendered(&dir, &scene, "1", &args);
    let (two, cut, err) = rendered(&dir, &scene, "2", &args);
    assert!(cut, "{err}");
    assert!(
        err.contains("rendering the whole scene again on one engine"),
        "{err}"
    );
    assert!(
        err.contains(
            "ahead: nothing (what the part ahead gave was not what the whole scene plays)"
        ),
        "{err}"
    );
    assert_eq!(two, one);
    // `--json` says which cut was given up, and that none played.
    let o = common::render(
        &scene,
        &dir.join("json.wav"),
        &[&args[..], &["--threads", "2", "--json"]].concat(),
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_eq!(v["ahead"], serde_json::Value::Null, "{v}");
    let sum = v["ahead_given_up"]["sum"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"));
    let count = |key: &str| v["ahead_given_up"][key].as_u64().unwrap_or(0);
    assert!(
        0 < count("taken") && count("taken") <= count("edges"),
        "{v}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("ahead: ") && l.contains(&format!("`{sum}`"))),
        "{sum}: {err}"
    );
    let line = nan_line(&err_one);
    assert!(
        line.as_deref().is_some_and(|l| l.contains("`r6`")),
        "{err_one}"
    );
    assert_eq!(nan_line(&err), line);
}
