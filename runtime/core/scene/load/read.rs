//! Typed value readers: each reads one JSON value as what the scene expects
//! there (an object, a string, an integer in a range, one of a list, a time,
//! an endpoint, a param value kept as written) or reports why it cannot.
//! One rule for numbers in strings holds for all of them ([`numeric`]).

use super::report::valid_list;
use super::Loader;
use crate::profile::Profile;
use crate::scene::pos::child_index;
use crate::scene::units::TimeSpec;
use crate::scene::{suggest, Endpoint, RawValue};
use serde_json::{Map, Value};

pub(crate) const PROFILES: [&str; 3] = ["strict", "repro", "live"];

pub(super) const ID_HELP: &str = "ids use only letters, digits, `_`, `.` and `-`";
const ENDPOINT_HELP: &str =
    "an endpoint is `node` or `node:port`; ids and ports use only letters, digits, `_`, `.` and `-`";
pub(super) const TIME_HELP: &str =
    "a time is a string with a unit (`1.5s`, `250ms`, `20us`, `4800samples`), hours and minutes (`2h`, `1m30s`), beats or bars at the scene's tempo (`1.5beats`, `2bars`, `1/8beat`), or a JSON number of seconds";

/// The one rule for numbers in strings: wherever the scene expects a number,
/// a string holding exactly a JSON number (`"48000"`, `"1e-6"`) means that
/// number, as it does for params (`"440"`). Anything else is returned as is
/// (and then reported as the wrong type, or a time without a unit, …).
pub(super) fn numeric(v: &Value) -> std::borrow::Cow<'_, Value> {
    if let Value::String(s) = v {
        if s.trim() == s {
            if let Ok(n) = serde_json::from_str::<serde_json::Number>(s) {
                return std::borrow::Cow::Owned(Value::Number(n));
            }
        }
    }
    std::borrow::Cow::Borrowed(v)
}

/// Node ids (and ports) match `[A-Za-z0-9_.-]+`.
pub(super) fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

