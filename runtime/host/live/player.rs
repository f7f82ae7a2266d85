//! The real-time callback body: pulls whole engine blocks through a FIFO
//! into device buffers of any size, maps channels, applies the output
//! stages, and reports through atomics. Nothing here allocates, frees,
//! locks, blocks or does I/O.

use crate::dsp::fpmode::FpGuard;
use crate::engine::{
    faded, stop_fade_gain, ControlRecord, ControlReport, Deck, Engine, EngineState, NodeTime,
    NoteRecord, CONTROL_QUEUE, NOTE_QUEUE,
};
use crate::host::live::input::history::HistoryWriter;
use crate::host::live::input::LiveInput;
use crate::profile::EventTiming;
use rtrb::{Consumer, Producer, RingBuffer};
use std::cell::{Cell, UnsafeCell};
use std::collections::VecDeque;
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
    /// Nodes that panicked (each muted), and callbacks that panicked
    /// outside any node (the callback wrote silence).
    pub node_panics: AtomicU64,
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
    pub fn take_busy_max_ns(&self) -> u64 {
        self.busy_max_ns.swap(0, Ordering::Relaxed)
    }
}

/// A request from the control thread to the audio thread (the handover of
/// [`crate::engine::incoming`]).
pub enum ToAudio {
    /// From the next block boundary N, copy the playing engine's state into
    /// this buffer (shaped for that engine) and send it back: long
    /// histories are copied in parts over the following blocks, so the
    /// reply may come a few blocks after N, holding the state at N.
    Capture(Box<EngineState>),
    /// As [`ToAudio::Capture`], from the first block boundary at or after
    /// sample `at` (the capture of a timetagged switch): the state at
    /// `at` itself when `at` is on the block grid. Requests behind it wait.
    CaptureFrom { state: Box<EngineState>, at: u64 },
    /// As [`ToAudio::Capture`], of the state at sample `at` exactly (a
    /// timetagged snapshot): the block that holds `at` is cut in two
    /// there. A playing engine whose profile is block-accurate (live) is
    /// captured at the start of that block instead, and one whose clock
    /// has passed `at` at the next block boundary. Requests behind it wait.
    CaptureAt { state: Box<EngineState>, at: u64 },
    /// Play `engine` from sample `at`, crossfading over `fade` frames (0:
    /// a cut). Refused if the clock has passed `at`. The engine stands at
    /// `at` (a block boundary), or at the start of the block that holds
    /// `at` (a timetagged switch): the callback then runs it up to `at`
    /// beside the first part of that block, cut at `at`, and swaps there.
    Offer {
        engine: Box<Engine>,
        at: u64,
        fade: u64,
    },
    /// Play `engine`, which reads the session's input and stands at `from`
    /// (a block boundary the audio clock has reached: the input after it
    /// had not been read when it was sent), once it has caught up with the
    /// clock through the input history: up to [`CATCH_UP_PER_BLOCK`] of its
    /// blocks before each of the session's, then the swap at the clock S
    /// it reached. Refused if the clock is more than [`CATCH_UP_LIMIT`]
    /// blocks past `from`. With `at` (a timetagged switch), the swap is at
    /// that sample instead, unless the clock has passed it: once caught
    /// up, the engine keeps pace with the clock, a block per block, until
    /// the block that holds `at`, and is then offered as
    /// [`ToAudio::Offer`] offers one.
    CatchUp {
        engine: Box<Engine>,
        from: u64,
        fade: u64,
        at: Option<u64>,
    },
}

/// How many blocks past its `from` a [`ToAudio::CatchUp`] engine may be
/// when it arrives.
///
/// Why the audio thread catches up at all: the new engine's fast-forward
/// from the capture N to the swap S needs the input of N..S, and the
/// input of a live source arrives only as the clock gets there. The
/// control thread fast-forwards through the history as far as it reaches
/// (a clock M the audio thread has passed, by a block or two once the
/// control thread has caught up) and the audio thread, the history's
/// writer, runs the last blocks M..S. Spreading them over the callbacks,
/// at most [`CATCH_UP_PER_BLOCK`] a block, bounds what one callback
/// spends on them (the new engine's block, twice) instead of running a
/// whole gap in one; a gap of a block or two swaps in the first callback.
/// The live session admits such an engine only when the estimate of its
/// two blocks and the playing engine's one fits the block deadline.
pub const CATCH_UP_LIMIT: u64 = 8;

