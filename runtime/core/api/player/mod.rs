//! The real-time callback body: pulls whole engine blocks through a FIFO
//! into device buffers of any size, maps channels, applies the output
//! stages, and reports through atomics. Nothing here allocates, frees,
//! locks, blocks or does I/O.
//!
//! The player is split along its seams: the handover it serves at block
//! boundaries (`serve.rs`), the rings to the control thread and their
//! messages (`link.rs`), the atomics it reports through (`meters.rs`),
//! per-node timing (`timing.rs`), the cell a device callback runs it from
//! (`cell.rs`), the traits through which a host gives it input and
//! takes its output (`io.rs`), and the input history that keeps what it
//! read for handovers (`history.rs`).

mod cell;
pub mod history;
mod io;
mod link;
mod meters;
mod offline;
mod scripted;
mod serve;
mod timing;

pub(crate) use cell::PanicGuard;
pub use cell::{install_panic_hook, PlayerCell};
pub use io::{InputHistory, InputSource, OutputTap};
pub use link::{
    ChangeLink, FromAudio, Link, ToAudio, CATCH_UP_LIMIT, CATCH_UP_PER_BLOCK, CHANGES_PER_BLOCK,
    CHANGE_RING, NOTES_PER_BLOCK, NOTE_RING,
};
pub use meters::{Meters, Switches};
pub use offline::offline_player;
pub use scripted::Scripted;
pub use timing::{NodeTimes, TimingLink};

use crate::dsp::fpmode::FpGuard;
use crate::engine::{faded, stop_fade_gain, Deck, Engine, EngineState, CHANGE_QUEUE, NOTE_QUEUE};
use link::{change_pair, link_pair, take_ring, AudioChanges, AudioLink, OUTBOX};
use serve::{HeldOffer, Waiting};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use timing::{timing_pair, TimingEnds};

/// Everything the callback owns: the engines it plays, the handover it
/// serves, and what a host plugged in (an input of type `I`, its history,
/// a tap on the output).
pub struct Player<I: InputSource + ?Sized = dyn InputSource> {
    /// The playing engine (and one fading out during a swap), mapped onto
    /// the device's channels.
    deck: Deck,
    link: AudioLink,
    timing: TimingEnds,
    /// An offer waiting for its swap sample.
    held: Option<HeldOffer>,
    /// An engine catching up with the clock through the input history
    /// (its `at` is where it stands).
    catching_up: Option<HeldOffer>,
    /// A save being copied in parts, one before each block.
    saving: Option<Box<EngineState>>,
    /// A save asked from a sample ahead, until the clock reaches it.
    save_from: Option<Waiting>,
    /// Replies the full queue did not take yet, oldest first (capacity
    /// reserved up front).
    outbox: VecDeque<FromAudio>,
    /// Interleaved device frames rendered ahead: `block × device channels`.
    fifo: Vec<f32>,
    fifo_pos: usize,
    fifo_len: usize,
    device_channels: usize,
    /// Stop after this many frames (`--duration`), without a fade.
    limit_frames: Option<u64>,
    /// Frames written to the device so far.
    written_frames: u64,
    /// Length of the stop fade.
    fade_frames: u64,
    /// Frames left in a stop fade; `None` when not fading.
    fade_left_frames: Option<u64>,
    meters: Arc<Meters>,
    switches: Arc<Switches>,
    origin: Instant,
    period_ns: u64,
    last_start_ns: u64,
    sample_rate: f64,
    last_nan_events: u64,
    last_panics: u64,
    /// Where what went to the device is recorded (`run --capture`).
    tap: Option<Box<dyn OutputTap>>,
    /// The session's audio input, when the scene reads one.
    input: Option<Box<I>>,
    /// Channels of the input each block reads (0: none).
    input_width: usize,
    /// One block of input, interleaved (`block × input channels`).
    input_buf: Vec<f64>,
    /// Where each block of input is kept after it is read, for handovers
    /// and the journal's recorded input.
    history: Option<Box<dyn InputHistory>>,
    /// Change records in, their reports out (see [`Player::control_link`]).
    changes_in: Option<AudioChanges>,
    /// Whether the output skips the device's clip to ±1.
    unclipped: bool,
    /// The frames of the last block at the engine's precision, interleaved
    /// like `fifo` (kept only for an unclipped host: empty otherwise).
    plain: Vec<f64>,
}

