//! The handover as the callback serves it at block boundaries: state
//! saves (whole, from a sample, at a sample), offers that swap exactly
//! at their sample or come back refused, and engines catching up with the
//! clock through the input history.

use super::link::{FromAudio, ToAudio, CATCH_UP_LIMIT, CATCH_UP_PER_BLOCK, OUTBOX};
use super::{InputSource, Player};
use crate::engine::{Engine, EngineState};
use crate::profile::EventTiming;
use std::sync::atomic::Ordering;

/// An offer that came early, kept until the clock reaches its swap sample
/// (or, catching up through the input history, until it reaches the clock).
pub(super) struct HeldOffer {
    engine: Box<Engine>,
    /// The swap sample (S).
    at: u64,
    /// Length of the crossfade (0: a cut).
    fade_frames: u64,
    /// Catching up: the sample it asks to swap at (a timetagged switch),
    /// or `None` for the clock it reaches.
    swap_at: Option<u64>,
}

/// A save asked for a sample ahead ([`ToAudio::SaveFrom`],
/// [`ToAudio::SaveAt`]).
pub(super) struct Waiting {
    state: Box<EngineState>,
    at: u64,
    /// At `at` exactly, cutting its block there (`SaveAt`); else at
    /// the first block boundary from `at`.
    exact: bool,
}

impl<I: InputSource + ?Sized> Player<I> {
    /// Sends a reply, or keeps it for the next block if the queue is full
    /// or older replies are still waiting (replies keep their order: a
    /// `Retired` never overtakes its `Swapped`).
    pub(super) fn send(&mut self, msg: FromAudio) {
        if !self.outbox.is_empty() {
            // Within the reserved capacity: no allocation.
            self.outbox.push_back(msg);
        } else if let Err(rtrb::PushError::Full(msg)) = self.link.replies.push(msg) {
            self.outbox.push_back(msg);
        }
    }

    /// Serves the control thread at a block boundary: state saves,
    /// offers (swap exactly at their sample, refuse late ones), and engines
    /// to send back.
    pub(super) fn serve(&mut self) {
        while let Some(msg) = self.outbox.pop_front() {
            if let Err(rtrb::PushError::Full(msg)) = self.link.replies.push(msg) {
                self.outbox.push_front(msg);
                return;
            }
        }
        let clock = self.deck.clock();
        // A save buffer stays in `saving` while the engine copies into
        // it: a panic then unwinds through no box that owns it.
        if let Some(state) = &mut self.saving {
            if !self.deck.continue_save(state) {
                // Requests wait behind the save.
                return;
            }
        }
        if let Some(state) = self.saving.take() {
            let at = state.clock;
            self.send(FromAudio::Saved { state, at });
        }
        if let Some(w) = self.save_from.take() {
            self.save_at(w, clock);
            if self.save_from.is_some() || self.saving.is_some() {
                return;
            }
        }
        if let Some(held) = self.held.take() {
            self.offer(held.engine, held.at, held.fade_frames, clock);
        }
        if let Some(c) = self.catching_up.take() {
            self.catch_up(c, clock);
        }
        while self.held.is_none()
            && self.catching_up.is_none()
            && self.saving.is_none()
            && self.save_from.is_none()
            && self.outbox.len() + 2 < OUTBOX
        {
            let Ok(req) = self.link.requests.pop() else {
                break;
            };
            match req {
                ToAudio::Save(state) => {
                    let state = self.saving.insert(state);
                    if self.deck.begin_save(state) {
                        if let Some(state) = self.saving.take() {
                            self.send(FromAudio::Saved { state, at: clock });
                        }
                    }
                }
                ToAudio::SaveFrom { state, at } => self.save_at(
                    Waiting {
                        state,
                        at,
                        exact: false,
                    },
                    clock,
                ),
                ToAudio::SaveAt { state, at } => {
                    // Block-accurate: at the start of the block holding `at`.
                    let at = match self.deck.engine().profile().event_timing() {
                        EventTiming::SampleAccurate => at,
                        EventTiming::BlockAccurate => {
                            let b = self.deck.block_size() as u64;
                            at.saturating_sub(at.saturating_sub(clock) % b)
                        }
                    };
                    self.save_at(
                        Waiting {
                            state,
                            at,
                            exact: true,
                        },
                        clock,
                    )
                }
                ToAudio::Offer { engine, at, fade } => self.offer(engine, at, fade, clock),
                ToAudio::Restore(engine) => {
                    self.restore(engine, clock);
                    return;
                }
                ToAudio::CatchUp {
                    engine,
                    from,
                    fade,
                    at,
                } => {
                    let block = self.deck.block_size() as u64;
                    if clock.saturating_sub(from) > CATCH_UP_LIMIT * block || from > clock {
                        self.send(FromAudio::Refused { engine, clock });
                    } else {
                        let c = HeldOffer {
                            engine,
                            at: from,
                            fade_frames: fade,
                            swap_at: at,
                        };
                        self.catch_up(c, clock);
                    }
                }
            }
        }
    }