impl Loader<'_> {
    pub(super) fn object<'v>(
        &mut self,
        v: &'v Value,
        path: &str,
        name: &str,
        node: Option<&str>,
    ) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            _ => {
                self.type_error(v, path, name, "an object", node);
                None
            }
        }
    }

    pub(super) fn array<'v>(
        &mut self,
        v: &'v Value,
        path: &str,
        name: &str,
        node: Option<&str>,
    ) -> Option<&'v [Value]> {
        match v {
            Value::Array(a) => Some(a),
            _ => {
                self.type_error(v, path, name, "an array", node);
                None
            }
        }
    }

    pub(super) fn string<'v>(
        &mut self,
        v: &'v Value,
        path: &str,
        name: &str,
        node: Option<&str>,
    ) -> Option<&'v str> {
        match v {
            Value::String(s) => Some(s),
            _ => {
                self.type_error(v, path, name, "a string", node);
                None
            }
        }
    }

    pub(super) fn boolean(
        &mut self,
        v: &Value,
        path: &str,
        name: &str,
        node: Option<&str>,
    ) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => {
                self.type_error(v, path, name, "`true` or `false`", node);
                None
            }
        }
    }

    /// An integer in `lo..=hi`.
    pub(super) fn int(
        &mut self,
        v: &Value,
        path: &str,
        name: &str,
        lo: u64,
        hi: u64,
        node: Option<&str>,
    ) -> Option<u64> {
        let help = format!("valid: an integer from {lo} to {hi}");
        let v = &*numeric(v);
        match v.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Some(n),
            n => {
                let found = self.found(v, path);
                // An integer outside the range (a negative one included) or
                // not an integer at all.
                let msg = if n.is_some() || v.is_i64() {
                    format!("`{name}` is out of range: {found}")
                } else {
                    format!("`{name}` must be an integer, found {found}")
                };
                self.error(path, node, msg, help);
                None
            }
        }
    }

    /// A seed: any integer that fits in a u64.
    pub(super) fn seed(&mut self, v: &Value, path: &str, name: &str) -> Option<u64> {
        let n = numeric(v).as_u64();
        if n.is_none() {
            let found = self.found(v, path);
            self.error(
                path,
                None,
                format!("`{name}` must be a non-negative integer, found {found}"),
                format!("valid: an integer from 0 to {}", u64::MAX),
            );
        }
        n
    }

    /// One of `choices`.
    pub(super) fn choice<'v>(
        &mut self,
        v: &'v Value,
        path: &str,
        name: &str,
        choices: &[&str],
        node: Option<&str>,
    ) -> Option<&'v str> {
        let s = self.string(v, path, name, node)?;
        if choices.contains(&s) {
            return Some(s);
        }
        let valid = format!("valid values: {}", valid_list(choices));
        let help = match suggest::closest(s, choices.iter().copied()) {
            Some(c) => format!("did you mean `{c}`? ({valid})"),
            None => valid,
        };
        self.error(path, node, format!("`{s}` is not a valid `{name}`"), help);
        None
    }

    pub(super) fn profile(&mut self, v: &Value, path: &str, node: Option<&str>) -> Option<Profile> {
        self.choice(v, path, "profile", &PROFILES, node)
            .and_then(Profile::parse)
    }

    /// A time: a string with a unit, or a JSON number of seconds; not negative.
    pub(super) fn time(
        &mut self,
        v: &Value,
        path: &str,
        name: &str,
        node: Option<&str>,
    ) -> Option<TimeSpec> {
        self.last_beats = None;
        let parsed = match v {
            // A number in a string is that number of seconds (see `numeric`).
            Value::String(s) if matches!(*numeric(v), Value::Number(_)) => {
                TimeSpec::from_seconds_literal(s)
            }
            Value::String(s) => {
                let parsed = TimeSpec::parse_in(s, self.tempo.as_ref());
                self.last_beats = match (&self.tempo, crate::scene::Musical::parse(s)) {
                    (Some(t), Some(Ok(m))) => t.beats(m),
                    _ => None,
                };
                parsed
            }
            Value::Number(n) => {
                let lit = self
                    .pos
                    .literal(path, self.text)
                    .map(str::to_string)
                    .unwrap_or_else(|| n.to_string());
                TimeSpec::from_seconds_literal(&lit)
            }
            _ => {
                let found = self.found(v, path);
                self.error(
                    path,
                    node,
                    format!("`{name}` must be a time, found {found}"),
                    TIME_HELP.to_string(),
                );
                return None;
            }
        };
        match parsed {
            Ok(t) if t.is_negative() => {
                let found = self.found(v, path);
                self.error(
                    path,
                    node,
                    format!("`{name}` must not be negative, found {found}"),
                    TIME_HELP.to_string(),
                );
                None
            }
            Ok(t) => Some(t),
            // The tempo itself is wrong, and said so: not again at each use.
            Err(crate::scene::units::UnitError::NoTempo(_)) if self.tempo_bad => None,
            Err(crate::scene::units::UnitError::NoTempo(t)) => {
                let help = crate::scene::units::NO_TEMPO_HELP.to_string();
                self.error(
                    path,
                    node,
                    format!("`{name}`: {}", crate::scene::units::no_tempo_message(&t)),
                    help,
                );
                None
            }
            Err(e) => {
                self.error(
                    path,
                    node,
                    format!("`{name}` is not a valid time: {e}"),
                    TIME_HELP.to_string(),
                );
                None
            }
        }
    }

    /// `"node"` or `"node:port"`.
    pub(super) fn endpoint(
        &mut self,
        v: &Value,
        path: &str,
        name: &str,
        node: Option<&str>,
    ) -> Option<Endpoint> {
        let s = self.string(v, path, name, node)?;
        let (n, p) = match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        if !valid_id(n) || p.is_some_and(|p| !valid_id(p)) {
            self.error(
                path,
                node,
                format!("`{s}` is not a valid endpoint"),
                ENDPOINT_HELP.to_string(),
            );
            return None;
        }
        Some(Endpoint {
            node: n.to_string(),
            port: p.map(str::to_string),
        })
    }

    /// A param or event value, kept as written.
    pub(super) fn raw(&self, v: &Value, path: &str) -> RawValue {
        match v {
            Value::Number(n) => RawValue::Number {
                value: n.as_f64().unwrap_or(f64::NAN),
                literal: self
                    .pos
                    .literal(path, self.text)
                    .map(str::to_string)
                    .unwrap_or_else(|| n.to_string()),
            },
            Value::String(s) => RawValue::Text(s.clone()),
            Value::Bool(b) => RawValue::Bool(*b),
            Value::Array(a) => RawValue::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, x)| self.raw(x, &child_index(path, i)))
                    .collect(),
            ),
            Value::Null => RawValue::Other("null"),
            Value::Object(_) => RawValue::Other("an object"),
        }
    }

    /// An array of `name`s: each item read by `item` (given its path and its
    /// index) into `out`; an item that cannot be read is left out.
    pub(super) fn items<T>(
        &mut self,
        v: &Value,
        path: &str,
        name: &str,
        out: &mut Vec<T>,
        mut item: impl FnMut(&mut Self, &Value, &str, usize) -> Option<T>,
    ) {
        if let Some(items) = self.array(v, path, name, None) {
            for (i, x) in items.iter().enumerate() {
                if let Some(t) = item(self, x, &child_index(path, i), i) {
                    out.push(t);
                }
            }
        }
    }

    /// A required field of `obj`, or an error at the object.
    pub(super) fn required<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        path: &str,
        key: &str,
        what: &str,
        node: Option<&str>,
    ) -> Option<&'v Value> {
        let v = obj.get(key);
        if v.is_none() {
            self.error(path, node, format!("{what} has no `{key}`"), None);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::scene::RawValue;

    #[test]
    fn wrong_types_name_expected_and_found() {
        let e = one_error(
            &scene_with(",\n\"seed\": \"4 2\""),
            "`seed` must be a non-negative integer, found the string \"4 2\"",
        );
        assert_eq!(at(&e), (3, 9));
        let e = one_error(&scene_with(",\n\"seed\": -1"), "found the number `-1`");
        assert_eq!(at(&e), (3, 9));
        one_error(
            &scene_with(", \"seed\": 18446744073709551616"),
            "`seed` must be a non-negative integer",
        );
        one_error(&scene_with(", \"seed\": 1.5"), "found the number `1.5`");
        one_error(
            &scene_with(", \"profile\": 3"),
            "`profile` must be a string, found the number `3`",
        );
        one_error(
            &scene_with(", \"modules\": {}"),
            "`modules` must be an array, found an object",
        );
        one_error(
            &scene_with(", \"edges\": [3]"),
            "`edge` must be an object, found the number `3`",
        );
        one_error(
            &scene_with(", \"events\": null"),
            "`events` must be an array, found null",
        );
        one_error(
            &scene_with(", \"profile_config\": []"),
            "`profile_config` must be an object, found an array",
        );
        one_error(
            &scene_with(", \"version\": 1.0"),
            "`version` must be a string",
        );
        let e = one_error(
            "{\"version\": \"1.0\", \"nodes\": [{\"id\": \"a\", \"op\": 5}],\n\"outputs\": {\"main\": \"a\"}}",
            "`op` must be a string",
        );
        assert_eq!(e.node.as_deref(), Some("a"));
        assert_eq!(at(&e), (1, 48));
        let errs = errors(
            "{\"version\": \"1.0\", \"nodes\": [{\"id\": \"a\", \"op\": \"x\", \"params\": []}],\n\"outputs\": {\"main\": \"a\"}}",
        );
        assert!(errs[0]
            .message
            .contains("`params` must be an object, found an array"));
        let e = one_error(
            &scene_with(", \"profile_config\": {\"flush_to_zero\": 1}"),
            "`flush_to_zero` must be `true` or `false`",
        );
        assert_eq!(path(&e), "profile_config.flush_to_zero");
    }

    // `"sample_rate": "48000"` is read as a param's `"440"` is.
    #[test]
    fn numbers_in_strings_mean_the_same_number_everywhere() {
        let fields = |quoted: bool| {
            let q = |x: &str| {
                if quoted {
                    format!("\"{x}\"")
                } else {
                    x.to_string()
                }
            };
            format!(
                ", \"sample_rate\": {}, \"seed\": {}, \"duration\": {}, \"profile_config\": {{\"block_size\": {}, \"oversampling\": {}, \"max_iterations\": {}, \"solver_tolerance\": {}, \"rng_seed\": {}}}",
                q("44100"), q("7"), q("2.5"), q("256"), q("4"), q("64"), q("1e-6"), q("7")
            )
        };
        let plain = load(&scene_with(&fields(false))).unwrap();
        let quoted = load(&scene_with(&fields(true))).unwrap();
        assert_eq!(quoted.sample_rate, 44100);
        assert_eq!(
            (
                quoted.sample_rate,
                quoted.seed,
                quoted.duration,
                quoted.config.block_size
            ),
            (
                plain.sample_rate,
                plain.seed,
                plain.duration,
                plain.config.block_size
            )
        );
        let (a, b) = (&quoted.config.overrides, &plain.config.overrides);
        assert_eq!(a.oversampling, Some(4));
        assert_eq!(
            (a.oversampling, a.max_iterations, a.solver_tolerance),
            (b.oversampling, b.max_iterations, b.solver_tolerance)
        );
        // The same range checks apply to the quoted form.
        one_error(
            &scene_with(", \"sample_rate\": \"0\""),
            "`sample_rate` is out of range",
        );
        one_error(
            &scene_with(", \"profile_config\": {\"oversampling\": \"3\"}"),
            "`oversampling` must be 1, 2 or 4",
        );
        // Only exactly a number: units, spaces and words stay errors.
        one_error(
            &scene_with(", \"sample_rate\": \" 48000\""),
            "must be an integer",
        );
        one_error(&scene_with(", \"seed\": \"seven\""), "non-negative integer");
    }

    #[test]
    fn param_values_are_kept_raw() {
        let s = load(
            r#"{"version": "1.0", "nodes": [{"id": "m", "op": "mixer",
            "params": {"gains": [1, -0.5e0, "-6dB"], "on": true, "x": null, "y": {}, "a b": 2}}],
            "outputs": {"main": ["m"]}}"#,
        )
        .unwrap();
        let p = &s.nodes[0].params;
        assert_eq!(
            p[0].value,
            RawValue::Array(vec![
                RawValue::Number {
                    value: 1.0,
                    literal: "1".into()
                },
                RawValue::Number {
                    value: -0.5,
                    literal: "-0.5e0".into()
                },
                RawValue::Text("-6dB".into()),
            ])
        );
        assert_eq!(p[1].value, RawValue::Bool(true));
        assert_eq!(p[2].value, RawValue::Other("null"));
        assert_eq!(p[3].value, RawValue::Other("an object"));
        assert_eq!(p[4].name, "a b");
        assert_eq!(p[4].loc.path, "nodes[0].params[\"a b\"]");
        assert_eq!((p[4].loc.line, p[4].loc.col), (2, 93));
    }
}
