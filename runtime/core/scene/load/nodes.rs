//! Modules and nodes: each node's id (unique across the scene), `op`,
//! `params` kept as written, `profile_overrides` and `ramp`; a module's id,
//! profile and the nodes it groups.

use super::config::Scope;
use super::read::{valid_id, ID_HELP};
use super::Loader;
use crate::profile::Overrides;
use crate::scene::pos::{child_index, child_key};
use crate::scene::{Loc, ModuleDecl, NodeDecl, NoteTarget, Param, Scene, VoicesDecl, MAX_VOICES};
use serde_json::Value;
use std::collections::HashMap;

pub(crate) const NODE_KEYS: [&str; 5] = ["id", "op", "params", "profile_overrides", "ramp"];
pub(crate) const MODULE_KEYS: [&str; 11] = [
    "id",
    "profile",
    "profile_overrides",
    "nodes",
    "voices",
    "note",
    "out",
    "release_end",
    "steal_fade",
    "same_note",
    "legato",
];
/// The keys of a voice module's `note` map.
pub(crate) const NOTE_KEYS: [&str; 3] = ["pitch", "gate", "velocity"];

/// A module's keys, and `modules`, which is refused with its own error
/// rather than warned about as unknown.
const MODULE_KEYS_AND_NESTED: [&str; MODULE_KEYS.len() + 1] = {
    let mut keys = [""; MODULE_KEYS.len() + 1];
    let mut i = 0;
    while i < MODULE_KEYS.len() {
        keys[i] = MODULE_KEYS[i];
        i += 1;
    }
    keys[MODULE_KEYS.len()] = "modules";
    keys
};

/// The keys only a voice module (one with `voices`) may have.
const VOICE_ONLY_KEYS: [&str; 6] = [
    "note",
    "out",
    "release_end",
    "steal_fade",
    "same_note",
    "legato",
];

