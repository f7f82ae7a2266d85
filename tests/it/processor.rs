//! The embedding API's processor and controller: any host slicing gives
//! the same strict bytes as an offline render, delayed by one block;
//! `process` never allocates; a profile switch carries state through the
//! handover `replay` redoes; a restored snapshot resumes bit for bit.

use crate::support::counting;
use morphrt::api::player::offline_player;
use morphrt::api::{Activation, Controller, Event, Notice, ProcessError, Processor};
use morphrt::engine::incoming::{Incoming, Scripted};
use morphrt::engine::{ChangeFeed, InputBlock, InputFeed, ScriptedChange, ScriptedNote};
use morphrt::graph::{compile, midi_note_hz, CompileOptions, ControlValue, NoteAction};
use morphrt::profile::Profile;

/// A strict scene with an input, a param a host moves, and a voice module.
const SCENE: &str = r#"{
  "version": "1.0",
  "profile": "strict",
  "sample_rate": 48000,
  "seed": 5,
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
    { "id": "in", "op": "input", "params": { "channel": 0 } },
    { "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "3kHz", "q": 0.7 } },
    { "id": "tone", "op": "sine", "params": { "freq": "330Hz", "amp": 0.25 } },
    { "id": "sum", "op": "mix", "params": { "gains": [1, 1] } }
  ],
  "edges": [
    { "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "vel" },
    { "from": "in", "to": "lp" }, { "from": "lp", "to": "sum:in0" }, { "from": "pad", "to": "sum:in1" }
  ],
  "outputs": { "main": ["sum", "tone"] }
}"#;

const FRAMES: usize = 9000;
const MAX: usize = 512;

/// Input sample `n`: a tone over a ramp, exact in f32.
fn input(n: u64) -> f32 {
    let t = n as f64 / 48_000.0;
    (0.4 * libm::sin(2.0 * std::f64::consts::PI * 510.0 * t) + (n % 97) as f64 / 970.0) as f32
}

struct Feed;
impl InputFeed for Feed {
    fn read(&mut self, start: u64, block: &mut InputBlock<'_>) {
        for (i, d) in block.channel_mut(0).iter_mut().enumerate() {
            *d = input(start + i as u64) as f64;
        }
    }
}

/// The host's events, by absolute frame: the tone's frequency moves, notes
/// start and end, the pedal goes down and up (some on one frame).
fn script() -> Vec<(u64, EventSpec)> {
    vec![
        (5, EventSpec::Freq(440.0)),
        (700, EventSpec::On(60, 0.8)),
        (700, EventSpec::On(64, 0.5)),
        (1301, EventSpec::Freq(523.25)),
        (1900, EventSpec::Pedal(true)),
        (2000, EventSpec::Off(60)),
        (2000, EventSpec::Off(64)),
        (3003, EventSpec::On(67, 0.9)),
        (4100, EventSpec::Pedal(false)),
        (4500, EventSpec::Off(67)),
        (6001, EventSpec::Freq(300.0)),
        (7777, EventSpec::On(48, 1.0)),
        (8500, EventSpec::Off(48)),
    ]
}

#[derive(Clone, Copy)]
enum EventSpec {
    Freq(f64),
    On(u8, f32),
    Off(u8),
    Pedal(bool),
}

fn activate(text: &str) -> (Controller, Processor) {
    Activation::new(48_000, MAX)
        .activate_scene(text, "host.json")
        .expect("the scene activates")
}

