//! `--threads`: in every profile and at any block size, the same bytes at
//! every thread count; a live session at two threads replays at one,
//! two and three.

use crate::support as common;
use crate::support::counting::{counts, realtime};
use morphrt::engine::{Engine, Workers};
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::offline::render_hash;
use morphrt::profile::Profile;

/// Frames of a render at `block`: short at block 1, which is slow.
fn frames(block: usize) -> u64 {
    if block == 1 {
        2_400
    } else {
        14_400
    }
}

/// The hash of `frames` of `path` under `profile` at `block`, its nodes
/// spread over `workers` (every level of two nodes or more) or on one
/// thread.
fn hash(
    path: &std::path::Path,
    profile: Profile,
    block: usize,
    workers: Option<&Workers>,
) -> String {
    let scene = morphrt::scene::load_file(path).unwrap();
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(profile),
            block_size: Some(block),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap();
    let mut engine = Engine::new(plan);
    engine.set_workers(workers.cloned());
    render_hash(common::fed(engine), frames(block))
}

#[test]
fn every_shipped_scene_hashes_the_same_at_one_two_three_and_eight_threads() {
    let pools: Vec<Workers> = [2, 3, 8]
        .into_iter()
        .map(|n| {
            let w = Workers::new(n);
            w.set_min_work_ns(0);
            w
        })
        .collect();
    for path in common::shipped_scenes() {
        for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
            for block in [1, 64, 4096] {
                let one = hash(&path, profile, block, None);
                for w in &pools {
                    assert_eq!(
                        hash(&path, profile, block, Some(w)),
                        one,
                        "{} under {profile:?} at block {block}, {} threads",
                        path.display(),
                        w.threads()
                    );
                }
            }
        }
    }
}

/// `render SCENE --hash --duration 0.3s ARGS…` at `threads`, every level
/// of two nodes or more spread: its hash line.
fn cli_hash(scene: &str, threads: &str, args: &[&str]) -> String {
    let dir = common::temp_dir("cli-hash");
    let out = dir.join(format!("{}-{threads}.wav", scene.replace('/', "-")));
    let mut all = vec![
        "--hash",
        "--duration",
        "0.3s",
        "--threads",
        threads,
        "--thread-min-work-ns",
        "0",
    ];
    all.extend_from_slice(args);
    let o = common::render(common::root().join(scene), &out, &all);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    assert!(text.contains(char::is_alphanumeric), "a hash: {text}");
    text
}

#[test]
fn render_threads_gives_the_same_hash_for_voices_feedback_input_events_and_sine_spans() {
    let dir = common::temp_dir("cli-input");
    let input = dir.join("in.wav");
    let tone: Vec<f32> = (0..14_400)
        .map(|k| ((k % 97) as f32 / 97.0 - 0.5) * 0.5)
        .collect();
    common::write_mono_f32(&input, &tone);
    let input_args = ["--input", input.to_str().unwrap()];
    for (scene, args) in [
        ("scenes/poly-pad.json", &[][..]),
        ("scenes/ping-pong.json", &[][..]),
        ("scenes/pan-sweep.json", &["--profile", "strict"][..]),
        ("scenes/dub-chain.json", &["--block-size", "1"][..]),
        ("scenes/input-hall.json", &input_args[..]),
        // 256 steady live sines into one filter: blocks cut into spans
        // (of the whole sum, and of the rest's half when half of it is
        // rendered ahead, at three threads and more).
        (
            "scenes/bench/w1.json",
            &["--profile", "live", "--block-size", "1024", "--no-ahead"][..],
        ),
        (
            "scenes/bench/w1.json",
            &["--profile", "live", "--block-size", "1024"][..],
        ),
    ] {
        let one = cli_hash(scene, "1", args);
        for threads in ["2", "3", "8"] {
            assert_eq!(
                cli_hash(scene, threads, args),
                one,
                "{scene} at {threads} threads"
            );
        }
    }
}

