//! `run --device jack`, against a JACK server each test starts for itself
//! (`jackd -d dummy`, no sound card, stopped by its PID when the test
//! ends, also when it fails) and names only in the environment of the
//! processes it runs. What reaches JACK is recorded from JACK's side
//! (`jack-record`). Without `jackd` installed every test says so and
//! passes (CI installs it: `.ci/run`).

use crate::support as common;

use common::{read_f32, render, stderr, temp_dir, KillOnDrop};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A `jackd` of its own (dummy driver), stopped by its PID when dropped.
pub(crate) struct Server {
    child: std::process::Child,
    name: String,
    _slot: Slot,
}

/// Servers running at once. JACK's registry has room for 8 servers on a
/// machine and frees the entry of a server that died without cleaning up
/// (SIGKILL) only when a server of the same name starts: so the servers
/// here take their names from [`SERVERS_AT_ONCE`] places, `morphrt-it-0`
/// and `morphrt-it-1`, and at most that many run together: two, so that
/// on a machine of two cores running other tests beside them, the
/// recorders that compare what JACK played do not lose cycles.
const SERVERS_AT_ONCE: usize = 2;

static PLACES: (
    std::sync::Mutex<[bool; SERVERS_AT_ONCE]>,
    std::sync::Condvar,
) = (
    std::sync::Mutex::new([false; SERVERS_AT_ONCE]),
    std::sync::Condvar::new(),
);

/// One of the [`SERVERS_AT_ONCE`] places, given back when dropped.
struct Slot(usize);

impl Slot {
    fn take() -> Slot {
        let (places, freed) = &PLACES;
        let mut taken = places.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(i) = taken.iter().position(|t| !t) {
                taken[i] = true;
                return Slot(i);
            }
            taken = freed.wait(taken).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let (places, freed) = &PLACES;
        places.lock().unwrap_or_else(|e| e.into_inner())[self.0] = false;
        freed.notify_one();
    }
}

impl Server {
    /// Starts `jackd -n NAME -d dummy -r RATE -p PERIOD` (synchronous, no
    /// real-time scheduling, a long client timeout) and waits until it
    /// takes clients; `None`
    /// (saying so) when `jackd` is not installed.
    pub(crate) fn start(rate: u32, period: u32) -> Option<Server> {
        if Command::new("jackd").arg("--version").output().is_err() {
            eprintln!("skipped: jackd is not installed (apt-get install jackd2 jack-tools)");
            return None;
        }
        let slot = Slot::take();
        let name = format!("morphrt-it-{}", slot.0);
        let child = jackd(&name, rate, period);
        let server = Server {
            child,
            name,
            _slot: slot,
        };
        server.wait_ready();
        Some(server)
    }

    /// Starts the stopped server again, under the same name.
    fn restart(&mut self, rate: u32, period: u32) {
        self.child = jackd(&self.name, rate, period);
        self.wait_ready();
    }

