//! Every command that writes a file obeys the one set of output rules:
//! one test per rule, each run against every writer — `render -o`,
//! `render --snapshot-out`, `replay -o`, `plot -o`, `schema -o`,
//! `run --capture` and `run --journal`. `tests/it/render_safety.rs` holds the
//! rules' finer points for `render`; these hold them for everyone. They run
//! as a normal user and as root (CI), where the device cases are exercised
//! on device nodes the test makes itself.

use crate::support as common;

use common::{file_size_limit, is_root, memory_devices, partials, root, stderr, temp_dir};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// One command that writes a file, and what its file must be.
struct Writer {
    name: &'static str,
    /// The extension its output must have ("" for any name).
    ext: &'static str,
    /// May stream to a FIFO or a character device.
    streams: bool,
    /// The arguments that make it write `out` (run in the fixture directory).
    args: fn(&str) -> Vec<String>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const WRITERS: &[Writer] = &[
    Writer {
        name: "render -o",
        ext: "wav",
        streams: true,
        args: |out| strings(&["render", "s.json", "-d", "0.1s", "-o", out]),
    },
    Writer {
        name: "render --snapshot-out",
        ext: "",
        streams: false,
        args: |out| {
            strings(&[
                "render",
                "s.json",
                "-d",
                "0.1s",
                "-o",
                "-",
                "--snapshot-at",
                "0.05s",
                "--snapshot-out",
                out,
            ])
        },
    },
    Writer {
        name: "replay -o",
        ext: "wav",
        streams: true,
        args: |out| strings(&["replay", "j.jsonl", "-o", out]),
    },
    Writer {
        name: "plot -o",
        ext: "png",
        streams: true,
        args: |out| strings(&["plot", "s.json", "-o", out]),
    },
    Writer {
        name: "schema -o",
        ext: "",
        streams: true,
        args: |out| strings(&["schema", "-o", out]),
    },
    Writer {
        name: "run --capture",
        ext: "wav",
        streams: false,
        args: |out| {
            strings(&[
                "run",
                "s.json",
                "--device",
                "clock",
                "--duration",
                "0.1s",
                "--no-watch",
                "--no-journal",
                "--capture",
                out,
            ])
        },
    },
    Writer {
        name: "run --journal",
        ext: "",
        streams: false,
        args: |out| {
            strings(&[
                "run",
                "s.json",
                "--device",
                "clock",
                "--duration",
                "0.1s",
                "--no-watch",
                "--journal",
                out,
            ])
        },
    },
];

impl Writer {
    /// `base` with this writer's extension.
    fn named(&self, base: &str) -> String {
        if self.ext.is_empty() {
            format!("{base}.out")
        } else {
            format!("{base}.{}", self.ext)
        }
    }
}

/// A directory holding a scene that reads a resource (`s.json`,
/// `resources/kick.wav`), a short journal of it (`j.jsonl`) and a
/// snapshot of it (`snap.json`).
fn fixture(name: &str) -> PathBuf {
    let dir = temp_dir(&format!("rules-{name}"));
    std::fs::create_dir(dir.join("resources")).unwrap();
    std::fs::copy(
        root().join("resources/kick.wav"),
        dir.join("resources/kick.wav"),
    )
    .unwrap();
    std::fs::write(
        dir.join("s.json"),
        r#"{ "version": "1.0", "sample_rate": 48000, "duration": "0.2s",
  "nodes": [
    { "id": "o", "op": "sine", "params": { "freq": "440Hz", "amp": 0.25 } },
    { "id": "k", "op": "sampler", "params": { "file": "@resource:kick.wav" } } ],
  "outputs": { "main": ["o", "k"] } }"#,
    )
    .unwrap();
    for args in [
        &[
            "run",
            "s.json",
            "--device",
            "clock",
            "--duration",
            "0.2s",
            "--no-watch",
            "--journal",
            "j.jsonl",
        ][..],
        &[
            "render",
            "s.json",
            "-d",
            "0.1s",
            "-o",
            "-",
            "--snapshot-at",
            "0.05s",
            "--snapshot-out",
            "snap.json",
        ][..],
    ] {
        let o = morphrt_in(&dir, &strings(args), None);
        assert!(o.status.success(), "fixture {args:?}: {}", stderr(&o));
    }
    dir
}

