//! The processor: the audio thread's half of an activated scene. It takes
//! host buffers of any size from 1 frame up to the maximum fixed at
//! activation and runs the engine in its own fixed blocks behind them,
//! one block late, so that what it plays does not depend on how the host
//! slices its buffers.

use super::event::{Event, EventKind};
use super::params::{ParamList, ParamRoutes};
use super::player::history::HistoryWriter;
use super::player::{Meters, PanicGuard, Player, Switches};
use crate::engine::{Deck, Engine, NoteRecord, NOTE_QUEUE};
use crate::graph::{midi_note_hz, NoteAction, PlanNote};
use crate::profile::Profile;
use rtrb::Producer;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why a [`Processor::process`] call was refused. The call then writes
/// silence into every output it was given and changes nothing else (no
/// input is taken, no event lands, the clock does not move).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessError {
    /// More frames than the maximum fixed at activation.
    TooManyFrames {
        /// The frames asked for.
        frames: usize,
        /// The maximum.
        max: usize,
    },
    /// Not one input buffer per input channel of the scene.
    InputChannels {
        /// Buffers given.
        given: usize,
        /// Channels the scene reads.
        expected: usize,
    },
    /// Not one output buffer per channel of the main bus.
    OutputChannels {
        /// Buffers given.
        given: usize,
        /// Channels of the main bus.
        expected: usize,
    },
    /// A buffer shorter than the call's frame count.
    ShortBuffer {
        /// Its length.
        len: usize,
        /// The frames asked for.
        frames: usize,
    },
    /// An event at or past the call's frame count.
    EventOffset {
        /// Its offset.
        offset: u32,
        /// The frames asked for.
        frames: usize,
    },
}

impl std::fmt::Display for ProcessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ProcessError::TooManyFrames { frames, max } => write!(
                f,
                "{frames} frames in one call: the processor was activated for at most {max}"
            ),
            ProcessError::InputChannels { given, expected } => write!(
                f,
                "{given} input buffers: the scene reads {expected} input channels"
            ),
            ProcessError::OutputChannels { given, expected } => write!(
                f,
                "{given} output buffers: the main bus has {expected} channels"
            ),
            ProcessError::ShortBuffer { len, frames } => {
                write!(f, "a buffer of {len} frames in a call of {frames} frames")
            }
            ProcessError::EventOffset { offset, frames } => {
                write!(f, "an event at frame {offset} of a call of {frames} frames")
            }
        }
    }
}

impl std::error::Error for ProcessError {}

