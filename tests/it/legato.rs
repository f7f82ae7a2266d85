//! Legato voice modules: a note played while another is held retunes the
//! one voice without closing its gate, so a `lag` on its pitch glides from
//! the old note to the new one; releasing the newest note returns to the
//! newest one still held (last-note priority); bit-exact across a
//! snapshot and without allocation in the callback.

use crate::support as common;

use common::counting::{counts, realtime};
use morphrt::engine::Engine;
use morphrt::graph::{NoteAction, PlanNote};
use morphrt::host::record::snapshot::{SnapshotContext, SnapshotFile};
use morphrt::profile::Profile;

const SR: f64 = 48_000.0;

/// One legato voice whose sound is its glided pitch times its gate: `glide`
/// (a `lag`, `up` and `down` seconds) carries the note's pitch in Hz,
/// `amp` (a `gain`) is 1 while the gate is open and 0 after. `legato` is
/// the module's key as written (`""` for none).
fn glide_scene(legato: &str, up: f64, down: f64, events: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000, "seed": 1, "duration": "1s",
  "modules": [ {{ "id": "lead", "voices": 1{legato},
      "note": {{ "pitch": "glide.value", "gate": "amp.gain" }},
      "nodes": [
        {{ "id": "glide", "op": "lag", "params": {{ "up": {up}, "down": {down} }} }},
        {{ "id": "amp", "op": "gain", "params": {{ "gain": 0 }} }} ] }} ],
  "edges": [ {{ "from": "glide", "to": "amp" }} ],
  "outputs": {{ "main": ["lead"] }},
  "events": [ {events} ] }}"#
    )
}

const LEGATO: &str = r#", "legato": true"#;

/// 220 Hz held from 0; 330 Hz struck at 0.25 s and released at 0.5 s
/// while 220 Hz is still held; 220 Hz released at 0.75 s.
const TWO_NOTES: &str = r#"
    { "time": "0s", "module": "lead", "note": "220Hz" },
    { "time": "0.25s", "module": "lead", "note": "330Hz" },
    { "time": "0.5s", "module": "lead", "note": "330Hz", "off": true },
    { "time": "0.75s", "module": "lead", "note": "220Hz", "off": true }"#;

fn at(t: f64) -> usize {
    (t * SR).round() as usize
}

/// The one-pole lag the test expects, run independently: from `y0`
/// towards `x` with a 60 dB time of `time` seconds, `n` samples (the first
/// already one step on).
fn lag_oracle(y0: f64, x: f64, time: f64, n: usize) -> Vec<f64> {
    let b = libm::exp(libm::log(0.001) / (time * SR));
    let mut y = y0;
    (0..n)
        .map(|_| {
            y = x + b * (y - x);
            y
        })
        .collect()
}

fn render(text: &str, block: usize) -> Vec<f64> {
    let mut e = common::engine(text, Some(Profile::Strict), block);
    common::play(&mut e, SR as u64, 0)
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-9 * w.abs(),
            "{what}: sample {i} is {g}, the lag formula gives {w}"
        );
    }
}

#[test]
fn a_legato_note_glides_from_the_held_note_with_the_gate_open_and_returns_on_release() {
    let (up, down) = (0.05, 0.08);
    let y = render(&glide_scene(LEGATO, up, down, TWO_NOTES), 64);
    // The first note, steady from its first sample.
    assert!(y[..at(0.25)].iter().all(|&v| v == 220.0), "the first note");
    // The gate never closes while a note is held: the sound is the pitch.
    let held = &y[..at(0.75)];
    let low = held.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(
        low >= 220.0 - 1e-9,
        "the gate closed or the pitch restarted while notes were held (lowest {low})"
    );
    // From the held 220 Hz up to 330 Hz by the lag's formula...
    let rise = lag_oracle(220.0, 330.0, up, at(0.5) - at(0.25));
    assert_close(&y[at(0.25)..at(0.5)], &rise, "the glide up");
    // ...and, 330 Hz released with 220 Hz still held, back down to it.
    let fall = lag_oracle(rise[rise.len() - 1], 220.0, down, at(0.75) - at(0.5));
    assert_close(&y[at(0.5)..at(0.75)], &fall, "the glide back");
    // Releasing the last held note closes the gate.
    assert!(
        y[at(0.75)..].iter().all(|&v| v == 0.0),
        "released at 0.75 s"
    );
}

