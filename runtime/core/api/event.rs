//! What a host tells the processor in a `process` call besides audio:
//! param changes, notes and the sustain pedal, each stamped with the frame
//! of the call it happens at.

/// One event of a [`Processor::process`](super::Processor::process) call,
/// at frame `offset` of that call (0 ≤ `offset` < its frame count). It
/// lands at that frame's engine sample, as the scene's own events do: at
/// exactly that sample under strict and repro, at the start of the block
/// holding it under live.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// The frame of the call it happens at.
    pub offset: u32,
    /// What happens.
    pub kind: EventKind,
}

/// What an [`Event`] does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EventKind {
    /// Param `param` (its index in the activation's
    /// [`ParamList`](super::ParamList), [`Controller::params`](super::Controller::params))
    /// steps to `value`, in the param's own terms
    /// (see [`ParamList`](super::ParamList)): a node param's value in its
    /// canonical unit (Hz, s, linear amplitude, rad), a control's position
    /// 0…1, which its curve maps onto each of its targets.
    Param {
        /// The param's index.
        param: u32,
        /// Its new value.
        value: f64,
    },
    /// MIDI note `key` (0…127, 69 is 440 Hz) starts in voice module
    /// `module` (its index among the scene's voice modules, in the
    /// scene's order) at `velocity` 0…1.
    NoteOn {
        /// The voice module's index.
        module: u16,
        /// The MIDI note number.
        key: u8,
        /// The velocity, 0…1.
        velocity: f32,
    },
    /// MIDI note `key` of voice module `module` ends.
    NoteOff {
        /// The voice module's index.
        module: u16,
        /// The MIDI note number.
        key: u8,
    },
    /// The sustain pedal of voice module `module` goes down or up.
    Sustain {
        /// The voice module's index.
        module: u16,
        /// Down (true) or up.
        down: bool,
    },
}

impl Event {
    /// Param `param` (an index in [`Controller::params`](super::Controller::params))
    /// steps to `value` at frame `offset`.
    pub fn param(offset: u32, param: u32, value: f64) -> Event {
        Event {
            offset,
            kind: EventKind::Param { param, value },
        }
    }

    /// Note `key` of voice module 0 starts at frame `offset`.
    pub fn note_on(offset: u32, key: u8, velocity: f32) -> Event {
        Event {
            offset,
            kind: EventKind::NoteOn {
                module: 0,
                key,
                velocity,
            },
        }
    }

    /// Note `key` of voice module 0 ends at frame `offset`.
    pub fn note_off(offset: u32, key: u8) -> Event {
        Event {
            offset,
            kind: EventKind::NoteOff { module: 0, key },
        }
    }

    /// The sustain pedal of voice module 0 goes down or up at frame `offset`.
    pub fn sustain(offset: u32, down: bool) -> Event {
        Event {
            offset,
            kind: EventKind::Sustain { module: 0, down },
        }
    }
}
