//! `morphrt ops`: the operator registry, as a summary table, one operator
//! in detail, or JSON.

use crate::host::HostError;
use crate::ops::{describe, lookup, registry, OpSpec};
use std::io::Write;

/// What `morphrt ops` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct OpsOptions {
    /// Show one operator in detail.
    pub name: Option<String>,
    /// Machine-readable output (JSON).
    #[arg(long)]
    pub json: bool,
}

/// Prints the registry (or the operator `opts.name`); an unknown name is
/// bad input with the closest operator's name and the list.
pub fn ops(opts: &OpsOptions, out: &mut dyn Write) -> Result<(), HostError> {
    let all = registry();
    let chosen: Vec<&OpSpec> = match &opts.name {
        Some(n) => vec![lookup(n).ok_or_else(|| unknown(n, all))?],
        None => all.to_vec(),
    };
    let text = if opts.json {
        let v: Vec<serde_json::Value> = chosen.iter().map(|s| describe::json(s)).collect();
        let v = match opts.name {
            Some(_) => v[0].clone(),
            None => serde_json::Value::Array(v),
        };
        serde_json::to_string_pretty(&v).expect("operator JSON is plain data") + "\n"
    } else if opts.name.is_some() {
        describe::detail(chosen[0])
    } else {
        describe::summary(&chosen)
    };
    out.write_all(text.as_bytes())
        .map_err(HostError::stdout("cannot write the operator list"))
}

/// `no operator `x`; did you mean `y`? (operators: …)`.
fn unknown(name: &str, all: &[&OpSpec]) -> HostError {
    let names: Vec<&str> = all.iter().map(|s| s.name).collect();
    let hint = crate::scene::suggest::closest(name, names.iter().copied())
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default();
    HostError::Usage(format!(
        "no operator `{name}`; {hint}(operators: {})",
        names.join(", ")
    ))
}