/// Runs the binary in `dir`, with stdin and stdout discarded, each file it
/// writes capped at `fsize` bytes when given; killed (and the test failed)
/// if it has not ended after a minute, so a writer that blocks on a FIFO
/// fails instead of hanging the suite.
fn morphrt_in(dir: &Path, args: &[String], fsize: Option<u64>) -> Output {
    let mut c = common::bin();
    c.current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(bytes) = fsize {
        file_size_limit(&mut c, bytes);
    }
    let mut child = c.spawn().expect("start morphrt");
    let mut err = child.stderr.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("morphrt {args:?} did not end within a minute");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: Vec::new(),
        stderr: reading.join().unwrap(),
    }
}

/// The fixture's files and their bytes, to check nothing changed.
fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    for sub in [dir.to_path_buf(), dir.join("resources")] {
        for e in std::fs::read_dir(&sub).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                v.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

// `run --capture s.json` replaced the scene with a WAV, `replay -o j.jsonl`
// the journal, `--journal resources/kick.wav` the sample.
#[test]
fn no_writer_writes_over_what_the_session_reads() {
    let dir = fixture("inputs");
    let before = inputs(&dir);
    let targets = ["s.json", "./s.json", "resources/kick.wav", "j.jsonl"];
    for w in WRITERS {
        for target in targets {
            // The scene and its resource are inputs of every writer but
            // schema, which reads nothing; the journal is replay's input.
            let reads = match w.name {
                "schema -o" => false,
                "replay -o" => target == "j.jsonl",
                _ => target != "j.jsonl",
            };
            if !reads {
                continue;
            }
            let o = morphrt_in(&dir, &(w.args)(target), None);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{} {target}: {}",
                w.name,
                stderr(&o)
            );
            assert!(stderr(&o).contains(target), "{}: {}", w.name, stderr(&o));
        }
    }
    assert_eq!(inputs(&dir), before, "every input is unchanged");
    assert!(partials(&dir).is_empty() && partials(&dir.join("resources")).is_empty());
}

// The snapshot a render resumes from is an input too.
#[test]
fn a_snapshot_is_never_written_over_the_one_resumed_from() {
    let dir = fixture("resume");
    let before = std::fs::read(dir.join("snap.json")).unwrap();
    for args in [
        &[
            "render",
            "s.json",
            "--resume",
            "snap.json",
            "-d",
            "0.1s",
            "-o",
            "-",
            "--snapshot-at",
            "0.1s",
            "--snapshot-out",
            "snap.json",
        ][..],
        &[
            "run",
            "s.json",
            "--resume",
            "snap.json",
            "--device",
            "clock",
            "--duration",
            "0.1s",
            "--no-watch",
            "--journal",
            "snap.json",
        ][..],
    ] {
        let o = morphrt_in(&dir, &strings(args), None);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("snap.json"), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read(dir.join("snap.json")).unwrap(), before);
    assert!(partials(&dir).is_empty());
}

// `replay -o x.mp3` and `-o out` were accepted.
#[test]
fn a_name_without_the_writers_extension_is_refused() {
    let dir = fixture("extension");
    for w in WRITERS.iter().filter(|w| !w.ext.is_empty()) {
        for out in ["x.mp3", "out"] {
            let o = morphrt_in(&dir, &(w.args)(out), None);
            assert_eq!(o.status.code(), Some(2), "{} {out}: {}", w.name, stderr(&o));
            assert!(
                stderr(&o).contains(&format!(".{}", w.ext)),
                "{} names the extension it writes: {}",
                w.name,
                stderr(&o)
            );
            assert!(!dir.join(out).exists(), "{} wrote {out}", w.name);
        }
    }
    assert!(partials(&dir).is_empty());
}

