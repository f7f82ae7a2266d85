//! `render` never loses a user's data, and says what it made: one test per
//! way a render could lose data while exiting 0, and the levels report
//! (what was made).
//! Every test runs the real binary; they hold as root (CI) and as a normal
//! user.

use crate::support as common;

use common::{
    assert_still_devices, file_size_limit, is_root, memory_devices, partials, root, stderr, stdout,
    temp_dir,
};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const NOBODY: u32 = 65534;

/// The binary, run in `dir`, unable to write a file over 64 MiB or to run
/// for more than 2 CPU minutes: a render that breaks these rules (say, one
/// that accepts a 30-year scene) fails these tests instead of filling the
/// disk or running for days.
fn morphrt_in(dir: &Path) -> Command {
    let mut c = common::bin();
    c.current_dir(dir);
    file_size_limit(&mut c, 64 << 20);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let cpu = libc::rlimit {
                rlim_cur: 120,
                rlim_max: 120,
            };
            libc::setrlimit(libc::RLIMIT_CPU, &cpu);
            Ok(())
        });
    }
    c
}

/// Caps the size of any file the command writes (`RLIMIT_FSIZE`, soft
/// limit only, so a later call can raise it); past it a write fails.
fn run(c: &mut Command) -> Output {
    c.output().expect("run morphrt")
}

/// A cheap mono scene in `dir`, 48 kHz, `duration` long.
fn scene(dir: &Path, name: &str, duration: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            r#"{{ "version": "1.0", "sample_rate": 48000, "duration": "{duration}",
  "nodes": [ {{ "id": "o", "op": "sine", "params": {{ "freq": "440Hz", "amp": 0.5 }} }} ],
  "outputs": {{ "main": ["o"] }} }}"#
        ),
    )
    .unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Makes a FIFO at `path` and opens it read-write (the first file) and
/// read-only (the second). Held open for both, the FIFO never blocks an
/// open (a render's open for writing does not wait for a reader), and the
/// read end sees the end of the stream only when the first file closes
/// too, whatever the render did.
fn open_fifo(path: &Path) -> (std::fs::File, std::fs::File) {
    let c = std::ffi::CString::new(s(path)).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let keep = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    (keep, std::fs::File::open(path).unwrap())
}

/// `morphrt ARGS` started in `dir` (see [`morphrt_in`]), to be stopped by
/// a signal: its standard error piped, files it writes held under 1 GiB
/// (the signal comes within seconds; the whole render would be far
/// larger), and SIGINT at its default action (a test runner may have been
/// started with it ignored, as a background job is; a user's Ctrl-C
/// reaches a foreground render).
fn spawn_to_signal(dir: &Path, args: &[&str]) -> std::process::Child {
    let mut c = morphrt_in(dir);
    c.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    file_size_limit(&mut c, 1 << 30);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    c.spawn().unwrap()
}

fn wav_frames(bytes: &[u8]) -> u32 {
    hound::WavReader::new(std::io::Cursor::new(bytes))
        .unwrap()
        .duration()
}

