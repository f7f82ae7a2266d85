//! A node that keeps producing NaN/Inf is muted and retried on a backoff
//! (10 ms, doubling up to 1 s), so it sounds again soon after its cause
//! ends; and a handover carries that failure state (`engine::Recovery`).
//!
//! The cause: products of a `dc` of 1e6 reach 2e38, over half the largest
//! finite f32, while two events hold it on, and feed it twice into a `svf`
//! and a `biquad` that also filter a sine: their summed input is beyond
//! f32's range (infinite in f32; in f64 a value no f32 holds, which the
//! engine treats as an overflow too), so both filters (and only they) fail
//! for as long as the events last, under every profile. Without the
//! backoff, a node that fails twice within a second would be muted for a
//! second: a 0.1 s overflow would silence both filters until 1.05 s.

use crate::support as common;

use morphrt::engine::render_to_vec;
use morphrt::engine::{Engine, Notice};
use morphrt::graph::Plan;
use morphrt::ops::{AnyNode, Io, NodeProcessor, NodeState, StateError};
use morphrt::profile::Profile;
use std::path::{Path, PathBuf};

const RATE: u64 = 48_000;
const BLOCK: usize = 64;

/// The overflow runs over samples `[FAULT_START, FAULT_END)`: 0.1 s to 0.2 s.
const FAULT_START: u64 = 4_800;
const FAULT_END: u64 = 9_600;

