//! Holding an input ring's fill level steady between two clocks.
//!
//! An input device and an output device each run on their own crystal:
//! one always runs a little faster, so the frames waiting in the ring
//! between them creep up (latency grows until the ring overflows) or down
//! (until the callback finds too few). [`Drift`] watches the fill before
//! every read and decides what the read does: wait for the ring to prime,
//! read a block, read one frame more and drop one, read one frame less and
//! repeat one, skip frames after a long hiccup, or read short (an
//! underrun). It is pure arithmetic, with no clock of its own, so a test
//! can drive it frame by frame.
//!
//! The fill saws up and down by the input period between reads, so one
//! reading says little: the mean over a window of reads is compared with
//! the mean of the first window after priming (the set point), and a
//! difference beyond the threshold is corrected one frame per read, a
//! frame at a time, which is inaudible where the reader puts it (the
//! quietest frame of the block).

/// What one read does, decided by [`Drift::step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The ring is not primed yet: give silence, take nothing.
    Prime,
    /// Skip `skip` frames (counted as lost when `counted`), then read a
    /// block, adjusted by one frame as `adjust` says.
    Read {
        skip: usize,
        counted: bool,
        adjust: Adjust,
    },
    /// Fewer frames than a block wait: read these, silence for the rest
    /// (an underrun), and prime again.
    Short(usize),
}

/// A drift correction of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adjust {
    None,
    /// Read one frame more than the block and leave one out (the ring ran ahead).
    Drop,
    /// Read one frame less than the block and play one twice (the ring fell behind).
    Repeat,
}

/// The fill-level controller of one reader (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Drift {
    primed: bool,
    /// Whether this ring has been primed once (its first priming skips
    /// what piled up before the callback started, which is not a loss).
    started: bool,
    /// The mean fill of the first window after priming.
    setpoint: Option<f64>,
    /// Fill readings of the current window: their sum and count.
    sum: u64,
    reads: u64,
    /// Corrections still to make: > 0 drops, < 0 repeats.
    pending: i64,
}

impl Drift {
    /// Forgets everything: a new ring primes from the start.
    pub fn reset(&mut self) {
        *self = Drift::default();
    }

    /// Whether reads take frames from the ring (primed and not underrun).
    pub fn primed(&self) -> bool {
        self.primed
    }

    /// The fill the ring is held at once measured (frames).
    pub fn setpoint(&self) -> Option<f64> {
        self.setpoint
    }

    /// Decides the next read of `frames` frames, with `avail` frames in
    /// the ring, `period` the largest input chunk seen (0: none yet) and
    /// `capacity` the ring's size in frames.
    pub fn step(&mut self, avail: usize, frames: usize, period: usize, capacity: usize) -> Step {
        let target = target_fill(frames, period);
        if !self.primed {
            if period == 0 || avail < target.max(1) {
                return Step::Prime;
            }
            self.primed = true;
            self.setpoint = None;
            self.sum = 0;
            self.reads = 0;
            self.pending = 0;
            let counted = self.started;
            self.started = true;
            return Step::Read {
                skip: avail - target,
                counted,
                adjust: Adjust::None,
            };
        }
        if avail < frames {
            self.primed = false;
            return Step::Short(avail);
        }
        if let Some(sp) = self.setpoint {
            let slack = period.max(frames);
            let limit = (sp as usize + 4 * slack + frames).min(capacity * 3 / 4);
            if avail > limit.max(target) {
                // Far ahead (the callback stalled): back to the target at once.
                self.pending = 0;
                return Step::Read {
                    skip: avail - target,
                    counted: true,
                    adjust: Adjust::None,
                };
            }
        }
        self.measure(avail, frames, period);
        Step::Read {
            skip: 0,
            counted: true,
            adjust: self.adjust(avail, frames),
        }
    }

    /// Adds one reading to the window; at the window's end sets the set
    /// point (the first window) or the corrections to make.
    fn measure(&mut self, avail: usize, frames: usize, period: usize) {
        self.sum += avail as u64;
        self.reads += 1;
        let window = window_reads(frames, period);
        if self.reads < window {
            return;
        }
        let mean = self.sum as f64 / self.reads as f64;
        self.sum = 0;
        self.reads = 0;
        let target = target_fill(frames, period) as f64;
        match self.setpoint {
            // A ring that is already overflowing says nothing about the
            // mean it should hold: never hold more than the target.
            None => self.setpoint = Some(mean.clamp(frames as f64, target)),
            Some(sp) => {
                let err = mean - sp;
                // Well above the noise of a window's mean (a wake-up a
                // few hundred µs late moves it by a few frames), well below
                // an input period: real drift (tens of ppm) reaches it
                // within seconds, jitter alone does not.
                let threshold = (period.max(frames) as f64 / 2.0).max(4.0);
                if err.abs() > threshold {
                    let n = (err.abs() - threshold / 2.0).round().max(1.0);
                    let n = n.min(window as f64 / 2.0) as i64;
                    self.pending = if err > 0.0 { n } else { -n };
                }
            }
        }
    }

