//! A paced fake device for the live benchmarks: a thread that calls the
//! player's callback every `period` frames at real-time pace (no sound
//! card needed) and times each call.

use morphrt::host::live::player::{Meters, PlayerCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Starts the audio thread; it runs until `stop` and returns, per
/// callback, the engine clock before it and its time in nanoseconds.
pub fn audio_thread(
    cell: Arc<PlayerCell>,
    stop: Arc<AtomicBool>,
    meters: Arc<Meters>,
    period: usize,
    rate: f64,
) -> JoinHandle<Vec<(u64, u32)>> {
    std::thread::spawn(move || {
        let mut buf = vec![0.0f32; period * 2];
        let mut times: Vec<(u64, u32)> = Vec::with_capacity(4_000_000);
        let t0 = Instant::now();
        let mut frames = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let clock = meters.clock.load(Ordering::Relaxed);
            let s = Instant::now();
            cell.fill(&mut buf);
            let ns = s.elapsed().as_nanos() as u32;
            if times.len() < times.capacity() {
                times.push((clock, ns));
            }
            frames += period as u64;
            let due = t0 + Duration::from_secs_f64(frames as f64 / rate);
            if let Some(w) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(w);
            }
        }
        times
    })
}
