//! The embedding API's processor and controller: any host slicing gives
//! the same strict bytes as an offline render, delayed by one block;
//! `process` never allocates; a profile switch carries state through the
//! handover `replay` redoes; a restored snapshot resumes bit for bit.

use crate::support::counting;
use morphrt::api::player::offline_player;
use morphrt::api::player::Scripted;
use morphrt::api::{Activation, Controller, Event, Notice, ProcessError, Processor};
use morphrt::engine::incoming::Incoming;
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
    let freq = ctl.params().index_of("tone.freq").expect("tone.freq") as u32;
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
    let freq = ctl.params().index_of("tone.freq").unwrap() as u32;
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

/// Plays `frames` frames of `SINE`-shaped stereo output in calls of
/// `call` frames with `events(call_start)` in each call, polling after
/// each; the notices.
fn run_with(
    ctl: &mut Controller,
    p: &mut Processor,
    frames: usize,
    call: usize,
    out: &mut [Vec<f32>],
    mut events: impl FnMut(u64) -> Vec<Event>,
) -> Vec<Notice> {
    let mut notices = Vec::new();
    let mut done = 0;
    let mut l = vec![0.0f32; call];
    let mut r = vec![0.0f32; call];
    while done < frames {
        let n = call.min(frames - done);
        let evs = events(p.frames());
        p.process(&[], &mut [&mut l[..n], &mut r[..n]], &evs, n)
            .unwrap();
        out[0].extend_from_slice(&l[..n]);
        out[1].extend_from_slice(&r[..n]);
        done += n;
        notices.extend(ctl.poll());
    }
    notices
}

/// `SINE` compiled as `Incoming` under strict at 48 kHz.
fn incoming(text: &str) -> Incoming {
    let scene = morphrt::scene::load_str(text, "sine.json", None).unwrap();
    let options = CompileOptions {
        profile: Some(Profile::Strict),
        sample_rate: Some(48_000),
        ..CompileOptions::default()
    };
    Incoming::from_plan(compile(&scene, &options).unwrap(), None, Vec::new())
}

/// The host's output from one block on against an offline stereo render.
fn assert_late_equal(out: &[Vec<f32>], offline: &[f64], b: usize, what: &str) {
    let total = out[0].len() - b;
    for (c, host) in out.iter().enumerate() {
        let late: Vec<u32> = host[b..].iter().map(|x| x.to_bits()).collect();
        let off: Vec<u32> = (0..total)
            .map(|i| (offline[i * 2 + c] as f32).to_bits())
            .collect();
        let first = late.iter().zip(&off).position(|(a, b)| a != b);
        assert!(
            first.is_none(),
            "{what}: channel {c} differs from frame {first:?}"
        );
    }
}

#[test]
fn a_param_event_in_the_call_of_a_swap_lands_on_the_new_engine_at_its_sample() {
    let (mut ctl, mut p) = Activation::new(48_000, 512)
        .profile(Profile::Strict)
        .activate_scene(SINE, "sine.json")
        .unwrap();
    let b = p.latency();
    let freq = ctl.params().index_of("tone.freq").unwrap() as u32;
    let mut out = vec![Vec::new(), Vec::new()];
    run(&mut ctl, &mut p, 2048, 512, &mut out);
    let edited = SINE.replace("\"amp\": 0.01", "\"amp\": 0.02");
    ctl.edit(&edited).unwrap();
    // The first call serves the capture, whose poll offers the new engine
    // two blocks ahead: the swap falls inside the second call, and the
    // event at its last frame comes after it.
    run(&mut ctl, &mut p, 512, 512, &mut out);
    let second = p.frames();
    let t = second + 511;
    let notices = run_with(&mut ctl, &mut p, 512, 512, &mut out, |_| {
        vec![Event::param(511, freq, 660.0)]
    });
    let Some(Notice::Swapped {
        saved_at,
        swap_at,
        fade,
        ..
    }) = notices.into_iter().next()
    else {
        panic!("no swap in the second call");
    };
    assert!((second..t).contains(&swap_at), "{second} ≤ {swap_at} < {t}");
    run(&mut ctl, &mut p, 4096, 512, &mut out);
    // Offline: the same handover, to the edited scene whose own events
    // carry the change at that sample.
    let with_event = edited.replace(
        "\"outputs\"",
        &format!(
            r#""events": [{{ "time": "{t}samples", "node": "tone", "param": "freq", "value": "660Hz" }}],
  "outputs""#
        ),
    );
    let mut scripted = Scripted::new(incoming(SINE), 2);
    scripted
        .handover_at(incoming(&with_event), saved_at, swap_at, fade)
        .unwrap();
    scripted.play_to((out[0].len() - b) as u64);
    assert_late_equal(&out, scripted.output(), b, "the event after the swap");
    assert_eq!(p.refused_events(), 0);
    // Not a coincidence: without the event the output differs.
    let mut without = Scripted::new(incoming(SINE), 2);
    without
        .handover_at(incoming(&edited), saved_at, swap_at, fade)
        .unwrap();
    without.play_to((out[0].len() - b) as u64);
    assert!(without.output() != scripted.output());
}

