//! MIDI in: `render --midi FILE.mid` drives a scene's MIDI controls at
//! exact samples (checked sample by sample against values computed here
//! from the file, independently of the mapper), the same bits at every
//! block size under strict; bad files are refused with exit 2 and leave
//! nothing behind. The MIDI files are built here byte by byte.

use crate::support as common;

use common::{midi_vlq as vlq, morphrt, partials, read_f32, stderr, stdout, temp_dir};
use std::path::{Path, PathBuf};

const SR: u64 = 48000;

/// A track chunk of (delta ticks, event bytes), closed by End of Track.
fn track(events: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut data: Vec<u8> = Vec::new();
    for (delta, e) in events {
        data.extend(vlq(*delta));
        data.extend(e);
    }
    data.extend([0, 0xff, 0x2f, 0]);
    let mut t = b"MTrk".to_vec();
    t.extend((data.len() as u32).to_be_bytes());
    t.extend(data);
    t
}

/// A format 1 file with `ppq` ticks per quarter.
fn smf(ppq: u16, tracks: &[Vec<u8>]) -> Vec<u8> {
    let mut f = b"MThd\0\0\0\x06\0\x01".to_vec();
    f.extend((tracks.len() as u16).to_be_bytes());
    f.extend(ppq.to_be_bytes());
    for t in tracks {
        f.extend(t);
    }
    f
}

/// Tempo 60 bpm (1 s a quarter) from tick 96 on; 120 bpm before.
fn conductor() -> Vec<u8> {
    track(&[(96, vec![0xff, 0x51, 3, 0x0f, 0x42, 0x40])])
}

/// At 96 PPQ: 250 samples a tick before tick 96, 500 after (the tempo
/// map, worked out by hand).
fn tick_sample(tick: u64) -> u64 {
    if tick <= 96 {
        tick * 250
    } else {
        96 * 250 + (tick - 96) * 500
    }
}

/// What the file plays, as (tick, message): a CC 74 sweep, a 14-bit CC
/// 1/33 pair, notes with a legato overlap, and a message nothing maps.
fn performance() -> Vec<(u64, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..16u64 {
        v.push((i * 12, vec![0xb0, 74, (i * 8 + 7) as u8]));
    }
    v.extend([
        (5, vec![0xb0, 1, 100]),
        (20, vec![0xb0, 33, 77]),
        (100, vec![0xb0, 1, 3]),
        (110, vec![0xb0, 33, 127]),
        (30, vec![0x90, 60, 100]),
        (90, vec![0x90, 64, 30]),
        (120, vec![0x80, 64, 0]),
        (150, vec![0x90, 60, 0]),
        (160, vec![0xd0, 5]),
        // Channel 2: no control listens.
        (170, vec![0xb1, 74, 1]),
    ]);
    v.sort_by_key(|(t, _)| *t);
    v
}

/// A track of events at absolute ticks (in order).
fn track_at(events: Vec<(u64, Vec<u8>)>) -> Vec<u8> {
    let mut last = 0;
    let deltas: Vec<(u32, Vec<u8>)> = events
        .into_iter()
        .map(|(t, e)| {
            let d = (t - last) as u32;
            last = t;
            (d, e)
        })
        .collect();
    track(&deltas)
}

/// The performance as a track.
fn performance_track() -> Vec<u8> {
    track_at(performance())
}

/// Five `dc` nodes, one output channel each: the CC, the 14-bit pair,
/// the gate, the pitch (a note number: `value` is no frequency) and the
/// velocity.
const SCENE: &str = r#"{"version": "1.0", "sample_rate": 48000,
  "nodes": [
    {"id": "cc", "op": "dc", "params": {"value": 0}},
    {"id": "fine", "op": "dc", "params": {"value": 0}},
    {"id": "gate", "op": "dc", "params": {"value": 0}},
    {"id": "pitch", "op": "dc", "params": {"value": 0}},
    {"id": "vel", "op": "dc", "params": {"value": 0}}],
  "outputs": {"main": ["cc", "fine", "gate", "pitch", "vel"]},
  "controls": [
    {"midi": {"cc": 74, "channel": 1}, "node": "cc", "param": "value", "min": 0, "max": 1},
    {"midi": {"cc": 1, "lsb": 33}, "node": "fine", "param": "value", "min": -1, "max": 1},
    {"midi": {"note": "any", "channel": 1}, "node": "gate", "param": "value", "min": 0, "max": 1,
     "pitch": {"node": "pitch", "param": "value"},
     "velocity": {"node": "vel", "param": "value", "min": 0, "max": 1}}]}"#;

