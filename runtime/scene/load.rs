//! The scene loader: JSON text → [`Scene`], with every problem reported as a
//! located [`Diagnostic`] (DESIGN §3, §4).
//!
//! serde_json parses the text into a `Value` (syntax errors and the nesting
//! limit are reported with its line:column); [`Positions`] then locates every
//! value, and a walk over the `Value` builds the typed scene while collecting
//! all errors and warnings rather than stopping at the first.

use super::pos::{child_index, child_key, Positions};
use super::suggest;
use super::units::TimeSpec;
use super::{
    Diagnostic, EdgeDecl, EditConfig, Endpoint, EventDecl, Loc, ModuleDecl, NodeDecl, OutputBus,
    Param, RawValue, Scene, SceneConfig,
};
use crate::dsp::Precision;
use crate::profile::{Overrides, Profile, MAX_BLOCK_SIZE};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Fields of the scene object. `$schema` names the JSON Schema an editor
/// validates the file with (`morphrt schema`); the runtime ignores its value.
pub const TOP_KEYS: [&str; 13] = [
    "$schema",
    "version",
    "profile",
    "seed",
    "sample_rate",
    "duration",
    "profile_config",
    "modules",
    "nodes",
    "edges",
    "outputs",
    "events",
    "edit",
];
pub const NODE_KEYS: [&str; 5] = ["id", "op", "params", "profile_overrides", "ramp"];
/// Fields of the top-level `edit` object (how live edits are applied).
pub const EDIT_KEYS: [&str; 2] = ["ramp", "crossfade"];
pub const MODULE_KEYS: [&str; 4] = ["id", "profile", "profile_overrides", "nodes"];
pub const EDGE_KEYS: [&str; 3] = ["from", "to", "delay"];
pub const EVENT_KEYS: [&str; 5] = ["time", "node", "param", "value", "ramp"];
/// Top-level scene fields that people may try to set per node or module.
pub const TOP_LEVEL_SETTINGS: [&str; 3] = ["sample_rate", "seed", "duration"];
pub const FFT_NORMS: [&str; 3] = ["backward", "ortho", "forward"];
pub const PROFILES: [&str; 3] = ["strict", "repro", "live"];
pub const PRECISIONS: [&str; 2] = ["f32", "f64"];

pub const DEFAULT_SAMPLE_RATE: u32 = 48_000;
pub const MAX_SAMPLE_RATE: u64 = 768_000;
pub const MAX_ITERATIONS: u64 = 10_000;
const DEFAULT_VERSION: &str = "1.0";

const ID_HELP: &str = "ids use only letters, digits, `_`, `.` and `-`";
const ENDPOINT_HELP: &str =
    "an endpoint is `node` or `node:port`; ids and ports use only letters, digits, `_`, `.` and `-`";
const TIME_HELP: &str =
    "a time is a string with a unit (`1.5s`, `250ms`, `20us`, `4800samples`) or a JSON number of seconds";

/// Loads a scene file. A file that cannot be read gives one diagnostic naming it.
pub fn load_file(path: &Path) -> Result<Scene, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Diagnostic::error(
            &file,
            None,
            format!("cannot read scene file `{file}`: {e}"),
        )]
    })?;
    let dir = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            d.to_path_buf()
        }
    });
    load_str(&text, &file, dir)
}

/// Loads a scene from text. `file` labels diagnostics; `dir` is the directory
/// `@resource:` names resolve against. On success the scene carries the
/// warnings; on failure every error is returned (warnings included).
pub fn load_str(text: &str, file: &str, dir: Option<PathBuf>) -> Result<Scene, Vec<Diagnostic>> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Err(vec![syntax_error(text, file, &e)]),
    };
    let mut loader = Loader {
        file,
        text,
        pos: Positions::scan(text),
        diags: Vec::new(),
        ids: HashMap::new(),
    };
    let scene = loader.scene(&value, dir);
    if loader.diags.iter().any(Diagnostic::is_error) {
        return Err(loader.diags);
    }
    match scene {
        Some(mut scene) => {
            scene.warnings = loader.diags;
            Ok(scene)
        }
        None => {
            // Unreachable in practice: no scene is only built after an error.
            loader.diags.push(Diagnostic::error(
                file,
                None,
                "the scene could not be loaded",
            ));
            Err(loader.diags)
        }
    }
}

/// A serde_json error as a diagnostic, with a character column.
fn syntax_error(text: &str, file: &str, e: &serde_json::Error) -> Diagnostic {
    let (line, col) = (e.line(), e.column());
    let mut msg = e.to_string();
    let suffix = format!(" at line {line} column {col}");
    if let Some(stripped) = msg.strip_suffix(&suffix) {
        msg = stripped.to_string();
    }
    let help = if msg.contains("recursion limit") {
        "arrays and objects may be nested at most 128 levels deep".to_string()
    } else if msg.contains("number out of range") {
        "numbers must fit in a 64-bit float (about ±1.8e308)".to_string()
    } else {
        match e.classify() {
            serde_json::error::Category::Eof => {
                "the text ends before the JSON is complete: look for a missing `}`, `]` or `\"`"
                    .to_string()
            }
            _ => "a scene is one JSON object: look for a missing or trailing comma, an unquoted key or string, or a comment (JSON has none)".to_string(),
        }
    };
    let loc = (line > 0).then(|| Loc::new("", line as u32, char_column(text, line, col)));
    Diagnostic::error(file, loc, format!("invalid JSON: {msg}")).with_help(help)
}

/// serde_json counts columns in bytes; diagnostics count characters.
fn char_column(text: &str, line: usize, byte_col: usize) -> u32 {
    match text.split('\n').nth(line.saturating_sub(1)) {
        Some(l) => l.char_indices().take_while(|&(i, _)| i < byte_col).count() as u32,
        None => byte_col as u32,
    }
}