/// `SINE` with a control on the tone's frequency, linear from 100 Hz to
/// 1 kHz.
fn with_control() -> String {
    SINE.replace(
        "\"outputs\"",
        r#""controls": [{ "osc": "/pitch", "node": "tone", "param": "freq", "min": "100Hz", "max": "1kHz" }],
  "outputs""#,
    )
}

#[test]
fn a_control_param_applies_the_controls_scaling() {
    let text = with_control();
    let play = |event: Option<(&str, f64)>| {
        let (mut ctl, mut p) = Activation::new(48_000, 256)
            .profile(Profile::Strict)
            .activate_scene(&text, "sine.json")
            .unwrap();
        let event = event.map(|(id, v)| (ctl.params().index_of(id).unwrap() as u32, v));
        let mut out = vec![Vec::new(), Vec::new()];
        run_with(&mut ctl, &mut p, 4096, 256, &mut out, |at| match event {
            Some((i, v)) if at == 1024 => vec![Event::param(17, i, v)],
            _ => Vec::new(),
        });
        assert_eq!(p.refused_events(), 0);
        out
    };
    // Position ½ of 100 Hz … 1 kHz is 550 Hz.
    let control = play(Some(("/pitch", 0.5)));
    assert!(control == play(Some(("tone.freq", 550.0))));
    assert!(control != play(None), "the change is audible");
    assert!(control != play(Some(("tone.freq", 500.0))));
}

#[test]
fn an_event_for_a_node_an_edit_removed_is_refused_and_counted() {
    let (mut ctl, mut p) = Activation::new(48_000, 128)
        .profile(Profile::Strict)
        .activate_scene(SINE, "sine.json")
        .unwrap();
    let hiss = ctl.params().index_of("hiss.amp").unwrap() as u32;
    let tone = ctl.params().index_of("tone.amp").unwrap() as u32;
    let mut out = vec![Vec::new(), Vec::new()];
    run_with(&mut ctl, &mut p, 256, 128, &mut out, |_| {
        vec![Event::param(3, hiss, 0.02)]
    });
    assert_eq!(p.refused_events(), 0, "the node is there");
    // The noise node goes; another takes its place on the bus.
    ctl.edit(&SINE.replace("\"hiss\"", "\"fizz\"")).unwrap();
    let notices = run(&mut ctl, &mut p, 4096, 128, &mut out);
    assert!(notices.iter().any(|n| matches!(n, Notice::Swapped { .. })));
    assert_eq!(ctl.params().index_of("hiss.amp"), Some(hiss as usize));
    run_with(&mut ctl, &mut p, 128, 128, &mut out, |_| {
        vec![Event::param(3, hiss, 0.02), Event::param(5, tone, 0.25)]
    });
    assert_eq!(p.refused_events(), 1, "the removed node's param alone");
    assert_eq!(ctl.meters().refused, 1);
}

