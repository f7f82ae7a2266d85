//! Profile switches and edits in a live session that cannot keep up, or
//! that race each other:
//!
//! - a switch whose estimate is over the handover budget is refused with
//!   the estimate, and `q` still ends the session;
//! - with `run --force` it is tried, dropped when fast-forwarding cannot
//!   keep up (the old profile keeps playing), and `q` still ends it;
//! - a save right after a key switch compiles under the switched profile,
//!   whether the switch is still queued or already in flight;
//! - a snapshot (`w`) captured while an edit is queued is written with the
//!   text of the engine that was playing, so it resumes that scene.

use crate::support as common;

use morphrt::engine::incoming::{Asked, Incoming, SessionFixed};
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
use morphrt::host::live::session::{LiveSession, Playing, Reason, SessionConfig};
use morphrt::profile::Profile;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs `morphrt run SCENE --device clock --no-journal ARGS…`.
fn run(scene: &Path, args: &[&str]) -> (common::KillOnDrop, Receiver<String>) {
    let args: Vec<&str> = ["--no-journal"].iter().chain(args).copied().collect();
    common::run_clock(scene, &args)
}

/// Sends `q` and waits (60 s at most: only against a hang) for the
/// session to end; returns the rest of its log.
fn quit(child: &mut common::KillOnDrop, lines: &Receiver<String>, log: &mut Vec<String>) {
    writeln!(child.stdin.as_mut().unwrap(), "q").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        log.extend(lines.try_iter());
        assert!(
            Instant::now() < deadline,
            "the session did not end after `q`; log:\n{}",
            log.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    log.extend(lines.iter());
    assert!(status.success(), "{}", log.join("\n"));
}

/// Waits (60 s at most) for a line containing one of `parts`.
fn wait_any(lines: &Receiver<String>, parts: &[&str], log: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let l = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no line with {parts:?}; log:\n{}", log.join("\n")));
        log.push(l.clone());
        if parts.iter().any(|p| l.contains(p)) {
            return l;
        }
    }
}

#[test]
fn a_switch_over_the_handover_budget_is_refused_and_q_ends_the_session() {
    let scene = common::root().join("scenes/hall-reverb.json");
    let (mut child, lines) = run(&scene, &["--profile", "repro"]);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    writeln!(child.stdin.as_mut().unwrap(), "s").unwrap();
    common::wait_line(
        &lines,
        "cannot switch to strict; repro keeps playing",
        &mut log,
    );
    quit(&mut child, &lines, &mut log);
    let all = log.join("\n");
    assert!(
        all.contains("µs per block of 128 frames") && all.contains("--force"),
        "the refusal gives the estimate and says what --force does: {all}"
    );
    assert!(all.contains("edits applied 0"), "{all}");
}

/// Three strict direct convolutions of the 2 s hall IR: by the nominal
/// estimate slower than real time, so a forced switch cannot keep up.
fn heavy_scene() -> String {
    let verbs: Vec<String> = (0..3)
        .map(|i| {
            format!(
                r#"{{ "id": "verb{i}", "op": "convolution", "params": {{ "ir": "@resource:hall.wav", "mix": 0.3 }} }}"#
            )
        })
        .collect();
    format!(
        r#"{{
  "version": "1.0",
  "profile": "repro",
  "sample_rate": 48000,
  "nodes": [
    {{ "id": "tone", "op": "saw", "params": {{ "freq": "220Hz", "amp": 0.2 }} }},
    {}
  ],
  "edges": [
    {{ "from": "tone", "to": "verb0" }},
    {{ "from": "verb0", "to": "verb1" }},
    {{ "from": "verb1", "to": "verb2" }}
  ],
  "outputs": {{ "main": ["verb2"] }}
}}
"#,
        verbs.join(",\n    ")
    )
}

