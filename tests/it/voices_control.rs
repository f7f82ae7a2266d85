//! Notes from outside play voice modules: a MIDI file's chord plays three
//! pitches on a voice module (read back by DFT) and the sustain pedal
//! (CC 64) holds them past their note-offs, the same bits at every block
//! size under strict; a CC mapped onto a template node's param reaches
//! every voice; OSC notes on `--device clock` are journaled as `note`
//! records and replay bit for bit; a `module` the scene cannot play is a
//! located compile error. The MIDI files are built here byte by byte.

use crate::support as common;

use common::{
    assert_replays, midi_vlq as vlq, morphrt, read_f32, run_clock, stderr, stdout, temp_dir,
    wait_line,
};
use rosc::{OscMessage, OscPacket, OscType};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SR: f64 = 48000.0;

/// A voice module of 4 sine voices with an envelope and a level (`lvl`)
/// a CC moves; MIDI notes on channel 1 play it, CC 7 moves every voice's
/// level, `/pad/note` plays it over OSC.
const SCENE: &str = r#"{"version": "1.0", "sample_rate": 48000, "seed": 1,
  "modules": [{"id": "pad", "voices": 4,
    "note": {"pitch": "osc.freq", "gate": "env.gate", "velocity": "vel.gain"},
    "nodes": [
      {"id": "osc", "op": "sine", "params": {"freq": "220Hz", "amp": 0.25}},
      {"id": "env", "op": "adsr", "params": {"attack": "2ms", "decay": "10ms", "sustain": 1, "release": "20ms"}},
      {"id": "vca", "op": "multiply"},
      {"id": "vel", "op": "gain", "params": {"gain": 1}},
      {"id": "lvl", "op": "gain", "params": {"gain": 1}}]}],
  "edges": [{"from": "osc", "to": "vca:a"}, {"from": "env", "to": "vca:b"},
            {"from": "vca", "to": "vel"}, {"from": "vel", "to": "lvl"}],
  "outputs": {"main": ["pad"]},
  "controls": [
    {"midi": {"note": "any", "channel": 1}, "module": "pad"},
    {"midi": {"cc": 7, "channel": 1}, "node": "lvl", "param": "gain", "min": 0, "max": 1},
    {"osc": "/pad/note", "module": "pad"}]}"#;

/// A format 0 file at 96 ticks a quarter and the default 120 bpm (one
/// tick: 250 samples at 48 kHz) of (tick, message) in time order.
fn smf(events: &[(u32, [u8; 3])]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut last = 0;
    for (tick, e) in events {
        data.extend(vlq(tick - last));
        data.extend(e);
        last = *tick;
    }
    data.extend([0, 0xff, 0x2f, 0]);
    let mut f = b"MThd\0\0\0\x06\0\0\0\x01\0\x60MTrk".to_vec();
    f.extend((data.len() as u32).to_be_bytes());
    f.extend(data);
    f
}

/// Ticks of `s` seconds (192 a second).
fn tick(s: f64) -> u32 {
    (s * 192.0) as u32
}

/// C major (60, 64, 67) struck at 0 with the pedal down, released at
/// 0.5 s, the pedal up at 1.5 s; `cc7`: the level set to 0 at 1.0 s.
fn chord(cc7: bool) -> Vec<u8> {
    let mut e = vec![(0, [0xb0, 64, 127])];
    for n in [60, 64, 67] {
        e.push((0, [0x90, n, 100]));
    }
    for n in [60, 64, 67] {
        e.push((tick(0.5), [0x80, n, 0]));
    }
    if cc7 {
        e.push((tick(1.0), [0xb0, 7, 0]));
    }
    e.push((tick(1.5), [0xb0, 64, 0]));
    smf(&e)
}

fn setup(name: &str, mid: &[u8]) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let scene = dir.join("pad.json");
    std::fs::write(&scene, SCENE).unwrap();
    let midi = dir.join("chord.mid");
    std::fs::write(&midi, mid).unwrap();
    (dir, scene, midi)
}

