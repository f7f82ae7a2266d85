//! What `morphrt run --device clock` says while it plays, checked against
//! the real binary: an edit of a setting the session fixes is said to be
//! not applied (and replays bit for bit), an event an edit adds in the past
//! is said never to fire, a resource edit's latency runs from the edit, a
//! resumed session's timeline has one timebase, the clock device says
//! what its xruns are, a worker late for the callback is named, and the
//! workers run under real-time scheduling where the system allows it (and
//! `run` says so in one line where it does not).

use crate::support as common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A `morphrt run` of `scene` on the clock device, with commands on stdin
/// and stderr read line by line.
struct Session {
    child: common::KillOnDrop,
    lines: Receiver<String>,
    log: Vec<String>,
}

impl Session {
    fn start(scene: &Path, args: &[&str]) -> Session {
        Session::start_under(&[], scene, args)
    }

    /// [`start`](Self::start) under `wrapper` (a program and its arguments
    /// that runs the command it is given, such as `setpriv …`).
    fn start_under(wrapper: &[&str], scene: &Path, args: &[&str]) -> Session {
        let bin = common::bin();
        let mut command = match wrapper.split_first() {
            None => bin,
            Some((program, rest)) => {
                let mut c = std::process::Command::new(program);
                c.args(rest).arg(bin.get_program());
                c.envs(bin.get_envs().filter_map(|(k, v)| Some((k, v?))));
                c
            }
        };
        let mut child = command
            .arg("run")
            .arg(scene)
            .args(["--device", "clock"])
            .args(args)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .map(common::KillOnDrop)
            .expect("run morphrt");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stderr).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut s = Session {
            child,
            lines,
            log: Vec::new(),
        };
        s.wait("playing ");
        s
    }

    /// Waits for a line containing `what` and returns it (a generous
    /// timeout only keeps a broken build from hanging).
    fn wait(&mut self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let l = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no line with `{what}`; log:\n{}", self.log.join("\n")));
            self.log.push(l.clone());
            if l.contains(what) {
                return l;
            }
        }
    }

    /// Quits and returns everything it printed.
    fn quit(mut self) -> String {
        std::thread::sleep(Duration::from_millis(150));
        writeln!(self.child.stdin.as_mut().unwrap(), "q").unwrap();
        let status = self.child.wait().unwrap();
        self.log.extend(self.lines.iter());
        let all = self.log.join("\n");
        assert!(status.success(), "{all}");
        all
    }
}

/// Saves `text` over the scene as editors do (see `common::save_as_editor`).
fn save(path: &Path, text: &str) {
    common::save_as_editor(path, text, Duration::from_millis(300));
}