/// Blocks of a catching-up engine run before each block of the session:
/// two gain one block on the clock per callback.
pub const CATCH_UP_PER_BLOCK: usize = 2;

/// A reply from the audio thread.
pub enum FromAudio {
    /// The state at block boundary `at` (N; the buffer's clock).
    Captured { state: Box<EngineState>, at: u64 },
    /// The offered engine plays from `at` (S).
    Swapped { at: u64 },
    /// The offer came too late: the clock was already at `clock`.
    Refused { engine: Box<Engine>, clock: u64 },
    /// An engine that stopped playing (after its fade), to be dropped here.
    Retired(Box<Engine>),
}

/// The control thread's ends of the two single-producer single-consumer
/// rings between it and the callback: it is the only producer of requests
/// and the only consumer of replies, the callback the other way round, so
/// neither side ever waits for the other (no spinning on a half-done push).
/// Nothing that goes through them is allocated or freed on the audio side:
/// boxes only move.
pub struct Link {
    to_audio: Producer<ToAudio>,
    from_audio: Consumer<FromAudio>,
}

impl Link {
    /// Sends a request to the callback; gives it back if the ring is full.
    pub fn send(&mut self, msg: ToAudio) -> Result<(), ToAudio> {
        self.to_audio
            .push(msg)
            .map_err(|rtrb::PushError::Full(m)| m)
    }

    /// The callback's next reply, if one is waiting.
    pub fn receive(&mut self) -> Option<FromAudio> {
        self.from_audio.pop().ok()
    }
}

/// The callback's ends of a [`Link`].
struct AudioLink {
    requests: Consumer<ToAudio>,
    replies: Producer<FromAudio>,
}

/// A connected pair of ends (allocates: call it off the audio thread).
fn link_pair() -> (Link, AudioLink) {
    let (to_audio, requests) = RingBuffer::new(LINK_CAPACITY);
    let (replies, from_audio) = RingBuffer::new(LINK_CAPACITY);
    (
        Link {
            to_audio,
            from_audio,
        },
        AudioLink { requests, replies },
    )
}

/// The control thread's ends of the rings that carry control records to
/// the callback and their reports back (see [`crate::engine::ControlRecord`]).
pub struct ControlLink {
    pub records: Producer<ControlRecord>,
    /// Notes for voice modules, beside the records; their reports come
    /// back on `reports` too.
    pub notes: Producer<NoteRecord>,
    pub reports: Consumer<ControlReport>,
}

/// The callback's ends of a [`ControlLink`].
struct AudioControls {
    records: Consumer<ControlRecord>,
    notes: Consumer<NoteRecord>,
    reports: Producer<ControlReport>,
}

/// Records in flight to the callback; reports in flight back (each
/// record, and each record waiting in the engine, has room for its report).
pub const CONTROL_RING: usize = 4096;
/// The most records the callback takes before one block: what one block
/// spends on control input is bounded, whatever arrives.
pub const CONTROLS_PER_BLOCK: usize = 256;
/// Note records in flight to the callback.
pub const NOTE_RING: usize = 1024;
/// The most note records the callback takes before one block.
pub const NOTES_PER_BLOCK: usize = 256;

