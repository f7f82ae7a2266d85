//! Control in, measured, at block 64 (48 kHz, repro):
//!
//! - **OSC latency**: a `/morphrt/param` message sent over UDP loopback →
//!   the first sample carrying its value leaves the callback (a paced
//!   audio thread, 64-frame periods, no sound card; a device adds its own
//!   output latency on top). The socket, its thread and the control hub
//!   are `run --osc`'s own; the control thread waits for a message (5 ms
//!   at most) and then ticks the hub, as `run`'s loop does. p50 / p99 /
//!   max over MESSAGES messages.
//! - **Audio-thread cost per applied message**: the callback's time per
//!   block with N records pushed through the player's ring every block
//!   against none, interleaved in the same run; the difference per record
//!   and the ratio.
//!
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench control [-- MESSAGES]`

#[path = "common/stats.rs"]
mod stats;

use morphrt::engine::incoming::Incoming;
use morphrt::engine::{ChangeRecord, Engine};
use morphrt::graph::{compile, CompileOptions, ControlValue};
use morphrt::host::live::osc_in;
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
use morphrt::host::live::remote_in::{AudioClock, RemoteHub};
use morphrt::host::live::session::PlayingControls;
use morphrt::profile::Profile;
use rosc::{OscMessage, OscPacket, OscType};
use stats::percentile;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The latency scene: what the callback outputs is the dc's value.
const DC: &str = r#"{"version": "1.0", "sample_rate": 48000,
  "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.0}}],
  "outputs": {"main": ["d"]}}"#;

/// The cost scene: a filtered tone with the dc mixed in.
const SCENE: &str = r#"{"version": "1.0", "sample_rate": 48000,
  "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.0}},
            {"id": "lp", "op": "biquad", "params": {"mode": "lowpass", "cutoff": "2kHz"}},
            {"id": "tone", "op": "sine", "params": {"freq": "220Hz", "amp": 0.2}},
            {"id": "mix", "op": "mix"}],
  "edges": [{"from": "tone", "to": "lp"}, {"from": "lp", "to": "mix:in0"}, {"from": "d", "to": "mix:in1"}],
  "outputs": {"main": ["mix"]}}"#;

const BLOCK: usize = 64;
const RATE: f64 = 48_000.0;

fn incoming(text: &str) -> Incoming {
    let scene = morphrt::scene::load_str(text, "control.json", None).unwrap();
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(Profile::Repro),
            block_size: Some(BLOCK),
            seed: Some(1),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap();
    Incoming::from_plan(plan, None, Vec::new())
}

fn player(engine: Engine, meters: Arc<Meters>, origin: Instant) -> Player {
    Player::new(
        engine,
        2,
        None,
        240,
        meters,
        Arc::new(Switches::default()),
        origin,
    )
}

fn main() {
    let messages: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(500);
    latency(messages);
    cost();
}

/// OSC message → first sample with its value out of the callback.
fn latency(messages: usize) {
    let inc = incoming(DC);
    let meters = Arc::new(Meters::default());
    let origin = Instant::now();
    let controls = PlayingControls::of(&inc);
    let mut p = player(*inc.engine, meters.clone(), origin);
    let clock = AudioClock {
        meters: meters.clone(),
        origin,
        sample_rate: RATE as u32,
        stamped_latency: 2 * BLOCK as u64,
        first_sample: 0,
    };
    let mut hub = RemoteHub::new(p.control_link(), controls, clock);
    let socket = osc_in::bind("0", &mut std::io::sink()).expect("bind");
    let port = socket.addr.port();
    let _server = socket.start(hub.sender(), hub.mappings()).unwrap();
    let cell = Arc::new(PlayerCell::new(p));
    let stop = Arc::new(AtomicBool::new(false));
    // The value the sender waits to hear (f32 bits) and when it was heard
    // (ns since `origin`; 0: not yet).
    let wanted = Arc::new(AtomicU64::new(u64::MAX));
    let heard = Arc::new(AtomicU64::new(0));
    let audio = {
        let (cell, stop, wanted, heard) =
            (cell.clone(), stop.clone(), wanted.clone(), heard.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0.0f32; BLOCK * 2];
            let t0 = Instant::now();
            let mut frames = 0u64;
            while !stop.load(Ordering::Relaxed) {
                cell.fill(&mut buf);
                let w = wanted.load(Ordering::Acquire);
                if heard.load(Ordering::Relaxed) == 0 && buf.iter().any(|x| x.to_bits() as u64 == w)
                {
                    heard.store(origin.elapsed().as_nanos() as u64, Ordering::Release);
                }
                frames += BLOCK as u64;
                let due = t0 + Duration::from_secs_f64(frames as f64 / RATE);
                if let Some(d) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
            }
        })
    };
    let control = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut log = std::io::sink();
            while !stop.load(Ordering::Relaxed) {
                hub.wait(Duration::from_millis(5));
                hub.tick(&mut log);
            }
            hub.counts
        })
    };
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut ms = Vec::with_capacity(messages);
    for i in 0..messages {
        let v = 0.25 + (i % 500) as f32 / 1000.0;
        heard.store(0, Ordering::Release);
        wanted.store(v.to_bits() as u64, Ordering::Release);
        let packet = OscPacket::Message(OscMessage {
            addr: "/morphrt/param".into(),
            args: vec![
                OscType::String("d".into()),
                OscType::String("value".into()),
                OscType::Float(v),
            ],
        });
        let bytes = rosc::encoder::encode(&packet).unwrap();
        let sent = origin.elapsed().as_nanos() as u64;
        client.send_to(&bytes, ("127.0.0.1", port)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while heard.load(Ordering::Acquire) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        let h = heard.load(Ordering::Acquire);
        if h > sent {
            ms.push((h - sent) as f64 / 1e6);
        }
        // Off the tick grid: messages arrive at any phase of the loop.
        std::thread::sleep(Duration::from_micros(3_000 + (i as u64 * 1_777) % 7_000));
    }
    stop.store(true, Ordering::Relaxed);
    audio.join().unwrap();
    let counts = control.join().unwrap();
    let n = ms.len();
    println!(
        "OSC → first changed sample out of the callback, block {BLOCK} at 48 kHz, hub woken by each message (else every 5 ms): {n} of {messages} heard; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} applied)",
        percentile(&mut ms, 0.5),
        percentile(&mut ms, 0.99),
        percentile(&mut ms, 1.0),
        counts.applied
    );
}

/// The callback's time per block with N records a block against none.
fn cost() {
    let rounds = 200;
    let blocks = 200;
    let mut results = Vec::new();
    for n in [0usize, 16, 64, 256] {
        results.push((n, Vec::<f64>::new()));
    }
    let inc = incoming(SCENE);
    let (node, param) = inc.engine.find_param("d", "value").unwrap();
    let meters = Arc::new(Meters::default());
    let mut p = player(*inc.engine, meters.clone(), Instant::now());
    let mut link = p.control_link();
    let id = p.engine().id();
    let cell = PlayerCell::new(p);
    let mut buf = vec![0.0f32; BLOCK * 2];
    let mut seq = 0u64;
    for _ in 0..rounds {
        for (n, times) in results.iter_mut() {
            let mut total = 0.0;
            for _ in 0..blocks {
                for _ in 0..*n {
                    seq += 1;
                    let r = ChangeRecord {
                        sample: 0,
                        node: node as u32,
                        param: param as u16,
                        value: ControlValue::Number((seq % 100) as f64 / 100.0),
                        ramp: 0,
                        engine: id,
                        seq,
                    };
                    let _ = link.records.push(r);
                }
                let t = Instant::now();
                cell.fill(&mut buf);
                total += t.elapsed().as_nanos() as f64;
                while link.reports.pop().is_ok() {}
            }
            times.push(total / blocks as f64);
        }
    }
    let base = percentile(&mut results[0].1.clone(), 0.5);
    println!("audio thread per 64-frame block (median of {rounds} rounds of {blocks} blocks, interleaved): none {:.0} ns", base);
    for (n, times) in results.iter_mut().skip(1) {
        let t = percentile(times, 0.5);
        println!(
            "  {n:>3} records a block: {t:.0} ns ({:.2}× none), {:.1} ns per applied record",
            t / base,
            (t - base) / *n as f64
        );
    }
}