/// Node ids (and ports) match `[A-Za-z0-9_.-]+`.
/// The one rule for numbers in strings: wherever the scene expects a number,
/// a string holding exactly a JSON number (`"48000"`, `"1e-6"`) means that
/// number, as it does for params (`"440"`). Anything else is returned as is
/// (and then reported as the wrong type, or a time without a unit, …).
fn numeric(v: &Value) -> std::borrow::Cow<'_, Value> {
    if let Value::String(s) = v {
        if s.trim() == s {
            if let Ok(n) = serde_json::from_str::<serde_json::Number>(s) {
                return std::borrow::Cow::Owned(Value::Number(n));
            }
        }
    }
    std::borrow::Cow::Borrowed(v)
}

fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn valid_list(choices: &[&str]) -> String {
    let quoted: Vec<String> = choices.iter().map(|c| format!("`{c}`")).collect();
    quoted.join(", ")
}

/// Scene-only `profile_config` settings.
#[derive(Default)]
struct SceneOnly {
    block_size: Option<usize>,
    flush_to_zero: Option<bool>,
    rng_seed: Option<(u64, Loc)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The scene's `profile_config`.
    Scene,
    /// A node's or module's `profile_overrides`.
    Local,
}

struct Loader<'a> {
    file: &'a str,
    text: &'a str,
    pos: Positions,
    diags: Vec<Diagnostic>,
    /// Every node id declared so far, with where.
    ids: HashMap<String, Loc>,
}

