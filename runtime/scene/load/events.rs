//! Events: a timed change of one node's param, with an optional `ramp`.

use super::read::{valid_id, ID_HELP};
use super::Loader;
use crate::scene::pos::child_key;
use crate::scene::EventDecl;
use serde_json::Value;

pub const EVENT_KEYS: [&str; 5] = ["time", "node", "param", "value", "ramp"];

impl Loader<'_> {
    /// `events`, each with its position in the array.
    pub(super) fn events(&mut self, v: &Value, p: &str, events: &mut Vec<EventDecl>) {
        self.items(v, p, "events", events, Self::event);
    }

    fn event(&mut self, v: &Value, path: &str, index: usize) -> Option<EventDecl> {
        let obj = self.object(v, path, "event", None)?;
        let node_name = obj.get("node").and_then(Value::as_str).map(str::to_string);
        let name = node_name.as_deref();
        self.unknown_fields(obj, path, &EVENT_KEYS, "an event", name);
        let time = self
            .required(obj, path, "time", "event", name)
            .and_then(|t| self.time(t, &child_key(path, "time"), "time", name));
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