    /// Begins the save `w` asks for once the clock has reached its
    /// sample (`clock` is a block boundary, or the sample an exact save
    /// cut its block at); keeps it until then. Real-time safe.
    fn save_at(&mut self, w: Waiting, clock: u64) {
        let Waiting { mut state, at, .. } = w;
        if clock < at {
            self.save_from = Some(Waiting { state, ..w });
        } else if self.deck.begin_save(&mut state) {
            self.send(FromAudio::Saved { state, at: clock });
        } else {
            self.saving = Some(state);
        }
    }

    /// Where the block ending at `end` is cut next after `pos`: at an
    /// exact save's sample, or at the sample a held offer swaps at
    /// once its engine stands there ([`Player::advance_held`]); `end` when
    /// neither lies inside.
    pub(super) fn next_cut(&self, pos: u64, end: u64) -> u64 {
        let inside = |at: u64| (pos < at && at < end).then_some(at);
        let saved = self
            .save_from
            .as_ref()
            .filter(|w| w.exact)
            .and_then(|w| inside(w.at));
        let swap = self
            .held
            .as_ref()
            .filter(|h| h.engine.clock() == h.at)
            .and_then(|h| inside(h.at));
        saved.into_iter().chain(swap).min().unwrap_or(end)
    }

    /// At the sample `at` a block was cut at: the exact save asked for
    /// it begins (of the engine that played up to it), then the held
    /// offer for it swaps, unless a save is still being copied.
    /// Real-time safe.
    pub(super) fn at_cut(&mut self, at: u64) {
        if self
            .save_from
            .as_ref()
            .is_some_and(|w| w.exact && w.at == at)
        {
            let w = self.save_from.take().expect("checked");
            self.save_at(w, at);
        }
        let due = self.held.as_ref().is_some_and(|h| h.at == at);
        if due && self.saving.is_none() {
            let h = self.held.take().expect("checked");
            self.offer(h.engine, at, h.fade_frames, at);
        }
    }

    /// Runs an engine that reads the input up to [`CATCH_UP_PER_BLOCK`]
    /// blocks through the history towards `clock`; swaps it in once there
    /// (S = the clock, where its edit's changes start), or, asked to swap
    /// at a sample ahead, keeps it there until the block that holds that
    /// sample and then holds it as an offer for it. Keeps it for the
    /// next block otherwise; refuses it if the history no longer holds
    /// what it needs. Real-time safe: the history is only read, and the
    /// blocks run into the engine's own buffers.
    fn catch_up(&mut self, c: HeldOffer, clock: u64) {
        let HeldOffer {
            engine,
            fade_frames,
            swap_at,
            ..
        } = c;
        let mut engine = InFlight::new(engine);
        let block = self.deck.block_size();
        for _ in 0..CATCH_UP_PER_BLOCK {
            let at = engine.clock();
            if at >= clock {
                break;
            }
            let Some(history) = &self.history else {
                break;
            };
            if !history.load(at, &mut engine.input_block(block)) {
                let engine = engine.land();
                self.send(FromAudio::Refused { engine, clock });
                return;
            }
            engine.fast_forward(at + block as u64);
        }
        let ahead = swap_at.filter(|s| *s > clock);
        let waits = ahead.is_some_and(|s| s >= clock + block as u64);
        if (engine.clock() < clock || waits) && self.history.is_some() {
            let at = engine.clock();
            self.catching_up = Some(HeldOffer {
                engine: engine.land(),
                at,
                fade_frames,
                swap_at,
            });
            return;
        }
        match ahead {
            // Inside the next block: cut there ([`Player::advance_held`]).
            Some(s) => self.offer(engine.land(), s, fade_frames, clock),
            None => {
                engine.set_swap_sample(clock);
                self.offer(engine.land(), clock, fade_frames, clock);
            }
        }
    }

