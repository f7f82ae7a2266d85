//! Helpers the loader's tests share: load a text, pick out its errors, say
//! where a diagnostic points, and build a minimal scene around a few fields.

use super::load_str;
use crate::scene::{Diagnostic, Scene};

pub(super) fn load(text: &str) -> Result<Scene, Vec<Diagnostic>> {
    load_str(text, "t.json", None)
}

pub(super) fn errors(text: &str) -> Vec<Diagnostic> {
    match load(text) {
        Ok(s) => panic!("expected errors, loaded: {s:?}"),
        Err(d) => d.into_iter().filter(Diagnostic::is_error).collect(),
    }
}

/// The single error of `text`, which must mention `needle`.
pub(super) fn one_error(text: &str, needle: &str) -> Diagnostic {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let e = errs.into_iter().next().unwrap();
    assert!(e.to_string().contains(needle), "`{needle}` not in:\n{e}");
    e
}

pub(super) fn at(d: &Diagnostic) -> (u32, u32) {
    let l = d.loc.as_ref().expect("located");
    (l.line, l.col)
}

pub(super) fn path(d: &Diagnostic) -> &str {
    &d.loc.as_ref().expect("located").path
}

/// A minimal valid scene with `extra` top-level members spliced in.
pub(super) fn scene_with(extra: &str) -> String {
    format!(
        "{{\"version\": \"1.0\", \"nodes\": [{{\"id\": \"a\", \"op\": \"sine\"}}],\n\"outputs\": {{\"main\": \"a\"}}{extra}}}"
    )
}
