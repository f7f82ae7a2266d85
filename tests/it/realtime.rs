//! The engine's block loop never allocates or frees: every shipped scene,
//! every profile, odd block lengths, events and ramps, run under a counting
//! global allocator that only counts inside the real-time section.

use crate::support as common;

use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;

use crate::support::counting;
use counting::{counts, realtime};

#[test]
fn the_counter_catches_an_allocation() {
    let before = counts();
    realtime(|| drop(std::hint::black_box(vec![1u8; 16])));
    let after = counts();
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1));
}

#[test]
fn process_block_never_allocates_or_frees() {
    let blocks = 2000;
    for path in common::shipped_scenes() {
        let scene = morphrt::scene::load_file(&path).unwrap();
        for p in Profile::ALL {
            let plan = compile(
                &scene,
                &CompileOptions {
                    profile: Some(p),
                    seed: Some(1),
                    ..morphrt::host::files::resources::compile_options()
                },
            )
            .unwrap();
            let events: Vec<u64> = plan.events.iter().map(|ev| ev.sample).collect();
            let mut e = Engine::new(plan);
            let bs = e.block_size();
            let (a0, f0) = counts();
            realtime(|| {
                for k in 0..blocks {
                    // Whole blocks mostly, with odd lengths mixed in.
                    let n = if k % 7 == 3 { 1 + (k * 37) % bs } else { bs };
                    e.process_block(n);
                    std::hint::black_box(e.bus().get(0, 0));
                }
            });
            // Jump close to each of the scene's events (a restored state
            // with its clock moved; event cursors follow the clock) so every
            // event, its ramp and the block split it causes run in the
            // checked section too.
            let mut st = e.snapshot();
            let mut reached = 0;
            for &ev in &events {
                st.clock = ev.saturating_sub(3 * bs as u64);
                e.restore(&st).unwrap();
                realtime(|| {
                    for k in 0..8 {
                        let n = if k % 3 == 1 { 1 + (k * 37) % bs } else { bs };
                        e.process_block(n);
                        std::hint::black_box(e.bus().get(0, 0));
                    }
                });
                reached += usize::from(e.clock() > ev);
            }
            assert_eq!(
                reached,
                events.len(),
                "{} under {p}: every event reached",
                path.display()
            );
            let (a1, f1) = counts();
            assert_eq!(
                (a1 - a0, f1 - f0),
                (0, 0),
                "{} under {p}: allocations/frees inside process_block",
                path.display()
            );
            // A handover saves state on the audio thread: copies into a
            // buffer shaped beforehand, no allocation.
            let mut st = e.snapshot();
            e.process_block(bs);
            let (a0, f0) = counts();
            realtime(|| e.save_into(&mut st));
            let (a1, f1) = counts();
            assert_eq!(
                (a1 - a0, f1 - f0),
                (0, 0),
                "{} under {p}: save allocated",
                path.display()
            );
            assert_eq!(
                st,
                e.snapshot(),
                "{}: save_into equals a snapshot",
                path.display()
            );
        }
    }
}

/// A loop whose feedback edge is one sample long runs sample by sample,
/// with a precision change on the edge and an event ramping a param inside
/// the loop: still no allocation or free in `process_block`.
#[test]
fn a_one_sample_loop_never_allocates_or_frees() {
    // Feedback edges add a write pass and chunking to the block loop.
    let text = r#"{ "version": "1.0",
         "nodes": [ { "id": "hit", "op": "impulse", "params": { "freq": "50Hz" } }, { "id": "sum", "op": "mix" },
                    { "id": "damp", "op": "onepole", "params": { "cutoff": "2kHz" } },
                    { "id": "g", "op": "gain", "params": { "gain": 0.9 }, "profile_overrides": { "precision": "f64" } } ],
         "edges": [ { "from": "hit", "to": "sum:in0" }, { "from": "sum", "to": "damp" }, { "from": "damp", "to": "g" },
                    { "from": "g", "to": "sum:in1", "delay": "1samples" } ],
         "outputs": { "main": ["sum"] },
         "events": [ { "time": "100samples", "node": "g", "param": "gain", "value": 0.5, "ramp": "300samples" } ] }"#;
    // Live converts f64 → f32 on the feedback edge; strict runs it all at f64.
    for p in [Profile::Strict, Profile::Live] {
        let mut e = common::engine(text, Some(p), 64);
        let (a0, f0) = counts();
        realtime(|| {
            for k in 0..300 {
                e.process_block(if k % 5 == 2 { 1 + k % 63 } else { 64 });
                std::hint::black_box(e.bus().get(0, 0));
            }
        });
        let (a1, f1) = counts();
        assert_eq!((a1 - a0, f1 - f0), (0, 0), "under {p}");
        assert!(e.clock() > 400, "the event and its ramp ran");
    }
}

/// The modulation effects (their delay lines and allpass chains sized at
/// build) run with their LFOs swept by events and an edge: no allocation
/// or free in `process_block` under any profile.
#[test]
fn the_modulation_effects_never_allocate_or_free() {
    let text = r#"{ "version": "1.0", "seed": 1,
         "nodes": [ { "id": "src", "op": "noise", "params": { "amp": 0.3 } },
                    { "id": "lfo", "op": "sine", "params": { "freq": "2Hz", "amp": 0.001 } },
                    { "id": "ch", "op": "chorus", "params": { "voices": 8, "rate": "3Hz" } },
                    { "id": "fl", "op": "flanger", "params": { "feedback": 0.9 } },
                    { "id": "ph", "op": "phaser", "params": { "stages": 12, "feedback": 0.7 } },
                    { "id": "sum", "op": "mix" } ],
         "edges": [ { "from": "src", "to": "ch" }, { "from": "ch:out_r", "to": "fl" },
                    { "from": "fl", "to": "ph" }, { "from": "lfo", "to": "ch:depth" },
                    { "from": "ph", "to": "sum:in0" }, { "from": "ph:out_r", "to": "sum:in1" } ],
         "outputs": { "main": ["sum"] },
         "events": [ { "time": "100samples", "node": "fl", "param": "rate", "value": 4, "ramp": "500samples" },
                     { "time": "300samples", "node": "ph", "param": "center", "value": 2000, "ramp": "800samples" } ] }"#;
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
        assert!(e.clock() > 1100, "the events and their ramps ran");
    }
}

/// A `ladder` solving its feedback every sample, its cutoff modulated and
/// its resonance ramped across self-oscillation, at every profile's
/// oversampling factor.
#[test]
fn a_modulated_ladder_never_allocates_or_frees() {
    let text = r#"{ "version": "1.0", "seed": 1,
         "nodes": [ { "id": "src", "op": "saw", "params": { "freq": "110Hz", "amp": 0.5 } },
                    { "id": "lfo", "op": "sine", "params": { "freq": "2Hz", "amp": 500 } },
                    { "id": "lp", "op": "ladder", "params": { "cutoff": "1kHz", "resonance": 0.8, "drive": "6dB" } } ],
         "edges": [ { "from": "src", "to": "lp" }, { "from": "lfo", "to": "lp:cutoff" } ],
         "outputs": { "main": ["lp"] },
         "events": [ { "time": "100samples", "node": "lp", "param": "resonance", "value": 1.2, "ramp": "800samples" } ] }"#;
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
        assert!(e.clock() > 900, "the ramp ran");
    }
}

/// Per-node timing (on in `run`, and in bench's profiling run) adds clock
/// reads to the block loop and nothing else: switching it on or off and
/// timed blocks never allocate, and the audio is the same bits.
#[test]
fn node_timing_never_allocates_and_changes_no_sample() {
    let scene = morphrt::scene::load_file(&common::root().join("scenes/pluck-delay.json")).unwrap();
    let build = || {
        Engine::new(
            compile(
                &scene,
                &CompileOptions {
                    profile: Some(Profile::Live),
                    seed: Some(1),
                    ..morphrt::host::files::resources::compile_options()
                },
            )
            .unwrap(),
        )
    };
    let (mut plain, mut timed) = (build(), build());
    let (a0, f0) = counts();
    let mut same = true;
    realtime(|| {
        timed.set_node_timing(true);
        for k in 0..500 {
            if k == 250 {
                timed.set_node_timing(false);
                timed.clear_node_times();
                timed.set_node_timing(true);
            }
            plain.process_block(64);
            timed.process_block(64);
            same &=
                (0..64).all(|i| plain.bus().get(0, i).to_bits() == timed.bus().get(0, i).to_bits());
        }
    });
    let (a1, f1) = counts();
    assert_eq!((a1 - a0, f1 - f0), (0, 0), "timing allocated or freed");
    assert!(same, "timing changed the output");
    assert_eq!(timed.timed_frames(), 250 * 64);
    assert!(timed.node_times_ns().iter().sum::<u64>() > 0);
    assert!(plain.node_times_ns().iter().all(|t| *t == 0));
    let table = timed.node_time_table();
    assert_eq!(table.len(), timed.node_count());
    assert!(table.windows(2).all(|w| w[0].ns >= w[1].ns));
}

/// The real callback path (`PlayerCell::fill`, as cpal calls it) for at
/// least 10,000 engine blocks of every shipped scene under live, with a
/// device period that differs from the block size so the FIFO splits blocks.
#[test]
fn the_callback_never_allocates_over_10000_blocks_of_every_scene() {
    use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
    use std::sync::Arc;
    for path in common::shipped_scenes() {
        let scene = morphrt::scene::load_file(&path).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(Profile::Live),
                seed: Some(1),
                ..morphrt::host::files::resources::compile_options()
            },
        )
        .unwrap();
        let block = plan.block_size;
        let engine = Engine::new(plan);
        let meters = Arc::new(Meters::default());
        let controls = Arc::new(Switches::default());
        let player = Player::new(
            engine,
            2,
            None,
            240,
            meters.clone(),
            controls.clone(),
            std::time::Instant::now(),
        );
        let cell = PlayerCell::new(player);
        let period = 48; // frames per callback, not the block size
        let mut buf = vec![0.0f32; period * 2];
        // Enough callbacks for 10,000 whole blocks before the stop near the end.
        let callbacks = 10_000 * block / period + 200;
        let before = counts();
        realtime(|| {
            for k in 0..callbacks {
                if k == callbacks - 100 {
                    // Stop near the end: the fade runs inside the callback too.
                    controls
                        .stop
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
                cell.fill(&mut buf);
            }
        });
        let after = counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (0, 0),
            "{}: the callback allocated or freed",
            path.display()
        );
        let blocks = meters.clock.load(std::sync::atomic::Ordering::Relaxed) / block as u64;
        assert!(blocks >= 10_000, "{}: only {blocks} blocks", path.display());
        assert!(
            meters.finished.load(std::sync::atomic::Ordering::Relaxed),
            "the stop fade completed"
        );
    }
}