// `render scene.json -o scene.json` overwrote the scene with WAV data.
#[test]
fn an_output_that_is_the_scene_is_refused_under_any_name() {
    let dir = temp_dir("safety-scene");
    let sc = scene(&dir, "scene.json", "1s");
    let before = std::fs::read(&sc).unwrap();
    std::os::unix::fs::symlink("scene.json", dir.join("link.json")).unwrap();
    std::fs::hard_link(&sc, dir.join("hard.json")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    for out in [
        "scene.json",
        "./sub/../scene.json",
        "link.json",
        "hard.json",
    ] {
        let o = run(morphrt_in(&dir).args(["render", "scene.json", "-o", out, "-d", "0.1s"]));
        assert_eq!(o.status.code(), Some(2), "-o {out}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is the scene"),
            "-o {out}: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(&sc).unwrap(),
            before,
            "-o {out} changed the scene"
        );
    }
    // The scene on standard input is still the scene file.
    let o = run(morphrt_in(&dir)
        .args(["render", "-", "-o", "scene.json", "-d", "0.1s"])
        .stdin(std::fs::File::open(&sc).unwrap()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Standard output appended to the scene.
    let append = std::fs::OpenOptions::new().append(true).open(&sc).unwrap();
    let o = run(morphrt_in(&dir)
        .args(["render", "scene.json", "-o", "-", "-d", "0.1s"])
        .stdout(append));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("standard output is the scene"),
        "{}",
        stderr(&o)
    );
    // A snapshot written over the scene.
    let o = run(morphrt_in(&dir).args([
        "render",
        "scene.json",
        "-o",
        "out.wav",
        "-d",
        "0.1s",
        "--snapshot-at",
        "0.05s",
        "--snapshot-out",
        "link.json",
    ]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&sc).unwrap(), before);
    assert!(!dir.join("out.wav").exists(), "refused before rendering");
}

// … nor any resource the scene reads.
#[test]
fn an_output_that_is_a_resource_is_refused() {
    let dir = temp_dir("safety-resource");
    std::fs::create_dir(dir.join("resources")).unwrap();
    let kick = dir.join("resources/kick.wav");
    std::fs::copy(root().join("resources/kick.wav"), &kick).unwrap();
    let before = std::fs::read(&kick).unwrap();
    std::fs::write(
        dir.join("scene.json"),
        r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "k", "op": "sampler", "params": { "file": "@resource:kick.wav" } } ],
  "outputs": { "main": ["k"] } }"#,
    )
    .unwrap();
    let o = run(morphrt_in(&dir).args([
        "render",
        "scene.json",
        "-o",
        "resources/kick.wav",
        "-d",
        "0.1s",
    ]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("resource `@resource:kick.wav`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&kick).unwrap(), before);
    assert!(partials(&dir.join("resources")).is_empty());
}

// A read-only (0444) output file owned by another user is not replaced
// (nor made 0644), even by root.
#[test]
fn a_read_only_file_is_not_replaced_even_by_root() {
    let dir = temp_dir("safety-readonly");
    scene(&dir, "scene.json", "1s");
    let out = dir.join("out.wav");
    std::fs::write(&out, b"keep me").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o444)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&out, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let o = run(morphrt_in(&dir).args(["render", "scene.json", "-o", "out.wav", "-d", "0.1s"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("`out.wav`") && err.contains("0444"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    assert_eq!(std::fs::metadata(&out).unwrap().mode() & 0o7777, 0o444);
    assert!(partials(&dir).is_empty());

    // A normal user may not replace another's file they cannot write,
    // whatever its write bits for others.
    if is_root() {
        std::os::unix::fs::chown(&out, Some(0), Some(0)).unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let o = run(morphrt_in(&dir)
            .args(["render", "scene.json", "-o", "out.wav", "-d", "0.1s"])
            .uid(NOBODY)
            .gid(NOBODY));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("not writable by you"), "{}", stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    }
}

// … and a file that is replaced keeps its permissions (and, as root, its owner).
#[test]
fn a_replaced_file_keeps_its_mode_and_owner() {
    let dir = temp_dir("safety-mode");
    scene(&dir, "scene.json", "1s");
    let out = dir.join("out.wav");
    std::fs::write(&out, b"old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&out, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let o = run(morphrt_in(&dir).args(["render", "scene.json", "-o", "out.wav", "-d", "0.1s"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let m = std::fs::metadata(&out).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o640);
    if is_root() {
        assert_eq!((m.uid(), m.gid()), (NOBODY, NOBODY));
    }
    assert_eq!(wav_frames(&std::fs::read(&out).unwrap()), 4800);
}

// `-o` pointing at a symlink replaced it with a regular file.
#[test]
fn a_symlink_is_written_through() {
    let dir = temp_dir("safety-symlink");
    scene(&dir, "scene.json", "1s");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::fs::write(dir.join("real/take.wav"), b"old").unwrap();
    std::os::unix::fs::symlink("real/take.wav", dir.join("link.wav")).unwrap();
    std::os::unix::fs::symlink("real/new.wav", dir.join("dangling.wav")).unwrap();
    for (link, target) in [
        ("link.wav", "real/take.wav"),
        ("dangling.wav", "real/new.wav"),
    ] {
        let o = run(morphrt_in(&dir).args(["render", "scene.json", "-o", link, "-d", "0.1s"]));
        assert!(o.status.success(), "{link}: {}", stderr(&o));
        let m = std::fs::symlink_metadata(dir.join(link)).unwrap();
        assert!(m.file_type().is_symlink(), "{link} is still a link");
        assert_eq!(wav_frames(&std::fs::read(dir.join(target)).unwrap()), 4800);
        assert!(partials(&dir.join("real")).is_empty() && partials(&dir).is_empty());
    }
}

// `-o` pointing at a FIFO replaced it with a regular file.
#[test]
fn a_fifo_is_streamed_to_without_a_temporary_file() {
    let dir = temp_dir("safety-fifo");
    scene(&dir, "scene.json", "1s");
    let fifo = dir.join("pipe.wav");
    let (keep, mut read_end) = open_fifo(&fifo);
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        read_end.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let o = run(morphrt_in(&dir).args(["render", "scene.json", "-o", "pipe.wav", "-d", "0.1s"]));
    drop(keep);
    let bytes = reader.join().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(wav_frames(&bytes), 4800);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(partials(&dir).is_empty());
}

// `-o` pointing at a device node writes to the device and never replaces
// it (as root, `/dev/full` must not become a WAV file); `-o /dev/null
// --hash` works for a normal user, who cannot create a temporary file in
// /dev. The system's devices are
// only written as a normal user (who cannot replace them); as root, the
// test makes its own device nodes.
#[test]
fn devices_are_written_in_place() {
    let dir = temp_dir("safety-device");
    scene(&dir, "scene.json", "1s");
    let o = run(morphrt_in(&dir).args([
        "render",
        "scene.json",
        "-o",
        "a.wav",
        "-d",
        "0.1s",
        "--hash",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let hash = stdout(&o);
    let as_user = |out: &str| {
        let mut c = morphrt_in(&dir);
        c.args(["render", "scene.json", "-o", out, "-d", "0.1s", "--hash"]);
        if is_root() {
            c.uid(NOBODY).gid(NOBODY);
        }
        run(&mut c)
    };
    let o = as_user("/dev/null");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), hash, "the same samples went to /dev/null");
    let o = as_user("/dev/full");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write `/dev/full`"),
        "{}",
        stderr(&o)
    );
    assert!(partials(Path::new("/dev")).is_empty());

    if is_root() {
        memory_devices(&dir);
        let o = run(morphrt_in(&dir).args([
            "render",
            "scene.json",
            "-o",
            "null",
            "-d",
            "0.1s",
            "--hash",
        ]));
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), hash);
        let o = run(morphrt_in(&dir).args(["render", "scene.json", "-o", "full", "-d", "0.1s"]));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_still_devices(&dir);
    }
}

// `-o -` created a file named `-`; `render -` read a file named `-`.
#[test]
fn dash_means_standard_output_and_standard_input() {
    let dir = temp_dir("safety-dash");
    let sc = scene(&dir, "scene.json", "1s");
    // A file named `-` that must be neither read nor written.
    std::fs::write(dir.join("-"), b"not a scene").unwrap();
    let o = run(morphrt_in(&dir).args(["render", "scene.json", "-o", "-", "-d", "0.1s", "--hash"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(wav_frames(&o.stdout), 4800);
    assert_eq!(o.stdout.len(), 68 + 4800 * 4, "only the WAV on stdout");
    let hash = stderr(&o)
        .lines()
        .find(|l| l.len() == 64 && l.chars().all(|c| c.is_ascii_hexdigit()))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("the hash goes to stderr: {}", stderr(&o)));
    assert_eq!(std::fs::read(dir.join("-")).unwrap(), b"not a scene");

    let mut child = morphrt_in(&dir)
        .args([
            "render",
            "-",
            "-o",
            "from-stdin.wav",
            "-d",
            "0.1s",
            "--hash",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&sc).unwrap())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), hash);
    assert_eq!(
        wav_frames(&std::fs::read(dir.join("from-stdin.wav")).unwrap()),
        4800
    );
}

// `-d 22400s` (4.3 GB, f32 mono) wrote a WAV whose header says 30.38 s: the
// RIFF sizes wrapped. The header of that very render, read off a pipe that
// closes after it (the sizes are unit-tested in render::wav).
#[test]
fn past_4_gib_the_header_is_rf64() {
    let dir = temp_dir("safety-rf64");
    scene(&dir, "scene.json", "1s");
    let mut child = morphrt_in(&dir)
        .args(["render", "scene.json", "-o", "-", "-d", "22400s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut header = [0u8; 104];
    child
        .stdout
        .take()
        .unwrap()
        .read_exact(&mut header)
        .unwrap();
    // The pipe is closed now: the render stops with a write error.
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    assert_eq!(&header[0..4], b"RF64");
    assert_eq!(&header[12..16], b"ds64");
    let frames = 22400 * 48000u64;
    assert_eq!(u64_at(28), frames * 4, "data size");
    assert_eq!(u64_at(36), frames, "sample count");
    assert_eq!(u64_at(20), 104 + frames * 4 - 8, "RF64 size");
    assert_eq!(&header[96..100], b"data");
}

// A scene `"duration":"1000000000s"` meets the command line's limit (else
// a killed render would leave a 9.3 GB hidden `.partial`): one limit,
// stated in the error, before anything is written.
#[test]
fn one_duration_limit_for_the_scene_and_the_command_line() {
    let dir = temp_dir("safety-limit");
    scene(&dir, "long.json", "1000000000s");
    scene(&dir, "short.json", "1s");
    let o = run(morphrt_in(&dir).args(["render", "long.json", "-o", "out.wav"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("long.json:") && err.contains("duration limit of 24 h (86400 s"),
        "{err}"
    );
    let o = run(morphrt_in(&dir).args(["render", "short.json", "-o", "out.wav", "-d", "86401s"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("duration limit of 24 h (86400 s"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("out.wav").exists() && partials(&dir).is_empty());
    // The limit itself is allowed: a full standard output fails the first
    // write, not the length.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = run(morphrt_in(&dir)
        .args(["render", "short.json", "-o", "-", "-d", "86400s"])
        .stdout(full));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
}

// Ctrl-C or SIGTERM during any render left the hidden `.partial` behind.
#[test]
fn sigint_and_sigterm_remove_the_partial_file() {
    let dir = temp_dir("safety-signal");
    // 8 kHz 16-bit: seconds of rendering before a partial file is complete.
    std::fs::write(
        dir.join("scene.json"),
        r#"{ "version": "1.0", "sample_rate": 8000,
  "nodes": [ { "id": "o", "op": "sine", "params": { "freq": "440Hz" } } ],
  "outputs": { "main": ["o"] } }"#,
    )
    .unwrap();
    std::fs::write(dir.join("existing.wav"), b"old").unwrap();
    for (signal, out, code) in [
        (libc::SIGTERM, "new.wav", 143),
        (libc::SIGINT, "existing.wav", 130),
    ] {
        // The signal comes within milliseconds; the whole render would be 320 MB.
        let mut child = spawn_to_signal(
            &dir,
            &[
                "render",
                "scene.json",
                "-o",
                out,
                "-d",
                "20000s",
                "--format",
                "i16",
            ],
        );
        while partials(&dir).is_empty() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the render ended early"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // SAFETY: kill() with our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        assert!(stderr(&o).contains("interrupted by"), "{}", stderr(&o));
        assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
    }
    assert!(!dir.join("new.wav").exists());
    assert_eq!(std::fs::read(dir.join("existing.wav")).unwrap(), b"old");
}

// A signal did not stop a render into a FIFO or pipe whose reader had
// stopped reading (its writer waited in a write that never ended), and
// stopped one into a slow reader only once everything queued was written,
// seconds later.
#[test]
fn a_signal_stops_a_render_into_a_stream_that_is_read_slowly_or_not_at_all() {
    use std::time::{Duration, Instant};
    let dir = temp_dir("safety-signal-stream");
    scene(&dir, "scene.json", "600s");
    for (name, slow) in [("stuck.wav", false), ("slow.wav", true)] {
        // `keep` is a reader that never reads: the render's writes fill
        // the pipe and wait. The slow reader takes 4 KiB every 50 ms
        // (80 KiB/s).
        let (keep, mut read_end) = open_fifo(&dir.join(name));
        let reading = slow.then(|| {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while read_end.read(&mut buf).is_ok_and(|n| n > 0) {
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        });
        let mut child = spawn_to_signal(
            &dir,
            &["render", "scene.json", "-o", name, "--threads", "2"],
        );
        // Time to fill the pipe and the batches queued behind it.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the render ended early"
        );
        // SAFETY: kill() with our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let signalled = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if signalled.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                panic!("{name}: the render was still running 5 s after SIGINT");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(130), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("interrupted by SIGINT"),
            "{name}: {}",
            stderr(&o)
        );
        drop(keep);
        if let Some(r) = reading {
            r.join().unwrap();
        }
    }
    assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
}

// A render stopped after writing a snapshot said "nothing was written",
// and kept the snapshot without saying so.
#[test]
fn a_signal_after_a_snapshot_says_the_snapshot_is_kept() {
    let dir = temp_dir("safety-signal-snapshot");
    scene(&dir, "scene.json", "20000s");
    let mut child = spawn_to_signal(
        &dir,
        &[
            "render",
            "scene.json",
            "-o",
            "o.wav",
            "--format",
            "i16",
            "--snapshot-at",
            "1s",
            "--snapshot-out",
            "snap.json",
        ],
    );
    while !dir.join("snap.json").exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the render ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: kill() with our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("; the snapshot written before it kept: `snap.json` (at 1.00s)"),
        "{}",
        stderr(&o)
    );
    assert!(dir.join("snap.json").exists());
    assert!(!dir.join("o.wav").exists());
    assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
}

// A missing output directory or an output that is a directory failed only
// after the full render, naming the hidden temp file instead of the user's
// path. A snapshot due during the render shows whether it started.
#[test]
fn an_unusable_output_path_fails_before_rendering_and_is_named() {
    let dir = temp_dir("safety-path");
    scene(&dir, "scene.json", "1s");
    std::fs::create_dir(dir.join("adir")).unwrap();
    for out in ["missing/x.wav", "adir"] {
        let o = run(morphrt_in(&dir).args([
            "render",
            "scene.json",
            "-o",
            out,
            "-d",
            "0.1s",
            "--snapshot-at",
            "0.05s",
            "--snapshot-out",
            "snap.json",
        ]));
        assert_eq!(o.status.code(), Some(1), "-o {out}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("`{out}`")), "{err}");
        assert!(!err.contains("partial"), "{err}");
        assert!(
            !dir.join("snap.json").exists(),
            "-o {out}: the render started"
        );
    }
    assert!(partials(&dir).is_empty() && partials(&dir.join("adir")).is_empty());
}

// "Show what was made": peak, clipped samples, DC offset, a warning when
// anything clips, and `--json`.
#[test]
fn render_reports_levels_and_clipping() {
    let dir = temp_dir("safety-levels");
    std::fs::write(
        dir.join("dc.json"),
        r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "a", "op": "dc", "params": { "value": 0.25 } },
             { "id": "b", "op": "dc", "params": { "value": -1.5 } } ],
  "outputs": { "main": ["a", "b"] } }"#,
    )
    .unwrap();
    let args = |format: &'static str| {
        [
            "render", "dc.json", "-o", "out.wav", "-d", "0.1s", "--format", format, "--json",
        ]
    };
    let o = run(morphrt_in(&dir).args(args("i16")));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("warning: 4800 samples clipped"), "{err}");
    assert!(err.contains("ch2: 4800"), "{err}");
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["frames"], 4800);
    assert_eq!(j["duration_s"], 0.1);
    assert_eq!(j["clipped"], 4800);
    assert_eq!(j["peak"], 1.5);
    let peak_db = j["peak_dbfs"].as_f64().unwrap();
    assert!((peak_db - 3.5218).abs() < 1e-3, "{peak_db}");
    assert_eq!(j["per_channel"][0]["dc_offset"], 0.25);
    assert_eq!(j["per_channel"][0]["clipped"], 0);
    assert_eq!(j["per_channel"][1]["clipped"], 4800);
    assert_eq!(j["hash"].as_str().unwrap().len(), 64);
    assert!(j["time_s"].as_f64().is_some() && j["rtf"].as_f64().is_some());

    // f32 keeps values over 0 dBFS, but they are flagged.
    let o = run(morphrt_in(&dir).args(args("f32")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("4800 samples over 0 dBFS"),
        "{}",
        stderr(&o)
    );
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["clipped"], 4800);
}

/// The library's `render_to_wav` writes the bytes `render` writes, replaces
/// an existing file whole, and leaves a target it cannot replace as it
/// was, with nothing partial beside it.
#[test]
fn render_to_wav_writes_what_render_writes_and_leaves_what_it_cannot_replace() {
    use morphrt::host::offline::render::render_to_wav;
    use morphrt::host::offline::WavFormat;
    let dir = temp_dir("render-to-wav");
    let tone = scene(&dir, "tone.json", "0.5s");
    let text = std::fs::read_to_string(&tone).unwrap();
    let strict = Some(morphrt::profile::Profile::Strict);
    let o = run(morphrt_in(&dir).args([
        "render",
        "tone.json",
        "--profile",
        "strict",
        "--format",
        "f32",
        "-q",
        "-o",
        "cli.wav",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let cli = std::fs::read(dir.join("cli.wav")).unwrap();
    // Over an existing file of other content.
    let lib = dir.join("lib.wav");
    std::fs::write(&lib, b"not a wav").unwrap();
    let engine = common::engine(&text, strict, 64);
    let report = render_to_wav(engine, &lib, 24_000, WavFormat::F32, false).expect("renders");
    assert_eq!(report.frames, 24_000);
    assert_eq!(
        std::fs::read(&lib).unwrap(),
        cli,
        "the bytes `render` writes"
    );
    // A directory where the file would go: refused, left as it was.
    let taken = dir.join("taken.wav");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("inside"), b"kept").unwrap();
    let engine = common::engine(&text, strict, 64);
    let refused = render_to_wav(engine, &taken, 24_000, WavFormat::F32, false);
    assert!(refused.is_err(), "a directory is not replaced");
    assert_eq!(std::fs::read(taken.join("inside")).unwrap(), b"kept");
    assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
}
