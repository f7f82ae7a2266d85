//! Voice modules keep their voices across a snapshot, a hot edit and a
//! profile switch: `render --snapshot-at T` with notes held, released,
//! sustained and being stolen at T, then `render --resume`, continues the
//! uninterrupted strict render bit for bit at every block size (a snapshot
//! file without `voices`, as written before voice modules, still resumes,
//! every voice free); while `run --device clock` plays held notes, an edit
//! of a param inside the voice module, of the pool's size, and a switch
//! to live and back keep them sounding without a click, and the session
//! replays bit for bit.

use crate::support as common;

use common::{morphrt, read_f32, stderr, temp_dir};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Two voices, three overlapping notes (so one is stolen), the pedal held
/// over a note-off, noise beside the module: every allocator state.
pub const POLY: &str = r#"{ "version": "1.0", "seed": 1, "duration": "0.8s",
  "modules": [ { "id": "pad", "voices": 2, "steal_fade": "20ms",
      "note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" },
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } },
        { "id": "filt", "op": "biquad", "params": { "cutoff": "2kHz" } },
        { "id": "env", "op": "adsr", "params": { "attack": "5ms", "decay": "100ms", "sustain": 0.6, "release": "100ms" } },
        { "id": "vca", "op": "multiply" },
        { "id": "amp", "op": "gain", "params": { "gain": 1 } } ] } ],
  "nodes": [ { "id": "hiss", "op": "noise", "params": { "amp": 0.01 } }, { "id": "sum", "op": "mix" } ],
  "edges": [ { "from": "osc", "to": "filt" }, { "from": "filt", "to": "vca:a" },
             { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "amp" },
             { "from": "pad", "to": "sum:in0" }, { "from": "hiss", "to": "sum:in1" } ],
  "outputs": { "main": ["sum"] },
  "events": [
    { "time": "0s", "module": "pad", "note": 60, "velocity": 0.8 },
    { "time": "0.1s", "module": "pad", "note": 64, "velocity": 0.6, "duration": "0.2s" },
    { "time": "0.2s", "module": "pad", "sustain": true },
    { "time": "0.25s", "module": "pad", "note": 67, "velocity": 0.5, "duration": "0.1s" },
    { "time": "0.5s", "module": "pad", "sustain": false },
    { "time": "0.6s", "module": "pad", "note": 72, "duration": "0.1s" },
    { "time": "0.62s", "module": "pad", "note": 60, "off": true } ] }"#;