#[test]
fn an_edit_of_the_sample_rate_or_block_size_says_it_is_not_applied() {
    let dir = common::temp_dir("fixed-settings");
    let path = dir.join("scene.json");
    let journal = dir.join("j").join("session.jsonl");
    let capture = dir.join("cap.wav");
    std::fs::write(&path, common::osc_into_gain("saw", 48000, 64, 0.5, "")).unwrap();
    let mut s = Session::start(
        &path,
        &[
            "--journal",
            journal.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
        ],
    );
    // Only the sample rate: nothing else to apply.
    save(&path, &common::osc_into_gain("saw", 44100, 64, 0.5, ""));
    s.wait(
        "warning: sample_rate 48000 → 44100 is not applied while playing: it is fixed for the session",
    );
    s.wait("nothing else in the edit changed; nothing applied");
    // The block size and a param: the param applies.
    save(&path, &common::osc_into_gain("saw", 48000, 256, 0.25, ""));
    let w = s.wait("warning: block_size 64 → 256 is not applied while playing");
    assert!(w.contains("blocks of 64") && w.contains("restart"), "{w}");
    s.wait("the rest of the edit is applied");
    s.wait("`out.gain` glides 0.5 → 0.25");
    let all = s.quit();
    assert!(all.contains("edits applied 1,"), "{all}");

    // The journal holds the one handover, and replays what was played.
    let text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(text.matches(r#""type":"handover""#).count(), 1, "{text}");
    let out = dir.join("replayed.wav");
    let o = common::morphrt(&[
        "replay",
        journal.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        common::read_f32(&out) == common::read_f32(&capture),
        "the replay is what was played"
    );
}

#[test]
fn an_event_added_in_the_past_says_it_will_not_fire() {
    let dir = common::temp_dir("past-event");
    let path = dir.join("scene.json");
    std::fs::write(&path, common::osc_into_gain("saw", 48000, 64, 0.5, "")).unwrap();
    let mut s = Session::start(&path, &["--no-journal"]);
    // At 10 ms (long played by now) and at an hour (still to come).
    let events = r#",
  "events": [ { "time": "10ms", "node": "out", "param": "gain", "value": 0.2 },
              { "time": "1h", "node": "osc", "param": "amp", "value": 0.1 } ]"#;
    save(&path, &common::osc_into_gain("saw", 48000, 64, 0.5, events));
    s.wait("edit applied");
    let w = s.wait("warning: event at 0.01 s on `out.gain` is in the past (now ");
    assert!(w.ends_with("and will not fire"), "{w}");
    // Saved again unchanged but for a param: the event is not news.
    save(&path, &common::osc_into_gain("saw", 48000, 64, 0.4, events));
    s.wait("`out.gain` glides 0.5 → 0.4");
    let all = s.quit();
    assert_eq!(all.matches("is in the past").count(), 1, "{all}");
    assert!(!all.contains("`osc.amp` is in the past"), "{all}");
}

#[test]
fn a_resource_edit_reports_its_latency_from_the_edit() {
    let dir = common::temp_dir("resource-latency");
    let res = dir.join("resources");
    std::fs::create_dir_all(&res).unwrap();
    common::write_mono_f32(&res.join("ir.wav"), &[0.1; 32]);
    let path = dir.join("scene.json");
    std::fs::write(
        &path,
        r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.5 } },
             { "id": "room", "op": "convolution", "params": { "ir": "@resource:ir.wav" } } ],
  "edges": [ { "from": "osc", "to": "room" } ],
  "outputs": { "main": ["room"] } }"#,
    )
    .unwrap();
    // The scene was last saved an hour ago; the edit is the resource's.
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let mut s = Session::start(&path, &["--no-journal"]);
    std::thread::sleep(Duration::from_millis(300));
    let tmp = res.join("ir.wav.tmp");
    common::write_mono_f32(&tmp, &[0.2; 32]);
    std::fs::rename(&tmp, res.join("ir.wav")).unwrap();
    let line = s.wait("edit applied");
    let ms: u64 = line
        .split(", ")
        .find_map(|p| p.strip_suffix(" ms after the change"))
        .unwrap_or_else(|| panic!("no latency in `{line}`"))
        .parse()
        .unwrap();
    // From the scene's save it would be an hour (3 600 000 ms); the bound
    // is only far below that, not a timing requirement.
    assert!(ms < 600_000, "{line}");
    s.quit();
}

#[test]
fn an_impulse_response_swapped_for_one_at_another_rate_is_converted_while_playing() {
    let dir = common::temp_dir("resource-rate-edit");
    let res = dir.join("resources");
    std::fs::create_dir_all(&res).unwrap();
    common::write_mono_f32(&res.join("ir.wav"), &[0.1; 32]);
    let path = dir.join("scene.json");
    std::fs::write(
        &path,
        r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.5 } },
             { "id": "room", "op": "convolution", "params": { "ir": "@resource:ir.wav" } } ],
  "edges": [ { "from": "osc", "to": "room" } ],
  "outputs": { "main": ["room"] } }"#,
    )
    .unwrap();
    let mut s = Session::start(&path, &["--no-journal"]);
    std::thread::sleep(Duration::from_millis(300));
    // A 44.1 kHz IR in its place: the edit's compile converts it, off the
    // audio thread, and the handover goes ahead.
    let tmp = res.join("ir.wav.tmp");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 44_100,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(&tmp, spec).unwrap();
    for _ in 0..32 {
        w.write_sample(0.2f32).unwrap();
    }
    w.finalize().unwrap();
    std::fs::rename(&tmp, res.join("ir.wav")).unwrap();
    s.wait("edit applied");
    let all = s.quit();
    assert!(!all.contains("error"), "{all}");
}

