//! Audio input, measured at block 64 on a paced callback (the clock
//! device's pace; no sound card needed). Measures only; asserts nothing.
//!
//! 1. Input-to-output latency. A source thread stands in for a capture
//!    device: every 64 frames of real time it pushes a period of input into
//!    the ring an input stream feeds (with its drift control: primed to a
//!    period, a block and a margin, single frames dropped or repeated to
//!    hold the fill), noting when; the callback reads one block of it per block of
//!    output (as `run` does) through an identity scene (input → main,
//!    strict), noting when each callback returns. Each input sample encodes
//!    its own frame number (k / 2²⁴, exact in f32), so the output says which
//!    input frame it carries even where a frame was dropped or repeated.
//!    The latency of a frame is the time from its push into the ring to the
//!    return of the callback that wrote it to the device buffer, in frames
//!    at 48 kHz (what the device's own buffering adds on top is the
//!    device's). Reported: min, p50, p99 and max over every frame, and the
//!    ring's counters.
//! 2. The cost of the input tap: two players of the same scene (an input
//!    filtered and echoed) are called back alternately in one run, one
//!    pushing each block into the input history with the recorded input's
//!    writer thread copying it to a WAV file, the other without; the ratio
//!    of their mean (and median) callback times is the tap's cost.
//! 3. The cost of converting a device's rate: the input thread's push of
//!    one block's worth of a stereo device (64 frames at 48 kHz), into a
//!    ring of a 48 kHz session, from a 48 kHz device (no conversion) and
//!    from a 44.1 kHz device (58.8 frames a push, converted by the strict
//!    polyphase converter before the ring), the callback's end read after
//!    each push; mean and median time per push, and the converted push as
//!    a share of the 64-frame block's 1.33 ms.
//!
//! `cargo bench --bench input [-- SECONDS]` (default 5 s of audio each).

use morphrt::engine::Engine;
use morphrt::host::files::rules::{Inputs, Kind, Output};
use morphrt::host::live::input::history::{history, HISTORY_SECONDS};
use morphrt::host::live::input::record::InputRecorder;
use morphrt::host::live::input::ring::{
    input_ring, input_ring_at, InputMeters, InputRates, RingShape,
};
use morphrt::host::live::input::{InputFormat, LiveInput};
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
use morphrt::host::live::tap::Existing;
use morphrt::profile::Profile;
use std::sync::Arc;
use std::time::{Duration, Instant};

const BLOCK: usize = 64;
const RATE: f64 = 48_000.0;
/// Input frame k is the sample k / 2²⁴.
const CODE: f64 = (1u32 << 24) as f64;

fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

