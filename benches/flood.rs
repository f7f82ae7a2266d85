//! The callback under a flood, at block 64 (48 kHz, deadline 1333 µs),
//! each block timed from the first record it takes to the end of its
//! `process_block` (what the audio thread spends on it), in the thread's
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`), so that a busy machine's
//! preemptions do not count as work; the wall-clock maximum is printed
//! beside it:
//!
//! - **Flood**: `scenes/poly-pad.json` under live, repro and strict, one
//!   engine each, their blocks interleaved, with 256 change records (the
//!   delay's `mix` and the template's `lp.cutoff`) and 256 notes (ons and
//!   offs of 128 keys) pushed every block, each for a sample of the next
//!   block in a scrambled order: under repro and strict each record lands
//!   at its sample, cutting the block into chunks. Reports the longest
//!   block as a share of the deadline, and p99.
//! - **Long voices**: a voice module of 8 voices, each a saw through an
//!   envelope into a 2 s `delay` and a `reverb`, played 64 notes a block
//!   (every note steals; voices are cleared while they wait). Reports the
//!   blocks over the deadline and the longest.
//!
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench flood [-- BLOCKS]`

use morphrt::engine::{ChangeRecord, Engine};
use morphrt::graph::{compile, CompileOptions, ControlValue, NoteAction, PlanNote};
use morphrt::profile::Profile;
use std::time::Instant;

/// The calling thread's CPU time, in µs.
fn cpu_us() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
}

const BLOCK: usize = 64;
const RATE: f64 = 48_000.0;

