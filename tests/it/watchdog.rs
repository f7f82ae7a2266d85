//! The control loop against a scripted device: a stall (no callbacks) and a
//! stream error are detected within the stated bound — max(4 periods,
//! 200 ms) plus the loop's 10 ms poll — the stream is rebuilt with the same
//! engine, and the sample clock continues, so what was played equals the
//! offline render. A device that cannot be reopened ends cleanly with an error.

use morphrt::engine::render_to_vec;
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::live::control::{run_loop, LoopConfig, StatusMode};
use morphrt::host::live::device::{Device, DeviceError, Stream, StreamEvents, StreamFault};
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
use morphrt::profile::Profile;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the n-th opened stream does.
#[derive(Clone, Copy, Debug)]
enum Script {
    /// Plays until dropped.
    Play,
    /// Stops calling back after this many frames (a stalled device).
    StallAfter(usize),
    /// Reports a device error after this many frames, then stops.
    FailAfter(usize),
    /// Cannot be opened.
    Refuse,
}

struct Scripted {
    script: Vec<Script>,
    opens: usize,
    period: usize,
    rate: f64,
    /// Every frame played (stereo interleaved), across streams.
    played: Arc<Mutex<Vec<f32>>>,
    /// When each stream stopped calling back, and when each open happened.
    went_quiet: Arc<Mutex<Vec<Instant>>>,
    opened_at: Vec<Instant>,
}

struct ScriptedStream {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stream for ScriptedStream {}

impl Drop for ScriptedStream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Device for Scripted {
    fn open(
        &mut self,
        cell: Arc<PlayerCell>,
        events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, DeviceError> {
        let script = self.script.get(self.opens).copied().unwrap_or(Script::Play);
        self.opens += 1;
        self.opened_at.push(Instant::now());
        if let Script::Refuse = script {
            return Err(DeviceError::stream_refused("device unplugged"));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (stop2, played, quiet) = (stop.clone(), self.played.clone(), self.went_quiet.clone());
        let (period, rate) = (self.period, self.rate);
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0.0f32; period * 2];
            let t0 = Instant::now();
            let mut frames = 0usize;
            while !stop2.load(Ordering::Relaxed) {
                let limit = match script {
                    Script::StallAfter(n) | Script::FailAfter(n) => Some(n),
                    _ => None,
                };
                if limit.is_some_and(|n| frames >= n) {
                    quiet.lock().unwrap().push(Instant::now());
                    if let Script::FailAfter(_) = script {
                        events.report(StreamFault::DeviceNotAvailable);
                    }
                    while !stop2.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    break;
                }
                cell.fill(&mut buf);
                played.lock().unwrap().extend_from_slice(&buf);
                frames += period;
                // Paced like a real device.
                let due = t0 + Duration::from_secs_f64(frames as f64 / rate);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
        });
        Ok(Box::new(ScriptedStream {
            stop,
            thread: Some(thread),
        }))
    }

    fn period_frames(&self) -> Option<usize> {
        Some(self.period)
    }
}

const SCENE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/pluck-delay.json");

fn engine() -> Engine {
    let scene = morphrt::scene::load_file(std::path::Path::new(SCENE)).unwrap();
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(Profile::Live),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap();
    Engine::new(plan)
}

fn play(
    script: Vec<Script>,
    seconds: f64,
) -> (
    Result<morphrt::host::live::control::RunReport, String>,
    Scripted,
) {
    let e = engine();
    let rate = e.sample_rate() as f64;
    let frames = (seconds * rate) as u64;
    let meters = Arc::new(Meters::default());
    let controls = Arc::new(Switches::default());
    let origin = Instant::now();
    let player = Player::new(e, 2, Some(frames), 240, meters.clone(), controls, origin);
    let mut out = Scripted {
        script,
        opens: 0,
        period: 64,
        rate,
        played: Arc::new(Mutex::new(Vec::new())),
        went_quiet: Arc::new(Mutex::new(Vec::new())),
        opened_at: Vec::new(),
    };
    let cfg = LoopConfig {
        status: StatusMode::Quiet,
        stall_periods: 4,
        stall_min: Duration::from_millis(200),
        max_rebuilds: 3,
        reconnect: false,
        label: String::new(),
        fifo_latency: 64,
    };
    let mut log = Vec::new();
    let r = run_loop(&mut out, player, meters, origin, &cfg, &mut log).map_err(|e| e.to_string());
    (r, out)
}

/// What the scene sounds like offline (live, block 64), first `frames`.
fn rendered(frames: usize) -> Vec<f32> {
    let out = render_to_vec(&mut engine(), frames as u64);
    out[0]
        .iter()
        .map(|x| (*x as f32).clamp(-1.0, 1.0))
        .collect()
}

fn assert_continuous(played: &[f32], frames: usize) {
    let want = rendered(frames);
    let left: Vec<f32> = played.chunks_exact(2).map(|f| f[0]).take(frames).collect();
    assert_eq!(
        left.len(),
        frames,
        "played {} frames, want {frames}",
        left.len()
    );
    for (i, (a, b)) in left.iter().zip(&want).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "frame {i}: the sample clock did not continue across the rebuild"
        );
    }
}