/// Plays the scene through a processor in calls of the sizes `sizes`
/// gives (cycled), with the script's events at their frames; the output,
/// channel by channel, as f32 bits.
fn play(sizes: &[usize]) -> Vec<Vec<u32>> {
    let (ctl, mut p) = activate(SCENE);
    let freq = ctl.param_index("tone", "freq").expect("tone.freq");
    let script = script();
    let ins: Vec<f32> = (0..FRAMES as u64).map(input).collect();
    let ch = p.output_channels();
    let mut out = vec![vec![0.0f32; FRAMES]; ch];
    let mut at = 0;
    let mut k = 0;
    let mut events = Vec::with_capacity(64);
    while at < FRAMES {
        let n = sizes[k % sizes.len()].min(FRAMES - at);
        k += 1;
        events.clear();
        for (f, e) in &script {
            if (at as u64..(at + n) as u64).contains(f) {
                let offset = (*f - at as u64) as u32;
                events.push(match *e {
                    EventSpec::Freq(hz) => Event::param(offset, freq, hz),
                    EventSpec::On(key, v) => Event::note_on(offset, key, v),
                    EventSpec::Off(key) => Event::note_off(offset, key),
                    EventSpec::Pedal(down) => Event::sustain(offset, down),
                });
            }
        }
        let mut outs: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[at..at + n]).collect();
        p.process(&[&ins[at..at + n]], &mut outs, &events, n)
            .expect("a valid call");
        at += n;
    }
    assert_eq!(p.refused_events(), 0);
    out.iter()
        .map(|c| c.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// The same scene, input and events rendered offline by the player's
/// block loop (as `morphrt render` runs it), as f32 bits.
fn offline(frames: usize) -> Vec<Vec<u32>> {
    let scene = morphrt::scene::load_str(SCENE, "host.json", None).unwrap();
    let options = CompileOptions {
        sample_rate: Some(48_000),
        ..CompileOptions::default()
    };
    let mut engine = morphrt::engine::Engine::new(compile(&scene, &options).unwrap());
    engine.set_input_feed(Box::new(Feed));
    let mut controls = Vec::new();
    let mut notes = Vec::new();
    for (f, e) in script() {
        let note = |action| ScriptedNote {
            sample: f,
            module: "pad".into(),
            action,
        };
        match e {
            EventSpec::Freq(hz) => controls.push(ScriptedChange {
                sample: f,
                node: "tone".into(),
                param: "freq".into(),
                value: ControlValue::Number(hz),
                ramp: 0,
            }),
            EventSpec::On(key, v) => {
                let hz = midi_note_hz(key as f64);
                notes.push(note(NoteAction::On {
                    key: hz.to_bits(),
                    tag: 0,
                    pitch_hz: hz,
                    velocity: v as f64,
                }))
            }
            EventSpec::Off(key) => notes.push(note(NoteAction::Off {
                key: midi_note_hz(key as f64).to_bits(),
                tag: 0,
            })),
            EventSpec::Pedal(down) => notes.push(note(NoteAction::Sustain(down))),
        }
    }
    let mut feed = ChangeFeed::with_notes(controls, notes);
    let mut out = vec![Vec::new(); engine.channels()];
    offline_player(engine)
        .play_frames::<()>(
            frames as u64,
            &[],
            Some(&mut feed),
            |_| Ok(()),
            |bus| {
                for (c, o) in out.iter_mut().enumerate() {
                    o.extend((0..bus.frames()).map(|i| (bus.get(c, i) as f32).to_bits()));
                }
                Ok(())
            },
            |_| {},
        )
        .unwrap();
    assert!(feed.errors().is_empty(), "{:?}", feed.errors());
    out
}

#[test]
fn strict_output_is_the_same_for_every_slicing_and_equals_the_offline_render_one_block_late() {
    let (_, p) = activate(SCENE);
    let b = p.latency();
    assert_eq!(b, 64, "strict's block");
    assert_eq!((p.input_channels(), p.output_channels()), (1, 2));
    assert_eq!(p.sample_rate(), 48_000);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<usize> = (0..4000)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            1 + (rng % MAX as u64) as usize
        })
        .collect();
    let reference = play(&[MAX]);
    for sizes in [
        vec![1],
        vec![7],
        vec![2, 3, 5, 11, 13, 61, 127, 251, 509],
        random,
    ] {
        assert!(
            play(&sizes) == reference,
            "slicing {:?}…",
            &sizes[..sizes.len().min(5)]
        );
    }
    let offline = offline(FRAMES - b);
    for (c, (host, off)) in reference.iter().zip(&offline).enumerate() {
        assert!(host[..b].iter().all(|x| *x == 0), "the latency is silence");
        assert!(
            host[b..] == off[..],
            "channel {c}: the host output, one block late, is the offline render"
        );
    }
}

#[test]
fn process_never_allocates_or_frees_with_input_events_and_notes() {
    let (ctl, mut p) = activate(SCENE);
    let freq = ctl.param_index("tone", "freq").unwrap();
    let ins = vec![0.25f32; MAX];
    let mut l = vec![0.0f32; MAX];
    let mut r = vec![0.0f32; MAX];
    let sizes = [1usize, 37, 64, 129, MAX, 3];
    let (a0, f0) = counting::counts();
    counting::realtime(|| {
        for k in 0..600 {
            let n = sizes[k % sizes.len()];
            let events = [
                Event::param(0, freq, 300.0 + k as f64),
                Event::note_on(0, 60 + (k % 12) as u8, 0.7),
                Event::sustain(0, k % 4 == 0),
                Event::note_off((n - 1) as u32, 60 + ((k + 6) % 12) as u8),
            ];
            p.process(&[&ins[..n]], &mut [&mut l[..n], &mut r[..n]], &events, n)
                .unwrap();
        }
    });
    let (a1, f1) = counting::counts();
    assert_eq!((a1 - a0, f1 - f0), (0, 0), "process allocated or freed");
    assert_eq!(p.refused_events(), 0);
}

