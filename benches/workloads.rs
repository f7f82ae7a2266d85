//! The benchmark scenes W1–W4 (`scenes/bench/`) under strict, repro and
//! live at block 64, and for W1 and W4 a plain hand-written Rust floor of
//! the same computation in the same run: the ratio engine time / floor
//! time is what the graph, the engine and the operators' generality cost
//! on top of the arithmetic itself. Rounds are interleaved and the best of
//! each is kept, so ratios stay comparable on a noisy machine. Measures
//! only; asserts nothing.
//!
//! Each floor is checked against the engine's output (relative RMS, shown)
//! so a fast floor that computes something else is caught by eye.
//!
//! Then the biquad's own cost per sample: W4 against W4 without its
//! biquads (the noise summed straight), under each profile, with lane
//! groups on (the lane kernels) and off (each node's own `process`, the
//! scalar path); the difference in thread CPU time over 64 nodes is ns
//! per biquad sample.
//!
//! `cargo bench --bench workloads [-- SECONDS [ROUNDS]] [biquad]` (`biquad`:
//! only the biquad's cost)

use morphrt::engine::Engine;
use morphrt::engine::{render_to_vec, run_blocks};
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use std::time::Instant;

const BLOCK: usize = 64;
const SR: f64 = 48000.0;
const TWO_PI: f64 = 2.0 * core::f64::consts::PI;
const TWO_POW_64: f64 = 18446744073709551616.0;

/// A floor's sample type: the engine's two precisions, with the math a
/// careful hand-written kernel would call (libm, as strict does).
trait Real: Copy + Default + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
    fn sin(self) -> Self;
    fn phase(p: u64) -> Self;
    fn noise(u: u32) -> Self;
}

impl Real for f64 {
    fn of(x: f64) -> f64 {
        x
    }
    fn f64(self) -> f64 {
        self
    }
    #[inline]
    fn sin(self) -> f64 {
        libm::sin(self)
    }
    #[inline]
    fn phase(p: u64) -> f64 {
        (p >> 11) as f64 * (1.0 / 9007199254740992.0)
    }
    #[inline]
    fn noise(u: u32) -> f64 {
        u as f64 * (1.0 / 2147483648.0) - 1.0
    }
}

impl Real for f32 {
    fn of(x: f64) -> f32 {
        x as f32
    }
    fn f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn sin(self) -> f32 {
        libm::sinf(self)
    }
    #[inline]
    fn phase(p: u64) -> f32 {
        (p >> 40) as f32 * (1.0 / 16777216.0)
    }
    #[inline]
    fn noise(u: u32) -> f32 {
        (u >> 8) as f32 * (1.0 / 8388608.0) - 1.0
    }
}

/// One step of the biquad as the engine runs it at both precisions:
/// transposed direct form II, its coefficients and state in f64, the
/// sample read and written at `S`.
#[inline]
fn tick<S: Real>(c: &[f64; 5], z: &mut [f64; 2], x: S) -> S {
    let x = x.f64();
    let y = c[0] * x + z[0];
    z[0] = c[1] * x - c[3] * y + z[1];
    z[1] = c[2] * x - c[4] * y;
    S::of(y)
}

/// RBJ lowpass or bandpass (constant 0 dB peak) `[b0, b1, b2, a1, a2]`.
fn rbj(bandpass: bool, cutoff_hz: f64, q: f64) -> [f64; 5] {
    let w0 = TWO_PI * cutoff_hz / SR;
    let (cos_w0, sin_w0) = (libm::cos(w0), libm::sin(w0));
    let alpha = sin_w0 / (2.0 * q);
    let a0 = 1.0 + alpha;
    let (b0, b1, b2) = if bandpass {
        (alpha, 0.0, -alpha)
    } else {
        ((1.0 - cos_w0) / 2.0, 1.0 - cos_w0, (1.0 - cos_w0) / 2.0)
    };
    [
        b0 / a0,
        b1 / a0,
        b2 / a0,
        -2.0 * cos_w0 / a0,
        (1.0 - alpha) / a0,
    ]
}

