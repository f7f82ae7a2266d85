//! MIDI messages onto params: the scene's MIDI `controls`
//! ([`ControlMap`]) turn one channel message (a status byte and its data
//! bytes, as a port or a MIDI file delivers it) into [`Change`]s, the same
//! way live and offline. Pure: no I/O, no clock; the only state is what
//! MIDI itself makes a receiver keep.
//!
//! # The rules
//!
//! - **Channels** are 1…16; a control without `channel` listens on all.
//! - **CC, 7-bit** (`{"cc": 74}`): value v → position x = v/127 →
//!   [`ControlTarget::scale`].
//! - **CC, 14-bit** (`{"cc": 1, "lsb": 33}`): x = (msb·128 + lsb)/16383.
//!   An MSB (controller `cc`) alone sets the fine part to 0, as the MIDI
//!   spec says; an LSB (controller `lsb`) updates the fine part of the last
//!   MSB on its channel (0 before any). Each moves the param.
//! - **Pitch bend** (`{"bend": true}`): the 14-bit value v → x = v/16383
//!   (centre 8192 → 0.50003…).
//! - **Aftertouch** (`{"aftertouch": true}`, channel pressure): pressure
//!   p → x = p/127. **Poly aftertouch** (`{"poly_aftertouch": true}`, key
//!   pressure of any note) likewise; onto a voice module's template node
//!   it becomes a [`NoteAction::Touch`] of the module for the pressed
//!   note's key, which moves that param of the voice playing the note
//!   alone (no voice plays it: nothing moves); onto any other node it
//!   moves the param whatever the note.
//! - **Program change** (`{"program": true}`): nothing unless mapped; for an
//!   integer or enum target the program number is the value itself
//!   ([`ControlTarget::raw`]: out of range is an error, not clamped), else
//!   x = p/127.
//! - **Notes** (`{"note": "any"}` or a number), one monophonic voice per
//!   control with last-note priority. Note-on (velocity > 0) pushes the
//!   note on the control's held stack and sets the gate target to its max
//!   (`scale(1.0)`), `pitch` to the note ([`ControlTarget::pitch`]) and
//!   `velocity` to `scale(v/127)`. Note-off (or note-on with velocity 0)
//!   removes the note from the stack: when it was the sounding (newest)
//!   note and an older one is still held, `pitch` returns to that note
//!   without a new gate or velocity (no retrigger); when none is held the
//!   gate goes to its min (`scale(0.0)`); a note that was not sounding
//!   changes nothing. A control that plays a voice `module` is not played
//!   here (it has no param target).
//! - **Notes for a voice module** (`{"midi": {"note": …}, "module": "pad"}`):
//!   a note-on (velocity > 0) becomes a [`Note`] on for the module at
//!   velocity v/127, its key the bits of its pitch in Hz (the scene's note
//!   events' MIDI → Hz); a note-off (or velocity 0) a note-off of that
//!   key. Every note is passed on; the voice module's allocator decides.
//! - **Sustain**: CC 64 on a channel a voice-module note control listens
//!   on is the pedal of every module such a control plays (value ≥ 64:
//!   down), unless a control maps CC 64 on that channel to a param.
//! - **Pitch bend of voices**: a bend on a channel a voice-module note
//!   control listens on bends every voice of the module that control
//!   plays by its `bend` range r semitones ([`NoteAction::Bend`]): v ≥
//!   8192 bends (v − 8192)/8191·r up, below it (v − 8192)/8192·r, so
//!   the wheel's ends are exactly ±r and its centre 0. A control with
//!   range 0 bends nothing; a `"bend": true` control on that channel
//!   takes the wheel instead.
//! - **Panic**: CC 123 (all notes off) on such a channel releases every
//!   voice of those modules (held by the pedal too; the pedal comes up);
//!   CC 120 (all sound off) stops every voice at once, without its
//!   release. Either closes the gate of a mono note control on that
//!   channel. A control that maps the controller there takes it instead.
//! - **Ramps**: every change carries the control's `ramp`, except values
//!   that cannot glide (integers, enums, booleans), which step.
//! - Messages no control listens to (system messages, an unmapped
//!   controller or pressure) map to nothing: [`Mapped::matched`] is false.

use super::{Change, Note};
use crate::graph::{ControlMap, ControlSource, ControlTarget, ControlValue, NoteAction};
use crate::scene::MidiSource;