/// Each channel's value after each message, worked out from the MIDI
/// spec's rules: (sample, channel, value).
fn expected_steps() -> Vec<(u64, usize, f64)> {
    let mut steps = Vec::new();
    let mut msb = 0u64;
    let mut held: Vec<u8> = Vec::new();
    for (tick, m) in performance() {
        let at = tick_sample(tick);
        match (m[0], m[1], m.get(2).copied().unwrap_or(0)) {
            (0xb0, 74, v) => steps.push((at, 0, v as f64 / 127.0)),
            (0xb0, 1, v) => {
                msb = v as u64;
                steps.push((at, 1, -1.0 + 2.0 * (msb * 128) as f64 / 16383.0));
            }
            (0xb0, 33, v) => {
                let x = (msb * 128 + v as u64) as f64 / 16383.0;
                steps.push((at, 1, -1.0 + 2.0 * x));
            }
            (0x90, n, v) if v > 0 => {
                held.push(n);
                steps.push((at, 2, 1.0));
                steps.push((at, 3, n as f64));
                steps.push((at, 4, v as f64 / 127.0));
            }
            (0x80 | 0x90, n, _) => {
                let sounding = held.last() == Some(&n);
                held.retain(|h| *h != n);
                match (sounding, held.last()) {
                    (true, Some(&prev)) => steps.push((at, 3, prev as f64)),
                    (true, None) => steps.push((at, 2, 0.0)),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    steps
}

/// Writes the scene and the file into a fresh directory.
fn setup(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let scene = dir.join("scene.json");
    std::fs::write(&scene, SCENE).unwrap();
    let mid = dir.join("take.mid");
    std::fs::write(&mid, smf(96, &[conductor(), performance_track()])).unwrap();
    (dir, scene, mid)
}

#[test]
fn a_midi_file_moves_params_at_the_samples_the_tempo_map_gives() {
    let (dir, scene, mid) = setup("curve");
    let out = dir.join("out.wav");
    let o = common::render_midi(&scene, &mid, &out, &["--profile", "strict", "-d", "2s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(
        log.contains("26 messages, 24 mapped, 2 unmapped"),
        "the summary counts what was mapped: {log}"
    );
    let samples = read_f32(&out);
    let frames = samples.len() / 5;
    assert_eq!(frames as u64, 2 * SR);
    let steps = expected_steps();
    let mut now = [0.0f64; 5];
    let mut next = steps.iter().peekable();
    for s in 0..frames {
        while let Some((_, ch, v)) = next.next_if(|(at, _, _)| *at as usize <= s) {
            now[*ch] = *v;
        }
        for ch in 0..5 {
            assert_eq!(
                samples[s * 5 + ch],
                now[ch] as f32,
                "channel {ch} at sample {s}"
            );
        }
    }
    // The checks above saw each kind of change: the last CC, the pair's
    // LSB after a new MSB, the legato return and the release.
    assert_eq!(now[0] as f32, (127.0f64 / 127.0) as f32);
    assert_eq!(now[1], -1.0 + 2.0 * (3.0 * 128.0 + 127.0) / 16383.0);
    assert_eq!((now[2], now[3]), (0.0, 60.0));
    // Ticks after the tempo change are 500 samples apart: the note-off at
    // tick 150 lands at 24000 + 54·500.
    assert_eq!(samples[(51_000 - 1) * 5 + 2], 1.0);
    assert_eq!(samples[51_000 * 5 + 2], 0.0);
}

#[test]
fn strict_renders_of_a_midi_file_are_the_same_bits_at_every_block_size() {
    let (dir, scene, mid) = setup("blocks");
    let hashes: Vec<String> = ["1", "64", "4096"]
        .iter()
        .map(|b| {
            let out = dir.join(format!("b{b}.wav"));
            let args = [
                "--profile",
                "strict",
                "-d",
                "1s",
                "--block-size",
                b,
                "--hash",
            ];
            let o = common::render_midi(&scene, &mid, &out, &args);
            assert!(o.status.success(), "{}", stderr(&o));
            stdout(&o).trim().to_string()
        })
        .collect();
    assert!(
        stderr(&morphrt(&[
            "render",
            scene.to_str().unwrap(),
            "-o",
            dir.join("short.wav").to_str().unwrap(),
            "--midi",
            mid.to_str().unwrap(),
            "-d",
            "0.5s",
        ]))
        .contains("MIDI changes come after the render's end"),
        "a render too short for the file says so"
    );
    assert_eq!(hashes[0], hashes[1]);
    assert_eq!(hashes[0], hashes[2]);
    // And the MIDI moved something: the render without it differs.
    let plain = morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "-o",
        dir.join("plain.wav").to_str().unwrap(),
        "--profile",
        "strict",
        "-d",
        "1s",
        "--hash",
    ]);
    assert_ne!(stdout(&plain).trim(), hashes[0]);
}

#[test]
fn without_a_duration_the_render_ends_after_the_last_event_and_the_tail() {
    let dir = temp_dir("midi-length");
    let scene = dir.join("gate.json");
    std::fs::write(
        &scene,
        r#"{"version": "1.0", "sample_rate": 48000,
            "nodes": [{"id": "gate", "op": "dc", "params": {"value": 0}}],
            "outputs": {"main": ["gate"]},
            "controls": [{"midi": {"note": 60}, "node": "gate", "param": "value", "min": 0, "max": 0.5}]}"#,
    )
    .unwrap();
    let mid = dir.join("one.mid");
    // A note from tick 0 to 96 (0.5 s), the track ending at tick 192 (1.5 s).
    let t = track(&[
        (0, vec![0x90, 60, 100]),
        (96, vec![0x80, 60, 0]),
        (96, vec![0xff, 0x01, 1, b'x']),
    ]);
    std::fs::write(&mid, smf(96, &[conductor(), t])).unwrap();
    let out = dir.join("out.wav");
    let o = common::render_midi(&scene, &mid, &out, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The last event (End of Track at 1.5 s), then silence: the tail ends at once.
    assert_eq!(json["frames"], 72_000, "{json}");
    assert_eq!(json["midi"]["mapped"], 2);
    assert_eq!(json["midi"]["last_event_s"], 1.5);
    assert!(
        stderr(&o).contains("length: last event 1.500 s + tail 0.000 s"),
        "{}",
        stderr(&o)
    );
    let s = read_f32(&out);
    assert_eq!((s[0], s[23_999], s[24_000]), (0.5, 0.5, 0.0));
}

/// Runs `render` expecting exit 2 with `message`, and no output file.
fn refused(dir: &Path, args: &[&str], message: &str) {
    let o = morphrt(args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(message), "{}", stderr(&o));
    assert!(!dir.join("out.wav").exists());
    assert!(partials(dir).is_empty(), "left behind: {:?}", partials(dir));
}

#[test]
fn bad_midi_files_are_refused_and_leave_nothing() {
    let (dir, scene, mid) = setup("bad");
    let s = scene.to_str().unwrap();
    let out = dir.join("out.wav");
    let o = out.to_str().unwrap();
    let m = mid.to_str().unwrap();
    let missing = dir.join("missing.mid");
    refused(
        &dir,
        &["render", s, "-o", o, "--midi", missing.to_str().unwrap()],
        "does not exist",
    );
    // A scene given as the MIDI file: said what it is.
    refused(
        &dir,
        &["render", s, "-o", o, "--midi", s],
        "not a standard MIDI file: it starts with bytes 7b",
    );
    refused(
        &dir,
        &["render", s, "-o", o, "--midi", dir.to_str().unwrap()],
        "is not a regular file",
    );
    let broken = dir.join("broken.mid");
    std::fs::write(&broken, b"MThd\0\0\0\x06\0\x01").unwrap();
    refused(
        &dir,
        &["render", s, "-o", o, "--midi", broken.to_str().unwrap()],
        "damaged MIDI file",
    );
    // Cut short anywhere (mid-track, between chunks, after the header):
    // refused, not played in part.
    let whole = smf(96, &[conductor(), performance_track()]);
    for cut in [whole.len() - 3, 40, 22, 14] {
        let short = dir.join(format!("cut-{cut}.mid"));
        std::fs::write(&short, &whole[..cut]).unwrap();
        refused(
            &dir,
            &["render", s, "-o", o, "--midi", short.to_str().unwrap()],
            "damaged MIDI file",
        );
    }
    // Standard input is not a MIDI source: said so.
    refused(
        &dir,
        &["render", s, "-o", o, "--midi", "-"],
        "a MIDI file is read from a path",
    );
    refused(
        &dir,
        &["render", s, "-o", o, "--midi", m, "--midi", m],
        "--midi is given 2 times",
    );
    let plain = dir.join("plain.json");
    std::fs::write(
        &plain,
        r#"{"version": "1.0", "nodes": [{"id": "a", "op": "dc", "params": {"value": 0}}], "outputs": {"main": ["a"]}}"#,
    )
    .unwrap();
    refused(
        &dir,
        &["render", plain.to_str().unwrap(), "-o", o, "--midi", m],
        "maps no MIDI",
    );
    // The MIDI file is an input: never the output.
    let o2 = morphrt(&["render", s, "-o", m, "--midi", m]);
    assert_eq!(o2.status.code(), Some(2), "{}", stderr(&o2));
    assert_eq!(
        std::fs::read(&mid).unwrap(),
        smf(96, &[conductor(), performance_track()])
    );
}

/// The scene's controls, compiled.
fn controls() -> Vec<morphrt::graph::ControlMap> {
    common::plan(SCENE, None, 64).controls
}

#[test]
fn a_file_port_sends_stamped_messages_in_order() {
    use morphrt::graph::ControlValue;
    use morphrt::host::live::midi::{open_midi, MidiControls, MidiSpec};
    use morphrt::host::remote::{Change, Command, When};
    use std::time::Duration;
    let dir = temp_dir("midi-port");
    let mid = dir.join("seq.mid");
    // 96 PPQ at 120 bpm: a tick is 1/192 s. Ticks 0, 12 (62.5 ms), 24 (125 ms).
    let t = track(&[
        (0, vec![0xb0, 74, 64]),
        (12, vec![0x90, 60, 127]),
        (12, vec![0xb1, 74, 1]),
    ]);
    std::fs::write(&mid, smf(96, &[t])).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let spec = MidiSpec::parse(&format!("file:{}", mid.display()));
    let c = controls();
    let mut input = open_midi(&spec, &MidiControls::Fixed(&c), tx).unwrap();
    assert_eq!(input.file_start(), None, "a file port waits for its start");
    input.start_file();
    let start = input.file_start().expect("a file port");
    let got: Vec<_> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(30)).expect("a message"))
        .collect();
    let port = format!("midi file:{}", mid.display());
    let at = |ms: f64| When::Stamped(start + Duration::from_secs_f64(ms / 1000.0));
    let change = |node: &str, v: f64| Change {
        node: node.into(),
        param: "value".into(),
        value: ControlValue::Number(v),
        ramp: 0,
    };
    assert_eq!(got[0].from, format!("{port} cc 74 = 64 ch 1"));
    assert_eq!(got[0].when, at(0.0));
    assert_eq!(
        got[0].command,
        Ok(Command::Changes(vec![change("cc", 64.0 / 127.0)]))
    );
    assert_eq!(got[1].from, format!("{port} note on 60 vel 127 ch 1"));
    assert_eq!(got[1].when, at(62.5));
    assert_eq!(
        got[1].command,
        Ok(Command::Changes(vec![
            change("gate", 1.0),
            change("pitch", 60.0),
            change("vel", 1.0)
        ]))
    );
    // CC 74 on channel 2 (no control maps it) is not sent; the file
    // ended: the sender is gone.
    drop(input);
    assert!(rx.recv_timeout(Duration::from_secs(30)).is_err());
}

#[test]
fn dropping_a_file_port_stops_it_before_its_end() {
    use morphrt::host::live::midi::{open_midi, MidiControls, MidiSpec};
    let dir = temp_dir("midi-stop");
    let mid = dir.join("long.mid");
    // One message at once, the next an hour later (at 120 bpm, 691200 ticks).
    let t = track(&[(0, vec![0xb0, 74, 1]), (691_200, vec![0xb0, 74, 2])]);
    std::fs::write(&mid, smf(96, &[t])).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let spec = MidiSpec::File(mid);
    let c = controls();
    let mut input = open_midi(&spec, &MidiControls::Fixed(&c), tx).unwrap();
    input.start_file();
    assert!(rx.recv_timeout(std::time::Duration::from_secs(30)).is_ok());
    // Joins the player's thread: this returns only if it stopped waiting.
    drop(input);
    assert!(rx.try_recv().is_err());
}

#[test]
fn run_refuses_midi_it_cannot_open() {
    let (dir, scene, _) = setup("run-midi");
    let s = scene.to_str().unwrap();
    let missing = format!("file:{}", dir.join("missing.mid").display());
    let run = |midi: &str| {
        morphrt(&[
            "run",
            s,
            "--device",
            "clock",
            "--no-journal",
            "--midi",
            midi,
        ])
    };
    let o = run(&missing);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("missing.mid` does not exist"),
        "{}",
        stderr(&o)
    );
    // A port: on a machine without a MIDI system that is said (exit 1);
    // with one, the unknown name is, with the inputs there are (exit 2).
    let o = run("no such port 7");
    let log = stderr(&o);
    assert!(
        (o.status.code() == Some(1) && log.contains("no MIDI system"))
            || (o.status.code() == Some(2) && log.contains("no MIDI input `no such port 7`")),
        "{log}"
    );
    let d = morphrt(&["devices"]);
    assert!(
        stdout(&d).contains("MIDI inputs (run --midi NAME):"),
        "{}",
        stdout(&d)
    );
}

