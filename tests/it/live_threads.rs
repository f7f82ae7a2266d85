//! Threads of a live session: the audio callback running on its own
//! thread, the control side on another. Old engines are dropped on the
//! control thread, and a panicking node neither kills playback nor wedges
//! the player.

use crate::support as common;

use morphrt::dsp::Sample;
use morphrt::engine::incoming::{Incoming, SessionFixed};
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions, Plan};
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
use morphrt::host::live::session::{LiveSession, Playing, SessionConfig};
use morphrt::ops::{AnyNode, Io, NodeProcessor, NodeState, StateError};
use morphrt::profile::Profile;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

const SCENE: &str = r#"{ "version": "1.0", "sample_rate": 48000, "seed": 1,
  "nodes": [ { "id": "osc", "op": "sine", "params": { "freq": "220Hz", "amp": 0.5 } },
             { "id": "probe", "op": "gain" } ],
  "edges": [ { "from": "osc", "to": "probe" } ],
  "outputs": { "main": ["probe", "osc"] } }"#;

fn plan(text: &str) -> Plan {
    let s = morphrt::scene::load_str(text, "t.json", None).unwrap();
    compile(
        &s,
        &CompileOptions {
            profile: Some(Profile::Repro),
            block_size: Some(64),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap()
}

/// Passes its input through; records the thread that drops it and, when
/// asked, panics inside `process`.
struct Probe {
    dropped_on: Arc<Mutex<Option<ThreadId>>>,
    panic_at: Option<u64>,
}

impl<S: Sample> NodeProcessor<S> for Probe {
    fn process(&mut self, io: &mut Io<'_, S>) {
        if self
            .panic_at
            .is_some_and(|n| io.start + io.frames as u64 > n)
        {
            panic!("probe: a bug inside a node");
        }
        let n = io.frames;
        let (i, o) = (&io.inputs[0][..n], &mut io.outputs[0][..n]);
        o.copy_from_slice(i);
    }
    fn reset(&mut self) {}
    fn snapshot(&self, _st: &mut NodeState) {}
    fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
        Ok(())
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        *self.dropped_on.lock().unwrap() = Some(std::thread::current().id());
    }
}

fn with_probe(mut p: Plan, probe: Probe) -> Plan {
    let i = p.nodes.iter().position(|n| n.id == "probe").unwrap();
    p.nodes[i].node = Some(AnyNode::F32(Box::new(probe)));
    p
}

/// A live session of SCENE (saved in a fresh directory) whose first engine
/// is built from `first`, and the cell of its player. `session_meters`:
/// the meters the session reads the audio clock from (the player's, or
/// stale ones). Returns the player's meters and the scene's path too.
fn session_on(
    first: Plan,
    name: &str,
    session_meters: Option<Arc<Meters>>,
) -> (
    LiveSession,
    Arc<PlayerCell>,
    Arc<Meters>,
    std::path::PathBuf,
) {
    let dir = common::temp_dir(name);
    let path = dir.join("scene.json");
    std::fs::write(&path, SCENE).unwrap();
    let fixed = SessionFixed::from_plan(&first, None);
    let first = Incoming::from_plan(first, None, Vec::new());
    let meters = Arc::new(Meters::default());
    let (engine, first) = Playing::split(first);
    let mut player = Player::new(
        *engine,
        2,
        None,
        240,
        meters.clone(),
        Arc::new(Switches::default()),
        std::time::Instant::now(),
    );
    let session = LiveSession::new(
        SessionConfig::new(&path, SCENE.to_string(), fixed, first),
        player.link(),
        session_meters.unwrap_or_else(|| meters.clone()),
    );
    (session, PlayerCell::new(player), meters, path)
}

/// Runs the callback on its own thread, paced loosely (a block per ms),
/// until `stop` is set.
fn audio_thread(cell: Arc<PlayerCell>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0.0f32; 64 * 2];
        while !stop.load(Ordering::Relaxed) {
            cell.fill(&mut buf);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    })
}

