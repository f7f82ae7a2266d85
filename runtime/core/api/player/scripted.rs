//! Offline sessions with scripted handovers ([`Scripted`]): renders with
//! scripted edits and profile switches, and `replay` of a journal. The
//! engines play through the player ([`Player::play_mix`]) as the callback
//! plays them, on the same block grid, with the same handover steps
//! ([`crate::engine::incoming`]).

use super::{Link, Meters, Player, Switches};
use crate::dsp::fpmode::FpGuard;
use crate::engine::incoming::{advance_to, fade_for, on_grid, Applied, Incoming};
use crate::engine::{
    device_sample, faded, stop_fade_gain, ChangeFeed, Engine, EngineState, ScriptedChange,
    ScriptedNote,
};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Plays engines offline through the player and the same handover steps
/// as `run`: for renders with scripted edits and profile switches, and
/// for replaying them.
pub struct Scripted {
    player: Player,
    /// The control side's end of the player's link: what the player
    /// retires comes back through it to be dropped here.
    link: Link,
    saved: Box<EngineState>,
    channels: usize,
    out: Vec<f64>,
    /// The clock of the first engine (0 unless it resumed from a snapshot).
    start: u64,
    /// From which sample on each engine played, and its FP mode (flush):
    /// what the device stage converts its frames under.
    modes: Vec<(u64, bool)>,
    /// Control changes and notes still to land, by sample (see
    /// [`Scripted::schedule`]), and those that could not.
    feed: ChangeFeed,
    /// Whether the feed cut the last part short (a full queue): the rest
    /// of its block takes changes again.
    cut_short: bool,
    /// Samples inside a block where the audio thread cut it in two (a
    /// snapshot taken there), ascending: see [`Scripted::split_at`].
    splits: VecDeque<u64>,
}

impl Scripted {
    /// Starts with `first` on a player of `channels` outputs.
    pub fn new(first: Incoming, channels: usize) -> Scripted {
        let channels = channels.max(1);
        let mut player = Player::new(
            *first.engine,
            channels,
            None,
            1,
            Arc::new(Meters::default()),
            Arc::new(Switches::default()),
            Instant::now(),
        );
        let link = player.link();
        let clock = player.engine().clock();
        Scripted {
            start: clock,
            modes: vec![(clock, player.deck_mut().flush_to_zero())],
            player,
            link,
            saved: first.saved,
            channels,
            out: Vec::new(),
            feed: ChangeFeed::default(),
            cut_short: false,
            splits: VecDeque::new(),
        }
    }

    /// Cuts the block that holds each of `samples` in two there, as the
    /// audio thread cut it to take a snapshot at that sample (a journal's
    /// snapshot records): the engines then run the same chunks as they
    /// did live. A sample on the block grid cuts nothing.
    pub fn split_at(&mut self, samples: impl IntoIterator<Item = u64>) {
        self.splits.extend(samples);
        self.splits.make_contiguous().sort_unstable();
    }

    /// Control changes to apply as the session plays: each lands at its
    /// sample, on the engine playing then (after a swap at the same
    /// sample, as the audio thread swaps before it takes records). Kept in
    /// sample order with those already scheduled (ties in the order given).
    pub fn schedule(&mut self, list: impl IntoIterator<Item = ScriptedChange>) {
        self.feed.extend(list, []);
    }

    /// Notes for voice modules to play as the session plays, each at its
    /// sample on the engine playing then (kept like [`schedule`](Self::schedule)'s).
    pub fn schedule_notes(&mut self, list: impl IntoIterator<Item = ScriptedNote>) {
        self.feed.extend([], list);
    }

    /// The scheduled changes that could not land (an unknown node or
    /// param, a value the param does not take), with their samples.
    pub fn control_errors(&self) -> &[(u64, String)] {
        self.feed.errors()
    }

    /// The sample the output starts at (the first engine's clock).
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The engine playing now.
    pub fn engine(&self) -> &Engine {
        self.player.engine()
    }

    fn clock(&self) -> u64 {
        self.player.engine().clock()
    }

    fn block(&self) -> u64 {
        self.player.engine().block_size() as u64
    }

    /// Plays up to absolute sample `to`, landing the scheduled control
    /// changes on the way. Blocks end on the block grid through the first
    /// engine's clock, as the audio thread's do, and at `to` and the
    /// samples of [`split_at`](Self::split_at); a block cut short is
    /// finished up to the grid next, and changes are queued only at the
    /// grid, for the whole block, as the audio thread takes them before
    /// each whole block.
    pub fn play_to(&mut self, to: u64) {
        let b = self.block();
        while to > self.clock() {
            let clock = self.clock();
            while self.splits.front().is_some_and(|s| *s <= clock) {
                self.splits.pop_front();
            }
            let grid_end = on_grid(clock + 1, self.start, b);
            let mut end = grid_end.min(to);
            if let Some(s) = self.splits.front() {
                end = end.min(*s);
            }
            if (clock - self.start).is_multiple_of(b) || self.cut_short {
                let engine = self.player.deck_mut().engine_mut();
                let until = self.feed.push_due(engine, grid_end);
                self.cut_short = until < grid_end;
                end = end.min(until);
            }
            let out = &mut self.out;
            let played = self.player.play_mix(end, None, |part| {
                out.extend_from_slice(part);
                Ok::<(), std::convert::Infallible>(())
            });
            let Ok(_) = played;
            // Engines the player retired, dropped here (off any audio thread).
            while self.link.receive().is_some() {}
        }
    }