#[test]
fn a_stalled_device_is_detected_and_the_stream_rebuilt() {
    let (r, out) = play(vec![Script::StallAfter(9600)], 0.6);
    let r = r.expect("recovered");
    assert_eq!((r.stalls, r.rebuilds, r.faults), (1, 1, 0));
    let quiet = out.went_quiet.lock().unwrap()[0];
    let detected = out.opened_at[1].duration_since(quiet);
    // Bound: max(4 × 64 frames, 200 ms) = 200 ms, plus polling and the
    // time the first callback after a rebuild takes. `quiet` is stamped
    // after the device thread's last fill and its pacing sleep, which a
    // loaded machine stretches: the lower bound tells the 200 ms floor
    // from four periods (5 ms) with that margin.
    assert!(
        detected >= Duration::from_millis(100),
        "detected too early: {detected:?}"
    );
    assert!(
        detected < Duration::from_millis(5000),
        "detected too late: {detected:?}"
    );
    assert_continuous(&out.played.lock().unwrap(), 28800);
}

#[test]
fn a_stream_error_is_detected_and_the_stream_rebuilt() {
    let (r, out) = play(vec![Script::FailAfter(4800)], 0.4);
    let r = r.expect("recovered");
    assert_eq!((r.stalls, r.faults, r.rebuilds), (0, 1, 1));
    let quiet = out.went_quiet.lock().unwrap()[0];
    let detected = out.opened_at[1].duration_since(quiet);
    assert!(
        detected < Duration::from_millis(2000),
        "error noticed after {detected:?}"
    );
    assert_continuous(&out.played.lock().unwrap(), 19200);
    assert_eq!(
        r.clock, 19200,
        "the engine clock continues across the rebuild"
    );
}

#[test]
fn a_device_that_cannot_come_back_ends_with_a_clear_error() {
    let (r, out) = play(
        vec![
            Script::FailAfter(2400),
            Script::Refuse,
            Script::Refuse,
            Script::Refuse,
        ],
        2.0,
    );
    let e = r.expect_err("gives up");
    assert!(e.contains("could not be reopened after 3 attempts"), "{e}");
    assert_eq!(out.opens, 4);
}

#[test]
fn a_stop_request_fades_out_without_a_click_and_ends_the_run() {
    let e = engine();
    let rate = e.sample_rate() as f64;
    let meters = Arc::new(Meters::default());
    let controls = Arc::new(Switches::default());
    let player = Player::new(
        e,
        2,
        None,
        240,
        meters.clone(),
        controls.clone(),
        Instant::now(),
    );
    let cell = PlayerCell::new(player);
    let mut buf = vec![0.0f32; 64 * 2];
    let mut played = Vec::new();
    for k in 0..300 {
        if k == 200 {
            controls.stop.store(true, Ordering::Relaxed);
        }
        cell.fill(&mut buf);
        played.extend(buf.chunks_exact(2).map(|f| f[0]));
    }
    assert!(meters.finished.load(Ordering::Relaxed));
    let want = rendered(played.len());
    let start = 200 * 64;
    // Before the stop: untouched. During the 240-frame fade: a linear ramp
    // to zero (5 ms at 48 kHz). After: silence.
    assert_eq!(&played[..start], &want[..start]);
    for i in 0..240 {
        let gain = (239 - i) as f32 / 240.0;
        assert_eq!(played[start + i], want[start + i] * gain, "fade frame {i}");
    }
    assert!(played[start + 240..].iter().all(|x| *x == 0.0));
    let _ = rate;
}

