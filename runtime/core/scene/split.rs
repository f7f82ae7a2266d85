//! A scene cut in two along a set of its nodes, as loaded scenes (no text
//! is written or read again): a part whose edges leaving it are summed by
//! a node of unit gain, its main output, and the rest, which reads that
//! sum through an `input` node. A render plays the part ahead on a thread
//! of its own (`runtime/host/offline/ahead.rs`, which decides the cut and
//! checks that both parts compile to what the whole scene plays).

use super::load::empty_scene;
use super::{EdgeDecl, Endpoint, Loc, NodeDecl, OutputBus, Param, RawValue, Scene};

/// The two scenes of [`Scene::split`].
#[derive(Clone, Debug)]
pub struct Split {
    /// The nodes of the part, the edges between them and the sum of the
    /// edges that left it, its main output.
    pub part: Scene,
    /// The other nodes and their edges, and the `input` node that stands
    /// for the part's sum.
    pub rest: Scene,
}

/// A node the cut adds, with one number param, as the loader reads
/// `{ "id": id, "op": op, "params": { name: value } }` (`value` an integer).
fn added_node(id: &str, op: &str, name: &str, value: u32) -> NodeDecl {
    NodeDecl {
        id: id.to_string(),
        op: op.to_string(),
        params: vec![Param {
            name: name.to_string(),
            value: RawValue::Number {
                value: f64::from(value),
                literal: value.to_string(),
            },
            loc: Loc::default(),
        }],
        ramp: None,
        module: None,
        overrides: Default::default(),
        loc: Loc::default(),
        op_loc: Loc::default(),
        overrides_loc: None,
    }
}

fn endpoint(node: &str) -> Endpoint {
    Endpoint {
        node: node.to_string(),
        port: None,
    }
}

impl Scene {
    /// Whether the scene holds nothing but nodes, edges without a delay
    /// and outputs (no modules, events or controls): nothing in it changes
    /// what plays while it plays, and [`split`](Self::split) keeps all of it.
    pub fn only_nodes_and_edges(&self) -> bool {
        self.modules.is_empty()
            && self.events.is_empty()
            && self.notes.is_empty()
            && self.controls.is_empty()
            && self.edges.iter().all(|e| e.delay.is_none())
    }