impl<I: InputSource + ?Sized> Player<I> {
    /// `device_channels` ≥ 1; a mono main bus feeds the first two device
    /// channels, extra device channels stay silent.
    pub fn new(
        engine: Engine,
        device_channels: usize,
        limit: Option<u64>,
        fade_frames: u64,
        meters: Arc<Meters>,
        switches: Arc<Switches>,
        origin: Instant,
    ) -> Player<I> {
        let block = engine.block_size();
        let sample_rate = engine.sample_rate() as f64;
        Player {
            deck: Deck::new(Box::new(engine), device_channels),
            link: link_pair().1,
            timing: timing_pair().1,
            held: None,
            catching_up: None,
            saving: None,
            save_from: None,
            outbox: VecDeque::with_capacity(OUTBOX),
            fifo: vec![0.0; block * device_channels],
            fifo_pos: 0,
            fifo_len: 0,
            device_channels,
            limit_frames: limit,
            written_frames: 0,
            fade_frames: fade_frames.max(1),
            fade_left_frames: None,
            meters,
            switches,
            origin,
            period_ns: 0,
            last_start_ns: 0,
            sample_rate,
            last_nan_events: 0,
            last_panics: 0,
            tap: None,
            input: None,
            input_width: 0,
            input_buf: Vec::new(),
            history: None,
            changes_in: None,
            unclipped: false,
            plain: Vec::new(),
        }
    }

    /// Connects a control input: the control thread's ends of new rings
    /// for change records and their reports (call it before the player
    /// goes to the callback; a link made before is cut off).
    pub fn control_link(&mut self) -> ChangeLink {
        let (link, audio) = change_pair(
            CHANGE_RING,
            NOTE_RING,
            CHANGE_RING + CHANGE_QUEUE + NOTE_RING + NOTE_QUEUE,
        );
        self.changes_in = Some(audio);
        link
    }

    /// Takes change records for the next block: at most
    /// [`CHANGES_PER_BLOCK`] and [`NOTES_PER_BLOCK`] note records, and
    /// only as many as the engine's queues and the report ring have room
    /// for (a record that arrives to a full queue waits in the ring, never
    /// dropped here). Real-time safe.
    fn take_controls(&mut self) {
        let Some(c) = &mut self.changes_in else {
            return;
        };
        let room = self.deck.control_room();
        let notes_room = self.deck.note_room();
        // Every record waiting in the engine has room for its report.
        let waiting = CHANGE_QUEUE - room + NOTE_QUEUE.saturating_sub(notes_room);
        let budget = CHANGES_PER_BLOCK
            .min(room)
            .min(c.reports.slots().saturating_sub(waiting + 1));
        let (deck, meters) = (&mut self.deck, &self.meters);
        let published = c.published.load(Ordering::Acquire);
        take_ring(
            &mut c.records,
            budget,
            published,
            &mut c.reports,
            meters,
            |r| deck.push_change(r),
        );
        let budget = NOTES_PER_BLOCK
            .min(notes_room)
            .min(c.reports.slots().saturating_sub(waiting + budget + 1));
        take_ring(
            &mut c.notes,
            budget,
            published,
            &mut c.reports,
            meters,
            |r| deck.push_note(r),
        );
    }