#[test]
fn a_profile_param_event_makes_poll_switch_and_report_it() {
    let (mut ctl, mut p) = Activation::new(48_000, 128)
        .profile(Profile::Strict)
        .activate_scene(SINE, "sine.json")
        .unwrap();
    let profile = morphrt::api::ParamList::PROFILE as u32;
    assert_eq!(ctl.params().get(profile as usize).unwrap().id(), "profile");
    let mut out = vec![Vec::new(), Vec::new()];
    run(&mut ctl, &mut p, 1024, 128, &mut out);
    // 7 names no profile: refused on the audio thread.
    let notices = run_with(&mut ctl, &mut p, 128, 128, &mut out, |_| {
        vec![Event::param(5, profile, 7.0), Event::param(9, profile, 1.0)]
    });
    assert_eq!(p.refused_events(), 1);
    let asked: Vec<_> = notices
        .iter()
        .filter_map(|n| match n {
            Notice::ProfileAsked {
                profile,
                at,
                started,
            } => Some((*profile, *at, started.is_ok())),
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec![(Profile::Repro, 1024 + 9, true)]);
    let notices = run(&mut ctl, &mut p, 4096, 128, &mut out);
    let swapped = notices
        .iter()
        .find_map(|n| match n {
            Notice::Swapped { swap_at, .. } => Some(*swap_at),
            _ => None,
        })
        .expect("the switch lands");
    assert!(swapped > 1024 + 9, "at the next swap, after the event");
    assert_eq!(ctl.profile(), Profile::Repro);
    assert_eq!(p.engine().profile(), Profile::Repro);
}

#[test]
fn an_input_reading_scene_edited_while_processing_catches_up_with_the_real_input() {
    let (mut ctl, mut p) = activate(SCENE);
    let b = p.latency();
    let call = 256;
    let mut out = vec![Vec::new(), Vec::new()];
    let mut l = vec![0.0f32; call];
    let mut r = vec![0.0f32; call];
    let mut swap = None;
    let mut k = 0u64;
    while out[0].len() < 12_000 {
        let at = p.frames();
        let ins: Vec<f32> = (at..at + call as u64).map(input).collect();
        p.process(&[&ins], &mut [&mut l, &mut r], &[], call)
            .unwrap();
        out[0].extend_from_slice(&l);
        out[1].extend_from_slice(&r);
        k += 1;
        if k == 12 {
            let edited = SCENE.replace("\"cutoff\": \"3kHz\"", "\"cutoff\": \"700Hz\"");
            ctl.edit(&edited).unwrap();
        }
        for n in ctl.poll() {
            if let Notice::Swapped {
                saved_at,
                swap_at,
                fade,
                ..
            } = n
            {
                swap = Some((saved_at, swap_at, fade));
            }
        }
    }
    let (n, s, fade) = swap.expect("the edit swapped");
    // Offline: the same handover, both engines reading the same input.
    let fed = |text: &str| {
        let scene = morphrt::scene::load_str(text, "host.json", None).unwrap();
        let options = CompileOptions {
            sample_rate: Some(48_000),
            ..CompileOptions::default()
        };
        let mut inc = Incoming::from_plan(compile(&scene, &options).unwrap(), None, Vec::new());
        inc.engine.set_input_feed(Box::new(Feed));
        inc
    };
    let mut scripted = Scripted::new(fed(SCENE), 2);
    scripted
        .handover_at(
            fed(&SCENE.replace("\"cutoff\": \"3kHz\"", "\"cutoff\": \"700Hz\"")),
            n,
            s,
            fade,
        )
        .unwrap();
    scripted.play_to((out[0].len() - b) as u64);
    assert_late_equal(&out, scripted.output(), b, "the caught-up engine");
}

/// A pass-through node that panics from sample `panic_at` on.
struct Probe {
    panic_at: u64,
}

impl<S: morphrt::dsp::Sample> morphrt::ops::NodeProcessor<S> for Probe {
    fn process(&mut self, io: &mut morphrt::ops::Io<'_, S>) {
        if io.start + io.frames as u64 > self.panic_at {
            panic!("probe: a bug inside a node");
        }
        let n = io.frames;
        let (i, o) = (&io.inputs[0][..n], &mut io.outputs[0][..n]);
        o.copy_from_slice(i);
    }
    fn reset(&mut self) {}
    fn snapshot(&self, _st: &mut morphrt::ops::NodeState) {}
    fn restore(&mut self, _st: &morphrt::ops::NodeState) -> Result<(), morphrt::ops::StateError> {
        Ok(())
    }
}

#[test]
fn a_panicking_node_is_silenced_and_reported() {
    morphrt::api::install_panic_hook();
    let text = r#"{ "version": "1.0", "sample_rate": 48000, "seed": 1,
      "nodes": [ { "id": "osc", "op": "sine", "params": { "freq": "220Hz", "amp": 0.5 } },
                 { "id": "probe", "op": "gain" } ],
      "edges": [ { "from": "osc", "to": "probe" } ],
      "outputs": { "main": ["probe", "osc"] } }"#;
    let scene = morphrt::scene::load_str(text, "t.json", None).unwrap();
    let options = CompileOptions {
        profile: Some(Profile::Repro),
        sample_rate: Some(48_000),
        block_size: Some(64),
        ..CompileOptions::default()
    };
    let mut plan = compile(&scene, &options).unwrap();
    let i = plan.nodes.iter().position(|n| n.id == "probe").unwrap();
    plan.nodes[i].node = Some(morphrt::ops::AnyNode::F32(Box::new(Probe {
        panic_at: 6_400,
    })));
    let (mut ctl, mut p) = Activation::new(48_000, 64).activate(plan).unwrap();
    let mut out = vec![Vec::new(), Vec::new()];
    let notices = run(&mut ctl, &mut p, 64 * 400, 64, &mut out);
    let peak = |c: usize, from: usize, to: usize| {
        out[c][from..to].iter().fold(0.0f32, |m, x| m.max(x.abs()))
    };
    assert!(
        peak(0, 3000, 6000) > 0.4,
        "the probe passed the tone through"
    );
    assert_eq!(peak(0, 6400 + 64, out[0].len()), 0.0, "then it is silent");
    assert!(peak(1, 6400 + 64, out[1].len()) > 0.4, "the rest plays on");
    let reported: u64 = notices
        .iter()
        .map(|n| match n {
            Notice::NodePanicked { count } => *count,
            _ => 0,
        })
        .sum();
    assert_eq!(reported, 1, "one node panicked, reported once");
    assert!(!notices
        .iter()
        .any(|n| matches!(n, Notice::ProcessorPanicked)));
    assert_eq!(ctl.meters().node_panics, 1);
    assert!(!p.panicked());
}

