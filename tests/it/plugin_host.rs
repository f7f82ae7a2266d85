//! The CLAP plugin under a host's harder habits, loaded from disk by the
//! clack-host test host of `plugin.rs` (and linked in where the counting
//! allocator must see `process`): thousands of events at one frame, note
//! ends reported back, latency and tail, deactivation and reactivation,
//! 0-frame calls. Each compares with `morphrt render` of the same scene
//! with the same changes written as scene events, bit for bit under
//! strict.

use super::plugin::{instance, load, render_bits, write_plugin, Sizes, TestHost, SCENE};
use crate::support::{counting, temp_dir};
use clack_extensions::latency::PluginLatency;
use clack_extensions::params::{ParamInfoBuffer, PluginParams};
use clack_extensions::tail::{PluginTail, TailLength};
use clack_host::events::event_types::{NoteEndEvent, NoteOffEvent, NoteOnEvent, ParamValueEvent};
use clack_host::prelude::*;
use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;

/// What a host does at one frame.
#[derive(Clone, Copy, Debug)]
pub(super) enum Act {
    /// A param (by name) to a value.
    Param(&'static str, f64),
    /// Note `key` on (velocity, note id, channel).
    On(u8, f64, i32, u16),
    /// Note `key` off (note id, channel).
    Off(u8, i32, u16),
}

/// One activation: its rate, its maximum frames, the frames played, the
/// host's changes by frame (counted from the activation), and whether
/// every n-th call has 0 frames.
pub(super) struct Activation<'a> {
    pub rate: u32,
    pub max: usize,
    pub frames: usize,
    pub acts: &'a [(u64, Act)],
    pub zero_every: usize,
    pub seed: u64,
}

/// What the host saw of one activation.
#[derive(Debug, Default)]
pub(super) struct Heard {
    /// The output, channel-interleaved f32 bits.
    pub out: Vec<u32>,
    /// The latency the plugin reported.
    pub latency: usize,
    /// The tail the plugin reported.
    pub tail: Option<TailLength>,
    /// Note ends: (frame, key, channel, note id).
    pub ends: Vec<(u64, i16, i16, i32)>,
    /// Allocations and frees inside `process` (linked in only).
    pub allocs: (usize, usize),
}

/// The plugin file at `path`, loaded from disk, or linked into this
/// binary (its allocations counted), through the activations in turn of
/// one instance.
pub(super) fn host(path: &Path, linked: bool, runs: &[Activation]) -> Vec<Heard> {
    let (entry, id) = if linked {
        let c = CString::new(path.to_str().unwrap()).unwrap();
        let entry =
            PluginEntry::load_from_clack::<morphrt_clap::Entry>(&c).expect("the entry loads");
        let id = {
            let factory = entry.get_plugin_factory().unwrap();
            let d = factory.plugin_descriptors().next().unwrap();
            CString::from(d.id().unwrap())
        };
        (entry, id)
    } else {
        load(path)
    };
    let mut plugin = instance(&entry, &id);
    let handle = plugin.plugin_handle();
    let params = handle.get_extension::<PluginParams>().unwrap();
    let mut ids = HashMap::new();
    for i in 0..params.count(&handle) {
        let mut b = ParamInfoBuffer::new();
        let info = params.get_info(&handle, i, &mut b).unwrap();
        ids.insert(String::from_utf8(info.name.to_vec()).unwrap(), info.id);
    }
    runs.iter()
        .map(|run| activation(&mut plugin, &ids, linked, run))
        .collect()
}

