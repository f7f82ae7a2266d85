//! Feedback edges: loops through an edge with a `"delay"` in
//! samples. Strict output is the same at every block size; a comb's impulse
//! response and a Karplus–Strong string match sample-by-sample oracles
//! written here; the lines are engine state (snapshot, restore, migration,
//! reset); NaN handling and events work inside a loop.

use crate::support as common;

use common::engine;
use morphrt::engine::render_to_vec;
use morphrt::host::offline::render_hash;
use morphrt::profile::Profile;

/// A Karplus–Strong string: a noise burst (the first `period` samples)
/// into `mix`, whose output runs through a lowpass and a gain < 1 back into
/// the mix through a feedback edge of `period` samples.
fn karplus_strong(period: usize) -> String {
    format!(
        r#"{{ "version": "1.0", "seed": 11,
             "nodes": [ {{ "id": "burst", "op": "noise", "params": {{ "amp": 0.8 }} }},
                        {{ "id": "string", "op": "mix" }},
                        {{ "id": "damp", "op": "onepole", "params": {{ "mode": "lowpass", "cutoff": "4kHz" }} }},
                        {{ "id": "loss", "op": "gain", "params": {{ "gain": 0.996 }} }} ],
             "edges": [ {{ "from": "burst", "to": "string:in0" }},
                        {{ "from": "string", "to": "damp" }},
                        {{ "from": "damp", "to": "loss" }},
                        {{ "from": "loss", "to": "string:in1", "delay": "{period}samples" }} ],
             "outputs": {{ "main": ["string"] }},
             "events": [ {{ "time": "{period}samples", "node": "burst", "param": "amp", "value": 0 }} ] }}"#
    )
}

fn ping_pong() -> String {
    std::fs::read_to_string(common::root().join("scenes/ping-pong.json")).unwrap()
}

/// Renders `frames` under strict at each block size and asserts one hash.
fn same_bits_at_every_block_size(name: &str, text: &str, frames: u64) {
    let hashes: Vec<(usize, String)> = [1, 64, 4096]
        .into_iter()
        .map(|b| {
            (
                b,
                render_hash(engine(text, Some(Profile::Strict), b), frames),
            )
        })
        .collect();
    for (b, h) in &hashes[1..] {
        assert_eq!(
            h, &hashes[0].1,
            "{name}: block size {b} differs from block size 1"
        );
    }
}

#[test]
fn karplus_strong_is_bit_identical_at_block_sizes_1_64_and_4096() {
    // A loop's output does not depend on where blocks end.
    let text = karplus_strong(109);
    same_bits_at_every_block_size("karplus-strong", &text, 9000);
    // And it rings: energy long after the burst, decaying.
    let out = render_to_vec(&mut engine(&text, Some(Profile::Strict), 64), 9000);
    let rms = |r: std::ops::Range<usize>| {
        (out[0][r.clone()].iter().map(|x| x * x).sum::<f64>() / r.len() as f64).sqrt()
    };
    let (early, late) = (rms(1000..2000), rms(8000..9000));
    assert!(
        early > late && late > 1e-4,
        "a decaying string: {early} then {late}"
    );
}

#[test]
fn ping_pong_is_bit_identical_at_block_sizes_1_64_and_4096() {
    // Two delays cross-fed by feedback edges, with events inside the loop.
    same_bits_at_every_block_size("ping-pong", &ping_pong(), 96_000);
}

#[test]
fn ping_pong_echoes_alternate_left_and_right() {
    // The pluck at 0 echoes left at 250 ms, right at 500 ms, left at 750 ms.
    let out = render_to_vec(&mut engine(&ping_pong(), Some(Profile::Strict), 64), 48_000);
    let energy = |c: usize, from_ms: usize| -> f64 {
        out[c][from_ms * 48..(from_ms + 100) * 48]
            .iter()
            .map(|x| x * x)
            .sum()
    };
    for (at, louder) in [(250, 0), (500, 1), (750, 0)] {
        let (l, r) = (energy(0, at), energy(1, at));
        let (loud, quiet) = if louder == 0 { (l, r) } else { (r, l) };
        assert!(
            loud > 10.0 * quiet && loud > 1e-3,
            "echo at {at} ms: left {l}, right {r}"
        );
    }
}

