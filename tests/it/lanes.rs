//! Lane groups: nodes of one operator that run side by side through one
//! kernel call. Which nodes group, and that grouping never changes a bit:
//! every scene here plays the same with lanes on and off — block sizes 1 …
//! 4096, every profile, events mid-block, ramps, modulated members, a
//! member that overflows, a snapshot restored mid-run, hot edits that
//! retune, add and remove a member, and a profile switch.

use crate::support as common;

use crate::support::counters;

use common::engine;
use counters::{counters, counters_with, seeded_counters, Kind};
use morphrt::api::player::Scripted;
use morphrt::dsp::rng::mix64;
use morphrt::dsp::vector::SimdLevel;
use morphrt::engine::incoming::{Incoming, ScriptedChange};
use morphrt::engine::{render_to_vec, ChangeRecord, Engine};
use morphrt::graph::ControlValue;
use morphrt::profile::Profile;

const PROFILES: [Profile; 3] = [Profile::Strict, Profile::Repro, Profile::Live];

/// The first (channel, frame) where `a` and `b` differ in bits.
fn first_difference(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<(usize, usize)> {
    for (c, (x, y)) in a.iter().zip(b).enumerate() {
        if let Some(i) = x
            .iter()
            .zip(y)
            .position(|(p, q)| p.to_bits() != q.to_bits())
        {
            return Some((c, i));
        }
        assert_eq!(x.len(), y.len());
    }
    None
}

/// `text` rendered for `frames` with lanes on and off.
fn on_and_off(text: &str, profile: Profile, block: usize, frames: u64) -> [Vec<Vec<f64>>; 2] {
    let mut on = engine(text, Some(profile), block);
    let mut off = engine(text, Some(profile), block);
    off.set_lanes(false);
    assert!(off.lane_groups().is_empty());
    [
        render_to_vec(&mut on, frames),
        render_to_vec(&mut off, frames),
    ]
}

/// Members of each group by node id.
fn group_ids(e: &Engine) -> Vec<Vec<String>> {
    e.lane_groups()
        .iter()
        .map(|g| g.iter().map(|&i| e.node_id(i).to_string()).collect())
        .collect()
}

#[test]
fn the_benchmark_scenes_group_their_sines_noises_and_biquads() {
    let text = std::fs::read_to_string(common::root().join("scenes/bench/w1.json")).unwrap();
    let e = engine(&text, Some(Profile::Live), 64);
    let groups = group_ids(&e);
    assert_eq!(groups.len(), 1, "{groups:?}");
    let want: Vec<String> = (0..256).map(|i| format!("s{i:03}")).collect();
    assert_eq!(groups[0], want);

    let text = std::fs::read_to_string(common::root().join("scenes/bench/w4.json")).unwrap();
    for p in PROFILES {
        let e = engine(&text, Some(p), 64);
        let mut groups = group_ids(&e);
        groups.sort();
        let noises: Vec<String> = (0..64).map(|i| format!("n{i:02}")).collect();
        let filters: Vec<String> = (0..64).map(|i| format!("bp{i:02}")).collect();
        assert_eq!(groups, vec![filters, noises], "{p}");
    }
}

#[test]
fn nodes_that_read_each_other_or_differ_in_kind_do_not_group() {
    // A chain of biquads (each reads the one before), two sines at other
    // precisions, a sine whose amp is modulated, and two noises in parallel.
    let text = r#"{ "version": "1.0", "seed": 1, "nodes": [
        { "id": "src", "op": "noise" },
        { "id": "a", "op": "biquad" }, { "id": "b", "op": "biquad" }, { "id": "c", "op": "biquad" },
        { "id": "s1", "op": "sine" }, { "id": "s2", "op": "sine", "profile_overrides": { "precision": "f64" } },
        { "id": "s3", "op": "sine" }, { "id": "lfo", "op": "sine", "params": { "freq": 3 } },
        { "id": "n1", "op": "noise" },
        { "id": "sum", "op": "mix" } ],
      "edges": [ { "from": "src", "to": "a" }, { "from": "a", "to": "b" }, { "from": "b", "to": "c" },
                 { "from": "lfo", "to": "s3:amp" },
                 { "from": "c", "to": "sum:in0" }, { "from": "s1", "to": "sum:in1" },
                 { "from": "s3", "to": "sum:in3" },
                 { "from": "n1", "to": "sum:in4" } ],
      "outputs": { "main": ["sum", "s2"] } }"#;
    let e = engine(text, Some(Profile::Repro), 64);
    let mut groups = group_ids(&e);
    groups.iter_mut().for_each(|g| g.sort());
    groups.sort();
    // s1 and lfo are f32 sines with constant params; s2 is f64, s3 modulated.
    assert_eq!(
        groups,
        vec![
            vec!["lfo".to_string(), "s1".to_string()],
            vec!["n1".to_string(), "src".to_string()]
        ]
    );
    let [on, off] = on_and_off(text, Profile::Repro, 64, 4000);
    assert_eq!(first_difference(&on, &off), None);
}