#[test]
fn process_never_allocates_across_swaps_with_control_and_node_param_events() {
    let text = with_control();
    let (mut ctl, mut p) = Activation::new(48_000, MAX)
        .profile(Profile::Strict)
        .activate_scene(&text, "sine.json")
        .unwrap();
    let pitch = ctl.params().index_of("/pitch").unwrap() as u32;
    let amp = ctl.params().index_of("tone.amp").unwrap() as u32;
    let hiss = ctl.params().index_of("hiss.amp").unwrap() as u32;
    let profile = morphrt::api::ParamList::PROFILE as u32;
    let mut l = vec![0.0f32; MAX];
    let mut r = vec![0.0f32; MAX];
    let sizes = [1usize, 37, 64, 129, MAX, 3];
    let mut swaps = 0;
    let (mut allocs, mut frees) = (0, 0);
    for k in 0..900 {
        let n = sizes[k % sizes.len()];
        let events = [
            Event::param(0, pitch, (k % 10) as f64 / 10.0),
            Event::param((n / 2) as u32, amp, 0.25 + (k % 3) as f64 / 10.0),
            Event::param((n - 1) as u32, hiss, 0.01),
            Event::param(0, profile, if k < 300 { 0.0 } else { 1.0 }),
        ];
        let (a0, f0) = counting::counts();
        counting::realtime(|| {
            p.process(&[], &mut [&mut l[..n], &mut r[..n]], &events, n)
                .unwrap()
        });
        let (a1, f1) = counting::counts();
        allocs += a1 - a0;
        frees += f1 - f0;
        // The controller's side, off the audio thread: edits and the
        // switch the profile param asks for.
        if k == 100 {
            ctl.edit(&text.replace("\"amp\": 0.01", "\"amp\": 0.02"))
                .unwrap();
        }
        swaps += ctl
            .poll()
            .iter()
            .filter(|n| matches!(n, Notice::Swapped { .. }))
            .count();
    }
    assert_eq!((allocs, frees), (0, 0), "process allocated or freed");
    assert_eq!(swaps, 2, "an edit and a profile switch");
    assert_eq!(ctl.profile(), Profile::Repro);
    assert_eq!(p.refused_events(), 0);
}

#[test]
fn the_controller_reads_the_peak_of_each_channel_and_the_load() {
    let (mut ctl, mut p) = Activation::new(48_000, 256)
        .profile(Profile::Strict)
        .activate_scene(SINE, "sine.json")
        .unwrap();
    let mut out = vec![Vec::new(), Vec::new()];
    run(&mut ctl, &mut p, 48_000, 256, &mut out);
    let m = ctl.meters();
    let peak = |c: usize| out[c].iter().fold(0.0f32, |m, x| m.max(x.abs()));
    assert_eq!(m.peaks, vec![peak(0), peak(1)]);
    assert!((peak(0) - 0.5).abs() < 1e-3 && peak(1) < 0.011);
    assert!(m.load > 0.0);
    assert_eq!(m.refused, 0);
    // Taken: the next read covers only what played since.
    assert_eq!(ctl.meters().peaks, vec![0.0, 0.0]);
}