/// A feedback comb: an impulse into `mix`, whose output comes back through
/// a gain of `g` after `period` samples: y[n] = x[n] + g·y[n − period].
fn comb(period: usize, g: &str, block: usize) -> Vec<f64> {
    let text = format!(
        r#"{{ "version": "1.0",
             "nodes": [ {{ "id": "hit", "op": "impulse" }}, {{ "id": "sum", "op": "mix" }},
                        {{ "id": "g", "op": "gain", "params": {{ "gain": {g} }} }} ],
             "edges": [ {{ "from": "hit", "to": "sum:in0" }}, {{ "from": "sum", "to": "g" }},
                        {{ "from": "g", "to": "sum:in1", "delay": "{period}samples" }} ],
             "outputs": {{ "main": ["sum"] }} }}"#
    );
    render_to_vec(&mut engine(&text, Some(Profile::Strict), block), 2000).remove(0)
}

#[test]
fn a_feedback_combs_impulse_response_is_a_geometric_series() {
    // The oracle: g^k at every multiple k of the period, 0 elsewhere.
    for (period, block) in [(37, 64), (1, 64), (64, 64), (100, 7)] {
        let y = comb(period, "0.5", block);
        let mut power = 1.0f64;
        for (n, v) in y.iter().enumerate() {
            let want = if n % period == 0 {
                let p = power;
                power *= 0.5;
                p
            } else {
                0.0
            };
            assert_eq!(*v, want, "period {period}, block {block}, sample {n}");
        }
    }
    // A gain that is not a power of two: repeated products, as the loop takes them.
    let y = comb(23, "0.9", 64);
    let mut want = 1.0f64;
    for k in 0..(2000 / 23) {
        assert_eq!(y[k * 23], want, "pass {k}");
        assert_eq!(y[k * 23 + 1], 0.0);
        want *= 0.9;
    }
}

#[test]
fn karplus_strong_matches_a_sample_by_sample_oracle() {
    // The classic string: y[n] = x[n] + c·y[n−P] + c·y[n−P−1] (two feedback
    // taps averaging the loop). Channel 1 carries the burst x, so the
    // oracle below recomputes y from x with the mix's summing order.
    let (period, c, frames) = (50usize, 0.498f64, 4000usize);
    let text = format!(
        r#"{{ "version": "1.0", "seed": 5,
             "nodes": [ {{ "id": "burst", "op": "noise" }}, {{ "id": "y", "op": "mix" }},
                        {{ "id": "half", "op": "gain", "params": {{ "gain": {c} }} }} ],
             "edges": [ {{ "from": "burst", "to": "y:in0" }}, {{ "from": "y", "to": "half" }},
                        {{ "from": "half", "to": "y:in1", "delay": "{period}samples" }},
                        {{ "from": "half", "to": "y:in2", "delay": "{}samples" }} ],
             "outputs": {{ "main": ["y", "burst"] }},
             "events": [ {{ "time": "{period}samples", "node": "burst", "param": "amp", "value": 0 }} ] }}"#,
        period + 1
    );
    for block in [1, 13, 64, 4096] {
        let out = render_to_vec(
            &mut engine(&text, Some(Profile::Strict), block),
            frames as u64,
        );
        let x = &out[1];
        assert!(x[..period].iter().all(|v| *v != 0.0) && x[period..].iter().all(|v| *v == 0.0));
        let mut y = vec![0.0f64; frames];
        for n in 0..frames {
            let tap = |d: usize| if n >= d { c * y[n - d] } else { 0.0 };
            y[n] = x[n] + tap(period) + tap(period + 1);
        }
        assert_eq!(out[0], y, "block {block}");
    }
}

#[test]
fn a_feedback_line_is_state_that_snapshot_restore_and_reset_carry() {
    // The loop's delay line travels with the engine state.
    let text = karplus_strong(200);
    let whole = render_to_vec(&mut engine(&text, Some(Profile::Strict), 64), 6000);
    let mut a = engine(&text, Some(Profile::Strict), 64);
    let head = render_to_vec(&mut a, 3000);
    let st = a.snapshot();
    let line = st
        .nodes
        .iter()
        .find(|n| n.id == "string")
        .map(|n| n.edges.clone())
        .unwrap();
    assert_eq!(line.len(), 1, "one feedback line into `string`");
    assert_eq!(line[0].0.len(), 200);
    assert!(
        line[0].0.iter().any(|v| *v != 0.0),
        "the line holds the string"
    );
    let mut b = engine(&text, Some(Profile::Strict), 64);
    b.restore(&st).unwrap();
    let tail = render_to_vec(&mut b, 3000);
    assert_eq!(head[0], whole[0][..3000]);
    assert_eq!(tail[0], whole[0][3000..], "restored continuation");
    // Reset empties the line: the render starts over exactly.
    a.reset();
    assert_eq!(render_to_vec(&mut a, 6000), whole);
}

