//! Note ends: CLAP's note-end event for each note whose voice stopped
//! sounding, so a host can track voices. The core says which MIDI key of
//! which voice module ended and at which frame
//! ([`Processor::take_note_ends`]); the host's note id and channel are
//! those of the last note-on of that key.

use clack_plugin::events::event_types::NoteEndEvent;
use clack_plugin::events::Pckn;
use clack_plugin::prelude::OutputEvents;
use morphrt_core::api::Processor;

/// The channel and note id of the last note-on of each key (-1: none
/// given, as from MIDI).
pub struct NoteIds([(i16, i32); 128]);

impl Default for NoteIds {
    fn default() -> NoteIds {
        NoteIds([(-1, -1); 128])
    }
}

impl NoteIds {
    /// Key `key` started on `channel` as note `id`.
    pub fn on(&mut self, key: u8, channel: i16, id: i32) {
        if let Some(slot) = self.0.get_mut(key as usize) {
            *slot = (channel, id);
        }
    }

    /// Writes a note-end event into `out` for each note `processor` says
    /// ended within the call whose first frame is `start` (counted from
    /// activation) and which has `frames` frames.
    pub fn write_ends(
        &self,
        processor: &mut Processor,
        start: u64,
        frames: usize,
        out: &mut OutputEvents,
    ) {
        processor.take_note_ends(|e| {
            let time = e
                .frame
                .saturating_sub(start)
                .min(frames.saturating_sub(1) as u64);
            let (channel, id) = self.0[e.key as usize & 127];
            let pckn = Pckn::from_raw(0, channel, e.key as i16, id);
            // A full output list drops the event: the host asked for no
            // more.
            let _ = out.try_push(NoteEndEvent::new(time as u32, pckn));
        });
    }
}
