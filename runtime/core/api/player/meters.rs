//! What the callback reports through atomics, and what the control thread
//! asks of it through atomics.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Counters the callback writes and the control thread reads.
pub struct Meters {
    /// Device frames of the performance (excluding the silence after the end).
    pub frames: AtomicU64,
    /// Every frame the device asked for, silence included (the load denominator).
    pub device_frames: AtomicU64,
    /// Callbacks run.
    pub callbacks: AtomicU64,
    /// Nanoseconds spent in the callback (sum, and max since the last read).
    pub busy_ns: AtomicU64,
    /// The longest callback since the last read, in nanoseconds (see `take_busy_max_ns`).
    pub busy_max_ns: AtomicU64,
    /// Callbacks that took longer than their real-time budget, or started
    /// more than 1.5 periods after the previous one.
    pub xruns: AtomicU64,
    /// Of those: callbacks that started late, and callbacks that overran.
    pub late: AtomicU64,
    /// Callbacks that took longer than their real-time budget.
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
    /// Nodes that panicked (each muted), and callbacks that panicked
    /// outside any node (the callback wrote silence).
    pub node_panics: AtomicU64,
    /// Callbacks that panicked outside any node.
    pub callback_panics: AtomicU64,
    /// Swaps performed (handovers that reached the audio thread).
    pub swaps: AtomicU64,
    /// The frame where a stop fade began (`u64::MAX`: none).
    pub stop_at: AtomicU64,
    /// Control reports the full reply ring did not take (0 while the
    /// control thread keeps up: the callback takes a record only when its
    /// report has room).
    pub control_reports_lost: AtomicU64,
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
            node_panics: AtomicU64::new(0),
            callback_panics: AtomicU64::new(0),
            swaps: AtomicU64::new(0),
            stop_at: AtomicU64::new(u64::MAX),
            control_reports_lost: AtomicU64::new(0),
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
    /// Raises the peak to `peak` (a magnitude) if it is higher: one
    /// `fetch_max` on the bits, which order like the floats for the
    /// non-negative values stored here (NaN is ignored, −0 counts as 0). A
    /// load, compare and store would race [`take_peak`](Self::take_peak):
    /// a swap between the load and the store loses the block's peak (no
    /// store, because the stale value was higher) or brings back the taken
    /// one.
    pub fn note_peak(&self, peak: f32) {
        if !peak.is_nan() {
            self.peak_bits
                .fetch_max(peak.abs().to_bits(), Ordering::Relaxed);
        }
    }

    /// Takes the peak since the last call.
    pub fn take_peak(&self) -> f32 {
        f32::from_bits(self.peak_bits.swap(0, Ordering::Relaxed))
    }
    /// The longest callback since the last call, in nanoseconds, and starts a new maximum.
    pub fn take_busy_max_ns(&self) -> u64 {
        self.busy_max_ns.swap(0, Ordering::Relaxed)
    }
}

/// What the control thread asks of the callback.
#[derive(Default)]
pub struct Switches {
    /// Fade out and finish (Ctrl-C, `q`).
    pub stop: AtomicBool,
    /// Fade out and finish from this device frame on, plus one (0: no
    /// such stop): a timetagged `/morphrt/stop` (see
    /// [`Switches::stop_at_frame`]).
    stop_frame: AtomicU64,
    /// Time each node of the playing engine (the `t` key). Read once per
    /// block: turning it on zeroes the engine's counters first, so a table
    /// covers the time since; off by default, since it reads the clock
    /// once per node per chunk (a one-sample feedback loop: nodes × block
    /// reads a block).
    pub node_timing: AtomicBool,
}

impl Switches {
    /// Starts the stop fade at device frame `frame` exactly (at once if
    /// it has passed), as [`Switches::stop`] does at the next callback.
    pub fn stop_at_frame(&self, frame: u64) {
        self.stop_frame
            .store(frame.saturating_add(1), Ordering::Relaxed);
    }

    /// The device frame a timed stop begins at, if one is asked.
    pub(super) fn stop_frame(&self) -> Option<u64> {
        self.stop_frame.load(Ordering::Relaxed).checked_sub(1)
    }
}
