//! Sample-rate conversion speed: 10 minutes of stereo 44.1 → 48 kHz with
//! morphrt's strict polyphase converter against `sox … rate -v` (very high
//! quality), and with the rubato converter (repro and live) against
//! `sox … rate -h` (high quality), in one run, best of three rounds each.
//! Measures only; asserts nothing.
//!
//! `cargo bench --bench resample` (needs `sox` on the PATH; without it the
//! sox rows say so).
//!
//! The input is the same for all four: a file of 32-bit float frames
//! (noise plus tones) that sox reads and discards its output (`-n`), and
//! that morphrt reads into memory once, then converts in pushes of 4096
//! frames, pulling into a scratch buffer. Each row gives wall time and CPU
//! time (this process's, or sox's as a child); on a shared machine the CPU
//! times are the ones to compare. The strict converter runs twice: with
//! the kernel this CPU picks (AVX where it has it) and with the portable
//! kernel (one dot product at a time, what a CPU without AVX runs); both
//! give the same bits, which this checks.

use morphrt::dsp::resample::{converter, Method, Polyphase, RateConverter};
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const FROM_HZ: u32 = 44100;
const TO_HZ: u32 = 48000;
const SECONDS: usize = 600;
const CHANNELS: usize = 2;
const ROUNDS: usize = 3;

/// The 10-minute input, interleaved f32: noise plus two tones per channel.
fn signal() -> Vec<f32> {
    let frames = FROM_HZ as usize * SECONDS;
    let mut s = 0x2545f4914f6cdd1du64;
    let mut x = Vec::with_capacity(frames * CHANNELS);
    let (mut p1, mut p2) = (0.0f64, 0.0f64);
    let (d1, d2) = (997.0 / FROM_HZ as f64, 15_013.0 / FROM_HZ as f64);
    for _ in 0..frames {
        for ch in 0..CHANNELS {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let noise = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let t = if ch == 0 { p1 } else { p2 };
            x.push((0.1 * noise + 0.4 * libm::sin(std::f64::consts::TAU * t)) as f32);
        }
        p1 = (p1 + d1).fract();
        p2 = (p2 + d2).fract();
    }
    x
}

/// CPU seconds of this process so far.
fn process_cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// CPU seconds (user + system) of this process's waited-for children so far.
fn children_cpu() -> f64 {
    // SAFETY: an all-zero rusage is valid, and getrusage writes into it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage to write.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

const PUSH: usize = 4096;

/// The converter a row measures: `method`, or (`portable`) the strict one
/// with its portable kernel.
fn make(method: Method, portable: bool) -> Box<dyn RateConverter> {
    if portable {
        let p = Polyphase::new(FROM_HZ, TO_HZ, CHANNELS, PUSH).expect("44.1 → 48 kHz converts");
        return Box::new(p.portable());
    }
    converter(method, FROM_HZ, TO_HZ, CHANNELS, PUSH).expect("44.1 → 48 kHz converts")
}

/// (Wall, CPU) seconds `conv` takes to convert `input`, and a hash of its
/// output's bits.
fn morphrt_seconds(mut conv: Box<dyn RateConverter>, input: &[f32]) -> ((f64, f64), u64) {
    let mut chunk = vec![0.0f64; PUSH * CHANNELS];
    let mut out = vec![0.0f64; 2 * PUSH * CHANNELS];
    let mut produced = 0u64;
    let mut hash = 0xcbf29ce484222325u64;
    let mut fold = |out: &[f64]| {
        for v in out {
            hash = (hash ^ v.to_bits()).wrapping_mul(0x100000001b3);
        }
    };
    let cpu = process_cpu();
    let t = Instant::now();
    for block in input.chunks(PUSH * CHANNELS) {
        let chunk = &mut chunk[..block.len()];
        for (d, s) in chunk.iter_mut().zip(block) {
            *d = *s as f64;
        }
        let mut at = 0;
        while at < chunk.len() {
            at += conv.push(&chunk[at..]) * CHANNELS;
            loop {
                let n = conv.pull(&mut out);
                produced += n as u64;
                fold(black_box(&out[..n * CHANNELS]));
                if n == 0 {
                    break;
                }
            }
        }
    }
    conv.finish();
    loop {
        let n = conv.pull(&mut out);
        produced += n as u64;
        fold(&out[..n * CHANNELS]);
        if n == 0 {
            break;
        }
    }
    let secs = (t.elapsed().as_secs_f64(), process_cpu() - cpu);
    let frames = (input.len() / CHANNELS) as u64;
    assert_eq!(produced, conv.output_frames(frames));
    (secs, hash)
}

/// (Wall, CPU) seconds `sox` takes to convert the file at `path` with
/// `rate QUALITY`, or `None` without sox.
fn sox_seconds(path: &Path, quality: &str) -> Option<(f64, f64)> {
    let cpu = children_cpu();
    let t = Instant::now();
    let status = Command::new("sox")
        .args([
            "-t",
            "f32",
            "-r",
            &FROM_HZ.to_string(),
            "-c",
            &CHANNELS.to_string(),
        ])
        .arg(path)
        .args(["-n", "rate", quality, &TO_HZ.to_string()])
        .status()
        .ok()?;
    let secs = (t.elapsed().as_secs_f64(), children_cpu() - cpu);
    status.success().then_some(secs)
}

/// The least wall and the least CPU time of [`ROUNDS`] runs.
fn best(f: impl Fn() -> Option<(f64, f64)>) -> Option<(f64, f64)> {
    (0..ROUNDS)
        .filter_map(|_| f())
        .reduce(|a, b| (a.0.min(b.0), a.1.min(b.1)))
}

fn row(name: &str, (wall, cpu): (f64, f64)) {
    println!(
        "  {name:<18} wall {wall:>7.2} s  cpu {cpu:>7.2} s  {:>6.0}× real time (cpu)",
        SECONDS as f64 / cpu
    );
}

fn main() {
    let input = signal();
    let dir = std::env::temp_dir().join(format!("morphrt-bench-resample-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("in.f32");
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();

    println!("{SECONDS} s of stereo {FROM_HZ} → {TO_HZ} Hz, best of {ROUNDS}");
    let portable = best(|| Some(morphrt_seconds(make(Method::Polyphase, true), &input).0));
    let (_, portable_hash) = morphrt_seconds(make(Method::Polyphase, true), &input);
    let rows: [(&str, Method, &str); 2] = [
        ("strict polyphase vs sox rate -v", Method::Polyphase, "-v"),
        ("rubato (repro/live) vs sox rate -h", Method::Library, "-h"),
    ];
    for (name, method, quality) in rows {
        let ours = best(|| Some(morphrt_seconds(make(method, false), &input).0)).unwrap();
        let sox = best(|| sox_seconds(&path, quality));
        println!("{name}");
        row(&format!("morphrt {}", method.name()), ours);
        if method == Method::Polyphase {
            let (_, hash) = morphrt_seconds(make(method, false), &input);
            assert_eq!(hash, portable_hash, "the two kernels give the same bits");
            row("  portable kernel", portable.unwrap());
            println!(
                "  portable / picked kernel: {:.2} cpu (the same bits)",
                portable.unwrap().1 / ours.1
            );
        }
        match sox {
            Some(s) => {
                row(&format!("sox rate {quality}"), s);
                println!(
                    "  sox / morphrt: {:.2} cpu, {:.2} wall (above 1: morphrt is faster)",
                    s.1 / ours.1,
                    s.0 / ours.0
                );
            }
            None => println!("  sox rate {quality}: not run (sox is not installed)"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