#[test]
fn old_engines_are_dropped_on_the_control_thread() {
    let dropped_on = Arc::new(Mutex::new(None));
    let first = with_probe(
        plan(SCENE),
        Probe {
            dropped_on: dropped_on.clone(),
            panic_at: None,
        },
    );
    let (mut session, cell, _, _) = session_on(first, "drop-thread", None);
    let stop = Arc::new(AtomicBool::new(false));
    let audio = audio_thread(cell.clone(), stop.clone());
    let mut log = Vec::new();
    session.switch_profile(Profile::Live, &mut log);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !(session.is_idle() && session.applied.len() == 1) {
        assert!(
            std::time::Instant::now() < deadline,
            "the switch never completed"
        );
        session.tick(&mut log);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    audio.join().unwrap();
    let control_id = std::thread::current().id();
    assert_eq!(
        *dropped_on.lock().unwrap(),
        Some(control_id),
        "the old engine was dropped on the control thread (this one), not the audio thread"
    );
    assert_eq!(session.profile(), Profile::Live);
}

#[test]
fn a_panicking_node_is_muted_and_playback_goes_on() {
    morphrt::host::live::player::install_panic_hook();
    let dropped_on = Arc::new(Mutex::new(None));
    let p = with_probe(
        plan(SCENE),
        Probe {
            dropped_on,
            panic_at: Some(6_400),
        },
    );
    let engine = Engine::new(p);
    let meters = Arc::new(Meters::default());
    let player = Player::new(
        engine,
        2,
        None,
        240,
        meters.clone(),
        Arc::new(Switches::default()),
        std::time::Instant::now(),
    );
    let cell = PlayerCell::new(player);
    let mut buf = vec![0.0f32; 64 * 2];
    let mut left_after = 0.0f32;
    let mut right_after = 0.0f32;
    for k in 0..400 {
        cell.fill(&mut buf);
        if k >= 101 {
            for f in buf.chunks(2) {
                left_after = left_after.max(f[0].abs());
                right_after = right_after.max(f[1].abs());
            }
        }
    }
    assert_eq!(
        meters.node_panics.load(Ordering::Relaxed),
        1,
        "one node panicked, once"
    );
    assert_eq!(meters.callback_panics.load(Ordering::Relaxed), 0);
    assert_eq!(left_after, 0.0, "the panicked node is muted");
    assert!(right_after > 0.4, "the rest of the graph keeps playing");
    // The cell is not wedged: the player can be taken back.
    assert!(cell.take().is_some_and(|p| p
        .engine()
        .stats()
        .first_panic
        .map(|(i, _)| p.engine().node_id(i).to_string())
        == Some("probe".to_string())));
}

// The callback's outbox, which holds replies while the control thread has
// not drained a full queue, gives them back in the order they were made:
// newest first (`Vec::pop`) would let a `Retired` reach the control thread
// before the `Swapped` of the same handover.
#[test]
fn replies_held_in_the_outbox_arrive_in_order() {
    use morphrt::host::live::player::{FromAudio, ToAudio};
    let scene = r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "o", "op": "sine", "params": { "freq": "440Hz" } } ],
  "outputs": { "main": ["o"] } }"#;
    let mut player = common::player(common::engine(scene, None, 64), 64);
    let mut link = player.link();
    // Saves fill the reply ring while the control side does not drain it.
    let engine = common::engine(scene, None, 64);
    let mut fillers = 0;
    while link
        .send(ToAudio::Save(Box::new(engine.snapshot())))
        .is_ok()
    {
        fillers += 1;
    }
    let mut out = vec![0.0f32; 64 * 2];
    player.fill(&mut out);
    // A cut at sample 64: swapped, and the old engine retired, in one block,
    // both into the outbox behind the full ring.
    let mut next = common::engine(scene, None, 64);
    morphrt::engine::incoming::advance_to(&mut next, 64);
    let offer = ToAudio::Offer {
        engine: Box::new(next),
        at: 64,
        fade: 0,
    };
    assert!(link.send(offer).is_ok());
    player.fill(&mut out);
    for _ in 0..fillers {
        assert!(matches!(
            link.receive(),
            Some(FromAudio::Saved { at: 0, .. })
        ));
    }
    player.fill(&mut out);
    let order: Vec<&str> = std::iter::from_fn(|| link.receive())
        .map(|m| match m {
            FromAudio::Swapped { .. } => "swapped",
            FromAudio::Retired(_) => "retired",
            FromAudio::Saved { .. } => "saved",
            FromAudio::Refused { .. } => "refused",
        })
        .collect();
    assert_eq!(order, ["swapped", "retired"]);
}