/// What `scenes/midi/bassline.mid` holds: two bars of a bassline at 120
/// bpm (96 PPQ) on channel 1, legato on the last beat, with CC 74
/// opening the filter over the first bar and closing it over the second.
fn bassline() -> Vec<u8> {
    let mut events: Vec<(u64, Vec<u8>)> = Vec::new();
    let notes = [36u8, 36, 48, 36, 39, 36, 43, 41];
    for (i, n) in notes.iter().enumerate() {
        let on = i as u64 * 96;
        let len = if i == 7 { 96 } else { 72 };
        events.push((on, vec![0x90, *n, 80 + (i as u8 % 4) * 12]));
        events.push((on + len, vec![0x80, *n, 0]));
    }
    // Legato: a note under the last one, released after it.
    events.push((7 * 96 + 48, vec![0x90, 43, 90]));
    events.push((8 * 96 + 24, vec![0x80, 43, 0]));
    for i in 0..=32u64 {
        let v = if i <= 16 { i * 7 } else { (32 - i) * 7 };
        events.push((i * 24, vec![0xb0, 74, v.min(127) as u8]));
    }
    events.sort_by_key(|(t, _)| *t);
    let tempo = track(&[(0, vec![0xff, 0x51, 3, 0x07, 0xa1, 0x20])]);
    smf(96, &[tempo, track_at(events)])
}

