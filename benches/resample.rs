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
//! frames, pulling into a scratch buffer.

use morphrt::dsp::resample::{converter, Method, RateConverter};
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

/// Seconds morphrt's `method` takes to convert `input`.
fn morphrt_seconds(method: Method, input: &[f32]) -> f64 {
    const PUSH: usize = 4096;
    let mut conv: Box<dyn RateConverter> =
        converter(method, FROM_HZ, TO_HZ, CHANNELS, PUSH).expect("44.1 → 48 kHz converts");
    let mut chunk = vec![0.0f64; PUSH * CHANNELS];
    let mut out = vec![0.0f64; 2 * PUSH * CHANNELS];
    let mut produced = 0u64;
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
                black_box(&out);
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
        if n == 0 {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let frames = (input.len() / CHANNELS) as u64;
    assert_eq!(produced, conv.output_frames(frames));
    secs
}

/// Seconds `sox` takes to convert the file at `path` with `rate QUALITY`,
/// or `None` without sox.
fn sox_seconds(path: &Path, quality: &str) -> Option<f64> {
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
    let secs = t.elapsed().as_secs_f64();
    status.success().then_some(secs)
}

fn best(f: impl Fn() -> Option<f64>) -> Option<f64> {
    (0..ROUNDS).filter_map(|_| f()).reduce(f64::min)
}

fn main() {
    let input = signal();
    let dir = std::env::temp_dir().join(format!("morphrt-bench-resample-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("in.f32");
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();

    println!(
        "{SECONDS} s of stereo {FROM_HZ} → {TO_HZ} Hz, seconds per conversion (best of {ROUNDS}) and × real time"
    );
    let rows: [(&str, Method, &str); 2] = [
        ("strict polyphase vs sox rate -v", Method::Polyphase, "-v"),
        ("rubato (repro/live) vs sox rate -h", Method::Library, "-h"),
    ];
    for (name, method, quality) in rows {
        let ours = best(|| Some(morphrt_seconds(method, &input))).unwrap();
        let sox = best(|| sox_seconds(&path, quality));
        println!("{name}");
        println!(
            "  morphrt {:<10} {ours:>7.2} s {:>7.0}×",
            method.name(),
            SECONDS as f64 / ours
        );
        match sox {
            Some(s) => {
                println!(
                    "  sox rate {quality:<7} {s:>7.2} s {:>7.0}×",
                    SECONDS as f64 / s
                );
                println!(
                    "  sox / morphrt: {:.2} (above 1: morphrt is faster)",
                    s / ours
                );
            }
            None => println!("  sox rate {quality}: not run (sox is not installed)"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