fn engine(text: &str, file: &str, profile: Option<Profile>) -> Engine {
    let scene = morphrt::scene::load_str(text, file, None).expect("the bench scene loads");
    let plan = compile(
        &scene,
        &CompileOptions {
            profile,
            block_size: Some(BLOCK),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .expect("the bench scene compiles");
    Engine::new(plan)
}

/// The sample offsets 0…63 in a scrambled order (a multiplicative walk).
fn scrambled(k: u64) -> u64 {
    (k * 37 + 11) % BLOCK as u64
}

fn note(sample: u64, pool: usize, key: u64, on: bool) -> PlanNote {
    let hz = 110.0 + key as f64 * 7.0;
    PlanNote {
        sample,
        pool,
        action: if on {
            NoteAction::On {
                key: hz.to_bits(),
                tag: 0,
                pitch_hz: hz,
                velocity: 0.6,
            }
        } else {
            NoteAction::Off {
                key: hz.to_bits(),
                tag: 0,
            }
        },
    }
}

/// Per-block CPU times in µs, and the longest wall-clock one.
struct Times(Vec<f64>, f64);

impl Times {
    fn report(&self, name: &str) {
        let deadline = BLOCK as f64 / RATE * 1e6;
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
        let max = *v.last().unwrap_or(&0.0);
        let over = v.iter().filter(|&&t| t > deadline).count();
        println!(
            "  {name:<12} {} blocks: CPU p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs = {:.1} % of the {deadline:.0} µs deadline, {over} blocks over it (wall-clock max {:.0} µs)",
            v.len(),
            q(0.5),
            q(0.99),
            max,
            max / deadline * 1e2,
            self.1,
        );
    }
}

/// One engine of the flood: poly-pad under a profile, its pad and targets.
struct Flooded {
    e: Engine,
    pool: usize,
    targets: [(usize, usize); 2],
    times: Vec<f64>,
    wall: f64,
}

impl Flooded {
    fn new(profile: Profile, blocks: usize) -> Flooded {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/poly-pad.json");
        let text = std::fs::read_to_string(path).expect("scenes/poly-pad.json");
        let e = engine(&text, path, Some(profile));
        let pool = e.voice_pool("pad").expect("the pad");
        let targets = [
            e.find_param("space", "mix").expect("space.mix"),
            e.find_param("lp#0", "cutoff").expect("lp#0.cutoff"),
        ];
        Flooded {
            e,
            pool,
            targets,
            times: Vec::with_capacity(blocks),
            wall: 0.0,
        }
    }

    /// Block `b`: 256 change records and 256 notes, then the block.
    fn block(&mut self, b: u64) {
        let e = &mut self.e;
        let id = e.id();
        let next = e.clock() + BLOCK as u64;
        let (t, c) = (Instant::now(), cpu_us());
        for k in 0..256u64 {
            let (node, param) = self.targets[(k % 2) as usize];
            let _ = e.push_change(ChangeRecord {
                sample: next + scrambled(k),
                node: node as u32,
                param: param as u16,
                value: ControlValue::Number(if k % 2 == 0 {
                    (k % 10) as f64 / 10.0
                } else {
                    500.0 + (k * 13 % 2000) as f64
                }),
                ramp: 0,
                engine: id,
                seq: 0,
            });
            let key = (b * 7 + k / 2) % 128;
            let _ = e.push_note(note(next + scrambled(k + 5), self.pool, key, k % 2 == 0));
        }
        e.process_block(BLOCK);
        std::hint::black_box(e.bus().get(0, 0));
        self.times.push(cpu_us() - c);
        self.wall = self.wall.max(t.elapsed().as_secs_f64() * 1e6);
    }
}

/// The flood on one engine per profile, their blocks interleaved (one
/// block of each in turn) so that each meets the same machine.
fn flood(blocks: usize) -> Vec<(Profile, Times)> {
    let mut engines: Vec<(Profile, Flooded)> = [Profile::Live, Profile::Repro, Profile::Strict]
        .into_iter()
        .map(|p| (p, Flooded::new(p, blocks)))
        .collect();
    for b in 0..blocks as u64 {
        for (_, f) in &mut engines {
            f.block(b);
        }
    }
    engines
        .into_iter()
        .map(|(p, f)| (p, Times(f.times, f.wall)))
        .collect()
}

/// Eight voices, each a saw through an envelope into a 2 s delay and a
/// reverb.
const LONG: &str = r#"{ "version": "1.0", "sample_rate": 48000, "seed": 3,
  "modules": [ { "id": "pad", "voices": 8, "note": { "pitch": "osc.freq", "gate": "env.gate", "velocity": "amp.gain" },
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.2 } },
        { "id": "env", "op": "adsr", "params": { "attack": "2ms", "decay": "20ms", "sustain": 0.5, "release": "10ms" } },
        { "id": "vca", "op": "multiply" },
        { "id": "dl", "op": "delay", "params": { "max_time": "2s", "time": "300ms", "feedback": 0.5, "mix": 0.5 } },
        { "id": "rv", "op": "reverb" },
        { "id": "amp", "op": "gain" } ] } ],
  "edges": [ { "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" }, { "from": "vca", "to": "dl" },
             { "from": "dl", "to": "rv" }, { "from": "rv", "to": "amp" } ],
  "outputs": { "main": ["pad"] } }"#;

fn long_voices(blocks: usize, profile: Profile) -> Times {
    let mut e = engine(LONG, "long.json", Some(profile));
    let pool = e.voice_pool("pad").expect("the pad");
    let mut times = Vec::with_capacity(blocks);
    let mut wall = 0.0f64;
    for b in 0..blocks as u64 {
        let next = e.clock() + BLOCK as u64;
        let (t, c) = (Instant::now(), cpu_us());
        for k in 0..64u64 {
            let _ = e.push_note(note(next + scrambled(k), pool, (b * 64 + k) % 97, true));
        }
        e.process_block(BLOCK);
        std::hint::black_box(e.bus().get(0, 0));
        times.push(cpu_us() - c);
        wall = wall.max(t.elapsed().as_secs_f64() * 1e6);
    }
    Times(times, wall)
}

fn main() {
    let blocks = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3000usize);
    println!("the callback under a flood, block {BLOCK} at 48 kHz:");
    for (p, times) in flood(blocks) {
        times.report(&format!("flood {p}"));
    }
    for p in [Profile::Live, Profile::Repro, Profile::Strict] {
        long_voices(blocks, p).report(&format!("long {p}"));
    }
}
