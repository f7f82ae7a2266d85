//! Controls: an OSC address or a MIDI message mapped onto a param, with a
//! range, a curve and a ramp (`scenes/README.md`, *Controls*).

use super::read::{valid_id, ID_HELP};
use super::Loader;
use crate::scene::pos::child_key;
use crate::scene::{ControlDecl, ControlSourceDecl, Curve, Loc, MidiSource, TargetDecl, CURVES};
use serde_json::{Map, Value};

/// Fields of a `controls` entry.
pub(crate) const CONTROL_KEYS: [&str; 14] = [
    "osc", "midi", "node", "param", "module", "min", "max", "curve", "ramp", "raw", "pitch",
    "velocity", "bend", "comment",
];
/// Fields of a control's `midi` object.
pub(crate) const MIDI_KEYS: [&str; 8] = [
    "cc",
    "lsb",
    "note",
    "bend",
    "program",
    "aftertouch",
    "poly_aftertouch",
    "channel",
];
/// The message kinds a control's `midi` names (one each).
const MIDI_MESSAGES: [&str; 6] = [
    "cc",
    "note",
    "bend",
    "program",
    "aftertouch",
    "poly_aftertouch",
];
/// The widest bend range a note control takes, in semitones (four
/// octaves, as MPE's default per-note range).
pub(crate) const MAX_BEND_SEMITONES: f64 = 48.0;
/// Fields of a note control's `pitch` and `velocity` targets.
pub(crate) const TARGET_KEYS: [&str; 5] = ["node", "param", "min", "max", "curve"];

