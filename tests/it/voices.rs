//! Voice modules, from the outside: scenes with `"voices": N` rendered by
//! the binary and read back. A chord sounds its pitches at its velocities;
//! more notes than voices steal by the stated rule (oldest released, else
//! oldest held) without a click; renders are the same bits at every block
//! size and on every run; a voice's noise is its own; the pedal holds and
//! `same_note` chooses; bad scenes fail with a located error (exit 2).

use crate::support as common;

use common::{morphrt, stderr, stdout, temp_dir};
use std::f64::consts::PI;
use std::path::{Path, PathBuf};
use std::process::Output;

const SR: f64 = 48_000.0;

/// A scene with one voice module `pad` of `voices` voices: `osc` (an op
/// with `freq` and `amp`) times an envelope `env`, scaled by the velocity
/// in `amp`; `module_extra` adds keys to the module (`"same_note": "new"`),
/// `events` is the events array's inside.
fn pad_scene(voices: usize, osc: &str, env: &str, module_extra: &str, events: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000, "seed": 7, "duration": "2s",
  "modules": [ {{ "id": "pad", "voices": {voices}{module_extra},
      "note": {{ "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" }},
      "nodes": [
        {{ "id": "osc", "op": "{osc}", "params": {{ "freq": "220Hz", "amp": 0.1 }} }},
        {{ "id": "env", "op": "adsr", "params": {{ {env} }} }},
        {{ "id": "vca", "op": "multiply" }},
        {{ "id": "amp", "op": "gain", "params": {{ "gain": 1 }} }} ] }} ],
  "edges": [ {{ "from": "osc", "to": "vca:a" }}, {{ "from": "env", "to": "vca:b" }}, {{ "from": "vca", "to": "amp" }} ],
  "outputs": {{ "main": ["pad"] }},
  "events": [ {events} ] }}"#
    )
}

/// A quick, flat envelope: 1 ms up, held at 1, `release` down.
fn flat_env(release: &str) -> String {
    format!(r#""attack": "1ms", "decay": "1ms", "sustain": 1, "release": "{release}""#)
}

/// Writes `text` as `dir/name` and renders it to `dir/name.wav` (f32).
fn render_text(dir: &Path, name: &str, text: &str, args: &[&str]) -> (Output, PathBuf) {
    let scene = dir.join(name);
    std::fs::write(&scene, text).unwrap();
    let wav = dir.join(format!("{name}.wav"));
    (common::render(&scene, &wav, args), wav)
}

/// Renders under strict and returns the mono output.
fn render_mono(dir: &Path, name: &str, text: &str) -> Vec<f64> {
    let (o, wav) = render_text(dir, name, text, &["--profile", "strict"]);
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    common::read_f32(&wav).iter().map(|&x| x as f64).collect()
}

fn at(t: f64) -> usize {
    (t * SR).round() as usize
}

/// The 4-term Blackman–Harris window (side lobes below −92 dB).
fn window(n: usize) -> Vec<f64> {
    let (a0, a1, a2, a3) = (0.35875, 0.48829, 0.14128, 0.01168);
    (0..n)
        .map(|i| {
            let x = 2.0 * PI * i as f64 / (n - 1) as f64;
            a0 - a1 * libm::cos(x) + a2 * libm::cos(2.0 * x) - a3 * libm::cos(3.0 * x)
        })
        .collect()
}

/// The amplitude of the sine at `hz` in `x` (a windowed DFT at exactly that
/// frequency, scaled so that a sine of amplitude a reads a).
fn amplitude(x: &[f64], hz: f64) -> f64 {
    let w = window(x.len());
    let (mut re, mut im) = (0.0, 0.0);
    for (i, (s, w)) in x.iter().zip(&w).enumerate() {
        let ph = 2.0 * PI * hz * i as f64 / SR;
        re += s * w * libm::cos(ph);
        im -= s * w * libm::sin(ph);
    }
    2.0 * (re * re + im * im).sqrt() / w.iter().sum::<f64>()
}

/// The frequencies of the spectral peaks of `x` below `top` Hz that reach
/// 1/1000 (−60 dB) of the largest, by bin (resolution SR / len).
fn peaks(x: &[f64], top: f64) -> Vec<f64> {
    let bin = SR / x.len() as f64;
    let mags: Vec<f64> = (0..(top / bin) as usize)
        .map(|k| amplitude(x, k as f64 * bin))
        .collect();
    let max = mags.iter().cloned().fold(0.0, f64::max);
    (1..mags.len() - 1)
        .filter(|&k| mags[k] > mags[k - 1] && mags[k] >= mags[k + 1] && mags[k] > max * 1e-3)
        .map(|k| k as f64 * bin)
        .collect()
}

/// The largest sample-to-sample step of `x`.
fn max_step(x: &[f64]) -> f64 {
    x.windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f64::max)
}