/// Scene text with one more node (a `dc` of `value`), or the text itself.
fn with_extra(text: &str, value: Option<f64>) -> String {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    if let Some(x) = value {
        v["nodes"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({ "id": "extra_dc", "op": "dc", "params": { "value": x } }));
    }
    serde_json::to_string_pretty(&v).unwrap()
}

/// Plays `blocks` engine blocks of a scene through the real callback with a
/// handover every 100 blocks — a structural edit (a node added), a
/// param-only edit, a profile switch, a structural edit (the node removed),
/// in turn — and counts allocations and frees inside the callback. The
/// control side (compile, migrate, fast-forward, dropping old engines) runs
/// between callbacks on the same thread, outside the counted section.
/// `tag` names the test's own temporary directory (tests run side by side).
fn handovers_in_the_callback(
    scene: &std::path::Path,
    blocks: u64,
    tag: &str,
) -> (usize, usize, usize) {
    handovers_with_workers(scene, blocks, tag, None)
}

/// [`handovers_in_the_callback`] with every engine of the session (the
/// playing one, the incoming ones) spreading its work over `workers`.
fn handovers_with_workers(
    scene: &std::path::Path,
    blocks: u64,
    tag: &str,
    workers: Option<&morphrt::engine::Workers>,
) -> (usize, usize, usize) {
    use morphrt::engine::incoming::{Incoming, SessionFixed};
    use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
    use morphrt::host::live::session::{LiveSession, Playing, SessionConfig};
    use std::sync::Arc;
    let text = std::fs::read_to_string(scene).unwrap();
    let dir = common::temp_dir(&format!("rt-{tag}-{}", common::stem(scene)));
    let path = dir.join("scene.json");
    let variants = [
        with_extra(&text, Some(0.0)),
        with_extra(&text, Some(0.25)),
        String::new(), // a profile switch
        with_extra(&text, None),
    ];
    std::fs::write(&path, &variants[3]).unwrap();
    let resources = vec![common::root().join("resources")];
    let first_plan = {
        let sc = morphrt::scene::load_str(&variants[3], "scene.json", Some(dir.clone())).unwrap();
        compile(
            &sc,
            &CompileOptions {
                profile: Some(Profile::Strict),
                block_size: Some(64),
                seed: Some(1),
                resolver: morphrt::host::files::resources::Folders::shared(resources.clone()),
                ..morphrt::host::files::resources::compile_options()
            },
        )
        .unwrap()
    };
    let mut fixed = SessionFixed::from_plan(
        &first_plan,
        morphrt::host::files::resources::Folders::shared(resources),
    );
    fixed.workers = workers.cloned();
    let file_profile = morphrt::scene::load_str(&text, "scene.json", None)
        .unwrap()
        .profile;
    let mut first = Incoming::from_plan(first_plan, file_profile, Vec::new());
    first.engine.set_workers(workers.cloned());
    let reads_input = first.engine.input_channels() > 0;
    let meters = Arc::new(Meters::default());
    let controls = Arc::new(Switches::default());
    let (engine, first) = Playing::split(first);
    let mut player = Player::new(
        *engine,
        2,
        None,
        240,
        meters.clone(),
        controls,
        std::time::Instant::now(),
    );
    // A scene that reads the input plays with one, as `run` gives it: the
    // player reads it into the input history the session catches up
    // through (a session without an input refuses such scenes).
    let mut hist = None;
    if reads_input {
        let (writer, h) = morphrt::host::live::input::history::history(2, 48_000, 8.0, 0);
        player.set_input(Box::new(input_history::Source(0)));
        player.set_history(writer);
        hist = Some(h);
    }
    // The callback runs on this thread between the control side's steps,
    // so fast-forwarding never races it: hand over scenes whose estimate
    // is over the live budget too (strict hall-reverb).
    let mut session = LiveSession::new(
        SessionConfig {
            force: true,
            history: hist,
            ..SessionConfig::new(&path, variants[3].clone(), fixed, first)
        },
        player.link(),
        meters.clone(),
    );
    let cell = PlayerCell::new(player);
    let period = 48;
    let mut buf = vec![0.0f32; period * 2];
    let mut sink = Vec::new();
    let (mut changes, mut next_change) = (0usize, 100u64);
    let (a0, f0) = counts();
    while meters.clock.load(std::sync::atomic::Ordering::Relaxed) < blocks * 64 {
        let block = meters.clock.load(std::sync::atomic::Ordering::Relaxed) / 64;
        if block >= next_change && session.is_idle() {
            match changes % 4 {
                2 => {
                    let to = match session.profile() {
                        Profile::Strict => Profile::Repro,
                        Profile::Repro => Profile::Live,
                        Profile::Live => Profile::Strict,
                    };
                    session.switch_profile(to, &mut sink)
                }
                k => {
                    std::fs::write(&path, &variants[k]).unwrap();
                    session.file_changed(false, &mut sink);
                }
            }
            changes += 1;
            next_change = block + 100;
        }
        session.tick(&mut sink);
        realtime(|| cell.fill(&mut buf));
    }
    // Let the last handover finish.
    for _ in 0..2000 {
        session.tick(&mut sink);
        realtime(|| cell.fill(&mut buf));
        if session.is_idle() {
            break;
        }
    }
    let (a1, f1) = counts();
    let log = String::from_utf8_lossy(&sink).into_owned();
    assert!(session.rejected.is_empty(), "{log}");
    assert_eq!(
        session.applied.len(),
        changes,
        "every change was applied: {log}"
    );
    assert_eq!(
        meters.swaps.load(std::sync::atomic::Ordering::Relaxed) as usize,
        changes
    );
    (a1 - a0, f1 - f0, changes)
}

/// The zero-allocation callback test with a handover
/// every 100 blocks (param edits, structural edits, profile switches) over
/// 10,000 blocks.
#[test]
fn a_handover_every_100_blocks_never_allocates_in_the_callback_over_10000_blocks() {
    let scene = common::root().join("scenes/pluck-delay.json");
    let (allocs, frees, changes) = handovers_in_the_callback(&scene, 10_000, "every-100");
    assert!(changes >= 99, "{changes} handovers");
    assert_eq!((allocs, frees), (0, 0), "the callback allocated or freed");
}

/// The handovers of [`handovers_in_the_callback`] (state migrated
/// through structural and param edits, a profile switch) with the levels,
/// lane groups and voices of a scene with branches and of a scene with
/// voices spread over three threads: neither the callback nor any
/// worker allocates or frees, and the workers did run steps. A failure
/// names the first allocation or free on a worker, with its backtrace.
#[test]
fn handovers_never_allocate_in_the_callback_or_on_any_worker() {
    use crate::support::counting::{unwatch, watch, watched_counts, watched_first};
    let workers = morphrt::engine::Workers::new(3);
    workers.set_min_work_ns(0);
    for name in ["dub-chain", "poly-pad"] {
        let scene = common::root().join(format!("scenes/{name}.json"));
        let steps = |w: &morphrt::engine::Workers| (1..3).map(|k| w.steps_run(k)).sum::<u64>();
        let before = steps(&workers);
        let places = watch(&workers.worker_os_ids());
        let (allocs, frees, changes) =
            handovers_with_workers(&scene, 600, "workers", Some(&workers));
        let on_workers = watched_counts(&places);
        unwatch(&places);
        let first = watched_first().unwrap_or_default();
        assert!(changes >= 5, "{name}: {changes} handovers");
        assert!(steps(&workers) > before, "{name}: the workers ran steps");
        assert_eq!(
            (allocs, frees),
            (0, 0),
            "{name}: the callback allocated or freed"
        );
        assert_eq!(
            on_workers,
            (0, 0),
            "{name}: a worker allocated or freed, first {first}"
        );
    }
}

