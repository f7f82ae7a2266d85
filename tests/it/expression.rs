//! Expression a keyboard player expects: channel and poly aftertouch
//! mapped in a scene's `controls`, and the pitch bend wheel bending a
//! voice module by the note control's `bend` range. Poly aftertouch moves
//! only the voice playing its note (read back by DFT); a bend of the whole
//! wheel plays the note `bend` semitones off (measured by zero crossings
//! against 440·2^(r/12)); a MIDI file played live journals the pressures
//! and the bend at the samples they land on, the capture shows each
//! change exactly there, and the journal replays bit for bit; a bad
//! `bend` is a located error. The MIDI files are built here byte by byte.

use crate::support as common;

use common::{assert_replays, midi_vlq as vlq, morphrt, read_f32, stderr, stdout, temp_dir};
use std::path::{Path, PathBuf};

const SR: f64 = 48000.0;

/// A voice module of 4 sine voices (0.25 amplitude, sustain 1, velocity
/// 127 = gain 1); channel aftertouch on channel 1 moves every voice's
/// `lvl`, poly aftertouch the `touch` of the voice playing its note.
/// `BEND` is replaced by the note control's extra keys.
const SCENE: &str = r#"{"version": "1.0", "sample_rate": 48000, "seed": 1,
  "modules": [{"id": "pad", "voices": 4,
    "note": {"pitch": "osc.freq", "gate": "env.gate", "velocity": "vel.gain"},
    "nodes": [
      {"id": "osc", "op": "sine", "params": {"freq": "220Hz", "amp": 0.25}},
      {"id": "env", "op": "adsr", "params": {"attack": "2ms", "decay": "10ms", "sustain": 1, "release": "20ms"}},
      {"id": "vca", "op": "multiply"},
      {"id": "vel", "op": "gain", "params": {"gain": 1}},
      {"id": "lvl", "op": "gain", "params": {"gain": 1}},
      {"id": "touch", "op": "gain", "params": {"gain": 1}}]}],
  "edges": [{"from": "osc", "to": "vca:a"}, {"from": "env", "to": "vca:b"},
            {"from": "vca", "to": "vel"}, {"from": "vel", "to": "lvl"}, {"from": "lvl", "to": "touch"}],
  "outputs": {"main": ["pad"]},
  "controls": [
    {"midi": {"note": "any", "channel": 1}, "module": "pad"BEND},
    {"midi": {"aftertouch": true, "channel": 1}, "node": "lvl", "param": "gain", "min": 0, "max": 1},
    {"midi": {"poly_aftertouch": true, "channel": 1}, "node": "touch", "param": "gain", "min": 0, "max": 1}]}"#;

/// A format 0 file at 96 ticks a quarter and the default 120 bpm (192
/// ticks a second) of (seconds, message bytes) in time order.
fn smf(events: &[(f64, &[u8])]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut last = 0;
    for (s, e) in events {
        let tick = (s * 192.0) as u32;
        data.extend(vlq(tick - last));
        data.extend(*e);
        last = tick;
    }
    data.extend([0, 0xff, 0x2f, 0]);
    let mut f = b"MThd\0\0\0\x06\0\0\0\x01\0\x60MTrk".to_vec();
    f.extend((data.len() as u32).to_be_bytes());
    f.extend(data);
    f
}

/// The scene (with `bend` on its note control) and the MIDI file in a
/// fresh directory.
fn setup(name: &str, bend: &str, mid: &[u8]) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let scene = dir.join("pad.json");
    std::fs::write(&scene, SCENE.replace("BEND", bend)).unwrap();
    let midi = dir.join("play.mid");
    std::fs::write(&midi, mid).unwrap();
    (dir, scene, midi)
}

/// `render --midi` under strict for `seconds`: the mono output.
fn render(dir: &Path, scene: &Path, midi: &Path, seconds: &str) -> Vec<f32> {
    let out = dir.join("out.wav");
    let o = morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "--midi",
        midi.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--profile",
        "strict",
        "-d",
        seconds,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    read_f32(&out)
}