/// W1: 256 sines (100 Hz + i·7.3 Hz, amp 1/256) summed into a 2 kHz lowpass.
fn floor_w1<S: Real>(frames: usize, out: &mut Vec<f64>) {
    let incs: Vec<u64> = (0..256)
        .map(|i| {
            let cycles = (100.0 + 7.3 * i as f64) / SR;
            ((cycles - libm::floor(cycles)) * TWO_POW_64) as u64
        })
        .collect();
    let mut phases = vec![0u64; 256];
    let amp = S::of(1.0 / 256.0);
    let two_pi = S::of(TWO_PI);
    let c = rbj(false, 2000.0, 0.707);
    let mut z = [0.0; 2];
    let mut sum = [S::default(); BLOCK];
    let mut done = 0;
    while done < frames {
        let n = BLOCK.min(frames - done);
        for (k, (p, inc)) in phases.iter_mut().zip(&incs).enumerate() {
            for s in sum[..n].iter_mut() {
                let v = amp * (two_pi * S::phase(*p)).sin();
                *s = if k == 0 { v } else { *s + v };
                *p = p.wrapping_add(*inc);
            }
        }
        for s in &sum[..n] {
            out.push(tick(&c, &mut z, *s).f64());
        }
        done += n;
    }
}

/// W4: 64 seeded noise streams (amp 0.25) → bandpass (Q 10, 200 Hz·1.05^i)
/// → summed → ×1/8.
fn floor_w4<S: Real>(frames: usize, seed: u64, out: &mut Vec<f64>) {
    let keys: Vec<[u32; 2]> = (0..64)
        .map(|i| {
            let h = morphrt::dsp::rng::hash64(seed, &format!("n{i:02}"), 0);
            [h as u32, (h >> 32) as u32]
        })
        .collect();
    let coefs: Vec<[f64; 5]> = (0..64)
        .map(|i| rbj(true, 200.0 * libm::pow(1.05, i as f64), 10.0))
        .collect();
    let mut z = [[0.0; 2]; 64];
    let (amp, gain) = (S::of(0.25), S::of(0.125));
    let mut sum = [S::default(); BLOCK];
    let mut done = 0;
    while done < frames {
        let n = BLOCK.min(frames - done);
        for (k, (key, (c, z))) in keys.iter().zip(coefs.iter().zip(z.iter_mut())).enumerate() {
            // One Philox call per four samples (blocks start on a multiple of 4).
            let mut words = [0u32; 4];
            for (j, s) in sum[..n].iter_mut().enumerate() {
                let t = (done + j) as u64;
                if t.is_multiple_of(4) {
                    let q = t / 4;
                    words = rand_philox::philox4x32_10([q as u32, (q >> 32) as u32, 0, 0], *key);
                }
                let v = tick(c, z, amp * S::noise(words[(t % 4) as usize]));
                *s = if k == 0 { v } else { *s + v };
            }
        }
        for s in &sum[..n] {
            out.push((gain * *s).f64());
        }
        done += n;
    }
}

fn rel_rms(a: &[f64], b: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        num += (x - y) * (x - y);
        den += x * x;
    }
    (num / den.max(1e-300)).sqrt()
}

fn engine(name: &str, profile: Profile) -> Engine {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/scenes/bench/{name}.json");
    let scene = morphrt::scene::load_file(std::path::Path::new(&path)).expect("bench scene loads");
    engine_of(&scene, profile)
}