    /// Sends the reports of the records that landed in the last block.
    fn send_control_reports(&mut self) {
        let Some(c) = &mut self.changes_in else {
            self.deck.take_change_reports(|_| {});
            return;
        };
        let meters = &self.meters;
        self.deck.take_change_reports(|r| {
            if c.reports.push(r).is_err() {
                meters.control_reports_lost.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Takes one block of `input` before each block of output and gives it
    /// to the engines (call it before the player goes to the callback).
    pub fn set_input(&mut self, input: Box<I>) {
        self.input_width = input.channels();
        self.input_buf = vec![0.0; self.deck.block_size() * self.input_width.max(1)];
        self.input = Some(input);
    }

    /// Keeps every block of input read (after [`set_input`](Self::set_input))
    /// in `history`, whose first frame is the engine's clock now.
    pub fn set_history(&mut self, history: impl InputHistory + 'static) {
        self.history = Some(Box::new(history));
    }

    /// Records every performance frame the device gets (after the output
    /// stage: clip, stop fade) into `tap`.
    pub fn set_tap(&mut self, tap: impl OutputTap + 'static) {
        self.tap = Some(Box::new(tap));
    }

    /// The engine playing now.
    pub fn engine(&self) -> &Engine {
        self.deck.engine()
    }

    /// Connects a control side: the control thread's ends of new queues
    /// through which it hands engines over (call it before the player goes
    /// to the callback; a link made before is cut off, and what was in
    /// flight on it is dropped here).
    pub fn link(&mut self) -> Link {
        let (control, audio) = link_pair();
        self.link = audio;
        control
    }

    /// The control thread's ends of new rings through which it asks for the
    /// per-node times (a link made before is cut off).
    pub fn timing_link(&mut self) -> TimingLink {
        let (control, audio) = timing_pair();
        self.timing = audio;
        control
    }

    /// Whether a stop (fade out) was requested.
    pub fn stop_requested(&self) -> bool {
        self.switches.stop.load(Ordering::Relaxed)
    }

    /// Forgets callback timing, so that the first callback of a rebuilt
    /// stream is not counted as late.
    pub fn reset_timing(&mut self) {
        self.last_start_ns = 0;
        self.period_ns = 0;
    }

    /// A callback that does not play (a JACK transport that is stopped):
    /// the engine, its clock and the frames written stand still, the
    /// callback counts as alive for the watchdog, and the next one that
    /// plays is not counted as late. Real-time safe.
    pub fn hold(&mut self) {
        self.reset_timing();
        let now = self.origin.elapsed().as_nanos() as u64;
        self.meters.last_callback_ns.store(now, Ordering::Release);
    }

    /// Frames written to the device so far.
    pub fn written(&self) -> u64 {
        self.written_frames
    }

    /// Frames of the stop fade.
    pub fn stop_fade_len(&self) -> u64 {
        self.fade_frames
    }

    /// Renders the next engine block into the FIFO (device layout, clipped
    /// to ±1 for hearing safety, under the engine's FP mode): serves the
    /// control thread, reads a block of input, and plays it
    /// ([`Player::play_block`]).
    fn refill(&mut self) {
        self.serve();
        self.serve_timing();
        self.take_controls();
        if let Some(input) = &mut self.input {
            input.read(&mut self.input_buf);
        }
        self.play_block(|_, _, end| end);
    }

    /// For a host that writes each block's input itself
    /// ([`input_block`](Self::input_block)), the first half of a block:
    /// serves the control thread (a swap due here happens now) and takes
    /// control records, so that what the host lands next lands on the
    /// engine that plays the block. Real-time safe.
    pub(crate) fn begin_block(&mut self) {
        self.serve();
        self.serve_timing();
        self.take_controls();
    }

    /// The second half: plays the block whose input the host wrote into
    /// [`input_block`](Self::input_block), calling `feed` with the deck,
    /// the sample a part starts at and the block's end before each part:
    /// `feed` queues what it has for the engine and returns where the part
    /// must end at the latest (after the part's start; the block's end
    /// when everything fit), so that a queue that fills up is played down
    /// before more lands. Real-time safe.
    pub(crate) fn end_block(&mut self, feed: impl FnMut(&mut Deck, u64, u64) -> u64) {
        self.play_block(feed);
    }

    /// The input of the next block, interleaved (`block × input channels`),
    /// for a host that writes it itself.
    pub(crate) fn input_block(&mut self) -> &mut [f64] {
        &mut self.input_buf
    }

    /// Takes `channels` of input per block, written by the host into
    /// [`input_block`](Self::input_block) (allocates: before playing).
    pub(crate) fn set_input_width(&mut self, channels: usize) {
        self.input_width = channels;
        self.input_buf = vec![0.0; self.deck.block_size() * channels.max(1)];
    }

    /// The frames of the last block played, interleaved.
    pub(crate) fn rendered(&self) -> &[f32] {
        &self.fifo[..self.fifo_len]
    }

    /// The same frames at the engine's precision (an unclipped player's).
    pub(crate) fn rendered_f64(&self) -> &[f64] {
        &self.plain[..self.fifo_len.min(self.plain.len())]
    }

    /// The deck, to queue records on its playing engine.
    pub(crate) fn deck_mut(&mut self) -> &mut Deck {
        &mut self.deck
    }

    /// Plays the main bus as it is, converted to f32 without the device's
    /// clip to ±1 (a host with its own output stage), and keeps each block
    /// at the engine's precision too ([`rendered_f64`](Self::rendered_f64)).
    /// Allocates: before playing.
    pub(crate) fn set_unclipped(&mut self) {
        self.unclipped = true;
        self.plain = vec![0.0; self.fifo.len()];
    }

    /// Plays the block whose input is in `input_buf` into the FIFO (device
    /// layout, under the engine's FP mode), keeping the input in the
    /// history.
    fn play_block(&mut self, feed: impl FnMut(&mut Deck, u64, u64) -> u64) {
        let end = self.deck.clock() + self.deck.block_size() as u64;
        let dc = self.device_channels;
        let mut peak = 0.0f32;
        self.deck.map_output(true);
        let done = self.play_parts(end, feed, |p, done, frames| {
            let part = &mut p.fifo[done * dc..(done + frames) * dc];
            peak = peak.max(if p.unclipped {
                p.plain[done * dc..(done + frames) * dc]
                    .copy_from_slice(&p.deck.output()[..frames * dc]);
                p.deck.plain_output(part)
            } else {
                p.deck.device_output(part)
            });
            Ok::<(), std::convert::Infallible>(())
        });
        let Ok(done) = done;
        self.fifo_pos = 0;
        self.fifo_len = done * dc;
        self.note_block(peak);
    }

    /// Plays from the clock to `end` (at most one block on) the input in
    /// `input_buf`, keeping it in the history, and calls `part` after each
    /// part with the frames played before it and its own: the block is
    /// cut where a timetagged save or switch asks (see
    /// [`Player::next_cut`]) or where `feed` (called before each part
    /// with the deck, the part's start and `end`) asks, each part under
    /// the FP mode of the engine playing it. Returns the frames played,
    /// or `part`'s first error.
    fn play_parts<E>(
        &mut self,
        end: u64,
        mut feed: impl FnMut(&mut Deck, u64, u64) -> u64,
        mut part: impl FnMut(&mut Self, usize, usize) -> Result<(), E>,
    ) -> Result<usize, E> {
        let width = self.input_width;
        let start = self.deck.clock();
        let len = (end - start) as usize;
        if width > 0 {
            if let Some(history) = &mut self.history {
                history.push(&self.input_buf[..len * width]);
            }
        }
        self.advance_held(start, end);
        let mut done = 0;
        loop {
            let pos = start + done as u64;
            let fed = feed(&mut self.deck, pos, end).max(pos + 1).min(end);
            let cut = self.next_cut(pos, end).min(fed);
            let n = (cut - pos) as usize;
            if width > 0 {
                let from = (done * width).min(self.input_buf.len());
                self.deck.load_input(&self.input_buf[from..], width, n);
            }
            self.deck.process(n);
            let frames = self.deck.frames();
            part(self, done, frames)?;
            done += frames;
            self.send_control_reports();
            if let Some(old) = self.deck.take_retired() {
                self.send(FromAudio::Retired(old));
            }
            if cut >= end || frames == 0 {
                break;
            }
            self.at_cut(cut);
        }
        Ok(done)
    }

    /// Reports a block played: its peak, the engine's NaN events and
    /// panics since the last, and the clock.
    fn note_block(&mut self, peak: f32) {
        self.meters.note_peak(peak);
        let stats = self.deck.engine().stats();
        let nans = stats.nan_events;
        if nans != self.last_nan_events {
            self.meters
                .nan_events
                .fetch_add(nans.wrapping_sub(self.last_nan_events), Ordering::Relaxed);
            self.last_nan_events = nans;
        }
        let panics = stats.panics;
        if panics != self.last_panics {
            self.meters
                .node_panics
                .fetch_add(panics.wrapping_sub(self.last_panics), Ordering::Relaxed);
            self.last_panics = panics;
        }
        self.meters
            .clock
            .store(self.deck.clock(), Ordering::Relaxed);
    }

    /// Follows [`Switches::node_timing`] and answers a request for the
    /// per-node times, once per block. A request is taken only when its
    /// reply has room, so the reply never has to be dropped here.
    fn serve_timing(&mut self) {
        let on = self.switches.node_timing.load(Ordering::Relaxed);
        self.deck.set_node_timing(on);
        if self.timing.replies.slots() == 0 {
            return;
        }
        if let Ok(mut times) = self.timing.requests.pop() {
            times.copy_from(self.deck.engine());
            // Room was checked above, and this is the only producer.
            let _ = self.timing.replies.push(times);
        }
    }

    /// The callback: fills `out` (interleaved, `device_channels` wide).
    pub fn fill(&mut self, out: &mut [f32]) {
        let start = self.origin.elapsed().as_nanos() as u64;
        let dc = self.device_channels;
        let frames = out.len() / dc;
        if let Some(w) = self.deck.engine().workers() {
            // A worker that keeps this callback past its budget counts an
            // xrun of its own.
            w.set_deadline_after((frames as f64 / self.sample_rate * 1e9) as u64);
        }
        if self.switches.stop.load(Ordering::Relaxed) && self.fade_left_frames.is_none() {
            self.fade_left_frames = Some(self.fade_frames);
        }
        let written_before = self.written_frames;
        let stop_frame = self.switches.stop_frame();
        // The stop fade's gain runs under the engine's FP mode, as the
        // conversion to f32 does: the caller's MXCSR changes nothing.
        let fp = FpGuard::new(self.deck.flush_to_zero());
        for f in 0..frames {
            let done = self.limit_frames.is_some_and(|l| self.written_frames >= l)
                || self.fade_left_frames == Some(0);
            if done {
                out[f * dc..(f + 1) * dc].iter_mut().for_each(|x| *x = 0.0);
                self.meters.finished.store(true, Ordering::Release);
                continue;
            }
            if self.fade_left_frames.is_none()
                && stop_frame.is_some_and(|at| self.written_frames >= at)
            {
                // A timed stop, from this very frame.
                self.fade_left_frames = Some(self.fade_frames);
                self.switches.stop.store(true, Ordering::Relaxed);
            }
            if self.fifo_pos >= self.fifo_len {
                self.refill();
                fp.set_flush(self.deck.flush_to_zero());
            }
            let gain = match self.fade_left_frames {
                Some(left) => {
                    if left == self.fade_frames {
                        self.meters
                            .stop_at
                            .store(self.written_frames, Ordering::Relaxed);
                    }
                    self.fade_left_frames = Some(left - 1);
                    stop_fade_gain(self.fade_frames - left, self.fade_frames)
                }
                None => 1.0,
            };
            for d in 0..dc {
                out[f * dc + d] = faded(self.fifo[self.fifo_pos + d], gain);
            }
            self.fifo_pos += dc;
            self.written_frames += 1;
        }
        drop(fp);
        if let Some(w) = self.deck.engine().workers() {
            // What the control thread runs on the pool between callbacks
            // (fast-forwarding an incoming engine) has no deadline.
            w.set_deadline_after(0);
        }
        if let Some(tap) = &mut self.tap {
            // The performance frames lead the buffer; silence after the end is not recorded.
            let played = (self.written_frames - written_before) as usize;
            tap.push(&out[..played * dc]);
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
        m.frames.store(self.written_frames, Ordering::Relaxed);
        m.device_frames.fetch_add(frames as u64, Ordering::Relaxed);
        m.callbacks.fetch_add(1, Ordering::Relaxed);
        m.busy_ns.fetch_add(busy, Ordering::Relaxed);
        m.busy_max_ns.fetch_max(busy, Ordering::Relaxed);
        m.last_callback_ns.store(end, Ordering::Release);
    }
}