/// Checks that `scenes/midi/NAME.mid` is what `maker` writes
/// (`MORPHRT_BLESS=1` rewrites it), then runs GUIDE.md's command, which
/// renders `scenes/midi/SCENE.json` played by it: its samples, with every
/// message mapped.
fn shipped_midi(name: &str, maker: fn() -> Vec<u8>, scene: &str) -> Vec<f32> {
    let mid = format!("scenes/midi/{name}.mid");
    let path = common::root().join(&mid);
    if std::env::var_os("MORPHRT_BLESS").is_some() {
        std::fs::write(&path, maker()).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        maker(),
        "MORPHRT_BLESS=1 rewrites it"
    );
    let dir = temp_dir(&format!("midi-{name}"));
    let out = dir.join(format!("{scene}.wav"));
    let o = morphrt(&[
        "render",
        &format!("scenes/midi/{scene}.json"),
        "--midi",
        &mid,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("0 unmapped"), "{log}");
    read_f32(&out)
}

#[test]
fn the_shipped_midi_file_is_what_its_maker_writes_and_renders() {
    let s = shipped_midi("bassline", bassline, "bassline");
    // Two bars at 120 bpm (4 s), the release, then the tail ends.
    assert!(
        s.len() > 4 * 48_000 && s.len() < 5 * 48_000,
        "{} frames",
        s.len()
    );
    assert!(s.iter().any(|x| x.abs() > 0.05));
}

/// The chords of `scenes/midi/chords.mid`, one a bar: Cmaj7, Am7, Dm7.
const CHORDS: [[u8; 4]; 3] = [[48, 52, 55, 59], [45, 48, 52, 55], [50, 53, 57, 60]];

/// What `scenes/midi/chords.mid` holds, for the voice module of
/// `scenes/midi/keys.json`: five bars at 120 bpm (96 PPQ, a bar is 2 s) on
/// channel 1. Bars 1–3: a four-note chord, strummed 4 ticks a note, held
/// 3½ beats, under a legato melody (each note overlaps the next by 12
/// ticks): six voices at once. Bar 4: the pedal goes down and G7 is
/// arpeggiated in sixteen short notes, all held by the pedal, so the eight
/// voices steal; the pedal comes up on bar 5's C chord, held for the bar.
/// CC 74 opens the filter over bars 1–2 and closes it over bars 3–4.
fn chords() -> Vec<u8> {
    let mut events: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut note = |on: u64, len: u64, n: u8, v: u8| {
        events.push((on, vec![0x90, n, v]));
        events.push((on + len, vec![0x80, n, 0]));
    };
    let melody = [[72u8, 74, 76, 79], [76, 74, 72, 69], [74, 77, 76, 74]];
    for (bar, (chord, line)) in CHORDS.iter().zip(melody).enumerate() {
        let at = bar as u64 * 384;
        for (i, n) in chord.iter().enumerate() {
            note(at + i as u64 * 4, 336 - i as u64 * 4, *n, 70 + i as u8 * 6);
        }
        for (i, n) in line.iter().enumerate() {
            note(at + i as u64 * 96, 108, *n, 96);
        }
    }
    let g7 = [43u8, 47, 50, 53, 55, 59, 62, 65];
    for i in 0..16u64 {
        note(
            3 * 384 + i * 24,
            20,
            g7[(i % 8) as usize],
            60 + (i % 4) as u8 * 10,
        );
    }
    for (i, n) in [48u8, 55, 60, 64, 67].iter().enumerate() {
        note(4 * 384 + i as u64 * 4, 380 - i as u64 * 4, *n, 84);
    }
    events.push((3 * 384, vec![0xb0, 64, 127]));
    events.push((4 * 384, vec![0xb0, 64, 0]));
    for i in 0..=64u64 {
        let v = if i <= 32 {
            20 + i * 3
        } else {
            20 + (64 - i) * 3
        };
        events.push((i * 24, vec![0xb0, 74, v as u8]));
    }
    // Stable: at one tick, the order written above (a note-off before the
    // pedal, the pedal before the notes that follow).
    events.sort_by_key(|(t, _)| *t);
    let tempo = track(&[(0, vec![0xff, 0x51, 3, 0x07, 0xa1, 0x20])]);
    smf(96, &[tempo, track_at(events)])
}

/// The magnitude of `x[a..b]`'s DFT at `hz` (Hann window), per sample.
fn dft(x: &[f32], (a, b): (usize, usize), hz: f64) -> f64 {
    let n = (b - a) as f64;
    let (mut re, mut im) = (0.0, 0.0);
    for (i, &v) in x[a..b].iter().enumerate() {
        let w = 0.5 - 0.5 * libm::cos(std::f64::consts::TAU * i as f64 / n);
        let ph = std::f64::consts::TAU * hz * i as f64 / SR as f64;
        re += w * f64::from(v) * libm::cos(ph);
        im += w * f64::from(v) * libm::sin(ph);
    }
    libm::sqrt(re * re + im * im) / n
}

#[test]
fn the_shipped_chords_file_is_what_its_maker_writes_and_plays_the_keys() {
    let s = shipped_midi("chords", chords, "keys");
    // Five bars (10 s), the last release, then the room's tail.
    let sr = SR as usize;
    assert!(s.len() > 10 * sr && s.len() < 12 * sr, "{} frames", s.len());
    // Each bar's chord sounds all four of its notes together: every one
    // of them stands well above a note no chord or melody of that bar
    // plays (nor a harmonic of one).
    let hz = |n: u8| 440.0 * libm::pow(2.0, (f64::from(n) - 69.0) / 12.0);
    for (bar, chord) in CHORDS.iter().enumerate() {
        let window = (bar * 2 * sr + sr / 4, bar * 2 * sr + 3 * sr / 2);
        let floor = [49u8, 51, 56].map(|n| dft(&s, window, hz(n)));
        let floor = floor.iter().cloned().fold(0.0, f64::max);
        for n in chord {
            let m = dft(&s, window, hz(*n));
            assert!(
                m > 20.0 * floor,
                "bar {}: note {n} at {m} against {floor}",
                bar + 1
            );
        }
    }
}

#[test]
fn a_block_holding_more_changes_than_the_queue_lands_each_at_its_sample() {
    let dir = temp_dir("midi-dense");
    let scene = dir.join("cc.json");
    std::fs::write(
        &scene,
        r#"{"version": "1.0", "sample_rate": 48000, "duration": "0.1s",
            "nodes": [{"id": "cc", "op": "dc", "params": {"value": 0}}],
            "outputs": {"main": ["cc"]},
            "controls": [{"midi": {"cc": 7}, "node": "cc", "param": "value", "min": 0, "max": 127}]}"#,
    )
    .unwrap();
    // 9600 PPQ at 120 bpm: a tick is 2.5 samples. 1500 CCs, one a tick,
    // all inside one block of 4096: three times what an engine queues.
    let events: Vec<(u32, Vec<u8>)> = (0..1500u32)
        .map(|i| (u32::from(i > 0), vec![0xb0, 7, (i % 128) as u8]))
        .collect();
    let mid = dir.join("dense.mid");
    std::fs::write(&mid, smf(9600, &[track(&events)])).unwrap();
    let mut hashes = Vec::new();
    for b in ["1", "4096"] {
        let out = dir.join(format!("b{b}.wav"));
        let args = ["--profile", "strict", "--block-size", b, "--hash"];
        let o = common::render_midi(&scene, &mid, &out, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("did not land"), "{}", stderr(&o));
        hashes.push(stdout(&o));
        let s = read_f32(&out);
        for (x, got) in s.iter().enumerate() {
            // Tick i lands at i·2.5 samples, the nearest sample, halves
            // up: sample x holds the last tick at or before it.
            let i = (0..1500u64)
                .rev()
                .find(|i| (i * 5).div_ceil(2) <= x as u64)
                .unwrap();
            assert_eq!(*got, (i % 128) as f32, "block {b}, sample {x}");
        }
    }
    assert_eq!(hashes[0], hashes[1]);
}

