//! The real-time callback body: pulls whole engine blocks through a FIFO
//! into device buffers of any size, maps channels, applies the output
//! stages, and reports through atomics. Nothing here allocates, frees,
//! locks, blocks or does I/O.

use crate::engine::Engine;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Counters the callback writes and the control thread reads.
pub struct Meters {
    /// Device frames of the performance (excluding the silence after the end).
    pub frames: AtomicU64,
    /// Every frame the device asked for, silence included (the load denominator).
    pub device_frames: AtomicU64,
    pub callbacks: AtomicU64,
    /// Nanoseconds spent in the callback (sum, and max since the last read).
    pub busy_ns: AtomicU64,
    pub busy_max_ns: AtomicU64,
    /// Callbacks that took longer than their real-time budget, or started
    /// more than 1.5 periods after the previous one.
    pub xruns: AtomicU64,
    /// Of those: callbacks that started late, and callbacks that overran.
    pub late: AtomicU64,
    pub overruns: AtomicU64,
    /// Peak |sample| since the last read, as f32 bits.
    pub peak_bits: AtomicU32,
    /// Blocks in which a node produced NaN/Inf.
    pub nan_events: AtomicU64,
    /// Nanoseconds since `origin` at the start of the last callback.
    pub last_callback_ns: AtomicU64,
    /// The engine clock (absolute sample of the next block).
    pub clock: AtomicU64,
    /// Set once the requested duration (or the fade after a stop) is done.
    pub finished: AtomicBool,
    /// Callbacks by DSP load (time / budget) in 1 % steps; the last bucket
    /// holds every callback at or over 100 %.
    pub load_hist: [AtomicU32; 101],
}

