//! Source positions of JSON values.
//!
//! `serde_json::Value` forgets where things were written, so after serde has
//! accepted a text this scanner walks the same text once more and records,
//! for every value and every object key, its JSON path (`nodes[3].params.freq`,
//! `params["a b"]`) → 1-based line and column (columns count characters), and
//! the byte span of the value's text (the literal of a number).
//!
//! The walk is iterative (an explicit stack), so nesting depth cannot
//! overflow the call stack; on malformed input it stops early, never panics.

use super::Loc;
use foldhash::fast::RandomState;
use std::collections::HashMap;

/// Where one value (or key) starts, and the byte range of its text.
/// `end` is exact for scalars; for arrays and objects it is the opener only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// Positions of every value and key in one JSON text.
#[derive(Debug, Default)]
pub(crate) struct Positions {
    /// By path: where its value and, for an object member, its key are
    /// written (one entry for both: a scene of a million nodes has
    /// millions of members).
    spans: HashMap<String, Spans, RandomState>,
    /// Paths of object members written more than once (each repeat).
    duplicates: Vec<String>,
}

/// Where the value at one path, and its key, are written.
#[derive(Clone, Copy, Debug, Default)]
struct Spans {
    value: Option<Span>,
    key: Option<Span>,
}

/// Whether a key can be written `a.key` in a path (else `a["key"]`).
fn is_ident(key: &str) -> bool {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The path of member `key` of the object at `parent`.
pub(crate) fn child_key(parent: &str, key: &str) -> String {
    if is_ident(key) {
        // Built by hand: `format!` costs a third of a scene's scan.
        let mut path = String::with_capacity(parent.len() + 1 + key.len());
        path.push_str(parent);
        if !parent.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        path
    } else {
        let quoted = serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""));
        format!("{parent}[{quoted}]")
    }
}

/// The path of element `index` of the array at `parent`.
pub(crate) fn child_index(parent: &str, index: usize) -> String {
    use std::fmt::Write;
    let mut path = String::with_capacity(parent.len() + 8);
    path.push_str(parent);
    let _ = write!(path, "[{index}]");
    path
}

impl Positions {
    /// Scans `text`, which serde_json has already accepted.
    pub(crate) fn scan(text: &str) -> Positions {
        // One member per `:` at most (some are in strings), and a few
        // more values (array elements, the root): sized once, the map
        // spares most of its rehashing.
        let members = text.bytes().filter(|&b| b == b':').count();
        let mut p = Positions {
            spans: HashMap::with_capacity_and_hasher(members + 1, RandomState::default()),
            duplicates: Vec::new(),
        };
        Scanner {
            b: text.as_bytes(),
            text,
            i: 0,
            line: 1,
            col: 1,
        }
        .run(&mut p);
        p
    }

    /// The span of the value at `path` (`""` is the root).
    pub(crate) fn value(&self, path: &str) -> Option<Span> {
        self.spans.get(path)?.value
    }

    /// The span of the key of the object member at `path`.
    pub(crate) fn key(&self, path: &str) -> Option<Span> {
        self.spans.get(path)?.key
    }

    /// Records where the value at `path` is written.
    fn set_value(&mut self, path: &str, span: Span) {
        match self.spans.get_mut(path) {
            Some(s) => s.value = Some(span),
            None => {
                self.spans.insert(
                    path.to_string(),
                    Spans {
                        value: Some(span),
                        key: None,
                    },
                );
            }
        }
    }

    /// The location of the value at `path` (0:0 if unknown).
    pub(crate) fn loc(&self, path: &str) -> Loc {
        match self.value(path) {
            Some(s) => Loc::new(path, s.line, s.col),
            None => Loc::path(path),
        }
    }

    /// The location of the key of the member at `path`, else of its value.
    pub(crate) fn key_loc(&self, path: &str) -> Loc {
        match self.key(path) {
            Some(s) => Loc::new(path, s.line, s.col),
            None => self.loc(path),
        }
    }

    /// The literal text of the scalar at `path`.
    pub(crate) fn literal<'t>(&self, path: &str, text: &'t str) -> Option<&'t str> {
        let s = self.value(path)?;
        text.get(s.start..s.end)
    }

    /// Paths of members whose key was written more than once in one object.
    pub(crate) fn duplicates(&self) -> &[String] {
        &self.duplicates
    }
}

enum Frame {
    Object(String),
    Array(String, usize),
}

