//! Remote in, on the control thread: every transport (the OSC socket,
//! MIDI ports, a MIDI file; `host/live/transport.rs`) sends its
//! [`Message`]s through the hub's [`Inlet`] to one [`RemoteHub`], which
//! the run loop ticks. Changes are resolved against the engine playing now
//! into [`ChangeRecord`]s with a fresh `seq`, pushed through the
//! player's wait-free ring, and journaled at the sample the engine
//! reports they landed on, so `replay` lands them there too. Profile
//! switches, snapshots and stops are handed back to the session, as its
//! keys are.
//!
//! Notes for voice modules travel the same way as [`NoteRecord`]s on
//! their own ring, are reported on the same one and journaled as
//! `note` records; a change of a voice module's template node becomes one
//! change per voice's copy (`osc` → `osc#0`, `osc#1`, …), each journaled.
//!
//! A change that lands with a value its node will not play as set (an
//! oscillator's `freq` above Nyquist, which plays its alias) is warned
//! here, on the control thread, the first time for each node in the
//! session; the audio thread only applies it.
//!
//! Nothing here blocks or stops playback. When the ring is full, resolved
//! records wait in a backlog of at most [`BACKLOG`] records; a change that
//! finds it full is dropped, counted and answered with an error. A record
//! the engine reports stale (a handover swapped meanwhile) is resolved
//! again against the engine playing and sent again; one whose node an
//! edit removed is refused.
//!
//! **When a change lands.** `When::Now`: at the next block (sample 0: the
//! engine lands a past sample at its next block). `When::At(time)` (an OSC
//! timetag) and `When::Stamped(instant)` (a MIDI timestamp, plus
//! the fixed [`AudioClock::stamped_latency`], one device period and one block)
//! and `When::Frame(frame)` (an output frame a device callback read a
//! message at, plus the same latency: exact, whatever the jitter)
//! map to a sample through the audio clock: the engine clock the last
//! callback left (`Meters::clock`) at the time it ended
//! (`Meters::last_callback_ns` after the player's origin; before the
//! first callback, now), plus the time from then at the sample rate. A time that maps before the clock lands
//! at the next block; under strict and repro one ahead lands at exactly
//! its sample, under live at the start of its block. A time mapped again
//! (two datagrams timetagged for one instant, resolved in two ticks) lands
//! on the sample it did the first time, and a later time never before an
//! earlier one ([`Mapped`]).

use crate::engine::{ChangeRecord, NoteRecord, Outcome};
use crate::graph::ControlMap;
use crate::host::live::player::{ChangeLink, Meters};
use crate::host::live::session::PlayingControls;
use crate::host::record::journal::Record;
use crate::host::remote::{
    self, Change, Command, Mapping, Mappings, Message, Note, RemoteError, Reply, When,
};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Resolved records that may wait for room in the ring; a change that
/// finds this many waiting is dropped (counted, answered with an error).
pub const BACKLOG: usize = 65_536;

/// How far ahead a timetag may lie: a bundle further ahead is refused
/// (answered at once), not held for the session's whole length.
pub const MAX_AHEAD: Duration = Duration::from_secs(10);

/// The longest the hub waits for the rest of a packet whose first
/// message arrived (the transport sends them back to back).
const BATCH_WAIT: Duration = Duration::from_millis(100);

/// Times a record is resolved again after a handover made it stale
/// before it is refused.
const MAX_RESENDS: u32 = 8;

/// The least time between two warnings about refused or malformed
/// messages; those in between are counted in the next.
const WARN_EVERY: Duration = Duration::from_secs(1);

/// What the hub has done, for the status line and the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteCounts {
    /// Messages that arrived.
    pub received: u64,
    /// Param changes that landed.
    pub applied: u64,
    /// Messages and changes that could not be done (an unknown address,
    /// node or param, a wrong argument, a value out of range, a timetag
    /// too far ahead, a node an edit removed).
    pub refused: u64,
    /// Messages that could not be read at all (not OSC, bundles nested
    /// too deep).
    pub malformed: u64,
    /// Changes that found the backlog full, or had not landed when the
    /// session stopped.
    pub dropped: u64,
}

