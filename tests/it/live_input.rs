//! `run --input FILE.wav`: a file played into the scene's input nodes on
//! the clock device is what `render --input` of the same file writes, bit
//! for bit; edits and profile switches while it plays replay identically
//! from the journal's recorded input; a recorded input that is missing or
//! changed is refused; an i16 source is recorded as 16-bit integers.

use crate::support as common;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A scene whose output depends on the input's past: a filtered channel 1
/// plus a delayed channel 0, with a noise bed.
fn scene(cutoff: &str, extra: bool) -> String {
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000, "seed": 9,
  "profile_config": {{ "block_size": 64 }},
  "nodes": [
    {{ "id": "left", "op": "input", "params": {{ "channel": 0 }} }},
    {{ "id": "right", "op": "input", "params": {{ "channel": 1 }} }},
    {{ "id": "lp", "op": "onepole", "params": {{ "cutoff": "{cutoff}" }} }},
    {{ "id": "echo", "op": "delay", "params": {{ "time": "30ms", "max_time": "100ms", "feedback": 0.4 }} }},
    {{ "id": "sum", "op": "mix" }}{}
  ],
  "edges": [ {{ "from": "right", "to": "lp" }}, {{ "from": "left", "to": "echo" }},
             {{ "from": "lp", "to": "sum:in0" }}, {{ "from": "echo", "to": "sum:in1" }} ],
  "outputs": {{ "main": ["sum"] }} }}
"#,
        if extra {
            r#",
    { "id": "hum", "op": "sine", "params": { "freq": "60Hz", "amp": 0.05 } }"#
        } else {
            ""
        }
    )
}

/// A stereo 16-bit WAV of `seconds` of two unrelated signals.
fn write_input(path: &Path, seconds: f64, bits: u16) {
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 48_000,
        bits_per_sample: bits,
        sample_format: hound::SampleFormat::Int,
    };
    let full = ((1i64 << (bits - 1)) - 1) as f64;
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    let mut x = 7u32;
    for n in 0..(seconds * 48_000.0) as u64 {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let noise = (x >> 8) as f64 / (1u32 << 24) as f64 - 0.5;
        w.write_sample((libm::sin(n as f64 * 0.021) * 0.6 * full) as i32)
            .unwrap();
        w.write_sample((noise * 0.8 * full) as i32).unwrap();
    }
    w.finalize().unwrap();
}

