//! What morphrt reads whole is a regular file: a FIFO, a device, a
//! directory given as a scene (to any command) or found as a resource is
//! refused up front, naming the path and what it is, instead of waiting
//! for a writer or reading a device that never ends.

use crate::support as common;

use common::{is_root, memory_devices, root, temp_dir};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs the binary in `dir` with a deadline, so a command that would wait
/// on a FIFO for ever fails the test instead of hanging it.
fn morphrt_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = common::bin()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("`morphrt {}` did not finish", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path in the test's own directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Every command that reads a scene, on `scene`.
fn every_reader(scene: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["check", scene],
        vec!["render", scene, "-o", "out.wav", "-d", "0.1s"],
        vec!["plot", scene, "-o", "out.png", "-d", "0.1s"],
        vec!["bench", scene, "-d", "0.1s", "--runs", "1"],
        vec![
            "run",
            scene,
            "--device",
            "clock",
            "--duration",
            "0.1s",
            "--no-journal",
            "--no-watch",
        ],
    ]
}

// `render fifo.json` and `check fifo.json` waited for ever for a writer;
// a character device that reads zeros (`/dev/zero`, `/dev/full`) would
// have been read until memory ran out.
#[test]
fn a_scene_that_is_not_a_regular_file_is_refused_saying_what_it_is() {
    let dir = temp_dir("inputs-scene");
    mkfifo(&dir.join("fifo.json"));
    std::fs::create_dir(dir.join("dir.json")).unwrap();
    let mut cases = vec![
        ("fifo.json", "it is a FIFO (named pipe)"),
        ("dir.json", "it is a directory"),
    ];
    if is_root() {
        memory_devices(&dir);
        cases.push(("full", "it is a character device"));
    } else {
        println!("not root: the character-device case is skipped (mknod needs root)");
    }
    for (scene, what) in cases {
        for args in every_reader(scene) {
            let (code, err) = morphrt_in(&dir, &args);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!(
                    "cannot read scene file `{scene}`: {what}, not a regular file"
                )),
                "{args:?}: {err}"
            );
        }
    }
    // A link to a FIFO is the FIFO.
    std::os::unix::fs::symlink("fifo.json", dir.join("link.json")).unwrap();
    let (code, err) = morphrt_in(&dir, &["check", "link.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("it is a FIFO"), "{err}");
    assert!(!dir.join("out.wav").exists() && !dir.join("out.png").exists());
}

// Standard input as the scene still works.
#[test]
fn a_scene_on_standard_input_still_renders() {
    let dir = temp_dir("inputs-stdin");
    let scene = std::fs::File::open(root().join("scenes/drone.json")).unwrap();
    let o = common::bin()
        .args(["render", "-", "-o", "out.wav", "-d", "0.1s"])
        .current_dir(&dir)
        .stdin(scene)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("out.wav").is_file());
}

// A device as a resource is refused as a device (a FIFO or a directory:
// tests/it/messages.rs).
#[test]
fn a_resource_that_is_a_device_is_refused_as_one() {
    if !is_root() {
        println!("not root: skipped (mknod needs root)");
        return;
    }
    let dir = temp_dir("inputs-resource");
    let resources = dir.join("resources");
    std::fs::create_dir(&resources).unwrap();
    memory_devices(&resources);
    std::fs::write(
        dir.join("s.json"),
        r#"{"version": "1.0", "nodes": [{"id": "p", "op": "sampler", "params": {"file": "@resource:full"}}],
            "outputs": {"main": ["p"]}}"#,
    )
    .unwrap();
    let (code, err) = morphrt_in(&dir, &["check", "s.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("resource `full` is not a file: `") && err.contains("is a character device"),
        "{err}"
    );
}

// `run --resume fifo.json`, `render --resume fifo.json` and `replay
// fifo.jsonl` waited for ever for a writer: a snapshot and a journal are
// read only from regular files too.
#[test]
fn a_snapshot_or_a_journal_that_is_not_a_regular_file_is_refused() {
    let dir = temp_dir("inputs-snapshot-journal");
    std::fs::copy(root().join("scenes/drone.json"), dir.join("s.json")).unwrap();
    mkfifo(&dir.join("snap.json"));
    mkfifo(&dir.join("j.jsonl"));
    let resume = ["--resume", "snap.json"];
    for args in [
        [
            &["render", "s.json", "-o", "out.wav", "-d", "0.1s"][..],
            &resume,
        ]
        .concat(),
        [
            &["run", "s.json", "--device", "clock", "--duration", "0.1s"][..],
            &["--no-journal", "--no-watch"],
            &resume,
        ]
        .concat(),
        vec!["replay", "j.jsonl", "-o", "out.wav"],
        vec!["replay", "--info", "j.jsonl"],
    ] {
        let (code, err) = morphrt_in(&dir, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("it is a FIFO (named pipe), not a regular file"),
            "{args:?}: {err}"
        );
    }
    assert!(!dir.join("out.wav").exists());
}