/// The scene (the same under every profile): `burst` (0 outside the fault, 1e6 during it)
/// multiplied up to 2e38, summed twice with a
/// 220 Hz sine into each filter. With `fault` false the events never switch
/// `burst` on; `cutoff` is the svf's.
fn scene(fault: bool, cutoff: &str) -> String {
    let events = if fault {
        format!(
            r#"{{ "time": "{FAULT_START}samples", "node": "burst", "param": "value", "value": 1e6 }},
               {{ "time": "{FAULT_END}samples", "node": "burst", "param": "value", "value": 0 }}"#
        )
    } else {
        String::new()
    };
    // (product, a, b): 1e12, 1e24, 1e36, 2e38 — under f32's largest
    // finite value, while the sum of two is beyond it, which is the
    // overflow in every profile (f64 outputs beyond f32's range count as
    // overflow too).
    let chain: &[(&str, &str, &str)] = &[
        ("m1", "burst", "burst"),
        ("m2", "m1", "m1"),
        ("m3", "m2", "m1"),
        ("top", "m3", "k2"),
    ];
    let k = 200.0;
    let mut nodes = vec![
        r#"{ "id": "tone", "op": "sine", "params": { "freq": "220Hz", "amp": 0.3 } }"#.to_string(),
        format!(
            r#"{{ "id": "sv", "op": "svf", "params": {{ "cutoff": "{cutoff}", "q": 0.707 }} }}"#
        ),
        r#"{ "id": "bq", "op": "biquad", "params": { "cutoff": "1kHz", "q": 0.707 } }"#.to_string(),
        r#"{ "id": "burst", "op": "dc", "params": { "value": 0 } }"#.to_string(),
        format!(r#"{{ "id": "k2", "op": "dc", "params": {{ "value": {k} }} }}"#),
    ];
    let mut edges = Vec::new();
    for (m, a, b) in chain {
        nodes.push(format!(r#"{{ "id": "{m}", "op": "multiply" }}"#));
        edges.push(format!(r#"{{ "from": "{a}", "to": "{m}:a" }}"#));
        edges.push(format!(r#"{{ "from": "{b}", "to": "{m}:b" }}"#));
    }
    for f in ["sv", "bq"] {
        edges.push(format!(r#"{{ "from": "tone", "to": "{f}" }}"#));
        edges.push(format!(r#"{{ "from": "top", "to": "{f}" }}"#));
        edges.push(format!(r#"{{ "from": "top2", "to": "{f}" }}"#));
    }
    edges.push(r#"{ "from": "top", "to": "top2" }"#.to_string());
    nodes.push(r#"{ "id": "top2", "op": "gain", "params": { "gain": 1 } }"#.to_string());
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ {nodes} ],
  "edges": [ {edges} ],
  "events": [ {events} ],
  "outputs": {{ "main": ["sv", "bq"] }} }}"#,
        nodes = nodes.join(",\n    "),
        edges = edges.join(",\n    "),
    )
}

/// Writes `text` to a scene file in a fresh temp dir.
fn scene_file(name: &str, text: &str) -> PathBuf {
    let dir = common::temp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("overflow.json");
    std::fs::write(&path, text).unwrap();
    path
}

fn plan(path: &Path, profile: Profile) -> Plan {
    common::plan(
        &std::fs::read_to_string(path).unwrap(),
        Some(profile),
        BLOCK,
    )
}

/// Renders `frames` of the scene at `path`: both channels, and the NaN
/// events counted.
fn render_counting_nans(path: &Path, profile: Profile, frames: u64) -> (Vec<Vec<f64>>, u64) {
    let mut e = Engine::new(plan(path, profile));
    let out = render_to_vec(&mut e, frames);
    (out, e.stats().nan_events)
}

/// The first sample at or after `from` where `x` is audible again.
fn back_at(x: &[f64], from: u64) -> Option<u64> {
    (from as usize..x.len())
        .find(|&i| x[i].abs() > 1e-4)
        .map(|i| i as u64)
}

#[test]
fn a_filter_sounds_again_soon_after_an_overflow_at_its_input_ends() {
    let frames = 28_800; // 0.6 s
    let fault = FAULT_END - FAULT_START;
    for p in Profile::ALL {
        let hit = scene_file("backoff-hit", &scene(true, "1kHz"));
        let clean = scene_file("backoff-clean", &scene(false, "1kHz"));
        let (want, none) = render_counting_nans(&clean, p, frames);
        assert_eq!(none, 0, "{p}: the clean scene fails");
        let (got, nans) = render_counting_nans(&hit, p, frames);
        let (again, _) = render_counting_nans(&hit, p, frames);
        assert!(got == again, "{p}: two renders differ");
        for (c, name) in ["svf", "biquad"].iter().enumerate() {
            let (g, w) = (&got[c], &want[c]);
            assert!(g.iter().all(|x| x.is_finite()), "{p} {name}: non-finite");
            assert!(
                g[..FAULT_START as usize] == w[..FAULT_START as usize],
                "{p} {name}: differs before the fault"
            );
            if p == Profile::Strict {
                // In f64 the input is finite (4e38, beyond f32's range):
                // each retry of the filter plays from a clean state until
                // its output leaves f32's range, which silences it again,
                // so it never writes a value f32 cannot hold.
                assert!(
                    g.iter().all(|x| x.abs() <= f32::MAX as f64),
                    "{p} {name}: a value beyond f32's range"
                );
            } else {
                // In f32 the input is infinite: silent throughout.
                assert!(
                    g[FAULT_START as usize..FAULT_END as usize]
                        .iter()
                        .all(|x| *x == 0.0),
                    "{p} {name}: sounds while its input is infinite"
                );
            }
            let back = back_at(g, FAULT_END).unwrap_or_else(|| {
                panic!("{p} {name}: still silent 0.4 s after a 0.1 s overflow ended ({nans} NaN events)")
            });
            let after = back - FAULT_END;
            eprintln!("{p} {name}: back {after} samples after the cause ended");
            assert!(
                after <= 2 * fault,
                "{p} {name}: back {:.3} s after the cause ended, more than twice its {:.3} s",
                after as f64 / RATE as f64,
                fault as f64 / RATE as f64
            );
            // And it stays back: from a clean state, where an undisturbed run is.
            let settled = back + 4_800;
            let err = common::rel_rms(&[w.to_vec()], &[g.to_vec()], settled, frames, &[]);
            assert!(
                err < 1e-3,
                "{p} {name}: {err:.3e} from the clean run after recovering"
            );
        }
        // Each filter: a reset, then a mute per retry (10, 20, 40, 80 ms)
        // while the cause lasts.
        eprintln!("{p}: {nans} NaN events");
        assert!((2..=16).contains(&nans), "{p}: {nans} NaN events");
    }
}

/// Plays `e` to `to` and returns its svf channel from its clock on.
fn play(e: &mut Engine, to: u64) -> Vec<f64> {
    common::play(e, to, 0)
}

#[test]
fn a_param_only_cut_keeps_a_muted_node_muted_until_its_retry() {
    // 10 ms after the cause ended: the svf is muted (its last retry, during
    // the overflow, failed) and waits for its next one.
    let at = FAULT_END + 480;
    // Long enough for a mute of a second to end too.
    let to = at + 2 * RATE;
    for p in Profile::ALL {
        let base = scene_file("backoff-cut-a", &scene(true, "1kHz"));
        let edited = scene_file("backoff-cut-b", &scene(true, "1.2kHz"));
        let mut old = Engine::new(plan(&base, p));
        play(&mut old, at);
        let st = old.snapshot();
        let mut new = Engine::new(plan(&edited, p));
        let m = new.migrate(&st, at);
        assert!(
            !m.structural,
            "{p}: a cutoff edit is a cut: {:?}",
            m.notices
        );
        let kept = play(&mut old, to);
        let cut = play(&mut new, to);
        let kept_back = back_at(&kept, 0).expect("the old engine retries the svf");
        assert!(
            kept_back > BLOCK as u64,
            "{p}: the svf is not muted at the capture ({kept_back})"
        );
        let cut_back = back_at(&cut, 0);
        assert_eq!(
            cut_back,
            Some(kept_back),
            "{p}: after the cut the svf comes back at {cut_back:?} samples, not at its retry ({kept_back})"
        );
    }
}

/// A processor that outputs a constant and panics from sample `at` on;
/// its (empty) state carries across a handover.
struct PanicsAt {
    at: u64,
}

impl<S: morphrt::dsp::Sample> NodeProcessor<S> for PanicsAt {
    fn process(&mut self, io: &mut Io<'_, S>) {
        assert!(io.start < self.at, "a broken node");
        io.outputs[0][..io.frames].fill(S::from_f64(0.25));
    }
    fn reset(&mut self) {}
    fn snapshot(&self, _st: &mut NodeState) {}
    fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
        Ok(())
    }
}

#[test]
fn a_node_that_panicked_starts_fresh_after_a_handover_with_a_crossfade() {
    let at = 4_800;
    for p in Profile::ALL {
        let base = scene_file("backoff-dead-a", &scene(false, "1kHz"));
        let edited = scene_file("backoff-dead-b", &scene(false, "1.2kHz"));
        // The svf is replaced by one that panics at 960 and, in the edited
        // scene, by one that never does: only the panic can make the state
        // not carry.
        let with = |path: &Path, at: u64| {
            let mut pl = plan(path, p);
            let i = pl.nodes.iter().position(|n| n.id == "sv").unwrap();
            pl.nodes[i].node = Some(match pl.nodes[i].profile.precision {
                morphrt::dsp::Precision::F32 => AnyNode::F32(Box::new(PanicsAt { at })),
                morphrt::dsp::Precision::F64 => AnyNode::F64(Box::new(PanicsAt { at })),
            });
            pl
        };
        let pl = with(&base, 960);
        let mut old = Engine::new(pl);
        // The panic message goes to stderr; the engine carries on.
        let before = play(&mut old, at);
        assert_eq!(old.stats().panics, 1, "{p}");
        assert!(
            before[960..].iter().all(|x| *x == 0.0),
            "{p}: dead is silent"
        );
        let st = old.snapshot();
        let mut new = Engine::new(with(&edited, u64::MAX));
        let m = new.migrate(&st, at);
        assert!(
            m.structural,
            "{p}: a dead node's revival crossfades: {:?}",
            m.notices
        );
        assert!(
            m.notices
                .iter()
                .any(|n| matches!(n, Notice::Revived { id } if id == "sv")),
            "{p}: no notice says the svf starts fresh: {:?}",
            m.notices
        );
        let cut = play(&mut new, at + 960);
        assert!(
            cut[..BLOCK].iter().any(|x| x.abs() > 1e-4),
            "{p}: the svf does not sound from the swap"
        );
        assert_eq!(new.stats().panics, 0, "{p}");
    }
}

#[test]
fn a_snapshot_taken_while_a_node_is_muted_resumes_it_muted() {
    let path = scene_file("backoff-resume", &scene(true, "1kHz"));
    let dir = path.parent().unwrap();
    let at = FAULT_END + 480;
    let (full, snap, rest) = (
        dir.join("full.wav"),
        dir.join("s.json"),
        dir.join("rest.wav"),
    );
    let scene = path.to_str().unwrap();
    let o = common::morphrt(&[
        "render",
        scene,
        "-o",
        full.to_str().unwrap(),
        "-d",
        "0.5s",
        "--profile",
        "strict",
        "--block-size",
        "64",
        "--snapshot-at",
        &format!("{at}samples"),
        "--snapshot-out",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let rest_len = format!("{}samples", 24_000 - at);
    let o = common::morphrt(&[
        "render",
        scene,
        "-o",
        rest.to_str().unwrap(),
        "--resume",
        snap.to_str().unwrap(),
        "-d",
        &rest_len,
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (full, rest) = (common::read_f32(&full), common::read_f32(&rest));
    let tail = &full[2 * at as usize..];
    assert_eq!(rest.len(), tail.len());
    assert!(
        rest == tail,
        "the resumed render differs from the uninterrupted one (first at frame {:?} after the snapshot)",
        rest.iter().zip(tail).position(|(a, b)| a != b).map(|i| i / 2)
    );
}
