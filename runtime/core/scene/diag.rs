//! Located diagnostics: every error and warning names the file, line:column
//! (or the JSON path), the node, and what would be valid.

use std::borrow::Cow;
use std::fmt;

/// Where in the scene file something is: its JSON path (`nodes[2].params.cutoff`)
/// and 1-based line:column of the value (0:0 when unknown).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loc {
    /// The JSON path (`nodes[2].params.cutoff`).
    pub path: String,
    /// The 1-based line of the value (0 when unknown).
    pub line: u32,
    /// The 1-based column of the value (0 when unknown).
    pub col: u32,
}

impl Loc {
    /// A location at `line`:`col` of `path` (1-based; 0:0 when unknown).
    pub fn new(path: impl Into<String>, line: u32, col: u32) -> Loc {
        Loc {
            path: path.into(),
            line,
            col,
        }
    }

    /// A location known only by its path.
    pub fn path(path: impl Into<String>) -> Loc {
        Loc::new(path, 0, 0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// How bad a diagnostic is.
pub enum Severity {
    /// The scene is refused.
    Error,
    /// The scene runs; the user should know.
    Warning,
}

/// One error or warning about a scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub(crate) severity: Severity,
    /// The file the scene came from (or a label such as `<string>`).
    pub file: String,
    /// Where in the file, when known.
    pub loc: Option<Loc>,
    /// The id of the node it is about, if any.
    pub node: Option<String>,
    /// What is wrong, in one sentence.
    pub message: String,
    /// What would be valid, or what to do.
    pub help: Option<String>,
}

impl Diagnostic {
    #[cold]
    /// An error about `file` at `loc`.
    pub fn error(file: &str, loc: Option<Loc>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            file: file.to_string(),
            loc,
            node: None,
            message: message.into(),
            help: None,
        }
    }

    #[cold]
    pub(crate) fn warning(file: &str, loc: Option<Loc>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, loc, message)
        }
    }

    pub(crate) fn with_node(mut self, node: impl Into<String>) -> Diagnostic {
        self.node = Some(node.into());
        self
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Whether it refuses the scene (an error, not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.severity.name();
        write!(f, "{kind}: {}", self.file)?;
        if let Some(loc) = &self.loc {
            if loc.line > 0 {
                write!(f, ":{}:{}", loc.line, loc.col)?;
            }
        }
        write!(f, ": {}", escape_invisible(&self.message, true))?;
        let mut ctx = Vec::new();
        if let Some(loc) = &self.loc {
            if !loc.path.is_empty() {
                ctx.push(format!("at {}", loc.path));
            }
        }
        if let Some(node) = &self.node {
            ctx.push(format!("node `{}`", escape_invisible(node, false)));
        }
        if !ctx.is_empty() {
            write!(f, "\n  --> {}", ctx.join(", "))?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {}", escape_invisible(help, true))?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

impl Severity {
    /// `"error"` or `"warning"`, as printed and in JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// At most this many errors, and this many warnings, are shown; the rest are
/// counted (a 100,000-input `mix` would otherwise print 100,000 errors).
pub const MAX_SHOWN: usize = 20;

/// `text` with every control or invisible character written as `\u{…}`
/// (`\u{200b}` for a zero-width space), so a node id holding one does not
/// print as if it were another; line breaks are kept when `keep_newlines`.
pub fn escape_invisible(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let escaped = |c: char| is_invisible(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            s.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            s.push(c);
        }
    }
    Cow::Owned(s)
}

/// Control characters, whitespace other than the space, and the format
/// characters and fillers that render as nothing (zero-width spaces and
/// joiners, direction marks and overrides, the byte order mark, variation
/// selectors, tags).
fn is_invisible(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c,
            '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
            | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
            | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}' | '\u{e0000}'..='\u{e0fff}')
}

/// At most this many entries of a list are shown in one message; the rest
/// are counted (`… and N more`).
pub const LIST_SHOWN: usize = 10;

/// `items` joined by `sep`: the first [`LIST_SHOWN`], then `… and N more`
/// when there were more. Every list a message prints goes through this, so
/// a million-entry list makes one short line. Only the shown entries are
/// formatted.
pub fn capped_list<T: fmt::Display>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    let mut items = items.into_iter();
    let shown: Vec<String> = items
        .by_ref()
        .take(LIST_SHOWN)
        .map(|x| x.to_string())
        .collect();
    let more = items.count();
    let mut s = shown.join(sep);
    if more > 0 {
        s.push_str(&format!("{sep}… and {more} more"));
    }
    s
}

impl Diagnostic {
    /// The diagnostic as one JSON object, with the fields the human form
    /// shows: `severity`, `file`, `line` and `column` (null when only the
    /// path is known), `path`, `node`, `message`, `help`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let (path, line, col) = match &self.loc {
            Some(l) => (
                (!l.path.is_empty()).then(|| l.path.clone()),
                (l.line > 0).then_some(l.line),
                (l.line > 0).then_some(l.col),
            ),
            None => (None, None, None),
        };
        serde_json::json!({
            "severity": self.severity.name(),
            "file": self.file,
            "line": line,
            "column": col,
            "path": path,
            "node": self.node,
            "message": self.message,
            "help": self.help,
        })
    }
}

