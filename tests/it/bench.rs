//! `morphrt bench` and `morphrt calibrate` through the real binary: parity
//! gates timing (a wrong golden or a too-tight bound times nothing and
//! exits 1), the `--json` shape, `--ci` exit codes, `run`'s per-node
//! summary, and the calibration that `run --block-size auto` picks up.
//! Short durations; no test asserts a wall-clock time (the `--ci` bounds
//! are impossible or trivial on purpose).

use crate::support as common;

use common::{root, stderr, stdout, temp_dir};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// Runs `morphrt` with a private cache directory (calibrations).
fn morphrt_with_cache(args: &[&str], cache: &Path) -> Output {
    common::bin()
        .args(args)
        .current_dir(root())
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("run morphrt")
}

fn bench(args: &[&str]) -> Output {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    common::morphrt(&all)
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", stdout(o), stderr(o)))
}

/// A copy of `scenes/drone.json` with a golden beside it the way the
/// repository lays them out (`T/scenes/drone.json`, `T/golden/scenes/drone.json`),
/// the golden changed by `doctor`.
fn doctored(name: &str, doctor: impl FnOnce(&mut Value)) -> std::path::PathBuf {
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("scenes")).unwrap();
    std::fs::create_dir_all(dir.join("golden/scenes")).unwrap();
    let scene = dir.join("scenes/drone.json");
    std::fs::copy(root().join("scenes/drone.json"), &scene).unwrap();
    let mut golden: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("golden/scenes/drone.json")).unwrap(),
    )
    .unwrap();
    doctor(&mut golden);
    std::fs::write(
        dir.join("golden/scenes/drone.json"),
        serde_json::to_string_pretty(&golden).unwrap(),
    )
    .unwrap();
    scene
}

fn flip_first_hex_digit(v: &mut Value) {
    let sha = v["sha256"].as_str().unwrap().to_string();
    let first = if sha.starts_with('0') { "1" } else { "0" };
    v["sha256"] = Value::String(format!("{first}{}", &sha[1..]));
}

#[test]
fn strict_bench_checks_the_golden_then_reports_every_field_as_json() {
    let o = bench(&[
        "scenes/drone.json",
        "--profile",
        "strict",
        "-d",
        "0.5s",
        "--runs",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&o);
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("golden/scenes/drone.json")).unwrap(),
    )
    .unwrap();

    let k = &r["key"];
    assert_eq!(k["scene"], "scenes/drone.json");
    assert_eq!(k["scene_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(k["profile"], "strict");
    assert_eq!(k["block_size"], 64);
    assert_eq!(k["sample_rate"], 48000);
    assert_eq!(
        k["build"],
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    assert_eq!(k["version"], env!("CARGO_PKG_VERSION"));
    assert!(!k["cpu"].as_str().unwrap().is_empty());
    assert!(!k["cpu_level"].as_str().unwrap().is_empty());
    assert!(k["cores"].as_u64().unwrap() >= 1);

    let p = &r["parity"];
    assert_eq!(p["passed"], true);
    assert_eq!(p["profile"], "strict");
    assert_eq!(p["method"], "golden-sha256");
    assert_eq!(p["frames"], golden["frames"]);
    assert_eq!(p["strict_sha256"], golden["sha256"]);
    assert_eq!(p["expected_sha256"], golden["sha256"]);
    assert!(p["golden"].as_str().unwrap().ends_with("drone.json"));

    let t = &r["timing"];
    assert_eq!(t["runs"], 2);
    assert_eq!(t["frames_per_run"], 24000);
    assert_eq!(t["seconds_per_run"], 0.5);
    let runs: Vec<f64> = t["rtf"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|x| *x > 0.0));
    let (min, median) = (
        t["rtf"]["min"].as_f64().unwrap(),
        t["rtf"]["median"].as_f64().unwrap(),
    );
    assert_eq!(min, runs[0].min(runs[1]));
    assert!(min <= median);
    let b = &t["block"];
    let deadline = b["deadline_us"].as_f64().unwrap();
    assert!((deadline - 64.0 / 48000.0 * 1e6).abs() < 1e-6);
    let q: Vec<f64> = ["p50_us", "p95_us", "p99_us", "max_us"]
        .iter()
        .map(|f| b[*f].as_f64().unwrap())
        .collect();
    assert!(q.windows(2).all(|w| w[0] <= w[1]), "{q:?}");
    assert_eq!(b["blocks"], 2 * 375, "24000 frames in blocks of 64, twice");
    assert!(b["over_deadline"].as_u64().unwrap() <= 750);

    let scene: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("scenes/drone.json")).unwrap())
            .unwrap();
    let nodes = t["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), scene["nodes"].as_array().unwrap().len());
    let shares: Vec<f64> = nodes.iter().map(|n| n["share"].as_f64().unwrap()).collect();
    assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert!(
        shares.windows(2).all(|w| w[0] >= w[1]),
        "most expensive first"
    );
    for n in nodes {
        assert!(n["id"].is_string() && n["op"].is_string());
        assert!(n["ns_per_sample"].as_f64().unwrap() >= 0.0);
        assert_eq!(n["iterations"], 0, "drone has no iterative solver");
    }
    let ops = t["ops"].as_array().unwrap();
    let counted: u64 = ops.iter().map(|o| o["nodes"].as_u64().unwrap()).sum();
    assert_eq!(
        counted as usize,
        nodes.len(),
        "every node in one operator row"
    );
    let op_shares: f64 = ops.iter().map(|o| o["share"].as_f64().unwrap()).sum();
    assert!((op_shares - 1.0).abs() < 1e-9);
    let outside = t["outside_nodes_share"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&outside));
    assert_eq!(t["nan_events"], 0);
    assert!(r["ci"].is_null());
}

