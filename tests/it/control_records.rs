//! Change records on the engine: they land at their sample (strict,
//! repro) or their block (live), past ones at the next block, in
//! `(sample, seq)` order after the plan's events; across a handover they
//! follow the nodes by id, and the params they moved carry unless the
//! edit changed them in the file.

use crate::support as common;

use common::{engine, play};
use morphrt::api::player::Scripted;
use morphrt::engine::incoming::{Incoming, ScriptedChange, SessionFixed};
use morphrt::engine::{ChangeRecord, Outcome};
use morphrt::graph::ControlValue;
use morphrt::profile::Profile;

fn set(e: &morphrt::engine::Engine, sample: u64, v: f64, seq: u64) -> ChangeRecord {
    let (node, param) = e.find_param("d", "value").unwrap();
    ChangeRecord {
        sample,
        node: node as u32,
        param: param as u16,
        value: ControlValue::Number(v),
        ramp: 0,
        engine: e.id(),
        seq,
    }
}

/// The first sample at which `out` stops being `from`.
fn change_at(out: &[f64], from: f64) -> Option<usize> {
    out.iter().position(|x| *x != from)
}

#[test]
fn a_record_lands_at_its_sample_under_strict_and_repro_and_at_its_block_under_live() {
    for (profile, expect) in [
        (Profile::Strict, 100),
        (Profile::Repro, 100),
        (Profile::Live, 64),
    ] {
        let mut e = engine(common::DC, Some(profile), 64);
        let r = set(&e, 100, 0.5, 1);
        e.push_change(r).unwrap();
        let out = play(&mut e, 256, 0);
        let at = change_at(&out, out[0]).unwrap();
        assert_eq!(at, expect, "{profile}");
        assert!(
            out[at..].iter().all(|x| (*x - 0.5).abs() < 1e-6),
            "{profile}"
        );
        let mut reports = Vec::new();
        e.take_change_reports(|r| reports.push(r));
        assert_eq!(reports.len(), 1);
        assert!(
            matches!(reports[0].outcome, Outcome::Applied { at, .. } if at == expect as u64),
            "{reports:?}"
        );
    }
}

#[test]
fn a_late_record_lands_at_the_next_block_and_ties_keep_their_seq_order() {
    let mut e = engine(common::DC, Some(Profile::Strict), 64);
    play(&mut e, 128, 0);
    // Meant for sample 10, long past: it lands at 128.
    e.push_change(set(&e, 10, 0.5, 2)).unwrap();
    // Two records for one sample, pushed out of order: seq 3 lands last.
    e.push_change(set(&e, 200, 0.75, 4)).unwrap();
    e.push_change(set(&e, 200, 0.125, 3)).unwrap();
    let out = play(&mut e, 256, 0);
    assert_eq!(out[0], 0.5);
    assert_eq!(out[200 - 128 - 1], 0.5);
    assert_eq!(out[200 - 128], 0.75);
    let mut at = Vec::new();
    e.take_change_reports(|r| at.push((r.seq, r.outcome)));
    let samples: Vec<(u64, u64)> = at
        .iter()
        .map(|(s, o)| match o {
            Outcome::Applied { at, .. } => (*s, *at),
            o => panic!("{o:?}"),
        })
        .collect();
    assert_eq!(samples, vec![(2, 128), (3, 200), (4, 200)]);
}

#[test]
fn a_record_for_another_engine_is_stale_and_a_full_queue_refuses() {
    let mut a = engine(common::DC, Some(Profile::Strict), 64);
    let b = engine(common::DC, Some(Profile::Strict), 64);
    assert_ne!(a.id(), b.id());
    let err = a.push_change(set(&b, 10, 0.5, 1)).unwrap_err();
    assert_eq!(err.outcome, Outcome::Stale);
    for i in 0..morphrt::engine::CHANGE_QUEUE as u64 {
        a.push_change(set(&a, 1000 + i, 0.5, i)).unwrap();
    }
    assert_eq!(a.control_room(), 0);
    assert_eq!(
        a.push_change(set(&a, 10, 0.5, 9999)).unwrap_err().outcome,
        Outcome::Full
    );
}