impl Loader<'_> {
    /// `controls`, each with its position in the array.
    pub(super) fn controls(&mut self, v: &Value, p: &str, out: &mut Vec<ControlDecl>) {
        self.items(v, p, "controls", out, Self::control);
    }

    fn control(&mut self, v: &Value, path: &str, index: usize) -> Option<ControlDecl> {
        let obj = self.object(v, path, "control", None)?;
        let name = obj.get("node").and_then(Value::as_str);
        self.unknown_fields(obj, path, &CONTROL_KEYS, "a control", name);
        let source = match (obj.get("osc"), obj.get("midi")) {
            (Some(a), None) => self.osc_address(a, &child_key(path, "osc"), name),
            (None, Some(m)) => self.midi_source(m, &child_key(path, "midi"), name),
            (Some(_), Some(_)) => {
                self.error(
                    path,
                    name,
                    "a control has both `osc` and `midi`",
                    Some(
                        "give one source per control; add another entry for the other".to_string(),
                    ),
                );
                None
            }
            (None, None) => {
                self.error(
                    path,
                    name,
                    "control has no source",
                    Some("add `\"osc\": \"/address\"` or `\"midi\": {\"cc\": 74}`".to_string()),
                );
                None
            }
        };
        let module = match obj.get("module") {
            None => Some(None),
            Some(m) => {
                let mp = child_key(path, "module");
                self.node_id(m, &mp, "module")
                    .map(|s| Some((s, self.pos.loc(&mp))))
            }
        };
        let target =
            if obj.contains_key("node") || obj.contains_key("param") || module == Some(None) {
                self.target(obj, path, name).map(Some)
            } else {
                Some(None)
            };
        let sub = |me: &mut Self, key: &str| -> Option<Option<TargetDecl>> {
            match obj.get(key) {
                None => Some(None),
                Some(t) => {
                    let tp = child_key(path, key);
                    let o = me.object(t, &tp, key, name)?;
                    me.unknown_fields(o, &tp, &TARGET_KEYS, &format!("a control's `{key}`"), name);
                    me.target(o, &tp, name).map(Some)
                }
            }
        };
        let pitch = sub(self, "pitch");
        let velocity = sub(self, "velocity");
        let ramp = match obj.get("ramp") {
            None => Some(None),
            Some(r) => self
                .time(r, &child_key(path, "ramp"), "ramp", name)
                .map(Some),
        };
        let raw = match obj.get("raw") {
            None => Some(false),
            Some(r) => self.boolean(r, &child_key(path, "raw"), "raw", name),
        };
        let bend = match obj.get("bend") {
            None => Some(None),
            Some(b) => self.bend_range(b, &child_key(path, "bend"), name).map(Some),
        };
        Some(ControlDecl {
            source: source?,
            target: target?,
            module: module?,
            pitch: pitch?,
            velocity: velocity?,
            ramp: ramp?,
            raw: raw?,
            bend: bend?,
            index,
            loc: self.pos.loc(path),
        })
    }

    /// `node`, `param`, `min`, `max` and `curve` of `obj`.
    fn target(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        name: Option<&str>,
    ) -> Option<TargetDecl> {
        let node = self
            .required(obj, path, "node", "control", name)
            .and_then(|n| self.node_id(n, &child_key(path, "node"), "node"));
        let param = self
            .required(obj, path, "param", "control", name)
            .and_then(|p| {
                let pp = child_key(path, "param");
                match self.string(p, &pp, "param", name)? {
                    "" => {
                        self.error(
                            &pp,
                            name,
                            "`param` is empty",
                            Some("name the param to move, e.g. `\"cutoff\"`".to_string()),
                        );
                        None
                    }
                    s => Some(s.to_string()),
                }
            });
        let bound = |me: &Self, key: &str| {
            obj.get(key).map(|x| {
                let kp = child_key(path, key);
                (me.raw(x, &kp), me.pos.loc(&kp))
            })
        };
        let min = bound(self, "min");
        let max = bound(self, "max");
        let curve = match obj.get("curve") {
            None => Some(None),
            Some(c) => self
                .choice(c, &child_key(path, "curve"), "curve", &CURVES, name)
                .map(|c| {
                    Some(match c {
                        "exp" => Curve::Exp,
                        "db" => Curve::Db,
                        _ => Curve::Linear,
                    })
                }),
        };
        Some(TargetDecl {
            node: node?,
            param: param?,
            min,
            max,
            curve: curve?,
            loc: self.pos.loc(path),
        })
    }

    /// A note control's `bend`: the range in semitones of the pitch bend
    /// wheel, 0…[`MAX_BEND_SEMITONES`]. `true` is the source reading of
    /// `bend`, which belongs in `midi`.
    fn bend_range(&mut self, v: &Value, path: &str, name: Option<&str>) -> Option<(f64, Loc)> {
        let help = format!(
            "a note control's `bend` is the pitch bend range in semitones, a number from 0 to {MAX_BEND_SEMITONES} (e.g. `\"bend\": 2`; 0 turns pitch bend off)"
        );
        let semitones = match v {
            Value::Bool(_) => {
                self.error(
                    path,
                    name,
                    "`bend` beside `midi` is a range in semitones, not `true`",
                    Some(format!(
                        "{help}; to map the bend wheel onto a param, write `\"midi\": {{\"bend\": true}}`"
                    )),
                );
                return None;
            }
            Value::Number(n) => n.as_f64(),
            _ => None,
        };
        match semitones {
            Some(s) if (0.0..=MAX_BEND_SEMITONES).contains(&s) => Some((s, self.pos.loc(path))),
            Some(s) => {
                self.error(
                    path,
                    name,
                    format!("`bend` is out of range: {s} semitones"),
                    Some(help),
                );
                None
            }
            None => {
                self.error(
                    path,
                    name,
                    "`bend` must be a number of semitones",
                    Some(help),
                );
                None
            }
        }
    }

    fn node_id(&mut self, v: &Value, path: &str, what: &str) -> Option<String> {
        let s = self.string(v, path, what, None)?;
        if valid_id(s) {
            Some(s.to_string())
        } else {
            self.error(
                path,
                None,
                format!("`{s}` is not a valid {what} id"),
                ID_HELP.to_string(),
            );
            None
        }
    }

    fn osc_address(
        &mut self,
        v: &Value,
        path: &str,
        name: Option<&str>,
    ) -> Option<ControlSourceDecl> {
        let a = self.string(v, path, "osc", name)?;
        let valid = a.starts_with('/')
            && a.len() > 1
            && !a
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b"#*,?[]{}".contains(&b));
        if !valid {
            self.error(
                path,
                name,
                format!("`{a}` is not an OSC address"),
                Some("an address starts with `/` and has no spaces or `#*,?[]{}`, e.g. `\"/filter/cutoff\"`".to_string()),
            );
            return None;
        }
        if a.starts_with("/morphrt/") || a == "/morphrt" {
            self.error(
                path,
                name,
                format!("`{a}` is in the `/morphrt/…` namespace, which is reserved"),
                Some(
                    "choose another address; `/morphrt/param` already reaches every param"
                        .to_string(),
                ),
            );
            return None;
        }
        Some(ControlSourceDecl::Osc(a.to_string()))
    }

    fn midi_source(
        &mut self,
        v: &Value,
        path: &str,
        name: Option<&str>,
    ) -> Option<ControlSourceDecl> {
        let obj = self.object(v, path, "midi", name)?;
        self.unknown_fields(obj, path, &MIDI_KEYS, "a control's `midi`", name);
        let channel = match obj.get("channel") {
            None => Some(None),
            Some(Value::String(s)) if s == "any" => Some(None),
            Some(c) => self
                .int(c, &child_key(path, "channel"), "channel", 1, 16, name)
                .map(|c| Some(c as u8)),
        };
        let kinds: Vec<&str> = MIDI_MESSAGES
            .into_iter()
            .filter(|k| obj.contains_key(*k))
            .collect();
        let help = "give one of `\"cc\": 74`, `\"note\": \"any\"` (or a note number), `\"bend\": true`, `\"program\": true`, `\"aftertouch\": true`, `\"poly_aftertouch\": true`".to_string();
        if let (Some(b @ Value::Number(_)), true) = (obj.get("bend"), obj.contains_key("note")) {
            self.error(
                &child_key(path, "bend"),
                name,
                format!("`midi.bend` is {b}: inside `midi`, `bend` names the bend wheel as a source (`true`)"),
                Some(format!(
                    "a note control's bend range goes beside `midi`: `\"midi\": {{\"note\": \"any\"}}, \"module\": \"…\", \"bend\": {b}`"
                )),
            );
            return None;
        }
        if kinds.len() != 1 {
            let msg = if kinds.is_empty() {
                "`midi` names no message".to_string()
            } else {
                format!("`midi` names more than one message ({})", kinds.join(", "))
            };
            self.error(path, name, msg, Some(help));
            return None;
        }
        if obj.contains_key("lsb") && kinds[0] != "cc" {
            self.error(
                &child_key(path, "lsb"),
                name,
                "`lsb` belongs to a `cc` control",
                None,
            );
            return None;
        }
        let flag = |me: &mut Self, key: &str| -> Option<()> {
            let kp = child_key(path, key);
            match me.boolean(&obj[key], &kp, key, name)? {
                true => Some(()),
                false => {
                    me.error(
                        &kp,
                        name,
                        format!("`{key}: false` maps nothing"),
                        Some("remove the control, or set it to `true`".to_string()),
                    );
                    None
                }
            }
        };
        let src = match kinds[0] {
            "cc" => {
                let cc = self.int(&obj["cc"], &child_key(path, "cc"), "cc", 0, 127, name)? as u8;
                let lsb = match obj.get("lsb") {
                    None => None,
                    Some(l) => {
                        let lp = child_key(path, "lsb");
                        let lsb = self.int(l, &lp, "lsb", 0, 127, name)? as u8;
                        if lsb == cc {
                            self.error(
                                &lp,
                                name,
                                "`lsb` is the same controller as `cc`",
                                Some(format!(
                                    "the fine part of controller {cc} is usually {}",
                                    cc + 32
                                )),
                            );
                            return None;
                        }
                        Some(lsb)
                    }
                };
                MidiSource::Cc {
                    cc,
                    lsb,
                    channel: channel?,
                }
            }
            "note" => {
                let np = child_key(path, "note");
                let note = match &obj["note"] {
                    Value::String(s) if s == "any" => None,
                    n => Some(self.int(n, &np, "note", 0, 127, name)? as u8),
                };
                MidiSource::Note {
                    note,
                    channel: channel?,
                }
            }
            "bend" => {
                if obj["bend"].is_number() {
                    self.error(
                        &child_key(path, "bend"),
                        name,
                        format!("`midi.bend` is {}: inside `midi`, `bend` names the bend wheel as a source", obj["bend"]),
                        Some("write `\"bend\": true` to map the wheel onto this control's param; a bend range in semitones goes beside `midi` on a note control that plays a voice module".to_string()),
                    );
                    return None;
                }
                flag(self, "bend")?;
                MidiSource::Bend { channel: channel? }
            }
            "aftertouch" => {
                flag(self, "aftertouch")?;
                MidiSource::Aftertouch { channel: channel? }
            }
            "poly_aftertouch" => {
                flag(self, "poly_aftertouch")?;
                MidiSource::PolyAftertouch { channel: channel? }
            }
            _ => {
                flag(self, "program")?;
                MidiSource::Program { channel: channel? }
            }
        };
        Some(ControlSourceDecl::Midi(src))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::scene::{ControlSourceDecl, Curve, MidiSource};

    fn with(c: &str) -> String {
        scene_with(&format!(",\n\"controls\": [{c}]"))
    }

    #[test]
    fn controls_read_their_sources_targets_and_curves() {
        let s = load(&with(
            "{\"osc\": \"/f/c\", \"node\": \"a\", \"param\": \"freq\", \"min\": \"200Hz\", \"max\": \"8kHz\", \"curve\": \"exp\", \"ramp\": \"10ms\"},\n {\"midi\": {\"cc\": 1, \"lsb\": 33, \"channel\": 2}, \"node\": \"a\", \"param\": \"freq\"},\n {\"midi\": {\"note\": \"any\"}, \"node\": \"a\", \"param\": \"gate\", \"pitch\": {\"node\": \"a\", \"param\": \"freq\"}}",
        ))
        .unwrap();
        assert_eq!(s.controls.len(), 3);
        let c = &s.controls[0];
        assert_eq!(c.source, ControlSourceDecl::Osc("/f/c".to_string()));
        let t = c.target.as_ref().unwrap();
        assert_eq!(
            (t.node.as_str(), t.param.as_str(), t.curve),
            ("a", "freq", Some(Curve::Exp))
        );
        assert!(c.ramp.is_some());
        assert_eq!(
            s.controls[1].source,
            ControlSourceDecl::Midi(MidiSource::Cc {
                cc: 1,
                lsb: Some(33),
                channel: Some(2)
            })
        );
        assert_eq!(
            s.controls[2].source,
            ControlSourceDecl::Midi(MidiSource::Note {
                note: None,
                channel: None
            })
        );
        assert_eq!(s.controls[2].pitch.as_ref().unwrap().param, "freq");
        assert_eq!(s.controls[2].index, 2);
    }

    #[test]
    fn bad_controls_are_located_errors() {
        one_error(
            &with("{\"node\": \"a\", \"param\": \"freq\"}"),
            "control has no source",
        );
        one_error(
            &with("{\"osc\": \"f\", \"node\": \"a\", \"param\": \"freq\"}"),
            "is not an OSC address",
        );
        one_error(
            &with("{\"osc\": \"/morphrt/x\", \"node\": \"a\", \"param\": \"freq\"}"),
            "reserved",
        );
        one_error(
            &with("{\"osc\": \"/x\", \"midi\": {\"cc\": 1}, \"node\": \"a\", \"param\": \"freq\"}"),
            "both `osc` and `midi`",
        );
        one_error(
            &with("{\"midi\": {\"cc\": 128}, \"node\": \"a\", \"param\": \"freq\"}"),
            "`cc` is out of range",
        );
        one_error(
            &with("{\"midi\": {\"cc\": 1, \"channel\": 0}, \"node\": \"a\", \"param\": \"freq\"}"),
            "`channel` is out of range",
        );
        one_error(
            &with("{\"midi\": {}, \"node\": \"a\", \"param\": \"freq\"}"),
            "names no message",
        );
        one_error(
            &with("{\"midi\": {\"cc\": 1, \"note\": 3}, \"node\": \"a\", \"param\": \"freq\"}"),
            "more than one message",
        );
        one_error(
            &with("{\"osc\": \"/x\", \"param\": \"freq\"}"),
            "control has no `node`",
        );
        one_error(
            &with("{\"osc\": \"/x\", \"node\": \"a\", \"param\": \"freq\", \"curve\": \"expo\"}"),
            "did you mean `exp`",
        );
        let e = one_error(
            &with("{\"osc\": 3, \"node\": \"a\", \"param\": \"freq\"}"),
            "`osc` must be a string",
        );
        assert_eq!(e.loc.as_ref().unwrap().path, "controls[0].osc");
    }

    #[test]
    fn pressures_and_a_bend_range_read_and_the_two_bends_are_told_apart() {
        let s = load(&with(
            "{\"midi\": {\"aftertouch\": true, \"channel\": 2}, \"node\": \"a\", \"param\": \"freq\"},\n {\"midi\": {\"poly_aftertouch\": true}, \"node\": \"a\", \"param\": \"freq\"},\n {\"midi\": {\"note\": \"any\"}, \"node\": \"a\", \"param\": \"freq\", \"bend\": 7.5}",
        ))
        .unwrap();
        assert_eq!(
            s.controls[0].source,
            ControlSourceDecl::Midi(MidiSource::Aftertouch { channel: Some(2) })
        );
        assert_eq!(
            s.controls[1].source,
            ControlSourceDecl::Midi(MidiSource::PolyAftertouch { channel: None })
        );
        assert_eq!(s.controls[2].bend.as_ref().unwrap().0, 7.5);
        let e = one_error(
            &with("{\"midi\": {\"note\": \"any\"}, \"node\": \"a\", \"param\": \"freq\", \"bend\": -1}"),
            "`bend` is out of range",
        );
        assert_eq!(e.loc.as_ref().unwrap().path, "controls[0].bend");
        one_error(
            &with("{\"midi\": {\"note\": \"any\"}, \"node\": \"a\", \"param\": \"freq\", \"bend\": true}"),
            "a range in semitones, not `true`",
        );
        let e = one_error(
            &with("{\"midi\": {\"note\": \"any\", \"bend\": 2}, \"node\": \"a\", \"param\": \"freq\"}"),
            "`bend` names the bend wheel as a source",
        );
        assert_eq!(e.loc.as_ref().unwrap().path, "controls[0].midi.bend");
        one_error(
            &with("{\"midi\": {\"bend\": 2}, \"node\": \"a\", \"param\": \"freq\"}"),
            "`bend` names the bend wheel as a source",
        );
        one_error(
            &with("{\"midi\": {\"aftertouch\": false}, \"node\": \"a\", \"param\": \"freq\"}"),
            "`aftertouch: false` maps nothing",
        );
    }
}
