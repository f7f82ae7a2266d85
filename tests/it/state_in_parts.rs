//! Long state handled in parts over blocks, never all in one callback.
//!
//! A handover's save: the audio thread copies long state (delay lines,
//! convolution histories, edge and main-bus lines) in parts before each
//! block after N, and ends up with exactly the state at N, as a save of
//! everything at once would have; a node reset while it runs starts it
//! again; the callback never allocates while it runs.
//!
//! A node's reset after NaN/Inf: a 30 s line is zeroed in parts while the
//! node is silent, the same in every run, and a snapshot taken half way
//! resumes exactly.

use crate::support as common;

use morphrt::engine::{Engine, EngineState, PART_SAMPLES};
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use std::path::{Path, PathBuf};

use crate::support::counting;
use counting::{counts, realtime};

fn engine_of(path: &Path, text: &str, profile: Profile, block: usize) -> Engine {
    let scene = morphrt::scene::load_str(
        text,
        &path.display().to_string(),
        path.parent().map(Path::to_path_buf),
    )
    .unwrap_or_else(|e| panic!("{}", e[0]));
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(profile),
            block_size: Some(block),
            seed: Some(7),
            resolver: morphrt::host::files::resources::Folders::shared(vec![
                common::root().join("resources")
            ]),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{}", e[0]));
    Engine::new(plan)
}

/// Two engines of one scene, both run to `n` (a block boundary): one
/// saves everything at once, the other in parts while it keeps playing.
/// Returns both states and the blocks the parts took.
fn both_ways(
    path: &Path,
    text: &str,
    profile: Profile,
    block: usize,
    n: u64,
) -> (EngineState, EngineState, u64) {
    let mut whole = engine_of(path, text, profile, block);
    let mut parts = engine_of(path, text, profile, block);
    let mut at_once = whole.snapshot();
    // Shaped before anything ran: whatever it holds at the end was copied.
    let mut in_parts = parts.snapshot();
    whole.fast_forward(n);
    parts.fast_forward(n);
    whole.save_into(&mut at_once);
    let mut blocks = 0;
    let mut done = parts.begin_save(&mut in_parts);
    while !done {
        parts.process_block(block);
        blocks += 1;
        done = parts.continue_save(&mut in_parts);
        assert!(blocks < 1_000_000, "the save never completes");
    }
    // Two engines: the states are alike but for the engine each names.
    in_parts.engine = at_once.engine;
    (at_once, in_parts, blocks)
}

/// A saw into three delays of `max` each, in series, with an edge delay
/// line and a main bus whose channels differ in latency (a spectral gate
/// on one), so every kind of long history is in it.
fn long_scene(max: &str) -> String {
    format!(
        r#"{{
  "version": "1.0",
  "sample_rate": 48000,
  "nodes": [
    {{ "id": "tone", "op": "saw", "params": {{ "freq": "110Hz", "amp": 0.3 }} }},
    {{ "id": "d1", "op": "delay", "params": {{ "time": "250ms", "feedback": 0.6, "mix": 0.5, "max_time": "{max}" }} }},
    {{ "id": "d2", "op": "delay", "params": {{ "time": "700ms", "feedback": 0.5, "mix": 0.4, "max_time": "{max}" }} }},
    {{ "id": "d3", "op": "delay", "params": {{ "time": "1.3s", "feedback": 0.4, "mix": 0.4, "max_time": "{max}" }} }},
    {{ "id": "gate", "op": "spectral_gate", "params": {{ "threshold": "-60dB", "fft_size": 1024, "hop": 256 }} }},
    {{ "id": "sum", "op": "mix" }}
  ],
  "edges": [
    {{ "from": "tone", "to": "d1" }},
    {{ "from": "d1", "to": "d2" }},
    {{ "from": "d2", "to": "d3" }},
    {{ "from": "d3", "to": "sum:in0" }},
    {{ "from": "tone", "to": "sum:in1", "delay": "400ms" }},
    {{ "from": "d2", "to": "gate" }}
  ],
  "outputs": {{ "main": ["sum", "gate"] }}
}}"#
    )
}

