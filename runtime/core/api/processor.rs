//! The processor: the audio thread's half of an activated scene. It takes
//! host buffers of any size from 1 frame up to the maximum fixed at
//! activation and runs the engine in its own fixed blocks behind them,
//! one block late, so that what it plays does not depend on how the host
//! slices its buffers.

use super::event::{Event, EventKind};
use super::player::{Meters, Player, Switches};
use crate::engine::{ChangeRecord, Engine, NoteRecord};
use crate::graph::{midi_note_hz, ControlValue, NoteAction, PlanNote};
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

/// A param a host addresses by index: a node's id and the param's index
/// in its operator, and where it is in the engine playing now.
pub(crate) struct ParamSlot {
    pub(crate) node: String,
    pub(crate) param: &'static str,
    pub(crate) index: u16,
    /// Schedule index in the playing engine (`None`: the node is gone).
    at: Option<u32>,
}

/// Every param an event may set, of every node of `engine`, in schedule
/// order: the processor's param indices.
pub(crate) fn param_slots(engine: &Engine) -> Vec<ParamSlot> {
    let mut out = Vec::new();
    for i in 0..engine.node_count() {
        let Some(op) = crate::ops::lookup(engine.node_op(i)) else {
            continue;
        };
        for (j, p) in op.params.iter().enumerate() {
            if p.settable_by_events {
                out.push(ParamSlot {
                    node: engine.node_id(i).to_string(),
                    param: p.name,
                    index: j as u16,
                    at: Some(i as u32),
                });
            }
        }
    }
    out
}

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
/// **Real time.** `process` never allocates, frees, locks, blocks or does
/// I/O; its work is bounded by the blocks that complete in the call.
/// Engines it stops playing go back to the controller to be dropped there.
///
/// The output is the main bus converted to f32, without the command
/// line's clip to ±1 (a host has its own output stage).
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
/// let amp = controller.param_index("tone", "amp").expect("a param of the scene");
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
    params: Vec<ParamSlot>,
    /// The engine `params` are resolved against.
    params_engine: u64,
    seq: u64,
    refused: u64,
}

impl Processor {
    /// A processor playing `engine` in host calls of at most `max_frames`.
    pub(crate) fn new(engine: Engine, max_frames: usize) -> Processor {
        let block = engine.block_size();
        let inputs = engine.input_channels();
        let outputs = engine.channels();
        let sample_rate = engine.sample_rate();
        let params = param_slots(&engine);
        let params_engine = engine.id();
        let mut player = Player::new(
            engine,
            outputs,
            None,
            1,
            Arc::new(Meters::default()),
            Arc::new(Switches::default()),
            Instant::now(),
        );
        player.set_input_width(inputs);
        player.set_unclipped();
        Processor {
            player,
            block,
            max_frames,
            inputs,
            outputs,
            sample_rate,
            filled: 0,
            primed: false,
            frames: 0,
            params,
            params_engine,
            seq: 0,
            refused: 0,
        }
    }

    /// The meters its player reports through (the audio clock).
    pub(crate) fn meters(&self) -> Arc<Meters> {
        self.player.meters().clone()
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
    /// a node an edit removed, a value of the wrong kind, or a full queue
    /// (the engine holds [`CHANGE_QUEUE`](crate::engine::CHANGE_QUEUE)
    /// param changes and [`NOTE_QUEUE`](crate::engine::NOTE_QUEUE) notes
    /// waiting for their sample).
    pub fn refused_events(&self) -> u64 {
        self.refused
    }

    /// The engine playing now.
    pub fn engine(&self) -> &Engine {
        self.player.engine()
    }

    /// Checks a call's buffers and events against the activation.
    fn check(
        &self,
        inputs: &[&[f32]],
        outputs: &[&mut [f32]],
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
        if let Err(e) = self.check(inputs, outputs, events, frames) {
            for out in outputs.iter_mut() {
                out.fill(0.0);
            }
            return Err(e);
        }
        self.resolve_params();
        // The engine sample of this call's first frame.
        let first = self.player.engine().clock() + self.filled as u64;
        for e in events {
            self.land(first + e.offset as u64, e.kind);
        }
        let (b, ic, oc) = (self.block, self.inputs, self.outputs);
        let mut done = 0;
        while done < frames {
            let pos = self.filled;
            let n = (b - pos).min(frames - done);
            if self.primed {
                let played = self.player.rendered();
                for (c, out) in outputs.iter_mut().enumerate() {
                    for i in 0..n {
                        out[done + i] = played.get((pos + i) * oc + c).copied().unwrap_or(0.0);
                    }
                }
            } else {
                for out in outputs.iter_mut() {
                    out[done..done + n].fill(0.0);
                }
            }
            let buf = self.player.input_block();
            for (c, input) in inputs.iter().enumerate() {
                for i in 0..n {
                    buf[(pos + i) * ic + c] = input[done + i] as f64;
                }
            }
            self.filled += n;
            done += n;
            if self.filled == b {
                self.player.next_block();
                self.filled = 0;
                self.primed = true;
                self.resolve_params();
            }
        }
        self.frames += frames as u64;
        Ok(())
    }

    /// Points the param table at the engine playing now, if it changed
    /// (after a swap): each node is looked up by id once, and each param
    /// kept only if the node's operator still has it at its index.
    /// Real-time safe: string comparisons only.
    fn resolve_params(&mut self) {
        let engine = self.player.engine();
        if engine.id() == self.params_engine {
            return;
        }
        self.params_engine = engine.id();
        // The slot whose node was looked up last, and where it is.
        let mut cached: Option<(usize, Option<usize>)> = None;
        for k in 0..self.params.len() {
            let node = match cached {
                Some((p, at)) if self.params[p].node == self.params[k].node => at,
                _ => {
                    let id = self.params[k].node.as_str();
                    (0..engine.node_count()).find(|i| engine.node_id(*i) == id)
                }
            };
            cached = Some((k, node));
            let slot = &mut self.params[k];
            slot.at = node
                .filter(|i| engine.param_index(*i, slot.param) == Some(slot.index as usize))
                .map(|i| i as u32);
        }
    }

    /// Queues one event on the playing engine at engine sample `sample`.
    fn land(&mut self, sample: u64, kind: EventKind) {
        self.seq += 1;
        let seq = self.seq;
        let deck = self.player.deck_mut();
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
        let landed = match kind {
            EventKind::Param { param, value } => {
                match self
                    .params
                    .get(param as usize)
                    .and_then(|s| Some((s.at?, s.index)))
                {
                    Some((node, index)) => deck
                        .push_change(ChangeRecord {
                            sample,
                            node,
                            param: index,
                            value: ControlValue::Number(value),
                            ramp: 0,
                            engine,
                            seq,
                        })
                        .is_ok(),
                    None => false,
                }
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
                deck.push_note(note(module, action)).is_ok()
            }
            EventKind::NoteOff { module, key } => {
                let key = midi_note_hz(key as f64).to_bits();
                let action = NoteAction::Off { key, tag: 0 };
                deck.push_note(note(module, action)).is_ok()
            }
            EventKind::Sustain { module, down } => deck
                .push_note(note(module, NoteAction::Sustain(down)))
                .is_ok(),
        };
        if !landed {
            self.refused += 1;
        }
    }
}
