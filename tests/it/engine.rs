//! Engine behaviour through the library API: event timing per profile,
//! ramps, modulation, summing order, FP-mode runs, NaN handling, live's
//! limiter, and whole-engine snapshot/restore.

use crate::support as common;

use common::engine;
use morphrt::engine::render_to_vec;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use morphrt::scene::load_str;

fn dc_with_event(event: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "nodes": [ {{ "id": "v", "op": "dc", "params": {{ "value": 0 }} }} ],
             "outputs": {{ "main": ["v"] }}, "events": [ {event} ] }}"#
    )
}

/// The first frame at which channel 0 is non-zero.
fn onset(out: &[Vec<f64>]) -> usize {
    out[0]
        .iter()
        .position(|x| *x != 0.0)
        .expect("something happens")
}

#[test]
fn events_are_sample_accurate_under_strict_and_repro_and_block_accurate_under_live() {
    let text =
        dc_with_event(r#"{ "time": "1000samples", "node": "v", "param": "value", "value": 1 }"#);
    for p in [Profile::Strict, Profile::Repro] {
        for block in [64, 100, 1] {
            let out = render_to_vec(&mut engine(&text, Some(p), block), 2000);
            assert_eq!(onset(&out), 1000, "{p} block {block}");
            assert_eq!(out[0][1000], 1.0);
        }
    }
    let out = render_to_vec(&mut engine(&text, Some(Profile::Live), 64), 2000);
    assert_eq!(onset(&out), 960, "live: floor(1000/64)*64");
}

#[test]
fn off_grid_event_times_snap_under_repro_and_take_their_block_under_live() {
    // 30 us at 48 kHz is sample 1.44.
    let text = dc_with_event(r#"{ "time": "30us", "node": "v", "param": "value", "value": 1 }"#);
    let out = render_to_vec(&mut engine(&text, Some(Profile::Repro), 64), 100);
    assert_eq!(onset(&out), 1);
    // 1.01 ms = sample 48.48: snaps to 48 under repro, block start 0 under live (block 64).
    let text = dc_with_event(r#"{ "time": "1.01ms", "node": "v", "param": "value", "value": 1 }"#);
    let out = render_to_vec(&mut engine(&text, Some(Profile::Repro), 64), 100);
    assert_eq!(onset(&out), 48);
    let out = render_to_vec(&mut engine(&text, Some(Profile::Live), 16), 100);
    assert_eq!(
        onset(&out),
        48,
        "live: block containing sample 48.48 with block 16 starts at 48"
    );
    let out = render_to_vec(&mut engine(&text, Some(Profile::Live), 64), 100);
    assert_eq!(onset(&out), 0);
}

#[test]
fn ramps_are_linear_from_the_current_value_at_any_block_size() {
    let text = dc_with_event(
        r#"{ "time": "100samples", "node": "v", "param": "value", "value": 1, "ramp": "100samples" }"#,
    );
    let reference = render_to_vec(&mut engine(&text, Some(Profile::Strict), 1), 300);
    assert_eq!(reference[0][99], 0.0);
    assert_eq!(reference[0][100], 0.0);
    assert_eq!(reference[0][150], 0.5);
    assert_eq!(reference[0][175], 0.75);
    assert_eq!(reference[0][200], 1.0);
    assert_eq!(reference[0][299], 1.0);
    for block in [7, 64, 128, 4096] {
        let out = render_to_vec(&mut engine(&text, Some(Profile::Strict), block), 300);
        assert_eq!(out, reference, "block {block}");
    }
}

#[test]
fn modulation_adds_the_signal_to_the_static_value() {
    let text = r#"{ "version": "1.0", "nodes": [
        { "id": "src", "op": "dc", "params": { "value": 0.5 } },
        { "id": "mod", "op": "dc", "params": { "value": 0.25 } },
        { "id": "amp", "op": "gain", "params": { "gain": 0.5 } } ],
      "edges": [ { "from": "src", "to": "amp" }, { "from": "mod", "to": "amp:gain" } ],
      "outputs": { "main": ["amp"] } }"#;
    let out = render_to_vec(&mut engine(text, Some(Profile::Strict), 64), 10);
    assert!(
        out[0].iter().all(|x| *x == 0.5 * 0.75),
        "{:?}",
        &out[0][..3]
    );
}

#[test]
fn several_edges_into_one_input_sum_in_source_id_order() {
    // In f32, (a + b) + c = 0.01, whereas file order c, b, a would give
    // (0.01 + -1e6) + 1e6 = 0 (0.01 is below half an f32 ulp of 1e6).
    let text = r#"{ "version": "1.0", "nodes": [
        { "id": "c", "op": "dc", "params": { "value": 0.01 } },
        { "id": "b", "op": "dc", "params": { "value": -1000000 } },
        { "id": "a", "op": "dc", "params": { "value": 1000000 } },
        { "id": "sum", "op": "gain" } ],
      "edges": [ { "from": "c", "to": "sum" }, { "from": "b", "to": "sum" }, { "from": "a", "to": "sum" } ],
      "outputs": { "main": ["sum"] } }"#;
    let out = render_to_vec(&mut engine(text, Some(Profile::Repro), 64), 4);
    assert_eq!(out[0], vec![0.01f32 as f64; 4]);
}