#[test]
fn long_delay_lines_are_saved_in_parts_exactly_as_at_n() {
    let dir = common::temp_dir("save-parts");
    // Lines of 2 s have wrapped by 3 s (every slot holds signal, the
    // oldest where the next frame writes); lines of 30 s have not.
    for (max, lines) in [("2s", 2 * 48_000 + 2), ("30s", 30 * 48_000 + 2)] {
        let path = dir.join(format!("long-{max}.json"));
        let text = long_scene(max);
        std::fs::write(&path, &text).unwrap();
        for profile in Profile::ALL {
            for block in [64, 1000] {
                let n = 3 * 48_000 + 7 * block as u64;
                let (at_once, in_parts, blocks) = both_ways(&path, &text, profile, block, n);
                assert!(
                    at_once == in_parts,
                    "{max} lines, {profile} at block {block}: the parts differ from the state at N"
                );
                assert_eq!(in_parts.clock, n);
                // Three lines in parts of about PART_SAMPLES per block (or
                // two blocks per line, if more).
                let total: usize = 3 * lines;
                let per_block = PART_SAMPLES.max(3 * 2 * block);
                let expected = total.div_ceil(per_block) as u64;
                assert!(
                    blocks >= expected / 2 && blocks <= 2 * expected + 2,
                    "{max} lines, {profile} at block {block}: {blocks} blocks, expected about {expected}"
                );
            }
        }
    }
}

#[test]
fn shipped_scenes_are_saved_in_parts_exactly_as_at_n() {
    let mut scenes: Vec<PathBuf> = common::shipped_scenes();
    scenes.push(common::root().join("scenes/bench/long-delays.json"));
    for path in scenes {
        let text = std::fs::read_to_string(&path).unwrap();
        for profile in Profile::ALL {
            // Strict's direct convolution of a 2 s IR is slow unoptimised:
            // a shorter run into it.
            let n = if profile == Profile::Strict {
                6400
            } else {
                64_000
            };
            let (at_once, in_parts, _) = both_ways(&path, &text, profile, 64, n);
            assert!(
                at_once == in_parts,
                "{} under {profile}: the parts differ from the state at N",
                path.display()
            );
        }
    }
}

#[test]
fn a_convolution_history_is_saved_in_parts_exactly_as_at_n() {
    let dir = common::temp_dir("save-parts-conv");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    // A 3 s mono IR: a decaying sequence, enough to span many parts.
    let ir: Vec<f32> = (0..144_000)
        .map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * libm::expf(-(i as f32) / 30_000.0))
        .collect();
    common::write_mono_f32(&dir.join("resources").join("ir.wav"), &ir);
    let text = r#"{
  "version": "1.0",
  "sample_rate": 48000,
  "nodes": [
    { "id": "tone", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } },
    { "id": "verb", "op": "convolution", "params": { "ir": "@resource:ir.wav", "mix": 0.5 } }
  ],
  "edges": [ { "from": "tone", "to": "verb" } ],
  "outputs": { "main": ["verb:out", "verb:out_r"] }
}"#;
    let path = dir.join("conv.json");
    std::fs::write(&path, text).unwrap();
    for profile in [Profile::Repro, Profile::Live, Profile::Strict] {
        let n = if profile == Profile::Strict {
            4_032
        } else {
            4 * 48_000 + 64 * 5
        };
        let (at_once, in_parts, blocks) = both_ways(&path, text, profile, 64, n);
        assert!(
            at_once == in_parts,
            "{profile}: the parts differ from the state at N"
        );
        assert!(
            blocks > 2,
            "{profile}: a 3 s history should take several parts, took {blocks}"
        );
    }
}

/// The engine of scene `text` under `profile` (blocks of 64) with the
/// nodes `ids` replaced by `make()`'s processors.
fn with_nodes<P>(text: &str, profile: Profile, ids: &[&str], make: impl Fn() -> P) -> Engine
where
    P: morphrt::ops::NodeProcessor<f32> + morphrt::ops::NodeProcessor<f64> + 'static,
{
    use morphrt::ops::AnyNode;
    let mut plan = common::plan(text, Some(profile), 64);
    for id in ids {
        let i = plan.nodes.iter().position(|n| n.id == *id).unwrap();
        plan.nodes[i].node = Some(match plan.nodes[i].profile.precision {
            morphrt::dsp::Precision::F32 => AnyNode::F32(Box::new(make())),
            morphrt::dsp::Precision::F64 => AnyNode::F64(Box::new(make())),
        });
    }
    Engine::new(plan)
}

/// The scene's engine with node `spike` replaced by a [`Spike`] at `at`.
fn spiking(text: &str, profile: Profile, at: u64) -> Engine {
    with_nodes(text, profile, &["spike"], || Burst {
        from: at,
        len: 1,
        value: Some(f64::INFINITY),
    })
}