/// What one message mapped to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mapped {
    /// The changes, in the order of the scene's `controls`.
    pub changes: Vec<Change>,
    /// Notes for voice modules, likewise.
    pub notes: Vec<Note>,
    /// Some control listens to this message (a note-off that releases
    /// nothing still counts, though it changes nothing).
    pub matched: bool,
    /// Values a control could not set (a program number out of range).
    pub errors: Vec<super::RemoteError>,
}

/// A channel message, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Note-on with velocity > 0.
    NoteOn {
        note: u8,
        velocity: u8,
    },
    /// Note-off, or note-on with velocity 0.
    NoteOff {
        note: u8,
    },
    Cc {
        cc: u8,
        value: u8,
    },
    Program {
        program: u8,
    },
    /// The 14-bit value, 0…16383 (centre 8192).
    Bend {
        value: u16,
    },
    /// Channel pressure (channel aftertouch).
    Aftertouch {
        pressure: u8,
    },
    /// Key pressure of one note (poly aftertouch).
    PolyAftertouch {
        note: u8,
        pressure: u8,
    },
    /// Any other message (system messages, a short message).
    Other,
}

/// A message's channel (1…16) and what it says; `None` channel for a
/// system message.
pub fn decode(msg: &[u8]) -> (Option<u8>, Event) {
    let Some(&status) = msg.first() else {
        return (None, Event::Other);
    };
    if !(0x80..0xf0).contains(&status) {
        return (None, Event::Other);
    }
    let channel = Some((status & 0x0f) + 1);
    let d = |i: usize| msg.get(i).copied().filter(|b| *b < 0x80);
    let event = match (status >> 4, d(1), d(2)) {
        (0x8, Some(note), Some(_)) | (0x9, Some(note), Some(0)) => Event::NoteOff { note },
        (0x9, Some(note), Some(velocity)) => Event::NoteOn { note, velocity },
        (0xb, Some(cc), Some(value)) => Event::Cc { cc, value },
        (0xc, Some(program), _) => Event::Program { program },
        (0xa, Some(note), Some(pressure)) => Event::PolyAftertouch { note, pressure },
        (0xd, Some(pressure), _) => Event::Aftertouch { pressure },
        (0xe, Some(lsb), Some(msb)) => Event::Bend {
            value: u16::from(msb) << 7 | u16::from(lsb),
        },
        _ => Event::Other,
    };
    (channel, event)
}

/// A message in words, for `Message::from` and the monitor:
/// `cc 74 = 64 ch 1`, `note on 60 vel 100 ch 1`, `bend 8192 ch 1`.
pub fn describe(msg: &[u8]) -> String {
    let (channel, event) = decode(msg);
    let ch = channel.map_or(String::new(), |c| format!(" ch {c}"));
    match event {
        Event::NoteOn { note, velocity } => format!("note on {note} vel {velocity}{ch}"),
        Event::NoteOff { note } => format!("note off {note}{ch}"),
        Event::Cc { cc, value } => format!("cc {cc} = {value}{ch}"),
        Event::Program { program } => format!("program {program}{ch}"),
        Event::Bend { value } => format!("bend {value}{ch}"),
        Event::Aftertouch { pressure } => format!("aftertouch {pressure}{ch}"),
        Event::PolyAftertouch { note, pressure } => {
            format!("poly aftertouch {note} = {pressure}{ch}")
        }
        Event::Other => {
            let hex: Vec<String> = msg.iter().map(|b| format!("{b:02x}")).collect();
            format!("message {}", hex.join(" "))
        }
    }
}

/// The `controls` entry that would map this message, ready to paste into
/// a scene with its node and param filled in:
/// `{"midi": {"cc": 74, "channel": 1}, "node": "NODE", "param": "PARAM"}`.
/// `None` for a message no control can map (system messages).
pub fn control_entry(msg: &[u8]) -> Option<String> {
    let (channel, event) = decode(msg);
    let source = match event {
        Event::NoteOn { note, .. } | Event::NoteOff { note } => format!("\"note\": {note}"),
        Event::Cc { cc, .. } => format!("\"cc\": {cc}"),
        Event::Program { .. } => "\"program\": true".to_string(),
        Event::Bend { .. } => "\"bend\": true".to_string(),
        Event::Aftertouch { .. } => "\"aftertouch\": true".to_string(),
        Event::PolyAftertouch { .. } => "\"poly_aftertouch\": true".to_string(),
        Event::Other => return None,
    };
    let channel = channel.map_or(String::new(), |c| format!(", \"channel\": {c}"));
    Some(format!(
        "{{\"midi\": {{{source}{channel}}}, \"node\": \"NODE\", \"param\": \"PARAM\"}}"
    ))
}