/// What a message asks the audio thread to do: a param change or a note.
enum Item {
    Change(Change),
    Note(Note),
}

/// A change or note sent to the audio thread, until its report comes back.
struct InFlight {
    item: Item,
    sample: u64,
    /// The message it came from (its reply waits for every change).
    message: u64,
    from: Arc<str>,
    resends: u32,
}

/// A message whose changes have not all been reported yet.
struct Answer {
    reply: Option<Reply>,
    left: usize,
    done: Vec<String>,
    errors: Vec<String>,
}

/// Where the audio clock is: what maps a time to a sample.
pub struct AudioClock {
    /// The player's meters: the engine clock its last callback left.
    pub meters: Arc<Meters>,
    /// The instant the player's times count from.
    pub origin: Instant,
    pub sample_rate: u32,
    /// Samples added to a [`When::Stamped`] instant or a [`When::Frame`].
    pub stamped_latency: u64,
    /// The engine sample the first output frame played (a resumed
    /// session's snapshot sample, else 0): output frame `f` plays sample
    /// `first_sample + f`.
    pub first_sample: u64,
}

/// The audio clock read once: every message of a tick maps through the
/// same reading, so two timetags a millisecond apart land a millisecond
/// of samples apart.
#[derive(Clone, Copy)]
struct Reading {
    /// The engine clock the last callback left.
    clock: u64,
    /// When that callback ended.
    last: Instant,
    /// Now, on both clocks (a timetag is wall-clock time).
    now: Instant,
    now_wall: SystemTime,
}

impl AudioClock {
    fn read(&self) -> Reading {
        let last_ns = self.meters.last_callback_ns.load(Ordering::Acquire);
        let now = Instant::now();
        // Before the first callback the clock's sample 0 has not played:
        // it plays no earlier than now, however long the device took to
        // start after the origin.
        let started = last_ns > 0;
        Reading {
            clock: self.meters.clock.load(Ordering::Relaxed),
            last: if started {
                self.origin + Duration::from_nanos(last_ns)
            } else {
                now
            },
            now,
            now_wall: SystemTime::now(),
        }
    }

    /// The sample `t` (plus `extra` samples) maps to, or 0 (the next
    /// block) when that is not ahead of the clock.
    fn sample_at(&self, r: &Reading, t: Instant, extra: u64) -> u64 {
        let ahead = match t.checked_duration_since(r.last) {
            Some(d) => d.as_secs_f64(),
            None => -r.last.duration_since(t).as_secs_f64(),
        };
        let clock = r.clock as f64;
        let s = clock + (ahead * self.sample_rate as f64).round() + extra as f64;
        if s > clock && s < u64::MAX as f64 {
            s as u64
        } else {
            0
        }
    }

    /// The sample a message asks to land at (0: the next block).
    fn sample_for(&self, r: &Reading, when: When) -> u64 {
        match when {
            When::Now => 0,
            When::At(time) => match time.duration_since(r.now_wall) {
                Ok(ahead) => self.sample_at(r, r.now + ahead, 0),
                Err(_) => 0,
            },
            When::Stamped(t) => self.sample_at(r, t, self.stamped_latency),
            When::Frame(f) => {
                let s = self
                    .first_sample
                    .saturating_add(f)
                    .saturating_add(self.stamped_latency);
                if s > r.clock {
                    s
                } else {
                    0
                }
            }
        }
    }
}

/// A command for the session (a profile switch, a snapshot, a stop), the
/// sample it asks to land at (0: now) and where its answer goes.
pub type SessionCommand = (Command, u64, Option<Reply>);

/// A record resolved for the audio thread, waiting for room in its ring.
enum Resolved {
    Control(ChangeRecord),
    Note(NoteRecord),
}