#[test]
fn a_reset_during_the_save_starts_it_again_at_a_later_boundary() {
    // A node overflows at 3.01 s, while the save begun at 3 s is still
    // copying the 30 s line: the engine resets it, and the save starts
    // again from the next boundary.
    let text = r#"{
  "version": "1.0",
  "sample_rate": 48000,
  "nodes": [
    { "id": "tone", "op": "saw", "params": { "freq": "110Hz", "amp": 0.3 } },
    { "id": "d1", "op": "delay", "params": { "time": "250ms", "feedback": 0.6, "mix": 0.5, "max_time": "30s" } },
    { "id": "spike", "op": "dc", "params": { "value": 0.0 } },
    { "id": "sum", "op": "mix" }
  ],
  "edges": [
    { "from": "tone", "to": "d1" },
    { "from": "d1", "to": "sum:in0" },
    { "from": "spike", "to": "sum:in1" }
  ],
  "outputs": { "main": ["sum"] }
}"#;
    let at = 3 * 48_000 + 480;
    for profile in Profile::ALL {
        let mut e = spiking(text, profile, at);
        let mut st = e.snapshot();
        e.fast_forward(3 * 48_000);
        let mut done = e.begin_save(&mut st);
        while !done {
            e.process_block(64);
            done = e.continue_save(&mut st);
        }
        assert_eq!(
            e.stats().nan_events,
            1,
            "{profile}: the node never overflowed"
        );
        let restarted_at = st.clock;
        assert!(
            restarted_at > at,
            "{profile}: the save did not start again ({restarted_at})"
        );
        let mut whole = spiking(text, profile, at);
        let mut at_once = whole.snapshot();
        whole.fast_forward(restarted_at);
        whole.save_into(&mut at_once);
        at_once.engine = st.engine;
        assert!(
            at_once == st,
            "{profile}: the restarted save differs from the state at {restarted_at}"
        );
    }
}

#[test]
fn the_callback_never_allocates_while_a_save_runs_in_parts() {
    use morphrt::host::live::player::{FromAudio, ToAudio};
    let path = common::root().join("scenes/bench/long-delays.json");
    let text = std::fs::read_to_string(&path).unwrap();
    for profile in Profile::ALL {
        let engine = engine_of(&path, &text, profile, 64);
        let shaped = Box::new(engine.snapshot());
        let mut player = common::player(engine, 240);
        let mut link = player.link();
        let mut buf = vec![0.0f32; 2 * 64];
        for _ in 0..200 {
            player.fill(&mut buf);
        }
        let n = player.engine().clock();
        assert!(link.send(ToAudio::Save(shaped)).is_ok());
        let before = counts();
        let mut callbacks = 0;
        let reply = loop {
            realtime(|| player.fill(&mut buf));
            callbacks += 1;
            if let Some(r) = link.receive() {
                break r;
            }
            assert!(callbacks < 100_000, "{profile}: no reply");
        };
        let after = counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (0, 0),
            "{profile}: the callback allocated or freed"
        );
        match reply {
            FromAudio::Saved { at, state } => {
                assert_eq!(at, n, "{profile}: the state is not the one at N");
                assert_eq!(state.clock, n);
            }
            _ => panic!("{profile}: expected the saved state"),
        }
        assert!(
            callbacks > 10,
            "{profile}: 4.3 million samples in {callbacks} callbacks"
        );
    }
}

/// `value` (by default 3e38, near f32's largest: two of them summed
/// overflow whatever they feed, an f64 sum by leaving f32's range, which
/// the engine counts as an overflow in every profile) over samples
/// `from..from + len`, silence elsewhere.
struct Burst {
    from: u64,
    len: u64,
    value: Option<f64>,
}

impl<S: morphrt::dsp::Sample> morphrt::ops::NodeProcessor<S> for Burst {
    fn process(&mut self, io: &mut morphrt::ops::Io<'_, S>) {
        let big = self.value.unwrap_or(3.0e38);
        for i in 0..io.frames {
            let t = io.start + i as u64;
            let v = if (self.from..self.from + self.len).contains(&t) {
                big
            } else {
                0.0
            };
            io.outputs[0][i] = S::from_f64(v);
        }
    }
    fn reset(&mut self) {}
    fn snapshot(&self, _st: &mut morphrt::ops::NodeState) {}
    fn restore(&mut self, _st: &morphrt::ops::NodeState) -> Result<(), morphrt::ops::StateError> {
        Ok(())
    }
}