/// A paced fake device: calls the callback with 64-frame periods at real
/// time on its own thread (as a sound card would) until `stop` is set.
fn paced_device(cell: Arc<PlayerCell>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0.0f32; 64 * 2];
        let t0 = std::time::Instant::now();
        let mut frames = 0u64;
        while !stop.load(Ordering::Relaxed) {
            cell.fill(&mut buf);
            frames += 64;
            let due = t0 + std::time::Duration::from_secs_f64(frames as f64 / 48_000.0);
            if let Some(w) = due.checked_duration_since(std::time::Instant::now()) {
                std::thread::sleep(w);
            }
        }
    })
}

/// A session on this thread (the control thread) and a paced device on
/// another, playing SCENE from `path`. `session_meters`: the meters the
/// session reads the audio clock from (the player's, or stale ones).
struct Threads {
    session: LiveSession,
    meters: Arc<Meters>,
    cell: Arc<PlayerCell>,
    stop: Arc<AtomicBool>,
    audio: Option<std::thread::JoinHandle<()>>,
    path: std::path::PathBuf,
    log: Vec<u8>,
}

impl Threads {
    fn start(name: &str, session_meters: Option<Arc<Meters>>) -> Threads {
        let (session, cell, meters, path) = session_on(plan(SCENE), name, session_meters);
        let stop = Arc::new(AtomicBool::new(false));
        let audio = Some(paced_device(cell.clone(), stop.clone()));
        Threads {
            session,
            meters,
            cell,
            stop,
            audio,
            path,
            log: Vec::new(),
        }
    }

    fn clock(&self) -> u64 {
        self.meters.clock.load(Ordering::Relaxed)
    }