fn note_on(t: f64, hz: f64, velocity: f64) -> String {
    format!(r#"{{ "time": "{t:.4}s", "module": "pad", "note": "{hz}Hz", "velocity": {velocity} }}"#)
}

fn note_off(t: f64, hz: f64) -> String {
    format!(r#"{{ "time": "{t:.4}s", "module": "pad", "note": "{hz}Hz", "off": true }}"#)
}

/// Three notes at once: exactly their three pitches sound, each at its
/// velocity's level.
#[test]
fn a_chord_sounds_its_three_pitches_at_their_velocities() {
    let dir = temp_dir("voices-chord");
    let notes = [(57, 1.0), (64, 0.5), (69, 0.25)];
    let events: Vec<String> = notes
        .iter()
        .map(|(n, v)| {
            format!(r#"{{ "time": "0s", "module": "pad", "note": {n}, "velocity": {v}, "duration": "1s" }}"#)
        })
        .collect();
    let text = pad_scene(4, "sine", &flat_env("50ms"), "", &events.join(", "));
    let x = render_mono(&dir, "chord.json", &text);
    let part = &x[at(0.2)..at(0.2) + 16384];
    let hz = |n: i32| 440.0 * libm::pow(2.0, (n as f64 - 69.0) / 12.0);
    let found = peaks(part, 4000.0);
    let bin = SR / part.len() as f64;
    assert_eq!(found.len(), 3, "three pitches, found {found:?} Hz");
    for ((n, _), f) in notes.iter().zip(&found) {
        assert!(
            (f - hz(*n)).abs() <= bin,
            "note {n}: peak at {f} Hz, expected {} Hz",
            hz(*n)
        );
    }
    let levels: Vec<f64> = notes.iter().map(|(n, _)| amplitude(part, hz(*n))).collect();
    assert!(
        (levels[0] - 0.1).abs() < 1e-3,
        "velocity 1 plays amp 0.1: {levels:?}"
    );
    for (i, (_, v)) in notes.iter().enumerate() {
        let ratio = levels[i] / levels[0];
        assert!(
            (ratio - v).abs() < 0.01 * v,
            "note {i}: level ratio {ratio}, velocity ratio {v}"
        );
    }
    // After the notes end and ring out, nothing sounds.
    assert!(x[at(1.2)..].iter().all(|s| *s == 0.0), "silent once free");
}

/// Eleven notes on eight voices: the 9th and 10th take the voices released
/// longest ago (released second, then first: not the order they started),
/// the 11th the voice held longest (not the lowest voice). After each steal
/// the stolen pitch is gone and every other still sounds; around each steal
/// no step is larger than the largest step of the eight steady notes.
#[test]
fn more_notes_than_voices_steal_oldest_released_then_oldest_held_without_a_click() {
    let dir = temp_dir("voices-steal");
    // Falling pitches: the notes that steal are lower than those they join,
    // so a steady window before any steal bounds every step after it. Off
    // the 10 Hz grid, so that the voices are not all at a zero crossing at
    // each steal (the test fails with `"steal_fade": "0ms"`).
    let hz = |k: usize| 401.7 - 30.0 * k as f64;
    let mut events: Vec<String> = (0..8)
        .map(|k| note_on(0.1 * k as f64, hz(k), 1.0))
        .collect();
    // Notes 1 and 0 (voices 1 and 0) are released, 1 first; they ring for 2 s.
    events.push(note_off(0.8, hz(1)));
    events.push(note_off(0.85, hz(0)));
    let steals = [(0.9, 8, 1), (1.2, 9, 0), (1.5, 10, 2)];
    for (t, k, _) in steals {
        events.push(note_on(t, hz(k), 1.0));
    }
    let env = r#""attack": "5ms", "decay": "1ms", "sustain": 1, "release": "2s""#;
    let text = pad_scene(8, "sine", env, "", &events.join(", "));
    let x = render_mono(&dir, "steal.json", &text);
    let steady = max_step(&x[at(0.72)..at(0.8)]);
    let mut sounding: Vec<usize> = (0..8).collect();
    for (t, new, stolen) in steals {
        sounding.retain(|&k| k != stolen);
        sounding.push(new);
        let part = &x[at(t + 0.02)..at(t + 0.27)];
        for k in 0..11 {
            let a = amplitude(part, hz(k));
            if sounding.contains(&k) {
                assert!(
                    a > 0.03,
                    "at {t} s note {k} ({} Hz) should sound: {a}",
                    hz(k)
                );
            } else {
                assert!(a < 1e-3, "at {t} s note {k} ({} Hz) should not: {a}", hz(k));
            }
        }
        let around = max_step(&x[at(t - 0.01)..at(t + 0.02)]);
        assert!(
            around <= steady,
            "a click at the steal at {t} s: step {around} > steady {steady}"
        );
    }
}

/// The chord-and-steal scene with noise in every voice, for the hashes.
fn busy_scene() -> String {
    let mut events: Vec<String> = (0..6)
        .map(|k| note_on(0.05 * k as f64, 300.0 + 70.0 * k as f64, 0.9))
        .collect();
    events.push(note_off(0.4, 300.0));
    events.push(note_off(0.41, 370.0));
    events.push(r#"{ "time": "0.5s", "module": "pad", "sustain": true }"#.to_string());
    events.push(note_off(0.55, 440.0));
    events.push(r#"{ "time": "0.8s", "module": "pad", "sustain": false }"#.to_string());
    events.push(note_on(0.6, 900.0, 0.5));
    events.push(note_on(0.61, 950.0, 0.5));
    let text = pad_scene(4, "saw", &flat_env("80ms"), "", &events.join(", "));
    text.replace(r#""duration": "2s""#, r#""duration": "1.2s""#)
        .replace(
            r#"{ "id": "vca", "op": "multiply" }"#,
            r#"{ "id": "hiss", "op": "noise", "params": { "amp": 0.02 } }, { "id": "sum", "op": "mix" }, { "id": "vca", "op": "multiply" }"#,
        )
        .replace(
            r#"{ "from": "osc", "to": "vca:a" }"#,
            r#"{ "from": "osc", "to": "sum:in0" }, { "from": "hiss", "to": "sum:in1" }, { "from": "sum", "to": "vca:a" }"#,
        )
}

/// Strict renders of a scene that starts, steals, sustains and frees voices
/// are the same bits at block sizes 1, 64 and 4096 and on a second run;
/// repro's are the same bits on a second run.
#[test]
fn voice_renders_are_the_same_bits_at_every_block_size_and_every_run() {
    let dir = temp_dir("voices-bits");
    let text = busy_scene();
    let hash = |profile: &str, block: &str| {
        let (o, _) = render_text(
            &dir,
            "busy.json",
            &text,
            &["--profile", profile, "--block-size", block, "--hash", "-q"],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).trim().to_string()
    };
    let strict: Vec<String> = ["1", "64", "4096", "64"]
        .iter()
        .map(|b| hash("strict", b))
        .collect();
    assert_eq!(strict[0].len(), 64, "a SHA-256: {strict:?}");
    assert!(
        strict.iter().all(|h| *h == strict[0]),
        "strict hashes differ: {strict:?}"
    );
    let (a, b) = (hash("repro", "64"), hash("repro", "64"));
    assert_eq!(a, b, "repro differs between two runs");
    assert_ne!(a, strict[0], "repro runs at f32");
}

/// A noise scene: voices 0–2 play the notes `first` (pitch Hz, start,
/// release), voice 3 a note from 0.1 s that is held; voices 0–2 are free
/// long before 0.4 s.
fn noise_scene(first: &[(f64, f64, f64)]) -> String {
    let mut events: Vec<String> = first
        .iter()
        .flat_map(|&(hz, on, off)| [note_on(on, hz, 0.7), note_off(off, hz)])
        .collect();
    events.push(note_on(0.1, 1000.0, 1.0));
    pad_scene(4, "noise", &flat_env("5ms"), "", &events.join(", "))
        .replace(r#""freq": "220Hz", "amp": 0.1"#, r#""amp": 0.5"#)
        .replace(r#""pitch": "osc.freq", "#, "")
        .replace(r#""duration": "2s""#, r#""duration": "0.5s""#)
}

/// Voice 3's noise is keyed by its own id, `osc#3`: what voices 0–2 played
/// (other notes, other times) changes none of its samples, and they are
/// the locked Philox mapping's for that id (not voice 0's).
#[test]
fn a_voices_noise_is_its_own_whatever_the_other_voices_did() {
    use morphrt::dsp::rng::{hash64, NoiseStream};
    let dir = temp_dir("voices-noise");
    let a = render_mono(
        &dir,
        "a.json",
        &noise_scene(&[(100.0, 0.0, 0.2), (200.0, 0.01, 0.2), (300.0, 0.02, 0.2)]),
    );
    let b = render_mono(
        &dir,
        "b.json",
        &noise_scene(&[(500.0, 0.05, 0.15), (400.0, 0.06, 0.25), (700.0, 0.09, 0.3)]),
    );
    let span = at(0.4)..at(0.5);
    assert!(
        a[span.clone()]
            .iter()
            .zip(&b[span.clone()])
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "voice 3's sound depends on what voices 0-2 played"
    );
    let oracle = |id: &str, n: usize| {
        let mut s = NoiseStream::new(hash64(7, id, 0), 0);
        (0.5 * s.sample::<f64>(n as u64)) as f32 as f64
    };
    let mine = span.clone().all(|n| a[n] == oracle("osc#3", n));
    let voice0 = span.clone().all(|n| a[n] == oracle("osc#0", n));
    assert!(mine, "voice 3 plays the stream keyed by `osc#3`");
    assert!(!voice0, "voice 3 plays its own stream, not voice 0's");
}

/// Renders `text` (a file in `dir`) and returns the error output, asserting
/// exit code 2 and that nothing was written.
fn bad(dir: &Path, name: &str, text: &str, args: &[&str]) -> String {
    let (o, wav) = render_text(dir, name, text, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: {err}");
    assert!(!wav.exists(), "{name}: nothing rendered");
    err
}

/// Each bad voice scene fails before rendering with exit 2 and an error
/// that says where (file:line:column) and what is wrong.
#[test]
fn bad_voice_scenes_fail_with_located_errors() {
    let dir = temp_dir("voices-bad");
    let good = pad_scene(4, "saw", &flat_env("50ms"), "", &note_on(0.0, 220.0, 1.0));
    assert!(render_text(&dir, "good.json", &good, &[])
        .0
        .status
        .success());
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "voices0.json",
            good.replace(r#""voices": 4"#, r#""voices": 0"#),
            &["voices", "1", "256"],
        ),
        (
            "voices1000.json",
            good.replace(r#""voices": 4"#, r#""voices": 1000"#),
            &["voices", "256"],
        ),
        (
            "unknown-node.json",
            good.replace(r#""pitch": "osc.freq""#, r#""pitch": "oscc.freq""#),
            &["note.pitch", "oscc", "osc"],
        ),
        (
            "fixed-param.json",
            good.replace(r#""velocity": "amp.gain""#, r#""velocity": "dl.max_time""#)
                .replace(
                    r#"{ "id": "amp", "op": "gain", "params": { "gain": 1 } }"#,
                    r#"{ "id": "amp", "op": "gain", "params": { "gain": 1 } }, { "id": "dl", "op": "delay" }"#,
                ),
            &["note.velocity", "max_time"],
        ),
        (
            "no-voices.json",
            good.replace(r#""voices": 4,"#, "")
                .replace(r#""note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" },"#, "")
                .replace(r#""main": ["pad"]"#, r#""main": ["amp"]"#),
            &["pad", "no voice"],
        ),
        (
            "plain-module.json",
            good.replace(r#""module": "pad", "note""#, r#""module": "fx", "note""#)
                .replace(
                    r#""modules": ["#,
                    r#""modules": [ { "id": "fx", "nodes": [ { "id": "lp", "op": "biquad" } ] },"#,
                )
                .replace(r#""main": ["pad"]"#, r#""main": ["lp"]"#)
                .replace(r#""edges": ["#, r#""edges": [ { "from": "pad", "to": "lp" }, "#),
            &["module `fx`, which has no voices"],
        ),
        (
            "unknown-module.json",
            good.replace(r#""module": "pad", "note""#, r#""module": "pads", "note""#),
            &["unknown module `pads`", "pad"],
        ),
        (
            "edge-out.json",
            good.replace(r#""main": ["pad"]"#, r#""main": ["lp"]"#)
                .replace(
                    r#""edges": ["#,
                    r#""nodes": [ { "id": "lp", "op": "biquad" } ], "edges": [ { "from": "amp", "to": "lp" }, "#,
                ),
            &["edge from `amp`", "outside", "`pad`"],
        ),
    ];
    for (name, text, says) in cases {
        let err = bad(&dir, name, &text, &[]);
        let located = err.lines().any(|l| {
            l.split_once(&format!("{name}:")).is_some_and(|(_, rest)| {
                let mut at = rest.split(':');
                at.next().is_some_and(|l| l.parse::<u32>().is_ok())
                    && at.next().is_some_and(|c| c.parse::<u32>().is_ok())
            })
        });
        assert!(located, "{name}: located (file:line:column): {err}");
        for s in says {
            assert!(err.contains(s), "{name}: says `{s}`: {err}");
        }
    }
    // A MIDI file that is not one.
    let fake = dir.join("notes.mid");
    std::fs::write(&fake, b"not a MIDI file at all\n").unwrap();
    std::fs::remove_file(dir.join("good.json.wav")).unwrap();
    let err = bad(
        &dir,
        "good.json",
        &good,
        &["--midi", fake.to_str().unwrap()],
    );
    assert!(
        err.contains("notes.mid") && err.contains("not a standard MIDI file"),
        "names the MIDI file and what it is not: {err}"
    );
}

/// The RMS of `x` over `from..to` seconds.
fn rms(x: &[f64], from: f64, to: f64) -> f64 {
    let part = &x[at(from)..at(to)];
    (part.iter().map(|s| s * s).sum::<f64>() / part.len() as f64).sqrt()
}

/// With the pedal down, a note-off holds its note until the pedal comes up;
/// without it, the note ends at its note-off.
#[test]
fn the_sustain_pedal_holds_released_notes_until_it_comes_up() {
    let dir = temp_dir("voices-pedal");
    let notes = format!("{}, {}", note_on(0.1, 440.0, 1.0), note_off(0.2, 440.0));
    let pedal = format!(
        r#"{{ "time": "0.05s", "module": "pad", "sustain": true }}, {notes}, {{ "time": "0.6s", "module": "pad", "sustain": false }}"#
    );
    let held = render_mono(
        &dir,
        "held.json",
        &pad_scene(2, "sine", &flat_env("20ms"), "", &pedal),
    );
    let plain = render_mono(
        &dir,
        "plain.json",
        &pad_scene(2, "sine", &flat_env("20ms"), "", &notes),
    );
    let full = 0.1 / 2f64.sqrt();
    for (x, name) in [(&held, "pedal"), (&plain, "no pedal")] {
        assert!(
            (rms(x, 0.12, 0.19) - full).abs() < 1e-3,
            "{name}: the note sounds"
        );
    }
    assert!(
        rms(&plain, 0.25, 0.55) == 0.0,
        "without the pedal the note ends"
    );
    assert!(
        (rms(&held, 0.25, 0.55) - full).abs() < 1e-3,
        "the pedal holds the note"
    );
    assert!(
        held[at(0.65)..].iter().all(|s| *s == 0.0),
        "pedal up: it ends"
    );
    assert!(
        rms(&held, 0.6, 0.61) > 0.0,
        "it ends at the pedal, not before"
    );
}

/// The same note twice: by default the second takes the voice of the first
/// (one voice sounds), with `"same_note": "new"` a second voice (two sound:
/// started 48 cycles apart, they are in phase and add up to twice as loud).
#[test]
fn same_note_reuses_its_voice_unless_the_module_says_new() {
    let dir = temp_dir("voices-same");
    let events = format!("{}, {}", note_on(0.0, 480.0, 1.0), note_on(0.1, 480.0, 1.0));
    let env = flat_env("20ms");
    let reuse = render_mono(&dir, "reuse.json", &pad_scene(4, "sine", &env, "", &events));
    let new = render_mono(
        &dir,
        "new.json",
        &pad_scene(4, "sine", &env, r#", "same_note": "new""#, &events),
    );
    let peak = |x: &[f64]| {
        x[at(0.2)..at(0.3)]
            .iter()
            .fold(0.0f64, |m, s| m.max(s.abs()))
    };
    assert!(
        (peak(&reuse) - 0.1).abs() < 1e-3,
        "reuse: one voice: {}",
        peak(&reuse)
    );
    assert!(
        (peak(&new) - 0.2).abs() < 2e-3,
        "new: two voices: {}",
        peak(&new)
    );
    // Before the second note both play one voice, the same bits.
    let span = 0..at(0.1);
    assert_eq!(reuse[span.clone()], new[span]);
}

/// The scene schema (`morphrt schema`) takes note events as the loader
/// does: a note or the pedal for a module, and refuses what the loader
/// refuses on the text alone.
#[test]
fn the_schema_takes_note_events_and_refuses_bad_ones() {
    let schema: serde_json::Value = serde_json::from_str(&stdout(&morphrt(&["schema"]))).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let with = |event: &str| -> serde_json::Value {
        serde_json::from_str(&pad_scene(4, "saw", &flat_env("50ms"), "", event)).unwrap()
    };
    for good in [
        note_on(0.0, 220.0, 0.5),
        note_off(0.5, 220.0),
        r#"{ "time": 0, "module": "pad", "note": 60.5, "duration": "1s" }"#.to_string(),
        r#"{ "time": "1s", "module": "pad", "sustain": true }"#.to_string(),
        r#"{ "time": "1s", "node": "osc", "param": "amp", "value": 0.2 }"#.to_string(),
    ] {
        assert!(v.is_valid(&with(&good)), "valid: {good}");
    }
    for bad in [
        r#"{ "time": "1s", "module": "pad", "note": 60, "velocity": 1.5 }"#,
        r#"{ "time": "1s", "module": "pad", "note": 128 }"#,
        r#"{ "time": "1s", "module": "pad" }"#,
        r#"{ "time": "1s", "module": "pad", "note": 60, "sustain": true }"#,
        r#"{ "module": "pad", "note": 60 }"#,
        r#"{ "time": "1s", "module": "pad", "note": 60, "off": "yes" }"#,
    ] {
        assert!(!v.is_valid(&with(bad)), "invalid: {bad}");
        let o = render_text(
            &temp_dir("voices-schema"),
            "bad.json",
            &with(bad).to_string(),
            &[],
        )
        .0;
        assert_eq!(
            o.status.code(),
            Some(2),
            "the loader refuses {bad} too: {}",
            stderr(&o)
        );
    }
}

/// A voice scene's state taken mid-chord, mid-steal and mid-pedal and
/// restored into a fresh engine plays on the same bits as the engine it
/// was taken from: the allocator's state (phases, ages, pending notes, the
/// pedal) travels with the nodes'.
#[test]
fn a_restored_voice_engine_plays_on_the_same_bits() {
    use morphrt::profile::Profile;
    let text = busy_scene();
    for at in [3_000u64, 20_000, 28_820, 29_000, 30_000, 40_000] {
        let mut a = common::engine(&text, Some(Profile::Strict), 64);
        common::play(&mut a, at, 0);
        let st = a.snapshot();
        let mut b = common::engine(&text, Some(Profile::Strict), 64);
        b.restore(&st).unwrap();
        assert_eq!(
            b.voice_states(),
            a.voice_states(),
            "at {at}: the allocator state"
        );
        let (x, y) = (
            common::play(&mut a, 57_600, 0),
            common::play(&mut b, 57_600, 0),
        );
        let same = x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits());
        assert!(
            same && x.len() == y.len(),
            "restored at sample {at}: output differs"
        );
    }
}
