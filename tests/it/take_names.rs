//! A session's takes are never lost: `run --capture` and `--journal` on a
//! name that is taken move on to the next free numbered name (and say so
//! before playing) unless `--overwrite`; a journal is locked by the session
//! writing it, against a second writer, until that session ends however it
//! ends; and the partial file a killed render left is removed by the next
//! write to the same output.

use crate::support as common;

use common::{partials, stderr_lines, temp_dir, wait_line, KillOnDrop};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn morphrt_in(dir: &Path, args: &[&str]) -> Output {
    common::bin()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `run s.json --device clock --duration 0.1s --no-watch` and `more`, in `dir`.
fn run_in(dir: &Path, more: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "s.json",
        "--device",
        "clock",
        "--duration",
        "0.1s",
        "--no-watch",
    ];
    args.extend_from_slice(more);
    morphrt_in(dir, &args)
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scene_dir(name: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    std::fs::copy(common::root().join("scenes/drone.json"), dir.join("s.json")).unwrap();
    dir
}

/// The index of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with `{needle}` in:\n{text}"))
}

// `run --capture take.wav` never replaces the take of a previous session
// (nor `--journal` its journal): a taken name moves on to take-2.wav,
// take-3.wav, …, said before playing and in the summary; `--overwrite`
// replaces.
#[test]
fn a_taken_name_moves_on_to_the_next_number_unless_overwrite() {
    let dir = scene_dir("takes-numbered");
    let args = ["--capture", "take.wav", "--journal", "j.jsonl"];
    let o = run_in(&dir, &args);
    assert!(o.status.success(), "{}", err(&o));
    let first_take = std::fs::read(dir.join("take.wav")).unwrap();
    let first_journal = std::fs::read(dir.join("j.jsonl")).unwrap();

    let o = run_in(&dir, &args);
    let e = err(&o);
    assert!(o.status.success(), "{e}");
    let said = line_of(
        &e,
        "capture: take-2.wav (take.wav exists; --overwrite replaces it)",
    );
    line_of(
        &e,
        "journal: j-2.jsonl (j.jsonl exists; --overwrite replaces it)",
    );
    assert!(said < line_of(&e, "playing "), "said before playing:\n{e}");
    line_of(&e, "captured 4800 frames (0.10s) to take-2.wav");
    line_of(&e, "journal: j-2.jsonl (replay it");
    assert_eq!(std::fs::read(dir.join("take.wav")).unwrap(), first_take);
    assert_eq!(std::fs::read(dir.join("j.jsonl")).unwrap(), first_journal);
    assert!(dir.join("take-2.wav").is_file() && dir.join("j-2.jsonl").is_file());

    // The next free number; a read-only take is not in the way either.
    use std::os::unix::fs::PermissionsExt;
    let ro = std::fs::Permissions::from_mode(0o444);
    std::fs::set_permissions(dir.join("take-2.wav"), ro).unwrap();
    let o = run_in(&dir, &args);
    assert!(o.status.success(), "{}", err(&o));
    line_of(&err(&o), "capture: take-3.wav (take.wav exists");
    line_of(&err(&o), "journal: j-3.jsonl (j.jsonl exists");

    // --overwrite replaces the takes under their own names.
    std::fs::write(dir.join("take.wav"), b"an old take").unwrap();
    std::fs::write(dir.join("j.jsonl"), b"an old journal").unwrap();
    let mut more = args.to_vec();
    more.push("--overwrite");
    let o = run_in(&dir, &more);
    let e = err(&o);
    assert!(o.status.success(), "{e}");
    assert!(!e.contains("exists;"), "{e}");
    line_of(&e, "captured 4800 frames (0.10s) to take.wav");
    assert_eq!(
        hound::WavReader::open(dir.join("take.wav")).unwrap().len(),
        2 * 4800
    );
    let journal = std::fs::read_to_string(dir.join("j.jsonl")).unwrap();
    assert!(journal.starts_with("{\"type\":\"header\""), "{journal}");
    assert!(partials(&dir).is_empty());

    // A name that is an input is still refused, not numbered around.
    let o = run_in(&dir, &["--no-journal", "--capture", "s.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("is the scene"), "{}", err(&o));
}

// Two sessions given the same journal with --overwrite interleaved their
// records in one file. The journal is locked by the session that writes
// it: a second writer is refused, naming the first's PID, while the
// first plays; reading it (replay) still works and says it is in
// progress; and the lock dies with the first, even by SIGKILL.
#[test]
fn a_journal_is_locked_by_the_session_that_writes_it() {
    let dir = scene_dir("takes-lock");
    let mut first = KillOnDrop(
        common::bin()
            .args(["run", "s.json", "--device", "clock", "--no-watch"])
            .args(["--journal", "j.jsonl"])
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let lines = stderr_lines(&mut first);
    wait_line(&lines, "playing ", &mut Vec::new());
    let pid = first.id();
    let journal = std::fs::read(dir.join("j.jsonl")).unwrap();

    let o = run_in(&dir, &["--journal", "j.jsonl", "--overwrite"]);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!(
            "the journal `j.jsonl` is being written by morphrt (PID {pid})"
        )),
        "{e}"
    );
    assert!(!e.contains("playing"), "refused before playing: {e}");
    assert_eq!(std::fs::read(dir.join("j.jsonl")).unwrap(), journal);

    let o = morphrt_in(&dir, &["replay", "j.jsonl", "-o", "so-far.wav"]);
    let e = err(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains(&format!(
            "`j.jsonl` is still being written by morphrt (PID {pid})"
        )),
        "{e}"
    );

    // SAFETY: kill() with our own child's pid.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    first.wait().unwrap();
    let o = run_in(&dir, &["--journal", "j.jsonl", "--overwrite"]);
    assert!(o.status.success(), "{}", err(&o));
    let o = morphrt_in(&dir, &["replay", "j.jsonl", "-o", "again.wav"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!err(&o).contains("still being written"), "{}", err(&o));
}

// A render killed by SIGKILL left its `.x.wav.PID.partial` (140 MB for a
// long render) for ever. The next write to x.wav removes it, saying so;
// the partial file of a process still running is left alone.
#[test]
fn a_dead_renders_partial_file_is_removed_by_the_next_render() {
    let dir = temp_dir("takes-partial");
    let scene = common::root().join("scenes/hall-reverb.json");
    let scene = scene.to_str().unwrap();
    let mut long = KillOnDrop(
        common::bin()
            .args(["render", scene, "--profile", "strict", "-d", "3m"])
            .args(["-o", "x.wav"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while partials(&dir).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the render never started writing"
        );
        assert!(long.try_wait().unwrap().is_none(), "the render ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = long.id();
    // SAFETY: kill() with our own child's pid.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    long.wait().unwrap();
    let left = partials(&dir);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with(&format!(".x.wav.{pid}")), "{left:?}");
    // One of a process that is running: this test's own.
    let alive = format!(".x.wav.{}.partial", std::process::id());
    std::fs::write(dir.join(&alive), b"still being written").unwrap();

    let drone = common::root().join("scenes/drone.json");
    let o = morphrt_in(
        &dir,
        &[
            "render",
            drone.to_str().unwrap(),
            "-d",
            "0.1s",
            "-o",
            "x.wav",
        ],
    );
    let e = err(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("note: removed `")
            && e.contains(&format!(
                "/{}`, a partial file left by morphrt (PID {pid}), which is no longer running",
                left[0]
            )),
        "{e}"
    );
    assert_eq!(partials(&dir), [alive]);
    assert!(dir.join("x.wav").is_file());
}