struct Scanner<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
    line: u32,
    col: u32,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn bump(&mut self) {
        if let Some(&c) = self.b.get(self.i) {
            self.i += 1;
            if c == b'\n' {
                self.line += 1;
                self.col = 1;
            } else if c & 0xC0 != 0x80 {
                // Not a UTF-8 continuation byte: one more character.
                self.col += 1;
            }
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.bump();
        }
    }

    fn here(&self) -> Span {
        Span {
            line: self.line,
            col: self.col,
            start: self.i,
            end: self.i,
        }
    }

    /// Scans a string starting at `"`; returns false if it is unterminated.
    fn string(&mut self) -> bool {
        self.bump(); // opening quote
        loop {
            match self.peek() {
                None => return false,
                Some(b'\\') => {
                    self.bump();
                    self.bump();
                }
                Some(b'"') => {
                    self.bump();
                    return true;
                }
                Some(_) => self.bump(),
            }
        }
    }

    /// Scans a number or `true`/`false`/`null`; returns false if empty.
    fn scalar(&mut self) -> bool {
        let start = self.i;
        while matches!(
            self.peek(),
            Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E' | b'a'..=b'z')
        ) {
            self.bump();
        }
        self.i > start
    }

    /// Reads `"key" :` and returns the member's path.
    fn key(&mut self, parent: &str, p: &mut Positions) -> Option<String> {
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return None;
        }
        let mut span = self.here();
        if !self.string() {
            return None;
        }
        span.end = self.i;
        let raw = self.text.get(span.start..span.end)?;
        // Most keys have no escapes: take them as written (a scene of a
        // million nodes has millions of keys); decode the others.
        let key: std::borrow::Cow<'_, str> = match raw.get(1..raw.len().saturating_sub(1)) {
            Some(inner) if raw.len() >= 2 && !inner.contains('\\') => inner.into(),
            _ => serde_json::from_str::<String>(raw)
                .unwrap_or_else(|_| raw.trim_matches('"').to_string())
                .into(),
        };
        let path = child_key(parent, &key);
        let spans = p.spans.entry(path.clone()).or_default();
        if spans.key.replace(span).is_some() {
            p.duplicates.push(path.clone());
        }
        self.skip_ws();
        if self.peek() != Some(b':') {
            return None;
        }
        self.bump();
        Some(path)
    }

    fn run(&mut self, p: &mut Positions) {
        let mut stack: Vec<Frame> = Vec::new();
        let mut path = String::new();
        loop {
            // A value at `path`.
            self.skip_ws();
            let mut span = self.here();
            match self.peek() {
                None => return,
                Some(b'{') => {
                    self.bump();
                    span.end = self.i;
                    p.set_value(&path, span);
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.bump();
                    } else {
                        match self.key(&path, p) {
                            Some(child) => {
                                stack.push(Frame::Object(std::mem::replace(&mut path, child)));
                                continue;
                            }
                            None => return,
                        }
                    }
                }
                Some(b'[') => {
                    self.bump();
                    span.end = self.i;
                    p.set_value(&path, span);
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.bump();
                    } else {
                        let child = child_index(&path, 0);
                        stack.push(Frame::Array(std::mem::replace(&mut path, child), 0));
                        continue;
                    }
                }
                Some(b'"') => {
                    if !self.string() {
                        return;
                    }
                    span.end = self.i;
                    p.set_value(&path, span);
                }
                Some(_) => {
                    if !self.scalar() {
                        return;
                    }
                    span.end = self.i;
                    p.set_value(&path, span);
                }
            }
            // After a complete value: a separator or closers.
            loop {
                self.skip_ws();
                let Some(frame) = stack.last_mut() else {
                    return;
                };
                match (self.peek(), frame) {
                    (Some(b','), Frame::Object(parent)) => {
                        self.bump();
                        match self.key(parent, p) {
                            Some(child) => path = child,
                            None => return,
                        }
                        break;
                    }
                    (Some(b','), Frame::Array(parent, index)) => {
                        self.bump();
                        *index += 1;
                        path = child_index(parent, *index);
                        break;
                    }
                    (Some(b'}'), Frame::Object(_)) | (Some(b']'), Frame::Array(..)) => {
                        self.bump();
                        stack.pop();
                    }
                    _ => return,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_lines_columns_and_literals() {
        let text = "{\n  \"a\": [1, 2.50e1, {\"b c\": true}],\n  \"é\": \"x\", \"n\": -0.0\n}";
        let p = Positions::scan(text);
        let at = |path: &str| {
            let s = p.value(path).unwrap();
            (s.line, s.col)
        };
        assert_eq!(at(""), (1, 1));
        assert_eq!(at("a"), (2, 8));
        assert_eq!(at("a[0]"), (2, 9));
        assert_eq!(at("a[1]"), (2, 12));
        assert_eq!(p.literal("a[1]", text), Some("2.50e1"));
        assert_eq!(at("a[2]"), (2, 20));
        assert_eq!(at("a[2][\"b c\"]"), (2, 28));
        assert_eq!(
            p.key("a[2][\"b c\"]").map(|s| (s.line, s.col)),
            Some((2, 21))
        );
        // Columns count characters, not bytes.
        assert_eq!(p.key("[\"é\"]").map(|s| (s.line, s.col)), Some((3, 3)));
        assert_eq!(at("[\"é\"]"), (3, 8));
        assert_eq!(at("n"), (3, 18));
        assert_eq!(p.literal("n", text), Some("-0.0"));
        assert!(p.duplicates().is_empty());
    }

    #[test]
    fn escapes_empty_containers_and_duplicates() {
        let text = r#"{"k\"q": "a\\", "e": [], "o": {}, "e": [[]], "z": null}"#;
        let p = Positions::scan(text);
        assert_eq!(p.value("[\"k\\\"q\"]").unwrap().col, 10);
        assert_eq!(p.value("e").unwrap().col, 40);
        assert_eq!(p.value("e[0]").unwrap().col, 41);
        assert_eq!(p.value("o").unwrap().col, 31);
        assert_eq!(p.literal("z", text), Some("null"));
        assert_eq!(p.duplicates(), ["e".to_string()]);
    }

    #[test]
    fn malformed_input_does_not_panic() {
        for t in [
            "",
            "{",
            "[1,",
            "{\"a\"",
            "{\"a\":",
            "\"abc",
            "[}",
            "{\"a\":1]",
            "@",
        ] {
            let _ = Positions::scan(t);
        }
        // Deep nesting is walked without recursion (paths grow with depth,
        // so keep this moderate; the loader only scans serde-accepted text).
        let deep = "[".repeat(3_000);
        let p = Positions::scan(&deep);
        assert!(p.value("").is_some());
    }
}