/// Every command that takes `--threads` refuses a count that is not a
/// whole number from 1 to 1024, saying so (a negative one was taken for an
/// option, with a tip that did not work; a word was "invalid digit").
#[test]
fn every_command_refuses_a_thread_count_outside_1_to_1024_and_says_what_is_valid() {
    let dir = common::temp_dir("zero-threads");
    let valid = "is not a thread count: give a whole number from 1 to 1024";
    for threads in ["0", "1025", "-1", "two", "1.5", ""] {
        let o = common::render(
            common::root().join("scenes/drone.json"),
            &dir.join("o.wav"),
            &["--threads", threads],
        );
        assert_eq!(o.status.code(), Some(2), "{threads}");
        assert!(
            common::stderr(&o).contains(&format!("`{threads}` {valid}")),
            "{threads}: {}",
            common::stderr(&o)
        );
    }
    assert!(!dir.join("o.wav").exists());
    for command in [
        &["check", "scenes/drone.json"][..],
        &["bench", "scenes/drone.json", "-d", "0.1s"],
        &[
            "run",
            "scenes/drone.json",
            "--device",
            "clock",
            "--duration",
            "0.1s",
        ],
        &["replay", "no.jsonl", "-o", "o.wav"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--threads", "-2"]);
        let o = common::morphrt(&args);
        assert_eq!(o.status.code(), Some(2), "{command:?}");
        assert!(
            common::stderr(&o).contains(&format!("`-2` {valid}")),
            "{command:?}: {}",
            common::stderr(&o)
        );
    }
}

/// A system that will not start as many threads as asked (here an
/// address space too small for their stacks) gets an error that says so,
/// not a panic, and no file.
#[test]
fn threads_the_system_refuses_are_an_error_that_says_how_many_it_started() {
    use std::os::unix::process::CommandExt;
    let dir = common::temp_dir("refused-threads");
    let out = dir.join("o.wav");
    // A pool of every thread, and one of all but the part rendered ahead.
    for (scene, more, workers) in [
        ("scenes/drone.json", &["--no-ahead"][..], 999),
        ("scenes/bench/w4.json", &[][..], 998),
    ] {
        let mut c = common::bin();
        c.args(["render", "--threads", "1000", "-d", "0.1s", "-q", "-o"])
            .arg(&out)
            .args(more)
            .arg(common::root().join(scene));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            c.pre_exec(|| {
                // 1000 threads' stacks alone take about 2 GB.
                let space = libc::rlimit {
                    rlim_cur: 512 << 20,
                    rlim_max: 512 << 20,
                };
                libc::setrlimit(libc::RLIMIT_AS, &space);
                Ok(())
            });
        }
        let o = c.output().expect("run morphrt");
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{scene}: {err}");
        assert!(
            err.starts_with("error: cannot start the worker threads: the system started ")
                && err.contains(&format!(
                    " of the {workers} worker threads asked for, then refused one: "
                ))
                && err.contains("; ask for fewer with `--threads`"),
            "{scene}: {err}"
        );
        assert!(!out.exists());
        assert!(
            common::partials(&dir).is_empty(),
            "{:?}",
            common::partials(&dir)
        );
    }
}

#[test]
fn a_session_at_two_threads_with_an_edit_and_a_switch_replays_at_one_two_and_three() {
    let dir = common::temp_dir("two-threads");
    let text = std::fs::read_to_string(common::root().join("scenes/dub-chain.json")).unwrap();
    let path = dir.join("dub.json");
    std::fs::write(&path, &text).unwrap();
    let journal = dir.join("j").join("dub.jsonl");
    let capture = dir.join("cap.wav");
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--threads",
            "2",
            "--thread-min-work-ns",
            "0",
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    common::save_as_editor(
        &path,
        &text.replace("\"gains\": [0.5, 0.5]", "\"gains\": [0.4, 0.6]"),
        std::time::Duration::from_millis(500),
    );
    common::wait_line(&lines, "edit applied", &mut log);
    let all = common::press_then_quit(&mut child, &lines, log, &[("l", "switched repro → live")]);
    // `replay` renders the journal on every core, on one thread, or on
    // three, the same bytes each time, and says on how many.
    let said = common::assert_replays_with(&journal, &capture, &all, &[]);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let on = |n: usize| match n {
        1 => String::new(),
        n => format!(" on {n} threads"),
    };
    let summary = |said: &str| {
        said.lines()
            .find(|l| l.starts_with("replayed "))
            .unwrap_or_else(|| panic!("no summary: {said}"))
            .to_string()
    };
    assert_eq!(summary(&said).contains(" threads"), cores > 1, "{said}");
    assert!(summary(&said).contains(&on(cores)), "{said}");
    for threads in [1, 3] {
        let n = threads.to_string();
        let args = ["--threads", &n, "--thread-min-work-ns", "0"];
        let said = common::assert_replays_with(&journal, &capture, &all, &args);
        assert_eq!(summary(&said).contains(" threads"), threads > 1, "{said}");
        assert!(summary(&said).contains(&on(threads)), "{said}");
    }
}

