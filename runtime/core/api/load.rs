//! A scene from text or a file to a compiled plan with its params: what a
//! host does first. Resources come through the caller's
//! [`Resolver`](crate::graph::Resolver) in the [`CompileOptions`]; errors
//! and warnings are typed [`Diagnostic`]s with their file, line:column,
//! JSON path and node.

use super::params::ParamList;
use crate::graph::{compile, CompileOptions, Plan};
use crate::scene::{self, Diagnostic};
use std::path::Path;

/// A scene's errors (and the warnings found with them), each located.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    /// Every error and warning, in the order found.
    pub fn all(&self) -> &[Diagnostic] {
        &self.0
    }

    /// The errors alone.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.is_error())
    }

    /// Takes them.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.0
    }
}

impl From<Vec<Diagnostic>> for Diagnostics {
    fn from(d: Vec<Diagnostic>) -> Diagnostics {
        Diagnostics(d)
    }
}

impl std::fmt::Display for Diagnostics {
    /// As the command line prints them: `file:line:col: error: …`, with
    /// the node and what would be valid.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", scene::Shown::new(&self.0))
    }
}

impl std::error::Error for Diagnostics {}

/// A scene compiled for one host, with the params it offers.
pub struct Loaded {
    plan: Plan,
    params: ParamList,
}

impl Loaded {
    /// Loads and compiles scene `text`; `name` is what diagnostics call
    /// the file, `dir` where its relative resources are looked up (the
    /// resolver decides what that means).
    ///
    /// ```
    /// use morphrt_core::api::Loaded;
    /// use morphrt_core::graph::CompileOptions;
    ///
    /// let text = r#"{ "version": "1.0", "sample_rate": 48000,
    ///   "nodes": [{ "id": "tone", "op": "sine", "params": { "freq": "1kHz", "amp": 0.5 } }],
    ///   "outputs": { "main": ["tone"] } }"#;
    /// let loaded = Loaded::from_text(text, "tone.json", None, &CompileOptions::default()).unwrap();
    /// let freq = loaded.params().index_of("tone.freq").unwrap();
    /// assert_eq!(loaded.params().get(freq).unwrap().display(1000.0), "1 kHz");
    ///
    /// let bad = Loaded::from_text("{ \"version\": \"1.0\" ", "bad.json", None, &CompileOptions::default());
    /// let errors = bad.err().unwrap();
    /// assert_eq!(errors.all()[0].loc.as_ref().map(|l| l.line), Some(1));
    /// ```
    pub fn from_text(
        text: &str,
        name: &str,
        dir: Option<&Path>,
        options: &CompileOptions,
    ) -> Result<Loaded, Diagnostics> {
        let scene = scene::load_str(text, name, dir.map(Path::to_path_buf)).map_err(Diagnostics)?;
        let plan = compile(&scene, options).map_err(Diagnostics)?;
        let params = ParamList::new(&plan);
        Ok(Loaded { plan, params })
    }

    /// Reads the scene file at `path` and loads it as
    /// [`from_text`](Self::from_text) does, its folder the resources'.
    /// An unreadable file is one diagnostic naming it.
    pub fn from_path(path: &Path, options: &CompileOptions) -> Result<Loaded, Diagnostics> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Diagnostics(vec![Diagnostic::error(
                &name,
                None,
                format!("cannot read the scene: {e}"),
            )])
        })?;
        Loaded::from_text(&text, &name, path.parent(), options)
    }

    /// The compiled plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The params a host lists.
    pub fn params(&self) -> &ParamList {
        &self.params
    }

    /// Warnings the scene compiled with (unknown fields, settings that
    /// will not do what they say).
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.plan.warnings
    }

    /// The plan (for an engine) and the params.
    pub fn into_parts(self) -> (Plan, ParamList) {
        (self.plan, self.params)
    }
}