/// The time at the start of a timeline line, in seconds.
fn line_time(line: &str) -> f64 {
    line.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn a_resumed_session_s_timeline_is_in_session_time() {
    let dir = common::temp_dir("resumed-timeline");
    let path = dir.join("scene.json");
    std::fs::write(&path, common::osc_into_gain("saw", 48000, 64, 0.5, "")).unwrap();
    let snap = dir.join("snap.json");
    let o = common::morphrt(&[
        "render",
        path.to_str().unwrap(),
        "-d",
        "6s",
        "-o",
        dir.join("first.wav").to_str().unwrap(),
        "--snapshot-at",
        "5s",
        "--snapshot-out",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let journal = dir.join("resumed.jsonl");
    let mut s = Session::start(
        &path,
        &[
            "--resume",
            snap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    save(&path, &common::osc_into_gain("saw", 48000, 64, 0.3, ""));
    s.wait("edit applied");
    s.quit();
    let o = common::morphrt(&["replay", "--info", journal.to_str().unwrap()]);
    let info = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{info}");
    let find = |what: &str| -> &str {
        info.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no `{what}` line:\n{info}"))
    };
    let resume = find("resumed from snapshot");
    assert!(
        resume.contains("at sample 240000 (5.000 s) of the scene's timeline")
            && resume.contains("the session's, from 0"),
        "{info}"
    );
    assert_eq!(line_time(resume), 0.0, "{info}");
    let edit = find("  edit (");
    let end = find("  end (");
    // The edit came before the end, on one clock: not 5 s later.
    assert!(line_time(edit) <= line_time(end), "{info}");
    let frames: u64 = end
        .split("end (")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    let swapped: u64 = edit
        .split("swapped at ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(swapped <= frames, "{info}");
}

#[test]
fn the_clock_device_says_what_its_xruns_are() {
    let dir = common::temp_dir("clock-xruns");
    let path: PathBuf = dir.join("scene.json");
    std::fs::write(&path, common::osc_into_gain("saw", 48000, 64, 0.5, "")).unwrap();
    let o = common::bin()
        .arg("run")
        .arg(&path)
        .args(["--device", "clock", "--duration", "0.3s", "--no-journal"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("played "))
        .unwrap_or_else(|| panic!("no summary:\n{err}"));
    assert!(
        summary.contains(
            "(the clock device has no sound card: an xrun is a callback that missed its real-time deadline on this machine"
        ),
        "{summary}"
    );
}

/// A worker that finishes its work after the callback's deadline is named
/// with its xruns, in the status line and in the summary: worker 2 of
/// three threads sleeps 20 ms after each step it claims (the hidden test
/// hook `--thread-test-delay`), far past a callback's budget.
#[test]
fn a_worker_past_the_callback_s_deadline_is_named_with_its_xruns() {
    let scene = common::root().join("scenes/dub-chain.json");
    let mut s = Session::start(
        &scene,
        &[
            "--no-journal",
            "--no-watch",
            "--threads",
            "3",
            "--thread-min-work-ns",
            "0",
            "--thread-test-delay",
            "2:20000000",
        ],
    );
    // The status line (every 5 s) once worker 2 has been late: it may
    // take a while on a loaded machine, where the caller and worker 1 can
    // claim every step of many levels before worker 2 is scheduled.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let l = s
            .lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no status naming worker 2; log:\n{}", s.log.join("\n")));
        s.log.push(l.clone());
        if l.contains("worker xruns: ") && l.contains(" on worker 2") {
            break l;
        }
    };
    assert!(!status.contains("worker 3"), "two workers: {status}");
    let all = s.quit();
    let summary = all
        .lines()
        .find(|l| l.starts_with("played "))
        .unwrap_or_else(|| panic!("no summary:\n{all}"));
    let late = summary
        .split("worker xruns (callbacks a worker kept past their deadline): ")
        .nth(1)
        .unwrap_or_else(|| panic!("no worker xruns: {summary}"));
    assert!(late.contains(" on worker 2"), "{summary}");
}

/// The scheduling policy of each worker thread (`morphrt-worker-N`) of
/// process `pid`, from `/proc` (0 `SCHED_OTHER`, 1 `SCHED_FIFO`, 2
/// `SCHED_RR`), once `count` of them run (a generous timeout only keeps a
/// broken build from hanging).
fn worker_policies(pid: u32, count: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut found = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
        {
            let dir = task.unwrap().path();
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            // The fields after the command's name, from the state (field 3);
            // the policy is field 41.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let policy = after.split_whitespace().nth(41 - 3);
            if let (true, Some(p)) = (comm.starts_with("morphrt-worker"), policy) {
                found.push(p.parse().unwrap());
            }
        }
        if found.len() >= count {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{count} workers of {pid}: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `run`'s workers ask for real-time scheduling: where the system allows
/// it they run under it and nothing is said; where it does not (here, a
/// run without the capability and with no real-time limit), `run` says so
/// in one line and they run at normal priority. An offline `render` keeps
/// its workers at normal priority in either case.
#[test]
fn run_s_workers_run_real_time_where_allowed_and_it_says_so_once_where_not() {
    const NOTE: &str = "note: the 2 worker threads run at normal priority: the system does not allow real-time scheduling";
    let scene = common::root().join("scenes/drone.json");
    let args = ["--no-journal", "--no-watch", "--threads", "3"];
    // (the workers' policies, how many times the note was said)
    let play = |wrapper: &[&str]| {
        let s = Session::start_under(wrapper, &scene, &args);
        let policies = worker_policies(s.child.id(), 2);
        let all = s.quit();
        (
            policies,
            all.lines()
                .filter(|l| l.contains("normal priority"))
                .count(),
            all,
        )
    };
    let (policies, notes, all) = play(&[]);
    let realtime = policies.iter().all(|&p| p == 1 || p == 2);
    if realtime {
        assert_eq!(notes, 0, "{all}");
    } else {
        assert_eq!(policies, [0, 0], "{all}");
        assert_eq!(all.lines().filter(|l| *l == NOTE).count(), 1, "{all}");
        assert_eq!(notes, 1, "{all}");
    }
    // Without the capability to raise priorities and with no real-time
    // limit, where this process can drop them.
    let deny = [
        "prlimit",
        "--rtprio=0",
        "setpriv",
        "--bounding-set=-sys_nice",
        "--inh-caps=-sys_nice",
    ];
    let can_deny = std::process::Command::new(deny[0])
        .args(&deny[1..])
        .arg("true")
        .status()
        .is_ok_and(|s| s.success());
    if can_deny {
        let (policies, notes, all) = play(&deny);
        assert_eq!(policies, [0, 0], "{all}");
        assert_eq!(all.lines().filter(|l| *l == NOTE).count(), 1, "{all}");
        assert_eq!(notes, 1, "{all}");
    } else {
        eprintln!(
            "skipped the run without real-time scheduling: `{}` fails here",
            deny.join(" ")
        );
    }
    // A render's workers, worker 1 slowed so that they are there to see
    // (the render lasts a while: a finished one has none left to read).
    let dir = common::temp_dir("render-priority");
    let out = dir.join("out.wav");
    let mut child = common::bin()
        .args([
            "render",
            scene.to_str().unwrap(),
            "-d",
            "2s",
            "--threads",
            "3",
            "--no-ahead",
        ])
        .args([
            "--thread-min-work-ns",
            "0",
            "--thread-test-delay",
            "1:200000",
        ])
        .args(["-o", out.to_str().unwrap(), "-q"])
        .stderr(Stdio::piped())
        .spawn()
        .map(common::KillOnDrop)
        .expect("run morphrt");
    assert_eq!(worker_policies(child.id(), 2), [0, 0]);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
}

/// A profile switch moves a scene's events to its own grid (to their
/// block under live): that is the same event, not one added in the past.
/// An edit that moves an event by a block or more into the past is.
#[test]
fn events_a_switch_moves_within_a_block_are_not_added_in_the_past() {
    use morphrt::engine::incoming::{past_events, EventKey};
    let key = |sample: u64| EventKey {
        node: "env".into(),
        param: "gate",
        sample,
        action: "Set { value: 0.0, ramp: 0 }".into(),
    };
    let strict = [key(71_952), key(120_000)];
    let live = [key(71_936), key(119_936)];
    assert!(past_events(&live, &strict, 240_000, 128).is_empty());
    assert!(past_events(&strict, &live, 240_000, 128).is_empty());
    let moved = [key(71_952 - 128), key(120_000)];
    let past = past_events(&moved, &strict, 240_000, 128);
    assert_eq!(past.len(), 1);
    assert_eq!(past[0].sample, 71_824);
}
