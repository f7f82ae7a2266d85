//! A scripted session (what `replay` plays a journal through) and an
//! offline render (what `render` plays) run the same blocks through the
//! same player: the same scene with the same control changes and notes
//! gives the same samples, bit for bit.

use morphrt::api::player::{offline_player, Scripted};
use morphrt::engine::incoming::Incoming;
use morphrt::engine::{ChangeFeed, ScriptedChange, ScriptedNote};
use morphrt::graph::{compile, midi_note_hz, CompileOptions, ControlValue, NoteAction};
use morphrt::profile::Profile;

/// A voice module and a tone whose frequency and level are moved.
const SCENE: &str = r#"{
  "version": "1.0",
  "sample_rate": 48000,
  "seed": 9,
  "modules": [{
    "id": "pad", "voices": 3,
    "note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "vel.gain" },
    "nodes": [
      { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.2 } },
      { "id": "env", "op": "adsr", "params": { "attack": "2ms", "decay": "20ms", "sustain": 0.5, "release": "15ms" } },
      { "id": "vca", "op": "multiply" },
      { "id": "vel", "op": "gain", "params": { "gain": 1 } }
    ]
  }],
  "nodes": [
    { "id": "tone", "op": "sine", "params": { "freq": "330Hz", "amp": 0.25 } }
  ],
  "edges": [
    { "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "vel" }
  ],
  "outputs": { "main": ["pad", "tone"] }
}"#;

const FRAMES: u64 = 9000;
const BLOCK: usize = 64;

fn incoming(profile: Profile) -> Incoming {
    let scene = morphrt::scene::load_str(SCENE, "scripted.json", None).unwrap();
    let options = CompileOptions {
        profile: Some(profile),
        block_size: Some(BLOCK),
        sample_rate: Some(48_000),
        ..CompileOptions::default()
    };
    Incoming::from_plan(compile(&scene, &options).unwrap(), None, Vec::new())
}

/// Changes of the tone inside blocks (one glides), and notes: two held
/// at once, the pedal, releases.
fn script() -> (Vec<ScriptedChange>, Vec<ScriptedNote>) {
    let change = |sample, param: &str, value, ramp| ScriptedChange {
        sample,
        node: "tone".into(),
        param: param.into(),
        value: ControlValue::Number(value),
        ramp,
    };
    let changes = vec![
        change(1001, "freq", 440.0, 0),
        change(2530, "amp", 0.1, 0),
        change(3333, "freq", 660.0, 300),
        change(6001, "amp", 0.3, 0),
    ];
    let note = |sample, action| ScriptedNote {
        sample,
        module: "pad".into(),
        action,
    };
    let on = |key: f64| {
        let hz = midi_note_hz(key);
        NoteAction::On {
            key: hz.to_bits(),
            tag: 0,
            pitch_hz: hz,
            velocity: 0.8,
        }
    };
    let off = |key: f64| NoteAction::Off {
        key: midi_note_hz(key).to_bits(),
        tag: 0,
    };
    let notes = vec![
        note(500, on(60.0)),
        note(2101, on(64.0)),
        note(2600, NoteAction::Sustain(true)),
        note(4000, off(60.0)),
        note(5555, NoteAction::Sustain(false)),
        note(7003, off(64.0)),
    ];
    (changes, notes)
}

/// The render's output (the player's block loop, stopping at `stops` as
/// `render --snapshot-at` does), interleaved.
fn rendered(profile: Profile, stops: &[u64]) -> Vec<f64> {
    let (changes, notes) = script();
    let mut feed = ChangeFeed::with_notes(changes, notes);
    let mut out = Vec::new();
    offline_player(*incoming(profile).engine)
        .play_frames::<()>(
            FRAMES,
            stops,
            Some(&mut feed),
            |_| Ok(()),
            |bus| {
                for i in 0..bus.frames() {
                    out.extend((0..bus.channels()).map(|c| bus.get(c, i)));
                }
                Ok(())
            },
            |_| {},
        )
        .unwrap();
    assert!(feed.errors().is_empty(), "{:?}", feed.errors());
    out
}

/// The scripted session's output, its blocks cut at `splits` as a
/// journal's snapshots cut them; without the script when `scripted` is
/// false.
fn replayed(profile: Profile, splits: &[u64], scripted: bool) -> Vec<f64> {
    let mut s = Scripted::new(incoming(profile), 2);
    if scripted {
        let (changes, notes) = script();
        s.schedule(changes);
        s.schedule_notes(notes);
    }
    s.split_at(splits.iter().copied());
    s.play_to(FRAMES);
    assert!(s.control_errors().is_empty(), "{:?}", s.control_errors());
    s.into_output()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_scripted_session_equals_the_render_of_its_scene_and_events_bit_for_bit() {
    // Strict, with blocks cut inside (snapshots): the same samples.
    let stops = [700, 2500, 4099];
    let replay = replayed(Profile::Strict, &stops, true);
    assert_eq!(replay.len(), FRAMES as usize * 2);
    assert!(bits(&replay) == bits(&rendered(Profile::Strict, &stops)));
    // Not a coincidence: the script changes the output, and the notes sound.
    assert!(bits(&replay) != bits(&replayed(Profile::Strict, &stops, false)));
    let pad_peak = replay.iter().step_by(2).fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(pad_peak > 0.05, "the pad played: peak {pad_peak}");
    // Live lands each change at the start of its block: the two agree
    // only when they cut the same blocks.
    let live = replayed(Profile::Live, &[], true);
    assert!(bits(&live) == bits(&rendered(Profile::Live, &[])));
    assert!(bits(&live) != bits(&rendered(Profile::Live, &[980])));
}