#[test]
fn the_table_names_the_key_parity_timing_and_nodes() {
    let o = bench(&["scenes/drone.json", "-d", "0.2s", "--runs", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "key: repro, block 128, 48000 Hz; scene sha256 ",
        "parity: ok — repro vs strict (which equals its golden",
        "real-time factor  min ",
        "deadline 2666.7",
        "nodes (a separate run with per-node timers):",
        "outside the nodes",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
}

/// Bench checks parity before timing. A golden whose hash is
/// wrong makes strict bench refuse: exit 1, nothing timed.
#[test]
fn a_wrong_golden_makes_bench_refuse_to_time() {
    let scene = doctored("wrong-golden", flip_first_hex_digit);
    let s = scene.to_str().unwrap();
    let o = bench(&[s, "--profile", "strict", "-d", "0.2s", "--runs", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("parity: FAILED — strict render differs from its golden"));
    assert!(stdout(&o).contains("timing: not run"));
    assert!(stderr(&o).contains("parity failed, nothing was timed"));
    assert!(
        !stderr(&o).contains("timing: run"),
        "a failed parity check times nothing"
    );

    let o = bench(&[s, "--profile", "strict", "-d", "0.2s", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["parity"]["passed"], false);
    assert_ne!(r["parity"]["strict_sha256"], r["parity"]["expected_sha256"]);
    assert!(r["timing"].is_null());

    // The strict reference of a repro bench is checked against the golden too.
    let o = bench(&[s, "--profile", "repro", "-d", "0.2s", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(json(&o)["timing"].is_null());

    // The same scene beside the true golden benches fine.
    std::fs::copy(
        root().join("golden/scenes/drone.json"),
        scene.parent().unwrap().join("../golden/scenes/drone.json"),
    )
    .unwrap();
    let o = bench(&[s, "--profile", "strict", "-d", "0.2s", "--runs", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A bound the profile cannot meet, given with `--golden`, fails repro
/// and live but not strict (whose hash is right).
#[test]
fn a_parity_bound_too_tight_fails_repro_and_live() {
    let scene = doctored("tight-bound", |g| {
        g["parity"]["repro"] = 1e-12.into();
        g["parity"]["live"] = 1e-12.into();
    });
    let golden = temp_dir("tight-bound-golden").join("g.json");
    std::fs::rename(
        scene.parent().unwrap().join("../golden/scenes/drone.json"),
        &golden,
    )
    .unwrap();
    let (s, g) = (scene.to_str().unwrap(), golden.to_str().unwrap());
    for profile in ["repro", "live"] {
        let o = bench(&[
            s,
            "--golden",
            g,
            "--profile",
            profile,
            "-d",
            "0.2s",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(1), "{profile}: {}", stderr(&o));
        let r = json(&o);
        assert_eq!(r["parity"]["passed"], false);
        assert_eq!(r["parity"]["method"], "relative-rms");
        assert_eq!(r["parity"]["bound"], 1e-12);
        assert!(r["parity"]["relative_rms"].as_f64().unwrap() > 1e-12);
        assert!(r["timing"].is_null());
        assert!(stderr(&o).contains("above its bound"), "{}", stderr(&o));
    }
    let o = bench(&[
        s,
        "--golden",
        g,
        "--profile",
        "strict",
        "-d",
        "0.2s",
        "--runs",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Without --golden the scene has none (it was moved away): default bounds.
    let o = bench(&[
        s,
        "--profile",
        "repro",
        "-d",
        "0.2s",
        "--runs",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&o);
    assert!(r["parity"]["golden"].is_null());
    assert_eq!(r["parity"]["bound"], 1e-3);
}

#[test]
fn strict_without_a_golden_is_checked_across_block_sizes_and_timed() {
    let o = bench(&[
        "scenes/bench/w3.json",
        "--profile",
        "strict",
        "-d",
        "0.2s",
        "--runs",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["parity"]["method"], "block-size");
    assert!(r["parity"]["golden"].is_null());
    assert_eq!(r["parity"]["strict_sha256"], r["parity"]["expected_sha256"]);
    assert!(r["parity"]["summary"]
        .as_str()
        .unwrap()
        .contains("no golden"));
    assert_eq!(r["timing"]["runs"], 1);
}

#[test]
fn ci_exits_1_on_a_missed_bound_and_says_by_how_much() {
    let base = ["scenes/drone.json", "-d", "0.2s", "--runs", "1", "--ci"];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        bench(&a)
    };
    // Nothing renders a billion times faster than real time.
    let o = with(&["--assert-rtf", "1e9"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is below --assert-rtf 1000000000: short by"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("ci: FAILED"));
    // No block takes under a picosecond.
    let o = with(&["--assert-p99-us", "0.000001", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("over by"), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["ci"]["passed"], false);
    let c = &r["ci"]["checks"][0];
    assert_eq!(c["name"], "block_p99_us");
    assert_eq!(c["passed"], false);
    let miss = c["miss"].as_f64().unwrap();
    assert!((miss - (c["value"].as_f64().unwrap() - 0.000001)).abs() < 1e-9);
    // Trivial bounds pass.
    let o = with(&["--assert-rtf", "0.001", "--assert-p99-us", "1e9", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["ci"]["passed"], true);
    assert_eq!(r["ci"]["checks"].as_array().unwrap().len(), 2);
    assert!(r["ci"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["miss"] == 0.0));
    // One miss among passes still fails.
    let o = with(&["--assert-rtf", "0.001", "--assert-p99-us", "0.000001"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn bad_bench_input_exits_2() {
    // An assertion without --ci is a usage error.
    let o = bench(&["scenes/drone.json", "--assert-rtf", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = bench(&["scenes/nope.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = bench(&["scenes/drone.json", "--golden", "golden/scenes/nope.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot read golden"), "{}", stderr(&o));
    let o = bench(&["scenes/drone.json", "--runs", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn calibrate_stores_a_block_size_that_run_auto_plays_with() {
    let cache = temp_dir("calibrate-cache");
    let run_auto = || run_auto_briefly("scenes/drone.json", &cache);
    // Before any calibration: a hint and the default block size.
    let o = run_auto();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no calibration for this scene on this machine; `morphrt calibrate"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("block 128"), "{}", stderr(&o));

    let o = calibrate_drone(&cache, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&o);
    let c = &r["calibration"];
    let blocks: Vec<u64> = c["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["block_size"].as_u64().unwrap())
        .collect();
    assert_eq!(blocks, [32, 64, 128, 256]);
    let chosen = c["block_size"].as_u64().unwrap();
    assert!(blocks.contains(&chosen));
    // The choice follows the rule from the numbers it reports.
    let first_ok = c["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["p99_us"].as_f64().unwrap() < 0.5 * b["deadline_us"].as_f64().unwrap());
    match first_ok {
        Some(b) => {
            assert_eq!(b["block_size"].as_u64(), Some(chosen));
            assert_eq!(c["meets_target"], true);
        }
        None => assert_eq!((chosen, &c["meets_target"]), (256, &Value::Bool(false))),
    }
    assert_eq!(c["scene_sha256"].as_str().unwrap().len(), 64);
    let stored = r["stored"].as_str().unwrap();
    assert!(Path::new(stored).starts_with(&cache), "{stored}");
    assert!(Path::new(stored).is_file());

    let o = run_auto();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "block size {chosen} (auto: calibrated for this scene and machine"
        )),
        "{err}"
    );
    assert!(err.contains(&format!("block {chosen}")), "{err}");

    // An edited scene is another scene: its calibration does not apply.
    let dir = temp_dir("calibrate-edited");
    std::fs::create_dir_all(dir.join("scenes")).unwrap();
    let edited = dir.join("scenes/drone.json");
    let text = std::fs::read_to_string(root().join("scenes/drone.json")).unwrap();
    std::fs::write(
        &edited,
        text.replacen("\"version\"", "\"duration\": \"3s\", \"version\"", 1),
    )
    .unwrap();
    let o = run_auto_briefly(edited.to_str().unwrap(), &cache);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no calibration"), "{}", stderr(&o));
}

#[test]
fn run_with_timing_on_ends_with_the_three_most_expensive_nodes() {
    // `t` turns per-node timing on (it is off by default).
    let o = common::run_with_stdin(
        &[
            "run",
            "scenes/drone.json",
            "--device",
            "clock",
            "--duration",
            "0.3s",
            "--no-watch",
            "--no-journal",
        ],
        b"t\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("nodes by time: "))
        .unwrap_or_else(|| panic!("no per-node summary in:\n{err}"));
    let entries: Vec<&str> = line["nodes by time: ".len()..].split(", ").collect();
    assert_eq!(entries.len(), 3, "{line}");
    let shares: Vec<f64> = entries
        .iter()
        .map(|e| {
            let pct = e.split(") ").nth(1).unwrap().split(" %").next().unwrap();
            pct.parse().unwrap()
        })
        .collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{line}");
    assert!(shares.iter().all(|s| *s > 0.0), "{line}");
}

/// A golden that covers no frames or more than a render may be (a damaged
/// `frames`) is refused with the range, rather than rendering for ever.
#[test]
fn a_golden_of_impossible_length_is_refused() {
    for frames in [0u64, u64::MAX] {
        let scene = doctored("golden-length", |g| g["frames"] = Value::from(frames));
        let golden = scene.parent().unwrap().join("../golden/scenes/drone.json");
        let g = golden.to_str().unwrap();
        let o = bench(&[
            scene.to_str().unwrap(),
            "--golden",
            g,
            "--profile",
            "strict",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("covers {frames} frames; a golden covers 1 … ")),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("drone.json"), "{}", stderr(&o));
    }
}

/// `run SCENE --block-size auto` for 0.1 s with `cache`.
fn run_auto_briefly(scene: &str, cache: &Path) -> Output {
    run_briefly(scene, &["--block-size", "auto"], cache)
}

/// `run` on the clock device for a moment, with the cache `cache` and
/// `args` after the scene.
fn run_briefly(scene: &str, args: &[&str], cache: &Path) -> Output {
    let mut all = vec![
        "run",
        scene,
        "--device",
        "clock",
        "--duration",
        "0.1s",
        "--no-watch",
        "--no-journal",
    ];
    all.extend_from_slice(args);
    morphrt_with_cache(&all, cache)
}

/// `calibrate scenes/drone.json` for 0.1 s, one run, with the cache
/// `cache` and `args`.
fn calibrate_drone(cache: &Path, args: &[&str]) -> Output {
    let mut all = vec![
        "calibrate",
        "scenes/drone.json",
        "-d",
        "0.1s",
        "--runs",
        "1",
    ];
    all.extend_from_slice(args);
    morphrt_with_cache(&all, cache)
}

/// `calibrate` measures the scene at its chosen block size on every thread
/// count up to the machine's cores (at most 8), each with three pool
/// thresholds, recommends by its rule, and `run` without `--threads` plays
/// with the stored count; `--threads` overrides it, and a damaged count is
/// warned about and not played.
#[test]
fn calibrate_measures_threads_and_run_plays_with_the_stored_count() {
    let cache = temp_dir("calibrate-threads");
    // With no calibration, `run` plays on one thread.
    let o = run_briefly("scenes/drone.json", &[], &cache);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("playing scenes/drone.json (repro) — "),
        "{err}"
    );
    assert!(!err.contains("(calibrated"), "{err}");
    let o = calibrate_drone(&cache, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c = json(&o)["calibration"].clone();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let runs = c["thread_runs"].as_array().unwrap();
    let counts: Vec<u64> = runs
        .iter()
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    let mut want = Vec::new();
    if cores >= 2 {
        want.push(1);
        for n in 2..=cores.min(8) as u64 {
            want.extend([n, n, n]);
        }
    }
    assert_eq!(counts, want);
    let p99 = |r: &Value| r["p99_us"].as_f64().unwrap();
    for r in runs {
        assert_eq!(r["min_work_ns"].is_null(), r["threads"] == 1, "{r}");
        assert!(p99(r) > 0.0, "{r}");
    }
    // The choice follows the rule from the numbers it reports.
    let (threads, min_work) = match (
        runs.iter().find(|r| r["threads"] == 1),
        runs.iter()
            .filter(|r| r["threads"].as_u64() > Some(1))
            .min_by(|a, b| p99(a).total_cmp(&p99(b))),
    ) {
        (Some(one), Some(best)) if p99(best) < 0.9 * p99(one) => (
            best["threads"].as_u64().unwrap(),
            best["min_work_ns"].clone(),
        ),
        _ => (1, Value::Null),
    };
    assert_eq!(
        (c["threads"].as_u64().unwrap(), &c["min_work_ns"]),
        (threads, &min_work)
    );
    if cores >= 2 {
        assert!(c["handoff_ns"].as_f64().unwrap() > 0.0, "{c}");
        // Two threads are measured at 1, 4 and 16 times that hand-off.
        let h = c["handoff_ns"].as_f64().unwrap();
        let at_two: Vec<u64> = runs
            .iter()
            .filter(|r| r["threads"] == 2)
            .map(|r| r["min_work_ns"].as_u64().unwrap())
            .collect();
        let times = |m: f64| (h * m).round().max(1.0) as u64;
        assert_eq!(at_two, [times(1.0), times(4.0), times(16.0)], "{c}");
    }

    let o = run_briefly("scenes/drone.json", &[], &cache);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "threads {threads} (calibrated for this scene and machine"
        )),
        "{err}"
    );
    assert_eq!(
        err.contains(&format!(" on {threads} threads")),
        threads > 1,
        "{err}"
    );

    // The stored count and threshold are what `run` plays with.
    let store = cache.join("morphrt/calibration.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    v["entries"][0]["threads"] = Value::from(3);
    v["entries"][0]["min_work_ns"] = Value::from(0);
    std::fs::write(&store, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = run_briefly("scenes/drone.json", &[], &cache);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("threads 3 (calibrated"), "{err}");
    assert!(
        err.contains("playing scenes/drone.json (repro) on 3 threads"),
        "{err}"
    );
    assert!(
        err.contains("thread threshold 0.0 µs (calibrated for this scene and machine)"),
        "{err}"
    );
    // `--threads` wins over the store; asking for the stored count plays
    // with the stored threshold too.
    let o = run_briefly("scenes/drone.json", &["--threads", "2"], &cache);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("(calibrated"), "{err}");
    assert!(err.contains("(repro) on 2 threads"), "{err}");
    let o = run_briefly("scenes/drone.json", &["--threads", "3"], &cache);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("threads 3 (calibrated"), "{err}");
    assert!(
        err.contains("thread threshold 0.0 µs (calibrated for this scene and machine)"),
        "{err}"
    );
    // `check` shows the plan at the threshold `run` plays with.
    let plan = |args: &[&str]| {
        let mut all = vec!["check", "scenes/drone.json", "--json"];
        all.extend_from_slice(args);
        let o = morphrt_with_cache(&all, &cache);
        assert!(o.status.success(), "{}", stderr(&o));
        let t = json(&o)["threads"].clone();
        (
            t["min_work_ns"].as_u64().unwrap(),
            t["min_work_from"].clone(),
        )
    };
    assert_eq!(plan(&["--threads", "3"]), (0, Value::from("calibration")));
    assert_eq!(plan(&["--threads", "2"]), (20_000, Value::from("default")));
    assert_eq!(
        plan(&["--threads", "3", "--thread-min-work-ns", "7000"]),
        (7000, Value::from("option"))
    );
    let o = morphrt_with_cache(&["check", "scenes/drone.json", "--threads", "3"], &cache);
    assert!(
        stdout(&o).contains("the pool's threshold 0.0 µs, calibrated for this scene and machine)"),
        "{}",
        stdout(&o)
    );
    // `bench` times the pool at that threshold, and says so.
    let bench = |args: &[&str]| {
        let mut all = vec![
            "bench",
            "scenes/drone.json",
            "-d",
            "0.1s",
            "--runs",
            "1",
            "--json",
        ];
        all.extend_from_slice(args);
        let o = morphrt_with_cache(&all, &cache);
        assert!(o.status.success(), "{}", stderr(&o));
        (json(&o)["pool"].clone(), stderr(&o))
    };
    let (pool, err) = bench(&["--threads", "3"]);
    assert!(
        err.contains("the pool's threshold 0.0 µs, calibrated for this scene and machine)"),
        "{err}"
    );
    let want = |n: u64, ns: u64, from: &str| serde_json::json!({ "threads": n, "min_work_ns": ns, "min_work_from": from });
    assert_eq!(pool, want(3, 0, "calibration"));
    assert_eq!(bench(&["--threads", "2"]).0, want(2, 20_000, "default"));
    assert_eq!(
        bench(&["--threads", "3", "--thread-min-work-ns", "5"]).0,
        want(3, 5, "option")
    );
    assert_eq!(bench(&[]).0, Value::Null);
    // `render` at the calibrated count renders with that threshold too,
    // and says so; the bytes are one thread's.
    let out = cache.join("drone.wav");
    let render = |threads: &str, more: &[&str]| {
        let mut all = vec![
            "render",
            "scenes/drone.json",
            "-d",
            "0.5s",
            "--threads",
            threads,
            "--json",
            "-o",
            out.to_str().unwrap(),
        ];
        all.extend_from_slice(more);
        let o = morphrt_with_cache(&all, &cache);
        assert!(o.status.success(), "{}", stderr(&o));
        let said =
            stderr(&o).contains("thread threshold 0.0 µs (calibrated for this scene and machine)");
        (
            json(&o)["thread_min_work_ns"].clone(),
            said,
            std::fs::read(&out).unwrap(),
        )
    };
    let (ns, said, one) = render("1", &[]);
    assert_eq!((ns, said), (Value::Null, false));
    let (ns, said, three) = render("3", &["--no-ahead"]);
    assert_eq!((ns, said), (Value::from(0), true));
    assert!(one == three, "the bytes at three threads are one thread's");
    let (ns, said, two) = render("2", &["--no-ahead"]);
    assert_eq!((ns, said), (Value::from(20_000), false));
    assert!(one == two);
    let (ns, said, _) = render("3", &["--no-ahead", "--thread-min-work-ns", "5"]);
    assert_eq!((ns, said), (Value::from(5), false));
    // A damaged count is named and not played.
    v["entries"][0]["threads"] = Value::from(0);
    std::fs::write(&store, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = run_briefly("scenes/drone.json", &[], &cache);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("warning: threads 1 (cannot read calibrations"),
        "{err}"
    );
    assert!(
        err.contains("recommends 0 threads; a thread count is 1 … 65535"),
        "{err}"
    );
    assert!(
        err.contains("playing scenes/drone.json (repro) — "),
        "{err}"
    );
}

/// A render cut in two plays the rest on a pool of one thread fewer, with
/// the threshold `calibrate` stored for that count (and none on one
/// thread); uncut, its pool has every thread and takes that count's. The
/// bytes are one thread's each time.
#[test]
fn a_cut_render_plays_its_rest_with_the_threshold_calibrated_for_one_thread_fewer() {
    let cache = temp_dir("calibrate-cut");
    let scene = "scenes/bench/w4.json";
    let o = morphrt_with_cache(&["calibrate", scene, "-d", "0.1s", "--runs", "1"], &cache);
    assert!(o.status.success(), "{}", stderr(&o));
    let store = cache.join("morphrt/calibration.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    let out = cache.join("w4.wav");
    let mut store_at = |threads: u64| {
        v["entries"][0]["threads"] = Value::from(threads);
        v["entries"][0]["min_work_ns"] = Value::from(0);
        std::fs::write(&store, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    };
    // (whether it was cut, `thread_min_work_ns`, whether it said it, the bytes)
    let render = |threads: &str, more: &[&str]| {
        let mut all = vec![
            "render",
            scene,
            "-d",
            "0.2s",
            "--threads",
            threads,
            "--json",
            "-o",
        ];
        all.push(out.to_str().unwrap());
        all.extend_from_slice(more);
        let o = morphrt_with_cache(&all, &cache);
        assert!(o.status.success(), "{}", stderr(&o));
        let j = json(&o);
        let said =
            stderr(&o).contains("thread threshold 0.0 µs (calibrated for this scene and machine)");
        (
            !j["ahead"].is_null(),
            j["thread_min_work_ns"].clone(),
            said,
            std::fs::read(&out).unwrap(),
        )
    };
    let (_, _, _, one) = render("1", &[]);
    let check = |got: (bool, Value, bool, Vec<u8>), want: (bool, Value, bool)| {
        assert_eq!((got.0, got.1, got.2), want);
        assert!(got.3 == one, "the bytes are one thread's");
    };
    let default = Value::from(20_000);
    store_at(2);
    check(render("3", &[]), (true, Value::from(0), true));
    check(render("2", &[]), (true, Value::Null, false));
    check(render("2", &["--no-ahead"]), (false, Value::from(0), true));
    store_at(3);
    check(render("3", &[]), (true, default.clone(), false));
    check(render("3", &["--no-ahead"]), (false, Value::from(0), true));
    check(
        render("3", &["--thread-min-work-ns", "5"]),
        (true, Value::from(5), false),
    );
}

/// A stored calibration whose block size is damaged is not played (nor
/// refused as if `--block-size 0` had been typed): `run --block-size auto`
/// warns naming the store and plays the default.
#[test]
fn a_damaged_calibration_is_warned_about_and_not_played() {
    let cache = temp_dir("calibrate-damaged");
    let o = calibrate_drone(&cache, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let store = cache.join("morphrt/calibration.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    for block in [0u64, 100_000] {
        v["entries"][0]["block_size"] = Value::from(block);
        std::fs::write(&store, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let o = run_auto_briefly("scenes/drone.json", &cache);
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        assert!(err.contains("cannot read calibrations"), "{err}");
        assert!(
            err.contains(&format!(
                "recommends block size {block}; a block size is 1 … 8192"
            )),
            "{err}"
        );
        assert!(err.contains("calibration.json"), "{err}");
        assert!(err.contains("block 128"), "{err}");
    }
}

/// A golden with a byte that is not UTF-8 is located like any other JSON
/// error, not refused as a "stream" without a line.
#[test]
fn a_golden_byte_that_is_not_utf8_is_located() {
    let scene = doctored("golden-not-utf8", |_| {});
    let golden = scene.parent().unwrap().join("../golden/scenes/drone.json");
    let mut bytes = std::fs::read(&golden).unwrap();
    let at = bytes.iter().position(|b| *b == b'\n').unwrap() + 4;
    bytes[at] = 0xff;
    std::fs::write(&golden, bytes).unwrap();
    let o = bench(&[
        scene.to_str().unwrap(),
        "--golden",
        golden.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a scene golden"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("at line 2 column"), "{}", stderr(&o));
}

/// A calibration store with a byte that is not UTF-8 is located like any
/// other JSON error in run's warning, not called a "stream" without a line.
#[test]
fn a_calibration_store_byte_that_is_not_utf8_is_located() {
    let cache = temp_dir("calibrate-not-utf8");
    let store = cache.join("morphrt/calibration.json");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(&store, b"{\n  \"format\": \"morphrt-calibration\xff\"\n}\n").unwrap();
    let o = run_auto_briefly("scenes/drone.json", &cache);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("is not a calibration store"), "{err}");
    assert!(err.contains("at line 2 column"), "{err}");
}