    /// Plays `engine` from now at its own clock (a restored snapshot),
    /// or sends it back refused while the deck is busy. Real-time safe.
    fn restore(&mut self, engine: Box<Engine>, clock: u64) {
        match self.deck.replace(engine) {
            Ok(()) => {
                let stats = self.deck.engine().stats();
                self.last_nan_events = stats.nan_events;
                self.last_panics = stats.panics;
                self.meters.swaps.fetch_add(1, Ordering::Relaxed);
                let at = self.deck.clock();
                self.send(FromAudio::Swapped { at });
            }
            Err(engine) => self.send(FromAudio::Refused { engine, clock }),
        }
    }

    fn offer(&mut self, engine: Box<Engine>, at: u64, fade_frames: u64, clock: u64) {
        if at > clock {
            self.held = Some(HeldOffer {
                engine,
                at,
                fade_frames,
                swap_at: None,
            });
            return;
        }
        let refused = if at == clock {
            match self.deck.swap(engine, fade_frames) {
                Ok(()) => {
                    let stats = self.deck.engine().stats();
                    self.last_nan_events = stats.nan_events;
                    self.last_panics = stats.panics;
                    self.meters.swaps.fetch_add(1, Ordering::Relaxed);
                    self.send(FromAudio::Swapped { at });
                    None
                }
                Err(r) => Some(r.into_engine()),
            }
        } else {
            Some(engine)
        };
        if let Some(engine) = refused {
            self.send(FromAudio::Refused { engine, clock });
        }
    }

    /// Runs the engine of a held offer that swaps inside the next block
    /// (a timetagged switch) from the block's start, where it stands, up
    /// to its swap sample, in one part as a fast-forward to that sample
    /// runs it (`replay` does): the block is then cut there and it swaps.
    /// Not while a save is copied (the offer is refused once the clock
    /// passes its sample). Real-time safe; bounded by one block of it.
    pub(super) fn advance_held(&mut self, start: u64, end: u64) {
        if self.saving.is_some() {
            return;
        }
        let width = self.input_width;
        let Some(h) = &mut self.held else {
            return;
        };
        if h.engine.clock() != start || h.at <= start || h.at >= end {
            return;
        }
        let n = (h.at - start) as usize;
        if width > 0 && h.engine.input_channels() > 0 {
            h.engine
                .input_block(n)
                .load_interleaved(&self.input_buf, width);
        }
        h.engine.process_block(n);
    }
}

/// An engine the callback runs while it is in no field of the player (a
/// local): dropped as usual, but leaked if a panic unwinds through it,
/// never freed on the audio thread. After such a panic the player never
/// runs again ([`PlayerCell::fill`](super::PlayerCell::fill)), so this leaks at most once.
pub(super) struct InFlight(std::mem::ManuallyDrop<Box<Engine>>);

impl InFlight {
    fn new(engine: Box<Engine>) -> InFlight {
        InFlight(std::mem::ManuallyDrop::new(engine))
    }

    /// The engine, to be stored or sent.
    fn land(self) -> Box<Engine> {
        let mut me = std::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never used or dropped again.
        unsafe { std::mem::ManuallyDrop::take(&mut me.0) }
    }
}

impl std::ops::Deref for InFlight {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.0
    }
}

impl std::ops::DerefMut for InFlight {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.0
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // SAFETY: dropped once, here.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.0) }
        }
    }
}