/// One MIDI control and the state its messages build up.
#[derive(Clone, Debug)]
struct Control {
    map: ControlMap,
    source: MidiSource,
    /// Notes held, oldest first, as (channel, note).
    held: Vec<(u8, u8)>,
}

/// The scene's MIDI controls, with the state a receiver keeps per channel:
/// the last MSB of every controller (for 14-bit pairs) and each note
/// control's held notes.
#[derive(Clone, Debug)]
pub struct Mapper {
    controls: Vec<Control>,
    /// Per channel (index 0 = channel 1), per controller: the last value.
    coarse: [[u8; 128]; 16],
}

impl Mapper {
    /// The MIDI controls of a scene's `controls` (OSC ones are left out).
    pub fn new(maps: &[ControlMap]) -> Mapper {
        let controls = maps
            .iter()
            .filter_map(|m| match &m.source {
                ControlSource::Midi(source) => Some(Control {
                    map: m.clone(),
                    source: *source,
                    held: Vec::new(),
                }),
                ControlSource::Osc(_) => None,
            })
            .collect();
        Mapper {
            controls,
            coarse: [[0; 128]; 16],
        }
    }

    /// Whether the scene maps any MIDI message at all.
    pub fn is_empty(&self) -> bool {
        self.controls.is_empty()
    }

    /// Turns one message into the changes the controls make of it (see
    /// the module's rules), updating the held notes and 14-bit state.
    pub fn map(&mut self, msg: &[u8]) -> Mapped {
        let (Some(channel), event) = decode(msg) else {
            return Mapped::default();
        };
        let mut out = Mapped::default();
        for c in &mut self.controls {
            let on_channel = source_channel(&c.source).is_none_or(|ch| ch == channel);
            if on_channel {
                c.take(channel, event, &self.coarse[channel as usize - 1], &mut out);
            }
        }
        if let Event::Bend { value } = event {
            self.bend_modules(channel, value, &mut out);
        }
        if let Event::Cc { cc, value } = event {
            self.coarse[channel as usize - 1][cc as usize] = value;
            let action = match cc {
                SUSTAIN_CC => Some(NoteAction::Sustain(value >= 64)),
                ALL_NOTES_OFF_CC => Some(NoteAction::AllNotesOff),
                ALL_SOUND_OFF_CC => Some(NoteAction::AllSoundOff),
                _ => None,
            };
            if let Some(action) = action {
                self.for_modules(channel, cc, action, &mut out);
            }
        }
        out
    }

    /// CC 64, 120 or 123 on `channel`: the pedal, all sound off or all
    /// notes off of every voice module a note control on that channel
    /// plays, unless a control maps that controller there. All sound off
    /// and all notes off also close the gate of every note control on
    /// that channel that holds a note.
    fn for_modules(&mut self, channel: u8, cc: u8, action: NoteAction, out: &mut Mapped) {
        let listens = |s: &MidiSource| source_channel(s).is_none_or(|ch| ch == channel);
        let mapped = self.controls.iter().any(|c| {
            listens(&c.source) && matches!(c.source, MidiSource::Cc { cc: n, .. } if n == cc)
        });
        if mapped {
            return;
        }
        if cc != SUSTAIN_CC {
            for c in &mut self.controls {
                if matches!(c.source, MidiSource::Note { .. })
                    && listens(&c.source)
                    && c.map.module.is_none()
                {
                    out.matched = true;
                    if !c.held.is_empty() {
                        c.held.clear();
                        if let Some(t) = &c.map.target {
                            out.changes.push(c.change(t, t.scale(0.0)));
                        }
                    }
                }
            }
        }
        let mut modules: Vec<&str> = Vec::new();
        for c in &self.controls {
            if let (MidiSource::Note { .. }, Some(m)) = (&c.source, &c.map.module) {
                if listens(&c.source) && !modules.contains(&m.as_str()) {
                    modules.push(m);
                }
            }
        }
        for m in modules {
            out.matched = true;
            out.notes.push(Note {
                module: m.to_string(),
                action,
            });
        }
    }
}