/// What is shown of a list of diagnostics: errors first, then warnings, at
/// most [`MAX_SHOWN`] of each, and how many of each were left out. The human
/// printer and the JSON report both read it, so they show the same ones.
#[derive(Clone, Debug)]
pub struct Shown<'a> {
    pub(crate) errors: Vec<&'a Diagnostic>,
    pub(crate) warnings: Vec<&'a Diagnostic>,
    pub(crate) more_errors: usize,
    pub(crate) more_warnings: usize,
}

impl<'a> Shown<'a> {
    /// The diagnostics of `diags` to show: errors first, each list capped.
    pub fn new(diags: &'a [Diagnostic]) -> Shown<'a> {
        let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
        let warnings: Vec<&Diagnostic> = diags.iter().filter(|d| !d.is_error()).collect();
        let more_errors = errors.len().saturating_sub(MAX_SHOWN);
        let more_warnings = warnings.len().saturating_sub(MAX_SHOWN);
        Shown {
            errors: errors.into_iter().take(MAX_SHOWN).collect(),
            warnings: warnings.into_iter().take(MAX_SHOWN).collect(),
            more_errors,
            more_warnings,
        }
    }

    /// How many diagnostics were left out.
    pub fn truncated(&self) -> usize {
        self.more_errors + self.more_warnings
    }

    /// The shown diagnostics as JSON objects, errors first.
    pub fn json(&self) -> Vec<serde_json::Value> {
        self.errors
            .iter()
            .chain(&self.warnings)
            .map(|d| d.to_json())
            .collect()
    }

    /// `{"ok": …, "diagnostics": […], "truncated": N}`: what `check --json`
    /// prints for a scene that does not compile.
    pub fn json_report(&self) -> serde_json::Value {
        serde_json::json!({
            "ok": self.errors.is_empty(),
            "diagnostics": self.json(),
            "truncated": self.truncated(),
        })
    }
}

impl fmt::Display for Shown<'_> {
    /// Errors, then warnings, separated by blank lines, each list ending
    /// with `… and N more errors` when it was cut, and a count of the errors
    /// when there are several.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = |n: usize, what: &str| {
            format!("… and {n} more {what}{}", if n == 1 { "" } else { "s" })
        };
        let mut parts: Vec<String> = self.errors.iter().map(|d| d.to_string()).collect();
        if self.more_errors > 0 {
            parts.push(more(self.more_errors, "error"));
        }
        parts.extend(self.warnings.iter().map(|d| d.to_string()));
        if self.more_warnings > 0 {
            parts.push(more(self.more_warnings, "warning"));
        }
        write!(f, "{}", parts.join("\n\n"))?;
        let errors = self.errors.len() + self.more_errors;
        if errors > 1 {
            write!(f, "\n\n{errors} errors")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_every_field_and_nulls_for_what_is_unknown() {
        let d = Diagnostic::warning("a.json", Some(Loc::new("nodes[1].op", 4, 12)), "m")
            .with_node("osc")
            .with_help("h");
        assert_eq!(
            d.to_json(),
            serde_json::json!({"severity": "warning", "file": "a.json", "line": 4, "column": 12,
                "path": "nodes[1].op", "node": "osc", "message": "m", "help": "h"})
        );
        let d = Diagnostic::error("a.json", Some(Loc::path("duration")), "m");
        let j = d.to_json();
        assert_eq!(j["line"], serde_json::Value::Null);
        assert_eq!(j["path"], "duration");
        assert_eq!(j["node"], serde_json::Value::Null);
        assert_eq!(
            Diagnostic::error("a.json", None, "m").to_json()["path"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn shown_caps_errors_and_warnings_and_counts_the_rest() {
        let mut ds: Vec<Diagnostic> = (0..25)
            .map(|i| Diagnostic::error("a.json", None, format!("e{i}")))
            .collect();
        ds.push(Diagnostic::warning("a.json", None, "w"));
        let s = Shown::new(&ds);
        assert_eq!(s.errors.len(), MAX_SHOWN);
        assert_eq!(s.more_errors, 5);
        assert_eq!(s.truncated(), 5);
        let text = s.to_string();
        assert!(
            text.contains("error: a.json: e19\n\n… and 5 more errors\n\nwarning: a.json: w"),
            "{text}"
        );
        assert!(!text.contains("e20"));
        assert!(text.ends_with("25 errors"));
        let j = s.json_report();
        assert_eq!(j["ok"], false);
        assert_eq!(j["truncated"], 5);
        assert_eq!(j["diagnostics"].as_array().unwrap().len(), MAX_SHOWN + 1);
    }

    #[test]
    fn invisible_characters_are_escaped_in_the_human_form() {
        assert_eq!(escape_invisible("osc", false), "osc");
        assert_eq!(escape_invisible("o\u{200b}sc", false), "o\\u{200b}sc");
        assert_eq!(
            escape_invisible("a\tb\u{7}\u{feff}", false),
            "a\\u{9}b\\u{7}\\u{feff}"
        );
        assert_eq!(escape_invisible("a\nb", true), "a\nb");
        assert_eq!(escape_invisible("a\nb", false), "a\\u{a}b");
        assert_eq!(escape_invisible("café ü 音", false), "café ü 音");
        let d = Diagnostic::error("a.json", None, "no node `o\u{200b}sc`").with_node("o\u{200b}sc");
        assert_eq!(
            d.to_string(),
            "error: a.json: no node `o\\u{200b}sc`\n  --> node `o\\u{200b}sc`"
        );
        assert_eq!(
            d.to_json()["node"],
            "o\u{200b}sc",
            "JSON keeps the id as it is"
        );
    }

    #[test]
    fn a_capped_list_shows_ten_and_counts_the_rest() {
        assert_eq!(capped_list(0..3, ", "), "0, 1, 2");
        assert_eq!(capped_list(0..10, ", "), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9");
        assert_eq!(
            capped_list(0..1_000_000, ", "),
            "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, … and 999990 more"
        );
        assert_eq!(capped_list(Vec::<u8>::new(), ", "), "");
    }

    #[test]
    fn display_names_file_position_path_node_and_help() {
        let d = Diagnostic::error(
            "a.json",
            Some(Loc::new("nodes[1].op", 4, 12)),
            "unknown operator `sinee`",
        )
        .with_node("osc")
        .with_help("did you mean `sine`?");
        let s = d.to_string();
        assert_eq!(
            s,
            "error: a.json:4:12: unknown operator `sinee`\n  --> at nodes[1].op, node `osc`\n  help: did you mean `sine`?"
        );
    }
}
