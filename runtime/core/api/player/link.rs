//! The rings between the control thread and the callback, and the
//! messages of the handover that travel through them.

use super::Meters;
use crate::engine::{ChangeRecord, ChangeReport, Engine, EngineState, NoteRecord};
use rtrb::{Consumer, Producer, RingBuffer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A request from the control thread to the audio thread (the handover of
/// [`crate::engine::incoming`]).
pub enum ToAudio {
    /// From the next block boundary N, copy the playing engine's state into
    /// this buffer (shaped for that engine) and send it back: long
    /// histories are copied in parts over the following blocks, so the
    /// reply may come a few blocks after N, holding the state at N.
    Save(Box<EngineState>),
    /// As [`ToAudio::Save`], from the first block boundary at or after
    /// sample `at` (the save of a timetagged switch): the state at
    /// `at` itself when `at` is on the block grid. Requests behind it wait.
    SaveFrom {
        /// The buffer to copy into, shaped for the playing engine.
        state: Box<EngineState>,
        /// The sample the save starts at or after.
        at: u64,
    },
    /// As [`ToAudio::Save`], of the state at sample `at` exactly (a
    /// timetagged snapshot): the block that holds `at` is cut in two
    /// there. A playing engine whose profile is block-accurate (live) is
    /// saved at the start of that block instead, and one whose clock
    /// has passed `at` at the next block boundary. Requests behind it wait.
    SaveAt {
        /// The buffer to copy into, shaped for the playing engine.
        state: Box<EngineState>,
        /// The sample whose state is saved.
        at: u64,
    },
    /// Play `engine` from sample `at`, crossfading over `fade` frames (0:
    /// a cut). Refused if the clock has passed `at`. The engine stands at
    /// `at` (a block boundary), or at the start of the block that holds
    /// `at` (a timetagged switch): the callback then runs it up to `at`
    /// beside the first part of that block, cut at `at`, and swaps there.
    Offer {
        /// The engine to play, standing at `at`.
        engine: Box<Engine>,
        /// The sample it takes over at (S).
        at: u64,
        /// Frames of the crossfade from the playing engine (0: a cut).
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
        /// The engine to play, reading the session's input.
        engine: Box<Engine>,
        /// The block boundary it stands at.
        from: u64,
        /// Frames of the crossfade from the playing engine (0: a cut).
        fade: u64,
        /// The sample of a timetagged switch; `None` swaps as soon as it has caught up.
        at: Option<u64>,
    },
    /// Play `engine` from the next block boundary on, at its own clock (a
    /// restored snapshot): the playing engine is cut and retired, and the
    /// clock jumps to the engine's. Answered with
    /// [`FromAudio::Swapped`] at that clock, or refused while a crossfade
    /// runs or a retired engine waits.
    Restore(Box<Engine>),
}

/// How many blocks past its `from` a [`ToAudio::CatchUp`] engine may be
/// when it arrives.
///
/// Why the audio thread catches up at all: the new engine's fast-forward
/// from the save N to the swap S needs the input of N..S, and the
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
    Saved {
        /// The engine's state at `at`.
        state: Box<EngineState>,
        /// The sample the state is at (N).
        at: u64,
    },
    /// The offered engine plays from `at` (S).
    Swapped {
        /// The sample the offered engine's first output frame is at (S).
        at: u64,
    },
    /// The offer came too late: the clock was already at `clock`.
    Refused {
        /// The offered engine, sent back to be dropped off the audio thread.
        engine: Box<Engine>,
        /// The audio clock when the offer arrived.
        clock: u64,
    },
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
pub(super) struct AudioLink {
    pub(super) requests: Consumer<ToAudio>,
    pub(super) replies: Producer<FromAudio>,
}

/// A connected pair of ends (allocates: call it off the audio thread).
pub(super) fn link_pair() -> (Link, AudioLink) {
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

/// The control thread's ends of the rings that carry change records to
/// the callback and their reports back (see [`crate::engine::ChangeRecord`]).
///
/// Records and notes the callback may take as soon as they are pushed,
/// until [`ChangeLink::publish`] is first called: from then on it takes
/// only those whose `seq` is at most the last published, so a sender
/// that pushes a batch (an OSC bundle's notes and changes) and then
/// publishes its last `seq` has the whole batch land at one block,
/// never split by a block that started between two pushes.
pub struct ChangeLink {
    /// Change records for the playing engine.
    pub records: Producer<ChangeRecord>,
    /// Notes for voice modules, beside the records; their reports come
    /// back on `reports` too.
    pub notes: Producer<NoteRecord>,
    /// The report of every record and note the callback took or refused.
    pub reports: Consumer<ChangeReport>,
    published: Arc<AtomicU64>,
}

impl ChangeLink {
    /// The callback takes records and notes with a `seq` up to `seq`
    /// only (records pushed before, in increasing `seq` in each ring):
    /// call it after the last push of a batch.
    pub fn publish(&self, seq: u64) {
        self.published.store(seq, Ordering::Release);
    }
}

/// The callback's ends of a [`ChangeLink`].
pub(super) struct AudioChanges {
    pub(super) records: Consumer<ChangeRecord>,
    pub(super) notes: Consumer<NoteRecord>,
    pub(super) reports: Producer<ChangeReport>,
    /// The last `seq` published ([`UNPUBLISHED`]: every record passes).
    pub(super) published: Arc<AtomicU64>,
}

/// What a link publishes before its first [`ChangeLink::publish`].
pub(super) const UNPUBLISHED: u64 = u64::MAX;

/// A record's number, for the publish gate.
pub(super) trait Sequenced {
    fn seq(&self) -> u64;
}

impl Sequenced for ChangeRecord {
    fn seq(&self) -> u64 {
        self.seq
    }
}

impl Sequenced for NoteRecord {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// Connected ends of the change rings (allocates: call it off the audio
/// thread).
pub(super) fn change_pair(
    records: usize,
    notes: usize,
    reports: usize,
) -> (ChangeLink, AudioChanges) {
    let (records, audio_records) = RingBuffer::new(records);
    let (notes, audio_notes) = RingBuffer::new(notes);
    let (audio_reports, reports) = RingBuffer::new(reports);
    let published = Arc::new(AtomicU64::new(UNPUBLISHED));
    (
        ChangeLink {
            records,
            notes,
            reports,
            published: published.clone(),
        },
        AudioChanges {
            records: audio_records,
            notes: audio_notes,
            reports: audio_reports,
            published,
        },
    )
}

/// Records in flight to the callback; reports in flight back (each
/// record, and each record waiting in the engine, has room for its report).
pub const CHANGE_RING: usize = 4096;
/// The most records the callback takes before one block: what one block
/// spends on control input is bounded, whatever arrives.
pub const CHANGES_PER_BLOCK: usize = 256;
/// Note records in flight to the callback.
pub const NOTE_RING: usize = 1024;
/// The most note records the callback takes before one block.
pub const NOTES_PER_BLOCK: usize = 256;

/// Takes at most `budget` records with a `seq` up to `published` from
/// `ring` into `push`, sending the report of each it refuses (real-time
/// safe).
pub(super) fn take_ring<T: Sequenced>(
    ring: &mut Consumer<T>,
    budget: usize,
    published: u64,
    reports: &mut Producer<ChangeReport>,
    meters: &Meters,
    mut push: impl FnMut(T) -> Result<(), ChangeReport>,
) {
    for _ in 0..budget {
        if !ring.peek().is_ok_and(|r| r.seq() <= published) {
            break;
        }
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
pub(super) const OUTBOX: usize = 8;
