//! Admission of an edit whose new engine reads the session's input: it
//! catches up with the audio clock on the audio thread, two of its blocks
//! beside each block of the engine playing, so the estimate of that sum —
//! not only of the new engine alone — must fit the block's deadline.

use crate::support as common;

use morphrt::engine::incoming::{Asked, Incoming, SessionFixed};
use morphrt::graph::{compile, plan_cost_ns, CompileOptions};
use morphrt::host::live::input::history::history;
use morphrt::host::live::input::{InputFormat, LiveInput};
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches, CATCH_UP_PER_BLOCK};
use morphrt::host::live::session::{LiveSession, Playing, SessionConfig, HANDOVER_BUDGET};
use morphrt::profile::Profile;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BLOCK: usize = 64;
const SR: f64 = 48_000.0;

/// The input's channel 1 through a chain of `filters` one-pole filters,
/// the first at `cutoff`.
fn scene(filters: usize, cutoff: &str) -> String {
    let nodes: Vec<String> = (0..filters)
        .map(|k| {
            let c = if k == 0 { cutoff } else { "20kHz" };
            format!(r#"{{"id":"f{k}","op":"onepole","params":{{"cutoff":"{c}"}}}}"#)
        })
        .collect();
    let edges: Vec<String> = (0..filters)
        .map(|k| {
            let from = if k == 0 {
                "mic".to_string()
            } else {
                format!("f{}", k - 1)
            };
            format!(r#"{{"from":"{from}","to":"f{k}"}}"#)
        })
        .collect();
    format!(
        r#"{{"version":"1.0","seed":3,"sample_rate":48000,"profile":"repro",
  "profile_config":{{"block_size":{BLOCK}}},
  "nodes":[{{"id":"mic","op":"input","params":{{"channel":1}}}},{}],
  "edges":[{}],
  "outputs":{{"main":["f{}"]}}}}"#,
        nodes.join(","),
        edges.join(","),
        filters - 1
    )
}

fn options() -> CompileOptions {
    CompileOptions {
        profile: Some(Profile::Repro),
        block_size: Some(BLOCK),
        ..morphrt::host::files::resources::compile_options()
    }
}

/// The nominal estimate of `text`, µs per block.
fn block_us(text: &str) -> f64 {
    let sc = morphrt::scene::load_str(text, "t.json", None).unwrap();
    plan_cost_ns(&compile(&sc, &options()).unwrap()) * BLOCK as f64 / 1e3
}

/// Two channels of a steady tone.
struct Source(u64);
impl LiveInput for Source {
    fn channels(&self) -> usize {
        2
    }
    fn format(&self) -> InputFormat {
        InputFormat::F32
    }
    fn read(&mut self, dst: &mut [f64]) {
        for frame in dst.chunks_exact_mut(2) {
            let x = libm::sin(self.0 as f64 * 0.013) * 0.5;
            frame[0] = x;
            frame[1] = x;
            self.0 += 1;
        }
    }
}

/// A session playing `text` with a live input and its history, its
/// callback on a thread of its own; edits are saved and ticked until the
/// session took or refused them.
struct Session {
    session: LiveSession,
    path: std::path::PathBuf,
    stop: Arc<AtomicBool>,
    audio: Option<std::thread::JoinHandle<()>>,
}

impl Session {
    fn start(dir: &std::path::Path, text: &str) -> Session {
        let path = dir.join("scene.json");
        std::fs::write(&path, text).unwrap();
        let sc =
            morphrt::scene::load_str(text, &path.display().to_string(), Some(dir.into())).unwrap();
        let plan = compile(&sc, &options()).unwrap();
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
        player.set_input(Box::new(Source(0)));
        let (writer, hist) = history(2, 48_000, 8.0, 0);
        player.set_history(writer);
        let session = LiveSession::new(
            SessionConfig {
                history: Some(hist),
                ..SessionConfig::new(&path, text.to_string(), fixed, first)
            },
            player.link(),
            meters,
        );
        let cell = PlayerCell::new(player);
        let stop = Arc::new(AtomicBool::new(false));
        let audio = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0.0f32; BLOCK * 2];
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

    /// Saves `text` and ticks until the session applied or rejected it.
    fn edit(&mut self, text: &str, log: &mut Vec<u8>) {
        let (applied, rejected) = (self.session.applied.len(), self.session.rejected.len());
        std::fs::write(&self.path, text).unwrap();
        self.session.file_changed(false, log);
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.session.applied.len() == applied && self.session.rejected.len() == rejected
            || !self.session.is_idle()
        {
            assert!(
                Instant::now() < deadline,
                "the edit never landed; log:\n{}",
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

/// A scene whose estimate alone fits the handover budget (at most half
/// the deadline) but whose catch-up — two of its blocks beside a block of
/// the same scene playing — is over the deadline: the edit is refused,
/// saying so, and the session plays on; an edit of a light scene is
/// applied through the same catch-up.
#[test]
fn an_edit_whose_catch_up_would_overrun_the_callback_is_refused() {
    let deadline_us = BLOCK as f64 / SR * 1e6;
    let steps = CATCH_UP_PER_BLOCK as f64 + 1.0;
    // The estimate grows by the same amount a filter: the fewest filters
    // whose catch-up is over the deadline.
    let (one, two) = (block_us(&scene(1, "2kHz")), block_us(&scene(2, "2kHz")));
    let per = two - one;
    let heavy = ((deadline_us / steps - (one - per)) / per).floor() as usize + 1;
    assert!(block_us(&scene(heavy, "2kHz")) * steps > deadline_us);
    assert!(block_us(&scene(heavy - 1, "2kHz")) * steps <= deadline_us);
    let cost = block_us(&scene(heavy, "2kHz"));
    assert!(
        cost <= HANDOVER_BUDGET * deadline_us,
        "{heavy} filters: {cost} µs alone fits the handover budget"
    );
    let dir = common::temp_dir("handover-budget-catch-up");
    let mut s = Session::start(&dir, &scene(heavy, "2kHz"));
    let mut log = Vec::new();
    s.edit(&scene(heavy, "700Hz"), &mut log);
    let text = String::from_utf8_lossy(&log).to_string();
    assert!(s.session.applied.is_empty(), "not applied: {text}");
    let why = &s.session.rejected.last().expect("rejected").error;
    assert!(
        why.contains("catches up") && why.contains("deadline") && why.contains("--force"),
        "{why}"
    );
    drop(s);

    let mut s = Session::start(&dir, &scene(2, "2kHz"));
    let mut log = Vec::new();
    s.edit(&scene(2, "700Hz"), &mut log);
    assert_eq!(
        s.session.applied.len(),
        1,
        "a light edit is applied: {}",
        String::from_utf8_lossy(&log)
    );
}