/// A pool's workers neither allocate nor free once the pool is handed
/// out: what starting a worker allocates and frees is done before
/// `Workers::new` returns. Two hundred pools, each watched from the moment
/// it is made until it has run levels of steps on its workers.
#[test]
fn a_new_pool_s_workers_neither_allocate_nor_free_once_it_is_handed_out() {
    use crate::support::counting::{unwatch, watch, watched_counts, watched_first};
    let scene = common::root().join("scenes/dub-chain.json");
    let text = std::fs::read_to_string(scene).unwrap();
    let mut engine = common::engine(&text, Some(Profile::Strict), 64);
    for round in 0..200 {
        let workers = morphrt::engine::Workers::new(3);
        let places = watch(&workers.worker_os_ids());
        workers.set_min_work_ns(0);
        engine.set_workers(Some(workers.clone()));
        // A few blocks, and a moment in which a worker still starting up
        // would free what it started with (the passing case waits for
        // nothing).
        for _ in 0..4 {
            engine.process_block(64);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        let counts = watched_counts(&places);
        unwatch(&places);
        engine.set_workers(None);
        let first = watched_first().unwrap_or_default();
        assert_eq!(
            counts,
            (0, 0),
            "pool {round}: a worker allocated or freed, first {first}"
        );
    }
}

/// The same with every shipped scene, over 1,200 blocks (12 handovers each).
#[test]
fn handovers_never_allocate_in_the_callback_for_any_scene() {
    for path in common::shipped_scenes() {
        let (allocs, frees, changes) = handovers_in_the_callback(&path, 1_200, "any-scene");
        assert!(changes >= 11, "{}: {changes} handovers", path.display());
        assert_eq!(
            (allocs, frees),
            (0, 0),
            "{}: the callback allocated or freed",
            path.display()
        );
    }
}

/// Timetagged profile switches and snapshots asked for samples inside a
/// block, through the real callback, a block of 64 (samples 37 and 21
/// past a boundary): the callback cuts the block there, runs the incoming
/// engine up to the swap beside the first part, swaps or saves, and
/// plays the rest, without allocating or freeing. Under strict and repro
/// playing they land at exactly their samples, under live at the start
/// of their block.
#[test]
fn timetagged_switches_and_snapshots_inside_a_block_never_allocate_in_the_callback() {
    use morphrt::engine::incoming::{Incoming, SessionFixed};
    use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
    use morphrt::host::live::session::{LiveSession, Playing, SessionConfig};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    let scene = common::root().join("scenes/pluck-delay.json");
    let text = std::fs::read_to_string(&scene).unwrap();
    let dir = common::temp_dir("rt-timetagged");
    let path = dir.join("scene.json");
    std::fs::write(&path, &text).unwrap();
    let resources = vec![common::root().join("resources")];
    let plan = {
        let sc = morphrt::scene::load_str(&text, "scene.json", Some(dir.clone())).unwrap();
        compile(
            &sc,
            &CompileOptions {
                profile: Some(Profile::Strict),
                block_size: Some(64),
                seed: Some(1),
                resolver: morphrt::host::files::resources::Folders::shared(resources.clone()),
                ..CompileOptions::default()
            },
        )
        .unwrap()
    };
    let fixed = SessionFixed::from_plan(
        &plan,
        morphrt::host::files::resources::Folders::shared(resources),
    );
    let first = Incoming::from_plan(plan, None, Vec::new());
    let meters = Arc::new(Meters::default());
    let controls = Arc::new(Switches::default());
    let (engine, first) = Playing::split(first);
    let mut player = Player::new(
        *engine,
        2,
        None,
        240,
        meters.clone(),
        controls,
        std::time::Instant::now(),
    );
    let mut session = LiveSession::new(
        SessionConfig {
            force: true,
            ..SessionConfig::new(&path, text.clone(), fixed, first)
        },
        player.link(),
        meters.clone(),
    );
    let cell = PlayerCell::new(player);
    let mut buf = vec![0.0f32; 48 * 2];
    let mut sink = Vec::new();
    let clock = || meters.clock.load(Ordering::Relaxed);
    // (asked, landed as expected) for switches and snapshots.
    let mut switches = Vec::new();
    let mut snapshots = Vec::new();
    let (a0, f0) = counts();
    let mut next = 0u64;
    while switches.len() < 6 {
        if clock() >= next && session.is_idle() {
            let block_start = |at: u64| at / 64 * 64;
            let exact = session.profile() != Profile::Live;
            let expect = |at: u64| if exact { at } else { block_start(at) };
            if switches.len() == snapshots.len() {
                let at = block_start(clock() + 6_400) + 21;
                session.request_snapshot_at(dir.join("snap"), at);
                snapshots.push((at, expect(at)));
            } else {
                let to = match session.profile() {
                    Profile::Strict => Profile::Repro,
                    Profile::Repro => Profile::Live,
                    Profile::Live => Profile::Strict,
                };
                let at = block_start(clock() + 6_400) + 37;
                session.switch_profile_at(to, Some(at), &mut sink);
                switches.push((at, expect(at)));
            }
            next = clock() + 64 * 200;
        }
        session.tick(&mut sink);
        realtime(|| cell.fill(&mut buf));
    }
    for _ in 0..20_000 {
        session.tick(&mut sink);
        realtime(|| cell.fill(&mut buf));
        if session.is_idle() && session.applied.len() == switches.len() {
            break;
        }
    }
    let (a1, f1) = counts();
    let log = String::from_utf8_lossy(&sink).into_owned();
    let landed: Vec<u64> = session.applied.iter().map(|h| h.swap_at).collect();
    let expected: Vec<u64> = switches.iter().map(|s| s.1).collect();
    assert_eq!(landed, expected, "switches asked for {switches:?}; {log}");
    let taken: Vec<u64> = session.snapshots.iter().map(|s| s.0).collect();
    let expected: Vec<u64> = snapshots.iter().map(|s| s.1).collect();
    assert_eq!(taken, expected, "snapshots asked for {snapshots:?}; {log}");
    assert_eq!(
        (a1 - a0, f1 - f0),
        (0, 0),
        "the callback allocated or freed"
    );
}

mod callback_events {
    //! Everything the callback can meet in a session, under every profile,
    //! with allocations and frees counted inside each callback.

    use super::{common, counts, realtime};
    use morphrt::dsp::Sample;
    use morphrt::engine::incoming::{Incoming, SessionFixed};
    use morphrt::graph::{compile, CompileOptions, Plan};
    use morphrt::host::live::player::{
        FromAudio, Meters, NodeTimes, Player, PlayerCell, Switches, ToAudio,
    };
    use morphrt::host::live::session::{LiveSession, Playing, SessionConfig};
    use morphrt::host::live::tap::TapWriter;
    use morphrt::ops::{AnyNode, Io, NodeProcessor, NodeState, StateError};
    use morphrt::profile::Profile;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    /// An oscillator through `nan` and `boom` (placeholders for the faulty
    /// nodes below) into a one-pole filter whose `mode` an edit switches.
    fn scene(mode: &str) -> String {
        format!(
            r#"{{ "version": "1.0", "sample_rate": 48000, "seed": 1,
  "nodes": [ {{ "id": "osc", "op": "sine", "params": {{ "freq": "220Hz", "amp": 0.5 }} }},
             {{ "id": "nan", "op": "gain" }}, {{ "id": "boom", "op": "gain" }},
             {{ "id": "lp", "op": "onepole", "params": {{ "mode": "{mode}", "cutoff": "2kHz" }} }} ],
  "edges": [ {{ "from": "osc", "to": "nan" }}, {{ "from": "nan", "to": "boom" }}, {{ "from": "boom", "to": "lp" }} ],
  "outputs": {{ "main": ["lp", "osc"] }} }}"#
        )
    }

    /// Passes its input through, but writes NaN in the blocks that contain
    /// one of `nan_at`, and panics in the block that contains `panic_at`.
    struct Faulty {
        nan_at: Vec<u64>,
        panic_at: Option<u64>,
    }

    impl<S: Sample> NodeProcessor<S> for Faulty {
        fn process(&mut self, io: &mut Io<'_, S>) {
            let span = io.start..io.start + io.frames as u64;
            if self.panic_at.is_some_and(|p| span.contains(&p)) {
                panic!("a bug inside a node");
            }
            let n = io.frames;
            let bad = self.nan_at.iter().any(|s| span.contains(s));
            for (o, i) in io.outputs[0][..n].iter_mut().zip(&io.inputs[0][..n]) {
                *o = if bad { S::from_f64(f64::NAN) } else { *i };
            }
        }
        fn reset(&mut self) {}
        fn snapshot(&self, _st: &mut NodeState) {}
        fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
            Ok(())
        }
    }

    fn replace(p: &mut Plan, id: &str, node: Faulty) {
        let n = p.nodes.iter_mut().find(|n| n.id == id).unwrap();
        n.node = Some(match n.node {
            Some(AnyNode::F64(_)) => AnyNode::F64(Box::new(node)),
            _ => AnyNode::F32(Box::new(node)),
        });
    }

    fn plan(text: &str, p: Profile) -> Plan {
        let sc = morphrt::scene::load_str(text, "scene.json", None).unwrap();
        compile(
            &sc,
            &CompileOptions {
                profile: Some(p),
                block_size: Some(64),
                ..morphrt::host::files::resources::compile_options()
            },
        )
        .unwrap()
    }

    /// The callback as a device calls it, with what it allocated and freed.
    fn callback(cell: &PlayerCell, buf: &mut [f32]) -> (usize, usize) {
        let (a0, f0) = counts();
        realtime(|| cell.fill(buf));
        let (a1, f1) = counts();
        (a1 - a0, f1 - f0)
    }

    /// What the callbacks allocated and freed: in total, and in those
    /// during which a node panicked.
    #[derive(Default)]
    struct Counted {
        other: (usize, usize),
        panicking: (usize, usize),
        panics: u64,
    }

    impl Counted {
        fn add(&mut self, (a, f): (usize, usize), meters: &Meters) {
            let panics = meters.node_panics.load(Ordering::Relaxed);
            let into = if panics > self.panics {
                &mut self.panicking
            } else {
                &mut self.other
            };
            self.panics = panics;
            into.0 += a;
            into.1 += f;
        }
    }

    /// A session of `p`: NaN reset then mute and retry of a node, a node
    /// panic, per-node timing on with its table copied out, the capture
    /// tap, an edit that switches a discrete param, a `w` snapshot, and a
    /// device rebuild (the player taken back and put in a new cell).
    fn session_events(p: Profile) -> Counted {
        morphrt::host::live::player::install_panic_hook();
        let dir = common::temp_dir(&format!("rt-events-{p}"));
        let path = dir.join("scene.json");
        std::fs::write(&path, scene("lowpass")).unwrap();
        let mut first = plan(&scene("lowpass"), p);
        // Two failures within a second: reset, then a second's mute, then a
        // retry from a clean state.
        let nan_at = vec![6_400, 12_800];
        replace(
            &mut first,
            "nan",
            Faulty {
                nan_at,
                panic_at: None,
            },
        );
        let boom = Faulty {
            nan_at: Vec::new(),
            panic_at: Some(20_000),
        };
        replace(&mut first, "boom", boom);
        let fixed = SessionFixed::from_plan(&first, None);
        let first = Incoming::from_plan(first, None, Vec::new());
        let meters = Arc::new(Meters::default());
        let controls = Arc::new(Switches::default());
        controls.node_timing.store(true, Ordering::Relaxed);
        let (engine, first) = Playing::split(first);
        let mut player = Player::new(
            *engine,
            2,
            None,
            240,
            meters.clone(),
            controls.clone(),
            std::time::Instant::now(),
        );
        let (writer, tap) = TapWriter::start(&dir.join("take.wav"), 2, 48_000, 4.0).unwrap();
        player.set_tap(tap);
        let mut timing = player.timing_link();
        let mut session = LiveSession::new(
            SessionConfig::new(&path, scene("lowpass"), fixed, first),
            player.link(),
            meters.clone(),
        );
        let mut cell = PlayerCell::new(player);
        let mut buf = vec![0.0f32; 48 * 2];
        let mut sink = Vec::new();
        let mut counted = Counted::default();
        let mut times = None;
        let clock = |m: &Meters| m.clock.load(Ordering::Relaxed);
        let (mut edited, mut snapshot, mut rebuilt, mut asked) = (false, false, false, false);
        while clock(&meters) < 110_000 {
            let now = clock(&meters);
            if now >= 30_000 && !asked {
                asked = timing.request(NodeTimes::with_capacity(64, 1024)).is_ok();
            }
            if now >= 62_000 && !edited {
                std::fs::write(&path, scene("highpass")).unwrap();
                session.file_changed(false, &mut sink);
                edited = true;
            }
            if now >= 80_000 && !snapshot && session.is_idle() {
                session.request_snapshot(dir.join("take"));
                snapshot = true;
            }
            if now >= 90_000 && !rebuilt {
                let mut player = cell.take().expect("no callback in flight");
                player.reset_timing();
                cell = PlayerCell::new(player);
                rebuilt = true;
            }
            session.tick(&mut sink);
            times = times.or_else(|| timing.receive());
            counted.add(callback(&cell, &mut buf), &meters);
        }
        let log = String::from_utf8_lossy(&sink).into_owned();
        let player = cell.take().unwrap();
        let stats = player.engine().stats();
        assert_eq!(session.applied.len(), 1, "{log}");
        let notices = &session.applied[0].migration.notices;
        assert!(
            notices
                .iter()
                .any(|n| n.to_string() == "`lp.mode` switches"),
            "a discrete switch: {notices:?}"
        );
        assert_eq!(session.snapshots.len(), 1, "{log}");
        assert_eq!(meters.node_panics.load(Ordering::Relaxed), 1);
        assert_eq!(meters.callback_panics.load(Ordering::Relaxed), 0);
        // Reset once, muted once; the retry after the mute runs clean.
        assert_eq!(meters.nan_events.load(Ordering::Relaxed), 2);
        assert!(stats.nan_events == 0, "the edited engine runs clean");
        let times = times.expect("the per-node times came back");
        assert!(times.complete() && times.frames() > 0);
        assert!(times.table().iter().any(|t| t.ns > 0));
        assert!(
            player.engine().node_timing(),
            "timing carried across the swap"
        );
        drop(player);
        let report = writer.finish().unwrap();
        // Unpaced, the writer may fall behind and drop: every frame counts.
        let played = meters.frames.load(Ordering::Relaxed);
        assert_eq!(report.frames + report.dropped_samples / 2, played);
        counted
    }

    #[test]
    fn a_sessions_events_never_allocate_in_the_callback_under_any_profile() {
        for p in Profile::ALL {
            let c = session_events(p);
            assert_eq!(
                c.other,
                (0, 0),
                "under {p}: the callback allocated or freed"
            );
            // The panic runtime boxes a panic's payload and its exception
            // object; the engine forgets the payload. Nothing else.
            assert!(
                c.panicking.0 <= 2 && c.panicking.1 <= 1,
                "under {p}: the panicking callback allocated {:?}",
                c.panicking
            );
        }
    }

    /// A player whose control side does not drain its replies for many
    /// blocks (the reply ring full, then the outbox), then drains them.
    fn outbox_full(p: Profile) -> (usize, usize) {
        let text = scene("lowpass");
        let mut player = common::player(morphrt::engine::Engine::new(plan(&text, p)), 240);
        let mut link = player.link();
        let shape = player.engine().snapshot();
        let cell = PlayerCell::new(player);
        let mut buf = vec![0.0f32; 64 * 2];
        let mut total = (0, 0);
        let mut play = |blocks: usize| {
            for _ in 0..blocks {
                let (a, f) = callback(&cell, &mut buf);
                total = (total.0 + a, total.1 + f);
            }
        };
        let mut requests = 0;
        while link.send(ToAudio::Save(Box::new(shape.clone()))).is_ok() {
            requests += 1;
        }
        play(1);
        // A swap (and its retired engine) behind more saves, while the
        // replies of the first ones still fill the ring.
        let mut next = morphrt::engine::Engine::new(plan(&text, p));
        morphrt::engine::incoming::advance_to(&mut next, 64 * 10);
        for _ in 0..4 {
            assert!(link.send(ToAudio::Save(Box::new(shape.clone()))).is_ok());
        }
        let offer = ToAudio::Offer {
            engine: Box::new(next),
            at: 64 * 10,
            fade: 128,
        };
        assert!(link.send(offer).is_ok());
        while link.send(ToAudio::Save(Box::new(shape.clone()))).is_ok() {
            requests += 1;
        }
        play(300);
        let mut replies = Vec::new();
        for _ in 0..20 {
            replies.extend(std::iter::from_fn(|| link.receive()));
            play(10);
        }
        let kinds = |k: fn(&FromAudio) -> bool| replies.iter().filter(|m| k(m)).count();
        assert_eq!(
            kinds(|m| matches!(m, FromAudio::Saved { .. })),
            requests + 4
        );
        // The offer swaps at its sample, or, held while replies wait, comes
        // back refused for the control side to place again.
        let swapped = kinds(|m| matches!(m, FromAudio::Swapped { at: 640 }));
        let refused = kinds(|m| matches!(m, FromAudio::Refused { .. }));
        assert_eq!(swapped + refused, 1);
        assert_eq!(kinds(|m| matches!(m, FromAudio::Retired(_))), swapped);
        total
    }

    /// A fused lane group of 70 counters (two kernel batches) whose
    /// member `c3` panics in the callback of samples 640..704: through its
    /// steady path, its kernel (after finishing the members before it, or
    /// before advancing any) and alone. That callback allocates only what
    /// each panic allocates (its message, payload box and exception
    /// object: at most three panics, one each way) and frees only the
    /// exception objects; no other callback allocates or frees, before or
    /// after, and only `c3` is dead.
    #[test]
    fn a_panic_in_a_lane_group_allocates_only_in_its_callback() {
        use crate::support::counters::{counters, Kind};
        morphrt::host::live::player::install_panic_hook();
        for p in Profile::ALL {
            for (serial, steady) in [(false, false), (true, false), (false, true), (true, true)] {
                let kind = Kind {
                    finite: false,
                    serial,
                    steady,
                };
                let engine = counters(70, true, kind, 3, p);
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
                let mut buf = vec![0.0f32; 64 * 2];
                let mut counted = Counted::default();
                for _ in 0..200 {
                    counted.add(callback(&cell, &mut buf), &meters);
                }
                let what = format!("{p}, serial {serial}, steady {steady}");
                assert_eq!(meters.node_panics.load(Ordering::Relaxed), 1, "{what}");
                assert_eq!(counted.other, (0, 0), "{what}: a callback allocated");
                // Panics: the steady path's, the kernel's and the member's
                // alone. Each allocates its formatted message (a growing
                // String), the payload's box and the exception object, and
                // frees the exception object.
                let panics = 2 + usize::from(steady);
                let (a, f) = counted.panicking;
                assert!(
                    a <= 5 * panics && f <= panics,
                    "{what}: the panicking callback: {a}, {f}"
                );
                assert!(buf.iter().any(|x| *x != 0.0), "{what}: the others play");
            }
        }
    }

    #[test]
    fn a_full_outbox_never_allocates_in_the_callback_under_any_profile() {
        for p in Profile::ALL {
            assert_eq!(outbox_full(p), (0, 0), "under {p}");
        }
    }
}