#[test]
fn a_one_channel_device_gets_the_mean_of_a_stereo_bus() {
    let text = r#"{ "version": "1.0", "nodes": [
        { "id": "l", "op": "dc", "params": { "value": 0.5 } },
        { "id": "r", "op": "dc", "params": { "value": -0.25 } } ],
      "outputs": { "main": ["l", "r"] } }"#;
    let scene = morphrt::scene::load_str(text, "t.json", None).unwrap();
    let e =
        Engine::new(compile(&scene, &morphrt::host::files::resources::compile_options()).unwrap());
    let player = Player::new(
        e,
        1,
        None,
        240,
        Arc::new(Meters::default()),
        Arc::new(Switches::default()),
        Instant::now(),
    );
    let cell = PlayerCell::new(player);
    let mut buf = vec![0.0f32; 50];
    cell.fill(&mut buf);
    assert!(buf.iter().all(|x| *x == 0.125), "{:?}", &buf[..3]);
    // And a stereo device gets both channels, a third channel stays silent.
    let e =
        Engine::new(compile(&scene, &morphrt::host::files::resources::compile_options()).unwrap());
    let player = Player::new(
        e,
        3,
        None,
        240,
        Arc::new(Meters::default()),
        Arc::new(Switches::default()),
        Instant::now(),
    );
    let cell = PlayerCell::new(player);
    let mut buf = vec![1.0f32; 30];
    cell.fill(&mut buf);
    assert!(
        buf.chunks_exact(3).all(|f| f == [0.5, -0.25, 0.0]),
        "{:?}",
        &buf[..6]
    );
}

/// A panic in the callback outside every node (here, in reading the
/// session's input, which would panic in every callback) ends the session
/// with an error long before the scene's end; the device got silence
/// from the panic on, and the panic was counted once.
#[test]
fn a_panic_in_the_callback_outside_every_node_ends_the_session() {
    use morphrt::host::live::input::{InputFormat, LiveInput};
    struct Broken;
    impl LiveInput for Broken {
        fn channels(&self) -> usize {
            1
        }
        fn format(&self) -> InputFormat {
            InputFormat::F32
        }
        fn read(&mut self, _dst: &mut [f64]) {
            panic!("a broken input");
        }
    }
    morphrt::host::live::player::install_panic_hook();
    let e = engine();
    let rate = e.sample_rate() as f64;
    let meters = Arc::new(Meters::default());
    let origin = Instant::now();
    let frames = (20.0 * rate) as u64;
    let controls = Arc::new(Switches::default());
    let mut player = Player::new(e, 2, Some(frames), 240, meters.clone(), controls, origin);
    player.set_input(Box::new(Broken));
    let mut out = Scripted {
        script: vec![Script::Play],
        opens: 0,
        period: 64,
        rate,
        played: Arc::new(Mutex::new(Vec::new())),
        went_quiet: Arc::new(Mutex::new(Vec::new())),
        opened_at: Vec::new(),
    };
    let cfg = LoopConfig {
        status: StatusMode::Quiet,
        stall_periods: 4,
        stall_min: Duration::from_millis(200),
        max_rebuilds: 3,
        reconnect: false,
        label: String::new(),
        fifo_latency: 64,
    };
    let mut log = Vec::new();
    let started = Instant::now();
    let _ = run_loop(&mut out, player, meters.clone(), origin, &cfg, &mut log);
    let log = String::from_utf8_lossy(&log);
    assert!(started.elapsed() < Duration::from_secs(5), "{log}");
    assert!(log.contains("panicked outside every node"), "{log}");
    assert_eq!(meters.callback_panics.load(Ordering::Relaxed), 1);
    assert!(out.played.lock().unwrap().iter().all(|x| *x == 0.0));
}
