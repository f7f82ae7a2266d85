//! Placing an offered engine: fast-forwarding it to a swap sample ahead
//! of the audio clock, or, for one that reads the session's input, through
//! the input history to where the clock stands (the audio thread then
//! catches it up); and giving up when it cannot keep up or the session
//! stops.

use super::LiveSession;
use crate::engine::incoming::{block_start, on_grid};
use crate::host::live::input::history::{fast_forward_through, History, Miss};
use crate::profile::EventTiming;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Why a handover was given up before it was offered.
pub(super) enum Unplaced {
    /// The session is stopping (`q`, a stop signal, the duration's end).
    Stopping,
    /// Fast-forwarding could not get ahead of the audio clock: how it went.
    Behind(String),
}

impl LiveSession {
    /// Places `engine`, saved or refused at `from`: ahead of the audio
    /// clock ([`place`](Self::place)), or through the input history when
    /// `catching_up` ([`place_behind`](Self::place_behind)). Returns the
    /// sample to offer it at.
    pub(super) fn place_any(
        &mut self,
        engine: &mut crate::engine::Engine,
        from: u64,
        wanted: Option<u64>,
        catching_up: bool,
    ) -> Result<u64, Unplaced> {
        match (&self.history, catching_up) {
            (Some(h), true) => {
                let h = h.clone();
                self.place_behind(engine, &h, from, wanted)
            }
            _ => self.place(engine, from, wanted),
        }
    }

    /// Where a timetagged switch asking for sample `at` swaps, the block
    /// grid going through `from`: at `at` under the sample-accurate
    /// profile playing, at the start of its block under a block-accurate
    /// one (as control changes land).
    pub(super) fn landing(&self, at: u64, from: u64) -> u64 {
        match self.profile.event_timing() {
            EventTiming::SampleAccurate => at,
            EventTiming::BlockAccurate => block_start(at, from, self.fixed.block_size as u64),
        }
    }

    /// Fast-forwards an engine that reads the input through the history
    /// until it stands within [`BEHIND_AT_OFFER`] blocks of where the
    /// history reaches (the audio clock), with its swap sample left open
    /// (the audio thread sets it where it swaps), or, for a `wanted` swap
    /// sample (a timetagged switch; the grid goes through `from`), set to
    /// it and never past the start of its block. Returns where it stands
    /// (M). Gives up, as [`place`](Self::place) does, when the session
    /// stops, when fast-forwarding cannot keep up for [`MAX_LEAD_SECONDS`],
    /// or when the history no longer holds the input it needs.
    fn place_behind(
        &self,
        engine: &mut crate::engine::Engine,
        history: &History,
        from: u64,
        wanted: Option<u64>,
    ) -> Result<u64, Unplaced> {
        let block = self.fixed.block_size as u64;
        let sr = self.fixed.sample_rate as f64;
        // One the engine has passed already swaps where it reaches the clock.
        let wanted = wanted.filter(|w| *w >= engine.clock());
        engine.set_swap_sample(wanted.unwrap_or(u64::MAX));
        let limit = wanted.map_or(u64::MAX, |w| block_start(w, from, block));
        let (started, first) = (Instant::now(), engine.clock());
        loop {
            let m = fast_forward_through(engine, history, limit).map_err(|miss| {
                let held = match miss {
                    Miss::Gone(from) | Miss::NotYet(from) => from,
                };
                Unplaced::Behind(format!(
                    "the input history holds the last {:.1} s, from {:.3} s on, but the new engine needs the input from {:.3} s",
                    history.capacity() as f64 / sr,
                    held as f64 / sr,
                    engine.clock() as f64 / sr
                ))
            })?;
            if self.stopping() {
                return Err(Unplaced::Stopping);
            }
            if m >= limit || history.written().saturating_sub(m) <= BEHIND_AT_OFFER * block {
                return Ok(m);
            }
            let wall = started.elapsed();
            if wall > Duration::from_secs(MAX_LEAD_SECONDS) {
                let rate = (m - first) as f64 / sr / wall.as_secs_f64().max(1e-9);
                let behind = history.written().saturating_sub(m);
                return Err(Unplaced::Behind(format!(
                    "fast-forwarding through the input ran at {rate:.2}× real time, {:.0} ms behind the audio clock after {:.1} s",
                    behind as f64 * 1e3 / sr,
                    wall.as_secs_f64()
                )));
            }
        }
    }

