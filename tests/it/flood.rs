//! The block loop under a flood of change records and notes from outside,
//! each landing at its own sample of the block: what the engine plays is
//! the same bits as the same engine driven one sample per block (where
//! nothing can be cut anywhere but at a sample's start) and as the
//! one-pass loop that cuts every node at every such sample (the loop the
//! engine keeps while per-node timing is on); and the callback never
//! allocates or frees.

use crate::support as common;

use common::counting::{counts, realtime};
use morphrt::engine::{ChangeRecord, Engine, Outcome};
use morphrt::graph::{ControlValue, NoteAction, PlanNote};
use morphrt::profile::Profile;

const BLOCK: usize = 64;

/// `scenes/poly-pad.json` made quick: six voices of a saw and noise
/// through a filter and an envelope (short, so voices are released, go
/// quiet and free within the test), a delay outside the voices; the
/// scene's own events move a template node's param (every voice's copy)
/// and the delay's, with ramps, beside notes of its own.
const PAD: &str = r#"{ "version": "1.0", "sample_rate": 48000, "seed": 11,
  "modules": [ { "id": "pad", "voices": 6,
      "note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "vel.gain" },
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.12 } },
        { "id": "air", "op": "noise", "params": { "amp": 0.004 } },
        { "id": "tone", "op": "mix" },
        { "id": "lp", "op": "svf", "params": { "mode": "lowpass", "cutoff": "2.2kHz", "q": 0.9 } },
        { "id": "env", "op": "adsr", "params": { "attack": "1ms", "decay": "4ms", "sustain": 0.7, "release": "3ms" } },
        { "id": "vca", "op": "multiply" },
        { "id": "vel", "op": "gain", "params": { "gain": 1 } } ] } ],
  "nodes": [
    { "id": "space", "op": "delay", "params": { "time": "3ms", "feedback": 0.25, "mix": 0.3, "max_time": "10ms" } } ],
  "edges": [
    { "from": "osc", "to": "tone:in0" }, { "from": "air", "to": "tone:in1" },
    { "from": "tone", "to": "lp" }, { "from": "lp", "to": "vca:a" },
    { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "vel" },
    { "from": "pad", "to": "space" } ],
  "outputs": { "main": ["pad", "space"] },
  "events": [
    { "time": "0s", "module": "pad", "note": 48, "velocity": 0.8, "duration": "30ms" },
    { "time": "1ms", "module": "pad", "note": 52, "velocity": 0.6, "duration": "20ms" },
    { "time": "2.5ms", "node": "lp", "param": "cutoff", "value": "900Hz", "ramp": "3ms" },
    { "time": "3.5ms", "node": "space", "param": "mix", "value": 0.6, "ramp": "1ms" },
    { "time": "150ms", "module": "pad", "note": 55, "velocity": 0.5, "duration": "40ms" },
    { "time": "151.5ms", "node": "space", "param": "mix", "value": 0.2 },
    { "time": "152ms", "node": "lp", "param": "q", "value": 2.0 } ]
}"#;

/// What one block receives from outside, the same for every engine driven.
#[derive(Clone, Copy, Debug)]
enum Push {
    /// A change record for `(node, param)` at sample `at` of the block.
    Control {
        at: u64,
        node: &'static str,
        param: &'static str,
        value: f64,
        ramp: u64,
    },
    /// A note for the `pad` module at sample `at` of the block.
    Note { at: u64, action: NoteAction },
}

/// A note-on of key `k` (a pitch in Hz).
fn on(k: u64, velocity: f64) -> NoteAction {
    let hz = 110.0 + 7.0 * k as f64;
    NoteAction::On {
        key: hz.to_bits(),
        tag: 0,
        pitch_hz: hz,
        velocity,
    }
}

fn off(k: u64) -> NoteAction {
    let hz = 110.0 + 7.0 * k as f64;
    NoteAction::Off {
        key: hz.to_bits(),
        tag: 0,
    }
}