/// A live session played by a MIDI file through `--midi file:`: each CC
/// is heard from the sample the journal says it landed on, the monitor
/// prints every message (the unmapped one as the entry that would map
/// it), and the session replays bit for bit.
#[test]
fn a_session_played_through_a_file_port_lands_each_message_and_replays() {
    let dir = temp_dir("midi-live");
    let scene = dir.join("live.json");
    std::fs::write(
        &scene,
        r#"{"version": "1.0", "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.0}}],
 "outputs": {"main": "d"},
 "controls": [{"midi": {"cc": 74}, "node": "d", "param": "value", "min": 0, "max": 0.5}]}"#,
    )
    .unwrap();
    // 96 PPQ at 120 bpm (1/192 s a tick): CC 74 at 0.1 s, 0.25 s, 0.4 s,
    // and CC 10 (mapped by nothing) at 0.5 s.
    let mid = dir.join("take.mid");
    let t = track(&[
        (19, vec![0xb0, 74, 32]),
        (29, vec![0xb0, 74, 127]),
        (29, vec![0xb0, 74, 64]),
        (19, vec![0xb0, 10, 5]),
    ]);
    std::fs::write(&mid, smf(96, &[t])).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("take.jsonl"));
    let port = format!("file:{}", mid.display());
    let o = morphrt(&[
        "-v",
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
    assert!(log.contains("MIDI: listening on file:"), "{log}");
    assert!(log.contains("cc 74 = 32 ch 1"), "{log}");
    assert!(
        log.contains("cc 10 = 5 ch 1 (unmapped; to map it: {\"midi\": {\"cc\": 10"),
        "{log}"
    );
    let played = read_f32(&cap);
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["type"] == "control")
        .collect();
    assert_eq!(records.len(), 3, "{records:?}");
    let mut last = 0.0f32;
    for (r, cc) in records.iter().zip([32.0, 127.0, 64.0]) {
        let at = r["at"].as_u64().unwrap() as usize;
        let want = (0.5 * cc / 127.0) as f32;
        // The capture is stereo (a mono bus feeds both channels).
        assert_eq!(played[2 * (at - 1)], last, "before {at}: {log}");
        assert!(
            (played[2 * at] - want).abs() < 1e-6,
            "at {at}: {} vs {want}",
            played[2 * at]
        );
        last = played[2 * at];
    }
    common::assert_replays(&journal, &cap, &log);
}

