//! How the loader reports: located errors and warnings, how a wrong value
//! reads ("found the number `3`"), type errors, and warnings for unknown
//! fields with a did-you-mean.

use super::Loader;
use crate::scene::pos::child_key;
use crate::scene::{capped_list, suggest, Diagnostic, Loc};
use serde_json::{Map, Value};

pub(super) fn valid_list(choices: &[&str]) -> String {
    capped_list(choices.iter().map(|c| format!("`{c}`")), ", ")
}

impl Loader<'_> {
    pub(super) fn emit(&mut self, mut d: Diagnostic, node: Option<&str>, help: Option<String>) {
        if let Some(n) = node {
            d = d.with_node(n);
        }
        if let Some(h) = help {
            d = d.with_help(h);
        }
        self.diags.push(d);
    }

    pub(super) fn error(
        &mut self,
        path: &str,
        node: Option<&str>,
        msg: impl Into<String>,
        help: impl Into<Option<String>>,
    ) {
        let d = Diagnostic::error(self.file, Some(self.pos.loc(path)), msg);
        self.emit(d, node, help.into());
    }

    pub(super) fn warning(
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
    pub(super) fn found(&self, v: &Value, path: &str) -> String {
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

    pub(super) fn type_error(
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
    pub(super) fn unknown_fields(
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
    pub(super) fn unknown_key(
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
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::scene::Severity;

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
}