/// The control thread's end of control in (see the module docs).
pub struct RemoteHub {
    link: ChangeLink,
    tx: Sender<Message>,
    rx: Receiver<Message>,
    mappings: Mappings,
    /// What changes are resolved against: the engine playing now.
    current: Arc<Mapping>,
    clock: AudioClock,
    next_seq: u64,
    next_message: u64,
    backlog: VecDeque<Resolved>,
    /// By seq: every record in the backlog, the ring or an engine's queue.
    in_flight: HashMap<u64, InFlight>,
    answers: HashMap<u64, Answer>,
    /// Journal records not yet taken.
    journal: Vec<Record>,
    pub counts: RemoteCounts,
    last_warning: Option<Instant>,
    unsaid: u64,
    /// Nodes (a voice module's template node for its copies) a change has
    /// been warned about (see [`RemoteHub::lint`]): once each a session.
    linted: HashSet<String>,
    /// A message [`wait`](Self::wait) received, for the next tick.
    early: Option<Message>,
    /// The samples recent timed messages landed at.
    mapped: Mapped,
}

/// How many timed messages [`Mapped`] remembers.
const MAPPED: usize = 64;

/// The samples the most recent timed messages ([`When::At`],
/// [`When::Stamped`]) were mapped to. Two messages are often resolved in
/// two ticks whose clock readings round a time to samples one apart: a
/// time mapped again (two datagrams timetagged for one instant) lands on
/// the sample it did the first time, and a later time never lands before
/// an earlier one, so a note-on and its note-off sent for one instant
/// land on one sample, in the order they came.
#[derive(Default)]
struct Mapped {
    recent: VecDeque<(When, u64)>,
}

impl Mapped {
    /// The sample `when` lands at, given the sample `fresh` the clock
    /// reading maps it to (0: the next block).
    fn land(&mut self, when: When, fresh: u64) -> u64 {
        let key = match when {
            When::At(t) => Timed::At(t),
            When::Stamped(t) => Timed::Stamped(t),
            When::Now | When::Frame(_) => return fresh,
        };
        let mut sample = fresh;
        for &(w, s) in &self.recent {
            if w == when {
                return s;
            }
            let other = match w {
                When::At(t) => Timed::At(t),
                When::Stamped(t) => Timed::Stamped(t),
                When::Now | When::Frame(_) => continue,
            };
            match key.partial_cmp(&other) {
                Some(std::cmp::Ordering::Greater) if s > sample => sample = s,
                Some(std::cmp::Ordering::Less) if s != 0 && s < sample => sample = s,
                _ => {}
            }
        }
        if self.recent.len() == MAPPED {
            self.recent.pop_front();
        }
        self.recent.push_back((when, sample));
        sample
    }
}

/// A time a message is timed by; times of two kinds are not ordered.
#[derive(Clone, Copy, PartialEq)]
enum Timed {
    At(SystemTime),
    Stamped(Instant),
}

impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Timed) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Timed::At(a), Timed::At(b)) => a.partial_cmp(b),
            (Timed::Stamped(a), Timed::Stamped(b)) => a.partial_cmp(b),
            _ => None,
        }
    }
}

/// The hub's end transports deliver to: the channel they send on and the
/// mappings they decode against. Made before the hub (transports open
/// before the device does, so a wrong address or name stops `run` before
/// anything plays); the hub takes it over and keeps the mappings current.
pub struct Inlet {
    pub sender: Sender<Message>,
    receiver: Receiver<Message>,
    pub mappings: Mappings,
}

impl Inlet {
    /// For a scene with these `controls` at `sample_rate` (the engine's
    /// nodes are filled in by the hub).
    pub fn new(controls: &[ControlMap], sample_rate: u32) -> Inlet {
        let (sender, receiver) = channel();
        Inlet {
            sender,
            receiver,
            mappings: Mappings::new(Mapping {
                controls: Arc::new(controls.to_vec()),
                table: Arc::new(crate::engine::NodeTable::default()),
                sample_rate,
            }),
        }
    }
}

impl RemoteHub {
    /// [`RemoteHub::new`] over the channel and mappings of `inlet`.
    pub fn with_inlet(
        inlet: Inlet,
        link: ChangeLink,
        first: PlayingControls,
        clock: AudioClock,
    ) -> RemoteHub {
        let mut hub = RemoteHub::new(link, first, clock);
        hub.tx = inlet.sender;
        hub.rx = inlet.receiver;
        inlet.mappings.set((*hub.current).clone());
        hub.mappings = inlet.mappings;
        hub
    }