/// `render SCENE --midi MIDI -o OUT` under strict for 2 s, which must
/// succeed.
fn render_strict(scene: &Path, midi: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let args = [&["--profile", "strict", "-d", "2s"][..], extra].concat();
    let o = common::render_midi(scene, midi, out, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    o
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

fn rms(x: &[f32], (from, to): (f64, f64)) -> f64 {
    let s = &x[(from * SR) as usize..(to * SR) as usize];
    (s.iter().map(|v| (*v as f64) * (*v as f64)).sum::<f64>() / s.len() as f64).sqrt()
}

fn hz(note: f64) -> f64 {
    440.0 * libm::pow(2.0, (note - 69.0) / 12.0)
}

#[test]
fn a_midi_chord_plays_three_voices_held_by_the_pedal_past_its_note_offs() {
    let (dir, scene, midi) = setup("vc-chord", &chord(false));
    let out = dir.join("chord.wav");
    let o = render_strict(&scene, &midi, &out, &["--hash"]);
    assert!(stderr(&o).contains("8 notes"), "{}", stderr(&o));
    let x = read_f32(&out);
    // After the note-offs (0.5 s), with the pedal down: all three sound.
    let held = (0.7, 1.4);
    let pitches: Vec<f64> = [60.0, 64.0, 67.0]
        .iter()
        .map(|n| dft(&x, held, hz(*n)))
        .collect();
    for (n, m) in [60, 64, 67].iter().zip(&pitches) {
        // A sine of amplitude 0.25·100/127 under a Hann window: ≈ 0.049.
        assert!(*m > 0.03, "note {n} is not sounding at 0.7…1.4 s: {m}");
    }
    for off in [hz(62.0), hz(65.0), hz(69.0), 500.0] {
        let m = dft(&x, held, off);
        assert!(m < 0.003, "{off} Hz sounds ({m}): {pitches:?}");
    }
    // The pedal comes up at 1.5 s; the release is 20 ms.
    assert!(rms(&x, (1.6, 2.0)) < 1e-6, "still sounding after the pedal");
    // The same bits at every block size.
    let hash = stdout(&o);
    for b in ["1", "7", "4096"] {
        let again = render_strict(
            &scene,
            &midi,
            &dir.join(format!("b{b}.wav")),
            &["--hash", "--block-size", b],
        );
        assert_eq!(stdout(&again), hash, "block size {b}");
    }
}

#[test]
fn a_cc_on_a_template_node_moves_every_voice() {
    let (dir, scene, midi) = setup("vc-cc", &chord(true));
    let out = dir.join("cc.wav");
    render_strict(&scene, &midi, &out, &[]);
    let x = read_f32(&out);
    assert!(rms(&x, (0.7, 0.95)) > 0.05, "the chord does not sound");
    // CC 7 = 0 at 1.0 s: every voice's `lvl` goes to 0, held notes too.
    let after = rms(&x, (1.01, 1.4));
    assert!(after < 1e-9, "a voice still sounds after CC 7 = 0: {after}");
    let check = morphrt(&["check", scene.to_str().unwrap()]);
    assert!(check.status.success(), "{}", stderr(&check));
}

fn check_fails(dir: &Path, control: &str, message: &str) {
    let text = SCENE.replace(r#"{"osc": "/pad/note", "module": "pad"}"#, control);
    let path = dir.join("bad.json");
    std::fs::write(&path, text).unwrap();
    let o = morphrt(&["check", path.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(message), "expected `{message}` in:\n{err}");
    assert!(
        err.contains("bad.json:"),
        "the error names no place:\n{err}"
    );
}

#[test]
fn a_module_the_scene_cannot_play_is_a_located_error() {
    let dir = temp_dir("vc-bad");
    check_fails(
        &dir,
        r#"{"osc": "/n", "module": "pda"}"#,
        "control plays unknown module `pda`",
    );
    check_fails(
        &dir,
        r#"{"osc": "/n", "module": "pda"}"#,
        "did you mean `pad`?",
    );
    check_fails(
        &dir,
        r#"{"midi": {"note": "any"}, "module": "pad", "node": "lvl", "param": "gain"}"#,
        "a control that plays voice module `pad` takes no `node` and `param`",
    );
    check_fails(
        &dir,
        r#"{"midi": {"note": "any"}, "module": "pad", "velocity": {"node": "vel", "param": "gain"}}"#,
        "takes no `velocity`",
    );
    check_fails(
        &dir,
        r#"{"midi": {"cc": 1}, "module": "pad"}"#,
        "only notes play a voice module",
    );
    let other = SCENE.replace(
        r#""modules": ["#,
        r#""modules": [{"id": "fx", "nodes": [{"id": "g", "op": "gain"}]}, "#,
    );
    let path = dir.join("bad.json");
    std::fs::write(
        &path,
        other.replace(r#""/pad/note", "module": "pad""#, r#""/n", "module": "fx""#),
    )
    .unwrap();
    let o = morphrt(&["check", path.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("control plays module `fx`, which has no voices"),
        "{err}"
    );
}

fn reply(socket: &UdpSocket, port: u16, addr: &str, args: Vec<OscType>) -> (String, String) {
    let p = OscPacket::Message(OscMessage {
        addr: addr.to_string(),
        args,
    });
    socket
        .send_to(&rosc::encoder::encode(&p).unwrap(), ("127.0.0.1", port))
        .unwrap();
    let mut buf = [0u8; 65536];
    let n =
        common::recv_within(socket, &mut buf, Duration::from_secs(20)).expect("a reply in time");
    let (_, p) = rosc::decoder::decode_udp(&buf[..n]).unwrap();
    let OscPacket::Message(m) = p else {
        panic!("{p:?}")
    };
    match &m.args[..] {
        [OscType::String(s), OscType::String(t)] => (s.clone(), t.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn osc_notes_are_journaled_and_replay_bit_for_bit() {
    let dir = temp_dir("vc-osc");
    let scene = dir.join("pad.json");
    std::fs::write(&scene, SCENE).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("j.jsonl"));
    let (mut child, lines) = run_clock(
        &scene,
        &[
            "--profile",
            "repro",
            "--capture",
            cap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--osc",
            "0",
        ],
    );
    let mut log = Vec::new();
    wait_line(&lines, "playing", &mut log);
    let port = common::osc_port(&log);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let f = OscType::Float;
    let on = reply(&socket, port, "/pad/note", vec![f(60.0), f(0.8)]);
    assert_eq!(on.0, "ok", "{on:?}");
    assert!(on.1.contains("pad note on 261.625565 Hz vel 0.8"), "{on:?}");
    let on = reply(&socket, port, "/pad/note", vec![OscType::Int(64), f(0.5)]);
    assert_eq!(on.0, "ok", "{on:?}");
    // The level of every voice, by its template node.
    let lvl = reply(
        &socket,
        port,
        "/morphrt/param",
        vec![
            OscType::String("lvl".into()),
            OscType::String("gain".into()),
            f(0.5),
        ],
    );
    assert_eq!(lvl.0, "ok", "{lvl:?}");
    assert!(lvl.1.contains("lvl#3.gain = 0.5"), "{lvl:?}");
    for bad in [
        vec![f(60.0)],
        vec![f(60.5), f(0.5)],
        vec![f(60.0), f(2.0)],
        vec![OscType::String("C4".into()), f(0.5)],
    ] {
        let r = reply(&socket, port, "/pad/note", bad.clone());
        assert_eq!(r.0, "error", "{bad:?} → {r:?}");
    }
    std::thread::sleep(Duration::from_millis(300));
    let off = reply(&socket, port, "/pad/note", vec![f(60.0), f(0.0)]);
    assert!(off.1.contains("pad note off"), "{off:?}");
    std::thread::sleep(Duration::from_millis(300));
    let stop = reply(&socket, port, "/morphrt/stop", vec![]);
    assert_eq!(stop.0, "ok", "{stop:?}");
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let all = log.join("\n");
    assert!(status.success(), "{all}");
    assert!(all.contains("4 refused"), "{all}");
    let (text, notes) = journal_notes(&journal);
    assert_eq!(notes.len(), 3, "{text}");
    assert_eq!(notes[0]["module"], "pad");
    let pitch = notes[0]["action"]["on"]["pitch_hz"].as_f64().unwrap();
    assert!((pitch - hz(60.0)).abs() < 1e-9, "{pitch}");
    let levels = text
        .lines()
        .filter(|l| l.contains(r#""param":"gain""#) && l.contains("lvl#"))
        .count();
    assert_eq!(levels, 4, "{text}");
    assert_replays(&journal, &cap, &all);
    let tl = morphrt(&["replay", "--info", journal.to_str().unwrap()]);
    assert!(
        stdout(&tl).contains("note pad note on 261.625565 Hz"),
        "{}",
        stdout(&tl)
    );
}

#[test]
fn a_midi_file_played_live_journals_its_notes_and_pedal_and_replays() {
    let (dir, scene, midi) = setup("vc-live-midi", &chord(false));
    let (cap, journal) = (dir.join("cap.wav"), dir.join("j.jsonl"));
    let port = format!("file:{}", midi.display());
    let o = morphrt(&[
        "run",
        scene.to_str().unwrap(),
        "--device",
        "clock",
        "--profile",
        "live",
        "--midi",
        &port,
        "--duration",
        "2s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let log = stderr(&o);
    assert!(o.status.success(), "{log}");
    let (text, notes) = journal_notes(&journal);
    // The pedal down, three ons, three offs, the pedal up.
    assert_eq!(notes.len(), 8, "{text}");
    assert_eq!(notes[0]["action"]["sustain"], true, "{text}");
    assert_eq!(notes[7]["action"]["sustain"], false, "{text}");
    // Under live each lands at the start of a block.
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let block = header["block_size"].as_u64().unwrap();
    assert!(
        notes.iter().all(|n| n["at"].as_u64().unwrap() % block == 0),
        "{text}"
    );
    let played = read_f32(&cap);
    let at = |s: f64| 2 * (s * SR) as usize;
    let (held, after) = (&played[at(0.8)..at(1.2)], &played[at(1.8)..at(1.95)]);
    assert!(
        held.iter().any(|v| v.abs() > 0.1),
        "not held by the pedal: {log}"
    );
    assert!(
        after.iter().all(|v| *v == 0.0),
        "still sounding after the pedal: {log}"
    );
    assert_replays(&journal, &cap, &log);
}

/// The journal's text and its `note` records.
fn journal_notes(journal: &Path) -> (String, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(journal).unwrap();
    let notes = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "note")
        .collect();
    (text, notes)
}

/// A note struck and released on one tick (a zero-length note: 60 at
/// 0.25 s), then nothing.
fn zero_length() -> Vec<u8> {
    smf(&[(tick(0.25), [0x90, 60, 100]), (tick(0.25), [0x80, 60, 0])])
}

/// The largest magnitude of the stereo capture `x` from `s` seconds on.
fn peak_after(x: &[f32], s: f64) -> f32 {
    x[2 * (s * SR) as usize..]
        .iter()
        .fold(0.0f32, |m, v| m.max(v.abs()))
}

#[test]
fn a_zero_length_note_in_a_rendered_midi_file_never_sticks() {
    let (dir, scene, midi) = setup("vc-zero-render", &zero_length());
    let out = dir.join("zero.wav");
    render_strict(&scene, &midi, &out, &[]);
    let x = read_f32(&out);
    // Struck and released on one sample: its gate never opens, as the
    // mono note control plays it; above all it does not sound on.
    assert!(x.len() >= 2 * SR as usize, "{} frames", x.len());
    assert_eq!(
        peak_after(&x, 0.25),
        0.0,
        "the note sounds after its note-off"
    );
}

#[test]
fn a_zero_length_note_in_a_midi_file_played_live_never_sticks_and_replays() {
    let (dir, scene, midi) = setup("vc-zero-live", &zero_length());
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
        "1s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let log = stderr(&o);
    assert!(o.status.success(), "{log}");
    let (text, notes) = journal_notes(&journal);
    // The on and the off, in that order, on one sample.
    assert_eq!(notes.len(), 2, "{text}");
    assert_eq!(notes[0]["at"], notes[1]["at"], "{text}");
    assert!(notes[0]["action"]["on"].is_object(), "{text}");
    assert!(notes[1]["action"]["off"].is_object(), "{text}");
    let played = read_f32(&cap);
    assert!(played.len() >= 2 * (0.9 * SR) as usize, "{log}");
    assert_eq!(peak_after(&played, 0.25), 0.0, "the note sticks: {log}");
    assert_replays(&journal, &cap, &log);
}

/// The sample an OSC reply says its message landed at.
fn landed_at(r: &(String, String)) -> u64 {
    assert_eq!(r.0, "ok", "{r:?}");
    let (_, at) = r.1.rsplit_once("at sample ").expect("a sample");
    at.parse().unwrap()
}

/// Plays the pad scene over OSC: `send` sends the packets and reads the
/// replies; the capture then must fall silent once the note released.
fn osc_strike_and_release(name: &str, send: impl FnOnce(&UdpSocket, u16)) {
    let dir = temp_dir(name);
    let scene = dir.join("pad.json");
    std::fs::write(&scene, SCENE).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("j.jsonl"));
    let (mut child, lines) = run_clock(
        &scene,
        &[
            "--profile",
            "repro",
            "--capture",
            cap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--osc",
            "0",
        ],
    );
    let mut log = Vec::new();
    wait_line(&lines, "playing", &mut log);
    let port = common::osc_port(&log);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    send(&socket, port);
    std::thread::sleep(Duration::from_millis(1100));
    let stop = reply(&socket, port, "/morphrt/stop", vec![]);
    assert_eq!(stop.0, "ok", "{stop:?}");
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let all = log.join("\n");
    assert!(status.success(), "{all}");
    let (text, notes) = journal_notes(&journal);
    assert_eq!(notes.len(), 2, "{text}");
    assert_eq!(notes[0]["at"], notes[1]["at"], "{text}");
    assert!(notes[0]["action"]["on"].is_object(), "{text}");
    let at = notes[1]["at"].as_u64().unwrap() as usize;
    let played = read_f32(&cap);
    // Struck and released on one sample: it never sounds on.
    let tail = &played[2 * at..];
    assert!(tail.len() > 2 * (0.2 * SR) as usize, "{all}");
    assert!(tail.iter().all(|v| *v == 0.0), "the note sticks: {all}");
    assert_replays(&journal, &cap, &all);
}

/// `/pad/note 60 v` as a packet, in a bundle timetagged `at` when given.
fn note_packet(v: f32, at: Option<std::time::SystemTime>) -> Vec<u8> {
    let m = OscPacket::Message(OscMessage {
        addr: "/pad/note".into(),
        args: vec![OscType::Float(60.0), OscType::Float(v)],
    });
    let p = match at {
        Some(t) => OscPacket::Bundle(rosc::OscBundle {
            timetag: morphrt::host::remote::osc::timetag(t),
            content: vec![m],
        }),
        None => m,
    };
    rosc::encoder::encode(&p).unwrap()
}

/// Reads one reply's two strings.
fn read_reply(socket: &UdpSocket) -> (String, String) {
    let mut buf = [0u8; 65536];
    let n =
        common::recv_within(socket, &mut buf, Duration::from_secs(20)).expect("a reply in time");
    let (_, p) = rosc::decoder::decode_udp(&buf[..n]).unwrap();
    let OscPacket::Message(m) = p else {
        panic!("{p:?}")
    };
    match &m.args[..] {
        [OscType::String(s), OscType::String(t)] => (s.clone(), t.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_note_on_and_off_in_two_osc_datagrams_on_one_sample_never_sticks() {
    osc_strike_and_release("vc-zero-osc-two", |socket, port| {
        // Two datagrams, each timetagged for the same instant: one sample
        // (2.5 s ahead, so that a loaded machine still delivers both
        // before it).
        let t = std::time::SystemTime::now() + Duration::from_millis(2500);
        for v in [0.8, 0.0] {
            socket
                .send_to(&note_packet(v, Some(t)), ("127.0.0.1", port))
                .unwrap();
        }
        let (on, off) = (read_reply(socket), read_reply(socket));
        assert!(on.1.contains("note on"), "{on:?}");
        assert!(off.1.contains("note off"), "{off:?}");
        assert_eq!(landed_at(&on), landed_at(&off), "{on:?} {off:?}");
    });
}

#[test]
fn a_note_on_and_off_in_one_osc_bundle_never_sticks() {
    osc_strike_and_release("vc-zero-osc-bundle", |socket, port| {
        let m = |v: f32| {
            OscPacket::Message(OscMessage {
                addr: "/pad/note".into(),
                args: vec![OscType::Float(60.0), OscType::Float(v)],
            })
        };
        let p = OscPacket::Bundle(rosc::OscBundle {
            timetag: rosc::OscTime::from((0, 1)),
            content: vec![m(0.8), m(0.0)],
        });
        socket
            .send_to(&rosc::encoder::encode(&p).unwrap(), ("127.0.0.1", port))
            .unwrap();
        let (on, off) = (read_reply(socket), read_reply(socket));
        assert_eq!(landed_at(&on), landed_at(&off), "{on:?} {off:?}");
    });
}

/// Notes pushed from outside onto the pad's engine at `sample`, in order.
fn push_notes(e: &mut morphrt::engine::Engine, sample: u64, notes: &[(f64, bool)]) {
    use morphrt::graph::{NoteAction, PlanNote};
    let pool = e.voice_pool("pad").unwrap();
    for &(hz, on) in notes {
        let key = f64::to_bits(hz);
        let action = if on {
            NoteAction::On {
                key,
                tag: 0,
                pitch_hz: hz,
                velocity: 0.8,
            }
        } else {
            NoteAction::Off { key, tag: 0 }
        };
        assert!(e.push_note(PlanNote {
            sample,
            pool,
            action
        }));
    }
}

#[test]
fn an_off_of_another_note_on_the_same_sample_is_still_taken_first() {
    use morphrt::engine::Phase;
    let two = SCENE.replace(r#""voices": 4"#, r#""voices": 2"#);
    let mut e = common::engine(&two, None, 64);
    // 220 Hz on voice 0, then 330 Hz on voice 1.
    push_notes(&mut e, 0, &[(220.0, true)]);
    push_notes(&mut e, 10, &[(330.0, true)]);
    e.process_block(64);
    // A legato retrigger sent on first: 440 Hz on, then 330 Hz off, on
    // one sample. The off is taken first, so 440 Hz takes the voice 330
    // Hz left, not the voice still holding 220 Hz.
    push_notes(&mut e, 100, &[(440.0, true), (330.0, false)]);
    e.process_block(64);
    let v = &e.voice_states()[0].voices;
    assert_eq!(v[0].phase, Phase::Held, "{v:?}");
    assert_eq!(v[0].key, 220f64.to_bits(), "{v:?}");
    assert_eq!(v[1].phase, Phase::Stealing, "{v:?}");
    assert_eq!(v[1].next.key, 440f64.to_bits(), "{v:?}");
}

#[test]
fn an_on_then_an_off_of_one_note_on_one_sample_start_and_release_it() {
    use morphrt::engine::Phase;
    let mut e = common::engine(SCENE, None, 64);
    push_notes(&mut e, 10, &[(220.0, true), (220.0, false)]);
    // The other way round, on another voice: off (nothing held), then on.
    push_notes(&mut e, 20, &[(330.0, false), (330.0, true)]);
    e.process_block(64);
    let v = &e.voice_states()[0].voices;
    assert_eq!(v[0].key, 220f64.to_bits(), "{v:?}");
    assert_eq!(v[0].phase, Phase::Released, "{v:?}");
    assert_eq!(v[1].key, 330f64.to_bits(), "{v:?}");
    assert_eq!(v[1].phase, Phase::Held, "{v:?}");
}

/// C major held with the pedal down from 0 and never released, then CC
/// `cc` (123 all notes off, 120 all sound off) at 0.5 s.
fn panic_file(cc: u8) -> Vec<u8> {
    let mut e = vec![(0, [0xb0, 64, 127])];
    for n in [60, 64, 67] {
        e.push((0, [0x90, n, 100]));
    }
    e.push((tick(0.5), [0xb0, cc, 0]));
    smf(&e)
}

/// Plays `panic_file(cc)` live through a file port under repro: the
/// capture (stereo), the sample the panic landed at, and the log; the
/// session replays bit for bit.
fn midi_panic(name: &str, cc: u8) -> (Vec<f32>, usize, String) {
    let (dir, scene, midi) = setup(name, &panic_file(cc));
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
        "1s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let log = stderr(&o);
    assert!(o.status.success(), "{log}");
    let (text, notes) = journal_notes(&journal);
    assert_eq!(notes.len(), 5, "{text}");
    let want = if cc == 123 {
        "all_notes_off"
    } else {
        "all_sound_off"
    };
    assert_eq!(notes[4]["action"], want, "{text}");
    assert_replays(&journal, &cap, &log);
    let at = notes[4]["at"].as_u64().unwrap() as usize;
    (read_f32(&cap), at, log)
}

#[test]
fn midi_all_notes_off_releases_every_voice_held_by_the_pedal_and_replays() {
    let (x, at, log) = midi_panic("vc-cc123", 123);
    assert!(
        x[2 * (at - 48)..2 * at].iter().any(|v| v.abs() > 0.1),
        "{log}"
    );
    // Released, not cut: the 20 ms release still sounds just after.
    let just_after = &x[2 * at..2 * (at + 96)];
    assert!(just_after.iter().any(|v| v.abs() > 0.01), "{log}");
    // Then silence: the release, and the voices go free.
    let later = 2 * (at + (0.1 * SR) as usize);
    assert!(x.len() > later + 2 * 4800, "{log}");
    assert!(
        x[later..].iter().all(|v| *v == 0.0),
        "still sounding: {log}"
    );
}

#[test]
fn midi_all_sound_off_silences_every_voice_at_once_and_replays() {
    let (x, at, log) = midi_panic("vc-cc120", 120);
    assert!(
        x[2 * (at - 48)..2 * at].iter().any(|v| v.abs() > 0.1),
        "{log}"
    );
    assert!(x.len() > 2 * (at + 4800), "{log}");
    assert!(
        x[2 * at..].iter().all(|v| *v == 0.0),
        "sounds after all sound off: {log}"
    );
}

#[test]
fn osc_panic_releases_every_voice_and_panic_sound_silences_at_once() {
    let dir = temp_dir("vc-osc-panic");
    let scene = dir.join("pad.json");
    std::fs::write(&scene, SCENE).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("j.jsonl"));
    let (mut child, lines) = run_clock(
        &scene,
        &[
            "--profile",
            "repro",
            "--capture",
            cap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--osc",
            "0",
        ],
    );
    let mut log = Vec::new();
    wait_line(&lines, "playing", &mut log);
    let port = common::osc_port(&log);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let f = OscType::Float;
    let chord = || {
        for n in [60.0, 64.0] {
            let on = reply(&socket, port, "/pad/note", vec![f(n), f(0.8)]);
            assert_eq!(on.0, "ok", "{on:?}");
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    chord();
    let soft = reply(&socket, port, "/morphrt/panic", vec![]);
    assert!(soft.1.contains("pad all notes off"), "{soft:?}");
    let soft = landed_at(&soft) as usize;
    std::thread::sleep(Duration::from_millis(300));
    chord();
    let hard = reply(
        &socket,
        port,
        "/morphrt/panic",
        vec![OscType::String("sound".into())],
    );
    assert!(hard.1.contains("pad all sound off"), "{hard:?}");
    let hard = landed_at(&hard) as usize;
    let bad = reply(
        &socket,
        port,
        "/morphrt/panic",
        vec![OscType::String("loud".into())],
    );
    assert_eq!(bad.0, "error", "{bad:?}");
    std::thread::sleep(Duration::from_millis(300));
    let stop = reply(&socket, port, "/morphrt/stop", vec![]);
    assert_eq!(stop.0, "ok", "{stop:?}");
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let all = log.join("\n");
    assert!(status.success(), "{all}");
    let x = read_f32(&cap);
    let sounds = |a: usize, b: usize| x[2 * a..2 * b].iter().any(|v| v.abs() > 0.01);
    let silent = |a: usize, b: usize| x[2 * a..2 * b].iter().all(|v| *v == 0.0);
    // All notes off: the release sounds on a little, then silence.
    assert!(sounds(soft - 48, soft) && sounds(soft, soft + 96), "{all}");
    assert!(silent(soft + 4800, soft + 9600), "{all}");
    // All sound off: silent from its sample.
    assert!(sounds(hard - 48, hard), "{all}");
    assert!(x.len() > 2 * (hard + 4800), "{all}");
    assert!(silent(hard, x.len() / 2), "{all}");
    let (text, notes) = journal_notes(&journal);
    let panics: Vec<_> = notes
        .iter()
        .filter(|n| n["action"].is_string())
        .map(|n| (n["action"].as_str().unwrap(), n["at"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        panics,
        [
            ("all_notes_off", soft as u64),
            ("all_sound_off", hard as u64)
        ],
        "{text}"
    );
    assert_replays(&journal, &cap, &all);
}

#[test]
fn a_note_a_midi_file_leaves_on_is_warned_about_by_render_and_check() {
    // 64 struck and released; 60 struck at 1.25 s (tick 240) and never
    // released; 62 on channel 2, which no control listens to.
    let file = smf(&[
        (0, [0x90, 64, 100]),
        (tick(0.5), [0x80, 64, 0]),
        (240, [0x90, 60, 100]),
        (250, [0x91, 62, 100]),
    ]);
    let (dir, scene, midi) = setup("vc-left-on", &file);
    let want = format!(
        "warning: note 60 on channel 1 at 1.250 s in `{}` has no note-off: it sounds to the end",
        midi.display()
    );
    let o = render_strict(&scene, &midi, &dir.join("out.wav"), &[]);
    let check = morphrt(&[
        "check",
        scene.to_str().unwrap(),
        "--midi",
        midi.to_str().unwrap(),
    ]);
    assert!(check.status.success(), "{}", stderr(&check));
    for log in [stderr(&o), stderr(&check)] {
        assert!(log.contains(&want), "{log}");
        assert!(!log.contains("note 64"), "{log}");
        assert!(!log.contains("note 62"), "{log}");
    }
}