// A FIFO is streamed to, or refused; never replaced by a regular file.
#[test]
fn a_fifo_is_streamed_to_or_refused_never_replaced() {
    let dir = fixture("fifo");
    for w in WRITERS {
        let name = w.named("pipe");
        let fifo = dir.join(&name);
        mkfifo(&fifo);
        // Held open for reading and writing, the FIFO never blocks an open,
        // and the reader sees its end only when `keep` closes too.
        let keep = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        let mut read_end = std::fs::File::open(&fifo).unwrap();
        let reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            read_end.read_to_end(&mut bytes).unwrap();
            bytes
        });
        let o = morphrt_in(&dir, &(w.args)(&name), None);
        drop(keep);
        let streamed = reader.join().unwrap();
        if w.streams {
            assert!(o.status.success(), "{}: {}", w.name, stderr(&o));
            assert!(streamed.len() > 44, "{} streamed its file", w.name);
        } else {
            assert!(
                matches!(o.status.code(), Some(1 | 2)),
                "{}: {}",
                w.name,
                stderr(&o)
            );
            assert!(stderr(&o).contains(&name), "{}: {}", w.name, stderr(&o));
            assert!(streamed.is_empty(), "{} wrote into the FIFO", w.name);
        }
        let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(t.is_fifo(), "{}: the FIFO is still a FIFO", w.name);
        std::fs::remove_file(&fifo).unwrap();
    }
    assert!(partials(&dir).is_empty());
}

// As root, `run --capture DEVICE` and `replay -o DEVICE` replaced the
// device node with a regular file, and `replay -o /dev/full` exited 0.
#[test]
fn a_device_is_written_in_place_or_refused_and_a_full_one_is_an_error() {
    if !is_root() {
        eprintln!("not root: device nodes cannot be made; skipped");
        return;
    }
    let dir = fixture("device");
    memory_devices(&dir);
    for w in WRITERS {
        for device in ["null", "full"] {
            let o = morphrt_in(&dir, &(w.args)(device), None);
            let want = if w.streams && device == "null" { 0 } else { 1 };
            let code = o.status.code();
            assert!(
                code == Some(want) || (!w.streams && code == Some(2)),
                "{} {device}: {code:?} {}",
                w.name,
                stderr(&o)
            );
            if code != Some(0) {
                assert!(stderr(&o).contains(device), "{}: {}", w.name, stderr(&o));
            }
            let t = std::fs::symlink_metadata(dir.join(device))
                .unwrap()
                .file_type();
            assert!(t.is_char_device(), "{}: {device} is still a device", w.name);
        }
    }
    assert!(partials(&dir).is_empty());
}

#[test]
fn a_directory_is_refused_and_left_empty() {
    let dir = fixture("directory");
    for w in WRITERS {
        let name = w.named("folder");
        std::fs::create_dir(dir.join(&name)).unwrap();
        let o = morphrt_in(&dir, &(w.args)(&name), None);
        assert!(
            matches!(o.status.code(), Some(1 | 2)),
            "{}: {}",
            w.name,
            stderr(&o)
        );
        assert!(stderr(&o).contains(&name), "{}: {}", w.name, stderr(&o));
        assert_eq!(std::fs::read_dir(dir.join(&name)).unwrap().count(), 0);
        std::fs::remove_dir(dir.join(&name)).unwrap();
    }
    assert!(partials(&dir).is_empty());
}

// A file the program cannot finish writing (here: past a file size limit)
// is an error naming it, exit 1, and nothing is left under its name.
#[test]
fn a_write_error_is_exit_1_with_the_path_and_leaves_nothing() {
    let dir = fixture("write-error");
    for w in WRITERS {
        let name = w.named("small");
        let o = morphrt_in(&dir, &(w.args)(&name), Some(200));
        assert_eq!(o.status.code(), Some(1), "{}: {}", w.name, stderr(&o));
        assert!(stderr(&o).contains(&name), "{}: {}", w.name, stderr(&o));
        if w.name != "run --capture" && w.name != "run --journal" {
            assert!(!dir.join(&name).exists(), "{} left {name}", w.name);
        }
    }
    assert!(partials(&dir).is_empty());
}