    /// Waits (without ticking the session) until the audio clock reaches `at`.
    fn wait_clock(&self, at: u64) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while self.clock() < at {
            assert!(
                std::time::Instant::now() < deadline,
                "the audio clock stalled"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Saves `text` as the scene and tells the session.
    fn edit(&mut self, text: &str) {
        std::fs::write(&self.path, text).unwrap();
        self.session.file_changed(false, &mut self.log);
    }

    /// Ticks every millisecond until `n` handovers are applied and nothing
    /// is in flight.
    fn tick_until_applied(&mut self, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !(self.session.is_idle() && self.session.applied.len() >= n) {
            assert!(
                std::time::Instant::now() < deadline,
                "not applied: {}",
                String::from_utf8_lossy(&self.log)
            );
            self.session.tick(&mut self.log);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// The peak the device got over the next `frames` frames.
    fn peak_over(&self, frames: u64) -> f32 {
        self.meters.take_peak();
        self.wait_clock(self.clock() + frames);
        self.meters.take_peak()
    }

    fn end(mut self) -> (LiveSession, Arc<PlayerCell>) {
        self.stop.store(true, Ordering::Relaxed);
        self.audio.take().unwrap().join().unwrap();
        (self.session, self.cell)
    }
}

/// SCENE with the oscillator's amplitude at `amp`.
fn with_amp(amp: f64) -> String {
    SCENE.replace("\"amp\": 0.5", &format!("\"amp\": {amp}"))
}

// The control thread offers late: its view of the audio clock is stale
// (meters that never move), and it handles the save 200 ms after it
// was made, so the swap sample it picks has been played already. The
// callback refuses the offer; the session places it again from the clock
// the refusal reports, with more headroom, and the edit applies.
#[test]
fn a_late_offer_is_refused_placed_again_and_applied() {
    let stale = Arc::new(Meters::default());
    let mut t = Threads::start("late-offer", Some(stale));
    t.wait_clock(4_800);
    assert!(t.peak_over(4_800) > 0.45, "the first engine plays amp 0.5");
    t.edit(&with_amp(0.25));
    // This tick asks for the save; the next one, 200 ms of audio later,
    // offers at the save's sample plus the lead: in the past.
    t.session.tick(&mut t.log);
    let asked = t.clock();
    t.wait_clock(asked + 9_600);
    t.tick_until_applied(1);
    let h = &t.session.applied[0];
    assert!(h.refusals >= 1, "the late offer was refused");
    assert!(
        h.swap_at > asked + 9_600,
        "placed again after the refusal: swap at {}, asked at {asked}",
        h.swap_at
    );
    t.wait_clock(h.swap_at + 24_000);
    let peak = t.peak_over(4_800);
    assert!((0.2..0.3).contains(&peak), "the edit applies: peak {peak}");
    let (session, _) = t.end();
    assert!(session.rejected.is_empty());
}

// Edits that arrive while a handover is in flight coalesce: only the
// latest waits, and it is what plays once the running handover is done.
#[test]
fn quick_edits_during_a_handover_coalesce_into_the_latest() {
    let mut t = Threads::start("coalesce", None);
    t.wait_clock(4_800);
    t.edit(&with_amp(0.4));
    t.session.tick(&mut t.log);
    for amp in [0.35, 0.3, 0.25, 0.2, 0.125] {
        t.edit(&with_amp(amp));
    }
    t.tick_until_applied(2);
    // Nothing else is pending: a few more ticks apply nothing.
    for _ in 0..50 {
        t.session.tick(&mut t.log);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let texts: Vec<String> = t
        .session
        .applied
        .iter()
        .map(|h| h.text.to_string())
        .collect();
    assert_eq!(texts, [with_amp(0.4), with_amp(0.125)]);
    t.wait_clock(t.session.applied[1].swap_at + 24_000);
    let peak = t.peak_over(4_800);
    assert!((0.1..0.15).contains(&peak), "the latest edit plays: {peak}");
    t.end();
}

/// The peak meter keeps the larger of what the callback notes (one
/// `fetch_max` on the bits, which order like the values: magnitudes,
/// denormals among them) until it is taken. (That a concurrent take never
/// loses a larger peak is a race between two atomics a test cannot hit
/// reliably: `note_peak` is a single read-modify-write, so a `take_peak`
/// swap lands wholly before or after it.)
#[test]
fn the_peak_meter_keeps_the_largest_magnitude_until_taken() {
    let m = Meters::default();
    let values = [
        0.0f32,
        -0.0,
        f32::from_bits(1),
        1e-40,
        f32::MIN_POSITIVE,
        1e-20,
        0.25,
        0.5,
        0.999_999_9,
        1.0,
    ];
    for w in values.windows(2) {
        assert!(w[0].abs().to_bits() <= w[1].abs().to_bits());
    }
    for (i, &big) in values.iter().enumerate() {
        for &small in &values[..=i] {
            m.note_peak(small);
            m.note_peak(big);
            m.note_peak(small);
            m.note_peak(f32::NAN);
            assert_eq!(
                m.take_peak().to_bits(),
                big.abs().to_bits(),
                "{big} vs {small}"
            );
            assert_eq!(m.take_peak(), 0.0, "taken");
        }
    }
}