fn activation(
    plugin: &mut PluginInstance<TestHost>,
    ids: &HashMap<String, ClapId>,
    linked: bool,
    run: &Activation,
) -> Heard {
    let config = PluginAudioConfiguration {
        sample_rate: run.rate as f64,
        min_frames_count: 1,
        max_frames_count: run.max as u32,
    };
    let processor = plugin.activate(|_, _| (), config).unwrap();
    let mut heard = Heard::default();
    {
        let handle = plugin.plugin_handle();
        let ext = handle.get_extension::<PluginLatency>().unwrap();
        heard.latency = ext.get(&handle) as usize;
    }
    let mut processor = processor.start_processing().unwrap();
    {
        let handle = processor.plugin_handle();
        heard.tail = handle.get_extension::<PluginTail>().map(|t| t.get(&handle));
    }
    let mut sizes = Sizes(run.seed);
    let (mut left, mut right) = (vec![0f32; run.max], vec![0f32; run.max]);
    heard.out.reserve(run.frames * 2);
    let mut outs = AudioPorts::with_capacity(2, 1);
    let mut events = EventBuffer::with_capacity(run.acts.len());
    let mut out_events = EventBuffer::with_capacity(1024);
    let mut done = 0usize;
    let mut next_act = 0;
    let mut k = 0;
    while done < run.frames {
        k += 1;
        let n = if run.zero_every > 0 && k % run.zero_every == 0 {
            0
        } else {
            sizes.next(run.max).min(run.frames - done)
        };
        events.clear();
        // A 0-frame call takes the changes of the frame the next starts at.
        let end = if n == 0 { done + 1 } else { done + n };
        while let Some((at, act)) = run.acts.get(next_act) {
            let at = *at as usize;
            if at >= end {
                break;
            }
            next_act += 1;
            let t = (at - done) as u32;
            let t = if n == 0 { 0 } else { t };
            match *act {
                Act::Param(p, v) => {
                    events.push(&ParamValueEvent::new(t, ids[p], Pckn::match_all(), v))
                }
                Act::On(key, vel, note, chan) => events.push(&NoteOnEvent::new(
                    t,
                    Pckn::new(0u16, chan, key as u16, note as u32),
                    vel,
                )),
                Act::Off(key, note, chan) => events.push(&NoteOffEvent::new(
                    t,
                    Pckn::new(0u16, chan, key as u16, note as u32),
                    0.0,
                )),
            }
        }
        let input_audio = InputAudioBuffers::empty();
        let mut output_audio = outs.with_output_buffers([AudioPortBuffer {
            latency: 0,
            channels: AudioPortBufferType::f32_output_only(
                [&mut left[..n], &mut right[..n]].into_iter(),
            ),
        }]);
        let input_events = InputEvents::from_buffer(&events);
        out_events.clear();
        let mut output_events = OutputEvents::from_buffer(&mut out_events);
        let before = counting::counts();
        let mut call = || {
            processor
                .process(
                    &input_audio,
                    &mut output_audio,
                    &input_events,
                    &mut output_events,
                    None,
                    None,
                )
                .unwrap()
        };
        if linked {
            counting::realtime(call);
        } else {
            call();
        }
        let after = counting::counts();
        heard.allocs.0 += after.0 - before.0;
        heard.allocs.1 += after.1 - before.1;
        for e in out_events.iter() {
            if let Some(end) = e.as_event::<NoteEndEvent>() {
                let p = end.pckn();
                assert!(
                    (end.time() as usize) < n.max(1),
                    "a note end inside the call"
                );
                heard.ends.push((
                    (done + end.time() as usize) as u64,
                    p.raw_key(),
                    p.raw_channel(),
                    p.raw_note_id(),
                ));
            }
        }
        for i in 0..n {
            heard.out.push(left[i].to_bits());
            heard.out.push(right[i].to_bits());
        }
        done += n;
        plugin.call_on_main_thread_callback();
    }
    plugin.deactivate(processor.stop_processing());
    heard
}

/// SCENE at `rate` with `acts` as scene events (note ids and channels
/// have no scene form: the key is the note).
pub(super) fn scene_with(rate: u32, acts: &[(u64, Act)]) -> String {
    scene_from(SCENE, rate, acts)
}

/// Scene `base` (SCENE or a variant) at `rate` with `acts` as scene
/// events.
fn scene_from(base: &str, rate: u32, acts: &[(u64, Act)]) -> String {
    let events: Vec<String> = acts
        .iter()
        .map(|(at, a)| match *a {
            Act::Param(id, v) => {
                let (node, param) = id.split_once('.').unwrap();
                format!(r#"{{ "time": "{at}samples", "node": "{node}", "param": "{param}", "value": {v} }}"#)
            }
            Act::On(key, vel, _, _) => format!(
                r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "velocity": {vel} }}"#
            ),
            Act::Off(key, _, _) => {
                format!(r#"{{ "time": "{at}samples", "module": "pad", "note": {key}, "off": true }}"#)
            }
        })
        .collect();
    base.replace(
        "\"sample_rate\": 48000",
        &format!("\"sample_rate\": {rate}"),
    )
    .replace(
        "\"controls\"",
        &format!("\"events\": [{}],\n  \"controls\"", events.join(",\n")),
    )
}

/// The first frame where `got` (after the latency) and `want` differ.
fn first_difference(got: &Heard, want: &[u32], frames: usize) -> Option<usize> {
    let l = got.latency * 2;
    let got = &got.out[l..l + frames * 2];
    got.iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .map(|i| i / 2)
}