/// `morphrt render SCENE --input INPUT -d 1.5s` under `profile`: the file it writes.
fn rendered(scene: &Path, profile: &str, input: &Path, dir: &Path) -> Vec<f32> {
    let out = dir.join(format!("{profile}.render.wav"));
    let o = common::morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "--profile",
        profile,
        "--input",
        input.to_str().unwrap(),
        "-d",
        "1.5s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    common::read_f32(&out)
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

fn run_to_end(scene: &Path, args: &[&str]) -> String {
    let (mut child, lines) = common::run_clock(scene, args);
    let status = child.wait().unwrap();
    let log: Vec<String> = lines.iter().collect();
    let log = log.join("\n");
    assert!(status.success(), "{log}");
    log
}

#[test]
fn run_with_an_input_file_equals_the_offline_render_in_every_profile() {
    let dir = common::temp_dir("input-render");
    let input = dir.join("in.wav");
    write_input(&input, 1.0, 16);
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    for profile in ["strict", "repro", "live"] {
        let capture = dir.join(format!("{profile}.wav"));
        let journal = dir.join(format!("{profile}.jsonl"));
        let log = run_to_end(
            &path,
            &[
                "--profile",
                profile,
                "--input",
                input.to_str().unwrap(),
                "--capture",
                capture.to_str().unwrap(),
                "--journal",
                journal.to_str().unwrap(),
                "--duration",
                "1.5s",
                "--no-watch",
            ],
        );
        assert!(
            log.contains("input `"),
            "the end of the file is said: {log}"
        );
        let played = common::read_f32(&capture);
        assert_eq!(played.len(), 72_000 * 2, "{log}");
        // The scene's main bus is mono: the device plays it on both channels.
        let mono = rendered(&path, profile, &input, &dir);
        let want: Vec<f32> = mono.iter().flat_map(|&x| [x, x]).collect();
        assert!(
            bits(&played) == bits(&want),
            "{profile}: the session differs from the offline render; log:\n{log}"
        );
        common::assert_replays(&journal, &capture, &log);
    }
}

/// A session with a param edit, a structural edit and switches by key
/// while the input plays.
fn record_with_edits(dir: &Path) -> (PathBuf, PathBuf, String) {
    let input = dir.join("in.wav");
    write_input(&input, 8.0, 24);
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    let capture = dir.join("take.wav");
    let journal = dir.join("j").join("take.jsonl");
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--input",
            input.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    let pause = Duration::from_millis(300);
    common::save_as_editor(&path, &scene("600Hz", false), pause);
    common::wait_line(&lines, "edit applied", &mut log);
    common::save_as_editor(&path, &scene("600Hz", true), pause);
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(pause);
    let log = common::press_then_quit(
        &mut child,
        &lines,
        log,
        &[
            ("l", "switched repro → live"),
            ("s", "switched live → strict"),
            ("r", "switched strict → repro"),
        ],
    );
    (journal, capture, log)
}

#[test]
fn edits_and_switches_while_the_input_plays_replay_bit_for_bit() {
    let dir = common::temp_dir("input-edits");
    let (journal, capture, log) = record_with_edits(&dir);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.contains(r#""type":"input""#), "{text}");
    assert!(text.contains(r#""type":"input_end""#), "{text}");
    assert_eq!(text.matches(r#""type":"handover""#).count(), 5, "{text}");
    common::assert_replays(&journal, &capture, &log);

    // The recorded input is needed, as it was: missing or changed, refused.
    let recorded = journal.with_file_name("take.input.wav");
    let out = dir.join("again.wav");
    let replay = || {
        common::morphrt(&[
            "replay",
            journal.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let kept = std::fs::read(&recorded).unwrap();
    let mut changed = kept.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    std::fs::write(&recorded, &changed).unwrap();
    let o = replay();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("take.input.wav") && err.contains("changed"),
        "{err}"
    );
    std::fs::remove_file(&recorded).unwrap();
    let o = replay();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("take.input.wav"), "{err}");
    assert!(!out.exists(), "nothing was written");
}

#[test]
fn a_recorded_i16_input_is_stored_as_16_bit_integers_exactly() {
    let dir = common::temp_dir("input-i16");
    let input = dir.join("in.wav");
    write_input(&input, 0.5, 16);
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    let journal = dir.join("take.jsonl");
    run_to_end(
        &path,
        &[
            "--input",
            input.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--duration",
            "0.75s",
            "--no-watch",
        ],
    );
    let mut rec = hound::WavReader::open(dir.join("take.input.wav")).unwrap();
    let spec = rec.spec();
    assert_eq!(
        (spec.bits_per_sample, spec.sample_format, spec.channels),
        (16, hound::SampleFormat::Int, 2)
    );
    let got: Vec<i32> = rec.samples::<i32>().map(Result::unwrap).collect();
    let want: Vec<i32> = hound::WavReader::open(&input)
        .unwrap()
        .samples::<i32>()
        .map(Result::unwrap)
        .collect();
    assert!(got.len() >= 36_000 * 2, "{} samples", got.len());
    assert_eq!(got[..want.len()], want[..], "the source's values, exactly");
    assert!(
        got[want.len()..].iter().all(|&v| v == 0),
        "silence after its end"
    );
}

#[test]
fn an_input_with_too_few_channels_is_refused() {
    let dir = common::temp_dir("input-refused");
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    let mono = dir.join("mono.wav");
    common::write_mono_f32(&mono, &[0.1; 4800]);
    let o = common::morphrt(&[
        "run",
        path.to_str().unwrap(),
        "--device",
        "clock",
        "--input",
        mono.to_str().unwrap(),
        "--no-journal",
        "--duration",
        "0.1s",
    ]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for s in ["mono.wav", "1 channel", "at least 2 channels"] {
        assert!(err.contains(s), "`{s}` in: {err}");
    }
}

/// A session resumed from a snapshot reads its input from the resumed
/// clock on; its journal records where, and the replay, fed the recorded
/// input from there, is the capture bit for bit — with an edit on the way.
#[test]
fn a_resumed_session_with_input_replays_bit_for_bit() {
    let dir = common::temp_dir("input-resume");
    let input = dir.join("in.wav");
    write_input(&input, 2.0, 24);
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    let snap = dir.join("snap.json");
    let o = common::morphrt(&[
        "render",
        path.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "-d",
        "1001ms",
        "-o",
        dir.join("first.wav").to_str().unwrap(),
        "--snapshot-at",
        "1001ms",
        "--snapshot-out",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let capture = dir.join("take.wav");
    let journal = dir.join("take.jsonl");
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--resume",
            snap.to_str().unwrap(),
            "--input",
            input.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    common::save_as_editor(&path, &scene("700Hz", false), Duration::from_millis(300));
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(Duration::from_millis(300));
    let log = common::press_then_quit(&mut child, &lines, log, &[]);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(
        text.contains(r#""start":48048"#),
        "the input starts at the resumed clock: {text}"
    );
    common::assert_replays(&journal, &capture, &log);
}

/// 8- and 32-bit sources are recorded in their own format too, exactly,
/// so a strict session on them replays bit for bit.
#[test]
fn eight_and_thirty_two_bit_inputs_are_recorded_exactly_and_replay_under_strict() {
    for bits in [8u16, 32] {
        let dir = common::temp_dir(&format!("input-i{bits}"));
        let input = dir.join("in.wav");
        write_input(&input, 0.5, bits);
        let path = dir.join("scene.json");
        std::fs::write(&path, scene("1.5kHz", false)).unwrap();
        let journal = dir.join("take.jsonl");
        let capture = dir.join("take.wav");
        let log = run_to_end(
            &path,
            &[
                "--profile",
                "strict",
                "--input",
                input.to_str().unwrap(),
                "--journal",
                journal.to_str().unwrap(),
                "--capture",
                capture.to_str().unwrap(),
                "--duration",
                "0.75s",
                "--no-watch",
            ],
        );
        assert!(!log.contains("recorded as 32-bit float"), "{log}");
        let mut rec = hound::WavReader::open(dir.join("take.input.wav")).unwrap();
        let spec = rec.spec();
        assert_eq!(
            (spec.bits_per_sample, spec.sample_format),
            (bits, hound::SampleFormat::Int),
            "{bits}-bit source"
        );
        let got: Vec<i32> = rec.samples::<i32>().map(Result::unwrap).collect();
        let want: Vec<i32> = hound::WavReader::open(&input)
            .unwrap()
            .samples::<i32>()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got[..want.len()], want[..], "{bits}-bit values, exactly");
        common::assert_replays(&journal, &capture, &log);
    }
}

/// A session with input killed outright (a crash, a power cut) leaves a
/// journal without its input's end record: the replay plays to the last
/// progress record with the input recorded so far, and is what the
/// capture holds, bit for bit.
#[test]
fn a_killed_session_with_input_replays_with_the_input_recorded_so_far() {
    let dir = common::temp_dir("input-killed");
    let input = dir.join("in.wav");
    write_input(&input, 6.0, 16);
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    let capture = dir.join("take.wav");
    let journal = dir.join("take.jsonl");
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--input",
            input.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--no-watch",
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    let progress = || {
        std::fs::read_to_string(&journal)
            .unwrap_or_default()
            .matches(r#""type":"progress""#)
            .count()
    };
    let start = std::time::Instant::now();
    while progress() < 3 {
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
    child.wait().unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(!text.contains(r#""type":"input_end""#), "{text}");
    let replayed = dir.join("r.wav");
    let o = common::morphrt(&[
        "replay",
        journal.to_str().unwrap(),
        "-o",
        replayed.to_str().unwrap(),
    ]);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    let rep = common::read_f32(&replayed);
    let cap = common::read_f32(&capture);
    assert!(
        rep.len() >= 2 * 48_000 * 2,
        "{} samples replayed",
        rep.len()
    );
    let n = rep.len().min(cap.len());
    assert!(n > 48_000 * 2, "the capture holds {} samples", cap.len());
    assert!(rep[..n] == cap[..n], "the replay differs from the capture");
}

/// The input recorded beside a journal is never the file the session
/// plays: the name is refused before anything is written (the journal
/// was created first and left behind).
#[test]
fn a_journal_whose_recorded_input_would_be_the_input_is_refused_up_front() {
    let dir = common::temp_dir("input-clash");
    let input = dir.join("take.input.wav");
    write_input(&input, 0.2, 16);
    let kept = std::fs::read(&input).unwrap();
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    let journal = dir.join("take.jsonl");
    let o = common::morphrt(&[
        "run",
        path.to_str().unwrap(),
        "--device",
        "clock",
        "--input",
        input.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--duration",
        "0.1s",
    ]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("take.input.wav"), "{err}");
    assert_eq!(
        std::fs::read(&input).unwrap(),
        kept,
        "the input is untouched"
    );
    assert!(!journal.exists(), "no journal is left behind");
    assert!(
        !dir.join("resources").exists(),
        "no resource copies are left behind"
    );
}

/// Starts `run` on `path` with `args` (the clock device, a capture and a
/// journal in `dir`), saves `edits` one after another, each waited for
/// with the line it must print, then a good edit (the filter moved), and
/// stops: the whole log.
fn edits_then_stop(
    dir: &Path,
    path: &Path,
    args: &[&str],
    edits: &[(String, &str)],
    good: &str,
) -> String {
    let (capture, journal) = (dir.join("cap.wav"), dir.join("j.jsonl"));
    let mut all = vec![
        "--capture",
        capture.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let (mut child, lines) = common::run_clock(path, &all);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    let pause = Duration::from_millis(300);
    for (text, says) in edits {
        common::save_as_editor(path, text, pause);
        common::wait_line(&lines, says, &mut log);
    }
    common::save_as_editor(path, good, pause);
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(pause);
    use std::io::Write;
    child.stdin.as_mut().unwrap().write_all(b"q\n").unwrap();
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let log = log.join("\n");
    assert!(status.success(), "{log}");
    common::assert_replays(&journal, &capture, &log);
    log
}

#[test]
fn an_edit_reading_an_input_channel_the_session_lacks_is_refused_and_the_graph_plays_on() {
    let dir = common::temp_dir("input-edit-channel");
    let input = dir.join("in.wav");
    write_input(&input, 3.0, 16);
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    // The same scene is refused at start-up, naming the channel.
    let seven = scene("1.5kHz", false).replace(r#""channel": 1"#, r#""channel": 7"#);
    let bad = dir.join("seven.json");
    std::fs::write(&bad, &seven).unwrap();
    let (mut child, lines) = common::run_clock(&bad, &["--input", input.to_str().unwrap()]);
    assert_eq!(child.wait().unwrap().code(), Some(2));
    let refused: Vec<String> = lines.iter().collect();
    let says = "node `right` reads input channel 7, but";
    assert!(refused.iter().any(|l| l.contains(says)), "{refused:?}");
    let log = edits_then_stop(
        &dir,
        &path,
        &["--input", input.to_str().unwrap(), "--profile", "repro"],
        &[(seven, "edit rejected; the running graph keeps playing")],
        &scene("600Hz", false),
    );
    assert!(
        log.contains("node `right` reads input channel 7, but the session's input has 2 channels"),
        "{log}"
    );
    assert!(log.contains("edits applied 1, rejected 1"), "{log}");
    // The input kept playing through the refused edit: the capture's
    // last half second is not silent.
    let played = common::read_f32(&dir.join("cap.wav"));
    let tail = &played[played.len() - 48_000..];
    assert!(tail.iter().any(|x| x.abs() > 0.01), "silent; log:\n{log}");
}

#[test]
fn an_edit_adding_an_input_node_to_a_session_without_input_is_refused() {
    let dir = common::temp_dir("input-edit-added");
    let path = dir.join("scene.json");
    let plain = r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "tone", "op": "sine", "params": { "freq": "220Hz", "amp": 0.2 } } ],
  "outputs": { "main": ["tone"] } }"#;
    std::fs::write(&path, plain).unwrap();
    let with_input = plain.replace(
        r#"{ "id": "tone""#,
        r#"{ "id": "mic", "op": "input", "params": { "channel": 0 } }, { "id": "tone""#,
    );
    let good = plain.replace("220Hz", "330Hz");
    let log = edits_then_stop(
        &dir,
        &path,
        &["--profile", "repro"],
        &[(with_input, "edit rejected; the running graph keeps playing")],
        &good,
    );
    assert!(
        log.contains("node `mic` reads the session's input, but this session started without one"),
        "{log}"
    );
    assert!(log.contains("edits applied 1, rejected 1"), "{log}");
}

#[test]
fn run_input_dash_says_run_reads_no_standard_input() {
    let dir = common::temp_dir("input-dash");
    let path = dir.join("scene.json");
    std::fs::write(&path, scene("1.5kHz", false)).unwrap();
    let (mut child, lines) = common::run_clock(&path, &["--input", "-", "--no-journal"]);
    assert_eq!(child.wait().unwrap().code(), Some(2));
    let log: Vec<String> = lines.iter().collect();
    let log = log.join("\n");
    assert!(
        log.contains("`run` reads no standard input as audio"),
        "{log}"
    );
    assert!(!log.contains("No such file"), "{log}");
}
