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

#[cfg(test)]
mod tests {
    use super::super::testing::*;

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