/// A job another thread runs on the pool between two callbacks (as the
/// control side fast-forwards an incoming engine) has no deadline: a
/// worker slow in it counts no xrun, although it starts well inside the
/// budget of the callback before (a second).
#[test]
fn a_worker_slow_in_a_job_between_callbacks_counts_no_xrun() {
    let text = std::fs::read_to_string(common::root().join("scenes/dub-chain.json")).unwrap();
    let workers = Workers::new(3);
    workers.set_min_work_ns(0);
    let xruns = |w: &Workers| (1..3).map(|k| w.xruns(k)).collect::<Vec<_>>();
    let mut playing = common::engine(&text, Some(Profile::Strict), 64);
    playing.set_workers(Some(workers.clone()));
    let mut player = common::player(playing, 240);
    player.fill(&mut vec![0.0f32; 48_000 * 2]);
    let before = xruns(&workers);
    // Worker 2 sleeps 1.5 s after each step it claims, past the end of
    // that callback's budget.
    workers.delay_worker(2, 1_500_000_000);
    let mut other = common::engine(&text, Some(Profile::Strict), 64);
    other.set_workers(Some(workers.clone()));
    let steps = workers.steps_run(2);
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while workers.steps_run(2) == steps && std::time::Instant::now() < give_up {
        other.process_block(64);
    }
    workers.delay_worker(0, 0);
    assert!(workers.steps_run(2) > steps, "worker 2 ran a step");
    assert_eq!(xruns(&workers), before, "no xrun outside a callback");
}

/// The real callback path (`PlayerCell::fill`) of a scene with branches,
/// of a scene with voices and of one whose steady sines are summed in
/// spans, their nodes, voices and spans spread over two threads: the
/// callback's thread never allocates or frees.
#[test]
fn the_callback_with_workers_never_allocates() {
    use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
    use std::sync::Arc;
    let workers = Workers::new(2);
    workers.set_min_work_ns(0);
    for name in ["dub-chain", "poly-pad", "bench/w1"] {
        let path = common::root().join(format!("scenes/{name}.json"));
        let scene = morphrt::scene::load_file(&path).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(Profile::Live),
                block_size: Some(64),
                ..morphrt::host::files::resources::compile_options()
            },
        )
        .unwrap();
        let mut engine = Engine::new(plan);
        engine.set_workers(Some(workers.clone()));
        let meters = Arc::new(Meters::default());
        let player = Player::new(
            engine,
            2,
            None,
            240,
            meters.clone(),
            Arc::new(Switches::default()),
            std::time::Instant::now(),
        );
        let cell = PlayerCell::new(player);
        let mut buf = vec![0.0f32; 48 * 2];
        let before = counts();
        realtime(|| {
            for _ in 0..4_000 {
                cell.fill(&mut buf);
            }
        });
        let after = counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (0, 0),
            "{name}: the callback allocated or freed"
        );
        assert!(meters.clock.load(std::sync::atomic::Ordering::Relaxed) >= 4_000 * 48);
    }
}