// A read-only file (0444) is not replaced, even by root.
#[test]
fn a_read_only_file_is_never_replaced() {
    let dir = fixture("read-only");
    for w in WRITERS {
        let name = w.named("kept");
        let path = dir.join(&name);
        std::fs::write(&path, b"keep me").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let o = morphrt_in(&dir, &(w.args)(&name), None);
        assert_eq!(std::fs::read(&path).unwrap(), b"keep me", "{}", w.name);
        // A take never replaces an existing file unasked: it may go to a
        // fresh name instead; every other writer refuses.
        if !w.name.starts_with("run") {
            assert_eq!(o.status.code(), Some(1), "{}: {}", w.name, stderr(&o));
            assert!(stderr(&o).contains(&name), "{}: {}", w.name, stderr(&o));
        }
    }
    assert!(partials(&dir).is_empty());
}

// `-o` pointing at a symlink replaced the link with a regular file.
#[test]
fn a_symlink_is_written_through() {
    let dir = fixture("symlink");
    std::fs::create_dir(dir.join("real")).unwrap();
    for (i, w) in WRITERS.iter().enumerate() {
        if w.name.starts_with("run") {
            continue;
        }
        let name = w.named(&format!("link{i}"));
        let target = dir.join("real").join(w.named(&format!("take{i}")));
        std::fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, dir.join(&name)).unwrap();
        let o = morphrt_in(&dir, &(w.args)(&name), None);
        assert!(o.status.success(), "{}: {}", w.name, stderr(&o));
        let m = std::fs::symlink_metadata(dir.join(&name)).unwrap();
        assert!(m.file_type().is_symlink(), "{}: the link stays", w.name);
        assert!(std::fs::read(&target).unwrap().len() > 3, "{}", w.name);
        assert!(partials(&dir.join("real")).is_empty());
    }
    assert!(partials(&dir).is_empty());
}

// The calibration store is written like every other file: never into a
// FIFO, a directory or a read-only file in its place, and a write error
// names it.
#[test]
fn the_calibration_store_obeys_the_rules_too() {
    let dir = fixture("calibration");
    let store_dir = dir.join("cache/morphrt");
    std::fs::create_dir_all(&store_dir).unwrap();
    let store = store_dir.join("calibration.json");
    let calibrate = |fsize| {
        let args = strings(&["calibrate", "s.json", "-d", "0.05s", "--runs", "1"]);
        let mut c = common::bin();
        c.current_dir(&dir)
            .args(&args)
            .env("XDG_CACHE_HOME", dir.join("cache"));
        if let Some(bytes) = fsize {
            file_size_limit(&mut c, bytes);
        }
        c.output().unwrap()
    };
    let o = calibrate(Some(10));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("calibration.json"), "{}", stderr(&o));
    assert!(!store.exists());

    std::fs::create_dir(&store).unwrap();
    let o = calibrate(None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("calibration.json"), "{}", stderr(&o));
    std::fs::remove_dir(&store).unwrap();

    mkfifo(&store);
    let keep = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&store)
        .unwrap();
    let o = calibrate(None);
    drop(keep);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let t = std::fs::symlink_metadata(&store).unwrap().file_type();
    assert!(t.is_fifo(), "the FIFO is still a FIFO");
    std::fs::remove_file(&store).unwrap();

    let o = calibrate(None);
    assert!(o.status.success(), "{}", stderr(&o));
    let stored = std::fs::read(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o444)).unwrap();
    let o = calibrate(None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read(&store).unwrap(), stored);
    assert!(partials(&store_dir).is_empty());
}