fn engine_of(scene: &morphrt::scene::Scene, profile: Profile) -> Engine {
    let plan = compile(
        scene,
        &CompileOptions {
            profile: Some(profile),
            block_size: Some(BLOCK),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .expect("bench scene compiles");
    Engine::new(plan)
}

fn time_engine(name: &str, profile: Profile, frames: u64) -> f64 {
    let mut e = engine(name, profile);
    let mut sink = 0.0f64;
    let t = Instant::now();
    run_blocks(&mut e, frames, |bus| sink += bus.get(0, 0), |_| {});
    let s = t.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    s
}

/// W4 as `scenes/bench/w4.json` has it, or without its biquads (each
/// noise straight into the sum).
fn w4_text(biquads: bool) -> String {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for i in 0..64 {
        nodes.push(format!(
            r#"{{"id": "n{i:02}", "op": "noise", "params": {{"amp": 0.25}}}}"#
        ));
        if biquads {
            let fc = 200.0 * libm::pow(1.05, i as f64);
            nodes.push(format!(
                r#"{{"id": "bp{i:02}", "op": "biquad", "params": {{"mode": "bandpass", "cutoff": {fc}, "q": 10}}}}"#
            ));
            edges.push(format!(r#"{{"from": "n{i:02}", "to": "bp{i:02}"}}"#));
            edges.push(format!(r#"{{"from": "bp{i:02}", "to": "out"}}"#));
        } else {
            edges.push(format!(r#"{{"from": "n{i:02}", "to": "out"}}"#));
        }
    }
    nodes.push(r#"{"id": "out", "op": "gain", "params": {"gain": 0.125}}"#.into());
    format!(
        r#"{{"version": "1.0", "seed": 4, "sample_rate": 48000, "duration": "5s",
            "nodes": [{}], "edges": [{}], "outputs": {{"main": ["out"]}}}}"#,
        nodes.join(",\n"),
        edges.join(",\n")
    )
}

/// CPU seconds to render `frames` of `text` under `profile`, lane groups
/// on or off.
fn time_text(text: &str, profile: Profile, lanes: bool, frames: u64) -> f64 {
    let scene = morphrt::scene::load_str(text, "w4.json", None).expect("W4 variant loads");
    let mut e = engine_of(&scene, profile);
    e.set_lanes(lanes);
    let mut sink = 0.0f64;
    let t = thread_cpu_seconds();
    run_blocks(&mut e, frames, |bus| sink += bus.get(0, 0), |_| {});
    let s = thread_cpu_seconds() - t;
    std::hint::black_box(sink);
    s
}

/// CPU time of the calling thread: on a shared machine it counts only what
/// this thread ran, where wall time also counts the others' turns.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write; the clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The biquad's cost per sample in ns: W4 minus W4 without its biquads,
/// over 64 nodes, per profile, lanes on and off, rounds interleaved.
fn biquad_cost(seconds: f64, rounds: usize) {
    let frames = (seconds * SR) as u64;
    let (with, without) = (w4_text(true), w4_text(false));
    // [profile][lanes off, on][with, without]
    let mut best = [[[f64::INFINITY; 2]; 2]; 3];
    for _ in 0..rounds {
        for (k, p) in Profile::ALL.iter().enumerate() {
            for (l, lanes) in [false, true].into_iter().enumerate() {
                for (w, text) in [&with, &without].into_iter().enumerate() {
                    best[k][l][w] = best[k][l][w].min(time_text(text, *p, lanes, frames));
                }
            }
        }
    }
    println!(
        "\nbiquad cost per sample (W4 minus W4 without biquads, over 64 nodes; thread CPU time), best of {rounds}"
    );
    println!(
        "{:<7} {:>16} {:>16}",
        "profile", "alone ns/sample", "lanes ns/sample"
    );
    for (k, p) in Profile::ALL.iter().enumerate() {
        let ns = |l: usize| (best[k][l][0] - best[k][l][1]) / (64.0 * frames as f64) * 1e9;
        println!("{:<7} {:>16.2} {:>16.2}", p.name(), ns(0), ns(1));
    }
}

fn time_floor(f: impl Fn(&mut Vec<f64>), frames: u64) -> f64 {
    let mut out = Vec::with_capacity(frames as usize);
    let t = Instant::now();
    f(&mut out);
    let s = t.elapsed().as_secs_f64();
    std::hint::black_box(&out);
    s
}

fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seconds = args.first().copied().unwrap_or(5.0);
    let rounds = args.get(1).map_or(3, |r| *r as usize).max(1);
    if std::env::args().any(|a| a == "biquad") {
        biquad_cost(seconds, rounds);
        return;
    }
    let frames = (seconds * SR) as u64;
    let n = frames as usize;
    let w4_seed = 4;

    // The floors compute what the scenes do: check before timing.
    let check = |name: &str, profile: Profile, floor: &dyn Fn(&mut Vec<f64>)| {
        let k = SR as u64;
        let want = render_to_vec(&mut engine(name, profile), k);
        let mut got = Vec::new();
        floor(&mut got);
        rel_rms(&want[0], &got[..k as usize])
    };
    let w1_64 = |o: &mut Vec<f64>| floor_w1::<f64>(SR as usize, o);
    let w1_32 = |o: &mut Vec<f64>| floor_w1::<f32>(SR as usize, o);
    let w4_64 = |o: &mut Vec<f64>| floor_w4::<f64>(SR as usize, w4_seed, o);
    let w4_32 = |o: &mut Vec<f64>| floor_w4::<f32>(SR as usize, w4_seed, o);
    println!("floors against the engine (1 s, relative RMS):");
    println!(
        "  W1 f64 vs strict {:.1e}   W1 f32 vs repro {:.1e}",
        check("w1", Profile::Strict, &w1_64),
        check("w1", Profile::Repro, &w1_32)
    );
    println!(
        "  W4 f64 vs strict {:.1e}   W4 f32 vs repro {:.1e}",
        check("w4", Profile::Strict, &w4_64),
        check("w4", Profile::Repro, &w4_32)
    );

    let names = ["w1", "w2", "w3", "w4"];
    let mut best = [[f64::INFINITY; 3]; 4];
    // Floors: [W1 f64, W1 f32, W4 f64, W4 f32].
    let mut floors = [f64::INFINITY; 4];
    for _ in 0..rounds {
        for (w, name) in names.iter().enumerate() {
            for (k, p) in Profile::ALL.iter().enumerate() {
                best[w][k] = best[w][k].min(time_engine(name, *p, frames));
            }
        }
        floors[0] = floors[0].min(time_floor(|o| floor_w1::<f64>(n, o), frames));
        floors[1] = floors[1].min(time_floor(|o| floor_w1::<f32>(n, o), frames));
        floors[2] = floors[2].min(time_floor(|o| floor_w4::<f64>(n, w4_seed, o), frames));
        floors[3] = floors[3].min(time_floor(|o| floor_w4::<f32>(n, w4_seed, o), frames));
    }
    println!(
        "\n{seconds} s of audio per render, block {BLOCK}, best of {rounds} interleaved rounds"
    );
    println!(
        "{:<9} {:<7} {:>12} {:>22}",
        "workload", "profile", "audio s / s", "engine / floor time"
    );
    for (w, name) in names.iter().enumerate() {
        for (k, p) in Profile::ALL.iter().enumerate() {
            let floor = match (w, p) {
                (0, Profile::Strict) => Some((floors[0], "f64")),
                (0, _) => Some((floors[1], "f32")),
                (3, Profile::Strict) => Some((floors[2], "f64")),
                (3, _) => Some((floors[3], "f32")),
                _ => None,
            };
            let ratio = floor
                .map(|(f, prec)| format!("{:.2}x (floor {prec})", best[w][k] / f))
                .unwrap_or_default();
            println!(
                "{:<9} {:<7} {:>12.1} {:>22}",
                name.to_uppercase(),
                p.name(),
                seconds / best[w][k],
                ratio
            );
        }
    }
    for (label, t) in [
        ("W1 floor f64", floors[0]),
        ("W1 floor f32", floors[1]),
        ("W4 floor f64", floors[2]),
        ("W4 floor f32", floors[3]),
    ] {
        println!("{label:<17} {:>12.1}", seconds / t);
    }
    biquad_cost(seconds, rounds);
}
