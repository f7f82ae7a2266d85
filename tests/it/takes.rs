//! A take survives its end, however it comes: a stop signal (SIGINT,
//! SIGTERM, SIGHUP) stops `morphrt run` as `q` does — the capture and the
//! journal finished, exit 128 + the signal — and after a SIGKILL the
//! capture is a valid WAV and the journal replays up to its last progress
//! record, bit for bit what the capture holds.

use crate::support as common;

use common::KillOnDrop;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// A second of audio at the scene's rate.
const SECOND: usize = 48_000;

/// A `run` of a copy of `scenes/drone.json` on the clock device, with
/// `--capture take.wav` and `--journal j/take.jsonl` in `dir`, stdin a pipe
/// (not a terminal); the stop signals have their default action, whatever
/// the test runner's were, except `ignore`.
fn start(dir: &Path, ignore: Option<libc::c_int>) -> (KillOnDrop, Receiver<String>) {
    std::fs::copy(common::root().join("scenes/drone.json"), dir.join("s.json")).unwrap();
    let mut c = common::bin();
    c.args(["run", "s.json", "--device", "clock"])
        .args(["--capture", "take.wav", "--journal", "j/take.jsonl"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            if let Some(s) = ignore {
                libc::signal(s, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    let mut child = KillOnDrop(c.spawn().unwrap());
    let lines = common::stderr_lines(&mut child);
    (child, lines)
}

/// The samples of the journal's progress records so far.
fn progress(journal: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(journal).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "progress")
        .map(|v| v["at"].as_u64().unwrap())
        .collect()
}

/// Waits until the journal says the session has played `seconds`.
fn wait_progress(journal: &Path, seconds: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while progress(journal)
        .last()
        .is_none_or(|&at| at < (seconds * SECOND) as u64)
    {
        assert!(Instant::now() < deadline, "no progress to {seconds} s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Saves an edit of the scene's output gain (a param change), as an
/// editor does: a new file renamed over the old one.
fn edit_gain(dir: &Path) {
    let path = dir.join("s.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replace(r#""gain": "-3dB""#, r#""gain": "-9dB""#);
    assert_ne!(text, edited);
    std::fs::write(dir.join("s.json.tmp"), edited).unwrap();
    std::fs::rename(dir.join("s.json.tmp"), &path).unwrap();
}

fn wav(path: &Path) -> Vec<u32> {
    hound::WavReader::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .samples::<f32>()
        .map(|s| s.unwrap().to_bits())
        .collect()
}

/// `morphrt replay` (`args` after the subcommand) in `dir`.
fn replay(dir: &Path, args: &[&str]) -> std::process::Output {
    common::bin()
        .arg("replay")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Sends `signal` to the child.
fn kill(child: &KillOnDrop, signal: libc::c_int) {
    // SAFETY: kill() with our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

// SIGTERM, SIGHUP and SIGINT each stop the session as `q` does (the
// capture is not lost with the process) and exit 128 + n (not 0), with
// the capture complete under its name and equal, bit for bit, to the
// journal's replay.
#[test]
fn a_stop_signal_finishes_the_take_and_exits_128_plus_its_number() {
    for (signal, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let dir = common::temp_dir(&format!("takes-{name}"));
        let (mut child, lines) = start(&dir, None);
        let mut log = Vec::new();
        common::wait_line(&lines, "playing ", &mut log);
        wait_progress(&dir.join("j/take.jsonl"), 1);
        kill(&child, signal);
        let status = child.wait().unwrap();
        log.extend(lines.iter());
        let log = log.join("\n");
        assert_eq!(status.code(), Some(128 + signal), "{name}: {log}");
        assert!(log.contains(&format!("stopped by {name}")), "{log}");
        assert!(
            log.contains("captured ") && log.contains("take.wav"),
            "{log}"
        );
        assert!(log.contains("journal: j/take.jsonl"), "{log}");
        let journal = std::fs::read_to_string(dir.join("j/take.jsonl")).unwrap();
        assert!(journal.contains(r#""type":"stop""#), "{journal}");
        assert!(journal.contains(r#""type":"end""#), "{journal}");

        let o = replay(&dir, &["j/take.jsonl", "-o", "r.wav"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
        let cap = wav(&dir.join("take.wav"));
        let rep = wav(&dir.join("r.wav"));
        assert!(cap.len() >= 2 * SECOND, "{name}: {} samples", cap.len());
        assert_eq!(cap.len(), rep.len(), "{name}: the whole take");
        assert!(cap == rep, "{name}: the capture differs from the replay");
    }
}

// A signal that was ignored when `run` started (`nohup`, a background job)
// stays ignored, as POSIX utilities do.
#[test]
fn an_ignored_signal_stays_ignored() {
    let dir = common::temp_dir("takes-ignored");
    let (mut child, lines) = start(&dir, Some(libc::SIGHUP));
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    kill(&child, libc::SIGHUP);
    wait_progress(&dir.join("j/take.jsonl"), 1);
    use std::io::Write;
    writeln!(child.stdin.as_mut().unwrap(), "q").unwrap();
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let log = log.join("\n");
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(!log.contains("SIGHUP"), "{log}");
}

/// The frames of interleaved stereo `samples`.
fn frames(samples: &[u32]) -> usize {
    samples.len() / 2
}

// A killed `run` (SIGKILL, a crash, a power cut) left no capture at all and
// a journal that replayed only to its last edit. The capture is a valid WAV
// from the start, its sizes kept current, and the journal's progress
// records let it replay to its last second: the replay is what the capture
// holds, bit for bit, and the capture lacks at most the second before the
// kill.
#[test]
fn a_killed_session_leaves_a_readable_capture_and_a_replayable_journal() {
    let dir = common::temp_dir("takes-killed");
    let journal = dir.join("j/take.jsonl");
    let (mut child, lines) = start(&dir, None);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    std::thread::sleep(Duration::from_millis(300));
    edit_gain(&dir);
    common::wait_line(&lines, "edit applied", &mut log);
    wait_progress(&journal, 3);
    // Killed once the capture's header is within half a second of the
    // journal's last progress (it is kept current every half second; a
    // loaded machine can delay that while progress goes on).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let last = *progress(&journal).last().unwrap() as usize;
        let held = hound::WavReader::open(dir.join("take.wav")).map_or(0, |r| r.len() as usize / 2);
        if held + SECOND / 2 >= last {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the capture's header stays behind"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    kill(&child, libc::SIGKILL);
    child.wait().unwrap();

    let o = replay(&dir, &["--info", "j/take.jsonl"]);
    let info = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        info.contains("warning: the journal has no end record"),
        "{info}"
    );
    assert!(info.contains("  edit ("), "the edit is journaled: {info}");
    assert!(!info.contains("progress"), "one line per event: {info}");

    let o = replay(&dir, &["j/take.jsonl", "-o", "r.wav"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("no end record"), "{err}");
    let rep = wav(&dir.join("r.wav"));
    let cap = wav(&dir.join("take.wav"));
    let last = *progress(&journal).last().unwrap() as usize;
    // The replay ends at the last progress record, at least 3 s in; the
    // capture's header was at most one second behind it.
    assert_eq!(frames(&rep), last, "the replay ends at the last progress");
    assert!(frames(&rep) >= 3 * SECOND, "{}", frames(&rep));
    assert!(
        frames(&cap) + SECOND >= frames(&rep),
        "the capture holds {} frames, the replay {}",
        frames(&cap),
        frames(&rep)
    );
    let n = cap.len().min(rep.len());
    assert!(cap[..n] == rep[..n], "the capture differs from the replay");

    // The same journal cut in the middle of its last line (a crash during
    // a write): read up to the line before, with a warning naming it.
    let text = std::fs::read_to_string(&journal).unwrap();
    let cut = &text[..text.len() - 5];
    let lines_kept = cut.lines().count();
    std::fs::write(dir.join("j/cut.jsonl"), cut).unwrap();
    for args in [
        &["--info", "j/cut.jsonl"][..],
        &["j/cut.jsonl", "-o", "cut.wav"],
    ] {
        let o = replay(&dir, args);
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {all}");
        assert!(
            all.contains(&format!(
                "j/cut.jsonl:{lines_kept}: the journal ends in the middle of a record"
            )),
            "{args:?}: {all}"
        );
    }
    let shorter = wav(&dir.join("cut.wav"));
    assert!(
        shorter[..] == rep[..shorter.len()],
        "the cut journal replays a prefix"
    );

    // A malformed line in the middle is still an error naming it.
    let mut broken: Vec<&str> = text.lines().collect();
    broken[2] = "{\"type\":\"progress\",";
    std::fs::write(dir.join("j/broken.jsonl"), broken.join("\n") + "\n").unwrap();
    for args in [
        &["--info", "j/broken.jsonl"][..],
        &["j/broken.jsonl", "-o", "b.wav"],
    ] {
        let o = replay(&dir, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("j/broken.jsonl:3"), "{}", stderr(&o));
    }
}
