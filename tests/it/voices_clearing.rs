//! Voices with long state (a `delay` line, a `reverb`): a voice that stops
//! running is cleared a part per chunk, never in one block, and a note
//! that takes it starts once it is clean — from exactly a fresh voice's
//! state, at a sample that does not depend on the block size.

use crate::support as common;

use morphrt::engine::{Engine, Phase, CLEAR_PER_SAMPLE};
use morphrt::graph::{NoteAction, PlanNote};
use morphrt::ops::StateValue;
use morphrt::profile::Profile;

const SR: u64 = 48_000;
/// The steal fade (the default 5 ms).
const FADE: u64 = SR / 200;

/// One voice module `pad` of `voices` voices: a saw through a flat
/// envelope into a `delay` whose line holds `max_time`, then a gain.
/// `events` is the events array's inside.
fn scene(voices: usize, max_time: &str, feedback: f64, events: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000, "seed": 7,
  "modules": [ {{ "id": "pad", "voices": {voices},
      "note": {{ "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" }},
      "nodes": [
        {{ "id": "osc", "op": "saw", "params": {{ "freq": "220Hz", "amp": 0.1 }} }},
        {{ "id": "env", "op": "adsr", "params": {{ "attack": "1ms", "decay": "1ms", "sustain": 1, "release": "5ms" }} }},
        {{ "id": "vca", "op": "multiply" }},
        {{ "id": "dl", "op": "delay", "params": {{ "max_time": "{max_time}", "time": "30ms", "feedback": {feedback}, "mix": 0.5 }} }},
        {{ "id": "amp", "op": "gain", "params": {{ "gain": 1 }} }} ] }} ],
  "edges": [ {{ "from": "osc", "to": "vca:a" }}, {{ "from": "env", "to": "vca:b" }},
             {{ "from": "vca", "to": "dl" }}, {{ "from": "dl", "to": "amp" }} ],
  "outputs": {{ "main": ["pad"] }},
  "events": [ {events} ] }}"#
    )
}