#[test]
fn a_profile_switch_carries_the_feedback_line_converting_precision() {
    // Like a delay node's buffer, the line continues across strict → repro.
    let text = karplus_strong(200);
    let mut strict = engine(&text, Some(Profile::Strict), 64);
    render_to_vec(&mut strict, 3000);
    let st = strict.snapshot();
    let mut repro = engine(&text, Some(Profile::Repro), 64);
    let m = repro.migrate(&st, st.clock);
    assert_eq!(m.carried, 4, "{:?}", m.notices);
    let line = |s: &morphrt::engine::EngineState| {
        s.nodes.iter().find(|n| n.id == "string").unwrap().edges[0].clone()
    };
    let (before, after) = (line(&st), line(&repro.snapshot()));
    assert_eq!(before.1, after.1, "same read position");
    let rounded: Vec<f64> = before.0.iter().map(|v| *v as f32 as f64).collect();
    assert_eq!(after.0, rounded, "f64 → f32 rounds each sample");
    assert!(rounded.iter().any(|v| *v != 0.0));
    // And back: f32 → f64 is exact.
    let mut back = engine(&text, Some(Profile::Strict), 64);
    back.migrate(&repro.snapshot(), st.clock);
    assert_eq!(line(&back.snapshot()).0, rounded);
}

#[test]
fn nan_inside_a_loop_is_silenced_reported_and_the_loop_recovers() {
    // A loop gain of 1e6 overflows to Inf within 52 passes: the node
    // that produced it is reported, its output silenced and the loop reset.
    let text = r#"{ "version": "1.0",
         "nodes": [ { "id": "hit", "op": "impulse", "params": { "freq": "10Hz" } }, { "id": "sum", "op": "mix" },
                    { "id": "boom", "op": "gain", "params": { "gain": 1e6 } } ],
         "edges": [ { "from": "hit", "to": "sum:in0" }, { "from": "sum", "to": "boom" },
                    { "from": "boom", "to": "sum:in1", "delay": "10samples" } ],
         "outputs": { "main": ["sum"] } }"#;
    for block in [1, 64] {
        let mut e = engine(text, Some(Profile::Strict), block);
        let out = render_to_vec(&mut e, 48_000);
        assert!(out[0].iter().all(|x| x.is_finite()), "block {block}");
        let stats = e.stats();
        assert!(stats.nan_events > 0, "block {block}");
        let (node, _) = stats.first_nan.unwrap();
        assert!(
            ["sum", "boom"].contains(&e.node_id(node)),
            "{}",
            e.node_id(node)
        );
        // The impulse at 0.5 s still comes through after the failures.
        assert_eq!(out[0][24_000], 1.0, "block {block}");
    }
}

#[test]
fn latency_compensation_aligns_inputs_inside_a_loop() {
    // A loop node meeting a 45-sample saturator path and a dry path: the dry
    // one is delayed to match, the feedback edge only by its own delay.
    let text = r#"{ "version": "1.0",
         "nodes": [ { "id": "hit", "op": "impulse", "params": { "freq": "7Hz" } },
                    { "id": "sat", "op": "saturator" }, { "id": "m", "op": "mix" },
                    { "id": "g", "op": "gain", "params": { "gain": 0.5 } } ],
         "edges": [ { "from": "hit", "to": "sat" }, { "from": "sat", "to": "m:in0" },
                    { "from": "hit", "to": "m:in1" }, { "from": "m", "to": "g" },
                    { "from": "g", "to": "m:in2", "delay": "100samples" } ],
         "outputs": { "main": ["m"] } }"#;
    let scene = morphrt::scene::load_str(text, "t.json", None).unwrap();
    let plan = morphrt::graph::compile(
        &scene,
        &morphrt::graph::CompileOptions {
            profile: Some(Profile::Strict),
            ..Default::default()
        },
    )
    .unwrap();
    let m = plan.nodes.iter().find(|n| n.id == "m").unwrap();
    let sat = plan.nodes.iter().find(|n| n.id == "sat").unwrap();
    assert_eq!(sat.latency, 45);
    let shape: Vec<(usize, usize)> = m
        .inputs
        .iter()
        .map(|l| (l[0].delay, l[0].feedback))
        .collect();
    assert_eq!(shape, [(0, 0), (45, 0), (0, 100)]);
    same_bits_at_every_block_size("latency in a loop", text, 20_000);
    // Under strict the saturator runs 1×, a pure 45-sample delay of its
    // curve: the dry impulse arrives with it at 45, nothing before, and the
    // loop brings the sum round 100 samples later at half level.
    let y = render_to_vec(&mut engine(text, Some(Profile::Strict), 64), 400).remove(0);
    assert_eq!(
        y[..45].iter().filter(|v| **v != 0.0).count(),
        0,
        "nothing before the aligned arrival"
    );
    assert_eq!(
        y[145],
        0.5 * y[45],
        "the loop returns the output 100 samples on, halved"
    );
}