    /// Waits until the server takes clients.
    fn wait_ready(&self) {
        let server = self;
        let deadline = Instant::now() + Duration::from_secs(20);
        while !server.ports().iter().any(|p| p == "system:playback_1") {
            assert!(
                Instant::now() < deadline,
                "jackd {} did not start",
                server.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `program`, talking to this server.
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("JACK_DEFAULT_SERVER", &self.name);
        c
    }

    /// `morphrt ARGS…` against this server.
    fn morphrt(&self, args: &[&str]) -> Command {
        let mut c = self.command(env!("CARGO_BIN_EXE_morphrt"));
        c.args(args).current_dir(common::root());
        c
    }

    /// `morphrt run ARGS…` to its end.
    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        self.morphrt(&all).output().expect("run morphrt")
    }

    /// `morphrt run ARGS…` in the background, stderr discarded.
    fn spawn(&self, args: &[&str]) -> KillOnDrop {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        self.morphrt(&all)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map(KillOnDrop)
            .expect("run morphrt")
    }

    /// Every port of the server (`jack_lsp`).
    fn ports(&self) -> Vec<String> {
        self.lsp(&[]).lines().map(str::to_string).collect()
    }

    /// `jack_lsp ARGS…`'s output (empty when the server does not answer).
    fn lsp(&self, args: &[&str]) -> String {
        self.command("jack_lsp")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Every connection from a client's output port (not the system's),
    /// as (output port, input port).
    fn connections(&self) -> Vec<(String, String)> {
        self.all_connections()
            .into_iter()
            .filter(|(a, _)| !a.starts_with("system:"))
            .collect()
    }

    /// Every connection as (output port, input port), each once.
    fn all_connections(&self) -> Vec<(String, String)> {
        let mut all = Vec::new();
        let mut from = String::new();
        for l in self.lsp(&["-c"]).lines() {
            match l.strip_prefix("   ") {
                Some(to) => all.push((from.clone(), to.to_string())),
                None => from = l.to_string(),
            }
        }
        let outputs = self.lsp(&["-p"]);
        let is_output = |port: &str| {
            let mut lines = outputs.lines();
            while let Some(l) = lines.next() {
                if l == port {
                    return lines.next().is_some_and(|p| p.contains("output"));
                }
            }
            false
        };
        all.into_iter().filter(|(a, _)| is_output(a)).collect()
    }

    /// Waits (20 s at most) until `port` exists.
    fn wait_port(&self, port: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.ports().iter().any(|p| p == port) {
            assert!(
                Instant::now() < deadline,
                "no port {port}: {:?}",
                self.ports()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A recorder (`jack-record`) of `channels` unconnected inputs for
    /// `seconds`, writing a float WAV to `path`.
    fn recorder(&self, path: &Path, channels: usize, seconds: u32) -> KillOnDrop {
        let before = self.ports();
        let child = self
            .command("jack-record")
            .args(["-n", &channels.to_string(), "-b", "262144"])
            .args(["-t", &seconds.to_string()])
            .arg(path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(KillOnDrop)
            .expect("start jack-record");
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.ports().len() < before.len() + channels {
            assert!(Instant::now() < deadline, "jack-record did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    /// Stops the server (SIGTERM) and waits for it to end.
    fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: a signal to our own child, not reaped yet.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while let Ok(None) = self.child.try_wait() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `jackd -n NAME -d dummy -r RATE -p PERIOD` (synchronous, no real-time
/// scheduling, a long client timeout).
fn jackd(name: &str, rate: u32, period: u32) -> std::process::Child {
    Command::new("jackd")
        // A client late by up to 10 s is waited for, not skipped: on a
        // busy machine without real-time scheduling the recorder must
        // still get every cycle.
        .args(["--no-realtime", "-S", "-t", "10000", "-n", name])
        .args(["-d", "dummy"])
        .args(["-r", &rate.to_string(), "-p", &period.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start jackd")
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits for a recorder to finish its time.
fn finish(mut recorder: KillOnDrop) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Ok(None) = recorder.try_wait() {
        assert!(Instant::now() < deadline, "jack-record did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Frames of `x` (interleaved, `ch` wide) from its first non-silent one.
fn from_first_sound(x: &[f32], ch: usize) -> &[f32] {
    let first = x
        .chunks(ch)
        .position(|f| f.iter().any(|s| *s != 0.0))
        .unwrap_or(x.len() / ch);
    &x[first * ch..]
}

/// Asserts that `recorded` holds `rendered` bit for bit from the first
/// non-silent frame of each, over at least `min_frames` frames (the
/// recording's end may cut the render short), and silence after it.
fn assert_same_bits(recorded: &[f32], rendered: &[f32], ch: usize, min_frames: usize, log: &str) {
    let (a, b) = (
        from_first_sound(recorded, ch),
        from_first_sound(rendered, ch),
    );
    let n = a.len().min(b.len());
    assert!(
        n >= min_frames * ch,
        "only {} frames recorded from the first sound; log:\n{log}",
        n / ch
    );
    if let Some(i) = (0..n).find(|i| a[*i].to_bits() != b[*i].to_bits()) {
        panic!(
            "frame {} channel {} differs: JACK {} vs render {}; log:\n{log}",
            i / ch,
            i % ch,
            a[i],
            b[i]
        );
    }
}

/// What a run printed, and its exit code.
fn described(o: &Output) -> String {
    format!("exit {:?}\n{}", o.status.code(), stderr(o))
}

#[test]
fn what_jack_plays_is_what_render_writes_bit_for_bit_under_each_profile() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let dir = temp_dir("bits");
    for profile in ["strict", "repro", "live"] {
        let (rec, ren) = (dir.join(format!("{profile}-jack.wav")), dir.join("r.wav"));
        let recorder = server.recorder(&rec, 2, 6);
        let o = server.run(&[
            "scenes/pan-sweep.json",
            "--device",
            "jack",
            "--profile",
            profile,
            "--duration",
            "1s",
            "--no-journal",
            "--connect",
            "jack-record",
        ]);
        let log = described(&o);
        assert!(o.status.success(), "{log}");
        finish(recorder);
        let r = render(
            "scenes/pan-sweep.json",
            &ren,
            &["-d", "1s", "--profile", profile],
        );
        assert!(r.status.success(), "{}", stderr(&r));
        let recorded = read_f32(&rec);
        let rendered = read_f32(&ren);
        assert_same_bits(&recorded, &rendered, 2, 40_000, &log);
    }
}

#[test]
fn the_client_is_named_morphrt_and_plays_into_the_system_playback() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let mut child = server.spawn(&["scenes/drone.json", "--device", "jack", "--no-journal"]);
    server.wait_port("morphrt:out_2");
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.connections().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut c = server.connections();
    c.sort();
    assert_eq!(
        c,
        [
            ("morphrt:out_1".to_string(), "system:playback_1".to_string()),
            ("morphrt:out_2".to_string(), "system:playback_2".to_string())
        ]
    );
    assert!(
        !server.ports().iter().any(|p| p.starts_with("morphrt:in")),
        "a scene without input registers no input port: {:?}",
        server.ports()
    );
    let _ = child.kill();
}

#[test]
fn a_named_client_with_connect_none_is_left_unconnected_and_a_second_one_is_numbered() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let args = [
        "scenes/drone.json",
        "--device",
        "jack",
        "--no-journal",
        "--name",
        "pad",
        "--connect",
        "none",
    ];
    let _first = server.spawn(&args);
    server.wait_port("pad:out_1");
    let _second = server.spawn(&args);
    server.wait_port("pad-01:out_1");
    // Both clients have played a while: nothing was connected.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(server.connections(), Vec::<(String, String)>::new());
}

#[test]
fn connect_takes_the_input_ports_a_pattern_matches_and_refuses_one_that_matches_none() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let o = server.run(&[
        "scenes/drone.json",
        "--device",
        "jack",
        "--no-journal",
        "--duration",
        "1s",
        "--connect",
        "no-such-client",
    ]);
    let log = described(&o);
    assert_eq!(o.status.code(), Some(1), "{log}");
    assert!(
        log.contains("--connect no-such-client: no JACK input port matches it; input ports: system:playback_1, system:playback_2"),
        "{log}"
    );
    let _child = server.spawn(&[
        "scenes/drone.json",
        "--device",
        "jack",
        "--no-journal",
        "--connect",
        "playback_2",
    ]);
    server.wait_port("morphrt:out_1");
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.connections().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        server.connections(),
        [("morphrt:out_1".to_string(), "system:playback_2".to_string())]
    );
}

#[test]
fn a_scene_that_sets_another_rate_is_refused_naming_both_and_one_that_does_not_plays_at_the_servers(
) {
    let Some(server) = Server::start(44_100, 64) else {
        return;
    };
    let dir = temp_dir("rates");
    let pinned = dir.join("pinned.json");
    std::fs::write(
        &pinned,
        common::DC.replace("{\"version\"", "{\"sample_rate\": 48000, \"version\""),
    )
    .unwrap();
    let o = server.run(&[
        pinned.to_str().unwrap(),
        "--device",
        "jack",
        "--no-journal",
        "--duration",
        "200ms",
    ]);
    let log = described(&o);
    assert_eq!(o.status.code(), Some(1), "{log}");
    assert!(
        log.contains("runs at 44100 Hz and the scene's `sample_rate` is 48000 Hz"),
        "{log}"
    );
    let free = dir.join("free.json");
    std::fs::write(&free, common::DC).unwrap();
    let cap = dir.join("free.wav");
    let o = server.run(&[
        free.to_str().unwrap(),
        "--device",
        "jack",
        "--no-journal",
        "--duration",
        "200ms",
        "--capture",
        cap.to_str().unwrap(),
    ]);
    let log = described(&o);
    assert!(o.status.success(), "{log}");
    assert!(log.contains("44100 Hz, block"), "{log}");
    let spec = hound::WavReader::open(&cap).unwrap().spec();
    assert_eq!(spec.sample_rate, 44_100);
}

#[test]
fn a_buffer_size_change_is_followed_without_losing_a_frame() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let dir = temp_dir("bufsize");
    let (rec, ren) = (dir.join("jack.wav"), dir.join("render.wav"));
    let recorder = server.recorder(&rec, 2, 8);
    let mut child = server.spawn(&[
        "scenes/pan-sweep.json",
        "--device",
        "jack",
        "--duration",
        "3s",
        "--no-journal",
        "--connect",
        "jack-record",
    ]);
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    std::thread::sleep(Duration::from_millis(1000));
    let b = server.command("jack_bufsize").arg("256").output().unwrap();
    assert!(b.status.success(), "{}", stderr(&b));
    let status = child.wait().unwrap();
    log.extend(lines.try_iter());
    let log = log.join("\n");
    assert!(status.success(), "{log}");
    finish(recorder);
    let r = render("scenes/pan-sweep.json", &ren, &["-d", "3s"]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert_same_bits(&read_f32(&rec), &read_f32(&ren), 2, 120_000, &log);
}

#[test]
fn a_server_that_stops_ends_the_session_keeping_the_take_and_the_journal() {
    let Some(mut server) = Server::start(48_000, 64) else {
        return;
    };
    let dir = temp_dir("server-gone");
    let (cap, journal) = (dir.join("take.wav"), dir.join("take.jsonl"));
    let mut child = server.spawn(&[
        "scenes/drone.json",
        "--device",
        "jack",
        "--duration",
        "60s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    // Half a second and more played (audio, not wall time).
    common::wait_captured(&cap, 30_000, 2);
    server.stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "morphrt did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    log.extend(lines.try_iter());
    let log = log.join("\n");
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains("the audio device failed and could not be reopened"),
        "{log}"
    );
    let played = read_f32(&cap);
    assert!(
        played.len() >= 2 * 24_000,
        "the take is kept: {} samples; {log}",
        played.len()
    );
    common::assert_replays(&journal, &cap, &log);
}

#[test]
fn devices_lists_the_jack_server_and_its_ports() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let o = server.morphrt(&["devices"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    let jack = &out[out.find("\nJACK:\n").expect("a JACK heading")..];
    assert!(
        jack.contains(&format!("    jack  (JACK server `{}`)", server.name)),
        "{out}"
    );
    assert!(
        jack.contains("default: 48000 Hz, buffer 64 frames, f32"),
        "{out}"
    );
    assert!(
        jack.contains("ports it can play into: system:playback_1, system:playback_2"),
        "{out}"
    );
    assert!(
        jack.contains("ports it can record from: system:capture_1, system:capture_2"),
        "{out}"
    );
}

#[test]
fn devices_says_so_in_one_line_when_no_jack_server_runs() {
    let o = common::bin()
        .arg("devices")
        .env("JACK_DEFAULT_SERVER", "morphrt-it-no-such-server")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    let jack = &out[out.find("\nJACK:\n").expect("a JACK heading")..];
    let note = jack.lines().nth(2).unwrap_or_default();
    assert!(
        note == "  no JACK server `morphrt-it-no-such-server` is running (start one, e.g. `jackd -d alsa`)"
            || note.starts_with("  JACK is not installed"),
        "{out}"
    );
}

/// A note on a JACK MIDI port gates a `dc` node: its level is 1 while the
/// note is held.
const GATE: &str = r#"{"version": "1.0", "nodes": [{"id": "d", "op": "dc", "params": {"value": 0}}],
 "outputs": {"main": "d"},
 "controls": [{"midi": {"note": "any"}, "node": "d", "param": "value", "min": 0, "max": 1}]}"#;

#[test]
fn jack_midi_lands_each_note_at_the_frame_it_was_sent_and_replays() {
    let Some(server) = Server::start(48_000, 256) else {
        return;
    };
    let dir = temp_dir("midi");
    let scene = dir.join("gate.json");
    std::fs::write(&scene, GATE).unwrap();
    let (cap, journal) = (dir.join("take.wav"), dir.join("take.jsonl"));
    let mut child = server.spawn(&[
        scene.to_str().unwrap(),
        "--device",
        "jack",
        "--midi",
        "jack",
        "--profile",
        "repro",
        "--block-size",
        "1024",
        "--duration",
        "8s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let lines = common::stderr_lines(&mut child);
    server.wait_port("morphrt:midi_in");
    // A loop of 9600 frames: note 60 from frame 1000 for 2400 frames.
    let _seq = server
        .command("jack_midiseq")
        .args(["seq", "9600", "1000", "60", "2400"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(KillOnDrop)
        .unwrap();
    server.wait_port("seq:out");
    let c = server
        .command("jack_connect")
        .args(["seq:out", "morphrt:midi_in"])
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", stderr(&c));
    let status = child.wait().unwrap();
    let log: Vec<String> = lines.try_iter().collect();
    let log = log.join("\n");
    assert!(status.success(), "{log}");
    assert!(
        log.contains("MIDI: listening on the JACK client's port midi_in"),
        "{log}"
    );
    let landed: Vec<(u64, bool)> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| {
            r["type"] == "control"
                && r["from"]
                    .as_str()
                    .is_some_and(|f| f.starts_with("midi jack"))
        })
        .map(|r| {
            let on = r["from"].as_str().unwrap().contains("note on");
            (r["at"].as_u64().unwrap(), on)
        })
        .collect();
    assert!(landed.len() >= 6, "{landed:?}\n{log}");
    for w in landed.windows(2) {
        let ((a, on_a), (b, on_b)) = (w[0], w[1]);
        assert_ne!(on_a, on_b, "{landed:?}");
        // On to off: the note's length; off to the next on: the rest of the loop.
        let want = if on_a { 2400 } else { 9600 - 2400 };
        assert_eq!(b - a, want, "{landed:?}\n{log}");
    }
    // Heard from the sample each landed on.
    let played = read_f32(&cap);
    for (at, on) in &landed {
        let at = *at as usize;
        if 2 * at < played.len() {
            assert_eq!(played[2 * at], if *on { 1.0 } else { 0.0 }, "at {at}");
            assert_eq!(
                played[2 * (at - 1)],
                if *on { 0.0 } else { 1.0 },
                "before {at}"
            );
        }
    }
    common::assert_replays(&journal, &cap, &log);
}

/// Passes the first input channel to the main bus.
const THROUGH: &str = r#"{"version": "1.0", "nodes": [{"id": "mic", "op": "input", "params": {"channel": 0}}],
 "outputs": {"main": ["mic"]}}"#;

#[test]
fn a_scene_that_reads_input_records_from_input_ports_connected_to_the_system_capture() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let dir = temp_dir("input");
    let scene = dir.join("through.json");
    std::fs::write(&scene, THROUGH).unwrap();
    let mut child = server.spawn(&[scene.to_str().unwrap(), "--device", "jack", "--no-journal"]);
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(
        &lines,
        "input: jack (1 ch, 32-bit float, 48000 Hz",
        &mut log,
    );
    server.wait_port("morphrt:in_1");
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = ("system:capture_1".to_string(), "morphrt:in_1".to_string());
    while !server.all_connections().contains(&want) {
        assert!(
            Instant::now() < deadline,
            "{:?}\n{}",
            server.all_connections(),
            log.join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !server.ports().iter().any(|p| p == "morphrt:in_2"),
        "one port per channel the scene reads: {:?}",
        server.ports()
    );
    let _ = child.kill();
}

#[test]
fn xruns_the_server_reports_count_in_the_summary() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let mut child = server.spawn(&[
        "scenes/drone.json",
        "--device",
        "jack",
        "--duration",
        "3s",
        "--no-journal",
    ]);
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    // A server held still misses its cycles' deadlines: xruns it reports.
    let pid = server.child.id() as libc::pid_t;
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: signals to our own child, not reaped yet.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        std::thread::sleep(Duration::from_millis(100));
        unsafe { libc::kill(pid, libc::SIGCONT) };
    }
    let status = child.wait().unwrap();
    log.extend(lines.try_iter());
    let log = log.join("\n");
    assert!(status.success(), "{log}");
    let summary = log
        .lines()
        .find(|l| l.starts_with("played "))
        .unwrap_or_else(|| panic!("no summary: {log}"));
    let number_before = |what: &str| -> u64 {
        let at = summary
            .find(what)
            .unwrap_or_else(|| panic!("no `{what}`: {summary}"));
        summary[..at]
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    let xruns: u64 = summary
        .split("xruns ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no xruns: {summary}"));
    let own = number_before(" started late") + number_before(" overran their budget");
    assert!(
        summary.contains("(JACK: the server's xruns and morphrt's late or overrunning callbacks"),
        "{summary}"
    );
    // morphrt's own count is at most one per late or overrunning
    // callback: the rest are the server's.
    assert!(xruns > own, "no xrun of the server's counted: {summary}");
}

#[test]
fn without_a_server_jack_is_refused_saying_none_runs() {
    let o = common::bin()
        .args(["run", "scenes/drone.json", "--device", "jack"])
        .args(["--duration", "200ms", "--no-journal"])
        .env("JACK_DEFAULT_SERVER", "morphrt-it-no-such-server")
        .current_dir(common::root())
        .output()
        .unwrap();
    let log = described(&o);
    assert_eq!(o.status.code(), Some(1), "{log}");
    assert!(
        log.contains("the audio device `jack` cannot play (no JACK server `morphrt-it-no-such-server` is running")
            || log.contains("JACK is not installed"),
        "{log}"
    );
}

#[test]
fn midi_jack_without_device_jack_is_refused() {
    let o = common::morphrt(&[
        "run",
        "scenes/drone.json",
        "--device",
        "clock",
        "--midi",
        "jack",
        "--duration",
        "200ms",
        "--no-journal",
    ]);
    let log = described(&o);
    assert_eq!(o.status.code(), Some(2), "{log}");
    assert!(
        log.contains("--midi jack reads the MIDI port of the JACK client: it needs --device jack"),
        "{log}"
    );
}

/// A sixteenth-note sequencer's gate alone on the main bus, at 120 bpm: a
/// step every 6000 samples at 48 kHz.
const SIXTEENTHS: &str = r#"{"version": "1.0", "tempo": "120bpm", "nodes": [
  {"id": "seq", "op": "sequencer", "params": {"steps": [1], "rate": "1/16", "gate": 0.5}}],
 "outputs": {"main": "seq:gate"}}"#;

/// `jack_transport` as the server's timebase master, reading commands
/// from its stdin (`play`, `stop`, `tempo 150`).
struct TimebaseMaster {
    child: KillOnDrop,
}

impl TimebaseMaster {
    fn start(server: &Server) -> TimebaseMaster {
        let child = server
            .command("jack_transport")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(KillOnDrop)
            .expect("start jack_transport");
        let mut master = TimebaseMaster { child };
        master.say("master");
        master
    }

    fn say(&mut self, command: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().expect("piped stdin");
        writeln!(stdin, "{command}").expect("jack_transport reads commands");
        stdin.flush().unwrap();
    }
}

/// The samples where a gate (channel 0 of a stereo capture) rises.
fn rises(stereo: &[f32]) -> Vec<u64> {
    let gate: Vec<f32> = stereo.chunks(2).map(|f| f[0]).collect();
    (0..gate.len())
        .filter(|&i| gate[i] >= 0.5 && (i == 0 || gate[i - 1] < 0.5))
        .map(|i| i as u64)
        .collect()
}

#[test]
fn transport_follow_holds_the_scene_while_stopped_and_moves_the_steps_to_a_tempo_change() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let dir = temp_dir("transport");
    let scene = dir.join("steps.json");
    std::fs::write(&scene, SIXTEENTHS).unwrap();
    let (cap, journal) = (dir.join("take.wav"), dir.join("take.jsonl"));
    let mut master = TimebaseMaster::start(&server);
    let mut child = server.spawn(&[
        scene.to_str().unwrap(),
        "--device",
        "jack",
        "--transport",
        "follow",
        "--profile",
        "repro",
        "--duration",
        "3s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    // Stopped: the 3 s session does not advance.
    std::thread::sleep(Duration::from_millis(4000));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the session ended while the transport was stopped: {}",
        log.join("\n")
    );
    master.say("play");
    // Three quarters of a second played (audio, not wall time).
    common::wait_captured(&cap, 36_000, 2);
    master.say("tempo 150");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "morphrt did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    log.extend(lines.try_iter());
    let log = log.join("\n");
    assert!(status.success(), "{log}");
    assert!(log.contains("tempo 150bpm applied at "), "{log}");
    let handovers: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["type"] == "handover")
        .collect();
    assert_eq!(handovers.len(), 1, "{handovers:?}\n{log}");
    assert_eq!(handovers[0]["reason"], "tempo", "{handovers:?}");
    let text: serde_json::Value =
        serde_json::from_str(handovers[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["tempo"], "150bpm");
    let s = handovers[0]["swap_at"].as_u64().unwrap();
    let played = read_f32(&cap);
    // The whole 3 s played, from the scene's start: none of it while the
    // transport was stopped.
    assert_eq!(played.len(), 2 * 144_000, "{log}");
    let got = rises(&played);
    // Before S: a step every 6000 samples. From S, 150 bpm: 4800, the
    // step position at S kept, so step k is at S + (k − S/6000) · 4800 =
    // 4800·k + S/5 (rounded; S/5 is never a tie).
    let want: Vec<u64> = (0..)
        .map(|k: u64| {
            if k * 6000 < s {
                k * 6000
            } else {
                4800 * k + (s as f64 / 5.0).round() as u64
            }
        })
        .take_while(|&at| at < 144_000)
        .collect();
    assert_eq!(got, want, "swap at {s}\n{log}");
    assert!(
        want.iter().filter(|&&at| at < s).count() >= 4 && want.iter().any(|&at| at > s),
        "S {s}: {want:?}"
    );
    common::assert_replays(&journal, &cap, &log);
}

#[test]
fn transport_follow_needs_device_jack_and_a_scene_tempo() {
    let o = common::morphrt(&[
        "run",
        "scenes/drone.json",
        "--device",
        "clock",
        "--transport",
        "follow",
        "--duration",
        "200ms",
        "--no-journal",
    ]);
    let log = described(&o);
    assert_eq!(o.status.code(), Some(2), "{log}");
    assert!(
        log.contains("--transport follow follows the JACK transport: it needs --device jack"),
        "{log}"
    );
    let o = common::morphrt(&[
        "run",
        "scenes/drone.json",
        "--device",
        "jack",
        "--transport",
        "follow",
        "--duration",
        "200ms",
        "--no-journal",
    ]);
    let log = described(&o);
    assert_eq!(o.status.code(), Some(2), "{log}");
    assert!(
        log.contains("--transport follow sets the scene's tempo, and scenes/drone.json has no `tempo`: add `\"tempo\": \"120bpm\"` at its top level"),
        "{log}"
    );
}

#[test]
fn the_output_ports_are_named_after_the_scenes_channel_names() {
    let Some(server) = Server::start(48_000, 64) else {
        return;
    };
    let dir = temp_dir("port-names");
    let stereo = dir.join("stereo.json");
    std::fs::write(
        &stereo,
        common::DC
            .replace("\"main\": \"d\"", "\"main\": [\"d\", \"d\"]")
            .replace(
                "{\"version\"",
                "{\"channel_names\": [\"left\", \"right\"], \"version\"",
            ),
    )
    .unwrap();
    let _child = server.spawn(&[stereo.to_str().unwrap(), "--device", "jack", "--no-journal"]);
    // A mono bus plays on two ports: its one name, numbered.
    let mono = dir.join("mono.json");
    std::fs::write(
        &mono,
        common::DC.replace("{\"version\"", "{\"channel_names\": [\"pad\"], \"version\""),
    )
    .unwrap();
    let _mono = server.spawn(&[
        mono.to_str().unwrap(),
        "--device",
        "jack",
        "--no-journal",
        "--name",
        "m",
        "--connect",
        "none",
    ]);
    server.wait_port("m:pad_2");
    assert!(server.ports().iter().any(|p| p == "m:pad_1"));
    server.wait_port("morphrt:right");
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.connections().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut c = server.connections();
    c.sort();
    assert_eq!(
        c,
        [
            ("morphrt:left".to_string(), "system:playback_1".to_string()),
            ("morphrt:right".to_string(), "system:playback_2".to_string())
        ]
    );
    assert!(
        !server.ports().iter().any(|p| p.starts_with("morphrt:out_")),
        "{:?}",
        server.ports()
    );
}

#[test]
fn with_reconnect_a_server_that_stops_and_returns_is_played_on_without_a_gap() {
    let Some(mut server) = Server::start(48_000, 64) else {
        return;
    };
    let dir = temp_dir("reconnect");
    let (cap, journal, ren) = (
        dir.join("take.wav"),
        dir.join("take.jsonl"),
        dir.join("render.wav"),
    );
    let mut child = server.spawn(&[
        "scenes/pan-sweep.json",
        "--device",
        "jack",
        "--reconnect",
        "--duration",
        "3s",
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ]);
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    common::wait_captured(&cap, 24_000, 2);
    server.stop();
    common::wait_line(
        &lines,
        "warning: the audio device is gone; waiting for it to return (--reconnect)",
        &mut log,
    );
    // Gone for a while: the session waits rather than ending.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "{}", log.join("\n"));
    server.restart(48_000, 64);
    common::wait_line(&lines, "the audio device is back after ", &mut log);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "morphrt did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    log.extend(lines.try_iter());
    let log = log.join("\n");
    assert!(status.success(), "{log}");
    // The take is the whole 3 s, without a gap: the render's bits.
    let r = render("scenes/pan-sweep.json", &ren, &["-d", "3s"]);
    assert!(r.status.success(), "{}", stderr(&r));
    let (played, rendered) = (read_f32(&cap), read_f32(&ren));
    assert_eq!(played.len(), rendered.len(), "{log}");
    assert!(
        played == rendered,
        "the take differs from the render; {log}"
    );
    common::assert_replays(&journal, &cap, &log);
}