/// Input sample `n` at full f64 precision (not exact in f32).
fn input_f64(n: u64) -> f64 {
    let t = n as f64 / 48_000.0;
    0.4 * libm::sin(2.0 * std::f64::consts::PI * 510.0 * t) + (n % 97) as f64 / 970.1
}

struct FeedF64;
impl InputFeed for FeedF64 {
    fn read(&mut self, start: u64, block: &mut InputBlock<'_>) {
        for (i, d) in block.channel_mut(0).iter_mut().enumerate() {
            *d = input_f64(start + i as u64);
        }
    }
}

#[test]
fn process_f64_takes_and_gives_the_engines_samples_as_the_offline_render_does() {
    let (_, mut p) = activate(SCENE);
    let b = p.latency();
    let ins: Vec<f64> = (0..FRAMES as u64).map(input_f64).collect();
    assert!(
        ins.iter().any(|x| *x as f32 as f64 != *x),
        "not exact in f32"
    );
    let mut out = vec![vec![0.0f64; FRAMES]; p.output_channels()];
    let sizes = [1usize, 37, 64, 129, MAX, 3];
    let (mut at, mut k) = (0, 0);
    let (a0, f0) = counting::counts();
    counting::realtime(|| {
        while at < FRAMES {
            let n = sizes[k % sizes.len()].min(FRAMES - at);
            k += 1;
            let (l, r) = out.split_at_mut(1);
            let outs = &mut [&mut l[0][at..at + n], &mut r[0][at..at + n]];
            p.process_f64(&[&ins[at..at + n]], outs, &[], n)
                .expect("a valid call");
            at += n;
        }
    });
    let (a1, f1) = counting::counts();
    assert_eq!((a1 - a0, f1 - f0), (0, 0), "process_f64 allocated or freed");
    let scene = morphrt::scene::load_str(SCENE, "host.json", None).unwrap();
    let mut engine =
        morphrt::engine::Engine::new(compile(&scene, &CompileOptions::default()).unwrap());
    engine.set_input_feed(Box::new(FeedF64));
    let mut offline = vec![Vec::new(); engine.channels()];
    offline_player(engine)
        .play_frames::<()>(
            (FRAMES - b) as u64,
            &[],
            None,
            |_| Ok(()),
            |bus| {
                for (c, o) in offline.iter_mut().enumerate() {
                    o.extend((0..bus.frames()).map(|i| bus.get(c, i).to_bits()));
                }
                Ok(())
            },
            |_| {},
        )
        .unwrap();
    for (c, (host, off)) in out.iter().zip(&offline).enumerate() {
        assert!(
            host[..b].iter().all(|x| *x == 0.0),
            "the latency is silence"
        );
        let host: Vec<u64> = host[b..].iter().map(|x| x.to_bits()).collect();
        assert!(
            host == *off,
            "channel {c}: one block late, the offline render's f64 bits"
        );
    }
    assert!(out[0].iter().any(|x| x.abs() > 0.01));
}