#[test]
fn a_call_that_does_not_fit_the_activation_is_an_error_with_silence() {
    let (_, mut p) = activate(SCENE);
    let ins = vec![0.5f32; MAX + 1];
    let mut l = vec![1.0f32; MAX + 1];
    let mut r = vec![1.0f32; MAX + 1];
    let e = p
        .process(&[&ins], &mut [&mut l, &mut r], &[], MAX + 1)
        .unwrap_err();
    assert_eq!(
        e,
        ProcessError::TooManyFrames {
            frames: MAX + 1,
            max: MAX
        }
    );
    assert_eq!(
        e.to_string(),
        "513 frames in one call: the processor was activated for at most 512"
    );
    assert!(l.iter().chain(&r).all(|x| *x == 0.0), "silence");
    l.fill(1.0);
    assert_eq!(
        p.process(&[], &mut [&mut l, &mut r], &[], 8).unwrap_err(),
        ProcessError::InputChannels {
            given: 0,
            expected: 1
        }
    );
    assert!(l.iter().all(|x| *x == 0.0));
    assert_eq!(
        p.process(&[&ins], &mut [&mut l[..]], &[], 8).unwrap_err(),
        ProcessError::OutputChannels {
            given: 1,
            expected: 2
        }
    );
    assert_eq!(
        p.process(&[&ins[..4]], &mut [&mut l, &mut r], &[], 8)
            .unwrap_err(),
        ProcessError::ShortBuffer { len: 4, frames: 8 }
    );
    assert_eq!(
        p.process(
            &[&ins],
            &mut [&mut l, &mut r],
            &[Event::note_on(8, 60, 1.0)],
            8
        )
        .unwrap_err(),
        ProcessError::EventOffset {
            offset: 8,
            frames: 8
        }
    );
    // Nothing moved: the refused calls took no frames.
    assert_eq!(p.frames(), 0);
    p.process(&[&ins], &mut [&mut l, &mut r], &[], 8).unwrap();
    assert_eq!(p.frames(), 8);
}

/// A sine alone, for the handover tests.
const SINE: &str = r#"{
  "version": "1.0",
  "sample_rate": 48000,
  "seed": 3,
  "nodes": [
    { "id": "tone", "op": "sine", "params": { "freq": "997Hz", "amp": 0.5 } },
    { "id": "hiss", "op": "noise", "params": { "amp": 0.01 } }
  ],
  "outputs": { "main": ["tone", "hiss"] }
}"#;

/// Plays `frames` more frames in calls of `call` frames, polling the
/// controller after each call; the output and what the controller said.
fn run(
    ctl: &mut Controller,
    p: &mut Processor,
    frames: usize,
    call: usize,
    out: &mut [Vec<f32>],
) -> Vec<Notice> {
    let mut notices = Vec::new();
    let mut done = 0;
    let mut l = vec![0.0f32; call];
    let mut r = vec![0.0f32; call];
    while done < frames {
        let n = call.min(frames - done);
        p.process(&[], &mut [&mut l[..n], &mut r[..n]], &[], n)
            .unwrap();
        out[0].extend_from_slice(&l[..n]);
        out[1].extend_from_slice(&r[..n]);
        done += n;
        notices.extend(ctl.poll());
    }
    notices
}

