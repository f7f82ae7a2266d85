//! Journals and replay: a live session with every kind of edit, recorded by
//! `morphrt run --device clock --capture`, replays bit for bit; bad
//! journals get clear errors.

use crate::support as common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn write_ir(path: &Path, seed: u32) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    let mut x = seed;
    let mut env = 1.0f32;
    for _ in 0..2_000 {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let noise = (x >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
        w.write_sample(noise * env).unwrap();
        env *= 0.9975;
    }
    w.finalize().unwrap();
}

fn scene(profile: &str, gain: f64, extra: bool, bad: bool) -> String {
    format!(
        r#"{{
  "version": "1.0",
  "profile": "{profile}",
  "sample_rate": 48000,
  "seed": 5,
  "profile_config": {{ "block_size": 64 }},
  "nodes": [
    {{ "id": "osc", "op": "saw", "params": {{ "freq": "110Hz", "amp": 0.3 }} }},
    {{ "id": "hiss", "op": "noise", "params": {{ "amp": 0.05 }} }},
    {{ "id": "room", "op": "convolution", "params": {{ "ir": "@resource:ir.wav", "mix": 0.5 }} }},
    {{ "id": "out", "op": "{}", "params": {{ "gain": {gain} }} }}{}
  ],
  "edges": [ {{ "from": "osc", "to": "room" }}, {{ "from": "hiss", "to": "room" }},
             {{ "from": "room", "to": "out" }} ],
  "outputs": {{ "main": ["out"] }}
}}
"#,
        if bad { "gian" } else { "gain" },
        if extra {
            r#",
    { "id": "extra", "op": "sine", "params": { "freq": "3Hz" } }"#
        } else {
            ""
        }
    )
}

fn wav(path: &Path) -> Vec<f32> {
    hound::WavReader::open(path)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect()
}

fn morphrt(args: &[&str]) -> std::process::Output {
    common::bin().args(args).output().unwrap()
}

