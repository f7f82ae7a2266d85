//! Located diagnostics: every error and warning names the file, line:column
//! (or the JSON path), the node, and what would be valid.

use std::fmt;

/// Where in the scene file something is: its JSON path (`nodes[2].params.cutoff`)
/// and 1-based line:column of the value (0:0 when unknown).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loc {
    pub path: String,
    pub line: u32,
    pub col: u32,
}

impl Loc {
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
pub enum Severity {
    Error,
    Warning,
}

/// One error or warning about a scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: String,
    pub loc: Option<Loc>,
    pub node: Option<String>,
    pub message: String,
    /// What would be valid, or what to do.
    pub help: Option<String>,
}

impl Diagnostic {
    #[cold]
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
    pub fn warning(file: &str, loc: Option<Loc>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, loc, message)
        }
    }

    pub fn with_node(mut self, node: impl Into<String>) -> Diagnostic {
        self.node = Some(node.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{kind}: {}", self.file)?;
        if let Some(loc) = &self.loc {
            if loc.line > 0 {
                write!(f, ":{}:{}", loc.line, loc.col)?;
            }
        }
        write!(f, ": {}", self.message)?;
        let mut ctx = Vec::new();
        if let Some(loc) = &self.loc {
            if !loc.path.is_empty() {
                ctx.push(format!("at {}", loc.path));
            }
        }
        if let Some(node) = &self.node {
            ctx.push(format!("node `{node}`"));
        }
        if !ctx.is_empty() {
            write!(f, "\n  --> {}", ctx.join(", "))?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

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