/// `n` dc nodes (`d0` … at 0) summed into `out`, strict, with a control
/// `/level` on `d0`'s value from 0 to 1.
fn dcs(n: usize) -> String {
    let nodes: Vec<String> = (0..n)
        .map(|k| format!(r#"{{ "id": "d{k}", "op": "dc", "params": {{ "value": 0 }} }}"#))
        .collect();
    let edges: Vec<String> = (0..n)
        .map(|k| format!(r#"{{ "from": "d{k}", "to": "out" }}"#))
        .collect();
    format!(
        r#"{{ "version": "1.0", "profile": "strict", "sample_rate": 48000,
  "nodes": [{}, {{ "id": "out", "op": "gain", "params": {{ "gain": 1 }} }}],
  "edges": [{}],
  "controls": [{{ "osc": "/level", "node": "d0", "param": "value", "min": 0, "max": 1 }}],
  "outputs": {{ "main": ["out"] }} }}"#,
        nodes.join(", "),
        edges.join(", ")
    )
}

/// Plays `text` for 256 frames in calls of 64 with `events` (by param
/// name) at the first frame; the last output sample and the events
/// refused. The calls allocate and free nothing (replaced changes
/// squeezed out included).
fn after_one_sample(text: &str, events: &[(String, f64)]) -> (f32, u64) {
    let at_first: Vec<_> = events.iter().map(|(n, v)| (0, n.clone(), *v)).collect();
    after_one_call(text, &at_first)
}

/// [`after_one_sample`] with each event's offset in the first call given.
fn after_one_call(text: &str, events: &[(u32, String, f64)]) -> (f32, u64) {
    let (ctl, mut p) = Activation::new(48_000, 64)
        .activate_scene(text, "dcs.json")
        .expect("the scene activates");
    let events: Vec<Event> = events
        .iter()
        .map(|(at, name, v)| Event::param(*at, ctl.params().index_of(name).unwrap() as u32, *v))
        .collect();
    let mut out = vec![0.0f32; 64];
    let (a0, f0) = counting::counts();
    counting::realtime(|| {
        for call in 0..4 {
            let given = if call == 0 { &events[..] } else { &[] };
            p.process(&[], &mut [&mut out[..]], given, 64)
                .expect("a valid call");
        }
    });
    let (a1, f1) = counting::counts();
    assert_eq!((a1 - a0, f1 - f0), (0, 0), "process allocated or freed");
    (out[63], p.refused_events())
}

#[test]
fn changes_at_one_sample_take_one_place_a_param_and_the_last_of_a_param_lands_last() {
    let small = dcs(3);
    let ev = |name: &str, v: f64| (name.to_string(), v);
    // A change of a param that one at its sample already holds takes its
    // place at the end, after the control's change of the same value.
    assert_eq!(
        after_one_sample(
            &small,
            &[
                ev("d0.value", 0.25),
                ev("/level", 0.5),
                ev("d0.value", 0.125)
            ]
        ),
        (0.125, 0)
    );
    assert_eq!(
        after_one_sample(
            &small,
            &[ev("/level", 0.5), ev("d0.value", 0.25), ev("/level", 0.75)]
        ),
        (0.75, 0)
    );
    // 1024 params at one sample all land; a 1025th is refused.
    let big = dcs(1100);
    let each = |n: usize| -> Vec<(String, f64)> {
        (0..n)
            .map(|k| ev(&format!("d{k}.value"), (k + 1) as f64 / 1024.0))
            .collect()
    };
    assert_eq!(after_one_sample(&big, &each(1024)), (512.5, 0));
    let (_, refused) = after_one_sample(&big, &each(1025));
    assert_eq!(refused, 1);
    // A param beyond the list is refused at once and takes no place: a
    // full block still holds the 1024 others.
    let (ctl, mut p) = Activation::new(48_000, 64)
        .activate_scene(&big, "dcs.json")
        .expect("the scene activates");
    let beyond = ctl.params().len() as u32;
    let mut events = vec![Event::param(0, beyond, 1.0); 5];
    events.extend((0..1024).map(|k| {
        let i = ctl.params().index_of(&format!("d{k}.value")).unwrap() as u32;
        Event::param(0, i, 1.0 / 1024.0)
    }));
    let mut out = vec![0.0f32; 64];
    for call in 0..4 {
        let given = if call == 0 { &events[..] } else { &[] };
        p.process(&[], &mut [&mut out[..]], given, 64)
            .expect("a valid call");
    }
    assert_eq!((out[63], p.refused_events()), (1.0, 5));
    // A full block takes as many changes replacing its own, and squeezes
    // out the places they leave (its room is twice what it holds).
    let mut twice = each(1024);
    twice.extend(each(1024).into_iter().map(|(n, v)| (n, v / 2.0)));
    twice.extend(each(1024).into_iter().map(|(n, v)| (n, v / 4.0)));
    assert_eq!(after_one_sample(&big, &twice), (512.5 / 4.0, 0));
    // A full block still takes a change replacing one, after a change
    // for a later frame was refused (a host's events need not come in
    // the order of their frames).
    let mut back: Vec<(u32, String, f64)> =
        each(1024).into_iter().map(|(n, v)| (0, n, v)).collect();
    back.push((1, "d1.value".into(), 0.0));
    back.push((0, "d0.value".into(), 0.5));
    assert_eq!(after_one_call(&big, &back), (512.5 - 1.0 / 1024.0 + 0.5, 1));
    // Any number of changes of three params at one sample take three places.
    let value = |round: usize| (round % 7) as f64 / 8.0;
    let mut many = Vec::new();
    for round in 0..3000 {
        for k in 0..3 {
            many.push(ev(&format!("d{k}.value"), value(round)));
        }
    }
    assert_eq!(after_one_sample(&big, &many), (3.0 * value(2999) as f32, 0));
}