    /// A hub feeding `link` (the player's, taken before it went to the
    /// callback), resolving against `first` (the first engine's controls
    /// and nodes) at the clock's sample rate; the audio clock is read as
    /// `clock` says.
    pub fn new(link: ChangeLink, first: PlayingControls, clock: AudioClock) -> RemoteHub {
        // Records pushed from here on wait for their tick's publish.
        link.publish(0);
        let (tx, rx) = channel();
        let first = Mapping {
            controls: first.maps,
            table: first.table,
            sample_rate: clock.sample_rate,
        };
        RemoteHub {
            link,
            tx,
            rx,
            mappings: Mappings::new(first.clone()),
            current: Arc::new(first),
            clock,
            next_seq: 1,
            next_message: 1,
            backlog: VecDeque::new(),
            in_flight: HashMap::new(),
            answers: HashMap::new(),
            journal: Vec::new(),
            counts: RemoteCounts::default(),
            last_warning: None,
            unsaid: 0,
            linted: HashSet::new(),
            early: None,
            mapped: Mapped::default(),
        }
    }

    /// The end a transport sends its messages on (one clone each).
    pub fn sender(&self) -> Sender<Message> {
        self.tx.clone()
    }

    /// What transports resolve messages against, kept current by the hub.
    pub fn mappings(&self) -> Mappings {
        self.mappings.clone()
    }

    /// The engine playing now has these controls and nodes (called every
    /// tick; a handover that swapped changes them).
    pub fn follow(&mut self, playing: &PlayingControls) {
        if Arc::ptr_eq(&self.current.table, &playing.table)
            && Arc::ptr_eq(&self.current.controls, &playing.maps)
        {
            return;
        }
        let m = Mapping {
            controls: playing.maps.clone(),
            table: playing.table.clone(),
            sample_rate: self.current.sample_rate,
        };
        self.mappings.set(m.clone());
        self.current = Arc::new(m);
    }

    /// Takes what arrived and what the audio thread reported, and pushes
    /// what waits. Returns the commands for the session (profile switches,
    /// snapshots, stops) with the sample they ask to land at (0: now, as
    /// for a change) and their replies; never blocks.
    pub fn tick(&mut self, log: &mut dyn Write) -> Vec<SessionCommand> {
        self.take_reports(log);
        let mut session = Vec::new();
        let reading = self.clock.read();
        let mut next = self.early.take().or_else(|| self.rx.try_recv().ok());
        while let Some(m) = next {
            // The rest of a packet follows at once: wait for it, so the
            // packet is published in one piece.
            let rest = m.batch_rest;
            if let Some(c) = self.take(m, &reading, log) {
                session.push(c);
            }
            next = if rest > 0 {
                self.rx.recv_timeout(BATCH_WAIT).ok()
            } else {
                self.rx.try_recv().ok()
            };
        }
        self.flush();
        session
    }

    /// Waits up to `max` for a message, so that the control loop ticks as
    /// soon as one arrives instead of at its next 5 ms: a message then
    /// reaches the audio thread within about a block. Returns at once if
    /// one is waiting already.
    pub fn wait(&mut self, max: Duration) {
        if self.early.is_none() {
            self.early = self.rx.recv_timeout(max).ok();
        }
    }

    /// The journal records since the last call: changes where they
    /// landed, refusals.
    pub fn take_journal(&mut self) -> Vec<Record> {
        std::mem::take(&mut self.journal)
    }

    /// After playback: the last reports, then every change that never
    /// landed is answered with an error and counted as dropped.
    pub fn finish(&mut self, log: &mut dyn Write) {
        self.take_reports(log);
        let left: Vec<u64> = self.in_flight.keys().copied().collect();
        for seq in left {
            if let Some(f) = self.in_flight.remove(&seq) {
                self.counts.dropped += 1;
                self.answer(
                    f.message,
                    Err(RemoteError::NotLanded(
                        "the session stopped before it landed".to_string(),
                    )),
                );
            }
        }
        self.backlog.clear();
    }