impl Loader<'_> {
    /// The top-level `nodes` (outside any module).
    pub(super) fn nodes(&mut self, v: &Value, p: &str, nodes: &mut Vec<NodeDecl>) {
        self.items(v, p, "nodes", nodes, |l, x, xp, _| l.node(x, xp, None));
    }

    /// `modules`: each module, and its nodes into `scene.nodes`.
    pub(super) fn modules(&mut self, v: &Value, path: &str, scene: &mut Scene) {
        let Some(items) = self.array(v, path, "modules", None) else {
            return;
        };
        let mut seen: HashMap<String, Loc> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            let mp = child_index(path, i);
            let Some(obj) = self.object(item, &mp, "module", None) else {
                continue;
            };
            let mut module = ModuleDecl {
                id: String::new(),
                overrides: Overrides::default(),
                loc: self.pos.loc(&mp),
                voices: None,
            };
            match obj.get("id") {
                None => self.error(
                    &mp,
                    None,
                    "module has no `id`",
                    format!("add `\"id\": \"<name>\"`; {ID_HELP}"),
                ),
                Some(v) => {
                    let ip = child_key(&mp, "id");
                    if let Some(id) = self.string(v, &ip, "id", None) {
                        if !valid_id(id) {
                            self.error(
                                &ip,
                                None,
                                format!("`{id}` is not a valid module id"),
                                ID_HELP.to_string(),
                            );
                        } else if let Some(first) = seen.get(id) {
                            let help = format!(
                                "module ids must be unique; `{id}` is first declared at line {}:{} ({})",
                                first.line, first.col, first.path
                            );
                            self.error(&ip, None, format!("duplicate module id `{id}`"), help);
                        } else {
                            seen.insert(id.to_string(), self.pos.loc(&ip));
                        }
                        module.id = id.to_string();
                    }
                }
            }
            let context = if module.id.is_empty() {
                "a module".to_string()
            } else {
                format!("module `{}`", module.id)
            };
            self.unknown_fields(obj, &mp, &MODULE_KEYS_AND_NESTED, &context, None);
            if obj.contains_key("modules") {
                self.nested_modules(&child_key(&mp, "modules"), &context);
            }
            let profile = obj
                .get("profile")
                .and_then(|v| self.profile(v, &child_key(&mp, "profile"), None));
            let mut ov = Overrides::default();
            if let Some(v) = obj.get("profile_overrides") {
                let op = child_key(&mp, "profile_overrides");
                if let Some(o) = self.object(v, &op, "profile_overrides", None) {
                    ov = self.overrides(o, &op, Scope::Local, None).0;
                }
                if let (Some(a), Some(b)) = (profile, ov.profile) {
                    if a != b {
                        self.error(
                            &child_key(&op, "profile"),
                            None,
                            format!("{context} sets `profile` to `{a}` and `profile_overrides.profile` to `{b}`"),
                            "give the module's profile once".to_string(),
                        );
                    }
                }
            }
            ov.profile = ov.profile.or(profile);
            module.overrides = ov;
            module.voices = self.voices(obj, &mp, &context);
            let index = scene.modules.len();
            scene.modules.push(module);
            match obj.get("nodes") {
                None => self.error(
                    &mp,
                    None,
                    format!("{context} has no `nodes`"),
                    "add `\"nodes\": [ ... ]` (a module groups nodes)".to_string(),
                ),
                Some(v) => {
                    let np = child_key(&mp, "nodes");
                    self.items(v, &np, "nodes", &mut scene.nodes, |l, x, xp, _| {
                        l.node(x, xp, Some(index))
                    });
                }
            }
        }
    }

    /// A module's voice settings: `None` for a module without `voices`
    /// (whose voice-only keys are errors), or when `voices` is invalid.
    fn voices(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        mp: &str,
        context: &str,
    ) -> Option<VoicesDecl> {
        let Some(v) = obj.get("voices") else {
            for key in VOICE_ONLY_KEYS {
                if obj.contains_key(key) {
                    self.error(
                        &child_key(mp, key),
                        None,
                        format!("{context} has `{key}` but no `voices`"),
                        "a voice module says how many voices it plays: add `\"voices\": 8` (1 to 256), or remove the key".to_string(),
                    );
                }
            }
            return None;
        };
        let vp = child_key(mp, "voices");
        let count = self.int(v, &vp, "voices", 1, MAX_VOICES as u64, None);
        let target = |l: &mut Self, key: &str, np: &str, x: &Value| -> Option<NoteTarget> {
            let tp = child_key(np, key);
            let s = l.string(x, &tp, key, None)?;
            // A node's id may hold dots; a param's name never does.
            match s.rsplit_once('.') {
                Some((n, p)) if valid_id(n) && !p.is_empty() && valid_id(p) => Some(NoteTarget {
                    node: n.to_string(),
                    param: p.to_string(),
                    loc: l.pos.loc(&tp),
                }),
                _ => {
                    l.error(
                        &tp,
                        None,
                        format!("`note.{key}` must be \"node.param\", found \"{s}\""),
                        "name a node of the module and its param, e.g. \"osc.freq\" or \"env.gate\"".to_string(),
                    );
                    None
                }
            }
        };
        let (mut pitch, mut gate, mut velocity) = (None, None, None);
        if let Some(n) = obj.get("note") {
            let np = child_key(mp, "note");
            if let Some(m) = self.object(n, &np, "note", None) {
                self.unknown_fields(m, &np, &NOTE_KEYS, "a note map", None);
                if let Some(x) = m.get("pitch") {
                    pitch = target(self, "pitch", &np, x);
                }
                if let Some(x) = m.get("gate") {
                    gate = target(self, "gate", &np, x);
                }
                if let Some(x) = m.get("velocity") {
                    velocity = target(self, "velocity", &np, x);
                }
            }
        }
        let node_key = |l: &mut Self, key: &str| -> Option<(String, Loc)> {
            let x = obj.get(key)?;
            let kp = child_key(mp, key);
            let s = l.string(x, &kp, key, None)?;
            if valid_id(s) {
                Some((s.to_string(), l.pos.loc(&kp)))
            } else {
                l.error(
                    &kp,
                    None,
                    format!("`{key}` must name a node of the module, found \"{s}\""),
                    ID_HELP.to_string(),
                );
                None
            }
        };
        let out = node_key(self, "out");
        let release_end = node_key(self, "release_end");
        let steal_fade = obj.get("steal_fade").and_then(|x| {
            let fp = child_key(mp, "steal_fade");
            self.time(x, &fp, "steal_fade", None)
                .map(|t| (t, self.pos.loc(&fp)))
        });
        let reuse_same_note = match obj.get("same_note") {
            None => true,
            Some(x) => {
                self.choice(
                    x,
                    &child_key(mp, "same_note"),
                    "same_note",
                    &["reuse", "new"],
                    None,
                ) != Some("new")
            }
        };
        let legato = match obj.get("legato") {
            None => false,
            Some(x) => {
                let lp = child_key(mp, "legato");
                let legato = self.boolean(x, &lp, "legato", None) == Some(true);
                if legato && count.is_some_and(|c| c != 1) {
                    self.error(
                        &lp,
                        None,
                        format!("{context} is `legato` with more than one voice"),
                        "a legato module plays one note at a time: give it `\"voices\": 1`"
                            .to_string(),
                    );
                }
                legato
            }
        };
        Some(VoicesDecl {
            count: count? as usize,
            pitch,
            gate,
            velocity,
            out,
            release_end,
            steal_fade,
            reuse_same_note,
            legato,
        })
    }

    /// A module's own `modules` (at `path`): an error, as modules do not
    /// nest. Ignoring it, as an unknown field, would drop its nodes.
    fn nested_modules(&mut self, path: &str, context: &str) {
        self.error(
            path,
            None,
            format!("{context} has its own `modules`; modules do not nest, and the nodes inside would be lost"),
            "flatten them: give each inner module its own entry in the top-level `modules` array (node ids stay unique across the scene; see scenes/README.md, *A module*)".to_string(),
        );
    }

    fn node(&mut self, v: &Value, path: &str, module: Option<usize>) -> Option<NodeDecl> {
        let obj = self.object(v, path, "node", None)?;
        // The id first, so every other diagnostic can name the node.
        let mut id: Option<String> = None;
        match obj.get("id") {
            None => self.error(
                path,
                None,
                "node has no `id`",
                format!("add `\"id\": \"<name>\"`; {ID_HELP}"),
            ),
            Some(idv) => {
                let ip = child_key(path, "id");
                if let Some(s) = self.string(idv, &ip, "id", None) {
                    if !valid_id(s) {
                        self.error(
                            &ip,
                            Some(s),
                            format!("`{s}` is not a valid node id"),
                            ID_HELP.to_string(),
                        );
                    } else if let Some(first) = self.ids.get(s).cloned() {
                        let help = format!(
                            "node ids must be unique across the scene, modules included; `{s}` is first declared at line {}:{} ({})",
                            first.line, first.col, first.path
                        );
                        self.error(&ip, Some(s), format!("duplicate node id `{s}`"), help);
                    } else {
                        self.ids.insert(s.to_string(), self.pos.loc(&ip));
                    }
                    id = Some(s.to_string());
                }
            }
        }
        let name = id.as_deref();
        let context = match name {
            Some(n) => format!("node `{n}`"),
            None => "a node".to_string(),
        };
        self.unknown_fields(obj, path, &NODE_KEYS, &context, name);

        let op_path = child_key(path, "op");
        let op = match obj.get("op") {
            None => {
                self.error(
                    path,
                    name,
                    "node has no `op`",
                    "add `\"op\": \"<operator>\"`, e.g. `\"sine\"`".to_string(),
                );
                None
            }
            Some(v) => match self.string(v, &op_path, "op", name) {
                Some("") => {
                    self.error(
                        &op_path,
                        name,
                        "`op` is empty",
                        "name an operator, e.g. `\"sine\"`".to_string(),
                    );
                    None
                }
                other => other.map(str::to_string),
            },
        };

        let mut params = Vec::new();
        if let Some(pv) = obj.get("params") {
            let pp = child_key(path, "params");
            if let Some(pobj) = self.object(pv, &pp, "params", name) {
                for (k, val) in pobj {
                    let vp = child_key(&pp, k);
                    params.push(Param {
                        name: k.clone(),
                        value: self.raw(val, &vp),
                        loc: self.pos.loc(&vp),
                    });
                }
            }
        }

        let mut overrides = Overrides::default();
        let mut overrides_loc = None;
        if let Some(ov) = obj.get("profile_overrides") {
            let op = child_key(path, "profile_overrides");
            overrides_loc = Some(self.pos.loc(&op));
            if let Some(o) = self.object(ov, &op, "profile_overrides", name) {
                overrides = self.overrides(o, &op, Scope::Local, name).0;
            }
        }

        let ramp = obj
            .get("ramp")
            .and_then(|v| self.time(v, &child_key(path, "ramp"), "ramp", name));

        Some(NodeDecl {
            id: id?,
            op: op?,
            ramp,
            params,
            module,
            overrides,
            loc: self.pos.loc(path),
            op_loc: self.pos.loc(&op_path),
            overrides_loc,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::dsp::Precision;
    use crate::profile::Profile;

    #[test]
    fn module_profile_and_overrides_merge() {
        let s = load(
            r#"{"version": "1.0",
            "modules": [{"id": "m", "profile": "strict", "profile_overrides": {"precision": "f64"},
                         "nodes": [{"id": "a", "op": "sine"}]},
                        {"id": "n", "profile_overrides": {"profile": "live"}, "nodes": []}],
            "outputs": {"main": "a"}}"#,
        )
        .unwrap();
        assert_eq!(s.modules[0].overrides.profile, Some(Profile::Strict));
        assert_eq!(s.modules[0].overrides.precision, Some(Precision::F64));
        assert_eq!(s.modules[1].overrides.profile, Some(Profile::Live));
        assert_eq!(s.nodes[0].module, Some(0));

        let e = one_error(
            r#"{"version": "1.0",
            "modules": [{"id": "m", "profile": "strict", "profile_overrides": {"profile": "live"}, "nodes": []}],
            "outputs": {"main": "a"}}"#,
            "sets `profile` to `strict`",
        );
        assert_eq!(path(&e), "modules[0].profile_overrides.profile");
    }

    #[test]
    fn node_and_module_ids() {
        let text = "{\"version\": \"1.0\",\n\"modules\": [{\"id\": \"m\", \"nodes\": [{\"id\": \"osc\", \"op\": \"saw\"}]}],\n\"nodes\": [{\"id\": \"osc\", \"op\": \"sine\"}],\n\"outputs\": {\"main\": \"osc\"}}";
        let e = one_error(text, "duplicate node id `osc`");
        assert_eq!(at(&e), (3, 18));
        assert_eq!(e.node.as_deref(), Some("osc"));
        assert!(e.help.as_ref().unwrap().contains("line 2:42"), "{e}");

        let text = r#"{"version": "1.0", "modules": [{"id": "m", "nodes": []}, {"id": "m", "nodes": []}],
            "nodes": [{"id": "a", "op": "sine"}], "outputs": {"main": "a"}}"#;
        one_error(text, "duplicate module id `m`");

        let e = one_error(
            "{\"version\": \"1.0\", \"nodes\": [{\"id\": \"a b\", \"op\": \"sine\"}], \"outputs\": {\"main\": \"x\"}}",
            "`a b` is not a valid node id",
        );
        assert_eq!(at(&e), (1, 37));
        one_error(
            &scene_with(", \"x\": 1, \"nodes\": [{\"op\": \"sine\"}]"),
            "node has no `id`",
        );
        one_error(
            &scene_with(", \"x\": 1, \"nodes\": [{\"id\": \"b\"}]"),
            "node has no `op`",
        );
        one_error(
            &scene_with(", \"x\": 1, \"nodes\": [{\"id\": \"b\", \"op\": \"\"}]"),
            "`op` is empty",
        );
        one_error(
            &scene_with(", \"modules\": [{\"id\": \"m\"}]"),
            "module `m` has no `nodes`",
        );
        one_error(
            &scene_with(", \"modules\": [{\"nodes\": []}]"),
            "module has no `id`",
        );
    }

    #[test]
    fn a_module_inside_a_module_is_an_error_not_a_warning() {
        let text = "{\"version\": \"1.0\", \"modules\": [{\"id\": \"outer\", \"nodes\": [],\n  \"modules\": [{\"id\": \"inner\", \"nodes\": [{\"id\": \"a\", \"op\": \"sine\"}]}]}],\n\"outputs\": {\"main\": \"a\"}}";
        let e = one_error(
            text,
            "module `outer` has its own `modules`; modules do not nest",
        );
        assert_eq!(path(&e), "modules[0].modules");
        assert_eq!(at(&e).0, 2);
        assert!(e.help.as_ref().unwrap().contains("flatten"), "{e}");
        let all = load(text).unwrap_err();
        assert!(
            !all.iter()
                .any(|d| d.message.contains("unknown field `modules`")),
            "{all:#?}"
        );
    }
}