mod input_device {
    //! The callback reading an input device: blocks read from the ring,
    //! drift corrections (a frame dropped, a frame repeated), an underrun,
    //! an overrun, and a rebuilt input stream (a new ring swapped in) —
    //! with a test double for the device, pushing from this thread as the
    //! input thread would, and allocations and frees counted in the
    //! callback and in every push.

    use super::{common, counts, realtime};
    use morphrt::host::live::device::input::{InputDevice, InputStreamSource};
    use morphrt::host::live::device::{DeviceError, Stream, StreamEvents, StreamFault};
    use morphrt::host::live::input::ring::{InputMeters, RingShape, RingWriter};
    use morphrt::host::live::input::InputFormat;
    use morphrt::host::live::player::PlayerCell;
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// What the test double's streams hand the test: the writer of the
    /// last stream opened, and where it reports.
    #[derive(Default)]
    struct Opened {
        writer: Option<RingWriter>,
        events: Option<Arc<StreamEvents>>,
        streams: usize,
    }

    struct FakeSource(Arc<Mutex<Opened>>);
    struct FakeStream;
    impl Stream for FakeStream {}

    impl InputStreamSource for FakeSource {
        fn prepare(&mut self, _fallback: bool) -> Result<usize, DeviceError> {
            Ok(1)
        }
        fn open(
            &mut self,
            writer: RingWriter,
            events: Arc<StreamEvents>,
        ) -> Result<Box<dyn Stream>, DeviceError> {
            let mut o = self.0.lock().unwrap();
            o.writer = Some(writer);
            o.events = Some(events);
            o.streams += 1;
            Ok(Box::new(FakeStream))
        }
        fn id(&self) -> String {
            "test:fake".to_string()
        }
        fn period_frames(&self) -> Option<usize> {
            Some(64)
        }
    }