/// The magnitude of `x[from..to]`'s DFT at `hz` (Hann window), per sample.
fn dft(x: &[f32], (from, to): (f64, f64), hz: f64) -> f64 {
    let (a, b) = ((from * SR) as usize, (to * SR) as usize);
    let n = (b - a) as f64;
    let (mut re, mut im) = (0.0, 0.0);
    for (i, &v) in x[a..b].iter().enumerate() {
        let w = 0.5 - 0.5 * libm::cos(std::f64::consts::TAU * i as f64 / n);
        let ph = std::f64::consts::TAU * hz * (a + i) as f64 / SR;
        re += w * v as f64 * libm::cos(ph);
        im += w * v as f64 * libm::sin(ph);
    }
    (re * re + im * im).sqrt() / n
}

/// The frequency of the sine in `x[a..b]` (sample indices), from its
/// rising zero crossings, each placed by linear interpolation.
fn zero_crossing_hz(x: &[f32], a: usize, b: usize) -> f64 {
    let mut times = Vec::new();
    for i in a + 1..b {
        let (p, q) = (x[i - 1] as f64, x[i] as f64);
        if p < 0.0 && q >= 0.0 {
            times.push((i - 1) as f64 + p / (p - q));
        }
    }
    assert!(times.len() > 10, "too few crossings: {}", times.len());
    (times.len() - 1) as f64 * SR / (times[times.len() - 1] - times[0])
}

fn hz(note: f64) -> f64 {
    440.0 * libm::pow(2.0, (note - 69.0) / 12.0)
}

#[test]
fn poly_aftertouch_moves_only_the_voice_playing_its_note_and_channel_aftertouch_every_voice() {
    // C4 and G4 struck at full velocity; G4's key pressure goes to 0 at
    // 0.5 s; the channel pressure to 64 at 1.0 s.
    let mid = smf(&[
        (0.0, &[0x90, 60, 127]),
        (0.0, &[0x90, 67, 127]),
        (0.5, &[0xa0, 67, 0]),
        (1.0, &[0xd0, 64]),
    ]);
    let (dir, scene, midi) = setup("expr-poly", "", &mid);
    let x = render(&dir, &scene, &midi, "1.5s");
    let (c, g) = (hz(60.0), hz(67.0));
    let before = (dft(&x, (0.2, 0.45), c), dft(&x, (0.2, 0.45), g));
    assert!(before.0 > 0.05 && before.1 > 0.05, "{before:?}");
    // G4's voice is silent; C4's plays on untouched.
    let pressed = (dft(&x, (0.6, 0.95), c), dft(&x, (0.6, 0.95), g));
    assert!(
        (pressed.0 / before.0 - 1.0).abs() < 1e-3,
        "C4 moved: {before:?} → {pressed:?}"
    );
    assert!(pressed.1 < 1e-4 * before.1, "G4 still sounds: {pressed:?}");
    // Channel pressure 64 scales every voice by 64/127.
    let channel = dft(&x, (1.1, 1.45), c);
    assert!(
        (channel / before.0 - 64.0 / 127.0).abs() < 1e-3,
        "C4 at channel pressure 64: {} of its level, not {}",
        channel / before.0,
        64.0 / 127.0
    );
}

/// A4 struck at 0; the wheel fully up at 0.25 s, fully down at 1.0 s,
/// centred at 1.75 s.
fn bend_file() -> Vec<u8> {
    smf(&[
        (0.0, &[0x90, 69, 127]),
        (0.25, &[0xe0, 0x7f, 0x7f]),
        (1.0, &[0xe0, 0, 0]),
        (1.75, &[0xe0, 0, 0x40]),
    ])
}

/// The frequencies `bend_file` plays with the note control's `bend`, and
/// that of the first whole period after the wheel goes up.
fn bent(name: &str, bend: &str) -> ([f64; 3], f64) {
    let (dir, scene, midi) = setup(name, bend, &bend_file());
    let x = render(&dir, &scene, &midi, "2.5s");
    let at = |s: f64| (s * SR) as usize;
    let first = {
        let up = at(0.25);
        let mut rising = (up + 1..at(0.3)).filter(|&i| x[i - 1] < 0.0 && x[i] >= 0.0);
        let (a, b) = (rising.next().unwrap(), rising.next().unwrap());
        let t = |i: usize| (i - 1) as f64 + x[i - 1] as f64 / (x[i - 1] as f64 - x[i] as f64);
        SR / (t(b) - t(a))
    };
    (
        [
            zero_crossing_hz(&x, at(0.4), at(0.95)),
            zero_crossing_hz(&x, at(1.15), at(1.7)),
            zero_crossing_hz(&x, at(1.9), at(2.4)),
        ],
        first,
    )
}