/// Snapshot times and the voices' phases there: two held; one stealing for
/// the third note; held under the pedal past its note-off; released after
/// the pedal; stealing again.
const STOPS: [(&str, u64); 5] = [
    ("0.15s", 7200),
    ("0.26s", 12480),
    ("0.4s", 19200),
    ("0.55s", 26400),
    ("0.61s", 29280),
];

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(args: &[&str]) {
    let o = morphrt(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
}

/// The phases of the voices a snapshot file holds.
fn phases(snap: &Path) -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(snap).unwrap()).unwrap();
    v["voices"][0]["voices"]
        .as_array()
        .expect("the file holds the pool")
        .iter()
        .map(|x| x["phase"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_resumed_render_continues_held_notes_bit_for_bit() {
    let dir = temp_dir("voices-resume");
    let scene = dir.join("poly.json");
    std::fs::write(&scene, POLY).unwrap();
    let mut seen = Vec::new();
    for block in ["1", "64", "4096"] {
        let whole = dir.join(format!("whole-{block}.wav"));
        run(&[
            "render",
            s(&scene),
            "-o",
            s(&whole),
            "--profile",
            "strict",
            "--block-size",
            block,
        ]);
        let w = read_f32(&whole);
        let base = dir.join(format!("snap-{block}.json"));
        let mut args = vec!["render", s(&scene), "-o"];
        let first = dir.join("first.wav");
        args.extend([s(&first), "--profile", "strict", "--block-size", block]);
        for (t, _) in STOPS {
            args.extend(["--snapshot-at", t]);
        }
        args.extend(["--snapshot-out", s(&base)]);
        run(&args);
        for (_, at) in STOPS {
            let snap = dir.join(format!("snap-{block}.{at}.json"));
            seen.extend(phases(&snap));
            let rest = dir.join("rest.wav");
            run(&["render", s(&scene), "-o", s(&rest), "--resume", s(&snap)]);
            let r = read_f32(&rest);
            assert_eq!(
                r.len() as u64,
                w.len() as u64 - at,
                "block {block}, sample {at}"
            );
            assert!(
                r == w[at as usize..],
                "block {block}: resumed at sample {at}, the render differs from the uninterrupted one"
            );
        }
    }
    for phase in ["held", "released", "stealing"] {
        assert!(
            seen.iter().any(|p| p == phase),
            "no snapshot has a {phase} voice: {seen:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_snapshot_without_voices_resumes_with_every_voice_free() {
    let dir = temp_dir("voices-old-snapshot");
    let scene = dir.join("poly.json");
    std::fs::write(&scene, POLY).unwrap();
    let snap = dir.join("snap.json");
    let a = dir.join("a.wav");
    run(&[
        "render",
        s(&scene),
        "-o",
        s(&a),
        "--profile",
        "strict",
        "--snapshot-at",
        "0.15s",
        "--snapshot-out",
        s(&snap),
    ]);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&snap).unwrap()).unwrap();
    v.as_object_mut()
        .unwrap()
        .remove("voices")
        .expect("the file holds the voices");
    let old = dir.join("old.json");
    std::fs::write(&old, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let (b, c) = (dir.join("b.wav"), dir.join("c.wav"));
    run(&[
        "render",
        s(&scene),
        "-o",
        s(&b),
        "--resume",
        s(&snap),
        "-d",
        "0.05s",
    ]);
    run(&[
        "render",
        s(&scene),
        "-o",
        s(&c),
        "--resume",
        s(&old),
        "-d",
        "0.05s",
    ]);
    let (held, free) = (read_f32(&b), read_f32(&c));
    let peak = |x: &[f32]| x.iter().fold(0f32, |m, v| m.max(v.abs()));
    // The held notes sound on; without the allocator the voices are free:
    // only the noise (amp 0.01) is left.
    assert!(peak(&held) > 0.1, "held notes: peak {}", peak(&held));
    assert!(
        peak(&free) <= 0.011,
        "every voice free: peak {}",
        peak(&free)
    );
    // A pool that does not fit is refused, naming it.
    v["voices"] = serde_json::json!([{ "module": "pad", "sustain": false, "seq": 0,
        "dropped": 0, "voices": [] }]);
    std::fs::write(&old, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = morphrt(&["render", s(&scene), "-o", s(&c), "--resume", s(&old)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("voice module `pad`: has 0 voices"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two held notes on a voice module of `voices` voices, under strict.
fn held(voices: u32, cutoff: &str, freq: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "profile": "strict",
  "modules": [ {{ "id": "pad", "voices": {voices},
      "note": {{ "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" }},
      "nodes": [
        {{ "id": "osc", "op": "saw", "params": {{ "freq": "{freq}", "amp": 0.3 }} }},
        {{ "id": "filt", "op": "biquad", "params": {{ "cutoff": "{cutoff}" }} }},
        {{ "id": "env", "op": "adsr", "params": {{ "attack": "5ms", "sustain": 0.6, "release": "100ms" }} }},
        {{ "id": "vca", "op": "multiply" }},
        {{ "id": "amp", "op": "gain", "params": {{ "gain": 1 }} }} ] }} ],
  "edges": [ {{ "from": "osc", "to": "filt" }}, {{ "from": "filt", "to": "vca:a" }},
             {{ "from": "env", "to": "vca:b" }}, {{ "from": "vca", "to": "amp" }} ],
  "outputs": {{ "main": ["pad"] }},
  "events": [
    {{ "time": "0s", "module": "pad", "note": 60, "velocity": 0.8 }},
    {{ "time": "0s", "module": "pad", "note": 67, "velocity": 0.6 }} ] }}
"#
    )
}

/// The sample a handover line (`… at 1.234 s …`) says it landed at.
fn landed(line: &str, rate: f64) -> usize {
    let at = line.split(" at ").nth(1).expect("a time");
    let secs: f64 = at.split(' ').next().unwrap().parse().expect("seconds");
    (secs * rate).round() as usize
}

/// The largest step between neighbouring samples, and the RMS level.
fn step_and_level(x: &[f32]) -> (f32, f32) {
    let step = x
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0f32, f32::max);
    let rms = (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt();
    (step, rms)
}

#[test]
fn held_notes_sound_on_through_edits_and_switches() {
    let dir = temp_dir("voices-live");
    let path = dir.join("held.json");
    std::fs::write(&path, held(2, "2kHz", "220Hz")).unwrap();
    let capture = dir.join("take.wav");
    let journal = dir.join("take.jsonl");
    let (mut child, lines) =
        common::run_clock(&path, &["--capture", s(&capture), "--journal", s(&journal)]);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    // A param inside the module, and the pitch the notes set (which they
    // keep), then the pool grown and shrunk.
    let edits = [
        held(2, "900Hz", "330Hz"),
        held(4, "900Hz", "330Hz"),
        held(1, "900Hz", "330Hz"),
    ];
    // Each change waits until the capture holds 400 ms of audio past the
    // last one (not 400 ms of wall time: a loaded machine plays late), so
    // the windows measured around each are steady.
    let mut last = 0;
    let quiet = 400 * 48;
    for text in &edits {
        common::wait_captured(&capture, last + quiet, 2);
        common::save_as_editor(&path, text, Duration::ZERO);
        common::wait_line(&lines, "edit applied", &mut log);
        last = landed(log.last().unwrap(), 48_000.0);
    }
    for (key, answer) in [
        ("l", "switched strict → live"),
        ("s", "switched live → strict"),
    ] {
        common::wait_captured(&capture, last + quiet, 2);
        writeln!(child.stdin.as_mut().unwrap(), "{key}").unwrap();
        common::wait_line(&lines, answer, &mut log);
        last = landed(log.last().unwrap(), 48_000.0);
    }
    common::wait_captured(&capture, last + quiet, 2);
    let log = common::press_then_quit(&mut child, &lines, log, &[]);
    // A template node's copies are told once, with how many voices.
    assert!(
        log.contains("`filt.cutoff` glides 2000 → 900 (2 voices)"),
        "{log}"
    );
    assert!(!log.contains('#'), "no voice copy's id is shown: {log}");
    assert!(
        !log.contains("osc.freq"),
        "the notes' pitch is not edited: {log}"
    );
    // 2 → 4 voices: two added, the first two carry; 4 → 1: three removed.
    assert!(log.contains("node `osc` added (2 voices)"), "{log}");
    assert!(log.contains("node `osc` removed (3 voices)"), "{log}");
    common::assert_replays(&journal, &capture, &log);

    let played: Vec<f32> = read_f32(&capture).iter().step_by(2).copied().collect();
    let rate = 48_000.0;
    let at: Vec<usize> = log
        .lines()
        .filter(|l| l.starts_with("edit applied at") || l.starts_with("switched "))
        .map(|l| landed(l, rate))
        .collect();
    assert_eq!(at.len(), 5, "{log}");
    let ms = |n: usize| n * 48;
    for (k, &t) in at.iter().enumerate() {
        let (steady, before) = step_and_level(&played[t - ms(300)..t - ms(5)]);
        let (step, _) = step_and_level(&played[t - ms(5)..t + ms(60)]);
        let (_, after) = step_and_level(&played[t + ms(60)..t + ms(300)]);
        assert!(
            step <= steady * 1.25,
            "handover {k} at sample {t}: a step of {step} against {steady} before (a click)"
        );
        // Shrinking to one voice drops the second note; the first plays on.
        assert!(
            after > before * 0.5,
            "handover {k} at sample {t}: level {after} after, {before} before"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
