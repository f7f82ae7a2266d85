//! Outputs: the named buses, each one endpoint per channel, and the `main`
//! bus every scene needs.

use super::report::valid_list;
use super::Loader;
use crate::scene::pos::{child_index, child_key};
use crate::scene::{suggest, OutputBus, Scene};
use serde_json::{Map, Value};

impl Loader<'_> {
    /// `outputs`, and where it is written.
    pub(super) fn outputs(&mut self, v: &Value, p: &str, scene: &mut Scene) {
        scene.outputs_loc = Some(self.pos.loc(p));
        if let Some(obj) = self.object(v, p, "outputs", None) {
            scene.outputs = self.buses(obj, p);
        }
    }

    /// Each bus of the `outputs` object, in file order.
    fn buses(&mut self, obj: &Map<String, Value>, path: &str) -> Vec<OutputBus> {
        let mut buses = Vec::new();
        for (name, v) in obj {
            let bp = child_key(path, name);
            if name.is_empty() {
                self.error(
                    &bp,
                    None,
                    "an output bus needs a name",
                    "e.g. `\"main\"`".to_string(),
                );
                continue;
            }
            let mut channels = Vec::new();
            match v {
                Value::String(_) => {
                    if let Some(e) = self.endpoint(v, &bp, name, None) {
                        channels.push((e, self.pos.loc(&bp)));
                    }
                }
                Value::Array(items) => {
                    if items.is_empty() {
                        self.error(
                            &bp,
                            None,
                            format!("output bus `{name}` has no channels"),
                            "list one endpoint per channel, e.g. `[\"mix:out\"]`".to_string(),
                        );
                    }
                    for (i, item) in items.iter().enumerate() {
                        let cp = child_index(&bp, i);
                        if let Some(e) = self.endpoint(item, &cp, name, None) {
                            channels.push((e, self.pos.loc(&cp)));
                        }
                    }
                }
                _ => self.type_error(
                    v,
                    &bp,
                    name,
                    "an array of endpoints (or one endpoint string)",
                    None,
                ),
            }
            buses.push(OutputBus {
                name: name.clone(),
                channels,
                loc: self.pos.loc(&bp),
            });
        }
        buses
    }

    /// The scene must have `outputs`, with a `main` bus (`outputs` is the
    /// top-level value, if any).
    pub(super) fn main_bus(&mut self, outputs: Option<&Value>) {
        let Some(outputs) = outputs else {
            self.error(
                "",
                None,
                "the scene has no `outputs`",
                "add `\"outputs\": { \"main\": [\"<node>\"] }`; `main` is what `run` plays and `render` writes".to_string(),
            );
            return;
        };
        if let Value::Object(o) = outputs {
            if !o.contains_key("main") {
                let names: Vec<&str> = o.keys().map(String::as_str).collect();
                let mut help = if names.is_empty() {
                    "`outputs` is empty; add `\"main\": [\"<node>\"]`".to_string()
                } else {
                    format!(
                        "buses present: {}; `main` is what `run` plays and `render` writes",
                        valid_list(&names)
                    )
                };
                if let Some(s) = suggest::closest("main", names.iter().copied()) {
                    help = format!("did you mean `{s}`? ({help})");
                }
                self.error("outputs", None, "`outputs` has no `main` bus", help);
            }
        }
    }
}

/// The longest name `channel_names` takes, in characters.
const MAX_CHANNEL_NAME: usize = 64;