/// A recorded session: every kind of edit, then `q`.
fn record(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let res = dir.join("resources");
    std::fs::create_dir_all(&res).unwrap();
    write_ir(&res.join("ir.wav"), 1);
    let path = dir.join("scene.json");
    let journal = dir.join("journal").join("session.jsonl");
    let capture = dir.join("cap.wav");
    std::fs::write(&path, scene("repro", 0.5, false, false)).unwrap();
    let mut child = common::bin()
        .args(["run", path.to_str().unwrap(), "--device", "clock"])
        .arg("--capture")
        .arg(&capture)
        .arg("--journal")
        .arg(&journal)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map(common::KillOnDrop)
        .unwrap();
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    let save = |text: String| {
        std::thread::sleep(Duration::from_millis(150));
        let tmp = dir.join("scene.json.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    };
    save(scene("repro", 0.4, false, false)); // a param change
    common::wait_line(&lines, "edit applied", &mut log);
    save(scene("repro", 0.4, true, false)); // an added node
    common::wait_line(&lines, "edit applied", &mut log);
    save(scene("repro", 0.4, false, false)); // a removed node
    common::wait_line(&lines, "edit applied", &mut log);
    save(scene("repro", 0.4, false, true)); // a bad edit
    common::wait_line(&lines, "edit rejected", &mut log);
    save(scene("live", 0.4, false, false)); // a profile switch by the file
    common::wait_line(&lines, "switched repro → live", &mut log);
    std::thread::sleep(Duration::from_millis(150));
    writeln!(child.stdin.as_mut().unwrap(), "s").unwrap(); // … and by command
    common::wait_line(&lines, "switched live → strict", &mut log);
    std::thread::sleep(Duration::from_millis(150));
    let tmp = res.join("ir.wav.tmp");
    write_ir(&tmp, 2); // a resource replaced
    std::fs::rename(&tmp, res.join("ir.wav")).unwrap();
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(Duration::from_millis(200));
    writeln!(child.stdin.as_mut().unwrap(), "q").unwrap();
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    assert!(status.success(), "{}", log.join("\n"));
    (journal, capture)
}

#[test]
fn a_recorded_session_replays_bit_for_bit() {
    let dir = common::temp_dir("replay");
    let (journal, capture) = record(&dir);
    let cap = wav(&capture);
    let out = dir.join("replayed.wav");
    let o = morphrt(&[
        "replay",
        journal.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rep = wav(&out);
    assert_eq!(rep.len(), cap.len(), "replayed length");
    assert!(rep == cap, "the replay differs from what the device played");

    // The timeline names every edit, switch and rejection.
    let o = morphrt(&["replay", "--info", journal.to_str().unwrap()]);
    let info = String::from_utf8_lossy(&o.stdout);
    assert_eq!(info.matches("  edit (").count(), 4, "{info}");
    assert!(
        info.contains("switch repro → live") && info.contains("switch live → strict"),
        "{info}"
    );
    assert!(info.contains("rejected edit"), "{info}");
    assert!(
        info.contains("stop (fade") && info.contains("end ("),
        "{info}"
    );

    // Cut after the third edit: replays up to that point, bit for bit.
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut kept = Vec::new();
    let mut handovers = 0;
    for l in text.lines() {
        kept.push(l);
        if l.contains(r#""type":"handover""#) {
            handovers += 1;
            if handovers == 3 {
                break;
            }
        }
    }
    let cut = journal.with_file_name("cut.jsonl");
    std::fs::write(&cut, kept.join("\n") + "\n").unwrap();
    let out = dir.join("cut.wav");
    let o = morphrt(&["replay", cut.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("no end record"), "says it was cut off: {err}");
    let part = wav(&out);
    assert!(
        part.len() > 48_000 && part.len() < cap.len(),
        "{}",
        part.len()
    );
    assert!(
        part[..] == cap[..part.len()],
        "the cut replay differs from the capture"
    );
}

#[test]
fn bad_journals_get_clear_errors() {
    let dir = common::temp_dir("bad-journals");
    let (journal, _) = record(&dir);
    let text = std::fs::read_to_string(&journal).unwrap();
    let out = dir.join("x.wav");
    let replay = |name: &str, content: &str| {
        let p = journal.with_file_name(name);
        std::fs::write(&p, content).unwrap();
        let o = morphrt(&["replay", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // Cut mid-record (a killed session): a warning, and it still replays.
    let (code, err) = replay("cut.jsonl", &text[..text.len() - 40]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("ends in the middle of a record"), "{err}");
    // Corrupted in the middle: an error naming the line.
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{ this is not json";
    let (code, err) = replay("corrupt.jsonl", &lines.join("\n"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("corrupt.jsonl:3"), "{err}");
    // Another format version.
    let (code, err) = replay(
        "version.jsonl",
        &text.replacen(r#""version":1"#, r#""version":99"#, 1),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("version 99"), "{err}");
    // Not a journal at all.
    let (code, err) = replay("empty.jsonl", "");
    assert_eq!(code, Some(2), "{err}");
    // A missing or changed resource copy.
    let store = journal.parent().unwrap().join("resources");
    let copies: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(copies.len(), 2, "two versions of the impulse response kept");
    let victim = &copies[0];
    let saved = std::fs::read(victim).unwrap();
    std::fs::write(victim, b"RIFF").unwrap();
    let (code, err) = replay("changed.jsonl", &text);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has changed"), "{err}");
    std::fs::remove_file(victim).unwrap();
    let (code, err) = replay("missing.jsonl", &text);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be read"), "{err}");
    std::fs::write(victim, saved).unwrap();
}

/// `w` while playing writes a snapshot beside the journal; `run --resume`
/// starts from it, plays exactly what `render --resume` renders, and its
/// journal replays bit for bit.
#[test]
fn w_writes_a_snapshot_and_run_resumes_from_it() {
    let dir = common::temp_dir("w-resume");
    let path = dir.join("scene.json");
    std::fs::copy(common::root().join("scenes/pluck-delay.json"), &path).unwrap();
    let journal = dir.join("j").join("first.jsonl");
    let mut child = common::bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--device",
            "clock",
            "--journal",
        ])
        .arg(&journal)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map(common::KillOnDrop)
        .unwrap();
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    std::thread::sleep(Duration::from_millis(300));
    writeln!(child.stdin.as_mut().unwrap(), "w").unwrap();
    common::wait_line(&lines, "snapshot at", &mut log);
    writeln!(child.stdin.as_mut().unwrap(), "q").unwrap();
    assert!(child.wait().unwrap().success());
    let snap = std::fs::read_dir(journal.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".snapshot.json"))
        .unwrap_or_else(|| panic!("no snapshot file; log:\n{}", log.join("\n")));
    let info = morphrt(&["replay", "--info", journal.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("snapshot "));

    // The same second from the snapshot: offline, and played.
    let rendered = dir.join("rendered.wav");
    let o = morphrt(&[
        "render",
        path.to_str().unwrap(),
        "--resume",
        snap.to_str().unwrap(),
        "-d",
        "1s",
        "-o",
        rendered.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cap = dir.join("cap.wav");
    let second = dir.join("j").join("second.jsonl");
    let o = common::bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--device",
            "clock",
            "--duration",
            "1s",
        ])
        .arg("--resume")
        .arg(&snap)
        .arg("--capture")
        .arg(&cap)
        .arg("--journal")
        .arg(&second)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("resuming"), "{err}");
    let played = wav(&cap);
    let offline = wav(&rendered);
    assert_eq!(played.len(), 2 * offline.len(), "stereo device, mono scene");
    let left: Vec<f32> = played.iter().step_by(2).copied().collect();
    assert!(
        left == offline,
        "run --resume played what render --resume renders"
    );
    let out = dir.join("replayed.wav");
    let o = morphrt(&[
        "replay",
        second.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        wav(&out) == played,
        "the resumed session replays bit for bit"
    );
}

/// A short session of `sampler-groove` (it reads `resources/kick.wav`),
/// journaled to `dir/j/session.jsonl`.
fn short_session(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    std::fs::copy(
        common::root().join("resources/kick.wav"),
        dir.join("resources/kick.wav"),
    )
    .unwrap();
    let scene = dir.join("groove.json");
    std::fs::copy(common::root().join("scenes/sampler-groove.json"), &scene).unwrap();
    let journal = dir.join("j").join("session.jsonl");
    let o = common::bin()
        .args(["run", scene.to_str().unwrap(), "--device", "clock"])
        .args(["--duration", "0.1s", "--no-watch", "--journal"])
        .arg(&journal)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    journal
}

/// `morphrt replay JOURNAL -o OUT` in `dir`, as `uid` when given.
fn replay_to(dir: &Path, journal: &Path, out: &Path, uid: Option<u32>) -> std::process::Output {
    let mut c = common::bin();
    c.arg("replay")
        .arg(journal)
        .arg("-o")
        .arg(out)
        .current_dir(dir);
    if let Some(uid) = uid {
        use std::os::unix::process::CommandExt;
        c.uid(uid).gid(uid);
    }
    c.output().unwrap()
}

// `replay j.jsonl -o j.jsonl` replaced the journal with a WAV and exited 0;
// so would a copy in its resource store have been replaced.
#[test]
fn replay_never_writes_over_its_journal_or_its_copies() {
    let dir = common::temp_dir("replay-inputs");
    let journal = short_session(&dir);
    let before = std::fs::read(&journal).unwrap();
    std::os::unix::fs::symlink("session.jsonl", journal.with_file_name("link.wav")).unwrap();
    let store = journal.with_file_name("resources");
    let copy = std::fs::read_dir(&store).unwrap().next().unwrap().unwrap();
    let copy = copy.path();
    let kept = std::fs::read(&copy).unwrap();
    for (out, needle) in [
        (journal.clone(), "is the journal"),
        (journal.with_file_name("link.wav"), "is the journal"),
        (copy.clone(), "is the journal's copy"),
    ] {
        let o = replay_to(&dir, &journal, &out, None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "-o {}: {err}", out.display());
        assert!(err.contains(needle), "-o {}: {err}", out.display());
    }
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "the journal changed"
    );
    assert_eq!(std::fs::read(&copy).unwrap(), kept, "the copy changed");
    assert!(common::partials(journal.parent().unwrap()).is_empty());
    assert!(common::partials(&store).is_empty());
}

// `replay -o x.mp3` and `-o out` wrote a WAV under a name that says
// otherwise; only `render` refused them.
#[test]
fn replay_writes_wav_names_only() {
    let dir = common::temp_dir("replay-names");
    let journal = short_session(&dir);
    for (out, needle) in [
        ("x.mp3", "names a `.mp3` file"),
        ("out", "has no extension"),
    ] {
        let o = replay_to(&dir, &journal, Path::new(out), None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "-o {out}: {err}");
        assert!(err.contains(needle), "{err}");
        assert!(err.contains("replay writes WAV files"), "{err}");
        assert!(!dir.join(out).exists(), "-o {out} was written");
    }
    let o = replay_to(&dir, &journal, Path::new("ok.WAV"), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!wav(&dir.join("ok.WAV")).is_empty());
}

// `replay -o /dev/full` does not exit 0 or replace the device with a
// regular file (as root): devices are streamed to in place, and a write
// error is exit 1 naming the path. The system's devices
// are written only as a normal user; as root, the test makes its own.
#[test]
fn replay_streams_to_devices_and_reports_write_errors() {
    let dir = common::temp_dir("replay-devices");
    let journal = short_session(&dir);
    let o = replay_to(&dir, &journal, Path::new("ref.wav"), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let user = common::is_root().then_some(65534);
    let o = replay_to(&dir, &journal, Path::new("/dev/null"), user);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = replay_to(&dir, &journal, Path::new("/dev/full"), user);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write `/dev/full`"), "{err}");
    assert!(common::partials(Path::new("/dev")).is_empty());

    // Standard output takes the same bytes as the file.
    let o = common::bin()
        .args(["replay", journal.to_str().unwrap(), "-o", "-"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success());
    let file = std::fs::read(dir.join("ref.wav")).unwrap();
    assert!(o.stdout == file, "-o - differs from the file");

    if common::is_root() {
        common::memory_devices(&dir);
        assert!(replay_to(&dir, &journal, Path::new("null"), None)
            .status
            .success());
        let o = replay_to(&dir, &journal, Path::new("full"), None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot write `full`"), "{err}");
        common::assert_still_devices(&dir);
    }
}

/// `replay` and `replay --info` of `journal`: exit code and stderr.
fn replay_damaged(journal: &Path) -> Vec<(Option<i32>, String)> {
    let out = journal.with_file_name("out.wav");
    let info = morphrt(&["replay", "--info", journal.to_str().unwrap()]);
    let o = morphrt(&[
        "replay",
        journal.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    if o.status.success() {
        std::fs::remove_file(&out).unwrap();
    }
    assert!(!out.exists(), "a refused replay writes nothing");
    [info, o]
        .iter()
        .map(|o| {
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        })
        .collect()
}

/// A byte that is not UTF-8 text is refused naming its line and where in
/// the line it is, not as a stream that "did not contain valid UTF-8".
#[test]
fn a_journal_line_that_is_not_utf8_is_named() {
    let dir = common::temp_dir("journal-not-utf8");
    let journal = short_session(&dir);
    let mut bytes = std::fs::read(&journal).unwrap();
    let second = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
    bytes[second + 3] = 0xff;
    let bad = journal.with_file_name("bad.jsonl");
    std::fs::write(&bad, bytes).unwrap();
    for (code, err) in replay_damaged(&bad) {
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("bad.jsonl:2:"), "{err}");
        assert!(err.contains("byte 4 of the line is not UTF-8"), "{err}");
    }
}

/// A header whose device had no channels, or more than any device has, is
/// refused naming the line, rather than panicking (0) or replaying into
/// gigabytes of silence.
#[test]
fn a_journal_header_with_impossible_channels_is_refused() {
    let dir = common::temp_dir("journal-channels");
    let journal = short_session(&dir);
    let text = std::fs::read_to_string(&journal).unwrap();
    for channels in ["0", "65536", "18446744073709551615"] {
        let t = text.replacen("\"channels\":2", &format!("\"channels\":{channels}"), 1);
        assert_ne!(t, text);
        let bad = journal.with_file_name("bad.jsonl");
        std::fs::write(&bad, t).unwrap();
        let (code, err) = replay_damaged(&bad).pop().unwrap();
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("bad.jsonl:1:"), "{err}");
        assert!(err.contains(&format!("`channels` is {channels}")), "{err}");
    }
}

/// A session longer than a render may be (a damaged end record) is refused
/// with the limit and what to do, rather than overflowing or allocating
/// terabytes; a damaged fade does not overflow either.
#[test]
fn a_journal_longer_than_the_render_limit_is_refused() {
    let dir = common::temp_dir("journal-too-long");
    let journal = short_session(&dir);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.contains("\"frames\":4800"), "{text}");
    let bad = journal.with_file_name("bad.jsonl");
    for frames in ["18446744073709551615", "4294967296000"] {
        std::fs::write(
            &bad,
            text.replacen("\"frames\":4800", &format!("\"frames\":{frames}"), 1),
        )
        .unwrap();
        let (code, err) = replay_damaged(&bad).pop().unwrap();
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("bad.jsonl"), "{err}");
        assert!(err.contains(&format!("{frames} frames long")), "{err}");
        assert!(err.contains("--until"), "{err}");
    }
    let end = text.rfind("{\"type\":\"end\"").unwrap();
    let stop = format!(
        "{}{{\"type\":\"stop\",\"at\":100,\"fade\":18446744073709551615}}\n",
        &text[..end]
    );
    std::fs::write(&bad, stop).unwrap();
    for (code, err) in replay_damaged(&bad) {
        assert!(matches!(code, Some(0 | 2)), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A session whose scene gives no seed, switched to live and then edited
/// to draw noise: live picks a seed for the edit, the session's own, and
/// the journal keeps it, so `replay` plays the same noise every time (it
/// once picked one from the clock at each replay).
#[test]
fn noise_an_edit_adds_under_live_without_a_seed_replays_bit_for_bit() {
    let dir = common::temp_dir("replay-auto-seed");
    let path = dir.join("scene.json");
    let sine = r#"{ "id": "o", "op": "sine", "params": { "freq": "220Hz", "amp": 0.1 } }"#;
    std::fs::write(
        &path,
        format!(r#"{{ "version": "1.0", "nodes": [ {sine} ], "outputs": {{ "main": ["o"] }} }}"#),
    )
    .unwrap();
    let journal = dir.join("j").join("take.jsonl");
    let capture = dir.join("cap.wav");
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    use std::io::Write;
    writeln!(child.stdin.as_mut().unwrap(), "l").unwrap();
    common::wait_line(&lines, "switched repro → live", &mut log);
    let noise = r#"{ "id": "n", "op": "noise", "params": { "amp": 0.1 } }"#;
    common::save_as_editor(
        &path,
        &format!(
            r#"{{ "version": "1.0", "nodes": [ {sine}, {noise} ], "edges": [ {{ "from": "n", "to": "o:freq" }} ], "outputs": {{ "main": ["o"] }} }}"#
        ),
        std::time::Duration::from_millis(500),
    );
    common::wait_line(&lines, "edit applied", &mut log);
    let all = common::press_then_quit(&mut child, &lines, log, &[]);
    assert!(all.contains("live chose seed"), "{all}");
    for _ in 0..2 {
        common::assert_replays(&journal, &capture, &all);
    }
}