    /// A mono scene that plays its input.
    const THROUGH: &str = r#"{ "version": "1.0", "sample_rate": 48000,
      "nodes": [ { "id": "mic", "op": "input" } ], "outputs": { "main": ["mic"] } }"#;

    /// Counts what a real-time section allocated and freed into `total`.
    fn counted<R>(total: &mut (usize, usize), f: impl FnOnce() -> R) -> R {
        let (a0, f0) = counts();
        let r = realtime(f);
        let (a1, f1) = counts();
        total.0 += a1 - a0;
        total.1 += f1 - f0;
        r
    }

    struct Rig {
        cell: Arc<PlayerCell>,
        writer: RingWriter,
        buf: Vec<f32>,
        next: u32,
        total: (usize, usize),
    }

    impl Rig {
        /// One input chunk of `frames` (a counter, so every value is
        /// distinct), then one callback of a block.
        fn block(&mut self, frames: usize) {
            let chunk: Vec<f32> = (0..frames)
                .map(|i| (self.next + i as u32) as f32 / 65_536.0)
                .collect();
            self.next += frames as u32;
            let (writer, buf) = (&mut self.writer, &mut self.buf);
            counted(&mut self.total, || writer.push(&chunk, |x| x as f64));
            let cell = &self.cell;
            counted(&mut self.total, || cell.fill(buf));
        }
    }

    fn load(a: &std::sync::atomic::AtomicU64) -> u64 {
        a.load(Ordering::Relaxed)
    }

    #[test]
    fn reading_correcting_and_rebuilding_an_input_device_never_allocates_in_the_callback() {
        let engine = common::engine(THROUGH, None, 64);
        let mut player = common::player(engine, 240);
        let opened = Arc::new(Mutex::new(Opened::default()));
        let shape = RingShape {
            channels: 1,
            format: InputFormat::F32,
            capacity_frames: 16_384,
            block: 64,
        };
        let source = Box::new(FakeSource(opened.clone()));
        let mut device = InputDevice::start(source, shape, Duration::from_secs(3600)).unwrap();
        player.set_input(device.take_input().unwrap());
        let meters: Arc<InputMeters> = device.meters().clone();
        let writer = opened.lock().unwrap().writer.take().unwrap();
        let mut rig = Rig {
            cell: PlayerCell::new(player),
            writer,
            buf: vec![0.0f32; 64 * 2],
            next: 1,
            total: (0, 0),
        };
        // In step, then the input clock runs fast, then slow.
        for _ in 0..400 {
            rig.block(64);
        }
        assert!(rig.buf.iter().any(|&x| x != 0.0), "the input plays");
        for _ in 0..2000 {
            rig.block(if load(&meters.dropped) < 3 { 65 } else { 64 });
        }
        for _ in 0..2000 {
            rig.block(if load(&meters.repeated) < 3 { 63 } else { 64 });
        }
        assert!(load(&meters.dropped) >= 3, "frames dropped: {meters:?}");
        assert!(load(&meters.repeated) >= 3, "frames repeated: {meters:?}");
        // The device is lost: the control side opens a new stream into a
        // new ring, which the callback swaps in and primes.
        let events = opened.lock().unwrap().events.clone().unwrap();
        events.report(StreamFault::DeviceNotAvailable);
        let mut log = Vec::new();
        device.poll(&mut log);
        let log = String::from_utf8(log).unwrap();
        assert_eq!(device.rebuilds(), 1, "{log}");
        assert!(log.contains("reopened `test:fake`"), "{log}");
        let old = std::mem::replace(
            &mut rig.writer,
            opened.lock().unwrap().writer.take().unwrap(),
        );
        drop(old);
        for _ in 0..400 {
            rig.block(64);
        }
        assert_eq!(load(&meters.swaps), 1, "the new ring was swapped in");
        device.poll(&mut Vec::new());
        assert!(rig.buf.iter().any(|&x| x != 0.0), "the new ring plays");
        // Nothing arrives for a while (an underrun), then far too much (an
        // overrun: the ring is full).
        for _ in 0..4 {
            rig.block(0);
        }
        assert!(load(&meters.underruns) > 0, "{meters:?}");
        rig.block(20_000);
        for _ in 0..400 {
            rig.block(64);
        }
        assert!(load(&meters.overruns) > 0, "{meters:?}");
        assert_eq!(
            rig.total,
            (0, 0),
            "the callback or a push allocated or freed"
        );
        assert_eq!(opened.lock().unwrap().streams, 2);
    }

    /// A device recording at 44.1 kHz into a 48 kHz session: the input
    /// thread converts what it pushes (the strict polyphase converter),
    /// the drift control holds the converted stream, and what the
    /// callback plays is the offline conversion of what the device
    /// recorded, sample for sample; no push or callback allocates or frees.
    #[test]
    fn a_44k_device_plays_converted_into_a_48k_session_and_never_allocates() {
        use morphrt::dsp::resample::{Polyphase, RateConverter};
        use morphrt::host::live::input::ring::InputRates;
        let engine = common::engine(THROUGH, None, 64);
        let mut player = common::player(engine, 240);
        let opened = Arc::new(Mutex::new(Opened::default()));
        let shape = RingShape {
            channels: 1,
            format: InputFormat::F32,
            capacity_frames: 16_384,
            block: 64,
        };
        let rates = InputRates {
            device_hz: 44_100,
            session_hz: 48_000,
        };
        let source = Box::new(FakeSource(opened.clone()));
        let mut device =
            InputDevice::start_at(source, shape, Some(rates), Duration::from_secs(3600)).unwrap();
        let input = device.take_input().unwrap();
        assert_eq!(input.format(), InputFormat::F64, "converted frames are f64");
        player.set_input(input);
        let meters: Arc<InputMeters> = device.meters().clone();
        let mut writer = opened.lock().unwrap().writer.take().unwrap();
        let cell = PlayerCell::new(player);
        let recorded = |k: usize| (libm::sin(k as f64 * 0.031) * 0.5) as f32;
        let (mut buf, mut played) = (vec![0.0f32; 64 * 2], Vec::new());
        let mut total = (0, 0);
        let mut pushed = 0;
        for b in 1..=3000usize {
            // The device's frames due by the end of this block of output:
            // 147 for every 160 the session plays.
            let due = b * 64 * 147 / 160;
            let chunk: Vec<f32> = (pushed..due).map(recorded).collect();
            pushed = due;
            counted(&mut total, || writer.push(&chunk, |x| x as f64));
            counted(&mut total, || cell.fill(&mut buf));
            played.extend(buf.iter().step_by(2).copied());
        }
        assert_eq!(total, (0, 0), "the callback or a push allocated or freed");
        assert_eq!(
            (load(&meters.dropped), load(&meters.repeated)),
            (0, 0),
            "the converted stream keeps pace: {meters:?}"
        );
        // The offline conversion of everything the device recorded.
        let all: Vec<f64> = (0..pushed).map(|k| recorded(k) as f64).collect();
        let mut conv = Polyphase::new(44_100, 48_000, 1, all.len()).unwrap();
        assert_eq!(conv.push(&all), all.len());
        let mut want = vec![0.0; all.len() * 2];
        let n = conv.pull(&mut want);
        let want: Vec<f32> = want[..n].iter().map(|&x| x as f32).collect();
        // After the ring primed, the session plays a run of the
        // conversion (the ring's fill is its delay) to the end.
        let start = played
            .iter()
            .position(|&x| x != 0.0)
            .expect("the input plays");
        let heard = &played[start..];
        assert!(heard.len() > 100_000, "{} frames heard", heard.len());
        let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
        let at = (0..4096)
            .find(|&j| same(&heard[..16], &want[j..j + 16]))
            .expect("the first frames heard are frames of the conversion");
        assert!(
            same(heard, &want[at..]),
            "the session plays the offline conversion of the recording"
        );
    }
}

mod input_history {
    //! The callback with a session input: each block read, pushed into the
    //! input history and loaded into the engine, and a handover whose new
    //! engine catches up through the history on the audio thread — no
    //! allocation or free, and the swap is the one `replay` redoes from
    //! the journal's N and S, bit for bit.

    use super::{common, counts, realtime};
    use morphrt::api::player::Scripted;
    use morphrt::engine::incoming::Incoming;
    use morphrt::engine::{InputBlock, InputFeed};
    use morphrt::host::live::input::history::{fast_forward_through, history};
    use morphrt::host::live::input::{InputFormat, LiveInput};
    use morphrt::host::live::player::{FromAudio, Meters, Player, PlayerCell, Switches, ToAudio};
    use morphrt::profile::Profile;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    /// Input sample n of channel c: a deterministic, non-periodic signal.
    fn sample(n: u64, c: usize) -> f64 {
        let x = libm::sin(n as f64 * 0.013 + c as f64) * 0.7;
        x as f32 as f64
    }

    /// A live source of [`sample`], two channels.
    pub(super) struct Source(pub(super) u64);
    impl LiveInput for Source {
        fn channels(&self) -> usize {
            2
        }
        fn format(&self) -> InputFormat {
            InputFormat::F32
        }
        fn read(&mut self, dst: &mut [f64]) {
            for frame in dst.chunks_exact_mut(2) {
                frame[0] = sample(self.0, 0);
                frame[1] = sample(self.0, 1);
                self.0 += 1;
            }
        }
    }

    /// The same signal as an offline feed.
    struct Feed;
    impl InputFeed for Feed {
        fn read(&mut self, start: u64, block: &mut InputBlock<'_>) {
            for c in 0..block.channels() {
                for (i, d) in block.channel_mut(c).iter_mut().enumerate() {
                    *d = sample(start + i as u64, c);
                }
            }
        }
    }