    /// Swaps `engine` (standing at the clock) in with a crossfade of
    /// `fade` frames, the way the player swaps an offer in.
    fn swap(&mut self, engine: Box<Engine>, fade: u64) -> Result<(), Box<Engine>> {
        let deck = self.player.deck_mut();
        drop(deck.take_retired());
        deck.swap(engine, fade).map_err(|r| r.into_engine())?;
        let flush = deck.flush_to_zero();
        drop(deck.take_retired());
        self.modes.push((self.clock(), flush));
        Ok(())
    }

    /// Hands over to `next`: saves now (N, a block boundary), migrates,
    /// keeps playing the old engine while the new one fast-forwards to
    /// S = N + `lead` (rounded up to the block grid from the first
    /// engine's clock, as the audio thread's), and swaps there.
    pub fn handover(&mut self, mut next: Incoming, lead: u64) -> Applied {
        let b = self.block();
        // Finish a fade in progress first: edits queue behind it.
        while self.player.deck_mut().is_fading() {
            self.play_to(self.clock() + b);
        }
        let n = self.clock();
        self.player.engine().save_into(&mut self.saved);
        self.player.deck_mut().saved_now();
        let migration = next.engine.migrate(&self.saved, n);
        let s = on_grid(n.saturating_add(lead), self.start, b);
        self.play_to(s);
        advance_to(&mut next.engine, s);
        let fade = fade_for(&migration, &next.engine);
        if let Err(engine) = self.swap(next.engine, fade) {
            // The clocks agree by construction and no fade is running.
            drop(engine);
            unreachable!("offline swap refused");
        }
        self.saved = next.saved;
        Applied {
            saved_at: n,
            swap_at: s,
            fade,
            migration,
        }
    }

    /// Redoes a recorded handover exactly: saves at `n`, migrates, plays
    /// the old engine to `s` while the new one fast-forwards there, and swaps
    /// with `fade` (a journal's N, S and fade). N is a block boundary; S may
    /// lie inside a block (a timetagged switch under a sample-accurate
    /// profile), which is then cut there as the audio thread cut it.
    pub fn handover_at(
        &mut self,
        mut next: Incoming,
        n: u64,
        s: u64,
        fade: u64,
    ) -> Result<Applied, String> {
        let b = self.block();
        // Both on the block grid the session started on (its first clock).
        let off_grid = |x: u64| !(x - self.start).is_multiple_of(b);
        if n < self.clock() || s < n || off_grid(n) {
            return Err(format!(
                "a handover captured at {n} and swapped at {s} does not fit the session (clock {}, block {b} from {})",
                self.clock(),
                self.start
            ));
        }
        self.play_to(n);
        self.player.engine().save_into(&mut self.saved);
        self.player.deck_mut().saved_now();
        let migration = next.engine.migrate(&self.saved, n);
        self.play_to(s);
        if self.player.deck_mut().is_fading() {
            return Err(format!(
                "the handover at {s} starts before the previous crossfade ended"
            ));
        }
        advance_to(&mut next.engine, s);
        self.swap(next.engine, fade)
            .map_err(|_| format!("the swap at {s} was refused"))?;
        self.saved = next.saved;
        Ok(Applied {
            saved_at: n,
            swap_at: s,
            fade,
            migration,
        })
    }

    /// Everything played so far, interleaved.
    pub fn output(&self) -> &[f64] {
        &self.out
    }

    /// Everything played, interleaved, taken out of the loop.
    pub fn into_output(self) -> Vec<f64> {
        self.out
    }

    /// The first `frames` frames played, as the device got them in `run`:
    /// f32, clipped, under the stop fade (`stop`: the frame it began at and
    /// its length), each frame converted under the FP mode of the engine
    /// that played it, whatever the calling thread's mode.
    pub fn into_device_samples(self, frames: u64, stop: Option<(u64, u64)>) -> Vec<f32> {
        let channels = self.channels;
        let mut samples = Vec::with_capacity(frames as usize * channels);
        let fp = FpGuard::new(self.modes[0].1);
        let mut next_mode = 1;
        for (f, frame) in self.out.chunks(channels).take(frames as usize).enumerate() {
            let f = f as u64;
            while let Some(&(from, flush)) = self.modes.get(next_mode) {
                if self.start + f < from {
                    break;
                }
                fp.set_flush(flush);
                next_mode += 1;
            }
            let gain = match stop {
                Some((at, len)) if f >= at => stop_fade_gain(f - at, len),
                _ => 1.0,
            };
            for x in frame {
                samples.push(faded(device_sample(*x), gain));
            }
        }
        samples
    }
}