#[test]
fn pinned_strict_nodes_keep_denormals_while_repro_nodes_flush_them() {
    // One impulse through a fast-decaying one-pole: its tail passes through
    // the subnormal range around sample ~1100.
    let text = r#"{ "version": "1.0", "profile": "repro", "nodes": [
        { "id": "imp", "op": "impulse", "params": { "freq": 0 }, "profile_overrides": { "precision": "f64" } },
        { "id": "ftz", "op": "onepole", "params": { "cutoff": "5kHz" }, "profile_overrides": { "precision": "f64" } } ],
      "modules": [ { "id": "m", "profile": "strict", "nodes": [
        { "id": "ieee", "op": "onepole", "params": { "cutoff": "5kHz" } } ] } ],
      "edges": [ { "from": "imp", "to": "ftz" }, { "from": "imp", "to": "ieee" } ],
      "outputs": { "main": ["ftz", "ieee"] } }"#;
    let out = render_to_vec(&mut engine(text, None, 64), 2000);
    let subnormal = |v: &[f64]| {
        v.iter()
            .filter(|x| **x != 0.0 && x.abs() < f64::MIN_POSITIVE)
            .count()
    };
    assert_eq!(
        subnormal(&out[0]),
        0,
        "repro (FTZ/DAZ) node produced subnormals"
    );
    assert!(subnormal(&out[1]) > 0, "strict node lost its subnormals");
    // And the caller's FP mode is restored after each block.
    assert!(!morphrt::dsp::fpmode::flush_is_on());
}

#[test]
fn non_finite_output_is_replaced_by_silence_and_reported() {
    // f32 overflows to inf after a few gains.
    let mut nodes =
        vec![r#"{ "id": "src", "op": "dc", "params": { "value": 1000000 } }"#.to_string()];
    let mut edges = Vec::new();
    let mut prev = "src".to_string();
    for k in 0..8 {
        nodes.push(format!(
            r#"{{ "id": "g{k}", "op": "gain", "params": {{ "gain": 1000000 }} }}"#
        ));
        edges.push(format!(r#"{{ "from": "{prev}", "to": "g{k}" }}"#));
        prev = format!("g{k}");
    }
    let text = format!(
        r#"{{ "version": "1.0", "nodes": [{}], "edges": [{}], "outputs": {{ "main": ["{prev}"] }} }}"#,
        nodes.join(","),
        edges.join(",")
    );
    let mut e = engine(&text, Some(Profile::Repro), 64);
    let out = render_to_vec(&mut e, 128);
    assert!(out[0].iter().all(|x| *x == 0.0));
    let (node, sample) = e.stats().first_nan.expect("reported");
    assert_eq!(
        e.node_id(node),
        "g5",
        "1e6^7 = 1e42 overflows f32 at the sixth gain"
    );
    assert_eq!(sample, 0);
    assert_eq!(e.stats().nan_events, 2);
}

#[test]
fn live_hard_limits_the_main_bus() {
    let text = r#"{ "version": "1.0", "nodes": [ { "id": "hot", "op": "dc", "params": { "value": 2.5 } } ],
      "outputs": { "main": ["hot"] } }"#;
    let out = render_to_vec(&mut engine(text, Some(Profile::Live), 64), 8);
    assert_eq!(out[0], vec![1.0; 8]);
    let out = render_to_vec(&mut engine(text, Some(Profile::Strict), 64), 8);
    assert_eq!(out[0], vec![2.5; 8]);
}

#[test]
fn engine_snapshot_restore_continues_bit_exactly_through_ramps_and_events() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenes/pluck-delay.json"
    ))
    .unwrap();
    for p in Profile::ALL {
        let mut a = engine(&text, Some(p), 64);
        // Stop mid-ramp (the cutoff ramp runs from 3 s to 5 s).
        let head = 4 * 48000 + 17;
        render_to_vec(&mut a, head);
        let st = a.snapshot();
        let want = render_to_vec(&mut a, 30000);
        let mut b = engine(&text, Some(p), 64);
        b.restore(&st).unwrap();
        assert_eq!(b.clock(), head);
        let got = render_to_vec(&mut b, 30000);
        assert_eq!(got, want, "{p}");
    }
}