impl Mapper {
    /// A bend on `channel`: every voice module a note control with a bend
    /// range listens there plays bends by that range (the first such
    /// control's, for a module two play), unless a `"bend": true`
    /// control on that channel takes the wheel.
    fn bend_modules(&mut self, channel: u8, value: u16, out: &mut Mapped) {
        let listens = |s: &MidiSource| source_channel(s).is_none_or(|ch| ch == channel);
        if self
            .controls
            .iter()
            .any(|c| matches!(c.source, MidiSource::Bend { .. }) && listens(&c.source))
        {
            return;
        }
        let mut modules: Vec<&str> = Vec::new();
        for c in &self.controls {
            let (MidiSource::Note { .. }, Some(m)) = (&c.source, &c.map.module) else {
                continue;
            };
            if c.map.bend > 0.0 && listens(&c.source) && !modules.contains(&m.as_str()) {
                modules.push(m);
                out.matched = true;
                out.notes.push(Note {
                    module: m.to_string(),
                    action: NoteAction::Bend(bend_semitones(value, c.map.bend)),
                });
            }
        }
    }
}

/// The semitones a 14-bit bend `value` bends by, with range `range`:
/// the wheel's ends are exactly ±`range`, its centre (8192) 0.
pub fn bend_semitones(value: u16, range: f64) -> f64 {
    let offset = f64::from(value) - 8192.0;
    if offset >= 0.0 {
        offset / 8191.0 * range
    } else {
        offset / 8192.0 * range
    }
}

/// The controller of the sustain pedal.
const SUSTAIN_CC: u8 = 64;
/// The channel mode messages all sound off and all notes off.
const ALL_SOUND_OFF_CC: u8 = 120;
const ALL_NOTES_OFF_CC: u8 = 123;

/// The channel a source listens on (`None`: all).
fn source_channel(s: &MidiSource) -> Option<u8> {
    match *s {
        MidiSource::Cc { channel, .. }
        | MidiSource::Note { channel, .. }
        | MidiSource::Bend { channel }
        | MidiSource::Aftertouch { channel }
        | MidiSource::PolyAftertouch { channel }
        | MidiSource::Program { channel } => channel,
    }
}

impl Control {
    /// Adds what `event` on `channel` makes of this control to `out`;
    /// `coarse` is the channel's controllers before this message.
    fn take(&mut self, channel: u8, event: Event, coarse: &[u8; 128], out: &mut Mapped) {
        match (self.source, event) {
            (MidiSource::Cc { cc, lsb: None, .. }, Event::Cc { cc: n, value }) if n == cc => {
                self.position(f64::from(value) / 127.0, out);
            }
            (
                MidiSource::Cc {
                    cc, lsb: Some(l), ..
                },
                Event::Cc { cc: n, value },
            ) => {
                let fine = if n == cc {
                    // An MSB alone: the fine part is 0.
                    u16::from(value) << 7
                } else if n == l {
                    u16::from(coarse[cc as usize]) << 7 | u16::from(value)
                } else {
                    return;
                };
                self.position(f64::from(fine) / 16383.0, out);
            }
            (MidiSource::Bend { .. }, Event::Bend { value }) => {
                self.position(f64::from(value) / 16383.0, out);
            }
            (MidiSource::Aftertouch { .. }, Event::Aftertouch { pressure }) => {
                self.position(f64::from(pressure) / 127.0, out);
            }
            (MidiSource::PolyAftertouch { .. }, Event::PolyAftertouch { note, pressure }) => {
                self.touch(note, f64::from(pressure) / 127.0, out);
            }
            (MidiSource::Program { .. }, Event::Program { program }) => {
                self.program(program, out);
            }
            (MidiSource::Note { note, .. }, Event::NoteOn { note: n, velocity })
                if note.is_none_or(|x| x == n) =>
            {
                self.note_on(channel, n, velocity, out);
            }
            (MidiSource::Note { note, .. }, Event::NoteOff { note: n })
                if note.is_none_or(|x| x == n) =>
            {
                self.note_off(channel, n, out);
            }
            _ => {}
        }
    }

    /// The target at position `x`.
    fn position(&self, x: f64, out: &mut Mapped) {
        out.matched = true;
        if let Some(t) = &self.map.target {
            out.changes.push(self.change(t, t.scale(x)));
        }
    }