    fn scene(cutoff: &str) -> String {
        format!(
            r#"{{"version":"1.0","seed":3,"sample_rate":48000,
            "nodes":[{{"id":"mic","op":"input","params":{{"channel":1}}}},
                     {{"id":"lp","op":"onepole","params":{{"cutoff":"{cutoff}"}}}}],
            "edges":[{{"from":"mic","to":"lp"}}],
            "outputs":{{"main":["lp"]}}}}"#
        )
    }

    fn incoming(cutoff: &str) -> Incoming {
        Incoming::from_plan(
            common::plan(&scene(cutoff), Some(Profile::Repro), 64),
            None,
            Vec::new(),
        )
    }

    #[test]
    fn input_history_and_a_catch_up_swap_never_allocate_and_replay() {
        let first = incoming("2kHz");
        let meters = Arc::new(Meters::default());
        let mut player = Player::new(
            *first.engine,
            2,
            None,
            240,
            meters.clone(),
            Arc::new(Switches::default()),
            std::time::Instant::now(),
        );
        player.set_input(Box::new(Source(0)));
        let (writer, hist) = history(2, 48_000, 8.0, 0);
        player.set_history(writer);
        let mut link = player.link();
        let cell = PlayerCell::new(player);
        let mut buf = vec![0.0f32; 48 * 2];
        let mut played = Vec::new();
        let (a0, f0) = counts();
        let mut fill = |played: &mut Vec<f32>| {
            realtime(|| cell.fill(&mut buf));
            played.extend_from_slice(&buf);
        };
        for _ in 0..40 {
            fill(&mut played);
        }
        link.send(ToAudio::Save(first.saved)).ok().unwrap();
        let (state, n) = loop {
            fill(&mut played);
            if let Some(FromAudio::Saved { state, at }) = link.receive() {
                break (state, at);
            }
        };
        let mut next = incoming("700Hz");
        next.engine.migrate(&state, n);
        next.engine.set_swap_sample(u64::MAX);
        let m = fast_forward_through(&mut next.engine, &hist, u64::MAX).unwrap();
        // The audio clock moves on five blocks before the offer arrives.
        while meters.clock.load(Ordering::Relaxed) < m + 5 * 64 {
            fill(&mut played);
        }
        link.send(ToAudio::CatchUp {
            engine: next.engine,
            from: m,
            fade: 0,
            at: None,
        })
        .ok()
        .unwrap();
        let s = loop {
            fill(&mut played);
            match link.receive() {
                Some(FromAudio::Swapped { at }) => break at,
                Some(FromAudio::Refused { clock, .. }) => panic!("refused at {clock}"),
                _ => {}
            }
        };
        for _ in 0..40 {
            fill(&mut played);
        }
        let (a1, f1) = counts();
        assert_eq!(
            (a1 - a0, f1 - f0),
            (0, 0),
            "the callback allocated or freed"
        );
        assert!(
            s > m + 5 * 64,
            "it caught up over several blocks: M {m}, S {s}"
        );
        drop(link.receive());

        // The replay: the same N and S, every engine fed the same input.
        let mut first = incoming("2kHz");
        first.engine.set_input_feed(Box::new(Feed));
        let mut deck = Scripted::new(first, 2);
        let mut next = incoming("700Hz");
        next.engine.set_input_feed(Box::new(Feed));
        deck.handover_at(next, n, s, 0).unwrap();
        let frames = played.len() as u64 / 2;
        deck.play_to(frames);
        let again = deck.into_device_samples(frames, None);
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&again) == bits(&played),
            "the replay differs from what was played"
        );
    }

    /// The same scene with a tempo: a dc stepped to b/100 at each beat b
    /// (1…40) under the filtered input.
    fn beat_scene(tempo: &str) -> String {
        let events: Vec<String> = (1..=40)
            .map(|b| {
                format!(
                    r#"{{"time":"{b}beats","node":"v","param":"value","value":{}}}"#,
                    b as f64 / 100.0
                )
            })
            .collect();
        format!(
            r#"{{"version":"1.0","seed":3,"sample_rate":48000,"tempo":"{tempo}",
            "nodes":[{{"id":"mic","op":"input","params":{{"channel":1}}}},
                     {{"id":"lp","op":"onepole","params":{{"cutoff":"2kHz"}}}},
                     {{"id":"v","op":"dc","params":{{"value":0}}}},
                     {{"id":"sum","op":"mix"}}],
            "edges":[{{"from":"mic","to":"lp"}},{{"from":"lp","to":"sum:in0"}},
                     {{"from":"v","to":"sum:in1"}}],
            "outputs":{{"main":["sum"]}},"events":[{}]}}"#,
            events.join(",")
        )
    }

    /// Its engine, `fed` the offline input (for the replay).
    fn beat_incoming(tempo: &str, fed: bool) -> Incoming {
        let mut inc = Incoming::from_plan(
            common::plan(&beat_scene(tempo), Some(Profile::Repro), 64),
            None,
            Vec::new(),
        );
        if fed {
            inc.engine.set_input_feed(Box::new(Feed));
        }
        inc
    }

    /// A tempo edit (240 → 200 bpm) whose new engine catches up through
    /// the history: the audio thread sets its swap sample where it swaps,
    /// which re-places its events in beats on the grid re-anchored there
    /// and re-sorts them (`set_swap_sample` in the player's catch-up) — no
    /// allocation or free in the callback, the beats after S where the
    /// re-anchored grid puts them, and the replay of N and S bit for bit.
    #[test]
    fn a_tempo_edit_caught_up_on_the_audio_thread_never_allocates_and_replays() {
        let first = beat_incoming("240bpm", false);
        let meters = Arc::new(Meters::default());
        let mut player = Player::new(
            *first.engine,
            2,
            None,
            240,
            meters.clone(),
            Arc::new(Switches::default()),
            std::time::Instant::now(),
        );
        player.set_input(Box::new(Source(0)));
        let (writer, hist) = history(2, 48_000, 8.0, 0);
        player.set_history(writer);
        let mut link = player.link();
        let cell = PlayerCell::new(player);
        let mut buf = vec![0.0f32; 48 * 2];
        let mut played = Vec::new();
        let (a0, f0) = counts();
        let mut fill = |played: &mut Vec<f32>| {
            realtime(|| cell.fill(&mut buf));
            played.extend_from_slice(&buf);
        };
        // Past beat 2 (sample 24000) at 240 bpm.
        for _ in 0..600 {
            fill(&mut played);
        }
        link.send(ToAudio::Save(first.saved)).ok().unwrap();
        let (state, n) = loop {
            fill(&mut played);
            if let Some(FromAudio::Saved { state, at }) = link.receive() {
                break (state, at);
            }
        };
        let mut next = beat_incoming("200bpm", false);
        next.engine.migrate(&state, n);
        next.engine.set_swap_sample(u64::MAX);
        let m = fast_forward_through(&mut next.engine, &hist, u64::MAX).unwrap();
        while meters.clock.load(Ordering::Relaxed) < m + 5 * 64 {
            fill(&mut played);
        }
        link.send(ToAudio::CatchUp {
            engine: next.engine,
            from: m,
            fade: 0,
            at: None,
        })
        .ok()
        .unwrap();
        let s = loop {
            fill(&mut played);
            match link.receive() {
                Some(FromAudio::Swapped { at }) => break at,
                Some(FromAudio::Refused { clock, .. }) => panic!("refused at {clock}"),
                _ => {}
            }
        };
        // Several beats on the new grid.
        for _ in 0..1500 {
            fill(&mut played);
        }
        let (a1, f1) = counts();
        assert_eq!(
            (a1 - a0, f1 - f0),
            (0, 0),
            "the callback allocated or freed"
        );
        assert!(
            s > m + 5 * 64,
            "it caught up over several blocks: M {m}, S {s}"
        );
        drop(link.receive());

        let frames = played.len() as u64 / 2;
        let mut deck = Scripted::new(beat_incoming("240bpm", true), 2);
        deck.handover_at(beat_incoming("200bpm", true), n, s, 0)
            .unwrap();
        // Beat b before the beat the 240 bpm grid stands at at S stays at
        // 12000·b; a later one lands at S + (b − S/12000)·14400 =
        // (72000·b − S)/5, rounded (never a tie: S is a multiple of 64).
        let (mut before, mut later) = (0, 0);
        for (order, at) in deck.engine().event_samples() {
            let b = order as u64 + 1;
            let want = if b * 12_000 < s {
                before += 1;
                b * 12_000
            } else {
                // Those played after the swap.
                later += usize::from((72_000 * b - s + 2) / 5 < frames);
                (72_000 * b - s + 2) / 5
            };
            assert_eq!(at, want, "beat {b}, S {s}");
        }
        assert!(
            before >= 2 && later >= 4,
            "S {s}: {before} beats before it, {later} played after it"
        );
        deck.play_to(frames);
        let again = deck.into_device_samples(frames, None);
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&again) == bits(&played),
            "the replay differs from what was played"
        );
    }

    /// A scene of `count` events in beats (a dc stepped every sixteenth
    /// of a beat) under the filtered input, at `tempo`, its filter at
    /// `cutoff`.
    fn many_beats_incoming(tempo: &str, cutoff: &str, count: u64, fed: bool) -> Incoming {
        let events: Vec<String> = (1..=count)
            .map(|k| {
                format!(
                    r#"{{"time":"{}beats","node":"v","param":"value","value":{}}}"#,
                    k as f64 / 16.0,
                    (k % 100) as f64 / 100.0
                )
            })
            .collect();
        let base = beat_scene(tempo);
        let head = &base[..base.find(r#""events":["#).unwrap()];
        let text = format!(r#"{head}"events":[{}]}}"#, events.join(","))
            .replace(r#""cutoff":"2kHz""#, &format!(r#""cutoff":"{cutoff}""#));
        let mut inc = Incoming::from_plan(
            common::plan(&text, Some(Profile::Repro), 64),
            None,
            Vec::new(),
        );
        if fed {
            inc.engine.set_input_feed(Box::new(Feed));
        }
        inc
    }

    /// An edit of a scene of thousands of events in beats that keeps the
    /// tempo, caught up through the history on the audio thread: the swap
    /// leaves the events where the beat grid puts them (the swap sample
    /// does not move them: no rational arithmetic and no sort in the
    /// callback), no allocation or free, and the replay of N and S is the
    /// same bits.
    #[test]
    fn a_catch_up_swap_of_many_events_in_beats_never_allocates_and_replays() {
        const COUNT: u64 = 5000;
        let first = many_beats_incoming("240bpm", "2kHz", COUNT, false);
        let meters = Arc::new(Meters::default());
        let mut player = Player::new(
            *first.engine,
            2,
            None,
            240,
            meters.clone(),
            Arc::new(Switches::default()),
            std::time::Instant::now(),
        );
        player.set_input(Box::new(Source(0)));
        let (writer, hist) = history(2, 48_000, 8.0, 0);
        player.set_history(writer);
        let mut link = player.link();
        let cell = PlayerCell::new(player);
        let mut buf = vec![0.0f32; 48 * 2];
        let mut played = Vec::new();
        let (a0, f0) = counts();
        let mut fill = |played: &mut Vec<f32>| {
            realtime(|| cell.fill(&mut buf));
            played.extend_from_slice(&buf);
        };
        for _ in 0..300 {
            fill(&mut played);
        }
        link.send(ToAudio::Save(first.saved)).ok().unwrap();
        let (state, n) = loop {
            fill(&mut played);
            if let Some(FromAudio::Saved { state, at }) = link.receive() {
                break (state, at);
            }
        };
        let mut next = many_beats_incoming("240bpm", "700Hz", COUNT, false);
        next.engine.migrate(&state, n);
        next.engine.set_swap_sample(u64::MAX);
        let m = fast_forward_through(&mut next.engine, &hist, u64::MAX).unwrap();
        while meters.clock.load(Ordering::Relaxed) < m + 5 * 64 {
            fill(&mut played);
        }
        link.send(ToAudio::CatchUp {
            engine: next.engine,
            from: m,
            fade: 0,
            at: None,
        })
        .ok()
        .unwrap();
        let s = loop {
            fill(&mut played);
            match link.receive() {
                Some(FromAudio::Swapped { at }) => break at,
                Some(FromAudio::Refused { clock, .. }) => panic!("refused at {clock}"),
                _ => {}
            }
        };
        for _ in 0..300 {
            fill(&mut played);
        }
        let (a1, f1) = counts();
        assert_eq!(
            (a1 - a0, f1 - f0),
            (0, 0),
            "the callback allocated or freed"
        );
        assert!(
            s > m + 5 * 64,
            "it caught up over several blocks: M {m}, S {s}"
        );
        drop(link.receive());

        let frames = played.len() as u64 / 2;
        let mut deck = Scripted::new(many_beats_incoming("240bpm", "2kHz", COUNT, true), 2);
        deck.handover_at(many_beats_incoming("240bpm", "700Hz", COUNT, true), n, s, 0)
            .unwrap();
        // 240 bpm: 12000 samples a beat, event k at k/16 beats = 750·k.
        let mut count = 0;
        for (order, at) in deck.engine().event_samples() {
            assert_eq!(at, 750 * (order as u64 + 1), "event {order}");
            count += 1;
        }
        assert_eq!(count, COUNT);
        deck.play_to(frames);
        let again = deck.into_device_samples(frames, None);
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&again) == bits(&played),
            "the replay differs from what was played"
        );
    }
}

/// A flood of change records through a player's ring while it plays: the
/// ring filled to the brim and left full for a hundred blocks with no
/// report drained, then thousands more pushed as fast as they are taken —
/// records for the next block, for samples ahead (the engine's queue
/// fills, records wait in the ring), with ramps, and stale ones (resolved
/// for an engine that does not play) — and every record reported, none
/// lost: no allocation or free in the callback under any profile.
#[test]
fn a_flood_of_control_records_never_allocates_in_the_callback() {
    use morphrt::engine::ChangeRecord;
    use morphrt::graph::ControlValue;
    use std::sync::atomic::Ordering;
    let text = r#"{"version": "1.0", "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.1}}],
                   "outputs": {"main": ["d"]}}"#;
    for p in Profile::ALL {
        let engine = common::engine(text, Some(p), 64);
        let (node, param) = engine.find_param("d", "value").unwrap();
        let id = engine.id();
        let filled = flood(engine, p, |link, meters, seq| {
            let clock = meters.clock.load(Ordering::Relaxed);
            let record = ChangeRecord {
                // Every fifth lands 1…40 blocks ahead, off the block grid.
                sample: if seq % 5 == 0 {
                    clock + 64 * (1 + seq % 40) + seq % 64
                } else {
                    0
                },
                node: node as u32,
                param: param as u16,
                value: ControlValue::Number((seq % 100) as f64 / 100.0),
                ramp: if seq % 3 == 0 { 32 } else { 0 },
                // Every seventh was resolved for an engine that never played.
                engine: if seq % 7 == 0 { u64::MAX } else { id },
                seq,
            };
            link.records.push(record).is_ok()
        });
        assert_eq!(filled, 4096, "the ring filled");
    }
}