    /// Whether the session is stopping (`q`, a stop signal, the end).
    fn stopping(&self) -> bool {
        self.meters.stop_at.load(Ordering::Relaxed) != u64::MAX
            || self.meters.finished.load(Ordering::Relaxed)
            || crate::host::files::signals::stop_caught()
    }

    /// Picks the swap sample S ahead of the audio clock and fast-forwards
    /// the engine to it. Returns S. `from` is a clock the audio thread
    /// reported at a block boundary (a save, a refusal): S is on its
    /// block grid, which a resumed session does not start at a multiple of
    /// the block. The lead doubles while the audio thread keeps up, so the
    /// loop ends once fast-forwarding outruns it; it gives up when it does
    /// not ([`Unplaced`]): the lead past [`MAX_LEAD_SECONDS`], placing for
    /// as long in wall time, fast-forwarding slower than real time, or the
    /// session stopping. A `wanted` sample (a timed switch) that lies
    /// beyond that boundary is S itself under a sample-accurate profile
    /// playing (the start of its block under a block-accurate one): the
    /// engine is fast-forwarded to the start of the block that holds it,
    /// and the audio thread runs it from there to S beside the first part
    /// of that block, cut at S ([`ToAudio::Offer`]). One too close to the
    /// clock swaps at the boundary, later than asked.
    fn place(
        &mut self,
        engine: &mut crate::engine::Engine,
        from: u64,
        wanted: Option<u64>,
    ) -> Result<u64, Unplaced> {
        let block = self.fixed.block_size as u64;
        let sr = self.fixed.sample_rate as u64;
        let mut lead = self.lead;
        let (started, first) = (Instant::now(), engine.clock());
        for missed in 1.. {
            let audio = self.meters.clock.load(Ordering::Relaxed).max(from);
            let s = on_grid(audio.saturating_add(lead), from, block).max(engine.clock());
            // Where the engine waits for the swap: S on the grid, or the
            // start of the block that holds a wanted S.
            let (s, stand) = match wanted {
                Some(w) if w >= s => (w, block_start(w, from, block)),
                _ => (s, s),
            };
            engine.set_swap_sample(s);
            let in_time = self.catch_up(engine, stand, started)?;
            // Still ahead of the audio thread by a block: offer it.
            if in_time
                && engine.clock() >= stand
                && self.meters.clock.load(Ordering::Relaxed) + block <= stand
            {
                return Ok(s);
            }
            let wall = started.elapsed().as_secs_f64().max(1e-9);
            let rate = (engine.clock() - first) as f64 / sr as f64 / wall;
            lead = lead.saturating_mul(2);
            if !in_time || lead > MAX_LEAD_SECONDS * sr || (missed >= 3 && rate < 1.0) {
                let behind = self
                    .meters
                    .clock
                    .load(Ordering::Relaxed)
                    .saturating_sub(engine.clock());
                return Err(Unplaced::Behind(format!(
                    "fast-forwarding ran at {rate:.2}× real time, {:.0} ms behind the audio clock after {wall:.1} s",
                    behind as f64 * 1e3 / sr as f64,
                )));
            }
        }
        unreachable!("the loop returns")
    }

    /// Fast-forwards `engine` towards `s` a few milliseconds of audio at a
    /// time, stopping early once the audio clock has passed `s` (the lead
    /// was too short). Returns false once placing, `started` then, has
    /// taken [`MAX_LEAD_SECONDS`]; gives up when the session stops.
    fn catch_up(
        &self,
        engine: &mut crate::engine::Engine,
        s: u64,
        started: Instant,
    ) -> Result<bool, Unplaced> {
        let block = self.fixed.block_size as u64;
        let chunk = (self.fixed.sample_rate as u64 / 200).div_ceil(block) * block;
        let limit = Duration::from_secs(MAX_LEAD_SECONDS);
        while engine.clock() < s {
            engine.fast_forward(s.min(engine.clock() + chunk));
            if self.stopping() {
                return Err(Unplaced::Stopping);
            }
            if started.elapsed() > limit {
                return Ok(false);
            }
            if self.meters.clock.load(Ordering::Relaxed) + block > s {
                break;
            }
        }
        Ok(true)
    }
}

/// How far ahead of the audio clock a handover may be placed before it is
/// given up, in seconds of audio.
const MAX_LEAD_SECONDS: u64 = 2;

/// How many blocks behind the history's end an engine catching up through
/// it may be offered at: the audio thread runs those (and the blocks it
/// plays meanwhile) itself, gaining a block per callback.
const BEHIND_AT_OFFER: u64 = 2;