/// The audio thread's half of an activated scene (see
/// [`Activation`](super::Activation)): call [`process`](Self::process)
/// from the host's audio callback. Everything else — edits, profile
/// switches, snapshots — goes through its [`Controller`](super::Controller)
/// and reaches the processor wait-free at a block boundary.
///
/// **Timing.** The engine runs in fixed blocks of B frames
/// ([`latency`](Self::latency)); the processor keeps that grid whatever
/// frame counts the host calls it with. Input frame h (counted from
/// activation) and an event at host frame h are engine sample h; output
/// frame h is engine sample h − B (silence for the first B frames). A block
/// runs only once all of its input and events have arrived, so the output
/// is the same, bit for bit under strict, however the host slices its
/// buffers, and equals an offline render delayed by B frames.
///
/// **Events** land at their sample on the engine that plays that sample:
/// an event in the same call as a swap, after the swap sample, lands on
/// the new engine, through the param routes that came with it. A param
/// event for the `profile` param cannot be applied on the audio thread:
/// it goes to the controller, whose [`poll`](super::Controller::poll)
/// starts the switch; it lands at the swap that follows, not at the
/// event's sample.
///
/// **Input.** A scene that reads the input keeps what it read in an
/// input history, so that an edit or a profile switch catches its new
/// engine up with the input it missed, as the command line's live
/// session does.
///
/// **Real time.** `process` never allocates, frees, locks, blocks or does
/// I/O; its work is bounded by the blocks that complete in the call.
/// Engines it stops playing go back to the controller to be dropped there.
/// A panic inside a node mutes that node; a panic anywhere else in the
/// engine is caught, and from then on every call writes silence (the
/// controller reports both, see [`Notice`](super::Notice)): a panic never
/// unwinds into the host.
///
/// The output is the main bus converted to f32 ([`process`](Self::process))
/// or as the engine made it ([`process_f64`](Self::process_f64)), without
/// the command line's clip to ±1 (a host has its own output stage).
///
/// ```
/// use morphrt_core::api::{Activation, Event};
///
/// let text = r#"{
///     "version": "1.0",
///     "sample_rate": 48000,
///     "nodes": [{ "id": "tone", "op": "sine", "params": { "freq": "1kHz", "amp": 0.5 } }],
///     "outputs": { "main": ["tone"] }
/// }"#;
/// let (controller, mut processor) = Activation::new(48000, 256)
///     .activate_scene(text, "tone.json")
///     .expect("a valid scene");
/// let amp = controller.params().index_of("tone.amp").expect("a param of the scene") as u32;
/// let mut out = vec![0.0f32; 100];
/// for _ in 0..10 {
///     // A call of 100 frames; the tone goes quiet at frame 10 of each call.
///     let events = [Event::param(10, amp, 0.0)];
///     processor.process(&[], &mut [&mut out[..]], &events, 100).expect("a valid call");
/// }
/// assert_eq!(processor.latency(), 128); // repro's block, the scene naming no profile
/// assert_eq!(processor.output_channels(), 1);
/// ```
pub struct Processor {
    player: Player,
    /// What `player` runs under: a panic outside every node trips it.
    guard: PanicGuard,
    /// The player's meters (its clock, the panics).
    meters: Arc<Meters>,
    /// What the controller reads of this processor.
    shared: Arc<ProcessorMeters>,
    block: usize,
    max_frames: usize,
    inputs: usize,
    outputs: usize,
    sample_rate: u32,
    /// Frames of the current block's input taken so far.
    filled: usize,
    /// Whether a block has been played (before that, the output is the
    /// latency's silence).
    primed: bool,
    /// Host frames processed since activation.
    frames: u64,
    seq: u64,
    /// The events of the block being filled, by engine sample, until the
    /// block runs: at most [`PENDING_EVENTS`] held (`Some`), and the
    /// places of changes a later one replaced (`None`), squeezed out when
    /// the room runs short (capacity twice [`PENDING_EVENTS`], reserved
    /// at activation, so that a squeeze comes at most once in
    /// [`PENDING_EVENTS`] events).
    pending: Vec<(u64, Option<EventKind>)>,
    /// How many of `pending` are held.
    holding: usize,
    /// Where in `pending` each param's last change went, by its index in
    /// the param list (`u32::MAX`: none yet), so that a change replacing
    /// one at its sample finds it at once, however many others that
    /// sample holds (reserved at activation). An entry may be left from
    /// an earlier block: it is trusted only where `pending` holds that
    /// param's change at that sample there.
    held: Vec<u32>,
    /// Where the last run of `pending` at one sample starts (as of the
    /// last change held; stale once `pending` is cleared).
    run: usize,
    /// `profile` param changes, to the controller.
    profiles: Producer<ProfileAsk>,
    /// Notes that ended, by the host frame whose output carries their
    /// end, until handed over (capacity [`NOTE_QUEUE`], sorted).
    ends: Vec<NoteEnd>,
}

/// A note whose sound ended (its voice went free, its note was stolen,
/// or every sound of its module stopped), as
/// [`Processor::take_note_ends`] hands it to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoteEnd {
    /// The host frame, counted from activation like
    /// [`Processor::frames`], whose output is the first without it (the
    /// engine sample it ended at, plus the latency).
    pub frame: u64,
    /// Its voice module (its index among the scene's voice modules).
    pub module: u16,
    /// Its MIDI note number (the nearest one to its pitch).
    pub key: u8,
}

/// The most events one engine block holds between calls; more are refused.
pub(crate) const PENDING_EVENTS: usize = 1024;

/// `profile` param changes in flight to the controller; more are refused.
pub(crate) const PROFILE_RING: usize = 64;

/// A `profile` param change: the engine sample of its event and the
/// profile it names.
pub(crate) type ProfileAsk = (u64, Profile);