#[test]
fn a_seeded_noise_scene_is_a_pure_function_of_seed_and_id() {
    let text = |seed: u64, id: &str| {
        format!(
            r#"{{ "version": "1.0", "seed": {seed}, "nodes": [ {{ "id": "{id}", "op": "noise", "params": {{ "seed": 3 }} }} ],
                 "outputs": {{ "main": ["{id}"] }} }}"#
        )
    };
    let a = render_to_vec(&mut engine(&text(7, "hiss"), Some(Profile::Strict), 64), 4);
    // The whole-mapping vector of scenes/README.md (Randomness): global
    // seed 7, node `hiss`, local seed 3.
    assert_eq!(
        a[0],
        vec![
            0.657067559659481,
            -0.5799555270932615,
            0.013275653589516878,
            0.6406910694204271
        ]
    );
    let b = render_to_vec(&mut engine(&text(7, "hush"), Some(Profile::Strict), 64), 4);
    assert_ne!(a, b);
    let c = render_to_vec(&mut engine(&text(8, "hiss"), Some(Profile::Strict), 64), 4);
    assert_ne!(a, c);
}

#[test]
fn live_auto_seeds_and_reports_it() {
    let text = r#"{ "version": "1.0", "nodes": [ { "id": "n", "op": "noise" } ], "outputs": { "main": ["n"] } }"#;
    let scene = load_str(text, "t.json", None).unwrap();
    let err = compile(
        &scene,
        &CompileOptions {
            profile: Some(Profile::Repro),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert!(err[0].to_string().contains("seed"));
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(Profile::Live),
            ..Default::default()
        },
    )
    .unwrap();
    let seed = match plan.seed {
        morphrt::graph::SeedSource::Auto(s) => s,
        other => panic!("{other:?}"),
    };
    assert!(plan
        .warnings
        .iter()
        .any(|w| w.message.contains(&format!("--seed {seed}"))));
}

#[test]
fn restore_carries_enum_changes_made_by_events() {
    let text = r#"{ "version": "1.0", "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz" } },
        { "id": "f", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "500Hz" } } ],
      "edges": [ { "from": "osc", "to": "f" } ],
      "outputs": { "main": ["f"] },
      "events": [ { "time": "1000samples", "node": "f", "param": "mode", "value": "highpass" } ] }"#;
    let mut a = engine(text, Some(Profile::Strict), 64);
    render_to_vec(&mut a, 2000);
    let st = a.snapshot();
    let want = render_to_vec(&mut a, 2000);
    let mut b = engine(text, Some(Profile::Strict), 64);
    b.restore(&st).unwrap();
    assert_eq!(render_to_vec(&mut b, 2000), want);
}

fn diode_scene(overrides: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "nodes": [
             {{ "id": "osc", "op": "sine", "params": {{ "freq": "220Hz" }} }},
             {{ "id": "clip", "op": "diode_clipper", "params": {{ "drive": "12dB" }}{overrides} }} ],
             "edges": [ {{ "from": "osc", "to": "clip" }} ],
             "outputs": {{ "main": ["clip"] }} }}"#
    )
}