/// `text` compiled as an edit of the test session.
fn edit(text: &str, p: Profile) -> Incoming {
    let fixed = common::session_fixed(None);
    common::incoming(text, std::path::Path::new("t.json"), &fixed, p)
}

const TWO: &str = r#"{"version": "1.0", "nodes": [
  {"id": "d", "op": "dc", "params": {"value": 0.25}},
  {"id": "e", "op": "dc", "params": {"value": 0.0}},
  {"id": "m", "op": "mix"}],
 "edges": [{"from": "d", "to": "m:in0"}, {"from": "e", "to": "m:in1"}],
 "outputs": {"main": "m"}}"#;

/// A session of `TWO` whose `d` a control sets to 0.5 at sample 300.
fn controlled_at_300() -> Scripted {
    let mut s = Scripted::new(edit(TWO, Profile::Strict), 1);
    s.schedule([ScriptedChange {
        sample: 300,
        node: "d".into(),
        param: "value".into(),
        value: ControlValue::Number(0.5),
        ramp: 0,
    }]);
    s
}

#[test]
fn a_controlled_param_carries_across_an_edit_unless_the_edit_changes_it() {
    // Controlled to 0.5 at sample 300, between the capture (256) and the
    // swap (512): the new engine takes it over at the swap.
    let mut s = controlled_at_300();
    s.play_to(256);
    // An edit of `e` only: `d` keeps its controlled value.
    let edited = TWO.replace("\"value\": 0.0", "\"value\": 0.125");
    s.handover_at(edit(&edited, Profile::Strict), 256, 512, 0)
        .unwrap();
    s.play_to(1024);
    let out = s.output().to_vec();
    assert_eq!(out[299], 0.25);
    assert_eq!(out[300], 0.5);
    assert_eq!(out[511], 0.5);
    // From the swap: d keeps its controlled 0.5 (0.25 if it had not
    // carried), and e glides to the file's 0.125 over the 10 ms edit ramp.
    assert_eq!(out[512], 0.5, "the controlled value carried");
    assert_eq!(out[512 + 480 + 10], 0.625);
    assert_eq!(s.control_errors(), &[]);

    // The same, but the edit changes `d` itself: the file wins at the swap
    // (a param-only edit glides over the default 10 ms).
    let mut s = controlled_at_300();
    s.play_to(256);
    let edited = TWO.replace("\"value\": 0.25", "\"value\": 0.375");
    s.handover_at(edit(&edited, Profile::Strict), 256, 512, 0)
        .unwrap();
    s.play_to(2048);
    assert_eq!(s.output()[2047], 0.375, "the file's value won");
}

#[test]
fn a_record_queued_for_the_old_engine_lands_on_the_new_one_at_its_sample() {
    let mut old = engine(TWO, Some(Profile::Strict), 64);
    let mut new = engine(TWO, Some(Profile::Strict), 64);
    play(&mut old, 256, 0);
    let st = old.snapshot();
    new.migrate(&st, 256);
    let (on, op) = old.find_param("d", "value").unwrap();
    let r = ChangeRecord {
        sample: 300,
        node: on as u32,
        param: op as u16,
        value: ControlValue::Number(0.5),
        ramp: 0,
        engine: old.id(),
        seq: 7,
    };
    // A record resolved for the engine `new` migrated from lands on it.
    new.push_change(r).unwrap();
    let out = play(&mut new, 512, 0);
    assert_eq!(out[300 - 256 - 1], 0.25);
    assert_eq!(out[300 - 256], 0.5);
    // One resolved for an engine two generations back is stale.
    let mut newer = engine(TWO, Some(Profile::Strict), 64);
    newer.migrate(&new.snapshot(), 512);
    assert_eq!(newer.push_change(r).unwrap_err().outcome, Outcome::Stale);
}