impl Loader<'_> {
    // ---- diagnostics -------------------------------------------------------

    fn emit(&mut self, mut d: Diagnostic, node: Option<&str>, help: Option<String>) {
        if let Some(n) = node {
            d = d.with_node(n);
        }
        if let Some(h) = help {
            d = d.with_help(h);
        }
        self.diags.push(d);
    }

    fn error(
        &mut self,
        path: &str,
        node: Option<&str>,
        msg: impl Into<String>,
        help: impl Into<Option<String>>,
    ) {
        let d = Diagnostic::error(self.file, Some(self.pos.loc(path)), msg);
        self.emit(d, node, help.into());
    }

    fn warning(
        &mut self,
        loc: Loc,
        node: Option<&str>,
        msg: impl Into<String>,
        help: impl Into<Option<String>>,
    ) {
        let d = Diagnostic::warning(self.file, Some(loc), msg);
        self.emit(d, node, help.into());
    }

    /// How a value reads in "found …".
    fn found(&self, v: &Value, path: &str) -> String {
        match v {
            Value::Null => "null".to_string(),
            Value::Bool(b) => format!("the boolean `{b}`"),
            Value::Number(n) => {
                let lit = self.pos.literal(path, self.text).map(str::to_string);
                format!("the number `{}`", lit.unwrap_or_else(|| n.to_string()))
            }
            Value::String(s) => {
                let short: String = s.chars().take(40).collect();
                let more = if short.len() < s.len() { "…" } else { "" };
                format!("the string \"{short}{more}\"")
            }
            Value::Array(_) => "an array".to_string(),
            Value::Object(_) => "an object".to_string(),
        }
    }

    fn type_error(
        &mut self,
        v: &Value,
        path: &str,
        name: &str,
        expected: &str,
        node: Option<&str>,
    ) {
        let found = self.found(v, path);
        self.error(
            path,
            node,
            format!("`{name}` must be {expected}, found {found}"),
            None,
        );
    }

    /// Warns about every key of `obj` not in `known`.
    fn unknown_fields(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        known: &[&str],
        context: &str,
        node: Option<&str>,
    ) {
        for key in obj.keys() {
            if !known.contains(&key.as_str()) {
                self.unknown_key(key, path, known, context, node);
            }
        }
    }

    /// Warns about one unknown key of the object at `path`.
    fn unknown_key(
        &mut self,
        key: &str,
        path: &str,
        known: &[&str],
        context: &str,
        node: Option<&str>,
    ) {
        let help = match suggest::closest(key, known.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!("known fields: {}", valid_list(known)),
        };
        let loc = self.pos.key_loc(&child_key(path, key));
        self.warning(
            loc,
            node,
            format!("unknown field `{key}` in {context} (ignored)"),
            help,
        );
    }

    // ---- typed accessors ----------------------------------------------------

    fn object<'v>(
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

    fn array<'v>(
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

    fn string<'v>(
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

    fn boolean(&mut self, v: &Value, path: &str, name: &str, node: Option<&str>) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => {
                self.type_error(v, path, name, "`true` or `false`", node);
                None
            }
        }
    }

    /// An integer in `lo..=hi`.
    fn int(
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
            Some(_) => {
                let found = self.found(v, path);
                self.error(
                    path,
                    node,
                    format!("`{name}` is out of range: {found}"),
                    help,
                );
                None
            }
            None if v.is_i64() => {
                let found = self.found(v, path);
                self.error(
                    path,
                    node,
                    format!("`{name}` is out of range: {found}"),
                    help,
                );
                None
            }
            None => {
                let found = self.found(v, path);
                self.error(
                    path,
                    node,
                    format!("`{name}` must be an integer, found {found}"),
                    help,
                );
                None
            }
        }
    }

    /// A seed: any integer that fits in a u64.
    fn seed(&mut self, v: &Value, path: &str, name: &str) -> Option<u64> {
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
    fn choice<'v>(
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

    fn profile(&mut self, v: &Value, path: &str, node: Option<&str>) -> Option<Profile> {
        self.choice(v, path, "profile", &PROFILES, node)
            .and_then(Profile::parse)
    }

    /// A time: a string with a unit, or a JSON number of seconds; not negative.
    fn time(&mut self, v: &Value, path: &str, name: &str, node: Option<&str>) -> Option<TimeSpec> {
        let parsed = match v {
            // A number in a string is that number of seconds (see `numeric`).
            Value::String(s) if matches!(*numeric(v), Value::Number(_)) => {
                TimeSpec::from_seconds_literal(s)
            }
            Value::String(s) => TimeSpec::parse(s),
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
    fn endpoint(
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
    fn raw(&self, v: &Value, path: &str) -> RawValue {
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

    // ---- the scene ------------------------------------------------------------

    fn scene(&mut self, root: &Value, dir: Option<PathBuf>) -> Option<Scene> {
        let Value::Object(top) = root else {
            let found = self.found(root, "");
            self.error(
                "",
                None,
                format!("a scene must be a JSON object, found {found}"),
                "a scene looks like `{ \"version\": \"1.0\", \"nodes\": [...], \"outputs\": { \"main\": [...] } }`".to_string(),
            );
            return None;
        };
        let mut scene = Scene {
            file: self.file.to_string(),
            dir,
            version: DEFAULT_VERSION.to_string(),
            profile: None,
            seed: None,
            seed_loc: None,
            duration_loc: None,
            sample_rate: DEFAULT_SAMPLE_RATE,
            duration: None,
            config: SceneConfig::default(),
            modules: Vec::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
            outputs: Vec::new(),
            outputs_loc: None,
            events: Vec::new(),
            edit: EditConfig::default(),
            warnings: Vec::new(),
        };
        let mut rng_seed = None;
        let mut saw_version = false;
        let mut saw_outputs = false;

        self.unknown_fields(top, "", &TOP_KEYS, "the scene", None);
        for dup in self.pos.duplicates().to_vec() {
            let loc = self.pos.key_loc(&dup);
            self.warning(
                loc,
                None,
                format!("`{dup}` is written more than once; only the last value is used"),
                "remove the earlier one".to_string(),
            );
        }

        for (key, v) in top {
            let path = child_key("", key);
            let p = path.as_str();
            match key.as_str() {
                "version" => {
                    saw_version = true;
                    if let Some(s) = self.string(v, p, "version", None) {
                        if s.starts_with("1.") {
                            scene.version = s.to_string();
                        } else {
                            self.error(
                                p,
                                None,
                                format!("unsupported scene format version `{s}`"),
                                "this runtime reads scene format 1.x (e.g. `\"1.0\"`)".to_string(),
                            );
                        }
                    }
                }
                "profile" => scene.profile = self.profile(v, p, None),
                "seed" => {
                    scene.seed = self.seed(v, p, "seed");
                    scene.seed_loc = Some(self.pos.loc(p));
                }
                "sample_rate" => {
                    if let Some(n) = self.int(v, p, "sample_rate", 1, MAX_SAMPLE_RATE, None) {
                        scene.sample_rate = n as u32;
                    }
                }
                "duration" => {
                    scene.duration_loc = Some(self.pos.loc(p));
                    if let Some(t) = self.time(v, p, "duration", None) {
                        let (TimeSpec::Seconds(r) | TimeSpec::Samples(r)) = t;
                        if r.num > 0 {
                            scene.duration = Some(t);
                        } else {
                            let found = self.found(v, p);
                            self.error(
                                p,
                                None,
                                format!("`duration` must be greater than zero, found {found}"),
                                TIME_HELP.to_string(),
                            );
                        }
                    }
                }
                "profile_config" => {
                    if let Some(obj) = self.object(v, p, "profile_config", None) {
                        let (ov, only) = self.overrides(obj, p, Scope::Scene, None);
                        scene.config = SceneConfig {
                            overrides: ov,
                            block_size: only.block_size,
                            flush_to_zero: only.flush_to_zero,
                        };
                        rng_seed = only.rng_seed;
                    }
                }
                "modules" => {
                    if let Some(items) = self.array(v, p, "modules", None) {
                        self.modules(items, p, &mut scene);
                    }
                }
                "nodes" => {
                    if let Some(items) = self.array(v, p, "nodes", None) {
                        for (i, item) in items.iter().enumerate() {
                            if let Some(n) = self.node(item, &child_index(p, i), None) {
                                scene.nodes.push(n);
                            }
                        }
                    }
                }
                "edges" => {
                    if let Some(items) = self.array(v, p, "edges", None) {
                        for (i, item) in items.iter().enumerate() {
                            if let Some(e) = self.edge(item, &child_index(p, i)) {
                                scene.edges.push(e);
                            }
                        }
                    }
                }
                "outputs" => {
                    saw_outputs = true;
                    scene.outputs_loc = Some(self.pos.loc(p));
                    if let Some(obj) = self.object(v, p, "outputs", None) {
                        scene.outputs = self.outputs(obj, p);
                    }
                }
                "edit" => {
                    if let Some(obj) = self.object(v, p, "edit", None) {
                        self.unknown_fields(obj, p, &EDIT_KEYS, "`edit`", None);
                        for (k, val) in obj {
                            let kp = child_key(p, k);
                            let t = match k.as_str() {
                                "ramp" | "crossfade" => self.time(val, &kp, k, None),
                                _ => None,
                            };
                            match k.as_str() {
                                "ramp" => scene.edit.ramp = t,
                                "crossfade" => scene.edit.crossfade = t,
                                _ => {}
                            }
                        }
                    }
                }
                "events" => {
                    if let Some(items) = self.array(v, p, "events", None) {
                        for (i, item) in items.iter().enumerate() {
                            if let Some(e) = self.event(item, &child_index(p, i), i) {
                                scene.events.push(e);
                            }
                        }
                    }
                }
                "$schema" => {} // for editors: which JSON Schema validates the file
                _ => {}         // warned above
            }
        }

        if !saw_version {
            let loc = self.pos.loc("");
            self.warning(
                loc,
                None,
                format!("the scene has no `version`; assuming \"{DEFAULT_VERSION}\""),
                format!("add `\"version\": \"{DEFAULT_VERSION}\"`"),
            );
        }
        if let Some((seed, loc)) = rng_seed {
            match scene.seed {
                Some(s) if s != seed => {
                    let first = scene.seed_loc.clone().unwrap_or_default();
                    let d = Diagnostic::error(
                        self.file,
                        Some(loc),
                        format!("`profile_config.rng_seed` ({seed}) differs from `seed` ({s})"),
                    );
                    let help = format!(
                        "`rng_seed` is an alias of `seed` (line {}:{}); give one of them, or the same value",
                        first.line, first.col
                    );
                    self.emit(d, None, Some(help));
                }
                Some(_) => {}
                None => {
                    scene.seed = Some(seed);
                    scene.seed_loc = Some(loc);
                }
            }
        }
        if !saw_outputs {
            self.error(
                "",
                None,
                "the scene has no `outputs`",
                "add `\"outputs\": { \"main\": [\"<node>\"] }`; `main` is what `run` plays and `render` writes".to_string(),
            );
        } else if let Some(Value::Object(o)) = top.get("outputs") {
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
        Some(scene)
    }

    /// `profile_config` (scope `Scene`) or `profile_overrides` (scope `Local`).
    fn overrides(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        scope: Scope,
        node: Option<&str>,
    ) -> (Overrides, SceneOnly) {
        let mut o = Overrides::default();
        let mut only = SceneOnly::default();
        let mut known: Vec<&str> = Overrides::KEYS.to_vec();
        if scope == Scope::Scene {
            known.extend(Overrides::SCENE_ONLY_KEYS);
        }
        let where_ = match scope {
            Scope::Scene => "`profile_config`",
            Scope::Local => "`profile_overrides`",
        };
        for (key, v) in obj {
            let kp = child_key(path, key);
            let p = kp.as_str();
            let k = key.as_str();
            match k {
                "profile" => o.profile = self.profile(v, p, node),
                "precision" => {
                    o.precision = self
                        .choice(v, p, "precision", &PRECISIONS, node)
                        .and_then(Precision::parse)
                }
                "fft_provider" => {
                    o.fft_provider = self.string(v, p, "fft_provider", node).map(str::to_string)
                }
                "fft_norm" => {
                    o.fft_norm = self
                        .choice(v, p, "fft_norm", &FFT_NORMS, node)
                        .map(str::to_string)
                }
                "oversampling" => {
                    let n = match numeric(v).as_u64() {
                        Some(n @ (1 | 2 | 4)) => Some(n as u32),
                        _ => {
                            let found = self.found(v, p);
                            self.error(
                                p,
                                node,
                                format!("`oversampling` must be 1, 2 or 4, found {found}"),
                                "valid: 1, 2 or 4 (an integer factor)".to_string(),
                            );
                            None
                        }
                    };
                    o.oversampling = n;
                }
                "solver_tolerance" => match numeric(v).as_f64() {
                    Some(t) if t.is_finite() && t > 0.0 => o.solver_tolerance = Some(t),
                    _ => {
                        let found = self.found(v, p);
                        self.error(
                            p,
                            node,
                            format!("`solver_tolerance` must be a positive number, found {found}"),
                            "valid: a number greater than 0, e.g. `1e-6`".to_string(),
                        );
                    }
                },
                "max_iterations" => {
                    o.max_iterations = self
                        .int(v, p, "max_iterations", 1, MAX_ITERATIONS, node)
                        .map(|n| n as u32)
                }
                "block_size" | "flush_to_zero" | "rng_seed" if scope == Scope::Scene => match k {
                    "block_size" => {
                        only.block_size = self
                            .int(v, p, "block_size", 1, MAX_BLOCK_SIZE as u64, node)
                            .map(|n| n as usize)
                    }
                    "flush_to_zero" => {
                        only.flush_to_zero = self.boolean(v, p, "flush_to_zero", node)
                    }
                    _ => {
                        if let Some(s) = self.seed(v, p, "rng_seed") {
                            only.rng_seed = Some((s, self.pos.loc(p)));
                        }
                    }
                },
                _ if Overrides::SCENE_ONLY_KEYS.contains(&k) || TOP_LEVEL_SETTINGS.contains(&k) => {
                    let (msg, help) = if scope == Scope::Local {
                        let place = if Overrides::SCENE_ONLY_KEYS.contains(&k) {
                            "the scene's top-level `profile_config`"
                        } else {
                            "the top level of the scene"
                        };
                        (
                            format!("`{k}` is a scene-level setting; it cannot be set in `profile_overrides`"),
                            format!("set it in {place}; `profile_overrides` accepts {}", valid_list(&Overrides::KEYS)),
                        )
                    } else {
                        // A top-level field written inside profile_config: not fatal.
                        let loc = self.pos.key_loc(p);
                        self.warning(
                            loc,
                            node,
                            format!("unknown field `{k}` in {where_} (ignored)"),
                            format!("`{k}` is a top-level field of the scene; move it out of `profile_config`"),
                        );
                        continue;
                    };
                    let loc = self.pos.key_loc(p);
                    let d = Diagnostic::error(self.file, Some(loc), msg);
                    self.emit(d, node, Some(help));
                }
                _ => self.unknown_key(k, path, &known, where_, node),
            }
        }
        (o, only)
    }

    fn modules(&mut self, items: &[Value], path: &str, scene: &mut Scene) {
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
            self.unknown_fields(obj, &mp, &MODULE_KEYS, &context, None);
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
                    if let Some(nodes) = self.array(v, &np, "nodes", None) {
                        for (j, n) in nodes.iter().enumerate() {
                            if let Some(node) = self.node(n, &child_index(&np, j), Some(index)) {
                                scene.nodes.push(node);
                            }
                        }
                    }
                }
            }
        }
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

    /// A required field of `obj`, or an error at the object.
    fn required<'v>(
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

    fn outputs(&mut self, obj: &Map<String, Value>, path: &str) -> Vec<OutputBus> {
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
    use super::*;
    use crate::scene::{Rational, Severity};

    /// The DESIGN §3 example.
    const EXAMPLE: &str = r#"{
  "version": "1.0",
  "profile": "repro",
  "seed": 42,
  "sample_rate": 48000,
  "duration": "20s",
  "profile_config": { "block_size": 128 },
  "modules": [
    { "id": "room", "profile": "strict",
      "nodes": [
        { "id": "verb", "op": "convolution", "params": { "ir": "@resource:hall.wav", "mix": 0.3 },
          "profile_overrides": { "precision": "f64" } } ] }
  ],
  "nodes": [
    { "id": "lfo", "op": "sine", "params": { "freq": "0.2Hz", "amp": 400 } },
    { "id": "osc", "op": "saw", "params": { "freq": "110Hz", "amp": "-12dB" } },
    { "id": "lp",  "op": "biquad", "params": { "mode": "lowpass", "cutoff": "900Hz", "q": 0.707 } },
    { "id": "up",  "op": "cast", "params": { "to": "f64" } }
  ],
  "edges": [ { "from": "osc", "to": "lp" }, { "from": "lfo", "to": "lp:cutoff" },
             { "from": "lp", "to": "up" }, { "from": "up", "to": "verb" } ],
  "outputs": { "main": ["verb:out", "verb:out_r"] },
  "events": [ { "time": "1.5s", "node": "osc", "param": "freq", "value": "220Hz", "ramp": "10ms" } ]
}"#;

    fn load(text: &str) -> Result<Scene, Vec<Diagnostic>> {
        load_str(text, "t.json", None)
    }

    fn errors(text: &str) -> Vec<Diagnostic> {
        match load(text) {
            Ok(s) => panic!("expected errors, loaded: {s:?}"),
            Err(d) => d.into_iter().filter(Diagnostic::is_error).collect(),
        }
    }

    /// The single error of `text`, which must mention `needle`.
    fn one_error(text: &str, needle: &str) -> Diagnostic {
        let errs = errors(text);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        let e = errs.into_iter().next().unwrap();
        assert!(e.to_string().contains(needle), "`{needle}` not in:\n{e}");
        e
    }

    fn at(d: &Diagnostic) -> (u32, u32) {
        let l = d.loc.as_ref().expect("located");
        (l.line, l.col)
    }

    fn path(d: &Diagnostic) -> &str {
        &d.loc.as_ref().expect("located").path
    }

    /// A minimal valid scene with `extra` top-level members spliced in.
    fn scene_with(extra: &str) -> String {
        format!(
            "{{\"version\": \"1.0\", \"nodes\": [{{\"id\": \"a\", \"op\": \"sine\"}}],\n\"outputs\": {{\"main\": \"a\"}}{extra}}}"
        )
    }

    #[test]
    fn design_example_loads() {
        let s = load_str(EXAMPLE, "ex.json", Some(PathBuf::from("/scenes"))).unwrap();
        assert!(s.warnings.is_empty(), "{:#?}", s.warnings);
        assert_eq!(s.file, "ex.json");
        assert_eq!(s.dir, Some(PathBuf::from("/scenes")));
        assert_eq!(s.version, "1.0");
        assert_eq!(s.profile, Some(Profile::Repro));
        assert_eq!(s.seed, Some(42));
        assert_eq!(s.seed_loc, Some(Loc::new("seed", 4, 11)));
        assert_eq!(s.sample_rate, 48000);
        assert_eq!(s.duration, Some(TimeSpec::Seconds(Rational::from_int(20))));
        assert_eq!(s.config.block_size, Some(128));
        assert_eq!(s.config.flush_to_zero, None);
        assert_eq!(s.config.overrides, Overrides::default());

        assert_eq!(s.modules.len(), 1);
        assert_eq!(s.modules[0].id, "room");
        assert_eq!(s.modules[0].overrides.profile, Some(Profile::Strict));
        assert_eq!(s.modules[0].loc, Loc::new("modules[0]", 9, 5));

        let ids: Vec<&str> = s.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["verb", "lfo", "osc", "lp", "up"]);
        let verb = s.node("verb").unwrap();
        assert_eq!(verb.module, Some(0));
        assert_eq!(verb.op, "convolution");
        assert_eq!(verb.overrides.precision, Some(Precision::F64));
        assert_eq!(
            verb.overrides_loc,
            Some(Loc::new("modules[0].nodes[0].profile_overrides", 12, 32))
        );
        assert_eq!(verb.params[0].name, "ir");
        assert_eq!(
            verb.params[0].value,
            RawValue::Text("@resource:hall.wav".into())
        );
        assert_eq!(
            verb.params[1].value,
            RawValue::Number {
                value: 0.3,
                literal: "0.3".into()
            }
        );
        assert_eq!(
            verb.params[1].loc,
            Loc::new("modules[0].nodes[0].params.mix", 11, 93)
        );
        let lfo = s.node("lfo").unwrap();
        assert_eq!(lfo.module, None);
        assert_eq!(lfo.loc, Loc::new("nodes[0]", 15, 5));
        assert_eq!(lfo.op_loc, Loc::new("nodes[0].op", 15, 26));
        assert_eq!(
            lfo.params[1].value,
            RawValue::Number {
                value: 400.0,
                literal: "400".into()
            }
        );
        let lp = s.node("lp").unwrap();
        let names: Vec<&str> = lp.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["mode", "cutoff", "q"]);

        assert_eq!(s.edges.len(), 4);
        assert_eq!(s.edges[1].from.to_string(), "lfo");
        assert_eq!(
            s.edges[1].to,
            Endpoint {
                node: "lp".into(),
                port: Some("cutoff".into())
            }
        );
        assert_eq!(s.edges[3].loc, Loc::new("edges[3]", 21, 44));

        assert_eq!(s.outputs.len(), 1);
        assert_eq!(s.outputs[0].name, "main");
        let ch: Vec<String> = s.outputs[0]
            .channels
            .iter()
            .map(|c| c.0.to_string())
            .collect();
        assert_eq!(ch, ["verb:out", "verb:out_r"]);
        assert_eq!(
            s.outputs[0].channels[1].1,
            Loc::new("outputs.main[1]", 22, 37)
        );
        assert_eq!(s.outputs_loc, Some(Loc::new("outputs", 22, 14)));

        assert_eq!(s.events.len(), 1);
        let e = &s.events[0];
        assert_eq!(e.time, TimeSpec::Seconds(Rational::new(3, 2).unwrap()));
        assert_eq!(e.node, "osc");
        assert_eq!(e.param, "freq");
        assert_eq!(e.value, RawValue::Text("220Hz".into()));
        assert_eq!(
            e.ramp,
            Some(TimeSpec::Seconds(Rational::new(1, 100).unwrap()))
        );
        assert_eq!(e.index, 0);
    }

    #[test]
    fn defaults_and_numeric_times() {
        let s = load(&scene_with(
            ", \"duration\": 2.5, \"events\": [{\"time\": 0.1, \"node\": \"a\", \"param\": \"freq\", \"value\": 1e3, \"ramp\": 0}]",
        ))
        .unwrap();
        assert_eq!(s.sample_rate, DEFAULT_SAMPLE_RATE);
        assert_eq!(s.profile, None);
        assert_eq!(s.seed, None);
        assert_eq!(
            s.duration,
            Some(TimeSpec::Seconds(Rational::new(5, 2).unwrap()))
        );
        let e = &s.events[0];
        assert_eq!(e.time.to_samples(48000), Some(Rational::from_int(4800)));
        assert_eq!(
            e.value,
            RawValue::Number {
                value: 1000.0,
                literal: "1e3".into()
            }
        );
        assert_eq!(e.ramp, Some(TimeSpec::Seconds(Rational::ZERO)));
        assert_eq!(s.outputs[0].channels[0].0.to_string(), "a");
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

    #[test]
    fn profile_config_and_overrides() {
        let s = load(
            r#"{"version": "1.0", "seed": 7,
            "profile_config": {"profile": "live", "precision": "f32", "fft_provider": "rustfft",
              "fft_norm": "ortho", "oversampling": 4, "solver_tolerance": 1e-6,
              "max_iterations": 64, "block_size": 256, "flush_to_zero": false, "rng_seed": 7},
            "nodes": [{"id": "a", "op": "sine", "profile_overrides": {"oversampling": 2, "profile": "strict"}}],
            "outputs": {"main": "a"}}"#,
        )
        .unwrap();
        let o = &s.config.overrides;
        assert_eq!(o.profile, Some(Profile::Live));
        assert_eq!(o.precision, Some(Precision::F32));
        assert_eq!(o.fft_provider.as_deref(), Some("rustfft"));
        assert_eq!(o.fft_norm.as_deref(), Some("ortho"));
        assert_eq!(o.oversampling, Some(4));
        assert_eq!(o.solver_tolerance, Some(1e-6));
        assert_eq!(o.max_iterations, Some(64));
        assert_eq!(s.config.block_size, Some(256));
        assert_eq!(s.config.flush_to_zero, Some(false));
        assert_eq!(s.seed, Some(7));
        assert_eq!(s.nodes[0].overrides.oversampling, Some(2));
        assert_eq!(s.nodes[0].overrides.profile, Some(Profile::Strict));
        assert!(s.nodes[0].overrides_loc.is_some());

        // rng_seed alone sets the seed.
        let s = load(&scene_with(", \"profile_config\": {\"rng_seed\": 9}")).unwrap();
        assert_eq!(s.seed, Some(9));
        assert_eq!(s.seed_loc.unwrap().path, "profile_config.rng_seed");
    }

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
    fn syntax_errors_carry_line_and_column() {
        let e = one_error(
            "{\n  \"version\": \"1.0\",\n  \"nodes\": [,]\n}",
            "invalid JSON",
        );
        assert_eq!(at(&e), (3, 13));
        assert!(e.help.is_some());
        let e = one_error("{\"version\": \"1.0\"", "EOF");
        assert_eq!(e.loc.as_ref().unwrap().line, 1);
        assert!(e.help.unwrap().contains("ends before"));
        // Columns count characters.
        let e = one_error("{\"é\": \"é\" x}", "invalid JSON");
        assert_eq!(at(&e), (1, 11));
        let e = one_error("", "invalid JSON");
        assert!(e.help.is_some());
        let e = one_error("[1, 2]", "must be a JSON object");
        assert_eq!(at(&e), (1, 1));
    }

    #[test]
    fn deep_nesting_is_a_clean_error() {
        for text in [
            "[".repeat(10_000),
            "{\"a\":".repeat(10_000),
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
        ] {
            let e = one_error(&text, "recursion limit");
            assert!(e.help.unwrap().contains("128"));
        }
        let text = scene_with(&format!(
            ", \"extra\": {}{}",
            "[".repeat(100),
            "]".repeat(100)
        ));
        assert!(load(&text).is_ok());
    }

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

    // issue 11: `"sample_rate": "48000"` was an error while a param took `"440"`.
    #[test]
    fn issue11_numbers_in_strings_mean_the_same_number_everywhere() {
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
    fn values_out_of_range() {
        let e = one_error(
            &scene_with(",\n  \"sample_rate\": 0"),
            "`sample_rate` is out of range",
        );
        assert_eq!(at(&e), (3, 18));
        assert!(e.help.unwrap().contains("1 to 768000"));
        one_error(&scene_with(", \"sample_rate\": 768001"), "out of range");
        one_error(&scene_with(", \"sample_rate\": -48000"), "out of range");
        one_error(
            &scene_with(", \"sample_rate\": 44100.5"),
            "must be an integer",
        );
        one_error(
            &scene_with(", \"sample_rate\": \"48kHz\""),
            "must be an integer",
        );
        assert_eq!(
            load(&scene_with(", \"sample_rate\": 768000"))
                .unwrap()
                .sample_rate,
            768000
        );
        one_error(
            &scene_with(", \"profile\": \"strcit\""),
            "did you mean `strict`?",
        );
        one_error(
            &scene_with(", \"version\": \"2.0\""),
            "unsupported scene format version `2.0`",
        );
        one_error(&scene_with(", \"duration\": \"0s\""), "greater than zero");
        one_error(&scene_with(", \"duration\": -1"), "must not be negative");
        one_error(&scene_with(", \"duration\": \"20x\""), "not a valid time");
        one_error(&scene_with(", \"duration\": \"20Hz\""), "not a valid time");
        let bad_config = [
            ("\"block_size\": 0", "`block_size` is out of range"),
            ("\"block_size\": 8193", "1 to 8192"),
            ("\"precision\": \"f16\"", "`f16` is not a valid `precision`"),
            ("\"oversampling\": 3", "`oversampling` must be 1, 2 or 4"),
            (
                "\"oversampling\": \"2x\"",
                "`oversampling` must be 1, 2 or 4",
            ),
            ("\"solver_tolerance\": 0", "positive number"),
            ("\"solver_tolerance\": -1e-6", "positive number"),
            ("\"solver_tolerance\": \"1e-6x\"", "positive number"),
            ("\"solver_tolerance\": \"-1e-6\"", "positive number"),
            ("\"max_iterations\": 0", "1 to 10000"),
            ("\"max_iterations\": 10001", "1 to 10000"),
            ("\"fft_norm\": \"orth\"", "did you mean `ortho`?"),
            ("\"fft_provider\": 1", "`fft_provider` must be a string"),
            (
                "\"rng_seed\": -3",
                "`rng_seed` must be a non-negative integer",
            ),
        ];
        for (cfg, needle) in bad_config {
            one_error(
                &scene_with(&format!(", \"profile_config\": {{{cfg}}}")),
                needle,
            );
        }
        let e = one_error(
            &scene_with(", \"seed\": 1,\n \"profile_config\": {\"rng_seed\": 2}"),
            "differs from `seed`",
        );
        assert_eq!(at(&e), (3, 33));
        assert!(e.help.unwrap().contains("alias"));
        assert!(load(&scene_with(
            ", \"seed\": 2, \"profile_config\": {\"rng_seed\": 2}"
        ))
        .is_ok());
    }

    #[test]
    fn scene_only_keys_in_overrides_are_errors() {
        for key in [
            "block_size",
            "flush_to_zero",
            "rng_seed",
            "sample_rate",
            "seed",
        ] {
            let text = format!(
                "{{\"version\": \"1.0\", \"nodes\": [{{\"id\": \"a\", \"op\": \"sine\",\n  \"profile_overrides\": {{\"{key}\": 1}}}}],\n\"outputs\": {{\"main\": \"a\"}}}}"
            );
            let e = one_error(&text, "is a scene-level setting");
            assert_eq!(at(&e), (2, 25), "{key}");
            assert_eq!(e.node.as_deref(), Some("a"));
            assert!(e.help.unwrap().starts_with("set it in"));
        }
        let text = r#"{"version": "1.0", "modules": [{"id": "m", "profile_overrides": {"block_size": 64}, "nodes": []}],
            "nodes": [{"id": "a", "op": "sine"}], "outputs": {"main": "a"}}"#;
        one_error(text, "`block_size` is a scene-level setting");
    }

    #[test]
    fn ids_and_endpoints() {
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

    #[test]
    fn unknown_fields_warn_with_suggestions() {
        let text = "{\"version\": \"1.0\", \"profle\": \"strict\",\n\"nodes\": [{\"id\": \"a\", \"op\": \"sine\", \"parms\": {}}],\n\"outputs\": {\"main\": \"a\"}, \"zzzzzzzz\": 1}";
        let s = load(text).unwrap();
        assert_eq!(s.profile, None);
        assert_eq!(s.warnings.len(), 3, "{:#?}", s.warnings);
        let w = &s.warnings[0];
        assert_eq!(w.severity, Severity::Warning);
        assert_eq!(w.message, "unknown field `profle` in the scene (ignored)");
        assert_eq!(w.help.as_deref(), Some("did you mean `profile`?"));
        assert_eq!(at(w), (1, 20));
        let w = &s.warnings[1];
        assert!(w.message.contains("unknown field `zzzzzzzz`"));
        assert!(w.help.as_ref().unwrap().starts_with("known fields:"));
        let w = &s.warnings[2];
        assert_eq!(w.help.as_deref(), Some("did you mean `params`?"));
        assert_eq!(w.node.as_deref(), Some("a"));
        assert_eq!(at(w), (2, 37));

        let places = [
            (", \"modules\": [{\"id\": \"m\", \"nodes\": [], \"profiel\": \"live\"}]", "profile"),
            (", \"edges\": [{\"from\": \"a\", \"too\": \"a\", \"to\": \"a\"}]", "to"),
            (", \"events\": [{\"time\": 1, \"node\": \"a\", \"param\": \"f\", \"value\": 1, \"rmap\": 1}]", "ramp"),
            (", \"profile_config\": {\"blok_size\": 64}", "block_size"),
            (", \"nodes\": [{\"id\": \"b\", \"op\": \"x\", \"profile_overrides\": {\"precison\": \"f64\"}}]", "precision"),
        ];
        for (extra, want) in places {
            let text = scene_with(extra).replacen(
                "\"nodes\": [{\"id\": \"a\", \"op\": \"sine\"}],",
                "",
                usize::from(extra.contains("\"nodes\"")),
            );
            let s = load(&text).unwrap_or_else(|e| panic!("{extra}: {e:#?}"));
            assert_eq!(s.warnings.len(), 1, "{extra}: {:#?}", s.warnings);
            assert_eq!(
                s.warnings[0].help.as_deref(),
                Some(format!("did you mean `{want}`?").as_str())
            );
        }
        let s = load(&scene_with(
            ", \"profile_config\": {\"sample_rate\": 44100}",
        ))
        .unwrap();
        assert!(s.warnings[0]
            .help
            .as_ref()
            .unwrap()
            .contains("top-level field"));
    }

    #[test]
    fn missing_version_and_duplicate_keys_warn() {
        let s = load("{\"outputs\": {\"main\": \"a\"}, \"seed\": 1, \"seed\": 2}").unwrap();
        assert_eq!(s.version, DEFAULT_VERSION);
        assert_eq!(s.seed, Some(2));
        let msgs: Vec<&str> = s.warnings.iter().map(|w| w.message.as_str()).collect();
        assert!(msgs.iter().any(|m| m.contains("no `version`")), "{msgs:?}");
        assert!(
            msgs.iter()
                .any(|m| m.contains("`seed` is written more than once")),
            "{msgs:?}"
        );
    }

    #[test]
    fn all_errors_are_collected() {
        let text = r#"{"version": "1.0", "profile": "fast", "sample_rate": 0,
            "nodes": [{"id": "a", "op": 1}, {"id": "a", "op": "x"}],
            "edges": [{"from": "", "to": "a"}],
            "outputs": {"aux": "a"}, "typo_field": 1}"#;
        let errs = load(text).unwrap_err();
        let n_err = errs.iter().filter(|d| d.is_error()).count();
        assert_eq!(n_err, 6, "{errs:#?}");
        assert!(errs.iter().any(|d| !d.is_error()));
        for d in errs.iter().filter(|d| d.is_error()) {
            let l = d.loc.as_ref().unwrap();
            assert!(l.line > 0 && l.col > 0, "{d}");
        }
    }

    #[test]
    fn load_file_reads_and_names_the_file() {
        let dir = std::env::temp_dir().join(format!("morphrt-load-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("scene.json");
        std::fs::write(&f, EXAMPLE).unwrap();
        let s = load_file(&f).unwrap();
        assert_eq!(s.dir.as_deref(), Some(dir.as_path()));
        assert_eq!(s.file, f.display().to_string());
        let missing = dir.join("missing.json");
        let errs = load_file(&missing).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].message.contains("missing.json"), "{}", errs[0]);
        std::fs::write(&f, b"{\"version\": \"1.0\", \xff}").unwrap();
        assert_eq!(load_file(&f).unwrap_err().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// xorshift64: a tiny deterministic generator for the mutation test.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    /// Splits JSON text into rough tokens (strings, numbers/words, punctuation, spaces).
    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let start = i;
            let c = chars[i];
            if c == '"' {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i = (i + 1).min(chars.len());
            } else if c.is_alphanumeric() || c == '-' || c == '.' {
                while i < chars.len() && (chars[i].is_alphanumeric() || "-.+".contains(chars[i])) {
                    i += 1;
                }
            } else {
                i += 1;
            }
            out.push(chars[start..i.min(chars.len())].iter().collect());
        }
        out
    }

    fn mutate(base: &str, rng: &mut XorShift) -> String {
        const PIECES: [&str; 24] = [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\\",
            "-",
            "0",
            "1e999",
            "-1",
            "null",
            "true",
            "\"profle\"",
            "\"id\"",
            "\"main\"",
            "\"1.5s\"",
            "é",
            "\u{0}",
            "\n",
            "18446744073709551616",
            "\"@resource:../x\"",
            "[[[[[[[[",
        ];
        let mut text = base.to_string();
        for _ in 0..1 + rng.below(4) {
            let chars: Vec<char> = text.chars().collect();
            let n = chars.len();
            let i = rng.below(n + 1);
            text = match rng.below(6) {
                0 if n > 0 => {
                    let len = 1 + rng.below(8);
                    chars[..i.min(n)]
                        .iter()
                        .chain(chars[(i + len).min(n)..].iter())
                        .collect()
                }
                1 => {
                    let piece = PIECES[rng.below(PIECES.len())];
                    let mut s: String = chars[..i].iter().collect();
                    s.push_str(piece);
                    s.extend(&chars[i..]);
                    s
                }
                2 if n > 0 => {
                    let mut c = chars.clone();
                    let j = i.min(n - 1);
                    c[j] = char::from(b" {}[],:\"0a-.e\\"[rng.below(14)]);
                    c.into_iter().collect()
                }
                3 => {
                    let mut t = tokens(&text);
                    if t.len() > 1 {
                        let a = rng.below(t.len());
                        let b = rng.below(t.len());
                        t.swap(a, b);
                    }
                    t.concat()
                }
                4 => {
                    let mut t = tokens(&text);
                    if !t.is_empty() {
                        let a = rng.below(t.len());
                        let b = rng.below(t.len());
                        t[a] = t[b].clone();
                    }
                    t.concat()
                }
                _ => chars[..i].iter().collect(),
            };
        }
        text
    }

    #[test]
    fn mutation_fuzz_never_panics() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let bases = [EXAMPLE.to_string(), scene_with(", \"events\": [{\"time\": 0.5, \"node\": \"a\", \"param\": \"f\", \"value\": [1, \"2Hz\"]}]")];
        let mut ok = 0;
        for round in 0..2000 {
            let base = &bases[round % bases.len()];
            let text = mutate(base, &mut rng);
            let result = std::panic::catch_unwind(|| load_str(&text, "fuzz.json", None));
            match result {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(diags)) => {
                    assert!(!diags.is_empty(), "round {round}: Err without diagnostics");
                    assert!(
                        diags.iter().any(Diagnostic::is_error),
                        "round {round}: Err without an error"
                    );
                }
                Err(_) => panic!("load_str panicked on mutation round {round}; input:\n{text}"),
            }
        }
        // The mutations should not all be rejected outright.
        assert!(ok > 10, "only {ok} mutated scenes loaded");
    }

    #[test]
    fn issue11_a_schema_key_is_known() {
        // `"$schema"` (for editors) was an unknown field with a warning.
        let s = load(&scene_with(",\n\"$schema\": \"schema/scene.schema.json\"")).unwrap();
        assert!(s.warnings.is_empty(), "{:#?}", s.warnings);
        let s = load(&scene_with(",\n\"$schemas\": \"x\"")).unwrap();
        assert_eq!(s.warnings.len(), 1, "{:#?}", s.warnings);
        assert!(s.warnings[0]
            .to_string()
            .contains("did you mean `$schema`?"));
    }
}
