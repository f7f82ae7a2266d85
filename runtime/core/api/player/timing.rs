//! Per-node timing of the playing engine, copied out by the callback on
//! request (the `t` key's table).

use crate::engine::{Engine, NodeTime};
use rtrb::{Consumer, Producer, RingBuffer};

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
    pub(super) fn copy_from(&mut self, engine: &Engine) {
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
pub(super) struct TimingEnds {
    pub(super) requests: Consumer<Box<NodeTimes>>,
    pub(super) replies: Producer<Box<NodeTimes>>,
}

/// A connected pair of ends (allocates: call it off the audio thread).
pub(super) fn timing_pair() -> (TimingLink, TimingEnds) {
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