#[test]
fn solver_iterations_reach_the_engine_statistics() {
    let frames = 1000;
    let mut e = engine(&diode_scene(""), Some(Profile::Strict), 64);
    render_to_vec(&mut e, frames);
    // Strict: 1×, every one of the 32 iterations on every sample.
    assert_eq!(e.solver_iterations(), frames * 32);
    let mut e = engine(
        &diode_scene(r#", "profile_overrides": { "max_iterations": 8 }"#),
        Some(Profile::Strict),
        64,
    );
    render_to_vec(&mut e, frames);
    assert_eq!(e.solver_iterations(), frames * 8);
    // Repro: 2×, stops at its tolerance.
    let mut e = engine(&diode_scene(""), Some(Profile::Repro), 64);
    render_to_vec(&mut e, frames);
    let n = e.solver_iterations();
    assert!(n > 0 && n < frames * 2 * 32 / 4, "{n}");
    e.reset();
    assert_eq!(e.solver_iterations(), 0);
}

#[test]
fn a_nonlinear_node_migrates_between_profiles_of_different_factors() {
    // Strict runs the clipper at 1×, repro at 2×: the state has one shape
    // and the latency is the same, so restore succeeds and time stays put.
    let text = diode_scene("");
    let mut strict = engine(&text, Some(Profile::Strict), 64);
    render_to_vec(&mut strict, 640);
    let st = strict.snapshot();
    let mut repro = engine(&text, Some(Profile::Repro), 64);
    repro.restore(&st).unwrap();
    assert_eq!(repro.clock(), 640);
    let out = render_to_vec(&mut repro, 640);
    // It continues: no NaN reported (the engine would have silenced it) and
    // the clipped sine is still there.
    assert_eq!(repro.stats().nan_events, 0);
    assert!(out[0].iter().any(|x| x.abs() > 0.1));
}

#[test]
fn paths_of_different_latency_are_aligned_where_they_meet() {
    // An impulse reaches `sum` directly and through an open spectral gate
    // (latency 256): the direct path is delayed to match, so both copies
    // land on the same sample. The main bus aligns its channels the same way.
    let text = r#"{ "version": "1.0", "seed": 1, "nodes": [
        { "id": "imp", "op": "impulse", "params": { "freq": 0, "amp": 0.4 } },
        { "id": "gate", "op": "spectral_gate", "params": { "threshold": 0, "fft_size": 256, "hop": 64 } },
        { "id": "sum", "op": "mix" } ],
      "edges": [ { "from": "imp", "to": "gate" }, { "from": "gate", "to": "sum:in0" }, { "from": "imp", "to": "sum:in1" } ],
      "outputs": { "main": ["sum", "imp"] } }"#;
    for p in Profile::ALL {
        for block in [1, 64, 100] {
            let out = render_to_vec(&mut engine(text, Some(p), block), 1024);
            let peak = |v: &[f64]| {
                v.iter().enumerate().fold(
                    (0, 0.0),
                    |m, (i, x)| if x.abs() > m.1 { (i, x.abs()) } else { m },
                )
            };
            let (at, height) = peak(&out[0]);
            assert_eq!(at, 256, "{p} block {block}");
            assert!(
                (height - 0.8).abs() < 1e-4,
                "{p}: both paths sum at one sample: {height}"
            );
            assert_eq!(
                out[0].iter().filter(|x| x.abs() > 1e-4).count(),
                1,
                "{p}: a single aligned impulse"
            );
            // Channel 1 (the raw impulse) is delayed to the bus latency too.
            assert_eq!(peak(&out[1]).0, 256, "{p}");
        }
    }
}

/// State rebuilt on restore (FFT partitions, oversampler history)
/// is computed under the node's own FP mode, whatever the caller's: a node's
/// `restore` sees flush-to-zero exactly when its profile has it.
#[test]
fn restore_runs_under_each_nodes_fp_mode() {
    use morphrt::dsp::fpmode::{flush_is_on, FpGuard};
    use morphrt::ops::{AnyNode, Io, NodeProcessor, NodeState, StateError};
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::Arc;
    struct Spy(Arc<AtomicU8>);
    impl<S: morphrt::dsp::Sample> NodeProcessor<S> for Spy {
        fn process(&mut self, io: &mut Io<'_, S>) {
            for o in io.outputs[0][..io.frames].iter_mut() {
                *o = S::ZERO;
            }
        }
        fn reset(&mut self) {}
        fn snapshot(&self, _st: &mut NodeState) {}
        fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
            self.0.store(1 + u8::from(flush_is_on()), Ordering::Relaxed);
            Ok(())
        }
    }
    let text = r#"{ "version": "1.0", "nodes": [ { "id": "x", "op": "dc" } ], "outputs": { "main": ["x"] } }"#;
    for (p, want_flush) in [
        (Profile::Strict, false),
        (Profile::Repro, true),
        (Profile::Live, true),
    ] {
        for caller_flush in [false, true] {
            let seen = Arc::new(AtomicU8::new(0));
            let scene = load_str(text, "t.json", None).unwrap();
            let mut plan = compile(
                &scene,
                &CompileOptions {
                    profile: Some(p),
                    ..Default::default()
                },
            )
            .unwrap();
            plan.nodes[0].node = Some(match plan.nodes[0].profile.precision {
                morphrt::dsp::Precision::F32 => AnyNode::F32(Box::new(Spy(seen.clone()))),
                morphrt::dsp::Precision::F64 => AnyNode::F64(Box::new(Spy(seen.clone()))),
            });
            let mut e = morphrt::engine::Engine::new(plan);
            let st = e.snapshot();
            let guard = FpGuard::new(caller_flush);
            e.restore(&st).unwrap();
            drop(guard);
            assert_eq!(
                seen.load(Ordering::Relaxed),
                1 + u8::from(want_flush),
                "{p} node restored with the caller's FTZ {caller_flush}"
            );
        }
    }
}