    /// `osc 120 in: 118 applied, 1 refused, 1 malformed`: the status
    /// line's part, empty before anything arrived.
    pub fn status(&self) -> String {
        let c = &self.counts;
        if c.received == 0 {
            return String::new();
        }
        let mut s = format!("  control {} in: {} applied", c.received, c.applied);
        for (n, what) in [
            (c.refused, "refused"),
            (c.malformed, "malformed"),
            (c.dropped, "dropped"),
        ] {
            if n > 0 {
                s += &format!(", {n} {what}");
            }
        }
        s
    }

    /// The summary line: every counter.
    pub fn summary(&self) -> String {
        let c = &self.counts;
        format!(
            "control: {} messages received; {} changes applied, {} refused, {} dropped; {} malformed",
            c.received, c.applied, c.refused, c.dropped, c.malformed
        )
    }

    /// One message: changes are resolved and queued; the rest is for the
    /// session.
    fn take(
        &mut self,
        m: Message,
        reading: &Reading,
        log: &mut dyn Write,
    ) -> Option<SessionCommand> {
        self.counts.received += 1;
        let Message {
            command,
            when,
            from,
            reply,
            ..
        } = m;
        let too_far = match (&command, when) {
            (Ok(_), When::At(t)) => t
                .duration_since(reading.now_wall)
                .ok()
                .filter(|ahead| *ahead > MAX_AHEAD),
            _ => None,
        };
        let command = match too_far {
            Some(ahead) => Err(RemoteError::TooFarAhead {
                ahead,
                max: MAX_AHEAD,
            }),
            None => command,
        };
        let (notes, changes) = match command {
            Err(e) => {
                if e.is_malformed() {
                    self.counts.malformed += 1;
                } else {
                    self.counts.refused += 1;
                }
                self.refusal(&from, &e, log);
                if let Some(r) = reply {
                    r(Err(e.to_string()));
                }
                return None;
            }
            Ok(Command::Changes(v)) => (Vec::new(), v),
            Ok(Command::Notes { notes, changes }) => (notes, changes),
            Ok(other) => {
                let sample = self.clock.sample_for(reading, when);
                return Some((other, self.mapped.land(when, sample), reply));
            }
        };
        // A voice module's template node: one change per voice's copy.
        let table = self.current.table.clone();
        let items: Vec<Item> = changes
            .into_iter()
            .flat_map(|c| remote::fan_out(c, &table))
            .map(Item::Change)
            .chain(notes.into_iter().map(Item::Note))
            .collect();
        let id = self.next_message;
        self.next_message += 1;
        self.answers.insert(
            id,
            Answer {
                reply,
                left: items.len(),
                done: Vec::new(),
                errors: Vec::new(),
            },
        );
        let from: Arc<str> = from.into();
        let sample = self.mapped.land(when, self.clock.sample_for(reading, when));
        for item in items {
            self.submit(
                InFlight {
                    item,
                    sample,
                    message: id,
                    from: from.clone(),
                    resends: 0,
                },
                log,
            );
        }
        if self.answers.get(&id).is_some_and(|a| a.left == 0) {
            self.answer(id, Ok(String::new()));
        }
        None
    }

    /// Resolves a change against the engine playing and puts it in the
    /// backlog, or refuses or drops it.
    fn submit(&mut self, f: InFlight, log: &mut dyn Write) {
        if self.backlog.len() >= BACKLOG {
            self.counts.dropped += 1;
            self.answer(
                f.message,
                Err(RemoteError::NotLanded(format!(
                    "dropped: {BACKLOG} changes are waiting for the audio thread already"
                ))),
            );
            return;
        }
        let seq = self.next_seq;
        let table = &self.current.table;
        let resolved = match &f.item {
            Item::Change(c) => remote::record(c, table, f.sample, seq).map(Resolved::Control),
            Item::Note(n) => remote::note_record(n, table, f.sample, seq).map(Resolved::Note),
        };
        match resolved {
            Ok(r) => {
                self.next_seq += 1;
                self.backlog.push_back(r);
                self.in_flight.insert(seq, f);
            }
            Err(e) => {
                self.counts.refused += 1;
                self.refusal(&f.from, &e, log);
                self.answer(f.message, Err(e));
            }
        }
    }