fn engine(text: &str, profile: Profile) -> Engine {
    let scene = morphrt::scene::load_str(text, "bench.json", None).unwrap();
    let plan = morphrt::graph::compile(
        &scene,
        &morphrt::graph::CompileOptions {
            profile: Some(profile),
            block_size: Some(BLOCK),
            seed: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    Engine::new(plan)
}

fn player(engine: Engine) -> Player {
    Player::new(
        engine,
        2,
        None,
        240,
        Arc::new(Meters::default()),
        Arc::new(Switches::default()),
        Instant::now(),
    )
}

/// Calls `f` every period of 64 frames at real-time pace for `periods`
/// periods, from `t0`; returns when each call returned (ns since `t0`).
fn paced(t0: Instant, periods: usize, mut f: impl FnMut(usize)) -> Vec<u64> {
    let mut ends = Vec::with_capacity(periods);
    for p in 0..periods {
        let due = t0 + Duration::from_secs_f64((p * BLOCK) as f64 / RATE);
        if let Some(w) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
        f(p);
        ends.push(t0.elapsed().as_nanos() as u64);
    }
    ends
}

fn latency(seconds: f64) {
    let identity = r#"{"version":"1.0","sample_rate":48000,
        "nodes":[{"id":"mic","op":"input","params":{"channel":0}}],
        "outputs":{"main":["mic"]}}"#;
    let periods = (seconds * RATE) as usize / BLOCK;
    // The ring an input device feeds, with its drift control, primed
    // to one input period (64 frames here) plus one block.
    let meters = Arc::new(InputMeters::default());
    let shape = RingShape {
        channels: 1,
        format: InputFormat::F32,
        capacity_frames: BLOCK * 64,
        block: BLOCK,
    };
    let (mut producer, consumer, _control) = input_ring(shape, meters.clone(), Instant::now());
    let mut p = player(engine(identity, Profile::Strict));
    p.set_input(Box::new(consumer));
    let cell = PlayerCell::new(p);
    let t0 = Instant::now() + Duration::from_millis(20);
    let source = std::thread::spawn(move || {
        paced(t0, periods, |p| {
            let period: Vec<f64> = (0..BLOCK).map(|i| (p * BLOCK + i) as f64 / CODE).collect();
            producer.push(&period, |x| x);
        })
    });
    let mut out = vec![0.0f32; periods * BLOCK * 2];
    let ends = paced(t0, periods, |p| {
        cell.fill(&mut out[p * BLOCK * 2..(p + 1) * BLOCK * 2]);
    });
    let pushed = source.join().unwrap();
    let mut frames = Vec::with_capacity(periods * BLOCK);
    let mut dry = 0;
    for (j, frame) in out.chunks(2).enumerate() {
        let k = (frame[0] as f64 * CODE) as usize;
        if frame[0] <= 0.0 || k / BLOCK >= pushed.len() {
            dry += usize::from(j > 0);
            continue;
        }
        let wait = ends[j / BLOCK] as f64 - pushed[k / BLOCK] as f64;
        frames.push(wait * 1e-9 * RATE);
    }
    let n = frames.len();
    println!(
        "input → output latency at block {BLOCK}, {seconds} s: min {:.1} frames, p50 {:.1}, p99 {:.1}, max {:.1} ({:.2} ms at p50) over {n} frames; {dry} frames read from a dry ring (each delays the input after it)",
        percentile(&mut frames, 0.0),
        percentile(&mut frames, 0.5),
        percentile(&mut frames, 0.99),
        percentile(&mut frames, 1.0),
        percentile(&mut frames, 0.5) / RATE * 1e3
    );
    println!("  capture ring: {meters:?}");
}

/// A stereo source that never runs dry (the tap's cost, not the ring's).
struct Tone(u64);
impl LiveInput for Tone {
    fn channels(&self) -> usize {
        2
    }
    fn format(&self) -> InputFormat {
        InputFormat::Int(16)
    }
    fn read(&mut self, dst: &mut [f64]) {
        for f in dst.chunks_exact_mut(2) {
            let x = libm::sin(self.0 as f64 * 0.01) * 0.5;
            f[0] = (x * 32767.0).round() / 32767.0;
            f[1] = -f[0];
            self.0 += 1;
        }
    }
}

fn tap_cost(seconds: f64) {
    let scene = r#"{"version":"1.0","sample_rate":48000,
        "nodes":[{"id":"l","op":"input","params":{"channel":0}},
                 {"id":"r","op":"input","params":{"channel":1}},
                 {"id":"lp","op":"onepole","params":{"cutoff":"1kHz"}},
                 {"id":"echo","op":"delay","params":{"time":"30ms","max_time":"100ms","feedback":0.4}},
                 {"id":"sum","op":"mix"}],
        "edges":[{"from":"r","to":"lp"},{"from":"l","to":"echo"},
                 {"from":"lp","to":"sum:in0"},{"from":"echo","to":"sum:in1"}],
        "outputs":{"main":["sum"]}}"#;
    let dir = std::env::temp_dir().join(format!("morphrt-bench-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("recorded.input.wav");
    let _ = std::fs::remove_file(&file);
    let mut tapped = player(engine(scene, Profile::Live));
    tapped.set_input(Box::new(Tone(0)));
    let (writer, reader) = history(2, RATE as u32, HISTORY_SECONDS, 0);
    tapped.set_history(writer);
    let output = Output::prepare(&file, &Inputs::default(), 0, &Kind::RECORDED_INPUT).unwrap();
    let recorder = InputRecorder::start(
        output,
        Existing::Refuse,
        reader,
        InputFormat::Int(16),
        48_000,
    )
    .unwrap();
    let mut plain = player(engine(scene, Profile::Live));
    plain.set_input(Box::new(Tone(0)));
    let (tapped, plain) = (PlayerCell::new(tapped), PlayerCell::new(plain));
    let periods = (seconds * RATE) as usize / BLOCK;
    let mut buf = vec![0.0f32; BLOCK * 2];
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let t0 = Instant::now();
    paced(t0, periods, |p| {
        // Alternate which goes first, so neither always has a warm cache.
        let order: [(&PlayerCell, bool); 2] = if p % 2 == 0 {
            [(&tapped, true), (&plain, false)]
        } else {
            [(&plain, false), (&tapped, true)]
        };
        for (cell, tap) in order {
            let s = Instant::now();
            cell.fill(&mut buf);
            let ns = s.elapsed().as_nanos() as f64;
            if tap {
                with.push(ns)
            } else {
                without.push(ns)
            }
        }
    });
    drop((tapped, plain));
    let recorded = recorder.finish().unwrap();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (mw, mo) = (mean(&with), mean(&without));
    let (pw, po) = (percentile(&mut with, 0.5), percentile(&mut without, 0.5));
    println!(
        "input tap (history push + recorded input writer) at block {BLOCK}, {seconds} s: callback mean {:.2} µs with, {:.2} µs without (×{:.3}); median {:.2} / {:.2} µs (×{:.3}); {} frames recorded, {} lost",
        mw / 1e3,
        mo / 1e3,
        mw / mo.max(1e-9),
        pw / 1e3,
        po / 1e3,
        pw / po.max(1e-9),
        recorded.frames,
        recorded.lost_frames
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Nanoseconds of each push of `periods` pushes of a stereo device at
/// `device_hz` into a 48 kHz ring (converted when the rates differ), the
/// frames of one 64-frame block at 48 kHz a push, the ring read after each.
fn push_times(device_hz: u32, periods: usize) -> Vec<f64> {
    let shape = RingShape {
        channels: 2,
        format: InputFormat::F32,
        capacity_frames: BLOCK * 64,
        block: BLOCK,
    };
    let rates = (device_hz != RATE as u32).then_some(InputRates {
        device_hz,
        session_hz: RATE as u32,
    });
    let meters = Arc::new(InputMeters::default());
    let (mut writer, mut reader, _control) = input_ring_at(shape, rates, meters, Instant::now());
    let recorded: Vec<f32> = (0..device_hz as usize * 2)
        .map(|i| (libm::sin(i as f64 * 0.013) * 0.5) as f32)
        .collect();
    let mut block = vec![0.0f64; BLOCK * 2];
    let mut times = Vec::with_capacity(periods);
    let mut pushed = 0usize;
    for p in 1..=periods {
        let due = p * BLOCK * device_hz as usize / RATE as usize;
        let from = pushed % device_hz as usize;
        let n = (due - pushed).min(device_hz as usize - from);
        let chunk = &recorded[from * 2..(from + n) * 2];
        pushed = due;
        let s = Instant::now();
        writer.push(chunk, |x| x as f64);
        times.push(s.elapsed().as_nanos() as f64);
        reader.read(&mut block);
    }
    times
}

fn conversion_cost(seconds: f64) {
    let periods = (seconds * RATE) as usize / BLOCK;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut plain = push_times(48_000, periods);
    let mut converted = push_times(44_100, periods);
    let (mp, mc) = (mean(&plain), mean(&converted));
    let (pp, pc) = (percentile(&mut plain, 0.5), percentile(&mut converted, 0.5));
    let deadline_ns = BLOCK as f64 / RATE * 1e9;
    println!(
        "input rate conversion (stereo 44.1 → 48 kHz, strict polyphase) per 64-frame block, {seconds} s: push mean {:.2} µs converted, {:.2} µs at 48 kHz unconverted; median {:.2} / {:.2} µs; the conversion takes {:.2} % of the block's {:.0} µs",
        mc / 1e3,
        mp / 1e3,
        pc / 1e3,
        pp / 1e3,
        (mc - mp) / deadline_ns * 100.0,
        deadline_ns / 1e3
    );
}

fn main() {
    let seconds: f64 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(5.0);
    println!("cargo bench --bench input -- {seconds}");
    latency(seconds);
    tap_cost(seconds);
    conversion_cost(seconds);
}