#[test]
fn the_bend_wheel_bends_a_voice_by_the_note_controls_range_in_semitones() {
    // No `bend`: a range of 2 semitones. The wheel's ends are exactly ±r.
    for (name, bend, r) in [
        ("expr-bend-default", "", 2.0),
        ("expr-bend-7", r#", "bend": 7"#, 7.0),
    ] {
        let ([up, down, centre], first) = bent(name, bend);
        let want = [hz(69.0 + r), hz(69.0 - r), 440.0];
        for (got, want) in [up, down, centre].into_iter().zip(want) {
            assert!(
                (got - want).abs() < 0.01,
                "range {r}: {got} Hz, not {want} Hz ({up}, {down}, {centre})"
            );
        }
        // The bend glides over 5 ms: the first period after it lies
        // between the two pitches, not on the new one (a step would).
        let span = want[0] - 440.0;
        assert!(
            first > 440.0 + 0.1 * span && first < want[0] - 0.1 * span,
            "range {r}: the first period after the bend is {first} Hz (from 440 to {})",
            want[0]
        );
    }
}

#[test]
fn a_bend_range_of_zero_leaves_the_pitch_alone() {
    let ([up, down, centre], _) = bent("expr-bend-0", r#", "bend": 0"#);
    for got in [up, down, centre] {
        assert!((got - 440.0).abs() < 0.01, "{up}, {down}, {centre}");
    }
}

/// The journal's records of `kind` (`note`, `control`).
fn records(journal: &Path, kind: &str) -> (String, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(journal).unwrap();
    let v = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == kind)
        .collect();
    (text, v)
}

#[test]
fn pressures_and_bends_played_live_land_at_their_journaled_samples_and_replay() {
    let mid = smf(&[
        (0.0, &[0x90, 69, 127]),
        // Channel pressure: every voice silent, then back.
        (0.2, &[0xd0, 0]),
        (0.3, &[0xd0, 127]),
        // Key pressure of a note no voice plays: nothing moves.
        (0.4, &[0xa0, 60, 0]),
        // Key pressure of A4: its voice silent, then back.
        (0.5, &[0xa0, 69, 0]),
        (0.6, &[0xa0, 69, 127]),
        (0.7, &[0xe0, 0x7f, 0x7f]),
    ]);
    let (dir, scene, midi) = setup("expr-live", "", &mid);
    let (cap, journal) = (dir.join("cap.wav"), dir.join("j.jsonl"));
    let port = format!("file:{}", midi.display());
    let o = morphrt(&[
        "run",
        scene.to_str().unwrap(),
        "--device",
        "clock",
        "--profile",
        "repro",
        "--midi",
        &port,
        "--duration",
        "1.2s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let log = stderr(&o);
    assert!(o.status.success(), "{log}");
    let (text, notes) = records(&journal, "note");
    // The note, three key pressures, the bend.
    assert_eq!(notes.len(), 5, "{text}");
    let at = |r: &serde_json::Value| r["at"].as_u64().unwrap() as usize;
    let touch = |i: usize| &notes[i]["action"]["touch"];
    assert_eq!(touch(1)["key"], hz(60.0).to_bits(), "{text}");
    assert_eq!(touch(1)["value"]["number"], 0.0, "{text}");
    assert_eq!(touch(2)["key"], 440f64.to_bits(), "{text}");
    assert_eq!(touch(2)["value"]["number"], 0.0, "{text}");
    assert_eq!(touch(3)["value"]["number"], 1.0, "{text}");
    assert_eq!(notes[4]["action"]["bend"], 2.0, "{text}");
    // Channel pressure moves every voice's copy of `lvl`, at one sample.
    let (_, controls) = records(&journal, "control");
    let lvl: Vec<&serde_json::Value> = controls
        .iter()
        .filter(|c| c["node"].as_str().unwrap().starts_with("lvl#"))
        .collect();
    assert_eq!(lvl.len(), 8, "{text}");
    assert!(lvl[..4].iter().all(|c| at(c) == at(lvl[0])), "{text}");
    assert!(lvl[4..].iter().all(|c| at(c) == at(lvl[4])), "{text}");
    let (off, on) = (at(lvl[0]), at(lvl[4]));

    let x = read_f32(&cap);
    let left: Vec<f32> = x.iter().step_by(2).copied().collect();
    let sounds = |a: usize, b: usize| left[a..b].iter().any(|v| v.abs() > 1e-3);
    let silent = |a: usize, b: usize| left[a..b].iter().all(|v| *v == 0.0);
    // Each change shows from exactly the sample it is journaled at.
    assert!(sounds(off - 24, off) && silent(off, on), "{log}");
    assert!(sounds(on, on + 48), "{log}");
    let (other, mine, back) = (at(&notes[1]), at(&notes[2]), at(&notes[3]));
    assert!(sounds(other, mine), "a key pressure of C4 moved A4: {log}");
    assert!(sounds(mine - 24, mine) && silent(mine, back), "{log}");
    assert!(sounds(back, back + 48), "{log}");
    // The whole wheel up: a whole tone above A4.
    let bend = at(&notes[4]);
    let from = bend + (0.05 * SR) as usize;
    assert!(left.len() > from + (0.3 * SR) as usize, "{log}");
    let f = zero_crossing_hz(&left, from, left.len());
    assert!((f - hz(71.0)).abs() < 0.01, "{f} Hz after the bend: {log}");
    assert_replays(&journal, &cap, &log);
}

/// `check --json` of `SCENE` with `control` as its first control: the
/// first error.
fn first_error(name: &str, control: &str) -> serde_json::Value {
    let dir = temp_dir(name);
    let text = SCENE.replace(
        r#"{"midi": {"note": "any", "channel": 1}, "module": "pad"BEND}"#,
        control,
    );
    let path = dir.join("bad.json");
    std::fs::write(&path, text).unwrap();
    let o = morphrt(&["check", path.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["severity"] == "error")
        .unwrap_or_else(|| panic!("no error: {v}"))
        .clone()
}

#[test]
fn a_bad_bend_is_a_located_error_that_says_what_is_valid() {
    let e = first_error(
        "expr-bad-range",
        r#"{"midi": {"note": "any"}, "module": "pad", "bend": 100}"#,
    );
    assert_eq!(e["path"], "controls[0].bend", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("out of range"),
        "{e}"
    );
    assert!(e["help"].as_str().unwrap().contains("from 0 to 48"), "{e}");
    let e = first_error(
        "expr-bad-word",
        r#"{"midi": {"note": "any"}, "module": "pad", "bend": "two"}"#,
    );
    assert_eq!(e["path"], "controls[0].bend", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("number of semitones"),
        "{e}"
    );
    // `true` beside `midi` is the source reading in the wrong place.
    let e = first_error(
        "expr-bad-true",
        r#"{"midi": {"note": "any"}, "module": "pad", "bend": true}"#,
    );
    assert_eq!(e["path"], "controls[0].bend", "{e}");
    assert!(
        e["help"]
            .as_str()
            .unwrap()
            .contains(r#""midi": {"bend": true}"#),
        "{e}"
    );
    // A range inside `midi` is the range in the wrong place.
    let e = first_error(
        "expr-bad-inside",
        r#"{"midi": {"note": "any", "bend": 2}, "module": "pad"}"#,
    );
    assert_eq!(e["path"], "controls[0].midi.bend", "{e}");
    assert!(e["help"].as_str().unwrap().contains("beside `midi`"), "{e}");
    // A range on a control that plays no voice module.
    let e = first_error(
        "expr-bad-owner",
        r#"{"midi": {"cc": 1}, "node": "lvl", "param": "gain", "bend": 2}"#,
    );
    assert_eq!(e["path"], "controls[0].bend", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("belongs to a MIDI note control that plays a voice module"),
        "{e}"
    );
    // Poly aftertouch onto the param the notes set.
    let e = first_error(
        "expr-bad-touch",
        r#"{"midi": {"poly_aftertouch": true}, "node": "osc", "param": "freq", "min": 100, "max": 200}"#,
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("poly aftertouch cannot move `osc.freq`"),
        "{e}"
    );
}

#[test]
fn check_lists_aftertouch_sources_and_the_bend_range() {
    let (_, scene, _) = setup("expr-check", r#", "bend": 12"#, &[]);
    let o = morphrt(&["check", scene.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    for want in [
        "midi note any ch 1 → voice module pad, pitch bend ±12 semitones",
        "midi aftertouch ch 1 → lvl.gain 0 … 1",
        "midi poly aftertouch ch 1 → touch.gain 0 … 1, each note's pressure → its own voice",
    ] {
        assert!(out.contains(want), "no `{want}` in:\n{out}");
    }
}