#[test]
fn check_threads_deals_every_node_once_and_promises_a_speed_up_only_where_the_engine_spreads() {
    let o = common::morphrt(&["check", "scenes/dub-chain.json", "--threads", "2", "--json"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let t = &v["threads"];
    let mut dealt: Vec<String> = t["levels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l.as_array().unwrap().iter())
        .map(|n| {
            assert!(n["thread"].as_u64().unwrap() < 2);
            n["node"].as_str().unwrap().to_string()
        })
        .collect();
    dealt.sort();
    let text = std::fs::read_to_string(common::root().join("scenes/dub-chain.json")).unwrap();
    let scene: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut ids: Vec<String> = scene["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    assert_eq!(dealt, ids);
    let (total, critical) = (
        t["cost_ns_per_sample"].as_f64().unwrap(),
        t["critical_path_ns_per_sample"].as_f64().unwrap(),
    );
    assert!(critical < total);
    let speedup = t["expected_speedup"].as_f64().unwrap();
    assert!(
        (1.0..=2.0).contains(&speedup) && speedup <= total / critical + 1e-9,
        "{t}"
    );
    // Levels whose work is under the pool's threshold are on thread 0.
    let levels = t["levels"].as_array().unwrap();
    for l in t["one_thread_levels"].as_array().unwrap() {
        let level = levels[l.as_u64().unwrap() as usize].as_array().unwrap();
        assert!(level.iter().all(|n| n["thread"] == 0), "{t}");
    }
    // dub-chain's levels of more than one node are all under the
    // threshold: nothing is promised.
    let alone: Vec<u64> = t["one_thread_levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap())
        .collect();
    for (l, level) in levels.iter().enumerate() {
        if level.as_array().unwrap().len() > 1 {
            assert!(alone.contains(&(l as u64)), "level {l}: {t}");
        }
    }
    assert_eq!(speedup, 1.0, "{t}");
    // W1's 256 sines are one level far over the threshold: split evenly
    // (its lowpass is a level of its own, one thread's).
    let o = common::morphrt(&["check", "scenes/bench/w1.json", "--threads", "2", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let w1 = &v["threads"];
    assert_eq!(w1["one_thread_levels"], serde_json::json!([1]), "{w1}");
    assert!(w1["expected_speedup"].as_f64().unwrap() > 1.9, "{w1}");
    assert_eq!(w1["lane_groups"][0]["how"], "parts", "{w1}");
    // W4's 64 bandpasses at its block of 128: splitting them in two would
    // save half their work, under the pool's threshold, so the engine's
    // pool keeps them on one thread and nothing is promised (a render
    // into a file cuts the scene in two instead).
    let o = common::morphrt(&["check", "scenes/bench/w4.json", "--threads", "2", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let w4 = &v["threads"];
    let bandpasses = &w4["lane_groups"][1];
    assert_eq!(bandpasses["members"].as_array().unwrap().len(), 64, "{w4}");
    assert_eq!(bandpasses["how"], "one_thread", "{w4}");
    let (saves, needs) = (
        bandpasses["saves_ns"].as_f64().unwrap(),
        bandpasses["threshold_ns"].as_f64().unwrap(),
    );
    assert!(saves < needs && saves > 0.9 * needs, "{w4}");
    assert_eq!(w4["expected_speedup"], 1.0, "{w4}");
    assert_eq!(w4["render_ahead"]["taken"], 32, "{w4}");
    assert_eq!(
        (w4["block_frames"].as_u64(), &w4["min_work_from"]),
        (Some(128), &serde_json::json!("default")),
        "{w4}"
    );
    // At a block of 64 the plan is for 64 frames: the bandpasses save half
    // as much a block as at 128.
    let o = common::morphrt(&[
        "check",
        "scenes/bench/w4.json",
        "--threads",
        "2",
        "--json",
        "--block-size",
        "64",
    ]);
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let at64 = &v["threads"];
    assert_eq!(at64["block_frames"], 64, "{at64}");
    let saves64 = at64["lane_groups"][1]["saves_ns"].as_f64().unwrap();
    assert!(
        (saves64 / saves - 0.5).abs() < 1e-9,
        "{saves64} against {saves}"
    );
    let o = common::morphrt(&["check", "scenes/dub-chain.json", "--threads", "2"]);
    let out = common::stdout(&o);
    assert!(
        out.contains("threads: 2, ") && out.contains("expected speed-up at 2 threads"),
        "{out}"
    );
}

/// `bench --threads` shows the plan at the pool's threshold it runs with:
/// W4's two lane groups stay on one thread at the default, and are split
/// in two parts each with `--thread-min-work-ns 0`.
#[test]
fn bench_threads_shows_the_plan_at_the_threshold_it_runs_with() {
    let bench = |extra: &[&str]| {
        let mut args = vec!["bench", "scenes/bench/w4.json", "-d", "0.5s", "--runs", "1"];
        args.extend_from_slice(&["--threads", "2"]);
        args.extend_from_slice(extra);
        let o = common::morphrt(&args);
        assert!(o.status.success(), "{}", common::stderr(&o));
        format!("{}{}", common::stdout(&o), common::stderr(&o))
    };
    let groups = |text: &str| {
        text.lines()
            .filter(|l| l.trim_start().starts_with("lane group `"))
            .map(|l| l.split("): ").nth(1).unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    let default = bench(&[]);
    let hows = groups(&default);
    assert_eq!(hows.len(), 2, "{default}");
    assert!(
        hows.iter().all(|h| h.starts_with("one thread")),
        "{default}"
    );
    assert!(
        default.contains("expected speed-up at 2 threads: 1.00x"),
        "{default}"
    );
    let zero = bench(&["--thread-min-work-ns", "0"]);
    let hows = groups(&zero);
    assert_eq!(hows.len(), 2, "{zero}");
    assert!(
        hows.iter().all(|h| h.starts_with("2 parts of up to 32")),
        "{zero}"
    );
}