fn note(sample: u64, hz: u32) -> String {
    format!(r#"{{ "time": "{sample}samples", "module": "pad", "note": "{hz}Hz" }}"#)
}

/// The samples a voice whose longest node holds `state` samples takes to
/// be cleared, as the voice rules state it: ⌊L / 512⌋ + 1.
fn clearing_time(state: u64) -> u64 {
    state / 512 + 1
}

/// `delay`'s line for `max_time` seconds at 48 kHz, as its docs state it:
/// ⌈max_time·sr⌉ + 2 samples.
fn delay_line(max_time_s: f64) -> u64 {
    (max_time_s * SR as f64).ceil() as u64 + 2
}

fn play_strict(text: &str, block: usize, to: u64) -> Vec<f64> {
    let mut e = common::engine(text, Some(Profile::Strict), block);
    common::play(&mut e, to, 0)
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// A note that steals the only voice, whose 2 s delay line still rings
/// with the first note (feedback 0.9): after the steal fade the voice is
/// silent for its clearing time, then plays exactly what a fresh voice
/// plays for that note started there — nothing of the first note is
/// heard — and all of it is the same bits at every block size.
#[test]
fn a_stolen_voice_with_a_long_delay_waits_until_clean_then_plays_as_a_fresh_voice() {
    let steal = 24_000;
    let wait = clearing_time(delay_line(2.0));
    assert_eq!(wait, 188, "a 2 s line at 48 kHz clears in 3.9 ms");
    let starts = steal + FADE + wait;
    let end = starts + 20_000;
    let stolen = scene(
        1,
        "2s",
        0.9,
        &format!("{}, {}", note(0, 440), note(steal, 330)),
    );
    let fresh = scene(1, "2s", 0.9, &note(starts, 330));
    let played = play_strict(&stolen, 64, end);
    let alone = play_strict(&fresh, 64, end);
    assert!(
        played[steal as usize - 1] != 0.0,
        "the first note sounds up to the steal"
    );
    let gap = &played[(steal + FADE) as usize..starts as usize];
    assert!(
        gap.iter().all(|&x| x == 0.0),
        "silent while the voice is cleared"
    );
    assert!(
        played[starts as usize..].iter().any(|&x| x != 0.0),
        "the stolen note sounds once the voice is clean"
    );
    assert_eq!(
        bits(&played[starts as usize..]),
        bits(&alone[starts as usize..]),
        "the stolen note plays from a fresh voice's state"
    );
    for block in [1, 7, 128] {
        assert_eq!(
            bits(&play_strict(&stolen, block, end)),
            bits(&played),
            "the same bits at block size {block}"
        );
    }
}

/// The delay line of a stolen voice is cleared a part per block, about
/// `CLEAR_PER_SAMPLE` samples per sample of time, never in one block: a
/// block at the start of its clearing leaves most of the line as it was.
#[test]
fn a_stolen_voices_delay_line_is_cleared_a_part_per_block() {
    let steal = 72_000;
    let text = scene(
        1,
        "2s",
        0.9,
        &format!("{}, {}", note(0, 440), note(steal, 330)),
    );
    let mut e = common::engine(&text, Some(Profile::Strict), 64);
    let line_nonzero = |e: &Engine| {
        let st = e.snapshot();
        let dl = st.nodes.iter().find(|n| n.id == "dl#0").expect("dl#0");
        let buf = dl
            .state
            .entries
            .iter()
            .find(|(k, _)| k == "buffer")
            .map(|(_, v)| v)
            .expect("its line");
        match buf {
            StateValue::F64(v) => v.iter().filter(|&&x| x != 0.0).count() as u64,
            _ => panic!("strict is f64"),
        }
    };
    let fade_end = steal + FADE;
    common::play(&mut e, fade_end.div_ceil(64) * 64, 0);
    let before = line_nonzero(&e);
    assert!(
        before > 3 * 64 * CLEAR_PER_SAMPLE / 2,
        "the line rings: {before} samples"
    );
    let mut last = before;
    let mut blocks = 0;
    while last > 0 {
        let to = e.clock() + 64;
        common::play(&mut e, to, 0);
        let now = line_nonzero(&e);
        assert!(
            last - now <= 64 * CLEAR_PER_SAMPLE,
            "at most a block's part: {last} → {now} at {}",
            e.clock()
        );
        last = now;
        blocks += 1;
    }
    assert!(
        blocks >= 2,
        "cleared over several blocks, not at once ({blocks})"
    );
    let wait = clearing_time(delay_line(2.0));
    assert!(
        e.clock() <= fade_end + wait + 64,
        "clean by the end of its clearing time"
    );
}

/// A note on a module whose voice 0 went free a moment ago (its line not
/// yet clear) and whose voice 1 is clean takes voice 1 and starts at
/// once; the next note waits for voice 0 to be clean.
#[test]
fn a_note_takes_the_free_voice_that_is_clean_first() {
    let text = scene(2, "2s", 0.0, &note(0, 440));
    let text = text.replace(
        r#"{ "time": "0samples", "module": "pad", "note": "440Hz" }"#,
        r#"{ "time": "0samples", "module": "pad", "note": "440Hz", "duration": "10ms" }"#,
    );
    let mut e = common::engine(&text, Some(Profile::Strict), 64);
    let voices = |e: &Engine| e.voice_states()[0].voices.clone();
    common::play(&mut e, 64, 0);
    assert_eq!(voices(&e)[0].phase, Phase::Held);
    // Until voice 0 has gone free (released, then quiet).
    while voices(&e)[0].phase != Phase::Free {
        let to = e.clock() + 64;
        common::play(&mut e, to, 0);
        assert!(e.clock() < SR * 2, "voice 0 goes free");
    }
    let v0 = voices(&e)[0];
    assert!(
        v0.clean_at > e.clock(),
        "voice 0 is being cleared: clean at {}, clock {}",
        v0.clean_at,
        e.clock()
    );
    let on = |e: &mut Engine, hz: f64| {
        let pool = e.voice_pool("pad").unwrap();
        let at = e.clock();
        assert!(e.push_note(PlanNote {
            sample: at,
            pool,
            action: NoteAction::On {
                key: hz.to_bits(),
                tag: 0,
                pitch_hz: hz,
                velocity: 1.0,
            },
        }));
        common::play(e, at + 1, 0);
    };
    on(&mut e, 330.0);
    let v = voices(&e);
    assert_eq!(v[1].phase, Phase::Held, "the clean voice 1 plays at once");
    assert_eq!(v[0].phase, Phase::Free);
    on(&mut e, 550.0);
    let v = voices(&e);
    assert!(
        v[0].phase == Phase::Stealing && v[0].clearing && v[0].restart_at == v0.clean_at,
        "the next note waits for voice 0 to be clean: {:?}",
        v[0]
    );
    common::play(&mut e, v0.clean_at + 1, 0);
    assert_eq!(voices(&e)[0].phase, Phase::Held, "then it plays");
}