    /// The pressure of `note` at position `x`: onto the voice playing it
    /// (a voice module's template node), else onto the param.
    fn touch(&self, note: u8, x: f64, out: &mut Mapped) {
        let (Some(v), Some(t)) = (&self.map.touch, &self.map.target) else {
            return self.position(x, out);
        };
        out.matched = true;
        let change = self.change(t, t.scale(x));
        out.notes.push(Note {
            module: v.module.clone(),
            action: NoteAction::Touch {
                key: crate::graph::midi_note_hz(f64::from(note)).to_bits(),
                node: v.node,
                param: v.param,
                value: change.value,
                ramp: change.ramp,
            },
        });
    }

    /// A program number: the value itself for a discrete target.
    fn program(&self, program: u8, out: &mut Mapped) {
        out.matched = true;
        let Some(t) = &self.map.target else {
            return;
        };
        use crate::graph::TargetRange;
        match t.range {
            TargetRange::Integer { .. } | TargetRange::Enum { .. } => {
                match t.raw(f64::from(program)) {
                    Ok(v) => out.changes.push(self.change(t, v)),
                    Err(e) => out.errors.push(
                        super::RemoteError::OutOfRange(e).within(format!("program {program}")),
                    ),
                }
            }
            _ => out
                .changes
                .push(self.change(t, t.scale(f64::from(program) / 127.0))),
        }
    }

    fn note_on(&mut self, channel: u8, note: u8, velocity: u8, out: &mut Mapped) {
        out.matched = true;
        if let Some(m) = &self.map.module {
            let v = f64::from(velocity) / 127.0;
            out.notes.push(Note::on(m, f64::from(note), v));
            return;
        }
        self.held.retain(|h| *h != (channel, note));
        self.held.push((channel, note));
        if let Some(t) = &self.map.target {
            out.changes.push(self.change(t, t.scale(1.0)));
        }
        if let Some(p) = &self.map.pitch {
            out.changes.push(self.change(p, p.pitch(note)));
        }
        if let Some(v) = &self.map.velocity {
            let x = f64::from(velocity) / 127.0;
            out.changes.push(self.change(v, v.scale(x)));
        }
    }

    fn note_off(&mut self, channel: u8, note: u8, out: &mut Mapped) {
        out.matched = true;
        if let Some(m) = &self.map.module {
            out.notes.push(Note::off(m, f64::from(note)));
            return;
        }
        let Some(at) = self.held.iter().position(|h| *h == (channel, note)) else {
            return;
        };
        let sounding = at + 1 == self.held.len();
        self.held.remove(at);
        if !sounding {
            return;
        }
        match self.held.last() {
            Some(&(_, previous)) => {
                if let Some(p) = &self.map.pitch {
                    out.changes.push(self.change(p, p.pitch(previous)));
                }
            }
            None => {
                if let Some(t) = &self.map.target {
                    out.changes.push(self.change(t, t.scale(0.0)));
                }
            }
        }
    }

