//! Edges: `from` and `to` endpoints, and the `delay` of a feedback edge.

use super::Loader;
use crate::scene::pos::child_key;
use crate::scene::EdgeDecl;
use serde_json::Value;

pub(crate) const EDGE_KEYS: [&str; 3] = ["from", "to", "delay"];

impl Loader<'_> {
    /// `edges`.
    pub(super) fn edges(&mut self, v: &Value, p: &str, edges: &mut Vec<EdgeDecl>) {
        self.items(v, p, "edges", edges, |l, x, xp, _| l.edge(x, xp));
    }

    fn edge(&mut self, v: &Value, path: &str) -> Option<EdgeDecl> {
        let obj = self.object(v, path, "edge", None)?;
        self.unknown_fields(obj, path, &EDGE_KEYS, "an edge", None);
        let mut ends = [None, None];
        for (slot, key) in ends.iter_mut().zip(["from", "to"]) {
            if let Some(x) = obj.get(key) {
                *slot = self.endpoint(x, &child_key(path, key), key, None);
            } else {
                self.error(
                    path,
                    None,
                    format!("edge has no `{key}`"),
                    "an edge is `{ \"from\": \"node[:port]\", \"to\": \"node[:port]\" }`, with an optional `\"delay\": \"64samples\"` for feedback"
                        .to_string(),
                );
            }
        }
        let [from, to] = ends;
        let delay_path = child_key(path, "delay");
        let delay = obj
            .get("delay")
            .and_then(|v| self.time(v, &delay_path, "delay", None));
        Some(EdgeDecl {
            from: from?,
            to: to?,
            delay_loc: delay.map(|_| self.pos.loc(&delay_path)),
            delay,
            loc: self.pos.loc(path),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn edge_endpoints() {
        for bad in ["", ":", "a:", ":b", "a:b:c", "a b", "a:b c", "ä"] {
            let text = scene_with(&format!(
                ",\n\"edges\": [{{\"from\": \"{bad}\", \"to\": \"a\"}}]"
            ));
            let e = one_error(&text, "is not a valid endpoint");
            assert_eq!(at(&e), (3, 20), "{bad}");
            assert!(e.help.unwrap().contains("node:port"));
        }
        one_error(
            &scene_with(", \"edges\": [{\"from\": \"a\"}]"),
            "edge has no `to`",
        );
        one_error(
            &scene_with(", \"edges\": [{\"from\": \"a\", \"to\": 2}]"),
            "`to` must be a string",
        );
        let s = load(&scene_with(
            ", \"edges\": [{\"from\": \"a.b-c_1:out_2\", \"to\": \"a\"}]",
        ))
        .unwrap();
        assert_eq!(s.edges[0].from.node, "a.b-c_1");
        assert_eq!(s.edges[0].from.port.as_deref(), Some("out_2"));
    }
}