#[test]
fn scheduled_controls_are_bit_identical_across_block_sizes_under_strict() {
    let scene = r#"{"version": "1.0", "profile": "strict", "nodes": [
      {"id": "o", "op": "saw", "params": {"freq": "110Hz"}},
      {"id": "lp", "op": "svf", "params": {"cutoff": "800Hz"}}],
     "edges": [{"from": "o", "to": "lp"}], "outputs": {"main": "lp"}}"#;
    let render = |block: usize| {
        let f = SessionFixed {
            block_size: block,
            ..common::session_fixed(None)
        };
        let inc =
            Incoming::compile(scene, std::path::Path::new("t.json"), &f, Profile::Strict).unwrap();
        let mut s = Scripted::new(inc, 1);
        s.schedule((0..40).map(|i| ScriptedChange {
            sample: 97 + i * 331,
            node: "lp".into(),
            param: "cutoff".into(),
            value: ControlValue::Number(200.0 + 150.0 * i as f64),
            ramp: if i % 2 == 0 { 0 } else { 240 },
        }));
        s.play_to(48_000 / 3);
        assert_eq!(s.control_errors(), &[]);
        s.into_output()
    };
    let a = render(1);
    let b = render(64);
    let c = render(4096);
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert!(a.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()));
    // And the controls did something: without them the output differs.
    let inc = edit(scene, Profile::Strict);
    let mut plain = Scripted::new(inc, 1);
    plain.play_to(48_000 / 3);
    assert_ne!(plain.output()[1000..], a[1000..]);
}

const KINDS: &str = r#"{"version": "1.0", "nodes": [
  {"id": "d", "op": "dc", "params": {"value": 0.25}},
  {"id": "f", "op": "biquad", "params": {"mode": "lowpass", "cutoff": "2kHz"}},
  {"id": "m", "op": "mix", "params": {"gains": [0.5]}}],
 "edges": [{"from": "d", "to": "f"}, {"from": "f", "to": "m:in0"}],
 "outputs": {"main": "m"}}"#;

/// A record whose value is not of its param's kind is refused when it is
/// queued (an integer for `mix`'s gains array, which applied would have
/// replaced the array and freed it on the audio thread; a number for
/// `biquad`'s mode; an enum, a bool and an integer for its cutoff): never
/// applied, the output the same bits as with no record at all.
#[test]
fn a_record_of_the_wrong_kind_is_refused_and_changes_nothing() {
    for profile in Profile::ALL {
        let mut e = engine(KINDS, Some(profile), 64);
        let mut want = engine(KINDS, Some(profile), 64);
        let wrong = [
            ("m", "gains", ControlValue::Integer(3)),
            ("m", "gains", ControlValue::Number(2.0)),
            ("f", "mode", ControlValue::Number(1.0)),
            ("f", "mode", ControlValue::Bool(true)),
            ("f", "cutoff", ControlValue::Enum(0)),
            ("f", "cutoff", ControlValue::Bool(false)),
            ("f", "cutoff", ControlValue::Integer(100)),
        ];
        for (seq, (node, param, value)) in wrong.into_iter().enumerate() {
            let (n, p) = e.find_param(node, param).unwrap();
            let r = ChangeRecord {
                sample: 100,
                node: n as u32,
                param: p as u16,
                value,
                ramp: 0,
                engine: e.id(),
                seq: seq as u64,
            };
            let err = e.push_change(r).unwrap_err();
            assert_eq!(err.outcome, Outcome::WrongKind, "{node}:{param} {value:?}");
        }
        // The right kind for each is still taken.
        let (n, p) = e.find_param("f", "mode").unwrap();
        let mut r = set(&e, 100, 0.0, 99);
        (r.node, r.param, r.value) = (n as u32, p as u16, ControlValue::Enum(0));
        e.push_change(r).unwrap();
        r.engine = want.id();
        want.push_change(r).unwrap();
        let (got, want) = (play(&mut e, 512, 0), play(&mut want, 512, 0));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{profile}");
        let mut reports = Vec::new();
        e.take_change_reports(|r| reports.push(r));
        assert_eq!(reports.len(), 1, "{profile}: {reports:?}");
        assert_eq!(reports[0].seq, 99);
    }
}