    /// Pushes waiting records into the rings while they have room, then
    /// publishes them together: what one tick took (an OSC bundle's
    /// notes and changes) lands at one block.
    fn flush(&mut self) {
        let mut last = None;
        while let Some(r) = self.backlog.pop_front() {
            let (seq, full) = match r {
                Resolved::Control(c) => (
                    c.seq,
                    match self.link.records.push(c) {
                        Err(rtrb::PushError::Full(c)) => Some(Resolved::Control(c)),
                        Ok(()) => None,
                    },
                ),
                Resolved::Note(n) => (
                    n.seq,
                    match self.link.notes.push(n) {
                        Err(rtrb::PushError::Full(n)) => Some(Resolved::Note(n)),
                        Ok(()) => None,
                    },
                ),
            };
            if let Some(r) = full {
                self.backlog.push_front(r);
                break;
            }
            last = Some(seq);
        }
        if let Some(seq) = last {
            self.link.publish(seq);
        }
    }

    /// What the audio thread reported: landed changes are journaled and
    /// answered, stale ones resolved again, removed ones refused.
    fn take_reports(&mut self, log: &mut dyn Write) {
        while let Ok(report) = self.link.reports.pop() {
            let Some(mut f) = self.in_flight.remove(&report.seq) else {
                continue;
            };
            match report.outcome {
                Outcome::Applied { at, .. } => self.applied(f, at, log),
                Outcome::Stale | Outcome::Full if f.resends < MAX_RESENDS => {
                    f.resends += 1;
                    self.submit(f, log);
                }
                Outcome::Stale | Outcome::Full => self.refused(
                    f,
                    RemoteError::NotLanded("the engine changed under it too often".to_string()),
                    log,
                ),
                Outcome::WrongKind => {
                    let e = match &f.item {
                        Item::Change(c) => RemoteError::Value(format!(
                            "{:?} is not a value param `{}` takes",
                            c.value, c.param
                        )),
                        Item::Note(n) => {
                            RemoteError::Value(format!("a note for `{}` was refused", n.module))
                        }
                    };
                    self.refused(f, e, log);
                }
                Outcome::Removed => {
                    let e = match &f.item {
                        Item::Change(c) => RemoteError::NotLanded(format!(
                            "node `{}` left the scene before it landed",
                            c.node
                        )),
                        Item::Note(n) => RemoteError::NotLanded(format!(
                            "voice module `{}` left the scene before it landed",
                            n.module
                        )),
                    };
                    self.refused(f, e, log);
                }
            }
        }
    }

    fn applied(&mut self, f: InFlight, at: u64, log: &mut dyn Write) {
        self.counts.applied += 1;
        let from = f.from.to_string();
        let text = match f.item {
            Item::Change(change) => {
                self.lint(&change, at, &from, log);
                let text =
                    remote::change_text(&change, &self.current.table, self.current.sample_rate);
                self.journal.push(Record::Control {
                    at,
                    node: change.node,
                    param: change.param,
                    value: change.value,
                    ramp: change.ramp,
                    from,
                });
                text
            }
            Item::Note(note) => {
                let text = note.text();
                self.journal.push(Record::Note {
                    at,
                    module: note.module,
                    action: note.action,
                    from,
                });
                text
            }
        };
        self.answer(f.message, Ok(format!("{text} at sample {at}")));
    }

    /// Warns a change that landed with a value its node will not play as
    /// set (an oscillator's `freq` above Nyquist plays its alias; the rule
    /// of [`remote::change_lint`]), the first time only for each node: a
    /// controller sending thousands of such values draws one line. The
    /// copies of a voice module's template node count as that node.
    fn lint(&mut self, change: &Change, at: u64, from: &str, log: &mut dyn Write) {
        let node = change.node.split('#').next().unwrap_or(&change.node);
        if self.linted.contains(node) {
            return;
        }
        let Some(lint) = remote::change_lint(change, &self.current.table, self.current.sample_rate)
        else {
            return;
        };
        self.linted.insert(node.to_string());
        let _ = writeln!(
            log,
            "\nwarning: node `{node}`: a control sets {} (at sample {at}, from {from}; warned once for this node)",
            lint.message
        );
    }