/// 4096 changes at frame 1000, of which only the last of each param
/// counts and the first moves a param no later one does; then two
/// changes of each of six params at every frame for 2048 frames (three
/// of them on the voices' template nodes: a change moves every voice's
/// copy), more than the engine's change queue holds for one block.
fn flood() -> Vec<(u64, Act)> {
    let mut acts = vec![
        (100, Act::On(60, 0.75, 1, 0)),
        (100, Act::On(64, 0.5, 2, 0)),
        (1000, Act::Param("tone.amp", 0.125)),
    ];
    for i in 1..4096u64 {
        acts.push((1000, Act::Param("tone.freq", 300.0 + (i % 97) as f64)));
    }
    for f in 1001..3049u64 {
        for j in 0..2u64 {
            let x = ((f * 7 + j * 13) % 101) as f64 / 100.0;
            acts.push((f, Act::Param("tone.freq", 200.0 + 400.0 * x)));
            acts.push((f, Act::Param("tone.amp", 0.05 + 0.2 * x)));
            acts.push((f, Act::Param("lp.cutoff", 500.0 + 5000.0 * x)));
            acts.push((f, Act::Param("osc.amp", 0.1 + 0.2 * x)));
            acts.push((f, Act::Param("vel.gain", 0.5 + 0.5 * x)));
            acts.push((f, Act::Param("env.sustain", 0.2 + 0.6 * x)));
        }
    }
    acts.push((4000, Act::Off(60, 1, 0)));
    acts.push((4000, Act::Off(64, 2, 0)));
    acts
}

#[test]
fn an_automation_flood_lands_every_change_at_its_sample_without_allocating() {
    let dir = temp_dir("plugin-flood");
    let path = write_plugin(&dir, SCENE, "pad");
    let acts = flood();
    let frames = 6000;
    let want = render_bits(&dir, &scene_with(48_000, &acts), frames);
    for (linked, max, seed) in [(false, 2048, 11), (true, 4096, 12)] {
        let run = Activation {
            rate: 48_000,
            max,
            frames: frames + 1024,
            acts: &acts,
            zero_every: 5,
            seed,
        };
        let heard = host(&path, linked, &[run]).remove(0);
        if let Some(f) = first_difference(&heard, &want, frames) {
            panic!("buffers up to {max}: frame {f} differs from render's");
        }
        assert_eq!(heard.allocs, (0, 0), "allocations and frees in process");
    }
    // The flood is heard: without the changes after the 4096th at frame
    // 1000, the output differs.
    let fewer: Vec<_> = acts.iter().filter(|(at, _)| *at != 1000).copied().collect();
    assert!(render_bits(&dir, &scene_with(48_000, &fewer), frames) != want);
}

/// SCENE with the voices alone on both channels.
fn voices_alone() -> String {
    let text = SCENE.replace(
        r#""outputs": { "main": ["sum", "tone"] }"#,
        r#""outputs": { "main": ["pad", "pad"] }"#,
    );
    assert!(text != SCENE);
    text
}

#[test]
fn a_note_end_is_reported_when_the_voice_goes_free() {
    let dir = temp_dir("plugin-note-end");
    let text = voices_alone();
    let path = write_plugin(&dir, &text, "pad");
    let acts = [
        (100, Act::On(60, 0.75, 7, 3)),
        (2000, Act::Off(60, 7, 3)),
        (8000, Act::On(67, 1.0, 9, 1)),
        (9000, Act::Off(67, 9, 1)),
    ];
    let frames = 16_000;
    let want = render_bits(&dir, &scene_from(&text, 48_000, &acts), frames);
    // The oracle: a released voice is free once its sound has stayed
    // below −100 dBFS for 50 ms (2400 samples at 48 kHz); its sound is
    // silence from there on.
    let left: Vec<f32> = want.iter().step_by(2).map(|b| f32::from_bits(*b)).collect();
    let free_at = |from: usize, to: usize| {
        let last_loud = (from..to).rev().find(|&i| left[i].abs() >= 1e-5).unwrap();
        assert!(left[last_loud + 2400..to].iter().all(|x| *x == 0.0));
        (last_loud + 1 + 2400) as u64
    };
    let (a, b) = (free_at(2000, 8000), free_at(9000, frames));
    let run = Activation {
        rate: 48_000,
        max: 700,
        frames: frames + 1024,
        acts: &acts,
        zero_every: 4,
        seed: 21,
    };
    let heard = host(&path, false, &[run]).remove(0);
    assert!(first_difference(&heard, &want, frames).is_none());
    let l = heard.latency as u64;
    assert_eq!(heard.ends, [(a + l, 60, 3, 7), (b + l, 67, 1, 9)]);
}