    /// The ids of the scene's nodes, in the order they are written.
    pub fn node_ids(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.id.as_str())
    }

    /// The scene cut in two along `in_part` (which nodes, by id), both
    /// playing with `seed` and keeping everything else of the scene (its
    /// rate, duration, profile, settings):
    /// - the part: its nodes, in the scene's order, then `sum`, a `gain`
    ///   of 1 that every edge from the part to a node outside it goes into
    ///   instead, and that is its only output (`main`);
    /// - the rest: `feed`, an `input` of channel 0, then the other nodes,
    ///   their edges, and in the place of the first edge that left the
    ///   part, one edge from `feed` to where it went (the others are
    ///   dropped: the part's sum carries them); the scene's outputs and
    ///   channel names.
    ///
    /// Meant for a scene whose edges leaving the part all go into one
    /// input of one node, and that [`only_nodes_and_edges`](Self::only_nodes_and_edges).
    pub fn split(
        &self,
        in_part: impl Fn(&str) -> bool,
        sum: &str,
        feed: &str,
        seed: Option<u64>,
    ) -> Split {
        // Every field named (a new one does not compile until it is
        // placed): the scene's settings are kept, what plays by time is
        // not (`only_nodes_and_edges`), the outputs go as the docs say.
        let Scene {
            file,
            dir,
            version,
            profile,
            seed: own_seed,
            seed_loc: _,
            sample_rate,
            sample_rate_set,
            duration,
            tempo,
            duration_loc,
            config,
            modules: _,
            nodes: _,
            edges: _,
            outputs,
            outputs_loc,
            channel_names,
            events: _,
            notes: _,
            controls: _,
            edit,
            warnings: _,
        } = self;
        let kept = |nodes: Vec<NodeDecl>, edges: Vec<EdgeDecl>| Scene {
            version: version.clone(),
            profile: *profile,
            seed: seed.or(*own_seed),
            sample_rate: *sample_rate,
            sample_rate_set: *sample_rate_set,
            duration: *duration,
            tempo: *tempo,
            duration_loc: duration_loc.clone(),
            config: config.clone(),
            nodes,
            edges,
            edit: edit.clone(),
            ..empty_scene(file, dir.clone())
        };
        let (mut a_edges, mut b_edges) = (Vec::new(), Vec::new());
        let mut first = true;
        for e in &self.edges {
            if !in_part(&e.from.node) {
                b_edges.push(e.clone());
            } else if in_part(&e.to.node) {
                a_edges.push(e.clone());
            } else {
                a_edges.push(EdgeDecl {
                    to: endpoint(sum),
                    ..e.clone()
                });
                if first {
                    b_edges.push(EdgeDecl {
                        from: endpoint(feed),
                        ..e.clone()
                    });
                    first = false;
                }
            }
        }
        let mut a_nodes: Vec<NodeDecl> = Vec::new();
        let mut b_nodes = vec![added_node(feed, "input", "channel", 0)];
        for n in &self.nodes {
            if in_part(&n.id) {
                a_nodes.push(n.clone());
            } else {
                b_nodes.push(n.clone());
            }
        }
        a_nodes.push(added_node(sum, "gain", "gain", 1));
        let mut part = kept(a_nodes, a_edges);
        part.outputs = vec![OutputBus {
            name: "main".to_string(),
            channels: vec![(endpoint(sum), Loc::default())],
            loc: Loc::default(),
        }];
        let mut rest = kept(b_nodes, b_edges);
        rest.outputs = outputs.clone();
        rest.outputs_loc = outputs_loc.clone();
        rest.channel_names = channel_names.clone();
        Split { part, rest }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::load_str;

    fn edges(s: &Scene) -> Vec<String> {
        s.edges
            .iter()
            .map(|e| format!("{}>{}", e.from, e.to))
            .collect()
    }

    #[test]
    fn a_split_moves_the_part_and_its_sum_and_feeds_the_rest_once() {
        let text = r#"{ "version": "1.0", "seed": 7, "duration": "2s",
            "nodes": [
                { "id": "a", "op": "sine", "params": { "freq": "110Hz" } },
                { "id": "b", "op": "saw" },
                { "id": "f", "op": "biquad" },
                { "id": "c", "op": "sine" },
                { "id": "mix", "op": "gain", "params": { "gain": 0.5 } } ],
            "edges": [ { "from": "b", "to": "f" }, { "from": "a", "to": "mix" },
                       { "from": "f", "to": "mix" }, { "from": "c", "to": "mix" },
                       { "from": "c", "to": "f:cutoff" } ],
            "outputs": { "main": ["mix", "mix"] }, "channel_names": ["l", "r"] }"#;
        let scene = load_str(text, "s.json", None).expect("a valid scene");
        assert!(scene.only_nodes_and_edges());
        let in_part = |id: &str| matches!(id, "a" | "b" | "c" | "f");
        let Split { part, rest } = scene.split(in_part, "sum", "-", Some(42));
        assert_eq!(
            part.node_ids().collect::<Vec<_>>(),
            ["a", "b", "f", "c", "sum"]
        );
        assert_eq!(
            edges(&part),
            ["b>f", "a>sum", "f>sum", "c>sum", "c>f:cutoff"]
        );
        assert_eq!(rest.node_ids().collect::<Vec<_>>(), ["-", "mix"]);
        assert_eq!(edges(&rest), ["->mix"]);
        let main = |s: &Scene| -> Vec<String> {
            s.outputs[0]
                .channels
                .iter()
                .map(|(e, _)| e.to_string())
                .collect()
        };
        assert_eq!(main(&part), ["sum"]);
        assert_eq!(main(&rest), ["mix", "mix"]);
        assert!(part.channel_names.is_empty());
        assert_eq!(rest.channel_names, ["l", "r"]);
        for s in [&part, &rest] {
            assert_eq!(s.seed, Some(42));
            assert_eq!(s.duration, scene.duration);
        }
        let added = |s: &Scene, id: &str| -> (String, String, f64) {
            let n = s.nodes.iter().find(|n| n.id == id).expect("the added node");
            let RawValue::Number { value, .. } = n.params[0].value else {
                panic!("a number")
            };
            (n.op.clone(), n.params[0].name.clone(), value)
        };
        assert_eq!(added(&part, "sum"), ("gain".into(), "gain".into(), 1.0));
        assert_eq!(added(&rest, "-"), ("input".into(), "channel".into(), 0.0));
        let unseeded = scene.split(in_part, "sum", "-", None);
        assert_eq!(unseeded.part.seed, Some(7));
    }

    #[test]
    fn a_scene_with_events_modules_controls_or_delayed_edges_is_not_only_nodes_and_edges() {
        let base = r#""nodes": [ { "id": "a", "op": "sine" }, { "id": "g", "op": "gain" } ],
            "outputs": { "main": ["g"] }"#;
        for (extra, edge) in [
            (
                r#", "events": [ { "time": "1s", "node": "a", "param": "freq", "value": 220 } ]"#,
                "",
            ),
            (
                r#", "controls": [ { "osc": "/f", "node": "a", "param": "freq" } ]"#,
                "",
            ),
            (
                r#", "modules": [ { "id": "m", "nodes": [ { "id": "x", "op": "sine" } ] } ]"#,
                "",
            ),
            ("", r#", "delay": "1ms""#),
        ] {
            let text = format!(
                r#"{{ "version": "1.0", {base}, "edges": [ {{ "from": "a", "to": "g"{edge} }} ]{extra} }}"#
            );
            let scene = load_str(&text, "s.json", None).expect("a valid scene");
            assert!(!scene.only_nodes_and_edges(), "{text}");
        }
        let text =
            format!(r#"{{ "version": "1.0", {base}, "edges": [ {{ "from": "a", "to": "g" }} ] }}"#);
        assert!(load_str(&text, "s.json", None)
            .expect("valid")
            .only_nodes_and_edges());
    }
}