/// Takes at most `budget` records from `ring` into `push`, sending the
/// report of each it refuses (real-time safe).
fn take_ring<T>(
    ring: &mut Consumer<T>,
    budget: usize,
    reports: &mut Producer<ControlReport>,
    meters: &Meters,
    mut push: impl FnMut(T) -> Result<(), ControlReport>,
) {
    for _ in 0..budget {
        let Ok(r) = ring.pop() else {
            break;
        };
        if let Err(report) = push(r) {
            if reports.push(report).is_err() {
                meters.control_reports_lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Messages in flight each way; a handover has at most three.
const LINK_CAPACITY: usize = 16;
/// Replies the callback holds when the control thread is slow to drain.
const OUTBOX: usize = 8;

/// What the control thread asks of the callback.
#[derive(Default)]
pub struct Controls {
    /// Fade out and finish (Ctrl-C, `q`).
    pub stop: AtomicBool,
    /// Fade out and finish from this device frame on, plus one (0: no
    /// such stop): a timetagged `/morphrt/stop` (see
    /// [`Controls::stop_at_frame`]).
    stop_frame: AtomicU64,
    /// Time each node of the playing engine (the `t` key). Read once per
    /// block: turning it on zeroes the engine's counters first, so a table
    /// covers the time since; off by default, since it reads the clock
    /// once per node per chunk (a one-sample feedback loop: nodes × block
    /// reads a block).
    pub node_timing: AtomicBool,
}

impl Controls {
    /// Starts the stop fade at device frame `frame` exactly (at once if
    /// it has passed), as [`Controls::stop`] does at the next callback.
    pub fn stop_at_frame(&self, frame: u64) {
        self.stop_frame
            .store(frame.saturating_add(1), Ordering::Relaxed);
    }

    /// The device frame a timed stop begins at, if one is asked.
    fn stop_frame(&self) -> Option<u64> {
        self.stop_frame.load(Ordering::Relaxed).checked_sub(1)
    }
}

/// The per-node times of the playing engine, copied out by the callback
/// into a buffer the control thread made (so the callback never
/// allocates): the `t` key's table. A buffer too small for the engine
/// comes back [incomplete](Self::complete), saying how much it needs.
pub struct NodeTimes {
    rows: Vec<TimesRow>,
    /// The node ids, one after another (`rows` says where each ends).
    names: String,
    /// Frames timed.
    frames: u64,
    /// What the engine's table needs: rows, and bytes of ids.
    needed: (usize, usize),
}

/// One node of [`NodeTimes`].
#[derive(Clone, Copy)]
struct TimesRow {
    name_end: usize,
    op: &'static str,
    ns: u64,
    iterations: u64,
}

impl NodeTimes {
    /// An empty buffer for `nodes` nodes whose ids take `name_bytes` in all.
    pub fn with_capacity(nodes: usize, name_bytes: usize) -> Box<NodeTimes> {
        Box::new(NodeTimes {
            rows: Vec::with_capacity(nodes),
            names: String::with_capacity(name_bytes),
            frames: 0,
            needed: (0, 0),
        })
    }

    /// A buffer large enough for what this one needed.
    pub fn grown(&self) -> Box<NodeTimes> {
        NodeTimes::with_capacity(self.needed.0, self.needed.1)
    }

    /// Whether every node of the engine fitted.
    pub fn complete(&self) -> bool {
        self.rows.len() == self.needed.0
    }

    /// Copies `engine`'s per-node times, as far as the buffer holds them.
    /// Real-time safe: rows and ids are copied within the reserved capacity.
    fn copy_from(&mut self, engine: &Engine) {
        self.rows.clear();
        self.names.clear();
        self.frames = engine.timed_frames();
        let ids: usize = (0..engine.node_count())
            .map(|i| engine.node_id(i).len())
            .sum();
        self.needed = (engine.node_count(), ids);
        if self.rows.capacity() < self.needed.0 || self.names.capacity() < ids {
            return;
        }
        for (i, &ns) in engine.node_times_ns().iter().enumerate() {
            self.names.push_str(engine.node_id(i));
            self.rows.push(TimesRow {
                name_end: self.names.len(),
                op: engine.node_op(i),
                ns,
                iterations: engine.node_iterations(i),
            });
        }
    }

    /// Frames the times cover.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The table, most expensive first (allocates: off the audio thread).
    pub fn table(&self) -> Vec<NodeTime> {
        let starts = std::iter::once(0).chain(self.rows.iter().map(|r| r.name_end));
        let nodes = self
            .rows
            .iter()
            .zip(starts)
            .map(|(r, start)| (&self.names[start..r.name_end], r.op, r.ns, r.iterations));
        NodeTime::table(nodes, self.frames)
    }
}

/// The control thread's ends of the rings through which it asks the
/// callback for [`NodeTimes`]: one request in flight at a time.
pub struct TimingLink {
    requests: Producer<Box<NodeTimes>>,
    replies: Consumer<Box<NodeTimes>>,
}

impl TimingLink {
    /// Asks for the per-node times at the next block; gives the buffer back
    /// if a request is still in flight.
    pub fn request(&mut self, buf: Box<NodeTimes>) -> Result<(), Box<NodeTimes>> {
        self.requests
            .push(buf)
            .map_err(|rtrb::PushError::Full(b)| b)
    }

    /// The callback's answer, once it came.
    pub fn receive(&mut self) -> Option<Box<NodeTimes>> {
        self.replies.pop().ok()
    }
}

/// The callback's ends of a [`TimingLink`].
struct TimingEnds {
    requests: Consumer<Box<NodeTimes>>,
    replies: Producer<Box<NodeTimes>>,
}

fn timing_pair() -> (TimingLink, TimingEnds) {
    let (requests, audio_requests) = RingBuffer::new(1);
    let (audio_replies, replies) = RingBuffer::new(1);
    (
        TimingLink { requests, replies },
        TimingEnds {
            requests: audio_requests,
            replies: audio_replies,
        },
    )
}

/// An offer that came early, kept until the clock reaches its swap sample
/// (or, catching up through the input history, until it reaches the clock).
struct HeldOffer {
    engine: Box<Engine>,
    /// The swap sample (S).
    at: u64,
    /// Length of the crossfade (0: a cut).
    fade_frames: u64,
    /// Catching up: the sample it asks to swap at (a timetagged switch),
    /// or `None` for the clock it reaches.
    swap_at: Option<u64>,
}

/// A capture asked for a sample ahead ([`ToAudio::CaptureFrom`],
/// [`ToAudio::CaptureAt`]).
struct Waiting {
    state: Box<EngineState>,
    at: u64,
    /// At `at` exactly, cutting its block there (`CaptureAt`); else at
    /// the first block boundary from `at`.
    exact: bool,
}

/// Everything the callback owns.
pub struct Player {
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
    /// A capture being copied in parts, one before each block.
    capturing: Option<Box<EngineState>>,
    /// A capture asked from a sample ahead, until the clock reaches it.
    capture_from: Option<Waiting>,
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
    controls: Arc<Controls>,
    origin: Instant,
    period_ns: u64,
    last_start_ns: u64,
    sample_rate: f64,
    last_nan_events: u64,
    last_panics: u64,
    /// Where what went to the device is recorded (`run --capture`).
    tap: Option<crate::host::live::tap::Tap>,
    /// The session's audio input, when the scene reads one.
    input: Option<Box<dyn LiveInput>>,
    /// One block of input, interleaved (`block × input channels`).
    input_buf: Vec<f64>,
    /// Where each block of input is kept after it is read, for handovers
    /// and the journal's recorded input.
    history: Option<HistoryWriter>,
    /// Control records in, their reports out (see [`Player::control_link`]).
    controls_in: Option<AudioControls>,
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
        let block = engine.block_size();
        let sample_rate = engine.sample_rate() as f64;
        Player {
            deck: Deck::new(Box::new(engine), device_channels),
            link: link_pair().1,
            timing: timing_pair().1,
            held: None,
            catching_up: None,
            capturing: None,
            capture_from: None,
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
            controls,
            origin,
            period_ns: 0,
            last_start_ns: 0,
            sample_rate,
            last_nan_events: 0,
            last_panics: 0,
            tap: None,
            input: None,
            input_buf: Vec::new(),
            history: None,
            controls_in: None,
        }
    }

    /// Connects a control input: the control thread's ends of new rings
    /// for control records and their reports (call it before the player
    /// goes to the callback; a link made before is cut off).
    pub fn control_link(&mut self) -> ControlLink {
        let (records, audio_records) = RingBuffer::new(CONTROL_RING);
        let (notes, audio_notes) = RingBuffer::new(NOTE_RING);
        let (audio_reports, reports) =
            RingBuffer::new(CONTROL_RING + CONTROL_QUEUE + NOTE_RING + NOTE_QUEUE);
        self.controls_in = Some(AudioControls {
            records: audio_records,
            notes: audio_notes,
            reports: audio_reports,
        });
        ControlLink {
            records,
            notes,
            reports,
        }
    }

    /// Takes control records for the next block: at most
    /// [`CONTROLS_PER_BLOCK`] and [`NOTES_PER_BLOCK`] note records, and
    /// only as many as the engine's queues and the report ring have room
    /// for (a record that arrives to a full queue waits in the ring, never
    /// dropped here). Real-time safe.
    fn take_controls(&mut self) {
        let Some(c) = &mut self.controls_in else {
            return;
        };
        let room = self.deck.control_room();
        let notes_room = self.deck.note_room();
        // Every record waiting in the engine has room for its report.
        let waiting = CONTROL_QUEUE - room + NOTE_QUEUE.saturating_sub(notes_room);
        let budget = CONTROLS_PER_BLOCK
            .min(room)
            .min(c.reports.slots().saturating_sub(waiting + 1));
        let (deck, meters) = (&mut self.deck, &self.meters);
        take_ring(&mut c.records, budget, &mut c.reports, meters, |r| {
            deck.push_control(r)
        });
        let budget = NOTES_PER_BLOCK
            .min(notes_room)
            .min(c.reports.slots().saturating_sub(waiting + budget + 1));
        take_ring(&mut c.notes, budget, &mut c.reports, meters, |r| {
            deck.push_note(r)
        });
    }

    /// Sends the reports of the records that landed in the last block.
    fn send_control_reports(&mut self) {
        let Some(c) = &mut self.controls_in else {
            self.deck.take_control_reports(|_| {});
            return;
        };
        let meters = &self.meters;
        self.deck.take_control_reports(|r| {
            if c.reports.push(r).is_err() {
                meters.control_reports_lost.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Takes one block of `input` before each block of output and gives it
    /// to the engines (call it before the player goes to the callback).
    pub fn set_input(&mut self, input: Box<dyn LiveInput>) {
        self.input_buf = vec![0.0; self.deck.block_size() * input.channels().max(1)];
        self.input = Some(input);
    }

    /// Keeps every block of input read (after [`set_input`](Self::set_input))
    /// in `history`, whose first frame is the engine's clock now.
    pub fn set_history(&mut self, history: HistoryWriter) {
        self.history = Some(history);
    }

    /// Records every performance frame the device gets (after the output
    /// stage: clip, stop fade) into `tap`.
    pub fn set_tap(&mut self, tap: crate::host::live::tap::Tap) {
        self.tap = Some(tap);
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

    /// Sends a reply, or keeps it for the next block if the queue is full
    /// or older replies are still waiting (replies keep their order: a
    /// `Retired` never overtakes its `Swapped`).
    fn send(&mut self, msg: FromAudio) {
        if !self.outbox.is_empty() {
            // Within the reserved capacity: no allocation.
            self.outbox.push_back(msg);
        } else if let Err(rtrb::PushError::Full(msg)) = self.link.replies.push(msg) {
            self.outbox.push_back(msg);
        }
    }

    /// Serves the control thread at a block boundary: state captures,
    /// offers (swap exactly at their sample, refuse late ones), and engines
    /// to send back.
    fn serve(&mut self) {
        while let Some(msg) = self.outbox.pop_front() {
            if let Err(rtrb::PushError::Full(msg)) = self.link.replies.push(msg) {
                self.outbox.push_front(msg);
                return;
            }
        }
        let clock = self.deck.clock();
        // A capture buffer stays in `capturing` while the engine copies into
        // it: a panic then unwinds through no box that owns it.
        if let Some(state) = &mut self.capturing {
            if !self.deck.continue_capture(state) {
                // Requests wait behind the capture.
                return;
            }
        }
        if let Some(state) = self.capturing.take() {
            let at = state.clock;
            self.send(FromAudio::Captured { state, at });
        }
        if let Some(w) = self.capture_from.take() {
            self.capture_at(w, clock);
            if self.capture_from.is_some() || self.capturing.is_some() {
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
            && self.capturing.is_none()
            && self.capture_from.is_none()
            && self.outbox.len() + 2 < OUTBOX
        {
            let Ok(req) = self.link.requests.pop() else {
                break;
            };
            match req {
                ToAudio::Capture(state) => {
                    let state = self.capturing.insert(state);
                    if self.deck.begin_capture(state) {
                        if let Some(state) = self.capturing.take() {
                            self.send(FromAudio::Captured { state, at: clock });
                        }
                    }
                }
                ToAudio::CaptureFrom { state, at } => self.capture_at(
                    Waiting {
                        state,
                        at,
                        exact: false,
                    },
                    clock,
                ),
                ToAudio::CaptureAt { state, at } => {
                    // Block-accurate: at the start of the block holding `at`.
                    let at = match self.deck.engine().profile().event_timing() {
                        EventTiming::SampleAccurate => at,
                        EventTiming::BlockAccurate => {
                            let b = self.deck.block_size() as u64;
                            at.saturating_sub(at.saturating_sub(clock) % b)
                        }
                    };
                    self.capture_at(
                        Waiting {
                            state,
                            at,
                            exact: true,
                        },
                        clock,
                    )
                }
                ToAudio::Offer { engine, at, fade } => self.offer(engine, at, fade, clock),
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

    /// Begins the capture `w` asks for once the clock has reached its
    /// sample (`clock` is a block boundary, or the sample an exact capture
    /// cut its block at); keeps it until then. Real-time safe.
    fn capture_at(&mut self, w: Waiting, clock: u64) {
        let Waiting { mut state, at, .. } = w;
        if clock < at {
            self.capture_from = Some(Waiting { state, ..w });
        } else if self.deck.begin_capture(&mut state) {
            self.send(FromAudio::Captured { state, at: clock });
        } else {
            self.capturing = Some(state);
        }
    }

    /// Where the block ending at `end` is cut next after `pos`: at an
    /// exact capture's sample, or at the sample a held offer swaps at
    /// once its engine stands there ([`Player::advance_held`]); `end` when
    /// neither lies inside.
    fn next_cut(&self, pos: u64, end: u64) -> u64 {
        let inside = |at: u64| (pos < at && at < end).then_some(at);
        let capture = self
            .capture_from
            .as_ref()
            .filter(|w| w.exact)
            .and_then(|w| inside(w.at));
        let swap = self
            .held
            .as_ref()
            .filter(|h| h.engine.clock() == h.at)
            .and_then(|h| inside(h.at));
        capture.into_iter().chain(swap).min().unwrap_or(end)
    }

    /// At the sample `at` a block was cut at: the exact capture asked for
    /// it begins (of the engine that played up to it), then the held
    /// offer for it swaps, unless a capture is still being copied.
    /// Real-time safe.
    fn at_cut(&mut self, at: u64) {
        if self
            .capture_from
            .as_ref()
            .is_some_and(|w| w.exact && w.at == at)
        {
            let w = self.capture_from.take().expect("checked");
            self.capture_at(w, at);
        }
        let due = self.held.as_ref().is_some_and(|h| h.at == at);
        if due && self.capturing.is_none() {
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
        self.written_frames
    }

    /// Frames of the stop fade.
    pub fn stop_fade_len(&self) -> u64 {
        self.fade_frames
    }

    /// Runs the engine of a held offer that swaps inside the next block
    /// (a timetagged switch) from the block's start, where it stands, up
    /// to its swap sample, in one part as a fast-forward to that sample
    /// runs it (`replay` does): the block is then cut there and it swaps.
    /// Not while a capture is copied (the offer is refused once the clock
    /// passes its sample). Real-time safe; bounded by one block of it.
    fn advance_held(&mut self, start: u64, end: u64) {
        if self.capturing.is_some() {
            return;
        }
        let width = self.input.as_ref().map_or(0, |i| i.channels());
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

    /// Renders the next engine block into the FIFO (device layout, clipped
    /// to ±1 for hearing safety, under the engine's FP mode). The block is
    /// cut where a timetagged snapshot or switch asks (see
    /// [`Player::next_cut`]), each part under the FP mode of the engine
    /// playing it.
    fn refill(&mut self) {
        self.serve();
        self.serve_timing();
        self.take_controls();
        let block = self.deck.block_size();
        let width = self.input.as_ref().map_or(0, |i| i.channels());
        if let Some(input) = &mut self.input {
            input.read(&mut self.input_buf);
            if let Some(history) = &mut self.history {
                history.push(&self.input_buf);
            }
        }
        let start = self.deck.clock();
        let end = start + block as u64;
        self.advance_held(start, end);
        let dc = self.device_channels;
        let mut done = 0;
        let mut peak = 0.0f32;
        loop {
            let pos = start + done as u64;
            let cut = self.next_cut(pos, end);
            let n = (cut - pos) as usize;
            if self.input.is_some() {
                let from = (done * width).min(self.input_buf.len());
                self.deck.load_input(&self.input_buf[from..], width, n);
            }
            self.deck.process(n);
            let frames = self.deck.frames();
            let part = &mut self.fifo[done * dc..(done + frames) * dc];
            peak = peak.max(self.deck.device_output(part));
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
        self.fifo_pos = 0;
        self.fifo_len = done * dc;
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

    /// Follows [`Controls::node_timing`] and answers a request for the
    /// per-node times, once per block. A request is taken only when its
    /// reply has room, so the reply never has to be dropped here.
    fn serve_timing(&mut self) {
        let on = self.controls.node_timing.load(Ordering::Relaxed);
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
        if self.controls.stop.load(Ordering::Relaxed) && self.fade_left_frames.is_none() {
            self.fade_left_frames = Some(self.fade_frames);
        }
        let written_before = self.written_frames;
        let stop_frame = self.controls.stop_frame();
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
                self.controls.stop.store(true, Ordering::Relaxed);
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

/// An engine the callback runs while it is in no field of the player (a
/// local): dropped as usual, but leaked if a panic unwinds through it,
/// never freed on the audio thread. After such a panic the player never
/// runs again ([`PlayerCell::fill`]), so this leaks at most once.
struct InFlight(std::mem::ManuallyDrop<Box<Engine>>);

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

/// Hands the player between the callback and the control thread without a
/// lock: the callback takes it for the duration of one call; the control
/// thread only touches it when no stream is running.
pub struct PlayerCell {
    player: UnsafeCell<Option<Player>>,
    /// The payload of a panic the callback caught outside every node: set
    /// once, kept (freed with the cell, off the audio thread). From then
    /// on the callback writes silence and never runs the player again.
    fatal: UnsafeCell<Option<Box<dyn std::any::Any + Send>>>,
    busy: AtomicBool,
    controls: Arc<Controls>,
    meters: Arc<Meters>,
}

thread_local! {
    /// Set while this thread runs the audio callback: the panic hook then
    /// stays silent (no printing, no I/O on the audio thread).
    static IN_AUDIO: Cell<bool> = const { Cell::new(false) };
}

/// Installs a panic hook that keeps the audio thread quiet: a panic there
/// is counted in the meters and reported by the control thread, never
/// printed from the callback. Panics elsewhere print as usual.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IN_AUDIO.with(Cell::get) {
            default(info);
        }
    }));
}

// SAFETY: access to `player` is serialised by `busy` (callback) and by the
// stream being stopped (control thread), see `with` and `take`.
unsafe impl Sync for PlayerCell {}

impl PlayerCell {
    pub fn new(p: Player) -> Arc<PlayerCell> {
        let controls = p.controls.clone();
        let meters = p.meters.clone();
        Arc::new(PlayerCell {
            player: UnsafeCell::new(Some(p)),
            fatal: UnsafeCell::new(None),
            busy: AtomicBool::new(false),
            controls,
            meters,
        })
    }

    /// Whether a stop was requested (Ctrl-C, `q`).
    pub fn stop_requested(&self) -> bool {
        self.controls.stop.load(Ordering::Relaxed)
    }

    /// Runs the player's callback unless another call holds it (then writes
    /// silence). Wait-free. A panic in a node is the engine's to contain (the
    /// node is muted). A panic anywhere else is fatal: the buffer is
    /// silence, it is counted in [`Meters::callback_panics`] (the control
    /// thread ends the session), and from then on every call writes silence
    /// without running the player, which keeps its engines for the control
    /// thread to drop ([`take`](Self::take)): nothing is freed on the audio
    /// thread, and a panic that would recur each call happens once.
    pub fn fill(&self, out: &mut [f32]) {
        if self.busy.swap(true, Ordering::Acquire) {
            out.iter_mut().for_each(|x| *x = 0.0);
            return;
        }
        IN_AUDIO.with(|f| f.set(true));
        // SAFETY: `busy` was false, so no one else is inside.
        let (player, fatal) = unsafe { (&mut *self.player.get(), &mut *self.fatal.get()) };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match player {
            Some(p) if fatal.is_none() => p.fill(out),
            _ => out.iter_mut().for_each(|x| *x = 0.0),
        }));
        if let Err(payload) = r {
            // Kept, not freed on the audio thread.
            *fatal = Some(payload);
            out.iter_mut().for_each(|x| *x = 0.0);
            self.meters.callback_panics.fetch_add(1, Ordering::Release);
        }
        IN_AUDIO.with(|f| f.set(false));
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