#[test]
fn latency_and_tail_come_from_the_scene_at_the_host_s_rate() {
    let dir = temp_dir("plugin-tail");
    let scene = r#"{ "version": "1.0", "profile": "strict",
      "nodes": [
        { "id": "in", "op": "input", "params": { "channel": 0 } },
        { "id": "echo", "op": "delay", "params": { "time": "100ms", "feedback": 0.5, "mix": 0.5 } },
        { "id": "room", "op": "reverb", "params": { "rt60_low": "2s", "rt60_high": "1s", "predelay": "20ms" } },
        { "id": "duck", "op": "compressor", "params": { "lookahead": "4ms" } } ],
      "edges": [{ "from": "in", "to": "echo" }, { "from": "echo", "to": "room" }, { "from": "room", "to": "duck" }],
      "outputs": { "main": ["duck", "duck"] } }"#;
    let path = write_plugin(&dir, scene, "room");
    for rate in [48_000u32, 44_100] {
        let runs = [Activation {
            rate,
            max: 256,
            frames: 0,
            acts: &[],
            zero_every: 0,
            seed: 1,
        }];
        let heard = host(&path, false, &runs).remove(0);
        // Strict's 64-frame block, then the compressor's lookahead.
        let lookahead = (0.004 * rate as f64).round() as usize;
        assert_eq!(heard.latency, 64 + lookahead, "at {rate} Hz");
        // The echoes fall 100 dB in ⌈ln 1e-5 / ln 0.5⌉ = 17 repeats;
        // the reverb in 100/60 of its longer rt60, after its predelay.
        // Counted: halve until below 1e-5.
        let (mut level, mut echoes) = (1.0f64, 0.0);
        while level >= 1e-5 {
            level *= 0.5;
            echoes += 1.0;
        }
        assert_eq!(echoes, 17.0);
        let secs = 0.1 * echoes + 0.02 + 2.0 * 100.0 / 60.0;
        let want = heard.latency as u64 + (secs * rate as f64).ceil() as u64;
        assert_eq!(
            heard.tail,
            Some(TailLength::Finite(want as u32)),
            "at {rate} Hz"
        );
    }
    // A scene with a tone of its own sounds on forever.
    let path = write_plugin(&dir, SCENE, "pad");
    let runs = [Activation {
        rate: 48_000,
        max: 256,
        frames: 0,
        acts: &[],
        zero_every: 0,
        seed: 1,
    }];
    assert_eq!(
        host(&path, false, &runs)[0].tail,
        Some(TailLength::Infinite)
    );
}

#[test]
fn reactivated_at_another_rate_the_plugin_starts_the_scene_again_with_the_host_s_values() {
    let dir = temp_dir("plugin-reactivate");
    let path = write_plugin(&dir, SCENE, "pad");
    let first = [
        (5, Act::Param("tone.freq", 440.0)),
        (300, Act::On(60, 0.75, 1, 0)),
        (2000, Act::Param("tone.amp", 0.125)),
    ];
    let second = [(700, Act::On(64, 0.5, 2, 0)), (3000, Act::Off(64, 2, 0))];
    let frames = 6000;
    let runs = [
        Activation {
            rate: 48_000,
            max: 512,
            frames: 4000,
            acts: &first,
            zero_every: 3,
            seed: 31,
        },
        Activation {
            rate: 44_100,
            max: 300,
            frames: frames + 1024,
            acts: &second,
            zero_every: 3,
            seed: 32,
        },
    ];
    for linked in [false, true] {
        let heard = host(&path, linked, &runs);
        // The first as render plays it.
        let want = render_bits(&dir, &scene_with(48_000, &first), 3000);
        assert!(first_difference(&heard[0], &want, 3000).is_none());
        // The second from the scene's start at 44.1 kHz, with the values
        // the host gave the params (its note still sounding is gone).
        let mut acts = vec![
            (0, Act::Param("tone.freq", 440.0)),
            (0, Act::Param("tone.amp", 0.125)),
        ];
        acts.extend(second);
        let want = render_bits(&dir, &scene_with(44_100, &acts), frames);
        if let Some(f) = first_difference(&heard[1], &want, frames) {
            panic!("after reactivation, frame {f} differs from render's");
        }
        assert!(heard.iter().all(|h| h.allocs == (0, 0)));
    }
}

#[test]
fn a_profile_switch_while_notes_sound_does_not_allocate_in_process() {
    let dir = temp_dir("plugin-switch-alloc");
    let path = write_plugin(&dir, SCENE, "pad");
    let acts = [
        (100, Act::On(60, 0.75, 1, 0)),
        (400, Act::Param("profile", 1.0)),
        (2500, Act::Param("profile", 2.0)),
        (4000, Act::Off(60, 1, 0)),
        (5000, Act::Param("profile", 0.0)),
    ];
    let runs = [Activation {
        rate: 48_000,
        max: 128,
        frames: 8000,
        acts: &acts,
        zero_every: 6,
        seed: 41,
    }];
    let heard = host(&path, true, &runs).remove(0);
    assert_eq!(heard.allocs, (0, 0));
    assert!(heard.out.iter().any(|b| f32::from_bits(*b).abs() > 0.01));
}