/// Plays `engine` in a player under `p`, its control link flooded by
/// `push(link, meters, seq)` (false: the ring is full) up to 20 000
/// records while the callback runs, and asserts that the callback never
/// allocated or freed, that every record was reported (stale: every
/// seventh, which `push` resolves for an engine that never played) and
/// that no report was lost. Returns how many records filled the ring
/// before the first callback.
fn flood(
    engine: morphrt::engine::Engine,
    p: Profile,
    mut push: impl FnMut(
        &mut morphrt::host::live::player::ChangeLink,
        &morphrt::host::live::player::Meters,
        u64,
    ) -> bool,
) -> u64 {
    use morphrt::engine::Outcome;
    use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    let meters = Arc::new(Meters::default());
    let controls = Arc::new(Switches::default());
    let mut player = Player::new(
        engine,
        2,
        None,
        240,
        meters.clone(),
        controls,
        std::time::Instant::now(),
    );
    let mut link = player.control_link();
    let cell = PlayerCell::new(player);
    let mut buf = vec![0.0f32; 64 * 2];
    let mut total = (0, 0);
    let mut play = |blocks: usize, total: &mut (usize, usize)| {
        for _ in 0..blocks {
            let before = counts();
            realtime(|| cell.fill(&mut buf));
            let after = counts();
            *total = (total.0 + after.0 - before.0, total.1 + after.1 - before.1);
        }
    };
    let mut seq = 0;
    while push(&mut link, &meters, seq) {
        seq += 1;
    }
    let filled = seq;
    play(100, &mut total);
    let (mut applied, mut stale, mut other) = (0u64, 0u64, 0u64);
    let mut drain = |link: &mut morphrt::host::live::player::ChangeLink| {
        while let Ok(r) = link.reports.pop() {
            match r.outcome {
                Outcome::Applied { .. } => applied += 1,
                Outcome::Stale => stale += 1,
                _ => other += 1,
            }
        }
    };
    while seq < 20_000 {
        drain(&mut link);
        for _ in 0..300 {
            if seq == 20_000 || !push(&mut link, &meters, seq) {
                break;
            }
            seq += 1;
        }
        play(1, &mut total);
    }
    for _ in 0..100 {
        drain(&mut link);
        play(1, &mut total);
    }
    drain(&mut link);
    assert_eq!(total, (0, 0), "under {p}: the callback allocated or freed");
    assert_eq!(
        (applied + stale + other, other),
        (seq, 0),
        "under {p}: every record reported"
    );
    assert_eq!(stale, seq.div_ceil(7), "under {p}");
    assert_eq!(meters.control_reports_lost.load(Ordering::Relaxed), 0);
    filled
}

/// Note records for a voice module of 8 voices, flooding the callback:
/// ons and offs for 128 keys (stealing, fading, freeing voices), the pedal,
/// notes ahead and stale ones — every one reported, none lost, and no
/// allocation or free in the callback under any profile.
#[test]
fn a_flood_of_note_records_never_allocates_in_the_callback() {
    use morphrt::engine::NoteRecord;
    use morphrt::graph::{NoteAction, PlanNote};
    let text = r#"{"version": "1.0", "modules": [{"id": "pad", "voices": 8,
        "note": {"pitch": "osc.freq", "gate": "env.gate"},
        "nodes": [{"id": "osc", "op": "sine"},
                  {"id": "env", "op": "adsr", "params": {"release": "5ms"}},
                  {"id": "vca", "op": "multiply"}]}],
      "edges": [{"from": "osc", "to": "vca:a"}, {"from": "env", "to": "vca:b"}],
      "outputs": {"main": ["pad"]}}"#;
    for p in Profile::ALL {
        let engine = common::engine(text, Some(p), 64);
        let pool = engine.voice_pool("pad").unwrap();
        let id = engine.id();
        flood(engine, p, |link, _, seq| {
            let hz = 100.0 + (seq % 128) as f64;
            let action = match seq % 11 {
                0 => NoteAction::Sustain(seq % 22 == 0),
                1..=5 => NoteAction::On {
                    key: hz.to_bits(),
                    tag: 0,
                    pitch_hz: hz,
                    velocity: 0.5,
                },
                // A key pressure onto the voice's `osc.amp`, and a bend.
                6 => NoteAction::Touch {
                    key: hz.to_bits(),
                    node: 0,
                    param: 1,
                    value: morphrt::graph::ControlValue::Number(0.5),
                    ramp: 32,
                },
                7 => NoteAction::Bend((seq % 5) as f64 - 2.0),
                _ => NoteAction::Off {
                    key: hz.to_bits(),
                    tag: 0,
                },
            };
            let record = NoteRecord {
                note: PlanNote {
                    // Every fifth lands ahead, off the block grid.
                    sample: if seq % 5 == 0 {
                        64 * (seq % 40) + seq % 64
                    } else {
                        0
                    },
                    pool,
                    action,
                },
                // Every seventh was resolved for an engine that never played.
                engine: if seq % 7 == 0 { u64::MAX } else { id },
                seq: seq + 1,
            };
            link.notes.push(record).is_ok()
        });
    }
}

/// A voice scene: four voices, each a saw with noise through an envelope
/// and a filter; notes from the scene (a chord, then more notes than
/// voices: steals), with a pedal, and notes pushed from outside.
const VOICES: &str = r#"{ "version": "1.0", "seed": 3,
  "modules": [ { "id": "pad", "voices": 4, "note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" },
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.2 } },
        { "id": "hiss", "op": "noise", "params": { "amp": 0.01 } },
        { "id": "sum", "op": "mix" },
        { "id": "lp", "op": "svf", "params": { "cutoff": "3kHz" } },
        { "id": "env", "op": "adsr", "params": { "attack": "2ms", "decay": "20ms", "sustain": 0.5, "release": "10ms" } },
        { "id": "vca", "op": "multiply" },
        { "id": "amp", "op": "gain" } ] } ],
  "edges": [ { "from": "osc", "to": "sum:in0" }, { "from": "hiss", "to": "sum:in1" }, { "from": "sum", "to": "lp" },
             { "from": "lp", "to": "vca:a" }, { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "amp" } ],
  "outputs": { "main": ["pad"] },
  "events": [
    { "time": "0s", "module": "pad", "note": 60, "duration": "100ms" },
    { "time": "0s", "module": "pad", "note": 64, "velocity": 0.7, "duration": "100ms" },
    { "time": "0s", "module": "pad", "note": 67, "velocity": 0.5, "duration": "100ms" },
    { "time": "150ms", "module": "pad", "sustain": true },
    { "time": "200ms", "module": "pad", "note": 62, "duration": "50ms" },
    { "time": "210ms", "module": "pad", "note": 65, "duration": "50ms" },
    { "time": "220ms", "module": "pad", "note": 69, "duration": "50ms" },
    { "time": "230ms", "module": "pad", "note": 72, "duration": "50ms" },
    { "time": "240ms", "module": "pad", "note": 74, "duration": "50ms" },
    { "time": "250ms", "module": "pad", "note": 76, "duration": "50ms" },
    { "time": "400ms", "module": "pad", "sustain": false } ] }"#;

/// A voice scene under every profile: note-ons, steals (more notes than
/// voices), releases under and after the pedal, voices going free, and
/// notes pushed from outside — no allocation or free in `process_block`,
/// and each of those really happened in the checked section.
#[test]
fn voices_starting_stealing_releasing_and_going_free_never_allocate() {
    use morphrt::engine::Phase;
    use morphrt::graph::{NoteAction, PlanNote};
    for p in Profile::ALL {
        let mut e = common::engine(VOICES, Some(p), 64);
        let pool = e.voice_pool("pad").unwrap();
        let mut seen = [false; 4];
        let mut freed_after_sounding = false;
        let (mut a, mut f) = (0, 0);
        for k in 0..600u64 {
            let clock = e.clock();
            let pushed = (k % 97 == 50 && k < 500).then(|| {
                let hz = 300.0 + k as f64;
                [
                    PlanNote {
                        sample: clock + 7,
                        pool,
                        action: NoteAction::On {
                            key: hz.to_bits(),
                            tag: 0,
                            pitch_hz: hz,
                            velocity: 0.8,
                        },
                    },
                    PlanNote {
                        sample: clock + 900,
                        pool,
                        action: NoteAction::Off {
                            key: hz.to_bits(),
                            tag: 0,
                        },
                    },
                ]
            });
            let before_sounding = e.voices_sounding()[0].1;
            let (a0, f0) = counts();
            realtime(|| {
                if let Some(notes) = pushed {
                    for n in notes {
                        assert!(e.push_note(n));
                    }
                }
                e.process_block(if k % 5 == 2 {
                    1 + (k as usize * 37) % 64
                } else {
                    64
                });
                std::hint::black_box(e.bus().get(0, 0));
            });
            let (a1, f1) = counts();
            (a, f) = (a + a1 - a0, f + f1 - f0);
            for v in &e.voice_states()[0].voices {
                seen[v.phase as usize] = true;
            }
            freed_after_sounding |=
                before_sounding > 0 && e.voices_sounding()[0].1 < before_sounding;
        }
        assert_eq!(
            (a, f),
            (0, 0),
            "under {p}: allocations/frees inside process_block"
        );
        for phase in [Phase::Free, Phase::Held, Phase::Released, Phase::Stealing] {
            assert!(
                seen[phase as usize],
                "under {p}: no voice was ever {phase:?}"
            );
        }
        assert!(freed_after_sounding, "under {p}: no voice went free");
        assert_eq!(
            e.voices_sounding()[0].1,
            0,
            "under {p}: all free at the end"
        );
    }
}

/// Lane groups: the benchmark scenes run 256 sines, 64 noises and 64
/// biquads in groups under every profile; their callback, with a
/// structural edit, a param edit and a profile switch every 100 blocks
/// (each new engine grouped afresh off the audio thread), never allocates
/// or frees.
#[test]
fn grouped_plans_and_their_regrouping_handovers_never_allocate_in_the_callback() {
    for name in ["w1", "w4"] {
        let path = common::root().join(format!("scenes/bench/{name}.json"));
        let scene = morphrt::scene::load_file(&path).unwrap();
        for p in Profile::ALL {
            let plan = compile(
                &scene,
                &CompileOptions {
                    profile: Some(p),
                    block_size: Some(64),
                    ..morphrt::host::files::resources::compile_options()
                },
            )
            .unwrap();
            let e = Engine::new(plan);
            let grouped: usize = e.lane_groups().iter().map(Vec::len).sum();
            assert!(
                grouped >= 128,
                "{name} under {p}: {grouped} nodes in groups"
            );
        }
        let (allocs, frees, changes) = handovers_in_the_callback(&path, 1_200, "bench-scene");
        assert!(changes >= 11, "{name}: {changes} handovers");
        assert_eq!(
            (allocs, frees),
            (0, 0),
            "{name}: the callback allocated or freed"
        );
    }
}

