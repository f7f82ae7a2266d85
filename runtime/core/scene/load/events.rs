//! Events: a timed change of one node's param, with an optional `ramp`.

use super::read::{valid_id, ID_HELP};
use super::Loader;
use crate::scene::pos::child_key;
use crate::scene::{EventDecl, NoteEventDecl, NoteKind};
use serde_json::Value;

pub(crate) const EVENT_KEYS: [&str; 5] = ["time", "node", "param", "value", "ramp"];
/// The keys of a note event (one that names a `module`).
pub(crate) const NOTE_EVENT_KEYS: [&str; 7] = [
    "time", "module", "note", "velocity", "duration", "off", "sustain",
];

/// What a note event's `note` may be.
const NOTE_HELP: &str = "`note` is a MIDI note number (60 is middle C, fractions are microtones) or a frequency such as \"440Hz\"";

impl Loader<'_> {
    /// `events`, each with its position in the array: those that name a
    /// `module` are notes, the others param changes.
    pub(super) fn events(
        &mut self,
        v: &Value,
        p: &str,
        events: &mut Vec<EventDecl>,
        notes: &mut Vec<NoteEventDecl>,
    ) {
        let mut all: Vec<Result<EventDecl, NoteEventDecl>> = Vec::new();
        self.items(v, p, "events", &mut all, |l, x, xp, i| {
            if x.get("module").is_some() && x.get("node").is_none() {
                l.note_event(x, xp, i).map(Err)
            } else {
                l.event(x, xp, i).map(Ok)
            }
        });
        for e in all {
            match e {
                Ok(e) => events.push(e),
                Err(n) => notes.push(n),
            }
        }
    }

    /// A note event: a note (`note`, `velocity`, `duration`), a note-off
    /// (`note` and `"off": true`) or the sustain pedal (`"sustain"`).
    fn note_event(&mut self, v: &Value, path: &str, index: usize) -> Option<NoteEventDecl> {
        let obj = self.object(v, path, "event", None)?;
        self.unknown_fields(obj, path, &NOTE_EVENT_KEYS, "a note event", None);
        let time = self
            .required(obj, path, "time", "event", None)
            .and_then(|t| self.time(t, &child_key(path, "time"), "time", None));
        let mp = child_key(path, "module");
        let module = obj.get("module").and_then(|m| {
            let s = self.string(m, &mp, "module", None)?;
            if valid_id(s) {
                Some(s.to_string())
            } else {
                self.error(
                    &mp,
                    None,
                    format!("`{s}` is not a valid module id"),
                    ID_HELP.to_string(),
                );
                None
            }
        });
        let off = match obj.get("off") {
            None => Some(false),
            Some(b) => self.boolean(b, &child_key(path, "off"), "off", None),
        };
        let kind = if let Some(s) = obj.get("sustain") {
            for key in ["note", "velocity", "duration", "off"] {
                if obj.contains_key(key) {
                    self.error(
                        &child_key(path, key),
                        None,
                        format!("a sustain event has no `{key}`"),
                        "give the pedal (`\"sustain\": true` or `false`) and the notes in events of their own".to_string(),
                    );
                }
            }
            self.boolean(s, &child_key(path, "sustain"), "sustain", None)
                .map(NoteKind::Sustain)
        } else {
            let pitch = match obj.get("note") {
                None => {
                    self.error(
                        path,
                        None,
                        "a note event has no `note`",
                        format!("{NOTE_HELP}; or give `\"sustain\": true|false` for the pedal"),
                    );
                    None
                }
                Some(n @ (Value::Number(_) | Value::String(_))) => {
                    Some(self.raw(n, &child_key(path, "note")))
                }
                Some(n) => {
                    let found = self.found(n, &child_key(path, "note"));
                    self.error(
                        &child_key(path, "note"),
                        None,
                        format!("`note` must be a number or a frequency, found {found}"),
                        NOTE_HELP.to_string(),
                    );
                    None
                }
            };
            if off == Some(true) {
                for key in ["velocity", "duration"] {
                    if obj.contains_key(key) {
                        self.error(
                            &child_key(path, key),
                            None,
                            format!("a note-off has no `{key}`"),
                            "remove it, or remove `\"off\": true` to start the note".to_string(),
                        );
                    }
                }
                pitch.map(|pitch| NoteKind::Off { pitch })
            } else {
                let velocity = match obj.get("velocity") {
                    None => Some(1.0),
                    Some(x) => {
                        let vp = child_key(path, "velocity");
                        match super::read::numeric(x).as_f64() {
                            Some(f) if (0.0..=1.0).contains(&f) => Some(f),
                            _ => {
                                let found = self.found(x, &vp);
                                self.error(
                                    &vp,
                                    None,
                                    format!(
                                        "`velocity` must be a number from 0 to 1, found {found}"
                                    ),
                                    "1 is the loudest; MIDI velocity v is v/127".to_string(),
                                );
                                None
                            }
                        }
                    }
                };
                let duration = match obj.get("duration") {
                    None => Some(None),
                    Some(d) => self
                        .time(d, &child_key(path, "duration"), "duration", None)
                        .map(Some),
                };
                match (pitch, velocity, duration) {
                    (Some(pitch), Some(velocity), Some(duration)) => Some(NoteKind::On {
                        pitch,
                        velocity,
                        duration,
                    }),
                    _ => None,
                }
            }
        };
        Some(NoteEventDecl {
            time: time?,
            module: module?,
            kind: kind?,
            index,
            loc: self.pos.loc(path),
        })
    }

    fn event(&mut self, v: &Value, path: &str, index: usize) -> Option<EventDecl> {
        let obj = self.object(v, path, "event", None)?;
        let node_name = obj.get("node").and_then(Value::as_str).map(str::to_string);
        let name = node_name.as_deref();
        self.unknown_fields(obj, path, &EVENT_KEYS, "an event", name);
        let time = self
            .required(obj, path, "time", "event", name)
            .and_then(|t| self.time(t, &child_key(path, "time"), "time", name));
        let beat = self.last_beats.take();
        let node = self
            .required(obj, path, "node", "event", name)
            .and_then(|n| {
                let np = child_key(path, "node");
                let s = self.string(n, &np, "node", None)?;
                if valid_id(s) {
                    Some(s.to_string())
                } else {
                    self.error(
                        &np,
                        None,
                        format!("`{s}` is not a valid node id"),
                        ID_HELP.to_string(),
                    );
                    None
                }
            });
        let param = self
            .required(obj, path, "param", "event", name)
            .and_then(|p| {
                let pp = child_key(path, "param");
                match self.string(p, &pp, "param", name)? {
                    "" => {
                        self.error(
                            &pp,
                            name,
                            "`param` is empty",
                            "name the param to change, e.g. `\"freq\"`".to_string(),
                        );
                        None
                    }
                    s => Some(s.to_string()),
                }
            });
        let value = self
            .required(obj, path, "value", "event", name)
            .map(|x| self.raw(x, &child_key(path, "value")));
        let ramp = match obj.get("ramp") {
            None => Some(None),
            Some(r) => self
                .time(r, &child_key(path, "ramp"), "ramp", name)
                .map(Some),
        };
        Some(EventDecl {
            time: time?,
            beat,
            node: node?,
            param: param?,
            value: value?,
            ramp: ramp?,
            index,
            loc: self.pos.loc(path),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::scene::{Loc, Rational, TimeSpec};

    #[test]
    fn event_rules() {
        let ev = |e: &str| scene_with(&format!(",\n\"events\": [{e}]"));
        let e = one_error(
            &ev("{\"time\": \"-1s\", \"node\": \"a\", \"param\": \"freq\", \"value\": 1}"),
            "must not be negative",
        );
        assert_eq!(at(&e), (3, 21));
        assert_eq!(e.node.as_deref(), Some("a"));
        one_error(
            &ev("{\"time\": -0.5, \"node\": \"a\", \"param\": \"freq\", \"value\": 1}"),
            "must not be negative",
        );
        one_error(&ev("{\"time\": 1, \"node\": \"a\", \"param\": \"freq\", \"value\": 1, \"ramp\": \"-2ms\"}"), "`ramp` must not be negative");
        // A number in a string is that number of seconds, as a bare number is.
        let quoted = load(&ev(
            "{\"time\": \"1.5\", \"node\": \"a\", \"param\": \"freq\", \"value\": 1}",
        ))
        .unwrap();
        let bare = load(&ev(
            "{\"time\": 1.5, \"node\": \"a\", \"param\": \"freq\", \"value\": 1}",
        ))
        .unwrap();
        assert_eq!(quoted.events[0].time, bare.events[0].time);
        one_error(
            &ev("{\"time\": true, \"node\": \"a\", \"param\": \"freq\", \"value\": 1}"),
            "`time` must be a time, found the boolean `true`",
        );
        one_error(
            &ev("{\"node\": \"a\", \"param\": \"freq\", \"value\": 1}"),
            "event has no `time`",
        );
        one_error(
            &ev("{\"time\": 1, \"param\": \"freq\", \"value\": 1}"),
            "event has no `node`",
        );
        one_error(
            &ev("{\"time\": 1, \"node\": \"a\", \"value\": 1}"),
            "event has no `param`",
        );
        one_error(
            &ev("{\"time\": 1, \"node\": \"a\", \"param\": \"freq\"}"),
            "event has no `value`",
        );
        one_error(
            &ev("{\"time\": 1, \"node\": \"a\", \"param\": \"\", \"value\": 1}"),
            "`param` is empty",
        );
        one_error(
            &ev("{\"time\": 1, \"node\": \"a:b\", \"param\": \"f\", \"value\": 1}"),
            "not a valid node id",
        );
        let s = load(&ev(
            "{\"time\": \"4800samples\", \"node\": \"a\", \"param\": \"f\", \"value\": 1},\n {\"time\": \"1.1s\", \"node\": \"a\", \"param\": \"g\", \"value\": [1]}",
        ))
        .unwrap();
        assert_eq!(
            s.events[0].time,
            TimeSpec::Samples(Rational::from_int(4800))
        );
        assert_eq!(
            s.events[1].time.to_samples(48000),
            Some(Rational::from_int(52800))
        );
        assert_eq!(s.events[1].index, 1);
        assert_eq!(s.events[1].loc, Loc::new("events[1]", 4, 2));
    }
}