impl Loader<'_> {
    /// `channel_names`: one name per channel of the `main` bus, each 1 to
    /// [`MAX_CHANNEL_NAME`] characters without `:` or control characters
    /// (a JACK port name is `client:port`), no two the same.
    pub(super) fn channel_names(&mut self, v: &Value, scene: &mut Scene) {
        let p = "channel_names";
        let Some(items) = self.array(v, p, p, None) else {
            return;
        };
        let main = scene
            .outputs
            .iter()
            .find(|b| b.name == "main")
            .map(|b| b.channels.len());
        if let Some(n) = main.filter(|n| *n != items.len()) {
            self.error(
                p,
                None,
                format!(
                    "`channel_names` has {} name{} and the `main` bus {n} channel{}",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" },
                    if n == 1 { "" } else { "s" }
                ),
                "give one name per channel of `outputs.main`, in its order".to_string(),
            );
            return;
        }
        let mut names: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let ip = child_index(p, i);
            let Some(name) = self.string(item, &ip, p, None) else {
                continue;
            };
            let why = if name.is_empty() {
                Some("is empty".to_string())
            } else if name.chars().count() > MAX_CHANNEL_NAME {
                Some(format!("is longer than {MAX_CHANNEL_NAME} characters"))
            } else if name.contains(':') || name.chars().any(char::is_control) {
                Some("has a `:` or a control character".to_string())
            } else if names.iter().any(|n| n == name) {
                Some("is given twice".to_string())
            } else {
                None
            };
            match why {
                Some(why) => self.error(
                    &ip,
                    None,
                    format!("channel name `{}` {why}", name.escape_debug()),
                    format!("a channel name is 1 to {MAX_CHANNEL_NAME} characters without `:` or control characters, each one different, e.g. `[\"left\", \"right\"]`"),
                ),
                None => names.push(name.to_string()),
            }
        }
        if names.len() == items.len() {
            scene.channel_names = names;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn channel_names_name_each_main_channel_or_are_refused_where_they_are_wrong() {
        let two = |names: &str| {
            format!(
                "{{\"version\": \"1.0\", \"nodes\": [{{\"id\": \"a\", \"op\": \"sine\"}}],\n\"outputs\": {{\"main\": [\"a\", \"a\"]}},\n\"channel_names\": {names}}}"
            )
        };
        let s = load(&two(r#"["left", "right"]"#)).unwrap();
        assert_eq!(s.channel_names, ["left", "right"]);
        assert!(load(&scene_with("")).unwrap().channel_names.is_empty());
        let e = one_error(
            &two(r#"["left"]"#),
            "`channel_names` has 1 name and the `main` bus 2 channels",
        );
        assert_eq!((path(&e), at(&e)), ("channel_names", (3, 18)));
        let e = one_error(&two(r#"["left", "a:b"]"#), "channel name `a:b` has a `:`");
        assert_eq!((path(&e), at(&e)), ("channel_names[1]", (3, 27)));
        let e = one_error(&two(r#"["l", "l"]"#), "channel name `l` is given twice");
        assert_eq!(path(&e), "channel_names[1]");
        let e = one_error(&two(r#"["", "r"]"#), "channel name `` is empty");
        assert_eq!(path(&e), "channel_names[0]");
        let long = format!(r#"["{}", "r"]"#, "x".repeat(65));
        one_error(&two(&long), "is longer than 64 characters");
        let e = one_error(&two(r#"["l", 2]"#), "channel_names");
        assert_eq!(path(&e), "channel_names[1]");
        one_error(&two(r#""left""#), "channel_names");
    }

    #[test]
    fn outputs_rules() {
        let e = one_error(
            "{\"version\": \"1.0\", \"nodes\": [{\"id\": \"a\", \"op\": \"sine\"}],\n\"outputs\": {\"mian\": \"a\", \"aux\": [\"a\"]}}",
            "`outputs` has no `main` bus",
        );
        assert_eq!(at(&e), (2, 12));
        let help = e.help.unwrap();
        assert!(help.contains("did you mean `mian`?"), "{help}");
        assert!(help.contains("`aux`"), "{help}");
        one_error(
            "{\"version\": \"1.0\", \"nodes\": [{\"id\": \"a\", \"op\": \"sine\"}]}",
            "the scene has no `outputs`",
        );
        one_error(
            "{\"version\": \"1.0\", \"outputs\": {\"main\": []}}",
            "output bus `main` has no channels",
        );
        one_error(
            "{\"version\": \"1.0\", \"outputs\": {\"main\": [\"a\", 3]}}",
            "`main` must be a string, found the number `3`",
        );
        one_error(
            "{\"version\": \"1.0\", \"outputs\": {\"main\": 3}}",
            "`main` must be an array of endpoints",
        );
        let s = load(
            "{\"version\": \"1.0\", \"outputs\": {\"main\": [\"a:l\", \"a:r\"], \"mon\": \"b\"}}",
        )
        .unwrap();
        assert_eq!(s.outputs.len(), 2);
        assert_eq!(s.outputs[1].name, "mon");
        assert_eq!(s.outputs[1].channels.len(), 1);
    }
}