#[test]
fn without_legato_the_second_note_starts_its_voice_again() {
    let y = render(&glide_scene("", 0.05, 0.08, TWO_NOTES), 64);
    // The steal fade takes the sound down, and the new note starts on its
    // own pitch without a glide.
    let dip = y[at(0.25)..at(0.3)]
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    assert!(dip < 1.0, "no fade to a new voice (lowest {dip})");
    assert!(y[at(0.3)..at(0.5)].iter().all(|&v| v == 330.0));
}

#[test]
fn a_note_released_underneath_is_forgotten_and_the_pedal_holds_the_newest() {
    // 220 held, 330 over it; 220 released while 330 sounds (nothing
    // moves); 330 released: nothing is held under it, the gate closes.
    let events = r#"
    { "time": "0s", "module": "lead", "note": "220Hz" },
    { "time": "0.25s", "module": "lead", "note": "330Hz" },
    { "time": "0.4s", "module": "lead", "note": "220Hz", "off": true },
    { "time": "0.5s", "module": "lead", "note": "330Hz", "off": true }"#;
    let y = render(&glide_scene(LEGATO, 0.05, 0.05, events), 64);
    let rise = lag_oracle(220.0, 330.0, 0.05, at(0.5) - at(0.25));
    assert_close(&y[at(0.25)..at(0.5)], &rise, "the glide up, undisturbed");
    assert!(y[at(0.5)..].iter().all(|&v| v == 0.0), "released at 0.5 s");

    // With the pedal down, releasing the newest note keeps it sounding
    // (the pedal holds it) rather than returning to the one underneath.
    let events = r#"
    { "time": "0s", "module": "lead", "note": "220Hz" },
    { "time": "0.1s", "module": "lead", "sustain": true },
    { "time": "0.25s", "module": "lead", "note": "330Hz" },
    { "time": "0.5s", "module": "lead", "note": "330Hz", "off": true },
    { "time": "0.75s", "module": "lead", "sustain": false }"#;
    let y = render(&glide_scene(LEGATO, 0.05, 0.05, events), 64);
    let rise = lag_oracle(220.0, 330.0, 0.05, at(0.75) - at(0.25));
    assert_close(&y[at(0.25)..at(0.75)], &rise, "held by the pedal");
    // The pedal up: 220 Hz is still held, so the voice returns to it.
    let fall = lag_oracle(rise[rise.len() - 1], 220.0, 0.05, at(1.0) - at(0.75));
    assert_close(&y[at(0.75)..], &fall, "back to the held note");
}

#[test]
fn legato_renders_the_same_bits_at_every_block_size() {
    let text = glide_scene(LEGATO, 0.05, 0.08, TWO_NOTES);
    let one = render(&text, 1);
    for block in [64, 4096] {
        let other = render(&text, block);
        assert!(
            one.iter()
                .zip(&other)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "block {block} differs from block 1"
        );
    }
}