/// The flood, block by block: bursts of up to 48 records and notes at
/// scattered samples (note-ons and offs of 12 keys — steals, the same note
/// again, a note struck and released on one sample — the pedal, a bend, key
/// pressure, all notes off, all sound off, the filter of one voice's copy
/// and the delay outside the voices moved, with and without ramps), then
/// stretches of sparse short notes long enough for released voices to go
/// quiet and free.
fn flood(blocks: usize) -> Vec<Vec<Push>> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    (0..blocks)
        .map(|b| {
            // 24 blocks of flood, then 56 (75 ms) of sparse notes, each
            // struck and released within its block: released voices go
            // quiet and free at samples inside blocks that also take a
            // note-on after that sample.
            if b % 80 >= 24 {
                if rand(3) != 0 {
                    return Vec::new();
                }
                let (at, key) = (rand(BLOCK as u64 / 2), rand(12));
                return vec![
                    Push::Note {
                        at,
                        action: on(key, 0.5),
                    },
                    Push::Note {
                        at: at + 1 + rand(BLOCK as u64 / 2 - 1),
                        action: off(key),
                    },
                ];
            }
            let count = 1 + rand(48);
            (0..count)
                .map(|_| {
                    let at = rand(BLOCK as u64);
                    let key = rand(12);
                    match rand(20) {
                        0..=2 => Push::Control {
                            at,
                            node: "space",
                            param: "mix",
                            value: rand(10) as f64 / 10.0,
                            ramp: if rand(2) == 0 { 0 } else { 1 + rand(100) },
                        },
                        3..=4 => Push::Control {
                            at,
                            node: ["lp#0", "lp#3"][rand(2) as usize],
                            param: "cutoff",
                            value: 300.0 + rand(4000) as f64,
                            ramp: if rand(2) == 0 { 0 } else { 1 + rand(200) },
                        },
                        5..=10 => Push::Note {
                            at,
                            action: on(key, 0.2 + rand(8) as f64 / 10.0),
                        },
                        11..=15 => Push::Note {
                            at,
                            action: off(key),
                        },
                        16 => Push::Note {
                            at,
                            action: NoteAction::Sustain(rand(2) == 0),
                        },
                        17 => Push::Note {
                            at,
                            action: NoteAction::Bend(rand(5) as f64 - 2.0),
                        },
                        18 => Push::Note {
                            at,
                            action: NoteAction::Touch {
                                key: (110.0 + 7.0 * key as f64).to_bits(),
                                // The template's `osc`, its `amp`.
                                node: 0,
                                param: 1,
                                value: ControlValue::Number(rand(10) as f64 / 50.0),
                                ramp: rand(40),
                            },
                        },
                        _ => Push::Note {
                            at,
                            action: if rand(3) == 0 {
                                NoteAction::AllSoundOff
                            } else {
                                NoteAction::AllNotesOff
                            },
                        },
                    }
                })
                .collect()
        })
        .collect()
}

/// A flooded param, as (node, param).
type Param = (&'static str, &'static str);

/// What an engine played and reported.
#[derive(Debug, PartialEq)]
struct Played {
    /// Every main-bus sample's bits, channel after channel per frame.
    bits: Vec<u64>,
    /// Each report as (seq, sample it landed at, node or module).
    reports: Vec<(u64, u64, u32)>,
    /// Voices found free at the blocks' ends, summed over the blocks.
    voices_free: usize,
}

/// Drives `e` through `pushes`, a block of [`BLOCK`] frames at a time,
/// each block rendered as `BLOCK / step` calls of `step` frames; the
/// pushes for a block are queued before its first call. In a counted
/// real-time section when `counted` (the allocations and frees counted are
/// returned).
fn drive(
    e: &mut Engine,
    pushes: &[Vec<Push>],
    step: usize,
    counted: bool,
) -> (Played, (usize, usize)) {
    let pool = e.voice_pool("pad").expect("the pad");
    let targets: Vec<(Param, (usize, usize))> =
        [("space", "mix"), ("lp#0", "cutoff"), ("lp#3", "cutoff")]
            .into_iter()
            .map(|t| (t, e.find_param(t.0, t.1).expect("a flooded param")))
            .collect();
    let mut played = Played {
        bits: Vec::new(),
        reports: Vec::new(),
        voices_free: 0,
    };
    let mut seq = 0u64;
    let mut total = (0, 0);
    let channels = e.channels();
    let mut frame = vec![0.0f64; BLOCK * channels];
    for block in pushes {
        let clock = e.clock();
        let id = e.id();
        let mut run = |e: &mut Engine, seq: &mut u64| {
            for p in block {
                *seq += 1;
                match *p {
                    Push::Control {
                        at,
                        node,
                        param,
                        value,
                        ramp,
                    } => {
                        let (_, (n, pi)) = targets
                            .iter()
                            .find(|(t, _)| *t == (node, param))
                            .expect("a target");
                        let r = ChangeRecord {
                            sample: clock + at,
                            node: *n as u32,
                            param: *pi as u16,
                            value: ControlValue::Number(value),
                            ramp,
                            engine: id,
                            seq: *seq,
                        };
                        e.push_change(r).expect("room in the queue");
                    }
                    Push::Note { at, action } => {
                        let note = morphrt::engine::NoteRecord {
                            note: PlanNote {
                                sample: clock + at,
                                pool,
                                action,
                            },
                            engine: id,
                            seq: *seq,
                        };
                        e.push_note_record(note).expect("room in the queue");
                    }
                }
            }
            for k in 0..BLOCK / step {
                e.process_block(step);
                let bus = e.bus();
                for j in 0..step {
                    for c in 0..channels {
                        frame[(k * step + j) * channels + c] = bus.get(c, j);
                    }
                }
            }
        };
        if counted {
            let before = counts();
            realtime(|| run(e, &mut seq));
            let after = counts();
            total = (total.0 + after.0 - before.0, total.1 + after.1 - before.1);
        } else {
            run(e, &mut seq);
        }
        played.bits.extend(frame.iter().map(|x| x.to_bits()));
        e.take_change_reports(|r| match r.outcome {
            Outcome::Applied { at, node, .. } => played.reports.push((r.seq, at, node)),
            other => panic!("report {}: {other:?}", r.seq),
        });
        played.voices_free += e.voice_states()[0]
            .voices
            .iter()
            .filter(|v| v.phase == morphrt::engine::Phase::Free)
            .count();
    }
    (played, total)
}