    /// A change of `t` to `value`, gliding over the control's ramp when
    /// the value is a number.
    fn change(&self, t: &ControlTarget, value: ControlValue) -> Change {
        let ramp = match value {
            ControlValue::Number(_) => self.map.ramp,
            _ => 0,
        };
        Change {
            node: t.node.clone(),
            param: t.param.to_string(),
            value,
            ramp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::TargetRange;
    use crate::scene::{Curve, Dimension, Loc};

    fn target(node: &str, param: &'static str, range: TargetRange) -> ControlTarget {
        ControlTarget {
            node: node.into(),
            param,
            range,
        }
    }

    fn unit(node: &str, param: &'static str) -> ControlTarget {
        let range = TargetRange::Number {
            min: 0.0,
            max: 1.0,
            curve: Curve::Linear,
            lo: 0.0,
            hi: 1.0,
            dim: Dimension::Scalar,
        };
        target(node, param, range)
    }

    fn hz(node: &str) -> ControlTarget {
        let range = TargetRange::Number {
            min: 20.0,
            max: 20000.0,
            curve: Curve::Exp,
            lo: 1.0,
            hi: 24000.0,
            dim: Dimension::Frequency,
        };
        target(node, "freq", range)
    }

    fn control(source: MidiSource, t: Option<ControlTarget>) -> ControlMap {
        ControlMap {
            source: ControlSource::Midi(source),
            target: t,
            module: None,
            pitch: None,
            velocity: None,
            ramp: 0,
            raw: false,
            bend: 0.0,
            touch: None,
            index: 0,
            loc: Loc::default(),
        }
    }

    fn values(m: &Mapped) -> Vec<(String, ControlValue)> {
        m.changes
            .iter()
            .map(|c| (format!("{}.{}", c.node, c.param), c.value))
            .collect()
    }

    fn n(node: &str, v: f64) -> (String, ControlValue) {
        (node.to_string(), ControlValue::Number(v))
    }

    #[test]
    fn a_7_bit_cc_scales_v_over_127_on_its_channel() {
        let cc = MidiSource::Cc {
            cc: 74,
            lsb: None,
            channel: Some(2),
        };
        let mut m = Mapper::new(&[control(cc, Some(unit("a", "value")))]);
        assert_eq!(
            values(&m.map(&[0xb1, 74, 64])),
            [n("a.value", 64.0 / 127.0)]
        );
        assert_eq!(values(&m.map(&[0xb1, 74, 127])), [n("a.value", 1.0)]);
        // Channel 1, another controller, a short message: nothing.
        assert!(!m.map(&[0xb0, 74, 64]).matched);
        assert!(!m.map(&[0xb1, 75, 64]).matched);
        assert!(!m.map(&[0xb1, 74]).matched);
        assert!(!m.map(&[]).matched);
        assert!(!m.map(&[0xf8]).matched);
    }

    #[test]
    fn a_14_bit_pair_combines_msb_and_lsb() {
        let cc = MidiSource::Cc {
            cc: 1,
            lsb: Some(33),
            channel: None,
        };
        let mut m = Mapper::new(&[control(cc, Some(unit("a", "value")))]);
        // An LSB before any MSB: the coarse part is 0.
        assert_eq!(
            values(&m.map(&[0xb0, 33, 5])),
            [n("a.value", 5.0 / 16383.0)]
        );
        // An MSB alone resets the fine part.
        let msb = f64::from(100u16 * 128) / 16383.0;
        assert_eq!(values(&m.map(&[0xb0, 1, 100])), [n("a.value", msb)]);
        let both = f64::from(100u16 * 128 + 7) / 16383.0;
        assert_eq!(values(&m.map(&[0xb0, 33, 7])), [n("a.value", both)]);
        assert_eq!(
            values(&m.map(&[0xb0, 1, 127])),
            [n("a.value", 16256.0 / 16383.0)]
        );
        assert_eq!(values(&m.map(&[0xb0, 33, 127])), [n("a.value", 1.0)]);
        // Channels keep their own MSBs.
        assert_eq!(
            values(&m.map(&[0xb3, 33, 1])),
            [n("a.value", 1.0 / 16383.0)]
        );
    }

    #[test]
    fn bend_and_program() {
        let bend = control(MidiSource::Bend { channel: None }, Some(unit("a", "value")));
        let program = MidiSource::Program { channel: None };
        let pick = target("f", "mode", TargetRange::Enum { choices: 3 });
        let mut m = Mapper::new(&[bend, control(program, Some(pick))]);
        assert_eq!(
            values(&m.map(&[0xe0, 0, 64])),
            [n("a.value", 8192.0 / 16383.0)]
        );
        assert_eq!(values(&m.map(&[0xe0, 0x7f, 0x7f])), [n("a.value", 1.0)]);
        let p = m.map(&[0xc0, 2]);
        assert_eq!(values(&p), [("f.mode".to_string(), ControlValue::Enum(2))]);
        let bad = m.map(&[0xc0, 3]);
        assert!(bad.matched && bad.changes.is_empty());
        assert!(
            bad.errors[0].to_string().contains("program 3"),
            "{:?}",
            bad.errors
        );
        // A number target takes p/127.
        let mut m = Mapper::new(&[control(program, Some(unit("a", "value")))]);
        assert_eq!(values(&m.map(&[0xc0, 127])), [n("a.value", 1.0)]);
        // Unmapped: nothing.
        assert!(!Mapper::new(&[]).map(&[0xc0, 1]).matched);
    }

    fn voice() -> Mapper {
        let mut c = control(
            MidiSource::Note {
                note: None,
                channel: Some(1),
            },
            Some(unit("env", "gate")),
        );
        c.pitch = Some(hz("osc"));
        c.velocity = Some(unit("amp", "gain"));
        c.ramp = 10;
        Mapper::new(&[c])
    }

    fn hz_of(note: u8) -> f64 {
        440.0 * libm::exp2((f64::from(note) - 69.0) / 12.0)
    }

    #[test]
    fn notes_set_gate_pitch_and_velocity() {
        let mut m = voice();
        let on = m.map(&[0x90, 60, 127]);
        assert_eq!(
            values(&on),
            [
                n("env.gate", 1.0),
                n("osc.freq", hz_of(60)),
                n("amp.gain", 1.0)
            ]
        );
        assert!(on.changes.iter().all(|c| c.ramp == 10));
        // Note-on with velocity 0 is a note-off.
        assert_eq!(values(&m.map(&[0x90, 60, 0])), [n("env.gate", 0.0)]);
        // Another channel: nothing.
        assert!(!m.map(&[0x91, 60, 100]).matched);
        // A note-off of a note not held changes nothing.
        let stray = m.map(&[0x80, 61, 0]);
        assert!(stray.matched && stray.changes.is_empty());
    }

    #[test]
    fn last_note_priority_returns_without_retrigger() {
        let mut m = voice();
        m.map(&[0x90, 60, 100]);
        m.map(&[0x90, 64, 100]);
        m.map(&[0x90, 67, 100]);
        // Releasing an older note changes nothing.
        assert!(m.map(&[0x80, 64, 0]).changes.is_empty());
        // Releasing the sounding one returns pitch to the newest held note.
        assert_eq!(values(&m.map(&[0x80, 67, 0])), [n("osc.freq", hz_of(60))]);
        assert_eq!(values(&m.map(&[0x80, 60, 0])), [n("env.gate", 0.0)]);
        // A note struck again moves to the top without doubling.
        m.map(&[0x90, 60, 100]);
        m.map(&[0x90, 62, 100]);
        m.map(&[0x90, 60, 100]);
        assert!(m.map(&[0x80, 62, 0]).changes.is_empty());
        assert_eq!(values(&m.map(&[0x80, 60, 0])), [n("env.gate", 0.0)]);
    }

    #[test]
    fn a_numbered_note_and_discrete_values_step() {
        let mut c = control(
            MidiSource::Note {
                note: Some(36),
                channel: None,
            },
            Some(target("t", "on", TargetRange::Bool)),
        );
        c.ramp = 48;
        let mut m = Mapper::new(&[c]);
        assert!(!m.map(&[0x90, 37, 100]).matched);
        let on = m.map(&[0x95, 36, 100]);
        assert_eq!(
            values(&on),
            [("t.on".to_string(), ControlValue::Bool(true))]
        );
        assert_eq!(on.changes[0].ramp, 0);
    }

    fn pad(channel: Option<u8>) -> ControlMap {
        let mut c = control(
            MidiSource::Note {
                note: None,
                channel,
            },
            None,
        );
        c.module = Some("pad".into());
        c
    }

    #[test]
    fn notes_for_a_voice_module_and_its_pedal() {
        let mut m = Mapper::new(&[pad(Some(1))]);
        let on = m.map(&[0x90, 69, 127]);
        assert!(on.changes.is_empty());
        assert_eq!(on.notes, [Note::on("pad", 69.0, 1.0)]);
        assert_eq!(
            on.notes[0].action,
            crate::graph::NoteAction::On {
                key: 440f64.to_bits(),
                tag: 0,
                pitch_hz: 440.0,
                velocity: 1.0
            }
        );
        // Every note passes (no last-note stack); velocity 0 is an off.
        assert_eq!(m.map(&[0x90, 69, 0]).notes, [Note::off("pad", 69.0)]);
        assert_eq!(m.map(&[0x80, 70, 0]).notes, [Note::off("pad", 70.0)]);
        assert_eq!(m.map(&[0xb0, 64, 64]).notes, [Note::sustain("pad", true)]);
        assert_eq!(m.map(&[0xb0, 64, 63]).notes, [Note::sustain("pad", false)]);
        // Another channel: nothing.
        assert!(!m.map(&[0xb1, 64, 127]).matched);
        assert!(!m.map(&[0x91, 60, 100]).matched);
        // Two controls onto one module: one pedal.
        let mut m = Mapper::new(&[pad(None), pad(Some(2))]);
        assert_eq!(m.map(&[0xb1, 64, 127]).notes.len(), 1);
        // CC 64 mapped onto a param is that param's, not the pedal.
        let cc = MidiSource::Cc {
            cc: 64,
            lsb: None,
            channel: None,
        };
        let mut m = Mapper::new(&[pad(None), control(cc, Some(unit("a", "value")))]);
        let p = m.map(&[0xb0, 64, 127]);
        assert!(p.notes.is_empty());
        assert_eq!(values(&p), [n("a.value", 1.0)]);
    }

    #[test]
    fn words_and_entries() {
        assert_eq!(describe(&[0xb0, 74, 64]), "cc 74 = 64 ch 1");
        assert_eq!(describe(&[0x9f, 60, 100]), "note on 60 vel 100 ch 16");
        assert_eq!(describe(&[0x90, 60, 0]), "note off 60 ch 1");
        assert_eq!(describe(&[0xe1, 0, 64]), "bend 8192 ch 2");
        assert_eq!(describe(&[0xc0, 5]), "program 5 ch 1");
        assert_eq!(describe(&[0xf8]), "message f8");
        assert_eq!(
            control_entry(&[0xb0, 74, 64]).unwrap(),
            r#"{"midi": {"cc": 74, "channel": 1}, "node": "NODE", "param": "PARAM"}"#
        );
        assert_eq!(
            control_entry(&[0xe2, 0, 64]).unwrap(),
            r#"{"midi": {"bend": true, "channel": 3}, "node": "NODE", "param": "PARAM"}"#
        );
        assert_eq!(describe(&[0xd0, 5]), "aftertouch 5 ch 1");
        assert_eq!(describe(&[0xa1, 60, 9]), "poly aftertouch 60 = 9 ch 2");
        assert_eq!(
            control_entry(&[0xd0, 3]).unwrap(),
            r#"{"midi": {"aftertouch": true, "channel": 1}, "node": "NODE", "param": "PARAM"}"#
        );
        assert!(control_entry(&[0xf8]).is_none());
    }

    #[test]
    fn pressures_map_like_a_cc_and_poly_pressure_onto_a_voice_is_a_touch_of_its_key() {
        let at = control(
            MidiSource::Aftertouch { channel: None },
            Some(unit("a", "value")),
        );
        let mut m = Mapper::new(&[at]);
        assert_eq!(values(&m.map(&[0xd3, 127])), [n("a.value", 1.0)]);
        assert!(!m.map(&[0xa0, 60, 5]).matched);
        let mut poly = control(
            MidiSource::PolyAftertouch { channel: Some(1) },
            Some(unit("lvl", "gain")),
        );
        poly.touch = Some(crate::graph::VoiceParam {
            module: "pad".into(),
            node: 4,
            param: 0,
        });
        let mut m = Mapper::new(&[poly]);
        let t = m.map(&[0xa0, 69, 127]);
        assert!(t.changes.is_empty());
        assert_eq!(
            t.notes,
            [Note {
                module: "pad".into(),
                action: NoteAction::Touch {
                    key: 440f64.to_bits(),
                    node: 4,
                    param: 0,
                    value: ControlValue::Number(1.0),
                    ramp: 0
                }
            }]
        );
        assert!(!m.map(&[0xa1, 69, 127]).matched);
    }

    #[test]
    fn the_bend_wheel_bends_a_voice_module_by_its_range_unless_a_control_takes_it() {
        let mut keys = pad(Some(1));
        keys.bend = 2.0;
        let mut m = Mapper::new(&[keys.clone()]);
        let bend = |m: &mut Mapper, lsb: u8, msb: u8| m.map(&[0xe0, lsb, msb]).notes;
        assert_eq!(
            bend(&mut m, 0x7f, 0x7f),
            [Note {
                module: "pad".into(),
                action: NoteAction::Bend(2.0)
            }]
        );
        assert_eq!(bend(&mut m, 0, 0)[0].action, NoteAction::Bend(-2.0));
        assert_eq!(bend(&mut m, 0, 0x40)[0].action, NoteAction::Bend(0.0));
        assert!(!m.map(&[0xe1, 0, 0]).matched);
        let wheel = control(MidiSource::Bend { channel: None }, Some(unit("a", "value")));
        let mut m = Mapper::new(&[keys.clone(), wheel]);
        let taken = m.map(&[0xe0, 0x7f, 0x7f]);
        assert!(taken.notes.is_empty());
        assert_eq!(values(&taken), [n("a.value", 1.0)]);
        keys.bend = 0.0;
        assert!(!Mapper::new(&[keys]).map(&[0xe0, 0, 0]).matched);
    }
}