/// A saw and three bursts at 1 s into a delay of `max_time` 30 s: the delay
/// overflows and is reset.
fn overflowing_delay(profile: Profile) -> Engine {
    let text = r#"{
  "version": "1.0",
  "sample_rate": 48000,
  "nodes": [
    { "id": "tone", "op": "saw", "params": { "freq": "110Hz", "amp": 0.3 } },
    { "id": "a", "op": "dc" },
    { "id": "b", "op": "dc" },
    { "id": "c", "op": "dc" },
    { "id": "d", "op": "delay", "params": { "time": "10ms", "feedback": 0.5, "mix": 0.5, "max_time": "30s" } }
  ],
  "edges": [
    { "from": "tone", "to": "d" },
    { "from": "a", "to": "d" },
    { "from": "b", "to": "d" },
    { "from": "c", "to": "d" }
  ],
  "outputs": { "main": ["d"] }
}"#;
    // Three bursts: half their sum (the dry half of the mix) is beyond
    // f32's range in f64 too.
    with_nodes(text, profile, &["a", "b", "c"], || Burst {
        from: 48_000,
        len: 64,
        value: None,
    })
}

fn delay_resetting(e: &Engine) -> bool {
    let st = e.snapshot();
    st.nodes
        .iter()
        .find(|n| n.id == "d")
        .unwrap()
        .recovery
        .resetting
        .is_some()
}

#[test]
fn a_long_delay_line_is_reset_in_parts_while_silent_and_a_snapshot_half_way_resumes_exactly() {
    for profile in Profile::ALL {
        let mut e = overflowing_delay(profile);
        e.fast_forward(48_000);
        // The bursts, the overflow, and the reset in parts: no allocation.
        let mut resetting_blocks = 0;
        let mut half_way = None;
        let before = counts();
        for _ in 0..200 {
            realtime(|| e.process_block(64));
            if delay_resetting(&e) {
                resetting_blocks += 1;
                if resetting_blocks == 10 {
                    half_way = Some(e.snapshot());
                }
            }
        }
        let after = counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (0, 0),
            "{profile}: a block allocated or freed"
        );
        assert!(
            e.stats().nan_events >= 1,
            "{profile}: the delay never overflowed"
        );
        // 1.44 million samples at about PART_SAMPLES per block.
        let expected = (30 * 48_000 + 2usize).div_ceil(PART_SAMPLES);
        assert!(
            resetting_blocks >= expected / 2 && resetting_blocks <= 2 * expected + 2,
            "{profile}: the reset took {resetting_blocks} blocks, expected about {expected}"
        );
        // Silent while resetting, sounding again after.
        let tail: Vec<f64> = (0..100)
            .flat_map(|_| {
                e.process_block(64);
                (0..64).map(|i| e.bus().get(0, i)).collect::<Vec<_>>()
            })
            .collect();
        assert!(
            tail.iter().any(|x| *x != 0.0),
            "{profile}: the delay never sounded again"
        );

        // The same run again, and one resumed from the snapshot half way:
        // identical from there on.
        let st = half_way.expect("a snapshot half way through the reset");
        let mut straight = overflowing_delay(profile);
        straight.fast_forward(st.clock);
        let mut resumed = overflowing_delay(profile);
        resumed.restore(&st).unwrap();
        assert_eq!(resumed.clock(), st.clock);
        for _ in 0..300 {
            straight.process_block(64);
            resumed.process_block(64);
            for i in 0..64 {
                assert_eq!(
                    straight.bus().get(0, i).to_bits(),
                    resumed.bus().get(0, i).to_bits(),
                    "{profile}: the resumed reset differs at {}",
                    straight.clock()
                );
            }
        }
    }
}

#[test]
fn a_session_of_long_delay_lines_hands_over_and_replays_bit_for_bit() {
    // Three 30 s lines (scenes/bench/long-delays.json) at blocks of 64:
    // each save takes over a hundred blocks. An edit, a switch and a
    // snapshot while it plays; the journal replays what the device got.
    let dir = common::temp_dir("long-session");
    let text = std::fs::read_to_string(common::root().join("scenes/bench/long-delays.json"))
        .unwrap()
        .replace(
            "\"duration\": \"60s\",",
            "\"profile_config\": { \"block_size\": 64 },",
        );
    let path = dir.join("long.json");
    std::fs::write(&path, &text).unwrap();
    let journal = dir.join("j").join("long.jsonl");
    let capture = dir.join("cap.wav");
    let (mut child, lines) = common::run_clock(
        &path,
        &[
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
        &text.replace("\"feedback\": 0.6", "\"feedback\": 0.55"),
        std::time::Duration::from_millis(500),
    );
    common::wait_line(&lines, "edit applied", &mut log);
    let all = common::press_then_quit(
        &mut child,
        &lines,
        log,
        &[("r", "switched live → repro"), ("w", "snapshot at")],
    );
    common::assert_replays(&journal, &capture, &all);
}