impl Default for Meters {
    fn default() -> Meters {
        Meters {
            frames: AtomicU64::new(0),
            device_frames: AtomicU64::new(0),
            callbacks: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            busy_max_ns: AtomicU64::new(0),
            xruns: AtomicU64::new(0),
            late: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            peak_bits: AtomicU32::new(0),
            nan_events: AtomicU64::new(0),
            last_callback_ns: AtomicU64::new(0),
            clock: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            load_hist: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

impl Meters {
    /// The load that `q` of the callbacks stayed at or under (0…1), from the histogram.
    pub fn load_quantile(&self, q: f64) -> f64 {
        let counts: Vec<u64> = self
            .load_hist
            .iter()
            .map(|c| c.load(Ordering::Relaxed) as u64)
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let want = (total as f64 * q).ceil() as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return (i + 1) as f64 / 100.0;
            }
        }
        1.0
    }
}

impl Meters {
    /// Takes the peak since the last call.
    pub fn take_peak(&self) -> f32 {
        f32::from_bits(self.peak_bits.swap(0, Ordering::Relaxed))
    }
    pub fn take_busy_max_ns(&self) -> u64 {
        self.busy_max_ns.swap(0, Ordering::Relaxed)
    }
}

/// What the control thread asks of the callback.
#[derive(Default)]
pub struct Controls {
    /// Fade out and finish (Ctrl-C, `q`).
    pub stop: AtomicBool,
}

/// Everything the callback owns.
pub struct Player {
    engine: Engine,
    /// Interleaved device frames rendered ahead: `block × device channels`.
    fifo: Vec<f32>,
    fifo_pos: usize,
    fifo_len: usize,
    device_channels: usize,
    /// For each device channel, the main-bus channel that feeds it (or none).
    map: Vec<Option<usize>>,
    /// A one-channel device gets the mean of all bus channels.
    downmix: bool,
    /// Stop after this many frames (`--duration`), without a fade.
    limit: Option<u64>,
    written: u64,
    fade_len: u64,
    /// Frames left in a stop fade; `None` when not fading.
    fade_left: Option<u64>,
    meters: Arc<Meters>,
    controls: Arc<Controls>,
    origin: Instant,
    period_ns: u64,
    last_start_ns: u64,
    sample_rate: f64,
    last_nan_events: u64,
}

impl Player {
    /// `device_channels` ≥ 1; a mono main bus feeds the first two device
    /// channels, extra device channels stay silent.
    pub fn new(
        engine: Engine,
        device_channels: usize,
        limit: Option<u64>,
        fade_frames: u64,
        meters: Arc<Meters>,
        controls: Arc<Controls>,
        origin: Instant,
    ) -> Player {
        let bus = engine.channels();
        let downmix = device_channels == 1 && bus > 1;
        let map = (0..device_channels)
            .map(|d| {
                if d < bus {
                    Some(d)
                } else if bus == 1 && d == 1 {
                    Some(0)
                } else {
                    None
                }
            })
            .collect();
        let block = engine.block_size();
        let sample_rate = engine.sample_rate() as f64;
        Player {
            fifo: vec![0.0; block * device_channels],
            fifo_pos: 0,
            fifo_len: 0,
            device_channels,
            map,
            downmix,
            limit,
            written: 0,
            fade_len: fade_frames.max(1),
            fade_left: None,
            meters,
            controls,
            origin,
            period_ns: 0,
            last_start_ns: 0,
            sample_rate,
            last_nan_events: 0,
            engine,
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Whether a stop (fade out) was requested.
    pub fn stop_requested(&self) -> bool {
        self.controls.stop.load(Ordering::Relaxed)
    }

    /// Forgets callback timing, so that the first callback of a rebuilt
    /// stream is not counted as late.
    pub fn reset_timing(&mut self) {
        self.last_start_ns = 0;
        self.period_ns = 0;
    }

    /// Frames written to the device so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Renders the next engine block into the FIFO (device layout, clipped
    /// to ±1 for hearing safety).
    fn refill(&mut self) {
        let block = self.engine.block_size();
        self.engine.process_block(block);
        let bus = self.engine.bus();
        let n = bus.frames();
        let dc = self.device_channels;
        let mut peak = 0.0f32;
        let bus_ch = bus.channels();
        for i in 0..n {
            for (d, m) in self.map.iter().enumerate() {
                let v = if self.downmix {
                    let mut sum = 0.0;
                    for c in 0..bus_ch {
                        sum += bus.get(c, i);
                    }
                    ((sum / bus_ch as f64) as f32).clamp(-1.0, 1.0)
                } else {
                    match m {
                        Some(c) => (bus.get(*c, i) as f32).clamp(-1.0, 1.0),
                        None => 0.0,
                    }
                };
                peak = peak.max(v.abs());
                self.fifo[i * dc + d] = v;
            }
        }
        self.fifo_pos = 0;
        self.fifo_len = n * dc;
        let prev = f32::from_bits(self.meters.peak_bits.load(Ordering::Relaxed));
        if peak > prev {
            self.meters
                .peak_bits
                .store(peak.to_bits(), Ordering::Relaxed);
        }
        let nans = self.engine.stats().nan_events;
        if nans != self.last_nan_events {
            self.meters.nan_events.store(nans, Ordering::Relaxed);
            self.last_nan_events = nans;
        }
        self.meters
            .clock
            .store(self.engine.clock(), Ordering::Relaxed);
    }

    /// The callback: fills `out` (interleaved, `device_channels` wide).
    pub fn fill(&mut self, out: &mut [f32]) {
        let start = self.origin.elapsed().as_nanos() as u64;
        let dc = self.device_channels;
        let frames = out.len() / dc;
        if self.controls.stop.load(Ordering::Relaxed) && self.fade_left.is_none() {
            self.fade_left = Some(self.fade_len);
        }
        for f in 0..frames {
            let done = self.limit.is_some_and(|l| self.written >= l) || self.fade_left == Some(0);
            if done {
                out[f * dc..(f + 1) * dc].iter_mut().for_each(|x| *x = 0.0);
                self.meters.finished.store(true, Ordering::Release);
                continue;
            }
            if self.fifo_pos >= self.fifo_len {
                self.refill();
            }
            let gain = match self.fade_left {
                Some(left) => {
                    self.fade_left = Some(left - 1);
                    (left - 1) as f32 / self.fade_len as f32
                }
                None => 1.0,
            };
            for d in 0..dc {
                let v = self.fifo[self.fifo_pos + d];
                out[f * dc + d] = if gain == 1.0 { v } else { v * gain };
            }
            self.fifo_pos += dc;
            self.written += 1;
        }
        let end = self.origin.elapsed().as_nanos() as u64;
        let busy = end - start;
        let budget = (frames as f64 / self.sample_rate * 1e9) as u64;
        let m = &self.meters;
        // Our own xrun accounting: a late callback (a gap of more than 1.5
        // periods since the previous one) or one that overran its budget.
        let late = self.last_start_ns > 0
            && self.period_ns > 0
            && start - self.last_start_ns > self.period_ns * 3 / 2;
        let overran = frames > 0 && busy > budget;
        if late || overran {
            m.xruns.fetch_add(1, Ordering::Relaxed);
        }
        if late {
            m.late.fetch_add(1, Ordering::Relaxed);
        }
        if overran {
            m.overruns.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(pct) = busy.saturating_mul(100).checked_div(budget) {
            m.load_hist[pct.min(100) as usize].fetch_add(1, Ordering::Relaxed);
        }
        self.period_ns = budget;
        self.last_start_ns = start;
        m.frames.store(self.written, Ordering::Relaxed);
        m.device_frames.fetch_add(frames as u64, Ordering::Relaxed);
        m.callbacks.fetch_add(1, Ordering::Relaxed);
        m.busy_ns.fetch_add(busy, Ordering::Relaxed);
        m.busy_max_ns.fetch_max(busy, Ordering::Relaxed);
        m.last_callback_ns.store(end, Ordering::Release);
    }
}

/// Hands the player between the callback and the control thread without a
/// lock: the callback takes it for the duration of one call; the control
/// thread only touches it when no stream is running.
pub struct PlayerCell {
    player: UnsafeCell<Option<Player>>,
    busy: AtomicBool,
    controls: Arc<Controls>,
}

// SAFETY: access to `player` is serialised by `busy` (callback) and by the
// stream being stopped (control thread), see `with` and `take`.
unsafe impl Sync for PlayerCell {}

impl PlayerCell {
    pub fn new(p: Player) -> Arc<PlayerCell> {
        let controls = p.controls.clone();
        Arc::new(PlayerCell {
            player: UnsafeCell::new(Some(p)),
            busy: AtomicBool::new(false),
            controls,
        })
    }

    /// Whether a stop was requested (Ctrl-C, `q`).
    pub fn stop_requested(&self) -> bool {
        self.controls.stop.load(Ordering::Relaxed)
    }

    /// Runs `f` on the player unless another call holds it (then writes
    /// silence). Wait-free.
    pub fn fill(&self, out: &mut [f32]) {
        if self.busy.swap(true, Ordering::Acquire) {
            out.iter_mut().for_each(|x| *x = 0.0);
            return;
        }
        // SAFETY: `busy` was false, so no one else is inside.
        match unsafe { &mut *self.player.get() } {
            Some(p) => p.fill(out),
            None => out.iter_mut().for_each(|x| *x = 0.0),
        }
        self.busy.store(false, Ordering::Release);
    }

    /// Takes the player back. Call only when no stream can run the callback
    /// (after the stream is dropped); returns `None` if a call is in flight.
    pub fn take(&self) -> Option<Player> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        // SAFETY: as in `fill`.
        let p = unsafe { &mut *self.player.get() }.take();
        self.busy.store(false, Ordering::Release);
        p
    }
}