/// A change record of the wrong kind for `mix`'s gains array (an
/// integer), queued and played in the real-time section: refused when it
/// is queued, so nothing is freed (applied, it would replace the array and
/// free it on the audio thread).
#[test]
fn a_record_of_the_wrong_kind_frees_nothing_on_the_audio_thread() {
    use morphrt::engine::{ChangeRecord, Outcome};
    use morphrt::graph::ControlValue;
    let text = r#"{"version": "1.0", "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.1}},
                    {"id": "m", "op": "mix", "params": {"gains": [0.5, 0.25, 2.0]}}],
                   "edges": [{"from": "d", "to": "m:in0"}], "outputs": {"main": ["m"]}}"#;
    for p in Profile::ALL {
        let mut e = common::engine(text, Some(p), 64);
        let (node, param) = e.find_param("m", "gains").unwrap();
        let record = ChangeRecord {
            sample: 0,
            node: node as u32,
            param: param as u16,
            value: ControlValue::Integer(1),
            ramp: 0,
            engine: e.id(),
            seq: 1,
        };
        let (a0, f0) = counts();
        let pushed = realtime(|| {
            let pushed = e.push_change(record);
            for _ in 0..4 {
                e.process_block(64);
            }
            pushed
        });
        let (a1, f1) = counts();
        assert_eq!((a1 - a0, f1 - f0), (0, 0), "{p}: allocated or freed");
        assert_eq!(pushed.unwrap_err().outcome, Outcome::WrongKind, "{p}");
    }
}

mod fatal_panics {
    //! A panic in the callback outside every node: the callback writes
    //! silence from then on without running the player again, frees no
    //! engine, and a panic that would recur each callback happens once.

    use super::{common, counts, realtime};
    use morphrt::engine::{ChangeRecord, Engine};
    use morphrt::graph::ControlValue;
    use morphrt::host::live::input::{InputFormat, LiveInput};
    use morphrt::host::live::player::{
        install_panic_hook, Meters, Player, PlayerCell, Switches, ToAudio,
    };
    use morphrt::ops::{AnyNode, Io, NodeProcessor, NodeState, StateError, Value};
    use morphrt::profile::Profile;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    /// Allocations std makes for one panic caught on the audio thread (the
    /// payload's box and the unwinder's exception), and frees (the
    /// exception, when it is caught): what the callback does at most, once.
    const PANIC_ALLOCS: usize = 2;
    const PANIC_FREES: usize = 1;

    /// A player of `engine` on two channels, and its meters.
    fn player(engine: Engine) -> (Player, Arc<Meters>) {
        let meters = Arc::new(Meters::default());
        let player = Player::new(
            engine,
            2,
            None,
            64,
            meters.clone(),
            Arc::new(Switches::default()),
            std::time::Instant::now(),
        );
        (player, meters)
    }

    /// Plays `cell` for `callbacks` callbacks of 64 frames, counting.
    fn play(cell: &PlayerCell, callbacks: usize) -> ((usize, usize), Vec<f32>) {
        let mut buf = vec![0.0f32; 64 * 2];
        let mut all = Vec::new();
        let (a0, f0) = counts();
        for _ in 0..callbacks {
            realtime(|| cell.fill(&mut buf));
            all.extend_from_slice(&buf);
        }
        let (a1, f1) = counts();
        ((a1 - a0, f1 - f0), all)
    }

    /// An input whose every read panics.
    struct Broken;

    impl LiveInput for Broken {
        fn channels(&self) -> usize {
            1
        }
        fn format(&self) -> InputFormat {
            InputFormat::F32
        }
        fn read(&mut self, _dst: &mut [f64]) {
            panic!("a broken input");
        }
    }

    /// A panic that would recur in every callback (the input's read) is
    /// caught once: the allocations are std's for that one panic, over
    /// 1000 callbacks of silence, and the control thread sees it counted.
    #[test]
    fn a_panic_outside_every_node_happens_once_and_the_callback_goes_silent() {
        install_panic_hook();
        let (mut player, meters) = player(common::engine(common::DC, Some(Profile::Live), 64));
        player.set_input(Box::new(Broken));
        let cell = PlayerCell::new(player);
        let ((allocs, frees), out) = play(&cell, 1000);
        assert!(
            allocs <= PANIC_ALLOCS && frees <= PANIC_FREES,
            "{allocs} allocations, {frees} frees"
        );
        assert_eq!(meters.callback_panics.load(Ordering::Relaxed), 1);
        assert!(out.iter().all(|x| *x == 0.0), "silence");
        assert!(cell.take().is_some(), "the player comes back to be dropped");
    }

    /// A biquad whose mode panics when set: in an engine offered to the
    /// callback, a control carried at the swap sets it there.
    struct BadMode;

    impl<S: morphrt::dsp::Sample> NodeProcessor<S> for BadMode {
        fn process(&mut self, io: &mut Io<'_, S>) {
            let n = io.frames;
            io.outputs[0][..n].fill(S::ZERO);
        }
        fn reset(&mut self) {}
        fn snapshot(&self, _st: &mut NodeState) {}
        fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
            Ok(())
        }
        fn set_discrete(&mut self, _param: usize, _value: &Value) {
            panic!("a broken mode");
        }
    }

    const FILTERED: &str = r#"{"version": "1.0", "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.25}},
        {"id": "f", "op": "biquad", "params": {"mode": "lowpass", "cutoff": "1kHz"}}],
        "edges": [{"from": "d", "to": "f"}], "outputs": {"main": "f"}}"#;

    /// A panic while the callback swaps an offered engine in (outside every
    /// node): neither engine is freed on the audio thread (the callback
    /// frees only std's exception), and the callback goes silent.
    #[test]
    fn a_panic_during_a_swap_frees_no_engine_on_the_audio_thread() {
        install_panic_hook();
        for p in Profile::ALL {
            let mut old = common::engine(FILTERED, Some(p), 64);
            common::play(&mut old, 256, 0);
            let st = old.snapshot();
            let mut plan = common::plan(FILTERED, Some(p), 64);
            let f = plan.nodes.iter_mut().find(|n| n.id == "f").unwrap();
            f.node = Some(match f.node {
                Some(AnyNode::F64(_)) => AnyNode::F64(Box::new(BadMode)),
                _ => AnyNode::F32(Box::new(BadMode)),
            });
            let mut new = Engine::new(plan);
            new.migrate(&st, 256);
            // A control moves the old engine's mode after the snapshot: the
            // swap carries it into the new engine's node, which panics.
            let (node, param) = old.find_param("f", "mode").unwrap();
            let record = ChangeRecord {
                sample: 256,
                node: node as u32,
                param: param as u16,
                value: ControlValue::Enum(1),
                ramp: 0,
                engine: old.id(),
                seq: 1,
            };
            old.push_change(record).unwrap();
            common::play(&mut old, 320, 0);
            morphrt::engine::incoming::advance_to(&mut new, 320);
            let new_id = new.id();
            let (mut player, meters) = player(old);
            let mut link = player.link();
            let cell = PlayerCell::new(player);
            let offer = ToAudio::Offer {
                engine: Box::new(new),
                at: 320,
                fade: 0,
            };
            assert!(link.send(offer).is_ok());
            let ((allocs, frees), out) = play(&cell, 50);
            assert!(
                allocs <= PANIC_ALLOCS && frees <= PANIC_FREES,
                "{p}: {allocs} allocations, {frees} frees"
            );
            assert_eq!(meters.callback_panics.load(Ordering::Relaxed), 1, "{p}");
            assert!(out.iter().all(|x| *x == 0.0), "{p}: silence");
            // Both engines come back to be dropped here: the new one in
            // place, the old one retired.
            let player = cell.take().unwrap();
            assert_eq!(player.engine().id(), new_id, "{p}");
        }
    }
}

/// A voice that holds long state: a 2 s `delay` and a `reverb`, in a
/// module of three voices whose notes steal one another.
const LONG_VOICES: &str = r#"{ "version": "1.0", "seed": 3,
  "modules": [ { "id": "pad", "voices": 3, "note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" },
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.2 } },
        { "id": "env", "op": "adsr", "params": { "attack": "2ms", "decay": "20ms", "sustain": 0.5, "release": "10ms" } },
        { "id": "vca", "op": "multiply" },
        { "id": "dl", "op": "delay", "params": { "max_time": "2s", "time": "300ms", "feedback": 0.5, "mix": 0.5 } },
        { "id": "rv", "op": "reverb" },
        { "id": "amp", "op": "gain" } ] } ],
  "edges": [ { "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "dl" },
             { "from": "dl", "to": "rv" }, { "from": "rv", "to": "amp" } ],
  "outputs": { "main": ["pad"] } }"#;

/// Voices with long state started, stolen, cleared and started again
/// after their clearing, under every profile: no allocation or free in
/// `process_block`, and each of those really happened in the checked
/// section.
#[test]
fn voices_with_long_state_started_stolen_and_cleared_never_allocate() {
    use morphrt::engine::Phase;
    use morphrt::graph::{NoteAction, PlanNote};
    for p in Profile::ALL {
        let mut e = common::engine(LONG_VOICES, Some(p), 64);
        let pool = e.voice_pool("pad").unwrap();
        let (mut a, mut f) = (0, 0);
        let (mut cleared, mut started_clean, mut held) = (false, false, 0);
        for k in 0..400u64 {
            let clock = e.clock();
            // Four notes a block for a while (steals), then a rest (frees).
            let on = k % 100 < 30;
            let notes = (0..4u64).map(|j| {
                let hz = 200.0 + (k * 4 + j) as f64;
                PlanNote {
                    sample: clock + j * 13,
                    pool,
                    action: if on {
                        NoteAction::On {
                            key: hz.to_bits(),
                            tag: 0,
                            pitch_hz: hz,
                            velocity: 0.8,
                        }
                    } else {
                        NoteAction::Off {
                            key: (hz - 16.0).to_bits(),
                            tag: 0,
                        }
                    },
                }
            });
            let waiting: Vec<bool> = e.voice_states()[0]
                .voices
                .iter()
                .map(|v| v.clearing)
                .collect();
            let (a0, f0) = counts();
            realtime(|| {
                for n in notes {
                    assert!(e.push_note(n));
                }
                e.process_block(64);
                std::hint::black_box(e.bus().get(0, 0));
            });
            let (a1, f1) = counts();
            (a, f) = (a + a1 - a0, f + f1 - f0);
            for (v, was) in e.voice_states()[0].voices.iter().zip(waiting) {
                cleared |= v.clearing;
                started_clean |= was && v.phase == Phase::Held;
                held += usize::from(v.phase == Phase::Held);
            }
        }
        assert_eq!(
            (a, f),
            (0, 0),
            "under {p}: allocations/frees inside process_block"
        );
        assert!(cleared, "under {p}: no voice waited for its clearing");
        assert!(
            started_clean,
            "under {p}: no voice started after its clearing"
        );
        assert!(held > 0, "under {p}: nothing played");
    }
}