/// A scene of `count` biquads, each fed by its own noise or saw, with
/// random modes, cutoffs and Qs drawn from `seed`, a few events (some with
/// ramps, some mid-block) and every biquad on its own main channel.
fn random_scene(count: usize, seed: u64) -> String {
    // Every mode the operator has, from its own spec.
    let spec = morphrt::ops::lookup("biquad").unwrap();
    let modes = spec
        .params
        .iter()
        .find_map(|p| match p.kind {
            morphrt::ops::ParamKind::Enum { choices, .. } if p.name == "mode" => Some(choices),
            _ => None,
        })
        .unwrap();
    let mut z = seed;
    let mut next = || {
        z = mix64(z);
        z
    };
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut events = Vec::new();
    let mut main = Vec::new();
    for k in 0..count {
        let src = if next() % 3 == 0 {
            format!(
                r#"{{ "id": "src{k}", "op": "saw", "params": {{ "freq": {}, "amp": 0.5 }} }}"#,
                40 + next() % 2000
            )
        } else {
            format!(r#"{{ "id": "src{k}", "op": "noise", "params": {{ "amp": 0.5 }} }}"#)
        };
        nodes.push(src);
        let mode = modes[(next() % modes.len() as u64) as usize];
        let cutoff = 20.0 + (next() % 18_000) as f64;
        let q = 0.3 + (next() % 1000) as f64 / 100.0;
        let gain = (next() % 24) as f64 / 10.0 + 0.1;
        nodes.push(format!(
            r#"{{ "id": "bq{k}", "op": "biquad", "params": {{ "mode": "{mode}", "cutoff": {cutoff}, "q": {q}, "gain": {gain} }} }}"#
        ));
        edges.push(format!(r#"{{ "from": "src{k}", "to": "bq{k}" }}"#));
        main.push(format!(r#""bq{k}""#));
        if next() % 2 == 0 {
            let at = 100 + next() % 3000;
            let ramp = if next() % 2 == 0 { 0 } else { 1 + next() % 500 };
            events.push(format!(
                r#"{{ "time": "{at}samples", "node": "bq{k}", "param": "cutoff", "value": {}, "ramp": "{ramp}samples" }}"#,
                30 + next() % 15_000
            ));
        }
    }
    format!(
        r#"{{ "version": "1.0", "seed": {seed}, "sample_rate": 48000, "nodes": [{}], "edges": [{}],
             "outputs": {{ "main": [{}] }}, "events": [{}] }}"#,
        nodes.join(", "),
        edges.join(", "),
        main.join(", "),
        events.join(", ")
    )
}

#[test]
fn groups_of_any_size_play_the_same_bits_as_nodes_alone() {
    // Group sizes 1 … 9 (a batch of 8 lanes and one more), 17 (a batch of
    // 16 and one more) and 70 (a batch of 64, then 6 alone in their lanes).
    for (count, seed) in (1..=9).map(|c| (c, c as u64)).chain([(17, 99), (70, 123)]) {
        let text = random_scene(count, seed);
        for p in PROFILES {
            for block in [1, 7, 64, 4096] {
                let frames = if block == 1 { 1200 } else { 5000 };
                let [on, off] = on_and_off(&text, p, block, frames);
                if count > 1 {
                    let e = engine(&text, Some(p), block);
                    assert!(
                        e.lane_groups().iter().any(|g| g.len() == count),
                        "{count} biquads should form one group"
                    );
                }
                assert_eq!(
                    first_difference(&on, &off),
                    None,
                    "{count} biquads, {p}, block {block}"
                );
            }
        }
    }
}

/// Two noises, three biquads, and the chain of multiplies that makes 3e38
/// (d6 · d6 = 1e12, squared 1e24, times 1e12 = 1e36, times 300) for bq1.
const OVERFLOW_NODES: &str = r#"
        { "id": "n0", "op": "noise" }, { "id": "n2", "op": "noise" },
        { "id": "d6", "op": "dc", "params": { "value": 1e6 } },
        { "id": "d300", "op": "dc", "params": { "value": 300 } },
        { "id": "m12", "op": "multiply" }, { "id": "m24", "op": "multiply" },
        { "id": "m36", "op": "multiply" }, { "id": "big", "op": "multiply" },
        { "id": "bq0", "op": "biquad", "params": { "mode": "bandpass", "cutoff": 500, "q": 20 } },
        { "id": "bq1", "op": "biquad", "params": { "mode": "lowpass", "cutoff": 100, "q": 40 } },
        { "id": "bq2", "op": "biquad", "params": { "mode": "peak", "cutoff": 3000, "gain": 4 } }"#;
const OVERFLOW_EDGES: &str = r#"{ "from": "d6", "to": "m12:a" }, { "from": "d6", "to": "m12:b" },
                 { "from": "m12", "to": "m24:a" }, { "from": "m12", "to": "m24:b" },
                 { "from": "m24", "to": "m36:a" }, { "from": "m12", "to": "m36:b" },
                 { "from": "m36", "to": "big:a" }, { "from": "d300", "to": "big:b" },"#;

#[test]
fn a_member_that_overflows_recovers_alone_and_the_others_play_on() {
    // bq1's input is 3e38, near f32's largest: its resonance overflows to
    // infinity within a few samples; the engine silences it, resets it and
    // counts the event, in the group as alone.
    let text = &format!(
        r#"{{ "version": "1.0", "seed": 5, "nodes": [{OVERFLOW_NODES} ],
      "edges": [ {OVERFLOW_EDGES}
                 {{ "from": "n0", "to": "bq0" }}, {{ "from": "big", "to": "bq1" }}, {{ "from": "n2", "to": "bq2" }} ],
      "outputs": {{ "main": ["bq0", "bq1", "bq2"] }} }}"#
    );
    for p in [Profile::Repro, Profile::Live] {
        let mut on = engine(text, Some(p), 64);
        let mut off = engine(text, Some(p), 64);
        off.set_lanes(false);
        assert!(
            on.lane_groups().iter().any(|g| g.len() == 2),
            "{p}: bq0 and bq2 group"
        );
        let a = render_to_vec(&mut on, 20_000);
        let b = render_to_vec(&mut off, 20_000);
        assert_eq!(first_difference(&a, &b), None, "{p}");
        assert!(on.stats().nan_events > 0, "{p}: bq1 should overflow");
        assert_eq!(on.stats(), off.stats(), "{p}");
        assert_eq!(
            on.stats().first_nan.map(|(i, _)| on.node_id(i)),
            Some("bq1")
        );
        // The others are never touched: they are what they are without bq1.
        assert!(a[0].iter().any(|x| *x != 0.0) && a[2].iter().any(|x| *x != 0.0));
    }
}

#[test]
fn a_snapshot_restored_mid_run_continues_the_group_bit_for_bit() {
    let text = random_scene(11, 7);
    for p in PROFILES {
        let mut whole = engine(&text, Some(p), 64);
        let want = render_to_vec(&mut whole, 8000);
        let mut first = engine(&text, Some(p), 64);
        let head = render_to_vec(&mut first, 2560);
        let st = first.snapshot();
        let mut second = engine(&text, Some(p), 64);
        let m = second.migrate(&st, st.clock);
        assert!(m.notices.is_empty(), "{:?}", m.notices);
        let tail = render_to_vec(&mut second, 8000 - 2560);
        let got: Vec<Vec<f64>> = head
            .iter()
            .zip(&tail)
            .map(|(h, t)| [&h[..], &t[..]].concat())
            .collect();
        assert_eq!(first_difference(&got, &want), None, "{p}");
    }
}

/// `text` compiled as an edit of the test session (seed 3), with lanes
/// on or off.
fn edit(text: &str, profile: Profile, lanes: bool) -> Incoming {
    let fixed = common::session_fixed(Some(3));
    let mut inc = common::incoming(text, std::path::Path::new("t.json"), &fixed, profile);
    inc.engine.set_lanes(lanes);
    inc
}

/// Twelve noises, twelve sines and twelve biquads, each biquad on its own
/// channel; `retune` changes bq03's cutoff, `drop` removes bq07 (channel 7
/// plays its noise instead), `add` adds bq12 on that noise (channel 7).
fn edit_scene(retune: bool, drop: bool, add: bool) -> String {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut main = Vec::new();
    for k in 0..12 {
        nodes.push(format!(
            r#"{{ "id": "n{k:02}", "op": "noise", "params": {{ "amp": 0.5 }} }}"#
        ));
        nodes.push(format!(
            r#"{{ "id": "s{k:02}", "op": "sine", "params": {{ "freq": {}, "amp": 0.25 }} }}"#,
            100 + 37 * k
        ));
        if drop && k == 7 {
            main.push(if add { r#""bq12""# } else { r#""n07""# }.to_string());
            continue;
        }
        let cutoff = if retune && k == 3 {
            2500
        } else {
            200 + 150 * k
        };
        nodes.push(format!(
            r#"{{ "id": "bq{k:02}", "op": "biquad", "params": {{ "mode": "bandpass", "cutoff": {cutoff}, "q": 4 }} }}"#
        ));
        edges.push(format!(r#"{{ "from": "n{k:02}", "to": "bq{k:02}" }}"#));
        edges.push(format!(r#"{{ "from": "s{k:02}", "to": "bq{k:02}" }}"#));
        main.push(format!(r#""bq{k:02}""#));
    }
    if add {
        nodes.push(
            r#"{ "id": "bq12", "op": "biquad", "params": { "mode": "lowpass", "cutoff": 900 } }"#
                .to_string(),
        );
        edges.push(r#"{ "from": "n07", "to": "bq12" }"#.to_string());
    }
    format!(
        r#"{{ "version": "1.0", "seed": 3, "nodes": [{}], "edges": [{}], "outputs": {{ "main": [{}] }} }}"#,
        nodes.join(", "),
        edges.join(", "),
        main.join(", ")
    )
}

/// Plays `first`, then hands over to each of `edits` in turn (saved a
/// block before its swap), with lanes on or off in every engine; returns
/// the output by channel.
fn played(
    first: &str,
    edits: &[(String, Profile, u64, u64)],
    profile: Profile,
    lanes: bool,
) -> Vec<Vec<f64>> {
    let first = edit(first, profile, lanes);
    let channels = first.engine.channels();
    let mut s = Scripted::new(first, channels);
    for (text, p, at, fade) in edits {
        s.handover_at(edit(text, *p, lanes), at - 64, *at, *fade)
            .unwrap();
    }
    s.play_to(30_000);
    let out = s.output();
    (0..channels)
        .map(|c| out.iter().skip(c).step_by(channels).copied().collect())
        .collect()
}

#[test]
fn a_retune_keeps_every_other_member_bit_for_bit() {
    let base = edit_scene(false, false, false);
    for p in PROFILES {
        let plain = played(&base, &[], p, true);
        // A param-only edit: no crossfade, the new engine computes what the
        // old one would until the swap, then bq03 glides to its new cutoff.
        let edits = [(edit_scene(true, false, false), p, 6400, 0)];
        let on = played(&base, &edits, p, true);
        let off = played(&base, &edits, p, false);
        assert_eq!(first_difference(&on, &off), None, "{p}");
        for c in (0..12).filter(|c| *c != 3) {
            assert_eq!(
                first_difference(&on[c..=c], &plain[c..=c]),
                None,
                "{p}: bq{c:02}"
            );
        }
        assert!(
            on[3][6400 + 2000..] != plain[3][6400 + 2000..],
            "bq03 was retuned"
        );
    }
}

#[test]
fn adding_and_removing_members_regroups_and_carries_the_others_state() {
    let base = edit_scene(false, false, false);
    for p in PROFILES {
        let plain = played(&base, &[], p, true);
        // Remove bq07, then add bq12 back later: two structural handovers.
        let edits = [
            (edit_scene(false, true, false), p, 6400, 960),
            (edit_scene(false, true, true), p, 16_000, 960),
        ];
        let on = played(&base, &edits, p, true);
        let off = played(&base, &edits, p, false);
        assert_eq!(first_difference(&on, &off), None, "{p}");
        // A carried member plays on its own bits once each crossfade is
        // over.
        for c in (0..12).filter(|c| *c != 7) {
            let after = 16_000 + 960;
            assert_eq!(
                first_difference(&[on[c][after..].to_vec()], &[plain[c][after..].to_vec()]),
                None,
                "{p}: bq{c:02}"
            );
        }
        let e = edit(&edits[1].0, p, true);
        assert!(
            e.engine.lane_groups().iter().any(|g| g.len() == 12),
            "{p}: 12 biquads regroup"
        );
    }
}

#[test]
fn a_profile_switch_carries_state_out_of_and_into_groups() {
    let base = edit_scene(false, false, false);
    let edits = [
        (base.clone(), Profile::Strict, 6400, 960),
        (base.clone(), Profile::Live, 16_000, 960),
    ];
    let on = played(&base, &edits, Profile::Repro, true);
    let off = played(&base, &edits, Profile::Repro, false);
    assert_eq!(first_difference(&on, &off), None);
    // State flowed: no channel restarts from silence at a switch (a
    // biquad starting fresh on noise would ring up from zero).
    for c in &on {
        for at in [6400usize, 16_000] {
            let before: f64 = c[at - 256..at].iter().map(|x| x * x).sum();
            let after: f64 = c[at..at + 256].iter().map(|x| x * x).sum();
            assert!(after > 0.2 * before, "energy {before} → {after} at {at}");
        }
    }
}

#[test]
fn bench_names_the_groups_and_shares_their_time_among_their_members() {
    let text = std::fs::read_to_string(common::root().join("scenes/bench/w4.json")).unwrap();
    let mut e = engine(&text, Some(Profile::Live), 64);
    let t = morphrt::bench::timing::time_engine(&mut e, 6400, 1, &mut std::io::sink());
    let mut groups: Vec<(String, usize)> = t
        .lane_groups
        .iter()
        .map(|g| (g.op.clone(), g.nodes))
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        vec![("biquad".to_string(), 64), ("noise".to_string(), 64)]
    );
    // Every member has its share of its group's time.
    assert_eq!(t.nodes.len(), 129);
    assert!(
        t.nodes
            .iter()
            .filter(|n| n.op == "biquad" || n.op == "noise")
            .all(|n| n.share > 0.0),
        "{:?}",
        t.nodes
    );
}

/// `count` sources summed into one node — sines (with phase offsets) into
/// a lowpass, as in W1, or noises and saws through biquads into a gain, as
/// in W4 — with events on some members (some ramped, some mid-block), so
/// that some chunks run fused and others not.
fn fused_scene(count: usize, seed: u64, sines: bool) -> String {
    let mut z = seed;
    let mut next = || {
        z = mix64(z);
        z
    };
    let (mut nodes, mut edges, mut events) = (Vec::new(), Vec::new(), Vec::new());
    let sum = if sines { "lp" } else { "sum" };
    for k in 0..count {
        let freq = 40 + next() % 9000;
        if sines {
            let phase = [0.0, 0.0, 1.3, -4.0][(next() % 4) as usize];
            nodes.push(format!(
                r#"{{ "id": "s{k}", "op": "sine", "params": {{ "freq": {freq}, "amp": 0.01, "phase": {phase} }} }}"#
            ));
            edges.push(format!(r#"{{ "from": "s{k}", "to": "lp" }}"#));
        } else {
            nodes.push(if next() % 3 == 0 {
                format!(
                    r#"{{ "id": "s{k}", "op": "saw", "params": {{ "freq": {freq}, "amp": 0.3 }} }}"#
                )
            } else {
                format!(r#"{{ "id": "s{k}", "op": "noise", "params": {{ "amp": 0.3 }} }}"#)
            });
            let cutoff = 50 + next() % 15_000;
            nodes.push(format!(
                r#"{{ "id": "bq{k}", "op": "biquad", "params": {{ "mode": "bandpass", "cutoff": {cutoff}, "q": 4 }} }}"#
            ));
            edges.push(format!(r#"{{ "from": "s{k}", "to": "bq{k}" }}"#));
            edges.push(format!(r#"{{ "from": "bq{k}", "to": "sum" }}"#));
        }
        if next() % 3 == 0 {
            let at = 100 + next() % 3000;
            let ramp = if next() % 2 == 0 { 0 } else { 1 + next() % 500 };
            let (node, param, value) = if sines {
                (format!("s{k}"), "freq", 30 + next() % 5000)
            } else {
                (format!("bq{k}"), "cutoff", 30 + next() % 15_000)
            };
            events.push(format!(
                r#"{{ "time": "{at}samples", "node": "{node}", "param": "{param}", "value": {value}, "ramp": "{ramp}samples" }}"#
            ));
        }
    }
    nodes.push(if sines {
        r#"{ "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": 2000 } }"#
            .to_string()
    } else {
        r#"{ "id": "sum", "op": "gain", "params": { "gain": 0.2 } }"#.to_string()
    });
    format!(
        r#"{{ "version": "1.0", "seed": {seed}, "sample_rate": 48000, "nodes": [{}], "edges": [{}],
             "outputs": {{ "main": ["{sum}"] }}, "events": [{}] }}"#,
        nodes.join(", "),
        edges.join(", "),
        events.join(", ")
    )
}

#[test]
fn fused_sums_play_the_same_bits_as_nodes_alone() {
    // Group sizes around the batch of 64: the sum runs over batches.
    for (count, seed) in [(2, 1), (3, 2), (17, 3), (64, 4), (65, 5), (130, 6)] {
        for sines in [true, false] {
            let text = fused_scene(count, seed, sines);
            for p in PROFILES {
                for block in [1, 7, 64, 4096] {
                    let frames = if block == 1 { 1500 } else { 6000 };
                    let e = engine(&text, Some(p), block);
                    let sum = e.node_index(if sines { "lp" } else { "sum" }).unwrap();
                    let fused: Vec<_> = e
                        .lane_groups()
                        .into_iter()
                        .zip(e.lane_sums())
                        .filter(|(_, s)| *s == Some((sum, 0)))
                        .collect();
                    assert_eq!(
                        fused.len(),
                        1,
                        "{count} {sines} {p}: one group sums into it"
                    );
                    assert_eq!(fused[0].0.len(), count);
                    let [on, off] = on_and_off(&text, p, block, frames);
                    assert_eq!(
                        first_difference(&on, &off),
                        None,
                        "{count} members, sines {sines}, {p}, block {block}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_fused_sum_holds_only_clean_outputs_when_a_member_overflows() {
    // bq1 overflows (its input is 3e38) while it sums into `sum` with the
    // others (their inputs pass as many nodes, so the three are at one
    // level): the sum is gathered again from the silenced outputs, as alone.
    let text = &format!(
        r#"{{ "version": "1.0", "seed": 5, "nodes": [{OVERFLOW_NODES},
        {{ "id": "sum", "op": "gain", "params": {{ "gain": 0.5 }} }},
        {{ "id": "a1", "op": "gain" }}, {{ "id": "a2", "op": "gain" }}, {{ "id": "a3", "op": "gain" }},
        {{ "id": "a4", "op": "gain" }}, {{ "id": "b1", "op": "gain" }}, {{ "id": "b2", "op": "gain" }},
        {{ "id": "b3", "op": "gain" }}, {{ "id": "b4", "op": "gain" }} ],
      "edges": [ {OVERFLOW_EDGES}
                 {{ "from": "n0", "to": "a1" }}, {{ "from": "a1", "to": "a2" }}, {{ "from": "a2", "to": "a3" }},
                 {{ "from": "a3", "to": "a4" }}, {{ "from": "a4", "to": "bq0" }},
                 {{ "from": "big", "to": "bq1" }},
                 {{ "from": "n2", "to": "b1" }}, {{ "from": "b1", "to": "b2" }}, {{ "from": "b2", "to": "b3" }},
                 {{ "from": "b3", "to": "b4" }}, {{ "from": "b4", "to": "bq2" }},
                 {{ "from": "bq0", "to": "sum" }}, {{ "from": "bq1", "to": "sum" }}, {{ "from": "bq2", "to": "sum" }} ],
      "outputs": {{ "main": ["sum"] }} }}"#
    );
    for p in [Profile::Repro, Profile::Live] {
        let mut on = engine(text, Some(p), 64);
        let mut off = engine(text, Some(p), 64);
        off.set_lanes(false);
        assert!(
            on.lane_sums().iter().any(|s| s.is_some()),
            "{p}: the biquads sum fused"
        );
        let a = render_to_vec(&mut on, 20_000);
        let b = render_to_vec(&mut off, 20_000);
        assert!(on.stats().nan_events > 0, "{p}: bq1 should overflow");
        assert_eq!(on.stats(), off.stats(), "{p}");
        assert_eq!(first_difference(&a, &b), None, "{p}");
        assert!(a[0].iter().all(|x| x.is_finite()) && a[0].iter().any(|x| *x != 0.0));
    }
}

#[test]
fn a_sum_read_elsewhere_too_is_not_fused() {
    // s1 also feeds the main bus, and s3's sum node reads another source:
    // neither group can write its sum.
    let text = r#"{ "version": "1.0", "nodes": [
        { "id": "s0", "op": "sine", "params": { "freq": 100 } }, { "id": "s1", "op": "sine", "params": { "freq": 200 } },
        { "id": "a", "op": "gain" },
        { "id": "s2", "op": "sine", "params": { "freq": 300 } }, { "id": "s3", "op": "sine", "params": { "freq": 400 } },
        { "id": "d", "op": "dc", "params": { "value": 0.1 } },
        { "id": "b", "op": "gain" } ],
      "edges": [ { "from": "s0", "to": "a" }, { "from": "s1", "to": "a" },
                 { "from": "s2", "to": "b" }, { "from": "s3", "to": "b" }, { "from": "d", "to": "b" } ],
      "outputs": { "main": ["a", "b", "s1"] } }"#;
    for p in PROFILES {
        let e = engine(text, Some(p), 64);
        assert!(!e.lane_groups().is_empty(), "{p}: the sines group");
        assert!(e.lane_sums().iter().all(|s| s.is_none()), "{p}");
        let [on, off] = on_and_off(text, p, 64, 4000);
        assert_eq!(first_difference(&on, &off), None, "{p}");
    }
}

/// A fused group of live sines runs steady chunks from its kept copy once
/// nothing changes its members; every way a member can change — an event,
/// a ramp, a control, a restore of an earlier state, a reset — takes it
/// off that path for the chunk, and it plays the same bits as lanes off
/// throughout, at block sizes that keep the grid and ones that do not, on
/// one thread and with its steady chunks summed in spans on three.
#[test]
fn a_steady_group_follows_every_change_to_its_members() {
    let three = morphrt::engine::Workers::new(3);
    three.set_min_work_ns(0);
    // 300: the nodes are lent in two batches.
    for (count, seed, workers) in [
        (3, 11, None),
        (64, 12, None),
        (200, 13, None),
        (300, 14, None),
        (64, 15, Some(&three)),
        (300, 16, Some(&three)),
    ] {
        let text = fused_scene(count, seed, true);
        for block in [64, 7, 256] {
            let mut on = engine(&text, Some(Profile::Live), block);
            on.set_workers(workers.cloned());
            let mut off = engine(&text, Some(Profile::Live), block);
            off.set_lanes(false);
            let both = |on: &mut Engine, off: &mut Engine, frames: u64| {
                let (a, b) = (render_to_vec(on, frames), render_to_vec(off, frames));
                assert_eq!(
                    first_difference(&a, &b),
                    None,
                    "{count} members, block {block}"
                );
            };
            // Past the scene's events (all before sample 3100).
            both(&mut on, &mut off, 4096);
            assert_eq!(on.lane_steady(), vec![true], "{count}, block {block}");
            let early = on.snapshot();
            both(&mut on, &mut off, 1000);
            // A control on one member, with and without a ramp.
            for (k, ramp) in [(0, 0), (count / 2, 300)] {
                for e in [&mut on, &mut off] {
                    let (node, param) = e.find_param(&format!("s{k}"), "freq").unwrap();
                    let r = ChangeRecord {
                        sample: e.clock() + 10,
                        node: node as u32,
                        param: param as u16,
                        value: ControlValue::Number(1234.5),
                        ramp,
                        engine: e.id(),
                        seq: k as u64,
                    };
                    e.push_change(r).unwrap();
                }
                both(&mut on, &mut off, 1500);
            }
            // Back to an earlier state: every phase changes at once.
            on.restore(&early).unwrap();
            off.restore(&early).unwrap();
            both(&mut on, &mut off, 2000);
            // From the start again, the scene's events with it.
            on.reset();
            off.reset();
            both(&mut on, &mut off, 4096);
            assert_eq!(on.lane_steady(), vec![true], "{count}, block {block}");
        }
    }
}

/// `count` chains of noise → svf and onepole → gain and multiply, all
/// mixed: each kind forms one group per level (svfs and onepoles read the
/// noises; gains and multiplies read the filters; the mix reads them all),
/// with random modes and cutoffs and a few events, ramped or not.
fn filter_chains(count: usize, seed: u64) -> String {
    let mut z = seed;
    let mut next = || {
        z = mix64(z);
        z
    };
    let (mut nodes, mut edges, mut events) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..count {
        let svf = ["lowpass", "highpass", "bandpass", "notch"][(next() % 4) as usize];
        let op = ["lowpass", "highpass"][(next() % 2) as usize];
        let (c1, c2, g) = (50 + next() % 15_000, 50 + next() % 15_000, next() % 20);
        nodes.push(format!(
            r#"{{ "id": "n{k}", "op": "noise", "params": {{ "amp": 0.4 }} }},
            {{ "id": "svf{k}", "op": "svf", "params": {{ "mode": "{svf}", "cutoff": {c1}, "q": 2 }} }},
            {{ "id": "op{k}", "op": "onepole", "params": {{ "mode": "{op}", "cutoff": {c2} }} }},
            {{ "id": "g{k}", "op": "gain", "params": {{ "gain": {} }} }},
            {{ "id": "m{k}", "op": "multiply" }}"#,
            g as f64 / 10.0
        ));
        edges.push(format!(
            r#"{{ "from": "n{k}", "to": "svf{k}" }}, {{ "from": "n{k}", "to": "op{k}" }},
            {{ "from": "svf{k}", "to": "g{k}" }}, {{ "from": "svf{k}", "to": "m{k}:a" }},
            {{ "from": "op{k}", "to": "m{k}:b" }},
            {{ "from": "g{k}", "to": "sum:in{}" }}, {{ "from": "m{k}", "to": "sum:in{}" }}"#,
            2 * k,
            2 * k + 1
        ));
        if next() % 2 == 0 {
            let at = 100 + next() % 3000;
            let ramp = if next() % 2 == 0 { 0 } else { 1 + next() % 500 };
            let (node, param, value) = match next() % 3 {
                0 => (format!("svf{k}"), "cutoff", 30 + next() % 15_000),
                1 => (format!("op{k}"), "cutoff", 30 + next() % 15_000),
                _ => (format!("g{k}"), "gain", next() % 20),
            };
            events.push(format!(
                r#"{{ "time": "{at}samples", "node": "{node}", "param": "{param}", "value": {value}, "ramp": "{ramp}samples" }}"#
            ));
        }
    }
    format!(
        r#"{{ "version": "1.0", "seed": {seed}, "sample_rate": 48000, "nodes": [{},
             {{ "id": "sum", "op": "mix" }}], "edges": [{}],
             "outputs": {{ "main": ["sum"] }}, "events": [{}] }}"#,
        nodes.join(", "),
        edges.join(", "),
        events.join(", ")
    )
}

/// Svf, onepole, gain, multiply (and noise) nodes group by kind and level,
/// and play the same bits as alone: every profile, blocks 1 … 4096, group
/// sizes 2 … 17, events and ramps on members.
#[test]
fn filters_gains_and_multiplies_group_and_play_the_same_bits_as_alone() {
    for (count, seed) in [(2, 21), (5, 22), (17, 23)] {
        let text = filter_chains(count, seed);
        let e = engine(&text, Some(Profile::Repro), 64);
        let mut kinds: Vec<String> = group_ids(&e)
            .iter()
            .map(|g| {
                assert_eq!(g.len(), count, "{g:?}");
                g[0].trim_end_matches(|c: char| c.is_ascii_digit())
                    .to_string()
            })
            .collect();
        kinds.sort();
        assert_eq!(kinds, ["g", "m", "n", "op", "svf"], "{count}");
        for p in PROFILES {
            for block in [1, 7, 64, 4096] {
                let frames = if block == 1 { 1500 } else { 6000 };
                let [on, off] = on_and_off(&text, p, block, frames);
                assert_eq!(
                    first_difference(&on, &off),
                    None,
                    "{count} chains, {p}, block {block}"
                );
            }
        }
    }
}

/// Four live sines into a lowpass, and a node `x` an edit changes from a
/// dc into a noise (a structural edit with no param change of its own).
fn sines_and_x(noise: bool) -> String {
    let mut nodes = String::new();
    let mut edges = Vec::new();
    for k in 0..4 {
        nodes += &format!(
            r#"{{ "id": "s{k}", "op": "sine", "params": {{ "freq": {}, "amp": 0.1 }} }},"#,
            100 + 50 * k
        );
        edges.push(format!(r#"{{ "from": "s{k}", "to": "lp" }}"#));
    }
    let x = if noise {
        r#"{ "id": "x", "op": "noise", "params": { "amp": 0.0 } }"#
    } else {
        r#"{ "id": "x", "op": "dc", "params": { "value": 0.0 } }"#
    };
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000, "nodes": [{nodes} {x},
          {{ "id": "lp", "op": "biquad", "params": {{ "mode": "lowpass", "cutoff": 2000 }} }}],
          "edges": [{}], "outputs": {{ "main": ["lp", "x"] }} }}"#,
        edges.join(", ")
    )
}

/// A control that moved a member's freq in the old engine, carried into
/// the new one at the swap, reaches the new engine's group although it
/// was already steady by then: the same bits as lanes off.
#[test]
fn a_control_carried_across_an_edit_reaches_a_steady_group() {
    let run = |lanes: bool| {
        let mut s = Scripted::new(edit(&sines_and_x(false), Profile::Live, lanes), 2);
        s.schedule([ScriptedChange {
            sample: 300,
            node: "s0".into(),
            param: "freq".into(),
            value: ControlValue::Number(3000.0),
            ramp: 0,
        }]);
        s.play_to(256);
        let next = edit(&sines_and_x(true), Profile::Live, lanes);
        s.handover_at(next, 256, 1024, 0).unwrap();
        s.play_to(8192);
        if lanes {
            assert_eq!(s.engine().lane_steady(), vec![true]);
        }
        s.output().to_vec()
    };
    let (on, off) = (run(true), run(false));
    let first = on
        .iter()
        .zip(&off)
        .position(|(a, b)| a.to_bits() != b.to_bits());
    assert_eq!(first, None);
}

/// A lane kernel that panics silences only the member that panics when
/// run alone: the others play on, the same bits as with lanes off (where
/// that member panics alone), in fused and unfused groups, finite or
/// checked, with the bad member first, inside or last, and in a group of
/// more than one batch. One node panicked, and its message is kept.
#[test]
fn a_panic_in_a_lane_kernel_mutes_only_the_member_that_panics() {
    for p in PROFILES {
        for (count, bad) in [(5, 0), (5, 2), (5, 4), (70, 3), (70, 66)] {
            for fused in [true, false] {
                for finite in [true, false] {
                    let what =
                        format!("{p}, {count} members, bad {bad}, fused {fused}, finite {finite}");
                    let kind = Kind {
                        finite,
                        serial: false,
                        steady: false,
                    };
                    let mut on = counters(count, fused, kind, bad, p);
                    let mut off = counters(count, fused, kind, bad, p);
                    off.set_lanes(false);
                    assert_eq!(on.lane_groups().len(), 1, "{what}");
                    let (a, b) = (render_to_vec(&mut on, 2048), render_to_vec(&mut off, 2048));
                    assert_eq!(first_difference(&a, &b), None, "{what}");
                    assert_eq!(on.stats().panics, 1, "{what}");
                    assert_eq!(off.stats().panics, 1, "{what}");
                    assert!(a[0][2047] != 0.0, "{what}: the others play");
                    let msg = on.first_panic_message().unwrap_or_default();
                    assert!(msg.contains("a broken"), "{what}: {msg:?}");
                }
            }
        }
    }
}

/// A sum whose first edge comes from a node outside the group (a dc whose
/// id sorts first) starts from that node's block, and the members' kernel,
/// their steady path and the recovery from a kernel's panic add onto it:
/// the bits of lanes off, in every profile, with no bad member or one
/// first, inside or last, in one batch or two, on 1, 2 and 3 threads (the
/// pool runs the dc before the group, which shares its level).
#[test]
fn a_sum_seeded_by_a_node_outside_its_group_plays_the_bits_of_lanes_off() {
    let cases = [
        (5, None),
        (5, Some(0)),
        (5, Some(4)),
        (70, None),
        (70, Some(3)),
        (70, Some(66)),
    ];
    for p in PROFILES {
        for (count, bad) in cases {
            for (finite, steady) in [(true, false), (false, false), (true, true), (false, true)] {
                let kind = Kind {
                    finite,
                    serial: false,
                    steady,
                };
                let mut off = seeded_counters(count, kind, bad, p);
                off.set_lanes(false);
                let want = render_to_vec(&mut off, 2048);
                for threads in [1, 2, 3] {
                    let what = format!(
                        "{p}, {count} members, bad {bad:?}, finite {finite}, steady {steady}, {threads} threads"
                    );
                    let mut on = seeded_counters(count, kind, bad, p);
                    if threads > 1 {
                        let workers = morphrt::engine::Workers::new(threads);
                        workers.set_min_work_ns(0);
                        on.set_workers(Some(workers));
                    }
                    assert_eq!(on.lane_seeds(), vec![on.node_index("a")], "{what}");
                    let got = render_to_vec(&mut on, 2048);
                    assert_eq!(first_difference(&got, &want), None, "{what}");
                    assert!(got[0][2047] != 0.0, "{what}: it plays");
                    if bad.is_some() {
                        assert_eq!(on.stats().panics, 1, "{what}");
                    } else if steady {
                        assert_eq!(on.lane_steady(), vec![true], "{what}: steady");
                    }
                }
            }
        }
    }
}

/// One node (a triangle, with state) that is the first edge of two sums
/// whose other edges are two lane groups of its level: the pool runs it
/// once per chunk, before both, as one thread does; the bits of lanes off
/// on one thread in every profile, on 1, 2 and 3 threads.
#[test]
fn one_seed_of_two_sums_runs_once_at_any_thread_count() {
    let text = r#"{ "version": "1.0", "seed": 3, "sample_rate": 48000, "nodes": [
        { "id": "a", "op": "triangle", "params": { "freq": 97, "amp": 0.3 } },
        { "id": "s0", "op": "sine", "params": { "freq": 220, "amp": 0.2 } },
        { "id": "s1", "op": "sine", "params": { "freq": 330, "amp": 0.2 } },
        { "id": "w0", "op": "saw", "params": { "freq": 110, "amp": 0.2 } },
        { "id": "w1", "op": "saw", "params": { "freq": 165, "amp": 0.2 } },
        { "id": "c1", "op": "gain", "params": { "gain": 0.5 } },
        { "id": "c2", "op": "gain", "params": { "gain": 0.5 } } ],
      "edges": [ { "from": "a", "to": "c1" }, { "from": "s0", "to": "c1" }, { "from": "s1", "to": "c1" },
                 { "from": "a", "to": "c2" }, { "from": "w0", "to": "c2" }, { "from": "w1", "to": "c2" } ],
      "outputs": { "main": ["c1", "c2"] } }"#;
    for p in PROFILES {
        let mut off = engine(text, Some(p), 64);
        off.set_lanes(false);
        let want = render_to_vec(&mut off, 4096);
        for threads in [1, 2, 3] {
            let mut e = engine(text, Some(p), 64);
            let a = e.node_index("a");
            assert_eq!(e.lane_seeds()[..2], [a, a], "{p}: both sums start from `a`");
            if threads > 1 {
                let w = morphrt::engine::Workers::new(threads);
                w.set_min_work_ns(0);
                e.set_workers(Some(w));
            }
            let got = render_to_vec(&mut e, 4096);
            assert_eq!(
                first_difference(&got, &want),
                None,
                "{p}, {threads} threads"
            );
        }
    }
}

/// A fused group split over the workers in parts (a pool with no
/// threshold splits every group whose members are all ready; which thread
/// runs a part is timing, so the test does not ask), with a member that
/// panics in its part: only that member is muted, and the mix plays the
/// bits of lanes off on one thread, the bad member first, inside or
/// last, in two parts or three.
#[test]
fn a_panic_in_a_part_of_a_split_group_mutes_only_that_member_as_on_one_thread() {
    for p in PROFILES {
        for (count, bad) in [(70, 0), (70, 40), (70, 69), (100, 50)] {
            for threads in [2, 3] {
                let what = format!("{p}, {count} members, bad {bad}, {threads} threads");
                let kind = Kind {
                    finite: false,
                    serial: false,
                    steady: false,
                };
                let workers = morphrt::engine::Workers::new(threads);
                workers.set_min_work_ns(0);
                let mut on = counters(count, true, kind, bad, p);
                on.set_workers(Some(workers.clone()));
                let mut off = counters(count, true, kind, bad, p);
                off.set_lanes(false);
                let (a, b) = (render_to_vec(&mut on, 2048), render_to_vec(&mut off, 2048));
                assert_eq!(first_difference(&a, &b), None, "{what}");
                assert_eq!(on.stats().panics, 1, "{what}");
                assert!(a[0][2047] != 0.0, "{what}: the others play");
            }
        }
    }
}

/// The scene of `counters(count, fused, kind, bad, p)` without counter
/// `bad` (the others keep their ids, steps and order), rendered for
/// `frames`.
fn without(
    count: usize,
    fused: bool,
    kind: Kind,
    bad: usize,
    p: Profile,
    frames: u64,
) -> Vec<Vec<f64>> {
    let ids: Vec<usize> = (0..count).filter(|&k| k != bad).collect();
    let mut e = counters_with(&ids, fused, kind, None, p);
    render_to_vec(&mut e, frames)
}

/// From the chunk in which the bad counter panics (640: blocks of 64, the
/// bomb at 700) on, `a` is bit for bit `b` (the scene without that
/// counter).
fn same_from_the_panic(a: &[Vec<f64>], b: &[Vec<f64>], what: &str) {
    let tail = |x: &[Vec<f64>]| -> Vec<Vec<u64>> {
        x.iter()
            .map(|c| c[640..].iter().map(|v| v.to_bits()).collect())
            .collect()
    };
    assert!(tail(a) == tail(b), "{what}: the others as without it");
}

/// A kernel that finishes members one at a time ([`serial_lanes`]: the
/// members before the bad one have advanced when it panics) runs none of
/// them twice: every member but the bad one plays exactly what it plays
/// with lanes off, and exactly what the scene without the bad member
/// plays from the chunk of the panic on, in fused and unfused groups,
/// finite or checked, with the bad member first, inside or last, and in a
/// group of more than one batch.
#[test]
fn a_kernel_that_panics_after_finishing_some_members_runs_none_of_them_twice() {
    for p in PROFILES {
        for (count, bad) in [(5, 0), (5, 2), (5, 4), (70, 3), (70, 66)] {
            for fused in [true, false] {
                for finite in [true, false] {
                    let what =
                        format!("{p}, {count} members, bad {bad}, fused {fused}, finite {finite}");
                    let kind = Kind {
                        finite,
                        serial: true,
                        steady: false,
                    };
                    let mut on = counters(count, fused, kind, bad, p);
                    let mut off = counters(count, fused, kind, bad, p);
                    off.set_lanes(false);
                    assert_eq!(on.lane_groups().len(), 1, "{what}");
                    let (a, b) = (render_to_vec(&mut on, 2048), render_to_vec(&mut off, 2048));
                    assert_eq!(first_difference(&a, &b), None, "{what}");
                    assert_eq!(on.stats().panics, 1, "{what}");
                    same_from_the_panic(&a, &without(count, fused, kind, bad, p, 2048), &what);
                }
            }
        }
    }
}

/// A steady fused group (a group that runs a kept copy of its members:
/// here counters whose steady path advances members in turn and panics at
/// the bad one) whose steady path panics mutes only that member: the
/// steady path is taken back (the members it advanced are as at the
/// chunk's start), the chunk runs the usual way, and every other member
/// plays exactly what it plays with lanes off and what the scene without
/// the bad member plays from the chunk of the panic on — with a kernel
/// that checks every member first and one that finishes them in turn,
/// finite or checked, the bad member first, inside or last, and in a
/// group of more than one steady batch (256 members).
#[test]
fn a_panic_in_a_steady_group_mutes_only_the_member_that_panics() {
    for p in PROFILES {
        for (count, bad) in [(5, 0), (5, 2), (5, 4), (300, 3), (300, 270)] {
            for serial in [false, true] {
                for finite in [true, false] {
                    let what = format!(
                        "{p}, {count} members, bad {bad}, serial {serial}, finite {finite}"
                    );
                    let kind = Kind {
                        finite,
                        serial,
                        steady: true,
                    };
                    let mut on = counters(count, true, kind, bad, p);
                    let mut off = counters(count, true, kind, bad, p);
                    off.set_lanes(false);
                    assert_eq!(on.lane_groups().len(), 1, "{what}");
                    let mut a = render_to_vec(&mut on, 640);
                    assert_eq!(on.lane_steady(), vec![true], "{what}: steady at the panic");
                    for (c, rest) in a.iter_mut().zip(render_to_vec(&mut on, 2048 - 640)) {
                        c.extend(rest);
                    }
                    let b = render_to_vec(&mut off, 2048);
                    assert_eq!(first_difference(&a, &b), None, "{what}");
                    assert_eq!(on.stats().panics, 1, "{what}");
                    let msg = on.first_panic_message().unwrap_or_default();
                    assert!(msg.contains("a broken steady run"), "{what}: {msg:?}");
                    same_from_the_panic(&a, &without(count, true, kind, bad, p, 2048), &what);
                }
            }
        }
    }
}

/// `text` at `profile` and `block`: lanes on with the kernels of `level`
/// (its groups of `count` members checked to form), and every node alone.
fn on_at_level_and_off(
    text: &str,
    profile: Profile,
    block: usize,
    level: SimdLevel,
    count: usize,
) -> (Engine, Engine) {
    let mut on = engine(text, Some(profile), block);
    on.set_simd_level(level);
    assert!(
        on.lane_groups().iter().any(|g| g.len() == count),
        "{count} biquads should form one group at {level:?}"
    );
    let mut off = engine(text, Some(profile), block);
    off.set_lanes(false);
    (on, off)
}

#[test]
fn the_biquad_kernel_of_every_simd_level_plays_the_nodes_own_bits() {
    // Every level this CPU runs, forced: on a CPU with FMA (AVX2 or
    // AVX-512) the f32 nodes under repro and live fuse their multiply-adds,
    // so every level's kernel (the scalar one too) must fuse as well.
    // Batches of 8 and one more, 16 and one more, 32 and 8 (AVX2's full
    // batch and its transposed rest), 64 and six more; sums over a batch of
    // 32, of 64 (AVX2: two batches, the second adding to the first's sum)
    // and over 64 and six. Sums over batches of different widths, each
    // adding to the one before: 16 alone; 48 (AVX-512: 32 then 16; AVX2:
    // 32 then 16); 96 (64 then 32; AVX2: 32, 32, 32); 112 (64, 32, 16;
    // AVX2: 32, 32, 32, 16); 120 (AVX-512: 64, 32, 16 and eight through
    // the scalar tile, so the sum is added after the kernel; AVX2: 32,
    // 32, 32, 16 and 8, all summed in registers).
    let scenes = [
        (random_scene(9, 3), 9),
        (random_scene(17, 99), 17),
        (random_scene(40, 31), 40),
        (random_scene(70, 123), 70),
        (fused_scene(16, 7, false), 16),
        (fused_scene(32, 6, false), 32),
        (fused_scene(48, 8, false), 48),
        (fused_scene(64, 4, false), 64),
        (fused_scene(70, 5, false), 70),
        (fused_scene(96, 9, false), 96),
        (fused_scene(112, 10, false), 112),
        (fused_scene(120, 11, false), 120),
    ];
    for level in SimdLevel::available() {
        for (text, count) in &scenes {
            for p in PROFILES {
                for block in [1, 7, 64, 4096] {
                    let (mut on, mut off) = on_at_level_and_off(text, p, block, level, *count);
                    let a = render_to_vec(&mut on, 3000);
                    let b = render_to_vec(&mut off, 3000);
                    assert_eq!(
                        first_difference(&a, &b),
                        None,
                        "{level:?}: {count} biquads, {p}, block {block}"
                    );
                }
            }
        }
    }
}

/// `count` biquads at one level of the schedule, each behind four gains
/// from its own noise, except member `count / 2`, a lowpass at Q 40 fed
/// the 3e38 of [`OVERFLOW_EDGES`]'s chain: its f64 state stays finite
/// while its f32 output overflows. Summed into one gain, or each on its
/// own channel.
fn overflow_group(count: usize, summed: bool) -> String {
    let bad = count / 2;
    let mut nodes = vec![r#"{ "id": "d6", "op": "dc", "params": { "value": 1e6 } },
        { "id": "d300", "op": "dc", "params": { "value": 300 } },
        { "id": "m12", "op": "multiply" }, { "id": "m24", "op": "multiply" },
        { "id": "m36", "op": "multiply" }, { "id": "big", "op": "multiply" },
        { "id": "sum", "op": "gain", "params": { "gain": 0.5 } }"#
        .to_string()];
    let mut edges = vec![OVERFLOW_EDGES.trim_end_matches(',').to_string()];
    let mut main = Vec::new();
    for k in 0..count {
        if k == bad {
            nodes.push(format!(
                r#"{{ "id": "bq{k}", "op": "biquad", "params": {{ "mode": "lowpass", "cutoff": 100, "q": 40 }} }}"#
            ));
            edges.push(format!(r#"{{ "from": "big", "to": "bq{k}" }}"#));
        } else {
            let cutoff = 200 + 97 * k;
            nodes.push(format!(
                r#"{{ "id": "n{k}", "op": "noise" }}, {{ "id": "bq{k}", "op": "biquad", "params": {{ "mode": "bandpass", "cutoff": {cutoff}, "q": 4 }} }}"#
            ));
            let mut from = format!("n{k}");
            for g in 1..=4 {
                nodes.push(format!(r#"{{ "id": "g{k}_{g}", "op": "gain" }}"#));
                edges.push(format!(r#"{{ "from": "{from}", "to": "g{k}_{g}" }}"#));
                from = format!("g{k}_{g}");
            }
            edges.push(format!(r#"{{ "from": "{from}", "to": "bq{k}" }}"#));
        }
        if summed {
            edges.push(format!(r#"{{ "from": "bq{k}", "to": "sum" }}"#));
        } else {
            main.push(format!(r#""bq{k}""#));
        }
    }
    if summed {
        main.push(r#""sum""#.to_string());
    }
    format!(
        r#"{{ "version": "1.0", "seed": 5, "sample_rate": 48000, "nodes": [{}], "edges": [{}],
             "outputs": {{ "main": [{}] }} }}"#,
        nodes.join(", "),
        edges.join(", "),
        main.join(", ")
    )
}

#[test]
fn an_f32_member_that_overflows_in_a_wide_batch_is_found_at_every_simd_level() {
    // The AVX-512 kernel checks the f32 outputs of batches of 16, 32 and
    // 64 itself (each lane, or the sum), so the engine skips its own check
    // of members it reports finite: the overflow must still be found, in
    // the member that overflows alone, also where the sum runs over
    // batches of different widths (48: the overflow in the batch of 32;
    // 112: in the batch of 64, the others adding to the sum after it).
    for (count, summed) in [
        (16, false),
        (64, false),
        (64, true),
        (48, true),
        (112, true),
    ] {
        let text = overflow_group(count, summed);
        for level in SimdLevel::available() {
            for p in [Profile::Repro, Profile::Live] {
                let (mut on, mut off) = on_at_level_and_off(&text, p, 64, level, count);
                if summed {
                    assert!(on.lane_sums().iter().any(|s| s.is_some()), "fused");
                }
                let a = render_to_vec(&mut on, 6000);
                let b = render_to_vec(&mut off, 6000);
                let what = format!("{level:?}: {count} biquads, summed {summed}, {p}");
                assert!(on.stats().nan_events > 0, "{what}: should overflow");
                assert_eq!(on.stats(), off.stats(), "{what}");
                let bad = format!("bq{}", count / 2);
                assert_eq!(
                    on.stats().first_nan.map(|(i, _)| on.node_id(i)),
                    Some(bad.as_str()),
                    "{what}"
                );
                assert_eq!(first_difference(&a, &b), None, "{what}");
                assert!(a.iter().flatten().all(|x| x.is_finite()), "{what}");
            }
        }
    }
}