#[test]
fn a_forced_switch_that_cannot_keep_up_is_dropped_and_q_still_ends_the_session() {
    let dir = common::temp_dir("live-switch-force");
    let path = dir.join("heavy.json");
    std::fs::write(&path, heavy_scene()).unwrap();
    let resources = common::root().join("resources");
    let (mut child, lines) = run(
        &path,
        &["--force", "--resources", resources.to_str().unwrap()],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    // The first status line comes after 5 s: by then every convolution
    // sums over its whole IR, at its full cost.
    common::wait_line(&lines, "   0:", &mut log);
    writeln!(child.stdin.as_mut().unwrap(), "s").unwrap();
    let outcome = wait_any(
        &lines,
        &[
            "the switch to strict was dropped",
            "switched repro → strict",
        ],
        &mut log,
    );
    quit(&mut child, &lines, &mut log);
    let all = log.join("\n");
    if outcome.contains("dropped") {
        assert!(
            outcome.contains("cannot keep up") && outcome.contains("repro keeps playing"),
            "{all}"
        );
        assert!(all.contains("edits applied 0, rejected 1"), "{all}");
    }
}

/// A session playing `text` (saved as `scene.json` in `dir`) under repro,
/// its callback on a thread of its own until the returned flag is set.
struct Session {
    session: LiveSession,
    path: PathBuf,
    stop: Arc<AtomicBool>,
    audio: Option<std::thread::JoinHandle<()>>,
}

impl Session {
    fn start(dir: &Path, text: &str) -> Session {
        let path = dir.join("scene.json");
        std::fs::write(&path, text).unwrap();
        let sc =
            morphrt::scene::load_str(text, &path.display().to_string(), Some(dir.into())).unwrap();
        let opts = CompileOptions {
            profile: Some(Profile::Repro),
            block_size: Some(64),
            ..morphrt::host::files::resources::compile_options()
        };
        let plan = compile(&sc, &opts).unwrap();
        let fixed = SessionFixed::from_plan(
            &plan,
            morphrt::host::files::resources::Folders::shared(Vec::new()),
        );
        let first = Incoming::from_plan(plan, sc.profile, Vec::new()).asking(Asked::of(&sc));
        let meters = Arc::new(Meters::default());
        let (engine, first) = Playing::split(first);
        let mut player = Player::new(
            *engine,
            2,
            None,
            240,
            meters.clone(),
            Arc::new(Switches::default()),
            Instant::now(),
        );
        let session = LiveSession::new(
            SessionConfig::new(&path, text.to_string(), fixed, first),
            player.link(),
            meters,
        );
        let cell = PlayerCell::new(player);
        let stop = Arc::new(AtomicBool::new(false));
        let audio = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0.0f32; 64 * 2];
                while !stop.load(Ordering::Relaxed) {
                    cell.fill(&mut buf);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        Session {
            session,
            path,
            stop,
            audio: Some(audio),
        }
    }

    /// Saves `text` over the scene and tells the session, as the watcher does.
    fn save(&mut self, text: &str, log: &mut Vec<u8>) {
        std::fs::write(&self.path, text).unwrap();
        self.session.file_changed(false, log);
    }

    /// Ticks until `done` holds (20 s at most: only against a hang).
    fn tick_until(&mut self, log: &mut Vec<u8>, done: impl Fn(&LiveSession) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(&self.session) {
            assert!(
                Instant::now() < deadline,
                "the session never got there; log:\n{}",
                String::from_utf8_lossy(log)
            );
            self.session.tick(log);
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(a) = self.audio.take() {
            let _ = a.join();
        }
    }
}

/// After a key switch to strict and a save, in that order: the session
/// plays strict, with the saved text, and a switch was recorded.
fn assert_switched_with_edit(s: &Session, edited: &str, log: &[u8]) {
    let log = String::from_utf8_lossy(log);
    let last = s.session.applied.last().expect("a handover");
    assert_eq!(s.session.profile(), Profile::Strict, "{log}");
    assert_eq!(last.profile, Profile::Strict, "{log}");
    assert_eq!(last.text.as_str(), edited, "{log}");
    assert!(
        s.session.applied.iter().any(|h| h.reason
            == Reason::Switch {
                from: Profile::Repro,
                to: Profile::Strict
            }),
        "{log}"
    );
}

#[test]
fn a_save_right_after_a_queued_switch_keeps_the_switch() {
    let dir = common::temp_dir("live-switch-queued");
    let mut s = Session::start(&dir, &common::osc_into_gain("saw", 48_000, 64, 0.5, ""));
    let mut log = Vec::new();
    s.session.switch_profile(Profile::Strict, &mut log);
    // Saved before any tick: the switch is still queued and coalesces.
    let edited = common::osc_into_gain("saw", 48_000, 64, 0.25, "");
    s.save(&edited, &mut log);
    s.tick_until(&mut log, |l| l.is_idle() && !l.applied.is_empty());
    assert_switched_with_edit(&s, &edited, &log);
}

#[test]
fn a_save_while_a_switch_is_in_flight_is_not_undone_when_it_lands() {
    let dir = common::temp_dir("live-switch-in-flight");
    let mut s = Session::start(&dir, &common::osc_into_gain("saw", 48_000, 64, 0.5, ""));
    let mut log = Vec::new();
    s.session.switch_profile(Profile::Strict, &mut log);
    // One tick starts the switch (its capture is asked for); the save
    // queues behind it.
    s.session.tick(&mut log);
    let edited = common::osc_into_gain("saw", 48_000, 64, 0.25, "");
    s.save(&edited, &mut log);
    s.tick_until(&mut log, |l| l.is_idle() && l.applied.len() == 2);
    assert_switched_with_edit(&s, &edited, &log);
}

#[test]
fn a_snapshot_taken_while_an_edit_is_queued_holds_the_playing_scene() {
    let dir = common::temp_dir("live-switch-snapshot");
    let playing = common::osc_into_gain("saw", 48_000, 64, 0.5, "");
    let mut s = Session::start(&dir, &playing);
    let mut log = Vec::new();
    s.session.request_snapshot(dir.join("take"));
    // One tick asks for the capture; the edit compiles before it is back.
    s.session.tick(&mut log);
    s.save(
        &common::osc_into_gain("saw", 48_000, 64, 0.25, ""),
        &mut log,
    );
    s.tick_until(&mut log, |l| {
        l.is_idle() && l.snapshots.len() == 1 && l.applied.len() == 1
    });
    let (at, file) = s.session.snapshots[0].clone();
    let swap_at = s.session.applied[0].swap_at;
    assert!(
        at < swap_at,
        "taken before the edit landed ({at}, {swap_at})"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        json["scene"]["sha256"].as_str(),
        Some(morphrt::host::files::digest::sha256_hex(playing.as_bytes()).as_str()),
        "the snapshot names the scene that was playing at its sample; log:\n{}",
        String::from_utf8_lossy(&log)
    );
    // It resumes that scene as it is: no warning about another version.
    let old = dir.join("playing.json");
    std::fs::write(&old, &playing).unwrap();
    let o = common::morphrt(&[
        "render",
        old.to_str().unwrap(),
        "--resume",
        file.to_str().unwrap(),
        "-d",
        "1s",
        "-o",
        dir.join("resumed.wav").to_str().unwrap(),
    ]);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("another version of the scene"), "{err}");
}

/// Silence into a strict convolution of the 2 s hall: its estimate is over
/// the handover budget, but strict's exact skips make it cheap to play.
fn estimated_heavy_scene(mix: f64) -> String {
    format!(
        r#"{{
  "version": "1.0",
  "sample_rate": 48000,
  "profile_config": {{ "block_size": 256 }},
  "nodes": [
    {{ "id": "quiet", "op": "dc", "params": {{ "value": 0.0 }} }},
    {{ "id": "verb", "op": "convolution", "params": {{ "ir": "@resource:hall.wav", "mix": {mix} }} }}
  ],
  "edges": [ {{ "from": "quiet", "to": "verb" }} ],
  "outputs": {{ "main": ["verb:out", "verb:out_r"] }}
}}"#
    )
}

#[test]
fn a_session_already_over_the_budget_still_takes_an_edit_that_costs_no_more() {
    let dir = common::temp_dir("live-switch-same-cost");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    std::fs::copy(
        common::root().join("resources/hall.wav"),
        dir.join("resources/hall.wav"),
    )
    .unwrap();
    let path = dir.join("scene.json");
    std::fs::write(&path, estimated_heavy_scene(0.5)).unwrap();
    let (mut child, lines) = run(&path, &["--profile", "strict"]);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    common::save_as_editor(
        &path,
        &estimated_heavy_scene(0.25),
        Duration::from_millis(300),
    );
    let l = wait_any(
        &lines,
        &["edit applied", "cannot keep up", "rejected"],
        &mut log,
    );
    assert!(
        l.contains("edit applied"),
        "the edit was not applied; log:\n{}",
        log.join("\n")
    );
    quit(&mut child, &lines, &mut log);
}