    /// The correction this read makes, one frame at most.
    fn adjust(&mut self, avail: usize, frames: usize) -> Adjust {
        if self.pending > 0 && avail > frames {
            self.pending -= 1;
            Adjust::Drop
        } else if self.pending < 0 && frames > 1 {
            self.pending += 1;
            Adjust::Repeat
        } else {
            Adjust::None
        }
    }
}

/// The fill a ring is primed to and held at: an input period (the fill
/// saws by that much between reads), a block (what one read takes) and a
/// margin of the larger of the two, so that a capture or output callback
/// woken late by up to that much does not run the ring dry.
pub fn target_fill(frames: usize, period: usize) -> usize {
    period + frames + period.max(frames)
}

/// Reads per measuring window: at least 64, and at least four capture
/// periods' worth (the fill saws by a period).
fn window_reads(frames: usize, period: usize) -> u64 {
    let per_period = period.div_ceil(frames.max(1)) as u64;
    (4 * per_period).max(64)
}

/// The frame of `frames` interleaved frames (`channels` wide) nearest
/// silence: the least summed magnitude, where leaving a frame out or
/// playing it twice changes the waveform least.
pub fn quietest_frame(samples: &[f64], channels: usize) -> usize {
    let mut best = (0, f64::INFINITY);
    for (i, frame) in samples.chunks_exact(channels.max(1)).enumerate() {
        let level: f64 = frame.iter().map(|x| x.abs()).sum();
        if level < best.1 {
            best = (i, level);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads of 64 frames every 64 frames of time against pushes of a
    /// 64-frame input period due just after each read, each pushed up
    /// to `jitter` frames late
    /// (deterministic pseudo-random), the input clock `ppm` fast: the
    /// underruns, the drift corrections (drops − repeats) and the highest
    /// fill seen after the start.
    fn simulate(jitter: u64, ppm: f64, reads: u64) -> (u64, i64, usize) {
        const B: u64 = 64;
        let capacity = 4096;
        let mut d = Drift::default();
        let (mut pushed, mut taken) = (0u64, 0u64);
        let (mut next_push, mut k) = (0u64, 0u64);
        let (mut underruns, mut net, mut highest) = (0, 0i64, 0);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for r in 0..reads {
            // The worst phase: each read comes just before the next
            // period is due, so a late period is missing at the read.
            let now = r * B + B - 1;
            // Every push due by now (its own time plus its lateness) is in.
            while next_push <= now {
                pushed += B;
                k += 1;
                x = crate::dsp::rng::mix64(x);
                let nominal = (k as f64 * B as f64 / (1.0 + ppm * 1e-6)) as u64;
                next_push = nominal + x % (jitter + 1);
            }
            let avail = (pushed - taken) as usize;
            if r > 100 {
                highest = highest.max(avail);
            }
            match d.step(avail, B as usize, B as usize, capacity) {
                Step::Prime => {}
                Step::Read { skip, adjust, .. } => {
                    taken += skip as u64 + B;
                    match adjust {
                        Adjust::Drop => {
                            taken += 1;
                            net += 1;
                        }
                        Adjust::Repeat => {
                            taken -= 1;
                            net -= 1;
                        }
                        Adjust::None => {}
                    }
                }
                Step::Short(n) => {
                    taken += n as u64;
                    underruns += 1;
                }
            }
        }
        (underruns, net, highest)
    }

    /// Input periods that come late by up to almost three periods (a
    /// input thread woken late) never run the ring dry, and jitter alone
    /// is not taken for a drift: what it corrects, it corrects back.
    #[test]
    fn late_pushes_within_the_margin_never_underrun() {
        let (underruns, net, _) = simulate(180, 0.0, 20_000);
        assert_eq!(underruns, 0);
        assert!(net.abs() <= 40, "{net} net corrections for no drift");
    }

    /// An input clock 200 ppm fast (about 3.4 frames a second here) is
    /// taken out frame by frame, and the fill stays near its target.
    #[test]
    fn a_fast_input_clock_is_corrected_by_single_frames() {
        let reads = 60_000; // 80 s of 64-frame blocks
        let (underruns, net, highest) = simulate(16, 200.0, reads);
        let drift = reads as f64 * 64.0 * 200e-6;
        assert_eq!(underruns, 0);
        assert!(
            (net as f64 - drift).abs() < 64.0,
            "{net} drops for {drift} frames of drift"
        );
        assert!(
            highest <= target_fill(64, 64) + 2 * 64,
            "fill reached {highest}"
        );
    }
}