/// What a processor reports to its controller, through atomics.
pub(crate) struct ProcessorMeters {
    /// The peak |sample| of each output channel since the last read, as
    /// f32 bits (which order like the non-negative floats they hold).
    peaks: Box<[AtomicU32]>,
    /// The highest load of one call since the last read, as f64 bits.
    load_max: AtomicU64,
    /// Calls that took longer than their frames last.
    xruns: AtomicU64,
    /// Events that did not land.
    refused: AtomicU64,
}

impl ProcessorMeters {
    /// Meters for `channels` output channels.
    pub(crate) fn new(channels: usize) -> ProcessorMeters {
        ProcessorMeters {
            peaks: (0..channels).map(|_| AtomicU32::new(0)).collect(),
            load_max: AtomicU64::new(0),
            xruns: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Reads them, taking the peaks and the load since the last read, with
    /// the player's count of node panics.
    pub(crate) fn read(&self, meters: &Meters) -> Metering {
        Metering {
            peaks: self
                .peaks
                .iter()
                .map(|p| f32::from_bits(p.swap(0, Ordering::Relaxed)))
                .collect(),
            load: f64::from_bits(self.load_max.swap(0, Ordering::Relaxed)),
            xruns: self.xruns.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            node_panics: meters.node_panics.load(Ordering::Relaxed),
        }
    }
}

/// A processor's meters, as its controller reads them
/// ([`Controller::meters`](super::Controller::meters)).
#[derive(Clone, Debug, PartialEq)]
pub struct Metering {
    /// The peak |sample| of each output channel since the last read.
    pub peaks: Vec<f32>,
    /// The highest load of one call since the last read: the time the call
    /// took over the time its frames last at the sample rate (1: a call
    /// took as long as the audio it made).
    pub load: f64,
    /// Calls, since activation, that took longer than their frames last.
    pub xruns: u64,
    /// Events, since activation, that did not land (as
    /// [`Processor::refused_events`] counts them).
    pub refused: u64,
    /// Nodes, since activation, that panicked (each is muted).
    pub node_panics: u64,
}

impl Processor {
    /// A processor playing `engine` in host calls of at most `max_frames`
    /// (changes of `params` params, the activation's list), sending
    /// `profile` param changes to `profiles`, reporting through `shared`,
    /// and keeping its input in `history` (a scene that reads the input).
    pub(crate) fn new(
        engine: Engine,
        max_frames: usize,
        params: usize,
        profiles: Producer<ProfileAsk>,
        shared: Arc<ProcessorMeters>,
        history: Option<HistoryWriter>,
    ) -> Processor {
        let block = engine.block_size();
        let inputs = engine.input_channels();
        let outputs = engine.channels();
        let sample_rate = engine.sample_rate();
        let meters = Arc::new(Meters::default());
        let mut player = Player::new(
            engine,
            outputs,
            None,
            1,
            meters.clone(),
            Arc::new(Switches::default()),
            Instant::now(),
        );
        player.set_input_width(inputs);
        player.set_unclipped();
        if let Some(h) = history {
            player.set_history(h);
        }
        Processor {
            player,
            guard: PanicGuard::default(),
            meters,
            shared,
            block,
            max_frames,
            inputs,
            outputs,
            sample_rate,
            filled: 0,
            primed: false,
            frames: 0,
            seq: 0,
            pending: Vec::with_capacity(2 * PENDING_EVENTS),
            holding: 0,
            held: vec![u32::MAX; params],
            run: 0,
            profiles,
            ends: Vec::with_capacity(NOTE_QUEUE),
        }
    }

    /// The meters its player reports through (the audio clock).
    pub(crate) fn meters(&self) -> Arc<Meters> {
        self.meters.clone()
    }

    /// The player, to link the controller to it (before playing).
    pub(crate) fn player_mut(&mut self) -> &mut Player {
        &mut self.player
    }

    /// Frames between an input (or event) and the output it makes: one
    /// engine block.
    pub fn latency(&self) -> usize {
        self.block
    }

    /// Input buffers each call takes: the channels the scene reads.
    pub fn input_channels(&self) -> usize {
        self.inputs
    }

    /// Output buffers each call fills: the channels of the main bus.
    pub fn output_channels(&self) -> usize {
        self.outputs
    }

    /// The sample rate chosen at activation.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The most frames one call may take.
    pub fn max_frames(&self) -> usize {
        self.max_frames
    }

    /// Host frames processed since activation.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Events that did not land: an unknown param index or voice module,
    /// a value out of the param's range, a param whose node an edit
    /// removed (or every target of whose control), a value of the wrong
    /// kind, or a full queue: more than `PENDING_EVENTS` (1024) events in
    /// one engine block (changes of one param at one sample count once:
    /// the last is kept), more `profile` changes than the controller
    /// took, or, at the block's last sample, more than the engine holds
    /// waiting ([`CHANGE_QUEUE`](crate::engine::CHANGE_QUEUE) node param
    /// changes, [`NOTE_QUEUE`](crate::engine::NOTE_QUEUE) notes). Before
    /// that sample a full engine queue only cuts the block: it plays up to
    /// the sample of the first event that does not fit, and the event
    /// lands there (a sample late only when the changes of that one sample
    /// fill the queue alone).
    pub fn refused_events(&self) -> u64 {
        self.shared.refused.load(Ordering::Relaxed)
    }

    /// Whether a panic outside every node stopped the processor: every
    /// call writes silence from then on (drop it and activate anew).
    pub fn panicked(&self) -> bool {
        self.guard.tripped()
    }

    /// The engine playing now.
    pub fn engine(&self) -> &Engine {
        self.player.engine()
    }

    /// Checks a call's buffers and events against the activation.
    fn check<S: HostSample>(
        &self,
        inputs: &[&[S]],
        outputs: &[&mut [S]],
        events: &[Event],
        frames: usize,
    ) -> Result<(), ProcessError> {
        if frames > self.max_frames {
            return Err(ProcessError::TooManyFrames {
                frames,
                max: self.max_frames,
            });
        }
        if inputs.len() != self.inputs {
            return Err(ProcessError::InputChannels {
                given: inputs.len(),
                expected: self.inputs,
            });
        }
        if outputs.len() != self.outputs {
            return Err(ProcessError::OutputChannels {
                given: outputs.len(),
                expected: self.outputs,
            });
        }
        let lens = inputs.iter().map(|b| b.len());
        if let Some(len) = lens
            .chain(outputs.iter().map(|b| b.len()))
            .find(|len| *len < frames)
        {
            return Err(ProcessError::ShortBuffer { len, frames });
        }
        if let Some(e) = events.iter().find(|e| e.offset as usize >= frames) {
            return Err(ProcessError::EventOffset {
                offset: e.offset,
                frames,
            });
        }
        Ok(())
    }

    /// Processes `frames` frames: takes `inputs` (one planar buffer per
    /// [input channel](Self::input_channels), at least `frames` long),
    /// lands `events` at their frames, and fills `outputs` (one per
    /// [output channel](Self::output_channels)) with the output
    /// [`latency`](Self::latency) frames behind. Any `frames` from 0 to
    /// the [maximum](Self::max_frames) fixed at activation.
    ///
    /// A call that does not fit the activation (too many frames, wrong
    /// channel counts, a short buffer, an event past the call) returns
    /// the error, writes silence into the outputs it was given, and
    /// changes nothing else. Never allocates, frees, locks or blocks.
    pub fn process(
        &mut self,
        inputs: &[&[f32]],
        outputs: &mut [&mut [f32]],
        events: &[Event],
        frames: usize,
    ) -> Result<(), ProcessError> {
        self.process_as(inputs, outputs, events, frames)
    }

    /// [`process`](Self::process) on f64 buffers, for a host that works at
    /// the engine's precision: the input reaches the engine as given, and
    /// the output is the main bus unconverted (under strict, an offline
    /// render's samples bit for bit, `latency` frames late).
    pub fn process_f64(
        &mut self,
        inputs: &[&[f64]],
        outputs: &mut [&mut [f64]],
        events: &[Event],
        frames: usize,
    ) -> Result<(), ProcessError> {
        self.process_as(inputs, outputs, events, frames)
    }

    fn process_as<S: HostSample>(
        &mut self,
        inputs: &[&[S]],
        outputs: &mut [&mut [S]],
        events: &[Event],
        frames: usize,
    ) -> Result<(), ProcessError> {
        if let Err(e) = self.check(inputs, outputs, events, frames) {
            for out in outputs.iter_mut() {
                out.fill(S::default());
            }
            return Err(e);
        }
        let started = Instant::now();
        // The engine sample of this call's first frame.
        let first = self.player.engine().clock() + self.filled as u64;
        let (b, ic, oc) = (self.block, self.inputs, self.outputs);
        let mut done = 0;
        while done < frames {
            let pos = self.filled;
            let n = (b - pos).min(frames - done);
            if self.primed && !self.guard.tripped() {
                let played = self.player.rendered();
                let exact = self.player.rendered_f64();
                for (c, out) in outputs.iter_mut().enumerate() {
                    let mut peak = 0.0f32;
                    for i in 0..n {
                        let j = (pos + i) * oc + c;
                        let x = played.get(j).copied().unwrap_or(0.0);
                        out[done + i] = S::played(x, exact.get(j).copied().unwrap_or(0.0));
                        peak = peak.max(x.abs());
                    }
                    if let Some(p) = self.shared.peaks.get(c) {
                        p.fetch_max(peak.to_bits(), Ordering::Relaxed);
                    }
                }
            } else {
                for out in outputs.iter_mut() {
                    out[done..done + n].fill(S::default());
                }
            }
            let buf = self.player.input_block();
            for (c, input) in inputs.iter().enumerate() {
                for i in 0..n {
                    buf[(pos + i) * ic + c] = input[done + i].to_f64();
                }
            }
            for e in events {
                let at = e.offset as usize;
                if (done..done + n).contains(&at) {
                    self.hold(first + at as u64, e.kind);
                }
            }
            self.filled += n;
            done += n;
            if self.filled == b {
                self.run_block();
                self.filled = 0;
                self.primed = true;
            }
        }
        self.frames += frames as u64;
        if frames > 0 {
            let busy = started.elapsed().as_secs_f64();
            let load = busy * self.sample_rate as f64 / frames as f64;
            self.shared
                .load_max
                .fetch_max(load.to_bits(), Ordering::Relaxed);
            if load > 1.0 {
                self.shared.xruns.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Lands `events` at the first frame of the next call, whatever their
    /// offsets, in their order: as if that call had been given them at
    /// offset 0 before its own. A host with more events for one frame than
    /// it gathers at once hands them over in parts this way (`process`
    /// with 0 frames cannot take an event). Never allocates, frees, locks
    /// or blocks.
    pub fn queue(&mut self, events: &[Event]) {
        let next = self.player.engine().clock() + self.filled as u64;
        for e in events {
            self.hold(next, e.kind);
        }
    }

    /// Hands `f` the notes that ended up to the output put out so far: each
    /// at most once, in the order of their frames, from the first call
    /// whose output reaches its end (so a host that asks after every
    /// call gets each within the call whose frames carry it). A
    /// processor keeps [`NOTE_QUEUE`] ends not yet handed over; more are
    /// not kept. Never allocates, frees, locks or blocks.
    pub fn take_note_ends(&mut self, mut f: impl FnMut(NoteEnd)) {
        let due = self.ends.partition_point(|e| e.frame < self.frames);
        for e in self.ends.drain(..due) {
            f(e);
        }
    }

    /// Keeps the engine's note ends, by the host frame that carries them.
    fn keep_note_ends(deck: &mut Deck, ends: &mut Vec<NoteEnd>, latency: u64) {
        deck.engine_mut().take_note_ends(|e| {
            if ends.len() == ends.capacity() {
                return;
            }
            let end = NoteEnd {
                frame: e.sample + latency,
                module: e.pool as u16,
                key: midi_key(e.key),
            };
            let at = ends.partition_point(|x| x.frame <= end.frame);
            ends.insert(at, end);
        });
    }

    /// Keeps one event until its block runs. A param event replaces one
    /// for the same param at the same sample (the engine would apply both
    /// there, in order, and keep the last), so any number of changes at
    /// one sample takes one place; refused at once when it is not a
    /// param of the activation's list, and when the block holds
    /// [`PENDING_EVENTS`] others already.
    fn hold(&mut self, sample: u64, kind: EventKind) {
        // Where the run at `sample` starts (recorded once something is
        // held in it). The last of `pending` is always held.
        let run = match self.pending.last() {
            Some((s, _)) if *s == sample => self.run,
            _ => self.pending.len(),
        };
        if let EventKind::Param { param, .. } = kind {
            let this = |k: &Option<EventKind>| matches!(k, Some(EventKind::Param { param: p, .. }) if *p == param);
            // Not a param of the list: it would be refused where it lands.
            let Some(&at) = self.held.get(param as usize) else {
                self.shared.refused.fetch_add(1, Ordering::Relaxed);
                return;
            };
            // The one change of this param in the last run at `sample`.
            let same = Some(at as usize).filter(|&i| {
                i >= run
                    && self
                        .pending
                        .get(i)
                        .is_some_and(|(s, k)| *s == sample && this(k))
            });
            if let Some(i) = same {
                // Out of its place, to the end: it follows every change
                // that came before it, as the last one does.
                self.pending[i].1 = None;
                self.holding -= 1;
            }
        }
        if self.holding == PENDING_EVENTS {
            self.shared.refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let run = if self.pending.len() == self.pending.capacity() {
            self.squeeze(run)
        } else {
            run
        };
        if let EventKind::Param { param, .. } = kind {
            self.held[param as usize] = self.pending.len() as u32;
        }
        self.run = run;
        self.holding += 1;
        self.pending.push((sample, Some(kind)));
    }

    /// Squeezes the places of replaced changes out of `pending`, keeping
    /// the order, and points `held` at the new places; the new place of
    /// `run`. In place: never allocates.
    fn squeeze(&mut self, run: usize) -> usize {
        let run = self.pending[..run]
            .iter()
            .filter(|(_, k)| k.is_some())
            .count();
        self.pending.retain(|(_, k)| k.is_some());
        for (j, (_, k)) in self.pending.iter().enumerate() {
            if let Some(EventKind::Param { param, .. }) = k {
                // Every param held is one of the list's (`hold`).
                self.held[*param as usize] = j as u32;
            }
        }
        run
    }

    /// Runs the block whose input is complete, under the panic guard:
    /// serves the controller (a swap due at this block happens first),
    /// lands the block's events on the engine that plays it, plays it.
    fn run_block(&mut self) {
        let Processor {
            player,
            guard,
            meters,
            shared,
            pending,
            holding,
            profiles,
            seq,
            ends,
            block,
            ..
        } = self;
        let latency = *block as u64;
        let ran = guard.run(meters, || {
            player.begin_block();
            // The events land in order as long as the engine's queues
            // have room; the block is played up to the first that does
            // not fit, and lands it then (one sample late only when
            // its own sample's changes fill the queue alone).
            let mut next = 0;
            player.end_block(|deck, pos, end| {
                Processor::keep_note_ends(deck, ends, latency);
                while let Some(&(sample, kind)) = pending.get(next) {
                    let Some(kind) = kind else {
                        // A change a later one replaced.
                        next += 1;
                        continue;
                    };
                    *seq += 1;
                    match land(deck, profiles, sample, kind, *seq) {
                        Landing::Full => return sample.max(pos + 1).min(end),
                        Landing::Landed => {}
                        Landing::Refused => {
                            shared.refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    next += 1;
                }
                end
            });
            Processor::keep_note_ends(player.deck_mut(), ends, latency);
            // What found the queues full at the block's last sample.
            let left = pending.get(next..).map_or(0, |left| {
                left.iter().filter(|(_, k)| k.is_some()).count() as u64
            });
            shared.refused.fetch_add(left, Ordering::Relaxed);
        });
        pending.clear();
        *holding = 0;
        if ran.is_none() {
            // Nothing plays from here on; the FIFO keeps the last block.
            self.primed = false;
        }
    }
}

/// A sample of a host's buffers: f32 ([`Processor::process`]) or f64
/// ([`Processor::process_f64`]).
trait HostSample: Copy + Default {
    /// The sample as the engine reads it.
    fn to_f64(self) -> f64;
    /// The output sample, from the block played in f32 and at the engine's
    /// precision.
    fn played(f32: f32, exact: f64) -> Self;
}

impl HostSample for f32 {
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn played(f32: f32, _: f64) -> f32 {
        f32
    }
}

impl HostSample for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn played(_: f32, exact: f64) -> f64 {
        exact
    }
}

/// The MIDI note nearest to the pitch whose f64 bits are `key`.
fn midi_key(key: u64) -> u8 {
    let hz = f64::from_bits(key);
    (0..=127u8)
        .min_by(|a, b| {
            let d = |k: u8| (midi_note_hz(k as f64) - hz).abs();
            d(*a).total_cmp(&d(*b))
        })
        .unwrap_or(0)
}

/// What became of an event handed to the engine.
enum Landing {
    Landed,
    /// Not now: the engine's queue has no room for it.
    Full,
    /// Never: see [`Processor::refused_events`].
    Refused,
}

impl From<bool> for Landing {
    fn from(landed: bool) -> Landing {
        if landed {
            Landing::Landed
        } else {
            Landing::Refused
        }
    }
}

/// Queues one event on the engine `deck` plays at engine sample
/// `sample`; a `profile` change goes to the controller. Real-time safe:
/// the param routes travel with the engine.
fn land(
    deck: &mut Deck,
    profiles: &mut Producer<ProfileAsk>,
    sample: u64,
    kind: EventKind,
    seq: u64,
) -> Landing {
    let engine = deck.engine().id();
    let note = |module: u16, action| NoteRecord {
        note: PlanNote {
            sample,
            pool: module as usize,
            action,
        },
        engine,
        seq,
    };
    match kind {
        EventKind::Param { param, value } if param as usize == ParamList::PROFILE => {
            match ParamList::profile(value) {
                Some(p) => profiles.push((sample, p)).is_ok().into(),
                None => Landing::Refused,
            }
        }
        EventKind::Param { param, value } => {
            let landing = deck
                .engine_mut()
                .with_attached::<ParamRoutes, _>(|routes, engine| {
                    let routes = routes?;
                    if engine.control_room() < routes.moves(param as usize) {
                        return Some(Landing::Full);
                    }
                    let mut landed = true;
                    let made = routes.records(param as usize, value, sample, seq, |r| {
                        landed &= engine.push_change(r).is_ok();
                    });
                    Some((made.is_ok() && landed).into())
                })
                .unwrap_or(Landing::Refused);
            // During a crossfade the engine fading out takes the change at
            // the same sample, through its own routes (once: not while the
            // playing engine has no room and the event waits).
            if !matches!(landing, Landing::Full) {
                if let Some(fading) = deck.fading_mut() {
                    fading.with_attached::<ParamRoutes, _>(|routes, engine| {
                        let made = routes?.records(param as usize, value, sample, 0, |r| {
                            let _ = engine.push_change(r);
                        });
                        made.ok()
                    });
                }
            }
            landing
        }
        EventKind::NoteOn {
            module,
            key,
            velocity,
        } => {
            let hz = midi_note_hz(key as f64);
            let action = NoteAction::On {
                key: hz.to_bits(),
                tag: 0,
                pitch_hz: hz,
                velocity: velocity as f64,
            };
            push_note(deck, note(module, action))
        }
        EventKind::NoteOff { module, key } => {
            let key = midi_note_hz(key as f64).to_bits();
            let action = NoteAction::Off { key, tag: 0 };
            push_note(deck, note(module, action))
        }
        EventKind::Sustain { module, down } => {
            push_note(deck, note(module, NoteAction::Sustain(down)))
        }
    }
}

/// Queues note record `r` on the playing engine of `deck`.
fn push_note(deck: &mut Deck, r: NoteRecord) -> Landing {
    if deck.note_room() == 0 {
        return Landing::Full;
    }
    deck.push_note(r).is_ok().into()
}