#[test]
fn a_profile_switch_carries_the_sines_phase_as_the_replayed_handover_does() {
    let (mut ctl, mut p) = Activation::new(48_000, 256)
        .profile(Profile::Strict)
        .activate_scene(SINE, "sine.json")
        .unwrap();
    let b = p.latency() as u64;
    let mut out = vec![Vec::new(), Vec::new()];
    run(&mut ctl, &mut p, 3000, 100, &mut out);
    ctl.set_profile(Profile::Repro).unwrap();
    let notices = run(&mut ctl, &mut p, 9000, 77, &mut out);
    let Some(Notice::Swapped {
        saved_at,
        swap_at,
        fade,
        ..
    }) = notices.into_iter().next()
    else {
        panic!("no swap");
    };
    assert_eq!(ctl.profile(), Profile::Repro);
    assert_eq!(p.engine().profile(), Profile::Repro);
    assert!(fade > 0, "a profile switch crossfades");
    // The same handover (N, S, fade) offline, as `replay` redoes a
    // journal's switch: identical bits.
    let fixed = |profile| {
        let scene = morphrt::scene::load_str(SINE, "sine.json", None).unwrap();
        let options = CompileOptions {
            profile: Some(profile),
            sample_rate: Some(48_000),
            ..CompileOptions::default()
        };
        Incoming::from_plan(compile(&scene, &options).unwrap(), None, Vec::new())
    };
    let mut scripted = Scripted::new(fixed(Profile::Strict), 2);
    scripted
        .handover_at(fixed(Profile::Repro), saved_at, swap_at, fade)
        .unwrap();
    let total = out[0].len() as u64;
    scripted.play_to(total - b);
    let offline = scripted.output();
    for (c, host) in out.iter().enumerate() {
        let late: Vec<u32> = host[b as usize..].iter().map(|x| x.to_bits()).collect();
        let off: Vec<u32> = (0..(total - b) as usize)
            .map(|i| (offline[i * 2 + c] as f32).to_bits())
            .collect();
        assert!(late == off, "channel {c}");
    }
    // The phase went on: after the crossfade the repro tone is the sine of
    // the uninterrupted clock (a direct formula).
    let from = (swap_at + fade + b) as usize;
    let worst = out[0][from..]
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let n = (from as u64 + i as u64 - b) as f64;
            let want = 0.5 * libm::sin(2.0 * std::f64::consts::PI * 997.0 * n / 48_000.0);
            (*x as f64 - want).abs()
        })
        .fold(0.0, f64::max);
    assert!(worst < 1e-4, "the phase jumped: {worst}");
}

#[test]
fn a_restored_snapshot_resumes_bit_for_bit() {
    let (mut ctl, mut p) = Activation::new(48_000, 64)
        .profile(Profile::Strict)
        .activate_scene(SINE, "sine.json")
        .unwrap();
    let b = p.latency();
    let mut out = vec![Vec::new(), Vec::new()];
    // Calls of one block each, so the restore lands at a known call.
    run(&mut ctl, &mut p, 1024, 64, &mut out);
    ctl.snapshot().unwrap();
    let mut state = None;
    while state.is_none() {
        for n in run(&mut ctl, &mut p, 64, 64, &mut out) {
            if let Notice::Snapshot(s) = n {
                state = Some(s);
            }
        }
    }
    let state = state.unwrap();
    let n = state.clock as usize;
    run(&mut ctl, &mut p, 47 * 64, 64, &mut out);
    let before = out[0].len();
    ctl.restore(&state).unwrap();
    let mut restored_after = None;
    while restored_after.is_none() {
        let len = out[0].len();
        for notice in run(&mut ctl, &mut p, 64, 64, &mut out) {
            if let Notice::Restored { at } = notice {
                assert_eq!(at as usize, n);
                restored_after = Some(len + 64);
            }
        }
    }
    let r = restored_after.unwrap();
    run(&mut ctl, &mut p, 2000, 64, &mut out);
    for (c, ch) in out.iter().enumerate() {
        let resumed: Vec<u32> = ch[r..r + 2000].iter().map(|x| x.to_bits()).collect();
        let original: Vec<u32> = ch[n + b..n + b + 2000]
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert!(resumed == original, "channel {c} after the restore");
    }
    // Not a coincidence: what played just before the restore differs.
    assert!(out[1][before - 64..before] != out[1][n + b..n + b + 64]);
}

#[test]
fn an_edit_of_one_param_hands_over_without_a_crossfade_and_ramps_to_the_new_value() {
    let (mut ctl, mut p) = Activation::new(48_000, 128)
        .profile(Profile::Strict)
        .activate_scene(SINE, "sine.json")
        .unwrap();
    let b = p.latency();
    let mut out = vec![Vec::new(), Vec::new()];
    run(&mut ctl, &mut p, 2048, 128, &mut out);
    ctl.edit(&SINE.replace("\"amp\": 0.5", "\"amp\": 0.125"))
        .unwrap();
    let notices = run(&mut ctl, &mut p, 12_000, 128, &mut out);
    let Some(Notice::Swapped { swap_at, fade, .. }) = notices.into_iter().next() else {
        panic!("no swap");
    };
    assert_eq!(fade, 0, "a param-only edit needs no crossfade");
    let peak = |from: usize, to: usize| out[0][from..to].iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let s = swap_at as usize + b;
    assert!(
        (peak(s - 2000, s) - 0.5).abs() < 1e-3,
        "before: {}",
        peak(s - 2000, s)
    );
    // After the edit's ramp (10 ms), the tone plays at the new amplitude.
    let end = out[0].len();
    assert!(
        (peak(s + 1000, end) - 0.125).abs() < 1e-3,
        "after: {}",
        peak(s + 1000, end)
    );
}