/// The first frame at which two renders differ, for the failure message.
fn first_difference(a: &[u64], b: &[u64]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y).map(|i| i / 2)
}

/// Under each profile, the flood played a block at a time is the same bits
/// as the same engine played one sample per block, and as the one-pass
/// loop (per-node timing on), with the same reports at the same samples:
/// a change applied at another sample than its own, to another voice, or
/// a node run past a change of its own before it, would show.
#[test]
fn a_flood_of_records_and_notes_plays_the_same_bits_as_one_sample_blocks() {
    let pushes = flood(400);
    let pushed: usize = pushes.iter().map(Vec::len).sum();
    for p in [Profile::Strict, Profile::Repro, Profile::Live] {
        let mut whole = common::engine(PAD, Some(p), BLOCK);
        let (a, _) = drive(&mut whole, &pushes, BLOCK, false);
        let mut samples = common::engine(PAD, Some(p), BLOCK);
        let (b, _) = drive(&mut samples, &pushes, 1, false);
        let mut one_pass = common::engine(PAD, Some(p), BLOCK);
        one_pass.set_node_timing(true);
        let (c, _) = drive(&mut one_pass, &pushes, BLOCK, false);
        // The flood did what it is for: sound, every push landed, and
        // voices went free in the quiet stretches and played again.
        assert!(
            a.bits.iter().any(|&x| f64::from_bits(x).abs() > 1e-3),
            "under {p}: silence"
        );
        assert_eq!(a.reports.len(), pushed, "under {p}");
        assert!(a.voices_free > 0, "under {p}: no voice went free");
        if p != Profile::Live {
            // Sample-accurate: pushes land on many samples within blocks.
            let inside = a.reports.iter().filter(|r| r.1 % BLOCK as u64 != 0).count();
            assert!(
                inside > pushed / 2,
                "under {p}: {inside} of {pushed} inside blocks"
            );
        }
        assert!(
            a.bits == b.bits,
            "under {p}: a block at a time and a sample at a time differ from frame {:?}",
            first_difference(&a.bits, &b.bits)
        );
        assert!(
            a.bits == c.bits,
            "under {p}: the two loops differ from frame {:?}",
            first_difference(&a.bits, &c.bits)
        );
        assert_eq!(a.reports, b.reports, "under {p}");
        assert_eq!(a.reports, c.reports, "under {p}");
        assert_eq!(
            whole.voice_states(),
            samples.voice_states(),
            "under {p}: the voices' states"
        );
    }
}

