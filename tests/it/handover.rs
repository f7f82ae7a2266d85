//! Hot edits and profile switches through the handover that `run` uses
//! (save at N → migrate → fast-forward → swap at S), driven offline so
//! the results are exact and repeatable.

use crate::support as common;

use morphrt::api::player::Scripted;
use morphrt::engine::incoming::{Incoming, SessionFixed};
use morphrt::graph::{compile, CompileOptions, EventAction, Plan};
use morphrt::profile::Profile;
use morphrt::scene;
use std::path::{Path, PathBuf};

const BLOCK: usize = 64;

fn plan_of(text: &str, path: &Path, profile: Profile) -> Plan {
    let dir = path.parent().map(Path::to_path_buf);
    let s = scene::load_str(text, &path.display().to_string(), dir)
        .unwrap_or_else(|e| panic!("{}", e[0]));
    compile(
        &s,
        &CompileOptions {
            profile: Some(profile),
            block_size: Some(BLOCK),
            seed: Some(1),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{}", e[0]))
}

fn fixed_for(text: &str, path: &Path) -> SessionFixed {
    SessionFixed::from_plan(
        &plan_of(text, path, Profile::Strict),
        morphrt::host::files::resources::Folders::shared(Vec::new()),
    )
}

/// Channel-major copy of interleaved frames.
fn deinterleave(x: &[f64], ch: usize) -> Vec<Vec<f64>> {
    (0..ch)
        .map(|c| x.iter().skip(c).step_by(ch).copied().collect())
        .collect()
}

/// Largest |x[i] − x[i−1]| over `[from, to)` on any channel, skipping `skip`.
fn max_step(x: &[Vec<f64>], from: u64, to: u64, skip: &[(u64, u64)]) -> f64 {
    let mut m: f64 = 0.0;
    for ch in x {
        for i in from.max(1)..to.min(ch.len() as u64) {
            if skip.iter().any(|(s, e)| i >= *s && i < *e) {
                continue;
            }
            m = m.max((ch[i as usize] - ch[i as usize - 1]).abs());
        }
    }
    m
}

/// The scene's parity bound under `p`: its golden's, or the profile's
/// default for a scene without one (the `input-*` scenes, whose output is
/// their input's: here, with no input fed through the handover, silence).
fn golden_bound(name: &str, p: Profile) -> f64 {
    let path = common::root().join(format!("golden/scenes/{name}.json"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        return match p {
            Profile::Strict => 0.0,
            p => p.default_parity_bound(),
        };
    };
    let g: serde_json::Value = serde_json::from_str(&text).unwrap();
    match p {
        Profile::Strict => 0.0,
        Profile::Repro => g["parity"]["repro"].as_f64().unwrap(),
        Profile::Live => g["parity"]["live"].as_f64().unwrap(),
    }
}

/// Continuity: every shipped scene, switched strict → repro →
/// live → strict while it plays, stays within each profile's parity bound
/// of an uninterrupted strict render, and no switch clicks: the largest
/// sample-to-sample step within 5 ms of a switch is no larger than the
/// largest step elsewhere.
#[test]
fn switching_profiles_while_playing_is_continuous_and_within_parity() {
    for path in common::shipped_scenes() {
        let name = common::stem(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        let conv = text.contains("\"op\": \"convolution\"");
        let sr = 48_000u64;
        let total = if conv { sr } else { 2 * sr };
        let reference_plan = plan_of(&text, &path, Profile::Strict);
        let events: Vec<u64> = reference_plan.events.iter().map(|e| e.sample).collect();
        let event_skip: Vec<(u64, u64)> = reference_plan
            .events
            .iter()
            .map(|e| {
                let ramp = match e.action {
                    EventAction::Set { ramp, .. } => ramp,
                    _ => 0,
                };
                (e.sample.saturating_sub(256), e.sample + 256 + ramp)
            })
            .collect();
        let ch = reference_plan.main.len();
        let reference = {
            let mut s = Scripted::new(
                common::fed_incoming(Incoming::from_plan(reference_plan, None, Vec::new())),
                ch,
            );
            s.play_to(total);
            deinterleave(s.output(), ch)
        };

        let fixed = fixed_for(&text, &path);
        let mut s = Scripted::new(common::incoming(&text, &path, &fixed, Profile::Strict), ch);
        let b = BLOCK as u64;
        let lead = 4 * b;
        let order = [Profile::Repro, Profile::Live, Profile::Strict];
        let mut swaps = Vec::new();
        for (k, p) in order.iter().enumerate() {
            // Off the shipped scenes' event grid (0.3, 0.55, 0.8 of the render).
            let at = (total * (6 + 5 * k as u64) / 20) / b * b;
            s.play_to(at - lead);
            let applied = s.handover(common::incoming(&text, &path, &fixed, *p), lead);
            assert_eq!(applied.swap_at, at, "{name}: swap sample");
            assert!(applied.migration.structural, "{name}: a switch crossfades");
            assert!(
                applied
                    .migration
                    .notices
                    .iter()
                    .all(|n| !matches!(n, morphrt::engine::Notice::StateNotCarried { .. })),
                "{name}: every node carries its state: {:?}",
                applied.migration.notices
            );
            swaps.push((applied.swap_at, applied.fade, *p));
        }
        s.play_to(total);
        let got = deinterleave(s.output(), ch);

        // Strict until the first switch: bit-identical.
        let first = swaps[0].0;
        for c in 0..ch {
            assert!(
                got[c][..first as usize] == reference[c][..first as usize],
                "{name}: strict before the first switch differs from the uninterrupted render"
            );
        }
        // Each later segment, after the fade, within the weakest bound so far.
        let mut weakest = Profile::Strict;
        for (k, (at, fade, p)) in swaps.iter().enumerate() {
            weakest = weakest.min(*p);
            let end = swaps.get(k + 1).map_or(total, |s| s.0);
            let from = at + fade + b;
            let e = common::rel_rms(&reference, &got, from, end, &event_skip);
            let bound = golden_bound(&name, weakest);
            eprintln!("{name}: {p} segment from {from} parity {e:.3e} (bound {bound:e})");
            assert!(
                e <= bound.max(1e-12),
                "{name}: after switching to {p} at {at}, parity {e:e} exceeds {bound:e}"
            );
        }
        // No click: steps near each switch are no larger than elsewhere.
        let five_ms = sr / 200;
        let near: Vec<(u64, u64)> = swaps
            .iter()
            .map(|(at, fade, _)| (at.saturating_sub(five_ms), at + fade + five_ms))
            .collect();
        let elsewhere = max_step(&got, 0, total, &near);
        for (i, (from, to)) in near.iter().enumerate() {
            // An event's own transient is the scene, not the switch.
            let step = max_step(&got, *from, *to, &event_skip);
            assert!(
                step <= elsewhere,
                "{name}: a step of {step:e} around switch {i} (elsewhere at most {elsewhere:e}); events at {events:?}"
            );
        }
    }
}

fn state_scene(unrelated_amp: f64) -> String {
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000, "seed": 1,
  "nodes": [
    {{ "id": "osc", "op": "sine", "params": {{ "freq": "331Hz", "amp": 0.4 }} }},
    {{ "id": "hit", "op": "impulse", "params": {{ "amp": 0.9 }} }},
    {{ "id": "echo", "op": "delay", "params": {{ "time": "150ms", "feedback": 0.6, "mix": 1.0, "max_time": "1s" }} }},
    {{ "id": "room", "op": "convolution", "params": {{ "ir": "@resource:room.wav", "mix": 1.0 }} }},
    {{ "id": "other", "op": "sine", "params": {{ "freq": "90Hz", "amp": {unrelated_amp} }} }}
  ],
  "edges": [ {{ "from": "hit", "to": "echo" }}, {{ "from": "hit", "to": "room" }} ],
  "outputs": {{ "main": ["osc", "echo", "room", "other"] }} }}"#
    )
}

fn scene_path() -> PathBuf {
    common::root().join("scenes/state.json")
}

/// State carried: an oscillator's phase, a delay line's contents
/// and a convolution tail continue through an edit of an unrelated param
/// (bit for bit, under each profile) and through a profile switch (within
/// the parity bound; without the carried state the echo and the tail would
/// be missing after the switch and the sine would restart at phase 0).
#[test]
fn state_carries_through_an_edit_and_a_profile_switch() {
    let path = scene_path();
    let base = state_scene(0.2);
    let edited = state_scene(0.3);
    let fixed = fixed_for(&base, &path);
    let total = 24_000u64;
    let at = 4_800u64; // 100 ms: the first echo (150 ms) is still in the line
    let lead = 4 * BLOCK as u64;
    for p in Profile::ALL {
        let mut plain = Scripted::new(common::incoming(&base, &path, &fixed, p), 4);
        plain.play_to(total);
        let want = deinterleave(plain.output(), 4);

        let mut s = Scripted::new(common::incoming(&base, &path, &fixed, p), 4);
        s.play_to(at - lead);
        let a = s.handover(common::incoming(&edited, &path, &fixed, p), lead);
        assert!(
            !a.migration.structural,
            "{p}: a param edit is not structural"
        );
        assert_eq!(a.fade, 0);
        s.play_to(total);
        let got = deinterleave(s.output(), 4);
        for c in 0..3 {
            assert!(
                got[c] == want[c],
                "{p}: channel {c} changed by an unrelated edit"
            );
        }
        assert_ne!(got[3], want[3], "{p}: the edited node changed");
    }
    // Through a profile switch strict → repro → live → strict.
    let mut plain = Scripted::new(common::incoming(&base, &path, &fixed, Profile::Strict), 4);
    plain.play_to(total);
    let want = deinterleave(plain.output(), 4);
    let mut s = Scripted::new(common::incoming(&base, &path, &fixed, Profile::Strict), 4);
    let mut t = at;
    let mut weakest = Profile::Strict;
    for p in [Profile::Repro, Profile::Live, Profile::Strict] {
        s.play_to(t - lead);
        let a = s.handover(common::incoming(&base, &path, &fixed, p), lead);
        assert!(a.migration.structural);
        weakest = weakest.min(p);
        t += 2_400;
    }
    s.play_to(total);
    let got = deinterleave(s.output(), 4);
    let bound = Profile::Live.default_parity_bound();
    for (c, what) in [
        (0, "sine phase"),
        (1, "delay line"),
        (2, "convolution tail"),
    ] {
        let e = common::rel_rms(&want[c..c + 1], &got[c..c + 1], at, total, &[]);
        eprintln!("{what}: parity {e:.3e} through strict → repro → live → strict");
        assert!(
            e <= bound,
            "{what} did not carry through the switches: {e:e}"
        );
    }
    // The echo at 150 ms and 300 ms is there (it was in the line at 100 ms).
    let echo = &got[1];
    for k in [7_200usize, 14_400] {
        assert!(
            echo[k].abs() > 0.1,
            "echo missing at sample {k}: {}",
            echo[k]
        );
    }
    let _ = weakest;
}

/// A param-only edit under one profile is bit-identical to the same
/// change made by a scene event at the swap sample S.
#[test]
fn a_param_edit_equals_the_same_change_made_by_an_event() {
    let path = common::root().join("scenes/pluck-delay.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let s_at = 38_400u64; // 0.8 s, a block boundary at 64
                          // The event version: the same file with one more event at S.
    let with_event = text.replace(
        r#""events": ["#,
        r#""events": [
    { "time": "38400samples", "node": "tone_lp", "param": "cutoff", "value": "1500Hz", "ramp": "10ms" },"#,
    );
    let edited = text.replace(r#""cutoff": "2.4kHz""#, r#""cutoff": "1500Hz""#);
    assert_ne!(edited, text);
    let fixed = fixed_for(&text, &path);
    let total = 72_000u64;
    for p in Profile::ALL {
        let mut ev = Scripted::new(common::incoming(&with_event, &path, &fixed, p), 1);
        ev.play_to(total);

        for lead in [0u64, 4 * BLOCK as u64, 37 * BLOCK as u64] {
            let mut s = Scripted::new(common::incoming(&text, &path, &fixed, p), 1);
            s.play_to(s_at - lead);
            let a = s.handover(common::incoming(&edited, &path, &fixed, p), lead);
            assert_eq!(a.swap_at, s_at);
            assert!(!a.migration.structural, "{p}");
            assert!(a.migration.notices.iter().any(|n| matches!(
                n,
                morphrt::engine::Notice::Ramped {
                    param: "cutoff",
                    ..
                }
            )));
            s.play_to(total);
            assert!(
                s.output() == ev.output(),
                "{p}, lead {lead}: the edit differs from the event"
            );
        }
    }
}

/// A changed op under the same id and a state that no longer fits (a new
/// delay size) start fresh and are named; the rest carries.
#[test]
fn nodes_that_cannot_carry_start_fresh_and_are_named() {
    use morphrt::engine::Notice;
    let path = scene_path();
    let base = state_scene(0.2);
    let fixed = fixed_for(&base, &path);
    let retyped = base.replace(
        r#""id": "other", "op": "sine""#,
        r#""id": "other", "op": "triangle""#,
    );
    let resized = base.replace(r#""max_time": "1s""#, r#""max_time": "2s""#);
    for (text, want) in [(retyped, "other"), (resized, "echo")] {
        let mut s = Scripted::new(common::incoming(&base, &path, &fixed, Profile::Repro), 4);
        s.play_to(4_800);
        let a = s.handover(common::incoming(&text, &path, &fixed, Profile::Repro), 0);
        assert!(a.migration.structural);
        let named: Vec<&Notice> = a
            .migration
            .notices
            .iter()
            .filter(|n| {
                matches!(n, Notice::OpChanged { id, .. } | Notice::StateNotCarried { id, .. } if id == want)
            })
            .collect();
        assert_eq!(named.len(), 1, "{want}: {:?}", a.migration.notices);
        assert!(named[0].to_string().contains(want));
        assert_eq!(a.migration.carried, 4, "the four other nodes carry");
    }
}

/// The scene's `edit.ramp` and a node's own `ramp` set how long an edited
/// param glides.
#[test]
fn the_scenes_edit_ramp_and_a_nodes_ramp_set_how_long_an_edit_glides() {
    let path = scene_path();
    let with = |extra: &str, node_ramp: &str, amp: f64| {
        state_scene(amp)
            .replace(r#""seed": 1,"#, &format!(r#""seed": 1, {extra}"#))
            .replace(
                r#""id": "other", "op": "sine","#,
                &format!(r#""id": "other", "op": "sine", {node_ramp}"#),
            )
    };
    // The glide of `other.amp` 0.2 → 0.3 ends after exactly the ramp.
    for (extra, node_ramp, ramp) in [
        ("", "", 480u64),
        (r#""edit": { "ramp": "50ms" },"#, "", 2_400),
        (r#""edit": { "ramp": "50ms" },"#, r#""ramp": "1ms","#, 48),
    ] {
        let base = with(extra, node_ramp, 0.2);
        let fixed = fixed_for(&base, &path);
        let mut s = Scripted::new(common::incoming(&base, &path, &fixed, Profile::Strict), 4);
        s.play_to(4_800);
        s.handover(
            common::incoming(&with(extra, node_ramp, 0.3), &path, &fixed, Profile::Strict),
            0,
        );
        s.play_to(4_800 + 4_000);
        let got = deinterleave(s.output(), 4);
        let mut plain = Scripted::new(
            common::incoming(&with(extra, node_ramp, 0.3), &path, &fixed, Profile::Strict),
            4,
        );
        plain.play_to(4_800 + 4_000);
        let want = deinterleave(plain.output(), 4);
        let first_equal = (4_800..8_800)
            .find(|&i| (i..8_800).all(|j| got[3][j] == want[3][j]))
            .unwrap() as u64;
        assert!(
            first_equal <= 4_800 + ramp && first_equal + 2 >= 4_800 + ramp - 1,
            "ramp {ramp}: the glide ended at {}",
            first_equal - 4_800
        );
    }
}

/// A live session's auto-seed becomes the session seed: switching a noise
/// scene without a seed from live to strict (which needs one) works.
#[test]
fn a_live_auto_seed_carries_to_strict() {
    let path = scene_path();
    let text = r#"{ "version": "1.0", "nodes": [ { "id": "hiss", "op": "noise", "params": { "amp": 0.1 } } ],
                    "outputs": { "main": ["hiss"] } }"#;
    let s = scene::load_str(text, "t.json", None).unwrap();
    let live = compile(
        &s,
        &CompileOptions {
            profile: Some(Profile::Live),
            block_size: Some(BLOCK),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap();
    assert!(matches!(live.seed, morphrt::graph::SeedSource::Auto(_)));
    let fixed = SessionFixed::from_plan(
        &live,
        morphrt::host::files::resources::Folders::shared(Vec::new()),
    );
    assert!(fixed.seed.is_some());
    let strict = Incoming::compile(text, &path, &fixed, Profile::Strict)
        .unwrap_or_else(|e| panic!("strict with the session seed: {}", e[0]));
    assert_eq!(strict.profile, Profile::Strict);
}