#[test]
fn a_scene_that_maps_no_midi_is_warned_about_when_run_with_midi() {
    let dir = temp_dir("midi-unmapped");
    let mid = dir.join("one.mid");
    std::fs::write(&mid, smf(96, &[track(&[(0, vec![0xb0, 74, 1])])])).unwrap();
    let port = format!("file:{}", mid.display());
    let o = morphrt(&[
        "run",
        "scenes/drone.json",
        "--device",
        "clock",
        "--midi",
        &port,
        "--duration",
        "200ms",
        "--no-journal",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the scene maps no MIDI"),
        "{}",
        stderr(&o)
    );
}

/// A render that reads an input and a MIDI file says what each did: the
/// input's line (with the length) and the MIDI file's summary.
#[test]
fn a_render_with_an_input_and_a_midi_file_reports_both() {
    let (dir, _, mid) = setup("midi-and-input");
    let tone = dir.join("tone.json");
    std::fs::write(
        &tone,
        r#"{"version": "1.0", "nodes": [{"id": "s", "op": "sine", "params": {"freq": "220Hz", "amp": 0.5}}],
            "outputs": {"main": ["s"]}}"#,
    )
    .unwrap();
    let wav = dir.join("in.wav");
    let made = morphrt(&[
        "render",
        tone.to_str().unwrap(),
        "-o",
        wav.to_str().unwrap(),
        "-d",
        "1s",
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    let scene = dir.join("both.json");
    std::fs::write(
        &scene,
        r#"{"version": "1.0", "sample_rate": 48000,
            "nodes": [{"id": "mic", "op": "input", "params": {"channel": 0}},
                      {"id": "cc", "op": "dc", "params": {"value": 0}}],
            "outputs": {"main": ["mic", "cc"]},
            "controls": [{"midi": {"cc": 74, "channel": 1}, "node": "cc", "param": "value", "min": 0, "max": 1}]}"#,
    )
    .unwrap();
    let out = dir.join("out.wav");
    let o = common::render_midi(&scene, &mid, &out, &["--input", wav.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("midi from "), "no MIDI summary:\n{err}");
    assert!(err.contains("input"), "no input line:\n{err}");
}

/// A MIDI CC mapped onto an oscillator's `freq` whose range reaches past
/// Nyquist: the first value above it is warned, once for the node, live
/// (`run --midi file:`, on the control thread) and offline (`render
/// --midi`), however many follow; values below it draw nothing.
#[test]
fn a_midi_control_reaching_above_nyquist_is_warned_once_per_node() {
    let dir = temp_dir("midi-alias");
    let scene = dir.join("alias.json");
    // CC 74 spans 0 … 38100 Hz: value v is 300 · v Hz, past 24 kHz from 81.
    std::fs::write(
        &scene,
        r#"{"version": "1.0", "sample_rate": 48000,
 "nodes": [{"id": "o", "op": "sine", "params": {"freq": "440Hz", "amp": 0.1}}],
 "outputs": {"main": ["o"]},
 "controls": [{"midi": {"cc": 74}, "node": "o", "param": "freq", "min": 0, "max": 38100}]}"#,
    )
    .unwrap();
    // At 120 bpm and 96 PPQ a tick is 1/192 s: values 10, 100, 127, 90, …
    // a tick apart, then 20 more above Nyquist.
    let mut events = vec![(4, vec![0xb0, 74, 10]), (4, vec![0xb0, 74, 100])];
    for i in 0..20u8 {
        events.push((2, vec![0xb0, 74, 90 + i]));
    }
    let mid = dir.join("sweep.mid");
    std::fs::write(&mid, smf(96, &[track(&events)])).unwrap();
    let port = format!("file:{}", mid.display());
    let live = morphrt(&[
        "run",
        scene.to_str().unwrap(),
        "--device",
        "clock",
        "--midi",
        &port,
        "--duration",
        "600ms",
        "--no-journal",
    ]);
    let out = dir.join("out.wav");
    let offline = morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "--midi",
        mid.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-d",
        "600ms",
    ]);
    for o in [&live, &offline] {
        let err = stderr(o);
        assert!(o.status.success(), "{err}");
        assert_eq!(err.matches("a control sets").count(), 1, "{err}");
        // The first above Nyquist is CC value 100: 30000 Hz, alias 18000 Hz.
        assert!(
            err.contains("node `o`: a control sets `freq` 30000 Hz is above Nyquist (24000 Hz at 48000 Hz): the oscillator plays its alias, 18000 Hz"),
            "{err}"
        );
    }
}