/// `scenes/poly-pad.json` under the flood of `benches/flood.rs` (records
/// and notes for every sample of a block, out of order) and the flood
/// above, under every profile: no allocation or free while pushing and
/// playing.
#[test]
fn a_flood_on_poly_pad_never_allocates_in_the_callback() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/poly-pad.json");
    let text = std::fs::read_to_string(path).expect("scenes/poly-pad.json");
    let pushes = flood(160);
    for p in Profile::ALL {
        let mut e = common::engine(&text, Some(p), BLOCK);
        let pool = e.voice_pool("pad").expect("the pad");
        let targets = [
            e.find_param("space", "mix").expect("space.mix"),
            e.find_param("lp#0", "cutoff").expect("lp#0.cutoff"),
        ];
        // Warm up: the first blocks of the scene's own notes.
        for _ in 0..8 {
            e.process_block(BLOCK);
        }
        let before = counts();
        realtime(|| {
            for b in 0..200u64 {
                let next = e.clock() + BLOCK as u64;
                let id = e.id();
                for k in 0..256u64 {
                    let (node, param) = targets[(k % 2) as usize];
                    let _ = e.push_change(ChangeRecord {
                        sample: next + (k * 37 + 11) % BLOCK as u64,
                        node: node as u32,
                        param: param as u16,
                        value: ControlValue::Number(if k % 2 == 0 {
                            (k % 10) as f64 / 10.0
                        } else {
                            500.0 + (k * 13 % 2000) as f64
                        }),
                        ramp: k % 3,
                        engine: id,
                        seq: 0,
                    });
                    let key = (b * 7 + k / 2) % 128;
                    let _ = e.push_note(PlanNote {
                        sample: next + (k * 37 + 16) % BLOCK as u64,
                        pool,
                        action: if k % 2 == 0 { on(key, 0.6) } else { off(key) },
                    });
                }
                e.process_block(BLOCK);
                e.take_change_reports(|_| {});
            }
        });
        let after = counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (0, 0),
            "under {p}: the flood of benches/flood.rs allocated or freed"
        );
        let mut e = common::engine(PAD, Some(p), BLOCK);
        let (_, total) = drive(&mut e, &pushes, BLOCK, true);
        assert_eq!(total, (0, 0), "under {p}: the flood allocated or freed");
    }
}

/// A released voice goes quiet, and so free, inside a block in which a
/// note-on comes after that sample: the note takes that voice (the free
/// voice of lowest index), in blocks as in one-sample blocks, under every
/// sample-accurate profile. A voice left to run only up to its own next
/// change would still look released to the note, which would take the
/// next free voice instead.
#[test]
fn a_note_after_a_voice_goes_quiet_in_its_block_takes_that_voice() {
    // The pad without the scene's own events.
    let text = PAD
        .split(r#""events""#)
        .next()
        .expect("the scene")
        .trim_end();
    let text = format!("{}}}", text.trim_end_matches(','));
    'profiles: for p in [Profile::Strict, Profile::Repro] {
        for shift in 0..2u64 {
            // The sample after which voice 0, struck and released at once,
            // is free, found one sample at a time.
            let mut probe = common::engine(&text, Some(p), BLOCK);
            let pool = probe.voice_pool("pad").expect("the pad");
            let note = |sample, action| PlanNote {
                sample,
                pool,
                action,
            };
            assert!(probe.push_note(note(shift, on(1, 0.8))));
            assert!(probe.push_note(note(shift + 10, off(1))));
            while probe.clock() <= shift + 10 {
                probe.process_block(1);
            }
            assert_eq!(
                probe.voice_states()[0].voices[0].phase,
                morphrt::engine::Phase::Released,
                "under {p}"
            );
            while probe.voice_states()[0].voices[0].phase != morphrt::engine::Phase::Free {
                assert!(probe.clock() < 48_000, "under {p}: voice 0 never went free");
                probe.process_block(1);
            }
            let at = probe.clock();
            if at.is_multiple_of(BLOCK as u64) {
                continue;
            }
            let play = |step: usize| {
                let mut e = common::engine(&text, Some(p), BLOCK);
                assert!(e.push_note(note(shift, on(1, 0.8))));
                assert!(e.push_note(note(shift + 10, off(1))));
                let mut bits = Vec::new();
                while e.clock() < at + 2 * BLOCK as u64 {
                    if e.clock() / BLOCK as u64 == at / BLOCK as u64
                        && e.clock().is_multiple_of(BLOCK as u64)
                    {
                        assert!(e.push_note(note(at, on(5, 0.7))));
                    }
                    for _ in 0..BLOCK / step {
                        e.process_block(step);
                        let bus = e.bus();
                        for j in 0..step {
                            bits.push(bus.get(0, j).to_bits());
                        }
                    }
                }
                (bits, e.voice_states())
            };
            let (whole, whole_voices) = play(BLOCK);
            let (samples, sample_voices) = play(1);
            let key = (110.0 + 7.0 * 5.0f64).to_bits();
            assert_eq!(
                sample_voices[0].voices[0].key, key,
                "under {p}: the note took voice 0"
            );
            assert!(
                whole == samples,
                "under {p}: blocks and one-sample blocks differ"
            );
            assert_eq!(whole_voices, sample_voices, "under {p}");
            continue 'profiles;
        }
        panic!("under {p}: voice 0 went free at a block's start both times");
    }
}