    fn refused(&mut self, f: InFlight, error: RemoteError, log: &mut dyn Write) {
        self.counts.refused += 1;
        self.refusal(&f.from, &error, log);
        self.answer(f.message, Err(error));
    }

    /// Journals a message that changed nothing and warns (at most once
    /// per [`WARN_EVERY`], counting those not said).
    fn refusal(&mut self, from: &str, error: &RemoteError, log: &mut dyn Write) {
        self.journal.push(Record::ControlError {
            at: self.clock.meters.clock.load(Ordering::Relaxed),
            from: from.to_string(),
            error: error.to_string(),
        });
        if self.last_warning.is_some_and(|t| t.elapsed() < WARN_EVERY) {
            self.unsaid += 1;
            return;
        }
        self.last_warning = Some(Instant::now());
        let more = match std::mem::take(&mut self.unsaid) {
            0 => String::new(),
            n => format!(" ({n} more since the last warning)"),
        };
        let _ = writeln!(log, "\nwarning: control refused: {from}: {error}{more}");
    }

    /// Records one change's outcome for its message; the reply goes once
    /// every change of it is in, as text (see [`Reply`]).
    fn answer(&mut self, message: u64, outcome: Result<String, RemoteError>) {
        let Some(a) = self.answers.get_mut(&message) else {
            return;
        };
        match outcome {
            Ok(t) if !t.is_empty() => a.done.push(t),
            Ok(_) => {}
            Err(e) => a.errors.push(e.to_string()),
        }
        a.left = a.left.saturating_sub(1);
        if a.left > 0 {
            return;
        }
        let a = self.answers.remove(&message).expect("checked");
        if let Some(reply) = a.reply {
            reply(if a.errors.is_empty() {
                Ok(a.done.join("; "))
            } else {
                Err(a.errors.join("; "))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_mapped_again_lands_where_it_did_and_later_times_never_before_it() {
        let mut m = Mapped::default();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let ms = Duration::from_millis(1);
        assert_eq!(m.land(When::At(t), 48_000), 48_000);
        // The next tick's reading rounds the same instant one sample off.
        assert_eq!(m.land(When::At(t), 47_999), 48_000);
        assert_eq!(m.land(When::At(t), 48_001), 48_000);
        // A later time the reading puts a sample early lands with it, not
        // before; an earlier one put late lands with it, not after.
        assert_eq!(m.land(When::At(t + ms / 10), 47_999), 48_000);
        assert_eq!(m.land(When::At(t - ms / 10), 48_002), 48_000);
        // Times far enough apart keep what the reading says.
        assert_eq!(m.land(When::At(t + ms * 10), 48_480), 48_480);
        assert_eq!(m.land(When::At(t - ms * 10), 47_520), 47_520);
        // Now and frames are exact already: not remembered.
        assert_eq!(m.land(When::Now, 0), 0);
        assert_eq!(m.land(When::Frame(5), 77), 77);
        // A MIDI stamp is not ordered against a timetag.
        let i = Instant::now();
        assert_eq!(m.land(When::Stamped(i), 10), 10);
        assert_eq!(m.land(When::Stamped(i), 11), 10);
    }

    #[test]
    fn only_the_most_recent_times_are_remembered() {
        let mut m = Mapped::default();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let s = Duration::from_secs(1);
        for k in 0..=MAPPED as u32 {
            m.land(When::At(t + s * k), 1_000 + u64::from(k) * 48_000);
        }
        assert_eq!(m.recent.len(), MAPPED);
        // The second is remembered; the first is forgotten: mapped afresh.
        assert_eq!(m.land(When::At(t + s), 5), 49_000);
        assert_eq!(m.land(When::At(t), 900), 900);
    }
}