#[test]
fn legato_with_more_than_one_voice_is_an_error_at_the_module() {
    let text =
        glide_scene(LEGATO, 0.05, 0.08, TWO_NOTES).replace(r#""voices": 1"#, r#""voices": 2"#);
    let err = morphrt::scene::load_str(&text, "legato.json", None).unwrap_err();
    let msg = format!("{}", err[0]);
    assert!(
        msg.contains("legato") && msg.contains("`lead`") && msg.contains("\"voices\": 1"),
        "{msg}"
    );
}

/// A snapshot taken while two notes are held (the newer sounding) and
/// resumed plays on bit for bit: releasing the newer note returns to the
/// one underneath, which the snapshot carried.
#[test]
fn a_snapshot_carries_the_notes_held_underneath() {
    let text = glide_scene(LEGATO, 0.05, 0.08, TWO_NOTES);
    let plan = common::plan(&text, Some(Profile::Strict), 64);
    let cx = SnapshotContext::new(&plan, &text).unwrap();
    let mut a = Engine::new(plan);
    common::play(&mut a, at(0.4) as u64, 0);
    let bytes = cx.file(&a.snapshot()).unwrap().to_bytes();
    let text_of_snapshot = String::from_utf8(bytes.clone()).unwrap();
    assert!(text_of_snapshot.contains("\"held\""), "no held notes saved");
    let next = common::play(&mut a, SR as u64, 0);

    let snap = SnapshotFile::from_bytes(&bytes, "legato.snapshot.json").unwrap();
    let mut b = Engine::new(common::plan(&text, Some(Profile::Strict), 64));
    cx.resume(&snap, &mut b).unwrap();
    let again = common::play(&mut b, SR as u64, 0);
    assert!(
        next.iter()
            .zip(&again)
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "the resumed render differs"
    );
    // And it did return to the held note: the end of the glide back.
    assert!((next[at(0.74) - at(0.4)] - 220.0).abs() < 1.0);
}

/// Legato notes pushed from outside under every profile: retunes, returns,
/// releases and new notes never allocate or free in `process_block`.
#[test]
fn legato_notes_from_outside_never_allocate() {
    for p in Profile::ALL {
        let mut e = common::engine(&glide_scene(LEGATO, 0.01, 0.01, ""), Some(p), 64);
        let pool = e.voice_pool("lead").unwrap();
        let (mut a, mut f) = (0, 0);
        for k in 0..400u64 {
            let clock = e.clock();
            let hz = 200.0 + (k % 40) as f64 * 10.0;
            let note = |sample, action| PlanNote {
                sample,
                pool,
                action,
            };
            let on = note(
                clock + 3,
                NoteAction::On {
                    key: hz.to_bits(),
                    tag: 0,
                    pitch_hz: hz,
                    velocity: 1.0,
                },
            );
            let off = note(
                clock + 5,
                NoteAction::Off {
                    key: hz.to_bits(),
                    tag: 0,
                },
            );
            let (a0, f0) = counts();
            realtime(|| {
                // Overlapping notes: most blocks strike one (40 pitches
                // in turn, more than are kept underneath), and every
                // third block's is released two samples after it.
                if k % 7 != 6 {
                    assert!(e.push_note(on));
                }
                if k % 3 == 2 {
                    assert!(e.push_note(off));
                }
                e.process_block(64);
                std::hint::black_box(e.bus().get(0, 0));
            });
            let (a1, f1) = counts();
            (a, f) = (a + a1 - a0, f + f1 - f0);
        }
        assert_eq!(
            (a, f),
            (0, 0),
            "under {p}: allocations/frees in process_block"
        );
        assert!(
            e.voice_states()[0].held.len() > 1,
            "under {p}: no notes held underneath"
        );
    }
}

/// The falling edges of a rising saw in `y[from..to]` (a drop of more than
/// `drop` over two samples), as sample indices.
fn saw_resets(y: &[f64], from: usize, to: usize, drop: f64) -> Vec<usize> {
    let mut edges = Vec::new();
    let mut i = from.max(2);
    while i < to {
        if y[i] - y[i - 2] < -drop {
            edges.push(i);
            i += 20;
        } else {
            i += 1;
        }
    }
    edges
}

/// The legato example of `scenes/README.md` plays as it says: 220 Hz,
/// a glide up through the pitches between to 330 Hz while the first note
/// is held, and back to 220 Hz when the second is released, the sound
/// never dropping out between; silent after the last release.
#[test]
fn the_legato_example_of_the_scene_reference_glides_both_ways() {
    let text = std::fs::read_to_string(common::root().join("scenes/README.md")).unwrap();
    let json = text
        .split("**Legato portamento.**")
        .nth(1)
        .and_then(|s| s.split("```json\n").nth(1))
        .and_then(|b| b.split("```").next())
        .expect("the legato example");
    let mut e = common::engine(json, Some(Profile::Strict), 64);
    let y = common::play(&mut e, 2 * SR as u64, 0);
    let hz = |from: f64, to: f64| {
        let r = saw_resets(&y, at(from), at(to), 0.3);
        assert!(r.len() >= 3, "no saw between {from} s and {to} s");
        SR * (r.len() - 1) as f64 / (r[r.len() - 1] - r[0]) as f64
    };
    assert!((hz(0.1, 0.5) - 220.0).abs() < 1.0, "{}", hz(0.1, 0.5));
    assert!((hz(0.8, 1.0) - 330.0).abs() < 1.0, "{}", hz(0.8, 1.0));
    assert!((hz(1.3, 1.5) - 220.0).abs() < 1.0, "{}", hz(1.3, 1.5));
    // Between: pitches on the way, up and then down.
    let up = hz(0.52, 0.56);
    let down = hz(1.02, 1.06);
    assert!(up > 225.0 && up < 320.0, "gliding up: {up} Hz");
    assert!(down > 230.0 && down < 325.0, "gliding down: {down} Hz");
    // The gate stays open: every 10 ms of the held span is loud.
    for w in y[at(0.01)..at(1.5)].chunks(at(0.01)) {
        let rms = (w.iter().map(|v| v * v).sum::<f64>() / w.len() as f64).sqrt();
        assert!(rms > 0.1, "a dropout while notes were held (rms {rms})");
    }
    assert!(y[at(1.8)..].iter().all(|&v| v.abs() < 1e-4), "released");
}

/// Every legato note ends once, when it stops for good: the newer note
/// when its release returns the voice to the older, a note forgotten
/// underneath at its release, the last one when its voice goes free.
#[test]
fn each_legato_note_ends_once_when_it_stops_for_good() {
    let ends = |events: &str| {
        let mut e = common::engine(
            &glide_scene(LEGATO, 0.05, 0.05, events),
            Some(Profile::Strict),
            64,
        );
        let mut got = Vec::new();
        while e.clock() < SR as u64 {
            e.process_block(64);
            e.take_note_ends(|n| got.push((f64::from_bits(n.key), n.sample)));
        }
        got
    };
    // 330 Hz leaves at its release (0.5 s); 220 Hz when the voice goes free
    // 50 ms after its release at 0.75 s (its sound is silent at once).
    let free = at(0.75) as u64 + 48_000 * 50 / 1000;
    assert_eq!(
        ends(TWO_NOTES),
        vec![(330.0, at(0.5) as u64), (220.0, free)]
    );
    // 220 Hz forgotten underneath at its release (0.4 s); 330 Hz when free.
    let events = r#"
    { "time": "0s", "module": "lead", "note": "220Hz" },
    { "time": "0.25s", "module": "lead", "note": "330Hz" },
    { "time": "0.4s", "module": "lead", "note": "220Hz", "off": true },
    { "time": "0.5s", "module": "lead", "note": "330Hz", "off": true }"#;
    let free = at(0.5) as u64 + 48_000 * 50 / 1000;
    assert_eq!(ends(events), vec![(220.0, at(0.4) as u64), (330.0, free)]);
}

/// The newest 32 notes are kept underneath: with 34 held, releasing them
/// newest first walks the voice back through 32 of them, and the oldest,
/// forgotten, is not returned to: the gate closes instead.
#[test]
fn the_newest_32_notes_are_kept_underneath() {
    let hz = |k: usize| 200.0 + 10.0 * k as f64;
    let on = |k: usize| (5 * k, k, false);
    let off = |k: usize| (300 + 5 * (33 - k), k, true);
    let events: Vec<String> = (0..34)
        .map(on)
        .chain((0..34).rev().map(off))
        .map(|(t, k, off)| {
            format!(
                r#"{{ "time": "{t}ms", "module": "lead", "note": "{}Hz"{} }}"#,
                hz(k),
                if off { r#", "off": true"# } else { "" }
            )
        })
        .collect();
    let y = render(&glide_scene(LEGATO, 0.0, 0.0, &events.join(",\n")), 64);
    assert_eq!(y[at(0.29)], hz(33), "the newest note sounds");
    for k in (1..33).rev() {
        // Note k + 1 released: the voice plays note k.
        let t = 0.3 + 0.005 * (33 - k) as f64 - 0.0025;
        assert_eq!(y[at(t)], hz(k), "after note {} was released", k + 1);
    }
    // Note 1 released: note 0, past the 32 kept, is not returned to.
    let t = 0.3 + 0.005 * 33.0 - 0.0025;
    assert_eq!(y[at(t)], 0.0, "the forgotten oldest note sounded");
}
